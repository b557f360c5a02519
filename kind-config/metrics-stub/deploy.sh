#!/usr/bin/env bash
# `just kind-stub`: builds the metrics stub image (kind-config/scripts/image.sh), loads it into the kind
# cluster hpa-conformance, applies this kustomization, restarts the stub when the image changed,
# and waits until the four APIServices are Available.
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
# The stub and its Service first; the APIServices once the Service is routable.
for f in namespace serviceaccount deployment service; do kubectl apply -f "$here/$f.yaml"; done
# The Deployment runs :dev; the annotation rolls it when (and only when) the binary changed.
kubectl -n hpa-conformance-system patch deployment hpa-metrics-stub --type merge \
  -p "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{\"hpa-conformance/metrics-stub-binary\":\"$hash\"}}}}}" >/dev/null
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
kubectl get apiservices -l app.kubernetes.io/name=hpa-metrics-stub
