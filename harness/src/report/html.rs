//! The HTML report (`run --report DIR` writes it as `index.html`): one offline page — no network
//! asset, no external file, styles and timelines inline, so it opens from `file://` and from a CI
//! artifact alike. It shows a summary by folder, then per case its status (passed, failed,
//! skipped with the reason, error), source, title and replica timeline ([`super::timeline`]), and
//! for a failure the expectations that did not hold with the explain rows around the first
//! failing tick. Failed and errored cases are open; the others fold.
//!
//! A few lines of script measure each drawn timeline once the browser has laid the page out and
//! write the size into the figure's `data-drawn` attribute: the browser test
//! (`tests/report_browser.rs`) reads it from the rendered DOM.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use super::RunReport;
use super::timeline::Timeline;
use crate::case::Case;
use crate::run::trace::TickTrace;
use crate::run::{CaseResult, Outcome};

/// Text as HTML (element content and attribute values): markup characters as references, and
/// every character that is not [`crate::util::text::printable`] (but tabs and newlines) as the text
/// `\u{…}`, as in the other reports — no NUL, ESC, C1 control or noncharacter reaches the page.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if !crate::util::text::printable(c) => crate::util::text::push_escaped(&mut out, c),
            _ => out.push(c),
        }
    }
    out
}

/// A case's status word, as the page's `data-status` attributes say it.
pub fn status(r: &CaseResult) -> &'static str {
    match r.outcome {
        Outcome::Passed => "passed",
        Outcome::Failed(_) => "failed",
        Outcome::Skipped(_) => "skipped",
        Outcome::Errored(_) => "error",
    }
}

/// The folder a case file is in, for the summary.
fn folder(file: &str) -> String {
    Path::new(file)
        .parent()
        .map(|p| p.display().to_string())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| ".".into())
}

