//! Safety on a cluster that is not disposable. The lane adds a simulated node, runs pods on it
//! and needs the metrics APIs served by its own stub; on someone's real cluster that would take
//! their metrics server's place and put a fake node among theirs. So before it touches anything
//! the lane checks that the cluster is one made for it — every node but its simulated one
//! labelled [`DISPOSABLE_LABEL`] (the project's kind configs label theirs), the metrics APIs
//! served by the stub or by nobody — and refuses otherwise unless told `--disposable-cluster`.
//! With that flag it also registers the stub for the metrics APIs another service served.
//!
//! [`clean`] (`hpa-conformance cluster-clean`) removes everything the lane creates (every such
//! object carries [`MANAGED_LABEL`]), also what a killed run left behind.

use std::time::{Duration, Instant};

use hpa_metrics_stub::control::{SERVICE_NAME, SYSTEM_NAMESPACE};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};

use super::kube::{KubeResult, MANAGED_BY, MANAGED_LABEL, SIM_NODE};

/// The node label that says a cluster is the lane's to use (value `"true"`).
pub const DISPOSABLE_LABEL: &str = "hpa-conformance.dev/disposable";

/// The stub's APIServices, as `just kind-stub` applies them (one home: the manifest).
const APISERVICES: &str = include_str!("../../../kind-config/metrics-stub/apiservices.yaml");

fn apiservice_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
    ))
}

/// The stub's APIService objects (from [`APISERVICES`]).
fn stub_apiservices() -> KubeResult<Vec<DynamicObject>> {
    serde_saphyr::from_multiple(APISERVICES)
        .map_err(|e| format!("kind-config/metrics-stub/apiservices.yaml: {e}"))
}

/// Who serves an APIService: `namespace/name` of its Service, or `the API server itself`.
fn served_by(api: &DynamicObject) -> String {
    let svc = &api.data["spec"]["service"];
    match (svc["namespace"].as_str(), svc["name"].as_str()) {
        (Some(ns), Some(name)) => format!("{ns}/{name}"),
        _ => "the API server itself".into(),
    }
}

/// The stub's Service, `namespace/name`.
fn stub_service() -> String {
    format!("{SYSTEM_NAMESPACE}/{SERVICE_NAME}")
}

/// Checks the cluster is the lane's to use; with `disposable`, registers the stub for the metrics
/// APIs another service served. Returns what it did (for stderr); `Err` says why it refuses.
pub async fn check(client: &Client, disposable: bool) -> KubeResult<Vec<String>> {
    let mut foreign = Vec::new();
    let nodes: Api<Node> = Api::all(client.clone());
    for node in nodes
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("listing the nodes: {e}"))?
    {
        let name = node.metadata.name.clone().unwrap_or_default();
        let labelled = node
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(DISPOSABLE_LABEL))
            .is_some_and(|v| v == "true");
        if name != SIM_NODE && !labelled {
            foreign.push(name);
        }
    }
    let apis: Api<DynamicObject> = Api::all_with(client.clone(), &apiservice_resource());
    let mut taken = Vec::new();
    let wanted = stub_apiservices()?;
    for want in &wanted {
        let name = want.metadata.name.clone().unwrap_or_default();
        if let Some(have) = apis
            .get_opt(&name)
            .await
            .map_err(|e| format!("reading APIService {name}: {e}"))?
        {
            let by = served_by(&have);
            if by != stub_service() {
                taken.push(format!("{name} from {by}"));
            }
        }
    }
    if !disposable && (!foreign.is_empty() || !taken.is_empty()) {
        let mut why = Vec::new();
        if !taken.is_empty() {
            why.push(format!(
                "it serves the metrics APIs from another service ({}), which the lane's metrics stub would replace",
                taken.join(", ")
            ));
        }
        if !foreign.is_empty() {
            let shown: Vec<&str> = foreign.iter().take(3).map(String::as_str).collect();
            why.push(format!(
                "its nodes are not the lane's ({}{} without the label {DISPOSABLE_LABEL}=true), and the lane adds a simulated node and runs pods on it",
                shown.join(", "),
                if foreign.len() > 3 {
                    format!(" and {} more", foreign.len() - 3)
                } else {
                    String::new()
                }
            ));
        }
        return Err(format!(
            "refusing to touch this cluster: {}. Run on a cluster made for the lane (kind-config/*.yaml label their nodes), or pass --disposable-cluster if this one may be disrupted",
            why.join("; and ")
        ));
    }
    let mut said = Vec::new();
    if !taken.is_empty() {
        for mut want in wanted {
            let name = want.metadata.name.clone().unwrap_or_default();
            want.metadata.resource_version = None;
            want.metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert(MANAGED_LABEL.into(), MANAGED_BY.into());
            apis.patch(
                &name,
                &PatchParams::apply("hpa-conformance").force(),
                &Patch::Apply(&want),
            )
            .await
            .map_err(|e| format!("registering the stub for APIService {name}: {e}"))?;
        }
        said.push(format!(
            "--disposable-cluster: the metrics APIs were served by another service ({}); now by the lane's stub {} (`hpa-conformance cluster-clean` does not give them back)",
            taken.join(", "),
            stub_service()
        ));
    }
    Ok(said)
}

