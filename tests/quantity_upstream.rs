//! The reference's quantities against apimachinery's own (issue 37): every quantity spelling in
//! the corpus, a generated set (every suffix, signs, points, exponents, empty parts, huge and tiny
//! values, white space, other characters) and a seeded random batch go through
//! `adapters/upstream/bin/hpa-quantity` (apimachinery v0.36.4's `ParseQuantity` and
//! `UnmarshalJSON`, then `MilliValue()`, `Value()`, `AsApproximateFloat64()`, `Sign()`,
//! `String()`) and through `hpa_reference::quantity`; every answer, errors included, must be the
//! same.
//!
//! `just quantity-upstream` builds the Go program and runs this (CI does); without the program
//! the test fails. `HPA_QUANTITY_RANDOM` (count, default 20000) and `HPA_QUANTITY_SEED` (default
//! 37) size the random batch: `just quantity-fuzz COUNT SEED` runs a longer one.
//! `HPA_QUANTITY_DUMP=PATH` writes every spelling compared to PATH, one JSON string a line (the
//! Go program's input).

#[path = "quantity_oracle.rs"]
mod quantity_oracle;

use std::collections::BTreeSet;
use std::path::Path;

use quantity_oracle::{
    Answer, Reading, SplitMix, Upstream, free_functions_disagree, quick_for_upstream,
    random_spelling, reference, upstream_binary,
};

/// Every scalar of a YAML value, as text.
fn scalars(v: &serde_json::Value, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::String(s) if s.len() <= 200 => {
            out.insert(s.clone());
        }
        serde_json::Value::Number(n) => {
            out.insert(n.to_string());
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| scalars(i, out)),
        serde_json::Value::Object(map) => map.values().for_each(|i| scalars(i, out)),
        _ => {}
    }
}

/// Every scalar of every case file (`cases/**/*.yaml`): the corpus's quantity spellings among
/// them, whatever field holds them.
fn corpus_scalars(root: &Path) -> BTreeSet<String> {
    fn walk(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("cases/ is readable")
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, files);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root.join("cases"), &mut files);
    assert!(files.len() > 100, "only {} case files", files.len());
    let mut out = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a case file is readable");
        if let Ok(v) = hpa_harness::util::yaml::from_str::<serde_json::Value>(&text) {
            scalars(&v, &mut out);
        }
    }
    out
}

