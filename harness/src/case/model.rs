//! The case file format: one YAML document per HPA scenario. Strict — every struct denies unknown
//! fields — and documented field by field, because the JSON Schema (`cases/schema.json`) that
//! editors use for completion is generated from these types. The limits the loader enforces
//! (at most [`MAX_PODS`] pods, times within ±[`MAX_VIRTUAL_SECONDS`], at most
//! [`MAX_TICKS`](super::bounds::MAX_TICKS) ticks) are in the schema as ranges where a field has one.

use std::collections::BTreeMap;

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounds::{MAX_PODS, MAX_VIRTUAL_SECONDS};

/// One conformance case.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CaseFile {
    /// Unique, stable name (kebab-case), used in reports and snapshot names.
    pub name: String,
    /// One line saying what the case shows.
    pub title: String,
    /// Where the behaviour is stated.
    pub source: Source,
    /// Findings worth keeping with the case (e.g. where the docs and upstream differ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// Feature-gate values the case assumes, by upstream name (e.g. `HPAScaleToZero: true`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
    /// Overrides of the controller's settings (kube-controller-manager flags).
    #[serde(default)]
    pub settings: SettingsOverrides,
    /// The controller's memory before the first tick; by default it has never seen the HPA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemorySeed>,
    /// The HPA exactly as a user writes it (`apiVersion: autoscaling/v2`).
    pub hpa: HorizontalPodAutoscaler,
    /// The scale target and its pods.
    pub workload: Workload,
    /// Other HPAs in the HPA's namespace, as the controller knows them once it has reconciled
    /// each: their scale targets' selectors. One whose selector matches this HPA's pods (the
    /// world matches it against their labels at every tick) makes upstream refuse to scale
    /// (`AmbiguousSelector`); one that matches none changes nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_hpas: Vec<OtherHpa>,
    /// More HPAs in the same namespace, reconciled by the same controller: each with its own
    /// scale target, pods, timeline and expectations. At every sync period the controller
    /// reconciles `hpa` first, then these in the order listed (a real controller takes them
    /// off its work queue in an order it does not promise), and every one sees all the
    /// namespace's pods. The controller keeps each one's memory apart, and learns each one's
    /// selector when it first reconciles it: pods selected by more than one make upstream refuse
    /// to scale (`AmbiguousSelector`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alongside: Vec<AlongsideHpa>,
    /// What happens, at virtual times.
    #[serde(default)]
    pub timeline: Vec<TimelineEntry>,
    /// How long to run, in seconds (default: the last timeline or expectation time plus one sync
    /// period). At most 1,000,000,000 s, and at most 100,000 ticks (`durationSeconds /
    /// syncPeriodSeconds + 1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = MAX_VIRTUAL_SECONDS))]
    pub duration_seconds: Option<u32>,
    /// The expected outcome, on the newest release whose behaviour the case pins (each entry of
    /// `changedIn` says what releases before a change expect instead).
    pub expect: Expectations,
    /// The Kubernetes releases the case holds for at all (default: every known release, 1.32 to
    /// 1.37). On a release outside, the case is skipped with `because`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_versions: Option<VersionRange>,
    /// Upstream changes that this case's outcome shows: for each, the release that made it,
    /// the change, and what the releases before it expect instead. On a release, the
    /// expectations are `expect` with the `before` of every change after that release laid
    /// over it, the newest change first (an `at` entry replaces the one at the same `t`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_in: Vec<VersionChange>,
}

/// The releases a case holds for: `from` and `through` are both included; either may be
/// absent (no bound). Written as strings, e.g. `from: "1.34"`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VersionRange {
    /// The first release the case holds for (e.g. `"1.34"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The last release the case holds for (e.g. `"1.36"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through: Option<String>,
    /// Why not on the others: the upstream change, with its pull request (e.g. `#132007: the
    /// scale update retries on a conflict since 1.34`).
    pub because: String,
}

/// One upstream change that a case's outcome shows.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VersionChange {
    /// The release that made the change (e.g. `"1.36"`); the releases before it expect `before`.
    pub release: String,
    /// The change: its pull request and one line (e.g. `#135118: the scale-to-zero rework
    /// writes the ScaledToZero condition on every rescale`).
    pub upstream: String,
    /// What the releases before `release` expect instead: `trajectory` and `finalReplicas`
    /// replace the case's when given, each `at` entry replaces the one at the same `t` (or adds
    /// one).
    pub before: Expectations,
}

