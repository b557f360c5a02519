//! Which feature gates a case uses, and with which value: the gates it declares in
//! `featureGates:`, and the gates the fields it sets depend on (it is skipped, never failed, on a
//! target that runs such a gate with the other value):
//!
//! | field | gate (value) |
//! | --- | --- |
//! | `behavior.scaleUp.tolerance` / `behavior.scaleDown.tolerance` (also via `hpaPatch`) | `HPAConfigurableTolerance` (true) |
//! | `minReplicas: 0` (also via `hpaPatch`) | `HPAScaleToZero` (true) |
//! | `workload.pod.requests` (pod-level resources) | `PodLevelResources` (true) |
//!
//! A declared value wins over a detected one (a case may show what happens with a gate off). A
//! case that depends on a gate in a way these fields do not reveal declares it; `lint` asks every
//! corpus case to declare the gates it uses, so that a reader sees them.

use std::collections::BTreeMap;

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;

use super::model::CaseFile;

/// How a case uses a gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateUse {
    /// The value the case needs.
    pub value: bool,
    /// Why: `declared in featureGates`, or the field that needs it.
    pub because: String,
    /// The field that needs it (a path in the case file), when detected rather than declared.
    pub detected_at: Option<String>,
}

fn sets_tolerance(hpa: &HorizontalPodAutoscaler) -> Option<&'static str> {
    let b = hpa.spec.behavior.as_ref()?;
    if b.scale_up.as_ref().is_some_and(|r| r.tolerance.is_some()) {
        Some("scaleUp")
    } else if b.scale_down.as_ref().is_some_and(|r| r.tolerance.is_some()) {
        Some("scaleDown")
    } else {
        None
    }
}

/// Where a manifest is in the case file: `hpa`, or the `hpaPatch` of a timeline entry.
pub(crate) fn manifest_path(file: &CaseFile, manifest: usize) -> String {
    if manifest == 0 {
        return "hpa".into();
    }
    let mut patches: Vec<(usize, u32)> = file
        .timeline
        .iter()
        .enumerate()
        .filter(|(_, e)| e.hpa_patch.is_some())
        .map(|(i, e)| (i, e.at))
        .collect();
    patches.sort_by_key(|(_, at)| *at);
    patches
        .get(manifest - 1)
        .map_or("hpa".into(), |(i, _)| format!("timeline[{i}].hpaPatch"))
}

/// The gates a case uses. `manifests` are the HPA as written and after each `hpaPatch` (in
/// time order).
pub fn gates_used(
    file: &CaseFile,
    manifests: &[HorizontalPodAutoscaler],
) -> BTreeMap<String, GateUse> {
    let mut used = BTreeMap::new();
    let mut detect = |gate: &str, at: String| {
        used.entry(gate.to_string()).or_insert(GateUse {
            value: true,
            because: format!("it sets {at}"),
            detected_at: Some(at),
        });
    };
    if let Some((i, dir)) = manifests
        .iter()
        .enumerate()
        .find_map(|(i, h)| sets_tolerance(h).map(|d| (i, d)))
    {
        let at = manifest_path(file, i);
        detect(
            "HPAConfigurableTolerance",
            format!("{at}.spec.behavior.{dir}.tolerance"),
        );
    }
    if let Some(i) = manifests
        .iter()
        .position(|h| h.spec.min_replicas == Some(0))
    {
        let at = manifest_path(file, i);
        detect("HPAScaleToZero", format!("{at}.spec.minReplicas"));
    }
    if file
        .workload
        .pod
        .requests
        .as_ref()
        .is_some_and(|r| !r.is_empty())
    {
        detect("PodLevelResources", "workload.pod.requests".into());
    }
    for (gate, value) in &file.feature_gates {
        used.insert(
            gate.clone(),
            GateUse {
                value: *value,
                because: "declared in featureGates".into(),
                detected_at: None,
            },
        );
    }
    used
}
