//! The cluster's HPA controller reconfigured between settings groups (`--reconfigure-controller`):
//! cases that need other controller flags than the cluster's (a CPU initialization period, a
//! readiness delay, a sync period …) run in groups, one per set of flags, and before each group
//! the controller is restarted with that group's flags; after the last group (and after an
//! interrupted or failed run) it gets its own flags back.
//!
//! Two controllers are known:
//! - **kube-controller-manager on a kind node**: its static pod manifest
//!   (`/etc/kubernetes/manifests/kube-controller-manager.yaml`) rewritten inside the node's
//!   container (`docker exec`; the node's `providerID` says `kind://docker/<cluster>/<node>`); the
//!   kubelet restarts the static pod;
//! - **a Deployment labelled as the cluster's HPA controller** (the deployed reference): its first
//!   container's args patched; the Deployment rolls out.
//!
//! Either way the group starts only once the controller's command line has the group's flags
//! (checked as the run checks the cluster's own, [`super::plan::check_controller`]), its pods are
//! ready, and a new process holds its leader-election Lease. Anything else is refused: a run on
//! someone else's cluster never reconfigures what the lane does not know how to put back.

use std::time::{Duration, Instant};

use hpa_reference::FeatureGates;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use super::plan::{ClusterSettings, check_controller};

/// Where kubeadm keeps kube-controller-manager's static pod manifest on a node.
pub const KCM_MANIFEST: &str = "/etc/kubernetes/manifests/kube-controller-manager.yaml";
/// How long a restarted controller may take to hold its Lease with the new flags.
const READY_WITHIN: Duration = Duration::from_secs(180);

/// A controller the lane knows how to reconfigure and put back.
#[derive(Debug, Clone)]
pub enum Controller {
    /// kube-controller-manager, a static pod of the kind node `node` (a Docker container of
    /// that name); `original` is its manifest as found.
    KindControllerManager {
        /// The node (and container) name.
        node: String,
        /// The manifest before the run touched it.
        original: String,
    },
    /// A Deployment running an HPA controller with kube-controller-manager's flags.
    Deployment {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Its first container's name.
        container: String,
        /// That container's args as found.
        original: Vec<String>,
    },
}

impl Controller {
    /// Its name in reports.
    pub fn describe(&self) -> String {
        match self {
            Controller::KindControllerManager { node, .. } => {
                format!("kube-controller-manager (static pod of kind node {node})")
            }
            Controller::Deployment {
                namespace, name, ..
            } => format!("Deployment {namespace}/{name}"),
        }
    }
}

/// The controller under test, when the lane knows how to reconfigure it: `deployment` is the
/// `namespace/name` of the Deployment labelled as the HPA controller when kube-controller-manager's
/// HPA controller is off, else `None` (kube-controller-manager is the one).
pub async fn known(client: &Client, deployment: Option<&str>) -> Result<Controller, String> {
    match deployment {
        Some(full) => {
            let (namespace, name) = full
                .split_once('/')
                .ok_or_else(|| format!("{full} is not namespace/name"))?;
            let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
            let d = api
                .get(name)
                .await
                .map_err(|e| format!("reading Deployment {full}: {e}"))?;
            let c = d
                .spec
                .template
                .spec
                .and_then(|s| s.containers.into_iter().next())
                .ok_or_else(|| format!("Deployment {full} has no container"))?;
            Ok(Controller::Deployment {
                namespace: namespace.into(),
                name: name.into(),
                container: c.name,
                original: c.args.unwrap_or_default(),
            })
        }
        None => {
            let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
            let list = pods
                .list(&ListParams::default().labels("component=kube-controller-manager"))
                .await
                .map_err(|e| format!("listing kube-controller-manager's pods: {e}"))?;
            let node = list
                .items
                .into_iter()
                .find_map(|p| p.spec.and_then(|s| s.node_name))
                .ok_or("kube-controller-manager runs in no pod the API server shows (not a static pod of a node): the lane cannot reconfigure it")?;
            let nodes: Api<Node> = Api::all(client.clone());
            let provider = nodes
                .get(&node)
                .await
                .map_err(|e| format!("reading node {node}: {e}"))?
                .spec
                .and_then(|s| s.provider_id)
                .unwrap_or_default();
            let container = kind_container(&provider).ok_or_else(|| {
                format!(
                    "kube-controller-manager runs on node {node} (providerID {provider:?}), not a kind node in Docker: the lane reconfigures kube-controller-manager only through a kind node's static pod manifest"
                )
            })?;
            let original = docker(&["exec", &container, "cat", KCM_MANIFEST], None).await?;
            Ok(Controller::KindControllerManager {
                node: container,
                original,
            })
        }
    }
}

