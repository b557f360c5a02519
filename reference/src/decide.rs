//! One reconcile of one HPA (upstream's `reconcileAutoscaler` and `computeReplicasForMetrics`),
//! as a pure function in two steps so the caller does the one write whose outcome matters:
//!
//! 1. [`decide`] reads the [`Observation`] and returns a [`Plan`]: the desired count and, when it
//!    differs from the current one, the scale write to make. Recommendations are recorded in
//!    [`Memory`] here, as upstream does before it writes.
//! 2. The caller writes the scale (or not), then [`Plan::finish`] with the write's outcome gives the
//!    [`Decision`]: the new status, the events, and the scale events recorded in memory.

use k8s_openapi::api::autoscaling::v2::{
    HorizontalPodAutoscalerBehavior, HorizontalPodAutoscalerCondition,
    HorizontalPodAutoscalerStatus, MetricStatus,
};

use crate::calculator::{CalcContext, PodOrder, RequestRules, Tolerances, sorted_index};
use crate::conditions::{
    ABLE_TO_SCALE, SCALED_TO_ZERO, SCALING_ACTIVE, SCALING_LIMITED, copy_conditions, is_true,
    remove_condition, set_condition,
};
use crate::memory::Memory;
use crate::metric::compute_metric;
use crate::normalize::{self, record_scale_event};
use crate::outcome::{ErrorOrigin, Event, EventType, Explanation, MetricExplanation, Path};
use crate::quantity;
use crate::recycle::{self, Text};
use crate::selector;
use crate::settings::Settings;
use crate::time::Time;
use crate::time::kube_time;
use crate::view::{Observation, ScaleView};

/// Called around each metric's computation so the caller can time it (upstream's
/// `metric_computation_duration_seconds`): the core itself reads no clock.
pub trait MetricHook {
    /// Before metric `index` of the spec is computed.
    fn before(&mut self, index: usize);
    /// After metric `index` was computed (successfully or not).
    fn after(&mut self, index: usize);
}

/// The hook that does nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHook;

impl MetricHook for NoHook {
    fn before(&mut self, _: usize) {}
    fn after(&mut self, _: usize) {}
}

/// A scale write the controller wants to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rescale {
    /// The new `spec.replicas`.
    pub replicas: i32,
    /// The reason in the event, e.g. `All metrics below target`.
    pub reason: String,
}

/// The decision before the scale write.
#[derive(Debug, Clone)]
pub struct Plan {
    /// `scale.spec.replicas` as observed (0 when the scale was unavailable).
    pub current_replicas: i32,
    /// The desired count.
    pub desired_replicas: i32,
    /// The write to make, if any.
    pub rescale: Option<Rescale>,
    /// The explanation.
    pub explanation: Explanation,
    now: Time,
    status: HorizontalPodAutoscalerStatus,
    metric_statuses: Option<Vec<MetricStatus>>,
    events: Vec<Event>,
    /// A fatal error: the status is final and no write may happen.
    fatal: Option<(String, ErrorOrigin)>,
    /// A partial error: scaling went on, the reconcile still reports it.
    partial: Option<(String, ErrorOrigin)>,
    /// The behavior's longest policy periods (up, down), when it has one.
    scale_event_periods: Option<(i32, i32)>,
    reference: String,
    scale_to_zero: bool,
    /// The release writes the `ScaledToZero` condition on a rescale (1.36's rework).
    writes_scaled_to_zero: bool,
    /// `status.observedGeneration` as each status write sets it (`HPAGeneration`, 1.37).
    observed_generation: Option<i64>,
    min_replicas: i32,
    has_object_or_external: bool,
}

/// The outcome of one reconcile.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The status to write.
    pub status: HorizontalPodAutoscalerStatus,
    /// The events recorded, in order.
    pub events: Vec<Event>,
    /// The replica count written to the scale, if a write succeeded.
    pub scaled_to: Option<i32>,
    /// The error the reconcile returns, if any (the controller requeues and logs it).
    pub error: Option<String>,
    /// Where `error` comes from.
    pub error_origin: Option<ErrorOrigin>,
    /// Why.
    pub explanation: Explanation,
    /// Whether the reconcile ended with `error` (a failed scale read, metrics or scale write)
    /// rather than going on after it.
    ended: bool,
}

/// The HPA's namespace (`default` when unset).
fn hpa_namespace<'a>(obs: &Observation<'a>) -> &'a str {
    obs.hpa.metadata.namespace.as_deref().unwrap_or("default")
}

