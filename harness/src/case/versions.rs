//! A case on one Kubernetes release: whether it holds there (`kubernetesVersions`), and what it
//! expects there (`expect` with the `before` of each later change of `changedIn` laid over it).

use std::borrow::Cow;

use hpa_reference::KubernetesVersion;

use super::Case;
use super::model::Expectations;

/// A case's releases, parsed from `kubernetesVersions` and `changedIn` by the loader.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Releases {
    /// The first release the case holds for.
    pub from: Option<KubernetesVersion>,
    /// The last release the case holds for.
    pub through: Option<KubernetesVersion>,
    /// The release of each `changedIn` entry, in the file's order.
    pub changed_in: Vec<KubernetesVersion>,
}

impl Releases {
    /// Whether the case holds for `v` at all.
    pub fn holds_for(&self, v: KubernetesVersion) -> bool {
        self.from.is_none_or(|f| v >= f) && self.through.is_none_or(|t| v <= t)
    }
}

/// The case as it runs on release `v`: `Err` with the reason to skip it when it does not hold
/// there, the case itself when no change applies, else a copy with the expectations of `v`.
pub fn at_version(case: &Case, v: KubernetesVersion) -> Result<Cow<'_, Case>, String> {
    if let Some(why) = outside(case, v) {
        return Err(why);
    }
    if !case.releases.changed_in.iter().any(|r| v < *r) {
        return Ok(Cow::Borrowed(case));
    }
    let mut out = case.clone();
    out.file.expect = expectations_at(case, v);
    Ok(Cow::Owned(out))
}

/// Why the case does not hold for release `v`, if it does not.
pub fn outside(case: &Case, v: KubernetesVersion) -> Option<String> {
    if !case.releases.holds_for(v) {
        let range = case.file.kubernetes_versions.as_ref();
        let bounds = match (case.releases.from, case.releases.through) {
            (Some(f), Some(t)) => format!("{f} to {t}"),
            (Some(f), None) => format!("{f} and later"),
            (None, Some(t)) => format!("{t} and earlier"),
            (None, None) => "no release".to_string(),
        };
        return Some(format!(
            "the case holds for Kubernetes {bounds}, not {v} (kubernetesVersions: {})",
            range.map(|r| r.because.as_str()).unwrap_or_default()
        ));
    }
    None
}

/// The expectations of the case's own HPA on release `v`.
pub fn expectations_at(case: &Case, v: KubernetesVersion) -> Expectations {
    let mut expect = case.file.expect.clone();
    let mut later: Vec<(KubernetesVersion, &Expectations)> = case
        .releases
        .changed_in
        .iter()
        .zip(&case.file.changed_in)
        .filter(|(r, _)| v < **r)
        .map(|(r, c)| (*r, &c.before))
        .collect();
    // The newest change first: an older change's `before` is laid over it.
    later.sort_by_key(|c| std::cmp::Reverse(c.0));
    for (_, before) in later {
        lay_over(&mut expect, before);
    }
    expect
}

/// `before` over `expect`: given fields replace, `at` entries by their `t`.
fn lay_over(expect: &mut Expectations, before: &Expectations) {
    if before.rejected.is_some() {
        expect.rejected.clone_from(&before.rejected);
    }
    if before.trajectory.is_some() {
        expect.trajectory.clone_from(&before.trajectory);
    }
    if before.final_replicas.is_some() {
        expect.final_replicas = before.final_replicas;
    }
    for x in &before.at {
        match expect.at.iter_mut().find(|y| y.t == x.t) {
            Some(y) => *y = x.clone(),
            None => expect.at.push(x.clone()),
        }
    }
    expect.at.sort_by_key(|x| x.t);
}

/// Which releases give the case different expectations: the releases of its changes, newest
/// first, each with its upstream change.
pub fn changes_of(case: &Case) -> Vec<(KubernetesVersion, &str)> {
    let mut out: Vec<(KubernetesVersion, &str)> = case
        .releases
        .changed_in
        .iter()
        .zip(&case.file.changed_in)
        .map(|(r, c)| (*r, c.upstream.as_str()))
        .collect();
    out.sort_by_key(|c| std::cmp::Reverse(c.0));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::load_case_text;

    const CASE: &str = r##"
name: v
title: t
source: {reason: test}
hpa:
  apiVersion: autoscaling/v2
  kind: HorizontalPodAutoscaler
  metadata: {name: web, namespace: default}
  spec:
    scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
    minReplicas: 1
    maxReplicas: 30
    metrics:
      - type: Pods
        pods:
          metric: {name: rps}
          target: {type: AverageValue, averageValue: "100"}
workload: {replicas: 10, pod: {containers: [{name: app, requests: {cpu: 500m}}]}}
timeline:
  - at: 0
    load: {metric: rps, perPod: "110"}
expect:
  finalReplicas: 10
  at:
    - {t: 0, replicas: 10}
kubernetesVersions: {through: "1.36", because: "test"}
changedIn:
  - release: "1.33"
    upstream: "#130797: the band's test"
    before:
      finalReplicas: 11
      at:
        - {t: 0, replicas: 11}
  - release: "1.35"
    upstream: "#1: later"
    before:
      trajectory: [10]
"##;

    #[test]
    fn expectations_follow_the_release() {
        let case = load_case_text(std::path::Path::new("v.yaml"), CASE).expect("loads");
        let at = |v: KubernetesVersion| expectations_at(&case, v);
        assert_eq!(at(KubernetesVersion::V1_36).final_replicas, Some(10));
        assert_eq!(at(KubernetesVersion::V1_36).trajectory, None);
        assert_eq!(at(KubernetesVersion::V1_34).trajectory, Some(vec![10]));
        assert_eq!(at(KubernetesVersion::V1_34).final_replicas, Some(10));
        let old = at(KubernetesVersion::V1_32);
        assert_eq!(old.final_replicas, Some(11));
        assert_eq!(old.at[0].replicas, Some(11));
        assert_eq!(old.trajectory, Some(vec![10]));
        assert!(matches!(
            at_version(&case, KubernetesVersion::V1_36),
            Ok(Cow::Borrowed(_))
        ));
        let skip = at_version(&case, KubernetesVersion::V1_37).unwrap_err();
        assert!(skip.contains("1.36 and earlier, not 1.37"), "{skip}");
        assert_eq!(changes_of(&case)[0].0, KubernetesVersion::V1_35);
    }
}
