//! The version matrix (`hpa-conformance matrix`): the corpus on one target at every Kubernetes
//! release, as case × release, with the upstream change that explains each row where the
//! releases differ. Rendered as text, JSON, Markdown (the "what changed" page of the docs) and an
//! HTML page.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hpa_reference::KubernetesVersion;
use serde::Serialize;

use crate::case::Case;
use crate::case::versions::changes_of;
use crate::run::{CaseResult, Outcome};

/// One case on one release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cell {
    /// `passed`, `failed`, `skipped` or `errored`.
    pub outcome: &'static str,
    /// Why it was skipped, or the first failure / the error (one line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One upstream change a case's expectations show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// The release that made it.
    pub release: String,
    /// The change (its pull request and one line), from the case's `changedIn`.
    pub upstream: String,
}

/// One case across the releases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// The case's name.
    pub name: String,
    /// Its file.
    pub file: String,
    /// One cell per release, in the matrix's order.
    pub cells: Vec<Cell>,
    /// The upstream changes its expectations show (newest first).
    pub changes: Vec<Change>,
}

impl Row {
    /// Whether the releases differ for this case: its expectations change, or its outcome does.
    pub fn differs(&self) -> bool {
        !self.changes.is_empty() || self.cells.windows(2).any(|w| w[0].outcome != w[1].outcome)
    }
}

/// Totals of one release.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Passed cases.
    pub passed: usize,
    /// Failed cases.
    pub failed: usize,
    /// Skipped cases.
    pub skipped: usize,
    /// Cases the target could not run.
    pub errored: usize,
}

/// The changes of one release: each upstream change with the cases that show it.
pub type ReleaseChanges = (String, Vec<(String, Vec<String>)>);

/// The whole matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Matrix {
    /// The target, as named on the command line.
    pub target: String,
    /// The releases, oldest first.
    pub versions: Vec<String>,
    /// Totals per release.
    pub totals: Vec<Totals>,
    /// Every case.
    pub rows: Vec<Row>,
}

fn cell(r: &CaseResult) -> Cell {
    let one_line = |s: &str| s.lines().next().unwrap_or_default().to_string();
    match &r.outcome {
        Outcome::Passed => Cell {
            outcome: "passed",
            detail: None,
        },
        Outcome::Failed(f) => Cell {
            outcome: "failed",
            detail: f.first().map(|f| {
                let at = f.t.map(|t| format!("t={t}: ")).unwrap_or_default();
                one_line(&format!(
                    "{at}{}: expected {}, got {}",
                    f.check, f.expected, f.actual
                ))
            }),
        },
        Outcome::Skipped(why) => Cell {
            outcome: "skipped",
            detail: Some(one_line(why)),
        },
        Outcome::Errored(e) => Cell {
            outcome: "errored",
            detail: Some(one_line(e)),
        },
    }
}

impl Matrix {
    /// The matrix from each release's results (in `cases` order).
    pub fn new(
        target: &str,
        cases: &[Case],
        runs: &[(KubernetesVersion, Vec<CaseResult>)],
    ) -> Matrix {
        let totals = runs
            .iter()
            .map(|(_, results)| {
                let mut t = Totals::default();
                for r in results {
                    match r.outcome {
                        Outcome::Passed => t.passed += 1,
                        Outcome::Failed(_) => t.failed += 1,
                        Outcome::Skipped(_) => t.skipped += 1,
                        Outcome::Errored(_) => t.errored += 1,
                    }
                }
                t
            })
            .collect();
        let rows = cases
            .iter()
            .enumerate()
            .map(|(i, case)| Row {
                name: case.name().to_string(),
                file: case.path.display().to_string(),
                cells: runs.iter().map(|(_, rs)| cell(&rs[i])).collect(),
                changes: changes_of(case)
                    .into_iter()
                    .map(|(v, text)| Change {
                        release: v.name().to_string(),
                        upstream: text.to_string(),
                    })
                    .collect(),
            })
            .collect();
        Matrix {
            target: target.to_string(),
            versions: runs.iter().map(|(v, _)| v.name().to_string()).collect(),
            totals,
            rows,
        }
    }

