//! What `/healthz` and `/readyz` answer, from the process's real state.
//!
//! - `/healthz` (liveness): the process serves and its reconcile loop is not stuck: no
//!   reconcile has been running longer than [`Health::stuck_after`]. A restart is the cure for a
//!   wedged loop, not for a slow API server, so unsynced caches and a lost API do not fail it.
//! - `/readyz` (readiness): live, every watch cache has synced (or knows its kind is not
//!   served, or that RBAC refuses it, which the conditions report), and the leader election is
//!   running and has not lost the lease. A standby replica that is not leading is ready: it can
//!   take over at once, and its metrics are real, so it stays behind the metrics Service; only
//!   the leader writes (DESIGN §3).
//!
//! Both answer `ok` when every check passes, and otherwise (or with `?verbose`) one line per
//! check, `[+]name ok` or `[-]name failed: why`, as the Kubernetes API server's health
//! endpoints do. The checks never touch the network.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where the leader election is, as far as readiness cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leadership {
    /// Not started yet.
    NotStarted,
    /// Waiting for the lease (a standby).
    Standby,
    Leading,
    /// The lease was lost; the process is about to exit.
    Lost,
    /// Shutting down.
    Stopped,
}

/// A probe of the watch caches: the names of watches that have not synced yet.
pub type CacheProbe = Box<dyn Fn() -> Vec<String> + Send + Sync>;

#[derive(Debug)]
struct State {
    leadership: Leadership,
    /// When the reconcile in progress started.
    busy_since: Option<Instant>,
    /// When the last reconcile ended.
    last_finished: Option<Instant>,
    /// Set when no cache probe is installed.
    caches_synced: bool,
}

/// The process's health, shared by the loop (which writes it) and the endpoint (which reads).
pub struct Health {
    state: Mutex<State>,
    caches: Mutex<Option<CacheProbe>>,
    stuck_after: Duration,
}

/// Ends the reconcile it was made for when dropped (see [`Health::begin_reconcile`]).
pub struct ReconcileGuard(std::sync::Arc<Health>);

impl Drop for ReconcileGuard {
    fn drop(&mut self) {
        self.0.reconcile_finished();
    }
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub failure: Option<String>,
}

/// The answer of one endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub endpoint: &'static str,
    pub checks: Vec<Check>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.checks.iter().all(|c| c.failure.is_none())
    }

    /// The body: `ok`, or the check lines when something failed or `verbose` is asked.
    pub fn render(&self, verbose: bool) -> String {
        if self.ok() && !verbose {
            return "ok".into();
        }
        let mut out = String::new();
        for c in &self.checks {
            match &c.failure {
                None => out.push_str(&format!("[+]{} ok\n", c.name)),
                Some(why) => out.push_str(&format!("[-]{} failed: {why}\n", c.name)),
            }
        }
        if self.ok() {
            out.push_str(&format!("{} check passed\n", self.endpoint));
        } else {
            out.push_str(&format!("{} check failed\n", self.endpoint));
        }
        out
    }
}