/// An HPA reconciled beside the case's own (`alongside`): the same fields as the case's, for it.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AlongsideHpa {
    /// The HPA exactly as a user writes it: a name and a scale target of its own, in the case
    /// HPA's namespace.
    pub hpa: HorizontalPodAutoscaler,
    /// Its scale target and pods.
    pub workload: Workload,
    /// What happens to it, at virtual times.
    #[serde(default)]
    pub timeline: Vec<TimelineEntry>,
    /// Its expected outcome (`rejected` is not allowed here).
    #[serde(default)]
    pub expect: Expectations,
}

/// Another HPA in the namespace (`otherHpas`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OtherHpa {
    /// Its name (not the HPA's own).
    pub name: String,
    /// Its scale target's `status.selector`, a label selector (`""` selects every pod).
    pub selector: String,
}

/// Where a case's behaviour is stated: a seed document and its section, or an upstream test.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Source {
    /// A seed document's file name (under `shared/seeds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
    /// The section of the seed document (its heading).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// An upstream unit test, e.g. `TestScaleUpCMUnreadyAndHotCpuNoLessScale` or a fact id
    /// `HT/TestScaleUp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// Why the case has neither a seed statement nor an upstream test behind it (e.g. "found by
    /// `hpa-conformance fuzz`, seed 7"): required then, and only then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Controller settings overrides; unset fields keep kube-controller-manager's defaults.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SettingsOverrides {
    /// `--horizontal-pod-autoscaler-sync-period` in seconds (default 15): the tick length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_VIRTUAL_SECONDS))]
    pub sync_period_seconds: Option<u32>,
    /// `--horizontal-pod-autoscaler-tolerance` (default 0.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub tolerance: Option<f64>,
    /// `--horizontal-pod-autoscaler-cpu-initialization-period` in seconds (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_initialization_period_seconds: Option<u32>,
    /// `--horizontal-pod-autoscaler-initial-readiness-delay` in seconds (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_readiness_delay_seconds: Option<u32>,
    /// `--horizontal-pod-autoscaler-downscale-stabilization` in seconds (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downscale_stabilization_seconds: Option<u32>,
    /// Scale-up limit factor without `behavior` (upstream hard-codes 2; its horizontal_test.go
    /// overrides it to 8). Not a kube-controller-manager flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub scale_up_limit_factor: Option<f64>,
    /// Scale-up limit minimum without `behavior` (upstream hard-codes 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub scale_up_limit_minimum: Option<f64>,
}

/// The controller's memory before the first tick (times are virtual seconds, usually negative).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MemorySeed {
    /// Recorded recommendations. An empty list means "seen before, nothing recorded", so no
    /// initial recommendation is taken (what upstream's unit tests do).
    #[serde(default)]
    pub recommendations: Vec<SeedRecommendation>,
    /// Recent scale-ups.
    #[serde(default)]
    pub scale_up_events: Vec<SeedScaleEvent>,
    /// Recent scale-downs.
    #[serde(default)]
    pub scale_down_events: Vec<SeedScaleEvent>,
}

/// A recommendation in the seeded memory.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SeedRecommendation {
    /// Recommended replicas.
    #[schemars(range(min = 0, max = MAX_PODS))]
    pub replicas: i32,
    /// When (virtual seconds; negative is before the first tick).
    #[schemars(range(min = -MAX_VIRTUAL_SECONDS, max = MAX_VIRTUAL_SECONDS))]
    pub at: i64,
}

/// A scale event in the seeded memory.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SeedScaleEvent {
    /// Replicas added or removed (positive).
    #[schemars(range(min = 0, max = MAX_PODS))]
    pub change: i32,
    /// When (virtual seconds).
    #[schemars(range(min = -MAX_VIRTUAL_SECONDS, max = MAX_VIRTUAL_SECONDS))]
    pub at: i64,
}

/// The scale target and how its pods behave.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Workload {
    /// `spec.replicas` at t=0: at most 10,000, the most pods the simulated world holds (a target
    /// that scales beyond it fails its case).
    #[schemars(range(min = 0, max = MAX_PODS))]
    pub replicas: i32,
    /// The scale's `status.selector` (default `app=<scaleTargetRef.name>`); `""` means the target
    /// reports no selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// The pod template.
    pub pod: PodTemplate,
    /// How new pods start.
    #[serde(default)]
    pub startup: Startup,
    /// Age in seconds of the pods that exist at t=0 (default 3600: long started and ready).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_pod_age_seconds: Option<u32>,
    /// The sampling window the metrics APIs report, in seconds (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_window_seconds: Option<u32>,
    /// `true`: the pod list is exactly what the case makes it, as in upstream's unit tests (a fixed
    /// list of pods): a pod marked `deleted`, `Failed` or `Succeeded` is not replaced. By default
    /// the workload's controller replaces it at once, as a ReplicaSet does: a new pod (the
    /// newest, through the start-up model) for each active pod short of `spec.replicas`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fixed_pods: bool,
    /// The target is shown the pods newest first instead of oldest first (a lister's cache
    /// promises no order; upstream pairs pods and samples by name). Ordinals still count oldest
    /// first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub listed_newest_first: bool,
}

