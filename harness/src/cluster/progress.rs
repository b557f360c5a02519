//! Progress of a cluster run on stderr: on a terminal one status line redrawn in place (done,
//! passed, failed, running, elapsed) with a line kept for each failure; otherwise (CI logs, pipes)
//! one plain line per finished case.

use std::collections::BTreeSet;
use std::io::Write;
use std::time::Instant;

/// The run's progress and where it is shown.
pub struct Progress {
    out: Box<dyn Write + Send>,
    tty: bool,
    total: usize,
    done: usize,
    passed: usize,
    failed: usize,
    running: BTreeSet<String>,
    started: Instant,
}

impl Progress {
    /// Progress of `total` cases on stderr (redrawn when stderr is a terminal).
    pub fn stderr(total: usize) -> Progress {
        use std::io::IsTerminal;
        let tty = std::io::stderr().is_terminal();
        Progress::new(Box::new(std::io::stderr()), tty, total)
    }

    /// Progress written to `out`; `tty` redraws a status line.
    pub fn new(out: Box<dyn Write + Send>, tty: bool, total: usize) -> Progress {
        Progress {
            out,
            tty,
            total,
            done: 0,
            passed: 0,
            failed: 0,
            running: BTreeSet::new(),
            started: Instant::now(),
        }
    }

    /// A case started.
    pub fn start(&mut self, name: &str) {
        self.running.insert(name.to_string());
        self.draw();
    }

    /// A case ended: `word` is how (`passed`, `FAILED`, `ERROR`, `skipped`).
    pub fn finish(&mut self, name: &str, word: &str, seconds: f64) {
        self.running.remove(name);
        self.done += 1;
        match word {
            "passed" => self.passed += 1,
            "FAILED" | "ERROR" => self.failed += 1,
            _ => {}
        }
        let line = format!(
            "cluster: [{}/{}] {word} {name} ({seconds:.0} s)",
            self.done, self.total
        );
        if self.tty {
            // Clear the status line; keep a line only for what needs reading later.
            let _ = write!(self.out, "\r\x1b[2K");
            if word != "passed" {
                let _ = writeln!(self.out, "{line}");
            }
            self.draw();
        } else {
            let _ = writeln!(self.out, "{line}");
        }
    }

    /// The status line (terminal only).
    fn draw(&mut self) {
        if !self.tty {
            return;
        }
        let secs = self.started.elapsed().as_secs();
        let first = self.running.iter().next().cloned().unwrap_or_default();
        let _ = write!(
            self.out,
            "\r\x1b[2Kcluster: {}/{} done ({} passed, {} failed), {} running{}{} · {}m{:02}s",
            self.done,
            self.total,
            self.passed,
            self.failed,
            self.running.len(),
            if first.is_empty() { "" } else { ": " },
            first,
            secs / 60,
            secs % 60
        );
        let _ = self.out.flush();
    }

    /// Ends the status line (terminal only).
    pub fn close(&mut self) {
        if self.tty {
            let _ = writeln!(self.out);
        }
    }
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

    fn run(tty: bool) -> String {
        let buf = Buf::default();
        let mut p = Progress::new(Box::new(buf.clone()), tty, 3);
        p.start("a");
        p.start("b");
        p.finish("a", "passed", 12.0);
        p.start("c");
        p.finish("b", "FAILED", 30.0);
        p.finish("c", "skipped", 0.0);
        p.close();
        buf.text()
    }

    #[test]
    fn plain_lines_off_a_terminal() {
        assert_eq!(
            run(false),
            "cluster: [1/3] passed a (12 s)\ncluster: [2/3] FAILED b (30 s)\ncluster: [3/3] skipped c (0 s)\n"
        );
    }

    #[test]
    fn a_redrawn_status_line_on_a_terminal_keeps_failures() {
        let text = run(true);
        assert!(
            text.contains("cluster: 0/3 done (0 passed, 0 failed), 2 running: a"),
            "{text:?}"
        );
        assert!(
            text.contains("cluster: 1/3 done (1 passed, 0 failed), 1 running: b"),
            "{text:?}"
        );
        assert!(
            text.contains("cluster: [2/3] FAILED b (30 s)\n"),
            "{text:?}"
        );
        assert!(
            !text.contains("[1/3] passed a"),
            "passes are not kept: {text:?}"
        );
        assert!(
            text.contains("cluster: 3/3 done (1 passed, 1 failed), 0 running"),
            "{text:?}"
        );
        assert!(text.ends_with('\n'));
    }
}
