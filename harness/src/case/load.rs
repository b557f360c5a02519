//! Loading a case file: YAML → [`CaseFile`] → checks → [`Case`]. Every problem becomes a
//! [`LoadError`] with the file, line and column and one line of reason; nothing panics, and no
//! number in a case can make a run huge or wrap: a case asks for at most
//! [`MAX_PODS`] pods, [`MAX_TICKS`] ticks and [`MAX_POD_TICKS`] of both together, and names
//! times within ±[`MAX_VIRTUAL_SECONDS`] ([`super::bounds`]).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use hpa_reference::quantity::{milli_value, signum};
use hpa_reference::settings::{FeatureGates, GATE_NAMES};
use hpa_reference::validation::{ValidationOptions, validate_hpa};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;

use super::apiserver::{store_as_api_server, try_patch};
use super::bounds::{MAX_POD_TICKS, MAX_PODS, MAX_TICKS, MAX_VIRTUAL_SECONDS, pods_bound};
use super::discover::regular_file;
use super::features::{Feature, features_needed};
use super::gates::{GateUse, gates_used};
use super::model::{CaseFile, IntOrPercent, Load};
use crate::util::yaml::{self, Index, Pos};

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
        if self.pos.line == 0 {
            // The path as a whole (an unreadable folder or file).
            return write!(f, "{}: {}", self.path.display(), self.reason);
        }
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
    /// Where the `name:` is (for duplicate names).
    pub name_pos: Pos,
    /// The feature gates the case uses (declared or detected), with the values it needs.
    pub gates: BTreeMap<String, GateUse>,
    /// The implementation features the case needs, each with the field that needs it
    /// ([`super::features`]).
    pub features: Vec<(Feature, String)>,
    /// The HPAs alongside (`alongside`), each loaded as a case of its own: the case's file with
    /// the member's HPA, workload, timeline and expectations, and the case's duration.
    pub members: Vec<Case>,
}

impl Case {
    /// The case's name.
    pub fn name(&self) -> &str {
        &self.file.name
    }
}

struct Checker<'a> {
    path: &'a Path,
    index: &'a Index,
    /// Where the part being checked is in the file: `""` for the case, `alongside[i].` for an
    /// HPA beside it.
    prefix: String,
}

