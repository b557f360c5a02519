//! One metric of the HPA's spec → one replica proposal, its `currentMetrics` status entry and its
//! name (upstream's `computeReplicasForMetric` and `computeStatusFor*Metric`). Errors carry the
//! condition reason and both upstream error texts: the inner one (condition and event) and the
//! wrapped one (what the reconcile returns).

use k8s_openapi::api::autoscaling::v2::{
    ContainerResourceMetricStatus, CrossVersionObjectReference, ExternalMetricStatus,
    MetricIdentifier, MetricSpec, MetricStatus, MetricValueStatus, ObjectMetricStatus,
    PodsMetricStatus, ResourceMetricStatus,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::calculator::{self, CalcContext, Reasoning};
use crate::outcome::ErrorOrigin;
use crate::quantity;
use crate::recycle;
use crate::time::Time;
use crate::view::{MetricReading, MetricValues};

/// A metric that produced a proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricOutcome {
    /// Proposed replicas.
    pub replicas: i32,
    /// The name used in messages, e.g. `cpu resource utilization (percentage of request)`.
    pub name: String,
    /// The metric's timestamp.
    pub timestamp: Time,
    /// The `currentMetrics` entry.
    pub status: MetricStatus,
    /// How the proposal was reached.
    pub reasoning: Reasoning,
}

/// A metric that could not produce a proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricFailure {
    /// The `ScalingActive=False` reason and Warning event reason, e.g. `FailedGetResourceMetric`.
    pub reason: &'static str,
    /// The error text of the condition message and the event.
    pub message: String,
    /// The error as the reconcile wraps it (first error of `invalid metrics (…)`).
    pub error: String,
    /// Whether the HPA's spec is at fault (an unknown metric source type) or anything else.
    pub origin: ErrorOrigin,
}

fn fail(reason: &'static str, message: String, wrap: impl FnOnce(&str) -> String) -> MetricFailure {
    let error = wrap(&message);
    MetricFailure {
        reason,
        message,
        error,
        origin: ErrorOrigin::Internal,
    }
}

/// Formats a milli-value as a Quantity (DecimalSI; BinarySI for memory, like upstream).
pub fn quantity_of(milli: i64, resource: Option<&str>) -> Quantity {
    recycle::quantity(|s| {
        if resource == Some("memory") {
            quantity::write_milli_binary(s, milli);
        } else {
            quantity::write_milli_decimal(s, milli);
        }
    })
}

fn milli(q: &Option<Quantity>) -> Option<Result<i64, String>> {
    q.as_ref()
        .map(|q| quantity::milli_value(&q.0).map_err(|e| e.to_string()))
}