/// The tolerance band for this HPA: the flag, overridden per direction by
/// `behavior.scaleUp/scaleDown.tolerance` when HPAConfigurableTolerance is on.
pub fn tolerances_for(
    behavior: Option<&HorizontalPodAutoscalerBehavior>,
    settings: &Settings,
) -> Tolerances {
    let mut t = Tolerances {
        per_direction: settings.version.changes().per_direction_tolerance,
        ..Tolerances::symmetric(settings.tolerance)
    };
    let Some(b) = behavior.filter(|_| settings.gates.hpa_configurable_tolerance) else {
        return t;
    };
    let parse = |q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity| {
        quantity::approx_f64(&q.0).ok()
    };
    if let Some(v) = b
        .scale_down
        .as_ref()
        .and_then(|r| r.tolerance.as_ref())
        .and_then(parse)
    {
        t.scale_down = v;
    }
    if let Some(v) = b
        .scale_up
        .as_ref()
        .and_then(|r| r.tolerance.as_ref())
        .and_then(parse)
    {
        t.scale_up = v;
    }
    t
}

/// Runs the reconcile up to the scale write. Records recommendations in `memory`.
pub fn decide(obs: &Observation<'_>, settings: &Settings, memory: &mut Memory) -> Plan {
    decide_with(obs, settings, memory, &mut NoHook)
}

