//! `reference-api`: the reference *controller* (`hpa_reference::controller`), its real reconcile
//! and kube client code, over HTTP against a fake Kubernetes API and fake metrics APIs served by a
//! wiremock server from the world's snapshot. Per tick the harness sets the virtual clock, serves
//! the world, runs one reconcile, and reads back what the controller wrote: the scale, the status
//! and the events.
//!
//! The fake API also takes injected faults (status codes, malformed bodies, delays) so the
//! controller's error paths can be tested. It keeps the core/v1 Events the controller creates and
//! applies its patches to them (a repeated event is a patch of the first one's `count`), and
//! reports every occurrence written either way. The controller's recorder here patches repeats but
//! neither aggregates nor spam-filters (both are kube-controller-manager's, unit-tested in
//! `hpa_reference::controller::correlator`): every event the core records reaches the API with
//! its own message, so the lane's trace is the core's.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hpa_reference::controller::correlator::CorrelatorOptions;
use hpa_reference::controller::events::Recorder;
use hpa_reference::controller::informer::Informer;
use hpa_reference::controller::scales::ScaleSource;
use hpa_reference::controller::{Context, ManualClock, reconcile_once};
use hpa_reference::{Event, EventType, Settings};
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kube::runtime::watcher::Event as WatchEvent;
use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::{GateSupport, Session, Target, TargetError, TickOutcome, seeded_memory};
use crate::case::Case;
use crate::world::Snapshot;

/// An injected fault: requests whose method matches and whose path contains `path` get this
/// answer instead, `times` times (0: always).
#[derive(Debug, Clone)]
pub struct Fault {
    /// HTTP method, e.g. `GET`.
    pub method: String,
    /// A substring of the path.
    pub path: String,
    /// The status code.
    pub status: u16,
    /// The raw body (a Status object is built from `message` when `None`).
    pub body: Option<String>,
    /// The Status message.
    pub message: String,
    /// A delay before answering.
    pub delay: Option<Duration>,
    /// How many requests it applies to (0: all).
    pub times: usize,
}

/// What the controller wrote during a tick.
#[derive(Debug, Clone, Default)]
pub struct Writes {
    /// Replica counts PUT to the scale subresource (successful ones).
    pub scale: Vec<i32>,
    /// The status PUT to the HPA.
    pub status: Option<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus>,
    /// Events written: each created Event, and each repeat patched into one.
    pub events: Vec<Event>,
    /// Every request, as `METHOD path`.
    pub requests: Vec<String>,
    /// UPDATE scale requests refused this tick.
    pub refused_scale_updates: u32,
}

/// The fake API server's state.
#[derive(Debug, Default)]
pub struct FakeState {
    /// The world to serve.
    pub snapshot: Option<Snapshot>,
    /// What the controller wrote.
    pub writes: Writes,
    /// Injected faults.
    pub faults: Vec<Fault>,
    /// The core/v1 Events on the fake server, as created and patched (kept across ticks).
    pub stored_events: Vec<Value>,
}

