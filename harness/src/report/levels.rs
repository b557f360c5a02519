//! Results counted by conformance level ([`Profile`]): which cases pass at each level, and the
//! summary's levels line.

use crate::profile::Profile;
use crate::run::{CaseResult, Outcome};

/// Whether a result passes at `level`: it ran, and none of its failures is at `level` or below.
/// `None` for a skipped case.
pub fn passes_at(result: &CaseResult, level: Profile) -> Option<bool> {
    match &result.outcome {
        Outcome::Skipped(_) => None,
        Outcome::Passed => Some(true),
        Outcome::Errored(_) => Some(false),
        Outcome::Failed(f) => Some(f.iter().all(|f| Profile::of_check(&f.check) > level)),
    }
}

/// Per level up to `profile`: (level, cases passing at it, cases that ran).
pub fn level_counts(results: &[CaseResult], profile: Profile) -> Vec<(Profile, usize, usize)> {
    Profile::ALL
        .into_iter()
        .filter(|l| *l <= profile)
        .map(|l| {
            let verdicts: Vec<bool> = results.iter().filter_map(|r| passes_at(r, l)).collect();
            (l, verdicts.iter().filter(|v| **v).count(), verdicts.len())
        })
        .collect()
}

/// The summary's levels line, e.g. `replicas 152/240 · status 15/240`.
pub fn levels_line(results: &[CaseResult], profile: Profile) -> String {
    level_counts(results, profile)
        .iter()
        .map(|(l, p, n)| format!("{l} {p}/{n}"))
        .collect::<Vec<_>>()
        .join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::fail;
    use std::time::Duration;

    fn result(outcome: Outcome) -> CaseResult {
        CaseResult {
            name: "c".into(),
            title: String::new(),
            file: String::new(),
            outcome,
            trace: Vec::new(),
            alongside: Vec::new(),
            elapsed: Duration::ZERO,
            diagnostics: None,
            posed: None,
        }
    }

    #[test]
    fn a_case_passes_at_every_level_below_its_first_failing_one() {
        let results = vec![
            result(Outcome::Passed),
            result(Outcome::Failed(vec![fail(Some(0), "events", "a", "b")])),
            result(Outcome::Failed(vec![
                fail(Some(0), "condition", "a", "b"),
                fail(Some(0), "events", "a", "b"),
            ])),
            result(Outcome::Failed(vec![fail(None, "trajectory", "a", "b")])),
            result(Outcome::Errored("crashed".into())),
            result(Outcome::Skipped("gate".into())),
        ];
        assert_eq!(
            level_counts(&results, Profile::Full),
            vec![
                (Profile::Replicas, 3, 5),
                (Profile::Status, 2, 5),
                (Profile::Full, 1, 5)
            ]
        );
        assert_eq!(
            levels_line(&results, Profile::Status),
            "replicas 3/5 · status 2/5"
        );
    }
}
