//! The simulated cluster of one case: the scale target, its pods (created when the scale grows,
//! with start and readiness per the case's start-up model; removed when it shrinks as a
//! ReplicaSet picks them: pending, then not ready, then newest), the load per metric, injected
//! API errors, and the HPA with the status the target last wrote.
//!
//! The workload adds or removes pods only when its replica count changes; a pod a timeline entry
//! marks failed or deleted is not replaced by itself (so upstream's static pod lists can be set up).
//!
//! The world is bounded: it holds at most [`MAX_PODS`] pods. The loader refuses cases that ask
//! for more; a target that scales beyond it gets a [`WorldError`] (its case fails), never an
//! allocation per replica without bound.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use hpa_reference::metrics_api::{
    ContainerMetrics, ListAnswer, MetricsApis, ObjectAnswer, PodMetrics, PodValue, RequestFor,
    SampleValue, generic_response_message,
};
use hpa_reference::quantity::{format_milli_decimal, milli_value};
use hpa_reference::selector::Requirement;
use hpa_reference::time::kube_time;
use hpa_reference::{ContainerRequests, Time};
use k8s_openapi::api::autoscaling::v1::{Scale, ScaleSpec, ScaleStatus};
use k8s_openapi::api::autoscaling::v2::{HorizontalPodAutoscaler, HorizontalPodAutoscalerStatus};
use k8s_openapi::api::core::v1::{
    Container, Pod, PodCondition, PodSpec, PodStatus, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::case::Case;
use crate::case::bounds::MAX_PODS;
use crate::case::model::{IntOrPercent, Load, Phase, PodChange, Rollout, TimelineEntry};

/// A change the simulated world cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorldError {
    /// More replicas than [`MAX_PODS`].
    #[error(
        "the target scaled to {0} replicas, more than the simulated world holds ({MAX_PODS} pods)"
    )]
    TooManyReplicas(i32),
    /// A negative replica count.
    #[error("the target scaled to {0} replicas, a negative count")]
    NegativeReplicas(i32),
}

/// Checks a replica count the world is asked to take.
pub fn check_replicas(n: i32) -> Result<i32, WorldError> {
    if n < 0 {
        Err(WorldError::NegativeReplicas(n))
    } else if n > MAX_PODS {
        Err(WorldError::TooManyReplicas(n))
    } else {
        Ok(n)
    }
}

/// Virtual t=0 is 2000-01-01T00:00:00Z (what Go's `testing/synctest` bubbles start at).
pub const EPOCH_SECS: i64 = 946_684_800;

/// The instant of virtual second `t`.
pub fn instant(t: i64) -> Time {
    // Saturating: the loader keeps case times within ±MAX_VIRTUAL_SECONDS; nothing can wrap.
    Time::from_micros(EPOCH_SECS.saturating_add(t).saturating_mul(1_000_000))
}

/// The virtual second of an instant (rounded down).
pub fn virtual_secs(t: Time) -> i64 {
    t.as_micros().div_euclid(1_000_000) - EPOCH_SECS
}

#[derive(Debug, Clone)]
struct SimPod {
    name: String,
    created: i64,
    /// Started before the case began (no start-up spike).
    initial: bool,
    phase: Option<Phase>,
    /// (ready, transition time) set by the timeline.
    ready: Option<(bool, i64)>,
    /// The pod has no Ready condition at all.
    no_ready_condition: bool,
    deleted: bool,
    /// Requests that differ from the template: container name → (resource, milli-value).
    requests: BTreeMap<String, BTreeMap<String, i64>>,
    /// The template revision it was made from (0 before any rollout).
    revision: u32,
    /// Replaced by a rollout: terminating since the first time, gone at the second.
    terminating: Option<(i64, i64)>,
}

/// A rolling update in progress: the Deployment's strategy (README "world model").
#[derive(Debug, Clone)]
struct RolloutState {
    max_surge: IntOrPercent,
    max_unavailable: IntOrPercent,
    min_ready: i64,
    termination: i64,
}

#[derive(Debug, Clone)]
enum LoadRule {
    Total(i64),
    PerPod(i64),
    Explicit(Vec<i64>),
}

/// What kind of metric a key names, and for resources the container its load applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum MetricKind {
    Resource,
    ContainerResource(String),
    Pods,
    Object,
    External,
}

/// What a target sees at one tick: the Kubernetes objects and the metrics APIs' answers, exactly
/// what a controller would read (and what the step protocol sends).
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Virtual seconds.
    pub t: i64,
    /// The instant.
    pub now: Time,
    /// The HPA as stored, with the status last written.
    pub hpa: HorizontalPodAutoscaler,
    /// GET scale: the scale subresource, or the error.
    pub scale: Result<Scale, String>,
    /// UPDATE scale will fail with this error.
    pub scale_update_error: Option<String>,
    /// The pods matching the selector (shared: a world hands out the same list while no pod
    /// changed, so a target can see "unchanged" without comparing pods).
    pub pods: Arc<Vec<Pod>>,
    /// The metrics APIs' answers.
    pub metrics: MetricsApis,
    /// Keys (`namespace/name`) of other HPAs whose selectors match these pods.
    pub other_hpas_selecting_pods: Vec<String>,
}

