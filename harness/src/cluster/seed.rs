//! A starting state a cluster cannot pose, shown not to matter. A running controller cannot be
//! given recommendations or scale events before its first reconcile (a case's seeded `memory`),
//! and on a release that reconciles a new HPA at once (1.37, #138294) the lane cannot write a
//! starting `status` before that first reconcile either. But most such starts do not change what
//! a case shows: stored recommendations below today's proposal, scale events outside every window,
//! a status the first reconcile overwrites — the case is decided exactly as from a fresh start.
//!
//! [`shown_irrelevant`] answers that for one case before anything touches the cluster: it runs the
//! case on the in-process reference core twice, as written and from a fresh start ([`fresh`]: no
//! memory, and no starting status where the cluster cannot pose one, for the case's HPA and each
//! HPA alongside), at the run's release and gates, and compares what the lane checks of every tick
//! — replicas, pods, the status (desired and current replicas, `lastScaleTime`, current metrics,
//! conditions) and the events. When every tick is the same the lane runs the fresh copy, and the
//! result says so ([`crate::run::CaseResult::posed`]); otherwise the case is skipped with the first
//! tick that differs.
//!
//! What a prelude could still reach (scaling the target and moving the metrics before t = 0 so that
//! the controller records the seed itself) is not built here: such cases keep their skip.

use crate::case::Case;
use crate::case::features::Feature;
use crate::run::trace::TickTrace;
use crate::run::{CaseResult, Outcome, RunOptions};
use crate::targets::CoreTarget;

/// What of a case's starting state a cluster cannot pose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unposable {
    /// The controller's seeded memory (any HPA of the case).
    pub memory: bool,
    /// A starting `status` (any HPA of the case), on a release that reconciles a new HPA before
    /// the lane can write it.
    pub status: bool,
}

impl Unposable {
    /// What of `case`'s start a cluster of `version` cannot pose.
    pub fn of(case: &Case, version: hpa_reference::KubernetesVersion) -> Unposable {
        let all = || std::iter::once(case).chain(&case.members);
        Unposable {
            memory: all().any(|c| c.file.memory.is_some()),
            status: version.changes().new_hpa_reconciled_at_once
                && all().any(|c| c.hpa.status.is_some()),
        }
    }

    /// Nothing to leave out.
    pub fn none(self) -> bool {
        !self.memory && !self.status
    }

    /// What is left out, after "without" or "starts from".
    fn words(self) -> &'static str {
        match (self.memory, self.status) {
            (true, true) => "a seeded memory and a status",
            (true, false) => "a seeded memory",
            _ => "a status",
        }
    }
}

/// The case from a fresh start: without what `what` names, for its HPA and every HPA alongside.
pub fn fresh(case: &Case, what: Unposable) -> Case {
    let forget = |c: &mut Case| {
        if what.memory {
            c.file.memory = None;
            c.features.retain(|(f, _)| *f != Feature::MemorySeeding);
        }
        if what.status {
            c.hpa.status = None;
            c.file.hpa.status = None;
        }
    };
    let mut out = case.clone();
    forget(&mut out);
    out.members.iter_mut().for_each(forget);
    out
}

/// Why `fresh` ([`fresh`] of `case`) shows what `case` shows, for the result's
/// [`crate::run::CaseResult::posed`]; or the reason the case cannot run on a cluster: the start
/// changes the trace on the core (the first tick that differs).
pub fn shown_irrelevant(
    case: &Case,
    fresh: &Case,
    what: Unposable,
    opts: &RunOptions,
) -> Result<String, String> {
    let written = crate::run::run_case(case, &CoreTarget, opts);
    let started_fresh = crate::run::run_case(fresh, &CoreTarget, opts);
    let words = what.words();
    match difference(&written, &started_fresh) {
        None => Ok(format!(
            "from a fresh start, without {words}, which a running controller cannot be given: on the reference core at {} the case gives the same trace from a fresh start ({} ticks: replicas, status and events), so it does not change what the case shows",
            opts.version,
            written.trace.len()
        )),
        Some(d) => Err(format!(
            "the case starts from {words}, which a running controller cannot be given{}, and it matters: on the reference core, from a fresh start, {d}",
            if what.status {
                format!(
                    " (Kubernetes {} reconciles a new HPA at once, #138294, before the lane could write a status)",
                    opts.version
                )
            } else {
                String::new()
            }
        )),
    }
}

