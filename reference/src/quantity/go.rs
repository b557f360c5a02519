//! apimachinery's in-memory `resource.Quantity`, for the two conversions upstream's controller
//! makes of it: `MilliValue()` (every request, usage and target) and `AsApproximateFloat64()`
//! (the per-direction tolerances).
//!
//! `ParseQuantity` keeps a value in one of two forms, and both conversions depend on which:
//! - an `int64Amount{value, scale}` (value × 10^scale) when the digits fit 18 decimal places
//!   (a binary suffix: 15 less about 3 per factor of 1024) and the scale is at least nano;
//! - otherwise an exact decimal rounded away from zero to nano, a binary value above
//!   2^63 − 1 capped there.
//!
//! From there, `MilliValue()` rounds away from zero on the int64 form, and towards +∞ on the
//! decimal one; it gives 0 when the int64 form overflows (`"10E"`) and wraps when the decimal form
//! does (`"8Ei"` is −1000, `"7Ei"` is −2^63). `AsApproximateFloat64()` multiplies the mantissa,
//! as a float, by Go's `math.Pow10(scale)`, which is not the nearest double (`"0.7"` is
//! 0.7000000000000001). This module computes both bit for bit, without big integers.

use super::{Parsed, QuantityError, parse};

/// The form `ParseQuantity` builds.
enum Amount {
    /// `int64Amount{value, scale}`: value × 10^scale.
    Int { value: i64, scale: i32 },
    /// An exact decimal at nano scale: ±digits × 10^zeros × 10^-9 (`digits` without leading zeros,
    /// empty for zero; `zeros` trailing zeros kept apart so a huge exponent stays small here).
    Nano {
        negative: bool,
        digits: Vec<u8>,
        zeros: u64,
    },
    /// A BinarySI value above 2^63 − 1, capped there: ±(2^63 − 1) × 10^0.
    Capped { negative: bool },
}

/// `2^63 − 1` × 10^9, the capped magnitude at nano scale.
const CAP_NANO: u128 = 9_223_372_036_854_775_807_000_000_000;

/// Go's `math.Pow10(n)`: a power of 32 from one table times (or divided by) one from another,
/// each the nearest double, so not always the nearest double of 10^n itself.
fn go_pow10(n: i64) -> f64 {
    const SMALL: [f64; 32] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31,
    ];
    const POS32: [f64; 10] = [
        1e0, 1e32, 1e64, 1e96, 1e128, 1e160, 1e192, 1e224, 1e256, 1e288,
    ];
    const NEG32: [f64; 11] = [
        1e-0, 1e-32, 1e-64, 1e-96, 1e-128, 1e-160, 1e-192, 1e-224, 1e-256, 1e-288, 1e-320,
    ];
    match n {
        0..=308 => POS32[(n / 32) as usize] * SMALL[(n % 32) as usize],
        -323..=-1 => NEG32[(-n / 32) as usize] / SMALL[(-n % 32) as usize],
        _ if n > 0 => f64::INFINITY,
        _ => 0.0,
    }
}

/// The value of at most 19 decimal digits.
fn small_value(digits: &[u8]) -> u128 {
    digits.iter().fold(0u128, |v, &d| v * 10 + u128::from(d))
}

/// `digits` modulo 2^64 (what Go's `big.Int.Int64()` keeps of a magnitude).
fn low64(digits: &[u8]) -> u64 {
    digits
        .iter()
        .fold(0u64, |v, &d| v.wrapping_mul(10).wrapping_add(u64::from(d)))
}

/// 10^n modulo 2^64.
fn pow10_low64(n: u64) -> u64 {
    // 10^n = 2^n · 5^n is a multiple of 2^64 from n = 64 on.
    if n >= 64 {
        0
    } else {
        10u64.wrapping_pow(n as u32)
    }
}

