//! The `hpa-metrics-stub` binary: flags, logging, TLS, then serve until SIGTERM or Ctrl-C.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Parser;
use hpa_metrics_stub::auth::{Auth, ControlToken};
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
    /// The control API's token (a file holding it: the mounted Secret key). Every /control
    /// request must send it in the x-hpa-metrics-stub-token header (or Authorization: Bearer).
    #[arg(long)]
    control_token_file: PathBuf,
    /// The CA (PEM) that signs the API server's front-proxy client certificate: the metrics APIs
    /// answer only clients presenting a certificate it signed (kube-system ConfigMap
    /// extension-apiserver-authentication, key requestheader-client-ca-file).
    #[arg(long)]
    requestheader_client_ca_file: PathBuf,
    /// The CommonNames a front-proxy client certificate may have, comma-separated (that
    /// ConfigMap's requestheader-allowed-names); empty: any certificate the CA signed.
    #[arg(long, value_delimiter = ',', default_value = "")]
    requestheader_allowed_names: Vec<String>,
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
    let certificate: Arc<str> = Arc::from(identity.cert_pem.as_str());
    let client_ca = tls::client_ca_from_pem_file(&args.requestheader_client_ca_file)?;
    let config = tls::server_config(identity, Some(client_ca))?;
    let auth = Auth {
        control_token: ControlToken::from_file(&args.control_token_file)?,
        allowed_names: args
            .requestheader_allowed_names
            .iter()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect(),
    };
    tracing::info!(
        allowed_names = ?auth.allowed_names,
        "control API: token required; metrics APIs: front-proxy client certificate required"
    );
    let store = Arc::new(Store::new(Clock::System));
    let server = Server::start(args.listen, config, certificate, store, Arc::new(auth)).await?;

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
