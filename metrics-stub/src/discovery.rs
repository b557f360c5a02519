//! Discovery, as a generic API server (metrics-server, custom-metrics-apiserver) serves it:
//! `/apis` (legacy `APIGroupList`, or aggregated `APIGroupDiscoveryList` v2/v2beta1 when the
//! `Accept` header asks for it, which is what kube-aggregator's discovery manager asks first),
//! `/apis/{group}` and `/apis/{group}/{version}` (what the aggregator's availability check and its
//! legacy discovery fallback fetch).
//!
//! The OpenAPI documents the aggregator downloads are empty: `/openapi/v2` a Swagger 2.0 document
//! without paths, `/openapi/v3` a discovery document without group versions. (A 404 keeps the
//! APIServices Available too, but kube-apiserver v1.36's OpenAPI v2 aggregation controller then
//! logs `loading OpenAPI spec for "v1beta1.metrics.k8s.io" failed with: ... resource not found`
//! and requeues it, over and over.)
//!
//! Groups and versions served: `metrics.k8s.io/v1beta1` (`pods`, `nodes`),
//! `custom.metrics.k8s.io/v1beta2` (preferred) and `v1beta1`, `external.metrics.k8s.io/v1beta1`.
//! The custom and external groups list no resources: their metric names are per namespace and
//! change per test, and no client of the HPA controller reads them (its custom metrics client reads
//! only the group's preferred version).

use crate::reply::Reply;
use crate::wire::{
    ApiGroup, ApiGroupDiscovery, ApiGroupList, ApiResource, ApiResourceDiscovery, ApiResourceList,
    ApiVersionDiscovery, DiscoveryMeta, EmptyMeta, GroupVersionForDiscovery, GroupVersionKind,
    List, OpenApiInfo, OpenApiV2, OpenApiV3Discovery, Typed,
};

/// `metrics.k8s.io`.
pub const RESOURCE_GROUP: &str = "metrics.k8s.io";
/// `custom.metrics.k8s.io`.
pub const CUSTOM_GROUP: &str = "custom.metrics.k8s.io";
/// `external.metrics.k8s.io`.
pub const EXTERNAL_GROUP: &str = "external.metrics.k8s.io";

struct Resource {
    name: &'static str,
    kind: &'static str,
    namespaced: bool,
}

struct Group {
    name: &'static str,
    /// Preferred first.
    versions: &'static [&'static str],
    resources: &'static [Resource],
}

const GROUPS: &[Group] = &[
    Group {
        name: RESOURCE_GROUP,
        versions: &["v1beta1"],
        resources: &[
            Resource {
                name: "nodes",
                kind: "NodeMetrics",
                namespaced: false,
            },
            Resource {
                name: "pods",
                kind: "PodMetrics",
                namespaced: true,
            },
        ],
    },
    Group {
        name: CUSTOM_GROUP,
        versions: &["v1beta2", "v1beta1"],
        resources: &[],
    },
    Group {
        name: EXTERNAL_GROUP,
        versions: &["v1beta1"],
        resources: &[],
    },
];

fn group(name: &str) -> Option<&'static Group> {
    GROUPS.iter().find(|g| g.name == name)
}

/// Whether the stub serves this group version.
pub fn serves(group_name: &str, version: &str) -> bool {
    group(group_name).is_some_and(|g| g.versions.contains(&version))
}

fn version_for_discovery(g: &Group, v: &str) -> GroupVersionForDiscovery {
    GroupVersionForDiscovery {
        group_version: format!("{}/{v}", g.name),
        version: v.to_string(),
    }
}

fn api_group(g: &Group) -> ApiGroup {
    ApiGroup {
        name: g.name.to_string(),
        versions: g
            .versions
            .iter()
            .map(|v| version_for_discovery(g, v))
            .collect(),
        preferred_version: version_for_discovery(g, g.versions[0]),
    }
}

const VERBS: [&str; 2] = ["get", "list"];

/// The aggregated discovery formats a client can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregated {
    /// `apidiscovery.k8s.io/v2`.
    V2,
    /// `apidiscovery.k8s.io/v2beta1`.
    V2beta1,
}

impl Aggregated {
    fn version(self) -> &'static str {
        match self {
            Aggregated::V2 => "v2",
            Aggregated::V2beta1 => "v2beta1",
        }
    }
}

/// The first aggregated discovery format the `Accept` header lists, if any (a media range
/// `application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`, other parameters such
/// as `profile=nopeer` tolerated).
pub fn negotiate(accept: Option<&str>) -> Option<Aggregated> {
    for range in accept?.split(',') {
        let mut parts = range.split(';').map(str::trim);
        if parts.next() != Some("application/json") {
            continue;
        }
        let (mut g, mut v, mut as_) = (None, None, None);
        for p in parts {
            match p.split_once('=') {
                Some(("g", x)) => g = Some(x),
                Some(("v", x)) => v = Some(x),
                Some(("as", x)) => as_ = Some(x),
                _ => {}
            }
        }
        if g != Some("apidiscovery.k8s.io") || as_ != Some("APIGroupDiscoveryList") {
            continue;
        }
        match v {
            Some("v2") => return Some(Aggregated::V2),
            Some("v2beta1") => return Some(Aggregated::V2beta1),
            _ => {}
        }
    }
    None
}

