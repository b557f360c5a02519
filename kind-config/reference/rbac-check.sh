#!/usr/bin/env bash
# `just kind-rbac`: least privilege of the deployed reference controller, from the API server's
# audit log (kind-config/audit/policy.yaml records every request of its service account). Run after
# the smoke corpus on the deployed controller (`just kind-smoke`), which exercises the HPA, pod,
# metrics, event and lease rules; this script first exercises the scale rules of the kinds the
# corpus does not create (StatefulSet, ReplicaSet, ReplicationController: below minReplicas, so
# the controller reads and writes their scale), then checks with `hpa-conformance rbac-audit`:
# every request allowed and covered by kind-config/reference/base/rbac.yaml, every rule used.
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
use_cluster
here=$(cd "$(dirname "$0")" && pwd)
root=$REPO_ROOT
ns=hpa-rbac-check
cd "$root"

kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
trap 'kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true' EXIT
# Workloads whose pods never run (no node matches), each with an HPA whose minReplicas is above
# their replicas: the controller scales them to 2 without needing a metric.
for kind in StatefulSet ReplicaSet ReplicationController; do
  lower=$(tr '[:upper:]' '[:lower:]' <<<"$kind")
  api=apps/v1; [ "$kind" = ReplicationController ] && api=v1
  selector="matchLabels: {app: $lower}"; [ "$kind" = ReplicationController ] && selector="app: $lower"
  kubectl -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: $api
kind: $kind
metadata: {name: $lower}
spec:
  replicas: 1
  $( [ "$kind" = StatefulSet ] && echo "serviceName: $lower" )
  selector: {$selector}
  template:
    metadata: {labels: {app: $lower}}
    spec:
      nodeSelector: {hpa-conformance.dev/nowhere: "true"}
      containers: [{name: app, image: hpa-conformance/app:1, resources: {requests: {cpu: 100m}}}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: $lower}
spec:
  scaleTargetRef: {apiVersion: $api, kind: $kind, name: $lower}
  minReplicas: 2
  maxReplicas: 3
  metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
YAML
done
for kind in statefulset replicaset replicationcontroller; do
  for _ in $(seq 120); do
    [ "$(kubectl -n "$ns" get "$kind" "$kind" -o jsonpath='{.spec.replicas}')" = 2 ] && break
    sleep 0.5
  done
  r=$(kubectl -n "$ns" get "$kind" "$kind" -o jsonpath='{.spec.replicas}')
  [ "$r" = 2 ] || { log "the controller did not scale $kind to minReplicas 2 (replicas $r)"; exit 1; }
done
log "StatefulSet, ReplicaSet and ReplicationController scaled to minReplicas by hpa-reference"

mkdir -p target/kind-rbac
docker exec "$cluster-control-plane" sh -c 'cat /var/log/kubernetes/audit/audit*.log' >target/kind-rbac/audit.log
log "audit log: $(wc -l <target/kind-rbac/audit.log) lines"
cargo run -q -p hpa-harness -- rbac-audit --audit-log target/kind-rbac/audit.log \
  --rbac kind-config/reference/base/rbac.yaml | tee target/kind-rbac/report.txt
