//! Conformance profiles: the levels a run is judged at. Every check belongs to one level; a case
//! passes *at* a level when none of its failures is at that level or below. A run is judged at one
//! profile (checks above it are not compared) and its summary reports every level up to it, e.g.
//! `replicas 152/240 · status 15/240`.
//!
//! | level | what is compared |
//! | --- | --- |
//! | `replicas` | replica counts per tick, trajectories, final replicas (and that the run completed) |
//! | `status` | + `status.desiredReplicas`, `currentReplicas`, `lastScaleTime`, `currentMetrics`, conditions as type/status/reason |
//! | `full` | + events (type, reason, message substrings) |
//!
//! An implementation declares the levels it supports in `hello.levels` (`harness/PROTOCOL.md`);
//! the highest level it declares is its default profile. The reference targets support `full`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A level of comparison, ordered from the least to the most compared.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "camelCase")]
pub enum Profile {
    /// Replica counts and trajectories only.
    Replicas,
    /// Plus the HPA status: desired/current replicas, lastScaleTime, currentMetrics, conditions
    /// (type, status, reason).
    Status,
    /// Plus events.
    #[default]
    Full,
}

impl Profile {
    /// Every level, in order.
    pub const ALL: [Profile; 3] = [Profile::Replicas, Profile::Status, Profile::Full];

    /// Its name on the command line and in `hello.levels`.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Replicas => "replicas",
            Profile::Status => "status",
            Profile::Full => "full",
        }
    }

    /// The level a check (a [`crate::run::Failure`]'s `check`) belongs to. Whole-run and
    /// replica checks are `replicas`; status fields, conditions and `currentMetrics` are
    /// `status`; events are `full`. An unknown check counts at the lowest level (it is never
    /// hidden by a profile).
    pub fn of_check(check: &str) -> Profile {
        if check == "events" {
            Profile::Full
        } else if check.starts_with("status.")
            || check == "condition"
            || check.starts_with("currentMetrics")
        {
            Profile::Status
        } else {
            Profile::Replicas
        }
    }

    /// The highest level of `declared` reached without a gap from `replicas` (`[replicas, full]`
    /// supports `replicas` only); `None` when `replicas` is not declared.
    pub fn highest_of(declared: &[Profile]) -> Option<Profile> {
        let mut top = None;
        for p in Profile::ALL {
            if declared.contains(&p) {
                top = Some(p);
            } else {
                break;
            }
        }
        top
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Profile {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Profile::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("unknown profile {s:?} (available: replicas, status, full)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_belong_to_levels() {
        assert_eq!(Profile::of_check("replicas"), Profile::Replicas);
        assert_eq!(Profile::of_check("trajectory"), Profile::Replicas);
        assert_eq!(Profile::of_check("final replicas"), Profile::Replicas);
        assert_eq!(Profile::of_check("after stop"), Profile::Replicas);
        assert_eq!(Profile::of_check("status.lastScaleTime"), Profile::Status);
        assert_eq!(Profile::of_check("condition"), Profile::Status);
        assert_eq!(
            Profile::of_check("currentMetrics[0].averageValue"),
            Profile::Status
        );
        assert_eq!(Profile::of_check("events"), Profile::Full);
    }

    #[test]
    fn highest_level_needs_every_level_below() {
        use Profile::*;
        assert_eq!(Profile::highest_of(&[Replicas, Status, Full]), Some(Full));
        assert_eq!(Profile::highest_of(&[Status, Replicas]), Some(Status));
        assert_eq!(Profile::highest_of(&[Replicas, Full]), Some(Replicas));
        assert_eq!(Profile::highest_of(&[Full]), None);
        assert_eq!("status".parse::<Profile>(), Ok(Status));
        assert!("everything".parse::<Profile>().is_err());
    }
}
