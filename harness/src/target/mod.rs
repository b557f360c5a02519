//! Targets: the implementations under test. A target starts one session per case, keeps its own
//! memory between ticks, and answers each tick's [`Snapshot`] with a [`TickOutcome`]. The runner
//! never reaches into a target.
//!
//! [`CoreTarget`] is the in-process reference core (virtual time, no IO); [`exec::ExecTarget`]
//! runs any implementation that speaks the step protocol (`harness/PROTOCOL.md`);
//! [`api::ApiTarget`] runs the reference controller over a fake Kubernetes API.

pub mod api;
pub mod exec;

use hpa_reference::metrics_api::readings;
use hpa_reference::{
    Event, Explanation, FeatureGates, Memory, Observation, PodView, Recommendation, ScaleEvent,
    ScaleView, Settings, decide,
};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus;

use crate::case::Case;
use crate::world::{Snapshot, instant};

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
    let event = |e: &crate::case::model::SeedScaleEvent| ScaleEvent {
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

/// The reference decision core, in process.
#[derive(Debug, Clone, Copy, Default)]
pub struct CoreTarget;

/// One case on the reference core: its settings and memory.
#[derive(Debug, Clone)]
pub struct CoreSession {
    settings: Settings,
    memory: Memory,
    report_memory: bool,
}

impl CoreSession {
    /// A session with these settings and starting memory.
    pub fn new(settings: Settings, memory: Memory) -> Self {
        CoreSession {
            settings,
            memory,
            report_memory: false,
        }
    }

    /// The same, reporting the memory after each tick (`TickOutcome::memory`).
    pub fn reporting_memory(mut self, report: bool) -> Self {
        self.report_memory = report;
        self
    }
}

impl Session for CoreSession {
    fn tick(&mut self, s: &Snapshot) -> Result<TickOutcome, TargetError> {
        let pods: Vec<PodView> = s.pods.iter().map(PodView::from_pod).collect();
        let metrics = readings(
            s.hpa.spec.metrics.as_deref().unwrap_or_default(),
            &s.metrics,
        );
        // Every HPA whose selector matches these pods, this one included, when others do.
        let mut selecting: Vec<String> = Vec::new();
        if !s.other_hpas_selecting_pods.is_empty() {
            let m = &s.hpa.metadata;
            selecting.push(format!(
                "{}/{}",
                m.namespace.as_deref().unwrap_or("default"),
                m.name.as_deref().unwrap_or_default()
            ));
            selecting.extend(s.other_hpas_selecting_pods.iter().cloned());
            selecting.sort();
        }
        let obs = Observation {
            now: s.now,
            hpa: &s.hpa,
            scale: s
                .scale
                .as_ref()
                .map(ScaleView::from_scale)
                .map_err(Clone::clone),
            pods: &pods,
            metrics: &metrics,
            hpas_selecting_pods: &selecting,
        };
        let plan = decide(&obs, &self.settings, &mut self.memory);
        let write = match (&plan.rescale, &s.scale_update_error) {
            (Some(_), Some(e)) => Err(e.clone()),
            _ => Ok(()),
        };
        let d = plan.finish(write, &mut self.memory);
        Ok(TickOutcome {
            scaled_to: d.scaled_to,
            status: d.status,
            events: d.events,
            explanation: Some(d.explanation),
            memory: self.report_memory.then(|| self.memory.clone()),
        })
    }
}

impl Target for CoreTarget {
    fn name(&self) -> String {
        "core".into()
    }
    fn gate_support(&self) -> GateSupport {
        GateSupport::PerCase
    }
    fn start(&self, case: &Case, settings: &Settings) -> Result<Box<dyn Session>, TargetError> {
        Ok(Box::new(
            CoreSession::new(settings.clone(), seeded_memory(case))
                .reporting_memory(reports_memory(case)),
        ))
    }
    /// The reference includes the API server's create-time validation (`hpa_reference::validation`).
    fn checks_api_validation(&self) -> bool {
        true
    }
}
