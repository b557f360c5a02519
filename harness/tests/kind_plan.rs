//! The kind smoke corpus (`kind-config/smoke.txt`, what CI runs on kind) is what the lane can pose
//! on the default ×5 cluster with `--reconfigure-controller` (as CI runs it): `--plan-only` runs
//! every case of it, none skipped; the cases that seed memory shown not to matter are posed from a
//! fresh start, and the cases that need their own flag or feature gates run on the controller
//! reconfigured.

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `hpa-conformance run --target cluster --plan-only --time-scale 5 --feature-gates
/// HPAScaleToZero=true` with `extra` arguments: its exit code and output (stdout, then stderr).
fn plan_only(extra: &[String]) -> (i32, String) {
    let mut args: Vec<String> = [
        "hpa-conformance",
        "run",
        "--target",
        "cluster",
        "--plan-only",
        "--time-scale",
        "5",
        "--feature-gates",
        "HPAScaleToZero=true",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().cloned());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = hpa_harness::cli::main(&args, &mut out, &mut err);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(&err)
    );
    (code, text)
}

#[test]
fn every_smoke_case_runs_on_the_default_x5_cluster_a_seeded_one_posed_a_flag_reconfigured() {
    let list = std::fs::read_to_string(root().join("kind-config/smoke.txt")).unwrap();
    let cases: Vec<String> = list
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| root().join(l).display().to_string())
        .collect();
    assert!(cases.len() >= 20, "{} smoke cases", cases.len());
    let mut args = vec!["--reconfigure-controller".to_string()];
    args.extend(cases.iter().cloned());
    let (code, out) = plan_only(&args);
    assert_eq!(code, 0, "{out}");
    let skipped: Vec<&str> = out.lines().filter(|l| l.starts_with("skip")).collect();
    assert!(
        skipped.is_empty(),
        "smoke cases the lane cannot pose: {skipped:#?}"
    );
    assert!(
        out.contains(&format!(
            "{n} of {n} cases run on the cluster (12 of them posed as the cluster can",
            n = cases.len()
        )),
        "{out}"
    );
    for refused in [
        "docs-failed-rescale.yaml",
        "scale-update-conflict-retried.yaml",
    ] {
        let line = line_of(&out, refused);
        assert!(
            line.contains(
                "its scale update errors refused by the metrics stub's admission webhook"
            ),
            "{line}"
        );
    }
    let rollout = line_of(&out, "docs-rollout-halving-the-memory-request.yaml");
    assert!(
        rollout.contains(
            "its rollout carried out by the cluster's Deployment controller (a real new ReplicaSet"
        ),
        "{rollout}"
    );
    let held = line_of(&out, "scale-from-zero-above-min-not-clamped-to-min.yaml");
    assert!(
        held.contains("its starting status written with the HPA held until t = 0 (its scale target `web-held-until-t0`"),
        "{held}"
    );
    let fresh = line_of(&out, "direction-reversal-no-scale.yaml");
    assert!(
        fresh.contains(": without a seeded memory (a running controller cannot be given one)"),
        "{fresh}"
    );
    // Three groups besides the cluster's own flags — a flag and two feature gates — and each
    // case says so.
    let groups = groups_of(&out);
    assert_eq!(groups.len(), 4, "{out}");
    for g in [
        "1  --horizontal-pod-autoscaler-cpu-initialization-period=2s",
        "1  --feature-gates=PodLevelResources=false",
        "1  --feature-gates=HPAScaleToZero=false",
    ] {
        assert!(groups.contains(&g), "{g}: {groups:?}");
    }
    let gated = out
        .lines()
        .find(|l| l.contains("pod-level-requests-ignored-with-the-gate-off.yaml"))
        .unwrap();
    assert!(
        gated.contains("on the controller reconfigured with the case's flags --feature-gates=PodLevelResources=false")
            && gated.contains("the API server keeps the cluster's"),
        "{gated}"
    );
    let flag = out
        .lines()
        .find(|l| l.contains("docs-cpu-initialization-period-flag.yaml"))
        .unwrap();
    assert!(
        flag.contains("on the controller reconfigured with the case's flags"),
        "{flag}"
    );
}

