#!/usr/bin/env bash
# `just kind-in-cluster [CASE...]`: hpa-conformance inside the kind cluster it judges. On a x5 no-HPA
# cluster with the reference deployed (`just kind-up cluster-x5-no-hpa.yaml && just kind-deploy 5`):
# builds the harness image (corpus baked in) and loads it, applies kind-config/in-cluster/kind with
# the Job's cases set (default: kind-config/in-cluster/cases.txt, one of each scale target kind),
# waits for the Job, copies the report folder off the node into target/kind-in-cluster/ and
# checks it (the done file names it; junit.xml and report.json agree; something passed, nothing
# failed), then proves the service account's least privilege from the API server's audit log
# (`hpa-conformance rbac-audit` against kind-config/in-cluster/base/rbac.yaml: every request allowed
# and covered, every rule used; base/rbac-conditional.yaml's rules may go unused).
# Then the kill test: the Job started again and its pod killed mid-run (namespaces and the
# simulated node left behind), `hpa-conformance cluster-clean` removes them all, and nothing the
# lane labels is left.
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
use_cluster
here=$(cd "$(dirname "$0")" && pwd)
root=$REPO_ROOT
cd "$root"
out=target/kind-in-cluster
ns=hpa-conformance-runner
node="$cluster-control-plane"
report_on_node=/var/lib/hpa-conformance/report
managed=app.kubernetes.io/managed-by=hpa-conformance-lane

