//! The metrics APIs' answers as they arrive over the wire (`metrics.k8s.io/v1beta1` PodMetrics,
//! `custom.metrics.k8s.io` per-pod and per-object values, `external.metrics.k8s.io` series), and
//! upstream's metrics client (`pkg/controller/podautoscaler/metrics/client.go`) that turns them into
//! the per-metric readings the decision core takes: which pods have a sample, the sums over
//! containers, the timestamps, and the exact error texts.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::autoscaling::v2::MetricSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time as KubeTime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::gotext::{go_quote, parse_go_duration};
use crate::quantity::milli_value;
use crate::recycle;
use crate::time::Time;
use crate::time::core_time;
use crate::version::Changes;
use crate::view::{MetricReading, MetricValues, PodMetric, same_name};

/// One container's usage in a PodMetrics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContainerMetrics {
    /// Container name.
    pub name: String,
    /// Usage by resource name, e.g. `cpu: 250m`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, Quantity>")]
    pub usage: Usage,
}

impl ContainerMetrics {
    /// The usage of `resource`.
    fn usage_of(&self, resource: &str) -> Option<&Quantity> {
        self.usage.get(resource)
    }
}

/// A container's usage by resource name: a map, as a JSON object (`{"cpu": "250m"}`), held as a
/// list of pairs in ascending name order, one per name. A usage has a few resources, and each
/// metric of each pod looks one up: a look at each pair, compared in line, where a `BTreeMap`'s
/// iterator or search cost ~70 instructions a lookup (a seventh of a Resource metric's reading).
/// As a map it serializes in name order, compares equal regardless of the order built in, and
/// keeps the last value of a name given twice.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage(Vec<(String, Quantity)>);

impl Usage {
    /// The quantity of `resource`.
    #[inline]
    pub fn get(&self, resource: &str) -> Option<&Quantity> {
        self.0
            .iter()
            .find(|(r, _)| same_name(r, resource))
            .map(|(_, q)| q)
    }

    /// Sets the quantity of `resource`; returns the one it replaced.
    pub fn insert(&mut self, resource: String, quantity: Quantity) -> Option<Quantity> {
        match self.0.binary_search_by(|(r, _)| r.as_str().cmp(&resource)) {
            Ok(at) => Some(std::mem::replace(&mut self.0[at].1, quantity)),
            Err(at) => {
                self.0.insert(at, (resource, quantity));
                None
            }
        }
    }

    /// The resource names, in ascending order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &String> {
        self.0.iter().map(|(r, _)| r)
    }

    /// The quantities, in ascending name order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &Quantity> {
        self.0.iter().map(|(_, q)| q)
    }

    /// The quantities, to change in place.
    pub fn values_mut(&mut self) -> impl ExactSizeIterator<Item = &mut Quantity> {
        self.0.iter_mut().map(|(_, q)| q)
    }

    /// How many resources.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// No resource.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<(String, Quantity)> for Usage {
    /// As a map collects: in name order, the last of a name kept.
    fn from_iter<I: IntoIterator<Item = (String, Quantity)>>(pairs: I) -> Self {
        let mut usage = Usage::default();
        for (r, q) in pairs {
            usage.insert(r, q);
        }
        usage
    }
}

impl From<BTreeMap<String, Quantity>> for Usage {
    fn from(map: BTreeMap<String, Quantity>) -> Self {
        Usage(map.into_iter().collect())
    }
}

impl Serialize for Usage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(r, q)| (r, q)))
    }
}

impl<'de> Deserialize<'de> for Usage {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Pairs;
        impl<'de> serde::de::Visitor<'de> for Pairs {
            type Value = Usage;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of resource names to quantities")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Usage, A::Error> {
                let mut usage = Usage(Vec::with_capacity(map.size_hint().unwrap_or(0).min(16)));
                while let Some((r, q)) = map.next_entry::<String, Quantity>()? {
                    usage.insert(r, q);
                }
                Ok(usage)
            }
        }
        deserializer.deserialize_map(Pairs)
    }
}

