//! The inputs the benchmarks share (`corpus.rs` times them, `allocations.rs` counts their heap
//! allocations): an HPA with 100 pods and 3 metrics, behavior on, as views for one decision and
//! as a case whose first tick gives the Kubernetes objects for one reconcile from objects.

use std::time::Duration;

use hpa_harness::case::load_case_text;
use hpa_harness::run::{RunOptions, resolve_settings};
use hpa_harness::targets::GateSupport;
use hpa_harness::world::World;
use hpa_reference::view::MetricReading;
use hpa_reference::{
    ConditionStatus, ContainerRequests, Memory, MetricValues, Observation, PodMetric, PodPhase,
    PodView, ReadyCondition, Recommendation, Samples, ScaleEvent, ScaleView, Settings, Time,
    decide,
};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;

pub fn hpa() -> HorizontalPodAutoscaler {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 500,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "512Mi"}}},
                {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "100"}}}
            ],
            "behavior": {
                "scaleUp": {"stabilizationWindowSeconds": 60, "policies": [
                    {"type": "Pods", "value": 4, "periodSeconds": 60},
                    {"type": "Percent", "value": 100, "periodSeconds": 60}]},
                "scaleDown": {"stabilizationWindowSeconds": 300, "policies": [
                    {"type": "Pods", "value": 4, "periodSeconds": 60},
                    {"type": "Percent", "value": 10, "periodSeconds": 60}]}
            }
        }
    }))
    .expect("valid HPA")
}

/// The decision benchmark's inputs: an HPA with 3 metrics and behavior, 100 pods, their samples,
/// and a memory with a full recommendation and scale-event history.
pub struct DecisionFixture {
    pub hpa: HorizontalPodAutoscaler,
    pub t0: Time,
    pub pods: Vec<PodView>,
    pub metrics: Vec<MetricReading>,
    pub settings: Settings,
    pub memory: Memory,
    pub scale: Option<ScaleView>,
}

pub fn decision_fixture() -> DecisionFixture {
    let hpa = hpa();
    let t0 = Time::from_secs(1_000_000);
    let pods: Vec<PodView> = (0..100)
        .map(|i| PodView {
            name: format!("web-{i:04}"),
            phase: PodPhase::Running,
            ready: Some(ReadyCondition {
                status: ConditionStatus::True,
                last_transition: Some(t0.minus_secs(3000)),
            }),
            start_time: Some(t0.minus_secs(3600)),
            deleted: false,
            containers: vec![ContainerRequests {
                name: "app".into(),
                requests: vec![("cpu".into(), 500), ("memory".into(), 536_870_912_000)],
            }],
            sidecars: vec![],
            pod_requests: None,
        })
        .collect();
    let samples = |value: i64| {
        let s: Samples = pods
            .iter()
            .map(|p| {
                (
                    p.name.clone(),
                    PodMetric {
                        value,
                        timestamp: t0,
                        window: Duration::from_secs(30),
                    },
                )
            })
            .collect();
        Ok(MetricValues::PerPod {
            samples: s,
            timestamp: t0,
        })
    };
    let metrics = vec![samples(300), samples(400_000_000_000), samples(120_000)];
    let memory = Memory {
        recommendations: Some(
            (0..20)
                .map(|i| Recommendation {
                    replicas: 100 + i,
                    timestamp: t0.minus_secs(15 * i64::from(i)),
                })
                .collect(),
        ),
        scale_up_events: (0..10)
            .map(|i| ScaleEvent {
                change: 2,
                timestamp: t0.minus_secs(6 * i),
                outdated: false,
            })
            .collect(),
        scale_down_events: (0..10)
            .map(|i| ScaleEvent {
                change: 1,
                timestamp: t0.minus_secs(6 * i),
                outdated: false,
            })
            .collect(),
    };
    DecisionFixture {
        hpa,
        t0,
        pods,
        metrics,
        settings: Settings::default(),
        memory,
        scale: Some(ScaleView {
            spec_replicas: 100,
            status_replicas: 100,
            selector: Some("app=web".into()),
        }),
    }
}

