//! What the API server does with an HPA manifest, in one place: JSON merge patches (a timeline's
//! `hpaPatch`), and storing (create-time defaults, the namespace filled in). The API server's
//! create-time validation is the reference's ([`hpa_reference::validation`]).

use hpa_reference::defaults::apply_api_defaults;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;

/// RFC 7386 JSON merge patch: objects merge key by key, `null` deletes, anything else replaces.
pub fn merge_patch(target: &mut serde_json::Value, patch: &serde_json::Value) {
    match (target, patch) {
        (serde_json::Value::Object(t), serde_json::Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge_patch(t.entry(k.clone()).or_insert(serde_json::Value::Null), v);
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

pub(crate) fn try_patch(
    hpa: &HorizontalPodAutoscaler,
    patch: &serde_json::Value,
) -> Result<HorizontalPodAutoscaler, String> {
    let mut doc = serde_json::to_value(hpa).map_err(|e| e.to_string())?;
    merge_patch(&mut doc, patch);
    serde_json::from_value(doc).map_err(|e| e.to_string())
}

/// The manifest after a timeline's `hpaPatch` (unchanged without one; the loader has checked
/// that every patch applies).
pub fn patch_manifest(
    hpa: &HorizontalPodAutoscaler,
    patch: Option<&serde_json::Value>,
) -> HorizontalPodAutoscaler {
    match patch {
        Some(p) => try_patch(hpa, p).unwrap_or_else(|_| hpa.clone()),
        None => hpa.clone(),
    }
}

/// What the API server stores for a manifest: defaults applied, namespace filled in.
pub fn store_as_api_server(hpa: &mut HorizontalPodAutoscaler) {
    apply_api_defaults(hpa);
    if hpa.metadata.namespace.is_none() {
        hpa.metadata.namespace = Some("default".into());
    }
}