/// The pod template: containers and their requests.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PodTemplate {
    /// `spec.containers`.
    pub containers: Vec<Container>,
    /// `spec.initContainers` with `restartPolicy: Always` (sidecars): their requests count, and
    /// their usage (a `load` naming the sidecar's `container`) is reported and summed like any
    /// container's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sidecars: Vec<Container>,
    /// Plain `spec.initContainers` (run to completion before the containers start): neither
    /// their requests nor their usage count (metrics-server reports no finished container).
    /// They come before the sidecars in the pod's `initContainers`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub init_containers: Vec<Container>,
    /// Pod-level `spec.resources.requests` (PodLevelResources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<BTreeMap<String, String>>,
}

/// A container and its requests.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Container {
    /// Its name.
    pub name: String,
    /// `resources.requests`, as quantities (e.g. `cpu: 500m`).
    #[serde(default)]
    pub requests: BTreeMap<String, String>,
}

/// How a new pod starts: pending, then running but not ready, then ready.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Startup {
    /// Seconds in phase Pending after creation (default 0).
    #[serde(default)]
    pub pending_seconds: u32,
    /// Seconds from start until the Ready condition turns True (default 0).
    #[serde(default)]
    pub ready_after_seconds: u32,
    /// A CPU spike while starting: new pods report this CPU usage instead of their load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_cpu: Option<HotCpu>,
}

/// A start-up CPU spike.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HotCpu {
    /// CPU usage reported meanwhile (e.g. `900m`).
    pub usage: String,
    /// For how many seconds after start.
    pub for_seconds: u32,
}

/// Changes at one virtual time. Several kinds of change may share an entry.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TimelineEntry {
    /// When, in seconds from the start (applied before the tick at that time).
    #[schemars(range(max = MAX_VIRTUAL_SECONDS))]
    pub at: u32,
    /// Set the load of one metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<Load>,
    /// Set the load of several metrics.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loads: Vec<Load>,
    /// Change the target's `spec.replicas` by hand (e.g. to 0); at most 10,000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = MAX_PODS))]
    pub set_replicas: Option<i32>,
    /// Override the scale's `status.replicas` (e.g. a rolling-update surge); `null` clears.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_replicas: Option<i32>,
    /// Change the readiness, phase or deletion of some pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<PodChange>,
    /// Which pods the metrics API returns no sample for (replaces the earlier set for the metric).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_missing: Option<MetricsMissing>,
    /// Samples the metrics API returns for pods that do not exist (not in the workload's pod
    /// list, e.g. a pod deleted since): upstream skips them. Each holds from here on; a later one
    /// for the same metric and pod replaces it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stray_samples: Vec<StraySample>,
    /// Make a metrics API fail for one metric, or recover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_error: Option<MetricError>,
    /// Make the scale subresource fail, or recover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_api: Option<ScaleApi>,
    /// Edit the HPA (as `kubectl patch --type merge` would): a JSON merge patch applied to the
    /// manifest as written, then defaulted and validated again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hpa_patch: Option<serde_json::Value>,
    /// Start a rolling update of the workload (a new pod template revision), carried out by the
    /// world at every tick as a Deployment's RollingUpdate strategy does: surge pods of the new
    /// revision, old pods terminating once enough new ones are available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<Rollout>,
}

/// A rolling update (docs/cases.md, "The world model": rolling updates). A rollout started while another
/// runs replaces it: the pods of every earlier revision are then old.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Rollout {
    /// Pods above `spec.replicas` during the update: a count or a percentage of `spec.replicas`
    /// rounded up (default `25%`, as a Deployment's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrPercent>,
    /// Pods below `spec.replicas` that may be unavailable: a count or a percentage rounded down
    /// (default `25%`). Not 0 when `maxSurge` is 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrPercent>,
    /// A new pod counts as available once Ready for this long (the Deployment's
    /// `minReadySeconds`, default 0).
    #[serde(default)]
    #[schemars(range(max = 86_400))]
    pub min_ready_seconds: u32,
    /// How long a replaced pod stays listed, Running and terminating (`deletionTimestamp` set)
    /// before it is gone (default 30, the default `terminationGracePeriodSeconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 86_400))]
    pub termination_seconds: Option<u32>,
    /// Requests of the new revision that differ from the old template, by container (or
    /// sidecar) name and resource, e.g. `{app: {cpu: 750m}}`; old pods keep theirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<BTreeMap<String, BTreeMap<String, String>>>,
}

