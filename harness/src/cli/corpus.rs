//! `corpus`: which corpus the given paths hold — its commit, how many cases, its fingerprint —
//! as one JSON line (what every report of a run of them says; the harness image's labels).

use std::io::Write;
use std::path::PathBuf;

use super::shared::*;
use crate::case::corpus::load_all;
use crate::report::corpus::{CorpusId, commit_of};
use crate::report::exit;

/// The arguments of `hpa-conformance corpus`.
#[derive(Debug, clap::Args)]
pub struct CorpusArgs {
    /// Case files or folders (default: `cases`).
    paths: Vec<PathBuf>,
}

/// Runs `hpa-conformance corpus`; a case file that does not load is an input problem (exit 2):
/// a corpus with a broken file has no identity to bake in.
pub fn run(args: CorpusArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, String> {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from("cases")]
    } else {
        args.paths
    };
    let (cases, bad) = load_all(&paths);
    if !bad.is_empty() {
        for b in &bad {
            let _ = writeln!(err, "{b}");
        }
        return Ok(exit::BAD_INPUT);
    }
    if cases.is_empty() {
        return Err(format!("error: no case file under {}", shown(&paths)));
    }
    let id = CorpusId::of_cases(&cases, commit_of(&paths));
    let line = serde_json::to_string(&id).map_err(|e| e.to_string())?;
    emit(out, &format!("{line}\n"))?;
    Ok(exit::PASSED)
}
