//! Benchmarks (figures printed, nothing asserted): the wall time of the whole corpus on the
//! in-process target, and the time of one decision for an HPA with 100 pods and 3 metrics, behavior
//! on, with a full recommendation and scale-event history.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hpa_harness::cli::load_all;
use hpa_harness::runner::{RunOptions, run_case};
use hpa_harness::target::CoreTarget;
use hpa_reference::{
    ConditionStatus, ContainerRequests, Memory, MetricValues, Observation, PodMetric, PodPhase,
    PodView, ReadyCondition, Recommendation, ScaleEvent, ScaleView, Settings, Time, decide,
};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn bench_corpus() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../cases");
    let (cases, bad) = load_all(&[root]);
    assert!(bad.is_empty(), "the corpus must load: {bad:?}");
    let opts = RunOptions::default();
    let mut times = Vec::new();
    let mut ticks = 0;
    for _ in 0..20 {
        let start = Instant::now();
        ticks = 0;
        for c in &cases {
            ticks += run_case(c, &CoreTarget, &opts).trace.len();
        }
        times.push(start.elapsed());
    }
    let min = *times.iter().min().expect("runs");
    println!(
        "corpus: {} cases, {} ticks on the core target: median {:.2} ms, min {:.2} ms (20 runs)",
        cases.len(),
        ticks,
        median(times).as_secs_f64() * 1e3,
        min.as_secs_f64() * 1e3
    );
}

fn hpa() -> HorizontalPodAutoscaler {
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

fn bench_decision() {
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
        let s: BTreeMap<String, PodMetric> = pods
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
    let settings = Settings::default();
    let mut memory = Memory {
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
    let iterations = 20_000;
    let mut samples_ns = Vec::with_capacity(iterations);
    let mut sink = 0i64;
    for i in 0..iterations {
        // Each iteration is the next sync period, so the oldest recommendation slot is reused and
        // the history stays full (as in a long-running controller).
        let obs = Observation {
            now: t0.plus(Duration::from_secs(15 * i as u64)),
            hpa: &hpa,
            scale: Ok(ScaleView {
                spec_replicas: 100,
                status_replicas: 100,
                selector: Some("app=web".into()),
            }),
            pods: &pods,
            metrics: &metrics,
            hpas_selecting_pods: &[],
        };
        let start = Instant::now();
        let plan = decide(&obs, &settings, &mut memory);
        let d = plan.finish(Ok(()), &mut memory);
        samples_ns.push(start.elapsed());
        sink += i64::from(d.status.desired_replicas);
    }
    let min = *samples_ns.iter().min().expect("runs");
    println!(
        "decision: 100 pods x 3 metrics, behavior on, {} recommendations, {}+{} scale events: median {:.2} µs, min {:.2} µs ({iterations} runs; checksum {sink})",
        memory.recommendations.as_ref().map_or(0, Vec::len),
        memory.scale_up_events.len(),
        memory.scale_down_events.len(),
        median(samples_ns).as_secs_f64() * 1e6,
        min.as_secs_f64() * 1e6
    );
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` would run this too, so keep it quick.
    bench_corpus();
    bench_decision();
}
