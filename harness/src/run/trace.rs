//! The trace of a case: target-independent facts per tick, kept compact so snapshots review like
//! code. Two targets agree on a case when their traces (without the `why` explanations only some
//! targets can give) are equal. What a target controls (events, conditions, metrics) is kept
//! within the caps of [`crate::kept`], and a tick says what it left out (`truncated`).

use hpa_reference::quantity::parse_milli;
use hpa_reference::{Explanation, Path};
use k8s_openapi::api::autoscaling::v2::{MetricStatus, MetricValueStatus};
use serde::Serialize;

use crate::kept::Truncated;
use crate::targets::TickOutcome;
use crate::world::virtual_secs;

/// One tick.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TickTrace {
    /// Virtual seconds.
    pub t: i64,
    /// The target's replicas before the tick.
    pub replicas_before: i32,
    /// The target's replicas after the tick.
    pub replicas: i32,
    /// Pods before the tick: total (not deleted) and ready.
    pub pods: String,
    /// `status.desiredReplicas`.
    pub desired: i32,
    /// `status.currentReplicas`.
    pub current: Option<i32>,
    /// `status.lastScaleTime` in virtual seconds.
    pub last_scale_time: Option<i64>,
    /// `status.currentMetrics`, one entry per metric.
    pub metrics: Vec<String>,
    /// `status.conditions` as `Type=Status/Reason`.
    pub conditions: String,
    /// Events of this tick as `Type Reason: message`.
    pub events: Vec<String>,
    /// Why (from targets that explain): proposals, stabilized and limited values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// What of the target's answer this tick left out ([`crate::kept`]); absent when nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncated>,
    /// The same tick in detail, for pictures ([`crate::report::timeline`]) and stories
    /// ([`crate::report::explain`]); not serialized, so snapshots and reports show the text
    /// above only.
    #[serde(skip)]
    pub detail: TickDetail,
}

/// A tick in detail: each metric's current value as the status reports it, the conditions with
/// their messages, and (from targets that explain) the decision's explanation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TickDetail {
    /// `status.currentMetrics` in order.
    pub metrics: Vec<MetricNumber>,
    /// `status.conditions` in order.
    pub conditions: Vec<ConditionDetail>,
    /// Why, from targets that explain.
    pub explanation: Option<Explanation>,
    /// Each pod as the target saw it before the tick (collected only when a run asks for it,
    /// [`crate::run::RunOptions::pods`]).
    pub pods: Vec<crate::run::podstate::PodState>,
}

impl TickDetail {
    /// The stabilized count, when explained.
    pub fn stabilized(&self) -> Option<i32> {
        self.explanation.as_ref().and_then(|e| e.stabilized)
    }

    /// The rate-limited count, when explained.
    pub fn limited(&self) -> Option<i32> {
        self.explanation.as_ref().and_then(|e| e.limited)
    }
}

/// One condition of the status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionDetail {
    /// `type`.
    pub type_: String,
    /// `status`.
    pub status: String,
    /// `reason`.
    pub reason: String,
    /// `message`.
    pub message: String,
}

/// One metric's current value in exact numbers (milli-values as `reference/src/quantity.rs`
/// parses them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricNumber {
    /// The metric's label, as in [`TickTrace::metrics`] (`cpu`, `pods/…`, `external/…`).
    pub label: String,
    /// `current.averageUtilization` (percent).
    pub utilization: Option<i32>,
    /// `current.averageValue` in milli-units.
    pub average_milli: Option<i64>,
    /// `current.value` in milli-units.
    pub value_milli: Option<i64>,
}

fn milli_text(
    q: &Option<k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
) -> Option<String> {
    q.as_ref().map(|q| match parse_milli(&q.0) {
        Ok(m) if m % 1000 == 0 => format!("{}", m / 1000),
        Ok(m) => format!("{m}m"),
        Err(_) => q.0.clone(),
    })
}

/// The current value of a metric status and its label.
pub fn metric_current(m: &MetricStatus) -> Option<(String, &MetricValueStatus)> {
    match m.type_.as_str() {
        "Resource" => m.resource.as_ref().map(|r| (r.name.clone(), &r.current)),
        "ContainerResource" => m
            .container_resource
            .as_ref()
            .map(|r| (format!("{}/{}", r.container, r.name), &r.current)),
        "Pods" => m
            .pods
            .as_ref()
            .map(|p| (format!("pods/{}", p.metric.name), &p.current)),
        "Object" => m.object.as_ref().map(|o| {
            (
                format!(
                    "{}/{} {}",
                    o.described_object.kind, o.described_object.name, o.metric.name
                ),
                &o.current,
            )
        }),
        "External" => m
            .external
            .as_ref()
            .map(|e| (format!("external/{}", e.metric.name), &e.current)),
        _ => None,
    }
}

fn metric_text(m: &MetricStatus) -> String {
    match metric_current(m) {
        None => "<none>".into(),
        Some((label, c)) => {
            let mut parts = Vec::new();
            if let Some(u) = c.average_utilization {
                parts.push(format!("{u}%"));
            }
            if let Some(v) = milli_text(&c.average_value) {
                parts.push(format!("avg {v}"));
            }
            if let Some(v) = milli_text(&c.value) {
                parts.push(format!("value {v}"));
            }
            format!("{label}: {}", parts.join(", "))
        }
    }
}

