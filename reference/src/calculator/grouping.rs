//! Sorting pods into ready, unready, missing-metric and ignored (upstream's `groupPods`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::lookup::{Ascending, ascending};
use crate::time::Time;
use crate::view::{ConditionStatus, PodMetric, PodPhase, PodView};

/// The pods of a target, grouped the way the replica calculator needs them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodGroups<'a> {
    /// Pods whose samples count.
    pub ready_count: usize,
    /// Pending pods, and (for CPU) pods not yet ready or still warming up.
    pub unready: BTreeSet<&'a str>,
    /// Pods the metrics API returned no sample for.
    pub missing: BTreeSet<&'a str>,
    /// Deleted and failed pods: never counted.
    pub ignored: BTreeSet<&'a str>,
}

/// Groups `pods` for a metric whose samples are `samples`. `resource` is the resource name for
/// Resource/ContainerResource metrics and `None` for custom metrics; the readiness and warm-up
/// rules apply only to `cpu`.
pub fn group_pods<'a>(
    pods: &'a [PodView],
    samples: &BTreeMap<String, PodMetric>,
    resource: Option<&str>,
    cpu_initialization_period: Duration,
    initial_readiness_delay: Duration,
    now: Time,
    pods_sorted: Option<bool>,
) -> PodGroups<'a> {
    let mut groups = PodGroups::default();
    // Pods listed in name order (the usual case) are matched to samples in one merged pass;
    // otherwise each pod is looked up.
    let sorted = pods_sorted.unwrap_or_else(|| ascending(pods.iter().map(|p| p.name.as_str())));
    let mut cursor = Ascending::new(samples, sorted);
    let mut sample_of = |name: &str| cursor.get(name);
    for pod in pods {
        if pod.deleted || pod.phase == PodPhase::Failed {
            groups.ignored.insert(pod.name.as_str());
            continue;
        }
        if pod.phase == PodPhase::Pending {
            groups.unready.insert(pod.name.as_str());
            continue;
        }
        let Some(sample) = sample_of(&pod.name) else {
            groups.missing.insert(pod.name.as_str());
            continue;
        };
        if resource == Some("cpu")
            && cpu_unready(
                pod,
                sample,
                cpu_initialization_period,
                initial_readiness_delay,
                now,
            )
        {
            groups.unready.insert(pod.name.as_str());
            continue;
        }
        groups.ready_count += 1;
    }
    groups
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
        let samples = BTreeMap::from([("a".to_string(), sample(990))]);
        let g = group_pods(&pods, &samples, Some("cpu"), INIT, DELAY, now, None);
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
        let samples = BTreeMap::from([("a".to_string(), sample(990))]);
        assert_eq!(
            group_pods(&pods, &samples, Some("cpu"), INIT, DELAY, now, None)
                .unready
                .len(),
            1
        );
        assert_eq!(
            group_pods(&pods, &samples, None, INIT, DELAY, now, None).ready_count,
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
        let samples = BTreeMap::from([("a".to_string(), sample(990))]);
        assert_eq!(
            group_pods(&pods, &samples, Some("cpu"), INIT, DELAY, now, None).ready_count,
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
        let samples = BTreeMap::from([("a".to_string(), sample(200))]);
        assert_eq!(
            group_pods(&pods, &samples, Some("cpu"), INIT, DELAY, now, None)
                .unready
                .len(),
            1
        );
        // sample exactly at transition + window is not before it → ready
        let samples = BTreeMap::from([("a".to_string(), sample(210))]);
        assert_eq!(
            group_pods(&pods, &samples, Some("cpu"), INIT, DELAY, now, None).ready_count,
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
        let samples = BTreeMap::from([
            ("d".to_string(), sample(990)),
            ("p".to_string(), sample(990)),
        ]);
        let g = group_pods(&pods, &samples, Some("memory"), INIT, DELAY, now, None);
        assert_eq!(g.ignored.len(), 2);
        assert!(g.unready.contains("p"));
        assert!(g.missing.contains("m"));
        assert_eq!(g.ready_count, 0);
    }
}
