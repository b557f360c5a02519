//! The control document: what the harness puts for one namespace (one test case) and the stub then
//! answers on the metrics APIs for that namespace, plus the small read-back types of the control
//! API. These types need no server: the harness depends on the library with
//! `default-features = false` and builds the same JSON the stub parses.

use std::collections::BTreeMap;

use hpa_reference::metrics_api::MetricsApis;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The namespace the stub is deployed in.
pub const SYSTEM_NAMESPACE: &str = "hpa-conformance-system";
/// The stub's Service name.
pub const SERVICE_NAME: &str = "hpa-metrics-stub";
/// The stub's Service port name.
pub const SERVICE_PORT_NAME: &str = "https";

/// The Secret (in [`SYSTEM_NAMESPACE`]) that holds the control API's token; the stub reads it
/// from a mounted file (`--control-token-file`), the harness through the API server.
pub const CONTROL_SECRET_NAME: &str = "hpa-metrics-stub-control";
/// The key of the token in [`CONTROL_SECRET_NAME`].
pub const CONTROL_SECRET_KEY: &str = "token";
/// The request header that carries the control token. Not `Authorization`: the API server
/// consumes that header (its own authentication) and removes it before the service proxy
/// forwards a request, while other headers reach the stub as sent.
pub const CONTROL_TOKEN_HEADER: &str = "x-hpa-metrics-stub-token";

/// The metric name the readiness probes ask for (no namespace's document has it).
pub const PROBE_METRIC: &str = "hpa-conformance-probe";

/// One list path per group version the stub serves (`discovery`'s groups; a test there keeps the
/// two lists equal), in `namespace`: what a client asks the API server to see that the aggregator
/// routes every metrics API to the stub. A namespace without a document answers each with an
/// empty list (200), so anything else means the request did not reach the stub (or the stub is
/// not the one registered). Each is `(group/version, path)`.
pub fn probe_paths(namespace: &str) -> Vec<(String, String)> {
    let base = |gv: &str| format!("/apis/{gv}/namespaces/{namespace}");
    [
        ("metrics.k8s.io/v1beta1", "pods".to_string()),
        (
            "custom.metrics.k8s.io/v1beta2",
            format!("pods/*/{PROBE_METRIC}"),
        ),
        (
            "custom.metrics.k8s.io/v1beta1",
            format!("pods/*/{PROBE_METRIC}"),
        ),
        ("external.metrics.k8s.io/v1beta1", PROBE_METRIC.to_string()),
    ]
    .into_iter()
    .map(|(gv, rest)| (gv.to_string(), format!("{}/{rest}", base(gv))))
    .collect()
}

/// The API server path that reaches the stub's control API for `namespace` through the service
/// proxy (`PUT`/`GET`/`DELETE` there act on that namespace's document).
pub fn control_proxy_path(namespace: &str) -> String {
    format!(
        "/api/v1/namespaces/{SYSTEM_NAMESPACE}/services/https:{SERVICE_NAME}:{SERVICE_PORT_NAME}/proxy/control/namespaces/{namespace}"
    )
}

/// A pod's labels.
pub type Labels = BTreeMap<String, String>;

/// Everything the stub answers for one namespace, as one document the harness replaces whole.
///
/// Example:
///
/// ```json
/// {
///   "pods": {"web-1": {"app": "web"}, "web-2": {"app": "web"}},
///   "metrics": {
///     "resource": {"items": [{
///       "metadata": {"name": "web-1"},
///       "timestamp": "2026-01-01T00:00:00Z",
///       "window": "30s",
///       "containers": [{"name": "app", "usage": {"cpu": "250m"}}]
///     }]},
///     "pods": {"rps": {"items": [{"pod": "web-1", "value": "10", "timestamp": "2026-01-01T00:00:00Z"}]}},
///     "object": {"hits": {"value": {"value": "3", "timestamp": "2026-01-01T00:00:00Z"}}},
///     "external": {"queue": {"error": "backend down"}}
///   },
///   "faults": {"external": {"errorCode": 503}}
/// }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ControlDocument {
    /// The namespace's pods: name → labels. A request's `labelSelector` selects among these (a
    /// PodMetrics item or custom per-pod value whose pod is not listed here is matched against the
    /// item's own `metadata.labels`, or no labels).
    #[serde(default)]
    pub pods: BTreeMap<String, Labels>,
    /// What each metrics API answers (the reference's model of the wire answers).
    #[serde(default)]
    pub metrics: MetricsApis,
    /// How errors are delivered, per API.
    #[serde(default)]
    pub faults: Faults,
    /// Scale updates to refuse, by the scale target's name: the stub's admission webhook
    /// ([`ADMISSION_SCALE_PATH`]) denies an UPDATE of that object's `scale` subresource in this
    /// namespace as the fault says.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scale: BTreeMap<String, ScaleFault>,
}

/// The path of the stub's validating admission webhook for scale subresource updates. Open to
/// any caller (the API server presents no client certificate to webhooks): it only answers
/// whether a namespace's document refuses an update.
pub const ADMISSION_SCALE_PATH: &str = "/admission/scale";

