//! Create-time validation of `autoscaling/v2` HorizontalPodAutoscaler objects,
//! mirroring what the Kubernetes API server checks
//! (`pkg/apis/autoscaling/validation`), as a pure function.
//!
//! [`validate_hpa`] reports every problem it finds, each as a [`FieldError`]
//! whose path is written the way a user writes the object (`spec.metrics[0].
//! resource.target.averageUtilization`) and whose message reads like the API
//! server's `field.Error` text (`Required value`, `Invalid value: 0: must be
//! greater than 0`, `Unsupported value: "Foo": supported values: ...`).
//!
//! Errors come in upstream's order (validateHorizontalPodAutoscalerSpec): `metadata`, then
//! `spec.minReplicas`, `spec.maxReplicas`, `spec.scaleTargetRef`, `spec.metrics[i]`, the
//! scale-to-zero rule on `spec.metrics`, and `spec.behavior.scaleUp` / `scaleDown`, each in
//! field order. The messages of `docs-max-replicas-required`, `docs-hpa-name-must-be-dns-subdomain`
//! and `ht-zero-min-replicas-cpu-only-rejected` were checked on a v1.36.4 API server (kind).
//!
//! Deliberate differences from the API server:
//! - Defaults are taken into account where the API server applies them
//!   before validating: an unset `minReplicas` counts as 1, and a scaling
//!   rules object without `policies` is valid (only an explicit empty list
//!   is rejected).
//! - `metadata.namespace` is not required (the API server takes it from the
//!   request path), and labels, annotations and the like are not checked.
//! - Like the API server, a metric target's type is only checked to be one of
//!   `Utilization`, `Value`, `AverageValue`, and each source only that it has
//!   the fields it uses: a type the source does not read (`Value` for a
//!   Resource metric) or a type without its own field is accepted. Such a
//!   target is what [`unusable_targets`] finds, for `lint` to warn about.
//!   `just kind-validation` checks every rule word for word on a real API
//!   server, with no deliberate difference.
//! - A metric's sources are only checked when the metric type is valid, and
//!   duplicate reports of the same problem are not repeated.
//! - Quantities are checked with the exact sign from [`crate::quantity`], so
//!   `tolerance: "-1n"` is negative and `averageValue: "1e400"` is positive.

use std::fmt;

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HPAScalingPolicy, HPAScalingRules, HorizontalPodAutoscaler,
    MetricIdentifier, MetricSpec, MetricTarget,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::quantity::signum;

/// Options that change validation, mirroring apiserver's behaviour under
/// feature gates and per release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidationOptions {
    /// The `HPAScaleToZero` feature gate: allows `minReplicas: 0` (which
    /// still requires an Object or External metric).
    pub scale_to_zero_enabled: bool,
    /// How the release words and orders `maxReplicas`'s own bounds
    /// (`KubernetesVersion::replica_bounds`).
    pub replica_bounds: ReplicaBounds,
    /// The `HPAConfigurableTolerance` feature gate in the API server: off (and before 1.33, where
    /// the field does not exist) a scaling rule's `tolerance` is dropped before validation, so a
    /// negative one is accepted (and not stored).
    pub configurable_tolerance: bool,
}

/// How an API server reports `maxReplicas` below 1: three eras, each seen on a real API server
/// (kind-validation on v1.34.4, v1.36.4 and v1.37.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaBounds {
    /// 1.32–1.35: `Invalid value: N: must be greater than 0` for 0 and below, in spec order.
    GreaterThanZero,
    /// 1.36: in spec order, 0 is `Required value: must be set and greater than 0` and below 0
    /// `Invalid value: N: must be greater than or equal to 1` (the checks marked as covered by
    /// declarative validation in 1.36's validation.go).
    RequiredOrAtLeastOne,
    /// 1.37: validated declaratively, so these errors (and minReplicas's own bound) come after
    /// every handwritten one, and 0 is a bare `Required value`.
    DeclarativeLast,
}

impl Default for ValidationOptions {
    /// 1.36's messages, scale-to-zero off, tolerance validated.
    fn default() -> Self {
        ValidationOptions {
            scale_to_zero_enabled: false,
            replica_bounds: ReplicaBounds::RequiredOrAtLeastOne,
            configurable_tolerance: true,
        }
    }
}

impl ValidationOptions {
    /// The options of a release's API server with the `HPAScaleToZero` gate as given and the
    /// release's default `HPAConfigurableTolerance`.
    pub fn of(version: crate::KubernetesVersion, scale_to_zero_enabled: bool) -> Self {
        ValidationOptions {
            scale_to_zero_enabled,
            replica_bounds: version.replica_bounds(),
            configurable_tolerance: version.default_gates().hpa_configurable_tolerance,
        }
    }

    /// The options of a release's API server running `gates` (a gate the release lacks counts
    /// as off).
    pub fn with_gates(version: crate::KubernetesVersion, gates: &crate::FeatureGates) -> Self {
        ValidationOptions {
            scale_to_zero_enabled: gates.hpa_scale_to_zero,
            replica_bounds: version.replica_bounds(),
            configurable_tolerance: gates.hpa_configurable_tolerance
                && version.has_gate("HPAConfigurableTolerance"),
        }
    }
}

/// One validation failure: the field path in the object as a user writes it
/// (dotted, with `[i]` indexes, e.g.
/// `"spec.behavior.scaleDown.policies[0].periodSeconds"`) and a one-line
/// reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Path of the offending field.
    pub path: String,
    /// Why the field is invalid, e.g. `Invalid value: 0: must be greater than 0`.
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Largest allowed `stabilizationWindowSeconds` (one hour).
const MAX_STABILIZATION_WINDOW_SECONDS: i32 = 3600;
/// Largest allowed scaling policy `periodSeconds` (30 minutes).
const MAX_PERIOD_SECONDS: i32 = 1800;

/// Metric source types, sorted as the API server lists them.
const METRIC_SOURCE_TYPES: &[&str] = &[
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];
/// Values of `selectPolicy`, sorted as the API server lists them (`sets.String.List()`).
const SELECT_POLICIES: &[&str] = &["Disabled", "Max", "Min"];
/// Types of scaling policies, sorted.
const POLICY_TYPES: &[&str] = &["Percent", "Pods"];

const UTILIZATION: &str = "Utilization";
const VALUE: &str = "Value";
const AVERAGE_VALUE: &str = "AverageValue";

/// Collects errors in the order they are found.
#[derive(Default)]
struct Errors(Vec<FieldError>);

impl Errors {
    fn push(&mut self, path: impl Into<String>, message: String) {
        self.0.push(FieldError {
            path: path.into(),
            message,
        });
    }

    /// `field.Required`: "Required value" with an optional detail.
    fn required(&mut self, path: impl Into<String>, detail: &str) {
        let message = if detail.is_empty() {
            "Required value".to_owned()
        } else {
            format!("Required value: {detail}")
        };
        self.push(path, message);
    }

    /// `field.Invalid`: the value is already rendered (quoted for strings).
    fn invalid(&mut self, path: impl Into<String>, value: impl fmt::Display, detail: &str) {
        self.push(path, format!("Invalid value: {value}: {detail}"));
    }

    /// `field.NotSupported` for a string value.
    fn not_supported(&mut self, path: impl Into<String>, value: &str, supported: &[&str]) {
        let list = supported
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        self.push(
            path,
            format!("Unsupported value: {value:?}: supported values: {list}"),
        );
    }

    /// `field.Forbidden`.
    fn forbidden(&mut self, path: impl Into<String>, detail: &str) {
        self.push(path, format!("Forbidden: {detail}"));
    }
}

