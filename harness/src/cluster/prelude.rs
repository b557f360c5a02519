//! A prelude: the controller records a case's memory itself, before t = 0. A running controller
//! cannot be given a seeded memory ([`super::seed`]), and most seeds in the corpus say one thing:
//! the controller has known the HPA for a while, so no initial recommendation (the current count,
//! recorded at its first reconcile) holds the count at t = 0. A cluster reaches that state by
//! time: the lane creates the HPA a stabilization window and a sync period early (the longer of
//! the two windows, in whole periods), its pods already as at t = 0, and serves every metric it
//! will serve at t = 0 with one answer throughout ([`Answers`], the *filler*): its value zero
//! ([`quiet`]), or t = 0's own answers. The initial recommendation holds the count through the
//! prelude; the filler's proposals it records lie below (zero) or at t = 0's, whichever the case
//! shows no difference for. Where the case seeds recommendations inside the prelude, the
//! reconcile nearest each is served metrics at the one level whose proposal is the seeded count
//! ([`Answers::Level`], found on the core), so that the controller records it itself. The last
//! reconcile before t = 0, the one where the initial recommendation leaves the window (on a
//! cluster a matter of milliseconds either way), sees every metric fail ([`failing`]): it records
//! nothing and scales nothing. The next one is t = 0, surely past the window's end (the lane
//! takes it from the failing reconcile it sees, `cluster::lane`).
//!
//! [`prelude`] plays the prelude on the in-process reference core, reconcile by reconcile on the
//! clock the cluster's controller will see (negative times, the pods and samples stamped as at
//! t = 0), and gives the memory and status it leaves; the caller runs the case from those on the
//! core ([`posed`]), its recorded times as planned and moved by up to a sync period (where the
//! cluster's reconciles may fall), and poses it with a prelude only when every trace is the
//! case's own. A prelude that would scale the target or record an event before its failing
//! reconcile is refused: the cluster's controller would be doing something the case does not show.
//! Seeded scale events are not played (the controller would have to scale the target before
//! t = 0, as the seed's policies may not allow): where they matter, the core's check says so.

use hpa_reference::metrics_api::MetricsApis;
use hpa_reference::{Memory, Settings};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::case::Case;
use crate::case::model::MemorySeed;
use crate::targets::{CoreSession, Session as _};
use crate::world::{World, instant};

/// The metrics answers of a prelude's reconcile, made from t = 0's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answers {
    /// Every value of t = 0's answers this many milli-units ([`level`]; 0 is [`quiet`]).
    Level(i64),
    /// t = 0's answers as they are.
    AtZero,
}

impl Answers {
    /// These answers, made from t = 0's.
    pub fn of(self, at_zero: &MetricsApis) -> MetricsApis {
        match self {
            Answers::Level(milli) => level(at_zero, milli),
            Answers::AtZero => at_zero.clone(),
        }
    }

    /// In words, for a plan's reason.
    pub fn words(self) -> String {
        match self {
            Answers::Level(0) => "every metric at zero".into(),
            Answers::Level(m) => format!("every metric at {m}m"),
            Answers::AtZero => "every metric at its value at t = 0".into(),
        }
    }
}

/// A reconcile of a prelude served a seeded recommendation's level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seeded {
    /// The reconcile (case seconds, negative).
    pub at: i64,
    /// Its answers.
    pub answers: Answers,
    /// The recommendation they give, the seed's.
    pub replicas: i32,
}

/// When the lane serves what before t = 0: the prelude's length, its filler, and the reconciles
/// served other answers (a seeded recommendation's level), each from half a period before it to
/// half a period after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// How long before t = 0 the controller first reconciles the HPA (case seconds, whole sync
    /// periods): the longer stabilization window and one period more, rounded down to whole
    /// periods.
    pub seconds: u32,
    /// The answers of every reconcile but the seeded ones and the failing last.
    pub filler: Answers,
    /// The reconciles served other answers, in time order.
    pub seeded: Vec<Seeded>,
    /// Whether the lane writes the case's starting status after the prelude's failing reconcile
    /// (the controller reads it at t = 0), rather than leaving the one the prelude wrote.
    pub status_written: bool,
}

