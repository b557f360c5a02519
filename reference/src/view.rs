//! What the decision core is given at one instant: the target's scale, its pods and what the
//! metrics APIs answered. These are lean views of the Kubernetes objects (the controller converts
//! `Pod`s and API responses into them), so the core stays free of IO and fast on large pod lists.

use std::cmp::Ordering;
use std::time::Duration;

use crate::time::Time;

/// The target's scale subresource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleView {
    /// `spec.replicas`: what the HPA treats as the current replica count.
    pub spec_replicas: i32,
    /// `status.replicas`: used by per-pod Object and External metrics.
    pub status_replicas: i32,
    /// `status.selector`, the label selector of the target's pods (`None` or empty: missing).
    pub selector: Option<String>,
}

/// A pod's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PodPhase {
    /// Not yet running.
    Pending,
    /// Running.
    Running,
    /// All containers exited successfully.
    Succeeded,
    /// Failed.
    Failed,
    /// Unknown.
    Unknown,
}

/// A condition's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    /// `True`.
    True,
    /// `False`.
    False,
    /// `Unknown`.
    Unknown,
}

impl ConditionStatus {
    /// The Kubernetes spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

/// A pod's `Ready` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadyCondition {
    /// Its status.
    pub status: ConditionStatus,
    /// `lastTransitionTime`; `None` is Go's zero time.
    pub last_transition: Option<Time>,
}

/// The resource requests of one container: `(resource name, milli-value)` pairs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContainerRequests {
    /// The container's name.
    pub name: String,
    /// Its requests, e.g. `("cpu", 500)`.
    pub requests: Vec<(String, i64)>,
}

impl ContainerRequests {
    /// The request for `resource`, if set.
    pub fn get(&self, resource: &str) -> Option<i64> {
        self.requests
            .iter()
            .find(|(r, _)| name_order(r, resource) == Ordering::Equal)
            .map(|(_, v)| *v)
    }
}

/// The byte-wise order of two names, as `str::cmp` gives it, compared eight bytes at a time in
/// line: pod, container and resource names are short, and a `memcmp` call per pod and metric was
/// an eighth of a decision's instructions.
#[inline]
pub fn name_order(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let (p, q) = (word(&a[i..i + 8]), word(&b[i..i + 8]));
        if p != q {
            return p.cmp(&q);
        }
        i += 8;
    }
    while i < n {
        if a[i] != b[i] {
            return a[i].cmp(&b[i]);
        }
        i += 1;
    }
    a.len().cmp(&b.len())
}

/// Eight bytes as a big-endian word, so that words order as their bytes do.
#[inline]
fn word(chunk: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(chunk);
    u64::from_be_bytes(w)
}

/// One pod of the target, as the HPA sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodView {
    /// `metadata.name`.
    pub name: String,
    /// `status.phase`.
    pub phase: PodPhase,
    /// The `Ready` condition, if present.
    pub ready: Option<ReadyCondition>,
    /// `status.startTime`, if set.
    pub start_time: Option<Time>,
    /// `metadata.deletionTimestamp` is set.
    pub deleted: bool,
    /// `spec.containers` with their requests.
    pub containers: Vec<ContainerRequests>,
    /// `spec.initContainers` with `restartPolicy: Always` (sidecars); their requests count.
    pub sidecars: Vec<ContainerRequests>,
    /// Pod-level `spec.resources.requests`, if set (used with the PodLevelResources gate).
    pub pod_requests: Option<Vec<(String, i64)>>,
}

/// One pod's sample from a metrics API (upstream's `metricsclient.PodMetric`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodMetric {
    /// The value, in milli-units.
    pub value: i64,
    /// When it was sampled.
    pub timestamp: Time,
    /// The sampling window.
    pub window: Duration,
}

/// One metric's per-pod samples, one per name, in ascending byte order of the names (upstream's
/// `PodMetricsInfo`, a map by pod name). A sorted vector rather than a map: the decision walks it
/// in step with the pods, and a slice step costs a few instructions where a `BTreeMap` step cost
/// about forty, per pod and metric. Built from pairs in any order; of several samples of one name,
/// the last wins, as with a map's inserts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Samples(Vec<(String, PodMetric)>);

impl Samples {
    /// No samples.
    pub const fn new() -> Self {
        Samples(Vec::new())
    }

    /// Adds or replaces the sample of `name`; returns the one it replaced.
    pub fn insert(&mut self, name: String, sample: PodMetric) -> Option<PodMetric> {
        match self.position(&name) {
            Ok(at) => Some(std::mem::replace(&mut self.0[at].1, sample)),
            Err(at) => {
                self.0.insert(at, (name, sample));
                None
            }
        }
    }

