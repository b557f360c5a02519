//! Progress of a long run on stderr — cluster runs, `kind-test`, fuzzing, the corpus on an `exec:`
//! or `reference-api` target. On a terminal an indicatif bar (done of total, passed, failed,
//! running, elapsed) with a line kept for each failure; otherwise (CI logs, pipes) plain lines:
//! one per finished item ([`Lines::PerItem`], cluster runs, whose cases take minutes) or a status
//! line at most every ten seconds with a line for each failure ([`Lines::Periodic`], runs of
//! many short items).

use std::collections::BTreeSet;
use std::io::Write;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How progress is written off a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// A line per finished item.
    PerItem,
    /// A status line at most every period, and a line per failure.
    Periodic(Duration),
}

enum Sink {
    Bar(ProgressBar),
    Lines(Box<dyn Write + Send>, Lines),
}

/// A run's progress and where it is shown.
pub struct Progress {
    label: String,
    sink: Sink,
    total: usize,
    done: usize,
    passed: usize,
    failed: usize,
    running: BTreeSet<String>,
    started: Instant,
    last_line: Instant,
}

/// Whether a finish word is a failure (`FAILED`, `ERROR`, `DIFFERENT`, …: upper case).
fn is_failure(word: &str) -> bool {
    word.chars().any(|c| c.is_ascii_uppercase()) && word == word.to_ascii_uppercase()
}

impl Progress {
    /// Progress of a cluster run's `total` cases on stderr.
    pub fn stderr(total: usize) -> Progress {
        Progress::on_stderr("cluster", total, Lines::PerItem)
    }

    /// Progress of `total` items labelled `label` on stderr: a bar on a terminal, `lines`
    /// otherwise (also when `CI` is set).
    pub fn on_stderr(label: &str, total: usize, lines: Lines) -> Progress {
        use std::io::IsTerminal;
        let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
        if std::io::stderr().is_terminal() && !ci {
            Progress::with_bar(label, total, ProgressDrawTarget::stderr())
        } else {
            Progress::new(label, Box::new(std::io::stderr()), total, lines)
        }
    }

    /// Plain lines written to `out`.
    pub fn new(label: &str, out: Box<dyn Write + Send>, total: usize, lines: Lines) -> Progress {
        Progress::make(label, Sink::Lines(out, lines), total)
    }

    /// An indicatif bar drawn to `target`.
    pub fn with_bar(label: &str, total: usize, target: ProgressDrawTarget) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total as u64), target);
        if let Ok(style) = ProgressStyle::with_template(
            "{prefix}: [{bar:30}] {pos}/{len} {msg} · {elapsed_precise}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(label.to_string());
        bar.enable_steady_tick(Duration::from_millis(500));
        Progress::make(label, Sink::Bar(bar), total)
    }

    fn make(label: &str, sink: Sink, total: usize) -> Progress {
        let now = Instant::now();
        let mut p = Progress {
            label: label.to_string(),
            sink,
            total,
            done: 0,
            passed: 0,
            failed: 0,
            running: BTreeSet::new(),
            started: now,
            last_line: now,
        };
        p.draw();
        p
    }

    /// An item started.
    pub fn start(&mut self, name: &str) {
        self.running.insert(name.to_string());
        self.draw();
    }

    /// An item ended: `word` is how (`passed`, `skipped`, or in capitals a failure: `FAILED`,
    /// `ERROR`, `DIFFERENT`).
    pub fn finish(&mut self, name: &str, word: &str, seconds: f64) {
        self.running.remove(name);
        self.done += 1;
        if word == "passed" {
            self.passed += 1;
        } else if is_failure(word) {
            self.failed += 1;
        }
        let line = format!(
            "{}: [{}/{}] {word} {name} ({seconds:.0} s)",
            self.label, self.done, self.total
        );
        match &mut self.sink {
            Sink::Bar(bar) => {
                // Keep a line only for what needs reading later.
                if word != "passed" {
                    bar.println(line);
                }
                bar.set_position(self.done as u64);
            }
            Sink::Lines(out, Lines::PerItem) => {
                let _ = writeln!(out, "{line}");
            }
            Sink::Lines(out, Lines::Periodic(_)) => {
                if is_failure(word) {
                    let _ = writeln!(out, "{line}");
                }
            }
        }
        self.draw();
    }

    /// A line that must be read later (e.g. the controller being reconfigured), whatever the sink.
    pub fn note(&mut self, line: &str) {
        let line = format!("{}: {line}", self.label);
        match &mut self.sink {
            Sink::Bar(bar) => bar.println(line),
            Sink::Lines(out, _) => {
                let _ = writeln!(out, "{line}");
            }
        }
    }

    fn status(&self) -> String {
        let first = self.running.iter().next().cloned().unwrap_or_default();
        format!(
            "({} passed, {} failed), {} running{}{}",
            self.passed,
            self.failed,
            self.running.len(),
            if first.is_empty() { "" } else { ": " },
            first
        )
    }

    /// The bar's message, or a periodic line when it is due.
    fn draw(&mut self) {
        let status = self.status();
        match &mut self.sink {
            Sink::Bar(bar) => bar.set_message(status),
            Sink::Lines(out, Lines::Periodic(every)) => {
                if self.last_line.elapsed() >= *every {
                    self.last_line = Instant::now();
                    let _ = writeln!(
                        out,
                        "{}",
                        line(&self.label, self.done, self.total, &status, self.started)
                    );
                }
            }
            Sink::Lines(_, Lines::PerItem) => {}
        }
    }

    /// Ends the bar (or, for periodic lines of a run that printed any, a last status line).
    pub fn close(&mut self) {
        let status = self.status();
        match &mut self.sink {
            Sink::Bar(bar) => bar.finish_with_message(status),
            Sink::Lines(out, Lines::Periodic(_)) if self.last_line != self.started => {
                let _ = writeln!(
                    out,
                    "{}",
                    line(&self.label, self.done, self.total, &status, self.started)
                );
            }
            Sink::Lines(..) => {}
        }
    }

    /// Done, passed and failed so far.
    pub fn counts(&self) -> (usize, usize, usize) {
        (self.done, self.passed, self.failed)
    }
}

