#!/usr/bin/env bash
# `just kind-deploy [SCALE]`: the reference HPA controller (and the metrics stub) on the kind
# cluster hpa-conformance, whose kube-controller-manager must run WITHOUT its HPA controller
# (kind-config/cluster-no-hpa.yaml, or cluster-x5-no-hpa.yaml for SCALE=5). Builds the images when
# their inputs changed (scripts/image.sh), loads them into the node, deploys the stub
# (metrics-stub/deploy.sh), applies this kustomization (x5/ for SCALE=5), rolls the controller when
# its binary changed, and waits until both replicas are Ready, no pod of an earlier rollout is left
# and a current pod holds the Lease.
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
use_cluster
here=$(cd "$(dirname "$0")" && pwd)
root=$REPO_ROOT
scale=${1:-5}

[ -s "$KUBECONFIG" ] || { log "no kubeconfig at $KUBECONFIG: run \`just kind-up cluster-x5-no-hpa.yaml\` first"; exit 1; }
case $scale in
  1) kustomization=$here ;;
  5) kustomization=$here/x5 ;;
  *) log "SCALE must be 1 or 5 (the kind configs there are)"; exit 2 ;;
esac

# Two HPA controllers would fight over every HPA: refuse a cluster whose KCM runs its own.
kcm=$(kcm_field '.spec.containers[0].command')
if ! kcm_hpa_is_off "$kcm"; then
  log "kube-controller-manager runs its HPA controller on this cluster: use \`just kind-up cluster-x5-no-hpa.yaml\` (or cluster-no-hpa.yaml)"
  exit 1
fi
case $scale in
  5) grep -q -- 'horizontal-pod-autoscaler-sync-period=3s' <<<"$kcm" || { log "the cluster is not the x5 config (cluster-x5-no-hpa.yaml)"; exit 1; } ;;
esac

"$here/../metrics-stub/deploy.sh"

built=$("$root/kind-config/scripts/image.sh" reference | tail -1)
log "image: $built"
hash=${built%% *}
hash=${hash##*:}
kind load docker-image --name "$cluster" "hpa-conformance/hpa-reference:$hash" "hpa-conformance/hpa-reference:dev"
minor=$(cluster_minor)

# The Deployment runs :dev; an annotation with the binary's hash rolls it when (and only when) the
# binary changed. It is applied with the manifests (a kustomization over the chosen one), so a first
# deploy is one rollout. The controller acts as the release the cluster runs (--kubernetes-version,
# the API server's minor), as the KCM controller it replaces would.
overlay=$REPO_ROOT/.cache/kind/deploy
mkdir -p "$overlay"
base=$(realpath --relative-to="$overlay" "$kustomization")
cat >"$overlay/kustomization.yaml" <<EOF
# Written by kind-config/reference/deploy.sh: $base with the binary's hash.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $base
patches:
  - target:
      kind: Deployment
      name: hpa-reference
    patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: hpa-reference
      spec:
        template:
          metadata:
            annotations:
              hpa-conformance/binary: "$hash"
  - target:
      kind: Deployment
      name: hpa-reference
    patch: |-
      - op: add
        path: /spec/template/spec/containers/0/args/-
        value: --kubernetes-version=$minor
EOF
kubectl apply -k "$overlay"
# /metrics is served on the pods' loopback now: the Service that exposed it is gone from the
# manifests, and from a cluster deployed before.
kubectl -n hpa-reference delete service hpa-reference-metrics --ignore-not-found
kubectl -n hpa-reference rollout status deployment/hpa-reference --timeout=180s
# Settled: the pods of an earlier rollout are gone and a current pod holds the Lease. A leader that
# is still terminating does not reconcile, and a run started now would see its first decisions late.
holder=
for _ in $(seq 120); do
  pods=$(kubectl -n hpa-reference get pods -l app.kubernetes.io/name=hpa-reference \
    -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.metadata.deletionTimestamp}{"\n"}{end}')
  live=$(awk 'NF == 1 {print $1}' <<<"$pods")
  terminating=$(awk 'NF > 1' <<<"$pods" | wc -l)
  holder=$(kubectl -n hpa-reference get lease hpa-reference -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true)
  if [ "$terminating" -eq 0 ] && [ -n "$holder" ] && grep -qx "${holder%_*}" <<<"$live"; then
    break
  fi
  holder=
  sleep 1
done
[ -n "$holder" ] || { log "no settled leader within 120 s (pods: $(tr '\n' ' ' <<<"$pods"), Lease holder: $(kubectl -n hpa-reference get lease hpa-reference -o jsonpath='{.spec.holderIdentity}' 2>/dev/null))"; kubectl -n hpa-reference logs -l app.kubernetes.io/name=hpa-reference --tail=20 >&2; exit 1; }
log "hpa-reference deployed (x$scale): $(kubectl -n hpa-reference get pods -l app.kubernetes.io/name=hpa-reference --no-headers | awk '{print $1, $2, $3}' | paste -sd' ' -); leader $holder"
