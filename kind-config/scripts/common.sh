# shellcheck shell=bash disable=SC2034  # (variables are used by the scripts that source this file)
# Sourced by the kind-config scripts: pinned versions, the cache layout, the docker client to use,
# and small logging/timing helpers. Not executable on its own.

KIND_CONFIG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Pinned versions: kind-config/versions.env.
source "$KIND_CONFIG_DIR/versions.env"
CLUSTER_NAME=hpa-conformance

REPO_ROOT=$(cd "$KIND_CONFIG_DIR/.." && pwd)

# --- Cache layout: outside the repo, so a fresh CI clone on the same machine reuses it -----------
CACHE=${HPA_CONFORMANCE_CACHE:-$HOME/.cache/hpa-conformance}
CACHE_BIN=$CACHE/bin          # kind, kubectl (host tools)
CACHE_KIND=$CACHE/kind        # node-<hash>.tar.zst archives, build work dirs, logs
mkdir -p "$CACHE_BIN" "$CACHE_KIND"

# Go: /usr/local/go on these machines; the module and build caches are Go's own (shared with the
# project's other Go builds, e.g. adapters/upstream, which uses the same Kubernetes modules).
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="$PATH:/usr/local/go/bin"
fi
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
export PATH="$CACHE_BIN:$PATH"

export DEBIAN_FRONTEND=noninteractive

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

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

# The cluster a script acts on (`cluster`: KIND_CLUSTER_NAME or hpa-conformance) and its
# kubeconfig as `just kind-up` writes it (KUBECONFIG when set).
use_cluster() {
  cluster=${KIND_CLUSTER_NAME:-$CLUSTER_NAME}
  local kubeconfig=$REPO_ROOT/.cache/kind/kubeconfig
  [ "$cluster" = "$CLUSTER_NAME" ] || kubeconfig=$kubeconfig-$cluster
  export KUBECONFIG=${KUBECONFIG:-$kubeconfig}
}
