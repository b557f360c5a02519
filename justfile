# hpa-conformance recipes. A bare `just` lists them; on a machine without just, `./test` installs it
# (scripts/ensure-just.sh) and runs `just test`, and `./test RECIPE …` runs any recipe.
# Bodies longer than a few lines live in scripts (scripts/, kind-config/scripts/). Which test goes
# where, and what CI runs: docs/testing.md.

set shell := ["bash", "-euo", "pipefail", "-c"]

# List the recipes (a bare `just`).
_default:
    @{{quote(just_executable())}} --justfile {{quote(justfile())}} --list --unsorted

# The test command CI runs: formatting, lints, every test (snapshots must match), the corpus.
[group('test')]
[doc("The test command CI runs: fmt, clippy, every test (snapshots must match), lint, the corpus")]
test:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    INSTA_UPDATE=no cargo test --workspace
    cargo run -q -p hpa-harness -- lint cases
    cargo run -q -p hpa-harness -- run cases
    scripts/versions-doc.sh --check

# Debian's chromium for the HTML report's browser test (tests/report_browser.rs, part of `test`;
# without chromium it is skipped with a loud message, in CI it fails). Needs root or sudo.
[group('test')]
[doc("Install Debian's chromium for the HTML report's browser test (root or sudo)")]
browser:
    tests/browser/install.sh

# Check case files: schema, API validation, unique names, sources (needs ../shared).
[group('corpus')]
[doc("Check case files: schema, API validation, unique names, sources (needs ../shared)")]
lint *ARGS:
    cargo run -q -p hpa-harness -- lint {{ARGS}}

# The corpus at every Kubernetes release 1.32 … 1.37 (or the given flags: --target,
# --versions, --report DIR, --format json|markdown): case × release, each change named
# (docs/versions.md).
[group('corpus')]
[doc("The corpus at every Kubernetes release 1.32 … 1.37: case × release (docs/versions.md)")]
matrix *ARGS:
    cargo run -q --release -p hpa-harness -- matrix {{ARGS}}

# The reference's version matrix into README.md and docs/versions.md (`--check`: only check it is
# current, as `just test` does).
[group('corpus')]
[doc("Write the reference's version matrix into README.md and docs/versions.md")]
versions-doc *ARGS:
    scripts/versions-doc.sh {{ARGS}}

# Run the corpus (or the given paths/flags) against the in-process reference core.
[group('corpus')]
[doc("Run the corpus (or the given paths/flags) on the in-process reference core")]
run *ARGS:
    cargo run -q --release -p hpa-harness -- run {{ARGS}}

# Print one case's tick-by-tick trace and why each decision was made.
[group('corpus')]
[doc("Tell one case's run tick by tick, and why each decision was made")]
explain CASE:
    cargo run -q -p hpa-harness -- explain {{CASE}}

# Regenerate the case-file JSON Schema (CI checks it is current).
[group('corpus')]
[doc("Regenerate cases/schema.json and harness/protocol.schema.json")]
schema:
    cargo run -q -p hpa-harness -- schema > cases/schema.json
    cargo run -q -p hpa-harness -- schema --protocol > harness/protocol.schema.json

# Write new or changed trace snapshots as .snap.new files to review (then `cargo insta review`,
# or rename them after reading the diff).
[group('test')]
[doc("Write new or changed trace snapshots as .snap.new files to review")]
snapshots:
    INSTA_UPDATE=new cargo test -p hpa-conformance-tests --test corpus || true
    find tests/snapshots -name '*.snap.new' | sort

