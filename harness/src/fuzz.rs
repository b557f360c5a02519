//! Differential fuzzing: random valid HPAs and timelines run on two targets, traces compared tick
//! by tick; the first difference is shrunk to a small case file, ready to commit under
//! `cases/regressions/`.
//!
//! Generation is deterministic for a seed (a SplitMix64 generator, no platform randomness), and
//! every generated scenario goes through the same loader and checks as a hand-written case.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::case::model::{
    CaseFile, Container, ExpectAt, Expectations, IntOrPercent, Load, MetricError, MetricsMissing,
    PodChange, PodTemplate, Rollout, ScaleApi, SettingsOverrides, Source, Startup, TimelineEntry,
    Workload,
};
use crate::case::{Case, load_case_text};
use crate::profile::Profile;
use crate::runner::{CaseResult, RunOptions, run_case, trajectory};
use crate::target::Target;
use crate::trace::first_difference_at;

/// A small deterministic generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for a seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        lo + (self.next_u64() % ((hi - lo + 1) as u64)) as i64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    /// One of the items.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.range(0, items.len() as i64 - 1) as usize]
    }
}

/// The metric kinds the generator mixes.
const METRIC_KINDS: [&str; 9] = [
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

fn metric_spec(kind: &str, rng: &mut Rng, edge: bool) -> (Value, String) {
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
                    target[field] = json!(crate::edges::quantity(milli, rng));
                }
            }
        }
        if let Some(selector) = spec
            .get("external")
            .is_some()
            .then(|| crate::edges::external_selector(rng))
            .flatten()
        {
            spec["external"]["metric"]["selector"] = selector;
        }
    }
    (spec, key)
}

