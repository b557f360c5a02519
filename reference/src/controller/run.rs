//! Running the controller: leader election, then the pod cache and the HPA watch (reconciling each
//! HPA on upstream's schedule), the health and metrics server, and a graceful shutdown on SIGTERM
//! or Ctrl-C.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, watcher};

use super::flags::Flags;
use super::http::{self, Health, Limits};
use super::informer::Informer;
use super::leader::Elector;
use super::pods::{PodCache, PodEntry, PodSource};
use super::queue::WorkQueue;
use super::scales::{self, ScaleSource};
use super::{Context, SystemClock, reconcile_then, retry_after};

/// Structured logs to stderr (`RUST_LOG` filters; default `info`).
pub fn init_logging(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

async fn shutdown_signal(mut rx: tokio::sync::watch::Receiver<bool>) {
    while !*rx.borrow() {
        if rx.changed().await.is_err() {
            return;
        }
    }
}

/// Runs the controller until a shutdown signal. Refused flags ([`Flags::validate`]) are an error
/// before anything connects.
pub async fn run(flags: Flags) -> anyhow::Result<()> {
    flags.validate()?;
    let settings = flags.settings().map_err(anyhow::Error::msg)?;
    let timings = flags.leader_election()?;
    let limits = super::ratelimit::RateLimitLayer::new(flags.kube_api_qps, flags.kube_api_burst);
    let client = super::retry::client(kube::Config::infer().await?, limits)?;
    let mut ctx = Context::new(client.clone(), Arc::new(SystemClock), settings);
    let health = Arc::new(Health {
        ready: false.into(),
        metrics: ctx.metrics.clone(),
    });

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        let term = async {
            if let Ok(mut s) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            {
                s.recv().await;
            }
        };
        #[cfg(not(unix))]
        let term = std::future::pending::<()>();
        tokio::select! { _ = ctrl_c => {}, _ = term => {} }
        tracing::info!("shutting down");
        let _ = stop_tx.send(true);
    });
    // The probes on --bind-address; /metrics on --metrics-bind-address (loopback by default: it is
    // unauthenticated), or with the probes when the two addresses are the same.
    let mut servers = Vec::new();
    if flags.metrics_bind_address == flags.bind_address {
        let listener = http::bind(flags.bind_address).await?;
        servers.push(tokio::spawn(http::serve(
            listener,
            http::router(health.clone()),
            Limits::DEFAULT,
            shutdown_signal(stop_rx.clone()),
        )));
    } else {
        for (addr, app) in [
            (flags.bind_address, http::probes(health.clone())),
            (flags.metrics_bind_address, http::metrics(health.clone())),
        ] {
            let listener = http::bind(addr).await?;
            servers.push(tokio::spawn(http::serve(
                listener,
                app,
                Limits::DEFAULT,
                shutdown_signal(stop_rx.clone()),
            )));
        }
    }

    let mut elector = None;
    if let Some(timings) = timings {
        let identity = format!(
            "{}_{}",
            std::env::var("HOSTNAME").unwrap_or_else(|_| "hpa-reference".into()),
            process_id()
        );
        let candidate = Arc::new(Elector::new(
            client.clone(),
            &flags.lease_namespace,
            &flags.lease_name,
            &identity,
            timings.lease_duration,
            Arc::new(SystemClock),
        ));
        tracing::info!(%identity, lease = %flags.lease_name, "waiting for leadership");
        loop {
            if *stop_rx.borrow() {
                return Ok(());
            }
            match candidate.try_acquire_or_renew().await {
                Ok(true) => break,
                // A standby that reaches the API server is ready: it can take over at any time.
                Ok(false) => health.ready.store(true, Ordering::Relaxed),
                Err(e) => tracing::warn!(error = %e, "leader election"),
            }
            tokio::time::sleep(timings.retry_period).await;
        }
        tracing::info!(%identity, "became leader");
        let renew = candidate.clone();
        let (retry, deadline) = (timings.retry_period, timings.renew_deadline);
        let renewing = tokio::spawn(async move {
            let mut last_renewal = std::time::Instant::now();
            loop {
                tokio::time::sleep(retry).await;
                match renew.try_acquire_or_renew().await {
                    Ok(true) => last_renewal = std::time::Instant::now(),
                    Ok(false) => {
                        tracing::error!("leader election lost");
                        std::process::exit(1);
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "could not renew the lease");
                        if last_renewal.elapsed() > deadline {
                            tracing::error!("leader election lost: renew deadline exceeded");
                            std::process::exit(1);
                        }
                    }
                }
            }
        });
        elector = Some((candidate, renewing));
    }

    let (hpas, pods, deployments): (Api<HorizontalPodAutoscaler>, Api<Pod>, Api<Deployment>) =
        match &flags.namespace {
            Some(ns) => (
                Api::namespaced(client.clone(), ns),
                Api::namespaced(client.clone(), ns),
                Api::namespaced(client, ns),
            ),
            None => (
                Api::all(client.clone()),
                Api::all(client.clone()),
                Api::all(client),
            ),
        };
    // The pods from an informer's cache, synced before the first reconcile (upstream's pod lister).
    let (cache, pod_watch) = PodCache::watch(pods, "pods", PodEntry::project);
    let pod_watch = tokio::spawn(pod_watch);
    cache.synced().await;
    tracing::info!(pods = cache.len(), "pod cache synced");
    // With --deployment-scale-cache, the Deployments' scales from a second one (super::scales).
    let scale_watch = if flags.deployment_scale_cache {
        let (scales, watch) = Informer::watch(deployments, "deployments", scales::scale_of);
        let watch = tokio::spawn(watch);
        scales.synced().await;
        tracing::info!(deployments = scales.len(), "deployment scale cache synced");
        ctx.scales = ScaleSource::DeploymentCache(scales);
        Some(watch)
    } else {
        None
    };
    health.ready.store(true, Ordering::Relaxed);
    ctx.pods = PodSource::Cache(cache);
    let ctx = Arc::new(ctx);
    // One HPA watch: every change of an HPA puts it in the work queue (`reconcile` itself keeps
    // upstream's schedule: first reconcile one sync period after the watch delivers the new HPA —
    // at once from 1.37 — booked here as the event arrives; then every sync period; from 1.37 a
    // spec change, a new generation, at once), and a deleted HPA is forgotten. The
    // `--concurrent-horizontal-pod-autoscaler-syncs` workers take due HPAs first in, first out.
    let (reader, writer) = reflector::store();
    let queue = Arc::new(WorkQueue::coalescing(flags.reconcile_coalescing));
    let mut intake = Intake {
        ctx: ctx.clone(),
        queue: queue.clone(),
        listed: Vec::new(),
    };
    let watch = reflector::reflector(
        writer,
        watcher(hpas, watcher::Config::default()).default_backoff(),
    )
    .for_each(move |event| {
        intake.on(event);
        std::future::ready(())
    });
    let watch = tokio::spawn(watch);
    let workers: Vec<_> = (0..flags.concurrent_syncs.max(1))
        .map(|_| tokio::spawn(work(queue.clone(), reader.clone(), ctx.clone())))
        .collect();
    shutdown_signal(stop_rx).await;
    // Graceful: no new reconcile starts; those in progress end.
    queue.shut_down();
    for worker in workers {
        let _ = worker.await;
    }
    watch.abort();
    // Like client-go's ReleaseOnCancel: a leader that stops hands the Lease back at once, so a
    // standby takes over within its retry period instead of waiting out the lease duration.
    if let Some((elector, renewing)) = elector {
        // Stop renewing first, or the next renewal would take the released Lease back.
        renewing.abort();
        let _ = renewing.await;
        match elector.release().await {
            Ok(()) => tracing::info!("released the lease"),
            Err(e) => tracing::warn!(error = %e, "could not release the lease"),
        }
    }
    pod_watch.abort();
    if let Some(w) = scale_watch {
        w.abort();
    }
    for server in servers {
        let _ = server.await;
    }
    Ok(())
}

