//! The HTTPS server: an axum router over a rustls listener (HTTP/1.1).
//!
//! - `GET /healthz`, `/readyz`, `/livez`: `ok`.
//! - `/apis/...`: discovery ([`crate::discovery`]) and the metric paths ([`crate::routes`],
//!   answered by [`crate::answers`] from the namespace's document); each metric request is counted
//!   under its namespace. `/openapi/v2` and `/openapi/v3` are empty documents. Anything else is
//!   `404 page not found`.
//! - The control API: `GET /control/namespaces`; `PUT`, `GET`, `DELETE
//!   /control/namespaces/{ns}`; `GET`, `DELETE /control/namespaces/{ns}/requests`; `GET
//!   /control/request-times` (every namespace's last metric request instants); `GET
//!   /control/certificate` (the serving certificate, PEM: a webhook configuration's `caBundle`).
//! - `POST /admission/scale`: the validating admission webhook for scale updates
//!   ([`crate::admission`]), open to any caller (the API server calls webhooks without a client
//!   certificate).
//!
//! Who may call what is [`crate::auth`]'s: the control API needs the control token (checked
//! before a body is read), every path but the health checks and the control API needs the API
//! server's front-proxy client certificate. What is stored is bounded by the store's
//! [`Caps`](crate::state::Caps): a control document is checked against them before it is parsed.
//!
//! Every connection is bounded ([`Limits`]): the TLS handshake and each request head (request line
//! and headers; counted from the handshake or the end of the previous response, so an idle
//! keep-alive connection counts too) must complete within their timeouts, or the connection is
//! closed — so neither idle connections nor a slowloris trickling its headers stay open — and
//! connections beyond the cap are closed as soon as they are accepted.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, FromRef, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use hyper::body::Incoming;
use hyper::service::Service as _;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tracing::{debug, info, warn};

use crate::admission;
use crate::answers::{self, Query};
use crate::auth::{Auth, Peer};
use crate::control::{ADMISSION_SCALE_PATH, CERTIFICATE_PATH, ControlDocument, NamespaceList};
use crate::discovery;
use crate::reply::Reply;
use crate::routes::{MetricRoute, Route, route};
use crate::state::{CapError, Store, weight};
use crate::wire::Status;

/// Starting the server failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listen address could not be bound.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// What the server lets clients hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Open connections at most (TLS handshakes included); more are closed once accepted.
    pub max_connections: usize,
    /// The TLS handshake must complete within this.
    pub handshake_timeout: Duration,
    /// A request head must arrive whole within this, counted from the handshake or the end of the
    /// previous response.
    pub header_read_timeout: Duration,
}

impl Limits {
    /// The stub's: kube-apiserver's aggregator and the harness keep a few connections each;
    /// 32 s is kube-apiserver's own header read timeout.
    pub const DEFAULT: Limits = Limits {
        max_connections: 256,
        handshake_timeout: Duration::from_secs(10),
        header_read_timeout: Duration::from_secs(32),
    };
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::DEFAULT
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let mut response = Response::new(Body::from(self.body));
        *response.status_mut() =
            StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if let Ok(v) = HeaderValue::from_str(&self.content_type) {
            response.headers_mut().insert(header::CONTENT_TYPE, v);
        }
        if self.content_type.starts_with("text/plain") {
            response.headers_mut().insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
        }
        response
    }
}

/// What every handler shares.
#[derive(Debug, Clone)]
struct App {
    store: Arc<Store>,
    auth: Arc<Auth>,
    /// The serving certificate (PEM).
    certificate: Arc<str>,
}

impl FromRef<App> for Arc<Store> {
    fn from_ref(app: &App) -> Arc<Store> {
        app.store.clone()
    }
}

