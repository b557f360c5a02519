#!/usr/bin/env bash
# `just kind-failover`: leader failover of the deployed reference controller in the middle of a
# case. Runs cases/lifecycle/controller-failover-scales-again.yaml on the x5 no-HPA cluster (after
# `just kind-deploy 5`); once the first scale-up has happened, deletes the pod holding the Lease and
# checks that:
#   - the other replica takes the Lease within its retry period (2 s) plus a second: the deleted
#     leader hands the Lease back as it stops, so nobody waits out the lease (15 s);
#   - the case still passes (the second scale-up on time; no value that is not in the trajectory);
#   - SuccessfulRescale was recorded exactly twice (no double scale by two leaders).
# Prints the takeover time. Reports in target/kind-failover/.
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
use_cluster
here=$(cd "$(dirname "$0")" && pwd)
root=$REPO_ROOT
case_file=cases/lifecycle/controller-failover-scales-again.yaml
lease_seconds=15
retry_seconds=2
now_ms() { date +%s%3N; }

cd "$root"
cargo build -q -p hpa-harness
# Namespaces of an earlier, interrupted run of this case would be mistaken for this run's.
kubectl get ns -o name | grep '/hpa-controller-failover-scales-again-' | xargs -r kubectl delete --wait=true >/dev/null || true
out=target/kind-failover
mkdir -p "$out"
target/debug/hpa-conformance run --target cluster --kubeconfig "$KUBECONFIG" --time-scale 5 --feature-gates HPAScaleToZero=true \
  --kubernetes-version "$(cluster_minor)" --report "$out" "$case_file" >"$out/run.txt" 2>&1 &
run=$!
# SIGTERM makes the run remove its namespaces before it ends.
trap 'kill -TERM $run 2>/dev/null && wait $run 2>/dev/null || true' EXIT

# The case's namespace, once its HPA has scaled 2 → 4 (t = 0).
ns=
for _ in $(seq 240); do
  ns=$(kubectl get hpa -A -o jsonpath='{range .items[?(@.status.desiredReplicas==4)]}{.metadata.namespace}{"\n"}{end}' 2>/dev/null \
    | grep controller-failover | head -1 || true)
  [ -n "$ns" ] && break
  kill -0 $run 2>/dev/null || { cat "$out/run.txt"; log "the run ended before the first scale-up"; exit 1; }
  sleep 0.5
done
[ -n "$ns" ] || { log "no first scale-up within 120 s"; exit 1; }
# Fail over in the quiet middle (case time ≈ 50 s, the second scale-up is due at 150).
sleep 10
holder=$(kubectl -n hpa-reference get lease hpa-reference -o jsonpath='{.spec.holderIdentity}')
pod=${holder%_*}
log "case namespace $ns; leader $holder: deleting pod $pod"
t0=$(now_ms)
kubectl -n hpa-reference delete pod "$pod" --wait=false >/dev/null
new=
while [ $(( $(now_ms) - t0 )) -lt $(( lease_seconds * 1000 * 2 )) ]; do
  new=$(kubectl -n hpa-reference get lease hpa-reference -o jsonpath='{.spec.holderIdentity}')
  if [ -n "$new" ] && [ "$new" != "$holder" ]; then break; fi
  new=
  sleep 0.1
done
took=$(( $(now_ms) - t0 ))
[ -n "$new" ] || { log "no replica took the Lease within $(( lease_seconds * 2 )) s"; exit 1; }
log "Lease taken by $new $took ms after the delete (retry period ${retry_seconds} s, lease duration ${lease_seconds} s)"
if [ "$took" -gt $(( (retry_seconds + 1) * 1000 )) ]; then
  log "FAIL: the takeover took longer than the retry period and a second: the leader did not hand the Lease over"
  exit 1
fi

# The second scale-up, then the events before the run removes the namespace.
for _ in $(seq 240); do
  d=$(kubectl -n "$ns" get hpa web -o jsonpath='{.status.desiredReplicas}' 2>/dev/null || true)
  [ "$d" = 8 ] && break
  sleep 0.5
done
sleep 2
rescales=$(kubectl -n "$ns" get events --field-selector reason=SuccessfulRescale -o jsonpath='{range .items[*]}{.count}{"\n"}{end}' | awk '{s+=$1} END {print s+0}')
log "SuccessfulRescale events in $ns: $rescales"

rc=0
wait $run || rc=$?
trap - EXIT
cat "$out/run.txt"
[ "$rc" -eq 0 ] || { log "FAIL: the case did not pass across the failover (exit $rc)"; exit 1; }
[ "$rescales" -eq 2 ] || { log "FAIL: $rescales SuccessfulRescale events, want 2"; exit 1; }
log "failover: passed (takeover $took ms, case passed, 2 rescales)"
