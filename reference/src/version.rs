//! Kubernetes releases as data, in one home: the minors whose HPA this project knows (1.32 to
//! 1.37), the patch of each that upstream's controller is built from (`adapters/upstream/versions`),
//! and each one's feature-gate defaults (`pkg/features/kube_features.go` of that release).
//!
//! Everything else that depends on the release asks [`KubernetesVersion`]; nothing compares
//! version numbers elsewhere. What the controller does differently in a release is a named switch
//! of [`Changes`] ([`KubernetesVersion::changes`]), each tied to the upstream change that made it;
//! the decision core reads those switches, never a version. [`KubernetesVersion::DEFAULT`] is the
//! release the reference follows when none is named.
//!
//! A new minor (docs/versions.md, "A new minor"): add a variant, its row in
//! [`KubernetesVersion::ALL`], its patch and its gate defaults below, a switch in [`Changes`] for
//! each behaviour it changes, and its module description under `adapters/upstream/versions/`.

use std::fmt;
use std::str::FromStr;

use crate::settings::FeatureGates;

/// A Kubernetes minor release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KubernetesVersion {
    /// 1.32 (the oldest minor still served with patches when this project began its matrix).
    V1_32,
    /// 1.33.
    V1_33,
    /// 1.34.
    V1_34,
    /// 1.35.
    V1_35,
    /// 1.36.
    V1_36,
    /// 1.37.
    V1_37,
}

/// A version this project does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown Kubernetes version {0:?} (known: 1.32, 1.33, 1.34, 1.35, 1.36, 1.37)")]
pub struct UnknownVersion(pub String);

impl KubernetesVersion {
    /// Every known minor, oldest first.
    pub const ALL: [KubernetesVersion; 6] = [
        KubernetesVersion::V1_32,
        KubernetesVersion::V1_33,
        KubernetesVersion::V1_34,
        KubernetesVersion::V1_35,
        KubernetesVersion::V1_36,
        KubernetesVersion::V1_37,
    ];

    /// The release the reference follows when none is named: the current release, whose
    /// behaviour the decision core models and the corpus has been confirmed on by running
    /// upstream's controller of that release.
    pub const DEFAULT: KubernetesVersion = KubernetesVersion::V1_37;

    /// The newest known release.
    pub const NEWEST: KubernetesVersion = KubernetesVersion::V1_37;

