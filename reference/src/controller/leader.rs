//! Leader election on a `coordination.k8s.io/v1` Lease, as kube-controller-manager does: a
//! candidate takes the Lease when it is free or its holder has not renewed it within the lease
//! duration, and the leader renews it; only the leader reconciles. [`Timings`] checks the three
//! durations at startup as client-go's `NewLeaderElector` does, and that the Lease can hold the
//! lease duration.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, PostParams};

use super::api::message;
use super::clock::Clock;
use crate::time::Time;

/// client-go's `leaderelection.JitterFactor`: a renew deadline must exceed 1.2 retry periods.
pub const JITTER_FACTOR: f64 = 1.2;

/// The largest lease duration a Lease holds: `spec.leaseDurationSeconds` is an int32.
pub const MAX_LEASE_DURATION: Duration = Duration::from_secs(i32::MAX as u64);

/// Leader election's durations, refused as client-go's `NewLeaderElector` refuses them (same
/// order, same words), then refused where the Lease could not carry the lease duration: client-go
/// writes `int32(seconds)` (so `1000000h` wraps negative) of the truncated seconds (so `500ms`
/// becomes 0, a lease that has always expired). Rounding up instead would make another duration
/// than the flag says: the flag is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timings {
    /// `--leader-elect-lease-duration`.
    pub lease_duration: Duration,
    /// `--leader-elect-renew-deadline`.
    pub renew_deadline: Duration,
    /// `--leader-elect-retry-period`.
    pub retry_period: Duration,
}

/// Why leader election's durations are refused. Each message is one line: client-go's words,
/// then the flags that gave the values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimingsError {
    /// `leaseDuration <= renewDeadline`.
    #[error(
        "leaseDuration must be greater than renewDeadline (--leader-elect-lease-duration={lease:?}, --leader-elect-renew-deadline={renew:?})"
    )]
    LeaseNotAfterRenew {
        /// The lease duration.
        lease: Duration,
        /// The renew deadline.
        renew: Duration,
    },
    /// `renewDeadline <= JitterFactor * retryPeriod`.
    #[error(
        "renewDeadline must be greater than retryPeriod*JitterFactor (--leader-elect-renew-deadline={renew:?}, --leader-elect-retry-period={retry:?}, JitterFactor 1.2)"
    )]
    RenewNotAfterJitteredRetry {
        /// The renew deadline.
        renew: Duration,
        /// The retry period.
        retry: Duration,
    },
    /// A zero retry period (a zero lease duration or renew deadline fails the checks before, in
    /// client-go's order too: durations here are never negative).
    #[error("retryPeriod must be greater than zero (--leader-elect-retry-period=0s)")]
    ZeroRetry,
    /// A lease duration with a fraction of a second.
    #[error(
        "leaseDuration must be a whole number of seconds: the Lease's leaseDurationSeconds is an integer (--leader-elect-lease-duration={0:?})"
    )]
    FractionalLease(Duration),
    /// A lease duration beyond `int32` seconds.
    #[error(
        "leaseDuration must be at most 2147483647s: the Lease's leaseDurationSeconds is an int32 (--leader-elect-lease-duration={0:?})"
    )]
    LeaseTooLong(Duration),
}

impl Timings {
    /// The durations, or why leader election cannot run with them.
    pub fn new(
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    ) -> Result<Timings, TimingsError> {
        if lease_duration <= renew_deadline {
            return Err(TimingsError::LeaseNotAfterRenew {
                lease: lease_duration,
                renew: renew_deadline,
            });
        }
        // `time.Duration(JitterFactor*float64(RetryPeriod))`: nanoseconds, truncated.
        let jittered =
            Duration::from_nanos((JITTER_FACTOR * retry_period.as_nanos() as f64) as u64);
        if renew_deadline <= jittered {
            return Err(TimingsError::RenewNotAfterJitteredRetry {
                renew: renew_deadline,
                retry: retry_period,
            });
        }
        if retry_period.is_zero() {
            return Err(TimingsError::ZeroRetry);
        }
        if lease_duration.subsec_nanos() != 0 {
            return Err(TimingsError::FractionalLease(lease_duration));
        }
        if lease_duration > MAX_LEASE_DURATION {
            return Err(TimingsError::LeaseTooLong(lease_duration));
        }
        Ok(Timings {
            lease_duration,
            renew_deadline,
            retry_period,
        })
    }
}

/// The Lease's `leaseDurationSeconds` for a duration: [`Timings`] admits only whole seconds that
/// fit; anything else (a caller that skipped it) saturates rather than wraps.
fn lease_duration_seconds(d: Duration) -> i32 {
    i32::try_from(d.as_secs()).unwrap_or(i32::MAX)
}

/// A candidate for leadership.
pub struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    lease_duration: Duration,
    clock: Arc<dyn Clock>,
}

