//! Replica timelines: a case's run as a picture (SVG, drawn with plotters). The data comes from
//! the [`TickTrace`]s every target produces (core, reference-api, exec, cluster — a cluster's rows
//! are irregular in time, which a timeline plots as they come), so every target gets the same
//! picture; the case adds what was expected.
//!
//! Drawn: the target's replicas after each tick as a step line; the expected values (`expect.at`
//! replicas) as points and the expected trajectory as a dashed step line placed at the times the
//! actual count changed; the stabilized and rate-limited counts (targets that explain); on the
//! right axis each metric's current value as a percentage of its target (100 % = at target);
//! failing ticks as red crosses. [`Timeline`] is the plotted data, so tests check the data, not
//! pixels.

use k8s_openapi::api::autoscaling::v2::{HorizontalPodAutoscaler, MetricSpec, MetricTarget};
use plotters::prelude::*;
use serde::Serialize;

use hpa_reference::quantity::parse_milli;

use crate::case::Case;
use crate::run::trace::{MetricNumber, TickTrace};
use crate::run::{CaseResult, Outcome};

/// Why a timeline could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    /// The case has no tick to draw (skipped, or its target failed before the first tick).
    #[error("no tick to draw")]
    Empty,
    /// The plotting library failed.
    #[error("cannot draw the timeline: {0}")]
    Draw(String),
}

/// One metric's series: its current value as a percentage of its target, per tick.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricSeries {
    /// The metric's label, as in the trace (`cpu`, `pods/…`, `external/…`).
    pub label: String,
    /// The target as the HPA states it (`80%`, `500m`, `value 30`).
    pub target: String,
    /// (t, current / target × 100) where the status reports the metric.
    pub points: Vec<(i64, f64)>,
}

/// The data of a replica timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timeline {
    /// The case's name.
    pub name: String,
    /// The first and the last tick's time (virtual seconds).
    pub span: (i64, i64),
    /// The replicas before the first tick.
    pub initial: i32,
    /// (t, replicas after the tick), one per trace row.
    pub actual: Vec<(i64, i32)>,
    /// Where the count changed: (t, new count), starting with (first t, initial count).
    pub levels: Vec<(i64, i32)>,
    /// `status.desiredReplicas` per row.
    pub desired: Vec<(i64, i32)>,
    /// The stabilized count per row (targets that explain).
    pub stabilized: Vec<(i64, i32)>,
    /// The rate-limited count per row (targets that explain).
    pub limited: Vec<(i64, i32)>,
    /// `expect.at` replicas: (t, expected replicas).
    pub expected: Vec<(i64, i32)>,
    /// `expect.trajectory`, each value placed at the time the actual count took its n-th level
    /// (values beyond the actual levels at the last tick).
    pub expected_trajectory: Vec<(i64, i32)>,
    /// Each metric against its target.
    pub metrics: Vec<MetricSeries>,
    /// Ticks with a failing expectation: (t, actual replicas after it).
    pub failing: Vec<(i64, i32)>,
}

/// A metric's label as the trace writes it (see [`crate::run::trace::metric_current`]).
fn spec_label(m: &MetricSpec) -> Option<(String, &MetricTarget)> {
    match m.type_.as_str() {
        "Resource" => m.resource.as_ref().map(|r| (r.name.clone(), &r.target)),
        "ContainerResource" => m
            .container_resource
            .as_ref()
            .map(|r| (format!("{}/{}", r.container, r.name), &r.target)),
        "Pods" => m
            .pods
            .as_ref()
            .map(|p| (format!("pods/{}", p.metric.name), &p.target)),
        "Object" => m.object.as_ref().map(|o| {
            (
                format!(
                    "{}/{} {}",
                    o.described_object.kind, o.described_object.name, o.metric.name
                ),
                &o.target,
            )
        }),
        "External" => m
            .external
            .as_ref()
            .map(|e| (format!("external/{}", e.metric.name), &e.target)),
        _ => None,
    }
}

/// How a metric's target is stated.
#[derive(Debug, Clone, Copy, PartialEq)]
enum TargetKind {
    /// Percent of the requests.
    Utilization(i32),
    /// Per-pod average, milli-units.
    Average(i64),
    /// Total, milli-units.
    Value(i64),
}

fn target_kind(t: &MetricTarget) -> Option<(TargetKind, String)> {
    let milli = |q: &Option<k8s_openapi::apimachinery::pkg::api::resource::Quantity>| {
        q.as_ref()
            .and_then(|q| parse_milli(&q.0).ok().map(|m| (m, q.0.clone())))
    };
    match t.type_.as_str() {
        "Utilization" => t
            .average_utilization
            .map(|u| (TargetKind::Utilization(u), format!("{u}%"))),
        "AverageValue" => milli(&t.average_value).map(|(m, s)| (TargetKind::Average(m), s)),
        "Value" => milli(&t.value).map(|(m, s)| (TargetKind::Value(m), format!("value {s}"))),
        _ => None,
    }
}

