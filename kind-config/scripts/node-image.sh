#!/usr/bin/env bash
# `just kind-image [VERSION]`: the kind node image for one Kubernetes minor, built here with no
# container registry, and cached. VERSION is a minor with pins in kind-config/versions/ (1.37,
# 1.34, …) or its exact release (1.37.2); default $KIND_K8S_VERSION, else kind-config/versions/default.
#
#   tag  hpa-conformance/node:$KUBE_VERSION-<12 hex of the hash of every build input>
#   1. the tag is in docker                            -> done (seconds)
#   2. $CACHE/kind/node-$KUBE_VERSION-<hash>.tar.zst   -> `zstd -dc | docker load`
#   3. else build it (below), write that archive, and load it.
#
# Build (see kind-config/README.md): Go binaries from the module proxy (Kubernetes + etcd from the
# minor's wrapper module versions/<minor>/k8s — etcd from versions/<minor>/etcd when it has one —,
# containerd, and CoreDNS with the plugins kubeadm's Corefile uses: node/coredns.go in the module
# versions/<minor>/coredns) in parallel with a debootstrap of Debian;
# kind's base files from the sigs.k8s.io/kind module; a static pause of ours; the images kubeadm
# expects, the workload image hpa-conformance/app:1 written as a docker archive and imported into
# the node's containerd store by the same containerd, run on the host; the node root file system
# packed as a one-layer docker archive and loaded. No image is ever pulled.
#
# Prints the tag on stdout (last line); logs and timings on stderr.
# Options: --print-tag (compute the tag only), --force (rebuild even if cached).
set -euo pipefail
source "$(dirname "$0")/common.sh"

# Everything runs inside main, so bash has parsed the whole script before it starts a step (an
# edit of this file during a build cannot derail that build).
main() {
mode=""
for a in "$@"; do
  case "$a" in
    --print-tag | --force) mode=$a ;;
    -*) die "usage: node-image.sh [VERSION] [--print-tag | --force]" ;;
    "") ;;
    *) use_k8s_version "$a" ;;
  esac
done

if [ -n "${KIND_NODE_IMAGE:-}" ]; then
  log "KIND_NODE_IMAGE=$KIND_NODE_IMAGE: using that image, nothing to build"
  echo "$KIND_NODE_IMAGE"
  exit 0
fi

