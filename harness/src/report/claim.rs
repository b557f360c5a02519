//! A conformance statement (`run --claim FILE`): what was run (corpus commit and fingerprint),
//! on what (the implementation's name and version from `hello`, the target), how it was judged
//! (profile, fixed gates), and what came out (each level, per folder, every skipped case with its
//! reason, every failing case) — as JSON in FILE, a short markdown summary a project can put in its
//! README beside it (`.md`), and a badge (`.svg`).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use serde::Serialize;

use super::RunReport;
use crate::profile::Profile;
use crate::report::levels::level_counts;
use crate::run::Outcome;

/// What the statement says beyond the run's results.
#[derive(Debug, Clone, Default)]
pub struct ClaimContext {
    /// `name version` from the implementation's `hello` (else the target's name).
    pub implementation: Option<String>,
    /// Gates the run fixed (`--feature-gates`).
    pub fixed_gates: BTreeMap<String, bool>,
    /// The corpus's git commit, when known.
    pub commit: Option<String>,
    /// The Kubernetes release judged (`--kubernetes-version`).
    pub kubernetes_version: hpa_reference::KubernetesVersion,
}

#[derive(Serialize)]
struct Counts {
    passed: usize,
    failed: usize,
    skipped: usize,
}

#[derive(Serialize)]
struct Level {
    level: Profile,
    passed: usize,
    ran: usize,
}

#[derive(Serialize)]
struct Skipped<'a> {
    case: &'a str,
    reason: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Claim<'a> {
    statement: &'static str,
    corpus: Corpus,
    implementation: String,
    target: &'a str,
    /// The Kubernetes release whose expectations the implementation was judged against.
    kubernetes_version: &'static str,
    profile: Profile,
    fixed_feature_gates: &'a BTreeMap<String, bool>,
    summary: Counts,
    levels: Vec<Level>,
    folders: BTreeMap<String, Counts>,
    failed: Vec<&'a str>,
    skipped: Vec<Skipped<'a>>,
}

#[derive(Serialize)]
struct Corpus {
    commit: String,
    cases: usize,
    /// FNV-1a 64 over the sorted case names and files run, to tell corpora apart without git.
    fingerprint: String,
}

/// FNV-1a 64 of `parts` (each followed by a NUL), as 16 hex digits: a short, stable name for
/// a set of strings (the corpus fingerprint; the cluster lane's namespace suffix).
pub(crate) fn fnv(parts: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

fn folder(file: &str) -> String {
    Path::new(file)
        .parent()
        .and_then(|p| p.file_name())
        .map_or_else(|| ".".into(), |n| n.to_string_lossy().into_owned())
}

fn build<'a>(report: &'a RunReport, ctx: &'a ClaimContext) -> Claim<'a> {
    let (passed, failed, skipped) = report.counts();
    let mut folders: BTreeMap<String, Counts> = BTreeMap::new();
    for r in &report.results {
        let c = folders.entry(folder(&r.file)).or_insert(Counts {
            passed: 0,
            failed: 0,
            skipped: 0,
        });
        match r.outcome {
            Outcome::Passed => c.passed += 1,
            Outcome::Skipped(_) => c.skipped += 1,
            _ => c.failed += 1,
        }
    }
    let mut names: Vec<String> = report
        .results
        .iter()
        .map(|r| format!("{}\u{0}{}", r.name, r.file))
        .collect();
    names.sort();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    Claim {
        statement: "hpa-conformance conformance statement",
        corpus: Corpus {
            commit: ctx.commit.clone().unwrap_or_else(|| "unknown".into()),
            cases: report.results.len(),
            fingerprint: fnv(&refs),
        },
        implementation: ctx
            .implementation
            .clone()
            .unwrap_or_else(|| report.target.clone()),
        target: &report.target,
        kubernetes_version: ctx.kubernetes_version.name(),
        profile: report.profile,
        fixed_feature_gates: &ctx.fixed_gates,
        summary: Counts {
            passed,
            failed,
            skipped,
        },
        levels: level_counts(&report.results, report.profile)
            .into_iter()
            .map(|(level, passed, ran)| Level { level, passed, ran })
            .collect(),
        folders,
        failed: report
            .results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Failed(_) | Outcome::Errored(_)))
            .map(|r| r.name.as_str())
            .collect(),
        skipped: report
            .results
            .iter()
            .filter_map(|r| match &r.outcome {
                Outcome::Skipped(why) => Some(Skipped {
                    case: &r.name,
                    reason: why,
                }),
                _ => None,
            })
            .collect(),
    }
}

/// The statement as JSON.
pub fn json(report: &RunReport, ctx: &ClaimContext) -> String {
    super::json::to_string(&build(report, ctx))
}

/// The short markdown summary.
pub fn markdown(report: &RunReport, ctx: &ClaimContext) -> String {
    let c = build(report, ctx);
    let mut out = String::new();
    // The name is the implementation's own (from `hello`): markdown text, never markup.
    let _ = writeln!(
        out,
        "## HPA conformance: {}\n",
        crate::util::text::markdown(&c.implementation)
    );
    let levels: Vec<String> = c
        .levels
        .iter()
        .map(|l| format!("**{}** {}/{}", l.level, l.passed, l.ran))
        .collect();
    let _ = writeln!(
        out,
        "Judged as Kubernetes **{}** at profile `{}` on the hpa-conformance corpus (commit `{}`, {} cases, fingerprint `{}`): {}; {} skipped (every skip is listed with its reason in the JSON statement).\n",
        c.kubernetes_version,
        c.profile,
        c.corpus.commit,
        c.corpus.cases,
        c.corpus.fingerprint,
        levels.join(" · "),
        c.summary.skipped
    );
    if !c.fixed_feature_gates.is_empty() {
        let gates: Vec<String> = c
            .fixed_feature_gates
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(out, "Feature gates fixed: `{}`\n", gates.join(","));
    }
    let _ = writeln!(
        out,
        "| folder | passed | failed | skipped |\n| --- | ---: | ---: | ---: |"
    );
    for (f, n) in &c.folders {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            crate::util::text::markdown(f),
            n.passed,
            n.failed,
            n.skipped
        );
    }
    out
}

fn xml_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A flat badge: `hpa-conformance | <profile> passed/ran`.
pub fn badge(report: &RunReport) -> String {
    let (passed, ran) = level_counts(&report.results, report.profile)
        .last()
        .map_or((0, 0), |(_, p, n)| (*p, *n));
    let right = format!("{} {passed}/{ran}", report.profile);
    let colour = if ran > 0 && passed == ran {
        "#4c1"
    } else if ran > 0 && passed * 10 >= ran * 8 {
        "#dfb317"
    } else {
        "#e05d44"
    };
    let (lw, rw) = (110, 7 * right.chars().count() + 12);
    let w = lw + rw;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"20\" role=\"img\" aria-label=\"hpa-conformance: {r}\">\
<rect width=\"{lw}\" height=\"20\" fill=\"#555\"/><rect x=\"{lw}\" width=\"{rw}\" height=\"20\" fill=\"{colour}\"/>\
<g fill=\"#fff\" font-family=\"Verdana,DejaVu Sans,sans-serif\" font-size=\"11\">\
<text x=\"6\" y=\"14\">hpa-conformance</text><text x=\"{tx}\" y=\"14\">{r}</text></g></svg>\n",
        r = xml_text(&right),
        tx = lw + 6
    )
}
