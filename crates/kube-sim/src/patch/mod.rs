//! The three PATCH bodies the API server accepts besides apply: JSON merge patch (RFC 7386),
//! JSON patch (RFC 6902) and strategic merge patch.
//!
//! Each function takes the current object and the decoded patch body and returns the patched
//! object, or the error the real kube-apiserver (v1.33) would answer with. The real server does
//! not use the RFCs directly but `gopkg.in/evanphx/json-patch.v4` and apimachinery's
//! `strategicpatch`, whose quirks clients can see (a JSON patch `replace` of a missing object
//! key adds it, negative array indices count from the end, strategic merge puts list items
//! that are new in the patch before the live ones, …); this module reproduces those quirks on
//! purpose. It is pure: it must not decode into typed objects, default, validate, prune or
//! touch `managedFields`; the caller does those after patching, as the server does.
//!
//! Where things are: `error` the errors and their HTTP statuses, `merge` JSON merge patch,
//! `json_patch` JSON patch (RFC 6902), `strategic` strategic merge patch.

mod error;
mod json_patch;
mod merge;
mod strategic;
#[cfg(test)]
mod tests;

pub use error::PatchError;
pub use json_patch::json_patch;
pub use merge::merge_patch;
pub use strategic::strategic_merge_patch;
