//! The stub's memory: one control document per namespace, request counts and times per namespace,
//! and the clock that stamps `creationTimestamp` and requests (fixed in tests).
//!
//! Everything it keeps is bounded ([`Caps`]; what a client asks beyond a cap is refused with a
//! clear error, before anything is allocated for it):
//! - at most 10,000 namespaces have a document (`429` beyond);
//! - a document is at most 4 MiB of JSON and weighs at most 8 MiB (`413` beyond);
//! - all documents together weigh at most 64 MiB (`429` beyond). A document's *weight*
//!   ([`weight`]) bounds the memory its parsed form takes, computed from the JSON text before it
//!   is parsed: its bytes, plus 320 per `{` (a map's first node) and 48 per `,` or `[`;
//! - request counts and instants are kept only for namespaces that have a document (a request for
//!   any other namespace is answered and not recorded), at most 256 distinct request targets of
//!   at most 1 KiB each per namespace — further targets are counted together under
//!   [`OVERFLOW_TARGET`] (a metric request is never refused for bookkeeping: the API server asks
//!   on the HPA controller's behalf) — and the last 256 request instants per namespace;
//! - the scale updates its admission webhook refused, counted per scale fault of a document (so
//!   bounded by the documents).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time as KubeTime;
use k8s_openapi::jiff::Timestamp;

use crate::control::{
    ControlDocument, REQUEST_TIMES_KEPT, RequestCounts, RequestTimes, ScaleFault,
};

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

/// What the stub keeps at most (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Namespaces that have a document.
    pub max_namespaces: usize,
    /// The bytes of one document (the request body).
    pub max_document_bytes: usize,
    /// The [`weight`] of one document.
    pub max_document_weight: usize,
    /// The [`weight`] of all documents together.
    pub max_total_weight: usize,
    /// Distinct request targets counted by name per namespace.
    pub max_counted_targets: usize,
    /// The longest request target counted by name.
    pub max_target_bytes: usize,
}

impl Caps {
    /// The stub's.
    pub const DEFAULT: Caps = Caps {
        max_namespaces: 10_000,
        max_document_bytes: 4 << 20,
        max_document_weight: 8 << 20,
        max_total_weight: 64 << 20,
        max_counted_targets: 256,
        max_target_bytes: 1024,
    };
}

impl Default for Caps {
    fn default() -> Caps {
        Caps::DEFAULT
    }
}

/// The key under which requests beyond a namespace's counted targets (or with a target longer
/// than the cap) are counted.
pub const OVERFLOW_TARGET: &str = "(other targets: over the cap)";

/// A control document refused by a cap.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapError {
    /// The body is larger than [`Caps::max_document_bytes`].
    #[error("the control document has more than the cap of {max} bytes")]
    DocumentBytes {
        /// The cap.
        max: usize,
    },
    /// The document weighs more than [`Caps::max_document_weight`].
    #[error(
        "the control document weighs {weight} (bytes, plus 320 per '{{' and 48 per ',' or '['), over the cap of {max}"
    )]
    DocumentWeight {
        /// Its weight.
        weight: usize,
        /// The cap.
        max: usize,
    },
    /// Storing it would exceed [`Caps::max_total_weight`].
    #[error(
        "storing this document would make the documents weigh {total}, over the cap of {max}: delete the documents of namespaces no longer used"
    )]
    TotalWeight {
        /// The total it would make.
        total: usize,
        /// The cap.
        max: usize,
    },
    /// Every namespace slot is taken.
    #[error(
        "{max} namespaces already have a document (the cap): delete the documents of namespaces no longer used"
    )]
    Namespaces {
        /// The cap.
        max: usize,
    },
}

impl CapError {
    /// The HTTP status it is answered with: 413 for a document too large by itself, 429 for a
    /// store that is full.
    pub fn http_status(&self) -> u16 {
        match self {
            CapError::DocumentBytes { .. } | CapError::DocumentWeight { .. } => 413,
            CapError::TotalWeight { .. } | CapError::Namespaces { .. } => 429,
        }
    }

