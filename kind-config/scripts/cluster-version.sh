#!/usr/bin/env bash
# Prints the Kubernetes minor (1.37) of the kind cluster KIND_CLUSTER_NAME (default hpa-conformance),
# asked of its API server: the justfile's kind recipes pass it to the harness as
# `--kubernetes-version`, so a run judges the release the cluster runs (KIND_K8S_VERSION=1.34 just
# kind-up …; or an official image through KIND_NODE_IMAGE).
set -euo pipefail
source "$(dirname "$0")/common.sh"
use_cluster
cluster_minor
