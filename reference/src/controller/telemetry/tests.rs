//! Simulated reconciles through the pure core, reported to the metrics, and the rendered text
//! checked against upstream's names, label sets, values and buckets.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, ExternalMetricSource, HorizontalPodAutoscaler,
    HorizontalPodAutoscalerSpec, HorizontalPodAutoscalerStatus, MetricIdentifier, MetricSpec,
    MetricTarget,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::decide::decide;
use crate::memory::Memory;
use crate::settings::Settings;
use crate::time::Time;
use crate::view::{MetricReading, MetricValues, Observation, ScaleView};

const NOW: Time = Time::from_secs(1_700_000_000);

/// An External metric with an average-value target of 2 per replica.
fn external() -> MetricSpec {
    MetricSpec {
        type_: "External".into(),
        external: Some(ExternalMetricSource {
            metric: MetricIdentifier {
                name: "queue".into(),
                selector: None,
            },
            target: MetricTarget {
                type_: "AverageValue".into(),
                average_value: Some(Quantity("2".into())),
                ..MetricTarget::default()
            },
        }),
        ..MetricSpec::default()
    }
}

/// A metric of a source type upstream does not know: a spec error.
fn bogus() -> MetricSpec {
    MetricSpec {
        type_: "Bogus".into(),
        ..MetricSpec::default()
    }
}

/// The external metric's reading: `total` over all replicas.
fn reading(total: i64) -> MetricReading {
    Ok(MetricValues::External {
        values: vec![total * 1000],
        timestamp: NOW,
    })
}

/// An HPA whose last status said `status_current` replicas.
fn hpa(metrics: Vec<MetricSpec>, status_current: i32) -> HorizontalPodAutoscaler {
    HorizontalPodAutoscaler {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: HorizontalPodAutoscalerSpec {
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some("apps/v1".into()),
                kind: "Deployment".into(),
                name: "web".into(),
            },
            min_replicas: Some(1),
            max_replicas: 10,
            metrics: Some(metrics),
            behavior: None,
        },
        status: Some(HorizontalPodAutoscalerStatus {
            current_replicas: Some(status_current),
            ..HorizontalPodAutoscalerStatus::default()
        }),
    }
}

/// One reconcile of `hpa` with the scale at 3 replicas, through the core, with the scale write
/// answering `write`; reported to `metrics` as taking 150 ms, each metric 25 ms.
fn reconcile(
    metrics: &ControllerMetrics,
    hpa: &HorizontalPodAutoscaler,
    readings: &[MetricReading],
    write: Result<(), String>,
) -> Decision {
    let obs = Observation {
        now: NOW,
        hpa,
        scale: Ok(ScaleView {
            spec_replicas: 3,
            status_replicas: 3,
            selector: Some("app=web".into()),
        }),
        pods: &[],
        metrics: readings,
        hpas_selecting_pods: &[],
    };
    // A non-nil, empty recommendation list: scale-downs are not held by the initial size.
    let mut memory = Memory {
        recommendations: Some(Vec::new()),
        ..Memory::default()
    };
    let plan = decide(&obs, &Settings::default(), &mut memory);
    let current = plan.current_replicas;
    let decision = plan.finish(write, &mut memory);
    let took = vec![Duration::from_millis(25); readings.len()];
    metrics.observe_reconcile(hpa, current, &decision, Duration::from_millis(150), &took);
    decision
}

/// The sample lines of the exposition, without comments.
fn samples(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.starts_with('#')).collect()
}

/// A sample line's name, labels and value.
fn parse(line: &str) -> (String, BTreeMap<String, String>, String) {
    let (series, value) = line.rsplit_once(' ').expect("a value");
    let (name, labels) = match series.split_once('{') {
        Some((name, rest)) => (name, rest.trim_end_matches('}')),
        None => (series, ""),
    };
    let labels = labels
        .split(',')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (k, v) = l.split_once('=').expect("label=value");
            (k.to_string(), v.trim_matches('"').to_string())
        })
        .collect();
    (name.to_string(), labels, value.to_string())
}

