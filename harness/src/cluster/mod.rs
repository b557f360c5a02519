//! The real-time lane: the corpus on a real cluster (`--target cluster`). Beside the virtual-time
//! runner, not inside it: here the controller under test (kube-controller-manager's HPA
//! controller, or the reference controller deployed in the cluster) owns its schedule, and the
//! lane applies each case's timeline on the wall clock and samples what the controller writes.
//!
//! - [`plan`]: what a cluster can pose of a case (else a skip with the reason), and time scaling;
//! - [`lane`]: one case in its own namespace, its pods on a simulated node, metrics through the
//!   in-cluster stub (`metrics-stub/`);
//! - [`progress`]: a status line on a terminal, plain lines otherwise;
//! - [`rbac`]: least privilege of a deployed controller, from the API server's audit log;
//! - [`seed`]: a case a cluster cannot pose as written (seeded memory, a status on 1.37, scale-up
//!   limit constants, the cluster's flags) runs posed as it can be when the core shows that does
//!   not matter;
//! - [`prelude`]: a case whose seeded memory matters is posed by letting the controller record one
//!   before t = 0, when the core shows the case then gives its own trace;
//! - [`patch`]: a spec patch on a release that reconciles it at once (1.37): the case runs where
//!   the core gives its own trace with that extra reconcile;
//! - [`rollout`]: a timeline's rolling update, carried out by the cluster's Deployment
//!   controller, its pods paired with the world's by revision;
//! - [`reconfigure`]: with `--reconfigure-controller`, cases run in groups by the controller flags
//!   they need, the controller restarted with each group's flags and put back afterwards;
//! - [`safety`]: the lane refuses a cluster that is not made for it (unless
//!   `--disposable-cluster`), and `cluster-clean` removes what it created;
//! - [`check`]: the case's expectations over the samples, with a timing tolerance of one sync
//!   period plus a stated margin.

pub mod check;
pub mod faults;
pub mod kube;
pub mod lane;
pub mod patch;
pub mod plan;
pub mod prelude;
pub mod progress;
pub mod rbac;
pub mod reconfigure;
pub mod requests;
pub mod rollout;
pub mod safety;
pub mod scale;
pub mod seed;
pub mod stub;
#[cfg(test)]
mod testing;
pub mod webhook;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::kube::Client;
use ::kube::config::{KubeConfigOptions, Kubeconfig};
use hpa_reference::FeatureGates;

use crate::case::Case;
use crate::run::{CaseResult, Outcome, RunOptions, resolve_settings};
use crate::targets::GateSupport;
use plan::ClusterSettings;

/// How to reach the cluster and what its controller runs with.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// The kubeconfig (default: `$KUBECONFIG` or `~/.kube/config`).
    pub kubeconfig: Option<PathBuf>,
    /// Its context (default: the current one).
    pub context: Option<String>,
    /// The controller's settings.
    pub settings: ClusterSettings,
    /// The feature gates kube-controller-manager runs with.
    pub gates: FeatureGates,
    /// Cluster seconds added to one sync period for the timing tolerance.
    pub margin: Duration,
    /// Cases run at once (each in its own namespace).
    pub parallel: usize,
    /// Reconfigure the controller for cases that need other flags than the cluster's
    /// (`--reconfigure-controller`; [`reconfigure`]), instead of posing them with the cluster's.
    pub reconfigure: bool,
    /// The cluster may be disrupted though it is not one made for the lane
    /// (`--disposable-cluster`; [`safety`]).
    pub disposable: bool,
}

/// The lane could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No usable cluster.
    #[error("cannot use the cluster: {0}")]
    Connect(String),
    /// Ctrl-C or SIGTERM: the run's namespaces were removed.
    #[error("interrupted; removed the run's namespaces: {0}")]
    Interrupted(String),
}

impl ClusterOptions {
    /// Case seconds within which an expectation at t may hold: one sync period plus the margin.
    pub fn tolerance(&self) -> f64 {
        self.settings.case_sync_period()
            + self.margin.as_secs_f64() * f64::from(self.settings.time_scale.max(1))
    }

    /// The target's name in reports, with the timing rule it was judged by.
    pub fn describe(&self, context: &str) -> String {
        format!(
            "cluster {context} (judged at Kubernetes {}, time scale {}, expectations within ±{:.0} s of case time: one {:.0} s sync period + {:.1} s margin)",
            self.settings.version,
            self.settings.time_scale,
            self.tolerance(),
            self.settings.case_sync_period(),
            self.margin.as_secs_f64() * f64::from(self.settings.time_scale.max(1)),
        )
    }
}

async fn connect(opts: &ClusterOptions) -> Result<(Client, String), ClusterError> {
    connect_to(opts.kubeconfig.as_deref(), opts.context.as_deref()).await
}

/// Runs `work` on a runtime of its own (`threads` workers; 1: the calling thread alone) with a
/// client for `context` of `kubeconfig` ([`connect_to`]) and the context's name: the one way the
/// cluster subcommands (`cluster-clean`, `kind-faults first-read`, `kind-scale`) reach the
/// cluster from blocking code. Errors as text, for their one line on stderr.
pub fn with_client<T, F, Fut>(
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
    threads: usize,
    work: F,
) -> Result<T, String>
where
    F: FnOnce(Client, String) -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let runtime = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
    }
    .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let (client, context) = connect_to(kubeconfig, context)
            .await
            .map_err(|e| e.to_string())?;
        work(client, context).await
    })
}

/// A client for `context` of `kubeconfig` (defaults: `$KUBECONFIG` or `~/.kube/config`, its
/// current context; with neither, in a pod, the pod's service account), checked by asking the
/// API server its version; and the context's name.
pub async fn connect_to(
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
) -> Result<(Client, String), ClusterError> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    let kubeconfig = match kubeconfig {
        Some(p) => Kubeconfig::read_from(p)
            .map_err(|e| ClusterError::Connect(format!("{}: {e}", p.display())))?,
        None => match Kubeconfig::read() {
            Ok(k) => k,
            // No kubeconfig, in a pod: the pod's service account.
            Err(_) if context.is_none() && in_a_pod() => return in_cluster().await,
            Err(e) => return Err(ClusterError::Connect(e.to_string())),
        },
    };
    let context = context
        .map(str::to_string)
        .or_else(|| kubeconfig.current_context.clone())
        .unwrap_or_else(|| "(current)".into());
    let config = ::kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| ClusterError::Connect(e.to_string()))?;
    let client = Client::try_from(config).map_err(|e| ClusterError::Connect(e.to_string()))?;
    client
        .apiserver_version()
        .await
        .map_err(|e| ClusterError::Connect(e.to_string()))?;
    Ok((client, context))
}

