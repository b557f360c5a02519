//! `/healthz`, `/readyz` (for the kubelet's probes, on `--bind-address`) and `/metrics`
//! (Prometheus text format, on `--metrics-bind-address`: loopback by default, since it is plain
//! HTTP without authentication; both on one listener when the addresses are the same).
//!
//! Each listener is HTTP/1.1 over hyper with [`Limits`]: a connection that has not sent a whole
//! request head within the header read timeout — idle after connecting or between keep-alive
//! requests, or trickling its headers (slowloris) — is closed, and connections beyond the cap are
//! closed as soon as they are accepted.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::telemetry::ControllerMetrics;

/// What the endpoints report.
pub struct Health {
    /// Set once the controller runs (as leader, or without leader election) or stands by as a
    /// candidate that reaches the API server.
    pub ready: AtomicBool,
    /// The metrics to expose.
    pub metrics: Arc<ControllerMetrics>,
}

/// What one listener lets a client hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Open connections at most; more are closed as soon as they are accepted.
    pub max_connections: usize,
    /// A request head (request line and headers) must arrive whole within this, counted from
    /// the connection's start or the end of its previous response.
    pub header_read_timeout: Duration,
}

impl Limits {
    /// The controller's: a few probes and scrapes need a handful of connections; 10 s is within the
    /// kubelet's probe timeout budget and far below kube-apiserver's 32 s.
    pub const DEFAULT: Limits = Limits {
        max_connections: 64,
        header_read_timeout: Duration::from_secs(10),
    };
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::DEFAULT
    }
}

/// `/healthz` and `/readyz`.
pub fn probes(health: Arc<Health>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(|State(h): State<Arc<Health>>| async move {
                if h.ready.load(Ordering::Relaxed) {
                    (StatusCode::OK, "ok")
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "not started")
                }
            }),
        )
        .with_state(health)
}

/// `/metrics`.
pub fn metrics(health: Arc<Health>) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(|State(h): State<Arc<Health>>| async move {
                (
                    [(
                        "content-type",
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    h.metrics.render(),
                )
            }),
        )
        .with_state(health)
}

/// The three paths on one router.
pub fn router(health: Arc<Health>) -> Router {
    probes(health.clone()).merge(metrics(health))
}

