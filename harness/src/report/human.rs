//! The human report: a line per case; on failure the case's title and notes (its arithmetic), the expected-vs-actual diff at
//! the first failing tick with the trace around it and the implementation's stderr tail; a line
//! when ticks left out part of the target's answers ([`crate::kept`]); a closing
//! `N passed, N failed, N skipped` line.
//!
//! It goes to terminals and CI logs: every text from a case or a target is written through
//! [`visible_line`] (a multi-line one line by line), so it cannot move the cursor, retitle a
//! window, ring a bell or start a line of its own.

use std::fmt::Write;

use super::RunReport;
use crate::run::trace::TickTrace;
use crate::run::{CaseResult, Failure, Outcome};
use crate::util::text::visible_line;

fn tick_line(t: &TickTrace) -> String {
    format!(
        "      t={:<5} {:>3} -> {:<3} pods {:<14} desired {:<3} {}",
        t.t,
        t.replicas_before,
        t.replicas,
        t.pods,
        t.desired,
        visible_line(t.why.as_deref().unwrap_or(""))
    )
}

/// Writes lines of text, each indented by `indent` and made visible.
fn lines<'a>(out: &mut String, indent: &str, text: impl Iterator<Item = &'a str>) {
    for line in text {
        let _ = writeln!(out, "{indent}{}", visible_line(line));
    }
}

/// The line saying at how many ticks the harness kept only part of the target's answers.
fn truncated_text(r: &CaseResult, out: &mut String) {
    if let Some(t) = super::truncation(r) {
        let _ = writeln!(out, "    truncated: {t}");
    }
}

fn failure_text(r: &CaseResult, failures: &[Failure], out: &mut String) {
    for f in failures {
        let at = f.t.map_or("whole run".to_string(), |t| format!("t={t}"));
        let _ = writeln!(
            out,
            "    {at}: {}: expected {}, got {}",
            visible_line(&f.what()),
            visible_line(&f.expected),
            visible_line(&f.actual)
        );
    }
    let (first_t, hpa, around) = super::around_first_failure(r);
    if !around.is_empty() {
        let _ = writeln!(
            out,
            "    trace{}{}:",
            hpa.map_or(String::new(), |name| format!(
                " of HPA {}",
                visible_line(name)
            )),
            first_t.map_or(String::new(), |t| format!(" around t={t}"))
        );
        for tick in around {
            let _ = writeln!(out, "{}", tick_line(tick));
            if first_t == Some(tick.t) {
                let _ = writeln!(
                    out,
                    "        conditions: {}",
                    visible_line(&tick.conditions)
                );
                for e in &tick.events {
                    let _ = writeln!(out, "        event: {}", visible_line(e));
                }
            }
            if let Some(m) = &tick.truncated {
                let _ = writeln!(out, "        truncated: {m}");
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
        let _ = writeln!(out, "      {}", visible_line(l));
    }
    if lines.len() > NOTES_LINES {
        let _ = writeln!(
            out,
            "      … ({} more lines in {})",
            lines.len() - NOTES_LINES,
            visible_line(&r.file)
        );
    }
}

/// Renders the report.
pub fn render(report: &RunReport) -> String {
    let mut out = String::new();
    for r in &report.results {
        let ms = r.elapsed.as_secs_f64() * 1000.0;
        let (name, file) = (visible_line(&r.name), visible_line(&r.file));
        match &r.outcome {
            Outcome::Passed => {
                let _ = writeln!(out, "PASS  {name}  ({} ticks, {ms:.1} ms)", r.trace.len());
            }
            Outcome::Skipped(why) => {
                let _ = writeln!(out, "SKIP  {name}  ({})", visible_line(why));
            }
            Outcome::Errored(why) => {
                let _ = writeln!(out, "ERROR {name}  ({file})");
                let _ = writeln!(out, "    {}", visible_line(&r.title));
                notes_text(report, r, &mut out);
                lines(&mut out, "    ", why.split('\n'));
            }
            Outcome::Failed(failures) => {
                let _ = writeln!(out, "FAIL  {name}  ({file})");
                let _ = writeln!(out, "    {}", visible_line(&r.title));
                notes_text(report, r, &mut out);
                failure_text(r, failures, &mut out);
            }
        }
        truncated_text(r, &mut out);
        if let Some(p) = &r.posed {
            let _ = writeln!(out, "    posed: {}", visible_line(p));
        }
        if let Some(d) = &r.diagnostics {
            let _ = writeln!(out, "    stderr of the implementation (last lines):");
            lines(&mut out, "      ", d.lines());
        }
    }
    for e in &report.bad_input {
        let _ = writeln!(out, "BAD   {}", visible_line(&e.to_string()));
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
            crate::report::levels::levels_line(&report.results, report.profile)
        );
    }
    out
}
