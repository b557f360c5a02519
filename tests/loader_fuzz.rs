//! A mutation fuzz test of the case loader through the CLI, in process: 2,000 mutations of corpus
//! files (byte flips, line deletions and duplications, truncations, values swapped for other
//! types or out-of-range numbers), seeded and deterministic. Whatever the input, `run --format
//! json` must exit 0, 1, 2 or 3, print one valid JSON document, never panic, and the whole batch
//! must finish in bounded time (a generous hang guard). A failing input is written to `target/loader-fuzz-failure.yaml`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hpa_harness::cli;
use hpa_harness::fuzz::Rng;

const MUTANTS: usize = 2_000;
const SEED: u64 = 20_251_123;
/// A hang guard, not a speed target (those live in `just bench`): a mutant that made a run
/// unbounded would blow far past it. The batch takes ~20 s on an idle 2-core machine and was
/// measured at 43 s with a kind node image building beside it, which a 30 s limit failed.
const TIME_LIMIT: Duration = Duration::from_secs(300);

/// Values a type swap puts in place of a scalar: other types, and numbers at and beyond limits.
const SWAPS: [&str; 14] = [
    "\"text\"",
    "[]",
    "{}",
    "[1, 2]",
    "{a: 1}",
    "null",
    "true",
    "1.5",
    "-1",
    "0",
    "99999999999",
    "4294967295",
    "-9223372036854775808",
    "1e400",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn corpus() -> Vec<Vec<u8>> {
    let mut files = Vec::new();
    let mut stack = vec![root().join("cases")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("cases folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
        .iter()
        .map(|f| std::fs::read(f).expect("case file"))
        .collect()
}

fn index(rng: &mut Rng, len: usize) -> usize {
    rng.range(0, len.saturating_sub(1) as i64) as usize
}

fn lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect()
}

/// One mutation of a file.
fn mutate_once(bytes: &mut Vec<u8>, rng: &mut Rng) {
    if bytes.is_empty() {
        return;
    }
    match rng.range(0, 5) {
        // A byte flip: one bit of one byte.
        0 => {
            let i = index(rng, bytes.len());
            bytes[i] ^= 1 << rng.range(0, 7);
        }
        // A line deleted or duplicated.
        1 | 2 => {
            let mut ls = lines(bytes);
            let i = index(rng, ls.len());
            if rng.chance(0.5) {
                ls.remove(i);
            } else {
                let l = ls[i].clone();
                ls.insert(i, l);
            }
            *bytes = ls.join(&b'\n');
        }
        // A truncation.
        3 => {
            let at = index(rng, bytes.len());
            bytes.truncate(at);
        }
        // A value swapped for another type or an out-of-range number.
        _ => {
            let mut ls = lines(bytes);
            let candidates: Vec<usize> = (0..ls.len())
                .filter(|i| {
                    let l = &ls[*i];
                    l.windows(2).any(|w| w == b": ") && !l.ends_with(b":")
                })
                .collect();
            if candidates.is_empty() {
                return;
            }
            let i = candidates[index(rng, candidates.len())];
            let l = &ls[i];
            let colon = l.windows(2).position(|w| w == b": ").unwrap_or(0);
            let mut swapped = l[..colon + 2].to_vec();
            swapped.extend_from_slice(rng.pick(&SWAPS).as_bytes());
            ls[i] = swapped;
            *bytes = ls.join(&b'\n');
        }
    }
}

/// Runs `run FILE --format json` in process; the exit code, or what is wrong.
fn check(file: &Path) -> Result<usize, String> {
    let argv: Vec<String> = [
        "hpa-conformance",
        "run",
        &file.display().to_string(),
        "--format",
        "json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = catch_unwind(AssertUnwindSafe(|| cli::main(&argv, &mut out, &mut err)))
        .map_err(|_| "the CLI panicked".to_string())?;
    if ![0, 1, 2, 3].contains(&code) {
        return Err(format!("exit code {code}"));
    }
    serde_json::from_slice::<serde_json::Value>(&out)
        .map_err(|e| format!("stdout is not one JSON document: {e}"))?;
    Ok(code as usize)
}

#[test]
fn mutated_case_files_never_crash_the_loader() {
    let originals = corpus();
    assert!(originals.len() > 100);
    let dir = std::env::temp_dir().join(format!("hpa-loader-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("mutant.yaml");
    let mut rng = Rng::new(SEED);
    let started = Instant::now();
    let mut codes = [0usize; 4];
    for n in 0..MUTANTS {
        let mut bytes = rng.pick(&originals).clone();
        for _ in 0..rng.range(1, 3) {
            mutate_once(&mut bytes, &mut rng);
        }
        std::fs::write(&file, &bytes).expect("write mutant");
        match check(&file) {
            Ok(code) => codes[code] += 1,
            Err(why) => {
                let keep = root().join("target/loader-fuzz-failure.yaml");
                let _ = std::fs::write(&keep, &bytes);
                panic!(
                    "mutant {n} (seed {SEED}): {why}; the input is in {}",
                    keep.display()
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let took = started.elapsed();
    println!("exit codes 0/1/2/3: {codes:?} in {took:?}");
    assert!(took < TIME_LIMIT, "{MUTANTS} mutants took {took:?}");
    // The mutations reach both the loader's errors and cases that still run.
    assert!(
        codes[2] > MUTANTS / 10 && codes[0] + codes[1] > MUTANTS / 10,
        "{codes:?}"
    );
}
