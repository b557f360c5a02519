//! The stub's validating admission webhook for scale subresource updates
//! ([`ADMISSION_SCALE_PATH`](crate::control::ADMISSION_SCALE_PATH)): how the harness makes a
//! real API server refuse an HPA controller's rescale on cue. The lane registers it for its own
//! namespaces only (a `ValidatingWebhookConfiguration` whose `namespaceSelector` names the run);
//! the API server sends an `admission.k8s.io/v1` `AdmissionReview` for every UPDATE of a
//! workload's `scale`, and the stub denies it while the namespace's control document has a
//! [`ScaleFault`](crate::control::ScaleFault) for that object ([`Store::refuse_scale_update`]),
//! with the fault's code, reason and message. The API server turns a denial into the error the
//! controller sees: `admission webhook "<name>" denied the request: <message>`, with the code and
//! reason as given (so `Conflict` is a conflict to client-go's `IsConflict`).
//!
//! The harness's own writes (field manager
//! [`LANE_FIELD_MANAGER`](crate::control::LANE_FIELD_MANAGER)) go through; a dry run is answered
//! without being counted (the configuration's `sideEffects: NoneOnDryRun`).
//!
//! Anything else — another operation or subresource, a review it cannot read — is allowed or
//! answered `400`: a webhook that fails would fail the lane's writes, never the cluster's (its
//! configuration selects the lane's namespaces only).

use serde::Deserialize;
use serde_json::json;

use crate::control::LANE_FIELD_MANAGER;
use crate::reply::Reply;
use crate::state::Store;
use crate::wire::Status;

/// The part of an `AdmissionReview` request the webhook reads.
#[derive(Debug, Deserialize)]
struct Review {
    request: Option<Request>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    uid: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    operation: String,
    #[serde(default)]
    sub_resource: String,
    #[serde(default)]
    dry_run: bool,
    /// The operation's options (`UpdateOptions`, `PatchOptions`): their `fieldManager`.
    #[serde(default)]
    options: Option<Options>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Options {
    #[serde(default)]
    field_manager: Option<String>,
}

/// The answer to one `AdmissionReview` body.
pub fn review(store: &Store, body: &[u8]) -> Reply {
    let request = match serde_json::from_slice::<Review>(body) {
        Ok(Review {
            request: Some(request),
        }) => request,
        Ok(Review { request: None }) => {
            return bad_request("an AdmissionReview without a request".to_string());
        }
        Err(e) => return bad_request(format!("not an AdmissionReview: {e}")),
    };
    let lanes_own = request
        .options
        .as_ref()
        .and_then(|o| o.field_manager.as_deref())
        == Some(LANE_FIELD_MANAGER);
    let refused = (request.operation == "UPDATE" && request.sub_resource == "scale" && !lanes_own)
        .then(|| {
            if request.dry_run {
                store.would_refuse_scale_update(&request.namespace, &request.name)
            } else {
                store.refuse_scale_update(&request.namespace, &request.name)
            }
        })
        .flatten();
    let response = match refused {
        None => json!({"uid": request.uid, "allowed": true}),
        Some(fault) => {
            tracing::info!(
                namespace = %request.namespace,
                name = %request.name,
                code = fault.code(),
                reason = fault.update_error_reason.as_deref().unwrap_or(""),
                "admission: a scale update refused"
            );
            let mut status = json!({
                "status": "Failure",
                "message": fault.update_error,
                "code": fault.code(),
            });
            if let Some(reason) = &fault.update_error_reason {
                status["reason"] = json!(reason);
            }
            json!({"uid": request.uid, "allowed": false, "status": status})
        }
    };
    Reply::json(
        200,
        &json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": response,
        }),
    )
}

