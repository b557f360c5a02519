//! When a request is tried again: as client-go's REST client does it, not as kube-rs's default.
//!
//! client-go (`rest.Request`, `checkWait`) tries a request again only when the answer is 429 or
//! any 5xx **and carries `Retry-After`** (whole seconds), waiting what the server said, at most
//! 10 times; any other answer, 503 from an unavailable aggregated API included, goes back to the
//! caller at once. kube-rs's default client instead retries 429, 503 and 504 with or without
//! `Retry-After` on an exponential back-off, up to 15 times: a reconcile that meets a metrics API
//! gone away then hangs in retries for seconds — and is late when the API comes back, a sync
//! period after its retries end. Measured on kind, `just kind-faults metrics-unavailable`
//! (docs/performance.md, *Faults*).
//!
//! [`client`] builds the controller's client with kube-rs's retry off and [`ServerSaysRetry`] in
//! its place.

use std::time::Duration;

use http::{Request, Response, StatusCode};
use kube::client::{Body, ClientBuilder};
use tower::buffer::BufferLayer;
use tower::retry::{Policy, RetryLayer};

use super::ratelimit::RateLimitLayer;

/// client-go's `maxRetries` for a request whose answer says when to come back.
pub const MAX_RETRIES: u32 = 10;

/// The retry policy: 429 or 5xx with `Retry-After: <seconds>` is tried again after those seconds,
/// at most [`MAX_RETRIES`] times; nothing else is.
#[derive(Debug, Clone)]
pub struct ServerSaysRetry {
    left: u32,
}

impl Default for ServerSaysRetry {
    fn default() -> Self {
        ServerSaysRetry { left: MAX_RETRIES }
    }
}

/// How long the answer asks the client to wait before it tries again: `Retry-After` as whole
/// seconds on a 429 or 5xx, else `None` (client-go's `checkWait`).
pub fn server_wait<B>(response: &Response<B>) -> Option<Duration> {
    let status = response.status();
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let seconds: u64 = response
        .headers()
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds))
}

impl<Res, E> Policy<Request<Body>, Response<Res>, E> for ServerSaysRetry {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _req: &mut Request<Body>,
        result: &mut Result<Response<Res>, E>,
    ) -> Option<Self::Future> {
        let wait = server_wait(result.as_ref().ok()?)?;
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        Some(tokio::time::sleep(wait))
    }

    fn clone_request(&mut self, req: &Request<Body>) -> Option<Request<Body>> {
        let body = req.body().try_clone()?;
        let mut clone = Request::builder()
            .method(req.method().clone())
            .uri(req.uri().clone())
            .version(req.version())
            .body(body)
            .ok()?;
        *clone.headers_mut() = req.headers().clone();
        Some(clone)
    }
}

