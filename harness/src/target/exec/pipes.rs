//! The implementation's pipes, each served by its own thread so that no read or write can block
//! the harness: the harness hands lines to a writer thread and waits for its acknowledgement with a
//! deadline, reads answer lines from a channel with a deadline, and keeps the tail of stderr.
//! A line longer than [`MAX_LINE_BYTES`] ends the reading (the harness's memory stays bounded).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread;

/// The longest answer line the harness reads (16 MiB); a longer one fails the case.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How much of an implementation's stderr is kept for diagnostics (64 KiB).
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;

/// What the reader thread took from the implementation's stdout.
#[derive(Debug)]
pub enum Line {
    /// One line, without its `\n`.
    Text(String),
    /// A line longer than the limit (reading stops).
    TooLong,
    /// A line that is not UTF-8 (its length in bytes).
    NotUtf8(usize),
    /// Reading failed (reading stops).
    Failed(String),
}

/// Reads `stdout` line by line on a thread; the channel closes at end of file.
pub fn spawn_line_reader(stdout: impl Read + Send + 'static, limit: usize) -> Receiver<Line> {
    let (tx, rx) = channel();
    thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut buf = Vec::new();
            let limit_plus_one = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
            let line = match (&mut reader)
                .take(limit_plus_one)
                .read_until(b'\n', &mut buf)
            {
                Ok(0) => break,
                Ok(_) => {
                    if buf.last() == Some(&b'\n') {
                        buf.pop();
                        if buf.last() == Some(&b'\r') {
                            buf.pop();
                        }
                    }
                    if buf.len() > limit {
                        Line::TooLong
                    } else {
                        let len = buf.len();
                        String::from_utf8(buf).map_or(Line::NotUtf8(len), Line::Text)
                    }
                }
                Err(e) => Line::Failed(e.to_string()),
            };
            let last = matches!(line, Line::TooLong | Line::Failed(_));
            if tx.send(line).is_err() || last {
                break;
            }
        }
    });
    rx
}

/// The tail of an implementation's stderr, kept by a reader thread.
#[derive(Debug)]
pub struct StderrTail {
    bytes: Arc<Mutex<VecDeque<u8>>>,
    reader: thread::JoinHandle<()>,
}

impl StderrTail {
    /// Waits up to `limit` for the reader to reach the end of stderr (every writer gone), so
    /// that the tail holds everything written before.
    pub fn settle(&self, limit: std::time::Duration) {
        let deadline = std::time::Instant::now() + limit;
        while !self.reader.is_finished() && std::time::Instant::now() < deadline {
            thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// Forgets what was kept (a process kept for another case starts its diagnostics afresh).
    pub fn clear(&self) {
        if let Ok(mut t) = self.bytes.lock() {
            t.clear();
        }
    }

    /// The last lines, as text (at most `max_lines`).
    pub fn text(&self, max_lines: usize) -> String {
        tail_text(&self.bytes, max_lines)
    }
}

/// Keeps the last `keep` bytes of `stderr`, read on a thread.
pub fn spawn_stderr_tail(mut stderr: impl Read + Send + 'static, keep: usize) -> StderrTail {
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let sink = Arc::clone(&tail);
    let reader = thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            if let Ok(mut t) = sink.lock() {
                t.extend(&buf[..n]);
                let excess = t.len().saturating_sub(keep);
                t.drain(..excess);
            }
        }
    });
    StderrTail {
        bytes: tail,
        reader,
    }
}

/// Writes to the implementation's stdin on a thread: [`Writer::write`] hands it the bytes and the
/// caller waits for the acknowledgement on [`Writer::acks`] with a deadline.
#[derive(Debug)]
pub struct Writer {
    lines: Option<Sender<Vec<u8>>>,
    /// One acknowledgement per write: `Ok` once written and flushed.
    pub acks: Receiver<std::io::Result<()>>,
}

impl Writer {
    /// Starts the writer thread for `stdin`.
    pub fn spawn(mut stdin: impl Write + Send + 'static) -> Writer {
        let (tx, lines) = channel::<Vec<u8>>();
        let (ack, acks) = channel();
        thread::spawn(move || {
            for bytes in lines {
                let result = stdin.write_all(&bytes).and_then(|_| stdin.flush());
                let failed = result.is_err();
                if ack.send(result).is_err() || failed {
                    break;
                }
            }
            // Dropping stdin closes the pipe: the implementation reads end of file.
        });
        Writer {
            lines: Some(tx),
            acks,
        }
    }

    /// Queues bytes to write; false when the writer has stopped (a write failed or stdin was
    /// closed).
    pub fn write(&self, bytes: Vec<u8>) -> bool {
        self.lines.as_ref().is_some_and(|tx| tx.send(bytes).is_ok())
    }

    /// Closes stdin once everything queued has been written.
    pub fn close(&mut self) {
        self.lines = None;
    }
}

/// The last lines of kept stderr bytes, as text (at most `max_lines`).
fn tail_text(tail: &Mutex<VecDeque<u8>>, max_lines: usize) -> String {
    let bytes: Vec<u8> = tail
        .lock()
        .map(|b| b.iter().copied().collect())
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let start = lines.len().saturating_sub(max_lines);
    lines[start..].join("\n").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_over_the_limit_ends_reading_and_shorter_lines_pass() {
        let input: &[u8] = b"short\n0123456789abcdef\nnever read\n";
        let rx = spawn_line_reader(input, 8);
        assert!(matches!(rx.recv(), Ok(Line::Text(t)) if t == "short"));
        assert!(matches!(rx.recv(), Ok(Line::TooLong)));
        assert!(rx.recv().is_err(), "reading stopped");
    }

    #[test]
    fn invalid_utf8_is_reported_with_its_length() {
        let input: &[u8] = b"\xff\xfe\n";
        let rx = spawn_line_reader(input, 8);
        assert!(matches!(rx.recv(), Ok(Line::NotUtf8(2))));
    }
}
