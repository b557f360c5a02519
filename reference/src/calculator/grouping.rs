//! Sorting pods into ready, unready, missing-metric and ignored (upstream's `groupPods`), in one
//! merged walk over the pods in name order and a metric's samples (a sorted `Samples`, so also in name
//! order): no set or map is built per metric, and nothing is allocated when the pods come sorted
//! (the usual case; the decision sorts an index of them once otherwise and shares it by all its
//! metrics). Pod names are unique, as in one namespace.

use std::cmp::Ordering;
use std::time::Duration;

use crate::time::Time;
use crate::view::{ConditionStatus, PodMetric, PodPhase, PodView, Samples, name_order, same_name};

/// How many pods fall in each group for one metric.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PodGroups {
    /// Pods whose samples count.
    pub ready_count: usize,
    /// Pending pods, and (for CPU) pods not yet ready or still warming up.
    pub unready: usize,
    /// Pods the metrics API returned no sample for.
    pub missing: usize,
    /// Deleted and failed pods: never counted.
    pub ignored: usize,
}

/// The group of one pod for one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Its sample counts.
    Ready,
    /// Set aside (pending; for CPU, not ready or warming up); its sample, if any, is dropped.
    Unready,
    /// No sample.
    Missing,
    /// Deleted or failed; its sample, if any, is dropped.
    Ignored,
}

/// The order in which to walk a decision's pods: by name. Computed once per decision and shared by
/// all its metrics.
#[derive(Debug, Clone, Copy)]
pub enum PodOrder<'a> {
    /// The pods are already in strictly ascending name order.
    Listed,
    /// Indices of the pods in ascending name order.
    Indexed(&'a [usize]),
}

impl PodOrder<'_> {
    /// The order of `pods`: [`PodOrder::Listed`] when they are sorted (nothing to allocate), else
    /// `None` and the caller sorts an index with [`sorted_index`].
    pub fn of(pods: &[PodView]) -> Option<PodOrder<'static>> {
        pods.windows(2)
            .all(|w| name_order(&w[0].name, &w[1].name) == Ordering::Less)
            .then_some(PodOrder::Listed)
    }
}

/// Indices of `pods` in ascending name order (stable for equal names).
pub fn sorted_index(pods: &[PodView]) -> Vec<usize> {
    let mut index: Vec<usize> = (0..pods.len()).collect();
    index.sort_by(|a, b| pods[*a].name.cmp(&pods[*b].name));
    index
}

