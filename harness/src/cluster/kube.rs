//! The Kubernetes side of the real-time lane: the simulated node the harness owns (kwok-style: a
//! Node object and its Lease kept fresh, no kubelet), namespaces, the scale target, the pods'
//! status as the case's world says, and the HPA (the metrics stub's answers: `stub.rs`).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::autoscaling::v2::{HorizontalPodAutoscaler, HorizontalPodAutoscalerStatus};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use serde_json::{Value, json};

use super::plan::WorkloadKind;

/// The simulated node every case's pods are bound to.
pub const SIM_NODE: &str = "hpa-conformance-sim";
/// The label that marks the namespaces of a run (value: the run id).
pub const RUN_LABEL: &str = "hpa-conformance.dev/run";
/// The label on every object the lane creates (namespaces, the simulated node and its Lease,
/// each case's scale target and HPA; the pods are their controllers' and go with the
/// namespace): what `hpa-conformance cluster-clean` removes.
pub const MANAGED_LABEL: &str = "app.kubernetes.io/managed-by";
/// [`MANAGED_LABEL`]'s value.
pub const MANAGED_BY: &str = "hpa-conformance-lane";
/// The image named by the scale target's pod template (never run: no kubelet runs these pods).
pub const POD_IMAGE: &str = "hpa-conformance/app:1";

/// A Kubernetes API error, as text.
pub type KubeResult<T> = Result<T, String>;

fn err(what: &str) -> impl Fn(kube::Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

fn now_micro() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}

/// Creates the simulated node if it is missing and marks it Ready with a fresh Lease.
pub async fn ensure_sim_node(client: &Client) -> KubeResult<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    if nodes
        .get_opt(SIM_NODE)
        .await
        .map_err(err("reading the simulated node"))?
        .is_none()
    {
        let node: Node = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": SIM_NODE,
                "labels": {
                    "type": "hpa-conformance-sim",
                    "kubernetes.io/hostname": SIM_NODE,
                    MANAGED_LABEL: MANAGED_BY,
                },
            },
            "spec": {
                // Nothing but the cases' pods (bound by nodeName, tolerating everything) lands here.
                "taints": [{"key": "hpa-conformance.dev/simulated", "value": "true", "effect": "NoSchedule"}]
            }
        }))
        .map_err(|e| e.to_string())?;
        nodes
            .create(&PostParams::default(), &node)
            .await
            .map_err(err("creating the simulated node"))?;
    }
    // Its Lease, created here (the heartbeat then applies it): a plain create, so that the
    // permission it takes shows in an audit log as what it is.
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let lease: Lease = serde_json::from_value(lease_of(now_micro())).map_err(|e| e.to_string())?;
    match leases.create(&PostParams::default(), &lease).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(format!("creating the simulated node's lease: {e}")),
    }
    heartbeat(client).await
}

/// The simulated node's Lease, renewed at `now`.
fn lease_of(now: MicroTime) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": SIM_NODE, "namespace": "kube-node-lease", "labels": {MANAGED_LABEL: MANAGED_BY}},
        "spec": {"holderIdentity": SIM_NODE, "leaseDurationSeconds": 40, "renewTime": now}
    })
}

/// Removes the simulated node at the end of a run (left behind it would turn NotReady: nothing
/// renews its Lease any more). Pods still bound to it go with their namespaces.
pub async fn delete_sim_node(client: &Client) {
    let nodes: Api<Node> = Api::all(client.clone());
    let _ = nodes.delete(SIM_NODE, &DeleteParams::default()).await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let _ = leases.delete(SIM_NODE, &DeleteParams::default()).await;
}