/// The event a stored core/v1 Event reads as.
fn event_of(v: &Value) -> Event {
    Event {
        type_: if v["type"] == "Warning" {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: v["reason"].as_str().unwrap_or_default().to_string(),
        message: v["message"].as_str().unwrap_or_default().to_string(),
    }
}

fn status_body(code: u16, message: &str) -> Value {
    let reason = match code {
        404 => "NotFound",
        409 => "Conflict",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        _ => "InternalError",
    };
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
}

fn error(code: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(code).set_body_json(status_body(code, message))
}

fn plural(kind: &str) -> String {
    hpa_reference::controller::api::plural(kind)
}

/// Answers every request from the shared state.
#[derive(Clone)]
pub struct FakeApi(pub Arc<Mutex<FakeState>>);

impl FakeApi {
    fn route(
        &self,
        state: &mut FakeState,
        method: &str,
        path: &str,
        label_selector: Option<&str>,
        body: &[u8],
    ) -> ResponseTemplate {
        let Some(s) = state.snapshot.clone() else {
            return error(503, "no world yet");
        };
        let hpa = &s.hpa;
        let ns = hpa
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let target = &hpa.spec.scale_target_ref;
        let target_gv = target.api_version.clone().unwrap_or_else(|| "v1".into());
        let target_prefix = if target_gv.contains('/') {
            format!("/apis/{target_gv}")
        } else {
            format!("/api/{target_gv}")
        };
        let scale_path = format!(
            "{target_prefix}/namespaces/{ns}/{}/{}/scale",
            plural(&target.kind),
            target.name
        );

        // Discovery of the target's group/version.
        if method == "GET" && path == target_prefix {
            let p = plural(&target.kind);
            return ResponseTemplate::new(200).set_body_json(json!({
                "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": target_gv,
                "resources": [
                    {"name": p, "singularName": target.kind.to_lowercase(), "namespaced": true, "kind": target.kind,
                     "verbs": ["get", "list", "watch", "update", "patch"]},
                    {"name": format!("{p}/scale"), "singularName": "", "namespaced": true, "group": "autoscaling",
                     "version": "v1", "kind": "Scale", "verbs": ["get", "update", "patch"]}
                ]
            }));
        }
        if path == scale_path {
            return match (method, &s.scale) {
                ("GET", Ok(scale)) => {
                    let mut v = serde_json::to_value(scale).unwrap_or(Value::Null);
                    v["apiVersion"] = json!("autoscaling/v1");
                    v["kind"] = json!("Scale");
                    ResponseTemplate::new(200).set_body_json(v)
                }
                ("GET", Err(e)) => error(500, e),
                ("PUT", _) => {
                    if let Some(e) = &s.scale_update_error {
                        // A typed refusal fails the tick's first `scaleUpdateFailures` attempts
                        // (every one when absent) with its status code; a plain error, each.
                        let code = match s.scale_update_error_reason.as_deref() {
                            Some("Conflict") => 409,
                            Some("NotFound") => 404,
                            Some("TooManyRequests") => 429,
                            Some("ServiceUnavailable") => 503,
                            _ => 500,
                        };
                        let refused = state.writes.refused_scale_updates;
                        if s.scale_update_error_reason.is_none()
                            || s.scale_update_failures.is_none_or(|n| refused < n)
                        {
                            state.writes.refused_scale_updates += 1;
                            return error(code, e);
                        }
                    }
                    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
                    match v["spec"]["replicas"].as_i64() {
                        Some(n) => {
                            state.writes.scale.push(n as i32);
                            ResponseTemplate::new(200).set_body_json(v)
                        }
                        None => error(400, "the scale has no spec.replicas"),
                    }
                }
                _ => error(405, "method not allowed"),
            };
        }
        if method == "GET" && path == format!("/api/v1/namespaces/{ns}/pods") {
            // The namespace's pods that the request's label selector selects, as an API server
            // lists them (a case with HPAs alongside sends every pod of the namespace).
            let selected: Vec<&k8s_openapi::api::core::v1::Pod> = match label_selector {
                None => s.pods.iter().collect(),
                Some(text) => match hpa_reference::selector::parse(text) {
                    Ok(sel) => {
                        let none = std::collections::BTreeMap::new();
                        s.pods
                            .iter()
                            .filter(|p| sel.matches(p.metadata.labels.as_ref().unwrap_or(&none)))
                            .collect()
                    }
                    Err(e) => return error(400, &format!("unable to parse requirement: {e}")),
                },
            };
            return ResponseTemplate::new(200).set_body_json(json!({
                "kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": selected
            }));
        }
        if method == "GET" && path == format!("/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods") {
            let r = &s.metrics.resource;
            if let Some(e) = &r.error {
                return error(503, e);
            }
            let items: Vec<Value> = r
                .items
                .iter()
                .map(|m| {
                    let mut v = serde_json::to_value(m).unwrap_or(Value::Null);
                    v["apiVersion"] = json!("metrics.k8s.io/v1beta1");
                    v["kind"] = json!("PodMetrics");
                    v
                })
                .collect();
            return ResponseTemplate::new(200).set_body_json(json!({
                "kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {}, "items": items
            }));
        }
        let custom = format!("apis/custom.metrics.k8s.io/v1beta2/namespaces/{ns}/");
        if method == "GET" && path.trim_start_matches('/').starts_with(&custom) {
            let rest: Vec<&str> = path.trim_start_matches('/')[custom.len()..]
                .split('/')
                .collect();
            if rest.len() == 3 && rest[0] == "pods" && rest[1] == "*" {
                let metric = rest[2];
                let answer = s.metrics.pods.get(metric).cloned().unwrap_or_default();
                if let Some(e) = answer.error {
                    return error(503, &e);
                }
                let items: Vec<Value> = answer
                    .items
                    .iter()
                    .map(|v| {
                        json!({"describedObject": {"kind": "Pod", "namespace": ns, "name": v.pod, "apiVersion": "/v1"},
                               "metric": {"name": metric}, "timestamp": v.timestamp, "windowSeconds": v.window_seconds,
                               "value": v.value})
                    })
                    .collect();
                return ResponseTemplate::new(200).set_body_json(json!({
                    "kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta2", "metadata": {}, "items": items
                }));
            }
            let metric = rest.last().copied().unwrap_or_default();
            let described = hpa
                .spec
                .metrics
                .iter()
                .flatten()
                .filter_map(|m| m.object.as_ref())
                .find(|o| o.metric.name == metric)
                .map(|o| {
                    (
                        o.described_object.kind.clone(),
                        o.described_object.name.clone(),
                    )
                })
                .unwrap_or_default();
            return match s.metrics.object.get(metric) {
                Some(a) if a.error.is_some() => error(503, a.error.as_deref().unwrap_or_default()),
                Some(a) if a.value.is_some() => {
                    let v = a.value.clone().expect("value");
                    ResponseTemplate::new(200).set_body_json(json!({
                        "kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta2", "metadata": {},
                        "items": [{"describedObject": {"kind": described.0, "namespace": ns, "name": described.1},
                                   "metric": {"name": metric}, "timestamp": v.timestamp, "value": v.value}]
                    }))
                }
                _ => error(
                    404,
                    &format!(
                        "the server could not find the metric {metric} for {} {}",
                        described.0, described.1
                    ),
                ),
            };
        }
        let external = format!("/apis/external.metrics.k8s.io/v1beta1/namespaces/{ns}/");
        if method == "GET" && path.starts_with(&external) {
            let metric = &path[external.len()..];
            let answer = s.metrics.external.get(metric).cloned().unwrap_or_default();
            if let Some(e) = answer.error {
                return error(503, &e);
            }
            let items: Vec<Value> = answer
                .items
                .iter()
                .map(|v| json!({"metricName": metric, "metricLabels": {}, "timestamp": v.timestamp, "value": v.value}))
                .collect();
            return ResponseTemplate::new(200).set_body_json(json!({
                "kind": "ExternalMetricValueList", "apiVersion": "external.metrics.k8s.io/v1beta1", "metadata": {}, "items": items
            }));
        }
        let hpa_name = hpa.metadata.name.clone().unwrap_or_default();
        if method == "PUT"
            && path
                == format!(
                    "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/{hpa_name}/status"
                )
        {
            let written: Result<HorizontalPodAutoscaler, _> = serde_json::from_slice(body);
            return match written {
                Ok(h) => {
                    state.writes.status = h.status.clone();
                    ResponseTemplate::new(200)
                        .set_body_json(serde_json::to_value(&h).unwrap_or(Value::Null))
                }
                Err(e) => error(400, &format!("bad HPA: {e}")),
            };
        }
        let events = format!("/api/v1/namespaces/{ns}/events");
        if method == "POST" && path == events {
            let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            state.writes.events.push(event_of(&v));
            state.stored_events.push(v.clone());
            return ResponseTemplate::new(201).set_body_json(v);
        }
        if method == "PATCH"
            && let Some(name) = path.strip_prefix(&format!("{events}/"))
        {
            let patch: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let Some(stored) = state
                .stored_events
                .iter_mut()
                .find(|e| e["metadata"]["name"] == name)
            else {
                return error(404, &format!("events \"{name}\" not found"));
            };
            for (k, v) in patch.as_object().into_iter().flatten() {
                stored[k] = v.clone();
            }
            let merged = stored.clone();
            state.writes.events.push(event_of(&merged));
            return ResponseTemplate::new(200).set_body_json(merged);
        }
        error(
            404,
            &format!("the server could not find the requested resource ({method} {path})"),
        )
    }
}

impl Respond for FakeApi {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let Ok(mut state) = self.0.lock() else {
            return error(500, "fake API state poisoned");
        };
        let method = req.method.as_str().to_string();
        let path = req.url.path().to_string();
        state.writes.requests.push(format!("{method} {path}"));
        if let Some(i) = state
            .faults
            .iter()
            .position(|f| f.method == method && path.contains(&f.path))
        {
            let f = state.faults[i].clone();
            if f.times == 1 {
                state.faults.remove(i);
            } else if f.times > 1 {
                state.faults[i].times -= 1;
            }
            let mut t = match &f.body {
                Some(b) => ResponseTemplate::new(f.status)
                    .set_body_raw(b.clone().into_bytes(), "application/json"),
                None => error(f.status, &f.message),
            };
            if let Some(d) = f.delay {
                t = t.set_delay(d);
            }
            return t;
        }
        let label_selector = req
            .url
            .query_pairs()
            .find(|(k, _)| k == "labelSelector")
            .map(|(_, v)| v.into_owned());
        self.route(
            &mut state,
            &method,
            &path,
            label_selector.as_deref(),
            &req.body,
        )
    }
}

