//! The reference controller over HTTP (`reference-api`): every corpus case gives exactly the
//! in-process core's trace; API faults end in upstream's conditions and events, never a panic or
//! a scale-down on missing data, and the next sync recovers; leader election lets one instance lead.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hpa_harness::case::corpus::load_all;
use hpa_harness::case::{Case, load_case};
use hpa_harness::run::{RunOptions, resolve_settings, run_case};
use hpa_harness::targets::api::{ApiHarness, ApiTarget, Fault, Writes};
use hpa_harness::targets::{CoreTarget, GateSupport, TickOutcome};
use hpa_harness::world::{Snapshot, World, instant};
use hpa_reference::controller::ManualClock;
use hpa_reference::controller::leader::Elector;
use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn every_case_gives_the_same_trace_over_the_api_as_in_process() {
    let (cases, bad) = load_all(&[root().join("cases")]);
    assert!(bad.is_empty(), "{bad:?}");
    let opts = RunOptions::default();
    for case in &cases {
        let core = run_case(case, &CoreTarget, &opts);
        let api = run_case(case, &ApiTarget::default(), &opts);
        if case.file.expect.rejected.is_some() {
            // A manifest the API server refuses never reaches the controller: skipped there.
            assert_eq!(
                api.outcome,
                hpa_harness::run::Outcome::Skipped(hpa_harness::run::REJECTED_SKIP.to_string()),
                "{}",
                case.name()
            );
            continue;
        }
        assert_eq!(api.outcome, core.outcome, "{}", case.name());
        assert_eq!(api.trace, core.trace, "{}: traces differ", case.name());
    }
}

/// The corpus again with the controller reading Deployments' scales from its cache
/// (`--deployment-scale-cache`): the same trace, case by case, as the core's.
#[test]
fn every_case_gives_the_same_trace_with_the_deployment_scale_cache() {
    let (cases, bad) = load_all(&[root().join("cases")]);
    assert!(bad.is_empty(), "{bad:?}");
    let opts = RunOptions::default();
    let cached = ApiTarget {
        deployment_scale_cache: true,
    };
    let mut compared = 0;
    for case in cases.iter().filter(|c| c.file.expect.rejected.is_none()) {
        let core = run_case(case, &CoreTarget, &opts);
        let api = run_case(case, &cached, &opts);
        assert_eq!(api.outcome, core.outcome, "{}", case.name());
        assert_eq!(api.trace, core.trace, "{}: traces differ", case.name());
        compared += 1;
    }
    assert!(compared > 300, "only {compared} cases compared");
}

struct Fixture {
    case: Case,
    world: World,
    api: ApiHarness,
}

fn fixture(file: &str, read_timeout: Duration) -> Fixture {
    fixture_with(file, read_timeout, false)
}

fn fixture_with(file: &str, read_timeout: Duration, deployment_scale_cache: bool) -> Fixture {
    let case = load_case(&root().join("tests/fixtures/api").join(file)).expect("fixture case");
    let settings =
        resolve_settings(&case, GateSupport::PerCase, &RunOptions::default()).expect("settings");
    let mut world = World::new(&case);
    for e in &case.file.timeline {
        world.apply(e, 0);
    }
    let api =
        ApiHarness::start_with(settings, read_timeout, deployment_scale_cache).expect("fake API");
    if case.file.memory.is_some() {
        let key = "default/web".to_string();
        api.ctx
            .memory
            .lock()
            .expect("memory")
            .insert(key, hpa_harness::targets::seeded_memory(&case));
    }
    Fixture { case, world, api }
}

impl Fixture {
    fn fault(&self, method: &str, path: &str, status: u16, message: &str, times: usize) {
        self.api.state.lock().expect("state").faults.push(Fault {
            method: method.into(),
            path: path.into(),
            status,
            body: None,
            message: message.into(),
            delay: None,
            times,
        });
    }

    /// The next resource-metrics request answers 200 with this raw body, after `delay`.
    fn metrics_body(&self, body: &str, delay: Option<Duration>) {
        self.api.state.lock().expect("state").faults.push(Fault {
            method: "GET".into(),
            path: "/apis/metrics.k8s.io".into(),
            status: 200,
            body: Some(body.into()),
            message: String::new(),
            delay,
            times: 1,
        });
    }

