//! How soon to ask OpenStack again after a failure, shared by both operators so that Cinder's
//! zone listing and Manila's share-type check back off alike.
//!
//! Three paces, from what the failure says about the cloud:
//! - [`Retry::Soon`]: an outage, a timeout or an unusable answer may pass by itself within
//!   seconds (a Keystone or API node restarting, a load balancer failing over), so the wait
//!   starts at 5 s.
//! - [`Retry::Slowly`]: rejected (401) or forbidden (403) credentials usually stay rejected
//!   until someone changes them, and a change of the Secret is acted on at once anyway. But a
//!   401 can also come from Keystone itself (an identity back end that is down, Fernet keys
//!   out of step between Keystone nodes), so the credentials are tried again, starting at
//!   30 s. No sooner: Keystone can lock an account out after repeated failed
//!   authentications (`lockout_failure_attempts`).
//! - [`Retry::AtRefresh`]: nothing but a change made by someone can help (a malformed
//!   clouds.yaml, a cloud without the service), so the next try is the regular refresh.
//!
//! Each further failure of the same pace doubles the wait, never beyond the refresh interval.
//! Pure: no clock, no I/O.

use std::time::Duration;

use crate::ErrorKind;

/// The first wait after a failure that may pass by itself.
pub const FIRST_RETRY_SOON: Duration = Duration::from_secs(5);
/// The first wait after rejected or forbidden credentials.
pub const FIRST_RETRY_SLOWLY: Duration = Duration::from_secs(30);

/// How soon a failed request is worth repeating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// 5 s, 10 s, 20 s, … up to the refresh interval.
    Soon,
    /// 30 s, 60 s, 120 s, … up to the refresh interval.
    Slowly,
    /// At the refresh interval.
    AtRefresh,
}

impl Retry {
    /// The wait before the next attempt after `failures_in_a_row` failures of this pace (one
    /// or more), never longer than `refresh`. A refresh shorter than the first wait is not
    /// lengthened.
    pub fn wait(self, failures_in_a_row: u32, refresh: Duration) -> Duration {
        let first = match self {
            Retry::Soon => FIRST_RETRY_SOON,
            Retry::Slowly => FIRST_RETRY_SLOWLY,
            Retry::AtRefresh => return refresh,
        };
        let doublings = failures_in_a_row.saturating_sub(1).min(16);
        first.saturating_mul(1u32 << doublings).min(refresh)
    }
}

impl ErrorKind {
    /// The pace at which a request that failed this way is repeated.
    pub fn retry(self) -> Retry {
        match self {
            ErrorKind::CredentialsRejected | ErrorKind::Forbidden => Retry::Slowly,
            ErrorKind::InvalidConfig | ErrorKind::MissingEndpoint => Retry::AtRefresh,
            ErrorKind::NotFound
            | ErrorKind::ServerError
            | ErrorKind::Timeout
            | ErrorKind::Unreachable
            | ErrorKind::Tls
            | ErrorKind::InvalidResponse => Retry::Soon,
        }
    }
}

/// Counts failures in a row and says how long to wait after the latest; a success, or a
/// failure of another pace, starts the count over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backoff {
    latest: Option<(Retry, u32)>,
}

impl Backoff {
    /// Records an outcome: `None` for a success, the failure's pace otherwise.
    pub fn record(&mut self, failure: Option<Retry>) {
        self.latest = failure.map(|pace| match self.latest {
            Some((last, n)) if last == pace => (pace, n.saturating_add(1)),
            _ => (pace, 1),
        });
    }

    /// Starts over, e.g. when the credentials change.
    pub fn reset(&mut self) {
        self.latest = None;
    }

    /// The wait after the latest outcome: `refresh` after a success or before any attempt.
    pub fn wait(&self, refresh: Duration) -> Duration {
        match self.latest {
            None => refresh,
            Some((pace, n)) => pace.wait(n, refresh),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REFRESH: Duration = Duration::from_secs(300);

    fn waits(pace: Retry, count: usize) -> Vec<u64> {
        let mut b = Backoff::default();
        (0..count)
            .map(|_| {
                b.record(Some(pace));
                b.wait(REFRESH).as_secs()
            })
            .collect()
    }

    #[test]
    fn each_pace_doubles_up_to_the_refresh() {
        assert_eq!(
            waits(Retry::Soon, 9),
            [5, 10, 20, 40, 80, 160, 300, 300, 300]
        );
        assert_eq!(waits(Retry::Slowly, 6), [30, 60, 120, 240, 300, 300]);
        assert_eq!(waits(Retry::AtRefresh, 3), [300, 300, 300]);
    }

    #[test]
    fn a_success_or_another_pace_starts_over() {
        let mut b = Backoff::default();
        assert_eq!(b.wait(REFRESH), REFRESH, "nothing failed yet");
        for _ in 0..4 {
            b.record(Some(Retry::Soon));
        }
        assert_eq!(b.wait(REFRESH), Duration::from_secs(40));
        b.record(Some(Retry::Slowly));
        assert_eq!(b.wait(REFRESH), Duration::from_secs(30));
        b.record(None);
        assert_eq!(b.wait(REFRESH), REFRESH);
        b.record(Some(Retry::Soon));
        assert_eq!(b.wait(REFRESH), Duration::from_secs(5));
        b.reset();
        assert_eq!(b.wait(REFRESH), REFRESH);
    }

    #[test]
    fn a_short_refresh_is_not_lengthened_and_huge_counts_do_not_overflow() {
        assert_eq!(
            Retry::Slowly.wait(1, Duration::from_secs(2)),
            Duration::from_secs(2)
        );
        assert_eq!(
            Retry::Soon.wait(u32::MAX, Duration::MAX),
            Duration::from_secs(5 << 16)
        );
        assert_eq!(Retry::Soon.wait(0, REFRESH), FIRST_RETRY_SOON);
    }

    #[test]
    fn credentials_are_retried_slowly_and_configuration_at_the_refresh() {
        assert_eq!(ErrorKind::CredentialsRejected.retry(), Retry::Slowly);
        assert_eq!(ErrorKind::Forbidden.retry(), Retry::Slowly);
        assert_eq!(ErrorKind::InvalidConfig.retry(), Retry::AtRefresh);
        assert_eq!(ErrorKind::MissingEndpoint.retry(), Retry::AtRefresh);
        for kind in [
            ErrorKind::NotFound,
            ErrorKind::ServerError,
            ErrorKind::Timeout,
            ErrorKind::Unreachable,
            ErrorKind::Tls,
            ErrorKind::InvalidResponse,
        ] {
            assert_eq!(kind.retry(), Retry::Soon, "{kind:?}");
        }
    }
}
