//! A Deployment's rolling update on a cluster (a timeline's `rollout`). The lane patches the real
//! Deployment — a new template revision, the rollout's strategy and `minReadySeconds` (divided by
//! the time scale) — and the cluster's own Deployment and ReplicaSet controllers carry the update
//! out with a real new ReplicaSet, reacting to the pod statuses the lane writes. The world carries
//! out the same update beside it (`World::advance`), and the lane pairs the two sets of pods to
//! write the world's statuses on the real ones: live with live, terminating with terminating, each
//! revision with its own first; a real pod the pairing finds no world pod for while it terminates
//! is removed (no kubelet confirms a deletion on the simulated node).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use serde_json::{Value, json};

use crate::case::model::Rollout;

/// The annotation on the Deployment's pod template that makes each rollout a new revision, even
/// one that changes nothing else (`rollout: {}`).
pub const REVISION_ANNOTATION: &str = "hpa-conformance.dev/revision";

/// The annotation a Deployment's controller numbers its ReplicaSets by (1 for the first
/// template, one more for each rollout).
const REPLICA_SET_REVISION: &str = "deployment.kubernetes.io/revision";

/// The strategic-merge patch that starts `r` on the real Deployment: the world's template
/// `revision` (after the rollout began), its strategy as the world runs it (the Deployment's own
/// defaults where the case sets none), `minReadySeconds` divided by the time `scale` (the plan
/// checked it divides), and the new revision's requests by container (`template`: the world's
/// pod spec, which says whether a name is a container or a sidecar).
pub fn deployment_patch(
    r: &Rollout,
    revision: u32,
    template: &PodSpec,
    scale: u32,
) -> Result<Value, String> {
    let percent = |v: &Option<crate::case::model::IntOrPercent>| -> Result<Value, String> {
        v.as_ref().map_or(Ok(json!("25%")), |v| {
            serde_json::to_value(v).map_err(|e| e.to_string())
        })
    };
    let mut containers = Vec::new();
    let mut init = Vec::new();
    for (name, requests) in r.requests.iter().flatten() {
        let entry = json!({"name": name, "resources": {"requests": requests}});
        if template.containers.iter().any(|c| &c.name == name) {
            containers.push(entry);
        } else if template
            .init_containers
            .iter()
            .flatten()
            .any(|c| &c.name == name)
        {
            init.push(entry);
        } else {
            return Err(format!(
                "the rollout changes the requests of {name:?}, which the pod template has no container of"
            ));
        }
    }
    let mut spec = serde_json::Map::new();
    if !containers.is_empty() {
        spec.insert("containers".into(), Value::Array(containers));
    }
    if !init.is_empty() {
        spec.insert("initContainers".into(), Value::Array(init));
    }
    Ok(json!({
        "spec": {
            "minReadySeconds": r.min_ready_seconds / scale.max(1),
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {
                    "maxSurge": percent(&r.max_surge)?,
                    "maxUnavailable": percent(&r.max_unavailable)?,
                },
            },
            "template": {
                "metadata": {"annotations": {REVISION_ANNOTATION: revision.to_string()}},
                "spec": spec,
            },
        }
    }))
}

/// The revisions of a Deployment's ReplicaSets by name, counted as the world counts its template
/// revisions (0 for the first template).
pub fn replica_set_revisions<'a>(
    sets: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> BTreeMap<String, u32> {
    sets.into_iter()
        .map(|(name, annotation)| {
            let revision = annotation
                .and_then(|a| a.parse::<u32>().ok())
                .unwrap_or(1)
                .saturating_sub(1);
            (name.to_string(), revision)
        })
        .collect()
}

/// The annotation [`replica_set_revisions`] reads.
pub fn revision_annotation_of(annotations: Option<&BTreeMap<String, String>>) -> Option<&str> {
    annotations
        .and_then(|a| a.get(REPLICA_SET_REVISION))
        .map(String::as_str)
}

