//! One replica proposal per metric source (upstream's `ReplicaCalculator` methods).
//!
//! Every proposal rounds up (`ceil`). Error texts are upstream's, since they reach conditions and
//! events verbatim.

use std::time::Duration;

use super::grouping::{Group, PodGroups, PodOrder, walk_pods};
use super::requests::{RequestRules, pod_request, request_of};
use super::usage::{Tolerances, metric_usage_ratio, resource_utilization_ratio};
use crate::gomath::{go_i32, go_i64};
use crate::time::Time;
use crate::view::{ConditionStatus, PodPhase, PodView, Samples};

/// What a calculator needs besides the metric itself.
#[derive(Debug, Clone, Copy)]
pub struct CalcContext<'a> {
    /// The instant of the reconcile.
    pub now: Time,
    /// The HPA's namespace (for messages).
    pub namespace: &'a str,
    /// The target's pods.
    pub pods: &'a [PodView],
    /// The tolerance band for this HPA.
    pub tolerances: Tolerances,
    /// `--horizontal-pod-autoscaler-cpu-initialization-period`.
    pub cpu_initialization_period: Duration,
    /// `--horizontal-pod-autoscaler-initial-readiness-delay`.
    pub initial_readiness_delay: Duration,
    /// How a pod's request is found (the PodLevelResources gate and the release's rules).
    pub requests: RequestRules,
    /// The release's changes that the calculators read.
    pub changes: crate::version::Changes,
    /// The order of `pods` by name ([`PodOrder::of`], or an index from
    /// [`super::sorted_index`]), shared by all metrics of the decision.
    pub pod_order: PodOrder<'a>,
}

/// Why a per-pod proposal came out as it did (for traces and `explain`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reasoning {
    /// The usage ratio over ready pods with samples.
    pub ratio: f64,
    /// The ratio after missing and unready pods were filled in, if that step ran.
    pub adjusted_ratio: Option<f64>,
    /// Pods that counted.
    pub ready: usize,
    /// Pods set aside as unready.
    pub unready: usize,
    /// Pods without a sample.
    pub missing: usize,
    /// Deleted or failed pods.
    pub ignored: usize,
}

impl Reasoning {
    fn from_groups(ratio: f64, g: &PodGroups) -> Self {
        Reasoning {
            ratio,
            adjusted_ratio: None,
            ready: g.ready_count,
            unready: g.unready,
            missing: g.missing,
            ignored: g.ignored,
        }
    }
}

/// A proposal from a plain (non-utilization) metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    /// Proposed replicas.
    pub replicas: i32,
    /// The usage the status reports (average, value or per-pod value, in milli-units).
    pub usage: i64,
    /// The metric's timestamp (zero for Object/External Value targets, as upstream).
    pub timestamp: Time,
    /// How it was reached.
    pub reasoning: Reasoning,
}

/// A proposal from a resource utilization target.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceProposal {
    /// Proposed replicas.
    pub replicas: i32,
    /// Utilization percent of ready pods with samples (truncated).
    pub utilization: i32,
    /// Raw average usage of those pods (milli).
    pub raw_average: i64,
    /// The metric's timestamp.
    pub timestamp: Time,
    /// How it was reached.
    pub reasoning: Reasoning,
}

/// Go's `int32(math.Ceil(x))`.
fn ceil_i32(x: f64) -> i32 {
    go_i32(x.ceil())
}

/// Upstream caps some proposals at MaxInt32 before converting.
fn ceil_i32_capped(x: f64) -> i32 {
    if x > f64::from(i32::MAX) {
        i32::MAX
    } else {
        ceil_i32(x)
    }
}

fn no_pods(ctx: &CalcContext<'_>) -> Result<(), String> {
    if ctx.pods.is_empty() {
        return Err("no pods returned by selector while calculating replica count".to_string());
    }
    Ok(())
}

fn metrics_empty() -> String {
    "did not receive metrics for targeted pods (pods might be unready)".to_string()
}

