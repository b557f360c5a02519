//! Random valid scenarios: an HPA (metrics of every kind, behavior rules, settings), a workload
//! and a timeline of load, pod changes and API errors, with values drawn toward the edges
//! ([`super::edges`]) some of the time.

use std::path::Path;

use super::rng::Rng;
use crate::case::load::load_case_file;
use crate::case::{Case, load_case_text};

use serde_json::{Value, json};

use crate::case::model::{
    CaseFile, Container, Expectations, IntOrPercent, Load, MetricError, MetricsMissing, PodChange,
    PodTemplate, Rollout, ScaleApi, SettingsOverrides, Source, Startup, TimelineEntry, Workload,
};

/// The metric kinds the generator mixes.
pub(super) const METRIC_KINDS: [&str; 9] = [
    "cpu-utilization",
    "cpu-average",
    "memory-average",
    "pods",
    "object-value",
    "object-average",
    "external-value",
    "external-average",
    "container-cpu",
];

/// [`METRIC_KINDS`] without the External ones (for an implementation without `externalMetrics`).
const NO_EXTERNAL_KINDS: [&str; 7] = [
    "cpu-utilization",
    "cpu-average",
    "memory-average",
    "pods",
    "object-value",
    "object-average",
    "container-cpu",
];

pub(super) fn metric_spec(kind: &str, rng: &mut Rng, edge: bool) -> (Value, String) {
    let (mut spec, key) = plain_metric_spec(kind, rng);
    if edge {
        // The target's quantity in another form of the same value, and a selector on External
        // metrics (nil, labels, expressions).
        for source in [
            "resource",
            "containerResource",
            "pods",
            "object",
            "external",
        ] {
            let Some(target) = spec.get_mut(source).and_then(|s| s.get_mut("target")) else {
                continue;
            };
            for field in ["averageValue", "value"] {
                if let Some(q) = target.get(field).and_then(Value::as_str)
                    && let Ok(milli) = hpa_reference::quantity::parse_milli(q)
                {
                    target[field] = json!(super::edges::quantity(milli, rng));
                }
            }
        }
        if let Some(selector) = spec
            .get("external")
            .is_some()
            .then(|| super::edges::external_selector(rng))
            .flatten()
        {
            spec["external"]["metric"]["selector"] = selector;
        }
    }
    (spec, key)
}

pub(super) fn plain_metric_spec(kind: &str, rng: &mut Rng) -> (Value, String) {
    let util = rng.range(20, 120);
    match kind {
        "cpu-utilization" => (
            json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": util}}}),
            "cpu".into(),
        ),
        "cpu-average" => (
            json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "AverageValue", "averageValue": format!("{}m", rng.range(50, 600))}}}),
            "cpu".into(),
        ),
        "container-cpu" => (
            json!({"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app", "target": {"type": "Utilization", "averageUtilization": util}}}),
            "cpu".into(),
        ),
        "memory-average" => (
            json!({"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": format!("{}Mi", rng.range(32, 512))}}}),
            "memory".into(),
        ),
        "pods" => (
            json!({"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": format!("{}", rng.range(5, 200))}}}),
            "qps".into(),
        ),
        "object-value" => (
            json!({"type": "Object", "object": {"metric": {"name": "rps"}, "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"}, "target": {"type": "Value", "value": format!("{}", rng.range(10, 500))}}}),
            "rps".into(),
        ),
        "object-average" => (
            json!({"type": "Object", "object": {"metric": {"name": "rps"}, "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"}, "target": {"type": "AverageValue", "averageValue": format!("{}", rng.range(5, 100))}}}),
            "rps".into(),
        ),
        "external-value" => (
            json!({"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": format!("{}", rng.range(10, 500))}}}),
            "queue".into(),
        ),
        _ => (
            json!({"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": format!("{}", rng.range(5, 100))}}}),
            "queue".into(),
        ),
    }
}

