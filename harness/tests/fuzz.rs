//! Differential fuzzing: random scenarios through the protocol agree with the in-process core,
//! and a planted difference is found, shrunk and written as a loadable regression case.

use std::path::PathBuf;
use std::time::Duration;

use hpa_harness::case::Case;
use hpa_harness::fuzz::{Rng, fuzz, generate, to_case};
use hpa_harness::run::{Outcome, RunOptions, run_case};
use hpa_harness::targets::make_target;
use hpa_harness::targets::{CoreTarget, GateSupport, Session, Target, TargetError, TickOutcome};
use hpa_harness::world::Snapshot;
use hpa_reference::Settings;

#[test]
fn generated_scenarios_are_valid_cases_and_deterministic() {
    for i in 0..300 {
        let a = generate("g", &mut Rng::new(i));
        let b = generate("g", &mut Rng::new(i));
        let text_a = hpa_harness::util::yaml::to_string(&a).expect("yaml");
        assert_eq!(
            text_a,
            hpa_harness::util::yaml::to_string(&b).expect("yaml")
        );
        to_case(&a).unwrap_or_else(|e| panic!("scenario {i} rejected: {e}\n{text_a}"));
    }
}

#[test]
fn random_scenarios_agree_through_the_step_protocol() {
    let exec = make_target(
        &format!("exec:{}", env!("CARGO_BIN_EXE_hpa-step-reference")),
        Duration::from_secs(30),
    )
    .expect("target");
    let out = std::env::temp_dir().join(format!("fuzz-agree-{}", std::process::id()));
    let report = fuzz(&CoreTarget, exec.as_ref(), 11, 25, &out, true).expect("fuzz");
    assert_eq!(report.scenarios, 25);
    assert!(report.differences.is_empty(), "{:?}", report.differences);
}

/// The core, except that it reports one replica too many in `status.desiredReplicas` after a
/// scale-down: a planted difference for the shrinker to find.
struct Skewed;

struct SkewedSession(Box<dyn Session>);

impl Session for SkewedSession {
    fn tick(&mut self, s: &Snapshot) -> Result<TickOutcome, TargetError> {
        let mut o = self.0.tick(s)?;
        let before = s
            .scale
            .as_ref()
            .ok()
            .and_then(|x| x.spec.as_ref())
            .and_then(|x| x.replicas);
        if let (Some(n), Some(b)) = (o.scaled_to, before)
            && n < b
        {
            o.status.desired_replicas += 1;
        }
        Ok(o)
    }
}

impl Target for Skewed {
    fn name(&self) -> String {
        "skewed".into()
    }
    fn gate_support(&self) -> GateSupport {
        GateSupport::PerCase
    }
    fn start(&self, case: &Case, settings: &Settings) -> Result<Box<dyn Session>, TargetError> {
        Ok(Box::new(SkewedSession(CoreTarget.start(case, settings)?)))
    }
}