/// Whether this process runs in a pod (the API server's address in its environment).
fn in_a_pod() -> bool {
    std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
}

/// A client with the pod's service account, checked like [`connect_to`]'s.
async fn in_cluster() -> Result<(Client, String), ClusterError> {
    let config = ::kube::Config::incluster()
        .map_err(|e| ClusterError::Connect(format!("in-cluster configuration: {e}")))?;
    let client = Client::try_from(config).map_err(|e| ClusterError::Connect(e.to_string()))?;
    client
        .apiserver_version()
        .await
        .map_err(|e| ClusterError::Connect(e.to_string()))?;
    Ok((client, "in-cluster".into()))
}

/// The progress line's word for an outcome.
fn word(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Passed => "passed",
        Outcome::Failed(_) => "FAILED",
        Outcome::Errored(_) => "ERROR",
        Outcome::Skipped(_) => "skipped",
    }
}

/// `expect.rejected` on the cluster: the API server must refuse the HPA with a message
/// containing `want` (in a namespace of its own, removed afterwards).
async fn rejected(
    client: &Client,
    ns: &str,
    run_id: &str,
    plan: &plan::Plan,
    want: &str,
) -> Result<Outcome, String> {
    kube::create_namespace(client, ns, run_id).await?;
    let created = kube::try_create_hpa(client, ns, &plan.hpa).await;
    kube::delete_namespace(client, ns).await;
    let have = match created? {
        None => "accepted".to_string(),
        Some(message) if message.contains(want) => return Ok(Outcome::Passed),
        Some(message) => message,
    };
    Ok(Outcome::Failed(vec![crate::run::fail(
        None, "rejected", want, have,
    )]))
}

fn namespace_for(case: &Case, run: &str) -> String {
    namespace_name(case.name(), run)
}

/// `hpa-<case name, cut>-<6 hex digits of its hash>-<run>`: at most 52 characters (a namespace
/// name may have 63), unique per case even when two names share their first 34 characters.
fn namespace_name(name: &str, run: &str) -> String {
    let mut base: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    base.truncate(34);
    let base = base.trim_matches('-');
    let hash = crate::report::corpus::fnv(&[name]);
    format!("hpa-{base}-{}-{run}", &hash[..6])
}

fn result(
    case: &Case,
    outcome: Outcome,
    trace: Vec<crate::run::trace::TickTrace>,
    started: Instant,
) -> CaseResult {
    CaseResult::of(case, outcome, trace, started, None)
}

/// What the lane would do with one case, planned without a cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// How it is posed when not as written ([`crate::run::CaseResult::posed`]).
    pub posed: Option<String>,
    /// The controller flags it runs with, where they are not the cluster's (`--name=value`).
    pub reconfigured: Vec<String>,
    /// The time scale it runs at, where not the run's: its times do not divide by the run's.
    pub time_scale: Option<u32>,
}

impl Planned {
    /// Its settings group: the flags and time scale it runs with, where not the cluster's.
    pub fn group(&self) -> Option<String> {
        let mut parts = self.reconfigured.clone();
        parts.extend(self.time_scale.map(|t| format!("(at time scale {t})")));
        (!parts.is_empty()).then(|| parts.join(" "))
    }
}

/// What the lane would do with each case, without a cluster: how it runs, or the reason it is
/// skipped.
pub fn plan_all(
    cases: &[Case],
    opts: &ClusterOptions,
    run_opts: &RunOptions,
) -> Vec<Result<Planned, String>> {
    let mut out: Vec<Result<Planned, String>> = Vec::with_capacity(cases.len());
    let mut runnable = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        match posed_plan(case, opts, run_opts) {
            Ok(p) => {
                runnable.push((i, p));
                out.push(Err(String::new()));
            }
            Err(e) => out.push(Err(e)),
        }
    }
    // As the run groups them (merged groups included).
    for (_, members) in settings_groups(runnable, cases, &opts.settings, run_opts) {
        for (i, p) in members {
            out[i] = Ok(Planned {
                reconfigured: p.flags.differences(&opts.settings),
                time_scale: (p.flags.time_scale != opts.settings.time_scale)
                    .then_some(p.flags.time_scale),
                posed: p.posed_why(&opts.settings),
            });
        }
    }
    out
}

/// How the lane runs one case.
#[derive(Debug, Clone)]
struct Posed {
    /// Its plan.
    plan: plan::Plan,
    /// The copy that runs instead when the case cannot be posed as written, and why it shows the
    /// same ([`seed`]).
    fresh: Option<(Case, String)>,
    /// The case whose trace on the core times the decisions the lane checks, when not the one
    /// that runs: a prelude's copy starts from the memory and status the prelude leaves.
    truth: Option<Case>,
    /// The controller flags it runs with: the cluster's, or with `--reconfigure-controller` the
    /// case's own.
    flags: ClusterSettings,
    /// Why its spec patches, reconciled at once on the cluster's release, change nothing
    /// ([`patch`]).
    at_once: Option<String>,
    /// Why it runs in a settings group with other cases' flags besides its own
    /// ([`merge_groups`]): the core shows they change nothing for it.
    shared: Option<String>,
}

