//! One replica proposal per metric source (upstream's `ReplicaCalculator` methods).
//!
//! Every proposal rounds up (`ceil`). Error texts are upstream's, since they reach conditions and
//! events verbatim.

use std::collections::BTreeMap;
use std::time::Duration;

use super::grouping::{PodGroups, group_pods};
use super::requests::pod_requests;
use super::usage::{Tolerances, metric_usage_ratio, resource_utilization_ratio};
use crate::gomath::{go_i32, go_i64};
use crate::time::Time;
use crate::view::{ConditionStatus, PodMetric, PodPhase, PodView};

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
    /// The PodLevelResources gate.
    pub pod_level_resources: bool,
    /// Whether `pods` are in ascending name order (`None`: find out).
    pub pods_sorted: Option<bool>,
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
            unready: g.unready.len(),
            missing: g.missing.len(),
            ignored: g.ignored.len(),
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

fn group<'a>(
    ctx: &CalcContext<'a>,
    samples: &BTreeMap<String, PodMetric>,
    resource: Option<&str>,
) -> Result<PodGroups<'a>, String> {
    if ctx.pods.is_empty() {
        return Err("no pods returned by selector while calculating replica count".to_string());
    }
    Ok(group_pods(
        ctx.pods,
        samples,
        resource,
        ctx.cpu_initialization_period,
        ctx.initial_readiness_delay,
        ctx.now,
        ctx.pods_sorted,
    ))
}

/// The samples of pods that are neither ignored nor unready, as (pod, value). Filled-in values
/// for missing and unready pods are appended later; no name can appear twice, since missing pods
/// have no sample and unready ones were just removed.
fn without<'a>(samples: &'a BTreeMap<String, PodMetric>, g: &PodGroups<'_>) -> Vec<(&'a str, i64)> {
    let skip = |name: &str| {
        (!g.ignored.is_empty() && g.ignored.contains(name))
            || (!g.unready.is_empty() && g.unready.contains(name))
    };
    samples
        .iter()
        .filter(|(name, _)| !skip(name))
        .map(|(n, s)| (n.as_str(), s.value))
        .collect()
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
pub fn resource_replicas<'a>(
    ctx: &CalcContext<'a>,
    current: i32,
    target_utilization: i32,
    resource: &str,
    container: Option<&str>,
    samples: &'a BTreeMap<String, PodMetric>,
    timestamp: Time,
) -> Result<ResourceProposal, String> {
    let groups = group(ctx, samples, Some(resource))?;
    let mut metrics = without(samples, &groups);
    if metrics.is_empty() {
        return Err(
            "did not receive metrics for targeted pods (pods might be unready)".to_string(),
        );
    }
    let requests = pod_requests(ctx.pods, container, resource, ctx.pod_level_resources)
        .map_err(|e| e.to_string())?;
    let (ratio, utilization, raw_average) =
        resource_utilization_ratio(&metrics, &requests, target_utilization)?;
    let mut reasoning = Reasoning::from_groups(ratio, &groups);
    let done = |replicas: i32, reasoning: Reasoning| ResourceProposal {
        replicas,
        utilization,
        raw_average,
        timestamp,
        reasoning,
    };

    let scale_up_with_unready = !groups.unready.is_empty() && ratio > 1.0;
    if !scale_up_with_unready && groups.missing.is_empty() {
        if ctx.tolerances.is_within(ratio) {
            return Ok(done(current, reasoning));
        }
        return Ok(done(ceil_i32(ratio * groups.ready_count as f64), reasoning));
    }
    if ratio < 1.0 {
        // Scale-down: a pod without a sample is taken to use 100% of its request, or the target
        // when that is above 100%.
        let fill_percent = i64::from(target_utilization.max(100));
        for pod in &groups.missing {
            let request = requests.get(pod).copied().unwrap_or(0);
            metrics.push((pod, request * fill_percent / 100));
        }
    } else if ratio > 1.0 {
        for pod in &groups.missing {
            metrics.push((pod, 0));
        }
    }
    if scale_up_with_unready {
        for pod in &groups.unready {
            metrics.push((pod, 0));
        }
    }
    let (new_ratio, _, _) = resource_utilization_ratio(&metrics, &requests, target_utilization)?;
    reasoning.adjusted_ratio = Some(new_ratio);
    Ok(done(
        dampened(current, ratio, new_ratio, metrics.len(), ctx.tolerances),
        reasoning,
    ))
}

/// Pods metrics and Resource metrics with an average-value target (`calcPlainMetricReplicas`).
/// `resource` is the resource name for Resource metrics (so CPU readiness rules apply) and `None`
/// for Pods metrics.
pub fn plain_metric_replicas<'a>(
    ctx: &CalcContext<'a>,
    current: i32,
    target: i64,
    resource: Option<&str>,
    samples: &'a BTreeMap<String, PodMetric>,
    timestamp: Time,
) -> Result<Proposal, String> {
    let groups = group(ctx, samples, resource)?;
    let mut metrics = without(samples, &groups);
    if metrics.is_empty() {
        return Err(
            "did not receive metrics for targeted pods (pods might be unready)".to_string(),
        );
    }
    let (ratio, usage) = metric_usage_ratio(&metrics, target);
    let mut reasoning = Reasoning::from_groups(ratio, &groups);
    let done = |replicas: i32, reasoning: Reasoning| Proposal {
        replicas,
        usage,
        timestamp,
        reasoning,
    };

    let scale_up_with_unready = !groups.unready.is_empty() && ratio > 1.0;
    if !scale_up_with_unready && groups.missing.is_empty() {
        if ctx.tolerances.is_within(ratio) {
            return Ok(done(current, reasoning));
        }
        return Ok(done(ceil_i32(ratio * groups.ready_count as f64), reasoning));
    }
    if ratio < 1.0 {
        for pod in &groups.missing {
            metrics.push((pod, target));
        }
    } else if ratio > 1.0 {
        for pod in &groups.missing {
            metrics.push((pod, 0));
        }
    }
    if scale_up_with_unready {
        for pod in &groups.unready {
            metrics.push((pod, 0));
        }
    }
    let (new_ratio, _) = metric_usage_ratio(&metrics, target);
    reasoning.adjusted_ratio = Some(new_ratio);
    Ok(done(
        dampened(current, ratio, new_ratio, metrics.len(), ctx.tolerances),
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
    Ok((ceil_i32_capped(ratio * ready as f64), reasoning))
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
/// sum at `i64::MAX` (upstream's check before each addition).
fn series_sum(values: &[i64]) -> i64 {
    let mut usage = 0i64;
    for v in values {
        if *v > 0 && usage > i64::MAX - v {
            return i64::MAX;
        }
        usage = usage.wrapping_add(*v);
    }
    usage
}

/// Sum of External series for an AverageValue target: a sum that turns negative (upstream's
/// overflow check after each addition) becomes `i64::MAX`.
fn series_sum_per_pod(values: &[i64]) -> i64 {
    let mut usage = 0i64;
    for v in values {
        usage = usage.wrapping_add(*v);
        if usage < 0 {
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
    let usage = series_sum(values);
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
    let usage = series_sum_per_pod(values);
    let ratio = usage as f64 / (target_per_pod as f64 * f64::from(status_replicas));
    let replicas = if ctx.tolerances.is_within(ratio) {
        status_replicas
    } else {
        ceil_i32_capped(usage as f64 / target_per_pod as f64)
    };
    let per_pod = if usage as f64 >= i64::MAX as f64 {
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
