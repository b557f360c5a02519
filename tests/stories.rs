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
