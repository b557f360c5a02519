//! Prometheus metrics of the controller, served on `/metrics`: kube-controller-manager's HPA
//! controller metrics under upstream's names, labels and buckets (`metrics.go` of
//! `pkg/controller/podautoscaler/monitor`, Kubernetes 1.36), labelled as [`super::monitor`]
//! describes.
//!
//! | name | type | labels |
//! |---|---|---|
//! | `horizontal_pod_autoscaler_controller_reconciliations_total` | counter | `action`, `error` |
//! | `horizontal_pod_autoscaler_controller_reconciliation_duration_seconds` | histogram | `action`, `error` |
//! | `horizontal_pod_autoscaler_controller_metric_computation_total` | counter | `action`, `error`, `metric_type` |
//! | `horizontal_pod_autoscaler_controller_metric_computation_duration_seconds` | histogram | `action`, `error`, `metric_type` |
//! | `horizontal_pod_autoscaler_controller_num_horizontal_pod_autoscalers` | gauge | |
//! | `horizontal_pod_autoscaler_controller_desired_replicas` | gauge | `namespace`, `hpa_name` |
//!
//! | `workqueue_depth` | gauge | `name` |
//! | `workqueue_queue_duration_seconds` | histogram | `name` |
//! | `workqueue_work_duration_seconds` | histogram | `name` |
//!
//! The three `workqueue_` families are client-go's work queue metrics as kube-controller-manager
//! exposes them for its HPA queue (`name="horizontalpodautoscaler"`; buckets
//! `ExponentialBuckets(10e-9, 10, 10)`): the keys in line, how long a due key waited for a
//! worker, how long a worker held it.
//!
//! The HPA controller's last two are upstream's ALPHA gauges: the HPAs the controller knows (up when one is first
//! seen, down when it is deleted) and each HPA's desired replicas, set when a reconcile reaches
//! the status with a decision (not when the scale, the metrics or the scale write failed).
//!
//! Both histograms have upstream's buckets, `ExponentialBuckets(0.001, 2, 15)`: 1 ms to 16.384 s.
//! The text encoder appends `_total` to counter names itself, so they are registered without it.
//! The exposition is OpenMetrics text: a counter's `# TYPE` line names it without `_total` and a
//! bucket's `le` label comes first; the series are upstream's.

use std::time::Duration;

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::monitor::{ActionLabel, ErrorLabel, metric_labels, reconcile_labels};
use crate::decide::Decision;

/// Upstream's metrics subsystem.
pub const SUBSYSTEM: &str = "horizontal_pod_autoscaler_controller";

/// Upstream's help texts, with `[ALPHA]` as component-base renders the stability level. The
/// encoder appends a period to every help text: the two that end with one upstream are given
/// without it; the two that do not gain one (the only difference from upstream's exposition).
const RECONCILIATIONS_HELP: &str = "[ALPHA] Number of reconciliations of HPA controller. The label 'action' should be either 'scale_down', 'scale_up', or 'none'. Also, the label 'error' should be either 'spec', 'internal', or 'none'. Note that if both spec and internal errors happen during a reconciliation, the first one to occur is reported in `error` label";
const RECONCILIATION_DURATION_HELP: &str = "[ALPHA] The time(seconds) that the HPA controller takes to reconcile once. The label 'action' should be either 'scale_down', 'scale_up', or 'none'. Also, the label 'error' should be either 'spec', 'internal', or 'none'. Note that if both spec and internal errors happen during a reconciliation, the first one to occur is reported in `error` label";
const METRIC_COMPUTATIONS_HELP: &str = "[ALPHA] Number of metric computations. The label 'action' should be either 'scale_down', 'scale_up', or 'none'. Also, the label 'error' should be either 'spec', 'internal', or 'none'. The label 'metric_type' corresponds to HPA.spec.metrics[*].type";
const METRIC_COMPUTATION_DURATION_HELP: &str = "[ALPHA] The time(seconds) that the HPA controller takes to calculate one metric. The label 'action' should be either 'scale_down', 'scale_up', or 'none'. The label 'error' should be either 'spec', 'internal', or 'none'. The label 'metric_type' corresponds to HPA.spec.metrics[*].type";

/// The HPA controller's work queue name in client-go's queue metrics.
pub const QUEUE_NAME: &str = "horizontalpodautoscaler";

/// Labels of the work queue's metrics.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct QueueLabels {
    name: &'static str,
}

/// Labels of a reconcile.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReconcileLabels {
    action: ActionLabel,
    error: ErrorLabel,
}

/// Labels of the desired-replicas gauge.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct HpaLabels {
    namespace: String,
    hpa_name: String,
}

/// Labels of one metric computation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct MetricLabels {
    action: ActionLabel,
    error: ErrorLabel,
    metric_type: String,
}

/// A histogram with upstream's buckets.
fn upstream_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// The controller's metrics and their registry.
pub struct ControllerMetrics {
    registry: Registry,
    reconciliations: Family<ReconcileLabels, Counter>,
    reconciliation_duration: Histograms<ReconcileLabels>,
    metric_computations: Family<MetricLabels, Counter>,
    metric_computation_duration: Histograms<MetricLabels>,
    tracked: Gauge,
    desired: Family<HpaLabels, Gauge>,
    queue_depth: Family<QueueLabels, Gauge>,
    queue_duration: Histograms<QueueLabels>,
    work_duration: Histograms<QueueLabels>,
}