/// `metrics.k8s.io/v1beta1` PodMetrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PodMetrics {
    /// The pod's name and namespace.
    pub metadata: ObjectMeta,
    /// When the sample was taken.
    pub timestamp: KubeTime,
    /// The sampling window, as a Go duration (`30s`, `1m0s`).
    pub window: String,
    /// Per-container usage.
    #[serde(default)]
    pub containers: Vec<ContainerMetrics>,
}

/// A `custom.metrics.k8s.io` value of one pod.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodValue {
    /// The pod's name.
    pub pod: String,
    /// The value.
    pub value: Quantity,
    /// When it was sampled.
    pub timestamp: KubeTime,
    /// The window in seconds (upstream assumes 60 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_seconds: Option<i64>,
}

/// A single value: an Object metric, or one External series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SampleValue {
    /// The value.
    pub value: Quantity,
    /// When it was sampled.
    pub timestamp: KubeTime,
}

/// A list answer of a metrics API: its items, or the error of the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(bound(deserialize = "T: Deserialize<'de>", serialize = "T: Serialize"))]
pub struct ListAnswer<T> {
    /// The items (empty when the API returned none).
    #[serde(default)]
    pub items: Vec<T>,
    /// The request's error text, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl<T> Default for ListAnswer<T> {
    fn default() -> Self {
        ListAnswer {
            items: Vec::new(),
            error: None,
        }
    }
}

/// The answer for an Object metric: the value, or the error.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ObjectAnswer {
    /// The value, when the request succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<SampleValue>,
    /// The request's error text, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What every metrics API answers at one instant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MetricsApis {
    /// `metrics.k8s.io`: PodMetrics of the target's pods.
    #[serde(default)]
    pub resource: ListAnswer<PodMetrics>,
    /// `custom.metrics.k8s.io` per-pod values, by metric name.
    #[serde(default)]
    pub pods: BTreeMap<String, ListAnswer<PodValue>>,
    /// `custom.metrics.k8s.io` object values, by metric name.
    #[serde(default)]
    pub object: BTreeMap<String, ObjectAnswer>,
    /// `external.metrics.k8s.io` series, by metric name.
    #[serde(default)]
    pub external: BTreeMap<String, ListAnswer<SampleValue>>,
}

impl MetricsApis {
    /// Moves every timestamp of the answers (each PodMetrics', each per-pod value's, each
    /// Object and External sample's) by `micros` microseconds, everything else as it was: the
    /// same answers at an instant that much later, as the step protocol's delta ticks take a
    /// tick's metrics from the previous tick's (`unchanged: [metrics]`). `false` when a
    /// timestamp would leave the range a timestamp can hold; the answers are then partly moved.
    #[must_use]
    pub fn move_timestamps(&mut self, micros: i64) -> bool {
        let by = k8s_openapi::jiff::SignedDuration::from_micros(micros);
        let mut fits = true;
        let mut move_one = |t: &mut KubeTime| match t.0.checked_add(by) {
            Ok(moved) => t.0 = moved,
            Err(_) => fits = false,
        };
        for item in &mut self.resource.items {
            move_one(&mut item.timestamp);
        }
        for answer in self.pods.values_mut() {
            for value in &mut answer.items {
                move_one(&mut value.timestamp);
            }
        }
        for answer in self.object.values_mut() {
            if let Some(value) = &mut answer.value {
                move_one(&mut value.timestamp);
            }
        }
        for answer in self.external.values_mut() {
            for value in &mut answer.items {
                move_one(&mut value.timestamp);
            }
        }
        fits
    }
}

/// What a request was for, as client-go names it in the text of an error answer that is not a
/// `Status` (e.g. the API server's plain `404 page not found` for an API group nobody serves).
#[derive(Debug, Clone, Copy)]
pub struct RequestFor<'a> {
    /// The API group the client talks to, e.g. `metrics.k8s.io`.
    pub group: &'a str,
    /// The resource as the client names it, e.g. `pods`.
    pub resource: &'a str,
    /// The object's name, if the request names one.
    pub name: &'a str,
}

