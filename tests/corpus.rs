//! The corpus: one test per case file under `cases/` (named by its path, so names are stable),
//! each running the case on the in-process reference core. A case must pass, and its trace must
//! equal the reviewed insta snapshot in `tests/snapshots/` (`cargo insta review` to accept
//! changes; CI runs with `INSTA_UPDATE=no`, so an unreviewed change fails).

use std::path::Path;

use hpa_harness::case::load_case;
use hpa_harness::run::{Outcome, RunOptions, run_case};
use hpa_harness::targets::CoreTarget;

const CASES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../cases");

fn corpus_case(path: &Path) -> datatest_stable::Result<()> {
    let case = load_case(path)?;
    let result = run_case(&case, &CoreTarget, &RunOptions::default());
    let name = path
        .strip_prefix(CASES)
        .unwrap_or(path)
        .with_extension("")
        .to_string_lossy()
        .replace(['/', '\\'], "__");
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(format!("{}: {}", case.file.name, case.file.title));
    if result.alongside.is_empty() {
        settings.bind(|| insta::assert_yaml_snapshot!(name, &result.trace));
    } else {
        // The case's HPA first, then each HPA alongside, by name.
        let mut traces = vec![(
            case.file.hpa.metadata.name.clone().unwrap_or_default(),
            &result.trace,
        )];
        traces.extend(result.alongside.iter().map(|a| (a.hpa.clone(), &a.trace)));
        settings.bind(|| insta::assert_yaml_snapshot!(name, &traces));
    }
    match result.outcome {
        Outcome::Passed | Outcome::Skipped(_) => Ok(()),
        Outcome::Failed(failures) => {
            Err(format!("case {} failed: {failures:#?}", case.file.name).into())
        }
        Outcome::Errored(e) => Err(format!("case {} errored: {e}", case.file.name).into()),
    }
}

datatest_stable::harness! {
    { test = corpus_case, root = CASES, pattern = r"\.ya?ml$" },
}
