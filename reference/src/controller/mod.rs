//! The reference HPA controller: kube-rs around the pure core. It gathers what the core needs from
//! the Kubernetes API and the three metrics APIs, calls [`crate::decide`], and writes the decision
//! back (the scale, the status when it changed, the events) — the same reconcile upstream's
//! `reconcileAutoscaler` does.
//!
//! Style follows kube-rs controller-rs: `reconcile(obj, ctx) -> Result<Action, Error>` and
//! `error_policy`; the client, the clock, the metrics source and the controller's memory live in an
//! injected [`Context`], so tests drive time and the API.

pub mod api;
pub mod clock;
pub mod correlator;
pub mod events;
pub mod flags;
pub mod http;
pub mod informer;
pub mod leader;
pub mod monitor;
pub mod pods;
pub mod queue;
pub mod ratelimit;
pub mod retry;
pub mod run;
pub mod scales;
pub mod telemetry;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::Client;
use kube::runtime::controller::Action;

use crate::decide::{Decision, decide_with};
use crate::memory::Memory;
use crate::metrics_api::readings;
use crate::outcome::ErrorOrigin;
use crate::settings::Settings;
use crate::view::{Observation, PodView, ScaleView};

pub use clock::{Clock, ManualClock, SystemClock};
pub use telemetry::ControllerMetrics;

/// Errors of one reconcile. The controller logs them and reconciles again after the sync period.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Kubernetes API call failed.
    #[error("{0}")]
    Kube(String),
    /// The decision's own error (upstream's reconcile error): metrics, scale or status failures.
    #[error("{0}")]
    Reconcile(String),
}

/// Everything a reconcile needs, injected.
pub struct Context {
    /// The API client.
    pub client: Client,
    /// The source of `now`.
    pub clock: Arc<dyn Clock>,
    /// kube-controller-manager's HPA settings.
    pub settings: Settings,
    /// The controller's memory per HPA key (`namespace/name`).
    pub memory: Mutex<HashMap<String, Memory>>,
    /// Resolved scale targets (kind → API resource), like upstream's REST mapper cache.
    pub mapper: api::Mapper,
    /// Prometheus metrics.
    pub metrics: Arc<ControllerMetrics>,
    /// Records events as kube-controller-manager does (component `horizontal-pod-autoscaler`).
    pub events: events::Recorder,
    /// The pod selector of every HPA reconciled so far, by key (upstream's selector store): more
    /// than one HPA selecting the same pods makes the selector ambiguous.
    pub selectors: Mutex<BTreeMap<String, crate::selector::Selector>>,
    /// Where the pods come from: an informer's cache in the deployed controller (as upstream's pod
    /// lister), or a LIST per reconcile (tests against a mocked API).
    pub pods: pods::PodSource,
    /// Where the scale comes from: a GET per reconcile (upstream), or for Deployments the
    /// Deployment watch (`--deployment-scale-cache`).
    pub scales: scales::ScaleSource,
    /// When each HPA is due for its next reconcile (wall clock: scheduling only). Its keys are the
    /// HPAs the controller knows (the `num_horizontal_pod_autoscalers` gauge counts them).
    due: Mutex<HashMap<String, std::time::Instant>>,
    /// Each HPA's `metadata.generation` as the watch last delivered it: a new one is a spec
    /// change ([`Context::updated`]).
    generations: Mutex<HashMap<String, i64>>,
    /// The HPAs whose spec changed since their last reconcile (1.37, `HPAGeneration`): due at
    /// once, besides their periodic reconcile in `due`, which stays as booked.
    at_once: Mutex<HashSet<String>>,
}

