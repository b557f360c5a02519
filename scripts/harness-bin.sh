#!/usr/bin/env bash
# The release harness binary the scripts and recipes run (the upstream corpus, fuzzing, kind-jobs,
# figures): prints its path. $HPA_CONFORMANCE_BIN when set — a build at hand; CI points it at the
# static binary of the harness image (`kind-config/scripts/image.sh --binary harness FILE`), so the
# harness is not compiled a second time — else the release build, built first when it is not current.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ -n "${HPA_CONFORMANCE_BIN:-}" ]; then
  if [ ! -x "$HPA_CONFORMANCE_BIN" ]; then
    echo "harness-bin.sh: HPA_CONFORMANCE_BIN=$HPA_CONFORMANCE_BIN is not an executable" >&2
    exit 1
  fi
  echo "$HPA_CONFORMANCE_BIN"
  exit 0
fi
cargo build -q --release -p hpa-harness >&2
echo "$PWD/target/release/hpa-conformance"
