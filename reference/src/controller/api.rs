//! The controller's reads and writes: the scale subresource of any kind (resolved through
//! discovery, cached like upstream's REST mapper), pods by selector, the three metrics APIs and
//! the HPA status (events are [`super::events`]'). API errors are reported by their status
//! message, as client-go's errors read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerStatus, MetricSpec,
};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time as KubeTime;
use kube::Client;
use kube::api::{Api, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde::Deserialize;

use super::Context;
use crate::metrics_api::{
    ListAnswer, MetricsApis, ObjectAnswer, PodMetrics, PodValue, SampleValue,
};
use crate::metrics_api::{RequestFor, generic_response_message};

/// How an API error reads: the status message for API errors (like client-go), else the error.
pub fn message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

/// Resolved API resources by group/version/kind.
#[derive(Debug, Default)]
pub struct Mapper(Mutex<HashMap<String, ApiResource>>);

/// The target's scale, with what is needed to write it back.
#[derive(Debug, Clone)]
pub struct TargetScale {
    /// The scale subresource as read (shared with the Deployment cache when read from it: a
    /// reconcile copies it only to write it back).
    pub scale: Arc<Scale>,
    /// The resolved resource.
    pub resource: ApiResource,
    /// Read from the Deployment cache ([`super::scales`]), not by a GET.
    pub cached: bool,
}

/// The target's group/version/kind; an unparsable `apiVersion` is an error of the HPA's spec.
pub fn gvk_of(target: &CrossVersionObjectReference) -> Result<GroupVersionKind, String> {
    let api_version = target.api_version.clone().unwrap_or_else(|| "v1".into());
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.clone()),
    };
    if version.is_empty() || api_version.matches('/').count() > 1 {
        return Err(format!(
            "invalid API version in scale target reference: unexpected GroupVersion string: {api_version}"
        ));
    }
    Ok(GroupVersionKind::gvk(&group, &version, &target.kind))
}

async fn resolve(
    ctx: &Context,
    target: &CrossVersionObjectReference,
) -> Result<ApiResource, String> {
    let gvk = gvk_of(target)?;
    let key = format!("{}/{}/{}", gvk.group, gvk.version, gvk.kind);
    if let Some(ar) = ctx.mapper.0.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(ar);
    }
    let (ar, _caps) = kube::discovery::pinned_kind(&ctx.client, &gvk)
        .await
        .map_err(|e| {
            format!(
                "unable to determine resource for scale target reference: {}",
                message(&e)
            )
        })?;
    if let Ok(mut m) = ctx.mapper.0.lock() {
        m.insert(key, ar.clone());
    }
    Ok(ar)
}

/// The target's scale: from the Deployment cache when `cached` allows it and the cache holds the
/// target ([`super::scales`]), else a GET of the scale subresource; the error reads as upstream's.
pub async fn get_scale(
    ctx: &Context,
    ns: &str,
    target: &CrossVersionObjectReference,
    cached: bool,
) -> Result<TargetScale, String> {
    let resource = resolve(ctx, target).await?;
    if cached && let Some(scale) = ctx.scales.cached(&resource, ns, &target.name) {
        return Ok(TargetScale {
            scale,
            resource,
            cached: true,
        });
    }
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), ns, &resource);
    let scale = api.get_scale(&target.name).await.map_err(|e| message(&e))?;
    Ok(TargetScale {
        scale: Arc::new(scale),
        resource,
        cached: false,
    })
}

/// PUT the scale with the new replica count; on a conflict read it again and retry (5 attempts
/// from 1.34 on, [`crate::retry`]; before, the conflict fails the rescale).
pub async fn write_scale(
    ctx: &Context,
    ns: &str,
    target: &CrossVersionObjectReference,
    current: &TargetScale,
    replicas: i32,
) -> Result<(), String> {
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), ns, &current.resource);
    let mut scale = Scale::clone(&current.scale);
    let attempts = crate::retry::attempts(ctx.settings.version.changes(), Some("Conflict"));
    for attempt in 1..=attempts {
        if let Some(spec) = scale.spec.as_mut() {
            spec.replicas = Some(replicas);
        } else {
            scale.spec = Some(k8s_openapi::api::autoscaling::v1::ScaleSpec {
                replicas: Some(replicas),
            });
        }
        match api
            .replace_scale(&target.name, &PostParams::default(), &scale)
            .await
        {
            Ok(_) => return Ok(()),
            Err(e) if is_conflict(&e) && attempt < attempts => {
                scale = api.get_scale(&target.name).await.map_err(|e| message(&e))?;
            }
            Err(e) => return Err(message(&e)),
        }
    }
    Err("the scale kept conflicting".into())
}