/// The value of the sample named `name` with exactly these labels, in any order.
fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<String> {
    let want: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    samples(text)
        .into_iter()
        .map(parse)
        .find_map(|(n, l, v)| (n == name && l == want).then_some(v))
}

/// The label sets of the samples named `name`.
fn label_sets(text: &str, name: &str) -> Vec<BTreeMap<String, String>> {
    samples(text)
        .into_iter()
        .map(parse)
        .filter(|(n, _, _)| n == name)
        .map(|(_, l, _)| l)
        .collect()
}

const RECONCILIATIONS: &str = "horizontal_pod_autoscaler_controller_reconciliations_total";
const RECONCILIATION_DURATION: &str =
    "horizontal_pod_autoscaler_controller_reconciliation_duration_seconds";
const COMPUTATIONS: &str = "horizontal_pod_autoscaler_controller_metric_computation_total";
const COMPUTATION_DURATION: &str =
    "horizontal_pod_autoscaler_controller_metric_computation_duration_seconds";

/// `action` and `error` labels.
fn ae(action: &'static str, error: &'static str) -> Vec<(&'static str, &'static str)> {
    vec![("action", action), ("error", error)]
}

/// `action`, `error` and `metric_type` labels.
fn aem(
    action: &'static str,
    error: &'static str,
    metric_type: &'static str,
) -> Vec<(&'static str, &'static str)> {
    vec![
        ("action", action),
        ("error", error),
        ("metric_type", metric_type),
    ]
}

fn with_le<'a>(labels: &[(&'a str, &'a str)], le: &'a str) -> Vec<(&'a str, &'a str)> {
    let mut l = labels.to_vec();
    l.push(("le", le));
    l
}

