//! A whole corpus loaded at once: every case file under the given paths, the good cases and the
//! errors of the bad ones, with case names unique.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::discover::discover;
use super::load::{Case, LoadError, load_case};

/// Loads every case under `paths`: the good ones and the errors of the bad ones (unreadable
/// paths, files that do not load, duplicate names pointed at their `name:` line).
pub fn load_all(paths: &[PathBuf]) -> (Vec<Case>, Vec<LoadError>) {
    let (files, mut errors) = discover(paths);
    let mut cases = Vec::new();
    for f in files {
        match load_case(&f) {
            Ok(c) => cases.push(c),
            Err(e) => errors.push(e),
        }
    }
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    cases.retain(|c| match seen.get(c.name()) {
        Some(first) => {
            errors.push(LoadError {
                path: c.path.clone(),
                pos: c.name_pos,
                reason: format!(
                    "duplicate case name {} (also in {})",
                    crate::util::text::quote(c.name()),
                    first.display()
                ),
            });
            false
        }
        None => {
            seen.insert(c.name().to_string(), c.path.clone());
            true
        }
    });
    (cases, errors)
}