/// A fake API server with a controller context pointed at it, on its own runtime.
pub struct ApiHarness {
    /// The runtime the controller runs on.
    pub runtime: tokio::runtime::Runtime,
    /// The server (kept alive).
    pub server: MockServer,
    /// The served state.
    pub state: Arc<Mutex<FakeState>>,
    /// The controller's context.
    pub ctx: Arc<Context>,
    /// Its clock.
    pub clock: Arc<ManualClock>,
    /// The Deployment scale cache the controller reads (`--deployment-scale-cache`), fed each
    /// tick with the world's scale as the Deployment watch would deliver it.
    pub scales: Option<Informer<Scale>>,
}

impl ApiHarness {
    /// Starts a fake API and a controller context for these settings. `read_timeout` bounds each
    /// request (tests of slow APIs set it low).
    pub fn start(settings: Settings, read_timeout: Duration) -> Result<ApiHarness, String> {
        ApiHarness::start_with(settings, read_timeout, false)
    }

    /// [`ApiHarness::start`], with the controller reading Deployments' scales from its cache when
    /// `deployment_scale_cache` (a GET error of the world's scale empties the cache, so the
    /// controller GETs and meets it).
    pub fn start_with(
        settings: Settings,
        read_timeout: Duration,
        deployment_scale_cache: bool,
    ) -> Result<ApiHarness, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let state = Arc::new(Mutex::new(FakeState::default()));
        let server = runtime.block_on(async {
            let server = MockServer::start().await;
            Mock::given(wiremock::matchers::any())
                .respond_with(FakeApi(state.clone()))
                .mount(&server)
                .await;
            server
        });
        let clock = Arc::new(ManualClock::default());
        let client = runtime.block_on(async {
            let uri = server.uri().parse().map_err(|e| format!("{e}"))?;
            let mut config = kube::Config::new(uri);
            config.default_retry = false;
            config.read_timeout = Some(read_timeout);
            kube::Client::try_from(config).map_err(|e| e.to_string())
        })?;
        let mut ctx = Context::new(client, clock.clone(), settings);
        ctx.events =
            Recorder::with_options(ctx.events.component(), CorrelatorOptions::every_event());
        let scales = deployment_scale_cache.then(Informer::default);
        if let Some(cache) = &scales {
            ctx.scales = ScaleSource::DeploymentCache(cache.clone());
        }
        let ctx = Arc::new(ctx);
        Ok(ApiHarness {
            runtime,
            server,
            state,
            ctx,
            clock,
            scales,
        })
    }

    /// Serves a snapshot, runs one reconcile of its HPA, and returns what the controller did.
    pub fn tick(&self, snapshot: &Snapshot) -> Result<(TickOutcome, Writes), String> {
        self.clock.set(snapshot.now);
        // Other HPAs selecting the same pods, as if the controller had reconciled them too.
        if let (Ok(scale), Ok(mut selectors)) = (&snapshot.scale, self.ctx.selectors.lock()) {
            let sel = scale
                .status
                .as_ref()
                .and_then(|s| s.selector.clone())
                .unwrap_or_default();
            if let Ok(parsed) = hpa_reference::selector::parse(&sel) {
                for key in &snapshot.other_hpas_selecting_pods {
                    selectors.insert(key.clone(), parsed.clone());
                }
            }
        }
        if let Some(cache) = &self.scales {
            // What the Deployment watch would have delivered by now.
            let (_, ns, _) = hpa_reference::controller::key_of(&snapshot.hpa);
            let mut scale = match &snapshot.scale {
                Ok(scale) => scale.clone(),
                Err(_) => Scale::default(),
            };
            scale.metadata.namespace = Some(ns);
            scale.metadata.name = Some(snapshot.hpa.spec.scale_target_ref.name.clone());
            let event = match &snapshot.scale {
                Ok(_) => WatchEvent::Apply(scale),
                Err(_) => WatchEvent::Delete(scale),
            };
            cache.apply(event, &mut None, |s: &Scale| Some(s.clone()));
        }
        if let Ok(mut s) = self.state.lock() {
            s.snapshot = Some(snapshot.clone());
            s.writes = Writes::default();
        }
        let decision = self
            .runtime
            .block_on(reconcile_once(&snapshot.hpa, &self.ctx))
            .map_err(|e| e.to_string())?;
        let writes = self
            .state
            .lock()
            .map(|s| s.writes.clone())
            .unwrap_or_default();
        let status = writes
            .status
            .clone()
            .unwrap_or_else(|| snapshot.hpa.status.clone().unwrap_or_default());
        Ok((
            TickOutcome {
                scaled_to: writes.scale.last().copied(),
                status,
                events: writes.events.clone(),
                explanation: Some(decision.explanation),
                memory: None,
            },
            writes,
        ))
    }
}

