//! The fault matrix on kind (`just kind-faults`, `kind-config/faults/run.sh`), the harness's part:
//! how soon a controller reads metrics again once a fault has ended (`first-read`, from the
//! stub's request times), a faulted run judged against the same controller's fault-free run of
//! the same case (`judge`: wrong scale decisions), and the table of the judged rows (`table`).
//! The script injects the faults and looks for what they left behind; this module measures and
//! judges only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::report::json::{ReadCase, read};

/// `hpa-conformance kind-faults`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The kubeconfig (`first-read`; default: the usual lookup).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// Its context.
    #[arg(long, global = true)]
    pub context: Option<String>,
    #[command(subcommand)]
    pub step: Step,
}

/// The steps the script calls.
#[derive(Debug, clap::Subcommand)]
pub enum Step {
    /// Wait for the first metric request after `--since-ms` in a namespace whose name starts
    /// with `--namespace-prefix` (the stub's request times); print its Unix milliseconds.
    FirstRead {
        #[arg(long)]
        namespace_prefix: String,
        /// Unix milliseconds (the fault's end).
        #[arg(long)]
        since_ms: i64,
        /// Give up (exit 2) after this long.
        #[arg(long, default_value_t = 120)]
        timeout_seconds: u64,
    },
    /// Judge a faulted run (its report.json) against the fault-free run of the same case on the
    /// same controller; print one JSON line, a row of `table`.
    Judge {
        /// The fault's name (`none` for the fault-free run itself).
        #[arg(long)]
        fault: String,
        /// The controller's name.
        #[arg(long)]
        controller: String,
        /// The fault-free run's report.json.
        #[arg(long)]
        baseline: PathBuf,
        /// The faulted run's report.json.
        #[arg(long)]
        run: PathBuf,
        /// When the fault ended (Unix ms) and when the controller first read metrics after it.
        #[arg(long, requires = "first_read_ms")]
        fault_end_ms: Option<i64>,
        #[arg(long)]
        first_read_ms: Option<i64>,
        /// What the fault left behind, as the script found it (repeatable).
        #[arg(long = "left-behind")]
        left_behind: Vec<String>,
        /// What the script measured of the fault itself, e.g. how many requests it rejected
        /// (repeatable).
        #[arg(long = "note")]
        notes: Vec<String>,
    },
    /// Print the table of judged rows (files of JSON lines, in order).
    Table { rows: Vec<PathBuf> },
}

/// A faulted run, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub fault: String,
    pub controller: String,
    pub case: String,
    /// The case passed: every expectation of its file, timing included.
    pub passed: bool,
    /// `passed`, `failed`, `skipped`, or `error: …` (the lane's).
    pub outcome: String,
    /// Replica values the run took that the fault-free run never takes.
    pub values_outside: Vec<i32>,
    /// Rescales (by their new size) the run made beyond those of the fault-free run: a double
    /// scale shows here.
    pub extra_rescales: Vec<i32>,
    /// Rescales made, and made by the fault-free run.
    pub rescales: usize,
    pub baseline_rescales: usize,
    /// Seconds from the fault's end to the controller's first metric read.
    pub recovery_seconds: Option<f64>,
    /// What the fault left behind.
    pub left_behind: Vec<String>,
    /// What the script measured of the fault itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Row {
    /// Wrong scale decisions: values outside the fault-free run's plus rescales beyond its own.
    pub fn wrong(&self) -> usize {
        self.values_outside.len() + self.extra_rescales.len()
    }
}

/// The new sizes of a case's `SuccessfulRescale` events ("New size: N; reason: …"), counted.
fn rescales(c: &ReadCase) -> BTreeMap<i32, usize> {
    let mut sizes = BTreeMap::new();
    for e in c.trace.iter().flat_map(|t| &t.events) {
        if !e.contains("SuccessfulRescale") {
            continue;
        }
        let size = e
            .split_once("New size: ")
            .and_then(|(_, rest)| rest.split(';').next())
            .and_then(|n| n.trim().parse::<i32>().ok());
        if let Some(n) = size {
            *sizes.entry(n).or_insert(0) += 1;
        }
    }
    sizes
}