/// The API server's 422 message for an HPA named `name` with these errors: the field errors
/// joined as apimachinery's `NewInvalid` joins them (one alone, or `[e1, e2]`).
pub fn invalid_message(name: &str, errors: &[FieldError]) -> String {
    let list = errors.iter().map(ToString::to_string).collect::<Vec<_>>();
    let detail = if list.len() == 1 {
        list[0].clone()
    } else {
        format!("[{}]", list.join(", "))
    };
    format!("HorizontalPodAutoscaler.autoscaling {name:?} is invalid: {detail}")
}

/// Validates an autoscaling/v2 HorizontalPodAutoscaler as the API server
/// would on create; returns every error found, in document order (empty if
/// the object is valid).
pub fn validate_hpa(hpa: &HorizontalPodAutoscaler, opts: ValidationOptions) -> Vec<FieldError> {
    let mut errs = Errors::default();
    validate_metadata(hpa, &mut errs);

    // In upstream's order (validateHorizontalPodAutoscalerSpec): minReplicas, maxReplicas, the
    // two against each other, scaleTargetRef, the metrics (then the scale-to-zero rule on the
    // metrics list), behavior.
    // From 1.37 the replica counts' own bounds are declarative: checked the same, reported after
    // every handwritten error (a v1.37.2 API server, kind-validation).
    let spec = &hpa.spec;
    let metrics = spec.metrics.as_deref().unwrap_or_default();
    let mut bounds = Errors::default();
    if let Some(min) = spec.min_replicas {
        let lower_bound = if opts.scale_to_zero_enabled { 0 } else { 1 };
        if min < lower_bound {
            bounds.invalid(
                "spec.minReplicas",
                min,
                &format!("must be greater than or equal to {lower_bound}"),
            );
        }
    }
    match opts.replica_bounds {
        _ if spec.max_replicas >= 1 => {}
        ReplicaBounds::GreaterThanZero => {
            bounds.invalid(
                "spec.maxReplicas",
                spec.max_replicas,
                "must be greater than 0",
            );
        }
        ReplicaBounds::RequiredOrAtLeastOne | ReplicaBounds::DeclarativeLast
            if spec.max_replicas == 0 =>
        {
            let detail = if opts.replica_bounds == ReplicaBounds::DeclarativeLast {
                ""
            } else {
                "must be set and greater than 0"
            };
            bounds.required("spec.maxReplicas", detail);
        }
        ReplicaBounds::RequiredOrAtLeastOne | ReplicaBounds::DeclarativeLast => {
            bounds.invalid(
                "spec.maxReplicas",
                spec.max_replicas,
                "must be greater than or equal to 1",
            );
        }
    }
    let declarative = opts.replica_bounds == ReplicaBounds::DeclarativeLast;
    if !declarative {
        errs.0.append(&mut bounds.0);
    }
    // The API server defaults an unset minReplicas to 1 before validating.
    if spec.max_replicas < spec.min_replicas.unwrap_or(1) {
        errs.invalid(
            "spec.maxReplicas",
            spec.max_replicas,
            "must be greater than or equal to `minReplicas`",
        );
    }
    validate_object_reference(&spec.scale_target_ref, "spec.scaleTargetRef", &mut errs);

    for (i, metric) in metrics.iter().enumerate() {
        validate_metric(metric, &format!("spec.metrics[{i}]"), &mut errs);
    }
    let has_object_or_external = metrics
        .iter()
        .any(|m| m.type_ == "Object" || m.type_ == "External");
    if spec.min_replicas == Some(0) && !has_object_or_external {
        errs.forbidden(
            "spec.metrics",
            "must specify at least one Object or External metric to support scaling to zero replicas",
        );
    }

    if let Some(behavior) = &spec.behavior {
        if let Some(rules) = &behavior.scale_up {
            validate_scaling_rules(rules, "spec.behavior.scaleUp", opts, &mut errs);
        }
        if let Some(rules) = &behavior.scale_down {
            validate_scaling_rules(rules, "spec.behavior.scaleDown", opts, &mut errs);
        }
    }
    errs.0.append(&mut bounds.0);
    errs.0
}

/// `metadata.name` must be a DNS-1123 subdomain; an empty name is accepted
/// only when `generateName` is set (the API server then generates the name).
fn validate_metadata(hpa: &HorizontalPodAutoscaler, errs: &mut Errors) {
    let meta = &hpa.metadata;
    let generate_name = meta.generate_name.as_deref().unwrap_or_default();
    if !generate_name.is_empty() {
        // A prefix may end in '-': the generated suffix follows it.
        let masked = match generate_name.strip_suffix('-') {
            Some(prefix) => format!("{prefix}a"),
            None => generate_name.to_owned(),
        };
        for msg in dns1123_subdomain_errors(&masked) {
            errs.invalid("metadata.generateName", format!("{generate_name:?}"), msg);
        }
    }
    match meta.name.as_deref().unwrap_or_default() {
        "" if generate_name.is_empty() => {
            errs.required("metadata.name", "name or generateName is required");
        }
        "" => {}
        name => {
            for msg in dns1123_subdomain_errors(name) {
                errs.invalid("metadata.name", format!("{name:?}"), msg);
            }
        }
    }
}

/// Problems making `s` an invalid lowercase RFC 1123 subdomain.
fn dns1123_subdomain_errors(s: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    if s.len() > 253 {
        out.push("must be no more than 253 characters");
    }
    if !s.split('.').all(is_dns1123_label) {
        out.push(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character (e.g. \
             'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        );
    }
    out
}

/// Whether `s` matches `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (length not checked).
fn is_dns1123_label(s: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            alnum(first) && alnum(last) && bytes.iter().all(|&b| alnum(b) || b == b'-')
        }
        _ => false,
    }
}

/// Problems making `s` an invalid lowercase RFC 1123 label.
fn dns1123_label_errors(s: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push("must be no more than 63 characters");
    }
    if !is_dns1123_label(s) {
        out.push(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \
             '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or \
             '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        );
    }
    out
}

/// Problems making `s` unusable as one segment of a URL path.
fn path_segment_errors(s: &str) -> Vec<&'static str> {
    match s {
        "." => vec!["may not be '.'"],
        ".." => vec!["may not be '..'"],
        _ => [('/', "may not contain '/'"), ('%', "may not contain '%'")]
            .into_iter()
            .filter(|&(c, _)| s.contains(c))
            .map(|(_, msg)| msg)
            .collect(),
    }
}

/// A non-empty name that is a valid path segment; `required_detail` is the
/// detail of the "Required value" error when it is empty.
fn validate_path_segment(value: &str, path: &str, required_detail: &str, errs: &mut Errors) {
    if value.is_empty() {
        errs.required(path, required_detail);
    } else {
        for msg in path_segment_errors(value) {
            errs.invalid(path, format!("{value:?}"), msg);
        }
    }
}

/// `kind` and `name` are required path segments; `apiVersion` is optional.
fn validate_object_reference(r: &CrossVersionObjectReference, path: &str, errs: &mut Errors) {
    validate_path_segment(&r.kind, &format!("{path}.kind"), "", errs);
    validate_path_segment(&r.name, &format!("{path}.name"), "", errs);
}

/// A metric name is a required path segment.
fn validate_metric_identifier(id: &MetricIdentifier, path: &str, errs: &mut Errors) {
    validate_path_segment(
        &id.name,
        &format!("{path}.name"),
        "must specify a metric name",
        errs,
    );
}