/// A count or a percentage (`"25%"`), as a Deployment's `maxSurge` and `maxUnavailable`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum IntOrPercent {
    /// A number of pods.
    Int(u32),
    /// A percentage of `spec.replicas`, written `"N%"`.
    Percent(String),
}

impl IntOrPercent {
    /// The N of `"N%"` when it is a percentage from 0 to 100.
    pub fn percent(s: &str) -> Option<u32> {
        let n = s.strip_suffix('%')?;
        if n.is_empty() || n.len() > 3 || !n.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        n.parse().ok().filter(|p| *p <= 100)
    }

    /// Pods for `replicas`: a count as it is, a percentage of `replicas` rounded up or down (as
    /// the Deployment controller resolves `maxSurge` and `maxUnavailable`). The loader refuses
    /// a percentage [`IntOrPercent::percent`] does not read.
    pub fn pods(&self, replicas: i32, round_up: bool) -> i32 {
        match self {
            IntOrPercent::Int(n) => i32::try_from(*n).unwrap_or(i32::MAX),
            IntOrPercent::Percent(s) => {
                let part = i64::from(replicas.max(0)) * i64::from(Self::percent(s).unwrap_or(0));
                let pods = if round_up {
                    (part + 99) / 100
                } else {
                    part / 100
                };
                i32::try_from(pods).unwrap_or(i32::MAX)
            }
        }
    }
}

/// The load of one metric. Give exactly one of `total`, `perPod`, `pods`, `value`, `series`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Load {
    /// The metric: the resource name (`cpu`, `memory`) for Resource and ContainerResource
    /// metrics, the metric name for Pods, Object and External metrics.
    pub metric: String,
    /// For resources: the container whose usage this is (default: the first container); a name
    /// from `workload.pod.containers` or `workload.pod.sidecars` (another name is an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// A total spread evenly over the ready pods (not-ready pods report 0); it re-spreads as pods
    /// come and go. Not negative (nor are `perPod` and `pods`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<String>,
    /// The same value for every pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_pod: Option<String>,
    /// Explicit values by pod ordinal (oldest first); later pods report 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<Vec<String>>,
    /// The value of an Object metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The series values of an External metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<Vec<String>>,
    /// An Object `value` or External `value`/`series` reaches the target as written here (e.g.
    /// `-1.5m`, `1e3`), so the implementation parses the spelling; by default the metrics APIs
    /// answer with each quantity re-written from its milli-value.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub as_written: bool,
}

/// Which pods a change applies to: `ordinals` (positions, oldest first), the `newest` N, or
/// `all`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PodChange {
    /// Positions in the pod list, oldest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinals: Option<Vec<usize>>,
    /// The newest N pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest: Option<usize>,
    /// Every pod.
    #[serde(default)]
    pub all: bool,
    /// Set the Ready condition (its transition time becomes now when it changes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// Set the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// Mark deleted (`deletionTimestamp` set; the pod lingers while terminating).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted: Option<bool>,
    /// Set `status.startTime` to this virtual time (seconds, may be negative); readiness then
    /// follows the start-up model from that start, unless `ready` is also given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -MAX_VIRTUAL_SECONDS, max = MAX_VIRTUAL_SECONDS))]
    pub started_at: Option<i64>,
    /// `false`: the pods have no Ready condition at all (as before a kubelet reports one; upstream
    /// then counts them unready for CPU); `true`: the condition is back (with `ready`, or from the
    /// start-up model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_condition: Option<bool>,
    /// Set the Ready condition's `lastTransitionTime` to this virtual time (seconds, may be
    /// negative); keeps the Ready status unless `ready` is also given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -MAX_VIRTUAL_SECONDS, max = MAX_VIRTUAL_SECONDS))]
    pub ready_since: Option<i64>,
    /// Requests of these pods that differ from the template, by container (or sidecar) name and
    /// resource, e.g. `{app: {cpu: 900m}}`: pods of an older template still running, or an
    /// in-place resize. Resources not named keep the template's request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<BTreeMap<String, BTreeMap<String, String>>>,
}

