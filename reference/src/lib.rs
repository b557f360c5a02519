//! hpa-reference: the reference Horizontal Pod Autoscaler.
//!
//! A pure decision core — no IO, no clock, no async — with upstream Kubernetes' exact arithmetic
//! (Kubernetes 1.32 to 1.37, [`KubernetesVersion`]; 1.37 by default). [`decide()`] takes an [`Observation`] (the HPA, the target's scale, its pods and
//! the metrics APIs' answers at an instant), the controller [`Settings`] and the HPA's [`Memory`],
//! and returns a [`Plan`]; [`Plan::finish`] completes it once the scale write's outcome is known.
//! [`Decision::recycle`] hands a read decision's buffers back ([`recycle`]), so a steady stream of
//! decisions allocates nothing.
//!
//! Layout follows upstream's split: per-metric arithmetic in [`calculator`] (replica_calculator),
//! metric-source dispatch in [`metric`], stabilization and rate limits in [`normalize`], and the
//! reconcile flow with its conditions and events in [`mod@decide`].

pub mod calculator;
pub mod conditions;
#[cfg(feature = "controller")]
pub mod controller;
pub mod decide;
pub mod defaults;
pub mod gomath;
pub mod gotext;
pub mod memory;
pub mod metric;
pub mod metrics_api;
pub mod normalize;
pub mod outcome;
pub mod quantity;
pub mod recycle;
pub mod retry;
pub mod selector;
pub mod settings;
pub mod time;
pub mod validation;
pub mod version;
pub mod view;

pub use decide::{Decision, MetricHook, NoHook, Plan, Rescale, decide, decide_with};
pub use memory::{Memory, Recommendation, ScaleEvent};
pub use outcome::{ErrorOrigin, Event, EventType, Explanation, MetricExplanation, Path};
pub use settings::{FeatureGates, Settings};
pub use time::Time;
pub use version::{Changes, KubernetesVersion};
pub use view::{
    ConditionStatus, ContainerRequests, MetricReading, MetricValues, Observation, PodMetric,
    PodPhase, PodView, ReadyCondition, Samples, ScaleView,
};