impl Posed {
    /// The result's [`crate::run::CaseResult::posed`]: the posed copy's reason and the
    /// reconfigured flags, when either applies.
    fn posed_why(&self, cluster: &ClusterSettings) -> Option<String> {
        let flags = self.flags.differences(cluster);
        let mut parts = Vec::new();
        if let Some(shared) = &self.shared {
            parts.push(shared.clone());
        } else if !flags.is_empty() {
            parts.push(format!(
                "on the controller reconfigured with the case's flags {} (at time scale {}{})",
                flags.join(" "),
                self.flags.time_scale,
                match self.flags.time_scale.cmp(&cluster.time_scale) {
                    std::cmp::Ordering::Equal => "",
                    std::cmp::Ordering::Less => ": its times do not divide by the run's",
                    std::cmp::Ordering::Greater => ": a faster clock for its long sync period",
                }
            ));
        }
        if self.flags.gate_overrides != cluster.gate_overrides {
            parts.push(
                "its feature gates on the HPA controller only (the API server keeps the cluster's)"
                    .into(),
            );
        }
        if self.plan.held {
            parts.push(format!(
                "its starting status written with the HPA held until t = 0 (its scale target `{}` until then, which does not exist: Kubernetes {} reconciles a new HPA at once)",
                plan::held_target(&self.plan.hpa.spec.scale_target_ref.name),
                cluster.version
            ));
        }
        if self.plan.scale_faults {
            parts.push(format!(
                "its scale update errors refused by the metrics stub's admission webhook (the API server words each `{}<the case's error>`; read as the case's)",
                hpa_metrics_stub::control::denial_prefix()
            ));
        }
        if self.plan.rollout {
            parts.push(
                "its rollout carried out by the cluster's Deployment controller (a real new ReplicaSet; the world's pods written on the old and new pods alike, paired by revision)"
                    .into(),
            );
        }
        if let Some((_, why)) = &self.fresh {
            parts.push(why.clone());
        }
        parts.extend(self.at_once.clone());
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// How the lane poses a case: its plan, the controller flags it runs with and — when it cannot be
/// posed as written ([`seed::Unposable`]: seeded memory, a starting status on a release that
/// reconciles a new HPA at once, scale-up limit constants, flags other than the cluster's when the
/// run does not reconfigure) and the core shows that does not matter ([`seed`]) — the copy that
/// runs instead, with why; or the reason the case is skipped. Such a case is planned from its
/// posed copy first, so a reason that has nothing to do with what was changed comes first.
fn posed_plan(case: &Case, opts: &ClusterOptions, run_opts: &RunOptions) -> Result<Posed, String> {
    let n = opts.settings.time_scale;
    let at = |m: u32| ClusterOptions {
        settings: opts.settings.at_time_scale(m),
        ..opts.clone()
    };
    let (mut posed, settings) = match posed_start(case, opts, run_opts) {
        // Times a time scale cannot divide: on the controller reconfigured, at the fastest
        // slower clock they divide by (real time at worst).
        Err(e) if e.starts_with("cannot run at time scale") && n > 1 => {
            if !opts.reconfigure {
                return Err(format!(
                    "{e}: --reconfigure-controller runs it at the fastest slower time scale its times divide by (real time at worst) on the controller reconfigured"
                ));
            }
            let mut m = n - 1;
            loop {
                match posed_start(case, &at(m), run_opts) {
                    Err(r) if m > 1 && r.starts_with("cannot run at time scale") => m -= 1,
                    Err(r) if m == 1 => {
                        return Err(format!("{e}; at real time (time scale 1): {r}"));
                    }
                    Err(r) => return Err(format!("{e}; at time scale {m}: {r}")),
                    Ok(p) => break p,
                }
            }
        }
        r => r?,
    };
    // A long sync period: the fastest clock it can run at instead, if any.
    if opts.reconfigure
        && let Some((p, _)) = faster_clocks(case, &opts.settings)
            .find_map(|m| posed_start(case, &at(m), run_opts).ok())
    {
        posed = p;
    }
    if patch::reconciled_at_once(case, opts.settings.version, &settings) {
        // The copy that runs (as written, posed, or from a prelude's memory), with the extra
        // reconcile of each patch half a sync period before its tick (`lane`).
        let runs = posed
            .truth
            .as_ref()
            .or(posed.fresh.as_ref().map(|(c, _)| c))
            .unwrap_or(case);
        // The lane applies a patch in its first round at or after half a period before the
        // tick: up to a few case seconds later on a real clock.
        let half = i64::from(case.sync_period.max(1)) / 2;
        let leads = [half, (half - 3).max(1)];
        let mut ticks = 0;
        for lead in leads {
            ticks = seed::same_trace_on(case, runs, &patch::AtOnce { lead }, run_opts).map_err(|d| {
                format!(
                    "patches the HPA's spec, which Kubernetes {} reconciles at once (#138294, HPAGeneration) besides its periodic reconcile, and that matters: on the reference core with that reconcile {lead} s before the patch's tick, {d}",
                    opts.settings.version
                )
            })?;
        }
        posed.at_once = Some(format!(
            "its spec patches reconciled at once as Kubernetes {} does (#138294): on the reference core a reconcile {} to {} s before each patch's tick gives the same trace ({ticks} ticks)",
            opts.settings.version, leads[1], leads[0]
        ));
    }
    Ok(posed)
}

/// The faster clocks for a case whose sync period is long (at least four of the cluster's, in
/// case seconds), fastest first: the multiples of the run's time scale that keep its sync period
/// at least the cluster's in real seconds; it runs at the first its times divide by —
/// `rc-group-pods-unready-*`'s 590 s period at ×10 (59 s) instead of ×5 (118 s), which halves
/// its group's wall time (its tail is two periods). None for any other case.
fn faster_clocks(case: &Case, cluster: &ClusterSettings) -> impl Iterator<Item = u32> {
    let n = cluster.time_scale.max(1);
    let period = f64::from(case.sync_period);
    let most = if period < 4.0 * cluster.case_sync_period() {
        0
    } else {
        (period / cluster.sync_period.as_secs_f64()).floor() as u32 / n
    };
    (2..=most).rev().map(move |k| k * n)
}

/// [`posed_plan`] but for spec patches reconciled at once; with the settings the case resolves to.
fn posed_start(
    case: &Case,
    opts: &ClusterOptions,
    run_opts: &RunOptions,
) -> Result<(Posed, hpa_reference::Settings), String> {
    let overrides = gate_overrides(case, &opts.gates);
    if overrides.is_empty() {
        let settings = resolve_settings(case, GateSupport::Fixed(opts.gates), run_opts)?;
        return posed_with(case, &settings, opts, run_opts).map(|p| (p, settings));
    }
    // Gates other than the cluster's: on the controller reconfigured with the case's. Resolved
    // with them first, so a reason that no controller's gates change (a gate the release locks
    // or lacks) comes first.
    let flags = ClusterSettings {
        gate_overrides: overrides,
        ..opts.settings.clone()
    };
    let with_gates = ClusterOptions {
        gates: flags.gates_over(&opts.gates),
        settings: flags,
        ..opts.clone()
    };
    let settings = resolve_settings(case, GateSupport::Fixed(with_gates.gates), run_opts)?;
    if case.file.expect.rejected.is_some() || !opts.reconfigure {
        let e = resolve_settings(case, GateSupport::Fixed(opts.gates), run_opts)
            .err()
            .unwrap_or_default();
        return Err(if case.file.expect.rejected.is_some() {
            format!(
                "{e}: the API server's validation decides it, and the lane reconfigures only the HPA controller's gates"
            )
        } else {
            format!(
                "{e}: --reconfigure-controller runs it on the controller reconfigured with {}",
                plan::feature_gates_arg(&with_gates.settings.gate_overrides)
            )
        });
    }
    posed_with(case, &settings, &with_gates, run_opts).map(|p| (p, settings))
}

/// The case's declared gates whose values the cluster's controller does not run.
fn gate_overrides(
    case: &Case,
    cluster: &hpa_reference::FeatureGates,
) -> std::collections::BTreeMap<String, bool> {
    case.gates
        .iter()
        .filter(|(name, used)| cluster.get(name).is_ok_and(|v| v != used.value))
        .map(|(name, used)| (name.clone(), used.value))
        .collect()
}

/// [`posed_start`] with the case's settings resolved.
fn posed_with(
    case: &Case,
    settings: &hpa_reference::Settings,
    opts: &ClusterOptions,
    run_opts: &RunOptions,
) -> Result<Posed, String> {
    if case.file.expect.rejected.is_some() {
        return plan::plan(case, settings, &opts.settings).map(|plan| Posed {
            plan,
            fresh: None,
            truth: None,
            flags: opts.settings.clone(),
            at_once: None,
            shared: None,
        });
    }
    let need = plan::needed(settings, &opts.settings)?;
    let what = seed::Unposable::of(case, opts.settings.version);
    if need.same_flags(&opts.settings) {
        return pose(case, settings, what, need, opts, run_opts);
    }
    if need.sync_period == opts.settings.sync_period {
        // Other flags than the cluster's: first with the cluster's, where the core shows they
        // change nothing (no restart needed); else on the controller reconfigured, if allowed.
        let as_cluster = seed::Unposable {
            flags: true,
            ..what
        };
        match pose(
            case,
            settings,
            as_cluster,
            opts.settings.clone(),
            opts,
            run_opts,
        ) {
            Ok(p) => return Ok(p),
            Err(e) if !opts.reconfigure => {
                // The hint only where reconfiguring would run it: else the reason is another.
                return Err(
                    match pose(case, settings, what, need.clone(), opts, run_opts) {
                        Ok(_) => format!(
                            "{e}; with the case's flags, {}, it runs: --reconfigure-controller runs it on the controller reconfigured",
                            need.differences(&opts.settings).join(" ")
                        ),
                        Err(other) => other,
                    },
                );
            }
            Err(_) => {}
        }
    } else if !opts.reconfigure {
        return Err(format!(
            "needs --horizontal-pod-autoscaler-sync-period {} s, but the cluster's controller runs with {} s{}: --reconfigure-controller runs it on the controller reconfigured",
            settings.sync_period.as_secs_f64(),
            opts.settings.case_sync_period(),
            scale_words(opts.settings.time_scale)
        ));
    }
    pose(case, settings, what, need, opts, run_opts)
}

/// The case posed on a controller with `flags`: as written when `what` changes nothing, else the
/// copy without `what` when the core shows the same trace ([`seed`]).
fn pose(
    case: &Case,
    settings: &hpa_reference::Settings,
    what: seed::Unposable,
    flags: ClusterSettings,
    opts: &ClusterOptions,
    run_opts: &RunOptions,
) -> Result<Posed, String> {
    if what.none() {
        return plan::plan(case, settings, &flags).map(|plan| Posed {
            plan,
            fresh: None,
            truth: None,
            flags,
            at_once: None,
            shared: None,
        });
    }
    let fresh = seed::fresh(case, what, &opts.settings);
    if what.memory_expected
        && std::iter::once(&fresh).chain(&fresh.members).all(|c| {
            let x = &c.file.expect;
            x.at.is_empty() && x.trajectory.is_none() && x.final_replicas.is_none()
        })
    {
        return Err(
            "expects nothing but the controller's memory, which no cluster's controller shows"
                .into(),
        );
    }
    let fresh_settings = resolve_settings(&fresh, GateSupport::Fixed(opts.gates), run_opts)?;
    let plan = plan::plan(&fresh, &fresh_settings, &flags)?;
    let why = seed::shown_irrelevant(case, &fresh, what, run_opts).map_err(|e| {
        if what.parts().iter().filter(|x| **x).count() < 2 {
            return e;
        }
        match seed::which_matter(case, what, &opts.settings, run_opts).as_slice() {
            [] => format!("{e} (none of these alone changes it: only together)"),
            [one] => format!("{e} (alone, {one} changes it)"),
            many => format!("{e} (alone, each of {} changes it)", many.join(" and ")),
        }
    });
    match why {
        Ok(why) => Ok(Posed {
            plan,
            fresh: Some((fresh, why)),
            truth: None,
            flags,
            at_once: None,
            shared: None,
        }),
        Err(e) if what.status && case.members.iter().all(|m| m.hpa.status.is_none()) => {
            // The case's own starting status, written with the HPA held until t = 0
            // (`plan::starting_status`).
            let held = seed::Unposable {
                status: false,
                ..what
            };
            // (A seeded memory that matters goes on to a prelude there, which writes the status.)
            pose(case, settings, held, flags, opts, run_opts)
                .map_err(|h| format!("{e}; with its starting status held until t = 0: {h}"))
        }
        Err(e) if what.memory || what.status => {
            with_prelude(case, what, flags, opts, run_opts).map_err(|p| format!("{e}; {p}"))
        }
        Err(e) => Err(e),
    }
}

/// The case posed with a prelude ([`prelude`]): the controller records its memory and writes its
/// status before t = 0, when the core shows the case gives its own trace from them; else why not.
fn with_prelude(
    case: &Case,
    what: seed::Unposable,
    flags: ClusterSettings,
    opts: &ClusterOptions,
    run_opts: &RunOptions,
) -> Result<Posed, String> {
    let what = seed::Unposable {
        memory: true,
        status: true,
        ..what
    };
    let mut fresh = seed::fresh(case, what, &opts.settings);
    // The prelude writes the status the case starts from.
    fresh.hpa.status = None;
    fresh.file.hpa.status = None;
    let settings = resolve_settings(&fresh, GateSupport::Fixed(opts.gates), run_opts)?;
    let versioned = crate::case::versions::at_version(&fresh, run_opts.version)?;
    // On a cluster t = 0 follows the reconcile the lane sees fail: the times the prelude recorded
    // lie up to a sync period earlier before t = 0 than planned (`cluster::lane`), or a moment
    // later. The filler tried first is zero (proposals below every later one, where a scale-down
    // window matters); then t = 0's answers (proposals at t = 0's, where a scale-up window does).
    let period = i64::from(fresh.sync_period.max(1));
    let seed = case.file.memory.as_ref();
    let mut why_not = Vec::new();
    let mut found = None;
    // Then, where the case starts from a status of its own, the lane writes that one after the
    // prelude's failing reconcile (the controller reads it at t = 0) instead of leaving the
    // prelude's.
    let written = case.hpa.status.as_ref();
    let mut tries = vec![
        (prelude::Answers::Level(0), false),
        (prelude::Answers::AtZero, false),
    ];
    if written.is_some() {
        tries.extend([
            (prelude::Answers::Level(0), true),
            (prelude::Answers::AtZero, true),
        ]);
    }
    for (filler, status_written) in tries {
        let played = prelude::prelude(&versioned, &settings, seed, filler).map(|mut p| {
            if let Some(s) = written.filter(|_| status_written) {
                p.status = s.clone();
                p.schedule.status_written = true;
            }
            p
        });
        let tried = played.and_then(|p| {
            let mut ticks = 0;
            for skew in [0, 1, -1, -period / 2, 1 - period] {
                ticks = seed::same_trace(case, &prelude::posed(&fresh, &p, skew), run_opts)
                    .map_err(|d| {
                        let when = match skew {
                            0 => String::new(),
                            s => format!(
                                " (recorded {} s {})",
                                s.abs(),
                                if s < 0 { "earlier" } else { "later" }
                            ),
                        };
                        format!(
                            "with the memory{when} and status a {} s prelude with {} leaves{}, on the reference core {d}",
                            p.schedule.seconds,
                            p.schedule.words(),
                            if p.schedule.status_written { " (the status the case's own, written after it)" } else { "" }
                        )
                    })?;
            }
            Ok((p, ticks))
        });
        match tried {
            Ok(t) => {
                found = Some(t);
                break;
            }
            Err(e) if !why_not.contains(&e) => why_not.push(e),
            Err(_) => {}
        }
    }
    let Some((p, ticks)) = found else {
        return Err(format!(
            "a prelude does not pose it either: {}",
            why_not.join("; nor ")
        ));
    };
    let mut plan = plan::plan(&fresh, &settings, &flags)?;
    let why = format!(
        "with a {} s prelude instead of a seeded memory (the HPA created before t = 0, {} until the last reconcile before it, which fails{}): on the reference core at {} the case gives the same trace from what the prelude leaves, with its recorded times as planned or up to a sync period earlier ({ticks} ticks: replicas, status and events)",
        p.schedule.seconds,
        p.schedule.words(),
        if p.schedule.status_written {
            "; then the lane writes the case's starting status"
        } else {
            ""
        },
        run_opts.version
    );
    if p.schedule.status_written {
        plan.hpa.status = written.cloned();
    }
    plan.prelude = Some(p.schedule.clone());
    Ok(Posed {
        plan,
        truth: Some(prelude::posed(&fresh, &p, 0)),
        fresh: Some((fresh, why)),
        flags,
        at_once: None,
        shared: None,
    })
}

fn scale_words(n: u32) -> String {
    if n > 1 {
        format!(" (at time scale {n})")
    } else {
        String::new()
    }
}

/// The HPA controller under test.
#[derive(Debug, Clone, PartialEq)]
enum Under {
    /// kube-controller-manager's.
    ControllerManager,
    /// A Deployment's (`namespace/name`), kube-controller-manager's HPA controller off.
    Deployment(String),
    /// Not known: kube-controller-manager's flags are not visible, or no controller is labelled.
    Unknown,
}

/// Which HPA controller the run tests, for the target's description, after checking its flags
/// against the settings the run assumes: kube-controller-manager's, or — when its HPA controller is
/// off — the Deployment labelled as the cluster's HPA controller (the deployed reference).
async fn controller_under_test(
    client: &::kube::Client,
    settings: &ClusterSettings,
    gates: &hpa_reference::FeatureGates,
) -> Result<(String, Under), ClusterError> {
    let kcm = match kube::controller_manager_args(client).await {
        Some(args) => {
            plan::check_controller_manager(&args, settings, gates).map_err(ClusterError::Connect)?
        }
        None => {
            return Ok((
                " — kube-controller-manager's flags not visible: settings not checked".into(),
                Under::Unknown,
            ));
        }
    };
    if kcm {
        return Ok((
            " — controller: kube-controller-manager".into(),
            Under::ControllerManager,
        ));
    }
    let others = kube::replacement_controllers(client).await;
    match others.as_slice() {
        [] => Ok((
            " — kube-controller-manager's HPA controller is off and no Deployment is labelled \
                 as the HPA controller: settings not checked"
                .into(),
            Under::Unknown,
        )),
        [(name, args)] => {
            plan::check_controller(name, args, settings, gates).map_err(ClusterError::Connect)?;
            Ok((
                format!(" — controller: Deployment {name}"),
                Under::Deployment(name.clone()),
            ))
        }
        many => Err(ClusterError::Connect(format!(
            "more than one HPA controller is deployed ({}): they would fight over every HPA",
            many.iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Ctrl-C (SIGINT) or SIGTERM: either ends the run with its namespaces removed.
async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Runs the cases on the cluster; the results in the cases' order, and the target's description.
pub fn run_all(
    cases: &[Case],
    opts: &ClusterOptions,
    run_opts: &RunOptions,
) -> Result<(String, Vec<CaseResult>), ClusterError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| ClusterError::Connect(e.to_string()))?;
    rt.block_on(run_all_async(cases, opts, run_opts))
}

async fn run_all_async(
    cases: &[Case],
    opts: &ClusterOptions,
    run_opts: &RunOptions,
) -> Result<(String, Vec<CaseResult>), ClusterError> {
    let started = Instant::now();
    // Skips first: nothing touches the cluster for a case it cannot pose.
    let mut results: BTreeMap<usize, CaseResult> = BTreeMap::new();
    let mut runnable = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let at = Instant::now();
        match posed_plan(case, opts, run_opts) {
            Ok(p) => runnable.push((i, p)),
            Err(reason) => {
                results.insert(i, result(case, Outcome::Skipped(reason), Vec::new(), at));
            }
        }
    }
    let (client, context) = connect(opts).await?;
    let mut description = opts.describe(&context);
    let (controller, under) = controller_under_test(&client, &opts.settings, &opts.gates).await?;
    description.push_str(&controller);
    if runnable.is_empty() {
        return Ok((description, results.into_values().collect()));
    }
    // Whether a case refuses scale updates: the run registers the stub's webhook for them.
    let scale_faults = runnable.iter().any(|(_, p)| p.plan.scale_faults);
    let groups = settings_groups(runnable, cases, &opts.settings, run_opts);
    let reconfigured = groups.iter().any(|(g, _)| !g.same_flags(&opts.settings));
    let known = if reconfigured {
        let deployment = match &under {
            Under::ControllerManager => None,
            Under::Deployment(name) => Some(name.as_str()),
            Under::Unknown => {
                return Err(ClusterError::Connect(
                    "--reconfigure-controller: the controller under test is not one the lane knows how to reconfigure (kube-controller-manager on a kind node, or a Deployment labelled as the HPA controller)".into(),
                ));
            }
        };
        Some(
            reconfigure::known(&client, deployment)
                .await
                .map_err(|e| ClusterError::Connect(format!("--reconfigure-controller: {e}")))?,
        )
    } else {
        None
    };
    description.push_str(&groups_words(&groups, &opts.settings));

    for line in safety::check(&client, opts.disposable)
        .await
        .map_err(ClusterError::Connect)?
    {
        let _ = writeln!(std::io::stderr(), "cluster: {line}");
    }
    let stub = stub::StubControl::connect(&client)
        .await
        .map_err(ClusterError::Connect)?;
    if let Err(e) = kube::ensure_sim_node(&client).await {
        // Nothing of a run that could not start stays behind.
        kube::delete_sim_node(&client).await;
        return Err(ClusterError::Connect(e));
    }
    let run_id = format!(
        "{:x}",
        (k8s_openapi::jiff::Timestamp::now().as_millisecond() as u64) & 0xfffff
    );

    if scale_faults && let Err(e) = webhook::install(&client, &stub, &run_id).await {
        kube::delete_sim_node(&client).await;
        return Err(ClusterError::Connect(e));
    }

    // The simulated node's heartbeat, for as long as the run lasts.
    let hb_client = client.clone();
    let heartbeat = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(10)).await;
            let _ = kube::heartbeat(&hb_client).await;
        }
    });