impl Context {
    /// A context with empty memory.
    pub fn new(client: Client, clock: Arc<dyn Clock>, settings: Settings) -> Context {
        Context {
            client,
            clock,
            settings,
            memory: Mutex::new(HashMap::new()),
            mapper: api::Mapper::default(),
            metrics: Arc::new(ControllerMetrics::default()),
            events: events::Recorder::new("horizontal-pod-autoscaler"),
            selectors: Mutex::new(BTreeMap::new()),
            pods: pods::PodSource::List,
            scales: scales::ScaleSource::Get,
            due: Mutex::new(HashMap::new()),
            generations: Mutex::new(HashMap::new()),
            at_once: Mutex::new(HashSet::new()),
        }
    }
}

impl Context {
    /// Upstream's informer add handler: an HPA seen for the first time (created, or listed when
    /// the controller starts) is booked for its first reconcile one sync period from `now`
    /// before 1.37, at `now` from 1.37 on (`Changes::new_hpa_reconciled_at_once`, #138294). The
    /// watch calls this as the event arrives, so a busy reconcile queue cannot push a new HPA's
    /// first reconcile later (as in kube-controller-manager, whose handler queues the key with the
    /// sync period as delay before any worker picks it up). A key already booked keeps its time.
    pub fn seen(&self, key: &str, now: std::time::Instant) {
        if let Ok(mut due) = self.due.lock()
            && !due.contains_key(key)
        {
            let first = if self.settings.version.changes().new_hpa_reconciled_at_once {
                now
            } else {
                now + self.settings.sync_period
            };
            tracing::debug!(hpa = %key, at_once = first == now, "new: booked its first reconcile");
            due.insert(key.to_string(), first);
            self.metrics.set_tracked(due.len());
        }
    }

    /// Upstream's informer update handler: with `HPAGeneration` on (1.37), an HPA whose
    /// `metadata.generation` changed — its spec changed — is reconciled at once (#138294); a
    /// status-only update (the controller's own status write) keeps its schedule. The periodic
    /// reconcile stays where it was booked: upstream adds the key to its queue at once, and after
    /// that reconcile adds it again a sync period later, where its delaying queue keeps the sooner
    /// of the two times it holds for one key — the periodic one. Without the gate every update
    /// keeps the schedule, as upstream's rate-limited enqueue does.
    pub fn updated(&self, key: &str, generation: Option<i64>) {
        let Some(generation) = generation else { return };
        let before = match self.generations.lock() {
            Ok(mut g) => g.insert(key.to_string(), generation),
            Err(_) => return,
        };
        if self.settings.gates.hpa_generation
            && before.is_some_and(|b| b != generation)
            && let Ok(mut at_once) = self.at_once.lock()
        {
            tracing::debug!(hpa = %key, generation, "spec changed: reconcile at once");
            at_once.insert(key.to_string());
        }
    }

    /// Upstream's queue schedule for `key` at `now`: `Some(wait)` while the HPA is not due (a new
    /// key becomes due one sync period after it is first seen); `None` when it is due, and then the
    /// next reconcile is booked one sync period from `now`.
    pub fn not_yet(&self, key: &str, now: std::time::Instant) -> Option<Duration> {
        self.seen(key, now);
        let mut due = self.due.lock().ok()?;
        let at = *due.get(key)?;
        let changed = self.at_once.lock().is_ok_and(|mut s| s.remove(key));
        if at > now {
            if changed {
                tracing::debug!(hpa = %key, "reconcile due: its spec changed");
                return None;
            }
            return Some(at - now);
        }
        tracing::debug!(hpa = %key, late_ms = (now - at).as_millis() as u64, "reconcile due");
        due.insert(key.to_string(), now + self.settings.sync_period);
        None
    }

    /// How long from `now` to come back after a reconcile of `key` that started at `started`:
    /// the sync period, or, after the extra reconcile of a spec change ([`Context::updated`]),
    /// until the periodic one still booked.
    pub fn requeue_after(
        &self,
        key: &str,
        started: std::time::Instant,
        now: std::time::Instant,
    ) -> Duration {
        let period = self.settings.sync_period;
        match self.due.lock().ok().and_then(|d| d.get(key).copied()) {
            Some(at) if at < started + period => at.saturating_duration_since(now),
            _ => period,
        }
    }

