//! apimachinery's readings of quantity spellings beside the reference's, in one shape: the
//! oracle of the quantity differential test (`quantity_upstream.rs`) and of the differential
//! fuzz target (`fuzz/fuzz_targets/quantity.rs`), which both include this file as a module.
//!
//! apimachinery's side is `adapters/upstream/bin/hpa-quantity` (built by `just upstream` with
//! the adapter's pinned apimachinery), one long-lived process fed one JSON string per line.

use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use hpa_reference::quantity::{
    GoQuantity, QuantityError, approx_f64, canonical, decode_field, milli_value, parse_milli,
    parse_quantity, signum, value,
};

/// One reading of a spelling: an error's text, or the quantity's conversions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    Error(String),
    Quantity {
        milli: i64,
        value: i64,
        /// `AsApproximateFloat64()`'s bits (every NaN as one).
        float: u64,
        sign: i32,
        string: String,
    },
}

/// Both readings of a spelling: `ParseQuantity`'s, and `UnmarshalJSON`'s of a field holding it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub parse: Reading,
    pub json: Reading,
}

/// A float's bits, every NaN as the same.
fn bits(f: f64) -> u64 {
    if f.is_nan() {
        f64::NAN.to_bits()
    } else {
        f.to_bits()
    }
}

fn reading(q: Result<GoQuantity<'_>, QuantityError>) -> Reading {
    match q {
        Err(e) => Reading::Error(e.to_string()),
        Ok(q) => Reading::Quantity {
            milli: q.milli_value(),
            value: q.value(),
            float: bits(q.approx_f64()),
            sign: q.sign(),
            string: q.canonical().into_owned(),
        },
    }
}

/// The reference's answer for `s`.
pub fn reference(s: &str) -> Answer {
    Answer {
        parse: reading(parse_quantity(s)),
        json: reading(decode_field(s)),
    }
}

/// Where the free functions (what the reference's callers use) disagree with `decode_field`'s
/// quantity, or `parse_milli` accepts differently: `None` when they agree.
pub fn free_functions_disagree(s: &str) -> Option<String> {
    let field = reading(decode_field(s));
    let free = match (
        milli_value(s),
        value(s),
        approx_f64(s),
        signum(s),
        canonical(s),
    ) {
        (Ok(milli), Ok(value), Ok(float), Ok(sign), Ok(string)) => Reading::Quantity {
            milli,
            value,
            float: bits(float),
            sign,
            string,
        },
        (Err(e), ..) => Reading::Error(e.to_string()),
        other => {
            return Some(format!(
                "{s:?}: the free functions disagree among themselves: {other:?}"
            ));
        }
    };
    if free != field {
        return Some(format!(
            "{s:?}: free functions {free:?}, decode_field {field:?}"
        ));
    }
    let exact = parse_milli(s);
    let accepted = !matches!(field, Reading::Error(_));
    let exact_accepted = matches!(exact, Ok(_) | Err(QuantityError::OutOfRange));
    if accepted != exact_accepted {
        return Some(format!(
            "{s:?}: parse_milli {exact:?}, decode_field {field:?}"
        ));
    }
    if let (Err(e), Reading::Error(text)) = (&exact, &field)
        && e.to_string() != *text
    {
        return Some(format!(
            "{s:?}: parse_milli {exact:?}, decode_field {field:?}"
        ));
    }
    None
}

