//! `what-if`: what would my HPA do with this load? A dry run of a user's own HPA — the manifest as
//! `kubectl get hpa -o yaml` prints it (its `status` and `metadata.managedFields` ignored), the
//! current replicas and pod requests (flags, or a Deployment manifest) and a load trace as CSV —
//! on the reference core in virtual time.
//!
//! A what-if is a case built from the user's inputs: the inputs are checked here with their own
//! positions (a broken manifest or CSV is `file:line:col: reason`, exit 2), then the case goes
//! through the one case loader ([`crate::case::load::load_case_file`]: API defaulting and
//! validation, gates, limits) and the one runner ([`crate::run::run_case`]); the output is the
//! predicted replicas, the story of why ([`crate::report::explain`]) and optionally the timeline
//! ([`crate::report::timeline`]). Inputs are regular files of at most [`MAX_INPUT_BYTES`], the
//! load at most [`MAX_LOAD_ROWS`] rows.
//!
//! The load CSV: a header `time,metric,value` (optionally `,per`), then one row per change of a
//! metric's load, which holds until the metric's next row. `time` is seconds from the start or an
//! RFC 3339 timestamp (all rows alike; timestamps count from the first row). `metric` is a metric
//! of the HPA (the resource name for Resource metrics, the metric name otherwise). `value` is a
//! quantity: for Resource, ContainerResource and Pods metrics the total over the ready pods, or
//! with `per` = `pod` the value of every pod; for an Object metric its value; for an External
//! metric the value of its one series. Blank lines and lines starting with `#` are skipped.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use hpa_reference::quantity::parse_milli;
use hpa_reference::validation::{ValidationOptions, validate_hpa};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use crate::case::Case;
use crate::case::bounds::MAX_VIRTUAL_SECONDS;
use crate::case::load::{LoadError, load_case_file, metric_key};
use crate::case::model::{
    CaseFile, Container, Expectations, Load, PodTemplate, SettingsOverrides, Source, Startup,
    TimelineEntry, Workload,
};
use crate::report::explain::{self, StoryRow};
use crate::report::timeline::Timeline;
use crate::run::{CaseResult, RunOptions, run_case};
use crate::targets::CoreTarget;
use crate::util::yaml::{self, Index, Pos};

/// What the user gave.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// The HPA manifest.
    pub hpa: PathBuf,
    /// The load CSV.
    pub load: PathBuf,
    /// A Deployment manifest: its `spec.replicas` and containers' requests.
    pub deployment: Option<PathBuf>,
    /// The current replicas (over the Deployment's).
    pub replicas: Option<i32>,
    /// Requests of the pod's one container, `name=quantity` (when no Deployment is given).
    pub requests: Vec<String>,
    /// Seconds to predict (default: the last load change plus 300 s).
    pub duration: Option<u32>,
    /// kube-controller-manager's HPA flags.
    pub settings: SettingsOverrides,
    /// Feature gates.
    pub feature_gates: BTreeMap<String, bool>,
    /// The Kubernetes release whose controller predicts (`--kubernetes-version`).
    pub version: hpa_reference::KubernetesVersion,
}

/// A what-if ready to run: the case built from the inputs.
#[derive(Debug, Clone)]
pub struct WhatIf {
    /// The case.
    pub case: Case,
    /// The load's first timestamp, when the CSV gave timestamps.
    pub start: Option<Timestamp>,
    /// The load CSV (for the output's header).
    pub load: PathBuf,
    /// The release whose controller predicts.
    pub version: hpa_reference::KubernetesVersion,
}

fn err(path: &Path, line: u64, column: u64, reason: impl Into<String>) -> LoadError {
    LoadError {
        path: path.to_path_buf(),
        pos: Pos { line, column },
        reason: reason.into(),
    }
}

/// The largest input file a what-if reads (16 MiB): a manifest or a load trace, not a stream.
pub const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// The most load rows a what-if reads (as many as a case has ticks).
pub const MAX_LOAD_ROWS: usize = crate::case::bounds::MAX_TICKS as usize;

