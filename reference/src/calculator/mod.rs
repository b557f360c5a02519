//! Per-metric arithmetic, apart from reconcile and normalization (upstream's `replica_calculator.go`
//! and `metrics/utilization.go`): pod grouping, requests, usage ratios, tolerance, and one
//! replica proposal per metric source.

mod grouping;
mod replicas;
mod requests;
mod usage;

pub use grouping::{Group, PodGroups, PodOrder, group_pods, sorted_index, walk_pods};
pub use replicas::{
    CalcContext, Proposal, Reasoning, ResourceProposal, external_per_pod_replicas,
    external_value_replicas, object_per_pod_replicas, object_value_replicas, plain_metric_replicas,
    resource_replicas,
};
pub use requests::{RequestError, RequestRules, pod_request};
pub use usage::{Tolerances, metric_usage_ratio, resource_utilization_ratio};
