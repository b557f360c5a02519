//! `exec:<command>`: any HPA implementation that speaks the step protocol (`harness/PROTOCOL.md`)
//! on its stdin/stdout. One process per case, the leader of its own process group — or, for an
//! implementation that declares `manyCases` in `hello`, one process for many cases in sequence
//! (`end`/`ended` between them), kept in the target's pool while idle.
//!
//! Nothing the implementation does can hang or crash the harness: every write and every read
//! has the step timeout ([`pipes`]: non-blocking pipes polled with a deadline), an answer line is at most
//! [`pipes::MAX_LINE_BYTES`], and an implementation that exits is noticed at once even when a
//! process it started still holds its stdout. A process that crashes, hangs, stops reading or
//! answers something that is not a protocol message fails the case with a diagnostic that names
//! the tick and shows the tail of its stderr; the run goes on. When the case ends the harness sends
//! `stop`, waits up to the step timeout for exit status 0, and kills the whole process group and
//! whatever it started outside it ([`process`], [`contain`]). A process kept for more cases that
//! misbehaves after answering `ended` is a late failure of the case it followed
//! ([`Target::take_late_failures`]). A command that cannot start at all is found by
//! [`ExecTarget::probe`].

pub mod contain;
pub mod pipes;
pub mod process;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hpa_reference::{Event, EventType, Settings};

use super::{GateSupport, Session, Target, TargetError, TickOutcome, seeded_memory};
use crate::case::Case;
use crate::profile::Profile;
use crate::protocol::{
    End, FromImplementation, PROTOCOL_VERSION, PodChangesLine, ProtocolMemory, ProtocolSettings,
    Start, TickLine, ToImplementation, Unchanged, pod_changes,
};
use crate::util::text::{clip, quote};
use crate::world::Snapshot;
use pipes::{Line, MAX_LINE_BYTES, STDERR_TAIL_BYTES, StderrTail, Waited, Wire};
use process::Process;

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

/// An implementation run as a process per case — or, when it declares `manyCases` in `hello`,
/// a process kept between cases: after a case's last tick it gets `end`, answers `ended`, and
/// waits idle in the target's pool for the next case's `start`. A process that failed its case
/// is never reused; the next case starts a fresh one.
#[derive(Debug)]
pub struct ExecTarget {
    command: Vec<String>,
    timeout: Duration,
    /// Processes that declared `manyCases` and finished a case cleanly, waiting for the next.
    idle: Pool,
    /// What kept processes did wrong after answering `ended` ([`Target::take_late_failures`]).
    late: Arc<Mutex<Vec<LateFailure>>>,
    /// The last `hello` ([`Target::last_hello`], [`Target::declared_features`]).
    hello: Arc<Mutex<Option<crate::protocol::Hello>>>,
}

type Pool = Arc<Mutex<Vec<Live>>>;

/// A failure of an implementation noticed after the case it follows was over: a process kept
/// after answering `ended` that wrote something, did not answer the next `start`, or did not
/// exit after `stop`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LateFailure {
    /// The case the process had answered `ended` for.
    pub case: String,
    /// What it should have done.
    pub expected: String,
    /// What it did.
    pub actual: String,
}

