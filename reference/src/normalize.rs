//! From the metrics' desired count to the count the controller writes: stabilization, rate
//! limits and min/max clamping, on the two upstream paths — without `behavior`
//! (`normalizeDesiredReplicas`) and with it (`normalizeDesiredReplicasWithBehaviors`) — plus the
//! scale-event bookkeeping that the behavior policies read.

use k8s_openapi::api::autoscaling::v2::{
    HPAScalingPolicy, HPAScalingRules, HorizontalPodAutoscalerBehavior,
};

use crate::defaults::{scale_down_defaults, scale_up_defaults};
use crate::gomath::go_i32;
use crate::memory::{Memory, Recommendation, ScaleEvent};
use crate::settings::Settings;
use crate::time::Time;

/// A condition the normalization sets: `(status, reason, message)`.
pub type CondParts = (bool, &'static str, &'static str);

/// The result of normalization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    /// After stabilization.
    pub stabilized: i32,
    /// After rate limits and min/max: the new desired count.
    pub desired: i32,
    /// The `AbleToScale` condition to set.
    pub able_to_scale: CondParts,
    /// The `ScalingLimited` condition to set.
    pub scaling_limited: CondParts,
}

const READY_FOR_NEW_SCALE: CondParts = (
    true,
    "ReadyForNewScale",
    "recommended size matches current size",
);
const SCALE_DOWN_STABILIZED: CondParts = (
    true,
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent recommendation",
);
const SCALE_UP_STABILIZED: CondParts = (
    true,
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
);
const SCALE_UP_LIMIT: (&str, &str) = (
    "ScaleUpLimit",
    "the desired replica count is increasing faster than the maximum scale rate",
);
const SCALE_DOWN_LIMIT: (&str, &str) = (
    "ScaleDownLimit",
    "the desired replica count is decreasing faster than the maximum scale rate",
);
const TOO_MANY: (&str, &str) = (
    "TooManyReplicas",
    "the desired replica count is more than the maximum replica count",
);
const TOO_FEW: (&str, &str) = (
    "TooFewReplicas",
    "the desired replica count is less than the minimum replica count",
);
const WITHIN_RANGE: (&str, &str) = (
    "DesiredWithinRange",
    "the desired count is within the acceptable range",
);

fn limited(
    desired: i32,
    stabilized: i32,
    (reason, message): (&'static str, &'static str),
) -> CondParts {
    (desired != stabilized, reason, message)
}

/// Records `{desired, now}` in the recommendation list: into the slot of the last old entry if
/// there is one, else appended.
fn record(recs: &mut Vec<Recommendation>, old_slot: Option<usize>, desired: i32, now: Time) {
    let rec = Recommendation {
        replicas: desired,
        timestamp: now,
    };
    match old_slot {
        Some(i) => recs[i] = rec,
        None => recs.push(rec),
    }
}

/// The path without `behavior`: downscale-only stabilization over the controller's window (an
/// entry exactly at the cutoff still counts), then a scale-up limit of `max(2×current, 4)`.
pub fn without_behavior(
    now: Time,
    settings: &Settings,
    memory: &mut Memory,
    current: i32,
    prenormalized: i32,
    min: i32,
    max: i32,
) -> Normalized {
    let cutoff = now.minus(settings.downscale_stabilization);
    let recs = memory.recommendations.get_or_insert_with(Vec::new);
    let mut stabilized = prenormalized;
    let mut old_slot = None;
    for (i, rec) in recs.iter().enumerate() {
        if rec.timestamp.before(cutoff) {
            old_slot = Some(i);
        } else if rec.replicas > stabilized {
            stabilized = rec.replicas;
        }
    }
    record(recs, old_slot, prenormalized, now);

    let able_to_scale = if stabilized != prenormalized {
        SCALE_DOWN_STABILIZED
    } else {
        READY_FOR_NEW_SCALE
    };
    let scale_up_limit = go_i32(
        (settings.scale_up_limit_factor * f64::from(current)).max(settings.scale_up_limit_minimum),
    );
    let (max_allowed, max_reason) = if max > scale_up_limit {
        (scale_up_limit, SCALE_UP_LIMIT)
    } else {
        (max, TOO_MANY)
    };
    let (desired, why) = if stabilized < min {
        (min, TOO_FEW)
    } else if stabilized > max_allowed {
        (max_allowed, max_reason)
    } else {
        (stabilized, WITHIN_RANGE)
    };
    Normalized {
        stabilized,
        desired,
        able_to_scale,
        scaling_limited: limited(desired, stabilized, why),
    }
}

