//! The implementation's process: spawned as the leader of its own process group, so that every
//! process it starts (a wrapper script's child, a forked helper) is killed with it when the case
//! ends. Exit is observed without reaping (`waitid` with `WNOWAIT`): the leader stays a zombie,
//! so its process-group id cannot be reused by an unrelated process, until the group has been
//! killed.

use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use std::os::unix::process::CommandExt;

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, kill_process_group, waitid};

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
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()?;
        let pipes = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(stdin), Some(stdout), Some(stderr)) => Pipes {
                stdin,
                stdout,
                stderr,
            },
            _ => {
                let _ = child.kill();
                let _ = child.wait();
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

    /// Kills every process of the group (the leader and whatever it started), then reaps the
    /// leader. Returns the leader's exit status. Idempotent.
    pub fn kill_group(&mut self) -> Option<ExitStatus> {
        if !self.killed {
            self.killed = true;
            match self.group {
                // Fails with ESRCH when every member has already gone: nothing to do.
                Some(pid) => {
                    let _ = kill_process_group(pid, Signal::KILL);
                }
                None => {
                    let _ = self.child.kill();
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
