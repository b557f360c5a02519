//! `matrix`: the corpus (or the given cases) on one target at every Kubernetes release, as
//! case × release ([`crate::report::matrix`]).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use hpa_reference::KubernetesVersion;

use super::run::run_with_progress;
use super::shared::*;
use crate::case::corpus::load_all;
use crate::report::exit;
use crate::report::matrix::Matrix;
use crate::run::RunOptions;

/// How `matrix` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MatrixFormat {
    /// Totals per release, what changes between releases, failures.
    Human,
    /// One JSON document (`report::matrix::Matrix`).
    Json,
    /// The totals and the changes by release, for the docs (`docs/versions.md`).
    Markdown,
}

/// The arguments of `hpa-conformance matrix`.
#[derive(Debug, clap::Args)]
pub struct MatrixArgs {
    /// Case files or folders (default: `cases`).
    paths: Vec<PathBuf>,
    /// The implementation under test, as for `run`. In an `exec:` command, `{version}` stands
    /// for each release's upstream patch (`1.34.4`) and `{minor}` for the release (`1.34`), so
    /// that each release runs its own build:
    /// `exec:adapters/upstream/bin/{version}/hpa-upstream-adapter`.
    #[arg(long, default_value = "core")]
    target: String,
    /// The releases, comma-separated (default: every known release, 1.32 … 1.37).
    #[arg(long, value_delimiter = ',')]
    versions: Vec<KubernetesVersion>,
    /// Seconds to wait for each answer of an `exec:` implementation.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    step_timeout: u64,
    /// Cases run at once (default: the cores available).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    jobs: Option<u64>,
    /// Report format.
    #[arg(long, value_enum, default_value = "human")]
    format: MatrixFormat,
    /// Also write `matrix.json` and `matrix.html` (every case × release) into this folder.
    #[arg(long)]
    report: Option<PathBuf>,
}

/// Runs `hpa-conformance matrix`; `Err` is a usage or input problem to print (exit 2).
pub fn run(args: MatrixArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, String> {
    let MatrixArgs {
        paths,
        target,
        versions,
        step_timeout,
        jobs,
        format,
        report,
    } = args;
    let versions = if versions.is_empty() {
        KubernetesVersion::ALL.to_vec()
    } else {
        let mut v = versions;
        v.sort();
        v.dedup();
        v
    };
    let paths = if paths.is_empty() {
        vec![PathBuf::from("cases")]
    } else {
        paths
    };
    let (cases, bad_input) = load_all(&paths);
    for e in &bad_input {
        let _ = writeln!(err, "{e}");
    }
    if cases.is_empty() {
        let _ = writeln!(
            err,
            "error: no case ran: no case file under {}",
            shown(&paths)
        );
        return Ok(exit::NOTHING_RAN);
    }
    let timeout = Duration::from_secs(step_timeout);
    let mut runs = Vec::with_capacity(versions.len());
    for v in &versions {
        let name = target
            .replace("{version}", v.upstream_patch())
            .replace("{minor}", v.name());
        let t = startable_target(&name, timeout).map_err(usage)?;
        let opts = RunOptions {
            version: *v,
            ..RunOptions::default()
        };
        let (results, _, _) = run_with_progress(&cases, t.as_ref(), &opts, jobs_or_default(jobs));
        runs.push((*v, results));
    }
    let matrix = Matrix::new(&target, &cases, &runs);
    let json = serde_json::to_string_pretty(&matrix).map_err(|e| e.to_string())?;
    emit(
        out,
        &match format {
            MatrixFormat::Human => matrix.human(),
            MatrixFormat::Json => json.clone() + "\n",
            MatrixFormat::Markdown => matrix.markdown(),
        },
    )?;
    if let Some(dir) = &report {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("error: cannot create {}: {e}", dir.display()))?;
        write_report_file(&dir.join("matrix.json"), &(json + "\n"))?;
        write_report_file(&dir.join("matrix.html"), &matrix.html())?;
    }
    Ok(if !bad_input.is_empty() {
        exit::BAD_INPUT
    } else if matrix.totals.iter().all(|t| t.passed + t.failed == 0) {
        let _ = writeln!(
            err,
            "error: no case ran on any release: every case was skipped"
        );
        exit::NOTHING_RAN
    } else if matrix.passed() {
        exit::PASSED
    } else {
        exit::FAILED
    })
}
