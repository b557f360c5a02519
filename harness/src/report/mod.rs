//! Reports: consumers of case results. Human text ([`human`]), one JSON document ([`json`]),
//! JUnit XML ([`junit`]), an offline HTML page ([`html`]), the tick-by-tick explanation table
//! ([`explain`]), replica timelines ([`timeline`]) and the conformance statement ([`claim`]);
//! each says which corpus it judged ([`corpus`]).

pub mod claim;
pub mod corpus;
pub mod explain;
pub mod html;
pub mod human;
pub mod json;
pub mod junit;
pub mod levels;
pub mod matrix;
pub mod timeline;

use crate::case::LoadError;
use crate::run::trace::TickTrace;
use crate::run::{CaseResult, Outcome};

/// How far either side of the first failing tick a report shows the trace, in virtual seconds.
pub const AROUND_SECONDS: i64 = 60;

/// The first failing tick's time (none when only whole-run checks failed), the HPA alongside
/// whose expectation failed first (none: the case's own), and the rows of that HPA's trace a
/// report shows for the failure: those within [`AROUND_SECONDS`] of it, else the whole trace.
pub fn around_first_failure(r: &CaseResult) -> (Option<i64>, Option<&str>, Vec<&TickTrace>) {
    let failures: &[crate::run::Failure] = match &r.outcome {
        Outcome::Failed(fs) => fs,
        _ => &[],
    };
    let first = failures
        .iter()
        .find(|f| f.t.is_some())
        .or_else(|| failures.first());
    let hpa = first.and_then(|f| f.hpa.as_deref());
    let trace = hpa
        .and_then(|name| r.alongside.iter().find(|a| a.hpa == name))
        .map_or(&r.trace, |a| &a.trace);
    let first = first.and_then(|f| f.t);
    let rows = match first {
        Some(t) => trace
            .iter()
            .filter(|x| (x.t - t).abs() <= AROUND_SECONDS)
            .collect(),
        None => trace.iter().collect(),
    };
    (first, hpa, rows)
}

/// At how many ticks (of the case's HPA and those alongside) the harness kept only part of the
/// target's answers ([`crate::kept`]), and what it left out at the first: `None` when at none.
pub fn truncation(r: &CaseResult) -> Option<String> {
    let ticks = r
        .trace
        .iter()
        .chain(r.alongside.iter().flat_map(|a| &a.trace));
    let mut marked = ticks.filter_map(|x| x.truncated.as_ref().map(|m| (x.t, m)));
    let (t, first) = marked.next()?;
    let n = 1 + marked.count();
    Some(format!(
        "the harness kept part of the target's answers at {n} tick{} (from t={t}: {first})",
        if n == 1 { "" } else { "s" }
    ))
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The target's name.
    pub target: String,
    /// Results of the cases that loaded.
    pub results: Vec<CaseResult>,
    /// Case files that could not be loaded.
    pub bad_input: Vec<LoadError>,
    /// The conformance profile the cases were judged at ([`crate::profile`]).
    pub profile: crate::profile::Profile,
    /// Each case's `notes` (its arithmetic, where docs and upstream differ), by case name: shown
    /// with a failure.
    pub notes: std::collections::BTreeMap<String, String>,
    /// The corpus the run judged: its commit and fingerprint.
    pub corpus: corpus::CorpusId,
}

impl RunReport {
    /// (passed, failed, skipped); errored cases count as failed.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for r in &self.results {
            match r.outcome {
                Outcome::Passed => c.0 += 1,
                Outcome::Failed(_) | Outcome::Errored(_) => c.1 += 1,
                Outcome::Skipped(_) => c.2 += 1,
            }
        }
        c
    }

    /// The process exit code: [`exit::BAD_INPUT`] when a file could not be loaded, else
    /// [`exit::FAILED`] when a case failed, else [`exit::NOTHING_RAN`] when no case ran (none
    /// selected, or every one skipped), else [`exit::PASSED`].
    pub fn exit_code(&self) -> i32 {
        let (passed, failed, _) = self.counts();
        if !self.bad_input.is_empty() {
            exit::BAD_INPUT
        } else if failed > 0 {
            exit::FAILED
        } else if passed == 0 {
            exit::NOTHING_RAN
        } else {
            exit::PASSED
        }
    }
}

/// The exit codes of `hpa-conformance` (`run`, `explain`, `lint`; docs/command-line.md).
pub mod exit {
    /// Every case that ran passed, and at least one ran.
    pub const PASSED: i32 = 0;
    /// Some case failed (or its target errored).
    pub const FAILED: i32 = 1;
    /// Bad input: a case file that cannot be read, parsed or checked, or a usage error, or a
    /// report that cannot be written.
    pub const BAD_INPUT: i32 = 2;
    /// Nothing ran: no case file found, none matched `--filter`, or every case was skipped.
    pub const NOTHING_RAN: i32 = 3;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A case the cluster lane posed otherwise than written says so in every report format.
    #[test]
    fn how_a_case_was_posed_is_in_every_format() {
        let mut r = CaseResult::of(
            &crate::case::load::load_case(
                &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../cases/algorithm/tolerance-band-no-change.yaml"),
            )
            .unwrap(),
            Outcome::Passed,
            Vec::new(),
            std::time::Instant::now(),
            None,
        );
        r.posed = Some("from a fresh start, without a seeded memory <shown>".into());
        let report = RunReport {
            target: "cluster".into(),
            results: vec![r],
            bad_input: Vec::new(),
            profile: crate::profile::Profile::Full,
            notes: Default::default(),
            corpus: Default::default(),
        };
        assert!(
            human::render(&report)
                .contains("    posed: from a fresh start, without a seeded memory <shown>")
        );
        let json: serde_json::Value = serde_json::from_str(&json::render(&report)).unwrap();
        assert_eq!(
            json["cases"][0]["posed"],
            "from a fresh start, without a seeded memory <shown>"
        );
        assert!(
            junit::render(&report)
                .contains("posed: from a fresh start, without a seeded memory &lt;shown&gt;")
        );
        assert!(html::render(&report, &[]).contains("<p class=\"posed\">posed: from a fresh start, without a seeded memory &lt;shown&gt;</p>"));
    }
}
