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
use super::corpus::CorpusId;
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
    /// The Kubernetes release judged (`--kubernetes-version`).
    pub kubernetes_version: hpa_reference::KubernetesVersion,
    /// What the implementation declared in its `hello` (an `exec:` implementation).
    pub hello: Option<crate::protocol::Hello>,
    /// The reviewed expected failures (`--expected-failures`): case → why it differs.
    pub expected_failures: Option<BTreeMap<String, String>>,
}

/// What an implementation declared in `hello`, as the statement repeats it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Declared<'a> {
    kubernetes_version: Option<&'a str>,
    levels: Option<&'a [String]>,
    /// The features it has, as the harness read them (`memorySeeding: false` removed).
    features: Vec<&'static str>,
    memory_seeding: bool,
    feature_gates: &'a BTreeMap<String, bool>,
    many_cases: bool,
}

#[derive(Serialize)]
struct Expected<'a> {
    case: &'a str,
    reason: &'a str,
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
    corpus: &'a CorpusId,
    implementation: String,
    /// The target without local paths: `exec:` and the program's file name with its arguments.
    target: String,
    /// What the implementation declared in `hello`, when it is an `exec:` implementation.
    #[serde(skip_serializing_if = "Option::is_none")]
    declared: Option<Declared<'a>>,
    /// The Kubernetes release whose expectations the implementation was judged against.
    kubernetes_version: &'static str,
    profile: Profile,
    fixed_feature_gates: &'a BTreeMap<String, bool>,
    summary: Counts,
    levels: Vec<Level>,
    folders: BTreeMap<String, Counts>,
    failed: Vec<&'a str>,
    /// The failures the run was judged with (`--expected-failures`), each with why it differs
    /// from upstream: only the failed cases the list names.
    #[serde(skip_serializing_if = "Option::is_none")]
    expected_failures: Option<Vec<Expected<'a>>>,
    skipped: Vec<Skipped<'a>>,
}

/// A target as the statement names it: an `exec:` command's program by its file name (a local
/// path means nothing to a reader elsewhere), its arguments kept; anything else as it is.
pub fn public_target(target: &str) -> String {
    let Some(command) = target.strip_prefix("exec:") else {
        return target.to_string();
    };
    let mut words = command.split_whitespace();
    let program = words.next().unwrap_or_default();
    let name = Path::new(program)
        .file_name()
        .map_or_else(|| program.to_string(), |n| n.to_string_lossy().into_owned());
    let args: Vec<String> = words
        .map(|w| {
            // An argument that is a path: its file name too.
            if w.contains('/') && !w.starts_with('-') {
                Path::new(w)
                    .file_name()
                    .map_or_else(|| w.to_string(), |n| n.to_string_lossy().into_owned())
            } else {
                w.to_string()
            }
        })
        .collect();
    std::iter::once(format!("exec:{name}"))
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ")
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
    Claim {
        statement: "hpa-conformance conformance statement",
        corpus: &report.corpus,
        implementation: ctx
            .implementation
            .clone()
            .unwrap_or_else(|| report.target.clone()),
        target: public_target(&report.target),
        declared: ctx.hello.as_ref().map(|h| Declared {
            kubernetes_version: h.kubernetes_version.as_deref(),
            levels: h.levels.as_deref(),
            features: h.declared_features().iter().map(|f| f.as_str()).collect(),
            memory_seeding: h.memory_seeding,
            feature_gates: &h.feature_gates,
            many_cases: h.many_cases,
        }),
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
        expected_failures: ctx.expected_failures.as_ref().map(|list| {
            report
                .results
                .iter()
                .filter(|r| matches!(r.outcome, Outcome::Failed(_) | Outcome::Errored(_)))
                .filter_map(|r| {
                    list.get_key_value(&r.name).map(|(case, reason)| Expected {
                        case: case.as_str(),
                        reason: reason.as_str(),
                    })
                })
                .collect()
        }),
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
    if let Some(d) = &c.declared {
        let _ = writeln!(
            out,
            "Declared in hello: Kubernetes {}, levels {}, features {}, gates {}.\n",
            d.kubernetes_version
                .map_or_else(|| "not stated".to_string(), crate::util::text::markdown),
            d.levels.map_or_else(
                || "all".to_string(),
                |l| crate::util::text::markdown(&l.join(", "))
            ),
            if d.features.is_empty() {
                "none".to_string()
            } else {
                d.features.join(", ")
            },
            if d.feature_gates.is_empty() {
                "as asked".to_string()
            } else {
                crate::util::text::markdown(
                    &d.feature_gates
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(","),
                )
            }
        );
    }
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
    if let Some(expected) = c.expected_failures.as_ref().filter(|e| !e.is_empty()) {
        let _ = writeln!(
            out,
            "\nKnown differences from upstream ({}), reviewed:\n",
            expected.len()
        );
        for e in expected {
            let _ = writeln!(
                out,
                "- `{}`: {}",
                crate::util::text::markdown(e.case),
                crate::util::text::markdown(e.reason)
            );
        }
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