    /// Forgets a deleted HPA, as upstream's delete handler does: its schedule, its memory
    /// (recommendations, scale events), its selector and its metrics series. An HPA created again
    /// under the same name starts fresh.
    pub fn forget(&self, key: &str) {
        if let Ok(mut due) = self.due.lock() {
            due.remove(key);
            self.metrics.set_tracked(due.len());
        }
        if let Ok(mut generations) = self.generations.lock() {
            generations.remove(key);
        }
        if let Ok(mut at_once) = self.at_once.lock() {
            at_once.remove(key);
        }
        if let Ok(mut memory) = self.memory.lock() {
            memory.remove(key);
        }
        if let Ok(mut selectors) = self.selectors.lock() {
            selectors.remove(key);
        }
        self.metrics.forget(key);
    }
}

/// The HPA's key, `namespace/name`.
pub fn key_of(hpa: &HorizontalPodAutoscaler) -> (String, String, String) {
    let ns = hpa
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    let name = hpa.metadata.name.clone().unwrap_or_default();
    (format!("{ns}/{name}"), ns, name)
}

/// One reconcile of one HPA: read, decide, write. Returns the decision (also when the reconcile
/// reports an error, which is then in `decision.error`). Reports it to the metrics: the time up to
/// the status write (upstream records events asynchronously, after), and each metric's time (its
/// metrics API requests and its computation in the core).
pub async fn reconcile_once(
    hpa: &HorizontalPodAutoscaler,
    ctx: &Context,
) -> Result<Decision, Error> {
    let started = std::time::Instant::now();
    match reconcile_read(hpa, ctx, true, started).await? {
        Some(decision) => Ok(decision),
        // The cached scale would change the scale: read, decide and write as upstream does.
        None => reconcile_read(hpa, ctx, false, started)
            .await?
            .ok_or_else(|| Error::Kube("a fresh read asked for another".into())),
    }
}