/// client-go's text for an error answer whose body is not a `Status` (apimachinery's
/// `NewGenericServerResponse` for a GET): the status code's sentence, then `(get <resource>.<group>
/// [name])`.
pub fn generic_response_message(code: u16, body: &str, req: RequestFor<'_>) -> String {
    let body = if body.trim().is_empty() {
        "unknown"
    } else {
        body.trim()
    };
    let sentence = match code {
        409 => "the server reported a conflict".to_string(),
        404 => "the server could not find the requested resource".to_string(),
        400 => "the server rejected our request for an unknown reason".to_string(),
        401 => "the server has asked for the client to provide credentials".to_string(),
        403 | 415 => body.to_string(),
        406 if body != "unknown" => body.to_string(),
        406 => "the server was unable to respond with a content type that the client supports".to_string(),
        405 => "the server does not allow this method on the requested resource".to_string(),
        422 => "the server rejected our request due to an error in our request".to_string(),
        503 => "the server is currently unable to handle the request".to_string(),
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request".to_string(),
        429 => "the server has received too many requests and has asked us to try again later".to_string(),
        c if c >= 500 => format!(
            "an error on the server ({}) has prevented the request from succeeding",
            go_quote(body)
        ),
        c => format!("the server responded with the status code {c} but did not return more information"),
    };
    let qualified = if req.group.is_empty() {
        req.resource.to_string()
    } else {
        format!("{}.{}", req.resource, req.group)
    };
    match (req.resource.is_empty(), req.name.is_empty()) {
        (true, _) => sentence,
        (false, true) => format!("{sentence} (get {qualified})"),
        (false, false) => format!("{sentence} (get {qualified} {})", req.name),
    }
}

fn time(t: &KubeTime) -> Time {
    core_time(t)
}

/// The samples of one resource (optionally one container's) from the resource metrics API
/// (`GetResourceMetric`): a pod lacking the resource in any container (or, for a container metric,
/// lacking the container or its resource) has no sample. Before 1.33
/// ([`Changes::missing_container_metric_is_a_missing_pod`] off), a pod whose metrics lack the
/// container fails the whole metric instead.
pub fn resource_metric(
    api: &ListAnswer<PodMetrics>,
    resource: &str,
    container: Option<&str>,
    changes: Changes,
) -> MetricReading {
    if let Some(e) = &api.error {
        return Err(format!(
            "unable to fetch metrics from resource metrics API: {e}"
        ));
    }
    let Some(first) = api.items.first() else {
        return Err("no metrics returned from resource metrics API".into());
    };
    // Before 1.33, the first pod whose metrics lack the container fails the whole metric.
    if let Some(c) = container
        && !changes.missing_container_metric_is_a_missing_pod
        && let Some(m) = api
            .items
            .iter()
            .find(|m| !m.containers.iter().any(|x| x.name == c))
    {
        return Err(format!(
            "failed to get container metrics: container {c} not present in metrics for pod {}/{}",
            m.metadata.namespace.as_deref().unwrap_or_default(),
            m.metadata.name.as_deref().unwrap_or_default()
        ));
    }
    // Every item usually has the same window: parsed once per distinct spelling in a row.
    let mut last_window: Option<(&str, Duration)> = None;
    let mut samples = recycle::samples();
    samples.refill(api.items.iter().filter_map(|m| {
        let value = match container {
            Some(c) => m
                .containers
                .iter()
                .find(|x| x.name == c)
                .and_then(|x| x.usage_of(resource))
                .and_then(|q| milli_value(&q.0).ok()),
            None => {
                if m.containers.is_empty() {
                    None
                } else {
                    m.containers.iter().try_fold(0i64, |acc, c| {
                        c.usage_of(resource)
                            .and_then(|q| milli_value(&q.0).ok())
                            .map(|v| acc.wrapping_add(v))
                    })
                }
            }
        };
        let value = value?;
        let window = match last_window {
            Some((text, d)) if same_name(text, &m.window) => d,
            _ => {
                let d = parse_go_duration(&m.window).unwrap_or(Duration::ZERO);
                last_window = Some((&m.window, d));
                d
            }
        };
        Some((
            m.metadata.name.as_deref().unwrap_or_default(),
            PodMetric {
                value,
                timestamp: time(&m.timestamp),
                window,
            },
        ))
    }));
    Ok(MetricValues::PerPod {
        // The last sample of a name wins, as with inserts.
        samples,
        timestamp: time(&first.timestamp),
    })
}

