//! One case in real time on a cluster: the case's world (the same [`World`] the virtual-time
//! runner uses: pods' start and readiness, how a load is spread, which pods a shrink removes) is
//! advanced on the wall clock and mirrored into the cluster — pod status on the simulated node,
//! metrics through the stub, manual scaling, HPA patches — while the controller under test runs
//! on its own schedule. What it writes (the scale, the HPA status, events) is sampled.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use hpa_metrics_stub::control::{Api as StubApi, ControlDocument, FaultMode, Faults};
use hpa_reference::gotext::parse_go_duration;
use hpa_reference::metrics_api::MetricsApis;
use hpa_reference::time::{core_time, kube_time};
use hpa_reference::{Event, EventType, Time};
use k8s_openapi::api::autoscaling::v2::{HorizontalPodAutoscaler, HorizontalPodAutoscalerStatus};
use k8s_openapi::api::core::v1::{Event as KubeEvent, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time as KubeTime;
use kube::Client;
use kube::api::{Api, ListParams};
use serde_json::Value;

use super::kube as k;
use super::plan::{ClusterSettings, Plan, WorkloadKind, held_target, scale_behavior};
use super::rollout;
use crate::case::Case;
use crate::run::trace::TickTrace;
use crate::world::{EPOCH_SECS, World};

const MICROS: i64 = 1_000_000;

/// How long the cluster may fail every request of the case's loop before the case errors: long
/// enough for kube-apiserver or etcd to restart. An etcd restart through its static pod manifest
/// took 18–117 s on kind (the kubelet starting the new container 3–36 s after the manifest is
/// back, the API server's etcd client reconnecting 7–24 s after that), so twice the longest seen.
const FAILING_FOR: Duration = Duration::from_secs(240);

/// Case time on the wall clock: case t = 0 is the instant the HPA was created, and one cluster
/// second stands for `scale` case seconds.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    t0: i64,
    scale: i64,
}

fn wall_micros() -> i64 {
    k8s_openapi::jiff::Timestamp::now().as_microsecond()
}

impl Clock {
    /// A clock whose t = 0 is `t0` (microseconds since the Unix epoch).
    pub fn new(t0: i64, scale: u32) -> Self {
        Clock {
            t0,
            scale: i64::from(scale.max(1)),
        }
    }

    /// Case seconds at a real instant.
    pub fn case_secs(&self, real: Time) -> f64 {
        (real.as_micros() - self.t0) as f64 * self.scale as f64 / MICROS as f64
    }

    /// Case seconds now.
    pub fn now(&self) -> f64 {
        self.case_secs(Time::from_micros(wall_micros()))
    }

    /// The real instant of a world instant (the world counts from 2000-01-01T00:00:00Z).
    pub fn real(&self, world: Time) -> Time {
        let v = world.as_micros() - EPOCH_SECS * MICROS;
        Time::from_micros(self.t0 + v.div_euclid(self.scale))
    }

    /// The world instant of a real instant.
    pub fn world(&self, real: Time) -> Time {
        Time::from_micros(EPOCH_SECS * MICROS + (real.as_micros() - self.t0) * self.scale)
    }

    fn real_kube(&self, t: &KubeTime) -> KubeTime {
        kube_time(self.real(core_time(t)))
    }

    fn world_kube(&self, t: &KubeTime) -> KubeTime {
        kube_time(self.world(core_time(t)))
    }
}

/// What the controller had written at one instant.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Case seconds.
    pub t: f64,
    /// The scale target's `spec.replicas`.
    pub replicas: i32,
    /// The HPA status, its times in case time.
    pub status: HorizontalPodAutoscalerStatus,
    /// Pods: total and ready (as the world has them).
    pub pods: (usize, usize),
}

/// An event the controller recorded, at the case second it was seen.
#[derive(Debug, Clone)]
pub struct Occurrence {
    /// Case seconds.
    pub t: f64,
    /// The event.
    pub event: Event,
}

/// Everything observed of one case.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// The replicas the case starts with.
    pub initial: i32,
    /// Samples, in time order.
    pub samples: Vec<Sample>,
    /// Events, in the order seen.
    pub events: Vec<Occurrence>,
}

/// Where and how to run a case.
pub struct Lane<'a> {
    /// The cluster.
    pub client: &'a Client,
    /// The metrics stub's control API.
    pub stub: &'a super::stub::StubControl,
    /// The namespace made for the case.
    pub namespace: String,
    /// The cluster's controller settings.
    pub settings: &'a ClusterSettings,
    /// Case seconds to keep sampling after the case's duration, at the most.
    pub tail: f64,
    /// What lets the lane stop before its tail ends, when given.
    pub settle: Option<Settle<'a>>,
}

/// What lets the lane stop watching a case before its tail ends, once watching on can no longer
/// add a sample inside a window the case states ([`super::check::settled`]): each HPA's virtual
/// trace run on through the tail (the case's own first, then those alongside, in the order
/// [`run`] returns what it observed) and the timing tolerance.
pub struct Settle<'a> {
    /// The reference core's trace of each HPA.
    pub traces: Vec<&'a [TickTrace]>,
    /// ±case seconds a decision may come from when it is due.
    pub tolerance: f64,
}

impl Settle<'_> {
    /// Whether every HPA of the case has been watched long enough at case second `now`.
    fn settled(&self, members: &[Member<'_>], time_scale: u32, now: f64) -> bool {
        members.len() == self.traces.len()
            && members.iter().zip(&self.traces).all(|(m, trace)| {
                super::check::settled(m.case, &m.observed, trace, self.tolerance, time_scale, now)
            })
    }
}

/// The world's pod status with times moved to the cluster's clock, as JSON for a status patch.
fn real_status(pod: &Pod, clock: &Clock) -> Value {
    let mut status = pod.status.clone().unwrap_or_default();
    status.start_time = status.start_time.as_ref().map(|t| clock.real_kube(t));
    for c in status.conditions.iter_mut().flatten() {
        c.last_transition_time = c.last_transition_time.as_ref().map(|t| clock.real_kube(t));
    }
    serde_json::to_value(&status).unwrap_or(Value::Null)
}

fn scaled_window(window: &str, scale: i64) -> String {
    match parse_go_duration(window) {
        Some(d) => {
            let ms = d.as_millis() as i64 / scale;
            if ms % 1000 == 0 {
                format!("{}s", ms / 1000)
            } else {
                format!("{ms}ms")
            }
        }
        None => window.to_string(),
    }
}

/// The world's metrics answers for the cluster: pod names mapped to the real pods, times moved
/// `ahead` case seconds (see [`stamp_of`]) and to the cluster's clock, windows divided by the
/// time scale.
fn real_metrics(
    apis: &MetricsApis,
    names: &BTreeMap<String, String>,
    clock: &Clock,
    ahead: i64,
) -> MetricsApis {
    let moved = Clock {
        t0: clock.t0 + ahead * MICROS / clock.scale,
        scale: clock.scale,
    };
    let clock = &moved;
    let mut out = apis.clone();
    out.resource.items = apis
        .resource
        .items
        .iter()
        .filter_map(|m| {
            let real = names.get(m.metadata.name.as_deref()?)?;
            let mut m = m.clone();
            m.metadata.name = Some(real.clone());
            m.metadata.namespace = None;
            m.timestamp = clock.real_kube(&m.timestamp);
            m.window = scaled_window(&m.window, clock.scale);
            Some(m)
        })
        .collect();
    for (key, answer) in &apis.pods {
        let items = answer
            .items
            .iter()
            .filter_map(|v| {
                let real = names.get(&v.pod)?;
                let mut v = v.clone();
                v.pod = real.clone();
                v.timestamp = clock.real_kube(&v.timestamp);
                v.window_seconds = v.window_seconds.map(|w| w / clock.scale);
                Some(v)
            })
            .collect();
        if let Some(a) = out.pods.get_mut(key) {
            a.items = items;
        }
    }
    for a in out.object.values_mut() {
        if let Some(v) = a.value.as_mut() {
            v.timestamp = clock.real_kube(&v.timestamp);
        }
    }
    for a in out.external.values_mut() {
        for v in &mut a.items {
            v.timestamp = clock.real_kube(&v.timestamp);
        }
    }
    out
}

