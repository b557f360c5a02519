//! What a target sees at a tick: the Pod objects (built again only when a pod looks different),
//! the scale, and the metrics APIs' answers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use hpa_reference::metrics_api::{
    ContainerMetrics, ListAnswer, MetricsApis, ObjectAnswer, PodMetrics, PodValue, SampleValue,
};
use hpa_reference::quantity::format_milli_decimal;
use hpa_reference::selector::Requirement;
use hpa_reference::time::kube_time;
use hpa_reference::{ContainerRequests, Time};
use k8s_openapi::api::autoscaling::v1::{Scale, ScaleSpec, ScaleStatus};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{
    Container, Pod, PodCondition, PodSpec, PodStatus, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{MetricKind, SimPod, World, instant};
use crate::case::model::Phase;

/// What a target sees at one tick: the Kubernetes objects and the metrics APIs' answers, exactly
/// what a controller would read (and what the step protocol sends).
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Virtual seconds.
    pub t: i64,
    /// The instant.
    pub now: Time,
    /// The HPA as stored, with the status last written.
    pub hpa: HorizontalPodAutoscaler,
    /// GET scale: the scale subresource, or the error.
    pub scale: Result<Scale, String>,
    /// UPDATE scale will fail with this error.
    pub scale_update_error: Option<String>,
    /// The error is the API server's typed status of this reason (`Conflict`: a 409), not a
    /// plain error (`scaleApi.updateErrorReason`).
    pub scale_update_error_reason: Option<String>,
    /// How many UPDATE attempts of this tick fail before the next succeeds (with a reason);
    /// `None`: every attempt.
    pub scale_update_failures: Option<u32>,
    /// The pods matching the selector (shared: a world hands out the same list while no pod
    /// changed, so a target can see "unchanged" without comparing pods).
    pub pods: Arc<Vec<Pod>>,
    /// The metrics APIs' answers.
    pub metrics: MetricsApis,
    /// Keys (`namespace/name`) of other HPAs whose selectors match these pods.
    pub other_hpas_selecting_pods: Vec<String>,
}

/// Everything a pod's object is built from that can differ between pods or ticks (the
/// template, labels and namespace are the world's and never change).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PodLook {
    name: String,
    requests: BTreeMap<String, BTreeMap<String, i64>>,
    at: PodAt,
}

/// The part of a [`PodLook`] that is derived from the pod and the instant (no allocation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct PodAt {
    phase: Phase,
    ready: (bool, i64),
    start: i64,
    no_ready_condition: bool,
    /// When it was deleted as seen at the instant (a pod deleted outright shows the instant).
    deleted_at: Option<i64>,
}

impl World {
    /// The time-derived part of how `p` looks at `t`.
    pub(super) fn pod_at(&self, p: &SimPod, t: i64) -> PodAt {
        PodAt {
            phase: self.phase_at(p, t),
            ready: self.ready_at(p, t),
            start: self.start_of(p),
            no_ready_condition: p.no_ready_condition,
            deleted_at: p
                .deleted
                .then(|| p.terminating.map_or(t, |(since, _)| since)),
        }
    }

    /// How `p` looks at `t`: what its object is built from.
    pub(super) fn look(&self, p: &SimPod, t: i64) -> PodLook {
        PodLook {
            name: p.name.clone(),
            requests: p.requests.clone(),
            at: self.pod_at(p, t),
        }
    }

    /// Whether `p` at `t` still looks as `l` (without building anything).
    pub(super) fn looks_as(&self, p: &SimPod, t: i64, l: &PodLook) -> bool {
        l.name == p.name && l.requests == p.requests && l.at == self.pod_at(p, t)
    }

