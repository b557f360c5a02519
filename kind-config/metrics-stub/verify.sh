#!/usr/bin/env bash
# `just kind-stub-verify`: checks the deployed metrics stub end to end on the kind cluster, through
# the API server only (aggregator and service proxy), with kube-controller-manager's own HPA
# controller as the client:
#   1. the four APIServices are Available; discovery of the three groups through the aggregator;
#   2. a control document put through the service proxy reads back, and each metrics API answers
#      it through the aggregator (labelSelector filtering included);
#   3. a Deployment (2 running pods) with an HPA on four metrics (CPU utilization, a Pods metric,
#      an Object metric on the Deployment, an External metric): KCM's HPA status shows exactly the
#      values put in the document;
#   4. an error put for the resource metrics API appears verbatim in the HPA's event text, and so
#      does client-go's text for the unregistered mode's 404;
#   5. the stub counted the controller's requests;
#   6. who is refused: through the service proxy (no client certificate) the control API without
#      the token and with a wrong one, and the metrics APIs, answer 401; the NetworkPolicy is
#      applied, and a pod of another namespace is refused (an enforcing CNI) or reaches the
#      stub's port (the bridge CNI of the node image built here: it enforces no NetworkPolicy) —
#      reported either way.
# The control API is called with curl (kubectl cannot add a header): the kubeconfig's client
# certificate for the API server, the token of Secret hpa-metrics-stub-control in
# x-hpa-metrics-stub-token (from a file, never on a command line).
# Needs the stub deployed (`just kind-stub`) and a cluster whose KCM runs the HPA controller.
# Leaves nothing behind (namespace stub-verify and its document are deleted).
set -euo pipefail
export PATH="${HPA_CONFORMANCE_CACHE:-$HOME/.cache/hpa-conformance}/bin:$PATH"
root=$(cd "$(dirname "$0")/../.." && pwd)
export KUBECONFIG=${KUBECONFIG:-$root/.cache/kind/kubeconfig}
NS=stub-verify
PROXY=/api/v1/namespaces/hpa-conformance-system/services/https:hpa-metrics-stub:https/proxy
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }
ok() { log "ok: $*"; }

tmp=$(mktemp -d)
chmod 700 "$tmp"
trap 'rm -rf "$tmp"' EXIT
view() { kubectl config view --raw --minify -o jsonpath="$1"; }
server=$(view '{.clusters[0].cluster.server}')
view '{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$tmp/ca.crt"
view '{.users[0].user.client-certificate-data}' | base64 -d >"$tmp/client.crt"
view '{.users[0].user.client-key-data}' | base64 -d >"$tmp/client.key"
token=$(kubectl -n hpa-conformance-system get secret hpa-metrics-stub-control -o jsonpath='{.data.token}' | base64 -d)
[ -n "$token" ] || fail "Secret hpa-metrics-stub-control has no token"
printf 'x-hpa-metrics-stub-token: %s\n' "$token" >"$tmp/token.header"
printf 'x-hpa-metrics-stub-token: %s\n' "not-the-token-0123456789" >"$tmp/wrong.header"
# curl to the API server as the kubeconfig's user: METHOD PATH [curl args...]; prints the body,
# fails on an HTTP error.
api() {
  local method=$1 path=$2
  shift 2
  curl -sS --fail-with-body --cacert "$tmp/ca.crt" --cert "$tmp/client.crt" --key "$tmp/client.key" \
    -X "$method" "$server$path" "$@"
}
# The stub's control API through the service proxy, with the token.
control() {
  local method=$1 path=$2
  shift 2
  api "$method" "$PROXY$path" -H "@$tmp/token.header" -H 'content-type: application/json' "$@"
}
# The HTTP status of a GET through the API server (extra curl args after the path).
status_of() {
  local path=$1
  shift
  curl -sS -o /dev/null -w '%{http_code}' --cacert "$tmp/ca.crt" --cert "$tmp/client.crt" \
    --key "$tmp/client.key" "$server$path" "$@"
}