fn bad_request(message: String) -> Reply {
    Reply::status(&Status::failure(400, "BadRequest", message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::ControlDocument;
    use crate::state::{Caps, Clock};
    use k8s_openapi::jiff::Timestamp;
    use serde_json::Value;

    fn store_with(doc: &str) -> Store {
        let store = Store::new(Clock::Fixed(Timestamp::from_second(0).unwrap()));
        let parsed: ControlDocument = serde_json::from_str(doc).unwrap();
        store
            .put(
                "case-1",
                parsed,
                doc.len(),
                crate::state::weight(doc.as_bytes()),
            )
            .unwrap();
        assert_eq!(store.caps(), Caps::DEFAULT);
        store
    }

    fn ask(store: &Store, operation: &str, sub_resource: &str, name: &str) -> Value {
        let body = json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
                "subResource": sub_resource,
                "name": name,
                "namespace": "case-1",
                "operation": operation,
                "userInfo": {"username": "system:serviceaccount:kube-system:horizontal-pod-autoscaler"},
                "object": {"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 5}},
            }
        });
        let reply = review(store, &serde_json::to_vec(&body).unwrap());
        assert_eq!(reply.status, 200);
        let answer: Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(answer["kind"], "AdmissionReview");
        assert_eq!(
            answer["response"]["uid"],
            "705ab4f5-6393-11e8-b7cc-42010a800002"
        );
        answer["response"].clone()
    }

    #[test]
    fn a_conflict_is_refused_once_with_its_code_and_reason() {
        let store = store_with(
            r#"{"scale": {"web": {"updateError": "the object has been modified", "updateErrorReason": "Conflict", "updateFailures": 1}}}"#,
        );
        let first = ask(&store, "UPDATE", "scale", "web");
        assert_eq!(first["allowed"], false);
        assert_eq!(first["status"]["code"], 409);
        assert_eq!(first["status"]["reason"], "Conflict");
        assert_eq!(first["status"]["message"], "the object has been modified");
        assert_eq!(ask(&store, "UPDATE", "scale", "web")["allowed"], true);
    }

    #[test]
    fn only_scale_updates_of_the_named_object_are_refused() {
        let store = store_with(r#"{"scale": {"web": {"updateError": "something went wrong"}}}"#);
        let denied = ask(&store, "UPDATE", "scale", "web");
        assert_eq!(denied["allowed"], false);
        assert_eq!(denied["status"]["code"], 400);
        assert!(denied["status"].get("reason").is_none());
        assert_eq!(ask(&store, "UPDATE", "", "web")["allowed"], true);
        assert_eq!(ask(&store, "CREATE", "scale", "web")["allowed"], true);
        assert_eq!(ask(&store, "UPDATE", "scale", "db")["allowed"], true);
        assert_eq!(ask(&store, "UPDATE", "scale", "web")["allowed"], false);
    }

    #[test]
    fn the_lanes_own_writes_and_dry_runs_use_up_nothing() {
        let store = store_with(r#"{"scale": {"web": {"updateError": "no", "updateFailures": 1}}}"#);
        let review = |extra: Value| {
            let mut request = json!({"uid": "u", "name": "web", "namespace": "case-1",
                                     "operation": "UPDATE", "subResource": "scale"});
            for (k, v) in extra.as_object().unwrap() {
                request[k] = v.clone();
            }
            let body = json!({"request": request});
            let reply = review(&store, &serde_json::to_vec(&body).unwrap());
            serde_json::from_slice::<Value>(&reply.body).unwrap()["response"]["allowed"].clone()
        };
        let own = json!({"options": {"kind": "PatchOptions", "fieldManager": LANE_FIELD_MANAGER}});
        assert_eq!(review(own), true);
        assert_eq!(review(json!({"dryRun": true})), false);
        assert_eq!(
            review(json!({"dryRun": true})),
            false,
            "a dry run counts nothing"
        );
        assert_eq!(review(json!({})), false);
        assert_eq!(review(json!({})), true, "the one refusal used up");
    }

    #[test]
    fn what_is_not_a_review_is_a_bad_request() {
        let store = store_with("{}");
        for body in [&b"{"[..], br#"{"apiVersion": "admission.k8s.io/v1"}"#] {
            let reply = review(&store, body);
            assert_eq!(reply.status, 400);
            assert!(
                reply.body_text().contains("AdmissionReview"),
                "{}",
                reply.body_text()
            );
        }
    }
}