/// The generated spellings: each class of spelling, on its own and combined.
fn generated() -> BTreeSet<String> {
    const SIGNS: &[&str] = &["", "+", "-", "--", "+-", "-+"];
    const INTS: &[&str] = &[
        "",
        "0",
        "00",
        "1",
        "007",
        "12",
        "999",
        "1000",
        "1024",
        "123456789",
        "999999999999999",
        "100000000000000000",
        "123456789012345678",
        "999999999999999999",
        "9223372036854775807",
        "9223372036854775808",
        "12345678901234567890",
        "1234567890123456789012345678901234567890",
    ];
    const FRACS: &[&str] = &[
        "",
        "0",
        "5",
        "05",
        "000",
        "125",
        "999999999",
        "0000000001",
        "000000000000000000001",
        "123456789012345678",
        "999999999999999999999999999999",
    ];
    const SUFFIXES: &[&str] = &[
        "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e",
        "E", "e0", "e3", "E3", "e+3", "e-3", "e-0", "e03", "e+", "e-", "e9", "e-9", "e-10", "e-11",
        "e-12", "E18", "e19", "e-19", "e20", "e-20", "e300", "e308", "e309", "e-308", "e-320",
        "e-323", "e-324", "e400", "e-400", "ee3", "eE3", "Ee3", "e3e3", "e3.5", "i", "K", "Kb",
        "mi", "ki", "KI", "k1", "Ki1", "1k", "+3", "-3", "x", " ", "e 3", "mm", "kk", "MiB", "nm",
        "%",
    ];
    let mut out = BTreeSet::new();
    let mut numbers = Vec::new();
    for sign in SIGNS {
        for int in INTS {
            for point in ["", "."] {
                for frac in FRACS {
                    if point.is_empty() && !frac.is_empty() {
                        continue;
                    }
                    numbers.push(format!("{sign}{int}{point}{frac}"));
                }
            }
        }
    }
    // Every number plain, every suffix on every number without sign or with a minus.
    for n in &numbers {
        out.insert(n.clone());
        if n.starts_with(['+', '-']) && !n.starts_with("-") || n.starts_with("--") {
            continue;
        }
        for suffix in SUFFIXES {
            out.insert(format!("{n}{suffix}"));
        }
    }
    // Exponents that do not fit 32 bits, which apimachinery keeps as an int32.
    for e in [
        "e2147483647",
        "e-2147483648",
        "e4294967296",
        "e4294967299",
        "e-4294967296",
        "e4294967286",
        "e9223372036854775807",
        "e-9223372036854775808",
        "e9223372036854775808",
        "e-9223372036854775809",
        "e99999999999999999999",
    ] {
        for n in ["1", "10", "-1", "0.5", "1.5", "7"] {
            let s = format!("{n}{e}");
            if quick_exponent(&s) {
                out.insert(s);
            }
        }
    }
    // Long and tiny numbers.
    for len in [19, 20, 38, 39, 40, 100, 400, 5000] {
        let nines = "9".repeat(len);
        let ones = format!("1{}", "0".repeat(len));
        for suffix in ["", "m", "n", "k", "E", "Ki", "Ei", "e-9", "e-30", "e5"] {
            out.insert(format!("{nines}{suffix}"));
            out.insert(format!("-{ones}{suffix}"));
            out.insert(format!("0.{}1{suffix}", "0".repeat(len)));
            out.insert(format!("-0.{}1{suffix}", "0".repeat(len)));
            out.insert(format!("1.{}{suffix}", "5".repeat(len)));
        }
    }
    // Zeros at every scale (a zero that keeps a scale beyond 10^308 is NaN as a float).
    for z in [
        "0",
        "0.0",
        "-0",
        "0.0000000000000000000",
        "-0.00000000000000000000",
        ".",
    ] {
        for e in [
            "", "e400", "e-400", "e308", "e309", "e-309", "e2000", "Ki", "Ei", "m",
        ] {
            out.insert(format!("{z}{e}"));
        }
    }
    // White space and other characters around and inside.
    let bases = ["1", "500m", "1.5Gi", "-2", ".", "e3", "", "0", "1e3"];
    let pads = [
        " ", "  ", "\t", "\n", "\r", "\u{b}", "\u{c}", "\u{85}", "\u{a0}", "\u{1680}", "\u{2000}",
        "\u{200a}", "\u{2028}", "\u{2029}", "\u{202f}", "\u{205f}", "\u{3000}", "\u{feff}",
        "\u{200b}", "\u{0}", "\u{1c}", "\"", "\\", "'",
    ];
    for b in bases {
        for p in pads {
            out.insert(format!("{p}{b}"));
            out.insert(format!("{b}{p}"));
            out.insert(format!("{p}{b}{p}"));
            if b.len() > 1 {
                out.insert(format!("{}{p}{}", &b[..1], &b[1..]));
            }
        }
    }
    for odd in [
        "１",
        "٣",
        "1１",
        "½",
        "∞",
        "NaN",
        "Inf",
        "+Inf",
        "0x10",
        "1_000",
        "1,5",
        "1e3\u{301}",
        "1ｍ",
        "1µ",
        "1μ",
        "one",
        "null",
        "true",
        "[1]",
        "{}",
        "1/2",
        "1..",
        "..1",
        "1.2.3",
        "+.e3",
        "-.m",
        "+Ki",
        "-Ti",
        "Pi",
        "Ei",
        "-Ei",
        ".Ki",
        "0.Ki",
        ".0Ki",
        ".5Ki",
        "1.Ki",
        "1.Mi",
        "1.5",
        "1.50",
        "1.500",
        "1.250",
        "+1",
        "+1.5",
        "-1.5",
        "+0",
        "-0",
        "+.5",
        "0.1n",
        "0.5n",
        "1.5n",
        "-1.5n",
        "-0.5n",
        "1.5u",
        "8Ei",
        "7Ei",
        "7.9Ei",
        "8191Pi",
        "8192Pi",
        "9007199254740993",
        "1e-9",
        "1.5e-9",
        "10E",
        "1000E",
        "1000000E",
        "1e21",
        "1e18",
        "0.001Ki",
        "0.0001Ki",
        "1023",
        "1024",
        "1025",
        "1023Ki",
        "1048576",
        "-1048576Ki",
        "3Ki",
        "16Ki",
        "0.7",
        "700m",
        "0.41",
        "0.57",
        "1.1",
        "0.3",
    ] {
        out.insert(odd.to_owned());
    }
    out
}

/// [`quick_for_upstream`] but for the hand-picked 32-bit exponents: those whose wrapped exponent
/// keeps apimachinery on its int64 path or at a small scale.
fn quick_exponent(s: &str) -> bool {
    // Checked by hand (timing the Go program): a wrapped exponent near ±2^31 on the arbitrary-
    // precision path (scale below nano, or 19 or more digits) makes apimachinery compute a power of
    // ten with billions of digits.
    !(s.contains("e-2147483648") && !s.starts_with("0")
        || s.contains("e2147483647") && s.contains('.')
        || s.contains("e-9223372036854775809"))
}