/// The router of every path the stub serves (`certificate`: the serving certificate, PEM, that
/// `GET /control/certificate` gives). A request's [`Peer`] (its client certificate) is an
/// extension the connection puts on it; without one, it has presented none.
pub fn router(store: Arc<Store>, auth: Arc<Auth>, certificate: Arc<str>) -> Router {
    let body_limit = store.caps().max_document_bytes;
    let app = App {
        store,
        auth,
        certificate,
    };
    let control = Router::new()
        .route("/control/namespaces", get(list_namespaces))
        .route(
            "/control/namespaces/{ns}",
            get(get_document).put(put_document).delete(delete_document),
        )
        .route(
            "/control/namespaces/{ns}/requests",
            get(get_counts).delete(delete_counts),
        )
        .route("/control/request-times", get(get_times))
        .route(CERTIFICATE_PATH, get(get_certificate))
        .route_layer(middleware::from_fn_with_state(app.clone(), control_auth));
    Router::new()
        .route("/healthz", get(ok))
        .route("/readyz", get(ok))
        .route("/livez", get(ok))
        .route(ADMISSION_SCALE_PATH, post(review_scale))
        .merge(control)
        .fallback(api)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(middleware::from_fn(log_request))
        .with_state(app)
}

/// The control API's gate: the token, before anything else (a body is never read without it).
async fn control_auth(State(app): State<App>, request: Request, next: Next) -> Response {
    match app.auth.check_control(request.headers()) {
        None => next.run(request).await,
        Some(refused) => {
            warn!(method = %request.method(), uri = %request.uri(), "control API: {}", refused.body_text().trim());
            refused.into_response()
        }
    }
}

async fn log_request(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let uri = request.uri().clone();
    let started = Instant::now();
    let response = next.run(request).await;
    debug!(
        %method,
        %uri,
        status = response.status().as_u16(),
        micros = started.elapsed().as_micros() as u64,
        "request"
    );
    response
}

async fn ok() -> Reply {
    Reply {
        status: 200,
        content_type: "text/plain; charset=utf-8".to_string(),
        body: b"ok".to_vec(),
    }
}

fn control_error(code: u16, reason: &str, message: String) -> Reply {
    Reply::status(&Status::failure(code, reason, message))
}

fn no_document(ns: &str) -> Reply {
    control_error(
        404,
        "NotFound",
        format!("no control document for namespace {ns:?}"),
    )
}

async fn list_namespaces(State(store): State<Arc<Store>>) -> Reply {
    Reply::json(
        200,
        &NamespaceList {
            namespaces: store.namespaces(),
        },
    )
}

async fn get_document(State(store): State<Arc<Store>>, Path(ns): Path<String>) -> Reply {
    match store.get(&ns) {
        Some(doc) => Reply::json(200, doc.as_ref()),
        None => no_document(&ns),
    }
}

fn cap_error(e: &CapError) -> Reply {
    control_error(e.http_status(), e.reason(), e.to_string())
}

/// Whether `ns` can name a namespace (a DNS-1123 label).
fn namespace_name(ns: &str) -> bool {
    let b = ns.as_bytes();
    (1..=63).contains(&b.len())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

async fn put_document(
    State(store): State<Arc<Store>>,
    Path(ns): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    if !namespace_name(&ns) {
        return control_error(
            422,
            "Invalid",
            format!("{ns:?} is not a namespace name (a DNS-1123 label)"),
        );
    }
    let body = match body {
        Ok(body) => body,
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return cap_error(&CapError::DocumentBytes {
                max: store.caps().max_document_bytes,
            });
        }
        Err(e) => return control_error(400, "BadRequest", format!("reading the body: {e}")),
    };
    let weight = weight(&body);
    if let Err(e) = store.admit(&ns, body.len(), weight) {
        return cap_error(&e);
    }
    let doc: ControlDocument = match serde_json::from_slice(&body) {
        Ok(doc) => doc,
        Err(e) => {
            return control_error(400, "BadRequest", format!("invalid control document: {e}"));
        }
    };
    if let Err(e) = doc.validate() {
        return control_error(422, "Invalid", format!("invalid control document: {e}"));
    }
    let reply = Reply::json(200, &doc);
    let replaced = match store.put(&ns, doc, body.len(), weight) {
        Ok(replaced) => replaced,
        Err(e) => return cap_error(&e),
    };
    debug!(namespace = %ns, replaced, weight, "control document stored");
    Reply {
        status: if replaced { 200 } else { 201 },
        ..reply
    }
}