# Benchmarks (all, or those named: corpus, decision, upstream, upstream-corpus, fuzz): printed
# figures, no assertions (scripts/bench.sh; figures: docs/performance.md). `just bench callgrind [N]`: instructions per decision of the decision
# benchmark (valgrind).
# `just bench kind-scale [HPAS]`: the scale benchmark on kind, kube-controller-manager's HPA
# controller vs the deployed reference (kind-config/scripts/kind-scale.sh; ~25 min for 1,000 HPAs).
# `just bench kind-jobs [JOBS] [CASES…]`: the corpus on a three-node kind cluster at --jobs JOBS and
# --jobs 1, and where the limit is (kind-config/scripts/kind-jobs.sh; ~2.5 h for the whole corpus).
[group('performance')]
[doc("Benchmarks, printed figures: corpus, decision, upstream, upstream-corpus, fuzz, callgrind, kind-scale, kind-jobs")]
bench *WHICH:
    scripts/bench.sh {{WHICH}}

# The figures the docs quote that the repository determines (case counts from the corpus, the kind
# plan, …), regenerated into docs/figures.md (scripts/figures.sh; builds the release harness).
[group('corpus')]
[doc("Regenerate docs/figures.md (case counts and other generated figures)")]
figures:
    scripts/figures.sh > docs/figures.md.new && mv docs/figures.md.new docs/figures.md

# Build the upstream HPA adapter for a Kubernetes release (1.34.4 or 1.34; default: build.sh's
# default_version) into adapters/upstream/bin/<release>/; cached by its inputs
# (adapters/upstream/README.md, "Building").
[group('upstream')]
[doc("Build the upstream HPA adapter for a release (default 1.37.2), cached by its inputs")]
upstream VERSION="":
    adapters/upstream/build.sh {{VERSION}}

# The upstream adapter for every release in adapters/upstream/versions/.
[group('upstream')]
[doc("Build the upstream adapter for every release 1.32 … 1.37")]
upstream-all:
    for v in $(cd adapters/upstream/versions && ls -d 1.*/ | tr -d / | sort -V); do adapters/upstream/build.sh "$v"; done

# The adapter's own Go tests (they build it first).
[group('upstream')]
[doc("The upstream adapter's own Go tests")]
upstream-test:
    cd adapters/upstream && (command -v go >/dev/null && go test ./... || /usr/local/go/bin/go test ./...)

# Quantities as apimachinery reads them (issue 37): every quantity spelling of the corpus, a
# generated set and a seeded random batch through adapters/upstream/bin/hpa-quantity (the pinned
# apimachinery) and the reference's parser; every answer must be the same (tests/quantity_upstream.rs).
[group('upstream')]
[doc("Quantities: the reference's parser vs the pinned apimachinery")]
quantity-upstream: upstream
    cargo test -p hpa-conformance-tests --test quantity_upstream -- --ignored

# A longer random batch of quantity spellings against apimachinery (not in CI), e.g.
# `just quantity-fuzz 2000000 7`.
[group('upstream')]
[doc("A longer random batch of quantity spellings vs apimachinery (not in CI)")]
quantity-fuzz COUNT="1000000" SEED="1": upstream
    HPA_QUANTITY_RANDOM={{COUNT}} HPA_QUANTITY_SEED={{SEED}} cargo test --release -p hpa-conformance-tests --test quantity_upstream -- --ignored --nocapture

# The whole corpus on upstream's own controller code of each release (default: all, 1.32 … 1.37),
# judged at that release: every case must pass there too (one adapter process per core, each
# serving case after case: harness/PROTOCOL.md, manyCases). Every case the core runs at a release
# must run on its upstream: the only extra skips allowed are the rejections (kind-validation
# confirms those on the API server), so every expectation is confirmed by running upstream
# (cases/COVERAGE.md, "Every expectation confirmed by running upstream"). Builds each adapter
# first (cached by its inputs).
[group('upstream')]
[doc("The whole corpus on each release's upstream controller, 1.32 … 1.37 (only rejections may skip)")]
upstream-corpus *RELEASES:
    scripts/upstream-corpus.sh {{RELEASES}}

