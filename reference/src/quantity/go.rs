//! apimachinery's in-memory `resource.Quantity` as `ParseQuantity` builds it, and the conversions
//! the controller and the API server make of it: `MilliValue()` (every request, usage and target),
//! `Value()`, `AsApproximateFloat64()` (the per-direction tolerances), `Sign()` and `String()`
//! (the value an API error quotes).
//!
//! `ParseQuantity` keeps a value in one of two forms, and every conversion depends on which:
//! - an `int64Amount{value, scale}` (value × 10^scale) when the digits fit 18 decimal places
//!   (a binary suffix: 15 less about 3 per factor of 1024) and the scale is at least nano;
//! - otherwise an `inf.Dec` (unscaled × 10^-scale): a non-zero value rounded away from zero to
//!   nano, a binary value above 2^63 − 1 capped there (at scale 0); a zero keeps the scale it was
//!   written with.
//!
//! From there, `MilliValue()` rounds away from zero on the int64 form, and towards +∞ on the
//! decimal one; it gives 0 when the int64 form overflows (`"10E"`) and wraps when the decimal form
//! does (`"8Ei"` is −1000). `AsApproximateFloat64()` multiplies the mantissa, as a float, by Go's
//! `math.Pow10(scale)`, which is not the nearest double (`"0.7"` is 0.7000000000000001; a zero
//! with a scale beyond −308 is NaN). `String()` is the text itself when `ParseQuantity` deems it
//! canonical, else the value with the largest power of 1000 (1024 for a binary suffix) factored
//! out into the suffix. This module computes each bit for bit, with 32- and 64-bit wrap-around
//! where Go has it, without big integers.

use std::borrow::Cow;

use super::scan::{Format, Parsed};

/// apimachinery's `resource.Quantity` as `ParseQuantity` builds it from a text (see
/// [`super::parse_quantity`] and [`super::decode_field`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoQuantity<'a> {
    amount: Amount,
    format: Format,
    /// The text `String()` returns as is, when `ParseQuantity` keeps it.
    written: Option<&'a str>,
}

/// The form `ParseQuantity` builds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Amount {
    /// `int64Amount{value, scale}`: value × 10^scale.
    Int { value: i64, scale: i32 },
    /// `inf.Dec`: ±digits × 10^zeros × 10^-scale (`digits` without leading or trailing zeros,
    /// empty for zero; the trailing zeros counted apart so a huge exponent stays small here).
    Dec {
        negative: bool,
        digits: Vec<u8>,
        zeros: u64,
        scale: i32,
    },
}

/// `2^63 − 1`, apimachinery's cap of a binary value.
const MAX_DIGITS: &[u8] = &[9, 2, 2, 3, 3, 7, 2, 0, 3, 6, 8, 5, 4, 7, 7, 5, 8, 0, 7];

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

/// The value of at most 38 decimal digits.
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

/// Compares digits × 10^zeros with `bound`.
fn cmp_to(digits: &[u8], zeros: u64, bound: u128) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    if digits.is_empty() {
        return 0.cmp(&bound);
    }
    if digits.len() as u64 + zeros > 38 {
        return Ordering::Greater;
    }
    (small_value(digits) * 10u128.pow(zeros as u32)).cmp(&bound)
}

/// `digits` plus one (most significant first).
fn increment(digits: &mut Vec<u8>) {
    for d in digits.iter_mut().rev() {
        if *d == 9 {
            *d = 0;
        } else {
            *d += 1;
            return;
        }
    }
    digits.insert(0, 1);
}

/// Moves trailing zeros of `digits` into `zeros`, and drops leading zeros.
fn normalize(mut digits: Vec<u8>, mut zeros: u64) -> (Vec<u8>, u64) {
    let first = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
    digits.drain(..first);
    while digits.last() == Some(&0) {
        digits.pop();
        zeros += 1;
    }
    if digits.is_empty() {
        zeros = 0;
    }
    (digits, zeros)
}

/// digits × 10^zeros divided by 10^cut: the quotient's digits and whether a remainder is left.
fn shift_down(digits: &[u8], zeros: u64, cut: u64) -> (Vec<u8>, u64, bool) {
    if zeros >= cut {
        return (digits.to_vec(), zeros - cut, false);
    }
    let cut = usize::try_from(cut - zeros).unwrap_or(usize::MAX);
    let keep = digits.len().saturating_sub(cut);
    let fraction = digits[keep..].iter().any(|&d| d != 0);
    (digits[..keep].to_vec(), 0, fraction)
}

