#!/usr/bin/env bash
# `just bench kind-jobs [JOBS] [CASES…]`: the corpus on a multi-node kind cluster at `--jobs JOBS`
# (default 8) and at `--jobs 1` (printed figures, not a test; docs/performance.md quotes them).
# The cluster: kind-config/cluster-x5.yaml (kube-controller-manager's HPA controller, time ×5) named
# $KIND_CLUSTER_NAME (default hpa-conformance-jobs, so it can run beside the project's own cluster)
# with $KIND_WORKERS worker nodes (default 2: three nodes; cluster.sh says how they are set up) and
# the metrics stub. The lane runs the cluster's own settings (no --reconfigure-controller: a case
# that needs other flags is skipped, so both runs do the same cases and the wall time is not the
# long sync-period groups run one after another). CASES default to the whole corpus (cases/).
# For each run, from the run's start to its end:
#   wall time, the report's passed/failed/skipped, the machine's CPU busy share (/proc/stat) and
#   load average, CPU seconds of the API server, etcd, kube-controller-manager and the stub (from
#   /proc in the control-plane node) and of the harness, the API server's requests/s and its
#   priority-and-fairness queue wait (its /metrics): where the limit is.
# Reports in target/kind-jobs/jobs-<N>/; the table in target/kind-jobs/table.txt. The cluster is
# deleted afterwards (KEEP=1 keeps it). HPA_CONFORMANCE_BIN names a harness binary to use instead
# of building the release one.
set -euo pipefail
source "$(dirname "$0")/common.sh"
jobs=${1:-8}
[[ $jobs =~ ^[0-9]+$ ]] && [ "$jobs" -ge 1 ] || die "JOBS must be a positive number, not '$jobs'"
shift || true
[ $# -gt 0 ] || set -- cases
export KIND_CLUSTER_NAME=${KIND_CLUSTER_NAME:-hpa-conformance-jobs}
export KIND_WORKERS=${KIND_WORKERS:-2}
out=$REPO_ROOT/target/kind-jobs
mkdir -p "$out"
# The harness: $HPA_CONFORMANCE_BIN if set (a build at hand), else the release build.
bin=$("$REPO_ROOT/scripts/harness-bin.sh") || die "no harness"
"$KIND_CONFIG_DIR/scripts/cluster.sh" up cluster-x5.yaml
use_cluster
pick_docker || die "docker is not answering: run \`just engine\` first"
node=${cluster}-control-plane
cleanup() { if [ "${KEEP:-0}" != 1 ]; then "$KIND_CONFIG_DIR/scripts/cluster.sh" down; fi; }
trap cleanup EXIT
"$KIND_CONFIG_DIR/metrics-stub/deploy.sh"
minor=$(cluster_minor)
nodes=$(kubectl get nodes -l 'type!=hpa-conformance-sim' --no-headers | wc -l)

# CPU ticks (1/100 s) per command name of the control-plane node's processes.
node_ticks() {
  "$DOCKER" exec "$node" sh -c 'cat /proc/[0-9]*/stat 2>/dev/null' |
    awk '{ c = $2; gsub(/[()]/, "", c); t[c] += $14 + $15 } END { for (c in t) print c, t[c] }'
}
# The machine's busy and total jiffies.
host_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat; }
# The API server's request count and priority-and-fairness wait (seconds, summed over requests).
api_counters() {
  kubectl get --raw /metrics | awk '
    /^apiserver_request_total\{/ { r += $NF }
    /^apiserver_flowcontrol_request_wait_duration_seconds_sum\{/ { w += $NF }
    /^apiserver_flowcontrol_request_wait_duration_seconds_count\{/ { n += $NF }
    END { printf "%d %.3f %d\n", r, w, n }'
}
ticks_of() { awk -v c="$2" '$1 == c { print $2; f = 1 } END { if (!f) print 0 }' "$1"; }

run() {
  local n=$1; shift
  local dir=$out/jobs-$n
  rm -rf "$dir"
  node_ticks >"$out/before.ticks"
  read -r busy0 total0 < <(host_ticks)
  read -r req0 wait0 waited0 < <(api_counters)
  local loads=$out/load-$n.txt
  : >"$loads"
  ( while sleep 5; do cut -d' ' -f1 /proc/loadavg >>"$loads"; done ) &
  local sampler=$!
  local t0 t1 status=0
  t0=$(date +%s.%N)
  TIMEFORMAT='%U %S'
  { time "$bin" run --target cluster --kubeconfig "$KUBECONFIG" --kubernetes-version "$minor" \
      --time-scale 5 --feature-gates HPAScaleToZero=true --jobs "$n" --report "$dir" "$@" \
      >"$out/run-$n.log" 2>&1; } 2>"$out/time-$n.txt" || status=$?
  t1=$(date +%s.%N)
  kill "$sampler" 2>/dev/null || true
  node_ticks >"$out/after.ticks"
  read -r busy1 total1 < <(host_ticks)
  read -r req1 wait1 waited1 < <(api_counters)
  [ -s "$dir/report.json" ] || { tail -20 "$out/run-$n.log" >&2; die "jobs $n: no report (exit $status)"; }
  local wall counts cpu
  wall=$(echo "$t1 - $t0" | bc)
  counts=$(jq -r '.summary | "\(.passed)/\(.failed)/\(.skipped)"' "$dir/report.json")
  cpu=""
  for c in kube-apiserver etcd kube-controller hpa-metrics-stu; do
    cpu="$cpu $(echo "scale=1; ($(ticks_of "$out/after.ticks" "$c") - $(ticks_of "$out/before.ticks" "$c")) / 100" | bc)"
  done
  read -r user sys <"$out/time-$n.txt"
  printf '%s %s %s %s %s %s %s %s %s\n' "$n" "$wall" "$counts" \
    "$(echo "scale=3; ($busy1 - $busy0) / ($total1 - $total0)" | bc)" \
    "$(sort -n "$loads" | awk '{ a[NR] = $1 } END { if (NR) printf "%.2f-%.2f", a[1], a[NR]; else print "-" }')" \
    "$cpu" "$(echo "$user + $sys" | bc)" \
    "$(echo "scale=1; ($req1 - $req0) / $wall" | bc)" \
    "$(echo "$wait1 $wait0 $waited1 $waited0" | awk '{ n = $3 - $4; printf "%.2f", (n > 0 ? 1000 * ($1 - $2) / n : 0) }')" \
    >>"$out/rows.txt"
  log "jobs $n: $(tail -1 "$out/rows.txt")"
}

: >"$out/rows.txt"
log "kind $minor, $nodes nodes, cases: $*; --jobs $jobs, then --jobs 1"
run "$jobs" "$@"
[ "$jobs" = 1 ] || run 1 "$@"
{
  echo "kind v$minor x5, $nodes nodes ($KIND_WORKERS workers), $(nproc) cores; cases: $*"
  printf '%-5s %9s %-11s %5s %-10s %8s %6s %8s %6s %8s %7s %9s\n' jobs 'wall (s)' 'pass/fail/skip' busy load \
    'apiserver' etcd 'KCM' stub harness 'req/s' 'APF wait'
  while read -r n wall counts busy load a e k s h rps apf; do
    printf '%-5s %9.0f %-14s %5s %-10s %8s %6s %8s %6s %8s %7s %6s ms\n' "$n" "$wall" "$counts" "$busy" "$load" \
      "$a" "$e" "$k" "$s" "$h" "$rps" "$apf"
  done <"$out/rows.txt"
  echo "CPU columns: seconds of CPU during the run; busy: the machine's CPU busy share; APF wait: mean queue wait per request"
} | tee "$out/table.txt"
