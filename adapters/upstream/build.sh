#!/usr/bin/env bash
# Builds the step-protocol adapter around upstream Kubernetes' HPA controller for one Kubernetes
# release, and bin/hpa-quantity (./quantity), which prints what the same apimachinery makes of
# quantity spellings (tests/quantity_upstream.rs):
#
#   build.sh [VERSION] [--force]
#
# VERSION is a release with a folder in versions/ (1.34.4), or its minor (1.34); default
# 1.37.2. The binaries land in bin/<VERSION>/ (hpa-upstream-adapter, hpa-quantity); the default
# version's are also bin/hpa-upstream-adapter and bin/hpa-quantity.
#
# One source for every release: server/, quantity/ and _overlay/ are shared; versions/<VERSION>/
# holds that release's go.mod and go.sum (written by versions/gen.sh) and `overlay`, the files of
# _overlay/ to add to upstream's package.
#
# Cached by its inputs: the hash of this script, the adapter's sources, the kit's package, its protocol package and module files, the
# release's go.mod/go.sum/overlay, the overlay files it names and `go version` names a folder of
# the cache, $HPA_ADAPTER_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/hpa-conformance/adapters),
# <VERSION>-<hash>/; when it exists the build is skipped and bin/<VERSION>/ gets (hard links to)
# its binaries. --force rebuilds anyway. A build keeps the cache's two newest entries per release.
#
# The adapter is the test binary of ./server (testing/synctest needs a *testing.T), compiled with
# our files from _overlay/ added to package k8s.io/kubernetes/pkg/controller/podautoscaler with
# `-overlay`. Go refuses overlays of files in the module cache, so the build runs in a scratch
# copy of this module (go.mod and go.sum of the release, server/, quantity/) whose dependencies
# are vendored from the module cache with `go mod vendor` (offline once the module cache holds
# them); the overlay adds the files to the vendored package. `-trimpath`: the binary and the Go
# build cache's entries do not depend on where the scratch copy is. Nothing in versions/ or the
# adapter folder is modified.
set -euo pipefail

default_version=1.37.2

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

version=""
force=false
for a in "$@"; do
    case "$a" in
    --force) force=true ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    -*)
        echo "build.sh: unknown option $a" >&2
        exit 2
        ;;
    *)
        [[ -z "$version" ]] || { echo "build.sh: one VERSION only" >&2; exit 2; }
        version="$a"
        ;;
    esac