impl Health {
    /// A reconcile running longer than `stuck_after` makes the process unhealthy.
    pub fn new(stuck_after: Duration) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self {
            state: Mutex::new(State {
                leadership: Leadership::NotStarted,
                busy_since: None,
                last_finished: None,
                caches_synced: false,
            }),
            caches: Mutex::new(None),
            stuck_after,
        })
    }

    /// How long a reconcile may run before the process counts as stuck.
    pub fn stuck_after(&self) -> Duration {
        self.stuck_after
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Readiness asks `probe` which watches are still syncing.
    pub fn watch_caches(&self, probe: CacheProbe) {
        *self
            .caches
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(probe);
    }

    /// Without a probe: whether the caches have synced.
    pub fn set_caches_synced(&self, synced: bool) {
        self.state().caches_synced = synced;
    }

    pub fn set_leadership(&self, l: Leadership) {
        self.state().leadership = l;
    }

    pub fn reconcile_started(&self) {
        self.reconcile_started_at(Instant::now());
    }

    /// Marks a reconcile as running until the guard is dropped, so a reconcile the loop
    /// cancels (lost lease, deadline, shutdown) does not look stuck forever.
    pub fn begin_reconcile(self: &std::sync::Arc<Self>) -> ReconcileGuard {
        self.reconcile_started();
        ReconcileGuard(self.clone())
    }

    pub fn reconcile_finished(&self) {
        self.reconcile_finished_at(Instant::now());
    }

    pub fn reconcile_started_at(&self, at: Instant) {
        self.state().busy_since = Some(at);
    }

    pub fn reconcile_finished_at(&self, at: Instant) {
        let mut s = self.state();
        s.busy_since = None;
        s.last_finished = Some(at);
    }

    /// When the last reconcile ended (for diagnostics).
    pub fn last_reconcile(&self) -> Option<Instant> {
        self.state().last_finished
    }

    fn loop_check(&self, now: Instant) -> Check {
        let s = self.state();
        let failure = s.busy_since.and_then(|since| {
            let running = now.saturating_duration_since(since);
            (running > self.stuck_after).then(|| {
                format!(
                    "a reconcile has been running for {}s (limit {}s)",
                    running.as_secs(),
                    self.stuck_after.as_secs()
                )
            })
        });
        Check {
            name: "reconcile-loop",
            failure,
        }
    }

    /// `/healthz` at `now`.
    pub fn healthz_at(&self, now: Instant) -> Report {
        Report {
            endpoint: "healthz",
            checks: vec![
                Check {
                    name: "ping",
                    failure: None,
                },
                self.loop_check(now),
            ],
        }
    }

    /// `/readyz` at `now`.
    pub fn readyz_at(&self, now: Instant) -> Report {
        let mut report = self.healthz_at(now);
        report.endpoint = "readyz";
        let unsynced = {
            let probe = self
                .caches
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match probe.as_ref() {
                Some(p) => p(),
                None if self.state().caches_synced => Vec::new(),
                None => vec!["(all)".to_string()],
            }
        };
        report.checks.push(Check {
            name: "informer-sync",
            failure: (!unsynced.is_empty())
                .then(|| format!("watches not synced yet: {}", unsynced.join(", "))),
        });
        let leadership = self.state().leadership;
        report.checks.push(Check {
            name: "leader-election",
            failure: match leadership {
                Leadership::Leading | Leadership::Standby => None,
                Leadership::NotStarted => Some("not started".into()),
                Leadership::Lost => Some("lost the lease; exiting".into()),
                Leadership::Stopped => Some("shutting down".into()),
            },
        });
        report
    }

    pub fn healthz(&self) -> Report {
        self.healthz_at(Instant::now())
    }

    pub fn readyz(&self) -> Report {
        self.readyz_at(Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_needs_synced_caches_and_a_running_election() {
        let h = Health::new(Duration::from_secs(60));
        let now = Instant::now();
        assert!(h.healthz_at(now).ok(), "alive from the start");
        let r = h.readyz_at(now);
        assert!(!r.ok());
        let body = r.render(false);
        assert!(body.contains("[-]informer-sync failed"), "{body}");
        assert!(
            body.contains("[-]leader-election failed: not started"),
            "{body}"
        );
        assert!(body.ends_with("readyz check failed\n"), "{body}");

        h.set_caches_synced(true);
        h.set_leadership(Leadership::Standby);
        assert!(h.readyz_at(now).ok(), "a synced standby is ready");
        assert_eq!(h.readyz_at(now).render(false), "ok");
        assert!(
            h.readyz_at(now)
                .render(true)
                .contains("[+]leader-election ok")
        );

        h.set_leadership(Leadership::Leading);
        assert!(h.readyz_at(now).ok());
        h.set_leadership(Leadership::Lost);
        assert!(!h.readyz_at(now).ok(), "a lost lease is not ready");
        assert!(
            h.healthz_at(now).ok(),
            "but the process is alive until it exits"
        );
    }

    #[test]
    fn a_reconcile_running_too_long_is_stuck_until_it_ends() {
        let h = Health::new(Duration::from_secs(60));
        h.set_caches_synced(true);
        h.set_leadership(Leadership::Leading);
        let t0 = Instant::now();
        h.reconcile_started_at(t0);
        assert!(
            h.healthz_at(t0 + Duration::from_secs(59)).ok(),
            "slow is fine"
        );
        let late = t0 + Duration::from_secs(61);
        let r = h.healthz_at(late);
        assert!(!r.ok());
        assert!(
            r.render(false)
                .contains("[-]reconcile-loop failed: a reconcile has been running for 61s"),
            "{}",
            r.render(false)
        );
        assert!(
            !h.readyz_at(late).ok(),
            "a stuck process is not ready either"
        );
        h.reconcile_finished_at(late);
        assert!(
            h.healthz_at(late + Duration::from_secs(600)).ok(),
            "idle is not stuck"
        );
        assert_eq!(h.last_reconcile(), Some(late));
    }

    #[test]
    fn a_cancelled_reconcile_is_not_stuck() {
        let h = Health::new(Duration::from_secs(1));
        let guard = h.begin_reconcile();
        assert!(h.state().busy_since.is_some());
        drop(guard);
        assert!(h.state().busy_since.is_none());
        assert!(h.last_reconcile().is_some());
    }

    #[test]
    fn the_cache_probe_names_what_is_missing() {
        let h = Health::new(Duration::from_secs(60));
        h.set_leadership(Leadership::Standby);
        h.watch_caches(Box::new(|| vec!["Secret".to_string()]));
        let body = h.readyz().render(false);
        assert!(body.contains("watches not synced yet: Secret"), "{body}");
        h.watch_caches(Box::new(Vec::new));
        assert!(h.readyz().ok());
    }
}
