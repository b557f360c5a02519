//! Exact Kubernetes `resource.Quantity` arithmetic: which texts are quantities and what they are
//! worth, as apimachinery reads them (`ParseQuantity`, and `UnmarshalJSON` for a field of an
//! object), its conversions of them (`MilliValue()`, `Value()`, `AsApproximateFloat64()`,
//! `Sign()`, `String()`: [`GoQuantity`]), an exact ceiling milli-value ([`parse_milli`]), and
//! canonical formatting of milli-values.
//!
//! The syntax is apimachinery's, which is more lenient than its error message's regular expression
//! (see `scan`): an optional sign, a decimal number whose integer part, fraction or both may be
//! empty (`"1"`, `"1.5"`, `".5"`, `"5."`, and `"."`, `"+"`, `"e3"` are 0), and a suffix that is
//! either a decimal SI suffix (`n u m k M G T P E`), a binary SI suffix (`Ki Mi Gi Ti Pi Ei`) or a
//! decimal exponent (`e3`, `E-3`, `e+2`). Only the empty text is refused outright. The
//! differential test `tests/quantity_upstream.rs` holds every answer here to apimachinery's own,
//! run by `adapters/upstream/quantity`.
//!
//! The free functions read a quantity *field*: the text a JSON object carries, which
//! `UnmarshalJSON` trims of surrounding white space before parsing (`" 1 "` is 1), as the API
//! server and the controller see it. [`parse_quantity`] is `ParseQuantity` itself.
//!
//! All integer results are computed exactly on the decimal digits of the input; no floating point
//! is involved in [`parse_milli`].

use std::fmt::Write as _;

mod go;
mod scan;
pub use go::GoQuantity;
use scan::{Parsed, field_text, parse};

/// Error parsing a quantity string: apimachinery's three parse errors, word for word, and the
/// reference's own for a milli-value beyond `i64`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The string is not a quantity (apimachinery's `ErrFormatWrong`): its number is followed by
    /// something other than suffix letters, a sign and digits.
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format,
    /// The suffix is none of the known ones, nor `e`/`E` and a 64-bit exponent (apimachinery's
    /// `ErrSuffix`: `"1K"`, `"1e"`, `"1e99999999999999999999"`).
    #[error("unable to parse quantity's suffix")]
    Suffix,
    /// A number without a digit where apimachinery needs one: its arbitrary-precision path
    /// (apimachinery's `ErrNumeric`: `"e-10"`).
    #[error("unable to parse numeric part of quantity")]
    Numeric,
    /// The quantity is well-formed, but its value does not fit the requested
    /// representation (a milli-value outside the `i64` range, or a float that
    /// is not finite).
    #[error("quantity is out of range: its value does not fit in a 64-bit milli-value")]
    OutOfRange,
}

/// apimachinery's `ParseQuantity(s)`: the quantity it builds, or its error.
///
/// # Errors
///
/// The [`QuantityError`] apimachinery gives (never [`QuantityError::OutOfRange`]).
pub fn parse_quantity(s: &str) -> Result<GoQuantity<'_>, QuantityError> {
    Ok(GoQuantity::build(s, &parse(s)?))
}

/// The quantity a JSON field holding the string `s` decodes to (`UnmarshalJSON`: surrounding
/// white space trimmed, then `ParseQuantity`), or its error: what the API server makes of a
/// manifest's quantity and the upstream adapter of a protocol message's.
///
/// # Errors
///
/// The [`QuantityError`] apimachinery gives (never [`QuantityError::OutOfRange`]).
pub fn decode_field(s: &str) -> Result<GoQuantity<'_>, QuantityError> {
    parse_quantity(field_text(s)?)
}

/// apimachinery's `MilliValue()` of a quantity field (see [`GoQuantity::milli_value`]): what
/// upstream's controller reads of every request, usage and target (`"8Ei"` is −1000).
///
/// # Errors
///
/// The [`QuantityError`] apimachinery gives if `s` is not a quantity.
#[inline]
pub fn milli_value(s: &str) -> Result<i64, QuantityError> {
    // The common spellings (digits and a plain suffix) that do not overflow are exact in both
    // forms.
    if let Some(milli) = plain_milli(s) {
        return Ok(milli);
    }
    general_milli_value(s)
}

/// [`milli_value`] of a spelling [`plain_milli`] leaves to the general decoder (out of line, so
/// that the common path inlines small).
#[inline(never)]
fn general_milli_value(s: &str) -> Result<i64, QuantityError> {
    Ok(decode_field(s)?.milli_value())
}

/// apimachinery's `AsApproximateFloat64()` of a quantity field (see
/// [`GoQuantity::approx_f64`]): what upstream's controller reads of a tolerance.
///
/// # Errors
///
/// The [`QuantityError`] apimachinery gives if `s` is not a quantity.
pub fn approx_f64(s: &str) -> Result<f64, QuantityError> {
    if s == "0" {
        return Ok(0.0);
    }
    Ok(decode_field(s)?.approx_f64())
}