pub(super) fn random_load(key: &str, kind: &str, rng: &mut Rng, edge: bool) -> Load {
    let mut l = plain_random_load(key, kind, rng);
    if edge && key == "cpu" && rng.chance(0.3) {
        // Usage large enough that a 1m request's utilization percent leaves int32.
        l = Load {
            metric: key.to_string(),
            per_pod: Some(super::edges::quantity(rng.range(0, 300_000_000), rng)),
            ..Load::default()
        };
    }
    l
}

pub(super) fn plain_random_load(key: &str, kind: &str, rng: &mut Rng) -> Load {
    let mut l = Load {
        metric: key.to_string(),
        ..Load::default()
    };
    match kind {
        "object-value" | "object-average" => l.value = Some(format!("{}", rng.range(0, 2000))),
        "external-value" | "external-average" => {
            l.series = Some(
                (0..rng.range(1, 3))
                    .map(|_| format!("{}", rng.range(0, 800)))
                    .collect(),
            )
        }
        _ => {
            let unit = |rng: &mut Rng| -> String {
                match key {
                    "cpu" => format!("{}m", rng.range(0, 1500)),
                    "memory" => format!("{}Mi", rng.range(0, 1024)),
                    _ => format!("{}", rng.range(0, 400)),
                }
            };
            match rng.range(0, 2) {
                0 => {
                    l.total = Some(match key {
                        "cpu" => format!("{}m", rng.range(0, 20_000)),
                        "memory" => format!("{}Mi", rng.range(0, 8192)),
                        _ => format!("{}", rng.range(0, 4000)),
                    })
                }
                1 => l.per_pod = Some(unit(rng)),
                _ => l.pods = Some((0..rng.range(1, 8)).map(|_| unit(rng)).collect()),
            }
        }
    }
    l
}

pub(super) fn random_rules(rng: &mut Rng, edge: bool) -> Value {
    let mut rules = serde_json::Map::new();
    if rng.chance(0.5) {
        rules.insert(
            "stabilizationWindowSeconds".into(),
            json!(rng.range(0, 40) * 15),
        );
    }
    if rng.chance(0.4) {
        rules.insert(
            "selectPolicy".into(),
            json!(rng.pick(&["Max", "Min", "Disabled"])),
        );
    }
    if rng.chance(0.8) {
        let policies: Vec<Value> = (0..rng.range(1, 2))
            .map(|_| {
                if edge && rng.chance(0.3) {
                    json!({"type": *rng.pick(&["Pods", "Percent"]), "value": super::edges::extreme_policy_value(rng), "periodSeconds": rng.range(1, 20) * 15})
                } else if rng.chance(0.5) {
                    json!({"type": "Pods", "value": rng.range(1, 10), "periodSeconds": rng.range(1, 20) * 15})
                } else {
                    let value = if rng.chance(0.7) { rng.range(5, 90) } else { rng.range(90, 300) };
                    json!({"type": "Percent", "value": value, "periodSeconds": rng.range(1, 20) * 15})
                }
            })
            .collect();
        rules.insert("policies".into(), Value::Array(policies));
    }
    if edge && rng.chance(0.5) {
        rules.insert("tolerance".into(), json!(super::edges::tolerance(rng).0));
    } else if rng.chance(0.2) {
        rules.insert(
            "tolerance".into(),
            json!(rng.pick(&["0", "0.05", "0.2", "50m"])),
        );
    }
    Value::Object(rules)
}

/// Leaves out of a scenario what the judged release cannot run, so that every scenario runs on
/// both targets: per-direction tolerances before 1.33 (no `HPAConfigurableTolerance` gate).
pub fn fit_release(file: &mut CaseFile, version: hpa_reference::KubernetesVersion) {
    if version.has_gate("HPAConfigurableTolerance") {
        return;
    }
    if let Some(b) = file.hpa.spec.behavior.as_mut() {
        for rules in [b.scale_up.as_mut(), b.scale_down.as_mut()]
            .into_iter()
            .flatten()
        {
            rules.tolerance = None;
        }
    }
}

/// What the generator may draw: every metric source, or none External (for an implementation
/// that does not declare `externalMetrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Draw {
    /// Whether External metrics are drawn.
    pub external: bool,
}