/// client-go's work queue buckets: 10 ns to 1 s and beyond, ten per decade step.
fn queue_histogram() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 10))
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let reconciliations = Family::<ReconcileLabels, Counter>::default();
        let reconciliation_duration: Histograms<ReconcileLabels> =
            Family::new_with_constructor(upstream_histogram);
        let metric_computations = Family::<MetricLabels, Counter>::default();
        let metric_computation_duration: Histograms<MetricLabels> =
            Family::new_with_constructor(upstream_histogram);
        let tracked = Gauge::default();
        registry.register(
            format!("{SUBSYSTEM}_reconciliations"),
            RECONCILIATIONS_HELP,
            reconciliations.clone(),
        );
        registry.register(
            format!("{SUBSYSTEM}_reconciliation_duration_seconds"),
            RECONCILIATION_DURATION_HELP,
            reconciliation_duration.clone(),
        );
        registry.register(
            format!("{SUBSYSTEM}_metric_computation"),
            METRIC_COMPUTATIONS_HELP,
            metric_computations.clone(),
        );
        registry.register(
            format!("{SUBSYSTEM}_metric_computation_duration_seconds"),
            METRIC_COMPUTATION_DURATION_HELP,
            metric_computation_duration.clone(),
        );
        registry.register(
            format!("{SUBSYSTEM}_num_horizontal_pod_autoscalers"),
            "[ALPHA] Current number of controlled HPA objects",
            tracked.clone(),
        );
        let desired = Family::<HpaLabels, Gauge>::default();
        registry.register(
            format!("{SUBSYSTEM}_desired_replicas"),
            "[ALPHA] Current desired replica count for HPA objects",
            desired.clone(),
        );
        let queue_depth = Family::<QueueLabels, Gauge>::default();
        registry.register(
            "workqueue_depth",
            "[ALPHA] Current depth of workqueue",
            queue_depth.clone(),
        );
        let queue_duration: Histograms<QueueLabels> = Family::new_with_constructor(queue_histogram);
        registry.register(
            "workqueue_queue_duration_seconds",
            "[ALPHA] How long in seconds an item stays in workqueue before being requested",
            queue_duration.clone(),
        );
        let work_duration: Histograms<QueueLabels> = Family::new_with_constructor(queue_histogram);
        registry.register(
            "workqueue_work_duration_seconds",
            "[ALPHA] How long in seconds processing an item from workqueue takes",
            work_duration.clone(),
        );
        ControllerMetrics {
            queue_depth,
            queue_duration,
            work_duration,
            registry,
            reconciliations,
            reconciliation_duration,
            metric_computations,
            metric_computation_duration,
            tracked,
            desired,
        }
    }
}

impl ControllerMetrics {
    /// Records one reconcile (upstream's `ObserveReconciliationResult`).
    pub fn observe_reconciliation(&self, action: ActionLabel, error: ErrorLabel, took: Duration) {
        let labels = ReconcileLabels { action, error };
        self.reconciliations.get_or_create(&labels).inc();
        self.reconciliation_duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// Records one metric computation (upstream's `ObserveMetricComputationResult`).
    pub fn observe_metric_computation(
        &self,
        action: ActionLabel,
        error: ErrorLabel,
        took: Duration,
        metric_type: &str,
    ) {
        let labels = MetricLabels {
            action,
            error,
            metric_type: metric_type.to_string(),
        };
        self.metric_computations.get_or_create(&labels).inc();
        self.metric_computation_duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// Records everything one reconcile of `hpa` reports: each metric it computed (in spec order;
    /// `metric_took[i]` is how long metric `i` took) and the reconcile itself, which read `current`
    /// replicas on the scale and took `took`.
    pub fn observe_reconcile(
        &self,
        hpa: &HorizontalPodAutoscaler,
        current: i32,
        decision: &Decision,
        took: Duration,
        metric_took: &[Duration],
    ) {
        let status_current = hpa
            .status
            .as_ref()
            .and_then(|s| s.current_replicas)
            .unwrap_or(0);
        let specs = hpa.spec.metrics.as_deref().unwrap_or_default();
        for (i, m) in decision.explanation.metrics.iter().enumerate() {
            let (action, error) = metric_labels(m, status_current);
            let metric_type = specs.get(i).map_or("", |s| s.type_.as_str());
            let took = metric_took.get(i).copied().unwrap_or_default();
            self.observe_metric_computation(action, error, took, metric_type);
        }
        let (action, error) = reconcile_labels(current, decision);
        self.observe_reconciliation(action, error, took);
        if !decision.ended_early() {
            let labels = HpaLabels {
                namespace: hpa.metadata.namespace.clone().unwrap_or_default(),
                hpa_name: hpa.metadata.name.clone().unwrap_or_default(),
            };
            self.desired
                .get_or_create(&labels)
                .set(i64::from(decision.status.desired_replicas));
        }
    }

    /// A worker took a key that waited `waited` in line, leaving `depth` keys there.
    pub fn observe_taken(&self, waited: Duration, depth: usize) {
        let labels = QueueLabels { name: QUEUE_NAME };
        self.queue_depth
            .get_or_create(&labels)
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
        self.queue_duration
            .get_or_create(&labels)
            .observe(waited.as_secs_f64());
    }

    /// A worker held a key for `took`.
    pub fn observe_worked(&self, took: Duration) {
        self.work_duration
            .get_or_create(&QueueLabels { name: QUEUE_NAME })
            .observe(took.as_secs_f64());
    }

    /// Sets how many HPAs the controller knows (`num_horizontal_pod_autoscalers`).
    pub fn set_tracked(&self, count: usize) {
        self.tracked.set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// Forgets the desired-replicas series of an HPA that was deleted.
    pub fn forget(&self, key: &str) {
        if let Some((namespace, name)) = key.split_once('/') {
            self.desired.remove(&HpaLabels {
                namespace: namespace.into(),
                hpa_name: name.into(),
            });
        }
    }

    /// The OpenMetrics text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests;