/// apimachinery's `Value()` of a quantity field (see [`GoQuantity::value`]).
///
/// # Errors
///
/// The [`QuantityError`] apimachinery gives if `s` is not a quantity.
pub fn value(s: &str) -> Result<i64, QuantityError> {
    Ok(decode_field(s)?.value())
}

/// apimachinery's `String()` of a quantity field (see [`GoQuantity::canonical`]): what the API
/// server quotes in an error about it (`"."` → `"0"`, `"-0.1"` → `"-100m"`, `"1.250"` as written).
///
/// # Errors
///
/// The [`QuantityError`] apimachinery gives if `s` is not a quantity.
pub fn canonical(s: &str) -> Result<String, QuantityError> {
    Ok(decode_field(s)?.canonical().into_owned())
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
/// apimachinery's [`QuantityError`] if the field `s` is not a quantity. Unlike apimachinery,
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
#[inline]
fn plain_milli(s: &str) -> Option<i64> {
    let bytes = s.as_bytes();
    // One pass over the digits: at most 15 of them cannot overflow. Eight leading digits are
    // read as one word (requests and memory samples are often nine digits, e.g. `536870912`).
    let mut n: i64 = 0;
    let mut digits = 0;
    if let Some(&chunk) = bytes.first_chunk::<8>() {
        let w = u64::from_le_bytes(chunk);
        if all_digits(w) {
            n = eight_digits(w);
            digits = 8;
        }
    }
    for &b in &bytes[digits..] {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        if digits == 15 {
            return None;
        }
        n = n * 10 + i64::from(d);
        digits += 1;
    }
    if digits == 0 {
        return None;
    }
    let multiplier: i64 = match bytes[digits..] {
        [b'm'] => 1,
        [] => 1_000,
        [b'k'] => 1_000_000,
        [b'M'] => 1_000_000_000,
        [b'G'] => 1_000_000_000_000,
        [b'K', b'i'] => 1_024_000,
        [b'M', b'i'] => 1_048_576_000,
        [b'G', b'i'] => 1_073_741_824_000,
        _ => return None,
    };
    n.checked_mul(multiplier)
}

/// Whether each of the eight bytes of `w` is an ASCII digit: every byte is `0x30..=0x3f`, and
/// adding 6 (no carry between bytes then) keeps it below `0x40`.
#[inline]
fn all_digits(w: u64) -> bool {
    const HIGH: u64 = 0xf0f0_f0f0_f0f0_f0f0;
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    (w & HIGH) == ZEROS && (w.wrapping_add(0x0606_0606_0606_0606) & HIGH) == ZEROS
}

/// The value of eight ASCII digits read as a little-endian word (first digit in the low byte):
/// pairs, then quadruples, then the eight, with multiplications that cannot overflow (the
/// standard library's float parser does the same).
#[inline]
fn eight_digits(w: u64) -> i64 {
    const MASK: u64 = 0x0000_00ff_0000_00ff;
    const MUL1: u64 = 100 + (1_000_000 << 32);
    const MUL2: u64 = 1 + (10_000 << 32);
    let mut v = w - 0x3030_3030_3030_3030;
    v = v * 10 + (v >> 8);
    let v1 = (v & MASK).wrapping_mul(MUL1);
    let v2 = ((v >> 16) & MASK).wrapping_mul(MUL2);
    i64::from((v1.wrapping_add(v2) >> 32) as u32)
}

/// [`parse_milli`] for any quantity.
fn parse_milli_general(s: &str) -> Result<i64, QuantityError> {
    let Parsed {
        negative,
        mut digits,
        exp10,
        pow1024,
        ..
    } = parse(field_text(s)?)?;
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
/// apimachinery's [`QuantityError`] if the field `s` is not a quantity.
pub fn signum(s: &str) -> Result<i32, QuantityError> {
    let parsed = parse(field_text(s)?)?;
    Ok(match (parsed.digits.is_empty(), parsed.negative) {
        (true, _) => 0,
        (false, true) => -1,
        (false, false) => 1,
    })
}

/// Decimal SI suffix for a power of ten that is a multiple of three (none for 0 or one
/// outside `n`..`E`).
fn decimal_suffix(exp10: i32) -> &'static str {
    match exp10 {
        -9 => "n",
        -6 => "u",
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

    /// Each refused spelling with apimachinery v0.36.4's error (printed by
    /// adapters/upstream/quantity; the differential test checks thousands more).
    #[test]
    fn rejects_malformed_quantities() {
        use QuantityError::{Format, Numeric, Suffix};
        let cases: &[(&str, QuantityError)] = &[
            ("", Format),
            ("abc", Format),
            ("1.2.3", Format),
            ("1 m", Format),
            ("1Kb", Format),
            ("1e3.5", Format),
            ("1E3i", Format),
            ("１", Format),
            ("1\n", Format),
            ("+-1", Suffix),
            ("--1", Suffix),
            ("1e", Suffix),
            ("1ee3", Suffix),
            ("1K", Suffix),
            ("1k1", Suffix),
            ("1e+", Suffix),
            ("1e-", Suffix),
            ("1Ki1", Suffix),
            ("1mi", Suffix),
            ("i", Suffix),
            ("1e99999999999999999999", Suffix),
            ("e-10", Numeric),
            (".e-10", Numeric),
            ("-e-10", Numeric),
            ("Pi", Numeric),
            ("-Ei", Numeric),
        ];
        for (input, want) in cases {
            assert_eq!(parse_milli(input), Err(want.clone()), "input {input:?}");
            assert_eq!(approx_f64(input), Err(want.clone()), "input {input:?}");
            assert_eq!(signum(input), Err(want.clone()), "input {input:?}");
            assert_eq!(
                parse_quantity(input).map(|q| q.sign()),
                Err(want.clone()),
                "input {input:?}"
            );
        }
    }

    /// Spellings apimachinery reads as zero although its error message's regular expression
    /// would refuse them: no digit at all (issue 37).
    #[test]
    fn digitless_spellings_are_zero() {
        for input in [
            ".", "+.", "-.", "0.", ".0", "e3", "E-9", "+", "-", "m", "Ki", "-Ti", ".k", "0.e-10",
        ] {
            assert_eq!(parse_milli(input), Ok(0), "input {input:?}");
            assert_eq!(milli_value(input), Ok(0), "input {input:?}");
            assert_eq!(approx_f64(input), Ok(0.0), "input {input:?}");
            assert_eq!(signum(input), Ok(0), "input {input:?}");
            assert_eq!(canonical(input).as_deref(), Ok("0"), "input {input:?}");
        }
    }

    /// A field is trimmed of white space before it is parsed (`UnmarshalJSON`);
    /// `ParseQuantity` itself refuses it, and a character JSON escapes is never trimmed.
    #[test]
    fn a_field_is_trimmed_of_white_space() {
        for input in [" 1", "1 ", "\u{a0}1\u{3000}", "\u{2028}1"] {
            assert_eq!(milli_value(input), Ok(1000), "input {input:?}");
            assert_eq!(canonical(input).as_deref(), Ok("1"), "input {input:?}");
            assert_eq!(
                parse_quantity(input).map(|q| q.sign()),
                Err(QuantityError::Format),
                "input {input:?}"
            );
        }
        for input in ["1\n", "\t1", "\"1\"", "1\\"] {
            assert_eq!(milli_value(input), Err(QuantityError::Format), "{input:?}");
        }
    }

    /// `String()`: the text as written when apimachinery deems it canonical, else the value
    /// re-spelled (values printed by adapters/upstream/quantity).
    #[test]
    fn canonical_strings() {
        let cases: &[(&str, &str)] = &[
            ("1.5", "1500m"),
            ("1.250", "1.250"),
            ("+1", "+1"),
            ("1e3", "1e3"),
            ("1.Ki", "1.Ki"),
            ("1.50", "1500m"),
            ("-0.1", "-100m"),
            ("0.5", "500m"),
            ("1000", "1k"),
            ("2048Ki", "2Mi"),
            (".5Ki", "512"),
            ("1E", "1E"),
            ("-1.5m", "-1500u"),
            ("1e-400", "1e-9"),
        ];
        for &(input, want) in cases {
            assert_eq!(canonical(input).as_deref(), Ok(want), "input {input:?}");
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
        for digits in [
            "0",
            "7",
            "007",
            "500",
            "1234567",
            "12345678",
            "536870912",
            "00000000",
            "99999999",
            "90000000001",
            "123456789012345",
            "999999999999999",
        ] {
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
            "12345678.5",
            "1234567:",
            "1234567/",
            "12345678Ti",
        ] {
            assert_eq!(plain_milli(other), None, "{other}");
        }
    }

    #[test]
    fn eight_digits_at_once_are_the_digits_one_by_one() {
        // Each position with each byte around and in the digits, then a seeded batch.
        let mut texts: Vec<[u8; 8]> = Vec::new();
        for at in 0..8 {
            for b in [
                b'/', b'0', b'1', b'5', b'8', b'9', b':', b'?', b'@', 0x00, 0x7f, 0xb0, 0xff,
            ] {
                let mut t = *b"31415926";
                t[at] = b;
                texts.push(t);
            }
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut t = [0u8; 8];
            for (i, c) in t.iter_mut().enumerate() {
                // Mostly digits, sometimes a byte near them.
                let r = (x >> (i * 8)) as u8;
                *c = if r.is_multiple_of(8) {
                    r
                } else {
                    b'0' + r % 10
                };
            }
            texts.push(t);
        }
        for t in texts {
            let w = u64::from_le_bytes(t);
            let digits = t.iter().all(u8::is_ascii_digit);
            assert_eq!(all_digits(w), digits, "{t:?}");
            if digits {
                let want = t.iter().fold(0i64, |n, &c| n * 10 + i64::from(c - b'0'));
                assert_eq!(eight_digits(w), want, "{t:?}");
            }
        }
    }
}
