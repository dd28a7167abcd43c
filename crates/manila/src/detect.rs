//! Is Manila usable? The pure state of the detection (anchors §5.1), kept between reconciles.
//!
//! The operator authenticates with the `openstack-cloud-credentials` Secret, looks `sharev2` up
//! in the Keystone catalog and lists share types. This module decides *when* to check again
//! (on a timer, and at once when the credentials change), turns each failure into a message
//! that says which check failed and what to do, and remembers the outcome:
//!
//! * until the first success the driver is **disabled** (nothing deployed, condition
//!   `CSIControllerDisabled=True`);
//! * after it the driver is **enabled for good**: later failures (an outage, rotated
//!   credentials that do not work) are reported, but nothing is torn down, because pods must
//!   still be able to unmount their shares; the last good share-type list keeps being used;
//! * every share type ever seen is remembered, so one that disappears can be named.
//!
//! No I/O and no clock reads: callers pass `Instant`s and the results of their calls. The
//! checks themselves run in the background (see the operator); a result is recorded only for
//! the credentials it was made with, when they are still the current ones.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use openstack::{Backoff, ErrorKind, Retry};

/// Default interval between share-type listings (`--share-type-refresh`).
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(300);

/// Which check failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The credentials Secret is missing, has no `clouds.yaml`, or it cannot be parsed.
    InvalidCredentials,
    /// Keystone rejected the credentials (401).
    CredentialsRejected,
    /// 403 from Keystone or Manila.
    Forbidden,
    /// 404 from Keystone or Manila.
    NotFound,
    /// The catalog has no `sharev2` service: this cloud has no Manila.
    NoManilaService,
    /// Manila answered with an empty share-type list.
    NoShareTypes,
    /// No answer in time.
    Timeout,
    /// No connection, or a TLS failure.
    Unreachable,
    /// Anything else (5xx, unusable answers).
    Other,
}

/// A failed detection: the kind and a message that says what failed and what to do. Never
/// holds a secret (the OpenStack client scrubs its errors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

impl Failure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// The credentials cannot be used at all (missing Secret, key, or malformed clouds.yaml).
    /// The message says where the Secret comes from on this platform (`kubernetes`: the
    /// `kubectl create secret` command; else the cloud credential operator).
    pub fn invalid_credentials(
        namespace: &str,
        name: &str,
        kubernetes: bool,
        what: impl std::fmt::Display,
    ) -> Self {
        let hint = operator_kit::csi::credentials_secret_hint(kubernetes, namespace, name);
        Self::new(
            FailureKind::InvalidCredentials,
            format!("the credentials in Secret {namespace}/{name} cannot be used: {what}; {hint}"),
        )
    }

    /// The catalog lists no Manila.
    pub fn no_manila_service() -> Self {
        Self::new(
            FailureKind::NoManilaService,
            "the OpenStack catalog has no Shared File Systems service (sharev2): this cloud does not offer Manila, so the Manila CSI driver is not installed. Nothing needs to be done unless Manila is expected; then check that the Manila endpoint is registered in Keystone for the region in clouds.yaml",
        )
    }

    /// Manila has no share types.
    pub fn no_share_types() -> Self {
        Self::new(
            FailureKind::NoShareTypes,
            "manila does not provide any share types: ask the cloud administrator to create a public share type (e.g. `openstack share type create default false`)",
        )
    }

    /// Classifies an error of the OpenStack client. Its message already names the step and
    /// what to check.
    pub fn from_openstack(error: &openstack::Error) -> Self {
        let kind = match error.kind() {
            ErrorKind::InvalidConfig => FailureKind::InvalidCredentials,
            ErrorKind::CredentialsRejected => FailureKind::CredentialsRejected,
            ErrorKind::Forbidden => FailureKind::Forbidden,
            ErrorKind::NotFound => FailureKind::NotFound,
            ErrorKind::MissingEndpoint => FailureKind::NoManilaService,
            ErrorKind::Timeout => FailureKind::Timeout,
            ErrorKind::Unreachable | ErrorKind::Tls => FailureKind::Unreachable,
            ErrorKind::ServerError | ErrorKind::InvalidResponse => FailureKind::Other,
        };
        let message = match kind {
            FailureKind::CredentialsRejected => {
                format!("cannot authenticate with given credentials: {error}")
            }
            FailureKind::NoManilaService => {
                format!("cannot find an endpoint for Shared File Systems API v2: {error}")
            }
            _ => error.to_string(),
        };
        Self::new(kind, message)
    }
}