/// Binds `addr` (port 0 picks one: see [`TcpListener::local_addr`]).
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Serves `app` on `listener` within `limits` until `shutdown` resolves (open connections finish
/// on their own, within the same limits).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    tokio::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            () = &mut shutdown => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(x) => x,
                Err(e) => {
                    // Out of descriptors, say: back off rather than spin.
                    tracing::warn!(error = %e, "accept");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::debug!(%peer, "connection refused: at the connection cap");
            drop(tcp);
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout)
                .serve_connection(TokioIo::new(tcp), service)
                .await;
            if let Err(e) = served {
                tracing::debug!(%peer, error = %e, "connection");
            }
            drop(slot);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::monitor::{ActionLabel, ErrorLabel};
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    async fn get(router: Router, path: &str) -> (StatusCode, String) {
        let response = router
            .oneshot(Request::get(path).body(Body::empty()).expect("request"))
            .await
            .expect("response");
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .expect("body");
        (status, String::from_utf8_lossy(&body).to_string())
    }

    #[tokio::test]
    async fn health_readiness_and_metrics() {
        let metrics = Arc::new(ControllerMetrics::default());
        let health = Arc::new(Health {
            ready: AtomicBool::new(false),
            metrics: metrics.clone(),
        });
        assert_eq!(
            get(router(health.clone()), "/healthz").await,
            (StatusCode::OK, "ok".into())
        );
        assert_eq!(
            get(router(health.clone()), "/readyz").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        health.ready.store(true, Ordering::Relaxed);
        assert_eq!(
            get(router(health.clone()), "/readyz").await.0,
            StatusCode::OK
        );
        metrics.set_tracked(1);
        metrics.observe_reconciliation(
            ActionLabel::None,
            ErrorLabel::Internal,
            std::time::Duration::from_millis(3),
        );
        let (status, text) = get(router(health), "/metrics").await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            text.contains(
                r#"horizontal_pod_autoscaler_controller_reconciliations_total{action="none",error="internal"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"horizontal_pod_autoscaler_controller_reconciliation_duration_seconds_count{action="none",error="internal"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains("horizontal_pod_autoscaler_controller_num_horizontal_pod_autoscalers 1"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn the_probe_listener_does_not_serve_metrics() {
        let health = Arc::new(Health {
            ready: AtomicBool::new(true),
            metrics: Arc::new(ControllerMetrics::default()),
        });
        assert_eq!(
            get(probes(health.clone()), "/metrics").await.0,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            get(probes(health.clone()), "/healthz").await.0,
            StatusCode::OK
        );
        assert_eq!(
            get(metrics(health.clone()), "/metrics").await.0,
            StatusCode::OK
        );
        assert_eq!(
            get(metrics(health), "/healthz").await.0,
            StatusCode::NOT_FOUND
        );
    }

    mod limits {
        //! Real sockets on 127.0.0.1: idle and slowloris connections are closed within the header
        //! read timeout, and connections beyond the cap are closed at once.

        use super::*;
        use std::time::Instant;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        use tokio::net::TcpStream;

        const TIMEOUT: Duration = Duration::from_millis(400);
        const CAP: usize = 8;
        /// Well past the timeout, well before a test gives up.
        const CLOSED_WITHIN: Duration = Duration::from_millis(1500);

        async fn start() -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
            let health = Arc::new(Health {
                ready: AtomicBool::new(true),
                metrics: Arc::new(ControllerMetrics::default()),
            });
            let listener = bind("127.0.0.1:0".parse().expect("addr"))
                .await
                .expect("bind");
            let addr = listener.local_addr().expect("addr");
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            tokio::spawn(serve(
                listener,
                router(health),
                Limits {
                    max_connections: CAP,
                    header_read_timeout: TIMEOUT,
                },
                async move {
                    let _ = stopped.await;
                },
            ));
            (addr, stop)
        }

        /// Reads until the server closes the connection (EOF or reset): how long that took, or
        /// `None` when it was still open after `within`. Whatever the server sent is dropped.
        async fn closed(tcp: &mut TcpStream, within: Duration) -> Option<Duration> {
            let started = Instant::now();
            let mut buf = [0u8; 512];
            loop {
                let left = within.checked_sub(started.elapsed())?;
                match tokio::time::timeout(left, tcp.read(&mut buf)).await {
                    Err(_) => return None,
                    Ok(Ok(0) | Err(_)) => return Some(started.elapsed()),
                    Ok(Ok(_)) => {}
                }
            }
        }

        async fn healthz(addr: SocketAddr) -> String {
            let mut tcp = TcpStream::connect(addr).await.expect("connect");
            tcp.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
                .await
                .expect("write");
            let mut text = String::new();
            tokio::time::timeout(CLOSED_WITHIN, tcp.read_to_string(&mut text))
                .await
                .expect("answered in time")
                .expect("read");
            text
        }

        #[tokio::test]
        async fn idle_connections_are_closed_after_the_header_read_timeout() {
            let (addr, _stop) = start().await;
            let mut idle = Vec::new();
            for _ in 0..CAP {
                idle.push(TcpStream::connect(addr).await.expect("connect"));
            }
            for tcp in &mut idle {
                let after = closed(tcp, CLOSED_WITHIN).await;
                assert!(
                    after.is_some(),
                    "an idle connection still open after {CLOSED_WITHIN:?}"
                );
            }
            // A keep-alive connection idle after its answer too.
            let mut kept = TcpStream::connect(addr).await.expect("connect");
            kept.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
                .await
                .expect("write");
            let mut buf = [0u8; 512];
            let n = tokio::time::timeout(CLOSED_WITHIN, kept.read(&mut buf))
                .await
                .expect("answered")
                .expect("read");
            assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "{:?}", &buf[..n]);
            assert!(
                closed(&mut kept, CLOSED_WITHIN).await.is_some(),
                "a keep-alive connection idle after its answer still open"
            );
            assert!(healthz(addr).await.starts_with("HTTP/1.1 200"));
        }

        #[tokio::test]
        async fn a_slowloris_is_closed_while_it_trickles_its_headers() {
            let (addr, _stop) = start().await;
            let mut slow = TcpStream::connect(addr).await.expect("connect");
            slow.write_all(b"GET /healthz HTTP/1.1\r\n")
                .await
                .expect("write");
            let started = Instant::now();
            let mut closed_after = None;
            // One header byte every 50 ms: never idle, never a whole head. Bounded: 40 bytes.
            for _ in 0..40 {
                tokio::time::sleep(Duration::from_millis(50)).await;
                if slow.write_all(b"x").await.is_err() {
                    closed_after = Some(started.elapsed());
                    break;
                }
                let mut buf = [0u8; 512];
                if let Ok(Ok(0) | Err(_)) =
                    tokio::time::timeout(Duration::from_millis(1), slow.read(&mut buf)).await
                {
                    closed_after = Some(started.elapsed());
                    break;
                }
            }
            let after = closed_after.expect("the slowloris was still connected after 2 s");
            assert!(
                after >= TIMEOUT - Duration::from_millis(50),
                "closed early: {after:?}"
            );
            assert!(healthz(addr).await.starts_with("HTTP/1.1 200"));
        }

        #[tokio::test]
        async fn connections_beyond_the_cap_are_closed_at_once() {
            let (addr, _stop) = start().await;
            let mut held = Vec::new();
            for _ in 0..CAP {
                held.push(TcpStream::connect(addr).await.expect("connect"));
            }
            // Each is accepted in turn: the last one may be counted after the next connects.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let mut over = TcpStream::connect(addr).await.expect("connect");
            let after = closed(&mut over, TIMEOUT / 2).await;
            assert!(after.is_some(), "a connection beyond the cap was kept");
            // The held ones were not: still open (the timeout has not run out).
            let mut buf = [0u8; 1];
            for tcp in &mut held {
                assert!(
                    tokio::time::timeout(Duration::from_millis(1), tcp.read(&mut buf))
                        .await
                        .is_err(),
                    "a connection within the cap was closed"
                );
            }
            // Once they are closed, the slots are free again.
            drop(held);
            tokio::time::sleep(Duration::from_millis(50)).await;
            assert!(healthz(addr).await.starts_with("HTTP/1.1 200"));
        }
    }
}
