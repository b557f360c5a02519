//! Containment of what an implementation starts beyond its process group (issue 34): a helper
//! that calls `setsid` or `setpgid` survives the kill of the group, and one that holds a pipe
//! would keep it open for as long as it lives.
//!
//! Without privileges there is no PID namespace or cgroup to put an implementation in, so the
//! harness finds its processes itself (Linux; elsewhere only the group is killed):
//!
//! - The harness becomes a **child subreaper** (`PR_SET_CHILD_SUBREAPER`, once, when it starts
//!   its first implementation): a process orphaned under an implementation is re-parented to
//!   the harness instead of to init, so it stays in reach.
//! - Each implementation gets [`SESSION_VAR`]` = <harness pid>.<serial>` in its environment,
//!   which its descendants inherit.
//! - When a case's process ends ([`kill_all`]), its group is stopped (`SIGSTOP`: no member forks
//!   while the harness looks), `/proc` is read once, and the process's own are found: every member
//!   of its group, every orphan of the harness that carries its marker, and every descendant of
//!   these (so a helper that emptied its environment is found while its parent lives). Those
//!   outside the group are stopped too and `/proc` is read again until nothing new turns up;
//!   then all get `SIGKILL`. [`release`] reaps what was re-parented to the harness.
//! - Reaping never takes an exit status someone else waits for: only processes found as above,
//!   and orphans of the harness outside its own process group (the children `std::process`
//!   starts elsewhere in the harness stay in its group) that no running implementation leads.
//!   An orphan found without a marker of a running implementation — its environment emptied, or
//!   marked by one that ended — is killed once no other implementation runs (a serial run: at
//!   the end of every case; at the latest when the run's last implementation ends), as it could
//!   belong to any of them.
//!
//! The leaders themselves are registered ([`spawn_registered`]) from the moment they are started
//! until they are reaped, so no sweep mistakes one for an orphan.
//!
//! What it costs: one read of `/proc` (the `stat` of every process; 1.4–2.4 ms for 129
//! processes on the 2-core VM) when an implementation's process ends — once per case for an
//! implementation that does not declare `manyCases`, once per run and job for one that does —
//! and more reads only while helpers outside the group keep turning up. What it cannot reach:
//! a process that both leaves the group and empties its environment after its parent exited
//! (no mark and no parent left to find it by) is killed only once no implementation runs; a
//! PID namespace or a cgroup would need privileges the harness does not ask for.

use std::collections::BTreeMap;
use std::process::Child;
use std::sync::Mutex;

/// The environment variable that marks an implementation's processes.
pub const SESSION_VAR: &str = "HPA_CONFORMANCE_SESSION";

/// The implementations running now: leader pid → its marker.
static LEADERS: Mutex<BTreeMap<i32, String>> = Mutex::new(BTreeMap::new());

/// The last serial number given to a marker.
static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A fresh marker for an implementation about to start.
pub fn marker() -> String {
    let n = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}.{n}", std::process::id())
}

/// Starts a process with `spawn` and registers it as the leader marked `marker` (under the
/// registry's lock, so that no sweep sees it unregistered).
pub fn spawn_registered(
    marker: &str,
    spawn: impl FnOnce() -> std::io::Result<Child>,
) -> std::io::Result<Child> {
    imp::become_subreaper();
    let mut leaders = LEADERS.lock().unwrap_or_else(|e| e.into_inner());
    let child = spawn()?;
    if let Ok(pid) = i32::try_from(child.id()) {
        leaders.insert(pid, marker.to_string());
    }
    Ok(child)
}

/// Forgets a leader that has been reaped.
pub fn forget(leader: u32) {
    if let Ok(pid) = i32::try_from(leader) {
        LEADERS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&pid);
    }
}

/// What [`kill_all`] killed, for [`release`] to reap.
#[derive(Debug, Default)]
pub struct Killed {
    #[cfg(target_os = "linux")]
    inner: imp::Killed,
}

