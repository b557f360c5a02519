//! The `hpa-metrics-stub` binary: flags, logging, TLS, then serve until SIGTERM or Ctrl-C.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Parser;
use hpa_metrics_stub::auth::{Auth, ControlToken};
use hpa_metrics_stub::server::Server;
use hpa_metrics_stub::state::{Caps, Clock, Store};
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
    /// At most this many namespaces have a control document (the scale benchmark needs one per
    /// HPA).
    #[arg(long, default_value_t = Caps::DEFAULT.max_namespaces)]
    max_namespaces: usize,
    /// All control documents together weigh at most this many MiB (a document's weight bounds
    /// the memory its parsed form takes: metrics-stub/src/state.rs). Keep the container's memory
    /// limit above it.
    #[arg(long, default_value_t = Caps::DEFAULT.max_total_weight >> 20)]
    max_documents_weight_mib: usize,
}

impl Args {
    /// The store's caps: the defaults, with the two the flags set.
    fn caps(&self) -> Caps {
        Caps {
            max_namespaces: self.max_namespaces,
            max_total_weight: self.max_documents_weight_mib.saturating_mul(1 << 20),
            ..Caps::DEFAULT
        }
    }
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
    let caps = args.caps();
    tracing::info!(
        max_namespaces = caps.max_namespaces,
        max_documents_weight_mib = args.max_documents_weight_mib,
        "control documents capped"
    );
    let store = Arc::new(Store::with_caps(Clock::System, caps));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The stub's required flags and `extra`, parsed.
    fn parse(extra: &[&str]) -> Result<Args, clap::Error> {
        let base = [
            "hpa-metrics-stub",
            "--control-token-file=/t",
            "--requestheader-client-ca-file=/ca",
        ];
        Args::try_parse_from(base.iter().chain(extra))
    }

    fn args(extra: &[&str]) -> Args {
        parse(extra).expect("flags")
    }

    #[test]
    fn the_document_caps_default_to_the_stores_and_the_flags_raise_them() {
        assert_eq!(args(&[]).caps(), Caps::DEFAULT);
        let raised = args(&["--max-namespaces=20000", "--max-documents-weight-mib=256"]).caps();
        assert_eq!(raised.max_namespaces, 20_000);
        assert_eq!(raised.max_total_weight, 256 << 20);
        assert_eq!(
            raised.max_document_weight,
            Caps::DEFAULT.max_document_weight
        );
        assert!(parse(&["--max-namespaces=many"]).is_err());
    }
}
