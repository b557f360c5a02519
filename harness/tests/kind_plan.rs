//! The kind smoke corpus (`kind-config/smoke.txt`, what CI runs on kind) is what the lane can pose
//! on the default ×5 cluster: `--plan-only` runs every case of it, none skipped, and the case that
//! seeds memory shown not to matter is posed from a fresh start.

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn every_smoke_case_runs_on_the_default_x5_cluster_and_a_seeded_one_from_a_fresh_start() {
    let list = std::fs::read_to_string(root().join("kind-config/smoke.txt")).unwrap();
    let cases: Vec<String> = list
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| root().join(l).display().to_string())
        .collect();
    assert!(cases.len() >= 20, "{} smoke cases", cases.len());
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
    args.extend(cases.iter().cloned());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = hpa_harness::cli::main(&args, &mut out, &mut err);
    let (out, err) = (String::from_utf8_lossy(&out), String::from_utf8_lossy(&err));
    assert_eq!(code, 0, "{out}{err}");
    let skipped: Vec<&str> = out.lines().filter(|l| l.starts_with("skip")).collect();
    assert!(
        skipped.is_empty(),
        "smoke cases the lane cannot pose: {skipped:#?}"
    );
    assert!(
        out.contains(&format!(
            "{n} of {n} cases run on the cluster (1 of them from a fresh start",
            n = cases.len()
        )),
        "{out}"
    );
    let fresh = out
        .lines()
        .find(|l| l.contains("direction-reversal-no-scale.yaml"))
        .unwrap();
    assert!(
        fresh.contains("from a fresh start, without a seeded memory"),
        "{fresh}"
    );
}