/// Walks `pods` in `order` along with `samples`: `visit(Some((index, pod, group)), sample)` for each
/// pod (`index` in `pods`) and `visit(None, Some(sample))` for each sample of a name that is not a
/// pod's (those still count in plain averages, as upstream keeps them). `resource` is the resource name for Resource and
/// ContainerResource metrics and `None` for custom metrics; the readiness and warm-up rules apply
/// only to `cpu`. Returns the group counts. In line, so that `visit` is too: a call per pod and
/// metric was a tenth of a decision's instructions.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn walk_pods<'p>(
    pods: &'p [PodView],
    order: PodOrder<'_>,
    samples: &Samples,
    resource: Option<&str>,
    cpu_initialization_period: Duration,
    initial_readiness_delay: Duration,
    now: Time,
    mut visit: impl FnMut(Option<(usize, &'p PodView, Group)>, Option<&PodMetric>),
) -> PodGroups {
    let rules = Rules {
        cpu: resource == Some("cpu"),
        cpu_initialization_period,
        initial_readiness_delay,
        now,
    };
    // Listed pods are walked without indexing (no bounds check per pod and metric).
    match order {
        PodOrder::Listed => walk_in(pods.iter().enumerate(), samples, &rules, &mut visit),
        PodOrder::Indexed(index) => walk_in(
            index.iter().map(|&at| (at, &pods[at])),
            samples,
            &rules,
            &mut visit,
        ),
    }
}

/// What decides a pod's group besides the pod and its sample.
struct Rules {
    cpu: bool,
    cpu_initialization_period: Duration,
    initial_readiness_delay: Duration,
    now: Time,
}

/// [`walk_pods`] over `(index, pod)` pairs in name order.
#[inline(always)]
fn walk_in<'p>(
    pods: impl Iterator<Item = (usize, &'p PodView)>,
    samples: &Samples,
    rules: &Rules,
    visit: &mut impl FnMut(Option<(usize, &'p PodView, Group)>, Option<&PodMetric>),
) -> PodGroups {
    let mut groups = PodGroups::default();
    let mut iter = samples.iter().peekable();
    for (at, pod) in pods {
        let mut sample = None;
        while let Some((name, s)) = iter.peek() {
            // A pod's own sample is the usual next one: found equal in line, ordered only if not.
            let order = if same_name(name, &pod.name) {
                Ordering::Equal
            } else {
                name_order(name, &pod.name)
            };
            match order {
                Ordering::Less => {
                    visit(None, Some(s));
                    iter.next();
                }
                Ordering::Equal => {
                    sample = Some(*s);
                    iter.next();
                    break;
                }
                Ordering::Greater => break,
            }
        }
        let group = if pod.deleted || pod.phase == PodPhase::Failed {
            groups.ignored += 1;
            Group::Ignored
        } else if pod.phase == PodPhase::Pending {
            groups.unready += 1;
            Group::Unready
        } else {
            match sample {
                None => {
                    groups.missing += 1;
                    Group::Missing
                }
                Some(s)
                    if rules.cpu
                        && cpu_unready(
                            pod,
                            s,
                            rules.cpu_initialization_period,
                            rules.initial_readiness_delay,
                            rules.now,
                        ) =>
                {
                    groups.unready += 1;
                    Group::Unready
                }
                Some(_) => {
                    groups.ready_count += 1;
                    Group::Ready
                }
            }
        };
        visit(Some((at, pod, group)), sample);
    }
    for (_, s) in iter {
        visit(None, Some(s));
    }
    groups
}

/// [`walk_pods`] for the counts alone (pods in any order).
pub fn group_pods(
    pods: &[PodView],
    samples: &Samples,
    resource: Option<&str>,
    cpu_initialization_period: Duration,
    initial_readiness_delay: Duration,
    now: Time,
) -> PodGroups {
    let index;
    let order = match PodOrder::of(pods) {
        Some(o) => o,
        None => {
            index = sorted_index(pods);
            PodOrder::Indexed(&index)
        }
    };
    walk_pods(
        pods,
        order,
        samples,
        resource,
        cpu_initialization_period,
        initial_readiness_delay,
        now,
        |_, _| {},
    )
}

/// Whether a CPU sample must be set aside: the pod is not ready, or it is still inside its CPU
/// initialization period and the sample may cover its start-up, or it has never been ready.
fn cpu_unready(
    pod: &PodView,
    sample: &PodMetric,
    cpu_initialization_period: Duration,
    initial_readiness_delay: Duration,
    now: Time,
) -> bool {
    let (Some(ready), Some(start)) = (pod.ready, pod.start_time) else {
        return true;
    };
    let transition = ready.last_transition.unwrap_or(Time::GO_ZERO);
    if start.plus(cpu_initialization_period).after(now) {
        ready.status == ConditionStatus::False
            || sample.timestamp.before(transition.plus(sample.window))
    } else {
        ready.status == ConditionStatus::False
            && start.plus(initial_readiness_delay).after(transition)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::ReadyCondition;

    fn pod(
        name: &str,
        phase: PodPhase,
        ready: Option<(ConditionStatus, i64)>,
        start: i64,
    ) -> PodView {
        PodView {
            name: name.into(),
            phase,
            ready: ready.map(|(status, t)| ReadyCondition {
                status,
                last_transition: Some(Time::from_secs(t)),
            }),
            start_time: Some(Time::from_secs(start)),
            deleted: false,
            containers: vec![],
            sidecars: vec![],
            pod_requests: None,
        }
    }

    fn sample(ts: i64) -> PodMetric {
        PodMetric {
            value: 100,
            timestamp: Time::from_secs(ts),
            window: Duration::from_secs(60),
        }
    }

    const INIT: Duration = Duration::from_secs(300);
    const DELAY: Duration = Duration::from_secs(30);

    #[test]
    fn a_pod_that_was_ready_and_went_unready_after_initialization_counts_as_ready() {
        let now = Time::from_secs(1000);
        let pods = [pod(
            "a",
            PodPhase::Running,
            Some((ConditionStatus::False, 500)),
            0,
        )];
        let samples = Samples::from([("a".to_string(), sample(990))]);
        let g = group_pods(&pods, &samples, Some("cpu"), INIT, DELAY, now);
        assert_eq!(g.ready_count, 1);
    }

    #[test]
    fn a_pod_that_never_became_ready_is_unready_for_cpu_only() {
        let now = Time::from_secs(1000);
        let pods = [pod(
            "a",
            PodPhase::Running,
            Some((ConditionStatus::False, 10)),
            0,
        )];
        let samples = Samples::from([("a".to_string(), sample(990))]);
        assert_eq!(
            group_pods(&pods, &samples, Some("cpu"), INIT, DELAY, now).unready,
            1
        );
        assert_eq!(
            group_pods(&pods, &samples, None, INIT, DELAY, now).ready_count,
            1
        );
    }

    #[test]
    fn readiness_delay_boundary_is_strict() {
        // start + delay == transition: "after" is false, so the pod counts as having been ready.
        let now = Time::from_secs(1000);
        let pods = [pod(
            "a",
            PodPhase::Running,
            Some((ConditionStatus::False, 30)),
            0,
        )];
        let samples = Samples::from([("a".to_string(), sample(990))]);
        assert_eq!(
            group_pods(&pods, &samples, Some("cpu"), INIT, DELAY, now).ready_count,
            1
        );
    }

    #[test]
    fn inside_initialization_a_sample_overlapping_the_transition_is_set_aside() {
        let now = Time::from_secs(200);
        let pods = [pod(
            "a",
            PodPhase::Running,
            Some((ConditionStatus::True, 150)),
            100,
        )];
        // transition + window = 210 > sample time 200 → unready
        let samples = Samples::from([("a".to_string(), sample(200))]);
        assert_eq!(
            group_pods(&pods, &samples, Some("cpu"), INIT, DELAY, now).unready,
            1
        );
        // sample exactly at transition + window is not before it → ready
        let samples = Samples::from([("a".to_string(), sample(210))]);
        assert_eq!(
            group_pods(&pods, &samples, Some("cpu"), INIT, DELAY, now).ready_count,
            1
        );
    }

    #[test]
    fn deleted_failed_pending_and_missing_pods() {
        let now = Time::from_secs(1000);
        let mut deleted = pod("d", PodPhase::Running, Some((ConditionStatus::True, 0)), 0);
        deleted.deleted = true;
        let pods = [
            deleted,
            pod("f", PodPhase::Failed, None, 0),
            pod("p", PodPhase::Pending, None, 0),
            pod("m", PodPhase::Running, Some((ConditionStatus::True, 0)), 0),
        ];
        let samples = Samples::from([
            ("d".to_string(), sample(990)),
            ("p".to_string(), sample(990)),
        ]);
        let g = group_pods(&pods, &samples, Some("memory"), INIT, DELAY, now);
        assert_eq!(g.ignored, 2);
        assert_eq!(g.unready, 1);
        assert_eq!(g.missing, 1);
        assert_eq!(g.ready_count, 0);
        // The same pods in another order group the same; each pod's group is reported.
        let mut reversed = pods.clone();
        reversed.reverse();
        assert_eq!(
            group_pods(&reversed, &samples, Some("memory"), INIT, DELAY, now),
            g
        );
        let mut seen = Vec::new();
        let mut extra = 0;
        let samples = Samples::from([
            ("a".to_string(), sample(990)),
            ("m".to_string(), sample(990)),
            ("z".to_string(), sample(990)),
        ]);
        let index = sorted_index(&reversed);
        walk_pods(
            &reversed,
            PodOrder::Indexed(&index),
            &samples,
            None,
            INIT,
            DELAY,
            now,
            |pod, s| match pod {
                Some((_, p, g)) => seen.push((p.name.clone(), g, s.is_some())),
                None => extra += 1,
            },
        );
        assert_eq!(extra, 2, "samples of a and z match no pod");
        assert_eq!(
            seen,
            [
                ("d".to_string(), Group::Ignored, false),
                ("f".to_string(), Group::Ignored, false),
                ("m".to_string(), Group::Ready, true),
                ("p".to_string(), Group::Unready, false),
            ]
        );
    }
}
