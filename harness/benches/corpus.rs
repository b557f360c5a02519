//! Benchmarks (figures printed, nothing asserted): the wall time of the whole corpus on the
//! in-process target, and the time of one decision for an HPA with 100 pods and 3 metrics, behavior
//! on, with a full recommendation and scale-event history. Timed on the allocator the
//! `hpa-conformance` binary runs on (mimalloc), with nothing in front of it: the heap allocations
//! of the same work are counted apart, by `allocations.rs`. `decision-loop N` runs N decisions
//! untimed for callgrind (`just bench callgrind`).

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use hpa_harness::case::corpus::load_all;
use hpa_harness::fuzz::fuzz;
use hpa_harness::protocol::{
    PROTOCOL_VERSION, ProtocolMemory, ProtocolSettings, Start, Tick, ToImplementation,
};
use hpa_harness::run::{RunOptions, run_case};
use hpa_harness::targets::make_target;
use hpa_harness::targets::{CoreSession, CoreTarget, Session, seeded_memory};

use common::{TickFixture, decision_fixture, decision_step, tick_fixture};

/// The allocator the `hpa-conformance` binary runs on, as it runs it: a counter in front of it
/// (`stats_alloc`'s four atomic additions per allocation and free) cost ~28 ns a pair here, ~5 % of
/// a reconcile from objects, which no shipped binary pays.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn bench_corpus() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../cases");
    let (cases, bad) = load_all(&[root]);
    assert!(bad.is_empty(), "the corpus must load: {bad:?}");
    let opts = RunOptions::default();
    let mut times = Vec::new();
    let mut ticks = 0;
    for _ in 0..20 {
        let start = Instant::now();
        ticks = 0;
        for c in &cases {
            ticks += run_case(c, &CoreTarget, &opts).trace.len();
        }
        times.push(start.elapsed());
    }
    let min = *times.iter().min().expect("runs");
    println!(
        "corpus: {} cases, {} ticks on the core target: median {:.2} ms, min {:.2} ms (20 runs)",
        cases.len(),
        ticks,
        median(times).as_secs_f64() * 1e3,
        min.as_secs_f64() * 1e3
    );
}

fn bench_decision() {
    let mut f = decision_fixture();
    let iterations = 20_000;
    let mut samples_ns = Vec::with_capacity(iterations);
    let mut sink = 0i64;
    for i in 0..iterations {
        let start = Instant::now();
        let desired = decision_step(&mut f, i);
        samples_ns.push(start.elapsed());
        sink += i64::from(desired);
    }
    let min = *samples_ns.iter().min().expect("runs");
    println!(
        "decision: 100 pods x 3 metrics, behavior on, {} recommendations, {}+{} scale events: median {:.2} µs, min {:.2} µs ({iterations} runs; checksum {sink})",
        f.memory.recommendations.as_ref().map_or(0, Vec::len),
        f.memory.scale_up_events.len(),
        f.memory.scale_down_events.len(),
        median(samples_ns).as_secs_f64() * 1e6,
        min.as_secs_f64() * 1e6,
    );
}

/// `decision-loop N`: N decisions of the decision benchmark, untimed, for an instruction count
/// under callgrind (`just bench callgrind` subtracts the count of `decision-loop 0`).
fn decision_loop(n: usize) {
    let mut f = decision_fixture();
    let mut sink = 0i64;
    for i in 0..n {
        sink += i64::from(decision_step(&mut f, i));
    }
    println!("decision-loop: {n} decisions (checksum {sink})");
}

/// `tick-loop N`: N reconciles from objects of the core-vs-upstream benchmark, untimed, for an
/// instruction count under callgrind (`just bench callgrind` subtracts the count of
/// `tick-loop 0`).
fn tick_loop(n: usize) {
    let f = tick_fixture();
    let fresh = CoreSession::new(f.settings.clone(), seeded_memory(&f.case));
    let mut sink = 0i64;
    for _ in 0..n {
        let mut session = fresh.clone();
        let outcome = session.tick(&f.snapshot).expect("core tick");
        sink += i64::from(outcome.status.desired_replicas);
    }
    println!("tick-loop: {n} reconciles (checksum {sink})");
}

