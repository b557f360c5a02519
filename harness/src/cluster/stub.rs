//! The metrics stub's control API as the lane uses it: through the API server's service proxy
//! (`hpa_metrics_stub::control::control_proxy_path`), each request carrying the control token,
//! which is read once from the stub's Secret (`get` on that one Secret,
//! `hpa-conformance-system/hpa-metrics-stub-control`). The API server removes `Authorization`
//! before its service proxy forwards a request, so the token goes in the stub's own header.

use std::time::Duration;

use hpa_metrics_stub::control::{
    CERTIFICATE_PATH, CONTROL_SECRET_KEY, CONTROL_SECRET_NAME, CONTROL_TOKEN_HEADER,
    ControlDocument, RequestTimes, SERVICE_NAME, SERVICE_PORT_NAME, SYSTEM_NAMESPACE,
    control_proxy_path, probe_paths,
};
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::Api;

use super::kube::KubeResult;

/// The stub's service proxy path prefix (`…/proxy`).
fn proxy_root() -> String {
    format!(
        "/api/v1/namespaces/{SYSTEM_NAMESPACE}/services/https:{SERVICE_NAME}:{SERVICE_PORT_NAME}/proxy"
    )
}

/// The control API of the stub deployed in the cluster, with its token.
#[derive(Clone)]
pub struct StubControl {
    client: Client,
    token: http::HeaderValue,
}

impl std::fmt::Debug for StubControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StubControl { token: <redacted> }")
    }
}

impl StubControl {
    /// Waits until the stub answers through the service proxy, reads its control token from the
    /// Secret and checks the stub accepts it.
    pub async fn connect(client: &Client) -> KubeResult<StubControl> {
        ready(client).await?;
        served_through_the_aggregator(client).await?;
        let secrets: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
        let secret = secrets.get(CONTROL_SECRET_NAME).await.map_err(|e| {
            format!(
                "reading the metrics stub's control token (Secret {SYSTEM_NAMESPACE}/{CONTROL_SECRET_NAME}; \
                 the harness needs `get` on it; `just kind-stub` creates it): {e}"
            )
        })?;
        let bytes = secret
            .data
            .as_ref()
            .and_then(|d| d.get(CONTROL_SECRET_KEY))
            .map(|b| b.0.clone())
            .ok_or_else(|| {
                format!(
                    "Secret {SYSTEM_NAMESPACE}/{CONTROL_SECRET_NAME} has no key {CONTROL_SECRET_KEY:?}"
                )
            })?;
        let text = String::from_utf8(bytes).map_err(|_| {
            format!("Secret {SYSTEM_NAMESPACE}/{CONTROL_SECRET_NAME}: the token is not text")
        })?;
        let mut token = http::HeaderValue::from_str(text.trim()).map_err(|_| {
            format!(
                "Secret {SYSTEM_NAMESPACE}/{CONTROL_SECRET_NAME}: the token cannot be sent in a header"
            )
        })?;
        token.set_sensitive(true);
        let stub = StubControl {
            client: client.clone(),
            token,
        };
        stub.send(
            http::Method::GET,
            format!("{}/control/namespaces", proxy_root()),
            Vec::new(),
        )
        .await
        .map_err(|e| format!("the metrics stub refuses the control token of its Secret: {e}"))?;
        Ok(stub)
    }

    async fn send(
        &self,
        method: http::Method,
        path: String,
        body: Vec<u8>,
    ) -> Result<String, kube::Error> {
        let req = http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .header(CONTROL_TOKEN_HEADER, self.token.clone())
            .body(body)
            .map_err(kube::Error::HttpError)?;
        self.client.request_text(req).await
    }

    /// Replaces the stub's answers for a namespace.
    pub async fn put(&self, ns: &str, doc: &ControlDocument) -> KubeResult<()> {
        let body = serde_json::to_vec(doc).map_err(|e| e.to_string())?;
        self.send(http::Method::PUT, control_proxy_path(ns), body)
            .await
            .map_err(|e| format!("setting the metrics stub's answers: {e}"))?;
        Ok(())
    }

    /// Forgets a namespace in the stub (best effort).
    pub async fn delete(&self, ns: &str) {
        let _ = self
            .send(http::Method::DELETE, control_proxy_path(ns), Vec::new())
            .await;
    }

    /// The stub's serving certificate (PEM): what a webhook configuration that calls it trusts.
    pub async fn certificate(&self) -> KubeResult<String> {
        self.send(
            http::Method::GET,
            format!("{}{CERTIFICATE_PATH}", proxy_root()),
            Vec::new(),
        )
        .await
        .map_err(|e| format!("reading the metrics stub's certificate: {e}"))
    }

    /// Every namespace's last metric request instants.
    pub async fn request_times(&self) -> Result<RequestTimes, String> {
        let text = self
            .send(
                http::Method::GET,
                format!("{}/control/request-times", proxy_root()),
                Vec::new(),
            )
            .await
            .map_err(|e| format!("reading the stub's request times: {e}"))?;
        serde_json::from_str(&text).map_err(|e| format!("the stub's request times: {e}"))
    }
}

/// How long the metrics APIs get to answer through the aggregator.
const AGGREGATOR_WAIT: Duration = Duration::from_secs(90);
/// Consecutive rounds in which every metrics API must answer before t=0.
const AGGREGATOR_STREAK: u32 = 3;

/// Waits until the API server routes every metrics API the stub serves to the stub: each group
/// version's probe ([`probe_paths`], in the stub's own namespace, which
/// has no document) answers its empty list, [`AGGREGATOR_STREAK`] rounds in a row, a second apart.
/// An APIService can be `Available` while the aggregator still answers `404 page not found` for
/// its paths (seen on v1.37 right after the stub's Deployment rolled); a run that starts then sees
/// every metric fail for its first ticks, so it fails here instead, naming the API and its answer.
async fn served_through_the_aggregator(client: &Client) -> KubeResult<()> {
    let probes = probe_paths(SYSTEM_NAMESPACE);
    let deadline = tokio::time::Instant::now() + AGGREGATOR_WAIT;
    let mut streak = 0;
    loop {
        let mut failing = Vec::new();
        for (group_version, path) in &probes {
            let req = http::Request::get(path.as_str())
                .body(Vec::new())
                .map_err(|e| e.to_string())?;
            match client.request_text(req).await {
                Ok(text) if text.contains("\"items\"") => {}
                Ok(text) => failing.push(format!(
                    "{group_version} answered something else than a list: {}",
                    text.chars().take(200).collect::<String>()
                )),
                Err(e) => failing.push(format!("{group_version}: {e}")),
            }
        }
        if failing.is_empty() {
            streak += 1;
            if streak >= AGGREGATOR_STREAK {
                return Ok(());
            }
        } else {
            streak = 0;
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "the API server does not route the metrics APIs to the stub after {} s ({}); \
                     see `kubectl get apiservices` and `just kind-stub`",
                    AGGREGATOR_WAIT.as_secs(),
                    failing.join("; ")
                ));
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Waits until the metrics stub answers `/healthz` through the service proxy.
async fn ready(client: &Client) -> KubeResult<()> {
    let path = format!("{}/healthz", proxy_root());
    let mut last = String::new();
    for _ in 0..30 {
        let req = http::Request::get(path.as_str())
            .body(Vec::new())
            .map_err(|e| e.to_string())?;
        match client.request_text(req).await {
            Ok(_) => return Ok(()),
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Err(format!(
        "the metrics stub does not answer ({last}); install it with `just kind-stub`"
    ))
}