/// Renews the simulated node's Lease and Ready condition (what a kubelet would do every 10 s).
pub async fn heartbeat(client: &Client) -> KubeResult<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let status = json!({"status": {
        "capacity": {"cpu": "1000", "memory": "4Ti", "pods": "10000"},
        "allocatable": {"cpu": "1000", "memory": "4Ti", "pods": "10000"},
        "conditions": [{
            "type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "simulated by hpa-conformance", "lastHeartbeatTime": now,
            "lastTransitionTime": now
        }]
    }});
    nodes
        .patch_status(SIM_NODE, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .map_err(err("updating the simulated node's status"))?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let lease = lease_of(now_micro());
    leases
        .patch(
            SIM_NODE,
            &PatchParams::apply("hpa-conformance").force(),
            &Patch::Apply(&lease),
        )
        .await
        .map_err(err("renewing the simulated node's lease"))?;
    Ok(())
}

/// Creates a namespace for a case, labelled with the run id.
pub async fn create_namespace(client: &Client, name: &str, run: &str) -> KubeResult<()> {
    create_namespace_labelled(client, name, run, &[]).await
}

/// [`create_namespace`] with `extra` labels too.
pub async fn create_namespace_labelled(
    client: &Client,
    name: &str,
    run: &str,
    extra: &[(&str, &str)],
) -> KubeResult<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut labels = json!({RUN_LABEL: run, MANAGED_LABEL: MANAGED_BY});
    for (k, v) in extra {
        labels[*k] = json!(v);
    }
    let ns: Namespace = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": labels}
    }))
    .map_err(|e| e.to_string())?;
    api.create(&PostParams::default(), &ns)
        .await
        .map_err(err("creating the case's namespace"))?;
    Ok(())
}

/// Deletes a namespace (in the background: the API server finishes it). A request the cluster
/// could not answer (no connection, 429, 5xx: an API server restarting) is tried again for up to
/// a minute, so that a run ending during an outage still removes what it made.
pub async fn delete_namespace(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut wait = std::time::Duration::from_millis(250);
    loop {
        match api.delete(name, &DeleteParams::background()).await {
            Err(e) if transient(&e) && std::time::Instant::now() < until => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(std::time::Duration::from_secs(4));
            }
            _ => return,
        }
    }
}

/// An error the cluster may not give a moment later: no answer, too many requests, a server
/// error.
pub fn transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(status) => status.code == 429 || status.code >= 500,
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => true,
        _ => false,
    }
}

/// Deletes every namespace of a run (Ctrl-C), and returns their names.
pub async fn delete_run_namespaces(client: &Client, run: &str) -> Vec<String> {
    let api: Api<Namespace> = Api::all(client.clone());
    let list = api
        .list(&ListParams::default().labels(&format!("{RUN_LABEL}={run}")))
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    let mut names = Vec::new();
    for ns in list {
        if let Some(n) = ns.metadata.name {
            delete_namespace(client, &n).await;
            names.push(n);
        }
    }
    names
}

/// The API resource of a workload kind.
pub fn workload_resource(kind: WorkloadKind) -> ApiResource {
    let gvk = match kind {
        WorkloadKind::Deployment => GroupVersionKind::gvk("apps", "v1", "Deployment"),
        WorkloadKind::ReplicaSet => GroupVersionKind::gvk("apps", "v1", "ReplicaSet"),
        WorkloadKind::StatefulSet => GroupVersionKind::gvk("apps", "v1", "StatefulSet"),
        WorkloadKind::ReplicationController => {
            GroupVersionKind::gvk("", "v1", "ReplicationController")
        }
    };
    ApiResource::from_gvk(&gvk)
}

