//! The human report: a line per case; on failure the case's title and notes (its arithmetic), the expected-vs-actual diff at
//! the first failing tick with the trace around it and the implementation's stderr tail; a closing
//! `N passed, N failed, N skipped` line.

use std::fmt::Write;

use super::RunReport;
use crate::runner::{CaseResult, Failure, Outcome};
use crate::trace::TickTrace;

fn tick_line(t: &TickTrace) -> String {
    format!(
        "      t={:<5} {:>3} -> {:<3} pods {:<14} desired {:<3} {}",
        t.t,
        t.replicas_before,
        t.replicas,
        t.pods,
        t.desired,
        t.why.as_deref().unwrap_or("")
    )
}

fn failure_text(r: &CaseResult, failures: &[Failure], out: &mut String) {
    for f in failures {
        let at = f.t.map_or("whole run".to_string(), |t| format!("t={t}"));
        let _ = writeln!(
            out,
            "    {at}: {}: expected {}, got {}",
            f.what(),
            f.expected,
            f.actual
        );
    }
    let (first_t, hpa, around) = super::around_first_failure(r);
    if !around.is_empty() {
        let _ = writeln!(
            out,
            "    trace{}{}:",
            hpa.map_or(String::new(), |name| format!(" of HPA {name}")),
            first_t.map_or(String::new(), |t| format!(" around t={t}"))
        );
        for tick in around {
            let _ = writeln!(out, "{}", tick_line(tick));
            if first_t == Some(tick.t) {
                let _ = writeln!(out, "        conditions: {}", tick.conditions);
                for e in &tick.events {
                    let _ = writeln!(out, "        event: {e}");
                }
            }
        }
    }
}

/// How many lines of a case's notes a failure shows.
const NOTES_LINES: usize = 15;

/// The case's notes (its arithmetic), indented, at most [`NOTES_LINES`] lines.
fn notes_text(report: &RunReport, r: &CaseResult, out: &mut String) {
    let Some(notes) = report.notes.get(&r.name) else {
        return;
    };
    let lines: Vec<&str> = notes.trim_end().lines().collect();
    let _ = writeln!(out, "    notes:");
    for l in lines.iter().take(NOTES_LINES) {
        let _ = writeln!(out, "      {l}");
    }
    if lines.len() > NOTES_LINES {
        let _ = writeln!(
            out,
            "      … ({} more lines in {})",
            lines.len() - NOTES_LINES,
            r.file
        );
    }
}

/// Renders the report.
pub fn render(report: &RunReport) -> String {
    let mut out = String::new();
    for r in &report.results {
        let ms = r.elapsed.as_secs_f64() * 1000.0;
        match &r.outcome {
            Outcome::Passed => {
                let _ = writeln!(
                    out,
                    "PASS  {}  ({} ticks, {ms:.1} ms)",
                    r.name,
                    r.trace.len()
                );
            }
            Outcome::Skipped(why) => {
                let _ = writeln!(out, "SKIP  {}  ({why})", r.name);
            }
            Outcome::Errored(why) => {
                let _ = writeln!(out, "ERROR {}  ({})", r.name, r.file);
                let _ = writeln!(out, "    {}", r.title);
                notes_text(report, r, &mut out);
                let _ = writeln!(out, "    {}", why.replace('\n', "\n    "));
            }
            Outcome::Failed(failures) => {
                let _ = writeln!(out, "FAIL  {}  ({})", r.name, r.file);
                let _ = writeln!(out, "    {}", r.title);
                notes_text(report, r, &mut out);
                failure_text(r, failures, &mut out);
            }
        }
        if let Some(d) = &r.diagnostics {
            let _ = writeln!(out, "    stderr of the implementation (last lines):");
            for line in d.lines() {
                let _ = writeln!(out, "      {line}");
            }
        }
    }
    for e in &report.bad_input {
        let _ = writeln!(out, "BAD   {e}");
    }
    let (p, f, s) = report.counts();
    if !report.bad_input.is_empty() {
        let _ = writeln!(
            out,
            "{} case file(s) could not be loaded",
            report.bad_input.len()
        );
    }
    let _ = writeln!(out, "conformance: {p} passed, {f} failed, {s} skipped");
    if p + f > 0 {
        let _ = writeln!(
            out,
            "profile {}: {}",
            report.profile,
            crate::profile::levels_line(&report.results, report.profile)
        );
    }
    out
}
