//! A case's expectations over what was observed in real time. The checks are the virtual-time
//! runner's own (`runner::check_state`, the trajectory and final-replicas rules); only *when*
//! differs: an expectation at t holds if some sample within ±`tolerance` case seconds of t meets
//! it (the controller ticks on its own schedule, one sync period apart), and an expected event
//! must have been recorded within that window. Trajectories compare as sequences of distinct
//! values, exactly.

use hpa_reference::Event;
use hpa_reference::conditions::core_time;

use super::lane::{Observed, Sample};
use crate::case::Case;
use crate::case::model::ExpectAt;
use crate::runner::{Failure, check_state, fail};
use crate::target::TickOutcome;
use crate::trace::{TickTrace, tick_trace};
use crate::world::virtual_secs;

/// The distinct successive replica counts, starting with the initial one.
pub fn trajectory(observed: &Observed) -> Vec<i32> {
    let mut out = vec![observed.initial];
    for s in &observed.samples {
        if out.last() != Some(&s.replicas) {
            out.push(s.replicas);
        }
    }
    out
}

fn event_matches(want: &crate::case::model::ExpectEvent, have: &Event) -> bool {
    want.reason == have.reason
        && want
            .type_
            .as_ref()
            .is_none_or(|ty| ty == have.type_.as_str())
        && want
            .message_contains
            .as_ref()
            .is_none_or(|m| have.message.contains(m.as_str()))
}

fn check_at(x: &ExpectAt, observed: &Observed, tolerance: f64, out: &mut Vec<Failure>) {
    let t = i64::from(x.t);
    let near: Vec<&Sample> = observed
        .samples
        .iter()
        .filter(|s| (s.t - t as f64).abs() <= tolerance)
        .collect();
    if near.is_empty() {
        out.push(fail(
            Some(t),
            "observation",
            format!("a sample within ±{tolerance:.0} s"),
            "none (the run ended or the cluster did not answer)",
        ));
        return;
    }
    // The state part without lastScaleTime (checked with the tolerance below).
    let mut state = x.clone();
    state.events = None;
    let last_scale = state.last_scale_time.take();
    let mut best: Option<Vec<Failure>> = None;
    for s in &near {
        let mut f = Vec::new();
        check_state(&state, t, s.replicas, &s.status, &mut f);
        if let Some(l) = last_scale {
            let actual = s
                .status
                .last_scale_time
                .as_ref()
                .map(|ts| virtual_secs(core_time(ts)));
            // -1: never scaled (unset), as in the virtual-time checks.
            let ok = match actual {
                None => l == -1,
                Some(a) => l != -1 && ((a - l) as f64).abs() <= tolerance,
            };
            if !ok {
                f.push(fail(
                    Some(t),
                    "status.lastScaleTime",
                    if l == -1 {
                        "unset".to_string()
                    } else {
                        format!("{l} (±{tolerance:.0} s)")
                    },
                    actual.map_or("unset".to_string(), |a| a.to_string()),
                ));
            }
        }
        if f.is_empty() {
            best = Some(f);
            break;
        }
        if best.as_ref().is_none_or(|b| f.len() < b.len()) {
            best = Some(f);
        }
    }
    out.extend(best.unwrap_or_default());
    if let Some(events) = &x.events {
        let seen: Vec<&Event> = observed
            .events
            .iter()
            .filter(|o| (o.t - t as f64).abs() <= tolerance)
            .map(|o| &o.event)
            .collect();
        for w in events {
            if !seen.iter().any(|h| event_matches(w, h)) {
                out.push(fail(
                    Some(t),
                    "event",
                    format!(
                        "{} {}{} within ±{tolerance:.0} s",
                        w.type_.as_deref().unwrap_or("*"),
                        w.reason,
                        w.message_contains
                            .as_ref()
                            .map_or(String::new(), |m| format!(" containing {m:?}"))
                    ),
                    if seen.is_empty() {
                        "no events".to_string()
                    } else {
                        seen.iter()
                            .map(|e| format!("{} {}: {}", e.type_.as_str(), e.reason, e.message))
                            .collect::<Vec<_>>()
                            .join("; ")
                    },
                ));
            }
        }
    }
}

/// Checks every expectation of the case; the failures (none: passed).
pub fn check(case: &Case, observed: &Observed, tolerance: f64) -> Vec<Failure> {
    let mut out = Vec::new();
    for x in &case.file.expect.at {
        check_at(x, observed, tolerance, &mut out);
    }
    if let Some(want) = &case.file.expect.trajectory {
        let have = trajectory(observed);
        if &have != want {
            out.push(fail(
                None,
                "trajectory",
                format!("{want:?}"),
                format!("{have:?}"),
            ));
        }
    }
    if let Some(want) = case.file.expect.final_replicas {
        let have = observed.samples.last().map(|s| s.replicas);
        if have != Some(want) {
            out.push(fail(
                None,
                "final replicas",
                want,
                have.map_or("no sample".to_string(), |h| h.to_string()),
            ));
        }
    }
    out
}

/// The observation as a trace for reports: a row where anything the controller wrote changed,
/// with the events seen since the previous row.
pub fn trace(observed: &Observed) -> Vec<TickTrace> {
    let mut out: Vec<TickTrace> = Vec::new();
    let mut before = observed.initial;
    let mut ev = 0;
    for s in &observed.samples {
        let t = s.t.round() as i64;
        let mut events = Vec::new();
        while ev < observed.events.len() && observed.events[ev].t <= s.t {
            events.push(observed.events[ev].event.clone());
            ev += 1;
        }
        let outcome = TickOutcome {
            scaled_to: None,
            status: s.status.clone(),
            events,
            explanation: None,
        };
        let row = tick_trace(t, before, s.replicas, s.pods, &outcome);
        let changed = out.last().is_none_or(|last| {
            last.replicas != row.replicas
                || last.desired != row.desired
                || last.current != row.current
                || last.conditions != row.conditions
                || last.metrics != row.metrics
                || !row.events.is_empty()
        });
        if changed {
            out.push(row);
        }
        before = s.replicas;
    }
    out
}