#[test]
fn the_exposed_families_are_upstreams() {
    let metrics = ControllerMetrics::default();
    metrics.set_tracked(1);
    metrics.observe_taken(std::time::Duration::from_millis(3), 2);
    metrics.observe_worked(std::time::Duration::from_millis(40));
    let h = hpa(vec![external()], 3);
    let decision = reconcile(&metrics, &h, &[reading(10)], Ok(()));
    let text = metrics.render();
    let mut names: Vec<String> = samples(&text)
        .into_iter()
        .map(|l| parse(l).0)
        .map(|n| {
            ["_bucket", "_sum", "_count"]
                .iter()
                .fold(n, |n, s| n.strip_suffix(s).map(str::to_string).unwrap_or(n))
        })
        .collect();
    names.sort();
    names.dedup();
    assert_eq!(
        names,
        [
            "horizontal_pod_autoscaler_controller_desired_replicas",
            "horizontal_pod_autoscaler_controller_metric_computation_duration_seconds",
            "horizontal_pod_autoscaler_controller_metric_computation_total",
            "horizontal_pod_autoscaler_controller_num_horizontal_pod_autoscalers",
            "horizontal_pod_autoscaler_controller_reconciliation_duration_seconds",
            "horizontal_pod_autoscaler_controller_reconciliations_total",
            "workqueue_depth",
            "workqueue_queue_duration_seconds",
            "workqueue_work_duration_seconds",
        ],
        "{text}"
    );
    for help in [
        "# HELP horizontal_pod_autoscaler_controller_reconciliations [ALPHA] Number of reconciliations of HPA controller. The label 'action' should be either 'scale_down', 'scale_up', or 'none'. Also, the label 'error' should be either 'spec', 'internal', or 'none'. Note that if both spec and internal errors happen during a reconciliation, the first one to occur is reported in `error` label.\n",
        "# TYPE horizontal_pod_autoscaler_controller_reconciliations counter\n",
        "# TYPE horizontal_pod_autoscaler_controller_reconciliation_duration_seconds histogram\n",
        "# TYPE horizontal_pod_autoscaler_controller_metric_computation counter\n",
        "# TYPE horizontal_pod_autoscaler_controller_metric_computation_duration_seconds histogram\n",
        "# TYPE horizontal_pod_autoscaler_controller_num_horizontal_pod_autoscalers gauge\n",
        "# TYPE horizontal_pod_autoscaler_controller_desired_replicas gauge\n",
        "# HELP workqueue_depth [ALPHA] Current depth of workqueue.\n",
        "# TYPE workqueue_queue_duration_seconds histogram\n",
        "# TYPE workqueue_work_duration_seconds histogram\n",
    ] {
        assert!(text.contains(help), "{help}in\n{text}");
    }
    assert_eq!(
        value(
            &text,
            "horizontal_pod_autoscaler_controller_num_horizontal_pod_autoscalers",
            &[]
        )
        .as_deref(),
        Some("1")
    );
    let desired = [("namespace", "default"), ("hpa_name", "web")];
    assert_eq!(
        value(
            &text,
            "horizontal_pod_autoscaler_controller_desired_replicas",
            &desired
        ),
        Some(decision.status.desired_replicas.to_string())
    );
    let queue = [("name", "horizontalpodautoscaler")];
    assert_eq!(
        value(&text, "workqueue_depth", &queue).as_deref(),
        Some("2")
    );
    // client-go's buckets, 1e-8 to 10 s by factors of ten (their labels carry the float
    // products' last digits, as upstream's do): 3 ms waited falls in the 0.01 bucket, not the
    // 0.001 one; 40 ms worked in 0.1, not 0.01.
    for (family, under, within) in [
        ("workqueue_queue_duration_seconds", 0.001, 0.01),
        ("workqueue_work_duration_seconds", 0.01, 0.1),
    ] {
        let bucket = format!("{family}_bucket");
        let les: Vec<String> = label_sets(&text, &bucket)
            .into_iter()
            .map(|l| l["le"].clone())
            .collect();
        assert_eq!(les.len(), 11, "{family}: ten buckets and +Inf in\n{text}");
        let le_of = |want: f64| {
            les.iter()
                .find(|le| {
                    le.parse::<f64>()
                        .is_ok_and(|v| (v / want - 1.0).abs() < 1e-9)
                })
                .unwrap_or_else(|| panic!("{family}: no bucket at {want} in {les:?}"))
                .as_str()
        };
        assert_eq!(
            value(&text, &bucket, &with_le(&queue, le_of(under))).as_deref(),
            Some("0"),
            "{text}"
        );
        assert_eq!(
            value(&text, &bucket, &with_le(&queue, le_of(within))).as_deref(),
            Some("1"),
            "{text}"
        );
    }
    // A deleted HPA takes its series with it (the count is the context's: see controller tests).
    metrics.forget("default/web");
    let text = metrics.render();
    assert_eq!(
        value(
            &text,
            "horizontal_pod_autoscaler_controller_desired_replicas",
            &desired
        ),
        None
    );
}