/// Creates the scale target: `replicas` pods from `spec` with `labels`, bound to the simulated
/// node, tolerating every taint (so no controller evicts them).
pub async fn create_workload(
    client: &Client,
    ns: &str,
    kind: WorkloadKind,
    name: &str,
    replicas: i32,
    labels: &BTreeMap<String, String>,
    spec: &PodSpec,
) -> KubeResult<()> {
    let mut pod_spec = serde_json::to_value(spec).map_err(|e| e.to_string())?;
    if let Some(obj) = pod_spec.as_object_mut() {
        obj.insert("nodeName".into(), json!(SIM_NODE));
        obj.insert("tolerations".into(), json!([{"operator": "Exists"}]));
        obj.insert("terminationGracePeriodSeconds".into(), json!(0));
        for list in ["containers", "initContainers"] {
            if let Some(Value::Array(cs)) = obj.get_mut(list) {
                for c in cs {
                    c["image"] = json!(POD_IMAGE);
                    c["imagePullPolicy"] = json!("Never");
                }
            }
        }
    }
    let template = json!({"metadata": {"labels": labels}, "spec": pod_spec});
    let ar = workload_resource(kind);
    let selector = match kind {
        WorkloadKind::ReplicationController => json!(labels),
        _ => json!({"matchLabels": labels}),
    };
    let mut obj = json!({
        "apiVersion": ar.api_version, "kind": ar.kind,
        "metadata": {"name": name, "namespace": ns, "labels": {MANAGED_LABEL: MANAGED_BY}},
        "spec": {"replicas": replicas, "selector": selector, "template": template}
    });
    if kind == WorkloadKind::StatefulSet {
        // Pods created and removed together (the default, OrderedReady, waits for each pod to be
        // Ready before the next); `serviceName` is required, the Service itself is not.
        obj["spec"]["podManagementPolicy"] = json!("Parallel");
        obj["spec"]["serviceName"] = json!(name);
    }
    let obj: DynamicObject = serde_json::from_value(obj).map_err(|e| e.to_string())?;
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    api.create(&PostParams::default(), &obj)
        .await
        .map_err(err("creating the scale target"))?;
    Ok(())
}

/// The scale target's scale subresource: (`spec.replicas`, `status.replicas` — what its
/// controller has counted).
pub async fn get_scale(
    client: &Client,
    ns: &str,
    kind: WorkloadKind,
    name: &str,
) -> KubeResult<(i32, i32)> {
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), ns, &workload_resource(kind));
    let scale = api
        .get_scale(name)
        .await
        .map_err(err("reading the scale"))?;
    Ok((
        scale.spec.and_then(|s| s.replicas).unwrap_or(0),
        scale.status.map_or(0, |s| s.replicas),
    ))
}

/// Sets the scale target's `spec.replicas` (a manual scale, as `kubectl scale` does).
pub async fn set_replicas(
    client: &Client,
    ns: &str,
    kind: WorkloadKind,
    name: &str,
    replicas: i32,
) -> KubeResult<()> {
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), ns, &workload_resource(kind));
    // The lane's own field manager: the stub's scale webhook lets these through (`webhook`).
    let params = PatchParams {
        field_manager: Some(hpa_metrics_stub::control::LANE_FIELD_MANAGER.to_string()),
        ..PatchParams::default()
    };
    api.patch_scale(
        name,
        &params,
        &Patch::Merge(&json!({"spec": {"replicas": replicas}})),
    )
    .await
    .map_err(err("scaling the target"))?;
    Ok(())
}

/// Patches the Deployment `name` (a strategic merge; a rollout's, `rollout`).
pub async fn patch_deployment(
    client: &Client,
    ns: &str,
    name: &str,
    patch: &Value,
) -> KubeResult<()> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), ns);
    api.patch(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .map_err(err("rolling the Deployment out"))?;
    Ok(())
}

/// The ReplicaSets selected by `selector`, by name, with their revision as the world counts
/// them (`rollout::replica_set_revisions`).
pub async fn replica_set_revisions(
    client: &Client,
    ns: &str,
    selector: &str,
) -> KubeResult<BTreeMap<String, u32>> {
    let api: Api<ReplicaSet> = Api::namespaced(client.clone(), ns);
    let list = api
        .list(&ListParams::default().labels(selector))
        .await
        .map_err(err("listing the ReplicaSets"))?;
    Ok(super::rollout::replica_set_revisions(
        list.items.iter().map(|rs| {
            (
                rs.metadata.name.as_deref().unwrap_or_default(),
                super::rollout::revision_annotation_of(rs.metadata.annotations.as_ref()),
            )
        }),
    ))
}