impl Checker<'_> {
    fn err(&self, at: &str, reason: impl Into<String>) -> LoadError {
        LoadError {
            path: self.path.to_path_buf(),
            pos: self.index.locate(&self.here(at)),
            reason: reason.into(),
        }
    }

    /// The path of `at` in the file.
    fn here(&self, at: &str) -> String {
        format!("{}{at}", self.prefix)
    }

    /// A quantity's milli-value as upstream's controller reads it from an object
    /// (`MilliValue()`: `"8Ei"` is -1000).
    fn quantity(&self, at: &str, q: &str) -> Result<i64, LoadError> {
        milli_value(q).map_err(|e| {
            self.err(
                at,
                format!("invalid quantity {}: {e}", crate::util::text::quote(q)),
            )
        })
    }

    /// A quantity that must not be negative (usage, requests).
    fn amount(&self, at: &str, q: &str) -> Result<i64, LoadError> {
        let v = self.quantity(at, q)?;
        if signum(q).is_ok_and(|sign| sign < 0) {
            return Err(self.err(at, format!("{at} must not be negative (it is {q})")));
        }
        Ok(v)
    }

    /// A virtual time within ±MAX_VIRTUAL_SECONDS.
    fn time(&self, at: &str, t: i64) -> Result<(), LoadError> {
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
    fn replicas(&self, at: &str, r: i32) -> Result<(), LoadError> {
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
    fn factor(&self, at: &str, v: Option<f64>) -> Result<(), LoadError> {
        match v {
            Some(v) if !v.is_finite() || v < 0.0 => {
                Err(self.err(at, format!("{at} must be a non-negative number, not {v}")))
            }
            _ => Ok(()),
        }
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

/// Requests by container (`pods.requests`, `rollout.requests`): every container is one of the pod
/// template's, every amount a quantity.
fn check_requests(
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

fn check_load(
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

/// Loads and checks one case file. Feature gates the case lists are validated by name; the HPA is
/// validated with HPAScaleToZero as the case assumes it (else Kubernetes 1.36's default).
pub fn load_case(path: &Path) -> Result<Case, LoadError> {
    regular_file(path)?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| super::discover::path_error(path, format!("cannot read: {e}")))?;
    load_case_text(path, &text)
}

/// Keys present in the YAML under `at` that the typed value `known` (its round trip) lacks:
/// fields the Kubernetes types ignore silently; and strings where the HPA has an integer
/// (`maxReplicas: "20"`, which serde reads as 20 and the API server refuses). The first is an
/// error at its position.
fn strict(c: &Checker<'_>, at: &str, known: &serde_json::Value) -> Result<(), LoadError> {
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
fn integer_words_at(known: &serde_json::Value, rel: &str, text: &str) -> String {
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

/// Loads and checks a case from its text; `path` names it in errors and results.
pub fn load_case_text(path: &Path, text: &str) -> Result<Case, LoadError> {
    let yaml_err = |e: yaml::YamlError| LoadError {
        path: path.to_path_buf(),
        pos: e.pos,
        reason: e.reason,
    };
    let index = Index::build(text).map_err(yaml_err)?;
    let file: CaseFile = yaml::from_str(text).map_err(|e| yaml_err(index.explain(e)))?;
    check_case(path, &index, file)
}

/// Checks a case built in memory (`what-if`'s): as [`load_case_text`] would its text, without
/// the round trip through YAML (and the YAML parser's limits on a document's size); a problem
/// has no position.
pub fn load_case_file(path: &Path, file: CaseFile) -> Result<Case, LoadError> {
    check_case(path, &Index::default(), file)
}

/// Checks a parsed case file, `index` locating its paths.
fn check_case(path: &Path, index: &Index, file: CaseFile) -> Result<Case, LoadError> {
    let c = Checker {
        path,
        index,
        prefix: String::new(),
    };
    let mut case = check_file(&c, file)?;
    if case.file.alongside.is_empty() {
        return Ok(case);
    }
    if case.file.expect.rejected.is_some() {
        return Err(c.err(
            "expect.rejected",
            "a rejected HPA reaches no controller: a case with HPAs alongside expects ticks",
        ));
    }
    let namespace = |h: &HorizontalPodAutoscaler| {
        h.metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into())
    };
    let ns = namespace(&case.hpa);
    let mut names = vec![case.file.hpa.metadata.name.clone().unwrap_or_default()];
    let mut targets = vec![case.file.hpa.spec.scale_target_ref.name.clone()];
    for (i, member) in case.file.alongside.iter().enumerate() {
        let c = Checker {
            path,
            index,
            prefix: format!("alongside[{i}]."),
        };
        if member.expect.rejected.is_some() {
            return Err(c.err(
                "expect.rejected",
                "a rejected HPA reaches no controller: an HPA alongside expects ticks",
            ));
        }
        let name = member.hpa.metadata.name.clone().unwrap_or_default();
        if names.contains(&name) {
            return Err(c.err(
                "hpa.metadata.name",
                format!("HPA {name:?} is in the case twice: each HPA needs a name of its own"),
            ));
        }
        let target = member.hpa.spec.scale_target_ref.name.clone();
        if targets.contains(&target) {
            return Err(c.err(
                "hpa.spec.scaleTargetRef.name",
                format!("scale target {target:?} is in the case twice: each HPA alongside scales a workload of its own"),
            ));
        }
        if namespace(&member.hpa) != ns {
            return Err(c.err(
                "hpa.metadata.namespace",
                format!("the HPAs of a case share one namespace ({ns:?})"),
            ));
        }
        names.push(name);
        targets.push(target);
        let mut file = case.file.clone();
        file.hpa = member.hpa.clone();
        file.workload = member.workload.clone();
        file.timeline = member.timeline.clone();
        file.expect = member.expect.clone();
        file.alongside = Vec::new();
        file.other_hpas = Vec::new();
        file.memory = None;
        // The case's duration, when it gives one, must cover this HPA's times too.
        let built = check_file(&c, file)?;
        for (f, at) in &built.features {
            if !case.features.iter().any(|(g, _)| g == f) {
                case.features.push((*f, format!("alongside[{i}].{at}")));
            }
        }
        for (gate, used) in &built.gates {
            case.gates
                .entry(gate.clone())
                .or_insert_with(|| used.clone());
        }
        case.duration = case.duration.max(built.duration);
        case.members.push(built);
    }
    let duration = case.duration;
    for m in &mut case.members {
        m.duration = duration;
    }
    Ok(case)
}

/// Checks a case's HPA, workload, timeline and expectations (those of an HPA alongside when
/// `c` has its prefix) and builds the loaded case.
fn check_file(c: &Checker<'_>, file: CaseFile) -> Result<Case, LoadError> {
    let path = c.path;
    let index = c.index;
    let at_start = |reason: String| LoadError {
        path: path.to_path_buf(),
        pos: Pos { line: 1, column: 1 },
        reason,
    };

    // Fields the Kubernetes types do not know (k8s-openapi ignores them silently).
    let known = serde_json::to_value(&file.hpa).map_err(|e| at_start(e.to_string()))?;
    strict(c, "hpa", &known)?;

    if file.name.trim().is_empty() {
        return Err(c.err("name", "name must not be empty"));
    }
    if file.title.trim().is_empty() {
        return Err(c.err("title", "title must not be empty"));
    }
    let src = &file.source;
    let has_reason = src.reason.as_deref().is_some_and(|r| !r.trim().is_empty());
    if src.seed.is_none() && src.upstream.is_none() && !has_reason {
        return Err(c.err(
            "source",
            "source needs a seed document, an upstream test, or a reason why neither applies",
        ));
    }
    if (src.seed.is_some() || src.upstream.is_some()) && src.reason.is_some() {
        return Err(c.err(
            "source.reason",
            "source.reason is for a case with neither a seed nor an upstream source: drop it",
        ));
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
    if file.expect.rejected.is_some() {
        // Whether (and how) it is rejected is what the case checks, on each target.
        let x = &file.expect;
        if !x.at.is_empty() || x.trajectory.is_some() || x.final_replicas.is_some() {
            return Err(c.err(
                "expect.rejected",
                "expect.rejected is the whole expectation: a rejected HPA has no ticks (drop at, trajectory, finalReplicas)",
            ));
        }
    } else if let Some(e) = errors.first() {
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
    c.replicas("workload.replicas", w.replicas)?;
    if w.pod.containers.is_empty() {
        return Err(c.err(
            "workload.pod.containers",
            "a pod needs at least one container",
        ));
    }
    for (list, containers) in [
        ("containers", &w.pod.containers),
        ("sidecars", &w.pod.sidecars),
        ("initContainers", &w.pod.init_containers),
    ] {
        for (ci, container) in containers.iter().enumerate() {
            for (r, q) in &container.requests {
                c.amount(&format!("workload.pod.{list}[{ci}].requests.{r}"), q)?;
            }
        }
    }
    for (r, q) in w.pod.requests.iter().flatten() {
        c.amount(&format!("workload.pod.requests.{r}"), q)?;
    }
    if let Some(hot) = &w.startup.hot_cpu {
        c.amount("workload.startup.hotCpu.usage", &hot.usage)?;
    }

    let own = file.hpa.metadata.name.as_deref().unwrap_or_default();
    for (i, other) in file.other_hpas.iter().enumerate() {
        if other.name.is_empty() || other.name == own {
            return Err(c.err(
                &format!("otherHpas[{i}].name"),
                format!("another HPA needs a name of its own (not empty, not {own:?})"),
            ));
        }
        if file.other_hpas[..i].iter().any(|o| o.name == other.name) {
            return Err(c.err(
                &format!("otherHpas[{i}].name"),
                format!("HPA {:?} is listed twice", other.name),
            ));
        }
        if let Err(e) = hpa_reference::selector::parse(&other.selector) {
            return Err(c.err(
                &format!("otherHpas[{i}].selector"),
                format!("not a label selector (the other HPA could never register it): {e}"),
            ));
        }
    }

    let sync_period = file.settings.sync_period_seconds.unwrap_or(15);
    if sync_period == 0 || i64::from(sync_period) > MAX_VIRTUAL_SECONDS {
        return Err(c.err(
            "settings.syncPeriodSeconds",
            format!(
                "settings.syncPeriodSeconds must be from 1 to {MAX_VIRTUAL_SECONDS}, not {sync_period}"
            ),
        ));
    }
    let o = &file.settings;
    c.factor("settings.tolerance", o.tolerance)?;
    c.factor("settings.scaleUpLimitFactor", o.scale_up_limit_factor)?;
    c.factor("settings.scaleUpLimitMinimum", o.scale_up_limit_minimum)?;

    // Seeded memory.
    if let Some(m) = &file.memory {
        for (i, r) in m.recommendations.iter().enumerate() {
            c.time(&format!("memory.recommendations[{i}].at"), r.at)?;
            c.replicas(&format!("memory.recommendations[{i}].replicas"), r.replicas)?;
        }
        for (list, events) in [
            ("scaleUpEvents", &m.scale_up_events),
            ("scaleDownEvents", &m.scale_down_events),
        ] {
            for (i, e) in events.iter().enumerate() {
                c.time(&format!("memory.{list}[{i}].at"), e.at)?;
                c.replicas(&format!("memory.{list}[{i}].change"), e.change)?;
            }
        }
    }

    let mut hpa = file.hpa.clone();
    store_as_api_server(&mut hpa);

    // Timeline.
    let keys = metric_keys(&hpa);
    // The pod template's containers, sidecars and init containers.
    let template: Vec<&super::model::Container> = w
        .pod
        .containers
        .iter()
        .chain(&w.pod.sidecars)
        .chain(&w.pod.init_containers)
        .collect();
    let template_names: Vec<&str> = template.iter().map(|c| c.name.as_str()).collect();
    let container_names: Vec<&str> = w
        .pod
        .containers
        .iter()
        .chain(&w.pod.sidecars)
        .map(|c| c.name.as_str())
        .collect();
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
    // The type (`Resource`, `Pods`, …) of the HPA's metric with this key.
    let metric_type = |key: &str| {
        file.hpa
            .spec
            .metrics
            .iter()
            .flatten()
            .find(|m| metric_key(m) == key)
            .map(|m| m.type_.clone())
            .unwrap_or_default()
    };
    // The latest time the case names, and where.
    let mut last = (0i64, String::new());
    let mut later = |t: i64, at: String| {
        if t > last.0 {
            last = (t, at);
        }
    };
    for (i, e) in file.timeline.iter().enumerate() {
        let at = format!("timeline[{i}]");
        c.time(&format!("{at}.at"), i64::from(e.at))?;
        later(i64::from(e.at), format!("{at}.at"));
        if let Some(l) = &e.load {
            check_load(
                c,
                &format!("{at}.load"),
                l,
                &keys,
                &container_names,
                &metric_type(&l.metric),
            )?;
        }
        for (j, l) in e.loads.iter().enumerate() {
            check_load(
                c,
                &format!("{at}.loads[{j}]"),
                l,
                &keys,
                &container_names,
                &metric_type(&l.metric),
            )?;
        }
        if let Some(r) = e.set_replicas {
            c.replicas(&format!("{at}.setReplicas"), r)?;
        }
        if let Some(api) = &e.scale_api
            && let Some(n) = api.update_failures
        {
            let here = format!("{at}.scaleApi.updateFailures");
            if n == 0 || api.update_error.is_none() {
                return Err(c.err(
                    &here,
                    format!("{here} counts failures of updateError: it needs updateError and at least 1, not {n}"),
                ));
            }
        }
        if let Some(p) = &e.pods {
            if let Some(t) = p.started_at {
                c.time(&format!("{at}.pods.startedAt"), t)?;
            }
            if let Some(t) = p.ready_since {
                c.time(&format!("{at}.pods.readySince"), t)?;
            }
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
            if p.ready_condition == Some(false) && (p.ready.is_some() || p.ready_since.is_some()) {
                return Err(c.err(
                    &format!("{at}.pods"),
                    "a pod without a Ready condition has no Ready status: drop `ready` or `readySince`",
                ));
            }
            if let Some(requests) = &p.requests {
                check_requests(c, &format!("{at}.pods.requests"), requests, &template_names)?;
            }
        }
        if let Some(r) = &e.rollout {
            let here = format!("{at}.rollout");
            if file.workload.fixed_pods {
                return Err(c.err(
                    &here,
                    "a rolling update creates and removes pods, which workload.fixedPods forbids",
                ));
            }
            let surge = r.max_surge.as_ref();
            let unavailable = r.max_unavailable.as_ref();
            for (field, v) in [("maxSurge", surge), ("maxUnavailable", unavailable)] {
                if let Some(IntOrPercent::Percent(p)) = v
                    && IntOrPercent::percent(p).is_none()
                {
                    return Err(c.err(
                        &format!("{here}.{field}"),
                        format!(
                            "{field} is a count or a percentage from \"0%\" to \"100%\", not {p:?}"
                        ),
                    ));
                }
            }
            let zero = |v: Option<&IntOrPercent>| match v {
                Some(IntOrPercent::Int(n)) => *n == 0,
                Some(IntOrPercent::Percent(p)) => IntOrPercent::percent(p) == Some(0),
                None => false,
            };
            if zero(surge) && zero(unavailable) {
                return Err(c.err(
                    &format!("{here}.maxUnavailable"),
                    "maxUnavailable may not be 0 when maxSurge is 0 (a Deployment refuses it: the rollout could never start)",
                ));
            }
            if let Some(requests) = &r.requests {
                let place = format!("{here}.requests");
                check_requests(c, &place, requests, &template_names)?;
                for (name, reqs) in requests {
                    let container = template.iter().find(|t| &t.name == name);
                    for res in reqs.keys() {
                        if !container.is_some_and(|t| t.requests.contains_key(res)) {
                            return Err(c.err(
                                &format!("{place}.{name}.{res}"),
                                format!("the template's container {name:?} requests no {res}; a rollout changes requests the old template has"),
                            ));
                        }
                    }
                }
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
            let kind = metric_type(&m.metric);
            if m.unregistered
                && !matches!(kind.as_str(), "Resource" | "ContainerResource" | "External")
            {
                return Err(c.err(
                    &format!("{at}.metricError.unregistered"),
                    format!("only the resource and external metrics APIs can be unregistered, not the one of a {kind} metric"),
                ));
            }
        }
        for (j, s) in e.stray_samples.iter().enumerate() {
            let here = format!("{at}.straySamples[{j}]");
            metric_known(&format!("{here}.metric"), &s.metric)?;
            let kind = metric_type(&s.metric);
            if !matches!(kind.as_str(), "Resource" | "ContainerResource" | "Pods") {
                return Err(c.err(
                    &format!("{here}.metric"),
                    format!("a {kind} metric has no per-pod samples; stray samples are for Resource, ContainerResource and Pods metrics"),
                ));
            }
            let target = &file.hpa.spec.scale_target_ref.name;
            let own = s
                .pod
                .strip_prefix(target.as_str())
                .and_then(|r| r.strip_prefix('-'))
                .is_some_and(|n| n.len() >= 4 && n.bytes().all(|b| b.is_ascii_digit()));
            if s.pod.is_empty() || own {
                return Err(c.err(
                    &format!("{here}.pod"),
                    format!("{:?} is a name the workload's own pods take ({target}-0000, …); a stray sample needs another", s.pod),
                ));
            }
            c.amount(&format!("{here}.value"), &s.value)?;
        }
    }
    // Every patched manifest must be one the API server accepts (patches apply in time order),
    // and a patch is as strict as the manifest: a field the HPA does not have is an error.
    let mut manifests = vec![file.hpa.clone()];
    let mut patched = file.hpa.clone();
    let mut order: Vec<(usize, &super::model::TimelineEntry)> =
        file.timeline.iter().enumerate().collect();
    order.sort_by_key(|(_, e)| e.at);
    for (i, e) in order {
        let Some(patch) = &e.hpa_patch else { continue };
        let at = format!("timeline[{i}].hpaPatch");
        patched = try_patch(&patched, patch)
            .map_err(|e| c.err(&at, format!("the patched HPA is not an HPA: {e}")))?;
        let known = serde_json::to_value(&patched).map_err(|e| at_start(e.to_string()))?;
        strict(c, &at, &known)?;
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
        manifests.push(patched.clone());
    }

    // Expectations.
    for (i, x) in file.expect.at.iter().enumerate() {
        let at = format!("expect.at[{i}].t");
        c.time(&at, i64::from(x.t))?;
        later(i64::from(x.t), at);
        if x.t % sync_period != 0 {
            return Err(c.err(
                &format!("expect.at[{i}].t"),
                format!(
                    "t={} is not a tick: ticks are multiples of the sync period ({sync_period} s)",
                    x.t
                ),
            ));
        }
        let listed: Vec<&str> = x
            .conditions
            .iter()
            .flatten()
            .map(|c| c.type_.as_str())
            .collect();
        for (j, ty) in x.absent_conditions.iter().flatten().enumerate() {
            if listed.contains(&ty.as_str()) {
                let at = format!("expect.at[{i}].absentConditions[{j}]");
                return Err(c.err(
                    &at,
                    format!("{at}: {ty} is expected both present (in conditions) and absent"),
                ));
            }
        }
        if let Some(m) = &x.memory {
            for (j, r) in m.recommendations.iter().flatten().enumerate() {
                let at = format!("expect.at[{i}].memory.recommendations[{j}]");
                c.time(&format!("{at}.at"), r.at)?;
                c.replicas(&format!("{at}.replicas"), r.replicas)?;
            }
            for (list, events) in [
                ("scaleUpEvents", &m.scale_up_events),
                ("scaleDownEvents", &m.scale_down_events),
            ] {
                for (j, e) in events.iter().flatten().enumerate() {
                    let at = format!("expect.at[{i}].memory.{list}[{j}]");
                    c.time(&format!("{at}.at"), e.at)?;
                    c.replicas(&format!("{at}.change"), e.change)?;
                }
            }
        }
        if x.exact_conditions == Some(true) && x.conditions.is_none() {
            let at = format!("expect.at[{i}].exactConditions");
            return Err(c.err(
                &at,
                format!("{at} needs the list of conditions (`conditions: []` for none)"),
            ));
        }
        // A message is exact or a substring, never both.
        let both = x
            .conditions
            .iter()
            .flatten()
            .map(|k| (k.message.is_some(), k.message_contains.is_some()))
            .enumerate()
            .map(|(j, b)| (format!("expect.at[{i}].conditions[{j}]"), b))
            .chain(
                x.events
                    .iter()
                    .flatten()
                    .map(|e| (e.message.is_some(), e.message_contains.is_some()))
                    .enumerate()
                    .map(|(j, b)| (format!("expect.at[{i}].events[{j}]"), b)),
            )
            .find(|(_, (exact, contains))| *exact && *contains);
        if let Some((at, _)) = both {
            return Err(c.err(
                &at,
                format!("{at} gives message (exact) and messageContains: give one"),
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
    let (last, last_at) = last;
    let (duration, duration_at) = match file.duration_seconds {
        Some(d) => {
            c.time("durationSeconds", i64::from(d))?;
            if i64::from(d) < last {
                return Err(c.err("durationSeconds", format!("the run ends at {d} s, before the last timeline entry or expectation ({last} s)")));
            }
            (i64::from(d), "durationSeconds".to_string())
        }
        // At most 2 × MAX_VIRTUAL_SECONDS: fits a u32, cannot wrap.
        None => (last + i64::from(sync_period), last_at),
    };
    let ticks = duration / i64::from(sync_period) + 1;
    if ticks > MAX_TICKS as i64 {
        return Err(c.err(
            &duration_at,
            format!(
                "the run would have {ticks} ticks ({duration} s every {sync_period} s), more than {MAX_TICKS}: shorten it or lengthen settings.syncPeriodSeconds"
            ),
        ));
    }
    let pods = pods_bound(
        file.workload.replicas,
        &manifests,
        file.timeline.iter().filter_map(|e| e.set_replicas),
    );
    let pod_ticks = pods * ticks.unsigned_abs();
    if pod_ticks > MAX_POD_TICKS {
        return Err(c.err(
            &duration_at,
            format!(
                "the run would simulate up to {pods} pods for {ticks} ticks, {pod_ticks} pod-ticks, more than {MAX_POD_TICKS}: shorten it, lengthen settings.syncPeriodSeconds or lower maxReplicas"
            ),
        ));
    }
    let duration = u32::try_from(duration).map_err(|_| {
        c.err(
            &duration_at,
            format!("the run would last {duration} s, more than {} s", u32::MAX),
        )
    })?;

    Ok(Case {
        path: path.to_path_buf(),
        name_pos: index.locate("name"),
        gates: gates_used(&file, &manifests),
        features: features_needed(&file, &manifests),
        file,
        hpa,
        sync_period,
        duration,
        members: Vec::new(),
    })
}