impl Clone for ExecTarget {
    /// The same command and timeout, with a pool of its own.
    fn clone(&self) -> Self {
        ExecTarget {
            command: self.command.clone(),
            timeout: self.timeout,
            idle: Pool::default(),
            late: Arc::default(),
            hello: Arc::clone(&self.hello),
        }
    }
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
            idle: Pool::default(),
            late: Arc::default(),
            hello: Arc::default(),
        })
    }

    /// Starts the command once and kills it at once: `Err` says why it cannot start (a program
    /// that does not exist or cannot be executed) — a usage error, not a failure of each case.
    pub fn probe(&self) -> Result<(), String> {
        Process::spawn(&self.command[0], &self.command[1..])
            .map(drop)
            .map_err(|e| format!("cannot start {}: {e}", quote(&self.command[0])))
    }

    /// How many processes are idle in the pool (kept after a case for the next one).
    pub fn idle_processes(&self) -> usize {
        self.idle.lock().map(|p| p.len()).unwrap_or_default()
    }

    /// Starts a fresh process.
    fn spawn(&self) -> Result<Live, TargetError> {
        let (process, pipes) =
            Process::spawn(&self.command[0], &self.command[1..]).map_err(|e| {
                TargetError::failed(format!("cannot start {}: {e}", quote(&self.command[0])))
            })?;
        let stderr = pipes::spawn_stderr_tail(pipes.stderr, STDERR_TAIL_BYTES);
        let wire = Wire::new(pipes.stdin, pipes.stdout, MAX_LINE_BYTES).map_err(|e| {
            TargetError::failed(format!(
                "cannot set up the pipes of {}: {e}",
                quote(&self.command[0])
            ))
        })?;
        Ok(Live {
            process,
            wire,
            stderr,
            timeout: self.timeout,
            stopped: false,
            last_case: None,
            plain_failures: false,
        })
    }

    /// An idle process from the pool, if one is there.
    fn take_idle(&self) -> Option<Live> {
        self.idle.lock().ok().and_then(|mut p| p.pop())
    }

    /// Records what a kept process did wrong after answering `ended` for its last case.
    fn late_failure(&self, live: &Live, expected: &str, actual: String) {
        if let (Some(case), Ok(mut late)) = (&live.last_case, self.late.lock()) {
            late.push(LateFailure {
                case: case.clone(),
                expected: expected.to_string(),
                actual,
            });
        }
    }

    /// The idle processes, taken out of the pool.
    fn drain_idle(&self) -> Vec<Live> {
        self.idle
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default()
    }

    /// Ends the idle processes: each gets `stop` and must write nothing more and exit within
    /// the step timeout; one that does otherwise is a late failure of its last case.
    fn close_idle(&self) {
        let idle = self.drain_idle();
        for mut live in idle {
            live.stopped = true;
            let deadline = live.deadline();
            live.send_stop(Some(deadline));
            let wrote = match live.wire.read_line(deadline, &mut live.process) {
                Waited::Exited | Waited::Closed => None,
                Waited::Got(Line::Text(t)) => Some(format!("wrote {}", shown(&t))),
                Waited::Got(Line::TooLong) => Some(format!(
                    "wrote a line longer than {} MiB",
                    MAX_LINE_BYTES / (1024 * 1024)
                )),
                Waited::Got(Line::NotUtf8(n)) => {
                    Some(format!("wrote a line of {n} bytes that is not UTF-8"))
                }
                Waited::Got(Line::Failed(_)) => None,
                Waited::TimedOut => Some(format!(
                    "still running {} after stop (killed)",
                    live.seconds()
                )),
            };
            if let Some(actual) = wrote {
                self.late_failure(&live, "nothing more, and an exit after stop", actual);
            }
        }
    }
}

/// A line an implementation wrote, for a message: quoted, its start when long.
fn shown(line: &str) -> String {
    let size = if line.chars().count() > SHOWN_CHARS {
        format!(" (first words of {} bytes)", line.len())
    } else {
        String::new()
    };
    format!("{}{size}", quote(&clip(line, SHOWN_CHARS)))
}

impl Drop for ExecTarget {
    /// Idle processes get `stop`, a second to exit, and their groups are killed. Their exit
    /// status is no case's: it is not judged.
    fn drop(&mut self) {
        let idle = self.drain_idle();
        for mut live in idle {
            live.stopped = true;
            live.send_stop(None);
        }
        // Dropping each `Live` waits for its exit (up to a second) and kills its group.
    }
}

/// A running implementation process and its pipes.
#[derive(Debug)]
struct Live {
    process: Process,
    wire: Wire,
    stderr: StderrTail,
    timeout: Duration,
    /// `stop` was sent (or the group killed): on drop, only the wait and the kill remain.
    stopped: bool,
    /// The case it answered `ended` for last (a process kept for more cases).
    last_case: Option<String>,
    /// Failures say where (`at t=15: `) and end with the tail of stderr; not while `end` is
    /// answered, whose failure is labelled and has the tail as its diagnostics.
    plain_failures: bool,
}