fn plain_metric_spec(kind: &str, rng: &mut Rng) -> (Value, String) {
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

fn random_load(key: &str, kind: &str, rng: &mut Rng, edge: bool) -> Load {
    let mut l = plain_random_load(key, kind, rng);
    if edge && key == "cpu" && rng.chance(0.3) {
        // Usage large enough that a 1m request's utilization percent leaves int32.
        l = Load {
            metric: key.to_string(),
            per_pod: Some(crate::edges::quantity(rng.range(0, 300_000_000), rng)),
            ..Load::default()
        };
    }
    l
}

fn plain_random_load(key: &str, kind: &str, rng: &mut Rng) -> Load {
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

fn random_rules(rng: &mut Rng, edge: bool) -> Value {
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
                    json!({"type": *rng.pick(&["Pods", "Percent"]), "value": crate::edges::extreme_policy_value(rng), "periodSeconds": rng.range(1, 20) * 15})
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
        rules.insert("tolerance".into(), json!(crate::edges::tolerance(rng).0));
    } else if rng.chance(0.2) {
        rules.insert(
            "tolerance".into(),
            json!(rng.pick(&["0", "0.05", "0.2", "50m"])),
        );
    }
    Value::Object(rules)
}

/// A random, valid scenario.
pub fn generate(name: &str, rng: &mut Rng) -> CaseFile {
    // About a third of the scenarios draw edge values (crate::edges).
    let edge = rng.chance(0.35);
    let count = rng.range(1, 3) as usize;
    let mut kinds: Vec<&str> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    let mut metrics = Vec::new();
    while kinds.len() < count {
        let kind = *rng.pick(&METRIC_KINDS);
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
        let (text, k) = crate::edges::tolerance(rng);
        let up = rng.chance(0.5);
        let (target, usage) = crate::edges::on_band_edge(k, up, rng);
        let direction = if up { "scaleUp" } else { "scaleDown" };
        if !spec["behavior"].is_object() {
            spec["behavior"] = json!({});
        }
        if !spec["behavior"][direction].is_object() {
            spec["behavior"][direction] = json!({});
        }
        spec["behavior"][direction]["tolerance"] = json!(text);
        spec["metrics"][0]["pods"]["target"]["averageValue"] =
            json!(crate::edges::quantity(target, rng));
        crate::edges::quantity(usage, rng)
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
            crate::edges::quantity(milli, rng)
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
            crate::edges::quantity(milli, rng),
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

/// Where `fuzz` writes what it finds when `--out` is not given: `cases/regressions` when both
/// targets are this project's own (`core`, `reference-api`, `hpa-step-reference`, the upstream
/// adapter), else `hpa-fuzz-findings` — a third party's differences never land in the corpus
/// unasked.
pub fn default_out(a: &str, b: &str) -> PathBuf {
    let ours = |t: &str| {
        matches!(t, "core" | "reference-api")
            || t.strip_prefix("exec:").is_some_and(|cmd| {
                let program = cmd.split_whitespace().next().unwrap_or_default();
                program.ends_with("hpa-step-reference")
                    || program.ends_with("adapters/upstream/bin/hpa-upstream-adapter")
            })
    };
    if ours(a) && ours(b) {
        PathBuf::from("cases/regressions")
    } else {
        PathBuf::from("hpa-fuzz-findings")
    }
}

/// Loads a generated scenario through the normal loader (so it is checked like any case).
pub fn to_case(file: &CaseFile) -> Result<Case, String> {
    let text = crate::yaml::to_string(file)?;
    load_case_text(Path::new(&format!("<{}>", file.name)), &text).map_err(|e| e.to_string())
}

/// The first tick where the targets disagree on a scenario, if they do (targets that fail to
/// run it count as disagreeing at t=0).
pub fn difference(
    case: &Case,
    a: &dyn Target,
    b: &dyn Target,
    opts: &RunOptions,
) -> Option<(i64, String, CaseResult, CaseResult)> {
    let run = run_pair(case, a, b, opts);
    run.difference.map(|(t, d)| (t, d, run.a, run.b))
}

fn candidates(file: &CaseFile, diff_t: i64) -> Vec<CaseFile> {
    let mut out = Vec::new();
    let mut push = |f: CaseFile| out.push(f);
    if file.duration_seconds.is_none_or(|d| i64::from(d) > diff_t) {
        let mut f = file.clone();
        f.duration_seconds = Some(diff_t.max(0) as u32);
        f.timeline.retain(|e| i64::from(e.at) <= diff_t);
        push(f);
    }
    for i in 0..file.timeline.len() {
        let mut f = file.clone();
        f.timeline.remove(i);
        push(f);
        // Simplify an entry's loads one by one.
        for j in 0..file.timeline[i].loads.len() {
            let mut f = file.clone();
            f.timeline[i].loads.remove(j);
            push(f);
        }
    }
    let metrics = file.hpa.spec.metrics.clone().unwrap_or_default();
    if metrics.len() > 1 {
        for i in 0..metrics.len() {
            let mut f = file.clone();
            let mut m = metrics.clone();
            let removed = m.remove(i);
            let key = crate::case::load::metric_key(&removed);
            f.hpa.spec.metrics = Some(m);
            for e in &mut f.timeline {
                e.loads.retain(|l| l.metric != key);
                if e.load.as_ref().is_some_and(|l| l.metric == key) {
                    e.load = None;
                }
                if e.metrics_missing.as_ref().is_some_and(|m| m.metric == key) {
                    e.metrics_missing = None;
                }
                if e.metric_error.as_ref().is_some_and(|m| m.metric == key) {
                    e.metric_error = None;
                }
            }
            push(f);
        }
    }
    if let Some(b) = &file.hpa.spec.behavior {
        let mut f = file.clone();
        f.hpa.spec.behavior = None;
        push(f);
        for dir in 0..2 {
            let mut f = file.clone();
            if let Some(b2) = f.hpa.spec.behavior.as_mut() {
                if dir == 0 && b.scale_up.is_some() {
                    b2.scale_up = None;
                } else if dir == 1 && b.scale_down.is_some() {
                    b2.scale_down = None;
                } else {
                    continue;
                }
            }
            push(f);
        }
    }
    if file.workload.pod.containers.len() > 1 {
        let mut f = file.clone();
        f.workload.pod.containers.truncate(1);
        for e in &mut f.timeline {
            e.loads.retain(|l| l.container.is_none());
        }
        push(f);
    }
    let s = &file.settings;
    if s.tolerance.is_some()
        || s.cpu_initialization_period_seconds.is_some()
        || s.initial_readiness_delay_seconds.is_some()
        || s.downscale_stabilization_seconds.is_some()
    {
        let mut f = file.clone();
        f.settings = SettingsOverrides::default();
        push(f);
    }
    if file.workload.startup.pending_seconds > 0 || file.workload.startup.ready_after_seconds > 0 {
        let mut f = file.clone();
        f.workload.startup = Startup::default();
        push(f);
    }
    if file.workload.replicas > 1 {
        let mut f = file.clone();
        f.workload.replicas -= 1;
        push(f);
    }
    out
}

/// Shrinks a scenario on which the targets disagree to a smaller one on which they still do.
pub fn shrink(mut file: CaseFile, a: &dyn Target, b: &dyn Target, opts: &RunOptions) -> CaseFile {
    let Some((mut diff_t, ..)) = to_case(&file).ok().and_then(|c| difference(&c, a, b, opts))
    else {
        return file;
    };
    let mut progress = true;
    let mut rounds = 0;
    while progress && rounds < 50 {
        progress = false;
        rounds += 1;
        for candidate in candidates(&file, diff_t) {
            let Ok(case) = to_case(&candidate) else {
                continue;
            };
            if let Some((t, ..)) = difference(&case, a, b, opts) {
                file = candidate;
                diff_t = t;
                progress = true;
                break;
            }
        }
    }
    file
}

/// Turns a shrunk scenario into a regression case: the trace of `truth` becomes the expectation.
pub fn regression_case(
    mut file: CaseFile,
    truth: &CaseResult,
    other: &CaseResult,
    (diff_t, diff): (i64, &str),
    truth_name: &str,
    other_name: &str,
) -> CaseFile {
    file.title = format!("Fuzz-found difference: {diff}");
    file.notes = Some(format!(
        "Found by `hpa-conformance fuzz`: {truth_name} (taken as truth) and {other_name} disagree.\n{diff}\nTrajectory on {truth_name}: {:?}; on {other_name}: {:?}.\nReview the expectations (copied from {truth_name}) before committing.\n",
        trajectory(&truth.trace),
        trajectory(&other.trace)
    ));
    file.expect = Expectations {
        trajectory: Some(trajectory(&truth.trace)),
        final_replicas: truth.trace.last().map(|t| t.replicas),
        // The first tick, every tick where the count changes, and the tick of the difference.
        at: truth
            .trace
            .iter()
            .filter(|t| t.t == 0 || t.replicas != t.replicas_before || t.t == diff_t)
            .map(|t| ExpectAt {
                t: t.t as u32,
                replicas: Some(t.replicas),
                desired_replicas: Some(t.desired),
                ..ExpectAt::default()
            })
            .collect(),
        rejected: None,
    };
    file
}

/// How many times a difference is re-run before it is believed: a difference that does not
/// reproduce every time is flaky (reported for review, never shrunk, never a failed run).
pub const RECHECKS: usize = 2;

/// The outcome of a fuzzing run.
#[derive(Debug, Clone)]
pub struct FuzzReport {
    /// Scenarios run.
    pub scenarios: usize,
    /// Generated scenarios the loader rejected (a generator bug if not zero).
    pub rejected: usize,
    /// Differences found (their shrunk case files).
    pub differences: Vec<PathBuf>,
    /// Differences that did not reproduce on a re-run: the folders holding the scenario and the
    /// traces of every run, for review.
    pub flaky: Vec<PathBuf>,
    /// Scenarios a target failed to run on every try (a crash, a timeout, a broken answer: not a
    /// disagreement about the HPA): folders with the scenario and each run's outcome. A failure
    /// that does not recur is in `flaky` instead.
    pub failures: Vec<PathBuf>,
    /// Scenarios that were run on each target separately because running them on both in
    /// lockstep over one world ([`lockstep`]) did not show agreement; the rest agreed
    /// tick by tick in lockstep and needed nothing more.
    pub separate_runs: usize,
    /// Wall time.
    pub elapsed: Duration,
}

/// A target could not be used at all (not: it disagreed on a scenario).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FuzzError {
    /// A target cannot start a session (e.g. its command does not exist).
    #[error("target {target} cannot start: {message}")]
    TargetUnusable {
        /// The target's name.
        target: String,
        /// Why.
        message: String,
    },
    /// A regression case or a flaky report cannot be written.
    #[error("{0}")]
    Write(String),
}

/// Checks that both targets can start a session on a first scenario, so that a target that
/// cannot run at all is an error instead of a "difference" on every scenario.
fn preflight(case: &Case, targets: [&dyn Target; 2], opts: &RunOptions) -> Result<(), FuzzError> {
    for target in targets {
        let settings = match crate::runner::resolve_settings(case, target.gate_support(), opts) {
            Ok(s) => s,
            Err(_) => continue,
        };
        match target.start(case, &settings) {
            Ok(_) => {}
            Err(e) if e.skip => {}
            Err(e) => {
                return Err(FuzzError::TargetUnusable {
                    target: target.name(),
                    message: e.message,
                });
            }
        }
    }
    Ok(())
}

/// Writes `text` to `path` unless a file is there already (never overwrites a case).
fn write_new(path: &Path, text: &str) -> Result<(), FuzzError> {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| FuzzError::Write(format!("cannot write {}: {e}", path.display())))?;
    f.write_all(text.as_bytes())
        .map_err(|e| FuzzError::Write(format!("cannot write {}: {e}", path.display())))
}

/// A path in `dir` named `stem` + `ext` that does not exist yet (`stem-2`, `stem-3`, … otherwise).
fn fresh_path(dir: &Path, stem: &str, ext: &str) -> PathBuf {
    let mut path = dir.join(format!("{stem}{ext}"));
    let mut n = 2;
    while path.exists() {
        path = dir.join(format!("{stem}-{n}{ext}"));
        n += 1;
    }
    path
}

/// One run of a scenario on both targets, as recorded for a flaky report.
struct Run {
    difference: Option<(i64, String)>,
    /// A target that failed to run the scenario at all, and why.
    failed: Option<String>,
    a: CaseResult,
    b: CaseResult,
}

fn run_pair(case: &Case, a: &dyn Target, b: &dyn Target, opts: &RunOptions) -> Run {
    let ra = run_case(case, a, opts);
    let rb = run_case(case, b, opts);
    let difference = compare(&ra, &rb, a, b, opts.profile.unwrap_or_default());
    let failed = [(a, &ra), (b, &rb)]
        .into_iter()
        .find_map(|(t, r)| match &r.outcome {
            crate::runner::Outcome::Errored(e) => Some(format!("{} failed: {e}", t.name())),
            _ => None,
        });
    Run {
        difference,
        failed,
        a: ra,
        b: rb,
    }
}

/// How a scenario went on both targets in lockstep ([`lockstep`]).
enum Lockstep {
    /// Same outcome at every tick, both ended cleanly: nothing more to run.
    Agreed,
    /// Lockstep cannot say (a skip, a profile other than `full`, a rejected manifest, outcomes
    /// that differ only where traces do not look, so the worlds would part): run separately.
    Undecided,
    /// A target failed, or the traces differ at a tick: the first run of a difference, re-run
    /// separately like any other (its results hold only the tick where it ended).
    Differed(Box<Run>),
}

/// Why a lockstep run stopped early with something to report.
enum Ended {
    /// A target failed (it is `a`), why, and its result.
    Failed(bool, String, CaseResult),
    /// The traces of the tick differ: the difference and each target's result, with its trace
    /// of that tick.
    Differs((i64, String), CaseResult, CaseResult),
}

/// Runs a scenario on both targets in lockstep over one world: each tick's snapshot goes to
/// both sessions, and the world takes their outcome once. While both write the same scale,
/// status and events, running each target separately would give the same worlds and traces, so
/// the world is stepped once instead of twice (and nothing but the outcomes is compared).
fn lockstep(case: &Case, a: &dyn Target, b: &dyn Target, opts: &RunOptions) -> Lockstep {
    if case.file.expect.rejected.is_some() || opts.profile.unwrap_or_default() != Profile::Full {
        return Lockstep::Undecided;
    }
    let started = Instant::now();
    let result = |outcome, trace: Vec<crate::trace::TickTrace>, diagnostics| {
        CaseResult::of(case, outcome, trace, started, diagnostics)
    };
    let passed = || result(crate::runner::Outcome::Passed, Vec::new(), None);
    let failed = |t: &dyn Target, message: String, diagnostics| {
        let why = format!("{} failed: {message}", t.name());
        (
            why,
            result(
                crate::runner::Outcome::Errored(message),
                Vec::new(),
                diagnostics,
            ),
        )
    };
    let differed = |why: String, failing: CaseResult, a_failed: bool| {
        let (ra, rb) = if a_failed {
            (failing, passed())
        } else {
            (passed(), failing)
        };
        // As `run_pair` records a target that failed: a difference at t=0 and the failure.
        Lockstep::Differed(Box::new(Run {
            difference: Some((0, why.clone())),
            failed: Some(why),
            a: ra,
            b: rb,
        }))
    };
    let mut sessions = Vec::with_capacity(2);
    for (i, t) in [a, b].into_iter().enumerate() {
        let Ok(settings) = crate::runner::resolve_settings(case, t.gate_support(), opts) else {
            return Lockstep::Undecided;
        };
        match t.start(case, &settings) {
            Ok(s) if s.highest_level() == Profile::Full => sessions.push(s),
            Ok(_) => return Lockstep::Undecided,
            Err(e) if e.skip => return Lockstep::Undecided,
            Err(e) => {
                let (why, r) = failed(t, e.message, None);
                return differed(why, r, i == 0);
            }
        }
    }
    let (Some(mut sb), Some(mut sa)) = (sessions.pop(), sessions.pop()) else {
        return Lockstep::Undecided;
    };
    let ended = crate::runner::drive(case, |world, t| {
        let (before, pods) = (world.replicas(), world.pod_counts(t));
        let snapshot = world.snapshot(t);
        let oa = match sa.tick(&snapshot) {
            Ok(o) => o,
            Err(e) => {
                let (why, r) = failed(a, e.message, sa.diagnostics());
                return ControlFlow::Break(Some(Ended::Failed(true, why, r)));
            }
        };
        let ob = match sb.tick(&snapshot) {
            Ok(o) => o,
            Err(e) => {
                let (why, r) = failed(b, e.message, sb.diagnostics());
                return ControlFlow::Break(Some(Ended::Failed(false, why, r)));
            }
        };
        if oa.scaled_to != ob.scaled_to || oa.status != ob.status || oa.events != ob.events {
            // The traces of this tick, as separate runs would show them (the worlds agree up
            // to here).
            let after = |o: &crate::target::TickOutcome| {
                let mut w = world.clone();
                let replicas = w
                    .apply_outcome(o.scaled_to, o.status.clone(), t)
                    .map(|()| w.replicas());
                replicas.map(|r| crate::trace::tick_trace(t, before, r, pods, o))
            };
            return match (after(&oa), after(&ob)) {
                (Ok(ta), Ok(tb)) => {
                    let passed = || crate::runner::Outcome::Passed;
                    let ra = result(passed(), vec![ta], None);
                    let rb = result(passed(), vec![tb], None);
                    match compare(&ra, &rb, a, b, Profile::Full) {
                        Some(found) => ControlFlow::Break(Some(Ended::Differs(found, ra, rb))),
                        None => ControlFlow::Break(None),
                    }
                }
                _ => ControlFlow::Break(None),
            };
        }
        match world.apply_outcome(oa.scaled_to, oa.status, t) {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(None),
        }
    });
    // Both sessions end either way (a kept process goes back to its pool).
    let finished = sa.finish().is_ok() & sb.finish().is_ok();
    match ended {
        ControlFlow::Continue(()) if finished => Lockstep::Agreed,
        ControlFlow::Continue(()) | ControlFlow::Break(None) => Lockstep::Undecided,
        ControlFlow::Break(Some(Ended::Failed(side_a, why, r))) => differed(why, r, side_a),
        ControlFlow::Break(Some(Ended::Differs(found, ra, rb))) => {
            Lockstep::Differed(Box::new(Run {
                difference: Some(found),
                failed: None,
                a: ra,
                b: rb,
            }))
        }
    }
}

fn compare(
    ra: &CaseResult,
    rb: &CaseResult,
    a: &dyn Target,
    b: &dyn Target,
    profile: Profile,
) -> Option<(i64, String)> {
    // A scenario one target cannot pose (a gate, a feature, a level it does not declare) is not
    // a difference.
    if [ra, rb]
        .iter()
        .any(|r| matches!(r.outcome, crate::runner::Outcome::Skipped(_)))
    {
        return None;
    }
    if let crate::runner::Outcome::Errored(e) = &ra.outcome {
        return Some((0, format!("{} failed: {e}", a.name())));
    }
    if let crate::runner::Outcome::Errored(e) = &rb.outcome {
        return Some((0, format!("{} failed: {e}", b.name())));
    }
    first_difference_at(&ra.trace, &rb.trace, profile).or_else(|| {
        (profile == Profile::Full)
            .then(|| crate::trace::first_message_difference(&ra.trace, &rb.trace))
            .flatten()
    })
}

/// Writes a flaky difference for review: the scenario and both targets' traces of every run.
fn write_flaky(
    dir: &Path,
    file: &CaseFile,
    runs: &[Run],
    a: &dyn Target,
    b: &dyn Target,
) -> Result<PathBuf, FuzzError> {
    let heading = format!(
        "A difference between {} and {} that did not reproduce on every run.",
        a.name(),
        b.name()
    );
    write_runs(dir, "flaky", &heading, file, runs, a, b)
}

/// Writes a scenario and every run of it (outcomes and traces) to a fresh folder under
/// `dir/kind/`; `heading` opens the summary.
fn write_runs(
    dir: &Path,
    kind: &str,
    heading: &str,
    file: &CaseFile,
    runs: &[Run],
    a: &dyn Target,
    b: &dyn Target,
) -> Result<PathBuf, FuzzError> {
    let folder = fresh_path(&dir.join(kind), &file.name, "");
    std::fs::create_dir_all(&folder)
        .map_err(|e| FuzzError::Write(format!("cannot create {}: {e}", folder.display())))?;
    let scenario = crate::yaml::to_string(file).map_err(FuzzError::Write)?;
    write_new(&folder.join("scenario.yaml"), &scenario)?;
    let mut summary = format!("# {heading}\n");
    for (i, run) in runs.iter().enumerate() {
        summary.push_str(&format!(
            "run {}: {}\n",
            i + 1,
            match (&run.failed, &run.difference) {
                (Some(why), _) => why.clone(),
                (None, Some((t, d))) => format!("t={t}: {d}"),
                (None, None) => "no difference".to_string(),
            }
        ));
        for (side, result) in [("a", &run.a), ("b", &run.b)] {
            let doc = json!({
                "target": if side == "a" { a.name() } else { b.name() },
                "outcome": format!("{:?}", result.outcome),
                "trace": result.trace,
            });
            let text =
                serde_json::to_string_pretty(&doc).map_err(|e| FuzzError::Write(e.to_string()))?;
            write_new(&folder.join(format!("run{}-{side}.json", i + 1)), &text)?;
        }
    }
    write_new(&folder.join("summary.txt"), &summary)?;
    Ok(folder)
}

/// Runs `count` scenarios from `seed` on both targets. A difference is re-run [`RECHECKS`] times:
/// one that does not reproduce every time is written to `out_dir/flaky/` for review and fuzzing
/// goes on; the first reproducible one is shrunk and written to `out_dir` (with `b`'s trace as the
/// expectation when `truth_is_b`), and fuzzing stops. Existing files are never overwritten.
pub fn fuzz(
    a: &dyn Target,
    b: &dyn Target,
    seed: u64,
    count: usize,
    out_dir: &Path,
    truth_is_b: bool,
) -> Result<FuzzReport, FuzzError> {
    fuzz_with(
        a,
        b,
        seed,
        count,
        out_dir,
        truth_is_b,
        &RunOptions::default(),
    )
}

/// [`fuzz`] with run options: gates fixed for both targets, and the profile traces are compared
/// at (`replicas`: replica counts only; `status`: without events; default `full`). A scenario
/// that either target skips (a gate, a feature or a level it does not declare) is no
/// difference.
pub fn fuzz_with(
    a: &dyn Target,
    b: &dyn Target,
    seed: u64,
    count: usize,
    out_dir: &Path,
    truth_is_b: bool,
    opts: &RunOptions,
) -> Result<FuzzReport, FuzzError> {
    fuzz_jobs(a, b, seed, count, out_dir, truth_is_b, opts, 1)
}

/// What a worker found for one scenario (its first run on both targets).
enum Scenario {
    /// The loader rejected the generated scenario (a generator bug).
    Rejected(String),
    /// Both targets ran it; the run, kept only when they differ or one failed; whether they ran
    /// it separately (not in lockstep).
    Ran(Box<(CaseFile, Case)>, Option<Box<Run>>, bool),
}

/// [`fuzz_with`] on `jobs` threads: scenarios are generated and first run in parallel; their
/// results are taken in scenario order (re-runs of a difference, shrinking and writing happen
/// in that order too), so the report is the same for a seed whatever `jobs` is.
///
/// Each scenario is first run on both targets in lockstep over one world (see [`lockstep`]);
/// only one they do not agree on is run on each separately ([`fuzz_jobs_with`] can skip lockstep).
#[allow(clippy::too_many_arguments)]
pub fn fuzz_jobs(
    a: &dyn Target,
    b: &dyn Target,
    seed: u64,
    count: usize,
    out_dir: &Path,
    truth_is_b: bool,
    opts: &RunOptions,
    jobs: usize,
) -> Result<FuzzReport, FuzzError> {
    fuzz_jobs_with(a, b, seed, count, out_dir, truth_is_b, opts, jobs, true)
}

/// [`fuzz_jobs`], and with `lockstep` false every scenario runs on each target separately, each
/// over its own world (as before lockstep; `fuzz --separately`): that finds and writes exactly
/// what lockstep does, more slowly.
#[allow(clippy::too_many_arguments)]
pub fn fuzz_jobs_with(
    a: &dyn Target,
    b: &dyn Target,
    seed: u64,
    count: usize,
    out_dir: &Path,
    truth_is_b: bool,
    opts: &RunOptions,
    jobs: usize,
    lockstep: bool,
) -> Result<FuzzReport, FuzzError> {
    let started = Instant::now();
    let mut report = FuzzReport {
        scenarios: 0,
        rejected: 0,
        differences: Vec::new(),
        flaky: Vec::new(),
        failures: Vec::new(),
        separate_runs: 0,
        elapsed: Duration::ZERO,
    };
    let name_of = |i: usize| format!("fuzz-{seed}-{i}");
    let scenario = |i: usize| {
        let mut rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(i as u64));
        let file = generate(&name_of(i), &mut rng);
        to_case(&file).map(|case| (file, case))
    };
    // The first scenario the loader accepts shows whether both targets can run at all.
    if let Some(Ok((_, case))) = (0..count).map(scenario).find(Result::is_ok) {
        preflight(&case, [a, b], opts)?;
    }
    let progress = std::sync::Mutex::new(crate::cluster::progress::Progress::on_stderr(
        "fuzz",
        count,
        crate::cluster::progress::Lines::Periodic(Duration::from_secs(10)),
    ));
    let work = |i: usize| {
        let name = name_of(i);
        if let Ok(mut p) = progress.lock() {
            p.start(&name);
        }
        let began = Instant::now();
        let found = match scenario(i) {
            Err(e) => Scenario::Rejected(e),
            Ok((file, case)) if lockstep => match self::lockstep(&case, a, b, opts) {
                Lockstep::Agreed => Scenario::Ran(Box::new((file, case)), None, false),
                Lockstep::Differed(run) => Scenario::Ran(Box::new((file, case)), Some(run), false),
                Lockstep::Undecided => {
                    let run = run_pair(&case, a, b, opts);
                    let kept =
                        (run.difference.is_some() || run.failed.is_some()).then(|| Box::new(run));
                    Scenario::Ran(Box::new((file, case)), kept, true)
                }
            },
            Ok((file, case)) => {
                let run = run_pair(&case, a, b, opts);
                let kept =
                    (run.difference.is_some() || run.failed.is_some()).then(|| Box::new(run));
                Scenario::Ran(Box::new((file, case)), kept, true)
            }
        };
        (found, began)
    };
    let mut error: Option<FuzzError> = None;
    crate::parallel::for_each_ordered(count, jobs, work, |i, (found, began)| {
        let name = name_of(i);
        let word = match consider(&mut report, &name, found, a, b, opts, out_dir, truth_is_b) {
            Ok(word) => word,
            Err(e) => {
                error = Some(e);
                "FAILED"
            }
        };
        if let Ok(mut p) = progress.lock() {
            p.finish(&name, word, began.elapsed().as_secs_f64());
        }
        error.is_none() && report.differences.is_empty()
    });
    if let Ok(mut p) = progress.lock() {
        p.close();
    }
    if let Some(e) = error {
        return Err(e);
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

/// Takes one scenario's first run into the report: a difference is re-run [`RECHECKS`] times,
/// then written as flaky, a target failure, or shrunk into a regression case. Returns the word
/// for the progress line.
#[allow(clippy::too_many_arguments)]
fn consider(
    report: &mut FuzzReport,
    name: &str,
    found: Scenario,
    a: &dyn Target,
    b: &dyn Target,
    opts: &RunOptions,
    out_dir: &Path,
    truth_is_b: bool,
) -> Result<&'static str, FuzzError> {
    let (file, case, first) = match found {
        Scenario::Rejected(e) => {
            report.rejected += 1;
            eprintln!("generated scenario {name} was rejected: {e}");
            return Ok("rejected");
        }
        Scenario::Ran(scenario, first, separately) => {
            report.separate_runs += usize::from(separately);
            let (file, case) = *scenario;
            (file, case, first.map(|r| *r))
        }
    };
    report.scenarios += 1;
    let Some(first) = first else {
        return Ok("passed");
    };
    let Some(found) = first.difference.clone() else {
        return Ok("passed");
    };
    let failed = first.failed.clone();
    let mut runs = vec![first];
    for _ in 0..RECHECKS {
        runs.push(run_pair(&case, a, b, opts));
    }
    // A target that could not run the scenario is no disagreement about the HPA: it is a
    // failure of that target when it recurs on every try, flaky otherwise (e.g. a process
    // killed or starved under load), and never shrunk as a trace difference.
    if let Some(why) = failed {
        if runs.iter().all(|r| r.failed.is_some()) {
            let heading = format!(
                "A target failed to run this scenario on every try ({} vs {}).",
                a.name(),
                b.name()
            );
            let folder = write_runs(out_dir, "failures", &heading, &file, &runs, a, b)?;
            eprintln!(
                "fuzz: scenario {name}: {why} (on every try); scenario and outcomes in {}",
                folder.display()
            );
            report.failures.push(folder);
            return Ok("FAILED");
        }
        let folder = write_flaky(out_dir, &file, &runs, a, b)?;
        eprintln!(
            "fuzz: scenario {name}: {why} once, not on a re-run; scenario and outcomes in {}",
            folder.display()
        );
        report.flaky.push(folder);
        return Ok("flaky");
    }
    if runs.iter().any(|r| r.difference.as_ref() != Some(&found)) {
        let folder = write_flaky(out_dir, &file, &runs, a, b)?;
        eprintln!(
            "fuzz: scenario {name}: a difference that does not reproduce (t={}: {}); scenario and traces in {}",
            found.0,
            found.1,
            folder.display()
        );
        report.flaky.push(folder);
        return Ok("flaky");
    }
    let shrunk = shrink(file.clone(), a, b, opts);
    // The shrunk scenario must still differ every time; otherwise keep the original one.
    let (small, case) = match to_case(&shrunk) {
        Ok(c) if reproduces(&c, a, b, opts) => (shrunk, c),
        _ => (file, case),
    };
    let Some((diff_t, diff, ra, rb)) = difference(&case, a, b, opts) else {
        // Reproduced RECHECKS + 1 times above; a disappearance now is flakiness too.
        let folder = write_flaky(out_dir, &small, &runs, a, b)?;
        report.flaky.push(folder);
        return Ok("flaky");
    };
    let (truth, other, tn, on) = if truth_is_b {
        (&rb, &ra, b.name(), a.name())
    } else {
        (&ra, &rb, a.name(), b.name())
    };
    let regression = regression_case(small, truth, other, (diff_t, &diff), &tn, &on);
    std::fs::create_dir_all(out_dir)
        .map_err(|e| FuzzError::Write(format!("cannot create {}: {e}", out_dir.display())))?;
    let path = fresh_path(out_dir, name, ".yaml");
    let mut text = crate::yaml::to_string(&regression).map_err(FuzzError::Write)?;
    text.insert_str(
        0,
        "# Written by `hpa-conformance fuzz`; review before committing.\n",
    );
    write_new(&path, &text)?;
    report.differences.push(path);
    Ok("DIFFERENT")
}

/// The scenario differs on every one of `RECHECKS + 1` runs.
fn reproduces(case: &Case, a: &dyn Target, b: &dyn Target, opts: &RunOptions) -> bool {
    (0..=RECHECKS).all(|_| difference(case, a, b, opts).is_some())
}