const STYLE: &str = "
body{font:14px/1.45 system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:24px;color:#222}
h1{font-size:20px;margin:0 0 4px}
table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}
td.n{text-align:right}
.badge{display:inline-block;min-width:58px;text-align:center;border-radius:3px;padding:0 6px;
 color:#fff;font-weight:600;font-size:12px;margin-right:6px}
.passed .badge{background:#2c8a2c}.failed .badge,.error .badge{background:#c62828}
.skipped .badge{background:#888}
section.case{border-bottom:1px solid #eee;padding:2px 0}
summary{cursor:pointer}
summary .title{color:#555}
.detail{margin:6px 0 12px 24px}
pre{background:#f7f7f7;padding:6px;overflow-x:auto;font-size:12px}
table.explain td{font:12px monospace;white-space:pre}
table.explain td.why{white-space:normal;min-width:420px;font-family:inherit}
tr.first-failure td{background:#fde7e7}
.scroll{overflow-x:auto}
figure{margin:6px 0}
figure svg{max-width:100%;height:auto}
";

/// Measures each drawn timeline after layout (see the module doc).
const PROBE: &str = "
window.addEventListener('load',function(){
 document.querySelectorAll('figure.timeline').forEach(function(f){
  var s=f.querySelector('svg');if(!s)return;var r=s.getBoundingClientRect();
  var lines=s.querySelectorAll('polyline,path').length;
  f.setAttribute('data-drawn',Math.round(r.width)+'x'+Math.round(r.height)+' '+lines+' lines');
 });
 document.body.setAttribute('data-probed','yes');
});
";

/// Renders the page. `cases` are the run's cases (for sources, expectations and the metrics'
/// targets), matched to results by name.
pub fn render(report: &RunReport, cases: &[Case]) -> String {
    let by_name: BTreeMap<&str, &Case> = cases.iter().map(|c| (c.name(), c)).collect();
    let (passed, failed, skipped) = report.counts();
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>hpa-conformance: {p} passed, {f} failed, {s} skipped</title>\
         <style>{STYLE}</style></head>\n<body>\n",
        p = passed,
        f = failed,
        s = skipped
    );
    let _ = writeln!(
        out,
        "<h1>hpa-conformance report</h1>\n<p>target <code>{}</code> — <span id=\"totals\" \
         data-cases=\"{}\" data-passed=\"{passed}\" data-failed=\"{failed}\" \
         data-skipped=\"{skipped}\" data-bad-input=\"{}\">{} cases: {passed} passed, {failed} \
         failed, {skipped} skipped{}</span></p>",
        escape(&report.target),
        report.results.len(),
        report.bad_input.len(),
        report.results.len(),
        if report.bad_input.is_empty() {
            String::new()
        } else {
            format!(
                ", {} case files could not be loaded",
                report.bad_input.len()
            )
        }
    );
    let _ = writeln!(
        out,
        "<p id=\"corpus\">corpus commit <code>{}</code>, {} cases, fingerprint <code>{}</code></p>",
        escape(&report.corpus.commit),
        report.corpus.cases,
        escape(&report.corpus.fingerprint)
    );
    folder_summary(report, &mut out);
    if !report.bad_input.is_empty() {
        let _ = writeln!(
            out,
            "<h2>Case files that could not be loaded</h2>\n<ul id=\"bad-input\">"
        );
        for e in &report.bad_input {
            let _ = writeln!(out, "<li><code>{}</code></li>", escape(&e.to_string()));
        }
        let _ = writeln!(out, "</ul>");
    }
    let _ = writeln!(out, "<h2>Cases</h2>");
    for r in &report.results {
        case_section(r, by_name.get(r.name.as_str()).copied(), &mut out);
    }
    let _ = write!(out, "<script>{PROBE}</script>\n</body></html>\n");
    out
}

fn folder_summary(report: &RunReport, out: &mut String) {
    let mut folders: BTreeMap<String, [usize; 3]> = BTreeMap::new();
    for r in &report.results {
        let c = folders.entry(folder(&r.file)).or_default();
        match r.outcome {
            Outcome::Passed => c[0] += 1,
            Outcome::Failed(_) | Outcome::Errored(_) => c[1] += 1,
            Outcome::Skipped(_) => c[2] += 1,
        }
    }
    let _ = writeln!(
        out,
        "<h2>By folder</h2>\n<table id=\"folders\"><tr><th>folder</th><th>passed</th>\
         <th>failed</th><th>skipped</th></tr>"
    );
    for (f, [p, x, s]) in &folders {
        let _ = writeln!(
            out,
            "<tr data-folder=\"{0}\"><td>{0}</td><td class=\"n\">{p}</td><td class=\"n\">{x}</td>\
             <td class=\"n\">{s}</td></tr>",
            escape(f)
        );
    }
    let _ = writeln!(out, "</table>");
}

fn source_text(case: &Case) -> String {
    let s = &case.file.source;
    [
        s.seed.as_ref().map(|x| format!("seed {x}")),
        s.section.as_ref().map(|x| format!("section “{x}”")),
        s.upstream.as_ref().map(|x| format!("upstream {x}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ")
}

fn case_section(r: &CaseResult, case: Option<&Case>, out: &mut String) {
    let st = status(r);
    let open = matches!(r.outcome, Outcome::Failed(_) | Outcome::Errored(_));
    let _ = writeln!(
        out,
        "<section class=\"case {st}\" id=\"case-{id}\" data-case=\"{id}\" data-status=\"{st}\">\
         <details{open}><summary><span class=\"badge\">{st}</span><b>{name}</b> \
         <span class=\"title\">{title}</span></summary><div class=\"detail\">",
        id = escape(&r.name),
        name = escape(&r.name),
        title = escape(&r.title),
        open = if open { " open" } else { "" }
    );
    let _ = write!(out, "<p>file <code>{}</code>", escape(&r.file));
    if let Some(c) = case {
        let _ = write!(out, " — source: {}", escape(&source_text(c)));
    }
    let _ = writeln!(out, "</p>");
    match &r.outcome {
        Outcome::Skipped(why) => {
            let _ = writeln!(out, "<p class=\"skip-reason\">skipped: {}</p>", escape(why));
        }
        Outcome::Errored(why) => {
            let _ = writeln!(out, "<pre class=\"error\">{}</pre>", escape(why));
        }
        Outcome::Failed(failures) => {
            let _ = writeln!(out, "<ul class=\"failures\">");
            for f in failures {
                let _ = writeln!(
                    out,
                    "<li>{}: {}: expected <b>{}</b>, got <b>{}</b></li>",
                    f.t.map_or("whole run".into(), |t| format!("t={t}")),
                    escape(&f.what()),
                    escape(&f.expected),
                    escape(&f.actual)
                );
            }
            let _ = writeln!(out, "</ul>");
            let (first, hpa, rows) = super::around_first_failure(r);
            if !rows.is_empty() {
                let _ = writeln!(
                    out,
                    "<p>trace{}{}:</p>",
                    hpa.map_or(String::new(), |name| format!(" of HPA {}", escape(name))),
                    first.map_or(String::new(), |t| format!(" around t={t}"))
                );
                let _ = write!(out, "<div class=\"scroll\">");
                explain_table(&rows, first, case, out);
                let _ = writeln!(out, "</div>");
            }
        }
        Outcome::Passed => {}
    }
    match Timeline::build(case, r).and_then(|t| t.svg()) {
        Ok(svg) => {
            let _ = writeln!(
                out,
                "<figure class=\"timeline\" data-case=\"{}\">{svg}</figure>",
                escape(&r.name)
            );
        }
        Err(e) if matches!(r.outcome, Outcome::Skipped(_)) => {
            let _ = e;
        }
        Err(e) => {
            let _ = writeln!(
                out,
                "<p class=\"no-timeline\">no timeline: {}</p>",
                escape(&e.to_string())
            );
        }
    }
    if let Some(t) = super::truncation(r) {
        let _ = writeln!(out, "<p class=\"truncated\">truncated: {}</p>", escape(&t));
    }
    if let Some(p) = &r.posed {
        let _ = writeln!(out, "<p class=\"posed\">posed: {}</p>", escape(p));
    }
    if let Some(d) = &r.diagnostics {
        let _ = writeln!(
            out,
            "<p>stderr of the implementation (last lines):</p><pre>{}</pre>",
            escape(d)
        );
    }
    let _ = writeln!(out, "</div></details></section>");
}

/// The story rows ([`super::explain`]) of the trace around the first failing tick.
fn explain_table(rows: &[&TickTrace], first: Option<i64>, case: Option<&Case>, out: &mut String) {
    let trace: Vec<TickTrace> = rows.iter().map(|t| (*t).clone()).collect();
    let story = super::explain::rows(&trace, case.and_then(super::explain::tolerances));
    let _ = writeln!(
        out,
        "<table class=\"explain\"><tr><th>t</th><th>replicas</th><th>why</th><th>pods</th>\
         <th>desired</th><th>metrics</th><th>conditions (changed)</th><th>events</th></tr>"
    );
    for r in &story {
        let t = if r.ticks > 1 {
            format!("{}…{}", r.from, r.to)
        } else {
            r.from.to_string()
        };
        let failing = first.is_some_and(|f| r.from <= f && f <= r.to);
        let _ = writeln!(
            out,
            "<tr{}><td>{t}</td><td>{} → {}</td><td class=\"why\">{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td></tr>",
            if failing {
                " class=\"first-failure\""
            } else {
                ""
            },
            r.replicas_before,
            r.replicas,
            escape(&r.why),
            escape(&r.pods),
            r.desired,
            escape(&r.metrics.join("; ")),
            escape(&r.conditions.join("\n")),
            escape(&r.events.join("\n")),
        );
    }
    let _ = writeln!(out, "</table>");
}

#[cfg(test)]
mod tests {
    use super::{escape, folder};

    #[test]
    fn text_is_escaped_for_html() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(
            escape("a\u{0}b\u{1b}[2J\u{9b}\u{fffe}\u{ffff}\r\tc\nd"),
            "a\\u{0}b\\u{1b}[2J\\u{9b}\\u{fffe}\\u{ffff}\\u{d}\tc\nd"
        );
    }

    #[test]
    fn a_case_file_is_summarized_under_its_folder() {
        assert_eq!(
            folder("cases/behavior/policy-walkdown.yaml"),
            "cases/behavior"
        );
        assert_eq!(folder("x.yaml"), ".");
    }
}
