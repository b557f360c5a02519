//! Heap allocations of the benchmarks' work, counted (figures printed, nothing asserted): per
//! decision of the decision benchmark (views in) and per reconcile from objects of the
//! core-vs-upstream benchmark, on the allocator the `hpa-conformance` binary runs on (mimalloc)
//! behind `stats_alloc`'s counter. Apart from `corpus.rs`, which times the same work: the
//! counter's atomic additions are not in what is timed. Words as `corpus.rs` takes them:
//! `decision`, `upstream` (or `core-vs-upstream`); none counts both.

mod common;

use hpa_harness::targets::{CoreSession, Session, seeded_memory};
use stats_alloc::{Region, StatsAlloc};

use common::{TickFixture, decision_fixture, decision_step, tick_fixture};

/// mimalloc, as the `hpa-conformance` binary runs it, behind a counter.
#[global_allocator]
static GLOBAL: StatsAlloc<mimalloc::MiMalloc> = StatsAlloc::new(mimalloc::MiMalloc);

/// Allocations and reallocations per run of `work`, over `runs` runs after as many to warm up
/// (the buffers a reconcile hands back serve the next); each run's input is made by `prepare`,
/// outside what is counted.
fn per_run<S>(runs: usize, mut prepare: impl FnMut() -> S, mut work: impl FnMut(S, usize)) -> f64 {
    let mut counted = 0usize;
    for i in 0..2 * runs {
        let input = prepare();
        let region = Region::new(&GLOBAL);
        work(input, i);
        let stats = region.change();
        if i >= runs {
            counted += stats.allocations + stats.reallocations;
        }
    }
    counted as f64 / runs as f64
}

fn count_decision() {
    let mut f = decision_fixture();
    let runs = 10_000;
    let mut sink = 0i64;
    let per = per_run(
        runs,
        || (),
        |(), i| sink += i64::from(decision_step(&mut f, i)),
    );
    println!(
        "allocations: decision (100 pods x 3 metrics, behavior on, views in): {per:.1} heap allocations per decision ({runs} runs; checksum {sink})"
    );
}

fn count_reconcile() {
    let TickFixture {
        case,
        settings,
        snapshot,
    } = tick_fixture();
    let fresh = CoreSession::new(settings, seeded_memory(&case));
    let runs = 5_000;
    let mut sink = 0i64;
    // As `corpus.rs` times it: each reconcile in a copy of a fresh session.
    let per = per_run(
        runs,
        || fresh.clone(),
        |mut session, _| {
            let outcome = session.tick(&snapshot).expect("core tick");
            sink += i64::from(outcome.status.desired_replicas);
        },
    );
    println!(
        "allocations: reconcile from objects (100 pods x 3 metrics, Pods and metrics API answers in): {per:.1} heap allocations per reconcile ({runs} runs; checksum {sink})"
    );
}

fn main() {
    let words = common::words();
    if common::wanted(&words, "decision") {
        count_decision();
    }
    if common::wanted(&words, "core-vs-upstream") {
        count_reconcile();
    }
}