    fn tick(&mut self, t: i64) -> (TickOutcome, Writes) {
        let snapshot: Snapshot = self.world.snapshot(t);
        let (outcome, writes) = self.api.tick(&snapshot).expect("reconcile");
        self.world
            .apply_outcome(outcome.scaled_to, outcome.status.clone(), t)
            .expect("a replica count the world holds");
        (outcome, writes)
    }
}

fn reasons(o: &TickOutcome) -> Vec<String> {
    o.events
        .iter()
        .map(|e| format!("{} {}", e.type_.as_str(), e.reason))
        .collect()
}

fn condition(o: &TickOutcome, type_: &str) -> String {
    o.status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
        .map(|c| format!("{}/{}", c.status, c.reason.as_deref().unwrap_or("")))
        .unwrap_or_default()
}

#[test]
fn metrics_api_errors_never_scale_down_and_the_next_sync_recovers() {
    for status in [500, 503] {
        let mut f = fixture("scale-down.yaml", Duration::from_secs(10));
        f.fault(
            "GET",
            "/apis/metrics.k8s.io",
            status,
            "the server is currently unable to handle the request",
            1,
        );
        let (o, w) = f.tick(0);
        assert!(w.scale.is_empty(), "no scale write on missing data");
        assert_eq!(
            reasons(&o),
            [
                "Warning FailedGetResourceMetric",
                "Warning FailedComputeMetricsReplicas"
            ]
        );
        assert_eq!(
            condition(&o, "ScalingActive"),
            "False/FailedGetResourceMetric"
        );
        assert!(o.events[0].message.contains("unable to fetch metrics from resource metrics API: the server is currently unable to handle the request"));
        let (o, w) = f.tick(15);
        assert_eq!(w.scale, [2], "recovered at the next sync");
        assert_eq!(condition(&o, "ScalingActive"), "True/ValidMetricFound");
    }
}

#[test]
fn a_metrics_api_timeout_is_a_metric_error_not_a_hang_or_a_panic() {
    let mut f = fixture("scale-down.yaml", Duration::from_secs(1));
    f.metrics_body("{\"items\": []}", Some(Duration::from_secs(3)));
    let (o, w) = f.tick(0);
    assert!(w.scale.is_empty());
    assert_eq!(
        condition(&o, "ScalingActive"),
        "False/FailedGetResourceMetric"
    );
}

#[test]
fn malformed_json_and_empty_lists_from_the_metrics_api_are_metric_errors() {
    let mut f = fixture("scale-down.yaml", Duration::from_secs(10));
    f.metrics_body("{not json", None);
    let (o, w) = f.tick(0);
    assert!(w.scale.is_empty());
    assert_eq!(
        condition(&o, "ScalingActive"),
        "False/FailedGetResourceMetric"
    );

    f.metrics_body("{\"kind\": \"PodMetricsList\", \"items\": []}", None);
    let (o, w) = f.tick(15);
    assert!(w.scale.is_empty());
    assert!(
        o.events[0]
            .message
            .ends_with("no metrics returned from resource metrics API"),
        "{:?}",
        o.events
    );
}

#[test]
fn the_status_is_written_only_when_it_changed() {
    let mut f = fixture("scale-down.yaml", Duration::from_secs(10));
    let mut t = 0;
    // 4 → 2 → 1, then steady at minReplicas 1.
    while f.world.replicas() != 1 && t < 600 {
        f.tick(t);
        t += 15;
    }
    let (_, w) = f.tick(t);
    assert!(
        w.requests
            .iter()
            .any(|r| r.starts_with("PUT") && r.ends_with("/status")),
        "the first steady tick records the new metrics: {:?}",
        w.requests
    );
    let (o, w) = f.tick(t + 15);
    assert!(
        !w.requests.iter().any(|r| r.ends_with("/status")),
        "nothing changed, nothing written: {:?}",
        w.requests
    );
    assert!(o.events.is_empty());
}

