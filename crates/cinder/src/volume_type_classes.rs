//! Opt-in StorageClasses per Cinder volume type, at run time: the listing of volume types in
//! the background (it nudges the loop when its answer is ready, so a slow or hung Cinder never
//! holds up the other steps), and the step that applies one class per public type and says
//! what it did in `CinderVolumeTypeStorageClassControllerDegraded`. The decisions are in
//! [`crate::volume_types`].
//!
//! Off (the default), the step writes nothing, asks Cinder nothing and posts no condition.

use std::sync::Arc;
use std::time::{Duration, Instant};

use openshift_api::operator::StorageClassState;
use openstack::{Retry, VolumeType};
use operator_kit::cache::Background;
use operator_kit::conditions;
use operator_kit::csi::{Kit, Offered, Pass, StepError};
use tracing::warn;

use crate::config_sync::{OpenStackInputs, openstack_client, openstack_inputs};
use crate::volume_types::{self, Failure, Listing, OptIn};

/// Condition prefix (ours; OpenShift has no such classes), declared with the classes.
pub use crate::volume_types::CLASS_STEP_PREFIX as PREFIX;

/// Why the step cannot make its classes (reason `SyncError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VolumeTypeClassError {
    /// The opt-in annotation holds something other than `true` or `false`.
    #[error("{0}")]
    InvalidOptIn(String),
    /// Cinder's volume types have not been listed yet, and the last listing failed.
    #[error("{0}")]
    NotListed(String),
}

impl From<VolumeTypeClassError> for StepError {
    fn from(e: VolumeTypeClassError) -> Self {
        StepError::other(e)
    }
}

type Task = Background<Result<Vec<VolumeType>, Failure>>;

/// What the step keeps between reconciles.
pub struct VolumeTypeClasses {
    listing: Listing,
    openstack: Arc<openstack::Session>,
    /// A listing in the background, with the fingerprint of the credentials it uses.
    running: Option<(String, Task)>,
}

impl VolumeTypeClasses {
    /// Volume types are listed again every `refresh` (the topology refresh).
    pub fn new(refresh: Duration) -> Self {
        Self {
            listing: Listing::new(refresh),
            openstack: Arc::new(openstack::Session::new()),
            running: None,
        }
    }

    /// The step: off, nothing; on, the classes as `spec.storageClassState` asks.
    pub async fn step(&mut self, kit: &Kit, pass: &mut Pass) {
        let condition = conditions::degraded_type(PREFIX);
        match volume_types::opt_in(pass.cr.metadata.annotations.as_ref()) {
            OptIn::Off => {
                // Nothing is listed; a listing under way is dropped (and so aborted).
                self.running = None;
                pass.board.remove_condition(&condition);
            }
            OptIn::Invalid(message) => {
                self.running = None;
                pass.post::<()>(
                    PREFIX,
                    Err(VolumeTypeClassError::InvalidOptIn(message).into()),
                );
            }
            OptIn::On => match pass.cr.spec.storage_class_state() {
                StorageClassState::Unmanaged => {}
                state => self.managed(kit, pass, state).await,
            },
        }
    }

    async fn managed(&mut self, kit: &Kit, pass: &mut Pass, state: StorageClassState) {
        let OpenStackInputs {
            credentials,
            ca,
            fingerprint,
        } = match openstack_inputs(kit) {
            Ok(inputs) => inputs,
            Err(e) => {
                pass.post::<()>(PREFIX, Err(StepError::other(e)));
                return;
            }
        };
        let now = Instant::now();
        if let Some((used, task)) = self.running.as_mut()
            && let Some(answer) = task.try_take()
        {
            let used = std::mem::take(used);
            self.running = None;
            let result = answer.unwrap_or_else(|e| {
                Err(Failure {
                    message: format!("the listing task failed: {e}"),
                    retry: Retry::Soon,
                })
            });
            if let Err(f) = &result {
                kit.metrics.error("openstack");
                warn!(error = %f.message, "cannot list Cinder volume types");
            }
            // A listing made with credentials since replaced says nothing about the new ones.
            if used == fingerprint {
                self.listing.record(now, &used, result);
            }
        }
        let running = self
            .running
            .as_ref()
            .is_some_and(|(used, _)| *used == fingerprint);
        if !running && self.listing.is_due(now, &fingerprint) {
            let session = self.openstack.clone();
            let namespace = kit.namespace.clone();
            let kubernetes = kit.on_kubernetes();
            let task = async move {
                let client =
                    openstack_client(&session, &namespace, kubernetes, credentials.as_ref(), ca)
                        .map_err(|(message, retry)| Failure { message, retry })?;
                client.volume_types().await.map_err(|e| Failure {
                    message: e.to_string(),
                    retry: e.kind().retry(),
                })
            };
            self.running = Some((fingerprint.clone(), kit.cache.nudger().spawn(task)));
        }
        if self.running.is_none()
            && let Some(next) = self.listing.next_in(Instant::now())
        {
            pass.requeue_after = Some(pass.requeue_after.map_or(next, |r| r.min(next)));
        }
        let Some(types) = self.listing.current() else {
            // Not listed yet: say why once a listing failed, otherwise wait for the answer.
            if let Some(f) = self.listing.last_error() {
                let error = VolumeTypeClassError::NotListed(f.message.clone());
                pass.post::<()>(PREFIX, Err(error.into()));
            }
            return;
        };
        let (public, private) = volume_types::offered(types);
        let gone = self.listing.gone();
        let offered = Offered {
            types: &public,
            gone: &gone,
            private: &private,
            listing_error: self.listing.last_error().map(|f| f.message.as_str()),
        };
        // Removed: every class of ours goes, however many; otherwise at most MAX_CLASSES.
        let remove = state == StorageClassState::Removed;
        volume_types::CLASSES
            .step(kit, pass, offered, remove, volume_types::storage_class)
            .await;
    }
}
