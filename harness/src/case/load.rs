//! Loading a case file: YAML → [`CaseFile`] → checks → [`Case`]. Every problem becomes a
//! [`LoadError`] with the file, line and column and one line of reason; nothing panics.

use std::fmt;
use std::path::{Path, PathBuf};

use hpa_reference::defaults::apply_api_defaults;
use hpa_reference::quantity::parse_milli;
use hpa_reference::settings::{FeatureGates, GATE_NAMES};
use hpa_reference::validation::{ValidationOptions, validate_hpa};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;

use super::model::{CaseFile, Load};
use crate::yaml::{self, Index, Pos};

/// A case file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// The file.
    pub path: PathBuf,
    /// Where in it.
    pub pos: Pos,
    /// One line of reason.
    pub reason: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.path.display(),
            self.pos.line,
            self.pos.column,
            self.reason
        )
    }
}

impl std::error::Error for LoadError {}

/// A loaded, checked case.
#[derive(Debug, Clone)]
pub struct Case {
    /// The file it came from.
    pub path: PathBuf,
    /// The file's content as written.
    pub file: CaseFile,
    /// The HPA as the API server stores it (defaults applied).
    pub hpa: HorizontalPodAutoscaler,
    /// Seconds between ticks.
    pub sync_period: u32,
    /// The last tick's time.
    pub duration: u32,
}

impl Case {
    /// The case's name.
    pub fn name(&self) -> &str {
        &self.file.name
    }
}

/// RFC 7386 JSON merge patch: objects merge key by key, `null` deletes, anything else replaces.
pub fn merge_patch(target: &mut serde_json::Value, patch: &serde_json::Value) {
    match (target, patch) {
        (serde_json::Value::Object(t), serde_json::Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge_patch(t.entry(k.clone()).or_insert(serde_json::Value::Null), v);
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

fn try_patch(
    hpa: &HorizontalPodAutoscaler,
    patch: &serde_json::Value,
) -> Result<HorizontalPodAutoscaler, String> {
    let mut doc = serde_json::to_value(hpa).map_err(|e| e.to_string())?;
    merge_patch(&mut doc, patch);
    serde_json::from_value(doc).map_err(|e| e.to_string())
}

/// The manifest after a timeline's `hpaPatch` (unchanged without one; the loader has checked
/// that every patch applies).
pub fn patch_manifest(
    hpa: &HorizontalPodAutoscaler,
    patch: Option<&serde_json::Value>,
) -> HorizontalPodAutoscaler {
    match patch {
        Some(p) => try_patch(hpa, p).unwrap_or_else(|_| hpa.clone()),
        None => hpa.clone(),
    }
}

/// What the API server stores for a manifest: defaults applied, namespace filled in.
pub fn store_as_api_server(hpa: &mut HorizontalPodAutoscaler) {
    apply_api_defaults(hpa);
    if hpa.metadata.namespace.is_none() {
        hpa.metadata.namespace = Some("default".into());
    }
}

/// Every `.yaml` file under the given paths (files are taken as they are), sorted, skipping
/// `schema.json` and anything under a `target` folder.
pub fn discover(paths: &[PathBuf]) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut stack = vec![p.clone()];
            while let Some(dir) = stack.pop() {
                for entry in std::fs::read_dir(&dir)? {
                    let path = entry?.path();
                    if path.is_dir() {
                        stack.push(path);
                    } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                        out.push(path);
                    }
                }
            }
        } else {
            out.push(p.clone());
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

struct Checker<'a> {
    path: &'a Path,
    index: &'a Index,
}

impl Checker<'_> {
    fn err(&self, at: &str, reason: impl Into<String>) -> LoadError {
        LoadError {
            path: self.path.to_path_buf(),
            pos: self.index.locate(at),
            reason: reason.into(),
        }
    }

    fn quantity(&self, at: &str, q: &str) -> Result<i64, LoadError> {
        parse_milli(q).map_err(|e| self.err(at, format!("invalid quantity {q:?}: {e}")))
    }
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

fn check_load(c: &Checker<'_>, at: &str, load: &Load, keys: &[String]) -> Result<(), LoadError> {
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
    for (field, q) in [
        ("total", &load.total),
        ("perPod", &load.per_pod),
        ("value", &load.value),
    ] {
        if let Some(q) = q {
            c.quantity(&format!("{at}.{field}"), q)?;
        }
    }
    for (field, list) in [("pods", &load.pods), ("series", &load.series)] {
        for (i, q) in list.iter().flatten().enumerate() {
            c.quantity(&format!("{at}.{field}[{i}]"), q)?;
        }
    }
    Ok(())
}

/// Loads and checks one case file. Feature gates the case lists are validated by name; the HPA is
/// validated with HPAScaleToZero as the case assumes it (else Kubernetes 1.36's default).
pub fn load_case(path: &Path) -> Result<Case, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|e| LoadError {
        path: path.to_path_buf(),
        pos: Pos { line: 1, column: 1 },
        reason: format!("cannot read: {e}"),
    })?;
    load_case_text(path, &text)
}

