//! `explain`: one case's run told as a story. Each row is a tick, or a run of identical ticks
//! collapsed into one (`t=15…285  19 ticks`), with a sentence that says why the count is what it
//! is — the metrics' proposals and ratios, the tolerance band, which recommendation the
//! stabilization window held and from when, the policy or min/max limit with the condition's
//! message — then the metrics, the conditions (with their messages) when they change, and the
//! events. [`story`] is the data, [`render`] the text and [`render_json`] the JSON for tools
//! (`explain --format json`); `what-if` prints the same rows.

use std::fmt::Write;

use hpa_reference::calculator::Tolerances;
use hpa_reference::{Explanation, Path};
use serde::Serialize;

use crate::case::Case;
use crate::run::podstate::PodState;
use crate::run::trace::TickTrace;
use crate::run::{CaseResult, Failure, Outcome, RunOptions, resolve_settings};
use crate::targets::GateSupport;

/// One row of the story: a tick, or a run of identical ticks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoryRow {
    /// The first tick's time.
    pub from: i64,
    /// The last tick's time (`from` for a single tick).
    pub to: i64,
    /// How many ticks the row stands for.
    pub ticks: usize,
    /// Replicas before the first tick of the row.
    pub replicas_before: i32,
    /// Replicas after the last tick of the row.
    pub replicas: i32,
    /// `status.desiredReplicas`.
    pub desired: i32,
    /// Pods (total and ready).
    pub pods: String,
    /// `status.currentMetrics`.
    pub metrics: Vec<String>,
    /// Why, in a sentence.
    pub why: String,
    /// The conditions as `Type=Status/Reason: message` that changed at this row (all of them on
    /// the first row).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<String>,
    /// The events of this row.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    /// Each pod as the target saw it at this row's tick (`explain --pods`; a row with pods is
    /// never a collapsed run, since sample times move with every tick).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pod_states: Vec<PodState>,
}

/// A case's story: its rows and how it ended.
#[derive(Debug, Clone, Serialize)]
pub struct Story<'a> {
    /// The case's name.
    pub name: &'a str,
    /// Its title.
    pub title: &'a str,
    /// Where its behaviour is stated.
    pub source: String,
    /// Seconds between ticks.
    pub sync_period: u32,
    /// Ticks run.
    pub ticks: usize,
    /// The rows.
    pub rows: Vec<StoryRow>,
    /// `passed`, `failed`, `skipped` or `error`.
    pub status: &'static str,
    /// Why it was skipped or errored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
    /// The expectations that did not hold.
    #[serde(skip_serializing_if = "<[Failure]>::is_empty")]
    pub failures: &'a [Failure],
}