fn micro(t: Time) -> MicroTime {
    MicroTime(crate::time::kube_time(t).0)
}

fn core(t: &MicroTime) -> Time {
    Time::from_micros(t.0.as_microsecond())
}

impl Elector {
    /// A candidate `identity` for the Lease `namespace/name` (`lease_duration` as [`Timings`]
    /// admits it).
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
            lease_duration_seconds: Some(lease_duration_seconds(self.lease_duration)),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Duration {
        crate::gotext::parse_go_duration(s).expect(s)
    }

    /// `(lease, renew, retry)` and the message, or `None` where client-go and the Lease accept them.
    const CASES: &[(&str, &str, &str, Option<&str>)] = &[
        ("15s", "10s", "2s", None),
        ("3s", "2s", "1s", None),
        ("2147483647s", "10s", "2s", None),
        // renewDeadline just above 1.2 retry periods.
        ("15s", "1201ms", "1s", None),
        (
            "15s",
            "15s",
            "2s",
            Some(
                "leaseDuration must be greater than renewDeadline (--leader-elect-lease-duration=15s, --leader-elect-renew-deadline=15s)",
            ),
        ),
        (
            "10s",
            "15s",
            "2s",
            Some(
                "leaseDuration must be greater than renewDeadline (--leader-elect-lease-duration=10s, --leader-elect-renew-deadline=15s)",
            ),
        ),
        (
            "15s",
            "1200ms",
            "1s",
            Some(
                "renewDeadline must be greater than retryPeriod*JitterFactor (--leader-elect-renew-deadline=1.2s, --leader-elect-retry-period=1s, JitterFactor 1.2)",
            ),
        ),
        (
            "15s",
            "10s",
            "10s",
            Some(
                "renewDeadline must be greater than retryPeriod*JitterFactor (--leader-elect-renew-deadline=10s, --leader-elect-retry-period=10s, JitterFactor 1.2)",
            ),
        ),
        // The first check client-go makes that a zero fails, in its order.
        (
            "0s",
            "10s",
            "2s",
            Some(
                "leaseDuration must be greater than renewDeadline (--leader-elect-lease-duration=0ns, --leader-elect-renew-deadline=10s)",
            ),
        ),
        (
            "15s",
            "0s",
            "0s",
            Some(
                "renewDeadline must be greater than retryPeriod*JitterFactor (--leader-elect-renew-deadline=0ns, --leader-elect-retry-period=0ns, JitterFactor 1.2)",
            ),
        ),
        (
            "15s",
            "10s",
            "0s",
            Some("retryPeriod must be greater than zero (--leader-elect-retry-period=0s)"),
        ),
        (
            "1500ms",
            "1s",
            "500ms",
            Some(
                "leaseDuration must be a whole number of seconds: the Lease's leaseDurationSeconds is an integer (--leader-elect-lease-duration=1.5s)",
            ),
        ),
        (
            "500ms",
            "400ms",
            "100ms",
            Some(
                "leaseDuration must be a whole number of seconds: the Lease's leaseDurationSeconds is an integer (--leader-elect-lease-duration=500ms)",
            ),
        ),
        (
            "1000000h",
            "10s",
            "2s",
            Some(
                "leaseDuration must be at most 2147483647s: the Lease's leaseDurationSeconds is an int32 (--leader-elect-lease-duration=3600000000s)",
            ),
        ),
        (
            "2147483648s",
            "10s",
            "2s",
            Some(
                "leaseDuration must be at most 2147483647s: the Lease's leaseDurationSeconds is an int32 (--leader-elect-lease-duration=2147483648s)",
            ),
        ),
    ];

    #[test]
    fn timings_are_refused_as_client_go_refuses_them_and_where_a_lease_cannot_hold_them() {
        for (lease, renew, retry, want) in CASES {
            let got = Timings::new(d(lease), d(renew), d(retry));
            match want {
                None => assert_eq!(
                    got,
                    Ok(Timings {
                        lease_duration: d(lease),
                        renew_deadline: d(renew),
                        retry_period: d(retry),
                    }),
                    "{lease} {renew} {retry}"
                ),
                Some(message) => assert_eq!(
                    got.map_err(|e| e.to_string()),
                    Err(message.to_string()),
                    "{lease} {renew} {retry}"
                ),
            }
        }
    }

    #[test]
    fn the_lease_carries_whole_seconds_and_never_wraps() {
        assert_eq!(lease_duration_seconds(Duration::from_secs(15)), 15);
        assert_eq!(
            lease_duration_seconds(MAX_LEASE_DURATION),
            i32::MAX,
            "the largest admitted"
        );
        assert_eq!(
            lease_duration_seconds(Duration::from_secs(3_600_000_000)),
            i32::MAX,
            "saturates: client-go's int32() gives -694967296"
        );
    }
}
