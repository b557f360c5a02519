//! Client-side rate limits, as kube-controller-manager's `--kube-api-qps` and `--kube-api-burst`
//! hold its HPA controller.
//!
//! client-go gives a REST client a token bucket (`flowcontrol.NewTokenBucketRateLimiter`, over
//! golang.org/x/time/rate) and waits for a token before **every attempt** of a request, retries
//! included (`rest.Request.tryThrottle`). kube-controller-manager builds the HPA controller's
//! clients separately (`cmd/kube-controller-manager/app/autoscaling.go`), so each has its own
//! bucket at the same rate: the clientset (HPA status writes, events, discovery), the scale
//! client, and each of the three metrics clients; the shared informers (lists and watches of HPAs
//! and pods) and leader election have theirs too. [`ApiClient::of`] sorts this controller's
//! requests into the same clients, and [`RateLimitLayer`] keeps a [`TokenBucket`] for each.
//!
//! The flags as client-go reads them: a QPS of 0 is client-go's default (5, burst 10 when the
//! burst is 0 as well), a negative QPS is no limit; the QPS is a float32, as in
//! `rest.Config.QPS`.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Method, Request};
use tokio::time::Instant;
use tower::{Layer, Service, ServiceExt};

/// client-go's `rest.DefaultQPS`, used when the QPS is 0.
pub const DEFAULT_QPS: f32 = 5.0;
/// client-go's `rest.DefaultBurst`, used when the burst is 0.
pub const DEFAULT_BURST: u32 = 10;

/// golang.org/x/time/rate's limiter for one event at a time: `burst` tokens to start with,
/// `rate` more each second up to `burst`; a reservation takes one token, going below zero when
/// none is left, and the taker waits until the bucket would have refilled to zero.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Option<Instant>,
}

impl TokenBucket {
    /// A full bucket (`rate.NewLimiter(rate.Limit(qps), burst)`); `qps` > 0.
    pub fn new(qps: f32, burst: u32) -> TokenBucket {
        TokenBucket {
            rate: f64::from(qps),
            burst: f64::from(burst),
            tokens: f64::from(burst),
            last: None,
        }
    }

    /// Takes a token at `now` and returns how long to wait before the request may go
    /// (`Limiter.reserveN(now, 1, ∞)`: time never runs backwards for the bucket).
    pub fn reserve(&mut self, now: Instant) -> Duration {
        let last = match self.last {
            Some(last) if last <= now => last,
            _ => now,
        };
        let refilled = self.tokens + now.duration_since(last).as_secs_f64() * self.rate;
        let tokens = refilled.min(self.burst) - 1.0;
        self.tokens = tokens;
        self.last = Some(now);
        if tokens < 0.0 {
            // durationFromTokens: seconds as a float, then whole nanoseconds (truncated).
            Duration::from_nanos((1e9 * (-tokens / self.rate)) as u64)
        } else {
            Duration::ZERO
        }
    }
}

/// The client of kube-controller-manager's that would make a request (each has its own bucket).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiClient {
    /// The HPA controller's clientset: HPA status writes, events, discovery.
    Hpa,
    /// The scale client (`GET`/`PUT` of a `scale` subresource).
    Scale,
    /// `metrics.k8s.io` (resource metrics).
    ResourceMetrics,
    /// `custom.metrics.k8s.io`.
    CustomMetrics,
    /// `external.metrics.k8s.io`.
    ExternalMetrics,
    /// The shared informers: lists and watches of HPAs and pods.
    Informers,
    /// Leader election's Lease.
    LeaderElection,
}

impl ApiClient {
    /// How many clients there are (the buckets of a [`RateLimitLayer`], indexed by `as usize`):
    /// one past the last variant.
    const COUNT: usize = ApiClient::LeaderElection as usize + 1;

    /// Which client makes a request of `method` on `path` (the URI's path, no query).
    pub fn of(method: &Method, path: &str) -> ApiClient {
        let path = path.trim_end_matches('/');
        if path.starts_with("/apis/metrics.k8s.io/") {
            return ApiClient::ResourceMetrics;
        }
        if path.starts_with("/apis/custom.metrics.k8s.io/") {
            return ApiClient::CustomMetrics;
        }
        if path.starts_with("/apis/external.metrics.k8s.io/") {
            return ApiClient::ExternalMetrics;
        }
        if path.starts_with("/apis/coordination.k8s.io/") {
            return ApiClient::LeaderElection;
        }
        if path.ends_with("/scale") {
            return ApiClient::Scale;
        }
        let last = path.rsplit('/').next().unwrap_or("");
        if *method == Method::GET && (last == "pods" || last == "horizontalpodautoscalers") {
            return ApiClient::Informers;
        }
        ApiClient::Hpa
    }
}

