//! Processes that escape (issue 34, item 2): an implementation whose helpers leave its process
//! group (`setsid`) and hold its stderr — one whose parent lives on, with an empty environment,
//! and one orphaned at once (`tests/fixtures/exec/escaping-helpers.sh`). Case after case, no
//! helper outlives its case, the harness's threads and descriptors do not grow, and a run
//! under a low `ulimit -n` passes.
//!
//! Its own test binary: the thread and descriptor counts are this process's alone.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hpa_harness::case::corpus::load_all;
use hpa_harness::run::{Outcome, RunOptions, run_case};
use hpa_harness::targets::make_target;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn pidfile(name: &str) -> PathBuf {
    let f = std::env::temp_dir().join(format!("hpa-escape-{}-{name}.pids", std::process::id()));
    let _ = std::fs::remove_file(&f);
    f
}

/// `exec:` the fixture, its helpers' pids appended to `pids`, serving cases as the step reference.
fn escaping(pids: &Path) -> String {
    format!(
        "exec:{} {} {}",
        root()
            .join("tests/fixtures/exec/escaping-helpers.sh")
            .display(),
        pids.display(),
        env!("CARGO_BIN_EXE_hpa-step-reference")
    )
}

/// Held by each test: the counts are taken while no other test runs.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

/// The helpers whose process (even a zombie) is still there a moment after the run.
fn survivors(pids: &Path) -> Vec<String> {
    let all: Vec<String> = std::fs::read_to_string(pids)
        .expect("the helpers' pids")
        .lines()
        .map(str::to_string)
        .collect();
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left: Vec<String> = all
            .iter()
            .filter(|p| Path::new(&format!("/proc/{p}")).exists())
            .cloned()
            .collect();
        if left.is_empty() || Instant::now() >= deadline {
            let _ = std::fs::remove_file(pids);
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn helpers_that_leave_the_group_die_with_their_case_and_nothing_of_the_harness_grows() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let (cases, bad) = load_all(&[root().join("tests/fixtures/gated/tolerance-needs-gate.yaml")]);
    assert!(bad.is_empty(), "{bad:?}");
    let pids = pidfile("run");
    let target = make_target(&escaping(&pids), Duration::from_secs(30)).expect("target");
    let opts = RunOptions::default();
    let once = || {
        let r = run_case(&cases[0], target.as_ref(), &opts);
        assert_eq!(r.outcome, Outcome::Passed);
    };
    // The first case starts what stays (the subreaper setting, the allocator's arenas).
    once();
    let (threads, fds) = (count("/proc/self/task"), count("/proc/self/fd"));
    let started = Instant::now();
    for _ in 0..100 {
        once();
    }
    let took = started.elapsed();
    let (threads_after, fds_after) = (count("/proc/self/task"), count("/proc/self/fd"));
    assert!(
        threads_after <= threads + 1 && fds_after <= fds + 1,
        "threads {threads} → {threads_after}, descriptors {fds} → {fds_after} over 100 cases"
    );
    let left = survivors(&pids);
    assert!(
        left.is_empty(),
        "{} helpers outlived their case: {left:?}",
        left.len()
    );
    // No case waited for the end of a stderr a helper held.
    assert!(took < Duration::from_secs(40), "100 cases took {took:?}");
}

#[test]
fn a_fuzz_run_under_a_low_descriptor_limit_passes_and_leaves_no_helper() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let pids = pidfile("fuzz");
    let out = std::env::temp_dir().join(format!("hpa-escape-fuzz-{}", std::process::id()));
    let run = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 48 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_hpa-conformance"))
        .args([
            "fuzz",
            "--b",
            &escaping(&pids),
            "--count",
            "100",
            "--jobs",
            "2",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .expect("hpa-conformance runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        stdout.contains("100 scenarios") && stdout.contains("0 target failures"),
        "{stdout}"
    );
    let left = survivors(&pids);
    assert!(
        left.is_empty(),
        "{} helpers outlived their case",
        left.len()
    );
    let _ = std::fs::remove_dir_all(&out);
}