/// This process's part of its Lease identity, unique per process as kube-controller-manager's
/// (`<hostname>_<uuid>`): a random UUID from the kernel, or the clock's nanoseconds and the pid.
/// (The pid alone is 1 in every container: a leader killed and restarted in its pod came back
/// under the dead one's identity and renewed its Lease at once, which no standby could tell from
/// the same process going on.)
fn process_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/uuid")
        .map(|u| u.trim().to_string())
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            format!("{nanos:x}-{}", std::process::id())
        })
}

/// One worker: takes the next due HPA, reconciles it (`reconcile`, or `error_policy`'s wait after
/// an error) and books its next reconcile, until the queue is shut down. An HPA no longer in the
/// watch's store (deleted) is dropped.
async fn work(queue: Arc<WorkQueue>, store: Store<HorizontalPodAutoscaler>, ctx: Arc<Context>) {
    while let Some(taken) = queue.take().await {
        let started = std::time::Instant::now();
        ctx.metrics.observe_taken(taken.waited, queue.depth());
        let key = taken.key;
        let hpa = key
            .split_once('/')
            .and_then(|(ns, name)| store.get(&ObjectRef::new(name).within(ns)));
        let next = match hpa {
            None => None,
            Some(hpa) => Some(match reconcile_then(hpa.clone(), ctx.clone()).await {
                Ok(after) => after,
                Err(e) => retry_after(&hpa, &e, &ctx),
            }),
        };
        if taken.waited > std::time::Duration::from_secs(1) {
            tracing::debug!(hpa = %key, waited_ms = taken.waited.as_millis() as u64, "waited in line");
        }
        ctx.metrics.observe_worked(started.elapsed());
        queue.done(&key);
        if let Some(after) = next {
            queue.add_after(&key, after);
        }
    }
}