/// Per-pod custom metric values (`GetRawMetric`).
pub fn pods_metric(api: Option<&ListAnswer<PodValue>>) -> MetricReading {
    let empty = ListAnswer::default();
    let api = api.unwrap_or(&empty);
    if let Some(e) = &api.error {
        return Err(format!(
            "unable to fetch metrics from custom metrics API: {e}"
        ));
    }
    let Some(first) = api.items.first() else {
        return Err("no metrics returned from custom metrics API".into());
    };
    let mut samples = recycle::samples();
    samples.refill(api.items.iter().map(|v| {
        (
            v.pod.as_str(),
            PodMetric {
                value: milli_value(&v.value.0).unwrap_or(0),
                timestamp: time(&v.timestamp),
                window: Duration::from_secs(v.window_seconds.unwrap_or(60).max(0) as u64),
            },
        )
    }));
    Ok(MetricValues::PerPod {
        samples,
        timestamp: time(&first.timestamp),
    })
}

/// An Object metric's value (`GetObjectMetric`).
pub fn object_metric(
    api: Option<&ObjectAnswer>,
    metric: &str,
    kind: &str,
    name: &str,
) -> MetricReading {
    match api {
        Some(ObjectAnswer { error: Some(e), .. }) => Err(format!(
            "unable to fetch metrics from custom metrics API: {e}"
        )),
        Some(ObjectAnswer {
            value: Some(v),
            error: None,
        }) => Ok(MetricValues::Object {
            value: milli_value(&v.value.0).unwrap_or(0),
            timestamp: time(&v.timestamp),
        }),
        _ => Err(format!(
            "unable to fetch metrics from custom metrics API: the server could not find the metric {metric} for {kind} {name}"
        )),
    }
}

/// An External metric's series (`GetExternalMetric`).
pub fn external_metric(api: Option<&ListAnswer<SampleValue>>) -> MetricReading {
    let empty = ListAnswer::default();
    let api = api.unwrap_or(&empty);
    if let Some(e) = &api.error {
        return Err(format!(
            "unable to fetch metrics from external metrics API: {e}"
        ));
    }
    let Some(first) = api.items.first() else {
        return Err("no metrics returned from external metrics API".into());
    };
    Ok(MetricValues::External {
        values: api
            .items
            .iter()
            .map(|v| milli_value(&v.value.0).unwrap_or(0))
            .collect(),
        timestamp: time(&first.timestamp),
    })
}

