//! The scale benchmark on kind (`just bench kind-scale`): N HPAs, each in its own namespace with a
//! Deployment of simulated pods (bound to the harness's simulated node, Running and Ready) and a
//! Pods metric served by the metrics stub; then, per controller, how late each HPA's reconciles
//! come (from the instants the stub saw each namespace's metric requested) and what the
//! controller's process cost (CPU seconds and peak RSS, read from `/proc` in the kind node).
//! Printed figures, never a test. `kind-config/scripts/kind-scale.sh` drives it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hpa_metrics_stub::control::{ControlDocument, RequestTimes};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time as KubeTime;
use kube::Client;
use kube::api::{Api, ListParams};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::kube as k;
use super::plan::WorkloadKind;
use super::requests;
use super::stub::StubControl;
use hpa_reference::metrics_api::{ListAnswer, MetricsApis, PodValue};

/// The run label's value on the benchmark's namespaces.
pub const RUN: &str = "kind-scale";
/// The Pods metric every HPA scales on (each pod reports exactly the target: no HPA rescales).
pub const METRIC: &str = "requests_per_second";

/// The benchmark's namespace of HPA `i`.
pub fn namespace(i: usize) -> String {
    format!("hpa-scale-{i:05}")
}

/// What to create.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    /// HPAs (one namespace each).
    pub hpas: usize,
    /// Pods per HPA.
    pub pods: usize,
    /// Namespaces set up at once.
    pub parallel: usize,
}

/// Creates the load and returns how long it took. A re-run resumes, and repairs what a stopped
/// load or a restarted stub left (see [`one`]).
pub async fn create(client: &Client, load: Load) -> Result<Duration, String> {
    let started = Instant::now();
    k::ensure_sim_node(client).await?;
    k::heartbeat(client).await?;
    let stub = StubControl::connect(client).await?;
    let sem = Arc::new(tokio::sync::Semaphore::new(load.parallel.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..load.hpas {
        let (client, sem, stub) = (client.clone(), sem.clone(), stub.clone());
        tasks.spawn(async move {
            let _permit = sem.acquire_owned().await.map_err(|e| e.to_string())?;
            one(&client, &stub, &namespace(i), load.pods).await
        });
    }
    let mut last_beat = Instant::now();
    let mut done = 0;
    while let Some(joined) = tasks.join_next().await {
        joined.map_err(|e| e.to_string())??;
        done += 1;
        if done % 100 == 0 || done == load.hpas {
            eprintln!(
                "kind-scale: {done}/{} HPAs set up ({:.0} s)",
                load.hpas,
                started.elapsed().as_secs_f64()
            );
        }
        if last_beat.elapsed() > Duration::from_secs(10) {
            k::heartbeat(client).await?;
            last_beat = Instant::now();
        }
    }
    Ok(started.elapsed())
}

/// Sets up (or repairs) namespace `ns`: its Deployment of `pods` pods, each Running and Ready on
/// the simulated node, the stub's metric for them, and the HPA. On a re-run the parts already
/// there are kept, and the rest is put back: pods that lost their readiness while nothing kept
/// the node Ready are made Ready again, and the stub (whose answers live in its memory, lost when
/// its pod restarts) is given the namespace's metric again.
async fn one(client: &Client, stub: &StubControl, ns: &str, pods: usize) -> Result<(), String> {
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), ns);
    let has_hpa = hpas
        .get_opt("app")
        .await
        .map_err(|e| e.to_string())?
        .is_some();
    let labels: BTreeMap<String, String> = [("app".to_string(), "app".to_string())].into();
    let replicas = i32::try_from(pods).map_err(|e| e.to_string())?;
    if !has_hpa {
        ensure_workload(client, ns, &labels, replicas).await?;
    }
    // The ReplicaSet controller creates the pods; the harness plays their kubelet.
    let api: Api<Pod> = Api::namespaced(client.clone(), ns);
    let deadline = Instant::now() + Duration::from_secs(600);
    let listed = loop {
        let list = api
            .list(&ListParams::default().labels("app=app"))
            .await
            .map_err(|e| e.to_string())?;
        if list.items.len() >= pods {
            break list.items;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{ns}: {} of {pods} pods after 600 s",
                list.items.len()
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let started =
        k8s_openapi::jiff::Timestamp::now() - k8s_openapi::jiff::SignedDuration::from_mins(10);
    let status = json!({
        "phase": "Running", "startTime": started.to_string(),
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": started.to_string()}]
    });
    let mut names = Vec::with_capacity(listed.len());
    for pod in listed {
        let Some(name) = pod.metadata.name.clone() else {
            continue;
        };
        if !running_and_ready(&pod) {
            k::patch_pod_status(client, ns, &name, &status).await?;
        }
        names.push(name);
    }
    let mut doc = ControlDocument::default();
    let mut values = ListAnswer::<PodValue>::default();
    for name in &names {
        doc.pods.insert(name.clone(), labels.clone());
        values.items.push(PodValue {
            pod: name.clone(),
            value: Quantity("10".into()),
            timestamp: KubeTime(started),
            window_seconds: None,
        });
    }
    doc.metrics = MetricsApis::default();
    doc.metrics.pods.insert(METRIC.into(), values);
    stub.put(ns, &doc).await?;
    if has_hpa {
        return Ok(());
    }
    let hpa: HorizontalPodAutoscaler = serde_json::from_value(json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "app"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "app"},
            "minReplicas": 1, "maxReplicas": replicas.saturating_mul(2),
            "metrics": [{"type": "Pods", "pods": {
                "metric": {"name": METRIC},
                "target": {"type": "AverageValue", "averageValue": "10"}
            }}]
        }
    }))
    .map_err(|e| e.to_string())?;
    k::create_hpa(client, ns, &hpa).await
}

