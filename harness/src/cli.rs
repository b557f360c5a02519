//! The `hpa-conformance` command line: `run`, `explain`, `schema`. [`main`] takes the arguments and
//! output streams and returns the exit code, so tests drive it in process.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand, ValueEnum};

use crate::case::{Case, LoadError, discover, load_case};
use crate::profile::Profile;
use crate::report::{self, RunReport, exit};
use crate::runner::{RunOptions, run_case, run_case_judged};
use crate::target::exec::ExecTarget;
use crate::target::{CoreTarget, Target};
use std::time::Duration;

/// Runs the HPA conformance corpus against a target.
#[derive(Debug, Parser)]
#[command(name = "hpa-conformance", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A line per case and a summary.
    Human,
    /// One JSON document.
    Json,
    /// JUnit XML.
    Junit,
}

/// Formats of `explain` (and `what-if`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StoryFormat {
    /// The story as text.
    Human,
    /// One JSON document for tools.
    Json,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run cases (default: everything under `cases/`).
    Run {
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
        /// Feature gates the target runs with, e.g. `HPAScaleToZero=true,HPAConfigurableTolerance=false`
        /// (default: Kubernetes 1.36's defaults). Cases that use a gate with another value are
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
        #[command(flatten)]
        cluster: ClusterArgs,
    },
    /// Least privilege from the API server's audit log: every request of `--user` allowed and
    /// covered by a rule of `--rbac`, every granted verb used (exit 1 otherwise, 2 on bad input).
    RbacAudit {
        /// The audit log (JSON lines, `audit.k8s.io/v1` events).
        #[arg(long)]
        audit_log: PathBuf,
        /// The RBAC manifests (ClusterRoles and Roles; other objects are ignored).
        #[arg(long, default_value = "kind-config/reference/base/rbac.yaml")]
        rbac: PathBuf,
        /// The user whose requests are checked.
        #[arg(
            long,
            default_value = "system:serviceaccount:hpa-reference:hpa-reference"
        )]
        user: String,
    },
    /// Tell a case's run tick by tick, saying why each decision was made (runs of identical ticks
    /// collapse into one row).
    Explain {
        /// The case file.
        case: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value = "human")]
        format: StoryFormat,
        /// The implementation under test.
        #[arg(long, default_value = "core")]
        target: String,
        /// Seconds to wait for each answer of an `exec:` implementation.
        #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
        step_timeout: u64,
        /// Feature gates fixed for the case, as for `run`.
        #[arg(long, value_delimiter = ',')]
        feature_gates: Vec<String>,
        /// The conformance level the case is judged at, as for `run`.
        #[arg(long)]
        profile: Option<Profile>,
        /// Also show each pod at every tick: phase, start time, Ready and since when, deletion,
        /// and each metric sample with its timestamp and window (every tick gets its own row).
        #[arg(long)]
        pods: bool,
    },
    /// What would my HPA do with this load? Predicts the replicas of an HPA (as `kubectl get hpa
    /// -o yaml` prints it) under a load trace (CSV: time,metric,value[,per]) on the reference
    /// core, and says why each step happens.
    WhatIf {
        /// The HPA manifest (`status` and `metadata.managedFields` are ignored).
        #[arg(long)]
        hpa: PathBuf,
        /// The load: CSV `time,metric,value[,per]`; time in seconds or RFC 3339 timestamps;
        /// value the total over the ready pods (or per pod with per=pod; an Object or External
        /// metric's value).
        #[arg(long)]
        load: PathBuf,
        /// A Deployment manifest: the current replicas and the containers' requests.
        #[arg(long)]
        deployment: Option<PathBuf>,
        /// The current replicas (default: the Deployment's, else the HPA's
        /// status.currentReplicas).
        #[arg(long)]
        replicas: Option<i32>,
        /// The pod's requests without a Deployment, e.g. `cpu=500m,memory=256Mi`.
        #[arg(long, value_delimiter = ',')]
        requests: Vec<String>,
        /// How long to predict (a duration; default: the last load change plus 5m).
        #[arg(long)]
        duration: Option<String>,
        /// `--horizontal-pod-autoscaler-sync-period` (default 15s).
        #[arg(long)]
        sync_period: Option<String>,
        /// `--horizontal-pod-autoscaler-tolerance` (default 0.1).
        #[arg(long)]
        tolerance: Option<f64>,
        /// `--horizontal-pod-autoscaler-downscale-stabilization` (default 5m0s).
        #[arg(long)]
        downscale_stabilization: Option<String>,
        /// `--horizontal-pod-autoscaler-cpu-initialization-period` (default 5m0s).
        #[arg(long)]
        cpu_initialization_period: Option<String>,
        /// `--horizontal-pod-autoscaler-initial-readiness-delay` (default 30s).
        #[arg(long)]
        initial_readiness_delay: Option<String>,
        /// `--feature-gates`, e.g. `HPAScaleToZero=true` (default: Kubernetes 1.36's).
        #[arg(long, value_delimiter = ',')]
        feature_gates: Vec<String>,
        /// Output format.
        #[arg(long, value_enum, default_value = "human")]
        format: StoryFormat,
        /// Also write the replica timeline as SVG to this file.
        #[arg(long)]
        svg: Option<PathBuf>,
    },
    /// Differential fuzzing: random valid scenarios on two targets, traces compared tick by tick;
    /// the first difference is shrunk to a case file in `--out`. Exit 1 when a difference was found.
    Fuzz {
        /// The first target (default: the in-process reference core).
        #[arg(long, default_value = "core")]
        a: String,
        /// The second target, e.g. `exec:adapters/upstream/bin/hpa-upstream-adapter`.
        #[arg(long)]
        b: String,
        /// Seed of the scenario generator.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// How many scenarios.
        #[arg(long, default_value_t = 100)]
        count: usize,
        /// Where a shrunk difference is written (default: `cases/regressions` when both targets
        /// are this project's — `core`, `reference-api`, `hpa-step-reference` or the upstream
        /// adapter — else `hpa-fuzz-findings/`: a third party's differences never land in
        /// the corpus unasked).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Feature gates fixed for both targets, as for `run`.
        #[arg(long, value_delimiter = ',')]
        feature_gates: Vec<String>,
        /// The level traces are compared at: `replicas`, `status` or `full` (default).
        #[arg(long)]
        profile: Option<Profile>,
        /// Which target's trace becomes the expectation of a written case: `a` or `b`.
        #[arg(long, default_value = "b")]
        truth: String,
        /// Seconds to wait for each answer of an `exec:` implementation.
        #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
        step_timeout: u64,
        /// Scenarios run at once, each on its own thread and sessions (default: the cores
        /// available); the report is the same for a seed whatever the number.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        jobs: Option<u64>,
        /// Run every scenario on each target separately, each over its own world, instead of
        /// both in lockstep over one world (only a scenario they do not agree on in lockstep is
        /// run separately by default); what is found is the same, lockstep is faster
        #[arg(long)]
        separately: bool,
    },
    /// Check case files: schema, upstream's HPA validation, unique names, and that each `source`
    /// exists (a seed document and one of its headings, or an upstream test in a facts file; a
    /// case with neither says why in `source.reason`).
    Lint {
        /// Case files or folders (default: `cases/`).
        paths: Vec<PathBuf>,
        /// The seed documents.
        #[arg(long, default_value = "../shared/seeds")]
        seeds: PathBuf,
        /// The upstream unit-test facts: one file, or several (repeat the flag, or separate
        /// with commas); an `upstream:` source may name an id or test of any of them.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "../shared/reference/upstream-test-facts.yaml"
        )]
        facts: Vec<PathBuf>,
    },
    /// The scale benchmark on kind: `load`, `measure`, `table` (`just bench kind-scale` runs
    /// them around switching kube-controller-manager's HPA controller for the reference).
    KindScale(crate::cluster::scale::Args),
    /// Print the JSON Schema of case files (`cases/schema.json`), or with `--protocol` of the
    /// step protocol's messages (`harness/protocol.schema.json`).
    Schema {
        /// The step protocol's schema instead.
        #[arg(long)]
        protocol: bool,
    },
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
    /// `--target cluster`: cases run at once, each in its own namespace.
    #[arg(long, default_value_t = 12)]
    parallel: usize,
    /// `--target cluster`: only say which cases would run and why the others are skipped.
    #[arg(long)]
    plan_only: bool,
}

