//! Leader election on a `coordination.k8s.io/v1` Lease with client-go's semantics, so only one
//! replica of an operator writes.
//!
//! - A lease is free when it has no holder, or when its record has not changed for its
//!   `leaseDurationSeconds` **as observed locally** (an `Instant`), never by comparing the
//!   remote `renewTime` with our clock: clock skew between nodes cannot cause two leaders.
//! - Every write carries the resourceVersion read just before (`replace`), so two candidates
//!   can never both win one round.
//! - The leader renews every retry period; if no renewal succeeds within the renew deadline it
//!   reports [`LeaderState::Lost`] and the binary must exit (library-go calls `os.Exit`).
//! - On shutdown the leader releases the lease (holder cleared, duration 1 s), so a successor
//!   takes over at its next retry instead of after a full lease duration.
//!
//! The lock name is `<operator>-lock` ([`lock_name`]); timings come from [`LeaderTimings`]
//! (OpenShift's 137/107/26 s, or 270/240/60 s on single-replica control planes). This module
//! does not decide which timings apply, and writes nothing but its Lease.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The timings (owned by `leader_timing`, which also picks them by topology).
pub use crate::leader_timing::LeaderTiming as LeaderTimings;

/// The Lease name of an operator: `<operator>-lock`.
pub fn lock_name(operator: &str) -> String {
    format!("{operator}-lock")
}

/// Where this replica stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaderState {
    /// Waiting for the lease.
    Candidate,
    /// Holding the lease: writes are allowed.
    Leading,
    /// Held the lease and failed to renew it in time: stop writing and exit.
    Lost,
    /// Shut down (the lease was released if it was held).
    Stopped,
}

/// A running election.
pub struct LeaderHandle {
    state: watch::Receiver<LeaderState>,
    task: JoinHandle<()>,
}

impl LeaderHandle {
    /// A receiver of state changes (for gating writes and noticing loss).
    pub fn subscribe(&self) -> watch::Receiver<LeaderState> {
        self.state.clone()
    }

    pub fn state(&self) -> LeaderState {
        *self.state.borrow()
    }

    pub fn is_leading(&self) -> bool {
        self.state() == LeaderState::Leading
    }

    /// Waits until this replica leads; `false` if the election ended first.
    pub async fn wait_leading(&mut self) -> bool {
        self.state
            .wait_for(|s| *s != LeaderState::Candidate)
            .await
            .is_ok_and(|s| *s == LeaderState::Leading)
    }

    /// Waits for the election task to end (after shutdown: once the lease is released).
    pub async fn join(self) {
        if let Err(error) = self.task.await {
            tracing::warn!(%error, "leader election task ended abnormally");
        }
    }
}

/// One candidate for one Lease.
pub struct LeaderElector {
    api: Api<Lease>,
    name: String,
    identity: String,
    timings: LeaderTimings,
    /// The last record seen and when we first saw it (local clock).
    observed: Option<(LeaseSpec, Instant)>,
}

