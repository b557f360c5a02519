//! A steady stream of decisions whose results are recycled allocates nothing (issue 15), and
//! recycling changes no decision: the same decisions come out with and without it.

use std::time::Duration;

use hpa_reference::{
    ConditionStatus, ContainerRequests, Decision, Memory, MetricReading, MetricValues, Observation,
    PodMetric, PodPhase, PodView, ReadyCondition, Samples, ScaleView, Settings, Time, decide,
};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

/// The counts are the whole process's (`stats_alloc` counts every thread; a counting allocator
/// of its own would need `unsafe`, which the workspace forbids), so this binary has one test:
/// with two, the test runner's main thread reported the first one's result — allocating —
/// while the second was counting (seen under CI's load: 6 allocations in one warm decision).
#[test]
fn nothing_is_allocated_once_warm() {
    recycled_decisions_allocate_nothing_once_warm_and_decide_the_same();
    converting_objects_into_views_allocates_nothing_once_warm_and_converts_the_same();
}

fn hpa() -> HorizontalPodAutoscaler {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "api", "namespace": "shop"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
            "minReplicas": 2,
            "maxReplicas": 40,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "50"}}}
            ],
            "behavior": {
                "scaleDown": {"stabilizationWindowSeconds": 0, "policies": [{"type": "Pods", "value": 1, "periodSeconds": 15}]}
            }
        }
    }))
    .expect("valid HPA")
}

struct World {
    hpa: HorizontalPodAutoscaler,
    pods: Vec<PodView>,
    memory: Memory,
    t0: Time,
}

fn world() -> World {
    let t0 = Time::from_secs(50_000);
    let pods = (0..12)
        .map(|i| PodView {
            name: format!("api-{i:02}"),
            phase: PodPhase::Running,
            ready: Some(ReadyCondition {
                status: ConditionStatus::True,
                last_transition: Some(t0.minus_secs(900)),
            }),
            start_time: Some(t0.minus_secs(1000)),
            deleted: false,
            containers: vec![ContainerRequests {
                name: "app".into(),
                requests: vec![("cpu".into(), 200)],
            }],
            sidecars: vec![],
            pod_requests: None,
        })
        .collect();
    World {
        hpa: hpa(),
        pods,
        memory: Memory::default(),
        t0,
    }
}

/// Tick `i`: the load swings, so the decisions scale up, down and hold; the status written by
/// each decision is the next tick's (as the API server hands it back).
fn tick(w: &mut World, i: u64, replicas: &mut i32) -> Decision {
    let now = w.t0.plus(Duration::from_secs(15 * i));
    let cpu = [100, 300, 150, 60, 120][(i % 5) as usize];
    let samples = |value: i64| -> MetricReading {
        Ok(MetricValues::PerPod {
            samples: w
                .pods
                .iter()
                .map(|p| {
                    (
                        p.name.clone(),
                        PodMetric {
                            value,
                            timestamp: now,
                            window: Duration::from_secs(30),
                        },
                    )
                })
                .collect::<Samples>(),
            timestamp: now,
        })
    };
    let metrics = [samples(cpu), samples(40_000)];
    let plan = {
        let obs = Observation {
            now,
            hpa: &w.hpa,
            scale: Ok(ScaleView {
                spec_replicas: *replicas,
                status_replicas: *replicas,
                selector: Some("app=api".into()),
            }),
            pods: &w.pods,
            metrics: &metrics,
            hpas_selecting_pods: &[],
        };
        // Building the inputs allocates; only the decision is counted.
        let region = Region::new(GLOBAL);
        let plan = decide(&obs, &Settings::default(), &mut w.memory);
        let d = plan.finish(Ok(()), &mut w.memory);
        let stats = region.change();
        COUNT.with(|c| c.set(c.get() + stats.allocations + stats.reallocations));
        d
    };
    if let Some(r) = plan.scaled_to {
        *replicas = r;
    }
    plan
}

