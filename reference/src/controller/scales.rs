//! Where a reconcile reads its target's scale from. Upstream GETs the scale subresource on every
//! reconcile, and so does the reference by default. With `--deployment-scale-cache` (not
//! kube-controller-manager's) the scale of an `apps/v1` Deployment comes from a watch of
//! Deployments instead: the API server's scale of a Deployment is a projection of the object
//! (`spec.replicas`, `status.replicas`, the selector written as [`crate::selector::format`], the
//! object's name, namespace, uid, resourceVersion and creation time), so the watch delivers it
//! without a request per reconcile — at 5,000 HPAs that is half of the controller's requests.
//!
//! A reconcile whose cached read would change the scale is done again from a fresh GET
//! (`super::reconcile_once`), so every scale write is upstream's read, decide, write; what the
//! cache can change is only how stale a reconcile that writes nothing may be (the watch's delay,
//! milliseconds). Other kinds, and a Deployment the cache does not hold, are read with a GET.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v1::{Scale, ScaleSpec, ScaleStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::ApiResource;

use super::informer::Informer;

/// A Deployment's scale subresource as the API server computes it (always `Some`: the shape of
/// [`Informer::apply`]'s projection).
pub fn scale_of(d: &Deployment) -> Option<Scale> {
    let spec = &d.spec;
    let m = &d.metadata;
    Some(Scale {
        metadata: ObjectMeta {
            name: m.name.clone(),
            namespace: m.namespace.clone(),
            uid: m.uid.clone(),
            resource_version: m.resource_version.clone(),
            creation_timestamp: m.creation_timestamp.clone(),
            ..ObjectMeta::default()
        },
        spec: Some(ScaleSpec {
            replicas: spec.replicas,
        }),
        status: Some(ScaleStatus {
            replicas: d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0),
            selector: Some(crate::selector::format(Some(&spec.selector))),
        }),
    })
}

/// Where the scale comes from.
#[derive(Debug, Clone, Default)]
pub enum ScaleSource {
    /// A GET of the scale subresource per reconcile (upstream).
    #[default]
    Get,
    /// Deployments' scales from the Deployment watch; a GET for anything else.
    DeploymentCache(Informer<Scale>),
}

impl ScaleSource {
    /// The cached scale of `resource` `ns/name`, when it is a Deployment the cache holds (shared,
    /// not copied).
    pub fn cached(&self, resource: &ApiResource, ns: &str, name: &str) -> Option<Arc<Scale>> {
        match self {
            ScaleSource::DeploymentCache(cache)
                if resource.group == "apps"
                    && resource.version == "v1"
                    && resource.kind == "Deployment" =>
            {
                cache.get(ns, name)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::watcher::Event;
    use serde_json::json;

    fn deployment(replicas: i32, rv: &str) -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": "app", "namespace": "ns", "uid": "u-1", "resourceVersion": rv,
                         "creationTimestamp": "2026-12-05T10:00:00Z", "labels": {"x": "y"},
                         "annotations": {"a": "b"}, "generation": 4},
            "spec": {"replicas": replicas,
                     "selector": {"matchLabels": {"tier": "web", "app": "shop"},
                                  "matchExpressions": [{"key": "env", "operator": "In",
                                                        "values": ["prod", "canary"]}]},
                     "template": {"metadata": {"labels": {"app": "shop", "tier": "web", "env": "prod"}}}},
            "status": {"replicas": 5, "readyReplicas": 4}
        }))
        .expect("deployment")
    }

    /// The shape `kubectl get --raw …/deployments/app/scale` answered for this Deployment, created
    /// on kind v1.37.2 (its uid, resourceVersion and creation time put in here).
    #[test]
    fn a_deployments_scale_is_what_the_api_server_answers() {
        let scale = scale_of(&deployment(3, "812")).expect("scale");
        assert_eq!(
            serde_json::to_value(&scale).expect("json"),
            json!({
                "apiVersion": "autoscaling/v1", "kind": "Scale",
                "metadata": {"name": "app", "namespace": "ns", "uid": "u-1", "resourceVersion": "812",
                             "creationTimestamp": "2026-12-05T10:00:00Z"},
                "spec": {"replicas": 3},
                "status": {"replicas": 5, "selector": "app=shop,env in (canary,prod),tier=web"}
            })
        );
    }

    #[test]
    fn only_a_deployment_the_cache_holds_is_read_from_it() {
        let cache = Informer::default();
        let mut staging = None;
        cache.apply(Event::Init, &mut staging, scale_of);
        cache.apply(Event::InitApply(deployment(3, "1")), &mut staging, scale_of);
        cache.apply(Event::InitDone, &mut staging, scale_of);
        let source = ScaleSource::DeploymentCache(cache.clone());
        let deployments = ApiResource::erase::<Deployment>(&());
        let replicas = |s: Option<Arc<Scale>>| s.and_then(|s| s.spec.as_ref()?.replicas);
        assert_eq!(replicas(source.cached(&deployments, "ns", "app")), Some(3));
        // A change arrives by the watch; another name, namespace or kind is not the cache's.
        cache.apply(Event::Apply(deployment(7, "2")), &mut staging, scale_of);
        assert_eq!(replicas(source.cached(&deployments, "ns", "app")), Some(7));
        assert_eq!(source.cached(&deployments, "ns", "other"), None);
        assert_eq!(source.cached(&deployments, "other", "app"), None);
        let sets = ApiResource::erase::<k8s_openapi::api::apps::v1::StatefulSet>(&());
        assert_eq!(source.cached(&sets, "ns", "app"), None);
        assert_eq!(ScaleSource::Get.cached(&deployments, "ns", "app"), None);
        // A deleted Deployment is read with a GET again (which answers NotFound).
        cache.apply(Event::Delete(deployment(7, "3")), &mut staging, scale_of);
        assert_eq!(source.cached(&deployments, "ns", "app"), None);
        assert!(cache.is_empty());
    }
}