# Differential fuzzing, reference core vs upstream of one release (default 1.37), both at that
# release (CI: a fixed-seed batch of 20000 at 1.37 and 2000 at each other release); one job per
# core, adapter processes kept between scenarios, delta ticks; the last line gives scenarios/s.
# The release harness (scripts/harness-bin.sh: in CI the static build of `just images`).
[group('upstream')]
[doc("Differential fuzzing, core vs upstream of a release (CI: 20000 at 1.37, 2000 at each other)")]
fuzz-upstream COUNT="20000" SEED="1" RELEASE="1.37":
    adapters/upstream/build.sh {{RELEASE}}
    "$(scripts/harness-bin.sh)" fuzz --kubernetes-version {{RELEASE}} --b exec:adapters/upstream/bin/$(cd adapters/upstream/versions && ls -d {{RELEASE}}*/ | tr -d / | sort -V | tail -1)/hpa-upstream-adapter --count {{COUNT}} --seed {{SEED}}

# Mutation testing of the decision core (cargo-mutants; what is mutated and how each mutant is
# judged: .cargo/mutants.toml): a mutant is caught when a case fails on the core (tests/verdicts.rs,
# the corpus's verdicts without snapshots). Long — about 990 mutants at 15-20 s each on 2 cores
# (a rebuild of the harness per mutant), so not part of CI; extra arguments go to cargo-mutants,
# e.g. `--iterate` (for one file narrow examine_globs in .cargo/mutants.toml: cargo-mutants adds
# `-f` globs to the configuration's). The baseline is skipped
# because cargo-mutants builds it from the mutated package's own tests; `just test` runs the corpus.
[group('test')]
[doc("Mutation testing of the decision core (cargo-mutants; hours, not in CI)")]
mutants *ARGS:
    command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants@27.1.0
    cargo mutants --baseline=skip --timeout 120 --build-timeout 900 {{ARGS}}

# The Go kit for third-party implementations (kits/go): its tests, vet, and the template adapter
# built to kits/go/bin/hpa-template (docs/validate-your-hpa.md).
[group('kit')]
[doc("The Go kit's vet and tests; builds the template adapter (kits/go/bin/hpa-template)")]
kit-test:
    cd kits/go && GO=$(command -v go || echo /usr/local/go/bin/go) && $GO vet ./... && $GO test ./... && $GO build -o bin/hpa-template ./template && $GO test -c -o bin/hpa-template-bubbles ./template

# The worked third-party example: github.com/jthomperoo/k8shorizmetrics on the kit, built twice:
# plain (kit.Serve, its time.Now shifted per tick: WallClock) and served in synctest bubbles
# (kit.ServeBubbles: virtual time.Now, the corpus in one process).
[group('kit')]
[doc("Build the worked third-party example (k8shorizmetrics on the kit)")]
k8shorizmetrics:
    cd adapters/k8shorizmetrics && GO=$(command -v go || echo /usr/local/go/bin/go) && $GO vet . && $GO build -o bin/hpa-k8shorizmetrics-adapter . && $GO test -c -o bin/hpa-k8shorizmetrics-bubbles .

# The corpus on k8shorizmetrics at profile replicas, against its reviewed expectations: fails when
# the set of cases it fails changes (adapters/k8shorizmetrics/expectations.yaml); both builds.
[group('kit')]
[doc("The corpus on k8shorizmetrics at profile replicas, against its reviewed expectations")]
k8shorizmetrics-corpus: k8shorizmetrics
    cargo run -q -p hpa-harness -- run cases --target exec:adapters/k8shorizmetrics/bin/hpa-k8shorizmetrics-adapter --profile replicas --expected-failures adapters/k8shorizmetrics/expectations.yaml
    cargo run -q -p hpa-harness -- run cases --target exec:adapters/k8shorizmetrics/bin/hpa-k8shorizmetrics-bubbles --profile replicas --expected-failures adapters/k8shorizmetrics/expectations.yaml

# The second worked example, in Python from the protocol alone (no kit): adapters/python-minimal,
# on the algorithm's and the docs' cases at profile replicas, against its reviewed expectations.
[group('kit')]
[doc("The Python worked example on cases/algorithm and cases/docs, against its reviewed expectations")]
python-minimal-corpus:
    cargo run -q -p hpa-harness -- run cases/algorithm cases/docs --target "exec:python3 adapters/python-minimal/hpa.py" --profile replicas --expected-failures adapters/python-minimal/expectations.yaml

