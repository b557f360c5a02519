//! Loose ends (issue 34, item 7): a string where the HPA has an integer is bad input; a target
//! that cannot start is a usage error for every command; `what-if` reads only regular files of a
//! bounded size, and a load of more than the YAML parser's budget of rows; a case's pods × ticks
//! is budgeted; a process kept for many cases that misbehaves after answering `ended` fails the
//! case it follows, and a wrong `ended` is labelled as such.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rstest::rstest;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn path(rel: &str) -> String {
    root().join(rel).display().to_string()
}

/// Runs the CLI in process: (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let mut argv = vec!["hpa-conformance".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = hpa_harness::cli::main(&argv, &mut out, &mut err);
    (
        code,
        String::from_utf8(out).expect("utf-8 stdout"),
        String::from_utf8(err).expect("utf-8 stderr"),
    )
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("hpa-loose-{}-{name}", std::process::id()))
}

#[test]
fn a_string_for_an_integer_of_the_hpa_is_bad_input_at_its_position_as_on_the_api_server() {
    let file = path("tests/fixtures/loose/string-for-integer.yaml");
    let message = "hpa.spec.maxReplicas must be an integer from -2147483648 to 2147483647, not the string \"20\"";
    let (code, _, err) = run(&["run", &file]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("{file}:10:18: {message}")), "{err}");
    // Lint loads cases with the same loader.
    let lint = root().join("tests/fixtures/lint");
    let (code, _, err) = run(&[
        "lint",
        &file,
        "--seeds",
        &lint.join("seeds").display().to_string(),
        "--facts",
        &lint.join("facts.yaml").display().to_string(),
    ]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains(message), "{err}");
    // Every integer of the HPA, deep in a list too; a number where one belongs still loads.
    let text = std::fs::read_to_string(&file).expect("fixture");
    let deep = text.replace(
        "    maxReplicas: \"20\"\n",
        "    maxReplicas: 20\n    metrics:\n      - type: Resource\n        resource: {name: cpu, target: {type: Utilization, averageUtilization: \"50\"}}\n    behavior:\n      scaleDown: {policies: [{type: Pods, value: 4, periodSeconds: '60'}]}\n",
    );
    let e = hpa_harness::case::load_case_text(Path::new("deep.yaml"), &deep)
        .expect_err("a string for averageUtilization");
    assert_eq!(
        e.reason,
        "hpa.spec.metrics[0].resource.target.averageUtilization must be an integer from -2147483648 to 2147483647, not the string \"50\""
    );
    assert_eq!((e.pos.line, e.pos.column), (13, 79), "at the value");
    let fixed = deep.replace("\"50\"", "50");
    let e = hpa_harness::case::load_case_text(Path::new("deep.yaml"), &fixed)
        .expect_err("a string for periodSeconds");
    assert!(
        e.reason.starts_with(
            "hpa.spec.behavior.scaleDown.policies[0].periodSeconds must be an integer"
        ),
        "{}",
        e.reason
    );
    let fixed = fixed.replace("'60'", "60");
    hpa_harness::case::load_case_text(Path::new("deep.yaml"), &fixed).expect("numbers load");
}

#[test]
fn a_target_that_cannot_start_is_a_usage_error_for_run_explain_and_fuzz_alike() {
    let case = path("cases/behavior/policy-walkdown.yaml");
    let target = "exec:/nonexistent/implementation";
    let line = "error: target exec:/nonexistent/implementation cannot start: cannot start \"/nonexistent/implementation\": No such file or directory (os error 2)\n";
    for args in [
        vec!["run", &case, "--target", target],
        vec!["explain", &case, "--target", target],
        vec!["fuzz", "--b", target, "--count", "1"],
    ] {
        let (code, out, err) = run(&args);
        assert_eq!((code, err.as_str()), (2, line), "{args:?}: {out}");
    }
}

fn what_if(load: &Path) -> (i32, String, String) {
    run(&[
        "what-if",
        "--hpa",
        &path("examples/morning-ramp/hpa.yaml"),
        "--deployment",
        &path("examples/morning-ramp/deployment.yaml"),
        "--load",
        &load.display().to_string(),
    ])
}

#[test]
fn what_if_reads_only_regular_files() {
    // A FIFO nobody writes would block a reader for ever; /dev/zero never ends.
    let fifo = temp("fifo.csv");
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    for load in [fifo.clone(), PathBuf::from("/dev/null")] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let _ = tx.send((load.clone(), what_if(&load)));
        });
    }
    for _ in 0..2 {
        let (load, (code, _, err)) = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("what-if refuses a device or a FIFO at once");
        assert_eq!(code, 2, "{err}");
        assert_eq!(err, format!("{}: not a regular file\n", load.display()));
    }
    let _ = std::fs::remove_file(&fifo);
}

fn load_rows(rows: usize) -> PathBuf {
    let mut csv = String::from("time,metric,value\n");
    for i in 0..rows {
        csv.push_str(&format!("{},cpu,{}m\n", i * 15, 1000 + i % 500));
    }
    let file = temp(&format!("rows-{rows}.csv"));
    std::fs::write(&file, csv).expect("load csv");
    file
}