/// The text of ±digits followed by `zeros` zeros.
fn decimal_text(negative: bool, digits: &[u8], zeros: u64) -> String {
    let mut s = String::with_capacity(digits.len() + zeros as usize + 1);
    if negative {
        s.push('-');
    }
    s.extend(digits.iter().map(|&d| char::from(b'0' + d)));
    s.extend(std::iter::repeat_n('0', zeros as usize));
    s
}

impl<'a> GoQuantity<'a> {
    /// The quantity `ParseQuantity` builds from `text`, which parsed as `p`.
    pub(super) fn build(text: &'a str, p: &Parsed) -> Self {
        let written = p.written.then_some(text);
        if let Some((value, scale)) = p.int_form {
            return GoQuantity {
                amount: Amount::Int { value, scale },
                format: p.format,
                written,
            };
        }
        // The arbitrary-precision path: the number part read with its fraction digits as the
        // scale, then the suffix applied (a power of ten to the scale, a power of two to the
        // digits), all in Go's 32-bit scale arithmetic.
        let exponent = p.suffix_exp10 as i64 as i32;
        let frac = p.frac_len as i32;
        let scale = match p.format {
            Format::BinarySI => frac,
            _ => frac.wrapping_add(exponent.wrapping_neg()),
        };
        // The zeros `parse` dropped from the digits.
        let dropped = p.exp10 - (p.suffix_exp10 - p.frac_len as i128);
        let mut digits = p.digits.clone();
        if digits.is_empty() {
            return GoQuantity {
                amount: Amount::Dec {
                    negative: false,
                    digits,
                    zeros: 0,
                    scale,
                },
                format: p.format,
                written,
            };
        }
        for _ in 0..p.pow1024 {
            super::mul_small(&mut digits, 1024);
        }
        // Rounded away from zero to nano: digits × 10^(dropped − scale + 9) nano.
        let exp = dropped - i128::from(scale) + 9;
        let (digits, zeros) = if exp >= 0 {
            normalize(digits, u64::try_from(exp).unwrap_or(u64::MAX))
        } else {
            let (mut kept, _, fraction) =
                shift_down(&digits, 0, u64::try_from(-exp).unwrap_or(u64::MAX));
            if fraction {
                increment(&mut kept);
            }
            normalize(kept, 0)
        };
        let mut format = p.format;
        let (digits, zeros, scale) = if format == Format::BinarySI
            && cmp_to(&digits, zeros, 9_223_372_036_854_775_807_000_000_000).is_gt()
        {
            (MAX_DIGITS.to_vec(), 0, 0)
        } else {
            if format == Format::BinarySI && cmp_to(&digits, zeros, 1_000_000_000).is_lt() {
                format = Format::DecimalSI;
            }
            (digits, zeros, 9)
        };
        GoQuantity {
            amount: Amount::Dec {
                negative: p.negative,
                digits,
                zeros,
                scale,
            },
            format,
            written,
        }
    }

    /// `Sign()`: −1, 0 or 1.
    pub fn sign(&self) -> i32 {
        match &self.amount {
            Amount::Int { value, .. } => value.signum() as i32,
            Amount::Dec { digits, .. } if digits.is_empty() => 0,
            Amount::Dec { negative: true, .. } => -1,
            Amount::Dec { .. } => 1,
        }
    }

    /// `MilliValue()`: away from zero for the int64 form (`"-1.5m"` is −2), 0 when the int64 form
    /// overflows (`"10E"`), and wrapped when the decimal form does (`"8Ei"` is −1000).
    pub fn milli_value(&self) -> i64 {
        self.scaled_value(-3)
    }

    /// `Value()`: as [`Self::milli_value`], in units.
    pub fn value(&self) -> i64 {
        self.scaled_value(0)
    }

    /// `ScaledValue(scale)` for a scale of milli or units.
    fn scaled_value(&self, scale: i32) -> i64 {
        match &self.amount {
            Amount::Int { value, scale: s } => {
                if *s < scale {
                    away_from_zero_div_pow10(*value, (scale - *s) as u32)
                } else {
                    times_pow10(*value, s.wrapping_sub(scale))
                }
            }
            Amount::Dec {
                negative,
                digits,
                zeros,
                scale: s,
            } => dec_scaled(*negative, digits, *zeros, i64::from(*s) + i64::from(scale)),
        }
    }

