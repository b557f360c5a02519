#!/usr/bin/env bash
# Writes the pins of the kind node image for one Kubernetes release into versions/<minor>/:
#
#   versions/gen.sh 1.37.2            # -> versions/1.37/{versions.env, {k8s,coredns}/go.{mod,sum}[, etcd/…]}
#   versions/gen.sh 1.38.1 --from 1.37
#
# Everything that depends on the release is read from k8s.io/kubernetes vX.Y.Z as the Go module
# proxy serves it, nothing is copied by hand:
#   - cmd/kubeadm/app/constants/constants.go: CoreDNSVersion (-> COREDNS_VERSION), PauseVersion
#     (-> PAUSE_TAGS, with the sandbox_image of kind's containerd config.toml) and the etcd image
#     kubeadm deploys (SupportedEtcdVersion[minor], else DefaultEtcdVersion);
#   - go.mod: the `go` and `godebug` lines, the staging modules (every `replace … => ./staging/…`,
#     replaced here by the published v0.Y.Z) and the etcd modules it requires.
# k8s/go.mod requires k8s.io/kubernetes and names the binaries in a `tool` block; `go mod tidy` fills
# in the graph. etcd is one of those tools when kubeadm's etcd is the version k8s.io/kubernetes
# requires (1.36, 1.37). When they differ (1.34.4: kubeadm deploys 3.6.5-0, go.mod requires the etcd
# modules at v3.6.4), etcd gets a module of its own in <minor>/etcd/, so that neither version lifts
# the other: the Kubernetes binaries keep upstream's graph and etcd is the release kubeadm expects.
#
# The release-independent pins of versions.env (kind, containerd, the Debian suite and packages)
# are copied from the `--from` minor's versions.env (default: versions/default's), so a new minor
# starts from the newest choices; edit them afterwards if that minor needs others.
#
# Needs the Go module proxy (or a module cache holding those modules). The result is reproducible:
# `versions/gen.sh 1.36.4` writes versions/1.36 byte for byte as committed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then export PATH="$PATH:/usr/local/go/bin"; fi

die() { echo "gen.sh: $*" >&2; exit 1; }

