//! The JUnit XML report (quick-junit): one test case per case file, skipped cases with their
//! reason, unloadable files as errors, the implementation's stderr tail as `system-err`.
//!
//! The XML is well-formed whatever a case name or an implementation's stderr contains: every
//! character XML 1.0 does not allow (control characters, U+FFFE, U+FFFF) — and any other a CI
//! log would act on — is written as the text `\u{…}` ([`xml_safe`], [`crate::util::text::visible`]).

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::RunReport;
use crate::run::{Failure, Outcome};

/// `s` with every character XML 1.0 does not allow written as `\u{…}` ([`crate::util::text::visible`]:
/// tabs and newlines stay, the rest that is not printable is escaped).
pub fn xml_safe(s: &str) -> String {
    crate::util::text::visible(s).into_owned()
}

fn failure_line(f: &Failure) -> String {
    format!(
        "{}: {}: expected {}, got {}",
        f.t.map_or("whole run".into(), |t| format!("t={t}")),
        f.what(),
        f.expected,
        f.actual
    )
}

/// A JUnit report for a run that could not produce its own: one errored case, `hpa-conformance
/// run`, whose message is `why` (what a collector such as Sonobuoy then shows as the failure).
pub fn run_error(why: &str) -> String {
    let mut suite = TestSuite::new("hpa-conformance");
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    status.set_message(xml_safe(why.lines().next().unwrap_or_default()));
    status.set_description(xml_safe(why));
    suite.add_test_case(TestCase::new("hpa-conformance run", status));
    let mut report = Report::new("hpa-conformance");
    report.add_test_suite(suite);
    report.to_string().unwrap_or_default()
}

/// Renders the report.
pub fn render(report: &RunReport) -> String {
    let mut suite = TestSuite::new(xml_safe(&format!("hpa-conformance ({})", report.target)));
    // Which corpus was judged, as the suite's properties.
    let c = &report.corpus;
    for (name, value) in [
        ("corpus.commit", c.commit.clone()),
        ("corpus.cases", c.cases.to_string()),
        ("corpus.fingerprint", c.fingerprint.clone()),
    ] {
        suite.add_property(quick_junit::Property::new(name, xml_safe(&value)));
    }
    for r in &report.results {
        let status = match &r.outcome {
            Outcome::Passed => TestCaseStatus::success(),
            Outcome::Skipped(why) => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(xml_safe(why));
                s
            }
            Outcome::Errored(why) => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                let first = why.lines().next().unwrap_or_default();
                s.set_message(xml_safe(first));
                s.set_description(xml_safe(why));
                s
            }
            Outcome::Failed(failures) => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                if let Some(first) = failures.first() {
                    s.set_message(xml_safe(&failure_line(first)));
                }
                let lines: Vec<String> = failures.iter().map(failure_line).collect();
                s.set_description(xml_safe(&format!("{}\n{}", r.title, lines.join("\n"))));
                s
            }
        };
        let mut tc = TestCase::new(xml_safe(&r.name), status);
        tc.set_classname(xml_safe(&r.file));
        tc.set_time(r.elapsed);
        if let Some(d) = &r.diagnostics {
            tc.set_system_err(xml_safe(d));
        }
        if let Some(p) = &r.posed {
            tc.set_system_out(xml_safe(&format!("posed: {p}")));
        }
        suite.add_test_case(tc);
    }
    for e in &report.bad_input {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
        s.set_message(xml_safe(&e.to_string()));
        s.set_type("bad-input");
        let mut tc = TestCase::new(xml_safe(&e.path.display().to_string()), s);
        tc.set_classname("bad-input");
        suite.add_test_case(tc);
    }
    let mut junit = Report::new("hpa-conformance");
    junit.add_test_suite(suite);
    junit
        .to_string()
        .unwrap_or_else(|e| format!("<!-- {} -->", xml_safe(&e.to_string()).replace("--", "- -")))
}

#[cfg(test)]
mod tests {
    use super::xml_safe;

    #[test]
    fn characters_xml_forbids_become_visible_escapes() {
        assert_eq!(
            xml_safe("a\u{0}b\u{1b}c\u{fffe}\u{ffff}\td"),
            "a\\u{0}b\\u{1b}c\\u{fffe}\\u{ffff}\td"
        );
    }
}
