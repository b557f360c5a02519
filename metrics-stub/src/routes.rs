//! Which API path a request names: discovery, OpenAPI, or a metric path of one of the three APIs,
//! exactly as upstream's clients build them (client-go escapes path segments, so `*` arrives as
//! `%2A`; segments are percent-decoded one by one).
//!
//! Metric paths:
//! - `metrics.k8s.io/v1beta1`: `namespaces/{ns}/pods` (list), `namespaces/{ns}/pods/{name}`,
//!   `pods` (all namespaces), `nodes`, `nodes/{name}`;
//! - `custom.metrics.k8s.io/{v1beta2,v1beta1}`: `namespaces/{ns}/{resource}/*/{metric}` (every
//!   object of a resource, `GetForObjects`), `namespaces/{ns}/{resource}/{name}/{metric}` (one
//!   object, `GetForObject`), `namespaces/{ns}/metrics/{metric}` (the namespace itself),
//!   `{resource}/{name}/{metric}` (a cluster-scoped object);
//! - `external.metrics.k8s.io/v1beta1`: `namespaces/{ns}/{metric}`.

use percent_encoding::percent_decode_str;

use crate::control::Api;
use crate::discovery::{CUSTOM_GROUP, EXTERNAL_GROUP, RESOURCE_GROUP, serves};

/// The custom metrics API versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CustomVersion {
    /// `v1beta2` (what the HPA controller prefers).
    V1beta2,
    /// `v1beta1`.
    V1beta1,
}

impl CustomVersion {
    /// `custom.metrics.k8s.io/{version}`.
    pub fn api_version(self) -> &'static str {
        match self {
            CustomVersion::V1beta2 => "custom.metrics.k8s.io/v1beta2",
            CustomVersion::V1beta1 => "custom.metrics.k8s.io/v1beta1",
        }
    }
}

/// A metric path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricRoute {
    /// PodMetrics of a namespace (`None`: of all namespaces).
    PodMetricsList {
        /// The namespace.
        namespace: Option<String>,
    },
    /// One pod's PodMetrics.
    PodMetricsGet {
        /// The namespace.
        namespace: String,
        /// The pod.
        name: String,
    },
    /// NodeMetrics of all nodes.
    NodeMetricsList,
    /// One node's NodeMetrics.
    NodeMetricsGet {
        /// The node.
        name: String,
    },
    /// A custom metric of every object of a resource (`{resource}/*/{metric}`).
    CustomObjects {
        /// The API version.
        version: CustomVersion,
        /// The namespace.
        namespace: String,
        /// The resource, `resource.group` (`pods`, `deployments.apps`).
        resource: String,
        /// The metric.
        metric: String,
    },
    /// A custom metric of one object.
    CustomObject {
        /// The API version.
        version: CustomVersion,
        /// The namespace (`None` for a cluster-scoped object).
        namespace: Option<String>,
        /// The resource, `resource.group` (`namespaces` for `namespaces/{ns}/metrics/{metric}`).
        resource: String,
        /// The object's name.
        name: String,
        /// The metric.
        metric: String,
    },
    /// An external metric.
    External {
        /// The namespace.
        namespace: String,
        /// The metric.
        metric: String,
    },
}

impl MetricRoute {
    /// The API the path belongs to.
    pub fn api(&self) -> Api {
        match self {
            MetricRoute::PodMetricsList { .. }
            | MetricRoute::PodMetricsGet { .. }
            | MetricRoute::NodeMetricsList
            | MetricRoute::NodeMetricsGet { .. } => Api::Resource,
            MetricRoute::CustomObjects { .. } | MetricRoute::CustomObject { .. } => Api::Custom,
            MetricRoute::External { .. } => Api::External,
        }
    }

    /// The namespace whose document answers the path (`namespaces/{ns}/metrics/{metric}` is
    /// answered from `{ns}`'s document).
    pub fn namespace(&self) -> Option<&str> {
        match self {
            MetricRoute::PodMetricsList { namespace } => namespace.as_deref(),
            MetricRoute::PodMetricsGet { namespace, .. }
            | MetricRoute::CustomObjects { namespace, .. }
            | MetricRoute::External { namespace, .. } => Some(namespace),
            MetricRoute::CustomObject {
                namespace,
                resource,
                name,
                ..
            } => match namespace {
                Some(ns) => Some(ns),
                None if resource == "namespaces" => Some(name),
                None => None,
            },
            MetricRoute::NodeMetricsList | MetricRoute::NodeMetricsGet { .. } => None,
        }
    }
}