    /// `AsApproximateFloat64()`: the mantissa as a float times Go's `math.Pow10(exponent)`
    /// (`"0.7"` is 0.7000000000000001, `"1e400"` is +∞).
    pub fn approx_f64(&self) -> f64 {
        let (base, exponent) = match &self.amount {
            Amount::Int { value, scale } => (*value as f64, i64::from(*scale)),
            Amount::Dec {
                negative,
                digits,
                zeros,
                scale,
            } => {
                let base = if digits.is_empty() {
                    0.0
                } else {
                    // The nearest double of the integer (Go's big.Float to float64).
                    let mut text = decimal_text(*negative, digits, 0);
                    text.push_str(&format!("e{}", (*zeros).min(400)));
                    text.parse().unwrap_or(f64::NAN)
                };
                (base, -i64::from(*scale))
            }
        };
        if exponent == 0 {
            base
        } else {
            base * go_pow10(exponent)
        }
    }

    /// `String()`: the text itself when `ParseQuantity` kept it, else the canonical form
    /// (`"1.250"` → `"1.250"`, `"1.5"` → `"1500m"`, `"2048Ki"` → `"2Mi"`, `"."` → `"0"`).
    pub fn canonical(&self) -> Cow<'a, str> {
        if let Some(text) = self.written {
            return Cow::Borrowed(text);
        }
        if self.sign() == 0 {
            return Cow::Borrowed("0");
        }
        let format = match self.format {
            Format::BinarySI if self.binary_prints_as_decimal() => Format::DecimalSI,
            f => f,
        };
        Cow::Owned(match format {
            Format::BinarySI => self.base1024_text(),
            f => self.base10_text(f),
        })
    }

    /// Whether a BinarySI value prints as DecimalSI: strictly between −1024 and 1024, or not whole.
    fn binary_prints_as_decimal(&self) -> bool {
        match &self.amount {
            Amount::Int { value, scale } => {
                // A binary int64 form has scale 0.
                value.unsigned_abs() < 1024 || *scale < 0
            }
            Amount::Dec {
                digits,
                zeros,
                scale,
                ..
            } => {
                let scale = u32::try_from(*scale).unwrap_or(0);
                let below = scale <= 30 && cmp_to(digits, *zeros, 1024 * 10u128.pow(scale)).is_lt();
                below || *zeros < u64::from(scale)
            }
        }
    }

    /// The BinarySI text of a whole value of at least 1024: the largest power of 1024 factored
    /// out into the suffix.
    fn base1024_text(&self) -> String {
        let (negative, mut digits) = match &self.amount {
            Amount::Int { value, .. } => (
                *value < 0,
                value
                    .unsigned_abs()
                    .to_string()
                    .bytes()
                    .map(|b| b - b'0')
                    .collect::<Vec<u8>>(),
            ),
            Amount::Dec {
                negative,
                digits,
                zeros,
                scale,
            } => {
                let whole = zeros - u64::from(u32::try_from(*scale).unwrap_or(0));
                let mut d = digits.clone();
                d.extend(std::iter::repeat_n(0, whole as usize));
                (*negative, d)
            }
        };
        let mut power = 0;
        while let Some(q) = div_exact(&digits, 1024) {
            digits = q;
            power += 1;
        }
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
            .get(power)
            .copied()
            .unwrap_or("");
        let mut text = decimal_text(negative, &digits, 0);
        text.push_str(suffix);
        text
    }

    /// The DecimalSI or DecimalExponent text: the digits without their trailing zeros, then as
    /// many zeros back as bring the exponent down to a multiple of three, and the suffix.
    fn base10_text(&self, format: Format) -> String {
        let (negative, digits, mut exponent, single_step) = match &self.amount {
            Amount::Int { value, scale } => {
                let mut magnitude = value.unsigned_abs();
                let mut times = 0;
                while magnitude >= 10 && magnitude % 10 == 0 {
                    magnitude /= 10;
                    times += 1;
                }
                let exponent = scale.wrapping_add(times);
                // The int64 form moves to a multiple of three in one multiplication, unless it
                // overflows (then the decimal form's loop does).
                let step = match exponent % 3 {
                    1 | -2 => 1,
                    2 | -1 => 2,
                    _ => 0,
                };
                let fits = u128::from(magnitude) * 10u128.pow(step) <= i64::MAX as u128;
                let digits: Vec<u8> = magnitude.to_string().bytes().map(|b| b - b'0').collect();
                (*value < 0, digits, exponent, fits)
            }
            Amount::Dec {
                negative,
                digits,
                zeros,
                scale,
            } => (
                *negative,
                digits.clone(),
                // The trailing zeros are factors of ten moved into the exponent.
                scale.wrapping_neg().wrapping_add(*zeros as i32),
                false,
            ),
        };
        let mut appended = 0;
        if single_step {
            let step = match exponent % 3 {
                1 | -2 => 1,
                2 | -1 => 2,
                _ => 0,
            };
            appended = step;
            exponent = exponent.wrapping_sub(step as i32);
        } else {
            while exponent % 3 != 0 {
                appended += 1;
                exponent = exponent.wrapping_sub(1);
            }
        }
        let mut text = decimal_text(negative, &digits, appended);
        match format {
            Format::DecimalExponent if exponent != 0 => {
                text.push('e');
                text.push_str(&exponent.to_string());
            }
            Format::DecimalSI => text.push_str(super::decimal_suffix(exponent)),
            _ => {}
        }
        text
    }
}

