//! Reading a quantity's text the way apimachinery's `ParseQuantity` does: which spellings it
//! accepts, with which error it refuses the others, and the exact value of what it accepts; and
//! what `UnmarshalJSON` (a manifest's field through the API server, a protocol message's through
//! the upstream adapter) hands it.
//!
//! `ParseQuantity` scans leniently: after an optional sign, a run of digits, an optional point and
//! a run of digits (either run, or both, may be empty: `"."`, `"+"`, `"e3"` and `"Ki"` are 0), then
//! a run of the letters `eEinumkKMGTP`, an optional sign and a run of digits that must reach the
//! end of the text (else [`QuantityError::Format`]). The suffix is then looked up: a decimal or
//! binary SI suffix, or `e`/`E` and a 64-bit integer (else [`QuantityError::Suffix`]). Only the
//! empty text is refused outright. A number that takes apimachinery's arbitrary-precision path
//! (more than 18 digits, a scale below nano, an overflowing binary value) must contain a digit
//! (else [`QuantityError::Numeric`]: `"e-10"`, `".e-10"`).

use super::QuantityError;

/// The exact value of a parsed quantity, `sign × digits × 10^exp10 × 1024^pow1024`, and what
/// apimachinery's in-memory form needs of the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Parsed {
    pub negative: bool,
    /// Digits before the point once leading zeros are stripped (apimachinery's `len(num)`, at
    /// least 1: an empty integer part counts as `"0"`).
    pub int_len: usize,
    /// Digits after the point (apimachinery's `len(denom)`).
    pub frac_len: usize,
    /// The suffix's power of ten (`k` is 3, `e-2` is -2) as written.
    pub suffix_exp10: i128,
    /// The suffix's kind, which is the quantity's format.
    pub format: Format,
    /// Decimal digits of the mantissa (each 0..=9), most significant first, without leading or
    /// trailing zeros (empty for the value zero).
    pub digits: Vec<u8>,
    /// Power of ten applied to `digits`; `i128` so that any `i64` exponent plus the digit counts
    /// cannot overflow.
    pub exp10: i128,
    /// Power of 1024 applied to `digits` (0..=6).
    pub pow1024: u32,
    /// apimachinery's `int64Amount` when `ParseQuantity` builds one: value × 10^scale.
    pub int_form: Option<(i64, i32)>,
    /// Whether `ParseQuantity` keeps the text itself as the quantity's `String()` (a spelling it
    /// deems canonical: `"1.5"`, `"+1"`, `"1e3"`, `"3Ki"`).
    pub written: bool,
}

/// apimachinery's `Format` of a quantity: which suffix it was written with (a binary value below
/// 1 that takes the arbitrary-precision path is turned into `DecimalSI`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    /// `e`/`E` and an exponent.
    DecimalExponent,
    /// `Ki` … `Ei`.
    BinarySI,
    /// None, or `n u m k M G T P E`.
    DecimalSI,
}

/// The parts of a quantity's text, as `ParseQuantity`'s scanner splits it.
struct Scanned<'a> {
    negative: bool,
    /// The integer digits without leading zeros (empty when there are none, which apimachinery
    /// reads as `"0"`).
    num: &'a str,
    /// The digits after the point.
    denom: &'a str,
    /// Everything after the number.
    suffix: &'a str,
    /// Whether the number part (sign, zeros, digits, point) holds any digit.
    has_digit: bool,
}

/// The length of the run of ASCII digits at the start of `b`.
fn digit_run(b: &[u8]) -> usize {
    b.iter().take_while(|c| c.is_ascii_digit()).count()
}

/// Splits `s` into number and suffix as apimachinery's scanner does, or refuses it.
fn scan(s: &str) -> Result<Scanned<'_>, QuantityError> {
    let b = s.as_bytes();
    let mut pos = 0;
    let negative = b.first() == Some(&b'-');
    if matches!(b.first(), Some(b'-' | b'+')) {
        pos = 1;
    }
    let zeros = b[pos..].iter().take_while(|&&c| c == b'0').count();
    pos += zeros;
    let num_len = digit_run(&b[pos..]);
    let num = &s[pos..pos + num_len];
    pos += num_len;
    let mut denom = "";
    if b.get(pos) == Some(&b'.') {
        let len = digit_run(&b[pos + 1..]);
        denom = &s[pos + 1..pos + 1 + len];
        pos += 1 + len;
    }
    let suffix = &s[pos..];
    // The suffix: letters, then an optional sign and digits that must reach the end.
    let sb = suffix.as_bytes();
    let letters = sb
        .iter()
        .take_while(|c| b"eEinumkKMGTP".contains(c))
        .count();
    let mut rest = letters;
    // apimachinery only looks for the sign when something follows the letters.
    if matches!(sb.get(rest), Some(b'-' | b'+')) {
        rest += 1;
    }
    rest += digit_run(&sb[rest..]);
    if rest != sb.len() {
        return Err(QuantityError::Format);
    }
    Ok(Scanned {
        negative,
        num,
        denom,
        suffix,
        has_digit: zeros > 0 || !num.is_empty() || !denom.is_empty(),
    })
}