/// `GET /apis`.
pub fn apis(accept: Option<&str>) -> Reply {
    match negotiate(accept) {
        None => Reply::json(
            200,
            &ApiGroupList {
                kind: "APIGroupList",
                api_version: "v1",
                groups: GROUPS.iter().map(api_group).collect(),
            },
        ),
        Some(format) => {
            let items: Vec<ApiGroupDiscovery> = GROUPS
                .iter()
                .map(|g| ApiGroupDiscovery {
                    metadata: DiscoveryMeta {
                        name: g.name.to_string(),
                        creation_timestamp: (),
                    },
                    versions: g
                        .versions
                        .iter()
                        .map(|v| ApiVersionDiscovery {
                            version: v.to_string(),
                            resources: g
                                .resources
                                .iter()
                                .map(|r| ApiResourceDiscovery {
                                    resource: r.name.to_string(),
                                    response_kind: GroupVersionKind {
                                        group: g.name.to_string(),
                                        version: v.to_string(),
                                        kind: r.kind.to_string(),
                                    },
                                    scope: if r.namespaced {
                                        "Namespaced"
                                    } else {
                                        "Cluster"
                                    },
                                    singular_resource: String::new(),
                                    verbs: VERBS.iter().map(|s| s.to_string()).collect(),
                                })
                                .collect(),
                            freshness: "Current",
                        })
                        .collect(),
                })
                .collect();
            let api_version = match format {
                Aggregated::V2 => "apidiscovery.k8s.io/v2",
                Aggregated::V2beta1 => "apidiscovery.k8s.io/v2beta1",
            };
            let mut reply =
                Reply::json(200, &List::new("APIGroupDiscoveryList", api_version, items));
            reply.content_type = format!(
                "application/json;g=apidiscovery.k8s.io;v={};as=APIGroupDiscoveryList",
                format.version()
            );
            reply
        }
    }
}

/// `GET /openapi/v2`: a valid Swagger 2.0 document with no paths.
pub fn openapi_v2() -> Reply {
    Reply::json(
        200,
        &OpenApiV2 {
            swagger: "2.0",
            info: OpenApiInfo {
                title: "hpa-metrics-stub",
                version: env!("CARGO_PKG_VERSION"),
            },
            paths: EmptyMeta {},
        },
    )
}

/// `GET /openapi/v3`: the OpenAPI v3 discovery document, listing no group versions.
pub fn openapi_v3() -> Reply {
    Reply::json(
        200,
        &OpenApiV3Discovery {
            paths: EmptyMeta {},
        },
    )
}

/// `GET /apis/{group}`, `None` for a group the stub does not serve.
pub fn api_group_document(group_name: &str) -> Option<Reply> {
    let g = group(group_name)?;
    Some(Reply::json(
        200,
        &Typed {
            kind: "APIGroup",
            api_version: "v1",
            object: api_group(g),
        },
    ))
}

/// `GET /apis/{group}/{version}`, `None` for a group version the stub does not serve.
pub fn api_resource_list(group_name: &str, version: &str) -> Option<Reply> {
    let g = group(group_name).filter(|g| g.versions.contains(&version))?;
    Some(Reply::json(
        200,
        &ApiResourceList {
            kind: "APIResourceList",
            api_version: "v1",
            group_version: format!("{}/{version}", g.name),
            resources: g
                .resources
                .iter()
                .map(|r| ApiResource {
                    name: r.name.to_string(),
                    singular_name: String::new(),
                    namespaced: r.namespaced,
                    kind: r.kind.to_string(),
                    verbs: VERBS.iter().map(|s| s.to_string()).collect(),
                })
                .collect(),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lane's readiness probes (`control::probe_paths`) ask every group version served here,
    /// once each, and nothing else.
    #[test]
    fn the_probes_cover_exactly_the_group_versions_served() {
        let probed: Vec<String> = crate::control::probe_paths("ns")
            .into_iter()
            .map(|(gv, path)| {
                assert!(
                    path.starts_with(&format!("/apis/{gv}/namespaces/ns/")),
                    "{path}"
                );
                gv
            })
            .collect();
        let served: Vec<String> = GROUPS
            .iter()
            .flat_map(|g| g.versions.iter().map(move |v| format!("{}/{v}", g.name)))
            .collect();
        assert_eq!(probed, served);
        for gv in &probed {
            let (g, v) = gv.split_once('/').unwrap();
            assert!(serves(g, v), "{gv}");
        }
    }

    #[test]
    fn negotiation_follows_the_accept_header_order() {
        assert_eq!(negotiate(None), None);
        assert_eq!(negotiate(Some("application/json")), None);
        assert_eq!(
            negotiate(Some(
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
            )),
            Some(Aggregated::V2)
        );
        assert_eq!(
            negotiate(Some(
                "application/json; g=apidiscovery.k8s.io; v=v2beta1; as=APIGroupDiscoveryList, application/json"
            )),
            Some(Aggregated::V2beta1)
        );
        assert_eq!(
            negotiate(Some(
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer"
            )),
            Some(Aggregated::V2)
        );
        assert_eq!(
            negotiate(Some(
                "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList"
            )),
            None
        );
    }

    #[test]
    fn serves_exactly_the_three_groups() {
        assert!(serves("metrics.k8s.io", "v1beta1"));
        assert!(serves("custom.metrics.k8s.io", "v1beta2"));
        assert!(serves("custom.metrics.k8s.io", "v1beta1"));
        assert!(serves("external.metrics.k8s.io", "v1beta1"));
        assert!(!serves("metrics.k8s.io", "v1"));
        assert!(!serves("apps", "v1"));
        assert!(api_resource_list("external.metrics.k8s.io", "v1beta2").is_none());
        assert!(api_group_document("custom.metrics.k8s.io").is_some());
    }
}
