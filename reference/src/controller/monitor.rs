//! How a reconcile and each of its metric computations are labelled in the controller's
//! metrics, by the rules upstream's `horizontal.go` follows when it reports to its monitor
//! (`pkg/controller/podautoscaler/monitor`, Kubernetes 1.36):
//!
//! * a reconcile's `action` is `scale_up` or `scale_down` only when its scale write succeeded,
//!   else `none`;
//! * its `error` is `none` when it returns no error, `spec` when the error it returns is a spec
//!   error, else `internal` (when both kinds happen, the one returned counts: the first);
//! * a metric computation's `action` compares the metric's proposal with the HPA's
//!   `status.currentReplicas` as read before the reconcile (not the scale's replicas), and is
//!   `none` whenever the metric failed; its `error` follows the reconcile's rule; its
//!   `metric_type` is the spec's `type` as written.

use std::time::{Duration, Instant};

use prometheus_client::encoding::{EncodeLabelValue, LabelValueEncoder};

use crate::decide::{Decision, MetricHook};
use crate::outcome::{ErrorOrigin, MetricExplanation};

/// The `action` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActionLabel {
    /// `scale_up`.
    ScaleUp,
    /// `scale_down`.
    ScaleDown,
    /// `none`.
    None,
}

impl ActionLabel {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionLabel::ScaleUp => "scale_up",
            ActionLabel::ScaleDown => "scale_down",
            ActionLabel::None => "none",
        }
    }
}

/// The `error` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorLabel {
    /// `spec`: the HPA's spec is at fault.
    Spec,
    /// `internal`: any other error.
    Internal,
    /// `none`.
    None,
}

impl ErrorLabel {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorLabel::Spec => "spec",
            ErrorLabel::Internal => "internal",
            ErrorLabel::None => "none",
        }
    }

    /// The label of an error of this origin (`None`: no error).
    pub fn of(origin: Option<ErrorOrigin>) -> ErrorLabel {
        match origin {
            Some(ErrorOrigin::Spec) => ErrorLabel::Spec,
            Some(ErrorOrigin::Internal) => ErrorLabel::Internal,
            None => ErrorLabel::None,
        }
    }
}

impl EncodeLabelValue for ActionLabel {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        std::fmt::Write::write_str(encoder, self.as_str())
    }
}

impl EncodeLabelValue for ErrorLabel {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        std::fmt::Write::write_str(encoder, self.as_str())
    }
}

/// The labels of a reconcile that read `current` replicas on the scale and ended in `decision`.
pub fn reconcile_labels(current: i32, decision: &Decision) -> (ActionLabel, ErrorLabel) {
    let action = match decision.scaled_to {
        Some(n) if n > current => ActionLabel::ScaleUp,
        Some(_) => ActionLabel::ScaleDown,
        None => ActionLabel::None,
    };
    let error = if decision.error.is_some() {
        ErrorLabel::of(decision.error_origin.or(Some(ErrorOrigin::Internal)))
    } else {
        ErrorLabel::None
    };
    (action, error)
}

/// The labels of one metric's computation; `status_current` is the HPA's
/// `status.currentReplicas` as read (0 when unset).
pub fn metric_labels(metric: &MetricExplanation, status_current: i32) -> (ActionLabel, ErrorLabel) {
    if metric.error.is_some() {
        let origin = metric.error_origin.or(Some(ErrorOrigin::Internal));
        return (ActionLabel::None, ErrorLabel::of(origin));
    }
    let action = match metric.proposal {
        Some(p) if p > status_current => ActionLabel::ScaleUp,
        Some(p) if p < status_current => ActionLabel::ScaleDown,
        _ => ActionLabel::None,
    };
    (action, ErrorLabel::None)
}

/// How long each metric took: its metrics API requests (timed by the caller) plus its
/// computation in the core (timed through the core's [`MetricHook`]), like upstream's timing of
/// `computeReplicasForMetric`, which fetches and computes.
#[derive(Debug, Clone, Default)]
pub struct MetricTimer {
    took: Vec<Duration>,
    started: Option<Instant>,
}

impl MetricTimer {
    /// A timer starting from each metric's request time.
    pub fn new(requests: Vec<Duration>) -> Self {
        MetricTimer {
            took: requests,
            started: None,
        }
    }

    /// Each metric's time, by index in the spec.
    pub fn took(&self) -> &[Duration] {
        &self.took
    }
}

impl MetricHook for MetricTimer {
    fn before(&mut self, _: usize) {
        self.started = Some(Instant::now());
    }

    fn after(&mut self, index: usize) {
        if let Some(started) = self.started.take() {
            if self.took.len() <= index {
                self.took.resize(index + 1, Duration::ZERO);
            }
            self.took[index] += started.elapsed();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proposal(p: i32) -> MetricExplanation {
        MetricExplanation {
            name: Some("cpu resource".into()),
            proposal: Some(p),
            error: None,
            error_origin: None,
            reasoning: None,
        }
    }

    fn failed(origin: ErrorOrigin) -> MetricExplanation {
        MetricExplanation {
            name: None,
            proposal: None,
            error: Some("failed".into()),
            error_origin: Some(origin),
            reasoning: None,
        }
    }

    #[test]
    fn a_metric_is_compared_with_the_status_replicas() {
        assert_eq!(
            metric_labels(&proposal(5), 3),
            (ActionLabel::ScaleUp, ErrorLabel::None)
        );
        assert_eq!(
            metric_labels(&proposal(2), 3),
            (ActionLabel::ScaleDown, ErrorLabel::None)
        );
        assert_eq!(
            metric_labels(&proposal(3), 3),
            (ActionLabel::None, ErrorLabel::None)
        );
        // A fresh HPA has no status: any proposal is a scale-up.
        assert_eq!(
            metric_labels(&proposal(1), 0),
            (ActionLabel::ScaleUp, ErrorLabel::None)
        );
    }

    #[test]
    fn a_failed_metric_has_no_action_and_its_errors_origin() {
        assert_eq!(
            metric_labels(&failed(ErrorOrigin::Internal), 3),
            (ActionLabel::None, ErrorLabel::Internal)
        );
        assert_eq!(
            metric_labels(&failed(ErrorOrigin::Spec), 3),
            (ActionLabel::None, ErrorLabel::Spec)
        );
    }

    #[test]
    fn the_timer_adds_the_computation_to_the_requests() {
        let mut t = MetricTimer::new(vec![Duration::from_millis(7)]);
        t.before(0);
        t.after(0);
        t.before(2);
        t.after(2);
        assert_eq!(t.took().len(), 3);
        assert!(t.took()[0] >= Duration::from_millis(7));
        assert!(t.took()[0] < Duration::from_secs(1));
        assert_eq!(t.took()[1], Duration::ZERO);
    }

    #[test]
    fn label_values_are_upstreams() {
        let values: Vec<&str> = [
            ActionLabel::ScaleUp.as_str(),
            ActionLabel::ScaleDown.as_str(),
            ActionLabel::None.as_str(),
            ErrorLabel::Spec.as_str(),
            ErrorLabel::Internal.as_str(),
            ErrorLabel::None.as_str(),
        ]
        .to_vec();
        assert_eq!(
            values,
            ["scale_up", "scale_down", "none", "spec", "internal", "none"]
        );
    }
}
