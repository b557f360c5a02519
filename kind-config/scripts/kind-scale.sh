#!/usr/bin/env bash
# `just bench kind-scale [HPAS]`: the scale benchmark on kind (printed figures, not a test).
# On one x1 cluster (kind-config/cluster.yaml: KCM's default HPA settings, kube-api-qps 200):
#  1. the load: HPAS HPAs (default 1000), each in its own namespace with a Deployment of 10
#     simulated pods (Running, Ready, on the harness's simulated node) and a Pods metric from the
#     metrics stub at exactly its target (no HPA ever rescales: every reconcile is a steady one);
#  2. kube-controller-manager's HPA controller: once it has reconciled every HPA, 30 s to settle,
#     then a 120 s window: each HPA's reconcile intervals (the stub stamps every metric request),
#     KCM's CPU seconds and peak RSS from /proc in the node;
#  3. KCM's HPA controller switched off (its static pod manifest edited in the node), the reference
#     controller deployed (kind-config/reference, 2 replicas, leader election), the same measurement
#     of its leader, and of KCM without its HPA controller (the baseline of its other controllers);
#  4. a failover under the load (FAILOVER=0 skips it): the reference's Lease holder SIGKILLed in
#     the node; the time until the standby holds the Lease and until every HPA has been reconciled
#     again, and what rescaled (SuccessfulRescale events, Deployments, HPA statuses: 0 expected,
#     the load is steady);
#  5. the table (with the API server's requests/s by verb and resource in each window), also in
#     target/kind-scale/. The cluster is deleted afterwards (KEEP=1 keeps it, and the load process
#     that keeps its simulated node Ready; a re-run resumes the load and repairs it).
# 5,000 HPAs: `just bench kind-scale 5000` (setup ~5× longer; the node's pod count grows to 50,000);
# 10,000: `just bench kind-scale 10000` (~21 min of setup; 100,000 pods).
# Both controllers are measured as they run after a start with every HPA already there (1.37
# queues them all at once, and each next reconcile is booked a sync period after the first: a
# schedule as bunched as the first round was quick): kube-controller-manager is restarted before
# its windows (KCM_API_QPS restarts it anyway). KCM_RESTART=0 measures it as it has run since
# before the load, when each HPA's first reconcile came as the load created it, spread out.
# WINDOWS=N (default 3): N consecutive 120 s windows per controller; CPU is read per window and
# the table compares the medians (one window's CPU varies by up to a third on this machine), while
# lateness and requests/s are taken over all N windows together.
# KCM_API_QPS=N runs kube-controller-manager with `--kube-api-qps=N --kube-api-burst=2N` instead of
# cluster.yaml's 200/400, and the reference with the same flags instead of its manifest's 200/400:
# each client of either is held to that rate (at 5,000 HPAs and more the GETs of the scale
# subresource meet 200/s).
set -euo pipefail
source "$(dirname "$0")/common.sh"
hpas=${1:-1000}
out=$REPO_ROOT/target/kind-scale
mkdir -p "$out"
# The harness: $HPA_CONFORMANCE_BIN if set, else the release build (scripts/harness-bin.sh).
bin=$("$REPO_ROOT/scripts/harness-bin.sh")
"$KIND_CONFIG_DIR/scripts/cluster.sh" up cluster.yaml
use_cluster
pick_docker || die "docker is not answering: run \`just engine\` first"
node=${cluster}-control-plane
# A kept cluster (KEEP=1) that already ran step 3 has KCM's HPA controller off and the reference
# deployed: run again, "KCM's" windows would measure the reference. Refused rather than measured.
if kubectl get namespace hpa-reference >/dev/null 2>&1 || kcm_hpa_is_off; then
  die "cluster $cluster already ran the reference's steps (KCM's HPA controller off, the reference deployed): delete it first (\`just kind-down\`); measure a kept cluster with \`hpa-conformance kind-scale … measure\`"
fi
"$KIND_CONFIG_DIR/metrics-stub/deploy.sh"

load_pid=
cleanup() {
  if [ "${KEEP:-0}" = 1 ]; then
    # A kept cluster is for more measurements (`hpa-conformance kind-scale … measure`): its
    # simulated node must stay Ready, or KCM's node lifecycle controller marks every pod NotReady
    # (a write per pod, which every pod watch receives). The load keeps beating; it ends by itself
    # two minutes after the cluster is deleted.
    [ -z "$load_pid" ] || log "KEEP=1: the load (pid $load_pid) keeps the simulated node Ready; log $out/load.log"
  else
    [ -z "$load_pid" ] || kill "$load_pid" 2>/dev/null || true
    "$KIND_CONFIG_DIR/scripts/cluster.sh" down
  fi
}
trap cleanup EXIT

