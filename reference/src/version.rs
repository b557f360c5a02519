//! Kubernetes releases as data, in one home: the minors whose HPA this project knows (1.32 to
//! 1.37), the patch of each that upstream's controller is built from (`adapters/upstream/versions`),
//! and each one's feature-gate defaults (`pkg/features/kube_features.go` of that release).
//!
//! Everything else that depends on the release asks [`KubernetesVersion`]; nothing compares
//! version numbers elsewhere. [`KubernetesVersion::DEFAULT`] is the release the reference follows
//! when none is named.
//!
//! A new minor: add a variant, its row in [`KubernetesVersion::ALL`], its patch and its gate
//! defaults below, and its module description under `adapters/upstream/versions/`.

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

    /// The release the reference follows when none is named: the newest whose behaviour the
    /// decision core models and the corpus has been confirmed on by running upstream.
    pub const DEFAULT: KubernetesVersion = KubernetesVersion::V1_36;

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
        }
    }

    /// Whether this release has the gate at all (`HPAConfigurableTolerance` arrived in 1.33).
    pub fn has_gate(self, name: &str) -> bool {
        match name {
            "HPAConfigurableTolerance" => self >= KubernetesVersion::V1_33,
            _ => FeatureGates::default().get(name).is_ok(),
        }
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
    }
}
