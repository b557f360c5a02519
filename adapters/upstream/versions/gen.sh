#!/usr/bin/env bash
# Writes versions/<X.Y.Z>/go.mod, go.sum and overlay: the module description of the upstream
# adapter built against k8s.io/kubernetes vX.Y.Z. The adapter's source is the same for every
# version (../server, ../quantity, ../_overlay); only these files differ.
#
#   versions/gen.sh 1.34.4            # one version
#   versions/gen.sh                   # every version that has a folder here
#
# How go.mod is made (nothing is copied by hand from upstream's go.mod, it is read):
#   1. require k8s.io/kubernetes vX.Y.Z and the staging modules the adapter imports at v0.Y.Z;
#   2. replace every staging module upstream's own go.mod points at ./staging/... with the
#      published v0.Y.Z (a dependency's replace directives do not apply to us);
#   3. go mod tidy;
#   4. pin back every module that contributes a package to the adapter and that the graph resolved
#      to another version than upstream's go.mod requires (our kit, kits/go, is built against the
#      default version and would otherwise lift e.g. kube-openapi above what 1.32 was released
#      with); tidy again, until nothing moves. The adapter then compiles upstream's packages with
#      the dependency versions upstream released them with.
# `overlay` lists the files of ../_overlay that build.sh adds to package podautoscaler: the
# common one, and the selector bookkeeping that fits this release (1.37 replaced hpaSelectors /
# hpaSelectorsMux by a selector tracker, hpa_selector_store.go).
#
# Needs the Go module proxy (or a module cache holding those versions). Afterwards the build is
# offline: build.sh only reads the module cache.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
adapter="$(cd "$here/.." && pwd)"
kit="$(cd "$adapter/../../kits/go" && pwd)"

# shellcheck source=../go-env.sh
source "$adapter/go-env.sh"

# The staging modules the adapter imports directly (go.mod's first require block).
direct=(k8s.io/api k8s.io/apimachinery k8s.io/apiserver k8s.io/client-go k8s.io/component-base k8s.io/metrics)