/// The replica values a case's trace takes.
fn values(c: &ReadCase) -> std::collections::BTreeSet<i32> {
    c.trace
        .iter()
        .flat_map(|t| [t.replicas_before, t.replicas])
        .collect()
}

/// Wrong scale decisions of `run` against `baseline`: (values the baseline never takes, rescales
/// by new size beyond the baseline's count of each).
pub fn wrong_decisions(baseline: &ReadCase, run: &ReadCase) -> (Vec<i32>, Vec<i32>) {
    let known = values(baseline);
    let outside = values(run)
        .into_iter()
        .filter(|v| !known.contains(v))
        .collect();
    let base = rescales(baseline);
    let mut extra = Vec::new();
    for (size, n) in rescales(run) {
        let allowed = base.get(&size).copied().unwrap_or(0);
        extra.extend(std::iter::repeat_n(size, n.saturating_sub(allowed)));
    }
    (outside, extra)
}

fn outcome(c: &ReadCase) -> String {
    match (&c.error, c.skipped, c.passed) {
        (Some(e), _, _) => format!("error: {}", e.lines().next().unwrap_or_default()),
        (None, true, _) => "skipped".into(),
        (None, false, true) => "passed".into(),
        (None, false, false) => "failed".into(),
    }
}

/// Judges `run` against `baseline` (each the one case of a report).
pub fn judge(fault: &str, controller: &str, baseline: &ReadCase, run: &ReadCase) -> Row {
    let (values_outside, extra_rescales) = wrong_decisions(baseline, run);
    Row {
        fault: fault.into(),
        controller: controller.into(),
        case: run.name.clone(),
        passed: run.passed,
        outcome: outcome(run),
        values_outside,
        extra_rescales,
        rescales: rescales(run).values().sum(),
        baseline_rescales: rescales(baseline).values().sum(),
        recovery_seconds: None,
        left_behind: Vec::new(),
        notes: Vec::new(),
    }
}

/// The one case of a report.json.
fn one_case(path: &Path) -> Result<ReadCase, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut cases = read(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    match cases.len() {
        1 => Ok(cases.remove(0)),
        n => Err(format!("{}: {n} cases, want one", path.display())),
    }
}

/// The table of judged rows.
pub fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<22} {:<12} {:<40} {:>5} {:>9} {:>9}  {}\n",
        "fault", "controller", "case", "wrong", "rescales", "recovery", "outcome; left behind"
    );
    for r in rows {
        let recovery = r
            .recovery_seconds
            .map_or("-".to_string(), |s| format!("{s:.1} s"));
        let mut left = if r.left_behind.is_empty() {
            "nothing left".to_string()
        } else {
            r.left_behind.join(", ")
        };
        for n in &r.notes {
            left = format!("{left}; {n}");
        }
        let mut wrong = r.wrong().to_string();
        if r.wrong() > 0 {
            wrong = format!(
                "{wrong} ({})",
                r.values_outside
                    .iter()
                    .map(|v| format!("value {v}"))
                    .chain(r.extra_rescales.iter().map(|v| format!("rescale to {v}")))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        out.push_str(&format!(
            "{:<22} {:<12} {:<40} {:>5} {:>9} {:>9}  {}; {left}\n",
            r.fault,
            r.controller,
            r.case,
            wrong,
            format!("{}/{}", r.rescales, r.baseline_rescales),
            recovery,
            r.outcome
        ));
    }
    out.push_str(
        "wrong: replica values the fault-free run never takes + rescales beyond its own; rescales: \
         made/fault-free; recovery: from the fault's end to the controller's first metric read\n",
    );
    out.push_str(&recovery_summary(rows));
    out
}

/// Recovery over repeated runs of a fault (`REPEAT=N`), per fault and controller: one run's figure
/// includes where the sync period happened to be, so only the spread compares controllers.
fn recovery_summary(rows: &[Row]) -> String {
    let mut groups: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
    let mut runs: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.fault != "none") {
        *runs.entry((&r.fault, &r.controller)).or_insert(0) += 1;
        if let Some(s) = r.recovery_seconds {
            groups.entry((&r.fault, &r.controller)).or_default().push(s);
        }
    }
    if runs.values().all(|&n| n < 2) {
        return String::new();
    }
    let mut out = String::from("recovery over repeated runs (min / median / max):\n");
    for ((fault, controller), n) in runs {
        let mut s = groups.remove(&(fault, controller)).unwrap_or_default();
        s.sort_by(f64::total_cmp);
        let figures = match (s.first(), s.last()) {
            (Some(min), Some(max)) => {
                let mid = s.len() / 2;
                let median = if s.len() % 2 == 1 {
                    s[mid]
                } else {
                    (s[mid - 1] + s[mid]) / 2.0
                };
                format!("{min:.1} / {median:.1} / {max:.1} s")
            }
            _ => "-".into(),
        };
        out.push_str(&format!(
            "  {fault:<22} {controller:<12} {figures} ({} of {n} runs measured)\n",
            s.len()
        ));
    }
    out
}

