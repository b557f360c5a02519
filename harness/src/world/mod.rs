//! The simulated cluster of one case: the scale target, its pods (created when the scale grows,
//! with start and readiness per the case's start-up model; removed when it shrinks as a
//! ReplicaSet picks them: pending, then not ready, then newest), the load per metric, injected
//! API errors, and the HPA with the status the target last wrote.
//!
//! The workload adds or removes pods only when its replica count changes; a pod a timeline entry
//! marks failed or deleted is not replaced by itself (so upstream's static pod lists can be set up).
//!
//! [`pods`] holds the pods' lifecycle (creation, start, readiness, removal, rollouts), [`load`]
//! the load model (what each metric reads per pod), [`answers`] what a target sees: the Pod objects,
//! the scale and the metrics APIs' answers of a tick ([`Snapshot`]).
//!
//! The world is bounded: it holds at most [`MAX_PODS`] pods. The loader refuses cases that ask
//! for more; a target that scales beyond it gets a [`WorldError`] (its case fails), never an
//! allocation per replica without bound.

mod answers;
mod load;
mod pods;

use answers::PodLook;
pub use answers::Snapshot;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use hpa_reference::quantity::milli_value;
use hpa_reference::{ContainerRequests, Time};
use k8s_openapi::api::autoscaling::v2::{HorizontalPodAutoscaler, HorizontalPodAutoscalerStatus};
use k8s_openapi::api::core::v1::Pod;

use crate::case::Case;
use crate::case::bounds::MAX_PODS;
use crate::case::model::{IntOrPercent, Phase, TimelineEntry};

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

impl SimPod {
    /// A pod as created: no phase, readiness or requests of its own set by the timeline.
    fn new(name: String, created: i64, initial: bool, revision: u32) -> SimPod {
        SimPod {
            name,
            created,
            initial,
            phase: None,
            ready: None,
            no_ready_condition: false,
            deleted: false,
            requests: BTreeMap::new(),
            revision,
            terminating: None,
        }
    }
}

/// A rolling update in progress: the Deployment's strategy (docs/cases.md, "The world model").
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
    /// Failed rescales left before `update_scale_error` clears (`None`: it stays); with
    /// `update_error_reason`, failing UPDATE attempts left.
    update_failures_left: Option<u32>,
    /// `scaleApi.updateErrorReason`.
    update_error_reason: Option<String>,
    /// UPDATE attempts a reconcile makes on this reason before it gives up: 5 when the judged
    /// release retries conflicts (1.34+), else 1 ([`World::keeping_generation`]'s sibling).
    attempts_per_rescale: u32,
    hpa: HorizontalPodAutoscaler,
    /// The HPA as the case wrote it (patches apply to this, then defaults).
    hpa_written: HorizontalPodAutoscaler,
    /// The API server keeps `metadata.generation` (1.37's `HPAGeneration`): 1 at creation, one
    /// more at each change of the spec ([`World::keeping_generation`]).
    generation: bool,
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

fn q(s: &str) -> i64 {
    // Quantities were checked when the case was loaded; the world keeps what upstream's
    // `MilliValue()` makes of them (`"8Ei"` is -1000), and writes objects from that.
    milli_value(s).unwrap_or(0)
}

impl World {
    /// The world as the judged release's API server and controller make it:
    /// - its API server keeps the HPA's `metadata.generation`, as 1.37's does with
    ///   `HPAGeneration` on (1 at creation, one more at each change of the spec); before 1.37
    ///   (or with the gate off) the generation stays unset;
    /// - a typed conflict on UPDATE scale (`scaleApi.updateErrorReason: Conflict`) is retried
    ///   within the reconcile from 1.34 on (5 attempts, `retry.DefaultRetry`), so a failed
    ///   rescale used up that many failing attempts; before, one.
    pub fn for_release(mut self, settings: &hpa_reference::Settings) -> World {
        self.generation = settings.gates.hpa_generation;
        if self.generation {
            self.hpa.metadata.generation = Some(1);
        }
        self.attempts_per_rescale = if settings.version.changes().scale_update_retries_on_conflict {
            hpa_reference::retry::CONFLICT_RETRY_ATTEMPTS
        } else {
            1
        };
        self
    }

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
            update_error_reason: None,
            attempts_per_rescale: 1,
            hpa: case.hpa.clone(),
            hpa_written: case.file.hpa.clone(),
            generation: false,
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

    /// The target's `spec.replicas`.
    pub fn replicas(&self) -> i32 {
        self.replicas
    }

    /// The pods the metrics APIs answer for although no such pod exists (`straySamples`).
    pub fn stray_pods(&self) -> BTreeSet<String> {
        self.stray.keys().map(|(_, pod)| pod.clone()).collect()
    }

    /// The HPA as stored.
    pub fn hpa(&self) -> &HorizontalPodAutoscaler {
        &self.hpa
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
            self.update_error_reason = s.update_error_reason.clone();
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
            hpa.metadata.generation = self.hpa.metadata.generation;
            if self.generation && hpa.spec != self.hpa.spec {
                hpa.metadata.generation = Some(hpa.metadata.generation.unwrap_or(0) + 1);
            }
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
        // With a reason, `updateFailures` counts UPDATE attempts: a rescale that went through
        // used up every failing one; a failed one, as many as a reconcile makes.
        let used = match (&self.update_error_reason, failed_rescale, scaled_to) {
            (Some(_), _, Some(_)) => u32::MAX,
            (Some(r), true, None) if r == "Conflict" => self.attempts_per_rescale,
            (Some(_), true, None) => 1,
            (None, true, _) => 1,
            _ => 0,
        };
        if used > 0
            && self.update_scale_error.is_some()
            && let Some(left) = self.update_failures_left.as_mut()
        {
            *left = left.saturating_sub(used);
            if *left == 0 {
                self.update_scale_error = None;
                self.update_failures_left = None;
                self.update_error_reason = None;
            }
        }
        self.hpa.status = Some(status);
        Ok(())
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

    /// A rollout's pods carry the new revision, listed in the order of the pod list: how the
    /// cluster lane pairs them with a real Deployment's (`cluster::rollout`).
    #[test]
    fn pod_revisions_follow_the_pod_list_through_a_rollout() {
        let case = crate::case::load_case(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../cases/docs/docs-rollout-at-steady-load-keeps-the-count.yaml"),
        )
        .expect("case");
        let mut world = World::new(&case);
        assert_eq!(world.revision(), 0);
        assert_eq!(world.pod_revisions(), [0, 0, 0, 0]);
        world.apply(&case.file.timeline[0], 0);
        world.advance(0);
        assert_eq!(world.revision(), 1);
        let pods = world.snapshot(0).pods;
        let listed: Vec<(&str, bool, u32)> = pods
            .iter()
            .zip(world.pod_revisions())
            .map(|(p, r)| {
                (
                    p.metadata.name.as_deref().unwrap_or_default(),
                    p.metadata.deletion_timestamp.is_some(),
                    r,
                )
            })
            .collect();
        // maxSurge 1 and maxUnavailable 1 of 4: one old pod terminates, two new ones start.
        assert_eq!(
            listed,
            [
                ("web-0000", false, 0),
                ("web-0001", false, 0),
                ("web-0002", false, 0),
                ("web-0003", true, 0),
                ("web-0004", false, 1),
                ("web-0005", false, 1),
            ]
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
            let _ = crate::run::drive(&case, &hpa_reference::Settings::default(), |world, t| {
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
