//! Usage ratios and tolerance (upstream's `metrics/utilization.go` and `Tolerances.isWithin`).
//!
//! Utilization is an integer percent, truncated, before it is divided by the target; plain averages
//! are truncated integer divisions. The ratio is then an `f64` computed in upstream's order so that
//! `ceil` agrees bit for bit.

use std::collections::BTreeMap;

use super::lookup::{Ascending, ascending};

/// The tolerance band around a usage ratio of 1.0, per direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerances {
    /// How far below 1.0 the ratio may fall before scaling down.
    pub scale_down: f64,
    /// How far above 1.0 the ratio may rise before scaling up.
    pub scale_up: f64,
}

impl Tolerances {
    /// Both bounds are inclusive: `1 - down <= ratio <= 1 + up` means "no change".
    pub fn is_within(&self, ratio: f64) -> bool {
        (1.0 - self.scale_down) <= ratio && ratio <= (1.0 + self.scale_up)
    }
}

/// `(ratio, utilization percent, raw average)` over the samples of pods that have a request.
/// Errors when no sample matches a known pod. Sums wrap in int64 and the percent is truncated to
/// int32 as upstream does (a tiny request and a huge usage give a wrapped, even negative, percent).
pub fn resource_utilization_ratio(
    samples: &[(&str, i64)],
    requests: &BTreeMap<&str, i64>,
    target_utilization: i32,
) -> Result<(f64, i32, i64), String> {
    // int64 sums and products that wrap, and a percent kept as int32, like upstream's.
    let mut metrics_total: i64 = 0;
    let mut requests_total: i64 = 0;
    let mut entries: i64 = 0;
    // Samples in name order (the usual case) are matched to requests in one merged pass.
    let mut cursor = Ascending::new(requests, ascending(samples.iter().map(|(p, _)| *p)));
    for (pod, value) in samples {
        let request = cursor.get(pod);
        let Some(request) = request else {
            continue;
        };
        metrics_total = metrics_total.wrapping_add(*value);
        requests_total = requests_total.wrapping_add(*request);
        entries += 1;
    }
    if requests_total == 0 {
        return Err("no metrics returned matched known pods".to_string());
    }
    let utilization = metrics_total.wrapping_mul(100).wrapping_div(requests_total) as i32;
    let raw = metrics_total.wrapping_div(entries);
    Ok((
        f64::from(utilization) / f64::from(target_utilization),
        utilization,
        raw,
    ))
}

/// `(ratio, average)` of plain samples against a target average (milli-values).
pub fn metric_usage_ratio(samples: &[(&str, i64)], target: i64) -> (f64, i64) {
    let total = samples.iter().fold(0i64, |t, (_, v)| t.wrapping_add(*v));
    let average = if samples.is_empty() {
        0
    } else {
        total.wrapping_div(samples.len() as i64)
    };
    (average as f64 / target as f64, average)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: [&str; 5] = ["p0", "p1", "p2", "p3", "p4"];

    fn samples(values: &[i64]) -> Vec<(&'static str, i64)> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (NAMES[i], *v))
            .collect()
    }

    #[test]
    fn utilization_truncates_before_the_ratio() {
        // 1400/5000 = 28% exactly; 1499/5000 = 29.98% → 29
        let reqs: BTreeMap<&str, i64> = NAMES.iter().map(|n| (*n, 1000)).collect();
        let (r, u, raw) =
            resource_utilization_ratio(&samples(&[100, 300, 500, 250, 250]), &reqs, 50).unwrap();
        assert_eq!((u, raw), (28, 280));
        assert_eq!(r, 28.0 / 50.0);
        let (_, u, _) =
            resource_utilization_ratio(&samples(&[100, 300, 500, 250, 349]), &reqs, 50).unwrap();
        assert_eq!(u, 29);
    }

    #[test]
    fn samples_of_unknown_pods_are_skipped_and_none_known_is_an_error() {
        let reqs = BTreeMap::from([("other", 1000)]);
        assert_eq!(
            resource_utilization_ratio(&samples(&[100]), &reqs, 50).unwrap_err(),
            "no metrics returned matched known pods"
        );
    }

    #[test]
    fn plain_average_truncates() {
        let (r, avg) = metric_usage_ratio(&samples(&[1000, 1001, 1001]), 1000);
        assert_eq!(avg, 1000);
        assert_eq!(r, 1.0);
    }

    #[test]
    fn tolerance_bounds_are_inclusive() {
        let t = Tolerances {
            scale_down: 0.1,
            scale_up: 0.1,
        };
        assert!(t.is_within(1.1));
        assert!(t.is_within(0.9));
        assert!(!t.is_within(1.1000001));
        assert!(!t.is_within(0.8999999));
        let t = Tolerances {
            scale_down: 0.0,
            scale_up: 0.05,
        };
        assert!(!t.is_within(0.99));
        assert!(t.is_within(1.05));
    }
}
