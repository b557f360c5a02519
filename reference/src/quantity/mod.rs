//! Exact Kubernetes `resource.Quantity` arithmetic: parsing quantity strings
//! into integer milli-values (as apimachinery's `Quantity.MilliValue()` does),
//! an approximate float conversion, and canonical formatting of milli-values.
//!
//! The parser accepts the syntax of apimachinery's `ParseQuantity`:
//! an optional sign, a decimal number (`"1"`, `"1.5"`, `".5"`, `"5."`), and a
//! suffix that is either a decimal SI suffix (`n u m k M G T P E`), a binary
//! SI suffix (`Ki Mi Gi Ti Pi Ei`) or a decimal exponent (`e3`, `E-3`, `e+2`).
//!
//! All integer results are computed exactly on the decimal digits of the
//! input; no floating point is involved in [`parse_milli`].

use std::fmt::Write as _;

mod go;
pub use go::{approx_f64, milli_value};

/// Error parsing a quantity string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The string is not a quantity (apimachinery's `ErrFormatWrong`).
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format,
    /// The quantity is well-formed, but its value does not fit the requested
    /// representation (a milli-value outside the `i64` range, or a float that
    /// is not finite).
    #[error("quantity is out of range: its value does not fit in a 64-bit milli-value")]
    OutOfRange,
}

/// The exact value of a parsed quantity:
/// `sign * digits * 10^exp10 * 1024^pow1024`, with `digits` free of leading
/// zeros (empty for the value zero).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Parsed {
    negative: bool,
    /// Digits before the point once leading zeros are stripped (apimachinery's `len(num)`, at
    /// least 1: an empty integer part counts as `"0"`).
    int_len: usize,
    /// Digits after the point (apimachinery's `len(denom)`).
    frac_len: usize,
    /// The suffix's power of ten (`k` is 3, `e-2` is -2) as written.
    suffix_exp10: i128,
    /// Decimal digits of the mantissa (each 0..=9), most significant first.
    digits: Vec<u8>,
    /// Power of ten applied to `digits`. `i128` so that adding the count of
    /// fraction digits or the milli shift to any `i64` exponent cannot
    /// overflow.
    exp10: i128,
    /// Power of 1024 applied to `digits` (0..=6).
    pow1024: u32,
}

/// Parses the suffix of a quantity into `(decimal exponent, power of 1024)`.
fn parse_suffix(suffix: &str) -> Result<(i128, u32), QuantityError> {
    let decimal = |e: i128| Ok((e, 0));
    let binary = |k: u32| Ok((0, k));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        _ => {
            let rest = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))
                .ok_or(QuantityError::Format)?;
            let magnitude = rest
                .strip_prefix('+')
                .or_else(|| rest.strip_prefix('-'))
                .unwrap_or(rest);
            if magnitude.is_empty() || !magnitude.bytes().all(|b| b.is_ascii_digit()) {
                return Err(QuantityError::Format);
            }
            // Like apimachinery (strconv.ParseInt(.., 64)), an exponent that
            // does not fit a 64-bit integer is a syntax error.
            let exponent: i64 = rest.parse().map_err(|_| QuantityError::Format)?;
            decimal(i128::from(exponent))
        }
    }
}