/// A pod phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum Phase {
    /// Pending.
    Pending,
    /// Running.
    Running,
    /// Succeeded.
    Succeeded,
    /// Failed.
    Failed,
}

/// A sample for a pod that is not in the workload's pod list.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StraySample {
    /// A `Resource`, `ContainerResource` or `Pods` metric (as in `load.metric`).
    pub metric: String,
    /// The pod's name: one the workload's pods (`<target>-0000`, …) never have.
    pub pod: String,
    /// The sample (for a resource: the usage of the first container, or of the
    /// `ContainerResource` metric's container).
    pub value: String,
}

/// Pods without samples for a metric.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MetricsMissing {
    /// The metric (as in `load.metric`).
    pub metric: String,
    /// Positions in the pod list, oldest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinals: Option<Vec<usize>>,
    /// The newest N pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest: Option<usize>,
}

/// A metrics API failure for one metric.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MetricError {
    /// The metric (as in `load.metric`).
    pub metric: String,
    /// The metrics API's error text; absent: the API recovers. The HPA's metrics client wraps it
    /// as upstream does (`unable to fetch metrics from resource metrics API: …`). For Resource and
    /// ContainerResource metrics the whole `metrics.k8s.io` API fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The API serving this metric is not registered at all (e.g. no metrics-server installed):
    /// the API server answers its paths with HTTP 404 `404 page not found`, which client-go
    /// reports as `the server could not find the requested resource (get pods.metrics.k8s.io)`.
    /// For Resource, ContainerResource and External metrics; not together with `message`.
    /// On a cluster the metrics stub answers exactly that 404 for the case's namespace.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unregistered: bool,
}

/// Scale subresource failures; absent fields recover.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScaleApi {
    /// Error text of GET scale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_error: Option<String>,
    /// Error text of UPDATE scale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_error: Option<String>,
    /// The API server's reason for refusing UPDATE scale, which makes `updateError` a typed
    /// status error instead of a plain one: `Conflict` (HTTP 409; since 1.34 the controller
    /// reads the scale again and retries, up to 5 attempts per reconcile). With it,
    /// `updateFailures` counts UPDATE attempts rather than failed rescales.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_error_reason: Option<String>,
    /// How many rescales fail with `updateError` before UPDATE scale succeeds again (a one-shot
    /// error: `1`, e.g. a 409 Conflict); absent: every rescale fails until the next `scaleApi`.
    /// A rescale counts when the controller reports it failed (AbleToScale=False/FailedUpdateScale),
    /// so such a case is skipped on an implementation judged below profile `status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_failures: Option<u32>,
}

/// The expected outcome.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Expectations {
    /// The distinct successive replica counts over the whole run, starting with the initial one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory: Option<Vec<i32>>,
    /// The replica count after the last tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_replicas: Option<i32>,
    /// Checks at given ticks.
    #[serde(default)]
    pub at: Vec<ExpectAt>,
    /// The API server rejects the HPA at creation, with a message containing this text (e.g.
    /// `spec.minReplicas: Invalid value: 0: must be greater than or equal to 1`): no controller
    /// ever sees it, so nothing else is expected. Checked against the reference's API validation
    /// (the core target) and a real API server (the cluster target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<String>,
}

/// Checks after the tick at one virtual time.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectAt {
    /// The tick (must be a multiple of the sync period). Every expectation is checked: one whose
    /// tick never runs fails the case.
    #[schemars(range(max = MAX_VIRTUAL_SECONDS))]
    pub t: u32,
    /// The target's replicas after the tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// `status.desiredReplicas`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_replicas: Option<i32>,
    /// `status.currentReplicas`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_replicas: Option<i32>,
    /// `status.lastScaleTime` as a virtual time (seconds); `-1` means unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scale_time: Option<i64>,
    /// `status.observedGeneration` (1.37's `HPAGeneration`: the HPA's `metadata.generation`,
    /// which the API server sets to 1 at creation and raises at each change of the spec); `-1`
    /// means unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Conditions that must be present (others are not checked, unless `exactConditions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<ExpectCondition>>,
    /// `true`: `status.conditions` has exactly the types listed in `conditions`, in that order
    /// (upstream's tests compare the whole list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact_conditions: Option<bool>,
    /// Condition types that must be absent from `status.conditions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub absent_conditions: Option<Vec<String>>,
    /// Exactly the events of this tick, in order (`[]`: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<ExpectEvent>>,
    /// `status.currentMetrics`, one entry per spec metric, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_metrics: Option<Vec<ExpectMetric>>,
    /// The controller's memory after the tick (what upstream's unit tests inspect); needs an
    /// implementation that reports it (`memoryReport`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<ExpectMemory>,
}