cases=("$@")
[ ${#cases[@]} -gt 0 ] || mapfile -t cases < <(grep -v '^#' "$here/cases.txt" | grep .)

built=$(kind-config/scripts/image.sh harness | tail -1)
log "image: $built"
hash=${built%% *}; hash=${hash##*:}
kind load docker-image --name "$cluster" "hpa-conformance/harness:$hash" "hpa-conformance/harness:dev" >/dev/null
# The image's corpus labels, as every report of it must repeat them.
label() { docker image inspect -f "{{index .Config.Labels \"hpa-conformance.corpus.$1\"}}" hpa-conformance/harness:dev; }
commit=$(label commit)

# The Job as kind/ renders it, with these cases (an overlay of kind/ whose patch sets the args).
manifest() {
  # Under .cache (a real folder of the checkout), not target/: in CI target is a link into the
  # project cache, and kustomize resolves the relative base from the link's far side.
  local overlay=.cache/kind-in-cluster-overlay args
  mkdir -p "$overlay"
  args=$(kubectl kustomize "$here/kind" | yq_args)
  args=$(jq -c --args '[.[] | select(. != "cases")] + $ARGS.positional' "${cases[@]}" <<<"$args")
  cat >"$overlay/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../kind-config/in-cluster/kind
patches:
  - target: {kind: Job, name: hpa-conformance}
    patch: '[{"op": "replace", "path": "/spec/template/spec/containers/0/args", "value": $args}]'
YAML
  kubectl kustomize "$overlay"
}
# The Job's args in kind/ (a JSON list), read with kubectl's own JSON output of the rendered Job.
yq_args() {
  kubectl create --dry-run=client -f - -o json 2>/dev/null |
    jq -c 'if .kind == "List" then .items[] else . end | select(.kind == "Job") | .spec.template.spec.containers[0].args'
}
fresh_report_dir() {
  docker exec "$node" sh -c "rm -rf $report_on_node && mkdir -p $report_on_node && chown 65532:65532 $report_on_node"
}
start_job() {
  kubectl -n "$ns" delete job hpa-conformance --ignore-not-found --wait=true >/dev/null 2>&1 || true
  fresh_report_dir
  manifest | kubectl apply -f - >/dev/null
}

# 1. The cases from inside the cluster (the audit log read from here on).
since=$(date -u +%Y-%m-%dT%H:%M:%S)
start_job
log "Job started: ${#cases[@]} cases"
t0=$SECONDS
while :; do
  s=$(kubectl -n "$ns" get job hpa-conformance -o jsonpath='{.status.succeeded}/{.status.failed}')
  [ "$s" = "/" ] || break
  [ $((SECONDS - t0)) -lt 1200 ] || { kubectl -n "$ns" logs job/hpa-conformance --tail=50 >&2 || true; die "the Job did not end within 20 min"; }
  sleep 5
done
log "Job ended after $((SECONDS - t0)) s (succeeded/failed: $s)"
rm -rf "$out"; mkdir -p "$out"
kubectl -n "$ns" logs job/hpa-conformance >"$out/job.log" 2>&1 || true
docker cp "$node:$report_on_node/." "$out/report" >/dev/null
[ "$(cat "$out/report/done")" = /report ] || die "the done file says '$(cat "$out/report/done" 2>/dev/null)', not /report"
python3 - "$out/report" "$commit" <<'PY'
import json, sys, xml.etree.ElementTree as ET
d, commit = sys.argv[1], sys.argv[2]
r = json.load(open(f"{d}/report.json"))
s = r["summary"]
suite = ET.parse(f"{d}/junit.xml").getroot().find("testsuite")
props = {p.get("name"): p.get("value") for p in suite.iter("property")}
assert r["corpus"]["commit"] == commit == props["corpus.commit"], (r["corpus"], commit, props)
assert "corpus" in open(f"{d}/index.html").read()
cases = suite.findall("testcase")
failed = [c.get("name") for c in cases if c.find("failure") is not None or c.find("error") is not None]
print(f"in-cluster report: {s['passed']} passed, {s['failed']} failed, {s['skipped']} skipped; corpus {r['corpus']}; target {r['target'][:120]}")
assert s["passed"] > 0, "nothing passed"
assert s["failed"] == 0 and not failed, f"failed: {failed}"
PY

# 2. Least privilege, from the audit log.
docker exec "$node" sh -c 'cat /var/log/kubernetes/audit/audit*.log' |
  jq -c --arg t "$since" 'select(.requestReceivedTimestamp >= $t)' >"$out/audit.log"
cargo run -q -p hpa-harness -- rbac-audit --audit-log "$out/audit.log" --rbac "$here/base/rbac.yaml" \
  --rbac-conditional "$here/base/rbac-conditional.yaml" \
  --user system:serviceaccount:$ns:hpa-conformance | tee "$out/rbac.txt"

# 3. The kill test: the Job's pod killed mid-run, then cluster-clean.
start_job
for _ in $(seq 120); do
  [ -n "$(kubectl get namespaces -l "$managed" -o name)" ] && break
  sleep 1
done
[ -n "$(kubectl get namespaces -l "$managed" -o name)" ] || die "kill test: the Job created no namespace within 120 s"
sleep 5
# SIGKILL, not a pod deletion (which sends SIGTERM first, and the harness cleans up on that).
# The harness's process, found by its command line among the node's processes (no crictl there).
pid=$(docker exec "$node" sh -c 'for f in /proc/[0-9]*/cmdline; do
  case "$(tr "\0" " " <"$f" 2>/dev/null)" in "/hpa-conformance run "*) p=${f#/proc/}; echo "${p%/cmdline}" ;; esac
done' | head -1)
[ -n "$pid" ] || die "kill test: the harness's process is not running on $node"
docker exec "$node" kill -KILL "$pid"
kubectl -n "$ns" wait --for=condition=Failed job/hpa-conformance --timeout=60s >/dev/null
kubectl -n "$ns" delete job hpa-conformance --wait=true >/dev/null
left=$( (kubectl get namespaces,nodes -l "$managed" -o name; kubectl -n kube-node-lease get leases -l "$managed" -o name) | sort)
log "kill test: the harness killed (SIGKILL) mid-run; left behind: $(echo $left)"
grep -q "^node/hpa-conformance-sim$" <<<"$left" || die "kill test: the simulated node was not left behind (the kill came too late?)"
cargo run -q -p hpa-harness -- cluster-clean --kubeconfig "$KUBECONFIG" | tee "$out/clean.txt"
still=$(kubectl get namespaces,nodes -l "$managed" -o name; kubectl -n kube-node-lease get leases -l "$managed" -o name)
[ -z "$still" ] || die "after cluster-clean: $still"
log "kill test: nothing of the lane's left after cluster-clean"

# 4. Safety, from outside (the host's harness): a cluster not made for the lane is refused before
# anything is touched — another service serving metrics.k8s.io, a node without the label — and
# --disposable-cluster takes the metrics APIs over for the stub and runs.
version=$(kind-config/scripts/cluster-version.sh)
lane=(cargo run -q -p hpa-harness -- run --target cluster --kubeconfig "$KUBECONFIG" --time-scale 5
  --kubernetes-version "$version" --feature-gates HPAScaleToZero=true cases/algorithm/min-max-clamping.yaml)
restore() {
  kubectl apply -f kind-config/metrics-stub/apiservices.yaml >/dev/null 2>&1 || true
  kubectl label node "$node" hpa-conformance.dev/disposable=true --overwrite >/dev/null 2>&1 || true
}
trap restore EXIT
refused() { # FILE TEXT: the lane exited 2, said TEXT, and created nothing
  local rc=0 before
  # (A run's namespaces can still be terminating: their pods wait for the pod GC once the
  # simulated node is gone.)
  before=$(kubectl get namespaces,nodes -l "$managed" -o name)
  "${lane[@]}" >"$1" 2>&1 || rc=$?
  [ "$rc" = 2 ] && grep -qF "$2" "$1" || { cat "$1" >&2; die "safety: expected exit 2 and \"$2\" (exit $rc)"; }
  [ "$(kubectl get namespaces,nodes -l "$managed" -o name)" = "$before" ] || die "safety: a refused run created objects"
}
kubectl patch apiservice v1beta1.metrics.k8s.io --type merge \
  -p '{"spec":{"service":{"namespace":"kube-system","name":"metrics-server"}}}' >/dev/null
refused "$out/refused-metrics.txt" \
  "refusing to touch this cluster: it serves the metrics APIs from another service (v1beta1.metrics.k8s.io from kube-system/metrics-server)"
log "safety: a foreign metrics.k8s.io refused: $(grep -o 'refusing.*' "$out/refused-metrics.txt" | cut -c1-160)…"
"${lane[@]}" --disposable-cluster >"$out/disposable.txt" 2>&1 || { cat "$out/disposable.txt" >&2; die "safety: the --disposable-cluster run failed"; }
[ "$(kubectl get apiservice v1beta1.metrics.k8s.io -o jsonpath='{.spec.service.name}')" = hpa-metrics-stub ] ||
  die "safety: --disposable-cluster did not register the stub for metrics.k8s.io"
log "safety: --disposable-cluster took metrics.k8s.io over and the case ran: $(grep -o '^conformance:.*' "$out/disposable.txt")"
kubectl label node "$node" hpa-conformance.dev/disposable- >/dev/null
refused "$out/refused-nodes.txt" "its nodes are not the lane's ($node without the label hpa-conformance.dev/disposable=true)"
log "safety: a node without the label refused"
