//! `/healthz`, `/readyz` and `/metrics` (Prometheus text format).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use super::telemetry::ControllerMetrics;

/// What the endpoints report.
pub struct Health {
    /// Set once the controller runs (as leader, or without leader election).
    pub ready: AtomicBool,
    /// The metrics to expose.
    pub metrics: Arc<ControllerMetrics>,
}

/// The router.
pub fn router(health: Arc<Health>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(|State(h): State<Arc<Health>>| async move {
                if h.ready.load(Ordering::Relaxed) {
                    (StatusCode::OK, "ok")
                } else {
                    (StatusCode::SERVICE_UNAVAILABLE, "not leading yet")
                }
            }),
        )
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

/// Serves the router until `shutdown` resolves.
pub async fn serve(
    addr: SocketAddr,
    health: Arc<Health>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    axum::serve(listener, router(health))
        .with_graceful_shutdown(shutdown)
        .await
}
