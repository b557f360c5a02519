//! The JUnit XML report (quick-junit): one test case per case file, skipped cases with their
//! reason, unloadable files as errors.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::RunReport;
use crate::runner::Outcome;

/// Renders the report.
pub fn render(report: &RunReport) -> String {
    let mut suite = TestSuite::new(format!("hpa-conformance ({})", report.target));
    for r in &report.results {
        let status = match &r.outcome {
            Outcome::Passed => TestCaseStatus::success(),
            Outcome::Skipped(why) => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(why.clone());
                s
            }
            Outcome::Errored(why) => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                s.set_message(why.clone());
                s
            }
            Outcome::Failed(failures) => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                let first = &failures[0];
                s.set_message(format!(
                    "{}: {}: expected {}, got {}",
                    first.t.map_or("whole run".into(), |t| format!("t={t}")),
                    first.check,
                    first.expected,
                    first.actual
                ));
                s.set_description(
                    failures
                        .iter()
                        .map(|f| {
                            format!(
                                "{:?}: {}: expected {}, got {}",
                                f.t, f.check, f.expected, f.actual
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                );
                s
            }
        };
        let mut tc = TestCase::new(r.name.clone(), status);
        tc.set_classname(r.file.clone());
        tc.set_time(r.elapsed);
        suite.add_test_case(tc);
    }
    for e in &report.bad_input {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
        s.set_message(e.to_string());
        s.set_type("bad-input");
        let mut tc = TestCase::new(e.path.display().to_string(), s);
        tc.set_classname("bad-input");
        suite.add_test_case(tc);
    }
    let mut junit = Report::new("hpa-conformance");
    junit.add_test_suite(suite);
    junit
        .to_string()
        .unwrap_or_else(|e| format!("<!-- {e} -->"))
}
