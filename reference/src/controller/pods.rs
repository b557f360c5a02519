//! The pods an HPA's scale selects. The deployed controller reads them from its own informer
//! cache (one pod watch, as upstream's controller reads its shared pod lister): a reconcile costs
//! the API server nothing for its pods, and the controller nothing but a lookup. The cache is
//! indexed by namespace and keeps, per pod, only what a reconcile reads — its labels and its
//! [`PodView`], computed once per change of the pod — so a reconcile among thousands of pods
//! touches only its namespace's. Without a cache (the controller driven over a mocked API) each
//! reconcile LISTs the pods by label selector.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, ListParams};

use super::api::message;
use super::informer::Informer;
use crate::view::PodView;

/// What a reconcile reads of one pod.
#[derive(Debug, Clone, PartialEq)]
pub struct PodEntry {
    /// `metadata.labels` (for the check that no other HPA selects the same pods).
    pub labels: BTreeMap<String, String>,
    /// The core's view of the pod.
    pub view: PodView,
}

impl PodEntry {
    /// The entry of a pod.
    pub fn of(pod: &Pod) -> PodEntry {
        PodEntry {
            labels: pod.metadata.labels.clone().unwrap_or_default(),
            view: PodView::from_pod(pod),
        }
    }
}

/// The pods of every namespace, by name, as the pod watch last reported them.
pub type PodCache = Informer<PodEntry>;

impl PodEntry {
    /// The projection the pod cache keeps ([`Informer::apply`]'s `project`).
    pub fn project(pod: &Pod) -> Option<PodEntry> {
        Some(PodEntry::of(pod))
    }
}

impl Informer<PodEntry> {
    /// The pods of `ns` that `selector` selects, ordered by name; a selector that does not parse
    /// selects nothing (the core reports it, `InvalidSelector`, from the scale itself).
    pub fn select(&self, ns: &str, selector: &str) -> Vec<Arc<PodEntry>> {
        let Ok(sel) = crate::selector::parse(selector) else {
            return Vec::new();
        };
        self.in_namespace(ns, |pods| {
            pods.map(|pods| {
                pods.values()
                    .filter(|p| sel.matches(&p.labels))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
        })
    }
}

/// Where a reconcile's pods come from.
#[derive(Debug, Clone, Default)]
pub enum PodSource {
    /// A LIST by label selector per reconcile.
    #[default]
    List,
    /// The informer cache.
    Cache(PodCache),
}

impl PodSource {
    /// The pods of namespace `ns` that `selector` (a scale's `status.selector`) selects, ordered
    /// by name.
    pub async fn list(
        &self,
        client: &Client,
        ns: &str,
        selector: &str,
    ) -> Result<Vec<Arc<PodEntry>>, String> {
        match self {
            PodSource::List => {
                let api: Api<Pod> = Api::namespaced(client.clone(), ns);
                let mut pods = api
                    .list(&ListParams::default().labels(selector))
                    .await
                    .map_err(|e| {
                        format!(
                            "unable to get pods while calculating replica count: {}",
                            message(&e)
                        )
                    })?
                    .items;
                pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
                Ok(pods.iter().map(|p| Arc::new(PodEntry::of(p))).collect())
            }
            PodSource::Cache(cache) => Ok(cache.select(ns, selector)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::watcher::Event;

    fn pod(ns: &str, name: &str, app: &str) -> Pod {
        let mut p = Pod::default();
        p.metadata.namespace = Some(ns.into());
        p.metadata.name = Some(name.into());
        p.metadata.labels = Some([("app".to_string(), app.to_string())].into());
        p
    }

    fn names(pods: Vec<Arc<PodEntry>>) -> Vec<String> {
        pods.iter().map(|p| p.view.name.clone()).collect()
    }

    #[tokio::test]
    async fn the_cache_follows_the_watch_and_selects_by_namespace_and_labels_in_name_order() {
        let cache = PodCache::default();
        let mut staging = None;
        let mut feed = |e: Event<Pod>| cache.apply(e, &mut staging, PodEntry::project);
        // Not synced until the first list is complete; nothing visible before.
        feed(Event::Init);
        for p in [
            pod("a", "web-2", "web"),
            pod("a", "web-1", "web"),
            pod("a", "db-1", "db"),
            pod("b", "web-3", "web"),
        ] {
            feed(Event::InitApply(p));
        }
        assert!(cache.is_empty());
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(20), cache.synced())
                .await
                .is_err()
        );
        feed(Event::InitDone);
        cache.synced().await;
        assert_eq!(cache.len(), 4);

        let source = PodSource::Cache(cache.clone());
        let client = Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap()))
            .expect("a client that is never called");
        let list = |ns: &'static str, sel: &'static str| {
            let (source, client) = (source.clone(), client.clone());
            async move { names(source.list(&client, ns, sel).await.unwrap()) }
        };
        assert_eq!(list("a", "app=web").await, ["web-1", "web-2"]);
        assert_eq!(
            list("a", "app in (web,db)").await,
            ["db-1", "web-1", "web-2"]
        );
        assert_eq!(list("b", "").await, ["web-3"]);
        assert!(list("a", "!!bad").await.is_empty());
        assert!(list("c", "").await.is_empty());

        // Changes: a new pod, a deletion, a relabelled pod.
        for e in [
            Event::Apply(pod("a", "web-0", "web")),
            Event::Delete(pod("a", "web-2", "web")),
            Event::Apply(pod("a", "db-1", "web")),
            Event::Delete(pod("b", "web-3", "web")),
        ] {
            feed(e);
        }
        assert_eq!(list("a", "app=web").await, ["db-1", "web-0", "web-1"]);
        assert!(list("b", "").await.is_empty());

        // A relist replaces everything once it is complete.
        feed(Event::Init);
        feed(Event::InitApply(pod("c", "x", "web")));
        assert_eq!(cache.len(), 3);
        feed(Event::InitDone);
        assert_eq!(cache.len(), 1);
        assert_eq!(list("c", "app=web").await, ["x"]);
    }
}