    /// The sample of `name`.
    pub fn get(&self, name: &str) -> Option<&PodMetric> {
        self.position(name).ok().map(|at| &self.0[at].1)
    }

    /// How many names have a sample.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// No sample at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `(name, sample)` in ascending name order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&str, &PodMetric)> + ExactSizeIterator {
        self.0.iter().map(|(n, s)| (n.as_str(), s))
    }

    /// The names, in ascending order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator {
        self.0.iter().map(|(n, _)| n.as_str())
    }

    /// The samples, in ascending name order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &PodMetric> + ExactSizeIterator {
        self.0.iter().map(|(_, s)| s)
    }

    fn position(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(n, _)| name_order(n, name))
    }
}

impl FromIterator<(String, PodMetric)> for Samples {
    fn from_iter<I: IntoIterator<Item = (String, PodMetric)>>(pairs: I) -> Self {
        let mut v: Vec<(String, PodMetric)> = pairs.into_iter().collect();
        if !v
            .windows(2)
            .all(|w| name_order(&w[0].0, &w[1].0) == Ordering::Less)
        {
            // Stable, so equal names keep their order and the last of each run is the last given.
            v.sort_by(|a, b| name_order(&a.0, &b.0));
            let mut kept: Vec<(String, PodMetric)> = Vec::with_capacity(v.len());
            for pair in v {
                match kept.last_mut() {
                    Some(last) if last.0 == pair.0 => *last = pair,
                    _ => kept.push(pair),
                }
            }
            v = kept;
        }
        Samples(v)
    }
}

impl<const N: usize> From<[(String, PodMetric); N]> for Samples {
    fn from(pairs: [(String, PodMetric); N]) -> Self {
        pairs.into_iter().collect()
    }
}

impl std::ops::Index<&str> for Samples {
    type Output = PodMetric;

    /// The sample of `name`; panics when there is none (like a map's index).
    fn index(&self, name: &str) -> &PodMetric {
        self.get(name)
            .unwrap_or_else(|| panic!("no sample for pod {name:?}"))
    }
}

/// What a metrics API returned for one metric of the HPA's spec, after the metrics client's
/// conversion (upstream's `metrics.MetricsClient`).
#[derive(Debug, Clone, PartialEq)]
pub enum MetricValues {
    /// Per-pod samples by pod name (Resource, ContainerResource and Pods metrics), with the
    /// timestamp of the first item of the response.
    PerPod {
        /// Samples by pod name.
        samples: Samples,
        /// The timestamp of the response's first item.
        timestamp: Time,
    },
    /// The single value of an Object metric.
    Object {
        /// Milli-value.
        value: i64,
        /// Sample time.
        timestamp: Time,
    },
    /// The series of an External metric.
    External {
        /// Milli-values, one per series.
        values: Vec<i64>,
        /// Sample time.
        timestamp: Time,
    },
}

/// One metric's reading: the values, or the metrics client's error text (for example
/// `no metrics returned from resource metrics API`).
pub type MetricReading = Result<MetricValues, String>;

/// Everything the core looks at for one reconcile of one HPA.
#[derive(Debug, Clone)]
pub struct Observation<'a> {
    /// The instant of this reconcile.
    pub now: Time,
    /// The HPA as stored by the API server (defaults applied), with the status last written.
    pub hpa: &'a k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler,
    /// The target's scale, or the error getting it (e.g.
    /// `deployments.apps "web" not found`).
    pub scale: Result<ScaleView, String>,
    /// The pods matching the scale's selector.
    pub pods: &'a [PodView],
    /// One reading per entry of `spec.metrics`, in order.
    pub metrics: &'a [MetricReading],
    /// Keys (`namespace/name`) of every HPA, this one included, whose selector matches any of the
    /// pods; more than one makes the selector ambiguous. Empty means "only this HPA".
    pub hpas_selecting_pods: &'a [String],
}

fn requests_of(
    resources: Option<&k8s_openapi::api::core::v1::ResourceRequirements>,
) -> Option<Vec<(String, i64)>> {
    let requests = resources?.requests.as_ref()?;
    Some(
        requests
            .iter()
            .filter_map(|(r, q)| {
                crate::quantity::milli_value(&q.0)
                    .ok()
                    .map(|v| (r.clone(), v))
            })
            .collect(),
    )
}

