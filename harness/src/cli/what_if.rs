//! `what-if`: a user's own HPA and load trace, predicted on the reference core ([`crate::whatif`]).

use std::io::Write;
use std::path::PathBuf;

use super::shared::*;
use crate::report::exit;

/// The arguments of `hpa-conformance what-if`.
#[derive(Debug, clap::Args)]
pub struct WhatIfArgs {
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
    /// The Kubernetes release whose controller predicts: 1.32 … 1.37 (default: 1.37).
    #[arg(long = "kubernetes-version", default_value_t = hpa_reference::KubernetesVersion::DEFAULT)]
    kubernetes_version: hpa_reference::KubernetesVersion,
    /// `--feature-gates`, e.g. `HPAScaleToZero=true` (default: those of --kubernetes-version).
    #[arg(long, value_delimiter = ',')]
    feature_gates: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    format: StoryFormat,
    /// Also write the replica timeline as SVG to this file.
    #[arg(long)]
    svg: Option<PathBuf>,
}

/// Runs `hpa-conformance what-if`; `Err` is a usage or input problem to print (exit 2).
pub fn run(args: WhatIfArgs, out: &mut dyn Write, _err: &mut dyn Write) -> Result<i32, String> {
    let WhatIfArgs {
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
        kubernetes_version,
        feature_gates,
        format,
        svg,
    } = args;
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
        initial_readiness_delay_seconds: dur("initial-readiness-delay", &initial_readiness_delay)?,
        downscale_stabilization_seconds: dur("downscale-stabilization", &downscale_stabilization)?,
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
        version: kubernetes_version,
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
        crate::run::Outcome::Errored(_) => exit::FAILED,
        _ => exit::PASSED,
    })
}
