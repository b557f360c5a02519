//! The step protocol's messages (see `harness/PROTOCOL.md`): JSON lines between the harness and an
//! implementation process. `harness/protocol.schema.json` is generated from these types.

use std::collections::BTreeMap;

use hpa_reference::metrics_api::MetricsApis;
use hpa_reference::{Memory, Recommendation, ScaleEvent, Settings};
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::{HorizontalPodAutoscaler, HorizontalPodAutoscalerStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time as KubeTime;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

use hpa_reference::time::{core_time, kube_time};

use crate::world::Snapshot;

pub mod pod_changes;
pub use pod_changes::{PodChanges, PodChangesLine};

/// The protocol version this harness speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// Messages from the harness to an implementation.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ToImplementation {
    /// Starts a case.
    Start(Start),
    /// One tick.
    Tick(Box<Tick>),
    /// The case is over and the process is kept for another: only to an implementation that
    /// declared `manyCases` in `hello`; it answers `ended`, then takes the next `start`.
    End(End),
    /// The case is over: exit.
    Stop,
}

/// Messages from an implementation to the harness.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum FromImplementation {
    /// The answer to `start`.
    Hello(Hello),
    /// The answer to `tick`.
    Result(TickResult),
    /// The answer to `end`: the case's state is gone, the next `start` may come.
    Ended(Ended),
}

/// `end` (only to an implementation whose `hello` declared `manyCases`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct End {
    /// The case that ended.
    pub case: String,
}

/// `ended`: the answer to `end`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Ended {
    /// The case that ended (optional; when given it must be the one `end` named).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
}

/// kube-controller-manager's HPA flags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProtocolSettings {
    /// `--horizontal-pod-autoscaler-sync-period`.
    pub sync_period_seconds: u64,
    /// `--horizontal-pod-autoscaler-tolerance`.
    pub tolerance: f64,
    /// `--horizontal-pod-autoscaler-cpu-initialization-period`.
    pub cpu_initialization_period_seconds: u64,
    /// `--horizontal-pod-autoscaler-initial-readiness-delay`.
    pub initial_readiness_delay_seconds: u64,
    /// `--horizontal-pod-autoscaler-downscale-stabilization`.
    pub downscale_stabilization_seconds: u64,
    /// Scale-up limit factor without `behavior` (upstream's package constant, 2; its unit tests
    /// use 8).
    #[serde(default = "two")]
    pub scale_up_limit_factor: f64,
    /// Scale-up limit minimum without `behavior` (upstream's package constant, 4).
    #[serde(default = "four")]
    pub scale_up_limit_minimum: f64,
}

fn two() -> f64 {
    2.0
}

fn four() -> f64 {
    4.0
}

/// A recommendation in seeded memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProtocolRecommendation {
    /// Replicas.
    pub replicas: i32,
    /// When.
    pub time: KubeTime,
}

/// A scale event in seeded or reported memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProtocolScaleEvent {
    /// Replicas added or removed.
    pub change: i32,
    /// When.
    pub time: KubeTime,
    /// Marked outdated by the controller (older than the longest policy period; upstream keeps
    /// such an entry and reuses its slot). Absent: `false`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub outdated: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The controller's memory of the HPA: to start with (`start.memory`) or after a tick
/// (`result.memory`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProtocolMemory {
    /// Recorded recommendations (empty: seen before, nothing recorded).
    pub recommendations: Vec<ProtocolRecommendation>,
    /// Recent scale-ups.
    pub scale_up_events: Vec<ProtocolScaleEvent>,
    /// Recent scale-downs.
    pub scale_down_events: Vec<ProtocolScaleEvent>,
}

/// `start`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Start {
    /// Protocol version.
    pub protocol: u32,
    /// The case's name.
    pub case: String,
    /// Feature gates to run with.
    pub feature_gates: BTreeMap<String, bool>,
    /// Controller settings.
    pub settings: ProtocolSettings,
    /// Memory to start with; `null`: never seen the HPA.
    pub memory: Option<ProtocolMemory>,
    /// The case expects the controller's memory: answer every `result` with `memory` (only sent
    /// to an implementation that declares the `memoryReport` feature; absent: `false`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub report_memory: bool,
    /// The harness takes a `result` without `status` as "no status written this tick": the
    /// HPA's status stays the tick's (absent: `false`, every result carries its status).
    #[serde(default, skip_serializing_if = "is_false")]
    pub unwritten_status: bool,
}

