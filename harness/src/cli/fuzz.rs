//! `fuzz`: differential fuzzing of two targets ([`crate::fuzz`]).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use super::shared::*;
use crate::profile::Profile;
use crate::run::RunOptions;

/// The arguments of `hpa-conformance fuzz`.
#[derive(Debug, clap::Args)]
pub struct FuzzArgs {
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
    /// The Kubernetes release judged: 1.32 … 1.37 (default: 1.37). Its feature-gate defaults
    /// and its HPA behaviour on the core; cases that do not hold for it are skipped, and each
    /// case expects what that release does.
    #[arg(long = "kubernetes-version", default_value_t = hpa_reference::KubernetesVersion::DEFAULT)]
    kubernetes_version: hpa_reference::KubernetesVersion,
    /// Feature gates fixed for both targets, as for `run`.
    #[arg(long, value_delimiter = ',')]
    feature_gates: Vec<String>,
    /// The level traces are compared at: `replicas`, `status` or `full` (default).
    #[arg(long)]
    profile: Option<Profile>,
    /// Which target's trace becomes the expectation of a written case: `a` or `b` (default:
    /// this project's side against a third party — the core, the reference or upstream's
    /// controller — else `b`). The written case names it.
    #[arg(long)]
    truth: Option<String>,
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
}

/// Runs `hpa-conformance fuzz`; `Err` is a usage or input problem to print (exit 2).
pub fn run(args: FuzzArgs, out: &mut dyn Write, _err: &mut dyn Write) -> Result<i32, String> {
    let FuzzArgs {
        a,
        b,
        seed,
        count,
        out: out_dir,
        feature_gates,
        kubernetes_version,
        profile,
        truth,
        step_timeout,
        jobs,
        separately,
    } = args;
    let timeout = Duration::from_secs(step_timeout);
    let ta = startable_target(&a, timeout).map_err(usage)?;
    let tb = startable_target(&b, timeout).map_err(usage)?;
    let truth = truth.unwrap_or_else(|| crate::fuzz::default_truth(&a, &b).to_string());
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
            version: kubernetes_version,
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
        let truth_name = if truth == "a" { ta.name() } else { tb.name() };
        let _ = writeln!(
            out,
            "shrunk difference written to {} (its expectations: {truth_name}'s trace, the truth)",
            p.display()
        );
    }
    Ok(if !r.differences.is_empty() || !r.failures.is_empty() {
        1
    } else if r.rejected > 0 {
        2
    } else {
        0
    })
}