/// The simulated cluster.
#[derive(Debug, Clone)]
pub struct World {
    name: String,
    replicas: i32,
    status_replicas: Option<i32>,
    selector: String,
    pods: Vec<SimPod>,
    next_seq: u64,
    containers: Vec<ContainerRequests>,
    sidecars: Vec<ContainerRequests>,
    init_containers: Vec<ContainerRequests>,
    pod_requests: Option<Vec<(String, i64)>>,
    /// Pods that stop being active are not replaced (`workload.fixedPods`).
    fixed_pods: bool,
    /// The snapshot lists pods newest first (`workload.listedNewestFirst`).
    newest_first: bool,
    pending_seconds: i64,
    ready_after: i64,
    hot_cpu: Option<(i64, i64)>,
    window: Duration,
    resource_loads: BTreeMap<(String, String), LoadRule>,
    custom_loads: BTreeMap<String, LoadRule>,
    object_values: BTreeMap<String, i64>,
    external_series: BTreeMap<String, Vec<i64>>,
    /// Object values and External series to answer as the case wrote them (`load.asWritten`).
    written: BTreeMap<String, Vec<String>>,
    missing: BTreeMap<String, BTreeSet<String>>,
    /// Samples for pods outside the pod list, by (metric, pod name).
    stray: BTreeMap<(String, String), i64>,
    metric_errors: BTreeMap<String, String>,
    get_scale_error: Option<String>,
    update_scale_error: Option<String>,
    /// Failed rescales left before `update_scale_error` clears (`None`: it stays).
    update_failures_left: Option<u32>,
    hpa: HorizontalPodAutoscaler,
    /// The HPA as the case wrote it (patches apply to this, then defaults).
    hpa_written: HorizontalPodAutoscaler,
    /// Other HPAs in the namespace: (`namespace/name`, their selector).
    other_hpas: Vec<(String, hpa_reference::selector::Selector)>,
    kinds: BTreeMap<String, MetricKind>,
    /// The pod template's revision: new pods are made from it.
    revision: u32,
    rollout: Option<RolloutState>,
    /// The pod objects last handed out and how each pod looked then: handed out again while
    /// every pod looks the same (building them is a good part of a tick's cost when fuzzing).
    pods_built: Option<(Vec<PodLook>, Arc<Vec<Pod>>)>,
}

/// Everything a pod's object is built from that can differ between pods or ticks (the
/// template, labels and namespace are the world's and never change).
#[derive(Debug, Clone, PartialEq)]
struct PodLook {
    name: String,
    requests: BTreeMap<String, BTreeMap<String, i64>>,
    at: PodAt,
}

/// The part of a [`PodLook`] that is derived from the pod and the instant (no allocation).
#[derive(Debug, Clone, Copy, PartialEq)]
struct PodAt {
    phase: Phase,
    ready: (bool, i64),
    start: i64,
    no_ready_condition: bool,
    /// When it was deleted as seen at the instant (a pod deleted outright shows the instant).
    deleted_at: Option<i64>,
}

/// The containers of a template list with their requests in milli-units.
fn container_requests(list: &[crate::case::model::Container]) -> Vec<ContainerRequests> {
    list.iter()
        .map(|c| ContainerRequests {
            name: c.name.clone(),
            requests: requests(&c.requests),
        })
        .collect()
}

fn requests(map: &BTreeMap<String, String>) -> Vec<(String, i64)> {
    map.iter()
        .map(|(r, q)| (r.clone(), milli_value(q).unwrap_or(0)))
        .collect()
}

fn quantity(milli: i64) -> Quantity {
    Quantity(format_milli_decimal(milli))
}

fn q(s: &str) -> i64 {
    // Quantities were checked when the case was loaded; the world keeps what upstream's
    // `MilliValue()` makes of them (`"8Ei"` is -1000), and writes objects from that.
    milli_value(s).unwrap_or(0)
}

impl World {
    /// The world at t=0 for a case.
    pub fn new(case: &Case) -> World {
        let w = &case.file.workload;
        let name = case.hpa.spec.scale_target_ref.name.clone();
        let containers = container_requests(&w.pod.containers);
        let mut kinds = BTreeMap::new();
        for m in case.hpa.spec.metrics.iter().flatten() {
            let key = crate::case::load::metric_key(m);
            let kind = match m.type_.as_str() {
                "Resource" => MetricKind::Resource,
                "ContainerResource" => MetricKind::ContainerResource(
                    m.container_resource
                        .as_ref()
                        .map(|c| c.container.clone())
                        .unwrap_or_default(),
                ),
                "Pods" => MetricKind::Pods,
                "Object" => MetricKind::Object,
                _ => MetricKind::External,
            };
            kinds.entry(key).or_insert(kind);
        }
        let age = i64::from(w.initial_pod_age_seconds.unwrap_or(3600));
        let namespace = case.hpa.metadata.namespace.as_deref().unwrap_or("default");
        let mut world = World {
            selector: w.selector.clone().unwrap_or_else(|| format!("app={name}")),
            name,
            replicas: w.replicas,
            status_replicas: None,
            pods: Vec::new(),
            next_seq: 0,
            sidecars: container_requests(&w.pod.sidecars),
            init_containers: container_requests(&w.pod.init_containers),
            containers,
            pod_requests: w.pod.requests.as_ref().map(requests),
            fixed_pods: w.fixed_pods,
            newest_first: w.listed_newest_first,
            pending_seconds: i64::from(w.startup.pending_seconds),
            ready_after: i64::from(w.startup.ready_after_seconds),
            hot_cpu: w
                .startup
                .hot_cpu
                .as_ref()
                .map(|h| (q(&h.usage), i64::from(h.for_seconds))),
            window: Duration::from_secs(u64::from(w.metric_window_seconds.unwrap_or(30))),
            resource_loads: BTreeMap::new(),
            custom_loads: BTreeMap::new(),
            object_values: BTreeMap::new(),
            external_series: BTreeMap::new(),
            written: BTreeMap::new(),
            missing: BTreeMap::new(),
            stray: BTreeMap::new(),
            metric_errors: BTreeMap::new(),
            get_scale_error: None,
            update_scale_error: None,
            update_failures_left: None,
            hpa: case.hpa.clone(),
            hpa_written: case.file.hpa.clone(),
            other_hpas: case
                .file
                .other_hpas
                .iter()
                .filter_map(|o| {
                    // The loader rejected a selector that does not parse.
                    let selector = hpa_reference::selector::parse(&o.selector).ok()?;
                    Some((format!("{namespace}/{}", o.name), selector))
                })
                .collect(),
            kinds,
            revision: 0,
            rollout: None,
            pods_built: None,
        };
        // The loader checked 0 ≤ replicas ≤ MAX_PODS.
        for _ in 0..w.replicas.clamp(0, MAX_PODS) {
            world.add_pod(-age, true);
        }
        world
    }

