//! The `enable_topology` value of the `cloud-conf` ConfigMap (anchors §4.5), as pure state.
//!
//! The driver's `--with-topology` comes from this value. A user override (`enable_topology` in
//! the source ConfigMap) wins. Otherwise it is computed from the Nova and Cinder availability
//! zones ([`compute_enable_topology`]). OpenShift computes it once per process (anchors §8.10,
//! users file §1.1); [`TopologyState`] instead says when to recompute: at start, every
//! `refresh_interval` (10 minutes by default), sooner after a failure (from 5 s after an outage,
//! from 30 s after rejected credentials, doubling: [`openstack::Retry`]), and at once when the
//! credentials change. The caller makes the OpenStack calls and reports the outcome; this module
//! does no I/O and reads no clock (the caller passes `now`).

use std::time::{Duration, Instant};

use openstack::{Backoff, Retry};

use crate::config::ENABLE_TOPOLOGY_KEY;

/// How often the availability zones are listed again when nothing else changes.
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(10 * 60);
/// The longest wait between failed listings when the periodic refresh is off (a zero
/// interval), so a failure is still retried.
const ERROR_RETRY_CAP: Duration = DEFAULT_REFRESH_INTERVAL;

/// A Cinder availability zone as the volume API lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeZone {
    pub name: String,
    /// `zoneState.available`.
    pub available: bool,
}

/// Why no `enable_topology` value can be published.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error(
        "could not find an available compute availability zone: Nova listed none; check that \
         the compute service is reachable with the cluster's credentials, or set \
         enable_topology in the cinder-csi-config ConfigMap"
    )]
    NoComputeZones,
    #[error(
        "could not find a volume availability zone: Cinder listed none; check the block \
         storage service, or set enable_topology in the cinder-csi-config ConfigMap"
    )]
    NoVolumeZones,
    #[error(
        "{ENABLE_TOPOLOGY_KEY} in config map {origin} is {value:?}, which is not a boolean; set \
         it to \"true\" or \"false\", or remove it to let the operator decide from the \
         availability zones"
    )]
    InvalidOverride { origin: String, value: String },
    /// The caller's OpenStack error, already free of secrets, and how soon to try again.
    #[error("couldn't collect info about cloud availability zones: {message}")]
    Lookup { message: String, retry: Retry },
    #[error("availability zones have not been listed yet")]
    NotYetComputed,
}

impl TopologyError {
    /// How soon a listing that failed this way is repeated. Empty zone lists may be a
    /// service restarting, so they are asked again soon; the override's errors never come
    /// from a listing.
    pub fn retry(&self) -> Retry {
        match self {
            TopologyError::Lookup { retry, .. } => *retry,
            TopologyError::NoComputeZones | TopologyError::NoVolumeZones => Retry::Soon,
            TopologyError::InvalidOverride { .. } | TopologyError::NotYetComputed => {
                Retry::AtRefresh
            }
        }
    }
}

/// `true` iff every available compute AZ has an available volume AZ of the same name (and so
/// there are no more compute AZs than volume AZs). `compute` lists the available Nova zones;
/// `volume` every Cinder zone. An empty Nova list or an empty Cinder list is an error; Cinder
/// zones that are all unavailable just give `false`.
pub fn compute_enable_topology(
    compute: &[String],
    volume: &[VolumeZone],
) -> Result<bool, TopologyError> {
    if compute.is_empty() {
        return Err(TopologyError::NoComputeZones);
    }
    if volume.is_empty() {
        return Err(TopologyError::NoVolumeZones);
    }
    let available: Vec<&str> = volume
        .iter()
        .filter(|z| z.available)
        .map(|z| z.name.as_str())
        .collect();
    if compute.len() > available.len() {
        return Ok(false);
    }
    Ok(compute.iter().all(|c| available.contains(&c.as_str())))
}

/// The user's override and where it was found (for the error message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserOverride<'a> {
    pub value: &'a str,
    /// E.g. `openshift-config/cinder-csi-config`.
    pub origin: &'a str,
}

