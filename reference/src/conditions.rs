//! HPA status conditions: upstream's `setConditionInList` (update in place keeping position,
//! append otherwise, move `lastTransitionTime` only when the status changes) and the exact
//! condition types, reasons and messages.

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerCondition;

use crate::recycle::{self, Pooled, Text};
use crate::time::{Time, kube_time};

/// `AbleToScale`.
pub const ABLE_TO_SCALE: &str = "AbleToScale";
/// `ScalingActive`.
pub const SCALING_ACTIVE: &str = "ScalingActive";
/// `ScalingLimited`.
pub const SCALING_LIMITED: &str = "ScalingLimited";
/// `ScaledToZero`.
pub const SCALED_TO_ZERO: &str = "ScaledToZero";

/// Sets a condition the way upstream does. The message is a `&str`, a `String` or
/// `format_args!(…)`; the condition's strings are reused ([`recycle`]).
pub fn set_condition(
    list: &mut Vec<HorizontalPodAutoscalerCondition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: impl Text,
    now: Time,
) {
    let status = if status { "True" } else { "False" };
    let idx = match list.iter().position(|c| c.type_ == type_) {
        Some(i) => i,
        None => {
            list.push(HorizontalPodAutoscalerCondition {
                type_: recycle::text(type_),
                status: recycle::string(),
                ..HorizontalPodAutoscalerCondition::default()
            });
            list.len() - 1
        }
    };
    let cond = &mut list[idx];
    if cond.status != status {
        cond.last_transition_time = Some(kube_time(now));
    }
    status.assign_to(&mut cond.status);
    recycle::assign(&mut cond.reason, reason);
    recycle::assign(&mut cond.message, message);
}

/// A copy of `conditions` in reused buffers.
pub fn copy_conditions(
    conditions: &[HorizontalPodAutoscalerCondition],
) -> Vec<HorizontalPodAutoscalerCondition> {
    let mut list = recycle::list();
    list.extend(conditions.iter().map(|c| HorizontalPodAutoscalerCondition {
        type_: recycle::text(&c.type_),
        status: recycle::text(&c.status),
        reason: c.reason.as_deref().map(recycle::text),
        message: c.message.as_deref().map(recycle::text),
        last_transition_time: c.last_transition_time.clone(),
        // 1.37's conditions may carry one; the controller keeps it and never sets it.
        observed_generation: c.observed_generation,
    }));
    list
}

/// Removes every condition of a type.
pub fn remove_condition(list: &mut Vec<HorizontalPodAutoscalerCondition>, type_: &str) {
    while let Some(at) = list.iter().position(|c| c.type_ == type_) {
        list.remove(at).give_parts();
    }
}

/// Whether a condition of the type is present with status True.
pub fn is_true(list: &[HorizontalPodAutoscalerCondition], type_: &str) -> bool {
    list.iter().any(|c| c.type_ == type_ && c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_in_place_and_moves_transition_time_only_on_status_change() {
        let mut list = Vec::new();
        set_condition(&mut list, ABLE_TO_SCALE, true, "A", "a", Time::from_secs(1));
        set_condition(
            &mut list,
            SCALING_ACTIVE,
            true,
            "B",
            "b",
            Time::from_secs(1),
        );
        set_condition(&mut list, ABLE_TO_SCALE, true, "C", "c", Time::from_secs(2));
        assert_eq!(list[0].reason.as_deref(), Some("C"));
        assert_eq!(
            list[0].last_transition_time,
            Some(kube_time(Time::from_secs(1)))
        );
        set_condition(
            &mut list,
            ABLE_TO_SCALE,
            false,
            "D",
            "d",
            Time::from_secs(3),
        );
        assert_eq!(
            list[0].last_transition_time,
            Some(kube_time(Time::from_secs(3)))
        );
        assert_eq!(list[1].type_, SCALING_ACTIVE);
    }
}