/// A direction's rules with API defaults and the controller's scale-down window filled in,
/// borrowed from the HPA (or the defaults) as [`crate::defaults`]'s `fill` would fill them.
struct Rules<'a> {
    window_seconds: i64,
    select_policy: &'a str,
    policies: &'a [HPAScalingPolicy],
}

impl<'a> Rules<'a> {
    fn of(
        rules: Option<&'a HPAScalingRules>,
        defaults: &'a HPAScalingRules,
        default_window_seconds: i64,
    ) -> Rules<'a> {
        let policies = rules
            .and_then(|r| r.policies.as_deref())
            .or(defaults.policies.as_deref());
        let select_policy = rules
            .and_then(|r| r.select_policy.as_deref())
            .or(defaults.select_policy.as_deref());
        let window = rules
            .and_then(|r| r.stabilization_window_seconds)
            .or(defaults.stabilization_window_seconds);
        Rules {
            window_seconds: window.map(i64::from).unwrap_or(default_window_seconds),
            select_policy: select_policy.unwrap_or("Max"),
            policies: policies.unwrap_or_default(),
        }
    }
}

/// Sum of the changes of events strictly after `now - period`, in int32 arithmetic that wraps
/// like upstream's.
fn change_in_period(now: Time, period_seconds: i32, events: &[ScaleEvent]) -> i32 {
    let cutoff = now.minus_secs(i64::from(period_seconds));
    events
        .iter()
        .filter(|e| e.timestamp.after(cutoff))
        .fold(0i32, |acc, e| acc.wrapping_add(e.change))
}

fn period_start(now: Time, current: i32, period: i32, memory: &Memory) -> i32 {
    current
        .wrapping_sub(change_in_period(now, period, &memory.scale_up_events))
        .wrapping_add(change_in_period(now, period, &memory.scale_down_events))
}

fn scale_up_limit(now: Time, current: i32, memory: &Memory, rules: &Rules) -> i32 {
    if rules.select_policy == "Disabled" {
        return current;
    }
    let min_change = rules.select_policy == "Min";
    let mut result = if min_change { i32::MAX } else { i32::MIN };
    for p in rules.policies {
        let start = period_start(now, current, p.period_seconds, memory);
        let proposed = match p.type_.as_str() {
            "Pods" => start.wrapping_add(p.value),
            "Percent" => go_i32((f64::from(start) * (1.0 + f64::from(p.value) / 100.0)).ceil()),
            _ => continue,
        };
        result = if min_change {
            result.min(proposed)
        } else {
            result.max(proposed)
        };
    }
    result
}

fn scale_down_limit(now: Time, current: i32, memory: &Memory, rules: &Rules) -> i32 {
    if rules.select_policy == "Disabled" {
        return current;
    }
    let min_change = rules.select_policy == "Min";
    let mut result = if min_change { i32::MIN } else { i32::MAX };
    for p in rules.policies {
        let start = period_start(now, current, p.period_seconds, memory);
        let proposed = match p.type_.as_str() {
            "Pods" => start.wrapping_sub(p.value),
            // Truncation toward zero, like Go's int32(float64).
            "Percent" => go_i32(f64::from(start) * (1.0 - f64::from(p.value) / 100.0)),
            _ => continue,
        };
        result = if min_change {
            result.max(proposed)
        } else {
            result.min(proposed)
        };
    }
    result
}

