//! The step board: the one place a step's `<Prefix>Degraded` condition is posted (library-go's
//! `WithSyncDegradedOnError`), for whatever CR the operator reports on — a driver's
//! ClusterCSIDriver ([`crate::csi::Pass`]) or the Cluster Storage Operator's `Storage/cluster`.
//!
//! A step returns `Result<_, StepError>`; [`StepBoard::post`] turns it into its condition:
//! `False / AsExpected` when it succeeded, `True` with the error's reason ([`StepError::reason`])
//! and text when it failed, and the reconcile is then failed.

use std::ops::{Deref, DerefMut};

use crate::apply::ApplyError;
use crate::conditions::{self, OperatorCondition, reasons};
use crate::desired::BuildError;
use crate::status::StatusBoard;

/// Why a step failed; its text is the message of the step's `<Prefix>Degraded=True` and
/// [`StepError::reason`] its reason.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// An object of the step could not be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// An object of the step could not be applied.
    #[error(transparent)]
    Apply(#[from] ApplyError),
    /// A request of the step itself failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// The config observer could not read or write the observed config (reason `Error`, as
    /// library-go's config observer).
    #[error(transparent)]
    ConfigObservation(#[from] crate::config_observer::ObservationError),
    /// Several objects of a static-resources group failed: one line each, in group order.
    #[error("{}", .0.join("\n"))]
    Objects(Vec<String>),
    /// A Deployment rolled out for longer than library-go allows.
    #[error(transparent)]
    ProgressingTooLong(#[from] crate::progressing::ProgressingTooLong),
    /// Objects of the driver settings could not be applied or removed.
    #[error(transparent)]
    Settings(#[from] crate::csi::SettingsFailures),
    /// Several failures of one step (e.g. one per Deployment), one line each.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    All(Vec<StepError>),
    /// An error of the operator's own kind (e.g. the Cluster Storage Operator's build errors),
    /// with the reason of its condition.
    #[error("{source}")]
    Other {
        reason: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A failure whose condition has a reason of its own (e.g. `ForeignCSIDriver`).
    #[error("{message}")]
    Reasoned {
        reason: &'static str,
        message: String,
    },
}

impl StepError {
    /// An error of the operator's own type, posted with its text (reason `SyncError`).
    pub fn other(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::with_reason(reasons::SYNC_ERROR, e)
    }

    /// An error of the operator's own type whose condition has the reason `reason`.
    pub fn with_reason(
        reason: &'static str,
        e: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Other {
            reason,
            source: Box::new(e),
        }
    }

    /// The reason of the `<Prefix>Degraded=True` this error posts.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::ConfigObservation(_) => reasons::ERROR,
            Self::Reasoned { reason, .. } | Self::Other { reason, .. } => reason,
            _ => reasons::SYNC_ERROR,
        }
    }

    /// The `<prefix>Degraded=True` condition of this error.
    pub fn condition(&self, prefix: &str) -> OperatorCondition {
        let mut c = conditions::degraded(prefix, Some(&self.to_string()));
        c.reason = self.reason().to_string();
        c
    }
}

/// The conditions a reconcile posted so far and whether a step failed. Derefs to the
/// [`StatusBoard`] for conditions that are not a step's `Degraded` (Available, Progressing,
/// generations, removed types).
#[derive(Debug, Default)]
pub struct StepBoard {
    status: StatusBoard,
    failed: bool,
}

impl StepBoard {
    pub fn new() -> Self {
        Self::default()
    }

    /// Posts `<prefix>Degraded` for a step's result: False when it succeeded, True with the
    /// error's reason and text when it failed (and the reconcile is then failed). Returns the
    /// value.
    pub fn post<T>(&mut self, prefix: &str, result: Result<T, StepError>) -> Option<T> {
        match result {
            Ok(value) => {
                self.status
                    .set_condition(conditions::degraded(prefix, None));
                Some(value)
            }
            Err(e) => {
                self.post_error(&[prefix], &e);
                None
            }
        }
    }

    /// Posts the same failure as `<prefix>Degraded=True` for each of `prefixes` (one cause that
    /// blocks several steps, e.g. a missing image) and fails the reconcile.
    pub fn post_error(&mut self, prefixes: &[&str], error: &StepError) {
        for prefix in prefixes {
            self.status.set_condition(error.condition(prefix));
        }
        self.failed = true;
    }

    /// Posts `<prefix>Degraded` for a step that applies many objects and has things to tell
    /// that are not failures (a class kept for a type that is gone, a name collision): False
    /// with the notes as its message when it succeeded; when it failed, as [`StepBoard::post`]
    /// (the error then says the notes after its failures).
    pub fn post_with_notes(&mut self, prefix: &str, result: Result<Vec<String>, StepError>) {
        match result {
            Ok(notes) => {
                let mut c = conditions::degraded(prefix, None);
                c.message = notes.join("\n");
                self.status.set_condition(c);
            }
            Err(e) => self.post_error(&[prefix], &e),
        }
    }

    /// Fails the reconcile for something that has no `Degraded` of its own (a status write
    /// that did not go through, a step that posts its own conditions).
    pub fn fail(&mut self) {
        self.failed = true;
    }

    /// Whether a step failed: the reconcile then ends `Failed` and is retried with backoff.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// The conditions and fields to write.
    pub fn status(&self) -> &StatusBoard {
        &self.status
    }
}

impl Deref for StepBoard {
    type Target = StatusBoard;

    fn deref(&self) -> &StatusBoard {
        &self.status
    }
}

impl DerefMut for StepBoard {
    fn deref_mut(&mut self) -> &mut StatusBoard {
        &mut self.status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_success_is_false_as_expected_and_does_not_fail() {
        let mut b = StepBoard::new();
        assert_eq!(b.post::<u8>("Foo", Ok(3)), Some(3));
        let c = b.condition("FooDegraded").expect("posted");
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", "AsExpected")
        );
        assert!(!b.failed());
    }

    /// A failure of a step of the operator's own, with this text.
    fn failure(text: &str) -> StepError {
        StepError::Objects(vec![text.to_string()])
    }

    #[test]
    fn a_failure_carries_its_reason_and_fails_the_reconcile() {
        let mut b = StepBoard::new();
        assert_eq!(b.post::<()>("Foo", Err(failure("boom"))), None);
        let c = b.condition("FooDegraded").expect("posted");
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            ("True", "SyncError", "boom")
        );
        assert!(b.failed());

        let mut b = StepBoard::new();
        b.post::<()>(
            "Starter",
            Err(StepError::Reasoned {
                reason: "ForeignCSIDriver",
                message: "not ours".into(),
            }),
        );
        let c = b.condition("StarterDegraded").expect("posted");
        assert_eq!(
            (c.reason.as_str(), c.message.as_str()),
            ("ForeignCSIDriver", "not ours")
        );
    }

    /// library-go's config observer posts `ConfigObservationDegraded` with reason `Error`.
    #[test]
    fn a_config_observation_error_has_reason_error() {
        let e = StepError::from(crate::config_observer::ObservationError::NoSpec);
        let c = e.condition(crate::config_observer::CONFIG_OBSERVATION_PREFIX);
        assert_eq!(
            (c.type_.as_str(), c.status.as_str(), c.reason.as_str()),
            ("ConfigObservationDegraded", "True", "Error")
        );
        assert_eq!(
            c.message,
            "the operator's custom resource has no spec; it must be recreated"
        );
    }

    #[test]
    fn several_failures_of_a_step_are_one_line_each() {
        let mut b = StepBoard::new();
        b.post::<()>(
            "Version",
            Err(StepError::All(vec![failure("first"), failure("second")])),
        );
        let c = b.condition("VersionDegraded").expect("posted");
        assert_eq!(
            (c.reason.as_str(), c.message.as_str()),
            ("SyncError", "first\nsecond")
        );
    }

    #[test]
    fn one_cause_can_fail_several_steps() {
        let mut b = StepBoard::new();
        b.post_error(&["A", "B"], &failure("no image"));
        for t in ["ADegraded", "BDegraded"] {
            assert_eq!(b.condition(t).map(|c| c.message.as_str()), Some("no image"));
        }
        assert!(b.failed());
    }

    #[test]
    fn notes_are_the_message_of_a_success_and_a_failure_is_posted_as_it_is() {
        let mut b = StepBoard::new();
        b.post_with_notes("Foo", Ok(vec!["kept x".into(), "kept y".into()]));
        let c = b.condition("FooDegraded").expect("posted");
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            ("False", "AsExpected", "kept x\nkept y")
        );
        assert!(!b.failed());
        b.post_with_notes(
            "Foo",
            Err(StepError::Reasoned {
                reason: "Odd",
                message: "e1\nkept x".into(),
            }),
        );
        let c = b.condition("FooDegraded").expect("posted");
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            ("True", "Odd", "e1\nkept x")
        );
        assert!(b.failed());
    }
}
