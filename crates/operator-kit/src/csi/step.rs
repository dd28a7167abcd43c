//! One reconcile of a CSI driver operator in progress: its ClusterCSIDriver and its
//! [`StepBoard`], where each step's `<Prefix>Degraded` is posted.

use std::sync::Arc;
use std::time::Duration;

use kube::api::DynamicObject;
use openshift_api::operator::ClusterCSIDriver;

pub use crate::board::{StepBoard, StepError};

/// One reconcile in progress: the CR as read (and as last written), the conditions posted so
/// far, whether a step failed and when to come back.
pub struct Pass {
    /// The decoded ClusterCSIDriver.
    pub cr: ClusterCSIDriver,
    /// The CR as last read or written; the status write builds on it.
    pub cr_obj: Arc<DynamicObject>,
    /// The conditions posted so far, and whether a step failed (the reconcile then ends
    /// `Failed` and is retried with backoff).
    pub board: StepBoard,
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
    /// Posts `<prefix>Degraded` for a step's result ([`StepBoard::post`]).
    pub fn post<T>(&mut self, prefix: &str, result: Result<T, StepError>) -> Option<T> {
        self.board.post(prefix, result)
    }

    /// Posts `<prefix>Degraded` for a step with notes ([`StepBoard::post_with_notes`]).
    pub fn post_with_notes(&mut self, prefix: &str, result: Result<Vec<String>, StepError>) {
        self.board.post_with_notes(prefix, result);
    }
}
