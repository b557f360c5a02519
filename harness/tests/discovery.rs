//! Discovery is robust (the `hpa-conformance` binary, each run bounded in time): an unreadable
//! folder or a file that is not a regular file is bad input reported by its path while every
//! other case still runs, a symbolic-link loop is entered once, and a duplicate case name points
//! at its `name:` line.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A temporary folder, removed when dropped (made writable again first).
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("hpa-discovery-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    fn case(&self, rel: &str, text: &str) -> PathBuf {
        let file = self.0.join(rel);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("folder");
        std::fs::write(&file, text).expect("write");
        file
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = Command::new("chmod")
            .arg("-R")
            .arg("u+rwx")
            .arg(&self.0)
            .status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn doubling() -> String {
    std::fs::read_to_string(root().join("cases/algorithm/docs-cpu-doubling.yaml")).expect("case")
}

/// Runs the binary (through `wrapper` when given), failing the test after 60 s.
fn run_binary(wrapper: &[&str], args: &[&Path]) -> (i32, String, String) {
    let binary = env!("CARGO_BIN_EXE_hpa-conformance");
    let mut command = match wrapper.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(binary);
            c
        }
        None => Command::new(binary),
    };
    let mut child = command
        .arg("run")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start hpa-conformance");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("hpa-conformance run {args:?} did not end within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_fifo_named_like_a_case_is_reported_not_read() {
    let dir = TempDir::new("fifo");
    dir.case("good.yaml", &doubling());
    let fifo = dir.0.join("pipe.yaml");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let (code, out, err) = run_binary(&[], &[&dir.0]);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(
        err.trim(),
        format!("{}: not a regular file", fifo.display())
    );
    assert!(out.contains("1 passed, 0 failed, 0 skipped"), "{out}");
    // Given by name too.
    let (code, _, err) = run_binary(&[], &[&fifo]);
    assert_eq!(code, 2);
    assert_eq!(
        err.trim(),
        format!("{}: not a regular file", fifo.display())
    );
}

#[test]
fn a_symbolic_link_loop_is_entered_once() {
    let dir = TempDir::new("loop");
    dir.case("sub/doubling.yaml", &doubling());
    std::os::unix::fs::symlink("..", dir.0.join("sub/up")).expect("symlink");
    std::os::unix::fs::symlink(".", dir.0.join("sub/here")).expect("symlink");
    let (code, out, err) = run_binary(&[], &[&dir.0]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("1 passed, 0 failed, 0 skipped"), "{out}");
}

#[test]
fn an_unreadable_folder_is_bad_input_by_its_path_and_the_rest_still_runs() {
    let dir = TempDir::new("locked");
    dir.case("good.yaml", &doubling());
    dir.case(
        "locked/hidden.yaml",
        &doubling().replacen("docs-cpu-doubling", "hidden", 1),
    );
    let locked = dir.0.join("locked");
    assert!(
        Command::new("chmod")
            .arg("000")
            .arg(&locked)
            .status()
            .expect("chmod")
            .success()
    );
    // root reads any folder: run as nobody then.
    let as_nobody = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ];
    let wrapper: &[&str] = if std::fs::read_dir(&locked).is_ok() {
        &as_nobody
    } else {
        &[]
    };
    let (code, out, err) = run_binary(wrapper, &[&dir.0]);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(
        err.trim(),
        format!(
            "{}: cannot read the folder: Permission denied (os error 13)",
            locked.display()
        )
    );
    assert!(out.contains("1 passed, 0 failed, 0 skipped"), "{out}");
}

#[test]
fn a_duplicate_case_name_points_at_its_name_line() {
    let dir = TempDir::new("duplicate");
    let first = dir.case("a.yaml", &doubling());
    let second = dir.case("b.yaml", &format!("# the same name again\n{}", doubling()));
    let (code, out, err) = run_binary(&[], &[&dir.0]);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(
        err.trim(),
        format!(
            "{}:2:1: duplicate case name \"docs-cpu-doubling\" (also in {})",
            second.display(),
            first.display()
        )
    );
}
