//! The `hpa-reference` command line: kube-controller-manager's HPA flags with their defaults, the
//! feature gates, leader election and the serving addresses. [`Flags::validate`] refuses, at
//! startup and before anything connects, what kube-controller-manager would refuse.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;

use super::leader::{Timings, TimingsError};
use crate::settings::Settings;

/// Flags that parse but cannot run (the binary prints the message on one line and exits 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagsError {
    /// The HPA settings (`--feature-gates`).
    #[error("{0}")]
    Settings(String),
    /// Leader election's durations.
    #[error("invalid leader election flags: {0}")]
    LeaderElection(#[from] TimingsError),
    /// A `--reconcile-coalescing` step over a second.
    #[error("invalid --reconcile-coalescing {0:?}: at most 1s")]
    Coalescing(Duration),
    /// An empty Lease name or namespace.
    #[error("invalid leader election flags: --{0} must not be empty")]
    EmptyLease(&'static str),
}

/// Parses a Go-style duration (`15s`, `5m0s`, `1m30s`).
fn duration(s: &str) -> Result<Duration, String> {
    crate::gotext::parse_go_duration(s)
        .ok_or_else(|| format!("invalid duration {s:?} (e.g. 15s, 5m0s)"))
}

/// The reference Horizontal Pod Autoscaler controller (the semantics of `--kubernetes-version`, 1.37 by default).
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
    /// Feature gates, e.g. `HPAScaleToZero=true,PodLevelResources=false` (over the defaults of
    /// `--kubernetes-version`).
    #[arg(long = "feature-gates", value_delimiter = ',')]
    pub feature_gates: Vec<String>,
    /// The Kubernetes release whose HPA controller to be (1.32 … 1.37): its behaviour and its
    /// feature-gate defaults. Match the cluster's kube-controller-manager.
    #[arg(long = "kubernetes-version", default_value_t = crate::version::KubernetesVersion::DEFAULT)]
    pub kubernetes_version: crate::version::KubernetesVersion,
    /// QPS to use while talking with kubernetes apiserver: each of the controller's clients (its
    /// clientset, the scale client, each metrics client, the informers, leader election) is held
    /// to it, as client-go holds kube-controller-manager's. 0: client-go's default (5); negative:
    /// no limit.
    #[arg(
        long = "kube-api-qps",
        default_value_t = 20.0,
        allow_negative_numbers = true
    )]
    pub kube_api_qps: f32,
    /// Burst to use while talking with kubernetes apiserver (0: client-go's default, 10).
    #[arg(long = "kube-api-burst", default_value_t = 30)]
    pub kube_api_burst: u32,
    /// Not kube-controller-manager's: HPAs due within this step of each other are reconciled
    /// together, at the step's next multiple (each up to one step late), so that the workers'
    /// requests are in flight at once and the process wakes up less often (~10 % less CPU at 1,000
    /// HPAs with 20ms or 50ms, none measurable at 5,000: docs/performance.md). 0s: each HPA when
    /// it is due, as upstream. At most 1s.
    #[arg(long = "reconcile-coalescing", value_parser = duration, default_value = "0s")]
    pub reconcile_coalescing: Duration,
    /// Not kube-controller-manager's: read the scale of `apps/v1` Deployments from a watch of
    /// Deployments instead of a GET of the scale subresource per reconcile — one request per
    /// reconcile fewer (docs/performance.md). A reconcile that would change the scale is done again
    /// from a fresh GET, so every scale write is upstream's read, decide, write; one that writes
    /// nothing may read a scale as old as the watch's delay. Needs `list` and `watch` on
    /// `deployments`. Other kinds are read with a GET, as upstream.
    #[arg(long = "deployment-scale-cache", default_value_t = false, action = clap::ArgAction::Set)]
    pub deployment_scale_cache: bool,
    /// Only watch HPAs in this namespace (default: all namespaces).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Start a leader election client and gain leadership before executing the main loop.
    #[arg(long = "leader-elect", default_value_t = true, action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// The duration non-leader candidates wait after observing a leadership renewal before
    /// attempting to acquire leadership. Must exceed the renew deadline and be a whole number of
    /// seconds that fits the Lease's int32 leaseDurationSeconds (at most 2147483647s).
    #[arg(long = "leader-elect-lease-duration", value_parser = duration, default_value = "15s")]
    pub lease_duration: Duration,
    /// The interval between attempts by the acting leader to renew its leadership. Must exceed 1.2
    /// retry periods (client-go's JitterFactor).
    #[arg(long = "leader-elect-renew-deadline", value_parser = duration, default_value = "10s")]
    pub renew_deadline: Duration,
    /// The duration clients wait between attempts to acquire or renew leadership. Must be greater
    /// than zero.
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
    /// Where to serve /healthz and /readyz (plain HTTP, for the kubelet's probes).
    #[arg(long = "bind-address", default_value = "0.0.0.0:8080")]
    pub bind_address: SocketAddr,
    /// Where to serve /metrics: plain HTTP without authentication, so loopback by default (reach
    /// it with `kubectl port-forward`, or a sidecar). Set it to --bind-address's value to serve
    /// the three paths on one listener; any other address exposes the metrics unauthenticated.
    #[arg(long = "metrics-bind-address", default_value = "127.0.0.1:8081")]
    pub metrics_bind_address: SocketAddr,
    /// Log as JSON lines.
    #[arg(long = "log-json")]
    pub log_json: bool,
}