/// The suffix's meaning: `(power of ten as written, power of 1024, format)`.
fn interpret(suffix: &str) -> Result<(i128, u32, Format), QuantityError> {
    let si = |e: i128| Ok((e, 0, Format::DecimalSI));
    let binary = |k: u32| Ok((0, k, Format::BinarySI));
    match suffix {
        "" => si(0),
        "n" => si(-9),
        "u" => si(-6),
        "m" => si(-3),
        "k" => si(3),
        "M" => si(6),
        "G" => si(9),
        "T" => si(12),
        "P" => si(15),
        "E" => si(18),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        _ => {
            let exponent = suffix
                .strip_prefix(['e', 'E'])
                .filter(|rest| !rest.is_empty())
                .and_then(|rest| rest.parse::<i64>().ok())
                .ok_or(QuantityError::Suffix)?;
            Ok((i128::from(exponent), 0, Format::DecimalExponent))
        }
    }
}

/// The value of at most 18 ASCII digits.
fn small(digits: &[u8]) -> i64 {
    digits
        .iter()
        .fold(0i64, |v, &d| v * 10 + i64::from(d - b'0'))
}

/// How many zeros end the digits of `a` followed by `b`.
fn trailing_zeros(a: &[u8], b: &[u8]) -> usize {
    let zeros = |d: &[u8]| d.iter().rev().take_while(|&&c| c == b'0').count();
    let in_b = zeros(b);
    if in_b == b.len() {
        in_b + zeros(a)
    } else {
        in_b
    }
}

/// apimachinery's `int64Amount` for the scanned text, when `ParseQuantity` builds one (at most 18
/// digits, scale at least nano; for a binary suffix no fraction and few enough digits, and no
/// overflow), and whether it keeps the text as `String()`.
fn int_form(
    sc: &Scanned<'_>,
    exp10: i128,
    pow1024: u32,
    format: Format,
) -> Option<(i64, i32, bool)> {
    let num = if sc.num.is_empty() { "0" } else { sc.num };
    let len = num.len() + sc.denom.len();
    // The exponent of an `e` suffix is parsed as an int64 and then kept as an int32.
    let exponent = exp10 as i64 as i32;
    let (mantissa, scale) = match format {
        Format::BinarySI => {
            let bits = 10 * pow1024;
            let precision = 15 - len as i64 - i64::from(3 * bits / 10) - 1;
            if !sc.denom.is_empty() || precision < 0 {
                return None;
            }
            (1i64 << bits, 0)
        }
        _ => {
            if len > 18 {
                return None;
            }
            (1, exponent.wrapping_sub(sc.denom.len() as i32))
        }
    };
    if scale < -9 {
        return None;
    }
    let unsigned =
        small(num.as_bytes()) * 10i64.pow(sc.denom.len() as u32) + small(sc.denom.as_bytes());
    let magnitude = unsigned.checked_mul(mantissa)?;
    let written = match format {
        Format::BinarySI => unsigned & 7 != 0,
        _ => {
            scale % 3 == 0
                && trailing_zeros(num.as_bytes(), sc.denom.as_bytes()) < 3
                && !num.starts_with('0')
        }
    };
    Some((
        if sc.negative { -magnitude } else { magnitude },
        scale,
        written,
    ))
}

/// apimachinery's `ParseQuantity`: the exact value of `s`, or why it is refused.
pub(super) fn parse(s: &str) -> Result<Parsed, QuantityError> {
    if s.is_empty() {
        return Err(QuantityError::Format);
    }
    let sc = scan(s)?;
    let (suffix_exp10, pow1024, format) = interpret(sc.suffix)?;
    let int = int_form(&sc, suffix_exp10, pow1024, format);
    if int.is_none() && !sc.has_digit {
        // The arbitrary-precision path reads the number part as a decimal, which needs a digit.
        return Err(QuantityError::Numeric);
    }
    let mut digits: Vec<u8> = sc
        .num
        .bytes()
        .chain(sc.denom.bytes())
        .skip_while(|&b| b == b'0')
        .map(|b| b - b'0')
        .collect();
    let mut exp10 = suffix_exp10 - sc.denom.len() as i128;
    // Trailing zeros only move the exponent; dropping them keeps the digit vector short for
    // inputs like "1000000000000000000000000e-20".
    while digits.last() == Some(&0) {
        digits.pop();
        exp10 += 1;
    }
    Ok(Parsed {
        negative: sc.negative,
        int_len: sc.num.len().max(1),
        frac_len: sc.denom.len(),
        suffix_exp10,
        format,
        digits,
        exp10,
        pow1024,
        int_form: int.map(|(v, scale, _)| (v, scale)),
        written: s == "0" || int.is_some_and(|(_, _, w)| w),
    })
}

/// The text `UnmarshalJSON` hands `ParseQuantity` for a field whose string value is `s`, sent as
/// JSON that escapes only what JSON must (`"`, `\` and control characters; serde_json's
/// encoding, the harness's): the raw text between the quotes with surrounding Unicode white space
/// trimmed (`" 1 "` is `"1"`). An escaped character leaves a backslash, which no quantity
/// contains: such a value is refused with apimachinery's format error.
///
/// # Errors
///
/// [`QuantityError::Format`] if `s` holds a character JSON escapes.
pub(super) fn field_text(s: &str) -> Result<&str, QuantityError> {
    if s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        return Err(QuantityError::Format);
    }
    Ok(s.trim())
}
