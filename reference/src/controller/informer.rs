//! One watch of one kind, kept as a small projection per object (what a reconcile reads of it),
//! indexed by namespace then name — the controller's informer caches: its pods (upstream's pod
//! lister, [`super::pods`]) and, with `--deployment-scale-cache`, its Deployments' scales
//! ([`super::scales`]). A relist replaces the index only once it is complete; an object whose
//! projection is `None` is not kept (a reader then goes to the API, as without a cache).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event, watcher};
use serde::de::DeserializeOwned;

/// The kept projections: namespace → name → projection.
pub type Index<E> = HashMap<String, BTreeMap<String, Arc<E>>>;

/// A relist in progress (the watch's `Init` … `InitDone`), applied when complete.
pub type Staging<E> = Option<Index<E>>;

/// The projections of every object of one kind, as the watch last reported them.
#[derive(Debug)]
pub struct Informer<E> {
    index: Arc<RwLock<Index<E>>>,
    ready: Arc<tokio::sync::Notify>,
    synced: Arc<AtomicBool>,
}

impl<E> Clone for Informer<E> {
    fn clone(&self) -> Self {
        Informer {
            index: self.index.clone(),
            ready: self.ready.clone(),
            synced: self.synced.clone(),
        }
    }
}

impl<E> Default for Informer<E> {
    fn default() -> Self {
        Informer {
            index: Arc::default(),
            ready: Arc::default(),
            synced: Arc::default(),
        }
    }
}

fn key<K: kube::Resource>(object: &K) -> Option<(String, String)> {
    let meta = object.meta();
    Some((meta.namespace.clone()?, meta.name.clone()?))
}

/// Keeps `object`'s projection in `index` (or forgets the object when it has none).
fn keep<K: kube::Resource, E>(index: &mut Index<E>, object: &K, project: impl Fn(&K) -> Option<E>) {
    let Some((ns, name)) = key(object) else {
        return;
    };
    match project(object) {
        Some(entry) => {
            index.entry(ns).or_default().insert(name, Arc::new(entry));
        }
        None => forget(index, &ns, &name),
    }
}

fn forget<E>(index: &mut Index<E>, ns: &str, name: &str) {
    if let Some(objects) = index.get_mut(ns) {
        objects.remove(name);
        if objects.is_empty() {
            index.remove(ns);
        }
    }
}

impl<E> Informer<E> {
    /// Applies one event of the watch, each object through `project`.
    pub fn apply<K: kube::Resource>(
        &self,
        event: Event<K>,
        staging: &mut Staging<E>,
        project: impl Fn(&K) -> Option<E>,
    ) {
        match event {
            Event::Init => *staging = Some(Index::new()),
            Event::InitApply(object) => {
                if let Some(s) = staging.as_mut() {
                    keep(s, &object, project);
                }
            }
            Event::InitDone => {
                if let (Some(s), Ok(mut index)) = (staging.take(), self.index.write()) {
                    *index = s;
                }
                self.synced.store(true, Ordering::Release);
                self.ready.notify_waiters();
            }
            Event::Apply(object) => {
                if let Ok(mut index) = self.index.write() {
                    keep(&mut index, &object, project);
                }
            }
            Event::Delete(object) => {
                if let (Some((ns, name)), Ok(mut index)) = (key(&object), self.index.write()) {
                    forget(&mut index, &ns, &name);
                }
            }
        }
    }

    /// Waits until the first list is complete (upstream waits for its informers to sync).
    pub async fn synced(&self) {
        loop {
            let notified = self.ready.notified();
            if self.synced.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }

    /// How many objects the cache holds.
    pub fn len(&self) -> usize {
        self.index
            .read()
            .map(|i| i.values().map(BTreeMap::len).sum())
            .unwrap_or(0)
    }

    /// Whether the cache holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The projection of object `ns/name`, if the cache holds it.
    pub fn get(&self, ns: &str, name: &str) -> Option<Arc<E>> {
        self.index.read().ok()?.get(ns)?.get(name).cloned()
    }

    /// What `read` makes of namespace `ns`'s projections, by name (`None`: the cache holds none).
    pub fn in_namespace<R>(
        &self,
        ns: &str,
        read: impl FnOnce(Option<&BTreeMap<String, Arc<E>>>) -> R,
    ) -> R {
        match self.index.read() {
            Ok(index) => read(index.get(ns)),
            Err(_) => read(None),
        }
    }
}

impl<E: Send + Sync + 'static> Informer<E> {
    /// The cache over `api` (all namespaces, or the controller's one) and the future that keeps it
    /// current: run it in a task, and wait for [`Informer::synced`] before reading. `what` names
    /// the watch in its log lines.
    pub fn watch<K>(
        api: Api<K>,
        what: &'static str,
        project: fn(&K) -> Option<E>,
    ) -> (Informer<E>, impl std::future::Future<Output = ()> + Send)
    where
        K: kube::Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    {
        let cache = Informer::default();
        let feed = cache.clone();
        let run = async move {
            let mut staging = None;
            let mut events =
                std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
            while let Some(event) = events.next().await {
                match event {
                    Ok(e) => feed.apply(e, &mut staging, project),
                    Err(e) => tracing::warn!(error = %e, watch = what, "watch"),
                }
            }
        };
        (cache, run)
    }
}
