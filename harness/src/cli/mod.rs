//! The `hpa-conformance` command line, one file per command. [`main`] takes the arguments and
//! output streams and returns the exit code, so tests drive it in process; each command's
//! `run` takes its parsed arguments. Commands depend on the loaders, the runner, the targets and
//! the reports, never the reverse.

mod cluster_clean;
mod corpus;
mod explain;
mod fuzz;
mod lint;
mod matrix;
mod rbac_audit;
mod run;
mod schema;
mod shared;
mod what_if;

use std::io::Write;

use clap::{Parser, Subcommand};

use crate::report::exit;
pub use run::ClusterArgs;
pub use schema::schema_json;
pub use shared::{Format, StoryFormat};
use shared::{emit, usage};

/// Runs the HPA conformance corpus against a target.
#[derive(Debug, Parser)]
#[command(name = "hpa-conformance", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run cases (default: everything under `cases/`).
    Run(run::RunArgs),
    /// Least privilege from the API server's audit log: every request of `--user` allowed and
    /// covered by a rule of `--rbac`, every granted verb used (exit 1 otherwise, 2 on bad input).
    RbacAudit(rbac_audit::RbacAuditArgs),
    /// Tell a case's run tick by tick, saying why each decision was made (runs of identical ticks
    /// collapse into one row).
    Explain(explain::ExplainArgs),
    /// What would my HPA do with this load? Predicts the replicas of an HPA (as `kubectl get hpa
    /// -o yaml` prints it) under a load trace (CSV: time,metric,value[,per]) on the reference
    /// core, and says why each step happens.
    WhatIf(what_if::WhatIfArgs),
    /// Differential fuzzing: random valid scenarios on two targets, traces compared tick by tick;
    /// the first difference is shrunk to a case file in `--out`. Exit 1 when a difference was found.
    Fuzz(fuzz::FuzzArgs),
    /// The corpus on one target at every Kubernetes release (1.32 … 1.37): case × release,
    /// with the upstream change that explains each row where the releases differ.
    Matrix(matrix::MatrixArgs),
    /// Check case files: schema, upstream's HPA validation, unique names, and that each `source`
    /// exists (a seed document and one of its headings, or an upstream test in a facts file; a
    /// case with neither says why in `source.reason`).
    Lint(lint::LintArgs),
    /// The scale benchmark on kind: `load`, `measure`, `table` (`just bench kind-scale` runs
    /// them around switching kube-controller-manager's HPA controller for the reference).
    KindScale(crate::cluster::scale::Args),
    /// The fault matrix on kind, the harness's part: `first-read` (how soon the controller reads
    /// metrics after a fault), `judge` (a faulted run against the fault-free one), `table`
    /// (`just kind-faults` injects the faults).
    KindFaults(crate::cluster::faults::Args),
    /// Print the JSON Schema of case files (`cases/schema.json`), or with `--protocol` of the
    /// step protocol's messages (`harness/protocol.schema.json`).
    Schema(schema::SchemaArgs),
    /// Say which corpus the paths hold (default: `cases`): its commit, how many cases and their
    /// fingerprint, as every report of a run of them says it; one JSON line.
    Corpus(corpus::CorpusArgs),
    /// Remove everything the cluster lane created on a cluster (every run's namespaces, the
    /// simulated node and its Lease), also what a killed run left behind.
    ClusterClean(cluster_clean::ClusterCleanArgs),
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

/// Runs one command; `Err` is a usage or input problem to print, with exit code 2.
fn dispatch(command: Command, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32, String> {
    match command {
        Command::Run(args) => run::run(args, out, err),
        Command::RbacAudit(args) => rbac_audit::run(args, out, err),
        Command::Explain(args) => explain::run(args, out, err),
        Command::WhatIf(args) => what_if::run(args, out, err),
        Command::Fuzz(args) => fuzz::run(args, out, err),
        Command::Matrix(args) => matrix::run(args, out, err),
        Command::Lint(args) => lint::run(args, out, err),
        Command::KindScale(args) => {
            crate::cluster::scale::run(args, out).map_err(usage)?;
            Ok(exit::PASSED)
        }
        Command::KindFaults(args) => {
            crate::cluster::faults::run(args, out).map_err(usage)?;
            Ok(exit::PASSED)
        }
        Command::Schema(args) => schema::run(args, out, err),
        Command::Corpus(args) => corpus::run(args, out, err),
        Command::ClusterClean(args) => cluster_clean::run(args, out, err),
    }
}
