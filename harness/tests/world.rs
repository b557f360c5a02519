//! The simulated world's workload controller: pods that stop being active are replaced at once,
//! as a ReplicaSet does, unless the case keeps a fixed pod list (`workload.fixedPods`).

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
