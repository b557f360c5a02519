//! `explain`: one case's run told tick by tick.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use super::shared::*;
use crate::case::load_case;
use crate::profile::Profile;
use crate::report::{self, exit};
use crate::run::{RunOptions, run_case};

/// The arguments of `hpa-conformance explain`.
#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
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
    /// The Kubernetes release judged: 1.32 … 1.37 (default: 1.37). Its feature-gate defaults
    /// and its HPA behaviour on the core; cases that do not hold for it are skipped, and each
    /// case expects what that release does.
    #[arg(long = "kubernetes-version", default_value_t = hpa_reference::KubernetesVersion::DEFAULT)]
    kubernetes_version: hpa_reference::KubernetesVersion,
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
}

/// Runs `hpa-conformance explain`; `Err` is a usage or input problem to print (exit 2).
pub fn run(args: ExplainArgs, out: &mut dyn Write, _err: &mut dyn Write) -> Result<i32, String> {
    let ExplainArgs {
        case,
        format,
        target,
        step_timeout,
        feature_gates,
        kubernetes_version,
        profile,
        pods,
    } = args;
    let fixed_gates =
        hpa_reference::settings::parse_gate_assignments(&feature_gates).map_err(usage)?;
    let target = startable_target(&target, Duration::from_secs(step_timeout)).map_err(usage)?;
    let case = load_case(&case).map_err(|e| e.to_string())?;
    let opts = RunOptions {
        fixed_gates,
        profile,
        pods,
        flag_defaults: None,
        version: kubernetes_version,
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
        crate::run::Outcome::Passed => exit::PASSED,
        crate::run::Outcome::Skipped(_) => exit::NOTHING_RAN,
        _ => exit::FAILED,
    })
}