/// The namespace and its Deployment `app` of `replicas` pods, each created when missing.
async fn ensure_workload(
    client: &Client,
    ns: &str,
    labels: &BTreeMap<String, String>,
    replicas: i32,
) -> Result<(), String> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    if namespaces
        .get_opt(ns)
        .await
        .map_err(|e| e.to_string())?
        .is_none()
    {
        k::create_namespace(client, ns, RUN).await?;
    }
    let spec: PodSpec = serde_json::from_value(json!({"containers": [{
        "name": "app", "image": k::POD_IMAGE,
        "resources": {"requests": {"cpu": "100m"}}
    }]}))
    .map_err(|e| e.to_string())?;
    match k::create_workload(
        client,
        ns,
        WorkloadKind::Deployment,
        "app",
        replicas,
        labels,
        &spec,
    )
    .await
    {
        Err(e) if !e.contains("AlreadyExists") => Err(e),
        _ => Ok(()),
    }
}

/// Whether the pod is Running with its Ready condition True (as the load leaves it).
fn running_and_ready(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|s| {
        s.phase.as_deref() == Some("Running")
            && s.conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

/// How long the heartbeat may fail before [`keep_node`] gives up: the cluster is gone.
pub const HEARTBEAT_GIVE_UP: Duration = Duration::from_secs(120);

/// Keeps the simulated node Ready (its kubelet's heartbeat, every 10 s) until the process is
/// stopped — or until the heartbeat has failed for [`HEARTBEAT_GIVE_UP`] (the cluster was
/// deleted: a load left running for a kept cluster, `KEEP=1`, then ends by itself). Returns the
/// last error.
pub async fn keep_node(client: &Client) -> String {
    let mut failing_since: Option<Instant> = None;
    loop {
        match k::heartbeat(client).await {
            Ok(()) => failing_since = None,
            Err(e) => {
                eprintln!("kind-scale: heartbeat: {e}");
                let since = *failing_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= HEARTBEAT_GIVE_UP {
                    return format!(
                        "the simulated node's heartbeat failed for {} s (the cluster is gone?): {e}",
                        HEARTBEAT_GIVE_UP.as_secs()
                    );
                }
            }
        }
        tokio::time::sleep(Duration::from_secs(10)).await;
    }
}

/// Waits until every one of `hpas` namespaces has had a metric request after `since_ms` (each HPA
/// reconciled at least once by the controller now running), or `timeout`.
pub async fn wait_all_reconciled(
    stub: &StubControl,
    hpas: usize,
    since_ms: i64,
    timeout: Duration,
) -> Result<Duration, String> {
    let started = Instant::now();
    loop {
        let times: RequestTimes = stub.request_times().await?;
        let done = (0..hpas)
            .filter(|i| {
                times
                    .namespaces
                    .get(&namespace(*i))
                    .and_then(|t| t.last())
                    .is_some_and(|t| *t > since_ms)
            })
            .count();
        if done == hpas {
            return Ok(started.elapsed());
        }
        if started.elapsed() > timeout {
            return Err(format!(
                "only {done} of {hpas} HPAs reconciled within {} s",
                timeout.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// How late the reconciles in a window came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lateness {
    /// HPAs of the load.
    pub hpas: usize,
    /// HPAs with at least two reconciles in the window (an interval to measure).
    pub measured: usize,
    /// Intervals between consecutive reconciles of one HPA, in the window.
    pub intervals: usize,
    /// Median of (interval − sync period), seconds.
    pub p50: f64,
    /// 99th percentile, seconds.
    pub p99: f64,
    /// The largest, seconds.
    pub max: f64,
    /// HPAs whose every interval was within one sync period plus one second.
    pub on_time: usize,
}

/// The lateness of each HPA's reconciles between `from_ms` and `to_ms` (Unix ms), against `period`.
pub fn lateness(
    times: &RequestTimes,
    hpas: usize,
    from_ms: i64,
    to_ms: i64,
    period: Duration,
) -> Lateness {
    let period_s = period.as_secs_f64();
    let mut late: Vec<f64> = Vec::new();
    let (mut measured, mut on_time) = (0, 0);
    for i in 0..hpas {
        let Some(t) = times.namespaces.get(&namespace(i)) else {
            continue;
        };
        let inside: Vec<i64> = t
            .iter()
            .copied()
            .filter(|t| (from_ms..=to_ms).contains(t))
            .collect();
        if inside.len() < 2 {
            continue;
        }
        measured += 1;
        let mut worst = f64::MIN;
        for w in inside.windows(2) {
            let l = (w[1] - w[0]) as f64 / 1000.0 - period_s;
            worst = worst.max(l);
            late.push(l);
        }
        if worst <= 1.0 {
            on_time += 1;
        }
    }
    late.sort_by(f64::total_cmp);
    let pick = |q: f64| -> f64 {
        if late.is_empty() {
            return f64::NAN;
        }
        let idx = ((late.len() as f64 - 1.0) * q).round() as usize;
        late[idx.min(late.len() - 1)]
    };
    Lateness {
        hpas,
        measured,
        intervals: late.len(),
        p50: pick(0.5),
        p99: pick(0.99),
        max: late.last().copied().unwrap_or(f64::NAN),
        on_time,
    }
}

/// One process's cost, read from `/proc` in the kind node.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProcessCost {
    /// Its PID in the node.
    pub pid: u32,
    /// CPU seconds (user + system) since it started.
    pub cpu_seconds: f64,
    /// Peak resident set (`VmHWM`), bytes.
    pub peak_rss: u64,
    /// Resident set now (`VmRSS`), bytes.
    pub rss: u64,
}

/// Clock ticks per second of `/proc/<pid>/stat` (Linux's USER_HZ on every platform kind runs on).
const USER_HZ: f64 = 100.0;

/// CPU seconds from a `/proc/<pid>/stat` line: the process's own (utime + stime, fields 14 and
/// 15) and its waited-for children's (cutime + cstime, 16 and 17). `just bench fuzz` reads its
/// own line with it to split a batch's CPU between the harness and the implementation.
pub fn stat_cpu_seconds(stat: &str) -> Result<(f64, f64), String> {
    // Fields after the command name (which may hold spaces) start at `) `: field 3 on.
    let rest = stat
        .rsplit_once(") ")
        .map(|(_, r)| r)
        .ok_or_else(|| format!("unreadable stat {stat:?}"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |field: usize| -> Result<f64, String> {
        fields
            .get(field - 3)
            .and_then(|v| v.parse::<u64>().ok())
            .map(|v| v as f64 / USER_HZ)
            .ok_or_else(|| format!("stat field {field} missing"))
    };
    Ok((tick(14)? + tick(15)?, tick(16)? + tick(17)?))
}

/// Parses `/proc/<pid>/stat` and `/proc/<pid>/status` into a cost.
pub fn parse_proc(pid: u32, stat: &str, status: &str) -> Result<ProcessCost, String> {
    let (cpu_seconds, _) = stat_cpu_seconds(stat).map_err(|e| format!("pid {pid}: {e}"))?;
    let kib = |key: &str| -> Result<u64, String> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|v| v * 1024)
            .ok_or_else(|| format!("pid {pid}: no {key} in status"))
    };
    Ok(ProcessCost {
        pid,
        cpu_seconds,
        peak_rss: kib("VmHWM:")?,
        rss: kib("VmRSS:")?,
    })
}

/// The costs of every process in kind node `node` whose command name (`comm`, 15 characters at
/// most) is `comm`, read with `docker exec`.
pub fn processes(node: &str, comm: &str) -> Result<Vec<ProcessCost>, String> {
    let script = format!(
        "for d in /proc/[0-9]*; do [ \"$(cat $d/comm 2>/dev/null)\" = '{comm}' ] || continue; \
         echo \"@@ ${{d#/proc/}}\"; cat $d/stat; echo @@; cat $d/status; done"
    );
    let out = std::process::Command::new("docker")
        .args(["exec", node, "sh", "-c", &script])
        .output()
        .map_err(|e| format!("docker exec {node}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "docker exec {node}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut costs = Vec::new();
    for block in text.split("@@ ").skip(1) {
        let (head, rest) = block.split_once('\n').unwrap_or((block, ""));
        let pid: u32 = head
            .trim()
            .parse()
            .map_err(|e| format!("pid {head:?}: {e}"))?;
        let (stat, status) = rest.split_once("@@\n").unwrap_or((rest, ""));
        costs.push(parse_proc(pid, stat, status)?);
    }
    Ok(costs)
}

/// One controller's figures in one window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Which controller (`kube-controller-manager`, `hpa-reference`).
    pub controller: String,
    /// The window, seconds.
    pub window: f64,
    /// Reconcile lateness in the window.
    pub lateness: Lateness,
    /// Per process of the controller: CPU seconds in a window (the median of the windows when
    /// there were several), peak RSS at the end; the busiest process first.
    pub processes: Vec<(u32, f64, u64)>,
    /// The busiest process's CPU seconds in each consecutive window (one CPU figure of a 120 s
    /// window varies by a third between windows of one steady load; the median of several is
    /// the figure the table compares). Empty in figures written before windows were counted.
    #[serde(default)]
    pub cpu_windows: Vec<f64>,
    /// kube-controller-manager's CPU seconds in a window (the median of the windows; its other
    /// controllers: the baseline when the HPA controller under test is not KCM's).
    pub kcm_cpu_seconds: f64,
    /// kube-controller-manager's CPU seconds in each window.
    #[serde(default)]
    pub kcm_cpu_windows: Vec<f64>,
    /// The API server's requests per second in the window, by verb and resource (every client:
    /// the load and the cluster's own components are the same in both windows).
    #[serde(default)]
    pub requests: requests::Counts,
    /// The metrics APIs' requests per second in the window, as the stub counted them (the API
    /// server's counters leave out what its aggregator proxies).
    #[serde(default)]
    pub metrics_requests: f64,
}

/// What and how long to measure.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The kind node's container.
    pub node: String,
    /// The controller's name in the report.
    pub controller: String,
    /// Its processes' command name in the node.
    pub comm: String,
    /// Its sync period.
    pub period: Duration,
    /// Time between the first full round of reconciles and the window.
    pub settle: Duration,
    /// The window.
    pub window: Duration,
    /// Consecutive windows (at least one): CPU is read per window and the median reported.
    pub windows: usize,
}

/// Measures the controller `probe` names for its window, after every one of `hpas` HPAs has been
/// reconciled once since now and the settling time has passed.
pub async fn measure(client: &Client, probe: &Probe, hpas: usize) -> Result<Figures, String> {
    let Probe {
        node,
        controller,
        comm,
        period,
        settle,
        window,
        windows,
    } = probe.clone();
    let (node, comm) = (node.as_str(), comm.as_str());
    let now_ms = || k8s_openapi::jiff::Timestamp::now().as_millisecond();
    let stub = StubControl::connect(client).await?;
    let since = now_ms();
    let first = wait_all_reconciled(&stub, hpas, since, Duration::from_secs(600)).await?;
    eprintln!(
        "kind-scale: {controller}: every HPA reconciled within {:.0} s; settling {} s",
        first.as_secs_f64(),
        settle.as_secs()
    );
    tokio::time::sleep(settle).await;
    let kcm = "kube-controller";
    let windows = windows.max(1);
    // The processes' costs at each window's edges: windows + 1 readings of each command.
    let mut edges = vec![(processes(node, comm)?, processes(node, kcm)?)];
    let requests_before = requests::read(client).await?;
    let from = now_ms();
    for n in 1..=windows {
        eprintln!(
            "kind-scale: {controller}: measuring {} s (window {n} of {windows})",
            window.as_secs()
        );
        let mut left = window;
        while !left.is_zero() {
            let step = left.min(Duration::from_secs(10));
            tokio::time::sleep(step).await;
            left -= step;
            if let Err(e) = k::heartbeat(client).await {
                eprintln!("kind-scale: heartbeat: {e}");
            }
        }
        edges.push((processes(node, comm)?, processes(node, kcm)?));
    }
    let requests_after = requests::read(client).await?;
    let to = now_ms();
    let times = stub.request_times().await?;
    let span = (to - from) as f64 / 1000.0;
    let costs = window_costs(&edges);
    if costs.processes.is_empty() {
        return Err(format!("no process named {comm} in {node}"));
    }
    Ok(Figures {
        controller: controller.to_string(),
        window: span / windows as f64,
        lateness: lateness(&times, hpas, from, to, period),
        processes: costs.processes,
        cpu_windows: costs.busiest,
        kcm_cpu_seconds: median(&costs.kcm),
        kcm_cpu_windows: costs.kcm,
        requests: requests::rates(&requests_before, &requests_after, span),
        metrics_requests: times
            .namespaces
            .values()
            .map(|t| t.iter().filter(|t| (from..=to).contains(*t)).count())
            .sum::<usize>() as f64
            / span,
    })
}

/// The costs of consecutive windows, from the processes read at their edges.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowCosts {
    /// Per process alive at the end: (pid, median CPU seconds per window, peak RSS), busiest
    /// first.
    pub processes: Vec<(u32, f64, u64)>,
    /// The busiest process's CPU seconds in each window.
    pub busiest: Vec<f64>,
    /// kube-controller-manager's CPU seconds (all its processes) in each window.
    pub kcm: Vec<f64>,
}

/// Each window's CPU from the readings at its edges (`edges[i]` and `edges[i + 1]`: the
/// controller's processes, then kube-controller-manager's). A process first seen at an edge
/// counts all its CPU in the window it appeared in; one gone by an edge counts nothing after.
pub fn window_costs(edges: &[(Vec<ProcessCost>, Vec<ProcessCost>)]) -> WindowCosts {
    let spent = |before: &[ProcessCost], after: &ProcessCost| -> f64 {
        before
            .iter()
            .find(|p| p.pid == after.pid)
            .map_or(after.cpu_seconds, |p| after.cpu_seconds - p.cpu_seconds)
    };
    let last = edges.last().map(|e| e.0.as_slice()).unwrap_or_default();
    let per_window = |pid: u32| -> Vec<f64> {
        edges
            .windows(2)
            .map(|w| {
                w[1].0
                    .iter()
                    .find(|p| p.pid == pid)
                    .map_or(0.0, |a| spent(&w[0].0, a))
            })
            .collect()
    };
    let mut processes: Vec<(u32, f64, u64, Vec<f64>)> = last
        .iter()
        .map(|p| {
            let cpu = per_window(p.pid);
            (p.pid, median(&cpu), p.peak_rss, cpu)
        })
        .collect();
    processes.sort_by(|x, y| y.1.total_cmp(&x.1));
    let busiest = processes.first().map(|p| p.3.clone()).unwrap_or_default();
    let kcm = edges
        .windows(2)
        .map(|w| w[1].1.iter().map(|a| spent(&w[0].1, a)).sum())
        .collect();
    WindowCosts {
        processes: processes
            .into_iter()
            .map(|(pid, cpu, rss, _)| (pid, cpu, rss))
            .collect(),
        busiest,
        kcm,
    }
}

/// The median (the mean of the two middle values of an even count; 0 for none).
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// What a failover of the reference controller under the load did (`kind-scale failover`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failover {
    /// The Lease holder that was killed, and the one that took over.
    pub old_holder: String,
    /// The new holder.
    pub new_holder: String,
    /// From the kill until the Lease named another holder (its `acquireTime` when it has one,
    /// else when the poll saw it), seconds.
    pub takeover: f64,
    /// From the kill until every HPA had been reconciled again (the last HPA's first metric
    /// request after the kill), seconds.
    pub all_reconciled: f64,
    /// HPAs.
    pub hpas: usize,
    /// `SuccessfulRescale` events in the benchmark's namespaces (the load is steady: 0 expected).
    pub rescale_events: usize,
    /// Deployments whose replicas are not the load's pod count (0 expected).
    pub replicas_changed: usize,
    /// HPAs whose status desires another count than the load's (0 expected).
    pub desired_changed: usize,
}

/// After the script killed the Lease holder `old_holder` at `killed_ms` (Unix ms): waits for the
/// takeover and for every HPA's next reconcile, then counts what rescaled.
pub async fn failover(
    client: &Client,
    hpas: usize,
    pods: i32,
    lease: (&str, &str),
    old_holder: &str,
    killed_ms: i64,
    timeout: Duration,
) -> Result<Failover, String> {
    use k8s_openapi::api::coordination::v1::Lease;
    let leases: Api<Lease> = Api::namespaced(client.clone(), lease.0);
    let started = Instant::now();
    let now_ms = || k8s_openapi::jiff::Timestamp::now().as_millisecond();
    let (new_holder, takeover) = loop {
        let l = leases.get(lease.1).await.map_err(|e| e.to_string())?;
        let spec = l.spec.unwrap_or_default();
        match spec.holder_identity {
            Some(h) if !h.is_empty() && h != old_holder => {
                let at = spec
                    .acquire_time
                    .map_or_else(now_ms, |t| t.0.as_millisecond());
                break (h, (at - killed_ms) as f64 / 1000.0);
            }
            _ => {}
        }
        if started.elapsed() > timeout {
            return Err(format!(
                "no new holder of {}/{} within {} s",
                lease.0,
                lease.1,
                timeout.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    eprintln!(
        "kind-scale: failover: {new_holder} holds the Lease ({takeover:.1} s after the kill)"
    );
    let stub = StubControl::connect(client).await?;
    wait_all_reconciled(&stub, hpas, killed_ms, timeout).await?;
    let times = stub.request_times().await?;
    let last_first = (0..hpas)
        .filter_map(|i| {
            times
                .namespaces
                .get(&namespace(i))
                .and_then(|t| t.iter().copied().find(|t| *t > killed_ms))
        })
        .max()
        .unwrap_or(killed_ms);
    let ours = |ns: Option<&String>| {
        ns.and_then(|ns| ns.strip_prefix("hpa-scale-"))
            .and_then(|i| i.parse::<usize>().ok())
            .is_some_and(|i| i < hpas)
    };
    let rescaled = ListParams::default().fields("reason=SuccessfulRescale");
    let rescale_events = count_where(
        client,
        &rescaled,
        |e: &k8s_openapi::api::core::v1::Event| ours(e.metadata.namespace.as_ref()),
    )
    .await?;
    let all = ListParams::default();
    let replicas_changed = count_where(
        client,
        &all,
        |d: &k8s_openapi::api::apps::v1::Deployment| {
            ours(d.metadata.namespace.as_ref()) && d.spec.replicas != Some(pods)
        },
    )
    .await?;
    let desired_changed = count_where(client, &all, |h: &HorizontalPodAutoscaler| {
        ours(h.metadata.namespace.as_ref())
            && h.status.as_ref().map(|s| s.desired_replicas) != Some(pods)
    })
    .await?;
    Ok(Failover {
        old_holder: old_holder.to_string(),
        new_holder,
        takeover,
        all_reconciled: (last_first - killed_ms) as f64 / 1000.0,
        hpas,
        rescale_events,
        replicas_changed,
        desired_changed,
    })
}

/// How many objects of kind `K`, listed in every namespace with `params`, `keep` keeps.
async fn count_where<K>(
    client: &Client,
    params: &ListParams,
    keep: impl Fn(&K) -> bool,
) -> Result<usize, String>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::all(client.clone());
    let list = api.list(params).await.map_err(|e| e.to_string())?;
    Ok(list.items.iter().filter(|o| keep(o)).count())
}

/// The failover's lines under the table.
pub fn failover_lines(f: &Failover) -> String {
    format!(
        "failover (the leader SIGKILLed, {} HPAs): a new process ({}) held the Lease {:.1} s after the kill; every HPA reconciled again {:.1} s after it\n  SuccessfulRescale events {}, Deployments not at their count {}, HPAs desiring another count {} (0 expected each: the load is steady)\n",
        f.hpas,
        f.new_holder,
        f.takeover,
        f.all_reconciled,
        f.rescale_events,
        f.replicas_changed,
        f.desired_changed
    )
}

/// The comparison table of two runs (`kcm` with kube-controller-manager's HPA controller,
/// `reference` with the deployed reference controller).
pub fn table(kcm: &Figures, reference: &Figures) -> String {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let mut out = String::new();
    let l = |f: &Figures| {
        format!(
            "{}/{} HPAs measured, {} on time (every interval ≤ period + 1 s); lateness p50 {:+.2} s, p99 {:+.2} s, max {:+.2} s",
            f.lateness.measured,
            f.lateness.hpas,
            f.lateness.on_time,
            f.lateness.p50,
            f.lateness.p99,
            f.lateness.max
        )
    };
    // Several windows: the median is compared, and every window's figure shown.
    let each = |w: &[f64]| -> String {
        if w.len() < 2 {
            return String::new();
        }
        let all: Vec<String> = w.iter().map(|c| format!("{c:.2}")).collect();
        format!(" (median of {} windows: {} s)", w.len(), all.join(" / "))
    };
    let (k_cpu, k_rss) = (kcm.processes[0].1, kcm.processes[0].2);
    let (r_cpu, r_rss) = (reference.processes[0].1, reference.processes[0].2);
    let hpa_share = k_cpu - reference.kcm_cpu_seconds * kcm.window / reference.window;
    out.push_str(&format!(
        "kube-controller-manager (HPA controller on): window {:.0} s; {}\n  CPU {:.2} s ({:.1}% of a core){}, peak RSS {:.1} MiB (the whole KCM)\n  KCM without its HPA controller, same load: CPU {:.2} s in {:.0} s{} → the HPA controller's share ≈ {:.2} s\n",
        kcm.window,
        l(kcm),
        k_cpu,
        100.0 * k_cpu / kcm.window,
        each(&kcm.cpu_windows),
        mib(k_rss),
        reference.kcm_cpu_seconds,
        reference.window,
        each(&reference.kcm_cpu_windows),
        hpa_share,
    ));
    out.push_str(&format!(
        "hpa-reference (leader): window {:.0} s; {}\n  CPU {:.2} s ({:.1}% of a core){}, peak RSS {:.1} MiB",
        reference.window,
        l(reference),
        r_cpu,
        100.0 * r_cpu / reference.window,
        each(&reference.cpu_windows),
        mib(r_rss),
    ));
    for (pid, cpu, rss) in &reference.processes[1..] {
        out.push_str(&format!(
            "; standby pid {pid}: CPU {cpu:.1} s, peak RSS {:.1} MiB",
            mib(*rss)
        ));
    }
    out.push('\n');
    out.push_str(&format!(
        "ratios (reference / KCM): CPU {:.2} of the whole KCM, {:.2} of its HPA share; peak RSS {:.2} of the whole KCM\n",
        r_cpu / k_cpu,
        if hpa_share > 0.0 { r_cpu / hpa_share } else { f64::NAN },
        r_rss as f64 / k_rss as f64,
    ));
    out.push_str(&requests_table(&kcm.requests, &reference.requests));
    if kcm.metrics_requests > 0.0 || reference.metrics_requests > 0.0 {
        out.push_str(&format!(
            "  metrics APIs (the stub's count; the API server's counters leave out what its aggregator proxies) | {:.1} | {:.1}\n",
            kcm.metrics_requests, reference.metrics_requests
        ));
    }
    out
}

/// The API server's requests per second in each window: totals by verb, then every verb and
/// resource at 0.1/s or more in either window.
pub fn requests_table(kcm: &requests::Counts, reference: &requests::Counts) -> String {
    if kcm.is_empty() && reference.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "API server requests/s in the window (every client) | with KCM's HPA controller | with hpa-reference\n",
    );
    let rows = |out: &mut String, k: &requests::Counts, r: &requests::Counts, min: f64| {
        let keys: std::collections::BTreeSet<&String> = k.keys().chain(r.keys()).collect();
        for key in keys {
            let (a, b) = (
                k.get(key).copied().unwrap_or(0.0),
                r.get(key).copied().unwrap_or(0.0),
            );
            if a >= min || b >= min {
                out.push_str(&format!("  {key} | {a:.1} | {b:.1}\n"));
            }
        }
    };
    let (kv, rv) = (requests::by_verb(kcm), requests::by_verb(reference));
    let total = |c: &requests::Counts| c.values().sum::<f64>();
    out.push_str(&format!("  all | {:.1} | {:.1}\n", total(&kv), total(&rv)));
    rows(&mut out, &kv, &rv, 0.0);
    rows(&mut out, kcm, reference, 0.1);
    out
}

/// `hpa-conformance kind-scale`: the benchmark's steps (`kind-config/scripts/kind-scale.sh` runs
/// them in order around switching the controller).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The kubeconfig (default: `$KUBECONFIG` or `~/.kube/config`).
    #[arg(long, global = true)]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// Its context (default: the current one).
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// HPAs (one namespace, Deployment and HPA each).
    #[arg(long, default_value_t = 1000, global = true)]
    pub hpas: usize,
    /// The step.
    #[command(subcommand)]
    pub step: Step,
}

/// A step of the benchmark.
#[derive(Debug, clap::Subcommand)]
pub enum Step {
    /// Create the load (a re-run resumes and repairs), then keep the simulated node Ready until stopped.
    Load {
        /// Simulated pods per HPA.
        #[arg(long, default_value_t = 10)]
        pods: usize,
        /// Namespaces set up at once.
        #[arg(long, default_value_t = 16)]
        parallel: usize,
    },
    /// Measure the HPA controller now running: wait until it has reconciled every HPA, settle,
    /// then a window; print its figures as one JSON line.
    Measure {
        /// The controller's name in the report.
        #[arg(long)]
        controller: String,
        /// Its processes' command name in the kind node (`/proc/<pid>/comm`).
        #[arg(long)]
        comm: String,
        /// The kind node's container.
        #[arg(long, default_value = "hpa-conformance-control-plane")]
        node: String,
        /// The controller's sync period, seconds.
        #[arg(long, default_value_t = 15)]
        sync_period: u64,
        /// Seconds between the first full round of reconciles and the window.
        #[arg(long, default_value_t = 30)]
        settle: u64,
        /// The measured window, seconds.
        #[arg(long, default_value_t = 120)]
        window: u64,
        /// Consecutive windows: CPU per window, the median compared (lateness and requests over
        /// all of them).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=20))]
        windows: u64,
    },
    /// After the script killed the reference's Lease holder: the takeover, every HPA reconciled
    /// again, and what rescaled; print them as one JSON line.
    Failover {
        /// When the holder was killed, Unix milliseconds.
        #[arg(long)]
        killed_ms: i64,
        /// The killed holder's identity.
        #[arg(long)]
        old_holder: String,
        /// The Lease's namespace.
        #[arg(long, default_value = "hpa-reference")]
        lease_namespace: String,
        /// The Lease's name.
        #[arg(long, default_value = "hpa-reference")]
        lease_name: String,
        /// The load's pods per HPA.
        #[arg(long, default_value_t = 10)]
        pods: i32,
        /// Seconds to wait for the takeover and for every HPA.
        #[arg(long, default_value_t = 300)]
        timeout: u64,
    },
    /// Print the comparison of two `measure` outputs (and a `failover` output's lines).
    Table {
        /// kube-controller-manager's figures.
        kcm: std::path::PathBuf,
        /// The reference controller's figures.
        reference: std::path::PathBuf,
        /// A `failover` output.
        #[arg(long)]
        failover: Option<std::path::PathBuf>,
    },
}

/// Runs a step; `Err` is a problem to print (exit 2 at the command line).
pub fn run(args: Args, out: &mut dyn std::io::Write) -> Result<(), String> {
    if let Step::Table {
        kcm,
        reference,
        failover,
    } = &args.step
    {
        fn read<T: serde::de::DeserializeOwned>(p: &std::path::Path) -> Result<T, String> {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))
        }
        let (kcm, reference): (Figures, Figures) = (read(kcm)?, read(reference)?);
        if kcm.processes.is_empty() || reference.processes.is_empty() {
            return Err("a measurement without processes".into());
        }
        let mut text = table(&kcm, &reference);
        if let Some(f) = failover {
            text.push_str(&failover_lines(&read(f)?));
        }
        return write!(out, "{text}").map_err(|e| e.to_string());
    }
    let (kubeconfig, context) = (args.kubeconfig.clone(), args.context.clone());
    super::with_client(
        kubeconfig.as_deref(),
        context.as_deref(),
        2,
        |client, _| async move {
            match args.step {
                Step::Load { pods, parallel } => {
                    let load = Load {
                        hpas: args.hpas,
                        pods,
                        parallel,
                    };
                    let took = create(&client, load).await?;
                    writeln!(
                    out,
                    "kind-scale: {} HPAs with {pods} pods each ready in {:.0} s; keeping the simulated node Ready",
                    args.hpas,
                    took.as_secs_f64()
                )
                .map_err(|e| e.to_string())?;
                    out.flush().map_err(|e| e.to_string())?;
                    Err(keep_node(&client).await)
                }
                Step::Measure {
                    controller,
                    comm,
                    node,
                    sync_period,
                    settle,
                    window,
                    windows,
                } => {
                    let probe = Probe {
                        node,
                        controller,
                        comm,
                        period: Duration::from_secs(sync_period),
                        settle: Duration::from_secs(settle),
                        window: Duration::from_secs(window),
                        windows: windows as usize,
                    };
                    let figures = measure(&client, &probe, args.hpas).await?;
                    let line = serde_json::to_string(&figures).map_err(|e| e.to_string())?;
                    writeln!(out, "{line}").map_err(|e| e.to_string())
                }
                Step::Failover {
                    killed_ms,
                    old_holder,
                    lease_namespace,
                    lease_name,
                    pods,
                    timeout,
                } => {
                    let f = failover(
                        &client,
                        args.hpas,
                        pods,
                        (&lease_namespace, &lease_name),
                        &old_holder,
                        killed_ms,
                        Duration::from_secs(timeout),
                    )
                    .await?;
                    let line = serde_json::to_string(&f).map_err(|e| e.to_string())?;
                    writeln!(out, "{line}").map_err(|e| e.to_string())
                }
                Step::Table { .. } => unreachable!("handled above"),
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_is_measured_between_consecutive_reconciles_inside_the_window() {
        let mut times = RequestTimes::default();
        // HPA 0 on time (15 s apart), HPA 1 twice 2 s late, HPA 2 with one reconcile only.
        times
            .namespaces
            .insert(namespace(0), vec![0, 15_000, 30_000, 45_000]);
        times
            .namespaces
            .insert(namespace(1), vec![1_000, 18_000, 35_000]);
        times.namespaces.insert(namespace(2), vec![5_000]);
        let l = lateness(&times, 3, 0, 40_000, Duration::from_secs(15));
        assert_eq!((l.hpas, l.measured, l.intervals, l.on_time), (3, 2, 4, 1));
        assert_eq!((l.p50, l.max), (2.0, 2.0));
        assert_eq!(l.p99, 2.0);
        let none = lateness(&times, 3, 100_000, 200_000, Duration::from_secs(15));
        assert_eq!((none.measured, none.intervals), (0, 0));
        assert!(none.p50.is_nan());
    }

    #[test]
    fn a_re_run_makes_ready_again_only_the_pods_that_are_not_running_and_ready() {
        let pod = |status: serde_json::Value| -> Pod {
            serde_json::from_value(json!({"metadata": {"name": "p"}, "status": status}))
                .expect("a pod")
        };
        let ready = json!({"type": "Ready", "status": "True"});
        assert!(running_and_ready(&pod(
            json!({"phase": "Running", "conditions": [ready]})
        )));
        // The node lifecycle controller's mark while nothing kept the simulated node Ready.
        assert!(!running_and_ready(&pod(json!({"phase": "Running",
            "conditions": [{"type": "Ready", "status": "False"}]}))));
        assert!(!running_and_ready(&pod(json!({"phase": "Running"}))));
        // A new pod, before the harness played its kubelet.
        assert!(!running_and_ready(&pod(json!({"phase": "Pending"}))));
        assert!(!running_and_ready(
            &serde_json::from_value(json!({})).expect("a pod")
        ));
    }

    #[test]
    fn process_costs_come_from_proc_stat_and_status() {
        let stat = "4242 (kube-controller) S 1 4242 4242 0 -1 4194560 1 0 0 0 1234 566 0 0 20 0 12 0 100 0 0";
        let status = "Name:\tkube-controller\nVmHWM:\t  123456 kB\nVmRSS:\t  100000 kB\n";
        let c = parse_proc(4242, stat, status).unwrap();
        assert_eq!(c.cpu_seconds, 18.0);
        assert_eq!(c.peak_rss, 123_456 * 1024);
        assert_eq!(c.rss, 100_000 * 1024);
        // A command name with spaces and parentheses does not shift the fields.
        let odd = "7 (a (b) c) S 1 7 7 0 -1 0 0 0 0 0 50 50 0 0 20 0 1 0 1 0 0";
        assert_eq!(parse_proc(7, odd, status).unwrap().cpu_seconds, 1.0);
        let waited = "9 (bench) R 1 9 9 0 -1 0 0 0 0 0 300 100 250 50 20 0 1 0 1 0 0";
        assert_eq!(stat_cpu_seconds(waited), Ok((4.0, 3.0)));
        assert!(stat_cpu_seconds("9 (bench) R 1 9 9 0 -1 0 0 0 0 0 300 100").is_err());
        assert!(parse_proc(7, "garbage", status).is_err());
        assert!(parse_proc(4242, stat, "Name: x\n").is_err());
    }

    fn cost(pid: u32, cpu_seconds: f64, peak_rss: u64) -> ProcessCost {
        ProcessCost {
            pid,
            cpu_seconds,
            peak_rss,
            rss: peak_rss,
        }
    }

    #[test]
    fn cpu_is_read_per_window_and_the_median_compared() {
        // Three windows: the leader (pid 10) spends 3.0, 5.5 and 3.6 s; the standby (11) 0.2
        // each; a process started in the second window (12) counts all its CPU there; KCM's two
        // processes are summed per window.
        let edges = vec![
            (
                vec![cost(10, 100.0, 1), cost(11, 5.0, 1)],
                vec![cost(1, 50.0, 1)],
            ),
            (
                vec![cost(10, 103.0, 2), cost(11, 5.2, 1)],
                vec![cost(1, 52.0, 1)],
            ),
            (
                vec![cost(10, 108.5, 3), cost(11, 5.4, 1), cost(12, 0.4, 7)],
                vec![cost(1, 55.0, 1), cost(2, 1.0, 1)],
            ),
            (
                vec![cost(10, 112.1, 4), cost(11, 5.6, 1), cost(12, 0.5, 7)],
                vec![cost(1, 56.5, 1), cost(2, 1.5, 1)],
            ),
        ];
        let c = window_costs(&edges);
        let near = |a: &[f64], b: &[f64]| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9)
        };
        assert!(near(&c.busiest, &[3.0, 5.5, 3.6]), "{:?}", c.busiest);
        assert!(near(&c.kcm, &[2.0, 4.0, 2.0]), "{:?}", c.kcm);
        let pids: Vec<u32> = c.processes.iter().map(|p| p.0).collect();
        assert_eq!(pids, [10, 11, 12]);
        assert!((c.processes[0].1 - 3.6).abs() < 1e-9);
        assert_eq!(c.processes[0].2, 4, "the peak RSS at the end");
        // The late process: 0.4 s in its first window, 0.1 in the next, nothing before.
        assert!((c.processes[2].1 - 0.1).abs() < 1e-9);
        // One window: the figures of that window, as before windows were counted.
        let one = window_costs(&edges[..2]);
        assert!(near(&one.busiest, &[3.0]) && near(&one.kcm, &[2.0]));
        assert!((one.processes[0].1 - 3.0).abs() < 1e-9);
    }

    #[test]
    fn the_median_of_odd_and_even_counts() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[4.0]), 4.0);
        assert_eq!(median(&[5.5, 3.0, 3.6]), 3.6);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn the_table_shows_each_window_when_there_were_several() {
        let figures = |controller: &str, cpu: Vec<f64>, kcm: Vec<f64>| Figures {
            controller: controller.into(),
            window: 120.0,
            lateness: Lateness {
                hpas: 1000,
                measured: 1000,
                intervals: 8000,
                p50: 0.01,
                p99: 0.1,
                max: 0.2,
                on_time: 1000,
            },
            processes: vec![(1, median(&cpu), 100 << 20)],
            cpu_windows: cpu,
            kcm_cpu_seconds: median(&kcm),
            kcm_cpu_windows: kcm,
            requests: requests::Counts::default(),
            metrics_requests: 0.0,
        };
        let kcm = figures(
            "kube-controller-manager",
            vec![16.0, 13.0, 14.0],
            vec![16.0, 13.0, 14.0],
        );
        let reference = figures("hpa-reference", vec![3.5, 2.8, 3.0], vec![2.0, 2.5, 2.2]);
        let text = table(&kcm, &reference);
        assert!(
            text.contains(
                "CPU 14.00 s (11.7% of a core) (median of 3 windows: 16.00 / 13.00 / 14.00 s)"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "CPU 3.00 s (2.5% of a core) (median of 3 windows: 3.50 / 2.80 / 3.00 s)"
            ),
            "{text}"
        );
        assert!(text.contains("CPU 2.20 s in 120 s (median of 3 windows: 2.00 / 2.50 / 2.20 s) → the HPA controller's share ≈ 11.80 s"), "{text}");
        assert!(
            text.contains("CPU 0.21 of the whole KCM, 0.25 of its HPA share"),
            "{text}"
        );
        // One window: no list.
        let (k1, r1) = (
            figures("k", vec![14.0], vec![14.0]),
            figures("r", vec![3.0], vec![2.2]),
        );
        assert!(!table(&k1, &r1).contains("median of"));
    }
}