#[test]
fn a_repeated_event_patches_the_first_events_count() {
    let mut f = fixture("scale-down.yaml", Duration::from_secs(10));
    f.fault(
        "GET",
        "/apis/metrics.k8s.io",
        503,
        "the server is currently unable to handle the request",
        2,
    );
    let (first, w1) = f.tick(0);
    let (again, w2) = f.tick(15);
    let writes = |w: &Writes| -> Vec<String> {
        w.requests
            .iter()
            .filter(|r| r.contains("/events"))
            .map(|r| r.split(' ').next().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(writes(&w1), ["POST", "POST"], "{:?}", w1.requests);
    assert_eq!(writes(&w2), ["PATCH", "PATCH"], "{:?}", w2.requests);
    // Both ticks still report both events, with the same messages.
    assert_eq!(first.events, again.events);
    assert_eq!(
        reasons(&again),
        [
            "Warning FailedGetResourceMetric",
            "Warning FailedComputeMetricsReplicas"
        ]
    );
    // Two Events on the server, each counted twice, first seen at t=0, last at t=15.
    let stored = f.api.state.lock().expect("state").stored_events.clone();
    assert_eq!(stored.len(), 2);
    for e in &stored {
        assert_eq!(e["count"], json!(2), "{e}");
        assert_eq!(e["source"]["component"], json!("horizontal-pod-autoscaler"));
        assert_ne!(e["firstTimestamp"], e["lastTimestamp"], "{e}");
    }
}

#[test]
fn a_scale_update_conflict_is_retried_with_a_fresh_read() {
    let mut f = fixture("scale-down.yaml", Duration::from_secs(10));
    f.fault(
        "PUT",
        "/scale",
        409,
        "Operation cannot be fulfilled on deployments.apps \"web\": the object has been modified",
        1,
    );
    let (o, w) = f.tick(0);
    assert_eq!(w.scale, [2]);
    let puts = w
        .requests
        .iter()
        .filter(|r| r.starts_with("PUT") && r.ends_with("/scale"))
        .count();
    let gets = w
        .requests
        .iter()
        .filter(|r| r.starts_with("GET") && r.ends_with("/scale"))
        .count();
    assert_eq!((puts, gets), (2, 2), "{:?}", w.requests);
    assert_eq!(reasons(&o), ["Normal SuccessfulRescale"]);
}

/// Requests whose line (`METHOD path`) starts with `method` and whose path contains `part`.
fn count(w: &Writes, method: &str, part: &str) -> usize {
    w.requests
        .iter()
        .filter(|r| r.starts_with(method) && r.contains(part))
        .count()
}

#[test]
fn with_the_deployment_scale_cache_only_a_reconcile_that_rescales_gets_the_scale() {
    let mut f = fixture_with("scale-down.yaml", Duration::from_secs(10), true);
    // 4 → 2: the cached read would rescale, so the reconcile is done again from a GET (and its
    // metrics read again), and the write carries what the GET read.
    let (o, w) = f.tick(0);
    assert_eq!(w.scale, [2]);
    assert_eq!(reasons(&o), ["Normal SuccessfulRescale"]);
    assert_eq!(count(&w, "GET", "/scale"), 1, "{:?}", w.requests);
    assert_eq!(count(&w, "PUT", "/scale"), 1, "{:?}", w.requests);
    assert_eq!(count(&w, "GET", "metrics.k8s.io"), 2, "{:?}", w.requests);
    // Held at 2 by the stabilization window: the scale only from the cache.
    let (o, w) = f.tick(15);
    assert_eq!(w.scale, Vec::<i32>::new());
    assert_eq!(o.status.current_replicas, Some(2));
    assert_eq!(count(&w, "GET", "/scale"), 0, "{:?}", w.requests);
    assert_eq!(count(&w, "GET", "metrics.k8s.io"), 1, "{:?}", w.requests);
}

#[test]
fn with_the_deployment_scale_cache_a_stale_scale_is_never_written_back() {
    let mut f = fixture_with("scale-down.yaml", Duration::from_secs(10), true);
    f.tick(0);
    assert_eq!(f.world.replicas(), 2);
    // At t=15 the watch has not yet delivered the 4 → 2: the cache still says 4 (read back as
    // 4 → 2 again). The fresh GET reads 2, held there by the stabilization window: nothing written.
    let snapshot = f.world.snapshot(15);
    let mut stale = snapshot.scale.clone().expect("scale");
    stale.metadata.namespace = Some("default".into());
    stale.spec.as_mut().expect("spec").replicas = Some(4);
    let cache = f.api.scales.clone().expect("the scale cache");
    cache.apply(
        kube::runtime::watcher::Event::Apply(stale),
        &mut None,
        |s: &k8s_openapi::api::autoscaling::v1::Scale| Some(s.clone()),
    );
    {
        let mut state = f.api.state.lock().expect("state");
        state.snapshot = Some(snapshot.clone());
        state.writes = Writes::default();
    }
    f.api.clock.set(snapshot.now);
    let decision = f
        .api
        .runtime
        .block_on(hpa_reference::controller::reconcile_once(
            &snapshot.hpa,
            &f.api.ctx,
        ))
        .expect("reconcile");
    let w = f.api.state.lock().expect("state").writes.clone();
    assert_eq!(w.scale, Vec::<i32>::new(), "{:?}", w.requests);
    assert_eq!(count(&w, "PUT", "/scale"), 0, "{:?}", w.requests);
    assert_eq!(count(&w, "GET", "/scale"), 1, "{:?}", w.requests);
    assert_eq!(decision.status.current_replicas, Some(2));
    assert!(decision.events.is_empty(), "{:?}", decision.events);
}

#[test]
fn a_failed_scale_update_reports_failed_rescale_and_keeps_the_desired_count() {
    let mut f = fixture("scale-down.yaml", Duration::from_secs(10));
    f.fault("PUT", "/scale", 500, "etcdserver: request timed out", 0);
    let (o, w) = f.tick(0);
    assert!(w.scale.is_empty());
    assert_eq!(reasons(&o), ["Warning FailedRescale"]);
    assert_eq!(condition(&o, "AbleToScale"), "False/FailedUpdateScale");
    assert_eq!(
        o.status.desired_replicas, 0,
        "the previous desired count stays"
    );
}

#[test]
fn a_failed_status_write_records_failed_update_status() {
    let mut f = fixture("scale-down.yaml", Duration::from_secs(10));
    f.fault("PUT", "/status", 500, "etcdserver: leader changed", 1);
    let (o, w) = f.tick(0);
    assert_eq!(w.scale, [2], "the scale write happened");
    assert_eq!(
        reasons(&o),
        ["Normal SuccessfulRescale", "Warning FailedUpdateStatus"]
    );
    assert_eq!(o.events[1].message, "etcdserver: leader changed");
}

#[test]
fn throttling_from_the_api_server_fails_the_reconcile_without_a_panic_and_it_recovers() {
    let mut f = fixture("scale-down.yaml", Duration::from_secs(10));
    f.fault(
        "GET",
        "/api/v1/namespaces/default/pods",
        429,
        "Too many requests, please try again later.",
        1,
    );
    let snapshot = f.world.snapshot(0);
    let err = f.api.tick(&snapshot).expect_err("the reconcile fails");
    assert!(err.contains("Too many requests"), "{err}");
    let (_, w) = f.tick(15);
    assert_eq!(w.scale, [2]);
}

#[test]
fn an_unresolvable_scale_target_is_failed_get_scale() {
    let mut f = fixture("scale-down.yaml", Duration::from_secs(10));
    f.fault(
        "GET",
        "/apis/apps/v1",
        404,
        "the server could not find the requested resource",
        0,
    );
    let (o, w) = f.tick(0);
    assert!(w.scale.is_empty());
    assert_eq!(reasons(&o), ["Warning FailedGetScale"]);
    assert_eq!(condition(&o, "AbleToScale"), "False/FailedGetScale");
    assert!(
        o.events[0]
            .message
            .starts_with("unable to determine resource for scale target reference"),
        "{:?}",
        o.events
    );
}

#[test]
fn a_target_without_a_selector_and_an_unknown_metric_type_get_upstreams_conditions() {
    let mut f = fixture("scale-down.yaml", Duration::from_secs(10));
    // No selector on the scale.
    let mut snapshot = f.world.snapshot(0);
    if let Ok(scale) = snapshot.scale.as_mut()
        && let Some(status) = scale.status.as_mut()
    {
        status.selector = None;
    }
    let (o, w) = f.api.tick(&snapshot).expect("reconcile");
    assert!(w.scale.is_empty());
    assert_eq!(
        reasons(&o),
        [
            "Warning SelectorRequired",
            "Warning FailedComputeMetricsReplicas"
        ]
    );
    assert_eq!(condition(&o, "ScalingActive"), "False/InvalidSelector");

    // A metric type the controller does not know (the API server would have rejected it; a
    // controller must still not panic on it).
    let mut snapshot = f.world.snapshot(15);
    let metrics = snapshot.hpa.spec.metrics.as_mut().expect("metrics");
    metrics[0].type_ = "Frobnicate".into();
    let (o, w) = f.api.tick(&snapshot).expect("reconcile");
    assert!(w.scale.is_empty());
    assert_eq!(
        condition(&o, "ScalingActive"),
        "False/InvalidMetricSourceType"
    );
    assert_eq!(
        reasons(&o),
        [
            "Warning InvalidMetricSourceType",
            "Warning FailedComputeMetricsReplicas"
        ]
    );
}

#[test]
fn other_hpas_keep_being_reconciled_after_one_fails() {
    let mut bad = fixture("scale-down.yaml", Duration::from_secs(10));
    bad.fault(
        "GET",
        "/scale",
        500,
        "the server is currently unable to handle the request",
        0,
    );
    let (o, _) = bad.tick(0);
    assert_eq!(reasons(&o), ["Warning FailedGetScale"]);
    // The same controller context reconciles another HPA (another namespace's world) fine.
    let case = load_case(&root().join("tests/fixtures/api/scale-up.yaml")).expect("case");
    let mut world = World::new(&case);
    for e in &case.file.timeline {
        world.apply(e, 0);
    }
    bad.api.state.lock().expect("state").faults.clear();
    let (o, w) = bad.api.tick(&world.snapshot(15)).expect("reconcile");
    assert_eq!(w.scale, [4]);
    assert_eq!(reasons(&o), ["Normal SuccessfulRescale"]);
    let _ = &bad.case;
}

/// A Lease store with resourceVersion checks (the API server's optimistic concurrency).
#[derive(Clone, Default)]
struct LeaseStore(Arc<Mutex<(Option<Value>, u64)>>);

impl Respond for LeaseStore {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let mut s = self.0.lock().expect("lease store");
        let conflict = || {
            ResponseTemplate::new(409).set_body_json(
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                "message": "the object has been modified", "reason": "Conflict", "code": 409}),
            )
        };
        match req.method.as_str() {
            "GET" => match &s.0 {
                Some(l) => ResponseTemplate::new(200).set_body_json(l.clone()),
                None => ResponseTemplate::new(404).set_body_json(json!({"kind": "Status", "apiVersion": "v1",
                    "status": "Failure", "message": "leases.coordination.k8s.io \"hpa-reference\" not found",
                    "reason": "NotFound", "code": 404})),
            },
            "POST" | "PUT" => {
                let mut l: Value = serde_json::from_slice(&req.body).expect("lease body");
                let stored_rv = s.0.as_ref().map(|x| x["metadata"]["resourceVersion"].clone());
                if req.method.as_str() == "POST" && s.0.is_some() {
                    return conflict();
                }
                if req.method.as_str() == "PUT" && stored_rv != Some(l["metadata"]["resourceVersion"].clone()) {
                    return conflict();
                }
                s.1 += 1;
                l["metadata"]["resourceVersion"] = json!(s.1.to_string());
                l["apiVersion"] = json!("coordination.k8s.io/v1");
                l["kind"] = json!("Lease");
                s.0 = Some(l.clone());
                ResponseTemplate::new(if req.method.as_str() == "POST" { 201 } else { 200 }).set_body_json(l)
            }
            _ => ResponseTemplate::new(405),
        }
    }
}