#[test]
fn histograms_have_upstreams_buckets() {
    let metrics = ControllerMetrics::default();
    let h = hpa(vec![external()], 3);
    reconcile(&metrics, &h, &[reading(10)], Ok(()));
    let text = metrics.render();
    let labels = ae("scale_up", "none");
    let les = [
        "0.001", "0.002", "0.004", "0.008", "0.016", "0.032", "0.064", "0.128", "0.256", "0.512",
        "1.024", "2.048", "4.096", "8.192", "16.384", "+Inf",
    ];
    let bucket = format!("{RECONCILIATION_DURATION}_bucket");
    // Exactly these buckets, each with its cumulative count: 150 ms is above 0.128.
    let mut have: Vec<(String, String)> = label_sets(&text, &bucket)
        .into_iter()
        .map(|l| l["le"].clone())
        .map(|le| {
            let v = value(&text, &bucket, &with_le(&labels, &le)).unwrap_or_default();
            (le, v)
        })
        .collect();
    have.sort_by(|a, b| {
        let f = |s: &str| s.parse::<f64>().unwrap_or(f64::INFINITY);
        f(&a.0).total_cmp(&f(&b.0))
    });
    let want: Vec<(String, String)> = les
        .iter()
        .enumerate()
        .map(|(i, le)| (le.to_string(), if i < 8 { "0" } else { "1" }.to_string()))
        .collect();
    assert_eq!(have, want, "{text}");
    assert_eq!(
        value(&text, &format!("{RECONCILIATION_DURATION}_sum"), &labels).as_deref(),
        Some("0.15")
    );
    assert_eq!(
        value(&text, &format!("{RECONCILIATION_DURATION}_count"), &labels).as_deref(),
        Some("1")
    );
    // The metric's own histogram: 25 ms falls in le=0.032.
    let m = aem("scale_up", "none", "External");
    let bucket = format!("{COMPUTATION_DURATION}_bucket");
    assert_eq!(
        value(&text, &bucket, &with_le(&m, "0.016")).as_deref(),
        Some("0")
    );
    assert_eq!(
        value(&text, &bucket, &with_le(&m, "0.032")).as_deref(),
        Some("1")
    );
    assert_eq!(label_sets(&text, &bucket).len(), les.len(), "{text}");
}

#[test]
fn each_action_and_error_is_labelled_as_upstream_labels_it() {
    let metrics = ControllerMetrics::default();
    let one = hpa(vec![external()], 3);
    // 10 over 3 replicas at 2 each: 5 replicas.
    let up = reconcile(&metrics, &one, &[reading(10)], Ok(()));
    assert_eq!(up.scaled_to, Some(5));
    // 2 in all: 1 replica.
    let down = reconcile(&metrics, &one, &[reading(2)], Ok(()));
    assert_eq!(down.scaled_to, Some(1));
    // 6 in all: 3 replicas, no change.
    let same = reconcile(&metrics, &one, &[reading(6)], Ok(()));
    assert_eq!((same.scaled_to, same.error.as_deref()), (None, None));
    // The metrics API fails: an internal error, no action.
    let failed = reconcile(
        &metrics,
        &one,
        &[Err(
            "unable to fetch metrics from external metrics API: boom".into(),
        )],
        Ok(()),
    );
    assert!(failed.error.is_some());
    // The scale write fails: the reconcile errs and did not scale.
    let unwritten = reconcile(&metrics, &one, &[reading(10)], Err("conflict".into()));
    assert!(unwritten.error.is_some());
    // An unknown metric type: a spec error.
    let spec = reconcile(
        &metrics,
        &hpa(vec![bogus()], 3),
        &[Err("n/a".into())],
        Ok(()),
    );
    assert!(spec.error.is_some());

    let text = metrics.render();
    let reconciles = |a, e| value(&text, RECONCILIATIONS, &ae(a, e));
    assert_eq!(
        reconciles("scale_up", "none").as_deref(),
        Some("1"),
        "{text}"
    );
    assert_eq!(
        reconciles("scale_down", "none").as_deref(),
        Some("1"),
        "{text}"
    );
    assert_eq!(reconciles("none", "none").as_deref(), Some("1"), "{text}");
    assert_eq!(
        reconciles("none", "internal").as_deref(),
        Some("2"),
        "{text}"
    );
    assert_eq!(reconciles("none", "spec").as_deref(), Some("1"), "{text}");
    assert_eq!(label_sets(&text, RECONCILIATIONS).len(), 5, "{text}");
    let counted = |a, e| {
        value(
            &text,
            &format!("{RECONCILIATION_DURATION}_count"),
            &ae(a, e),
        )
    };
    assert_eq!(counted("none", "internal").as_deref(), Some("2"), "{text}");

    // Metrics compare with the HPA's status (3 replicas): 5 is up, 1 down, 3 none; a failed metric
    // has no action. The write failing does not change the metric's own labels.
    let computed = |a, e, t| value(&text, COMPUTATIONS, &aem(a, e, t));
    assert_eq!(
        computed("scale_up", "none", "External").as_deref(),
        Some("2"),
        "{text}"
    );
    assert_eq!(
        computed("scale_down", "none", "External").as_deref(),
        Some("1"),
        "{text}"
    );
    assert_eq!(
        computed("none", "none", "External").as_deref(),
        Some("1"),
        "{text}"
    );
    assert_eq!(
        computed("none", "internal", "External").as_deref(),
        Some("1"),
        "{text}"
    );
    assert_eq!(
        computed("none", "spec", "Bogus").as_deref(),
        Some("1"),
        "{text}"
    );
    assert_eq!(label_sets(&text, COMPUTATIONS).len(), 5, "{text}");
}

