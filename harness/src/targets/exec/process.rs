//! The implementation's process: spawned as the leader of its own process group, so that every
//! process it starts (a wrapper script's child, a forked helper) is killed with it when the case
//! ends. Exit is observed without reaping (`waitid` with `WNOWAIT`): the leader stays a zombie,
//! so its process-group id cannot be reused by an unrelated process, until the group has been
//! killed.
//!
//! A process that leaves the group (`setsid`, `setpgid`) is found and killed too ([`contain`]:
//! the harness is a child subreaper and marks each implementation's environment), and so is
//! every process of the group and every orphan of the harness that carries the leader's marker;
//! what comes back to the harness is reaped, never a child anyone else waits for. With nothing
//! of the implementation left, every pipe it held reaches end of file: the harness never waits
//! on a pipe a leftover process holds (and [`super::pipes`] gives up on stderr at the case's end
//! even if one did).

use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use std::os::unix::process::CommandExt;

use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};

use super::contain;

/// How often the harness looks at whether the implementation has exited while it waits.
pub const POLL: Duration = Duration::from_millis(20);

/// A running implementation and its process group.
#[derive(Debug)]
pub struct Process {
    child: Child,
    group: Option<Pid>,
    /// The exit status, once the leader has been reaped.
    status: Option<ExitStatus>,
    /// The group has been killed.
    killed: bool,
    /// The marker its processes carry in their environment ([`contain::SESSION_VAR`]).
    marker: String,
}

/// The three pipes of a freshly started implementation.
#[derive(Debug)]
pub struct Pipes {
    /// Its standard input.
    pub stdin: ChildStdin,
    /// Its standard output.
    pub stdout: ChildStdout,
    /// Its standard error.
    pub stderr: ChildStderr,
}

impl Process {
    /// Starts `program args…` as the leader of a new process group, with piped stdio.
    pub fn spawn(program: &str, args: &[String]) -> std::io::Result<(Process, Pipes)> {
        let marker = contain::marker();
        let mut child = contain::spawn_registered(&marker, || {
            Command::new(program)
                .args(args)
                .env(contain::SESSION_VAR, &marker)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .spawn()
        })?;
        let pipes = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(stdin), Some(stdout), Some(stderr)) => Pipes {
                stdin,
                stdout,
                stderr,
            },
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                contain::forget(child.id());
                return Err(std::io::Error::other("the process has no piped stdio"));
            }
        };
        // A process-group id equal to the leader's pid (never 0 or 1 for a child).
        let group = i32::try_from(child.id())
            .ok()
            .and_then(Pid::from_raw)
            .filter(|p| p.as_raw_pid() > 1);
        Ok((
            Process {
                child,
                group,
                status: None,
                killed: false,
                marker,
            },
            pipes,
        ))
    }

    /// Whether the leader has exited (it is not reaped, so its group id stays reserved).
    pub fn has_exited(&mut self) -> bool {
        if self.status.is_some() {
            return true;
        }
        let Some(pid) = self.group else {
            return matches!(self.child.try_wait(), Ok(Some(_)));
        };
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        matches!(waitid(WaitId::Pid(pid), options), Ok(Some(_)))
    }

    /// Waits up to `limit` for the leader to exit; whether it did.
    pub fn wait_exit(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now().checked_add(limit);
        loop {
            if self.has_exited() {
                return true;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            std::thread::sleep(POLL.min(Duration::from_millis(5)));
        }
    }

    /// Kills every process of the group (the leader and whatever it started) and every
    /// process it started outside the group, then reaps the leader and what came back to the
    /// harness. Returns the leader's exit status. Idempotent.
    pub fn kill_group(&mut self) -> Option<ExitStatus> {
        if !self.killed {
            self.killed = true;
            match self.group {
                Some(pid) => {
                    let killed = contain::kill_all(pid, &self.marker);
                    self.status = self.child.wait().ok();
                    contain::release(pid, killed);
                }
                None => {
                    let _ = self.child.kill();
                    self.status = self.child.wait().ok();
                    contain::forget(self.child.id());
                }
            }
        }
        if self.status.is_none() {
            self.status = self.child.wait().ok();
        }
        self.status
    }

    /// The leader's exit status, reaping it (and killing the rest of its group) when it has
    /// exited; `None` while it runs.
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        if self.has_exited() {
            self.kill_group()
        } else {
            None
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill_group();
    }
}