#[test]
fn what_if_takes_more_load_rows_than_the_yaml_parser_would_and_refuses_beyond_its_limit() {
    // 60,000 rows: more nodes than the YAML parser's budget, which a round trip through YAML hit.
    let load = load_rows(60_000);
    let (code, out, err) = what_if(&load);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("a decision every 15 s for 900285 s"),
        "to the last row and 5 minutes more: {out}"
    );
    let _ = std::fs::remove_file(&load);
    let load = load_rows(100_001);
    let (code, _, err) = what_if(&load);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        format!(
            "{}:100002:1: more than 100000 load rows, the most a what-if reads\n",
            load.display()
        )
    );
    let _ = std::fs::remove_file(&load);
}

#[test]
fn pods_times_ticks_is_budgeted() {
    let base = std::fs::read_to_string(root().join("tests/fixtures/exec/many-pods.yaml"))
        .expect("fixture");
    let case = |pods: u32, duration: u32| {
        let text = base
            .replace("maxReplicas: 1000", &format!("maxReplicas: {pods}"))
            .replace("replicas: 400", &format!("replicas: {pods}"))
            .replace(
                "expect:\n  at:\n    - t: 0\n      replicas: 250\n",
                "expect: {}\n",
            );
        hpa_harness::case::load_case_text(
            Path::new("budget.yaml"),
            &format!("{text}durationSeconds: {duration}\n"),
        )
    };
    // 10,000 pods × 100,000 ticks: a valid file that would run for hours.
    let e = case(10_000, 1_499_985).expect_err("beyond the budget");
    assert_eq!(
        e.reason,
        "the run would simulate up to 10000 pods for 100000 ticks, 1000000000 pod-ticks, more than 20000000: shorten it, lengthen settings.syncPeriodSeconds or lower maxReplicas"
    );
    assert_eq!(e.pos.line, 24, "at durationSeconds");
    // Either alone is fine: 10,000 pods for 2,000 ticks, 200 pods for 100,000.
    case(10_000, 29_985).expect("10,000 pods × 2,000 ticks");
    case(200, 1_499_985).expect("200 pods × 100,000 ticks");
    assert!(case(201, 1_499_985).is_err());
}

/// The walk-downs and the gated fixture on `after-ended.py MODE` around the step reference
/// serving many cases, one job, step timeout 3 s (1 s timed out a healthy start — Python and the
/// step reference — on a machine at load 8): (exit code, the JSON report's cases).
fn after_ended(mode: &str) -> (i32, Vec<serde_json::Value>, String) {
    let target = format!(
        "exec:{} {mode} {} --many-cases",
        path("tests/fixtures/exec/after-ended.py"),
        env!("CARGO_BIN_EXE_hpa-step-reference")
    );
    let (code, out, err) = run(&[
        "run",
        &path("cases/behavior/policy-walkdown.yaml"),
        &path("cases/behavior/no-behavior-walkdown.yaml"),
        &path("tests/fixtures/gated/tolerance-needs-gate.yaml"),
        "--target",
        &target,
        "--jobs",
        "1",
        "--step-timeout",
        "3",
        "--format",
        "json",
    ]);
    let report: serde_json::Value = serde_json::from_str(&out).expect("json report");
    let cases = report["cases"].as_array().cloned().unwrap_or_default();
    assert_eq!(cases.len(), 3, "{out}");
    (code, cases, err)
}

/// The failures of a case in the JSON report, as (check, expected, actual).
fn failures(case: &serde_json::Value) -> Vec<(String, String, String)> {
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    case["failures"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| (text(&f["check"]), text(&f["expected"]), text(&f["actual"])))
        .collect()
}

#[rstest]
#[case::garbage(
    "garbage",
    "answered something that is not a protocol message",
    "wrote \"garbage after ended\""
)]
#[case::hang(
    "hang",
    "no answer within 3 s",
    "still running 3 s after stop (killed)"
)]
fn a_kept_process_that_misbehaves_after_ended_fails_the_case_it_follows(
    #[case] mode: &str,
    #[case] at_next_start: &str,
    #[case] after_the_last: &str,
) {
    let started = Instant::now();
    let (code, cases, err) = after_ended(mode);
    assert_eq!(code, 1, "{err}");
    for (i, case) in cases.iter().enumerate() {
        let f = failures(case);
        assert_eq!(f.len(), 1, "{}: {f:?}", case["name"]);
        let (check, expected, actual) = &f[0];
        assert_eq!(check, "after end", "{}", case["name"]);
        if i + 1 < cases.len() {
            // Noticed at the next case's start, which a fresh process then served.
            assert_eq!(expected, "hello to the next case's start");
            assert!(actual.starts_with(at_next_start), "{actual}");
        } else {
            // The last case's process, when the run ends.
            assert_eq!(expected, "nothing more, and an exit after stop");
            assert_eq!(actual, after_the_last);
        }
        // Its ticks all ran as they should.
        assert!(!case["trace"].as_array().is_none_or(|t| t.is_empty()));
    }
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn a_wrong_ended_is_labelled_as_the_answer_to_end_not_as_the_exit_after_stop() {
    let (code, cases, err) = after_ended("wrong");
    assert_eq!(code, 1, "{err}");
    for case in &cases {
        let name = case["name"].as_str().unwrap_or_default();
        assert_eq!(
            failures(case),
            [(
                "after end".to_string(),
                format!("ended for case \"{name}\""),
                format!("answered ended for case \"not-{name}\"")
            )]
        );
    }
}