fn metric_number(m: &MetricStatus) -> Option<MetricNumber> {
    let (label, c) = metric_current(m)?;
    let milli = |q: &Option<k8s_openapi::apimachinery::pkg::api::resource::Quantity>| {
        q.as_ref().and_then(|q| parse_milli(&q.0).ok())
    };
    Some(MetricNumber {
        label,
        utilization: c.average_utilization,
        average_milli: milli(&c.average_value),
        value_milli: milli(&c.value),
    })
}

fn why_text(e: &Explanation) -> String {
    let path = match e.path {
        Path::ScaleUnavailable => return "scale unavailable".into(),
        Path::ScalingDisabled => return "scaling disabled (target at zero)".into(),
        Path::AboveMax => return "above maxReplicas: clamp".into(),
        Path::BelowMin => return "below minReplicas: clamp".into(),
        Path::MetricsFailed => "metrics failed",
        Path::Computed => "",
    };
    let proposals: Vec<String> = e
        .metrics
        .iter()
        .map(|m| match (&m.proposal, &m.reasoning) {
            (Some(p), Some(r)) => {
                let mut s = format!("{p} (ratio {:.4}", r.ratio);
                if let Some(a) = r.adjusted_ratio {
                    s.push_str(&format!(", adjusted {a:.4}"));
                }
                if r.ready + r.unready + r.missing + r.ignored > 0 {
                    s.push_str(&format!(
                        "; ready {} unready {} missing {} ignored {}",
                        r.ready, r.unready, r.missing, r.ignored
                    ));
                }
                s.push(')');
                s
            }
            _ => "invalid".to_string(),
        })
        .collect();
    if !path.is_empty() {
        return format!("{path}: [{}]", proposals.join(", "));
    }
    format!(
        "proposals [{}] -> {} -> stabilized {} -> limited {}",
        proposals.join(", "),
        e.metric_desired.map_or("-".into(), |v| v.to_string()),
        e.stabilized.map_or("-".into(), |v| v.to_string()),
        e.limited.map_or("-".into(), |v| v.to_string()),
    )
}

/// Builds a tick's trace from what the target did, within the per-tick caps of [`crate::kept`]
/// (the case's budget is [`crate::run::Budget`]'s to charge).
pub fn tick_trace(
    t: i64,
    replicas_before: i32,
    replicas: i32,
    pods: (usize, usize),
    outcome: &TickOutcome,
) -> TickTrace {
    let s = &outcome.status;
    let mut cut = Truncated::default();
    let metrics = Truncated::first(
        s.current_metrics.as_deref().unwrap_or_default(),
        &mut cut.dropped_metrics,
    );
    let conditions = Truncated::first(
        s.conditions.as_deref().unwrap_or_default(),
        &mut cut.dropped_conditions,
    );
    let events = Truncated::first(&outcome.events, &mut cut.dropped_events);
    let mut detail = TickDetail {
        metrics: metrics.iter().filter_map(metric_number).collect(),
        conditions: conditions
            .iter()
            .map(|c| ConditionDetail {
                type_: cut.text(c.type_.clone()),
                status: cut.text(c.status.clone()),
                reason: cut.text(c.reason.clone().unwrap_or_default()),
                message: cut.text(c.message.clone().unwrap_or_default()),
            })
            .collect(),
        explanation: outcome.explanation.clone(),
        pods: Vec::new(),
    };
    for m in &mut detail.metrics {
        m.label = cut.text(std::mem::take(&mut m.label));
    }
    TickTrace {
        t,
        replicas_before,
        replicas,
        pods: format!("{} ({} ready)", pods.0, pods.1),
        desired: s.desired_replicas,
        current: s.current_replicas,
        last_scale_time: s
            .last_scale_time
            .as_ref()
            .map(|ts| virtual_secs(hpa_reference::time::core_time(ts))),
        metrics: metrics.iter().map(|m| cut.text(metric_text(m))).collect(),
        conditions: detail
            .conditions
            .iter()
            .map(|c| format!("{}={}/{}", c.type_, c.status, c.reason))
            .collect::<Vec<_>>()
            .join(", "),
        events: events
            .iter()
            .map(|e| cut.text(format!("{} {}: {}", e.type_.as_str(), e.reason, e.message)))
            .collect(),
        why: outcome.explanation.as_ref().map(why_text),
        truncated: (!cut.is_empty()).then_some(cut),
        detail,
    }
}

impl TickTrace {
    /// What a level compares: `full` is [`TickTrace::comparable`]; `status` leaves out the
    /// events; `replicas` keeps only the replica counts and the pods.
    pub fn comparable_at(&self, profile: crate::profile::Profile) -> TickTrace {
        use crate::profile::Profile;
        let mut c = self.comparable();
        if profile < Profile::Full {
            c.events.clear();
        }
        if profile < Profile::Status {
            c.desired = 0;
            c.current = None;
            c.last_scale_time = None;
            c.metrics.clear();
            c.conditions.clear();
            c.detail.metrics.clear();
        }
        c
    }