/// An input file's text: a regular file (not a device or a pipe, which may never end) of at
/// most [`MAX_INPUT_BYTES`].
fn read(path: &Path) -> Result<String, LoadError> {
    use std::io::Read;
    crate::case::discover::regular_file(path)?;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_INPUT_BYTES + 1).read_to_string(&mut text))
        .map_err(|e| err(path, 0, 0, format!("cannot read: {e}")))?;
    if text.len() as u64 > MAX_INPUT_BYTES {
        return Err(err(
            path,
            0,
            0,
            format!(
                "larger than {} MiB, the most a what-if reads",
                MAX_INPUT_BYTES / (1024 * 1024)
            ),
        ));
    }
    Ok(text)
}

/// The HPA manifest: parsed strictly with positions, `status` and `managedFields` dropped,
/// validated as the API server would.
pub fn read_hpa(
    path: &Path,
    gates_scale_to_zero: bool,
) -> Result<HorizontalPodAutoscaler, LoadError> {
    let text = read(path)?;
    let at = |e: yaml::YamlError| err(path, e.pos.line, e.pos.column, e.reason);
    let index = Index::build(&text).map_err(at)?;
    let mut hpa: HorizontalPodAutoscaler =
        yaml::from_str(&text).map_err(|e| at(index.explain(e)))?;
    let known = serde_json::to_value(&hpa).map_err(|e| err(path, 1, 1, e.to_string()))?;
    if let Some(root) = index.node("")
        && let Some(first) = yaml::unknown_fields("", root, &known).first()
    {
        let p = first.trim_start_matches('.');
        let pos = index.locate(p);
        return Err(err(
            path,
            pos.line,
            pos.column,
            format!("unknown field `{}`", p.rsplit('.').next().unwrap_or(p)),
        ));
    }
    hpa.status = None;
    hpa.metadata.managed_fields = None;
    let errors = validate_hpa(
        &hpa,
        ValidationOptions::of(
            hpa_reference::KubernetesVersion::DEFAULT,
            gates_scale_to_zero,
        ),
    );
    if let Some(e) = errors.first() {
        let pos = index.locate(&e.path);
        return Err(err(
            path,
            pos.line,
            pos.column,
            format!("HPA rejected by API validation: {e}"),
        ));
    }
    Ok(hpa)
}

/// The Deployment's replicas, containers and native sidecars (init containers with
/// `restartPolicy: Always`), with their requests.
type DeploymentPods = (Option<i32>, Vec<Container>, Vec<Container>);

/// A Kubernetes container as the case format's: its name and requests.
fn case_container(c: k8s_openapi::api::core::v1::Container) -> Container {
    Container {
        name: c.name,
        requests: c
            .resources
            .and_then(|r| r.requests)
            .unwrap_or_default()
            .into_iter()
            .map(|(k, q)| (k, q.0))
            .collect(),
    }
}

/// Reads the Deployment manifest given to what-if.
fn read_deployment(path: &Path) -> Result<DeploymentPods, LoadError> {
    let text = read(path)?;
    let at = |e: yaml::YamlError| err(path, e.pos.line, e.pos.column, e.reason);
    let index = Index::build(&text).map_err(at)?;
    let d: Deployment = yaml::from_str(&text).map_err(|e| at(index.explain(e)))?;
    let spec = d.spec;
    let pod = spec.template.spec.unwrap_or_default();
    let containers: Vec<Container> = pod.containers.into_iter().map(case_container).collect();
    let sidecars: Vec<Container> = pod
        .init_containers
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"))
        .map(case_container)
        .collect();
    if containers.is_empty() {
        let pos = index.locate("spec.template.spec.containers");
        return Err(err(
            path,
            pos.line,
            pos.column,
            "the Deployment's pod template has no container",
        ));
    }
    Ok((spec.replicas, containers, sidecars))
}

/// How a metric takes its load.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Feed {
    /// Usage of pods: a total over the ready pods, or per pod.
    Pods,
    /// An Object metric's value.
    Value,
    /// An External metric's one series.
    Series,
}

fn feed(hpa: &HorizontalPodAutoscaler) -> BTreeMap<String, Feed> {
    hpa.spec
        .metrics
        .iter()
        .flatten()
        .map(|m| {
            let f = match m.type_.as_str() {
                "Object" => Feed::Value,
                "External" => Feed::Series,
                _ => Feed::Pods,
            };
            (metric_key(m), f)
        })
        .collect()
}

