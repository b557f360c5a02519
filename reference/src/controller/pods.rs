//! The pods an HPA's scale selects. The deployed controller reads them from its own informer
//! cache (one pod watch, as upstream's controller reads its shared pod lister): a reconcile costs
//! the API server nothing for its pods, and the controller nothing but a lookup. The cache is
//! indexed by namespace and keeps, per pod, only what a reconcile reads — its labels and its
//! [`PodView`], computed once per change of the pod — so a reconcile among thousands of pods
//! touches only its namespace's. Without a cache (the controller driven over a mocked API) each
//! reconcile LISTs the pods by label selector.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, ListParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event, watcher};

use super::api::message;
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

type Index = HashMap<String, BTreeMap<String, Arc<PodEntry>>>;

/// The pods of every namespace, by name, as the pod watch last reported them.
#[derive(Debug, Clone, Default)]
pub struct PodCache {
    index: Arc<RwLock<Index>>,
    ready: Arc<tokio::sync::Notify>,
    synced: Arc<std::sync::atomic::AtomicBool>,
}

fn key(pod: &Pod) -> Option<(String, String)> {
    Some((pod.metadata.namespace.clone()?, pod.metadata.name.clone()?))
}

impl PodCache {
    /// Applies one event of a pod watch (`staging` holds a relist until it is complete).
    pub fn apply(&self, event: Event<Pod>, staging: &mut Option<Index>) {
        let insert = |index: &mut Index, pod: &Pod| {
            if let Some((ns, name)) = key(pod) {
                index
                    .entry(ns)
                    .or_default()
                    .insert(name, Arc::new(PodEntry::of(pod)));
            }
        };
        match event {
            Event::Init => *staging = Some(Index::new()),
            Event::InitApply(pod) => {
                if let Some(s) = staging.as_mut() {
                    insert(s, &pod);
                }
            }
            Event::InitDone => {
                if let (Some(s), Ok(mut index)) = (staging.take(), self.index.write()) {
                    *index = s;
                }
                self.synced
                    .store(true, std::sync::atomic::Ordering::Release);
                self.ready.notify_waiters();
            }
            Event::Apply(pod) => {
                if let Ok(mut index) = self.index.write() {
                    insert(&mut index, &pod);
                }
            }
            Event::Delete(pod) => {
                if let (Some((ns, name)), Ok(mut index)) = (key(&pod), self.index.write())
                    && let Some(pods) = index.get_mut(&ns)
                {
                    pods.remove(&name);
                    if pods.is_empty() {
                        index.remove(&ns);
                    }
                }
            }
        }
    }

    /// Waits until the first list is complete (upstream waits for its informers to sync).
    pub async fn synced(&self) {
        loop {
            let notified = self.ready.notified();
            if self.synced.load(std::sync::atomic::Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }

    /// How many pods the cache holds.
    pub fn len(&self) -> usize {
        self.index
            .read()
            .map(|i| i.values().map(BTreeMap::len).sum())
            .unwrap_or(0)
    }

    /// Whether the cache holds no pod.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pods of `ns` that `selector` selects, ordered by name; a selector that does not parse
    /// selects nothing (the core reports it, `InvalidSelector`, from the scale itself).
    pub fn select(&self, ns: &str, selector: &str) -> Vec<Arc<PodEntry>> {
        let Ok(sel) = crate::selector::parse(selector) else {
            return Vec::new();
        };
        let Ok(index) = self.index.read() else {
            return Vec::new();
        };
        index
            .get(ns)
            .map(|pods| {
                pods.values()
                    .filter(|p| sel.matches(&p.labels))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The cache over `api` (all namespaces, or the controller's one) and the future that keeps it
    /// current: run it in a task, and wait for [`PodCache::synced`] before reconciling.
    pub fn watch(api: Api<Pod>) -> (PodCache, impl std::future::Future<Output = ()> + Send) {
        let cache = PodCache::default();
        let feed = cache.clone();
        let run = async move {
            let mut staging = None;
            let mut events =
                std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
            while let Some(event) = events.next().await {
                match event {
                    Ok(e) => feed.apply(e, &mut staging),
                    Err(e) => tracing::warn!(error = %e, "pod watch"),
                }
            }
        };
        (cache, run)
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
        // Not synced until the first list is complete; nothing visible before.
        cache.apply(Event::Init, &mut staging);
        for p in [
            pod("a", "web-2", "web"),
            pod("a", "web-1", "web"),
            pod("a", "db-1", "db"),
            pod("b", "web-3", "web"),
        ] {
            cache.apply(Event::InitApply(p), &mut staging);
        }
        assert!(cache.is_empty());
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(20), cache.synced())
                .await
                .is_err()
        );
        cache.apply(Event::InitDone, &mut staging);
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
        cache.apply(Event::Apply(pod("a", "web-0", "web")), &mut staging);
        cache.apply(Event::Delete(pod("a", "web-2", "web")), &mut staging);
        cache.apply(Event::Apply(pod("a", "db-1", "web")), &mut staging);
        cache.apply(Event::Delete(pod("b", "web-3", "web")), &mut staging);
        assert_eq!(list("a", "app=web").await, ["db-1", "web-0", "web-1"]);
        assert!(list("b", "").await.is_empty());

        // A relist replaces everything once it is complete.
        cache.apply(Event::Init, &mut staging);
        cache.apply(Event::InitApply(pod("c", "x", "web")), &mut staging);
        assert_eq!(cache.len(), 3);
        cache.apply(Event::InitDone, &mut staging);
        assert_eq!(cache.len(), 1);
        assert_eq!(list("c", "app=web").await, ["x"]);
    }
}