/// The reference core and upstream's controller (through its adapter's timing mode) on the same
/// tick: objects and metrics API answers in, decision out. The two are timed in turns — five
/// rounds of 1,000 reconciles on the core, then 400 on upstream in an adapter process of their
/// own — so that both sides of the ratio see the machine as it is in the same minute (on a VM
/// whose speed drifts from one run to the next, two phases timed apart measured the drift); each
/// round's ratio is printed beside the whole's. Both run on one CPU ([`OneCpu`]): on a VM whose
/// two virtual CPUs are not equally fast at a given moment, a thread timed on one and a process
/// timed on the other compared the CPUs as much as the code.
fn bench_core_vs_upstream() {
    let pinned = OneCpu::pin();
    println!("core vs upstream: {}", pinned.describe());
    let TickFixture {
        case,
        settings,
        snapshot,
    } = tick_fixture();
    let fresh = CoreSession::new(settings.clone(), seeded_memory(&case));
    let adapter = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../adapters/upstream/bin/hpa-upstream-adapter");
    let mut input = String::new();
    if adapter.exists() {
        let start = ToImplementation::Start(Start {
            protocol: PROTOCOL_VERSION,
            case: case.name().to_string(),
            feature_gates: settings
                .gates
                .iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            settings: ProtocolSettings::from_settings(&settings),
            memory: ProtocolMemory::from_memory(&seeded_memory(&case)),
            report_memory: false,
            unwritten_status: false,
        });
        let tick = ToImplementation::Tick(Box::new(Tick::from_snapshot(&snapshot)));
        input = serde_json::to_string(&start).expect("json");
        input.push('\n');
        input.push_str(&serde_json::to_string(&tick).expect("json"));
        input.push('\n');
    }
    let (rounds, core_per_round, upstream_per_round) = (5, 1_000, 400);
    let mut times = Vec::with_capacity(rounds * core_per_round);
    let mut upstream = Vec::new();
    let mut per_round = Vec::new();
    for round in 0..rounds {
        let first = times.len();
        for _ in 0..core_per_round {
            let mut session = fresh.clone();
            let start = Instant::now();
            let outcome = session.tick(&snapshot).expect("core tick");
            times.push(start.elapsed());
            std::hint::black_box(outcome);
        }
        let core_ns = mean_ns(&times[first..]);
        if input.is_empty() {
            continue;
        }
        match upstream_reconcile(&adapter, &input, upstream_per_round) {
            Ok((ns, name, version)) => {
                println!(
                    "  round {}: core mean {:.1} µs, upstream {name} {version} mean {:.1} µs: {:.1}x",
                    round + 1,
                    core_ns / 1e3,
                    ns / 1e3,
                    ns / core_ns
                );
                upstream.push(ns);
                per_round.push(ns / core_ns);
            }
            Err(e) => {
                println!("  upstream: no timing ({e})");
                input.clear();
            }
        }
    }
    let core_ns = mean_ns(&times);
    println!(
        "core vs upstream, one reconcile of 100 pods x 3 metrics (objects in, decision out): core mean {:.1} µs (median {:.1} µs)",
        core_ns / 1e3,
        median(times.clone()).as_secs_f64() * 1e6,
    );
    if !adapter.exists() {
        println!("  upstream: adapter not built (run `just upstream`), no comparison");
        return;
    }
    if upstream.is_empty() {
        return;
    }
    let up_ns = upstream.iter().sum::<f64>() / upstream.len() as f64;
    per_round.sort_by(f64::total_cmp);
    println!(
        "  upstream: mean {:.1} µs over {} reconciles in {} rounds (includes its fake clients' calls); upstream / core = {:.1}x (rounds {:.1}x … {:.1}x)",
        up_ns / 1e3,
        upstream.len() * upstream_per_round,
        upstream.len(),
        up_ns / core_ns,
        per_round[0],
        per_round[per_round.len() - 1],
    );
}

