//! `schema`: the JSON Schema of case files, or of the step protocol's messages.

use std::io::Write;

use super::shared::*;
use crate::report::exit;

/// The arguments of `hpa-conformance schema`.
#[derive(Debug, clap::Args)]
pub struct SchemaArgs {
    /// The step protocol's schema instead.
    #[arg(long)]
    protocol: bool,
}

/// Runs `hpa-conformance schema`; `Err` is a usage or input problem to print (exit 2).
pub fn run(args: SchemaArgs, out: &mut dyn Write, _err: &mut dyn Write) -> Result<i32, String> {
    let SchemaArgs { protocol } = args;
    let text = if protocol {
        crate::protocol::schema_json()
    } else {
        schema_json()
    };
    emit(out, &text)?;
    Ok(exit::PASSED)
}

/// The JSON Schema of case files, as written to `cases/schema.json`.
pub fn schema_json() -> String {
    let schema = schemars::schema_for!(crate::case::CaseFile);
    let mut s = serde_json::to_string_pretty(&schema).unwrap_or_default();
    s.push('\n');
    s
}