impl Schedule {
    /// In words, for a plan's reason.
    pub fn words(&self) -> String {
        let mut s = self.filler.words();
        if !self.seeded.is_empty() {
            let each: Vec<String> = self
                .seeded
                .iter()
                .map(|e| {
                    format!(
                        "{} at t={} (the seeded {})",
                        e.answers.words(),
                        e.at,
                        e.replicas
                    )
                })
                .collect();
            s.push_str(&format!(" but {}", each.join(", ")));
        }
        s
    }
}

/// What a prelude leaves at t = 0.
#[derive(Debug, Clone)]
pub struct Prelude {
    /// What the lane serves before t = 0.
    pub schedule: Schedule,
    /// The controller's memory of the HPA at t = 0, as a case seeds one.
    pub memory: MemorySeed,
    /// The status the prelude's last reconcile wrote.
    pub status: HorizontalPodAutoscalerStatus,
}

/// The metrics answers a prelude serves by default: `apis` with every value zero — the same pods,
/// objects, series, errors and timestamps.
pub fn quiet(apis: &MetricsApis) -> MetricsApis {
    level(apis, 0)
}

/// `apis` with every value `milli` milli-units — the same pods, objects, series, errors and
/// timestamps.
pub fn level(apis: &MetricsApis, milli: i64) -> MetricsApis {
    let value = || {
        Quantity(if milli == 0 {
            "0".into()
        } else {
            format!("{milli}m")
        })
    };
    let mut q = apis.clone();
    for m in &mut q.resource.items {
        for c in &mut m.containers {
            c.usage.values_mut().for_each(|v| *v = value());
        }
    }
    for l in q.pods.values_mut() {
        l.items.iter_mut().for_each(|v| v.value = value());
    }
    for o in q.object.values_mut() {
        if let Some(v) = &mut o.value {
            v.value = value();
        }
    }
    for l in q.external.values_mut() {
        l.items.iter_mut().for_each(|v| v.value = value());
    }
    q
}

/// The text every metric answers with at a prelude's failing reconcile, the last before t = 0.
pub const FAILING: &str = "no metrics in the prelude's last reconcile";

/// The metrics answers of a prelude's failing reconcile: every answer of `apis` an error.
pub fn failing(apis: &MetricsApis) -> MetricsApis {
    let mut f = apis.clone();
    f.resource.items.clear();
    f.resource.error = Some(FAILING.into());
    for l in f.pods.values_mut() {
        l.items.clear();
        l.error = Some(FAILING.into());
    }
    for o in f.object.values_mut() {
        o.value = None;
        o.error = Some(FAILING.into());
    }
    for l in f.external.values_mut() {
        l.items.clear();
        l.error = Some(FAILING.into());
    }
    f
}

/// The longer of `case`'s two stabilization windows (seconds): the time a recommendation recorded
/// at the prelude's first reconcile — the initial one, the current count — holds the count.
fn window(case: &Case, settings: &Settings) -> i64 {
    let behavior = case.hpa.spec.behavior.as_ref();
    let down = behavior
        .and_then(|b| b.scale_down.as_ref())
        .and_then(|d| d.stabilization_window_seconds)
        .map(i64::from)
        .unwrap_or(settings.downscale_stabilization.as_secs() as i64);
    let up = behavior
        .and_then(|b| b.scale_up.as_ref())
        .and_then(|u| u.stabilization_window_seconds)
        .map_or(0, i64::from);
    down.max(up)
}

/// The recommendation the core records when it reconciles `world` at t = 0 with every metric at
/// `milli` (at case time `t`, a controller's first reconcile), if it records one.
fn proposal(world: &mut World, settings: &Settings, milli: i64, t: i64) -> Option<i32> {
    let mut s = world.snapshot(0);
    s.metrics = level(&s.metrics, milli);
    s.now = instant(t);
    let mut session = CoreSession::new(settings.clone(), Memory::default()).reporting_memory(true);
    let out = session.tick(&s).ok()?;
    out.memory?.recommendations?.last().map(|r| r.replicas)
}

