//! Differential fuzzing: random valid HPAs and timelines run on two targets, traces compared tick
//! by tick; the first difference is shrunk to a small case file, ready to commit under
//! `cases/regressions/`.
//!
//! Generation is deterministic for a seed (a SplitMix64 generator, no platform randomness), and
//! every generated scenario goes through the same loader and checks as a hand-written case.
//!
//! [`generate`] makes scenarios from an [`Rng`] (its [`edges`] the values near the rules' edges),
//! [`lockstep`] runs and compares them, [`shrink`] cuts a difference down; this module drives a
//! batch and writes what it finds.

pub mod edges;
mod generate;
mod lockstep;
mod rng;
mod shrink;

pub use generate::{generate, to_case, to_case_from_text};
pub use rng::Rng;
pub use shrink::{regression_case, shrink};

pub use lockstep::difference;
use lockstep::{Lockstep, Run, lockstep, run_pair};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::case::Case;
use crate::case::model::CaseFile;
use crate::run::RunOptions;
use crate::targets::Target;

/// Where `fuzz` writes what it finds when `--out` is not given: `cases/regressions` when both
/// targets are this project's own (`core`, `reference-api`, `hpa-step-reference`, the upstream
/// adapter), else `hpa-fuzz-findings` — a third party's differences never land in the corpus
/// unasked.
pub fn default_out(a: &str, b: &str) -> PathBuf {
    if is_ours(a) && is_ours(b) {
        PathBuf::from("cases/regressions")
    } else {
        PathBuf::from("hpa-fuzz-findings")
    }
}

/// Whether a target is this project's own: `core`, `reference-api`, `hpa-step-reference` or the
/// upstream adapter (any release's).
pub fn is_ours(target: &str) -> bool {
    matches!(target, "core" | "reference-api")
        || target.strip_prefix("exec:").is_some_and(|cmd| {
            let program = cmd.split_whitespace().next().unwrap_or_default();
            program.ends_with("hpa-step-reference")
                || program.contains("adapters/upstream/bin/")
                    && program.ends_with("hpa-upstream-adapter")
        })
}

/// Which target's trace is the truth of a written case when `--truth` is not given: the
/// project's own side against a third party (`a` when only `a` is ours), else `b` (e.g. the
/// upstream adapter against the core).
pub fn default_truth(a: &str, b: &str) -> &'static str {
    if is_ours(a) && !is_ours(b) { "a" } else { "b" }
}

/// How many times a difference is re-run before it is believed: a difference that does not
/// reproduce every time is flaky (reported for review, never shrunk, never a failed run).
pub const RECHECKS: usize = 2;

/// The outcome of a fuzzing run.
#[derive(Debug, Clone)]
pub struct FuzzReport {
    /// Scenarios run.
    pub scenarios: usize,
    /// Generated scenarios the loader rejected (a generator bug if not zero).
    pub rejected: usize,
    /// Differences found (their shrunk case files).
    pub differences: Vec<PathBuf>,
    /// Differences that did not reproduce on a re-run: the folders holding the scenario and the
    /// traces of every run, for review.
    pub flaky: Vec<PathBuf>,
    /// Scenarios a target failed to run on every try (a crash, a timeout, a broken answer: not a
    /// disagreement about the HPA): folders with the scenario and each run's outcome. A failure
    /// that does not recur is in `flaky` instead.
    pub failures: Vec<PathBuf>,
    /// Scenarios that were run on each target separately because running them on both in
    /// lockstep over one world ([`lockstep`]) did not show agreement; the rest agreed
    /// tick by tick in lockstep and needed nothing more.
    pub separate_runs: usize,
    /// Wall time.
    pub elapsed: Duration,
}

/// A target could not be used at all (not: it disagreed on a scenario).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FuzzError {
    /// A target cannot start a session (e.g. its command does not exist).
    #[error("target {target} cannot start: {message}")]
    TargetUnusable {
        /// The target's name.
        target: String,
        /// Why.
        message: String,
    },
    /// A regression case or a flaky report cannot be written.
    #[error("{0}")]
    Write(String),
}