/// Applies the dampening rules shared by the resource and plain paths once missing and unready
/// pods are filled in: no change within tolerance or when the direction reverses.
fn dampened(
    current: i32,
    ratio: f64,
    new_ratio: f64,
    counted: usize,
    tolerances: Tolerances,
) -> i32 {
    if tolerances.is_within(new_ratio)
        || (ratio < 1.0 && new_ratio > 1.0)
        || (ratio > 1.0 && new_ratio < 1.0)
    {
        return current;
    }
    let proposed = ceil_i32(new_ratio * counted as f64);
    if (new_ratio < 1.0 && proposed > current) || (new_ratio > 1.0 && proposed < current) {
        return current;
    }
    proposed
}

/// A Resource or ContainerResource metric with a utilization target (`GetResourceReplicas`).
///
/// Upstream builds the list of samples that count (ready pods' and those of names that are no
/// pod's), looks each pod's request up, then appends filled-in samples for missing and unready pods;
/// only the totals matter, so one walk over the pods sums each part.
pub fn resource_replicas(
    ctx: &CalcContext<'_>,
    current: i32,
    target_utilization: i32,
    resource: &str,
    container: Option<&str>,
    samples: &Samples,
    timestamp: Time,
) -> Result<ResourceProposal, String> {
    no_pods(ctx)?;
    // The samples that count: their number, and their value and request totals over those with
    // a known pod.
    let mut counted = 0usize;
    let (mut metrics_total, mut requests_total, mut entries) = (0i64, 0i64, 0i64);
    // Filled-in parts: missing pods' requests, the values a scale-down gives them, and unready
    // pods' requests (their value is 0).
    let fill_percent = i64::from(target_utilization.max(100));
    let (mut missing_requests, mut missing_fill, mut unready_requests) = (0i64, 0i64, 0i64);
    // The first pod (in list order) whose request is missing: upstream's request error.
    let mut request_error: Option<usize> = None;
    let groups = walk_pods(
        ctx.pods,
        ctx.pod_order,
        samples,
        Some(resource),
        ctx.cpu_initialization_period,
        ctx.initial_readiness_delay,
        ctx.now,
        |visited, sample| {
            let Some((at, pod, group)) = visited else {
                counted += 1;
                return;
            };
            let request = match request_of(pod, container, resource, ctx.requests) {
                Ok(r) => r,
                Err(_) => {
                    request_error = Some(request_error.map_or(at, |e| e.min(at)));
                    0
                }
            };
            match group {
                Group::Ready => {
                    let value = sample.map_or(0, |s| s.value);
                    counted += 1;
                    metrics_total = metrics_total.wrapping_add(value);
                    requests_total = requests_total.wrapping_add(request);
                    entries += 1;
                }
                Group::Missing => {
                    missing_requests = missing_requests.wrapping_add(request);
                    missing_fill =
                        missing_fill.wrapping_add(request.wrapping_mul(fill_percent) / 100);
                }
                Group::Unready => unready_requests = unready_requests.wrapping_add(request),
                Group::Ignored => {}
            }
        },
    );
    if counted == 0 {
        return Err(metrics_empty());
    }
    if let Some(at) = request_error {
        let pod = &ctx.pods[at];
        if let Err(e) = pod_request(pod, container, resource, ctx.requests) {
            return Err(e.to_string());
        }
    }
    let (ratio, utilization, raw_average) =
        resource_utilization_ratio(metrics_total, requests_total, entries, target_utilization)?;
    let mut reasoning = Reasoning::from_groups(ratio, &groups);
    let done = |replicas: i32, reasoning: Reasoning| ResourceProposal {
        replicas,
        utilization,
        raw_average,
        timestamp,
        reasoning,
    };

    let scale_up_with_unready = groups.unready > 0 && ratio > 1.0;
    if !scale_up_with_unready && groups.missing == 0 {
        if ctx.tolerances.is_within(ratio) {
            return Ok(done(current, reasoning));
        }
        return Ok(done(ceil_i32(ratio * groups.ready_count as f64), reasoning));
    }
    if ratio < 1.0 {
        // Scale-down: a pod without a sample is taken to use 100% of its request, or the target
        // when that is above 100%.
        metrics_total = metrics_total.wrapping_add(missing_fill);
        requests_total = requests_total.wrapping_add(missing_requests);
        counted += groups.missing;
    } else if ratio > 1.0 {
        requests_total = requests_total.wrapping_add(missing_requests);
        counted += groups.missing;
    }
    if scale_up_with_unready {
        requests_total = unready_requests.wrapping_add(requests_total);
        counted += groups.unready;
    }
    let (new_ratio, _, _) =
        resource_utilization_ratio(metrics_total, requests_total, entries, target_utilization)?;
    reasoning.adjusted_ratio = Some(new_ratio);
    Ok(done(
        dampened(current, ratio, new_ratio, counted, ctx.tolerances),
        reasoning,
    ))
}