    let total: usize = groups.iter().map(|(_, m)| m.len()).sum();
    let progress = Arc::new(std::sync::Mutex::new(progress::Progress::stderr(total)));
    let shared = Shared {
        client: client.clone(),
        stub,
        run_id: run_id.clone(),
        progress: Arc::clone(&progress),
        permits: Arc::new(tokio::sync::Semaphore::new(opts.parallel.max(1))),
        run_opts: run_opts.clone(),
        cluster: opts.settings.clone(),
        margin: opts.margin,
        parallel: opts.parallel.max(1),
    };
    let outcome = tokio::select! {
        _ = run_groups(groups, cases, known.as_ref(), &shared, opts, &mut results) => Ok(()),
        _ = interrupted() => {
            let names = kube::delete_run_namespaces(&client, &run_id).await;
            Err(ClusterError::Interrupted(names.join(", ")))
        }
    };
    if let Ok(mut p) = progress.lock() {
        p.close();
    }
    heartbeat.abort();
    // Whatever namespace of the run is still there (a case that erred before removing its own)
    // goes too, as does the simulated node.
    kube::delete_run_namespaces(&client, &run_id).await;
    kube::delete_sim_node(&client).await;
    if scale_faults {
        webhook::remove(&client, &run_id).await;
    }
    // The controller gets its own flags back, however the run ended.
    let mut restore_failed = None;
    if let Some(c) = &known {
        match reconfigure::restore(&client, c, &opts.settings, &opts.gates).await {
            Ok(took) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "cluster: {} has its own flags back ({:.0} s)",
                    c.describe(),
                    took.as_secs_f64()
                );
            }
            Err(e) => restore_failed = Some(e),
        }
    }
    outcome?;
    if let Some(e) = restore_failed {
        return Err(ClusterError::Connect(format!(
            "putting the controller back after the run: {e}"
        )));
    }
    let _ = writeln!(
        std::io::stderr(),
        "cluster: {total} cases run in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok((description, results.into_values().collect()))
}

