//! The checks of single fields: quantities, amounts, times, replica counts, factors, requests
//! and loads, each an error at the field's position; and fields the Kubernetes types do not
//! know (k8s-openapi ignores them silently).

use std::collections::BTreeMap;
use std::path::Path;

use hpa_reference::quantity::{milli_value, signum};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;

use super::loaded::LoadError;
use crate::case::bounds::{MAX_PODS, MAX_VIRTUAL_SECONDS};
use crate::case::model::Load;
use crate::util::yaml::{self, Index, Pos};

pub(super) struct Checker<'a> {
    pub(super) path: &'a Path,
    pub(super) index: &'a Index,
    /// Where the part being checked is in the file: `""` for the case, `alongside[i].` for an
    /// HPA beside it.
    pub(super) prefix: String,
}

impl Checker<'_> {
    /// A problem of the file as a whole, at its start.
    pub(super) fn at_start(&self, reason: String) -> LoadError {
        LoadError {
            path: self.path.to_path_buf(),
            pos: Pos { line: 1, column: 1 },
            reason,
        }
    }

    pub(super) fn err(&self, at: &str, reason: impl Into<String>) -> LoadError {
        LoadError {
            path: self.path.to_path_buf(),
            pos: self.index.locate(&self.here(at)),
            reason: reason.into(),
        }
    }

    /// The path of `at` in the file.
    pub(super) fn here(&self, at: &str) -> String {
        format!("{}{at}", self.prefix)
    }

    /// A quantity's milli-value as upstream's controller reads it from an object
    /// (`MilliValue()`: `"8Ei"` is -1000).
    pub(super) fn quantity(&self, at: &str, q: &str) -> Result<i64, LoadError> {
        milli_value(q).map_err(|e| {
            self.err(
                at,
                format!("invalid quantity {}: {e}", crate::util::text::quote(q)),
            )
        })
    }

    /// A quantity that must not be negative (usage, requests).
    pub(super) fn amount(&self, at: &str, q: &str) -> Result<i64, LoadError> {
        let v = self.quantity(at, q)?;
        if signum(q).is_ok_and(|sign| sign < 0) {
            return Err(self.err(at, format!("{at} must not be negative (it is {q})")));
        }
        Ok(v)
    }

    /// A virtual time within ±MAX_VIRTUAL_SECONDS.
    pub(super) fn time(&self, at: &str, t: i64) -> Result<(), LoadError> {
        let bound = if t > MAX_VIRTUAL_SECONDS {
            format!("at most {MAX_VIRTUAL_SECONDS}")
        } else if t < -MAX_VIRTUAL_SECONDS {
            format!("at least -{MAX_VIRTUAL_SECONDS}")
        } else {
            return Ok(());
        };
        Err(self.err(
            at,
            format!("{at} must be {bound} seconds (about 31 years of virtual time), not {t}"),
        ))
    }

    /// A replica count the simulated world holds.
    pub(super) fn replicas(&self, at: &str, r: i32) -> Result<(), LoadError> {
        if !(0..=MAX_PODS).contains(&r) {
            return Err(self.err(
                at,
                format!(
                    "{at} must be from 0 to {MAX_PODS} (the most pods the simulated world holds), not {r}"
                ),
            ));
        }
        Ok(())
    }

    /// A non-negative finite number.
    pub(super) fn factor(&self, at: &str, v: Option<f64>) -> Result<(), LoadError> {
        match v {
            Some(v) if !v.is_finite() || v < 0.0 => {
                Err(self.err(at, format!("{at} must be a non-negative number, not {v}")))
            }
            _ => Ok(()),
        }
    }
}

/// Keys present in the YAML under `at` that the typed value `known` (its round trip) lacks:
/// fields the Kubernetes types ignore silently; and strings where the HPA has an integer
/// (`maxReplicas: "20"`, which serde reads as 20 and the API server refuses). The first is an
/// error at its position.
pub(super) fn strict(
    c: &Checker<'_>,
    at: &str,
    known: &serde_json::Value,
) -> Result<(), LoadError> {
    let here = c.here(at);
    let Some(node) = c.index.node(&here) else {
        return Ok(());
    };
    if let Some(first) = yaml::unknown_fields(&here, node, known).first() {
        return Err(LoadError {
            path: c.path.to_path_buf(),
            pos: c.index.locate(first),
            reason: format!(
                "unknown field `{}`",
                first.rsplit('.').next().unwrap_or(first)
            ),
        });
    }
    match yaml::strings_for_integers(&here, node, known)
        .into_iter()
        .next()
    {
        Some((field, text)) => Err(LoadError {
            path: c.path.to_path_buf(),
            pos: c
                .index
                .node(&field)
                .map_or_else(|| c.index.locate(&field), |n| n.pos),
            reason: format!(
                "{field} must be {}, not the string {}",
                integer_words_at(known, &field[here.len()..], &text),
                crate::util::text::quote(&crate::util::text::clip(&text, 40))
            ),
        }),
        None => Ok(()),
    }
}

