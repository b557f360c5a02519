//! Edge values for the differential fuzzer's generator ([`crate::fuzz::generate`]): the places
//! where an implementation that follows the docs and upstream's formulas can still differ from
//! upstream's code — quantities written in every form the API accepts, tolerances whose float
//! conversion is not the nearest double, ratios exactly on a tolerance edge, int32 extremes,
//! External metric selectors (nil, labels, expressions), and pods mixing pod-level and
//! container-level requests.

use serde_json::{Value, json};

use super::rng::Rng;

/// A quantity string equal to `milli` milli-units, in a randomly chosen form: `"1500m"`, `"1.5"`,
/// `"1.500"`, `"0001.5"`, `"15e2m"`-like exponents (`"15e-1"`), `"1500000u"`, `"1500000000n"`,
/// a binary suffix when the value is a whole multiple (`"1Ki"`). `milli` must not be negative.
pub fn quantity(milli: i64, rng: &mut Rng) -> String {
    let units = milli / 1000;
    let frac = milli % 1000;
    let mut forms: Vec<String> = vec![format!("{milli}m")];
    if frac == 0 {
        forms.push(format!("{units}"));
        forms.push(format!("{units}.0"));
        forms.push(format!("{units}e0"));
        if units % 1000 == 0 && units > 0 {
            forms.push(format!("{}k", units / 1000));
            forms.push(format!("{}e3", units / 1000));
            forms.push(format!("{}E3", units / 1000));
        }
        for (suffix, size) in [("Ki", 1024i64), ("Mi", 1 << 20), ("Gi", 1 << 30)] {
            if units > 0 && units % size == 0 {
                forms.push(format!("{}{suffix}", units / size));
            }
        }
    } else {
        let decimals = format!("{frac:03}");
        forms.push(format!("{units}.{decimals}"));
        forms.push(format!("{units}.{}", decimals.trim_end_matches('0')));
        forms.push(format!("00{units}.{decimals}000"));
        forms.push(format!("{milli}e-3"));
        forms.push(format!("{}e-4", milli * 10));
        if units == 0 {
            forms.push(format!(".{decimals}"));
        }
    }
    if milli.checked_mul(1_000_000).is_some() {
        forms.push(format!("{}u", milli * 1000));
        forms.push(format!("{}n", milli * 1_000_000));
    }
    rng.pick(&forms).clone()
}

/// A tolerance: usually one whose `AsApproximateFloat64` is not the nearest double of its decimal
/// value (`"0.57"`, `"0.41"`, …), in any of the forms the API accepts.
pub fn tolerance(rng: &mut Rng) -> (String, i64) {
    // Hundredths whose float conversion (k × 10^-2) differs from the nearest double, and a few
    // ordinary ones.
    const HUNDREDTHS: [i64; 14] = [35, 41, 57, 69, 70, 82, 83, 94, 95, 60, 5, 10, 20, 1];
    let k = *rng.pick(&HUNDREDTHS);
    let text = match rng.range(0, 5) {
        0 => format!("0.{k:02}"),
        1 => format!("{}m", k * 10),
        2 => format!("{k}e-2"),
        3 => format!(".{k:02}"),
        4 => format!("0.{k:02}0"),
        _ => format!("{}u", k * 10_000),
    };
    (text, k)
}

/// Per-pod values and a target (both in milli-units) whose ratio is exactly `1 ± hundredths/100`:
/// `target = 100·a`, `usage = (100 ± hundredths)·a`.
pub fn on_band_edge(hundredths: i64, up: bool, rng: &mut Rng) -> (i64, i64) {
    let a = rng.range(1, 40) * 1000;
    let usage = if up {
        100 + hundredths
    } else {
        100 - hundredths
    };
    (100 * a, usage.max(0) * a)
}

/// A Pods or Percent policy value at an int32 extreme (the API accepts any value > 0).
pub fn extreme_policy_value(rng: &mut Rng) -> i64 {
    *rng.pick(&[
        i64::from(i32::MAX),
        i64::from(i32::MAX) - 1,
        i64::from(i32::MAX / 2) + 1,
        1 << 30,
    ])
}

/// An External metric's selector: absent, labels only, expressions only, or both.
pub fn external_selector(rng: &mut Rng) -> Option<Value> {
    match rng.range(0, 3) {
        0 => None,
        1 => Some(json!({"matchLabels": {"queue": "jobs", "env": "prod"}})),
        2 => Some(json!({"matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["b", "a"]},
            {"key": "canary", "operator": "DoesNotExist"}
        ]})),
        _ => Some(json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z1"]}]
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hpa_reference::quantity::{milli_value, parse_milli};

    #[test]
    fn every_form_has_the_value_it_was_asked_for() {
        let mut rng = Rng::new(7);
        for milli in [0, 1, 5, 999, 1000, 1500, 20_000, 1_048_576_000, 123_456_789] {
            for _ in 0..40 {
                let q = quantity(milli, &mut rng);
                assert_eq!(parse_milli(&q), Ok(milli), "{q}");
                assert_eq!(milli_value(&q), Ok(milli), "{q}");
            }
        }
    }

    #[test]
    fn tolerances_are_hundredths_in_any_form() {
        let mut rng = Rng::new(3);
        for _ in 0..200 {
            let (text, k) = tolerance(&mut rng);
            assert_eq!(parse_milli(&text), Ok(k * 10), "{text}");
        }
    }

    #[test]
    fn band_edges_are_exact_ratios() {
        let mut rng = Rng::new(5);
        let (target, usage) = on_band_edge(57, true, &mut rng);
        assert_eq!(usage * 100, target * 157);
        let (target, usage) = on_band_edge(41, false, &mut rng);
        assert_eq!(usage * 100, target * 59);
    }

    #[test]
    fn the_generator_reaches_every_edge() {
        let mut rng = Rng::new(1);
        let files: Vec<_> = (0..600)
            .map(|i| crate::fuzz::generate(&format!("edge-{i}"), &mut rng))
            .collect();
        let yaml: Vec<String> = files
            .iter()
            .map(|f| crate::util::yaml::to_string(f).expect("yaml"))
            .collect();
        let any = |needle: &str| yaml.iter().any(|y| y.contains(needle));
        assert!(
            any("matchExpressions"),
            "an External selector with expressions"
        );
        assert!(any("2147483647"), "an int32-extreme policy value");
        assert!(
            any("cpu: 1m") || any("cpu: 1000u") || any("cpu: 1000000n"),
            "a 1m request"
        );
        assert!(
            any("e-2") || any("e-3") || any("e-4"),
            "a quantity with an exponent"
        );
        assert!(
            files.iter().any(|f| f.workload.pod.requests.is_some()),
            "pod-level requests"
        );
        assert!(any("tolerance: '0.57'") || any("tolerance: 0.57") || any("tolerance: 570m"));
    }
}
