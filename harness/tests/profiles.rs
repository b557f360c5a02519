//! Conformance profiles and implementation features, end to end with `hpa-step-reference`
//! (the reference core behind the step protocol) declaring less than it has: a run is judged at
//! the level the implementation declares (or `--profile`), cases needing a feature it does not
//! declare are skipped by name with the field that needs it, and a memory that records nothing
//! needs no memory seeding.

use std::path::PathBuf;
use std::time::Duration;

use hpa_harness::case::Case;
use hpa_harness::case::corpus::load_all;
use hpa_harness::case::features::Feature;
use hpa_harness::fuzz::fuzz_with;
use hpa_harness::profile::Profile;
use hpa_harness::report::levels::level_counts;
use hpa_harness::run::{CaseResult, Outcome, RunOptions, run_case, run_case_judged};
use hpa_harness::targets::make_target;
use hpa_harness::targets::{CoreTarget, GateSupport, Session, Target, TargetError, TickOutcome};
use hpa_harness::world::Snapshot;
use hpa_reference::Settings;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn step_reference(flags: &str) -> String {
    format!("exec:{} {flags}", env!("CARGO_BIN_EXE_hpa-step-reference"))
}

fn corpus() -> Vec<Case> {
    let (cases, bad) = load_all(&[root().join("cases")]);
    assert!(bad.is_empty(), "{bad:?}");
    assert!(cases.len() > 200);
    cases
}

fn one(rel: &str) -> Case {
    let (mut cases, bad) = load_all(&[root().join(rel)]);
    assert!(bad.is_empty(), "{bad:?}");
    cases.remove(0)
}

fn run(case: &Case, flags: &str, profile: Option<Profile>) -> (CaseResult, Option<Profile>) {
    let target = make_target(&step_reference(flags), Duration::from_secs(30)).expect("target");
    let opts = RunOptions {
        profile,
        ..RunOptions::default()
    };
    run_case_judged(case, target.as_ref(), &opts)
}

fn skipped(r: &CaseResult) -> &str {
    match &r.outcome {
        Outcome::Skipped(why) => why,
        other => panic!("{} should have been skipped, got {other:?}", r.name),
    }
}

#[test]
fn an_implementation_without_status_passes_every_case_at_replicas_and_fails_status_checks() {
    // The core with conditions, currentMetrics and events taken out of every answer: at the
    // `replicas` level it is the reference, so every case that passes on the core passes; at
    // `full` the cases that check conditions, metrics or events fail, and only at those levels.
    let cases = corpus();
    let declared_replicas = make_target(
        &step_reference("--replicas-only --levels replicas"),
        Duration::from_secs(30),
    )
    .expect("target");
    let declared_full =
        make_target(&step_reference("--replicas-only"), Duration::from_secs(30)).expect("target");
    let mut at_replicas = Vec::new();
    let mut at_full = Vec::new();
    for case in &cases {
        let core = run_case(case, &CoreTarget, &RunOptions::default());
        let (r, judged) = run_case_judged(case, declared_replicas.as_ref(), &RunOptions::default());
        if case.file.expect.rejected.is_some() || matches!(core.outcome, Outcome::Skipped(_)) {
            // Never reaches an implementation (a rejection, or a case the judged release
            // cannot run, such as a gate it locks).
            assert!(matches!(r.outcome, Outcome::Skipped(_)), "{}", case.name());
            continue;
        }
        assert_eq!(judged, Some(Profile::Replicas), "{}", case.name());
        if let Outcome::Skipped(why) = &r.outcome
            && why.contains("scaleApi.updateFailures")
        {
            // A one-shot scale error is used up by a reported failure: status level and up.
            assert!(core.passed(), "{}", case.name());
            continue;
        }
        assert_eq!(
            r.passed(),
            core.passed(),
            "{}: {:?} (core: {:?})",
            case.name(),
            r.outcome,
            core.outcome
        );
        at_replicas.push(r);
        at_full.push(run_case(
            case,
            declared_full.as_ref(),
            &RunOptions::default(),
        ));
    }
    let ran = at_replicas
        .iter()
        .filter(|r| !matches!(r.outcome, Outcome::Skipped(_)))
        .count();
    assert_eq!(
        level_counts(&at_replicas, Profile::Replicas),
        vec![(Profile::Replicas, ran, ran)]
    );
    let counts = level_counts(&at_full, Profile::Full);
    assert_eq!(counts[0], (Profile::Replicas, ran, ran), "{counts:?}");
    assert!(counts[1].1 < ran, "status checks fail: {counts:?}");
    assert!(counts[2].1 <= counts[1].1, "{counts:?}");
    for r in &at_full {
        if let Outcome::Failed(f) = &r.outcome {
            assert!(
                f.iter()
                    .all(|f| Profile::of_check(&f.check) >= Profile::Status),
                "{}: {f:?}",
                r.name
            );
        }
    }
}