/// Which form `ParseQuantity` builds for the parsed string.
fn amount(p: &Parsed) -> Amount {
    // The exponent of an `e` suffix is parsed as an int64 and then kept as an int32.
    let suffix_exp = i64::try_from(p.suffix_exp10).unwrap_or(0) as i32;
    let shift = i128::from(suffix_exp) - p.suffix_exp10;
    let frac_len = i64::try_from(p.frac_len).unwrap_or(i64::MAX);
    let digit_len = i64::try_from(p.int_len)
        .unwrap_or(i64::MAX)
        .saturating_add(frac_len);
    // Go's scale for the int64 form, and the digits' value with the zeros `parse` dropped back.
    let scale = i64::from(suffix_exp) - frac_len;
    let int_value = |mantissa_bits: u32| -> Option<i64> {
        let dropped = u32::try_from((p.exp10 + shift) - i128::from(scale)).ok()?;
        let value = small_value(&p.digits).checked_mul(10u128.checked_pow(dropped)?)?;
        let value = i64::try_from(value)
            .ok()?
            .checked_mul(1i64 << mantissa_bits)?;
        Some(if p.negative { -value } else { value })
    };
    if p.pow1024 == 0 {
        if 18 - digit_len >= 0
            && scale >= -9
            && let Some(value) = int_value(0)
        {
            return Amount::Int {
                value,
                scale: scale as i32,
            };
        }
    } else {
        let bits = 10 * p.pow1024;
        let int_len = i64::try_from(p.int_len).unwrap_or(i64::MAX);
        let precision = 15 - int_len - i64::from(3 * bits / 10) - 1;
        if p.frac_len == 0
            && precision >= 0
            && let Some(value) = int_value(bits)
        {
            return Amount::Int { value, scale: 0 };
        }
    }
    // The exact decimal: magnitude digits × 10^exp × 1024^pow1024, rounded up to nano.
    let mut digits = p.digits.clone();
    for _ in 0..p.pow1024 {
        super::mul_small(&mut digits, 1024);
    }
    let exp = p.exp10 + shift + 9;
    let (digits, zeros) = if digits.is_empty() {
        (digits, 0)
    } else if exp >= 0 {
        (digits, u64::try_from(exp).unwrap_or(u64::MAX))
    } else {
        let cut = usize::try_from(-exp).unwrap_or(usize::MAX);
        let keep = digits.len().saturating_sub(cut);
        let fraction = digits[keep..].iter().any(|&d| d != 0);
        let mut int: Vec<u8> = digits[..keep].to_vec();
        if fraction {
            // Rounding up: add one to the kept digits.
            let mut i = int.len();
            loop {
                if i == 0 {
                    int.insert(0, 1);
                    break;
                }
                i -= 1;
                if int[i] == 9 {
                    int[i] = 0;
                } else {
                    int[i] += 1;
                    break;
                }
            }
        }
        let first = int.iter().position(|&d| d != 0).unwrap_or(int.len());
        (int[first..].to_vec(), 0)
    };
    if p.pow1024 > 0 && exceeds(&digits, zeros, CAP_NANO) {
        return Amount::Capped {
            negative: p.negative,
        };
    }
    Amount::Nano {
        negative: p.negative && !digits.is_empty(),
        digits,
        zeros,
    }
}

/// Whether digits × 10^zeros > `bound`.
fn exceeds(digits: &[u8], zeros: u64, bound: u128) -> bool {
    let len = digits.len() as u64 + zeros;
    if digits.is_empty() {
        return false;
    }
    if len > 38 {
        return true;
    }
    small_value(digits) * 10u128.pow(zeros as u32) > bound
}

/// apimachinery's `Quantity.MilliValue()` of a quantity string, bit for bit: away from zero
/// for the int64 form (`"-1.5m"` is −2), 0 when the int64 form overflows (`"10E"`), and
/// wrapped when the decimal form does (`"8Ei"` is −1000).
///
/// # Errors
///
/// [`QuantityError::Format`] if `s` is not a quantity.
pub fn milli_value(s: &str) -> Result<i64, QuantityError> {
    // The common spellings (digits and a plain suffix) that do not overflow are exact in both
    // forms; the rest goes through the model of apimachinery's forms.
    if let Some(milli) = super::plain_milli(s) {
        return Ok(milli);
    }
    Ok(match amount(&parse(s)?) {
        Amount::Int { value, scale } => {
            if scale < -3 {
                away_from_zero_div_pow10(value, (-3 - scale) as u32)
            } else {
                times_pow10(value, (scale + 3) as u32)
            }
        }
        Amount::Capped { negative } => {
            let unscaled = if negative { -i64::MAX } else { i64::MAX };
            unscaled.wrapping_mul(1000)
        }
        Amount::Nano {
            negative,
            digits,
            zeros,
        } => {
            // Scale 9 down to 3: a fast path on int64 when the value is below 2^63 − 1, else
            // big-integer division; both add one when a remainder is left, and keep 64 bits.
            let below_max = negative || !exceeds(&digits, zeros, (i64::MAX - 1) as u128);
            if below_max {
                let magnitude = low64(&digits).wrapping_mul(pow10_low64(zeros));
                let x = if negative {
                    (magnitude as i64).wrapping_neg()
                } else {
                    magnitude as i64
                };
                let (q, r) = (x / 1_000_000, x % 1_000_000);
                if r != 0 { q + 1 } else { q }
            } else if zeros >= 6 {
                low64(&digits).wrapping_mul(pow10_low64(zeros - 6)) as i64
            } else {
                let cut = (6 - zeros) as usize;
                let keep = digits.len().saturating_sub(cut);
                let q = low64(&digits[..keep]) as i64;
                if digits[keep..].iter().any(|&d| d != 0) {
                    q.wrapping_add(1)
                } else {
                    q
                }
            }
        }
    })
}