/// A level of every metric (milli-units) whose proposal is `want`, found on the core: the middle
/// of the levels that give it, away from either edge (where the controllers' float arithmetic
/// and the core's exact one could differ by a rounding).
fn level_for(world: &mut World, settings: &Settings, want: i32, t: i64) -> Result<i64, String> {
    let lowest = lowest_level(world, settings, want, t)?;
    let Ok(next) = lowest_level(world, settings, want.saturating_add(1), t) else {
        return Ok(lowest);
    };
    let mid = lowest + (next - 1 - lowest) / 2;
    Ok(if proposal(world, settings, mid, t) == Some(want) {
        mid
    } else {
        lowest
    })
}

/// The lowest level of every metric (milli-units) whose proposal is `want`, found on the core;
/// proposals do not fall as usage rises, so a bisection finds it where one exists.
fn lowest_level(world: &mut World, settings: &Settings, want: i32, t: i64) -> Result<i64, String> {
    const HIGHEST: i64 = 1 << 50;
    let mut below = |m: i64| proposal(world, settings, m, t).is_none_or(|p| p < want);
    let (mut lo, mut hi) = (0, 1);
    if !below(0) {
        hi = 0;
    }
    while hi > 0 && below(hi) {
        lo = hi;
        hi *= 2;
        if hi > HIGHEST {
            return Err(format!(
                "no level of its metrics up to {HIGHEST}m gives the seeded recommendation {want}"
            ));
        }
    }
    // below(lo) (or lo = hi = 0), !below(hi): the lowest level not below lies in (lo, hi].
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if below(mid) { lo = mid } else { hi = mid }
    }
    match proposal(world, settings, hi, t) {
        Some(p) if p == want => Ok(hi),
        p => Err(format!(
            "no level of its metrics gives the seeded recommendation {want} (the nearest gives {})",
            p.map_or("none".into(), |p| p.to_string())
        )),
    }
}

/// The prelude of `case` (as the cluster poses it: no memory, no starting status, at the release
/// `settings` name), serving `filler` and playing the recommendations of `seed` that fall inside
/// it (each at its nearest reconcile but the failing one), on the reference core; or why there is
/// none to play. What it leaves has the status its last reconcile wrote; a caller that has the
/// lane write the case's own after it ([`Schedule::status_written`]) replaces it.
pub fn prelude(
    case: &Case,
    settings: &Settings,
    seed: Option<&MemorySeed>,
    filler: Answers,
) -> Result<Prelude, String> {
    if !case.members.is_empty() {
        return Err("the lane plays a prelude only for a case with one HPA".into());
    }
    let period = i64::from(case.sync_period.max(1));
    let window = window(case, settings);
    if window <= 0 {
        return Err("its stabilization windows are 0 s, so no recommendation holds the count and the time before t = 0 records nothing that matters".into());
    }
    // The first reconcile at −length; the last before t = 0 fails (on a cluster, the one nearest
    // the window's end, see `cluster::lane`): t = 0 is the first reconcile surely past the end.
    let length = (window / period + 1) * period;
    let mut world = World::new(case).for_release(settings);
    let mut timeline: Vec<_> = case.file.timeline.iter().filter(|e| e.at == 0).collect();
    timeline.sort_by_key(|e| e.at);
    for e in timeline {
        world.apply(e, 0);
    }
    world.advance(0);
    // Each seeded recommendation inside the prelude at its nearest reconcile (not the failing
    // one, which records nothing).
    let mut seeded: Vec<Seeded> = Vec::new();
    for r in seed
        .map(|s| s.recommendations.as_slice())
        .unwrap_or_default()
    {
        let slot = (r.at + length + period / 2).div_euclid(period) * period - length;
        // Not the first reconcile (the HPA's creation's, whose answers are the filler's) nor the
        // failing last.
        if slot <= -length || slot >= -period {
            continue;
        }
        if seeded.iter().any(|e| e.at == slot) {
            return Err(format!(
                "two seeded recommendations fall on its reconcile at t={slot}"
            ));
        }
        let milli = level_for(&mut world, settings, r.replicas, slot)?;
        seeded.push(Seeded {
            at: slot,
            answers: Answers::Level(milli),
            replicas: r.replicas,
        });
    }
    seeded.sort_by_key(|e| e.at);
    let schedule = Schedule {
        seconds: u32::try_from(length).map_err(|e| e.to_string())?,
        filler,
        seeded,
        status_written: false,
    };
    let mut session = CoreSession::new(settings.clone(), Memory::default()).reporting_memory(true);
    let mut last = None;
    for k in 0..length / period {
        let t = k * period - length;
        let fails = t == -period;
        let mut s = world.snapshot(0);
        let answers = schedule
            .seeded
            .iter()
            .find(|e| e.at == t)
            .map_or(filler, |e| e.answers);
        s.metrics = answers.of(&s.metrics);
        if fails {
            s.metrics = failing(&s.metrics);
        }
        s.now = instant(t);
        let before = last
            .as_ref()
            .and_then(|o: &crate::targets::TickOutcome| o.memory.clone());
        let out = session
            .tick(&s)
            .map_err(|e| format!("the core errs on the prelude at t={t}: {}", e.message))?;
        if fails && out.memory != before {
            return Err(format!(
                "the prelude's failing reconcile at t={t} still records a recommendation (not every metric fails)"
            ));
        }
        if let Some(n) = out.scaled_to {
            return Err(format!(
                "a prelude with {} would scale it to {n} at t={t} (of {} s before t = 0)",
                answers.words(),
                length
            ));
        }
        if let Some(e) = out.events.first().filter(|_| !fails) {
            return Err(format!(
                "a prelude with {} would record an event at t={t}: {} {}",
                answers.words(),
                e.reason,
                e.message
            ));
        }
        world
            .apply_outcome(None, out.status.clone(), 0)
            .map_err(|e| format!("the prelude at t={t}: {e}"))?;
        last = Some(out);
    }
    let Some(last) = last else {
        return Err("no prelude reconcile".into());
    };
    let Some(memory) = crate::targets::memory_seed(&last.memory.unwrap_or_default()) else {
        return Err(format!(
            "the prelude's reconciles with {} fail before recording a recommendation, so the controller would take its initial one at t = 0",
            filler.words()
        ));
    };
    Ok(Prelude {
        schedule,
        memory,
        status: last.status,
    })
}