impl ExpectAt {
    /// Whether it checks nothing but that its tick runs (every field beside `t` unset).
    pub fn is_empty(&self) -> bool {
        // Destructured, so that a new field must be named here.
        let ExpectAt {
            t: _,
            replicas,
            desired_replicas,
            current_replicas,
            last_scale_time,
            observed_generation,
            conditions,
            exact_conditions,
            absent_conditions,
            events,
            current_metrics,
            memory,
        } = self;
        replicas.is_none()
            && desired_replicas.is_none()
            && current_replicas.is_none()
            && last_scale_time.is_none()
            && observed_generation.is_none()
            && conditions.is_none()
            && exact_conditions.is_none()
            && absent_conditions.is_none()
            && events.is_none()
            && current_metrics.is_none()
            && memory.is_none()
    }
}

/// The controller's memory of one HPA after a tick; only the lists given are checked, each
/// exactly and in the controller's order (upstream reuses the slot of an outdated entry, so the
/// order says which slot a new entry took).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectMemory {
    /// The recorded recommendations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommendations: Option<Vec<SeedRecommendation>>,
    /// The recorded scale-ups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_up_events: Option<Vec<ExpectScaleEvent>>,
    /// The recorded scale-downs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down_events: Option<Vec<ExpectScaleEvent>>,
}

/// A recorded scale event in an expected memory.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectScaleEvent {
    /// Replicas added or removed (positive).
    #[schemars(range(min = 0, max = MAX_PODS))]
    pub change: i32,
    /// When (virtual seconds).
    #[schemars(range(min = -MAX_VIRTUAL_SECONDS, max = MAX_VIRTUAL_SECONDS))]
    pub at: i64,
    /// Whether the controller has marked it outdated (older than the longest policy period);
    /// upstream keeps such entries and reuses the last one's slot (default `false`).
    #[serde(default)]
    pub outdated: bool,
}

/// An expected condition.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectCondition {
    /// `AbleToScale`, `ScalingActive`, `ScalingLimited` or `ScaledToZero`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `"True"` or `"False"`.
    pub status: String,
    /// The reason, e.g. `ScaleDownStabilized`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The whole message, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// A substring the message must contain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_contains: Option<String>,
}

/// An expected event.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectEvent {
    /// The reason, e.g. `SuccessfulRescale`.
    pub reason: String,
    /// `Normal` or `Warning` (not checked when absent).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// A substring the message must contain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_contains: Option<String>,
    /// The whole message, exactly (give this or `messageContains`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl ExpectEvent {
    /// Whether a recorded event (type, reason, message) is this one.
    pub fn matches(&self, type_: &str, reason: &str, message: &str) -> bool {
        self.reason == reason
            && self.type_.as_ref().is_none_or(|ty| ty == type_)
            && self
                .message_contains
                .as_ref()
                .is_none_or(|m| message.contains(m.as_str()))
            && self.message.as_ref().is_none_or(|m| m == message)
    }

    /// How a failure shows it: `Normal SuccessfulRescale (message …)`, `*` for any type.
    pub fn describe(&self) -> String {
        let mut s = format!("{} {}", self.type_.as_deref().unwrap_or("*"), self.reason);
        if let Some(m) = &self.message_contains {
            s.push_str(&format!(
                " (message containing {})",
                crate::util::text::quote(m)
            ));
        }
        if let Some(m) = &self.message {
            s.push_str(&format!(" (message {})", crate::util::text::quote(m)));
        }
        s
    }
}

/// An expected `currentMetrics` entry; only the fields given are checked. Quantities compare by
/// value (`0.5` equals `500m`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectMetric {
    /// Which metric the status entry is, as traces name it: `cpu` (Resource), `app/cpu`
    /// (ContainerResource), `pods/<name>`, `<Kind>/<object> <name>` (Object), `external/<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// `current.averageUtilization`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub average_utilization: Option<i32>,
    /// `current.averageValue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub average_value: Option<String>,
    /// `current.value`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `true`: `averageValue` and `value` must be written exactly so (upstream's canonical form:
    /// BinarySI for memory, DecimalSI otherwise, e.g. `750Mi`, not `786432k`), not just equal in
    /// value.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub as_written: bool,
}