/// The HPA as the lane creates it: in `ns`, labelled as the lane's, without a status.
fn managed_hpa(hpa: &HorizontalPodAutoscaler, ns: &str) -> HorizontalPodAutoscaler {
    let mut hpa = hpa.clone();
    hpa.metadata.namespace = Some(ns.to_string());
    hpa.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(MANAGED_LABEL.into(), MANAGED_BY.into());
    hpa.status = None;
    hpa
}

/// Creates the HPA.
pub async fn create_hpa(
    client: &Client,
    ns: &str,
    hpa: &HorizontalPodAutoscaler,
) -> KubeResult<()> {
    let api: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), ns);
    api.create(&PostParams::default(), &managed_hpa(hpa, ns))
        .await
        .map_err(err("creating the HPA"))?;
    Ok(())
}

/// Creates the HPA expecting the API server may refuse it: `Ok(None)` when it was created,
/// `Ok(Some(message))` when it was rejected with that message — as invalid (422), or as a body it
/// cannot decode (400, e.g. a quantity that is no quantity: decoding fails before validation).
pub async fn try_create_hpa(
    client: &Client,
    ns: &str,
    hpa: &HorizontalPodAutoscaler,
) -> KubeResult<Option<String>> {
    let api: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), ns);
    match api
        .create(&PostParams::default(), &managed_hpa(hpa, ns))
        .await
    {
        Ok(_) => Ok(None),
        Err(kube::Error::Api(status)) if status.code == 422 || status.code == 400 => {
            Ok(Some(status.message.clone()))
        }
        Err(e) => Err(format!("creating the HPA: {e}")),
    }
}

/// Deletes an HPA (best effort).
pub async fn delete_hpa(client: &Client, ns: &str, name: &str) {
    let api: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), ns);
    let _ = api.delete(name, &DeleteParams::default()).await;
}

/// Applies a JSON merge patch to the HPA.
pub async fn patch_hpa(client: &Client, ns: &str, name: &str, patch: &Value) -> KubeResult<()> {
    let api: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), ns);
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map_err(err("patching the HPA"))?;
    Ok(())
}

/// Replaces the HPA's status (the status subresource), as a controller writes it: a field the
/// given status leaves out is removed (a merge patch would keep what the controller wrote). Gives
/// the HPA's resourceVersion after the write.
pub async fn write_hpa_status(
    client: &Client,
    ns: &str,
    name: &str,
    status: &HorizontalPodAutoscalerStatus,
) -> KubeResult<String> {
    let api: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), ns);
    let written = api
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": replacing(status)})),
        )
        .await
        .map_err(err("writing the HPA's status"))?;
    Ok(written.metadata.resource_version.unwrap_or_default())
}

/// A status as a merge patch that replaces the whole status: its optional fields left out are
/// `null` (removed).
fn replacing(status: &HorizontalPodAutoscalerStatus) -> Value {
    let mut v = serde_json::to_value(status).unwrap_or_else(|_| json!({}));
    if let Some(o) = v.as_object_mut() {
        for key in [
            "conditions",
            "currentMetrics",
            "currentReplicas",
            "lastScaleTime",
            "observedGeneration",
        ] {
            o.entry(key).or_insert(Value::Null);
        }
    }
    v
}

/// Writes a pod's status (phase, start time, Ready condition).
pub async fn patch_pod_status(
    client: &Client,
    ns: &str,
    name: &str,
    status: &Value,
) -> KubeResult<()> {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(&json!({"status": status})),
    )
    .await
    .map_err(err("writing a pod's status"))?;
    Ok(())
}

