//! The JSON shapes the stub writes, field for field (and in field order) as upstream's Go types
//! encode: `metav1.Status`, the metrics lists of `metrics.k8s.io`, `custom.metrics.k8s.io`
//! (v1beta2 and v1beta1) and `external.metrics.k8s.io`, and the discovery documents (legacy
//! `APIGroupList`/`APIGroup`/`APIResourceList` and aggregated `APIGroupDiscoveryList`). PodMetrics
//! items are the reference's type, whose `metadata` k8s-openapi writes with its fields sorted.
//!
//! Go's encoder ends every document with a newline; [`to_body`] does the same.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time as KubeTime;
use serde::Serialize;

/// Serializes a document as Go's `json.Encoder` writes it: compact, newline-terminated.
pub fn to_body<T: Serialize>(value: &T) -> Vec<u8> {
    let mut body = serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec());
    body.push(b'\n');
    body
}

/// An empty `ListMeta`/`ObjectMeta` (`{}`).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct EmptyMeta {}

/// A typed list: `{"kind", "apiVersion", "metadata": {}, "items"}`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct List<T> {
    /// `PodMetricsList`, `MetricValueList`, ...
    pub kind: &'static str,
    /// The group version.
    pub api_version: &'static str,
    /// Always empty.
    pub metadata: EmptyMeta,
    /// The items (`[]` when none, as Go encodes a non-nil empty slice).
    pub items: Vec<T>,
}

impl<T> List<T> {
    /// A list of `kind` in `api_version`.
    pub fn new(kind: &'static str, api_version: &'static str, items: Vec<T>) -> Self {
        List {
            kind,
            api_version,
            metadata: EmptyMeta {},
            items,
        }
    }
}

/// A single object with its `kind` and `apiVersion` in front.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Typed<T> {
    /// The kind.
    pub kind: &'static str,
    /// The group version.
    pub api_version: &'static str,
    /// The object's own fields.
    #[serde(flatten)]
    pub object: T,
}

/// `metav1.Status` of a failed request.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// `Status`.
    pub kind: &'static str,
    /// `v1`.
    pub api_version: &'static str,
    /// `{}`.
    pub metadata: EmptyMeta,
    /// `Failure`.
    pub status: &'static str,
    /// The message (client-go's error text).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The machine-readable reason (empty: `Unknown`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// What the status is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The HTTP code.
    pub code: u16,
}

impl Status {
    /// A failure with this code, reason and message.
    pub fn failure(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Status {
            kind: "Status",
            api_version: "v1",
            metadata: EmptyMeta {},
            status: "Failure",
            message: message.into(),
            reason: reason.to_string(),
            details: None,
            code,
        }
    }

    /// The same status with details.
    pub fn with_details(mut self, details: StatusDetails) -> Self {
        self.details = Some(details);
        self
    }
}

/// The reason apimachinery's `NewGenericServerResponse` and friends give an HTTP code (empty for
/// 500 and codes it does not name, which a real API server sends for plain errors).
pub fn reason_for_code(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Expired",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "",
    }
}

/// `metav1.StatusDetails` (the fields the stub uses).
#[derive(Debug, Clone, Default, Serialize)]
pub struct StatusDetails {
    /// The object's name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The resource's group.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The resource.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
}

/// `corev1.ObjectReference` as custom metrics adapters fill it.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// The kind.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The namespace.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `group/version` (`/v1` for the core group, as the adapters' `ReferenceFor` writes it).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
}

/// `metav1.LabelSelector` (Go field order: `matchLabels` before `matchExpressions`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// `key=value` requirements.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// The other requirements, by key.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// `metav1.LabelSelectorRequirement`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelSelectorRequirement {
    /// The label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`.
    pub operator: &'static str,
    /// Sorted values.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// `custom.metrics.k8s.io/v1beta2` `MetricIdentifier`.
#[derive(Debug, Clone, Serialize)]
pub struct MetricIdentifier {
    /// The metric name.
    pub name: String,
    /// The metric label selector (`null` when none was given).
    pub selector: Option<LabelSelector>,
}

/// `custom.metrics.k8s.io/v1beta2` `MetricValue`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricValueV1beta2 {
    /// The object the value describes.
    pub described_object: ObjectReference,
    /// The metric.
    pub metric: MetricIdentifier,
    /// When sampled.
    pub timestamp: KubeTime,
    /// The window, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_seconds: Option<i64>,
    /// The value.
    pub value: Quantity,
}

