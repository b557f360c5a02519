//! The controller's memory for one HPA between reconciles: recent recommendations and recent scale
//! events. Upstream keeps these in maps keyed by `namespace/name`, loses them on restart and drops
//! them when the HPA is deleted; here the caller owns one [`Memory`] per HPA and passes it in.

use crate::time::Time;

/// One recorded (unstabilized) recommendation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recommendation {
    /// The recommended replica count.
    pub replicas: i32,
    /// When it was recorded.
    pub timestamp: Time,
}

/// One successful rescale in one direction (only kept when the HPA has `behavior`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaleEvent {
    /// How many replicas were added (scale-up list) or removed (scale-down list); never negative.
    pub change: i32,
    /// When the rescale happened.
    pub timestamp: Time,
    /// Older than the direction's longest policy period when last checked; the slot may be reused.
    pub outdated: bool,
}

/// Everything the controller remembers about one HPA.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memory {
    /// Recent recommendations. `None` means the controller has never seen this HPA: the first
    /// reconcile records the current replica count as a recommendation (upstream's
    /// `recordInitialRecommendation`), which is why a fresh controller does not scale down at once.
    /// `Some(vec![])` reproduces upstream unit tests that pre-set an empty list.
    pub recommendations: Option<Vec<Recommendation>>,
    /// Recent scale-ups.
    pub scale_up_events: Vec<ScaleEvent>,
    /// Recent scale-downs.
    pub scale_down_events: Vec<ScaleEvent>,
}
