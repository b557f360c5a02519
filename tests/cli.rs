//! The command-line contract: exit codes, bad input reported with file:line:col while the good cases
//! still run, the JSON/JUnit report shapes, feature-gate skips, `explain`, and the published schema.

use std::path::PathBuf;

use hpa_harness::cli;
use rstest::rstest;

use hpa_conformance_tests::{root, run};

fn path(rel: &str) -> String {
    root().join(rel).display().to_string()
}

#[test]
fn broken_case_files_exit_2_with_file_line_column_and_the_good_cases_still_run() {
    let walkdown = path("cases/behavior/policy-walkdown.yaml");
    let bad = path("tests/fixtures/bad");
    let (code, out, err) = run(&["run", &bad, &walkdown, "--format", "json"]);
    assert_eq!(code, 2, "stderr: {err}");
    let expected = [
        (
            "load-for-unknown-metric.yaml",
            16,
            12,
            "load for \"memory\", which is not a metric of the HPA",
        ),
        (
            "load-for-unknown-container.yaml",
            16,
            25,
            "load for container \"apps\", which is not in the pod template (containers and sidecars: app, proxy)",
        ),
        (
            "max-below-min.yaml",
            11,
            5,
            "spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`",
        ),
        (
            "policy-period-zero.yaml",
            16,
            13,
            "periodSeconds: Invalid value: 0: must be greater than zero",
        ),
        ("syntax-error.yaml", 11, 9, ""),
        (
            "unknown-case-field.yaml",
            14,
            3,
            "unknown field `readyAfter`",
        ),
        (
            "unknown-hpa-field.yaml",
            10,
            5,
            "unknown field `minReplica`",
        ),
        (
            "window-too-long.yaml",
            13,
            9,
            "must be less than or equal to 3600",
        ),
        (
            "wrong-type.yaml",
            10,
            18,
            "hpa.spec.maxReplicas must be an integer from -2147483648 to 2147483647, not ten",
        ),
    ];
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), expected.len(), "one line per bad file: {err}");
    for (file, line, col, reason) in expected {
        let prefix = format!("{}/{file}:{line}:{col}: ", bad);
        let l = lines
            .iter()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{err}"));
        assert!(l.contains(reason), "{l:?} should contain {reason:?}");
    }
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json report");
    let cases = doc["cases"].as_array().expect("cases list");
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0]["name"], "policy-walkdown");
    assert_eq!(cases[0]["passed"], true);
    assert_eq!(
        doc["bad_input"].as_array().map(Vec::len),
        Some(expected.len())
    );
}

