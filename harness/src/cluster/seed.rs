//! What a cluster cannot pose of a case, shown not to matter. A running controller cannot be
//! given recommendations or scale events before its first reconcile (a case's seeded `memory`);
//! on a release that reconciles a new HPA at once (1.37, #138294) the lane cannot write a starting
//! `status` before that first reconcile either; no controller flag sets the scale-up limit
//! constants (upstream's unit tests override them to 8); and a run that does not reconfigure the
//! controller has the cluster's flags, not the case's. But most such differences do not change
//! what a case shows: stored recommendations below today's proposal, scale events outside every
//! window, a status the first reconcile overwrites, a scale-up limit never reached, a CPU
//! initialization period no pod is inside of — the case is decided exactly as posed on a cluster.
//!
//! [`shown_irrelevant`] answers that for one case before anything touches the cluster: it runs the
//! case on the in-process reference core twice, as written and as a cluster can pose it
//! ([`fresh`]: no memory, no starting status where the cluster cannot pose one, upstream's
//! scale-up limit, the cluster's flags — for the case's HPA and each HPA alongside), at the run's
//! release and gates, and compares what the lane checks of every tick — replicas, pods, the status
//! (desired and current replicas, `lastScaleTime`, current metrics, conditions) and the events.
//! When every tick is the same the lane runs the posed copy, and the result says so
//! ([`crate::run::CaseResult::posed`]); otherwise the case is skipped with the first tick that
//! differs.
//!
//! Where leaving the memory out changes the trace, a prelude may still pose the case: the
//! controller records a memory itself before t = 0 ([`super::prelude`]).

use crate::case::Case;
use crate::case::features::Feature;
use crate::run::trace::TickTrace;
use crate::run::{CaseResult, Outcome, RunOptions};
use crate::targets::CoreTarget;

use super::plan::ClusterSettings;

/// What of a case a cluster cannot pose as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Unposable {
    /// The controller's seeded memory (any HPA of the case).
    pub memory: bool,
    /// A starting `status` (any HPA of the case), on a release that reconciles a new HPA before
    /// the lane can write it after the create (where it matters, the case's own HPA may still be
    /// held until t = 0: `plan::starting_status`).
    pub status: bool,
    /// Scale-up limit constants other than upstream's (`scaleUpLimitFactor`/`Minimum`: no
    /// controller flag sets them; kube-controller-manager hard-codes 2 and 4).
    pub scale_up_limits: bool,
    /// Controller flags other than the cluster's (tolerance, CPU initialization period,
    /// readiness delay, downscale stabilization; never the sync period, which sets the ticks),
    /// when the run does not reconfigure the controller.
    pub flags: bool,
    /// Expectations of the controller's memory (`expect.at[].memory`, any HPA of the case): no
    /// cluster's controller shows its memory, so the lane checks what it does show and leaves
    /// those to the core, which must pass them (the trace is the same without them).
    pub memory_expected: bool,
}

impl Unposable {
    /// What of `case`'s start a cluster of `version` cannot pose.
    pub fn of(case: &Case, version: hpa_reference::KubernetesVersion) -> Unposable {
        let all = || std::iter::once(case).chain(&case.members);
        let limits = &case.file.settings;
        Unposable {
            memory: all().any(|c| c.file.memory.is_some()),
            status: version.changes().new_hpa_reconciled_at_once
                && all().any(|c| c.hpa.status.is_some()),
            scale_up_limits: limits.scale_up_limit_factor.is_some()
                || limits.scale_up_limit_minimum.is_some(),
            flags: false,
            memory_expected: all().any(|c| c.file.expect.at.iter().any(|x| x.memory.is_some())),
        }
    }

    /// Nothing to leave out.
    pub fn none(self) -> bool {
        self.parts() == [false; 5]
    }

    /// Memory, status, scale-up limits, flags, memory expectations, in that order.
    pub fn parts(self) -> [bool; 5] {
        [
            self.memory,
            self.status,
            self.scale_up_limits,
            self.flags,
            self.memory_expected,
        ]
    }

    /// From [`Unposable::parts`].
    pub fn from_parts(
        [memory, status, scale_up_limits, flags, memory_expected]: [bool; 5],
    ) -> Unposable {
        Unposable {
            memory,
            status,
            scale_up_limits,
            flags,
            memory_expected,
        }
    }

