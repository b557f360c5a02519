#!/usr/bin/env bash
# Builds bin/hpa-upstream-adapter: the step-protocol adapter around upstream Kubernetes' HPA
# controller (k8s.io/kubernetes pinned in go.mod); and bin/hpa-quantity (./quantity), which prints
# what the same apimachinery makes of quantity spellings (tests/quantity_upstream.rs).
#
# The adapter is the test binary of ./server (testing/synctest needs a *testing.T), compiled with
# one extra file of ours, _overlay/zz_hpa_adapter_export.go, added to package
# k8s.io/kubernetes/pkg/controller/podautoscaler with `-overlay`. Go refuses overlays of files in
# the module cache, so the build runs in a scratch copy of this module (bin/build: go.mod, go.sum,
# server/) whose dependencies are vendored from the module cache with `go mod vendor`; the overlay
# adds the file to the vendored package. go.mod/go.sum are never modified.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

GO="${GO:-}"
if [[ -z "$GO" ]]; then
    if command -v go >/dev/null 2>&1; then GO=go; else GO=/usr/local/go/bin/go; fi
fi
# A -mod flag in the caller's GOFLAGS would fight the explicit ones below.
GOFLAGS="$(printf '%s' "${GOFLAGS:-}" | sed -E 's/(^| )-mod=[^ ]*//g')"
export GOFLAGS

json_string() { # JSON-quotes $1
    local s="${1//\\/\\\\}"
    s="${s//\"/\\\"}"
    printf '"%s"' "$s"
}

work="$here/bin/build"
rm -rf "$work"
mkdir -p "$work/server" "$work/quantity"
cp go.mod go.sum "$work/"
cp server/*.go "$work/server/"
cp quantity/*.go "$work/quantity/"
# The protocol types come from the Go kit (go.mod: replace … => ../../kits/go, relative to this
# folder): the scratch copy points at the same folder by its absolute path.
kit="$(cd "$here/../../kits/go" && pwd)"
(cd "$work" && "$GO" mod edit -replace "hpa-conformance/kits/go=$kit")
cp "$work/go.mod" "$work/go.mod.expected"

# Vendors from the module cache (downloading what is missing); fails if go.mod/go.sum are incomplete.
(cd "$work" && "$GO" mod vendor)
if ! cmp -s "$work/go.mod.expected" "$work/go.mod" || ! cmp -s go.sum "$work/go.sum"; then
    echo "build.sh: go.mod/go.sum are incomplete (go mod vendor had to change them); run GOFLAGS=-mod=mod go mod tidy" >&2
    exit 1
fi

pkgdir="$work/vendor/k8s.io/kubernetes/pkg/controller/podautoscaler"
if [[ ! -f "$pkgdir/horizontal.go" ]]; then
    echo "build.sh: $pkgdir/horizontal.go is missing after go mod vendor" >&2
    exit 1
fi
overlay="$work/overlay.json"
{
    printf '{"Replace": {'
    json_string "$pkgdir/zz_hpa_adapter_export.go"
    printf ': '
    json_string "$here/_overlay/zz_hpa_adapter_export.go"
    printf '}}\n'
} >"$overlay"

version="$(cd "$work" && "$GO" list -mod=vendor -m -f "{{.Version}}" k8s.io/kubernetes)"
(cd "$work" && "$GO" test -c -mod=vendor -tags hpaadapter -overlay "$overlay" \
    -ldflags "-X hpa-conformance/adapters/upstream/server.kubernetesVersion=$version" \
    -o "$here/bin/hpa-upstream-adapter" ./server)
echo "built $here/bin/hpa-upstream-adapter (k8s.io/kubernetes $version)" >&2
(cd "$work" && "$GO" build -mod=vendor -o "$here/bin/hpa-quantity" ./quantity)
echo "built $here/bin/hpa-quantity (k8s.io/apimachinery $(cd "$work" && "$GO" list -mod=vendor -m -f "{{.Version}}" k8s.io/apimachinery))" >&2
