//! Server-side apply and `metadata.managedFields` tracking, as kube-apiserver does it.
//!
//! This re-implements, over `serde_json::Value`, the parts of structured-merge-diff (the
//! version kube-apiserver 1.33 vendors) and of apimachinery's `managedfields/internal` managers
//! that a client can observe: field sets and their FieldsV1 encoding, the apply merge (maps
//! recursively, associative lists by key or value, atomic lists replaced), pruning of fields an
//! applier stopped applying, conflict detection and forcing, ownership transfer on plain
//! writes, `before-first-apply`, the cap of ten update managers (`ancient-changes`), the
//! `kubectl` last-applied-annotation interplay, the stripped metadata fields and the entry
//! ordering.
//!
//! The emulator has no Go type schema, only [`ListTypes`]: every JSON object is treated as a
//! struct whose keys are named fields, every list gets its kind from `ListTypes`, and the one
//! associative-list key default the Kubernetes OpenAPI declares (`protocol: TCP`) is built in.
//! All API versions of a resource are treated as one schema (no conversion).
//!
//! This module must stay pure: no I/O, no clock (the caller passes `now`), no store access.
//! It does not reset `status` or `spec` for subresources (the caller's strategy does that) and
//! does not validate objects beyond what the field manager itself rejects.
//!
//! Where things are: `fieldpath` has path elements and field sets, `walk` the schema-less
//! walks over values that compute them, `managers` the managedFields entries and their FieldsV1
//! encoding, `updater` structured-merge-diff's merge.Updater, `field_manager` the apiserver's
//! manager chain (what a create, update, patch or apply does to managedFields), and `text` the
//! Go-compatible text helpers.

mod field_manager;
mod fieldpath;
mod managers;
#[cfg(test)]
mod tests;
mod text;
mod updater;
mod walk;

/// The annotation `kubectl apply` (client-side) keeps; the server maintains it for the
/// `kubectl` applier so that client-side and server-side apply can be mixed.
const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Manager the server invents for fields that existed before the first apply to an object
/// without managedFields.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";
/// Bucket manager that absorbs the oldest update managers beyond the cap.
const ANCIENT_CHANGES: &str = "ancient-changes";
const MAX_UPDATE_MANAGERS: usize = 10;
/// `validation.FieldManagerMaxLength`.
const FIELD_MANAGER_MAX_LENGTH: usize = 128;
/// `TotalAnnotationSizeLimitB`: a last-applied annotation that would exceed it is dropped.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
/// Temporary manager name the server uses while computing what a write changed.
const CURRENT_OPERATION: &str = "current-operation";

pub use field_manager::{ApplyError, apply, default_manager, record_update};