    /// `1.36`.
    pub const fn name(self) -> &'static str {
        match self {
            KubernetesVersion::V1_32 => "1.32",
            KubernetesVersion::V1_33 => "1.33",
            KubernetesVersion::V1_34 => "1.34",
            KubernetesVersion::V1_35 => "1.35",
            KubernetesVersion::V1_36 => "1.36",
            KubernetesVersion::V1_37 => "1.37",
        }
    }

    /// The patch release upstream's controller is built from for this minor (the newest the Go
    /// module proxy serves; `adapters/upstream/versions/<patch>`).
    pub const fn upstream_patch(self) -> &'static str {
        match self {
            KubernetesVersion::V1_32 => "1.32.13",
            KubernetesVersion::V1_33 => "1.33.13",
            KubernetesVersion::V1_34 => "1.34.4",
            KubernetesVersion::V1_35 => "1.35.4",
            KubernetesVersion::V1_36 => "1.36.4",
            KubernetesVersion::V1_37 => "1.37.2",
        }
    }

    /// The defaults of the gates the reference reads, as this release's `kube_features.go` sets
    /// them. A gate the release does not have yet is off.
    pub const fn default_gates(self) -> FeatureGates {
        use KubernetesVersion::*;
        FeatureGates {
            // Alpha in 1.33 (#130797), beta and on in 1.35 (#133128), GA in 1.37 (#140107).
            hpa_configurable_tolerance: matches!(self, V1_35 | V1_36 | V1_37),
            // Alpha and off since 1.16; beta and on in 1.37 (#139648).
            hpa_scale_to_zero: matches!(self, V1_37),
            // Alpha in 1.32 (the HPA ignores it there), beta and on in 1.34 (#132430).
            pod_level_resources: matches!(self, V1_34 | V1_35 | V1_36 | V1_37),
            // New in 1.37, beta and on (#138228, #138653).
            hpa_generation: matches!(self, V1_37),
            // New in 1.37, beta and on (#139142).
            hpa_optimized_selector_store: matches!(self, V1_37),
            // New in 1.37, beta and on (#139025).
            stale_controller_consistency_hpa: matches!(self, V1_37),
        }
    }

    /// Whether this release has the gate at all (`HPAConfigurableTolerance` arrived in 1.33,
    /// the three gates of 1.37 in 1.37).
    pub fn has_gate(self, name: &str) -> bool {
        match name {
            "HPAConfigurableTolerance" => self >= KubernetesVersion::V1_33,
            "HPAGeneration" | "HPAOptimizedSelectorStore" | "StaleControllerConsistencyHPA" => {
                self >= KubernetesVersion::V1_37
            }
            _ => FeatureGates::default().get(name).is_ok(),
        }
    }

    /// Whether this release locks the gate to its default (a GA gate): asking for the other value
    /// is refused. `HPAConfigurableTolerance` is GA and locked on in 1.37 (#140107).
    pub fn locks_gate(self, name: &str) -> bool {
        name == "HPAConfigurableTolerance" && self >= KubernetesVersion::V1_37
    }

    /// How this release's API server words and orders `maxReplicas` below 1
    /// ([`crate::validation::ReplicaBounds`]): 1.32–1.35 `must be greater than 0`, 1.36
    /// `Required value: must be set and greater than 0` / `must be greater than or equal to 1`,
    /// 1.37 declarative, after every other error. API-server behaviour, not the
    /// controller's.
    pub fn replica_bounds(self) -> crate::validation::ReplicaBounds {
        use crate::validation::ReplicaBounds;
        match self {
            KubernetesVersion::V1_37 => ReplicaBounds::DeclarativeLast,
            KubernetesVersion::V1_36 => ReplicaBounds::RequiredOrAtLeastOne,
            _ => ReplicaBounds::GreaterThanZero,
        }
    }

    /// What this release's HPA controller does differently from the others: one switch per
    /// upstream change, on from the release that made it.
    pub fn changes(self) -> Changes {
        let at_least = |v: KubernetesVersion| self >= v;
        use KubernetesVersion::*;
        Changes {
            per_direction_tolerance: at_least(V1_33),
            missing_container_metric_is_a_missing_pod: at_least(V1_33),
            object_average_status_names_the_object: at_least(V1_33),
            pod_level_requests: at_least(V1_34),
            memory_average_in_binary_si: at_least(V1_34),
            external_average_sum_saturates: at_least(V1_34),
            scale_update_retries_on_conflict: at_least(V1_34),
            ratio_replicas_and_external_sum_capped: at_least(V1_35),
            named_container_must_exist: at_least(V1_35),
            scale_to_zero_rework: at_least(V1_36),
            object_metric_error_names_the_object_first: at_least(V1_37),
            selector_overlap_says_more_than_one: at_least(V1_37),
            new_hpa_reconciled_at_once: at_least(V1_37),
        }
    }
}

