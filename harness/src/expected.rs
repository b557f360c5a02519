//! Reviewed expectations of a third-party implementation: a YAML map from each case it is known
//! to fail to why it differs from upstream (`run --expected-failures FILE`). A run then passes
//! when exactly those cases fail — a case that starts failing, or one listed that now passes or
//! is skipped, fails the run — so a change in the corpus or in the implementation shows up.
//!
//! ```yaml
//! # case name: why it differs from upstream
//! rc-tolerance: "tolerance is never set: NewEvaluator(t) leaves Evaluator.Tolerance at 0"
//! ```

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use crate::case::LoadError;
use crate::run::{CaseResult, Outcome};

/// The reviewed expectations: case name → why it differs from upstream.
pub type ExpectedFailures = BTreeMap<String, String>;

/// Reads an expectations file; a broken one is an error with its position.
pub fn load(path: &Path) -> Result<ExpectedFailures, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|e| LoadError {
        path: path.to_path_buf(),
        pos: Default::default(),
        reason: e.to_string(),
    })?;
    let map: Option<ExpectedFailures> =
        crate::util::yaml::from_str(&text).map_err(|e| LoadError {
            path: path.to_path_buf(),
            pos: e.pos,
            reason: format!("{} (expected a map of case name to reason)", e.reason),
        })?;
    let map = map.unwrap_or_default();
    if let Some((name, _)) = map.iter().find(|(_, why)| why.trim().is_empty()) {
        return Err(LoadError {
            path: path.to_path_buf(),
            pos: Default::default(),
            reason: format!("{name}: every expected failure says why it differs from upstream"),
        });
    }
    Ok(map)
}

/// How a run compares with the expectations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Cases that failed as expected.
    pub as_expected: usize,
    /// Cases that failed but are not listed.
    pub unexpected_failures: Vec<String>,
    /// Listed cases that passed, or were skipped, or were not run at all (name, what happened).
    pub unexpected_others: Vec<(String, String)>,
    /// Listed cases the run did not select (`--filter`, or case paths narrower than the
    /// corpus): not judged.
    pub not_selected: usize,
}

impl Verdict {
    /// The run matches the expectations.
    pub fn holds(&self) -> bool {
        self.unexpected_failures.is_empty() && self.unexpected_others.is_empty()
    }

    /// A few lines for the human report.
    pub fn render(&self, file: &Path) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "expected failures ({}): {} failed as expected, {} unexpected failure(s), {} listed case(s) that did not fail",
            file.display(),
            self.as_expected,
            self.unexpected_failures.len(),
            self.unexpected_others.len()
        );
        if self.not_selected > 0 {
            let _ = writeln!(
                out,
                "  ({} listed case(s) not selected by this run: not judged)",
                self.not_selected
            );
        }
        for n in &self.unexpected_failures {
            let _ = writeln!(out, "  NEW FAILURE  {n}  (not in the expectations)");
        }
        for (n, what) in &self.unexpected_others {
            let _ = writeln!(
                out,
                "  NO LONGER    {n}  ({what}; remove it from the expectations)"
            );
        }
        out
    }
}

/// Compares the results with the expectations. `narrowed`: the run selected part of the corpus
/// (`--filter`, or case paths), so a listed case it did not run is not judged; a run of the whole
/// corpus that lacks a listed case reports it (the case was renamed or removed).
pub fn compare(results: &[CaseResult], expected: &ExpectedFailures, narrowed: bool) -> Verdict {
    let mut v = Verdict::default();
    for r in results {
        let failed = matches!(r.outcome, Outcome::Failed(_) | Outcome::Errored(_));
        match (failed, expected.contains_key(&r.name)) {
            (true, true) => v.as_expected += 1,
            (true, false) => v.unexpected_failures.push(r.name.clone()),
            (false, true) => v.unexpected_others.push((
                r.name.clone(),
                match &r.outcome {
                    Outcome::Skipped(why) => format!("skipped: {why}"),
                    _ => "passed".into(),
                },
            )),
            (false, false) => {}
        }
    }
    for name in expected.keys() {
        if !results.iter().any(|r| &r.name == name) {
            if narrowed {
                v.not_selected += 1;
            } else {
                v.unexpected_others
                    .push((name.clone(), "not in this run".into()));
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::fail;
    use std::time::Duration;

    fn result(name: &str, outcome: Outcome) -> CaseResult {
        CaseResult {
            name: name.into(),
            title: String::new(),
            file: String::new(),
            outcome,
            trace: Vec::new(),
            alongside: Vec::new(),
            elapsed: Duration::ZERO,
            diagnostics: None,
            posed: None,
        }
    }

    #[test]
    fn only_the_listed_failures_hold() {
        let failed = || Outcome::Failed(vec![fail(None, "trajectory", "1", "2")]);
        let results = vec![
            result("a", failed()),
            result("b", Outcome::Errored("crash".into())),
            result("c", Outcome::Passed),
            result("d", Outcome::Skipped("gate".into())),
        ];
        let expected: ExpectedFailures = [("a", "why"), ("b", "why")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let v = compare(&results, &expected, false);
        assert!(v.holds(), "{v:?}");
        assert_eq!(v.as_expected, 2);

        let mut more = expected.clone();
        more.insert("c".into(), "why".into());
        more.insert("d".into(), "why".into());
        more.insert("gone".into(), "why".into());
        let v = compare(&results, &more, false);
        assert!(!v.holds());
        assert_eq!(
            v.unexpected_others,
            vec![
                ("c".to_string(), "passed".to_string()),
                ("d".to_string(), "skipped: gate".to_string()),
                ("gone".to_string(), "not in this run".to_string())
            ]
        );

        // A run narrowed by --filter judges only what it selected: "gone" is not judged, the
        // cases it ran still are.
        let v = compare(&results, &more, true);
        assert_eq!(v.not_selected, 1);
        assert_eq!(v.unexpected_others.len(), 2);
        let mut only_ran = expected.clone();
        only_ran.insert("unselected".into(), "why".into());
        assert!(compare(&results, &only_ran, true).holds());

        let mut fewer = expected;
        fewer.remove("b");
        let v = compare(&results, &fewer, false);
        assert_eq!(v.unexpected_failures, vec!["b".to_string()]);
    }

    #[test]
    fn a_broken_file_is_an_error_with_its_position() {
        let dir = std::env::temp_dir().join(format!("expected-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("bad.yaml");
        std::fs::write(&bad, "a: why\nb: [unclosed\n").unwrap();
        let e = load(&bad).unwrap_err();
        assert!(e.pos.line >= 2, "{e}");
        let empty_reason = dir.join("empty.yaml");
        std::fs::write(&empty_reason, "a: \"\"\n").unwrap();
        assert!(load(&empty_reason).unwrap_err().reason.contains("says why"));
        let good = dir.join("good.yaml");
        std::fs::write(&good, "# none yet\n").unwrap();
        assert!(load(&good).unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