/// Go's `positiveScaleInt64`: by 10, 100, 1000, 10^6 or 10^9 in one multiplication that wraps
/// on overflow (`"123456789012345678"` is −5670419503621183312 milli), by other powers one
/// checked factor of ten at a time that gives 0 on overflow (`"1E"` is 0).
fn times_pow10(value: i64, k: u32) -> i64 {
    match k {
        0 => value,
        1 | 2 | 3 | 6 | 9 => {
            if value == i64::MIN {
                0
            } else {
                value.wrapping_mul(10i64.pow(k))
            }
        }
        _ => {
            let mut v = value;
            for _ in 0..k {
                match v.checked_mul(10) {
                    Some(next) => v = next,
                    None => return 0,
                }
                if v == 0 {
                    break;
                }
            }
            v
        }
    }
}

/// Go's `negativeScaleInt64`: divides by 10^k, rounding a non-zero remainder away from zero.
fn away_from_zero_div_pow10(base: i64, k: u32) -> i64 {
    let divisor = 10i128.pow(k.min(30));
    let base = i128::from(base);
    let (q, r) = (base / divisor, base % divisor);
    let q = if r == 0 {
        q
    } else if base > 0 {
        q + 1
    } else {
        q - 1
    };
    // |q| <= |base|, so it fits.
    i64::try_from(q).unwrap_or(0)
}

