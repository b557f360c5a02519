//! The reference's API validation against a real API server (`just kind-validation`, a running
//! cluster: `KUBECONFIG`), word for word, on two sets of HPAs:
//! - every manifest of `fixtures/validation.yaml` (one per rule upstream's validation has, and its
//!   edges): the base HPA with a JSON merge patch applied;
//! - every case of the corpus that expects a rejection (`expect.rejected`), as the case loader
//!   stores its HPA — found by loading `cases/`, not from a list, so a new rejection case is
//!   checked here the day it is added.
//!
//! Each HPA is created on the server (in a namespace of its own, removed afterwards) and checked by
//! `hpa_reference::validation::validate_hpa`: both must answer the same, word for word —
//! "accepted", or the server's 422 message as apimachinery joins the field errors. A rejection
//! case's `expect.rejected` text must also be part of that message. The reference has no
//! deliberate difference from the server: what the server accepts but a controller cannot use is
//! a `lint` warning, not a rejection.

use ::kube::Client;
use anyhow::{Context, Result, bail};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use serde_json::Value;

use hpa_conformance_tests::root;
use hpa_harness::case::apiserver::merge_patch;
use hpa_harness::cluster::{connect_to, kube};
use hpa_reference::validation::{ValidationOptions, invalid_message, validate_hpa};

/// The gate the kind clusters of `kind-config/` run with a value other than its default.
const CLUSTER_GATE: (&str, bool) = ("HPAScaleToZero", true);

/// What the server and the reference answered for one HPA: `None` when they agree.
async fn compare(
    client: &Client,
    ns: &str,
    label: &str,
    hpa: &HorizontalPodAutoscaler,
    version: hpa_reference::KubernetesVersion,
) -> Result<(String, Option<String>)> {
    let opts = ValidationOptions::of(version, CLUSTER_GATE.1);
    let errors = validate_hpa(hpa, opts);
    let hpa_name = hpa.metadata.name.clone().unwrap_or_default();
    let ours = if errors.is_empty() {
        "accepted".to_string()
    } else {
        invalid_message(&hpa_name, &errors)
    };
    let mut hpa = hpa.clone();
    hpa.metadata.namespace = Some(ns.to_string());
    let theirs = match kube::try_create_hpa(client, ns, &hpa)
        .await
        .map_err(anyhow::Error::msg)?
    {
        None => {
            kube::delete_hpa(client, ns, &hpa_name).await;
            "accepted".to_string()
        }
        Some(message) => message,
    };
    println!("{label}: {theirs}");
    let difference =
        (ours != theirs).then(|| format!("{label}:\n  server:    {theirs}\n  reference: {ours}"));
    Ok((theirs, difference))
}

#[tokio::test]
#[ignore = "needs a cluster: just kind-validation"]
async fn validation_answers_as_the_api_server() -> Result<()> {
    let text = std::fs::read_to_string(root().join("tests/fixtures/validation.yaml"))?;
    let fixture: Value = hpa_harness::util::yaml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("the fixture: {e:?}"))?;
    let (cases, load_errors) = hpa_harness::case::corpus::load_all(&[root().join("cases")]);
    if !load_errors.is_empty() {
        bail!("the corpus does not load: {load_errors:?}");
    }
    let rejections: Vec<_> = cases
        .iter()
        .filter(|c| c.file.expect.rejected.is_some())
        .collect();

    let (client, _) = connect_to(None, None).await?;
    // The reference validates as the cluster's release does (its API server's /version).
    let version: hpa_reference::KubernetesVersion = client
        .apiserver_version()
        .await?
        .git_version
        .parse()
        .map_err(|e| anyhow::anyhow!("the cluster's version: {e}"))?;
    println!("the cluster runs Kubernetes {version}");
    let ns = format!("hpa-validation-{}", std::process::id());
    let ns = ns.as_str();
    kube::create_namespace(&client, ns, "validation")
        .await
        .map_err(anyhow::Error::msg)?;
    let mut differences = Vec::new();

    let manifests = fixture["manifests"].as_array().context("manifests")?;
    for m in manifests {
        let name = m["name"].as_str().context("name")?;
        let mut v = fixture["base"].clone();
        merge_patch(&mut v, &m["patch"]);
        let hpa: HorizontalPodAutoscaler = serde_json::from_value(v).context(name.to_string())?;
        let (_, difference) = compare(&client, ns, name, &hpa, version).await?;
        differences.extend(difference);
    }

    let mut not_checked = Vec::new();
    for case in &rejections {
        let label = format!("case {}", case.name());
        if let Some(used) = case.gates.get(CLUSTER_GATE.0)
            && used.value != CLUSTER_GATE.1
        {
            not_checked.push(format!(
                "{label}: needs {}={}, the cluster runs {}={}",
                CLUSTER_GATE.0, used.value, CLUSTER_GATE.0, CLUSTER_GATE.1
            ));
            continue;
        }
        // The rejection's words on the cluster's release (a `changedIn` may give older words).
        let expect = hpa_harness::case::versions::expectations_at(case, version);
        let want = expect.rejected.as_deref().unwrap_or_default();
        let (theirs, difference) = compare(&client, ns, &label, &case.hpa, version).await?;
        differences.extend(difference);
        if !theirs.contains(want) {
            differences.push(format!(
                "{label}: the server's message does not contain expect.rejected\n  server:   {theirs}\n  expected: {want}"
            ));
        }
    }
    kube::delete_namespace(&client, ns).await;

    println!(
        "validation: {} fixture manifests and {} of {} rejection cases checked, {} differences{}",
        manifests.len(),
        rejections.len() - not_checked.len(),
        rejections.len(),
        differences.len(),
        if not_checked.is_empty() {
            String::new()
        } else {
            format!("; not checked here: {}", not_checked.join("; "))
        }
    );
    if rejections.is_empty() {
        bail!("the corpus has no case with expect.rejected: nothing of it was checked");
    }
    if !differences.is_empty() {
        bail!("{}", differences.join("\n"));
    }
    Ok(())
}