/// Kills the process group of `leader` and every process the implementation marked `marker`
/// started outside it. The leader itself is left for its `Child` to reap.
pub fn kill_all(leader: rustix::process::Pid, marker: &str) -> Killed {
    #[cfg(target_os = "linux")]
    {
        Killed {
            inner: imp::kill_all(leader, marker),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = marker;
        let _ = rustix::process::kill_process_group(leader, rustix::process::Signal::KILL);
        Killed::default()
    }
}

/// After the leader was reaped: forgets it, reaps what [`kill_all`] killed, and sweeps the
/// harness's orphans.
pub fn release(leader: rustix::process::Pid, killed: Killed) {
    forget(leader.as_raw_pid().unsigned_abs());
    #[cfg(target_os = "linux")]
    imp::release(killed.inner);
    #[cfg(not(target_os = "linux"))]
    let _ = killed;
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub fn become_subreaper() {}
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::{BTreeMap, BTreeSet, HashMap};
    use std::sync::OnceLock;
    use std::time::{Duration, Instant};

    use rustix::io::Errno;
    use rustix::process::{
        Pid, Signal, WaitId, WaitIdOptions, getpgrp, getpid, kill_process, kill_process_group,
        waitid,
    };

    use super::{LEADERS, SESSION_VAR};

    /// How many times `/proc` is read while helpers outside the group keep turning up.
    const MAX_ROUNDS: usize = 8;

    /// How long the harness waits for killed processes to be reaped.
    const REAP_WITHIN: Duration = Duration::from_secs(1);

    /// Whether the harness is a child subreaper (set once).
    static SUBREAPER: OnceLock<bool> = OnceLock::new();

    pub fn become_subreaper() {
        SUBREAPER.get_or_init(|| rustix::process::set_child_subreaper(Some(getpid())).is_ok());
    }

    fn is_subreaper() -> bool {
        SUBREAPER.get().copied().unwrap_or(false)
    }

    /// A process as `/proc/PID/stat` shows it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    pub struct Proc {
        pid: i32,
        /// When it started (clock ticks after boot): with the pid, who it is.
        start: u64,
        ppid: i32,
        pgrp: i32,
        zombie: bool,
    }

    /// What was killed: to be reaped; and whether the harness had orphans to sweep.
    #[derive(Debug, Default)]
    pub struct Killed {
        victims: Vec<Proc>,
        orphans: bool,
    }

    fn parse_stat(pid: i32, text: &str) -> Option<Proc> {
        // `pid (comm) state ppid pgrp session … starttime …`; comm may hold anything.
        let rest = text.rsplit_once(')')?.1;
        let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
        Some(Proc {
            pid,
            start: fields.get(19)?.parse().ok()?,
            ppid: fields.get(1)?.parse().ok()?,
            pgrp: fields.get(2)?.parse().ok()?,
            zombie: matches!(fields.first(), Some(&"Z" | &"X")),
        })
    }

    fn stat(pid: i32) -> Option<Proc> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parse_stat(pid, &text)
    }

    /// Every process `/proc` shows.
    fn scan() -> Vec<Proc> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(stat)
            .collect()
    }

    /// The marker in a process's environment (`None`: none, or unreadable).
    fn marker_of(pid: i32) -> Option<String> {
        let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        let key = format!("{SESSION_VAR}=");
        env.split(|&b| b == 0)
            .find_map(|kv| kv.strip_prefix(key.as_bytes()))
            .map(|v| String::from_utf8_lossy(v).into_owned())
    }

    /// Whether `p` is still the process it was (not gone, its pid not reused).
    fn still_there(p: &Proc) -> bool {
        stat(p.pid).is_some_and(|now| now.start == p.start)
    }

    /// The pids of the implementations running now.
    fn leaders() -> BTreeSet<i32> {
        LEADERS
            .lock()
            .map(|l| l.keys().copied().collect())
            .unwrap_or_default()
    }

    /// The processes of the implementation led by `leader` and marked `marker`: its group, the
    /// orphans that carry its marker, and their descendants.
    fn belonging(procs: &[Proc], leader: i32, marker: &str) -> Vec<Proc> {
        let me = getpid().as_raw_pid();
        let subreaper = is_subreaper();
        let leaders = leaders();
        let mut children: HashMap<i32, Vec<usize>> = HashMap::new();
        for (i, p) in procs.iter().enumerate() {
            children.entry(p.ppid).or_default().push(i);
        }
        let orphan = |p: &Proc| {
            p.pid != me
                && !p.zombie
                && !leaders.contains(&p.pid)
                && (p.ppid == me || !subreaper)
                && marker_of(p.pid).as_deref() == Some(marker)
        };
        let mut todo: Vec<usize> = procs
            .iter()
            .enumerate()
            .filter(|(_, p)| p.pgrp == leader || orphan(p))
            .map(|(i, _)| i)
            .collect();
        let mut found = BTreeSet::new();
        while let Some(i) = todo.pop() {
            let p = procs[i];
            if p.pid == me || !found.insert(i) {
                continue;
            }
            todo.extend(children.get(&p.pid).into_iter().flatten().copied());
        }
        found.into_iter().map(|i| procs[i]).collect()
    }

    pub fn kill_all(leader: Pid, marker: &str) -> Killed {
        let group = leader.as_raw_pid();
        // Stopped, no member forks while the harness reads /proc (a group signal and fork do
        // not race: the kernel restarts a fork that one interrupts).
        let _ = kill_process_group(leader, Signal::STOP);
        let me = getpid().as_raw_pid();
        let own_group = getpgrp().as_raw_pid();
        let mut stopped = BTreeSet::new();
        let mut found = Vec::new();
        let mut orphans = false;
        for _ in 0..MAX_ROUNDS {
            let procs = scan();
            found = belonging(&procs, group, marker);
            let leaders = leaders();
            // Other orphans of the harness: the sweep's, once these are reaped.
            orphans = procs.iter().any(|p| {
                p.ppid == me
                    && p.pgrp != own_group
                    && !leaders.contains(&p.pid)
                    && !found.contains(p)
            });
            let fresh: Vec<Proc> = found
                .iter()
                .filter(|p| p.pgrp != group && !p.zombie && stopped.insert(**p))
                .copied()
                .collect();
            if fresh.is_empty() {
                break;
            }
            for p in fresh {
                signal(p, Signal::STOP);
            }
        }
        let _ = kill_process_group(leader, Signal::KILL);
        for p in &found {
            if p.pgrp != group && !p.zombie {
                signal(*p, Signal::KILL);
            }
        }
        found.retain(|p| p.pid != group);
        Killed {
            victims: found,
            orphans,
        }
    }

    fn signal(p: Proc, sig: Signal) {
        if let Some(pid) = Pid::from_raw(p.pid) {
            let _ = kill_process(pid, sig);
        }
    }

    /// Reaps `p` if it is a child of the harness that exited; true once there is nothing left
    /// to wait for (reaped here, or gone, or somebody else's to reap).
    fn reaped(p: &Proc) -> bool {
        if !still_there(p) {
            return true;
        }
        let Some(pid) = Pid::from_raw(p.pid) else {
            return true;
        };
        match waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG,
        ) {
            Ok(Some(_)) => true,
            Ok(None) => false,
            // Not (yet) the harness's child: its parent may still be dying.
            Err(Errno::CHILD) => false,
            Err(Errno::INTR) => false,
            Err(_) => true,
        }
    }

    /// Waits up to [`REAP_WITHIN`] until each of `procs` is reaped or gone.
    fn reap(mut procs: Vec<Proc>) {
        let deadline = Instant::now() + REAP_WITHIN;
        loop {
            procs.retain(|p| !reaped(p));
            if procs.is_empty() || Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    pub fn release(killed: Killed) {
        reap(killed.victims);
        if killed.orphans && is_subreaper() {
            sweep();
        }
    }

    /// Reaps the harness's exited orphans, kills those marked by an implementation that ended,
    /// and — when no implementation runs — every other one (see the module's doc).
    fn sweep() {
        let me = getpid().as_raw_pid();
        let own_group = getpgrp().as_raw_pid();
        let procs = scan();
        // Under the lock: no leader starts (unregistered) while orphans are judged.
        let leaders = LEADERS.lock().unwrap_or_else(|e| e.into_inner());
        let running: BTreeMap<&str, i32> =
            leaders.iter().map(|(pid, m)| (m.as_str(), *pid)).collect();
        let ours = format!("{me}.");
        let mut doomed = Vec::new();
        for p in procs {
            if p.ppid != me || p.pgrp == own_group || leaders.contains_key(&p.pid) {
                continue;
            }
            if p.zombie {
                doomed.push(p);
                continue;
            }
            let kill = match marker_of(p.pid) {
                Some(m) if running.contains_key(m.as_str()) => false,
                Some(m) if m.starts_with(&ours) => true,
                _ => leaders.is_empty(),
            };
            if kill {
                signal(p, Signal::KILL);
                doomed.push(p);
            }
        }
        drop(leaders);
        // A killed orphan's own children come to the harness in turn: the next sweep's.
        reap(doomed);
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_stat_line_is_read_whatever_the_command_name_holds() {
            let line = "4683 (a) b) c) Z 4680 4679 14482 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 65636 3133440";
            assert_eq!(
                parse_stat(4683, line),
                Some(Proc {
                    pid: 4683,
                    start: 65636,
                    ppid: 4680,
                    pgrp: 4679,
                    zombie: true
                })
            );
            assert_eq!(parse_stat(1, "1 (x) S 0"), None);
        }

        #[test]
        fn this_process_is_found_in_proc_with_its_parent() {
            let me = getpid().as_raw_pid();
            let p = scan()
                .into_iter()
                .find(|p| p.pid == me)
                .expect("this process in /proc");
            assert_eq!(
                p.ppid,
                rustix::process::getppid().map_or(0, |p| p.as_raw_pid())
            );
            assert!(still_there(&p));
        }
    }
}