/// One CSV field: its text and 1-based column.
fn fields(line: &str) -> Vec<(&str, u64)> {
    let mut out = Vec::new();
    let mut start = 0;
    for part in line.split(',') {
        let lead = part.len() - part.trim_start().len();
        out.push((part.trim(), (start + lead + 1) as u64));
        start += part.len() + 1;
    }
    out
}

/// The load CSV as timeline entries (see the module doc) and its first timestamp.
pub fn read_load(
    path: &Path,
    hpa: &HorizontalPodAutoscaler,
) -> Result<(Vec<TimelineEntry>, Option<Timestamp>), LoadError> {
    let text = read(path)?;
    let feeds = feed(hpa);
    let names = feeds.keys().cloned().collect::<Vec<_>>().join(", ");
    let mut header: Option<bool> = None; // Some(has `per` column)
    let mut start: Option<Timestamp> = None;
    let mut absolute: Option<bool> = None;
    let mut last_t: i64 = 0;
    let mut entries: BTreeMap<u32, Vec<Load>> = BTreeMap::new();
    let mut rows = 0usize;
    for (n, raw) in text.lines().enumerate() {
        let line_no = n as u64 + 1;
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if header.is_some() {
            rows += 1;
            if rows > MAX_LOAD_ROWS {
                return Err(err(
                    path,
                    line_no,
                    1,
                    format!("more than {MAX_LOAD_ROWS} load rows, the most a what-if reads"),
                ));
            }
        }
        if let Some(q) = line.find('"') {
            return Err(err(
                path,
                line_no,
                q as u64 + 1,
                "quoted fields are not supported: time,metric,value[,per] need no quotes",
            ));
        }
        let f = fields(line);
        let Some(has_per) = header else {
            let names: Vec<String> = f.iter().map(|x| x.0.to_ascii_lowercase()).collect();
            header = Some(match names.as_slice() {
                [a, b, c] if a == "time" && b == "metric" && c == "value" => false,
                [a, b, c, d] if a == "time" && b == "metric" && c == "value" && d == "per" => true,
                _ => {
                    return Err(err(
                        path,
                        line_no,
                        1,
                        format!(
                            "the header must be time,metric,value or time,metric,value,per, not {line:?}"
                        ),
                    ));
                }
            });
            continue;
        };
        let want = if has_per { 4 } else { 3 };
        if f.len() != want {
            let col = f.get(want).map_or(line.len() as u64 + 1, |x| x.1);
            return Err(err(
                path,
                line_no,
                col,
                format!("expected {want} fields, found {}", f.len()),
            ));
        }
        // Time.
        let (time, tcol) = f[0];
        let is_abs = !time.chars().all(|c| c.is_ascii_digit());
        if *absolute.get_or_insert(is_abs) != is_abs {
            return Err(err(
                path,
                line_no,
                tcol,
                "mixes seconds and timestamps: give every time the same way",
            ));
        }
        let t: i64 = if is_abs {
            let ts: Timestamp = time.parse().map_err(|e| {
                err(
                    path,
                    line_no,
                    tcol,
                    format!("{time:?} is neither seconds nor an RFC 3339 timestamp: {e}"),
                )
            })?;
            let s = *start.get_or_insert(ts);
            ts.as_second() - s.as_second()
        } else {
            time.parse().map_err(|_| {
                err(
                    path,
                    line_no,
                    tcol,
                    format!("{time:?} is not a number of seconds"),
                )
            })?
        };
        if t < last_t {
            return Err(err(
                path,
                line_no,
                tcol,
                format!("time goes backwards: {t} s after {last_t} s"),
            ));
        }
        if t > MAX_VIRTUAL_SECONDS {
            return Err(err(
                path,
                line_no,
                tcol,
                format!("{t} s is beyond {MAX_VIRTUAL_SECONDS} s"),
            ));
        }
        last_t = t;
        // Metric.
        let (metric, mcol) = f[1];
        let Some(&kind) = feeds.get(metric) else {
            return Err(err(
                path,
                line_no,
                mcol,
                format!("{metric:?} is not a metric of the HPA (metrics: {names})"),
            ));
        };
        // Value.
        let (value, vcol) = f[2];
        let milli = parse_milli(value).map_err(|e| {
            err(
                path,
                line_no,
                vcol,
                format!("{value:?} is not a quantity: {e}"),
            )
        })?;
        let per_pod = if has_per {
            let (per, pcol) = f[3];
            match (per, kind) {
                ("" | "total", _) => false,
                ("pod", Feed::Pods) => true,
                ("pod", _) => {
                    return Err(err(
                        path,
                        line_no,
                        pcol,
                        format!(
                            "{metric} is an Object or External metric: it has one value, not one per pod"
                        ),
                    ));
                }
                _ => {
                    return Err(err(
                        path,
                        line_no,
                        pcol,
                        format!("per is total or pod, not {per:?}"),
                    ));
                }
            }
        } else {
            false
        };
        if kind == Feed::Pods && milli < 0 {
            return Err(err(
                path,
                line_no,
                vcol,
                format!("a usage is not negative: {value}"),
            ));
        }
        let mut load = Load {
            metric: metric.to_string(),
            ..Load::default()
        };
        match kind {
            Feed::Pods if per_pod => load.per_pod = Some(value.to_string()),
            Feed::Pods => load.total = Some(value.to_string()),
            Feed::Value => load.value = Some(value.to_string()),
            Feed::Series => load.series = Some(vec![value.to_string()]),
        }
        let at = u32::try_from(t).expect("checked against MAX_VIRTUAL_SECONDS");
        let loads = entries.entry(at).or_default();
        // A later row for the same metric at the same time wins.
        loads.retain(|l| l.metric != load.metric);
        loads.push(load);
    }
    if entries.is_empty() {
        return Err(err(
            path,
            0,
            0,
            "no load row (header time,metric,value, then rows)",
        ));
    }
    Ok((
        entries
            .into_iter()
            .map(|(at, loads)| TimelineEntry {
                at,
                loads,
                ..TimelineEntry::default()
            })
            .collect(),
        start,
    ))
}