/// What the detection says now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Not checked yet.
    Unknown,
    /// Manila has never been usable: deploy nothing. The failure of the latest check.
    Disabled(Failure),
    /// Manila was usable once: the driver stays.
    Enabled {
        /// Share types of the latest successful listing, sorted.
        share_types: Vec<String>,
        /// Share types seen before that are gone now, sorted.
        gone: Vec<String>,
        /// The latest check failed with this (the share types are the last good ones).
        error: Option<Failure>,
    },
}

impl FailureKind {
    /// How soon a check that failed this way is repeated ([`openstack::Retry`]): an outage, a
    /// timeout or an unusable answer from 5 s; rejected or forbidden credentials from 30 s (a
    /// change of the Secret is checked at once anyway); a cloud without Manila or without
    /// share types, or an unusable Secret, at the refresh interval only, so a Manila-less
    /// cloud costs one catalog read per refresh.
    pub fn retry(self) -> Retry {
        match self {
            FailureKind::Timeout
            | FailureKind::Unreachable
            | FailureKind::Other
            | FailureKind::NotFound => Retry::Soon,
            FailureKind::CredentialsRejected | FailureKind::Forbidden => Retry::Slowly,
            FailureKind::InvalidCredentials
            | FailureKind::NoManilaService
            | FailureKind::NoShareTypes => Retry::AtRefresh,
        }
    }
}

/// The detection state of one operator process.
#[derive(Debug, Clone)]
pub struct Detection {
    refresh: Duration,
    checked: Option<(Instant, String)>,
    /// Failures in a row since the last success or credentials change.
    backoff: Backoff,
    last_error: Option<Failure>,
    current: Option<Vec<String>>,
    seen: BTreeSet<String>,
}

impl Detection {
    /// `refresh`: how often to check again (zero is treated as one second, so a typo cannot
    /// turn the operator into a Keystone hammer).
    pub fn new(refresh: Duration) -> Self {
        Self {
            refresh: refresh.max(Duration::from_secs(1)),
            checked: None,
            backoff: Backoff::default(),
            last_error: None,
            current: None,
            seen: BTreeSet::new(),
        }
    }

    /// How long after the last check the next one is due: the refresh interval, or sooner
    /// after a failure that may pass ([`FailureKind::retry`]).
    fn interval(&self) -> Duration {
        self.backoff.wait(self.refresh)
    }

    /// Whether a check is due: never checked, the credentials changed (`fingerprint`), or the
    /// refresh interval passed.
    pub fn is_due(&self, now: Instant, fingerprint: &str) -> bool {
        match &self.checked {
            None => true,
            Some((at, fp)) => fp != fingerprint || now.duration_since(*at) >= self.interval(),
        }
    }

    /// How long until the next check is due (for the reconcile's requeue).
    pub fn next_check_in(&self, now: Instant) -> Duration {
        match &self.checked {
            None => Duration::ZERO,
            Some((at, _)) => self.interval().saturating_sub(now.duration_since(*at)),
        }
    }

    /// Records a check that finished, made with credentials `used`, if those are still the
    /// `current` ones. A check whose credentials changed while it ran says nothing about the
    /// new ones (a success must not enable the driver, a failure must not be blamed on them):
    /// it is dropped and `false` returned; the new credentials are then due at once.
    pub fn finish(
        &mut self,
        now: Instant,
        used: &str,
        current: &str,
        result: Result<Vec<String>, Failure>,
    ) -> bool {
        if used != current {
            return false;
        }
        self.record(now, used, result);
        true
    }