/// This thread (and the processes it starts) held to one CPU with `taskset` for as long as the
/// value lives, then given back the CPUs it had; a machine without `taskset` runs unpinned.
struct OneCpu {
    /// The CPU list before (`taskset`'s form, e.g. `0,1`) and the CPU pinned to, when pinned.
    pinned: Result<(String, String), String>,
}

impl OneCpu {
    fn pin() -> OneCpu {
        let pid = std::process::id().to_string();
        let run = |args: &[&str]| -> Result<String, String> {
            let out = std::process::Command::new("taskset")
                .args(args)
                .output()
                .map_err(|e| format!("taskset: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "taskset {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        };
        let pinned = run(&["-cp", &pid]).and_then(|text| {
            // "pid 123's current affinity list: 0,1"
            let list = text
                .rsplit(':')
                .next()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .ok_or_else(|| format!("taskset said {text:?}"))?
                .to_string();
            let last = list
                .rsplit(',')
                .next()
                .and_then(|r| r.rsplit('-').next())
                .unwrap_or(&list)
                .to_string();
            run(&["-cp", &last, &pid])?;
            Ok((list, last))
        });
        OneCpu { pinned }
    }

    fn describe(&self) -> String {
        match &self.pinned {
            Ok((_, cpu)) => format!("both on CPU {cpu} (taskset), in turns"),
            Err(e) => format!("not pinned ({e}), in turns"),
        }
    }
}

impl Drop for OneCpu {
    fn drop(&mut self) {
        if let Ok((list, _)) = &self.pinned {
            let _ = std::process::Command::new("taskset")
                .args(["-cp", list, &std::process::id().to_string()])
                .output();
        }
    }
}

/// The mean of `times`, in nanoseconds.
fn mean_ns(times: &[Duration]) -> f64 {
    times.iter().map(Duration::as_nanos).sum::<u128>() as f64 / times.len().max(1) as f64
}

/// Upstream's reconcile of the tick in `input` (a `start` and a `tick` line), `n` times in an
/// adapter process of its own (`--bench-reconcile`): the mean in nanoseconds, the
/// implementation's name and its Kubernetes version.
fn upstream_reconcile(
    adapter: &std::path::Path,
    input: &str,
    n: usize,
) -> Result<(f64, String, String), String> {
    use std::io::Write;
    let mut child = std::process::Command::new(adapter)
        .arg(format!("--bench-reconcile={n}"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("start the adapter: {e}"))?;
    child
        .stdin
        .take()
        .ok_or("no stdin")?
        .write_all(input.as_bytes())
        .map_err(|e| format!("write: {e}"))?;
    let out = child
        .wait_with_output()
        .map_err(|e| format!("adapter output: {e}"))?;
    let reply: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}; exit {}", out.status))?;
    let ns = reply["nsPerOp"]
        .as_f64()
        .ok_or_else(|| format!("no nsPerOp in {reply}"))?;
    let field = |k: &str| reply[k].as_str().unwrap_or("?").to_string();
    Ok((ns, field("implementation"), field("version")))
}

/// The upstream adapter, when it is built (`just upstream`).
fn upstream_adapter() -> Option<PathBuf> {
    let adapter = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../adapters/upstream/bin/hpa-upstream-adapter");
    if adapter.exists() {
        Some(adapter)
    } else {
        println!("  upstream: adapter not built (run `just upstream`), no figure");
        None
    }
}

/// CPU seconds (user + system) used so far by this process and by its children that have been
/// waited for (`None` where there is no /proc): `bench_fuzz` splits a batch's CPU between the
/// harness (with the in-process core) and the implementation's processes with it.
fn cpu_seconds() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    hpa_harness::cluster::scale::stat_cpu_seconds(&stat).ok()
}

/// Differential fuzzing throughput: scenarios per second, core vs core, and core vs upstream
/// (when the adapter is built) as `fuzz` runs it — processes kept between cases (`manyCases`),
/// delta ticks (`deltaTicks`, `deltaMetrics`, `deltaPods`; results without an unwritten status),
/// one job per core — without delta ticks (`--full-ticks`: none of the three), and as before
/// both: one process per case, one job.
fn bench_fuzz() {
    let dir = std::env::temp_dir().join(format!("hpa-bench-fuzz-{}", std::process::id()));
    let report = fuzz(&CoreTarget, &CoreTarget, 1, 300, &dir, true).expect("fuzz");
    println!(
        "fuzz: core vs core {} scenarios: {:.0} scenarios/s",
        report.scenarios,
        report.scenarios as f64 / report.elapsed.as_secs_f64()
    );
    let Some(adapter) = upstream_adapter() else {
        return;
    };
    let jobs = hpa_harness::util::parallel::default_jobs();
    fuzz_as_shipped(&adapter, jobs, 1000, &dir);
    for (flags, jobs, count, how) in [
        ("", jobs, 1000, "kept processes, delta ticks"),
        ("--full-ticks", jobs, 1000, "kept processes, complete ticks"),
        (
            "--one-case-per-process --full-ticks",
            1,
            100,
            "a process per case, complete ticks",
        ),
    ] {
        let before = cpu_seconds();
        let upstream = make_target(
            &format!("exec:{} {flags}", adapter.display()),
            Duration::from_secs(60),
        )
        .expect("target");
        let report = hpa_harness::fuzz::fuzz_jobs(
            &CoreTarget,
            upstream.as_ref(),
            1,
            count,
            &dir,
            true,
            &RunOptions::default(),
            jobs,
        )
        .expect("fuzz");
        println!(
            "fuzz: core vs upstream {} scenarios, {how}, {jobs} jobs: {:.1} scenarios/s ({} differences, {} flaky)",
            report.scenarios,
            report.scenarios as f64 / report.elapsed.as_secs_f64(),
            report.differences.len(),
            report.flaky.len()
        );
        // The adapter's processes are waited for when the target is dropped: only then does
        // their CPU count among the children's.
        drop(upstream);
        if let (Some((h0, c0)), Some((h1, c1))) = (before, cpu_seconds()) {
            let n = report.scenarios.max(1) as f64;
            let (harness, adapter) = ((h1 - h0) * 1e3 / n, (c1 - c0) * 1e3 / n);
            println!(
                "      CPU per scenario: harness (with the core) {harness:.1} ms, upstream adapter {adapter:.1} ms ({:.0} % adapter); at 100 % of {jobs} cores that is at most {:.0} scenarios/s",
                100.0 * adapter / (harness + adapter),
                jobs as f64 * 1e3 / (harness + adapter)
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `hpa-conformance fuzz` against upstream as a user runs it: the shipped binary (Cargo builds it
/// for the benchmark) with its own allocator, in a process of its own, the same 1,000 scenarios of
/// seed 1 as below. The runs below fuzz inside this benchmark's process, whose global allocator
/// (the binary's, behind a counter of every allocation for the decision benchmark) makes the
/// harness's side a little dearer than in the binary; they split the CPU between the harness and
/// the adapter, which this one cannot
/// (the binary's CPU and its adapters' are counted together once it has waited for them). A
/// difference it finds goes to `out`, as the runs below write theirs, not into the corpus.
fn fuzz_as_shipped(adapter: &std::path::Path, jobs: usize, count: usize, out: &std::path::Path) {
    let before = cpu_seconds();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_hpa-conformance"))
        .args(["fuzz", "--b", &format!("exec:{}", adapter.display())])
        .args(["--count", &count.to_string(), "--seed", "1"])
        .args(["--jobs", &jobs.to_string()])
        .arg("--out")
        .arg(out)
        .output()
        .expect("hpa-conformance fuzz");
    let text = String::from_utf8_lossy(&output.stdout);
    let summary = text
        .lines()
        .find(|l| l.starts_with("fuzz: ") && l.contains("scenarios/s"))
        .unwrap_or_else(|| {
            panic!(
                "no summary from hpa-conformance fuzz ({}): {text}",
                output.status
            )
        });
    let field = |after: &str| -> &str {
        summary
            .split(after)
            .next()
            .and_then(|head| head.rsplit([' ', '(']).next())
            .unwrap_or("?")
    };
    println!(
        "fuzz: core vs upstream {count} scenarios as `hpa-conformance fuzz` runs them (kept processes, delta ticks, {jobs} jobs): {} scenarios/s ({} differences)",
        field(" scenarios/s"),
        field(" differences"),
    );
    if let (Some((h0, c0)), Some((h1, c1))) = (before, cpu_seconds()) {
        let total = ((h1 - h0) + (c1 - c0)) * 1e3 / count as f64;
        println!(
            "      CPU per scenario: {total:.1} ms, the binary and its adapter processes together; at 100 % of {jobs} cores that is at most {:.0} scenarios/s",
            jobs as f64 * 1e3 / total
        );
    }
}

/// The corpus on upstream's controller through its adapter (`just upstream-corpus`): wall time
/// as `run` takes it — processes kept between cases, one job per core — and as before: one
/// process per case, one job.
fn bench_upstream_corpus() {
    let Some(adapter) = upstream_adapter() else {
        return;
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../cases");
    let (cases, bad) = load_all(&[root]);
    assert!(bad.is_empty(), "the corpus must load: {bad:?}");
    let opts = RunOptions::default();
    let jobs = hpa_harness::util::parallel::default_jobs();
    for (flags, jobs, how) in [
        ("", jobs, "kept processes, delta ticks"),
        ("--full-ticks", jobs, "kept processes, complete ticks"),
        (
            "--one-case-per-process --full-ticks",
            1,
            "a process per case, complete ticks",
        ),
    ] {
        let upstream = make_target(
            &format!("exec:{} {flags}", adapter.display()),
            Duration::from_secs(60),
        )
        .expect("target");
        let start = Instant::now();
        let results = hpa_harness::util::parallel::map_ordered(&cases, jobs, |c| {
            run_case(c, upstream.as_ref(), &opts)
        });
        let wall = start.elapsed();
        let passed = results.iter().filter(|r| r.passed()).count();
        println!(
            "upstream corpus: {} cases on upstream's controller, {how}, {jobs} jobs: {:.2} s ({passed} passed)",
            cases.len(),
            wall.as_secs_f64()
        );
    }
}

fn main() {
    // `cargo bench -p hpa-harness --bench corpus -- decision` runs only the benchmarks whose names
    // contain one of the given words (corpus, decision, upstream, fuzz); no word runs them all.
    // `upstream-corpus` is the corpus on upstream (also run by `corpus` and `upstream`).
    let words = common::words();
    if words.first().map(String::as_str) == Some("decision-loop") {
        let n = words.get(1).and_then(|n| n.parse().ok()).unwrap_or(1000);
        decision_loop(n);
        return;
    }
    if words.first().map(String::as_str) == Some("tick-loop") {
        let n = words.get(1).and_then(|n| n.parse().ok()).unwrap_or(1000);
        tick_loop(n);
        return;
    }
    let benches: [(&str, fn()); 5] = [
        ("corpus", bench_corpus),
        ("decision", bench_decision),
        ("core-vs-upstream", bench_core_vs_upstream),
        ("upstream-corpus", bench_upstream_corpus),
        ("fuzz", bench_fuzz),
    ];
    for (name, bench) in benches {
        if common::wanted(&words, name) {
            bench();
        }
    }
}
