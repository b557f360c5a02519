//! The HTML report in a real browser: `run --report DIR` writes `report.json`, `junit.xml` and
//! `index.html`; headless Debian `chromium` (installed by `tests/browser/install.sh`, which
//! `just browser` and `.ci/run` call) loads the page from `file://` with every host unresolvable,
//! and the DOM it rendered must show every case of `report.json` with its status, a laid-out
//! timeline for the walk-down and the failing case, and the summary; a screenshot is written.
//!
//! Without chromium the test says so loudly and does nothing — except in CI (`CI=true`), where a
//! missing browser fails it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hpa_conformance_tests::{root, run};

/// `$CHROMIUM`, else `chromium` on `PATH`.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
}

/// Runs headless chromium on `url` with `args`; its stdout. Fails after two minutes.
fn headless(browser: &Path, profile: &Path, args: &[&str], url: &str) -> String {
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            // Offline: any host name fails to resolve, so a network asset could not load.
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let stderr = child.stderr.take().expect("stderr");
    let err_reader =
        std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 120 s: {args:?} {url}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = reader.join().expect("stdout reader");
    let err = err_reader.join().expect("stderr reader");
    assert!(status.success(), "chromium {args:?}: {status}\n{err}");
    out
}

/// `name="value"` attributes of each start tag that begins with `prefix`.
fn tags<'a>(dom: &'a str, prefix: &str) -> Vec<&'a str> {
    dom.match_indices(prefix)
        .map(|(i, _)| &dom[i..i + dom[i..].find('>').expect("tag end")])
        .collect()
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    Some(&tag[start..start + tag[start..].find('"')?])
}

#[test]
fn the_html_report_renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "chromium is missing in CI: .ci/run installs it with tests/browser/install.sh"
        );
        eprintln!(
            "\n!!! SKIPPED the_html_report_renders_in_headless_chromium: no chromium on PATH \
             (install it with `just browser`); CI runs it\n"
        );
        return;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-browser");
    let _ = std::fs::remove_dir_all(&dir);
    let report = dir.join("report");
    let p = |rel: &str| root().join(rel).display().to_string();
    // A passing walk-down, a failing variant of it, and a case skipped for a gate.
    let (code, _, err) = run(&[
        "run",
        &p("cases/behavior/policy-walkdown.yaml"),
        &p("tests/fixtures/report/walkdown-wrong-expectation.yaml"),
        &p("tests/fixtures/gated/tolerance-needs-gate.yaml"),
        &p("cases/algorithm"),
        "--feature-gates",
        "HPAConfigurableTolerance=false",
        "--report",
        &report.display().to_string(),
    ]);
    assert_eq!(code, 1, "one case fails: {err}");
    for f in ["report.json", "junit.xml", "index.html"] {
        assert!(report.join(f).is_file(), "{f} written");
    }
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("report.json")).unwrap())
            .expect("report.json");
    let want: Vec<(String, &str)> = doc["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            let status = if c["passed"] == true {
                "passed"
            } else if c["skipped"] == true {
                "skipped"
            } else {
                "failed"
            };
            (c["name"].as_str().unwrap().to_string(), status)
        })
        .collect();
    // The three named files and every case under cases/algorithm.
    let algorithm = std::fs::read_dir(root().join("cases/algorithm"))
        .expect("cases/algorithm")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "yaml"))
        })
        .count();
    assert!(algorithm > 0, "cases/algorithm has cases");
    assert_eq!(want.len(), 3 + algorithm, "{want:?}");
    let html = std::fs::read_to_string(report.join("index.html")).unwrap();
    for network in ["src=\"http", "href=\"http", "url(", "@import", "<link"] {
        assert!(!html.contains(network), "a network asset: {network}");
    }

    let url = format!("file://{}", report.join("index.html").display());
    let started = Instant::now();
    let dom = headless(&browser, &dir.join("profile"), &["--dump-dom"], &url);
    let dump_time = started.elapsed();
    assert!(dom.contains("data-probed=\"yes\""), "the page's script ran");

    // Every case of report.json, in order, with its status.
    let sections = tags(&dom, "<section class=\"case");
    let got: Vec<(String, &str)> = sections
        .iter()
        .map(|t| {
            (
                attr(t, "data-case").expect("data-case").to_string(),
                attr(t, "data-status").expect("data-status"),
            )
        })
        .collect();
    assert_eq!(got, want);
    let totals = tags(&dom, "<span id=\"totals\"")[0];
    let (cases, passed) = ((3 + algorithm).to_string(), (1 + algorithm).to_string());
    assert_eq!(attr(totals, "data-cases"), Some(cases.as_str()));
    assert_eq!(attr(totals, "data-passed"), Some(passed.as_str()));
    assert_eq!(attr(totals, "data-failed"), Some("1"));
    assert_eq!(attr(totals, "data-skipped"), Some("1"));
    assert!(dom.contains("skipped: needs feature gate HPAConfigurableTolerance=true"));
    assert!(dom.contains("t=360: replicas: expected <b>63</b>, got <b>64</b>"));
    // The summary by folder.
    let folders: Vec<(&str, String)> = tags(&dom, "<tr data-folder=")
        .iter()
        .map(|t| (attr(t, "data-folder").unwrap(), t.to_string()))
        .collect();
    assert_eq!(
        folders.iter().map(|f| f.0).collect::<Vec<_>>(),
        [
            p("cases/algorithm"),
            p("cases/behavior"),
            p("tests/fixtures/gated"),
            p("tests/fixtures/report")
        ]
    );
    // Timelines the browser laid out: a size and drawn lines (the probe measures the SVG).
    let figures = tags(&dom, "<figure class=\"timeline\"");
    assert_eq!(
        figures.len(),
        2 + algorithm,
        "every case that ran has a timeline"
    );
    for name in ["policy-walkdown", "report-walkdown-wrong-expectation"] {
        let f = figures
            .iter()
            .find(|f| attr(f, "data-case") == Some(name))
            .expect("the case's figure");
        let drawn = attr(f, "data-drawn").expect("the probe measured it");
        let (size, lines) = drawn.split_once(' ').unwrap();
        let (w, h) = size.split_once('x').unwrap();
        let (w, h): (u32, u32) = (w.parse().unwrap(), h.parse().unwrap());
        let lines: u32 = lines.trim_end_matches(" lines").parse().unwrap();
        assert!(w >= 400 && h >= 150, "{name}: drawn {drawn}");
        assert!(lines >= 5, "{name}: drawn {drawn}");
    }

    // A screenshot: a PNG of the window's size with something on it.
    let shot = dir.join("screenshot.png");
    let started = Instant::now();
    headless(
        &browser,
        &dir.join("profile"),
        &[
            "--window-size=1280,1800",
            &format!("--screenshot={}", shot.display()),
        ],
        &url,
    );
    let shot_time = started.elapsed();
    let png = std::fs::read(&shot).expect("the screenshot is written");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    assert_eq!((be(&png[16..20]), be(&png[20..24])), (1280, 1800));
    // A blank page compresses to a few KiB; text, tables and a timeline do not.
    assert!(png.len() > 40_000, "{} bytes", png.len());
    eprintln!(
        "report-browser: DOM in {:.1} s, screenshot in {:.1} s: {}",
        dump_time.as_secs_f64(),
        shot_time.as_secs_f64(),
        shot.display()
    );
}