/// Who the implementation is.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Implementation {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
}

fn yes() -> bool {
    true
}

/// `hello`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    /// Protocol version.
    pub protocol: u32,
    /// Who.
    pub implementation: Implementation,
    /// The gates it runs with.
    pub feature_gates: BTreeMap<String, bool>,
    /// Whether it can seed its memory from a `start.memory` that records something (a memory
    /// that records nothing needs no seeding). `false` takes `memorySeeding` out of `features`.
    #[serde(default = "yes")]
    pub memory_seeding: bool,
    /// The conformance levels it supports (`replicas`, `status`, `full`; see
    /// `hpa_harness::profile`); absent: all of them. The highest level reached without a gap
    /// from `replicas` is its default profile. Names this harness does not know are ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub levels: Option<Vec<String>>,
    /// The features it has (`behavior`, `containerResource`, `memorySeeding`, `memoryReport`,
    /// `severalHpas`, `externalMetrics`; see `hpa_harness::case::features`); absent: all of them but
    /// `memoryReport` and `severalHpas`, which are only
    /// ever declared. A case that needs a feature not listed is skipped with the reason. Names
    /// this harness does not know are ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<Vec<String>>,
    /// Whether one process can serve many cases in sequence: after a case's last tick the
    /// harness then sends `end` (answered by `ended`) and the next case's `start` to the same
    /// process instead of `stop`. Absent or `false`: one process per case, `stop` after it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub many_cases: bool,
    /// Whether it takes ticks that leave out what did not change since the previous tick of the
    /// case (`tick.unchanged`). Absent or `false`: every tick is complete.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delta_ticks: bool,
    /// Whether it takes ticks that leave out the metrics APIs' answers when they are the
    /// previous tick's moved in time (`tick.unchanged` lists `metrics`). Absent or `false`: every
    /// tick carries its metrics.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delta_metrics: bool,
    /// Whether it takes ticks that say their pods as changes to the previous tick's of the case
    /// (`tick.podChanges`) instead of the whole list. Absent or `false`: a tick's pods are the
    /// whole list (or, with `deltaTicks`, left out as unchanged).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delta_pods: bool,
    /// The Kubernetes release whose HPA behaviour it implements (`1.37`; a patch such as
    /// `1.37.2` or a leading `v` is accepted). A run judging another release skips every case
    /// with the reason (run it with `--kubernetes-version` of this one); absent: not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
}

impl Hello {
    /// The highest level it supports, or why its `levels` are unusable.
    pub fn highest_level(&self) -> Result<crate::profile::Profile, String> {
        use crate::profile::Profile;
        let Some(names) = &self.levels else {
            return Ok(Profile::Full);
        };
        let declared: Vec<Profile> = names.iter().filter_map(|n| n.parse().ok()).collect();
        Profile::highest_of(&declared).ok_or_else(|| {
            format!(
                "hello.levels {names:?} does not include replicas, the level every implementation supports"
            )
        })
    }

    /// The features it declares (`memorySeeding: false` removes that one).
    pub fn declared_features(&self) -> std::collections::BTreeSet<crate::case::features::Feature> {
        use crate::case::features::Feature;
        let mut set: std::collections::BTreeSet<Feature> = match &self.features {
            // memoryReport and severalHpas came later: an implementation that lists nothing
            // has neither.
            None => Feature::ALL
                .into_iter()
                .filter(|f| !f.only_declared())
                .collect(),
            Some(names) => names.iter().filter_map(|n| Feature::from_name(n)).collect(),
        };
        if !self.memory_seeding {
            set.remove(&Feature::MemorySeeding);
        }
        set
    }
}

