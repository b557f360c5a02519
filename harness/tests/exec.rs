//! The `exec:` target and the step protocol, end to end with `hpa-step-reference` (the reference
//! core behind the protocol): every corpus case gives the same trace as the in-process core, and a
//! crashing, hanging, garbage-speaking, non-reading, endlessly writing, forking, stop-ignoring or
//! gate-mismatched implementation fails (or skips) only its own case, with a diagnostic, in
//! bounded time, leaving no process behind.

use std::path::PathBuf;
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use rstest::rstest;

use hpa_harness::case::corpus::load_all;
use hpa_harness::run::{CaseResult, Outcome, RunOptions, run_case};
use hpa_harness::targets::CoreTarget;
use hpa_harness::targets::make_target;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn step_reference(flags: &str) -> String {
    format!("exec:{} {flags}", env!("CARGO_BIN_EXE_hpa-step-reference"))
}

/// Complete ticks to a process per case, and delta ticks (`deltaTicks`: the HPA and pods left out
/// when unchanged; `deltaMetrics`: the metrics when they are the previous tick's moved in time;
/// `deltaPods`: the pods said as changes; results without a status that stayed the tick's) to one
/// process for all cases, with every delta and with pod changes alone.
#[rstest]
#[case::complete_ticks("")]
#[case::delta_ticks(
    "--many-cases --delta-ticks --delta-metrics --delta-pods --leave-out-unwritten-status"
)]
#[case::pod_changes("--many-cases --delta-pods")]
fn every_case_gives_the_same_trace_through_the_protocol_as_in_process(#[case] flags: &str) {
    let (cases, bad) = load_all(&[root().join("cases")]);
    assert!(bad.is_empty(), "{bad:?}");
    assert!(!cases.is_empty());
    let exec = make_target(&step_reference(flags), Duration::from_secs(30)).expect("target");
    let opts = RunOptions::default();
    for case in &cases {
        let core = run_case(case, &CoreTarget, &opts);
        let other = run_case(case, exec.as_ref(), &opts);
        if case.file.expect.rejected.is_some() {
            // A manifest the API server refuses never reaches an implementation.
            assert_eq!(
                other.outcome,
                hpa_harness::run::Outcome::Skipped(hpa_harness::run::REJECTED_SKIP.to_string()),
                "{}",
                case.name()
            );
            continue;
        }
        assert_eq!(other.outcome, core.outcome, "{}", case.name());
        assert_eq!(core.trace.len(), other.trace.len(), "{}", case.name());
        for (a, b) in core.trace.iter().zip(&other.trace) {
            let mut a = a.clone();
            // The protocol carries no explanation: its text and its detail.
            a.why = None;
            a.detail.explanation = None;
            assert_eq!(&a, b, "{} at t={}", case.name(), a.t);
        }
    }
}