/// Checks that both targets can start a session on a first scenario, so that a target that
/// cannot run at all is an error instead of a "difference" on every scenario.
fn preflight(case: &Case, targets: [&dyn Target; 2], opts: &RunOptions) -> Result<(), FuzzError> {
    for target in targets {
        let settings = match crate::run::resolve_settings(case, target.gate_support(), opts) {
            Ok(s) => s,
            Err(_) => continue,
        };
        match target.start(case, &settings) {
            Ok(_) => {}
            Err(e) if e.skip => {}
            Err(e) => {
                return Err(FuzzError::TargetUnusable {
                    target: target.name(),
                    message: e.message,
                });
            }
        }
    }
    Ok(())
}

/// Writes `text` to `path` unless a file is there already (never overwrites a case).
fn write_new(path: &Path, text: &str) -> Result<(), FuzzError> {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| FuzzError::Write(format!("cannot write {}: {e}", path.display())))?;
    f.write_all(text.as_bytes())
        .map_err(|e| FuzzError::Write(format!("cannot write {}: {e}", path.display())))
}

/// A path in `dir` named `stem` + `ext` that does not exist yet (`stem-2`, `stem-3`, … otherwise).
fn fresh_path(dir: &Path, stem: &str, ext: &str) -> PathBuf {
    let mut path = dir.join(format!("{stem}{ext}"));
    let mut n = 2;
    while path.exists() {
        path = dir.join(format!("{stem}-{n}{ext}"));
        n += 1;
    }
    path
}

/// Writes a flaky difference for review: the scenario and both targets' traces of every run.
fn write_flaky(
    dir: &Path,
    file: &CaseFile,
    runs: &[Run],
    a: &dyn Target,
    b: &dyn Target,
) -> Result<PathBuf, FuzzError> {
    let heading = format!(
        "A difference between {} and {} that did not reproduce on every run.",
        a.name(),
        b.name()
    );
    write_runs(dir, "flaky", &heading, file, runs, a, b)
}

/// Writes a scenario and every run of it (outcomes and traces) to a fresh folder under
/// `dir/kind/`; `heading` opens the summary.
fn write_runs(
    dir: &Path,
    kind: &str,
    heading: &str,
    file: &CaseFile,
    runs: &[Run],
    a: &dyn Target,
    b: &dyn Target,
) -> Result<PathBuf, FuzzError> {
    let folder = fresh_path(&dir.join(kind), &file.name, "");
    std::fs::create_dir_all(&folder)
        .map_err(|e| FuzzError::Write(format!("cannot create {}: {e}", folder.display())))?;
    let scenario = crate::util::yaml::to_string(file).map_err(FuzzError::Write)?;
    write_new(&folder.join("scenario.yaml"), &scenario)?;
    let mut summary = format!("# {heading}\n");
    for (i, run) in runs.iter().enumerate() {
        summary.push_str(&format!(
            "run {}: {}\n",
            i + 1,
            match (&run.failed, &run.difference) {
                (Some(why), _) => why.clone(),
                (None, Some((t, d))) => format!("t={t}: {d}"),
                (None, None) => "no difference".to_string(),
            }
        ));
        for (side, result) in [("a", &run.a), ("b", &run.b)] {
            let doc = json!({
                "target": if side == "a" { a.name() } else { b.name() },
                "outcome": format!("{:?}", result.outcome),
                "trace": result.trace,
            });
            let text =
                serde_json::to_string_pretty(&doc).map_err(|e| FuzzError::Write(e.to_string()))?;
            write_new(&folder.join(format!("run{}-{side}.json", i + 1)), &text)?;
        }
    }
    write_new(&folder.join("summary.txt"), &summary)?;
    Ok(folder)
}

/// Runs `count` scenarios from `seed` on both targets. A difference is re-run [`RECHECKS`] times:
/// one that does not reproduce every time is written to `out_dir/flaky/` for review and fuzzing
/// goes on; the first reproducible one is shrunk and written to `out_dir` (with `b`'s trace as the
/// expectation when `truth_is_b`), and fuzzing stops. Existing files are never overwritten.
pub fn fuzz(
    a: &dyn Target,
    b: &dyn Target,
    seed: u64,
    count: usize,
    out_dir: &Path,
    truth_is_b: bool,
) -> Result<FuzzReport, FuzzError> {
    fuzz_with(
        a,
        b,
        seed,
        count,
        out_dir,
        truth_is_b,
        &RunOptions::default(),
    )
}

