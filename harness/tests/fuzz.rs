//! Differential fuzzing: random scenarios through the protocol agree with the in-process core,
//! and a planted difference is found, shrunk and written as a loadable regression case.

use std::path::PathBuf;
use std::time::Duration;

use hpa_harness::case::Case;
use hpa_harness::cli::make_target;
use hpa_harness::fuzz::{Rng, fuzz, generate, to_case};
use hpa_harness::runner::{Outcome, RunOptions, run_case};
use hpa_harness::target::{CoreTarget, GateSupport, Session, Target, TargetError, TickOutcome};
use hpa_harness::world::Snapshot;
use hpa_reference::Settings;

#[test]
fn generated_scenarios_are_valid_cases_and_deterministic() {
    for i in 0..300 {
        let a = generate("g", &mut Rng::new(i));
        let b = generate("g", &mut Rng::new(i));
        let text_a = hpa_harness::yaml::to_string(&a).expect("yaml");
        assert_eq!(text_a, hpa_harness::yaml::to_string(&b).expect("yaml"));
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