#[test]
fn delta_ticks_go_only_to_an_implementation_that_declares_them_and_leave_out_what_is_unchanged() {
    let (cases, bad) = load_all(&[root().join("cases/behavior/policy-walkdown.yaml")]);
    assert!(bad.is_empty());
    let ticks = |flags: &str, file: &str| -> Vec<String> {
        let log =
            std::env::temp_dir().join(format!("hpa-exec-unchanged-{}-{file}", std::process::id()));
        let _ = std::fs::remove_file(&log);
        let flags = format!("{flags} --log-unchanged {}", log.display());
        let target = make_target(&step_reference(&flags), Duration::from_secs(30)).expect("target");
        let r = run_case(&cases[0], target.as_ref(), &RunOptions::default());
        assert_eq!(r.outcome, Outcome::Passed, "{flags}");
        let lines = std::fs::read_to_string(&log)
            .expect("log")
            .lines()
            .map(str::to_string)
            .collect();
        let _ = std::fs::remove_file(&log);
        lines
    };
    let complete = ticks("", "complete");
    assert!(complete.len() > 10);
    assert!(complete.iter().all(|l| l.ends_with(' ')), "{complete:?}");
    let delta = ticks("--delta-ticks", "delta");
    assert_eq!(delta.len(), complete.len());
    assert_eq!(delta[0], "0 ", "the first tick is complete");
    // The walk-down changes the pods at each scale-down and the HPA's status now and then;
    // most ticks leave both out.
    let both = delta.iter().filter(|l| l.ends_with(" hpa,pods")).count();
    assert!(both * 2 > delta.len(), "{delta:?}");
    // A scale-down: new pods and a new status; the tick after it, a new status only.
    assert!(delta[1..].iter().any(|l| l.ends_with(' ')), "{delta:?}");
    assert!(delta.iter().any(|l| l.ends_with(" pods")), "{delta:?}");
    assert!(!delta.iter().any(|l| l.contains("metrics")), "{delta:?}");

    // deltaMetrics as well: the metrics too are left out where they are the previous tick's
    // moved in time (the same load before the first scale-down), the HPA and pods as before.
    let both = ticks("--delta-ticks --delta-metrics", "both");
    assert_eq!(both.len(), delta.len());
    assert_eq!(both[0], "0 ", "the first tick is complete");
    assert!(both.iter().any(|l| l.ends_with(",metrics")), "{both:?}");
    assert!(both.iter().any(|l| !l.contains("metrics")), "{both:?}");
    for (b, d) in both.iter().zip(&delta) {
        let without = b.replace(",metrics", "").replace(" metrics", " ");
        assert_eq!(
            &without, d,
            "the HPA and pods are left out as with deltaTicks alone"
        );
    }
    let metrics_only = ticks("--delta-metrics", "metrics");
    assert_eq!(metrics_only[0], "0 ");
    for (m, b) in metrics_only.iter().zip(&both) {
        let (t, fields) = m.split_once(' ').expect("T FIELDS");
        assert!(fields.is_empty() || fields == "metrics", "{m}");
        assert_eq!(fields == "metrics", b.contains("metrics"), "at t={t}");
    }

    // deltaPods as well: every tick after the first whose pods changed says them as changes
    // (the walk-down's scale-downs take pods away from the end), the rest as before.
    let all = ticks("--delta-ticks --delta-metrics --delta-pods", "all");
    assert_eq!(all[0], "0 ", "the first tick is complete");
    assert_eq!(all.len(), both.len());
    let mut changed = 0;
    for (a, b) in all.iter().zip(&both).skip(1) {
        let (t, fields) = b.split_once(' ').expect("T FIELDS");
        if fields.contains("pods") {
            assert_eq!(a, b, "at t={t}");
        } else {
            changed += 1;
            let with = if fields.is_empty() {
                format!("{t} podChanges")
            } else {
                format!("{b},podChanges")
            };
            assert_eq!(a, &with, "at t={t}");
        }
    }
    assert!(changed >= 3, "the walk-down's scale-downs: {all:?}");
    // deltaPods alone: the pods of every tick but the first come as changes (none when none).
    let pods_only = ticks("--delta-pods", "pods");
    assert_eq!(pods_only[0], "0 ");
    assert!(
        pods_only[1..].iter().all(|l| l.ends_with(" podChanges")),
        "{pods_only:?}"
    );
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
        e.starts_with("at t=60: the implementation exited before answering (exit status: 3)"),
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
fn a_result_may_leave_out_a_status_that_stayed_the_ticks_and_the_harness_keeps_it() {
    let (cases, bad) = load_all(&[root().join("cases/behavior/policy-walkdown.yaml")]);
    assert!(bad.is_empty());
    let log = std::env::temp_dir().join(format!("hpa-exec-answers-{}", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let flags = format!(
        "--leave-out-unwritten-status --log-answers {}",
        log.display()
    );
    let target = make_target(&step_reference(&flags), Duration::from_secs(30)).expect("target");
    let r = run_case(&cases[0], target.as_ref(), &RunOptions::default());
    assert_eq!(r.outcome, Outcome::Passed);
    let results: Vec<String> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .filter(|l| l.contains(r#""kind":"result""#))
        .map(str::to_string)
        .collect();
    let _ = std::fs::remove_file(&log);
    // The walk-down's status changes at each scale-down and stays between them.
    let without = results
        .iter()
        .filter(|l| !l.contains(r#""status""#))
        .count();
    assert!(without > 0 && without < results.len(), "{results:?}");
    assert!(
        results[0].contains(r#""status""#),
        "the first tick's HPA has no status to keep"
    );
}

#[test]
fn a_result_without_a_status_where_the_hpa_has_none_fails_the_case() {
    let results = run_two("--no-status-at 0", 30);
    let e = errored(&results[0]);
    assert!(
        e.starts_with("at t=0: answered no status, but the tick's HPA has none to keep\n"),
        "{e}"
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

fn load_one(rel: &str) -> hpa_harness::case::Case {
    let (mut cases, bad) = load_all(&[root().join(rel)]);
    assert!(bad.is_empty(), "{bad:?}");
    cases.remove(0)
}

/// Runs one case on `hpa-step-reference FLAGS` on a thread, failing the test (instead of hanging
/// it) when the run takes longer than `limit`.
fn run_within(rel: &str, flags: &str, timeout: u64, limit: Duration) -> (CaseResult, Duration) {
    let case = load_one(rel);
    let command = step_reference(flags);
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let started = Instant::now();
        let target = make_target(&command, Duration::from_secs(timeout)).expect("target");
        let r = run_case(&case, target.as_ref(), &RunOptions::default());
        let _ = tx.send((r, started.elapsed()));
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("the case with {flags:?} did not end within {limit:?}"))
}

#[test]
fn a_large_tick_to_an_implementation_that_stopped_reading_times_out() {
    // 400 pods make a tick of several hundred KiB, far more than a pipe holds.
    let (r, took) = run_within(
        "tests/fixtures/exec/many-pods.yaml",
        "--stop-reading",
        1,
        Duration::from_secs(30),
    );
    let e = errored(&r);
    assert!(
        e.starts_with(
            "at t=0: could not write the message within 1 s: the implementation is not reading its stdin"
        ),
        "{e}"
    );
    assert!(e.contains("not reading stdin any more, as asked"), "{e}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn an_endless_answer_line_fails_the_case_instead_of_filling_memory() {
    let (r, _) = run_within(
        "cases/behavior/policy-walkdown.yaml",
        "--endless-line-at 15",
        5,
        Duration::from_secs(60),
    );
    let e = errored(&r);
    assert!(
        e.starts_with(
            "at t=15: answered a line longer than 16 MiB, the limit of a protocol message"
        ),
        "{e}"
    );
    assert_eq!(r.trace.len(), 1, "the tick at t=0 was recorded");
}

fn alive_now(pid: &str) -> bool {
    // A zombie (state Z) is dead: only its parent (gone) could reap it.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        })
        .unwrap_or(false)
}

/// Whether the process is still alive 3 s from now (a SIGKILL takes a moment to land).
fn alive(pid: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if !alive_now(pid) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

fn forked_pid(file: &std::path::Path) -> String {
    let pid = std::fs::read_to_string(file).expect("the forked child's pid");
    let _ = std::fs::remove_file(file);
    pid.trim().to_string()
}

#[rstest]
#[case::after_a_crash("--crash-at 15", false)]
#[case::after_a_clean_run("", true)]
fn a_forked_child_holding_stdout_is_killed_with_the_group_and_an_exit_ends_the_case_at_once(
    #[case] flags: &str,
    #[case] passes: bool,
) {
    let pidfile =
        std::env::temp_dir().join(format!("hpa-fork-{}-{}.pid", std::process::id(), passes));
    let (r, took) = run_within(
        "cases/behavior/policy-walkdown.yaml",
        &format!("--fork-child {} {flags}", pidfile.display()),
        30,
        Duration::from_secs(60),
    );
    let child = forked_pid(&pidfile);
    if passes {
        assert_eq!(r.outcome, Outcome::Passed);
    } else {
        let e = errored(&r);
        assert!(
            e.starts_with("at t=15: the implementation exited before answering (exit status: 3)"),
            "{e}"
        );
        // The step timeout is 30 s: the harness noticed the exit, not the silence.
        assert!(took < Duration::from_secs(10), "{took:?}");
    }
    assert!(!alive(&child), "the forked child {child} outlived its case");
}

#[rstest]
#[case::ignoring_stop("--ignore-stop", "still running 1 s after stop (killed)")]
#[case::exiting_non_zero_after_stop("--exit-after-stop 4", "exit status: 4")]
fn an_implementation_that_does_not_exit_cleanly_after_stop_fails_its_case(
    #[case] flags: &str,
    #[case] actual: &str,
) {
    let (r, took) = run_within(
        "tests/fixtures/gated/tolerance-needs-gate.yaml",
        flags,
        1,
        Duration::from_secs(30),
    );
    match &r.outcome {
        Outcome::Failed(f) => {
            assert_eq!(f.len(), 1, "{f:?}");
            assert_eq!(f[0].t, None);
            assert_eq!(f[0].check, "after stop");
            assert_eq!(f[0].expected, "exit with status 0");
            assert_eq!(f[0].actual, actual);
        }
        other => panic!("should fail, got {other:?}"),
    }
    assert!(
        r.diagnostics.as_deref().is_some_and(|d| d.contains("stop")),
        "the stderr tail comes with the failure: {:?}",
        r.diagnostics
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[rstest]
#[case::beyond_the_world(
    "15:1000000",
    "at t=15: the target scaled to 1000000 replicas, more than the simulated world holds (10000 pods)"
)]
#[case::negative("15:-5", "at t=15: the target scaled to -5 replicas, a negative count")]
#[case::above_int32(
    "15:3000000000",
    "at t=15: answered scaledTo 3000000000, which is not a replica count (an integer from 0 to 2147483647)"
)]
#[case::huge_float(
    "15:1e300",
    "at t=15: answered scaledTo 1e300, which is not a replica count"
)]
fn an_out_of_range_scale_fails_the_case_and_is_shown_as_sent(
    #[case] flag: &str,
    #[case] message: &str,
) {
    let (r, _) = run_within(
        "cases/behavior/policy-walkdown.yaml",
        &format!("--scaled-to-at {flag}"),
        30,
        Duration::from_secs(60),
    );
    let e = errored(&r);
    assert!(e.starts_with(message), "{e}");
    assert_eq!(r.trace.len(), 1, "the tick at t=0 was recorded");
}

#[test]
fn a_long_garbage_line_is_shown_cut_at_a_word_boundary() {
    let (r, _) = run_within(
        "cases/behavior/policy-walkdown.yaml",
        "--long-garbage-at 15",
        30,
        Duration::from_secs(60),
    );
    let e = errored(&r);
    let first = e.lines().next().unwrap_or_default();
    let shown = first
        .split_once(": \"")
        .and_then(|(_, rest)| rest.split_once("…\""))
        .map(|(shown, _)| shown)
        .unwrap_or_else(|| panic!("a clipped line in {first:?}"));
    assert!(shown.starts_with("word0 word1 "), "{shown}");
    let last = shown.rsplit(' ').next().unwrap_or_default();
    let n: usize = last
        .strip_prefix("word")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{last:?} is not a whole word"));
    assert!(shown.ends_with(&format!(" word{n}")) && n < 99, "{shown}");
    assert!(shown.chars().count() < 200, "{shown}");
    assert!(first.ends_with("(first words of 689 bytes)"), "{first}");
}

#[test]
fn gates_a_case_does_not_use_never_skip_it_on_an_implementation_with_other_values() {
    let results = run_two("--gates-fixed HPAScaleToZero=true", 30);
    assert_eq!(results[0].outcome, Outcome::Passed, "policy-walkdown");
    assert_eq!(results[1].outcome, Outcome::Passed, "tolerance-needs-gate");
}

#[test]
fn a_gate_the_case_uses_that_hello_does_not_report_is_not_taken_as_agreement() {
    let results = run_two("--gates-unlisted HPAConfigurableTolerance", 30);
    assert_eq!(
        results[0].outcome,
        Outcome::Passed,
        "policy-walkdown does not use the gate"
    );
    assert_eq!(
        results[1].outcome,
        Outcome::Skipped(
            "the case uses feature gates HPAConfigurableTolerance=true (declared in featureGates), which hpa-step-reference 0.1.0 does not report in hello"
                .into()
        )
    );
}

/// The cases of `run_two` and the walk-down without behavior, on one target (so one pool of
/// processes), in order; each `start` is logged as `PID CASE` to a fresh file, returned with the results.
fn run_three_logged(flags: &str) -> (Vec<CaseResult>, Vec<(String, String)>, usize) {
    let log = std::env::temp_dir().join(format!(
        "hpa-exec-log-{}-{}",
        std::process::id(),
        flags.replace([' ', '-'], "")
    ));
    let _ = std::fs::remove_file(&log);
    let (cases, bad) = load_all(&[
        root().join("cases/behavior/policy-walkdown.yaml"),
        root().join("tests/fixtures/gated/tolerance-needs-gate.yaml"),
        root().join("cases/behavior/no-behavior-walkdown.yaml"),
    ]);
    assert!(bad.is_empty());
    assert_eq!(cases.len(), 3);
    let target = hpa_harness::targets::exec::ExecTarget::new(
        &format!(
            "{} {flags} --log-cases {}",
            env!("CARGO_BIN_EXE_hpa-step-reference"),
            log.display()
        ),
        Duration::from_secs(30),
    )
    .expect("target");
    let results: Vec<CaseResult> = cases
        .iter()
        .map(|c| run_case(c, &target, &RunOptions::default()))
        .collect();
    let idle = target.idle_processes();
    drop(target);
    let starts = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(pid, case)| (pid.to_string(), case.to_string()))
        .collect();
    let _ = std::fs::remove_file(&log);
    (results, starts, idle)
}

#[test]
fn an_implementation_that_declares_many_cases_serves_them_all_in_one_process() {
    let (results, starts, idle) = run_three_logged("--many-cases");
    for r in &results {
        assert_eq!(r.outcome, Outcome::Passed, "{}", r.name);
    }
    assert_eq!(starts.len(), 3, "{starts:?}");
    assert!(
        starts.iter().all(|(pid, _)| *pid == starts[0].0),
        "one process for every case: {starts:?}"
    );
    assert_eq!(idle, 1, "the process waits in the pool after its case");
    // A case on a process that served two before gives the trace it gives on a fresh one.
    let last = &results[2];
    let (cases, _) = load_all(&[PathBuf::from(&last.file)]);
    let fresh = make_target(&step_reference(""), Duration::from_secs(30)).expect("target");
    let alone = run_case(&cases[0], fresh.as_ref(), &RunOptions::default());
    assert_eq!(alone.outcome, Outcome::Passed);
    assert_eq!(last.trace, alone.trace, "{}", last.name);
}

#[test]
fn an_implementation_that_does_not_declare_many_cases_gets_a_process_per_case_and_no_end() {
    // Without --many-cases, hpa-step-reference exits 2 on `end` (as an implementation written
    // before `end` existed would fail): every case passing shows none was sent.
    let (results, starts, idle) = run_three_logged("");
    for r in &results {
        assert_eq!(r.outcome, Outcome::Passed, "{}", r.name);
    }
    let pids: std::collections::BTreeSet<&String> = starts.iter().map(|(p, _)| p).collect();
    assert_eq!(pids.len(), 3, "a process per case: {starts:?}");
    assert_eq!(idle, 0);
}

#[test]
fn a_crash_in_a_kept_process_fails_only_its_case_and_the_next_case_gets_a_fresh_process() {
    // Both walk-downs reach t=60 and crash there; the gated fixture ends before.
    let (results, starts, _) = run_three_logged("--many-cases --crash-at 60");
    assert_eq!(starts.len(), 3, "{starts:?}");
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.name, starts[i].1, "cases run in order");
        if r.name.contains("walkdown") {
            let e = errored(r);
            assert!(
                e.starts_with(
                    "at t=60: the implementation exited before answering (exit status: 3)"
                ),
                "{e}"
            );
            if let Some(next) = starts.get(i + 1) {
                assert_ne!(starts[i].0, next.0, "a fresh process after the crash");
            }
        } else {
            assert_eq!(r.outcome, Outcome::Passed, "the other case still runs");
        }
    }
}

#[test]
fn garbage_mid_session_fails_that_case_and_the_process_is_not_reused() {
    let (results, starts, idle) = run_three_logged("--many-cases --garbage-at 15");
    for r in &results {
        let e = errored(r);
        assert!(e.contains("\"this is not JSON\""), "{e}");
    }
    let pids: std::collections::BTreeSet<&String> = starts.iter().map(|(p, _)| p).collect();
    assert_eq!(pids.len(), 3, "a fresh process for each case: {starts:?}");
    assert_eq!(idle, 0);
}

#[test]
fn a_parallel_run_reports_exactly_what_a_serial_run_does() {
    let report = |jobs: &str| {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let code = hpa_harness::cli::main(
            &[
                "hpa-conformance".to_string(),
                "run".into(),
                root().join("cases/behavior").display().to_string(),
                root().join("tests/fixtures/gated").display().to_string(),
                "--target".into(),
                step_reference("--many-cases"),
                "--format".into(),
                "json".into(),
                "--jobs".into(),
                jobs.into(),
            ],
            &mut out,
            &mut err,
        );
        (code, String::from_utf8(out).expect("utf-8"))
    };
    let (serial_code, serial) = report("1");
    let (parallel_code, parallel) = report("3");
    assert_eq!(serial_code, parallel_code);
    assert!(serial.contains("\"policy-walkdown\""), "{serial}");
    assert_eq!(serial, parallel);
}

#[test]
fn an_answer_the_world_refuses_fails_that_case_and_the_process_is_not_reused() {
    // A negative replica count at t=15: the world refuses it and the case fails there.
    let (results, starts, idle) = run_three_logged("--many-cases --scaled-to-at 15:-5");
    for r in &results {
        let e = errored(r);
        assert!(e.contains("-5"), "{e}");
    }
    let pids: std::collections::BTreeSet<&String> = starts.iter().map(|(p, _)| p).collect();
    assert_eq!(pids.len(), 3, "a fresh process for each case: {starts:?}");
    assert_eq!(idle, 0);
}