/// [`fuzz`] with run options: gates fixed for both targets, and the profile traces are compared
/// at (`replicas`: replica counts only; `status`: without events; default `full`). A scenario
/// that either target skips (a gate, a feature or a level it does not declare) is no
/// difference.
pub fn fuzz_with(
    a: &dyn Target,
    b: &dyn Target,
    seed: u64,
    count: usize,
    out_dir: &Path,
    truth_is_b: bool,
    opts: &RunOptions,
) -> Result<FuzzReport, FuzzError> {
    fuzz_jobs(a, b, seed, count, out_dir, truth_is_b, opts, 1)
}

/// What a worker found for one scenario (its first run on both targets).
enum Scenario {
    /// The loader rejected the generated scenario (a generator bug).
    Rejected(String),
    /// Both targets ran it; the run, kept only when they differ or one failed; whether they ran
    /// it separately (not in lockstep).
    Ran(Box<(CaseFile, Case)>, Option<Box<Run>>, bool),
}

/// [`fuzz_with`] on `jobs` threads: scenarios are generated and first run in parallel; their
/// results are taken in scenario order (re-runs of a difference, shrinking and writing happen
/// in that order too), so the report is the same for a seed whatever `jobs` is.
///
/// Each scenario is first run on both targets in lockstep over one world (see [`lockstep`]);
/// only one they do not agree on is run on each separately ([`fuzz_jobs_with`] can skip lockstep).
#[allow(clippy::too_many_arguments)]
pub fn fuzz_jobs(
    a: &dyn Target,
    b: &dyn Target,
    seed: u64,
    count: usize,
    out_dir: &Path,
    truth_is_b: bool,
    opts: &RunOptions,
    jobs: usize,
) -> Result<FuzzReport, FuzzError> {
    fuzz_jobs_with(a, b, seed, count, out_dir, truth_is_b, opts, jobs, true)
}

