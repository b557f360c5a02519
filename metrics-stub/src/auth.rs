//! Who may call what.
//!
//! - **The control API** (`/control/...`, which sets what every HPA of a namespace reads) needs
//!   the control token: the contents of `--control-token-file` (the Secret
//!   [`CONTROL_SECRET_NAME`](crate::control::CONTROL_SECRET_NAME) mounted into the pod), sent in
//!   the [`CONTROL_TOKEN_HEADER`] header — the one the API server's service proxy passes on, as
//!   the harness reaches the stub that way — or, on a direct connection, as
//!   `Authorization: Bearer <token>`. Compared in constant time.
//! - **The metrics APIs** (`/apis/...`, `/openapi/...` and every other path) answer only the API
//!   server: the connection must present a client certificate that the requestheader client CA
//!   signed (rustls verifies the chain during the handshake, see [`crate::tls`]) whose subject
//!   CommonName is one of the allowed names (`requestheader-allowed-names` of the
//!   `extension-apiserver-authentication` ConfigMap; none listed: any name), as kube-aggregator's
//!   front-proxy client certificate does. metrics-server authenticates its callers the same way
//!   (and then asks the API server to authorize the user named in `X-Remote-User`; the stub
//!   does not: the API server already authorized that user before proxying).
//! - `/healthz`, `/readyz`, `/livez` are open (the kubelet's probes present no credentials).
//!
//! The API server's service proxy presents no client certificate, so it reaches the control API
//! (with the token) but never the metrics APIs.

use std::path::{Path, PathBuf};

use subtle::ConstantTimeEq;

use crate::control::{
    CONTROL_SECRET_KEY, CONTROL_SECRET_NAME, CONTROL_TOKEN_HEADER, SYSTEM_NAMESPACE,
};
use crate::reply::Reply;
use crate::wire::Status;

/// The shortest control token accepted (bytes, after trimming white space).
pub const MIN_TOKEN_BYTES: usize = 16;
/// The longest control token accepted (bytes).
pub const MAX_TOKEN_BYTES: usize = 4096;

/// An authentication setup the stub refuses to start with.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The token file could not be read.
    #[error("reading the control token {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The token is too short or too long.
    #[error(
        "the control token{where_} has {len} bytes: it needs {MIN_TOKEN_BYTES} to {MAX_TOKEN_BYTES}"
    )]
    Length {
        /// ` in <file>`, or nothing.
        where_: String,
        /// Its length.
        len: usize,
    },
    /// The token is not printable ASCII (it must fit in an HTTP header).
    #[error("the control token{0} contains bytes that cannot be sent in an HTTP header")]
    NotPrintable(String),
}

/// The control API's token. Its `Debug` does not show it.
pub struct ControlToken(Vec<u8>);

impl std::fmt::Debug for ControlToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ControlToken({} bytes)", self.0.len())
    }
}

impl ControlToken {
    /// A token from its text (surrounding white space removed).
    pub fn new(token: &str) -> Result<ControlToken, AuthError> {
        ControlToken::checked(token, String::new())
    }

    /// The token in a file (a mounted Secret key), surrounding white space removed.
    pub fn from_file(path: &Path) -> Result<ControlToken, AuthError> {
        let text = std::fs::read_to_string(path).map_err(|source| AuthError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        ControlToken::checked(&text, format!(" in {}", path.display()))
    }

    fn checked(token: &str, where_: String) -> Result<ControlToken, AuthError> {
        let token = token.trim();
        if !(MIN_TOKEN_BYTES..=MAX_TOKEN_BYTES).contains(&token.len()) {
            return Err(AuthError::Length {
                where_,
                len: token.len(),
            });
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(AuthError::NotPrintable(where_));
        }
        Ok(ControlToken(token.as_bytes().to_vec()))
    }

    /// Whether `presented` is the token (constant time in the contents; a length that differs
    /// answers at once, and the length of the token is no secret).
    pub fn matches(&self, presented: &[u8]) -> bool {
        self.0.ct_eq(presented).into()
    }
}

/// What the server demands of its callers.
#[derive(Debug)]
pub struct Auth {
    /// The control API's token.
    pub control_token: ControlToken,
    /// The subject CommonNames a front-proxy client certificate may have; empty: any certificate
    /// the requestheader client CA signed.
    pub allowed_names: Vec<String>,
}

/// What the TLS layer established about a connection's client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Peer {
    /// The verified client certificate's subject CommonName (`Some("")` when it has none);
    /// `None` when the client presented no certificate.
    pub client_cn: Option<String>,
}

fn unauthorized(message: String) -> Reply {
    Reply::status(&Status::failure(401, "Unauthorized", message))
}

