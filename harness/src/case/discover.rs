//! Finding case files: every `.yaml`/`.yml` file under the given folders, and the files given by
//! name. Discovery never stops at the first problem and never hangs: a folder or file that cannot
//! be read is reported by its path (bad input) while everything else is still found; symbolic
//! links are followed, but each real folder is entered once, so a link loop ends; anything that
//! is not a regular file (a FIFO would block a reader) is reported instead of read.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::LoadError;
use crate::util::yaml::Pos;

/// A problem with a path as a whole (no line or column).
pub fn path_error(path: &Path, reason: impl Into<String>) -> LoadError {
    LoadError {
        path: path.to_path_buf(),
        pos: Pos { line: 0, column: 0 },
        reason: reason.into(),
    }
}

fn is_case_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "yaml" || e == "yml")
}

/// Checks that a path names a regular file (following links).
pub fn regular_file(path: &Path) -> Result<(), LoadError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => Err(path_error(path, "not a regular file")),
        Err(e) => Err(path_error(path, format!("cannot read: {e}"))),
    }
}

/// Every case file under `paths` (sorted, each once) and the paths that could not be read.
pub fn discover(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<LoadError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    let mut entered: BTreeSet<PathBuf> = BTreeSet::new();
    for p in paths {
        if !p.is_dir() {
            // A file given by name is taken whatever its extension; the loader reports it.
            match regular_file(p) {
                Ok(()) => files.push(p.clone()),
                Err(e) => errors.push(e),
            }
            continue;
        }
        let mut stack = vec![p.clone()];
        while let Some(dir) = stack.pop() {
            // The real folder, so that a link back into a folder already listed is not followed.
            match std::fs::canonicalize(&dir) {
                Ok(real) => {
                    if !entered.insert(real) {
                        continue;
                    }
                }
                Err(e) => {
                    errors.push(path_error(&dir, format!("cannot read the folder: {e}")));
                    continue;
                }
            }
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) => {
                    errors.push(path_error(&dir, format!("cannot read the folder: {e}")));
                    continue;
                }
            };
            for entry in entries {
                let path = match entry {
                    Ok(entry) => entry.path(),
                    Err(e) => {
                        errors.push(path_error(&dir, format!("cannot read the folder: {e}")));
                        continue;
                    }
                };
                match std::fs::metadata(&path) {
                    Ok(m) if m.is_dir() => stack.push(path),
                    Ok(m) if is_case_file(&path) => {
                        if m.is_file() {
                            files.push(path);
                        } else {
                            errors.push(path_error(&path, "not a regular file"));
                        }
                    }
                    Ok(_) => {}
                    Err(e) if is_case_file(&path) => {
                        errors.push(path_error(&path, format!("cannot read: {e}")));
                    }
                    // A dangling link or an unreadable entry that is not a case file.
                    Err(_) => {}
                }
            }
        }
    }
    files.sort();
    files.dedup();
    errors.sort_by(|a, b| a.path.cmp(&b.path));
    (files, errors)
}