/// The first request time after `since_ms` among namespaces starting with `prefix`.
fn first_after(times: &BTreeMap<String, Vec<i64>>, prefix: &str, since_ms: i64) -> Option<i64> {
    times
        .iter()
        .filter(|(ns, _)| ns.starts_with(prefix))
        .flat_map(|(_, t)| t.iter().copied().filter(|t| *t > since_ms))
        .min()
}

/// Runs a step; `Err` is a problem to print (exit 2 at the command line).
pub fn run(args: Args, out: &mut dyn std::io::Write) -> Result<(), String> {
    let line = match args.step {
        Step::Judge {
            fault,
            controller,
            baseline,
            run,
            fault_end_ms,
            first_read_ms,
            left_behind,
            notes,
        } => {
            let mut row = judge(&fault, &controller, &one_case(&baseline)?, &one_case(&run)?);
            row.recovery_seconds = fault_end_ms
                .zip(first_read_ms)
                .map(|(end, read)| (read - end) as f64 / 1000.0);
            row.left_behind = left_behind;
            row.notes = notes;
            serde_json::to_string(&row).map_err(|e| e.to_string())? + "\n"
        }
        Step::Table { rows } => {
            let mut all = Vec::new();
            for p in &rows {
                let text =
                    std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
                for (i, l) in text
                    .lines()
                    .enumerate()
                    .filter(|(_, l)| !l.trim().is_empty())
                {
                    all.push(
                        serde_json::from_str::<Row>(l)
                            .map_err(|e| format!("{}:{}: {e}", p.display(), i + 1))?,
                    );
                }
            }
            if all.is_empty() {
                return Err("no rows".into());
            }
            table(&all)
        }
        Step::FirstRead {
            namespace_prefix,
            since_ms,
            timeout_seconds,
        } => {
            let at = super::with_client(
                args.kubeconfig.as_deref(),
                args.context.as_deref(),
                1,
                |client, _| async move {
                    let stub = super::stub::StubControl::connect(&client).await?;
                    let started = Instant::now();
                    loop {
                        // The stub may be unreachable for a moment after a fault: retried.
                        if let Ok(times) = stub.request_times().await
                            && let Some(at) =
                                first_after(&times.namespaces, &namespace_prefix, since_ms)
                        {
                            return Ok::<i64, String>(at);
                        }
                        if started.elapsed() > Duration::from_secs(timeout_seconds) {
                            return Err(format!(
                                "no metric request in {namespace_prefix}* within {timeout_seconds} s after {since_ms}"
                            ));
                        }
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                },
            )?;
            format!("{at}\n")
        }
    };
    out.write_all(line.as_bytes()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::json::ReadTick;

    fn case(ticks: &[(i32, i32, &[&str])]) -> ReadCase {
        ReadCase {
            name: "c".into(),
            passed: true,
            skipped: false,
            error: None,
            trace: ticks
                .iter()
                .enumerate()
                .map(|(i, (before, after, events))| ReadTick {
                    t: 15 * i as i64,
                    replicas_before: *before,
                    replicas: *after,
                    events: events.iter().map(|e| e.to_string()).collect(),
                })
                .collect(),
        }
    }

    const UP4: &str =
        "Normal SuccessfulRescale: New size: 4; reason: pods metric jobs above target";
    const UP8: &str =
        "Normal SuccessfulRescale: New size: 8; reason: pods metric jobs above target";

    #[test]
    fn the_same_decisions_later_are_not_wrong() {
        let base = case(&[(2, 4, &[UP4]), (4, 4, &[]), (4, 8, &[UP8])]);
        let late = case(&[(2, 4, &[UP4]), (4, 4, &[]), (4, 4, &[]), (4, 8, &[UP8])]);
        assert_eq!(wrong_decisions(&base, &late), (vec![], vec![]));
        let row = judge("etcd-restart", "kcm", &base, &late);
        assert_eq!(
            (row.wrong(), row.rescales, row.baseline_rescales),
            (0, 2, 2)
        );
    }

    #[test]
    fn a_value_never_taken_and_a_double_scale_are_wrong() {
        let base = case(&[(2, 4, &[UP4]), (4, 8, &[UP8])]);
        let run = case(&[(2, 4, &[UP4, UP4]), (4, 6, &[]), (6, 8, &[UP8])]);
        assert_eq!(wrong_decisions(&base, &run), (vec![6], vec![4]));
        let row = judge("sigkill", "reference", &base, &run);
        assert_eq!(row.wrong(), 2);
        let t = table(&[row]);
        assert!(t.contains("2 (value 6, rescale to 4)"), "{t}");
    }

    #[test]
    fn repeated_runs_are_summed_up_per_fault_and_controller() {
        let base = case(&[(2, 4, &[UP4])]);
        let row = |controller: &str, recovery: Option<f64>| {
            let mut r = judge("etcd-restart", controller, &base, &base);
            r.recovery_seconds = recovery;
            r
        };
        assert_eq!(recovery_summary(&[row("kcm", Some(1.0))]), "");
        let rows = [
            row("kcm", Some(3.0)),
            row("kcm", Some(0.5)),
            row("kcm", Some(2.0)),
            row("reference", Some(1.0)),
            row("reference", None),
        ];
        let s = recovery_summary(&rows);
        assert!(
            s.contains(
                "etcd-restart           kcm          0.5 / 2.0 / 3.0 s (3 of 3 runs measured)"
            ),
            "{s}"
        );
        assert!(
            s.contains("reference    1.0 / 1.0 / 1.0 s (1 of 2 runs measured)"),
            "{s}"
        );
    }

    #[test]
    fn the_outcome_names_the_lanes_error() {
        let mut c = case(&[]);
        c.passed = false;
        c.error = Some("the API server went away\nmore".into());
        assert_eq!(outcome(&c), "error: the API server went away");
        c.error = None;
        assert_eq!(outcome(&c), "failed");
    }

    #[test]
    fn the_first_read_is_the_earliest_after_the_instant_in_the_cases_namespaces() {
        let times = BTreeMap::from([
            ("hpa-a-1".to_string(), vec![100, 200, 300]),
            ("hpa-a-2".to_string(), vec![250]),
            ("hpa-b-1".to_string(), vec![201]),
        ]);
        assert_eq!(first_after(&times, "hpa-a-", 200), Some(250));
        assert_eq!(first_after(&times, "hpa-a-", 300), None);
    }
}