/// Without `--reconfigure-controller` nothing is reconfigured: a case whose flag matters is
/// skipped with the flags it needs and how to run it, and a case whose flags the core shows do not
/// matter runs with the cluster's.
#[test]
fn without_reconfiguring_a_flag_that_matters_is_a_skip_that_says_how_to_run_it() {
    let case = |p: &str| root().join("cases").join(p).display().to_string();
    let (code, out) = plan_only(&[
        case("docs/docs-cpu-initialization-period-flag.yaml"),
        case("docs/docs-sync-period-flag.yaml"),
        case("calculator/rc-calculate-requests-container-sum-fallback.yaml"),
    ]);
    assert_eq!(code, 0, "{out}");
    let line = |name: &str| line_of(&out, name);
    let flag = line("docs-cpu-initialization-period-flag.yaml");
    assert!(flag.starts_with("skip"), "{flag}");
    assert!(
        flag.contains("with the case's flags, --horizontal-pod-autoscaler-cpu-initialization-period=2s, it runs: --reconfigure-controller"),
        "{flag}"
    );
    let sync = line("docs-sync-period-flag.yaml");
    assert!(
        sync.starts_with("skip")
            && sync.contains("needs --horizontal-pod-autoscaler-sync-period 30 s, but the cluster's controller runs with 15 s (at time scale 5)"),
        "{sync}"
    );
    let posed = line("rc-calculate-requests-container-sum-fallback.yaml");
    assert!(
        posed.starts_with("run") && posed.contains("with the cluster's controller flags"),
        "{posed}"
    );
    assert!(out.contains("1 of 3 cases run on the cluster"), "{out}");
}

/// A seeded memory that matters: posed with a prelude where the core shows the case's own trace
/// from what the prelude leaves (harness/src/cluster/prelude.rs), else skipped with both reasons.
#[test]
fn a_seed_that_matters_is_posed_with_a_prelude_or_skipped_with_both_reasons() {
    let case = |p: &str| root().join("cases").join(p).display().to_string();
    let (code, out) = plan_only(&[
        case("algorithm/tolerance-band-just-outside.yaml"),
        case("regressions/regression-99394-missing-metric-no-scale-down.yaml"),
        case("controller/ht-normalize-desired-replicas-stabilize.yaml"),
        case("controller/ht-normalize-desired-replicas-with-behavior-simple-up.yaml"),
        case("controller/ht-avoid-unnecessary-updates.yaml"),
        case("controller/ht-scaling-with-rules-22.yaml"),
    ]);
    assert_eq!(code, 0, "{out}");
    let line = |name: &str| line_of(&out, name);
    let prelude = line("tolerance-band-just-outside.yaml");
    assert!(
        prelude.starts_with("run")
            && prelude.contains("with a 315 s prelude instead of a seeded memory")
            && prelude.contains("up to a sync period earlier"),
        "{prelude}"
    );
    let skip = line("regression-99394-missing-metric-no-scale-down.yaml");
    assert!(
        skip.starts_with("skip")
            && skip.contains("and that matters")
            && skip.contains("a prelude does not pose it either: a prelude with every metric at zero would record an event"),
        "{skip}"
    );
    // Seeded recommendations played at their reconciles, at a level proposing each.
    let played = line("ht-normalize-desired-replicas-stabilize.yaml");
    assert!(
        played.starts_with("run")
            && played.contains("every metric at zero but every metric at 3500m at t=-120 (the seeded 4), every metric at 4500m at t=-60 (the seeded 5)"),
        "{played}"
    );
    // A scale-up window: t = 0's answers as the filler.
    let up = line("ht-normalize-desired-replicas-with-behavior-simple-up.yaml");
    assert!(
        up.starts_with("run") && up.contains("every metric at its value at t = 0 but"),
        "{up}"
    );
    // The case's own starting status written after the prelude.
    let status = line("ht-avoid-unnecessary-updates.yaml");
    assert!(
        status.starts_with("run")
            && status.contains("then the lane writes the case's starting status"),
        "{status}"
    );
    // Seeded scale events are not played: skipped, with each filler's reason.
    let events = line("ht-scaling-with-rules-22.yaml");
    assert!(
        events.starts_with("skip")
            && events.contains("a prelude does not pose it either: with the memory and status a 315 s prelude with every metric at zero leaves")
            && events.contains("; nor "),
        "{events}"
    );
    assert!(out.contains("4 of 6 cases run on the cluster"), "{out}");
}