/// [`decide`], calling `hook` around each metric's computation.
pub fn decide_with(
    obs: &Observation<'_>,
    settings: &Settings,
    memory: &mut Memory,
    hook: &mut dyn MetricHook,
) -> Plan {
    let now = obs.now;
    let spec = &obs.hpa.spec;
    let no_status;
    let original: &HorizontalPodAutoscalerStatus = match &obs.hpa.status {
        Some(s) => s,
        None => {
            no_status = HorizontalPodAutoscalerStatus::default();
            &no_status
        }
    };
    let mut conditions: Vec<HorizontalPodAutoscalerCondition> =
        copy_conditions(original.conditions.as_deref().unwrap_or_default());
    let mut events: Vec<Event> = recycle::list();
    let behavior = spec.behavior.as_ref();
    let metrics_spec: &[k8s_openapi::api::autoscaling::v2::MetricSpec] =
        spec.metrics.as_deref().unwrap_or_default();
    let has_object_or_external = metrics_spec
        .iter()
        .any(|m| m.type_ == "Object" || m.type_ == "External");
    let min_replicas = spec.min_replicas.unwrap_or(1);
    let gates = settings.gates;
    // 1.36's scale-to-zero rework (#135118): what happens at 0 replicas, and the condition.
    let rework = settings.version.changes().scale_to_zero_rework;

    let mut plan = Plan {
        current_replicas: 0,
        desired_replicas: original.desired_replicas,
        rescale: None,
        explanation: Explanation {
            path: Path::ScaleUnavailable,
            metrics: recycle::list(),
            metric_desired: None,
            stabilized: None,
            limited: None,
            rescale_reason: None,
        },
        now,
        // What `finish` reads of the original status (the conditions are set below); the failed
        // scale read keeps the whole of it.
        status: HorizontalPodAutoscalerStatus {
            desired_replicas: original.desired_replicas,
            last_scale_time: original.last_scale_time.clone(),
            ..HorizontalPodAutoscalerStatus::default()
        },
        metric_statuses: None,
        events: Vec::new(),
        fatal: None,
        partial: None,
        scale_event_periods: behavior.map(normalize::longest_periods),
        reference: String::new(),
        scale_to_zero: gates.hpa_scale_to_zero,
        writes_scaled_to_zero: rework,
        // `setStatus` copies the HPA's generation (0 when unset) with HPAGeneration on, and
        // leaves the field out otherwise.
        observed_generation: gates
            .hpa_generation
            .then(|| obs.hpa.metadata.generation.unwrap_or(0)),
        min_replicas,
        has_object_or_external,
    };

    let namespace = hpa_namespace(obs);
    plan.reference = recycle::format(format_args!(
        "{}/{}/{}",
        spec.scale_target_ref.kind, namespace, spec.scale_target_ref.name
    ));
    let reference = &plan.reference;
    let scale = match &obs.scale {
        Ok(s) => s,
        Err(e) => {
            events.push(Event {
                type_: EventType::Warning,
                reason: "FailedGetScale".into(),
                message: e.clone(),
            });
            set_condition(
                &mut conditions,
                ABLE_TO_SCALE,
                false,
                "FailedGetScale",
                format!("the HPA controller was unable to get the target's current scale: {e}"),
                now,
            );
            plan.status = HorizontalPodAutoscalerStatus {
                conditions: Some(conditions),
                ..original.clone()
            };
            plan.events = events;
            plan.fatal = Some((
                format!("failed to query scale subresource for {reference}: {e}"),
                ErrorOrigin::Internal,
            ));
            return plan;
        }
    };
    set_condition(
        &mut conditions,
        ABLE_TO_SCALE,
        true,
        "SucceededGetScale",
        "the HPA controller was able to get the target's current scale",
        now,
    );
    let current = scale.spec_replicas;
    plan.current_replicas = current;
    if memory.recommendations.is_none() {
        memory.recommendations = Some(vec![crate::memory::Recommendation {
            replicas: current,
            timestamp: now,
        }]);
    }

    let scaled_to_zero_condition =
        rework && gates.hpa_scale_to_zero && is_true(&conditions, SCALED_TO_ZERO);
    let can_scale_from_zero = scaled_to_zero_condition && has_object_or_external;
    // Before the rework, 0 replicas were scaled from (metrics computed) exactly when
    // `minReplicas` is 0, and disabled otherwise.
    let compute_for_zero = if rework {
        (min_replicas != 0 && scaled_to_zero_condition) || can_scale_from_zero
    } else {
        min_replicas == 0
    };

    let mut desired = 0;
    let mut rescale_reason = recycle::string();
    let mut rescale = true;
    let mut metric_statuses: Option<Vec<MetricStatus>> = None;

    if current == 0 && !compute_for_zero {
        plan.explanation.path = Path::ScalingDisabled;
        desired = 0;
        rescale = false;
        set_condition(
            &mut conditions,
            SCALING_ACTIVE,
            false,
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero",
            now,
        );
        if rework && !gates.hpa_scale_to_zero {
            remove_condition(&mut conditions, SCALED_TO_ZERO);
        }
    } else if current == 0 {
        // Scaling from zero (HPAScaleToZero): metrics decide, not the min/max branches.
        plan.explanation.path = Path::Computed;
    } else if current > spec.max_replicas {
        plan.explanation.path = Path::AboveMax;
        "Current number of replicas above Spec.MaxReplicas".assign_to(&mut rescale_reason);
        desired = spec.max_replicas;
    } else if current < min_replicas {
        plan.explanation.path = Path::BelowMin;
        "Current number of replicas below Spec.MinReplicas".assign_to(&mut rescale_reason);
        desired = min_replicas;
    } else {
        plan.explanation.path = Path::Computed;
    }
    if plan.explanation.path == Path::Computed {
        let ReplicasForMetrics {
            failure,
            named_metric,
            metric_desired,
            statuses,
        } = compute_replicas_for_metrics(
            obs,
            settings,
            scale,
            &mut plan,
            &mut conditions,
            &mut events,
            hook,
        );
        metric_statuses = statuses;
        let reference = &plan.reference;

        if let Some((err, origin)) = failure {
            plan.explanation.path = Path::MetricsFailed;
            plan.status = status_of(
                original,
                current,
                original.desired_replicas,
                metric_statuses,
                conditions,
                None,
                plan.observed_generation,
            );
            events.push(Event {
                type_: EventType::Warning,
                reason: "FailedComputeMetricsReplicas".into(),
                message: err.clone(),
            });
            plan.events = events;
            plan.fatal = Some((
                format!(
                    "failed to compute desired number of replicas based on listed metrics for {reference}: {err}"
                ),
                origin,
            ));
            plan.desired_replicas = original.desired_replicas;
            return plan;
        }

        plan.explanation.metric_desired = Some(metric_desired);
        let mut rescale_metric = "";
        if metric_desired > desired {
            desired = metric_desired;
            rescale_metric = metric_name_at(&plan.explanation, named_metric);
        }
        if desired > current {
            format_args!("{rescale_metric} above target").assign_to(&mut rescale_reason);
        }
        if desired < current {
            "All metrics below target".assign_to(&mut rescale_reason);
        }
        let n = match behavior {
            None => normalize::without_behavior(
                now,
                settings,
                memory,
                current,
                desired,
                min_replicas,
                spec.max_replicas,
            ),
            Some(b) => normalize::with_behavior(
                now,
                settings,
                b,
                memory,
                current,
                desired,
                min_replicas,
                spec.max_replicas,
            ),
        };
        let (s, r, m) = n.able_to_scale;
        set_condition(&mut conditions, ABLE_TO_SCALE, s, r, m, now);
        let (s, r, m) = n.scaling_limited;
        set_condition(&mut conditions, SCALING_LIMITED, s, r, m, now);
        plan.explanation.stabilized = Some(n.stabilized);
        plan.explanation.limited = Some(n.desired);
        desired = n.desired;

        if current == 0 && min_replicas != 0 && scaled_to_zero_condition && desired < min_replicas {
            desired = min_replicas;
            if rescale_reason.is_empty() {
                "Current number of replicas below Spec.MinReplicas".assign_to(&mut rescale_reason);
            }
        }
        rescale = desired != current;
    }

    if matches!(plan.explanation.path, Path::AboveMax | Path::BelowMin) {
        rescale = desired != current;
    }
    plan.explanation.rescale_reason =
        (!rescale_reason.is_empty()).then(|| recycle::text(&rescale_reason));
    plan.desired_replicas = desired;
    plan.metric_statuses = metric_statuses;
    plan.status.conditions = Some(conditions);
    plan.events = events;
    if rescale {
        plan.rescale = Some(Rescale {
            replicas: desired,
            reason: rescale_reason,
        });
    } else {
        recycle::give(rescale_reason);
    }
    plan
}