/// The case second the metrics served at case time `now` are stamped with: the reconcile they
/// are for — the sync-period tick nearest `now`, the one the timeline's entries are applied for
/// half a period early — as the virtual-time runner stamps a tick's samples with the tick. A
/// sample's age against a pod's Ready transition (the CPU readiness rules) is then the virtual
/// run's, not the lane's cycle's: a floor of the wall clock would stamp the reconcile at 30's
/// sample 27.5–29.9, and a pod Ready at 0 with a 30 s window would stay unready for it.
fn stamp_of(now: f64, period: f64) -> i64 {
    if period <= 0.0 {
        return now.floor() as i64;
    }
    ((now / period).round() * period).floor() as i64
}

/// A status the case seeds, with its times (world instants) moved to the cluster's clock.
fn real_status_of_hpa(
    status: &HorizontalPodAutoscalerStatus,
    clock: &Clock,
) -> HorizontalPodAutoscalerStatus {
    let mut s = status.clone();
    s.last_scale_time = s.last_scale_time.as_ref().map(|t| clock.real_kube(t));
    for c in s.conditions.iter_mut().flatten() {
        c.last_transition_time = c.last_transition_time.as_ref().map(|t| clock.real_kube(t));
    }
    s
}

/// The HPA status with its times in case time.
fn case_status(
    status: &HorizontalPodAutoscalerStatus,
    clock: &Clock,
) -> HorizontalPodAutoscalerStatus {
    let mut s = status.clone();
    // `currentReplicas` is a plain int32 with `omitempty` in autoscaling/v2: absent on the wire
    // means 0.
    s.current_replicas = Some(s.current_replicas.unwrap_or(0));
    s.last_scale_time = s.last_scale_time.as_ref().map(|t| clock.world_kube(t));
    for c in s.conditions.iter_mut().flatten() {
        c.last_transition_time = c.last_transition_time.as_ref().map(|t| clock.world_kube(t));
    }
    s
}

fn creation(p: &Pod) -> (i64, String) {
    (
        p.metadata
            .creation_timestamp
            .as_ref()
            .map_or(0, |t| t.0.as_microsecond()),
        p.metadata.name.clone().unwrap_or_default(),
    )
}

/// The pods of the case, oldest first: the live ones and those the lane deleted on the timeline's
/// cue (`kept`, listed while they terminate, as the case's world lists them); any other
/// terminating pod (a workload's scale-down) is removed at once — unless the workload is
/// `rolling` out, where [`mirror_rollout_pods`] keeps as many as the world lists.
async fn live_pods(
    lane: &Lane<'_>,
    selector: &str,
    kept: &BTreeSet<String>,
    rolling: bool,
) -> Result<Vec<Pod>, String> {
    let api: Api<Pod> = Api::namespaced(lane.client.clone(), &lane.namespace);
    let list = api
        .list(&ListParams::default().labels(selector))
        .await
        .map_err(|e| format!("listing pods: {e}"))?;
    let mut live = Vec::new();
    for p in list.items {
        // During a rollout the pairing decides which terminating pods stay (`rollout`).
        let keep = rolling || p.metadata.name.as_ref().is_some_and(|n| kept.contains(n));
        if p.metadata.deletion_timestamp.is_some() && !keep {
            if let Some(n) = &p.metadata.name {
                k::force_delete_pod(lane.client, &lane.namespace, n).await;
            }
        } else {
            live.push(p);
        }
    }
    live.sort_by_key(creation);
    Ok(live)
}

/// The containers whose requests differ between the world's pod and the real one, as a
/// strategic-merge list for [`k::resize_pod`] (empty: nothing to resize). Quantities compare by
/// value (the API server writes `1000m` as `1`).
fn resize_of(world: &Pod, real: &Pod) -> Vec<Value> {
    let requests = |p: &Pod, name: &str| -> BTreeMap<String, Option<i64>> {
        p.spec
            .iter()
            .flat_map(|s| &s.containers)
            .filter(|c| c.name == name)
            .flat_map(|c| c.resources.iter().flat_map(|r| r.requests.iter().flatten()))
            .map(|(k, q)| (k.clone(), hpa_reference::quantity::milli_value(&q.0).ok()))
            .collect()
    };
    world
        .spec
        .iter()
        .flat_map(|s| &s.containers)
        .filter(|c| requests(world, &c.name) != requests(real, &c.name))
        .map(|c| {
            let want = c
                .resources
                .as_ref()
                .and_then(|r| r.requests.clone())
                .unwrap_or_default();
            serde_json::json!({"name": c.name, "resources": {"requests": want}})
        })
        .collect()
}

/// Mirrors the world's pods onto the real ones (both oldest first) and returns world name → real
/// name: a status is written when it changed, a pod the world gave its own requests is resized in
/// place, and a pod the world deleted is deleted gracefully and kept (`kept`) while it
/// terminates, as the world lists it.
async fn mirror_pods(
    lane: &Lane<'_>,
    world_pods: &[Pod],
    real: &[Pod],
    clock: &Clock,
    written: &mut BTreeMap<String, Value>,
    kept: &mut BTreeSet<String>,
) -> Result<BTreeMap<String, String>, String> {
    let mut names = BTreeMap::new();
    for (w, r) in world_pods.iter().zip(real) {
        let (Some(wn), Some(rn)) = (w.metadata.name.clone(), r.metadata.name.clone()) else {
            continue;
        };
        if w.metadata.deletion_timestamp.is_some() && r.metadata.deletion_timestamp.is_none() {
            k::delete_pod_gracefully(lane.client, &lane.namespace, &rn).await?;
            kept.insert(rn.clone());
        }
        paint(lane, w, r, &rn, clock, written).await?;
        names.insert(wn, rn);
    }
    Ok(names)
}

/// Writes the world's pod `w` on the real pod `r` (named `rn`): its requests by an in-place
/// resize where they differ, its status where it changed since the last write (`written`).
async fn paint(
    lane: &Lane<'_>,
    w: &Pod,
    r: &Pod,
    rn: &str,
    clock: &Clock,
    written: &mut BTreeMap<String, Value>,
) -> Result<(), String> {
    let resize = resize_of(w, r);
    if !resize.is_empty() {
        k::resize_pod(lane.client, &lane.namespace, rn, &Value::Array(resize)).await?;
    }
    let status = real_status(w, clock);
    if written.get(rn) != Some(&status) {
        k::patch_pod_status(lane.client, &lane.namespace, rn, &status).await?;
        written.insert(rn.to_string(), status);
    }
    Ok(())
}