    /// When the reconcile should run again for the detection's sake: when the next check is
    /// due, or, while one is `running`, not on a timer at all (a finished check asks for a
    /// reconcile itself), so a slow OpenStack is waited for without polling.
    pub fn requeue_after(&self, now: Instant, running: bool) -> Option<Duration> {
        (!running).then(|| self.next_check_in(now))
    }

    /// Records the result of a check made with credentials `fingerprint`: the share-type
    /// names, or the failure. An empty list is recorded as [`Failure::no_share_types`].
    pub fn record(
        &mut self,
        now: Instant,
        fingerprint: &str,
        result: Result<Vec<String>, Failure>,
    ) {
        let same_credentials = self
            .checked
            .as_ref()
            .is_some_and(|(_, fp)| fp == fingerprint);
        if !same_credentials {
            self.backoff.reset();
        }
        self.checked = Some((now, fingerprint.to_string()));
        let failure = match &result {
            Ok(names) if names.is_empty() => Some(FailureKind::NoShareTypes.retry()),
            Ok(_) => None,
            Err(f) => Some(f.kind.retry()),
        };
        self.backoff.record(failure);
        match result {
            Ok(names) if names.is_empty() => self.last_error = Some(Failure::no_share_types()),
            Ok(mut names) => {
                names.sort();
                names.dedup();
                self.seen.extend(names.iter().cloned());
                self.current = Some(names);
                self.last_error = None;
            }
            Err(f) => self.last_error = Some(f),
        }
    }

    /// Whether the driver has been enabled (and so stays deployed).
    pub fn enabled(&self) -> bool {
        self.current.is_some()
    }

    pub fn status(&self) -> Status {
        match (&self.current, &self.last_error) {
            (Some(current), error) => Status::Enabled {
                share_types: current.clone(),
                gone: self
                    .seen
                    .iter()
                    .filter(|s| !current.contains(s))
                    .cloned()
                    .collect(),
                error: error.clone(),
            },
            (None, Some(f)) => Status::Disabled(f.clone()),
            (None, None) => Status::Unknown,
        }
    }

    pub fn refresh(&self) -> Duration {
        self.refresh
    }
}