#[test]
fn a_planted_difference_is_found_shrunk_and_written_as_a_case() {
    let out: PathBuf = std::env::temp_dir().join(format!("fuzz-shrink-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let report = fuzz(&CoreTarget, &Skewed, 5, 500, &out, false).expect("fuzz");
    assert_eq!(
        report.differences.len(),
        1,
        "the planted difference is found"
    );
    let path = &report.differences[0];
    let case = hpa_harness::case::load_case(path).expect("the written case loads");
    assert!(
        case.file.timeline.len() <= 3,
        "shrunk: {:?}",
        case.file.timeline
    );
    assert!(case.file.hpa.spec.metrics.as_ref().map_or(0, Vec::len) <= 1);
    // With the core as truth the written case passes on the core and fails on the skewed target.
    assert_eq!(
        run_case(&case, &CoreTarget, &RunOptions::default()).outcome,
        Outcome::Passed
    );
    assert!(matches!(
        run_case(&case, &Skewed, &RunOptions::default()).outcome,
        Outcome::Failed(_)
    ));
    let _ = std::fs::remove_dir_all(&out);
}

/// The core, except that every other session (the 1st, 3rd, …) answers one desired replica too
/// many from its first tick on: a difference that does not reproduce on a re-run, like a timeout
/// under load.
struct Flaky(std::sync::atomic::AtomicUsize);

impl Target for Flaky {
    fn name(&self) -> String {
        "flaky".into()
    }
    fn gate_support(&self) -> GateSupport {
        GateSupport::PerCase
    }
    fn start(&self, case: &Case, settings: &Settings) -> Result<Box<dyn Session>, TargetError> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let inner = CoreTarget.start(case, settings)?;
        if n.is_multiple_of(2) {
            Ok(Box::new(SkewAll(inner)))
        } else {
            Ok(inner)
        }
    }
}

struct SkewAll(Box<dyn Session>);

impl Session for SkewAll {
    fn tick(&mut self, s: &Snapshot) -> Result<TickOutcome, TargetError> {
        let mut o = self.0.tick(s)?;
        o.status.desired_replicas += 1;
        Ok(o)
    }
}

#[test]
fn a_difference_that_does_not_reproduce_is_reported_flaky_with_both_traces() {
    let out: PathBuf = std::env::temp_dir().join(format!("fuzz-flaky-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    // Sessions alternate between skewed and faithful (the preflight's start counts too), so the
    // re-run of a difference does not show it again.
    let flaky = Flaky(std::sync::atomic::AtomicUsize::new(1));
    let report = fuzz(&CoreTarget, &flaky, 3, 4, &out, true).expect("fuzz");
    assert!(report.differences.is_empty(), "{:?}", report.differences);
    assert!(!report.flaky.is_empty(), "the flaky difference is reported");
    let folder = &report.flaky[0];
    for f in [
        "scenario.yaml",
        "summary.txt",
        "run1-a.json",
        "run1-b.json",
        "run2-b.json",
    ] {
        assert!(
            folder.join(f).is_file(),
            "{f} written in {}",
            folder.display()
        );
    }
    let summary = std::fs::read_to_string(folder.join("summary.txt")).unwrap();
    assert!(summary.contains("run 1: t=0"), "{summary}");
    assert!(summary.contains("run 2: no difference"), "{summary}");
    // The scenario loads as a case.
    hpa_harness::case::load_case(&folder.join("scenario.yaml")).expect("scenario loads");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn fuzz_never_overwrites_a_case_and_a_target_that_cannot_start_is_an_error() {
    let out: PathBuf =
        std::env::temp_dir().join(format!("fuzz-nooverwrite-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    // The planted difference of seed 5 is written as fuzz-5-<i>.yaml; occupy every such name.
    for i in 0..500 {
        std::fs::write(out.join(format!("fuzz-5-{i}.yaml")), "keep me").unwrap();
    }
    let report = fuzz(&CoreTarget, &Skewed, 5, 500, &out, false).expect("fuzz");
    let written = &report.differences[0];
    assert!(
        written
            .file_name()
            .unwrap()
            .to_string_lossy()
            .ends_with("-2.yaml"),
        "{}",
        written.display()
    );
    for i in 0..500 {
        assert_eq!(
            std::fs::read_to_string(out.join(format!("fuzz-5-{i}.yaml"))).unwrap(),
            "keep me"
        );
    }
    let _ = std::fs::remove_dir_all(&out);

    let missing = make_target(
        "exec:/nonexistent/hpa-implementation",
        Duration::from_secs(5),
    )
    .expect("target");
    let e = fuzz(&CoreTarget, missing.as_ref(), 1, 10, &out, true).unwrap_err();
    assert!(
        matches!(e, hpa_harness::fuzz::FuzzError::TargetUnusable { .. }),
        "{e}"
    );
    assert!(e.to_string().contains("cannot start"), "{e}");
    assert!(!out.exists(), "nothing written for an unusable target");
}

/// The core, except that sessions whose number `crash(n)` picks fail their first tick, as a
/// process that dies or times out would (session 0 is the preflight's).
struct Crashing(std::sync::atomic::AtomicUsize, fn(usize) -> bool);

impl Target for Crashing {
    fn name(&self) -> String {
        "crashing".into()
    }
    fn gate_support(&self) -> GateSupport {
        GateSupport::PerCase
    }
    fn start(&self, case: &Case, settings: &Settings) -> Result<Box<dyn Session>, TargetError> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let inner = CoreTarget.start(case, settings)?;
        if (self.1)(n) {
            Ok(Box::new(Dies))
        } else {
            Ok(inner)
        }
    }
}

struct Dies;

impl Session for Dies {
    fn tick(&mut self, _: &Snapshot) -> Result<TickOutcome, TargetError> {
        Err(TargetError::failed("the implementation exited (signal 9)"))
    }
}

#[test]
fn a_target_that_fails_to_run_is_a_target_failure_or_flaky_never_a_shrunk_difference() {
    let out: PathBuf = std::env::temp_dir().join(format!("fuzz-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);

    // Once (the first scenario's first run), not on the re-runs: flaky, with the reason.
    let once = Crashing(std::sync::atomic::AtomicUsize::new(0), |n| n == 1);
    let report = fuzz(&CoreTarget, &once, 5, 3, &out, true).expect("fuzz");
    assert!(report.differences.is_empty(), "{:?}", report.differences);
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.flaky.len(), 1, "{:?}", report.flaky);
    let summary = std::fs::read_to_string(report.flaky[0].join("summary.txt")).unwrap();
    assert!(
        summary.contains("run 1: crashing failed:") && summary.contains("signal 9"),
        "{summary}"
    );
    assert!(summary.contains("run 2: no difference"), "{summary}");

    // Every time: a target failure (the run fails), reported with the scenario, not shrunk.
    let always = Crashing(std::sync::atomic::AtomicUsize::new(0), |n| n > 0);
    let report = fuzz(&CoreTarget, &always, 5, 2, &out, true).expect("fuzz");
    assert!(report.differences.is_empty(), "{:?}", report.differences);
    assert_eq!(report.failures.len(), 2, "{:?}", report.failures);
    let folder = &report.failures[0];
    assert!(
        folder.starts_with(out.join("failures")),
        "{}",
        folder.display()
    );
    hpa_harness::case::load_case(&folder.join("scenario.yaml")).expect("scenario loads");
    let summary = std::fs::read_to_string(folder.join("summary.txt")).unwrap();
    assert!(
        summary.contains("failed to run this scenario on every try"),
        "{summary}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// Fuzzes core against [`Skewed`] (seed 5, 500 scenarios) on `jobs` threads, in lockstep or
/// not: the scenarios run, how many ran separately, and the one shrunk difference's file name and
/// text.
fn skewed_difference(jobs: usize, lockstep: bool) -> (usize, usize, String, String) {
    let out: PathBuf = std::env::temp_dir().join(format!(
        "fuzz-skewed-{jobs}-{lockstep}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&out);
    let report = hpa_harness::fuzz::fuzz_jobs_with(
        &CoreTarget,
        &Skewed,
        5,
        500,
        &out,
        false,
        &RunOptions::default(),
        jobs,
        lockstep,
    )
    .expect("fuzz");
    assert_eq!(report.differences.len(), 1);
    let path = &report.differences[0];
    let text = std::fs::read_to_string(path).expect("written");
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let _ = std::fs::remove_dir_all(&out);
    (report.scenarios, report.separate_runs, name, text)
}

#[test]
fn parallel_fuzzing_finds_and_writes_exactly_what_serial_fuzzing_does() {
    assert_eq!(skewed_difference(3, true), skewed_difference(1, true));
}

#[test]
fn lockstep_fuzzing_finds_and_writes_exactly_what_separate_runs_do() {
    let (scenarios, separate, name, text) = skewed_difference(2, false);
    assert_eq!(separate, scenarios, "every scenario ran separately");
    let (l_scenarios, l_separate, l_name, l_text) = skewed_difference(2, true);
    assert_eq!((l_scenarios, &l_name, &l_text), (scenarios, &name, &text));
    assert!(
        l_separate < scenarios,
        "lockstep decided some scenarios: {l_separate} of {scenarios} ran separately"
    );

    // Two targets that always agree: every scenario is decided in lockstep.
    let out: PathBuf =
        std::env::temp_dir().join(format!("fuzz-lockstep-same-{}", std::process::id()));
    let report = hpa_harness::fuzz::fuzz_jobs(
        &CoreTarget,
        &CoreTarget,
        9,
        40,
        &out,
        false,
        &RunOptions::default(),
        2,
    )
    .expect("fuzz");
    assert_eq!(report.scenarios, 40);
    assert_eq!(report.separate_runs, 0);
    assert!(report.differences.is_empty() && report.flaky.is_empty());
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn parallel_fuzzing_agrees_with_a_kept_implementation_process_and_still_reports_flakes() {
    let exec = make_target(
        &format!(
            "exec:{} --many-cases",
            env!("CARGO_BIN_EXE_hpa-step-reference")
        ),
        Duration::from_secs(30),
    )
    .expect("target");
    let out = std::env::temp_dir().join(format!("fuzz-agree-many-{}", std::process::id()));
    let report = hpa_harness::fuzz::fuzz_jobs(
        &CoreTarget,
        exec.as_ref(),
        11,
        60,
        &out,
        true,
        &RunOptions::default(),
        2,
    )
    .expect("fuzz");
    assert_eq!(report.scenarios, 60);
    assert!(report.differences.is_empty(), "{:?}", report.differences);
    assert!(report.flaky.is_empty() && report.failures.is_empty());

    // A difference that does not reproduce is still flaky, never a difference, with jobs.
    let out: PathBuf = std::env::temp_dir().join(format!("fuzz-flaky-jobs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let once = Crashing(std::sync::atomic::AtomicUsize::new(0), |n| n == 1);
    let report = hpa_harness::fuzz::fuzz_jobs(
        &CoreTarget,
        &once,
        5,
        6,
        &out,
        true,
        &RunOptions::default(),
        2,
    )
    .expect("fuzz");
    assert!(report.differences.is_empty(), "{:?}", report.differences);
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.flaky.len(), 1, "{:?}", report.flaky);
    let _ = std::fs::remove_dir_all(&out);
}