impl LeaderElector {
    pub fn new(
        client: Client,
        namespace: &str,
        lock_name: &str,
        identity: &str,
        timings: LeaderTimings,
    ) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            name: lock_name.to_string(),
            identity: identity.to_string(),
            timings,
            observed: None,
        }
    }

    /// Starts the election; `shutdown` resolving releases the lease and ends it.
    pub fn run(self, shutdown: impl Future<Output = ()> + Send + 'static) -> LeaderHandle {
        let (tx, rx) = watch::channel(LeaderState::Candidate);
        let task = tokio::spawn(self.drive(tx, shutdown));
        LeaderHandle { state: rx, task }
    }

    async fn drive(
        mut self,
        state: watch::Sender<LeaderState>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) {
        let mut shutdown = std::pin::pin!(shutdown);
        // Acquire.
        loop {
            let attempt = tokio::time::timeout(
                self.timings.retry_period.max(Duration::from_secs(1)),
                self.try_acquire_or_renew(),
            );
            tokio::select! {
                () = &mut shutdown => {
                    state.send_replace(LeaderState::Stopped);
                    return;
                }
                result = attempt => match result {
                    Ok(Ok(true)) => break,
                    Ok(Ok(false)) => {}
                    Ok(Err(error)) => tracing::warn!(lease = %self.name, %error, "could not read or write the leader lease"),
                    Err(_) => tracing::warn!(lease = %self.name, "leader lease request timed out"),
                }
            }
            tokio::select! {
                () = &mut shutdown => {
                    state.send_replace(LeaderState::Stopped);
                    return;
                }
                () = tokio::time::sleep(jittered(self.timings.retry_period)) => {}
            }
        }
        tracing::info!(lease = %self.name, identity = %self.identity, "became leader");
        state.send_replace(LeaderState::Leading);
        let mut last_renew = Instant::now();
        // Renew.
        loop {
            tokio::select! {
                () = &mut shutdown => {
                    self.release().await;
                    state.send_replace(LeaderState::Stopped);
                    return;
                }
                () = tokio::time::sleep(self.timings.retry_period) => {}
            }
            let left = self
                .timings
                .renew_deadline
                .saturating_sub(last_renew.elapsed());
            let renewed = tokio::select! {
                () = &mut shutdown => {
                    self.release().await;
                    state.send_replace(LeaderState::Stopped);
                    return;
                }
                r = tokio::time::timeout(left, self.try_acquire_or_renew()) => r,
            };
            match renewed {
                Ok(Ok(true)) => last_renew = Instant::now(),
                Ok(Ok(false)) => {
                    tracing::error!(lease = %self.name, "another replica holds the leader lease");
                    state.send_replace(LeaderState::Lost);
                    return;
                }
                Ok(Err(error)) => {
                    tracing::warn!(lease = %self.name, %error, "could not renew the leader lease")
                }
                Err(_) => tracing::warn!(lease = %self.name, "renewing the leader lease timed out"),
            }
            if last_renew.elapsed() >= self.timings.renew_deadline {
                tracing::error!(lease = %self.name, "failed to renew the leader lease within the renew deadline");
                state.send_replace(LeaderState::Lost);
                return;
            }
        }
    }

    /// One round of client-go's `tryAcquireOrRenew`: `Ok(true)` when we hold the lease after it.
    async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        let now = MicroTime(jiff::Timestamp::now());
        let duration_secs =
            i32::try_from(self.timings.lease_duration.as_secs()).unwrap_or(i32::MAX);
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            let spec = LeaseSpec {
                holder_identity: Some(self.identity.clone()),
                lease_duration_seconds: Some(duration_secs),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: Some(0),
                ..Default::default()
            };
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..Default::default()
                },
                spec: Some(spec.clone()),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => {
                    self.observed = Some((spec, Instant::now()));
                    Ok(true)
                }
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let record = lease.spec.clone().unwrap_or_default();
        let changed = self
            .observed
            .as_ref()
            .is_none_or(|(seen, _)| *seen != record);
        if changed {
            self.observed = Some((record.clone(), Instant::now()));
        }
        let observed_at = self
            .observed
            .as_ref()
            .map_or_else(Instant::now, |(_, at)| *at);
        let holder = record.holder_identity.as_deref().unwrap_or_default();
        let held_by_us = holder == self.identity;
        let record_secs = record
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .map(Duration::from_secs)
            .unwrap_or(self.timings.lease_duration);
        if !holder.is_empty() && !held_by_us && observed_at.elapsed() < record_secs {
            return Ok(false);
        }
        let spec = LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(duration_secs),
            acquire_time: if held_by_us {
                record.acquire_time.clone()
            } else {
                Some(now.clone())
            },
            renew_time: Some(now),
            lease_transitions: Some(if held_by_us {
                record.lease_transitions.unwrap_or(0)
            } else {
                record.lease_transitions.unwrap_or(0).saturating_add(1)
            }),
            ..Default::default()
        };
        lease.spec = Some(spec.clone());
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => {
                self.observed = Some((spec, Instant::now()));
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Clears the holder (best effort, bounded), as client-go's `ReleaseOnCancel` does.
    async fn release(&mut self) {
        let bound = self
            .timings
            .retry_period
            .clamp(Duration::from_secs(1), Duration::from_secs(10));
        let result = tokio::time::timeout(bound, async {
            let Some(mut lease) = self.api.get_opt(&self.name).await? else {
                return Ok::<(), kube::Error>(());
            };
            let record = lease.spec.clone().unwrap_or_default();
            if record.holder_identity.as_deref() != Some(self.identity.as_str()) {
                return Ok(());
            }
            let now = MicroTime(jiff::Timestamp::now());
            lease.spec = Some(LeaseSpec {
                holder_identity: None,
                lease_duration_seconds: Some(1),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: record.lease_transitions,
                ..Default::default()
            });
            self.api
                .replace(&self.name, &PostParams::default(), &lease)
                .await?;
            Ok(())
        })
        .await;
        match result {
            Ok(Ok(())) => tracing::info!(lease = %self.name, "released the leader lease"),
            Ok(Err(error)) => {
                tracing::warn!(lease = %self.name, %error, "could not release the leader lease")
            }
            Err(_) => tracing::warn!(lease = %self.name, "releasing the leader lease timed out"),
        }
    }
}

/// client-go's `JitterUntil(retryPeriod, 1.2)` for candidates: up to 120 % extra, so
/// candidates that started together do not retry in lockstep.
fn jittered(period: Duration) -> Duration {
    let nanos = jiff::Timestamp::now().subsec_nanosecond().unsigned_abs();
    let fraction = f64::from(nanos % 1000) / 1000.0 * 1.2;
    period.mul_f64(1.0 + fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openshift_timings() {
        assert_eq!(LeaderTimings::default(), LeaderTimings::DEFAULT);
        assert_eq!(
            LeaderTimings::DEFAULT.lease_duration,
            Duration::from_secs(137)
        );
        assert_eq!(
            LeaderTimings::DEFAULT.renew_deadline,
            Duration::from_secs(107)
        );
        assert_eq!(LeaderTimings::DEFAULT.retry_period, Duration::from_secs(26));
        assert_eq!(
            LeaderTimings::SINGLE_REPLICA.lease_duration,
            Duration::from_secs(270)
        );
        assert_eq!(
            LeaderTimings::SINGLE_REPLICA.renew_deadline,
            Duration::from_secs(240)
        );
        assert_eq!(
            LeaderTimings::SINGLE_REPLICA.retry_period,
            Duration::from_secs(60)
        );
    }

    #[test]
    fn lock_name_matches_openshift() {
        assert_eq!(
            lock_name("openstack-cinder-csi-driver-operator"),
            "openstack-cinder-csi-driver-operator-lock"
        );
    }

    #[test]
    fn jitter_stays_within_client_go_bounds() {
        let d = jittered(Duration::from_secs(10));
        assert!(
            d >= Duration::from_secs(10) && d <= Duration::from_secs(22),
            "{d:?}"
        );
    }
}
