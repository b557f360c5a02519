#!/usr/bin/env bash
# `just kind-ci`: what CI runs on kind, each part on a fresh time-scaled cluster that is removed
# afterwards whatever the result (docs/kind.md, docs/reference-controller.md):
# 1. kube-controller-manager's HPA controller (cluster-x5.yaml): the metrics stub, the reference's
#    API validation against the API server (kind-validation), the smoke corpus;
# 2. the deployed reference, KCM's HPA controller off (cluster-x5-no-hpa.yaml): the smoke corpus,
#    least privilege from the audit log (kind-rbac), leader failover mid-case (kind-failover), the
#    fault matrix's short version (kind-faults-ci: the reference's process SIGKILLed while it holds
#    a scale-down back, and its scale updates refused across a scale-up — no wrong scale decision,
#    nothing left behind), the harness as an in-cluster Job (its least privilege, a SIGKILL mid-run
#    and cluster-clean: kind-in-cluster) and as a Sonobuoy plugin (kind-sonobuoy).
# Reports: target/kind-smoke-kcm/, target/kind-smoke-reference/, target/kind-rbac/, target/kind-failover/,
# target/kind-faults/, target/kind-in-cluster/, target/kind-sonobuoy/.
# Both clusters run the default Kubernetes minor (kind-config/versions/default); KIND_K8S_VERSION=1.34
# (any minor of kind-config/versions/) runs the same on another.
# JUST is the just that runs the recipe (the justfile passes it); default: `just` on PATH.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
just="${JUST:-just}"

rc=0
("$just" kind-up cluster-x5.yaml && "$just" kind-stub && "$just" kind-validation && "$just" kind-smoke 5) || rc=$?
rm -rf target/kind-smoke-kcm
[ ! -d target/kind-smoke ] || mv target/kind-smoke target/kind-smoke-kcm
"$just" kind-down
[ $rc = 0 ] || exit $rc

rc=0
("$just" kind-up cluster-x5-no-hpa.yaml && "$just" kind-deploy 5 && "$just" kind-smoke 5 && "$just" kind-rbac && "$just" kind-failover &&
  "$just" kind-faults-ci && "$just" kind-in-cluster && "$just" kind-sonobuoy 5) || rc=$?
rm -rf target/kind-smoke-reference
[ ! -d target/kind-smoke ] || mv target/kind-smoke target/kind-smoke-reference
"$just" kind-down
exit $rc
