//! The virtual-time runner: for each tick t = 0, P, 2P, … it applies the timeline entries due, shows
//! the target the world, applies what the target did, checks the expectations at that tick
//! ([`Checker`]) and records the tick's trace — within the caps of [`crate::kept`], so what a case
//! keeps does not grow with what a target answers. Every expectation is checked, or the case fails.

mod budget;
pub mod podstate;
pub mod trace;

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use hpa_reference::quantity::parse_milli;
use hpa_reference::{Event, KubernetesVersion, Settings};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus;
use serde::Serialize;

use crate::case::Case;
use crate::case::model::{ExpectAt, ExpectMetric, Expectations};
use crate::kept::{MAX_ERROR_BYTES, MAX_FAILURE_TEXT_BYTES, MAX_ITEMS_PER_TICK};
use crate::profile::Profile;
use crate::run::trace::{TickTrace, metric_current, tick_trace};
use crate::targets::{GateSupport, Target, TickOutcome};
use crate::util::text::{list, or_unset};
use crate::world::World;
pub use budget::Budget;

/// One expectation that did not hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// The tick, or `None` for whole-run checks (trajectory, final replicas).
    pub t: Option<i64>,
    /// What was checked, e.g. `replicas`.
    pub check: String,
    /// Expected.
    pub expected: String,
    /// Actual.
    pub actual: String,
    /// The HPA alongside the case's own whose expectation it is (`None`: the case's HPA).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hpa: Option<String>,
}

impl Failure {
    /// What was checked, for people: the check, after the HPA's name when it is one alongside.
    pub fn what(&self) -> String {
        match &self.hpa {
            Some(name) => format!("HPA {name}: {}", self.check),
            None => self.check.clone(),
        }
    }
}

/// How a case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every expectation held.
    Passed,
    /// Some did not.
    Failed(Vec<Failure>),
    /// Not run, with the reason.
    Skipped(String),
    /// The target could not run it.
    Errored(String),
}

/// A case's result.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The case's name.
    pub name: String,
    /// The case's title (what it shows).
    pub title: String,
    /// Its file.
    pub file: String,
    /// How it ended.
    pub outcome: Outcome,
    /// Its trace (possibly partial when errored).
    pub trace: Vec<TickTrace>,
    /// The traces of the HPAs alongside (`alongside`), in the case's order.
    pub alongside: Vec<AlongsideTrace>,
    /// Wall time.
    pub elapsed: Duration,
    /// What the implementation said for people (e.g. the tail of its stderr) when its case
    /// failed and the failure does not already show it.
    pub diagnostics: Option<String>,
    /// How the case was posed when that differs from its file, and why that shows the same
    /// (e.g. the cluster lane ran it without its seeded memory, which the core showed not to
    /// change the trace); `None`: as written.
    pub posed: Option<String>,
}

impl CaseResult {
    /// The result of `case`, begun at `started`, that ended so.
    pub fn of(
        case: &Case,
        outcome: Outcome,
        trace: Vec<TickTrace>,
        started: Instant,
        diagnostics: Option<String>,
    ) -> CaseResult {
        CaseResult {
            name: case.name().to_string(),
            title: case.file.title.clone(),
            file: case.path.display().to_string(),
            outcome,
            trace,
            alongside: Vec::new(),
            elapsed: started.elapsed(),
            diagnostics,
            posed: None,
        }
    }
}

/// The trace of an HPA reconciled beside the case's own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlongsideTrace {
    /// Its name.
    pub hpa: String,
    /// Its ticks.
    pub trace: Vec<TickTrace>,
}

/// One tick as the runner observed it: its trace line and everything the target did.
#[derive(Debug, Clone)]
pub struct TickRecord {
    /// The trace line.
    pub trace: TickTrace,
    /// What the target did.
    pub outcome: TickOutcome,
}

impl CaseResult {
    /// Passed.
    pub fn passed(&self) -> bool {
        self.outcome == Outcome::Passed
    }
}

/// Options for a run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Gates fixed on the command line: a case that assumes another value is skipped.
    pub fixed_gates: BTreeMap<String, bool>,
    /// The level cases are judged at (`--profile`); `None`: the highest the implementation
    /// supports ([`crate::profile`]).
    pub profile: Option<Profile>,
    /// Record each pod's state and samples at every tick in the trace's detail (`explain --pods`).
    pub pods: bool,
    /// The controller's flag values where a case's `settings` say nothing (`None`:
    /// [`Settings::default`]). Only the flag fields are read, not the gates, the release or the
    /// sync period; the test that each default is pinned by a case changes them.
    pub flag_defaults: Option<Settings>,
    /// The Kubernetes release judged (`--kubernetes-version`): its gate defaults, its
    /// behaviour on the core, the cases that hold for it and their expectations there.
    pub version: KubernetesVersion,
}