/// What [`clean`] removed.
#[derive(Debug, Default)]
pub struct Cleaned {
    /// Namespaces of runs (with their pods, forced out: no kubelet will confirm them).
    pub namespaces: Vec<String>,
    /// Cluster-scoped objects and the simulated node's Lease.
    pub others: Vec<String>,
}

/// Removes every object the lane created, of every run (also of a killed one): the runs'
/// namespaces (their pods deleted at once, as no kubelet confirms them), the simulated node and
/// its Lease; waits up to `wait` for the namespaces to be gone. `Err` names what stayed.
pub async fn clean(client: &Client, wait: Duration) -> KubeResult<Cleaned> {
    let selector = format!("{MANAGED_LABEL}={MANAGED_BY}");
    let lp = ListParams::default().labels(&selector);
    let mut cleaned = Cleaned::default();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let list = namespaces
        .list(&lp)
        .await
        .map_err(|e| format!("listing the lane's namespaces: {e}"))?;
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::background()
    };
    for ns in list {
        let Some(name) = ns.metadata.name else {
            continue;
        };
        let pods: Api<Pod> = Api::namespaced(client.clone(), &name);
        if let Ok(list) = pods.list(&ListParams::default()).await {
            for p in list {
                if let Some(p) = p.metadata.name {
                    let _ = pods.delete(&p, &now).await;
                }
            }
        }
        match namespaces.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => return Err(format!("deleting namespace {name}: {e}")),
        }
        cleaned.namespaces.push(name);
    }
    let nodes: Api<Node> = Api::all(client.clone());
    for name in delete_listed(&nodes, &lp, "nodes").await? {
        cleaned.others.push(format!("node/{name}"));
    }
    let webhooks: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    for name in delete_listed(&webhooks, &lp, "validatingwebhookconfigurations").await? {
        cleaned
            .others
            .push(format!("validatingwebhookconfiguration/{name}"));
    }
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    for name in delete_listed(&leases, &lp, "leases").await? {
        cleaned.others.push(format!("lease/kube-node-lease/{name}"));
    }
    let until = Instant::now() + wait;
    loop {
        let left: Vec<String> = namespaces
            .list(&lp)
            .await
            .map_err(|e| format!("listing the lane's namespaces: {e}"))?
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect();
        if left.is_empty() {
            return Ok(cleaned);
        }
        if Instant::now() >= until {
            return Err(format!(
                "after {:.0} s these namespaces are still terminating: {}",
                wait.as_secs_f64(),
                left.join(", ")
            ));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Deletes every object `lp` lists of `api` (best effort each); their names.
async fn delete_listed<K>(api: &Api<K>, lp: &ListParams, what: &str) -> KubeResult<Vec<String>>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut names = Vec::new();
    for obj in api
        .list(lp)
        .await
        .map_err(|e| format!("listing the lane's {what}: {e}"))?
    {
        if let Some(name) = obj.meta().name.clone() {
            let _ = api.delete(&name, &DeleteParams::default()).await;
            names.push(name);
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stubs_apiservices_are_read_from_its_manifest() {
        let apis = stub_apiservices().unwrap();
        let names: Vec<String> = apis
            .iter()
            .filter_map(|a| a.metadata.name.clone())
            .collect();
        assert_eq!(
            names,
            [
                "v1beta1.metrics.k8s.io",
                "v1beta2.custom.metrics.k8s.io",
                "v1beta1.custom.metrics.k8s.io",
                "v1beta1.external.metrics.k8s.io"
            ]
        );
        for a in &apis {
            assert_eq!(served_by(a), stub_service());
        }
    }
}
