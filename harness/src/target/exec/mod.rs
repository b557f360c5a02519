//! `exec:<command>`: any HPA implementation that speaks the step protocol (`harness/PROTOCOL.md`)
//! on its stdin/stdout. One process per case, the leader of its own process group.
//!
//! Nothing the implementation does can hang or crash the harness: every write and every read
//! has the step timeout ([`pipes`] serve them on threads), an answer line is at most
//! [`pipes::MAX_LINE_BYTES`], and an implementation that exits is noticed at once even when a
//! process it started still holds its stdout. A process that crashes, hangs, stops reading or
//! answers something that is not a protocol message fails the case with a diagnostic that names
//! the tick and shows the tail of its stderr; the run goes on. When the case ends the harness sends
//! `stop`, waits up to the step timeout for exit status 0, and kills the whole process group
//! ([`process`]).

pub mod pipes;
pub mod process;

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use hpa_reference::{Event, EventType, Settings};

use super::{GateSupport, Session, Target, TargetError, TickOutcome, seeded_memory};
use crate::case::Case;
use crate::profile::Profile;
use crate::protocol::{
    FromImplementation, PROTOCOL_VERSION, ProtocolMemory, ProtocolSettings, Start, Tick,
    ToImplementation,
};
use crate::text::{clip, quote};
use crate::world::Snapshot;
use pipes::{Line, MAX_LINE_BYTES, STDERR_TAIL_BYTES, StderrTail, Writer};
use process::{POLL, Process};

/// How long the harness waits, after the implementation exited, for what it wrote before.
const EXIT_GRACE: Duration = Duration::from_millis(200);

/// How long the harness waits, once the implementation's process group is gone, for the last of
/// its stderr.
const STDERR_GRACE: Duration = Duration::from_millis(500);

/// How many lines of stderr a diagnostic shows.
const STDERR_LINES: usize = 40;

/// How many characters of a garbage answer a diagnostic shows.
const SHOWN_CHARS: usize = 200;

