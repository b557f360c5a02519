//! What each pod looked like at a tick, read back from the objects the target was given (the
//! world's snapshot): phase, `status.startTime`, the Ready condition and its transition time,
//! deletion, and every metric sample with its timestamp and window. `explain --pods` prints these
//! rows under each tick; runs collect them only when asked ([`crate::run::RunOptions::pods`]).

use std::fmt;

use serde::Serialize;

use hpa_reference::time::core_time;

use crate::world::{Snapshot, virtual_secs};

/// One pod at one tick. Times are virtual seconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PodState {
    /// The pod's name.
    pub name: String,
    /// `status.phase`.
    pub phase: String,
    /// `status.startTime` (absent while pending).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<i64>,
    /// The Ready condition's status (`None`: the pod has no Ready condition).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// The Ready condition's `lastTransitionTime`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_since: Option<i64>,
    /// `metadata.deletionTimestamp` is set.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deleting: bool,
    /// The metric samples the APIs answer for this pod, as `metric value (at T, window W s)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<String>,
}

impl fmt::Display for PodState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name, self.phase)?;
        if let Some(s) = self.started {
            write!(f, ", started {s}")?;
        }
        match (self.ready, self.ready_since) {
            (Some(r), Some(since)) => write!(f, ", Ready={} since {since}", title(r))?,
            (Some(r), None) => write!(f, ", Ready={}", title(r))?,
            (None, _) => write!(f, ", no Ready condition")?,
        }
        if self.deleting {
            write!(f, ", deleting")?;
        }
        if self.samples.is_empty() {
            write!(f, "; no samples")
        } else {
            write!(f, "; {}", self.samples.join("; "))
        }
    }
}

fn title(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// The pods of a snapshot, in the order the target received them (oldest first).
pub fn pod_states(s: &Snapshot) -> Vec<PodState> {
    s.pods
        .iter()
        .map(|p| {
            let name = p.metadata.name.clone().unwrap_or_default();
            let status = p.status.as_ref();
            let ready = status
                .and_then(|st| st.conditions.as_ref())
                .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
            let mut samples = Vec::new();
            for m in s
                .metrics
                .resource
                .items
                .iter()
                .filter(|m| m.metadata.name.as_deref() == Some(name.as_str()))
            {
                let mut resources: Vec<&String> =
                    m.containers.iter().flat_map(|c| c.usage.keys()).collect();
                resources.sort();
                resources.dedup();
                for r in resources {
                    let per_container: Vec<String> = m
                        .containers
                        .iter()
                        .filter_map(|c| c.usage.get(r).map(|q| format!("{} {}", c.name, q.0)))
                        .collect();
                    samples.push(format!(
                        "{r} {} (at {}, window {})",
                        per_container.join(" + "),
                        virtual_secs(core_time(&m.timestamp)),
                        m.window
                    ));
                }
            }
            for (metric, answer) in &s.metrics.pods {
                for v in answer.items.iter().filter(|v| v.pod == name) {
                    samples.push(format!(
                        "{metric} {} (at {}, window {})",
                        v.value.0,
                        virtual_secs(core_time(&v.timestamp)),
                        v.window_seconds
                            .map_or_else(|| "unset".to_string(), |w| format!("{w}s"))
                    ));
                }
            }
            PodState {
                phase: status
                    .and_then(|st| st.phase.clone())
                    .unwrap_or_else(|| "Unknown".into()),
                started: status
                    .and_then(|st| st.start_time.as_ref())
                    .map(|t| virtual_secs(core_time(t))),
                ready: ready.map(|c| c.status == "True"),
                ready_since: ready
                    .and_then(|c| c.last_transition_time.as_ref())
                    .map(|t| virtual_secs(core_time(t))),
                deleting: p.metadata.deletion_timestamp.is_some(),
                samples,
                name,
            }
        })
        .collect()
}
