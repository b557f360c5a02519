//! The answer of each metric path, computed from a namespace's control document the way the real
//! servers compute theirs:
//!
//! - metrics-server: the PodMetrics of the pods the `labelSelector` selects, sorted by name, each
//!   with the pod's namespace, labels and a `creationTimestamp` of now; a single pod without
//!   metrics is `404 NotFound` (`podmetrics.metrics.k8s.io "ns/name" not found`);
//! - custom-metrics-apiserver: a `MetricValueList` of the selected pods' values (`pods/*`), of one
//!   object's value (exactly one item), or `404 NotFound` `the server could not find the metric
//!   {metric} for {resource} {name}` when the object has no value; `metric.selector` echoes the
//!   `metricLabelSelector` as `metav1.ParseToLabelSelector` renders it;
//! - an external metrics adapter: an `ExternalMetricValueList` of the series.
//!
//! A namespace without a document (or a metric absent from it) answers like a real server without
//! data: empty lists, and `404 NotFound` for one pod or one object. An answer with an `error` is a
//! `metav1.Status` whose message is the error text (client-go's error text then is exactly that),
//! with the API's fault code (default 500). An API in `unregistered` mode answers `404 page not
//! found` (text/plain) on every metric path of the namespace.

use std::collections::BTreeMap;

use hpa_reference::metrics_api::{PodMetrics, PodValue};
use hpa_reference::selector::{self, Selector};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time as KubeTime;

use crate::control::{ApiFault, ControlDocument, FaultMode, Labels};
use crate::reply::Reply;
use crate::routes::{CustomVersion, MetricRoute};
use crate::wire::{
    ExternalMetricValue, LabelSelector, LabelSelectorRequirement, List, MetricIdentifier,
    MetricValueV1beta1, MetricValueV1beta2, ObjectReference, Status, StatusDetails, Typed,
    reason_for_code,
};

const METRICS_V1BETA1: &str = "metrics.k8s.io/v1beta1";
const EXTERNAL_V1BETA1: &str = "external.metrics.k8s.io/v1beta1";

/// The query parameters the metrics clients send.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// `labelSelector`: selects pods (metrics and custom APIs) or series (external API).
    pub label_selector: Option<String>,
    /// `metricLabelSelector` (custom API).
    pub metric_label_selector: Option<String>,
}

impl Query {
    /// Reads the parameters from a raw query string.
    pub fn parse(raw: Option<&str>) -> Query {
        let mut q = Query::default();
        for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
            match k.as_ref() {
                "labelSelector" => q.label_selector = Some(v.into_owned()),
                "metricLabelSelector" => q.metric_label_selector = Some(v.into_owned()),
                _ => {}
            }
        }
        q
    }
}

fn error_status(fault: &ApiFault, message: &str) -> Reply {
    let code = fault.code();
    let reason = fault
        .error_reason
        .clone()
        .unwrap_or_else(|| reason_for_code(code).to_string());
    Reply::status(&Status::failure(code, &reason, message))
}

fn bad_request(message: String) -> Reply {
    Reply::status(&Status::failure(400, "BadRequest", message))
}

fn parse_selector(raw: Option<&str>) -> Result<Selector, Reply> {
    selector::parse(raw.unwrap_or("")).map_err(|e| {
        bad_request(format!(
            "unable to parse requirement: {e} (labelSelector {:?})",
            raw.unwrap_or("")
        ))
    })
}

fn not_found(group_resource: &str, group: &str, resource: &str, name: &str) -> Reply {
    Reply::status(
        &Status::failure(
            404,
            "NotFound",
            format!("{group_resource} \"{name}\" not found"),
        )
        .with_details(StatusDetails {
            name: name.to_string(),
            group: group.to_string(),
            kind: resource.to_string(),
        }),
    )
}

fn metric_not_found(metric: &str, resource: &str, name: &str) -> Reply {
    Reply::status(&Status::failure(
        404,
        "NotFound",
        format!("the server could not find the metric {metric} for {resource} {name}"),
    ))
}

