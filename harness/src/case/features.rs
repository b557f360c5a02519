//! Which implementation features a case needs beyond the basic decision (metrics, the
//! replica formula, min/max, the default stabilization): an `exec:` implementation declares the
//! features it has in `hello.features` (`harness/PROTOCOL.md`), and a case that needs one it does
//! not declare is skipped with the feature and the field that needs it, never failed.
//!
//! | feature | needed when the case … |
//! | --- | --- |
//! | `behavior` | sets `spec.behavior` (in `hpa` or an `hpaPatch`): policies, per-direction stabilization, `selectPolicy` |
//! | `containerResource` | has a `ContainerResource` metric (in `hpa` or an `hpaPatch`) |
//! | `memorySeeding` | seeds the controller's memory with a recorded recommendation or scale event (`memory:` with entries); a memory that records nothing — "seen before, nothing recorded" — needs no seeding: every implementation starts that way |
//! | `memoryReport` | expects the controller's memory after a tick (`expect.at[].memory`): the implementation reports it in each `result` when `start.reportMemory` asks |
//! | `severalHpas` | reconciles more HPAs beside its own (`alongside`): one session carries ticks of several HPAs (told apart by `namespace/name`), each kept in its own memory, with every pod of the namespace in each tick |
//! | `externalMetrics` | has an `External` metric (in `hpa`, an `hpaPatch` or an HPA `alongside`): many implementations read no `external.metrics.k8s.io`; the behaviour cases that use an External metric only as a vehicle have Object-metric twins |
//!
//! Feature gates (scale-to-zero, configurable tolerance, pod-level resources) are not features:
//! they have their own rules ([`super::gates`]).

use std::fmt;

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::gates::manifest_path;
use super::model::{CaseFile, MemorySeed};

/// A feature a case may need.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Feature {
    /// `spec.behavior`: scaling policies, per-direction stabilization windows, `selectPolicy`.
    Behavior,
    /// `ContainerResource` metrics.
    ContainerResource,
    /// Starting from a seeded memory with recorded recommendations or scale events.
    MemorySeeding,
    /// Reporting the memory after each tick, for `expect.at[].memory`.
    MemoryReport,
    /// Several HPAs in one session (`alongside`).
    SeveralHpas,
    /// `External` metrics (`external.metrics.k8s.io`).
    ExternalMetrics,
}

impl Feature {
    /// Every feature.
    pub const ALL: [Feature; 6] = [
        Feature::Behavior,
        Feature::ContainerResource,
        Feature::MemorySeeding,
        Feature::MemoryReport,
        Feature::SeveralHpas,
        Feature::ExternalMetrics,
    ];

    /// Whether an implementation has it only when it says so (`hello.features` listed): an
    /// implementation that lists no features has every feature but these, which came later.
    pub fn only_declared(self) -> bool {
        matches!(self, Feature::MemoryReport | Feature::SeveralHpas)
    }

    /// Its name in `hello.features`.
    pub fn as_str(self) -> &'static str {
        match self {
            Feature::Behavior => "behavior",
            Feature::ContainerResource => "containerResource",
            Feature::MemorySeeding => "memorySeeding",
            Feature::MemoryReport => "memoryReport",
            Feature::SeveralHpas => "severalHpas",
            Feature::ExternalMetrics => "externalMetrics",
        }
    }

    /// From its name in `hello.features` (`None` for a name this harness does not know, which
    /// is ignored).
    pub fn from_name(name: &str) -> Option<Feature> {
        Feature::ALL.into_iter().find(|f| f.as_str() == name)
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a seeded memory records something (a recommendation or a scale event), so that an
/// implementation needs [`Feature::MemorySeeding`] to start from it.
pub fn memory_records_something(m: &MemorySeed) -> bool {
    !(m.recommendations.is_empty()
        && m.scale_up_events.is_empty()
        && m.scale_down_events.is_empty())
}

/// The features a case needs, each with the field that needs it. `manifests` are the HPA as
/// written and after each `hpaPatch` (in time order).
pub fn features_needed(
    file: &CaseFile,
    manifests: &[HorizontalPodAutoscaler],
) -> Vec<(Feature, String)> {
    let mut out = Vec::new();
    if let Some(i) = manifests.iter().position(|h| h.spec.behavior.is_some()) {
        out.push((
            Feature::Behavior,
            format!("{}.spec.behavior", manifest_path(file, i)),
        ));
    }
    // The first metric of a type among the manifests: (manifest, metric index).
    let first = |hpas: &mut dyn Iterator<Item = &HorizontalPodAutoscaler>, kind: &str| {
        hpas.enumerate().find_map(|(i, h)| {
            let m = h
                .spec
                .metrics
                .iter()
                .flatten()
                .position(|m| m.type_ == kind)?;
            Some((i, m))
        })
    };
    if let Some((i, m)) = first(&mut manifests.iter(), "ContainerResource") {
        out.push((
            Feature::ContainerResource,
            format!("{}.spec.metrics[{m}]", manifest_path(file, i)),
        ));
    }
    if let Some((i, m)) = first(&mut manifests.iter(), "External") {
        out.push((
            Feature::ExternalMetrics,
            format!("{}.spec.metrics[{m}]", manifest_path(file, i)),
        ));
    } else if let Some((k, m)) = first(&mut file.alongside.iter().map(|a| &a.hpa), "External") {
        out.push((
            Feature::ExternalMetrics,
            format!("alongside[{k}].hpa.spec.metrics[{m}]"),
        ));
    }
    if file.memory.as_ref().is_some_and(memory_records_something) {
        out.push((Feature::MemorySeeding, "memory".into()));
    }
    if let Some(i) = file.expect.at.iter().position(|x| x.memory.is_some()) {
        out.push((Feature::MemoryReport, format!("expect.at[{i}].memory")));
    }
    if !file.alongside.is_empty() {
        out.push((Feature::SeveralHpas, "alongside".into()));
    }
    out
}
