//! What a real cluster can pose of a case, decided before anything touches the cluster: the reasons
//! a case must be skipped there, and the case in the cluster's time when the cluster's controller
//! runs with every duration divided by a time scale.
//!
//! Pure: no IO. The real-time lane (`cluster::lane`) runs only what [`plan`] accepts.

use std::collections::BTreeMap;
use std::time::Duration;

use hpa_reference::settings::{FeatureGates, GATE_NAMES};
use hpa_reference::{KubernetesVersion, Settings};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use serde_json::Value;

use crate::case::Case;
use crate::case::model::Phase;

/// The controller settings the cluster runs with (kube-controller-manager's flags), in the
/// cluster's own (real) time.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSettings {
    /// `--horizontal-pod-autoscaler-sync-period`.
    pub sync_period: Duration,
    /// `--horizontal-pod-autoscaler-tolerance`.
    pub tolerance: f64,
    /// `--horizontal-pod-autoscaler-cpu-initialization-period`.
    pub cpu_initialization_period: Duration,
    /// `--horizontal-pod-autoscaler-initial-readiness-delay`.
    pub initial_readiness_delay: Duration,
    /// `--horizontal-pod-autoscaler-downscale-stabilization`.
    pub downscale_stabilization: Duration,
    /// How many case seconds one cluster second stands for (1: real time).
    pub time_scale: u32,
    /// The Kubernetes release the cluster's HPA controller is (`--kubernetes-version`): its gate
    /// defaults are what a controller without `--feature-gates` runs with.
    pub version: hpa_reference::KubernetesVersion,
    /// HPA feature gates the controller runs with other than the run's (`--feature-gates`, gate
    /// by gate): with `--reconfigure-controller`, a case's declared gates. Only the controller's:
    /// the API server keeps the cluster's.
    pub gate_overrides: BTreeMap<String, bool>,
}

impl ClusterSettings {
    /// kube-controller-manager's defaults with every duration divided by `time_scale` (what the
    /// `kind-config/cluster-x<N>.yaml` configs set).
    pub fn defaults_scaled(time_scale: u32) -> Self {
        let d = Settings::default();
        let n = time_scale.max(1);
        ClusterSettings {
            sync_period: d.sync_period / n,
            tolerance: d.tolerance,
            cpu_initialization_period: d.cpu_initialization_period / n,
            initial_readiness_delay: d.initial_readiness_delay / n,
            downscale_stabilization: d.downscale_stabilization / n,
            time_scale: n,
            version: hpa_reference::KubernetesVersion::DEFAULT,
            gate_overrides: BTreeMap::new(),
        }
    }

    /// The same controller at real time (time scale 1): every duration times the time scale.
    pub fn at_real_time(&self) -> Self {
        self.at_time_scale(1)
    }

    /// The same controller at time scale `m`: every duration the same in case seconds. A case
    /// whose times do not divide by the run's time scale runs at the fastest slower one they
    /// divide by, and a case with a long sync period at a faster one, each on the controller
    /// reconfigured (`--reconfigure-controller`), in the same run.
    pub fn at_time_scale(&self, m: u32) -> Self {
        let n = self.time_scale.max(1);
        let m = m.max(1);
        ClusterSettings {
            sync_period: self.sync_period * n / m,
            cpu_initialization_period: self.cpu_initialization_period * n / m,
            initial_readiness_delay: self.initial_readiness_delay * n / m,
            downscale_stabilization: self.downscale_stabilization * n / m,
            time_scale: m,
            ..self.clone()
        }
    }

    /// The default timing margin: a third of the cluster's sync period, at least 2 cluster seconds.
    pub fn default_margin(&self) -> Duration {
        (self.sync_period / 3).max(Duration::from_secs(2))
    }

    /// The sync period in case seconds.
    pub fn case_sync_period(&self) -> f64 {
        self.sync_period.as_secs_f64() * f64::from(self.time_scale)
    }
}

/// The controller flags a case needs, in the cluster's time: `cluster` with the case's sync
/// period, tolerance and durations (each divided by the time scale); or why no controller at this
/// time scale can run them (a duration that is not a whole number of cluster milliseconds).
pub fn needed(settings: &Settings, cluster: &ClusterSettings) -> Result<ClusterSettings, String> {
    let n = cluster.time_scale.max(1);
    let scaled = |name: &str, d: Duration| -> Result<Duration, String> {
        let ms = d.as_millis();
        if !ms.is_multiple_of(u128::from(n)) {
            return Err(format!(
                "cannot run at time scale {n}: its --{name} of {} s is not a whole number of milliseconds divided by {n}",
                d.as_secs_f64()
            ));
        }
        Ok(Duration::from_millis((ms / u128::from(n)) as u64))
    };
    Ok(ClusterSettings {
        sync_period: scaled(
            "horizontal-pod-autoscaler-sync-period",
            settings.sync_period,
        )?,
        tolerance: settings.tolerance,
        cpu_initialization_period: scaled(
            "horizontal-pod-autoscaler-cpu-initialization-period",
            settings.cpu_initialization_period,
        )?,
        initial_readiness_delay: scaled(
            "horizontal-pod-autoscaler-initial-readiness-delay",
            settings.initial_readiness_delay,
        )?,
        downscale_stabilization: scaled(
            "horizontal-pod-autoscaler-downscale-stabilization",
            settings.downscale_stabilization,
        )?,
        ..cluster.clone()
    })
}

impl ClusterSettings {
    /// The HPA flags of a controller that runs with these settings, as kube-controller-manager
    /// takes them (`--horizontal-pod-autoscaler-sync-period=3s`, …).
    pub fn flag_args(&self) -> Vec<String> {
        vec![
            format!(
                "--horizontal-pod-autoscaler-sync-period={}",
                go_duration(self.sync_period)
            ),
            format!(
                "--horizontal-pod-autoscaler-downscale-stabilization={}",
                go_duration(self.downscale_stabilization)
            ),
            format!(
                "--horizontal-pod-autoscaler-cpu-initialization-period={}",
                go_duration(self.cpu_initialization_period)
            ),
            format!(
                "--horizontal-pod-autoscaler-initial-readiness-delay={}",
                go_duration(self.initial_readiness_delay)
            ),
            format!("--horizontal-pod-autoscaler-tolerance={}", self.tolerance),
        ]
        .into_iter()
        .chain(self.gates_arg())
        .collect()
    }

    /// `--feature-gates=A=false,…` with the gate overrides, when there are any (merged gate by
    /// gate into the controller's own `--feature-gates`, `reconfigure`).
    fn gates_arg(&self) -> Option<String> {
        (!self.gate_overrides.is_empty()).then(|| feature_gates_arg(&self.gate_overrides))
    }

    /// [`Self::flag_args`] for kube-controller-manager: a gate turned off takes the gates that
    /// depend on it along ([`gate_dependents`]), since the release refuses to start with a
    /// dependent on and its dependency off. (A controller that knows only the HPA gates, e.g.
    /// the deployed reference, takes [`Self::flag_args`].)
    pub fn controller_manager_args(&self) -> Vec<String> {
        let mut args = self.flag_args();
        if let Some(gates) = args.iter_mut().find(|a| a.starts_with("--feature-gates=")) {
            for (n, v) in &self.gate_overrides {
                if !v {
                    for d in gate_dependents(self.version, n) {
                        if !self.gate_overrides.contains_key(*d) {
                            gates.push_str(&format!(",{d}=false"));
                        }
                    }
                }
            }
        }
        args
    }

