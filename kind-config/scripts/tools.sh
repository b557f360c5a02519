#!/usr/bin/env bash
# Host tools of the kind path, into $CACHE/bin (default ~/.cache/hpa-conformance/bin):
#   kind     sigs.k8s.io/kind at the selected minor's KIND_VERSION (argument VERSION, else
#            $KIND_K8S_VERSION, else versions/default), from the Go module proxy: kept as
#            bin/kind-<version>, bin/kind links to the one in use (the CLI goes with the node
#            image's kind base files).
#   kubectl  the DEFAULT minor's KUBE_VERSION whatever minor is selected, built from its wrapper
#            module versions/<default>/k8s (version-stamped); node-image.sh installs it from its
#            build of the default minor, so this builds only when that did not happen here.
#            kubectl supports one minor of skew with the API server: the default's kubectl fits
#            the default and the minor before it; older clusters (1.34 with 1.37's kubectl) are
#            outside it, but the verbs the kind scripts use (get, wait, apply, create, delete, exec,
#            logs, port-forward) work there. `docker exec <node> kubectl` has the cluster's own.
# Each is rebuilt only when missing or of another version. `tools.sh --kind-only [VERSION]` builds
# kind alone (CI's Go prebuild, before the node image that gives kubectl: scripts/go-prebuild.sh).
set -euo pipefail
source "$(dirname "$0")/common.sh"
kind_only=false
if [ "${1:-}" = --kind-only ]; then kind_only=true; shift; fi
[ -z "${1:-}" ] || use_k8s_version "$1"

t=$(date +%s)
kind_bin=$CACHE_BIN/kind-$KIND_VERSION
# (bin/kind was the file itself before there were several minors: keep it when it is this version.)
if [ -f "$CACHE_BIN/kind" ] && [ ! -L "$CACHE_BIN/kind" ] && [ ! -e "$kind_bin" ] &&
  [ "$("$CACHE_BIN/kind" version 2>/dev/null | awk '{print $2}')" = "$KIND_VERSION" ]; then
  mv "$CACHE_BIN/kind" "$kind_bin"
fi
if [ "$("$kind_bin" version 2>/dev/null | awk '{print $2}')" != "$KIND_VERSION" ]; then
  log "building kind $KIND_VERSION into $CACHE_BIN"
  tmp=$(mktemp -d "$CACHE_BIN/.kind-build.XXXXXX")
  (cd / && GOBIN=$tmp CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kind@$KIND_VERSION")
  mv "$tmp/kind" "$kind_bin"
  rm -rf "$tmp"
  log "kind built in $(since "$t") s"
fi
[ "$(readlink "$CACHE_BIN/kind" 2>/dev/null)" = "kind-$KIND_VERSION" ] || ln -sfn "kind-$KIND_VERSION" "$CACHE_BIN/kind"
! $kind_only || exit 0

t=$(date +%s)
use_k8s_version "$KIND_K8S_DEFAULT"
if [ "$("$CACHE_BIN/kubectl" version --client -o json 2>/dev/null | jq -r .clientVersion.gitVersion)" != "$KUBE_VERSION" ]; then
  log "building kubectl $KUBE_VERSION (the default minor's) into $CACHE_BIN"
  (cd "$K8S_DIR/k8s" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "$(k8s_ldflags)" \
    -o "$CACHE_BIN/kubectl.tmp" k8s.io/kubernetes/cmd/kubectl)
  mv "$CACHE_BIN/kubectl.tmp" "$CACHE_BIN/kubectl"
  log "kubectl built in $(since "$t") s"
fi
