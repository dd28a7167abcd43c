//! How each list in an object is merged: atomically, as a set, or as a map keyed by some fields.
//!
//! Strategic merge patch and server-side apply both need this. For built-in types it comes from
//! the Go types' `patchStrategy`/`patchMergeKey` and `listType`/`listMapKeys` markers; for
//! custom resources from the CRD schema's `x-kubernetes-list-type`/`x-kubernetes-list-map-keys`
//! (default: atomic). Paths are field names from the object root with list indices omitted,
//! e.g. `["spec","template","spec","containers","ports"]`.

/// The merge behaviour of one list field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListKind {
    /// Replaced whole by a patch; owned whole by one field manager.
    Atomic,
    /// A list of scalars merged as a set (union on merge).
    Set,
    /// A list of objects merged by the values of these keys.
    Map(Vec<String>),
}

/// Answers the list kind of the list found at `path` in objects of one type.
pub trait ListTypes {
    fn list_kind(&self, path: &[&str]) -> ListKind;
}

/// Every list atomic: what a schema without list markers means.
pub struct AllAtomic;

impl ListTypes for AllAtomic {
    fn list_kind(&self, _path: &[&str]) -> ListKind {
        ListKind::Atomic
    }
}