#[test]
fn json_report_shows_the_walk_down_replica_values_tick_by_tick() {
    let (code, out, _) = run(&[
        "run",
        &path("cases/behavior/policy-walkdown.yaml"),
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    let trace = doc["cases"][0]["trace"].as_array().expect("trace");
    assert_eq!(trace[0]["t"], 0);
    let mut distinct: Vec<i64> = Vec::new();
    for tick in trace {
        let r = tick["replicas"].as_i64().expect("replicas");
        if distinct.last() != Some(&r) {
            distinct.push(r);
        }
    }
    assert_eq!(
        distinct,
        [80, 72, 64, 57, 51, 45, 40, 36, 32, 28, 24, 20, 16, 12, 10]
    );
    assert_eq!(doc["cases"][0]["skipped"], false);
    assert!(doc["cases"][0]["skip_reason"].is_null());
}

#[test]
fn a_case_needing_a_gate_the_run_fixes_otherwise_is_skipped_with_the_reason() {
    let case = path("tests/fixtures/gated/tolerance-needs-gate.yaml");
    let (code, out, _) = run(&[
        "run",
        &case,
        "--format",
        "json",
        "--feature-gates",
        "HPAConfigurableTolerance=false",
    ]);
    assert_eq!(code, 3, "a skip is not a failure, but nothing ran");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(doc["cases"][0]["skipped"], true);
    assert_eq!(doc["cases"][0]["passed"], false);
    assert_eq!(
        doc["cases"][0]["skip_reason"],
        "needs feature gate HPAConfigurableTolerance=true (declared in featureGates), but the run fixes HPAConfigurableTolerance=false; run it with --feature-gates HPAConfigurableTolerance=true"
    );
    // With the gate at its 1.36 default (on) the case runs and passes.
    let (code, out, _) = run(&["run", &case]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("PASS  tolerance-needs-gate"));
    // Human and JUnit outputs say skipped too.
    let (_, out, _) = run(&[
        "run",
        &case,
        "--feature-gates",
        "HPAConfigurableTolerance=false",
    ]);
    assert!(
        out.contains("SKIP  tolerance-needs-gate  (needs feature gate"),
        "{out}"
    );
    assert!(out.contains("0 passed, 0 failed, 1 skipped"), "{out}");
    let (_, out, _) = run(&[
        "run",
        &case,
        "--format",
        "junit",
        "--feature-gates",
        "HPAConfigurableTolerance=false",
    ]);
    assert!(
        out.contains("<skipped message=\"needs feature gate"),
        "{out}"
    );
}

#[test]
fn junit_report_has_a_testcase_per_case_and_errors_for_bad_files() {
    let (code, out, _) = run(&[
        "run",
        &path("cases/behavior/policy-walkdown.yaml"),
        &path("tests/fixtures/bad/wrong-type.yaml"),
        "--format",
        "junit",
    ]);
    assert_eq!(code, 2);
    assert!(out.contains("<testcase name=\"policy-walkdown\""), "{out}");
    assert!(out.contains("type=\"bad-input\""), "{out}");
    assert!(out.contains("tests=\"2\""), "{out}");
}

#[test]
fn a_failing_case_exits_1_and_shows_expected_versus_actual_with_the_trace() {
    let dir = std::env::temp_dir().join(format!("hpa-conformance-fail-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let text =
        std::fs::read_to_string(root().join("cases/behavior/policy-walkdown.yaml")).expect("case");
    let broken = text.replacen(
        "    - t: 360\n      replicas: 64",
        "    - t: 360\n      replicas: 65",
        1,
    );
    assert_ne!(text, broken);
    let file = dir.join("walkdown-wrong.yaml");
    std::fs::write(&file, broken).expect("write");
    let (code, out, _) = run(&["run", &file.display().to_string()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL  policy-walkdown"), "{out}");
    assert!(
        out.contains("t=360: replicas: expected 65, got 64"),
        "{out}"
    );
    assert!(out.contains("trace around t=360"), "{out}");
    assert!(out.contains("0 passed, 1 failed, 0 skipped"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failure_of_an_hpa_alongside_names_it_and_shows_its_trace() {
    let dir = std::env::temp_dir().join(format!("hpa-conformance-along-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let text =
        std::fs::read_to_string(root().join("cases/controller/several-hpas-each-kept-apart.yaml"))
            .expect("case");
    let broken = text.replacen(
        "    - t: 60\n      replicas: 6\n      desiredReplicas: 6\n",
        "    - t: 60\n      replicas: 7\n      desiredReplicas: 6\n",
        1,
    );
    assert_ne!(text, broken);
    let file = dir.join("alongside-wrong.yaml");
    std::fs::write(&file, broken).expect("write");
    let file = file.display().to_string();
    let (code, out, _) = run(&["run", &file]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("t=60: HPA api: replicas: expected 7, got 6"),
        "{out}"
    );
    // The trace shown is api's (5 -> 6 at t=60), not web's (4 -> 6).
    assert!(out.contains("trace of HPA api around t=60"), "{out}");
    assert!(out.contains("5 -> 6"), "{out}");
    let (code, json, _) = run(&["run", &file, "--format", "json"]);
    assert_eq!(code, 1, "{json}");
    let doc: serde_json::Value = serde_json::from_str(&json).expect("json");
    let case = &doc["cases"][0];
    assert_eq!(case["failures"][0]["hpa"], "api", "{json}");
    assert_eq!(case["failures"][0]["check"], "replicas", "{json}");
    let alongside = case["alongside"].as_array().expect("alongside traces");
    let names: Vec<&str> = alongside.iter().filter_map(|a| a["hpa"].as_str()).collect();
    assert_eq!(names, ["api", "worker"], "{json}");
    assert_eq!(
        alongside[0]["trace"].as_array().map(Vec::len),
        Some(9),
        "{json}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn filter_selects_cases_by_name() {
    let (code, out, _) = run(&["run", &path("cases"), "--filter", "policy-walkdown"]);
    assert_eq!(code, 0);
    assert!(out.contains("1 passed, 0 failed, 0 skipped"), "{out}");
}

#[test]
fn explain_prints_why_each_decision_was_made() {
    let (code, out, _) = run(&["explain", &path("cases/behavior/policy-walkdown.yaml")]);
    assert_eq!(code, 0);
    assert!(
        out.contains("0…285    80 → 80   20 ticks, no change at 80"),
        "{out}"
    );
    assert!(
        out.contains("event: Normal SuccessfulRescale: New size: 72"),
        "{out}"
    );
    assert!(out.trim_end().ends_with("PASSED"));
}

#[test]
fn explain_pods_shows_each_pods_start_readiness_deletion_and_samples() {
    let (code, out, _) = run(&[
        "explain",
        &path("cases/calculator/rc-native-sidecar-usage-counted.yaml"),
        "--pods",
    ]);
    assert_eq!(code, 0, "{out}");
    // Initial pods started an hour before t=0; samples are stamped at the tick with the case's
    // window, one line per resource summing the containers (the native sidecar included).
    assert!(
        out.contains("pod web-0000 Running, started -3600, Ready=True since -3600; cpu app 300m + log-shipper 60m (at 0, window 30s)"),
        "{out}"
    );
    // The pod the t=0 rescale created: started and ready at 0, sampled at 15 (inside its
    // window after turning ready, so the calculator counts it unready).
    assert!(
        out.contains("pod web-0004 Running, started 0, Ready=True since 0; cpu app 300m + log-shipper 60m (at 15, window 30s)"),
        "{out}"
    );
    let (code, out, _) = run(&[
        "explain",
        &path("cases/calculator/rc-resource-scale-down-pods-being-deleted-ignored.yaml"),
        "--pods",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("Ready=False since 0, deleting; no samples"),
        "{out}"
    );
    // Without --pods there are no pod lines.
    let (_, out, _) = run(&[
        "explain",
        &path("cases/calculator/rc-native-sidecar-usage-counted.yaml"),
    ]);
    assert!(!out.contains("pod web-0000"), "{out}");
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(run(&["run", "--target", "nope"]).0, 2);
    assert_eq!(run(&["run", "--feature-gates", "NoSuchGate=true"]).0, 2);
    assert_eq!(run(&["frobnicate"]).0, 2);
}

#[test]
fn the_published_schema_is_current() {
    let published =
        std::fs::read_to_string(root().join("cases/schema.json")).expect("cases/schema.json");
    assert!(
        published == cli::schema_json(),
        "cases/schema.json is stale: run `just schema`"
    );
    let schema: serde_json::Value = serde_json::from_str(&published).expect("schema is JSON");
    assert!(schema["properties"]["hpa"].is_object());
}

#[test]
fn the_published_protocol_schema_is_current() {
    let published = std::fs::read_to_string(root().join("harness/protocol.schema.json"))
        .expect("harness/protocol.schema.json");
    assert!(
        published == hpa_harness::protocol::schema_json(),
        "harness/protocol.schema.json is stale: run `just schema`"
    );
}

#[test]
fn lint_checks_that_each_source_exists() {
    let dir = root().join("tests/fixtures/lint");
    let seeds = dir.join("seeds").display().to_string();
    let facts = dir.join("facts.yaml").display().to_string();
    let cases = dir.join("cases");
    let good: Vec<String> = ["good-seed.yaml", "good-upstream.yaml"]
        .iter()
        .map(|f| cases.join(f).display().to_string())
        .collect();
    let (code, out, err) = run(&[
        "lint", &good[0], &good[1], "--seeds", &seeds, "--facts", &facts,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("lint: 2 case files checked, 0 problems"),
        "{out}"
    );

    let (code, out, err) = run(&[
        "lint",
        &cases.display().to_string(),
        "--seeds",
        &seeds,
        "--facts",
        &facts,
    ]);
    assert_eq!(code, 2);
    assert!(
        out.contains("lint: 6 case files checked, 3 problems"),
        "{out}"
    );
    let c = cases.display().to_string();
    assert!(
        err.contains(&format!(
            "{c}/missing-seed.yaml:4:3: no seed document named \"nope.txt\""
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{c}/missing-section.yaml:5:3: docs.txt has no heading containing \"Scaling Policies\""
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{c}/unknown-test.yaml:4:3: \"TestNoSuchThing\" is not an upstream test or fact id"
        )),
        "{err}"
    );

    // Several facts files: a test named in the second is known (repeat the flag or use commas).
    let more = dir.join("facts-more.yaml").display().to_string();
    let both = format!("{facts},{more}");
    for args in [
        vec!["--facts", facts.as_str(), "--facts", more.as_str()],
        vec!["--facts", both.as_str()],
    ] {
        let mut argv: Vec<&str> = vec!["lint", &c, "--seeds", &seeds];
        argv.extend(args);
        let (code, out, err) = run(&argv);
        assert_eq!(code, 2, "{err}");
        assert!(
            out.contains("lint: 6 case files checked, 2 problems"),
            "{out}"
        );
        assert!(!err.contains("TestNoSuchThing"), "{err}");
    }

    let (code, _, err) = run(&["lint", &c, "--seeds", "/nonexistent", "--facts", &facts]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot read the seed documents in /nonexistent"),
        "{err}"
    );
}

#[test]
fn lint_warns_about_a_target_the_controller_cannot_use_and_still_passes() {
    let dir = root().join("tests/fixtures/lint");
    let seeds = dir.join("seeds").display().to_string();
    let facts = dir.join("facts.yaml").display().to_string();
    let case = dir.join("warn/unusable-target.yaml").display().to_string();
    let (code, out, err) = run(&["lint", &case, "--seeds", &seeds, "--facts", &facts]);
    assert_eq!(code, 0, "a warning is not a problem: {err}");
    assert!(
        out.contains("lint: 1 case files checked, 0 problems, 1 warnings"),
        "{out}"
    );
    assert!(
        err.contains(&format!(
            "{case}:16:31: warning: spec.metrics[0].resource.target.averageUtilization: Required \
             value: must set averageUtilization when the target type is Utilization"
        )),
        "{err}"
    );
    // The API server accepts it, so `run` does too, and upstream's controller reads the value.
    let (code, out, err) = run(&["run", &case]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn the_corpus_lints_clean_against_the_shared_sources() {
    let shared = root().join("../shared");
    let (code, out, err) = run(&[
        "lint",
        &root().join("cases").display().to_string(),
        "--seeds",
        &shared.join("seeds").display().to_string(),
        "--facts",
        &shared
            .join("reference/upstream-test-facts.yaml")
            .display()
            .to_string(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn coverage_lists_every_upstream_fact_and_only_existing_cases() {
    let facts =
        std::fs::read_to_string(root().join("../shared/reference/upstream-test-facts.yaml"))
            .expect("shared facts file");
    let coverage = std::fs::read_to_string(root().join("cases/COVERAGE.md")).expect("COVERAGE.md");
    let missing: Vec<&str> = facts
        .lines()
        .filter_map(|l| l.strip_prefix("- id:"))
        .map(|id| id.trim().trim_matches(|c| c == '\'' || c == '"'))
        .filter(|id| !coverage.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "facts without a row in COVERAGE.md: {missing:?}"
    );
    for word in coverage.split(|c: char| c.is_whitespace() || "`|(),;".contains(c)) {
        let w = word.trim_matches(|c: char| c == '*' || c == '.' || c == ':');
        if w.ends_with(".yaml")
            && w.contains('/')
            && !w.contains("reference/")
            && !w.starts_with("cases/")
        {
            assert!(
                root().join("cases").join(w).exists(),
                "COVERAGE.md names a missing case: {w}"
            );
        }
    }
}

/// A temporary folder for one test, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("hpa-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    fn write(&self, name: &str, text: &str) -> String {
        let file = self.0.join(name);
        std::fs::write(&file, text).expect("write");
        file.display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[rstest]
#[case::run(&["run", "CASE", "--step-timeout", "0"])]
#[case::explain(&["explain", "CASE", "--step-timeout", "0"])]
#[case::fuzz(&["fuzz", "--b", "core", "--count", "1", "--out", "OUT", "--step-timeout", "0"])]
fn a_zero_step_timeout_is_bad_input(#[case] args: &[&str]) {
    let out = TempDir::new("zero-timeout");
    let case = path("cases/algorithm/docs-cpu-doubling.yaml");
    let out_dir = out.0.display().to_string();
    let args: Vec<&str> = args
        .iter()
        .map(|a| match *a {
            "CASE" => case.as_str(),
            "OUT" => out_dir.as_str(),
            a => a,
        })
        .collect();
    let (code, _, err) = run(&args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--step-timeout"), "{err}");
}

#[rstest]
#[case::filter_matching_nothing(&["--filter", "no-such-case"], "--filter \"no-such-case\" matches none of the ")]
#[case::every_case_skipped(&["--filter", "rc-configurable-tolerance-cm-pods", "--feature-gates", "HPAConfigurableTolerance=false"], "every case (1) was skipped")]
fn nothing_ran_exits_3_with_a_message(#[case] flags: &[&str], #[case] why: &str) {
    let cases = path("cases");
    let mut args = vec!["run", cases.as_str()];
    args.extend(flags);
    let (code, out, err) = run(&args);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        err.trim()
            .starts_with(&format!("error: no case ran: {why}")),
        "{err}"
    );
}

#[test]
fn an_empty_folder_runs_nothing_and_lints_nothing_exit_3() {
    let dir = TempDir::new("empty");
    let empty = dir.0.display().to_string();
    let (code, _, err) = run(&["run", &empty]);
    assert_eq!(code, 3);
    assert_eq!(
        err.trim(),
        format!("error: no case ran: no case file under {empty}")
    );
    let lint = root().join("tests/fixtures/lint");
    let (code, out, err) = run(&[
        "lint",
        &empty,
        "--seeds",
        &lint.join("seeds").display().to_string(),
        "--facts",
        &lint.join("facts.yaml").display().to_string(),
    ]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains("lint: 0 case files checked, 0 problems"),
        "{out}"
    );
    assert!(err.contains("error: no case file to lint under"), "{err}");
}

/// A stream that is always full.
struct Full;

impl std::io::Write for Full {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::Error::from_raw_os_error(28))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Err(std::io::Error::from_raw_os_error(28))
    }
}

#[rstest]
#[case::human("human")]
#[case::json("json")]
#[case::junit("junit")]
fn a_report_that_cannot_be_written_is_an_error_exit(#[case] format: &str) {
    let case = path("cases/algorithm/docs-cpu-doubling.yaml");
    let argv: Vec<String> = ["hpa-conformance", "run", &case, "--format", format]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut err = Vec::new();
    assert_eq!(cli::main(&argv, &mut Full, &mut err), 2);
    let err = String::from_utf8(err).expect("utf-8");
    assert!(err.starts_with("error: cannot write the output: "), "{err}");

    // --report DIR: on a device, under a file (both refused before the run starts), and a
    // folder that is made.
    let (code, out, err) = run(&["run", &case, "--format", format, "--report", "/dev/full"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--report: cannot create the folder /dev/full"),
        "{err}"
    );
    assert!(out.is_empty(), "nothing ran: {out}");
    let (code, _, err) = run(&[
        "run",
        &case,
        "--format",
        format,
        "--report",
        "/dev/null/folder/report",
    ]);
    assert_eq!(code, 2, "{err}");
    let dir = TempDir::new(&format!("report-{format}"));
    let folder = dir.0.join("report");
    let (code, out, _) = run(&[
        "run",
        &case,
        "--format",
        format,
        "--report",
        &folder.display().to_string(),
    ]);
    assert_eq!(code, 0);
    assert!(
        out.contains("docs-cpu-doubling"),
        "stdout keeps the --format report: {out}"
    );
    for name in ["report.json", "junit.xml"] {
        let written = std::fs::read_to_string(folder.join(name)).expect("report file");
        assert!(written.contains("docs-cpu-doubling"), "{name}: {written}");
    }
}

#[test]
fn failures_read_as_words_with_the_title_and_without_debug_syntax() {
    let text = std::fs::read_to_string(root().join("cases/algorithm/docs-cpu-doubling.yaml"))
        .expect("case");
    let broken = text
        .replacen(
            "      currentReplicas: 3\n",
            "      currentReplicas: 4\n",
            1,
        )
        .replacen("      lastScaleTime: 0\n", "      lastScaleTime: 45\n", 1)
        .replacen("New size: 6; reason", "New size: 7; reason", 1)
        .replacen("{averageValue: 200m}", "{averageValue: 300m}", 1)
        .replacen("trajectory: [3, 6]", "trajectory: [3, 7]", 1)
        .replacen("finalReplicas: 6", "finalReplicas: 7", 1);
    let dir = TempDir::new("messages");
    let file = dir.write("doubling.yaml", &broken);
    let (code, out, _) = run(&["run", &file]);
    assert_eq!(code, 1, "{out}");
    for line in [
        "FAIL  docs-cpu-doubling",
        "    Current 200m against a desired 100m (ratio 2.0) doubles the replicas: 3 → 6",
        "t=0: status.currentReplicas: expected 4, got 3",
        "t=0: status.lastScaleTime: expected t=45, got t=0",
        "t=0: events: expected Normal SuccessfulRescale (message containing \"New size: 7; reason: cpu resource above target\"), got Normal SuccessfulRescale: New size: 6; reason: cpu resource above target",
        "t=0: currentMetrics[0].averageValue: expected 300m, got 200m",
        "whole run: trajectory: expected 3, 7, got 3, 6",
        "whole run: final replicas: expected 7, got 6",
    ] {
        assert!(out.contains(line), "{line:?} missing in:\n{out}");
    }
    for debug in ["Some(", "None", "[\"", "\\\""] {
        assert!(!out.contains(debug), "{debug:?} in:\n{out}");
    }
}

#[test]
fn a_target_scaling_beyond_the_world_fails_its_case_instead_of_allocating() {
    let text = std::fs::read_to_string(root().join("cases/algorithm/docs-cpu-doubling.yaml"))
        .expect("case");
    let huge = text
        .replacen("  replicas: 3\n", "  replicas: 10000\n", 1)
        .replacen("    maxReplicas: 20\n", "    maxReplicas: 1000000\n", 1)
        .replacen("      total: 600m\n", "      total: \"10000\"\n", 1);
    let dir = TempDir::new("huge");
    let file = dir.write("huge.yaml", &huge);
    let (code, out, _) = run(&["run", &file, "--format", "json"]);
    assert_eq!(code, 1, "{out}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        doc["cases"][0]["error"],
        "at t=0: the target scaled to 20000 replicas, more than the simulated world holds (10000 pods)"
    );
}

#[test]
fn an_expectation_whose_tick_never_runs_fails_the_case() {
    use hpa_harness::run::{Outcome, RunOptions, run_case};
    let mut case =
        hpa_harness::case::load_case(&root().join("cases/behavior/policy-walkdown.yaml"))
            .expect("case");
    // A run cut short (as a real-time target may be): the expectations at 1020 and 1080 s.
    case.duration = 600;
    let r = run_case(
        &case,
        &hpa_harness::targets::CoreTarget,
        &RunOptions::default(),
    );
    let Outcome::Failed(failures) = r.outcome else {
        panic!("should fail: {:?}", r.outcome);
    };
    let never: Vec<String> = failures
        .iter()
        .filter(|f| f.check == "expectation")
        .map(|f| {
            format!(
                "t={}: expected {}, got {}",
                f.t.unwrap_or(-1),
                f.expected,
                f.actual
            )
        })
        .collect();
    assert_eq!(
        never,
        [
            "t=1020: expected a tick at t=1020, got never reached (ticks ran from t=0 to t=600)",
            "t=1080: expected a tick at t=1080, got never reached (ticks ran from t=0 to t=600)"
        ]
    );
}

#[test]
fn a_gate_a_case_uses_without_declaring_it_skips_it_with_the_flag_to_run_it_and_lint_asks_to_declare_it()
 {
    let case = path("tests/fixtures/gated/tolerance-undeclared.yaml");
    let (code, out, _) = run(&[
        "run",
        &case,
        "--format",
        "json",
        "--feature-gates",
        "HPAConfigurableTolerance=false",
    ]);
    assert_eq!(code, 3, "{out}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        doc["cases"][0]["skip_reason"],
        "needs feature gate HPAConfigurableTolerance=true (it sets hpa.spec.behavior.scaleUp.tolerance), but the run fixes HPAConfigurableTolerance=false; run it with --feature-gates HPAConfigurableTolerance=true"
    );
    // A gate the case does not use never skips it.
    let (code, out, _) = run(&["run", &case, "--feature-gates", "HPAScaleToZero=true"]);
    assert_eq!(code, 0, "{out}");
    let lint = root().join("tests/fixtures/lint");
    let (code, _, err) = run(&[
        "lint",
        &case,
        "--seeds",
        &lint.join("seeds").display().to_string(),
        "--facts",
        &root()
            .join("../shared/reference/upstream-test-facts.yaml")
            .display()
            .to_string(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim(),
        format!(
            "{case}:18:9: the case uses feature gate HPAConfigurableTolerance=true (it sets hpa.spec.behavior.scaleUp.tolerance): declare it in featureGates"
        )
    );
}

#[rstest]
#[case::configurable_tolerance_off("HPAConfigurableTolerance=false")]
#[case::pod_level_resources_off("PodLevelResources=false")]
#[case::scale_to_zero_on("HPAScaleToZero=true")]
fn the_corpus_passes_or_skips_with_each_gate_flipped(#[case] gate: &str) {
    let (code, out, err) = run(&["run", &path("cases"), "--feature-gates", gate]);
    assert_eq!(code, 0, "{err}");
    let failing: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("FAIL") || l.starts_with("ERROR"))
        .collect();
    assert!(failing.is_empty(), "{failing:#?}");
}

#[test]
fn every_report_names_its_corpus_and_the_done_file_names_the_report_folder() {
    let dir = std::env::temp_dir().join(format!("done-file-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let report = dir.join("report");
    let done = dir.join("done");
    let case = path("cases/behavior/policy-walkdown.yaml");
    let (code, out, _) = run(&[
        "run",
        &case,
        "--format",
        "json",
        "--report",
        &report.display().to_string(),
        "--done-file",
        &done.display().to_string(),
    ]);
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    let (_, id, _) = run(&["corpus", &case]);
    let id: serde_json::Value = serde_json::from_str(&id).expect("corpus json");
    assert_eq!(doc["corpus"], id);
    assert_eq!(id["cases"], 1);
    assert_eq!(id["fingerprint"].as_str().map(str::len), Some(16));
    assert_eq!(
        std::fs::read_to_string(&done).unwrap(),
        std::path::absolute(&report).unwrap().display().to_string()
    );
    let junit = std::fs::read_to_string(report.join("junit.xml")).unwrap();
    assert!(junit.contains(&format!(
        r#"<property name="corpus.fingerprint" value="{}"/>"#,
        id["fingerprint"].as_str().unwrap()
    )));
    assert!(
        std::fs::read_to_string(report.join("index.html"))
            .unwrap()
            .contains(id["fingerprint"].as_str().unwrap())
    );

    // A run that cannot produce its report still writes the done file, and a JUnit report
    // whose one errored case says why (what Sonobuoy then shows).
    let _ = std::fs::remove_dir_all(&report);
    let (code, _, err) = run(&[
        "run",
        &case,
        "--target",
        "exec:",
        "--report",
        &report.display().to_string(),
        "--done-file",
        &done.display().to_string(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(done.is_file());
    let junit = std::fs::read_to_string(report.join("junit.xml")).unwrap();
    assert!(
        junit.contains("hpa-conformance run") && junit.contains("<error"),
        "{junit}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_done_file_needs_a_report_folder() {
    let (code, _, err) = run(&[
        "run",
        &path("cases/behavior/policy-walkdown.yaml"),
        "--done-file",
        "/tmp/done",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--report"), "{err}");
}
