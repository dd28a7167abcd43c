//! TEMPORARY stand-in until the real module lands.
use crate::builtin_lists::BuiltinLists;
use serde_json::Value;
pub enum PatchError {
    BadRequest(String),
    Invalid(String),
}
pub fn merge_patch(t: &Value, p: &Value) -> Result<Value, PatchError> {
    let mut o = t.clone();
    json_patch::merge(&mut o, p);
    Ok(o)
}
pub fn json_patch(t: &Value, p: &Value) -> Result<Value, PatchError> {
    let p: json_patch::Patch =
        serde_json::from_value(p.clone()).map_err(|e| PatchError::BadRequest(e.to_string()))?;
    let mut o = t.clone();
    json_patch::patch(&mut o, &p).map_err(|e| PatchError::Invalid(e.to_string()))?;
    Ok(o)
}
pub fn strategic_merge_patch(t: &Value, p: &Value, _l: &BuiltinLists) -> Result<Value, PatchError> {
    merge_patch(t, p)
}