/// The JSON Schema of case files, as written to `cases/schema.json`.
pub fn schema_json() -> String {
    let schema = schemars::schema_for!(crate::case::CaseFile);
    let mut s = serde_json::to_string_pretty(&schema).unwrap_or_default();
    s.push('\n');
    s
}

/// Builds a target from its command-line name: `core`, `reference-api` or `exec:<command>`.
pub fn make_target(name: &str, step_timeout: Duration) -> Result<Box<dyn Target>, String> {
    if let Some(command) = name.strip_prefix("exec:") {
        return Ok(Box::new(ExecTarget::new(command, step_timeout)?));
    }
    match name {
        "core" => Ok(Box::new(CoreTarget)),
        "reference-api" => Ok(Box::new(crate::target::api::ApiTarget)),
        other => Err(format!(
            "unknown target {other:?} (available: core, reference-api, exec:<command>)"
        )),
    }
}

/// [`make_target`] for `run`, `explain` and `fuzz`: an `exec:` command that cannot start (a
/// program that does not exist or cannot be executed) is a usage error (exit 2), one rule for
/// every command, not a failure of each case.
fn startable_target(name: &str, step_timeout: Duration) -> Result<Box<dyn Target>, String> {
    if let Some(command) = name.strip_prefix("exec:") {
        let exec = ExecTarget::new(command, step_timeout)?;
        exec.probe()
            .map_err(|why| format!("target {} cannot start: {why}", exec.name()))?;
        return Ok(Box::new(exec));
    }
    make_target(name, step_timeout)
}