/// What [`compute_replicas_for_metrics`] found.
struct ReplicasForMetrics {
    /// The error that stops the reconcile: an invalid selector, or metrics too few or too
    /// invalid to scale on.
    failure: Option<(String, ErrorOrigin)>,
    /// The metric that gave the highest proposal: its index in the explanation's metrics.
    named_metric: Option<usize>,
    /// The highest proposal over the metrics (0 when they failed).
    metric_desired: i32,
    /// `currentMetrics`, when the metrics were computed.
    statuses: Option<Vec<MetricStatus>>,
}

/// Upstream's `computeReplicasForMetrics`: the scale's selector checked, each metric of the spec
/// computed ([`compute_metric`]) and the highest proposal taken, the invalid ones counted; sets
/// `ScalingActive` and records the events of what failed. A partial error (some metrics invalid,
/// scaling still on) is left in the plan.
fn compute_replicas_for_metrics(
    obs: &Observation<'_>,
    settings: &Settings,
    scale: &ScaleView,
    plan: &mut Plan,
    conditions: &mut Vec<HorizontalPodAutoscalerCondition>,
    events: &mut Vec<Event>,
    hook: &mut dyn MetricHook,
) -> ReplicasForMetrics {
    let now = obs.now;
    let namespace = hpa_namespace(obs);
    let behavior = obs.hpa.spec.behavior.as_ref();
    let metrics_spec: &[k8s_openapi::api::autoscaling::v2::MetricSpec] =
        obs.hpa.spec.metrics.as_deref().unwrap_or_default();
    let gates = settings.gates;
    let changes = settings.version.changes();
    let mut metric_statuses: Option<Vec<MetricStatus>> = None;
    // Selector.
    let selector_error = match scale.selector.as_deref().filter(|s| !s.is_empty()) {
        None => {
            events.push(Event {
                type_: EventType::Warning,
                reason: "SelectorRequired".into(),
                message: "selector is required".into(),
            });
            set_condition(
                conditions,
                SCALING_ACTIVE,
                false,
                "InvalidSelector",
                "the HPA target's scale is missing a selector",
                now,
            );
            Some("selector is required".to_string())
        }
        Some(sel) => match selector_valid(sel) {
            Err(e) => {
                let msg = format!(
                    "couldn't convert selector into a corresponding internal selector object: {e}"
                );
                events.push(Event {
                    type_: EventType::Warning,
                    reason: "InvalidSelector".into(),
                    message: msg.clone(),
                });
                set_condition(
                    conditions,
                    SCALING_ACTIVE,
                    false,
                    "InvalidSelector",
                    msg.clone(),
                    now,
                );
                Some(msg)
            }
            Ok(_) if obs.hpas_selecting_pods.len() > 1 => {
                // 1.37's selector store stops looking at the second HPA it finds (which two, of
                // more, follows Go's map order upstream; here the first two listed).
                let shown = if gates.hpa_optimized_selector_store {
                    &obs.hpas_selecting_pods[..2]
                } else {
                    obs.hpas_selecting_pods
                };
                let msg = if changes.selector_overlap_says_more_than_one {
                    format!(
                        "pods by selector {sel} are controlled by more than one HPA (e.g. [{}])",
                        shown.join(" ")
                    )
                } else {
                    format!(
                        "pods by selector {sel} are controlled by multiple HPAs: [{}]",
                        shown.join(" ")
                    )
                };
                events.push(Event {
                    type_: EventType::Warning,
                    reason: "AmbiguousSelector".into(),
                    message: msg.clone(),
                });
                set_condition(
                    conditions,
                    SCALING_ACTIVE,
                    false,
                    "AmbiguousSelector",
                    msg.clone(),
                    now,
                );
                Some(msg)
            }
            Ok(_) => None,
        },
    };

    let mut failure: Option<(String, ErrorOrigin)> =
        selector_error.map(|e| (e, ErrorOrigin::Internal));
    // The metric that gave the highest proposal: its index in the explanation's metrics.
    let mut named_metric: Option<usize> = None;
    let mut metric_desired = 0;
    if failure.is_none() {
        let tolerances = tolerances_for(behavior, settings);
        // The pods by name, shared by all metrics: as listed when sorted (the usual case).
        let pod_index;
        let pod_order = match PodOrder::of(obs.pods) {
            Some(order) => order,
            None => {
                pod_index = sorted_index(obs.pods);
                PodOrder::Indexed(&pod_index)
            }
        };
        let ctx = CalcContext {
            now,
            namespace,
            pods: obs.pods,
            tolerances,
            cpu_initialization_period: settings.cpu_initialization_period,
            initial_readiness_delay: settings.initial_readiness_delay,
            requests: RequestRules {
                pod_level: gates.pod_level_resources && changes.pod_level_requests,
                container_must_exist: changes.named_container_must_exist,
            },
            changes,
            pod_order,
        };
        let mut statuses: Vec<MetricStatus> = recycle::list();
        statuses.resize_with(metrics_spec.len(), MetricStatus::default);
        let mut invalid = 0usize;
        let mut first_error: Option<(String, &'static str, String, ErrorOrigin)> = None;
        let mut replicas = 0i32;
        for (i, m) in metrics_spec.iter().enumerate() {
            let missing_reading: crate::view::MetricReading;
            let reading = match obs.metrics.get(i) {
                Some(r) => r,
                None => {
                    missing_reading = Err("no reading was provided for this metric".into());
                    &missing_reading
                }
            };
            hook.before(i);
            let computed =
                compute_metric(&ctx, m, reading, scale.spec_replicas, scale.status_replicas);
            hook.after(i);
            match computed {
                Ok(outcome) => {
                    if replicas == 0 || outcome.replicas > replicas {
                        replicas = outcome.replicas;
                        named_metric = Some(plan.explanation.metrics.len());
                    }
                    statuses[i] = outcome.status;
                    plan.explanation.metrics.push(MetricExplanation {
                        name: Some(outcome.name),
                        proposal: Some(outcome.replicas),
                        error: None,
                        error_origin: None,
                        reasoning: Some(outcome.reasoning),
                    });
                }
                Err(f) => {
                    events.push(Event {
                        type_: EventType::Warning,
                        reason: f.reason.into(),
                        message: f.message.clone(),
                    });
                    if first_error.is_none() {
                        first_error =
                            Some((f.error.clone(), f.reason, f.message.clone(), f.origin));
                    }
                    invalid += 1;
                    plan.explanation.metrics.push(MetricExplanation {
                        name: None,
                        proposal: None,
                        error: Some(f.error),
                        error_origin: Some(f.origin),
                        reasoning: None,
                    });
                }
            }
        }
        metric_statuses = Some(statuses);
        let invalid_error = first_error.as_ref().map(|(e, _, _, origin)| {
            (
                format!(
                    "invalid metrics ({invalid} invalid out of {}), first error is: {e}",
                    metrics_spec.len()
                ),
                *origin,
            )
        });
        if invalid >= metrics_spec.len() || (invalid > 0 && replicas < scale.spec_replicas) {
            if let Some((_, reason, message, _)) = &first_error {
                set_condition(
                    conditions,
                    SCALING_ACTIVE,
                    false,
                    reason,
                    format!("the HPA was unable to compute the replica count: {message}"),
                    now,
                );
            }
            failure = Some(invalid_error.clone().unwrap_or_else(|| {
                (
                    "invalid metrics (0 invalid out of 0), first error is: <nil>".into(),
                    ErrorOrigin::Internal,
                )
            }));
        } else {
            let metric_name = metric_name_at(&plan.explanation, named_metric);
            set_condition(
                conditions,
                SCALING_ACTIVE,
                true,
                "ValidMetricFound",
                format_args!(
                    "the HPA was able to successfully calculate a replica count from {metric_name}"
                ),
                now,
            );
            plan.partial = invalid_error;
            metric_desired = replicas;
        }
    }
    ReplicasForMetrics {
        failure,
        named_metric,
        metric_desired,
        statuses: metric_statuses,
    }
}

/// Whether the scale's selector parses (the pods were selected by the caller); the last valid
/// selector is remembered, so a steady selector is parsed once.
fn selector_valid(sel: &str) -> Result<(), String> {
    if selector::known_valid(sel) {
        return Ok(());
    }
    selector::parse(sel)?;
    selector::remember_valid(sel);
    Ok(())
}

/// The name of the explanation's metric `at` (empty when there is none).
fn metric_name_at(explanation: &Explanation, at: Option<usize>) -> &str {
    at.and_then(|i| explanation.metrics.get(i))
        .and_then(|m| m.name.as_deref())
        .unwrap_or_default()
}

impl Decision {
    /// Gives the decision's strings and lists back for the next decisions on this thread
    /// ([`recycle`]): call it once the decision has been read, and a steady stream of decisions
    /// allocates nothing. Dropping a decision instead is always correct.
    pub fn recycle(self) {
        let Decision {
            status,
            events,
            error,
            explanation,
            ..
        } = self;
        if let Some(c) = status.conditions {
            recycle::give_list(c);
        }
        if let Some(m) = status.current_metrics {
            recycle::give_list(m);
        }
        recycle::give_list(events);
        recycle::give_opt(error);
        recycle::give_list(explanation.metrics);
        recycle::give_opt(explanation.rescale_reason);
    }

    /// Whether the reconcile ended early with its error (a failed scale read, metrics computation
    /// or scale write) instead of reaching the status it computed; upstream only observes the
    /// desired replicas of a reconcile that got that far.
    pub fn ended_early(&self) -> bool {
        self.ended
    }

    /// A failed status write (upstream's `updateStatusIfNeeded`): a Warning event
    /// `FailedUpdateStatus` with the API's message, in the order upstream records it (before
    /// `FailedComputeMetricsReplicas`: upstream writes the status first there), and the error the
    /// reconcile returns — unless the reconcile had already ended with an error of its own, which
    /// upstream returns instead (it only logs the write's error then).
    pub fn status_write_failed(&mut self, key: &str, message: &str) {
        let event = Event {
            type_: EventType::Warning,
            reason: "FailedUpdateStatus".into(),
            message: message.to_string(),
        };
        let last_is_metrics_failure = self
            .events
            .last()
            .is_some_and(|e| e.reason == "FailedComputeMetricsReplicas");
        if self.explanation.path == Path::MetricsFailed && last_is_metrics_failure {
            let at = self.events.len() - 1;
            self.events.insert(at, event);
        } else {
            self.events.push(event);
        }
        if !self.ended {
            self.error = Some(format!("failed to update status for {key}: {message}"));
            self.error_origin = Some(ErrorOrigin::Internal);
        }
    }
}

fn status_of(
    original: &HorizontalPodAutoscalerStatus,
    current: i32,
    desired: i32,
    metric_statuses: Option<Vec<MetricStatus>>,
    conditions: Vec<HorizontalPodAutoscalerCondition>,
    rescaled_at: Option<Time>,
    observed_generation: Option<i64>,
) -> HorizontalPodAutoscalerStatus {
    HorizontalPodAutoscalerStatus {
        current_replicas: Some(current),
        desired_replicas: desired,
        last_scale_time: match rescaled_at {
            Some(now) => Some(kube_time(now)),
            None => original.last_scale_time.clone(),
        },
        current_metrics: metric_statuses,
        conditions: Some(conditions),
        observed_generation,
    }
}

impl Plan {
    /// Completes the reconcile given the outcome of the scale write (`Ok(())` also when there was
    /// nothing to write). Records the scale event in `memory` on success.
    pub fn finish(mut self, write: Result<(), String>, memory: &mut Memory) -> Decision {
        let reference = std::mem::take(&mut self.reference);
        let decision = self.complete(write, memory, &reference);
        recycle::give(reference);
        decision
    }

    /// [`Plan::finish`] with the target's reference for messages.
    fn complete(self, write: Result<(), String>, memory: &mut Memory, reference: &str) -> Decision {
        let Plan {
            current_replicas: current,
            desired_replicas,
            rescale,
            explanation,
            now,
            status,
            metric_statuses,
            mut events,
            fatal,
            partial,
            scale_event_periods,
            reference: _,
            scale_to_zero,
            writes_scaled_to_zero,
            observed_generation,
            min_replicas,
            has_object_or_external,
        } = self;
        if let Some((error, origin)) = fatal {
            return Decision {
                status,
                events,
                scaled_to: None,
                error: Some(error),
                error_origin: Some(origin),
                explanation,
                ended: true,
            };
        }
        let (partial, partial_origin) = partial.unzip();
        let original_desired = status.desired_replicas;
        // status_of reads only the last scale time of the original status.
        let original_last_scale = HorizontalPodAutoscalerStatus {
            last_scale_time: status.last_scale_time.clone(),
            ..HorizontalPodAutoscalerStatus::default()
        };
        let mut conditions = status.conditions.unwrap_or_default();
        let Some(r) = rescale else {
            return Decision {
                status: status_of(
                    &original_last_scale,
                    current,
                    current,
                    metric_statuses,
                    conditions,
                    None,
                    observed_generation,
                ),
                events,
                scaled_to: None,
                error: partial,
                error_origin: partial_origin,
                explanation,
                ended: false,
            };
        };
        match write {
            Err(e) => {
                events.push(Event {
                    type_: EventType::Warning,
                    reason: "FailedRescale".into(),
                    message: format!("New size: {}; reason: {}; error: {e}", r.replicas, r.reason),
                });
                set_condition(
                    &mut conditions,
                    ABLE_TO_SCALE,
                    false,
                    "FailedUpdateScale",
                    format!("the HPA controller was unable to update the target scale: {e}"),
                    now,
                );
                let reference_error = format!("failed to rescale {reference}: {e}");
                Decision {
                    status: status_of(
                        &original_last_scale,
                        current,
                        original_desired,
                        metric_statuses,
                        conditions,
                        None,
                        observed_generation,
                    ),
                    events,
                    scaled_to: None,
                    error: Some(reference_error),
                    error_origin: Some(ErrorOrigin::Internal),
                    explanation,
                    ended: true,
                }
            }
            Ok(()) => {
                set_condition(
                    &mut conditions,
                    ABLE_TO_SCALE,
                    true,
                    "SucceededRescale",
                    format_args!(
                        "the HPA controller was able to update the target scale to {}",
                        r.replicas
                    ),
                    now,
                );
                events.push(Event {
                    type_: EventType::Normal,
                    reason: recycle::text("SuccessfulRescale"),
                    message: recycle::format(format_args!(
                        "New size: {}; reason: {}",
                        r.replicas, r.reason
                    )),
                });
                if let Some(periods) = scale_event_periods {
                    record_scale_event(periods, memory, current, r.replicas, now);
                }
                recycle::give(r.reason);
                if !writes_scaled_to_zero {
                    // Before 1.36 no rescale touched the condition.
                } else if scale_to_zero {
                    if current > 0 && r.replicas == 0 && min_replicas == 0 && has_object_or_external
                    {
                        set_condition(
                            &mut conditions,
                            SCALED_TO_ZERO,
                            true,
                            "ScaledToZero",
                            "the HPA controller scaled the workload to zero",
                            now,
                        );
                    } else {
                        set_condition(
                            &mut conditions,
                            SCALED_TO_ZERO,
                            false,
                            "NotScaledToZero",
                            "the HPA controller did not scale the workload to zero",
                            now,
                        );
                    }
                } else {
                    remove_condition(&mut conditions, SCALED_TO_ZERO);
                }
                Decision {
                    status: status_of(
                        &original_last_scale,
                        current,
                        desired_replicas,
                        metric_statuses,
                        conditions,
                        Some(now),
                        observed_generation,
                    ),
                    events,
                    scaled_to: Some(r.replicas),
                    error: partial,
                    error_origin: partial_origin,
                    explanation,
                    ended: false,
                }
            }
        }
    }
}