#[test]
fn leader_election_lets_one_instance_lead_until_its_lease_expires() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let server = MockServer::start().await;
        let store = LeaseStore::default();
        Mock::given(wiremock::matchers::path_regex(
            "^/apis/coordination.k8s.io/v1/namespaces/kube-system/leases.*",
        ))
        .respond_with(store.clone())
        .mount(&server)
        .await;
        let mut config = kube::Config::new(server.uri().parse().expect("uri"));
        config.default_retry = false;
        let client = kube::Client::try_from(config).expect("client");
        let clock = Arc::new(ManualClock::new(instant(0)));
        let a = Elector::new(
            client.clone(),
            "kube-system",
            "hpa-reference",
            "a",
            Duration::from_secs(15),
            clock.clone(),
        );
        let b = Elector::new(
            client,
            "kube-system",
            "hpa-reference",
            "b",
            Duration::from_secs(15),
            clock.clone(),
        );
        assert_eq!(
            a.try_acquire_or_renew().await,
            Ok(true),
            "a takes the free lease"
        );
        assert_eq!(
            b.try_acquire_or_renew().await,
            Ok(false),
            "b waits while a holds it"
        );
        clock.set(instant(10));
        assert_eq!(a.try_acquire_or_renew().await, Ok(true), "a renews");
        clock.set(instant(20));
        assert_eq!(
            b.try_acquire_or_renew().await,
            Ok(false),
            "renewed 10 s ago: still a's"
        );
        clock.set(instant(26));
        assert_eq!(
            b.try_acquire_or_renew().await,
            Ok(true),
            "a has not renewed for 16 s: b takes over"
        );
        assert_eq!(
            a.try_acquire_or_renew().await,
            Ok(false),
            "a no longer leads"
        );
        let lease = store.0.lock().expect("store").0.clone().expect("lease");
        assert_eq!(lease["spec"]["holderIdentity"], "b");
        assert_eq!(lease["spec"]["leaseTransitions"], 1);
    });
}

