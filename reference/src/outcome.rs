//! What a decision says, as data: the events it records, where an error comes from, and why it
//! came out as it did (the branch taken and each metric's part). A leaf below [`crate::decide`]
//! and [`crate::metric`]: it names no function of either.

use crate::calculator::Reasoning;

/// Kind of a Kubernetes event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// `Normal`.
    Normal,
    /// `Warning`.
    Warning,
}

impl EventType {
    /// The Kubernetes spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// An event the controller records on the HPA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Normal or Warning.
    pub type_: EventType,
    /// E.g. `SuccessfulRescale`.
    pub reason: String,
    /// E.g. `New size: 4; reason: cpu resource utilization (percentage of request) above target`.
    pub message: String,
}

/// Where an error of the reconcile comes from, as upstream tells errors apart in its
/// `error` metric label: the HPA's spec (the errors upstream wraps with its `errSpec` marker) or
/// anything else (an API, a metrics API, the selector, a write).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorOrigin {
    /// The spec is at fault: a metric of a source type upstream does not know. (An unparsable
    /// `scaleTargetRef.apiVersion` is one too, but the scale's error reaches the core as text: the
    /// caller that parsed it says so.)
    Spec,
    /// Anything else.
    Internal,
}

/// Which branch of the reconcile ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Path {
    /// Getting the target's scale failed.
    ScaleUnavailable,
    /// The target has zero replicas: autoscaling is off.
    ScalingDisabled,
    /// More replicas than `maxReplicas`: clamp without metrics.
    AboveMax,
    /// Fewer replicas than `minReplicas`: clamp without metrics.
    BelowMin,
    /// The selector or the metrics failed: no scaling.
    MetricsFailed,
    /// Metrics gave a desired count that was normalized.
    Computed,
}

/// One metric's part in the decision.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricExplanation {
    /// The metric's name in messages, when it produced a proposal.
    pub name: Option<String>,
    /// Its proposal.
    pub proposal: Option<i32>,
    /// Its error, when it failed.
    pub error: Option<String>,
    /// Where that error comes from.
    pub error_origin: Option<ErrorOrigin>,
    /// How the proposal was reached.
    pub reasoning: Option<Reasoning>,
}

/// Why the decision came out as it did: intermediate values upstream never writes anywhere.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// The branch taken.
    pub path: Path,
    /// Per metric of the spec, in order (empty when metrics were not computed).
    pub metrics: Vec<MetricExplanation>,
    /// The maximum over the metrics' proposals.
    pub metric_desired: Option<i32>,
    /// After stabilization.
    pub stabilized: Option<i32>,
    /// After rate limits and min/max.
    pub limited: Option<i32>,
    /// The rescale reason.
    pub rescale_reason: Option<String>,
}