/// Pods metrics and Resource metrics with an average-value target (`calcPlainMetricReplicas`).
/// `resource` is the resource name for Resource metrics (so CPU readiness rules apply) and `None`
/// for Pods metrics. Like [`resource_replicas`], sums instead of building upstream's lists.
pub fn plain_metric_replicas(
    ctx: &CalcContext<'_>,
    current: i32,
    target: i64,
    resource: Option<&str>,
    samples: &Samples,
    timestamp: Time,
) -> Result<Proposal, String> {
    no_pods(ctx)?;
    let (mut total, mut counted) = (0i64, 0usize);
    let groups = walk_pods(
        ctx.pods,
        ctx.pod_order,
        samples,
        resource,
        ctx.cpu_initialization_period,
        ctx.initial_readiness_delay,
        ctx.now,
        |visited, sample| {
            // Ready pods' samples and those of names that are no pod's.
            let counts = visited.is_none_or(|(_, _, group)| group == Group::Ready);
            if let (true, Some(s)) = (counts, sample) {
                total = total.wrapping_add(s.value);
                counted += 1;
            }
        },
    );
    if counted == 0 {
        return Err(metrics_empty());
    }
    let (ratio, usage) = metric_usage_ratio(total, counted, target);
    let mut reasoning = Reasoning::from_groups(ratio, &groups);
    let done = |replicas: i32, reasoning: Reasoning| Proposal {
        replicas,
        usage,
        timestamp,
        reasoning,
    };

    let scale_up_with_unready = groups.unready > 0 && ratio > 1.0;
    if !scale_up_with_unready && groups.missing == 0 {
        if ctx.tolerances.is_within(ratio) {
            return Ok(done(current, reasoning));
        }
        return Ok(done(ceil_i32(ratio * groups.ready_count as f64), reasoning));
    }
    if ratio < 1.0 {
        total = total.wrapping_add(target.wrapping_mul(groups.missing as i64));
        counted += groups.missing;
    } else if ratio > 1.0 {
        counted += groups.missing;
    }
    if scale_up_with_unready {
        counted += groups.unready;
    }
    let (new_ratio, _) = metric_usage_ratio(total, counted, target);
    reasoning.adjusted_ratio = Some(new_ratio);
    Ok(done(
        dampened(current, ratio, new_ratio, counted, ctx.tolerances),
        reasoning,
    ))
}

/// Running pods whose Ready condition is True (`getReadyPodsCount`).
fn ready_pod_count(pods: &[PodView]) -> Result<usize, String> {
    if pods.is_empty() {
        return Err(
            "unable to calculate ready pods: no pods returned by selector while calculating replica count"
                .to_string(),
        );
    }
    Ok(pods
        .iter()
        .filter(|p| {
            p.phase == PodPhase::Running
                && p.ready.is_some_and(|r| r.status == ConditionStatus::True)
        })
        .count())
}

/// Object/External Value targets: the ratio times the ready pods (`getUsageRatioReplicaCount`).
fn usage_ratio_replicas(
    ctx: &CalcContext<'_>,
    current: i32,
    ratio: f64,
) -> Result<(i32, Reasoning), String> {
    let mut reasoning = Reasoning {
        ratio,
        ..Reasoning::default()
    };
    if current == 0 {
        return Ok((ceil_i32(ratio), reasoning));
    }
    if ctx.tolerances.is_within(ratio) {
        return Ok((current, reasoning));
    }
    let ready = ready_pod_count(ctx.pods)?;
    reasoning.ready = ready;
    let replicas = if ctx.changes.ratio_replicas_and_external_sum_capped {
        ceil_i32_capped(ratio * ready as f64)
    } else {
        ceil_i32(ratio * ready as f64)
    };
    Ok((replicas, reasoning))
}

