//! Hostile implementations (small scripts in `tests/fixtures/exec/`) against the harness's
//! promises: what it keeps of their answers is bounded whatever they send, so a run that floods
//! it still ends with every result reported under a 1 GiB address-space cap; and nothing they
//! (or a case) say reaches a terminal, a page or the conformance statement as anything but text.

use std::path::{Path, PathBuf};
use std::process::Command;

use hpa_harness::case::corpus::load_all;
use hpa_harness::kept::{MAX_ITEMS_PER_TICK, MAX_TEXT_BYTES};
use hpa_harness::run::{Outcome, RunOptions, run_case};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fresh folder under the system's temporary one, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("hpa-hostile-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn flood(args: &str) -> String {
    format!(
        "exec:python3 {} {args}",
        root().join("tests/fixtures/exec/flood.py").display()
    )
}

#[test]
fn a_run_flooded_with_events_ends_under_a_1_gib_cap_with_every_result_reported() {
    // About 12 MiB of events, a 1 MiB condition message and 1 MiB of stderr at every tick, in
    // each of the 6 cases (141 ticks): a harness keeping it all needs gigabytes.
    let dir = TempDir::new("flood");
    let output = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_hpa-conformance"))
        .args([
            "run",
            "cases/behavior",
            "--target",
            &flood(""),
            "--format",
            "json",
        ])
        .arg("--report")
        .arg(&dir.0)
        .current_dir(root())
        .output()
        .expect("the run starts");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("the JSON report is complete");
    let cases = report["cases"].as_array().expect("cases");
    let (files, bad) = load_all(&[root().join("cases/behavior")]);
    assert!(bad.is_empty());
    assert_eq!(cases.len(), files.len(), "every result is reported");
    assert_eq!(report["summary"]["failed"], files.len());
    let mut over_budget = 0;
    for (c, case) in cases.iter().zip(&files) {
        let name = c["name"].as_str().unwrap_or_default();
        // The comparison still fails the flood: it never scales, and sends events no case expects.
        assert!(
            !c["failures"].as_array().expect("failures").is_empty(),
            "{name}"
        );
        let trace = c["trace"].as_array().expect("trace");
        let ticks = case.duration / case.sync_period + 1;
        assert_eq!(
            trace.len(),
            ticks as usize,
            "{name}: every tick is in the trace"
        );
        for tick in trace {
            let kept = tick["events"].as_array().expect("events");
            assert!(kept.len() <= MAX_ITEMS_PER_TICK, "{name}");
            let cut = &tick["truncated"];
            if cut["over_budget"] == true {
                over_budget += 1;
                assert!(kept.is_empty(), "{name}");
            } else {
                assert_eq!(cut["dropped_events"], 3000 - MAX_ITEMS_PER_TICK, "{name}");
                assert_eq!(kept.len(), MAX_ITEMS_PER_TICK, "{name}");
            }
        }
        let diagnostics = c["diagnostics"].as_str().unwrap_or_default();
        assert!(diagnostics.len() <= 64 * 1024, "{name}");
    }
    assert!(over_budget > 0, "the long cases spend their budget");
    for (file, at_most) in [
        ("report.json", 16 << 20),
        ("junit.xml", 4 << 20),
        ("index.html", 16 << 20),
    ] {
        let size = std::fs::metadata(dir.0.join(file)).expect(file).len();
        assert!(size > 0 && size < at_most, "{file}: {size} bytes");
    }
}