impl Drop for Live {
    fn drop(&mut self) {
        if !self.stopped {
            // A case that ended early (failed or skipped), or an idle process: a short chance
            // to exit, then the kill.
            self.stopped = true;
            self.send_stop(None);
        }
        if !self.process.has_exited() {
            self.process
                .wait_exit(self.timeout.min(Duration::from_secs(1)));
        }
        self.process.kill_group();
    }
}

impl Live {
    /// Writes `stop` (waiting until `deadline`; `None`: only if it fits at once) and closes stdin;
    /// false when it could not be written.
    fn send_stop(&mut self, deadline: Option<Instant>) -> bool {
        let sent = matches!(
            self.wire
                .write(b"{\"kind\":\"stop\"}\n", deadline, &mut self.process),
            Waited::Got(Ok(()))
        );
        self.wire.close();
        sent
    }

    /// When a write or read begun now must be done: the step timeout from now (a timeout too
    /// large for the clock waits a year).
    fn deadline(&self) -> Instant {
        let now = Instant::now();
        now.checked_add(self.timeout)
            .unwrap_or_else(|| now + Duration::from_secs(365 * 86_400))
    }

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
        self.stopped = true;
        self.process.kill_group();
        let tail = self.stderr_tail();
        if self.plain_failures {
            return TargetError::failed(format!("{what}{status}"));
        }
        let tail = if tail.is_empty() {
            "(no stderr)".to_string()
        } else {
            format!("stderr:\n{tail}")
        };
        // `what` may quote the implementation: kept to a bound (the tail is bounded already).
        let what =
            crate::util::text::clip_bytes(&what, crate::kept::MAX_TEXT_BYTES).unwrap_or(what);
        TargetError::failed(format!("{at}: {what}{status}\n{tail}"))
    }

    fn send(&mut self, at: &str, msg: &impl serde::Serialize) -> Result<(), TargetError> {
        let mut line =
            serde_json::to_string(msg).map_err(|e| TargetError::failed(e.to_string()))?;
        line.push('\n');
        let deadline = self.deadline();
        match self
            .wire
            .write(line.as_bytes(), Some(deadline), &mut self.process)
        {
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
        let deadline = self.deadline();
        let line = match self.wire.read_line(deadline, &mut self.process) {
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
        self.stopped = true;
        let sent = self.send_stop(Some(self.deadline()));
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

    /// Sends `end` for `case` and waits for `ended` (an implementation that declared
    /// `manyCases`): the process may then serve another case. A failure's message is only what
    /// happened (the session labels it, and the tail of stderr is its diagnostics).
    fn end(&mut self, case: &str) -> Result<(), TargetError> {
        let at = "at end";
        self.plain_failures = true;
        self.send(
            at,
            &ToImplementation::End(End {
                case: case.to_string(),
            }),
        )?;
        match self.receive(at)? {
            FromImplementation::Ended(e) if e.case.as_deref().is_none_or(|c| c == case) => {
                self.plain_failures = false;
                self.last_case = Some(case.to_string());
                Ok(())
            }
            FromImplementation::Ended(e) => Err(self.fail(
                at,
                format!(
                    "answered ended for case {}",
                    quote(&clip(e.case.as_deref().unwrap_or_default(), SHOWN_CHARS)),
                ),
            )),
            FromImplementation::Hello(_) => Err(self.fail(at, "answered hello to end".into())),
            FromImplementation::Result(_) => Err(self.fail(at, "answered a result to end".into())),
        }
    }
}

struct ExecSession {
    /// The process (taken back into the pool when the case ended cleanly).
    live: Option<Live>,
    /// The case's name (for `end`).
    case: String,
    /// `hello` declared `manyCases`: the process goes back to `pool` after `end`.
    many_cases: bool,
    pool: Pool,
    /// The case is over (finished, or failed and the process killed).
    finished: bool,
    /// A tick was sent: a case dropped after that without `finish` ended in a failure (e.g. an
    /// answer the world refused), and its process is not kept.
    ticked: bool,
    /// The highest conformance level `hello` declared.
    highest: Profile,
    /// `name version` from `hello`.
    who: Option<String>,
    /// `hello` declared `deltaTicks`, `deltaMetrics` or `deltaPods`: what the previous tick
    /// sent, so that a tick leaves out what equals it or says what changed.
    delta: Option<Sent>,
}

/// What the last tick sent to an implementation that takes delta ticks carried: its HPA and
/// pods (`deltaTicks`, `deltaPods`), its metrics APIs' answers and their tick's instant
/// (`deltaMetrics`).
#[derive(Default)]
struct Sent {
    /// `hello` declared `deltaTicks`: the HPA and the pods may be left out.
    objects: bool,
    /// `hello` declared `deltaMetrics`: the metrics may be left out.
    answers: bool,
    /// `hello` declared `deltaPods`: the pods may be said as changes.
    pod_changes: bool,
    hpa: Option<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler>,
    pods: Option<std::sync::Arc<Vec<k8s_openapi::api::core::v1::Pod>>>,
    metrics: Option<(hpa_reference::Time, hpa_reference::metrics_api::MetricsApis)>,
}

/// What a tick leaves out ([`Unchanged`]) and how it says its pods when not whole.
#[derive(Debug, Default)]
struct Delta<'s> {
    unchanged: Vec<Unchanged>,
    pod_changes: Option<PodChangesLine<'s>>,
}

impl Sent {
    /// What to leave out for an implementation that declared `deltaTicks` (`objects`),
    /// `deltaMetrics` (`answers`) and `deltaPods` (`pod_changes`), as it declared them.
    fn new(objects: bool, answers: bool, pod_changes: bool) -> Option<Sent> {
        (objects || answers || pod_changes).then(|| Sent {
            objects,
            answers,
            pod_changes,
            ..Sent::default()
        })
    }

    /// What of `snapshot` equals the last tick sent, and its pods as changes to the last sent
    /// when they are not the same; remembers the rest as sent.
    fn delta<'s>(&mut self, snapshot: &'s Snapshot) -> Delta<'s> {
        let mut delta = Delta::default();
        if self.objects {
            if self.hpa.as_ref() == Some(&snapshot.hpa) {
                delta.unchanged.push(Unchanged::Hpa);
            } else {
                self.hpa = Some(snapshot.hpa.clone());
            }
        }
        if self.objects || self.pod_changes {
            // The world hands out the same list while no pod changed: equal without a look
            // inside.
            let same = self
                .pods
                .as_ref()
                .is_some_and(|p| std::sync::Arc::ptr_eq(p, &snapshot.pods) || *p == snapshot.pods);
            if same && self.objects {
                delta.unchanged.push(Unchanged::Pods);
            } else if let Some(previous) = self.pods.as_ref().filter(|_| self.pod_changes) {
                delta.pod_changes = pod_changes::diff(previous, &snapshot.pods);
            }
            if !same {
                self.pods = Some(snapshot.pods.clone());
            }
        }
        if self.answers {
            if self.metrics_moved_to(snapshot) {
                delta.unchanged.push(Unchanged::Metrics);
            } else {
                self.metrics = Some((snapshot.now, snapshot.metrics.clone()));
            }
        }
        delta
    }

    /// Whether the metrics last sent, moved in time to `snapshot`'s instant, are its metrics:
    /// then what is kept has been moved there. The wire carries timestamps in whole seconds, so
    /// both instants must be whole seconds for the implementation's move to give the same.
    fn metrics_moved_to(&mut self, snapshot: &Snapshot) -> bool {
        const SECOND: i64 = 1_000_000;
        let Some((at, sent)) = &mut self.metrics else {
            return false;
        };
        let (from, to) = (at.as_micros(), snapshot.now.as_micros());
        if from % SECOND != 0 || to % SECOND != 0 {
            return false;
        }
        let Some(by) = to.checked_sub(from) else {
            return false;
        };
        if !sent.move_timestamps(by) || *sent != snapshot.metrics {
            return false;
        }
        *at = snapshot.now;
        true
    }
}