/// Builds the case of a what-if from the inputs.
pub fn build(inputs: &Inputs) -> Result<WhatIf, LoadError> {
    let scale_to_zero = inputs
        .feature_gates
        .get("HPAScaleToZero")
        .copied()
        .unwrap_or(false);
    let hpa = read_hpa(&inputs.hpa, scale_to_zero)?;
    // The status's currentReplicas is the default for the current replicas.
    let hpa_with_status: HorizontalPodAutoscaler =
        yaml::from_str(&read(&inputs.hpa)?).unwrap_or_default();
    let (timeline, start) = read_load(&inputs.load, &hpa)?;
    let (dep_replicas, containers, sidecars) = match &inputs.deployment {
        Some(p) => read_deployment(p)?,
        None => {
            let mut requests = BTreeMap::new();
            for r in &inputs.requests {
                let Some((k, v)) = r.split_once('=') else {
                    return Err(err(
                        Path::new("--requests"),
                        0,
                        0,
                        format!("{r:?} is not name=quantity (e.g. cpu=500m)"),
                    ));
                };
                requests.insert(k.trim().to_string(), v.trim().to_string());
            }
            (
                None,
                vec![Container {
                    name: "app".into(),
                    requests,
                }],
                Vec::new(),
            )
        }
    };
    let replicas = inputs
        .replicas
        .or(dep_replicas)
        .or(hpa_with_status
            .status
            .as_ref()
            .and_then(|s| s.current_replicas))
        .ok_or_else(|| {
            err(
                &inputs.hpa,
                0,
                0,
                "no current replica count: give --replicas or --deployment (or an HPA with status.currentReplicas)",
            )
        })?;
    let last = timeline.last().map_or(0, |e| e.at);
    let duration = inputs.duration.unwrap_or(last.saturating_add(300));
    // The case loader's bounds, said in the what-if's terms: the load and the flags.
    let sync_period = inputs.settings.sync_period_seconds.unwrap_or(15).max(1);
    let ticks = u64::from(duration) / u64::from(sync_period) + 1;
    let pods = crate::case::bounds::pods_bound(replicas, std::slice::from_ref(&hpa), []);
    let too_long = |what: String| {
        let blame = if inputs.duration.is_some() {
            Path::new("--duration")
        } else {
            inputs.load.as_path()
        };
        err(
            blame,
            0,
            0,
            format!("{what}: predict a shorter time (--duration) or give a longer --sync-period"),
        )
    };
    if ticks > crate::case::bounds::MAX_TICKS {
        return Err(too_long(format!(
            "the prediction would run {ticks} ticks ({duration} s every {sync_period} s), more than {}",
            crate::case::bounds::MAX_TICKS
        )));
    }
    if pods * ticks > crate::case::bounds::MAX_POD_TICKS {
        return Err(too_long(format!(
            "the prediction would simulate up to {pods} pods (maxReplicas) for {ticks} ticks, more than {} pod-ticks",
            crate::case::bounds::MAX_POD_TICKS
        )));
    }
    let name = hpa
        .metadata
        .name
        .clone()
        .unwrap_or_else(|| "what-if".into());
    let file = CaseFile {
        kubernetes_versions: None,
        changed_in: Vec::new(),
        name: name.clone(),
        title: format!(
            "what-if: {} with the load of {}",
            name,
            inputs.load.display()
        ),
        source: Source {
            reason: Some("what-if: the user's own HPA and load".into()),
            ..Source::default()
        },
        notes: None,
        feature_gates: inputs.feature_gates.clone(),
        settings: inputs.settings.clone(),
        memory: None,
        hpa,
        other_hpas: Vec::new(),
        alongside: Vec::new(),
        workload: Workload {
            replicas,
            selector: None,
            pod: PodTemplate {
                containers,
                sidecars,
                init_containers: Vec::new(),
                requests: None,
            },
            startup: Startup::default(),
            initial_pod_age_seconds: None,
            metric_window_seconds: None,
            fixed_pods: false,
            listed_newest_first: false,
        },
        timeline,
        duration_seconds: Some(duration),
        expect: Expectations::default(),
    };
    // The inputs were checked with their own positions; what the loader still finds is about
    // the combination (e.g. a flag out of range), said without a position.
    let case = load_case_file(&inputs.hpa, file).map_err(|e| err(&inputs.hpa, 0, 0, e.reason))?;
    Ok(WhatIf {
        case,
        start,
        load: inputs.load.clone(),
        version: inputs.version,
    })
}

