//! What one reconcile does when the API server refuses the scale update: since 1.34 (#132007) a
//! conflict (HTTP 409) is retried after reading the scale again, up to client-go's
//! `retry.DefaultRetry` attempts; any other refusal, and every refusal before 1.34, fails the
//! rescale at once.

use crate::version::Changes;

/// Attempts `retry.RetryOnConflict(retry.DefaultRetry, …)` makes (its `Steps`).
pub const CONFLICT_RETRY_ATTEMPTS: u32 = 5;

/// How many UPDATE attempts one reconcile makes when they are refused with `reason` (the API
/// status reason, `None` for an error without one).
pub fn attempts(changes: Changes, reason: Option<&str>) -> u32 {
    if changes.scale_update_retries_on_conflict && reason == Some("Conflict") {
        CONFLICT_RETRY_ATTEMPTS
    } else {
        1
    }
}

/// Whether a scale update goes through in one reconcile when its first `failing` attempts are
/// refused with `reason` (`failing: None`: every attempt is).
pub fn goes_through(changes: Changes, reason: Option<&str>, failing: Option<u32>) -> bool {
    failing.is_some_and(|f| f < attempts(changes, reason))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KubernetesVersion;

    #[test]
    fn a_conflict_is_retried_from_1_34_on() {
        let (v133, v134) = (
            KubernetesVersion::V1_33.changes(),
            KubernetesVersion::V1_34.changes(),
        );
        assert!(!goes_through(v133, Some("Conflict"), Some(1)));
        assert!(goes_through(v134, Some("Conflict"), Some(1)));
        assert!(goes_through(v134, Some("Conflict"), Some(4)));
        assert!(!goes_through(v134, Some("Conflict"), Some(5)));
        assert!(!goes_through(v134, Some("Conflict"), None));
        assert!(!goes_through(v134, Some("InternalError"), Some(1)));
        assert!(!goes_through(v134, None, Some(1)));
        assert!(goes_through(v133, Some("Conflict"), Some(0)));
    }
}