impl Auth {
    /// `None` when the request carries the control token, else the 401 to answer.
    pub fn check_control(&self, headers: &http::HeaderMap) -> Option<Reply> {
        let presented = headers
            .get(CONTROL_TOKEN_HEADER)
            .map(|v| v.as_bytes())
            .or_else(|| {
                headers
                    .get(http::header::AUTHORIZATION)
                    .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
            });
        match presented {
            Some(token) if self.control_token.matches(token) => None,
            Some(_) => Some(unauthorized(format!(
                "invalid control token: the control API needs the token of Secret \
                 {SYSTEM_NAMESPACE}/{CONTROL_SECRET_NAME}"
            ))),
            None => Some(unauthorized(format!(
                "the control API needs the token of Secret {SYSTEM_NAMESPACE}/{CONTROL_SECRET_NAME} \
                 (key {CONTROL_SECRET_KEY}) in the {CONTROL_TOKEN_HEADER} header \
                 (or Authorization: Bearer on a direct connection)"
            ))),
        }
    }

    /// `None` when the connection is the API server's front proxy, else the 401 or 403 to answer.
    pub fn check_front_proxy(&self, peer: Option<&Peer>) -> Option<Reply> {
        match peer.and_then(|p| p.client_cn.as_deref()) {
            None => Some(unauthorized(
                "the metrics APIs answer only the API server: present its front-proxy client \
                 certificate (signed by the requestheader client CA)"
                    .to_string(),
            )),
            Some(cn)
                if self.allowed_names.is_empty() || self.allowed_names.iter().any(|n| n == cn) =>
            {
                None
            }
            Some(cn) => Some(Reply::status(&Status::failure(
                403,
                "Forbidden",
                format!(
                    "client certificate CN {cn:?} is not an allowed front-proxy name ({})",
                    self.allowed_names.join(", ")
                ),
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn auth(names: &[&str]) -> Auth {
        Auth {
            control_token: ControlToken::new(TOKEN).unwrap(),
            allowed_names: names.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                http::HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn the_control_token_is_required_and_compared() {
        let a = auth(&[]);
        assert_eq!(
            a.check_control(&headers(&[(CONTROL_TOKEN_HEADER, TOKEN)])),
            None
        );
        let bearer = format!("Bearer {TOKEN}");
        assert_eq!(
            a.check_control(&headers(&[("authorization", &bearer)])),
            None
        );
        let missing = a.check_control(&headers(&[])).unwrap();
        assert_eq!(missing.status, 401);
        assert!(
            missing.body_text().contains(CONTROL_TOKEN_HEADER),
            "{}",
            missing.body_text()
        );
        for wrong in [
            &TOKEN[1..],
            "0123456789abcdef0123456789abcdeF",
            "",
            "0123456789abcdef0123456789abcdef0",
        ] {
            let r = a
                .check_control(&headers(&[(CONTROL_TOKEN_HEADER, wrong)]))
                .unwrap();
            assert_eq!(r.status, 401, "{wrong}");
            assert!(r.body_text().contains("invalid control token"));
        }
        let basic = a
            .check_control(&headers(&[("authorization", &format!("Basic {TOKEN}"))]))
            .unwrap();
        assert_eq!(basic.status, 401);
    }

    #[test]
    fn short_long_and_unprintable_tokens_are_refused() {
        assert!(matches!(
            ControlToken::new("short"),
            Err(AuthError::Length { len: 5, .. })
        ));
        assert!(ControlToken::new(&"x".repeat(MAX_TOKEN_BYTES + 1)).is_err());
        assert!(matches!(
            ControlToken::new("0123456789abcdef 0123"),
            Err(AuthError::NotPrintable(_))
        ));
        // A Secret file ends with no newline or with one: both read the same.
        assert!(
            ControlToken::new(&format!("{TOKEN}\n"))
                .unwrap()
                .matches(TOKEN.as_bytes())
        );
        assert_eq!(
            format!("{:?}", ControlToken::new(TOKEN).unwrap()),
            "ControlToken(32 bytes)"
        );
    }

    #[test]
    fn the_metrics_apis_need_an_allowed_front_proxy_certificate() {
        let a = auth(&["front-proxy-client"]);
        let peer = |cn: Option<&str>| Peer {
            client_cn: cn.map(str::to_string),
        };
        assert_eq!(
            a.check_front_proxy(Some(&peer(Some("front-proxy-client")))),
            None
        );
        assert_eq!(a.check_front_proxy(None).unwrap().status, 401);
        assert_eq!(a.check_front_proxy(Some(&peer(None))).unwrap().status, 401);
        let other = a.check_front_proxy(Some(&peer(Some("someone")))).unwrap();
        assert_eq!(other.status, 403);
        assert!(
            other.body_text().contains("\\\"someone\\\""),
            "{}",
            other.body_text()
        );
        // No names listed: any certificate the CA signed.
        assert_eq!(
            auth(&[]).check_front_proxy(Some(&peer(Some("someone")))),
            None
        );
    }
}