/// One reconcile with the scale read from the Deployment cache where `cached` allows it
/// ([`scales`]). `None`: the cached read would change the scale, and nothing was written or
/// recorded — the caller reconciles again from a fresh read.
async fn reconcile_read(
    hpa: &HorizontalPodAutoscaler,
    ctx: &Context,
    cached: bool,
    started: std::time::Instant,
) -> Result<Option<Decision>, Error> {
    let (key, ns, _) = key_of(hpa);
    let now = ctx.clock.now();
    let target = &hpa.spec.scale_target_ref;

    // The target's scale.
    let scale = api::get_scale(ctx, &ns, target, cached).await;
    let scale_view = scale
        .as_ref()
        .map(|s| ScaleView::from_scale(&s.scale))
        .map_err(Clone::clone);

    // Its pods and the metrics APIs' answers (only when the scale has a selector to list by:
    // upstream parses it first, and one that does not parse is reported as InvalidSelector,
    // never sent to the API server, which would refuse the list).
    let selector = scale_view
        .as_ref()
        .ok()
        .and_then(|s| s.selector.clone())
        .filter(|s| !s.is_empty());
    let parsed = selector
        .as_deref()
        .and_then(|sel| crate::selector::parse(sel).ok());
    let listable = selector.as_deref().filter(|_| parsed.is_some());
    let (pods, apis, fetch_took) = match listable {
        Some(sel) => {
            let pods = match ctx.pods.list(&ctx.client, &ns, sel).await {
                Ok(pods) => pods,
                Err(e) => {
                    ctx.metrics.observe_reconciliation(
                        monitor::ActionLabel::None,
                        monitor::ErrorLabel::Internal,
                        started.elapsed(),
                    );
                    return Err(Error::Kube(e));
                }
            };
            let (apis, took) = api::fetch_metrics(
                &ctx.client,
                &ns,
                sel,
                hpa.spec.metrics.as_deref().unwrap_or_default(),
            )
            .await;
            (pods, apis, took)
        }
        None => (Vec::new(), Default::default(), Vec::new()),
    };
    let views: Vec<PodView> = crate::view::copied_views(pods.iter().map(|p| &p.view));
    let selecting = selecting_hpas(ctx, &key, &ns, parsed, &pods);
    let metric_readings = readings(
        hpa.spec.metrics.as_deref().unwrap_or_default(),
        &apis,
        ctx.settings.version.changes(),
    );

    let mut memory = ctx
        .memory
        .lock()
        .map(|m| m.get(&key).cloned().unwrap_or_default())
        .unwrap_or_default();
    let obs = Observation {
        now,
        hpa,
        scale: scale_view,
        pods: &views,
        metrics: &metric_readings,
        hpas_selecting_pods: &selecting,
    };
    let mut timer = monitor::MetricTimer::new(fetch_took);
    let plan = decide_with(&obs, &ctx.settings, &mut memory, &mut timer);
    // The views' buffers serve the next reconciles' (crate::recycle).
    crate::recycle::give_views(views);
    crate::recycle::give_readings(metric_readings);
    let current = plan.current_replicas;
    if plan.rescale.is_some() && scale.as_ref().is_ok_and(|s| s.cached) {
        return Ok(None);
    }

    // The scale write, retried on conflict with a fresh read (client-go's RetryOnConflict).
    let write = match (&plan.rescale, &scale) {
        (Some(r), Ok(s)) => api::write_scale(ctx, &ns, target, s, r.replicas).await,
        _ => Ok(()),
    };
    let mut decision = plan.finish(write, &mut memory);
    if let Ok(mut all) = ctx.memory.lock() {
        all.insert(key.clone(), memory);
    }

    // The status, only when it changed; then the events.
    let original = hpa.status.clone().unwrap_or_default();
    if decision.status != original
        && let Err(e) = api::write_status(&ctx.client, hpa, &decision.status).await
    {
        decision.status_write_failed(&key, &e);
    }
    // The scale's error reaches the core as text: an unparsable apiVersion is the spec's fault.
    if decision.explanation.path == crate::outcome::Path::ScaleUnavailable
        && api::gvk_of(target).is_err()
    {
        decision.error_origin = Some(ErrorOrigin::Spec);
    }
    ctx.metrics
        .observe_reconcile(hpa, current, &decision, started.elapsed(), timer.took());
    for e in &decision.events {
        match ctx
            .events
            .record(&ctx.client, hpa, e, ctx.clock.now())
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                tracing::debug!(hpa = %key, reason = %e.reason, "event dropped by the spam filter")
            }
            Err(err) => {
                tracing::warn!(hpa = %key, reason = %e.reason, error = %err, "could not record an event")
            }
        }
    }
    Ok(Some(decision))
}

/// Records this HPA's selector (parsed; `None` when it has none or it does not parse) and returns
/// the keys of every HPA (this one included) whose selector matches any of the pods, when there
/// is more than one; else nothing.
fn selecting_hpas(
    ctx: &Context,
    key: &str,
    ns: &str,
    selector: Option<crate::selector::Selector>,
    pods: &[Arc<pods::PodEntry>],
) -> Vec<String> {
    let Ok(mut all) = ctx.selectors.lock() else {
        return Vec::new();
    };
    let Some(sel) = selector else {
        return Vec::new();
    };
    match all.get_mut(key) {
        Some(known) => *known = sel,
        None => {
            all.insert(key.to_string(), sel);
        }
    }
    // The namespace's HPAs only: keys are `namespace/name`, sorted. With this one alone there,
    // no other can select its pods.
    let prefix = format!("{ns}/");
    let in_namespace = all
        .range(prefix.clone()..)
        .take_while(|(k, _)| k.starts_with(&prefix));
    if in_namespace.clone().nth(1).is_none() {
        return Vec::new();
    }
    let keys: Vec<String> = in_namespace
        .filter(|(_, sel)| pods.iter().any(|p| sel.matches(&p.labels)))
        .map(|(k, _)| k.clone())
        .collect();
    if keys.len() > 1 { keys } else { Vec::new() }
}