/// The settings a case runs with on a target, or why it must be skipped. Gates start at the
/// judged release's defaults (or the target's fixed gates), then the command line's
/// `--feature-gates`; a gate the case uses (declared or detected, see
/// [`crate::case::gates`]) takes the case's value unless the run fixes it otherwise, which skips
/// the case with the reason and the flag that runs it. Gates the case does not use never skip it.
pub fn resolve_settings(
    case: &Case,
    support: GateSupport,
    opts: &RunOptions,
) -> Result<Settings, String> {
    let version = opts.version;
    if let Some(why) = crate::case::versions::outside(case, version) {
        return Err(why);
    }
    for (name, used) in &case.gates {
        if !version.has_gate(name) {
            return Err(format!(
                "needs feature gate {name}={} ({}), which Kubernetes {version} does not have",
                used.value, used.because
            ));
        }
        if version.locks_gate(name) && version.default_gates().get(name) != Ok(used.value) {
            return Err(format!(
                "needs feature gate {name}={} ({}), but Kubernetes {version} locks it to {} (GA)",
                used.value, used.because, !used.value
            ));
        }
    }
    let mut gates = match support {
        GateSupport::PerCase => {
            let mut g = version.default_gates();
            for (name, v) in &opts.fixed_gates {
                g.set(name, *v).map_err(|e| e.to_string())?;
            }
            g
        }
        GateSupport::Fixed(g) => g,
    };
    for (name, used) in &case.gates {
        let want = used.value;
        let have = gates.get(name).map_err(|e| e.to_string())?;
        if have == want {
            continue;
        }
        match support {
            GateSupport::PerCase if !opts.fixed_gates.contains_key(name) => {
                gates.set(name, want).map_err(|e| e.to_string())?;
            }
            GateSupport::PerCase => {
                return Err(format!(
                    "needs feature gate {name}={want} ({}), but the run fixes {name}={have}; run it with --feature-gates {name}={want}",
                    used.because
                ));
            }
            GateSupport::Fixed(_) => {
                return Err(format!(
                    "needs feature gate {name}={want} ({}), but the target runs with {name}={have}",
                    used.because
                ));
            }
        }
    }
    let o = &case.file.settings;
    let d = opts.flag_defaults.clone().unwrap_or_default();
    let secs = |v: Option<u32>, default: Duration| {
        v.map_or(default, |s| Duration::from_secs(u64::from(s)))
    };
    Ok(Settings {
        sync_period: Duration::from_secs(u64::from(case.sync_period)),
        tolerance: o.tolerance.unwrap_or(d.tolerance),
        cpu_initialization_period: secs(
            o.cpu_initialization_period_seconds,
            d.cpu_initialization_period,
        ),
        initial_readiness_delay: secs(o.initial_readiness_delay_seconds, d.initial_readiness_delay),
        downscale_stabilization: secs(o.downscale_stabilization_seconds, d.downscale_stabilization),
        scale_up_limit_factor: o.scale_up_limit_factor.unwrap_or(d.scale_up_limit_factor),
        scale_up_limit_minimum: o.scale_up_limit_minimum.unwrap_or(d.scale_up_limit_minimum),
        gates,
        version,
    })
}

/// A failed check; its expected and actual texts are kept to
/// [`MAX_FAILURE_TEXT_BYTES`] each.
pub fn fail(
    t: Option<i64>,
    check: &str,
    expected: impl ToString,
    actual: impl ToString,
) -> Failure {
    let kept = |s: String| crate::util::text::clip_bytes(&s, MAX_FAILURE_TEXT_BYTES).unwrap_or(s);
    Failure {
        t,
        check: check.into(),
        expected: kept(expected.to_string()),
        actual: kept(actual.to_string()),
        hpa: None,
    }
}

fn same_quantity(
    expected: &str,
    actual: &Option<k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    as_written: bool,
) -> bool {
    if as_written {
        return actual.as_ref().is_some_and(|q| q.0 == expected);
    }
    match (
        parse_milli(expected),
        actual.as_ref().map(|q| parse_milli(&q.0)),
    ) {
        (Ok(e), Some(Ok(a))) => e == a,
        _ => false,
    }
}

fn quantity_text(q: &Option<k8s_openapi::apimachinery::pkg::api::resource::Quantity>) -> String {
    or_unset(q.as_ref().map(|q| q.0.as_str()))
}

