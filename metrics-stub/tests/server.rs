//! The stub over real HTTPS on 127.0.0.1: a client that trusts the generated certificate puts
//! control documents (with the control token, no client certificate, as the API server's service
//! proxy connects) and reads every path the metrics clients read with the front-proxy client
//! certificate (as the aggregator connects), with exact bodies; then who is refused what, and
//! the store's caps over HTTP.

use std::net::SocketAddr;
use std::sync::Arc;

use hpa_metrics_stub::auth::{Auth, ControlToken};
use hpa_metrics_stub::control::CONTROL_TOKEN_HEADER;
use hpa_metrics_stub::server::Server;
use hpa_metrics_stub::state::{Caps, Clock, Store};
use hpa_metrics_stub::tls;
use hpa_reference::metrics_api::{ListAnswer, PodMetrics, resource_metric};
use hpa_reference::view::MetricValues;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use k8s_openapi::jiff::Timestamp;
use rstest::rstest;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// 2026-01-01T00:00:00Z, the stub's clock in these tests.
const NOW: i64 = 1_767_225_600;

struct Stub {
    server: Server,
    /// Trusts the stub's certificate.
    roots: Arc<rustls::RootCertStore>,
    pki: Pki,
}

struct Answer {
    status: u16,
    content_type: String,
    nosniff: bool,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// The control token of these tests.
const TOKEN: &str = "server-test-control-token-0123456789";

/// Who connects: the API server's front proxy, a client the front-proxy CA signed under another
/// name, a client of another CA, or a client without a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    FrontProxy,
    OtherName,
    ForeignCa,
    NoCert,
}

type ClientCert = (
    Vec<CertificateDer<'static>>,
    rustls::pki_types::PrivateKeyDer<'static>,
);

/// A requestheader (front-proxy) CA and client certificates, as kubeadm makes them.
struct Pki {
    ca: rustls::RootCertStore,
    front_proxy: ClientCert,
    other_name: ClientCert,
    foreign: ClientCert,
}

fn client_cert(issuer: &rcgen::Issuer<'_, rcgen::KeyPair>, cn: &str) -> ClientCert {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, issuer).unwrap();
    (
        vec![cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    )
}

fn ca(cn: &str) -> rcgen::CertifiedIssuer<'static, rcgen::KeyPair> {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap()).unwrap()
}

impl Pki {
    fn new() -> Pki {
        let front_proxy_ca = ca("front-proxy-ca");
        let other_ca = ca("front-proxy-ca");
        let mut roots = rustls::RootCertStore::empty();
        roots.add(front_proxy_ca.der().clone()).unwrap();
        Pki {
            ca: roots,
            front_proxy: client_cert(&front_proxy_ca, "front-proxy-client"),
            other_name: client_cert(&front_proxy_ca, "someone-else"),
            foreign: client_cert(&other_ca, "front-proxy-client"),
        }
    }
}

async fn start() -> Stub {
    start_with(Store::new(Clock::Fixed(
        Timestamp::from_second(NOW).unwrap(),
    )))
    .await
}

async fn start_with(store: Store) -> Stub {
    let identity = tls::self_signed(&[]).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(identity.cert_chain[0].clone()).unwrap();
    let pki = Pki::new();
    let auth = Auth {
        control_token: ControlToken::new(TOKEN).unwrap(),
        allowed_names: vec!["front-proxy-client".to_string()],
    };
    let certificate: Arc<str> = Arc::from(identity.cert_pem.as_str());
    let server = Server::start(
        "127.0.0.1:0".parse::<SocketAddr>().unwrap(),
        tls::server_config(identity, Some(pki.ca.clone())).unwrap(),
        certificate,
        Arc::new(store),
        Arc::new(auth),
    )
    .await
    .unwrap();
    Stub {
        server,
        roots: Arc::new(roots),
        pki,
    }
}

impl Stub {
    fn client(&self, who: Who) -> Arc<rustls::ClientConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(self.roots.clone());
        let cert = match who {
            Who::FrontProxy => &self.pki.front_proxy,
            Who::OtherName => &self.pki.other_name,
            Who::ForeignCa => &self.pki.foreign,
            Who::NoCert => return Arc::new(builder.with_no_client_auth()),
        };
        Arc::new(
            builder
                .with_client_auth_cert(cert.0.clone(), cert.1.clone_key())
                .unwrap(),
        )
    }

    /// A request as the harness makes it through the service proxy (control paths: no client
    /// certificate, the token) or as the API server's aggregator does (every other path: the
    /// front-proxy certificate).
    async fn request(
        &self,
        method: Method,
        path: &str,
        accept: Option<&str>,
        body: Option<String>,
    ) -> Answer {
        let mut headers = vec![];
        if let Some(a) = accept {
            headers.push(("accept", a.to_string()));
        }
        let who = if path.starts_with("/control") {
            headers.push((CONTROL_TOKEN_HEADER, TOKEN.to_string()));
            Who::NoCert
        } else {
            Who::FrontProxy
        };
        self.request_as(who, method, path, &headers, body)
            .await
            .unwrap()
    }

    /// One request on a new connection; `Err` when the TLS handshake fails.
    async fn request_as(
        &self,
        who: Who,
        method: Method,
        path: &str,
        headers: &[(&str, String)],
        body: Option<String>,
    ) -> Result<Answer, String> {
        let tcp = TcpStream::connect(self.server.local_addr).await.unwrap();
        let tls = TlsConnector::from(self.client(who))
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .map_err(|e| e.to_string())?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "localhost");
        for (k, v) in headers {
            request = request.header(*k, v);
        }
        let request = request
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .unwrap();
        // TLS 1.3: a refused client certificate is only known when the server's alert arrives.
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_string())
        };
        let content_type = header("content-type").unwrap_or_default();
        let nosniff = header("x-content-type-options").as_deref() == Some("nosniff");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        Ok(Answer {
            status,
            content_type,
            nosniff,
            body: String::from_utf8(body.to_vec()).unwrap(),
        })
    }

    async fn get(&self, path: &str) -> Answer {
        self.request(Method::GET, path, None, None).await
    }

    async fn put(&self, namespace: &str, doc: &Value) -> Answer {
        self.request(
            Method::PUT,
            &format!("/control/namespaces/{namespace}"),
            None,
            Some(doc.to_string()),
        )
        .await
    }
}

