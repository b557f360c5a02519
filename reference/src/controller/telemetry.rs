//! Prometheus metrics of the controller (served on `/metrics`): reconciles, errors, reconcile
//! latency, HPAs tracked.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The controller's metrics and their registry.
pub struct ControllerMetrics {
    registry: Registry,
    reconciles: Counter,
    errors: Counter,
    latency: Histogram,
    tracked: Gauge,
    keys: Mutex<HashSet<String>>,
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("hpa_reference");
        let reconciles = Counter::default();
        let errors = Counter::default();
        let latency = Histogram::new(exponential_buckets(0.0005, 2.0, 14));
        let tracked = Gauge::default();
        registry.register("reconciles", "Reconciles of HPAs", reconciles.clone());
        registry.register(
            "reconcile_errors",
            "Reconciles that reported an error",
            errors.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Time of one reconcile, API calls included",
            latency.clone(),
        );
        registry.register(
            "hpas_tracked",
            "HPAs the controller has reconciled",
            tracked.clone(),
        );
        ControllerMetrics {
            registry,
            reconciles,
            errors,
            latency,
            tracked,
            keys: Mutex::new(HashSet::new()),
        }
    }
}

impl ControllerMetrics {
    /// Records one reconcile.
    pub fn observe(&self, key: &str, took: Duration, failed: bool) {
        self.reconciles.inc();
        if failed {
            self.errors.inc();
        }
        self.latency.observe(took.as_secs_f64());
        if let Ok(mut keys) = self.keys.lock()
            && keys.insert(key.to_string())
        {
            self.tracked.set(keys.len() as i64);
        }
    }

    /// Forgets an HPA that was deleted.
    pub fn forget(&self, key: &str) {
        if let Ok(mut keys) = self.keys.lock()
            && keys.remove(key)
        {
            self.tracked.set(keys.len() as i64);
        }
    }

    /// The OpenMetrics text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}
