//! TEMPORARY stand-in until the real module lands.
use crate::field_error::FieldError;
use serde_json::Value;
pub fn validate_name(_g: &str, _k: &str, _n: &str) -> Vec<FieldError> {
    Vec::new()
}
pub fn validate_labels_and_annotations(_m: &Value) -> Vec<FieldError> {
    Vec::new()
}
pub fn validate_create(_g: &str, _k: &str, _o: &Value) -> Vec<FieldError> {
    Vec::new()
}
pub fn validate_update(_g: &str, _k: &str, _o: &Value, _n: &Value) -> Vec<FieldError> {
    Vec::new()
}