impl Draw {
    /// Everything.
    pub const ALL: Draw = Draw { external: true };
}

/// A random, valid scenario.
pub fn generate(name: &str, rng: &mut Rng) -> CaseFile {
    generate_drawing(name, rng, Draw::ALL)
}

/// A random, valid scenario drawn from what `draw` allows (with [`Draw::ALL`], the scenario
/// [`generate`] makes for the same generator state).
pub fn generate_drawing(name: &str, rng: &mut Rng, draw: Draw) -> CaseFile {
    let kinds_drawn: &[&str] = if draw.external {
        &METRIC_KINDS
    } else {
        &NO_EXTERNAL_KINDS
    };
    // About a third of the scenarios draw edge values (crate::edges).
    let edge = rng.chance(0.35);
    let count = rng.range(1, 3) as usize;
    let mut kinds: Vec<&str> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    let mut metrics = Vec::new();
    while kinds.len() < count {
        let kind = *rng.pick(kinds_drawn);
        let (spec, key) = metric_spec(kind, rng, edge);
        if keys.contains(&key) {
            continue;
        }
        kinds.push(kind);
        keys.push(key);
        metrics.push(spec);
    }
    let min = rng.range(1, 4);
    let max = min + rng.range(0, 40);
    let replicas = if rng.chance(0.1) {
        rng.range(0, max + 3)
    } else {
        rng.range(min, max)
    };
    let mut spec = json!({
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": min,
        "maxReplicas": max,
        "metrics": metrics,
    });
    match rng.range(0, 9) {
        0..=2 => {}
        3 => spec["behavior"] = json!({}),
        _ => {
            let mut b = serde_json::Map::new();
            if rng.chance(0.7) {
                b.insert("scaleUp".into(), random_rules(rng, edge));
            }
            if rng.chance(0.7) {
                b.insert("scaleDown".into(), random_rules(rng, edge));
            }
            spec["behavior"] = Value::Object(b);
        }
    }
    // A Pods metric exactly on a tolerance band's edge, the tolerance in any form.
    let band_edge = (edge && kinds[0] == "pods" && rng.chance(0.6)).then(|| {
        let (text, k) = super::edges::tolerance(rng);
        let up = rng.chance(0.5);
        let (target, usage) = super::edges::on_band_edge(k, up, rng);
        let direction = if up { "scaleUp" } else { "scaleDown" };
        if !spec["behavior"].is_object() {
            spec["behavior"] = json!({});
        }
        if !spec["behavior"][direction].is_object() {
            spec["behavior"][direction] = json!({});
        }
        spec["behavior"][direction]["tolerance"] = json!(text);
        spec["metrics"][0]["pods"]["target"]["averageValue"] =
            json!(super::edges::quantity(target, rng));
        super::edges::quantity(usage, rng)
    });
    let hpa = serde_json::from_value(json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": spec,
    }))
    .expect("generated HPA is well-formed");

    // Edge scenarios: a tiny CPU request (utilization's int32 percent can wrap), requests in
    // other forms, and pods mixing pod-level and container-level requests across resources.
    let app_cpu = if edge && rng.chance(0.3) { 1 } else { 500 };
    let render = |milli: i64, rng: &mut Rng| {
        if edge {
            super::edges::quantity(milli, rng)
        } else {
            format!("{milli}m")
        }
    };
    let mut containers = vec![Container {
        name: "app".into(),
        requests: [
            ("cpu".to_string(), render(app_cpu, rng)),
            ("memory".to_string(), "256Mi".to_string()),
        ]
        .into(),
    }];
    if rng.chance(0.3) {
        containers.push(Container {
            name: "proxy".into(),
            requests: [
                ("cpu".to_string(), render(100, rng)),
                ("memory".to_string(), "64Mi".to_string()),
            ]
            .into(),
        });
    }
    let pod_requests = (edge && rng.chance(0.3)).then(|| {
        let resource = *rng.pick(&["cpu", "memory"]);
        let other = if resource == "cpu" { "memory" } else { "cpu" };
        // The last container drops its request for the other resource.
        if let Some(c) = containers.last_mut()
            && rng.chance(0.6)
        {
            c.requests.remove(other);
        }
        let milli = if resource == "cpu" {
            rng.range(1, 20) * 100
        } else {
            rng.range(1, 16) * (64 << 20) * 1000
        };
        std::collections::BTreeMap::from([(
            resource.to_string(),
            super::edges::quantity(milli, rng),
        )])
    });
    let duration = rng.range(8, 50) * 15;
    let mut timeline = vec![TimelineEntry {
        at: 0,
        loads: kinds
            .iter()
            .zip(&keys)
            .map(|(k, key)| random_load(key, k, rng, edge))
            .enumerate()
            .map(|(i, mut load)| {
                if i == 0
                    && let Some(usage) = &band_edge
                {
                    load = Load {
                        metric: keys[0].clone(),
                        per_pod: Some(usage.clone()),
                        ..Load::default()
                    };
                }
                load
            })
            .collect(),
        ..TimelineEntry::default()
    }];
    for _ in 0..rng.range(0, 7) {
        let at = (rng.range(1, duration) / 5 * 5) as u32;
        let mut e = TimelineEntry {
            at,
            ..TimelineEntry::default()
        };
        let which = rng.range(0, 11);
        let i = rng.range(0, kinds.len() as i64 - 1) as usize;
        match which {
            0..=3 => e.load = Some(random_load(&keys[i], kinds[i], rng, edge)),
            4 => {
                e.pods = Some(PodChange {
                    ordinals: Some(vec![rng.range(0, 5) as usize]),
                    ready: Some(rng.chance(0.5)),
                    ..PodChange::default()
                })
            }
            5 => {
                e.metrics_missing = Some(MetricsMissing {
                    metric: keys[i].clone(),
                    newest: Some(rng.range(0, 3) as usize),
                    ..MetricsMissing::default()
                })
            }
            6 => {
                e.metric_error = Some(MetricError {
                    metric: keys[i].clone(),
                    message: rng.chance(0.6).then(|| {
                        "the server is currently unable to handle the request".to_string()
                    }),
                    ..MetricError::default()
                })
            }
            7 => e.set_replicas = Some(rng.range(0, max + 2) as i32),
            10 => {
                // A rolling update (maxUnavailable ≥ 1, so it can always start).
                e.rollout = Some(Rollout {
                    max_surge: Some(IntOrPercent::Int(rng.range(0, 3) as u32)),
                    max_unavailable: Some(if rng.chance(0.5) {
                        IntOrPercent::Int(rng.range(1, 2) as u32)
                    } else {
                        IntOrPercent::Percent("50%".into())
                    }),
                    min_ready_seconds: rng.range(0, 45) as u32,
                    termination_seconds: Some(rng.range(0, 45) as u32),
                    requests: None,
                })
            }
            8 => {
                e.scale_api = Some(ScaleApi {
                    update_error: rng.chance(0.5).then(|| {
                        "Operation cannot be fulfilled: the object has been modified".to_string()
                    }),
                    ..ScaleApi::default()
                })
            }
            _ => {
                e.pods = Some(PodChange {
                    newest: Some(1),
                    phase: Some(*rng.pick(&[
                        crate::case::model::Phase::Pending,
                        crate::case::model::Phase::Failed,
                        crate::case::model::Phase::Running,
                    ])),
                    ..PodChange::default()
                })
            }
        }
        timeline.push(e);
    }
    timeline.sort_by_key(|e| e.at);
    let mut cpu_initialization = rng.chance(0.3).then(|| rng.range(0, 300) as u32);
    let pod_age = rng.chance(0.2).then(|| rng.range(0, 400) as u32);
    if edge && rng.chance(0.3) {
        // The CPU initialization period ends exactly now for the initial pods (a strict cutoff).
        cpu_initialization = pod_age.or(Some(0));
    }
    CaseFile {
        kubernetes_versions: None,
        changed_in: Vec::new(),
        name: name.to_string(),
        title: format!("Fuzz scenario {name}"),
        source: Source {
            reason: Some(format!(
                "generated by `hpa-conformance fuzz` ({name}): no document or upstream test states it"
            )),
            ..Source::default()
        },
        notes: None,
        feature_gates: Default::default(),
        settings: SettingsOverrides {
            tolerance: rng.chance(0.2).then(|| *rng.pick(&[0.0, 0.05, 0.2])),
            cpu_initialization_period_seconds: cpu_initialization,
            initial_readiness_delay_seconds: rng.chance(0.3).then(|| rng.range(0, 60) as u32),
            downscale_stabilization_seconds: rng
                .chance(0.3)
                .then(|| (rng.range(0, 20) * 15) as u32),
            ..SettingsOverrides::default()
        },
        // A controller that has seen the HPA before (no initial recommendation) scales down at once.
        memory: rng
            .chance(0.4)
            .then(crate::case::model::MemorySeed::default),
        hpa,
        other_hpas: Vec::new(),
        alongside: Vec::new(),
        workload: Workload {
            replicas: replicas as i32,
            selector: None,
            pod: PodTemplate {
                containers,
                sidecars: Vec::new(),
                init_containers: Vec::new(),
                requests: pod_requests,
            },
            startup: Startup {
                pending_seconds: *rng.pick(&[0, 0, 10, 30]),
                ready_after_seconds: *rng.pick(&[0, 5, 20, 60]),
                hot_cpu: None,
            },
            initial_pod_age_seconds: pod_age,
            metric_window_seconds: None,
            fixed_pods: false,
            listed_newest_first: rng.chance(0.2),
        },
        timeline,
        duration_seconds: Some(duration as u32),
        expect: Expectations::default(),
    }
}