/// The settings groups of the runnable cases (index into `cases`, how each runs): the cluster's
/// own flags first, then each other set of flags and time scale, groups merged where one
/// controller serves both ([`merge_groups`]).
fn settings_groups(
    runnable: Vec<(usize, Posed)>,
    cases: &[Case],
    cluster: &ClusterSettings,
    run_opts: &RunOptions,
) -> Vec<(ClusterSettings, Vec<(usize, Posed)>)> {
    let mut groups: Vec<(ClusterSettings, Vec<(usize, Posed)>)> =
        vec![(cluster.clone(), Vec::new())];
    for (i, p) in runnable {
        match groups
            .iter_mut()
            .find(|(g, _)| g.same_flags(&p.flags) && g.time_scale == p.flags.time_scale)
        {
            Some((_, members)) => members.push((i, p)),
            None => groups.push((p.flags.clone(), vec![(i, p)])),
        }
    }
    groups.retain(|(_, members)| !members.is_empty());
    merge_groups(&mut groups, cases, cluster, run_opts);
    groups
}

/// Merges settings groups other than the cluster's own where one controller's flags can serve
/// both ([`ClusterSettings::merges`]) and the reference core shows every case of both gives its
/// own trace with them: a controller restart and a group's wall time fewer. Cases run as
/// written only (no posed copy, prelude or patch reconciled at once); each moved case's result
/// says which flags it ran with and why that changes nothing.
fn merge_groups(
    groups: &mut Vec<(ClusterSettings, Vec<(usize, Posed)>)>,
    cases: &[Case],
    cluster: &ClusterSettings,
    run_opts: &RunOptions,
) {
    let plain = |p: &Posed| p.fresh.is_none() && p.truth.is_none() && p.at_once.is_none();
    // Every case of `members` gives its own trace with `flags`: the ticks of each.
    let unchanged = |flags: &ClusterSettings, members: &[(usize, Posed)]| -> Option<Vec<usize>> {
        members
            .iter()
            .map(|(i, p)| {
                if !plain(p) {
                    return None;
                }
                let case = &cases[*i];
                let posed = seed::fresh(
                    case,
                    seed::Unposable {
                        flags: true,
                        ..seed::Unposable::default()
                    },
                    flags,
                );
                seed::same_trace(case, &posed, run_opts).ok()
            })
            .collect()
    };
    // Each case's own flags, as it was grouped.
    let own: BTreeMap<usize, Vec<String>> = groups
        .iter()
        .flat_map(|(_, members)| members)
        .map(|(i, p)| (*i, p.flags.differences(cluster)))
        .collect();
    let mut i = 1;
    while i < groups.len() {
        let mut j = i + 1;
        while j < groups.len() {
            let both = groups[i]
                .0
                .merges(&groups[j].0, cluster)
                .into_iter()
                .find_map(|m| {
                    let a = unchanged(&m, &groups[i].1)?;
                    let b = unchanged(&m, &groups[j].1)?;
                    Some((m, a, b))
                });
            let Some((merged, a, b)) = both else {
                j += 1;
                continue;
            };
            let (_, moved) = groups.remove(j);
            let group = &mut groups[i];
            group.1.extend(moved);
            for ((k, p), ticks) in group.1.iter_mut().zip(a.into_iter().chain(b)) {
                let own = &own[k];
                p.shared = Some(format!(
                    "on the controller reconfigured with {} (at time scale {}), its own flags {} and other groups', which on the reference core give the case's own trace ({ticks} ticks)",
                    merged.differences(cluster).join(" "),
                    merged.time_scale,
                    if own.is_empty() {
                        "the cluster's".to_string()
                    } else {
                        own.join(" ")
                    },
                ));
                p.flags = merged.clone();
            }
            group.0 = merged;
        }
        i += 1;
    }
}