/// The Go program's path: `HPA_QUANTITY_BIN`, else where `just upstream` builds it.
pub fn upstream_binary(root: &Path) -> PathBuf {
    std::env::var_os("HPA_QUANTITY_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("adapters/upstream/bin/hpa-quantity"))
}

/// A running `hpa-quantity`.
pub struct Upstream {
    child: Child,
    stdin: Option<BufWriter<ChildStdin>>,
    stdout: BufReader<ChildStdout>,
}

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// A reading from the Go program's JSON.
fn upstream_reading(v: &serde_json::Value) -> io::Result<Reading> {
    if let Some(e) = v.get("error").and_then(|e| e.as_str()) {
        return Ok(Reading::Error(e.to_owned()));
    }
    let int = |k: &str| {
        v.get(k)
            .and_then(serde_json::Value::as_i64)
            .ok_or_else(|| invalid(format!("no {k} in {v}")))
    };
    let text = |k: &str| {
        v.get(k)
            .and_then(|t| t.as_str())
            .ok_or_else(|| invalid(format!("no {k} in {v}")))
    };
    let float = match text("float")? {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        t => t
            .parse()
            .map_err(|_| invalid(format!("float {t:?} in {v}")))?,
    };
    Ok(Reading::Quantity {
        milli: int("milli")?,
        value: int("value")?,
        float: bits(float),
        sign: int("sign")? as i32,
        string: text("string")?.to_owned(),
    })
}

impl Upstream {
    /// Starts the program at `path`.
    pub fn start(path: &Path) -> io::Result<Self> {
        let mut child = Command::new(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take().map(BufWriter::new);
        let stdout = child
            .stdout
            .take()
            .map(BufReader::new)
            .ok_or_else(|| invalid("no stdout".into()))?;
        Ok(Upstream {
            child,
            stdin,
            stdout,
        })
    }

    /// apimachinery's answers for `spellings`, in order. The lines are written from a second
    /// thread, so that neither pipe can fill while the other side waits.
    pub fn ask(&mut self, spellings: &[String]) -> io::Result<Vec<Answer>> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| invalid("stdin closed".into()))?;
        let stdout = &mut self.stdout;
        std::thread::scope(|scope| {
            let writer = scope.spawn(move || -> io::Result<()> {
                for s in spellings {
                    serde_json::to_writer(&mut *stdin, s)?;
                    stdin.write_all(b"\n")?;
                }
                stdin.flush()
            });
            let mut answers = Vec::with_capacity(spellings.len());
            let mut line = String::new();
            for s in spellings {
                line.clear();
                if stdout.read_line(&mut line)? == 0 {
                    return Err(invalid(format!(
                        "hpa-quantity ended before answering {s:?}"
                    )));
                }
                let v: serde_json::Value =
                    serde_json::from_str(&line).map_err(|e| invalid(format!("{e}: {line}")))?;
                if v.get("in").and_then(|i| i.as_str()) != Some(s.as_str()) {
                    return Err(invalid(format!("answer {line} is not for {s:?}")));
                }
                answers.push(Answer {
                    parse: upstream_reading(&v["parse"])?,
                    json: upstream_reading(&v["json"])?,
                });
            }
            writer
                .join()
                .map_err(|_| invalid("the writer panicked".into()))??;
            Ok(answers)
        })
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// Whether apimachinery answers `s` quickly: a written exponent of at most five digits. Longer
/// ones can make it compute a power of ten with billions of digits (`"1e-2147483647"` takes the
/// arbitrary-precision path at scale 2^31 − 1, which it rounds by that power).
pub fn quick_for_upstream(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if matches!(b[i], b'e' | b'E') {
            let mut j = i + 1;
            if matches!(b.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            let digits = b[j..].iter().take_while(|c| c.is_ascii_digit()).count();
            if digits > 5 {
                return false;
            }
        }
        i += 1;
    }
    true
}

/// A small deterministic pseudo-random generator (SplitMix64).
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

/// A random spelling, made of the parts quantities are made of (and some that are not), each
/// quick for apimachinery to answer.
pub fn random_spelling(rng: &mut SplitMix) -> String {
    const SIGNS: &[&str] = &["", "", "", "+", "-", "--", "+-"];
    const SUFFIXES: &[&str] = &[
        "", "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
        "e", "E", "i", "K", "mi", "Kb", "ee", "eE",
    ];
    const JUNK: &[&str] = &[
        " ", "\t", "\n", "\u{a0}", "\u{2028}", "\u{3000}", "x", "１", "٣", "\"", "\\", "_", ",",
        "%", "\u{0}", "é",
    ];
    let digits = |rng: &mut SplitMix, max: usize| -> String {
        let n = rng.below(max + 1);
        let zeros = rng.below(3) == 0;
        (0..n)
            .map(|_| {
                if zeros && rng.below(2) == 0 {
                    '0'
                } else {
                    char::from(b'0' + rng.below(10) as u8)
                }
            })
            .collect()
    };
    let mut s = String::new();
    if rng.below(8) == 0 {
        s.push_str(rng.pick(JUNK));
    }
    s.push_str(rng.pick(SIGNS));
    let long = if rng.below(6) == 0 { 45 } else { 8 };
    s.push_str(&digits(rng, long));
    if rng.below(2) == 0 {
        s.push('.');
        s.push_str(&digits(rng, long));
    }
    let suffix = rng.pick(SUFFIXES);
    s.push_str(suffix);
    if suffix.starts_with(['e', 'E']) || rng.below(10) == 0 {
        s.push_str(rng.pick(&["", "", "+", "-"]));
        s.push_str(&digits(rng, 5));
    }
    if rng.below(8) == 0 {
        s.push_str(rng.pick(JUNK));
    }
    if rng.below(20) == 0 {
        let cut = rng.below(s.len() + 1);
        if s.is_char_boundary(cut) {
            s.truncate(cut);
        }
    }
    s
}
