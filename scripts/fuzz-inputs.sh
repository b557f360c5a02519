#!/usr/bin/env bash
# `just fuzz-inputs [SECONDS]`: run each cargo-fuzz target (fuzz/: the quantity parser, the case
# loader, the protocol decoder) for SECONDS (default 60; not in CI). cargo-fuzz needs nightly
# features: RUSTC_BOOTSTRAP=1 lends them to stable. Findings land in fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../fuzz"
seconds="${1:-60}"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
for t in quantity case_loader protocol_decoder; do
  case $t in case_loader) seeds="../cases ../tests/fixtures";; *) seeds=seeds/$t;; esac
  mkdir -p corpus/$t
  # shellcheck disable=SC2086 # $seeds is a list of folders
  RUSTC_BOOTSTRAP=1 cargo fuzz run $t corpus/$t $seeds -- \
    -max_total_time="$seconds" -timeout=10 -max_len=16384 -print_final_stats=1
done
