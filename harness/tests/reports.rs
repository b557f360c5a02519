//! Reports are always valid: the JUnit XML parses (with quick-xml) and holds only characters XML
//! 1.0 allows whatever a case name, title or an implementation's stderr contains.

use std::path::PathBuf;

use hpa_harness::cli;
use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run(args: &[&str]) -> (i32, String) {
    let mut argv = vec!["hpa-conformance".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = cli::main(&argv, &mut out, &mut err);
    (code, String::from_utf8(out).expect("utf-8 stdout"))
}

fn xml_char(c: char) -> bool {
    matches!(c,
        '\u{9}' | '\u{A}' | '\u{D}'
        | '\u{20}'..='\u{D7FF}'
        | '\u{E000}'..='\u{FFFD}'
        | '\u{10000}'..='\u{10FFFF}')
}

fn attributes(e: &BytesStart<'_>, seen: &mut String) {
    for a in e.attributes() {
        let a = a.expect("a well-formed attribute");
        let v = a
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .expect("an attribute value that decodes");
        seen.push_str(&v);
        seen.push('\n');
    }
}

/// Parses a whole document: only characters XML 1.0 allows, balanced tags, attributes and
/// references that decode. Returns the text and attribute values.
fn parse_xml(xml: &str) -> String {
    if let Some(c) = xml.chars().find(|c| !xml_char(*c)) {
        panic!("{c:?} is not allowed in XML 1.0:\n{xml}");
    }
    let mut reader = Reader::from_str(xml);
    reader.config_mut().check_end_names = true;
    let mut seen = String::new();
    let mut depth = 0i32;
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Eof => break,
            Event::Start(e) => {
                depth += 1;
                attributes(&e, &mut seen);
            }
            Event::Empty(e) => attributes(&e, &mut seen),
            Event::End(_) => depth -= 1,
            Event::Text(t) => seen.push_str(&t.decode().expect("text")),
            Event::GeneralRef(r) => {
                let c = if r.is_char_ref() {
                    r.resolve_char_ref().expect("a character reference")
                } else {
                    let name = r.decode().expect("a reference");
                    match name.as_ref() {
                        "lt" => Some('<'),
                        "gt" => Some('>'),
                        "amp" => Some('&'),
                        "apos" => Some('\''),
                        "quot" => Some('"'),
                        other => panic!("&{other}; is not a predefined entity"),
                    }
                };
                assert!(c.is_some_and(xml_char), "{c:?}");
                seen.extend(c);
            }
            _ => {}
        }
    }
    assert_eq!(depth, 0, "every element closed");
    seen
}

#[test]
fn junit_stays_well_formed_for_any_case_name_and_title() {
    let text = std::fs::read_to_string(root().join("cases/algorithm/docs-cpu-doubling.yaml"))
        .expect("case");
    let weird = text
        .replacen(
            "name: docs-cpu-doubling",
            "name: \"weird\\x01\\e[31m\\uFFFE\\uFFFF<&>'\\\"]]>\"",
            1,
        )
        .replacen("finalReplicas: 6", "finalReplicas: 7", 1)
        .replacen(
            "title: \"Current",
            "title: \"\\x00\\x0b\\uFFFF title <!-- --> Current",
            1,
        );
    let dir = std::env::temp_dir().join(format!("hpa-junit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("weird.yaml");
    std::fs::write(&file, weird).expect("write");
    let (code, out) = run(&["run", &file.display().to_string(), "--format", "junit"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 1, "the case fails: {out}");
    let seen = parse_xml(&out);
    assert!(
        seen.contains("weird\\u{1}\\u{1b}[31m\\u{fffe}\\u{ffff}<&>'\"]]>"),
        "the name, with what XML forbids escaped:\n{seen}"
    );
    assert!(
        seen.contains("\\u{0}\\u{b}\\u{ffff} title <!-- --> Current"),
        "{seen}"
    );
}

#[test]
fn junit_stays_well_formed_for_any_stderr() {
    let exec = format!(
        "exec:{} --stderr-noise --crash-at 15",
        env!("CARGO_BIN_EXE_hpa-step-reference")
    );
    let case = root().join("cases/algorithm/docs-cpu-doubling.yaml");
    let (code, out) = run(&[
        "run",
        &case.display().to_string(),
        "--target",
        &exec,
        "--format",
        "junit",
    ]);
    assert_eq!(code, 1, "{out}");
    let seen = parse_xml(&out);
    assert!(
        seen.contains("noise: \\u{0}\\u{1}\\u{1b}[31m\\u{b}\\u{c}\\u{fffe}\\u{ffff} <&> ]]> end"),
        "{seen}"
    );
}

#[test]
fn the_human_report_shows_a_failing_case_with_its_title_and_the_stderr_tail() {
    let exec = format!(
        "exec:{} --exit-after-stop 4",
        env!("CARGO_BIN_EXE_hpa-step-reference")
    );
    let case = root().join("cases/algorithm/docs-cpu-doubling.yaml");
    let (code, out) = run(&["run", &case.display().to_string(), "--target", &exec]);
    assert_eq!(code, 1, "{out}");
    for line in [
        "FAIL  docs-cpu-doubling",
        "    Current 200m against a desired 100m (ratio 2.0) doubles the replicas: 3 → 6",
        "    whole run: after stop: expected exit with status 0, got exit status: 4",
        "    stderr of the implementation (last lines):",
        "      hpa-step-reference: exiting with 4 after stop as asked",
    ] {
        assert!(out.contains(line), "{line:?} missing in:\n{out}");
    }
}

#[test]
fn stdout_on_a_full_device_is_an_error_exit() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("no /dev/full here: nothing to check");
        return;
    };
    let case = root().join("cases/algorithm/docs-cpu-doubling.yaml");
    for format in ["human", "json", "junit"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hpa-conformance"))
            .args(["run", &case.display().to_string(), "--format", format])
            .stdout(full.try_clone().expect("/dev/full"))
            .output()
            .expect("run hpa-conformance");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{format}: {err}");
        assert!(
            err.contains("error: cannot write the output: No space left on device"),
            "{err}"
        );
    }
}