fn check_metrics(
    t: i64,
    want: &[ExpectMetric],
    status: &HorizontalPodAutoscalerStatus,
    out: &mut Vec<Failure>,
) {
    let have: Vec<_> = status.current_metrics.iter().flatten().collect();
    if have.len() != want.len() {
        out.push(fail(
            Some(t),
            "currentMetrics (count)",
            want.len(),
            have.len(),
        ));
        return;
    }
    for (i, (w, h)) in want.iter().zip(have).enumerate() {
        let (name, current) = metric_current(h)
            .map(|(n, c)| (n, c.clone()))
            .unwrap_or_default();
        if let Some(m) = &w.metric
            && *m != name
        {
            out.push(fail(
                Some(t),
                &format!("currentMetrics[{i}].metric"),
                m,
                if name.is_empty() { "unset" } else { &name },
            ));
        }
        if let Some(u) = w.average_utilization
            && current.average_utilization != Some(u)
        {
            out.push(fail(
                Some(t),
                &format!("currentMetrics[{i}].averageUtilization"),
                u,
                or_unset(current.average_utilization),
            ));
        }
        if let Some(v) = &w.average_value
            && !same_quantity(v, &current.average_value, w.as_written)
        {
            out.push(fail(
                Some(t),
                &format!("currentMetrics[{i}].averageValue"),
                v,
                quantity_text(&current.average_value),
            ));
        }
        if let Some(v) = &w.value
            && !same_quantity(v, &current.value, w.as_written)
        {
            out.push(fail(
                Some(t),
                &format!("currentMetrics[{i}].value"),
                v,
                quantity_text(&current.value),
            ));
        }
    }
}

/// A `lastScaleTime` as a virtual second, `-1` (unset) shown as `unset`.
fn scale_time_text(t: i64) -> String {
    if t == -1 {
        "unset".into()
    } else {
        format!("t={t}")
    }
}

fn check_tick(x: &ExpectAt, t: i64, replicas: i32, outcome: &TickOutcome, out: &mut Vec<Failure>) {
    check_state(x, t, replicas, &outcome.status, out);
    check_events(x, t, &outcome.events, out);
    if let Some(want) = &x.memory {
        check_memory(want, t, outcome.memory.as_ref(), out);
    }
}

/// A memory's recommendations as `replicas@t`, in order.
fn recommendations_text(recs: &[hpa_reference::Recommendation]) -> String {
    let items: Vec<String> = recs
        .iter()
        .map(|r| format!("{}@{}", r.replicas, crate::world::virtual_secs(r.timestamp)))
        .collect();
    format!("[{}]", items.join(", "))
}

/// A memory's scale events as `change@t` (`(outdated)` when marked), in order.
fn events_text(events: &[hpa_reference::ScaleEvent]) -> String {
    let items: Vec<String> = events
        .iter()
        .map(|e| {
            format!(
                "{}@{}{}",
                e.change,
                crate::world::virtual_secs(e.timestamp),
                if e.outdated { " (outdated)" } else { "" }
            )
        })
        .collect();
    format!("[{}]", items.join(", "))
}

/// Checks `expect.at[].memory` against the memory the target reported after the tick.
fn check_memory(
    want: &crate::case::model::ExpectMemory,
    t: i64,
    have: Option<&hpa_reference::Memory>,
    out: &mut Vec<Failure>,
) {
    let Some(have) = have else {
        out.push(fail(
            Some(t),
            "memory",
            "the controller's memory",
            "not reported",
        ));
        return;
    };
    if let Some(recs) = &want.recommendations {
        let expected: Vec<hpa_reference::Recommendation> = recs
            .iter()
            .map(|r| hpa_reference::Recommendation {
                replicas: r.replicas,
                timestamp: crate::world::instant(r.at),
            })
            .collect();
        let actual = have.recommendations.as_deref().unwrap_or_default();
        if expected != actual {
            out.push(fail(
                Some(t),
                "memory.recommendations",
                recommendations_text(&expected),
                recommendations_text(actual),
            ));
        }
    }
    let lists = [
        (
            "memory.scaleUpEvents",
            &want.scale_up_events,
            &have.scale_up_events,
        ),
        (
            "memory.scaleDownEvents",
            &want.scale_down_events,
            &have.scale_down_events,
        ),
    ];
    for (check, want, actual) in lists {
        let Some(want) = want else { continue };
        let expected: Vec<hpa_reference::ScaleEvent> = want
            .iter()
            .map(|e| hpa_reference::ScaleEvent {
                change: e.change,
                timestamp: crate::world::instant(e.at),
                outdated: e.outdated,
            })
            .collect();
        if &expected != actual {
            out.push(fail(
                Some(t),
                check,
                events_text(&expected),
                events_text(actual),
            ));
        }
    }
}

