//! The pods an HPA's scale selects. The deployed controller reads them from an informer's cache
//! (a reflector over one pod watch), as upstream's controller reads its shared pod lister: a
//! reconcile costs the API server nothing for its pods. Without a cache (the controller driven
//! over a mocked API) each reconcile LISTs them by label selector.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, watcher};
use kube::runtime::{WatchStreamExt, reflector::store::Writer};
use kube::{Client, ResourceExt};

use super::api::message;

/// Where a reconcile's pods come from.
#[derive(Clone, Default)]
pub enum PodSource {
    /// A LIST by label selector per reconcile.
    #[default]
    List,
    /// An informer's cache, filled by [`cache`]'s reflector.
    Cache(Store<Pod>),
}

impl PodSource {
    /// The pods of namespace `ns` that `selector` (a scale's `status.selector`) selects, ordered
    /// by name. A selector the cache cannot parse selects nothing: the core reports it
    /// (`InvalidSelector`) from the scale itself.
    pub async fn list(
        &self,
        client: &Client,
        ns: &str,
        selector: &str,
    ) -> Result<Vec<Pod>, String> {
        match self {
            PodSource::List => {
                let api: Api<Pod> = Api::namespaced(client.clone(), ns);
                api.list(&ListParams::default().labels(selector))
                    .await
                    .map(|l| l.items)
                    .map_err(|e| {
                        format!(
                            "unable to get pods while calculating replica count: {}",
                            message(&e)
                        )
                    })
            }
            PodSource::Cache(store) => Ok(select(store, ns, selector)),
        }
    }
}

/// The cached pods of `ns` that `selector` selects, ordered by name.
fn select(store: &Store<Pod>, ns: &str, selector: &str) -> Vec<Pod> {
    let Ok(sel) = crate::selector::parse(selector) else {
        return Vec::new();
    };
    let empty = std::collections::BTreeMap::new();
    let mut pods: Vec<Pod> = store
        .state_filter(|p| {
            p.metadata.namespace.as_deref() == Some(ns)
                && sel.matches(p.metadata.labels.as_ref().unwrap_or(&empty))
        })
        .into_iter()
        .map(Arc::unwrap_or_clone)
        .collect();
    pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    pods
}

/// What the cache keeps of a pod: everything the core reads ([`crate::view::PodView`]), without
/// the managed fields and annotations, which are most of a pod's bytes.
fn trim(pod: &mut Pod) {
    pod.managed_fields_mut().clear();
    pod.annotations_mut().clear();
}

/// A pod cache over `api` (all namespaces, or the controller's one): the store and the future
/// that keeps it current (run it in a task; it ends only with the watch). Wait for
/// `store.wait_until_ready()` before reconciling, as upstream waits for its informers to sync.
pub fn cache(api: Api<Pod>) -> (Store<Pod>, impl std::future::Future<Output = ()> + Send) {
    let writer: Writer<Pod> = Writer::default();
    let store = writer.as_reader();
    let stream = reflector::reflector(
        writer,
        watcher(api, watcher::Config::default())
            .default_backoff()
            .modify(trim),
    );
    let run = async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            if let Err(e) = event {
                tracing::warn!(error = %e, "pod watch");
            }
        }
    };
    (store, run)
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
        p.metadata.annotations = Some([("big".to_string(), "x".repeat(100))].into());
        p
    }

    #[tokio::test]
    async fn the_cache_selects_by_namespace_and_labels_in_name_order_and_keeps_no_annotations() {
        let mut writer: Writer<Pod> = Writer::default();
        let store = writer.as_reader();
        writer.apply_watcher_event(&Event::Init);
        for p in [
            pod("a", "web-2", "web"),
            pod("a", "web-1", "web"),
            pod("a", "db-1", "db"),
            pod("b", "web-3", "web"),
        ] {
            writer.apply_watcher_event(&Event::InitApply(p).modify(trim));
        }
        writer.apply_watcher_event(&Event::InitDone);
        let source = PodSource::Cache(store);
        let client = Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap()))
            .expect("a client that is never called");
        let names = |pods: Vec<Pod>| -> Vec<String> {
            pods.into_iter().map(|p| p.metadata.name.unwrap()).collect()
        };
        let got = source.list(&client, "a", "app=web").await.unwrap();
        assert!(
            got.iter()
                .all(|p| p.metadata.annotations.as_ref().is_none_or(|a| a.is_empty()))
        );
        assert_eq!(names(got), ["web-1", "web-2"]);
        assert_eq!(
            names(source.list(&client, "a", "app in (web,db)").await.unwrap()),
            ["db-1", "web-1", "web-2"]
        );
        assert_eq!(
            names(source.list(&client, "b", "").await.unwrap()),
            ["web-3"]
        );
        assert!(source.list(&client, "a", "!!bad").await.unwrap().is_empty());
    }
}