/// What a path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/apis`.
    Apis,
    /// `/apis/{group}` of a served group.
    Group(String),
    /// `/apis/{group}/{version}` of a served group version.
    GroupVersion(String, String),
    /// A metric path.
    Metric(MetricRoute),
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/openapi/v3`.
    OpenApiV3,
    /// Anything else.
    NotFound,
}

/// Splits a raw path into percent-decoded segments (an empty path gives none).
pub fn segments(raw_path: &str) -> Vec<String> {
    raw_path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect()
}

/// The route of a raw request path.
pub fn route(raw_path: &str) -> Route {
    let segs = segments(raw_path);
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    let own = |x: &str| x.to_string();
    match s.as_slice() {
        ["apis"] => Route::Apis,
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3,
        ["apis", g] if crate::discovery::api_group_document(g).is_some() => Route::Group(own(g)),
        ["apis", g, v] if serves(g, v) => Route::GroupVersion(own(g), own(v)),
        ["apis", g, v, rest @ ..] if serves(g, v) => metric_route(g, v, rest)
            .map(Route::Metric)
            .unwrap_or(Route::NotFound),
        _ => Route::NotFound,
    }
}

fn metric_route(group: &str, version: &str, rest: &[&str]) -> Option<MetricRoute> {
    let own = |x: &str| x.to_string();
    match group {
        RESOURCE_GROUP => match rest {
            ["namespaces", ns, "pods"] => Some(MetricRoute::PodMetricsList {
                namespace: Some(own(ns)),
            }),
            ["namespaces", ns, "pods", name] => Some(MetricRoute::PodMetricsGet {
                namespace: own(ns),
                name: own(name),
            }),
            ["pods"] => Some(MetricRoute::PodMetricsList { namespace: None }),
            ["nodes"] => Some(MetricRoute::NodeMetricsList),
            ["nodes", name] => Some(MetricRoute::NodeMetricsGet { name: own(name) }),
            _ => None,
        },
        CUSTOM_GROUP => {
            let version = if version == "v1beta1" {
                CustomVersion::V1beta1
            } else {
                CustomVersion::V1beta2
            };
            match rest {
                ["namespaces", ns, "metrics", metric] => Some(MetricRoute::CustomObject {
                    version,
                    namespace: None,
                    resource: own("namespaces"),
                    name: own(ns),
                    metric: own(metric),
                }),
                ["namespaces", ns, resource, "*", metric] => Some(MetricRoute::CustomObjects {
                    version,
                    namespace: own(ns),
                    resource: own(resource),
                    metric: own(metric),
                }),
                ["namespaces", ns, resource, name, metric] => Some(MetricRoute::CustomObject {
                    version,
                    namespace: Some(own(ns)),
                    resource: own(resource),
                    name: own(name),
                    metric: own(metric),
                }),
                [resource, name, metric] if *resource != "namespaces" => {
                    Some(MetricRoute::CustomObject {
                        version,
                        namespace: None,
                        resource: own(resource),
                        name: own(name),
                        metric: own(metric),
                    })
                }
                _ => None,
            }
        }
        EXTERNAL_GROUP => match rest {
            ["namespaces", ns, metric] => Some(MetricRoute::External {
                namespace: own(ns),
                metric: own(metric),
            }),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_client_paths() {
        assert_eq!(
            route("/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods"),
            Route::Metric(MetricRoute::PodMetricsList {
                namespace: Some("ns".into())
            })
        );
        assert_eq!(
            route("/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/pods/%2A/rps"),
            Route::Metric(MetricRoute::CustomObjects {
                version: CustomVersion::V1beta2,
                namespace: "ns".into(),
                resource: "pods".into(),
                metric: "rps".into()
            })
        );
        assert_eq!(
            route("/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns/deployments.apps/web/hits"),
            Route::Metric(MetricRoute::CustomObject {
                version: CustomVersion::V1beta1,
                namespace: Some("ns".into()),
                resource: "deployments.apps".into(),
                name: "web".into(),
                metric: "hits".into()
            })
        );
        let ns_metric = route("/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/metrics/hits");
        let Route::Metric(m) = &ns_metric else {
            panic!("{ns_metric:?}")
        };
        assert_eq!(m.namespace(), Some("ns"));
        assert_eq!(
            route("/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/queue"),
            Route::Metric(MetricRoute::External {
                namespace: "ns".into(),
                metric: "queue".into()
            })
        );
    }

    #[test]
    fn discovery_and_unknown_paths() {
        assert_eq!(route("/apis"), Route::Apis);
        assert_eq!(route("/openapi/v2"), Route::OpenApiV2);
        assert_eq!(route("/openapi/v3"), Route::OpenApiV3);
        assert_eq!(route("/apis/"), Route::Apis);
        assert_eq!(
            route("/apis/external.metrics.k8s.io"),
            Route::Group("external.metrics.k8s.io".into())
        );
        assert_eq!(
            route("/apis/metrics.k8s.io/v1beta1"),
            Route::GroupVersion("metrics.k8s.io".into(), "v1beta1".into())
        );
        for p in [
            "/",
            "/api",
            "/openapi/v3/apis/metrics.k8s.io/v1beta1",
            "/apis/apps",
            "/apis/metrics.k8s.io/v1",
            "/apis/metrics.k8s.io/v1/namespaces/ns/pods",
            "/apis/metrics.k8s.io/v1beta1/namespaces/ns/services",
            "/apis/external.metrics.k8s.io/v1beta1/queue",
        ] {
            assert_eq!(route(p), Route::NotFound, "{p}");
        }
    }
}