/// Go's `%+v` of a `*metav1.LabelSelector`: its generated `String()`, `nil` for a nil selector,
/// labels in key order, each expression as `LabelSelectorRequirement{Key:…,Operator:…,Values:[…],}`.
pub fn selector_text(sel: &Option<LabelSelector>) -> String {
    let Some(s) = sel else {
        return "nil".to_string();
    };
    let labels: String = s
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}: {v},"))
        .collect();
    let expressions: String = s
        .match_expressions
        .iter()
        .flatten()
        .map(|e| {
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                e.key,
                e.operator,
                e.values.as_deref().unwrap_or_default().join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

fn per_pod_samples(reading: &MetricReading) -> Result<(&crate::view::Samples, Time), String> {
    match reading {
        Err(e) => Err(e.clone()),
        Ok(MetricValues::PerPod { samples, timestamp }) => Ok((samples, *timestamp)),
        Ok(_) => Err("the metrics API returned a value of the wrong kind for this metric".into()),
    }
}

/// Computes one metric. `spec_replicas` and `status_replicas` come from the scale.
pub fn compute_metric(
    ctx: &CalcContext<'_>,
    spec: &MetricSpec,
    reading: &MetricReading,
    spec_replicas: i32,
    status_replicas: i32,
) -> Result<MetricOutcome, MetricFailure> {
    match spec.type_.as_str() {
        "Resource" => {
            let Some(src) = &spec.resource else {
                return Err(unknown_source(spec));
            };
            resource_generic(ctx, &src.target, &src.name, None, reading, spec_replicas)
                .map(|(outcome, current)| MetricOutcome {
                    status: MetricStatus {
                        type_: recycle::text("Resource"),
                        resource: Some(ResourceMetricStatus {
                            name: recycle::text(&src.name),
                            current,
                        }),
                        ..MetricStatus::default()
                    },
                    ..outcome
                })
                .map_err(|m| {
                    fail("FailedGetResourceMetric", m, |e| {
                        format!("failed to get {} resource metric value: {e}", src.name)
                    })
                })
        }
        "ContainerResource" => {
            let Some(src) = &spec.container_resource else {
                return Err(unknown_source(spec));
            };
            resource_generic(
                ctx,
                &src.target,
                &src.name,
                Some(&src.container),
                reading,
                spec_replicas,
            )
            .map(|(outcome, current)| MetricOutcome {
                status: MetricStatus {
                    type_: recycle::text("ContainerResource"),
                    container_resource: Some(ContainerResourceMetricStatus {
                        name: recycle::text(&src.name),
                        container: recycle::text(&src.container),
                        current,
                    }),
                    ..MetricStatus::default()
                },
                ..outcome
            })
            .map_err(|m| {
                fail("FailedGetContainerResourceMetric", m, |e| {
                    format!(
                        "failed to get {} container metric value: {e}",
                        src.container
                    )
                })
            })
        }
        "Pods" => {
            let Some(src) = &spec.pods else {
                return Err(unknown_source(spec));
            };
            let wrap = |e: &str| format!("failed to get pods metric value: {e}");
            let target = match milli(&src.target.average_value) {
                Some(Ok(v)) => v,
                Some(Err(e)) => return Err(fail("FailedGetPodsMetric", e, wrap)),
                None => {
                    return Err(fail(
                        "FailedGetPodsMetric",
                        "invalid pods metric source: no average value target was set".into(),
                        wrap,
                    ));
                }
            };
            let name = &src.metric.name;
            let (samples, ts) = per_pod_samples(reading).map_err(|e| {
                fail(
                    "FailedGetPodsMetric",
                    format!("unable to get metric {name}: {e}"),
                    wrap,
                )
            })?;
            let p =
                calculator::plain_metric_replicas(ctx, spec_replicas, target, None, samples, ts)
                    .map_err(|e| fail("FailedGetPodsMetric", e, wrap))?;
            Ok(MetricOutcome {
                replicas: p.replicas,
                name: recycle::format(format_args!("pods metric {name}")),
                timestamp: p.timestamp,
                status: MetricStatus {
                    type_: recycle::text("Pods"),
                    pods: Some(PodsMetricStatus {
                        metric: metric_id(&src.metric),
                        current: MetricValueStatus {
                            average_value: Some(quantity_of(p.usage, None)),
                            ..MetricValueStatus::default()
                        },
                    }),
                    ..MetricStatus::default()
                },
                reasoning: p.reasoning,
            })
        }
        "Object" => {
            let Some(src) = &spec.object else {
                return Err(unknown_source(spec));
            };
            let wrap = |e: &str| format!("failed to get object metric value: {e}");
            let name = &src.metric.name;
            let obj = &src.described_object;
            let value = match reading {
                Ok(MetricValues::Object { value, timestamp }) => Ok((*value, *timestamp)),
                Ok(_) => Err(
                    "the metrics API returned a value of the wrong kind for this metric"
                        .to_string(),
                ),
                Err(e) => Err(e.clone()),
            };
            let fetch_err = |e: String| {
                let message = if ctx.changes.object_metric_error_names_the_object_first {
                    format!(
                        "unable to get metric {name} on {} {}/{}: {e}",
                        obj.kind, ctx.namespace, obj.name
                    )
                } else {
                    // Before 1.37, upstream's quirk: "unable to get metric %s: %v on %s %s/%s"
                    // filled with (metric, kind, namespace, name, err).
                    format!(
                        "unable to get metric {name}: {} on {} {}/{}",
                        obj.kind, ctx.namespace, obj.name, e
                    )
                };
                fail("FailedGetObjectMetric", message, wrap)
            };
            let target_type = src.target.type_.as_str();
            if target_type == "Value" && src.target.value.is_some() {
                let target = match milli(&src.target.value) {
                    Some(Ok(v)) => v,
                    _ => {
                        return Err(fail(
                            "FailedGetObjectMetric",
                            "invalid object metric target value".into(),
                            wrap,
                        ));
                    }
                };
                let (value, _) = value.map_err(fetch_err)?;
                let p = calculator::object_value_replicas(ctx, spec_replicas, target, value)
                    .map_err(|e| fail("FailedGetObjectMetric", e, wrap))?;
                Ok(MetricOutcome {
                    replicas: p.replicas,
                    name: recycle::format(format_args!("{} metric {}", obj.kind, name)),
                    timestamp: p.timestamp,
                    status: object_status(
                        src,
                        MetricValueStatus {
                            value: Some(quantity_of(p.usage, None)),
                            ..MetricValueStatus::default()
                        },
                    ),
                    reasoning: p.reasoning,
                })
            } else if target_type == "AverageValue" && src.target.average_value.is_some() {
                let target = match milli(&src.target.average_value) {
                    Some(Ok(v)) => v,
                    _ => {
                        return Err(fail(
                            "FailedGetObjectMetric",
                            "invalid object metric target average value".into(),
                            wrap,
                        ));
                    }
                };
                let wrap_avg = |e: &str| {
                    format!(
                        "failed to get object metric value: failed to get {name} object metric: {e}"
                    )
                };
                let (value, ts) = value.map_err(|e| {
                    let f = fetch_err(e);
                    MetricFailure {
                        error: wrap_avg(&f.message),
                        ..f
                    }
                })?;
                let p =
                    calculator::object_per_pod_replicas(ctx, status_replicas, target, value, ts);
                Ok(MetricOutcome {
                    replicas: p.replicas,
                    name: format!(
                        "external metric {}({})",
                        name,
                        selector_text(&src.metric.selector)
                    ),
                    timestamp: p.timestamp,
                    status: {
                        let mut status = object_status(
                            src,
                            MetricValueStatus {
                                average_value: Some(quantity_of(p.usage, None)),
                                ..MetricValueStatus::default()
                            },
                        );
                        // Before 1.33 this status was built without the described object.
                        if let (false, Some(o)) = (
                            ctx.changes.object_average_status_names_the_object,
                            status.object.as_mut(),
                        ) {
                            o.described_object = CrossVersionObjectReference::default();
                        }
                        status
                    },
                    reasoning: p.reasoning,
                })
            } else {
                Err(fail(
                    "FailedGetObjectMetric",
                    "invalid object metric source: neither a value target nor an average value target was set".into(),
                    wrap,
                ))
            }
        }
        "External" => {
            let Some(src) = &spec.external else {
                return Err(unknown_source(spec));
            };
            let name = &src.metric.name;
            let wrap = |e: &str| format!("failed to get {name} external metric value: {e}");
            let values = match reading {
                Ok(MetricValues::External { values, timestamp }) => {
                    Ok((values.as_slice(), *timestamp))
                }
                Ok(_) => Err(
                    "the metrics API returned a value of the wrong kind for this metric"
                        .to_string(),
                ),
                Err(e) => Err(e.clone()),
            };
            let fetch_err = |e: String| {
                fail(
                    "FailedGetExternalMetric",
                    format!(
                        "unable to get external metric {}/{}/{}: {}",
                        ctx.namespace,
                        name,
                        selector_text(&src.metric.selector),
                        e
                    ),
                    wrap,
                )
            };
            let metric_name = format!(
                "external metric {}({})",
                name,
                selector_text(&src.metric.selector)
            );
            if let Some(avg) = milli(&src.target.average_value) {
                let target = avg.map_err(|e| fail("FailedGetExternalMetric", e, wrap))?;
                let (values, ts) = values.map_err(|e| {
                    let f = fetch_err(e);
                    let error = format!("failed to get {name} external metric value: failed to get {name} external metric: {}", f.message);
                    MetricFailure { error, ..f }
                })?;
                let p =
                    calculator::external_per_pod_replicas(ctx, status_replicas, target, values, ts);
                Ok(MetricOutcome {
                    replicas: p.replicas,
                    name: metric_name,
                    timestamp: p.timestamp,
                    status: external_status(
                        src,
                        MetricValueStatus {
                            average_value: Some(quantity_of(p.usage, None)),
                            ..MetricValueStatus::default()
                        },
                    ),
                    reasoning: p.reasoning,
                })
            } else if let Some(v) = milli(&src.target.value) {
                let target = v.map_err(|e| fail("FailedGetExternalMetric", e, wrap))?;
                let (values, _) = values.map_err(|e| {
                    let f = fetch_err(e);
                    let error = format!("failed to get {name} external metric value: failed to get external metric {name}: {}", f.message);
                    MetricFailure { error, ..f }
                })?;
                let p = calculator::external_value_replicas(ctx, spec_replicas, target, values)
                    .map_err(|e| fail("FailedGetExternalMetric", e, wrap))?;
                Ok(MetricOutcome {
                    replicas: p.replicas,
                    name: metric_name,
                    timestamp: p.timestamp,
                    status: external_status(
                        src,
                        MetricValueStatus {
                            value: Some(quantity_of(p.usage, None)),
                            ..MetricValueStatus::default()
                        },
                    ),
                    reasoning: p.reasoning,
                })
            } else {
                Err(fail(
                    "FailedGetExternalMetric",
                    "invalid external metric source: neither a value target nor an average value target was set".into(),
                    wrap,
                ))
            }
        }
        _ => Err(unknown_source(spec)),
    }
}

/// Upstream's only spec error of a metric (it wraps `errSpec`): a source type it does not know.
fn unknown_source(spec: &MetricSpec) -> MetricFailure {
    let message = format!("unknown metric source type {:?}", spec.type_);
    MetricFailure {
        reason: "InvalidMetricSourceType",
        error: message.clone(),
        message,
        origin: ErrorOrigin::Spec,
    }
}

fn metric_id(m: &MetricIdentifier) -> MetricIdentifier {
    MetricIdentifier {
        name: recycle::text(&m.name),
        selector: m.selector.clone(),
    }
}

fn object_status(
    src: &k8s_openapi::api::autoscaling::v2::ObjectMetricSource,
    current: MetricValueStatus,
) -> MetricStatus {
    MetricStatus {
        type_: recycle::text("Object"),
        object: Some(ObjectMetricStatus {
            described_object: CrossVersionObjectReference {
                api_version: src
                    .described_object
                    .api_version
                    .as_deref()
                    .map(recycle::text),
                kind: recycle::text(&src.described_object.kind),
                name: recycle::text(&src.described_object.name),
            },
            metric: metric_id(&src.metric),
            current,
        }),
        ..MetricStatus::default()
    }
}

fn external_status(
    src: &k8s_openapi::api::autoscaling::v2::ExternalMetricSource,
    current: MetricValueStatus,
) -> MetricStatus {
    MetricStatus {
        type_: recycle::text("External"),
        external: Some(ExternalMetricStatus {
            metric: metric_id(&src.metric),
            current,
        }),
        ..MetricStatus::default()
    }
}

/// The resource whose format a Resource average takes: memory is BinarySI since 1.34, DecimalSI
/// like every other resource before.
fn formatted_as<'r>(ctx: &CalcContext<'_>, resource: &'r str) -> Option<&'r str> {
    Some(resource).filter(|_| ctx.changes.memory_average_in_binary_si)
}

/// The shared Resource/ContainerResource path (`computeStatusForResourceMetricGeneric`). On error
/// returns the inner message (before the per-source wrapping).
fn resource_generic(
    ctx: &CalcContext<'_>,
    target: &k8s_openapi::api::autoscaling::v2::MetricTarget,
    resource: &str,
    container: Option<&str>,
    reading: &MetricReading,
    spec_replicas: i32,
) -> Result<(MetricOutcome, MetricValueStatus), String> {
    let fetch = |what: &str| -> Result<(&crate::view::Samples, Time), String> {
        per_pod_samples(reading).map_err(|e| {
            format!("failed to get {resource} {what}: unable to get metrics for resource {resource}: {e}")
        })
    };
    if let Some(avg) = milli(&target.average_value) {
        let target = avg?;
        let (samples, ts) = fetch("usage")?;
        let p = calculator::plain_metric_replicas(
            ctx,
            spec_replicas,
            target,
            Some(resource),
            samples,
            ts,
        )
        .map_err(|e| format!("failed to get {resource} usage: {e}"))?;
        let current = MetricValueStatus {
            average_value: Some(quantity_of(p.usage, formatted_as(ctx, resource))),
            ..MetricValueStatus::default()
        };
        return Ok((
            MetricOutcome {
                replicas: p.replicas,
                name: recycle::format(format_args!("{resource} resource")),
                timestamp: p.timestamp,
                status: MetricStatus::default(),
                reasoning: p.reasoning,
            },
            current,
        ));
    }
    let Some(target_utilization) = target.average_utilization else {
        return Err("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set".into());
    };
    let (samples, ts) = fetch("utilization")?;
    let p = calculator::resource_replicas(
        ctx,
        spec_replicas,
        target_utilization,
        resource,
        container,
        samples,
        ts,
    )
    .map_err(|e| format!("failed to get {resource} utilization: {e}"))?;
    let name = if container.is_some() {
        recycle::format(format_args!(
            "{resource} container resource utilization (percentage of request)"
        ))
    } else {
        recycle::format(format_args!(
            "{resource} resource utilization (percentage of request)"
        ))
    };
    let current = MetricValueStatus {
        average_utilization: Some(p.utilization),
        average_value: Some(quantity_of(p.raw_average, formatted_as(ctx, resource))),
        ..MetricValueStatus::default()
    };
    Ok((
        MetricOutcome {
            replicas: p.replicas,
            name,
            timestamp: p.timestamp,
            status: MetricStatus::default(),
            reasoning: p.reasoning,
        },
        current,
    ))
}