/// One predicted level: from `t` on, `replicas`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Predicted {
    /// Seconds from the start.
    pub t: i64,
    /// The clock time, when the load gave timestamps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// The replicas from then on.
    pub replicas: i32,
}

/// The prediction: replica levels and the story of why.
#[derive(Debug, Clone, Serialize)]
pub struct Prediction {
    /// The HPA's name.
    pub hpa: String,
    /// Seconds between decisions.
    pub sync_period: u32,
    /// The replicas over time (where they change).
    pub replicas: Vec<Predicted>,
    /// Why, tick by tick (identical ticks collapsed).
    pub rows: Vec<StoryRow>,
}

impl WhatIf {
    /// Runs the what-if on the reference core.
    pub fn run(&self) -> CaseResult {
        run_case(
            &self.case,
            &CoreTarget,
            &RunOptions {
                version: self.version,
                ..RunOptions::default()
            },
        )
    }

    /// The prediction from a run.
    pub fn prediction(&self, result: &CaseResult) -> Prediction {
        let mut replicas: Vec<Predicted> = Vec::new();
        let mut level = |t: i64, r: i32| {
            if replicas.last().map(|p| p.replicas) != Some(r) {
                replicas.push(Predicted {
                    t,
                    time: self.start.map(|s| {
                        Timestamp::from_second(s.as_second() + t)
                            .map_or_else(|_| String::new(), |x| x.to_string())
                    }),
                    replicas: r,
                });
            }
        };
        if let Some(first) = result.trace.first() {
            level(first.t, first.replicas_before);
        }
        for x in &result.trace {
            level(x.t, x.replicas);
        }
        Prediction {
            hpa: self.case.name().to_string(),
            sync_period: self.case.sync_period,
            replicas,
            rows: explain::rows(&result.trace, explain::tolerances(&self.case)),
        }
    }

