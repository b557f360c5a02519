//! `rbac-audit`: least privilege from an API server's audit log.

use std::io::Write;
use std::path::PathBuf;

use super::shared::*;
use crate::report::exit;

/// The arguments of `hpa-conformance rbac-audit`.
#[derive(Debug, clap::Args)]
pub struct RbacAuditArgs {
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
    /// RBAC manifests of what only some runs need: their rules cover requests too, and may go
    /// unused without failing the audit.
    #[arg(long)]
    rbac_conditional: Option<PathBuf>,
}

/// Runs `hpa-conformance rbac-audit`; `Err` is a usage or input problem to print (exit 2).
pub fn run(args: RbacAuditArgs, out: &mut dyn Write, _err: &mut dyn Write) -> Result<i32, String> {
    let RbacAuditArgs {
        audit_log,
        rbac,
        user,
        rbac_conditional,
    } = args;
    use crate::cluster::rbac;
    let read = |p: &PathBuf| {
        std::fs::read_to_string(p).map_err(|e| usage(format!("{}: {e}", p.display())))
    };
    let grants = rbac::grants(&read(&rbac)?).map_err(usage)?;
    let conditional = match &rbac_conditional {
        Some(p) => rbac::grants(&read(p)?).map_err(usage)?,
        None => Vec::new(),
    };
    let requests = rbac::requests(&read(&audit_log)?, &user);
    let verdict = rbac::audit_with(&grants, &conditional, &requests);
    emit(out, &verdict.report())?;
    Ok(if verdict.passed() {
        exit::PASSED
    } else {
        exit::FAILED
    })
}