/// The reference controller over HTTP.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiTarget {
    /// The controller reads Deployments' scales from its cache (`--deployment-scale-cache`).
    pub deployment_scale_cache: bool,
}

struct ApiSession {
    harness: ApiHarness,
    /// The case expects the controller's memory (of each tick's HPA).
    report_memory: bool,
}

impl Session for ApiSession {
    fn tick(&mut self, snapshot: &Snapshot) -> Result<TickOutcome, TargetError> {
        let mut outcome = self
            .harness
            .tick(snapshot)
            .map(|(o, _)| o)
            .map_err(|e| TargetError::failed(format!("at t={}: {e}", snapshot.t)))?;
        if self.report_memory {
            let (key, _, _) = hpa_reference::controller::key_of(&snapshot.hpa);
            outcome.memory = self
                .harness
                .ctx
                .memory
                .lock()
                .ok()
                .and_then(|m| m.get(&key).cloned());
        }
        Ok(outcome)
    }
}

impl Target for ApiTarget {
    fn name(&self) -> String {
        "reference-api".into()
    }

    fn gate_support(&self) -> GateSupport {
        GateSupport::PerCase
    }

    fn start(&self, case: &Case, settings: &Settings) -> Result<Box<dyn Session>, TargetError> {
        let h = ApiHarness::start_with(
            settings.clone(),
            Duration::from_secs(30),
            self.deployment_scale_cache,
        )
        .map_err(TargetError::failed)?;
        let (key, _, _) = hpa_reference::controller::key_of(&case.hpa);
        let memory = seeded_memory(case);
        if memory != hpa_reference::Memory::default()
            && let Ok(mut m) = h.ctx.memory.lock()
        {
            m.insert(key.clone(), memory);
        }
        Ok(Box::new(ApiSession {
            harness: h,
            report_memory: super::reports_memory(case),
        }))
    }
}