/// Each settings group in turn, the controller reconfigured before each group whose flags it
/// does not run; its cases run at once (up to `--parallel`), their results into `results`.
async fn run_groups(
    groups: Vec<(ClusterSettings, Vec<(usize, Posed)>)>,
    cases: &[Case],
    known: Option<&reconfigure::Controller>,
    shared: &Shared,
    opts: &ClusterOptions,
    results: &mut BTreeMap<usize, CaseResult>,
) {
    let mut running = opts.settings.clone();
    for (flags, members) in groups {
        if !flags.same_flags(&running)
            && let Some(c) = known
        {
            let said = format!(
                "reconfiguring {} with {}",
                c.describe(),
                flags.differences(&opts.settings).join(" ")
            );
            progress_line(&shared.progress, &said);
            match reconfigure::apply(&shared.client, c, &flags, &opts.gates).await {
                Ok(took) => {
                    running = flags.clone();
                    let said = format!(
                        "{} ran the new flags after {:.0} s",
                        c.describe(),
                        took.as_secs_f64()
                    );
                    progress_line(&shared.progress, &said);
                }
                Err(e) => {
                    // The group cannot run as planned: each of its cases errs with why.
                    for (i, _) in members {
                        let why = format!("reconfiguring the controller: {e}");
                        let r =
                            result(&cases[i], Outcome::Errored(why), Vec::new(), Instant::now());
                        results.insert(i, r);
                    }
                    continue;
                }
            }
        }
        // The longest cases first (they take the permits first), so that the group does not
        // end waiting for one long case started last.
        let mut members = members;
        members.sort_by_key(|(i, _)| std::cmp::Reverse(cases[*i].duration));
        let mut tasks = tokio::task::JoinSet::new();
        for (i, posed) in members {
            tasks.spawn(run_one(shared.clone(), cases[i].clone(), i, posed));
        }
        while let Some(joined) = tasks.join_next().await {
            if let Ok((i, r)) = joined {
                results.insert(i, r);
            }
        }
    }
}

