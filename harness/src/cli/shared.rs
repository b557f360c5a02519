//! What every command uses: the output formats, writing output and report files, usage errors
//! (exit 2), and starting the target a command names.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::targets::exec::ExecTarget;
use crate::targets::{Target, make_target};
use clap::ValueEnum;

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A line per case and a summary.
    Human,
    /// One JSON document.
    Json,
    /// JUnit XML.
    Junit,
}

/// Formats of `explain` (and `what-if`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StoryFormat {
    /// The story as text.
    Human,
    /// One JSON document for tools.
    Json,
}

/// Writes all of `text` to `out`; a failure is an error line (exit 2).
pub(super) fn emit(out: &mut dyn Write, text: &str) -> Result<(), String> {
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| format!("error: cannot write the output: {e}"))
}

/// Writes a report file; a failure (a missing folder, a full disk) is an error line (exit 2).
pub(super) fn write_report_file(path: &Path, text: &str) -> Result<(), String> {
    write_report_with(path, |f| f.write_all(text.as_bytes()))
}

/// [`write_report_file`] with what `write` writes (a report streamed as it is serialized).
pub(super) fn write_report_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), String> {
    let written = std::fs::File::create(path).and_then(|mut f| {
        write(&mut f)?;
        f.flush()?;
        // A regular file is on disk before the run reports success.
        if f.metadata()?.is_file() {
            f.sync_all()?;
        }
        Ok(())
    });
    written.map_err(|e| format!("error: cannot write the report to {}: {e}", path.display()))
}

/// The paths as given, for messages.
pub(super) fn shown(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A usage problem, as the line to print (exit code 2).
pub(super) fn usage(e: impl std::fmt::Display) -> String {
    format!("error: {e}")
}

/// [`make_target`] for `run`, `explain` and `fuzz`: an `exec:` command that cannot start (a
/// program that does not exist or cannot be executed) is a usage error (exit 2), one rule for
/// every command, not a failure of each case.
pub(super) fn startable_target(
    name: &str,
    step_timeout: Duration,
) -> Result<Box<dyn Target>, String> {
    if let Some(command) = name.strip_prefix("exec:") {
        let exec = ExecTarget::new(command, step_timeout)?;
        exec.probe()
            .map_err(|why| format!("target {} cannot start: {why}", exec.name()))?;
        return Ok(Box::new(exec));
    }
    make_target(name, step_timeout)
}

/// `--jobs`, or the cores available.
pub(super) fn jobs_or_default(jobs: Option<u64>) -> usize {
    jobs.and_then(|j| usize::try_from(j).ok())
        .unwrap_or_else(crate::util::parallel::default_jobs)
}
