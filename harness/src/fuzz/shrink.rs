//! Shrinking a difference: smaller and smaller variants of a scenario, kept while the targets
//! still disagree, down to a small case file ready to review and commit.

use super::generate::to_case;
use super::lockstep::difference;

use crate::case::model::{CaseFile, ExpectAt, Expectations, SettingsOverrides, Startup};
use crate::run::{CaseResult, RunOptions, trajectory};
use crate::targets::Target;

pub(super) fn candidates(file: &CaseFile, diff_t: i64) -> Vec<CaseFile> {
    let mut out = Vec::new();
    let mut push = |f: CaseFile| out.push(f);
    if file.duration_seconds.is_none_or(|d| i64::from(d) > diff_t) {
        let mut f = file.clone();
        f.duration_seconds = Some(diff_t.max(0) as u32);
        f.timeline.retain(|e| i64::from(e.at) <= diff_t);
        push(f);
    }
    for i in 0..file.timeline.len() {
        let mut f = file.clone();
        f.timeline.remove(i);
        push(f);
        // Simplify an entry's loads one by one.
        for j in 0..file.timeline[i].loads.len() {
            let mut f = file.clone();
            f.timeline[i].loads.remove(j);
            push(f);
        }
    }
    let metrics = file.hpa.spec.metrics.clone().unwrap_or_default();
    if metrics.len() > 1 {
        for i in 0..metrics.len() {
            let mut f = file.clone();
            let mut m = metrics.clone();
            let removed = m.remove(i);
            let key = crate::case::load::metric_key(&removed);
            f.hpa.spec.metrics = Some(m);
            for e in &mut f.timeline {
                e.loads.retain(|l| l.metric != key);
                if e.load.as_ref().is_some_and(|l| l.metric == key) {
                    e.load = None;
                }
                if e.metrics_missing.as_ref().is_some_and(|m| m.metric == key) {
                    e.metrics_missing = None;
                }
                if e.metric_error.as_ref().is_some_and(|m| m.metric == key) {
                    e.metric_error = None;
                }
            }
            push(f);
        }
    }
    if let Some(b) = &file.hpa.spec.behavior {
        let mut f = file.clone();
        f.hpa.spec.behavior = None;
        push(f);
        for dir in 0..2 {
            let mut f = file.clone();
            if let Some(b2) = f.hpa.spec.behavior.as_mut() {
                if dir == 0 && b.scale_up.is_some() {
                    b2.scale_up = None;
                } else if dir == 1 && b.scale_down.is_some() {
                    b2.scale_down = None;
                } else {
                    continue;
                }
            }
            push(f);
        }
    }
    if file.workload.pod.containers.len() > 1 {
        let mut f = file.clone();
        f.workload.pod.containers.truncate(1);
        for e in &mut f.timeline {
            e.loads.retain(|l| l.container.is_none());
        }
        push(f);
    }
    let s = &file.settings;
    if s.tolerance.is_some()
        || s.cpu_initialization_period_seconds.is_some()
        || s.initial_readiness_delay_seconds.is_some()
        || s.downscale_stabilization_seconds.is_some()
    {
        let mut f = file.clone();
        f.settings = SettingsOverrides::default();
        push(f);
    }
    if file.workload.startup.pending_seconds > 0 || file.workload.startup.ready_after_seconds > 0 {
        let mut f = file.clone();
        f.workload.startup = Startup::default();
        push(f);
    }
    if file.workload.replicas > 1 {
        let mut f = file.clone();
        f.workload.replicas -= 1;
        push(f);
    }
    out
}

/// Shrinks a scenario on which the targets disagree to a smaller one on which they still do.
pub fn shrink(mut file: CaseFile, a: &dyn Target, b: &dyn Target, opts: &RunOptions) -> CaseFile {
    let Some((mut diff_t, ..)) = to_case(&file).ok().and_then(|c| difference(&c, a, b, opts))
    else {
        return file;
    };
    let mut progress = true;
    let mut rounds = 0;
    while progress && rounds < 50 {
        progress = false;
        rounds += 1;
        for candidate in candidates(&file, diff_t) {
            let Ok(case) = to_case(&candidate) else {
                continue;
            };
            if let Some((t, ..)) = difference(&case, a, b, opts) {
                file = candidate;
                diff_t = t;
                progress = true;
                break;
            }
        }
    }
    file
}

/// Turns a shrunk scenario into a regression case: the trace of `truth` becomes the expectation.
pub fn regression_case(
    mut file: CaseFile,
    truth: &CaseResult,
    other: &CaseResult,
    (diff_t, diff): (i64, &str),
    truth_name: &str,
    other_name: &str,
) -> CaseFile {
    file.title = format!("Fuzz-found difference: {diff}");
    file.notes = Some(format!(
        "Found by `hpa-conformance fuzz`: {truth_name} (taken as truth) and {other_name} disagree.\n{diff}\nTrajectory on {truth_name}: {:?}; on {other_name}: {:?}.\nReview the expectations (copied from {truth_name}) before committing.\n",
        trajectory(&truth.trace),
        trajectory(&other.trace)
    ));
    file.expect = Expectations {
        trajectory: Some(trajectory(&truth.trace)),
        final_replicas: truth.trace.last().map(|t| t.replicas),
        // The first tick, every tick where the count changes, and the tick of the difference.
        at: truth
            .trace
            .iter()
            .filter(|t| t.t == 0 || t.replicas != t.replicas_before || t.t == diff_t)
            .map(|t| ExpectAt {
                t: t.t as u32,
                replicas: Some(t.replicas),
                desired_replicas: Some(t.desired),
                ..ExpectAt::default()
            })
            .collect(),
        rejected: None,
    };
    file
}
