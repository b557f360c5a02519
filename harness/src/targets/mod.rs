//! Targets: the implementations under test. A target starts one session per case, keeps its own
//! memory between ticks, and answers each tick's [`Snapshot`] with a [`TickOutcome`]. The runner
//! never reaches into a target.
//!
//! [`CoreTarget`] is the in-process reference core (virtual time, no IO); [`exec::ExecTarget`]
//! runs any implementation that speaks the step protocol (`harness/PROTOCOL.md`);
//! [`api::ApiTarget`] runs the reference controller over a fake Kubernetes API.

pub mod api;
mod core;
pub mod exec;

pub use self::core::{CoreSession, CoreTarget};

use std::time::Duration;

use hpa_reference::{
    Event, Explanation, FeatureGates, Memory, Recommendation, ScaleEvent, Settings,
};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus;

use crate::case::Case;
use crate::case::model::{MemorySeed, SeedRecommendation, SeedScaleEvent};
use crate::world::{Snapshot, instant, virtual_secs};

/// A target failed to run a case (not: the case's expectations failed), or cannot run it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TargetError {
    /// What went wrong.
    pub message: String,
    /// The target cannot run this case as written (e.g. other feature gates): report it skipped.
    pub skip: bool,
}

impl TargetError {
    /// A failure.
    pub fn failed(message: impl Into<String>) -> Self {
        TargetError {
            message: message.into(),
            skip: false,
        }
    }

    /// A reason to skip.
    pub fn skip(message: impl Into<String>) -> Self {
        TargetError {
            message: message.into(),
            skip: true,
        }
    }
}

/// What a target did at one tick.
#[derive(Debug, Clone, PartialEq)]
pub struct TickOutcome {
    /// The replica count written to the scale (a successful write), if any.
    pub scaled_to: Option<i32>,
    /// The HPA status written.
    pub status: HorizontalPodAutoscalerStatus,
    /// Events recorded at this tick.
    pub events: Vec<Event>,
    /// Why (targets that can explain their decisions).
    pub explanation: Option<Explanation>,
    /// The controller's memory of the HPA after the tick, when the case asked for it
    /// (`expect.at[].memory`) and the target reports it.
    pub memory: Option<Memory>,
}

/// Which feature gates a target can run a case with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateSupport {
    /// Any combination, chosen per case.
    PerCase,
    /// Only these (e.g. a running cluster).
    Fixed(FeatureGates),
}

/// One case on one target.
pub trait Session {
    /// Decides one tick.
    fn tick(&mut self, snapshot: &Snapshot) -> Result<TickOutcome, TargetError>;

    /// Ends the case after its last tick. An error (e.g. an implementation that ignored `stop` or
    /// exited with a non-zero status) fails the case.
    fn finish(&mut self) -> Result<(), TargetError> {
        Ok(())
    }

    /// What the implementation said for people (e.g. the tail of its stderr), shown with a
    /// failure.
    fn diagnostics(&self) -> Option<String> {
        None
    }

    /// The highest conformance level the implementation supports ([`crate::profile`]): the
    /// reference targets support `full`; an `exec:` implementation says in `hello.levels`.
    fn highest_level(&self) -> crate::profile::Profile {
        crate::profile::Profile::Full
    }

    /// Who answered (`name version` from an `exec:` implementation's `hello`), if it said.
    fn implementation(&self) -> Option<String> {
        None
    }

    /// What [`finish`](Session::finish) checks, labelling its failure: (check, expected). The
    /// exit after `stop`; for an `exec:` process kept for more cases, its answer to `end`.
    fn finish_check(&self) -> (String, String) {
        ("after stop".into(), "exit with status 0".into())
    }
}

/// An implementation under test. Shared by the threads of a parallel run (`--jobs`): each
/// session stays on the thread that started it.
pub trait Target: Send + Sync {
    /// A short name for reports, e.g. `core`.
    fn name(&self) -> String;
    /// Which gates it can run with.
    fn gate_support(&self) -> GateSupport;
    /// Starts a case with these settings (gates resolved by the runner).
    fn start(&self, case: &Case, settings: &Settings) -> Result<Box<dyn Session>, TargetError>;
    /// Whether the target includes the API server's validation, so a case expecting a rejected
    /// manifest (`expect.rejected`) can be checked on it; otherwise such a case is skipped.
    fn checks_api_validation(&self) -> bool {
        false
    }
    /// Failures noticed after the case they follow was over — an `exec:` process kept for more
    /// cases that misbehaved after answering `ended` — to report on that case. Ends what the
    /// target keeps between cases: called when a run is over.
    fn take_late_failures(&self) -> Vec<exec::LateFailure> {
        Vec::new()
    }
    /// Its last `hello` (an `exec:` implementation's; `None` for the project's in-process targets
    /// or before any).
    fn last_hello(&self) -> Option<crate::protocol::Hello> {
        None
    }
    /// The features it declared in its last `hello` (`None`: every feature, or no `hello` yet).
    /// `fuzz` draws no External metric for a target without `externalMetrics`.
    fn declared_features(
        &self,
    ) -> Option<std::collections::BTreeSet<crate::case::features::Feature>> {
        self.last_hello().map(|h| h.declared_features())
    }
}

/// Whether a case expects the controller's memory after a tick (`expect.at[].memory`), so the
/// target must report it.
pub fn reports_memory(case: &Case) -> bool {
    case.features
        .iter()
        .any(|(f, _)| *f == crate::case::features::Feature::MemoryReport)
}

/// The controller's memory as the case seeds it (`None`: never seen the HPA).
pub fn seeded_memory(case: &Case) -> Memory {
    let Some(seed) = &case.file.memory else {
        return Memory::default();
    };
    let event = |e: &SeedScaleEvent| ScaleEvent {
        change: e.change,
        timestamp: instant(e.at),
        outdated: false,
    };
    Memory {
        recommendations: Some(
            seed.recommendations
                .iter()
                .map(|r| Recommendation {
                    replicas: r.replicas,
                    timestamp: instant(r.at),
                })
                .collect(),
        ),
        scale_up_events: seed.scale_up_events.iter().map(event).collect(),
        scale_down_events: seed.scale_down_events.iter().map(event).collect(),
    }
}

/// The other way round: a controller's memory as a case seeds one (recommendations `None` — a
/// controller that never saw the HPA — has no seed).
pub fn memory_seed(memory: &Memory) -> Option<MemorySeed> {
    let event = |e: &ScaleEvent| SeedScaleEvent {
        change: e.change,
        at: virtual_secs(e.timestamp),
    };
    Some(MemorySeed {
        recommendations: memory
            .recommendations
            .as_ref()?
            .iter()
            .map(|r| SeedRecommendation {
                replicas: r.replicas,
                at: virtual_secs(r.timestamp),
            })
            .collect(),
        scale_up_events: memory.scale_up_events.iter().map(event).collect(),
        scale_down_events: memory.scale_down_events.iter().map(event).collect(),
    })
}

/// Builds a target from its command-line name: `core`, `reference-api` or `exec:<command>`.
pub fn make_target(name: &str, step_timeout: Duration) -> Result<Box<dyn Target>, String> {
    if let Some(command) = name.strip_prefix("exec:") {
        return Ok(Box::new(exec::ExecTarget::new(command, step_timeout)?));
    }
    match name {
        "core" => Ok(Box::new(CoreTarget)),
        "reference-api" => Ok(Box::new(api::ApiTarget::default())),
        other => Err(format!(
            "unknown target {other:?} (available: core, reference-api, exec:<command>)"
        )),
    }
}
