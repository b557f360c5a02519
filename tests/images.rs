//! Container-level tests of the images `just images` builds, run with testcontainers on the local
//! Docker engine (nothing is pulled): the metrics stub image serves its three APIs over TLS, and
//! the controller image starts as its non-root user on a read-only root file system with every
//! capability dropped and answers `/healthz`; the harness image runs its baked-in corpus on the
//! same terms and reports the corpus its labels name; `image.sh --binary` copies an image's own
//! binary out of it. They need the images and an engine, so `cargo test`
//! lists them as ignored; `just image-test` (which CI runs after `just images`) runs them.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use testcontainers::core::{AccessMode, IntoContainerPort, Mount, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{GenericImage, ImageExt};

/// What `docker image inspect -f FORMAT` says of the image.
fn inspect(image: &str, format: &str) -> anyhow::Result<String> {
    let out = std::process::Command::new("docker")
        .args(["image", "inspect", "-f", format, image])
        .output()
        .context("docker image inspect")?;
    if !out.status.success() {
        bail!(
            "{image} is not built: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The image's configured user, from the engine.
fn image_user(image: &str) -> anyhow::Result<String> {
    inspect(image, "{{.Config.User}}")
}

/// One HTTP/1.1 GET over `stream`: the status code and the body.
fn get(stream: impl Read + Write, path: &str) -> anyhow::Result<(u16, String)> {
    get_with(stream, path, "")
}

/// [`get`] with extra header lines (each ending in CRLF).
fn get_with(
    mut stream: impl Read + Write,
    path: &str,
    headers: &str,
) -> anyhow::Result<(u16, String)> {
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n{headers}Connection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    // A TLS peer that closes without close_notify is an error after the whole answer arrived.
    if let Err(e) = stream.read_to_end(&mut raw)
        && raw.is_empty()
    {
        return Err(e.into());
    }
    let text = String::from_utf8_lossy(&raw).to_string();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("no status line in {text:?}"))?;
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Ok((status, body))
}

/// Polls `f` until it succeeds or 30 s pass.
fn eventually<T>(mut f: impl FnMut() -> anyhow::Result<T>) -> anyhow::Result<T> {
    let start = Instant::now();
    loop {
        match f() {
            Ok(v) => return Ok(v),
            Err(e) if start.elapsed() > Duration::from_secs(30) => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

#[tokio::test]
#[ignore = "needs `just images` and a Docker engine: run `just image-test`"]
async fn the_stub_image_serves_the_three_metrics_apis_over_tls_as_non_root() -> anyhow::Result<()> {
    let image = "hpa-conformance/metrics-stub:dev";
    assert_eq!(image_user(image)?, "65532:65532");

    // A certificate the test trusts, mounted read-only for the stub's --tls-cert/--tls-key.
    let dir = std::env::temp_dir().join(format!("stub-image-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])?;
    std::fs::write(dir.join("cert.pem"), cert.cert.pem())?;
    std::fs::write(dir.join("key.pem"), cert.signing_key.serialize_pem())?;
    // The control token and a front-proxy CA with its client certificate, as kubeadm makes them.
    let token = "image-test-control-token-0123456789";
    std::fs::write(dir.join("token"), format!("{token}\n"))?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "front-proxy-ca");
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, rcgen::KeyPair::generate()?)?;
    std::fs::write(dir.join("front-proxy-ca.pem"), ca.pem())?;
    let mut client_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    client_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "front-proxy-client");
    client_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let client_key = rcgen::KeyPair::generate()?;
    let client_cert = client_params.signed_by(&client_key, &ca)?;
    for f in ["cert.pem", "key.pem", "token", "front-proxy-ca.pem"] {
        set_readable(&dir.join(f))?;
    }

    let container = GenericImage::new("hpa-conformance/metrics-stub", "dev")
        .with_exposed_port(8443.tcp())
        .with_wait_for(WaitFor::Nothing)
        .with_mount(
            Mount::bind_mount(dir.display().to_string(), "/tls")
                .with_access_mode(AccessMode::ReadOnly),
        )
        .with_cmd([
            "--listen=0.0.0.0:8443",
            "--tls-cert=/tls/cert.pem",
            "--tls-key=/tls/key.pem",
            "--control-token-file=/tls/token",
            "--requestheader-client-ca-file=/tls/front-proxy-ca.pem",
            "--requestheader-allowed-names=front-proxy-client",
        ])
        .with_readonly_rootfs(true)
        .with_cap_drop("ALL")
        .start()
        .await?;
    let port = container.get_host_port_ipv4(8443.tcp()).await?;

    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone())?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots);
    // The aggregator's connection (the front-proxy certificate) and the service proxy's (none).
    let front_proxy = Arc::new(builder.clone().with_client_auth_cert(
        vec![client_cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::Pkcs8(client_key.serialize_der().into()),
    )?);
    let anonymous = Arc::new(builder.with_no_client_auth());
    let request = |config: &Arc<rustls::ClientConfig>,
                   path: &str,
                   header: &str|
     -> anyhow::Result<(u16, String)> {
        let name = rustls::pki_types::ServerName::try_from("localhost")?;
        let conn = rustls::ClientConnection::new(config.clone(), name)?;
        let tcp = TcpStream::connect(("127.0.0.1", port))?;
        tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
        get_with(rustls::StreamOwned::new(conn, tcp), path, header)
    };
    let https_get = |path: &str| request(&front_proxy, path, "");
    eventually(|| request(&anonymous, "/healthz", ""))?;
    // Who is refused: the metrics APIs without the front-proxy certificate, the control API
    // without the token.
    let (status, body) = request(&anonymous, "/apis/metrics.k8s.io/v1beta1", "")?;
    assert_eq!(status, 401, "{body}");
    let (status, body) = request(&anonymous, "/control/namespaces", "")?;
    assert_eq!(status, 401, "{body}");
    let header = format!("x-hpa-metrics-stub-token: {token}\r\n");
    let (status, body) = request(&anonymous, "/control/namespaces", &header)?;
    assert_eq!((status, body.trim()), (200, r#"{"namespaces":[]}"#));
    for (path, group) in [
        ("/apis/metrics.k8s.io/v1beta1", "metrics.k8s.io/v1beta1"),
        (
            "/apis/custom.metrics.k8s.io/v1beta2",
            "custom.metrics.k8s.io/v1beta2",
        ),
        (
            "/apis/external.metrics.k8s.io/v1beta1",
            "external.metrics.k8s.io/v1beta1",
        ),
    ] {
        let (status, body) = https_get(path)?;
        assert_eq!(status, 200, "{path}: {body}");
        let doc: serde_json::Value = serde_json::from_str(&body)?;
        assert_eq!(doc["kind"], "APIResourceList", "{path}: {body}");
        assert_eq!(doc["groupVersion"], group, "{path}: {body}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[tokio::test]
#[ignore = "needs `just images` and a Docker engine: run `just image-test`"]
async fn the_controller_image_runs_as_non_root_on_a_read_only_root_and_answers_healthz()
-> anyhow::Result<()> {
    let image = "hpa-conformance/hpa-reference:dev";
    assert_eq!(image_user(image)?, "65532:65532");

    // A kubeconfig for an API server that is not there: the controller starts, serves its
    // probes, and is not ready (it cannot reach the API server to stand for leadership). The
    // image has no system CA bundle (FROM scratch): a kubeconfig must carry its cluster's CA, as
    // the in-cluster service account does (here: any CA, nothing answers anyway).
    let dir = std::env::temp_dir().join(format!("controller-image-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("kubeconfig"),
        "apiVersion: v1\nkind: Config\nclusters: [{name: none, cluster: {server: 'https://127.0.0.1:1', certificate-authority: /config/ca.crt}}]\n\
         users: [{name: none, user: {token: none}}]\n\
         contexts: [{name: none, context: {cluster: none, user: none}}]\ncurrent-context: none\n",
    )?;
    let ca = rcgen::generate_simple_self_signed(vec!["none".to_string()])?;
    std::fs::write(dir.join("ca.crt"), ca.cert.pem())?;
    for f in ["kubeconfig", "ca.crt"] {
        set_readable(&dir.join(f))?;
    }

    let container = GenericImage::new("hpa-conformance/hpa-reference", "dev")
        .with_exposed_port(8080.tcp())
        .with_wait_for(WaitFor::Nothing)
        .with_mount(
            Mount::bind_mount(dir.display().to_string(), "/config")
                .with_access_mode(AccessMode::ReadOnly),
        )
        .with_env_var("KUBECONFIG", "/config/kubeconfig")
        // /metrics is on loopback by default: here on the probes' listener, to read it from outside.
        .with_cmd([
            "--leader-elect=true",
            "--leader-elect-retry-period=1s",
            "--metrics-bind-address=0.0.0.0:8080",
        ])
        .with_readonly_rootfs(true)
        .with_cap_drop("ALL")
        .start()
        .await?;
    let port = container.get_host_port_ipv4(8080.tcp()).await?;
    let http_get = |path: &str| -> anyhow::Result<(u16, String)> {
        let tcp = TcpStream::connect(("127.0.0.1", port))?;
        tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
        get(tcp, path)
    };
    let (status, body) = eventually(|| http_get("/healthz"))?;
    assert_eq!((status, body.trim()), (200, "ok"));
    let (status, _) = http_get("/readyz")?;
    assert_eq!(status, 503, "not ready without an API server");
    let (status, metrics) = http_get("/metrics")?;
    assert_eq!(status, 200);
    assert!(
        metrics.contains("horizontal_pod_autoscaler_controller_num_horizontal_pod_autoscalers"),
        "{metrics}"
    );
    // Still running: the process neither crashed on the read-only root nor on the missing API.
    assert!(container.is_running().await?, "the controller exited");
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The image's label `name`.
fn image_label(image: &str, name: &str) -> anyhow::Result<String> {
    inspect(image, &format!("{{{{index .Config.Labels \"{name}\"}}}}"))
}

#[tokio::test]
#[ignore = "needs `just images` and a Docker engine: run `just image-test`"]
async fn the_harness_image_runs_its_baked_in_corpus_and_reports_the_corpus_its_labels_name()
-> anyhow::Result<()> {
    let image = "hpa-conformance/harness:dev";
    assert_eq!(image_user(image)?, "65532:65532");
    let commit = image_label(image, "hpa-conformance.corpus.commit")?;
    let fingerprint = image_label(image, "hpa-conformance.corpus.fingerprint")?;
    let cases: usize = image_label(image, "hpa-conformance.corpus.cases")?.parse()?;
    assert!(commit.len() >= 40, "corpus commit label {commit:?}");
    assert_eq!(fingerprint.len(), 16, "fingerprint label {fingerprint:?}");
    assert!(cases > 300, "{cases} cases baked in");

    // The only writable place: the report folder, a bind mount any user may write.
    let dir = std::env::temp_dir().join(format!("harness-image-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777))?;
    }
    let container = GenericImage::new("hpa-conformance/harness", "dev")
        .with_wait_for(WaitFor::Nothing)
        .with_mount(Mount::bind_mount(dir.display().to_string(), "/report"))
        .with_cmd([
            "run",
            "--target=core",
            "--report=/report",
            "--done-file=/report/done",
        ])
        .with_readonly_rootfs(true)
        .with_cap_drop("ALL")
        .start()
        .await?;
    let started = Instant::now();
    while container.is_running().await? {
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(300),
            "the corpus did not finish in 300 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let code = container.exit_code().await?;
    let stderr = String::from_utf8_lossy(&container.stderr_to_vec().await?).to_string();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(std::fs::read_to_string(dir.join("done"))?, "/report");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json"))?)?;
    assert_eq!(report["corpus"]["commit"], commit.as_str());
    assert_eq!(report["corpus"]["fingerprint"], fingerprint.as_str());
    assert_eq!(report["corpus"]["cases"], cases);
    assert_eq!(report["summary"]["failed"], 0);
    assert!(report["summary"]["passed"].as_u64().unwrap_or(0) > 300);
    let junit = std::fs::read_to_string(dir.join("junit.xml"))?;
    assert!(
        junit.contains(&format!(
            r#"<property name="corpus.fingerprint" value="{fingerprint}"/>"#
        )),
        "{junit}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[cfg(unix)]
fn set_readable(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))?;
    Ok(())
}

#[test]
#[ignore = "needs `just images` and a Docker engine: run `just image-test`"]
fn image_sh_binary_copies_the_images_own_binary_out_instead_of_building_it() -> anyhow::Result<()> {
    // What CI runs the upstream corpus and fuzzing with (`image.sh --binary harness FILE`): after
    // `just images`, the image for the current inputs exists, so the binary comes out of it.
    let dir = std::env::temp_dir().join(format!("image-binary-{}", std::process::id()));
    let file = dir.join("hpa-conformance");
    let out = std::process::Command::new(
        hpa_conformance_tests::root().join("kind-config/scripts/image.sh"),
    )
    .args(["--binary", "harness"])
    .arg(&file)
    .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        file.display().to_string()
    );
    assert!(
        stderr.contains("copied out of hpa-conformance/harness:src-"),
        "{stderr}"
    );
    // The very binary the image holds: its hash is the image's `hpa-conformance.binary` label.
    let sum = std::process::Command::new("sha256sum")
        .arg(&file)
        .output()?;
    let sum = String::from_utf8_lossy(&sum.stdout);
    let label = image_label("hpa-conformance/harness:dev", "hpa-conformance.binary")?;
    assert_eq!(&sum[..12], label, "{sum}");
    let version = std::process::Command::new(&file)
        .arg("--version")
        .output()?;
    assert!(version.status.success());
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("hpa-conformance "));
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