/// The Docker container of a kind node, from its `providerID` (`kind://docker/<cluster>/<node>`).
pub fn kind_container(provider_id: &str) -> Option<String> {
    let rest = provider_id.strip_prefix("kind://docker/")?;
    let (_, node) = rest.split_once('/')?;
    (!node.is_empty()).then(|| node.to_string())
}

/// Runs `docker` with `args` (and `stdin`), its standard output or why it failed.
async fn docker(args: &[&str], stdin: Option<String>) -> Result<String, String> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        use std::io::Write as _;
        use std::process::{Command, Stdio};
        let mut child = Command::new("docker")
            .args(&args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("docker {}: {e}", args.join(" ")))?;
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(text.as_bytes())
                .map_err(|e| format!("docker {}: {e}", args.join(" ")))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("docker {}: {e}", args.join(" ")))?;
        if !out.status.success() {
            return Err(format!(
                "docker {} failed ({}): {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    })
    .await
    .map_err(|e| e.to_string())?
}

/// `args` with each of `flags` (`--name=value`) in place of the same flag, or added at the end;
/// `--feature-gates` merged gate by gate ([`merged`]).
pub fn with_flags(args: &[String], flags: &[String]) -> Vec<String> {
    let mut out = args.to_vec();
    for f in flags {
        let name = f.split_once('=').map_or(f.as_str(), |(n, _)| n);
        let prefix = format!("{name}=");
        match out.iter_mut().find(|a| a.starts_with(&prefix)) {
            Some(a) => *a = merged(a, f),
            None => out.push(f.clone()),
        }
    }
    out
}

/// The flag `new` in place of `old` (both `--name=value`): `new` itself, but for
/// `--feature-gates`, whose gates `new` sets one by one over `old`'s (the cluster's other gates
/// stay as they are).
pub fn merged(old: &str, new: &str) -> String {
    const GATES: &str = "--feature-gates=";
    let (Some(was), Some(set)) = (old.strip_prefix(GATES), new.strip_prefix(GATES)) else {
        return new.to_string();
    };
    let mut gates: Vec<(String, String)> = was
        .split(',')
        .filter_map(|g| g.split_once('='))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    for (n, v) in set.split(',').filter_map(|g| g.split_once('=')) {
        match gates.iter_mut().find(|(m, _)| m == n) {
            Some(g) => g.1 = v.to_string(),
            None => gates.push((n.to_string(), v.to_string())),
        }
    }
    let list: Vec<String> = gates.iter().map(|(n, v)| format!("{n}={v}")).collect();
    format!("{GATES}{}", list.join(","))
}

/// kube-controller-manager's static pod manifest with each of `flags` in its command: a line
/// `- --name=…` replaced, or a new line after `- kube-controller-manager`, indented alike. The
/// rest of the text stays as it is.
pub fn manifest_with_flags(text: &str, flags: &[String]) -> Result<String, String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let binary = lines
        .iter()
        .position(|l| l.trim() == "- kube-controller-manager")
        .ok_or("the manifest's command has no `- kube-controller-manager` line")?;
    let indent: String = lines[binary]
        .chars()
        .take_while(|c| c.is_whitespace())
        .collect();
    for f in flags {
        let name = f.split_once('=').map_or(f.as_str(), |(n, _)| n);
        let prefix = format!("- {name}=");
        match lines
            .iter_mut()
            .find(|l| l.trim_start().starts_with(&prefix))
        {
            Some(l) => {
                let was = l.trim_start().trim_start_matches("- ").to_string();
                *l = format!("{indent}- {}", merged(&was, f));
            }
            None => lines.insert(binary + 1, format!("{indent}- {f}")),
        }
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// The lease a controller elects its leader with: kube-controller-manager's
/// (`kube-system/kube-controller-manager`), or from a Deployment's args
/// (`--leader-elect-resource-name`/`-namespace`); `None` when it does not elect one.
fn lease_of(controller: &Controller, args: &[String]) -> Option<(String, String)> {
    let flag = |name: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(&format!("--{name}=")))
            .map(str::to_string)
    };
    if flag("leader-elect").as_deref() == Some("false") {
        return None;
    }
    match controller {
        Controller::KindControllerManager { .. } => Some((
            "kube-system".into(),
            flag("leader-elect-resource-name").unwrap_or_else(|| "kube-controller-manager".into()),
        )),
        Controller::Deployment {
            namespace, name, ..
        } => {
            let ns = flag("leader-elect-resource-namespace")
                .filter(|n| !n.starts_with("$("))
                .unwrap_or_else(|| namespace.clone());
            Some((
                ns,
                flag("leader-elect-resource-name").unwrap_or(name.clone()),
            ))
        }
    }
}

async fn holder(client: &Client, lease: &Option<(String, String)>) -> Option<String> {
    let (ns, name) = lease.as_ref()?;
    let api: Api<Lease> = Api::namespaced(client.clone(), ns);
    api.get_opt(name)
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .filter(|h| !h.is_empty())
}

/// What the controller runs now: its command line and whether all its pods are ready (for a
/// Deployment: rolled out, no old pod left).
async fn current(client: &Client, controller: &Controller) -> Result<(Vec<String>, bool), String> {
    match controller {
        Controller::KindControllerManager { .. } => {
            let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
            let list = pods
                .list(&ListParams::default().labels("component=kube-controller-manager"))
                .await
                .map_err(|e| e.to_string())?;
            let Some(p) = list.items.into_iter().next() else {
                return Ok((Vec::new(), false));
            };
            // Running, not Ready: the static pod's startup probe marks it Ready 10–20 s after
            // it started, while the new Lease holder already shows that it runs and leads.
            let ready = p
                .status
                .and_then(|s| s.container_statuses)
                .is_some_and(|cs| {
                    !cs.is_empty()
                        && cs
                            .iter()
                            .all(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
                });
            let c = p.spec.and_then(|s| s.containers.into_iter().next());
            let args = c
                .map(|c| {
                    c.command
                        .unwrap_or_default()
                        .into_iter()
                        .chain(c.args.unwrap_or_default())
                        .collect()
                })
                .unwrap_or_default();
            Ok((args, ready))
        }
        Controller::Deployment {
            namespace, name, ..
        } => {
            let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
            let d = api.get(name).await.map_err(|e| e.to_string())?;
            let want = d.spec.replicas.unwrap_or(1);
            let generation = d.metadata.generation.unwrap_or(0);
            let args = d
                .spec
                .template
                .spec
                .as_ref()
                .and_then(|s| s.containers.first())
                .map(|c| {
                    c.command
                        .clone()
                        .unwrap_or_default()
                        .into_iter()
                        .chain(c.args.clone().unwrap_or_default())
                        .collect()
                })
                .unwrap_or_default();
            let rolled = d.status.is_some_and(|s| {
                s.observed_generation.unwrap_or(0) >= generation
                    && s.updated_replicas.unwrap_or(0) == want
                    && s.available_replicas.unwrap_or(0) == want
                    && s.replicas.unwrap_or(0) == want
            });
            Ok((args, rolled))
        }
    }
}

/// Restarts `controller` with `settings`' HPA flags and waits until it runs them; how long that
/// took. `gates` are the run's (checked, never changed).
pub async fn apply(
    client: &Client,
    controller: &Controller,
    settings: &ClusterSettings,
    gates: &FeatureGates,
) -> Result<Duration, String> {
    let flags = match controller {
        Controller::KindControllerManager { .. } => settings.controller_manager_args(),
        Controller::Deployment { .. } => settings.flag_args(),
    };
    restart(client, controller, Some(&flags), settings, gates).await
}

/// Puts `controller` back as it was found (its manifest or args) and waits until it runs
/// `settings` (the cluster's own) again.
pub async fn restore(
    client: &Client,
    controller: &Controller,
    settings: &ClusterSettings,
    gates: &FeatureGates,
) -> Result<Duration, String> {
    restart(client, controller, None, settings, gates).await
}

/// How the controller's container last exited, with the last line it logged before (best
/// effort: `None` when it has not exited or that cannot be read) — why a restart did not come
/// back, e.g. kube-controller-manager refusing a gate whose dependents are on.
async fn last_exit(client: &Client, controller: &Controller) -> Option<String> {
    let (namespace, selector) = match controller {
        Controller::KindControllerManager { .. } => (
            "kube-system".to_string(),
            "component=kube-controller-manager".to_string(),
        ),
        Controller::Deployment {
            namespace, name, ..
        } => {
            let d = Api::<Deployment>::namespaced(client.clone(), namespace)
                .get(name)
                .await
                .ok()?;
            let labels = d.spec.selector.match_labels?;
            let sel: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            (namespace.clone(), sel.join(","))
        }
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let list = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .ok()?;
    for p in list.items {
        let name = p.metadata.name.clone()?;
        for c in p
            .status
            .and_then(|s| s.container_statuses)
            .unwrap_or_default()
        {
            let Some(t) = c.last_state.and_then(|s| s.terminated) else {
                continue;
            };
            let params = kube::api::LogParams {
                container: Some(c.name.clone()),
                previous: true,
                tail_lines: Some(1),
                ..Default::default()
            };
            let line = pods.logs(&name, &params).await.unwrap_or_default();
            let line: String = line.trim().chars().take(400).collect();
            return Some(format!(
                "pod {name} restarted {} times, last exit code {}{}",
                c.restart_count,
                t.exit_code,
                if line.is_empty() {
                    String::new()
                } else {
                    format!(", its last line: {line}")
                }
            ));
        }
    }
    None
}

/// Restarts `controller` as found with `flags` in place (`None`: as found) and waits until it
/// runs `settings`.
async fn restart(
    client: &Client,
    controller: &Controller,
    flags: Option<&[String]>,
    settings: &ClusterSettings,
    gates: &FeatureGates,
) -> Result<Duration, String> {
    let started = Instant::now();
    let (before, _) = current(client, controller).await?;
    let lease = lease_of(controller, &before);
    let old_holder = holder(client, &lease).await;
    match controller {
        Controller::KindControllerManager { node, original } => {
            let text = match flags {
                Some(f) => manifest_with_flags(original, f)?,
                None => original.clone(),
            };
            write_manifest(node, &text).await?;
        }
        Controller::Deployment {
            namespace,
            name,
            container,
            original,
        } => {
            let args = flags.map_or_else(|| original.clone(), |f| with_flags(original, f));
            let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
            let patch = json!({"spec": {"template": {"spec": {"containers": [
                {"name": container, "args": args}
            ]}}}});
            api.patch(name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await
                .map_err(|e| format!("patching Deployment {namespace}/{name}'s args: {e}"))?;
        }
    }
    wait_until_runs(
        client, controller, settings, gates, &lease, old_holder, started,
    )
    .await
}

/// Waits until `controller` runs `settings`' flags with its pods ready and a new process holding
/// its Lease (when it elects a leader); how long since `started`.
async fn wait_until_runs(
    client: &Client,
    controller: &Controller,
    settings: &ClusterSettings,
    gates: &FeatureGates,
    lease: &Option<(String, String)>,
    old_holder: Option<String>,
    started: Instant,
) -> Result<Duration, String> {
    let who = controller.describe();
    let mut freed = false;
    loop {
        let (args, ready) = current(client, controller).await?;
        let runs = check_controller(&who, &args, settings, gates);
        let new_holder = holder(client, lease).await;
        let leads = lease.is_none() || (new_holder.is_some() && new_holder != old_holder);
        if ready && matches!(runs, Ok(true)) && leads {
            return Ok(started.elapsed());
        }
        // The kubelet replaces a static pod (the old process is gone) before the mirror pod
        // shows the new command line; the old process held the Lease and never released it.
        // Removing it spares the new one the wait for it to expire (15 s by default); were the
        // old one still alive, it would take the Lease again and the wait would be as before.
        if let (Controller::KindControllerManager { .. }, Ok(true), false, Some((ns, name))) =
            (controller, &runs, freed, lease)
            && new_holder.is_some()
            && new_holder == old_holder
        {
            let api: Api<Lease> = Api::namespaced(client.clone(), ns);
            let _ = api.delete(name, &Default::default()).await;
            freed = true;
        }
        if started.elapsed() > READY_WITHIN {
            return Err(format!(
                "{who} did not come back with {} within {} s (its command line: {}; pods ready: {ready}; lease holder {:?}, before {:?}){}",
                settings.flag_args().join(" "),
                READY_WITHIN.as_secs(),
                match runs {
                    Ok(true) => "as wanted".to_string(),
                    Ok(false) => "its HPA controller is off".to_string(),
                    Err(e) => e,
                },
                new_holder,
                old_holder,
                last_exit(client, controller)
                    .await
                    .map(|e| format!("; {e}"))
                    .unwrap_or_default()
            ));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Replaces a kind node's kube-controller-manager manifest: the old one taken out of the
/// manifests folder first, then — once its process is gone and a moment more for the kubelet to
/// finish the old pod — the new one written beside the folder and renamed into it, so the kubelet
/// never reads half a file (nor a second manifest). Written while the old pod still terminates,
/// the new static pod of the same name waits for the kubelet's pod worker to retry it, 10–15 s
/// later (its back-off); so the restart took ~14 s where it now takes ~3 s.
async fn write_manifest(node: &str, text: &str) -> Result<(), String> {
    let script = replace_script(
        KCM_MANIFEST,
        "/etc/kubernetes/.hpa-conformance-kcm",
        "kube-controller",
    );
    docker(
        &["exec", "-i", node, "sh", "-c", &script],
        Some(text.into()),
    )
    .await
    .map(|_| ())
}

/// The shell script of [`write_manifest`] for `manifest`, which reads the new manifest on its
/// standard input and stages files at `staging` (outside the manifests folder) plus `.old` and
/// `.yaml`. `process` is the name of the manifest's process as `/proc/PID/comm` gives it (a
/// command's first 15 characters); the wait for it to go is bounded (30 s, the pod's default
/// grace period), after which the new manifest goes in anyway.
fn replace_script(manifest: &str, staging: &str, process: &str) -> String {
    let aside = format!("{staging}.old");
    let new = format!("{staging}.yaml");
    format!(
        "set -e; \
         if [ -e {manifest} ]; then mv {manifest} {aside}; fi; \
         i=0; while grep -qx {process} /proc/[0-9]*/comm 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; \
         sleep 2; \
         cat > {new}; mv {new} {manifest}; rm -f {aside}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "apiVersion: v1
kind: Pod
spec:
  containers:
  - command:
    - kube-controller-manager
    - --allocate-node-cidrs=true
    - --horizontal-pod-autoscaler-sync-period=3s
    - --kube-api-qps=200
    image: registry.k8s.io/kube-controller-manager:v1.37.2
";

    #[test]
    fn the_manifest_is_replaced_after_the_old_process_is_gone_and_nothing_is_left_aside() {
        let dir = std::env::temp_dir().join(format!("hpa-conformance-kcm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        let manifests = dir.join("manifests");
        std::fs::create_dir(&manifests).unwrap();
        let manifest = manifests.join("kcm.yaml");
        std::fs::write(&manifest, "old").unwrap();
        let staging = dir.join(".staged");
        let script = replace_script(
            manifest.to_str().unwrap(),
            staging.to_str().unwrap(),
            "no-such-process",
        );
        for _ in 0..2 {
            let mut child = std::process::Command::new("sh")
                .args(["-c", &script])
                .stdin(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            use std::io::Write as _;
            child.stdin.take().unwrap().write_all(b"new").unwrap();
            assert!(child.wait().unwrap().success());
            assert_eq!(std::fs::read_to_string(&manifest).unwrap(), "new");
            let left: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(left, vec![std::ffi::OsString::from("manifests")]);
            assert_eq!(std::fs::read_dir(&manifests).unwrap().count(), 1);
            // A second time with no manifest in place (a restore after a run that removed it).
            std::fs::remove_file(&manifest).unwrap();
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_manifest_gets_each_flag_replaced_or_added_and_nothing_else_changes() {
        let flags = vec![
            "--horizontal-pod-autoscaler-sync-period=6s".to_string(),
            "--horizontal-pod-autoscaler-cpu-initialization-period=24s".to_string(),
        ];
        let out = manifest_with_flags(MANIFEST, &flags).unwrap();
        assert!(out.contains("    - --horizontal-pod-autoscaler-sync-period=6s\n"));
        assert!(!out.contains("sync-period=3s"));
        assert!(out.contains(
            "    - kube-controller-manager\n    - --horizontal-pod-autoscaler-cpu-initialization-period=24s\n"
        ));
        assert!(out.contains("    - --kube-api-qps=200\n") && out.ends_with("v1.37.2\n"));
        assert_eq!(out.lines().count(), MANIFEST.lines().count() + 1);
        // Putting the same flags again changes nothing.
        assert_eq!(manifest_with_flags(&out, &flags).unwrap(), out);
        assert!(manifest_with_flags("kind: Pod\n", &flags).is_err());
    }

    #[test]
    fn args_get_each_flag_replaced_in_place_or_appended() {
        let args: Vec<String> = ["--a=1", "--horizontal-pod-autoscaler-tolerance=0.1", "--b"]
            .map(String::from)
            .to_vec();
        let out = with_flags(
            &args,
            &[
                "--horizontal-pod-autoscaler-tolerance=0.2".into(),
                "--c=3".into(),
            ],
        );
        assert_eq!(
            out,
            [
                "--a=1",
                "--horizontal-pod-autoscaler-tolerance=0.2",
                "--b",
                "--c=3"
            ]
        );
    }

    #[test]
    fn feature_gates_are_merged_gate_by_gate_into_the_controllers_own() {
        let args: Vec<String> = ["--feature-gates=HPAScaleToZero=true,Other=true", "--b"]
            .map(String::from)
            .to_vec();
        let out = with_flags(
            &args,
            &["--feature-gates=HPAScaleToZero=false,PodLevelResources=false".into()],
        );
        assert_eq!(
            out,
            [
                "--feature-gates=HPAScaleToZero=false,Other=true,PodLevelResources=false",
                "--b"
            ]
        );
        // In a manifest alike; where it has none, the flag is added as given.
        let text = MANIFEST.replace(
            "    - kube-controller-manager\n",
            "    - kube-controller-manager\n    - --feature-gates=HPAScaleToZero=true\n",
        );
        let out = manifest_with_flags(&text, &["--feature-gates=PodLevelResources=false".into()])
            .unwrap();
        assert!(
            out.contains("    - --feature-gates=HPAScaleToZero=true,PodLevelResources=false\n"),
            "{out}"
        );
        assert_eq!(out.lines().count(), text.lines().count());
        let out = manifest_with_flags(MANIFEST, &["--feature-gates=HPAScaleToZero=false".into()])
            .unwrap();
        assert!(out.contains("    - --feature-gates=HPAScaleToZero=false\n"));
        // Any other flag is replaced whole.
        assert_eq!(merged("--a=1,2", "--a=3"), "--a=3");
    }

    #[test]
    fn only_kind_nodes_in_docker_are_known() {
        assert_eq!(
            kind_container("kind://docker/hpa-conformance/hpa-conformance-control-plane"),
            Some("hpa-conformance-control-plane".into())
        );
        assert_eq!(kind_container("aws:///eu-west-1a/i-0abc"), None);
        assert_eq!(kind_container("kind://podman/x/y"), None);
        assert_eq!(kind_container("kind://docker/x/"), None);
    }

    #[test]
    fn the_lease_follows_the_controllers_flags() {
        let kcm = Controller::KindControllerManager {
            node: "n".into(),
            original: String::new(),
        };
        assert_eq!(
            lease_of(&kcm, &[]),
            Some(("kube-system".into(), "kube-controller-manager".into()))
        );
        let d = Controller::Deployment {
            namespace: "hpa-reference".into(),
            name: "hpa-reference".into(),
            container: "c".into(),
            original: Vec::new(),
        };
        let args: Vec<String> = [
            "--leader-elect=true",
            "--leader-elect-resource-name=lead",
            "--leader-elect-resource-namespace=$(POD_NAMESPACE)",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            lease_of(&d, &args),
            Some(("hpa-reference".into(), "lead".into()))
        );
        assert_eq!(lease_of(&d, &["--leader-elect=false".into()]), None);
    }
}
