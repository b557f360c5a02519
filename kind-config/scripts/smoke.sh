#!/usr/bin/env bash
# `just kind-check`: checks the running kind cluster end to end.
#   - the node and every kube-system pod are Ready;
#   - a Deployment of the preloaded workload image hpa-conformance/app:1 (imagePullPolicy Never,
#     busybox httpd) becomes Available; cluster DNS answers; its Service answers via kube-proxy;
#   - an autoscaling/v2 HPA on CPU: when kube-controller-manager runs the HPA controller, KCM sets
#     its conditions (AbleToScale, and ScalingActive=False/FailedGetResourceMetric when there is no
#     metrics API); when
#     the controller is disabled (cluster-no-hpa.yaml), the HPA gets no conditions and no events;
#   - prints KCM's HPA flags from the running pod's command line.
# Leaves nothing behind (namespace hpa-smoke is deleted).
set -euo pipefail
source "$(dirname "$0")/common.sh"

NAME=${KIND_CLUSTER_NAME:-$CLUSTER_NAME}
export KUBECONFIG=$REPO_ROOT/.cache/kind/kubeconfig
[ "$NAME" = "$CLUSTER_NAME" ] || KUBECONFIG=$REPO_ROOT/.cache/kind/kubeconfig-$NAME
[ -s "$KUBECONFIG" ] || die "no kubeconfig at $KUBECONFIG: run \`just kind-up\` first"
NS=hpa-smoke
T0=$(date +%s)

kubectl wait --for=condition=Ready node -l "type!=hpa-conformance-sim" --timeout=60s >/dev/null
kubectl -n kube-system wait --for=condition=Ready pod --all --timeout=60s >/dev/null
log "node Ready ($(kubectl get nodes --no-headers | awk '{print $1, $5}')); $(kubectl -n kube-system get pods --no-headers | wc -l) kube-system pods Ready"

kcm_cmd=$(kcm_field '.spec.containers[0].command' | jq -r '.[]')
hpa_flags=$(grep -E -- '--(horizontal-pod-autoscaler|controllers=)' <<<"$kcm_cmd" | tr '\n' ' ' || true)
log "KCM flags: ${hpa_flags:-(HPA defaults)}"
if kcm_hpa_is_off "$kcm_cmd"; then hpa_on=false; else hpa_on=true; fi
sync=$(grep -oE -- '--horizontal-pod-autoscaler-sync-period=[^ ]+' <<<"$kcm_cmd" | cut -d= -f2 || true)

kubectl delete namespace "$NS" --ignore-not-found --wait=true >/dev/null
kubectl create namespace "$NS" >/dev/null
DNS_LOG=$(mktemp)
trap 'kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true; rm -f "$DNS_LOG"' EXIT
kubectl -n "$NS" apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 1
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: app
          image: hpa-conformance/app:1
          imagePullPolicy: Never
          command: [httpd, -f, -p, "8080", -h, /etc]
          resources:
            requests: {cpu: 10m}
---
apiVersion: v1
kind: Service
metadata:
  name: app
spec:
  selector: {app: app}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: app
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: app}
  minReplicas: 1
  maxReplicas: 3
  metrics:
    - type: Resource
      resource:
        name: cpu
        target: {type: Utilization, averageUtilization: 50}
YAML
kubectl -n "$NS" rollout status deployment/app --timeout=90s >/dev/null
log "Deployment app (hpa-conformance/app:1) available: pod $(kubectl -n "$NS" get pods -o jsonpath='{.items[0].status.podIP}')"
# Cluster DNS through CoreDNS's Service (busybox's nslookup; its wget cannot resolve names, static NSS).
kubectl -n "$NS" exec deploy/app -- nslookup kubernetes.default.svc.cluster.local >"$DNS_LOG" 2>&1 \
  || { cat "$DNS_LOG" >&2; die "cluster DNS did not answer"; }
log "cluster DNS: kubernetes.default -> $(awk '/^Address/ {a=$2} END {print a}' "$DNS_LOG")"
# A Service through kube-proxy (ClusterIP -> the pod's busybox httpd, hairpin back to the same pod).
# Connect only once kube-proxy's DNAT rule for it is in the node: without it, traffic to the
# ClusterIP would leave the node by the default route.
svc_ip=$(kubectl -n "$NS" get service app -o jsonpath='{.spec.clusterIP}')
pod=$(kubectl -n "$NS" get pods -l app=app -o jsonpath='{.items[0].metadata.name}')
pick_docker || die "docker is not answering"
rule=""
for _ in $(seq 1 40); do
  if "$DOCKER" exec "$NAME-control-plane" sh -c 'iptables-save -t nat; iptables-legacy-save -t nat' 2>/dev/null \
    | grep -q -- "-d $svc_ip/32 .*$NS/app cluster IP"; then rule=1; break; fi
  sleep 1
done
[ -n "$rule" ] || die "kube-proxy wrote no rule for Service $NS/app ($svc_ip) within 40 s: see kubectl -n kube-system logs -l k8s-app=kube-proxy"
# busybox nc (its wget crashes resolving names with static glibc); the body is the pod's hostname.
answer=$(kubectl -n "$NS" exec "$pod" -- sh -c "printf 'GET /hostname HTTP/1.0\r\n\r\n' | nc -w 5 $svc_ip 80" 2>&1 || true)
grep -q '200 OK' <<<"$answer" && grep -qx "$pod" <<<"$(tr -d '\r' <<<"$answer")" \
  || die "Service $NS/app ($svc_ip:80) did not answer from pod $pod: $(head -3 <<<"$answer" | tr '\r\n' '  ')"
log "Service app ($svc_ip:80 -> pod :8080) answers through kube-proxy"

conditions() { kubectl -n "$NS" get hpa app -o json | jq -r '[.status.conditions[]? | "\(.type)=\(.status)/\(.reason)"] | join(" ")'; }
events() { kubectl -n "$NS" get events --field-selector involvedObject.kind=HorizontalPodAutoscaler -o json | jq -r '[.items[] | "\(.type)/\(.reason)"] | unique | join(" ")'; }
if $hpa_on; then
  # KCM's reconcile shows as AbleToScale (set whatever the metrics); with no metrics API,
  # ScalingActive is False/FailedGetResourceMetric (with the metrics stub deployed it may differ).
  for _ in $(seq 1 45); do
    grep -q 'ScalingActive=' <<<"$(conditions)" && break
    sleep 2
  done
  c=$(conditions)
  grep -q 'AbleToScale=True/SucceededGetScale' <<<"$c" && grep -q 'ScalingActive=' <<<"$c" \
    || die "HPA controller on, but KCM set no AbleToScale/ScalingActive conditions (conditions: ${c:-none})"
  log "HPA controller ON: conditions $c; events $(events)"
else
  # Twice KCM's sync period (default 15s) with no conditions and no events.
  wait_s=30
  [ -n "$sync" ] && wait_s=$((2 * ${sync%s}))
  [ "$wait_s" -lt 10 ] && wait_s=10
  sleep "$wait_s"
  c=$(conditions) e=$(events)
  [ -z "$c" ] && [ -z "$e" ] || die "HPA controller off, but the HPA got conditions '$c' / events '$e'"
  log "HPA controller OFF: after ${wait_s}s the HPA has no conditions and no events"
fi
log "smoke check passed in $(since "$T0") s"