/// Checks an expectation's state part (replicas, status fields, conditions, currentMetrics)
/// against the scale target's replicas and the HPA status at one instant.
pub fn check_state(
    x: &ExpectAt,
    t: i64,
    replicas: i32,
    s: &HorizontalPodAutoscalerStatus,
    out: &mut Vec<Failure>,
) {
    if let Some(r) = x.replicas
        && r != replicas
    {
        out.push(fail(Some(t), "replicas", r, replicas));
    }
    if let Some(d) = x.desired_replicas
        && d != s.desired_replicas
    {
        out.push(fail(
            Some(t),
            "status.desiredReplicas",
            d,
            s.desired_replicas,
        ));
    }
    if let Some(c) = x.current_replicas
        && Some(c) != s.current_replicas
    {
        out.push(fail(
            Some(t),
            "status.currentReplicas",
            c,
            or_unset(s.current_replicas),
        ));
    }
    if let Some(g) = x.observed_generation {
        let actual = s.observed_generation.unwrap_or(-1);
        if actual != g {
            let shown = |g: i64| {
                if g < 0 {
                    "unset".to_string()
                } else {
                    g.to_string()
                }
            };
            out.push(fail(
                Some(t),
                "status.observedGeneration",
                shown(g),
                shown(actual),
            ));
        }
    }
    if let Some(l) = x.last_scale_time {
        let actual = s
            .last_scale_time
            .as_ref()
            .map(|ts| crate::world::virtual_secs(hpa_reference::time::core_time(ts)))
            .unwrap_or(-1);
        if actual != l {
            out.push(fail(
                Some(t),
                "status.lastScaleTime",
                scale_time_text(l),
                scale_time_text(actual),
            ));
        }
    }
    let have_conditions = s.conditions.as_deref().unwrap_or_default();
    if x.exact_conditions == Some(true) {
        let want: Vec<&str> = x
            .conditions
            .iter()
            .flatten()
            .map(|c| c.type_.as_str())
            .collect();
        let have: Vec<&str> = have_conditions.iter().map(|h| h.type_.as_str()).collect();
        if want != have {
            out.push(fail(
                Some(t),
                "condition",
                format!("exactly [{}]", want.join(", ")),
                format!("[{}]", have.join(", ")),
            ));
        }
    }
    for ty in x.absent_conditions.iter().flatten() {
        if let Some(h) = have_conditions.iter().find(|h| &h.type_ == ty) {
            out.push(fail(
                Some(t),
                "condition",
                format!("{ty} absent"),
                format!(
                    "{}={}/{}",
                    h.type_,
                    h.status,
                    h.reason.as_deref().unwrap_or("")
                ),
            ));
        }
    }
    for c in x.conditions.iter().flatten() {
        let found = have_conditions.iter().find(|h| h.type_ == c.type_);
        let ok = found.is_some_and(|h| {
            h.status == c.status
                && c.reason
                    .as_ref()
                    .is_none_or(|r| h.reason.as_ref() == Some(r))
        });
        if let Some(h) = found.filter(|_| ok) {
            let message = h.message.as_deref().unwrap_or("");
            let matches = c.message.as_deref().is_none_or(|m| m == message)
                && c.message_contains
                    .as_deref()
                    .is_none_or(|m| message.contains(m));
            if !matches {
                let want = match (&c.message, &c.message_contains) {
                    (Some(m), _) => format!("{} message {m:?}", c.type_),
                    // Only a stated message can fail to match.
                    (None, m) => format!(
                        "{} message containing {:?}",
                        c.type_,
                        m.as_deref().unwrap_or_default()
                    ),
                };
                let shown = crate::util::text::clip_bytes(message, MAX_FAILURE_TEXT_BYTES)
                    .unwrap_or_else(|| message.to_string());
                out.push(fail(Some(t), "condition", want, format!("{shown:?}")));
            }
        }
        if !ok {
            let want = format!(
                "{}={}/{}",
                c.type_,
                c.status,
                c.reason.as_deref().unwrap_or("*")
            );
            let have = found.map_or("absent".to_string(), |h| {
                format!(
                    "{}={}/{}",
                    h.type_,
                    h.status,
                    h.reason.as_deref().unwrap_or("")
                )
            });
            out.push(fail(Some(t), "condition", want, have));
        }
    }
    if let Some(m) = &x.current_metrics {
        check_metrics(t, m, s, out);
    }
}

/// Checks an expectation's events: exactly these, in this order. A failure lists at most
/// [`MAX_ITEMS_PER_TICK`] of the events sent, and how many there were in all when more.
pub fn check_events(x: &ExpectAt, t: i64, have: &[Event], out: &mut Vec<Failure>) {
    if let Some(events) = &x.events {
        let ok = events.len() == have.len()
            && events
                .iter()
                .zip(have)
                .all(|(w, h)| w.matches(h.type_.as_str(), &h.reason, &h.message));
        if !ok {
            let want: Vec<String> = events.iter().map(|e| e.describe()).collect();
            let mut shown: Vec<String> = have
                .iter()
                .take(MAX_ITEMS_PER_TICK)
                .map(|e| {
                    let text = format!("{} {}: {}", e.type_.as_str(), e.reason, e.message);
                    crate::util::text::clip_bytes(&text, crate::kept::MAX_TEXT_BYTES)
                        .unwrap_or(text)
                })
                .collect();
            if have.len() > MAX_ITEMS_PER_TICK {
                shown.push(format!("… ({} events in all)", have.len()));
            }
            out.push(fail(Some(t), "events", list(&want), list(&shown)));
        }
    }
}