/// The controller's client for `config`: kube-rs's own retry off, [`ServerSaysRetry`] instead,
/// and under it client-go's client-side rate limits (`limits`: every attempt waits for its
/// token, as `rest.Request.tryThrottle` does). Both sit over a buffer: they need a service they
/// can clone, and kube-rs's stack is boxed.
pub fn client(
    mut config: kube::Config,
    limits: RateLimitLayer,
) -> Result<kube::Client, kube::Error> {
    config.default_retry = false;
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&BufferLayer::new(1024))
        .with_layer(&limits)
        .with_layer(&RetryLayer::new(ServerSaysRetry::default()))
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use tower::{Service, ServiceExt};

    fn answer(status: u16, retry_after: Option<&str>) -> Response<()> {
        let mut r = Response::builder().status(status);
        if let Some(s) = retry_after {
            r = r.header("Retry-After", s);
        }
        r.body(()).expect("response")
    }

    #[test]
    fn only_an_answer_that_says_when_is_tried_again() {
        assert_eq!(
            server_wait(&answer(429, Some("1"))),
            Some(Duration::from_secs(1))
        );
        assert_eq!(server_wait(&answer(503, Some("0"))), Some(Duration::ZERO));
        assert_eq!(
            server_wait(&answer(500, Some(" 2 "))),
            Some(Duration::from_secs(2))
        );
        // kube-rs's default retries these three; client-go does not.
        assert_eq!(server_wait(&answer(503, None)), None);
        assert_eq!(server_wait(&answer(429, None)), None);
        assert_eq!(server_wait(&answer(504, None)), None);
        // Not a number of seconds (an HTTP date), or not an answer to retry.
        assert_eq!(
            server_wait(&answer(503, Some("Wed, 21 Oct 2015 07:28:00 GMT"))),
            None
        );
        assert_eq!(server_wait(&answer(404, Some("1"))), None);
        assert_eq!(server_wait(&answer(200, Some("1"))), None);
    }

    /// A service that counts its calls and answers each with `status` and `retry_after`.
    fn counting(
        status: u16,
        retry_after: Option<&'static str>,
    ) -> (
        Arc<AtomicU32>,
        impl Service<Request<Body>, Response = Response<()>, Error = std::convert::Infallible> + Clone,
    ) {
        let calls = Arc::new(AtomicU32::new(0));
        let seen = calls.clone();
        let svc = tower::service_fn(move |_req: Request<Body>| {
            seen.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Ok(answer(status, retry_after)))
        });
        (calls, svc)
    }

    async fn call_once(
        svc: impl Service<Request<Body>, Response = Response<()>, Error = std::convert::Infallible>
        + Clone,
    ) -> u16 {
        let req = Request::builder()
            .uri("http://api/apis/metrics.k8s.io/v1beta1/namespaces/a/pods")
            .body(Body::empty())
            .expect("request");
        let retried = tower::ServiceBuilder::new()
            .layer(RetryLayer::new(ServerSaysRetry::default()))
            .service(svc);
        retried
            .oneshot(req)
            .await
            .expect("answer")
            .status()
            .as_u16()
    }

    #[tokio::test(start_paused = true)]
    async fn a_503_without_retry_after_goes_back_at_once() {
        let (calls, svc) = counting(503, None);
        assert_eq!(call_once(svc).await, 503);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_429_with_retry_after_is_tried_ten_more_times_after_the_given_wait() {
        let (calls, svc) = counting(429, Some("1"));
        let started = tokio::time::Instant::now();
        assert_eq!(call_once(svc).await, 429);
        assert_eq!(calls.load(Ordering::SeqCst), 1 + MAX_RETRIES);
        assert_eq!(
            started.elapsed(),
            Duration::from_secs(u64::from(MAX_RETRIES))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_that_is_not_an_error_is_not_tried_again() {
        let (calls, svc) = counting(200, Some("1"));
        assert_eq!(call_once(svc).await, 200);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    /// The controller's whole client against a server that says "come back at once" first: the
    /// retry goes through the rate limit too (client-go throttles every attempt), so with one
    /// token a second the second attempt waits about a second for its own.
    #[tokio::test]
    async fn the_client_waits_for_a_token_before_every_attempt_retries_included() {
        use wiremock::matchers::path;
        use wiremock::{Mock, MockServer, ResponseTemplate};

        let server = MockServer::start().await;
        let scale = "/apis/apps/v1/namespaces/a/deployments/d/scale";
        Mock::given(path(scale))
            .respond_with(ResponseTemplate::new(503).insert_header("Retry-After", "0"))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(path(scale))
            .respond_with(ResponseTemplate::new(200).set_body_string("{}"))
            .mount(&server)
            .await;
        let config = kube::Config::new(server.uri().parse().expect("uri"));
        let client = client(config, RateLimitLayer::new(1.0, 1)).expect("client");

        let started = std::time::Instant::now();
        let req = Request::get(scale).body(Vec::new()).expect("request");
        let answer: serde_json::Value = client.request(req).await.expect("the retried answer");
        assert_eq!(answer, serde_json::json!({}));
        let seen = server.received_requests().await.expect("recorded");
        assert_eq!(seen.len(), 2, "the 503, then the retry");
        // The first attempt took the bucket's one token; the retry waited for the next.
        assert!(
            started.elapsed() >= Duration::from_millis(990),
            "the retry went after {:?}",
            started.elapsed()
        );
    }
}
