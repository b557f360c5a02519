//! The `hpa-reference` command line: kube-controller-manager's HPA flags with their defaults, the
//! feature gates, leader election and the serving address.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;

use crate::settings::{FeatureGates, Settings};

/// Parses a Go-style duration (`15s`, `5m0s`, `1m30s`).
fn duration(s: &str) -> Result<Duration, String> {
    crate::metrics_api::parse_go_duration(s)
        .ok_or_else(|| format!("invalid duration {s:?} (e.g. 15s, 5m0s)"))
}

/// The reference Horizontal Pod Autoscaler controller (Kubernetes 1.36 semantics).
#[derive(Debug, Clone, Parser)]
#[command(name = "hpa-reference", version, about)]
pub struct Flags {
    /// The period for syncing the number of pods in horizontal pod autoscaler.
    #[arg(long = "horizontal-pod-autoscaler-sync-period", value_parser = duration, default_value = "15s")]
    pub sync_period: Duration,
    /// The minimum change (from 1.0) in the desired-to-actual metrics ratio for the horizontal pod
    /// autoscaler to consider scaling.
    #[arg(long = "horizontal-pod-autoscaler-tolerance", default_value_t = 0.1)]
    pub tolerance: f64,
    /// The period after pod start when CPU samples might be skipped.
    #[arg(long = "horizontal-pod-autoscaler-cpu-initialization-period", value_parser = duration, default_value = "5m0s")]
    pub cpu_initialization_period: Duration,
    /// The period after pod start during which readiness changes will be treated as initial
    /// readiness.
    #[arg(long = "horizontal-pod-autoscaler-initial-readiness-delay", value_parser = duration, default_value = "30s")]
    pub initial_readiness_delay: Duration,
    /// The period for which autoscaler will look backwards and not scale down below any
    /// recommendation it made during that period.
    #[arg(long = "horizontal-pod-autoscaler-downscale-stabilization", value_parser = duration, default_value = "5m0s")]
    pub downscale_stabilization: Duration,
    /// The number of horizontal pod autoscaler objects that are allowed to sync concurrently.
    #[arg(
        long = "concurrent-horizontal-pod-autoscaler-syncs",
        default_value_t = 5
    )]
    pub concurrent_syncs: u16,
    /// Feature gates, e.g. `HPAScaleToZero=true,HPAConfigurableTolerance=false`.
    #[arg(long = "feature-gates", value_delimiter = ',')]
    pub feature_gates: Vec<String>,
    /// Only watch HPAs in this namespace (default: all namespaces).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Start a leader election client and gain leadership before executing the main loop.
    #[arg(long = "leader-elect", default_value_t = true, action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// The duration non-leader candidates wait after observing a leadership renewal before
    /// attempting to acquire leadership.
    #[arg(long = "leader-elect-lease-duration", value_parser = duration, default_value = "15s")]
    pub lease_duration: Duration,
    /// The interval between attempts by the acting leader to renew its leadership.
    #[arg(long = "leader-elect-renew-deadline", value_parser = duration, default_value = "10s")]
    pub renew_deadline: Duration,
    /// The duration clients wait between attempts to acquire or renew leadership.
    #[arg(long = "leader-elect-retry-period", value_parser = duration, default_value = "2s")]
    pub retry_period: Duration,
    /// The name of the Lease used for leader election.
    #[arg(long = "leader-elect-resource-name", default_value = "hpa-reference")]
    pub lease_name: String,
    /// The namespace of the Lease used for leader election.
    #[arg(
        long = "leader-elect-resource-namespace",
        default_value = "kube-system"
    )]
    pub lease_namespace: String,
    /// Where to serve /healthz, /readyz and /metrics.
    #[arg(long = "bind-address", default_value = "0.0.0.0:8080")]
    pub bind_address: SocketAddr,
    /// Log as JSON lines.
    #[arg(long = "log-json")]
    pub log_json: bool,
}

impl Flags {
    /// The core's settings from the flags.
    pub fn settings(&self) -> Result<Settings, String> {
        let mut gates = FeatureGates::KUBERNETES_1_36;
        for (k, v) in crate::settings::parse_gate_assignments(&self.feature_gates)? {
            gates.set(&k, v).map_err(|e| e.to_string())?;
        }
        Ok(Settings {
            sync_period: self.sync_period,
            tolerance: self.tolerance,
            cpu_initialization_period: self.cpu_initialization_period,
            initial_readiness_delay: self.initial_readiness_delay,
            downscale_stabilization: self.downscale_stabilization,
            gates,
            ..Settings::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_kube_controller_managers_flags_with_their_defaults() {
        use clap::CommandFactory;
        let help = Flags::command().render_long_help().to_string();
        for (flag, default) in [
            ("--horizontal-pod-autoscaler-sync-period", "15s"),
            ("--horizontal-pod-autoscaler-tolerance", "0.1"),
            (
                "--horizontal-pod-autoscaler-cpu-initialization-period",
                "5m0s",
            ),
            ("--horizontal-pod-autoscaler-initial-readiness-delay", "30s"),
            (
                "--horizontal-pod-autoscaler-downscale-stabilization",
                "5m0s",
            ),
            ("--concurrent-horizontal-pod-autoscaler-syncs", "5"),
            ("--leader-elect", "true"),
        ] {
            let at = help
                .find(flag)
                .unwrap_or_else(|| panic!("{flag} missing from --help"));
            let tail = &help[at..];
            let next = tail[2..].find("\n      --").map_or(tail.len(), |i| i + 2);
            assert!(
                tail[..next].contains(&format!("[default: {default}]")),
                "{flag}: {}",
                &tail[..next]
            );
        }
        assert!(help.contains("--feature-gates"));
        assert!(help.contains("--namespace"));
    }

    #[test]
    fn defaults_are_kube_controller_managers() {
        let f = Flags::try_parse_from(["hpa-reference"]).unwrap();
        assert_eq!(f.settings().unwrap(), Settings::default());
        assert_eq!(f.concurrent_syncs, 5);
        assert!(f.leader_elect);
        let f = Flags::try_parse_from([
            "hpa-reference",
            "--horizontal-pod-autoscaler-sync-period=30s",
            "--feature-gates=HPAScaleToZero=true",
            "--leader-elect=false",
        ])
        .unwrap();
        let s = f.settings().unwrap();
        assert_eq!(s.sync_period, Duration::from_secs(30));
        assert!(s.gates.hpa_scale_to_zero);
        assert!(!f.leader_elect);
    }
}