    fn add_pod(&mut self, created: i64, initial: bool) {
        self.pods.push(SimPod {
            name: format!("{}-{:04}", self.name, self.next_seq),
            created,
            initial,
            phase: None,
            ready: None,
            no_ready_condition: false,
            deleted: false,
            requests: BTreeMap::new(),
            revision: self.revision,
            terminating: None,
        });
        self.next_seq += 1;
    }

    /// The target's `spec.replicas`.
    pub fn replicas(&self) -> i32 {
        self.replicas
    }

    /// The HPA as stored.
    pub fn hpa(&self) -> &HorizontalPodAutoscaler {
        &self.hpa
    }

    fn phase_at(&self, p: &SimPod, t: i64) -> Phase {
        p.phase.unwrap_or(if t < p.created + self.pending_seconds {
            Phase::Pending
        } else {
            Phase::Running
        })
    }

    fn start_of(&self, p: &SimPod) -> i64 {
        p.created + self.pending_seconds
    }

    /// (ready, last transition) at `t`.
    fn ready_at(&self, p: &SimPod, t: i64) -> (bool, i64) {
        if p.no_ready_condition {
            return (false, p.created);
        }
        if let Some(r) = p.ready {
            return r;
        }
        if self.phase_at(p, t) == Phase::Pending {
            return (false, p.created);
        }
        let start = self.start_of(p);
        let ready_time = start + self.ready_after;
        if t >= ready_time {
            (true, ready_time)
        } else {
            (false, start)
        }
    }

    fn active(&self, p: &SimPod, t: i64) -> bool {
        !p.deleted && !matches!(self.phase_at(p, t), Phase::Failed | Phase::Succeeded)
    }

    fn serving(&self, p: &SimPod, t: i64) -> bool {
        !p.deleted && self.phase_at(p, t) == Phase::Running && self.ready_at(p, t).0
    }

    /// What a ReplicaSet does when pods stop being active (deleted, `Failed`, `Succeeded`): a new
    /// pod for each active pod short of `spec.replicas`. The inactive ones stay listed.
    fn replace_inactive(&mut self, t: i64) {
        let active = self.pods.iter().filter(|p| self.active(p, t)).count();
        for _ in active..self.replicas.max(0) as usize {
            self.add_pod(t, false);
        }
    }

    /// Sets `spec.replicas` and adds or removes pods to match.
    pub fn set_replicas(&mut self, replicas: i32, t: i64) -> Result<(), WorldError> {
        self.replicas = check_replicas(replicas)?;
        let active: Vec<usize> = (0..self.pods.len())
            .filter(|i| self.active(&self.pods[*i], t))
            .collect();
        let want = self.replicas as usize;
        if active.len() < want {
            for _ in active.len()..want {
                self.add_pod(t, false);
            }
        } else if active.len() > want {
            // ReplicaSet ranking (older revisions first during a rollout).
            let excess = active.len() - want;
            let remove: BTreeSet<usize> = self.ranked(active, t).into_iter().take(excess).collect();
            let mut i = 0;
            self.pods.retain(|_| {
                let keep = !remove.contains(&i);
                i += 1;
                keep
            });
        }
        Ok(())
    }

    /// Pods in the order a ReplicaSet removes them: pending first, then not ready, then newest;
    /// during a rollout, pods of older revisions before those of the new one.
    fn ranked(&self, mut pods: Vec<usize>, t: i64) -> Vec<usize> {
        pods.sort_by_key(|i| {
            let p = &self.pods[*i];
            let pending = self.phase_at(p, t) == Phase::Pending;
            let ready = self.ready_at(p, t).0;
            (
                p.revision,
                !pending,
                ready,
                std::cmp::Reverse(p.created),
                std::cmp::Reverse(*i),
            )
        });
        pods
    }

    /// Starts a rolling update: a new template revision (with the rollout's requests; the old
    /// pods keep the old template's), carried out from this tick on by [`World::advance`].
    fn start_rollout(&mut self, r: &Rollout) {
        self.revision += 1;
        for (container, reqs) in r.requests.iter().flatten() {
            for (resource, milli) in requests(reqs) {
                let template = self
                    .containers
                    .iter_mut()
                    .chain(self.sidecars.iter_mut())
                    .chain(self.init_containers.iter_mut())
                    .find(|c| &c.name == container);
                // The loader checked the container exists and requests the resource.
                let Some(template) = template else { continue };
                let Some(slot) = template.requests.iter_mut().find(|(n, _)| *n == resource) else {
                    continue;
                };
                let old = std::mem::replace(&mut slot.1, milli);
                for p in self.pods.iter_mut().filter(|p| p.revision < self.revision) {
                    p.requests
                        .entry(container.clone())
                        .or_default()
                        .entry(resource.clone())
                        .or_insert(old);
                }
            }
        }
        self.rollout = Some(RolloutState {
            max_surge: r
                .max_surge
                .clone()
                .unwrap_or(IntOrPercent::Percent("25%".into())),
            max_unavailable: r
                .max_unavailable
                .clone()
                .unwrap_or(IntOrPercent::Percent("25%".into())),
            min_ready: i64::from(r.min_ready_seconds),
            termination: i64::from(r.termination_seconds.unwrap_or(30)),
        });
    }

