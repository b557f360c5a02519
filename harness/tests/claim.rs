//! `run --claim FILE`: the conformance statement names the implementation from `hello`, the
//! profile, the gates, each level, per folder, and every skipped case with its reason; a markdown
//! summary and a badge are written beside it; `--expected-failures` judges a run by the reviewed
//! list of failing cases.

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cli(args: &[&str]) -> (i32, String, String) {
    let mut argv = vec!["hpa-conformance".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = hpa_harness::cli::main(&argv, &mut out, &mut err);
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

#[test]
fn a_claim_states_who_what_and_how_with_every_skip_and_its_reason() {
    let dir = std::env::temp_dir().join(format!("claim-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("claim.json");
    let target = format!(
        "exec:{} --levels replicas --features memorySeeding --gates-fixed HPAScaleToZero=false",
        env!("CARGO_BIN_EXE_hpa-step-reference")
    );
    let cases = root().join("cases/behavior");
    let (code, out, err) = cli(&[
        "run",
        &cases.to_string_lossy(),
        "--target",
        &target,
        "--feature-gates",
        "PodLevelResources=true",
        "--claim",
        &file.to_string_lossy(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("claim")).expect("json");
    assert_eq!(doc["implementation"], "hpa-step-reference 0.1.0");
    assert_eq!(doc["profile"], "replicas");
    assert_eq!(doc["fixedFeatureGates"]["PodLevelResources"], true);
    let n = doc["corpus"]["cases"].as_u64().expect("cases");
    let skipped = doc["summary"]["skipped"].as_u64().expect("skipped");
    let passed = doc["summary"]["passed"].as_u64().expect("passed");
    assert!(skipped > 0 && passed > 0 && skipped + passed == n, "{doc}");
    let reasons = doc["skipped"].as_array().expect("skipped list");
    assert_eq!(reasons.len() as u64, skipped);
    for r in reasons {
        assert!(
            r["reason"]
                .as_str()
                .is_some_and(|r| r.contains("needs behavior")),
            "{r}"
        );
    }
    assert_eq!(doc["levels"][0]["passed"].as_u64(), Some(passed));
    assert_eq!(doc["levels"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        doc["folders"]["behavior"]["skipped"].as_u64(),
        Some(skipped)
    );
    assert!(
        doc["corpus"]["commit"]
            .as_str()
            .is_some_and(|c| c.len() >= 40 || c == "unknown")
    );

    // A run that passes: the levels, the markdown and the badge.
    let target = format!(
        "exec:{} --levels replicas,status",
        env!("CARGO_BIN_EXE_hpa-step-reference")
    );
    let docs = root().join("cases/algorithm");
    let (code, _, _) = cli(&[
        "run",
        &docs.to_string_lossy(),
        "--target",
        &target,
        "--claim",
        &file.to_string_lossy(),
    ]);
    assert_eq!(code, 0);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc["profile"], "status");
    let ran = doc["summary"]["passed"].as_u64().unwrap();
    assert_eq!(doc["levels"][1]["level"], "status");
    assert_eq!(doc["levels"][1]["passed"].as_u64(), Some(ran));
    let md = std::fs::read_to_string(dir.join("claim.md")).expect("markdown");
    assert!(
        md.starts_with("## HPA conformance: hpa-step-reference 0.1.0"),
        "{md}"
    );
    assert!(md.contains(&format!("**status** {ran}/{ran}")), "{md}");
    assert!(md.contains("| algorithm |"), "{md}");
    let svg = std::fs::read_to_string(dir.join("claim.svg")).expect("badge");
    assert!(svg.contains(&format!("status {ran}/{ran}")), "{svg}");
    let mut reader = quick_xml::Reader::from_str(&svg);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("badge is not XML: {e}"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn expected_failures_pass_the_run_only_when_exactly_those_cases_fail() {
    let dir = std::env::temp_dir().join(format!("expected-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // Without conditions and events, at full the cases that check them fail.
    let target = format!(
        "exec:{} --replicas-only",
        env!("CARGO_BIN_EXE_hpa-step-reference")
    );
    let cases = root().join("cases/docs");
    let cases = cases.to_string_lossy();
    let (code, out, _) = cli(&["run", &cases, "--target", &target]);
    assert_eq!(code, 1);
    let failing: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("FAIL  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(!failing.is_empty());
    let all: String = failing
        .iter()
        .map(|n| format!("{n}: \"no conditions or events\"\n"))
        .collect();
    let file = dir.join("expected.yaml");
    std::fs::write(&file, &all).unwrap();
    let (code, _, err) = cli(&[
        "run",
        &cases,
        "--target",
        &target,
        "--expected-failures",
        &file.to_string_lossy(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!(
            "{} failed as expected, 0 unexpected",
            failing.len()
        )),
        "{err}"
    );
    // One fewer listed: a new failure fails the run.
    let fewer: String = all.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, fewer).unwrap();
    let (code, _, err) = cli(&[
        "run",
        &cases,
        "--target",
        &target,
        "--expected-failures",
        &file.to_string_lossy(),
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("NEW FAILURE  {}", failing[0])),
        "{err}"
    );
    // Listed cases that pass (on the reference core, every one) fail the run too.
    std::fs::write(&file, &all).unwrap();
    let (code, _, err) = cli(&[
        "run",
        &cases,
        "--expected-failures",
        &file.to_string_lossy(),
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("NO LONGER    {}  (passed", failing[0])),
        "{err}"
    );
    // A broken file is bad input.
    std::fs::write(&file, "a: [\n").unwrap();
    let (code, _, err) = cli(&[
        "run",
        &cases,
        "--expected-failures",
        &file.to_string_lossy(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("expected.yaml:"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn output_paths_are_checked_before_the_run_and_a_missing_folder_is_created() {
    let dir = std::env::temp_dir().join(format!("claim-paths-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cases = root().join("cases/algorithm");
    let cases = cases.to_string_lossy();
    // A claim into folders that do not exist yet: created, the statement written.
    let nested = dir.join("not/yet/claim.json");
    let (code, out, err) = cli(&["run", &cases, "--claim", &nested.to_string_lossy()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(nested.is_file() && nested.with_extension("md").is_file());
    // The markdown or the badge named as the claim: a usage error before anything runs.
    for wrong in ["claim.md", "claim.svg"] {
        let (code, out, err) = cli(&["run", &cases, "--claim", &dir.join(wrong).to_string_lossy()]);
        assert_eq!(code, 2, "{wrong}: {out}{err}");
        assert!(err.contains("name the JSON statement"), "{err}");
        assert!(out.is_empty(), "nothing ran: {out}");
    }
    // A claim that would overwrite a file of --report.
    let (code, out, err) = cli(&[
        "run",
        &cases,
        "--report",
        &dir.to_string_lossy(),
        "--claim",
        &dir.join("report.json").to_string_lossy(),
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("--report") && err.contains("report.json"),
        "{err}"
    );
    // Its .md or .svg too: `index` would write index.md and index.svg, none of report's; but a
    // claim `junit` writes junit.md/junit.svg beside the JSON `junit`, fine — and `junit.xml`
    // itself is refused.
    let (code, _, err) = cli(&[
        "run",
        &cases,
        "--report",
        &dir.to_string_lossy(),
        "--claim",
        &dir.join("junit.xml").to_string_lossy(),
    ]);
    assert_eq!(code, 2, "{err}");
    // A folder that cannot be made (a file is in the way): a usage error before the run.
    let blocker = dir.join("a-file");
    std::fs::write(&blocker, "x").unwrap();
    let (code, out, err) = cli(&[
        "run",
        &cases,
        "--claim",
        &blocker.join("claim.json").to_string_lossy(),
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("cannot create the folder"), "{err}");
    assert!(out.is_empty(), "nothing ran: {out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn with_filter_only_the_selected_cases_are_judged_against_the_expected_failures() {
    let dir = std::env::temp_dir().join(format!("expected-filter-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let target = format!(
        "exec:{} --replicas-only",
        env!("CARGO_BIN_EXE_hpa-step-reference")
    );
    let cases = root().join("cases");
    let cases = cases.to_string_lossy();
    // Fails at full without conditions: docs-cpu-doubling checks a condition? Find one that
    // fails in the docs folder, list it with a case the filter leaves out.
    let (_, out, _) = cli(&["run", &format!("{cases}/docs"), "--target", &target]);
    let failing = out
        .lines()
        .filter_map(|l| l.strip_prefix("FAIL  "))
        .filter_map(|l| l.split_whitespace().next())
        .next()
        .expect("a failing docs case")
        .to_string();
    let file = dir.join("expected.yaml");
    std::fs::write(
        &file,
        format!("{failing}: \"no conditions\"\npolicy-walkdown: \"not selected by the filter\"\n"),
    )
    .unwrap();
    let (code, _, err) = cli(&[
        "run",
        &cases,
        "--target",
        &target,
        "--filter",
        &failing,
        "--expected-failures",
        &file.to_string_lossy(),
        "--claim",
        &dir.join("claim.json").to_string_lossy(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("1 failed as expected, 0 unexpected failure(s), 0 listed"),
        "{err}"
    );
    assert!(
        err.contains("1 listed case(s) not selected by this run"),
        "{err}"
    );
    // The statement stands alone: what hello declared, the expected failure with its reason,
    // the release, the corpus commit, and no local path.
    let text = std::fs::read_to_string(dir.join("claim.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        doc["target"], "exec:hpa-step-reference --replicas-only",
        "{doc}"
    );
    assert!(
        !text.contains(&*root().to_string_lossy()),
        "a local path: {text}"
    );
    assert_eq!(doc["kubernetesVersion"], "1.37");
    assert!(
        doc["declared"]["features"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == "externalMetrics")),
        "{doc}"
    );
    assert_eq!(doc["declared"]["memorySeeding"], true);
    assert_eq!(doc["expectedFailures"][0]["case"], failing.as_str());
    assert_eq!(doc["expectedFailures"][0]["reason"], "no conditions");
    assert!(doc["corpus"]["commit"].is_string());
    let md = std::fs::read_to_string(dir.join("claim.md")).unwrap();
    assert!(
        md.contains("Declared in hello:") && md.contains(&format!("`{failing}`: no conditions")),
        "{md}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