/// `case` (as the cluster poses it) starting from what `prelude` leaves: its memory seeded, its
/// status the prelude's — the copy the core runs to show the prelude changes nothing. `skew`
/// moves every recorded time by that many seconds: on a cluster the prelude's reconciles fall
/// near, not on, the sync period's multiples, so a recommendation recorded exactly one window
/// before a later reconcile may be inside that window or outside it; a prelude is posed only when
/// the trace is the same either way.
pub fn posed(case: &Case, prelude: &Prelude, skew: i64) -> Case {
    let mut c = case.clone();
    let mut memory = prelude.memory.clone();
    memory.recommendations.iter_mut().for_each(|r| r.at += skew);
    memory.scale_up_events.iter_mut().for_each(|e| e.at += skew);
    memory
        .scale_down_events
        .iter_mut()
        .for_each(|e| e.at += skew);
    c.file.memory = Some(memory);
    c.hpa.status = Some(prelude.status.clone());
    c.file.hpa.status = Some(prelude.status.clone());
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::testing::{corpus, opts};
    use crate::run::resolve_settings;
    use crate::targets::GateSupport;

    /// The case as the lane poses it (no memory, no status) and its prelude.
    fn played(mut case: Case) -> (Case, Result<Prelude, String>) {
        case.file.memory = None;
        case.hpa.status = None;
        case.file.hpa.status = None;
        let settings = resolve_settings(&case, GateSupport::PerCase, &opts()).unwrap();
        let p = prelude(&case, &settings, None, Answers::Level(0));
        (case, p)
    }

    /// The case as the lane poses it and its prelude playing the written case's seed.
    fn seeded(written: &Case, filler: Answers) -> (Case, Result<Prelude, String>) {
        let mut case = written.clone();
        case.file.memory = None;
        case.hpa.status = None;
        case.file.hpa.status = None;
        let settings = resolve_settings(&case, GateSupport::PerCase, &opts()).unwrap();
        let p = prelude(&case, &settings, written.file.memory.as_ref(), filler);
        (case, p)
    }

    #[test]
    fn quiet_answers_zero_every_value_and_failing_answers_an_error_for_every_metric() {
        let ts = "2026-11-28T10:00:00Z";
        let apis: MetricsApis = serde_json::from_value(serde_json::json!({
            "resource": {"items": [{"metadata": {"name": "web-1"}, "timestamp": ts, "window": "30s",
                "containers": [{"name": "app", "usage": {"cpu": "250m", "memory": "1Gi"}}]}]},
            "pods": {"qps": {"items": [{"pod": "web-1", "value": "7", "timestamp": ts}]}},
            "object": {"requests": {"value": {"value": "12", "timestamp": ts}},
                       "broken": {"error": "not found"}},
            "external": {"queue": {"items": [{"value": "3", "timestamp": ts}, {"value": "4", "timestamp": ts}]}}
        }))
        .unwrap();
        let q = quiet(&apis);
        let values = |a: &MetricsApis| -> Vec<String> {
            let mut v: Vec<String> = a
                .object
                .values()
                .filter_map(|o| o.value.as_ref())
                .map(|v| v.value.0.clone())
                .collect();
            v.extend(
                a.external
                    .values()
                    .flat_map(|l| l.items.iter().map(|i| i.value.0.clone())),
            );
            v.extend(
                a.pods
                    .values()
                    .flat_map(|l| l.items.iter().map(|i| i.value.0.clone())),
            );
            v.extend(a.resource.items.iter().flat_map(|m| {
                m.containers
                    .iter()
                    .flat_map(|c| c.usage.values().map(|q| q.0.clone()))
            }));
            v
        };
        assert!(values(&apis).iter().any(|v| v != "0"), "{apis:?}");
        assert_eq!(values(&q).len(), 6);
        assert!(values(&q).iter().all(|v| v == "0"), "{q:?}");
        assert_eq!(q.object["broken"].error.as_deref(), Some("not found"));
        assert_eq!(
            q.resource.items[0].timestamp,
            apis.resource.items[0].timestamp
        );
        let f = failing(&q);
        assert!(values(&f).is_empty(), "{f:?}");
        assert_eq!(f.resource.error.as_deref(), Some(FAILING));
        assert!(
            f.object
                .values()
                .all(|o| o.error.as_deref() == Some(FAILING))
        );
        assert!(
            f.external
                .values()
                .all(|l| l.error.as_deref() == Some(FAILING))
        );
        assert!(f.pods.values().all(|l| l.error.as_deref() == Some(FAILING)));
        assert_eq!(
            f.object.len() + f.external.len(),
            q.object.len() + q.external.len()
        );
    }

    #[test]
    fn a_window_of_whole_periods_is_played_a_period_longer_its_last_reconcile_failing() {
        let written = corpus("algorithm/tolerance-band-just-outside.yaml");
        let (case, p) = played(written.clone());
        let p = p.unwrap();
        assert_eq!(p.schedule.seconds, 315);
        // The initial recommendation (the current count) at the first reconcile, then the zero
        // metrics' proposals — none at the failing reconcile.
        let recs: Vec<(i32, i64)> = p
            .memory
            .recommendations
            .iter()
            .map(|r| (r.replicas, r.at))
            .collect();
        assert_eq!(recs.first(), Some(&(10, -315)));
        assert!(recs[1..].iter().all(|&(n, _)| n == 0), "{recs:?}");
        assert_eq!(recs.last(), Some(&(0, -30)));
        let active = p
            .status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "ScalingActive")
            .unwrap();
        assert_eq!(
            (active.status.as_str(), active.reason.as_deref()),
            ("False", Some("FailedGetPodsMetric"))
        );
        // From there the core gives the case's own trace, with the recorded times a second off
        // either way; without the prelude it does not.
        for skew in [0, 1, -1, -7, -14] {
            crate::cluster::seed::same_trace(&written, &posed(&case, &p, skew), &opts()).unwrap();
        }
        assert!(crate::cluster::seed::same_trace(&written, &case, &opts()).is_err());
    }

    #[test]
    fn a_window_between_periods_is_played_to_the_next_period() {
        let mut case = corpus("algorithm/tolerance-band-just-outside.yaml");
        let behavior = serde_json::json!({"scaleDown": {"stabilizationWindowSeconds": 100}});
        case.hpa.spec.behavior = Some(serde_json::from_value(behavior).unwrap());
        let (_, p) = played(case);
        let p = p.unwrap();
        assert_eq!(p.schedule.seconds, 105);
        // The last reconcile before t = 0 fails: the last proposal is recorded a period earlier.
        assert_eq!(
            p.memory.recommendations.last().map(|r| (r.replicas, r.at)),
            Some((0, -30))
        );
    }

    #[test]
    fn a_prelude_is_refused_where_its_zero_metrics_fail_or_no_window_holds() {
        let (_, p) = played(corpus("controller/ht-no-scale-down-one-metric-empty.yaml"));
        let e = p.unwrap_err();
        assert!(e.contains("would record an event"), "{e}");
        let mut case = corpus("algorithm/tolerance-band-just-outside.yaml");
        let behavior = serde_json::json!({"scaleDown": {"stabilizationWindowSeconds": 0}});
        case.hpa.spec.behavior = Some(serde_json::from_value(behavior).unwrap());
        let e = played(case).1.unwrap_err();
        assert!(e.contains("stabilization windows are 0 s"), "{e}");
    }

    #[test]
    fn seeded_recommendations_are_recorded_at_their_reconciles_from_a_level_in_the_middle() {
        // Recommendations 4 at t=−120 and 5 at t=−60 hold a scale-down to 3 at 5 (current 6).
        let written = corpus("controller/ht-normalize-desired-replicas-stabilize.yaml");
        let (case, p) = seeded(&written, Answers::Level(0));
        let p = p.unwrap();
        assert_eq!(p.schedule.seconds, 315);
        // External qps, AverageValue 1 over 6 pods: 3001m–4000m propose 4, 4001m–5000m 5.
        assert_eq!(
            p.schedule.seeded,
            vec![
                Seeded {
                    at: -120,
                    answers: Answers::Level(3500),
                    replicas: 4
                },
                Seeded {
                    at: -60,
                    answers: Answers::Level(4500),
                    replicas: 5
                },
            ]
        );
        let recs: Vec<(i32, i64)> = p
            .memory
            .recommendations
            .iter()
            .map(|r| (r.replicas, r.at))
            .collect();
        assert!(
            recs.contains(&(4, -120)) && recs.contains(&(5, -60)),
            "{recs:?}"
        );
        assert!(
            recs.iter()
                .filter(|r| r.1 > -315)
                .all(|&(n, t)| n == 0 || t == -120 || t == -60),
            "{recs:?}"
        );
        for skew in [0, 1, -1, -7, -14] {
            crate::cluster::seed::same_trace(&written, &posed(&case, &p, skew), &opts()).unwrap();
        }
        // The zero filler alone (no seeds played) scales to 3, not 5.
        let (case, bare) = played(written.clone());
        let e =
            crate::cluster::seed::same_trace(&written, &posed(&case, &bare.unwrap(), 0), &opts())
                .unwrap_err();
        assert!(e.contains("replicas 3 instead of 5"), "{e}");
        assert!(
            p.schedule
                .words()
                .contains("3500m at t=-120 (the seeded 4)"),
            "{}",
            p.schedule.words()
        );
    }

    #[test]
    fn a_scale_up_window_takes_t0s_answers_as_filler_where_zero_would_hold_the_count_down() {
        // Scale-up window 300 s: recommendations 4 and 5 hold a scale-up to 7 at 4 (current 1);
        // zero proposals in the window would hold it at 1.
        let written =
            corpus("controller/ht-normalize-desired-replicas-with-behavior-simple-up.yaml");
        let (case, zero) = seeded(&written, Answers::Level(0));
        let e =
            crate::cluster::seed::same_trace(&written, &posed(&case, &zero.unwrap(), 0), &opts())
                .unwrap_err();
        assert!(e.contains("replicas 1 instead of 4"), "{e}");
        let (case, p) = seeded(&written, Answers::AtZero);
        let p = p.unwrap();
        assert_eq!(p.schedule.seconds, 315);
        assert_eq!(
            p.schedule.seeded.iter().map(|e| e.at).collect::<Vec<_>>(),
            vec![-120, -60]
        );
        for skew in [0, 1, -1, -7, -14] {
            crate::cluster::seed::same_trace(&written, &posed(&case, &p, skew), &opts()).unwrap();
        }
    }
}