    /// The run's feature gates with these settings' overrides.
    pub fn gates_over(&self, run: &FeatureGates) -> FeatureGates {
        let mut g = *run;
        for (name, v) in &self.gate_overrides {
            // Names come from a case's resolved gates: known ones.
            let _ = g.set(name, *v);
        }
        g
    }

    /// Whether a controller with `other`'s flags runs every case these settings run the same
    /// (the five HPA flags; the time scale and release are the run's).
    pub fn same_flags(&self, other: &ClusterSettings) -> bool {
        self.sync_period == other.sync_period
            && self.tolerance.to_bits() == other.tolerance.to_bits()
            && self.cpu_initialization_period == other.cpu_initialization_period
            && self.initial_readiness_delay == other.initial_readiness_delay
            && self.downscale_stabilization == other.downscale_stabilization
            && self.gate_overrides == other.gate_overrides
    }

    /// The flags one controller could run for two groups of cases (`self` and `other`, each
    /// differing from `base`, the cluster's, in some flags): each flag as whichever group sets
    /// it otherwise than `base`, and where both set one, each of their values (`self`'s first) —
    /// for the reference core to show which, if any, gives every case its own trace. None when
    /// their sync periods, time scales or gates differ (those stay groups of their own).
    pub fn merges(&self, other: &ClusterSettings, base: &ClusterSettings) -> Vec<Self> {
        if self.sync_period != other.sync_period
            || self.time_scale != other.time_scale
            || self.gate_overrides != other.gate_overrides
        {
            return Vec::new();
        }
        fn values<T: PartialEq + Copy>(a: T, b: T, base: T) -> Vec<T> {
            if a == b || b == base {
                vec![a]
            } else if a == base {
                vec![b]
            } else {
                vec![a, b]
            }
        }
        let mut out = Vec::new();
        for tolerance in values(
            self.tolerance.to_bits(),
            other.tolerance.to_bits(),
            base.tolerance.to_bits(),
        ) {
            for cpu in values(
                self.cpu_initialization_period,
                other.cpu_initialization_period,
                base.cpu_initialization_period,
            ) {
                for delay in values(
                    self.initial_readiness_delay,
                    other.initial_readiness_delay,
                    base.initial_readiness_delay,
                ) {
                    for window in values(
                        self.downscale_stabilization,
                        other.downscale_stabilization,
                        base.downscale_stabilization,
                    ) {
                        out.push(ClusterSettings {
                            tolerance: f64::from_bits(tolerance),
                            cpu_initialization_period: cpu,
                            initial_readiness_delay: delay,
                            downscale_stabilization: window,
                            ..self.clone()
                        });
                    }
                }
            }
        }
        out
    }

    /// The flags that differ from `base`'s, each as `--name=value` (empty: the same flags).
    pub fn differences(&self, base: &ClusterSettings) -> Vec<String> {
        let mut d: Vec<String> = self
            .flag_args()
            .into_iter()
            .zip(base.flag_args())
            .take(5)
            .filter(|(a, b)| a != b)
            .map(|(a, _)| a)
            .collect();
        if self.gate_overrides != base.gate_overrides {
            d.push(
                self.gates_arg()
                    .unwrap_or_else(|| "--feature-gates as the cluster's own".into()),
            );
        }
        d
    }
}

/// `--feature-gates=A=false,B=true` with `gates`.
pub fn feature_gates_arg(gates: &BTreeMap<String, bool>) -> String {
    let list: Vec<String> = gates.iter().map(|(n, v)| format!("{n}={v}")).collect();
    format!("--feature-gates={}", list.join(","))
}

/// The gates of `version` that depend on the HPA gate `gate` (upstream's
/// `defaultKubernetesFeatureGateDependencies` in `pkg/features/kube_features.go`, read for each
/// release: 1.35 introduced it; before, no gate depends on another). kube-controller-manager
/// exits at start ("… is enabled, but depends on features that are disabled") when one of them
/// is on and `gate` off, as seen on the 1.37.2 node image.
pub fn gate_dependents(version: KubernetesVersion, gate: &str) -> &'static [&'static str] {
    use KubernetesVersion as V;
    match (gate, version) {
        ("PodLevelResources", V::V1_32 | V::V1_33 | V::V1_34) => &[],
        ("PodLevelResources", V::V1_35) => &["InPlacePodLevelResourcesVerticalScaling"],
        ("PodLevelResources", V::V1_36) => &[
            "InPlacePodLevelResourcesVerticalScaling",
            "PodLevelResourceManagers",
        ],
        ("PodLevelResources", v) if v >= V::V1_37 => &[
            "InPlacePodLevelResourcesVerticalScaling",
            "PodLevelResourceManagers",
            "PodLevelResourcesFixDefaulting",
            "PodLevelResourcesFixKubeletQOSClass",
        ],
        _ => &[],
    }
}

/// A duration as Go's `time.ParseDuration` reads it: whole seconds as `24s`, else milliseconds.
pub fn go_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// Checks kube-controller-manager's command line against the settings the run assumes. `Ok(false)`
/// when its HPA controller is disabled (another controller, e.g. the deployed reference, is the one
/// under test and its settings are not on this command line).
pub fn check_controller_manager(
    args: &[String],
    want: &ClusterSettings,
    gates: &FeatureGates,
) -> Result<bool, String> {
    check_controller("kube-controller-manager", args, want, gates)
}

/// The same check for the command line of another HPA controller that takes kube-controller-manager's
/// HPA flags (`who` names it in the errors): `Ok(false)` when it runs without its HPA controller.
pub fn check_controller(
    who: &str,
    args: &[String],
    want: &ClusterSettings,
    gates: &FeatureGates,
) -> Result<bool, String> {
    let flag = |name: &str| -> Option<&str> {
        args.iter()
            .find_map(|a| a.strip_prefix(&format!("--{name}=")))
    };
    if flag("controllers").is_some_and(|c| {
        c.split(',')
            .any(|x| x == "-horizontal-pod-autoscaler-controller")
    }) {
        return Ok(false);
    }
    let d = ClusterSettings::defaults_scaled(1);
    let checks = [
        (
            "horizontal-pod-autoscaler-sync-period",
            want.sync_period,
            d.sync_period,
        ),
        (
            "horizontal-pod-autoscaler-downscale-stabilization",
            want.downscale_stabilization,
            d.downscale_stabilization,
        ),
        (
            "horizontal-pod-autoscaler-cpu-initialization-period",
            want.cpu_initialization_period,
            d.cpu_initialization_period,
        ),
        (
            "horizontal-pod-autoscaler-initial-readiness-delay",
            want.initial_readiness_delay,
            d.initial_readiness_delay,
        ),
    ];
    for (name, wanted, default) in checks {
        let have = match flag(name) {
            None => default,
            Some(v) => hpa_reference::gotext::parse_go_duration(v)
                .ok_or_else(|| format!("{who}'s --{name}={v} is not a duration"))?,
        };
        if have != wanted {
            return Err(format!(
                "{who} runs --{name}={:?} but this run assumes {:?} (time scale {}): pass the --time-scale of the kind config the cluster was made with",
                have, wanted, want.time_scale
            ));
        }
    }
    // The deployed reference says which release it follows; it must be the judged one.
    if let Some(v) = flag("kubernetes-version") {
        match v.parse::<hpa_reference::KubernetesVersion>() {
            Ok(v) if v == want.version => {}
            _ => {
                return Err(format!(
                    "{who} runs --kubernetes-version={v} but this run judges {}: pass --kubernetes-version {v}",
                    want.version
                ));
            }
        }
    }
    // The HPA's feature gates: the command line's, else the judged release's defaults.
    let mut have = want.version.default_gates();
    for (name, v) in flag("feature-gates")
        .unwrap_or_default()
        .split(',')
        .filter_map(|g| g.split_once('='))
    {
        // Other gates (the cluster's own business) are not the run's to check.
        if let (true, Ok(v)) = (GATE_NAMES.contains(&name.trim()), v.trim().parse::<bool>()) {
            let _ = have.set(name.trim(), v);
        }
    }
    let gates = want.gates_over(gates);
    for name in GATE_NAMES {
        let (h, w) = (
            have.get(name).unwrap_or_default(),
            gates.get(name).unwrap_or_default(),
        );
        if h != w {
            return Err(format!(
                "{who} runs with {name}={h} but this run assumes {name}={w}: pass --feature-gates {name}={h} (the kind config's featureGates)"
            ));
        }
    }
    if let Some(t) = flag("horizontal-pod-autoscaler-tolerance") {
        let have: f64 = t
            .parse()
            .map_err(|_| format!("{who}'s tolerance {t} is not a number"))?;
        if (have - want.tolerance).abs() > 1e-12 {
            return Err(format!(
                "{who} runs --horizontal-pod-autoscaler-tolerance={have} but this run assumes {}",
                want.tolerance
            ));
        }
    }
    Ok(true)
}