kubectl wait --for=condition=Available --timeout=60s \
  apiservice/v1beta1.metrics.k8s.io apiservice/v1beta2.custom.metrics.k8s.io \
  apiservice/v1beta1.custom.metrics.k8s.io apiservice/v1beta1.external.metrics.k8s.io >/dev/null
ok "APIServices Available"

[ "$(kubectl get --raw /apis/metrics.k8s.io/v1beta1 | jq -r '[.resources[].name] | join(",")')" = "nodes,pods" ] ||
  fail "metrics.k8s.io/v1beta1 discovery"
groups=$(kubectl get --raw /apis | jq -r '.groups[] | select(.name | test("metrics.k8s.io$")) | "\(.name)=\(.preferredVersion.version)"' | sort | tr '\n' ' ')
[ "$groups" = "custom.metrics.k8s.io=v1beta2 external.metrics.k8s.io=v1beta1 metrics.k8s.io=v1beta1 " ] ||
  fail "aggregated groups: $groups"
ok "discovery through the aggregator: $groups"

kubectl delete namespace "$NS" --ignore-not-found --wait=true >/dev/null
kubectl create namespace "$NS" >/dev/null
cleanup() {
  control DELETE "/control/namespaces/$NS" >/dev/null 2>&1 || true
  kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

kubectl -n "$NS" apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: app
          image: hpa-conformance/app:1
          imagePullPolicy: Never
          command: [sleep, "3600"]
          resources:
            requests: {cpu: 100m}
YAML
kubectl -n "$NS" rollout status deployment/web --timeout=120s >/dev/null
pods=$(kubectl -n "$NS" get pods -l app=web -o json)
[ "$(jq '.items | length' <<<"$pods")" = 2 ] || fail "expected 2 pods"
ok "Deployment web: 2 pods Running and Ready"

# The HPA controller ignores a CPU sample taken less than its window after the pod became Ready
# (during the CPU initialization period): stamp the samples a window after the later readiness.
ready=$(jq -r '[.items[].status.conditions[] | select(.type == "Ready") | .lastTransitionTime] | max' <<<"$pods")
wait_until=$(($(date -d "$ready" +%s) + 31))
while [ "$(date +%s)" -lt "$wait_until" ]; do sleep 1; done
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)

doc=$(jq --arg now "$now" '{
  pods: ([.items[] | {key: .metadata.name, value: .metadata.labels}] | from_entries
         | . + {"not-web": {"app": "db"}}),
  metrics: {
    resource: {items: ([.items[] | {metadata: {name: .metadata.name}, timestamp: $now, window: "30s",
                                    containers: [{name: "app", usage: {cpu: "52m"}}]}]
                       + [{metadata: {name: "not-web"}, timestamp: $now, window: "30s",
                           containers: [{name: "db", usage: {cpu: "1"}}]}])},
    pods: {rps: {items: [.items[] | {pod: .metadata.name, value: "10", timestamp: $now}]}},
    object: {hits: {value: {value: "5", timestamp: $now}}},
    external: {queue: {items: [{value: "3", timestamp: $now}]}}
  }
}' <<<"$pods")
put() { control PUT "/control/namespaces/$NS" --data-binary @- >/dev/null <<<"$1"; }
put "$doc"
# The stub stores the document with its defaults filled in (empty maps, no faults).
gist='{pods, items: [.metrics.resource.items[] | [.metadata.name, .timestamp, .window, .containers[0].usage.cpu]],
       rps: .metrics.pods.rps.items, hits: .metrics.object.hits, queue: .metrics.external.queue}'
[ "$(control GET "/control/namespaces/$NS" | jq -S "$gist")" = "$(jq -S "$gist" <<<"$doc")" ] ||
  fail "control document read back differs"
ok "control document put and read back through the service proxy"