/// Validates a user override: the spellings Go's `strconv.ParseBool` accepts (what the driver's
/// `--with-topology` flag parses, with no trimming). Returns the value to publish, copied
/// verbatim as OpenShift does. OpenShift copies any value and lets the driver crash-loop on a
/// bad one (surrounding whitespace included, e.g. a YAML block scalar's trailing newline); here
/// it is a readable error instead.
pub fn parse_override(user: UserOverride<'_>) -> Result<String, TopologyError> {
    const BOOLS: &[&str] = &[
        "1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False",
    ];
    if BOOLS.contains(&user.value) {
        Ok(user.value.to_string())
    } else {
        // ConfigMap text, not a secret; bounded so a huge value cannot flood the condition.
        let shown: String = user.value.chars().take(64).collect();
        Err(TopologyError::InvalidOverride {
            origin: user.origin.to_string(),
            value: shown,
        })
    }
}

/// Where a published value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopologySource {
    UserOverride,
    /// From the latest availability-zone listing.
    Computed,
    /// From an earlier listing, because the latest one failed (see [`TopologyState::last_error`]).
    PreviousResult,
}

/// The value to write under `enable_topology`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyValue {
    /// `"true"` / `"false"`, or the user's spelling.
    pub value: String,
    pub source: TopologySource,
}

/// When the availability zones should be listed next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    /// A user override is set: no OpenStack call is needed.
    NotNeeded,
    /// Nothing listed yet for these credentials: list now.
    Now,
    /// List again at this instant.
    At(Instant),
}

#[derive(Debug, Clone)]
struct Attempt {
    at: Instant,
    fingerprint: String,
    error: Option<TopologyError>,
}

/// Remembers the last availability-zone listing and says when the next one is due and what to
/// publish. One per operator process.
#[derive(Debug, Clone)]
pub struct TopologyState {
    refresh_interval: Duration,
    /// Failures in a row for the latest credentials.
    backoff: Backoff,
    last_value: Option<bool>,
    last_attempt: Option<Attempt>,
}

impl Default for TopologyState {
    fn default() -> Self {
        Self::new(DEFAULT_REFRESH_INTERVAL)
    }
}

impl TopologyState {
    /// `refresh_interval` zero turns the periodic refresh off (credential changes still cause
    /// one), which is OpenShift's compute-once behaviour; a failed listing is still retried.
    pub fn new(refresh_interval: Duration) -> Self {
        Self {
            refresh_interval,
            backoff: Backoff::default(),
            last_value: None,
            last_attempt: None,
        }
    }

    /// When to list the zones next, given whether a user override is set and a fingerprint of
    /// the current credentials (any string that changes when the Secret or CA changes).
    pub fn next_refresh(&self, override_set: bool, fingerprint: &str) -> Refresh {
        if override_set {
            return Refresh::NotNeeded;
        }
        let Some(attempt) = &self.last_attempt else {
            return Refresh::Now;
        };
        if attempt.fingerprint != fingerprint {
            return Refresh::Now;
        }
        let wait = if attempt.error.is_some() {
            let cap = if self.refresh_interval.is_zero() {
                ERROR_RETRY_CAP
            } else {
                self.refresh_interval
            };
            self.backoff.wait(cap)
        } else if self.refresh_interval.is_zero() {
            return Refresh::NotNeeded;
        } else {
            self.refresh_interval
        };
        // An interval too large to represent means "never".
        attempt
            .at
            .checked_add(wait)
            .map_or(Refresh::NotNeeded, Refresh::At)
    }

    /// Whether the zones should be listed at `now`.
    pub fn is_due(&self, now: Instant, override_set: bool, fingerprint: &str) -> bool {
        match self.next_refresh(override_set, fingerprint) {
            Refresh::NotNeeded => false,
            Refresh::Now => true,
            Refresh::At(at) => at <= now,
        }
    }

    /// How long the caller may sleep before the next listing is due (`None`: no timer needed).
    pub fn requeue_after(
        &self,
        now: Instant,
        override_set: bool,
        fingerprint: &str,
    ) -> Option<Duration> {
        match self.next_refresh(override_set, fingerprint) {
            Refresh::NotNeeded => None,
            Refresh::Now => Some(Duration::ZERO),
            Refresh::At(at) => Some(at.saturating_duration_since(now)),
        }
    }