release="" from=""
while [ $# -gt 0 ]; do
  case "$1" in
    --from) from=${2:?--from needs a minor}; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) [ -z "$release" ] || die "one release only"; release=${1#v}; shift ;;
  esac
done
[[ "$release" =~ ^1\.([0-9]+)\.([0-9]+)$ ]] || die "want a release like 1.37.2, not '${release}'"
minor_n=${BASH_REMATCH[1]}
minor=1.$minor_n
staging=v0.$minor_n.${BASH_REMATCH[2]}
from=${from:-$(cat "$here/default")}
ref_env=$here/$from/versions.env
[ -f "$ref_env" ] || die "no $ref_env to take the release-independent pins from"

work=$(mktemp -d "${TMPDIR:-/tmp}/kind-versions-gen.XXXXXX")
trap 'rm -rf "$work"' EXIT

dl=$(cd "$work" && go mod download -json "k8s.io/kubernetes@v$release")
updir=$(jq -r .Dir <<<"$dl")
upmod=$(jq -r .GoMod <<<"$dl")
consts=$updir/cmd/kubeadm/app/constants/constants.go
[ -f "$consts" ] || die "no $consts"

# kubeadm's constants: `Name = "value"`, and the etcd map entry of this minor.
const() { sed -n "s/^[[:space:]]*$1 = \"\\(.*\\)\"\$/\\1/p" "$consts" | head -1; }
coredns=$(const CoreDNSVersion)
pause=$(const PauseVersion)
etcd_tag=$(sed -n "/SupportedEtcdVersion = map/,/^[[:space:]]*}/s/^[[:space:]]*$minor_n: \"\\(.*\\)\",\$/\\1/p" "$consts")
etcd_src="DefaultEtcdVersion"
if [ -z "$etcd_tag" ]; then etcd_tag=$(const DefaultEtcdVersion)
elif [ "$etcd_tag" != "$(const DefaultEtcdVersion)" ]; then etcd_src="SupportedEtcdVersion for $minor"; fi
[ -n "$coredns" ] && [ -n "$pause" ] && [ -n "$etcd_tag" ] || die "could not read CoreDNSVersion/PauseVersion/etcd from $consts"
etcd=v${etcd_tag%-*} # 3.7.0-0 -> v3.7.0

upjson=$(go mod edit -json "$upmod")
up_go=$(jq -r .Go <<<"$upjson")
up_godebug=$(jq -r '(.Godebug // [])[] | "\(.Key)=\(.Value)"' <<<"$upjson")
up_etcd=$(jq -r '.Require[] | select(.Path == "go.etcd.io/etcd/server/v3") | .Version' <<<"$upjson")
mapfile -t staged < <(jq -r '.Replace[] | select(.New.Path | startswith("./staging/")) | .Old.Path' <<<"$upjson")
[ ${#staged[@]} -gt 0 ] || die "no staging replaces in $upmod"

# kind's sandbox image (its containerd config.toml), the second pause tag the node needs.
kind_version=$(sed -n 's/^KIND_VERSION=\([^ ]*\).*/\1/p' "$ref_env")
kind_dir=$(cd "$work" && go mod download -json "sigs.k8s.io/kind@$kind_version" | jq -r .Dir)
kind_pause=$(sed -n 's/^[[:space:]]*sandbox_image = "registry.k8s.io\/pause:\(.*\)"/\1/p' \
  "$kind_dir/images/base/files/etc/containerd/config.toml")
[ -n "$kind_pause" ] || die "no sandbox_image in kind $kind_version's containerd config"
pause_tags=$pause
[ "$kind_pause" = "$pause" ] || pause_tags="$pause $kind_pause"

# The `go` line, and a `godebug` block only where upstream's says more than its `go` line implies.
go_lines() {
  printf 'go %s\n' "$1"
  local d=${2:-} gov=${1%.*}
  [ -z "$d" ] || [ "$d" = "default=go$gov" ] || printf '\ngodebug %s\n' "$d"
}

out=$work/out
mkdir -p "$out/k8s"

# --- versions.env: the release's lines, the rest as in the reference minor's ---------------------------
pad() { printf '%-30s# %s\n' "$1" "$2"; }
while IFS= read -r line; do
  case "$line" in
    KUBE_VERSION=*) pad "KUBE_VERSION=v$release" "Kubernetes; the modules are pinned in k8s/go.mod (keep both in step)" ;;
    COREDNS_VERSION=*) pad "COREDNS_VERSION=$coredns" "what kubeadm v$release deploys (its CoreDNSVersion)" ;;
    PAUSE_TAGS=*) pad "PAUSE_TAGS=\"$pause_tags\"" "kubeadm's PauseVersion, and the sandbox_image of kind's containerd config" ;;
    *) printf '%s\n' "$line" ;;
  esac
done <"$ref_env" >"$out/versions.env"