/// The first difference the lane could see between two runs of a case, in words.
fn difference(seeded: &CaseResult, fresh: &CaseResult) -> Option<String> {
    for (r, what) in [(seeded, "as written"), (fresh, "from a fresh start")] {
        match &r.outcome {
            Outcome::Passed | Outcome::Failed(_) => {}
            Outcome::Skipped(why) => return Some(format!("the core skips the case {what}: {why}")),
            Outcome::Errored(why) => {
                return Some(format!("the core errs on the case {what}: {why}"));
            }
        }
    }
    if seeded.outcome != Outcome::Passed {
        return Some("the case does not pass on the core as written".into());
    }
    let traces = std::iter::once((&seeded.trace, &fresh.trace, None)).chain(
        seeded
            .alongside
            .iter()
            .zip(&fresh.alongside)
            .map(|(a, b)| (&a.trace, &b.trace, Some(a.hpa.as_str()))),
    );
    for (a, b, hpa) in traces {
        let of = hpa.map(|h| format!(" of HPA {h}")).unwrap_or_default();
        if a.len() != b.len() {
            return Some(format!(
                "the trace{of} has {} ticks instead of {}",
                b.len(),
                a.len()
            ));
        }
        for (x, y) in a.iter().zip(b) {
            if let Some(what) = tick_difference(x, y) {
                return Some(format!("t={}{of} differs: {what}", x.t));
            }
        }
    }
    if seeded.alongside.len() != fresh.alongside.len() {
        return Some("the HPAs alongside differ".into());
    }
    None
}

/// What differs between two ticks in what the lane checks (`None`: nothing).
fn tick_difference(seeded: &TickTrace, fresh: &TickTrace) -> Option<String> {
    let pairs: [(&str, String, String); 8] = [
        (
            "replicas",
            seeded.replicas.to_string(),
            fresh.replicas.to_string(),
        ),
        ("pods", seeded.pods.clone(), fresh.pods.clone()),
        (
            "desiredReplicas",
            seeded.desired.to_string(),
            fresh.desired.to_string(),
        ),
        (
            "currentReplicas",
            format!("{:?}", seeded.current),
            format!("{:?}", fresh.current),
        ),
        (
            "lastScaleTime",
            format!("{:?}", seeded.last_scale_time),
            format!("{:?}", fresh.last_scale_time),
        ),
        (
            "currentMetrics",
            seeded.metrics.join(", "),
            fresh.metrics.join(", "),
        ),
        (
            "conditions",
            seeded.conditions.clone(),
            fresh.conditions.clone(),
        ),
        ("events", seeded.events.join("; "), fresh.events.join("; ")),
    ];
    pairs
        .into_iter()
        .find(|(_, a, b)| a != b)
        .map(|(what, a, b)| format!("{what} {b} instead of {a}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpa_reference::KubernetesVersion;

    fn corpus(file: &str) -> Case {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../cases")
            .join(file);
        crate::case::load::load_case(&path).unwrap()
    }

    fn opts() -> RunOptions {
        RunOptions {
            version: KubernetesVersion::V1_37,
            ..RunOptions::default()
        }
    }

    #[test]
    fn a_seed_below_every_proposal_is_shown_not_to_matter_and_left_out() {
        let case = corpus("algorithm/tolerance-band-no-change.yaml");
        let what = Unposable::of(&case, KubernetesVersion::V1_37);
        assert!(what.memory && !what.status, "{what:?}");
        let fresh = fresh(&case, what);
        assert!(fresh.file.memory.is_none());
        assert!(
            !fresh
                .features
                .iter()
                .any(|(f, _)| *f == Feature::MemorySeeding)
        );
        let why = shown_irrelevant(&case, &fresh, what, &opts()).unwrap();
        assert!(why.contains("without a seeded memory"), "{why}");
        assert!(why.contains("the same trace from a fresh start"), "{why}");
    }

    #[test]
    fn a_seed_that_changes_a_decision_keeps_the_case_off_the_cluster_with_the_tick() {
        let case = corpus("algorithm/tolerance-band-just-outside.yaml");
        let what = Unposable::of(&case, KubernetesVersion::V1_37);
        let e = shown_irrelevant(&case, &fresh(&case, what), what, &opts()).unwrap_err();
        assert!(e.contains("and it matters"), "{e}");
        assert!(e.contains("t=0 differs: replicas 10 instead of 9"), "{e}");
    }

    #[test]
    fn a_starting_status_is_unposable_only_where_a_new_hpa_is_reconciled_at_once() {
        let case = corpus("lifecycle/scale-from-zero-above-min-not-clamped-to-min.yaml");
        assert!(case.hpa.status.is_some());
        assert!(!Unposable::of(&case, KubernetesVersion::V1_36).status);
        let what = Unposable::of(&case, KubernetesVersion::V1_37);
        assert!(what.status);
        let fresh = fresh(&case, what);
        assert!(fresh.hpa.status.is_none() && fresh.file.hpa.status.is_none());
        let e = shown_irrelevant(&case, &fresh, what, &opts()).unwrap_err();
        assert!(
            e.contains("starts from a status") && e.contains("#138294"),
            "{e}"
        );
    }
}
