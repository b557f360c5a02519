//! The reference decision core as a target: in process, virtual time, no IO. A session keeps
//! each HPA's [`Memory`] between ticks and upstream's selector tracker, and answers a tick by
//! calling [`decide`] on what the world shows.

use std::collections::BTreeMap;

use hpa_reference::metrics_api::readings;
use hpa_reference::recycle;
use hpa_reference::selector::{self, Selector};
use hpa_reference::view;
use hpa_reference::{Memory, Observation, PodView, ScaleView, Settings, decide};
use k8s_openapi::api::core::v1::Pod;

use super::{
    GateSupport, Session, Target, TargetError, TickOutcome, reports_memory, seeded_memory,
};
use crate::case::Case;
use crate::world::Snapshot;

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
        (view::pod_views(pods), selecting)
    }
}

impl Session for CoreSession {
    fn tick(&mut self, s: &Snapshot) -> Result<TickOutcome, TargetError> {
        let (key, _, _) = hpa_reference::controller::key_of(&s.hpa);
        let (pods, selecting) = self.select(&key, s);
        let metrics = readings(
            s.hpa.spec.metrics.as_deref().unwrap_or_default(),
            &s.metrics,
            self.settings.version.changes(),
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
        // The views' buffers serve the next tick's (hpa_reference::recycle).
        recycle::give_views(pods);
        recycle::give_readings(metrics);
        // A refused update fails the rescale unless the release retries it through
        // (a conflict from 1.34 on: hpa_reference::retry).
        let write = match (&plan.rescale, &s.scale_update_error) {
            (Some(_), Some(e))
                if !hpa_reference::retry::goes_through(
                    self.settings.version.changes(),
                    s.scale_update_error_reason.as_deref(),
                    s.scale_update_failures,
                ) =>
            {
                Err(e.clone())
            }
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