    /// Whether a pod counts as available at `t`: Running, Ready, not deleting, and (during a
    /// rollout) Ready for the rollout's `minReadySeconds`.
    fn available(&self, p: &SimPod, t: i64) -> bool {
        let min_ready = self.rollout.as_ref().map_or(0, |r| r.min_ready);
        self.serving(p, t) && t - self.ready_at(p, t).1 >= min_ready
    }

    /// What happens between ticks without a timeline entry: pods a rollout replaced finish
    /// terminating, and a rollout in progress moves on as a Deployment's does — new-revision
    /// pods while the total stays within `spec.replicas + maxSurge`, old pods terminating while
    /// the available ones stay at least `spec.replicas − maxUnavailable` — until no old pod is
    /// left. Called at every tick before the target looks.
    pub fn advance(&mut self, t: i64) {
        self.pods
            .retain(|p| p.terminating.is_none_or(|(_, gone)| t < gone));
        let Some(r) = self.rollout.clone() else {
            return;
        };
        let spec = self.replicas;
        let mut surge = r.max_surge.pods(spec, true);
        let mut unavailable = r.max_unavailable.pods(spec, false);
        if surge == 0 && unavailable == 0 {
            unavailable = 1;
        }
        surge = surge.min(MAX_PODS);
        loop {
            let live: Vec<usize> = (0..self.pods.len())
                .filter(|i| self.active(&self.pods[*i], t))
                .collect();
            let (new, old): (Vec<usize>, Vec<usize>) = live
                .iter()
                .partition(|i| self.pods[**i].revision == self.revision);
            if old.is_empty() {
                // The new revision takes the whole count, and the rollout is complete.
                for _ in live.len()..spec.max(0) as usize {
                    self.add_pod(t, false);
                }
                self.rollout = None;
                return;
            }
            let total = live.len() as i32;
            let grow = (spec + surge - total).min(spec - new.len() as i32);
            if grow > 0 {
                for _ in 0..grow {
                    self.add_pod(t, false);
                }
                continue;
            }
            // The Deployment controller's scale-down of old pods: first unavailable old pods, as
            // many as the budget allows; then available ones down to the minimum available.
            let min_available = spec - unavailable;
            let new_unavailable = new
                .iter()
                .filter(|i| !self.available(&self.pods[**i], t))
                .count() as i32;
            let budget = total - min_available - new_unavailable;
            if budget <= 0 {
                return;
            }
            let (healthy, unhealthy): (Vec<usize>, Vec<usize>) =
                old.iter().partition(|i| self.available(&self.pods[**i], t));
            let available = live
                .iter()
                .filter(|i| self.available(&self.pods[**i], t))
                .count() as i32;
            let cleanup = self.ranked(unhealthy, t).into_iter().take(budget as usize);
            let scale_down = self
                .ranked(healthy, t)
                .into_iter()
                .take((available - min_available).max(0) as usize);
            let go: Vec<usize> = cleanup.chain(scale_down).collect();
            if go.is_empty() {
                return;
            }
            for i in go {
                self.pods[i].deleted = true;
                self.pods[i].terminating = Some((t, t + r.termination));
            }
        }
    }

    fn pick(&self, ordinals: &Option<Vec<usize>>, newest: Option<usize>, all: bool) -> Vec<usize> {
        let n = self.pods.len();
        if all {
            (0..n).collect()
        } else if let Some(k) = newest {
            (n.saturating_sub(k)..n).collect()
        } else {
            ordinals
                .iter()
                .flatten()
                .copied()
                .filter(|i| *i < n)
                .collect()
        }
    }

    fn apply_pod_change(&mut self, c: &PodChange, t: i64) {
        for i in self.pick(&c.ordinals, c.newest, c.all) {
            if let Some(phase) = c.phase {
                self.pods[i].phase = Some(phase);
            }
            if let Some(start) = c.started_at {
                self.pods[i].created = start - self.pending_seconds;
                self.pods[i].ready = None;
            }
            if let Some(ready) = c.ready {
                let (now_ready, since) = self.ready_at(&self.pods[i], t);
                self.pods[i].ready = Some(if now_ready == ready {
                    (ready, since)
                } else {
                    (ready, t)
                });
            }
            if let Some(has) = c.ready_condition {
                self.pods[i].no_ready_condition = !has;
            }
            if let Some(since) = c.ready_since {
                let (now_ready, _) = self.ready_at(&self.pods[i], t);
                self.pods[i].ready = Some((now_ready, since));
            }
            if let Some(d) = c.deleted {
                self.pods[i].deleted = d;
            }
            for (container, reqs) in c.requests.iter().flatten() {
                let slot = self.pods[i].requests.entry(container.clone()).or_default();
                for (r, v) in requests(reqs) {
                    slot.insert(r, v);
                }
            }
        }
    }

