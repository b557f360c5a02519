#!/usr/bin/env bash
# Builds the metrics stub image: the static musl binary in a FROM-scratch image, tagged
# hpa-conformance/metrics-stub:<first 12 hex of the binary's sha256> and :dev. Installs the musl
# target (rustup) and musl-tools (apt, ring's C code needs a musl C compiler) when missing.
# Prints the image reference and size.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-musl
repo=hpa-conformance/metrics-stub

if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target"
fi
if ! command -v musl-gcc >/dev/null; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y musl-tools
fi

CC_x86_64_unknown_linux_musl=musl-gcc \
CARGO_PROFILE_RELEASE_STRIP=symbols \
    cargo build --release --target "$target" -p hpa-metrics-stub
binary="target/$target/release/hpa-metrics-stub"
if file "$binary" 2>/dev/null | grep -q 'dynamically linked'; then
    echo "image.sh: $binary is not static" >&2
    exit 1
fi

hash=$(sha256sum "$binary" | cut -c1-12)
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp "$binary" "$context/hpa-metrics-stub"
docker build -q -f metrics-stub/Dockerfile -t "$repo:$hash" -t "$repo:dev" "$context" >/dev/null
size=$(docker image inspect -f '{{.Size}}' "$repo:$hash")
echo "$repo:$hash (also :dev): $size bytes ($((size / 1024)) KiB)"