/// The path with `behavior`: stabilization windows in both directions, then the policies' rate
/// limits over their periods, then min/max.
#[allow(clippy::too_many_arguments)]
pub fn with_behavior(
    now: Time,
    settings: &Settings,
    behavior: &HorizontalPodAutoscalerBehavior,
    memory: &mut Memory,
    current: i32,
    prenormalized: i32,
    min: i32,
    max: i32,
) -> Normalized {
    let default_down_window = settings.downscale_stabilization.as_secs() as i64;
    let up = Rules::of(behavior.scale_up.as_ref(), scale_up_defaults(), 0);
    let down = Rules::of(
        behavior.scale_down.as_ref(),
        scale_down_defaults(),
        default_down_window,
    );

    // Stabilization: clamp current into [min over the up window, max over the down window].
    let up_cutoff = now.minus_secs(up.window_seconds);
    let down_cutoff = now.minus_secs(down.window_seconds);
    let recs = memory.recommendations.get_or_insert_with(Vec::new);
    let mut up_rec = prenormalized;
    let mut down_rec = prenormalized;
    let mut old_slot = None;
    for (i, rec) in recs.iter().enumerate() {
        if rec.timestamp.after(up_cutoff) {
            up_rec = up_rec.min(rec.replicas);
        }
        if rec.timestamp.after(down_cutoff) {
            down_rec = down_rec.max(rec.replicas);
        }
        if rec.timestamp.before(up_cutoff) && rec.timestamp.before(down_cutoff) {
            old_slot = Some(i);
        }
    }
    let mut stabilized = current;
    if stabilized < up_rec {
        stabilized = up_rec;
    }
    if stabilized > down_rec {
        stabilized = down_rec;
    }
    record(recs, old_slot, prenormalized, now);
    let able_to_scale = if stabilized == prenormalized {
        READY_FOR_NEW_SCALE
    } else if prenormalized >= current {
        SCALE_UP_STABILIZED
    } else {
        SCALE_DOWN_STABILIZED
    };

    // Rate limits.
    let (desired, why) = if stabilized > current {
        let limit = scale_up_limit(now, current, memory, &up).max(current);
        let (max_allowed, reason) = if max > limit {
            (limit, SCALE_UP_LIMIT)
        } else {
            (max, TOO_MANY)
        };
        if stabilized > max_allowed {
            (max_allowed, reason)
        } else {
            (stabilized, WITHIN_RANGE)
        }
    } else if stabilized < current {
        let limit = scale_down_limit(now, current, memory, &down).min(current);
        let (min_allowed, reason) = if min < limit {
            (limit, SCALE_DOWN_LIMIT)
        } else {
            (min, TOO_FEW)
        };
        if stabilized < min_allowed {
            (min_allowed, reason)
        } else {
            (stabilized, WITHIN_RANGE)
        }
    } else {
        (stabilized, WITHIN_RANGE)
    };
    Normalized {
        stabilized,
        desired,
        able_to_scale,
        scaling_limited: limited(desired, stabilized, why),
    }
}

/// Records a successful rescale for the behavior policies (nothing without `behavior`): events
/// older than the direction's longest policy period are marked outdated, and the last outdated
/// slot is reused, else the event is appended.
pub fn store_scale_event(
    behavior: Option<&HorizontalPodAutoscalerBehavior>,
    memory: &mut Memory,
    previous: i32,
    new: i32,
    now: Time,
) {
    if let Some(behavior) = behavior {
        record_scale_event(longest_periods(behavior), memory, previous, new, now);
    }
}

/// The longest policy period of each direction, `(up, down)`, with API defaults: what
/// [`record_scale_event`] needs of the behavior.
pub fn longest_periods(behavior: &HorizontalPodAutoscalerBehavior) -> (i32, i32) {
    let longest = |rules: Rules<'_>| {
        rules
            .policies
            .iter()
            .map(|p| p.period_seconds)
            .max()
            .unwrap_or(0)
    };
    (
        longest(Rules::of(
            behavior.scale_up.as_ref(),
            scale_up_defaults(),
            0,
        )),
        longest(Rules::of(
            behavior.scale_down.as_ref(),
            scale_down_defaults(),
            0,
        )),
    )
}