impl Flags {
    /// Refuses flags that parse but cannot run, as kube-controller-manager refuses them at startup:
    /// the settings, and with `--leader-elect` the Lease and its durations ([`Timings`]).
    pub fn validate(&self) -> Result<(), FlagsError> {
        self.settings().map_err(FlagsError::Settings)?;
        if self.reconcile_coalescing > Duration::from_secs(1) {
            return Err(FlagsError::Coalescing(self.reconcile_coalescing));
        }
        self.leader_election().map(|_| ())
    }

    /// Leader election's durations when `--leader-elect` (kube-controller-manager checks them only
    /// then), or why they are refused.
    pub fn leader_election(&self) -> Result<Option<Timings>, FlagsError> {
        if !self.leader_elect {
            return Ok(None);
        }
        if self.lease_name.is_empty() {
            return Err(FlagsError::EmptyLease("leader-elect-resource-name"));
        }
        if self.lease_namespace.is_empty() {
            return Err(FlagsError::EmptyLease("leader-elect-resource-namespace"));
        }
        Ok(Some(Timings::new(
            self.lease_duration,
            self.renew_deadline,
            self.retry_period,
        )?))
    }

    /// The core's settings from the flags.
    pub fn settings(&self) -> Result<Settings, String> {
        let version = self.kubernetes_version;
        let mut gates = version.default_gates();
        for (k, v) in crate::settings::parse_gate_assignments(&self.feature_gates)? {
            if !version.has_gate(&k) {
                return Err(format!(
                    "--feature-gates: Kubernetes {version} has no feature gate {k}"
                ));
            }
            if version.locks_gate(&k) && gates.get(&k) != Ok(v) {
                return Err(format!(
                    "--feature-gates: {k} is GA and locked to {} in Kubernetes {version}",
                    !v
                ));
            }
            gates.set(&k, v).map_err(|e| e.to_string())?;
        }
        Ok(Settings {
            sync_period: self.sync_period,
            tolerance: self.tolerance,
            cpu_initialization_period: self.cpu_initialization_period,
            initial_readiness_delay: self.initial_readiness_delay,
            downscale_stabilization: self.downscale_stabilization,
            gates,
            version,
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
            ("--kube-api-qps", "20"),
            ("--kube-api-burst", "30"),
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

    fn parse(args: &[&str]) -> Flags {
        Flags::try_parse_from(std::iter::once("hpa-reference").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    #[test]
    fn defaults_and_the_deployed_durations_are_valid() {
        assert_eq!(
            parse(&[]).leader_election(),
            Ok(Some(Timings {
                lease_duration: Duration::from_secs(15),
                renew_deadline: Duration::from_secs(10),
                retry_period: Duration::from_secs(2),
            }))
        );
        // kind-config/reference/x5.
        let x5 = parse(&[
            "--leader-elect-lease-duration=3s",
            "--leader-elect-renew-deadline=2s",
            "--leader-elect-retry-period=1s",
        ]);
        assert_eq!(x5.validate(), Ok(()));
    }

    #[test]
    fn leader_election_flags_are_refused_with_the_flag_named() {
        for (args, message) in [
            (
                &["--leader-elect-retry-period=0s"][..],
                "invalid leader election flags: retryPeriod must be greater than zero (--leader-elect-retry-period=0s)",
            ),
            (
                &["--leader-elect-lease-duration=1000000h"][..],
                "invalid leader election flags: leaseDuration must be at most 2147483647s: the Lease's leaseDurationSeconds is an int32 (--leader-elect-lease-duration=3600000000s)",
            ),
            (
                &[
                    "--leader-elect-lease-duration=500ms",
                    "--leader-elect-renew-deadline=400ms",
                    "--leader-elect-retry-period=100ms",
                ][..],
                "invalid leader election flags: leaseDuration must be a whole number of seconds: the Lease's leaseDurationSeconds is an integer (--leader-elect-lease-duration=500ms)",
            ),
            (
                &["--leader-elect-renew-deadline=15s"][..],
                "invalid leader election flags: leaseDuration must be greater than renewDeadline (--leader-elect-lease-duration=15s, --leader-elect-renew-deadline=15s)",
            ),
            (
                &["--leader-elect-renew-deadline=2s"][..],
                "invalid leader election flags: renewDeadline must be greater than retryPeriod*JitterFactor (--leader-elect-renew-deadline=2s, --leader-elect-retry-period=2s, JitterFactor 1.2)",
            ),
            (
                &["--leader-elect-resource-name="][..],
                "invalid leader election flags: --leader-elect-resource-name must not be empty",
            ),
            (&["--feature-gates=NoSuchGate=true"][..], ""),
        ] {
            let err = parse(args).validate().expect_err(&format!("{args:?}"));
            let text = err.to_string();
            assert!(!text.contains('\n'), "one line: {text}");
            if message.is_empty() {
                assert!(matches!(err, FlagsError::Settings(_)), "{err:?}");
            } else {
                assert_eq!(text, message, "{args:?}");
            }
        }
    }

    #[test]
    fn without_leader_election_its_durations_are_not_checked() {
        // kube-controller-manager validates leader election only when it is on.
        let f = parse(&["--leader-elect=false", "--leader-elect-retry-period=0s"]);
        assert_eq!(f.validate(), Ok(()));
        assert_eq!(f.leader_election(), Ok(None));
    }

    #[test]
    fn reconcile_coalescing_is_off_by_default_and_at_most_a_second() {
        assert_eq!(parse(&[]).reconcile_coalescing, Duration::ZERO);
        let f = parse(&["--reconcile-coalescing=50ms"]);
        assert_eq!(f.reconcile_coalescing, Duration::from_millis(50));
        assert_eq!(f.validate(), Ok(()));
        assert_eq!(parse(&["--reconcile-coalescing=1s"]).validate(), Ok(()));
        assert_eq!(
            parse(&["--reconcile-coalescing=1500ms"])
                .validate()
                .map_err(|e| e.to_string()),
            Err("invalid --reconcile-coalescing 1.5s: at most 1s".to_string())
        );
    }

    #[test]
    fn metrics_are_served_on_loopback_by_default() {
        let f = parse(&[]);
        assert!(f.metrics_bind_address.ip().is_loopback(), "{f:?}");
        assert_ne!(f.metrics_bind_address, f.bind_address);
    }
}
