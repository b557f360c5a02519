//! client-go's event correlator (`tools/record/events_cache.go`), which kube-controller-manager's
//! legacy event recorder runs every event through before it writes it. Pure: it reads no clock
//! (the caller passes `now`) and does no IO (it says what to write).
//!
//! In order, per event:
//!
//! 1. **Aggregation.** Events alike but for their message (same source, involved object, type,
//!    reason, reporting controller and instance) are grouped. Once 10 distinct messages of a
//!    group were seen with no gap longer than 10 minutes, the event is replaced by a new one
//!    whose message is `(combined from similar events): <message>`, correlated by the group's key
//!    from then on (so later ones update it).
//! 2. **Deduplication.** An event identical to one seen before (same source, involved object,
//!    type, reason and message) becomes an update of that Event: the same name, its
//!    `firstTimestamp`, `count` + 1, and a patch of `count`, `lastTimestamp` and `message`.
//! 3. **Spam filter.** Each source and involved object has a token bucket of 25 events refilled
//!    at one per 5 minutes; an event without a token is dropped (after step 2 counted it).
//!
//! All three remember at most 4096 keys, least recently used first out.

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;
use std::time::Duration;

use k8s_openapi::api::core::v1::Event as KubeEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time as KubeTime};
use serde_json::{Value, json};

use crate::time::Time;
use crate::time::kube_time;

/// The correlator's limits; the defaults are client-go's.
#[derive(Debug, Clone, PartialEq)]
pub struct CorrelatorOptions {
    /// Keys each cache remembers (4096).
    pub cache_size: usize,
    /// Events a source may write about one object at once (25).
    pub spam_burst: u32,
    /// The rate the spam filter's tokens come back at, per second (1/300, as a Go `float32`).
    pub spam_qps: f64,
    /// Distinct messages of a group before its events are aggregated (10).
    pub aggregate_max_events: usize,
    /// The longest gap between events of a group that keeps it together (10 minutes).
    pub aggregate_interval: Duration,
}

impl Default for CorrelatorOptions {
    fn default() -> Self {
        CorrelatorOptions {
            cache_size: 4096,
            spam_burst: 25,
            spam_qps: f64::from(1.0f32 / 300.0),
            aggregate_max_events: 10,
            aggregate_interval: Duration::from_secs(600),
        }
    }
}

impl CorrelatorOptions {
    /// Repeats are still patched into one Event, but nothing is aggregated or dropped: every
    /// event is written with its own message (for checking the writes against the events
    /// recorded).
    pub fn every_event() -> Self {
        CorrelatorOptions {
            spam_burst: u32::MAX,
            aggregate_max_events: usize::MAX,
            ..CorrelatorOptions::default()
        }
    }
}

/// What to write for one event.
#[derive(Debug, Clone, PartialEq)]
pub enum Correlated {
    /// Create this Event.
    Create(KubeEvent),
    /// Patch the Event named in `event` with `patch` (a strategic merge patch); `event` is the
    /// whole updated Event, to create instead if the old one is gone.
    Patch {
        /// The updated Event.
        event: KubeEvent,
        /// `{"count", "lastTimestamp", "message"}`.
        patch: Value,
    },
    /// Drop it: the spam filter has no token for it.
    Skip,
}

/// A bounded map that forgets the least recently used key first.
#[derive(Debug, Clone)]
struct Lru<K, V> {
    capacity: usize,
    tick: u64,
    entries: HashMap<K, (V, u64)>,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    fn new(capacity: usize) -> Self {
        Lru {
            capacity: capacity.max(1),
            tick: 0,
            entries: HashMap::new(),
        }
    }

    fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.tick += 1;
        let tick = self.tick;
        self.entries.get_mut(key).map(|(v, used)| {
            *used = tick;
            v
        })
    }

    fn insert(&mut self, key: K, value: V) {
        self.tick += 1;
        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.entries.remove(&k);
            }
        }
        self.entries.insert(key, (value, self.tick));
    }

    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// A group of similar events.
#[derive(Debug, Clone)]
struct Aggregate {
    messages: BTreeSet<String>,
    last: Time,
}

/// What was last written for an event.
#[derive(Debug, Clone, PartialEq)]
struct Observation {
    count: i32,
    first_timestamp: Option<KubeTime>,
    name: String,
}

/// A token bucket (golang.org/x/time/rate's limiter, full at the start).
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    last: Time,
}

impl Bucket {
    fn try_take(&mut self, now: Time, burst: f64, qps: f64) -> bool {
        let since = now.as_micros().saturating_sub(self.last.as_micros()).max(0);
        let tokens = (self.tokens + since as f64 / 1e6 * qps).min(burst);
        if tokens >= 1.0 {
            self.tokens = tokens - 1.0;
            self.last = now;
            true
        } else {
            false
        }
    }
}

fn text(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or_default()
}

/// The source and involved object of an event, as client-go keys them.
fn object_key(e: &KubeEvent, with_field_path: bool) -> String {
    let source = e.source.clone().unwrap_or_default();
    let o = &e.involved_object;
    let mut parts = vec![
        text(&source.component),
        text(&source.host),
        text(&o.kind),
        text(&o.namespace),
        text(&o.name),
    ];
    if with_field_path {
        parts.push(text(&o.field_path));
    }
    parts.push(text(&o.uid));
    parts.push(text(&o.api_version));
    parts.concat()
}

