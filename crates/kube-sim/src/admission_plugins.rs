//! The admission plugins a write passes between validation and the store, behind one trait and
//! one ordered list, as kube-apiserver's admission chain is: the verb handlers in `api` call
//! [`mutate`] and [`validate`] and never a plugin by name.
//!
//! The plugins: the volume plugins of `storage_admission` (DefaultStorageClass,
//! StorageObjectInUseProtection, PersistentVolumeClaimResize) and the ValidatingAdmissionPolicy
//! plugin of `admission_policy`. Pod Security and SCC admission of pods are not here: they need
//! the namespace's allocated ranges under the server's lock and run at the request layer
//! (`pod_admission`), before the verb handler.
//!
//! The chain itself (which plugins, in which order) is `api::admit`'s: this module is the
//! interface below both the verbs and the plugins, so neither imports the other.
//!
//! What this module must not do: hold rules of its own, or name a plugin.

use serde_json::Value;

use crate::errors::ApiError;
use crate::resources::ResourceType;
use crate::store::ClusterView;

/// Who sent a write, as admission sees it (`request.userInfo`, `request.subResource`,
/// `request.dryRun`). Writes without one (kube-sim's controllers) are not admitted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requester {
    pub username: String,
    pub groups: Vec<String>,
    /// The subresource named by the request path (`status`, `scale`, `finalize`), or empty.
    pub subresource: String,
    pub dry_run: bool,
}

/// What is being written (admission's `operation`, `object` and `oldObject`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Write<'a> {
    /// `generated` when the name came from `generateName` (admission sees no name then).
    Create {
        object: &'a Value,
        generated: bool,
    },
    Update {
        old: &'a Value,
        new: &'a Value,
    },
    Delete {
        old: &'a Value,
    },
}

/// The attributes of one write, as every plugin sees them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Attributes<'a> {
    pub rt: &'a ResourceType,
    pub write: Write<'a>,
    /// The subresource of the request path (`status`, `scale`), if any.
    pub subresource: Option<&'a str>,
    /// Who sent it; `None` for kube-sim's own writes, which policies do not admit.
    pub requester: Option<&'a Requester>,
}

/// One admission plugin: a mutating phase on create (before validation) and a validating phase
/// on every write (after validation). A refusal is the `ApiError` the client receives; warnings
/// go to its `Warning` headers.
pub(crate) trait AdmissionPlugin: Sync {
    /// Changes a new object before it is validated.
    fn mutate_create(&self, _cluster: &dyn ClusterView, _rt: &ResourceType, _object: &mut Value) {}
    /// Admits or refuses a write that passed validation.
    fn validate(
        &self,
        cluster: &dyn ClusterView,
        attributes: &Attributes<'_>,
    ) -> Result<Vec<String>, ApiError>;
}
