//! Usage ratios and tolerance (upstream's `metrics/utilization.go` and `Tolerances.isWithin`).
//!
//! Utilization is an integer percent, truncated, before it is divided by the target; plain averages
//! are truncated integer divisions. The ratio is then an `f64` computed in upstream's order so that
//! `ceil` agrees bit for bit.

/// The tolerance band around a usage ratio of 1.0, per direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerances {
    /// How far below 1.0 the ratio may fall before scaling down.
    pub scale_down: f64,
    /// How far above 1.0 the ratio may rise before scaling up.
    pub scale_up: f64,
    /// The band's test since 1.33 ([`crate::Changes::per_direction_tolerance`]); `false`: the
    /// test before it, `|1 - ratio| <= tolerance` (the two tolerances are then the same flag).
    pub per_direction: bool,
}

impl Tolerances {
    /// A band of `tolerance` each way, tested as since 1.33.
    pub fn symmetric(tolerance: f64) -> Self {
        Tolerances {
            scale_down: tolerance,
            scale_up: tolerance,
            per_direction: true,
        }
    }

    /// Both bounds are inclusive: `1 - down <= ratio <= 1 + up` means "no change". Before 1.33,
    /// `|1 - ratio| <= tolerance` in float64, which differs at the edges: a ratio of exactly 1.1
    /// is `|1 - 1.1|` = 0.10000000000000009 away, outside a tolerance of 0.1.
    pub fn is_within(&self, ratio: f64) -> bool {
        if self.per_direction {
            (1.0 - self.scale_down) <= ratio && ratio <= (1.0 + self.scale_up)
        } else {
            (1.0 - ratio).abs() <= self.scale_up
        }
    }
}

/// `(ratio, utilization percent, raw average)` from the totals over the samples of pods that
/// have a request: `metrics_total` and `requests_total` summed (wrapping in int64, as upstream's
/// sums) over `entries` samples. Errors when no sample matched a known pod (no request counted).
/// The percent is truncated to int32 as upstream does (a tiny request and a huge usage give a
/// wrapped, even negative, percent).
pub fn resource_utilization_ratio(
    metrics_total: i64,
    requests_total: i64,
    entries: i64,
    target_utilization: i32,
) -> Result<(f64, i32, i64), String> {
    if requests_total == 0 {
        return Err("no metrics returned matched known pods".to_string());
    }
    let utilization = metrics_total.wrapping_mul(100).wrapping_div(requests_total) as i32;
    let raw = metrics_total.wrapping_div(entries.max(1));
    Ok((
        f64::from(utilization) / f64::from(target_utilization),
        utilization,
        raw,
    ))
}

/// `(ratio, average)` of `count` plain samples summing (wrapping in int64) to `total` against a
/// target average (milli-values); the average truncates.
pub fn metric_usage_ratio(total: i64, count: usize, target: i64) -> (f64, i64) {
    let average = if count == 0 {
        0
    } else {
        total.wrapping_div(count as i64)
    };
    (average as f64 / target as f64, average)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utilization_truncates_before_the_ratio() {
        // 1400/5000 = 28% exactly; 1499/5000 = 29.98% → 29
        let (r, u, raw) = resource_utilization_ratio(1400, 5000, 5, 50).unwrap();
        assert_eq!((u, raw), (28, 280));
        assert_eq!(r, 28.0 / 50.0);
        let (_, u, _) = resource_utilization_ratio(1499, 5000, 5, 50).unwrap();
        assert_eq!(u, 29);
    }

    #[test]
    fn no_request_counted_is_an_error() {
        assert_eq!(
            resource_utilization_ratio(0, 0, 0, 50).unwrap_err(),
            "no metrics returned matched known pods"
        );
    }

    #[test]
    fn plain_average_truncates() {
        let (r, avg) = metric_usage_ratio(3002, 3, 1000);
        assert_eq!(avg, 1000);
        assert_eq!(r, 1.0);
        assert_eq!(metric_usage_ratio(-7, 2, 1000).1, -3, "toward zero, as Go");
    }

    #[test]
    fn tolerance_bounds_are_inclusive() {
        let t = Tolerances::symmetric(0.1);
        assert!(t.is_within(1.1));
        assert!(t.is_within(0.9));
        assert!(!t.is_within(1.1000001));
        assert!(!t.is_within(0.8999999));
        let t = Tolerances {
            scale_down: 0.0,
            scale_up: 0.05,
            per_direction: true,
        };
        assert!(!t.is_within(0.99));
        assert!(t.is_within(1.05));
    }

    #[test]
    fn before_1_33_the_band_is_an_absolute_difference() {
        let t = Tolerances {
            per_direction: false,
            ..Tolerances::symmetric(0.1)
        };
        // 1.1 is just outside (|1 - 1.1| = 0.10000000000000009 in float64), 0.9 just inside
        // (0.09999999999999998).
        assert!(!t.is_within(1.1));
        assert!(t.is_within(0.9));
        assert!(!t.is_within(0.8999999));
        assert!(t.is_within(1.0999999));
        assert!(t.is_within(0.9000001));
        assert!(Tolerances::symmetric(0.1).is_within(1.1));
    }
}
