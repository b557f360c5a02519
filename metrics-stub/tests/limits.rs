//! The stub's connection limits over real sockets on 127.0.0.1, with small timeouts: idle
//! connections (before and after the TLS handshake) and a slowloris are closed within their
//! timeouts, and connections beyond the cap are closed at once.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hpa_metrics_stub::auth::{Auth, ControlToken};
use hpa_metrics_stub::server::{Limits, Server};
use hpa_metrics_stub::state::{Clock, Store};
use hpa_metrics_stub::tls;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

const LIMITS: Limits = Limits {
    max_connections: 8,
    handshake_timeout: Duration::from_millis(300),
    header_read_timeout: Duration::from_millis(400),
};
/// Well past either timeout, well before a test gives up.
const CLOSED_WITHIN: Duration = Duration::from_millis(1500);

struct Stub {
    server: Server,
    client: TlsConnector,
}

async fn start() -> Stub {
    let identity = tls::self_signed(&[]).expect("identity");
    let mut roots = rustls::RootCertStore::empty();
    roots.add(identity.cert_chain[0].clone()).expect("root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let auth = Auth {
        control_token: ControlToken::new("limits-test-token-0123456789").expect("token"),
        allowed_names: Vec::new(),
    };
    let certificate: Arc<str> = Arc::from(identity.cert_pem.as_str());
    let server = Server::start_with(
        "127.0.0.1:0".parse::<SocketAddr>().expect("addr"),
        tls::server_config(identity, None).expect("tls"),
        certificate,
        Arc::new(Store::new(Clock::System)),
        Arc::new(auth),
        LIMITS,
    )
    .await
    .expect("start");
    Stub {
        server,
        client: TlsConnector::from(Arc::new(client)),
    }
}

impl Stub {
    async fn tcp(&self) -> TcpStream {
        TcpStream::connect(self.server.local_addr)
            .await
            .expect("connect")
    }

    async fn tls(&self) -> TlsStream<TcpStream> {
        let tcp = self.tcp().await;
        self.client
            .connect(ServerName::try_from("localhost").expect("name"), tcp)
            .await
            .expect("handshake")
    }

    /// `GET /healthz` on a fresh connection: the status line.
    async fn healthz(&self) -> String {
        let mut tls = self.tls().await;
        tls.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .expect("write");
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(CLOSED_WITHIN, tls.read_to_end(&mut answer))
            .await
            .expect("answered in time");
        let text = String::from_utf8_lossy(&answer);
        text.lines().next().unwrap_or_default().to_string()
    }
}

/// Reads until the server closes the connection (EOF or an error): how long that took, or `None`
/// when it was still open after `within`.
async fn closed(io: &mut (impl AsyncRead + Unpin), within: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 512];
    loop {
        let left = within.checked_sub(started.elapsed())?;
        match tokio::time::timeout(left, io.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test]
async fn idle_connections_are_closed_before_and_after_the_handshake() {
    let stub = start().await;
    let mut before = Vec::new();
    for _ in 0..LIMITS.max_connections / 2 {
        before.push(stub.tcp().await);
    }
    let mut after = Vec::new();
    for _ in 0..LIMITS.max_connections / 2 {
        after.push(stub.tls().await);
    }
    for tcp in &mut before {
        assert!(
            closed(tcp, CLOSED_WITHIN).await.is_some(),
            "a connection that never starts TLS still open"
        );
    }
    for tls in &mut after {
        assert!(
            closed(tls, CLOSED_WITHIN).await.is_some(),
            "a TLS connection that never sends a request still open"
        );
    }
    assert_eq!(stub.healthz().await, "HTTP/1.1 200 OK");
    stub.server.shutdown().await;
}

#[tokio::test]
async fn a_slowloris_is_closed_while_it_trickles_its_headers() {
    let stub = start().await;
    let mut slow = stub.tls().await;
    slow.write_all(b"GET /healthz HTTP/1.1\r\n")
        .await
        .expect("write");
    slow.flush().await.expect("flush");
    let started = Instant::now();
    let mut closed_after = None;
    // One header byte every 50 ms: never idle, never a whole head. Bounded: 40 bytes, 2 s.
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if slow.write_all(b"x").await.is_err() || slow.flush().await.is_err() {
            closed_after = Some(started.elapsed());
            break;
        }
        let mut buf = [0u8; 512];
        if let Ok(Ok(0) | Err(_)) =
            tokio::time::timeout(Duration::from_millis(1), slow.read(&mut buf)).await
        {
            closed_after = Some(started.elapsed());
            break;
        }
    }
    let after = closed_after.expect("the slowloris was still connected after 2 s");
    assert!(
        after >= LIMITS.header_read_timeout - Duration::from_millis(100),
        "closed early: {after:?}"
    );
    assert_eq!(stub.healthz().await, "HTTP/1.1 200 OK");
    stub.server.shutdown().await;
}

#[tokio::test]
async fn connections_beyond_the_cap_are_closed_at_once() {
    let stub = start().await;
    let mut held = Vec::new();
    for _ in 0..LIMITS.max_connections {
        held.push(stub.tls().await);
    }
    let mut over = stub.tcp().await;
    assert!(
        closed(&mut over, LIMITS.handshake_timeout / 2)
            .await
            .is_some(),
        "a connection beyond the cap was kept"
    );
    // The held ones were not: still open (their header timeout has not run out).
    let mut buf = [0u8; 1];
    for tls in &mut held {
        assert!(
            tokio::time::timeout(Duration::from_millis(1), tls.read(&mut buf))
                .await
                .is_err(),
            "a connection within the cap was closed"
        );
    }
    // Closed, they free their slots.
    drop(held);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(stub.healthz().await, "HTTP/1.1 200 OK");
    stub.server.shutdown().await;
}