async fn delete_document(State(store): State<Arc<Store>>, Path(ns): Path<String>) -> Reply {
    match store.delete(&ns) {
        Some(doc) => Reply::json(200, doc.as_ref()),
        None => no_document(&ns),
    }
}

async fn get_counts(State(store): State<Arc<Store>>, Path(ns): Path<String>) -> Reply {
    Reply::json(200, &store.counts(&ns))
}

async fn get_certificate(State(app): State<App>) -> Reply {
    Reply {
        status: 200,
        content_type: "application/x-pem-file".to_string(),
        body: app.certificate.as_bytes().to_vec(),
    }
}

async fn review_scale(
    State(store): State<Arc<Store>>,
    body: Result<Bytes, BytesRejection>,
) -> Reply {
    match body {
        Ok(body) => admission::review(&store, &body),
        Err(e) => control_error(400, "BadRequest", format!("reading the body: {e}")),
    }
}

async fn get_times(State(store): State<Arc<Store>>) -> Reply {
    Reply::json(200, &store.times())
}

async fn delete_counts(State(store): State<Arc<Store>>, Path(ns): Path<String>) -> Reply {
    store.reset_counts(&ns);
    Reply::json(200, &store.counts(&ns))
}

/// The request target as counted: the percent-decoded path and, when present, `?` and the
/// decoded query parameters joined by `&`.
fn count_key(uri: &Uri) -> String {
    let path = crate::routes::segments(uri.path()).join("/");
    match uri.query().filter(|q| !q.is_empty()) {
        Some(q) => {
            let params: Vec<String> = form_urlencoded::parse(q.as_bytes())
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            format!("/{path}?{}", params.join("&"))
        }
        None => format!("/{path}"),
    }
}