    /// The `metav1.Status` reason of [`CapError::http_status`].
    pub fn reason(&self) -> &'static str {
        match self.http_status() {
            413 => "RequestEntityTooLarge",
            _ => "TooManyRequests",
        }
    }
}

/// A bound on the memory a JSON document takes once parsed, computed from its text: its bytes,
/// plus 320 per `{` (an object: a map's first B-tree node, or a struct in a list) and 48 per `,`
/// or `[` (an entry's key and slot) outside strings.
pub fn weight(json: &[u8]) -> usize {
    let (mut in_string, mut escaped) = (false, false);
    let mut weight = json.len();
    for &b in json {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        weight += match b {
            b'"' => {
                in_string = true;
                0
            }
            b'{' => 320,
            b',' | b'[' => 48,
            _ => 0,
        };
    }
    weight
}

/// A stored document and its weight.
#[derive(Debug)]
struct Stored {
    doc: Arc<ControlDocument>,
    weight: usize,
}

#[derive(Debug, Default)]
struct Inner {
    docs: BTreeMap<String, Stored>,
    total_weight: usize,
    counts: BTreeMap<String, BTreeMap<String, u64>>,
    times: BTreeMap<String, VecDeque<i64>>,
    /// Scale updates refused, per namespace and scale target, with the fault they were refused
    /// for (another fault starts the count again).
    denied: BTreeMap<String, BTreeMap<String, (ScaleFault, u32)>>,
}

/// Documents and counters, shared by all connections (one lock: every critical section is a few
/// map operations).
#[derive(Debug)]
pub struct Store {
    inner: Mutex<Inner>,
    caps: Caps,
    clock: Clock,
}

impl Store {
    /// An empty store within [`Caps::DEFAULT`].
    pub fn new(clock: Clock) -> Self {
        Store::with_caps(clock, Caps::DEFAULT)
    }

    /// An empty store within `caps`.
    pub fn with_caps(clock: Clock, caps: Caps) -> Self {
        Store {
            inner: Mutex::new(Inner::default()),
            caps,
            clock,
        }
    }

