//! The corpus as a single verdict check, for mutation testing (`just mutants`): every case under
//! `cases/` must pass on the in-process reference core. Unlike the `corpus` suite it compares no
//! snapshots — a mutant counts as killed only when a case's expectations catch it — and it stops
//! at the first failing case. Built only with the `mutants` feature, so the ordinary suite does
//! not run the corpus twice.

use std::path::PathBuf;

use hpa_harness::case::corpus::load_all;
use hpa_harness::run::{Outcome, RunOptions, run_case};
use hpa_harness::targets::CoreTarget;

#[test]
fn every_case_passes_on_the_core() {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../cases"));
    let (cases, bad) = load_all(&[root]);
    assert!(bad.is_empty(), "the corpus must load: {bad:?}");
    assert!(!cases.is_empty(), "no cases were found");
    let opts = RunOptions::default();
    let mut passed = 0;
    for case in &cases {
        match run_case(case, &CoreTarget, &opts).outcome {
            Outcome::Passed => passed += 1,
            Outcome::Skipped(why) => panic!("case {} skipped: {why}", case.file.name),
            Outcome::Failed(f) => panic!("case {} failed: {f:#?}", case.file.name),
            Outcome::Errored(e) => panic!("case {} errored: {e}", case.file.name),
        }
    }
    assert_eq!(passed, cases.len());
}