    fn apply_load(&mut self, l: &Load) {
        let kind = self
            .kinds
            .get(&l.metric)
            .cloned()
            .unwrap_or(MetricKind::Pods);
        let rule = if let Some(v) = &l.total {
            LoadRule::Total(q(v))
        } else if let Some(v) = l.per_pod.as_ref().or(l.value.as_ref()) {
            LoadRule::PerPod(q(v))
        } else if let Some(vs) = &l.pods {
            LoadRule::Explicit(vs.iter().map(|v| q(v)).collect())
        } else {
            LoadRule::Explicit(Vec::new())
        };
        let written = l
            .series
            .clone()
            .or_else(|| l.value.clone().map(|v| vec![v]));
        match written.filter(|_| l.as_written) {
            Some(w) => self.written.insert(l.metric.clone(), w),
            None => self.written.remove(&l.metric),
        };
        match kind {
            MetricKind::Resource | MetricKind::ContainerResource(_) => {
                let container = l.container.clone().unwrap_or_else(|| match &kind {
                    MetricKind::ContainerResource(c) => c.clone(),
                    _ => self
                        .containers
                        .first()
                        .map(|c| c.name.clone())
                        .unwrap_or_default(),
                });
                self.resource_loads
                    .insert((l.metric.clone(), container), rule);
            }
            MetricKind::Pods => {
                self.custom_loads.insert(l.metric.clone(), rule);
            }
            MetricKind::Object => {
                let v = l.value.as_ref().or(l.total.as_ref()).or(l.per_pod.as_ref());
                self.object_values
                    .insert(l.metric.clone(), v.map(|v| q(v)).unwrap_or(0));
            }
            MetricKind::External => {
                let series = match (&l.series, l.value.as_ref().or(l.total.as_ref())) {
                    (Some(s), _) => s.iter().map(|v| q(v)).collect(),
                    (None, Some(v)) => vec![q(v)],
                    _ => Vec::new(),
                };
                self.external_series.insert(l.metric.clone(), series);
            }
        }
    }

    /// How client-go reports the API of a metric answering `404 page not found` (not registered).
    fn unregistered_error(&self, key: &str) -> String {
        let req = match self.kinds.get(key) {
            Some(MetricKind::External) => RequestFor {
                group: "external.metrics.k8s.io",
                resource: key,
                name: "",
            },
            _ => RequestFor {
                group: "metrics.k8s.io",
                resource: "pods",
                name: "",
            },
        };
        generic_response_message(404, "404 page not found", req)
    }

    /// Applies one timeline entry at `t`.
    pub fn apply(&mut self, e: &TimelineEntry, t: i64) {
        for l in e.load.iter().chain(&e.loads) {
            self.apply_load(l);
        }
        if let Some(c) = &e.pods {
            self.apply_pod_change(c, t);
            if !self.fixed_pods {
                self.replace_inactive(t);
            }
        }
        if let Some(m) = &e.metrics_missing {
            let names = self
                .pick(&m.ordinals, m.newest, false)
                .into_iter()
                .map(|i| self.pods[i].name.clone())
                .collect();
            self.missing.insert(m.metric.clone(), names);
        }
        for s in &e.stray_samples {
            self.stray
                .insert((s.metric.clone(), s.pod.clone()), q(&s.value));
        }
        if let Some(m) = &e.metric_error {
            let message = if m.unregistered {
                Some(self.unregistered_error(&m.metric))
            } else {
                m.message.clone()
            };
            match message {
                Some(msg) => self.metric_errors.insert(m.metric.clone(), msg),
                None => self.metric_errors.remove(&m.metric),
            };
        }
        if let Some(s) = &e.scale_api {
            self.get_scale_error = s.get_error.clone();
            self.update_scale_error = s.update_error.clone();
            self.update_failures_left = s.update_failures;
        }
        if let Some(r) = e.status_replicas {
            self.status_replicas = Some(r);
        }
        if let Some(r) = e.set_replicas {
            // The loader checked 0 ≤ setReplicas ≤ MAX_PODS.
            let _ = self.set_replicas(r.clamp(0, MAX_PODS), t);
        }
        if let Some(r) = &e.rollout {
            self.start_rollout(r);
        }
        if e.hpa_patch.is_some() {
            // The loader checked every patched manifest; keep the status the target wrote.
            let status = self.hpa.status.take();
            self.hpa_written =
                crate::case::apiserver::patch_manifest(&self.hpa_written, e.hpa_patch.as_ref());
            let mut hpa = self.hpa_written.clone();
            crate::case::apiserver::store_as_api_server(&mut hpa);
            hpa.status = status;
            self.hpa = hpa;
        }
    }

    /// Applies what the target did at `t`: a successful scale write and the status it wrote. A
    /// replica count the world cannot take changes nothing.
    pub fn apply_outcome(
        &mut self,
        scaled_to: Option<i32>,
        status: HorizontalPodAutoscalerStatus,
        t: i64,
    ) -> Result<(), WorldError> {
        if let Some(n) = scaled_to {
            self.set_replicas(n, t)?;
        }
        // A one-shot (or n-shot) UPDATE scale error is used up by each rescale that failed, as
        // the controller reports it (AbleToScale=False/FailedUpdateScale, upstream's condition;
        // the runner skips such a case on an implementation judged below profile `status`).
        let failed_rescale = status.conditions.iter().flatten().any(|c| {
            c.type_ == "AbleToScale"
                && c.status == "False"
                && c.reason.as_deref() == Some("FailedUpdateScale")
        });
        if failed_rescale
            && self.update_scale_error.is_some()
            && let Some(left) = self.update_failures_left.as_mut()
        {
            *left = left.saturating_sub(1);
            if *left == 0 {
                self.update_scale_error = None;
                self.update_failures_left = None;
            }
        }
        self.hpa.status = Some(status);
        Ok(())
    }

    fn rule_value(&self, rule: Option<&LoadRule>, idx: usize, serving: &[usize]) -> i64 {
        match rule {
            None => 0,
            Some(LoadRule::PerPod(v)) => *v,
            Some(LoadRule::Explicit(vs)) => vs.get(idx).copied().unwrap_or(0),
            Some(LoadRule::Total(total)) => match serving.iter().position(|i| *i == idx) {
                None => 0,
                Some(rank) => {
                    let n = serving.len() as i64;
                    total / n + i64::from((rank as i64) < total % n)
                }
            },
        }
    }

