//! Running the controller: leader election, then the pod cache and the HPA watch (reconciling each
//! HPA on upstream's schedule), the health and metrics server, and a graceful shutdown on SIGTERM
//! or Ctrl-C.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::StreamExt;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::controller::{Config as ControllerConfig, Controller};
use kube::runtime::reflector;
use kube::runtime::watcher::{self, watcher};

use super::flags::Flags;
use super::http::{self, Health, Limits};
use super::leader::Elector;
use super::pods::{PodCache, PodSource};
use super::{Context, SystemClock, error_policy, reconcile};

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
    let client = super::retry::client(kube::Config::infer().await?)?;
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
            std::process::id()
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

    let (hpas, pods): (Api<HorizontalPodAutoscaler>, Api<Pod>) = match &flags.namespace {
        Some(ns) => (
            Api::namespaced(client.clone(), ns),
            Api::namespaced(client, ns),
        ),
        None => (Api::all(client.clone()), Api::all(client)),
    };
    // The pods from an informer's cache, synced before the first reconcile (upstream's pod lister).
    let (cache, pod_watch) = PodCache::watch(pods);
    let pod_watch = tokio::spawn(pod_watch);
    cache.synced().await;
    tracing::info!(pods = cache.len(), "pod cache synced");
    health.ready.store(true, Ordering::Relaxed);
    ctx.pods = PodSource::Cache(cache);
    let ctx = Arc::new(ctx);
    // One HPA watch: every change of an HPA wakes the controller (`reconcile` itself keeps
    // upstream's schedule: first reconcile one sync period after the watch delivers the new HPA —
    // at once from 1.37 — booked here as the event arrives; then every sync period; from 1.37 a
    // spec change, a new generation, at once), and a deleted HPA is forgotten.
    let (reader, writer) = reflector::store();
    let watched = ctx.clone();
    let trigger = reflector::reflector(writer, watcher(hpas, watcher::Config::default()))
        .inspect(move |event| match event {
            Ok(watcher::Event::Delete(hpa)) => {
                let (key, _, _) = super::key_of(hpa);
                tracing::debug!(hpa = %key, "deleted: forgotten");
                watched.forget(&key);
            }
            Ok(watcher::Event::Apply(hpa) | watcher::Event::InitApply(hpa)) => {
                let key = super::key_of(hpa).0;
                let now = std::time::Instant::now();
                watched.seen(&key, now);
                watched.updated(&key, hpa.metadata.generation);
            }
            _ => {}
        })
        .applied_objects();
    Controller::for_stream(trigger, reader)
        .with_config(ControllerConfig::default().concurrency(flags.concurrent_syncs))
        .graceful_shutdown_on(shutdown_signal(stop_rx))
        .run(reconcile, error_policy, ctx)
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "reconcile");
            }
        })
        .await;
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
    for server in servers {
        let _ = server.await;
    }
    Ok(())
}
