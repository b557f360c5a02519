//! A case's expectations over what was observed in real time. The checks are the virtual-time
//! runner's own (`runner::check_state`, the trajectory and final-replicas rules); only *when*
//! differs. Trajectories compare as sequences of distinct values, exactly. Timing is checked per
//! decision, not on an absolute clock: each change of the replica count must come within
//! ±`tolerance` (one sync period plus the margin) of when it comes in virtual time *after the
//! previous change* — a real controller's decisions can each be a sync period late (its scale
//! events are stamped after its reconcile started, its windows end between two reconciles), and
//! those delays add up over a walk-down — or after any earlier change, or the case's start (a
//! stabilization window's end is timed by an earlier reconcile, not by a late first rescale).
//! An expectation at t is then checked on the samples within
//! ±`tolerance` of t shifted by the lateness of the last change before t, and an expected event
//! must have been recorded in that window.

use hpa_reference::Event;
use hpa_reference::time::core_time;

use super::lane::{Observed, Sample};
use crate::case::Case;
use crate::case::model::ExpectAt;
use crate::run::trace::{TickTrace, tick_trace};
use crate::run::{Failure, check_state, fail};
use crate::targets::TickOutcome;
use crate::world::{EPOCH_SECS, virtual_secs};

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
    want.matches(have.type_.as_str(), &have.reason, &have.message)
}

/// When the replica count changed: (case seconds, new count).
fn changes_virtual(trace: &[TickTrace]) -> Vec<(f64, i32)> {
    trace
        .iter()
        .filter(|r| r.replicas != r.replicas_before)
        .map(|r| (r.t as f64, r.replicas))
        .collect()
}

/// When the replica count changed on the cluster: (case seconds, new count). The lane sees a
/// change at its next sample, which on a loaded machine can come seconds after the controller's
/// write; where the sample's status stamps the change (`lastScaleTime` moved past the previous
/// sample, `desiredReplicas` the new count), the change is dated by the stamp's end instead:
/// `lastScaleTime` is whole real seconds, so the write came within `stamp_width` case seconds
/// (the time scale) after it — the latest moment both the stamp and the sample allow.
fn changes_observed(observed: &Observed, stamp_width: f64) -> Vec<(f64, i32)> {
    let mut out = Vec::new();
    let mut last = observed.initial;
    let mut previous_t = f64::NEG_INFINITY;
    for s in &observed.samples {
        if s.replicas != last {
            let stamped = s
                .status
                .last_scale_time
                .as_ref()
                .filter(|_| s.status.desired_replicas == s.replicas)
                .map(|ls| (core_time(ls).as_micros() - EPOCH_SECS * 1_000_000) as f64 / 1e6)
                .filter(|ls| *ls + stamp_width > previous_t && *ls <= s.t);
            let t = stamped.map_or(s.t, |ls| s.t.min(ls + stamp_width));
            out.push((t, s.replicas));
            last = s.replicas;
        }
        previous_t = s.t;
    }
    out
}

/// How late each change of the virtual trace came on the cluster (matched in order while the
/// counts agree), and the failures of changes that came too late or too early.
///
/// A change is on time when its lateness is within `tolerance` of the lateness of an *anchor*:
/// the case's start (0) or any earlier change. A real controller's decision is timed by one
/// earlier moment the lane cannot see — the previous rescale (a walk-down, where delays add up),
/// or a recommendation recorded at an earlier reconcile (a stabilization window's end), or the
/// case's start — so a late *first* reconcile must not move a window that ends 300 s after a
/// reconcile that came on time.
fn lateness(
    virtual_changes: &[(f64, i32)],
    observed_changes: &[(f64, i32)],
    tolerance: f64,
    out: &mut Vec<Failure>,
) -> Vec<(f64, f64)> {
    let mut lags: Vec<(f64, f64)> = Vec::new();
    for ((tv, rv), (to, ro)) in virtual_changes.iter().zip(observed_changes) {
        if rv != ro {
            break;
        }
        let lag = to - tv;
        let anchored = std::iter::once(0.0)
            .chain(lags.iter().map(|(_, l)| *l))
            .any(|anchor| (lag - anchor).abs() <= tolerance);
        if !anchored {
            let previous = lags.last().map_or(0.0, |(_, l)| *l);
            let anchors = std::iter::once(0.0)
                .chain(lags.iter().map(|(_, l)| *l))
                .map(|l| format!("{l:+.0}"))
                .collect::<Vec<_>>()
                .join(", ");
            out.push(fail(
                Some(tv.round() as i64),
                "timing",
                format!(
                    "→{rv} within ±{tolerance:.0} s of t={:.0} (its virtual time, shifted by the previous change's lateness {previous:+.0} s; or by another earlier lateness: {anchors})",
                    tv + previous
                ),
                format!("at t={to:.0}"),
            ));
        }
        lags.push((*tv, lag));
    }
    lags
}