/// [`mirror_pods`] for a workload rolling out: the real pods are the cluster's Deployment's, old
/// and new ReplicaSets' alike, paired with the world's by [`rollout::pair`] (`revisions`: each
/// world pod's template revision); the real pods terminating beyond those the world lists are
/// removed. The lane deletes nothing on the world's cue here: the Deployment's controller does.
async fn mirror_rollout_pods(
    lane: &Lane<'_>,
    world_pods: &[Pod],
    revisions: &[u32],
    selector: &str,
    real: &[Pod],
    clock: &Clock,
    written: &mut BTreeMap<String, Value>,
) -> Result<BTreeMap<String, String>, String> {
    let sets = k::replica_set_revisions(lane.client, &lane.namespace, selector).await?;
    let world_slots = rollout::world_slots(world_pods, revisions);
    let real_slots: Vec<rollout::Slot> = real.iter().map(|p| rollout::slot_of(p, &sets)).collect();
    let pairing = rollout::pair(&world_slots, &real_slots);
    for i in pairing.surplus {
        if let Some(n) = &real[i].metadata.name {
            k::force_delete_pod(lane.client, &lane.namespace, n).await;
        }
    }
    let mut names = BTreeMap::new();
    for (wi, ri) in pairing.pairs {
        let (w, r) = (&world_pods[wi], &real[ri]);
        let (Some(wn), Some(rn)) = (w.metadata.name.clone(), r.metadata.name.clone()) else {
            continue;
        };
        paint(lane, w, r, &rn, clock, written).await?;
        names.insert(wn, rn);
    }
    Ok(names)
}

/// The metrics API that serves a metric of the case.
fn api_of(case: &Case, key: &str) -> Option<StubApi> {
    let spec = case
        .hpa
        .spec
        .metrics
        .iter()
        .flatten()
        .find(|m| crate::case::load::metric_key(m) == key)?;
    Some(match spec.type_.as_str() {
        "Resource" | "ContainerResource" => StubApi::Resource,
        "External" => StubApi::External,
        _ => StubApi::Custom,
    })
}

/// Notes a timeline entry's metrics API answered as unregistered (or registered again) in `set`.
fn note(case: &Case, e: &crate::case::model::TimelineEntry, set: &mut BTreeSet<StubApi>) {
    if let Some(m) = &e.metric_error
        && let Some(api) = api_of(case, &m.metric)
    {
        if m.unregistered {
            set.insert(api);
        } else {
            set.remove(&api);
        }
    }
}

/// The stub's document: the metrics, the namespace's pods (the real ones, and the pods only the
/// metrics know of, `stray`, with their labels), the APIs to answer as unregistered and the
/// members' scale update errors.
fn stub_doc(
    apis: &MetricsApis,
    real: &[Pod],
    stray: &[(String, BTreeMap<String, String>)],
    unregistered: &BTreeSet<StubApi>,
    members: &[Member<'_>],
) -> ControlDocument {
    let mut faults = Faults::default();
    for api in unregistered {
        let f = match api {
            StubApi::Resource => &mut faults.resource,
            StubApi::Custom => &mut faults.custom,
            StubApi::External => &mut faults.external,
        };
        f.mode = FaultMode::Unregistered;
    }
    ControlDocument {
        pods: real
            .iter()
            .filter_map(|p| {
                Some((
                    p.metadata.name.clone()?,
                    p.metadata.labels.clone().unwrap_or_default(),
                ))
            })
            .chain(stray.iter().cloned())
            .collect(),
        metrics: apis.clone(),
        faults,
        // Each scale target's update errors, as far as the timeline went (`webhook`).
        scale: members
            .iter()
            .filter_map(|m| {
                let fault = super::webhook::fault_of(m.timeline[..m.applied].iter().copied())?;
                Some((m.target.clone(), fault))
            })
            .collect(),
    }
}

fn event_of(e: &KubeEvent) -> Event {
    Event {
        type_: if e.type_.as_deref() == Some("Warning") {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: e.reason.clone().unwrap_or_default(),
        message: e.message.clone().unwrap_or_default(),
    }
}

/// One HPA of a case on the cluster (the case's own, or one alongside): its world, timeline and
/// workload, and what was seen of it.
struct Member<'c> {
    case: &'c Case,
    plan: &'c Plan,
    world: World,
    timeline: Vec<&'c crate::case::model::TimelineEntry>,
    applied: usize,
    /// The scale target's name.
    target: String,
    /// The label selector of its pods.
    selector: String,
    hpa_name: String,
    observed: Observed,
    /// The world's time: now, or the time of the latest entry applied early.
    world_t: i64,
    /// The real pods the lane deleted on the timeline's cue, listed while they terminate.
    kept: BTreeSet<String>,
}

impl Member<'_> {
    /// Whether the timeline has rolled the workload out (its pods are then paired by
    /// [`mirror_rollout_pods`]).
    fn rolling(&self) -> bool {
        self.world.revision() > 0
    }

    /// The pods of the member's workload ([`live_pods`]).
    async fn pods(&self, lane: &Lane<'_>) -> Result<Vec<Pod>, String> {
        live_pods(lane, &self.selector, &self.kept, self.rolling()).await
    }

    /// Applies a timeline entry's rollout to the real Deployment (`rollout`): after the world
    /// has applied it, so its template is the new revision's.
    async fn roll_out(
        &self,
        lane: &Lane<'_>,
        e: &crate::case::model::TimelineEntry,
    ) -> Result<(), String> {
        let Some(r) = &e.rollout else { return Ok(()) };
        let patch = rollout::deployment_patch(
            r,
            self.world.revision(),
            &self.world.pod_template().1,
            lane.settings.time_scale,
        )?;
        k::patch_deployment(lane.client, &lane.namespace, &self.target, &patch).await
    }

    /// The pods the world's metrics answer for that do not exist, with the workload's labels (so
    /// the stub serves them to a request for the HPA's selector, as the world does).
    fn stray(&self) -> Vec<(String, BTreeMap<String, String>)> {
        let labels = self.world.pod_template().0;
        self.world
            .stray_pods()
            .into_iter()
            .map(|p| (p, labels.clone()))
            .collect()
    }

    /// Mirrors the world at `t` onto the real pods ([`mirror_pods`]); the world's metrics answers
    /// for the cluster (real pods' names, the stray pods' as they are) and the stray pods.
    async fn mirror(
        &mut self,
        lane: &Lane<'_>,
        t: i64,
        stamp: i64,
        real: &[Pod],
        clock: &Clock,
        written: &mut BTreeMap<String, Value>,
    ) -> Result<(MetricsApis, Vec<(String, BTreeMap<String, String>)>), String> {
        let snapshot = self.world.snapshot(t);
        let mut names = if self.rolling() {
            let revisions = self.world.pod_revisions();
            mirror_rollout_pods(
                lane,
                &snapshot.pods,
                &revisions,
                &self.selector,
                real,
                clock,
                written,
            )
            .await?
        } else {
            mirror_pods(lane, &snapshot.pods, real, clock, written, &mut self.kept).await?
        };
        let stray = self.stray();
        for (p, _) in &stray {
            names.entry(p.clone()).or_insert_with(|| p.clone());
        }
        Ok((
            real_metrics(&snapshot.metrics, &names, clock, stamp - t),
            stray,
        ))
    }
}

