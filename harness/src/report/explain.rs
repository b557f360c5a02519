//! `explain`: the tick-by-tick trace of one case as a table that says why each decision was made.

use std::fmt::Write;

use crate::case::Case;
use crate::runner::{CaseResult, Outcome};

/// Renders the explanation of a case's run.
pub fn render(case: &Case, result: &CaseResult) -> String {
    let mut out = String::new();
    let f = &case.file;
    let _ = writeln!(out, "case:   {} — {}", f.name, f.title);
    let src = [
        f.source.seed.as_ref().map(|s| format!("seed {s}")),
        f.source.section.as_ref().map(|s| format!("section {s:?}")),
        f.source.upstream.as_ref().map(|s| format!("upstream {s}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    let _ = writeln!(out, "source: {src}");
    if let Some(n) = &f.notes {
        let _ = writeln!(out, "notes:  {}", n.trim());
    }
    let _ = writeln!(
        out,
        "sync period {} s, {} ticks\n",
        case.sync_period,
        result.trace.len()
    );
    let _ = writeln!(
        out,
        "{:>6}  {:>9}  {:<16} {:>7}  why",
        "t", "replicas", "pods", "desired"
    );
    let mut last_conditions = String::new();
    for t in &result.trace {
        let _ = writeln!(
            out,
            "{:>6}  {:>4}->{:<4} {:<16} {:>7}  {}",
            t.t,
            t.replicas_before,
            t.replicas,
            t.pods,
            t.desired,
            t.why.as_deref().unwrap_or("-")
        );
        if !t.metrics.is_empty() {
            let _ = writeln!(out, "{:>26}metrics: {}", "", t.metrics.join("; "));
        }
        if t.conditions != last_conditions {
            let _ = writeln!(out, "{:>26}conditions: {}", "", t.conditions);
            last_conditions = t.conditions.clone();
        }
        for e in &t.events {
            let _ = writeln!(out, "{:>26}event: {e}", "");
        }
    }
    let verdict = match &result.outcome {
        Outcome::Passed => "PASSED".to_string(),
        Outcome::Skipped(w) => format!("SKIPPED: {w}"),
        Outcome::Errored(w) => format!("ERROR: {w}"),
        Outcome::Failed(fs) => {
            let mut s = "FAILED".to_string();
            for x in fs {
                s.push_str(&format!(
                    "\n  {}: {}: expected {}, got {}",
                    x.t.map_or("whole run".into(), |t| format!("t={t}")),
                    x.check,
                    x.expected,
                    x.actual
                ));
            }
            s
        }
    };
    let _ = writeln!(out, "\n{verdict}");
    out
}