#[test]
fn a_profile_above_what_the_implementation_declares_skips_with_the_flag_that_runs_it() {
    let case = one("cases/behavior/policy-walkdown.yaml");
    let (r, judged) = run(&case, "--levels replicas,status", Some(Profile::Full));
    assert_eq!(judged, Some(Profile::Full));
    let why = skipped(&r);
    assert!(why.contains("declares levels up to status"), "{why}");
    assert!(why.contains("--profile status"), "{why}");
    let (r, judged) = run(&case, "--levels replicas,status", None);
    assert_eq!(judged, Some(Profile::Status));
    assert_eq!(r.outcome, Outcome::Passed);
}

#[test]
fn levels_without_replicas_fail_the_case_with_the_reason() {
    let case = one("cases/behavior/policy-walkdown.yaml");
    let (r, _) = run(&case, "--levels full", None);
    match &r.outcome {
        Outcome::Errored(e) => assert!(e.contains("does not include replicas"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_case_needing_an_undeclared_feature_is_skipped_by_name_with_the_field() {
    let behavior = one("cases/behavior/policy-walkdown.yaml");
    assert_eq!(
        behavior.features,
        vec![(Feature::Behavior, "hpa.spec.behavior".to_string())]
    );
    let (r, _) = run(
        &behavior,
        "--features containerResource,memorySeeding",
        None,
    );
    assert_eq!(
        skipped(&r),
        "the case needs behavior (it sets hpa.spec.behavior), which hpa-step-reference 0.1.0 does not declare in hello (features, memorySeeding)"
    );
    let container = one("cases/docs/docs-container-resource-metric.yaml");
    let (r, _) = run(&container, "--features behavior", None);
    let why = skipped(&r);
    assert!(
        why.starts_with("the case needs containerResource (it sets hpa.spec.metrics[0])"),
        "{why}"
    );
    // An External metric needs externalMetrics; its Object-metric twin needs nothing of it.
    let external = one("cases/controller/ht-scaling-with-rules-01.yaml");
    let (r, _) = run(&external, "--features behavior,memorySeeding", None);
    let why = skipped(&r);
    assert!(
        why.starts_with("the case needs externalMetrics (it sets hpa.spec.metrics[0])"),
        "{why}"
    );
    let twin = one("cases/controller/ht-scaling-with-rules-01-object.yaml");
    let (r, _) = run(&twin, "--features behavior,memorySeeding", None);
    assert_eq!(r.outcome, Outcome::Passed);
    // A case needing neither runs.
    let plain = one("cases/algorithm/docs-cpu-doubling.yaml");
    assert!(plain.features.is_empty(), "{:?}", plain.features);
    let (r, _) = run(&plain, "--features none-of-the-known-ones", None);
    assert_eq!(r.outcome, Outcome::Passed);
}

#[test]
fn only_a_memory_that_records_something_needs_memory_seeding() {
    // Over the corpus: without memory seeding, exactly the cases whose memory records a
    // recommendation or a scale event are skipped; the "seen before, nothing recorded" ones run
    // and pass.
    let cases = corpus();
    let target = make_target(
        &step_reference("--no-memory-seeding"),
        Duration::from_secs(30),
    )
    .expect("target");
    let mut empty_memory_ran = 0;
    let mut recorded_skipped = 0;
    for case in &cases {
        let Some(memory) = &case.file.memory else {
            continue;
        };
        let recorded = !(memory.recommendations.is_empty()
            && memory.scale_up_events.is_empty()
            && memory.scale_down_events.is_empty());
        let r = run_case(case, target.as_ref(), &RunOptions::default());
        if recorded {
            let why = skipped(&r);
            assert!(
                why.starts_with("the case needs memorySeeding (it sets memory)"),
                "{why}"
            );
            recorded_skipped += 1;
        } else {
            assert_eq!(r.outcome, Outcome::Passed, "{}", case.name());
            empty_memory_ran += 1;
        }
    }
    assert!(empty_memory_ran > 50, "{empty_memory_ran}");
    assert!(recorded_skipped > 10, "{recorded_skipped}");
}

/// The core without conditions, current metrics or events in its answers: it differs from the
/// core at `status` and `full`, never at `replicas`.
struct StatusLess;

struct StatusLessSession(Box<dyn Session>);

impl Session for StatusLessSession {
    fn tick(&mut self, s: &Snapshot) -> Result<TickOutcome, TargetError> {
        let mut o = self.0.tick(s)?;
        o.status.conditions = None;
        o.status.current_metrics = None;
        o.events.clear();
        Ok(o)
    }
}

impl Target for StatusLess {
    fn name(&self) -> String {
        "status-less".into()
    }
    fn gate_support(&self) -> GateSupport {
        GateSupport::PerCase
    }
    fn start(&self, case: &Case, settings: &Settings) -> Result<Box<dyn Session>, TargetError> {
        Ok(Box::new(StatusLessSession(
            CoreTarget.start(case, settings)?,
        )))
    }
}

#[test]
fn fuzz_compares_traces_at_the_profile() {
    let out = std::env::temp_dir().join(format!("fuzz-profile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let at = |profile| RunOptions {
        profile: Some(profile),
        ..RunOptions::default()
    };
    let r = fuzz_with(
        &CoreTarget,
        &StatusLess,
        7,
        40,
        &out,
        false,
        &at(Profile::Replicas),
    )
    .expect("fuzz");
    assert!(r.differences.is_empty(), "{:?}", r.differences);
    assert_eq!(r.scenarios, 40);
    let r = fuzz_with(
        &CoreTarget,
        &StatusLess,
        7,
        40,
        &out,
        false,
        &at(Profile::Status),
    )
    .expect("fuzz");
    assert_eq!(r.differences.len(), 1, "conditions differ at status");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn fuzz_writes_into_the_corpus_by_default_only_for_this_projects_targets() {
    use hpa_harness::fuzz::default_out;
    let corpus = PathBuf::from("cases/regressions");
    assert_eq!(
        default_out("core", "exec:adapters/upstream/bin/hpa-upstream-adapter"),
        corpus
    );
    assert_eq!(default_out("core", "reference-api"), corpus);
    assert_eq!(
        default_out("core", "exec:target/debug/hpa-step-reference --crash-at 3"),
        corpus
    );
    let elsewhere = PathBuf::from("hpa-fuzz-findings");
    assert_eq!(
        default_out("core", "exec:./my-hpa --step-protocol"),
        elsewhere
    );
    assert_eq!(
        default_out(
            "exec:adapters/k8shorizmetrics/bin/hpa-k8shorizmetrics-adapter",
            "core"
        ),
        elsewhere
    );
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
fn the_summary_reports_every_level_up_to_the_profile() {
    let folder = root().join("cases/docs");
    let folder = folder.to_string_lossy();
    let target = step_reference("--replicas-only");
    let (code, out, _) = cli(&["run", &folder, "--target", &target]);
    assert_eq!(code, 1, "conditions and events are missing at full: {out}");
    // A failure shows the case's notes (its arithmetic) under its title.
    assert!(out.contains("\n    notes:\n      "), "{out}");
    let last = out.lines().last().unwrap_or_default();
    assert!(last.starts_with("profile full: replicas "), "{last}");
    let n = out
        .lines()
        .filter(|l| l.starts_with("PASS") || l.starts_with("FAIL"))
        .count();
    assert!(
        last.contains(&format!("replicas {n}/{n} · status ")),
        "{last}"
    );
    let (code, out, _) = cli(&[
        "run",
        &folder,
        "--target",
        &target,
        "--profile",
        "replicas",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{out}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(doc["summary"]["profile"], "replicas");
    assert_eq!(doc["summary"]["levels"][0]["level"], "replicas");
    assert_eq!(doc["summary"]["levels"][0]["passed"], n);
    assert_eq!(doc["summary"]["levels"][0]["ran"], n);
    assert_eq!(doc["summary"]["levels"].as_array().map(Vec::len), Some(1));
    // The reference core is judged at full (it also runs the rejected-manifest cases the
    // implementation skips).
    let (code, out, _) = cli(&["run", &folder]);
    assert_eq!(code, 0, "{out}");
    let n = out.lines().filter(|l| l.starts_with("PASS")).count();
    assert!(
        out.lines().last().is_some_and(
            |l| l == format!("profile full: replicas {n}/{n} · status {n}/{n} · full {n}/{n}")
        ),
        "{out}"
    );
}

#[test]
fn explain_takes_the_gates_and_the_profile() {
    let case = root().join("cases/calculator/rc-configurable-tolerance-cm-pods.yaml");
    let case = case.to_string_lossy();
    let (code, out, _) = cli(&[
        "explain",
        &case,
        "--feature-gates",
        "HPAConfigurableTolerance=false",
    ]);
    assert_eq!(code, 3, "the case needs the gate on: {out}");
    let (code, _, _) = cli(&["explain", &case, "--profile", "replicas"]);
    assert_eq!(code, 0);
    // At full a status-less implementation fails the case's condition checks; at replicas not.
    let folder = root().join("cases/algorithm/min-max-clamping.yaml");
    let folder = folder.to_string_lossy();
    let target = step_reference("--replicas-only");
    let (code, _, _) = cli(&["explain", &folder, "--target", &target]);
    assert_eq!(code, 1);
    let (code, out, _) = cli(&[
        "explain",
        &folder,
        "--target",
        &target,
        "--profile",
        "replicas",
    ]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn cluster_runs_refuse_what_they_cannot_do_yet() {
    let (code, _, err) = cli(&["run", "--target", "cluster", "--profile", "replicas"]);
    assert_eq!(code, 2);
    assert!(err.contains("not available with --target cluster"), "{err}");
}

#[test]
fn memory_expectations_need_a_reported_memory_and_are_checked_exactly() {
    let case = one("cases/controller/ht-store-scale-events-different-periods.yaml");
    assert!(
        case.features
            .contains(&(Feature::MemoryReport, "expect.at[0].memory".to_string())),
        "{:?}",
        case.features
    );
    // Declared: the memory comes back through the protocol and matches.
    let (r, _) = run(&case, "", None);
    assert_eq!(r.outcome, Outcome::Passed);
    // Not declared (an absent list does not include memoryReport): skipped by name.
    let (r, _) = run(
        &case,
        "--features behavior,containerResource,memorySeeding,externalMetrics",
        None,
    );
    assert!(
        skipped(&r).starts_with("the case needs memoryReport (it sets expect.at[0].memory)"),
        "{}",
        skipped(&r)
    );
    // A wrong expectation fails with both lists, in the controller's order.
    let mut wrong = case.clone();
    let memory = wrong.file.expect.at[0].memory.as_mut().expect("memory");
    let events = memory.scale_up_events.as_mut().expect("scale-ups");
    events[2].outdated = false;
    let r = run_case(&wrong, &CoreTarget, &RunOptions::default());
    match r.outcome {
        Outcome::Failed(f) => {
            assert_eq!(f.len(), 1, "{f:?}");
            assert_eq!(f[0].check, "memory.scaleUpEvents");
            assert_eq!(f[0].expected, "[8@-29, 6@-59, 7@-61, 5@0]");
            assert_eq!(f[0].actual, "[8@-29, 6@-59, 7@-61 (outdated), 5@0]");
        }
        other => panic!("{other:?}"),
    }
}
