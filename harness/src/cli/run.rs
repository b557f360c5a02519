//! `run`: the corpus (or the given cases) against a target, in virtual time or on a cluster
//! (`--target cluster`), with its reports, claims and expected failures.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::shared::*;
use crate::case::Case;
use crate::case::corpus::load_all;
use crate::profile::Profile;
use crate::report::corpus::{CorpusId, commit_of};
use crate::report::{self, RunReport, exit};
use crate::run::{RunOptions, run_case_judged};
use crate::targets::Target;

/// The arguments of `hpa-conformance run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Case files or folders.
    paths: Vec<PathBuf>,
    /// The implementation under test: `core` (the in-process reference core),
    /// `reference-api` (the reference controller over a fake Kubernetes API) or
    /// `exec:<command>` (a process speaking the step protocol, see harness/PROTOCOL.md).
    #[arg(long, default_value = "core")]
    target: String,
    /// Seconds to wait for each answer of an `exec:` implementation.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    step_timeout: u64,
    /// Cases run at once, each on its own thread and session (default: the cores
    /// available); the report is the same whatever the number.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    jobs: Option<u64>,
    /// Report format.
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
    /// Only cases whose name or file contains this text.
    #[arg(long)]
    filter: Option<String>,
    /// The Kubernetes release judged: 1.32 … 1.37 (default: 1.37). Its feature-gate defaults
    /// and its HPA behaviour on the core; cases that do not hold for it are skipped, and each
    /// case expects what that release does.
    #[arg(long = "kubernetes-version", default_value_t = hpa_reference::KubernetesVersion::DEFAULT)]
    kubernetes_version: hpa_reference::KubernetesVersion,
    /// Feature gates the target runs with, e.g. `HPAScaleToZero=true,HPAConfigurableTolerance=false`
    /// (default: the defaults of --kubernetes-version). Cases that use a gate with another value are
    /// skipped.
    #[arg(long, value_delimiter = ',')]
    feature_gates: Vec<String>,
    /// The conformance level cases are judged at: `replicas`, `status` or `full` (default:
    /// the highest the implementation supports; `full` for the reference targets).
    #[arg(long)]
    profile: Option<Profile>,
    /// Reviewed expectations (YAML: case name → why it differs from upstream): the run
    /// passes when exactly these cases fail (exit 1 otherwise).
    #[arg(long)]
    expected_failures: Option<PathBuf>,
    /// Write a conformance statement: FILE (JSON: corpus commit, implementation and version
    /// from hello, profile, gates, each level, per folder, every skipped case with its reason),
    /// FILE with `.md` (a short summary for a README) and `.svg` (a badge).
    #[arg(long)]
    claim: Option<PathBuf>,
    /// Also write `report.json`, `junit.xml` and `index.html` (an offline page with each
    /// case's replica timeline) into this folder (created if missing); stdout keeps the
    /// `--format` report. A report that cannot be written is an error (exit 2).
    #[arg(long)]
    report: Option<PathBuf>,
    /// When the run is over, however it ended, write this file with the `--report` folder's
    /// path in it (a Sonobuoy plugin's done file: its worker then collects the folder). A run
    /// that could not produce its report leaves a `junit.xml` there with one errored case that
    /// says why.
    #[arg(long, requires = "report")]
    done_file: Option<PathBuf>,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// Runs `hpa-conformance run`; `Err` is a usage or input problem to print (exit 2). With
