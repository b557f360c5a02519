//! The recorder against a fake API server: what it creates, what it patches.

use std::sync::{Arc, Mutex};

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec,
};
use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::*;
use crate::outcome::EventType;

const T0: Time = Time::from_secs(1_700_000_000);

/// One request the fake server saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    content_type: String,
    body: Value,
}

/// A fake events API: keeps the Events it creates, applies merge patches to them, and answers
/// 404 for a patch of an Event it does not have.
#[derive(Clone, Default)]
struct FakeEvents {
    seen: Arc<Mutex<Vec<Seen>>>,
    stored: Arc<Mutex<Vec<Value>>>,
}

impl Respond for FakeEvents {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let content_type = req
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        self.seen.lock().expect("seen").push(Seen {
            method: req.method.to_string(),
            path: req.url.path().to_string(),
            content_type,
            body: body.clone(),
        });
        let mut stored = self.stored.lock().expect("stored");
        match req.method.as_str() {
            "POST" => {
                stored.push(body.clone());
                ResponseTemplate::new(201).set_body_json(body)
            }
            "PATCH" => {
                let name = req.url.path().rsplit('/').next().unwrap_or_default();
                match stored.iter_mut().find(|e| e["metadata"]["name"] == name) {
                    Some(e) => {
                        for (k, v) in body.as_object().into_iter().flatten() {
                            e[k] = v.clone();
                        }
                        ResponseTemplate::new(200).set_body_json(e.clone())
                    }
                    None => ResponseTemplate::new(404).set_body_json(json!({
                        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": format!("events \"{name}\" not found"), "reason": "NotFound",
                        "code": 404
                    })),
                }
            }
            _ => ResponseTemplate::new(405),
        }
    }
}

async fn server() -> (MockServer, FakeEvents, Client) {
    let server = MockServer::start().await;
    let fake = FakeEvents::default();
    Mock::given(wiremock::matchers::path_regex(
        "^/api/v1/namespaces/default/events",
    ))
    .respond_with(fake.clone())
    .mount(&server)
    .await;
    let mut config = kube::Config::new(server.uri().parse().expect("uri"));
    config.default_retry = false;
    let client = Client::try_from(config).expect("client");
    (server, fake, client)
}

fn hpa() -> HorizontalPodAutoscaler {
    HorizontalPodAutoscaler {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            uid: Some("1234".into()),
            resource_version: Some("42".into()),
            ..ObjectMeta::default()
        },
        spec: HorizontalPodAutoscalerSpec {
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some("apps/v1".into()),
                kind: "Deployment".into(),
                name: "web".into(),
            },
            max_replicas: 10,
            ..HorizontalPodAutoscalerSpec::default()
        },
        status: None,
    }
}

fn rescaled(size: i32) -> Event {
    Event {
        type_: EventType::Normal,
        reason: "SuccessfulRescale".into(),
        message: format!(
            "New size: {size}; reason: cpu resource utilization (percentage of request) above target"
        ),
    }
}

fn secs(s: i64) -> Time {
    Time::from_micros(T0.as_micros() + s * 1_000_000)
}

#[tokio::test]
async fn a_repeated_event_is_created_once_then_patched_with_count_2() {
    let (_server, fake, client) = server().await;
    let recorder = Recorder::new("horizontal-pod-autoscaler");
    let h = hpa();
    assert_eq!(
        recorder.record(&client, &h, &rescaled(4), secs(0)).await,
        Ok(true)
    );
    assert_eq!(
        recorder.record(&client, &h, &rescaled(4), secs(15)).await,
        Ok(true)
    );

    let seen = fake.seen.lock().expect("seen").clone();
    let calls: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.path.as_str()))
        .collect();
    let name = format!("web.{:x}", secs(0).as_micros() * 1000);
    let patched = format!("/api/v1/namespaces/default/events/{name}");
    assert_eq!(
        calls,
        [
            ("POST", "/api/v1/namespaces/default/events"),
            ("PATCH", patched.as_str()),
        ]
    );
    assert_eq!(
        seen[1].content_type, "application/strategic-merge-patch+json",
        "a strategic merge patch, as client-go sends"
    );
    assert_eq!(
        seen[1].body,
        json!({
            "count": 2,
            "lastTimestamp": "2023-11-14T22:13:35Z",
            "message": rescaled(4).message,
        })
    );
    // One Event on the server, counted twice.
    let stored = fake.stored.lock().expect("stored").clone();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["count"], json!(2));
    assert_eq!(stored[0]["firstTimestamp"], json!("2023-11-14T22:13:20Z"));
    assert_eq!(stored[0]["lastTimestamp"], json!("2023-11-14T22:13:35Z"));
}