/// Loads and checks a case from its text; `path` names it in errors and results.
pub fn load_case_text(path: &Path, text: &str) -> Result<Case, LoadError> {
    let at_start = |reason: String| LoadError {
        path: path.to_path_buf(),
        pos: Pos { line: 1, column: 1 },
        reason,
    };
    let yaml_err = |e: yaml::YamlError| LoadError {
        path: path.to_path_buf(),
        pos: e.pos,
        reason: e.reason,
    };
    let index = Index::build(text).map_err(yaml_err)?;
    let file: CaseFile = yaml::from_str(text).map_err(yaml_err)?;
    let c = Checker {
        path,
        index: &index,
    };

    // Fields the Kubernetes types do not know (k8s-openapi ignores them silently).
    if let Some(node) = index.top("hpa") {
        let known = serde_json::to_value(&file.hpa).map_err(|e| at_start(e.to_string()))?;
        if let Some(first) = yaml::unknown_fields("hpa", node, &known).first() {
            return Err(c.err(
                first,
                format!(
                    "unknown field `{}`",
                    first.rsplit('.').next().unwrap_or(first)
                ),
            ));
        }
    }

    if file.name.trim().is_empty() {
        return Err(c.err("name", "name must not be empty"));
    }
    if file.title.trim().is_empty() {
        return Err(c.err("title", "title must not be empty"));
    }
    if file.source.seed.is_none() && file.source.upstream.is_none() {
        return Err(c.err("source", "source needs a seed document or an upstream test"));
    }
    let mut gates = FeatureGates::KUBERNETES_1_36;
    for (name, value) in &file.feature_gates {
        gates.set(name, *value).map_err(|_| {
            c.err(
                &format!("featureGates.{name}"),
                format!(
                    "unknown feature gate {name:?} (known: {})",
                    GATE_NAMES.join(", ")
                ),
            )
        })?;
    }

    let errors = validate_hpa(
        &file.hpa,
        ValidationOptions {
            scale_to_zero_enabled: gates.hpa_scale_to_zero,
        },
    );
    if let Some(e) = errors.first() {
        let more = if errors.len() > 1 {
            format!(" (and {} more)", errors.len() - 1)
        } else {
            String::new()
        };
        return Err(c.err(
            &format!("hpa.{}", e.path),
            format!("HPA rejected by API validation: {e}{more}"),
        ));
    }

    // Workload.
    let w = &file.workload;
    if w.replicas < 0 {
        return Err(c.err("workload.replicas", "replicas must not be negative"));
    }
    if w.pod.containers.is_empty() {
        return Err(c.err(
            "workload.pod.containers",
            "a pod needs at least one container",
        ));
    }
    for (ci, container) in w.pod.containers.iter().chain(&w.pod.sidecars).enumerate() {
        for (r, q) in &container.requests {
            c.quantity(&format!("workload.pod.containers[{ci}].requests.{r}"), q)?;
        }
    }
    if let Some(hot) = &w.startup.hot_cpu {
        c.quantity("workload.startup.hotCpu.usage", &hot.usage)?;
    }

    let sync_period = file.settings.sync_period_seconds.unwrap_or(15);
    if sync_period == 0 {
        return Err(c.err(
            "settings.syncPeriodSeconds",
            "the sync period must be at least 1 second",
        ));
    }
    if let Some(t) = file.settings.tolerance
        && (t.is_nan() || t < 0.0)
    {
        return Err(c.err(
            "settings.tolerance",
            "tolerance must be a non-negative number",
        ));
    }

    let mut hpa = file.hpa.clone();
    store_as_api_server(&mut hpa);

    // Timeline.
    let keys = metric_keys(&hpa);
    let metric_known = |at: &str, m: &str| {
        if keys.iter().any(|k| k == m) {
            Ok(())
        } else {
            Err(c.err(
                at,
                format!(
                    "{m:?} is not a metric of the HPA (metrics: {})",
                    keys.join(", ")
                ),
            ))
        }
    };
    let mut last = 0u32;
    for (i, e) in file.timeline.iter().enumerate() {
        let at = format!("timeline[{i}]");
        last = last.max(e.at);
        if let Some(l) = &e.load {
            check_load(&c, &format!("{at}.load"), l, &keys)?;
        }
        for (j, l) in e.loads.iter().enumerate() {
            check_load(&c, &format!("{at}.loads[{j}]"), l, &keys)?;
        }
        if let Some(r) = e.set_replicas
            && r < 0
        {
            return Err(c.err(
                &format!("{at}.setReplicas"),
                "replicas must not be negative",
            ));
        }
        if let Some(p) = &e.pods {
            let selectors = [p.ordinals.is_some(), p.newest.is_some(), p.all]
                .iter()
                .filter(|b| **b)
                .count();
            if selectors != 1 {
                return Err(c.err(
                    &format!("{at}.pods"),
                    "pick pods with exactly one of ordinals, newest, all",
                ));
            }
        }
        if let Some(m) = &e.metrics_missing {
            metric_known(&format!("{at}.metricsMissing.metric"), &m.metric)?;
            if m.ordinals.is_some() == m.newest.is_some() {
                return Err(c.err(
                    &format!("{at}.metricsMissing"),
                    "give exactly one of ordinals, newest",
                ));
            }
        }
        if let Some(m) = &e.metric_error {
            metric_known(&format!("{at}.metricError.metric"), &m.metric)?;
            if m.unregistered && m.message.is_some() {
                return Err(c.err(
                    &format!("{at}.metricError.unregistered"),
                    "an unregistered API has no error message of its own: drop `message`",
                ));
            }
            let kind = file
                .hpa
                .spec
                .metrics
                .iter()
                .flatten()
                .find(|s| metric_key(s) == m.metric)
                .map(|s| s.type_.clone())
                .unwrap_or_default();
            if m.unregistered
                && !matches!(kind.as_str(), "Resource" | "ContainerResource" | "External")
            {
                return Err(c.err(
                    &format!("{at}.metricError.unregistered"),
                    format!("only the resource and external metrics APIs can be unregistered, not the one of a {kind} metric"),
                ));
            }
        }
    }
    // Every patched manifest must be one the API server accepts (patches apply in time order).
    let mut patched = file.hpa.clone();
    let mut order: Vec<(usize, &super::model::TimelineEntry)> =
        file.timeline.iter().enumerate().collect();
    order.sort_by_key(|(_, e)| e.at);
    for (i, e) in order {
        let Some(patch) = &e.hpa_patch else { continue };
        let at = format!("timeline[{i}].hpaPatch");
        patched = try_patch(&patched, patch)
            .map_err(|e| c.err(&at, format!("the patched HPA is not an HPA: {e}")))?;
        let errors = validate_hpa(
            &patched,
            ValidationOptions {
                scale_to_zero_enabled: gates.hpa_scale_to_zero,
            },
        );
        if let Some(v) = errors.first() {
            return Err(c.err(
                &at,
                format!("the patched HPA is rejected by API validation: {v}"),
            ));
        }
    }

    // Expectations.
    for (i, x) in file.expect.at.iter().enumerate() {
        last = last.max(x.t);
        if x.t % sync_period != 0 {
            return Err(c.err(
                &format!("expect.at[{i}].t"),
                format!(
                    "t={} is not a tick: ticks are multiples of the sync period ({sync_period} s)",
                    x.t
                ),
            ));
        }
        for (j, m) in x.current_metrics.iter().flatten().enumerate() {
            for (field, q) in [("averageValue", &m.average_value), ("value", &m.value)] {
                if let Some(q) = q {
                    c.quantity(&format!("expect.at[{i}].currentMetrics[{j}].{field}"), q)?;
                }
            }
        }
    }
    let duration = match file.duration_seconds {
        Some(d) => {
            if d < last {
                return Err(c.err("durationSeconds", format!("the run ends at {d} s, before the last timeline entry or expectation ({last} s)")));
            }
            d
        }
        None => last + sync_period,
    };

    Ok(Case {
        path: path.to_path_buf(),
        file,
        hpa,
        sync_period,
        duration,
    })
}