/// `custom.metrics.k8s.io/v1beta1` `MetricValue`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricValueV1beta1 {
    /// The object the value describes.
    pub described_object: ObjectReference,
    /// The metric name.
    pub metric_name: String,
    /// When sampled.
    pub timestamp: KubeTime,
    /// The window in seconds, when known.
    #[serde(rename = "window", skip_serializing_if = "Option::is_none")]
    pub window_seconds: Option<i64>,
    /// The value.
    pub value: Quantity,
    /// The metric label selector (`null` when none was given).
    pub selector: Option<LabelSelector>,
}

/// `external.metrics.k8s.io/v1beta1` `ExternalMetricValue`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalMetricValue {
    /// The metric name.
    pub metric_name: String,
    /// The series' labels.
    pub metric_labels: BTreeMap<String, String>,
    /// When sampled.
    pub timestamp: KubeTime,
    /// The window in seconds, when known.
    #[serde(rename = "window", skip_serializing_if = "Option::is_none")]
    pub window_seconds: Option<i64>,
    /// The value.
    pub value: Quantity,
}

/// `metav1.GroupVersionForDiscovery`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupVersionForDiscovery {
    /// `group/version`.
    pub group_version: String,
    /// The version.
    pub version: String,
}

/// `metav1.APIGroup` (kind and apiVersion only when served alone: wrap in [`Typed`]).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiGroup {
    /// The group.
    pub name: String,
    /// Served versions, preferred first.
    pub versions: Vec<GroupVersionForDiscovery>,
    /// The preferred version.
    pub preferred_version: GroupVersionForDiscovery,
}

/// `metav1.APIGroupList`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiGroupList {
    /// `APIGroupList`.
    pub kind: &'static str,
    /// `v1`.
    pub api_version: &'static str,
    /// The groups.
    pub groups: Vec<ApiGroup>,
}

/// `metav1.APIResource` (the fields metrics servers fill).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiResource {
    /// The resource (`pods`).
    pub name: String,
    /// The singular name (empty, as metrics-server).
    pub singular_name: String,
    /// Whether namespaced.
    pub namespaced: bool,
    /// The kind.
    pub kind: String,
    /// The verbs.
    pub verbs: Vec<String>,
}

/// `metav1.APIResourceList`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiResourceList {
    /// `APIResourceList`.
    pub kind: &'static str,
    /// `v1`.
    pub api_version: &'static str,
    /// `group/version`.
    pub group_version: String,
    /// The resources.
    pub resources: Vec<ApiResource>,
}

/// The metadata of an `APIGroupDiscovery` (`{"name", "creationTimestamp": null}`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveryMeta {
    /// The group.
    pub name: String,
    /// Always `null`.
    pub creation_timestamp: (),
}

/// `metav1.GroupVersionKind`.
#[derive(Debug, Clone, Serialize)]
pub struct GroupVersionKind {
    /// The group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind.
    pub kind: String,
}

/// `apidiscovery.k8s.io` `APIResourceDiscovery`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiResourceDiscovery {
    /// The resource.
    pub resource: String,
    /// The kind of its objects.
    pub response_kind: GroupVersionKind,
    /// `Namespaced` or `Cluster`.
    pub scope: &'static str,
    /// The singular name.
    pub singular_resource: String,
    /// The verbs.
    pub verbs: Vec<String>,
}

/// `apidiscovery.k8s.io` `APIVersionDiscovery`.
#[derive(Debug, Clone, Serialize)]
pub struct ApiVersionDiscovery {
    /// The version.
    pub version: String,
    /// The resources (omitted when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ApiResourceDiscovery>,
    /// `Current`.
    pub freshness: &'static str,
}

/// `apidiscovery.k8s.io` `APIGroupDiscovery`.
#[derive(Debug, Clone, Serialize)]
pub struct ApiGroupDiscovery {
    /// The group's name.
    pub metadata: DiscoveryMeta,
    /// Versions, preferred first.
    pub versions: Vec<ApiVersionDiscovery>,
}

/// A Swagger 2.0 document (the fields an empty one needs).
#[derive(Debug, Clone, Serialize)]
pub struct OpenApiV2 {
    /// `2.0`.
    pub swagger: &'static str,
    /// Title and version.
    pub info: OpenApiInfo,
    /// `{}`.
    pub paths: EmptyMeta,
}

/// OpenAPI `info`.
#[derive(Debug, Clone, Serialize)]
pub struct OpenApiInfo {
    /// The title.
    pub title: &'static str,
    /// The version.
    pub version: &'static str,
}

/// The `/openapi/v3` discovery document (`{"paths": {}}`: no group versions).
#[derive(Debug, Clone, Serialize)]
pub struct OpenApiV3Discovery {
    /// Group version path → its document's URL; none.
    pub paths: EmptyMeta,
}
