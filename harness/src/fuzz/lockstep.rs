//! Running one scenario on both targets: separately (each over its own world), or in lockstep
//! over one world while they agree; and comparing their traces tick by tick.

use std::ops::ControlFlow;
use std::time::Instant;

use crate::case::Case;
use crate::profile::Profile;
use crate::run::trace::first_difference_at;
use crate::run::{CaseResult, RunOptions, run_case};
use crate::targets::Target;

/// One run of a scenario on both targets, as recorded for a flaky report.
pub(super) struct Run {
    pub(super) difference: Option<(i64, String)>,
    /// A target that failed to run the scenario at all, and why.
    pub(super) failed: Option<String>,
    pub(super) a: CaseResult,
    pub(super) b: CaseResult,
}

pub(super) fn run_pair(case: &Case, a: &dyn Target, b: &dyn Target, opts: &RunOptions) -> Run {
    let ra = run_case(case, a, opts);
    let rb = run_case(case, b, opts);
    let difference = compare(&ra, &rb, a, b, opts.profile.unwrap_or_default());
    let failed = [(a, &ra), (b, &rb)]
        .into_iter()
        .find_map(|(t, r)| match &r.outcome {
            crate::run::Outcome::Errored(e) => Some(format!("{} failed: {e}", t.name())),
            _ => None,
        });
    Run {
        difference,
        failed,
        a: ra,
        b: rb,
    }
}

/// How a scenario went on both targets in lockstep ([`lockstep`]).
pub(super) enum Lockstep {
    /// Same outcome at every tick, both ended cleanly: nothing more to run.
    Agreed,
    /// Lockstep cannot say (a skip, a profile other than `full`, a rejected manifest, outcomes
    /// that differ only where traces do not look, so the worlds would part): run separately.
    Undecided,
    /// A target failed, or the traces differ at a tick: the first run of a difference, re-run
    /// separately like any other (its results hold only the tick where it ended).
    Differed(Box<Run>),
}

/// Why a lockstep run stopped early with something to report.
pub(super) enum Ended {
    /// A target failed (it is `a`), why, and its result.
    Failed(bool, String, Box<CaseResult>),
    /// The traces of the tick differ: the difference and each target's result, with its trace
    /// of that tick.
    Differs(Box<Run>),
}

