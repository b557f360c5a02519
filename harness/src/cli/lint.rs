//! `lint`: case files checked beyond loading: sources that exist, gates declared, targets usable.

use std::io::Write;

use super::shared::*;
use crate::report::exit;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::case::{Case, LoadError};
use crate::util::yaml::{self, Index, Pos};

/// The documents and upstream tests a case may cite.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// Seed file name → its headings (lower-cased).
    seeds: BTreeMap<String, Vec<String>>,
    /// Upstream fact ids, their prefixes at `/` boundaries, and test names.
    upstream: BTreeSet<String>,
}

impl Sources {
    /// Reads the seed documents (a folder) and the upstream facts files (their ids and tests
    /// together).
    pub fn load(seeds_dir: &Path, facts_files: &[PathBuf]) -> Result<Sources, String> {
        let mut seeds = BTreeMap::new();
        let entries = std::fs::read_dir(seeds_dir).map_err(|e| {
            format!(
                "cannot read the seed documents in {}: {e}",
                seeds_dir.display()
            )
        })?;
        for entry in entries {
            let path = entry.map_err(|e| e.to_string())?.path();
            let Some(name) = path
                .file_name()
                .and_then(|n| n.to_str())
                .map(str::to_string)
            else {
                continue;
            };
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let headings = text
                .lines()
                .map(str::trim)
                .filter(|l| l.starts_with('#'))
                .map(|l| l.trim_start_matches('#').trim().to_lowercase())
                .collect();
            seeds.insert(name, headings);
        }
        let mut upstream = BTreeSet::new();
        for facts_file in facts_files {
            let text = std::fs::read_to_string(facts_file).map_err(|e| {
                format!(
                    "cannot read the upstream facts {}: {e}",
                    facts_file.display()
                )
            })?;
            let facts: Vec<serde_json::Value> = yaml::from_str(&text).map_err(|e| {
                format!(
                    "{}:{}:{}: {}",
                    facts_file.display(),
                    e.pos.line,
                    e.pos.column,
                    e.reason
                )
            })?;
            for f in &facts {
                if let Some(id) = f.get("id").and_then(|v| v.as_str()) {
                    let mut prefix = String::new();
                    for (i, part) in id.split('/').enumerate() {
                        if i > 0 {
                            prefix.push('/');
                        }
                        prefix.push_str(part);
                        upstream.insert(prefix.clone());
                    }
                }
                if let Some(t) = f.get("test").and_then(|v| v.as_str()) {
                    upstream.insert(t.to_string());
                }
            }
        }
        Ok(Sources { seeds, upstream })
    }

    /// Whether an upstream reference names a known test or fact.
    pub fn knows_upstream(&self, name: &str) -> bool {
        self.upstream.contains(name)
    }
}

fn at(path: &Path, index: Option<&Index>, field: &str, reason: String) -> LoadError {
    LoadError {
        path: path.to_path_buf(),
        pos: index.map_or(Pos { line: 1, column: 1 }, |i| i.locate(field)),
        reason,
    }
}

/// Checks that a case's `source` exists.
pub fn check_source(case: &Case, sources: &Sources) -> Vec<LoadError> {
    let text = std::fs::read_to_string(&case.path).unwrap_or_default();
    let index = Index::build(&text).ok();
    let index = index.as_ref();
    let src = &case.file.source;
    let mut errors = Vec::new();
    if let Some(seed) = &src.seed {
        match sources.seeds.get(seed) {
            None => errors.push(at(
                &case.path,
                index,
                "source.seed",
                format!("no seed document named {seed:?}"),
            )),
            Some(headings) => match &src.section {
                None => errors.push(at(
                    &case.path,
                    index,
                    "source",
                    format!("a seed source needs a section (a heading of {seed})"),
                )),
                Some(section) => {
                    let want = section.to_lowercase();
                    if !headings.iter().any(|h| h.contains(&want)) {
                        errors.push(at(
                            &case.path,
                            index,
                            "source.section",
                            format!("{seed} has no heading containing {section:?}"),
                        ));
                    }
                }
            },
        }
    }
    if let Some(name) = &src.upstream
        && !sources.knows_upstream(name)
    {
        errors.push(at(
            &case.path,
            index,
            "source.upstream",
            format!("{name:?} is not an upstream test or fact id in the facts file"),
        ));
    }
    errors
}