/// The settings groups in the target's description (nothing when every case ran on the
/// cluster's own flags).
fn groups_words(
    groups: &[(ClusterSettings, Vec<(usize, Posed)>)],
    base: &ClusterSettings,
) -> String {
    if groups.iter().all(|(g, _)| g.same_flags(base)) {
        return String::new();
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(g, members)| {
            let d = g.differences(base);
            let at = if g.time_scale == base.time_scale {
                String::new()
            } else {
                format!(" at time scale {}", g.time_scale)
            };
            if d.is_empty() {
                format!("the cluster's own flags ({} cases)", members.len())
            } else {
                format!("{}{at} ({} cases)", d.join(" "), members.len())
            }
        })
        .collect();
    format!(
        "; settings groups, the controller reconfigured between them (each judged by its own sync period): {}",
        parts.join(", ")
    )
}

fn progress_line(progress: &std::sync::Mutex<progress::Progress>, line: &str) {
    match progress.lock() {
        Ok(mut p) => p.note(line),
        Err(_) => {
            let _ = writeln!(std::io::stderr(), "{line}");
        }
    }
}

/// What every case of a run shares.
#[derive(Clone)]
struct Shared {
    client: Client,
    stub: stub::StubControl,
    run_id: String,
    progress: Arc<std::sync::Mutex<progress::Progress>>,
    permits: Arc<tokio::sync::Semaphore>,
    run_opts: RunOptions,
    /// The cluster's own settings (the time scale and release).
    cluster: ClusterSettings,
    margin: Duration,
    /// `--parallel`: the permits there are.
    parallel: usize,
}

/// Pods one of `--parallel`'s permits stands for: a case whose workload grows larger takes more
/// permits, so a few hundred pods do not run beside as many again. Found on kind (2 cores, ×5):
/// at `--parallel 8` the `ht-scaling-with-rules-*` cases (100–500 pods) saw their first reconcile
/// 26–72 case seconds late; at 3 they pass.
const PODS_PER_PERMIT: u32 = 50;

/// The permits a case takes: one per [`PODS_PER_PERMIT`] of the most pods its trace on the core
/// has, at least one and at most all.
fn permits_for(case: &Case, run_opts: &RunOptions, parallel: usize) -> u32 {
    let trace = crate::run::run_case(case, &crate::targets::CoreTarget, run_opts).trace;
    let peak = trace
        .iter()
        .map(|t| t.replicas.max(t.replicas_before))
        .chain(case.members.iter().map(|m| m.file.workload.replicas))
        .chain([case.file.workload.replicas])
        .max()
        .unwrap_or(1)
        .max(1) as u32;
    peak.div_ceil(PODS_PER_PERMIT)
        .clamp(1, u32::try_from(parallel.max(1)).unwrap_or(u32::MAX))
}