/// `--kube-api-qps` and `--kube-api-burst` as client-go turns them into a limiter: `None` is no
/// limit (a negative QPS).
pub fn bucket_for(qps: f32, burst: u32) -> Option<TokenBucket> {
    let qps = if qps == 0.0 { DEFAULT_QPS } else { qps };
    let burst = if burst == 0 { DEFAULT_BURST } else { burst };
    // NaN is not > 0 and an infinite rate never waits (rate.Inf): neither limits.
    (qps > 0.0 && qps.is_finite()).then(|| TokenBucket::new(qps, burst))
}

/// One [`TokenBucket`] per [`ApiClient`], shared by every clone of the client.
#[derive(Debug, Clone)]
pub struct RateLimitLayer {
    buckets: Option<Arc<[Mutex<TokenBucket>; ApiClient::COUNT]>>,
}

impl RateLimitLayer {
    /// Each client held to `qps` with `burst` (client-go's reading of the two flags).
    pub fn new(qps: f32, burst: u32) -> RateLimitLayer {
        RateLimitLayer {
            buckets: bucket_for(qps, burst)
                .map(|b| Arc::new(std::array::from_fn(|_| Mutex::new(b.clone())))),
        }
    }

    /// How long a request of `client` made at `now` waits for its token.
    pub fn reserve(&self, client: ApiClient, now: Instant) -> Duration {
        match &self.buckets {
            None => Duration::ZERO,
            Some(buckets) => buckets[client as usize]
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .reserve(now),
        }
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> RateLimit<S> {
        RateLimit {
            inner,
            limits: self.clone(),
        }
    }
}

/// The service of [`RateLimitLayer`]: waits for the request's token, then sends it.
#[derive(Debug, Clone)]
pub struct RateLimit<S> {
    inner: S,
    limits: RateLimitLayer,
}

impl<S, B> Service<Request<B>> for RateLimit<S>
where
    S: Service<Request<B>> + Clone + Send + 'static,
    S::Future: Send,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        // The inner service's readiness is awaited after the wait, on the clone that sends.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let client = ApiClient::of(req.method(), req.uri().path());
        let wait = self.limits.reserve(client, Instant::now());
        let inner = self.inner.clone();
        Box::pin(async move {
            if !wait.is_zero() {
                if wait >= Duration::from_secs(1) {
                    tracing::debug!(
                        waited_ms = wait.as_millis() as u64,
                        method = %req.method(),
                        path = req.uri().path(),
                        "waiting for client-side throttling (--kube-api-qps)"
                    );
                }
                tokio::time::sleep(wait).await;
            }
            inner.oneshot(req).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::atomic::{AtomicU32, Ordering};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_full_bucket_lets_the_burst_through_then_one_per_interval() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(20.0, 3);
        assert_eq!(b.reserve(t0), Duration::ZERO);
        assert_eq!(b.reserve(t0), Duration::ZERO);
        assert_eq!(b.reserve(t0), Duration::ZERO);
        // The fourth at once waits one token (50 ms); the fifth two.
        assert_eq!(b.reserve(t0), ms(50));
        assert_eq!(b.reserve(t0), ms(100));
        // 200 ms on, the bucket has paid its debt of 2 and holds 2 again.
        assert_eq!(b.reserve(t0 + ms(200)), Duration::ZERO);
        assert_eq!(b.reserve(t0 + ms(200)), Duration::ZERO);
        assert_eq!(b.reserve(t0 + ms(200)), ms(50));
        // Idle for long, it refills to the burst, no more.
        let later = t0 + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(b.reserve(later), Duration::ZERO);
        }
        assert_eq!(b.reserve(later), ms(50));
    }

