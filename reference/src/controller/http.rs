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
    /// Set once the controller runs (as leader, or without leader election) or stands by as a
    /// candidate that reaches the API server.
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
                    (StatusCode::SERVICE_UNAVAILABLE, "not started")
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
}
