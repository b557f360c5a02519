//! Workspace-level test suites live in this crate's tests; see `corpus.rs` and `cli.rs`.

use std::path::PathBuf;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs the CLI in process: (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    let mut argv = vec!["hpa-conformance".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = hpa_harness::cli::main(&argv, &mut out, &mut err);
    (
        code,
        String::from_utf8(out).expect("utf-8 stdout"),
        String::from_utf8(err).expect("utf-8 stderr"),
    )
}