/// The distinct successive replica counts of a trace, starting with the initial one.
pub fn trajectory(trace: &[TickTrace]) -> Vec<i32> {
    let mut out: Vec<i32> = Vec::new();
    for tick in trace {
        for r in [tick.replicas_before, tick.replicas] {
            if out.last() != Some(&r) {
                out.push(r);
            }
        }
    }
    out
}

/// Checks a case's expectations against the ticks a run recorded ([`Checker`] over them).
pub fn check_expectations(expect: &Expectations, ticks: &[TickRecord]) -> Vec<Failure> {
    let mut checker = Checker::new(expect);
    for r in ticks {
        checker.tick(r.trace.t, r.trace.replicas, &r.outcome);
    }
    let trace: Vec<TickTrace> = ticks.iter().map(|r| r.trace.clone()).collect();
    checker.finish(&trace)
}

/// A case's expectations, checked tick by tick as the ticks run, so that no target's answer is
/// kept past its tick. Every expectation is checked: one whose tick never ran fails (`never
/// reached`). Failures come in time order, the whole-run checks (trajectory, final replicas)
/// last.
#[derive(Debug)]
pub struct Checker<'a> {
    expect: &'a Expectations,
    /// `expect.at` in time order, each with its failures once its tick ran.
    at: Vec<(&'a ExpectAt, Option<Vec<Failure>>)>,
    /// The first and the last tick that ran.
    ran: Option<(i64, i64)>,
}

impl<'a> Checker<'a> {
    /// Nothing checked yet.
    pub fn new(expect: &'a Expectations) -> Self {
        let mut at: Vec<(&ExpectAt, Option<Vec<Failure>>)> =
            expect.at.iter().map(|x| (x, None)).collect();
        at.sort_by_key(|(x, _)| x.t);
        Checker {
            expect,
            at,
            ran: None,
        }
    }

    /// Checks the expectations at `t` (the first tick at that time) against what the target did
    /// and the replicas after it.
    pub fn tick(&mut self, t: i64, replicas: i32, outcome: &TickOutcome) {
        self.ran = Some(self.ran.map_or((t, t), |(first, _)| (first, t)));
        for (x, found) in &mut self.at {
            if found.is_none() && i64::from(x.t) == t {
                let mut failures = Vec::new();
                check_tick(x, t, replicas, outcome, &mut failures);
                *found = Some(failures);
            }
        }
    }

    /// The failures: those of the ticks, the expectations never reached, then the whole-run
    /// checks on the case's `trace`.
    pub fn finish(self, trace: &[TickTrace]) -> Vec<Failure> {
        let mut failures = Vec::new();
        for (x, found) in self.at {
            match found {
                Some(f) => failures.extend(f),
                None => {
                    let t = i64::from(x.t);
                    let ran = match self.ran {
                        Some((a, b)) => format!("ticks ran from t={a} to t={b}"),
                        None => "no tick ran".into(),
                    };
                    failures.push(fail(
                        Some(t),
                        "expectation",
                        format!("a tick at t={t}"),
                        format!("never reached ({ran})"),
                    ));
                }
            }
        }
        if let Some(want) = &self.expect.trajectory {
            let have = trajectory(trace);
            if &have != want {
                failures.push(fail(None, "trajectory", list(want), list(&have)));
            }
        }
        if let Some(want) = self.expect.final_replicas
            && Some(want) != trace.last().map(|x| x.replicas)
        {
            failures.push(fail(
                None,
                "final replicas",
                want,
                trace
                    .last()
                    .map_or_else(|| "no tick ran".to_string(), |x| x.replicas.to_string()),
            ));
        }
        failures
    }
}

/// Why a case expecting a rejected manifest is skipped on a controller.
pub const REJECTED_SKIP: &str = "the API server rejects this HPA before any controller sees it: a rejection is checked on API validation (the core target, a cluster), not on an implementation";

/// `expect.rejected` on the reference's API validation: `None` when the HPA is rejected with a
/// message containing `want`.
fn check_rejected(case: &Case, want: &str, settings: &Settings) -> Option<Failure> {
    let errors = hpa_reference::validation::validate_hpa(
        &case.hpa,
        hpa_reference::validation::ValidationOptions::with_gates(settings.version, &settings.gates),
    );
    let name = case.hpa.metadata.name.as_deref().unwrap_or_default();
    let have = hpa_reference::validation::invalid_message(name, &errors);
    if errors.is_empty() {
        Some(fail(None, "rejected", want, "accepted"))
    } else if !have.contains(want) {
        Some(fail(None, "rejected", want, have))
    } else {
        None
    }
}