/// A periodic status line: `<label>: <done>/<total> done <status> · <m>m<ss>s`.
fn line(label: &str, done: usize, total: usize, status: &str, started: Instant) -> String {
    let secs = started.elapsed().as_secs();
    format!(
        "{label}: {done}/{total} done {status} · {}m{:02}s",
        secs / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);

    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Buf {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    fn exercise(p: &mut Progress) {
        p.start("a");
        p.start("b");
        p.finish("a", "passed", 12.0);
        p.start("c");
        p.finish("b", "FAILED", 30.0);
        p.finish("c", "skipped", 0.0);
        p.close();
    }

    #[test]
    fn a_line_per_item_off_a_terminal() {
        let buf = Buf::default();
        let mut p = Progress::new("cluster", Box::new(buf.clone()), 3, Lines::PerItem);
        exercise(&mut p);
        assert_eq!(
            buf.text(),
            "cluster: [1/3] passed a (12 s)\ncluster: [2/3] FAILED b (30 s)\ncluster: [3/3] skipped c (0 s)\n"
        );
    }

    #[test]
    fn periodic_lines_keep_failures_and_say_where_the_run_is() {
        let buf = Buf::default();
        let mut p = Progress::new(
            "fuzz",
            Box::new(buf.clone()),
            3,
            Lines::Periodic(Duration::ZERO),
        );
        exercise(&mut p);
        let text = buf.text();
        assert!(text.contains("fuzz: [2/3] FAILED b (30 s)\n"), "{text}");
        assert!(!text.contains("passed a"), "{text}");
        assert!(
            text.contains("fuzz: 1/3 done (1 passed, 0 failed), 1 running: b"),
            "{text}"
        );
        assert!(
            text.lines()
                .last()
                .unwrap()
                .starts_with("fuzz: 3/3 done (1 passed, 1 failed), 0 running"),
            "{text}"
        );
        // A run shorter than the period prints nothing but its failures.
        let buf = Buf::default();
        let mut p = Progress::new(
            "run",
            Box::new(buf.clone()),
            3,
            Lines::Periodic(Duration::from_secs(3600)),
        );
        exercise(&mut p);
        assert_eq!(buf.text(), "run: [2/3] FAILED b (30 s)\n");
    }

    #[test]
    fn the_bar_counts_what_finished() {
        let mut p = Progress::with_bar("fuzz", 3, ProgressDrawTarget::hidden());
        exercise(&mut p);
        assert_eq!(p.counts(), (3, 1, 1));
        let Sink::Bar(bar) = &p.sink else {
            panic!("a bar")
        };
        assert_eq!(bar.position(), 3);
        assert_eq!(bar.length(), Some(3));
        assert!(bar.is_finished());
        assert_eq!(bar.message(), "(1 passed, 1 failed), 0 running");
    }
}
