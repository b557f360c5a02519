//! The bounds of the case format: no number in a case can make a run huge or wrap. A case asks
//! for at most [`MAX_PODS`] pods, [`MAX_TICKS`] ticks and [`MAX_POD_TICKS`] of both together, and
//! names times within ±[`MAX_VIRTUAL_SECONDS`]. The loader refuses what exceeds them; the world
//! ([`crate::world`]) holds no more than they allow.

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;

/// The most pods (replicas) the simulated world holds.
pub const MAX_PODS: i32 = 10_000;

/// The earliest and latest virtual second a case may name (about ±31 years around t=0, so every
/// instant is a valid Kubernetes time and no time arithmetic can overflow).
pub const MAX_VIRTUAL_SECONDS: i64 = 1_000_000_000;

/// The most ticks one case may run (`durationSeconds / syncPeriodSeconds + 1`).
pub const MAX_TICKS: u64 = 100_000;

/// The most pod-ticks one case may run: the most pods its world can hold (its workload's
/// replicas, `maxReplicas` of every version of its HPA, `setReplicas`; at most
/// [`MAX_PODS`]) times its ticks. A tick costs about a microsecond per pod (release build):
/// 20,000,000 is half a minute at most, where 10,000 pods × 100,000 ticks would be hours.
pub const MAX_POD_TICKS: u64 = 20_000_000;

/// The most pods a world can hold over a run: the workload's replicas, `maxReplicas` of every
/// version of the HPA and every `setReplicas`, at most [`MAX_PODS`].
pub fn pods_bound(
    replicas: i32,
    manifests: &[HorizontalPodAutoscaler],
    set_replicas: impl IntoIterator<Item = i32>,
) -> u64 {
    let most = manifests
        .iter()
        .map(|m| m.spec.max_replicas)
        .chain(set_replicas)
        .fold(replicas, i32::max);
    u64::try_from(most.clamp(0, MAX_PODS)).unwrap_or(0)
}