    /// What is changed, after "with … changed:" in words, joined.
    fn words(self) -> String {
        let mut w = Vec::new();
        if self.memory {
            w.push("without a seeded memory (a running controller cannot be given one)");
        }
        if self.status {
            w.push(
                "without a starting status (the lane cannot write one before the first reconcile)",
            );
        }
        if self.scale_up_limits {
            w.push(
                "with upstream's hard-coded scale-up limit (factor 2, minimum 4; no flag sets it)",
            );
        }
        if self.flags {
            w.push("with the cluster's controller flags instead of the case's");
        }
        if self.memory_expected {
            w.push("with its expectations of the controller's memory left to the core (no cluster's controller shows its memory; the core passes them as written)");
        }
        w.join(", ")
    }
}

/// The case as a cluster can pose it: without what `what` names, for its HPA and every HPA
/// alongside; with `what.flags`, the controller flags are `cluster`'s (in case time).
pub fn fresh(case: &Case, what: Unposable, cluster: &ClusterSettings) -> Case {
    let n = cluster.time_scale.max(1);
    let case_secs = |d: std::time::Duration| -> Option<u32> {
        u32::try_from((d.as_millis() * u128::from(n) + 500) / 1000).ok()
    };
    let forget = |c: &mut Case| {
        if what.memory {
            c.file.memory = None;
            c.features.retain(|(f, _)| *f != Feature::MemorySeeding);
        }
        if what.status {
            c.hpa.status = None;
            c.file.hpa.status = None;
        }
        if what.memory_expected {
            // What is left of each expectation: an expectation of the memory alone goes.
            for x in &mut c.file.expect.at {
                x.memory = None;
            }
            c.file.expect.at.retain(|x| !x.is_empty());
        }
        let o = &mut c.file.settings;
        if what.scale_up_limits {
            o.scale_up_limit_factor = None;
            o.scale_up_limit_minimum = None;
        }
        if what.flags {
            o.tolerance = Some(cluster.tolerance);
            o.cpu_initialization_period_seconds = case_secs(cluster.cpu_initialization_period);
            o.initial_readiness_delay_seconds = case_secs(cluster.initial_readiness_delay);
            o.downscale_stabilization_seconds = case_secs(cluster.downscale_stabilization);
        }
    };
    let mut out = case.clone();
    forget(&mut out);
    out.members.iter_mut().for_each(forget);
    out
}

/// Why `fresh` ([`fresh`] of `case`) shows what `case` shows, for the result's
/// [`crate::run::CaseResult::posed`]; or the reason the case cannot run on a cluster: what it
/// changes changes the trace on the core (the first tick that differs).
pub fn shown_irrelevant(
    case: &Case,
    fresh: &Case,
    what: Unposable,
    opts: &RunOptions,
) -> Result<String, String> {
    let words = what.words();
    match same_trace(case, fresh, opts) {
        Ok(ticks) => Ok(format!(
            "{words}: on the reference core at {} the case gives the same trace posed so ({ticks} ticks: replicas, status and events), so that does not change what the case shows",
            opts.version,
        )),
        Err(d) => Err(format!(
            "the case can be posed on a cluster only {words}{}, and that matters: on the reference core, posed so, {d}",
            if what.status {
                format!(
                    " (Kubernetes {} reconciles a new HPA at once, #138294)",
                    opts.version
                )
            } else {
                String::new()
            }
        )),
    }
}

/// Whether `posed` gives the trace `case` gives on the reference core, as the lane checks it: the
/// number of ticks, or the first difference in words.
pub fn same_trace(case: &Case, posed: &Case, opts: &RunOptions) -> Result<usize, String> {
    same_trace_on(case, posed, &CoreTarget, opts)
}

/// [`same_trace`] with `posed` run on `target` (the core as a cluster's controller decides it,
/// e.g. [`super::patch::AtOnce`]).
pub fn same_trace_on(
    case: &Case,
    posed: &Case,
    target: &dyn crate::targets::Target,
    opts: &RunOptions,
) -> Result<usize, String> {
    let written = crate::run::run_case(case, &CoreTarget, opts);
    let posed = crate::run::run_case(posed, target, opts);
    match difference(&written, &posed) {
        None => Ok(written.trace.len()),
        Some(d) => Err(d),
    }
}

/// Which of `what`'s changes alone change the trace on the core (each tried by itself), in words:
/// what a skip names as the reason when several changes were needed. Empty when none alone does
/// (only together).
pub fn which_matter(
    case: &Case,
    what: Unposable,
    cluster: &ClusterSettings,
    opts: &RunOptions,
) -> Vec<&'static str> {
    const WORDS: [&str; 5] = [
        "the seeded memory",
        "the starting status",
        "the scale-up limit constants",
        "the case's flags",
        "the memory expectations",
    ];
    let written = crate::run::run_case(case, &CoreTarget, opts);
    (0..WORDS.len())
        .filter(|&k| what.parts()[k])
        .filter(|&k| {
            let mut one = [false; 5];
            one[k] = true;
            let posed = fresh(case, Unposable::from_parts(one), cluster);
            difference(&written, &crate::run::run_case(&posed, &CoreTarget, opts)).is_some()
        })
        .map(|k| WORDS[k])
        .collect()
}

