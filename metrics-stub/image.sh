#!/usr/bin/env bash
# Builds the metrics stub image: the static musl binary in a FROM-scratch image, tagged
# hpa-conformance/metrics-stub:<first 12 hex of the binary's sha256> and :dev. Installs the musl
# target (rustup) and musl-tools (apt, ring's C code needs a musl C compiler) when missing.
# Prints the image reference and size.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-musl
repo=hpa-conformance/metrics-stub

# The image is keyed by its inputs (sources of the stub and of the reference it builds on, the
# manifests and lockfile, the Dockerfile): when an image with that key exists, nothing is built.
inputs=$(find metrics-stub reference/src -type f \( -name '*.rs' -o -name Cargo.toml -o -name Dockerfile \) -print0 \
    | sort -z | xargs -0 sha256sum | cat - Cargo.toml Cargo.lock reference/Cargo.toml | sha256sum | cut -c1-12)
if docker image inspect "$repo:src-$inputs" >/dev/null 2>&1; then
    docker tag "$repo:src-$inputs" "$repo:dev"
    hash=$(docker image inspect -f '{{index .Config.Labels "hpa-conformance.binary"}}' "$repo:src-$inputs")
    size=$(docker image inspect -f '{{.Size}}' "$repo:src-$inputs")
    docker tag "$repo:src-$inputs" "$repo:$hash"
    echo "image.sh: inputs unchanged (src-$inputs): no build" >&2
    echo "$repo:$hash (also :dev): $size bytes ($((size / 1024)) KiB)"
    exit 0
fi

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
docker build -q -f metrics-stub/Dockerfile --label "hpa-conformance.binary=$hash" \
    -t "$repo:$hash" -t "$repo:dev" -t "$repo:src-$inputs" "$context" >/dev/null
size=$(docker image inspect -f '{{.Size}}' "$repo:$hash")
echo "$repo:$hash (also :dev): $size bytes ($((size / 1024)) KiB)"