/// Validates one entry of `spec.metrics`: a supported type, the matching
/// source populated and valid, and no other source set.
fn validate_metric(metric: &MetricSpec, path: &str, errs: &mut Errors) {
    let ty = metric.type_.as_str();
    if ty.is_empty() {
        errs.required(format!("{path}.type"), "must specify a metric source type");
        return;
    }
    if !METRIC_SOURCE_TYPES.contains(&ty) {
        errs.not_supported(format!("{path}.type"), ty, METRIC_SOURCE_TYPES);
        return;
    }

    // (field name, populated?) in field order.
    let sources = [
        ("object", metric.object.is_some()),
        ("pods", metric.pods.is_some()),
        ("resource", metric.resource.is_some()),
        ("containerResource", metric.container_resource.is_some()),
        ("external", metric.external.is_some()),
    ];
    let expected = match ty {
        "Object" => "object",
        "Pods" => "pods",
        "Resource" => "resource",
        "ContainerResource" => "containerResource",
        _ => "external",
    };
    let source_path = format!("{path}.{expected}");
    let populated = match ty {
        "Object" => metric.object.as_ref().map(|src| {
            validate_object_reference(
                &src.described_object,
                &format!("{source_path}.describedObject"),
                errs,
            );
            validate_metric_identifier(&src.metric, &format!("{source_path}.metric"), errs);
            validate_value_target(
                &src.target,
                &format!("{source_path}.target"),
                ValueTargetRules::OBJECT,
                errs,
            );
        }),
        "Pods" => metric.pods.as_ref().map(|src| {
            validate_metric_identifier(&src.metric, &format!("{source_path}.metric"), errs);
            let target_path = format!("{source_path}.target");
            validate_target(&src.target, &target_path, errs);
            if src.target.average_value.is_none() {
                errs.required(
                    format!("{target_path}.averageValue"),
                    "must specify a positive target averageValue",
                );
            }
        }),
        "Resource" => metric.resource.as_ref().map(|src| {
            if src.name.is_empty() {
                errs.required(
                    format!("{source_path}.name"),
                    "must specify a resource name",
                );
            }
            validate_resource_target(&src.target, &format!("{source_path}.target"), errs);
        }),
        "ContainerResource" => metric.container_resource.as_ref().map(|src| {
            let name_path = format!("{source_path}.name");
            if src.name.is_empty() {
                errs.required(name_path, "must specify a resource name");
            } else {
                for msg in container_resource_name_errors(&src.name) {
                    errs.invalid(&name_path, format!("{:?}", src.name), &msg);
                }
            }
            let container_path = format!("{source_path}.container");
            if src.container.is_empty() {
                errs.required(container_path, "must specify a container");
            } else {
                for msg in dns1123_label_errors(&src.container) {
                    errs.invalid(&container_path, format!("{:?}", src.container), msg);
                }
            }
            validate_resource_target(&src.target, &format!("{source_path}.target"), errs);
        }),
        _ => metric.external.as_ref().map(|src| {
            validate_metric_identifier(&src.metric, &format!("{source_path}.metric"), errs);
            validate_value_target(
                &src.target,
                &format!("{source_path}.target"),
                ValueTargetRules::EXTERNAL,
                errs,
            );
        }),
    };
    if populated.is_none() {
        errs.required(
            source_path,
            "must populate information for the given metric source",
        );
    }
    for (name, present) in sources {
        if present && name != expected {
            errs.forbidden(
                format!("{path}.{name}"),
                "must populate the given metric source only",
            );
        }
    }
}

/// Resource names the API server knows (core's `standardResources`): a one-segment resource name
/// must be one of these (or a quota huge-page name) to be valid at all.
const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

/// Resources a container can request (core's `standardContainerResources`), besides huge pages.
const CONTAINER_RESOURCES: &[&str] = &["cpu", "memory", "ephemeral-storage"];

/// Problems with a ContainerResource metric's resource name, as core/v1's
/// `ValidateContainerResourceName` finds them: a qualified name; with one segment, a standard
/// resource (`must be a standard resource type or fully qualified`, skipped when the name is not
/// even qualified) that a container can request; with a prefix outside `kubernetes.io/`, an
/// extended resource name (no `requests.` prefix, and still qualified with one).
fn container_resource_name_errors(name: &str) -> Vec<String> {
    let mut errs = crate::selector::label_key_problems(name);
    let huge_pages = name.starts_with("hugepages-");
    if !name.contains('/') {
        let standard = STANDARD_RESOURCES.contains(&name)
            || huge_pages
            || name.starts_with("requests.hugepages-");
        if errs.is_empty() && !standard {
            errs.push("must be a standard resource type or fully qualified".into());
        }
        if !(CONTAINER_RESOURCES.contains(&name) || huge_pages) {
            errs.push("must be a standard resource for containers".into());
        }
    } else if !name.contains("kubernetes.io/") {
        let extended = !name.starts_with("requests.")
            && crate::selector::label_key_problems(&format!("requests.{name}")).is_empty();
        if !extended {
            errs.push("doesn't follow extended resource name standard".into());
        }
    }
    errs
}

/// Checks common to every metric target (upstream's `validateMetricTarget`): a type is set and is
/// one of `Utilization`, `Value`, `AverageValue` — an empty type is both missing and not one of
/// them, two errors as the API server gives — quantities parse and are positive, utilization is at
/// least 1. Which type a metric source can use is not checked here (the API server does not):
/// see [`unusable_targets`].
fn validate_target(target: &MetricTarget, path: &str, errs: &mut Errors) {
    let ty = target.type_.as_str();
    if ty.is_empty() {
        errs.required(format!("{path}.type"), "must specify a metric target type");
    }
    if ![UTILIZATION, VALUE, AVERAGE_VALUE].contains(&ty) {
        errs.invalid(
            format!("{path}.type"),
            format!("{ty:?}"),
            "must be either Utilization, Value, or AverageValue",
        );
    }
    if let Some(value) = &target.value {
        validate_positive_quantity(value, &format!("{path}.value"), errs);
    }
    if let Some(value) = &target.average_value {
        validate_positive_quantity(value, &format!("{path}.averageValue"), errs);
    }
    if let Some(utilization) = target.average_utilization
        && utilization < 1
    {
        errs.invalid(
            format!("{path}.averageUtilization"),
            utilization,
            "must be greater than 0",
        );
    }
}

/// Resource and ContainerResource targets: `averageUtilization` or `averageValue`, not both.
fn validate_resource_target(target: &MetricTarget, path: &str, errs: &mut Errors) {
    validate_target(target, path, errs);
    match (&target.average_utilization, &target.average_value) {
        (None, None) => errs.required(
            format!("{path}.averageUtilization"),
            "must set either a target raw value or a target utilization",
        ),
        (Some(_), Some(_)) => errs.forbidden(
            format!("{path}.averageValue"),
            "may not set both a target raw value and a target utilization",
        ),
        _ => {}
    }
}

/// How an Object or External target's value fields are checked.
#[derive(Clone, Copy)]
struct ValueTargetRules {
    /// Detail when neither `value` nor `averageValue` is set.
    missing: &'static str,
    /// Detail when both are set, if that is an error.
    both: Option<&'static str>,
}

impl ValueTargetRules {
    const OBJECT: Self = Self {
        missing: "must set either a target value or averageValue",
        both: None,
    };
    const EXTERNAL: Self = Self {
        missing: "must set either a target value for metric or a per-pod target",
        both: Some("may not set both a target value for metric and a per-pod target"),
    };
}

/// Object and External targets: `value` or `averageValue` (External: not both).
fn validate_value_target(
    target: &MetricTarget,
    path: &str,
    rules: ValueTargetRules,
    errs: &mut Errors,
) {
    validate_target(target, path, errs);
    let (has_value, has_average) = (target.value.is_some(), target.average_value.is_some());
    if !has_value && !has_average {
        errs.required(format!("{path}.averageValue"), rules.missing);
    }
    if has_value
        && has_average
        && let Some(detail) = rules.both
    {
        errs.forbidden(format!("{path}.value"), detail);
    }
}