/// The upstream changes between 1.32 and 1.37 that a case can see in what the HPA controller
/// decides or writes, each a switch that is on from the release that made it
/// ([`KubernetesVersion::changes`]). The decision core reads these, never a version number; a
/// change that a feature gate also controls is on only when both say so. `cases/COVERAGE.md`
/// ("Kubernetes versions") lists the cases that pin each one on both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Changes {
    /// 1.33 (#130797, which also added `HPAConfigurableTolerance`): "no change" when
    /// `(1 − down) ≤ ratio ≤ (1 + up)`. Before, when `|1 − ratio| ≤ tolerance` in float64, so a
    /// ratio of exactly 1.1 (`|1 − 1.1|` = 0.10000000000000009) scaled up.
    pub per_direction_tolerance: bool,
    /// 1.33 (#127193): a pod whose metrics lack the ContainerResource's container is a missing
    /// pod. Before, the whole metric failed: `failed to get container metrics: container C not
    /// present in metrics for pod NS/P`.
    pub missing_container_metric_is_a_missing_pod: bool,
    /// 1.33 (a refactor inside #130797, no release note): an Object metric with an AverageValue
    /// target reports `describedObject` in its status. Before, that field was left empty.
    pub object_average_status_names_the_object: bool,
    /// 1.34 (#132430): pod-level `spec.resources.requests` are the utilization denominator when
    /// `PodLevelResources` is on. Before, only containers' requests counted, whatever the gate.
    pub pod_level_requests: bool,
    /// 1.34 (#132351): a memory average in the status is formatted BinarySI (`750Mi`). Before,
    /// DecimalSI (`786432k`).
    pub memory_average_in_binary_si: bool,
    /// 1.34 (no release note; `GetExternalPerPodMetricReplicas`): the External AverageValue sum
    /// that overflows becomes MaxInt64, the proposal is capped at MaxInt32 and the average at
    /// MaxInt64. Before, the sum wrapped and the conversions wrapped like Go's.
    pub external_average_sum_saturates: bool,
    /// 1.34 (#132007): a scale update refused with a conflict (409) is retried after a fresh
    /// read of the scale (`retry.RetryOnConflict`). Before, it failed the rescale at once.
    pub scale_update_retries_on_conflict: bool,
    /// 1.35 (#126979, "Fixed replicaCount calculation exceeding max int32"): the usage-ratio
    /// proposal of Object/External Value targets is capped at MaxInt32, and the External Value
    /// sum at MaxInt64. Before, both wrapped.
    pub ratio_replicas_and_external_sum_capped: bool,
    /// 1.35 (part of #133415): a ContainerResource naming a container the pod lacks is an error,
    /// `container C not found in Pod P`. Before, that pod's request was 0.
    pub named_container_must_exist: bool,
    /// 1.36 (#135118): the scale-to-zero rework. At 0 replicas metrics are computed only with
    /// `ScaledToZero=True` (else `ScalingDisabled`), a raised `minReplicas` scales from 0 to it,
    /// and every rescale writes the `ScaledToZero` condition (removed with the gate off). Before,
    /// 0 replicas with `minReplicas` 0 computed metrics, anything else was `ScalingDisabled`, and
    /// no `ScaledToZero` condition was ever written.
    pub scale_to_zero_rework: bool,
    /// 1.37 (#139029): `unable to get metric M on KIND NS/NAME: ERR`. Before, upstream's
    /// misordered `unable to get metric M: KIND on NS NAME/ERR`.
    pub object_metric_error_names_the_object_first: bool,
    /// 1.37 (#139142): `pods by selector S are controlled by more than one HPA (e.g. [..])`.
    /// Before, `... are controlled by multiple HPAs: [..]`. (With `HPAOptimizedSelectorStore`
    /// on, the list stops at two HPAs.)
    pub selector_overlap_says_more_than_one: bool,
    /// 1.37 (#138294): a new HPA is queued at once (`queue.Add`), and with `HPAGeneration` a
    /// change of its spec too; before, every informer event queued it with the sync period as
    /// delay, so a new HPA was first reconciled one sync period after it appeared. Queue
    /// behaviour: the reference controller and the cluster lane read it, the decision core not.
    pub new_hpa_reconciled_at_once: bool,
}

impl Default for KubernetesVersion {
    fn default() -> Self {
        KubernetesVersion::DEFAULT
    }
}

impl fmt::Display for KubernetesVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for KubernetesVersion {
    type Err = UnknownVersion;

