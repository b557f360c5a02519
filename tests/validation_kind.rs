//! The reference's API validation against a real API server (`just kind-validation`, a running
//! cluster: `KUBECONFIG`): every manifest of `fixtures/validation.yaml` is created on the server
//! (in a namespace of its own, removed afterwards) and checked by
//! `hpa_reference::validation::validate_hpa`; both must answer the same, word for word —
//! "accepted", or the server's 422 message as apimachinery joins the field errors — except
//! where the fixture states a deliberate difference (`stricter:`, the reference's own message).

use anyhow::{Context, Result, bail};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use serde_json::Value;

use hpa_conformance_tests::root;
use hpa_harness::case::load::merge_patch;
use hpa_harness::cluster::{connect_to, kube};
use hpa_reference::validation::{ValidationOptions, invalid_message, validate_hpa};

#[tokio::test]
#[ignore = "needs a cluster: just kind-validation"]
async fn validation_answers_as_the_api_server() -> Result<()> {
    let text = std::fs::read_to_string(root().join("tests/fixtures/validation.yaml"))?;
    let fixture: Value =
        hpa_harness::yaml::from_str(&text).map_err(|e| anyhow::anyhow!("the fixture: {e:?}"))?;
    let (client, _) = connect_to(None, None).await?;
    let ns = format!("hpa-validation-{}", std::process::id());
    let ns = ns.as_str();
    kube::create_namespace(&client, ns, "validation")
        .await
        .map_err(anyhow::Error::msg)?;
    // HPAScaleToZero as the cluster runs it (kind-config: on).
    let opts = ValidationOptions {
        scale_to_zero_enabled: true,
    };
    let mut differences = Vec::new();
    let mut stricter = 0;
    let manifests = fixture["manifests"].as_array().context("manifests")?;
    for m in manifests {
        let name = m["name"].as_str().context("name")?;
        let mut v = fixture["base"].clone();
        merge_patch(&mut v, &m["patch"]);
        v["metadata"]["namespace"] = Value::from(ns);
        let hpa: HorizontalPodAutoscaler = serde_json::from_value(v).context(name.to_string())?;
        let errors = validate_hpa(&hpa, opts);
        let hpa_name = hpa.metadata.name.clone().unwrap_or_default();
        let ours = if errors.is_empty() {
            "accepted".to_string()
        } else {
            invalid_message(&hpa_name, &errors)
        };
        let theirs = match kube::try_create_hpa(&client, ns, &hpa)
            .await
            .map_err(anyhow::Error::msg)?
        {
            None => {
                kube::delete_hpa(&client, ns, &hpa_name).await;
                "accepted".to_string()
            }
            Some(message) => message,
        };
        println!("{name}: {theirs}");
        match m["stricter"].as_str() {
            // A documented, deliberate difference: the reference says exactly this, the server
            // something else.
            Some(stated) if ours == stated && theirs != ours => stricter += 1,
            Some(stated) => differences.push(format!(
                "{name} (stricter):\n  server:    {theirs}\n  reference: {ours}\n  stated:    {stated}"
            )),
            None if ours != theirs => {
                differences.push(format!("{name}:\n  server:    {theirs}\n  reference: {ours}"))
            }
            None => {}
        }
    }
    kube::delete_namespace(&client, ns).await;
    println!(
        "validation: {} manifests, {} answered alike, {stricter} stricter on purpose, {} differences",
        manifests.len(),
        manifests.len() - stricter - differences.len(),
        differences.len()
    );
    if !differences.is_empty() {
        bail!("{}", differences.join("\n"));
    }
    Ok(())
}
