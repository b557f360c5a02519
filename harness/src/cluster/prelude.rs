//! A prelude: the controller records a case's memory itself, before t = 0. A running controller
//! cannot be given a seeded memory ([`super::seed`]), and most seeds in the corpus say one thing:
//! the controller has known the HPA for a while, so no initial recommendation (the current count,
//! recorded at its first reconcile) holds a scale-down at t = 0. A cluster reaches that state by
//! time: the lane creates the HPA a scale-down window and a sync period early (in whole periods),
//! its pods already as at t = 0, and serves every metric it will serve at t = 0 with its value
//! zero ([`quiet`]). The initial recommendation holds the count through the prelude; the zero
//! metrics' proposals it records lie below every later one. The last reconcile before t = 0, the
//! one where the initial recommendation leaves the window (on a cluster a matter of milliseconds
//! either way), sees every metric fail ([`failing`]): it records nothing and scales nothing. The
//! next one is t = 0, surely past the window's end (the lane takes it from the failing reconcile
//! it sees, `cluster::lane`).
//!
//! [`prelude`] plays the prelude on the in-process reference core, reconcile by reconcile on the
//! clock the cluster's controller will see (negative times, the pods and samples stamped as at
//! t = 0), and gives the memory and status it leaves; the caller runs the case from those on the
//! core ([`posed`]), its recorded times as planned and moved by up to a sync period (where the
//! cluster's reconciles may fall), and poses it with a prelude only when every trace is the
//! case's own. A prelude that would scale the target or record an event before its failing
//! reconcile is refused: the cluster's controller would be doing something the case does not show.

use hpa_reference::metrics_api::MetricsApis;
use hpa_reference::{Memory, Settings};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerStatus;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::case::Case;
use crate::case::model::MemorySeed;
use crate::targets::{CoreSession, Session as _};
use crate::world::{World, instant};

/// What a prelude leaves at t = 0.
#[derive(Debug, Clone)]
pub struct Prelude {
    /// How long before t = 0 the controller first reconciles the HPA (case seconds, whole sync
    /// periods): the scale-down window and one period more, rounded down to whole periods.
    pub seconds: u32,
    /// The controller's memory of the HPA at t = 0, as a case seeds one.
    pub memory: MemorySeed,
    /// The status the prelude's last reconcile wrote.
    pub status: HorizontalPodAutoscalerStatus,
}

/// The metrics answers a prelude serves: `apis` with every value zero — the same pods, objects,
/// series, errors and timestamps.
pub fn quiet(apis: &MetricsApis) -> MetricsApis {
    let zero = || Quantity("0".into());
    let mut q = apis.clone();
    for m in &mut q.resource.items {
        for c in &mut m.containers {
            c.usage.values_mut().for_each(|v| *v = zero());
        }
    }
    for l in q.pods.values_mut() {
        l.items.iter_mut().for_each(|v| v.value = zero());
    }
    for o in q.object.values_mut() {
        if let Some(v) = &mut o.value {
            v.value = zero();
        }
    }
    for l in q.external.values_mut() {
        l.items.iter_mut().for_each(|v| v.value = zero());
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

/// The prelude of `case` (as the cluster poses it: no memory, no starting status, at the release
/// `settings` name) on the reference core, or why there is none to play.
pub fn prelude(case: &Case, settings: &Settings) -> Result<Prelude, String> {
    if !case.members.is_empty() {
        return Err("the lane plays a prelude only for a case with one HPA".into());
    }
    let period = i64::from(case.sync_period.max(1));
    let window = case
        .hpa
        .spec
        .behavior
        .as_ref()
        .and_then(|b| b.scale_down.as_ref())
        .and_then(|d| d.stabilization_window_seconds)
        .map(i64::from)
        .unwrap_or(settings.downscale_stabilization.as_secs() as i64);
    if window <= 0 {
        return Err("its scale-down window is 0 s, so no recommendation holds a scale-down and the time before t = 0 records nothing that matters".into());
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
    let mut session = CoreSession::new(settings.clone(), Memory::default()).reporting_memory(true);
    let mut last = None;
    for k in 0..length / period {
        let t = k * period - length;
        let fails = t == -period;
        let mut s = world.snapshot(0);
        s.metrics = quiet(&s.metrics);
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
                "a prelude with its metrics at zero would scale it to {n} at t={t} (of {} s before t = 0)",
                length
            ));
        }
        if let Some(e) = out.events.first().filter(|_| !fails) {
            return Err(format!(
                "a prelude with its metrics at zero would record an event at t={t}: {} {}",
                e.reason, e.message
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
        return Err("the prelude's reconciles with its metrics at zero fail before recording a recommendation, so the controller would take its initial one at t = 0".into());
    };
    Ok(Prelude {
        seconds: u32::try_from(length).map_err(|e| e.to_string())?,
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
        let p = prelude(&case, &settings);
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
        assert_eq!(p.seconds, 315);
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
        assert_eq!(p.seconds, 105);
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
        assert!(e.contains("scale-down window is 0 s"), "{e}");
    }
}
