//! The JSON report: one document with a `cases` list; each case has `name`, `passed`, `skipped`,
//! `skip_reason`, `failures` and `trace` (ticks with `t` and `replicas` after the tick). The shape
//! is stable: tools and CI read it.

use serde::Serialize;

use super::RunReport;
use crate::runner::{Failure, Outcome};
use crate::trace::TickTrace;

#[derive(Serialize)]
struct JsonCase<'a> {
    name: &'a str,
    title: &'a str,
    file: &'a str,
    passed: bool,
    skipped: bool,
    skip_reason: Option<&'a str>,
    error: Option<&'a str>,
    failures: &'a [Failure],
    trajectory: Vec<i32>,
    trace: &'a [TickTrace],
    /// The traces of the HPAs reconciled beside the case's own (`alongside`), when it has any.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    alongside: &'a [crate::runner::AlongsideTrace],
    diagnostics: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonBadInput {
    file: String,
    line: u64,
    column: u64,
    reason: String,
}

#[derive(Serialize)]
struct JsonLevel {
    level: crate::profile::Profile,
    passed: usize,
    ran: usize,
}

#[derive(Serialize)]
struct JsonSummary {
    passed: usize,
    failed: usize,
    skipped: usize,
    bad_input: usize,
    profile: crate::profile::Profile,
    levels: Vec<JsonLevel>,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    target: &'a str,
    summary: JsonSummary,
    cases: Vec<JsonCase<'a>>,
    bad_input: Vec<JsonBadInput>,
}

/// Renders the report.
pub fn render(report: &RunReport) -> String {
    let (passed, failed, skipped) = report.counts();
    let doc = JsonReport {
        target: &report.target,
        summary: JsonSummary {
            passed,
            failed,
            skipped,
            bad_input: report.bad_input.len(),
            profile: report.profile,
            levels: crate::profile::level_counts(&report.results, report.profile)
                .into_iter()
                .map(|(level, passed, ran)| JsonLevel { level, passed, ran })
                .collect(),
        },
        cases: report
            .results
            .iter()
            .map(|r| JsonCase {
                name: &r.name,
                title: &r.title,
                file: &r.file,
                passed: r.passed(),
                skipped: matches!(r.outcome, Outcome::Skipped(_)),
                skip_reason: match &r.outcome {
                    Outcome::Skipped(why) => Some(why),
                    _ => None,
                },
                error: match &r.outcome {
                    Outcome::Errored(why) => Some(why),
                    _ => None,
                },
                failures: match &r.outcome {
                    Outcome::Failed(f) => f,
                    _ => &[],
                },
                trajectory: crate::runner::trajectory(&r.trace),
                trace: &r.trace,
                alongside: &r.alongside,
                diagnostics: r.diagnostics.as_deref(),
            })
            .collect(),
        bad_input: report
            .bad_input
            .iter()
            .map(|e| JsonBadInput {
                file: e.path.display().to_string(),
                line: e.pos.line,
                column: e.pos.column,
                reason: e.reason.clone(),
            })
            .collect(),
    };
    let mut s = serde_json::to_string_pretty(&doc)
        .unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()));
    s.push('\n');
    s
}
