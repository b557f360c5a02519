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
/// (the buffers a reconcile hands back serve the next).
fn per_run(runs: usize, mut work: impl FnMut(usize)) -> f64 {
    for i in 0..runs {
        work(i);
    }
    let region = Region::new(&GLOBAL);
    for i in runs..2 * runs {
        work(i);
    }
    let stats = region.change();
    (stats.allocations + stats.reallocations) as f64 / runs as f64
}

fn count_decision() {
    let mut f = decision_fixture();
    let runs = 10_000;
    let mut sink = 0i64;
    let per = per_run(runs, |i| sink += i64::from(decision_step(&mut f, i)));
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
    // As `corpus.rs` times it: each reconcile in a copy of a fresh session, made (and dropped)
    // outside what is counted; the first `runs` warm the buffers a reconcile hands back.
    let mut counted = 0usize;
    for i in 0..2 * runs {
        let mut session = fresh.clone();
        let region = Region::new(&GLOBAL);
        let outcome = session.tick(&snapshot).expect("core tick");
        let stats = region.change();
        if i >= runs {
            counted += stats.allocations + stats.reallocations;
        }
        sink += i64::from(outcome.status.desired_replicas);
    }
    let per = counted as f64 / runs as f64;
    println!(
        "allocations: reconcile from objects (100 pods x 3 metrics, Pods and metrics API answers in): {per:.1} heap allocations per reconcile ({runs} runs; checksum {sink})"
    );
}

fn main() {
    let words: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| words.is_empty() || words.iter().any(|w| name.contains(w.as_str()));
    if wanted("decision") {
        count_decision();
    }
    if wanted("core-vs-upstream") {
        count_reconcile();
    }
}