/// A case's world, tick by tick: applies the timeline's entries as they fall due, advances the
/// world, and hands it to `tick` at each sync period from t = 0 to the case's duration (`tick`
/// takes the snapshot, asks the target or targets, and applies the outcome). Stops early when
/// `tick` breaks, with what it broke with.
pub(crate) fn drive<B>(
    case: &Case,
    settings: &Settings,
    mut tick: impl FnMut(&mut World, i64) -> ControlFlow<B>,
) -> ControlFlow<B> {
    drive_all(&[case], settings, |_, worlds, t| tick(&mut worlds[0], t))
}

/// [`drive`] for several HPAs in one namespace (a case and its `alongside`, loaded as cases):
/// a world each, all advanced to each tick's time, then handed to `tick` one by one, in order,
/// with the index of the one whose turn it is.
pub(crate) fn drive_all<B>(
    cases: &[&Case],
    settings: &Settings,
    mut tick: impl FnMut(usize, &mut [World], i64) -> ControlFlow<B>,
) -> ControlFlow<B> {
    let Some(first) = cases.first() else {
        return ControlFlow::Continue(());
    };
    let mut worlds: Vec<World> = cases
        .iter()
        .map(|c| World::new(c).for_release(settings))
        .collect();
    let timelines: Vec<Vec<&crate::case::model::TimelineEntry>> = cases
        .iter()
        .map(|c| {
            let mut timeline: Vec<_> = c.file.timeline.iter().collect();
            timeline.sort_by_key(|e| e.at);
            timeline
        })
        .collect();
    let mut applied = vec![0usize; cases.len()];
    let period = i64::from(first.sync_period);
    let mut t = 0i64;
    while t <= i64::from(first.duration) {
        for (i, world) in worlds.iter_mut().enumerate() {
            let timeline = &timelines[i];
            while applied[i] < timeline.len() && i64::from(timeline[applied[i]].at) <= t {
                world.apply(timeline[applied[i]], t);
                applied[i] += 1;
            }
            world.advance(t);
        }
        for i in 0..worlds.len() {
            tick(i, &mut worlds, t)?;
        }
        t += period;
    }
    ControlFlow::Continue(())
}

/// Runs one case on a target.
pub fn run_case(case: &Case, target: &dyn Target, opts: &RunOptions) -> CaseResult {
    run_case_judged(case, target, opts).0
}

thread_local! {
    /// The implementation that answered the last case started on this thread (see
    /// [`last_implementation`]).
    static LAST_IMPLEMENTATION: std::cell::RefCell<Option<String>> =
        const { std::cell::RefCell::new(None) };
}

/// Who answered (`name version` from `hello`) in the last case this thread started on an
/// implementation that says it; for conformance statements.
pub fn last_implementation() -> Option<String> {
    LAST_IMPLEMENTATION.with(|w| w.borrow().clone())
}