/// `GET /control/certificate`: the stub's serving certificate (PEM), which an admission webhook
/// configuration names as its `caBundle` (the certificate is generated at each start).
pub const CERTIFICATE_PATH: &str = "/control/certificate";

/// The name the API server gives the webhook in a denial: `admission webhook "<name>" denied
/// the request: <message>`.
pub const SCALE_WEBHOOK_NAME: &str = "scale-faults.hpa-conformance.dev";

/// The field manager of the harness's own scale writes (a case's manual scaling), which the
/// webhook lets through: a case's scale errors are the controller's alone.
pub const LANE_FIELD_MANAGER: &str = "hpa-conformance-lane";

/// The start of every message of an update the stub's webhook refused (the API server's words,
/// `k8s.io/apiserver` `webhookerrors.ToStatusErr`), before the fault's own message.
pub fn denial_prefix() -> String {
    format!("admission webhook \"{SCALE_WEBHOOK_NAME}\" denied the request: ")
}

/// How updates of one object's scale are refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScaleFault {
    /// The denial's message (the API server puts the webhook's words before it).
    pub update_error: String,
    /// The denial's `reason` (`Conflict` makes clients see a conflict); none by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_error_reason: Option<String>,
    /// The denial's HTTP status (400–599): default 409 with the reason `Conflict`, else 400 (the
    /// API server's own default for a denial).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_error_code: Option<u16>,
    /// How many updates to refuse before letting them through (none: every one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_failures: Option<u32>,
    /// When the fault was set (any number the harness chooses): a document with the same fault
    /// but another `armedAt` starts counting `updateFailures` again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub armed_at: Option<i64>,
}

impl ScaleFault {
    /// The HTTP status of a denial.
    pub fn code(&self) -> u16 {
        self.update_error_code
            .unwrap_or(match self.update_error_reason.as_deref() {
                Some("Conflict") => 409,
                _ => 400,
            })
    }
}

/// The three metrics APIs, for fault settings and request bookkeeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Api {
    /// `metrics.k8s.io` (PodMetrics).
    Resource,
    /// `custom.metrics.k8s.io` (Pods and Object metrics).
    Custom,
    /// `external.metrics.k8s.io`.
    External,
}

/// Fault settings of each API.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Faults {
    /// `metrics.k8s.io`.
    #[serde(default, skip_serializing_if = "ApiFault::is_default")]
    pub resource: ApiFault,
    /// `custom.metrics.k8s.io`.
    #[serde(default, skip_serializing_if = "ApiFault::is_default")]
    pub custom: ApiFault,
    /// `external.metrics.k8s.io`.
    #[serde(default, skip_serializing_if = "ApiFault::is_default")]
    pub external: ApiFault,
}

impl Faults {
    /// The settings of one API.
    pub fn of(&self, api: Api) -> &ApiFault {
        match api {
            Api::Resource => &self.resource,
            Api::Custom => &self.custom,
            Api::External => &self.external,
        }
    }
}

/// How one API delivers its answers. Faults apply to the metric paths only, never to discovery or
/// health paths (the APIService stays Available).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiFault {
    /// `serve` (default) answers from the document; `unregistered` answers every metric path of
    /// this API in this namespace like an API server path that does not exist: HTTP 404,
    /// `text/plain`, `404 page not found` (so client-go reports `the server could not find the
    /// requested resource (get pods.metrics.k8s.io)`).
    #[serde(default, skip_serializing_if = "FaultMode::is_serve")]
    pub mode: FaultMode,
    /// The HTTP status of an answer that has an `error` (400–599). Default 500, as an aggregated
    /// API server answers an error that is not an API status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<u16>,
    /// The `reason` of the error Status. Default: none for 500 (`Unknown`, as upstream's apiserver
    /// writes a plain error), otherwise the reason apimachinery gives that code (`NotFound`,
    /// `ServiceUnavailable`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
}

impl ApiFault {
    /// The HTTP status of error answers.
    pub fn code(&self) -> u16 {
        self.error_code.unwrap_or(500)
    }

    fn is_default(&self) -> bool {
        *self == ApiFault::default()
    }
}

/// Whether an API is served or answers as if not registered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum FaultMode {
    /// Answer from the document.
    #[default]
    Serve,
    /// HTTP 404 `404 page not found` (text/plain) on every metric path.
    Unregistered,
}

impl FaultMode {
    fn is_serve(&self) -> bool {
        *self == FaultMode::Serve
    }
}

/// A control document the stub refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// An error code outside 400–599.
    #[error("{field} {code} is not an HTTP error status (400-599)")]
    ErrorCode {
        /// The field (`faults.custom.errorCode`, `scale.web.updateErrorCode`).
        field: String,
        /// The code.
        code: u16,
    },
    /// A pod or metric name that cannot be a path segment.
    #[error("{what} name {name:?} is empty or contains '/'")]
    Name {
        /// What is named.
        what: &'static str,
        /// The name.
        name: String,
    },
}

