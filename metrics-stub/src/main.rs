//! The `hpa-metrics-stub` binary: flags, logging, TLS, then serve until SIGTERM or Ctrl-C.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Parser;
use hpa_metrics_stub::server::Server;
use hpa_metrics_stub::state::{Clock, Store};
use hpa_metrics_stub::tls;

/// Serves metrics.k8s.io, custom.metrics.k8s.io and external.metrics.k8s.io with the answers the
/// harness puts per namespace under /control.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// The HTTPS listen address.
    #[arg(long, default_value = "0.0.0.0:8443")]
    listen: SocketAddr,
    /// PEM certificate chain (with --tls-key); a self-signed certificate is generated without it.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key (with --tls-cert).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// An extra DNS name or IP address for the generated certificate (repeatable).
    #[arg(long = "tls-san")]
    tls_sans: Vec<String>,
    /// The stub's log level (`debug` logs every request; other crates log warnings), or a full
    /// env-filter directive such as `debug,rustls=info`.
    #[arg(long, default_value = "info")]
    log_level: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let directive = if args.log_level.contains(['=', ',']) {
        args.log_level.clone()
    } else {
        format!("warn,hpa_metrics_stub={}", args.log_level)
    };
    let filter = tracing_subscriber::EnvFilter::try_new(&directive)
        .with_context(|| format!("--log-level {:?}", args.log_level))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(std::io::stdout().is_terminal())
        .init();

    let identity = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => tls::from_pem_files(cert, key)?,
        (None, None) => tls::self_signed(&args.tls_sans)?,
        _ => bail!("--tls-cert and --tls-key go together"),
    };
    let config = tls::server_config(identity)?;
    let server = Server::start(args.listen, config, Arc::new(Store::new(Clock::System))).await?;

    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    tokio::select! {
        _ = terminate.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    tracing::info!("shutting down");
    server.shutdown().await;
    Ok(())
}