/// An Object metric with a Value target (`GetObjectMetricReplicas`). The timestamp is dropped, as
/// upstream drops it.
pub fn object_value_replicas(
    ctx: &CalcContext<'_>,
    current: i32,
    target: i64,
    value: i64,
) -> Result<Proposal, String> {
    let ratio = value as f64 / target as f64;
    let (replicas, reasoning) = usage_ratio_replicas(ctx, current, ratio)?;
    Ok(Proposal {
        replicas,
        usage: value,
        timestamp: Time::GO_ZERO,
        reasoning,
    })
}

/// Sum of External series for a Value target: a positive value that would overflow caps the
/// sum at `i64::MAX` (upstream's check before each addition, 1.35+); before, it wraps.
fn series_sum(values: &[i64], capped: bool) -> i64 {
    let mut usage = 0i64;
    for v in values {
        if capped && *v > 0 && usage > i64::MAX - v {
            return i64::MAX;
        }
        usage = usage.wrapping_add(*v);
    }
    usage
}

/// Sum of External series for an AverageValue target: a sum that turns negative (upstream's
/// overflow check after each addition, 1.34+) becomes `i64::MAX`; before, it wraps.
fn series_sum_per_pod(values: &[i64], saturates: bool) -> i64 {
    let mut usage = 0i64;
    for v in values {
        usage = usage.wrapping_add(*v);
        if saturates && usage < 0 {
            return i64::MAX;
        }
    }
    usage
}

/// An External metric with a Value target (`GetExternalMetricReplicas`): the series are summed.
pub fn external_value_replicas(
    ctx: &CalcContext<'_>,
    current: i32,
    target: i64,
    values: &[i64],
) -> Result<Proposal, String> {
    let usage = series_sum(values, ctx.changes.ratio_replicas_and_external_sum_capped);
    let ratio = usage as f64 / target as f64;
    let (replicas, reasoning) = usage_ratio_replicas(ctx, current, ratio)?;
    Ok(Proposal {
        replicas,
        usage,
        timestamp: Time::GO_ZERO,
        reasoning,
    })
}

/// An Object metric with an AverageValue target (`GetObjectPerPodMetricReplicas`), against
/// `status.replicas`.
pub fn object_per_pod_replicas(
    ctx: &CalcContext<'_>,
    status_replicas: i32,
    target_per_pod: i64,
    value: i64,
    timestamp: Time,
) -> Proposal {
    let ratio = value as f64 / (target_per_pod as f64 * f64::from(status_replicas));
    let replicas = if ctx.tolerances.is_within(ratio) {
        status_replicas
    } else {
        ceil_i32(value as f64 / target_per_pod as f64)
    };
    Proposal {
        replicas,
        usage: go_i64((value as f64 / f64::from(status_replicas)).ceil()),
        timestamp,
        reasoning: Reasoning {
            ratio,
            ..Reasoning::default()
        },
    }
}

/// An External metric with an AverageValue target (`GetExternalPerPodMetricReplicas`), against
/// `status.replicas`.
pub fn external_per_pod_replicas(
    ctx: &CalcContext<'_>,
    status_replicas: i32,
    target_per_pod: i64,
    values: &[i64],
    timestamp: Time,
) -> Proposal {
    let saturates = ctx.changes.external_average_sum_saturates;
    let usage = series_sum_per_pod(values, saturates);
    let ratio = usage as f64 / (target_per_pod as f64 * f64::from(status_replicas));
    let replicas = if ctx.tolerances.is_within(ratio) {
        status_replicas
    } else if saturates {
        ceil_i32_capped(usage as f64 / target_per_pod as f64)
    } else {
        ceil_i32(usage as f64 / target_per_pod as f64)
    };
    let per_pod = if saturates && usage as f64 >= i64::MAX as f64 {
        i64::MAX
    } else {
        go_i64((usage as f64 / f64::from(status_replicas)).ceil())
    };
    Proposal {
        replicas,
        usage: per_pod,
        timestamp,
        reasoning: Reasoning {
            ratio,
            ..Reasoning::default()
        },
    }
}