/// Formats a duration as Go does for the common cases (`5m0s`, `30s`, `1h0m0s`), for messages
/// users compare with the flag they set.
pub fn go_duration(d: Duration) -> String {
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    if h > 0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openstack::{Error, Failure as HttpFailure, Step};

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    /// An outage, a timeout or an unusable answer is retried after 5 s, 10 s, 20 s, … up to
    /// the refresh interval, so a Manila that was down when the cluster came up is found
    /// within seconds of coming back; a success or new credentials start over.
    #[test]
    fn transient_failures_are_retried_sooner_with_a_doubling_wait() {
        let t0 = Instant::now();
        let mut d = Detection::new(Duration::from_secs(300));
        let down = || Err(Failure::new(FailureKind::Unreachable, "down"));
        let mut at = t0;
        for expected in [5, 10, 20, 40, 80, 160, 300, 300] {
            d.record(at, "a", down());
            assert_eq!(d.next_check_in(at), Duration::from_secs(expected));
            assert!(!d.is_due(at + Duration::from_secs(expected - 1), "a"));
            assert!(d.is_due(at + Duration::from_secs(expected), "a"));
            at += Duration::from_secs(expected);
        }
        d.record(at, "a", Ok(names(&["default"])));
        assert_eq!(d.next_check_in(at), Duration::from_secs(300));
        d.record(at, "a", down());
        assert_eq!(
            d.next_check_in(at),
            Duration::from_secs(5),
            "counting starts over"
        );
        d.record(at, "b", down());
        assert_eq!(
            d.next_check_in(at),
            Duration::from_secs(5),
            "new credentials start over"
        );
        // A refresh shorter than the first retry is not lengthened.
        let mut quick = Detection::new(Duration::from_secs(2));
        quick.record(t0, "a", down());
        assert_eq!(quick.next_check_in(t0), Duration::from_secs(2));
    }

    /// Rejected credentials are retried from 30 s (not sooner: Keystone may lock the account
    /// out), doubling up to the refresh.
    #[test]
    fn rejected_credentials_are_retried_slowly() {
        let t0 = Instant::now();
        for kind in [FailureKind::CredentialsRejected, FailureKind::Forbidden] {
            let mut d = Detection::new(Duration::from_secs(300));
            let mut at = t0;
            for expected in [30, 60, 120, 240, 300] {
                d.record(at, "a", Err(Failure::new(kind, "x")));
                assert_eq!(
                    d.next_check_in(at),
                    Duration::from_secs(expected),
                    "{kind:?}"
                );
                at += Duration::from_secs(expected);
            }
        }
    }

    /// A cloud without Manila (or share types), or an unusable Secret, is not asked more
    /// often than the refresh.
    #[test]
    fn absent_manila_and_unusable_secrets_wait_for_the_refresh() {
        let t0 = Instant::now();
        for kind in [
            FailureKind::NoManilaService,
            FailureKind::NoShareTypes,
            FailureKind::InvalidCredentials,
        ] {
            let mut d = Detection::new(Duration::from_secs(300));
            d.record(t0, "a", Err(Failure::new(kind, "x")));
            d.record(t0, "a", Err(Failure::new(kind, "x")));
            assert_eq!(d.next_check_in(t0), Duration::from_secs(300), "{kind:?}");
        }
    }

    #[test]
    fn due_first_on_timer_and_on_credential_change() {
        let t0 = Instant::now();
        let mut d = Detection::new(Duration::from_secs(300));
        assert!(d.is_due(t0, "a"));
        assert_eq!(d.status(), Status::Unknown);
        d.record(t0, "a", Ok(names(&["default"])));
        assert!(!d.is_due(t0 + Duration::from_secs(299), "a"));
        assert!(d.is_due(t0 + Duration::from_secs(300), "a"));
        assert!(d.is_due(t0 + Duration::from_secs(1), "b"), "rotation");
        assert_eq!(
            d.next_check_in(t0 + Duration::from_secs(100)),
            Duration::from_secs(200)
        );
        assert_eq!(
            Detection::new(Duration::ZERO).refresh(),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn a_check_made_with_replaced_credentials_is_dropped() {
        let t0 = Instant::now();
        let mut d = Detection::new(DEFAULT_REFRESH);
        // The first check ran with "a"; the Secret now holds "b".
        assert!(!d.finish(t0, "a", "b", Ok(names(&["default"]))));
        assert_eq!(d.status(), Status::Unknown, "no result for b yet");
        assert!(
            !d.enabled(),
            "a success with old credentials enables nothing"
        );
        assert!(d.is_due(t0, "b"));
        assert!(d.finish(t0, "b", "b", Ok(names(&["default"]))));
        assert!(d.enabled());
        // Later a failure with credentials since replaced is not blamed on the new ones.
        assert!(!d.finish(t0, "b", "c", Err(Failure::no_share_types())));
        assert!(matches!(d.status(), Status::Enabled { error: None, .. }));
        assert!(d.is_due(t0, "c"));
    }

    #[test]
    fn no_timer_while_a_check_runs() {
        let t0 = Instant::now();
        let mut d = Detection::new(Duration::from_secs(300));
        assert_eq!(d.requeue_after(t0, true), None, "the first check runs");
        d.record(t0, "a", Ok(names(&["default"])));
        assert_eq!(
            d.requeue_after(t0 + Duration::from_secs(100), false),
            Some(Duration::from_secs(200))
        );
        // Due, and its check is running (hung, say): no busy requeue.
        assert_eq!(d.requeue_after(t0 + Duration::from_secs(400), true), None);
    }

    #[test]
    fn disabled_until_the_first_success_then_enabled_for_good() {
        let t0 = Instant::now();
        let mut d = Detection::new(DEFAULT_REFRESH);
        d.record(t0, "a", Err(Failure::no_manila_service()));
        assert!(
            matches!(d.status(), Status::Disabled(f) if f.kind == FailureKind::NoManilaService)
        );
        assert!(!d.enabled());
        d.record(t0, "a", Ok(vec![]));
        assert!(matches!(d.status(), Status::Disabled(f) if f.kind == FailureKind::NoShareTypes));
        d.record(t0, "a", Ok(names(&["b", "a", "a"])));
        assert_eq!(
            d.status(),
            Status::Enabled {
                share_types: names(&["a", "b"]),
                gone: vec![],
                error: None
            }
        );
        // An outage later: still enabled, last good list, the error reported.
        d.record(t0, "a", Err(Failure::new(FailureKind::Unreachable, "down")));
        let Status::Enabled {
            share_types, error, ..
        } = d.status()
        else {
            panic!("must stay enabled");
        };
        assert_eq!(share_types, names(&["a", "b"]));
        assert_eq!(error.map(|e| e.kind), Some(FailureKind::Unreachable));
        // Zero share types later is a failure too, not a teardown.
        d.record(t0, "a", Ok(vec![]));
        assert!(d.enabled());
    }

    #[test]
    fn disappeared_share_types_are_named() {
        let t0 = Instant::now();
        let mut d = Detection::new(DEFAULT_REFRESH);
        d.record(t0, "a", Ok(names(&["gold", "silver"])));
        d.record(t0, "a", Ok(names(&["silver", "bronze"])));
        let Status::Enabled {
            share_types, gone, ..
        } = d.status()
        else {
            panic!()
        };
        assert_eq!(share_types, names(&["bronze", "silver"]));
        assert_eq!(gone, names(&["gold"]));
    }

    #[test]
    fn openstack_errors_are_classified_with_advice() {
        let req = |step, failure| Error::Request {
            step,
            url: "https://keystone.example/v3".into(),
            failure,
        };
        let cases = [
            (
                req(
                    Step::Authenticate,
                    HttpFailure::Status {
                        code: 401,
                        message: None,
                    },
                ),
                FailureKind::CredentialsRejected,
                "cannot authenticate with given credentials",
            ),
            (
                req(
                    Step::ListShareTypes,
                    HttpFailure::Status {
                        code: 403,
                        message: None,
                    },
                ),
                FailureKind::Forbidden,
                "forbidden",
            ),
            (
                req(
                    Step::ListShareTypes,
                    HttpFailure::Status {
                        code: 404,
                        message: None,
                    },
                ),
                FailureKind::NotFound,
                "not found",
            ),
            (
                req(
                    Step::Authenticate,
                    HttpFailure::Timeout {
                        after: Duration::from_secs(120),
                    },
                ),
                FailureKind::Timeout,
                "timeout",
            ),
            (
                req(
                    Step::Authenticate,
                    HttpFailure::Unreachable {
                        reason: "connection refused".into(),
                    },
                ),
                FailureKind::Unreachable,
                "cannot connect",
            ),
            (
                Error::EndpointNotFound("no sharev2 in region RegionOne".into()),
                FailureKind::NoManilaService,
                "Shared File Systems API v2",
            ),
            (
                Error::CloudsYaml("cloud \"openstack\" not found".into()),
                FailureKind::InvalidCredentials,
                "clouds.yaml",
            ),
        ];
        for (error, kind, text) in cases {
            let f = Failure::from_openstack(&error);
            assert_eq!(f.kind, kind, "{error}");
            assert!(f.message.contains(text), "{}", f.message);
        }
        let f = Failure::invalid_credentials("ns", "secret", false, "no clouds.yaml key");
        assert!(f.message.contains("ns/secret") && f.message.contains("no clouds.yaml key"));
        assert!(f.message.contains("CredentialsRequest"), "{}", f.message);
        assert!(!f.message.contains("kubectl"), "{}", f.message);
        let f = Failure::invalid_credentials("ns", "secret", true, "the Secret does not exist");
        assert!(
            f.message.contains(
                "`kubectl -n ns create secret generic secret --from-file=clouds.yaml=./clouds.yaml"
            ),
            "{}",
            f.message
        );
        assert!(!f.message.contains("CredentialsRequest"), "{}", f.message);
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_duration(Duration::from_secs(300)), "5m0s");
        assert_eq!(go_duration(Duration::from_secs(30)), "30s");
        assert_eq!(go_duration(Duration::from_secs(3661)), "1h1m1s");
    }
}