    /// What every target must agree on: the trace without the explanation (its text and its
    /// detail), without condition messages and without event messages (`Type Reason` only), as `harness/PROTOCOL.md` says.
    pub fn comparable(&self) -> TickTrace {
        TickTrace {
            why: None,
            detail: TickDetail {
                metrics: self.detail.metrics.clone(),
                conditions: Vec::new(),
                explanation: None,
                pods: Vec::new(),
            },
            events: self
                .events
                .iter()
                .map(|e| {
                    e.split_once(": ")
                        .map_or(e.as_str(), |(head, _)| head)
                        .to_string()
                })
                .collect(),
            ..self.clone()
        }
    }
}

/// A message with its one nondeterministic part replaced: the pod named in `… in Pod NAME` or
/// `… of Pod NAME` (a missing request, a container not found). Upstream reports the first pod of its lister's
/// list, whose order is a map's, so which pod it names varies from run to run.
pub fn normalise_message(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = [" in Pod ", " of Pod "]
        .iter()
        .filter_map(|m| rest.find(m))
        .min()
    {
        let (head, tail) = rest.split_at(at + " in Pod ".len());
        out.push_str(head);
        out.push('…');
        let end = tail
            .find(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == ')')
            .unwrap_or(tail.len());
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// The first tick where two traces that agree on [`TickTrace::comparable`] still disagree on a
/// message: an event's full text (`Type Reason: message`) or a condition's message, each through
/// [`normalise_message`] (the only part that varies between runs of the same implementation).
/// Differential fuzzing uses this at profile `full`; conformance runs do not (implementations may
/// word messages their own way).
pub fn first_message_difference(a: &[TickTrace], b: &[TickTrace]) -> Option<(i64, String)> {
    for (x, y) in a.iter().zip(b) {
        let events = |t: &TickTrace| {
            t.events
                .iter()
                .map(|e| normalise_message(e))
                .collect::<Vec<_>>()
        };
        let (ex, ey) = (events(x), events(y));
        if ex != ey {
            return Some((x.t, format!("event messages: {ex:?} vs {ey:?}")));
        }
        let messages = |t: &TickTrace| {
            t.detail
                .conditions
                .iter()
                .map(|c| format!("{}: {}", c.type_, normalise_message(&c.message)))
                .collect::<Vec<_>>()
        };
        let (mx, my) = (messages(x), messages(y));
        if mx != my {
            return Some((x.t, format!("condition messages: {mx:?} vs {my:?}")));
        }
    }
    None
}

/// The first tick where two traces disagree (compared with [`TickTrace::comparable`]), with a
/// one-line description of the difference.
pub fn first_difference(a: &[TickTrace], b: &[TickTrace]) -> Option<(i64, String)> {
    first_difference_at(a, b, crate::profile::Profile::Full)
}

/// [`first_difference`] at a conformance profile: only what that level compares
/// ([`TickTrace::comparable_at`]).
pub fn first_difference_at(
    a: &[TickTrace],
    b: &[TickTrace],
    profile: crate::profile::Profile,
) -> Option<(i64, String)> {
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (x.comparable_at(profile), y.comparable_at(profile));
        if x != y {
            let mut diffs = Vec::new();
            let mut field = |name: &str, l: String, r: String| {
                if l != r {
                    diffs.push(format!("{name}: {l} vs {r}"));
                }
            };
            field("replicas", x.replicas.to_string(), y.replicas.to_string());
            field("desired", x.desired.to_string(), y.desired.to_string());
            field(
                "current",
                format!("{:?}", x.current),
                format!("{:?}", y.current),
            );
            field(
                "lastScaleTime",
                format!("{:?}", x.last_scale_time),
                format!("{:?}", y.last_scale_time),
            );
            field(
                "metrics",
                format!("{:?}", x.metrics),
                format!("{:?}", y.metrics),
            );
            field("conditions", x.conditions.clone(), y.conditions.clone());
            field(
                "events",
                format!("{:?}", x.events),
                format!("{:?}", y.events),
            );
            return Some((x.t, diffs.join("; ")));
        }
    }
    if a.len() != b.len() {
        let t = a.get(b.len()).or(b.get(a.len())).map_or(0, |x| x.t);
        return Some((
            t,
            format!("trace lengths differ: {} vs {}", a.len(), b.len()),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_pod_named_after_in_or_of_pod_is_normalised() {
        assert_eq!(
            normalise_message("missing request for cpu in container app of Pod web-0003"),
            "missing request for cpu in container app of Pod …"
        );
        assert_eq!(
            normalise_message("Pod web-0003 is not ready"),
            "Pod web-0003 is not ready"
        );
        assert_eq!(
            normalise_message("failed: missing pod-level request for cpu in Pod web-0003; more"),
            "failed: missing pod-level request for cpu in Pod …; more"
        );
        assert_eq!(
            normalise_message("container app not found in Pod web-1"),
            "container app not found in Pod …"
        );
    }
}
