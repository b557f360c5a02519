# shellcheck shell=bash disable=SC2034  # (variables are used by the scripts that source this file)
# Sourced by the kind-config scripts: pinned versions, the cache layout, the docker client to use,
# and small logging/timing helpers. Not executable on its own.

KIND_CONFIG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER_NAME=hpa-conformance

REPO_ROOT=$(cd "$KIND_CONFIG_DIR/.." && pwd)

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# --- Kubernetes version: one folder of pins per minor, kind-config/versions/<minor>/ --------------
# versions.env (KUBE_VERSION, COREDNS_VERSION, PAUSE_TAGS, KIND_VERSION, …), k8s/go.mod + go.sum (the
# wrapper module of the Kubernetes binaries and, usually, etcd) and, when kubeadm's etcd is not the
# version k8s.io/kubernetes requires, etcd/go.mod + go.sum. versions/default names the default minor.
VERSIONS_DIR=$KIND_CONFIG_DIR/versions
KIND_K8S_DEFAULT=$(cat "$VERSIONS_DIR/default")
k8s_minors() { (cd "$VERSIONS_DIR" && for d in */versions.env; do echo "${d%/versions.env}"; done | sort -V); }
# use_k8s_version [SPEC]: select a minor and source its versions.env. SPEC is a minor (1.37, v1.37)
# or its exact release (1.37.2); default $KIND_K8S_VERSION, else versions/default. Sets K8S_MINOR
# and K8S_DIR (its folder).
use_k8s_version() {
  local spec=${1:-${KIND_K8S_VERSION:-}} minor
  spec=${spec:-$KIND_K8S_DEFAULT}
  spec=${spec#v}
  minor=$spec
  [[ "$spec" =~ ^([0-9]+\.[0-9]+)\.[0-9]+$ ]] && minor=${BASH_REMATCH[1]}
  [ -f "$VERSIONS_DIR/$minor/versions.env" ] ||
    die "no Kubernetes $spec in kind-config/versions/ (there: $(k8s_minors | tr '\n' ' '))"
  K8S_MINOR=$minor
  K8S_DIR=$VERSIONS_DIR/$minor
  # shellcheck source=../versions/1.37/versions.env
  source "$K8S_DIR/versions.env"
  [ "$spec" = "$minor" ] || [ "v$spec" = "$KUBE_VERSION" ] ||
    die "kind-config/versions/$minor pins $KUBE_VERSION, not v$spec"
}
use_k8s_version

# --- Cache layout: outside the repo, so a fresh CI clone on the same machine reuses it -----------
CACHE=${HPA_CONFORMANCE_CACHE:-$HOME/.cache/hpa-conformance}
CACHE_BIN=$CACHE/bin          # kind, kubectl (host tools)
CACHE_KIND=$CACHE/kind        # node-<version>-<hash>.tar.zst archives, Go binaries, build work dirs, logs
mkdir -p "$CACHE_BIN" "$CACHE_KIND"

# Go: /usr/local/go on these machines; the module and build caches are Go's own (shared with the
# project's other Go builds, e.g. adapters/upstream, which uses the same Kubernetes modules).
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="$PATH:/usr/local/go/bin"
fi
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
export PATH="$CACHE_BIN:$PATH"

export DEBIAN_FRONTEND=noninteractive


# docker client: the first `docker` on PATH if it can talk to the daemon, else Debian's own
# /usr/bin/docker (same version as the daemon). kind uses the `docker` on PATH, so
# pick_docker also puts the chosen client's directory first on PATH.
pick_docker() {
  local c
  for c in "$(command -v docker 2>/dev/null || true)" /usr/bin/docker; do
    [ -n "$c" ] && [ -x "$c" ] || continue
    if "$c" version --format '{{.Server.Version}}' >/dev/null 2>&1; then
      DOCKER=$c
      PATH="$(dirname "$c"):$PATH"
      export PATH
      return 0
    fi
  done
  return 1
}

# ldflags that stamp the Kubernetes version into component-base and client-go (else the binaries
# report v0.0.0-master, and kubeadm derives its image tags and checks from that).
k8s_ldflags() {
  local v=${KUBE_VERSION#v} x p
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%.*}
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    x+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    x+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  printf '%s' "-s -w$x"
}

# Seconds since $1 (an epoch time from `date +%s`).
since() { echo $(($(date +%s) - $1)); }

# The Kubernetes minor the cluster of $KUBECONFIG runs, from its API server (1.37): what the
# harness (`--kubernetes-version`) and the deployed reference judge and act as on that cluster.
cluster_minor() {
  kubectl version -o json 2>/dev/null | jq -r '.serverVersion.gitVersion // empty' | sed -E 's/^v([0-9]+\.[0-9]+).*/\1/' | grep . ||
    die "no Kubernetes version from the API server of $KUBECONFIG"
}

# The cluster a script acts on (`cluster`: KIND_CLUSTER_NAME or hpa-conformance) and its
# kubeconfig as `just kind-up` writes it (KUBECONFIG when set).
use_cluster() {
  cluster=${KIND_CLUSTER_NAME:-$CLUSTER_NAME}
  local kubeconfig=$REPO_ROOT/.cache/kind/kubeconfig
  [ "$cluster" = "$CLUSTER_NAME" ] || kubeconfig=$kubeconfig-$cluster
  export KUBECONFIG=${KUBECONFIG:-$kubeconfig}
}

# The pid, in kind node $1, of the deployed reference controller's process that holds its Lease:
# the holder's pod, found by its UID in the process's cgroup path (pod<uid>, with - or _).
reference_leader_pid() {
  local holder uid
  holder=$(kubectl -n hpa-reference get lease hpa-reference -o jsonpath='{.spec.holderIdentity}')
  uid=$(kubectl -n hpa-reference get pod "${holder%_*}" -o jsonpath='{.metadata.uid}')
  "$DOCKER" exec "$1" sh -c "for p in /proc/[0-9]*; do [ \"\$(cat \$p/comm 2>/dev/null)\" = hpa-reference ] && grep -q -e 'pod$uid' -e 'pod${uid//-/_}' \$p/cgroup && echo \${p#/proc/}; done; true" | head -1
}

# Edits kube-controller-manager's static pod manifest on the kind node $1 with the sed
# substitution $3 of a line matching the regex $2 (which must be there) and waits until KCM runs
# again, ready, with the fixed string $4 among its arguments; $5 says what changed, for the error.
kcm_edit() {
  local node=$1 line=$2 substitution=$3 expect=$4 what=$5
  local manifest=/etc/kubernetes/manifests/kube-controller-manager.yaml
  "$DOCKER" exec "$node" grep -q -- "$line" "$manifest" || die "no line matching '$line' in $manifest"
  "$DOCKER" exec "$node" sed -i "$substitution" "$manifest"
  kcm_back "restart $what" 'grep -qF -- "$expect" <<<"$(kcm_field ".spec.containers[0].command")"'
}

# kube-controller-manager's pod field $1 (a JSONPath inside its pod; empty while there is none).
kcm_field() {
  kubectl -n kube-system get pods -l component=kube-controller-manager \
    -o jsonpath="{.items[0]$1}" 2>/dev/null || true
}

# Waits (2 minutes at most) until kube-controller-manager runs, ready, and the shell condition
# $2 holds (evaluated in the caller's variables); else dies saying it did not $1.
kcm_back() {
  for _ in $(seq 120); do
    if [ "$(kcm_field '.status.containerStatuses[0].ready')" = true ] && eval "$2"; then return 0; fi
    sleep 1
  done
  die "kube-controller-manager did not $1"
}

# Restarts kube-controller-manager on the kind node $1 (its process killed; the kubelet starts its
# static pod's container again) and waits until the new one runs, ready. A controller that starts
# while every HPA already exists queues them all at once (1.37) and books each next reconcile a sync
# period after its first: its schedule is as bunched as its first round was quick — the state the
# deployed reference starts in, so kind-scale restarts KCM before measuring it.
kcm_restart() {
  local node=$1 before
  before=$(kcm_field '.status.containerStatuses[0].restartCount')
  "$DOCKER" exec "$node" sh -c 'kill $(pidof kube-controller-manager)' ||
    die "could not stop kube-controller-manager in $node"
  kcm_back "come back after its restart" \
    '[ "$(kcm_field ".status.containerStatuses[0].restartCount")" != "$before" ]'
}

# Switches kube-controller-manager's HPA controller off on the kind node $1 (its static pod
# manifest edited: `--controllers=…,-horizontal-pod-autoscaler-controller`) and waits until KCM
# runs again without it — so that another HPA controller can take its place.
kcm_hpa_off() {
  kcm_edit "$1" '--controllers=\*,bootstrapsigner,tokencleaner$' \
    's/--controllers=\*,bootstrapsigner,tokencleaner$/--controllers=*,bootstrapsigner,tokencleaner,-horizontal-pod-autoscaler-controller/' \
    '-horizontal-pod-autoscaler-controller' "without its HPA controller"
}

# Whether kube-controller-manager runs without its HPA controller (what kcm_hpa_off leaves): read
# from its command $1 when the caller has it (kcm_field '.spec.containers[0].command'), else asked.
kcm_hpa_is_off() {
  grep -qF -- '-horizontal-pod-autoscaler-controller' <<<"${1-$(kcm_field '.spec.containers[0].command')}"
}

# `--kube-api-qps=$1 --kube-api-burst=<2 × $1>`: the client rate limit kind-scale gives both
# controllers (a positive whole number of requests/s, burst twice that).
api_qps_flags() {
  [[ "$1" =~ ^[1-9][0-9]*$ ]] || die "kube-api-qps: '$1' is not a positive whole number"
  echo "--kube-api-qps=$1 --kube-api-burst=$((2 * $1))"
}

# Sets the deployed reference controller's client rate limit to api_qps_flags $1 (its
# Deployment's arguments replaced) and waits for the rollout — the same limits kcm_api_qps gives
# kube-controller-manager.
reference_api_qps() {
  local flags qps burst args patch
  flags=$(api_qps_flags "$1")
  read -r qps burst <<<"$flags"
  args=$(kubectl -n hpa-reference get deploy hpa-reference \
    -o jsonpath='{range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}')
  grep -q -- '^--kube-api-qps=' <<<"$args" || die "the hpa-reference Deployment has no --kube-api-qps"
  patch=$(sed -e "s/^--kube-api-qps=.*/$qps/" -e "s/^--kube-api-burst=.*/$burst/" <<<"$args" |
    python3 -c 'import json, sys; print(json.dumps([{"op": "replace", "path": "/spec/template/spec/containers/0/args", "value": sys.stdin.read().splitlines()}]))')
  kubectl -n hpa-reference patch deploy hpa-reference --type=json -p "$patch" >/dev/null
  kubectl -n hpa-reference rollout status deploy/hpa-reference --timeout=300s >/dev/null ||
    die "the reference controller did not roll out with $flags"
}

# Sets kube-controller-manager's client rate limit on the kind node $1 to $2 requests/s
# (`--kube-api-qps`, burst twice that) and waits until it runs with it. Each of its clients —
# the HPA controller's scale client and metrics client among them — has its own limiter at this
# rate (client-go's token bucket per REST client).
kcm_api_qps() {
  local flags qps burst
  flags=$(api_qps_flags "$2")
  read -r qps burst <<<"$flags"
  kcm_edit "$1" '--kube-api-qps=[0-9]*$' \
    "s/--kube-api-qps=[0-9]*\$/$qps/; s/--kube-api-burst=[0-9]*\$/$burst/" \
    "$qps" "with $flags"
}
