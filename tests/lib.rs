//! Workspace-level test suites live in this crate's tests; see `corpus.rs` and `cli.rs`.