/// Deletes a pod the way a user does, with a day's grace: it stays listed with its
/// `deletionTimestamp` (no kubelet on the simulated node confirms it), as a pod being deleted
/// does when a controller lists it, while its workload's controller replaces it.
pub async fn delete_pod_gracefully(client: &Client, ns: &str, name: &str) -> KubeResult<()> {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let dp = DeleteParams {
        grace_period_seconds: Some(86_400),
        ..DeleteParams::default()
    };
    api.delete(name, &dp).await.map_err(err("deleting a pod"))?;
    Ok(())
}

/// Resizes a pod's containers in place (the `resize` subresource, Kubernetes 1.33 on):
/// `containers` is a strategic-merge list of `{name, resources: {requests}}`. The API server
/// stores the new requests in the pod's spec, which is what an HPA reads.
pub async fn resize_pod(
    client: &Client,
    ns: &str,
    name: &str,
    containers: &Value,
) -> KubeResult<()> {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    api.patch_subresource(
        "resize",
        name,
        &PatchParams::default(),
        &Patch::Strategic(&json!({"spec": {"containers": containers}})),
    )
    .await
    .map_err(err("resizing a pod"))?;
    Ok(())
}

/// Removes a terminating pod at once (no kubelet will confirm its graceful deletion).
pub async fn force_delete_pod(client: &Client, ns: &str, name: &str) {
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let dp = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    let _ = api.delete(name, &dp).await;
}

/// kube-controller-manager's command line, when it runs as a static pod (kind, kubeadm).
pub async fn controller_manager_args(client: &Client) -> Option<Vec<String>> {
    let api: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    let pods = api
        .list(&ListParams::default().labels("component=kube-controller-manager"))
        .await
        .ok()?;
    let pod = pods.items.into_iter().next()?;
    let c = pod.spec?.containers.into_iter().next()?;
    Some(
        c.command
            .unwrap_or_default()
            .into_iter()
            .chain(c.args.unwrap_or_default())
            .collect(),
    )
}

/// The label value (`app.kubernetes.io/component`) that marks a Deployment running an HPA
/// controller in place of kube-controller-manager's (the reference's manifests set it).
pub const HPA_CONTROLLER_COMPONENT: &str = "horizontal-pod-autoscaler";

/// The Deployments that run another HPA controller (labelled `app.kubernetes.io/component=
/// horizontal-pod-autoscaler`, any namespace): `namespace/name` and the first container's command
/// line. Empty when there are none or they cannot be listed.
pub async fn replacement_controllers(client: &Client) -> Vec<(String, Vec<String>)> {
    let api: Api<k8s_openapi::api::apps::v1::Deployment> = Api::all(client.clone());
    let selector = format!("app.kubernetes.io/component={HPA_CONTROLLER_COMPONENT}");
    let Ok(list) = api.list(&ListParams::default().labels(&selector)).await else {
        return Vec::new();
    };
    list.items
        .into_iter()
        .filter_map(|d| {
            let name = format!(
                "{}/{}",
                d.metadata.namespace.unwrap_or_default(),
                d.metadata.name.unwrap_or_default()
            );
            let c = d.spec.template.spec?.containers.into_iter().next()?;
            let args = c
                .command
                .unwrap_or_default()
                .into_iter()
                .chain(c.args.unwrap_or_default())
                .collect();
            Some((name, args))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_written_whole_removes_what_it_leaves_out_and_keeps_what_it_sets() {
        let status: HorizontalPodAutoscalerStatus = serde_json::from_value(json!({
            "currentReplicas": 3, "desiredReplicas": 3,
            "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"}]
        }))
        .unwrap();
        let v = replacing(&status);
        assert_eq!(v["currentReplicas"], json!(3));
        assert_eq!(v["desiredReplicas"], json!(3));
        assert_eq!(v["conditions"][0]["reason"], json!("ReadyForNewScale"));
        for gone in ["currentMetrics", "lastScaleTime", "observedGeneration"] {
            assert_eq!(v.get(gone), Some(&Value::Null), "{gone}: {v}");
        }
    }
}