async fn api(
    State(app): State<App>,
    peer: Option<Extension<Peer>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Reply {
    if let Some(refused) = app.auth.check_front_proxy(peer.as_ref().map(|p| &p.0)) {
        debug!(%method, %uri, status = refused.status, "metrics API: refused");
        return refused;
    }
    let store = app.store;
    let route = route(uri.path());
    if method != Method::GET && method != Method::HEAD {
        return match route {
            Route::NotFound => Reply::page_not_found(),
            _ => control_error(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource".to_string(),
            ),
        };
    }
    match route {
        Route::Apis => discovery::apis(headers.get(header::ACCEPT).and_then(|v| v.to_str().ok())),
        Route::Group(g) => discovery::api_group_document(&g).unwrap_or_else(Reply::page_not_found),
        Route::GroupVersion(g, v) => {
            discovery::api_resource_list(&g, &v).unwrap_or_else(Reply::page_not_found)
        }
        Route::OpenApiV2 => discovery::openapi_v2(),
        Route::OpenApiV3 => discovery::openapi_v3(),
        Route::NotFound => Reply::page_not_found(),
        Route::Metric(metric) => {
            let query = Query::parse(uri.query());
            let now = store.now();
            if let Some(ns) = metric.namespace() {
                store.count(ns, &count_key(&uri));
            }
            if metric == (MetricRoute::PodMetricsList { namespace: None }) {
                let docs = store.all();
                return answers::all_pod_metrics(
                    docs.iter().map(|(ns, doc)| (ns, doc.as_ref())),
                    &query,
                    &now,
                );
            }
            let doc = metric.namespace().and_then(|ns| store.get(ns));
            answers::answer(&metric, doc.as_deref(), &query, &now)
        }
    }
}

/// A running server.
#[derive(Debug)]
pub struct Server {
    /// The bound address (useful with port 0).
    pub local_addr: SocketAddr,
    /// The shared documents and counters.
    pub store: Arc<Store>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Server {
    /// Binds `listen` and serves HTTPS there until [`Server::shutdown`], within
    /// [`Limits::DEFAULT`], demanding what `auth` says of its callers.
    pub async fn start(
        listen: SocketAddr,
        tls: Arc<rustls::ServerConfig>,
        certificate: Arc<str>,
        store: Arc<Store>,
        auth: Arc<Auth>,
    ) -> Result<Server, ServeError> {
        Server::start_with(listen, tls, certificate, store, auth, Limits::DEFAULT).await
    }

    /// [`Server::start`] within `limits`.
    pub async fn start_with(
        listen: SocketAddr,
        tls: Arc<rustls::ServerConfig>,
        certificate: Arc<str>,
        store: Arc<Store>,
        auth: Arc<Auth>,
        limits: Limits,
    ) -> Result<Server, ServeError> {
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|source| ServeError::Bind {
                addr: listen,
                source,
            })?;
        let local_addr = listener.local_addr().map_err(|source| ServeError::Bind {
            addr: listen,
            source,
        })?;
        let acceptor = TlsAcceptor::from(tls);
        let app = router(store.clone(), auth, certificate);
        let (stop, mut stopped) = watch::channel(false);
        let slots = Arc::new(Semaphore::new(limits.max_connections));
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stopped.changed() => break,
                    accepted = listener.accept() => {
                        let (tcp, peer) = match accepted {
                            Ok(x) => x,
                            Err(e) => {
                                warn!("accept: {e}");
                                tokio::time::sleep(Duration::from_millis(50)).await;
                                continue;
                            }
                        };
                        let Ok(slot) = slots.clone().try_acquire_owned() else {
                            debug!(%peer, "connection refused: at the connection cap");
                            drop(tcp);
                            continue;
                        };
                        let (acceptor, app) = (acceptor.clone(), app.clone());
                        tokio::spawn(async move {
                            serve_connection(acceptor, app, tcp, peer, limits).await;
                            drop(slot);
                        });
                    }
                }
            }
        });
        info!(%local_addr, "serving HTTPS");
        Ok(Server {
            local_addr,
            store,
            stop,
            task,
        })
    }

    /// Stops accepting connections (open connections finish their requests).
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

async fn serve_connection(
    acceptor: TlsAcceptor,
    app: Router,
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    limits: Limits,
) {
    let tls = match tokio::time::timeout(limits.handshake_timeout, acceptor.accept(tcp)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            debug!(%peer, "TLS handshake failed: {e}");
            return;
        }
        Err(_) => {
            debug!(%peer, "TLS handshake timed out");
            return;
        }
    };
    // The client certificate rustls verified (if any): its CommonName goes with every request.
    let client = Peer {
        client_cn: tls
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|chain| chain.first())
            .map(|leaf| crate::x509::common_name(leaf).unwrap_or_default()),
    };
    let inner = TowerToHyperService::new(app);
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        request.extensions_mut().insert(client.clone());
        inner.call(request)
    });
    if let Err(e) = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .serve_connection(TokioIo::new(tls), service)
        .await
    {
        debug!(%peer, "connection: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_keys_are_decoded() {
        let uri: Uri =
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/n/pods/%2A/rps?labelSelector=app%3Dweb"
                .parse()
                .unwrap();
        assert_eq!(
            count_key(&uri),
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/n/pods/*/rps?labelSelector=app=web"
        );
        let uri: Uri = "/apis/metrics.k8s.io/v1beta1/namespaces/n/pods"
            .parse()
            .unwrap();
        assert_eq!(
            count_key(&uri),
            "/apis/metrics.k8s.io/v1beta1/namespaces/n/pods"
        );
    }
}
