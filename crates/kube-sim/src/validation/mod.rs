//! Validation of built-in kinds, with the rules, field paths and messages of kube-apiserver v1.33.
//!
//! Operators meet these errors as `422 Invalid` responses whose causes name a field path and a
//! message (`spec.selector: Invalid value: ...: field is immutable`); tests and users compare
//! those strings, so paths and texts here follow the real server's `field.Error`s exactly,
//! including its quirks (a pod template's labels are reported at `spec.template.labels`, a
//! CSIDriver's `attachRequired` at `spec.attachedRequired`).
//!
//! Split of work: [`validate_name`] checks `metadata.name`, [`validate_labels_and_annotations`]
//! and [`validate_finalizers`] the rest of the top-level metadata, [`validate_create`] the body
//! of a kind (after [`crate::defaults::apply_defaults`]), and [`validate_update`] adds the
//! immutability rules. The caller runs the ones it needs and joins the errors; generic metadata
//! update rules (name, namespace, uid unchanged) are the caller's too.
//!
//! A field of the wrong JSON type is reported as `FieldValueTypeInvalid` ("must be of type
//! object"); a real server rejects such a body earlier, with a 400 decode error. This module is
//! pure: no I/O, no panics on any input, and it never changes the object.
//!
//! Where things are: `names` has apimachinery's string rules and the metadata checks,
//! `access` the typed JSON readers that report wrong types, `selectors` label selectors,
//! `create` the per-kind dispatch into `apps`, `pods`, `core_group`, `volumes` and
//! `other_groups`, and `update` the immutability rules.

mod access;
mod apps;
mod core_group;
mod create;
mod names;
mod other_groups;
mod pods;
mod selectors;
#[cfg(test)]
mod tests;
mod update;
#[cfg(test)]
mod volume_tests;
mod volumes;

use crate::field_error::FieldError;

type Errs = Vec<FieldError>;

pub use create::validate_create;
pub use names::{
    dns1035_label_errors, dns1123_subdomain_errors, label_value_errors, path_segment_errors,
    qualified_name_errors, validate_finalizers, validate_labels_and_annotations, validate_name,
};
pub use update::validate_update;