/// apimachinery's `Quantity.AsApproximateFloat64()` of a quantity string, bit for bit: the
/// mantissa as a float times Go's `math.Pow10(exponent)` (`"0.7"` is 0.7000000000000001, `"1e400"`
/// is +∞).
///
/// # Errors
///
/// [`QuantityError::Format`] if `s` is not a quantity.
pub fn approx_f64(s: &str) -> Result<f64, QuantityError> {
    if s == "0" {
        return Ok(0.0);
    }
    Ok(match amount(&parse(s)?) {
        Amount::Int { value, scale } => {
            let base = value as f64;
            if scale == 0 {
                base
            } else {
                base * go_pow10(i64::from(scale))
            }
        }
        Amount::Capped { negative } => {
            let base = i64::MAX as f64;
            if negative { -base } else { base }
        }
        Amount::Nano {
            negative,
            digits,
            zeros,
        } => {
            if digits.is_empty() {
                return Ok(0.0);
            }
            // The nearest double of the integer (Go's big.Float to float64), then the scale.
            let mut text: String = digits.iter().map(|&d| char::from(b'0' + d)).collect();
            text.push_str(&format!("e{}", zeros.min(400)));
            let base: f64 = text.parse().map_err(|_| QuantityError::Format)?;
            let value = base * go_pow10(-9);
            if negative { -value } else { value }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(input, MilliValue(), AsApproximateFloat64())` printed by a Go program calling
    /// apimachinery v0.36.4's `ParseQuantity` on each input (`%d` and `strconv.FormatFloat(.., 'g',
    /// -1, 64)`).
    const FROM_GO: &[(&str, i64, &str)] = &[
        ("0.7", 700, "0.7000000000000001"),
        ("700m", 700, "0.7000000000000001"),
        ("-1.5m", -2, "-0.0015"),
        ("8Ei", -1000, "9.223372036854776e+18"),
        ("7Ei", -9223372036854775808, "8.070450532247929e+18"),
        ("10E", 0, "1e+19"),
        ("-5n", -1, "-5e-09"),
        ("0.41", 410, "0.41000000000000003"),
        ("0.57", 570, "0.5700000000000001"),
        ("1e400", 0, "+Inf"),
        ("0.05", 50, "0.05"),
        ("50m", 50, "0.05"),
        ("1", 1000, "1"),
        ("-1.5", -1500, "-1.5"),
        ("1Ki", 1024000, "1024"),
        ("1.5Gi", 1610612736000, "1.610612736e+09"),
        ("1e3", 1000000, "1000"),
        ("12e-1", 1200, "1.2000000000000002"),
        ("1n", 1, "1e-09"),
        ("1e-400", 1, "1e-09"),
        ("100", 100000, "100"),
        ("0.1", 100, "0.1"),
        ("0.3", 300, "0.30000000000000004"),
        ("0.35", 350, "0.35000000000000003"),
        ("1.1", 1100, "1.1"),
        ("0.000000001", 1, "1e-09"),
        ("0.0000000001", 1, "1e-09"),
        ("-0.0000000001", 1, "-1e-09"),
        (
            "1234567890123456789",
            -1363962815083169272,
            "1.234567890123457e+18",
        ),
        (
            "123456789012345678",
            -5670419503621183312,
            "1.2345678901234568e+17",
        ),
        ("0.123456789012345678", 124, "0.12345679000000001"),
        ("9223372036854775807", -1000, "9.223372036854776e+18"),
        ("9223372036854775808", 0, "9.223372036854776e+18"),
        ("9223372036854775807000", -1000000, "9.223372036854777e+21"),
        ("-9223372036854775809", -1000, "-9.223372036854776e+18"),
        ("9Ei", -1000, "9.223372036854776e+18"),
        ("6Ei", 0, "6.917529027641082e+18"),
        ("1Ei", -9223372036854775808, "1.152921504606847e+18"),
        ("0.5Ki", 512000, "512"),
        ("1.5Ki", 1536000, "1536"),
        ("16Pi", -432345564227567616, "1.8014398509481984e+16"),
        ("8191Pi", -1125899906842624000, "9.222246136947934e+18"),
        ("9223372036854775807Ki", -1000, "9.223372036854776e+18"),
        ("1e4294967299", 1000000, "1000"),
        ("5e-10", 1, "1e-09"),
        ("-1.5u", -1, "-1.5e-06"),
        ("1.0001m", 2, "0.0010000999999999999"),
        ("-1.0001m", -2, "-0.0010000999999999999"),
        ("999999999999999999", 3875820019684211736, "1e+18"),
        ("9999999999999999999", 1864712049423023128, "1e+19"),
        ("99999999999999999999.5", 200376420520689164, "1e+20"),
        ("1E3", 1000000, "1000"),
        ("1E", 0, "1e+18"),
        ("2e+2", 200000, "200"),
        ("0.00", 0, "0"),
        ("7.", 7000, "7"),
        (".25", 250, "0.25"),
        ("123.456e-5", 2, "0.00123456"),
        ("0.1e-8", 1, "1e-09"),
        ("1.5e-9", 1, "2e-09"),
        ("3e18", 0, "3e+18"),
        ("9.3e18", 0, "9.3e+18"),
        ("-9.3e18", 0, "-9.3e+18"),
    ];

    fn go_float(text: &str) -> f64 {
        match text {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            t => t.parse().expect("a float"),
        }
    }

    #[test]
    fn agrees_with_apimachinery() {
        for &(input, milli, float) in FROM_GO {
            assert_eq!(milli_value(input), Ok(milli), "MilliValue({input})");
            let got = approx_f64(input).expect("parses");
            assert_eq!(
                got.to_bits(),
                go_float(float).to_bits(),
                "AsApproximateFloat64({input}) = {got:?}, Go: {float}"
            );
        }
    }

    #[test]
    fn plain_spellings_agree_with_the_model() {
        for digits in ["0", "7", "007", "500", "12345678901", "123456789012345"] {
            for suffix in ["m", "", "k", "M", "G", "Ki", "Mi", "Gi"] {
                let s = format!("{digits}{suffix}");
                let Some(fast) = super::super::plain_milli(&s) else {
                    continue;
                };
                let p = parse(&s).expect("parses");
                let model = match amount(&p) {
                    Amount::Int { value, scale } if scale < -3 => {
                        away_from_zero_div_pow10(value, (-3 - scale) as u32)
                    }
                    Amount::Int { value, scale } => times_pow10(value, (scale + 3) as u32),
                    _ => panic!("{s}: a plain spelling is an int64 amount"),
                };
                assert_eq!(fast, model, "{s}");
            }
        }
    }

    #[test]
    fn go_pow10_uses_two_tables() {
        assert_eq!(go_pow10(0), 1.0);
        assert_eq!(go_pow10(-1), 0.1);
        assert_eq!(go_pow10(309), f64::INFINITY);
        assert_eq!(go_pow10(-324), 0.0);
        // 1e-35 = 1e-32 / 1e3, one rounding more than the literal.
        assert_eq!(go_pow10(-35), 1e-32 / 1e3);
    }

    #[test]
    fn malformed_strings_are_format_errors() {
        assert_eq!(milli_value("1.2.3"), Err(QuantityError::Format));
        assert_eq!(approx_f64("abc"), Err(QuantityError::Format));
    }
}
