//! TEMPORARY stand-in until the real module lands.
use serde_json::Value;
use crate::field_error::FieldError;
#[derive(Debug, Clone)]
pub struct Schema;
pub struct ServedVersion { pub name: String, pub storage: bool, pub status_subresource: bool, pub scale_subresource: Option<Value>, pub schema: Option<Schema>, pub printer_columns: Vec<Value> }
pub struct CrdInfo { pub group: String, pub plural: String, pub singular: String, pub kind: String, pub list_kind: String, pub short_names: Vec<String>, pub categories: Vec<String>, pub namespaced: bool, pub versions: Vec<ServedVersion> }
pub fn validate_crd(_crd: &Value, _old: Option<&Value>) -> Vec<FieldError> { Vec::new() }
pub fn crd_info(crd: &Value) -> Result<CrdInfo, String> {
    let s = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array).cloned().unwrap_or_default().into_iter().filter(|v| v["served"].as_bool() == Some(true)).map(|v| ServedVersion { name: v["name"].as_str().unwrap_or_default().into(), storage: v["storage"].as_bool() == Some(true), status_subresource: v.pointer("/subresources/status").is_some(), scale_subresource: None, schema: None, printer_columns: vec![] }).collect();
    Ok(CrdInfo { group: s("/spec/group"), plural: s("/spec/names/plural"), singular: s("/spec/names/singular"), kind: s("/spec/names/kind"), list_kind: format!("{}List", s("/spec/names/kind")), short_names: vec![], categories: vec![], namespaced: s("/spec/scope") == "Namespaced", versions })
}
pub fn prune(_schema: &Schema, _obj: &mut Value) -> Vec<String> { Vec::new() }
pub fn apply_defaults(_schema: &Schema, _obj: &mut Value) {}
pub fn validate(_schema: &Schema, _obj: &Value) -> Vec<FieldError> { Vec::new() }
impl crate::list_types::ListTypes for Schema { fn list_kind(&self, _p: &[&str]) -> crate::list_types::ListKind { crate::list_types::ListKind::Atomic } }