/// Loads a generated scenario through the loader's checks (so it is checked like any case),
/// from the file as built: the case its YAML text loads as (the test below holds the two equal
/// for every release and both drawings), without writing and parsing that text for each scenario and
/// each shrinking step — the round trip was a tenth of the harness's CPU in fuzzing.
pub fn to_case(file: &CaseFile) -> Result<Case, String> {
    load_case_file(Path::new(&format!("<{}>", file.name)), file.clone()).map_err(|e| e.to_string())
}

/// Loads a scenario from its YAML text, as a case file written from it loads: for what is
/// written (a finding), so that what was run is what the file says.
pub fn to_case_from_text(file: &CaseFile) -> Result<Case, String> {
    let text = crate::util::yaml::to_string(file)?;
    load_case_text(Path::new(&format!("<{}>", file.name)), &text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::Rng;

    /// A scenario is run as loaded from the file as built (`to_case`), and a finding is written
    /// as YAML: both must be the same case. Every field of the two loads is compared (but the
    /// name's position, which only a text has), for scenarios of every release, with and without
    /// External metrics drawn.
    #[test]
    fn generated_scenarios_load_as_their_text_does() {
        fn without_positions(mut c: Case) -> Case {
            c.name_pos = Default::default();
            c.members = c.members.into_iter().map(without_positions).collect();
            c
        }
        let mut compared = 0;
        for version in hpa_reference::KubernetesVersion::ALL {
            for i in 0..120u64 {
                let draw = Draw {
                    external: i % 3 != 0,
                };
                let mut file = generate_drawing("g", &mut Rng::new(7_919 * i + 13), draw);
                fit_release(&mut file, version);
                let at = || format!("scenario {i} at {}", version.name());
                match (to_case(&file), to_case_from_text(&file)) {
                    (Ok(built), Ok(text)) => {
                        let (built, text) = (without_positions(built), without_positions(text));
                        assert_eq!(format!("{built:?}"), format!("{text:?}"), "{}", at());
                        compared += 1;
                    }
                    (Err(built), Err(text)) => assert_eq!(
                        built.split_once(": ").map(|x| x.1),
                        text.split_once(": ").map(|x| x.1),
                        "{}: refused differently",
                        at()
                    ),
                    (built, text) => panic!(
                        "{}: built {:?}, from its text {:?}",
                        at(),
                        built.err(),
                        text.err()
                    ),
                }
            }
        }
        assert!(compared > 600, "only {compared} scenarios loaded");
    }
}