/// [`store_scale_event`] given the [`longest_periods`] of the behavior.
pub fn record_scale_event(
    (longest_up, longest_down): (i32, i32),
    memory: &mut Memory,
    previous: i32,
    new: i32,
    now: Time,
) {
    let (longest, events) = if new > previous {
        (longest_up, &mut memory.scale_up_events)
    } else {
        (longest_down, &mut memory.scale_down_events)
    };
    let cutoff = now.minus_secs(i64::from(longest));
    for e in events.iter_mut() {
        if e.timestamp.before(cutoff) {
            e.outdated = true;
        }
    }
    let event = ScaleEvent {
        change: (new - previous).abs(),
        timestamp: now,
        outdated: false,
    };
    // The last outdated slot is reused (upstream's loop keeps the last index it saw).
    match events.iter_mut().rev().find(|e| e.outdated) {
        Some(slot) => *slot = event,
        None => events.push(event),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::autoscaling::v2::HPAScalingPolicy;

    fn policy(type_: &str, value: i32, period: i32) -> HPAScalingPolicy {
        HPAScalingPolicy {
            type_: type_.into(),
            value,
            period_seconds: period,
        }
    }

    fn walk_down_behavior() -> HorizontalPodAutoscalerBehavior {
        HorizontalPodAutoscalerBehavior {
            scale_down: Some(HPAScalingRules {
                policies: Some(vec![policy("Pods", 4, 60), policy("Percent", 10, 60)]),
                stabilization_window_seconds: Some(0),
                ..HPAScalingRules::default()
            }),
            scale_up: None,
        }
    }

    #[test]
    fn percent_scale_down_truncates_and_max_picks_the_bigger_change() {
        let b = walk_down_behavior();
        let mut mem = Memory::default();
        let s = Settings::default();
        let mut current = 80;
        let mut seen = vec![current];
        for step in 0..20 {
            let now = Time::from_secs(step * 60);
            let n = with_behavior(now, &s, &b, &mut mem, current, 10, 1, 100);
            if n.desired != current {
                store_scale_event(Some(&b), &mut mem, current, n.desired, now);
                current = n.desired;
                seen.push(current);
            }
        }
        assert_eq!(
            seen,
            vec![80, 72, 64, 57, 51, 45, 40, 36, 32, 28, 24, 20, 16, 12, 10]
        );
    }

    #[test]
    fn an_event_exactly_one_period_old_is_outside_the_period() {
        let b = walk_down_behavior();
        let mut mem = Memory::default();
        let s = Settings::default();
        store_scale_event(Some(&b), &mut mem, 80, 72, Time::from_secs(0));
        let within = with_behavior(Time::from_secs(59), &s, &b, &mut mem, 72, 10, 1, 100);
        assert_eq!(within.desired, 72);
        assert_eq!(
            within.scaling_limited,
            (true, "ScaleDownLimit", SCALE_DOWN_LIMIT.1)
        );
        let at = with_behavior(Time::from_secs(60), &s, &b, &mut mem, 72, 10, 1, 100);
        assert_eq!(at.desired, 64);
    }

    #[test]
    fn scale_up_percent_rounds_up_with_history() {
        // up +4 and down -2 within the period, current 6, 300% → period start 4 → ceil(4×4) = 16
        let b = HorizontalPodAutoscalerBehavior {
            scale_up: Some(HPAScalingRules {
                policies: Some(vec![policy("Percent", 300, 300)]),
                ..HPAScalingRules::default()
            }),
            scale_down: Some(HPAScalingRules {
                policies: Some(vec![policy("Pods", 100, 300)]),
                ..HPAScalingRules::default()
            }),
        };
        let mut mem = Memory {
            recommendations: Some(vec![]),
            ..Memory::default()
        };
        let t = Time::from_secs(1000);
        store_scale_event(Some(&b), &mut mem, 2, 6, t.minus_secs(100));
        store_scale_event(Some(&b), &mut mem, 6, 4, t.minus_secs(50));
        let n = with_behavior(t, &Settings::default(), &b, &mut mem, 6, 100, 1, 1000);
        assert_eq!(n.desired, 16);
    }

    #[test]
    fn no_behavior_window_includes_an_entry_exactly_at_the_cutoff() {
        let s = Settings::default();
        let mut mem = Memory {
            recommendations: Some(vec![Recommendation {
                replicas: 10,
                timestamp: Time::from_secs(0),
            }]),
            ..Memory::default()
        };
        let n = without_behavior(Time::from_secs(300), &s, &mut mem, 10, 2, 1, 20);
        assert_eq!(n.desired, 10);
        let n = without_behavior(Time::from_secs(301), &s, &mut mem, 10, 2, 1, 20);
        // the 10 at t=0 is now old; the 2 recorded at t=300 remains
        assert_eq!(n.desired, 2);
    }

    #[test]
    fn no_behavior_scale_up_limit_is_twice_current_or_four() {
        let s = Settings::default();
        let mut mem = Memory::default();
        let n = without_behavior(Time::from_secs(0), &s, &mut mem, 1, 10, 1, 100);
        assert_eq!((n.desired, n.scaling_limited.1), (4, "ScaleUpLimit"));
        let n = without_behavior(Time::from_secs(0), &s, &mut mem, 5, 50, 1, 100);
        assert_eq!(n.desired, 10);
        let n = without_behavior(Time::from_secs(0), &s, &mut mem, 5, 50, 1, 8);
        assert_eq!(
            (n.desired, n.scaling_limited),
            (8, (true, TOO_MANY.0, TOO_MANY.1))
        );
    }
}