impl PodView {
    /// The view of a `v1.Pod`.
    pub fn from_pod(pod: &k8s_openapi::api::core::v1::Pod) -> PodView {
        let status = pod.status.as_ref();
        let phase = match status.and_then(|s| s.phase.as_deref()) {
            Some("Pending") => PodPhase::Pending,
            Some("Running") => PodPhase::Running,
            Some("Succeeded") => PodPhase::Succeeded,
            Some("Failed") => PodPhase::Failed,
            _ => PodPhase::Unknown,
        };
        let ready = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
            .map(|c| ReadyCondition {
                status: match c.status.as_str() {
                    "True" => ConditionStatus::True,
                    "False" => ConditionStatus::False,
                    _ => ConditionStatus::Unknown,
                },
                last_transition: c.last_transition_time.as_ref().map(crate::time::core_time),
            });
        let spec = pod.spec.as_ref();
        let container = |c: &k8s_openapi::api::core::v1::Container| ContainerRequests {
            name: c.name.clone(),
            requests: requests_of(c.resources.as_ref()).unwrap_or_default(),
        };
        PodView {
            name: pod.metadata.name.clone().unwrap_or_default(),
            phase,
            ready,
            start_time: status
                .and_then(|s| s.start_time.as_ref())
                .map(crate::time::core_time),
            deleted: pod.metadata.deletion_timestamp.is_some(),
            containers: spec
                .map(|s| s.containers.iter().map(container).collect())
                .unwrap_or_default(),
            sidecars: spec
                .and_then(|s| s.init_containers.as_ref())
                .map(|ics| {
                    ics.iter()
                        .filter(|c| c.restart_policy.as_deref() == Some("Always"))
                        .map(container)
                        .collect()
                })
                .unwrap_or_default(),
            pod_requests: spec.and_then(|s| requests_of(s.resources.as_ref())),
        }
    }
}

impl ScaleView {
    /// The view of an `autoscaling/v1` Scale.
    pub fn from_scale(scale: &k8s_openapi::api::autoscaling::v1::Scale) -> ScaleView {
        ScaleView {
            spec_replicas: scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0),
            status_replicas: scale.status.as_ref().map_or(0, |s| s.replicas),
            selector: scale.status.as_ref().and_then(|s| s.selector.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_order_is_str_order() {
        let names = [
            "",
            "a",
            "b",
            "ab",
            "web-0001",
            "web-0002",
            "web-00010",
            "web-0001x",
            "web-7d4b9c8f6-x2k9p",
            "web-7d4b9c8f6-x2k9q",
            "web-7d4b9c8f6-x2k9",
            "web-7d4b9c8f6-x2k9pp",
            "Web",
            "wéb",
            "cpu",
            "memory",
            "hugepages-2Mi",
            "\u{0}",
            "\u{ff}",
        ];
        for a in names {
            for b in names {
                assert_eq!(name_order(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }

    fn sample(value: i64) -> PodMetric {
        PodMetric {
            value,
            timestamp: Time::from_secs(0),
            window: Duration::from_secs(30),
        }
    }

    #[test]
    fn samples_come_in_name_order_and_the_last_of_a_name_wins() {
        let pairs = [
            ("web-b", 1),
            ("web-a", 2),
            ("web-c", 3),
            ("web-a", 4),
            ("web-b", 5),
        ];
        let samples: Samples = pairs
            .iter()
            .map(|&(n, v)| (n.to_string(), sample(v)))
            .collect();
        let map: std::collections::BTreeMap<String, PodMetric> = pairs
            .iter()
            .map(|&(n, v)| (n.to_string(), sample(v)))
            .collect();
        let got: Vec<(&str, i64)> = samples.iter().map(|(n, s)| (n, s.value)).collect();
        let want: Vec<(&str, i64)> = map.iter().map(|(n, s)| (n.as_str(), s.value)).collect();
        assert_eq!(got, want);
        assert_eq!(got, [("web-a", 4), ("web-b", 5), ("web-c", 3)]);
        assert_eq!(samples.len(), 3);
        assert_eq!(samples["web-c"].value, 3);
        assert_eq!(samples.get("web-d"), None);
    }

    #[test]
    fn insert_keeps_the_order_and_replaces_a_name() {
        let mut samples = Samples::new();
        assert!(samples.is_empty());
        for (n, v) in [("b", 1), ("d", 2), ("a", 3), ("c", 4)] {
            assert_eq!(samples.insert(n.to_string(), sample(v)), None);
        }
        assert_eq!(
            samples.insert("b".to_string(), sample(9)).map(|s| s.value),
            Some(1)
        );
        assert_eq!(samples.keys().collect::<Vec<_>>(), ["a", "b", "c", "d"]);
        assert_eq!(
            samples.values().map(|s| s.value).collect::<Vec<_>>(),
            [3, 9, 4, 2]
        );
    }
}
