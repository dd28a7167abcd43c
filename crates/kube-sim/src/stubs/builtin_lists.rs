//! TEMPORARY stand-in until the real module lands.
use crate::list_types::{ListKind, ListTypes};
pub struct BuiltinLists;
impl BuiltinLists {
    pub fn for_kind(_g: &str, _k: &str) -> Self {
        Self
    }
}
impl ListTypes for BuiltinLists {
    fn list_kind(&self, _p: &[&str]) -> ListKind {
        ListKind::Atomic
    }
}