    fn container_usage(
        &self,
        resource: &str,
        container: &str,
        idx: usize,
        t: i64,
        serving: &[usize],
    ) -> i64 {
        let p = &self.pods[idx];
        if resource == "cpu"
            && let Some((usage, secs)) = self.hot_cpu
            && !p.initial
            && t < self.start_of(p) + secs
        {
            let first = self.containers.first().map(|c| c.name.as_str()) == Some(container);
            return if first { usage } else { 0 };
        }
        self.rule_value(
            self.resource_loads
                .get(&(resource.to_string(), container.to_string())),
            idx,
            serving,
        )
    }

    /// The time-derived part of how `p` looks at `t`.
    fn pod_at(&self, p: &SimPod, t: i64) -> PodAt {
        PodAt {
            phase: self.phase_at(p, t),
            ready: self.ready_at(p, t),
            start: self.start_of(p),
            no_ready_condition: p.no_ready_condition,
            deleted_at: p
                .deleted
                .then(|| p.terminating.map_or(t, |(since, _)| since)),
        }
    }

    /// How `p` looks at `t`: what its object is built from.
    fn look(&self, p: &SimPod, t: i64) -> PodLook {
        PodLook {
            name: p.name.clone(),
            requests: p.requests.clone(),
            at: self.pod_at(p, t),
        }
    }

    /// Whether `p` at `t` still looks as `l` (without building anything).
    fn looks_as(&self, p: &SimPod, t: i64, l: &PodLook) -> bool {
        l.name == p.name && l.requests == p.requests && l.at == self.pod_at(p, t)
    }