impl<'c> Member<'c> {
    fn new(case: &'c Case, plan: &'c Plan) -> Self {
        let world = World::new(case);
        let mut timeline: Vec<_> = case.file.timeline.iter().collect();
        timeline.sort_by_key(|e| e.at);
        let selector = world
            .pod_template()
            .0
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        Member {
            case,
            plan,
            world,
            timeline,
            applied: 0,
            target: case.hpa.spec.scale_target_ref.name.clone(),
            selector,
            hpa_name: case.hpa.metadata.name.clone().unwrap_or_default(),
            observed: Observed {
                initial: case.file.workload.replicas,
                ..Observed::default()
            },
            world_t: 0,
            kept: BTreeSet::new(),
        }
    }
}

/// Merges one HPA's metrics answers into the namespace's (the stub serves them all, each
/// per-pod answer filtered by the request's selector).
fn merge_metrics(into: &mut MetricsApis, from: MetricsApis) {
    into.resource.items.extend(from.resource.items);
    if into.resource.error.is_none() {
        into.resource.error = from.resource.error;
    }
    for (key, answer) in from.pods {
        let a = into.pods.entry(key).or_default();
        a.items.extend(answer.items);
        if a.error.is_none() {
            a.error = answer.error;
        }
    }
    for (key, answer) in from.object {
        into.object.entry(key).or_insert(answer);
    }
    for (key, answer) in from.external {
        into.external.entry(key).or_insert(answer);
    }
}

/// Whether the world lists `p` as a pod that ended: finished (`Failed`, `Succeeded`) or deleted.
fn ended(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_some()
        || p.status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .is_some_and(|ph| ph == "Failed" || ph == "Succeeded")
}

