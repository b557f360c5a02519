//! The stub's memory: one control document per namespace, request counts and times per namespace,
//! and the clock that stamps `creationTimestamp` and requests (fixed in tests).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time as KubeTime;
use k8s_openapi::jiff::Timestamp;

use crate::control::{ControlDocument, REQUEST_TIMES_KEPT, RequestCounts, RequestTimes};

/// Where "now" comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The system clock.
    System,
    /// A fixed instant.
    Fixed(Timestamp),
}

impl Clock {
    /// The current instant.
    pub fn now(&self) -> KubeTime {
        match self {
            Clock::System => {
                let since_epoch = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                let micros = i64::try_from(since_epoch.as_micros()).unwrap_or(i64::MAX);
                KubeTime(Timestamp::from_microsecond(micros).unwrap_or(Timestamp::MAX))
            }
            Clock::Fixed(t) => KubeTime(*t),
        }
    }
}

/// Documents and counters, shared by all connections.
#[derive(Debug)]
pub struct Store {
    docs: RwLock<BTreeMap<String, Arc<ControlDocument>>>,
    counts: Mutex<BTreeMap<String, BTreeMap<String, u64>>>,
    times: Mutex<BTreeMap<String, VecDeque<i64>>>,
    clock: Clock,
}

impl Store {
    /// An empty store.
    pub fn new(clock: Clock) -> Self {
        Store {
            docs: RwLock::new(BTreeMap::new()),
            counts: Mutex::new(BTreeMap::new()),
            times: Mutex::new(BTreeMap::new()),
            clock,
        }
    }

    /// The current instant.
    pub fn now(&self) -> KubeTime {
        self.clock.now()
    }

    /// The namespace's document.
    pub fn get(&self, namespace: &str) -> Option<Arc<ControlDocument>> {
        self.docs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(namespace)
            .cloned()
    }

    /// Replaces the namespace's document; whether one was there.
    pub fn put(&self, namespace: &str, doc: ControlDocument) -> bool {
        self.docs
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(namespace.to_string(), Arc::new(doc))
            .is_some()
    }

    /// Removes the namespace's document (and its request counts); the document, if any.
    pub fn delete(&self, namespace: &str) -> Option<Arc<ControlDocument>> {
        self.reset_counts(namespace);
        self.docs
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(namespace)
    }

    /// The namespaces that have a document, sorted.
    pub fn namespaces(&self) -> Vec<String> {
        self.docs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    /// All documents, by namespace.
    pub fn all(&self) -> Vec<(String, Arc<ControlDocument>)> {
        self.docs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Counts one request of a namespace, and keeps its instant.
    pub fn count(&self, namespace: &str, target: &str) {
        let at = self.clock.now().0.as_millisecond();
        {
            let mut times = self.times.lock().unwrap_or_else(PoisonError::into_inner);
            let kept = times.entry(namespace.to_string()).or_default();
            if kept.len() == REQUEST_TIMES_KEPT {
                kept.pop_front();
            }
            kept.push_back(at);
        }
        *self
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(namespace.to_string())
            .or_default()
            .entry(target.to_string())
            .or_default() += 1;
    }

    /// The namespace's request counts.
    pub fn counts(&self, namespace: &str) -> RequestCounts {
        RequestCounts {
            requests: self
                .counts
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(namespace)
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// The last request instants of every namespace.
    pub fn times(&self) -> RequestTimes {
        RequestTimes {
            namespaces: self
                .times
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .map(|(ns, t)| (ns.clone(), t.iter().copied().collect()))
                .collect(),
        }
    }

    /// Forgets the namespace's request counts and times.
    pub fn reset_counts(&self, namespace: &str) {
        self.times
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(namespace);
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(namespace);
    }
}
