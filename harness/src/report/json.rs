//! The JSON report: one document with a `cases` list; each case has `name`, `passed`, `skipped`,
//! `skip_reason`, `failures` and `trace` (ticks with `t` and `replicas` after the tick, and
//! `truncated` when the tick left out part of the target's answer, [`crate::kept`]). The shape
//! is stable: tools and CI read it. [`write`] streams it: the document is never held whole.
//!
//! Every JSON document the harness writes for people to open ([`to_writer`]: this report, the
//! conformance statement, `explain --format json`) escapes what is not
//! [`crate::util::text::printable`] as `\uXXXX` — JSON escapes only C0 controls — so the text is the
//! same once parsed and `cat` cannot hand a C1 control or a bidirectional override to a terminal.

use std::io::Write;

use serde::{Deserialize, Serialize};
use serde_json::ser::{Formatter, PrettyFormatter};

use super::RunReport;
use crate::run::trace::TickTrace;
use crate::run::{Failure, Outcome};

#[derive(Serialize)]
struct JsonCase<'a> {
    name: &'a str,
    title: &'a str,
    file: &'a str,
    passed: bool,
    skipped: bool,
    skip_reason: Option<&'a str>,
    error: Option<&'a str>,
    failures: &'a [Failure],
    trajectory: Vec<i32>,
    trace: &'a [TickTrace],
    /// The traces of the HPAs reconciled beside the case's own (`alongside`), when it has any.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    alongside: &'a [crate::run::AlongsideTrace],
    diagnostics: Option<&'a str>,
    /// How the case was posed when not as its file says (`CaseResult::posed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    posed: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonBadInput {
    file: String,
    line: u64,
    column: u64,
    reason: String,
}

#[derive(Serialize)]
struct JsonLevel {
    level: crate::profile::Profile,
    passed: usize,
    ran: usize,
}

#[derive(Serialize)]
struct JsonSummary {
    passed: usize,
    failed: usize,
    skipped: usize,
    bad_input: usize,
    profile: crate::profile::Profile,
    levels: Vec<JsonLevel>,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    target: &'a str,
    corpus: &'a super::corpus::CorpusId,
    summary: JsonSummary,
    cases: Vec<JsonCase<'a>>,
    bad_input: Vec<JsonBadInput>,
}

/// One case of a report as a tool reads it back ([`read`]; the fault matrix compares two runs).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ReadCase {
    pub name: String,
    pub passed: bool,
    pub skipped: bool,
    pub error: Option<String>,
    pub trace: Vec<ReadTick>,
}

/// One tick of a [`ReadCase`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ReadTick {
    pub t: i64,
    pub replicas_before: i32,
    pub replicas: i32,
    pub events: Vec<String>,
}

/// The cases of a report [`write`] wrote.
pub fn read(text: &str) -> Result<Vec<ReadCase>, serde_json::Error> {
    #[derive(Deserialize)]
    struct Doc {
        cases: Vec<ReadCase>,
    }
    serde_json::from_str::<Doc>(text).map(|d| d.cases)
}