/// Waits until the member's workload lists `want` pods (live, or kept while terminating); the
/// pods, oldest first.
async fn wait_for_pods(lane: &Lane<'_>, m: &Member<'_>, want: usize) -> Result<Vec<Pod>, String> {
    let mut real = Vec::new();
    for _ in 0..120 {
        real = m.pods(lane).await?;
        if real.len() == want {
            return Ok(real);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Err(format!(
        "the {:?} {} made {} of its {want} pods in 30 s",
        m.plan.kind,
        m.target,
        real.len()
    ))
}

/// A rollout at t = 0, before the HPA exists: the world applies the rest of t = 0's entries
/// (the rollout first) and moves the rollout on at t = 0, the lane patches the real Deployment,
/// and waits until the cluster's Deployment and ReplicaSet controllers have made as many live
/// pods of each revision as the world lists at t = 0 (the old pods' statuses were written, so
/// the controllers see them available). The workload's pods then.
async fn roll_out_at_start(
    lane: &Lane<'_>,
    m: &mut Member<'_>,
    unregistered: &mut BTreeSet<StubApi>,
) -> Result<Vec<Pod>, String> {
    while m.applied < m.timeline.len() && m.timeline[m.applied].at == 0 {
        let e = m.timeline[m.applied];
        m.world.apply(e, 0);
        note(m.case, e, unregistered);
        m.roll_out(lane, e).await?;
        m.applied += 1;
    }
    m.world.advance(0);
    let want = rollout::live_by_revision(&rollout::world_slots(
        &m.world.snapshot(0).pods,
        &m.world.pod_revisions(),
    ));
    let mut got = BTreeMap::new();
    for _ in 0..80 {
        let real = m.pods(lane).await?;
        let sets = k::replica_set_revisions(lane.client, &lane.namespace, &m.selector).await?;
        let slots: Vec<rollout::Slot> = real.iter().map(|p| rollout::slot_of(p, &sets)).collect();
        got = rollout::live_by_revision(&slots);
        if got == want {
            return Ok(real);
        }
        tokio::time::sleep(Duration::from_millis(125)).await;
    }
    Err(format!(
        "the Deployment {} rolled out to {got:?} live pods by revision in 10 s, the world to {want:?}",
        m.target
    ))
}

/// Poses pods that ended at t = 0 (finished or deleted by the timeline's first entry) as the
/// world has them: the workload was created with every pod the world lists; the lane writes the
/// world's pod statuses on a provisional clock (the ended pods `Failed`/`Succeeded`, the others
/// running as the world says, so that the workload's controller removes its own new pods first)
/// and deletes the deleted ones gracefully; waits for the controller to replace each ended pod,
/// then scales the workload to the world's count, which removes those replacements, and checks
/// that every ended pod is where the world lists it. The statuses are written again on the
/// case's clock before t = 0.
async fn end_pods_at_start(
    lane: &Lane<'_>,
    m: &mut Member<'_>,
    world_pods: &[Pod],
    real: Vec<Pod>,
) -> Result<Vec<Pod>, String> {
    let c = lane.client;
    let ns = lane.namespace.as_str();
    let provisional = Clock::new(wall_micros(), lane.settings.time_scale);
    let mut written = BTreeMap::new();
    mirror_pods(
        lane,
        world_pods,
        &real,
        &provisional,
        &mut written,
        &mut m.kept,
    )
    .await?;
    let ended_count = world_pods.iter().filter(|p| ended(p)).count();
    wait_for_pods(lane, m, world_pods.len() + ended_count).await?;
    k::set_replicas(c, ns, m.plan.kind, &m.target, m.world.replicas()).await?;
    let real = wait_for_pods(lane, m, world_pods.len()).await?;
    for (w, r) in world_pods.iter().zip(&real) {
        // A pod the lane deleted is listed with its deletionTimestamp, so `ended` sees it.
        if ended(w) != ended(r) {
            return Err(format!(
                "the {:?} {} removed another pod than its replacements when scaled to {}: pod {} is not where the case's world lists its pod {}",
                m.plan.kind,
                m.target,
                m.world.replicas(),
                r.metadata.name.as_deref().unwrap_or_default(),
                w.metadata.name.as_deref().unwrap_or_default()
            ));
        }
    }
    Ok(real)
}

/// Whether `hpa`'s status has the condition `type_` False with a message containing `text`: how
/// the lane sees a reconcile it provoked before t = 0 (a prelude's failing one, a held HPA's).
fn false_with(hpa: &HorizontalPodAutoscaler, type_: &str, text: &str) -> bool {
    hpa.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| {
            c.type_ == type_
                && c.status == "False"
                && c.message.as_deref().is_some_and(|m| m.contains(text))
        })
}

/// How long after a reconcile the lane may see the status it wrote: its polling interval and the
/// write's latency (the re-anchored t = 0 is set this much before the seen write, so that the
/// controller's reconcile at t = 0 falls just after it, as without a prelude).
const SEEN_AFTER: Duration = Duration::from_millis(150);

/// The seeded reconciles of a prelude ([`super::prelude::Schedule`]). The lane follows the
/// controller's own reconciles, not the clock: each reconcile asks the stub for the HPA's metrics
/// (a burst of requests, one per metric, apart from the next by a sync period), and the stub
/// keeps the instants. Once the reconcile before a seeded one has asked, the stub serves the
/// seeded answers (a level that proposes the seed's recommendation); once the seeded one has, the
/// filler again. Planned times would do too, but the controller's schedule moves later by the
/// work of each reconcile (its queue re-queues a key a period after the reconcile ends), and over
/// a prelude of twenty reconciles that adds up.
async fn prelude_seeded(
    lane: &Lane<'_>,
    schedule: &super::prelude::Schedule,
    t0: i64,
    at_zero: &MetricsApis,
    doc: &mut ControlDocument,
) -> Result<(), String> {
    let ns = lane.namespace.as_str();
    let period = lane.settings.sync_period.as_micros() as i64;
    let scale = i64::from(lane.settings.time_scale.max(1));
    let first = t0 - i64::from(schedule.seconds) * MICROS / scale;
    let mut bursts = Bursts::new(period / 2 / 1000);
    for seeded in &schedule.seeded {
        let at = t0 + seeded.at * MICROS / scale;
        // The seeded reconcile's place in the prelude's: the first is reconcile 0.
        let k = usize::try_from(((at - first) + period / 2) / period).unwrap_or(0);
        for (seen, served) in [(k, seeded.answers), (k + 1, schedule.filler)] {
            // Reconcile `seen − 1` asked: serve what reconcile `seen` is to see.
            let deadline = first + seen as i64 * period + period;
            while bursts.count < seen {
                let times = lane.stub.request_times().await?;
                bursts.see(times.namespaces.get(ns).map_or(&[][..], |v| v.as_slice()));
                if bursts.count >= seen {
                    break;
                }
                if wall_micros() > deadline {
                    return Err(format!(
                        "the controller had reconciled the HPA {} times in the prelude, not {seen}, a period after the reconcile before t={} was due",
                        bursts.count, seeded.at
                    ));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            doc.metrics = served.of(at_zero);
            lane.stub.put(ns, doc).await?;
        }
    }
    Ok(())
}

/// The controller's reconciles of one HPA, told apart in the stub's metric request instants
/// (Unix milliseconds): requests less than `gap` apart are one reconcile's.
#[derive(Debug)]
struct Bursts {
    gap: i64,
    /// Reconciles seen.
    count: usize,
    /// The newest request instant seen, and the first of its reconcile.
    last: Option<(i64, i64)>,
}

impl Bursts {
    fn new(gap: i64) -> Bursts {
        Bursts {
            gap,
            count: 0,
            last: None,
        }
    }

    /// Takes in the stub's instants (oldest first; the ones already seen are passed over).
    fn see(&mut self, instants: &[i64]) {
        for &t in instants {
            match self.last {
                Some((newest, _)) if t <= newest => {}
                Some((_, start)) if t - start < self.gap => self.last = Some((t, start)),
                _ => {
                    self.count += 1;
                    self.last = Some((t, t));
                }
            }
        }
    }
}

/// The end of a prelude ([`super::prelude`]). The controller's reconciles fall on its first one
/// plus whole sync periods, or a little later (its work queue re-queues a key a period after each
/// reconcile ends, or at the informer's resync when that is earlier, and neither is ever earlier
/// than the period): so from a tenth of a period before the reconcile a window after the first
/// one, the stub answers every metric with an error ([`super::prelude::failing`]). The first
/// reconcile that sees it — the one near the window's end, where whether the initial
/// recommendation still counts is a matter of milliseconds — records nothing and scales nothing;
/// the lane sees the status it writes (`ScalingActive=False` with the failing text) and takes the
/// next reconcile, one period later and surely past the window's end, as t = 0: the clock
/// returned, whose t = 0 the loop's first round (which serves t = 0's answers and moves the pods'
/// and samples' times to the clock) precedes.
async fn prelude_reconciled(
    lane: &Lane<'_>,
    hpa: &str,
    t0: i64,
    doc: &mut ControlDocument,
) -> Result<Clock, String> {
    let ns = lane.namespace.as_str();
    let period = lane.settings.sync_period.as_micros() as i64;
    let wait = t0 - period - period / 10 - wall_micros();
    if wait > 0 {
        tokio::time::sleep(Duration::from_micros(wait as u64)).await;
    }
    doc.metrics = super::prelude::failing(&doc.metrics);
    lane.stub.put(ns, doc).await?;
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(lane.client.clone(), ns);
    let deadline = t0 + 2 * period;
    loop {
        let h = hpas
            .get(hpa)
            .await
            .map_err(|e| format!("reading the HPA {hpa}: {e}"))?;
        let failed = false_with(&h, "ScalingActive", super::prelude::FAILING);
        let now = wall_micros();
        if failed {
            let reconciled = now - SEEN_AFTER.as_micros() as i64;
            return Ok(Clock::new(
                reconciled + period,
                lane.settings.time_scale.max(1),
            ));
        }
        if now > deadline {
            return Err(format!(
                "the controller did not reconcile HPA {hpa} with the prelude's failing answers within three sync periods of serving them"
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A controller's message in the case's terms: the lane's namespace (a name made for the run,
/// unlike any other text of a message) read as the case's, which upstream's messages name (e.g.
/// `unable to get metric qps on Deployment test-namespace/some-deployment`).
fn in_case_terms(message: &str, ns: &str, case: &Case) -> String {
    let case_ns = case.hpa.metadata.namespace.as_deref().unwrap_or("default");
    super::webhook::in_case_terms(message).replace(ns, case_ns)
}

/// Waits until the controller has reconciled the held HPA (`plan::starting_status`) since the
/// lane's write that gave it resourceVersion `after` (any reconcile, with `None`): its status says
/// `AbleToScale=False` with the held target's `FailedGetScale`. When it did (wall microseconds,
/// less the lane's latency in seeing it).
async fn held_reconciled(
    lane: &Lane<'_>,
    hpa: &str,
    target: &str,
    after: Option<&str>,
    deadline: i64,
) -> Result<i64, String> {
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(lane.client.clone(), &lane.namespace);
    let held = held_target(target);
    loop {
        let h = hpas
            .get(hpa)
            .await
            .map_err(|e| format!("reading the HPA {hpa}: {e}"))?;
        let failed = false_with(&h, "AbleToScale", &held);
        let now = wall_micros();
        if failed && h.metadata.resource_version.as_deref() != after {
            return Ok(now - SEEN_AFTER.as_micros() as i64);
        }
        if now > deadline {
            return Err(format!(
                "the controller did not reconcile the held HPA {hpa} (scale target {held}, which does not exist) within two sync periods"
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Poses the starting status of a held HPA (`plan::starting_status`, the case's own, `members[0]`)
/// on a release that reconciles a new HPA at once: the HPA was just created with a scale target
/// that does not exist, so the controller's reconcile at once, and each a sync period later, fails
/// at the scale and changes nothing but the status's `AbleToScale` (and records nothing in its
/// memory: upstream gets the scale before its initial recommendation). The lane sees the first,
/// writes the case's status and sees the next one overwrite it (the reconciles' times so learned),
/// takes the reconcile one period after that as t = 0 — mirroring the pods and serving t = 0's
/// answers on that clock before it — and writes the case's status again right after it: the loop's
/// first round then sets the real target, a spec change reconciled at once, which reads that status
/// as the virtual-time runner's first tick does. The clock.
async fn held(
    lane: &Lane<'_>,
    members: &mut [Member<'_>],
    reals: &[Vec<Pod>],
    written: &mut BTreeMap<String, Value>,
    unregistered: &BTreeSet<StubApi>,
    last_doc: &mut ControlDocument,
) -> Result<Clock, String> {
    let (c, ns) = (lane.client, lane.namespace.as_str());
    let scale = lane.settings.time_scale.max(1);
    let period = lane.settings.sync_period.as_micros() as i64;
    let (hpa, target) = (members[0].hpa_name.clone(), members[0].target.clone());
    let status = members[0].plan.hpa.status.clone().unwrap_or_default();
    let first = held_reconciled(lane, &hpa, &target, None, wall_micros() + 2 * period).await?;
    let provisional = Clock::new(first + 2 * period, scale);
    let rv = k::write_hpa_status(c, ns, &hpa, &real_status_of_hpa(&status, &provisional)).await?;
    let second = held_reconciled(lane, &hpa, &target, Some(&rv), first + 3 * period).await?;
    let clock = Clock::new(second + period, scale);
    let mut apis = MetricsApis::default();
    let mut stray = Vec::new();
    for (m, real) in members.iter_mut().zip(reals) {
        let (a, s) = m.mirror(lane, 0, 0, real, &clock, written).await?;
        merge_metrics(&mut apis, a);
        stray.extend(s);
    }
    let doc = stub_doc(&apis, &reals.concat(), &stray, unregistered, members);
    if doc != *last_doc {
        lane.stub.put(ns, &doc).await?;
        *last_doc = doc;
    }
    let status = real_status_of_hpa(&status, &clock);
    let rv = k::write_hpa_status(c, ns, &hpa, &status).await?;
    held_reconciled(lane, &hpa, &target, Some(&rv), second + 3 * period).await?;
    k::write_hpa_status(c, ns, &hpa, &status).await?;
    Ok(clock)
}

/// An External metric no stub serves: an other HPA (`otherHpas`) fails at it and never scales.
const NEVER_SERVED: &str = "hpa-conformance-never-served";

/// Creates the case's other HPAs (`plan::other_hpas`) and waits until the controller has
/// reconciled each past its selector: its status says `ScalingActive=False` for the metric no
/// stub serves (or already for the ambiguity the case's pods make). From the scale-to-zero
/// rework (1.37) a target at 0 replicas is reconciled past the selector only when the status has
/// `ScaledToZero=True`: the lane writes that status, again whenever a reconcile that read the HPA
/// before the write replaced it.
async fn others(lane: &Lane<'_>, plan: &Plan) -> Result<(), String> {
    let (c, ns) = (lane.client, lane.namespace.as_str());
    let spec: k8s_openapi::api::core::v1::PodSpec = serde_json::from_value(
        serde_json::json!({"containers": [{"name": "app", "image": k::POD_IMAGE}]}),
    )
    .map_err(|e| e.to_string())?;
    let now = KubeTime(k8s_openapi::jiff::Timestamp::now());
    let zero: HorizontalPodAutoscalerStatus = serde_json::from_value(serde_json::json!({
        "currentReplicas": 0, "desiredReplicas": 0,
        "conditions": [{
            "type": "ScaledToZero", "status": "True", "reason": "ScaledToZero",
            "message": "the HPA controller scaled the workload to zero",
            "lastTransitionTime": now
        }]
    }))
    .map_err(|e| e.to_string())?;
    for o in &plan.others {
        k::create_workload(
            c,
            ns,
            WorkloadKind::Deployment,
            &o.target,
            0,
            &o.labels,
            &spec,
        )
        .await?;
        let hpa: HorizontalPodAutoscaler = serde_json::from_value(serde_json::json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": o.name},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": o.target},
                "minReplicas": 0, "maxReplicas": 1,
                "metrics": [{"type": "External", "external": {
                    "metric": {"name": NEVER_SERVED},
                    "target": {"type": "Value", "value": "1"}
                }}]
            }
        }))
        .map_err(|e| e.to_string())?;
        k::create_hpa(c, ns, &hpa).await?;
        k::write_hpa_status(c, ns, &o.name, &zero).await?;
    }
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(c.clone(), ns);
    let period = lane.settings.sync_period;
    let deadline = std::time::Instant::now() + 4 * period + Duration::from_secs(30);
    let conditions = |h: &HorizontalPodAutoscaler| -> Vec<(String, String, String)> {
        h.status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .map(|c| {
                (
                    c.type_.clone(),
                    c.status.clone(),
                    c.reason.clone().unwrap_or_default(),
                )
            })
            .collect()
    };
    for o in &plan.others {
        loop {
            let h = hpas
                .get(&o.name)
                .await
                .map_err(|e| format!("reading the other HPA {}: {e}", o.name))?;
            let seen = conditions(&h);
            let past_selector = seen.iter().any(|(t, _, r)| {
                t == "ScalingActive"
                    && !matches!(r.as_str(), "InvalidSelector" | "ScalingDisabled" | "")
            });
            if past_selector {
                break;
            }
            if !seen
                .iter()
                .any(|(t, st, _)| t == "ScaledToZero" && st == "True")
            {
                k::write_hpa_status(c, ns, &o.name, &zero).await?;
            }
            if std::time::Instant::now() > deadline {
                return Err(format!(
                    "the controller did not reconcile the other HPA {} (selector {:?}) past its selector within four sync periods and 30 s (its conditions: {seen:?})",
                    o.name, o.labels
                ));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    Ok(())
}

/// Runs the case: sets it up, advances its world on the wall clock while sampling what the
/// controller does, and tears it down; what was seen of the case's HPA, then of each HPA
/// alongside (all in the lane's namespace, under one controller). An error is a problem of the
/// cluster, not of the controller under test.
pub async fn run(lane: &Lane<'_>, case: &Case, plan: &Plan) -> Result<Vec<Observed>, String> {
    let c = lane.client;
    let ns = lane.namespace.as_str();
    let scale = lane.settings.time_scale.max(1);
    let mut members: Vec<Member<'_>> = std::iter::once(Member::new(case, plan))
        .chain(
            case.members
                .iter()
                .zip(&plan.members)
                .map(|(m, p)| Member::new(m, p)),
        )
        .collect();
    let mut unregistered = BTreeSet::new();
    for m in &mut members {
        // A rollout at t = 0 (and what follows it at t = 0) waits for the workload to exist with
        // the template it rolls from (`roll_out_at_start`).
        while m.applied < m.timeline.len()
            && m.timeline[m.applied].at == 0
            && m.timeline[m.applied].rollout.is_none()
        {
            m.world.apply(m.timeline[m.applied], 0);
            note(m.case, m.timeline[m.applied], &mut unregistered);
            m.applied += 1;
        }
        // A count set at t = 0 is the count the case starts from, as in the virtual run (whose
        // first tick sees it): the workload is created with it — or, when the world lists pods
        // that ended at t = 0 (finished or deleted), with as many pods as it lists, ended ones
        // included (see `end_pods_at_start`).
        m.observed.initial = m.world.replicas();
        let listed = m.world.snapshot(0).pods.len() as i32;
        let (labels, spec) = m.world.pod_template();
        k::create_workload(
            c,
            ns,
            m.plan.kind,
            &m.target,
            m.world.replicas().max(listed),
            &labels,
            &spec,
        )
        .await?;
    }

    // Wait for the workloads' pods before the clock starts.
    let mut reals = Vec::new();
    for m in &mut members {
        let world_pods = m.world.snapshot(0).pods;
        let want = world_pods.len();
        let mut real = wait_for_pods(lane, m, want).await?;
        if world_pods.iter().any(ended) {
            real = end_pods_at_start(lane, m, &world_pods, real).await?;
        }
        // A steady state, as in the virtual world: the workload's controller has counted its
        // active pods (the scale's status.replicas, which the HPA divides by for AverageValue
        // metrics).
        let active = m.world.replicas();
        let mut counted = -1;
        for _ in 0..120 {
            counted = k::get_scale(c, ns, m.plan.kind, &m.target).await?.1;
            if counted == active {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        if counted != active {
            return Err(format!(
                "the {:?} {} counts {counted} of its {active} active pods after 30 s",
                m.plan.kind, m.target
            ));
        }
        reals.push(real);
    }

    // The other HPAs the controller is to know at the case's first reconcile.
    others(lane, plan).await?;

    // Before 1.37 kube-controller-manager first reconciles an HPA one sync period after it
    // appears (its work queue adds every key with the resync period as delay), so the HPA is
    // created one sync period before t = 0; from 1.37 on it reconciles a new HPA at once
    // (#138294), so the HPA is created at t = 0 (created a period early, its extra first decision
    // at t = −P moved a 300 s window's end to t = 285: docs-cpu-halving halved at t = 288 on
    // v1.37.2). Either way the first reconcile falls on t = 0, as the virtual-time runner's first
    // tick. t = 0 is a whole second; pods and metrics are in place before the HPA exists.
    let lead = if lane.settings.version.changes().new_hpa_reconciled_at_once {
        0
    } else {
        lane.settings.sync_period.as_micros() as i64
    };
    // A prelude ([`super::prelude`]) moves the HPA's creation its length earlier.
    let prelude = plan
        .prelude
        .as_ref()
        .map_or(0, |p| i64::from(p.seconds) * MICROS / i64::from(scale));
    // A rollout at t = 0 is carried out by the cluster's Deployment controller before the HPA
    // exists: a few seconds more before it (`roll_out_at_start`).
    let at_start = members
        .iter()
        .any(|m| m.timeline.get(m.applied).is_some_and(|e| e.at == 0));
    let create_at = (wall_micros() / MICROS + if at_start { 12 } else { 2 }) * MICROS;
    let t0 = create_at + lead + prelude;
    let mut clock = Clock::new(t0, scale);
    let mut written = BTreeMap::new();
    let mut apis = MetricsApis::default();
    let mut stray = Vec::new();
    for (m, real) in members.iter_mut().zip(reals.iter_mut()) {
        m.world.advance(0);
        let (mut a, mut s) = m.mirror(lane, 0, 0, real, &clock, &mut written).await?;
        if m.applied < m.timeline.len() && m.timeline[m.applied].at == 0 {
            *real = roll_out_at_start(lane, m, &mut unregistered).await?;
            (a, s) = m.mirror(lane, 0, 0, real, &clock, &mut written).await?;
        }
        merge_metrics(&mut apis, a);
        stray.extend(s);
    }
    let all_real: Vec<Pod> = reals.concat();
    let mut last_doc = stub_doc(&apis, &all_real, &stray, &unregistered, &members);
    let mut seen_prelude = BTreeMap::new();
    // t = 0's answers, which a prelude's are made from.
    let at_zero = last_doc.metrics.clone();
    if let Some(p) = &plan.prelude {
        // Until t = 0 the prelude's filler; the loop below serves t = 0's from its first round.
        last_doc.metrics = p.filler.of(&at_zero);
    }
    lane.stub.put(ns, &last_doc).await?;
    let wait = create_at - wall_micros();
    if wait > 0 {
        tokio::time::sleep(Duration::from_micros(wait as u64)).await;
    }
    for m in &members {
        let mut hpa = m.plan.hpa.clone();
        if m.plan.held {
            hpa.spec.scale_target_ref.name = held_target(&m.target);
        }
        k::create_hpa(c, ns, &hpa).await?;
    }
    // The status the case starts from (conditions, lastScaleTime, counts: what the controller
    // had written before t = 0) goes in through the status subresource right after the create,
    // which drops it: the controller's first reconcile, one sync period later, reads it there as
    // the virtual-time runner's first tick does (the planner skips a case where that cannot be so).
    // A held HPA's goes in between its failing reconciles, and t = 0 follows them (`held`).
    for m in members
        .iter()
        .filter(|m| !m.plan.held && m.plan.prelude.is_none())
    {
        if let Some(status) = &m.plan.hpa.status {
            let status = real_status_of_hpa(status, &clock);
            k::write_hpa_status(c, ns, &m.hpa_name, &status).await?;
        }
    }
    if plan.held {
        clock = held(
            lane,
            &mut members,
            &reals,
            &mut written,
            &unregistered,
            &mut last_doc,
        )
        .await?;
    }
    // The held HPA's real target, set in the loop's first round (after t = 0's answers): a spec
    // change the release reconciles at once.
    let held_name = plan.held.then(|| held_target(&members[0].target));
    let mut release = plan.held.then(|| {
        (
            members[0].hpa_name.clone(),
            serde_json::json!({"spec": {"scaleTargetRef": {"name": members[0].target}}}),
        )
    });

    if let Some(p) = &plan.prelude {
        prelude_seeded(lane, p, t0, &at_zero, &mut last_doc).await?;
        clock = prelude_reconciled(lane, &members[0].hpa_name, t0, &mut last_doc).await?;
        // The case's starting status, where the prelude does not leave it: written between the
        // failing reconcile and t = 0, where the controller reads it.
        if let Some(status) = plan.hpa.status.as_ref().filter(|_| p.status_written) {
            let status = real_status_of_hpa(status, &clock);
            k::write_hpa_status(c, ns, &members[0].hpa_name, &status).await?;
        }
        // The failing reconcile's events are the prelude's, not the case's.
        let list = Api::<KubeEvent>::namespaced(c.clone(), ns)
            .list(&ListParams::default().fields("involvedObject.kind=HorizontalPodAutoscaler"))
            .await
            .map_err(|e| format!("listing events: {e}"))?;
        for e in list.items {
            seen_prelude.insert(
                e.metadata.uid.unwrap_or_default(),
                e.count.unwrap_or(1).max(1),
            );
        }
    }
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(c.clone(), ns);
    let events_api: Api<KubeEvent> = Api::namespaced(c.clone(), ns);
    let mut seen_counts: BTreeMap<String, i32> = seen_prelude;
    let end = f64::from(case.duration) + lane.tail;
    let cycle = (lane.settings.sync_period / 6)
        .clamp(Duration::from_millis(200), Duration::from_millis(500));
    // Since when the cluster has been failing the lane's requests: a fault the run is meant to
    // see (an API server or etcd restart, `just kind-faults`) is ridden out up to FAILING_FOR.
    let mut failing_since: Option<std::time::Instant> = None;
    let mut last_events = 0.0f64;
    loop {
        let now = clock.now();
        if now > end {
            break;
        }
        // Watched long enough: one more round, which lists the events too, and the case ends.
        let last_round = lane
            .settle
            .as_ref()
            .is_some_and(|s| s.settled(&members, scale, now));
        // Timeline entries go in half a sync period early: the controller's reconciles fall on
        // t = 0, P, 2P, … (see above), so the one at t sees what the case sets at t — as the
        // virtual-time tick does — and the one at t − P does not.
        let lead = lane.settings.case_sync_period() / 2.0;
        let due = (now + lead).floor() as i64;
        let step: Result<(), String> = async {
            let mut apis = MetricsApis::default();
            let mut all_real = Vec::new();
            let mut stray = Vec::new();
            let mut at = Vec::with_capacity(members.len());
            let mut patches = Vec::new();
            for m in &mut members {
                // The timeline entries due.
                while m.applied < m.timeline.len() && i64::from(m.timeline[m.applied].at) <= due {
                    let e = m.timeline[m.applied];
                    let t = i64::from(e.at);
                    m.world.apply(e, t);
                    note(m.case, e, &mut unregistered);
                    if e.set_replicas.is_some() {
                        k::set_replicas(c, ns, m.plan.kind, &m.target, m.world.replicas()).await?;
                    }
                    m.roll_out(lane, e).await?;
                    if let Some(p) = &e.hpa_patch {
                        let mut p = p.clone();
                        scale_behavior(&mut p, scale)?;
                        patches.push((m.hpa_name.clone(), p));
                    }
                    m.applied += 1;
                    m.world_t = m.world_t.max(t);
                }
                let ti = (now.floor() as i64).max(m.world_t);
                // The controller's (or a manual) scale write moves the world.
                let replicas = k::get_scale(c, ns, m.plan.kind, &m.target).await?.0;
                if replicas != m.world.replicas() {
                    m.world.set_replicas(replicas, ti).map_err(|e| {
                        format!("the scale target went to {replicas} replicas: {e}")
                    })?;
                }
                // Between ticks a rollout moves on, as the cluster's Deployment does.
                m.world.advance(ti);
                let real = m.pods(lane).await?;
                let stamp = stamp_of(now, lane.settings.case_sync_period()).max(ti);
                let (a, s) = m
                    .mirror(lane, ti, stamp, &real, &clock, &mut written)
                    .await?;
                merge_metrics(&mut apis, a);
                stray.extend(s);
                all_real.extend(real);
                at.push((ti, replicas));
            }
            let doc = stub_doc(&apis, &all_real, &stray, &unregistered, &members);
            if doc != last_doc {
                lane.stub.put(ns, &doc).await?;
                last_doc = doc;
            }
            // Spec patches after the answers of their tick: a release that reconciles a patch at
            // once (1.37, `cluster::patch`) decides with the world the tick will have.
            if let Some((name, p)) = &release {
                k::patch_hpa(c, ns, name, p).await?;
                release = None;
            }
            for (name, p) in patches {
                k::patch_hpa(c, ns, &name, &p).await?;
            }
            for (m, (ti, replicas)) in members.iter_mut().zip(at) {
                let hpa = hpas
                    .get(&m.hpa_name)
                    .await
                    .map_err(|e| format!("reading the HPA {}: {e}", m.hpa_name))?;
                let mut status = case_status(&hpa.status.unwrap_or_default(), &clock);
                for c in status.conditions.iter_mut().flatten() {
                    c.message = c.message.as_deref().map(|t| in_case_terms(t, ns, m.case));
                }
                if m.plan.held {
                    // The patch that set the real target is one generation the case never made.
                    status.observed_generation = status.observed_generation.map(|g| g - 1);
                }
                m.observed.samples.push(Sample {
                    t: clock.now(),
                    replicas,
                    status,
                    pods: m.world.pod_counts(ti),
                });
            }
            if now - last_events >= f64::from(scale) || now + 1.0 > end || last_round {
                last_events = now;
                let list = events_api
                    .list(
                        &ListParams::default()
                            .fields("involvedObject.kind=HorizontalPodAutoscaler"),
                    )
                    .await
                    .map_err(|e| format!("listing events: {e}"))?;
                let t = clock.now();
                for e in &list.items {
                    // A prelude's failing reconcile's events, if written after the lane listed
                    // them before t = 0 (no answer of the case carries that text).
                    if plan.prelude.is_some()
                        && e.message
                            .as_deref()
                            .is_some_and(|m| m.contains(super::prelude::FAILING))
                    {
                        continue;
                    }
                    // A held HPA's failing reconciles before t = 0 (their message names the
                    // target that does not exist).
                    if let Some(held) = &held_name
                        && e.message
                            .as_deref()
                            .is_some_and(|m| m.contains(held.as_str()))
                    {
                        continue;
                    }
                    let uid = e.metadata.uid.clone().unwrap_or_default();
                    let count = e.count.unwrap_or(1).max(1);
                    let before = seen_counts.insert(uid, count).unwrap_or(0);
                    let Some(m) = members
                        .iter_mut()
                        .find(|m| e.involved_object.name.as_deref() == Some(m.hpa_name.as_str()))
                    else {
                        continue;
                    };
                    let mut event = event_of(e);
                    event.message = in_case_terms(&event.message, ns, m.case);
                    for _ in before..count {
                        m.observed.events.push(Occurrence {
                            t,
                            event: event.clone(),
                        });
                    }
                }
            }
            Ok(())
        }
        .await;
        match step {
            Ok(()) if last_round => break,
            Ok(()) => failing_since = None,
            Err(e) => {
                let since = *failing_since.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() >= FAILING_FOR {
                    return Err(format!(
                        "the cluster kept failing for {} s: {e}",
                        FAILING_FOR.as_secs()
                    ));
                }
            }
        }
        tokio::time::sleep(cycle).await;
    }
    Ok(members.into_iter().map(|m| m.observed).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reconciles_requests_are_one_burst_and_instants_seen_twice_count_once() {
        let mut b = Bursts::new(1500);
        b.see(&[1000, 1004, 1010]);
        assert_eq!(b.count, 1);
        // Polled again: the same instants and a new reconcile a period (3 s) later.
        b.see(&[1000, 1004, 1010, 4020, 4021]);
        assert_eq!(b.count, 2);
        b.see(&[4021]);
        assert_eq!(b.count, 2);
        // A late reconcile still counts once; one in a quick succession after 1.6 s is another.
        b.see(&[7300, 8900]);
        assert_eq!(b.count, 4);
    }

    #[test]
    fn a_message_naming_the_lanes_namespace_reads_the_cases() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "../cases/controller/ht-condition-failed-get-metrics-failed-get-object-metric.yaml",
        );
        let case = crate::case::load_case(&path).unwrap();
        let ns = "hpa-ht-condition-failed-get-metrics-fa-0d525e-e58b9";
        assert_eq!(
            in_case_terms(
                &format!("unable to get metric qps on Deployment {ns}/some-deployment: boom"),
                ns,
                &case
            ),
            "unable to get metric qps on Deployment test-namespace/some-deployment: boom"
        );
        assert_eq!(
            in_case_terms("no namespace here", ns, &case),
            "no namespace here"
        );
    }

    #[test]
    fn samples_are_stamped_with_the_nearest_tick() {
        assert_eq!(stamp_of(29.6, 15.0), 30);
        assert_eq!(stamp_of(22.5, 15.0), 30);
        assert_eq!(stamp_of(22.4, 15.0), 15);
        assert_eq!(stamp_of(30.4, 15.0), 30);
        assert_eq!(stamp_of(0.2, 15.0), 0);
        assert_eq!(stamp_of(7.0, 0.0), 7);
    }

    #[test]
    fn clock_maps_world_time_to_cluster_time_and_back() {
        let t0 = 1_800_000_000 * MICROS;
        let clock = Clock::new(t0, 5);
        let world_60 = Time::from_secs(EPOCH_SECS + 60);
        assert_eq!(clock.real(world_60), Time::from_micros(t0 + 12 * MICROS));
        assert_eq!(clock.world(Time::from_micros(t0 + 12 * MICROS)), world_60);
        // Before t = 0 (pods started an hour before the case).
        let world_early = Time::from_secs(EPOCH_SECS - 3600);
        assert_eq!(
            clock.real(world_early),
            Time::from_micros(t0 - 720 * MICROS)
        );
        assert_eq!(clock.case_secs(Time::from_micros(t0 + 3 * MICROS)), 15.0);
        assert_eq!(scaled_window("30s", 5), "6s");
        assert_eq!(scaled_window("1m0s", 1), "60s");
        assert_eq!(scaled_window("1s", 5), "200ms");
    }
}
