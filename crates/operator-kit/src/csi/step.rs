//! What a step of a CSI driver operator returns, and the one place its `<Prefix>Degraded`
//! condition is posted (library-go's `WithSyncDegradedOnError`).

use std::sync::Arc;
use std::time::Duration;

use kube::api::DynamicObject;
use openshift_api::operator::ClusterCSIDriver;

use crate::apply::ApplyError;
use crate::conditions;
use crate::desired::BuildError;
use crate::status::StatusBoard;

/// Why a step failed; its text is the message of the step's `<Prefix>Degraded=True`.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error(transparent)]
    Apply(#[from] ApplyError),
    /// A message the step wrote itself (what is wrong and how to fix it).
    #[error("{0}")]
    Message(String),
}

impl From<String> for StepError {
    fn from(message: String) -> Self {
        Self::Message(message)
    }
}

impl From<&str> for StepError {
    fn from(message: &str) -> Self {
        Self::Message(message.to_string())
    }
}

/// One reconcile in progress: the CR as read (and as last written), the conditions posted so
/// far, whether a step failed and when to come back.
pub struct Pass {
    /// The decoded ClusterCSIDriver.
    pub cr: ClusterCSIDriver,
    /// The CR as last read or written; the status write builds on it.
    pub cr_obj: Arc<DynamicObject>,
    pub board: StatusBoard,
    /// A step failed: the reconcile ends `Failed` and is retried with backoff.
    pub failed: bool,
    /// When the reconcile is due again regardless of events (a driver's OpenStack timer).
    pub requeue_after: Option<Duration>,
    /// Set by a driver's step before the workloads: the controller Deployment and the node
    /// DaemonSets are not applied in this pass, and their conditions say why.
    pub hold_workloads: Option<Hold>,
}

/// Why a driver holds its controller and node services back (e.g. another installation of
/// the same driver still runs): the reason and message of their `Available=False` and
/// `Progressing=True`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    pub reason: String,
    pub message: String,
}

impl Pass {
    /// Posts `<prefix>Degraded` for a step's result: False when it succeeded, True with the
    /// error's text when it failed (and the reconcile is then failed). Returns the value.
    pub fn post<T>(&mut self, prefix: &str, result: Result<T, StepError>) -> Option<T> {
        match result {
            Ok(value) => {
                self.board.set_condition(conditions::degraded(prefix, None));
                Some(value)
            }
            Err(e) => {
                self.board
                    .set_condition(conditions::degraded(prefix, Some(&e.to_string())));
                self.failed = true;
                None
            }
        }
    }

    /// Posts `<prefix>Degraded` for a step that applies many objects and has things to tell
    /// that are not failures (a class kept for a type that is gone, a name collision): True
    /// with the errors and then the notes when anything failed, else False with the notes as
    /// its message.
    pub fn post_with_notes(&mut self, prefix: &str, mut errors: Vec<String>, notes: Vec<String>) {
        if errors.is_empty() {
            let mut c = conditions::degraded(prefix, None);
            c.message = notes.join("\n");
            self.board.set_condition(c);
        } else {
            errors.extend(notes);
            self.post::<()>(prefix, Err(errors.join("\n").into()));
        }
    }
}
