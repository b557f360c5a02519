//! Controller settings: kube-controller-manager's HPA flags and the feature gates that change the
//! algorithm. The gates' defaults are each release's ([`crate::version`]); [`Default`] gives those of
//! [`KubernetesVersion::DEFAULT`].

use std::collections::BTreeMap;
use std::time::Duration;

use crate::version::KubernetesVersion;

/// Feature gates that change what the HPA controller or the API server does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureGates {
    /// `HPAConfigurableTolerance`: per-direction `behavior.scaleUp/scaleDown.tolerance`
    /// (alpha 1.33, beta and on by default since 1.35).
    pub hpa_configurable_tolerance: bool,
    /// `HPAScaleToZero`: `minReplicas: 0`, the `ScaledToZero` condition and scaling from zero
    /// (alpha and off by default since 1.16, beta and on in 1.37).
    pub hpa_scale_to_zero: bool,
    /// `PodLevelResources`: pod-level `spec.resources.requests` count for utilization
    /// (alpha 1.32, beta and on by default since 1.34).
    pub pod_level_resources: bool,
    /// `HPAGeneration` (beta and on in 1.37): every status write sets
    /// `status.observedGeneration` to the HPA's `metadata.generation`; a spec change (a new
    /// generation) is reconciled at once.
    pub hpa_generation: bool,
    /// `HPAOptimizedSelectorStore` (beta and on in 1.37): the selector-overlap check stops at the
    /// second HPA it finds.
    pub hpa_optimized_selector_store: bool,
    /// `StaleControllerConsistencyHPA` (beta and on in 1.37): a reconcile waits until the
    /// informer has seen the controller's own last status write. Queue behaviour, which no
    /// decision reads; known so that a case or a flag can name it.
    pub stale_controller_consistency_hpa: bool,
}

/// Every gate name this reference knows, in a stable order.
pub const GATE_NAMES: [&str; 6] = [
    "HPAConfigurableTolerance",
    "HPAGeneration",
    "HPAOptimizedSelectorStore",
    "HPAScaleToZero",
    "PodLevelResources",
    "StaleControllerConsistencyHPA",
];

/// An unknown feature-gate name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown feature gate {0:?} (known: HPAConfigurableTolerance, HPAGeneration, HPAOptimizedSelectorStore, HPAScaleToZero, PodLevelResources, StaleControllerConsistencyHPA)"
)]
pub struct UnknownGate(pub String);

impl FeatureGates {
    /// The value of a gate by its upstream name.
    pub fn get(&self, name: &str) -> Result<bool, UnknownGate> {
        match name {
            "HPAConfigurableTolerance" => Ok(self.hpa_configurable_tolerance),
            "HPAScaleToZero" => Ok(self.hpa_scale_to_zero),
            "PodLevelResources" => Ok(self.pod_level_resources),
            "HPAGeneration" => Ok(self.hpa_generation),
            "HPAOptimizedSelectorStore" => Ok(self.hpa_optimized_selector_store),
            "StaleControllerConsistencyHPA" => Ok(self.stale_controller_consistency_hpa),
            other => Err(UnknownGate(other.to_string())),
        }
    }

    /// Sets a gate by its upstream name.
    pub fn set(&mut self, name: &str, value: bool) -> Result<(), UnknownGate> {
        let slot = match name {
            "HPAConfigurableTolerance" => &mut self.hpa_configurable_tolerance,
            "HPAScaleToZero" => &mut self.hpa_scale_to_zero,
            "PodLevelResources" => &mut self.pod_level_resources,
            "HPAGeneration" => &mut self.hpa_generation,
            "HPAOptimizedSelectorStore" => &mut self.hpa_optimized_selector_store,
            "StaleControllerConsistencyHPA" => &mut self.stale_controller_consistency_hpa,
            other => return Err(UnknownGate(other.to_string())),
        };
        *slot = value;
        Ok(())
    }

    /// All gates as (name, value) pairs, in [`GATE_NAMES`] order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, bool)> + '_ {
        GATE_NAMES
            .iter()
            .map(|n| (*n, self.get(n).expect("known gate")))
    }
}

/// Parses `NAME=true|false` items (as in `--feature-gates A=true,B=false`), checking the names.
pub fn parse_gate_assignments(items: &[String]) -> Result<BTreeMap<String, bool>, String> {
    let mut out = BTreeMap::new();
    for item in items.iter().filter(|s| !s.is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| format!("feature gate {item:?} is not NAME=true|false"))?;
        let v: bool = v
            .parse()
            .map_err(|_| format!("feature gate {k}: {v:?} is not true or false"))?;
        FeatureGates::default().get(k).map_err(|e| e.to_string())?;
        out.insert(k.to_string(), v);
    }
    Ok(out)
}

impl Default for FeatureGates {
    fn default() -> Self {
        KubernetesVersion::DEFAULT.default_gates()
    }
}

/// The controller's settings: kube-controller-manager's `--horizontal-pod-autoscaler-*` flags.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `--horizontal-pod-autoscaler-sync-period` (default 15 s).
    pub sync_period: Duration,
    /// `--horizontal-pod-autoscaler-tolerance` (default 0.1).
    pub tolerance: f64,
    /// `--horizontal-pod-autoscaler-cpu-initialization-period` (default 5 min).
    pub cpu_initialization_period: Duration,
    /// `--horizontal-pod-autoscaler-initial-readiness-delay` (default 30 s).
    pub initial_readiness_delay: Duration,
    /// `--horizontal-pod-autoscaler-downscale-stabilization` (default 5 min).
    pub downscale_stabilization: Duration,
    /// Scale-up limit without `behavior`: `max(factor × current, minimum)`. Upstream hard-codes 2.0
    /// (its unit tests override it to 8).
    pub scale_up_limit_factor: f64,
    /// Scale-up limit minimum without `behavior` (upstream: 4.0).
    pub scale_up_limit_minimum: f64,
    /// Feature gates.
    pub gates: FeatureGates,
    /// The Kubernetes release whose controller this is: which upstream changes apply
    /// ([`KubernetesVersion::changes`]). The gates' defaults come from it too, but `gates` is
    /// what counts.
    pub version: KubernetesVersion,
}

impl Settings {
    /// The defaults of a release: the flags' defaults (the same in every known release) and the
    /// release's gate defaults.
    pub fn for_version(version: KubernetesVersion) -> Self {
        Settings {
            gates: version.default_gates(),
            version,
            ..Settings::default()
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            sync_period: Duration::from_secs(15),
            tolerance: 0.1,
            cpu_initialization_period: Duration::from_secs(300),
            initial_readiness_delay: Duration::from_secs(30),
            downscale_stabilization: Duration::from_secs(300),
            scale_up_limit_factor: 2.0,
            scale_up_limit_minimum: 4.0,
            gates: KubernetesVersion::DEFAULT.default_gates(),
            version: KubernetesVersion::DEFAULT,
        }
    }
}