/// [`fuzz_jobs`], and with `lockstep` false every scenario runs on each target separately, each
/// over its own world (as before lockstep; `fuzz --separately`): that finds and writes exactly
/// what lockstep does, more slowly.
#[allow(clippy::too_many_arguments)]
pub fn fuzz_jobs_with(
    a: &dyn Target,
    b: &dyn Target,
    seed: u64,
    count: usize,
    out_dir: &Path,
    truth_is_b: bool,
    opts: &RunOptions,
    jobs: usize,
    lockstep: bool,
) -> Result<FuzzReport, FuzzError> {
    let started = Instant::now();
    let mut report = FuzzReport {
        scenarios: 0,
        rejected: 0,
        differences: Vec::new(),
        flaky: Vec::new(),
        failures: Vec::new(),
        separate_runs: 0,
        elapsed: Duration::ZERO,
    };
    let name_of = |i: usize| format!("fuzz-{seed}-{i}");
    let scenario_drawing = |i: usize, draw: generate::Draw| {
        let mut rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(i as u64));
        let mut file = generate::generate_drawing(&name_of(i), &mut rng, draw);
        generate::fit_release(&mut file, opts.version);
        to_case(&file).map(|case| (file, case))
    };
    // The first scenario the loader accepts shows whether both targets can run at all, and
    // what they declare: no External metric is drawn unless both read External metrics.
    let mut draw = generate::Draw::ALL;
    if let Some(Ok((_, case))) = (0..count)
        .map(|i| scenario_drawing(i, draw))
        .find(Result::is_ok)
    {
        preflight(&case, [a, b], opts)?;
        let lacking: Vec<String> = [a, b]
            .iter()
            .filter(|t| {
                t.declared_features()
                    .is_some_and(|f| !f.contains(&crate::case::features::Feature::ExternalMetrics))
            })
            .map(|t| t.name())
            .collect();
        draw.external = lacking.is_empty();
        if !draw.external {
            eprintln!(
                "fuzz: {} does not declare externalMetrics: no External metric is drawn",
                lacking.join(" and ")
            );
        }
    }
    let scenario = |i: usize| scenario_drawing(i, draw);
    let progress = std::sync::Mutex::new(crate::cluster::progress::Progress::on_stderr(
        "fuzz",
        count,
        crate::cluster::progress::Lines::Periodic(Duration::from_secs(10)),
    ));
    let work = |i: usize| {
        let name = name_of(i);
        if let Ok(mut p) = progress.lock() {
            p.start(&name);
        }
        let began = Instant::now();
        let found = match scenario(i) {
            Err(e) => Scenario::Rejected(e),
            Ok((file, case)) if lockstep => match self::lockstep(&case, a, b, opts) {
                Lockstep::Agreed => Scenario::Ran(Box::new((file, case)), None, false),
                Lockstep::Differed(run) => Scenario::Ran(Box::new((file, case)), Some(run), false),
                Lockstep::Undecided => {
                    let run = run_pair(&case, a, b, opts);
                    let kept =
                        (run.difference.is_some() || run.failed.is_some()).then(|| Box::new(run));
                    Scenario::Ran(Box::new((file, case)), kept, true)
                }
            },
            Ok((file, case)) => {
                let run = run_pair(&case, a, b, opts);
                let kept =
                    (run.difference.is_some() || run.failed.is_some()).then(|| Box::new(run));
                Scenario::Ran(Box::new((file, case)), kept, true)
            }
        };
        (found, began)
    };
    let mut error: Option<FuzzError> = None;
    crate::util::parallel::for_each_ordered(count, jobs, work, |i, (found, began)| {
        let name = name_of(i);
        let word = match consider(&mut report, &name, found, a, b, opts, out_dir, truth_is_b) {
            Ok(word) => word,
            Err(e) => {
                error = Some(e);
                "FAILED"
            }
        };
        if let Ok(mut p) = progress.lock() {
            p.finish(&name, word, began.elapsed().as_secs_f64());
        }
        error.is_none() && report.differences.is_empty()
    });
    if let Ok(mut p) = progress.lock() {
        p.close();
    }
    if let Some(e) = error {
        return Err(e);
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

/// Takes one scenario's first run into the report: a difference is re-run [`RECHECKS`] times,
/// then written as flaky, a target failure, or shrunk into a regression case. Returns the word
/// for the progress line.
#[allow(clippy::too_many_arguments)]
fn consider(
    report: &mut FuzzReport,
    name: &str,
    found: Scenario,
    a: &dyn Target,
    b: &dyn Target,
    opts: &RunOptions,
    out_dir: &Path,
    truth_is_b: bool,
) -> Result<&'static str, FuzzError> {
    let (file, case, first) = match found {
        Scenario::Rejected(e) => {
            report.rejected += 1;
            eprintln!("generated scenario {name} was rejected: {e}");
            return Ok("rejected");
        }
        Scenario::Ran(scenario, first, separately) => {
            report.separate_runs += usize::from(separately);
            let (file, case) = *scenario;
            (file, case, first.map(|r| *r))
        }
    };
    report.scenarios += 1;
    let Some(first) = first else {
        return Ok("passed");
    };
    let Some(found) = first.difference.clone() else {
        return Ok("passed");
    };
    let failed = first.failed.clone();
    let mut runs = vec![first];
    for _ in 0..RECHECKS {
        runs.push(run_pair(&case, a, b, opts));
    }
    // A target that could not run the scenario is no disagreement about the HPA: it is a
    // failure of that target when it recurs on every try, flaky otherwise (e.g. a process
    // killed or starved under load), and never shrunk as a trace difference.
    if let Some(why) = failed {
        if runs.iter().all(|r| r.failed.is_some()) {
            let heading = format!(
                "A target failed to run this scenario on every try ({} vs {}).",
                a.name(),
                b.name()
            );
            let folder = write_runs(out_dir, "failures", &heading, &file, &runs, a, b)?;
            eprintln!(
                "fuzz: scenario {name}: {why} (on every try); scenario and outcomes in {}",
                folder.display()
            );
            report.failures.push(folder);
            return Ok("FAILED");
        }
        let folder = write_flaky(out_dir, &file, &runs, a, b)?;
        eprintln!(
            "fuzz: scenario {name}: {why} once, not on a re-run; scenario and outcomes in {}",
            folder.display()
        );
        report.flaky.push(folder);
        return Ok("flaky");
    }
    if runs.iter().any(|r| r.difference.as_ref() != Some(&found)) {
        let folder = write_flaky(out_dir, &file, &runs, a, b)?;
        eprintln!(
            "fuzz: scenario {name}: a difference that does not reproduce (t={}: {}); scenario and traces in {}",
            found.0,
            found.1,
            folder.display()
        );
        report.flaky.push(folder);
        return Ok("flaky");
    }
    let shrunk = shrink(file.clone(), a, b, opts);
    // The shrunk scenario must still differ every time; otherwise keep the original one.
    let (small, case) = match generate::to_case_from_text(&shrunk) {
        Ok(c) if reproduces(&c, a, b, opts) => (shrunk, c),
        _ => (file, case),
    };
    let Some((diff_t, diff, ra, rb)) = difference(&case, a, b, opts) else {
        // Reproduced RECHECKS + 1 times above; a disappearance now is flakiness too.
        let folder = write_flaky(out_dir, &small, &runs, a, b)?;
        report.flaky.push(folder);
        return Ok("flaky");
    };
    let (truth, other, tn, on) = if truth_is_b {
        (&rb, &ra, b.name(), a.name())
    } else {
        (&ra, &rb, a.name(), b.name())
    };
    let mut regression = regression_case(small, truth, other, (diff_t, &diff), &tn, &on);
    // Its expectations were taken at one release: it claims that one only.
    let v = opts.version;
    regression.kubernetes_versions = Some(crate::case::model::VersionRange {
        from: Some(v.name().to_string()),
        through: Some(v.name().to_string()),
        because: format!(
            "found by the fuzzer on Kubernetes {v}, its expectations taken there; check the other releases (hpa-conformance matrix) and widen the range"
        ),
    });
    std::fs::create_dir_all(out_dir)
        .map_err(|e| FuzzError::Write(format!("cannot create {}: {e}", out_dir.display())))?;
    let path = fresh_path(out_dir, name, ".yaml");
    let mut text = crate::util::yaml::to_string(&regression).map_err(FuzzError::Write)?;
    text.insert_str(
        0,
        "# Written by `hpa-conformance fuzz`; review before committing.\n",
    );
    write_new(&path, &text)?;
    report.differences.push(path);
    Ok("DIFFERENT")
}