/// A metric target the API server accepts but upstream's controller cannot use as written: a
/// target type its metric source does not read (`Value` for a Resource metric, `Utilization` for a
/// Pods, Object or External one), or a type whose field is not set (`type: AverageValue` with only
/// `averageUtilization`). Upstream's controller then reads whichever field is set, or reports
/// an invalid metric source; `lint` warns about these, and the API server (so [`validate_hpa`])
/// accepts them.
pub fn unusable_targets(hpa: &HorizontalPodAutoscaler) -> Vec<FieldError> {
    let mut errs = Errors::default();
    let metrics = hpa.spec.metrics.as_deref();
    for (i, metric) in metrics.unwrap_or_default().iter().enumerate() {
        let (source, target, allowed): (&str, _, &[&str]) = match metric.type_.as_str() {
            "Resource" => (
                "resource",
                metric.resource.as_ref().map(|s| &s.target),
                &[AVERAGE_VALUE, UTILIZATION],
            ),
            "ContainerResource" => (
                "containerResource",
                metric.container_resource.as_ref().map(|s| &s.target),
                &[AVERAGE_VALUE, UTILIZATION],
            ),
            "Pods" => (
                "pods",
                metric.pods.as_ref().map(|s| &s.target),
                &[AVERAGE_VALUE],
            ),
            "Object" => (
                "object",
                metric.object.as_ref().map(|s| &s.target),
                &[AVERAGE_VALUE, VALUE],
            ),
            "External" => (
                "external",
                metric.external.as_ref().map(|s| &s.target),
                &[AVERAGE_VALUE, VALUE],
            ),
            _ => continue,
        };
        let Some(target) = target else { continue };
        let path = format!("spec.metrics[{i}].{source}.target");
        let ty = target.type_.as_str();
        if !allowed.contains(&ty) {
            if [UTILIZATION, VALUE, AVERAGE_VALUE].contains(&ty) {
                errs.not_supported(format!("{path}.type"), ty, allowed);
            }
            continue;
        }
        let (field, set) = match ty {
            UTILIZATION => ("averageUtilization", target.average_utilization.is_some()),
            VALUE => ("value", target.value.is_some()),
            _ => ("averageValue", target.average_value.is_some()),
        };
        if !set {
            errs.required(
                format!("{path}.{field}"),
                &format!("must set {field} when the target type is {ty}"),
            );
        }
    }
    errs.0
}

/// Parses a quantity field, reporting a syntax error at `path`; returns the
/// exact sign of its value (`-1`, `0` or `1`).
///
/// The sign is exact even where the milli-value is not: `"-1n"` rounds to a
/// milli-value of 0 but is negative, and `"1e400"` is a valid (positive)
/// quantity although its milli-value does not fit an `i64`.
fn quantity_sign(q: &Quantity, path: &str, errs: &mut Errors) -> Option<i32> {
    match signum(&q.0) {
        Ok(sign) => Some(sign),
        Err(e) => {
            errs.invalid(path, format!("{:?}", q.0), &e.to_string());
            None
        }
    }
}

/// A target quantity must parse and be strictly positive. The error quotes the quantity as the
/// API server prints it (`String()`: `"."` is `"0"`, `"-0.1"` is `"-100m"`).
fn validate_positive_quantity(q: &Quantity, path: &str, errs: &mut Errors) {
    if quantity_sign(q, path, errs).is_some_and(|sign| sign != 1) {
        errs.invalid(path, shown_quantity(q), "must be positive");
    }
}

/// One direction of `spec.behavior`.
fn validate_scaling_rules(
    rules: &HPAScalingRules,
    path: &str,
    opts: ValidationOptions,
    errs: &mut Errors,
) {
    if let Some(window) = rules.stabilization_window_seconds {
        let window_path = format!("{path}.stabilizationWindowSeconds");
        if window < 0 {
            errs.invalid(
                &window_path,
                window,
                "must be greater than or equal to zero",
            );
        }
        if window > MAX_STABILIZATION_WINDOW_SECONDS {
            errs.invalid(
                &window_path,
                window,
                &format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"),
            );
        }
    }
    if let Some(select) = &rules.select_policy
        && !SELECT_POLICIES.contains(&select.as_str())
    {
        errs.not_supported(format!("{path}.selectPolicy"), select, SELECT_POLICIES);
    }
    // An omitted list is defaulted by the API server; an empty one is not.
    if let Some(policies) = &rules.policies {
        if policies.is_empty() {
            errs.required(
                format!("{path}.policies"),
                "must specify at least one Policy",
            );
        }
        for (i, policy) in policies.iter().enumerate() {
            validate_scaling_policy(policy, &format!("{path}.policies[{i}]"), errs);
        }
    }
    // Without HPAConfigurableTolerance the API server drops the field before validating it.
    if let Some(tolerance) = rules
        .tolerance
        .as_ref()
        .filter(|_| opts.configurable_tolerance)
    {
        let tolerance_path = format!("{path}.tolerance");
        if quantity_sign(tolerance, &tolerance_path, errs).is_some_and(|sign| sign < 0) {
            errs.invalid(
                &tolerance_path,
                shown_quantity(tolerance),
                "must be greater than or equal to 0",
            );
        }
    }
}

/// A quantity as the API server prints it in a field error: quoted, as `Quantity.String()` gives
/// it ([`crate::quantity::canonical`]: `"-0.1"` is `"-100m"`, `"."` is `"0"`); as written if it
/// does not parse (then its own error is reported too).
fn shown_quantity(q: &Quantity) -> String {
    let shown = crate::quantity::canonical(&q.0).unwrap_or_else(|_| q.0.clone());
    format!("{shown:?}")
}

