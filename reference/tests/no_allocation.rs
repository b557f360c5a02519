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

#[test]
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