listed=$(kubectl get --raw "/apis/metrics.k8s.io/v1beta1/namespaces/$NS/pods?labelSelector=app%3Dweb" |
  jq -r '[.items[] | "\(.metadata.name):\(.containers[0].usage.cpu)"] | join(" ")')
[ "$(wc -w <<<"$listed")" = 2 ] && ! grep -q not-web <<<"$listed" || fail "PodMetrics app=web: $listed"
[ "$(kubectl get --raw "/apis/metrics.k8s.io/v1beta1/namespaces/$NS/pods" | jq '.items | length')" = 3 ] ||
  fail "PodMetrics without selector"
[ "$(kubectl get --raw "/apis/custom.metrics.k8s.io/v1beta2/namespaces/$NS/pods/*/rps?labelSelector=app%3Dweb" | jq -r '[.items[].value] | join(",")')" = "10,10" ] ||
  fail "custom pods metric"
[ "$(kubectl get --raw "/apis/custom.metrics.k8s.io/v1beta2/namespaces/$NS/deployments.apps/web/hits" | jq -r '.items[0].value')" = 5 ] ||
  fail "object metric"
[ "$(kubectl get --raw "/apis/external.metrics.k8s.io/v1beta1/namespaces/$NS/queue" | jq -r '.items[0].value')" = 3 ] ||
  fail "external metric"
ok "aggregated reads: PodMetrics app=web [$listed], rps 10,10, hits 5, queue 3"

kubectl -n "$NS" apply -f - >/dev/null <<'YAML'
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 10
  metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
    - type: Pods
      pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: "10"}}
    - type: Object
      object:
        describedObject: {apiVersion: apps/v1, kind: Deployment, name: web}
        metric: {name: hits}
        target: {type: Value, value: "5"}
    - type: External
      external: {metric: {name: queue}, target: {type: Value, value: "3"}}
YAML

# Waits (up to $2 s) until the jq filter $1 holds on the HPA.
wait_hpa() {
  local deadline=$(($(date +%s) + $2))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    if kubectl -n "$NS" get hpa web -o json | jq -e "$1" >/dev/null 2>&1; then return 0; fi
    sleep 2
  done
  kubectl -n "$NS" get hpa web -o json | jq '.status' >&2
  return 1
}
wait_hpa '(.status.currentMetrics // []) | length == 4' 120 || fail "HPA has no current metrics"
current=$(kubectl -n "$NS" get hpa web -o json | jq -c '[.status.currentMetrics[] |
  if .type == "Resource" then "cpu=\(.resource.current.averageUtilization)%/\(.resource.current.averageValue)"
  elif .type == "Pods" then "rps=\(.pods.current.averageValue)"
  elif .type == "Object" then "hits=\(.object.current.value)"
  else "queue=\(.external.current.value)" end]')
[ "$current" = '["cpu=52%/52m","rps=10","hits=5","queue=3"]' ] || fail "HPA current metrics: $current"
ok "KCM's HPA status: $current"

# With other metrics still valid the HPA stays ScalingActive; the failing metric is reported in
# a FailedGetResourceMetric event, whose message ends with client-go's error text.
wait_event() {
  local deadline=$(($(date +%s) + 120)) found
  while [ "$(date +%s)" -lt "$deadline" ]; do
    found=$(kubectl -n "$NS" get events --field-selector reason=FailedGetResourceMetric -o json |
      jq -r --arg m "$1" '[.items[] | select(.involvedObject.kind == "HorizontalPodAutoscaler" and (.message | endswith($m))) | .message][0] // empty')
    if [ -n "$found" ]; then echo "$found"; return 0; fi
    sleep 2
  done
  return 1
}
put "$(jq '.metrics.resource = {error: "stub-verify: injected failure"}' <<<"$doc")"
event=$(wait_event "unable to fetch metrics from resource metrics API: stub-verify: injected failure") ||
  fail "injected error not reported by the HPA"
ok "HPA event: $event"

put "$(jq '.faults.resource.mode = "unregistered"' <<<"$doc")"
event=$(wait_event "unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)") ||
  fail "unregistered mode not reported by the HPA"
ok "HPA event: $event"

counts=$(control GET "/control/namespaces/$NS/requests")
for p in "/apis/metrics.k8s.io/v1beta1/namespaces/$NS/pods?labelSelector=app=web" \
         "/apis/custom.metrics.k8s.io/v1beta2/namespaces/$NS/pods/*/rps?labelSelector=app=web" \
         "/apis/custom.metrics.k8s.io/v1beta2/namespaces/$NS/deployments.apps/web/hits" \
         "/apis/external.metrics.k8s.io/v1beta1/namespaces/$NS/queue"; do
  n=$(jq --arg p "$p" '.requests[$p] // 0' <<<"$counts")
  [ "$n" -gt 0 ] || fail "no request counted for $p: $counts"
done
ok "requests counted: $(jq -c .requests <<<"$counts")"

# 6. Who is refused.
for h in none wrong; do
  args=()
  [ $h = wrong ] && args=(-H "@$tmp/wrong.header")
  code=$(status_of "$PROXY/control/namespaces/$NS" "${args[@]}")
  [ "$code" = 401 ] || fail "control API through the service proxy with token=$h: HTTP $code, want 401"
  code=$(status_of "$PROXY/control/namespaces/$NS" -X PUT --data-binary '{}' "${args[@]}")
  [ "$code" = 401 ] || fail "PUT through the service proxy with token=$h: HTTP $code, want 401"
done
ok "control API without the token or with a wrong one: 401 (through the service proxy)"
for p in "/apis/metrics.k8s.io/v1beta1/namespaces/$NS/pods" "/apis/external.metrics.k8s.io/v1beta1/namespaces/$NS/queue" /apis; do
  code=$(status_of "$PROXY$p" -H "@$tmp/token.header")
  [ "$code" = 401 ] || fail "metrics path $p through the service proxy (no front-proxy certificate): HTTP $code, want 401"
done
ok "metrics APIs through the service proxy (no front-proxy client certificate, even with the token): 401"

kubectl -n hpa-conformance-system get networkpolicy hpa-metrics-stub >/dev/null || fail "NetworkPolicy hpa-metrics-stub missing"
stub_ip=$(kubectl -n hpa-conformance-system get pods -l app.kubernetes.io/name=hpa-metrics-stub -o jsonpath='{.items[0].status.podIP}')
kubectl -n "$NS" run netpol-probe --image=hpa-conformance/app:1 --image-pull-policy=Never --restart=Never \
  --command -- sh -c "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 $stub_ip 8443 | od -An -tx1 | head -1; echo" >/dev/null
kubectl -n "$NS" wait --for=jsonpath='{.status.phase}'=Succeeded pod/netpol-probe --timeout=60s >/dev/null ||
  fail "the NetworkPolicy probe pod did not finish"
# Plain text to a TLS port: the stub answers with a TLS alert record (15 03 0x ...) when the
# packets get through; nothing comes back when the policy drops them. (sed reads the whole log:
# `head -1` could end the pipe before kubectl has written, and pipefail made its SIGPIPE fatal.)
probe=$(kubectl -n "$NS" logs netpol-probe | sed -n 1p | xargs)
case "$probe" in
  "15 03"*) ok "NetworkPolicy NOT enforced: a pod of namespace $NS exchanged data with the stub ($stub_ip:8443, its TLS alert: $probe) — this cluster's CNI does not implement NetworkPolicy; the stub's own authentication (above) is what refuses it" ;;
  "") ok "NetworkPolicy enforced: a pod of namespace $NS gets nothing from the stub ($stub_ip:8443)" ;;
  *) fail "NetworkPolicy probe: unexpected answer $probe" ;;
esac
log "all checks passed"