    /// The prediction as text: the replicas table, then why.
    pub fn render(&self, result: &CaseResult) -> String {
        let p = self.prediction(result);
        let mut out = String::new();
        let _ = writeln!(
            out,
            "what-if: HPA {} on {} replicas, load from {}, a decision every {} s for {} s",
            p.hpa,
            self.case.file.workload.replicas,
            self.load.display(),
            p.sync_period,
            self.case.duration
        );
        if let crate::run::Outcome::Errored(e) = &result.outcome {
            let _ = writeln!(out, "error: {e}");
        }
        let _ = writeln!(out, "\npredicted replicas:");
        let clock = self.start.is_some();
        let _ = writeln!(
            out,
            "{:>8}  {}replicas",
            "t (s)",
            if clock {
                format!("{:<22}", "time")
            } else {
                String::new()
            }
        );
        for r in &p.replicas {
            let _ = writeln!(
                out,
                "{:>8}  {}{:>8}",
                r.t,
                if clock {
                    format!("{:<22}", r.time.as_deref().unwrap_or(""))
                } else {
                    String::new()
                },
                r.replicas
            );
        }
        let _ = writeln!(out, "\nwhy, tick by tick:");
        explain::render_rows(&p.rows, &mut out);
        out
    }

    /// The prediction as one JSON document.
    pub fn render_json(&self, result: &CaseResult) -> String {
        let mut s = serde_json::to_string_pretty(&self.prediction(result))
            .unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()));
        s.push('\n');
        s
    }

    /// The replica timeline as SVG.
    pub fn svg(&self, result: &CaseResult) -> Result<String, String> {
        Timeline::build(Some(&self.case), result)
            .and_then(|t| t.svg())
            .map_err(|e| e.to_string())
    }
}

/// A duration as kube-controller-manager's flags take it (`15s`, `5m0s`, `1h`, `1m30s`) or plain
/// seconds, in whole seconds.
pub fn parse_duration(s: &str) -> Result<u32, String> {
    let bad = || format!("{s:?} is not a duration in whole seconds (e.g. 15s, 5m0s, 1h)");
    if let Ok(n) = s.parse::<u32>() {
        return Ok(n);
    }
    let mut total: u64 = 0;
    let mut num = String::new();
    let mut any = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        let unit = match c {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => return Err(bad()),
        };
        let n: u64 = num.parse().map_err(|_| bad())?;
        total = total.saturating_add(n.saturating_mul(unit));
        num.clear();
        any = true;
    }
    if !num.is_empty() || !any {
        return Err(bad());
    }
    u32::try_from(total).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::{fields, parse_duration, read_deployment};

    #[test]
    fn a_deployments_native_sidecars_are_read_and_plain_init_containers_are_not() {
        let path =
            std::env::temp_dir().join(format!("hpa-whatif-sidecars-{}.yaml", std::process::id()));
        std::fs::write(
            &path,
            r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers:
      - {name: migrate, image: m, resources: {requests: {cpu: 900m}}}
      - {name: proxy, image: p, restartPolicy: Always, resources: {requests: {cpu: 100m}}}
      containers:
      - {name: web, image: w, resources: {requests: {cpu: 500m}}}
"#,
        )
        .expect("write");
        let read = read_deployment(&path);
        let _ = std::fs::remove_file(&path);
        let (replicas, containers, sidecars) = read.expect("reads");
        assert_eq!(replicas, Some(2));
        let names = |cs: &[super::Container]| cs.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&containers), ["web"]);
        assert_eq!(names(&sidecars), ["proxy"]);
        assert_eq!(
            sidecars[0].requests.get("cpu").map(String::as_str),
            Some("100m")
        );
    }

    #[test]
    fn durations_read_like_kube_flags() {
        assert_eq!(parse_duration("15s"), Ok(15));
        assert_eq!(parse_duration("5m0s"), Ok(300));
        assert_eq!(parse_duration("1h1m1s"), Ok(3661));
        assert_eq!(parse_duration("30"), Ok(30));
        assert!(parse_duration("1.5s").is_err());
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn csv_fields_know_their_columns() {
        assert_eq!(
            fields("0, cpu ,1200m"),
            vec![("0", 1), ("cpu", 4), ("1200m", 9)]
        );
    }
}