/// One case in its own namespace, on the controller as it runs now (`posed.flags`).
async fn run_one(shared: Shared, written: Case, i: usize, posed: Posed) -> (usize, CaseResult) {
    let Shared {
        client,
        stub,
        run_id,
        progress,
        permits,
        run_opts,
        cluster,
        margin,
        parallel,
    } = shared;
    let why = posed.posed_why(&cluster);
    let Posed {
        plan,
        fresh,
        truth,
        flags,
        at_once: _,
        shared: _,
    } = posed;
    let case = fresh.map_or(written, |(c, _)| c);
    let ns = namespace_for(&case, &run_id);
    let weight = permits_for(truth.as_ref().unwrap_or(&case), &run_opts, parallel);
    let _permit = permits.acquire_many_owned(weight).await;
    if let Ok(mut p) = progress.lock() {
        p.start(&case.file.name);
    }
    let at = Instant::now();
    if let Some(want) = &case.file.expect.rejected {
        let r = match rejected(&client, &ns, &run_id, &plan, want).await {
            Ok(outcome) => result(&case, outcome, Vec::new(), at),
            Err(e) => result(&case, Outcome::Errored(e), Vec::new(), at),
        };
        if let Ok(mut p) = progress.lock() {
            p.finish(&r.name, word(&r.outcome), r.elapsed.as_secs_f64());
        }
        return (i, r);
    }
    // The timing tolerance follows the controller's sync period as it runs now.
    let tolerance =
        flags.case_sync_period() + margin.as_secs_f64() * f64::from(flags.time_scale.max(1));
    let labels: &[(&str, &str)] = if plan.scale_faults {
        &[(webhook::SCALE_FAULTS_LABEL, "true")]
    } else {
        &[]
    };
    // When each decision is due: the reference core's trace of the case at the run's release,
    // run on through the lane's tail after the case's end.
    let mut extended = truth.unwrap_or_else(|| case.clone());
    let period = extended.sync_period.max(1);
    let tail = (2.0 * tolerance / f64::from(period)).ceil() as u32;
    extended.duration = extended.duration.saturating_add(tail * period);
    let truth = crate::run::run_case(&extended, &crate::targets::CoreTarget, &run_opts);
    let truths: Vec<&[crate::run::trace::TickTrace]> = std::iter::once(&truth.trace)
        .chain(truth.alongside.iter().map(|a| &a.trace))
        .map(Vec::as_slice)
        .collect();
    let outcome = match kube::create_namespace_labelled(&client, &ns, &run_id, labels).await {
        Err(e) => Err(e),
        Ok(()) => {
            let lane = lane::Lane {
                client: &client,
                stub: &stub,
                namespace: ns.clone(),
                settings: &flags,
                // Decisions may each come a sync period late: room for the last ones.
                tail: 2.0 * tolerance,
                settle: Some(lane::Settle {
                    traces: truths.clone(),
                    tolerance,
                }),
            };
            let r = lane::run(&lane, &case, &plan).await;
            stub.delete(&ns).await;
            kube::delete_namespace(&client, &ns).await;
            r
        }
    };
    let mut r = match outcome {
        Err(e) => result(&case, Outcome::Errored(e), Vec::new(), at),
        Ok(observed) => {
            let mut failures = Vec::new();
            let mut alongside = Vec::new();
            let cases = std::iter::once(&case).chain(&case.members);
            for (k, ((c, seen), truth)) in cases.zip(&observed).zip(truths).enumerate() {
                let name = c.file.hpa.metadata.name.clone().unwrap_or_default();
                for mut f in check::check(c, seen, truth, tolerance, flags.time_scale) {
                    if k > 0 {
                        f.hpa = Some(name.clone());
                    }
                    failures.push(f);
                }
                if k > 0 {
                    alongside.push(crate::run::AlongsideTrace {
                        hpa: name,
                        trace: check::trace(seen),
                    });
                }
            }
            let trace = observed.first().map(check::trace).unwrap_or_default();
            let outcome = if failures.is_empty() {
                Outcome::Passed
            } else {
                Outcome::Failed(failures)
            };
            let mut r = result(&case, outcome, trace, at);
            r.alongside = alongside;
            r
        }
    };
    r.posed = why;
    if let Ok(mut p) = progress.lock() {
        p.finish(&r.name, word(&r.outcome), r.elapsed.as_secs_f64());
    }
    (i, r)
}

#[cfg(test)]
mod tests {
    use super::testing::{corpus, opts};
    use super::*;

    fn cluster(reconfigure: bool) -> ClusterOptions {
        let settings = ClusterSettings {
            version: hpa_reference::KubernetesVersion::V1_37,
            ..ClusterSettings::defaults_scaled(5)
        };
        let mut gates = settings.version.default_gates();
        gates.hpa_scale_to_zero = true;
        ClusterOptions {
            kubeconfig: None,
            context: None,
            settings,
            gates,
            margin: Duration::from_secs(2),
            parallel: 1,
            reconfigure,
            disposable: false,
        }
    }

    #[test]
    fn a_case_with_other_gates_runs_on_the_controller_reconfigured_with_them() {
        let case = corpus("fidelity/pod-level-requests-ignored-with-the-gate-off.yaml");
        let [skipped] = plan_all(std::slice::from_ref(&case), &cluster(false), &opts())
            .try_into()
            .unwrap();
        let e = skipped.unwrap_err();
        assert!(
            e.contains("needs feature gate PodLevelResources=false")
                && e.ends_with(
                    "--reconfigure-controller runs it on the controller reconfigured with --feature-gates=PodLevelResources=false"
                ),
            "{e}"
        );
        let [planned] = plan_all(std::slice::from_ref(&case), &cluster(true), &opts())
            .try_into()
            .unwrap();
        let p = planned.unwrap();
        assert_eq!(p.reconfigured, ["--feature-gates=PodLevelResources=false"]);
        assert_eq!(p.time_scale, None);
        let why = p.posed.unwrap();
        assert!(
            why.contains(
                "its feature gates on the HPA controller only (the API server keeps the cluster's)"
            ),
            "{why}"
        );
        // Its group's controller is checked against the run's gates with the case's over them.
        let mut flags = cluster(true).settings;
        flags
            .gate_overrides
            .insert("PodLevelResources".into(), false);
        let args: Vec<String> = flags
            .flag_args()
            .into_iter()
            .map(|f| reconfigure::merged("--feature-gates=HPAScaleToZero=true", &f))
            .collect();
        let run = cluster(true).gates;
        assert_eq!(plan::check_controller("c", &args, &flags, &run), Ok(true));
        assert!(plan::check_controller("c", &args, &cluster(true).settings, &run).is_err());
        // What the API server's validation decides is not the controller's to change.
        let mut rejected = case.clone();
        rejected.file.expect.rejected = Some("minReplicas".into());
        let [skipped] = plan_all(std::slice::from_ref(&rejected), &cluster(true), &opts())
            .try_into()
            .unwrap();
        let e = skipped.unwrap_err();
        assert!(
            e.ends_with("the lane reconfigures only the HPA controller's gates"),
            "{e}"
        );
    }

    #[test]
    fn a_case_with_more_pods_takes_more_permits_up_to_all() {
        let small = corpus("algorithm/tolerance-band-no-change.yaml");
        assert_eq!(permits_for(&small, &opts(), 8), 1);
        let mut big = corpus("behavior/empty-behavior-differs-from-none.yaml");
        // 1 → 40 on the core: one permit per 50 pods.
        assert_eq!(permits_for(&big, &opts(), 8), 1);
        big.file.workload.replicas = 120;
        assert_eq!(permits_for(&big, &opts(), 8), 3);
        assert_eq!(
            permits_for(&big, &opts(), 2),
            2,
            "never more than there are"
        );
    }

    #[test]
    fn namespaces_are_unique_per_case_and_valid() {
        let a = namespace_name("docs-min-replicas-change-does-not-reactivate", "d9689");
        let b = namespace_name(
            "docs-min-replicas-change-does-not-reactivate-gate-on",
            "d9689",
        );
        assert_ne!(a, b);
        for n in [&a, &b] {
            assert!(n.len() <= 63, "{n}");
            assert!(
                n.starts_with("hpa-docs-min-replicas-change-does-not") && n.ends_with("-d9689")
            );
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            );
        }
        assert_eq!(
            a,
            namespace_name("docs-min-replicas-change-does-not-reactivate", "d9689")
        );
        assert!(namespace_name("A_b", "1").starts_with("hpa-a-b-"));
    }
}