done
version="${version:-$default_version}"
version="${version#v}"
if [[ ! -d "versions/$version" ]]; then
    # A minor names the one release folder of that minor.
    mapfile -t matches < <(cd versions && ls -d "$version".*/ 2>/dev/null | tr -d /)
    if [[ ${#matches[@]} -ne 1 ]]; then
        echo "build.sh: no release $version in versions/ (there: $(cd versions && ls -d 1.*/ | tr -d / | sort -V | tr '\n' ' '))" >&2
        exit 2
    fi
    version="${matches[0]}"
fi
vdir="versions/$version"
for f in go.mod go.sum overlay; do
    [[ -f "$vdir/$f" ]] || { echo "build.sh: $vdir/$f is missing (versions/gen.sh $version writes it)" >&2; exit 2; }
done
mapfile -t overlays < <(grep -v '^[[:space:]]*$' "$vdir/overlay")
for f in "${overlays[@]}"; do
    [[ -f "_overlay/$f" ]] || { echo "build.sh: $vdir/overlay names _overlay/$f, which does not exist" >&2; exit 2; }
done

# shellcheck source=go-env.sh
source "$here/go-env.sh"

kit="$(cd "$here/../../kits/go" && pwd)"

# ---- the inputs' hash ----
inputs() {
    echo "go: $("$GO" version) $("$GO" env GOOS GOARCH CGO_ENABLED | tr '\n' ' ')GOFLAGS=$GOFLAGS"
    {
        echo build.sh
        echo go-env.sh
        printf '%s\n' "$vdir/go.mod" "$vdir/go.sum" "$vdir/overlay"
        printf '_overlay/%s\n' "${overlays[@]}"
        ls server/*.go quantity/*.go
    } | while read -r f; do
        echo "$(sha256sum <"$f" | cut -c1-64)  $f"
    done
    # Of the kit, what the adapter compiles: its module files, the kit's package (the adapter is
    # served by kit.ServeBubbles) and the protocol package; not the tests or the template.
    (cd "$kit" && { echo ./go.mod; echo ./go.sum; find . -maxdepth 1 -name '*.go' ! -name '*_test.go'; find ./protocol -name '*.go' ! -name '*_test.go'; } | LC_ALL=C sort | while read -r f; do
        echo "$(sha256sum <"$f" | cut -c1-64)  kits/go/${f#./}"
    done)
}
manifest="$(inputs)"
hash="$(printf '%s\n' "$manifest" | sha256sum | cut -c1-20)"
cache_root="${HPA_ADAPTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hpa-conformance/adapters}"
entry="$cache_root/$version-$hash"

place() { # links (else copies) the cached binaries into bin/
    mkdir -p "bin/$version"
    local b
    for b in hpa-upstream-adapter hpa-quantity; do
        ln -f "$entry/$b" "bin/$version/$b" 2>/dev/null || cp -f "$entry/$b" "bin/$version/$b"
        if [[ "$version" == "$default_version" ]]; then
            ln -f "$entry/$b" "bin/$b" 2>/dev/null || cp -f "$entry/$b" "bin/$b"
        fi
    done
}

if ! $force && [[ -x "$entry/hpa-upstream-adapter" && -x "$entry/hpa-quantity" ]]; then
    place
    echo "cached $here/bin/$version/hpa-upstream-adapter (k8s.io/kubernetes v$version; $entry)" >&2
    exit 0
fi

# ---- the build ----
json_string() { # JSON-quotes $1
    local s="${1//\\/\\\\}"
    s="${s//\"/\\\"}"
    printf '"%s"' "$s"
}

mkdir -p "$cache_root"
work="$(mktemp -d "$cache_root/.build-$version.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/server" "$work/src/quantity" "$work/out"
src="$work/src"
cp "$vdir/go.mod" "$vdir/go.sum" "$src/"
cp server/*.go "$src/server/"
cp quantity/*.go "$src/quantity/"
# The protocol types come from the Go kit (go.mod: replace … => ../../kits/go, relative to this
# folder): the scratch copy points at the same folder by its absolute path.
(cd "$src" && "$GO" mod edit -replace "hpa-conformance/kits/go=$kit")
cp "$src/go.mod" "$work/go.mod.expected"

# Vendors from the module cache (downloading what is missing); fails if go.mod/go.sum are incomplete.
(cd "$src" && "$GO" mod vendor)
if ! cmp -s "$work/go.mod.expected" "$src/go.mod" || ! cmp -s "$vdir/go.sum" "$src/go.sum"; then
    echo "build.sh: $vdir/go.mod/go.sum are incomplete (go mod vendor had to change them); run versions/gen.sh $version" >&2
    exit 1
fi

pkgdir="$src/vendor/k8s.io/kubernetes/pkg/controller/podautoscaler"
if [[ ! -f "$pkgdir/horizontal.go" ]]; then
    echo "build.sh: $pkgdir/horizontal.go is missing after go mod vendor" >&2
    exit 1
fi
overlay="$work/overlay.json"
{
    printf '{"Replace": {'
    sep=""
    for f in "${overlays[@]}"; do
        printf '%s' "$sep"
        json_string "$pkgdir/$f"
        printf ': '
        json_string "$here/_overlay/$f"
        sep=", "
    done
    printf '}}\n'
} >"$overlay"

k8s="$(cd "$src" && "$GO" list -mod=vendor -m -f "{{.Version}}" k8s.io/kubernetes)"
if [[ "$k8s" != "v$version" ]]; then
    echo "build.sh: $vdir/go.mod requires k8s.io/kubernetes $k8s, not v$version" >&2
    exit 1
fi
(cd "$src" && "$GO" test -c -vet=off -trimpath -mod=vendor -tags hpaadapter -overlay "$overlay" \
    -ldflags "-X hpa-conformance/adapters/upstream/server.kubernetesVersion=$k8s" \
    -o "$work/out/hpa-upstream-adapter" ./server)
(cd "$src" && "$GO" build -trimpath -mod=vendor -o "$work/out/hpa-quantity" ./quantity)
printf '%s\n' "$manifest" >"$work/out/inputs"
rm -rf "$entry"
mv "$work/out" "$entry"
place
# Older builds of this release (other inputs) beyond the two newest go (about 50 MB each).
ls -dt "$cache_root/$version"-*/ 2>/dev/null | tail -n +3 | while read -r old; do rm -rf "$old"; done
echo "built $here/bin/$version/hpa-upstream-adapter (k8s.io/kubernetes $k8s, k8s.io/apimachinery $(cd "$src" && "$GO" list -mod=vendor -m -f "{{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}" k8s.io/apimachinery); cached in $entry)" >&2