/// The first difference the lane could see between two runs of a case, in words.
fn difference(seeded: &CaseResult, fresh: &CaseResult) -> Option<String> {
    for (r, what) in [(seeded, "as written"), (fresh, "posed so")] {
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
    use crate::cluster::testing::{corpus, opts};
    use hpa_reference::KubernetesVersion;

    fn cluster() -> ClusterSettings {
        ClusterSettings {
            version: KubernetesVersion::V1_37,
            ..ClusterSettings::defaults_scaled(5)
        }
    }

    #[test]
    fn a_seed_below_every_proposal_is_shown_not_to_matter_and_left_out() {
        let case = corpus("algorithm/tolerance-band-no-change.yaml");
        let what = Unposable::of(&case, KubernetesVersion::V1_37);
        assert!(what.memory && !what.status, "{what:?}");
        let fresh = fresh(&case, what, &cluster());
        assert!(fresh.file.memory.is_none());
        assert!(
            !fresh
                .features
                .iter()
                .any(|(f, _)| *f == Feature::MemorySeeding)
        );
        let why = shown_irrelevant(&case, &fresh, what, &opts()).unwrap();
        assert!(why.contains("without a seeded memory"), "{why}");
        assert!(why.contains("the same trace posed so"), "{why}");
    }

    #[test]
    fn a_seed_that_changes_a_decision_keeps_the_case_off_the_cluster_with_the_tick() {
        let case = corpus("algorithm/tolerance-band-just-outside.yaml");
        let what = Unposable::of(&case, KubernetesVersion::V1_37);
        let e =
            shown_irrelevant(&case, &fresh(&case, what, &cluster()), what, &opts()).unwrap_err();
        assert!(e.contains("and that matters"), "{e}");
        assert!(e.contains("t=0 differs: replicas 10 instead of 9"), "{e}");
    }

    #[test]
    fn scale_up_limits_and_flags_are_posed_as_a_cluster_has_them_where_they_do_not_matter() {
        let case = corpus("calculator/rc-calculate-requests-container-sum-fallback.yaml");
        let what = Unposable {
            flags: true,
            ..Unposable::of(&case, KubernetesVersion::V1_37)
        };
        assert!(what.scale_up_limits, "{what:?}");
        let posed = fresh(&case, what, &cluster());
        let o = &posed.file.settings;
        assert_eq!(
            (o.scale_up_limit_factor, o.scale_up_limit_minimum),
            (None, None)
        );
        // The cluster's flags, back in case seconds (×5 of 60 s).
        assert_eq!(o.cpu_initialization_period_seconds, Some(300));
        assert_eq!(o.initial_readiness_delay_seconds, Some(30));
        let why = shown_irrelevant(&case, &posed, what, &opts()).unwrap();
        assert!(why.contains("hard-coded scale-up limit"), "{why}");
        assert!(why.contains("with the cluster's controller flags"), "{why}");
        // Where the flag decides the outcome, the tick that differs says so.
        let window = corpus("docs/docs-downscale-stabilization-flag.yaml");
        let flags = Unposable {
            flags: true,
            ..Unposable::default()
        };
        let e = shown_irrelevant(&window, &fresh(&window, flags, &cluster()), flags, &opts())
            .unwrap_err();
        assert!(
            e.contains("and that matters") && e.contains("differs"),
            "{e}"
        );
    }

    #[test]
    fn a_starting_status_is_unposable_only_where_a_new_hpa_is_reconciled_at_once() {
        let case = corpus("lifecycle/scale-from-zero-above-min-not-clamped-to-min.yaml");
        assert!(case.hpa.status.is_some());
        assert!(!Unposable::of(&case, KubernetesVersion::V1_36).status);
        let what = Unposable::of(&case, KubernetesVersion::V1_37);
        assert!(what.status);
        let fresh = fresh(&case, what, &cluster());
        assert!(fresh.hpa.status.is_none() && fresh.file.hpa.status.is_none());
        let e = shown_irrelevant(&case, &fresh, what, &opts()).unwrap_err();
        assert!(
            e.contains("without a starting status") && e.contains("#138294"),
            "{e}"
        );
    }
}
