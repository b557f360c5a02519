#!/usr/bin/env bash
# `just kind-load`: load both images (hpa-reference and the metrics stub, by their binary-hash tag
# and :dev) into the kind cluster KIND_CLUSTER_NAME (default hpa-conformance). The justfile builds
# them first (`just images`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
for r in hpa-conformance/hpa-reference hpa-conformance/metrics-stub; do
  h=$(docker image inspect -f '{{index .Config.Labels "hpa-conformance.binary"}}' "$r:dev")
  PATH="${HPA_CONFORMANCE_CACHE:-$HOME/.cache/hpa-conformance}/bin:$PATH" \
    kind load docker-image --name "${KIND_CLUSTER_NAME:-hpa-conformance}" "$r:$h" "$r:dev"
done