/// Checks that a case declares in `featureGates` every gate its fields use (a run detects them
/// anyway; a reader should see them).
pub fn check_gates_declared(case: &Case) -> Vec<LoadError> {
    let text = std::fs::read_to_string(&case.path).unwrap_or_default();
    let index = Index::build(&text).ok();
    case.gates
        .iter()
        .filter_map(|(gate, used)| {
            let field = used.detected_at.as_ref()?;
            Some(at(
                &case.path,
                index.as_ref(),
                field,
                format!(
                    "the case uses feature gate {gate}={} ({}): declare it in featureGates",
                    used.value, used.because
                ),
            ))
        })
        .collect()
}

/// Warns about each metric target that the API server accepts but upstream's controller cannot
/// use as written (`hpa_reference::validation::unusable_targets`: a target type its source does
/// not read, or a type without its own field). Such a case is valid — the API server stores the
/// HPA — so this is a warning, never a rejection.
pub fn check_usable_targets(case: &Case) -> Vec<LoadError> {
    let text = std::fs::read_to_string(&case.path).unwrap_or_default();
    let index = Index::build(&text).ok();
    let hpas = std::iter::once(("hpa".to_string(), &case.hpa)).chain(
        case.members
            .iter()
            .enumerate()
            .map(|(i, m)| (format!("alongside[{i}].hpa"), &m.hpa)),
    );
    hpas.flat_map(|(at, hpa)| {
        hpa_reference::validation::unusable_targets(hpa)
            .into_iter()
            .map(move |e| (format!("{at}.{}", e.path), e))
    })
    .map(|(field, e)| {
        at(
            &case.path,
            index.as_ref(),
            &field,
            format!("{e} (the API server accepts it; upstream's controller reads whichever target field is set, or reports an invalid metric source)"),
        )
    })
    .collect()
}

/// What `lint` found: errors (the run refuses such a case) and warnings (it runs).
#[derive(Debug, Default)]
pub struct Findings {
    /// Case files read and loaded.
    pub cases: usize,
    /// Problems: the exit status says so.
    pub errors: Vec<LoadError>,
    /// Advice: printed, the exit status does not change.
    pub warnings: Vec<LoadError>,
}

/// Lints every case under `paths`.
pub fn lint(paths: &[PathBuf], sources: &Sources) -> Findings {
    let (cases, mut errors) = crate::case::corpus::load_all(paths);
    let mut warnings = Vec::new();
    for c in &cases {
        errors.extend(check_source(c, sources));
        errors.extend(check_gates_declared(c));
        warnings.extend(check_usable_targets(c));
    }
    let order = |a: &LoadError, b: &LoadError| (&a.path, a.pos.line).cmp(&(&b.path, b.pos.line));
    errors.sort_by(order);
    warnings.sort_by(order);
    Findings {
        cases: cases.len(),
        errors,
        warnings,
    }
}

/// The arguments of `hpa-conformance lint`.
#[derive(Debug, clap::Args)]
pub struct LintArgs {
    /// Case files or folders (default: `cases/`).
    paths: Vec<PathBuf>,
    /// The seed documents.
    #[arg(long, default_value = "../shared/seeds")]
    seeds: PathBuf,
    /// The upstream unit-test facts: one file, or several (repeat the flag, or separate
    /// with commas); an `upstream:` source may name an id or test of any of them.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "../shared/reference/upstream-test-facts.yaml"
    )]
    facts: Vec<PathBuf>,
}

/// Runs `hpa-conformance lint`; `Err` is a usage or input problem to print (exit 2).
pub fn run(args: LintArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, String> {
    let LintArgs {
        paths,
        seeds,
        facts,
    } = args;
    let sources = Sources::load(&seeds, &facts)
        .map_err(|e| usage(format!("{e} (point --seeds and --facts at shared/)")))?;
    let paths = if paths.is_empty() {
        vec![PathBuf::from("cases")]
    } else {
        paths
    };
    let Findings {
        cases: count,
        errors,
        warnings,
    } = lint(&paths, &sources);
    for e in &errors {
        let _ = writeln!(err, "{e}");
    }
    for w in &warnings {
        let _ = writeln!(
            err,
            "{}:{}:{}: warning: {}",
            w.path.display(),
            w.pos.line,
            w.pos.column,
            w.reason
        );
    }
    let warned = match warnings.len() {
        0 => String::new(),
        n => format!(", {n} warnings"),
    };
    emit(
        out,
        &format!(
            "lint: {count} case files checked, {} problems{warned}\n",
            errors.len()
        ),
    )?;
    if !errors.is_empty() {
        Ok(exit::BAD_INPUT)
    } else if count == 0 {
        let _ = writeln!(err, "error: no case file to lint under {}", shown(&paths));
        Ok(exit::NOTHING_RAN)
    } else {
        Ok(exit::PASSED)
    }
}