/// The range of the HPA's integer field at `rel` (`.spec.maxReplicas`, `.spec.metrics[0]…`), in
/// words: the type serde names when that field of `known` holds the string `text` instead.
pub(super) fn integer_words_at(known: &serde_json::Value, rel: &str, text: &str) -> String {
    let pointer: String = rel
        .split(['.', '[', ']'])
        .filter(|s| !s.is_empty())
        .map(|s| format!("/{s}"))
        .collect();
    let mut probe = known.clone();
    if let Some(v) = probe.pointer_mut(&pointer) {
        *v = serde_json::Value::String(text.to_string());
    }
    let ty = serde_json::from_value::<HorizontalPodAutoscaler>(probe)
        .err()
        .and_then(|e| {
            let msg = e.to_string();
            let ty = msg.split("expected ").nth(1)?.split_whitespace().next()?;
            Some(ty.to_string())
        });
    yaml::integer_words(ty.as_deref().unwrap_or_default())
}

/// The keys `load.metric` may name: one per metric of the spec.
pub fn metric_keys(hpa: &HorizontalPodAutoscaler) -> Vec<String> {
    hpa.spec.metrics.iter().flatten().map(metric_key).collect()
}

/// The key of one metric spec: the resource name for Resource and ContainerResource metrics,
/// the metric name otherwise.
pub fn metric_key(m: &k8s_openapi::api::autoscaling::v2::MetricSpec) -> String {
    match m.type_.as_str() {
        "Resource" => m.resource.as_ref().map(|r| r.name.clone()),
        "ContainerResource" => m.container_resource.as_ref().map(|r| r.name.clone()),
        "Pods" => m.pods.as_ref().map(|p| p.metric.name.clone()),
        "Object" => m.object.as_ref().map(|o| o.metric.name.clone()),
        "External" => m.external.as_ref().map(|e| e.metric.name.clone()),
        _ => None,
    }
    .unwrap_or_default()
}

/// Requests by container (`pods.requests`, `rollout.requests`): every container is one of the pod
/// template's, every amount a quantity.
pub(super) fn check_requests(
    c: &Checker<'_>,
    at: &str,
    requests: &BTreeMap<String, BTreeMap<String, String>>,
    template_names: &[&str],
) -> Result<(), LoadError> {
    for (name, reqs) in requests {
        let place = format!("{at}.{name}");
        if !template_names.contains(&name.as_str()) {
            return Err(c.err(
                &place,
                format!(
                    "requests for container {name:?}, which is not in the pod template (containers, sidecars and init containers: {})",
                    template_names.join(", ")
                ),
            ));
        }
        for (r, q) in reqs {
            c.amount(&format!("{place}.{r}"), q)?;
        }
    }
    Ok(())
}

pub(super) fn check_load(
    c: &Checker<'_>,
    at: &str,
    load: &Load,
    keys: &[String],
    containers: &[&str],
    kind: &str,
) -> Result<(), LoadError> {
    if let Some(name) = &load.container
        && !containers.contains(&name.as_str())
    {
        return Err(c.err(
            &format!("{at}.container"),
            format!(
                "load for container {name:?}, which is not in the pod template (containers and sidecars: {})",
                containers.join(", ")
            ),
        ));
    }
    if !keys.contains(&load.metric) {
        return Err(c.err(
            &format!("{at}.metric"),
            format!(
                "load for {:?}, which is not a metric of the HPA (metrics: {})",
                load.metric,
                keys.join(", ")
            ),
        ));
    }
    let given = [
        load.total.is_some(),
        load.per_pod.is_some(),
        load.pods.is_some(),
        load.value.is_some(),
        load.series.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if given != 1 {
        return Err(c.err(
            at,
            "a load needs exactly one of total, perPod, pods, value, series",
        ));
    }
    // Usage and per-pod values are amounts; an Object value or External series may be negative.
    for (field, q) in [("total", &load.total), ("perPod", &load.per_pod)] {
        if let Some(q) = q {
            c.amount(&format!("{at}.{field}"), q)?;
        }
    }
    if let Some(q) = &load.value {
        c.quantity(&format!("{at}.value"), q)?;
    }
    for (i, q) in load.pods.iter().flatten().enumerate() {
        c.amount(&format!("{at}.pods[{i}]"), q)?;
    }
    for (i, q) in load.series.iter().flatten().enumerate() {
        c.quantity(&format!("{at}.series[{i}]"), q)?;
    }
    if load.as_written
        && !(matches!(kind, "Object" | "External")
            && (load.value.is_some() || load.series.is_some()))
    {
        return Err(c.err(
            &format!("{at}.asWritten"),
            format!("asWritten is for the value of an Object metric or the value or series of an External one, not a {kind} metric's {}", if load.value.is_some() || load.series.is_some() { "value" } else { "load" }),
        ));
    }
    Ok(())
}
