//! `tick.podChanges` (harness/PROTOCOL.md, *Delta pods*): a tick's pods said as changes to the
//! previous tick's of the case — pods gone by name, pods set by name (in place, or after the
//! others when new). [`diff`] is the harness's side: the changes, only when applying them gives the
//! tick's list exactly, in order; [`PodChanges::apply`] is an implementation's side.

use std::collections::{HashMap, HashSet};

use k8s_openapi::api::core::v1::Pod;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `tick.podChanges`: the previous tick's pods without those `removed`, each pod of `set`
/// replacing the one of its name where it stands, or, when there is none, coming after the others
/// in the order of `set`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PodChanges {
    /// Names of the previous tick's pods that are gone.
    #[serde(default)]
    pub removed: Vec<String>,
    /// The pods that changed or are new, whole.
    #[serde(default)]
    pub set: Vec<Pod>,
}

/// [`PodChanges`] as the harness writes them, borrowing the tick's pods.
#[derive(Debug, Serialize)]
pub struct PodChangesLine<'a> {
    /// Names of the previous tick's pods that are gone.
    pub removed: Vec<String>,
    /// The pods that changed or are new.
    pub set: Vec<&'a Pod>,
}

fn name(p: &Pod) -> Option<&str> {
    p.metadata.name.as_deref()
}

/// The changes from `previous` to `current`, or `None` when no [`PodChanges`] gives `current`
/// from `previous`: a pod without a name, a name twice, or pods kept in another order or after a
/// new one. Then the tick carries the whole list.
pub fn diff<'a>(previous: &[Pod], current: &'a [Pod]) -> Option<PodChangesLine<'a>> {
    let mut at = HashMap::with_capacity(previous.len());
    for (i, p) in previous.iter().enumerate() {
        if at.insert(name(p)?, i).is_some() {
            return None;
        }
    }
    let mut kept = vec![false; previous.len()];
    let mut next = 0;
    let mut new_names = HashSet::new();
    let mut set = Vec::new();
    for p in current {
        let n = name(p)?;
        match at.get(n) {
            // A pod kept: in the previous order, and before every new one.
            Some(&i) if i >= next && new_names.is_empty() => {
                kept[i] = true;
                next = i + 1;
                if previous[i] != *p {
                    set.push(p);
                }
            }
            Some(_) => return None,
            None => {
                if !new_names.insert(n) {
                    return None;
                }
                set.push(p);
            }
        }
    }
    let removed = previous
        .iter()
        .zip(&kept)
        .filter(|(_, k)| !**k)
        .filter_map(|(p, _)| name(p).map(str::to_string))
        .collect();
    Some(PodChangesLine { removed, set })
}

