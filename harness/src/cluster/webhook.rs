//! Scale update errors on cue (`scaleApi.updateError`), posed on a real API server: the metrics
//! stub's validating admission webhook (`hpa_metrics_stub::admission`) refuses an UPDATE of a
//! workload's `scale` subresource while the namespace's control document has a fault for it.
//!
//! - A run with such a case registers the webhook once ([`install`]): a
//!   `ValidatingWebhookConfiguration` named after the run, whose `namespaceSelector` takes only
//!   the run's namespaces labelled [`SCALE_FAULTS_LABEL`] (the cases that need it: every other
//!   write of the cluster, and of the run, never reaches the webhook), with the stub's serving
//!   certificate (new at each start of the stub, read from its control API) as its `caBundle`.
//!   It goes at the run's end ([`remove`]), and `cluster-clean` removes any a killed run left.
//! - Each tick's document carries the fault of the latest `scaleApi` entry the lane applied
//!   ([`fault_of`]): its message, reason (`Conflict`: a 409 client-go retries on from 1.34),
//!   and how many updates to refuse (`updateFailures`; without a reason a failed rescale is one
//!   refused update, as it makes one attempt), armed at the entry's time.
//! - The lane's own scale writes (a case's `setReplicas`) carry the field manager
//!   [`LANE_FIELD_MANAGER`](hpa_metrics_stub::control::LANE_FIELD_MANAGER), which the webhook
//!   lets through: in the case's world the error is the controller's alone.
//! - The API server words a denial `admission webhook "<name>" denied the request: <message>`;
//!   the lane reads the controller's conditions and events without those words
//!   ([`in_case_terms`]), so a case's `updateError` is compared as the case wrote it.
//!
//! A failing GET of the scale stays unposable: a webhook never sees a read.

use hpa_metrics_stub::control::{
    ADMISSION_SCALE_PATH, SCALE_WEBHOOK_NAME, SERVICE_NAME, SYSTEM_NAMESPACE, ScaleFault,
    denial_prefix,
};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

use super::kube::{KubeResult, MANAGED_BY, MANAGED_LABEL, RUN_LABEL};
use crate::case::Case;
use crate::case::model::TimelineEntry;

/// The label the lane puts on the namespace of a case whose timeline refuses scale updates:
/// the webhook's `namespaceSelector` takes these (of its run) only.
pub const SCALE_FAULTS_LABEL: &str = "hpa-conformance.dev/scale-faults";

/// Whether the case (or an HPA alongside) refuses scale updates somewhere on its timeline.
pub fn needs(case: &Case) -> bool {
    std::iter::once(case)
        .chain(&case.members)
        .flat_map(|c| &c.file.timeline)
        .any(|e| {
            e.scale_api
                .as_ref()
                .is_some_and(|s| s.update_error.is_some())
        })
}

/// The webhook configuration's name for a run.
pub fn configuration_name(run: &str) -> String {
    format!("hpa-conformance-scale-faults-{run}")
}

/// The webhook configuration of a run, trusting `certificate` (PEM).
pub fn configuration(run: &str, certificate: &str) -> ValidatingWebhookConfiguration {
    let value = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {
            "name": configuration_name(run),
            "labels": {RUN_LABEL: run, MANAGED_LABEL: MANAGED_BY},
        },
        "webhooks": [{
            "name": SCALE_WEBHOOK_NAME,
            "clientConfig": {
                "service": {
                    "namespace": SYSTEM_NAMESPACE,
                    "name": SERVICE_NAME,
                    "path": ADMISSION_SCALE_PATH,
                    "port": 443,
                },
            },
            "rules": [{
                "operations": ["UPDATE"],
                "apiGroups": ["apps", ""],
                "apiVersions": ["v1"],
                "resources": [
                    "deployments/scale",
                    "replicasets/scale",
                    "statefulsets/scale",
                    "replicationcontrollers/scale",
                ],
                "scope": "Namespaced",
            }],
            "namespaceSelector": {"matchLabels": {RUN_LABEL: run, SCALE_FAULTS_LABEL: "true"}},
            // A webhook that cannot be called fails the update (of the labelled namespaces only):
            // a case that expected its rescale refused then sees why, not a silent success.
            "failurePolicy": "Fail",
            "sideEffects": "NoneOnDryRun",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 5,
        }],
    });
    let mut config: ValidatingWebhookConfiguration =
        serde_json::from_value(value).expect("a well-formed ValidatingWebhookConfiguration");
    if let Some(hook) = config.webhooks.as_mut().and_then(|w| w.first_mut()) {
        hook.client_config.ca_bundle = Some(ByteString(certificate.as_bytes().to_vec()));
    }
    config
}

