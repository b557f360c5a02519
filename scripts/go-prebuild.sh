#!/usr/bin/env bash
# CI's Go work that needs neither the Rust builds nor the images, done from the start of a run on
# the CPU the foreground leaves (.ci/run starts it through scripts/low-cpu.sh before `./test`):
#   1. the Go modules of what comes later, downloaded while nothing waits on them: the default
#      minor's node image (its Kubernetes and CoreDNS modules, needed first, by `just kind-image`),
#      each upstream adapter's release, the Go kit, the k8shorizmetrics example;
#   2. the kind lane's host CLIs: kind, and the Sonobuoy CLI (kind-config/sonobuoy/build.sh);
#   3. the upstream adapter's own Go tests (`just upstream-test`);
#   4. the upstream adapter of every release (`just upstream-all`, each cached by its inputs);
#   5. the Go kit's tests and the k8shorizmetrics example's two builds (`just kit-test`, `just
#      k8shorizmetrics`).
# Every later step that needs one of these finds it in its cache (the module cache, Go's build
# cache, the adapters' and the host tools' caches) instead of building it on the CPU the kind lane
# leaves. Cold, the foreground (`./test`, the node image, the images) leaves part of the two cores
# idle — test binaries that run one at a time, links, debootstrap, downloads — and this takes it.
# Steps 3 and 5 are CI's own checks, run here once rather than beside the lane. Each step prints
# "go-prebuild: <seconds> s <step>".
#
# Usage: scripts/go-prebuild.sh   (run it through scripts/low-cpu.sh beside other work)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="$PATH:/usr/local/go/bin"
fi
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}

step() {
  local t=$SECONDS
  "$@"
  echo "go-prebuild: $((SECONDS - t)) s  $*" >&2
}

# `go mod download` of a module's build list, from a scratch copy of its go.mod and go.sum (the
# repo's files are never written), the Go kit's local replace pointed at the kit by absolute path.
download() {
  local dir=$1 tmp
  tmp=$(mktemp -d)
  cp "$dir/go.mod" "$dir/go.sum" "$tmp/"
  if grep -q '^replace hpa-conformance/kits/go' "$tmp/go.mod"; then
    (cd "$tmp" && go mod edit -replace "hpa-conformance/kits/go=$root/kits/go")
  fi
  (cd "$tmp" && go mod download)
  rm -rf "$tmp"
}

modules() {
  local minor v
  minor=$(cat kind-config/versions/default)
  for v in k8s etcd coredns; do
    [ ! -f "kind-config/versions/$minor/$v/go.mod" ] || download "kind-config/versions/$minor/$v"
  done
  for v in $(cd adapters/upstream/versions && ls -d 1.*/ | tr -d / | sort -V); do
    download "adapters/upstream/versions/$v"
  done
  download kits/go
  download adapters/k8shorizmetrics
}

step modules
step kind-config/scripts/tools.sh --kind-only
step kind-config/sonobuoy/build.sh --cli-only >/dev/null
step just upstream-test
step just upstream-all
step just kit-test
step just k8shorizmetrics
echo "go-prebuild: $SECONDS s in all" >&2