/// Renders the report (the tests' and small reports' way; a run streams it with [`write`]).
pub fn render(report: &RunReport) -> String {
    let mut out = Vec::new();
    if let Err(e) = write(report, &mut out) {
        return format!("{{\"error\": {:?}}}\n", e.to_string());
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Writes the report to `out` as it is serialized, through a buffer, then flushes.
pub fn write(report: &RunReport, out: &mut dyn Write) -> std::io::Result<()> {
    let (passed, failed, skipped) = report.counts();
    let doc = JsonReport {
        target: &report.target,
        corpus: &report.corpus,
        summary: JsonSummary {
            passed,
            failed,
            skipped,
            bad_input: report.bad_input.len(),
            profile: report.profile,
            levels: crate::report::levels::level_counts(&report.results, report.profile)
                .into_iter()
                .map(|(level, passed, ran)| JsonLevel { level, passed, ran })
                .collect(),
        },
        cases: report
            .results
            .iter()
            .map(|r| JsonCase {
                name: &r.name,
                title: &r.title,
                file: &r.file,
                passed: r.passed(),
                skipped: matches!(r.outcome, Outcome::Skipped(_)),
                skip_reason: match &r.outcome {
                    Outcome::Skipped(why) => Some(why),
                    _ => None,
                },
                error: match &r.outcome {
                    Outcome::Errored(why) => Some(why),
                    _ => None,
                },
                failures: match &r.outcome {
                    Outcome::Failed(f) => f,
                    _ => &[],
                },
                trajectory: crate::run::trajectory(&r.trace),
                trace: &r.trace,
                alongside: &r.alongside,
                diagnostics: r.diagnostics.as_deref(),
                posed: r.posed.as_deref(),
            })
            .collect(),
        bad_input: report
            .bad_input
            .iter()
            .map(|e| JsonBadInput {
                file: e.path.display().to_string(),
                line: e.pos.line,
                column: e.pos.column,
                reason: e.reason.clone(),
            })
            .collect(),
    };
    let mut out = std::io::BufWriter::new(out);
    to_writer(&mut out, &doc)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Writes `value` as pretty JSON with every character that is not [`crate::util::text::printable`]
/// escaped (see the module doc).
pub fn to_writer(out: &mut impl Write, value: &impl Serialize) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(out, Printable(PrettyFormatter::new()));
    value.serialize(&mut ser)
}

/// [`to_writer`] into a string, followed by a newline.
pub fn to_string(value: &impl Serialize) -> String {
    let mut out = Vec::new();
    match to_writer(&mut out, value) {
        Ok(()) => {
            out.push(b'\n');
            String::from_utf8(out).unwrap_or_default()
        }
        Err(e) => format!("{{\"error\": {:?}}}\n", e.to_string()),
    }
}

/// serde_json's pretty formatter, escaping in strings what is not printable.
struct Printable<'a>(PrettyFormatter<'a>);

impl Formatter for Printable<'_> {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut rest = fragment;
        while let Some((at, c)) = rest
            .char_indices()
            .find(|&(_, c)| !crate::util::text::printable(c))
        {
            w.write_all(&rest.as_bytes()[..at])?;
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                write!(w, "\\u{u:04x}")?;
            }
            rest = &rest[at + c.len_utf8()..];
        }
        w.write_all(rest.as_bytes())
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }

    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    /// What [`super::read`] gives back is what the report said: a case's outcome, replicas and
    /// events tick by tick.
    #[test]
    fn a_written_report_reads_back() {
        use crate::run::{RunOptions, run_case};
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../cases/lifecycle/controller-failover-scales-again.yaml");
        let case = crate::case::load_case(&path).expect("a corpus case");
        let result = run_case(&case, &crate::targets::CoreTarget, &RunOptions::default());
        let report = crate::report::RunReport {
            target: "core".into(),
            results: vec![result.clone()],
            bad_input: Vec::new(),
            profile: crate::profile::Profile::Full,
            notes: Default::default(),
            corpus: Default::default(),
        };
        let cases = super::read(&super::render(&report)).expect("it reads");
        assert_eq!(cases.len(), 1);
        let c = &cases[0];
        assert_eq!(c.name, "controller-failover-scales-again");
        assert!(c.passed && !c.skipped && c.error.is_none());
        assert_eq!(c.trace.len(), result.trace.len());
        let at150 = c.trace.iter().find(|t| t.t == 150).expect("t=150");
        assert_eq!((at150.replicas_before, at150.replicas), (4, 8));
        assert!(
            at150.events[0].contains("SuccessfulRescale"),
            "{:?}",
            at150.events
        );
        assert!(super::read("{\"cases\": 1}").is_err());
    }

    #[test]
    fn json_escapes_what_is_not_printable_and_parses_back_to_the_same_text() {
        let text = "a\u{1b}[2J\u{9b}b\u{202e}c\u{fffe}\u{7f}é✓\n";
        let json = super::to_string(&serde_json::json!({ "s": text }));
        assert_eq!(
            json,
            "{\n  \"s\": \"a\\u001b[2J\\u009bb\\u202ec\\ufffe\\u007fé✓\\n\"\n}\n"
        );
        let back: serde_json::Value = serde_json::from_str(&json).expect("json");
        assert_eq!(back["s"], text);
    }
}
