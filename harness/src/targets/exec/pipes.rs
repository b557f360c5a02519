//! The implementation's pipes. Its stdin and stdout are non-blocking and served on the caller's
//! own thread ([`Wire`]): a message is written, and an answer line read, with poll(2) and the step
//! timeout as deadline, looking every [`POLL`] at whether the process has exited — so no read or
//! write can block the harness, and a tick costs no hand-over between threads (a writer and a
//! reader thread per session used to: measured, a fifth of all context switches in fuzzing).
//! Stderr's tail is kept by a thread that polls it too, and stops when the case's process is
//! done with ([`StderrTail`] dropped) even if a process the harness could not kill still holds
//! the pipe: the thread ends and the descriptor is closed. A line longer than [`MAX_LINE_BYTES`]
//! ends the reading (the harness's memory stays bounded).

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::process::{ChildStdin, ChildStdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};

use super::process::{POLL, Process};

/// How long the harness waits, after the implementation exited, for what it wrote before.
pub const EXIT_GRACE: Duration = Duration::from_millis(200);

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

/// How a wait on one of the implementation's pipes ended.
#[derive(Debug)]
pub enum Waited<T> {
    /// It was written / read.
    Got(T),
    /// The deadline passed first.
    TimedOut,
    /// The implementation exited first.
    Exited,
    /// The pipe closed while the implementation still ran.
    Closed,
}

/// The implementation's stdin and stdout, non-blocking, written and read on the caller's thread.
#[derive(Debug)]
pub struct Wire {
    /// `None` once closed (the implementation reads end of file).
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    /// What was read from stdout and not yet returned as a line.
    buf: Vec<u8>,
    /// Where each read lands before it is appended to `buf` (zeroed once, not per read).
    chunk: Box<[u8]>,
    /// How much of `buf` is known to hold no `\n`.
    scanned: usize,
    /// Stdout reached end of file, or failed (`failed` says how): nothing more comes.
    eof: bool,
    failed: Option<String>,
    /// The longest line read ([`MAX_LINE_BYTES`] but in tests).
    limit: usize,
}

impl Wire {
    /// Serves `stdin` and `stdout`, setting both non-blocking.
    pub fn new(stdin: ChildStdin, stdout: ChildStdout, limit: usize) -> std::io::Result<Wire> {
        rustix::io::ioctl_fionbio(stdin.as_fd(), true)?;
        rustix::io::ioctl_fionbio(stdout.as_fd(), true)?;
        Ok(Wire {
            stdin: Some(stdin),
            stdout,
            buf: Vec::new(),
            chunk: vec![0; 1 << 16].into_boxed_slice(),
            scanned: 0,
            eof: false,
            failed: None,
            limit,
        })
    }