/// Current / target × 100, when the status has the value the target is stated in.
fn percent_of_target(kind: TargetKind, n: &MetricNumber) -> Option<f64> {
    let (current, target) = match kind {
        TargetKind::Utilization(t) => (i64::from(n.utilization?), i64::from(t)),
        TargetKind::Average(t) => (n.average_milli?, t),
        TargetKind::Value(t) => (n.value_milli?, t),
    };
    (target > 0).then(|| current as f64 * 100.0 / target as f64)
}

fn metric_series(hpa: &HorizontalPodAutoscaler, trace: &[TickTrace]) -> Vec<MetricSeries> {
    let specs: Vec<(String, TargetKind, String)> = hpa
        .spec
        .metrics
        .iter()
        .flatten()
        .filter_map(|m| {
            let (label, target) = spec_label(m)?;
            let (kind, text) = target_kind(target)?;
            Some((label, kind, text))
        })
        .collect();
    specs
        .iter()
        .enumerate()
        .map(|(i, (label, kind, text))| {
            // The n-th spec metric with this label matches the n-th status metric with it.
            let nth = specs[..i].iter().filter(|(l, _, _)| l == label).count();
            let points = trace
                .iter()
                .filter_map(|tick| {
                    let n = tick
                        .detail
                        .metrics
                        .iter()
                        .filter(|m| &m.label == label)
                        .nth(nth)?;
                    Some((tick.t, percent_of_target(*kind, n)?))
                })
                .collect();
            MetricSeries {
                label: label.clone(),
                target: text.clone(),
                points,
            }
        })
        .collect()
}

impl Timeline {
    /// The timeline of a case's run. `case` adds the expectations and the metrics' targets; a
    /// run without its case (e.g. a report read back) draws what the trace has.
    pub fn build(case: Option<&Case>, result: &CaseResult) -> Result<Timeline, TimelineError> {
        let trace = &result.trace;
        let (first, last) = match (trace.first(), trace.last()) {
            (Some(f), Some(l)) => (f, l),
            _ => return Err(TimelineError::Empty),
        };
        let actual: Vec<(i64, i32)> = trace.iter().map(|x| (x.t, x.replicas)).collect();
        let mut levels = vec![(first.t, first.replicas_before)];
        for &(t, r) in &actual {
            if levels.last().map(|l| l.1) != Some(r) {
                levels.push((t, r));
            }
        }
        let per_row = |f: &dyn Fn(&TickTrace) -> Option<i32>| -> Vec<(i64, i32)> {
            trace
                .iter()
                .filter_map(|x| f(x).map(|v| (x.t, v)))
                .collect()
        };
        let replicas_at = |t: i64| {
            trace
                .iter()
                .take_while(|x| x.t <= t)
                .last()
                .map_or(first.replicas_before, |x| x.replicas)
        };
        let mut failing: Vec<(i64, i32)> = match &result.outcome {
            Outcome::Failed(fs) => fs
                .iter()
                .filter_map(|f| f.t)
                .map(|t| (t, replicas_at(t)))
                .collect(),
            _ => Vec::new(),
        };
        failing.dedup();
        let (expected, expected_trajectory, metrics) = match case {
            Some(c) => {
                let expected = c
                    .file
                    .expect
                    .at
                    .iter()
                    .filter_map(|x| x.replicas.map(|r| (i64::from(x.t), r)))
                    .collect();
                let trajectory = c
                    .file
                    .expect
                    .trajectory
                    .iter()
                    .flatten()
                    .enumerate()
                    .map(|(i, &r)| (levels.get(i).map_or(last.t, |l| l.0), r))
                    .collect();
                (expected, trajectory, metric_series(&c.hpa, trace))
            }
            None => (Vec::new(), Vec::new(), Vec::new()),
        };
        Ok(Timeline {
            name: result.name.clone(),
            span: (first.t, last.t),
            initial: first.replicas_before,
            actual,
            levels,
            desired: per_row(&|x| Some(x.desired)),
            stabilized: per_row(&|x| x.detail.stabilized()),
            limited: per_row(&|x| x.detail.limited()),
            expected,
            expected_trajectory,
            metrics,
            failing,
        })
    }

    /// The levels' counts: the distinct successive replica counts, as `expect.trajectory` states
    /// them.
    pub fn trajectory(&self) -> Vec<i32> {
        self.levels.iter().map(|l| l.1).collect()
    }

    /// The picture as an SVG document.
    pub fn svg(&self) -> Result<String, TimelineError> {
        let mut out = String::new();
        draw(self, &mut out).map_err(|e| TimelineError::Draw(e.to_string()))?;
        Ok(out)
    }
}

/// A step line through `points`: each value holds until the next point's time, the last one until
/// `end`.
fn steps(start: Option<(i64, i32)>, points: &[(i64, i32)], end: i64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut prev: Option<(i64, i32)> = start;
    for &(t, v) in points {
        if let Some((_, pv)) = prev {
            out.push((t as f64, f64::from(pv)));
        }
        out.push((t as f64, f64::from(v)));
        prev = Some((t, v));
    }
    if let Some((t, v)) = prev
        && t < end
    {
        out.push((end as f64, f64::from(v)));
    }
    out
}