/// Runs a scenario on both targets in lockstep over one world: each tick's snapshot goes to
/// both sessions, and the world takes their outcome once. While both write the same scale,
/// status and events, running each target separately would give the same worlds and traces, so
/// the world is stepped once instead of twice (and nothing but the outcomes is compared).
pub(super) fn lockstep(case: &Case, a: &dyn Target, b: &dyn Target, opts: &RunOptions) -> Lockstep {
    if case.file.expect.rejected.is_some() || opts.profile.unwrap_or_default() != Profile::Full {
        return Lockstep::Undecided;
    }
    let started = Instant::now();
    let result = |outcome, trace: Vec<crate::run::trace::TickTrace>, diagnostics| {
        CaseResult::of(case, outcome, trace, started, diagnostics)
    };
    let passed = || result(crate::run::Outcome::Passed, Vec::new(), None);
    let failed = |t: &dyn Target, message: String, diagnostics| {
        let why = format!("{} failed: {message}", t.name());
        (
            why,
            result(
                crate::run::Outcome::Errored(message),
                Vec::new(),
                diagnostics,
            ),
        )
    };
    let differed = |why: String, failing: CaseResult, a_failed: bool| {
        let (ra, rb) = if a_failed {
            (failing, passed())
        } else {
            (passed(), failing)
        };
        // As `run_pair` records a target that failed: a difference at t=0 and the failure.
        Lockstep::Differed(Box::new(Run {
            difference: Some((0, why.clone())),
            failed: Some(why),
            a: ra,
            b: rb,
        }))
    };
    let mut sessions = Vec::with_capacity(2);
    let mut world_settings = None;
    for (i, t) in [a, b].into_iter().enumerate() {
        let Ok(settings) = crate::run::resolve_settings(case, t.gate_support(), opts) else {
            return Lockstep::Undecided;
        };
        world_settings.get_or_insert_with(|| settings.clone());
        match t.start(case, &settings) {
            Ok(s) if s.highest_level() == Profile::Full => sessions.push(s),
            Ok(_) => return Lockstep::Undecided,
            Err(e) if e.skip => return Lockstep::Undecided,
            Err(e) => {
                let (why, r) = failed(t, e.message, None);
                return differed(why, r, i == 0);
            }
        }
    }
    let (Some(mut sb), Some(mut sa)) = (sessions.pop(), sessions.pop()) else {
        return Lockstep::Undecided;
    };
    let Some(world_settings) = world_settings else {
        return Lockstep::Undecided;
    };
    let ended = crate::run::drive(case, &world_settings, |world, t| {
        let (before, pods) = (world.replicas(), world.pod_counts(t));
        let snapshot = world.snapshot(t);
        let oa = match sa.tick(&snapshot) {
            Ok(o) => o,
            Err(e) => {
                let (why, r) = failed(a, e.message, sa.diagnostics());
                return ControlFlow::Break(Some(Ended::Failed(true, why, Box::new(r))));
            }
        };
        let ob = match sb.tick(&snapshot) {
            Ok(o) => o,
            Err(e) => {
                let (why, r) = failed(b, e.message, sb.diagnostics());
                return ControlFlow::Break(Some(Ended::Failed(false, why, Box::new(r))));
            }
        };
        if oa.scaled_to != ob.scaled_to || oa.status != ob.status || oa.events != ob.events {
            // The traces of this tick, as separate runs would show them (the worlds agree up
            // to here).
            let after = |o: &crate::targets::TickOutcome| {
                let mut w = world.clone();
                let replicas = w
                    .apply_outcome(o.scaled_to, o.status.clone(), t)
                    .map(|()| w.replicas());
                replicas.map(|r| crate::run::trace::tick_trace(t, before, r, pods, o))
            };
            return match (after(&oa), after(&ob)) {
                (Ok(ta), Ok(tb)) => {
                    let passed = || crate::run::Outcome::Passed;
                    let ra = result(passed(), vec![ta], None);
                    let rb = result(passed(), vec![tb], None);
                    match compare(&ra, &rb, a, b, Profile::Full) {
                        Some(found) => ControlFlow::Break(Some(Ended::Differs(Box::new(Run {
                            difference: Some(found),
                            failed: None,
                            a: ra,
                            b: rb,
                        })))),
                        None => ControlFlow::Break(None),
                    }
                }
                _ => ControlFlow::Break(None),
            };
        }
        match world.apply_outcome(oa.scaled_to, oa.status, t) {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(None),
        }
    });
    // Both sessions end either way (a kept process goes back to its pool).
    let finished = sa.finish().is_ok() & sb.finish().is_ok();
    match ended {
        ControlFlow::Continue(()) if finished => Lockstep::Agreed,
        ControlFlow::Continue(()) | ControlFlow::Break(None) => Lockstep::Undecided,
        ControlFlow::Break(Some(Ended::Failed(side_a, why, r))) => differed(why, *r, side_a),
        ControlFlow::Break(Some(Ended::Differs(run))) => Lockstep::Differed(run),
    }
}

pub(super) fn compare(
    ra: &CaseResult,
    rb: &CaseResult,
    a: &dyn Target,
    b: &dyn Target,
    profile: Profile,
) -> Option<(i64, String)> {
    // A scenario one target cannot pose (a gate, a feature, a level it does not declare) is not
    // a difference.
    if [ra, rb]
        .iter()
        .any(|r| matches!(r.outcome, crate::run::Outcome::Skipped(_)))
    {
        return None;
    }
    if let crate::run::Outcome::Errored(e) = &ra.outcome {
        return Some((0, format!("{} failed: {e}", a.name())));
    }
    if let crate::run::Outcome::Errored(e) = &rb.outcome {
        return Some((0, format!("{} failed: {e}", b.name())));
    }
    first_difference_at(&ra.trace, &rb.trace, profile).or_else(|| {
        (profile == Profile::Full)
            .then(|| crate::run::trace::first_message_difference(&ra.trace, &rb.trace))
            .flatten()
    })
}

/// The first tick where the targets disagree on a scenario, if they do (targets that fail to
/// run it count as disagreeing at t=0).
pub fn difference(
    case: &Case,
    a: &dyn Target,
    b: &dyn Target,
    opts: &RunOptions,
) -> Option<(i64, String, CaseResult, CaseResult)> {
    let run = run_pair(case, a, b, opts);
    run.difference.map(|(t, d)| (t, d, run.a, run.b))
}
