//! Reports: consumers of case results. Human text ([`human`]), one JSON document ([`json`]),
//! JUnit XML ([`junit`]), and the tick-by-tick explanation table ([`explain`]).

pub mod explain;
pub mod human;
pub mod json;
pub mod junit;

use crate::case::LoadError;
use crate::runner::CaseResult;

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The target's name.
    pub target: String,
    /// Results of the cases that loaded.
    pub results: Vec<CaseResult>,
    /// Case files that could not be loaded.
    pub bad_input: Vec<LoadError>,
}

impl RunReport {
    /// (passed, failed, skipped); errored cases count as failed.
    pub fn counts(&self) -> (usize, usize, usize) {
        use crate::runner::Outcome;
        let mut c = (0, 0, 0);
        for r in &self.results {
            match r.outcome {
                Outcome::Passed => c.0 += 1,
                Outcome::Failed(_) | Outcome::Errored(_) => c.1 += 1,
                Outcome::Skipped(_) => c.2 += 1,
            }
        }
        c
    }

    /// The process exit code: 2 bad input, 1 some case failed, 0 all passed or skipped.
    pub fn exit_code(&self) -> i32 {
        if !self.bad_input.is_empty() {
            2
        } else if self.counts().1 > 0 {
            1
        } else {
            0
        }
    }
}