    /// Writes all of `bytes` by `deadline` (`None`: as much as fits now, without waiting). A
    /// write error (the implementation closed its stdin) is `Got(Err)`.
    pub fn write(
        &mut self,
        bytes: &[u8],
        deadline: Option<Instant>,
        process: &mut Process,
    ) -> Waited<std::io::Result<()>> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Waited::Closed;
        };
        let mut rest = bytes;
        while !rest.is_empty() {
            match stdin.write(rest) {
                Ok(0) => return Waited::Got(Err(ErrorKind::WriteZero.into())),
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    // The pipe is full: the implementation has not read what came before.
                    let Some(deadline) = deadline else {
                        return Waited::TimedOut;
                    };
                    if !wait_ready(stdin.as_fd(), PollFlags::OUT, deadline) {
                        if process.has_exited() {
                            return Waited::Exited;
                        }
                        if Instant::now() >= deadline {
                            return Waited::TimedOut;
                        }
                    }
                }
                Err(e) => return Waited::Got(Err(e)),
            }
        }
        Waited::Got(Ok(()))
    }

    /// Closes stdin: the implementation reads end of file.
    pub fn close(&mut self) {
        self.stdin = None;
    }

    /// The next line of stdout, waiting until `deadline`.
    pub fn read_line(&mut self, deadline: Instant, process: &mut Process) -> Waited<Line> {
        loop {
            if let Some(line) = self.take_line() {
                return Waited::Got(line);
            }
            if self.eof {
                // Everything it wrote has been read: it exited, or closed stdout and runs on.
                return if process.wait_exit(EXIT_GRACE) {
                    Waited::Exited
                } else {
                    Waited::Closed
                };
            }
            if self.fill() || wait_ready(self.stdout.as_fd(), PollFlags::IN, deadline) {
                continue;
            }
            if process.has_exited() {
                // What it wrote before exiting is still in the pipe — unless a process it
                // started holds the pipe open, so only a short grace for the rest.
                let grace = Instant::now() + EXIT_GRACE;
                loop {
                    if let Some(line) = self.take_line() {
                        return Waited::Got(line);
                    }
                    if self.eof
                        || (!self.fill()
                            && !wait_ready(self.stdout.as_fd(), PollFlags::IN, grace)
                            && Instant::now() >= grace)
                    {
                        return Waited::Exited;
                    }
                }
            }
            if Instant::now() >= deadline {
                return Waited::TimedOut;
            }
        }
    }

    /// Reads what stdout holds now into the buffer; false when there was nothing yet.
    fn fill(&mut self) -> bool {
        if self.eof {
            return false;
        }
        // Never more than one byte past the limit: enough to know that a line is too long.
        let room = (self.limit + 1)
            .saturating_sub(self.buf.len())
            .clamp(1, self.chunk.len());
        let got = self.stdout.read(&mut self.chunk[..room]);
        if let Ok(n) = got {
            self.buf.extend_from_slice(&self.chunk[..n]);
        }
        match got {
            Ok(0) => {
                self.eof = true;
                true
            }
            Ok(_) => true,
            Err(e) if e.kind() == ErrorKind::Interrupted => true,
            Err(e) if e.kind() == ErrorKind::WouldBlock => false,
            Err(e) => {
                self.eof = true;
                self.failed = Some(e.to_string());
                true
            }
        }
    }

    /// A complete line from the buffer, a line over the limit, the last unterminated line at end
    /// of file, or the read failure.
    fn take_line(&mut self) -> Option<Line> {
        if let Some(at) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') {
            let end = self.scanned + at;
            let rest = self.buf.split_off(end + 1);
            let mut line = std::mem::replace(&mut self.buf, rest);
            self.scanned = 0;
            line.pop();
            return Some(self.finish(line));
        }
        self.scanned = self.buf.len();
        if self.buf.len() > self.limit {
            // Reading stops here.
            self.eof = true;
            self.buf = Vec::new();
            self.scanned = 0;
            return Some(Line::TooLong);
        }
        if self.eof {
            if let Some(why) = self.failed.take() {
                return Some(Line::Failed(why));
            }
            if !self.buf.is_empty() {
                self.scanned = 0;
                let line = std::mem::take(&mut self.buf);
                return Some(self.finish(line));
            }
        }
        None
    }

    /// A line's text (a final `\r` dropped), or why it has none.
    fn finish(&self, mut line: Vec<u8>) -> Line {
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.len() > self.limit {
            return Line::TooLong;
        }
        let len = line.len();
        String::from_utf8(line).map_or(Line::NotUtf8(len), Line::Text)
    }
}

/// Waits until `fd` is ready for `events` (or hung up), until `deadline` but at most [`POLL`]:
/// false when it is not ready yet.
fn wait_ready(fd: BorrowedFd<'_>, events: PollFlags, deadline: Instant) -> bool {
    let wait = deadline.saturating_duration_since(Instant::now()).min(POLL);
    let timeout = Timespec::try_from(wait).unwrap_or(Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    });
    let mut fds = [PollFd::from_borrowed_fd(fd, events)];
    matches!(poll(&mut fds, Some(&timeout)), Ok(n) if n > 0)
}

/// The tail of an implementation's stderr, kept by a reader thread. Dropping it stops the
/// thread (within [`POLL`]) and closes the pipe.
#[derive(Debug)]
pub struct StderrTail {
    bytes: Arc<Mutex<VecDeque<u8>>>,
    /// Tells the reader to stop.
    done: Arc<AtomicBool>,
    reader: Option<thread::JoinHandle<()>>,
}