    /// Records the outcome of a listing made with the credentials of `fingerprint`.
    pub fn record(
        &mut self,
        now: Instant,
        fingerprint: &str,
        outcome: Result<bool, TopologyError>,
    ) {
        if self
            .last_attempt
            .as_ref()
            .is_some_and(|a| a.fingerprint != fingerprint)
        {
            self.backoff.reset();
        }
        self.backoff
            .record(outcome.as_ref().err().map(TopologyError::retry));
        let error = match outcome {
            Ok(value) => {
                self.last_value = Some(value);
                None
            }
            Err(e) => Some(e),
        };
        self.last_attempt = Some(Attempt {
            at: now,
            fingerprint: fingerprint.to_string(),
            error,
        });
    }

    /// The error of the latest listing, if it failed (a published value may still exist).
    pub fn last_error(&self) -> Option<&TopologyError> {
        self.last_attempt.as_ref().and_then(|a| a.error.as_ref())
    }

    /// The value to publish: the valid user override; else the latest computed value (an
    /// earlier one when the latest listing failed: a transient OpenStack error must not flip
    /// the driver's topology); else the listing's error.
    pub fn decide(
        &self,
        user_override: Option<UserOverride<'_>>,
    ) -> Result<TopologyValue, TopologyError> {
        if let Some(user) = user_override {
            return parse_override(user).map(|value| TopologyValue {
                value,
                source: TopologySource::UserOverride,
            });
        }
        match (self.last_value, self.last_error()) {
            (Some(value), error) => Ok(TopologyValue {
                value: value.to_string(),
                source: if error.is_some() {
                    TopologySource::PreviousResult
                } else {
                    TopologySource::Computed
                },
            }),
            (None, Some(error)) => Err(error.clone()),
            (None, None) => Err(TopologyError::NotYetComputed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outage() -> TopologyError {
        TopologyError::Lookup {
            message: "Keystone returned 503".into(),
            retry: Retry::Soon,
        }
    }

    fn rejected() -> TopologyError {
        TopologyError::Lookup {
            message: "the credentials were rejected by Keystone (HTTP 401)".into(),
            retry: Retry::Slowly,
        }
    }

    /// An outage is listed again after 5 s, 10 s, 20 s, …; rejected credentials after 30 s,
    /// 60 s, …; both up to the refresh interval; new credentials start over at once.
    #[test]
    fn failures_back_off_at_their_pace_up_to_the_refresh() {
        let t0 = Instant::now();
        for (error, expected) in [
            (outage(), vec![5, 10, 20, 40, 80, 160, 320, 600, 600]),
            (rejected(), vec![30, 60, 120, 240, 480, 600]),
        ] {
            let mut state = TopologyState::new(Duration::from_secs(600));
            let mut at = t0;
            for wait in expected {
                state.record(at, "fp1", Err(error.clone()));
                assert_eq!(
                    state.next_refresh(false, "fp1"),
                    Refresh::At(at + Duration::from_secs(wait)),
                    "{error}"
                );
                at += Duration::from_secs(wait);
            }
            state.record(at, "fp2", Err(error.clone()));
            assert_eq!(
                state.requeue_after(at, false, "fp2"),
                Some(Duration::from_secs(if error == outage() { 5 } else { 30 })),
                "new credentials start the count over"
            );
        }
        // With the periodic refresh off, a failure is still retried, at most every 10 min.
        let mut once = TopologyState::new(Duration::ZERO);
        for _ in 0..20 {
            once.record(t0, "fp1", Err(outage()));
        }
        assert_eq!(
            once.next_refresh(false, "fp1"),
            Refresh::At(t0 + DEFAULT_REFRESH_INTERVAL)
        );
    }

    fn zones(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn vol(names: &[(&str, bool)]) -> Vec<VolumeZone> {
        names
            .iter()
            .map(|(n, a)| VolumeZone {
                name: n.to_string(),
                available: *a,
            })
            .collect()
    }

    #[test]
    fn topology_rule_of_anchors() {
        // Same names: on.
        assert_eq!(
            compute_enable_topology(
                &zones(&["az1", "az2"]),
                &vol(&[("az1", true), ("az2", true)])
            ),
            Ok(true)
        );
        // Extra volume AZs are fine (OCPBUGS-30951).
        assert_eq!(
            compute_enable_topology(&zones(&["az1"]), &vol(&[("az1", true), ("az2", true)])),
            Ok(true)
        );
        // More compute AZs than volume AZs: off (the classic 3 Nova AZs, 1 Cinder `nova`).
        assert_eq!(
            compute_enable_topology(&zones(&["az1", "az2", "az3"]), &vol(&[("nova", true)])),
            Ok(false)
        );
        // Same count, different names: off.
        assert_eq!(
            compute_enable_topology(&zones(&["az1"]), &vol(&[("nova", true)])),
            Ok(false)
        );
        // Names are case-sensitive.
        assert_eq!(
            compute_enable_topology(&zones(&["AZ1"]), &vol(&[("az1", true)])),
            Ok(false)
        );
        // Unavailable volume zones do not count.
        assert_eq!(
            compute_enable_topology(&zones(&["az1"]), &vol(&[("az1", false)])),
            Ok(false)
        );
        assert_eq!(
            compute_enable_topology(
                &zones(&["az1", "az2"]),
                &vol(&[("az1", true), ("az2", false), ("az3", true)])
            ),
            Ok(false)
        );
    }

    #[test]
    fn empty_zone_lists_are_errors() {
        assert_eq!(
            compute_enable_topology(&[], &vol(&[("az1", true)])),
            Err(TopologyError::NoComputeZones)
        );
        assert_eq!(
            compute_enable_topology(&zones(&["az1"]), &[]),
            Err(TopologyError::NoVolumeZones)
        );
        assert!(
            TopologyError::NoComputeZones
                .to_string()
                .contains("enable_topology")
        );
    }

    #[test]
    fn override_values() {
        let o = |v| UserOverride {
            value: v,
            origin: "openshift-config/cinder-csi-config",
        };
        for v in ["true", "false", "True", "FALSE", "1", "0", "t", "F"] {
            assert_eq!(parse_override(o(v)).unwrap(), v);
        }
        // Verbatim: the driver's flag parser does not trim, so neither does the check.
        for v in [
            "yes", "no", "on", "enabled", "", "tRUE", " true\n", "false ",
        ] {
            let err = parse_override(o(v)).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains("openshift-config/cinder-csi-config"), "{msg}");
            assert!(msg.contains("\"true\" or \"false\""), "{msg}");
        }
        let long = "x".repeat(1000);
        let msg = parse_override(o(&long)).unwrap_err().to_string();
        assert!(msg.len() < 400, "value is bounded in the message");
    }

    #[test]
    fn override_wins_and_needs_no_openstack_call() {
        let mut state = TopologyState::default();
        let t0 = Instant::now();
        assert_eq!(state.next_refresh(true, "fp1"), Refresh::NotNeeded);
        assert!(!state.is_due(t0, true, "fp1"));
        assert_eq!(state.requeue_after(t0, true, "fp1"), None);
        state.record(t0, "fp1", Ok(true));
        let user = UserOverride {
            value: "false",
            origin: "openshift-config/cinder-csi-config",
        };
        assert_eq!(
            state.decide(Some(user)),
            Ok(TopologyValue {
                value: "false".into(),
                source: TopologySource::UserOverride
            })
        );
        let bad = UserOverride {
            value: "maybe",
            origin: "openshift-config/cinder-csi-config",
        };
        assert!(matches!(
            state.decide(Some(bad)),
            Err(TopologyError::InvalidOverride { .. })
        ));
    }

    #[test]
    fn first_refresh_is_due_at_once_and_nothing_is_published_before() {
        let state = TopologyState::default();
        let t0 = Instant::now();
        assert_eq!(state.next_refresh(false, "fp1"), Refresh::Now);
        assert!(state.is_due(t0, false, "fp1"));
        assert_eq!(state.requeue_after(t0, false, "fp1"), Some(Duration::ZERO));
        assert_eq!(state.decide(None), Err(TopologyError::NotYetComputed));
    }

    #[test]
    fn success_is_refreshed_after_the_interval() {
        let mut state = TopologyState::new(Duration::from_secs(600));
        let t0 = Instant::now();
        state.record(t0, "fp1", Ok(true));
        assert_eq!(
            state.decide(None),
            Ok(TopologyValue {
                value: "true".into(),
                source: TopologySource::Computed
            })
        );
        let due = t0 + Duration::from_secs(600);
        assert_eq!(state.next_refresh(false, "fp1"), Refresh::At(due));
        assert!(!state.is_due(t0 + Duration::from_secs(599), false, "fp1"));
        assert!(state.is_due(due, false, "fp1"));
        assert_eq!(
            state.requeue_after(t0 + Duration::from_secs(100), false, "fp1"),
            Some(Duration::from_secs(500))
        );
        // A new AZ layout is picked up on the next refresh (anchors §8.10 fixed).
        state.record(due, "fp1", Ok(false));
        assert_eq!(state.decide(None).unwrap().value, "false");
        assert_eq!(
            state.next_refresh(false, "fp1"),
            Refresh::At(due + Duration::from_secs(600))
        );
    }

    #[test]
    fn credential_change_makes_refresh_due_now() {
        let mut state = TopologyState::default();
        let t0 = Instant::now();
        state.record(t0, "fp1", Ok(true));
        assert!(!state.is_due(t0 + Duration::from_secs(1), false, "fp1"));
        assert_eq!(state.next_refresh(false, "fp2"), Refresh::Now);
        assert!(state.is_due(t0 + Duration::from_secs(1), false, "fp2"));
        // Until the new listing, the previous value stays published.
        assert_eq!(state.decide(None).unwrap().value, "true");
    }

    #[test]
    fn failure_keeps_previous_value_and_retries_sooner() {
        let mut state = TopologyState::new(Duration::from_secs(600));
        let t0 = Instant::now();
        state.record(t0, "fp1", Ok(true));
        let t1 = t0 + Duration::from_secs(600);
        state.record(t1, "fp1", Err(outage()));
        assert_eq!(
            state.decide(None),
            Ok(TopologyValue {
                value: "true".into(),
                source: TopologySource::PreviousResult
            })
        );
        assert_eq!(state.last_error(), Some(&outage()));
        assert_eq!(
            state.next_refresh(false, "fp1"),
            Refresh::At(t1 + Duration::from_secs(5))
        );
        state.record(t1 + Duration::from_secs(5), "fp1", Ok(true));
        assert_eq!(state.last_error(), None);
        assert_eq!(state.decide(None).unwrap().source, TopologySource::Computed);
    }

    #[test]
    fn failure_without_previous_value_is_an_error() {
        let mut state = TopologyState::default();
        let t0 = Instant::now();
        state.record(t0, "fp1", Err(TopologyError::NoComputeZones));
        assert_eq!(state.decide(None), Err(TopologyError::NoComputeZones));
        assert_eq!(
            state.next_refresh(false, "fp1"),
            Refresh::At(t0 + Duration::from_secs(5))
        );
        // New credentials: retry at once rather than after the error delay.
        assert_eq!(state.next_refresh(false, "fp2"), Refresh::Now);
    }

    #[test]
    fn zero_interval_means_compute_once_per_credentials() {
        let mut state = TopologyState::new(Duration::ZERO);
        let t0 = Instant::now();
        state.record(t0, "fp1", Ok(true));
        assert_eq!(state.next_refresh(false, "fp1"), Refresh::NotNeeded);
        assert_eq!(state.next_refresh(false, "fp2"), Refresh::Now);
        let huge = TopologyState::new(Duration::MAX);
        let mut huge = huge;
        huge.record(t0, "fp1", Ok(true));
        assert_eq!(huge.next_refresh(false, "fp1"), Refresh::NotNeeded);
    }

    #[test]
    fn override_removed_later_triggers_listing() {
        let state = TopologyState::default();
        // Never listed while the override was set; once it is gone the listing is due.
        assert_eq!(state.next_refresh(true, "fp1"), Refresh::NotNeeded);
        assert_eq!(state.next_refresh(false, "fp1"), Refresh::Now);
    }
}