/// `--done-file`, the done file is written whatever happened.
pub fn run(mut args: RunArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, String> {
    let Some(done) = args.done_file.take() else {
        return run_judged(args, out, err);
    };
    let dir = args.report.clone().unwrap_or_default();
    let outcome = run_judged(args, out, err);
    let missing = !dir.join("junit.xml").is_file();
    let why = match &outcome {
        Err(line) => Some(line.clone()),
        Ok(code) if missing => Some(format!("the run ended (exit {code}) without its report")),
        Ok(_) => None,
    };
    if let Some(why) = why {
        let _ = std::fs::create_dir_all(&dir);
        write_report_file(&dir.join("junit.xml"), &report::junit::run_error(&why))?;
    }
    let path = std::path::absolute(&dir).unwrap_or(dir);
    write_report_file(&done, &path.display().to_string())?;
    outcome
}

fn run_judged(args: RunArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, String> {
    let RunArgs {
        paths,
        target,
        step_timeout,
        jobs,
        format,
        filter,
        feature_gates,
        kubernetes_version,
        profile,
        expected_failures,
        claim,
        report: report_dir,
        done_file: _,
        mut cluster,
    } = args;
    check_outputs(claim.as_deref(), report_dir.as_deref()).map_err(usage)?;
    let expected = match &expected_failures {
        Some(p) => Some(crate::expected::load(p).map_err(|e| e.to_string())?),
        None => None,
    };
    let fixed_gates =
        hpa_reference::settings::parse_gate_assignments(&feature_gates).map_err(usage)?;
    if target == "cluster" {
        if let Some(j) = jobs {
            // One case per namespace at once: --jobs says how many, as --parallel does.
            cluster.parallel = usize::try_from(j).unwrap_or(usize::MAX);
        }
        if profile.is_some_and(|p| p != Profile::Full)
            || expected_failures.is_some()
            || claim.is_some()
        {
            return Err(usage(
                "--profile, --expected-failures and --claim are not available with --target cluster yet",
            ));
        }
        return run_on_cluster(
            paths,
            filter,
            format,
            fixed_gates,
            kubernetes_version,
            report_dir,
            cluster,
            out,
            err,
        );
    }
    let target = startable_target(&target, Duration::from_secs(step_timeout)).map_err(usage)?;
    let paths = if paths.is_empty() {
        vec![PathBuf::from("cases")]
    } else {
        paths
    };
    let (mut cases, bad_input) = load_all(&paths);
    let loaded = cases.len();
    if let Some(f) = &filter {
        cases.retain(|c| {
            c.name().contains(f.as_str()) || c.path.to_string_lossy().contains(f.as_str())
        });
    }
    let opts = RunOptions {
        fixed_gates,
        profile,
        pods: false,
        flag_defaults: None,
        version: kubernetes_version,
    };
    let (mut results, judged, implementation) =
        run_with_progress(&cases, target.as_ref(), &opts, jobs_or_default(jobs));
    let late = late_failures(&mut results, target.as_ref());
    for line in &late {
        let _ = writeln!(err, "{line}");
    }
    let corpus = CorpusId::of(&results, commit_of(&paths));
    let report = RunReport {
        target: target.name(),
        results,
        bad_input,
        profile: profile.or(judged).unwrap_or_default(),
        notes: case_notes(&cases),
        corpus,
    };
    let mut code = deliver(&report, &cases, format, report_dir.as_deref(), out, err)?;
    if !late.is_empty() && code == exit::PASSED {
        code = exit::FAILED;
    }
    if let Some(file) = &claim {
        let ctx = report::claim::ClaimContext {
            implementation,
            fixed_gates: opts.fixed_gates.clone(),
            kubernetes_version,
            hello: target.last_hello(),
            expected_failures: expected.clone(),
        };
        write_report_file(file, &report::claim::json(&report, &ctx))?;
        write_report_file(
            &file.with_extension("md"),
            &report::claim::markdown(&report, &ctx),
        )?;
        write_report_file(&file.with_extension("svg"), &report::claim::badge(&report))?;
    }
    if let (Some(expected), Some(file)) = (&expected, &expected_failures)
        && code != exit::BAD_INPUT
        && code != exit::NOTHING_RAN
    {
        // Only the cases this run selected are judged: --filter, or case paths other than the
        // whole corpus, leave the rest of the list alone.
        // The whole corpus: the folder `cases` itself (as `cases`, `./cases/` or absolute).
        let whole = |p: &PathBuf| p.is_dir() && p.file_name().is_some_and(|n| n == "cases");
        let narrowed = filter.is_some() || !(paths.len() == 1 && whole(&paths[0]));
        let verdict = crate::expected::compare(&report.results, expected, narrowed);
        let _ = write!(err, "{}", verdict.render(file));
        code = if verdict.holds() {
            exit::PASSED
        } else {
            exit::FAILED
        };
    }
    if code == exit::NOTHING_RAN {
        let why = if loaded == 0 {
            format!("no case file under {}", shown(&paths))
        } else if cases.is_empty() {
            format!(
                "--filter {} matches none of the {loaded} cases",
                crate::util::text::quote(filter.as_deref().unwrap_or_default())
            )
        } else {
            format!("every case ({}) was skipped", cases.len())
        };
        let _ = writeln!(err, "error: no case ran: {why}");
    }
    Ok(code)
}

/// The report files `--report DIR` writes.
const REPORT_FILES: [&str; 3] = ["report.json", "junit.xml", "index.html"];

/// Checks, before anything runs, that every output can be written: `--claim` names the JSON
/// statement (its `.md` and `.svg` go beside it), none of the claim's three files is one of
/// `--report`'s, and each folder exists (created if missing) and takes a file.
fn check_outputs(claim: Option<&Path>, report_dir: Option<&Path>) -> Result<(), String> {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut dirs = Vec::new();
    if let Some(file) = claim {
        let ext = file
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default();
        if ext == "md" || ext == "svg" {
            return Err(format!(
                "--claim {}: name the JSON statement (e.g. claim.json); its .md and .svg are written beside it",
                file.display()
            ));
        }
        if file.file_name().is_none() || file.to_string_lossy().ends_with('/') {
            return Err(format!("--claim {}: a file, not a folder", file.display()));
        }
        let claim_files = [
            file.to_path_buf(),
            file.with_extension("md"),
            file.with_extension("svg"),
        ];
        if let Some(dir) = report_dir {
            for name in REPORT_FILES {
                let report_file = absolute(&dir.join(name));
                if let Some(same) = claim_files.iter().find(|c| absolute(c) == report_file) {
                    return Err(format!(
                        "--claim writes {}, which --report {} writes too ({name}): choose another name",
                        same.display(),
                        dir.display()
                    ));
                }
            }
        }
        let parent = file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        dirs.push(("--claim", parent.to_path_buf()));
    }
    if let Some(dir) = report_dir {
        dirs.push(("--report", dir.to_path_buf()));
    }
    for (flag, dir) in dirs {
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("{flag}: cannot create the folder {}: {e}", dir.display()))?;
        let probe = dir.join(format!(
            ".hpa-conformance-write-check-{}",
            std::process::id()
        ));
        std::fs::File::create(&probe)
            .map_err(|e| format!("{flag}: cannot write in {}: {e}", dir.display()))?;
        let _ = std::fs::remove_file(&probe);
    }
    Ok(())
}

/// Options of `--target cluster` (the real-time lane, `harness/src/cluster`).
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterArgs {
    /// `--target cluster`: the kubeconfig (default: `$KUBECONFIG`, else `~/.kube/config`).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// `--target cluster`: the kubeconfig context (default: the current one).
    #[arg(long)]
    context: Option<String>,
    /// `--target cluster`: the cluster's controller runs every HPA duration divided by this
    /// (kind-config/cluster-x5.yaml: 5); each case's durations are divided likewise.
    #[arg(long, default_value_t = 1)]
    time_scale: u32,
    /// `--target cluster`: cluster seconds added to one sync period for the timing tolerance
    /// (default: a third of the cluster's sync period, at least 2 s).
    #[arg(long)]
    margin_seconds: Option<f64>,
    /// `--target cluster`: cases run at once, each in its own namespace (`--jobs` says the same).
    #[arg(long, default_value_t = 12)]
    parallel: usize,
    /// `--target cluster`: only say which cases would run and why the others are skipped.
    #[arg(long)]
    plan_only: bool,
    /// `--target cluster`: run cases that need other controller flags than the cluster's (a CPU
    /// initialization period, a readiness delay, a sync period …) in groups, restarting the
    /// controller with each group's flags and putting it back afterwards. Known controllers:
    /// kube-controller-manager on a kind node (its static pod manifest), a Deployment labelled
    /// as the HPA controller (its args); any other is refused. Without it such cases run with the
    /// cluster's flags where the core shows that changes nothing, else are skipped.
    #[arg(long)]
    reconfigure_controller: bool,
    /// `--target cluster`: use a cluster that was not made for the lane (its nodes lack the label
    /// hpa-conformance.dev/disposable=true, or another service serves the metrics APIs, which
    /// the lane's stub then takes over). Without it such a cluster is refused: the lane adds a
    /// simulated node and runs pods, which would disrupt a cluster someone relies on.
    #[arg(long)]
    disposable_cluster: bool,
}

/// Reports what the target noticed after a case was over ([`Target::take_late_failures`]: a
/// process kept for more cases that misbehaved after answering `ended`) on that case, as a
/// failure `after end`; for a case that did not pass or fail (skipped, errored), as a line
/// returned for stderr.
pub(super) fn late_failures(
    results: &mut [crate::run::CaseResult],
    target: &dyn Target,
) -> Vec<String> {
    use crate::run::Outcome;
    let mut lines = Vec::new();
    for late in target.take_late_failures() {
        let f = crate::run::fail(None, "after end", late.expected, late.actual);
        match results.iter_mut().find(|r| r.name == late.case) {
            Some(r) if r.outcome == Outcome::Passed => r.outcome = Outcome::Failed(vec![f]),
            Some(crate::run::CaseResult {
                outcome: Outcome::Failed(failures),
                ..
            }) => failures.push(f),
            _ => lines.push(format!(
                "error: {}: {}: expected {}, got {}",
                late.case, f.check, f.expected, f.actual
            )),
        }
    }
    lines
}

/// Runs the cases on the target with `jobs` threads, results in case order; a target slower
/// than the in-process core (an `exec:` implementation such as upstream's adapter,
/// `reference-api`) shows its progress on stderr. Also returns the highest profile a case was
/// judged at, and who answered (`hello`'s name and version, from the last case that said).
pub(super) fn run_with_progress(
    cases: &[Case],
    target: &dyn Target,
    opts: &RunOptions,
    jobs: usize,
) -> (Vec<crate::run::CaseResult>, Option<Profile>, Option<String>) {
    use crate::cluster::progress::{Lines, Progress};
    use crate::run::Outcome;
    let progress = (target.name() != "core" && cases.len() > 1).then(|| {
        std::sync::Mutex::new(Progress::on_stderr(
            "run",
            cases.len(),
            Lines::Periodic(Duration::from_secs(10)),
        ))
    });
    let each = crate::util::parallel::map_ordered(cases, jobs, |c| {
        if let Some(Ok(mut p)) = progress.as_ref().map(|p| p.lock()) {
            p.start(c.name());
        }
        let (r, level) = run_case_judged(c, target, opts);
        let who = crate::run::last_implementation();
        if let Some(Ok(mut p)) = progress.as_ref().map(|p| p.lock()) {
            let word = match r.outcome {
                Outcome::Passed => "passed",
                Outcome::Failed(_) => "FAILED",
                Outcome::Errored(_) => "ERROR",
                Outcome::Skipped(_) => "skipped",
            };
            p.finish(c.name(), word, r.elapsed.as_secs_f64());
        }
        (r, level, who)
    });
    if let Some(Ok(mut p)) = progress.as_ref().map(|p| p.lock()) {
        p.close();
    }
    let mut judged: Option<Profile> = None;
    let mut implementation = None;
    let mut results = Vec::with_capacity(each.len());
    for (r, level, who) in each {
        judged = judged.max(level);
        implementation = who.or(implementation);
        results.push(r);
    }
    (results, judged, implementation)
}

/// Reports a run: bad input on stderr, the `--format` report on stdout, the `--report` folder;
/// the exit code.
pub(super) fn deliver(
    report: &RunReport,
    cases: &[Case],
    format: Format,
    report_dir: Option<&Path>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    for e in &report.bad_input {
        let _ = writeln!(err, "{e}");
    }
    match format {
        Format::Human => emit(out, &report::human::render(report))?,
        // Streamed: a report never has to fit in memory as one text.
        Format::Json => report::json::write(report, out)
            .map_err(|e| format!("error: cannot write the output: {e}"))?,
        Format::Junit => emit(out, &report::junit::render(report))?,
    }
    if let Some(dir) = report_dir {
        write_reports(report, cases, dir)?;
    }
    Ok(report.exit_code())
}

/// Writes `report.json`, `junit.xml` and `index.html` into `dir` (created if missing).
pub(super) fn write_reports(report: &RunReport, cases: &[Case], dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("error: cannot write the report to {}: {e}", dir.display()))?;
    write_report_with(&dir.join("report.json"), |f| report::json::write(report, f))?;
    write_report_file(&dir.join("junit.xml"), &report::junit::render(report))?;
    write_report_file(
        &dir.join("index.html"),
        &report::html::render(report, cases),
    )
}

