#!/usr/bin/env bash
# `just kind-up [CONFIG] [VERSION]` / `just kind-down`: the single-node kind cluster of hpa-conformance.
#   up CONFIG [VERSION]
#              CONFIG is a file in kind-config/ (default cluster.yaml) or a path; VERSION a
#              Kubernetes minor of kind-config/versions/ (1.37, 1.34, …; default $KIND_K8S_VERSION,
#              else versions/default). Ensures the node image of that minor ($KIND_NODE_IMAGE if
#              set, else `just kind-image VERSION`) and the host tools, then
#              creates the cluster unless it already runs with the same config (content) and image,
#              in which case it is left as is; with another config or image it is recreated. Waits
#              until the node and every kube-system pod are Ready, and writes the kubeconfig to
#              .cache/kind/kubeconfig in the repo (git-ignored).
#   down       deletes the cluster (and its anonymous /var volume) and that kubeconfig.
# The cluster name is hpa-conformance; KIND_CLUSTER_NAME overrides it (kubeconfig then
# .cache/kind/kubeconfig-<name>), e.g. to run a second cluster beside a shared one.
# KIND_WORKERS=N adds N worker nodes to CONFIG's control plane (the multi-node measurement of
# docs/performance.md). The node image's static bridge CNI gives every node the same pod subnet,
# so pods can reach pods on their own node only: the workers are tainted
# hpa-conformance.dev/no-pods:NoSchedule (only DaemonSets' host-network pods run there) and the
# control plane's taint is removed, so the stub, CoreDNS and the reference stay on the node the API
# server reaches. The lane's pods land on its simulated node in any case.
set -euo pipefail
source "$(dirname "$0")/common.sh"

cmd=${1:?usage: cluster.sh up [CONFIG] [VERSION] | down}
NAME=${KIND_CLUSTER_NAME:-$CLUSTER_NAME}
WORKERS=${KIND_WORKERS:-0}
[[ $WORKERS =~ ^[0-9]+$ ]] || die "KIND_WORKERS must be a number of worker nodes, not '$WORKERS'"
KUBECONFIG_OUT=$REPO_ROOT/.cache/kind/kubeconfig
[ "$NAME" = "$CLUSTER_NAME" ] || KUBECONFIG_OUT=$REPO_ROOT/.cache/kind/kubeconfig-$NAME
# What the running cluster was created from (machine-wide: every clone sees the same docker).
STATE=$CACHE_KIND/cluster-$NAME.state
mkdir -p "$(dirname "$KUBECONFIG_OUT")"

pick_docker || die "docker is not answering: run \`just engine\` first"

cluster_exists() { kind get clusters 2>/dev/null | grep -qx "$NAME"; }
node_running() { [ "$("$DOCKER" inspect -f '{{.State.Running}}' "$NAME-control-plane" 2>/dev/null)" = true ]; }
# CONFIG with KIND_WORKERS worker nodes put into its nodes list (before kubeadmConfigPatches, the
# top-level key that follows it in every config here), each labelled disposable and tainted.
with_workers() {
  awk -v n="$WORKERS" '
    /^kubeadmConfigPatches:/ && !done {
      for (i = 0; i < n; i++) {
        print "  - role: worker"
        print "    labels:"
        print "      hpa-conformance.dev/disposable: \"true\""
        print "    kubeadmConfigPatches:"
        print "      - |"
        print "        kind: JoinConfiguration"
        print "        nodeRegistration:"
        print "          taints:"
        print "            - key: hpa-conformance.dev/no-pods"
        print "              effect: NoSchedule"
      }
      done = 1
    }
    { print }
    END { if (n > 0 && !done) exit 3 }'
}

