//! Replica timelines (`hpa_harness::report::timeline`): the plotted data of real runs, checked as
//! data (not pixels), and the SVG they draw.

use hpa_harness::case::load_case;
use hpa_harness::report::timeline::Timeline;
use hpa_harness::run::{RunOptions, run_case};
use hpa_harness::targets::make_target;
use std::time::Duration;

use hpa_conformance_tests::root;

fn timeline_of(rel: &str, target: &str) -> (Timeline, String) {
    let case = load_case(&root().join(rel)).expect("case loads");
    let target = make_target(target, Duration::from_secs(60)).expect("target");
    let result = run_case(&case, target.as_ref(), &RunOptions::default());
    let tl = Timeline::build(Some(&case), &result).expect("a timeline");
    let svg = tl.svg().expect("an SVG");
    (tl, svg)
}

/// The docs' walk-down: 80 → 10 in fifteen levels, one step per 60 s from t=300, with the
/// expected trajectory and the expected values overlaid on the actual ones.
#[test]
fn the_walkdown_timeline_shows_80_to_10_in_fifteen_steps_with_the_expectations() {
    let (tl, svg) = timeline_of("cases/behavior/policy-walkdown.yaml", "core");
    let want = [80, 72, 64, 57, 51, 45, 40, 36, 32, 28, 24, 20, 16, 12, 10];
    assert_eq!(tl.trajectory(), want);
    assert_eq!(tl.levels.len(), 15);
    // The first level at t=0, then a step every 60 s from t=300 to t=1080.
    let times: Vec<i64> = tl.levels.iter().map(|l| l.0).collect();
    let mut steps = vec![0];
    steps.extend((0..14).map(|i| 300 + 60 * i));
    assert_eq!(times, steps);
    // The expected trajectory is overlaid level by level, where the actual count changed.
    assert_eq!(tl.expected_trajectory, tl.levels);
    // Every `expect.at` replicas value is drawn, and each lies on the actual step line.
    assert_eq!(
        tl.expected,
        vec![
            (0, 80),
            (285, 80),
            (300, 72),
            (345, 72),
            (360, 64),
            (420, 57),
            (1020, 12),
            (1080, 10)
        ]
    );
    for &(t, r) in &tl.expected {
        let actual = tl.actual.iter().find(|a| a.0 == t).expect("a tick at t");
        assert_eq!(actual.1, r, "t={t}");
    }
    assert!(tl.failing.is_empty());
    // The core explains: stabilized and limited counts per tick. At t=0 the metric wants 10,
    // the stabilization window holds 80.
    assert_eq!(tl.stabilized.first(), Some(&(0, 80)));
    assert_eq!(tl.limited.iter().find(|x| x.0 == 300), Some(&(300, 72)));
    // CPU against its AverageValue target of 500m: 5000m over 80 pods = 62m each, 12.4 %.
    let cpu = &tl.metrics[0];
    assert_eq!((cpu.label.as_str(), cpu.target.as_str()), ("cpu", "500m"));
    assert_eq!(cpu.points[0], (0, 12.4));
    assert_eq!(cpu.points.last(), Some(&(1200, 100.0)));
    // The SVG: plotters' SVG document with the series drawn and text as SVG text.
    assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
    assert!(svg.contains("policy-walkdown"));
    assert!(svg.contains("expected trajectory") && svg.contains("stabilized"));
    assert!(svg.matches("<polyline").count() >= 5, "series drawn");
    assert!(svg.matches("<circle").count() >= tl.expected.len());
}

/// A failing expectation is marked at its tick, with the actual count there.
#[test]
fn failing_ticks_are_marked() {
    let (tl, svg) = timeline_of(
        "tests/fixtures/report/walkdown-wrong-expectation.yaml",
        "core",
    );
    assert_eq!(tl.failing, vec![(360, 64)]);
    assert!(svg.contains("failing tick"));
}

/// Every target gets the same picture: the reference controller over a fake API plots the same
/// replicas, levels and metric values as the in-process core.
#[test]
fn the_reference_api_target_draws_the_same_timeline() {
    let (core, _) = timeline_of("cases/behavior/policy-walkdown.yaml", "core");
    let (api, _) = timeline_of("cases/behavior/policy-walkdown.yaml", "reference-api");
    assert_eq!(api.actual, core.actual);
    assert_eq!(api.levels, core.levels);
    assert_eq!(api.expected_trajectory, core.expected_trajectory);
    assert_eq!(api.metrics, core.metrics);
}

/// A cluster run's trace has a row only where something changed, at irregular real times, and
/// no explanation: the timeline draws the same levels from it, without stabilized or limited
/// counts.
#[test]
fn a_sparse_unexplained_trace_draws_the_same_levels() {
    let case = load_case(&root().join("cases/behavior/policy-walkdown.yaml")).expect("case");
    let target = make_target("core", Duration::from_secs(60)).expect("target");
    let mut result = run_case(&case, target.as_ref(), &RunOptions::default());
    let full = Timeline::build(Some(&case), &result).expect("timeline");
    let mut sparse = Vec::new();
    for (i, tick) in result.trace.iter().enumerate() {
        let changed = sparse
            .last()
            .is_none_or(|l: &hpa_harness::run::trace::TickTrace| l.replicas != tick.replicas);
        if changed {
            let mut row = tick.clone();
            // Sampled a few seconds late, as a real controller's decisions are.
            row.t += (i % 3) as i64 + 1;
            row.why = None;
            row.detail.explanation = None;
            sparse.push(row);
        }
    }
    result.trace = sparse;
    let tl = Timeline::build(Some(&case), &result).expect("timeline");
    assert_eq!(tl.trajectory(), full.trajectory());
    assert_eq!(tl.levels.len(), 15);
    assert!(tl.stabilized.is_empty() && tl.limited.is_empty());
    assert_eq!(tl.expected, full.expected);
    assert_eq!(tl.metrics[0].points.len(), 15);
    let svg = tl.svg().expect("svg");
    assert!(
        !svg.contains("stabilized") && !svg.contains("rate-limited"),
        "no legend for what was not drawn"
    );
    assert!(svg.contains("expected trajectory"));
}