    /// Whether every case that ran passed on every release, and something ran.
    pub fn passed(&self) -> bool {
        self.totals.iter().all(|t| t.failed == 0 && t.errored == 0)
            && self.totals.iter().any(|t| t.passed > 0)
    }

    /// The changes the corpus shows, by release (newest first): each change with its cases.
    pub fn changes_by_release(&self) -> Vec<ReleaseChanges> {
        let mut by: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for row in &self.rows {
            for c in &row.changes {
                by.entry(c.release.clone())
                    .or_default()
                    .entry(c.upstream.clone())
                    .or_default()
                    .push(row.name.clone());
            }
        }
        let mut out: Vec<ReleaseChanges> = by
            .into_iter()
            .map(|(release, changes)| (release, changes.into_iter().collect()))
            .collect();
        out.sort_by_key(|(r, _)| std::cmp::Reverse(r.parse::<KubernetesVersion>().ok()));
        out
    }

    /// Rows whose outcome is not the same on every release although no change explains it:
    /// skips for a gate or a range, failures.
    fn unexplained(&self) -> impl Iterator<Item = &Row> {
        self.rows
            .iter()
            .filter(|r| r.changes.is_empty() && r.differs())
    }

    /// The text report.
    pub fn human(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "Kubernetes version matrix of {}", self.target);
        let _ = write!(s, "\n{:<10}", "release");
        for v in &self.versions {
            let _ = write!(s, "{v:>8}");
        }
        for (label, pick) in [
            ("passed", (|t: &Totals| t.passed) as fn(&Totals) -> usize),
            ("failed", |t| t.failed),
            ("skipped", |t| t.skipped),
            ("errored", |t| t.errored),
        ] {
            let _ = write!(s, "\n{label:<10}");
            for t in &self.totals {
                let _ = write!(s, "{:>8}", pick(t));
            }
        }
        s.push('\n');
        let changes = self.changes_by_release();
        let _ = writeln!(
            s,
            "\nWhat changes between releases ({} cases expect something else before a change):",
            self.rows.iter().filter(|r| !r.changes.is_empty()).count()
        );
        for (release, list) in &changes {
            for (upstream, cases) in list {
                let _ = writeln!(s, "  {release}  {upstream}");
                let _ = writeln!(s, "        {}", cases.join(", "));
            }
        }
        let other: Vec<&Row> = self.unexplained().collect();
        if !other.is_empty() {
            let _ = writeln!(
                s,
                "\nCases whose outcome differs between releases without a change of theirs:"
            );
            for row in other {
                let _ = writeln!(s, "  {}", row.name);
                for (v, c) in self.versions.iter().zip(&row.cells) {
                    if c.outcome != "passed" {
                        let _ = writeln!(
                            s,
                            "    {v}: {} {}",
                            c.outcome,
                            c.detail.as_deref().unwrap_or_default()
                        );
                    }
                }
            }
        }
        let failing: Vec<(&Row, &String, &Cell)> = self
            .rows
            .iter()
            .flat_map(|r| {
                self.versions
                    .iter()
                    .zip(&r.cells)
                    .filter(|(_, c)| c.outcome == "failed" || c.outcome == "errored")
                    .map(move |(v, c)| (r, v, c))
            })
            .collect();
        if !failing.is_empty() {
            let _ = writeln!(s, "\nFailures:");
            for (row, v, c) in failing {
                let _ = writeln!(
                    s,
                    "  {} on {v}: {}",
                    row.name,
                    c.detail.as_deref().unwrap_or(c.outcome)
                );
            }
        }
        let _ = writeln!(
            s,
            "\nmatrix: {}",
            if self.passed() {
                "every case that ran passed on every release"
            } else {
                "FAILED"
            }
        );
        s
    }

    /// The Markdown page: the totals and what changed for the HPA, release by release.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "| release | {} |", self.versions.join(" | "));
        let _ = writeln!(s, "|---|{}", "---:|".repeat(self.versions.len()));
        for (label, pick) in [
            ("passed", (|t: &Totals| t.passed) as fn(&Totals) -> usize),
            ("failed", |t| t.failed),
            ("skipped", |t| t.skipped),
        ] {
            let cells: Vec<String> = self.totals.iter().map(|t| pick(t).to_string()).collect();
            let _ = writeln!(s, "| {label} | {} |", cells.join(" | "));
        }
        for (release, list) in self.changes_by_release() {
            let _ = writeln!(s, "\n### {release}\n");
            for (upstream, cases) in list {
                // At most six names: the HTML page and the JSON list every case.
                let mut shown: Vec<String> =
                    cases.iter().take(6).map(|c| format!("`{c}`")).collect();
                if cases.len() > 6 {
                    shown.push(format!("… ({} cases)", cases.len()));
                }
                let _ = writeln!(
                    s,
                    "- {} — {}",
                    upstream.replace('|', "\\|"),
                    shown.join(", ")
                );
            }
        }
        s
    }

    /// The HTML page: every case × release, each differing row with its cause.
    pub fn html(&self) -> String {
        use super::html::escape;
        let mut s = String::new();
        s.push_str("<!doctype html><html><head><meta charset=\"utf-8\"><title>Kubernetes version matrix</title><style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px;vertical-align:top}.passed{background:#dfd}.failed,.errored{background:#fbb}.skipped{background:#eee;color:#666}.why{font-size:12px;color:#333}</style></head><body>");
        let _ = write!(
            s,
            "<h1>Kubernetes version matrix</h1><p>Target: <code>{}</code>. Each cell: the case on that release. A row whose releases differ names the upstream change (the case's <code>changedIn</code>) or the reason it was skipped.</p>",
            escape(&self.target)
        );
        s.push_str("<table><tr><th>case</th>");
        for v in &self.versions {
            let _ = write!(s, "<th>{}</th>", escape(v));
        }
        s.push_str("<th>why the releases differ</th></tr>");
        let mut rows: Vec<&Row> = self.rows.iter().collect();
        rows.sort_by_key(|r| !r.differs());
        for row in rows {
            let _ = write!(
                s,
                "<tr><td title=\"{}\">{}</td>",
                escape(&row.file),
                escape(&row.name)
            );
            for c in &row.cells {
                let _ = write!(
                    s,
                    "<td class=\"{}\" title=\"{}\">{}</td>",
                    c.outcome,
                    escape(c.detail.as_deref().unwrap_or_default()),
                    c.outcome
                );
            }
            let why: Vec<String> = row
                .changes
                .iter()
                .map(|c| format!("{}: {}", c.release, c.upstream))
                .chain((row.changes.is_empty() && row.differs()).then(|| {
                    row.cells
                        .iter()
                        .filter_map(|c| c.detail.clone())
                        .next()
                        .unwrap_or_default()
                }))
                .collect();
            let _ = write!(
                s,
                "<td class=\"why\">{}</td></tr>",
                why.iter()
                    .map(|w| escape(w))
                    .collect::<Vec<_>>()
                    .join("<br>")
            );
        }
        s.push_str("</table></body></html>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(case: &Case, outcome: Outcome) -> CaseResult {
        CaseResult::of(case, outcome, Vec::new(), std::time::Instant::now(), None)
    }

    #[test]
    fn rows_name_their_changes_and_differing_outcomes() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../cases/algorithm/tolerance-band-no-change.yaml");
        let case = crate::case::load_case(&path).expect("a corpus case");
        let runs = vec![
            (
                KubernetesVersion::V1_32,
                vec![result(&case, Outcome::Skipped("gate".into()))],
            ),
            (
                KubernetesVersion::V1_33,
                vec![result(&case, Outcome::Passed)],
            ),
        ];
        let m = Matrix::new("core", std::slice::from_ref(&case), &runs);
        assert_eq!(m.versions, ["1.32", "1.33"]);
        assert_eq!(m.totals[0].skipped, 1);
        assert_eq!(m.totals[1].passed, 1);
        assert!(m.rows[0].differs());
        assert_eq!(m.rows[0].changes[0].release, "1.33");
        assert!(m.passed());
        let text = m.human();
        assert!(text.contains("1.33  #130797"), "{text}");
        assert!(m.markdown().contains("### 1.33"));
        assert!(m.html().contains("#130797"));
    }
}
