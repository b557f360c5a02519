//! What loading gives: a checked [`Case`], or a [`LoadError`] at the file, line and column of the
//! problem with one line of reason.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;

use crate::case::features::Feature;
use crate::case::gates::GateUse;
use crate::case::model::CaseFile;
use crate::util::yaml::Pos;

/// A case file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// The file.
    pub path: PathBuf,
    /// Where in it.
    pub pos: Pos,
    /// One line of reason.
    pub reason: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pos.line == 0 {
            // The path as a whole (an unreadable folder or file).
            return write!(f, "{}: {}", self.path.display(), self.reason);
        }
        write!(
            f,
            "{}:{}:{}: {}",
            self.path.display(),
            self.pos.line,
            self.pos.column,
            self.reason
        )
    }
}

impl std::error::Error for LoadError {}

/// A loaded, checked case.
#[derive(Debug, Clone)]
pub struct Case {
    /// The file it came from.
    pub path: PathBuf,
    /// The file's content as written.
    pub file: CaseFile,
    /// The HPA as the API server stores it (defaults applied).
    pub hpa: HorizontalPodAutoscaler,
    /// Seconds between ticks.
    pub sync_period: u32,
    /// The last tick's time.
    pub duration: u32,
    /// Where the `name:` is (for duplicate names).
    pub name_pos: Pos,
    /// The feature gates the case uses (declared or detected), with the values it needs.
    pub gates: BTreeMap<String, GateUse>,
    /// The implementation features the case needs, each with the field that needs it
    /// ([`crate::case::features`]).
    pub features: Vec<(Feature, String)>,
    /// The HPAs alongside (`alongside`), each loaded as a case of its own: the case's file with
    /// the member's HPA, workload, timeline and expectations, and the case's duration.
    pub members: Vec<Case>,
    /// The releases the case holds for and where its expectations change, parsed
    /// ([`crate::case::versions`]).
    pub releases: crate::case::versions::Releases,
}

impl Case {
    /// The case's name.
    pub fn name(&self) -> &str {
        &self.file.name
    }
}
