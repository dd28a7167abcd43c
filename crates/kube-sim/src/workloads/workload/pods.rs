//! Pods as the simulator imagines them: admission of a template, with no Pod objects stored.

use super::helpers::later;
use crate::pod_admission::Verdict;
use jiff::{SignedDuration, Timestamp};

/// When a group of pods started and, once they passed their readiness checks, since when they
/// have been ready. Readiness is kept once reached, so raising the delay later does not take
/// running pods down; lowering it speeds up the pods still starting.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Start {
    pub(super) since: Timestamp,
    pub(super) ready_since: Option<Timestamp>,
}

impl Start {
    pub(super) fn at(now: Timestamp) -> Self {
        Self {
            since: now,
            ready_since: None,
        }
    }

    /// Pods found already running when the simulator first sees them.
    pub(super) fn settled() -> Self {
        Self {
            since: Timestamp::UNIX_EPOCH,
            ready_since: Some(Timestamp::UNIX_EPOCH),
        }
    }

    /// Marks the pods ready once the delay has passed; pods held unavailable lose readiness.
    pub(super) fn latch(&mut self, up: bool, delay: SignedDuration, now: Timestamp) {
        if !up {
            self.ready_since = None;
        } else if self.ready_since.is_none() && now >= later(self.since, delay) {
            self.ready_since = Some(later(self.since, delay));
        }
    }

    pub(super) fn ready(&self) -> bool {
        self.ready_since.is_some()
    }

    /// Ready for at least `min_ready` (the pod's `minReadySeconds`).
    pub(super) fn available(&self, min_ready: SignedDuration, now: Timestamp) -> bool {
        self.ready_since.is_some_and(|r| now >= later(r, min_ready))
    }

    /// When the pods will next become ready or available by themselves.
    pub(super) fn next_change(
        &self,
        up: bool,
        delay: SignedDuration,
        min_ready: SignedDuration,
        now: Timestamp,
    ) -> Option<Timestamp> {
        if !up {
            return None;
        }
        let at = match self.ready_since {
            None => later(self.since, delay),
            Some(r) => later(r, min_ready),
        };
        (at > now).then_some(at)
    }
}

/// Whether the controller can create a workload's pods now.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PodCreation {
    /// Admitted (or no admission applies).
    #[default]
    Admitted,
    /// Admission cannot decide yet (the namespace has no UID range): no pod, no failure.
    Pending,
    /// Refused, with the API server's message.
    Refused(String),
}

impl PodCreation {
    pub(super) fn of(verdict: Verdict) -> Self {
        match verdict {
            Verdict::Admitted(_) => Self::Admitted,
            Verdict::Pending(_) => Self::Pending,
            Verdict::Refused(m) => Self::Refused(m),
        }
    }

    pub(super) fn blocked(&self) -> bool {
        *self != Self::Admitted
    }
}

pub(super) fn earliest(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