/// One scaling policy: known type, positive value, period in `1..=1800`.
fn validate_scaling_policy(policy: &HPAScalingPolicy, path: &str, errs: &mut Errors) {
    if !POLICY_TYPES.contains(&policy.type_.as_str()) {
        errs.not_supported(format!("{path}.type"), &policy.type_, POLICY_TYPES);
    }
    if policy.value <= 0 {
        errs.invalid(
            format!("{path}.value"),
            policy.value,
            "must be greater than zero",
        );
    }
    let period_path = format!("{path}.periodSeconds");
    if policy.period_seconds <= 0 {
        errs.invalid(
            &period_path,
            policy.period_seconds,
            "must be greater than zero",
        );
    }
    if policy.period_seconds > MAX_PERIOD_SECONDS {
        errs.invalid(
            &period_path,
            policy.period_seconds,
            &format!("must be less than or equal to {MAX_PERIOD_SECONDS}"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A minimal valid HPA.
    fn base() -> Value {
        json!({
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1,
                "maxReplicas": 10
            }
        })
    }

    /// Sets (or with `Value::Null`, removes) the field at a JSON pointer.
    fn set(v: &mut Value, pointer: &str, new: Value) {
        let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
        let parent = v
            .pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .unwrap_or_else(|| panic!("no object at {parent}"));
        if new.is_null() {
            parent.remove(key);
        } else {
            parent.insert(key.to_owned(), new);
        }
    }

    fn with(pointer: &str, new: Value) -> Value {
        let mut v = base();
        set(&mut v, pointer, new);
        v
    }

    /// `base()` with a single metric.
    fn with_metric(metric: Value) -> Value {
        with("/spec/metrics", json!([metric]))
    }

    /// `base()` with scale-down rules.
    fn with_scale_down(rules: Value) -> Value {
        with("/spec/behavior", json!({"scaleDown": rules}))
    }

    fn check_opts(v: Value, opts: ValidationOptions) -> Vec<String> {
        let hpa: HorizontalPodAutoscaler = serde_json::from_value(v).expect("deserializes");
        validate_hpa(&hpa, opts)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn check(v: Value) -> Vec<String> {
        check_opts(v, ValidationOptions::default())
    }

    const SCALE_TO_ZERO: ValidationOptions = ValidationOptions {
        scale_to_zero_enabled: true,
        replica_bounds: ReplicaBounds::RequiredOrAtLeastOne,
        configurable_tolerance: true,
    };

    #[test]
    fn up_to_1_35_max_replicas_below_one_is_not_greater_than_zero_in_spec_order() {
        // Each answer seen on a v1.34.4 API server (kind); 1.32–1.35 share the check.
        for v in [
            crate::KubernetesVersion::V1_32,
            crate::KubernetesVersion::V1_35,
        ] {
            let opts = ValidationOptions::of(v, true);
            assert_eq!(
                check_opts(with("/spec/maxReplicas", json!(0)), opts),
                [
                    "spec.maxReplicas: Invalid value: 0: must be greater than 0",
                    "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`"
                ]
            );
            assert_eq!(
                check_opts(with("/spec/maxReplicas", json!(-2)), opts),
                [
                    "spec.maxReplicas: Invalid value: -2: must be greater than 0",
                    "spec.maxReplicas: Invalid value: -2: must be greater than or equal to `minReplicas`"
                ]
            );
        }
    }

    #[test]
    fn without_configurable_tolerance_a_negative_tolerance_is_dropped_not_refused() {
        // v1.34.4 (gate alpha, off) accepted `tolerance: -0.1`; 1.32 has no such field.
        let negative = with_scale_down(json!({"tolerance": "-0.1"}));
        for v in [
            crate::KubernetesVersion::V1_32,
            crate::KubernetesVersion::V1_33,
            crate::KubernetesVersion::V1_34,
        ] {
            assert!(check_opts(negative.clone(), ValidationOptions::of(v, true)).is_empty());
        }
        for v in [
            crate::KubernetesVersion::V1_35,
            crate::KubernetesVersion::V1_37,
        ] {
            assert_eq!(
                check_opts(negative.clone(), ValidationOptions::of(v, true)),
                [
                    "spec.behavior.scaleDown.tolerance: Invalid value: \"-100m\": must be greater than or equal to 0"
                ]
            );
        }
        // The gate turned on in a 1.34 API server: validated again.
        let gates = crate::FeatureGates {
            hpa_configurable_tolerance: true,
            ..crate::KubernetesVersion::V1_34.default_gates()
        };
        assert_eq!(
            check_opts(
                negative.clone(),
                ValidationOptions::with_gates(crate::KubernetesVersion::V1_34, &gates)
            )
            .len(),
            1
        );
        // A gate 1.32 lacks counts as off.
        assert!(
            check_opts(
                negative,
                ValidationOptions::with_gates(crate::KubernetesVersion::V1_32, &gates)
            )
            .is_empty()
        );
    }

    #[test]
    fn from_1_37_the_replica_bounds_come_last_and_max_zero_is_a_bare_required_value() {
        // Each answer seen on a v1.37.2 API server (kind).
        let opts = ValidationOptions::of(crate::KubernetesVersion::V1_37, true);
        assert_eq!(
            check_opts(with("/spec/maxReplicas", json!(0)), opts),
            [
                "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`",
                "spec.maxReplicas: Required value"
            ]
        );
        assert_eq!(
            check_opts(with("/spec/maxReplicas", json!(-2)), opts),
            [
                "spec.maxReplicas: Invalid value: -2: must be greater than or equal to `minReplicas`",
                "spec.maxReplicas: Invalid value: -2: must be greater than or equal to 1"
            ]
        );
        let mut several = with("/spec/maxReplicas", json!(0));
        set(&mut several, "/spec/minReplicas", json!(-1));
        set(&mut several, "/spec/scaleTargetRef/name", json!(""));
        assert_eq!(
            check_opts(several, opts),
            [
                "spec.scaleTargetRef.name: Required value",
                "spec.minReplicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.maxReplicas: Required value"
            ]
        );
    }

    fn resource_metric(target: Value) -> Value {
        json!({"type": "Resource", "resource": {"name": "cpu", "target": target}})
    }

    fn external_metric(target: Value) -> Value {
        json!({"type": "External", "external": {"metric": {"name": "queue"}, "target": target}})
    }

    fn object_metric(target: Value) -> Value {
        json!({
            "type": "Object",
            "object": {
                "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "front"},
                "metric": {"name": "rps"},
                "target": target
            }
        })
    }

    const RES_TARGET: &str = "spec.metrics[0].resource.target";

    #[test]
    fn full_hpa_with_behavior_is_valid() {
        let v = json!({
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web.frontend-1", "namespace": "prod"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2,
                "maxReplicas": 20,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 60}}},
                    {"type": "Resource", "resource": {"name": "memory",
                        "target": {"type": "AverageValue", "averageValue": "1.5Gi"}}},
                    {"type": "ContainerResource", "containerResource": {"name": "cpu",
                        "container": "app", "target": {"type": "Utilization", "averageUtilization": 80}}},
                    {"type": "Pods", "pods": {"metric": {"name": "packets-per-second",
                        "selector": {"matchLabels": {"verb": "GET"}}},
                        "target": {"type": "AverageValue", "averageValue": "1k"}}},
                    {"type": "Object", "object": {
                        "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
                        "metric": {"name": "requests-per-second"},
                        "target": {"type": "Value", "value": "10k"}}},
                    {"type": "Object", "object": {
                        "describedObject": {"kind": "Service", "name": "main"},
                        "metric": {"name": "rps"},
                        "target": {"type": "AverageValue", "averageValue": "500m"}}},
                    {"type": "External", "external": {"metric": {"name": "queue_messages_ready"},
                        "target": {"type": "AverageValue", "averageValue": "30"}}},
                    {"type": "External", "external": {"metric": {"name": "queue_depth"},
                        "target": {"type": "Value", "value": "1e3"}}}
                ],
                "behavior": {
                    "scaleUp": {
                        "stabilizationWindowSeconds": 0,
                        "selectPolicy": "Max",
                        "policies": [
                            {"type": "Percent", "value": 100, "periodSeconds": 15},
                            {"type": "Pods", "value": 4, "periodSeconds": 1800}
                        ],
                        "tolerance": "0.05"
                    },
                    "scaleDown": {
                        "stabilizationWindowSeconds": 3600,
                        "selectPolicy": "Disabled",
                        "policies": [{"type": "Pods", "value": 1, "periodSeconds": 1}],
                        "tolerance": "0"
                    }
                }
            }
        });
        assert_eq!(check(v.clone()), Vec::<String>::new());
        assert_eq!(check_opts(v, SCALE_TO_ZERO), Vec::<String>::new());
        assert_eq!(check(base()), Vec::<String>::new());
    }

    #[test]
    fn field_error_display() {
        let e = FieldError {
            path: "spec.maxReplicas".to_owned(),
            message: "Invalid value: 0: must be greater than 0".to_owned(),
        };
        assert_eq!(
            e.to_string(),
            "spec.maxReplicas: Invalid value: 0: must be greater than 0"
        );
    }

    #[test]
    fn metadata_name_is_required() {
        assert_eq!(
            check(with("/metadata/name", Value::Null)),
            ["metadata.name: Required value: name or generateName is required"]
        );
        assert_eq!(check(with("/metadata/name", json!(""))).len(), 1);
        // The API server generates a name from generateName.
        assert_eq!(
            check(with("/metadata", json!({"generateName": "web-"}))),
            Vec::<String>::new()
        );
    }

    #[test]
    fn metadata_name_must_be_a_dns_subdomain() {
        let errs = check(with("/metadata/name", json!("Web_1")));
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with(
                "metadata.name: Invalid value: \"Web_1\": a lowercase RFC 1123 subdomain"
            ),
            "{errs:?}"
        );
        let errs = check(with("/metadata/name", json!("a".repeat(254))));
        assert_eq!(errs.len(), 1);
        assert!(errs[0].ends_with("must be no more than 253 characters"));
        let errs = check(with("/metadata", json!({"generateName": "Web-"})));
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("metadata.generateName: Invalid value: \"Web-\""));
    }

    #[test]
    fn scale_target_ref_kind_and_name_are_required() {
        assert_eq!(
            check(with(
                "/spec/scaleTargetRef",
                json!({"kind": "", "name": ""})
            )),
            [
                "spec.scaleTargetRef.kind: Required value",
                "spec.scaleTargetRef.name: Required value"
            ]
        );
        // apiVersion is optional.
        assert_eq!(
            check(with(
                "/spec/scaleTargetRef",
                json!({"kind": "Deployment", "name": "web"})
            )),
            Vec::<String>::new()
        );
        assert_eq!(
            check(with("/spec/scaleTargetRef/name", json!("a/b"))),
            ["spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'"]
        );
        assert_eq!(
            check(with("/spec/scaleTargetRef/kind", json!(".."))),
            ["spec.scaleTargetRef.kind: Invalid value: \"..\": may not be '..'"]
        );
    }

    #[test]
    fn min_replicas_lower_bound() {
        assert_eq!(
            check(with("/spec/minReplicas", json!(-1))),
            ["spec.minReplicas: Invalid value: -1: must be greater than or equal to 1"]
        );
        assert_eq!(
            check_opts(with("/spec/minReplicas", json!(-1)), SCALE_TO_ZERO),
            ["spec.minReplicas: Invalid value: -1: must be greater than or equal to 0"]
        );
        // Unset minReplicas is fine.
        assert_eq!(
            check(with("/spec/minReplicas", Value::Null)),
            Vec::<String>::new()
        );
    }

    #[test]
    fn scale_to_zero_needs_object_or_external_metric() {
        // On the metrics list, after the metrics' own errors (upstream's validateMetrics).
        let forbidden = "spec.metrics: Forbidden: must specify at least one Object or \
                         External metric to support scaling to zero replicas";
        let zero = with("/spec/minReplicas", json!(0));
        assert_eq!(
            check(zero.clone()),
            [
                "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
                forbidden
            ]
        );
        assert_eq!(check_opts(zero.clone(), SCALE_TO_ZERO), [forbidden]);

        let mut with_cpu = zero.clone();
        set(
            &mut with_cpu,
            "/spec/metrics",
            json!([resource_metric(
                json!({"type": "Utilization", "averageUtilization": 50})
            )]),
        );
        assert_eq!(check_opts(with_cpu, SCALE_TO_ZERO), [forbidden]);

        for metric in [
            external_metric(json!({"type": "Value", "value": "10"})),
            object_metric(json!({"type": "Value", "value": "10"})),
        ] {
            let mut v = zero.clone();
            set(&mut v, "/spec/metrics", json!([metric]));
            assert_eq!(check_opts(v.clone(), SCALE_TO_ZERO), Vec::<String>::new());
            assert_eq!(
                check(v),
                ["spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"]
            );
        }
    }

    #[test]
    fn max_replicas_bounds() {
        assert_eq!(
            check(with("/spec/maxReplicas", json!(0))),
            [
                // 0 is "not set" (an int32): Required; below 0: Invalid (a v1.36.4 API server's
                // words, checked on kind by docs-max-replicas-required).
                "spec.maxReplicas: Required value: must be set and greater than 0",
                "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`"
            ]
        );
        let mut v = with("/spec/minReplicas", json!(-3));
        set(&mut v, "/spec/maxReplicas", json!(-1));
        assert_eq!(
            check(v),
            [
                "spec.minReplicas: Invalid value: -3: must be greater than or equal to 1",
                "spec.maxReplicas: Invalid value: -1: must be greater than or equal to 1"
            ]
        );
        let mut v = with("/spec/minReplicas", json!(5));
        set(&mut v, "/spec/maxReplicas", json!(4));
        assert_eq!(
            check(v),
            ["spec.maxReplicas: Invalid value: 4: must be greater than or equal to `minReplicas`"]
        );
        let mut v = with("/spec/minReplicas", json!(5));
        set(&mut v, "/spec/maxReplicas", json!(5));
        assert_eq!(check(v), Vec::<String>::new());
        // Unset minReplicas defaults to 1.
        let mut v = with("/spec/minReplicas", Value::Null);
        set(&mut v, "/spec/maxReplicas", json!(0));
        assert_eq!(check(v).len(), 2);
        // A missing maxReplicas deserializes as 0.
        assert_eq!(check(with("/spec/maxReplicas", Value::Null)).len(), 2);
    }

    #[test]
    fn metric_type_must_be_supported() {
        assert_eq!(
            check(with_metric(json!({"type": "Foo"}))),
            [
                "spec.metrics[0].type: Unsupported value: \"Foo\": supported values: \
                 \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\""
            ]
        );
        assert_eq!(
            check(with_metric(json!({"type": ""}))),
            ["spec.metrics[0].type: Required value: must specify a metric source type"]
        );
    }

    #[test]
    fn metric_source_must_match_type() {
        assert_eq!(
            check(with_metric(json!({"type": "Resource"}))),
            [
                "spec.metrics[0].resource: Required value: must populate information for the \
                 given metric source"
            ]
        );
        let mut metric = resource_metric(json!({"type": "Utilization", "averageUtilization": 50}));
        set(
            &mut metric,
            "/pods",
            json!({"metric": {"name": "x"}, "target": {"type": "AverageValue", "averageValue": "1"}}),
        );
        set(
            &mut metric,
            "/external",
            json!({"metric": {"name": "x"}, "target": {"type": "Value", "value": "1"}}),
        );
        assert_eq!(
            check(with_metric(metric)),
            [
                "spec.metrics[0].pods: Forbidden: must populate the given metric source only",
                "spec.metrics[0].external: Forbidden: must populate the given metric source only"
            ]
        );
        // The wrong source only: required + forbidden.
        let mut metric = resource_metric(json!({"type": "Utilization", "averageUtilization": 50}));
        set(&mut metric, "/type", json!("Pods"));
        assert_eq!(
            check(with_metric(metric)),
            [
                "spec.metrics[0].pods: Required value: must populate information for the given \
                 metric source",
                "spec.metrics[0].resource: Forbidden: must populate the given metric source only"
            ]
        );
    }

    #[test]
    fn resource_metric_rules() {
        let mut metric = resource_metric(json!({"type": "Utilization", "averageUtilization": 50}));
        set(&mut metric, "/resource/name", json!(""));
        assert_eq!(
            check(with_metric(metric)),
            ["spec.metrics[0].resource.name: Required value: must specify a resource name"]
        );

        let cases: Vec<(Value, Vec<String>)> = vec![
            (
                json!({"type": "Utilization"}),
                vec![format!(
                    "{RES_TARGET}.averageUtilization: Required value: must set either a target \
                     raw value or a target utilization"
                )],
            ),
            (
                json!({"type": "Utilization", "averageUtilization": 50, "averageValue": "100m"}),
                vec![format!(
                    "{RES_TARGET}.averageValue: Forbidden: may not set both a target raw value \
                     and a target utilization"
                )],
            ),
            (
                json!({"type": "Utilization", "averageUtilization": 0}),
                vec![format!(
                    "{RES_TARGET}.averageUtilization: Invalid value: 0: must be greater than 0"
                )],
            ),
            (
                json!({"type": "AverageValue", "averageValue": "0"}),
                vec![format!(
                    "{RES_TARGET}.averageValue: Invalid value: \"0\": must be positive"
                )],
            ),
            (
                json!({"type": "AverageValue", "averageValue": "-100m"}),
                vec![format!(
                    "{RES_TARGET}.averageValue: Invalid value: \"-100m\": must be positive"
                )],
            ),
            (
                json!({"type": "AverageValue", "averageValue": "abc"}),
                vec![format!(
                    "{RES_TARGET}.averageValue: Invalid value: \"abc\": quantities must match \
                     the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
                )],
            ),
            // The API server does not check which type a source uses, nor that the type's own
            // field is set (`unusable_targets` does, for lint).
            (
                json!({"type": "Value", "value": "1"}),
                vec![format!(
                    "{RES_TARGET}.averageUtilization: Required value: must set either a \
                     target raw value or a target utilization"
                )],
            ),
            (json!({"type": "Utilization", "averageValue": "1"}), vec![]),
            (
                json!({"type": "AverageValue", "averageUtilization": 50}),
                vec![],
            ),
            // An empty type is missing and not one of the three: two errors.
            (
                json!({"averageUtilization": 50}),
                vec![
                    format!("{RES_TARGET}.type: Required value: must specify a metric target type"),
                    format!(
                        "{RES_TARGET}.type: Invalid value: \"\": must be either Utilization, \
                         Value, or AverageValue"
                    ),
                ],
            ),
            (
                json!({"type": "Bogus", "averageUtilization": 50}),
                vec![format!(
                    "{RES_TARGET}.type: Invalid value: \"Bogus\": must be either Utilization, \
                     Value, or AverageValue"
                )],
            ),
            // Tiny and huge positive quantities are positive.
            (
                json!({"type": "AverageValue", "averageValue": "1n"}),
                vec![],
            ),
            (
                json!({"type": "AverageValue", "averageValue": "1e400"}),
                vec![],
            ),
        ];
        for (target, want) in cases {
            assert_eq!(
                check(with_metric(resource_metric(target.clone()))),
                want,
                "target {target}"
            );
        }
    }

    #[test]
    fn container_resource_metric_rules() {
        let metric = |name: &str, container: &str| {
            json!({"type": "ContainerResource", "containerResource": {
                "name": name, "container": container,
                "target": {"type": "AverageValue", "averageValue": "500Mi"}}})
        };
        assert_eq!(
            check(with_metric(metric("memory", "app"))),
            Vec::<String>::new()
        );
        assert_eq!(
            check(with_metric(metric("", ""))),
            [
                "spec.metrics[0].containerResource.name: Required value: must specify a resource name",
                "spec.metrics[0].containerResource.container: Required value: must specify a container"
            ]
        );
        let errs = check(with_metric(metric("cpu", "App_1")));
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with(
                "spec.metrics[0].containerResource.container: Invalid value: \"App_1\": a \
                 lowercase RFC 1123 label"
            ),
            "{errs:?}"
        );
        let mut m = metric("cpu", "app");
        set(
            &mut m,
            "/containerResource/target",
            json!({"type": "Value", "value": "1"}),
        );
        assert_eq!(check(with_metric(m)).len(), 1);
    }

    #[test]
    fn container_resource_names_are_checked_as_the_api_server_does() {
        // Each answer seen on a v1.36.4 API server (kind).
        let cases: [(&str, &[&str]); 8] = [
            ("cpu", &[]),
            ("hugepages-2Mi", &[]),
            ("example.com/gpu", &[]),
            ("kubernetes.io/foo", &[]),
            (
                "foo",
                &[
                    "must be a standard resource type or fully qualified",
                    "must be a standard resource for containers",
                ],
            ),
            ("pods", &["must be a standard resource for containers"]),
            (
                "requests.example.com/foo",
                &["doesn't follow extended resource name standard"],
            ),
            (
                "a b",
                &[
                    "name part must consist of alphanumeric characters, '-', '_' or '.', and must \
                     start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  \
                     or '123-abc', regex used for validation is \
                     '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                    "must be a standard resource for containers",
                ],
            ),
        ];
        for (name, want) in cases {
            assert_eq!(container_resource_name_errors(name), want, "{name}");
        }
    }

    #[test]
    fn pods_metric_rules() {
        let metric = |name: &str, target: Value| json!({"type": "Pods", "pods": {"metric": {"name": name}, "target": target}});
        let ok = json!({"type": "AverageValue", "averageValue": "10"});
        assert_eq!(
            check(with_metric(metric("rps", ok.clone()))),
            Vec::<String>::new()
        );
        assert_eq!(
            check(with_metric(metric("", ok.clone()))),
            ["spec.metrics[0].pods.metric.name: Required value: must specify a metric name"]
        );
        assert_eq!(
            check(with_metric(metric("a%b", ok))),
            ["spec.metrics[0].pods.metric.name: Invalid value: \"a%b\": may not contain '%'"]
        );
        assert_eq!(
            check(with_metric(metric("rps", json!({"type": "AverageValue"})))),
            [
                "spec.metrics[0].pods.target.averageValue: Required value: must specify a \
                 positive target averageValue"
            ]
        );
        assert_eq!(
            check(with_metric(metric(
                "rps",
                json!({"type": "Value", "averageValue": "10"})
            ))),
            Vec::<String>::new()
        );
        assert_eq!(
            check(with_metric(metric(
                "rps",
                json!({"type": "AverageValue", "averageValue": "-1"})
            ))),
            ["spec.metrics[0].pods.target.averageValue: Invalid value: \"-1\": must be positive"]
        );
    }

    #[test]
    fn object_metric_rules() {
        let target = "spec.metrics[0].object.target";
        assert_eq!(
            check(with_metric(object_metric(json!({"type": "Value"})))),
            [format!(
                "{target}.averageValue: Required value: must set either a target value or \
                 averageValue"
            )]
        );
        for accepted in [
            json!({"type": "Value", "averageValue": "5"}),
            json!({"type": "AverageValue", "value": "5"}),
            json!({"type": "Utilization", "averageUtilization": 5, "value": "1"}),
        ] {
            assert_eq!(
                check(with_metric(object_metric(accepted.clone()))),
                Vec::<String>::new(),
                "{accepted}"
            );
        }
        assert_eq!(
            check(with_metric(object_metric(
                json!({"type": "Value", "value": "0"})
            ))),
            [format!(
                "{target}.value: Invalid value: \"0\": must be positive"
            )]
        );
        let mut metric = object_metric(json!({"type": "Value", "value": "1"}));
        set(&mut metric, "/object/describedObject", json!({}));
        set(&mut metric, "/object/metric/name", json!(""));
        assert_eq!(
            check(with_metric(metric)),
            [
                "spec.metrics[0].object.describedObject.kind: Required value",
                "spec.metrics[0].object.describedObject.name: Required value",
                "spec.metrics[0].object.metric.name: Required value: must specify a metric name"
            ]
        );
    }

    #[test]
    fn external_metric_rules() {
        let target = "spec.metrics[0].external.target";
        assert_eq!(
            check(with_metric(external_metric(
                json!({"type": "AverageValue"})
            ))),
            [format!(
                "{target}.averageValue: Required value: must set either a target value for \
                 metric or a per-pod target"
            )]
        );
        assert_eq!(
            check(with_metric(external_metric(
                json!({"type": "Value", "value": "1", "averageValue": "1"})
            ))),
            [format!(
                "{target}.value: Forbidden: may not set both a target value for metric and a \
                 per-pod target"
            )]
        );
        assert_eq!(
            check(with_metric(external_metric(
                json!({"type": "Value", "averageValue": "1"})
            ))),
            Vec::<String>::new()
        );
        assert_eq!(
            check(with_metric(external_metric(
                json!({"type": "Foo", "value": "1"})
            ))),
            [format!(
                "{target}.type: Invalid value: \"Foo\": must be either Utilization, Value, or \
                 AverageValue"
            )]
        );
        assert_eq!(
            check(with_metric(external_metric(
                json!({"type": "Value", "value": "1 k"})
            ))),
            [format!(
                "{target}.value: Invalid value: \"1 k\": quantities must match the regular \
                 expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            )]
        );
        let mut metric = external_metric(json!({"type": "Value", "value": "1"}));
        set(&mut metric, "/external/metric/name", json!(""));
        assert_eq!(
            check(with_metric(metric)),
            ["spec.metrics[0].external.metric.name: Required value: must specify a metric name"]
        );
    }

    #[test]
    fn stabilization_window_bounds() {
        let path = "spec.behavior.scaleDown.stabilizationWindowSeconds";
        assert_eq!(
            check(with_scale_down(json!({"stabilizationWindowSeconds": -1}))),
            [format!(
                "{path}: Invalid value: -1: must be greater than or equal to zero"
            )]
        );
        assert_eq!(
            check(with_scale_down(json!({"stabilizationWindowSeconds": 3601}))),
            [format!(
                "{path}: Invalid value: 3601: must be less than or equal to 3600"
            )]
        );
        assert_eq!(
            check(with_scale_down(json!({"stabilizationWindowSeconds": 3600}))),
            Vec::<String>::new()
        );
    }

    #[test]
    fn select_policy_must_be_known() {
        assert_eq!(
            check(with(
                "/spec/behavior",
                json!({"scaleUp": {"selectPolicy": "Foo"}})
            )),
            [
                "spec.behavior.scaleUp.selectPolicy: Unsupported value: \"Foo\": supported \
                 values: \"Disabled\", \"Max\", \"Min\""
            ]
        );
        for policy in ["Max", "Min", "Disabled"] {
            assert_eq!(
                check(with_scale_down(json!({"selectPolicy": policy}))),
                Vec::<String>::new()
            );
        }
    }

    #[test]
    fn policies_list_must_not_be_empty() {
        // Omitted policies are defaulted by the API server.
        assert_eq!(check(with_scale_down(json!({}))), Vec::<String>::new());
        assert_eq!(
            check(with_scale_down(json!({"policies": []}))),
            ["spec.behavior.scaleDown.policies: Required value: must specify at least one Policy"]
        );
    }

    #[test]
    fn scaling_policy_rules() {
        let path = "spec.behavior.scaleDown.policies[1]";
        let rules = |policy: Value| {
            with_scale_down(json!({"policies": [
                {"type": "Pods", "value": 1, "periodSeconds": 60},
                policy
            ]}))
        };
        assert_eq!(
            check(rules(
                json!({"type": "Percent", "value": 10, "periodSeconds": 1800})
            )),
            Vec::<String>::new()
        );
        assert_eq!(
            check(rules(
                json!({"type": "Replicas", "value": 0, "periodSeconds": 0})
            )),
            [
                format!(
                    "{path}.type: Unsupported value: \"Replicas\": supported values: \"Percent\", \
                     \"Pods\""
                ),
                format!("{path}.value: Invalid value: 0: must be greater than zero"),
                format!("{path}.periodSeconds: Invalid value: 0: must be greater than zero"),
            ]
        );
        assert_eq!(
            check(rules(
                json!({"type": "Pods", "value": -3, "periodSeconds": 1801})
            )),
            [
                format!("{path}.value: Invalid value: -3: must be greater than zero"),
                format!(
                    "{path}.periodSeconds: Invalid value: 1801: must be less than or equal to 1800"
                ),
            ]
        );
    }

    #[test]
    fn unusable_targets_are_accepted_and_named() {
        let unusable = |metric: Value| {
            let v = with_metric(metric);
            let hpa: HorizontalPodAutoscaler = serde_json::from_value(v.clone()).expect("an HPA");
            assert!(
                validate_hpa(&hpa, ValidationOptions::default()).is_empty(),
                "{v}"
            );
            unusable_targets(&hpa)
                .into_iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
        };
        let res = "spec.metrics[0].resource.target";
        assert_eq!(
            unusable(resource_metric(
                json!({"type": "Value", "averageValue": "1"})
            )),
            [format!(
                "{res}.type: Unsupported value: \"Value\": supported values: \"AverageValue\", \
                 \"Utilization\""
            )]
        );
        assert_eq!(
            unusable(resource_metric(
                json!({"type": "AverageValue", "averageUtilization": 5})
            )),
            [format!(
                "{res}.averageValue: Required value: must set averageValue when the target type \
                 is AverageValue"
            )]
        );
        assert_eq!(
            unusable(resource_metric(
                json!({"type": "Utilization", "averageUtilization": 5})
            )),
            Vec::<String>::new()
        );
        assert_eq!(
            unusable(json!({"type": "Pods", "pods": {"metric": {"name": "rps"},
                "target": {"type": "Value", "averageValue": "10"}}})),
            [
                "spec.metrics[0].pods.target.type: Unsupported value: \"Value\": supported values: \
              \"AverageValue\""
            ]
        );
        assert_eq!(
            unusable(object_metric(json!({"type": "Value", "averageValue": "5"}))),
            [
                "spec.metrics[0].object.target.value: Required value: must set value when the \
              target type is Value"
            ]
        );
        assert_eq!(
            unusable(external_metric(
                json!({"type": "Utilization", "value": "5"})
            )),
            [
                "spec.metrics[0].external.target.type: Unsupported value: \"Utilization\": \
              supported values: \"AverageValue\", \"Value\""
            ]
        );
        assert_eq!(
            unusable(external_metric(json!({"type": "Value", "value": "5"}))),
            Vec::<String>::new()
        );
    }

    #[test]
    fn tolerance_must_be_non_negative() {
        let path = "spec.behavior.scaleDown.tolerance";
        assert_eq!(
            check(with_scale_down(json!({"tolerance": "-0.01"}))),
            // As the API server prints the quantity: canonical ("-0.1" is "-100m" on kind).
            [format!(
                "{path}: Invalid value: \"-10m\": must be greater than or equal to 0"
            )]
        );
        for (text, shown) in [
            ("-2", "-2"),
            ("-1500m", "-1500m"),
            ("-0.5", "-500m"),
            ("-3k", "-3k"),
            ("-1e-400", "-1e-9"),
        ] {
            assert_eq!(
                crate::quantity::canonical(text).as_deref(),
                Ok(shown),
                "{text}"
            );
        }
        assert_eq!(
            check(with_scale_down(json!({"tolerance": "-1n"}))),
            [format!(
                "{path}: Invalid value: \"-1n\": must be greater than or equal to 0"
            )]
        );
        assert_eq!(
            check(with_scale_down(json!({"tolerance": "-1e-400"}))).len(),
            1
        );
        let errs = check(with_scale_down(json!({"tolerance": "5%"})));
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with(&format!(
                "{path}: Invalid value: \"5%\": quantities must match"
            )),
            "{errs:?}"
        );
        for ok in ["0", "0.05", "50m", "1"] {
            assert_eq!(
                check(with_scale_down(json!({"tolerance": ok}))),
                Vec::<String>::new(),
                "{ok}"
            );
        }
    }

    #[test]
    fn reports_every_error_in_document_order() {
        let v = json!({
            "metadata": {},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": ""},
                "minReplicas": 0,
                "maxReplicas": 0,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 0}}},
                    {"type": "Pods"}
                ],
                "behavior": {
                    "scaleUp": {"policies": [{"type": "Pods", "value": 0, "periodSeconds": 15}]},
                    "scaleDown": {"stabilizationWindowSeconds": 4000, "policies": []}
                }
            }
        });
        let want = [
            "metadata.name: Required value: name or generateName is required",
            "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
            "spec.maxReplicas: Required value: must be set and greater than 0",
            "spec.scaleTargetRef.name: Required value",
            "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be \
             greater than 0",
            "spec.metrics[1].pods: Required value: must populate information for the given \
             metric source",
            "spec.metrics: Forbidden: must specify at least one Object or External metric to \
             support scaling to zero replicas",
            "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
            "spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: 4000: must be \
             less than or equal to 3600",
            "spec.behavior.scaleDown.policies: Required value: must specify at least one Policy",
        ];
        assert_eq!(check(v.clone()), want);
        // Deterministic: the same input gives the same list.
        assert_eq!(check(v), want);
    }
}