/// Loads every case under `paths`: the good ones and the errors of the bad ones (unreadable
/// paths, files that do not load, duplicate names pointed at their `name:` line).
pub fn load_all(paths: &[PathBuf]) -> (Vec<Case>, Vec<LoadError>) {
    let (files, mut errors) = discover(paths);
    let mut cases = Vec::new();
    for f in files {
        match load_case(&f) {
            Ok(c) => cases.push(c),
            Err(e) => errors.push(e),
        }
    }
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    cases.retain(|c| match seen.get(c.name()) {
        Some(first) => {
            errors.push(LoadError {
                path: c.path.clone(),
                pos: c.name_pos,
                reason: format!(
                    "duplicate case name {} (also in {})",
                    crate::text::quote(c.name()),
                    first.display()
                ),
            });
            false
        }
        None => {
            seen.insert(c.name().to_string(), c.path.clone());
            true
        }
    });
    (cases, errors)
}

/// Writes all of `text` to `out`; a failure is an error line (exit 2).
fn emit(out: &mut dyn Write, text: &str) -> Result<(), String> {
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| format!("error: cannot write the output: {e}"))
}

/// Writes a report file; a failure (a missing folder, a full disk) is an error line (exit 2).
fn write_report_file(path: &Path, text: &str) -> Result<(), String> {
    write_report_with(path, |f| f.write_all(text.as_bytes()))
}

