//! `cluster-clean`: removes everything the cluster lane created on a cluster, of every run —
//! also what a killed run left behind (`cluster::safety::clean`).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::report::exit;

/// The arguments of `hpa-conformance cluster-clean`.
#[derive(Debug, clap::Args)]
pub struct ClusterCleanArgs {
    /// The kubeconfig (default: `$KUBECONFIG`, else `~/.kube/config`; in a pod without one, its
    /// service account).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Its context (default: the current one).
    #[arg(long)]
    context: Option<String>,
    /// Seconds to wait for the runs' namespaces to be gone.
    #[arg(long, default_value_t = 120)]
    wait_seconds: u64,
}

/// Runs `hpa-conformance cluster-clean`: exit 0 when nothing of the lane's is left, 1 when
/// something stayed (named on stderr), 2 when the cluster cannot be used.
pub fn run(
    args: ClusterCleanArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, String> {
    let wait = Duration::from_secs(args.wait_seconds);
    let cleaned = crate::cluster::with_client(
        args.kubeconfig.as_deref(),
        args.context.as_deref(),
        1,
        |client, context| async move {
            Ok((context, crate::cluster::safety::clean(&client, wait).await))
        },
    )?;
    match cleaned {
        (context, Ok(c)) => {
            let _ = writeln!(
                out,
                "cluster-clean {context}: removed {} namespaces{}{}",
                c.namespaces.len(),
                if c.others.is_empty() { "" } else { " and " },
                c.others.join(", ")
            );
            Ok(exit::PASSED)
        }
        (context, Err(e)) => {
            let _ = writeln!(err, "cluster-clean {context}: {e}");
            Ok(exit::FAILED)
        }
    }
}