/// A real pod's place for the pairing: terminating or not, and the revision of the ReplicaSet
/// that owns it (`revisions`: [`replica_set_revisions`]; 0 when it has none).
pub fn slot_of(pod: &Pod, revisions: &BTreeMap<String, u32>) -> Slot {
    let revision = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true) && o.kind == "ReplicaSet")
        .and_then(|o| revisions.get(&o.name).copied())
        .unwrap_or(0);
    Slot {
        terminating: pod.metadata.deletion_timestamp.is_some(),
        revision,
    }
}

/// The world's pods as the pairing sees them (`revisions`: `World::pod_revisions`, in the same
/// order).
pub fn world_slots(pods: &[Pod], revisions: &[u32]) -> Vec<Slot> {
    pods.iter()
        .zip(revisions)
        .map(|(p, revision)| Slot {
            terminating: p.metadata.deletion_timestamp.is_some(),
            revision: *revision,
        })
        .collect()
}

/// How many live pods of each revision `slots` has.
pub fn live_by_revision(slots: &[Slot]) -> BTreeMap<u32, usize> {
    let mut n = BTreeMap::new();
    for s in slots.iter().filter(|s| !s.terminating) {
        *n.entry(s.revision).or_insert(0) += 1;
    }
    n
}

/// A pod as the pairing sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Being deleted (listed with its `deletionTimestamp`).
    pub terminating: bool,
    /// Its template revision.
    pub revision: u32,
}

/// The world's pods paired with the real ones, by index into each list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pairing {
    /// (world pod, real pod).
    pub pairs: Vec<(usize, usize)>,
    /// Real pods terminating beyond those the world lists: to be removed.
    pub surplus: Vec<usize>,
}

