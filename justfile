# hpa-conformance recipes. `just --list` shows them all.

set shell := ["bash", "-euo", "pipefail", "-c"]

# The test command CI runs: formatting, lints, every test (snapshots must match), the corpus.
test:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    INSTA_UPDATE=no cargo test --workspace
    cargo run -q -p hpa-harness -- lint cases
    cargo run -q -p hpa-harness -- run cases

# Check case files: schema, API validation, unique names, sources (needs ../shared).
lint *ARGS:
    cargo run -q -p hpa-harness -- lint {{ARGS}}

# Run the corpus (or the given paths/flags) against the in-process reference core.
run *ARGS:
    cargo run -q --release -p hpa-harness -- run {{ARGS}}

# Print one case's tick-by-tick trace and why each decision was made.
explain CASE:
    cargo run -q -p hpa-harness -- explain {{CASE}}

# Regenerate the case-file JSON Schema (CI checks it is current).
schema:
    cargo run -q -p hpa-harness -- schema > cases/schema.json
    cargo run -q -p hpa-harness -- schema --protocol > harness/protocol.schema.json

# Write new or changed trace snapshots as .snap.new files to review (then `cargo insta review`,
# or rename them after reading the diff).
snapshots:
    INSTA_UPDATE=new cargo test -p hpa-conformance-tests --test corpus || true
    find tests/snapshots -name '*.snap.new' | sort

# Benchmarks (all, or those named: corpus, decision, upstream, fuzz): printed figures, no assertions.
bench *WHICH:
    cargo bench -p hpa-harness --bench corpus -- {{WHICH}}

# Build the upstream HPA adapter (Go; k8s.io/kubernetes pinned in adapters/upstream/go.mod).
upstream:
    adapters/upstream/build.sh

# The adapter's own Go tests (they build it first).
upstream-test:
    cd adapters/upstream && (command -v go >/dev/null && go test ./... || /usr/local/go/bin/go test ./...)

# The whole corpus on upstream's own controller code: every case must pass there too.
upstream-corpus: upstream
    cargo run -q -p hpa-harness -- run cases --target exec:adapters/upstream/bin/hpa-upstream-adapter

# Differential fuzzing, reference core vs upstream (CI runs a fixed-seed batch of 2000).
fuzz-upstream COUNT="2000" SEED="1": upstream
    cargo run -q -p hpa-harness -- fuzz --b exec:adapters/upstream/bin/hpa-upstream-adapter --count {{COUNT}} --seed {{SEED}}

# Run each cargo-fuzz target (fuzz/: the quantity parser, the case loader, the protocol decoder) for
# SECONDS (not in CI). cargo-fuzz needs nightly features: RUSTC_BOOTSTRAP=1 lends them to stable.
# Findings land in fuzz/artifacts/<target>/.
fuzz-inputs SECONDS="60":
    command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
    cd fuzz && for t in quantity case_loader protocol_decoder; do \
        case $t in case_loader) seeds="../cases ../tests/fixtures";; *) seeds=seeds/$t;; esac; \
        mkdir -p corpus/$t; \
        RUSTC_BOOTSTRAP=1 cargo fuzz run $t corpus/$t $seeds -- \
            -max_total_time={{SECONDS}} -timeout=10 -max_len=16384 -print_final_stats=1; \
    done
