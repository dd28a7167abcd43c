//! CustomResourceDefinitions (`apiextensions.k8s.io/v1`) and the custom resources they serve,
//! treated the way kube-apiserver v1.33 treats them.
//!
//! What is here:
//! - [`validate_crd`]: the 422 causes a real server returns for a malformed CRD on create and
//!   update (names, group, scope, versions, storage version, stored versions, structural
//!   schema rules, defaults that must validate and be pruned, list/map markers, subresources,
//!   printer columns, conversion, the `*.k8s.io` approval annotation).
//! - [`prepare_crd`]: the v1 defaults and `status.storedVersions` bookkeeping the server does
//!   before validating.
//! - [`crd_info`]: what the rest of kube-sim needs to serve a CRD.
//! - [`Schema`] with [`prune`], [`apply_defaults`], [`validate`] and [`validate_status`]: what
//!   happens to a custom resource on its way in (and, for defaults, on every read).
//!
//! What this module must not do: any I/O, any storage or watch work, generic ObjectMeta
//! validation (labels, annotations, generateName handling: the caller does those for every
//! kind), and it never panics on user input: every malformed value becomes an error.
//!
//! `x-kubernetes-validations` (CEL) rules are accepted in schemas and their static shape is
//! checked, but they are NOT evaluated on custom resources: kube-sim has no CEL interpreter.
//! Validation ratcheting on update (errors on unchanged fields being ignored) is not done.
//!
//! Regular expressions (`pattern:`) are read as Go reads them and matched by the `regex` crate
//! (`pattern`).
//!
//! Where things are: `schema` parses an `openAPIV3Schema` into [`Schema`]; `pruning`,
//! `defaulting` and `validation` are what happens to a custom resource against it; `formats`
//! and `pattern` are the string checks validation uses; `definition` is the CRD object itself
//! (defaults, `validate_crd`, `crd_info`), `schema_rules` and `node_rules` the rules a CRD's
//! schema must follow as a whole and node by node; `common` holds the Go-compatible quoting, JSON helpers and name rules they share.

mod common;
mod defaulting;
mod definition;
mod formats;
mod node_rules;
mod pattern;
mod pruning;
mod schema;
mod schema_rules;
#[cfg(test)]
mod tests;
mod validation;

pub use defaulting::apply_defaults;
pub use definition::{crd_info, prepare_crd, validate_crd};
pub use pruning::prune;
pub use schema::Schema;
pub use validation::{validate, validate_status};