/// The lateness that applies at case second `t`: that of the last change at or before t.
fn shift_at(lags: &[(f64, f64)], t: f64) -> f64 {
    lags.iter()
        .take_while(|(tv, _)| *tv <= t)
        .last()
        .map_or(0.0, |(_, lag)| *lag)
}

fn check_at(
    x: &ExpectAt,
    observed: &Observed,
    tolerance: f64,
    lags: &[(f64, f64)],
    out: &mut Vec<Failure>,
) {
    let t = i64::from(x.t);
    let shift = shift_at(lags, t as f64);
    let centre = t as f64 + shift;
    let near: Vec<&Sample> = observed
        .samples
        .iter()
        .filter(|s| (s.t - centre).abs() <= tolerance)
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
                Some(a) => {
                    l != -1 && (a as f64 - (l as f64 + shift_at(lags, l as f64))).abs() <= tolerance
                }
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
            .filter(|o| (o.t - centre).abs() <= tolerance)
            .map(|o| &o.event)
            .collect();
        for w in events {
            if !seen.iter().any(|h| event_matches(w, h)) {
                out.push(fail(
                    Some(t),
                    "event",
                    format!("{} within ±{tolerance:.0} s", w.describe()),
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

/// The lateness of each observed change against the virtual trace ([`lateness`]), failures of
/// timing into `out`.
fn lags_of(
    observed: &Observed,
    virtual_trace: &[TickTrace],
    tolerance: f64,
    time_scale: u32,
    out: &mut Vec<Failure>,
) -> Vec<(f64, f64)> {
    lateness(
        &changes_virtual(virtual_trace),
        &changes_observed(observed, f64::from(time_scale.max(1))),
        tolerance,
        out,
    )
}

/// The virtual trajectory up to case second `end` (the case's end), and through its whole tail.
fn trajectories(virtual_trace: &[TickTrace], end: f64) -> (Vec<i32>, Vec<i32>) {
    let until_end = virtual_trace.partition_point(|r| r.t as f64 <= end);
    (
        crate::run::trajectory(&virtual_trace[..until_end]),
        crate::run::trajectory(virtual_trace),
    )
}

/// Checks every expectation of the case against what was observed, with `virtual_trace` (the
/// reference core's trace of the case, run on through the lane's tail) giving when each change
/// is due; the failures (none: passed).
pub fn check(
    case: &Case,
    observed: &Observed,
    virtual_trace: &[TickTrace],
    tolerance: f64,
    time_scale: u32,
) -> Vec<Failure> {
    let mut out = Vec::new();
    let lags = lags_of(observed, virtual_trace, tolerance, time_scale, &mut out);
    for x in &case.file.expect.at {
        check_at(x, observed, tolerance, &lags, &mut out);
    }
    let have_trajectory = trajectory(observed);
    let beyond = only_after_the_end(&have_trajectory, virtual_trace, f64::from(case.duration));
    if let Some(want) = &case.file.expect.trajectory {
        let have = &have_trajectory;
        if have != want && !beyond {
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
        if have != Some(want) && !beyond {
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

/// Whether the lane has watched a case long enough, at case second `now`, for [`check`] to judge
/// it: past the case's end, the observed trajectory is the virtual one through the end, followed
/// only by changes the virtual run makes after it (nothing missing, nothing else); every change
/// came on time; and the window of every expectation — ±`tolerance` around its time shifted by
/// the lateness of the last change before it — has closed, as has one `tolerance` past the
/// case's end (shifted likewise when the last change came late). Watching on could then only
/// add samples after every window the case states. Until then — and for as long as anything
/// seen so far would fail — the lane watches its whole tail, room for a decision each a sync
/// period late.
pub fn settled(
    case: &Case,
    observed: &Observed,
    virtual_trace: &[TickTrace],
    tolerance: f64,
    time_scale: u32,
    now: f64,
) -> bool {
    let end = f64::from(case.duration);
    if now <= end {
        return false;
    }
    let have = trajectory(observed);
    let (within, extended) = trajectories(virtual_trace, end);
    if !have.starts_with(&within) || !extended.starts_with(&have) {
        return false;
    }
    let mut late = Vec::new();
    let lags = lags_of(observed, virtual_trace, tolerance, time_scale, &mut late);
    if !late.is_empty() {
        return false;
    }
    let closes = |t: f64| t + shift_at(&lags, t) + tolerance;
    let past_end = end + shift_at(&lags, end).max(0.0) + tolerance;
    case.file
        .expect
        .at
        .iter()
        .map(|x| closes(f64::from(x.t)))
        .all(|c| now > c)
        && now > past_end
}

/// Whether the observed trajectory is the virtual one up to the case's end followed only by
/// changes the virtual run makes after it (`virtual_trace` runs on through the lane's tail): a
/// walk-down that goes on after `durationSeconds` is not a failure of a controller that keeps
/// deciding while the lane waits for late decisions.
fn only_after_the_end(have: &[i32], virtual_trace: &[TickTrace], end: f64) -> bool {
    let (within, extended) = trajectories(virtual_trace, end);
    have.len() > within.len() && have.starts_with(&within) && extended.starts_with(have)
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
            memory: None,
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

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus;

    /// A sample at case second `t` with `replicas` and a status whose desired count is that and
    /// whose lastScaleTime is case second `stamp`.
    fn sample(t: f64, replicas: i32, stamp: Option<i64>) -> Sample {
        let status = HorizontalPodAutoscalerStatus {
            desired_replicas: replicas,
            last_scale_time: stamp
                .map(|s| hpa_reference::time::kube_time(crate::world::instant(s))),
            ..Default::default()
        };
        Sample {
            t,
            replicas,
            status,
            pods: (0, 0),
        }
    }

    #[test]
    fn a_change_seen_late_is_dated_by_its_last_scale_time_stamp() {
        // Seen at t=25 (the lane's sample late on a loaded machine), stamped t=0 at ×5: the write
        // came before t=5.
        let observed = Observed {
            initial: 10,
            samples: vec![sample(0.5, 10, None), sample(25.0, 110, Some(0))],
            events: Vec::new(),
        };
        assert_eq!(changes_observed(&observed, 5.0), vec![(5.0, 110)]);
        // At ×1 the stamp's second is the bound.
        assert_eq!(changes_observed(&observed, 1.0), vec![(1.0, 110)]);
        // A stamp older than the previous sample is an earlier change's: the sample dates it.
        let stale = Observed {
            initial: 10,
            samples: vec![sample(20.0, 10, Some(0)), sample(25.0, 110, Some(0))],
            events: Vec::new(),
        };
        assert_eq!(changes_observed(&stale, 5.0), vec![(25.0, 110)]);
        // A status that does not have the new count yet: the sample dates it.
        let mut behind = sample(25.0, 110, Some(15));
        behind.status.desired_replicas = 10;
        let behind = Observed {
            initial: 10,
            samples: vec![sample(0.5, 10, None), behind],
            events: Vec::new(),
        };
        assert_eq!(changes_observed(&behind, 5.0), vec![(25.0, 110)]);
    }

    /// A virtual trace of (t, replicas before, replicas after) ticks with an empty status.
    fn virtual_trace(steps: &[(i64, i32, i32)]) -> Vec<TickTrace> {
        let outcome = TickOutcome {
            scaled_to: None,
            status: Default::default(),
            events: Vec::new(),
            explanation: None,
            memory: None,
        };
        steps
            .iter()
            .map(|(t, b, r)| tick_trace(*t, *b, *r, (0, 0), &outcome))
            .collect()
    }

    #[test]
    fn a_walk_down_that_goes_on_after_the_end_is_not_a_failure() {
        // Virtual: 100 → 97 (t=30) → 94 (t=45) → 91 (t=60, the case's end) → 88 (t=75, tail).
        let v = virtual_trace(&[
            (0, 100, 100),
            (30, 100, 97),
            (45, 97, 94),
            (60, 94, 91),
            (75, 91, 88),
        ]);
        assert!(only_after_the_end(&[100, 97, 94, 91, 88], &v, 60.0));
        // Exactly the case's trajectory is not "beyond"; the plain comparison decides.
        assert!(!only_after_the_end(&[100, 97, 94, 91], &v, 60.0));
        // A change the virtual run does not make, or one missing before the end: not excused.
        assert!(!only_after_the_end(&[100, 97, 94, 91, 85], &v, 60.0));
        assert!(!only_after_the_end(&[100, 97, 91, 88], &v, 60.0));
    }

    #[test]
    fn the_lane_has_watched_enough_once_every_window_has_closed_and_nothing_is_amiss() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../cases/behavior/policy-walkdown.yaml");
        let mut case = crate::case::load_case(&path).unwrap();
        // A case of 60 s expecting something at 30 and at its end; tolerance 20.
        case.duration = 60;
        case.file.expect.at = [30, 60]
            .into_iter()
            .map(|t| crate::case::model::ExpectAt {
                t,
                ..Default::default()
            })
            .collect();
        // Virtual: 10 → 8 at t=30, then 6 at t=90 (after the end, in the tail).
        let v = virtual_trace(&[(0, 10, 10), (30, 10, 8), (60, 8, 8), (90, 8, 6)]);
        let watched = |samples: Vec<Sample>| Observed {
            initial: 10,
            samples,
            events: Vec::new(),
        };
        // The change came 10 s late: windows close at 30 + 10 + 20 and 60 + 10 + 20 = 90.
        let on = watched(vec![sample(0.5, 10, None), sample(40.0, 8, None)]);
        assert!(!settled(&case, &on, &v, 20.0, 1, 59.0), "before the end");
        assert!(
            !settled(&case, &on, &v, 20.0, 1, 89.0),
            "t=60's window is open"
        );
        assert!(settled(&case, &on, &v, 20.0, 1, 90.5));
        // The tail's own change seen as well: still settled.
        let on = watched(vec![
            sample(0.5, 10, None),
            sample(40.0, 8, None),
            sample(85.0, 6, None),
        ]);
        assert!(settled(&case, &on, &v, 20.0, 1, 90.5));
        // An in-case change not seen yet, a change the virtual run does not make, or a change
        // too late for the tolerance: the lane watches on (its whole tail).
        let missing = watched(vec![sample(0.5, 10, None)]);
        assert!(!settled(&case, &missing, &v, 20.0, 1, 95.0));
        let other = watched(vec![sample(0.5, 10, None), sample(40.0, 7, None)]);
        assert!(!settled(&case, &other, &v, 20.0, 1, 95.0));
        let extra = watched(vec![
            sample(0.5, 10, None),
            sample(40.0, 8, None),
            sample(85.0, 9, None),
        ]);
        assert!(!settled(&case, &extra, &v, 20.0, 1, 95.0));
        let late = watched(vec![sample(0.5, 10, None), sample(75.0, 8, None)]);
        assert!(!settled(&case, &late, &v, 20.0, 1, 130.0));
        // A case whose count never changes: one tolerance past its end.
        case.file.expect.at.clear();
        let flat = virtual_trace(&[(0, 10, 10), (30, 10, 10), (60, 10, 10), (90, 10, 10)]);
        let still = watched(vec![sample(0.5, 10, None), sample(79.0, 10, None)]);
        assert!(!settled(&case, &still, &flat, 20.0, 1, 80.0));
        assert!(settled(&case, &still, &flat, 20.0, 1, 80.5));
    }

    #[test]
    fn lateness_adds_up_but_each_step_is_bounded() {
        let v = [(300.0, 72), (360.0, 64), (420.0, 57)];
        let mut out = Vec::new();
        // Each decision one sync period late relative to the previous one: allowed.
        let o = [(315.0, 72), (390.0, 64), (465.0, 57)];
        let lags = lateness(&v, &o, 20.0, &mut out);
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(lags, vec![(300.0, 15.0), (360.0, 30.0), (420.0, 45.0)]);
        assert_eq!(shift_at(&lags, 400.0), 30.0);
        assert_eq!(shift_at(&lags, 10.0), 0.0);
        // A step 40 s late relative to the previous one (and to the start) is not.
        let o = [(300.0, 72), (400.0, 64)];
        lateness(&v, &o, 20.0, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].check, "timing");
        // A late first reconcile (+20) does not move a later change timed from an on-time
        // reconcile (a stabilization window's end): -10 is within 25 of the start's 0.
        let mut out = Vec::new();
        let w = [(0.0, 5), (330.0, 2)];
        let lags = lateness(&w, &[(20.0, 5), (320.0, 2)], 25.0, &mut out);
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(lags, vec![(0.0, 20.0), (330.0, -10.0)]);
        // Nor anchored anywhere: 60 s early.
        lateness(&w, &[(20.0, 5), (270.0, 2)], 25.0, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        // Counts that differ stop the matching (the trajectory check reports them).
        let mut out = Vec::new();
        let lags = lateness(&v, &[(300.0, 70)], 20.0, &mut out);
        assert!(lags.is_empty() && out.is_empty());
    }
}
