#!/usr/bin/env bash
# `just kind-stub`: builds the metrics stub image (kind-config/scripts/image.sh), loads it into the kind
# cluster hpa-conformance, makes the control token's Secret (once) and copies the front proxy's
# CA into the stub's namespace, applies this kustomization, restarts the stub when the image or
# that CA changed, and waits until the four APIServices are Available.
# Tools: kind and kubectl from ${HPA_CONFORMANCE_CACHE:-~/.cache/hpa-conformance}/bin (built by
# the kind recipes) or PATH; kubeconfig .cache/kind/kubeconfig (written by `just kind-up`).
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
use_cluster
here=$(cd "$(dirname "$0")" && pwd)
root=$REPO_ROOT

[ -s "$KUBECONFIG" ] || { log "no kubeconfig at $KUBECONFIG: run \`just kind-up\` first"; exit 1; }

built=$("$root/kind-config/scripts/image.sh" metrics-stub | tail -1)
log "image: $built"
hash=${built%% *}
hash=${hash##*:}

kind load docker-image --name "$cluster" "hpa-conformance/metrics-stub:$hash" "hpa-conformance/metrics-stub:dev"
kubectl apply -f "$here/namespace.yaml"
# The control API's token: 32 random bytes, made once per cluster (kept across redeploys, so a
# running harness keeps its token); the harness reads it from this Secret.
if ! kubectl -n hpa-conformance-system get secret hpa-metrics-stub-control >/dev/null 2>&1; then
  kubectl -n hpa-conformance-system create secret generic hpa-metrics-stub-control \
    --from-literal=token="$(head -c 32 /dev/urandom | base64 | tr -d '\n=+/')" >/dev/null
  kubectl -n hpa-conformance-system label secret hpa-metrics-stub-control \
    app.kubernetes.io/name=hpa-metrics-stub app.kubernetes.io/part-of=hpa-conformance >/dev/null
  log "Secret hpa-metrics-stub-control created"
fi
# The front proxy's CA and allowed names, copied from kube-system (a pod mounts ConfigMaps of its
# own namespace only); the allowed names as the stub's comma-separated flag.
auth=$(kubectl -n kube-system get configmap extension-apiserver-authentication -o json)
ca=$(jq -r '.data["requestheader-client-ca-file"] // empty' <<<"$auth")
[ -n "$ca" ] || { log "kube-system/extension-apiserver-authentication has no requestheader-client-ca-file: the API server runs without a front proxy CA"; exit 1; }
names=$(jq -r '.data["requestheader-allowed-names"] // "[]" | fromjson | join(",")' <<<"$auth")
kubectl -n hpa-conformance-system create configmap hpa-metrics-stub-requestheader \
  --from-literal=client-ca.crt="$ca" --from-literal=allowed-names="$names" \
  --dry-run=client -o yaml | kubectl apply -f - >/dev/null
log "requestheader CA copied; allowed names: ${names:-(any)}"
requestheader=$(printf '%s\n%s' "$ca" "$names" | sha256sum | cut -c1-12)

# The stub and its Service first; the APIServices once the Service is routable.
for f in serviceaccount deployment service networkpolicy; do kubectl apply -f "$here/$f.yaml"; done
# The Deployment runs :dev; the annotations roll it when (and only when) the binary or the
# requestheader CA/names changed (the stub reads them at start).
kubectl -n hpa-conformance-system patch deployment hpa-metrics-stub --type merge \
  -p "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{\"hpa-conformance/metrics-stub-binary\":\"$hash\",\"hpa-conformance/requestheader\":\"$requestheader\"}}}}}" >/dev/null
kubectl -n hpa-conformance-system rollout status deployment/hpa-metrics-stub --timeout=180s

# The aggregator dials the Service's cluster IP from the node: kube-proxy must have programmed it,
# else those connections leave the node for the default route (and the APIServices fail with
# whatever answers there).
node="$cluster-control-plane"
for i in $(seq 60); do
  rules=$(docker exec "$node" sh -c 'iptables-save -t nat 2>/dev/null; nft list ruleset 2>/dev/null' || true)
  if grep -q 'hpa-conformance-system/hpa-metrics-stub:https' <<<"$rules"; then
    break
  fi
  [ "$i" -lt 60 ] || { log "kube-proxy has not programmed Service hpa-metrics-stub on $node (see its logs); APIServices not applied"; exit 1; }
  sleep 1
done
kubectl apply -k "$here"
kubectl wait --for=condition=Available --timeout=180s \
  apiservice/v1beta1.metrics.k8s.io \
  apiservice/v1beta2.custom.metrics.k8s.io \
  apiservice/v1beta1.custom.metrics.k8s.io \
  apiservice/v1beta1.external.metrics.k8s.io
# Available is the aggregator's availability check; whether it routes the paths is another
# matter (on v1.37 it answered `404 page not found` for every metrics API for about 20 s after
# Available once, right after this Deployment rolled). Each group version's list in the stub's
# namespace (no document there: an empty list) must answer, 3 rounds in a row (the lane checks
# the same before its t=0: hpa_metrics_stub::control::probe_paths).
probes=(
  /apis/metrics.k8s.io/v1beta1/namespaces/hpa-conformance-system/pods
  '/apis/custom.metrics.k8s.io/v1beta2/namespaces/hpa-conformance-system/pods/*/hpa-conformance-probe'
  '/apis/custom.metrics.k8s.io/v1beta1/namespaces/hpa-conformance-system/pods/*/hpa-conformance-probe'
  /apis/external.metrics.k8s.io/v1beta1/namespaces/hpa-conformance-system/hpa-conformance-probe
)
start=$SECONDS
streak=0
while [ "$streak" -lt 3 ]; do
  failing=""
  for p in "${probes[@]}"; do
    out=$(kubectl get --raw "$p" 2>&1) && grep -q '"items"' <<<"$out" || failing+=" $p: ${out:0:160};"
  done
  if [ -z "$failing" ]; then
    streak=$((streak + 1))
  else
    streak=0
    [ $((SECONDS - start)) -lt 90 ] || { log "the aggregator does not route the metrics APIs to the stub after 90 s:$failing"; exit 1; }
  fi
  sleep 1
done
[ $((SECONDS - start)) -le 4 ] || log "the metrics APIs answered through the aggregator $((SECONDS - start)) s after Available"
kubectl get apiservices -l app.kubernetes.io/name=hpa-metrics-stub