/// `tick`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tick {
    /// Virtual seconds.
    pub t: i64,
    /// The instant.
    pub now: KubeTime,
    /// The HPA as stored; absent only when `unchanged` lists `hpa`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hpa: Option<HorizontalPodAutoscaler>,
    /// The scale subresource (`null` when GET scale fails).
    pub scale: Option<Scale>,
    /// GET scale's error text.
    pub scale_error: Option<String>,
    /// UPDATE scale's error text this tick.
    pub scale_update_error: Option<String>,
    /// With `scaleUpdateError`: the failure is the API server's typed status error of this
    /// reason (`Conflict`: HTTP 409, which 1.34+ retries after a fresh GET), not a plain error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_update_error_reason: Option<String>,
    /// With `scaleUpdateErrorReason`: how many UPDATE attempts of this tick fail before the next
    /// one succeeds (`1`: the first only); absent: every attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_update_failures: Option<u32>,
    /// The pods; absent only when `unchanged` lists `pods` or `podChanges` says them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<Vec<Pod>>,
    /// The pods as changes to the previous tick's of the case, instead of `pods`: only to an
    /// implementation whose `hello` declared `deltaPods`, never on a case's first tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_changes: Option<PodChanges>,
    /// The metrics APIs' answers; absent only when `unchanged` lists `metrics`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricsApis>,
    /// Keys (`namespace/name`) of other HPAs whose selectors match these pods (upstream then
    /// reports `AmbiguousSelector`).
    #[serde(default)]
    pub other_hpas_selecting_pods: Vec<String>,
    /// The fields left out because they equal the previous tick's of the case (`hpa`, `pods`),
    /// or are its answers moved in time (`metrics`): only to an implementation whose `hello`
    /// declared `deltaTicks` (`hpa`, `pods`) or `deltaMetrics` (`metrics`), never on a case's
    /// first tick.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchanged: Vec<Unchanged>,
}

/// A field of `tick` that a delta tick may leave out (`tick.unchanged`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Unchanged {
    /// `hpa`: the HPA object, status included.
    Hpa,
    /// `pods`: the whole list, in the same order.
    Pods,
    /// `metrics`: the previous tick's answers with every timestamp in them moved by the time
    /// between the two ticks (`now` minus the previous `now`, whole seconds), nothing else
    /// changed (`MetricsApis::move_timestamps`).
    Metrics,
}

/// A `tick` line written from a snapshot without copying it: what `Tick` serializes to, with
/// `hpa`, `pods` and `metrics` left out when `unchanged` lists them.
#[derive(Serialize)]
#[serde(tag = "kind", rename = "tick", rename_all = "camelCase")]
pub struct TickLine<'a> {
    t: i64,
    now: KubeTime,
    #[serde(skip_serializing_if = "Option::is_none")]
    hpa: Option<&'a HorizontalPodAutoscaler>,
    scale: Option<&'a Scale>,
    scale_error: Option<&'a String>,
    scale_update_error: Option<&'a String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scale_update_error_reason: Option<&'a String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scale_update_failures: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pods: Option<&'a [Pod]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pod_changes: Option<&'a PodChangesLine<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics: Option<&'a MetricsApis>,
    other_hpas_selecting_pods: &'a [String],
    #[serde(skip_serializing_if = "<[Unchanged]>::is_empty")]
    unchanged: &'a [Unchanged],
}

impl<'a> TickLine<'a> {
    /// The tick for `s`, leaving out the fields `unchanged` lists, and saying its pods as
    /// `pod_changes` when there are.
    pub fn new(
        s: &'a Snapshot,
        unchanged: &'a [Unchanged],
        pod_changes: Option<&'a PodChangesLine<'a>>,
    ) -> Self {
        TickLine {
            t: s.t,
            now: kube_time(s.now),
            hpa: (!unchanged.contains(&Unchanged::Hpa)).then_some(&s.hpa),
            scale: s.scale.as_ref().ok(),
            scale_error: s.scale.as_ref().err(),
            scale_update_error: s.scale_update_error.as_ref(),
            scale_update_error_reason: s.scale_update_error_reason.as_ref(),
            scale_update_failures: s.scale_update_failures,
            pods: (pod_changes.is_none() && !unchanged.contains(&Unchanged::Pods))
                .then_some(&s.pods[..]),
            pod_changes,
            metrics: (!unchanged.contains(&Unchanged::Metrics)).then_some(&s.metrics),
            other_hpas_selecting_pods: &s.other_hpas_selecting_pods,
            unchanged,
        }
    }
}