fn check_code(field: impl Fn() -> String, code: u16) -> Result<(), ControlError> {
    if !(400..=599).contains(&code) {
        return Err(ControlError::ErrorCode {
            field: field(),
            code,
        });
    }
    Ok(())
}

fn check_name(what: &'static str, name: &str) -> Result<(), ControlError> {
    if name.is_empty() || name.contains('/') {
        return Err(ControlError::Name {
            what,
            name: name.to_string(),
        });
    }
    Ok(())
}

impl ControlDocument {
    /// Checks what serde cannot: error codes are HTTP error statuses, names are path segments.
    pub fn validate(&self) -> Result<(), ControlError> {
        for (api, fault) in [
            ("resource", &self.faults.resource),
            ("custom", &self.faults.custom),
            ("external", &self.faults.external),
        ] {
            check_code(|| format!("faults.{api}.errorCode"), fault.code())?;
        }
        for (name, fault) in &self.scale {
            check_name("scale target", name)?;
            check_code(|| format!("scale.{name}.updateErrorCode"), fault.code())?;
        }
        for name in self.pods.keys() {
            check_name("pod", name)?;
        }
        for name in self
            .metrics
            .pods
            .keys()
            .chain(self.metrics.object.keys())
            .chain(self.metrics.external.keys())
        {
            check_name("metric", name)?;
        }
        Ok(())
    }
}

/// `GET /control/namespaces`: the namespaces that have a document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NamespaceList {
    /// Sorted namespace names.
    pub namespaces: Vec<String>,
}

/// `GET /control/namespaces/{ns}/requests`: how often each metric path of the namespace was
/// requested since the stub started (or the counts were last reset with `DELETE`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RequestCounts {
    /// Request target (path and, when present, `?query` exactly as received) → count.
    pub requests: BTreeMap<String, u64>,
}

/// `GET /control/request-times`: when each namespace's metric paths were last requested (every
/// namespace at once: one poll for a benchmark of a thousand HPAs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RequestTimes {
    /// Namespace → the instants (Unix milliseconds, oldest first) of its last
    /// [`REQUEST_TIMES_KEPT`] metric requests.
    pub namespaces: BTreeMap<String, Vec<i64>>,
}

/// How many request instants the stub keeps per namespace.
pub const REQUEST_TIMES_KEPT: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example_parses_and_validates() {
        let text = r#"{
          "pods": {"web-1": {"app": "web"}, "web-2": {"app": "web"}},
          "metrics": {
            "resource": {"items": [{
              "metadata": {"name": "web-1"},
              "timestamp": "2026-01-01T00:00:00Z",
              "window": "30s",
              "containers": [{"name": "app", "usage": {"cpu": "250m"}}]
            }]},
            "pods": {"rps": {"items": [{"pod": "web-1", "value": "10", "timestamp": "2026-01-01T00:00:00Z"}]}},
            "object": {"hits": {"value": {"value": "3", "timestamp": "2026-01-01T00:00:00Z"}}},
            "external": {"queue": {"error": "backend down"}}
          },
          "faults": {"external": {"errorCode": 503}}
        }"#;
        let doc: ControlDocument = serde_json::from_str(text).unwrap();
        doc.validate().unwrap();
        assert_eq!(doc.faults.external.code(), 503);
        assert_eq!(doc.faults.resource.code(), 500);
        assert_eq!(doc.metrics.resource.items.len(), 1);
        assert_eq!(
            doc.metrics.external["queue"].error.as_deref(),
            Some("backend down")
        );
    }

    #[test]
    fn unknown_fields_and_bad_codes_are_refused() {
        assert!(serde_json::from_str::<ControlDocument>(r#"{"metric": {}}"#).is_err());
        assert!(
            serde_json::from_str::<ControlDocument>(r#"{"faults": {"custom": {"mode": "gone"}}}"#)
                .is_err()
        );
        let doc: ControlDocument =
            serde_json::from_str(r#"{"faults": {"custom": {"errorCode": 200}}}"#).unwrap();
        assert_eq!(
            doc.validate().unwrap_err().to_string(),
            "faults.custom.errorCode 200 is not an HTTP error status (400-599)"
        );
        let doc: ControlDocument = serde_json::from_str(
            r#"{"scale": {"web": {"updateError": "no", "updateErrorCode": 302}}}"#,
        )
        .unwrap();
        assert_eq!(
            doc.validate().unwrap_err().to_string(),
            "scale.web.updateErrorCode 302 is not an HTTP error status (400-599)"
        );
        let doc: ControlDocument =
            serde_json::from_str(r#"{"scale": {"web": {"updateError": "no"}}}"#).unwrap();
        doc.validate().unwrap();
        assert!(
            serde_json::from_str::<ControlDocument>(r#"{"scale": {"web": {"updateErorr": "x"}}}"#)
                .is_err()
        );
    }

    #[test]
    fn the_proxy_path_names_the_service_port() {
        assert_eq!(
            control_proxy_path("case-1"),
            "/api/v1/namespaces/hpa-conformance-system/services/https:hpa-metrics-stub:https/proxy/control/namespaces/case-1"
        );
    }
}