/// Splits a command line into words; single or double quotes group words.
pub fn split_command(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote_char: Option<char> = None;
    for c in line.chars() {
        match (quote_char, c) {
            (Some(q), c) if c == q => quote_char = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote_char = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote_char.is_some() {
        return Err(format!("unbalanced quote in command {}", quote(line)));
    }
    if in_word {
        words.push(cur);
    }
    if words.is_empty() {
        return Err("empty command".into());
    }
    Ok(words)
}

/// An implementation run as a process per case.
#[derive(Debug, Clone)]
pub struct ExecTarget {
    command: Vec<String>,
    timeout: Duration,
}

impl ExecTarget {
    /// A target running `command` (split into words), waiting at most `timeout` for each write,
    /// each answer and the exit after `stop`. A zero timeout is refused.
    pub fn new(command: &str, timeout: Duration) -> Result<Self, String> {
        if timeout.is_zero() {
            return Err("the step timeout must be at least 1 second".into());
        }
        Ok(ExecTarget {
            command: split_command(command)?,
            timeout,
        })
    }
}

/// How a wait on one of the implementation's pipes ended.
enum Waited<T> {
    Got(T),
    TimedOut,
    Exited,
    Closed,
}

/// Waits for `rx` up to `timeout`, noticing when the implementation exits meanwhile.
fn wait_for<T>(process: &mut Process, rx: &Receiver<T>, timeout: Duration) -> Waited<T> {
    let deadline = Instant::now().checked_add(timeout);
    loop {
        match rx.recv_timeout(POLL) {
            Ok(v) => return Waited::Got(v),
            Err(RecvTimeoutError::Disconnected) => {
                return if process.wait_exit(EXIT_GRACE) {
                    Waited::Exited
                } else {
                    Waited::Closed
                };
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        if process.has_exited() {
            // What it wrote before exiting is still in the pipe.
            return match rx.recv_timeout(EXIT_GRACE) {
                Ok(v) => Waited::Got(v),
                Err(_) => Waited::Exited,
            };
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Waited::TimedOut;
        }
    }
}

struct ExecSession {
    process: Process,
    writer: Writer,
    lines: Receiver<Line>,
    stderr: StderrTail,
    timeout: Duration,
    /// `stop` was sent and the exit dealt with.
    finished: bool,
    /// The highest conformance level `hello` declared.
    highest: Profile,
    /// `name version` from `hello`.
    who: Option<String>,
}

impl ExecSession {
    /// The tail of stderr, once the (killed) process group's last words are in.
    fn stderr_tail(&self) -> String {
        self.stderr.settle(STDERR_GRACE);
        self.stderr.text(STDERR_LINES)
    }

    fn seconds(&self) -> String {
        format!("{} s", self.timeout.as_secs_f64())
    }

    /// Fails the case: the message, the exit status when it exited, the tail of its stderr. The
    /// process group is killed.
    fn fail(&mut self, at: &str, what: String) -> TargetError {
        let status = self
            .process
            .exit_status()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        self.process.kill_group();
        let tail = self.stderr_tail();
        let tail = if tail.is_empty() {
            "(no stderr)".to_string()
        } else {
            format!("stderr:\n{tail}")
        };
        TargetError::failed(format!("{at}: {what}{status}\n{tail}"))
    }

    fn send(&mut self, at: &str, msg: &ToImplementation) -> Result<(), TargetError> {
        let mut line =
            serde_json::to_string(msg).map_err(|e| TargetError::failed(e.to_string()))?;
        line.push('\n');
        if !self.writer.write(line.into_bytes()) {
            return Err(self.fail(
                at,
                "cannot write to the implementation: stdin is closed".into(),
            ));
        }
        match wait_for(&mut self.process, &self.writer.acks, self.timeout) {
            Waited::Got(Ok(())) => Ok(()),
            Waited::Got(Err(e)) => {
                Err(self.fail(at, format!("cannot write to the implementation: {e}")))
            }
            Waited::TimedOut => {
                let secs = self.seconds();
                Err(self.fail(
                    at,
                    format!("could not write the message within {secs}: the implementation is not reading its stdin"),
                ))
            }
            Waited::Exited => Err(self.fail(
                at,
                "the implementation exited before reading the message".into(),
            )),
            Waited::Closed => Err(self.fail(
                at,
                "cannot write to the implementation: stdin is closed".into(),
            )),
        }
    }

    fn receive(&mut self, at: &str) -> Result<FromImplementation, TargetError> {
        let line = match wait_for(&mut self.process, &self.lines, self.timeout) {
            Waited::Got(Line::Text(line)) => line,
            Waited::Got(Line::TooLong) => {
                return Err(self.fail(
                    at,
                    format!(
                        "answered a line longer than {} MiB, the limit of a protocol message",
                        MAX_LINE_BYTES / (1024 * 1024)
                    ),
                ));
            }
            Waited::Got(Line::NotUtf8(len)) => {
                return Err(self.fail(
                    at,
                    format!("answered a line of {len} bytes that is not UTF-8"),
                ));
            }
            Waited::Got(Line::Failed(e)) => {
                return Err(self.fail(at, format!("cannot read the implementation's stdout: {e}")));
            }
            Waited::TimedOut => {
                let secs = self.seconds();
                return Err(self.fail(at, format!("no answer within {secs}")));
            }
            Waited::Exited => {
                return Err(self.fail(at, "the implementation exited before answering".into()));
            }
            Waited::Closed => {
                return Err(self.fail(
                    at,
                    "the implementation closed its stdout before answering".into(),
                ));
            }
        };
        crate::protocol::decode_answer(&line).map_err(|why| {
            let shown = quote(&clip(&line, SHOWN_CHARS));
            let size = if line.chars().count() > SHOWN_CHARS {
                format!(" (first words of {} bytes)", line.len())
            } else {
                String::new()
            };
            self.fail(at, format!("{why}: {shown}{size}"))
        })
    }

    /// Sends `stop` and waits up to the step timeout for the exit; then kills the group. The
    /// error says what happened instead of an exit with status 0.
    fn stop(&mut self) -> Result<(), String> {
        self.finished = true;
        let sent = self.writer.write(b"{\"kind\":\"stop\"}\n".to_vec());
        self.writer.close();
        let exited = self.process.wait_exit(self.timeout);
        let status = self.process.kill_group();
        self.stderr.settle(STDERR_GRACE);
        match (sent, exited, status) {
            (_, true, Some(s)) if s.success() => Ok(()),
            (_, true, Some(s)) => Err(s.to_string()),
            (false, _, _) => Err("its stdin was closed before stop could be sent".into()),
            _ => Err(format!(
                "still running {} after stop (killed)",
                self.seconds()
            )),
        }
    }
}

impl Drop for ExecSession {
    fn drop(&mut self) {
        if !self.finished {
            // A case that ended early (failed or skipped): a short chance to exit, then the kill.
            self.finished = true;
            let _ = self.writer.write(b"{\"kind\":\"stop\"}\n".to_vec());
            self.writer.close();
            self.process
                .wait_exit(self.timeout.min(Duration::from_secs(1)));
        }
        self.process.kill_group();
    }
}

impl Session for ExecSession {
    fn tick(&mut self, snapshot: &Snapshot) -> Result<TickOutcome, TargetError> {
        let at = format!("at t={}", snapshot.t);
        self.send(
            &at,
            &ToImplementation::Tick(Box::new(Tick::from_snapshot(snapshot))),
        )?;
        match self.receive(&at)? {
            FromImplementation::Result(r) => {
                if r.t != snapshot.t {
                    return Err(self.fail(&at, format!("answered for t={} instead", r.t)));
                }
                let mut events = Vec::new();
                for e in r.events {
                    let type_ = match e.type_.as_str() {
                        "Normal" => EventType::Normal,
                        "Warning" => EventType::Warning,
                        other => {
                            return Err(self.fail(
                                &at,
                                format!(
                                    "event type {} is neither Normal nor Warning",
                                    quote(other)
                                ),
                            ));
                        }
                    };
                    events.push(Event {
                        type_,
                        reason: e.reason,
                        message: e.message,
                    });
                }
                Ok(TickOutcome {
                    scaled_to: r.scaled_to,
                    status: r.status,
                    events,
                    explanation: None,
                })
            }
            FromImplementation::Hello(_) => Err(self.fail(&at, "answered hello to a tick".into())),
        }
    }

    fn finish(&mut self) -> Result<(), TargetError> {
        self.stop().map_err(TargetError::failed)
    }

    fn highest_level(&self) -> Profile {
        self.highest
    }

    fn implementation(&self) -> Option<String> {
        self.who.clone()
    }

    fn diagnostics(&self) -> Option<String> {
        let tail = self.stderr.text(STDERR_LINES);
        (!tail.is_empty()).then_some(tail)
    }
}

impl Target for ExecTarget {
    fn name(&self) -> String {
        format!("exec:{}", self.command.join(" "))
    }

    fn gate_support(&self) -> GateSupport {
        GateSupport::PerCase
    }

    fn start(&self, case: &Case, settings: &Settings) -> Result<Box<dyn Session>, TargetError> {
        let (process, pipes) =
            Process::spawn(&self.command[0], &self.command[1..]).map_err(|e| {
                TargetError::failed(format!("cannot start {}: {e}", quote(&self.command[0])))
            })?;
        let mut session = ExecSession {
            process,
            writer: Writer::spawn(pipes.stdin),
            lines: pipes::spawn_line_reader(pipes.stdout, MAX_LINE_BYTES),
            stderr: pipes::spawn_stderr_tail(pipes.stderr, STDERR_TAIL_BYTES),
            timeout: self.timeout,
            finished: false,
            highest: Profile::Full,
            who: None,
        };
        let gates: std::collections::BTreeMap<String, bool> = settings
            .gates
            .iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let memory = ProtocolMemory::from_memory(&seeded_memory(case));
        session.send(
            "at start",
            &ToImplementation::Start(Start {
                protocol: PROTOCOL_VERSION,
                case: case.name().to_string(),
                feature_gates: gates.clone(),
                settings: ProtocolSettings::from_settings(settings),
                memory,
            }),
        )?;
        match session.receive("at start")? {
            FromImplementation::Hello(h) => {
                if h.protocol != PROTOCOL_VERSION {
                    return Err(session.fail(
                        "at start",
                        format!(
                            "speaks protocol {} (the harness speaks {PROTOCOL_VERSION})",
                            h.protocol
                        ),
                    ));
                }
                // Only the gates the case uses matter; one hello does not report is not taken
                // as agreement.
                let mut differing = Vec::new();
                let mut unreported = Vec::new();
                for (k, used) in &case.gates {
                    match h.feature_gates.get(k) {
                        Some(have) if *have != used.value => {
                            differing.push(format!("{k}={} (runs with {have})", used.value));
                        }
                        Some(_) => {}
                        None => unreported.push(format!("{k}={} ({})", used.value, used.because)),
                    }
                }
                let who = format!("{} {}", h.implementation.name, h.implementation.version);
                if !differing.is_empty() {
                    return Err(TargetError::skip(format!(
                        "{who} cannot run with feature gates {}",
                        differing.join(", ")
                    )));
                }
                if !unreported.is_empty() {
                    return Err(TargetError::skip(format!(
                        "the case uses feature gates {}, which {who} does not report in hello",
                        unreported.join(", ")
                    )));
                }
                let declared = h.declared_features();
                let missing: Vec<String> = case
                    .features
                    .iter()
                    .filter(|(f, _)| !declared.contains(f))
                    .map(|(f, at)| format!("{f} (it sets {at})"))
                    .collect();
                if !missing.is_empty() {
                    return Err(TargetError::skip(format!(
                        "the case needs {}, which {who} does not declare in hello (features, memorySeeding)",
                        missing.join(", ")
                    )));
                }
                session.who = Some(who.clone());
                session.highest = match h.highest_level() {
                    Ok(l) => l,
                    Err(why) => return Err(session.fail("at start", why)),
                };
                Ok(Box::new(session))
            }
            FromImplementation::Result(_) => {
                Err(session.fail("at start", "answered a result to start".into()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split_command;

    #[test]
    fn commands_split_on_whitespace_with_quotes() {
        assert_eq!(split_command("a b").unwrap(), ["a", "b"]);
        assert_eq!(
            split_command("a 'b c' \"d e\"").unwrap(),
            ["a", "b c", "d e"]
        );
        assert!(split_command("a 'b").is_err());
        assert!(split_command("   ").is_err());
    }
}
