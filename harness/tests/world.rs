//! The simulated world's workload controller: pods that stop being active are replaced at once,
//! as a ReplicaSet does, unless the case keeps a fixed pod list (`workload.fixedPods`); a
//! `rollout` is carried out as a Deployment's RollingUpdate strategy.

use std::path::PathBuf;

use hpa_harness::case::load_case_text;
use hpa_harness::world::World;

const CASE: &str = r#"name: replacement
title: a deleted and a failed pod are replaced
source: {reason: world model test}
hpa:
  apiVersion: autoscaling/v2
  kind: HorizontalPodAutoscaler
  metadata: {name: web, namespace: default}
  spec:
    scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
    minReplicas: 1
    maxReplicas: 10
    metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
workload:
  replicas: 4
  pod: {containers: [{name: app, requests: {cpu: '1'}}]}
  startup: {pendingSeconds: 30}
timeline:
- at: 15
  pods: {ordinals: [1], deleted: true}
- at: 15
  pods: {ordinals: [2], phase: Failed}
durationSeconds: 30
expect: {finalReplicas: 4}
"#;

/// The pods the target is shown at `t` after applying the timeline up to `t`: (name, deleting,
/// phase).
fn pods_at(text: &str, t: i64) -> Vec<(String, bool, String)> {
    let case = load_case_text(&PathBuf::from("replacement.yaml"), text).expect("case");
    let mut world = World::new(&case);
    for e in &case.file.timeline {
        if i64::from(e.at) <= t {
            world.apply(e, i64::from(e.at));
        }
    }
    world
        .snapshot(t)
        .pods
        .iter()
        .map(|p| {
            (
                p.metadata.name.clone().unwrap_or_default(),
                p.metadata.deletion_timestamp.is_some(),
                p.status
                    .as_ref()
                    .and_then(|s| s.phase.clone())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn a_deleted_or_failed_pod_is_replaced_at_once_by_a_new_pending_pod() {
    let pods = pods_at(CASE, 15);
    let names: Vec<&str> = pods.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "web-0000", "web-0001", "web-0002", "web-0003", "web-0004", "web-0005"
        ]
    );
    assert!(pods[1].1, "web-0001 is deleting: {pods:?}");
    assert_eq!(pods[2].2, "Failed");
    // The replacements start through the start-up model: pending for 30 s.
    assert_eq!(pods[4].2, "Pending");
    assert_eq!(pods[5].2, "Pending");
}

#[test]
fn a_fixed_pod_list_keeps_them_unreplaced() {
    let fixed = CASE.replace("workload:\n", "workload:\n  fixedPods: true\n");
    let pods = pods_at(&fixed, 15);
    let names: Vec<&str> = pods.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(names, ["web-0000", "web-0001", "web-0002", "web-0003"]);
}

/// [`CASE`]'s HPA and workload with a rollout at t=0 (`STRATEGY` stands for the rollout entry)
/// and new pods Ready 20 s after their start.
fn rollout_case(strategy: &str) -> String {
    let head = &CASE[..CASE.find("  startup:").expect("startup line")];
    format!(
        "{}  startup: {{readyAfterSeconds: 20}}\ntimeline:\n- at: 0\n  rollout: {strategy}\ndurationSeconds: 300\nexpect: {{}}\n",
        head.replace("name: replacement", "name: rollout").replace(
            "title: a deleted and a failed pod are replaced",
            "title: a rolling update of 4 pods"
        )
    )
}

/// A pod as the target sees it: (name, deleting since, CPU request).
type PodView = (String, Option<String>, String);

/// The world of [`rollout_case`] with `strategy`, run tick by tick (15 s) up to `until`, calling
/// `between` at each tick after the world has moved on.
fn rollout_until(strategy: &str, until: i64, between: impl Fn(&mut World, i64)) -> World {
    let text = rollout_case(strategy);
    let case = load_case_text(&PathBuf::from("rollout.yaml"), &text).expect("case");
    let mut world = World::new(&case);
    let mut t = 0;
    while t <= until {
        for e in case.file.timeline.iter().filter(|e| i64::from(e.at) == t) {
            world.apply(e, t);
        }
        world.advance(t);
        between(&mut world, t);
        t += 15;
    }
    world
}

fn view(world: &World, t: i64) -> Vec<PodView> {
    world
        .clone()
        .snapshot(t)
        .pods
        .iter()
        .map(|p| {
            let cpu = p.spec.as_ref().expect("spec").containers[0]
                .resources
                .as_ref()
                .and_then(|r| r.requests.as_ref())
                .and_then(|r| r.get("cpu"))
                .map(|q| q.0.clone())
                .unwrap_or_default();
            (
                p.metadata.name.clone().unwrap_or_default(),
                p.metadata
                    .deletion_timestamp
                    .as_ref()
                    .map(|d| d.0.to_string()),
                cpu,
            )
        })
        .collect()
}

fn names(pods: &[PodView]) -> Vec<&str> {
    pods.iter().map(|p| p.0.as_str()).collect()
}

fn deleting(pods: &[PodView]) -> Vec<&str> {
    pods.iter()
        .filter(|p| p.1.is_some())
        .map(|p| p.0.as_str())
        .collect()
}

fn status_replicas(world: &World, t: i64) -> i32 {
    world
        .clone()
        .snapshot(t)
        .scale
        .expect("scale")
        .status
        .expect("status")
        .replicas
}

#[test]
fn a_default_rollout_surges_one_pod_and_keeps_three_available() {
    // 25 % of 4: maxSurge ceil(1) = 1, maxUnavailable floor(1) = 1. New pods are Ready (and
    // available) 20 s after their start; a replaced pod terminates for 30 s.
    let at0 = rollout_until("{}", 0, |_, _| {});
    let pods = view(&at0, 0);
    assert_eq!(
        names(&pods),
        [
            "web-0000", "web-0001", "web-0002", "web-0003", "web-0004", "web-0005"
        ]
    );
    assert_eq!(deleting(&pods), ["web-0003"], "{pods:?}");
    assert_eq!(pods[3].1.as_deref(), Some("2000-01-01T00:00:00Z"));
    // Its deletionTimestamp stays the time it began terminating.
    assert_eq!(view(&at0, 15)[3].1.as_deref(), Some("2000-01-01T00:00:00Z"));
    // The scale counts the pods that are not terminating: 3 old + 2 new.
    assert_eq!(status_replicas(&at0, 0), 5);

    let at30 = rollout_until("{}", 30, |_, _| {});
    let pods = view(&at30, 30);
    assert_eq!(
        names(&pods),
        [
            "web-0000", "web-0001", "web-0002", "web-0004", "web-0005", "web-0006", "web-0007"
        ],
        "web-0003 is gone after its 30 s"
    );
    assert_eq!(deleting(&pods), ["web-0001", "web-0002"]);

    let done = rollout_until("{}", 90, |_, _| {});
    let pods = view(&done, 90);
    assert_eq!(
        names(&pods),
        ["web-0004", "web-0005", "web-0006", "web-0007"]
    );
    assert!(deleting(&pods).is_empty());
    assert_eq!(status_replicas(&done, 90), 4);
}

#[test]
fn min_ready_seconds_hold_old_pods_until_the_new_one_is_available() {
    let strategy = "{maxSurge: 1, maxUnavailable: 0, minReadySeconds: 30}";
    // web-0004 starts at 0, is Ready at 20 and available at 50: no old pod goes before.
    let at45 = rollout_until(strategy, 45, |_, _| {});
    assert!(deleting(&view(&at45, 45)).is_empty());
    assert_eq!(status_replicas(&at45, 45), 5);
    let at60 = rollout_until(strategy, 60, |_, _| {});
    let pods = view(&at60, 60);
    assert_eq!(deleting(&pods), ["web-0003"]);
    assert_eq!(names(&pods).last(), Some(&"web-0005"));
}

#[test]
fn new_pods_carry_the_new_requests_and_old_pods_keep_theirs() {
    let world = rollout_until("{requests: {app: {cpu: 500m}}}", 0, |_, _| {});
    let cpu: Vec<String> = view(&world, 0).into_iter().map(|p| p.2).collect();
    assert_eq!(cpu, ["1", "1", "1", "1", "500m", "500m"]);
    let (_, template) = world.pod_template();
    let request = template.containers[0]
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("cpu"))
        .map(|q| q.0.clone());
    assert_eq!(request.as_deref(), Some("500m"));
}

#[test]
fn terminating_pods_stay_listed_for_the_termination_period() {
    let strategy = "{terminationSeconds: 45}";
    let at30 = rollout_until(strategy, 30, |_, _| {});
    assert!(names(&view(&at30, 30)).contains(&"web-0003"));
    let at45 = rollout_until(strategy, 45, |_, _| {});
    assert!(!names(&view(&at45, 45)).contains(&"web-0003"));
}

#[test]
fn a_shrink_during_a_rollout_removes_old_pods_first() {
    // At 15: 3 old pods live (web-0003 terminating) and 2 new ones starting; spec 4 → 3 takes
    // two old pods (the newest of them first), not the new ones.
    let world = rollout_until("{}", 15, |w, t| {
        if t == 15 {
            w.set_replicas(3, t).expect("replicas");
        }
    });
    let pods = view(&world, 15);
    assert_eq!(
        names(&pods),
        ["web-0000", "web-0003", "web-0004", "web-0005"]
    );
    assert_eq!(deleting(&pods), ["web-0003"]);
}