    /// `1.36`, `v1.36` or a patch of it (`1.36.4`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().trim_start_matches('v');
        let minor = match t.split('.').collect::<Vec<_>>().as_slice() {
            [major, minor] | [major, minor, _] if *major == "1" => *minor,
            _ => return Err(UnknownVersion(s.to_string())),
        };
        KubernetesVersion::ALL
            .into_iter()
            .find(|v| v.name().ends_with(&format!(".{minor}")))
            .ok_or_else(|| UnknownVersion(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_with_or_without_a_patch() {
        for v in KubernetesVersion::ALL {
            assert_eq!(v.name().parse::<KubernetesVersion>(), Ok(v));
            assert_eq!(
                format!("v{}", v.upstream_patch()).parse::<KubernetesVersion>(),
                Ok(v)
            );
        }
        assert!("1.31".parse::<KubernetesVersion>().is_err());
        assert!("2.36".parse::<KubernetesVersion>().is_err());
        assert!("1.36.4.1".parse::<KubernetesVersion>().is_err());
    }

    #[test]
    fn gate_defaults_follow_each_release() {
        use KubernetesVersion::*;
        let on = |v: KubernetesVersion| {
            let g = v.default_gates();
            (
                g.hpa_configurable_tolerance,
                g.hpa_scale_to_zero,
                g.pod_level_resources,
            )
        };
        assert_eq!(on(V1_32), (false, false, false));
        assert_eq!(on(V1_33), (false, false, false));
        assert_eq!(on(V1_34), (false, false, true));
        assert_eq!(on(V1_35), (true, false, true));
        assert_eq!(on(V1_36), (true, false, true));
        assert_eq!(on(V1_37), (true, true, true));
        assert!(!V1_32.has_gate("HPAConfigurableTolerance"));
        assert!(V1_33.has_gate("HPAConfigurableTolerance"));
        assert!(V1_32.has_gate("HPAScaleToZero"));
        assert!(!V1_36.has_gate("HPAGeneration"));
        assert!(V1_37.has_gate("HPAGeneration"));
        assert!(V1_37.locks_gate("HPAConfigurableTolerance"));
        assert!(!V1_36.locks_gate("HPAConfigurableTolerance"));
        assert!(!V1_37.locks_gate("HPAScaleToZero"));
        assert!(V1_37.default_gates().hpa_generation);
        assert!(!V1_36.default_gates().hpa_optimized_selector_store);
    }

    #[test]
    fn each_change_is_on_from_its_release_on() {
        // (the release that made it, the switch): on from it, off before.
        type Switch = (KubernetesVersion, fn(Changes) -> bool);
        let switches: [Switch; 13] = [
            (KubernetesVersion::V1_33, |c| c.per_direction_tolerance),
            (KubernetesVersion::V1_33, |c| {
                c.missing_container_metric_is_a_missing_pod
            }),
            (KubernetesVersion::V1_33, |c| {
                c.object_average_status_names_the_object
            }),
            (KubernetesVersion::V1_34, |c| c.pod_level_requests),
            (KubernetesVersion::V1_34, |c| c.memory_average_in_binary_si),
            (KubernetesVersion::V1_34, |c| {
                c.external_average_sum_saturates
            }),
            (KubernetesVersion::V1_34, |c| {
                c.scale_update_retries_on_conflict
            }),
            (KubernetesVersion::V1_35, |c| {
                c.ratio_replicas_and_external_sum_capped
            }),
            (KubernetesVersion::V1_35, |c| c.named_container_must_exist),
            (KubernetesVersion::V1_36, |c| c.scale_to_zero_rework),
            (KubernetesVersion::V1_37, |c| {
                c.object_metric_error_names_the_object_first
            }),
            (KubernetesVersion::V1_37, |c| {
                c.selector_overlap_says_more_than_one
            }),
            (KubernetesVersion::V1_37, |c| c.new_hpa_reconciled_at_once),
        ];
        for (since, on) in switches {
            for v in KubernetesVersion::ALL {
                assert_eq!(on(v.changes()), v >= since, "{v} vs {since}");
            }
        }
    }
}
