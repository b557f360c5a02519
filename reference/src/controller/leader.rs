//! Leader election on a `coordination.k8s.io/v1` Lease, as kube-controller-manager does: a
//! candidate takes the Lease when it is free or its holder has not renewed it within the lease
//! duration, and the leader renews it; only the leader reconciles.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, PostParams};

use super::api::message;
use super::clock::Clock;
use crate::time::Time;

/// A candidate for leadership.
pub struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    lease_duration: Duration,
    clock: Arc<dyn Clock>,
}

fn micro(t: Time) -> MicroTime {
    MicroTime(crate::conditions::kube_time(t).0)
}

fn core(t: &MicroTime) -> Time {
    Time::from_micros(t.0.as_microsecond())
}

impl Elector {
    /// A candidate `identity` for the Lease `namespace/name`.
    pub fn new(
        client: Client,
        namespace: &str,
        name: &str,
        identity: &str,
        lease_duration: Duration,
        clock: Arc<dyn Clock>,
    ) -> Elector {
        Elector {
            api: Api::namespaced(client, namespace),
            name: name.into(),
            identity: identity.into(),
            lease_duration,
            clock,
        }
    }

    fn spec(&self, now: Time, acquired: Option<MicroTime>, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(self.lease_duration.as_secs() as i32),
            acquire_time: Some(acquired.unwrap_or_else(|| micro(now))),
            renew_time: Some(micro(now)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }

    /// Takes or renews the Lease; `Ok(true)` while this candidate leads. A lost race (409) is
    /// `Ok(false)`.
    pub async fn try_acquire_or_renew(&self) -> Result<bool, String> {
        let now = self.clock.now();
        let current = match self.api.get_opt(&self.name).await {
            Ok(l) => l,
            Err(e) => return Err(message(&e)),
        };
        let Some(mut lease) = current else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(self.spec(now, None, 0)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(message(&e)),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let transitions = spec.lease_transitions.unwrap_or(0);
        let new_spec = if holder == self.identity {
            self.spec(now, spec.acquire_time.clone(), transitions)
        } else {
            let duration = spec
                .lease_duration_seconds
                .map_or(
                    self.lease_duration,
                    |s| Duration::from_secs(s.max(0) as u64),
                );
            let expired = match &spec.renew_time {
                Some(renewed) => !core(renewed).plus(duration).after(now),
                None => true,
            };
            if !holder.is_empty() && !expired {
                return Ok(false);
            }
            self.spec(now, None, transitions + 1)
        };
        lease.spec = Some(new_spec);
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(message(&e)),
        }
    }

    /// Gives the Lease up if this candidate holds it (client-go's release: no holder, a one-second
    /// duration), so another candidate takes it at its next try.
    pub async fn release(&self) -> Result<(), String> {
        let Some(mut lease) = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|e| message(&e))?
        else {
            return Ok(());
        };
        let mut spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return Ok(());
        }
        let now = micro(self.clock.now());
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(now.clone());
        spec.acquire_time = Some(now);
        lease.spec = Some(spec);
        self.api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
            .map(|_| ())
            .map_err(|e| message(&e))
    }
}