/// Compares every spelling; returns the number compared and the disagreements.
fn compare(upstream: &mut Upstream, spellings: &[String]) -> (usize, Vec<String>) {
    let answers = upstream
        .ask(spellings)
        .expect("hpa-quantity answers every spelling");
    let mut diffs = Vec::new();
    for (s, want) in spellings.iter().zip(answers) {
        let have: Answer = reference(s);
        if have != want {
            diffs.push(format!(
                "{s:?}:\n  apimachinery {want:?}\n  reference    {have:?}"
            ));
        }
        if let Some(d) = free_functions_disagree(s) {
            diffs.push(d);
        }
    }
    (spellings.len(), diffs)
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v:?} is not a number"))
        })
        .unwrap_or(default)
}

#[test]
#[ignore = "needs apimachinery's answers from adapters/upstream/bin/hpa-quantity: run `just quantity-upstream`"]
fn every_spelling_reads_as_apimachinery_reads_it() {
    let root = hpa_conformance_tests::root();
    let binary = upstream_binary(&root);
    assert!(
        binary.is_file(),
        "{} is missing: build it with `just upstream` (or set HPA_QUANTITY_BIN)",
        binary.display()
    );
    let mut upstream = Upstream::start(&binary).expect("hpa-quantity starts");

    let corpus: Vec<String> = corpus_scalars(&root)
        .into_iter()
        .filter(|s| quick_for_upstream(s))
        .collect();
    let generated: Vec<String> = generated().into_iter().collect();
    let count = env_number("HPA_QUANTITY_RANDOM", 20_000);
    let seed = env_number("HPA_QUANTITY_SEED", 37);
    let mut rng = SplitMix(seed);
    let random: Vec<String> = std::iter::repeat_with(|| random_spelling(&mut rng))
        .filter(|s| quick_for_upstream(s))
        .take(count as usize)
        .collect();

    if let Some(path) = std::env::var_os("HPA_QUANTITY_DUMP") {
        let lines: Vec<String> = corpus
            .iter()
            .chain(&generated)
            .chain(&random)
            .map(|s| serde_json::to_string(s).expect("a string serializes"))
            .collect();
        std::fs::write(&path, lines.join("\n") + "\n").expect("HPA_QUANTITY_DUMP is writable");
    }
    let mut all_diffs = Vec::new();
    let mut summary = Vec::new();
    for (name, set) in [
        ("corpus scalars", &corpus),
        ("generated", &generated),
        ("random", &random),
    ] {
        let quantities = set
            .iter()
            .filter(|s| !matches!(reference(s).json, Reading::Error(_)))
            .count();
        let (n, diffs) = compare(&mut upstream, set);
        summary.push(format!(
            "{name}: {n} spellings ({quantities} quantities), {} disagreements",
            diffs.len()
        ));
        all_diffs.extend(diffs);
    }
    eprintln!("{} (seed {seed})", summary.join("; "));
    // The sets hold what they are meant to: the corpus's spellings and every class generated.
    assert!(
        corpus.iter().any(|s| s == "500m") && corpus.len() > 500,
        "{}",
        corpus.len()
    );
    assert!(generated.len() > 3000, "{}", generated.len());
    assert_eq!(random.len() as u64, count);
    assert!(
        all_diffs.is_empty(),
        "{} disagreements with apimachinery (the first 40):\n{}",
        all_diffs.len(),
        all_diffs
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The generators and the oracle's reference side work without the Go program: the sets are
/// large, hold every class, and the reference answers each without a panic.
#[test]
fn the_spellings_are_generated_and_the_reference_answers_them() {
    let generated = generated();
    assert!(generated.len() > 3000, "{}", generated.len());
    for class in [
        ".",
        "e3",
        " 1",
        "1Ei",
        "-0.000000000000000000001e-9",
        "1e4294967299",
    ] {
        assert!(generated.contains(class), "{class:?} is not generated");
    }
    let mut rng = SplitMix(1);
    let random: Vec<String> = (0..2000).map(|_| random_spelling(&mut rng)).collect();
    let distinct: BTreeSet<&String> = random.iter().collect();
    assert!(distinct.len() > 1500, "{}", distinct.len());
    for s in generated.iter().chain(&random) {
        let _ = reference(s);
        assert_eq!(free_functions_disagree(s), None);
    }
    assert_eq!(
        reference(".").json,
        Reading::Quantity {
            milli: 0,
            value: 0,
            float: 0f64.to_bits(),
            sign: 0,
            string: "0".into()
        }
    );
}