# --- k8s/go.mod ---------------------------------------------------------------------------------
separate_etcd=false
[ "$etcd" = "$up_etcd" ] || separate_etcd=true
{
  echo "// The Kubernetes v$release binaries of the kind node image (kind-config/scripts/node-image.sh builds"
  echo "// every \`tool\` below) and the host kubectl, from the Go module proxy: one module, so all of them share"
  echo "// one dependency graph and one go.sum."
  echo "//"
  echo "// k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with ./staging paths,"
  echo "// which only work inside its own repository; each one is replaced here by its published $staging"
  if $separate_etcd; then
    echo "// (the list is the \`replace\` block of k8s.io/kubernetes v$release's go.mod). etcd is built from ../etcd:"
    echo "// kubeadm deploys etcd $etcd_tag ($etcd_src), while k8s.io/kubernetes requires the etcd modules at"
    echo "// $up_etcd; a module of its own keeps each graph as released."
  else
    echo "// (the list is the \`replace\` block of k8s.io/kubernetes v$release's go.mod). etcd is the version that"
    echo "// k8s.io/kubernetes pins (and kubeadm's $etcd_src, $etcd_tag)."
  fi
  echo "// Update: change the versions, then \`go mod tidy\` (GOTOOLCHAIN=local, GOFLAGS=-mod=mod)."
  echo "module hpa-conformance/kind-config/k8s"
  echo
  go_lines "$up_go" "$up_godebug"
  echo
  echo "require ("
  $separate_etcd || echo "	go.etcd.io/etcd/server/v3 $etcd"
  echo "	k8s.io/kubernetes v$release"
  echo ")"
  echo
  echo "tool ("
  $separate_etcd || echo "	go.etcd.io/etcd/server/v3"
  for c in kube-apiserver kube-controller-manager kube-proxy kube-scheduler kubeadm kubectl kubelet; do
    echo "	k8s.io/kubernetes/cmd/$c"
  done
  echo ")"
  echo
  echo "replace ("
  for m in "${staged[@]}"; do echo "	$m => $m $staging"; done
  echo ")"
} >"$out/k8s/go.mod"
(cd "$out/k8s" && go mod tidy)

# --- etcd/go.mod, when kubeadm's etcd is not the one k8s.io/kubernetes requires ---------------------
if $separate_etcd; then
  mkdir -p "$out/etcd"
  etcd_go=$(cd "$work" && go mod download -json "go.etcd.io/etcd/server/v3@$etcd" | jq -r .GoMod | xargs go mod edit -json | jq -r .Go)
  {
    echo "// etcd $etcd of the kind node image for Kubernetes v$release (kind-config/scripts/node-image.sh builds"
    echo "// the \`tool\` below): kubeadm v$release deploys etcd $etcd_tag ($etcd_src), while k8s.io/kubernetes"
    echo "// v$release requires the etcd modules at $up_etcd, so etcd has a module of its own (../k8s keeps"
    echo "// upstream's graph). Written by kind-config/versions/gen.sh."
    echo "module hpa-conformance/kind-config/etcd"
    echo
    go_lines "$etcd_go"
    echo
    echo "require go.etcd.io/etcd/server/v3 $etcd"
    echo
    echo "tool go.etcd.io/etcd/server/v3"
  } >"$out/etcd/go.mod"
  (cd "$out/etcd" && go mod tidy)
fi

# --- coredns/go.mod: CoreDNS $coredns for ../../node/coredns.go (the plugins of kubeadm's Corefile) ----
mkdir -p "$out/coredns"
coredns_go=$(cd "$work" && go mod download -json "github.com/coredns/coredns@$coredns" | jq -r .GoMod | xargs go mod edit -json | jq -r .Go)
{
  echo "// CoreDNS $coredns of the kind node image for Kubernetes v$release (what its kubeadm deploys),"
  echo "// built by kind-config/scripts/node-image.sh from kind-config/node/coredns.go: the plugins of the"
  echo "// Corefile kubeadm writes, not every plugin upstream's main imports. The graph is the one"
  echo "// github.com/coredns/coredns $coredns's go.mod gives. Written by kind-config/versions/gen.sh."
  echo "module hpa-conformance/kind-config/coredns"
  echo
  go_lines "$coredns_go"
  echo
  echo "require github.com/coredns/coredns $coredns"
} >"$out/coredns/go.mod"
cp "$here/../node/coredns.go" "$out/coredns/main.go"
(cd "$out/coredns" && go mod tidy)
rm "$out/coredns/main.go"

dest=$here/$minor
rm -rf "$dest"
mkdir -p "$dest"
cp -r "$out/." "$dest/"
echo "gen.sh: wrote $dest: Kubernetes v$release, etcd $etcd ($($separate_etcd && echo "own module; k8s.io/kubernetes requires $up_etcd" || echo "in k8s/go.mod")), coredns $coredns, pause $pause_tags" >&2