/// [`write_report_file`] with what `write` writes (a report streamed as it is serialized).
fn write_report_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), String> {
    let written = std::fs::File::create(path).and_then(|mut f| {
        write(&mut f)?;
        f.flush()?;
        // A regular file is on disk before the run reports success.
        if f.metadata()?.is_file() {
            f.sync_all()?;
        }
        Ok(())
    });
    written.map_err(|e| format!("error: cannot write the report to {}: {e}", path.display()))
}

/// Runs the CLI; returns the exit code.
pub fn main(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            if e.use_stderr() {
                let _ = write!(err, "{e}");
                return exit::BAD_INPUT;
            }
            // --help, --version.
            return match emit(out, &e.to_string()) {
                Ok(()) => exit::PASSED,
                Err(line) => {
                    let _ = writeln!(err, "{line}");
                    exit::BAD_INPUT
                }
            };
        }
    };
    match dispatch(cli.command, out, err) {
        Ok(code) => code,
        Err(line) => {
            let _ = writeln!(err, "{line}");
            exit::BAD_INPUT
        }
    }
}

/// The paths as given, for messages.
fn shown(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A usage problem, as the line to print (exit code 2).
fn usage(e: impl std::fmt::Display) -> String {
    format!("error: {e}")
}

/// Runs one command; `Err` is a usage or input problem to print, with exit code 2.
fn dispatch(command: Command, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, String> {
    match command {
        Command::Fuzz {
            a,
            b,
            seed,
            count,
            out: out_dir,
            truth,
            step_timeout,
            feature_gates,
            profile,
            jobs,
            separately,
        } => {
            let timeout = Duration::from_secs(step_timeout);
            let ta = startable_target(&a, timeout).map_err(usage)?;
            let tb = startable_target(&b, timeout).map_err(usage)?;
            if truth != "a" && truth != "b" {
                return Err(usage("--truth is a or b"));
            }
            let fixed_gates =
                hpa_reference::settings::parse_gate_assignments(&feature_gates).map_err(usage)?;
            let out_dir = out_dir.unwrap_or_else(|| crate::fuzz::default_out(&a, &b));
            let jobs = jobs_or_default(jobs);
            let r = crate::fuzz::fuzz_jobs_with(
                ta.as_ref(),
                tb.as_ref(),
                seed,
                count,
                &out_dir,
                truth == "b",
                &RunOptions {
                    fixed_gates,
                    profile,
                    pods: false,
                    flag_defaults: None,
                },
                jobs,
                !separately,
            )
            .map_err(usage)?;
            for p in &r.flaky {
                let _ = writeln!(
                    out,
                    "flaky difference (did not reproduce on every re-run; not a failure): {}",
                    p.display()
                );
            }
            for p in &r.failures {
                let _ = writeln!(
                    out,
                    "a target failed to run a scenario on every try: {}",
                    p.display()
                );
            }
            let rate = r.scenarios as f64 / r.elapsed.as_secs_f64().max(1e-9);
            let _ = writeln!(
                out,
                "fuzz: {} scenarios, {} vs {}, seed {seed}: {} differences, {} target failures, {} flaky, {} rejected ({:.1} s, {rate:.1} scenarios/s, {jobs} jobs, {} run on each target separately{})",
                r.scenarios,
                ta.name(),
                tb.name(),
                r.differences.len(),
                r.failures.len(),
                r.flaky.len(),
                r.rejected,
                r.elapsed.as_secs_f64(),
                r.separate_runs,
                if separately {
                    ""
                } else {
                    ", the rest in lockstep"
                },
            );
            for p in &r.differences {
                let _ = writeln!(out, "shrunk difference written to {}", p.display());
            }
            Ok(if !r.differences.is_empty() || !r.failures.is_empty() {
                1
            } else if r.rejected > 0 {
                2
            } else {
                0
            })
        }
        Command::Lint {
            paths,
            seeds,
            facts,
        } => {
            let sources = crate::lint::Sources::load(&seeds, &facts)
                .map_err(|e| usage(format!("{e} (point --seeds and --facts at shared/)")))?;
            let paths = if paths.is_empty() {
                vec![PathBuf::from("cases")]
            } else {
                paths
            };
            let crate::lint::Findings {
                cases: count,
                errors,
                warnings,
            } = crate::lint::lint(&paths, &sources);
            for e in &errors {
                let _ = writeln!(err, "{e}");
            }
            for w in &warnings {
                let _ = writeln!(
                    err,
                    "{}:{}:{}: warning: {}",
                    w.path.display(),
                    w.pos.line,
                    w.pos.column,
                    w.reason
                );
            }
            let warned = match warnings.len() {
                0 => String::new(),
                n => format!(", {n} warnings"),
            };
            emit(
                out,
                &format!(
                    "lint: {count} case files checked, {} problems{warned}\n",
                    errors.len()
                ),
            )?;
            if !errors.is_empty() {
                Ok(exit::BAD_INPUT)
            } else if count == 0 {
                let _ = writeln!(err, "error: no case file to lint under {}", shown(&paths));
                Ok(exit::NOTHING_RAN)
            } else {
                Ok(exit::PASSED)
            }
        }
        Command::RbacAudit {
            audit_log,
            rbac,
            user,
        } => {
            use crate::cluster::rbac;
            let read = |p: &PathBuf| {
                std::fs::read_to_string(p).map_err(|e| usage(format!("{}: {e}", p.display())))
            };
            let grants = rbac::grants(&read(&rbac)?).map_err(usage)?;
            let verdict = rbac::audit(&grants, &rbac::requests(&read(&audit_log)?, &user));
            emit(out, &verdict.report())?;
            Ok(if verdict.passed() {
                exit::PASSED
            } else {
                exit::FAILED
            })
        }
        Command::KindScale(args) => {
            crate::cluster::scale::run(args, out).map_err(usage)?;
            Ok(exit::PASSED)
        }
        Command::WhatIf {
            hpa,
            load,
            deployment,
            replicas,
            requests,
            duration,
            sync_period,
            tolerance,
            downscale_stabilization,
            cpu_initialization_period,
            initial_readiness_delay,
            feature_gates,
            format,
            svg,
        } => {
            use crate::whatif::parse_duration;
            let dur = |flag: &str, v: &Option<String>| {
                v.as_deref()
                    .map(parse_duration)
                    .transpose()
                    .map_err(|e| usage(format!("--{flag}: {e}")))
            };
            let settings = crate::case::model::SettingsOverrides {
                sync_period_seconds: dur("sync-period", &sync_period)?,
                tolerance,
                cpu_initialization_period_seconds: dur(
                    "cpu-initialization-period",
                    &cpu_initialization_period,
                )?,
                initial_readiness_delay_seconds: dur(
                    "initial-readiness-delay",
                    &initial_readiness_delay,
                )?,
                downscale_stabilization_seconds: dur(
                    "downscale-stabilization",
                    &downscale_stabilization,
                )?,
                scale_up_limit_factor: None,
                scale_up_limit_minimum: None,
            };
            let feature_gates =
                hpa_reference::settings::parse_gate_assignments(&feature_gates).map_err(usage)?;
            let inputs = crate::whatif::Inputs {
                hpa,
                load,
                deployment,
                replicas,
                requests,
                duration: dur("duration", &duration)?,
                settings,
                feature_gates,
            };
            let w = crate::whatif::build(&inputs).map_err(|e| e.to_string())?;
            let result = w.run();
            emit(
                out,
                &match format {
                    StoryFormat::Human => w.render(&result),
                    StoryFormat::Json => w.render_json(&result),
                },
            )?;
            if let Some(p) = svg {
                let text = w.svg(&result).map_err(usage)?;
                write_report_file(&p, &text)?;
            }
            Ok(match result.outcome {
                crate::runner::Outcome::Errored(_) => exit::FAILED,
                _ => exit::PASSED,
            })
        }
        Command::Schema { protocol } => {
            let text = if protocol {
                crate::protocol::schema_json()
            } else {
                schema_json()
            };
            emit(out, &text)?;
            Ok(exit::PASSED)
        }
        Command::Run {
            paths,
            target,
            step_timeout,
            jobs,
            format,
            filter,
            feature_gates,
            profile,
            expected_failures,
            claim,
            report: report_dir,
            cluster,
        } => {
            let expected = match &expected_failures {
                Some(p) => Some(crate::expected::load(p).map_err(|e| e.to_string())?),
                None => None,
            };
            let fixed_gates =
                hpa_reference::settings::parse_gate_assignments(&feature_gates).map_err(usage)?;
            if target == "cluster" {
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
                    report_dir,
                    cluster,
                    out,
                    err,
                );
            }
            let target =
                startable_target(&target, Duration::from_secs(step_timeout)).map_err(usage)?;
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
            };
            let (mut results, judged, implementation) =
                run_with_progress(&cases, target.as_ref(), &opts, jobs_or_default(jobs));
            let late = late_failures(&mut results, target.as_ref());
            for line in &late {
                let _ = writeln!(err, "{line}");
            }
            let report = RunReport {
                target: target.name(),
                results,
                bad_input,
                profile: profile.or(judged).unwrap_or_default(),
                notes: case_notes(&cases),
            };
            let mut code = deliver(&report, &cases, format, report_dir.as_deref(), out, err)?;
            if !late.is_empty() && code == exit::PASSED {
                code = exit::FAILED;
            }
            if let Some(file) = &claim {
                let ctx = report::claim::ClaimContext {
                    implementation,
                    fixed_gates: opts.fixed_gates.clone(),
                    commit: corpus_commit(&paths),
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
                let verdict = crate::expected::compare(&report.results, expected);
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
                        crate::text::quote(filter.as_deref().unwrap_or_default())
                    )
                } else {
                    format!("every case ({}) was skipped", cases.len())
                };
                let _ = writeln!(err, "error: no case ran: {why}");
            }
            Ok(code)
        }
        Command::Explain {
            case,
            format,
            target,
            step_timeout,
            feature_gates,
            profile,
            pods,
        } => {
            let fixed_gates =
                hpa_reference::settings::parse_gate_assignments(&feature_gates).map_err(usage)?;
            let target =
                startable_target(&target, Duration::from_secs(step_timeout)).map_err(usage)?;
            let case = load_case(&case).map_err(|e| e.to_string())?;
            let opts = RunOptions {
                fixed_gates,
                profile,
                pods,
                flag_defaults: None,
            };
            let result = run_case(&case, target.as_ref(), &opts);
            emit(
                out,
                &match format {
                    StoryFormat::Human => report::explain::render(&case, &result),
                    StoryFormat::Json => report::explain::render_json(&case, &result),
                },
            )?;
            Ok(match result.outcome {
                crate::runner::Outcome::Passed => exit::PASSED,
                crate::runner::Outcome::Skipped(_) => exit::NOTHING_RAN,
                _ => exit::FAILED,
            })
        }
    }
}