/// What the HPA watch's events do (after the reflector has applied them to the store): a new or
/// changed HPA is booked (`Context::seen`, `Context::updated`) and put in the work queue; a
/// deleted one is forgotten. A (re)list's objects reach the store together at its end
/// (`InitDone`), so their keys are queued then — a worker taking one earlier would not find it in
/// the store and would drop it.
struct Intake {
    ctx: Arc<Context>,
    queue: Arc<WorkQueue>,
    /// The keys of the list in progress.
    listed: Vec<String>,
}

impl Intake {
    fn on(&mut self, event: Result<watcher::Event<HorizontalPodAutoscaler>, watcher::Error>) {
        let book = |hpa: &HorizontalPodAutoscaler| {
            let key = super::key_of(hpa).0;
            self.ctx.seen(&key, std::time::Instant::now());
            self.ctx.updated(&key, hpa.metadata.generation);
            key
        };
        match event {
            Ok(watcher::Event::Apply(hpa)) => {
                let key = book(&hpa);
                self.queue.add(&key);
            }
            Ok(watcher::Event::InitApply(hpa)) => {
                let key = book(&hpa);
                self.listed.push(key);
            }
            Ok(watcher::Event::InitDone) => {
                for key in self.listed.drain(..) {
                    self.queue.add(&key);
                }
            }
            Ok(watcher::Event::Init) => self.listed.clear(),
            Ok(watcher::Event::Delete(hpa)) => {
                let (key, _, _) = super::key_of(&hpa);
                tracing::debug!(hpa = %key, "deleted: forgotten");
                self.ctx.forget(&key);
                self.queue.forget(&key);
            }
            Err(e) => tracing::warn!(error = %e, "watching HorizontalPodAutoscalers"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;

    fn hpa(name: &str) -> HorizontalPodAutoscaler {
        let mut h = HorizontalPodAutoscaler::default();
        h.metadata.name = Some(name.into());
        h.metadata.namespace = Some("ns".into());
        h.metadata.generation = Some(1);
        h
    }

    /// A listed HPA is in the store when a worker takes its key (the regression: keys queued at
    /// `InitApply`, before the store had the list, were taken, not found and dropped — at 5,000
    /// HPAs most of them were never reconciled again).
    #[test]
    fn each_process_has_its_own_identity() {
        let (a, b) = (process_id(), process_id());
        assert!(!a.is_empty() && a != b, "{a} {b}");
    }

    #[tokio::test]
    async fn a_listed_hpa_is_queued_when_the_store_has_it() {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("url"));
        let client = kube::Client::try_from(config).expect("client");
        let settings = crate::Settings::for_version(crate::KubernetesVersion::V1_37);
        let ctx = Arc::new(Context::new(client, Arc::new(SystemClock), settings));
        let queue = Arc::new(WorkQueue::new());
        let (store, writer) = reflector::store();
        let mut intake = Intake {
            ctx,
            queue: queue.clone(),
            listed: Vec::new(),
        };
        let events = vec![
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(hpa("a"))),
            Ok(watcher::Event::InitApply(hpa("b"))),
        ];
        let mut s = std::pin::pin!(reflector::reflector(writer, stream::iter(events)));
        while let Some(e) = s.next().await {
            intake.on(e);
        }
        // Mid-list: nothing queued, and nothing in the store yet.
        assert_eq!(queue.depth(), 0);
        assert!(store.get(&ObjectRef::new("a").within("ns")).is_none());
        let (store2, writer2) = reflector::store();
        let events = vec![
            Ok(watcher::Event::Init),
            Ok(watcher::Event::InitApply(hpa("a"))),
            Ok(watcher::Event::InitApply(hpa("b"))),
            Ok(watcher::Event::InitDone),
            Ok(watcher::Event::Apply(hpa("c"))),
        ];
        intake.listed.clear();
        let mut s = std::pin::pin!(reflector::reflector(writer2, stream::iter(events)));
        while let Some(e) = s.next().await {
            intake.on(e);
        }
        assert_eq!(queue.depth(), 3);
        for _ in 0..3 {
            let taken = queue.take().await.expect("a key");
            let (ns, name) = taken.key.split_once('/').expect("ns/name");
            assert!(
                store2.get(&ObjectRef::new(name).within(ns)).is_some(),
                "{} queued but not in the store",
                taken.key
            );
            queue.done(&taken.key);
        }
    }
}
