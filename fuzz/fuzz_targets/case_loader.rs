//! The case loader (`hpa_harness::case::load_case_text`): any text loads or is a `LoadError`
//! with a position, never a panic; a case that loads stays within the harness's limits.

#![no_main]

use std::path::Path;

use hpa_harness::case::bounds::MAX_TICKS;
use hpa_harness::case::load_case_text;
use hpa_harness::case::bounds::MAX_PODS;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|s: &str| {
    if let Ok(case) = load_case_text(Path::new("fuzz.yaml"), s) {
        assert!((0..=MAX_PODS).contains(&case.file.workload.replicas));
        assert!(u64::from(case.duration / case.sync_period) < MAX_TICKS);
    }
});
