//! Time as the decision core sees it: an instant is an input, never read from a clock.
//!
//! Instants are integer microseconds since the Unix epoch, so every comparison is exact and the
//! upstream rules ("strictly before", "strictly after") can be reproduced bit for bit. Go's zero
//! time (`0001-01-01T00:00:00Z`, what an unset `metav1.Time` means) is representable.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time as KubeTime;

/// An instant, in microseconds since 1970-01-01T00:00:00Z.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(i64);

const MICROS_PER_SEC: i64 = 1_000_000;

impl Time {
    /// Go's zero `time.Time` (`0001-01-01T00:00:00Z`): what an unset timestamp means upstream.
    pub const GO_ZERO: Time = Time(-62_135_596_800 * MICROS_PER_SEC);

    /// The instant `micros` microseconds after the Unix epoch.
    pub const fn from_micros(micros: i64) -> Self {
        Time(micros)
    }

    /// The instant `secs` seconds after the Unix epoch.
    pub const fn from_secs(secs: i64) -> Self {
        Time(secs * MICROS_PER_SEC)
    }

    /// Microseconds since the Unix epoch.
    pub const fn as_micros(self) -> i64 {
        self.0
    }

    /// Seconds since the Unix epoch, as a float (for display only).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / MICROS_PER_SEC as f64
    }

    /// `self + d`.
    pub fn plus(self, d: Duration) -> Time {
        Time(self.0.saturating_add(duration_micros(d)))
    }

    /// `self - d`.
    pub fn minus(self, d: Duration) -> Time {
        Time(self.0.saturating_sub(duration_micros(d)))
    }

    /// `self - secs` seconds (secs may be any i64, as in Go's `now.Add(-time.Second * n)`).
    pub fn minus_secs(self, secs: i64) -> Time {
        Time(self.0.saturating_sub(secs.saturating_mul(MICROS_PER_SEC)))
    }

    /// Go's `t.Before(u)`: strictly earlier.
    pub fn before(self, other: Time) -> bool {
        self.0 < other.0
    }

    /// Go's `t.After(u)`: strictly later.
    pub fn after(self, other: Time) -> bool {
        self.0 > other.0
    }
}

/// Whole microseconds of `d` (nanoseconds truncated), `i64::MAX` when they do not fit: the
/// value of `i64::try_from(d.as_micros())`, without its 128-bit arithmetic.
fn duration_micros(d: Duration) -> i64 {
    i64::try_from(d.as_secs())
        .ok()
        .and_then(|s| s.checked_mul(MICROS_PER_SEC))
        .and_then(|m| m.checked_add(i64::from(d.subsec_micros())))
        .unwrap_or(i64::MAX)
}

/// Converts a core instant to a Kubernetes timestamp.
pub fn kube_time(t: Time) -> KubeTime {
    KubeTime(
        k8s_openapi::jiff::Timestamp::from_microsecond(t.as_micros())
            .unwrap_or(k8s_openapi::jiff::Timestamp::MIN),
    )
}

/// Converts a Kubernetes timestamp to a core instant.
pub fn core_time(t: &KubeTime) -> Time {
    Time::from_micros(t.0.as_microsecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_micros_is_the_128_bit_value_or_max() {
        for d in [
            Duration::ZERO,
            Duration::from_nanos(999),
            Duration::from_nanos(1_999),
            Duration::from_secs(300),
            Duration::new(12, 345_678_901),
            Duration::from_secs(9_223_372_036_854),
            Duration::new(9_223_372_036_854, 775_807_999),
            Duration::new(9_223_372_036_854, 775_808_000),
            Duration::from_secs(u64::MAX),
            Duration::MAX,
        ] {
            let want = i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
            assert_eq!(duration_micros(d), want, "{d:?}");
        }
    }

    #[test]
    fn cutoffs_are_strict() {
        let now = Time::from_secs(300);
        let cutoff = now.minus(Duration::from_secs(300));
        let at_cutoff = Time::from_secs(0);
        assert!(!at_cutoff.before(cutoff));
        assert!(!at_cutoff.after(cutoff));
        assert!(Time::from_micros(1).after(cutoff));
        assert!(Time::from_micros(-1).before(cutoff));
    }

    #[test]
    fn go_zero_time_is_far_in_the_past_and_survives_arithmetic() {
        let z = Time::GO_ZERO;
        assert!(z.before(Time::from_secs(0)));
        assert_eq!(z.plus(Duration::from_secs(60)).minus_secs(60), z);
    }
}
