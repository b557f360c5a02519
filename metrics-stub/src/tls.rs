//! TLS for the listener: a certificate generated at startup (self-signed, rcgen with ring) unless
//! PEM files are given, served by rustls with the ring provider (no aws-lc, no openssl). The
//! APIServices skip verification (`insecureSkipTLSVerify`): the certificate is new each start, so
//! there is no CA bundle to pin.
//!
//! Client certificates: with the requestheader client CA (`--requestheader-client-ca-file`, the
//! `requestheader-client-ca-file` of kube-system's `extension-apiserver-authentication`
//! ConfigMap), a client may present a certificate, and one that CA did not sign (for client
//! authentication) ends the handshake; a client without one is let through to the paths that
//! need none ([`crate::auth`] decides per path).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The names the generated certificate covers: loopback and the in-cluster Service names.
pub const DEFAULT_NAMES: &[&str] = &[
    "localhost",
    "127.0.0.1",
    "::1",
    "hpa-metrics-stub",
    "hpa-metrics-stub.hpa-conformance-system",
    "hpa-metrics-stub.hpa-conformance-system.svc",
    "hpa-metrics-stub.hpa-conformance-system.svc.cluster.local",
];

/// A TLS setup that failed.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Generating the certificate failed.
    #[error("generating the self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// A PEM file could not be read.
    #[error("reading {path}: {source}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// Why.
        source: rustls::pki_types::pem::Error,
    },
    /// The certificate file holds no certificate.
    #[error("{0} holds no certificate")]
    NoCertificate(PathBuf),
    /// rustls refused the certificate or key.
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    /// The client CA file holds no usable CA certificate.
    #[error("{path} holds no usable CA certificate{}", .reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    NoClientCa {
        /// The file.
        path: PathBuf,
        /// What rustls said of its certificates, if anything.
        reason: Option<String>,
    },
    /// rustls refused to build the client certificate verifier.
    #[error("client certificate verifier: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
}

/// The CA certificates of a PEM file, as trust anchors for client certificates.
pub fn client_ca_from_pem_file(path: &Path) -> Result<rustls::RootCertStore, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|source| TlsError::Pem {
            path: path.to_path_buf(),
            source,
        })?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::Pem {
            path: path.to_path_buf(),
            source,
        })?;
    let mut roots = rustls::RootCertStore::empty();
    let (added, ignored) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(TlsError::NoClientCa {
            path: path.to_path_buf(),
            reason: (ignored > 0).then(|| format!("{ignored} certificate(s) not usable as a CA")),
        });
    }
    Ok(roots)
}

/// A certificate chain and its key.
#[derive(Debug)]
pub struct Identity {
    /// The chain, leaf first.
    pub cert_chain: Vec<CertificateDer<'static>>,
    /// The private key.
    pub key: PrivateKeyDer<'static>,
    /// The leaf certificate as PEM (what a test client trusts).
    pub cert_pem: String,
}

/// A self-signed certificate for [`DEFAULT_NAMES`] and `extra` names (IP addresses become IP SANs).
pub fn self_signed(extra: &[String]) -> Result<Identity, TlsError> {
    let mut names: Vec<String> = DEFAULT_NAMES.iter().map(|s| s.to_string()).collect();
    names.extend(extra.iter().cloned());
    let certified = rcgen::generate_simple_self_signed(names)?;
    Ok(Identity {
        cert_chain: vec![certified.cert.der().clone()],
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            certified.signing_key.serialize_der(),
        )),
        cert_pem: certified.cert.pem(),
    })
}

/// A certificate chain and key from PEM files.
pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Identity, TlsError> {
    let pem_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TlsError::Pem { path, source }
    };
    let cert_chain = CertificateDer::pem_file_iter(cert)
        .map_err(pem_err(cert))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_err(cert))?;
    if cert_chain.is_empty() {
        return Err(TlsError::NoCertificate(cert.to_path_buf()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(pem_err(key))?;
    let cert_pem = std::fs::read_to_string(cert).unwrap_or_default();
    Ok(Identity {
        cert_chain,
        key,
        cert_pem,
    })
}

/// The rustls server configuration (ring provider, HTTP/1.1 by ALPN); with `client_ca`, client
/// certificates are requested (not required) and verified against it.
pub fn server_config(
    identity: Identity,
    client_ca: Option<rustls::RootCertStore>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match client_ca {
        Some(roots) => builder.with_client_cert_verifier(
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()?,
        ),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(identity.cert_chain, identity.key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