fn time(offset: i64) -> String {
    Timestamp::from_second(NOW + offset)
        .unwrap()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Three pods (two `app=web`, one `app=db`), each with PodMetrics, per-pod custom values, an
/// object value and an external series.
fn document() -> Value {
    json!({
        "pods": {
            "web-b": {"app": "web", "tier": "front"},
            "web-a": {"app": "web"},
            "db-0": {"app": "db"}
        },
        "metrics": {
            "resource": {"items": [
                {"metadata": {"name": "web-b"}, "timestamp": time(-10), "window": "30s",
                 "containers": [{"name": "app", "usage": {"cpu": "300m", "memory": "10Mi"}},
                                {"name": "side", "usage": {"cpu": "50m"}}]},
                {"metadata": {"name": "web-a", "labels": {"app": "stale"}}, "timestamp": time(-5), "window": "1m0s",
                 "containers": [{"name": "app", "usage": {"cpu": "250m"}}]},
                {"metadata": {"name": "db-0"}, "timestamp": time(-5), "window": "30s",
                 "containers": [{"name": "db", "usage": {"cpu": "1"}}]},
                {"metadata": {"name": "stray", "labels": {"app": "other"}}, "timestamp": time(-5),
                 "window": "30s", "containers": [{"name": "app", "usage": {"cpu": "2"}}]}
            ]},
            "pods": {"rps": {"items": [
                {"pod": "web-a", "value": "10", "timestamp": time(-1), "windowSeconds": 30},
                {"pod": "web-b", "value": "1500m", "timestamp": time(-1)},
                {"pod": "db-0", "value": "7", "timestamp": time(-1)}
            ]}},
            "object": {"hits": {"value": {"value": "42", "timestamp": time(-2)}}},
            "external": {"queue": {"items": [
                {"value": "5", "timestamp": time(-3)},
                {"value": "6", "timestamp": time(-3)}
            ]}}
        }
    })
}

fn with_faults(faults: Value) -> Value {
    let mut doc = document();
    doc["faults"] = faults;
    doc
}

fn with_errors(mut doc: Value) -> Value {
    doc["metrics"]["resource"] = json!({"error": "resource broke"});
    doc["metrics"]["pods"]["rps"] = json!({"error": "pods broke"});
    doc["metrics"]["object"]["hits"] = json!({"error": "object broke"});
    doc["metrics"]["external"]["queue"] = json!({"error": "external broke"});
    doc
}

const PODS: &str = "/apis/metrics.k8s.io/v1beta1/namespaces/case/pods";
const CUSTOM_PODS: &str = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/case/pods/%2A/rps";
const OBJECT: &str =
    "/apis/custom.metrics.k8s.io/v1beta2/namespaces/case/deployments.apps/web/hits";
const EXTERNAL: &str = "/apis/external.metrics.k8s.io/v1beta1/namespaces/case/queue";

#[tokio::test]
async fn resource_metrics_are_filtered_by_the_pods_labels() {
    let stub = start().await;
    assert_eq!(stub.put("case", &document()).await.status, 201);

    let web = stub.get(&format!("{PODS}?labelSelector=app%3Dweb")).await;
    assert_eq!(web.status, 200);
    assert_eq!(web.content_type, "application/json");
    assert_eq!(
        web.body,
        format!(
            concat!(
                r#"{{"kind":"PodMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{{}},"items":["#,
                r#"{{"metadata":{{"creationTimestamp":"{now}","labels":{{"app":"web"}},"name":"web-a","namespace":"case"}},"timestamp":"{a}","window":"1m0s","containers":[{{"name":"app","usage":{{"cpu":"250m"}}}}]}},"#,
                r#"{{"metadata":{{"creationTimestamp":"{now}","labels":{{"app":"web","tier":"front"}},"name":"web-b","namespace":"case"}},"timestamp":"{b}","window":"30s","containers":[{{"name":"app","usage":{{"cpu":"300m","memory":"10Mi"}}}},{{"name":"side","usage":{{"cpu":"50m"}}}}]}}"#,
                "]}}\n"
            ),
            now = time(0),
            a = time(-5),
            b = time(-10)
        )
    );

    // Set-based and negative selectors, and no selector at all.
    let names = |a: &Answer| -> Vec<String> {
        a.json()["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    let front = stub
        .get(&format!("{PODS}?labelSelector=app+in+%28web%29%2Ctier"))
        .await;
    assert_eq!(names(&front), ["web-b"]);
    let not_web = stub
        .get(&format!("{PODS}?labelSelector=app%21%3Dweb"))
        .await;
    assert_eq!(names(&not_web), ["db-0", "stray"]);
    let all = stub.get(PODS).await;
    assert_eq!(names(&all), ["db-0", "stray", "web-a", "web-b"]);
    // A pod the document does not list is selected by the item's own labels.
    let other = stub.get(&format!("{PODS}?labelSelector=app%3Dother")).await;
    assert_eq!(names(&other), ["stray"]);
    assert_eq!(
        other.json()["items"][0]["metadata"]["labels"],
        json!({"app": "other"})
    );

    // What the stub sends reads, through the reference's model of upstream's metrics client, as
    // the document's own answer filtered to the selected pods.
    let items: Vec<PodMetrics> = serde_json::from_value(web.json()["items"].clone()).unwrap();
    let reading = resource_metric(
        &ListAnswer { items, error: None },
        "cpu",
        None,
        hpa_reference::KubernetesVersion::DEFAULT.changes(),
    )
    .unwrap();
    let MetricValues::PerPod { samples, .. } = reading else {
        panic!("per-pod samples expected")
    };
    assert_eq!(samples["web-a"].value, 250);
    assert_eq!(samples["web-b"].value, 350);
    assert_eq!(samples.len(), 2);

    // An invalid selector is a 400 Status.
    let bad = stub
        .get(&format!("{PODS}?labelSelector=app%3D%3Dweb+b"))
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["reason"], "BadRequest");
}

#[tokio::test]
async fn one_pod_and_all_namespaces() {
    let stub = start().await;
    stub.put("case", &document()).await;
    let one = stub.get(&format!("{PODS}/web-a")).await;
    assert_eq!(one.status, 200);
    assert_eq!(
        one.body,
        format!(
            concat!(
                r#"{{"kind":"PodMetrics","apiVersion":"metrics.k8s.io/v1beta1","metadata":{{"creationTimestamp":"{now}","labels":{{"app":"web"}},"name":"web-a","namespace":"case"}},"#,
                r#""timestamp":"{a}","window":"1m0s","containers":[{{"name":"app","usage":{{"cpu":"250m"}}}}]}}"#,
                "\n"
            ),
            now = time(0),
            a = time(-5)
        )
    );
    let missing = stub.get(&format!("{PODS}/nope")).await;
    assert_eq!(missing.status, 404);
    assert_eq!(
        missing.body,
        concat!(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"podmetrics.metrics.k8s.io \"case/nope\" not found","reason":"NotFound","details":{"name":"case/nope","group":"metrics.k8s.io","kind":"podmetrics"},"code":404}"#,
            "\n"
        )
    );
    stub.put("other", &document()).await;
    let all = stub
        .get("/apis/metrics.k8s.io/v1beta1/pods?labelSelector=app%3Ddb")
        .await;
    let namespaces: Vec<String> = all.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["namespace"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(namespaces, ["case", "other"]);
    let nodes = stub.get("/apis/metrics.k8s.io/v1beta1/nodes").await;
    assert_eq!(
        nodes.body,
        "{\"kind\":\"NodeMetricsList\",\"apiVersion\":\"metrics.k8s.io/v1beta1\",\"metadata\":{},\"items\":[]}\n"
    );
}

#[tokio::test]
async fn custom_pod_metrics_v1beta2_and_v1beta1() {
    let stub = start().await;
    stub.put("case", &document()).await;
    let v2 = stub
        .get(&format!(
            "{CUSTOM_PODS}?labelSelector=app%3Dweb&metricLabelSelector=verb+in+%28GET%2CPUT%29%2Ccode%3D200"
        ))
        .await;
    assert_eq!(v2.status, 200);
    let selector = r#"{"matchLabels":{"code":"200"},"matchExpressions":[{"key":"verb","operator":"In","values":["GET","PUT"]}]}"#;
    assert_eq!(
        v2.body,
        format!(
            concat!(
                r#"{{"kind":"MetricValueList","apiVersion":"custom.metrics.k8s.io/v1beta2","metadata":{{}},"items":["#,
                r#"{{"describedObject":{{"kind":"Pod","namespace":"case","name":"web-a","apiVersion":"/v1"}},"metric":{{"name":"rps","selector":{sel}}},"timestamp":"{t}","windowSeconds":30,"value":"10"}},"#,
                r#"{{"describedObject":{{"kind":"Pod","namespace":"case","name":"web-b","apiVersion":"/v1"}},"metric":{{"name":"rps","selector":{sel}}},"timestamp":"{t}","value":"1500m"}}"#,
                "]}}\n"
            ),
            sel = selector,
            t = time(-1)
        )
    );
    let v1 = stub
        .get("/apis/custom.metrics.k8s.io/v1beta1/namespaces/case/pods/%2A/rps?labelSelector=app%3Ddb")
        .await;
    assert_eq!(
        v1.body,
        format!(
            concat!(
                r#"{{"kind":"MetricValueList","apiVersion":"custom.metrics.k8s.io/v1beta1","metadata":{{}},"items":["#,
                r#"{{"describedObject":{{"kind":"Pod","namespace":"case","name":"db-0","apiVersion":"/v1"}},"metricName":"rps","timestamp":"{t}","value":"7","selector":null}}"#,
                "]}}\n"
            ),
            t = time(-1)
        )
    );
    // One pod's value by name.
    let one = stub
        .get("/apis/custom.metrics.k8s.io/v1beta2/namespaces/case/pods/web-b/rps")
        .await;
    assert_eq!(one.json()["items"][0]["value"], "1500m");
    assert_eq!(one.json()["items"].as_array().unwrap().len(), 1);
    // A metric nobody set: an empty list (upstream's client then reports "no metrics returned").
    let none = stub
        .get("/apis/custom.metrics.k8s.io/v1beta2/namespaces/case/pods/%2A/absent")
        .await;
    assert_eq!(
        none.body,
        "{\"kind\":\"MetricValueList\",\"apiVersion\":\"custom.metrics.k8s.io/v1beta2\",\"metadata\":{},\"items\":[]}\n"
    );
}

#[tokio::test]
async fn object_metrics_answer_exactly_one_value() {
    let stub = start().await;
    stub.put("case", &document()).await;
    let object = stub.get(OBJECT).await;
    assert_eq!(
        object.body,
        format!(
            concat!(
                r#"{{"kind":"MetricValueList","apiVersion":"custom.metrics.k8s.io/v1beta2","metadata":{{}},"items":["#,
                r#"{{"describedObject":{{"kind":"Deployment","namespace":"case","name":"web","apiVersion":"apps/v1"}},"metric":{{"name":"hits","selector":null}},"timestamp":"{t}","value":"42"}}"#,
                "]}}\n"
            ),
            t = time(-2)
        )
    );
    // The HPA asks for a Namespace's metric on the namespace path.
    let namespace = stub
        .get("/apis/custom.metrics.k8s.io/v1beta2/namespaces/case/metrics/hits")
        .await;
    assert_eq!(
        namespace.json()["items"][0]["describedObject"],
        json!({"kind": "Namespace", "name": "case", "apiVersion": "/v1"})
    );
    let absent = stub
        .get("/apis/custom.metrics.k8s.io/v1beta2/namespaces/case/services/front/absent")
        .await;
    assert_eq!(absent.status, 404);
    assert_eq!(
        absent.body,
        concat!(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the metric absent for services front","reason":"NotFound","code":404}"#,
            "\n"
        )
    );
}

#[tokio::test]
async fn external_metrics_list_the_series() {
    let stub = start().await;
    stub.put("case", &document()).await;
    let series = stub
        .get(&format!("{EXTERNAL}?labelSelector=queue%3Dorders"))
        .await;
    assert_eq!(
        series.body,
        format!(
            concat!(
                r#"{{"kind":"ExternalMetricValueList","apiVersion":"external.metrics.k8s.io/v1beta1","metadata":{{}},"items":["#,
                r#"{{"metricName":"queue","metricLabels":{{}},"timestamp":"{t}","value":"5"}},"#,
                r#"{{"metricName":"queue","metricLabels":{{}},"timestamp":"{t}","value":"6"}}"#,
                "]}}\n"
            ),
            t = time(-3)
        )
    );
}

#[rstest]
#[case::resource_default_500(json!({}), PODS, 500, "", "resource broke")]
#[case::custom_pods_503(json!({"custom": {"errorCode": 503}}), CUSTOM_PODS, 503, "ServiceUnavailable", "pods broke")]
#[case::object_403(json!({"custom": {"errorCode": 403}}), OBJECT, 403, "Forbidden", "object broke")]
#[case::external_reason_override(json!({"external": {"errorCode": 429, "errorReason": "Slow"}}), EXTERNAL, 429, "Slow", "external broke")]
#[tokio::test]
async fn errors_are_statuses_with_the_error_text(
    #[case] faults: Value,
    #[case] path: &str,
    #[case] code: u16,
    #[case] reason: &str,
    #[case] message: &str,
) {
    let stub = start().await;
    stub.put("case", &with_errors(with_faults(faults))).await;
    let answer = stub.get(path).await;
    assert_eq!(answer.status, code);
    assert_eq!(answer.content_type, "application/json");
    let reason = if reason.is_empty() {
        String::new()
    } else {
        format!(r#","reason":"{reason}""#)
    };
    assert_eq!(
        answer.body,
        format!(
            r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"{message}"{reason},"code":{code}}}"#
        ) + "\n"
    );
}

#[rstest]
#[case::resource(json!({"resource": {"mode": "unregistered"}}), PODS)]
#[case::custom_pods(json!({"custom": {"mode": "unregistered"}}), CUSTOM_PODS)]
#[case::custom_object(json!({"custom": {"mode": "unregistered"}}), OBJECT)]
#[case::external(json!({"external": {"mode": "unregistered"}}), EXTERNAL)]
#[tokio::test]
async fn unregistered_apis_answer_page_not_found(#[case] faults: Value, #[case] path: &str) {
    let stub = start().await;
    stub.put("case", &with_errors(with_faults(faults))).await;
    let answer = stub.get(path).await;
    assert_eq!(answer.status, 404);
    assert_eq!(answer.content_type, "text/plain; charset=utf-8");
    assert!(answer.nosniff);
    assert_eq!(answer.body, "404 page not found\n");
    // Another namespace is unaffected.
    stub.put("calm", &document()).await;
    let calm = stub.get(&path.replace("/case/", "/calm/")).await;
    assert_eq!(calm.status, 200, "{}", calm.body);
}

#[rstest]
#[case("/apis")]
#[case("/apis/metrics.k8s.io")]
#[case("/apis/metrics.k8s.io/v1beta1")]
#[case("/apis/custom.metrics.k8s.io")]
#[case("/apis/custom.metrics.k8s.io/v1beta2")]
#[case("/apis/custom.metrics.k8s.io/v1beta1")]
#[case("/apis/external.metrics.k8s.io")]
#[case("/apis/external.metrics.k8s.io/v1beta1")]
#[case("/healthz")]
#[case("/readyz")]
#[case("/livez")]
#[case("/openapi/v2")]
#[case("/openapi/v3")]
#[tokio::test]
async fn discovery_and_health_are_never_faulted(#[case] path: &str) {
    let stub = start().await;
    let before = stub.get(path).await;
    assert_eq!(before.status, 200, "{}", before.body);
    let all = json!({
        "resource": {"mode": "unregistered"},
        "custom": {"errorCode": 503},
        "external": {"mode": "unregistered"}
    });
    stub.put("case", &with_errors(with_faults(all))).await;
    let after = stub.get(path).await;
    assert_eq!(after.status, 200);
    assert_eq!(after.body, before.body);
}

#[tokio::test]
async fn discovery_documents() {
    let stub = start().await;
    let legacy = stub.get("/apis").await;
    assert_eq!(legacy.content_type, "application/json");
    assert_eq!(
        legacy.body,
        concat!(
            r#"{"kind":"APIGroupList","apiVersion":"v1","groups":["#,
            r#"{"name":"metrics.k8s.io","versions":[{"groupVersion":"metrics.k8s.io/v1beta1","version":"v1beta1"}],"preferredVersion":{"groupVersion":"metrics.k8s.io/v1beta1","version":"v1beta1"}},"#,
            r#"{"name":"custom.metrics.k8s.io","versions":[{"groupVersion":"custom.metrics.k8s.io/v1beta2","version":"v1beta2"},{"groupVersion":"custom.metrics.k8s.io/v1beta1","version":"v1beta1"}],"preferredVersion":{"groupVersion":"custom.metrics.k8s.io/v1beta2","version":"v1beta2"}},"#,
            r#"{"name":"external.metrics.k8s.io","versions":[{"groupVersion":"external.metrics.k8s.io/v1beta1","version":"v1beta1"}],"preferredVersion":{"groupVersion":"external.metrics.k8s.io/v1beta1","version":"v1beta1"}}"#,
            "]}\n"
        )
    );

    // What kube-aggregator's discovery manager asks for.
    let aggregated = stub
        .request(
            Method::GET,
            "/apis",
            Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"),
            None,
        )
        .await;
    assert_eq!(
        aggregated.content_type,
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    assert_eq!(
        aggregated.body,
        concat!(
            r#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":["#,
            r#"{"metadata":{"name":"metrics.k8s.io","creationTimestamp":null},"versions":[{"version":"v1beta1","resources":["#,
            r#"{"resource":"nodes","responseKind":{"group":"metrics.k8s.io","version":"v1beta1","kind":"NodeMetrics"},"scope":"Cluster","singularResource":"","verbs":["get","list"]},"#,
            r#"{"resource":"pods","responseKind":{"group":"metrics.k8s.io","version":"v1beta1","kind":"PodMetrics"},"scope":"Namespaced","singularResource":"","verbs":["get","list"]}"#,
            r#"],"freshness":"Current"}]},"#,
            r#"{"metadata":{"name":"custom.metrics.k8s.io","creationTimestamp":null},"versions":[{"version":"v1beta2","freshness":"Current"},{"version":"v1beta1","freshness":"Current"}]},"#,
            r#"{"metadata":{"name":"external.metrics.k8s.io","creationTimestamp":null},"versions":[{"version":"v1beta1","freshness":"Current"}]}"#,
            "]}\n"
        )
    );

    let resources = stub.get("/apis/metrics.k8s.io/v1beta1").await;
    assert_eq!(
        resources.body,
        concat!(
            r#"{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"metrics.k8s.io/v1beta1","resources":["#,
            r#"{"name":"nodes","singularName":"","namespaced":false,"kind":"NodeMetrics","verbs":["get","list"]},"#,
            r#"{"name":"pods","singularName":"","namespaced":true,"kind":"PodMetrics","verbs":["get","list"]}"#,
            "]}\n"
        )
    );
    let custom = stub.get("/apis/custom.metrics.k8s.io/v1beta2").await;
    assert_eq!(
        custom.body,
        "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\",\"groupVersion\":\"custom.metrics.k8s.io/v1beta2\",\"resources\":[]}\n"
    );
    let group = stub.get("/apis/custom.metrics.k8s.io").await;
    assert_eq!(group.json()["kind"], "APIGroup");
    assert_eq!(
        group.json()["preferredVersion"]["groupVersion"],
        "custom.metrics.k8s.io/v1beta2"
    );

    let v2 = stub.get("/openapi/v2").await;
    assert_eq!(
        (v2.status, v2.body.as_str()),
        (
            200,
            format!(
                "{{\"swagger\":\"2.0\",\"info\":{{\"title\":\"hpa-metrics-stub\",\"version\":\"{}\"}},\"paths\":{{}}}}\n",
                env!("CARGO_PKG_VERSION")
            )
            .as_str()
        )
    );
    let v3 = stub.get("/openapi/v3").await;
    assert_eq!((v3.status, v3.body.as_str()), (200, "{\"paths\":{}}\n"));
    for path in ["/apis/apps/v1", "/api", "/"] {
        let answer = stub.get(path).await;
        assert_eq!(
            (answer.status, answer.body.as_str()),
            (404, "404 page not found\n"),
            "{path}"
        );
    }
    let health = stub.get("/healthz").await;
    assert_eq!((health.status, health.body.as_str()), (200, "ok"));
}

#[tokio::test]
async fn a_namespace_never_configured_has_no_data() {
    let stub = start().await;
    let empty = |kind: &str, api_version: &str| {
        format!(
            "{{\"kind\":\"{kind}\",\"apiVersion\":\"{api_version}\",\"metadata\":{{}},\"items\":[]}}\n"
        )
    };
    assert_eq!(
        stub.get(PODS).await.body,
        empty("PodMetricsList", "metrics.k8s.io/v1beta1")
    );
    assert_eq!(
        stub.get(CUSTOM_PODS).await.body,
        empty("MetricValueList", "custom.metrics.k8s.io/v1beta2")
    );
    assert_eq!(
        stub.get(EXTERNAL).await.body,
        empty("ExternalMetricValueList", "external.metrics.k8s.io/v1beta1")
    );
    let object = stub.get(OBJECT).await;
    assert_eq!(object.status, 404);
    assert_eq!(
        object.json()["message"],
        "the server could not find the metric hits for deployments.apps web"
    );
}

/// The readiness probes the cluster lane sends through the aggregator: one per group version
/// served, each a 200 list for a namespace without a document.
#[tokio::test]
async fn the_probe_paths_answer_an_empty_list_for_every_group_version() {
    let stub = start().await;
    let probes = hpa_metrics_stub::control::probe_paths("hpa-conformance-system");
    let served: Vec<&str> = probes.iter().map(|(gv, _)| gv.as_str()).collect();
    assert_eq!(
        served,
        [
            "metrics.k8s.io/v1beta1",
            "custom.metrics.k8s.io/v1beta2",
            "custom.metrics.k8s.io/v1beta1",
            "external.metrics.k8s.io/v1beta1"
        ]
    );
    for (gv, path) in &probes {
        let reply = stub.get(path).await;
        assert_eq!(reply.status, 200, "{gv}: {path}: {}", reply.body);
        let body = reply.json();
        assert_eq!(body["apiVersion"], gv.as_str(), "{path}");
        assert_eq!(body["items"], serde_json::json!([]), "{path}");
    }
}

#[tokio::test]
async fn the_control_api() {
    let stub = start().await;
    let doc = document();
    assert_eq!(stub.put("case", &doc).await.status, 201);
    assert_eq!(stub.put("case", &doc).await.status, 200);
    stub.put("another", &json!({})).await;

    let read = stub.get("/control/namespaces/case").await;
    assert_eq!(read.status, 200);
    let expected: hpa_metrics_stub::ControlDocument = serde_json::from_value(doc).unwrap();
    let got: hpa_metrics_stub::ControlDocument = serde_json::from_str(&read.body).unwrap();
    assert_eq!(got, expected);

    assert_eq!(
        stub.get("/control/namespaces").await.json(),
        json!({"namespaces": ["another", "case"]})
    );

    // Request counts, by decoded path and query.
    stub.get(&format!("{PODS}?labelSelector=app%3Dweb")).await;
    stub.get(&format!("{PODS}?labelSelector=app%3Dweb")).await;
    stub.get(CUSTOM_PODS).await;
    stub.get("/apis/metrics.k8s.io/v1beta1").await;
    assert_eq!(
        stub.get("/control/namespaces/case/requests").await.json(),
        json!({"requests": {
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/case/pods/*/rps": 1,
            "/apis/metrics.k8s.io/v1beta1/namespaces/case/pods?labelSelector=app=web": 2
        }})
    );
    // Their instants (the stub's fixed clock), every namespace at once; discovery is not counted.
    let times = stub.get("/control/request-times").await.json();
    let case = times["namespaces"]["case"]
        .as_array()
        .expect("the namespace's times");
    assert_eq!(case.len(), 3, "{times}");
    assert!(
        case.iter()
            .all(|t| t.as_i64() == case[0].as_i64() && t.as_i64() > Some(0)),
        "{times}"
    );
    assert_eq!(
        times["namespaces"].as_object().map(|o| o.len()),
        Some(1),
        "{times}"
    );
    let reset = stub
        .request(
            Method::DELETE,
            "/control/namespaces/case/requests",
            None,
            None,
        )
        .await;
    assert_eq!(reset.json(), json!({"requests": {}}));
    assert_eq!(
        stub.get("/control/request-times").await.json(),
        json!({"namespaces": {}})
    );

    let deleted = stub
        .request(Method::DELETE, "/control/namespaces/case", None, None)
        .await;
    assert_eq!(deleted.status, 200);
    let gone = stub.get("/control/namespaces/case").await;
    assert_eq!(gone.status, 404);
    assert_eq!(
        gone.json()["message"],
        "no control document for namespace \"case\""
    );
    assert_eq!(stub.get(PODS).await.json()["items"], json!([]));

    let bad_json = stub
        .request(Method::PUT, "/control/namespaces/x", None, Some("{".into()))
        .await;
    assert_eq!(bad_json.status, 400);
    let unknown_field = stub.put("x", &json!({"metric": {}})).await;
    assert_eq!(unknown_field.status, 400);
    let bad_code = stub
        .put("x", &json!({"faults": {"resource": {"errorCode": 302}}}))
        .await;
    assert_eq!(bad_code.status, 422);
    assert_eq!(
        bad_code.json()["message"],
        "invalid control document: faults.resource.errorCode 302 is not an HTTP error status (400-599)"
    );
    assert_eq!(stub.get("/control/namespaces/x").await.status, 404);

    let post = stub.request(Method::POST, PODS, None, None).await;
    assert_eq!(post.status, 405);
    stub.server.shutdown().await;
}

#[tokio::test]
async fn the_control_api_needs_the_token() {
    let stub = start().await;
    let doc = document().to_string();
    let put = |who: Who, headers: Vec<(&'static str, String)>, body: String| {
        let stub = &stub;
        async move {
            stub.request_as(
                who,
                Method::PUT,
                "/control/namespaces/case",
                &headers,
                Some(body),
            )
            .await
            .unwrap()
        }
    };
    let missing = put(Who::NoCert, vec![], doc.clone()).await;
    assert_eq!(missing.status, 401, "{}", missing.body);
    assert_eq!(missing.json()["reason"], "Unauthorized");
    assert_eq!(
        missing.json()["message"],
        "the control API needs the token of Secret hpa-conformance-system/hpa-metrics-stub-control \
         (key token) in the x-hpa-metrics-stub-token header (or Authorization: Bearer on a direct connection)"
    );
    // Checked before the body is read: a body over the size cap is still a 401.
    let huge = put(Who::NoCert, vec![], "x".repeat(8 << 20)).await;
    assert_eq!(huge.status, 401);
    let wrong = put(
        Who::NoCert,
        vec![(CONTROL_TOKEN_HEADER, format!("{TOKEN}x"))],
        doc.clone(),
    )
    .await;
    assert_eq!(wrong.status, 401);
    assert!(
        wrong.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid control token")
    );
    // The front-proxy certificate is no control credential.
    let front_proxy = put(Who::FrontProxy, vec![], doc.clone()).await;
    assert_eq!(front_proxy.status, 401);
    for path in [
        "/control/namespaces",
        "/control/namespaces/case",
        "/control/namespaces/case/requests",
        "/control/request-times",
    ] {
        let read = stub
            .request_as(Who::NoCert, Method::GET, path, &[], None)
            .await
            .unwrap();
        assert_eq!(read.status, 401, "{path}");
    }
    assert_eq!(
        stub.get("/control/namespaces").await.json(),
        json!({"namespaces": []}),
        "nothing was stored"
    );
    // A direct connection may send it as a bearer token.
    let bearer = put(
        Who::NoCert,
        vec![("authorization", format!("Bearer {TOKEN}"))],
        doc,
    )
    .await;
    assert_eq!(bearer.status, 201, "{}", bearer.body);
    stub.server.shutdown().await;
}

#[tokio::test]
async fn the_metrics_apis_answer_only_the_front_proxy() {
    let stub = start().await;
    assert_eq!(stub.put("case", &document()).await.status, 201);
    for path in [
        PODS,
        CUSTOM_PODS,
        EXTERNAL,
        "/apis",
        "/apis/metrics.k8s.io/v1beta1",
        "/openapi/v2",
        "/no/such/path",
    ] {
        let none = stub
            .request_as(Who::NoCert, Method::GET, path, &[], None)
            .await
            .unwrap();
        assert_eq!(none.status, 401, "{path}: {}", none.body);
        assert_eq!(none.json()["reason"], "Unauthorized", "{path}");
        let other = stub
            .request_as(Who::OtherName, Method::GET, path, &[], None)
            .await
            .unwrap();
        assert_eq!(other.status, 403, "{path}: {}", other.body);
        assert_eq!(
            other.json()["message"],
            "client certificate CN \"someone-else\" is not an allowed front-proxy name (front-proxy-client)"
        );
        let foreign = stub
            .request_as(Who::ForeignCa, Method::GET, path, &[], None)
            .await;
        assert!(
            foreign.is_err(),
            "{path}: another CA's certificate was let in"
        );
    }
    // The control token is no metrics credential.
    let token = stub
        .request_as(
            Who::NoCert,
            Method::GET,
            PODS,
            &[(CONTROL_TOKEN_HEADER, TOKEN.to_string())],
            None,
        )
        .await
        .unwrap();
    assert_eq!(token.status, 401);
    assert_eq!(
        stub.get("/control/namespaces/case/requests").await.json(),
        json!({"requests": {}}),
        "refused requests are not counted"
    );
    assert_eq!(stub.get(PODS).await.status, 200);
    for path in ["/healthz", "/readyz", "/livez"] {
        let health = stub
            .request_as(Who::NoCert, Method::GET, path, &[], None)
            .await
            .unwrap();
        assert_eq!((health.status, health.body.as_str()), (200, "ok"), "{path}");
    }
    stub.server.shutdown().await;
}

#[tokio::test]
async fn the_caps_refuse_what_exceeds_them_with_clear_statuses() {
    let caps = Caps {
        max_namespaces: 2,
        max_document_bytes: 4096,
        ..Caps::DEFAULT
    };
    let stub = start_with(Store::with_caps(
        Clock::Fixed(Timestamp::from_second(NOW).unwrap()),
        caps,
    ))
    .await;
    let doc = json!({"pods": {"web-1": {"app": "web"}}});
    let large = json!({"pods": {"web-1": {"app": "w".repeat(5000)}}});
    let too_large = stub.put("a", &large).await;
    assert_eq!(too_large.status, 413, "{}", too_large.body);
    assert_eq!(too_large.json()["reason"], "RequestEntityTooLarge");
    assert_eq!(
        too_large.json()["message"],
        "the control document has more than the cap of 4096 bytes"
    );
    assert_eq!(stub.put("a", &doc).await.status, 201);
    assert_eq!(stub.put("b", &doc).await.status, 201);
    let full = stub.put("c", &doc).await;
    assert_eq!(full.status, 429, "{}", full.body);
    assert_eq!(full.json()["reason"], "TooManyRequests");
    assert!(
        full.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("2 namespaces already have a document (the cap)"),
        "{}",
        full.body
    );
    assert_eq!(stub.put("b", &doc).await.status, 200, "a replacement fits");
    for bad in ["Bad_Name", "-a", &"n".repeat(64)] {
        let r = stub.put(bad, &doc).await;
        assert_eq!(r.status, 422, "{bad}: {}", r.body);
    }
    assert_eq!(
        stub.get("/control/namespaces").await.json(),
        json!({"namespaces": ["a", "b"]})
    );
    stub.server.shutdown().await;
}

#[tokio::test]
async fn the_scale_webhook_answers_without_a_client_certificate_and_the_certificate_needs_the_token()
 {
    let stub = start().await;
    let mut doc = document();
    doc["scale"] = json!({"web": {"updateError": "something went wrong", "updateFailures": 1}});
    assert_eq!(stub.put("case", &doc).await.status, 201);
    let review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "u-1", "name": "web", "namespace": "case", "operation": "UPDATE",
                    "subResource": "scale"}
    })
    .to_string();
    // As the API server calls a webhook: no client certificate, no token.
    let json_type = [("content-type", "application/json".to_string())];
    let ask = || {
        stub.request_as(
            Who::NoCert,
            Method::POST,
            "/admission/scale",
            &json_type,
            Some(review.clone()),
        )
    };
    let denied: Value = serde_json::from_str(&ask().await.unwrap().body).unwrap();
    assert_eq!(denied["response"]["uid"], "u-1");
    assert_eq!(denied["response"]["allowed"], false);
    assert_eq!(
        denied["response"]["status"]["message"],
        "something went wrong"
    );
    let allowed: Value = serde_json::from_str(&ask().await.unwrap().body).unwrap();
    assert_eq!(allowed["response"]["allowed"], true, "one failure only");

    // The serving certificate, for a webhook's caBundle: the one the TLS handshake presented.
    let pem = stub.get("/control/certificate").await;
    assert_eq!(pem.status, 200);
    assert!(
        pem.body.starts_with("-----BEGIN CERTIFICATE-----"),
        "{}",
        pem.body
    );
    let without_token = stub
        .request_as(Who::NoCert, Method::GET, "/control/certificate", &[], None)
        .await
        .unwrap();
    assert_eq!(without_token.status, 401);
}