# --- kind: a real single-node cluster, built with no container registry (kind-config/README.md) ---
# One node image per Kubernetes minor with pins in kind-config/versions/ (1.34, 1.36, 1.37); the
# default is kind-config/versions/default (1.37). VERSION arguments, or KIND_K8S_VERSION=1.34 for
# every recipe (kind-ci too), pick another minor. KIND_NODE_IMAGE=kindest/node:v1.37.2 (a user with
# a registry) skips the node image build.

# Docker engine for kind: apt-installs docker.io + build tools if needed, starts dockerd, runc cap wrapper if needed.
[group('kind')]
[doc("Docker engine for kind (installed and started if needed)")]
engine:
    kind-config/engine.sh

# The kind node image of a Kubernetes minor (default 1.37): hpa-conformance/node:v1.37.2-<input hash>,
# cached by its inputs (kind-config/versions/<minor>/). VERSION: 1.37, 1.36, 1.34 (or 1.37.2).
[group('kind')]
[doc("The kind node image of Kubernetes VERSION (default 1.37), built here without a registry; cached")]
kind-image VERSION="": engine
    kind-config/scripts/node-image.sh {{VERSION}}

# Create cluster hpa-conformance from kind-config/CONFIG on Kubernetes VERSION (default
# $KIND_K8S_VERSION, else 1.37); kept if it runs that config and image. Kubeconfig .cache/kind/kubeconfig.
[group('kind')]
[doc("Create the kind cluster hpa-conformance from kind-config/CONFIG on Kubernetes VERSION (default 1.37)")]
kind-up CONFIG="cluster.yaml" VERSION="": engine
    kind-config/scripts/cluster.sh up {{CONFIG}} {{VERSION}}

# Delete the kind cluster hpa-conformance.
[group('kind')]
[doc("Delete the kind cluster hpa-conformance")]
kind-down:
    kind-config/scripts/cluster.sh down

# Check the running kind cluster: nodes/kube-system Ready, a Deployment + HPA, KCM's HPA conditions.
[group('kind')]
[doc("Check the running kind cluster (nodes, kube-system, a Deployment + HPA)")]
kind-check:
    kind-config/scripts/smoke.sh

# The smoke corpus (kind-config/smoke.txt) on the kind cluster's HPA controller, in parallel
# namespaces; the cluster must run kind-config/cluster-x<SCALE>.yaml (x5: `just kind-up cluster-x5.yaml`).
# Judged at the release the cluster runs (--kubernetes-version, asked of its API server). A case that
# needs other controller flags runs on the controller restarted with them, put back afterwards
# (--reconfigure-controller: the cluster is the project's own). Reports in target/kind-smoke/.
[group('kind')]
[doc("The smoke corpus (kind-config/smoke.txt) on the kind cluster's HPA controller")]
kind-smoke SCALE="5" *ARGS:
    cargo run -q -p hpa-harness -- run --target cluster --kubeconfig .cache/kind/kubeconfig \
        --kubernetes-version $(kind-config/scripts/cluster-version.sh) \
        --time-scale {{SCALE}} --feature-gates HPAScaleToZero=true --reconfigure-controller \
        --report target/kind-smoke {{ARGS}} \
        $(grep -v '^#' kind-config/smoke.txt | grep .)

# The whole corpus on the kind cluster (cases a cluster cannot pose are skipped with the reason),
# judged at the release the cluster runs; cases that need other controller flags run in groups, the
# controller restarted with each group's flags and put back afterwards. PARALLEL cases at once (24: on
# kind's 2 cores at ×5 the machine stays under half busy at 12). Reports in target/kind-test/.
[group('kind')]
[doc("The whole corpus on the kind cluster (what a cluster cannot pose is skipped)")]
kind-test SCALE="5" PARALLEL="24" *ARGS:
    cargo run -q --release -p hpa-harness -- run --target cluster --kubeconfig .cache/kind/kubeconfig \
        --kubernetes-version $(kind-config/scripts/cluster-version.sh) \
        --time-scale {{SCALE}} --parallel {{PARALLEL}} --feature-gates HPAScaleToZero=true --reconfigure-controller \
        --report target/kind-test {{ARGS}} cases