    pub(super) fn pod_object(&self, p: &PodLook, labels: &BTreeMap<String, String>) -> Pod {
        let PodAt {
            phase,
            ready: (ready, since),
            start,
            no_ready_condition,
            deleted_at,
        } = p.at;
        let container = |c: &ContainerRequests, restart_policy: Option<String>| Container {
            name: c.name.clone(),
            restart_policy,
            resources: Some(ResourceRequirements {
                requests: Some(
                    c.requests
                        .iter()
                        .map(|(r, v)| (r.clone(), *v))
                        .chain(
                            p.requests
                                .get(&c.name)
                                .into_iter()
                                .flatten()
                                .map(|(r, v)| (r.clone(), *v)),
                        )
                        .collect::<BTreeMap<String, i64>>()
                        .into_iter()
                        .map(|(r, v)| (r, quantity(v)))
                        .collect(),
                ),
                ..ResourceRequirements::default()
            }),
            ..Container::default()
        };
        Pod {
            metadata: ObjectMeta {
                name: Some(p.name.clone()),
                namespace: self.hpa.metadata.namespace.clone(),
                labels: Some(labels.clone()),
                deletion_timestamp: deleted_at.map(|at| kube_time(instant(at))),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                containers: self.containers.iter().map(|c| container(c, None)).collect(),
                init_containers: (!self.sidecars.is_empty() || !self.init_containers.is_empty())
                    .then(|| {
                        self.init_containers
                            .iter()
                            .map(|c| container(c, None))
                            .chain(
                                self.sidecars
                                    .iter()
                                    .map(|c| container(c, Some("Always".into()))),
                            )
                            .collect()
                    }),
                resources: self.pod_requests.as_ref().map(|reqs| ResourceRequirements {
                    requests: Some(
                        reqs.iter()
                            .map(|(r, v)| (r.clone(), quantity(*v)))
                            .collect(),
                    ),
                    ..ResourceRequirements::default()
                }),
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                phase: Some(
                    match phase {
                        Phase::Pending => "Pending",
                        Phase::Running => "Running",
                        Phase::Succeeded => "Succeeded",
                        Phase::Failed => "Failed",
                    }
                    .into(),
                ),
                start_time: (phase != Phase::Pending).then(|| kube_time(instant(start))),
                conditions: (!no_ready_condition).then(|| {
                    vec![PodCondition {
                        type_: "Ready".into(),
                        status: if ready { "True" } else { "False" }.into(),
                        last_transition_time: Some(kube_time(instant(since))),
                        ..PodCondition::default()
                    }]
                }),
                ..PodStatus::default()
            }),
        }
    }

    /// The pod template of the scale target: the labels its pods carry and their spec (what a
    /// real cluster's workload is created from).
    pub fn pod_template(&self) -> (BTreeMap<String, String>, PodSpec) {
        let labels = self.pod_labels();
        let probe = SimPod::new(String::new(), 0, true, self.revision);
        let spec = self
            .pod_object(&self.look(&probe, 0), &labels)
            .spec
            .unwrap_or_default();
        (labels, spec)
    }

    /// Labels that match the target's selector (for its pods): the first value of `in`/`=`, an
    /// empty value for `key`, one above a `key>n` bound and one below a `key<n` bound; `!=`,
    /// `notin` and `!key` hold when the label is absent.
    pub(super) fn pod_labels(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::new();
        if let Ok(sel) = hpa_reference::selector::parse(&self.selector) {
            for r in sel.0 {
                match r {
                    Requirement::In(k, vs) => {
                        labels.insert(k, vs.first().cloned().unwrap_or_default());
                    }
                    Requirement::Exists(k) => {
                        labels.insert(k, String::new());
                    }
                    Requirement::GreaterThan(k, bound) => {
                        if let Some(v) = bound.parse::<i64>().ok().and_then(|b| b.checked_add(1)) {
                            labels.insert(k, v.to_string());
                        }
                    }
                    Requirement::LessThan(k, bound) => {
                        if let Some(v) = bound.parse::<i64>().ok().and_then(|b| b.checked_sub(1)) {
                            labels.insert(k, v.to_string());
                        }
                    }
                    Requirement::NotIn(..) | Requirement::DoesNotExist(_) => {}
                }
            }
        }
        labels
    }

    /// What the metrics APIs answer at `t`.
    pub(super) fn metrics_apis(&self, t: i64) -> MetricsApis {
        let now = kube_time(instant(t));
        let serving: Vec<usize> = (0..self.pods.len())
            .filter(|i| self.serving(&self.pods[*i], t))
            .collect();
        let missing =
            |key: &str, p: &SimPod| self.missing.get(key).is_some_and(|m| m.contains(&p.name));
        let running = |p: &SimPod| self.phase_at(p, t) == Phase::Running;
        let mut apis = MetricsApis::default();

        // Resource metrics: every resource some Resource/ContainerResource metric asks for.
        let resources: BTreeSet<&String> = self
            .kinds
            .iter()
            .filter(|(_, k)| matches!(k, MetricKind::Resource | MetricKind::ContainerResource(_)))
            .map(|(key, _)| key)
            .collect();
        if let Some(e) = resources.iter().find_map(|r| self.metric_errors.get(*r)) {
            apis.resource.error = Some(e.clone());
        } else if !resources.is_empty() {
            let window = format!("{}s", self.window.as_secs());
            for (i, p) in self.pods.iter().enumerate().filter(|(_, p)| running(p)) {
                let present: Vec<&String> = resources
                    .iter()
                    .copied()
                    .filter(|r| !missing(r, p))
                    .collect();
                if present.is_empty() {
                    continue;
                }
                apis.resource.items.push(PodMetrics {
                    metadata: ObjectMeta {
                        name: Some(p.name.clone()),
                        namespace: self.hpa.metadata.namespace.clone(),
                        ..ObjectMeta::default()
                    },
                    timestamp: now.clone(),
                    window: window.clone(),
                    // metrics-server reports every running container, sidecars (restartable
                    // init containers) included; upstream sums them all for a Resource metric.
                    containers: self
                        .containers
                        .iter()
                        .chain(&self.sidecars)
                        .map(|c| ContainerMetrics {
                            name: c.name.clone(),
                            usage: present
                                .iter()
                                .map(|r| {
                                    (
                                        (*r).clone(),
                                        quantity(self.container_usage(r, &c.name, i, t, &serving)),
                                    )
                                })
                                .collect(),
                        })
                        .collect(),
                });
            }
            // Samples for pods outside the pod list, one PodMetrics per such pod.
            let mut stray: BTreeMap<&str, BTreeMap<String, BTreeMap<String, Quantity>>> =
                BTreeMap::new();
            for ((metric, pod), v) in &self.stray {
                let container = match self.kinds.get(metric) {
                    Some(MetricKind::Resource) => self.containers.first().map(|c| c.name.clone()),
                    Some(MetricKind::ContainerResource(c)) => Some(c.clone()),
                    _ => None,
                };
                if let Some(container) = container {
                    stray
                        .entry(pod.as_str())
                        .or_default()
                        .entry(container)
                        .or_default()
                        .insert(metric.clone(), quantity(*v));
                }
            }
            for (pod, containers) in stray {
                apis.resource.items.push(PodMetrics {
                    metadata: ObjectMeta {
                        name: Some(pod.to_string()),
                        namespace: self.hpa.metadata.namespace.clone(),
                        ..ObjectMeta::default()
                    },
                    timestamp: now.clone(),
                    window: window.clone(),
                    containers: containers
                        .into_iter()
                        .map(|(name, usage)| ContainerMetrics {
                            name,
                            usage: usage.into(),
                        })
                        .collect(),
                });
            }
        }

        for (key, kind) in &self.kinds {
            let error = self.metric_errors.get(key).cloned();
            match kind {
                MetricKind::Resource | MetricKind::ContainerResource(_) => {}
                MetricKind::Pods => {
                    let rule = self.custom_loads.get(key);
                    let items = if error.is_some() {
                        Vec::new()
                    } else {
                        self.pods
                            .iter()
                            .enumerate()
                            .filter(|(_, p)| running(p) && !missing(key, p))
                            .map(|(i, p)| PodValue {
                                pod: p.name.clone(),
                                value: quantity(self.rule_value(rule, i, &serving)),
                                timestamp: now.clone(),
                                window_seconds: Some(self.window.as_secs() as i64),
                            })
                            .chain(self.stray.iter().filter(|((m, _), _)| m == key).map(
                                |((_, pod), v)| PodValue {
                                    pod: pod.clone(),
                                    value: quantity(*v),
                                    timestamp: now.clone(),
                                    window_seconds: Some(self.window.as_secs() as i64),
                                },
                            ))
                            .collect()
                    };
                    apis.pods.insert(key.clone(), ListAnswer { items, error });
                }
                MetricKind::Object => {
                    let written = self.written.get(key).and_then(|w| w.first());
                    let value = self.object_values.get(key).map(|v| SampleValue {
                        value: written.map_or_else(|| quantity(*v), |w| Quantity(w.clone())),
                        timestamp: now.clone(),
                    });
                    if error.is_some() || value.is_some() {
                        apis.object.insert(
                            key.clone(),
                            ObjectAnswer {
                                value: value.filter(|_| error.is_none()),
                                error,
                            },
                        );
                    }
                }
                MetricKind::External => {
                    let items = if error.is_some() {
                        Vec::new()
                    } else {
                        match self.written.get(key) {
                            Some(w) => w
                                .iter()
                                .map(|v| SampleValue {
                                    value: Quantity(v.clone()),
                                    timestamp: now.clone(),
                                })
                                .collect(),
                            None => self
                                .external_series
                                .get(key)
                                .into_iter()
                                .flatten()
                                .map(|v| SampleValue {
                                    value: quantity(*v),
                                    timestamp: now.clone(),
                                })
                                .collect(),
                        }
                    };
                    apis.external
                        .insert(key.clone(), ListAnswer { items, error });
                }
            }
        }
        apis
    }

    /// The pod objects at `t`: the list last handed out while every pod looks as it did then.
    pub fn pods(&mut self, t: i64) -> Arc<Vec<Pod>> {
        if let Some((looks, pods)) = &self.pods_built
            && looks.len() == self.pods.len()
            && self
                .pods
                .iter()
                .zip(looks)
                .all(|(p, l)| self.looks_as(p, t, l))
        {
            return Arc::clone(pods);
        }
        let labels = self.pod_labels();
        let looks: Vec<PodLook> = self.pods.iter().map(|p| self.look(p, t)).collect();
        let mut pods: Vec<Pod> = looks.iter().map(|l| self.pod_object(l, &labels)).collect();
        if self.newest_first {
            pods.reverse();
        }
        let pods = Arc::new(pods);
        self.pods_built = Some((looks, Arc::clone(&pods)));
        pods
    }

    /// What the target sees at `t`: the objects and API answers a controller would read.
    pub fn snapshot(&mut self, t: i64) -> Snapshot {
        let live = self.pods.iter().filter(|p| self.active(p, t)).count() as i32;
        let scale = match &self.get_scale_error {
            Some(e) => Err(e.clone()),
            None => Ok(Scale {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    namespace: self.hpa.metadata.namespace.clone(),
                    ..ObjectMeta::default()
                },
                spec: Some(ScaleSpec {
                    replicas: Some(self.replicas),
                }),
                status: Some(ScaleStatus {
                    replicas: self.status_replicas.unwrap_or(live),
                    selector: Some(self.selector.clone()).filter(|s| !s.is_empty()),
                }),
            }),
        };
        let pods = self.pods(t);
        let other_hpas_selecting_pods = self.other_hpas_selecting(&pods);
        Snapshot {
            t,
            now: instant(t),
            hpa: self.hpa.clone(),
            scale,
            scale_update_error: self.update_scale_error.clone(),
            scale_update_error_reason: self
                .update_scale_error
                .as_ref()
                .and(self.update_error_reason.clone()),
            scale_update_failures: self
                .update_scale_error
                .as_ref()
                .and(self.update_error_reason.as_ref())
                .and(self.update_failures_left),
            pods,
            metrics: self.metrics_apis(t),
            other_hpas_selecting_pods,
        }
    }

    /// The other HPAs whose selectors match any of `pods` (upstream's selector tracker: every
    /// HPA whose selector selects a pod the HPA's own selector lists).
    pub(super) fn other_hpas_selecting(&self, pods: &[Pod]) -> Vec<String> {
        self.other_hpas
            .iter()
            .filter(|(_, selector)| {
                pods.iter().any(|p| {
                    let none = BTreeMap::new();
                    selector.matches(p.metadata.labels.as_ref().unwrap_or(&none))
                })
            })
            .map(|(key, _)| key.clone())
            .collect()
    }
}

fn quantity(milli: i64) -> Quantity {
    Quantity(format_milli_decimal(milli))
}
