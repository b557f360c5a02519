//! `hpa-reference` with leader election flags client-go refuses (or a Lease cannot hold): exit 2
//! with one line naming the flag, before anything connects — the kubeconfig points at a listener
//! here that must see no connection.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs the binary against a kubeconfig whose API server is a listener nobody answers: its exit
/// code (`None`: still running after 10 s, then killed), its stderr, and whether it connected.
fn run(args: &[&str]) -> (Option<i32>, String, bool) {
    let api = TcpListener::bind("127.0.0.1:0").expect("bind");
    api.set_nonblocking(true).expect("nonblocking");
    let port = api.local_addr().expect("addr").port();
    let dir = std::env::temp_dir().join(format!(
        "hpa-reference-flags-{}-{}",
        std::process::id(),
        port
    ));
    std::fs::create_dir_all(&dir).expect("dir");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n\
             users: [{{name: u, user: {{token: t}}}}]\n\
             contexts: [{{name: c, context: {{cluster: c, user: u}}}}]\ncurrent-context: c\n"
        ),
    )
    .expect("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hpa-reference"))
        .args(args)
        .args([
            "--bind-address=127.0.0.1:0",
            "--metrics-bind-address=127.0.0.1:0",
        ])
        .env("KUBECONFIG", &kubeconfig)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hpa-reference");
    let started = Instant::now();
    let mut connected = false;
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        match api.accept() {
            Ok(_) => connected = true,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => panic!("accept: {e}"),
        }
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    connected |= api.accept().is_ok();
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        use std::io::Read;
        let _ = pipe.read_to_string(&mut stderr);
    }
    let _ = std::fs::remove_dir_all(&dir);
    (code, stderr, connected)
}

#[test]
fn refused_leader_election_flags_exit_2_with_one_line_before_connecting() {
    for (args, message) in [
        (
            &["--leader-elect-retry-period=0s"][..],
            "retryPeriod must be greater than zero (--leader-elect-retry-period=0s)",
        ),
        (
            &["--leader-elect-lease-duration=1000000h"][..],
            "leaseDuration must be at most 2147483647s: the Lease's leaseDurationSeconds is an int32",
        ),
        (
            &[
                "--leader-elect-lease-duration=500ms",
                "--leader-elect-renew-deadline=400ms",
                "--leader-elect-retry-period=100ms",
            ][..],
            "leaseDuration must be a whole number of seconds",
        ),
        (
            &[
                "--leader-elect-lease-duration=10s",
                "--leader-elect-renew-deadline=10s",
            ][..],
            "leaseDuration must be greater than renewDeadline",
        ),
    ] {
        let (code, stderr, connected) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line: {stderr}");
        assert!(
            stderr.starts_with("hpa-reference: invalid leader election flags: ")
                && stderr.contains(message),
            "{args:?}: {stderr}"
        );
        assert!(!connected, "{args:?}: connected to the API server first");
    }
}
