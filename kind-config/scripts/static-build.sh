#!/usr/bin/env bash
# The static (musl) release build of the project's three binaries — hpa-metrics-stub,
# hpa-reference (feature controller) and the harness hpa-conformance — by one cargo invocation,
# always the same three packages and features, so that cargo's fingerprints match from one call to
# the next: after `just images` built them, calling it again is a no-op of a few seconds, and CI
# runs the harness built here for the upstream corpus and fuzzing instead of compiling it again
# for glibc (scripts/harness-bin.sh, HPA_CONFORMANCE_BIN). Installs the musl target (rustup) and
# musl-tools (apt: ring's C code needs a musl C compiler) when missing. Prints the folder of the
# binaries (target/x86_64-unknown-linux-musl/release). Called by image.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
target=x86_64-unknown-linux-musl
if ! rustup target list --installed | grep -qx "$target"; then
  rustup target add "$target" >&2
fi
if ! command -v musl-gcc >/dev/null; then
  apt-get update >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y musl-tools >&2
fi
CC_x86_64_unknown_linux_musl=musl-gcc \
CARGO_PROFILE_RELEASE_STRIP=symbols \
  cargo build --release --target "$target" \
    -p hpa-metrics-stub -p hpa-reference --features hpa-reference/controller -p hpa-harness >&2
echo "$PWD/target/$target/release"
