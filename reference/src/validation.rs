//! placeholder (stub)