#[test]
fn a_metric_is_labelled_against_the_status_not_the_scale() {
    let metrics = ControllerMetrics::default();
    // The scale has 3 replicas, the HPA's status still says 6: a proposal of 5 scales the target
    // up, but the metric computation is labelled scale_down, as upstream labels it.
    let h = hpa(vec![external()], 6);
    let d = reconcile(&metrics, &h, &[reading(10)], Ok(()));
    assert_eq!(d.scaled_to, Some(5));
    let text = metrics.render();
    assert_eq!(
        value(&text, COMPUTATIONS, &aem("scale_down", "none", "External")).as_deref(),
        Some("1"),
        "{text}"
    );
    assert_eq!(
        value(&text, RECONCILIATIONS, &ae("scale_up", "none")).as_deref(),
        Some("1"),
        "{text}"
    );
}

#[test]
fn the_first_error_counts_and_a_failed_status_write_replaces_a_partial_one() {
    let metrics = ControllerMetrics::default();
    // A spec error on the first metric, a valid scale-up on the second: scaling goes on and the
    // reconcile returns the spec error.
    let h = hpa(vec![bogus(), external()], 3);
    let readings = [Err("n/a".to_string()), reading(10)];
    let mut d = reconcile(&metrics, &h, &readings, Ok(()));
    assert_eq!(d.scaled_to, Some(5));
    let text = metrics.render();
    assert_eq!(
        value(&text, RECONCILIATIONS, &ae("scale_up", "spec")).as_deref(),
        Some("1"),
        "{text}"
    );
    assert_eq!(
        value(&text, COMPUTATIONS, &aem("none", "spec", "Bogus")).as_deref(),
        Some("1"),
        "{text}"
    );
    assert_eq!(
        value(&text, COMPUTATIONS, &aem("scale_up", "none", "External")).as_deref(),
        Some("1"),
        "{text}"
    );
    // Then the status write fails: upstream returns that error instead, an internal one.
    d.status_write_failed("default/web", "the server is on fire");
    assert_eq!(
        d.error.as_deref(),
        Some("failed to update status for default/web: the server is on fire")
    );
    let metrics = ControllerMetrics::default();
    metrics.observe_reconcile(&h, 3, &d, Duration::from_millis(1), &[]);
    let text = metrics.render();
    assert_eq!(
        value(&text, RECONCILIATIONS, &ae("scale_up", "internal")).as_deref(),
        Some("1"),
        "{text}"
    );
}

#[test]
fn a_failed_status_write_after_a_failed_reconcile_keeps_its_error() {
    let h = hpa(vec![external()], 3);
    let metrics = ControllerMetrics::default();
    let mut d = reconcile(&metrics, &h, &[Err("boom".into())], Ok(()));
    let before = d.error.clone();
    d.status_write_failed("default/web", "nope");
    assert_eq!(d.error, before);
    // Upstream writes the status before it records FailedComputeMetricsReplicas.
    let reasons: Vec<&str> = d.events.iter().map(|e| e.reason.as_str()).collect();
    assert_eq!(
        reasons,
        [
            "FailedGetExternalMetric",
            "FailedUpdateStatus",
            "FailedComputeMetricsReplicas"
        ]
    );
}