# --- Input hash -------------------------------------------------------------------------------------
# Every file that shapes the image, plus the Go toolchain's version. (The Debian packages come from
# the mirror's current bookworm, which is not pinned by this hash.) Files are named in the hash
# relative to the minor's folder (versions.env, k8s/go.mod, k8s/go.sum, etcd/…) or to kind-config/
# (scripts/node-image.sh, node/…): a key does not depend on where the folders live.
GO_VERSION=$(go env GOVERSION)
CTRD_TAGS="no_btrfs no_devmapper no_zfs no_aufs"
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
pin_files() { # the selected minor's own files, by their names in its folder
  local f
  for f in versions.env k8s/go.mod k8s/go.sum etcd/go.mod etcd/go.sum coredns/go.mod coredns/go.sum; do
    [ ! -f "$K8S_DIR/$f" ] || echo "$f"
  done
}
input_files() { pin_files; (cd "$KIND_CONFIG_DIR" && printf '%s\n' scripts/node-image.sh node/*); }
hash_of() { # names from pin_files/input_files on stdin; extra strings as arguments
  local n
  { sort | while read -r n; do
      case "$n" in versions.env | k8s/* | etcd/* | coredns/*) printf '%s  %s\n' "$(sha256sum <"$K8S_DIR/$n" | cut -c1-64)" "$n" ;;
        *) printf '%s  %s\n' "$(sha256sum <"$KIND_CONFIG_DIR/$n" | cut -c1-64)" "$n" ;;
      esac
    done
    printf '%s\n' "$@"; } | sha256sum | cut -c1-12
}
# keys: the image's input hash, the Go binaries' hash (their own key, so a change of a script or a
# node file reuses them) and the Debian tree's, of the selected minor.
keys() {
  local input go rootfs
  input=$(input_files | hash_of "$GO_VERSION")
  go=$( { pin_files; echo node/coredns.go; } | hash_of "$GO_VERSION" "$(k8s_ldflags)" "$CTRD_TAGS")
  rootfs=$(printf '%s\n' "$DEBIAN_SUITE" "$NODE_PACKAGES" "$MIRROR" minbase | sha256sum | cut -c1-12)
  echo "$input $go $rootfs"
}
read -r INPUT_HASH GO_HASH ROOTFS_HASH < <(keys)
TAG=hpa-conformance/node:$KUBE_VERSION-$INPUT_HASH
ARCHIVE=$CACHE_KIND/node-$KUBE_VERSION-$INPUT_HASH.tar.zst

if [ "$mode" = --print-tag ]; then
  echo "$TAG"
  exit 0
fi

pick_docker || die "docker is not answering: run \`just engine\` first"
T0=$(date +%s)
declare -a TIMINGS=()
timing() { TIMINGS+=("$1 $2s${3:+ ($3)}"); log "step $1: $2 s${3:+ ($3)}"; }

load_archive() {
  local t
  t=$(date +%s)
  log "loading $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1))"
  zstd -dc "$ARCHIVE" | "$DOCKER" load >/dev/null
  "$DOCKER" image inspect "$TAG" >/dev/null 2>&1 || die "$ARCHIVE did not hold $TAG"
  timing load "$(since "$t")"
}

summary() {
  local size
  size=$("$DOCKER" image inspect "$TAG" --format '{{.Size}}')
  local steps=""
  [ ${#TIMINGS[@]} -gt 0 ] && steps="; steps: $(printf '%s, ' "${TIMINGS[@]}")" && steps=${steps%, }
  log "node image $TAG: $1 in $(since "$T0") s; $((size / 1000000)) MB$steps"
  echo "$TAG"
}

if [ "$mode" != --force ]; then
  if "$DOCKER" image inspect "$TAG" >/dev/null 2>&1; then summary "already in docker"; exit 0; fi
  if [ -s "$ARCHIVE" ]; then load_archive; summary "restored from the cache archive"; exit 0; fi
fi

# One build at a time per cache.
exec 9>"$CACHE_KIND/build.lock"
flock -n 9 || { log "another node-image build holds $CACHE_KIND/build.lock; waiting"; flock 9; }

log "building $TAG (inputs: $(input_files | tr '\n' ' ')in kind-config/versions/$K8S_MINOR and kind-config/)"
WORK=$CACHE_KIND/work-$KUBE_VERSION-$INPUT_HASH
LOGS=$CACHE_KIND/logs-$KUBE_VERSION-$INPUT_HASH
ROOTFS=$WORK/rootfs
cleanup_mounts() {
  local m
  for m in $(awk -v r="$ROOTFS" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
}
cleanup_mounts
rm -rf "$WORK" "$LOGS"
mkdir -p "$WORK" "$LOGS"
trap 'cleanup_mounts; [ -n "${CTRD_PID:-}" ] && kill "$CTRD_PID" 2>/dev/null; true' EXIT

# Go binaries land in $CACHE/kind/bin-<hash of what shapes them>/, reused across image rebuilds.
LDFLAGS=$(k8s_ldflags)
GOBINS=$CACHE_KIND/bin-$GO_HASH

# --- Go builds (one job; `go` itself uses both cores) ----------------------------------------------
go_builds() {
  local t out=$GOBINS.tmp
  export CGO_ENABLED=0
  rm -rf "$out"
  mkdir -p "$out"
  t=$(date +%s)
  # Kubernetes and etcd: the `tool` packages of versions/<minor>/k8s, with go.sum as committed; etcd
  # from versions/<minor>/etcd instead when the minor has that module.
  local kube=(k8s.io/kubernetes/cmd/kubeadm k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy)
  if [ -f "$K8S_DIR/etcd/go.mod" ]; then
    (cd "$K8S_DIR/k8s" && go build -mod=readonly -trimpath -ldflags "$LDFLAGS" -o "$out/" "${kube[@]}")
    echo "kubernetes $(since "$t")" >>"$LOGS/go-times"
    t=$(date +%s)
    (cd "$K8S_DIR/etcd" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3)
    echo "etcd $(since "$t")" >>"$LOGS/go-times"
  else
    (cd "$K8S_DIR/k8s" && go build -mod=readonly -trimpath -ldflags "$LDFLAGS" -o "$out/" "${kube[@]}" go.etcd.io/etcd/server/v3)
    mv "$out/server" "$out/etcd" # the etcd main package is the module go.etcd.io/etcd/server/v3
    echo "kubernetes+etcd $(since "$t")" >>"$LOGS/go-times"
  fi
  t=$(date +%s)
  cd /
  GOBIN=$out go install -trimpath -tags "$CTRD_TAGS" \
    -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
    "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
    "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" \
    "github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION"
  echo "containerd $(since "$t")" >>"$LOGS/go-times"
  t=$(date +%s)
  # CoreDNS: our main (node/coredns.go: the plugins of kubeadm's Corefile) in the minor's module,
  # which pins github.com/coredns/coredns at COREDNS_VERSION and the graph that version's go.mod gives.
  local dns=$WORK/coredns-src got
  rm -rf "$dns"
  mkdir -p "$dns"
  cp "$K8S_DIR/coredns/go.mod" "$K8S_DIR/coredns/go.sum" "$dns/"
  cp "$KIND_CONFIG_DIR/node/coredns.go" "$dns/main.go"
  got=$(cd "$dns" && go list -mod=readonly -m -f '{{.Version}}' github.com/coredns/coredns)
  [ "$got" = "$COREDNS_VERSION" ] || { echo "versions/$K8S_MINOR/coredns/go.mod pins coredns $got, versions.env $COREDNS_VERSION"; exit 1; }
  (cd "$dns" && go build -mod=readonly -trimpath -ldflags "-s -w" -o "$out/coredns" .)
  echo "coredns $(since "$t")" >>"$LOGS/go-times"
  # Every plugin of the Corefile this kubeadm writes (the server block of its dns addon manifest,
  # read from the k8s.io/kubernetes module) is in the binary.
  local plugins want p manifest
  manifest=$(cd "$K8S_DIR/k8s" && go list -mod=readonly -m -f '{{.Dir}}' k8s.io/kubernetes)/cmd/kubeadm/app/phases/addons/dns/manifests.go
  plugins=$("$out/coredns" -plugins)
  want=$(sed -n '/^    \.:53 {$/,/^    }$/s/^        \([a-z][a-z_0-9]*\).*/\1/p' "$manifest")
  [ -n "$want" ] || { echo "no Corefile plugins read from $manifest"; exit 1; }
  for p in $want; do
    grep -qx "$p" <<<"$plugins" || { echo "coredns lacks plugin $p of kubeadm's Corefile (node/coredns.go):"; echo "$plugins"; exit 1; }
  done
  "$out/kubeadm" version -o short | grep -qx "$KUBE_VERSION" || { echo "kubeadm is not $KUBE_VERSION"; exit 1; }
  rm -rf "$GOBINS"
  mv "$out" "$GOBINS"
}

# --- Debian root file system -----------------------------------------------------------------------
# debootstrap's tree is cached as $CACHE/kind/rootfs-<hash of suite, packages, mirror>.tar.zst: an
# image rebuild for other inputs (or another minor with the same packages) then needs no network,
# and gets the same Debian packages.
ROOTFS_ARCHIVE=$CACHE_KIND/rootfs-$ROOTFS_HASH.tar.zst
debootstrap_rootfs() {
  if [ -s "$ROOTFS_ARCHIVE" ]; then
    echo "extracting $ROOTFS_ARCHIVE"
    mkdir -p "$ROOTFS"
    zstd -dc "$ROOTFS_ARCHIVE" | tar -C "$ROOTFS" -x --numeric-owner
    return
  fi
  debootstrap --variant=minbase --include="${NODE_PACKAGES// /,}" "$DEBIAN_SUITE" "$ROOTFS" "$MIRROR"
  rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb
  tar -C "$ROOTFS" --numeric-owner -cf - . | zstd -q -T2 -3 -o "$ROOTFS_ARCHIVE.tmp"
  mv "$ROOTFS_ARCHIVE.tmp" "$ROOTFS_ARCHIVE"
}

t=$(date +%s)
if [ -x "$GOBINS/kubelet" ] && [ -x "$GOBINS/coredns" ]; then
  log "Go binaries: reusing $GOBINS"
  GO_PID=""
else
  log "Go builds in the background (log: $LOGS/go.log)"
  go_builds >"$LOGS/go.log" 2>&1 &
  GO_PID=$!
fi
log "Debian $DEBIAN_SUITE root file system in the background: $([ -s "$ROOTFS_ARCHIVE" ] && echo "from $ROOTFS_ARCHIVE" || echo debootstrap) (log: $LOGS/debootstrap.log)"
debootstrap_rootfs >"$LOGS/debootstrap.log" 2>&1 &
DEBOOTSTRAP_PID=$!

# Small things meanwhile: pause, kind's base files, busybox for the workload image.
t1=$(date +%s)
mkdir -p "$WORK/small"
gcc -static -Os -s -o "$WORK/small/pause" "$KIND_CONFIG_DIR/node/pause.c"
KIND_DIR=$(cd / && go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | jq -r .Dir)
[ -d "$KIND_DIR/images/base/files" ] || die "kind module has no images/base/files ($KIND_DIR)"
(cd "$WORK/small" && { apt-get download -q busybox-static >/dev/null 2>&1 \
  || { apt-get update -qq && apt-get download -q busybox-static >/dev/null; }; } \
  && dpkg-deb -x busybox-static_*.deb busybox)
timing pause+kind-files+busybox "$(since "$t1")"

wait "$DEBOOTSTRAP_PID" || { tail -20 "$LOGS/debootstrap.log" >&2; die "debootstrap failed"; }
timing rootfs "$(since "$t")"
if [ -n "$GO_PID" ]; then
  wait "$GO_PID" || { tail -30 "$LOGS/go.log" >&2; die "Go builds failed"; }
  timing go-builds "$(since "$t")" "$(paste -sd, "$LOGS/go-times")"
fi
# The host kubectl is the default minor's (scripts/tools.sh): take it from this build when it is.
if [ "$K8S_MINOR" = "$KIND_K8S_DEFAULT" ] &&
  [ "$("$CACHE_BIN/kubectl" version --client -o json 2>/dev/null | jq -r .clientVersion.gitVersion)" != "$KUBE_VERSION" ]; then
  install -m 0755 "$GOBINS/kubectl" "$CACHE_BIN/kubectl.tmp" && mv "$CACHE_BIN/kubectl.tmp" "$CACHE_BIN/kubectl"
  log "host kubectl: $KUBE_VERSION (from this build)"
fi

# --- Component images as one docker archive (docker-save layout), no docker needed ----------------
# add_image DIR "TAG..." CONFIG_JSON: one gzip layer of DIR's tree.
ARCH_DIR=$WORK/images
mkdir -p "$ARCH_DIR"
echo '[]' >"$ARCH_DIR/manifest.json"
TAR_FLAGS=(--sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner)
add_image() {
  local dir=$1 tags=$2 cfg=$3 layer diffid config cdigest
  layer=$ARCH_DIR/layer.tmp
  diffid=$(tar -C "$dir" "${TAR_FLAGS[@]}" -cf - . | tee "$layer" | sha256sum | cut -c1-64)
  mkdir -p "$ARCH_DIR/$diffid"
  pigz -n -6 <"$layer" >"$ARCH_DIR/$diffid/layer.tar"
  rm -f "$layer"
  config=$(jq -cn --argjson c "$cfg" --arg d "sha256:$diffid" '{architecture: "amd64", os: "linux",
    created: "1970-01-01T00:00:00Z", config: $c, rootfs: {type: "layers", diff_ids: [$d]},
    history: [{created: "1970-01-01T00:00:00Z", created_by: "hpa-conformance kind-config/scripts/node-image.sh"}]}')
  cdigest=$(printf '%s' "$config" | sha256sum | cut -d' ' -f1)
  printf '%s' "$config" >"$ARCH_DIR/$cdigest.json"
  jq --arg c "$cdigest.json" --arg l "$diffid/layer.tar" --arg t "$tags" \
    '. + [{Config: $c, RepoTags: ($t | split(" ")), Layers: [$l]}]' "$ARCH_DIR/manifest.json" >"$ARCH_DIR/m.tmp"
  mv "$ARCH_DIR/m.tmp" "$ARCH_DIR/manifest.json"
}
# A minimal tree: /etc/passwd, /etc/group, /tmp, /etc/nsswitch.conf.
mini_root() {
  local d=$1
  mkdir -p "$d/etc" "$d/tmp" "$d/usr/local/bin"
  chmod 1777 "$d/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$d/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$d/etc/group"
  printf 'hosts: files dns\n' >"$d/etc/nsswitch.conf"
}
PATH_ENV='["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]'

t=$(date +%s)
# The image names kubeadm expects, e.g. registry.k8s.io/kube-apiserver:v1.36.4.
mapfile -t KUBEADM_IMAGES < <("$GOBINS/kubeadm" config images list --kubernetes-version "$KUBE_VERSION")
image_ref() { printf '%s\n' "${KUBEADM_IMAGES[@]}" | grep -E "/$1:" | head -1; }
# The pins must be what this kubeadm deploys: etcd (from the go.mod pins), coredns, pause.
want=$(image_ref etcd); want=${want##*:}; want=${want%-*}
got=$("$GOBINS/etcd" --version | sed -n 's/^etcd Version: //p')
[ "$got" = "$want" ] || die "kubeadm $KUBE_VERSION deploys etcd $want, the build made etcd $got (versions/$K8S_MINOR)"
want=$(image_ref coredns); want=${want##*:}
[ "$want" = "$COREDNS_VERSION" ] || die "kubeadm $KUBE_VERSION deploys coredns $want, versions/$K8S_MINOR pins $COREDNS_VERSION"
want=$(image_ref pause); want=${want##*:}
[[ " $PAUSE_TAGS " == *" $want "* ]] || die "kubeadm $KUBE_VERSION deploys pause $want, not in PAUSE_TAGS ($PAUSE_TAGS)"
log "kubeadm's images: $(printf '%s ' "${KUBEADM_IMAGES[@]##*/}")"
for c in kube-apiserver kube-controller-manager kube-scheduler etcd; do
  ref=$(image_ref "$c")
  [ -n "$ref" ] || die "kubeadm lists no $c image"
  d=$WORK/img-$c
  mini_root "$d"
  cp "$GOBINS/$c" "$d/usr/local/bin/"
  add_image "$d" "$ref" "{\"Env\": $PATH_ENV}"
done

# kube-proxy runs iptables/ip6tables(-save/-restore), conntrack and nft: copy them and their
# libraries out of the node root file system. iptables* point at the nft backend, as the node's
# entrypoint selects on a host whose docker writes nft rules (see README).
d=$WORK/img-kube-proxy
mini_root "$d"
cp "$GOBINS/kube-proxy" "$d/usr/local/bin/"
mkdir -p "$d/usr/sbin"
# The binaries, iptables' extension modules (its XTABLES_LIBDIR; e.g. libxt_statistic needs libm),
# and every library they load, found with ldd in the Debian tree.
mkdir -p "$d/usr/lib/x86_64-linux-gnu"
cp -a "$ROOTFS/usr/lib/x86_64-linux-gnu/xtables" "$d/usr/lib/x86_64-linux-gnu/"
for b in /usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi /usr/sbin/conntrack /usr/sbin/nft; do
  cp -a "$ROOTFS$b" "$d$b"
done
(cd "$ROOTFS" && ls usr/lib/x86_64-linux-gnu/xtables/*.so) | sed 's|^|/|' >"$WORK/kube-proxy-elves"
printf '%s\n' /usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi /usr/sbin/conntrack /usr/sbin/nft >>"$WORK/kube-proxy-elves"
chroot "$ROOTFS" xargs -n 50 ldd <"$WORK/kube-proxy-elves" 2>/dev/null \
  | awk '/=> \// {print $3} /^\t\/lib/ {print $1}' | sort -u | while read -r lib; do
  real=$(chroot "$ROOTFS" readlink -f "$lib")
  mkdir -p "$d$(dirname "$lib")" "$d$(dirname "$real")"
  [ -e "$d$real" ] || cp -a "$ROOTFS$real" "$d$real"
  [ "$lib" = "$real" ] || [ -e "$d$lib" ] || ln -s "$real" "$d$lib"
done
for n in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
  ln -s xtables-nft-multi "$d/usr/sbin/$n"
done
for n in iptables-legacy iptables-legacy-save iptables-legacy-restore ip6tables-legacy ip6tables-legacy-save ip6tables-legacy-restore; do
  ln -s xtables-legacy-multi "$d/usr/sbin/$n"
done
# Check that the image's own tree runs them, including a module with extra libraries.
chroot "$d" /usr/sbin/iptables -m statistic --help >/dev/null || die "kube-proxy image: iptables -m statistic fails"
chroot "$d" /usr/sbin/iptables-legacy -m statistic --help >/dev/null || die "kube-proxy image: iptables-legacy fails"
chroot "$d" /usr/sbin/nft --version >/dev/null || die "kube-proxy image: nft fails"
chroot "$d" /usr/sbin/conntrack --version >/dev/null || die "kube-proxy image: conntrack fails"
for f in /etc/ethertypes /etc/protocols /etc/services; do [ -e "$ROOTFS$f" ] && cp "$ROOTFS$f" "$d$f"; done
mkdir -p "$d/run" "$d/var/lib/kube-proxy"
add_image "$d" "$(image_ref kube-proxy)" "{\"Env\": $PATH_ENV}"

d=$WORK/img-coredns
mini_root "$d"
cp "$GOBINS/coredns" "$d/coredns"
add_image "$d" "$(image_ref coredns)" "{\"Env\": $PATH_ENV, \"Entrypoint\": [\"/coredns\"]}"

d=$WORK/img-pause
mini_root "$d"
cp "$WORK/small/pause" "$d/pause"
pause_tags=""
for p in $PAUSE_TAGS; do pause_tags+=" registry.k8s.io/pause:$p"; done
add_image "$d" "${pause_tags# }" '{"Entrypoint": ["/pause"]}'

# The workload image: busybox-static with its applets linked in /bin.
d=$WORK/img-app
mini_root "$d"
mkdir -p "$d/bin"
cp "$WORK/small/busybox/bin/busybox" "$d/bin/busybox"
for a in $("$d/bin/busybox" --list); do [ -e "$d/bin/$a" ] || ln -s busybox "$d/bin/$a"; done
add_image "$d" "hpa-conformance/app:1" '{"Env": ["PATH=/bin"], "Cmd": ["sh"]}'
tar -C "$ARCH_DIR" "${TAR_FLAGS[@]}" -cf "$WORK/images.tar" .
timing component-images "$(since "$t")"

# --- The node root file system --------------------------------------------------------------------
t=$(date +%s)
F=$KIND_DIR/images/base/files
# kind's base image files, with its Dockerfile's modes (scripts 0755, the rest 0644).
install -D -m 0755 -t "$ROOTFS/usr/local/bin" "$F"/usr/local/bin/*
mkdir -p "$ROOTFS/kind/bin" "$ROOTFS/LICENSES"
cp -r "$F/kind/." "$ROOTFS/kind/"
find "$ROOTFS/kind" -type f -exec chmod 0644 {} +
chmod 0755 "$ROOTFS/kind" "$ROOTFS/kind/bin" "$ROOTFS"/kind/bin/*
install -m 0644 -t "$ROOTFS/LICENSES" "$F"/LICENSES/*
for sub in etc etc/containerd etc/default etc/sysctl.d etc/systemd/system etc/systemd/system/kubelet.service.d; do
  mkdir -p "$ROOTFS/$sub"
  find "$F/$sub" -maxdepth 1 -type f -exec install -m 0644 -t "$ROOTFS/$sub" {} +
done
# The Dockerfile's unit pruning, then its enables and masks.
chroot "$ROOTFS" bash -euo pipefail -c '
  find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete
  rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
    /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
    /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
  echo "ReadKMsg=no" >> /etc/systemd/journald.conf
  ln -sf /usr/lib/systemd/systemd /sbin/init
  systemctl enable kubelet.service containerd.service undo-mount-hacks.service
  systemctl mask systemd-binfmt.service
  mkdir -p /etc/kubernetes/manifests' >"$LOGS/rootfs.log" 2>&1
# containerd, ctr and the shim; Debian's runc (/usr/sbin) and CNI plugins (/usr/lib/cni).
install -m 0755 -t "$ROOTFS/usr/local/bin" "$GOBINS/containerd" "$GOBINS/containerd-shim-runc-v2" "$GOBINS/ctr"
"$GOBINS/ctr" oci spec \
  | jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
  | jq 'del(.process.rlimits)' >"$ROOTFS/etc/containerd/cri-base.json"
install -D -m 0755 "$KIND_CONFIG_DIR/node/containerd-oom-score-adj.sh" "$ROOTFS/kind/bin/containerd-oom-score-adj.sh"
install -D -m 0644 "$KIND_CONFIG_DIR/node/containerd.service.conf" \
  "$ROOTFS/etc/systemd/system/containerd.service.d/10-hpa-conformance.conf"
rm -rf "$ROOTFS/opt/cni/bin"
mkdir -p "$ROOTFS/opt/cni" "$ROOTFS/etc/cni/net.d" "$ROOTFS/kind/manifests"
ln -s /usr/lib/cni "$ROOTFS/opt/cni/bin"
install -m 0644 "$KIND_CONFIG_DIR/node/10-hpa-conformance-bridge.conflist" "$ROOTFS/etc/cni/net.d/"
install -m 0644 "$KIND_CONFIG_DIR/node/default-cni.yaml" "$ROOTFS/kind/manifests/default-cni.yaml"
# Kubernetes: kind's units expect /usr/bin/kubelet; kind runs kubeadm and kubectl in the node.
install -m 0755 -t "$ROOTFS/usr/bin" "$GOBINS/kubeadm" "$GOBINS/kubelet" "$GOBINS/kubectl"
printf '%s' "$KUBE_VERSION" >"$ROOTFS/kind/version"
# Trim: package caches, lists, docs.
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* \
  "$ROOTFS"/usr/share/man "$ROOTFS"/usr/share/info "$ROOTFS"/var/log/*.log
timing node-rootfs "$(since "$t")"

# Preload the images into the node's containerd store, the way kind loads images (pinned, not
# unpacked: the CRI unpacks on first use), with the node's own containerd run on the host.
t=$(date +%s)
cat >"$WORK/containerd.toml" <<EOF
version = 3
root = "$ROOTFS/var/lib/containerd"
state = "$WORK/containerd-state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime",
  "io.containerd.internal.v1.opt", "io.containerd.nri.v1.nri", "io.containerd.podsandbox.controller.v1.podsandbox"]
[grpc]
  address = "$WORK/containerd.sock"
[ttrpc]
  address = "$WORK/containerd.sock.ttrpc"
EOF
"$GOBINS/containerd" --config "$WORK/containerd.toml" >"$LOGS/containerd.log" 2>&1 &
CTRD_PID=$!
CTR=("$GOBINS/ctr" --address "$WORK/containerd.sock" -n k8s.io)
for _ in $(seq 1 50); do "${CTR[@]}" version >/dev/null 2>&1 && break; sleep 0.2; done
"${CTR[@]}" version >/dev/null 2>&1 || { tail -20 "$LOGS/containerd.log" >&2; die "containerd did not start"; }
"${CTR[@]}" images import --label=io.cri-containerd.pinned=pinned --all-platforms --no-unpack --digests \
  "$WORK/images.tar" >"$LOGS/ctr-import.log" 2>&1
"${CTR[@]}" images ls -q 2>>"$LOGS/ctr-import.log" | grep -v '@sha256:' | sort >"$LOGS/preloaded-images"
kill "$CTRD_PID"
wait "$CTRD_PID" || true
CTRD_PID=""
for ref in "${KUBEADM_IMAGES[@]}" hpa-conformance/app:1; do
  case "$ref" in */pause:*) continue ;; esac
  grep -q "$ref\$" "$LOGS/preloaded-images" || die "image $ref not preloaded"
done
rm -rf "$WORK/containerd-state" "$ROOTFS/var/lib/containerd/io.containerd.runtime.v2.task"
timing preload-images "$(since "$t")" "$(wc -l <"$LOGS/preloaded-images") images"

# --- Pack as a docker archive, cache it (zstd), load it ---------------------------------------------
t=$(date +%s)
cleanup_mounts
N=$WORK/node-archive
mkdir -p "$N"
tar -C "$ROOTFS" "${TAR_FLAGS[@]}" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' \
  --exclude='./run/*' --exclude='./tmp/*' -cf - . \
  | tee "$N/layer.tar" | sha256sum | cut -c1-64 >"$N/diffid"
diffid=$(cat "$N/diffid"); rm "$N/diffid"
mkdir -p "$N/$diffid"; mv "$N/layer.tar" "$N/$diffid/layer.tar"
config=$(jq -cn --arg d "sha256:$diffid" '{architecture: "amd64", os: "linux", created: "1970-01-01T00:00:00Z",
  config: {Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "container=docker"],
    Entrypoint: ["/usr/local/bin/entrypoint", "/sbin/init"], StopSignal: "SIGRTMIN+3"},
  rootfs: {type: "layers", diff_ids: [$d]},
  history: [{created: "1970-01-01T00:00:00Z", created_by: "hpa-conformance kind-config/scripts/node-image.sh"}]}')
cdigest=$(printf '%s' "$config" | sha256sum | cut -d' ' -f1)
printf '%s' "$config" >"$N/$cdigest.json"
jq -cn --arg c "$cdigest.json" --arg l "$diffid/layer.tar" --arg t "$TAG" \
  '[{Config: $c, RepoTags: [$t], Layers: [$l]}]' >"$N/manifest.json"
tar -C "$N" "${TAR_FLAGS[@]}" -cf - manifest.json "$cdigest.json" "$diffid" | zstd -q -T2 -3 -o "$ARCHIVE.tmp"
mv "$ARCHIVE.tmp" "$ARCHIVE"
timing pack+zstd "$(since "$t")" "$(du -h "$ARCHIVE" | cut -f1)"
rm -rf "$WORK"
load_archive
prune
summary "built"
}

# Superseded cache entries go, so the cache holds one image of each minor: this minor's archives,
# logs and docker tags of other inputs (any patch of the minor); Go binaries and Debian trees that
# no minor of kind-config/versions/ has as its current key. Another minor's image stays.
prune() {
  local keep=() m old prefix=${KUBE_VERSION%.*}.
  for m in $(k8s_minors); do keep+=($(use_k8s_version "$m" && keys)); done
  keep+=("$INPUT_HASH")
  local f name
  for f in "$CACHE_KIND"/node-"$prefix"*.tar.zst "$CACHE_KIND"/logs-"$prefix"* "$CACHE_KIND"/work-* \
    "$CACHE_KIND"/bin-* "$CACHE_KIND"/rootfs-*.tar.zst; do
    [ -e "$f" ] || continue
    name=${f##*/}; name=${name%.tar.zst}; name=${name##*-}
    [[ " ${keep[*]} " == *" $name "* ]] && [[ "$f" != */work-* ]] && continue
    rm -rf "$f" && log "removed the superseded cache entry ${f##*/}"
  done
  # Docker: this minor's other tags (one in use by a cluster stays: docker refuses to remove it).
  for old in $("$DOCKER" images hpa-conformance/node --format '{{.Repository}}:{{.Tag}}' | grep -F ":$prefix" | grep -vx "$TAG"); do
    "$DOCKER" rmi "$old" >/dev/null 2>&1 && log "removed the superseded image $old" || true
  done
}

main "$@"
