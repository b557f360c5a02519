//! `exec:<command>`: any HPA implementation that speaks the step protocol (`harness/PROTOCOL.md`)
//! on its stdin/stdout. One process per case. A process that crashes, hangs past the step timeout
//! or answers something that is not a protocol message fails the case with a diagnostic that
//! names the tick and shows the tail of its stderr; the run goes on.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use hpa_reference::{Event, EventType, Settings};

use super::{GateSupport, Session, Target, TargetError, TickOutcome, seeded_memory};
use crate::case::Case;
use crate::protocol::{
    FromImplementation, PROTOCOL_VERSION, ProtocolMemory, ProtocolSettings, Start, Tick,
    ToImplementation,
};
use crate::world::Snapshot;

/// How much of an implementation's stderr is kept for diagnostics.
const STDERR_TAIL: usize = 64 * 1024;

/// Splits a command line into words; single or double quotes group words.
pub fn split_command(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
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
    if quote.is_some() {
        return Err(format!("unbalanced quote in command {line:?}"));
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
    /// A target running `command` (split into words), waiting at most `timeout` per answer.
    pub fn new(command: &str, timeout: Duration) -> Result<Self, String> {
        Ok(ExecTarget {
            command: split_command(command)?,
            timeout,
        })
    }
}

struct ExecSession {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<std::io::Result<String>>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    timeout: Duration,
}

impl ExecSession {
    fn stderr_tail(&self) -> String {
        // Give the stderr reader a moment to catch up with a process that just died.
        thread::sleep(Duration::from_millis(50));
        let buf = self
            .stderr
            .lock()
            .map(|b| b.iter().copied().collect::<Vec<u8>>())
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&buf).trim().to_string();
        if text.is_empty() {
            "(no stderr)".into()
        } else {
            format!("stderr:\n{text}")
        }
    }

    fn fail(&mut self, at: &str, what: String) -> TargetError {
        let tail = self.stderr_tail();
        let status = match self.child.try_wait() {
            Ok(Some(s)) => format!(" (the process exited: {s})"),
            _ => String::new(),
        };
        let message = format!("{at}: {what}{status}\n{tail}");
        let _ = self.child.kill();
        TargetError::failed(message)
    }

    fn send(&mut self, at: &str, msg: &ToImplementation) -> Result<(), TargetError> {
        let mut line =
            serde_json::to_string(msg).map_err(|e| TargetError::failed(e.to_string()))?;
        line.push('\n');
        let result = match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(line.as_bytes()).and_then(|_| stdin.flush()),
            None => Err(std::io::Error::other("stdin closed")),
        };
        result.map_err(|e| self.fail(at, format!("cannot write to the implementation: {e}")))
    }

    fn receive(&mut self, at: &str) -> Result<FromImplementation, TargetError> {
        let line = match self.lines.recv_timeout(self.timeout) {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => {
                return Err(self.fail(at, format!("cannot read the implementation's stdout: {e}")));
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(self.fail(
                    at,
                    format!("no answer within {} s", self.timeout.as_secs_f64()),
                ));
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(self.fail(
                    at,
                    "the implementation closed its stdout before answering".into(),
                ));
            }
        };
        serde_json::from_str(&line).map_err(|e| {
            let shown: String = line.chars().take(200).collect();
            self.fail(
                at,
                format!("answered something that is not a protocol message ({e}): {shown:?}"),
            )
        })
    }
}

impl Drop for ExecSession {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"{\"kind\":\"stop\"}\n");
        }
        for _ in 0..100 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
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
                                format!("event type {other:?} is neither Normal nor Warning"),
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
}

impl Target for ExecTarget {
    fn name(&self) -> String {
        format!("exec:{}", self.command.join(" "))
    }

    fn gate_support(&self) -> GateSupport {
        GateSupport::PerCase
    }

    fn start(&self, case: &Case, settings: &Settings) -> Result<Box<dyn Session>, TargetError> {
        let mut child = Command::new(&self.command[0])
            .args(&self.command[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| TargetError::failed(format!("cannot start {:?}: {e}", self.command[0])))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| TargetError::failed("no stdout"))?;
        let mut stderr = child
            .stderr
            .take()
            .ok_or_else(|| TargetError::failed("no stderr"))?;
        let (tx, lines) = channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let sink = Arc::clone(&tail);
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut t) = sink.lock() {
                    t.extend(&buf[..n]);
                    while t.len() > STDERR_TAIL {
                        t.pop_front();
                    }
                }
            }
        });
        let mut session = ExecSession {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr: tail,
            timeout: self.timeout,
        };
        let gates: std::collections::BTreeMap<String, bool> = settings
            .gates
            .iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let memory = ProtocolMemory::from_memory(&seeded_memory(case));
        let needs_memory = memory.is_some();
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
                let differing: Vec<String> = gates
                    .iter()
                    .filter(|(k, v)| h.feature_gates.get(*k).is_some_and(|have| have != *v))
                    .map(|(k, v)| format!("{k}={v} (runs with {})", !v))
                    .collect();
                if !differing.is_empty() {
                    return Err(TargetError::skip(format!(
                        "{} {} cannot run with feature gates {}",
                        h.implementation.name,
                        h.implementation.version,
                        differing.join(", ")
                    )));
                }
                if needs_memory && !h.memory_seeding {
                    return Err(TargetError::skip(format!(
                        "the case seeds the controller's memory, which {} cannot do",
                        h.implementation.name
                    )));
                }
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