/// An event the implementation recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProtocolEvent {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Reason.
    pub reason: String,
    /// Message.
    pub message: String,
}

/// `result`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TickResult {
    /// The tick answered.
    pub t: i64,
    /// A successful scale write.
    pub scaled_to: Option<i32>,
    /// The HPA status written; absent only when `start.unwrittenStatus` allows it and the
    /// status after this tick is the tick's HPA's (none written, or the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<HorizontalPodAutoscalerStatus>,
    /// Events recorded this tick.
    pub events: Vec<ProtocolEvent>,
    /// The controller's memory of the HPA after this tick, when `start.reportMemory` asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<ProtocolMemory>,
}

impl ProtocolSettings {
    /// From core settings.
    pub fn from_settings(s: &Settings) -> Self {
        ProtocolSettings {
            sync_period_seconds: s.sync_period.as_secs(),
            tolerance: s.tolerance,
            cpu_initialization_period_seconds: s.cpu_initialization_period.as_secs(),
            initial_readiness_delay_seconds: s.initial_readiness_delay.as_secs(),
            downscale_stabilization_seconds: s.downscale_stabilization.as_secs(),
            scale_up_limit_factor: s.scale_up_limit_factor,
            scale_up_limit_minimum: s.scale_up_limit_minimum,
        }
    }

    /// To core settings of `version`, with these gates over its defaults.
    pub fn to_settings(
        &self,
        gates: &BTreeMap<String, bool>,
        version: hpa_reference::KubernetesVersion,
    ) -> Result<Settings, String> {
        let mut g = version.default_gates();
        for (k, v) in gates {
            g.set(k, *v).map_err(|e| e.to_string())?;
        }
        Ok(Settings {
            sync_period: Duration::from_secs(self.sync_period_seconds),
            tolerance: self.tolerance,
            cpu_initialization_period: Duration::from_secs(self.cpu_initialization_period_seconds),
            initial_readiness_delay: Duration::from_secs(self.initial_readiness_delay_seconds),
            downscale_stabilization: Duration::from_secs(self.downscale_stabilization_seconds),
            scale_up_limit_factor: self.scale_up_limit_factor,
            scale_up_limit_minimum: self.scale_up_limit_minimum,
            gates: g,
            version,
        })
    }
}

impl ProtocolMemory {
    /// From core memory (`None` for a controller that never saw the HPA).
    pub fn from_memory(m: &Memory) -> Option<Self> {
        let ev = |e: &ScaleEvent| ProtocolScaleEvent {
            change: e.change,
            time: kube_time(e.timestamp),
            outdated: e.outdated,
        };
        let recs = m.recommendations.as_ref()?;
        Some(ProtocolMemory {
            recommendations: recs
                .iter()
                .map(|r| ProtocolRecommendation {
                    replicas: r.replicas,
                    time: kube_time(r.timestamp),
                })
                .collect(),
            scale_up_events: m.scale_up_events.iter().map(ev).collect(),
            scale_down_events: m.scale_down_events.iter().map(ev).collect(),
        })
    }

    /// To core memory.
    pub fn to_memory(m: Option<&Self>) -> Memory {
        let Some(m) = m else {
            return Memory::default();
        };
        let ev = |e: &ProtocolScaleEvent| ScaleEvent {
            change: e.change,
            timestamp: core_time(&e.time),
            outdated: e.outdated,
        };
        Memory {
            recommendations: Some(
                m.recommendations
                    .iter()
                    .map(|r| Recommendation {
                        replicas: r.replicas,
                        timestamp: core_time(&r.time),
                    })
                    .collect(),
            ),
            scale_up_events: m.scale_up_events.iter().map(ev).collect(),
            scale_down_events: m.scale_down_events.iter().map(ev).collect(),
        }
    }
}