gen() {
    local v="$1"
    if [[ ! "$v" =~ ^1\.([0-9]+)\.([0-9]+)$ ]]; then
        echo "gen.sh: want a version like 1.34.4, not '$v'" >&2
        return 1
    fi
    local staging="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
    local out="$here/$v"
    local work
    work="$(mktemp -d "${TMPDIR:-/tmp}/hpa-adapter-gen.XXXXXX")"
    [[ -n "${KEEP:-}" ]] || trap 'rm -rf "$work"' RETURN

    # Upstream's go.mod, as the proxy serves it.
    local upmod
    upmod="$("$GO" mod download -json "k8s.io/kubernetes@v$v" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
    [[ -f "$upmod" ]] || { echo "gen.sh: no go.mod for k8s.io/kubernetes@v$v" >&2; return 1; }

    mkdir -p "$work/server" "$work/quantity"
    cp "$adapter"/server/*.go "$work/server/"
    cp "$adapter"/quantity/*.go "$work/quantity/"
    cp "$adapter"/*.go "$work/"
    {
        echo "module hpa-conformance/adapters/upstream"
        echo
        echo "go 1.26.0"
        echo
        echo "require ("
        echo "	hpa-conformance/kits/go v0.0.0"
        echo "	k8s.io/kubernetes v$v"
        for m in "${direct[@]}"; do echo "	$m $staging"; done
        echo ")"
    } >"$work/go.mod"
    local args=()
    while read -r m; do
        args+=("-replace=$m=$m@$staging")
    done < <("$GO" mod edit -json "$upmod" | python3 -c '
import json, sys
for r in json.load(sys.stdin).get("Replace") or []:
    if r["New"]["Path"].startswith("./staging/"):
        print(r["Old"]["Path"])')
    args+=("-replace=hpa-conformance/kits/go=$kit")
    (cd "$work" && "$GO" mod edit "${args[@]}")

    local round
    for round in 1 2 3 4; do
        (cd "$work" && GOFLAGS="$GOFLAGS -mod=mod" "$GO" mod tidy)
        local pins
        pins="$(cd "$work" && "$GO" list -mod=mod -deps -test -tags hpaadapter \
            -f '{{with .Module}}{{.Path}} {{if .Replace}}{{.Replace.Path}} {{.Replace.Version}}{{else}}{{.Path}} {{.Version}}{{end}}{{end}}' \
            ./server ./quantity . | sort -u |
            python3 -c '
import json, subprocess, sys
up = json.loads(subprocess.run([sys.argv[1], "mod", "edit", "-json", sys.argv[2]], check=True, capture_output=True).stdout)
want = {r["Path"]: r["Version"] for r in up.get("Require") or []}
local = {r["Old"]["Path"] for r in up.get("Replace") or [] if r["New"]["Path"].startswith("./")}
for line in sys.stdin:
    f = line.split()
    if len(f) != 3 or f[0] in local or f[0] not in want:
        continue
    path, newpath, version = f
    if newpath == path and version != want[path]:
        print("-replace=%s=%s@%s" % (path, path, want[path]))' "$GO" "$upmod")"
        [[ -z "$pins" ]] && break
        echo "gen.sh $v: pinning to upstream's versions:" $(printf "%s\n" $pins | sed "s/^-replace=.*=//") >&2
        # shellcheck disable=SC2086
        (cd "$work" && "$GO" mod edit $pins)
    done
    if [[ -n "$pins" ]]; then
        echo "gen.sh $v: the module graph did not settle on upstream's versions" >&2
        return 1
    fi

    # Stored as a drop-in for ../go.mod, replace directives in commented blocks: only those of
    # modules the build reads (go.sum has their go.mod's sum), the kit relative to the adapter folder.
    (cd "$work" && awk '{print $1}' go.sum | sort -u >"$work/graph" &&
        "$GO" mod edit -json >"$work/mod.json" &&
        "$GO" mod edit $("$GO" mod edit -json | python3 -c '
import json, sys
for r in json.load(sys.stdin).get("Replace") or []:
    print("-dropreplace=" + r["Old"]["Path"])'))
    python3 - "$work" "$v" "$staging" "$upmod" <<'PY'
import json, subprocess, sys
work, v, staging, upmod = sys.argv[1:]
graph = set(open(work + "/graph").read().split())
mod = json.load(open(work + "/mod.json"))
stag, pins = [], []
for r in mod.get("Replace") or []:
    old, new = r["Old"]["Path"], r["New"]
    if old == "hpa-conformance/kits/go" or old not in graph:
        continue
    (stag if new["Version"] == staging else pins).append("\t%s => %s %s" % (old, new["Path"], new["Version"]))
text = open(work + "/go.mod").read().rstrip("\n") + "\n"
text += "\n// k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with ./staging/...;\n"
text += "// a dependency's replace directives do not apply here, so each staging module it pulls in is\n"
text += "// pinned to the published release matching v%s.\nreplace (\n%s\n)\n" % (v, "\n".join(stag))
if pins:
    text += "\n// Modules the adapter compiles, pinned back to the versions k8s.io/kubernetes v%s requires\n" % v
    text += "// (the kit, built against the default version, would lift them).\nreplace (\n%s\n)\n" % "\n".join(pins)
text += "\n// The Go protocol types are the kit's (one home): kits/go/protocol.\nreplace hpa-conformance/kits/go => ../../kits/go\n"
open(work + "/go.mod", "w").write(text)
PY
    # The rewritten go.mod must describe the same build: tidy (with the kit's absolute path) must
    # leave it alone.
    cp "$work/go.mod" "$work/go.mod.stored"
    (cd "$work" && "$GO" mod edit -replace=hpa-conformance/kits/go="$kit" &&
        GOFLAGS="$GOFLAGS -mod=mod" "$GO" mod tidy && "$GO" mod edit -replace=hpa-conformance/kits/go=../../kits/go)
    if [[ "$(cd "$work" && "$GO" mod edit -json)" != "$(cd "$work" && cp go.mod.stored go.mod && "$GO" mod edit -json)" ]]; then
        echo "gen.sh $v: go mod tidy does not accept the rewritten go.mod" >&2
        return 1
    fi
    mkdir -p "$out"
    cp "$work/go.mod" "$work/go.sum" "$out/"

    local upzip
    upzip="$("$GO" env GOMODCACHE)/k8s.io/kubernetes@v$v/pkg/controller/podautoscaler"
    {
        echo "zz_hpa_adapter_export.go"
        if [[ -f "$upzip/hpa_selector_store.go" ]]; then
            echo "zz_hpa_adapter_selectors_tracker.go"
        else
            echo "zz_hpa_adapter_selectors_bimultimap.go"
        fi
    } >"$out/overlay"
    echo "gen.sh: wrote $out/{go.mod,go.sum,overlay}" >&2
}

if [[ $# -eq 0 ]]; then
    set -- $(cd "$here" && ls -d 1.*/ | tr -d / | sort -V)
fi
for v in "$@"; do gen "$v"; done