# Sets the load up (or repairs it: pods made Running and Ready again, the stub's documents put
# again) and leaves it running, keeping the simulated node Ready.
start_load() {
  local started
  started=$(date +%s)
  "$bin" kind-scale --kubeconfig "$KUBECONFIG" --hpas "$hpas" load >"$out/load.log" 2>&1 &
  load_pid=$!
  until grep -q 'ready in' "$out/load.log"; do
    kill -0 "$load_pid" 2>/dev/null || { cat "$out/load.log" >&2; die "the load failed"; }
    sleep 2
  done
  log "$(grep 'ready in' "$out/load.log") (script: $(( $(date +%s) - started )) s)"
}
# The metrics stub's Deployment generation: the reference's deploy.sh re-applies the stub, which
# rolls it when its image changed meanwhile (sources edited during the run), and a new stub pod
# starts with no documents.
stub_generation() {
  kubectl -n hpa-conformance-system get deploy hpa-metrics-stub -o jsonpath='{.metadata.generation}'
}
start_load

windows=${WINDOWS:-3}
case $windows in '' | *[!0-9]* | 0) die "WINDOWS=$windows: a count of windows, 1 or more" ;; esac
measure() {
  "$bin" kind-scale --kubeconfig "$KUBECONFIG" --hpas "$hpas" measure --node "$node" \
    --controller "$1" --comm "$2" --windows "$windows" >"$out/$3.json"
}
kcm_client="--kube-api-qps=200 --kube-api-burst=400 (cluster.yaml)"
reference_client="--kube-api-qps=200 --kube-api-burst=400 (kind-config/reference)"
kcm_start="restarted before its windows, as the reference starts: every HPA there at once"
if [ -n "${KCM_API_QPS:-}" ]; then
  kcm_client="$(api_qps_flags "$KCM_API_QPS") (KCM_API_QPS)"
  reference_client=$kcm_client
  log "kube-controller-manager: $kcm_client"
  kcm_api_qps "$node" "$KCM_API_QPS"
elif [ "${KCM_RESTART:-1}" = 1 ]; then
  log "restarting kube-controller-manager: like the reference, it is to start with every HPA there"
  kcm_restart "$node"
else
  kcm_start="running since before the load (KCM_RESTART=0): each HPA first reconciled as it was created"
fi
log "measuring kube-controller-manager's HPA controller"
measure kube-controller-manager kube-controller kcm

log "switching kube-controller-manager's HPA controller off"
kcm_hpa_off "$node"

log "deploying the reference controller"
stub_before=$(stub_generation)
"$KIND_CONFIG_DIR/reference/deploy.sh" 1
if [ "$(stub_generation)" != "$stub_before" ]; then
  log "the metrics stub was rolled by the deploy (its image changed during the run): the load again, to put its documents back"
  kill "$load_pid" 2>/dev/null || true
  wait "$load_pid" 2>/dev/null || true
  start_load
fi
if [ -n "${KCM_API_QPS:-}" ]; then
  log "the reference controller: $reference_client"
  reference_api_qps "$KCM_API_QPS"
fi
log "measuring the reference controller"
measure hpa-reference hpa-reference reference

failover=()
if [ "${FAILOVER:-1}" = 1 ]; then
  holder=$(kubectl -n hpa-reference get lease hpa-reference -o jsonpath='{.spec.holderIdentity}')
  pid=$(reference_leader_pid "$node")
  [ -n "$pid" ] || die "no hpa-reference process holding the Lease ($holder)"
  log "failover: SIGKILL of the Lease holder $holder (pid $pid in the node)"
  killed=$(date +%s%3N)
  "$DOCKER" exec "$node" kill -KILL "$pid"
  "$bin" kind-scale --kubeconfig "$KUBECONFIG" --hpas "$hpas" failover --killed-ms "$killed" \
    --old-holder "$holder" >"$out/failover.json"
  failover=(--failover "$out/failover.json")
fi

{
  echo "$hpas HPAs; $windows window(s) of 120 s per controller; kube-controller-manager's client: $kcm_client; the reference's: $reference_client"
  echo "kube-controller-manager $kcm_start"
  "$bin" kind-scale table "$out/kcm.json" "$out/reference.json" "${failover[@]}"
} | tee "$out/table.txt"
