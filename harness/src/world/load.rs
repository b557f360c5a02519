//! The load model: what each metric reads, per pod and container or in total, as the timeline
//! sets it, and the metrics errors it injects.

use hpa_reference::metrics_api::{RequestFor, generic_response_message};

use super::{LoadRule, MetricKind, World, q};
use crate::case::model::Load;

impl World {
    pub(super) fn apply_load(&mut self, l: &Load) {
        let kind = self
            .kinds
            .get(&l.metric)
            .cloned()
            .unwrap_or(MetricKind::Pods);
        let rule = if let Some(v) = &l.total {
            LoadRule::Total(q(v))
        } else if let Some(v) = l.per_pod.as_ref().or(l.value.as_ref()) {
            LoadRule::PerPod(q(v))
        } else if let Some(vs) = &l.pods {
            LoadRule::Explicit(vs.iter().map(|v| q(v)).collect())
        } else {
            LoadRule::Explicit(Vec::new())
        };
        let written = l
            .series
            .clone()
            .or_else(|| l.value.clone().map(|v| vec![v]));
        match written.filter(|_| l.as_written) {
            Some(w) => self.written.insert(l.metric.clone(), w),
            None => self.written.remove(&l.metric),
        };
        match kind {
            MetricKind::Resource | MetricKind::ContainerResource(_) => {
                let container = l.container.clone().unwrap_or_else(|| match &kind {
                    MetricKind::ContainerResource(c) => c.clone(),
                    _ => self
                        .containers
                        .first()
                        .map(|c| c.name.clone())
                        .unwrap_or_default(),
                });
                self.resource_loads
                    .insert((l.metric.clone(), container), rule);
            }
            MetricKind::Pods => {
                self.custom_loads.insert(l.metric.clone(), rule);
            }
            MetricKind::Object => {
                let v = l.value.as_ref().or(l.total.as_ref()).or(l.per_pod.as_ref());
                self.object_values
                    .insert(l.metric.clone(), v.map(|v| q(v)).unwrap_or(0));
            }
            MetricKind::External => {
                let series = match (&l.series, l.value.as_ref().or(l.total.as_ref())) {
                    (Some(s), _) => s.iter().map(|v| q(v)).collect(),
                    (None, Some(v)) => vec![q(v)],
                    _ => Vec::new(),
                };
                self.external_series.insert(l.metric.clone(), series);
            }
        }
    }

    /// How client-go reports the API of a metric answering `404 page not found` (not registered).
    pub(super) fn unregistered_error(&self, key: &str) -> String {
        let req = match self.kinds.get(key) {
            Some(MetricKind::External) => RequestFor {
                group: "external.metrics.k8s.io",
                resource: key,
                name: "",
            },
            _ => RequestFor {
                group: "metrics.k8s.io",
                resource: "pods",
                name: "",
            },
        };
        generic_response_message(404, "404 page not found", req)
    }

    pub(super) fn rule_value(&self, rule: Option<&LoadRule>, idx: usize, serving: &[usize]) -> i64 {
        match rule {
            None => 0,
            Some(LoadRule::PerPod(v)) => *v,
            Some(LoadRule::Explicit(vs)) => vs.get(idx).copied().unwrap_or(0),
            Some(LoadRule::Total(total)) => match serving.iter().position(|i| *i == idx) {
                None => 0,
                Some(rank) => {
                    let n = serving.len() as i64;
                    total / n + i64::from((rank as i64) < total % n)
                }
            },
        }
    }

    pub(super) fn container_usage(
        &self,
        resource: &str,
        container: &str,
        idx: usize,
        t: i64,
        serving: &[usize],
    ) -> i64 {
        let p = &self.pods[idx];
        if resource == "cpu"
            && let Some((usage, secs)) = self.hot_cpu
            && !p.initial
            && t < self.start_of(p) + secs
        {
            let first = self.containers.first().map(|c| c.name.as_str()) == Some(container);
            return if first { usage } else { 0 };
        }
        self.rule_value(
            self.resource_loads
                .get(&(resource.to_string(), container.to_string())),
            idx,
            serving,
        )
    }
}