    #[test]
    fn a_bucket_ignores_time_running_backwards() {
        let t0 = Instant::now() + Duration::from_secs(10);
        let mut b = TokenBucket::new(1.0, 1);
        assert_eq!(b.reserve(t0), Duration::ZERO);
        // Earlier than the last reservation: no refill, and no credit for the gap.
        assert_eq!(
            b.reserve(t0 - Duration::from_secs(5)),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn the_qps_is_a_float32_and_the_wait_whole_nanoseconds() {
        // 0.1 as a float32 is 0.100000001490116…: one token waits 9.99999985 s, truncated.
        let t0 = Instant::now();
        let mut b = TokenBucket::new(0.1, 1);
        assert_eq!(b.reserve(t0), Duration::ZERO);
        assert_eq!(b.reserve(t0), Duration::from_nanos(9_999_999_850));
    }

    #[test]
    fn the_flags_read_as_client_go_reads_them() {
        let t0 = Instant::now();
        // 0 and 0: client-go's defaults, 5 QPS with a burst of 10.
        let mut d = bucket_for(0.0, 0).expect("the default limit");
        for _ in 0..10 {
            assert_eq!(d.reserve(t0), Duration::ZERO);
        }
        assert_eq!(d.reserve(t0), ms(200));
        // A negative QPS: no limit at all; nor NaN or infinity.
        assert!(bucket_for(-1.0, 30).is_none());
        assert!(bucket_for(f32::NAN, 30).is_none());
        assert!(bucket_for(f32::INFINITY, 30).is_none());
        let none = RateLimitLayer::new(-1.0, 0);
        for _ in 0..1000 {
            assert_eq!(none.reserve(ApiClient::Scale, t0), Duration::ZERO);
        }
    }

    #[test]
    fn requests_go_to_the_clients_kube_controller_manager_has() {
        let get = Method::GET;
        for (method, path, client) in [
            (
                &get,
                "/apis/apps/v1/namespaces/a/deployments/app/scale",
                ApiClient::Scale,
            ),
            (
                &Method::PUT,
                "/apis/apps/v1/namespaces/a/deployments/app/scale",
                ApiClient::Scale,
            ),
            (
                &get,
                "/apis/metrics.k8s.io/v1beta1/namespaces/a/pods",
                ApiClient::ResourceMetrics,
            ),
            (
                &get,
                "/apis/custom.metrics.k8s.io/v1beta2/namespaces/a/pods/*/qps",
                ApiClient::CustomMetrics,
            ),
            (
                &get,
                "/apis/external.metrics.k8s.io/v1beta1/namespaces/a/queue",
                ApiClient::ExternalMetrics,
            ),
            (&get, "/api/v1/pods", ApiClient::Informers),
            (&get, "/api/v1/namespaces/a/pods", ApiClient::Informers),
            (
                &get,
                "/apis/autoscaling/v2/horizontalpodautoscalers",
                ApiClient::Informers,
            ),
            (
                &Method::PUT,
                "/apis/autoscaling/v2/namespaces/a/horizontalpodautoscalers/h/status",
                ApiClient::Hpa,
            ),
            (&Method::POST, "/api/v1/namespaces/a/events", ApiClient::Hpa),
            (
                &Method::PATCH,
                "/api/v1/namespaces/a/events/e",
                ApiClient::Hpa,
            ),
            (&get, "/api/v1/namespaces/a/pods/p", ApiClient::Hpa),
            (
                &Method::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/k/leases/hpa-reference",
                ApiClient::LeaderElection,
            ),
        ] {
            assert_eq!(ApiClient::of(method, path), client, "{method} {path}");
        }
    }

    #[test]
    fn each_client_has_its_own_bucket() {
        let t0 = Instant::now();
        let limits = RateLimitLayer::new(10.0, 1);
        assert_eq!(limits.reserve(ApiClient::Scale, t0), Duration::ZERO);
        assert_eq!(limits.reserve(ApiClient::Scale, t0), ms(100));
        // The metrics client's bucket is still full; a clone shares the buckets.
        assert_eq!(
            limits.reserve(ApiClient::ResourceMetrics, t0),
            Duration::ZERO
        );
        assert_eq!(
            limits.clone().reserve(ApiClient::ResourceMetrics, t0),
            ms(100)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_service_holds_requests_to_the_rate() {
        let sent = Arc::new(AtomicU32::new(0));
        let seen = sent.clone();
        let svc = tower::service_fn(move |_req: Request<()>| {
            seen.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Ok::<_, std::convert::Infallible>(()))
        });
        let limited = RateLimitLayer::new(2.0, 1).layer(svc);
        let start = Instant::now();
        let mut handles = Vec::new();
        for _ in 0..3 {
            let req = Request::get("http://api/apis/apps/v1/namespaces/a/deployments/d/scale")
                .body(())
                .expect("request");
            handles.push(tokio::spawn(limited.clone().oneshot(req)));
        }
        // The first goes at once; the others at 0.5 s and 1 s.
        tokio::time::sleep(ms(1)).await;
        assert_eq!(sent.load(Ordering::SeqCst), 1);
        tokio::time::sleep(ms(500)).await;
        assert_eq!(sent.load(Ordering::SeqCst), 2);
        for h in handles {
            h.await.expect("task").expect("answer");
        }
        assert_eq!(sent.load(Ordering::SeqCst), 3);
        assert_eq!(start.elapsed(), ms(1000));
    }
}