/// A case the cluster can run: its HPA in cluster time.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The HPA to create (as the case wrote it, behavior durations divided by the time scale).
    pub hpa: HorizontalPodAutoscaler,
    /// The workload kind to create (`Deployment`, `ReplicaSet`, `ReplicationController`).
    pub kind: WorkloadKind,
    /// The plans of the HPAs alongside (`alongside`), in the case's order.
    pub members: Vec<Plan>,
    /// When the case is posed with a prelude ([`super::prelude`]): how long before t = 0 the
    /// controller first reconciles the HPA, in case seconds, and what the lane serves until then.
    pub prelude: Option<super::prelude::Schedule>,
    /// Whether the HPA is held until t = 0 to pose its starting status on a release that
    /// reconciles a new HPA at once ([`starting_status`]): created with [`held_target`] as its
    /// scale target, which the lane patches to the real one at t = 0.
    pub held: bool,
    /// The other HPAs the controller is to know before the case's first reconcile
    /// (`otherHpas`, [`other_hpas`]).
    pub others: Vec<OtherPlan>,
    /// Whether the timeline refuses scale updates, which the stub's admission webhook poses
    /// (`super::webhook`).
    pub scale_faults: bool,
    /// Its timeline rolls the Deployment out: the cluster's Deployment controller carries it out
    /// (`rollout`).
    pub rollout: bool,
}

/// An other HPA (`otherHpas`) as the lane creates it.
#[derive(Debug, Clone, PartialEq)]
pub struct OtherPlan {
    /// The HPA's name.
    pub name: String,
    /// Its empty Deployment ([`other_target`]).
    pub target: String,
    /// The Deployment's selector and pod labels: the case's `selector`.
    pub labels: BTreeMap<String, String>,
}

/// The name a held HPA's scale target has until t = 0: a workload that does not exist, so each
/// reconcile before then fails at the scale (`FailedGetScale`, its message naming this name) and
/// leaves the controller's memory as it was.
pub fn held_target(target: &str) -> String {
    format!("{target}-held-until-t0")
}

/// The scale targets the lane can create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadKind {
    /// `apps/v1` Deployment.
    Deployment,
    /// `apps/v1` ReplicaSet.
    ReplicaSet,
    /// `v1` ReplicationController.
    ReplicationController,
    /// `apps/v1` StatefulSet (created with `podManagementPolicy: Parallel`, so its controller
    /// creates and removes pods at once, as the case's world does, instead of one by one).
    StatefulSet,
}

/// How the lane poses a starting `hpa.status`, or why a cluster cannot: the lane writes it through
/// the status subresource after creating the HPA, before the controller's first reconcile one sync
/// period later (kube-controller-manager and the reference queue a new HPA with that delay), so a
/// status is posable exactly when the API server stores it — it refuses negative counts
/// (`ValidateHorizontalPodAutoscalerStatusUpdate`). A release that reconciles a new HPA at once
/// (1.37, #138294) would decide before that write: there the case's own HPA is *held* — created
/// with a scale target that does not exist (its reconciles fail at the scale and change nothing
/// but the status), its status written after such a reconcile, and its real target set by a spec
/// patch at t = 0, which that release reconciles at once (`cluster::lane`). `Ok(true)`: held.
/// An HPA alongside (`member`) is not held: its status stays unposable on such a release.
fn starting_status(case: &Case, cluster: &ClusterSettings, member: bool) -> Result<bool, String> {
    let Some(status) = &case.hpa.status else {
        return Ok(false);
    };
    let name = case.hpa.metadata.name.as_deref().unwrap_or_default();
    for (field, value) in [
        ("currentReplicas", status.current_replicas.unwrap_or(0)),
        ("desiredReplicas", status.desired_replicas),
    ] {
        if value < 0 {
            return Err(format!(
                "starts HPA {name} from status.{field} {value}, a status the API server refuses to store (it must be non-negative): a starting state a cluster cannot pose"
            ));
        }
    }
    if !cluster.version.changes().new_hpa_reconciled_at_once {
        return Ok(false);
    }
    if member {
        return Err(format!(
            "starts HPA {name} (alongside) from a status, which the lane writes after creating the HPA; Kubernetes {} reconciles a new HPA at once (#138294), before that write, and the lane holds only the case's own HPA until t = 0",
            cluster.version
        ));
    }
    Ok(true)
}