/// The labels a pod is selected by: the document's, else the item's own.
fn pod_labels<'a>(
    doc: &'a ControlDocument,
    pod: &str,
    own: Option<&'a Labels>,
) -> Option<&'a Labels> {
    doc.pods.get(pod).or(own)
}

fn selected(selector: &Selector, labels: Option<&Labels>) -> bool {
    match labels {
        Some(l) => selector.matches(l),
        None => selector.matches(&BTreeMap::new()),
    }
}

/// The PodMetrics items of a namespace that the selector selects, as metrics-server fills them.
fn pod_metrics_items(
    namespace: &str,
    doc: &ControlDocument,
    selector: &Selector,
    now: &KubeTime,
) -> Vec<PodMetrics> {
    let mut items: Vec<PodMetrics> = doc
        .metrics
        .resource
        .items
        .iter()
        .filter(|m| {
            let name = m.metadata.name.as_deref().unwrap_or("");
            selected(selector, pod_labels(doc, name, m.metadata.labels.as_ref()))
        })
        .map(|m| {
            let mut m = m.clone();
            let name = m.metadata.name.clone().unwrap_or_default();
            if m.metadata.namespace.is_none() {
                m.metadata.namespace = Some(namespace.to_string());
            }
            // The pod's labels as the document lists them (metrics-server copies the pod's).
            if let Some(labels) = doc.pods.get(&name) {
                m.metadata.labels = (!labels.is_empty()).then(|| labels.clone());
            }
            if m.metadata.creation_timestamp.is_none() {
                m.metadata.creation_timestamp = Some(now.clone());
            }
            m
        })
        .collect();
    items.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    items
}

/// `GET /apis/metrics.k8s.io/v1beta1/pods`: every namespace's PodMetrics (namespaces whose
/// resource answer is an error or unregistered contribute none).
pub fn all_pod_metrics<'a>(
    docs: impl IntoIterator<Item = (&'a String, &'a ControlDocument)>,
    query: &Query,
    now: &KubeTime,
) -> Reply {
    let selector = match parse_selector(query.label_selector.as_deref()) {
        Ok(s) => s,
        Err(reply) => return reply,
    };
    let mut items = Vec::new();
    for (ns, doc) in docs {
        if doc.faults.resource.mode == FaultMode::Unregistered
            || doc.metrics.resource.error.is_some()
        {
            continue;
        }
        items.extend(pod_metrics_items(ns, doc, &selector, now));
    }
    Reply::json(200, &List::new("PodMetricsList", METRICS_V1BETA1, items))
}