/// Parses a quantity string into its exact parts.
fn parse(s: &str) -> Result<Parsed, QuantityError> {
    let bytes = s.as_bytes();
    let (negative, body) = match bytes.first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let number_len = body
        .bytes()
        .position(|b| !(b.is_ascii_digit() || b == b'.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(number_len);
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if frac_part.contains('.') || (int_part.is_empty() && frac_part.is_empty()) {
        return Err(QuantityError::Format);
    }
    let (suffix_exp10, pow1024) = parse_suffix(suffix)?;

    let int_len = int_part.trim_start_matches('0').len().max(1);
    let mut digits: Vec<u8> = int_part
        .bytes()
        .chain(frac_part.bytes())
        .skip_while(|&b| b == b'0')
        .map(|b| b - b'0')
        .collect();
    let frac_len = i128::try_from(frac_part.len()).map_err(|_| QuantityError::OutOfRange)?;
    let mut exp10 = suffix_exp10 - frac_len;
    // Trailing zeros only move the exponent; dropping them keeps the digit
    // vector short for inputs like "1000000000000000000000000e-20".
    while digits.last() == Some(&0) {
        digits.pop();
        exp10 += 1;
    }
    Ok(Parsed {
        negative,
        int_len,
        frac_len: frac_part.len(),
        suffix_exp10,
        digits,
        exp10,
        pow1024,
    })
}

/// Multiplies a big-endian decimal digit vector in place by a small factor.
fn mul_small(digits: &mut Vec<u8>, factor: u32) {
    let mut carry: u32 = 0;
    for d in digits.iter_mut().rev() {
        let v = u32::from(*d) * factor + carry;
        // `v % 10` is always < 10, so the narrowing cannot lose information.
        *d = u8::try_from(v % 10).unwrap_or(0);
        carry = v / 10;
    }
    let mut prefix = Vec::new();
    while carry > 0 {
        prefix.push(u8::try_from(carry % 10).unwrap_or(0));
        carry /= 10;
    }
    prefix.reverse();
    digits.splice(0..0, prefix);
}

/// Largest number of integer digits worth materialising: anything longer is
/// certainly beyond `i64` (19 digits) and still fits `i128` when it is not.
const MAX_INT_DIGITS: i128 = 20;

/// Parses a quantity string (as in k8s `resource.Quantity`) to its
/// milli-value, rounding up (towards +infinity) exactly like apimachinery's
/// `Quantity.MilliValue()`.
///
/// The result is `ceil(value * 1000)`, computed exactly: `"0.1m"` is `1`,
/// `"1n"` is `1`, `"-1.5m"` is `-1`.
///
/// # Errors
///
/// [`QuantityError::Format`] if `s` is not a quantity. Unlike apimachinery,
/// which saturates silently, a value whose milli-value does not fit in an
/// `i64` yields [`QuantityError::OutOfRange`] (for example `"1e400"` or
/// `"10E"`). Huge exponents are handled arithmetically, never by looping over
/// the exponent.
pub fn parse_milli(s: &str) -> Result<i64, QuantityError> {
    match plain_milli(s) {
        Some(v) => Ok(v),
        None => parse_milli_general(s),
    }
}

/// The milli-value of the common spellings — up to 15 decimal digits and one of the suffixes
/// `m`, none, `k`, `M`, `G`, `Ki`, `Mi`, `Gi` — without the general parser's digit vector (the
/// metrics APIs' answers are full of them); `None` for anything else or on overflow, which the
/// general parser then decides.
fn plain_milli(s: &str) -> Option<i64> {
    let bytes = s.as_bytes();
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 15 {
        return None;
    }
    let multiplier: i64 = match &bytes[digits..] {
        b"m" => 1,
        b"" => 1_000,
        b"k" => 1_000_000,
        b"M" => 1_000_000_000,
        b"G" => 1_000_000_000_000,
        b"Ki" => 1_024_000,
        b"Mi" => 1_048_576_000,
        b"Gi" => 1_073_741_824_000,
        _ => return None,
    };
    let n = bytes[..digits]
        .iter()
        .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
    n.checked_mul(multiplier)
}

/// [`parse_milli`] for any quantity.
fn parse_milli_general(s: &str) -> Result<i64, QuantityError> {
    let Parsed {
        negative,
        mut digits,
        exp10,
        pow1024,
        ..
    } = parse(s)?;
    if digits.is_empty() {
        return Ok(0);
    }
    for _ in 0..pow1024 {
        mul_small(&mut digits, 1024);
    }
    // value * 1000 = digits * 10^exp, with no leading zeros in `digits`.
    let exp = exp10 + 3;
    let len = i128::try_from(digits.len()).map_err(|_| QuantityError::OutOfRange)?;
    let int_len = len + exp;
    if int_len > MAX_INT_DIGITS {
        return Err(QuantityError::OutOfRange);
    }
    // Integer part (at most MAX_INT_DIGITS digits) and whether a non-zero
    // fraction remains.
    let (magnitude, has_fraction) = if exp >= 0 {
        let mut m: i128 = 0;
        for &d in &digits {
            m = m * 10 + i128::from(d);
        }
        for _ in 0..exp {
            m *= 10;
        }
        (m, false)
    } else {
        let split = usize::try_from(int_len.max(0)).unwrap_or(0);
        let (int_digits, frac_digits) = digits.split_at(split);
        let m = int_digits
            .iter()
            .fold(0_i128, |m, &d| m * 10 + i128::from(d));
        (m, frac_digits.iter().any(|&d| d != 0))
    };
    // Ceiling: a positive value with a fraction rounds away from zero, a
    // negative one towards zero.
    let value = if negative {
        -magnitude
    } else {
        magnitude + i128::from(has_fraction)
    };
    i64::try_from(value).map_err(|_| QuantityError::OutOfRange)
}

/// The exact sign of a quantity's value: `-1`, `0` or `1` (like
/// apimachinery's `Quantity.Sign()`).
///
/// Unlike comparing [`parse_milli`] with zero, this is exact for values that
/// round to a milli-value of zero (`"-1n"` is negative) and never fails for
/// huge values (`"1e400"` is positive).
///
/// # Errors
///
/// [`QuantityError::Format`] if `s` is not a quantity.
pub fn signum(s: &str) -> Result<i32, QuantityError> {
    let parsed = parse(s)?;
    Ok(match (parsed.digits.is_empty(), parsed.negative) {
        (true, _) => 0,
        (false, true) => -1,
        (false, false) => 1,
    })
}

/// Decimal SI suffix for a power of ten that is a multiple of three.
fn decimal_suffix(exp10: i32) -> &'static str {
    match exp10 {
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "",
    }
}

/// Formats a milli-value as a canonical quantity string the way apimachinery
/// does for DecimalSI: 1500 -> `"1500m"`, 2000 -> `"2"`, 0 -> `"0"`,
/// 250 -> `"250m"`, 2_000_000 -> `"2k"`.
///
/// The mantissa is the integer with the largest power-of-1000 factored out
/// into the suffix.
pub fn format_milli_decimal(milli: i64) -> String {
    let mut s = String::new();
    write_milli_decimal(&mut s, milli);
    s
}

/// [`format_milli_decimal`] appended to `dst`.
pub fn write_milli_decimal(dst: &mut String, milli: i64) {
    if milli == 0 {
        dst.push('0');
        return;
    }
    let mut mantissa = i128::from(milli);
    let mut exp10 = -3;
    while mantissa % 1000 == 0 {
        mantissa /= 1000;
        exp10 += 3;
    }
    let _ = write!(dst, "{mantissa}{}", decimal_suffix(exp10));
}

/// Formats a milli-value in BinarySI the way apimachinery prints a quantity
/// built with `resource.NewMilliQuantity(v, resource.BinarySI)`: e.g.
/// `1024*1000*1024` -> `"1Mi"`.
///
/// Like apimachinery, values strictly between -1024 and 1024, and values that
/// are not whole, are printed as DecimalSI instead (1500 -> `"1500m"`,
/// 1_024_500 -> `"1024500m"`). Other values use the largest power of 1024
/// that divides them (2_000_000 -> `"2000"`, 1_536_000 -> `"1536"`).
pub fn format_milli_binary(milli: i64) -> String {
    let mut s = String::new();
    write_milli_binary(&mut s, milli);
    s
}

/// [`format_milli_binary`] appended to `dst`.
pub fn write_milli_binary(dst: &mut String, milli: i64) {
    let value = i128::from(milli);
    if value.abs() < 1024 * 1000 || value % 1000 != 0 {
        write_milli_decimal(dst, milli);
        return;
    }
    let mut mantissa = value / 1000;
    let mut power = 0;
    while mantissa % 1024 == 0 && power < 6 {
        mantissa /= 1024;
        power += 1;
    }
    let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
    let _ = write!(dst, "{mantissa}{suffix}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_milli_values() {
        let cases: &[(&str, i64)] = &[
            ("100m", 100),
            ("1.5", 1500),
            ("2k", 2_000_000),
            ("1Ki", 1_024_000),
            ("1Mi", 1_048_576_000),
            ("1e3", 1_000_000),
            ("1E3", 1_000_000),
            ("0.1m", 1),
            ("1n", 1),
            ("1u", 1),
            ("0", 0),
            ("1.0001m", 2),
            ("-1.5m", -1),
            ("500m", 500),
            ("0.5", 500),
            (".5", 500),
            ("5.", 5000),
            ("1.5Gi", 1_610_612_736_000),
            ("12e-1", 1200),
            ("1M", 1_000_000_000),
            ("3G", 3_000_000_000_000),
        ];
        for &(input, want) in cases {
            assert_eq!(parse_milli(input), Ok(want), "input {input:?}");
        }
    }

    #[test]
    fn parses_edge_cases() {
        let cases: &[(&str, i64)] = &[
            ("+1", 1000),
            ("-1", -1000),
            ("-0", 0),
            ("0.0", 0),
            ("000.000m", 0),
            ("007", 7000),
            ("1.m", 1),
            ("+.5", 500),
            ("1e+3", 1_000_000),
            ("1.5E-3", 2),
            ("1e-3", 1),
            ("1P", 1_000_000_000_000_000_000),
            ("1T", 1_000_000_000_000_000),
            ("2Ti", 2_199_023_255_552_000),
            ("1Pi", 1_125_899_906_842_624_000),
            ("0.5Ki", 512_000),
            ("0.001Ki", 1_024),
            ("0.0001Ki", 103),
            ("1e-400", 1),
            ("-1e-400", 0),
            ("0e400", 0),
            ("0.000000000000000000000000000000000000000000001", 1),
            ("-2.5m", -2),
            ("-1n", 0),
            ("9223372036854775.807", i64::MAX),
            ("-9223372036854775.808", i64::MIN),
            ("1000000000000000000000000000000000e-30", 1_000_000),
        ];
        for &(input, want) in cases {
            assert_eq!(parse_milli(input), Ok(want), "input {input:?}");
        }
    }

    #[test]
    fn rejects_malformed_quantities() {
        for input in [
            "",
            "abc",
            "1.2.3",
            "1 m",
            "1Kb",
            "m",
            "+-1",
            "1e",
            "1ee3",
            ".",
            "-",
            "+",
            " 1",
            "1 ",
            "--1",
            "1K",
            "1k1",
            "1e3.5",
            "1e+",
            "1e-",
            "1Ki1",
            "e3",
            "1mi",
            "1E3i",
            "１",
            "1e99999999999999999999",
        ] {
            assert_eq!(
                parse_milli(input),
                Err(QuantityError::Format),
                "input {input:?}"
            );
            assert_eq!(
                approx_f64(input),
                Err(QuantityError::Format),
                "input {input:?}"
            );
        }
    }

    #[test]
    fn reports_out_of_range() {
        for input in [
            "1e400",
            "-1e400",
            "1E",
            "10P",
            "9223372036854775.808",
            "-9223372036854775.809",
            "8Ei",
            "99999999999999999999999999999999999999999999",
            "1e9223372036854775807",
        ] {
            assert_eq!(
                parse_milli(input),
                Err(QuantityError::OutOfRange),
                "input {input:?}"
            );
        }
    }

    #[test]
    fn error_messages_are_lowercase() {
        for e in [QuantityError::Format, QuantityError::OutOfRange] {
            let msg = e.to_string();
            assert!(msg.starts_with(|c: char| c.is_ascii_lowercase()), "{msg}");
        }
        assert_eq!(
            QuantityError::Format.to_string(),
            "quantities must match the regular expression \
             '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        );
    }

    #[test]
    fn long_inputs_are_handled() {
        let big = format!("1{}Ei", "0".repeat(100_000));
        assert_eq!(parse_milli(&big), Err(QuantityError::OutOfRange));
        let tiny = format!("0.{}1Ei", "0".repeat(100_000));
        assert_eq!(parse_milli(&tiny), Ok(1));
        let long = format!("1.{}", "5".repeat(100_000));
        assert_eq!(parse_milli(&long), Ok(1556));
        assert_eq!(signum(&long), Ok(1));
        let approx = approx_f64(&long).unwrap_or_default();
        // More than 18 digits: the exact decimal, rounded up to nano, as apimachinery does.
        assert_eq!(approx, 1.555_555_556);
        assert_eq!(milli_value(&long), Ok(1556));
    }

    #[test]
    fn exact_sign() {
        let cases: &[(&str, i32)] = &[
            ("0", 0),
            ("-0", 0),
            ("+0.000", 0),
            ("0e400", 0),
            ("1n", 1),
            ("-1n", -1),
            ("-1e-400", -1),
            ("1e400", 1),
            ("-2Ki", -1),
            (".5", 1),
        ];
        for &(input, want) in cases {
            assert_eq!(signum(input), Ok(want), "input {input:?}");
        }
        assert_eq!(signum("x"), Err(QuantityError::Format));
    }

    #[test]
    fn formats_decimal_si() {
        let cases: &[(i64, &str)] = &[
            (1500, "1500m"),
            (2000, "2"),
            (0, "0"),
            (250, "250m"),
            (2_000_000, "2k"),
            (1_200_000, "1200"),
            (-1500, "-1500m"),
            (-2000, "-2"),
            (1, "1m"),
            (1_000_000_000, "1M"),
            (3_000_000_000_000, "3G"),
            (1_000_000_000_000_000_000, "1P"),
            (i64::MAX, "9223372036854775807m"),
            (i64::MIN, "-9223372036854775808m"),
        ];
        for &(milli, want) in cases {
            assert_eq!(format_milli_decimal(milli), want, "milli {milli}");
        }
    }

    #[test]
    fn formats_binary_si() {
        let cases: &[(i64, &str)] = &[
            (1024 * 1000 * 1024, "1Mi"),
            (1500, "1500m"),
            (0, "0"),
            (1_024_000, "1Ki"),
            (-1_024_000, "-1Ki"),
            (1_023_000, "1023"),
            (2_000_000, "2000"),
            (1_025_000, "1025"),
            (1_024_500, "1024500m"),
            (1_536_000, "1536"),
            (1_610_612_736_000, "1536Mi"),
            (1_000_000_000, "1000000"),
            (1_125_899_906_842_624_000, "1Pi"),
        ];
        for &(milli, want) in cases {
            assert_eq!(format_milli_binary(milli), want, "milli {milli}");
        }
    }

    /// A small deterministic pseudo-random generator (SplitMix64).
    fn splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Random-ish milli values spread over many magnitudes, both signs, and
    /// biased towards round numbers so that every suffix is exercised.
    fn sample_millis() -> Vec<i64> {
        let mut state = 0x5EED_u64;
        let mut out = vec![0, 1, -1, i64::MAX, i64::MIN, 999, 1000, 1001];
        for _ in 0..20_000 {
            let r = splitmix(&mut state);
            let magnitude_digits = (r % 19) as u32;
            let modulus = 10_i64.pow(magnitude_digits).max(1);
            let base = (splitmix(&mut state) % modulus as u64) as i64;
            let round = 10_i64.pow((splitmix(&mut state) % 10) as u32);
            let value = base.checked_mul(round).unwrap_or(base);
            out.push(if r & 1 == 0 { value } else { -value });
        }
        out
    }

    #[test]
    fn decimal_format_round_trips() {
        for m in sample_millis() {
            let text = format_milli_decimal(m);
            assert_eq!(parse_milli(&text), Ok(m), "milli {m} formatted as {text}");
        }
        for m in -5000..=5000 {
            assert_eq!(parse_milli(&format_milli_decimal(m)), Ok(m));
        }
    }

    #[test]
    fn binary_format_round_trips() {
        let mut samples = sample_millis();
        samples.extend((0..=5).map(|k| 1000 * 1024_i64.pow(k)));
        samples.extend((1..=5).map(|k| 3000 * 1024_i64.pow(k)));
        for m in samples {
            let text = format_milli_binary(m);
            assert_eq!(parse_milli(&text), Ok(m), "milli {m} formatted as {text}");
        }
    }

    #[test]
    fn parse_agrees_with_float_for_simple_values() {
        let mut state = 42_u64;
        for _ in 0..2_000 {
            let units = (splitmix(&mut state) % 1_000_000) as i64;
            let frac = (splitmix(&mut state) % 1000) as i64;
            let text = format!("{units}.{frac:03}");
            let milli = parse_milli(&text).unwrap_or_default();
            assert_eq!(milli, units * 1000 + frac, "{text}");
            let approx = approx_f64(&text).unwrap_or_default();
            assert!((approx * 1000.0 - milli as f64).abs() < 1e-3, "{text}");
        }
    }

    #[test]
    fn the_plain_spellings_parse_as_the_general_parser_does() {
        let mut checked = 0;
        for digits in ["0", "7", "007", "500", "123456789012345", "999999999999999"] {
            for suffix in ["m", "", "k", "M", "G", "Ki", "Mi", "Gi"] {
                let s = format!("{digits}{suffix}");
                let general = parse_milli_general(&s);
                match plain_milli(&s) {
                    Some(v) => {
                        assert_eq!(Ok(v), general, "{s}");
                        checked += 1;
                    }
                    // Only an overflow leaves a plain spelling to the general parser.
                    None => assert!(general.is_err(), "{s}: {general:?}"),
                }
            }
        }
        assert!(checked > 30, "{checked}");
        for other in [
            "",
            "m",
            "1.5",
            "1e3",
            "+1",
            "-1",
            "1Ti",
            "1 m",
            "1000000000000000",
        ] {
            assert_eq!(plain_milli(other), None, "{other}");
        }
    }
}