/// The key of an exact repeat: source, involved object, type, reason and message.
fn event_key(e: &KubeEvent) -> String {
    [
        object_key(e, true).as_str(),
        text(&e.type_),
        text(&e.reason),
        text(&e.message),
    ]
    .concat()
}

/// The key of a group of similar events (all but the message).
fn aggregate_key(e: &KubeEvent) -> String {
    [
        object_key(e, false).as_str(),
        text(&e.type_),
        text(&e.reason),
        text(&e.reporting_component),
        text(&e.reporting_instance),
    ]
    .concat()
}

/// The message of an aggregated event.
pub const COMBINED_PREFIX: &str = "(combined from similar events): ";

/// client-go's `EventCorrelator`.
#[derive(Debug, Clone)]
pub struct Correlator {
    options: CorrelatorOptions,
    aggregates: Lru<String, Aggregate>,
    observed: Lru<String, Observation>,
    spam: Lru<String, Bucket>,
}

impl Default for Correlator {
    fn default() -> Self {
        Correlator::new(CorrelatorOptions::default())
    }
}

impl Correlator {
    /// A correlator with these limits.
    pub fn new(options: CorrelatorOptions) -> Self {
        Correlator {
            aggregates: Lru::new(options.cache_size),
            observed: Lru::new(options.cache_size),
            spam: Lru::new(options.cache_size),
            options,
        }
    }

    /// What to write for `event` (a new Event with `count` 1) at `now`. `name_at` names an
    /// aggregated event (`<object>.<hex nanoseconds>`, like every new Event).
    pub fn correlate(
        &mut self,
        event: KubeEvent,
        now: Time,
        name_at: impl FnOnce(Time) -> String,
    ) -> Correlated {
        let (mut event, key) = self.aggregate(event, now, name_at);
        let patch = self.observe(&mut event, &key);
        if !self.spam_token(&event, now) {
            return Correlated::Skip;
        }
        match patch {
            Some(patch) => Correlated::Patch { event, patch },
            None => Correlated::Create(event),
        }
    }

    /// Remembers what the API server returned for a written Event.
    pub fn written(&mut self, event: &KubeEvent) {
        self.observed.insert(
            event_key(event),
            Observation {
                count: event.count.unwrap_or(0),
                first_timestamp: event.first_timestamp.clone(),
                name: event.metadata.name.clone().unwrap_or_default(),
            },
        );
    }

    fn aggregate(
        &mut self,
        event: KubeEvent,
        now: Time,
        name_at: impl FnOnce(Time) -> String,
    ) -> (KubeEvent, String) {
        let group = aggregate_key(&event);
        let message = event.message.clone().unwrap_or_default();
        let interval =
            i64::try_from(self.options.aggregate_interval.as_micros()).unwrap_or(i64::MAX);
        let fresh = || Aggregate {
            messages: BTreeSet::new(),
            last: now,
        };
        let mut record = match self.aggregates.get_mut(&group) {
            Some(r) if now.as_micros().saturating_sub(r.last.as_micros()) <= interval => r.clone(),
            _ => fresh(),
        };
        record.messages.insert(message.clone());
        record.last = now;
        let seen = record.messages.len();
        if seen >= self.options.aggregate_max_events {
            // Keep the set from growing past the limit (client-go drops any one).
            record.messages.pop_first();
        }
        self.aggregates.insert(group.clone(), record);
        if seen < self.options.aggregate_max_events {
            let key = event_key(&event);
            return (event, key);
        }
        let at = kube_time(now);
        let combined = KubeEvent {
            metadata: ObjectMeta {
                name: Some(name_at(now)),
                namespace: event.metadata.namespace.clone(),
                ..ObjectMeta::default()
            },
            count: Some(1),
            first_timestamp: Some(at.clone()),
            last_timestamp: Some(at),
            involved_object: event.involved_object.clone(),
            message: Some(format!("{COMBINED_PREFIX}{message}")),
            type_: event.type_.clone(),
            reason: event.reason.clone(),
            source: event.source.clone(),
            ..KubeEvent::default()
        };
        (combined, group)
    }

    /// Turns a repeat into an update of the first occurrence; returns the patch for it.
    fn observe(&mut self, event: &mut KubeEvent, key: &str) -> Option<Value> {
        let key = key.to_string();
        let last = self.observed.get_mut(&key).filter(|o| o.count > 0).cloned();
        let patch = last.map(|last| {
            event.metadata.name = Some(last.name);
            event.first_timestamp = last.first_timestamp;
            event.count = Some(last.count.saturating_add(1));
            let mut patch = json!({
                "count": event.count,
                "lastTimestamp": event.last_timestamp,
            });
            if !text(&event.message).is_empty() {
                patch["message"] = json!(event.message);
            }
            patch
        });
        self.observed.insert(
            key,
            Observation {
                count: event.count.unwrap_or(0),
                first_timestamp: event.first_timestamp.clone(),
                name: event.metadata.name.clone().unwrap_or_default(),
            },
        );
        patch
    }

    fn spam_token(&mut self, event: &KubeEvent, now: Time) -> bool {
        let key = object_key(event, false);
        let burst = f64::from(self.options.spam_burst);
        let mut bucket = self.spam.get_mut(&key).copied().unwrap_or(Bucket {
            tokens: burst,
            last: now,
        });
        let ok = bucket.try_take(now, burst, self.options.spam_qps);
        self.spam.insert(key, bucket);
        ok
    }

    /// How many repeats keys are remembered (for tests of the bound).
    pub fn remembered(&self) -> usize {
        self.observed.len()
    }
}

#[cfg(test)]
mod tests;