/// `digits / divisor` when it divides exactly (and `digits` is not zero).
fn div_exact(digits: &[u8], divisor: u32) -> Option<Vec<u8>> {
    if digits.is_empty() {
        return None;
    }
    let mut quotient = Vec::with_capacity(digits.len());
    let mut rem: u32 = 0;
    for &d in digits {
        let cur = rem * 10 + u32::from(d);
        quotient.push((cur / divisor) as u8);
        rem = cur % divisor;
    }
    if rem != 0 {
        return None;
    }
    let first = quotient
        .iter()
        .position(|&d| d != 0)
        .unwrap_or(quotient.len());
    Some(quotient.split_off(first))
}

/// Go's `scaledValue` of ±digits × 10^zeros at a scale `dif` above the wanted one: the int64
/// fast path when the value is below 2^63 − 1, else a big-integer ceiling; both keep 64 bits.
fn dec_scaled(negative: bool, digits: &[u8], zeros: u64, dif: i64) -> i64 {
    if digits.is_empty() {
        return 0;
    }
    let low = low64(digits).wrapping_mul(pow10_low64(zeros)) as i64;
    let signed = if negative { low.wrapping_neg() } else { low };
    if dif == 0 {
        return signed;
    }
    if dif < 0 {
        // `int64(math.Pow10(-dif))`: exact up to 10^18; beyond, amd64's conversion gives −2^63.
        let factor = if -dif <= 18 {
            10i64.pow((-dif) as u32)
        } else {
            i64::MIN
        };
        return signed.wrapping_mul(factor);
    }
    let below_max = negative || cmp_to(digits, zeros, (i64::MAX - 1) as u128).is_le();
    if below_max && dif < 19 {
        let divide = 10i64.pow(dif as u32);
        let (q, r) = (signed / divide, signed % divide);
        return if r != 0 { q + 1 } else { q };
    }
    // Ceiling of the exact quotient, kept to 64 bits.
    let (q, qzeros, fraction) = shift_down(digits, zeros, dif as u64);
    let magnitude = low64(&q).wrapping_mul(pow10_low64(qzeros));
    if negative {
        (magnitude as i64).wrapping_neg()
    } else if fraction {
        (magnitude as i64).wrapping_add(1)
    } else {
        magnitude as i64
    }
}

/// Go's `positiveScaleInt64` as `ScaledValue` uses it: by 10, 100, 1000, 10^6 or 10^9 in one
/// multiplication that wraps on overflow (`"123456789012345678"` is −5670419503621183312 milli),
/// by other powers one checked factor of ten at a time that gives 0 on overflow (`"1E"` is 0), by
/// a negative power (a scale difference that wrapped) not at all.
fn times_pow10(value: i64, k: i32) -> i64 {
    match k {
        i32::MIN..=0 => value,
        1 | 2 | 3 | 6 | 9 => {
            if value == i64::MIN {
                0
            } else {
                value.wrapping_mul(10i64.pow(k as u32))
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

#[cfg(test)]
mod tests {
    use super::super::{QuantityError, approx_f64, milli_value, parse_quantity};
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
        let mut checked = 0;
        for digits in ["0", "7", "007", "500", "12345678901", "123456789012345"] {
            for suffix in ["m", "", "k", "M", "G", "Ki", "Mi", "Gi"] {
                let s = format!("{digits}{suffix}");
                let Some(fast) = super::super::plain_milli(&s) else {
                    continue;
                };
                let q = parse_quantity(&s).expect("parses");
                assert!(
                    matches!(q.amount, Amount::Int { .. }),
                    "{s}: a plain spelling is an int64 amount"
                );
                assert_eq!(fast, q.milli_value(), "{s}");
                checked += 1;
            }
        }
        assert!(checked > 30, "{checked}");
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