thread_local! {
    static COUNT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn run(recycle: bool, ticks: u64) -> (Vec<String>, Vec<usize>) {
    let mut w = world();
    let mut replicas = 12;
    let mut seen = Vec::new();
    let mut allocations = Vec::new();
    for i in 0..ticks {
        COUNT.with(|c| c.set(0));
        let d = tick(&mut w, i, &mut replicas);
        allocations.push(COUNT.with(|c| c.get()));
        seen.push(format!("{:?} {:?} {:?}", d.status, d.events, d.explanation));
        // The status the decision wrote is what the next tick reads.
        let status = d.status.clone();
        if recycle {
            d.recycle();
        }
        w.hpa.status = Some(status);
    }
    (seen, allocations)
}

fn recycled_decisions_allocate_nothing_once_warm_and_decide_the_same() {
    let ticks = 60;
    let (plain, _) = run(false, ticks);
    let (recycled, allocations) = run(true, ticks);
    assert_eq!(plain, recycled, "recycling changed a decision");
    let scaled: std::collections::BTreeSet<_> = plain
        .iter()
        .filter_map(|s| s.find("New size: ").map(|at| &s[at..at + 13]))
        .collect();
    assert!(scaled.len() > 2, "the load swings the count: {scaled:?}");
    let warm = &allocations[10..];
    assert!(
        warm.iter().all(|&n| n == 0),
        "allocations per decision after warm-up: {warm:?}"
    );
}

/// The objects of a reconcile: pods and the metrics APIs' answers (issue 36).
fn objects(
    n: usize,
    tick: i64,
) -> (
    Vec<k8s_openapi::api::core::v1::Pod>,
    hpa_reference::metrics_api::MetricsApis,
) {
    let pods = (0..n)
        .map(|i| {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": format!("api-{i:02}"), "namespace": "shop"},
                "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "200m", "memory": "256Mi"}}}]},
                "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z",
                    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:10Z"}]}
            }))
            .expect("a pod")
        })
        .collect();
    // Reversed, so the samples are sorted on the way in.
    let apis = serde_json::from_value(serde_json::json!({
        "resource": {"items": (0..n).rev().map(|i| serde_json::json!({
            "metadata": {"name": format!("api-{i:02}"), "namespace": "shop"},
            "timestamp": "2026-01-01T00:10:00Z",
            "window": "30s",
            "containers": [{"name": "app", "usage": {"cpu": format!("{}m", 100 + tick), "memory": "100Mi"}}]
        })).collect::<Vec<_>>()},
        "pods": {"rps": {"items": (0..n).map(|i| serde_json::json!({
            "pod": format!("api-{i:02}"), "value": format!("{}", 40 + tick), "timestamp": "2026-01-01T00:10:00Z"
        })).collect::<Vec<_>>()}}
    }))
    .expect("metrics answers");
    (pods, apis)
}

fn converting_objects_into_views_allocates_nothing_once_warm_and_converts_the_same() {
    let hpa = hpa();
    let metrics = hpa.spec.metrics.as_deref().unwrap_or_default();
    let changes = hpa_reference::KubernetesVersion::NEWEST.changes();
    let mut allocations = Vec::new();
    for tick in 0..20 {
        // A reconcile of fewer pods between two of more takes the same buffers.
        let n = if tick % 3 == 1 { 5 } else { 12 };
        let (pods, apis) = objects(n, tick);
        let region = Region::new(GLOBAL);
        let views = hpa_reference::view::pod_views(&pods);
        let readings = hpa_reference::metrics_api::readings(metrics, &apis, changes);
        let stats = region.change();
        allocations.push(stats.allocations + stats.reallocations);
        let fresh: Vec<PodView> = pods.iter().map(PodView::from_pod).collect();
        assert_eq!(views, fresh);
        let Ok(MetricValues::PerPod { samples, .. }) = &readings[0] else {
            panic!("cpu samples expected: {readings:?}");
        };
        assert_eq!(samples.len(), n);
        assert_eq!(samples.keys().next(), Some("api-00"));
        assert_eq!(samples["api-00"].value, 100 + tick);
        let Ok(MetricValues::PerPod { samples, .. }) = &readings[1] else {
            panic!("rps samples expected: {readings:?}");
        };
        assert_eq!(samples["api-01"].value, (40 + tick) * 1000);
        hpa_reference::recycle::give_views(views);
        hpa_reference::recycle::give_readings(readings);
    }
    let warm = &allocations[3..];
    assert!(
        warm.iter().all(|&n| n == 0),
        "allocations per conversion after warm-up: {allocations:?}"
    );
}