    /// Its caps.
    pub fn caps(&self) -> Caps {
        self.caps
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current instant.
    pub fn now(&self) -> KubeTime {
        self.clock.now()
    }

    /// The namespace's document.
    pub fn get(&self, namespace: &str) -> Option<Arc<ControlDocument>> {
        self.lock().docs.get(namespace).map(|s| s.doc.clone())
    }

    /// Whether a document of `bytes` and `weight` may replace the namespace's document now: the
    /// check made before the body is parsed (so a refused document is never built).
    pub fn admit(&self, namespace: &str, bytes: usize, weight: usize) -> Result<(), CapError> {
        let caps = self.caps;
        if bytes > caps.max_document_bytes {
            return Err(CapError::DocumentBytes {
                max: caps.max_document_bytes,
            });
        }
        if weight > caps.max_document_weight {
            return Err(CapError::DocumentWeight {
                weight,
                max: caps.max_document_weight,
            });
        }
        let inner = self.lock();
        let replaced = inner.docs.get(namespace).map(|s| s.weight);
        if replaced.is_none() && inner.docs.len() >= caps.max_namespaces {
            return Err(CapError::Namespaces {
                max: caps.max_namespaces,
            });
        }
        let total = inner.total_weight - replaced.unwrap_or(0) + weight;
        if total > caps.max_total_weight {
            return Err(CapError::TotalWeight {
                total,
                max: caps.max_total_weight,
            });
        }
        Ok(())
    }

    /// Replaces the namespace's document of `weight` (checked again, as another request may
    /// have filled the store since [`Store::admit`]); whether one was there.
    pub fn put(
        &self,
        namespace: &str,
        doc: ControlDocument,
        bytes: usize,
        weight: usize,
    ) -> Result<bool, CapError> {
        self.admit(namespace, bytes, weight)?;
        let mut inner = self.lock();
        // Checked again under this lock: another PUT may have been stored in between.
        let replaced = inner.docs.get(namespace).map(|s| s.weight);
        if replaced.is_none() && inner.docs.len() >= self.caps.max_namespaces {
            return Err(CapError::Namespaces {
                max: self.caps.max_namespaces,
            });
        }
        let total = inner.total_weight - replaced.unwrap_or(0) + weight;
        if total > self.caps.max_total_weight {
            return Err(CapError::TotalWeight {
                total,
                max: self.caps.max_total_weight,
            });
        }
        inner.total_weight = total;
        let stored = Stored {
            doc: Arc::new(doc),
            weight,
        };
        Ok(inner.docs.insert(namespace.to_string(), stored).is_some())
    }

    /// Removes the namespace's document (and its request counts); the document, if any.
    pub fn delete(&self, namespace: &str) -> Option<Arc<ControlDocument>> {
        let mut inner = self.lock();
        inner.counts.remove(namespace);
        inner.times.remove(namespace);
        inner.denied.remove(namespace);
        let stored = inner.docs.remove(namespace)?;
        inner.total_weight -= stored.weight;
        Some(stored.doc)
    }

    /// The namespaces that have a document, sorted.
    pub fn namespaces(&self) -> Vec<String> {
        self.lock().docs.keys().cloned().collect()
    }

    /// All documents, by namespace.
    pub fn all(&self) -> Vec<(String, Arc<ControlDocument>)> {
        self.lock()
            .docs
            .iter()
            .map(|(k, v)| (k.clone(), v.doc.clone()))
            .collect()
    }

    /// The weight of all documents.
    pub fn total_weight(&self) -> usize {
        self.lock().total_weight
    }

    /// Counts one request of a namespace that has a document, and keeps its instant (a
    /// namespace without one is not recorded).
    pub fn count(&self, namespace: &str, target: &str) {
        let at = self.clock.now().0.as_millisecond();
        let caps = self.caps;
        let mut guard = self.lock();
        let inner = &mut *guard;
        if !inner.docs.contains_key(namespace) {
            return;
        }
        let kept = inner.times.entry(namespace.to_string()).or_default();
        if kept.len() >= REQUEST_TIMES_KEPT {
            kept.pop_front();
        }
        kept.push_back(at);
        let counts = inner.counts.entry(namespace.to_string()).or_default();
        let key = if counts.contains_key(target)
            || (counts.len() < caps.max_counted_targets && target.len() <= caps.max_target_bytes)
        {
            target
        } else {
            OVERFLOW_TARGET
        };
        match counts.get_mut(key) {
            Some(n) => *n += 1,
            None => {
                counts.insert(key.to_string(), 1);
            }
        }
    }

    /// Whether an update of `name`'s scale in `namespace` is refused now: the fault of the
    /// namespace's document for that object while it has refused fewer than its
    /// `updateFailures` (every update without it). A refusal is counted; a fault that differs
    /// from the one counted for (its `armedAt` included) starts the count again.
    pub fn refuse_scale_update(&self, namespace: &str, name: &str) -> Option<ScaleFault> {
        let mut guard = self.lock();
        let inner = &mut *guard;
        let fault = inner.docs.get(namespace)?.doc.scale.get(name)?.clone();
        let counted = inner
            .denied
            .entry(namespace.to_string())
            .or_default()
            .entry(name.to_string())
            .or_insert_with(|| (fault.clone(), 0));
        if counted.0 != fault {
            *counted = (fault.clone(), 0);
        }
        if fault.update_failures.is_some_and(|n| counted.1 >= n) {
            return None;
        }
        counted.1 = counted.1.saturating_add(1);
        Some(fault)
    }

    /// What [`Store::refuse_scale_update`] would answer now, counting nothing (a dry run).
    pub fn would_refuse_scale_update(&self, namespace: &str, name: &str) -> Option<ScaleFault> {
        let inner = self.lock();
        let fault = inner.docs.get(namespace)?.doc.scale.get(name)?.clone();
        let used = inner
            .denied
            .get(namespace)
            .and_then(|d| d.get(name))
            .filter(|(counted, _)| *counted == fault)
            .map_or(0, |(_, n)| *n);
        if fault.update_failures.is_some_and(|n| used >= n) {
            return None;
        }
        Some(fault)
    }

    /// The namespace's request counts.
    pub fn counts(&self, namespace: &str) -> RequestCounts {
        RequestCounts {
            requests: self
                .lock()
                .counts
                .get(namespace)
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// The last request instants of every namespace.
    pub fn times(&self) -> RequestTimes {
        RequestTimes {
            namespaces: self
                .lock()
                .times
                .iter()
                .map(|(ns, t)| (ns.clone(), t.iter().copied().collect()))
                .collect(),
        }
    }

    /// Forgets the namespace's request counts and times.
    pub fn reset_counts(&self, namespace: &str) {
        let mut inner = self.lock();
        inner.times.remove(namespace);
        inner.counts.remove(namespace);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(caps: Caps) -> Store {
        Store::with_caps(Clock::Fixed(Timestamp::from_second(0).unwrap()), caps)
    }

    fn put(s: &Store, ns: &str, json: &str) -> Result<bool, CapError> {
        let bytes = json.as_bytes();
        s.admit(ns, bytes.len(), weight(bytes))?;
        let doc: ControlDocument = serde_json::from_str(json).unwrap();
        s.put(ns, doc, bytes.len(), weight(bytes))
    }

    const SMALL: &str = r#"{"pods": {"a": {"app": "web"}}}"#;

    #[test]
    fn weight_counts_structure_outside_strings() {
        assert_eq!(weight(b"{}"), 2 + 320);
        assert_eq!(weight(br#"{"a":[1,2]}"#), 11 + 320 + 48 + 48);
        // Braces, commas and escaped quotes inside strings are text.
        assert_eq!(weight(br#"{"{,[\"{":1}"#), 12 + 320);
        assert_eq!(weight(SMALL.as_bytes()), SMALL.len() + 3 * 320);
    }

    #[test]
    fn the_namespace_cap_refuses_one_more_namespace_but_not_a_replacement() {
        let s = store(Caps {
            max_namespaces: 2,
            ..Caps::DEFAULT
        });
        assert_eq!(put(&s, "a", SMALL), Ok(false));
        assert_eq!(put(&s, "b", SMALL), Ok(false));
        let refused = put(&s, "c", SMALL).unwrap_err();
        assert_eq!(refused, CapError::Namespaces { max: 2 });
        assert_eq!(refused.http_status(), 429);
        assert_eq!(
            put(&s, "b", SMALL),
            Ok(true),
            "a replacement takes no new slot"
        );
        s.delete("a");
        assert_eq!(put(&s, "c", SMALL), Ok(false), "a deletion frees a slot");
        assert_eq!(s.namespaces(), ["b", "c"]);
    }

    #[test]
    fn the_document_caps_refuse_a_document_too_large_by_itself() {
        let s = store(Caps {
            max_document_bytes: 64,
            max_document_weight: 1000,
            ..Caps::DEFAULT
        });
        let long = format!(r#"{{"pods": {{"{}": {{}}}}}}"#, "p".repeat(60));
        let e = put(&s, "a", &long).unwrap_err();
        assert_eq!(e, CapError::DocumentBytes { max: 64 });
        assert_eq!(e.http_status(), 413);
        // Small in bytes, heavy in structure: four maps.
        let heavy = r#"{"pods": {"a": {}, "b": {}}}"#;
        let e = put(&s, "a", heavy).unwrap_err();
        assert!(
            matches!(e, CapError::DocumentWeight { max: 1000, .. }),
            "{e}"
        );
        assert_eq!(e.http_status(), 413);
        assert!(s.namespaces().is_empty());
    }

    #[test]
    fn the_total_weight_cap_refuses_what_does_not_fit_and_tracks_replacements() {
        let w = weight(SMALL.as_bytes());
        let s = store(Caps {
            max_total_weight: 2 * w,
            ..Caps::DEFAULT
        });
        put(&s, "a", SMALL).unwrap();
        put(&s, "b", SMALL).unwrap();
        let e = put(&s, "c", SMALL).unwrap_err();
        assert_eq!(
            e,
            CapError::TotalWeight {
                total: 3 * w,
                max: 2 * w
            }
        );
        assert_eq!(e.http_status(), 429);
        assert!(e.to_string().contains("delete the documents"), "{e}");
        // Replacing a document counts its weight once.
        put(&s, "b", SMALL).unwrap();
        assert_eq!(s.total_weight(), 2 * w);
        s.delete("b");
        assert_eq!(s.total_weight(), w);
        put(&s, "c", SMALL).unwrap();
    }

    #[test]
    fn scale_updates_are_refused_as_many_times_as_the_fault_says() {
        let s = store(Caps::DEFAULT);
        let once = r#"{"scale": {"web": {"updateError": "no", "updateFailures": 2}}}"#;
        put(&s, "a", once).unwrap();
        assert_eq!(s.refuse_scale_update("b", "web"), None, "no document");
        assert_eq!(s.refuse_scale_update("a", "db"), None, "another object");
        assert_eq!(
            s.refuse_scale_update("a", "web").unwrap().update_error,
            "no"
        );
        // The same fault put again (a new tick's document) keeps the count.
        put(&s, "a", once).unwrap();
        assert!(s.refuse_scale_update("a", "web").is_some());
        assert_eq!(
            s.refuse_scale_update("a", "web"),
            None,
            "two refused: through"
        );
        // Armed again: counted afresh.
        put(
            &s,
            "a",
            r#"{"scale": {"web": {"updateError": "no", "updateFailures": 2, "armedAt": 30}}}"#,
        )
        .unwrap();
        assert!(s.refuse_scale_update("a", "web").is_some());
        // Without updateFailures every update is refused; a document without the fault, none.
        put(&s, "a", r#"{"scale": {"web": {"updateError": "no"}}}"#).unwrap();
        for _ in 0..5 {
            assert!(s.refuse_scale_update("a", "web").is_some());
        }
        put(&s, "a", SMALL).unwrap();
        assert_eq!(s.refuse_scale_update("a", "web"), None);
        // Deleting the namespace forgets its counts.
        put(&s, "a", once).unwrap();
        assert!(s.refuse_scale_update("a", "web").is_some());
        s.delete("a");
        put(&s, "a", once).unwrap();
        assert!(s.refuse_scale_update("a", "web").is_some());
        assert!(s.refuse_scale_update("a", "web").is_some());
        assert_eq!(s.refuse_scale_update("a", "web"), None);
    }

    #[test]
    fn requests_are_recorded_only_for_documented_namespaces_and_within_the_target_cap() {
        let s = store(Caps {
            max_counted_targets: 2,
            max_target_bytes: 16,
            ..Caps::DEFAULT
        });
        for i in 0..100 {
            s.count(&format!("invented-{i}"), "/x");
        }
        assert!(s.times().namespaces.is_empty(), "no document, nothing kept");
        assert!(s.counts("invented-1").requests.is_empty());

        put(&s, "a", SMALL).unwrap();
        s.count("a", "/one");
        s.count("a", "/two");
        s.count("a", "/one");
        for i in 0..50 {
            s.count("a", &format!("/unique?{i}"));
        }
        s.count("a", &"/long".repeat(10));
        let counts = s.counts("a").requests;
        assert_eq!(counts.len(), 3, "{counts:?}");
        assert_eq!(counts["/one"], 2);
        assert_eq!(counts["/two"], 1);
        assert_eq!(counts[OVERFLOW_TARGET], 51);
        for _ in 0..(2 * REQUEST_TIMES_KEPT) {
            s.count("a", "/one");
        }
        assert_eq!(s.times().namespaces["a"].len(), REQUEST_TIMES_KEPT);
        s.delete("a");
        assert!(s.counts("a").requests.is_empty());
        assert!(s.times().namespaces.is_empty());
    }
}