/// The scenario differs on every one of `RECHECKS + 1` runs.
fn reproduces(case: &Case, a: &dyn Target, b: &dyn Target, opts: &RunOptions) -> bool {
    (0..=RECHECKS).all(|_| difference(case, a, b, opts).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn against_a_third_party_the_projects_own_side_is_the_truth() {
        // A third party's trace never becomes the expectation by default (issue: fuzz wrote
        // cases whose expectations were the third party's).
        assert_eq!(default_truth("core", "exec:my-hpa/my-hpa"), "a");
        assert_eq!(
            default_truth(
                "exec:adapters/upstream/bin/1.34.4/hpa-upstream-adapter",
                "exec:x"
            ),
            "a"
        );
        // Both ours: upstream (b) is the truth, as before.
        assert_eq!(
            default_truth("core", "exec:adapters/upstream/bin/hpa-upstream-adapter"),
            "b"
        );
        assert_eq!(default_truth("exec:a", "exec:b"), "b");
        assert_eq!(
            default_out(
                "core",
                "exec:adapters/upstream/bin/1.32.13/hpa-upstream-adapter"
            ),
            PathBuf::from("cases/regressions")
        );
        assert_eq!(
            default_out("core", "exec:my-hpa"),
            PathBuf::from("hpa-fuzz-findings")
        );
    }

    #[test]
    fn without_external_metrics_no_external_metric_is_drawn() {
        let mut with = 0;
        for i in 0..200 {
            let file = generate::generate_drawing(
                &format!("s{i}"),
                &mut Rng::new(i),
                generate::Draw { external: false },
            );
            assert!(
                !serde_json::to_string(&file.hpa)
                    .unwrap()
                    .contains("External"),
                "scenario {i} draws an External metric"
            );
            // The same state with every source allowed does draw some.
            let all = generate(&format!("s{i}"), &mut Rng::new(i));
            with += usize::from(
                serde_json::to_string(&all.hpa)
                    .unwrap()
                    .contains("External"),
            );
        }
        assert!(with > 0);
    }
}