fn source_text(case: &Case) -> String {
    let s = &case.file.source;
    [
        s.seed.as_ref().map(|x| format!("seed {x}")),
        s.section.as_ref().map(|x| format!("section {x:?}")),
        s.upstream.as_ref().map(|x| format!("upstream {x}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ")
}

/// Where the recommendation the stabilization window held at `held` came from: the latest tick
/// up to `upto` whose metrics wanted that count, else the controller's first sight, else its
/// memory from before the run.
fn held_from(trace: &[TickTrace], upto: usize, held: i32) -> String {
    let wanted = trace[..=upto]
        .iter()
        .rev()
        .find(|x| x.detail.explanation.as_ref().and_then(|e| e.metric_desired) == Some(held));
    match wanted {
        Some(x) => format!("the recommendation of {held} from t={}", x.t),
        None if trace[0].replicas_before == held => format!(
            "the current count {held}, recorded when the controller first saw the HPA at t={}",
            trace[0].t
        ),
        None => format!("a recommendation of {held} from before t={}", trace[0].t),
    }
}

fn ratio_text(r: f64) -> String {
    format!("{r:.4}")
}

/// The sentence for tick `i` of the trace.
fn sentence(trace: &[TickTrace], i: usize, tol: Option<Tolerances>) -> String {
    let x = &trace[i];
    let change = if x.replicas == x.replicas_before {
        format!("no change at {}", x.replicas)
    } else {
        format!("scaled {} → {}", x.replicas_before, x.replicas)
    };
    let Some(e) = &x.detail.explanation else {
        return format!(
            "{change} (desired {}; this target does not explain)",
            x.desired
        );
    };
    let limited_by = || {
        x.detail
            .conditions
            .iter()
            .find(|c| c.type_ == "ScalingLimited" && c.status == "True")
            .map(|c| format!("{}: {}", c.reason, c.message))
    };
    match e.path {
        Path::ScaleUnavailable => return format!("{change}: the scale could not be read"),
        Path::ScalingDisabled => {
            return format!("{change}: the target is at zero replicas, autoscaling is off");
        }
        Path::AboveMax | Path::BelowMin => {
            let bound = if e.path == Path::AboveMax {
                "above maxReplicas"
            } else {
                "below minReplicas"
            };
            return format!(
                "{change}: {} is {bound}, so the count is clamped without reading metrics{}",
                x.replicas_before,
                limited_by().map_or(String::new(), |l| format!(" ({l})"))
            );
        }
        Path::MetricsFailed | Path::Computed => {}
    }
    let proposals = proposals_text(e, x.replicas_before, tol);
    if e.path == Path::MetricsFailed {
        return format!("{change}: metrics failed — {proposals}");
    }
    let mut s = format!("{change}: {proposals}");
    let (Some(want), Some(stab), Some(lim)) = (e.metric_desired, e.stabilized, e.limited) else {
        return s;
    };
    if e.metrics.len() > 1 {
        let _ = write!(s, "; the highest proposal is {want}");
    }
    if stab != want {
        let window = if stab > want { "downscale" } else { "upscale" };
        let _ = write!(
            s,
            "; the {window} stabilization window holds {stab}: {}",
            held_from(trace, i, stab)
        );
    }
    if lim != stab {
        let _ = write!(s, "; limited to {lim}");
        if let Some(l) = limited_by() {
            let _ = write!(s, " by {l}");
        }
    }
    s
}

fn proposals_text(e: &Explanation, current: i32, tol: Option<Tolerances>) -> String {
    e.metrics
        .iter()
        .map(|m| {
            let name = m.name.as_deref().unwrap_or("a metric");
            match (&m.proposal, &m.reasoning, &m.error) {
                (Some(p), Some(r), _) => {
                    let ratio = r.adjusted_ratio.unwrap_or(r.ratio);
                    let mut t = format!("{name} proposes {p} (ratio {}", ratio_text(r.ratio));
                    if let Some(a) = r.adjusted_ratio {
                        let _ = write!(
                            t,
                            ", {} with unready and missing pods filled in",
                            ratio_text(a)
                        );
                    }
                    if r.unready + r.missing + r.ignored > 0 {
                        let _ = write!(
                            t,
                            "; {} ready, {} unready, {} missing, {} ignored",
                            r.ready, r.unready, r.missing, r.ignored
                        );
                    }
                    t.push(')');
                    if let Some(tol) = tol
                        && *p == current
                        && ratio != 1.0
                        && tol.is_within(ratio)
                    {
                        let band = if ratio < 1.0 {
                            tol.scale_down
                        } else {
                            tol.scale_up
                        };
                        let _ = write!(t, ", within the tolerance {band}");
                    }
                    t
                }
                (Some(p), None, _) => format!("{name} proposes {p}"),
                (None, _, Some(err)) => format!("{name} failed: {err}"),
                (None, _, None) => format!("{name} gave no proposal"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether two ticks tell the same thing (and neither has an event).
fn same(a: &TickTrace, b: &TickTrace) -> bool {
    a.events.is_empty()
        && b.events.is_empty()
        && a.replicas_before == a.replicas
        && b.replicas_before == b.replicas
        && a.replicas == b.replicas
        && a.desired == b.desired
        && a.pods == b.pods
        && a.metrics == b.metrics
        && a.conditions == b.conditions
        && a.detail.conditions == b.detail.conditions
        && a.why == b.why
        && a.detail.pods == b.detail.pods
}

/// The rows of a trace. `tol` (the run's tolerance band) lets a sentence say a proposal stayed
/// within it.
pub fn rows(trace: &[TickTrace], tol: Option<Tolerances>) -> Vec<StoryRow> {
    let mut out: Vec<StoryRow> = Vec::new();
    let mut last: &[crate::run::trace::ConditionDetail] = &[];
    let mut last_text: Option<&str> = None;
    let mut i = 0;
    while i < trace.len() {
        let x = &trace[i];
        let mut j = i;
        while j + 1 < trace.len() && same(x, &trace[j + 1]) {
            j += 1;
        }
        // The conditions that changed since the last row (all of them on the first).
        let conditions: Vec<String> = if x.detail.conditions.is_empty() {
            // A target whose status has no detail: the trace's text, when it changed.
            if last_text != Some(x.conditions.as_str()) && !x.conditions.is_empty() {
                x.conditions.split(", ").map(str::to_string).collect()
            } else {
                Vec::new()
            }
        } else {
            x.detail
                .conditions
                .iter()
                .filter(|c| !last.contains(c))
                .map(|c| {
                    let mut s = format!("{}={}/{}", c.type_, c.status, c.reason);
                    if !c.message.is_empty() {
                        let _ = write!(s, ": {}", c.message);
                    }
                    s
                })
                .collect()
        };
        last = &x.detail.conditions;
        last_text = Some(&x.conditions);
        // The sentence of the run's last tick: the window's hold is named from there.
        let mut why = sentence(trace, j, tol);
        if j > i {
            why = format!("{} ticks, {why}", j - i + 1);
        }
        out.push(StoryRow {
            from: x.t,
            to: trace[j].t,
            ticks: j - i + 1,
            replicas_before: x.replicas_before,
            replicas: trace[j].replicas,
            desired: x.desired,
            pods: x.pods.clone(),
            metrics: x.metrics.clone(),
            why,
            conditions,
            events: x.events.clone(),
            pod_states: x.detail.pods.clone(),
        });
        i = j + 1;
    }
    out
}

/// The tolerance band a case runs with (the judged release's gates and the case's own).
pub fn tolerances(case: &Case) -> Option<Tolerances> {
    let settings = resolve_settings(case, GateSupport::PerCase, &RunOptions::default()).ok()?;
    Some(hpa_reference::decide::tolerances_for(
        case.hpa.spec.behavior.as_ref(),
        &settings,
    ))
}

/// The story of a case's run.
pub fn story<'a>(case: &'a Case, result: &'a CaseResult) -> Story<'a> {
    let (status, reason, failures): (_, _, &[Failure]) = match &result.outcome {
        Outcome::Passed => ("passed", None, &[]),
        Outcome::Skipped(w) => ("skipped", Some(w.as_str()), &[]),
        Outcome::Errored(w) => ("error", Some(w.as_str()), &[]),
        Outcome::Failed(fs) => ("failed", None, fs),
    };
    Story {
        name: &case.file.name,
        title: &case.file.title,
        source: source_text(case),
        sync_period: case.sync_period,
        ticks: result.trace.len(),
        rows: rows(&result.trace, tolerances(case)),
        status,
        reason,
        failures,
    }
}

/// The rows as text: a `t` column (a range for a collapsed run), the replicas, the sentence, then
/// indented the pods, desired count and metrics, the conditions when they change and the events.
pub fn render_rows(rows: &[StoryRow], out: &mut String) {
    let _ = writeln!(out, "{:>13}  {:>9}  why", "t", "replicas");
    for r in rows {
        let t = if r.ticks > 1 {
            format!("{}…{}", r.from, r.to)
        } else {
            r.from.to_string()
        };
        let _ = writeln!(
            out,
            "{t:>13}  {:>4} → {:<4} {}",
            r.replicas_before, r.replicas, r.why
        );
        let pad = "";
        let _ = write!(
            out,
            "{pad:>27}pods {}, desired {}",
            r.pods.replace(" (", ", ").trim_end_matches(')'),
            r.desired
        );
        if !r.metrics.is_empty() {
            let _ = write!(out, ", metrics {}", r.metrics.join("; "));
        }
        out.push('\n');
        for (k, c) in r.conditions.iter().enumerate() {
            let head = if k == 0 {
                "conditions: "
            } else {
                "            "
            };
            let _ = writeln!(out, "{pad:>27}{head}{c}");
        }
        for e in &r.events {
            let _ = writeln!(out, "{pad:>27}event: {e}");
        }
        for p in &r.pod_states {
            let _ = writeln!(out, "{pad:>27}pod {p}");
        }
    }
}

/// Renders the story as text, every character that is not printable (but tabs and newlines)
/// written as `\u{…}` ([`crate::util::text::visible`]).
pub fn render(case: &Case, result: &CaseResult) -> String {
    let s = story(case, result);
    let mut out = String::new();
    let _ = writeln!(out, "case:   {} — {}", s.name, s.title);
    let _ = writeln!(out, "source: {}", s.source);
    if let Some(n) = &case.file.notes {
        let _ = writeln!(out, "notes:  {}", n.trim());
    }
    let _ = writeln!(
        out,
        "sync period {} s, {} ticks in {} rows\n",
        s.sync_period,
        s.ticks,
        s.rows.len()
    );
    render_rows(&s.rows, &mut out);
    // Each HPA alongside the case's own, with its own rows.
    for (member, a) in case.members.iter().zip(&result.alongside) {
        let _ = writeln!(
            out,
            "\nHPA {} (alongside), {} ticks:\n",
            a.hpa,
            a.trace.len()
        );
        render_rows(&rows(&a.trace, tolerances(member)), &mut out);
    }
    let verdict = match &result.outcome {
        Outcome::Passed => "PASSED".to_string(),
        Outcome::Skipped(w) => format!("SKIPPED: {w}"),
        Outcome::Errored(w) => format!("ERROR: {w}"),
        Outcome::Failed(fs) => {
            let mut v = "FAILED".to_string();
            for x in fs {
                let _ = write!(
                    v,
                    "\n  {}: {}: expected {}, got {}",
                    x.t.map_or("whole run".into(), |t| format!("t={t}")),
                    x.what(),
                    x.expected,
                    x.actual
                );
            }
            v
        }
    };
    let _ = writeln!(out, "\n{verdict}");
    // For a terminal: what a case or a target said cannot act on it.
    crate::util::text::visible(&out).into_owned()
}

/// Renders the story as one JSON document.
pub fn render_json(case: &Case, result: &CaseResult) -> String {
    super::json::to_string(&story(case, result))
}
