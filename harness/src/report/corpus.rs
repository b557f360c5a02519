//! Which corpus a run judged, as every report says it: the corpus's commit (git's answer for
//! the cases' folder, else what the harness image baked in: [`COMMIT_ENV`]) and a fingerprint of
//! the cases run, to tell corpora apart without git.

use std::path::PathBuf;

use serde::Serialize;

use crate::run::CaseResult;

/// The environment variable that names the corpus's commit where git cannot (the harness image
/// sets it to the last commit that changed `cases/` when it bakes the corpus in).
pub const COMMIT_ENV: &str = "HPA_CONFORMANCE_CORPUS_COMMIT";

/// A run's corpus: its commit, how many cases ran (skips included) and their fingerprint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CorpusId {
    /// The corpus's commit (`-dirty` when its cases had changes), `unknown` when nobody said.
    pub commit: String,
    /// The cases the run loaded and judged (skipped ones too).
    pub cases: usize,
    /// FNV-1a 64 over the sorted case names and files.
    pub fingerprint: String,
}

impl CorpusId {
    /// The corpus of `results`, at `commit`.
    pub fn of(results: &[CaseResult], commit: Option<String>) -> CorpusId {
        Self::named(
            results.iter().map(|r| (r.name.as_str(), r.file.clone())),
            commit,
        )
    }

    /// The corpus of loaded `cases` (what a run of them would report), at `commit`.
    pub fn of_cases(cases: &[crate::case::Case], commit: Option<String>) -> CorpusId {
        Self::named(
            cases
                .iter()
                .map(|c| (c.name(), c.path.display().to_string())),
            commit,
        )
    }

    fn named<'a>(
        cases: impl Iterator<Item = (&'a str, String)>,
        commit: Option<String>,
    ) -> CorpusId {
        let mut names: Vec<String> = cases
            .map(|(name, file)| format!("{name}\u{0}{file}"))
            .collect();
        names.sort();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        CorpusId {
            commit: commit.unwrap_or_else(|| "unknown".into()),
            cases: names.len(),
            fingerprint: fnv(&refs),
        }
    }
}

/// FNV-1a 64 of `parts` (each followed by a NUL), as 16 hex digits: a short, stable name for
/// a set of strings (the corpus fingerprint; the cluster lane's namespace suffix).
pub(crate) fn fnv(parts: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// The commit of the first path's folder (`git rev-parse HEAD`, `-dirty` when its cases
/// changed), when git answers; else [`COMMIT_ENV`] when set.
pub fn commit_of(paths: &[PathBuf]) -> Option<String> {
    git_commit(paths).or_else(|| {
        std::env::var(COMMIT_ENV)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    })
}

fn git_commit(paths: &[PathBuf]) -> Option<String> {
    let dir = paths.first()?;
    let dir = if dir.is_dir() {
        dir.clone()
    } else {
        dir.parent()?.to_path_buf()
    };
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(&dir)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let head = git(&["rev-parse", "HEAD"])?;
    let dirty = git(&["status", "--porcelain", "--", "."]).is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{head}-dirty") } else { head })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_is_the_set_of_cases_not_their_order() {
        let r = |name: &str, file: &str| CaseResult {
            name: name.into(),
            title: String::new(),
            file: file.into(),
            outcome: crate::run::Outcome::Passed,
            trace: Vec::new(),
            alongside: Vec::new(),
            elapsed: std::time::Duration::ZERO,
            diagnostics: None,
            posed: None,
        };
        let a = CorpusId::of(&[r("x", "cases/x.yaml"), r("y", "cases/y.yaml")], None);
        let b = CorpusId::of(&[r("y", "cases/y.yaml"), r("x", "cases/x.yaml")], None);
        let c = CorpusId::of(&[r("x", "cases/x.yaml"), r("y", "cases/z.yaml")], None);
        assert_eq!(a, b);
        assert_ne!(a.fingerprint, c.fingerprint);
        assert_eq!(a.commit, "unknown");
        assert_eq!(a.cases, 2);
        assert_eq!(fnv(&[]), "cbf29ce484222325");
    }
}