/// Runs one case on a target and says at which profile it was judged (`None` when it never
/// started: skipped before its implementation answered). Failures of checks above that profile
/// are not compared.
pub fn run_case_judged(
    case: &Case,
    target: &dyn Target,
    opts: &RunOptions,
) -> (CaseResult, Option<Profile>) {
    let started = Instant::now();
    let result = |outcome, trace: Vec<TickTrace>, diagnostics: Option<String>| {
        // An error and the diagnostics carry what the target said: kept to a bound too.
        let outcome = match outcome {
            Outcome::Errored(e) => Outcome::Errored(kept_error(e)),
            o => o,
        };
        CaseResult::of(case, outcome, trace, started, diagnostics.map(kept_error))
    };
    let case = match crate::case::versions::at_version(case, opts.version) {
        Ok(c) => c,
        Err(reason) => return (result(Outcome::Skipped(reason), Vec::new(), None), None),
    };
    let case: &Case = &case;
    let settings = match resolve_settings(case, target.gate_support(), opts) {
        Ok(s) => s,
        Err(reason) => return (result(Outcome::Skipped(reason), Vec::new(), None), None),
    };
    if let Some(want) = &case.file.expect.rejected {
        let outcome = if target.checks_api_validation() {
            match check_rejected(case, want, &settings) {
                None => Outcome::Passed,
                Some(f) => Outcome::Failed(vec![f]),
            }
        } else {
            Outcome::Skipped(REJECTED_SKIP.to_string())
        };
        return (result(outcome, Vec::new(), None), None);
    }
    let mut session = match target.start(case, &settings) {
        Ok(s) => s,
        Err(e) if e.skip => return (result(Outcome::Skipped(e.message), Vec::new(), None), None),
        Err(e) => return (result(Outcome::Errored(e.message), Vec::new(), None), None),
    };
    if let Some(who) = session.implementation() {
        LAST_IMPLEMENTATION.with(|w| *w.borrow_mut() = Some(who));
    }
    let supported = session.highest_level();
    let profile = opts.profile.unwrap_or(supported);
    if profile > supported {
        let why = format!(
            "the run judges at profile {profile}, but the implementation declares levels up to {supported} (hello.levels); run it with --profile {supported}"
        );
        return (
            result(Outcome::Skipped(why), Vec::new(), None),
            Some(profile),
        );
    }
    let judged = Some(profile);
    if profile < Profile::Status
        && case.file.timeline.iter().any(|e| {
            e.scale_api
                .as_ref()
                .is_some_and(|s| s.update_failures.is_some())
        })
    {
        let why = format!(
            "scaleApi.updateFailures counts failed rescales by the AbleToScale=False/FailedUpdateScale condition, which an implementation judged at profile {profile} does not report; run it at --profile status"
        );
        return (result(Outcome::Skipped(why), Vec::new(), None), judged);
    }
    let cases: Vec<&Case> = std::iter::once(case).chain(&case.members).collect();
    let several = cases.len() > 1;
    // Each HPA's expectations are checked as its ticks run; only the traces are kept, within
    // the case's budget for what the target says.
    let mut checkers: Vec<Checker> = cases.iter().map(|c| Checker::new(&c.file.expect)).collect();
    let mut traces: Vec<Vec<TickTrace>> = vec![Vec::new(); cases.len()];
    let ticks = (u64::from(case.duration) / u64::from(case.sync_period.max(1)) + 1)
        .saturating_mul(cases.len() as u64);
    let mut budget = Budget::for_ticks(usize::try_from(ticks).unwrap_or(usize::MAX));
    let stopped = drive_all(&cases, &settings, |i, worlds, t| {
        let world = &mut worlds[i];
        let before = world.replicas();
        let pods = world.pod_counts(t);
        let mut snapshot = world.snapshot(t);
        if several {
            // Every HPA sees the namespace's pods; its selector picks its own.
            let all: Vec<_> = worlds.iter_mut().flat_map(|w| w.pods(t).to_vec()).collect();
            snapshot.pods = std::sync::Arc::new(all);
        }
        let world = &mut worlds[i];
        let outcome = match session.tick(&snapshot) {
            Ok(o) => o,
            // The target's message already carries its diagnostics.
            Err(e) => return ControlFlow::Break((Outcome::Errored(e.message), None)),
        };
        if let Err(e) = world.apply_outcome(outcome.scaled_to, outcome.status.clone(), t) {
            return ControlFlow::Break((
                Outcome::Errored(format!("at t={t}: {e}")),
                session.diagnostics(),
            ));
        }
        let after = world.replicas();
        checkers[i].tick(t, after, &outcome);
        let mut trace = tick_trace(t, before, after, pods, &outcome);
        budget.charge(&mut trace);
        if opts.pods {
            trace.detail.pods = crate::run::podstate::pod_states(&snapshot);
        }
        traces[i].push(trace);
        ControlFlow::Continue(())
    });
    let mut members = traces.split_off(1);
    let trace = traces.pop().unwrap_or_default();
    let alongside = |members: &mut Vec<Vec<TickTrace>>| -> Vec<AlongsideTrace> {
        case.members
            .iter()
            .zip(members.drain(..))
            .map(|(m, trace)| AlongsideTrace {
                hpa: hpa_name(m),
                trace,
            })
            .collect()
    };
    if let ControlFlow::Break((outcome, diagnostics)) = stopped {
        let mut r = result(outcome, trace, diagnostics);
        r.alongside = alongside(&mut members);
        return (r, judged);
    }
    let finished = session.finish();
    let diagnostics = session.diagnostics();
    let (finish_check, finish_expected) = session.finish_check();
    drop(session);
    let mut checkers = checkers.into_iter();
    let mut failures = checkers
        .next()
        .map(|c| c.finish(&trace))
        .unwrap_or_default();
    failures.retain(|f| Profile::of_check(&f.check) <= profile);
    for ((m, checker), member) in case.members.iter().zip(checkers).zip(&members) {
        let name = hpa_name(m);
        for mut f in checker.finish(member) {
            if Profile::of_check(&f.check) <= profile {
                f.hpa = Some(name.clone());
                failures.push(f);
            }
        }
    }
    if let Err(e) = finished {
        failures.push(fail(None, &finish_check, finish_expected, e.message));
    }
    let outcome = if failures.is_empty() {
        Outcome::Passed
    } else {
        Outcome::Failed(failures)
    };
    let diagnostics = diagnostics.filter(|_| !matches!(outcome, Outcome::Passed));
    let mut r = result(outcome, trace, diagnostics);
    r.alongside = alongside(&mut members);
    (r, judged)
}

/// An error or diagnostics text, kept to [`MAX_ERROR_BYTES`].
fn kept_error(text: String) -> String {
    crate::util::text::clip_bytes(&text, MAX_ERROR_BYTES).unwrap_or(text)
}

