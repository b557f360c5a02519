//! Test helpers shared by the cluster lane's modules: a corpus case by its path and the run
//! options the lane's planning tests use (Kubernetes 1.37, the current release).

use crate::case::Case;
use crate::run::RunOptions;
use hpa_reference::KubernetesVersion;

/// A corpus case, by its path under `cases/`.
pub(crate) fn corpus(file: &str) -> Case {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cases")
        .join(file);
    crate::case::load::load_case(&path).expect("a corpus case")
}

/// Run options on Kubernetes 1.37, otherwise the defaults.
pub(crate) fn opts() -> RunOptions {
    RunOptions {
        version: KubernetesVersion::V1_37,
        ..RunOptions::default()
    }
}