impl Tick {
    /// The message for a snapshot.
    pub fn from_snapshot(s: &Snapshot) -> Tick {
        Tick {
            t: s.t,
            now: kube_time(s.now),
            hpa: Some(s.hpa.clone()),
            scale: s.scale.as_ref().ok().cloned(),
            scale_error: s.scale.as_ref().err().cloned(),
            scale_update_error: s.scale_update_error.clone(),
            scale_update_error_reason: s.scale_update_error_reason.clone(),
            scale_update_failures: s.scale_update_failures,
            pods: Some(s.pods.to_vec()),
            pod_changes: None,
            metrics: Some(s.metrics.clone()),
            other_hpas_selecting_pods: s.other_hpas_selecting_pods.clone(),
            unchanged: Vec::new(),
        }
    }

    /// The snapshot a message describes; `previous` is the snapshot of the case's previous tick,
    /// which fills in what a delta tick leaves out (`unchanged`).
    pub fn into_snapshot(self, previous: Option<&Snapshot>) -> Result<Snapshot, String> {
        let from_previous = |field: Unchanged, name: &str| -> Result<&Snapshot, String> {
            let listed = self.unchanged.contains(&field);
            match previous {
                Some(p) if listed => Ok(p),
                None if listed => Err(format!(
                    "tick at t={} lists {name} as unchanged, but it is the case's first tick",
                    self.t
                )),
                _ => Err(format!(
                    "tick at t={} has no {name} and does not list it as unchanged",
                    self.t
                )),
            }
        };
        let hpa = match self.hpa {
            Some(h) => h,
            None => from_previous(Unchanged::Hpa, "hpa")?.hpa.clone(),
        };
        let pods = match (self.pods, self.pod_changes) {
            (Some(p), None) => std::sync::Arc::new(p),
            (None, None) => from_previous(Unchanged::Pods, "pods")?.pods.clone(),
            (Some(_), Some(_)) => {
                return Err(format!("tick at t={} has both pods and podChanges", self.t));
            }
            (None, Some(changes)) => {
                let Some(previous) = previous else {
                    return Err(format!(
                        "tick at t={} has podChanges, but it is the case's first tick",
                        self.t
                    ));
                };
                if self.unchanged.contains(&Unchanged::Pods) {
                    return Err(format!(
                        "tick at t={} has podChanges and lists pods as unchanged",
                        self.t
                    ));
                }
                let pods = changes
                    .apply(&previous.pods)
                    .map_err(|e| format!("tick at t={}: {e}", self.t))?;
                std::sync::Arc::new(pods)
            }
        };
        let now = core_time(&self.now);
        let metrics = match self.metrics {
            Some(m) => m,
            None => {
                let previous = from_previous(Unchanged::Metrics, "metrics")?;
                let mut m = previous.metrics.clone();
                let by = now.as_micros().saturating_sub(previous.now.as_micros());
                if !m.move_timestamps(by) {
                    return Err(format!(
                        "tick at t={} lists metrics as unchanged, but its timestamps moved by {by} µs leave the range of a timestamp",
                        self.t
                    ));
                }
                m
            }
        };
        Ok(Snapshot {
            t: self.t,
            now,
            hpa,
            scale: match (self.scale, self.scale_error) {
                (_, Some(e)) => Err(e),
                (Some(s), None) => Ok(s),
                (None, None) => Err("the scale was not provided".into()),
            },
            scale_update_error: self.scale_update_error,
            scale_update_error_reason: self.scale_update_error_reason,
            scale_update_failures: self.scale_update_failures,
            pods,
            metrics,
            other_hpas_selecting_pods: self.other_hpas_selecting_pods,
        })
    }
}

