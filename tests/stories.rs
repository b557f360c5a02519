//! Stories people read: `explain` (text and `--format json`) and `what-if` on the worked examples,
//! snapshot-tested in `tests/snapshots/stories/` (reviewed like code: `cargo insta review`).

use hpa_conformance_tests::{root, run};

fn path(rel: &str) -> String {
    root().join(rel).display().to_string()
}

fn snapshot(name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots/stories"));
    settings.set_prepend_module_to_snapshot(false);
    // Paths differ between checkouts.
    let text = text.replace(&root().display().to_string(), "<root>");
    settings.bind(|| insta::assert_snapshot!(name, text));
}

/// The walk-down as a story: the 20 held ticks are one row that names the recommendation
/// holding them, each step names the policy limit with the condition's message.
#[test]
fn explain_tells_the_walkdown_as_a_story() {
    let (code, out, err) = run(&["explain", &path("cases/behavior/policy-walkdown.yaml")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(
        "0…285    80 → 80   20 ticks, no change at 80: cpu resource proposes 10 (ratio 0.1240); \
         the downscale stabilization window holds 80: the current count 80, recorded when the \
         controller first saw the HPA at t=0"
    ));
    assert!(out.contains(
        "limited to 72 by ScaleDownLimit: the desired replica count is decreasing faster than \
         the maximum scale rate"
    ));
    assert!(out.contains("81 ticks in 29 rows"), "{out}");
    snapshot("explain-policy-walkdown", &out);
}

#[test]
fn explain_names_the_tolerance_band() {
    let (code, out, err) = run(&[
        "explain",
        &path("cases/algorithm/tolerance-band-no-change.yaml"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("proposes 10 (ratio 0.9000), within the tolerance 0.1"),
        "{out}"
    );
}

/// `--format json`: rows with their time span and tick count, for tools.
#[test]
fn explain_json_is_one_document_of_rows() {
    let (code, out, err) = run(&[
        "explain",
        "--format",
        "json",
        &path("cases/behavior/policy-walkdown.yaml"),
    ]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(doc["status"], "passed");
    let rows = doc["rows"].as_array().expect("rows");
    let ticks: u64 = rows.iter().map(|r| r["ticks"].as_u64().unwrap()).sum();
    assert_eq!(ticks, 81);
    assert_eq!(
        (rows[0]["from"].as_i64(), rows[0]["to"].as_i64()),
        (Some(0), Some(285))
    );
    // The fifteen levels are the rows' replica counts.
    let mut levels: Vec<i64> = vec![rows[0]["replicas_before"].as_i64().unwrap()];
    for r in rows {
        let v = r["replicas"].as_i64().unwrap();
        if levels.last() != Some(&v) {
            levels.push(v);
        }
    }
    assert_eq!(
        levels,
        [80, 72, 64, 57, 51, 45, 40, 36, 32, 28, 24, 20, 16, 12, 10]
    );
    snapshot("explain-policy-walkdown-json", &out);
}

fn what_if(args: &[&str]) -> (i32, String, String) {
    let mut argv = vec!["what-if"];
    argv.extend_from_slice(args);
    run(&argv)
}

/// A morning traffic ramp on CPU (timestamps, a Deployment manifest, an HPA as kubectl prints
/// it): the replicas follow the load up to maxReplicas and down again after the window.
#[test]
fn what_if_morning_ramp() {
    let svg = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("morning-ramp.svg");
    let (code, out, err) = what_if(&[
        "--hpa",
        &path("examples/morning-ramp/hpa.yaml"),
        "--deployment",
        &path("examples/morning-ramp/deployment.yaml"),
        "--load",
        &path("examples/morning-ramp/load.csv"),
        "--svg",
        &svg.display().to_string(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("   3600  2026-11-23T08:00:00Z        20"),
        "{out}"
    );
    let svg = std::fs::read_to_string(&svg).expect("the SVG is written");
    assert!(svg.starts_with("<svg") && svg.contains("web"));
    snapshot("what-if-morning-ramp", &out);
}

/// A queue-length External metric with behavior policies: scale-up limited by Pods 4 /
/// Percent 100 per minute, scale-down by the Min of 50 % and 3 pods after a 120 s window.
#[test]
fn what_if_queue_worker() {
    let (code, out, err) = what_if(&[
        "--hpa",
        &path("examples/queue-worker/hpa.yaml"),
        "--load",
        &path("examples/queue-worker/load.csv"),
        "--requests",
        "cpu=250m",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("limited to 6 by ScaleUpLimit"), "{out}");
    snapshot("what-if-queue-worker", &out);
    // The same as JSON: the replica levels.
    let (code, json, _) = what_if(&[
        "--hpa",
        &path("examples/queue-worker/hpa.yaml"),
        "--load",
        &path("examples/queue-worker/load.csv"),
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&json).expect("json");
    let levels: Vec<i64> = doc["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["replicas"].as_i64().unwrap())
        .collect();
    assert_eq!(levels, [2, 6, 12, 24, 30, 27, 24, 21, 18, 15, 12, 9]);
}

/// kube-controller-manager's flags change the prediction: with `--sync-period 30s` every decision
/// falls on a multiple of 30 s; a flag that is not a duration is a usage error (exit 2).
#[test]
fn what_if_takes_the_controller_flags() {
    let (code, out, err) = what_if(&[
        "--hpa",
        &path("examples/queue-worker/hpa.yaml"),
        "--load",
        &path("examples/queue-worker/load.csv"),
        "--sync-period",
        "30s",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(doc["sync_period"], 30);
    for r in doc["replicas"].as_array().unwrap() {
        assert_eq!(r["t"].as_i64().unwrap() % 30, 0, "{r}");
    }
    let (code, _, err) = what_if(&[
        "--hpa",
        &path("examples/queue-worker/hpa.yaml"),
        "--load",
        &path("examples/queue-worker/load.csv"),
        "--sync-period",
        "1.5s",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--sync-period: \"1.5s\" is not a duration"),
        "{err}"
    );
}

/// Broken inputs: exit 2 with file:line:col and one line of reason.
#[test]
fn what_if_bad_input_exits_2_with_line_and_column() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("what-if-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let hpa = path("examples/morning-ramp/hpa.yaml");
    let ok_load = path("examples/morning-ramp/load.csv");
    let cases = [
        (
            write(
                "unknown-metric.csv",
                "time,metric,value\n0,cpu,500m\n60, memory,1\n",
            ),
            None,
            ":3:5: \"memory\" is not a metric of the HPA (metrics: cpu)",
        ),
        (
            write("bad-quantity.csv", "time,metric,value\n0,cpu,5x00m\n"),
            None,
            ":2:7: \"5x00m\" is not a quantity",
        ),
        (
            write("header.csv", "t,metric,value\n0,cpu,1\n"),
            None,
            ":1:1: the header must be time,metric,value",
        ),
        (
            write("fields.csv", "# comment\ntime,metric,value\n0,cpu,1,2\n"),
            None,
            ":3:9: expected 3 fields, found 4",
        ),
        (
            write("backwards.csv", "time,metric,value\n60,cpu,1\n30,cpu,2\n"),
            None,
            ":3:1: time goes backwards: 30 s after 60 s",
        ),
        (
            write(
                "mixed.csv",
                "time,metric,value\n2026-11-23T07:00:00Z,cpu,1\n60,cpu,2\n",
            ),
            None,
            ":3:1: mixes seconds and timestamps",
        ),
        (
            write("negative.csv", "time,metric,value\n0,cpu,-1\n"),
            None,
            ":2:7: a usage is not negative",
        ),
        (
            ok_load.clone(),
            Some(write(
                "unknown-field.yaml",
                &std::fs::read_to_string(&hpa)
                    .unwrap()
                    .replace("  minReplicas: 2\n", "  minReplicas: 2\n  minReplica: 2\n"),
            )),
            ":50:3: unknown field `minReplica`",
        ),
        (
            ok_load.clone(),
            Some(write(
                "invalid.yaml",
                &std::fs::read_to_string(&hpa)
                    .unwrap()
                    .replace("maxReplicas: 20", "maxReplicas: 1"),
            )),
            ":41:3: HPA rejected by API validation: spec.maxReplicas: Invalid value: 1",
        ),
        (
            ok_load.clone(),
            Some(write(
                "syntax.yaml",
                "apiVersion: autoscaling/v2\nkind: [\n",
            )),
            ":2:7: unclosed bracket",
        ),
    ];
    for (load, manifest, want) in cases {
        let manifest = manifest.unwrap_or_else(|| hpa.clone());
        let (code, out, err) = what_if(&[
            "--hpa",
            &manifest,
            "--load",
            &load,
            "--replicas",
            "3",
            "--requests",
            "cpu=500m",
        ]);
        assert_eq!(code, 2, "{load} {manifest}: {out}{err}");
        let file = if manifest == hpa { &load } else { &manifest };
        assert!(
            err.starts_with(&format!("{file}{want}")),
            "want {file}{want}, got {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}