/// The controller's reconcile (controller-rs style): reconcile, then come back after the sync
/// period, like upstream's rate-limited queue.
///
/// kube-controller-manager (v1.36) adds an HPA to its work queue with the sync period as delay on
/// every informer event — creation and every update alike — and drops the event when the key is
/// already waiting: a new HPA is first reconciled one sync period after it appears, and an edit
/// (of the spec or anything else) is picked up at the next periodic reconcile, never at once. The
/// watch here wakes `reconcile` on every event; this gate keeps the same schedule.
pub async fn reconcile(
    hpa: Arc<HorizontalPodAutoscaler>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    reconcile_then(hpa, ctx).await.map(Action::requeue)
}

/// [`reconcile`], answering how long until the HPA is to be reconciled again (the workers of
/// [`run::run`] book it in their [`queue::WorkQueue`]; a kube-runtime `Action` does not say).
pub async fn reconcile_then(
    hpa: Arc<HorizontalPodAutoscaler>,
    ctx: Arc<Context>,
) -> Result<Duration, Error> {
    let started = std::time::Instant::now();
    let (key, _, _) = key_of(&hpa);
    if let Some(wait) = ctx.not_yet(&key, started) {
        return Ok(wait);
    }
    let result = reconcile_once(&hpa, &ctx).await;
    tracing::debug!(hpa = %key, took_ms = started.elapsed().as_millis() as u64, "reconciled");
    match result {
        Ok(d) => match d.error {
            Some(e) => {
                tracing::info!(hpa = %key, error = %e, "reconcile reported an error");
                Err(Error::Reconcile(e))
            }
            None => {
                let now = std::time::Instant::now();
                Ok(ctx.requeue_after(&key, started, now))
            }
        },
        Err(e) => Err(e),
    }
}

/// After a failed reconcile: try again after the sync period (upstream's fixed-interval queue).
pub fn error_policy(hpa: Arc<HorizontalPodAutoscaler>, err: &Error, ctx: Arc<Context>) -> Action {
    Action::requeue(retry_after(&hpa, err, &ctx))
}

/// [`error_policy`]'s wait: the sync period, logged.
pub fn retry_after(hpa: &HorizontalPodAutoscaler, err: &Error, ctx: &Context) -> Duration {
    let (key, _, _) = key_of(hpa);
    tracing::warn!(hpa = %key, error = %err, "reconcile failed; retrying after the sync period");
    ctx.settings.sync_period
}