#[tokio::test]
async fn a_new_event_has_kube_controller_managers_fields() {
    let (_server, fake, client) = server().await;
    let recorder = Recorder::new("horizontal-pod-autoscaler");
    recorder
        .record(&client, &hpa(), &rescaled(4), secs(0))
        .await
        .expect("recorded");
    let created = fake.seen.lock().expect("seen")[0].body.clone();
    let name = format!("web.{:x}", secs(0).as_micros() * 1000);
    assert_eq!(created["metadata"]["name"], json!(name));
    assert_eq!(created["metadata"]["namespace"], json!("default"));
    assert_eq!(
        created["involvedObject"],
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "name": "web",
               "namespace": "default", "uid": "1234", "resourceVersion": "42"})
    );
    assert_eq!(
        created["source"],
        json!({"component": "horizontal-pod-autoscaler"})
    );
    assert_eq!(
        created["reportingComponent"],
        json!("horizontal-pod-autoscaler")
    );
    assert_eq!(created["reason"], json!("SuccessfulRescale"));
    assert_eq!(created["type"], json!("Normal"));
    assert_eq!(created["message"], json!(rescaled(4).message));
    assert_eq!(created["count"], json!(1));
    assert_eq!(created["firstTimestamp"], json!("2023-11-14T22:13:20Z"));
    assert_eq!(created["lastTimestamp"], json!("2023-11-14T22:13:20Z"));
}

#[tokio::test]
async fn different_messages_are_different_events_with_distinct_names() {
    let (_server, fake, client) = server().await;
    let recorder = Recorder::new("horizontal-pod-autoscaler");
    let h = hpa();
    // Two events at one instant of the injected clock.
    recorder
        .record(&client, &h, &rescaled(4), secs(0))
        .await
        .expect("4");
    recorder
        .record(&client, &h, &rescaled(6), secs(0))
        .await
        .expect("6");
    let stored = fake.stored.lock().expect("stored").clone();
    assert_eq!(stored.len(), 2);
    assert_ne!(stored[0]["metadata"]["name"], stored[1]["metadata"]["name"]);
    assert_eq!(stored[1]["count"], json!(1));
}

#[tokio::test]
async fn a_repeat_of_a_vanished_event_creates_it_again_with_its_count() {
    let (_server, fake, client) = server().await;
    let recorder = Recorder::new("horizontal-pod-autoscaler");
    let h = hpa();
    recorder
        .record(&client, &h, &rescaled(4), secs(0))
        .await
        .expect("first");
    // The Event expires on the server (events have a TTL).
    fake.stored.lock().expect("stored").clear();
    recorder
        .record(&client, &h, &rescaled(4), secs(15))
        .await
        .expect("again");
    let seen = fake.seen.lock().expect("seen").clone();
    let methods: Vec<&str> = seen.iter().map(|s| s.method.as_str()).collect();
    assert_eq!(methods, ["POST", "PATCH", "POST"]);
    assert_eq!(seen[2].body["count"], json!(2));
    assert_eq!(
        seen[2].body["metadata"]["name"],
        seen[0].body["metadata"]["name"]
    );
    assert_eq!(
        seen[2].body["firstTimestamp"],
        json!("2023-11-14T22:13:20Z")
    );
}