#[test]
fn a_tick_keeps_its_first_events_and_cut_texts_and_says_what_it_left_out() {
    // 200 events of 6 KiB and a 10 KiB condition message at each tick; no stderr.
    let (cases, _) = load_all(&[root().join("cases/behavior/policy-walkdown.yaml")]);
    let target = hpa_harness::targets::make_target(
        &flood("200 6144 10240 0"),
        std::time::Duration::from_secs(30),
    )
    .expect("target");
    let r = run_case(&cases[0], target.as_ref(), &RunOptions::default());
    let first = &r.trace[0];
    assert_eq!(first.events.len(), MAX_ITEMS_PER_TICK);
    assert!(
        first
            .events
            .iter()
            .all(|e| e.len() <= MAX_TEXT_BYTES + 3 && e.ends_with('…'))
    );
    assert!(first.detail.conditions[0].message.len() <= MAX_TEXT_BYTES + 3);
    let cut = first.truncated.as_ref().expect("marked");
    assert_eq!(cut.dropped_events, 200 - MAX_ITEMS_PER_TICK);
    assert_eq!(cut.clipped_texts, MAX_ITEMS_PER_TICK + 1);
    assert!(!cut.over_budget);
    // 1 MiB and 4 KiB a tick, about 265 KiB a tick kept: the budget runs out after a few ticks.
    let spent = r
        .trace
        .iter()
        .position(|t| t.truncated.as_ref().is_some_and(|c| c.over_budget))
        .expect("the budget is spent");
    assert!((3..8).contains(&spent), "{spent}");
    assert!(r.trace[spent..].iter().all(|t| t.events.is_empty()));
    // The events check fails on what was sent (not on what was kept) and lists a bounded part.
    let Outcome::Failed(failures) = &r.outcome else {
        panic!("{:?}", r.outcome)
    };
    let events = failures
        .iter()
        .find(|f| f.check == "events")
        .expect("an events failure");
    assert!(
        events.actual.len() <= 16 * 1024 + 3,
        "{}",
        events.actual.len()
    );
    // The human report says so.
    let report = hpa_harness::report::RunReport {
        target: "flood".into(),
        results: vec![r],
        bad_input: Vec::new(),
        profile: hpa_harness::profile::Profile::Full,
        notes: Default::default(),
        corpus: Default::default(),
    };
    let human = hpa_harness::report::human::render(&report);
    assert!(
        human.contains(&format!(
            "    truncated: the harness kept part of the target's answers at 81 ticks (from t=0: {} more events than the {MAX_ITEMS_PER_TICK} kept; {} texts cut to 4 KiB)",
            200 - MAX_ITEMS_PER_TICK,
            MAX_ITEMS_PER_TICK + 1
        )),
        "{human}"
    );
}

/// What must never reach a terminal, a CI log or a page as itself.
const ACTING: [char; 9] = [
    '\u{1b}', '\u{7}', '\u{0}', '\r', '\u{9b}', '\u{fffe}', '\u{ffff}', '\u{202e}', '\u{8}',
];

fn acting(text: &str) -> Vec<char> {
    ACTING.into_iter().filter(|c| text.contains(*c)).collect()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn what_a_case_or_an_implementation_says_reaches_reports_as_text() {
    let dir = TempDir::new("escapes");
    let claim = dir.0.join("claim.json");
    let args: Vec<String> = [
        "hpa-conformance",
        "run",
        &root()
            .join("tests/fixtures/exec/escapes")
            .display()
            .to_string(),
        "--target",
        &format!(
            "exec:python3 {}",
            root().join("tests/fixtures/exec/escapes.py").display()
        ),
        "--report",
        &dir.0.display().to_string(),
        "--claim",
        &claim.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = hpa_harness::cli::main(&args, &mut out, &mut err);
    let human = String::from_utf8(out).expect("utf-8");
    assert_eq!(code, 1, "{human}{}", String::from_utf8_lossy(&err));
    // The human report: the escape sequences are shown, none acts; no forged line.
    assert!(acting(&human).is_empty(), "{:?}: {human:?}", acting(&human));
    assert!(
        human.starts_with("FAIL  escaping-name\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{9b}31m  ("),
        "{human}"
    );
    assert!(
        human.contains("event: Normal Evil\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\u{0}\\u{d}\\u{9b}31m\\u{fffe}\\u{ffff}\\u{202e}\\u{a}PASS  forged-line"),
        "{human}"
    );
    assert!(
        !human.lines().any(|l| l.starts_with("PASS")),
        "a newline in a name, a title or an event starts no line: {human}"
    );
    // The page, the JUnit XML, the JSON report and the statement.
    for file in [
        "index.html",
        "junit.xml",
        "report.json",
        "claim.json",
        "claim.md",
    ] {
        let text = read(&dir.0.join(file));
        assert!(acting(&text).is_empty(), "{file}: {:?}", acting(&text));
    }
    let html = read(&dir.0.join("index.html"));
    assert!(
        html.contains("e\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\u{0}\\u{d}\\u{9b}31m"),
        "{html}"
    );
    // The JSON still says exactly what was sent.
    let json: serde_json::Value =
        serde_json::from_str(&read(&dir.0.join("report.json"))).expect("json");
    assert_eq!(
        json["cases"][0]["name"],
        "escaping-name\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m"
    );
    // The statement's heading is one line of text: the name can open no markup.
    let md = read(&dir.0.join("claim.md"));
    let heading = md.lines().next().unwrap_or_default();
    assert!(
        heading.starts_with("## HPA conformance: evil\\\\u{1b}\\[2J"),
        "{heading}"
    );
    assert!(
        heading.contains("\\<b\\>\\*x\\*\\</b\\> \\[l\\](u)"),
        "{heading}"
    );
    assert_eq!(md.lines().filter(|l| l.starts_with('#')).count(), 1, "{md}");
}