impl StderrTail {
    /// Waits up to `limit` for the reader to reach the end of stderr (every writer gone), so
    /// that the tail holds everything written before.
    pub fn settle(&self, limit: std::time::Duration) {
        let deadline = std::time::Instant::now() + limit;
        while self.reader.as_ref().is_some_and(|r| !r.is_finished())
            && std::time::Instant::now() < deadline
        {
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

impl Drop for StderrTail {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// Keeps the last `keep` bytes of `stderr`, read on a thread that waits with poll(2) and stops
/// at end of file or when the returned tail is dropped.
pub fn spawn_stderr_tail(mut stderr: impl Read + AsFd + Send + 'static, keep: usize) -> StderrTail {
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let sink = Arc::clone(&tail);
    let done = Arc::new(AtomicBool::new(false));
    let stop = Arc::clone(&done);
    // Non-blocking, a read never waits for a writer: only poll does, and only up to POLL.
    let nonblocking = rustix::io::ioctl_fionbio(stderr.as_fd(), true).is_ok();
    let reader = thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let far = Instant::now() + Duration::from_secs(365 * 86_400);
        while !stop.load(Ordering::Relaxed) {
            if nonblocking && !wait_ready(stderr.as_fd(), PollFlags::IN, far) {
                continue;
            }
            match stderr.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if let Ok(mut t) = sink.lock() {
                        t.extend(&buf[..n]);
                        let excess = t.len().saturating_sub(keep);
                        t.drain(..excess);
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock) => {}
                Err(_) => break,
            }
        }
    });
    StderrTail {
        bytes: tail,
        done,
        reader: Some(reader),
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

    /// `sh -c script` with its stdin and stdout on a [`Wire`] whose lines are at most `limit`.
    fn shell(script: &str, limit: usize) -> (Process, Wire, StderrTail) {
        let (process, pipes) =
            Process::spawn("sh", &["-c".to_string(), script.to_string()]).expect("sh starts");
        let wire = Wire::new(pipes.stdin, pipes.stdout, limit).expect("non-blocking pipes");
        (process, wire, spawn_stderr_tail(pipes.stderr, 1024))
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    fn text(w: Waited<Line>) -> String {
        match w {
            Waited::Got(Line::Text(t)) => t,
            other => panic!("expected a line, got {other:?}"),
        }
    }

    #[test]
    fn a_line_over_the_limit_ends_reading_and_shorter_lines_pass() {
        let (mut p, mut w, _) = shell("printf 'short\\n0123456789abcdef\\nnever read\\n'", 8);
        assert_eq!(text(w.read_line(soon(), &mut p)), "short");
        assert!(matches!(
            w.read_line(soon(), &mut p),
            Waited::Got(Line::TooLong)
        ));
        assert!(
            matches!(w.read_line(soon(), &mut p), Waited::Exited),
            "reading stopped"
        );
    }

    #[test]
    fn invalid_utf8_is_reported_with_its_length() {
        let (mut p, mut w, _) = shell("printf '\\377\\376\\n'", 8);
        assert!(matches!(
            w.read_line(soon(), &mut p),
            Waited::Got(Line::NotUtf8(2))
        ));
    }

    #[test]
    fn a_line_written_in_pieces_is_one_line_and_the_last_needs_no_newline() {
        let (mut p, mut w, _) = shell("printf 'ab'; sleep 0.1; printf 'c\\r\\nlast'", 1024);
        assert_eq!(text(w.read_line(soon(), &mut p)), "abc");
        assert_eq!(text(w.read_line(soon(), &mut p)), "last");
        assert!(matches!(w.read_line(soon(), &mut p), Waited::Exited));
    }

    #[test]
    fn what_is_written_is_read_and_answered() {
        let (mut p, mut w, _) = shell("read l; echo \"got $l\"; read m; echo \"then $m\"", 2 << 20);
        assert!(matches!(
            w.write(b"one\n", Some(soon()), &mut p),
            Waited::Got(Ok(()))
        ));
        assert_eq!(text(w.read_line(soon(), &mut p)), "got one");
        // More than a pipe holds: it is written as the reader takes it.
        let mut big = vec![b'x'; 1 << 20];
        big.push(b'\n');
        assert!(matches!(
            w.write(&big, Some(soon()), &mut p),
            Waited::Got(Ok(()))
        ));
        let answer = text(w.read_line(soon(), &mut p));
        assert_eq!(answer.len(), "then ".len() + (1 << 20));
    }

    #[test]
    fn a_write_nobody_reads_times_out_at_its_deadline_and_a_silent_one_too() {
        let (mut p, mut w, _) = shell("sleep 30", 1024);
        let big = vec![b'x'; 1 << 20];
        let start = Instant::now();
        let deadline = start + Duration::from_millis(300);
        assert!(matches!(
            w.write(&big, Some(deadline), &mut p),
            Waited::TimedOut
        ));
        assert!(start.elapsed() >= Duration::from_millis(300));
        assert!(matches!(w.write(&big, None, &mut p), Waited::TimedOut));
        let deadline = Instant::now() + Duration::from_millis(100);
        assert!(matches!(w.read_line(deadline, &mut p), Waited::TimedOut));
        p.kill_group();
    }

    #[test]
    fn an_exit_is_noticed_while_a_child_holds_stdout_open() {
        // The leader exits at once; the background sleep keeps stdout open.
        let (mut p, mut w, _) = shell("printf 'said\\n'; sleep 30 & exit 3", 1024);
        assert_eq!(text(w.read_line(soon(), &mut p)), "said");
        let start = Instant::now();
        assert!(matches!(w.read_line(soon(), &mut p), Waited::Exited));
        assert!(start.elapsed() < Duration::from_secs(5));
        p.kill_group();
    }

    #[test]
    fn writing_to_a_closed_stdin_fails() {
        let (mut p, mut w, _) = shell("exec 0<&-; sleep 30", 1024);
        std::thread::sleep(Duration::from_millis(200));
        assert!(matches!(
            w.write(b"hello\n", Some(soon()), &mut p),
            Waited::Got(Err(_))
        ));
        w.close();
        assert!(matches!(w.write(b"x\n", None, &mut p), Waited::Closed));
        p.kill_group();
    }
}