impl ExecSession {
    fn live(&mut self) -> Result<&mut Live, TargetError> {
        self.live
            .as_mut()
            .ok_or_else(|| TargetError::failed("the implementation's process is gone"))
    }

    /// Ends the case on a process kept for more: `end`, `ended`, back into the pool.
    fn end_and_keep(&mut self) -> Result<(), TargetError> {
        let case = self.case.clone();
        self.live()?.end(&case)?;
        if let (Some(live), Ok(mut pool)) = (self.live.take(), self.pool.lock()) {
            pool.push(live);
        }
        Ok(())
    }
}

impl Drop for ExecSession {
    fn drop(&mut self) {
        if !self.finished
            && !self.ticked
            && self.many_cases
            && self.live.as_ref().is_some_and(|l| !l.stopped)
        {
            // A case skipped after hello: the process may still serve others.
            self.finished = true;
            let _ = self.end_and_keep();
        }
        // Otherwise dropping `live` sends `stop`, gives it a second and kills its group.
    }
}

impl Session for ExecSession {
    fn tick(&mut self, snapshot: &Snapshot) -> Result<TickOutcome, TargetError> {
        let at = format!("at t={}", snapshot.t);
        self.ticked = true;
        let delta = match &mut self.delta {
            Some(sent) => sent.delta(snapshot),
            None => Delta::default(),
        };
        let line = TickLine::new(snapshot, &delta.unchanged, delta.pod_changes.as_ref());
        let live = self.live()?;
        live.send(&at, &line)?;
        match live.receive(&at)? {
            FromImplementation::Result(r) => {
                if r.t != snapshot.t {
                    return Err(live.fail(&at, format!("answered for t={} instead", r.t)));
                }
                let mut events = Vec::new();
                for e in r.events {
                    let type_ = match e.type_.as_str() {
                        "Normal" => EventType::Normal,
                        "Warning" => EventType::Warning,
                        other => {
                            return Err(live.fail(
                                &at,
                                format!(
                                    "event type {} is neither Normal nor Warning",
                                    quote(&clip(other, SHOWN_CHARS))
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
                // No status: none written, the HPA keeps the tick's (start.unwrittenStatus).
                let status = match r.status {
                    Some(status) => status,
                    None => match &snapshot.hpa.status {
                        Some(kept) => kept.clone(),
                        None => {
                            return Err(live.fail(
                                &at,
                                "answered no status, but the tick's HPA has none to keep".into(),
                            ));
                        }
                    },
                };
                Ok(TickOutcome {
                    scaled_to: r.scaled_to,
                    status,
                    events,
                    explanation: None,
                    memory: r
                        .memory
                        .as_ref()
                        .map(|m| ProtocolMemory::to_memory(Some(m))),
                })
            }
            FromImplementation::Hello(_) => Err(live.fail(&at, "answered hello to a tick".into())),
            FromImplementation::Ended(_) => Err(live.fail(&at, "answered ended to a tick".into())),
        }
    }

    fn finish(&mut self) -> Result<(), TargetError> {
        self.finished = true;
        if self.many_cases {
            return self.end_and_keep();
        }
        self.live()?.stop().map_err(TargetError::failed)
    }

    fn highest_level(&self) -> Profile {
        self.highest
    }

    fn implementation(&self) -> Option<String> {
        self.who.clone()
    }

    fn diagnostics(&self) -> Option<String> {
        let tail = self.live.as_ref()?.stderr.text(STDERR_LINES);
        (!tail.is_empty()).then_some(tail)
    }

    fn finish_check(&self) -> (String, String) {
        if self.many_cases {
            (
                "after end".into(),
                format!("ended for case {}", quote(&self.case)),
            )
        } else {
            ("after stop".into(), "exit with status 0".into())
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

    fn last_hello(&self) -> Option<crate::protocol::Hello> {
        self.hello.lock().ok().and_then(|h| h.clone())
    }

    fn take_late_failures(&self) -> Vec<LateFailure> {
        self.close_idle();
        self.late
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default()
    }

    fn start(&self, case: &Case, settings: &Settings) -> Result<Box<dyn Session>, TargetError> {
        let gates: std::collections::BTreeMap<String, bool> = settings
            .gates
            .iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let start = ToImplementation::Start(Start {
            protocol: PROTOCOL_VERSION,
            case: case.name().to_string(),
            feature_gates: gates,
            settings: ProtocolSettings::from_settings(settings),
            memory: ProtocolMemory::from_memory(&seeded_memory(case)),
            report_memory: super::reports_memory(case),
            unwritten_status: true,
        });
        // A kept process that cannot take this `start` is replaced by a fresh one: that is no
        // failure of this case (it is one of the case the process answered `ended` for).
        let (mut live, hello) = loop {
            let (mut live, kept) = match self.take_idle() {
                Some(live) => (live, true),
                None => (self.spawn()?, false),
            };
            if kept {
                live.stderr.clear();
                // Its failure here is a late failure of its last case: only what happened.
                live.plain_failures = true;
            }
            let answer = live
                .send("at start", &start)
                .and_then(|()| live.receive("at start"));
            let answer = match answer {
                Ok(FromImplementation::Hello(h)) => break (live, h),
                Ok(FromImplementation::Result(_)) => {
                    live.fail("at start", "answered a result to start".into())
                }
                Ok(FromImplementation::Ended(_)) => {
                    live.fail("at start", "answered ended to start".into())
                }
                Err(e) => e,
            };
            if !kept {
                return Err(answer);
            }
            // A kept process that does not answer `start` with hello (it hangs, writes garbage,
            // exited): a failure of the case it answered `ended` for; this case gets a fresh one.
            self.late_failure(&live, "hello to the next case's start", answer.message);
        };
        live.plain_failures = false;
        if let Ok(mut last) = self.hello.lock() {
            *last = Some(hello.clone());
        }
        if hello.protocol != PROTOCOL_VERSION {
            return Err(live.fail(
                "at start",
                format!(
                    "speaks protocol {} (the harness speaks {PROTOCOL_VERSION})",
                    hello.protocol
                ),
            ));
        }
        // The name it gives itself goes into every skip reason and the conformance statement.
        let who = format!(
            "{} {}",
            hello.implementation.name, hello.implementation.version
        );
        let who = crate::util::text::clip_bytes(&who, crate::kept::MAX_NAME_BYTES).unwrap_or(who);
        let mut session = ExecSession {
            live: Some(live),
            case: case.name().to_string(),
            many_cases: hello.many_cases,
            pool: Arc::clone(&self.idle),
            finished: false,
            ticked: false,
            highest: Profile::Full,
            who: Some(who.clone()),
            delta: Sent::new(hello.delta_ticks, hello.delta_metrics, hello.delta_pods),
        };
        if let Some(declared) = &hello.kubernetes_version {
            match declared.parse::<hpa_reference::KubernetesVersion>() {
                Ok(v) if v == settings.version => {}
                Ok(v) => {
                    return Err(TargetError::skip(format!(
                        "{who} implements Kubernetes {v} (hello.kubernetesVersion), but this run judges {}: run it with --kubernetes-version {v}",
                        settings.version
                    )));
                }
                Err(e) => {
                    return Err(TargetError::skip(format!(
                        "{who} declares hello.kubernetesVersion {}: {e}",
                        crate::util::text::quote(declared)
                    )));
                }
            }
        }
        // Only the gates the case uses matter; one hello does not report is not taken as
        // agreement. A skipped case's session is dropped: `stop`, or `end` when it is kept.
        let mut differing = Vec::new();
        let mut unreported = Vec::new();
        for (k, used) in &case.gates {
            match hello.feature_gates.get(k) {
                Some(have) if *have != used.value => {
                    differing.push(format!("{k}={} (runs with {have})", used.value));
                }
                Some(_) => {}
                None => unreported.push(format!("{k}={} ({})", used.value, used.because)),
            }
        }
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
        let declared = hello.declared_features();
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
        session.highest = match hello.highest_level() {
            Ok(l) => l,
            Err(why) => return Err(session.live()?.fail("at start", why)),
        };
        Ok(Box::new(session))
    }
}

#[cfg(test)]
mod tests {
    use super::{Sent, Unchanged, split_command};

    /// The world of the docs' policy walk-down (cases/behavior/policy-walkdown.yaml).
    fn walkdown() -> crate::world::World {
        let case = crate::case::load_case_text(
            std::path::Path::new("sent.yaml"),
            include_str!("../../../../cases/behavior/policy-walkdown.yaml"),
        )
        .expect("case");
        crate::world::World::new(&case)
    }

    #[test]
    fn a_delta_tick_leaves_out_what_equals_the_last_tick_sent() {
        let mut world = walkdown();
        let mut sent = Sent::new(true, false, false).expect("deltaTicks");
        let first = world.snapshot(0);
        assert_eq!(
            sent.delta(&first).unchanged,
            [],
            "the first tick is complete"
        );
        assert_eq!(
            sent.delta(&world.snapshot(15)).unchanged,
            [Unchanged::Hpa, Unchanged::Pods]
        );
        // Another HPA status, the same pods.
        let mut s = world.snapshot(30);
        s.hpa.status = Some(Default::default());
        assert_eq!(sent.delta(&s).unchanged, [Unchanged::Pods]);
        assert_eq!(sent.delta(&s).unchanged, [Unchanged::Hpa, Unchanged::Pods]);
        // A pod fewer.
        let mut s = world.snapshot(45);
        s.hpa.status = Some(Default::default());
        std::sync::Arc::make_mut(&mut s.pods).pop();
        assert_eq!(sent.delta(&s).unchanged, [Unchanged::Hpa]);
        // deltaTicks alone never leaves the metrics out, however alike, nor says the pods as
        // changes.
        assert_eq!(sent.delta(&s).unchanged, [Unchanged::Hpa, Unchanged::Pods]);
        std::sync::Arc::make_mut(&mut s.pods).pop();
        let d = sent.delta(&s);
        assert_eq!(d.unchanged, [Unchanged::Hpa]);
        assert!(d.pod_changes.is_none());
    }

    #[test]
    fn pods_are_said_as_changes_to_the_last_sent_to_an_implementation_that_declares_it() {
        let mut world = walkdown();
        let names = |d: &super::Delta| {
            d.pod_changes.as_ref().map(|c| {
                let set: Vec<_> = c.set.iter().map(|p| p.metadata.name.clone()).collect();
                (c.removed.clone(), set)
            })
        };
        // deltaPods alone: whole on the first tick, then changes (none when none), never left out.
        let mut sent = Sent::new(false, false, true).expect("deltaPods");
        let first = world.snapshot(0);
        assert!(first.pods.len() >= 3);
        let d = sent.delta(&first);
        assert_eq!(
            (d.unchanged.len(), names(&d)),
            (0, None),
            "the first tick is whole"
        );
        let same = world.snapshot(15);
        let d = sent.delta(&same);
        assert_eq!((d.unchanged.len(), names(&d)), (0, Some((vec![], vec![]))));

        // With deltaTicks: the same pods are left out, other pods are said as changes.
        let mut sent = Sent::new(true, false, true).expect("both");
        let mut s = world.snapshot(30);
        assert!(
            sent.delta(&s).pod_changes.is_none(),
            "the first tick is whole"
        );
        let d = sent.delta(&s);
        assert_eq!(d.unchanged, [Unchanged::Hpa, Unchanged::Pods]);
        assert!(d.pod_changes.is_none());
        let last = std::sync::Arc::make_mut(&mut s.pods).pop().expect("a pod");
        let d = sent.delta(&s);
        assert_eq!(d.unchanged, [Unchanged::Hpa]);
        assert_eq!(
            names(&d),
            Some((vec![last.metadata.name.clone().expect("named")], vec![]))
        );
        // A pod changed and one back: both set, the changed one in place, the other after.
        let pods = std::sync::Arc::make_mut(&mut s.pods);
        pods[0].metadata.labels = None;
        pods.push(last.clone());
        let d = sent.delta(&s);
        assert_eq!(
            names(&d),
            Some((
                vec![],
                vec![s.pods[0].metadata.name.clone(), last.metadata.name.clone()]
            ))
        );
        // The same pods in another order cannot be said as changes: the whole list goes.
        std::sync::Arc::make_mut(&mut s.pods).swap(0, 1);
        let d = sent.delta(&s);
        assert!(d.unchanged == [Unchanged::Hpa] && d.pod_changes.is_none());
        // What was kept is the list last sent: the order back is a change again.
        std::sync::Arc::make_mut(&mut s.pods).swap(0, 1);
        assert!(sent.delta(&s).pod_changes.is_none());
    }

    #[test]
    fn metrics_are_left_out_when_they_are_the_last_tick_sent_moved_in_time() {
        let mut world = walkdown();
        assert!(
            Sent::new(false, false, false).is_none(),
            "nothing declared, nothing kept"
        );
        let mut sent = Sent::new(false, true, false).expect("deltaMetrics");
        let first = world.snapshot(0);
        assert!(!first.metrics.resource.items.is_empty());
        assert_eq!(
            sent.delta(&first).unchanged,
            [],
            "the first tick is complete"
        );
        // The same answers 15 s later, every timestamp 15 s later: left out (and deltaMetrics
        // alone never leaves out the HPA or the pods, though they are the same).
        let later = |s: &crate::world::Snapshot, secs: i64| {
            let mut next = s.clone();
            next.t += secs;
            next.now = hpa_reference::Time::from_micros(s.now.as_micros() + secs * 1_000_000);
            assert!(next.metrics.move_timestamps(secs * 1_000_000));
            next
        };
        let s = later(&first, 15);
        assert_eq!(sent.delta(&s).unchanged, [Unchanged::Metrics]);
        // Again from what was kept (moved to t=15), then at the same instant (another HPA of
        // the session): moved by 0.
        let s = later(&s, 15);
        assert_eq!(sent.delta(&s).unchanged, [Unchanged::Metrics]);
        assert_eq!(sent.delta(&s).unchanged, [Unchanged::Metrics]);
        // A timestamp that did not move with the tick: sent.
        let mut stale = later(&s, 15);
        stale.metrics.resource.items[0].timestamp = s.metrics.resource.items[0].timestamp.clone();
        assert_eq!(sent.delta(&stale).unchanged, []);
        // A usage changed: sent.
        let mut other = later(&stale, 15);
        other.metrics.resource.items[0].containers[0]
            .usage
            .values_mut()
            .for_each(|q| q.0 = "12345m".into());
        assert_eq!(sent.delta(&other).unchanged, []);
        // A pod's sample gone: sent; then the same again: left out.
        let mut fewer = later(&other, 15);
        fewer.metrics.resource.items.pop();
        assert_eq!(sent.delta(&fewer).unchanged, []);
        assert_eq!(
            sent.delta(&later(&fewer, 15)).unchanged,
            [Unchanged::Metrics]
        );
        // An instant between whole seconds: the wire's whole-second timestamps could not move
        // with it, so it is sent.
        let mut odd = later(&fewer, 30);
        odd.now = hpa_reference::Time::from_micros(odd.now.as_micros() + 500_000);
        assert_eq!(sent.delta(&odd).unchanged, []);
    }

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