/// One reading per metric of the spec, in order, as upstream's metrics client would produce them.
/// The list and its samples reuse the buffers of readings given back on this thread
/// ([`recycle::give_readings`]).
pub fn readings(
    metrics: &[MetricSpec],
    apis: &MetricsApis,
    changes: Changes,
) -> Vec<MetricReading> {
    let mut readings = recycle::list::<MetricReading>();
    readings.extend(metrics.iter().map(|m| match m.type_.as_str() {
        "Resource" => match &m.resource {
            Some(r) => resource_metric(&apis.resource, &r.name, None, changes),
            None => Err("resource metric source is missing".into()),
        },
        "ContainerResource" => match &m.container_resource {
            Some(r) => resource_metric(&apis.resource, &r.name, Some(&r.container), changes),
            None => Err("container resource metric source is missing".into()),
        },
        "Pods" => match &m.pods {
            Some(p) => pods_metric(apis.pods.get(&p.metric.name)),
            None => Err("pods metric source is missing".into()),
        },
        "Object" => match &m.object {
            Some(o) => object_metric(
                apis.object.get(&o.metric.name),
                &o.metric.name,
                &o.described_object.kind,
                &o.described_object.name,
            ),
            None => Err("object metric source is missing".into()),
        },
        "External" => match &m.external {
            Some(e) => external_metric(apis.external.get(&e.metric.name)),
            None => Err("external metric source is missing".into()),
        },
        other => Err(format!("unknown metric source type {other:?}")),
    }));
    readings
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The newest release's rules.
    fn now() -> Changes {
        crate::version::KubernetesVersion::NEWEST.changes()
    }

    fn pm(name: &str, containers: &[(&str, &[(&str, &str)])]) -> PodMetrics {
        PodMetrics {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            timestamp: crate::time::kube_time(Time::from_secs(100)),
            window: "30s".into(),
            containers: containers
                .iter()
                .map(|(n, u)| ContainerMetrics {
                    name: (*n).into(),
                    usage: u
                        .iter()
                        .map(|(r, q)| ((*r).into(), Quantity((*q).into())))
                        .collect(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_usage_reads_and_writes_as_the_map_it_was() {
        // Out of order, a name twice (the last kept), names alike in length and prefix.
        let text = r#"{"memory":"1Gi","cpu":"250m","cpx":"1","cpu":"300m","ephemeral-storage":"2Gi","":"5"}"#;
        let usage: Usage = serde_json::from_str(text).expect("a usage");
        let map: BTreeMap<String, Quantity> = serde_json::from_str(text).expect("a map");
        assert_eq!(
            serde_json::to_string(&usage).expect("json"),
            serde_json::to_string(&map).expect("json")
        );
        assert_eq!(usage, Usage::from(map.clone()));
        assert_eq!(usage.len(), map.len());
        assert!(usage.keys().eq(map.keys()));
        assert!(usage.values().eq(map.values()));
        for name in [
            "cpu",
            "cpx",
            "memory",
            "ephemeral-storage",
            "",
            "cp",
            "cpuu",
            "gpu",
        ] {
            assert_eq!(usage.get(name), map.get(name), "{name:?}");
        }
        // Built in any order, the same usage.
        let reversed: Usage = map.clone().into_iter().rev().collect();
        assert_eq!(reversed, usage);
        let mut changed = usage.clone();
        assert_eq!(
            changed.insert("cpu".into(), Quantity("1".into())),
            Some(Quantity("300m".into()))
        );
        assert_ne!(changed, usage);
        assert_eq!(changed.get("cpu"), Some(&Quantity("1".into())));
        assert!(serde_json::from_str::<Usage>(r#"["cpu"]"#).is_err());
        assert!(Usage::default().is_empty());
    }

    #[test]
    fn moving_the_timestamps_moves_each_and_nothing_else() {
        let at = |s: i64| crate::time::kube_time(Time::from_secs(s));
        let sample = |s: i64| SampleValue {
            value: Quantity("7".into()),
            timestamp: at(s),
        };
        let mut apis = MetricsApis {
            resource: ListAnswer {
                items: vec![pm("a", &[("app", &[("cpu", "100m")])]), pm("b", &[])],
                error: None,
            },
            pods: [(
                "qps".to_string(),
                ListAnswer {
                    items: vec![PodValue {
                        pod: "a".into(),
                        value: Quantity("3".into()),
                        timestamp: at(90),
                        window_seconds: Some(60),
                    }],
                    error: None,
                },
            )]
            .into(),
            object: [
                (
                    "queue".to_string(),
                    ObjectAnswer {
                        value: Some(sample(80)),
                        error: None,
                    },
                ),
                (
                    "gone".to_string(),
                    ObjectAnswer {
                        value: None,
                        error: Some("not found".into()),
                    },
                ),
            ]
            .into(),
            external: [(
                "lag".to_string(),
                ListAnswer {
                    items: vec![sample(70), sample(100)],
                    error: None,
                },
            )]
            .into(),
        };
        let before = apis.clone();
        assert!(apis.move_timestamps(15_000_000));
        let mut expected = before.clone();
        for item in &mut expected.resource.items {
            item.timestamp = at(115);
        }
        expected.pods.get_mut("qps").unwrap().items[0].timestamp = at(105);
        expected.object.get_mut("queue").unwrap().value = Some(sample(95));
        expected.external.get_mut("lag").unwrap().items = vec![sample(85), sample(115)];
        assert_eq!(apis, expected);
        assert!(apis.move_timestamps(-15_000_000));
        assert_eq!(apis, before, "moved back");
        assert!(
            !apis.move_timestamps(i64::MAX),
            "beyond the range of a timestamp"
        );
    }

    #[test]
    fn a_pod_lacking_the_resource_in_any_container_has_no_sample() {
        let api = ListAnswer {
            items: vec![
                pm(
                    "a",
                    &[("app", &[("cpu", "100m")]), ("side", &[("cpu", "50m")])],
                ),
                pm(
                    "b",
                    &[("app", &[("cpu", "100m")]), ("side", &[("memory", "1Mi")])],
                ),
                pm("c", &[]),
            ],
            error: None,
        };
        let Ok(MetricValues::PerPod { samples, .. }) = resource_metric(&api, "cpu", None, now())
        else {
            panic!("samples expected");
        };
        assert_eq!(samples.len(), 1);
        assert_eq!(samples["a"].value, 150);
        let Ok(MetricValues::PerPod { samples, .. }) =
            resource_metric(&api, "cpu", Some("side"), now())
        else {
            panic!("samples expected");
        };
        assert_eq!(samples.keys().collect::<Vec<_>>(), ["a"]);
    }

    #[test]
    fn errors_are_wrapped_like_upstream() {
        let api = ListAnswer::<PodMetrics> {
            items: vec![],
            error: Some("boom".into()),
        };
        assert_eq!(
            resource_metric(&api, "cpu", None, now()).unwrap_err(),
            "unable to fetch metrics from resource metrics API: boom"
        );
        assert_eq!(
            resource_metric(&ListAnswer::default(), "cpu", None, now()).unwrap_err(),
            "no metrics returned from resource metrics API"
        );
        assert_eq!(
            pods_metric(None).unwrap_err(),
            "no metrics returned from custom metrics API"
        );
        assert_eq!(
            external_metric(None).unwrap_err(),
            "no metrics returned from external metrics API"
        );
    }
}

#[cfg(test)]
mod generic_error_tests {
    use super::{RequestFor, generic_response_message};

    const PODS: RequestFor<'static> = RequestFor {
        group: "metrics.k8s.io",
        resource: "pods",
        name: "",
    };

    #[test]
    fn an_unserved_metrics_api_reads_as_client_go_reports_it() {
        assert_eq!(
            generic_response_message(404, "404 page not found", PODS),
            "the server could not find the requested resource (get pods.metrics.k8s.io)"
        );
        assert_eq!(
            generic_response_message(500, "boom \"x\"", PODS),
            "an error on the server (\"boom \\\"x\\\"\") has prevented the request from succeeding (get pods.metrics.k8s.io)"
        );
        assert_eq!(
            generic_response_message(
                503,
                "",
                RequestFor {
                    group: "custom.metrics.k8s.io",
                    resource: "pods",
                    name: "*"
                }
            ),
            "the server is currently unable to handle the request (get pods.custom.metrics.k8s.io *)"
        );
        assert_eq!(
            generic_response_message(418, "", PODS),
            "the server responded with the status code 418 but did not return more information (get pods.metrics.k8s.io)"
        );
    }
}