/// Expectations of the controller's memory are left to the core (no cluster's controller shows
/// its memory); a spec patch on 1.37 runs where the core gives the case's own trace with the extra
/// reconcile 1.37 makes at once, else it is a skip with that reconcile's time; a case whose times
/// do not divide by the time scale runs at the fastest slower one they divide by on the controller
/// reconfigured, or is a skip that says so without `--reconfigure-controller`; a case with a long
/// sync period runs at a faster clock.
#[test]
fn memory_expectations_patches_at_once_and_real_time_cases_are_planned_as_a_cluster_poses_them() {
    let case = |p: &str| root().join("cases").join(p).display().to_string();
    let files = [
        case("controller/ht-normalize-desired-replicas-with-behavior-empty-down.yaml"),
        case("versions/hpa-generation-observed.yaml"),
        case("docs/docs-container-rename-both-names.yaml"),
        case("calculator/dt-scale-down-rules-all-kept.yaml"),
        case("readiness/cpu-initialization-period-default-300s-inside.yaml"),
        case("calculator/rc-group-pods-unready-at-exactly-readiness-delay-after-init.yaml"),
    ];
    let mut args = vec!["--reconfigure-controller".to_string()];
    args.extend(files.iter().cloned());
    let (code, out) = plan_only(&args);
    assert_eq!(code, 0, "{out}");
    let line = line_of;
    let memory = line(
        &out,
        "ht-normalize-desired-replicas-with-behavior-empty-down.yaml",
    );
    assert!(
        memory.starts_with("run")
            && memory.contains("with its expectations of the controller's memory left to the core"),
        "{memory}"
    );
    let patch = line(&out, "hpa-generation-observed.yaml");
    assert!(
        patch.starts_with("run")
            && patch.contains("its spec patches reconciled at once as Kubernetes 1.37 does"),
        "{patch}"
    );
    let scales = line(&out, "docs-container-rename-both-names.yaml");
    assert!(
        scales.starts_with("skip")
            && scales.contains("the spec patch of t=345 is reconciled at once, at t=338"),
        "{scales}"
    );
    // Its policies' 2 s periods divide by 2 and its 15 s sync period by 3 or 5, so no slower
    // clock but real time divides them all; nor a start at t = −299.
    for name in [
        "dt-scale-down-rules-all-kept.yaml",
        "cpu-initialization-period-default-300s-inside.yaml",
    ] {
        let real = line(&out, name);
        assert!(
            real.starts_with("run")
                && real.contains("--horizontal-pod-autoscaler-sync-period=15s")
                && real.contains("(at time scale 1: its times do not divide by the run's)"),
            "{real}"
        );
    }
    // A 590 s sync period: at ×10, 59 s.
    let faster = line(
        &out,
        "rc-group-pods-unready-at-exactly-readiness-delay-after-init.yaml",
    );
    assert!(
        faster.starts_with("run")
            && faster.contains("--horizontal-pod-autoscaler-sync-period=59s")
            && faster.contains("(at time scale 10: a faster clock for its long sync period)"),
        "{faster}"
    );
    for (flag, scale, n) in [("15s", 1, 2), ("59s", 10, 1)] {
        assert!(
            out.lines().any(|l| l.trim().starts_with(&format!(
                "{n}  --horizontal-pod-autoscaler-sync-period={flag}"
            )) && l.ends_with(&format!("(at time scale {scale})"))),
            "{flag}: {out}"
        );
    }
    assert!(out.contains("5 of 6 cases run on the cluster"), "{out}");
    // Without reconfiguring, the real-time case is a skip that says how to run it.
    let (code, out) = plan_only(&[case("calculator/dt-scale-down-rules-all-kept.yaml")]);
    assert_eq!(code, 0, "{out}");
    let real = line(&out, "dt-scale-down-rules-all-kept.yaml");
    assert!(
        real.starts_with("skip")
            && real.contains("cannot run at time scale 5")
            && real.contains("--reconfigure-controller runs it at the fastest slower time scale"),
        "{real}"
    );
}