const ACTUAL: RGBColor = RGBColor(31, 119, 180);
const EXPECTED: RGBColor = RGBColor(44, 160, 44);
const STABILIZED: RGBColor = RGBColor(255, 127, 14);
const LIMITED: RGBColor = RGBColor(148, 103, 189);
const FAILING: RGBColor = RGBColor(214, 39, 40);
const METRIC_COLORS: [RGBColor; 4] = [
    RGBColor(127, 127, 127),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
    RGBColor(188, 189, 34),
];

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw(tl: &Timeline, out: &mut String) -> DrawResult {
    let (t0, t1) = tl.span;
    let x_end = if t1 > t0 { t1 as f64 } else { t0 as f64 + 1.0 };
    let y_max = tl
        .actual
        .iter()
        .chain(&tl.desired)
        .chain(&tl.stabilized)
        .chain(&tl.limited)
        .chain(&tl.expected)
        .chain(&tl.expected_trajectory)
        .map(|p| p.1)
        .chain([tl.initial, 1])
        .max()
        .unwrap_or(1);
    let y_top = f64::from(y_max) * 1.12 + 1.0;
    let r_max = tl
        .metrics
        .iter()
        .flat_map(|m| m.points.iter().map(|p| p.1))
        .fold(100.0f64, f64::max);
    let r_top = (r_max * 1.12).min(1e9);

    let root = SVGBackend::with_string(out, (960, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            crate::util::text::visible_line(&tl.name),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .right_y_label_area_size(if tl.metrics.is_empty() { 12 } else { 56 })
        .build_cartesian_2d(t0 as f64..x_end, 0f64..y_top)?
        .set_secondary_coord(t0 as f64..x_end, 0f64..r_top);
    chart
        .configure_mesh()
        .light_line_style(WHITE.mix(0.0))
        .x_desc("t (s)")
        .y_desc("replicas")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_label_formatter(&|v| format!("{v:.0}"))
        .draw()?;
    if !tl.metrics.is_empty() {
        chart
            .configure_secondary_axes()
            .y_desc("metric / target (%)")
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()?;
        chart.draw_secondary_series(DashedLineSeries::new(
            [(t0 as f64, 100.0), (x_end, 100.0)],
            4,
            4,
            BLACK.mix(0.35).stroke_width(1),
        ))?;
        for (i, m) in tl.metrics.iter().enumerate() {
            let color = METRIC_COLORS[i % METRIC_COLORS.len()];
            chart
                .draw_secondary_series(LineSeries::new(
                    m.points.iter().map(|&(t, v)| (t as f64, v)),
                    color.mix(0.8).stroke_width(1),
                ))?
                .label(format!(
                    "{} vs target {} (right axis)",
                    crate::util::text::visible_line(&m.label),
                    m.target
                ))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color));
        }
    }
    let end = t1;
    if !tl.stabilized.is_empty() {
        chart
            .draw_series(LineSeries::new(
                steps(None, &tl.stabilized, end),
                STABILIZED.mix(0.9).stroke_width(1),
            ))?
            .label("stabilized")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], STABILIZED));
    }
    if !tl.limited.is_empty() {
        chart
            .draw_series(DashedLineSeries::new(
                steps(None, &tl.limited, end),
                3,
                3,
                LIMITED.stroke_width(1),
            ))?
            .label("rate-limited")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], LIMITED));
    }
    chart
        .draw_series(LineSeries::new(
            steps(Some((t0, tl.initial)), &tl.actual, end),
            ACTUAL.stroke_width(3),
        ))?
        .label("replicas")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], ACTUAL.stroke_width(3)));
    if !tl.expected_trajectory.is_empty() {
        chart
            .draw_series(DashedLineSeries::new(
                steps(None, &tl.expected_trajectory, end),
                6,
                4,
                EXPECTED.stroke_width(2),
            ))?
            .label("expected trajectory")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], EXPECTED));
    }
    if !tl.expected.is_empty() {
        chart
            .draw_series(
                tl.expected.iter().map(|&(t, r)| {
                    Circle::new((t as f64, f64::from(r)), 4, EXPECTED.stroke_width(2))
                }),
            )?
            .label("expected replicas at t")
            .legend(|(x, y)| Circle::new((x + 9, y), 4, EXPECTED.stroke_width(2)));
    }
    if !tl.failing.is_empty() {
        chart
            .draw_series(
                tl.failing.iter().map(|&(t, r)| {
                    Cross::new((t as f64, f64::from(r)), 7, FAILING.stroke_width(3))
                }),
            )?
            .label("failing tick")
            .legend(|(x, y)| Cross::new((x + 9, y), 5, FAILING.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 12))
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::steps;

    #[test]
    fn a_step_line_holds_each_value_until_the_next_point() {
        assert_eq!(
            steps(Some((0, 5)), &[(0, 5), (15, 3)], 30),
            vec![
                (0.0, 5.0),
                (0.0, 5.0),
                (15.0, 5.0),
                (15.0, 3.0),
                (30.0, 3.0)
            ]
        );
        assert_eq!(steps(None, &[(30, 2)], 30), vec![(30.0, 2.0)]);
    }
}
