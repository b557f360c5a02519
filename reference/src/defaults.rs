//! The API server's defaulting of `autoscaling/v2` HPAs (upstream `SetDefaults_*`), applied to an
//! HPA as a user writes it so every target sees the object the API server would store.

use std::sync::LazyLock;

use k8s_openapi::api::autoscaling::v2::{
    HPAScalingPolicy, HPAScalingRules, HorizontalPodAutoscaler, MetricSpec, MetricTarget,
    ResourceMetricSource,
};

/// Utilization target of the default CPU metric (`autoscaling.DefaultCPUUtilization`).
pub const DEFAULT_CPU_UTILIZATION: i32 = 80;

fn policy(type_: &str, value: i32, period_seconds: i32) -> HPAScalingPolicy {
    HPAScalingPolicy {
        type_: type_.to_string(),
        value,
        period_seconds,
    }
}

/// Fills unset fields of a direction's rules over the given defaults; set fields are kept and a
/// user's `policies` list replaces the default one whole.
fn fill(rules: Option<&HPAScalingRules>, defaults: HPAScalingRules) -> HPAScalingRules {
    let Some(r) = rules else { return defaults };
    HPAScalingRules {
        policies: r.policies.clone().or(defaults.policies),
        select_policy: r.select_policy.clone().or(defaults.select_policy),
        stabilization_window_seconds: r
            .stabilization_window_seconds
            .or(defaults.stabilization_window_seconds),
        tolerance: r.tolerance.clone().or(defaults.tolerance),
    }
}

/// Scale-up rules with defaults: window 0, Max, `[Pods 4 / 15 s, Percent 100 / 15 s]`.
pub fn scale_up_rules(rules: Option<&HPAScalingRules>) -> HPAScalingRules {
    fill(
        rules,
        HPAScalingRules {
            policies: Some(vec![policy("Pods", 4, 15), policy("Percent", 100, 15)]),
            select_policy: Some("Max".into()),
            stabilization_window_seconds: Some(0),
            tolerance: None,
        },
    )
}

/// Scale-down rules with defaults: window left unset (the controller's flag applies), Max,
/// `[Percent 100 / 15 s]`.
pub fn scale_down_rules(rules: Option<&HPAScalingRules>) -> HPAScalingRules {
    fill(
        rules,
        HPAScalingRules {
            policies: Some(vec![policy("Percent", 100, 15)]),
            select_policy: Some("Max".into()),
            stabilization_window_seconds: None,
            tolerance: None,
        },
    )
}

/// [`scale_up_rules`]`(None)`, built once.
pub fn scale_up_defaults() -> &'static HPAScalingRules {
    static DEFAULTS: LazyLock<HPAScalingRules> = LazyLock::new(|| scale_up_rules(None));
    &DEFAULTS
}

/// [`scale_down_rules`]`(None)`, built once.
pub fn scale_down_defaults() -> &'static HPAScalingRules {
    static DEFAULTS: LazyLock<HPAScalingRules> = LazyLock::new(|| scale_down_rules(None));
    &DEFAULTS
}

/// Applies the API server's defaults in place: `minReplicas: 1`, the CPU 80% metric when none is
/// given, and both behavior directions when `behavior` is present (even `behavior: {}`).
pub fn apply_api_defaults(hpa: &mut HorizontalPodAutoscaler) {
    let spec = &mut hpa.spec;
    if spec.min_replicas.is_none() {
        spec.min_replicas = Some(1);
    }
    if spec.metrics.as_ref().is_none_or(|m| m.is_empty()) {
        spec.metrics = Some(vec![MetricSpec {
            type_: "Resource".into(),
            resource: Some(ResourceMetricSource {
                name: "cpu".into(),
                target: MetricTarget {
                    type_: "Utilization".into(),
                    average_utilization: Some(DEFAULT_CPU_UTILIZATION),
                    ..MetricTarget::default()
                },
            }),
            ..MetricSpec::default()
        }]);
    }
    if let Some(b) = spec.behavior.as_mut() {
        b.scale_up = Some(scale_up_rules(b.scale_up.as_ref()));
        b.scale_down = Some(scale_down_rules(b.scale_down.as_ref()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_policies_replace_defaults_and_other_fields_are_filled() {
        let user = HPAScalingRules {
            policies: Some(vec![policy("Pods", 1, 60)]),
            ..HPAScalingRules::default()
        };
        let r = scale_up_rules(Some(&user));
        assert_eq!(r.policies.unwrap(), vec![policy("Pods", 1, 60)]);
        assert_eq!(r.select_policy.as_deref(), Some("Max"));
        assert_eq!(r.stabilization_window_seconds, Some(0));
        assert_eq!(scale_down_rules(None).stabilization_window_seconds, None);
    }
}