/// Each case's notes, by name (for failure output).
pub(super) fn case_notes(cases: &[Case]) -> BTreeMap<String, String> {
    cases
        .iter()
        .filter_map(|c| Some((c.name().to_string(), c.file.notes.clone()?)))
        .collect()
}

/// `run --target cluster`: the real-time lane.
#[allow(clippy::too_many_arguments)]
fn run_on_cluster(
    paths: Vec<PathBuf>,
    filter: Option<String>,
    format: Format,
    fixed_gates: BTreeMap<String, bool>,
    kubernetes_version: hpa_reference::KubernetesVersion,
    report_dir: Option<PathBuf>,
    args: ClusterArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    if args.time_scale == 0 {
        return Err(usage("--time-scale must be at least 1"));
    }
    let mut settings = crate::cluster::plan::ClusterSettings::defaults_scaled(args.time_scale);
    settings.version = kubernetes_version;
    let margin = args
        .margin_seconds
        .unwrap_or_else(|| settings.default_margin().as_secs_f64());
    if !(margin.is_finite() && margin >= 0.0) {
        return Err(usage("--margin-seconds must be a non-negative number"));
    }
    let mut gates = kubernetes_version.default_gates();
    for (name, v) in &fixed_gates {
        gates.set(name, *v).map_err(usage)?;
    }
    let opts = crate::cluster::ClusterOptions {
        kubeconfig: args.kubeconfig,
        context: args.context,
        settings,
        gates,
        margin: Duration::from_secs_f64(margin),
        parallel: args.parallel,
        reconfigure: args.reconfigure_controller,
        disposable: args.disposable_cluster,
    };
    let paths = if paths.is_empty() {
        vec![PathBuf::from("cases")]
    } else {
        paths
    };
    let (mut cases, bad_input) = load_all(&paths);
    if let Some(f) = &filter {
        cases.retain(|c| {
            c.name().contains(f.as_str()) || c.path.to_string_lossy().contains(f.as_str())
        });
    }
    // Each case with what the judged release expects (one it does not hold for is skipped
    // when its settings are resolved).
    for c in &mut cases {
        c.file.expect = crate::case::versions::expectations_at(c, kubernetes_version);
        c.file.changed_in.clear();
    }
    let run_opts = RunOptions {
        fixed_gates: BTreeMap::new(),
        profile: None,
        pods: false,
        flag_defaults: None,
        version: kubernetes_version,
    };
    if args.plan_only {
        let plans = crate::cluster::plan_all(&cases, &opts, &run_opts);
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        let mut groups: BTreeMap<String, usize> = BTreeMap::new();
        let (mut runs, mut posed) = (0, 0);
        for (case, p) in cases.iter().zip(&plans) {
            match p {
                Ok(planned) => {
                    runs += 1;
                    let group = planned.group();
                    let own = group.is_none();
                    let group = group.unwrap_or_else(|| "the cluster's own flags".to_string());
                    *groups.entry(group).or_default() += 1;
                    match &planned.posed {
                        None => {
                            let _ = writeln!(out, "run   {}", case.path.display());
                        }
                        Some(why) => {
                            if own {
                                posed += 1;
                            }
                            let _ = writeln!(out, "run   {}: {why}", case.path.display());
                        }
                    }
                }
                Err(r) => {
                    let _ = writeln!(out, "skip  {}: {r}", case.path.display());
                    // Group by the reason's kind (its text up to the first number or colon).
                    let kind: String = r
                        .split(|c: char| c.is_ascii_digit() || c == ':')
                        .next()
                        .unwrap_or(r)
                        .trim()
                        .to_string();
                    *reasons.entry(kind).or_default() += 1;
                }
            }
        }
        let _ = writeln!(
            out,
            "settings groups (the controller restarted for each but the first):"
        );
        for (g, n) in &groups {
            let _ = writeln!(out, "  {n:4}  {g}");
        }
        let _ = writeln!(
            out,
            "{runs} of {} cases run on the cluster ({posed} of them posed as the cluster can, each saying how on its line); skipped:",
            cases.len()
        );
        for (r, n) in &reasons {
            let _ = writeln!(out, "  {n:4}  {r}");
        }
        return Ok(0);
    }
    let (description, results) = match crate::cluster::run_all(&cases, &opts, &run_opts) {
        Ok(r) => r,
        Err(e @ crate::cluster::ClusterError::Interrupted(_)) => {
            let _ = writeln!(err, "{e}");
            return Ok(130);
        }
        Err(e) => return Err(usage(e)),
    };
    let corpus = CorpusId::of(&results, commit_of(&paths));
    let report = RunReport {
        target: description,
        results,
        bad_input,
        profile: Profile::Full,
        notes: case_notes(&cases),
        corpus,
    };
    let code = deliver(&report, &cases, format, report_dir.as_deref(), out, err)?;
    if code == exit::NOTHING_RAN {
        let _ = writeln!(
            err,
            "error: no case ran on the cluster: every selected case was skipped (see the reasons above)"
        );
    }
    Ok(code)
}
