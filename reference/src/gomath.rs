//! Go's float-to-integer conversions as upstream's binaries do them on amd64: a NaN or
//! out-of-range value becomes the "integer indefinite" value, the type's minimum (Go leaves this
//! implementation-defined; running upstream's code on amd64 is the truth this project follows).

/// Go's `int32(x)` on amd64 (truncation toward zero).
pub fn go_i32(x: f64) -> i32 {
    // Truncation keeps (-2^31 - 1, 2^31) in range; NaN is outside every range.
    if !(-2_147_483_648.999_999_8..2_147_483_648.0).contains(&x) {
        i32::MIN
    } else {
        x as i32
    }
}

/// Go's `int64(x)` on amd64 (truncation toward zero).
pub fn go_i64(x: f64) -> i64 {
    // NaN is outside every range.
    if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_and_nan_become_the_minimum_like_go_on_amd64() {
        // Checked against `go run` on amd64: int32(+Inf), int32(3e9), int32(NaN), int64(+Inf).
        assert_eq!(go_i32(f64::INFINITY), i32::MIN);
        assert_eq!(go_i32(3e9), i32::MIN);
        assert_eq!(go_i32(f64::NAN), i32::MIN);
        assert_eq!(go_i32(f64::NEG_INFINITY), i32::MIN);
        assert_eq!(go_i64(f64::INFINITY), i64::MIN);
        assert_eq!(go_i64(f64::NAN), i64::MIN);
        assert_eq!(go_i32(-2.7), -2);
        assert_eq!(go_i32(64.8), 64);
        assert_eq!(go_i64(1e18), 1_000_000_000_000_000_000);
    }
}