/// The number an answer gave for `key`, as it was written on the line (for messages).
fn raw_number<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let quoted = format!("\"{key}\"");
    let rest = &line[line.find(&quoted)? + quoted.len()..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// Decodes one line an implementation answered. The error says in words what is wrong; a
/// replica count that is not a 32-bit integer is named and shown as it was sent.
pub fn decode_answer(line: &str) -> Result<FromImplementation, String> {
    // Nearly every answer is a result, and implementations write its kind first (the Go kit
    // always does): such a line is read straight into a TickResult, which skips `kind` as it
    // skips any field it does not know, instead of into serde's buffered copy of the whole
    // message first and the variant from that. Any other line, and a result this way refuses,
    // goes the general way, which gives the error.
    if line.starts_with(r#"{"kind":"result","#)
        && let Ok(result) = serde_json::from_str::<TickResult>(line)
    {
        return Ok(FromImplementation::Result(result));
    }
    decode_any_answer(line)
}

/// [`decode_answer`] through the tagged message type, whatever the line.
fn decode_any_answer(line: &str) -> Result<FromImplementation, String> {
    serde_json::from_str::<FromImplementation>(line).map_err(|e| {
        let out_of_range = serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|v| v.get("scaledTo").cloned())
            .filter(|n| n.is_number() && n.as_i64().and_then(|n| i32::try_from(n).ok()).is_none());
        match (out_of_range, raw_number(line, "scaledTo")) {
            (Some(n), raw) => format!(
                "answered scaledTo {}, which is not a replica count (an integer from 0 to {})",
                raw.map_or_else(|| n.to_string(), str::to_string),
                i32::MAX
            ),
            (None, _) => format!("answered something that is not a protocol message ({e})"),
        }
    })
}

/// The JSON Schema of every protocol message (`harness/protocol.schema.json`).
pub fn schema_json() -> String {
    /// Any step-protocol message.
    #[derive(JsonSchema)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum StepProtocolMessage {
        /// Harness → implementation.
        ToImplementation(ToImplementation),
        /// Implementation → harness.
        FromImplementation(FromImplementation),
    }
    let schema = schemars::schema_for!(StepProtocolMessage);
    let mut s = serde_json::to_string_pretty(&schema).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(t: i64) -> Snapshot {
        let case = crate::case::load_case_text(
            std::path::Path::new("delta.yaml"),
            include_str!("../../cases/behavior/policy-walkdown.yaml"),
        )
        .expect("case");
        crate::world::World::new(&case).snapshot(t)
    }

    fn line(v: &impl Serialize) -> String {
        serde_json::to_string(v).expect("json")
    }

    /// The tick a line carries.
    fn decode(text: &str) -> Tick {
        match serde_json::from_str(text) {
            Ok(ToImplementation::Tick(tick)) => *tick,
            other => panic!("not a tick: {other:?}"),
        }
    }

    /// A result read straight (its kind first) is the result the tagged message type reads, and
    /// what that way refuses is refused with its error.
    #[test]
    fn a_result_read_straight_is_the_tagged_messages_result() {
        let ready = r#"{"type":"AbleToScale","status":"True","lastTransitionTime":"2000-01-01T00:00:00Z","reason":"SucceededRescale","message":"m"}"#;
        let answers = [
            r#"{"kind":"result","t":15,"scaledTo":null,"status":{"currentReplicas":3,"desiredReplicas":3},"events":[]}"#.to_string(),
            format!(
                r#"{{"kind":"result","t":30,"scaledTo":6,"status":{{"lastScaleTime":"2000-01-01T00:00:30Z","currentReplicas":3,"desiredReplicas":6,"currentMetrics":[],"conditions":[{ready}]}},"events":[{{"type":"Normal","reason":"SuccessfulRescale","message":"New size: 6"}}],"memory":{{"recommendations":[{{"replicas":6,"time":"2000-01-01T00:00:30Z"}}],"scaleUpEvents":[],"scaleDownEvents":[]}},"extra":{{"ignored":[1,2]}}}}"#
            ),
            r#"{"kind":"result","t":0,"status":{"currentReplicas":0,"desiredReplicas":0},"events":[]}"#.to_string(),
            r#"{"t":45,"kind":"result","scaledTo":2,"status":{"currentReplicas":2,"desiredReplicas":2},"events":[]}"#.to_string(),
            r#"{"kind":"hello","protocol":1,"implementation":{"name":"x","version":"1"},"featureGates":{},"memorySeeding":false,"features":[]}"#.to_string(),
            r#"{"kind":"ended","case":"c"}"#.to_string(),
        ];
        for answer in &answers {
            let straight = decode_answer(answer).expect(answer);
            let tagged = decode_any_answer(answer).expect(answer);
            assert_eq!(format!("{straight:?}"), format!("{tagged:?}"), "{answer}");
        }
        for refused in [
            r#"{"kind":"result","t":15,"scaledTo":4294967296,"status":{"currentReplicas":1,"desiredReplicas":1},"events":[]}"#,
            r#"{"kind":"result","t":"15","status":{"currentReplicas":1,"desiredReplicas":1},"events":[]}"#,
            r#"{"kind":"result","t":15,"status":{"currentReplicas":1,"desiredReplicas":1}}"#,
            r#"{"kind":"result","t":15,"t":16,"status":{"currentReplicas":1,"desiredReplicas":1},"events":[]}"#,
            r#"{"kind":"result","t":15"#,
            r#"{"kind":"resultant","t":15}"#,
        ] {
            let straight = decode_answer(refused).expect_err(refused);
            assert_eq!(
                straight,
                decode_any_answer(refused).expect_err(refused),
                "{refused}"
            );
        }
    }

    #[test]
    fn a_complete_tick_line_is_the_tick_message() {
        let s = snapshot(15);
        assert_eq!(
            line(&TickLine::new(&s, &[], None)),
            line(&ToImplementation::Tick(Box::new(Tick::from_snapshot(&s))))
        );
    }

    #[test]
    fn a_delta_tick_leaves_out_what_it_lists_and_is_rebuilt_from_the_previous_tick() {
        let previous = snapshot(0);
        let s = snapshot(15);
        let both = [Unchanged::Hpa, Unchanged::Pods];
        let text = line(&TickLine::new(&s, &both, None));
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert!(v.get("hpa").is_none() && v.get("pods").is_none(), "{text}");
        assert_eq!(v["unchanged"], serde_json::json!(["hpa", "pods"]));
        let Ok(ToImplementation::Tick(tick)) = serde_json::from_str(&text) else {
            panic!("not a tick: {text}");
        };
        let rebuilt = tick.into_snapshot(Some(&previous)).expect("rebuilt");
        assert_eq!(
            line(&TickLine::new(&rebuilt, &[], None)),
            line(&TickLine::new(&s, &[], None))
        );

        // Only the pods left out: the HPA comes from the line.
        let text = line(&TickLine::new(&s, &[Unchanged::Pods], None));
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert!(v.get("hpa").is_some() && v.get("pods").is_none(), "{text}");
    }

    #[test]
    fn a_tick_without_its_metrics_has_the_previous_ticks_moved_in_time() {
        let previous = snapshot(0);
        let s = snapshot(15);
        let mut moved = previous.metrics.clone();
        assert!(moved.move_timestamps(15_000_000));
        assert!(!moved.resource.items.is_empty());
        assert_eq!(
            moved, s.metrics,
            "the walk-down's first two ticks show the same load"
        );
        let text = line(&TickLine::new(&s, &[Unchanged::Metrics], None));
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert!(
            v.get("metrics").is_none() && v.get("pods").is_some(),
            "{text}"
        );
        assert_eq!(v["unchanged"], serde_json::json!(["metrics"]));
        let rebuilt = decode(&text)
            .into_snapshot(Some(&previous))
            .expect("rebuilt");
        assert_eq!(
            line(&TickLine::new(&rebuilt, &[], None)),
            line(&TickLine::new(&s, &[], None))
        );
        // Moved by the time between the two ticks: from a previous tick 5 s earlier, 5 s.
        let mut earlier = previous.clone();
        earlier.now = hpa_reference::Time::from_micros(s.now.as_micros() - 5_000_000);
        let rebuilt = decode(&text)
            .into_snapshot(Some(&earlier))
            .expect("rebuilt");
        let stamp = |m: &MetricsApis| core_time(&m.resource.items[0].timestamp).as_micros();
        assert_eq!(
            stamp(&rebuilt.metrics),
            stamp(&previous.metrics) + 5_000_000
        );
        assert_eq!(
            decode(&text).into_snapshot(None).err().as_deref(),
            Some("tick at t=15 lists metrics as unchanged, but it is the case's first tick")
        );
        let mut v: serde_json::Value =
            serde_json::from_str(&line(&TickLine::new(&s, &[], None))).expect("json");
        v.as_object_mut().expect("object").remove("metrics");
        assert_eq!(
            decode(&v.to_string())
                .into_snapshot(Some(&previous))
                .err()
                .as_deref(),
            Some("tick at t=15 has no metrics and does not list it as unchanged")
        );
    }

    #[test]
    fn a_tick_saying_its_pods_as_changes_has_the_previous_ticks_changed() {
        let previous = snapshot(0);
        let mut s = snapshot(15);
        // One pod gone, one changed, one new.
        let mut pods = s.pods.to_vec();
        assert!(pods.len() >= 3, "the walk-down runs several pods");
        pods.remove(1);
        pods[0].metadata.labels = Some([("app".to_string(), "other".to_string())].into());
        let mut new = pods[1].clone();
        new.metadata.name = Some("web-new".into());
        pods.push(new);
        s.pods = std::sync::Arc::new(pods);
        let changes = pod_changes::diff(&previous.pods, &s.pods).expect("expressible");
        assert_eq!((changes.removed.len(), changes.set.len()), (1, 2));
        let text = line(&TickLine::new(&s, &[Unchanged::Hpa], Some(&changes)));
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert!(
            v.get("pods").is_none() && v["podChanges"]["set"].as_array().map(Vec::len) == Some(2),
            "{text}"
        );
        let rebuilt = decode(&text)
            .into_snapshot(Some(&previous))
            .expect("rebuilt");
        assert_eq!(
            line(&TickLine::new(&rebuilt, &[], None)),
            line(&TickLine::new(&s, &[], None))
        );
        assert_eq!(
            decode(&text).into_snapshot(None).err().as_deref(),
            Some("tick at t=15 lists hpa as unchanged, but it is the case's first tick")
        );
        let only_pods = line(&TickLine::new(&s, &[], Some(&changes)));
        assert_eq!(
            decode(&only_pods).into_snapshot(None).err().as_deref(),
            Some("tick at t=15 has podChanges, but it is the case's first tick")
        );
        let mut both: serde_json::Value = serde_json::from_str(&only_pods).expect("json");
        both["pods"] = serde_json::to_value(&s.pods[..]).expect("pods");
        assert_eq!(
            decode(&both.to_string())
                .into_snapshot(Some(&previous))
                .err()
                .as_deref(),
            Some("tick at t=15 has both pods and podChanges")
        );
        let listed = line(&TickLine::new(&s, &[Unchanged::Pods], Some(&changes)));
        assert_eq!(
            decode(&listed)
                .into_snapshot(Some(&previous))
                .err()
                .as_deref(),
            Some("tick at t=15 has podChanges and lists pods as unchanged")
        );
        // Changes that do not fit the previous tick fail it with the reason.
        let mut stranger = previous.clone();
        stranger.pods = std::sync::Arc::new(previous.pods[2..].to_vec());
        assert_eq!(
            decode(&only_pods)
                .into_snapshot(Some(&stranger))
                .err()
                .as_deref(),
            Some(
                "tick at t=15: podChanges removes web-0001, which the previous tick does not have"
            )
        );
    }

    #[test]
    fn a_delta_tick_without_a_previous_tick_or_a_missing_unlisted_field_is_an_error() {
        let s = snapshot(15);
        let first = decode(&line(&TickLine::new(&s, &[Unchanged::Hpa], None)));
        assert_eq!(
            first.into_snapshot(None).err().as_deref(),
            Some("tick at t=15 lists hpa as unchanged, but it is the case's first tick")
        );
        let mut v: serde_json::Value =
            serde_json::from_str(&line(&TickLine::new(&s, &[], None))).expect("json");
        v.as_object_mut().expect("object").remove("pods");
        let missing = decode(&v.to_string());
        assert_eq!(
            missing.into_snapshot(Some(&s)).err().as_deref(),
            Some("tick at t=15 has no pods and does not list it as unchanged")
        );
    }
}