/// Registers the run's webhook with the stub's current certificate (replacing one of the same
/// name, as a run id repeats after about 17 minutes of milliseconds).
pub async fn install(
    client: &Client,
    stub: &super::stub::StubControl,
    run: &str,
) -> KubeResult<()> {
    let certificate = stub.certificate().await?;
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let config = configuration(run, &certificate);
    remove(client, run).await;
    api.create(&PostParams::default(), &config)
        .await
        .map_err(|e| {
            format!(
                "registering the stub's scale webhook (ValidatingWebhookConfiguration {}; the harness needs `create` on validatingwebhookconfigurations): {e}",
                configuration_name(run)
            )
        })?;
    Ok(())
}

/// Removes the run's webhook configuration (best effort).
pub async fn remove(client: &Client, run: &str) {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let _ = api
        .delete(&configuration_name(run), &DeleteParams::default())
        .await;
}

/// The fault the latest of `applied` entries with a `scaleApi` sets: `None` when it sets no
/// update error (or no entry has one).
pub fn fault_of<'e>(
    applied: impl DoubleEndedIterator<Item = &'e TimelineEntry>,
) -> Option<ScaleFault> {
    let (at, api) = applied
        .rev()
        .find_map(|e| e.scale_api.as_ref().map(|s| (e.at, s)))?;
    Some(ScaleFault {
        update_error: api.update_error.clone()?,
        update_error_reason: api.update_error_reason.clone(),
        update_error_code: None,
        update_failures: api.update_failures,
        armed_at: Some(i64::from(at)),
    })
}

/// A controller's message without the API server's words for the webhook's denial.
pub fn in_case_terms(message: &str) -> String {
    message.replace(&denial_prefix(), "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::model::ScaleApi;

    fn entry(at: u32, scale_api: Option<ScaleApi>) -> TimelineEntry {
        TimelineEntry {
            at,
            scale_api,
            ..TimelineEntry::default()
        }
    }

    #[test]
    fn the_latest_scale_api_entry_sets_the_fault() {
        let refuse = ScaleApi {
            update_error: Some("something went wrong".into()),
            update_failures: Some(1),
            ..ScaleApi::default()
        };
        let timeline = [
            entry(0, None),
            entry(15, Some(refuse)),
            entry(30, None),
            entry(45, Some(ScaleApi::default())),
        ];
        assert_eq!(fault_of(timeline[..1].iter()), None);
        let fault = fault_of(timeline[..3].iter()).unwrap();
        assert_eq!(fault.update_error, "something went wrong");
        assert_eq!(fault.update_failures, Some(1));
        assert_eq!(fault.armed_at, Some(15));
        assert_eq!(fault.code(), 400);
        assert_eq!(fault_of(timeline.iter()), None, "cleared at 45");
    }

    #[test]
    fn the_configuration_takes_the_runs_labelled_namespaces_and_trusts_the_stub() {
        let config = configuration("abc12", "-----BEGIN CERTIFICATE-----\n");
        let v = serde_json::to_value(&config).unwrap();
        assert_eq!(v["metadata"]["name"], "hpa-conformance-scale-faults-abc12");
        assert_eq!(v["metadata"]["labels"][MANAGED_LABEL], MANAGED_BY);
        let hook = &v["webhooks"][0];
        assert_eq!(hook["name"], SCALE_WEBHOOK_NAME);
        assert_eq!(
            hook["namespaceSelector"]["matchLabels"],
            json!({RUN_LABEL: "abc12", SCALE_FAULTS_LABEL: "true"})
        );
        assert_eq!(hook["clientConfig"]["service"]["path"], "/admission/scale");
        // base64 of the PEM, as the API server wants it.
        assert_eq!(
            hook["clientConfig"]["caBundle"],
            "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="
        );
        assert_eq!(hook["rules"][0]["operations"], json!(["UPDATE"]));
    }

    #[test]
    fn a_denial_reads_as_the_case_wrote_its_error() {
        let seen = format!(
            "New size: 5; reason: cpu resource utilization (percentage of request) above target; error: {}something went wrong",
            denial_prefix()
        );
        assert_eq!(
            in_case_terms(&seen),
            "New size: 5; reason: cpu resource utilization (percentage of request) above target; error: something went wrong"
        );
    }
}