#[test]
fn with_two_instances_only_the_leader_reconciles_and_writes() {
    let mut f = fixture("scale-down.yaml", Duration::from_secs(10));
    let store = LeaseStore::default();
    let server_uri = f.api.server.uri();
    f.api.runtime.block_on(async {
        Mock::given(wiremock::matchers::path_regex(
            "^/apis/coordination.k8s.io/v1/namespaces/kube-system/leases.*",
        ))
        .respond_with(store.clone())
        .with_priority(1)
        .mount(&f.api.server)
        .await;
    });
    // A second instance: its own controller context and elector against the same API server.
    let mut config = kube::Config::new(server_uri.parse().expect("uri"));
    config.default_retry = false;
    let client = f
        .api
        .runtime
        .block_on(async { kube::Client::try_from(config).expect("client") });
    let clock = Arc::new(ManualClock::new(instant(0)));
    let second = hpa_reference::controller::Context::new(
        client.clone(),
        clock.clone(),
        f.api.ctx.settings.clone(),
    );
    let electors = [
        Elector::new(
            f.api.ctx.client.clone(),
            "kube-system",
            "hpa-reference",
            "first",
            Duration::from_secs(15),
            clock.clone(),
        ),
        Elector::new(
            client,
            "kube-system",
            "hpa-reference",
            "second",
            Duration::from_secs(15),
            clock.clone(),
        ),
    ];
    let contexts = [&*f.api.ctx, &second];
    let snapshot = f.world.snapshot(0);
    f.api.state.lock().expect("state").snapshot = Some(snapshot.clone());
    f.api.clock.set(snapshot.now);
    let mut reconciled = Vec::new();
    f.api.runtime.block_on(async {
        // Each instance reconciles only while it leads, as `run` does.
        for (i, (elector, ctx)) in electors.iter().zip(contexts).enumerate() {
            if elector.try_acquire_or_renew().await == Ok(true) {
                hpa_reference::controller::reconcile_once(&snapshot.hpa, ctx)
                    .await
                    .expect("reconcile");
                reconciled.push(i);
            }
        }
    });
    assert_eq!(reconciled, [0], "only the first instance leads");
    let writes = f.api.state.lock().expect("state").writes.clone();
    assert_eq!(writes.scale, [2], "one scale write, by the leader");
    assert_eq!(
        writes
            .requests
            .iter()
            .filter(|r| r.ends_with("/status"))
            .count(),
        1,
        "one status write"
    );
}
