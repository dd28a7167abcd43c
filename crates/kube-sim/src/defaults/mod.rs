//! Server-side defaulting of built-in kinds, as a real kube-apiserver v1.33 applies it on write.
//!
//! A real server decodes every write into its Go types, runs the scheme's `SetDefaults_*`
//! functions (and the generated defaulters' `+default` markers), runs mutating admission and the
//! registry strategy's `PrepareForCreate`, and serialises the typed object back. Each step adds
//! fields the client never sent: `replicas: 1`, `imagePullPolicy`, `terminationMessagePath`,
//! `status: {}`, a Secret's `stringData` folded into `data`, `1024Mi` rewritten as `1Gi`. An
//! operator that compares its desired object with the live one field by field sees those
//! differences and writes forever; kube-sim must show that, so this module reproduces them.
//!
//! Entry points, in the order a server runs them:
//! - [`apply_defaults`] on every write (create, update, patch result): scheme defaults,
//!   conversion artefacts and the always-serialised zero fields. Idempotent.
//! - [`prepare_for_create`] after it on create only: admission and `PrepareForCreate` mutations
//!   (Namespace `kubernetes` finalizer, Pod service account / tolerations / priority, Service IP
//!   families), which must not be re-applied on update.
//! - [`allocate_cluster_ip`] on Service create, after `prepare_for_create`.
//! - [`prepare_for_update`] after `apply_defaults` on update only: values a server carries over
//!   from the stored object (a Service's cluster IPs and node ports, a Namespace's finalizers).
//!
//! This module must not validate: a field of the wrong JSON type is left exactly as it is, so that
//! validation can report it, and nothing here may panic on any input. It does no I/O and knows
//! nothing of storage, generations or resource versions (the caller decides those).
//!
//! Where things are: `dispatch` the entry points by kind, `helpers` Go's notion of unset,
//! `apps`, `pods`, `core_group` and `other_groups` the per-kind defaults, and `quantity`
//! the canonical form of resource quantities.

mod apps;
mod core_group;
mod dispatch;
mod helpers;
mod other_groups;
mod pods;
mod quantity;
#[cfg(test)]
mod tests;

pub use dispatch::{allocate_cluster_ip, apply_defaults, prepare_for_create, prepare_for_update};
pub(crate) use pods::VOLUME_SOURCES;
pub(crate) use quantity::quantity_milli;
