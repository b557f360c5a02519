//! Each of the controller's documented flag defaults is pinned by the corpus: run with the
//! default moved a little either way (everything else as shipped), at least one case must fail.
//! A default nobody pins could change unnoticed in an implementation under test.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use hpa_harness::case::Case;
use hpa_harness::case::corpus::load_all;
use hpa_harness::run::{Outcome, RunOptions, run_case};
use hpa_harness::targets::CoreTarget;
use hpa_reference::Settings;
use rstest::rstest;

fn corpus() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../cases"));
        let (cases, bad) = load_all(&[root]);
        assert!(bad.is_empty(), "the corpus must load: {bad:?}");
        assert!(!cases.is_empty(), "no cases were found");
        cases
    })
}

/// The first case that fails when the controller's unset flags take `flags`, if any.
fn first_failure(flags: Settings) -> Option<String> {
    let opts = RunOptions {
        flag_defaults: Some(flags),
        ..RunOptions::default()
    };
    corpus()
        .iter()
        .find_map(|case| match run_case(case, &CoreTarget, &opts).outcome {
            Outcome::Failed(_) | Outcome::Errored(_) => Some(case.file.name.clone()),
            Outcome::Passed | Outcome::Skipped(_) => None,
        })
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[rstest]
#[case::tolerance_below("tolerance 0.09", Settings { tolerance: 0.09, ..Settings::default() })]
#[case::tolerance_above("tolerance 0.11", Settings { tolerance: 0.11, ..Settings::default() })]
#[case::cpu_initialization_period_below("cpu-initialization-period 299s", Settings { cpu_initialization_period: secs(299), ..Settings::default() })]
#[case::cpu_initialization_period_above("cpu-initialization-period 301s", Settings { cpu_initialization_period: secs(301), ..Settings::default() })]
#[case::initial_readiness_delay_below("initial-readiness-delay 29s", Settings { initial_readiness_delay: secs(29), ..Settings::default() })]
#[case::initial_readiness_delay_above("initial-readiness-delay 31s", Settings { initial_readiness_delay: secs(31), ..Settings::default() })]
#[case::downscale_stabilization_below("downscale-stabilization 299s", Settings { downscale_stabilization: secs(299), ..Settings::default() })]
#[case::downscale_stabilization_above("downscale-stabilization 301s", Settings { downscale_stabilization: secs(301), ..Settings::default() })]
#[case::scale_up_limit_factor_below("scale-up limit factor 1.9", Settings { scale_up_limit_factor: 1.9, ..Settings::default() })]
#[case::scale_up_limit_factor_above("scale-up limit factor 2.1", Settings { scale_up_limit_factor: 2.1, ..Settings::default() })]
#[case::scale_up_limit_minimum_below("scale-up limit minimum 3", Settings { scale_up_limit_minimum: 3.0, ..Settings::default() })]
#[case::scale_up_limit_minimum_above("scale-up limit minimum 5", Settings { scale_up_limit_minimum: 5.0, ..Settings::default() })]
fn a_moved_default_fails_a_case(#[case] what: &str, #[case] flags: Settings) {
    assert_ne!(
        flags,
        Settings::default(),
        "{what}: the flags must differ from the defaults"
    );
    let failed = first_failure(flags);
    assert!(
        failed.is_some(),
        "with {what} every case still passes: no case pins that default"
    );
    eprintln!("{what}: first caught by {}", failed.unwrap_or_default());
}

#[test]
fn the_shipped_defaults_pass_every_case() {
    assert_eq!(first_failure(Settings::default()), None);
}