# What CI runs on kind, each on a fresh time-scaled cluster removed afterwards whatever the result:
# 1. kube-controller-manager's HPA controller: the metrics stub, the reference's API validation
#    against the API server (kind-validation), the smoke corpus;
# 2. the deployed reference (KCM's HPA controller off): the smoke corpus, least privilege from the
#    audit log, leader failover mid-case.
# Reports: target/kind-smoke-kcm/, target/kind-smoke-reference/, target/kind-rbac/, target/kind-failover/.
# On the default Kubernetes minor (1.37); KIND_K8S_VERSION=1.36 just kind-ci on another.
# The body: kind-config/scripts/kind-ci.sh.
[group('kind')]
[doc("What CI runs on kind: two fresh x5 clusters (KCM, then the deployed reference)")]
kind-ci:
    JUST={{quote(just_executable())}} kind-config/scripts/kind-ci.sh

# The reference's API validation against the running cluster's API server: every manifest of
# tests/fixtures/validation.yaml and every corpus case with expect.rejected answered the same
# ("accepted", or the 422 message word for word).
[group('kind')]
[doc("The reference's API validation vs the cluster's API server, word for word")]
kind-validation:
    KUBECONFIG={{justfile_directory()}}/.cache/kind/kubeconfig cargo test -q -p hpa-conformance-tests --test validation_kind -- --ignored --nocapture

# --- the reference controller in kind (kind-config/reference/) ---

# Build the images: hpa-reference, the metrics stub and the harness (the corpus baked in, its commit
# and fingerprint in the labels), static musl binaries FROM scratch, non-root; tagged :<binary hash>,
# :dev and :src-<inputs hash> (rebuilt only when the inputs change). Prints sizes.
[group('reference')]
[doc("Build the hpa-reference, metrics stub and harness images (static musl, FROM scratch)")]
images:
    kind-config/scripts/image.sh

# Container-level tests of the images (testcontainers, local engine, nothing pulled): the stub serves its
# three APIs over TLS, the controller runs non-root on a read-only root fs and answers /healthz, the
# harness runs its baked-in corpus on the same terms and its report names the corpus its labels name.
[group('reference')]
[doc("Container-level tests of the three images (testcontainers, nothing pulled)")]
image-test: images
    cargo test -p hpa-conformance-tests --test images -- --ignored

# Load both images into the kind cluster (KIND_CLUSTER_NAME, default hpa-conformance).
[group('reference')]
[doc("Load both images into the kind cluster")]
kind-load: images
    kind-config/scripts/kind-load.sh

# Deploy the metrics stub and the reference controller (2 replicas, leader election) onto the kind
# cluster, whose KCM must run without its HPA controller (`just kind-up cluster-x5-no-hpa.yaml` for SCALE=5).
[group('reference')]
[doc("Deploy the metrics stub and the reference controller onto a no-HPA kind cluster")]
kind-deploy SCALE="5":
    kind-config/reference/deploy.sh {{SCALE}}

# Least privilege of the deployed reference: exercise the scale kinds the corpus does not create, then
# check the API server's audit log against kind-config/reference/base/rbac.yaml (every rule used, nothing denied).
[group('reference')]
[doc("Least privilege of the deployed reference, from the API server's audit log")]
kind-rbac:
    kind-config/reference/rbac-check.sh

# The fault matrix (kind-config/faults/run.sh): on its own x5 cluster, kube-controller-manager's HPA
# controller and then the deployed reference, each through kube-apiserver and etcd restarts, APF
# throttling, watch loss (410 Gone after an etcd compaction), SIGKILL, the metrics APIs away and
# scale updates refused, injected mid-case; one table of wrong scale decisions and recovery times
# (target/kind-faults/table.txt). FAULTS: a subset; REPEAT=N runs each N times.
[group('reference')]
[doc("The fault matrix: KCM's HPA controller vs the deployed reference through cluster faults")]
kind-faults *FAULTS: engine
    kind-config/faults/run.sh {{FAULTS}}