/// Decision `i` of the benchmark's sequence: each is the next sync period, so the oldest
/// recommendation slot is reused and the history stays full (as in a long-running controller).
/// Returns the desired replicas.
pub fn decision_step(f: &mut DecisionFixture, i: usize) -> i32 {
    // The scale is the caller's input, handed in and taken back (not rebuilt: that would count
    // the caller's allocation against the decision).
    let scale = f
        .scale
        .take()
        .expect("the scale is handed back after each decision");
    let obs = Observation {
        now: f.t0.plus(Duration::from_secs(15 * i as u64)),
        hpa: &f.hpa,
        scale: Ok(scale),
        pods: &f.pods,
        metrics: &f.metrics,
        hpas_selecting_pods: &[],
    };
    let plan = decide(&obs, &f.settings, &mut f.memory);
    f.scale = obs.scale.ok();
    let d = plan.finish(Ok(()), &mut f.memory);
    let desired = d.status.desired_replicas;
    // A long-running controller hands each decision's buffers back once it has written it.
    d.recycle();
    desired
}

/// The decision benchmark's scenario as a case: 100 pods, 3 metrics, behavior on.
pub const SCENARIO: &str = r#"
name: bench-100-pods-3-metrics
title: "Benchmark scenario"
source: {upstream: HT/TestScaleUp}
memory:
  recommendations: [{replicas: 100, at: -15}, {replicas: 104, at: -30}, {replicas: 98, at: -60}]
  scaleUpEvents: [{change: 4, at: -20}, {change: 2, at: -40}]
  scaleDownEvents: [{change: 1, at: -50}]
hpa:
  apiVersion: autoscaling/v2
  kind: HorizontalPodAutoscaler
  metadata: {name: web, namespace: default}
  spec:
    scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
    minReplicas: 1
    maxReplicas: 500
    metrics:
      - {type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}
      - {type: Resource, resource: {name: memory, target: {type: AverageValue, averageValue: 512Mi}}}
      - {type: Pods, pods: {metric: {name: qps}, target: {type: AverageValue, averageValue: "100"}}}
    behavior:
      scaleUp:
        stabilizationWindowSeconds: 60
        policies: [{type: Pods, value: 4, periodSeconds: 60}, {type: Percent, value: 100, periodSeconds: 60}]
      scaleDown:
        stabilizationWindowSeconds: 300
        policies: [{type: Pods, value: 4, periodSeconds: 60}, {type: Percent, value: 10, periodSeconds: 60}]
workload:
  replicas: 100
  pod: {containers: [{name: app, requests: {cpu: 500m, memory: 512Mi}}]}
timeline:
  - at: 0
    loads:
      - {metric: cpu, perPod: 300m}
      - {metric: memory, perPod: 400Mi}
      - {metric: qps, perPod: "120"}
expect: {}
"#;

/// The from-objects benchmark's inputs: the scenario's case, its settings and the world's snapshot
/// at its first tick.
pub struct TickFixture {
    pub case: hpa_harness::case::Case,
    pub settings: Settings,
    pub snapshot: hpa_harness::world::Snapshot,
}

pub fn tick_fixture() -> TickFixture {
    let case = load_case_text(std::path::Path::new("<bench>"), SCENARIO).expect("scenario");
    let settings =
        resolve_settings(&case, GateSupport::PerCase, &RunOptions::default()).expect("settings");
    let mut world = World::new(&case);
    for e in &case.file.timeline {
        world.apply(e, 0);
    }
    let snapshot = world.snapshot(0);
    TickFixture {
        case,
        settings,
        snapshot,
    }
}

/// The words given on the command line (`cargo bench … -- decision upstream`), flags left out.
pub fn words() -> Vec<String> {
    std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect()
}

/// Whether the benchmark `name` is wanted: no word wants every one, else those whose names
/// contain one of the words.
pub fn wanted(words: &[String], name: &str) -> bool {
    words.is_empty() || words.iter().any(|w| name.contains(w.as_str()))
}