/// Reports what the target noticed after a case was over ([`Target::take_late_failures`]: a
/// process kept for more cases that misbehaved after answering `ended`) on that case, as a
/// failure `after end`; for a case that did not pass or fail (skipped, errored), as a line
/// returned for stderr.
fn late_failures(results: &mut [crate::runner::CaseResult], target: &dyn Target) -> Vec<String> {
    use crate::runner::Outcome;
    let mut lines = Vec::new();
    for late in target.take_late_failures() {
        let f = crate::runner::fail(None, "after end", late.expected, late.actual);
        match results.iter_mut().find(|r| r.name == late.case) {
            Some(r) if r.outcome == Outcome::Passed => r.outcome = Outcome::Failed(vec![f]),
            Some(crate::runner::CaseResult {
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

/// `--jobs`, or the cores available.
fn jobs_or_default(jobs: Option<u64>) -> usize {
    jobs.and_then(|j| usize::try_from(j).ok())
        .unwrap_or_else(crate::parallel::default_jobs)
}

/// Runs the cases on the target with `jobs` threads, results in case order; a target slower
/// than the in-process core (an `exec:` implementation such as upstream's adapter,
/// `reference-api`) shows its progress on stderr. Also returns the highest profile a case was
/// judged at, and who answered (`hello`'s name and version, from the last case that said).
fn run_with_progress(
    cases: &[Case],
    target: &dyn Target,
    opts: &RunOptions,
    jobs: usize,
) -> (
    Vec<crate::runner::CaseResult>,
    Option<Profile>,
    Option<String>,
) {
    use crate::cluster::progress::{Lines, Progress};
    use crate::runner::Outcome;
    let progress = (target.name() != "core" && cases.len() > 1).then(|| {
        std::sync::Mutex::new(Progress::on_stderr(
            "run",
            cases.len(),
            Lines::Periodic(Duration::from_secs(10)),
        ))
    });
    let each = crate::parallel::map_ordered(cases, jobs, |c| {
        if let Some(Ok(mut p)) = progress.as_ref().map(|p| p.lock()) {
            p.start(c.name());
        }
        let (r, level) = run_case_judged(c, target, opts);
        let who = crate::runner::last_implementation();
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
fn deliver(
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
fn write_reports(report: &RunReport, cases: &[Case], dir: &Path) -> Result<(), String> {
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
fn case_notes(cases: &[Case]) -> BTreeMap<String, String> {
    cases
        .iter()
        .filter_map(|c| Some((c.name().to_string(), c.file.notes.clone()?)))
        .collect()
}

/// The git commit of the corpus's folder (`git rev-parse HEAD`, `-dirty` when cases changed),
/// when git answers.
fn corpus_commit(paths: &[PathBuf]) -> Option<String> {
    let dir = paths.first()?;
    let dir = if dir.is_dir() {
        dir.clone()
    } else {
        dir.parent()?.to_path_buf()
    };
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(&dir)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let head = git(&["rev-parse", "HEAD"])?;
    let dirty = git(&["status", "--porcelain", "--", "."]).is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{head}-dirty") } else { head })
}

/// `run --target cluster`: the real-time lane.
#[allow(clippy::too_many_arguments)]
fn run_on_cluster(
    paths: Vec<PathBuf>,
    filter: Option<String>,
    format: Format,
    fixed_gates: BTreeMap<String, bool>,
    report_dir: Option<PathBuf>,
    args: ClusterArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    if args.time_scale == 0 {
        return Err(usage("--time-scale must be at least 1"));
    }
    let settings = crate::cluster::plan::ClusterSettings::defaults_scaled(args.time_scale);
    let margin = args
        .margin_seconds
        .unwrap_or_else(|| settings.default_margin().as_secs_f64());
    if !(margin.is_finite() && margin >= 0.0) {
        return Err(usage("--margin-seconds must be a non-negative number"));
    }
    let mut gates = hpa_reference::FeatureGates::KUBERNETES_1_36;
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
    let run_opts = RunOptions {
        fixed_gates: BTreeMap::new(),
        profile: None,
        pods: false,
        flag_defaults: None,
    };
    if args.plan_only {
        let plans = crate::cluster::plan_all(&cases, &opts, &run_opts);
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        let mut runs = 0;
        for (case, p) in cases.iter().zip(&plans) {
            match p {
                Ok(()) => {
                    runs += 1;
                    let _ = writeln!(out, "run   {}", case.path.display());
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
            "{runs} of {} cases run on the cluster; skipped:",
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
    let report = RunReport {
        target: description,
        results,
        bad_input,
        profile: Profile::Full,
        notes: case_notes(&cases),
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