impl PodChanges {
    /// The pods these changes make of `previous`; an error for a name removed that `previous`
    /// does not have, a pod without a name, or a name twice in `previous`.
    pub fn apply(self, previous: &[Pod]) -> Result<Vec<Pod>, String> {
        let mut names = HashSet::with_capacity(previous.len());
        for p in previous {
            let n = name(p).ok_or("the previous tick has a pod without a name")?;
            if !names.insert(n) {
                return Err(format!("the previous tick has two pods named {n}"));
            }
        }
        if let Some(n) = self.removed.iter().find(|n| !names.contains(n.as_str())) {
            return Err(format!(
                "podChanges removes {n}, which the previous tick does not have"
            ));
        }
        let gone: HashSet<&str> = self.removed.iter().map(String::as_str).collect();
        let mut pods = Vec::with_capacity(previous.len() + self.set.len());
        let mut at = HashMap::with_capacity(previous.len());
        for p in previous {
            if let Some(n) = name(p).filter(|n| !gone.contains(n)) {
                at.insert(n.to_string(), pods.len());
                pods.push(p.clone());
            }
        }
        for p in self.set {
            let n = name(&p).ok_or("podChanges sets a pod without a name")?;
            match at.get(n) {
                Some(&i) => pods[i] = p,
                None => {
                    at.insert(n.to_string(), pods.len());
                    pods.push(p);
                }
            }
        }
        Ok(pods)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ready: bool) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
        p.status = Some(k8s_openapi::api::core::v1::PodStatus {
            phase: Some(if ready { "Running" } else { "Pending" }.into()),
            ..Default::default()
        });
        p
    }

    fn pods(spec: &str) -> Vec<Pod> {
        // "a b* c": pods a, b (not ready), c.
        spec.split_whitespace()
            .map(|s| pod(s.trim_end_matches('*'), !s.ends_with('*')))
            .collect()
    }

    fn owned(line: PodChangesLine) -> PodChanges {
        PodChanges {
            removed: line.removed,
            set: line.set.into_iter().cloned().collect(),
        }
    }

    /// Through JSON, as on the wire.
    fn wire(line: &PodChangesLine) -> PodChanges {
        serde_json::from_str(&serde_json::to_string(line).expect("encode")).expect("decode")
    }

    #[rstest::rstest]
    #[case::same("a b c", "a b c", 0, 0)]
    #[case::one_changed("a b c", "a b* c", 0, 1)]
    #[case::added_at_the_end("a b", "a b c d", 0, 2)]
    #[case::removed_in_the_middle("a b c d", "a d", 2, 0)]
    #[case::removed_and_added("a b c", "b c* d", 1, 2)]
    #[case::all_gone("a b", "", 2, 0)]
    #[case::from_none("", "a b", 0, 2)]
    #[case::all_replaced("a b", "c d", 2, 2)]
    fn changes_applied_to_the_previous_pods_give_the_current_ones(
        #[case] previous: &str,
        #[case] current: &str,
        #[case] removed: usize,
        #[case] set: usize,
    ) {
        let (previous, current) = (pods(previous), pods(current));
        let line = diff(&previous, &current).expect("expressible");
        assert_eq!((line.removed.len(), line.set.len()), (removed, set));
        assert_eq!(wire(&line).apply(&previous), Ok(current.clone()));
        assert_eq!(owned(line).apply(&previous), Ok(current));
    }

    #[rstest::rstest]
    #[case::kept_in_another_order("a b c", "a c b")]
    #[case::a_kept_pod_after_a_new_one("a b", "a c b")]
    #[case::a_new_name_twice("a", "a b b")]
    #[case::a_kept_name_twice("a b", "a b b")]
    #[case::a_name_twice_before("a a", "a")]
    fn no_changes_when_applying_them_could_not_give_the_current_pods(
        #[case] previous: &str,
        #[case] current: &str,
    ) {
        assert!(diff(&pods(previous), &pods(current)).is_none());
    }

    #[test]
    fn a_pod_without_a_name_is_never_said_as_a_change() {
        let mut nameless = pods("a b");
        nameless[1].metadata.name = None;
        assert!(diff(&nameless, &pods("a")).is_none());
        assert!(diff(&pods("a"), &nameless).is_none());
    }

    #[test]
    fn changes_that_do_not_fit_the_previous_pods_are_errors() {
        let previous = pods("a b");
        let gone = PodChanges {
            removed: vec!["x".into()],
            set: vec![],
        };
        assert_eq!(
            gone.apply(&previous),
            Err("podChanges removes x, which the previous tick does not have".into())
        );
        let mut nameless = pod("c", true);
        nameless.metadata.name = None;
        let set = PodChanges {
            removed: vec![],
            set: vec![nameless],
        };
        assert_eq!(
            set.apply(&previous),
            Err("podChanges sets a pod without a name".into())
        );
        assert_eq!(
            PodChanges::default().apply(&pods("a a")),
            Err("the previous tick has two pods named a".into())
        );
        let one = PodChanges {
            removed: vec!["a".into()],
            set: vec![],
        };
        assert_eq!(
            one.apply(&pods("a a")),
            Err("the previous tick has two pods named a".into())
        );
    }
}