/// Why a case cannot run on a cluster, or the plan to run it. The controller flags it needs are
/// not checked here: [`needed`] gives them, and the lane runs the case with a controller that has
/// them (or poses it otherwise, `cluster::seed`).
pub fn plan(case: &Case, settings: &Settings, cluster: &ClusterSettings) -> Result<Plan, String> {
    let f = &case.file;
    if f.expect.rejected.is_some() {
        // Only the HPA is created, as the case wrote it (a time-scaled window could change
        // whether it is valid); settings and the timeline do not matter.
        return Ok(Plan {
            hpa: case.hpa.clone(),
            kind: WorkloadKind::Deployment,
            members: Vec::new(),
            prelude: None,
            held: false,
            others: Vec::new(),
            scale_faults: false,
            rollout: false,
        });
    }
    if f.memory.is_some() {
        return Err("the case seeds the controller's memory, which a running kube-controller-manager cannot be given".into());
    }
    let held = starting_status(case, cluster, false)?;
    for m in &case.members {
        starting_status(m, cluster, true)?;
    }
    if let Some(x) = f.expect.at.iter().find(|x| x.memory.is_some()) {
        return Err(format!(
            "expects the controller's memory at t={}, which kube-controller-manager does not show",
            x.t
        ));
    }
    let r = &case.hpa.spec.scale_target_ref;
    let kind = match (r.api_version.as_deref().unwrap_or(""), r.kind.as_str()) {
        ("apps/v1", "Deployment") => WorkloadKind::Deployment,
        ("apps/v1", "ReplicaSet") => WorkloadKind::ReplicaSet,
        ("v1", "ReplicationController") => WorkloadKind::ReplicationController,
        ("apps/v1", "StatefulSet") => WorkloadKind::StatefulSet,
        (v, k) => {
            return Err(format!(
                "scales a {k} ({v}); the cluster lane creates Deployments, ReplicaSets, StatefulSets and ReplicationControllers"
            ));
        }
    };
    let n = cluster.time_scale.max(1);
    let d = Settings::default();
    if settings.scale_up_limit_factor != d.scale_up_limit_factor
        || settings.scale_up_limit_minimum != d.scale_up_limit_minimum
    {
        return Err(
            "changes the scale-up limit constants, which kube-controller-manager hard-codes".into(),
        );
    }
    let mut in_order: Vec<_> = f.timeline.iter().collect();
    in_order.sort_by_key(|e| e.at);
    let mut finished_at = None;
    for e in in_order {
        if let Some(p) = &e.pods {
            if let (Some(since), Some(Phase::Running | Phase::Pending)) = (finished_at, p.phase) {
                return Err(format!(
                    "gives pods a running phase at t={} after finishing pods at t={since}, which a cluster refuses (a pod's phase never leaves Failed or Succeeded): the case's way to list more pods than its workload asks for",
                    e.at
                ));
            }
            if matches!(p.phase, Some(Phase::Failed | Phase::Succeeded)) {
                finished_at.get_or_insert(e.at);
            }
        }
    }
    for e in &f.timeline {
        if e.scale_api.as_ref().is_some_and(|s| s.get_error.is_some()) {
            return Err(format!(
                "makes reading the scale subresource fail at t={}, which a real API server cannot be made to do on cue (the lane's admission webhook refuses updates, and a webhook never sees a read)",
                e.at
            ));
        }
        if e.rollout.is_some() {
            // The cluster's Deployment controller carries the rollout out (`rollout`).
            if kind != WorkloadKind::Deployment {
                return Err(format!(
                    "rolls a {kind:?} out at t={}, which only a Deployment's controller does on a cluster",
                    e.at
                ));
            }
            let deletes = f.timeline.iter().any(|d| {
                d.pods.as_ref().is_some_and(|p| {
                    p.deleted == Some(true)
                        || matches!(p.phase, Some(Phase::Failed | Phase::Succeeded))
                }) && d.at >= e.at
            });
            if deletes {
                return Err(format!(
                    "ends pods while the rollout from t={} runs, which the lane cannot pair with the cluster's Deployment's own replacements",
                    e.at
                ));
            }
        }
        if e.status_replicas.is_some() {
            return Err(format!(
                "overrides the scale's status.replicas at t={}, which the workload controller owns on a cluster",
                e.at
            ));
        }
        if let Some(p) = &e.pods {
            if p.requests.is_some() && cluster.version < KubernetesVersion::V1_33 {
                return Err(format!(
                    "gives pods their own requests at t={}, which the lane poses by resizing them in place (the pods' resize subresource, from Kubernetes 1.33; the cluster runs {})",
                    e.at, cluster.version
                ));
            }
            let ends = p.deleted == Some(true)
                || matches!(p.phase, Some(Phase::Failed | Phase::Succeeded));
            if ends && f.workload.fixed_pods {
                return Err(format!(
                    "ends pods at t={} and keeps them unreplaced (`workload.fixedPods`), while a cluster's workload controller replaces every pod that stops being active",
                    e.at
                ));
            }
            if ends && kind == WorkloadKind::StatefulSet {
                return Err(format!(
                    "ends pods at t={} of a StatefulSet, whose controller recreates a finished pod under the same name instead of leaving it listed beside a new one as the case's world does",
                    e.at
                ));
            }
        }
    }
    if let Some(sel) = &f.workload.selector
        && (sel.trim().is_empty() || hpa_reference::selector::parse(sel).is_err())
    {
        return Err(format!(
            "sets the scale's status.selector to {sel:?}, which a workload controller derives from a valid, non-empty spec.selector on a cluster"
        ));
    }
    let others = other_hpas(case, settings)?;
    let members = case
        .members
        .iter()
        .map(|m| {
            plan(m, settings, cluster).map_err(|e| {
                format!(
                    "HPA {} alongside: {e}",
                    m.file.hpa.metadata.name.as_deref().unwrap_or_default()
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if !members.is_empty() {
        alongside_on_a_cluster(case)?;
    }
    if n > 1 {
        divisible(case, n)?;
        behavior_added_by_a_patch(case, n)?;
    }
    let mut hpa = serde_json::to_value(with_behavior_defaults(&case.file.hpa, n))
        .map_err(|e| e.to_string())?;
    scale_behavior(&mut hpa, n)?;
    let hpa = serde_json::from_value(hpa).map_err(|e| e.to_string())?;
    Ok(Plan {
        hpa,
        kind,
        members,
        prelude: None,
        held,
        others,
        scale_faults: super::webhook::needs(case),
        rollout: f.timeline.iter().any(|e| e.rollout.is_some()),
    })
}

/// How the lane poses the case's other HPAs (`otherHpas`: HPAs the controller knows, whose scale
/// targets report the given selectors), or why it cannot. Each is an HPA with `minReplicas: 0`
/// on an empty Deployment whose selector is the given one (its pod template carries those labels;
/// a Deployment's scale reports its `spec.selector`), scaling on an External metric the stub never
/// serves: the controller reconciles it past the selector — where it records the selector — and
/// fails at the metric, so it never scales. The lane creates them before the case's HPA, writes
/// each a status with `ScaledToZero=True` (from the scale-to-zero rework, 1.37, a target at 0
/// replicas is reconciled past the selector only with it) and waits until the controller has
/// reconciled each past its selector. `minReplicas: 0` needs `HPAScaleToZero` (on the API server
/// and the controller); with `minReplicas` above 0 a target of 0 replicas stops the reconcile
/// before the selector (`ScalingDisabled`), and a target with pods would add them to the case's.
fn other_hpas(case: &Case, settings: &Settings) -> Result<Vec<OtherPlan>, String> {
    let f = &case.file;
    if f.other_hpas.is_empty() {
        return Ok(Vec::new());
    }
    if !settings.gates.hpa_scale_to_zero {
        return Err(
            "needs other HPAs in the namespace (`otherHpas`), which the lane poses as HPAs with minReplicas 0 on empty Deployments: needs HPAScaleToZero".into(),
        );
    }
    let taken: Vec<String> = std::iter::once(case)
        .chain(&case.members)
        .flat_map(|c| {
            [
                c.file.hpa.metadata.name.clone().unwrap_or_default(),
                c.file.hpa.spec.scale_target_ref.name.clone(),
            ]
        })
        .collect();
    f.other_hpas
        .iter()
        .map(|o| {
            let target = other_target(&o.name);
            if taken.contains(&o.name) || taken.contains(&target) {
                return Err(format!(
                    "other HPA {} (`otherHpas`): its name or its target's ({target}) is one the case uses",
                    o.name
                ));
            }
            let labels = equality_labels(&o.selector).ok_or_else(|| {
                format!(
                    "other HPA {} (`otherHpas`) reports selector {:?}, which the lane poses as a Deployment's matchLabels: only key=value terms, at least one",
                    o.name, o.selector
                )
            })?;
            Ok(OtherPlan {
                name: o.name.clone(),
                target,
                labels,
            })
        })
        .collect()
}

/// The Deployment an other HPA (`otherHpas`) scales.
pub fn other_target(name: &str) -> String {
    format!("{name}-other-target")
}

/// `a=b,c==d` as labels; `None` for anything else (set-based terms, `!=`, an empty selector).
fn equality_labels(selector: &str) -> Option<BTreeMap<String, String>> {
    let parsed = hpa_reference::selector::parse(selector).ok()?;
    let mut labels = BTreeMap::new();
    for term in selector.split(',') {
        let (k, v) = term.split_once("==").or_else(|| term.split_once('='))?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() || k.contains('!') || k.contains(' ') || v.contains(' ') {
            return None;
        }
        labels.insert(k.to_string(), v.to_string());
    }
    (!labels.is_empty() && parsed.matches(&labels)).then_some(labels)
}

/// Whether a cluster can pose a case's HPAs together: their pods disjoint (with overlapping
/// selectors the outcome depends on which HPA the controller reconciles first, its work queue's
/// choice), no metrics API error (the stub's errors are the namespace's, every HPA's), and no
/// object or external metric two HPAs read under one name (the stub serves one value per name).
fn alongside_on_a_cluster(case: &Case) -> Result<(), String> {
    let all: Vec<&Case> = std::iter::once(case).chain(&case.members).collect();
    let name = |c: &Case| c.file.hpa.metadata.name.clone().unwrap_or_default();
    let looks: Vec<_> =
        all.iter()
            .map(|c| {
                let labels = crate::world::World::new(c).pod_template().0;
                let selector =
                    c.file.workload.selector.clone().unwrap_or_else(|| {
                        format!("app={}", c.file.hpa.spec.scale_target_ref.name)
                    });
                (labels, hpa_reference::selector::parse(&selector).ok())
            })
            .collect();
    for (i, (_, sel)) in looks.iter().enumerate() {
        for (j, (labels, _)) in looks.iter().enumerate() {
            if i != j && sel.as_ref().is_some_and(|s| s.matches(labels)) {
                return Err(format!(
                    "HPA {}'s selector takes in HPA {}'s pods: on a cluster, which of them the controller reconciles first (and so which may scale once) is its work queue's choice",
                    name(all[i]),
                    name(all[j])
                ));
            }
        }
    }
    let mut shared: std::collections::BTreeMap<String, String> = Default::default();
    for c in &all {
        if let Some(e) = c.file.timeline.iter().find(|e| e.metric_error.is_some()) {
            return Err(format!(
                "HPA {} has a metrics API error at t={}, which the metrics stub would give every HPA of the namespace",
                name(c),
                e.at
            ));
        }
        for m in c.hpa.spec.metrics.iter().flatten() {
            if matches!(m.type_.as_str(), "Object" | "External") {
                let key = crate::case::load::metric_key(m);
                if let Some(other) = shared.insert(key.clone(), name(c)) {
                    return Err(format!(
                        "HPAs {other} and {} both read the {} metric {key}, of which the metrics stub serves one value",
                        name(c),
                        m.type_
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Every time the case states must be a whole number of cluster seconds at time scale `n`.
fn divisible(case: &Case, n: u32) -> Result<(), String> {
    let f = &case.file;
    let n64 = i64::from(n);
    let mut times: Vec<(String, i64)> = vec![
        ("the sync period".into(), i64::from(case.sync_period)),
        (
            "startup.pendingSeconds".into(),
            i64::from(f.workload.startup.pending_seconds),
        ),
        (
            "startup.readyAfterSeconds".into(),
            i64::from(f.workload.startup.ready_after_seconds),
        ),
    ];
    if let Some(h) = &f.workload.startup.hot_cpu {
        times.push(("startup.hotCpu.forSeconds".into(), i64::from(h.for_seconds)));
    }
    if let Some(a) = f.workload.initial_pod_age_seconds {
        times.push(("initialPodAgeSeconds".into(), i64::from(a)));
    }
    times.push((
        "metricWindowSeconds".into(),
        i64::from(f.workload.metric_window_seconds.unwrap_or(30)),
    ));
    for e in &f.timeline {
        times.push((format!("timeline at={}", e.at), i64::from(e.at)));
        if let Some(r) = &e.rollout {
            times.push((
                format!("rollout.minReadySeconds at t={}", e.at),
                i64::from(r.min_ready_seconds),
            ));
            times.push((
                format!("rollout.terminationSeconds at t={}", e.at),
                i64::from(r.termination_seconds.unwrap_or(30)),
            ));
        }
        if let Some(p) = &e.pods {
            if let Some(s) = p.started_at {
                times.push((format!("startedAt at t={}", e.at), s));
            }
            if let Some(s) = p.ready_since {
                times.push((format!("readySince at t={}", e.at), s));
            }
        }
    }
    for x in &f.expect.at {
        times.push((format!("expectation t={}", x.t), i64::from(x.t)));
    }
    for (what, v) in times {
        if v % n64 != 0 {
            return Err(format!(
                "cannot run at time scale {n}: {what} is {v} s, not a multiple of {n}"
            ));
        }
    }
    Ok(())
}

/// The HPA to create at time scale `n`: above 1, with the API server's behavior defaults written
/// out (`hpa_reference::defaults`), so they are divided by the time scale with the rest — the API
/// server would fill a `behavior`'s unset policies with 15 real seconds, 75 case seconds at ×5.
/// The scale-down window stays unset: the controller's flag, already scaled, applies.
fn with_behavior_defaults(hpa: &HorizontalPodAutoscaler, n: u32) -> HorizontalPodAutoscaler {
    let mut hpa = hpa.clone();
    if n > 1
        && let Some(b) = hpa.spec.behavior.as_mut()
    {
        b.scale_up = Some(hpa_reference::defaults::scale_up_rules(b.scale_up.as_ref()));
        b.scale_down = Some(hpa_reference::defaults::scale_down_rules(
            b.scale_down.as_ref(),
        ));
    }
    hpa
}

/// At a time scale, a spec patch that gives a behavior to an HPA without one cannot be posed: the
/// API server fills the new behavior's unset policies with their defaults in real seconds.
fn behavior_added_by_a_patch(case: &Case, n: u32) -> Result<(), String> {
    let mut has = case.file.hpa.spec.behavior.is_some();
    let mut in_order: Vec<_> = case.file.timeline.iter().collect();
    in_order.sort_by_key(|e| e.at);
    for e in in_order {
        let Some(b) = e
            .hpa_patch
            .as_ref()
            .and_then(|p| p.pointer("/spec/behavior"))
        else {
            continue;
        };
        if !has && !b.is_null() {
            return Err(format!(
                "cannot run at time scale {n}: its spec patch at t={} gives the HPA a behavior, whose unset fields the API server fills with their defaults in real seconds (15 s policy periods)",
                e.at
            ));
        }
        has = !b.is_null();
    }
    Ok(())
}

/// Divides the behavior's `stabilizationWindowSeconds` and policies' `periodSeconds` by `n`
/// (an HPA manifest or an `hpaPatch`, as JSON); every one must divide evenly.
pub fn scale_behavior(hpa: &mut Value, n: u32) -> Result<(), String> {
    if n <= 1 {
        return Ok(());
    }
    let Some(behavior) = hpa.pointer_mut("/spec/behavior") else {
        return Ok(());
    };
    for dir in ["scaleUp", "scaleDown"] {
        let Some(rules) = behavior.get_mut(dir) else {
            continue;
        };
        if let Some(w) = rules.get_mut("stabilizationWindowSeconds") {
            *w = divide(w, n, &format!("{dir}.stabilizationWindowSeconds"))?;
        }
        if let Some(Value::Array(policies)) = rules.get_mut("policies") {
            for (i, p) in policies.iter_mut().enumerate() {
                if let Some(s) = p.get_mut("periodSeconds") {
                    *s = divide(s, n, &format!("{dir}.policies[{i}].periodSeconds"))?;
                }
            }
        }
    }
    Ok(())
}

fn divide(v: &Value, n: u32, what: &str) -> Result<Value, String> {
    match v.as_i64() {
        Some(x) if x % i64::from(n) == 0 => Ok(Value::from(x / i64::from(n))),
        Some(x) => Err(format!(
            "cannot run at time scale {n}: behavior {what} is {x} s, not a multiple of {n}"
        )),
        None => Ok(v.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_groups_flags_merge_each_way_a_flag_both_set_can_go() {
        let base = ClusterSettings::defaults_scaled(5);
        let tolerance = ClusterSettings {
            tolerance: 0.25,
            ..base.clone()
        };
        let window = |s: u64| ClusterSettings {
            downscale_stabilization: Duration::from_secs(s),
            ..base.clone()
        };
        let m = tolerance.merges(&window(12), &base);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].tolerance, 0.25);
        assert_eq!(m[0].downscale_stabilization, Duration::from_secs(12));
        assert_eq!(window(12).merges(&window(12), &base), [window(12)]);
        assert_eq!(
            window(12).merges(&window(24), &base),
            [window(12), window(24)]
        );
        let faster = base.at_time_scale(10);
        assert!(tolerance.merges(&faster, &base).is_empty());
        let gated = ClusterSettings {
            gate_overrides: BTreeMap::from([("HPAScaleToZero".to_string(), false)]),
            ..base.clone()
        };
        assert!(tolerance.merges(&gated, &base).is_empty());
    }

    #[test]
    fn another_time_scale_keeps_every_duration_in_case_seconds() {
        let base = ClusterSettings::defaults_scaled(5);
        let at = base.at_time_scale(10);
        assert_eq!(at.sync_period, Duration::from_millis(1500));
        assert_eq!(at.case_sync_period(), base.case_sync_period());
        assert_eq!(base.at_real_time().sync_period, Duration::from_secs(15));
    }
    use serde_json::json;

    #[test]
    fn behavior_defaults_are_written_out_and_divided_with_the_rest() {
        let (case, settings) = corpus_case("behavior/empty-behavior-differs-from-none.yaml");
        let cluster = ClusterSettings::defaults_scaled(5);
        let b = plan(&case, &settings, &cluster)
            .expect("planned")
            .hpa
            .spec
            .behavior
            .expect("a behavior");
        let periods = |r: &Option<k8s_openapi::api::autoscaling::v2::HPAScalingRules>| {
            r.as_ref()
                .and_then(|r| r.policies.clone())
                .unwrap_or_default()
                .iter()
                .map(|p| (p.type_.clone(), p.value, p.period_seconds))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            periods(&b.scale_up),
            [("Pods".into(), 4, 3), ("Percent".into(), 100, 3)]
        );
        assert_eq!(periods(&b.scale_down), [("Percent".into(), 100, 3)]);
        let down = b.scale_down.unwrap();
        assert_eq!(down.stabilization_window_seconds, None, "the flag applies");
        assert_eq!(b.scale_up.unwrap().stabilization_window_seconds, Some(0));
        // At real time the HPA is created as written; the API server defaults it.
        let as_written = plan(&case, &settings, &ClusterSettings::defaults_scaled(1)).unwrap();
        assert_eq!(as_written.hpa.spec.behavior, case.file.hpa.spec.behavior);
        // A patch that gives an HPA its first behavior cannot be divided.
        let (mut case, settings) =
            corpus_case("controller/ht-store-scale-events-outdated-kept-without-behavior.yaml");
        // As the lane poses it: no seeded memory, no starting status.
        case.file.memory = None;
        case.file.hpa.status = None;
        case.hpa.status = None;
        case.file.expect.at.iter_mut().for_each(|a| a.memory = None);
        let d = Settings::default();
        let settings = Settings {
            scale_up_limit_factor: d.scale_up_limit_factor,
            scale_up_limit_minimum: d.scale_up_limit_minimum,
            ..settings
        };
        let e = plan(&case, &settings, &cluster).unwrap_err();
        assert!(
            e.starts_with("cannot run at time scale 5: its spec patch at t=")
                && e.contains("gives the HPA a behavior"),
            "{e}"
        );
    }

    #[test]
    fn a_gate_turned_off_takes_its_dependents_along_on_kube_controller_manager_only() {
        let mut s = ClusterSettings {
            version: KubernetesVersion::V1_37,
            ..ClusterSettings::defaults_scaled(5)
        };
        assert_eq!(s.controller_manager_args(), s.flag_args());
        s.gate_overrides.insert("PodLevelResources".into(), false);
        assert_eq!(
            s.flag_args().last().unwrap(),
            "--feature-gates=PodLevelResources=false"
        );
        assert_eq!(
            s.controller_manager_args().last().unwrap(),
            "--feature-gates=PodLevelResources=false,InPlacePodLevelResourcesVerticalScaling=false,PodLevelResourceManagers=false,PodLevelResourcesFixDefaulting=false,PodLevelResourcesFixKubeletQOSClass=false"
        );
        // Before 1.35 no gate depends on another; turning a gate on takes nothing along.
        s.version = KubernetesVersion::V1_34;
        assert_eq!(s.controller_manager_args(), s.flag_args());
        s.version = KubernetesVersion::V1_37;
        s.gate_overrides.insert("PodLevelResources".into(), true);
        assert_eq!(s.controller_manager_args(), s.flag_args());
    }

    #[test]
    fn behavior_durations_divide_or_explain() {
        let mut hpa = json!({"spec": {"behavior": {
            "scaleDown": {"stabilizationWindowSeconds": 300, "policies": [{"type": "Pods", "value": 4, "periodSeconds": 60}]},
            "scaleUp": {"stabilizationWindowSeconds": 0}
        }}});
        scale_behavior(&mut hpa, 5).unwrap();
        assert_eq!(
            hpa.pointer("/spec/behavior/scaleDown/stabilizationWindowSeconds"),
            Some(&json!(60))
        );
        assert_eq!(
            hpa.pointer("/spec/behavior/scaleDown/policies/0/periodSeconds"),
            Some(&json!(12))
        );
        assert_eq!(
            hpa.pointer("/spec/behavior/scaleDown/policies/0/value"),
            Some(&json!(4))
        );
        let mut odd =
            json!({"spec": {"behavior": {"scaleUp": {"policies": [{"periodSeconds": 15}]}}}});
        let e = scale_behavior(&mut odd, 4).unwrap_err();
        assert!(
            e.contains("scaleUp.policies[0].periodSeconds is 15 s"),
            "{e}"
        );
    }

    #[test]
    fn a_case_needs_its_flags_divided_by_the_time_scale() {
        let cluster = ClusterSettings::defaults_scaled(5);
        let settings = Settings {
            cpu_initialization_period: Duration::from_secs(120),
            initial_readiness_delay: Duration::from_secs(10),
            tolerance: 0.25,
            ..Settings::default()
        };
        let need = needed(&settings, &cluster).unwrap();
        assert_eq!(need.cpu_initialization_period, Duration::from_secs(24));
        assert_eq!(need.initial_readiness_delay, Duration::from_secs(2));
        assert!(!need.same_flags(&cluster));
        assert_eq!(
            need.differences(&cluster),
            [
                "--horizontal-pod-autoscaler-cpu-initialization-period=24s",
                "--horizontal-pod-autoscaler-initial-readiness-delay=2s",
                "--horizontal-pod-autoscaler-tolerance=0.25",
            ]
        );
        // The defaults need exactly the cluster's flags; a controller with them passes the check.
        let same = needed(&Settings::default(), &cluster).unwrap();
        assert!(same.same_flags(&cluster) && same.differences(&cluster).is_empty());
        let gates = cluster.version.default_gates();
        assert_eq!(
            check_controller("kcm", &need.flag_args(), &need, &gates),
            Ok(true)
        );
        assert!(check_controller("kcm", &need.flag_args(), &cluster, &gates).is_err());
        // Sub-second flags in milliseconds, as Go reads them; what no millisecond holds is refused.
        let odd = Settings {
            initial_readiness_delay: Duration::from_secs(7),
            ..Settings::default()
        };
        assert!(
            needed(&odd, &cluster).unwrap().flag_args()[3]
                .ends_with("initial-readiness-delay=1400ms")
        );
        let e = needed(&odd, &ClusterSettings::defaults_scaled(3)).unwrap_err();
        assert!(e.contains("cannot run at time scale 3"), "{e}");
    }

    #[test]
    fn controller_manager_flags_must_match_the_time_scale() {
        let k136 = hpa_reference::KubernetesVersion::DEFAULT.default_gates();
        let args: Vec<String> = [
            "kube-controller-manager",
            "--controllers=*,bootstrapsigner,tokencleaner",
            "--horizontal-pod-autoscaler-sync-period=3s",
            "--horizontal-pod-autoscaler-downscale-stabilization=1m0s",
            "--horizontal-pod-autoscaler-cpu-initialization-period=1m0s",
            "--horizontal-pod-autoscaler-initial-readiness-delay=6s",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            check_controller_manager(&args, &ClusterSettings::defaults_scaled(5), &k136),
            Ok(true)
        );
        let e = check_controller_manager(&args, &ClusterSettings::defaults_scaled(1), &k136)
            .unwrap_err();
        assert!(
            e.contains("--horizontal-pod-autoscaler-sync-period=3s"),
            "{e}"
        );
        let defaults = vec!["kube-controller-manager".to_string()];
        assert_eq!(
            check_controller_manager(&defaults, &ClusterSettings::defaults_scaled(1), &k136),
            Ok(true)
        );
        let off = vec!["--controllers=*,-horizontal-pod-autoscaler-controller".to_string()];
        assert_eq!(
            check_controller_manager(&off, &ClusterSettings::defaults_scaled(3), &k136),
            Ok(false)
        );
    }

    #[test]
    fn controller_feature_gates_must_match_the_run() {
        let k136 = hpa_reference::KubernetesVersion::V1_36.default_gates();
        let mut zero = k136;
        zero.set("HPAScaleToZero", true).unwrap();
        let mut s = ClusterSettings::defaults_scaled(1);
        s.version = hpa_reference::KubernetesVersion::V1_36;
        let on = vec!["--feature-gates=SomethingElse=true,HPAScaleToZero=true".to_string()];
        assert_eq!(check_controller("kcm", &on, &s, &zero), Ok(true));
        let e = check_controller("kcm", &on, &s, &k136).unwrap_err();
        assert!(
            e.contains(
                "kcm runs with HPAScaleToZero=true but this run assumes HPAScaleToZero=false"
            ),
            "{e}"
        );
        let e = check_controller("kcm", &[], &s, &zero).unwrap_err();
        assert!(e.contains("--feature-gates HPAScaleToZero=false"), "{e}");
        assert_eq!(check_controller("kcm", &[], &s, &k136), Ok(true));
        // A controller that names its release must be the judged one.
        let other = vec!["--kubernetes-version=1.34".to_string()];
        let e = check_controller("hpa-reference", &other, &s, &k136).unwrap_err();
        assert!(e.contains("--kubernetes-version 1.34"), "{e}");
        s.version = hpa_reference::KubernetesVersion::V1_37;
        let k137 = hpa_reference::KubernetesVersion::V1_37.default_gates();
        assert_eq!(check_controller("kcm", &[], &s, &k137), Ok(true));
    }

    #[rstest::rstest]
    #[case::statefulset("docs/docs-statefulset-target.yaml", Ok(WorkloadKind::StatefulSet))]
    #[case::deployment("behavior/policy-walkdown.yaml", Ok(WorkloadKind::Deployment))]
    #[case::daemonset(
        "docs/docs-daemonset-not-scalable.yaml",
        Err("scales a DaemonSet (apps/v1)")
    )]
    #[case::finished_pods_kept_unreplaced(
        "readiness/scale-up-proposal-below-current-keeps-the-count.yaml",
        Err("ends pods at t=0 and keeps them unreplaced (`workload.fixedPods`)")
    )]
    #[case::finished_pod_back_to_running(
        "regressions/regression-72775-surge-extra-ready-pod-cpu.yaml",
        Err("gives pods a running phase at t=0 after finishing pods at t=0")
    )]
    #[case::pods_with_their_own_requests(
        "docs/docs-utilization-uses-each-pods-own-request.yaml",
        Ok(WorkloadKind::Deployment)
    )]
    #[case::stray_samples(
        "metrics/pods-metric-stray-sample-averaged-not-counted.yaml",
        Ok(WorkloadKind::Deployment)
    )]
    #[case::invalid_selector(
        "fidelity/invalid-selector-message.yaml",
        Err("sets the scale's status.selector to \"app=web,tier in (a b)\"")
    )]
    #[case::several_hpas_with_disjoint_pods(
        "controller/several-hpas-each-kept-apart.yaml",
        Ok(WorkloadKind::Deployment)
    )]
    #[case::several_hpas_whose_selectors_overlap(
        "controller/several-hpas-overlap-first-reconciled-scales-once.yaml",
        Err("HPA web-all's selector takes in HPA web's pods")
    )]
    fn scale_targets_the_lane_creates(
        #[case] file: &str,
        #[case] want: Result<WorkloadKind, &str>,
    ) {
        let (case, settings) = corpus_case(file);
        let got = plan(&case, &settings, &ClusterSettings::defaults_scaled(1)).map(|p| p.kind);
        match (got, want) {
            (Ok(k), Ok(w)) => assert_eq!(k, w),
            (Err(e), Err(w)) => assert!(e.contains(w), "{e}"),
            (got, want) => panic!("{file}: got {got:?}, want {want:?}"),
        }
    }

    #[rstest::rstest]
    #[case::finished("calculator/rc-resource-scale-up-failed-pods-ignored.yaml")]
    #[case::deleted("calculator/rc-group-pods-ignore-deleted-pending-pod.yaml")]
    fn ended_pods_are_posed_where_a_controller_replaces_them(#[case] file: &str) {
        let (case, _) = corpus_case(file);
        let cluster = ClusterSettings::defaults_scaled(1);
        // As the lane poses it (these cases seed a memory the core shows not to matter).
        let what = super::super::seed::Unposable::of(&case, cluster.version);
        let mut fresh = super::super::seed::fresh(&case, what, &cluster);
        let settings = crate::run::resolve_settings(
            &fresh,
            crate::targets::GateSupport::PerCase,
            &crate::run::RunOptions::default(),
        )
        .expect("settings");
        let p = plan(&fresh, &settings, &cluster).expect("planned");
        assert_eq!(p.kind, WorkloadKind::Deployment);
        // Kept unreplaced, they are not.
        fresh.file.workload.fixed_pods = true;
        let e = plan(&fresh, &settings, &cluster).unwrap_err();
        assert!(e.contains("keeps them unreplaced"), "{e}");
    }

    #[test]
    fn pods_own_requests_need_the_resize_subresource() {
        let (case, settings) = corpus_case("docs/docs-utilization-uses-each-pods-own-request.yaml");
        let mut cluster = ClusterSettings::defaults_scaled(1);
        cluster.version = hpa_reference::KubernetesVersion::V1_33;
        assert!(plan(&case, &settings, &cluster).is_ok());
        cluster.version = hpa_reference::KubernetesVersion::V1_32;
        let e = plan(&case, &settings, &cluster).unwrap_err();
        assert!(
            e.contains("resizing them in place") && e.contains("the cluster runs 1.32"),
            "{e}"
        );
    }

    #[test]
    fn a_seeded_status_is_posed_held_until_t0_where_a_new_hpa_is_reconciled_at_once() {
        let (mut case, settings) =
            corpus_case("lifecycle/scale-from-zero-above-min-not-clamped-to-min.yaml");
        let mut cluster = ClusterSettings::defaults_scaled(1);
        // 1.37 reconciles a new HPA at once, before the lane could write its status: the HPA is
        // held (a scale target that does not exist) until t = 0.
        let p = plan(&case, &settings, &cluster).unwrap();
        assert!(p.held);
        assert_eq!(held_target("web"), "web-held-until-t0");
        // An HPA alongside is not held: its status stays unposable there.
        let mut member = case.clone();
        member.hpa.metadata.name = Some("other".into());
        case.members.push(member);
        let e = starting_status(&case.members[0], &cluster, true).unwrap_err();
        assert!(
            e.contains("starts HPA other (alongside) from a status")
                && e.contains("reconciles a new HPA at once"),
            "{e}"
        );
        case.members.clear();
        cluster.version = hpa_reference::KubernetesVersion::V1_36;
        assert!(case.hpa.status.is_some());
        assert!(!plan(&case, &settings, &cluster).unwrap().held);
        if let Some(s) = case.hpa.status.as_mut() {
            s.desired_replicas = -1;
        }
        for version in [
            hpa_reference::KubernetesVersion::V1_36,
            hpa_reference::KubernetesVersion::V1_37,
        ] {
            cluster.version = version;
            let e = plan(&case, &settings, &cluster).unwrap_err();
            assert!(
                e.contains("starts HPA web from status.desiredReplicas -1")
                    && e.contains("a starting state a cluster cannot pose"),
                "{e}"
            );
        }
    }

    /// A corpus case (path under `cases/`) and the settings it runs with.
    fn corpus_case(file: &str) -> (Case, Settings) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../cases")
            .join(file);
        let case = crate::case::load_case(&path).expect("a corpus case");
        let settings = crate::run::resolve_settings(
            &case,
            crate::targets::GateSupport::PerCase,
            &crate::run::RunOptions::default(),
        )
        .expect("settings");
        (case, settings)
    }

    #[test]
    fn other_hpas_are_posed_on_empty_deployments_with_scale_to_zero() {
        let (case, mut settings) =
            corpus_case("controller/selector-overlap-with-a-broader-selector.yaml");
        let cluster = ClusterSettings::defaults_scaled(5);
        settings.gates.hpa_scale_to_zero = true;
        let p = plan(&case, &settings, &cluster).expect("planned");
        let others: Vec<_> = p
            .others
            .iter()
            .map(|o| (o.name.as_str(), o.target.as_str(), o.labels.clone()))
            .collect();
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(
            others,
            [
                ("web-all", "web-all-other-target", labels(&[("app", "web")])),
                (
                    "web-backend",
                    "web-backend-other-target",
                    labels(&[("app", "web"), ("tier", "backend")])
                ),
            ]
        );
        // Without the gate an empty target stops the reconcile before the selector.
        settings.gates.hpa_scale_to_zero = false;
        let e = plan(&case, &settings, &cluster).unwrap_err();
        assert!(e.contains("needs HPAScaleToZero"), "{e}");
        // Only equality terms make a Deployment's matchLabels.
        assert_eq!(
            equality_labels("a==b, c=d"),
            Some(labels(&[("a", "b"), ("c", "d")]))
        );
        for refused in ["", "a", "a!=b", "a in (b,c)", "!a", "a=b,c"] {
            assert_eq!(equality_labels(refused), None, "{refused}");
        }
    }

    #[test]
    fn hpas_alongside_are_planned_each_or_the_case_is_skipped() {
        let (case, settings) = corpus_case("controller/several-hpas-each-kept-apart.yaml");
        let cluster = ClusterSettings::defaults_scaled(5);
        let p = plan(&case, &settings, &cluster).expect("planned");
        let names: Vec<_> = p
            .members
            .iter()
            .map(|m| m.hpa.metadata.name.clone().unwrap_or_default())
            .collect();
        assert_eq!(names, ["api", "worker"]);
        // Their behavior is time-scaled like the case's HPA's.
        let period = |h: &HorizontalPodAutoscaler| {
            h.spec
                .behavior
                .as_ref()
                .and_then(|b| b.scale_up.as_ref())
                .and_then(|u| {
                    u.policies
                        .as_ref()
                        .and_then(|p| p.first())
                        .map(|p| p.period_seconds)
                })
        };
        assert_eq!(period(&p.members[0].hpa), Some(12));
        // A metrics API error would be every HPA's in the namespace.
        let mut broken = case.clone();
        broken.members[1].file.timeline[0].metric_error =
            Some(serde_json::from_value(json!({"metric": "qps"})).expect("a metric error"));
        let e = plan(&broken, &settings, &cluster).unwrap_err();
        assert!(
            e.contains("HPA worker has a metrics API error at t=0"),
            "{e}"
        );
        // A member the lane cannot pose skips the case, naming the member.
        let mut seeded = case;
        seeded.members[0].file.memory = Some(Default::default());
        let e = plan(&seeded, &settings, &cluster).unwrap_err();
        assert!(e.starts_with("HPA api alongside: the case seeds"), "{e}");
    }

    #[test]
    fn scaled_defaults_divide_every_duration() {
        let s = ClusterSettings::defaults_scaled(5);
        assert_eq!(s.sync_period, Duration::from_secs(3));
        assert_eq!(s.downscale_stabilization, Duration::from_secs(60));
        assert_eq!(s.initial_readiness_delay, Duration::from_secs(6));
        assert_eq!(s.cpu_initialization_period, Duration::from_secs(60));
        assert_eq!(s.case_sync_period(), 15.0);
    }
}
