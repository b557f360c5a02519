//! The controller's events, recorded as kube-controller-manager records them: core/v1 Events
//! from client-go's legacy recorder (source and reporting component `horizontal-pod-autoscaler`,
//! named `<hpa>.<hex nanoseconds>`, `firstTimestamp`/`lastTimestamp` from the injected clock),
//! run through its [`Correlator`]: a repeat PATCHes the existing Event's `count`,
//! `lastTimestamp` and `message` (creating it again if it is gone), similar events are
//! aggregated, and a spammy HPA's events are dropped.
//!
//! kube-rs's `kube::runtime::events::Recorder` is not used: it writes events.k8s.io/v1 Events
//! whose repeats go to `series` (not the core/v1 `count`), keys repeats without the message (so
//! `New size: 4` and `New size: 6` would be one Event keeping the first message), and stamps them
//! with the wall clock.
//!
//! API use: core (`""`) `events`: `create`, `patch`.

use std::sync::Mutex;

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Event as KubeEvent, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};

use super::api::message;
use super::correlator::{Correlated, Correlator, CorrelatorOptions};
use crate::outcome::Event;
use crate::time::Time;
use crate::time::kube_time;

/// Records the HPA controller's events.
#[derive(Debug)]
pub struct Recorder {
    component: String,
    state: Mutex<State>,
}

/// A name for an Event about `object` at `now`: `<object>.<hex nanoseconds>`, later than every
/// name given before (`last_nanos`).
fn event_name(last_nanos: &mut i64, object: &str, now: Time) -> String {
    let nanos = now
        .as_micros()
        .saturating_mul(1000)
        .max(last_nanos.saturating_add(1));
    *last_nanos = nanos;
    format!("{object}.{nanos:x}")
}

#[derive(Debug)]
struct State {
    correlator: Correlator,
    /// The nanoseconds of the last Event name given: names stay unique when several events share
    /// one instant of the injected clock (client-go reads a fresh wall-clock time for each).
    last_nanos: i64,
}

impl Recorder {
    /// A recorder for `component` (`horizontal-pod-autoscaler`) with client-go's limits.
    pub fn new(component: &str) -> Self {
        Recorder::with_options(component, CorrelatorOptions::default())
    }

    /// A recorder with other correlation limits.
    pub fn with_options(component: &str, options: CorrelatorOptions) -> Self {
        Recorder {
            component: component.to_string(),
            state: Mutex::new(State {
                correlator: Correlator::new(options),
                last_nanos: i64::MIN,
            }),
        }
    }

    /// The component events are recorded as.
    pub fn component(&self) -> &str {
        &self.component
    }

    /// The new Event for `e` on `hpa` at `now`, as client-go's recorder makes it.
    pub fn make(&self, hpa: &HorizontalPodAutoscaler, e: &Event, now: Time) -> KubeEvent {
        let (_, ns, name) = super::key_of(hpa);
        let event_name = match self.state.lock() {
            Ok(mut s) => event_name(&mut s.last_nanos, &name, now),
            Err(_) => format!("{name}.{:x}", now.as_micros().saturating_mul(1000)),
        };
        let at = kube_time(now);
        KubeEvent {
            metadata: ObjectMeta {
                name: Some(event_name),
                namespace: Some(ns.clone()),
                ..ObjectMeta::default()
            },
            involved_object: ObjectReference {
                api_version: Some("autoscaling/v2".into()),
                kind: Some("HorizontalPodAutoscaler".into()),
                name: Some(name),
                namespace: Some(ns),
                uid: hpa.metadata.uid.clone(),
                resource_version: hpa.metadata.resource_version.clone(),
                ..ObjectReference::default()
            },
            reason: Some(e.reason.clone()),
            message: Some(e.message.clone()),
            type_: Some(e.type_.as_str().into()),
            source: Some(EventSource {
                component: Some(self.component.clone()),
                host: None,
            }),
            first_timestamp: Some(at.clone()),
            last_timestamp: Some(at),
            count: Some(1),
            reporting_component: Some(self.component.clone()),
            reporting_instance: Some(String::new()),
            ..KubeEvent::default()
        }
    }

    /// What to write for `e` on `hpa` at `now`.
    pub fn correlate(&self, hpa: &HorizontalPodAutoscaler, e: &Event, now: Time) -> Correlated {
        let event = self.make(hpa, e, now);
        let object = event.involved_object.name.clone().unwrap_or_default();
        match self.state.lock() {
            Ok(mut s) => {
                let State {
                    correlator,
                    last_nanos,
                } = &mut *s;
                correlator.correlate(event, now, |at| event_name(last_nanos, &object, at))
            }
            Err(_) => Correlated::Create(event),
        }
    }

    /// Records `e` on `hpa` at `now`: creates the Event, or patches the one it repeats.
    /// Returns `Ok(false)` when the spam filter dropped it.
    pub async fn record(
        &self,
        client: &Client,
        hpa: &HorizontalPodAutoscaler,
        e: &Event,
        now: Time,
    ) -> Result<bool, String> {
        let (_, ns, _) = super::key_of(hpa);
        let api: Api<KubeEvent> = Api::namespaced(client.clone(), &ns);
        let written = match self.correlate(hpa, e, now) {
            Correlated::Skip => return Ok(false),
            Correlated::Create(event) => api.create(&PostParams::default(), &event).await,
            Correlated::Patch { mut event, patch } => {
                let name = event.metadata.name.clone().unwrap_or_default();
                match api
                    .patch(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                    .await
                {
                    // The Event expired or was deleted: create it again, count and all.
                    Err(kube::Error::Api(s)) if s.code == 404 => {
                        event.metadata.resource_version = None;
                        api.create(&PostParams::default(), &event).await
                    }
                    other => other,
                }
            }
        };
        let written = written.map_err(|e| message(&e))?;
        if let Ok(mut s) = self.state.lock() {
            s.correlator.written(&written);
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests;
