#!/usr/bin/env bash
# Host tools of the kind path, into $CACHE/bin (default ~/.cache/hpa-conformance/bin):
#   kind     sigs.k8s.io/kind at $KIND_VERSION, from the Go module proxy
#   kubectl  $KUBE_VERSION, built from the wrapper module kind-config/k8s (version-stamped)
# Each is rebuilt only when missing or of another version.
set -euo pipefail
source "$(dirname "$0")/common.sh"

t=$(date +%s)
if [ "$("$CACHE_BIN/kind" version 2>/dev/null | awk '{print $2}')" != "$KIND_VERSION" ]; then
  log "building kind $KIND_VERSION into $CACHE_BIN"
  (cd / && GOBIN=$CACHE_BIN CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kind@$KIND_VERSION")
  log "kind built in $(since "$t") s"
fi

t=$(date +%s)
if [ "$("$CACHE_BIN/kubectl" version --client -o json 2>/dev/null | jq -r .clientVersion.gitVersion)" != "$KUBE_VERSION" ]; then
  log "building kubectl $KUBE_VERSION into $CACHE_BIN"
  (cd "$KIND_CONFIG_DIR/k8s" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "$(k8s_ldflags)" \
    -o "$CACHE_BIN/kubectl" k8s.io/kubernetes/cmd/kubectl)
  log "kubectl built in $(since "$t") s"
fi