    fn pod_object(&self, p: &PodLook, labels: &BTreeMap<String, String>) -> Pod {
        let PodAt {
            phase,
            ready: (ready, since),
            start,
            no_ready_condition,
            deleted_at,
        } = p.at;
        let container = |c: &ContainerRequests, restart_policy: Option<String>| Container {
            name: c.name.clone(),
            restart_policy,
            resources: Some(ResourceRequirements {
                requests: Some(
                    c.requests
                        .iter()
                        .map(|(r, v)| (r.clone(), *v))
                        .chain(
                            p.requests
                                .get(&c.name)
                                .into_iter()
                                .flatten()
                                .map(|(r, v)| (r.clone(), *v)),
                        )
                        .collect::<BTreeMap<String, i64>>()
                        .into_iter()
                        .map(|(r, v)| (r, quantity(v)))
                        .collect(),
                ),
                ..ResourceRequirements::default()
            }),
            ..Container::default()
        };
        Pod {
            metadata: ObjectMeta {
                name: Some(p.name.clone()),
                namespace: self.hpa.metadata.namespace.clone(),
                labels: Some(labels.clone()),
                deletion_timestamp: deleted_at.map(|at| kube_time(instant(at))),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                containers: self.containers.iter().map(|c| container(c, None)).collect(),
                init_containers: (!self.sidecars.is_empty() || !self.init_containers.is_empty())
                    .then(|| {
                        self.init_containers
                            .iter()
                            .map(|c| container(c, None))
                            .chain(
                                self.sidecars
                                    .iter()
                                    .map(|c| container(c, Some("Always".into()))),
                            )
                            .collect()
                    }),
                resources: self.pod_requests.as_ref().map(|reqs| ResourceRequirements {
                    requests: Some(
                        reqs.iter()
                            .map(|(r, v)| (r.clone(), quantity(*v)))
                            .collect(),
                    ),
                    ..ResourceRequirements::default()
                }),
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                phase: Some(
                    match phase {
                        Phase::Pending => "Pending",
                        Phase::Running => "Running",
                        Phase::Succeeded => "Succeeded",
                        Phase::Failed => "Failed",
                    }
                    .into(),
                ),
                start_time: (phase != Phase::Pending).then(|| kube_time(instant(start))),
                conditions: (!no_ready_condition).then(|| {
                    vec![PodCondition {
                        type_: "Ready".into(),
                        status: if ready { "True" } else { "False" }.into(),
                        last_transition_time: Some(kube_time(instant(since))),
                        ..PodCondition::default()
                    }]
                }),
                ..PodStatus::default()
            }),
        }
    }

    /// The pod template of the scale target: the labels its pods carry and their spec (what a
    /// real cluster's workload is created from).
    pub fn pod_template(&self) -> (BTreeMap<String, String>, PodSpec) {
        let labels = self.pod_labels();
        let probe = SimPod {
            name: String::new(),
            created: 0,
            initial: true,
            phase: None,
            ready: None,
            no_ready_condition: false,
            deleted: false,
            requests: BTreeMap::new(),
            revision: self.revision,
            terminating: None,
        };
        let spec = self
            .pod_object(&self.look(&probe, 0), &labels)
            .spec
            .unwrap_or_default();
        (labels, spec)
    }

    /// Labels that match the target's selector (for its pods): the first value of `in`/`=`, an
    /// empty value for `key`, one above a `key>n` bound and one below a `key<n` bound; `!=`,
    /// `notin` and `!key` hold when the label is absent.
    fn pod_labels(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::new();
        if let Ok(sel) = hpa_reference::selector::parse(&self.selector) {
            for r in sel.0 {
                match r {
                    Requirement::In(k, vs) => {
                        labels.insert(k, vs.first().cloned().unwrap_or_default());
                    }
                    Requirement::Exists(k) => {
                        labels.insert(k, String::new());
                    }
                    Requirement::GreaterThan(k, bound) => {
                        if let Some(v) = bound.parse::<i64>().ok().and_then(|b| b.checked_add(1)) {
                            labels.insert(k, v.to_string());
                        }
                    }
                    Requirement::LessThan(k, bound) => {
                        if let Some(v) = bound.parse::<i64>().ok().and_then(|b| b.checked_sub(1)) {
                            labels.insert(k, v.to_string());
                        }
                    }
                    Requirement::NotIn(..) | Requirement::DoesNotExist(_) => {}
                }
            }
        }
        labels
    }

    /// What the metrics APIs answer at `t`.
    fn metrics_apis(&self, t: i64) -> MetricsApis {
        let now = kube_time(instant(t));
        let serving: Vec<usize> = (0..self.pods.len())
            .filter(|i| self.serving(&self.pods[*i], t))
            .collect();
        let missing =
            |key: &str, p: &SimPod| self.missing.get(key).is_some_and(|m| m.contains(&p.name));
        let running = |p: &SimPod| self.phase_at(p, t) == Phase::Running;
        let mut apis = MetricsApis::default();

        // Resource metrics: every resource some Resource/ContainerResource metric asks for.
        let resources: BTreeSet<&String> = self
            .kinds
            .iter()
            .filter(|(_, k)| matches!(k, MetricKind::Resource | MetricKind::ContainerResource(_)))
            .map(|(key, _)| key)
            .collect();
        if let Some(e) = resources.iter().find_map(|r| self.metric_errors.get(*r)) {
            apis.resource.error = Some(e.clone());
        } else if !resources.is_empty() {
            let window = format!("{}s", self.window.as_secs());
            for (i, p) in self.pods.iter().enumerate().filter(|(_, p)| running(p)) {
                let present: Vec<&String> = resources
                    .iter()
                    .copied()
                    .filter(|r| !missing(r, p))
                    .collect();
                if present.is_empty() {
                    continue;
                }
                apis.resource.items.push(PodMetrics {
                    metadata: ObjectMeta {
                        name: Some(p.name.clone()),
                        namespace: self.hpa.metadata.namespace.clone(),
                        ..ObjectMeta::default()
                    },
                    timestamp: now.clone(),
                    window: window.clone(),
                    // metrics-server reports every running container, sidecars (restartable
                    // init containers) included; upstream sums them all for a Resource metric.
                    containers: self
                        .containers
                        .iter()
                        .chain(&self.sidecars)
                        .map(|c| ContainerMetrics {
                            name: c.name.clone(),
                            usage: present
                                .iter()
                                .map(|r| {
                                    (
                                        (*r).clone(),
                                        quantity(self.container_usage(r, &c.name, i, t, &serving)),
                                    )
                                })
                                .collect(),
                        })
                        .collect(),
                });
            }
            // Samples for pods outside the pod list, one PodMetrics per such pod.
            let mut stray: BTreeMap<&str, BTreeMap<String, BTreeMap<String, Quantity>>> =
                BTreeMap::new();
            for ((metric, pod), v) in &self.stray {
                let container = match self.kinds.get(metric) {
                    Some(MetricKind::Resource) => self.containers.first().map(|c| c.name.clone()),
                    Some(MetricKind::ContainerResource(c)) => Some(c.clone()),
                    _ => None,
                };
                if let Some(container) = container {
                    stray
                        .entry(pod.as_str())
                        .or_default()
                        .entry(container)
                        .or_default()
                        .insert(metric.clone(), quantity(*v));
                }
            }
            for (pod, containers) in stray {
                apis.resource.items.push(PodMetrics {
                    metadata: ObjectMeta {
                        name: Some(pod.to_string()),
                        namespace: self.hpa.metadata.namespace.clone(),
                        ..ObjectMeta::default()
                    },
                    timestamp: now.clone(),
                    window: window.clone(),
                    containers: containers
                        .into_iter()
                        .map(|(name, usage)| ContainerMetrics { name, usage })
                        .collect(),
                });
            }
        }

        for (key, kind) in &self.kinds {
            let error = self.metric_errors.get(key).cloned();
            match kind {
                MetricKind::Resource | MetricKind::ContainerResource(_) => {}
                MetricKind::Pods => {
                    let rule = self.custom_loads.get(key);
                    let items = if error.is_some() {
                        Vec::new()
                    } else {
                        self.pods
                            .iter()
                            .enumerate()
                            .filter(|(_, p)| running(p) && !missing(key, p))
                            .map(|(i, p)| PodValue {
                                pod: p.name.clone(),
                                value: quantity(self.rule_value(rule, i, &serving)),
                                timestamp: now.clone(),
                                window_seconds: Some(self.window.as_secs() as i64),
                            })
                            .chain(self.stray.iter().filter(|((m, _), _)| m == key).map(
                                |((_, pod), v)| PodValue {
                                    pod: pod.clone(),
                                    value: quantity(*v),
                                    timestamp: now.clone(),
                                    window_seconds: Some(self.window.as_secs() as i64),
                                },
                            ))
                            .collect()
                    };
                    apis.pods.insert(key.clone(), ListAnswer { items, error });
                }
                MetricKind::Object => {
                    let written = self.written.get(key).and_then(|w| w.first());
                    let value = self.object_values.get(key).map(|v| SampleValue {
                        value: written.map_or_else(|| quantity(*v), |w| Quantity(w.clone())),
                        timestamp: now.clone(),
                    });
                    if error.is_some() || value.is_some() {
                        apis.object.insert(
                            key.clone(),
                            ObjectAnswer {
                                value: value.filter(|_| error.is_none()),
                                error,
                            },
                        );
                    }
                }
                MetricKind::External => {
                    let items = if error.is_some() {
                        Vec::new()
                    } else {
                        match self.written.get(key) {
                            Some(w) => w
                                .iter()
                                .map(|v| SampleValue {
                                    value: Quantity(v.clone()),
                                    timestamp: now.clone(),
                                })
                                .collect(),
                            None => self
                                .external_series
                                .get(key)
                                .into_iter()
                                .flatten()
                                .map(|v| SampleValue {
                                    value: quantity(*v),
                                    timestamp: now.clone(),
                                })
                                .collect(),
                        }
                    };
                    apis.external
                        .insert(key.clone(), ListAnswer { items, error });
                }
            }
        }
        apis
    }

    /// The pod objects at `t`: the list last handed out while every pod looks as it did then.
    pub fn pods(&mut self, t: i64) -> Arc<Vec<Pod>> {
        if let Some((looks, pods)) = &self.pods_built
            && looks.len() == self.pods.len()
            && self
                .pods
                .iter()
                .zip(looks)
                .all(|(p, l)| self.looks_as(p, t, l))
        {
            return Arc::clone(pods);
        }
        let labels = self.pod_labels();
        let looks: Vec<PodLook> = self.pods.iter().map(|p| self.look(p, t)).collect();
        let mut pods: Vec<Pod> = looks.iter().map(|l| self.pod_object(l, &labels)).collect();
        if self.newest_first {
            pods.reverse();
        }
        let pods = Arc::new(pods);
        self.pods_built = Some((looks, Arc::clone(&pods)));
        pods
    }

    /// What the target sees at `t`: the objects and API answers a controller would read.
    pub fn snapshot(&mut self, t: i64) -> Snapshot {
        let live = self.pods.iter().filter(|p| self.active(p, t)).count() as i32;
        let scale = match &self.get_scale_error {
            Some(e) => Err(e.clone()),
            None => Ok(Scale {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    namespace: self.hpa.metadata.namespace.clone(),
                    ..ObjectMeta::default()
                },
                spec: Some(ScaleSpec {
                    replicas: Some(self.replicas),
                }),
                status: Some(ScaleStatus {
                    replicas: self.status_replicas.unwrap_or(live),
                    selector: Some(self.selector.clone()).filter(|s| !s.is_empty()),
                }),
            }),
        };
        let pods = self.pods(t);
        let other_hpas_selecting_pods = self.other_hpas_selecting(&pods);
        Snapshot {
            t,
            now: instant(t),
            hpa: self.hpa.clone(),
            scale,
            scale_update_error: self.update_scale_error.clone(),
            pods,
            metrics: self.metrics_apis(t),
            other_hpas_selecting_pods,
        }
    }

    /// The other HPAs whose selectors match any of `pods` (upstream's selector tracker: every
    /// HPA whose selector selects a pod the HPA's own selector lists).
    fn other_hpas_selecting(&self, pods: &[Pod]) -> Vec<String> {
        self.other_hpas
            .iter()
            .filter(|(_, selector)| {
                pods.iter().any(|p| {
                    let none = BTreeMap::new();
                    selector.matches(p.metadata.labels.as_ref().unwrap_or(&none))
                })
            })
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// Pods at `t`: (total, ready and running).
    pub fn pod_counts(&self, t: i64) -> (usize, usize) {
        let total = self.pods.iter().filter(|p| !p.deleted).count();
        let ready = self.pods.iter().filter(|p| self.serving(p, t)).count();
        (total, ready)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ops::ControlFlow;

    /// `otherHpas` are matched against the pods' labels at every tick: a broader selector and
    /// an empty one select them, a disjoint one does not, and none does once no pod is left.
    #[test]
    fn other_hpas_select_by_the_pods_labels_at_each_tick() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../cases/controller/selector-overlap-with-a-broader-selector.yaml"),
        )
        .expect("case");
        let text = text.replace(
            "- {name: web-backend, selector: 'app=web,tier=backend'}\n",
            "- {name: web-backend, selector: 'app=web,tier=backend'}\n- {name: any, selector: ''}\n",
        );
        let case =
            crate::case::load_case_text(std::path::Path::new("other.yaml"), &text).expect("case");
        let mut world = World::new(&case);
        assert_eq!(
            world.snapshot(0).other_hpas_selecting_pods,
            ["default/web-all", "default/any"]
        );
        world.set_replicas(0, 15).expect("scale to zero");
        world.advance(15);
        assert!(world.snapshot(15).pods.is_empty());
        assert_eq!(
            world.snapshot(15).other_hpas_selecting_pods,
            Vec::<String>::new()
        );
    }

    /// A pod list handed out again is the list a fresh build gives: over every case of the
    /// corpus (its timelines delete, fail, re-request and roll pods), scaled up and down on the
    /// way so pods come and go.
    #[test]
    fn pods_handed_out_again_are_the_pods_built_afresh() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cases");
        let (files, errors) = crate::case::discover(&[root]);
        assert!(errors.is_empty(), "{errors:?}");
        let (mut reused, mut rebuilt) = (0, 0);
        for file in &files {
            // A case the loader rejects has no world.
            let Ok(case) = crate::case::load_case(file) else {
                continue;
            };
            let mut last: Option<Arc<Vec<Pod>>> = None;
            let _ = crate::run::drive(&case, |world, t| {
                let pods = world.snapshot(t).pods;
                let mut fresh = world.clone();
                fresh.pods_built = None;
                assert_eq!(*pods, *fresh.snapshot(t).pods, "{}: t={t}", file.display());
                if last.as_ref().is_some_and(|l| Arc::ptr_eq(l, &pods)) {
                    reused += 1;
                } else {
                    rebuilt += 1;
                }
                last = Some(pods);
                let r = world.replicas();
                let to = match (t / 15) % 4 {
                    1 => Some(r + 1),
                    3 => Some((r - 1).max(0)),
                    _ => None,
                };
                let _ = world.apply_outcome(to, HorizontalPodAutoscalerStatus::default(), t);
                ControlFlow::<()>::Continue(())
            });
        }
        assert!(files.len() > 300, "the corpus: {} files", files.len());
        assert!(
            reused > 0 && rebuilt > 0,
            "reused {reused}, rebuilt {rebuilt}"
        );
    }
}
