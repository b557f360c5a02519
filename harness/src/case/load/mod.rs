//! Loading a case file: YAML → [`CaseFile`] → checks → [`Case`]. Every problem becomes a
//! [`LoadError`] with the file, line and column and one line of reason; nothing panics, and no
//! number in a case can make a run huge or wrap: a case asks for at most
//! [`MAX_PODS`] pods, [`MAX_TICKS`] ticks and [`MAX_POD_TICKS`] of both together, and names
//! times within ±[`MAX_VIRTUAL_SECONDS`] ([`super::bounds`]).
//!
//! [`loaded`] holds what loading gives, [`check`] the checks of single fields, and [`sections`]
//! the checks of each section of a case file in the order it reads.

mod check;
mod loaded;
mod sections;

use std::path::Path;

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;

use super::apiserver::store_as_api_server;
use super::discover::regular_file;
use super::features::features_needed;
use super::gates::gates_used;
use super::model::CaseFile;
use crate::util::yaml::{self, Index};
use check::{Checker, strict};
pub use check::{metric_key, metric_keys};
pub use loaded::{Case, LoadError};
use sections::Latest;

/// Loads and checks one case file. Feature gates the case lists are validated by name; the HPA is
/// validated with HPAScaleToZero as the case assumes it (else the default release's default).
pub fn load_case(path: &Path) -> Result<Case, LoadError> {
    regular_file(path)?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| super::discover::path_error(path, format!("cannot read: {e}")))?;
    load_case_text(path, &text)
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
        file.changed_in = Vec::new();
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

fn check_file(c: &Checker<'_>, file: CaseFile) -> Result<Case, LoadError> {
    // Fields the Kubernetes types do not know (k8s-openapi ignores them silently).
    let known = serde_json::to_value(&file.hpa).map_err(|e| c.at_start(e.to_string()))?;
    strict(c, "hpa", &known)?;
    sections::header(c, &file)?;
    let gates = sections::spec(c, &file)?;
    sections::workload(c, &file)?;
    let sync_period = sections::settings(c, &file)?;
    sections::memory(c, &file)?;
    let mut hpa = file.hpa.clone();
    store_as_api_server(&mut hpa);
    let mut latest = Latest::default();
    sections::timeline(c, &file, &hpa, &mut latest)?;
    let manifests = sections::patches(c, &file, &gates)?;
    sections::expectations(c, &file, sync_period, &mut latest)?;
    let releases = sections::releases(c, &file)?;
    let duration = sections::run_length(c, &file, &manifests, sync_period, latest)?;
    Ok(Case {
        path: c.path.to_path_buf(),
        name_pos: c.index.locate("name"),
        gates: gates_used(&file, &manifests),
        features: features_needed(&file, &manifests),
        file,
        hpa,
        sync_period,
        duration,
        members: Vec::new(),
        releases,
    })
}