/// How long to wait between reconciles of one HPA.
pub fn sync_period(ctx: &Context) -> Duration {
    ctx.settings.sync_period
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn context() -> Context {
        context_of(crate::KubernetesVersion::V1_36)
    }

    fn context_of(version: crate::KubernetesVersion) -> Context {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("url"));
        let client = Client::try_from(config).expect("client");
        Context::new(
            client,
            Arc::new(SystemClock),
            Settings::for_version(version),
        )
    }

    #[tokio::test]
    async fn from_1_37_a_new_hpa_is_reconciled_at_once_then_every_sync_period() {
        let ctx = context_of(crate::KubernetesVersion::V1_37);
        let t0 = Instant::now();
        let period = Duration::from_secs(15);
        assert_eq!(ctx.not_yet("ns/web", t0), None);
        assert_eq!(
            ctx.not_yet("ns/web", t0 + Duration::from_secs(5)),
            Some(Duration::from_secs(10))
        );
        assert_eq!(ctx.not_yet("ns/web", t0 + period), None);
    }

    #[tokio::test]
    async fn from_1_37_a_spec_change_is_reconciled_at_once_a_status_write_is_not() {
        let ctx = context_of(crate::KubernetesVersion::V1_37);
        let t0 = Instant::now();
        let period = Duration::from_secs(15);
        ctx.seen("ns/web", t0);
        ctx.updated("ns/web", Some(1));
        assert_eq!(ctx.not_yet("ns/web", t0), None);
        // The controller's own status write: same generation, the schedule holds.
        ctx.updated("ns/web", Some(1));
        assert_eq!(
            ctx.not_yet("ns/web", t0 + Duration::from_secs(5)),
            Some(Duration::from_secs(10))
        );
        // A spec edit (generation 2) at t0+7: due at once, and the periodic reconcile stays at
        // t0+15, where kube-controller-manager's delaying queue keeps it (the sooner of t0+15
        // and the t0+22 its extra reconcile books).
        ctx.updated("ns/web", Some(2));
        assert_eq!(ctx.not_yet("ns/web", t0 + Duration::from_secs(7)), None);
        let (at, s8) = (t0 + Duration::from_secs(7), Duration::from_secs(8));
        assert_eq!(ctx.requeue_after("ns/web", at, at), s8);
        assert_eq!(
            ctx.not_yet("ns/web", t0 + Duration::from_secs(8)),
            Some(Duration::from_secs(7))
        );
        assert_eq!(ctx.not_yet("ns/web", t0 + period), None);
        // After a periodic reconcile: back a sync period later.
        assert_eq!(
            ctx.requeue_after("ns/web", t0 + period, t0 + period),
            period
        );
        // Before 1.37 (no HPAGeneration) a spec edit keeps the schedule.
        let old = context();
        old.seen("ns/web", t0);
        old.updated("ns/web", Some(1));
        old.updated("ns/web", Some(2));
        assert_eq!(
            old.not_yet("ns/web", t0 + Duration::from_secs(3)),
            Some(Duration::from_secs(12))
        );
    }

    #[tokio::test]
    async fn reconciles_follow_upstreams_queue_one_sync_period_after_the_hpa_appears() {
        let ctx = context();
        let t0 = Instant::now();
        let period = Duration::from_secs(15);
        // First sight (the HPA was created): not now, one sync period later.
        assert_eq!(ctx.not_yet("ns/web", t0), Some(period));
        // Any event before then (a status write, a spec edit) does not bring it forward.
        assert_eq!(
            ctx.not_yet("ns/web", t0 + Duration::from_secs(5)),
            Some(Duration::from_secs(10))
        );
        // Due: reconcile, and the next one is booked a sync period later.
        assert_eq!(ctx.not_yet("ns/web", t0 + period), None);
        assert_eq!(
            ctx.not_yet("ns/web", t0 + period + Duration::from_secs(1)),
            Some(Duration::from_secs(14))
        );
        // Seen by the watch before a reconcile runs: booked from the watch event, not from when
        // the (busy) reconcile queue gets to it; seeing it again does not move it.
        ctx.seen("ns/watched", t0);
        ctx.seen("ns/watched", t0 + Duration::from_secs(3));
        assert_eq!(
            ctx.not_yet("ns/watched", t0 + Duration::from_secs(4)),
            Some(Duration::from_secs(11))
        );
        assert_eq!(ctx.not_yet("ns/watched", t0 + period), None);
        ctx.forget("ns/watched");
        // Other HPAs have their own schedule; a forgotten one starts over.
        assert_eq!(ctx.not_yet("ns/other", t0 + period), Some(period));
        assert_eq!(tracked(&ctx), "2");
        ctx.forget("ns/web");
        assert_eq!(tracked(&ctx), "1");
        assert_eq!(ctx.not_yet("ns/web", t0 + 2 * period), Some(period));
        assert_eq!(tracked(&ctx), "2");
    }

    /// The `num_horizontal_pod_autoscalers` gauge's value.
    fn tracked(ctx: &Context) -> String {
        let name = "horizontal_pod_autoscaler_controller_num_horizontal_pod_autoscalers ";
        ctx.metrics
            .render()
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or("absent")
            .to_string()
    }
}