/// Pairs the world's pods with the real ones (each list oldest first): live with live and
/// terminating with terminating; within each, a revision's pods with the same revision's in
/// order, then the rest in order (the real controllers may have spread a scale over the
/// revisions otherwise than the world, and the lane resizes such a pod to the world's requests).
/// A pod of either side without a partner stays unpaired: a live one for the moment it takes
/// the other side to catch up, a real terminating one as [`Pairing::surplus`].
pub fn pair(world: &[Slot], real: &[Slot]) -> Pairing {
    let mut out = Pairing::default();
    for terminating in [false, true] {
        let of = |list: &[Slot]| -> Vec<usize> {
            (0..list.len())
                .filter(|i| list[*i].terminating == terminating)
                .collect()
        };
        let (mut w, mut r) = (of(world), of(real));
        let mut revisions: Vec<u32> = w.iter().map(|i| world[*i].revision).collect();
        revisions.sort_unstable();
        revisions.dedup();
        for rev in revisions {
            let ws: Vec<usize> = w
                .iter()
                .copied()
                .filter(|i| world[*i].revision == rev)
                .collect();
            let rs: Vec<usize> = r
                .iter()
                .copied()
                .filter(|i| real[*i].revision == rev)
                .collect();
            for (a, b) in ws.iter().zip(&rs) {
                out.pairs.push((*a, *b));
            }
            let n = ws.len().min(rs.len());
            w.retain(|i| !ws[..n].contains(i));
            r.retain(|i| !rs[..n].contains(i));
        }
        let n = w.len().min(r.len());
        out.pairs.extend(w.iter().copied().zip(r.iter().copied()));
        if terminating {
            out.surplus.extend(r[n..].iter().copied());
        }
    }
    out.pairs.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::model::IntOrPercent;
    use k8s_openapi::api::core::v1::Container;

    fn slot(terminating: bool, revision: u32) -> Slot {
        Slot {
            terminating,
            revision,
        }
    }

    #[test]
    fn pods_pair_by_deletion_then_revision_and_surplus_terminating_ones_go() {
        // The world: 3 old live, 2 new live, 1 old terminating. The cluster: its controllers
        // made the new pods first and removed two old ones.
        let world = [
            slot(false, 0),
            slot(false, 0),
            slot(true, 0),
            slot(false, 0),
            slot(false, 1),
            slot(false, 1),
        ];
        let real = [
            slot(true, 0),
            slot(false, 0),
            slot(false, 0),
            slot(true, 0),
            slot(false, 1),
            slot(false, 1),
            slot(false, 0),
        ];
        let p = pair(&world, &real);
        assert_eq!(
            p.pairs,
            vec![(0, 1), (1, 2), (2, 0), (3, 6), (4, 4), (5, 5)]
        );
        assert_eq!(p.surplus, vec![3]);
    }

    #[test]
    fn a_revision_short_on_one_side_pairs_across_revisions() {
        // The world put a scale-up's pod in the new revision, the cluster in the old one.
        let world = [slot(false, 0), slot(false, 1), slot(false, 1)];
        let real = [slot(false, 0), slot(false, 0), slot(false, 1)];
        let p = pair(&world, &real);
        assert_eq!(p.pairs, vec![(0, 0), (1, 2), (2, 1)]);
        assert!(p.surplus.is_empty());
        // One side behind: the unpaired pod waits.
        let p = pair(&world, &real[..2]);
        assert_eq!(p.pairs, vec![(0, 0), (1, 1)]);
    }

    #[test]
    fn the_patch_sets_the_strategy_the_revision_and_each_containers_requests_in_its_list() {
        let template = PodSpec {
            containers: vec![Container {
                name: "app".into(),
                ..Container::default()
            }],
            init_containers: Some(vec![Container {
                name: "proxy".into(),
                ..Container::default()
            }]),
            ..PodSpec::default()
        };
        let r = Rollout {
            max_surge: Some(IntOrPercent::Int(0)),
            max_unavailable: Some(IntOrPercent::Int(1)),
            min_ready_seconds: 20,
            termination_seconds: None,
            requests: Some(BTreeMap::from([
                (
                    "app".to_string(),
                    BTreeMap::from([("memory".to_string(), "512Mi".to_string())]),
                ),
                (
                    "proxy".to_string(),
                    BTreeMap::from([("cpu".to_string(), "50m".to_string())]),
                ),
            ])),
        };
        let p = deployment_patch(&r, 1, &template, 5).unwrap();
        assert_eq!(p["spec"]["minReadySeconds"], json!(4));
        assert_eq!(
            p["spec"]["strategy"]["rollingUpdate"],
            json!({"maxSurge": 0, "maxUnavailable": 1})
        );
        assert_eq!(
            p["spec"]["template"]["metadata"]["annotations"][REVISION_ANNOTATION],
            json!("1")
        );
        assert_eq!(
            p["spec"]["template"]["spec"]["containers"],
            json!([{"name": "app", "resources": {"requests": {"memory": "512Mi"}}}])
        );
        assert_eq!(
            p["spec"]["template"]["spec"]["initContainers"],
            json!([{"name": "proxy", "resources": {"requests": {"cpu": "50m"}}}])
        );
        // A rollout that changes nothing still makes a revision, with the Deployment's defaults.
        let p = deployment_patch(&Rollout::default(), 2, &template, 1).unwrap();
        assert_eq!(
            p["spec"]["strategy"]["rollingUpdate"],
            json!({"maxSurge": "25%", "maxUnavailable": "25%"})
        );
        assert_eq!(p["spec"]["template"]["spec"], json!({}));
    }

    #[test]
    fn live_pods_count_by_revision_leaving_terminating_ones_out() {
        let n = live_by_revision(&[
            slot(false, 0),
            slot(true, 0),
            slot(false, 1),
            slot(false, 1),
        ]);
        assert_eq!(n, BTreeMap::from([(0, 1), (1, 2)]));
    }

    #[test]
    fn replica_sets_count_revisions_from_zero() {
        let r = replica_set_revisions([("web-a", Some("1")), ("web-b", Some("2")), ("x", None)]);
        assert_eq!(r["web-a"], 0);
        assert_eq!(r["web-b"], 1);
        assert_eq!(r["x"], 0);
    }
}