#[derive(Debug, Deserialize)]
struct List<T> {
    #[serde(default = "Vec::new")]
    items: Vec<T>,
}

/// A custom.metrics.k8s.io/v1beta2 MetricValue.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetricValue {
    described_object: ObjectReference,
    timestamp: KubeTime,
    #[serde(default)]
    window_seconds: Option<i64>,
    value: Quantity,
}

/// An external.metrics.k8s.io/v1beta1 ExternalMetricValue.
#[derive(Debug, Deserialize)]
struct ExternalMetricValue {
    timestamp: KubeTime,
    value: Quantity,
}

fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The plural resource name of a kind (what upstream's REST mapper would give for common kinds).
pub fn plural(kind: &str) -> String {
    let k = kind.to_lowercase();
    if k.ends_with('s') || k.ends_with('x') || k.ends_with("ch") || k.ends_with("sh") {
        format!("{k}es")
    } else if k.ends_with('y') && !k.ends_with("ay") && !k.ends_with("ey") && !k.ends_with("oy") {
        format!("{}ies", &k[..k.len() - 1])
    } else {
        format!("{k}s")
    }
}

/// How a failed metrics request reads, as upstream's clients report it.
fn metrics_message(e: &kube::Error, req: RequestFor<'_>) -> String {
    match e {
        // kube-rs wraps a body that is not a Status in a Status with this reason.
        kube::Error::Api(s) if s.reason == "Failed to parse error data" => {
            generic_response_message(s.code, &s.message, req)
        }
        other => message(other),
    }
}

async fn get_json<T: serde::de::DeserializeOwned>(
    client: &Client,
    url: &str,
    req: RequestFor<'_>,
) -> Result<T, String> {
    let request = http::Request::get(url)
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    client
        .request::<T>(request)
        .await
        .map_err(|e| metrics_message(&e, req))
}

/// What every metrics API answers for the HPA's metrics, and how long each metric's requests
/// took (by index in `metrics`). Resource and ContainerResource metrics share one request to the
/// resource metrics API (upstream makes one per metric): each is given its duration.
pub async fn fetch_metrics(
    client: &Client,
    ns: &str,
    selector: &str,
    metrics: &[MetricSpec],
) -> (MetricsApis, Vec<Duration>) {
    let mut apis = MetricsApis::default();
    let mut took = vec![Duration::ZERO; metrics.len()];
    let sel = encode(selector);
    let is_resource = |m: &MetricSpec| m.type_ == "Resource" || m.type_ == "ContainerResource";
    if metrics.iter().any(is_resource) {
        let started = Instant::now();
        let url = format!("/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods?labelSelector={sel}");
        apis.resource = match get_json::<List<PodMetrics>>(
            client,
            &url,
            RequestFor {
                group: "metrics.k8s.io",
                resource: "pods",
                name: "",
            },
        )
        .await
        {
            Ok(l) => ListAnswer {
                items: l.items,
                error: None,
            },
            Err(e) => ListAnswer {
                items: Vec::new(),
                error: Some(e),
            },
        };
        let shared = started.elapsed();
        for (i, m) in metrics.iter().enumerate() {
            if is_resource(m) {
                took[i] = shared;
            }
        }
    }
    for (i, m) in metrics.iter().enumerate() {
        let started = Instant::now();
        match m.type_.as_str() {
            "Pods" => {
                let Some(p) = &m.pods else { continue };
                let mut url = format!(
                    "/apis/custom.metrics.k8s.io/v1beta2/namespaces/{ns}/pods/*/{}?labelSelector={sel}",
                    encode(&p.metric.name)
                );
                let ms = crate::selector::format(p.metric.selector.as_ref());
                if !ms.is_empty() {
                    url.push_str(&format!("&metricLabelSelector={}", encode(&ms)));
                }
                let answer = match get_json::<List<MetricValue>>(
                    client,
                    &url,
                    RequestFor {
                        group: "custom.metrics.k8s.io",
                        resource: "pods",
                        name: "*",
                    },
                )
                .await
                {
                    Ok(l) => ListAnswer {
                        items: l
                            .items
                            .into_iter()
                            .map(|v| PodValue {
                                pod: v.described_object.name.unwrap_or_default(),
                                value: v.value,
                                timestamp: v.timestamp,
                                window_seconds: v.window_seconds,
                            })
                            .collect(),
                        error: None,
                    },
                    Err(e) => ListAnswer {
                        items: Vec::new(),
                        error: Some(e),
                    },
                };
                apis.pods.insert(p.metric.name.clone(), answer);
            }
            "Object" => {
                let Some(o) = &m.object else { continue };
                let d = &o.described_object;
                let group = d
                    .api_version
                    .as_deref()
                    .and_then(|v| v.split_once('/'))
                    .map(|(g, _)| g)
                    .unwrap_or("");
                let resource = if group.is_empty() {
                    plural(&d.kind)
                } else {
                    format!("{}.{group}", plural(&d.kind))
                };
                let mut url = if d.kind == "Namespace" {
                    format!(
                        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/{ns}/metrics/{}",
                        encode(&o.metric.name)
                    )
                } else {
                    format!(
                        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/{ns}/{resource}/{}/{}",
                        encode(&d.name),
                        encode(&o.metric.name)
                    )
                };
                let ms = crate::selector::format(o.metric.selector.as_ref());
                if !ms.is_empty() {
                    url.push_str(&format!("?metricLabelSelector={}", encode(&ms)));
                }
                let (object_resource, object_name) = if d.kind == "Namespace" {
                    ("metrics".to_string(), o.metric.name.as_str())
                } else {
                    (resource.clone(), d.name.as_str())
                };
                let answer = match get_json::<List<MetricValue>>(
                    client,
                    &url,
                    RequestFor {
                        group: "custom.metrics.k8s.io",
                        resource: &object_resource,
                        name: object_name,
                    },
                )
                .await
                {
                    Ok(l) if l.items.len() == 1 => {
                        let v = l.items.into_iter().next().expect("one item");
                        ObjectAnswer {
                            value: Some(SampleValue {
                                value: v.value,
                                timestamp: v.timestamp,
                            }),
                            error: None,
                        }
                    }
                    Ok(l) => ObjectAnswer {
                        value: None,
                        error: Some(format!(
                            "metric {} for {} {} returned {} results when we asked for exactly one",
                            o.metric.name,
                            d.kind,
                            d.name,
                            l.items.len()
                        )),
                    },
                    Err(e) => ObjectAnswer {
                        value: None,
                        error: Some(e),
                    },
                };
                apis.object.insert(o.metric.name.clone(), answer);
            }
            "External" => {
                let Some(e) = &m.external else { continue };
                let mut url = format!(
                    "/apis/external.metrics.k8s.io/v1beta1/namespaces/{ns}/{}",
                    encode(&e.metric.name)
                );
                let ms = crate::selector::format(e.metric.selector.as_ref());
                if !ms.is_empty() {
                    url.push_str(&format!("?labelSelector={}", encode(&ms)));
                }
                let answer = match get_json::<List<ExternalMetricValue>>(
                    client,
                    &url,
                    RequestFor {
                        group: "external.metrics.k8s.io",
                        resource: &e.metric.name,
                        name: "",
                    },
                )
                .await
                {
                    Ok(l) => ListAnswer {
                        items: l
                            .items
                            .into_iter()
                            .map(|v| SampleValue {
                                value: v.value,
                                timestamp: v.timestamp,
                            })
                            .collect(),
                        error: None,
                    },
                    Err(err) => ListAnswer {
                        items: Vec::new(),
                        error: Some(err),
                    },
                };
                apis.external.insert(e.metric.name.clone(), answer);
            }
            _ => continue,
        }
        took[i] = started.elapsed();
    }
    (apis, took)
}

/// PUT the HPA's status subresource.
pub async fn write_status(
    client: &Client,
    hpa: &HorizontalPodAutoscaler,
    status: &HorizontalPodAutoscalerStatus,
) -> Result<(), String> {
    let (_, ns, name) = super::key_of(hpa);
    let api: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), &ns);
    let mut updated = hpa.clone();
    updated.status = Some(status.clone());
    api.replace_status(&name, &PostParams::default(), &updated)
        .await
        .map(|_| ())
        .map_err(|e| message(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_of_common_kinds() {
        assert_eq!(plural("Deployment"), "deployments");
        assert_eq!(plural("Ingress"), "ingresses");
        assert_eq!(plural("Policy"), "policies");
        assert_eq!(plural("Gateway"), "gateways");
    }

    #[test]
    fn api_versions_split_into_group_and_version() {
        let t = |v: &str| CrossVersionObjectReference {
            api_version: Some(v.into()),
            kind: "Deployment".into(),
            name: "web".into(),
        };
        assert_eq!(gvk_of(&t("apps/v1")).unwrap().group, "apps");
        assert_eq!(gvk_of(&t("v1")).unwrap().group, "");
        assert!(gvk_of(&t("a/b/c")).is_err());
    }
}
