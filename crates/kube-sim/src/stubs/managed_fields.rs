//! TEMPORARY stand-in until the real module lands.
use serde_json::Value;
use crate::list_types::ListTypes;
pub struct Conflict { pub manager: String, pub field: String }
pub enum ApplyError { Conflicts(Vec<Conflict>), Invalid(String) }
#[allow(clippy::too_many_arguments)]
pub fn apply(live: Option<&Value>, config: &Value, _m: &str, _f: bool, _l: &dyn ListTypes, _n: &str, _a: &str, _s: Option<&str>) -> Result<Value, ApplyError> {
    let mut out = live.cloned().unwrap_or(Value::Null);
    json_patch::merge(&mut out, config);
    Ok(out)
}
pub fn record_update(_old: Option<&Value>, _new: &mut Value, _m: &str, _l: &dyn ListTypes, _n: &str, _a: &str, _s: Option<&str>) {}
pub fn default_manager(ua: &str) -> String { ua.split('/').next().unwrap_or_default().to_string() }