/// Two cases needing different flags share one controller restart when the reference core shows
/// each gives its own trace with the other's flags too; flags that conflict (two downscale
/// windows) stay apart.
#[test]
fn groups_merge_where_the_core_shows_the_other_flags_change_nothing() {
    let case = |p: &str| root().join("cases").join(p).display().to_string();
    let (code, out) = plan_only(&[
        "--reconfigure-controller".to_string(),
        case("docs/docs-tolerance-flag.yaml"),
        case("docs/docs-cpu-initialization-period-flag.yaml"),
        case("docs/docs-downscale-stabilization-flag.yaml"),
        case("docs/docs-behavior-window-from-flag.yaml"),
    ]);
    assert_eq!(code, 0, "{out}");
    let groups = groups_of(&out);
    assert!(
        groups.iter().any(|g| g.starts_with("3  ")
            && g.contains("--horizontal-pod-autoscaler-cpu-initialization-period=2s")
            && g.contains("--horizontal-pod-autoscaler-tolerance=0.25")),
        "{out}"
    );
    assert!(
        groups.iter().any(|g| g.starts_with("1  ")
            && g.contains("--horizontal-pod-autoscaler-downscale-stabilization=24s")),
        "{out}"
    );
    let tolerance = line_of(&out, "docs-tolerance-flag.yaml");
    assert!(
        tolerance.contains("its own flags --horizontal-pod-autoscaler-tolerance=0.25 and other groups', which on the reference core give the case's own trace"),
        "{tolerance}"
    );
}

/// The settings groups `--plan-only` lists, each `<count>  <flags>`.
fn groups_of(out: &str) -> Vec<&str> {
    out.lines()
        .skip_while(|l| !l.starts_with("settings groups"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(str::trim)
        .collect()
}

/// The first line of `out` that names `name` (a case file).
fn line_of(out: &str, name: &str) -> String {
    out.lines()
        .find(|l| l.contains(name))
        .unwrap_or_else(|| panic!("no line names {name}:\n{out}"))
        .to_string()
}

/// The third party's manifest of docs/kind.md ("Your own HPA controller on a cluster") is one the
/// lane takes as the controller under test on the default ×5 cluster: exactly one Deployment with
/// the label the lane looks for, whose first container's args pass the lane's own check of the
/// run's settings (and the same args at ×1 do not: the check reads them).
#[test]
fn the_third_party_example_is_a_controller_the_lane_takes_at_x5() {
    use hpa_harness::cluster::kube::HPA_CONTROLLER_COMPONENT;
    use hpa_harness::cluster::plan::{ClusterSettings, check_controller};
    let text =
        std::fs::read_to_string(root().join("examples/your-controller-on-kind/controller.yaml"))
            .unwrap();
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text).unwrap();
    let deployments: Vec<&serde_json::Value> =
        docs.iter().filter(|d| d["kind"] == "Deployment").collect();
    assert_eq!(deployments.len(), 1);
    let d = deployments[0];
    assert_eq!(
        d["metadata"]["labels"]["app.kubernetes.io/component"],
        HPA_CONTROLLER_COMPONENT
    );
    let container = &d["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<String> = container["command"]
        .as_array()
        .into_iter()
        .chain(container["args"].as_array())
        .flatten()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let mut gates = hpa_reference::KubernetesVersion::V1_37.default_gates();
    gates.set("HPAScaleToZero", true).unwrap();
    let x5 = ClusterSettings::defaults_scaled(5);
    assert_eq!(
        check_controller("my-hpa/my-hpa", &args, &x5, &gates),
        Ok(true)
    );
    let x1 = ClusterSettings::defaults_scaled(1);
    assert!(check_controller("my-hpa/my-hpa", &args, &x1, &gates).is_err());
    // Every object names its kind and, but the cluster-scoped ones, a namespace of its own.
    for doc in &docs {
        let kind = doc["kind"].as_str().unwrap();
        if !["Namespace", "ClusterRole", "ClusterRoleBinding"].contains(&kind) {
            assert_eq!(doc["metadata"]["namespace"], "my-hpa", "{kind}");
        }
    }
}