case "$cmd" in
  up)
    config=${2:-cluster.yaml}
    [ -f "$config" ] || config=$KIND_CONFIG_DIR/$config
    [ -f "$config" ] || die "no kind config ${2:-cluster.yaml} (in kind-config/ or as a path)"
    [ -z "${3:-}" ] || use_k8s_version "$3"
    T0=$(date +%s)
    # The image first: its build of the default minor also gives the host kubectl (tools.sh).
    if [ -n "${KIND_NODE_IMAGE:-}" ]; then
      image=$KIND_NODE_IMAGE
      log "node image from KIND_NODE_IMAGE: $image (not built here)"
    else
      image=$("$KIND_CONFIG_DIR/scripts/node-image.sh" "$K8S_MINOR" | tail -1)
    fi
    "$KIND_CONFIG_DIR/scripts/tools.sh" "$K8S_MINOR"
    want="image=$image config=$(basename "$config") sha256=$(sha256sum <"$config" | cut -c1-16)"
    [ "$WORKERS" = 0 ] || want="$want workers=$WORKERS"
    if cluster_exists && node_running && [ "$(cat "$STATE" 2>/dev/null)" = "$want" ]; then
      log "cluster $NAME already runs $want: kept"
    else
      if cluster_exists; then
        log "cluster $NAME runs $(cat "$STATE" 2>/dev/null || echo 'an unknown config'); recreating with $(basename "$config")"
        kind delete cluster --name "$NAME"
      fi
      rm -f "$STATE"
      t=$(date +%s)
      # Host paths in a config are written relative to kind-config/ as @KIND_CONFIG_DIR@.
      rendered=$(mktemp --suffix=.yaml)
      sed "s#@KIND_CONFIG_DIR@#$KIND_CONFIG_DIR#g" "$config" | with_workers >"$rendered" ||
        die "$(basename "$config") has no top-level kubeadmConfigPatches to put the workers before"
      kind create cluster --name "$NAME" --image "$image" --config "$rendered" --kubeconfig "$KUBECONFIG_OUT" --wait 2m
      rm -f "$rendered"
      echo "$want" >"$STATE"
      log "kind create: $(since "$t") s"
    fi
    kind get kubeconfig --name "$NAME" >"$KUBECONFIG_OUT"
    export KUBECONFIG=$KUBECONFIG_OUT
    t=$(date +%s)
    kubectl wait --for=condition=Ready node -l "type!=hpa-conformance-sim" --timeout=180s >/dev/null  # kind's node(s); not the harness's simulated one
    if [ "$WORKERS" != 0 ]; then
      # With workers kind keeps the control plane's taint: removed, so that what needs its pod IP
      # reached (the stub) or reaches others by pod IP (CoreDNS) runs there (see above).
      kubectl taint node "$NAME-control-plane" node-role.kubernetes.io/control-plane:NoSchedule- >/dev/null 2>&1 || true
      kubectl -n kube-system get pods -o wide --no-headers | awk -v cp="$NAME-control-plane" '$7 != cp && $7 != "<none>" && $1 !~ /^kube-proxy-/ {print $1}' |
        xargs -r kubectl -n kube-system delete pod >/dev/null
    fi
    # kube-system pods appear over the first seconds (kube-proxy, coredns): wait for the set to settle.
    for _ in $(seq 1 90); do
      n=$(kubectl -n kube-system get pods --no-headers 2>/dev/null | wc -l)
      [ "$n" -ge 7 ] && break
      sleep 2
    done
    kubectl -n kube-system wait --for=condition=Ready pod --all --timeout=180s >/dev/null
    log "cluster $NAME ready ($(kubectl get nodes --no-headers | awk '{print $1, $2, $5}'); $(kubectl -n kube-system get pods --no-headers | wc -l) kube-system pods Ready; waited $(since "$t") s, total $(since "$T0") s)"
    log "kubeconfig: $KUBECONFIG_OUT   (export KUBECONFIG=$KUBECONFIG_OUT)"
    ;;
  down)
    if cluster_exists; then kind delete cluster --name "$NAME"; else log "no cluster $NAME"; fi
    rm -f "$STATE" "$KUBECONFIG_OUT"
    ;;
  *) die "usage: cluster.sh up [CONFIG] [VERSION] | down" ;;
esac
