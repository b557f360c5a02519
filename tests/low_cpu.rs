//! `scripts/low-cpu.sh`, which runs CI's steps beside the kind lane on the CPU the cluster
//! leaves: its command runs as SCHED_IDLE, in the cpu cgroup `hpa-conformance-low-cpu` of weight
//! 2 where this machine lets one be written (root, a writable cgroupfs with the cpu controller),
//! else in a session of its own at autogroup nice 19, and says so; its output and exit status are
//! the command's.

use std::process::{Command, Output};

use hpa_conformance_tests::root;

/// `scripts/low-cpu.sh ARGS…` from the repository root.
fn low_cpu(args: &[&str]) -> Output {
    Command::new(root().join("scripts/low-cpu.sh"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run scripts/low-cpu.sh")
}

/// A `/proc/self/...` file as the command run through the script reads it.
fn seen_by_the_command(file: &str) -> (String, String) {
    let out = low_cpu(&["cat", file]);
    assert!(out.status.success(), "{out:?}");
    (
        String::from_utf8(out.stdout).expect("utf-8"),
        String::from_utf8(out.stderr).expect("utf-8"),
    )
}

/// Whether the cpu controller's cgroupfs is mounted writable (v1 on its own, or v2 with cpu).
fn cpu_cgroup_writable() -> bool {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, at, kind, options, ..] = fields[..] else {
            return false;
        };
        let writable = options.split(',').any(|o| o == "rw");
        let cpu = match kind {
            "cgroup" => options.split(',').any(|o| o == "cpu"),
            "cgroup2" => std::fs::read_to_string(format!("{at}/cgroup.controllers"))
                .is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu")),
            _ => false,
        };
        writable && cpu
    })
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1).map(|euid| euid == "0"))
        .unwrap_or(false)
}

#[test]
fn the_command_runs_as_sched_idle() {
    let (sched, _) = seen_by_the_command("/proc/self/sched");
    let policy = sched
        .lines()
        .find_map(|l| l.strip_prefix("policy"))
        .and_then(|rest| {
            rest.trim_start_matches([' ', ':'])
                .trim()
                .parse::<u32>()
                .ok()
        })
        .expect("a policy line in /proc/self/sched");
    assert_eq!(policy, 5, "SCHED_IDLE is policy 5:\n{sched}");
}

#[test]
fn the_command_runs_in_the_low_weight_cgroup_or_says_why_not() {
    let (cgroups, stderr) = seen_by_the_command("/proc/self/cgroup");
    let in_group = cgroups
        .lines()
        .any(|l| l.ends_with("/hpa-conformance-low-cpu"));
    if is_root() && cpu_cgroup_writable() {
        assert!(
            in_group,
            "root with a writable cpu cgroupfs: the command belongs in hpa-conformance-low-cpu\n{cgroups}{stderr}"
        );
        assert_eq!(stderr, "", "nothing to say when the cgroup was entered");
    } else if !in_group {
        assert!(
            stderr.contains("no cpu cgroup could be written here"),
            "{stderr}"
        );
        let (autogroup, _) = seen_by_the_command("/proc/self/autogroup");
        assert!(autogroup.trim_end().ends_with("nice 19"), "{autogroup}");
    }
}

#[test]
fn the_group_weighs_the_least_it_can() {
    let (cgroups, _) = seen_by_the_command("/proc/self/cgroup");
    // cgroup v1's cpu hierarchy ("N:cpu:/path" or "N:cpu,cpuacct:/path"), else v2's ("0::/path").
    let Some(path) = cgroups.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        path.ends_with("/hpa-conformance-low-cpu").then(|| {
            if controllers.split(',').any(|c| c == "cpu") {
                format!("/sys/fs/cgroup/cpu{path}/cpu.shares")
            } else if std::path::Path::new(&format!("/sys/fs/cgroup{path}/cpu.idle")).exists() {
                format!("/sys/fs/cgroup{path}/cpu.idle")
            } else {
                format!("/sys/fs/cgroup{path}/cpu.weight")
            }
        })
    }) else {
        return; // not in the cgroup: the test above says why that is right here
    };
    let value = std::fs::read_to_string(&path).expect(&path);
    // cpu.shares 2 (v1), else cpu.idle 1 or cpu.weight 1 (v2).
    let want = if path.ends_with("cpu.shares") {
        "2"
    } else {
        "1"
    };
    assert_eq!(value.trim(), want, "{path}");
}

#[test]
fn arguments_output_and_exit_status_are_the_commands() {
    let out = low_cpu(&[
        "sh",
        "-c",
        "printf '%s|' \"$@\"; exit 7",
        "sh",
        "a b",
        "",
        "c",
    ]);
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a b||c|");
}

#[test]
fn no_command_is_a_usage_error() {
    let out = low_cpu(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("usage: "));
}