/// The name of a case's HPA.
fn hpa_name(case: &Case) -> String {
    case.file.hpa.metadata.name.clone().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::autoscaling::v2::{
        HorizontalPodAutoscalerCondition, HorizontalPodAutoscalerStatus,
    };

    use super::check_state;
    use crate::case::model::{ExpectAt, ExpectCondition};

    fn status(conditions: &[(&str, &str, &str, &str)]) -> HorizontalPodAutoscalerStatus {
        HorizontalPodAutoscalerStatus {
            conditions: Some(
                conditions
                    .iter()
                    .map(
                        |(ty, st, reason, message)| HorizontalPodAutoscalerCondition {
                            type_: (*ty).into(),
                            status: (*st).into(),
                            reason: Some((*reason).into()),
                            message: Some((*message).into()),
                            last_transition_time: None,
                            observed_generation: None,
                        },
                    )
                    .collect(),
            ),
            ..Default::default()
        }
    }

    fn cond(ty: &str, message: Option<&str>, contains: Option<&str>) -> ExpectCondition {
        ExpectCondition {
            type_: ty.into(),
            status: "True".into(),
            reason: None,
            message: message.map(Into::into),
            message_contains: contains.map(Into::into),
        }
    }

    /// The failures' (check, expected) for an expectation against a status with AbleToScale and
    /// ScalingActive, in that order.
    fn failures(x: ExpectAt) -> Vec<String> {
        let s = status(&[
            (
                "AbleToScale",
                "True",
                "ReadyForNewScale",
                "recommended size matches current size",
            ),
            (
                "ScalingActive",
                "True",
                "ValidMetricFound",
                "the HPA was able to …",
            ),
        ]);
        let mut out = Vec::new();
        check_state(&x, 0, 1, &s, &mut out);
        out.into_iter().map(|f| f.expected).collect()
    }

    #[test]
    fn a_rejected_manifest_is_checked_on_validation_and_skipped_on_controllers() {
        use crate::run::{Outcome, REJECTED_SKIP, RunOptions, run_case};
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../cases/docs/docs-max-replicas-required.yaml");
        let mut case = crate::case::load_case(&path).expect("a corpus case");
        let opts = RunOptions::default();
        let core = crate::targets::CoreTarget;
        assert!(matches!(
            run_case(&case, &core, &opts).outcome,
            Outcome::Passed
        ));
        // Another message, or a valid HPA: failed.
        case.file.expect.rejected = Some("must be greater than 1".into());
        assert!(matches!(
            run_case(&case, &core, &opts).outcome,
            Outcome::Failed(_)
        ));
        case.file.expect.rejected = Some("must be greater than 0".into());
        case.hpa.spec.max_replicas = 3;
        let Outcome::Failed(f) = run_case(&case, &core, &opts).outcome else {
            panic!("a valid HPA must fail the case");
        };
        assert_eq!(f[0].actual, "accepted");
        // A controller never sees it.
        struct Controller;
        impl crate::targets::Target for Controller {
            fn name(&self) -> String {
                "controller".into()
            }
            fn gate_support(&self) -> crate::targets::GateSupport {
                crate::targets::GateSupport::PerCase
            }
            fn start(
                &self,
                _: &crate::case::Case,
                _: &hpa_reference::Settings,
            ) -> Result<Box<dyn crate::targets::Session>, crate::targets::TargetError> {
                panic!("a rejected HPA must not start a session")
            }
        }
        match run_case(&case, &Controller, &opts).outcome {
            Outcome::Skipped(why) => assert_eq!(why, REJECTED_SKIP),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn condition_messages_absence_and_the_exact_list() {
        let at = |conditions: Vec<ExpectCondition>, exact: bool, absent: &[&str]| ExpectAt {
            conditions: Some(conditions),
            exact_conditions: exact.then_some(true),
            absent_conditions: Some(absent.iter().map(|a| (*a).to_string()).collect()),
            ..Default::default()
        };
        let able = |m, c| cond("AbleToScale", m, c);
        let active = cond("ScalingActive", None, Some("able to"));
        // All hold.
        let ok = at(
            vec![
                able(Some("recommended size matches current size"), None),
                active.clone(),
            ],
            true,
            &["ScalingLimited"],
        );
        assert_eq!(failures(ok), Vec::<String>::new());
        // A wrong exact message, a missing substring.
        assert_eq!(
            failures(at(vec![able(Some("recommended size"), None)], false, &[])),
            ["AbleToScale message \"recommended size\""]
        );
        assert_eq!(
            failures(at(vec![able(None, Some("scale to 6"))], false, &[])),
            ["AbleToScale message containing \"scale to 6\""]
        );
        // Present though expected absent.
        assert_eq!(
            failures(at(vec![], false, &["ScalingActive"])),
            ["ScalingActive absent"]
        );
        // The exact list: order and completeness.
        assert_eq!(
            failures(at(vec![active.clone(), able(None, None)], true, &[])),
            ["exactly [ScalingActive, AbleToScale]"]
        );
        assert_eq!(
            failures(at(vec![able(None, None)], true, &[])),
            ["exactly [AbleToScale]"]
        );
    }
}