/// The answer of a metric path from the namespace's document (`None`: never configured).
pub fn answer(
    route: &MetricRoute,
    doc: Option<&ControlDocument>,
    query: &Query,
    now: &KubeTime,
) -> Reply {
    let empty = ControlDocument::default();
    let doc = doc.unwrap_or(&empty);
    let fault = doc.faults.of(route.api());
    if fault.mode == FaultMode::Unregistered {
        return Reply::page_not_found();
    }
    match route {
        MetricRoute::PodMetricsList { namespace } => {
            let Some(ns) = namespace else {
                // The all-namespaces list is answered by `all_pod_metrics`.
                return Reply::json(
                    200,
                    &List::<PodMetrics>::new("PodMetricsList", METRICS_V1BETA1, vec![]),
                );
            };
            if let Some(e) = &doc.metrics.resource.error {
                return error_status(fault, e);
            }
            let selector = match parse_selector(query.label_selector.as_deref()) {
                Ok(s) => s,
                Err(reply) => return reply,
            };
            let items = pod_metrics_items(ns, doc, &selector, now);
            Reply::json(200, &List::new("PodMetricsList", METRICS_V1BETA1, items))
        }
        MetricRoute::PodMetricsGet { namespace, name } => {
            if let Some(e) = &doc.metrics.resource.error {
                return error_status(fault, e);
            }
            let item = pod_metrics_items(namespace, doc, &Selector::default(), now)
                .into_iter()
                .find(|m| m.metadata.name.as_deref() == Some(name.as_str()));
            match item {
                Some(m) => Reply::json(
                    200,
                    &Typed {
                        kind: "PodMetrics",
                        api_version: METRICS_V1BETA1,
                        object: m,
                    },
                ),
                None => not_found(
                    "podmetrics.metrics.k8s.io",
                    "metrics.k8s.io",
                    "podmetrics",
                    &format!("{namespace}/{name}"),
                ),
            }
        }
        MetricRoute::NodeMetricsList => Reply::json(
            200,
            &List::<PodMetrics>::new("NodeMetricsList", METRICS_V1BETA1, vec![]),
        ),
        MetricRoute::NodeMetricsGet { name } => not_found(
            "nodemetrics.metrics.k8s.io",
            "metrics.k8s.io",
            "nodemetrics",
            name,
        ),
        MetricRoute::CustomObjects {
            version,
            namespace,
            resource,
            metric,
        } => {
            let metric_selector = match metric_selector(query.metric_label_selector.as_deref()) {
                Ok(s) => s,
                Err(reply) => return reply,
            };
            let answer = if resource == "pods" {
                doc.metrics.pods.get(metric)
            } else {
                None
            };
            if let Some(e) = answer.and_then(|a| a.error.as_ref()) {
                return error_status(fault, e);
            }
            let selector = match parse_selector(query.label_selector.as_deref()) {
                Ok(s) => s,
                Err(reply) => return reply,
            };
            let values: Vec<&PodValue> = answer
                .map(|a| {
                    a.items
                        .iter()
                        .filter(|v| selected(&selector, pod_labels(doc, &v.pod, None)))
                        .collect()
                })
                .unwrap_or_default();
            custom_list(
                *version,
                values
                    .into_iter()
                    .map(|v| CustomValue {
                        described: described_object("pods", Some(namespace), &v.pod),
                        metric,
                        selector: metric_selector.clone(),
                        timestamp: v.timestamp.clone(),
                        window_seconds: v.window_seconds,
                        value: v.value.clone(),
                    })
                    .collect(),
            )
        }
        MetricRoute::CustomObject {
            version,
            namespace,
            resource,
            name,
            metric,
        } => {
            let metric_selector = match metric_selector(query.metric_label_selector.as_deref()) {
                Ok(s) => s,
                Err(reply) => return reply,
            };
            let described = described_object(resource, namespace.as_deref(), name);
            // One pod's value comes from the per-pod values; any other object's from `object`.
            let value = if resource == "pods" {
                match doc.metrics.pods.get(metric) {
                    Some(a) if a.error.is_some() => {
                        return error_status(fault, a.error.as_deref().unwrap_or(""));
                    }
                    Some(a) => a
                        .items
                        .iter()
                        .find(|v| &v.pod == name)
                        .map(|v| (v.timestamp.clone(), v.window_seconds, v.value.clone())),
                    None => None,
                }
            } else if route.namespace().is_some() {
                match doc.metrics.object.get(metric) {
                    Some(a) if a.error.is_some() => {
                        return error_status(fault, a.error.as_deref().unwrap_or(""));
                    }
                    Some(a) => a
                        .value
                        .as_ref()
                        .map(|v| (v.timestamp.clone(), None, v.value.clone())),
                    None => None,
                }
            } else {
                None
            };
            match value {
                Some((timestamp, window_seconds, value)) => custom_list(
                    *version,
                    vec![CustomValue {
                        described,
                        metric,
                        selector: metric_selector,
                        timestamp,
                        window_seconds,
                        value,
                    }],
                ),
                None => metric_not_found(metric, resource, name),
            }
        }
        MetricRoute::External { metric, .. } => {
            let answer = doc.metrics.external.get(metric);
            if let Some(e) = answer.and_then(|a| a.error.as_ref()) {
                return error_status(fault, e);
            }
            // The series carry no labels in the model: the harness computes the answer for the
            // HPA's selector, which is only checked for syntax here.
            if let Err(reply) = parse_selector(query.label_selector.as_deref()) {
                return reply;
            }
            let items: Vec<ExternalMetricValue> = answer
                .map(|a| {
                    a.items
                        .iter()
                        .map(|v| ExternalMetricValue {
                            metric_name: metric.clone(),
                            metric_labels: BTreeMap::new(),
                            timestamp: v.timestamp.clone(),
                            window_seconds: None,
                            value: v.value.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            Reply::json(
                200,
                &List::new("ExternalMetricValueList", EXTERNAL_V1BETA1, items),
            )
        }
    }
}

struct CustomValue<'a> {
    described: ObjectReference,
    metric: &'a str,
    selector: Option<LabelSelector>,
    timestamp: KubeTime,
    window_seconds: Option<i64>,
    value: k8s_openapi::apimachinery::pkg::api::resource::Quantity,
}

fn custom_list(version: CustomVersion, values: Vec<CustomValue<'_>>) -> Reply {
    match version {
        CustomVersion::V1beta2 => {
            let items: Vec<MetricValueV1beta2> = values
                .into_iter()
                .map(|v| MetricValueV1beta2 {
                    described_object: v.described,
                    metric: MetricIdentifier {
                        name: v.metric.to_string(),
                        selector: v.selector,
                    },
                    timestamp: v.timestamp,
                    window_seconds: v.window_seconds,
                    value: v.value,
                })
                .collect();
            Reply::json(
                200,
                &List::new("MetricValueList", version.api_version(), items),
            )
        }
        CustomVersion::V1beta1 => {
            let items: Vec<MetricValueV1beta1> = values
                .into_iter()
                .map(|v| MetricValueV1beta1 {
                    described_object: v.described,
                    metric_name: v.metric.to_string(),
                    timestamp: v.timestamp,
                    window_seconds: v.window_seconds,
                    value: v.value,
                    selector: v.selector,
                })
                .collect();
            Reply::json(
                200,
                &List::new("MetricValueList", version.api_version(), items),
            )
        }
    }
}

/// The `describedObject` custom metrics adapters write (kind and `group/version` from the REST
/// mapping of the resource; `/v1` for the core group, as their `ReferenceFor` writes it). Common
/// resources are known; another `plural.group` becomes kind `Plural` without its trailing `s`,
/// version `v1`.
pub fn described_object(resource: &str, namespace: Option<&str>, name: &str) -> ObjectReference {
    let (plural, group) = resource.split_once('.').unwrap_or((resource, ""));
    let known = match (plural, group) {
        ("pods", "") => Some(("Pod", "v1")),
        ("services", "") => Some(("Service", "v1")),
        ("namespaces", "") => Some(("Namespace", "v1")),
        ("nodes", "") => Some(("Node", "v1")),
        ("replicationcontrollers", "") => Some(("ReplicationController", "v1")),
        ("persistentvolumeclaims", "") => Some(("PersistentVolumeClaim", "v1")),
        ("endpoints", "") => Some(("Endpoints", "v1")),
        ("configmaps", "") => Some(("ConfigMap", "v1")),
        ("deployments", "apps") => Some(("Deployment", "v1")),
        ("replicasets", "apps") => Some(("ReplicaSet", "v1")),
        ("statefulsets", "apps") => Some(("StatefulSet", "v1")),
        ("daemonsets", "apps") => Some(("DaemonSet", "v1")),
        ("ingresses", "networking.k8s.io") => Some(("Ingress", "v1")),
        ("jobs", "batch") => Some(("Job", "v1")),
        ("cronjobs", "batch") => Some(("CronJob", "v1")),
        _ => None,
    };
    let (kind, version) = match known {
        Some((k, v)) => (k.to_string(), v),
        None => {
            let singular = plural.strip_suffix('s').unwrap_or(plural);
            let mut chars = singular.chars();
            let kind = chars
                .next()
                .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default();
            (kind, "v1")
        }
    };
    ObjectReference {
        kind,
        namespace: namespace.unwrap_or("").to_string(),
        name: name.to_string(),
        api_version: format!("{group}/{version}"),
    }
}

fn set_values(rest: &str) -> Vec<String> {
    let inner = rest
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim();
    let mut values: Vec<String> = inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    values.sort();
    values.dedup();
    values
}

/// The `metricLabelSelector` as `metav1.ParseToLabelSelector` renders it in `metric.selector`:
/// `None` when absent or empty; `=`/`==` requirements in `matchLabels`, the others in
/// `matchExpressions` by key with sorted values; a `!=` requirement fails as it does upstream
/// (`"!=" is not a valid label selector operator`, a plain error: HTTP 500).
pub fn metric_selector(raw: Option<&str>) -> Result<Option<LabelSelector>, Reply> {
    let raw = raw.unwrap_or("");
    if raw.trim().is_empty() {
        return Ok(None);
    }
    if let Err(e) = selector::parse(raw) {
        return Err(bad_request(format!(
            "unable to parse requirement: {e} (metricLabelSelector {raw:?})"
        )));
    }
    // Each requirement as `metav1.LabelSelectorRequirement`; `=` ones go to `matchLabels`.
    let mut requirements: Vec<LabelSelectorRequirement> = Vec::new();
    let mut requirement = |key: &str, operator: &'static str, values: Vec<String>| {
        requirements.push(LabelSelectorRequirement {
            key: key.trim().to_string(),
            operator,
            values,
        })
    };
    for part in selector::split_top_level(raw) {
        let part = part.trim();
        if let Some(key) = part.strip_prefix('!') {
            requirement(key, "DoesNotExist", vec![]);
        } else if part.contains("!=") {
            return Err(Reply::status(&Status::failure(
                500,
                "",
                "\"!=\" is not a valid label selector operator",
            )));
        } else if let Some((key, rest)) = part.split_once(" notin ") {
            requirement(key, "NotIn", set_values(rest));
        } else if let Some((key, rest)) = part.split_once(" in ") {
            requirement(key, "In", set_values(rest));
        } else if let Some((key, value)) = part.split_once('=') {
            let value = value.strip_prefix('=').unwrap_or(value).trim();
            requirement(key, "=", vec![value.to_string()]);
        } else {
            requirement(part, "Exists", vec![]);
        }
    }
    requirements.sort_by(|a, b| a.key.cmp(&b.key));
    let mut selector = LabelSelector::default();
    for r in requirements {
        if r.operator == "=" {
            let value = r.values.into_iter().next().unwrap_or_default();
            selector.match_labels.insert(r.key, value);
        } else {
            selector.match_expressions.push(r);
        }
    }
    Ok(Some(selector))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_selectors_render_like_parse_to_label_selector() {
        assert_eq!(metric_selector(None).unwrap(), None);
        assert_eq!(metric_selector(Some("")).unwrap(), None);
        let s = metric_selector(Some("zone in (b, a),app=web,!legacy,tier")).unwrap();
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"legacy","operator":"DoesNotExist"},{"key":"tier","operator":"Exists"},{"key":"zone","operator":"In","values":["a","b"]}]}"#
        );
        let err = metric_selector(Some("a!=b")).unwrap_err();
        assert_eq!(err.status, 500);
        assert!(
            err.body_text()
                .contains(r#""message":"\"!=\" is not a valid label selector operator""#)
        );
        assert_eq!(metric_selector(Some("a=b c")).unwrap_err().status, 400);
    }

    #[test]
    fn described_objects_follow_the_rest_mapping() {
        let d = described_object("deployments.apps", Some("ns"), "web");
        assert_eq!(
            (d.kind.as_str(), d.api_version.as_str()),
            ("Deployment", "apps/v1")
        );
        let d = described_object("pods", Some("ns"), "p");
        assert_eq!((d.kind.as_str(), d.api_version.as_str()), ("Pod", "/v1"));
        let d = described_object("widgets.example.com", None, "w");
        assert_eq!(
            (
                d.kind.as_str(),
                d.api_version.as_str(),
                d.namespace.as_str()
            ),
            ("Widget", "example.com/v1", "")
        );
    }

    #[test]
    fn query_parameters_are_decoded() {
        let q = Query::parse(Some(
            "labelSelector=app%3Dweb&metricLabelSelector=a+in+%28x%29",
        ));
        assert_eq!(q.label_selector.as_deref(), Some("app=web"));
        assert_eq!(q.metric_label_selector.as_deref(), Some("a in (x)"));
        assert_eq!(Query::parse(None), Query::default());
    }
}