# The fault matrix's short version (CI's): on the running x5 cluster and the controller it runs (the
# deployed reference in kind-ci), SIGKILL and refused scale updates, each judged against the case's
# run on the reference core (BASELINE=core).
[group('reference')]
[doc("The fault matrix's short version on the running cluster (CI)")]
kind-faults-ci:
    FAULTS_CLUSTER=current BASELINE=core kind-config/faults/run.sh sigkill scale-refused

# Delete the deployed reference's leader in the middle of a case: the standby takes the Lease within the
# lease duration and the case still passes with exactly two rescales (x5 cluster, after kind-deploy 5).
[group('reference')]
[doc("Delete the deployed reference's leader mid-case: the standby takes over")]
kind-failover:
    kind-config/reference/failover.sh

# --- metrics stub (metrics-stub/README.md) ---

# Build the metrics stub image hpa-conformance/metrics-stub:<binary hash> and :dev (static musl, FROM scratch).
[group('metrics stub')]
[doc("Build the metrics stub image")]
stub-image:
    kind-config/scripts/image.sh metrics-stub

# Build and load the stub into the kind cluster, apply kind-config/metrics-stub, wait for its APIServices.
[group('metrics stub')]
[doc("Deploy the metrics stub to the kind cluster and wait for its APIServices")]
kind-stub:
    kind-config/metrics-stub/deploy.sh

# End-to-end check of the deployed stub on kind: discovery, control document, KCM's HPA reads its values and errors.
[group('metrics stub')]
[doc("End-to-end check of the deployed stub on kind")]
kind-stub-verify:
    kind-config/metrics-stub/verify.sh

# --- cargo-fuzz (fuzz/) ---

# Run each cargo-fuzz target (fuzz/: the quantity parser, the case loader, the protocol decoder) for
# SECONDS (not in CI). cargo-fuzz needs nightly features: RUSTC_BOOTSTRAP=1 lends them to stable.
# Findings land in fuzz/artifacts/<target>/ (scripts/fuzz-inputs.sh).
[group('test')]
[doc("cargo-fuzz the quantity parser, case loader and protocol decoder (not in CI)")]
fuzz-inputs SECONDS="60":
    scripts/fuzz-inputs.sh {{SECONDS}}

# --- hpa-conformance inside the cluster (kind-config/in-cluster/) ---

# The harness as a Job inside the kind cluster it judges (x5, no HPA in KCM, the reference deployed:
# `just kind-up cluster-x5-no-hpa.yaml && just kind-deploy 5`): the cases of
# kind-config/in-cluster/cases.txt (or CASES), the report folder copied off the node into
# target/kind-in-cluster/ and checked, the service account's least privilege from the audit log, then
# the Job killed mid-run and `hpa-conformance cluster-clean` leaving nothing behind.
[group('kind')]
[doc("The harness as an in-cluster Job: report, least privilege, kill + cluster-clean")]
kind-in-cluster *CASES:
    kind-config/in-cluster/run.sh {{CASES}}

# hpa-conformance as a Sonobuoy plugin (kind-config/sonobuoy/hpa-conformance.yaml) on the running kind
# cluster (x SCALE, the metrics stub deployed): Sonobuoy v0.57.5 built here (CLI and image), the
# plugin run, its tarball retrieved into target/kind-sonobuoy/ and `sonobuoy results` checked against
# the harness's own report. CASES default: kind-config/in-cluster/cases.txt.
[group('kind')]
[doc("hpa-conformance as a Sonobuoy plugin on the kind cluster; results checked")]
kind-sonobuoy SCALE="5" *CASES:
    kind-config/sonobuoy/run.sh {{SCALE}} {{CASES}}
