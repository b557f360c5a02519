//! Targets: the implementations under test. A target starts one session per case, keeps its own
//! memory between ticks, and answers each tick's [`Snapshot`] with a [`TickOutcome`]. The runner
//! never reaches into a target.
//!
//! [`CoreTarget`] is the in-process reference core (virtual time, no IO); [`exec::ExecTarget`]
//! runs any implementation that speaks the step protocol (`harness/PROTOCOL.md`);
//! [`api::ApiTarget`] runs the reference controller over a fake Kubernetes API.

pub mod api;
pub mod exec;

use std::collections::BTreeMap;

use hpa_reference::metrics_api::readings;
use hpa_reference::selector::{self, Selector};
use hpa_reference::{
    Event, Explanation, FeatureGates, Memory, Observation, PodView, Recommendation, ScaleEvent,
    ScaleView, Settings, decide,
};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus;
use k8s_openapi::api::core::v1::Pod;

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

/// One case on the reference core: its settings, and its memory of each HPA it has reconciled
/// (a case with HPAs `alongside` ticks several in one session), with the selector tracker that
/// tells it which HPAs select the same pods.
#[derive(Debug, Clone)]
pub struct CoreSession {
    settings: Settings,
    /// The memory to start the first HPA ticked with (taken at its first tick).
    seed: Option<Memory>,
    /// Each HPA's memory, by `namespace/name`.
    memories: BTreeMap<String, Memory>,
    /// Each reconciled HPA's selector as written and parsed, by `namespace/name` (upstream's
    /// selector tracker).
    selectors: BTreeMap<String, (String, Selector)>,
    report_memory: bool,
}

impl CoreSession {
    /// A session with these settings and starting memory.
    pub fn new(settings: Settings, memory: Memory) -> Self {
        CoreSession {
            settings,
            seed: Some(memory),
            memories: BTreeMap::new(),
            selectors: BTreeMap::new(),
            report_memory: false,
        }
    }

    /// The same, reporting the memory after each tick (`TickOutcome::memory`).
    pub fn reporting_memory(mut self, report: bool) -> Self {
        self.report_memory = report;
        self
    }

    /// The pods the scale's selector selects (as upstream lists them from its pod lister), and
    /// every HPA, this one included, whose selector matches any of them when more than one
    /// does (upstream's `AmbiguousSelector`): the HPAs this session reconciled, and the other
    /// HPAs the world names. Records this HPA's selector first, as upstream does while
    /// reconciling it.
    fn select(&mut self, key: &str, s: &Snapshot) -> (Vec<PodView>, Vec<String>) {
        let selector = s
            .scale
            .as_ref()
            .ok()
            .and_then(|sc| sc.status.as_ref())
            .and_then(|st| st.selector.as_deref())
            .filter(|sel| !sel.is_empty());
        let Some(sel) = selector else {
            // No selector: decide reports it before it looks at any pod.
            return (Vec::new(), Vec::new());
        };
        // Parsed again only when it changed (a steady selector is the common case).
        if !matches!(self.selectors.get(key), Some((text, _)) if text == sel) {
            let Ok(parsed) = selector::parse(sel) else {
                // An unparsable selector: decide reports it, and upstream's tracker keeps the last.
                return (Vec::new(), Vec::new());
            };
            self.selectors
                .insert(key.to_string(), (sel.to_string(), parsed));
        }
        let Some((_, parsed)) = self.selectors.get(key) else {
            return (Vec::new(), Vec::new());
        };
        static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();
        fn labels(p: &Pod) -> &BTreeMap<String, String> {
            p.metadata.labels.as_ref().unwrap_or(&NO_LABELS)
        }
        let pods: Vec<&Pod> = s
            .pods
            .iter()
            .filter(|p| parsed.matches(labels(p)))
            .collect();
        let namespace = key.split_once('/').map_or("default", |(ns, _)| ns);
        let mut selecting: Vec<String> = self
            .selectors
            .iter()
            .filter(|(k, _)| k.split_once('/').is_some_and(|(ns, _)| ns == namespace))
            .filter(|(_, (_, sel))| pods.iter().any(|p| sel.matches(labels(p))))
            .map(|(k, _)| k.clone())
            .collect();
        selecting.extend(s.other_hpas_selecting_pods.iter().cloned());
        selecting.sort();
        selecting.dedup();
        if selecting.len() < 2 {
            selecting.clear();
        }
        (pods.into_iter().map(PodView::from_pod).collect(), selecting)
    }
}

impl Session for CoreSession {
    fn tick(&mut self, s: &Snapshot) -> Result<TickOutcome, TargetError> {
        let (key, _, _) = hpa_reference::controller::key_of(&s.hpa);
        let (pods, selecting) = self.select(&key, s);
        let metrics = readings(
            s.hpa.spec.metrics.as_deref().unwrap_or_default(),
            &s.metrics,
        );
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
        if !self.memories.contains_key(&key) {
            let first = self.seed.take().unwrap_or_default();
            self.memories.insert(key.clone(), first);
        }
        let memory = self.memories.entry(key).or_default();
        let plan = decide(&obs, &self.settings, memory);
        let write = match (&plan.rescale, &s.scale_update_error) {
            (Some(_), Some(e)) => Err(e.clone()),
            _ => Ok(()),
        };
        let d = plan.finish(write, memory);
        Ok(TickOutcome {
            scaled_to: d.scaled_to,
            status: d.status,
            events: d.events,
            explanation: Some(d.explanation),
            memory: self.report_memory.then(|| memory.clone()),
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
