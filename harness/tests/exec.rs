//! The `exec:` target and the step protocol, end to end with `hpa-step-reference` (the reference
//! core behind the protocol): every corpus case gives the same trace as the in-process core, and a
//! crashing, hanging, garbage-speaking or gate-mismatched implementation fails (or skips) only its
//! own case, with a diagnostic.

use std::path::PathBuf;
use std::time::Duration;

use hpa_harness::cli::{load_all, make_target};
use hpa_harness::runner::{CaseResult, Outcome, RunOptions, run_case};
use hpa_harness::target::CoreTarget;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn step_reference(flags: &str) -> String {
    format!("exec:{} {flags}", env!("CARGO_BIN_EXE_hpa-step-reference"))
}

#[test]
fn every_case_gives_the_same_trace_through_the_protocol_as_in_process() {
    let (cases, bad) = load_all(&[root().join("cases")]);
    assert!(bad.is_empty(), "{bad:?}");
    assert!(!cases.is_empty());
    let exec = make_target(&step_reference(""), Duration::from_secs(30)).expect("target");
    let opts = RunOptions::default();
    for case in &cases {
        let core = run_case(case, &CoreTarget, &opts);
        let other = run_case(case, exec.as_ref(), &opts);
        assert_eq!(other.outcome, core.outcome, "{}", case.name());
        assert_eq!(core.trace.len(), other.trace.len(), "{}", case.name());
        for (a, b) in core.trace.iter().zip(&other.trace) {
            let mut a = a.clone();
            a.why = None;
            assert_eq!(&a, b, "{} at t={}", case.name(), a.t);
        }
    }
}

fn run_two(flags: &str, timeout: u64) -> Vec<CaseResult> {
    let (cases, bad) = load_all(&[
        root().join("cases/behavior/policy-walkdown.yaml"),
        root().join("tests/fixtures/gated/tolerance-needs-gate.yaml"),
    ]);
    assert!(bad.is_empty());
    let target = make_target(&step_reference(flags), Duration::from_secs(timeout)).expect("target");
    cases
        .iter()
        .map(|c| run_case(c, target.as_ref(), &RunOptions::default()))
        .collect()
}

fn errored(r: &CaseResult) -> &str {
    match &r.outcome {
        Outcome::Errored(e) => e,
        other => panic!("{} should have errored, got {other:?}", r.name),
    }
}

#[test]
fn a_crash_fails_that_case_with_its_stderr_and_the_run_goes_on() {
    let results = run_two("--crash-at 60", 30);
    let e = errored(&results[0]);
    assert!(
        e.starts_with("at t=60: the implementation closed its stdout before answering"),
        "{e}"
    );
    assert!(e.contains("crashing at t=60 as asked"), "{e}");
    assert_eq!(results[0].trace.len(), 4, "ticks 0..45 were recorded");
    assert_eq!(
        results[1].outcome,
        Outcome::Passed,
        "the next case still runs"
    );
}

#[test]
fn garbage_fails_that_case_with_the_line_shown() {
    for r in &run_two("--garbage-at 15", 30) {
        let e = errored(r);
        assert!(
            e.starts_with("at t=15: answered something that is not a protocol message"),
            "{e}"
        );
        assert!(e.contains("\"this is not JSON\""), "{e}");
    }
}

#[test]
fn a_hang_fails_that_case_after_the_step_timeout() {
    let started = std::time::Instant::now();
    for r in &run_two("--hang-at 0", 1) {
        let e = errored(r);
        assert!(e.starts_with("at t=0: no answer within 1 s"), "{e}");
        assert!(e.contains("hanging at t=0 as asked"), "{e}");
    }
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn an_implementation_that_cannot_take_the_gates_skips_the_case_with_the_reason() {
    let results = run_two("--gates-fixed HPAConfigurableTolerance=false", 30);
    assert_eq!(
        results[1].outcome,
        Outcome::Skipped(
            "hpa-step-reference 0.1.0 cannot run with feature gates HPAConfigurableTolerance=true (runs with false)"
                .into()
        )
    );
}

#[test]
fn a_missing_program_fails_with_a_clear_message() {
    let (cases, _) = load_all(&[root().join("tests/fixtures/gated/tolerance-needs-gate.yaml")]);
    let target =
        make_target("exec:/nonexistent/implementation", Duration::from_secs(5)).expect("target");
    let r = run_case(&cases[0], target.as_ref(), &RunOptions::default());
    assert_eq!(
        r.outcome,
        Outcome::Errored(
            "cannot start \"/nonexistent/implementation\": No such file or directory (os error 2)"
                .into()
        )
    );
}
