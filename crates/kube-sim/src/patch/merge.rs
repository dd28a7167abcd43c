//! JSON merge patch (`application/merge-patch+json`, RFC 7386).

use super::error::{PatchError, json_kind};
use serde_json::{Map, Value};

/// Applies a JSON merge patch (`application/merge-patch+json`) as the server does.
///
/// The server first decodes the body into a map (field validation `Warn`, the default, and
/// `Strict` both do), so a patch that is not an object is a 400; `null` decodes but is then
/// refused by the merge with "Invalid JSON Patch". Null members delete keys; a patch member
/// that meets a missing or non-object value replaces it with its nulls pruned (nested objects
/// inside arrays included), while an array meeting an object replaces it as is.
pub fn merge_patch(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    let patch = match patch {
        Value::Object(p) => p,
        Value::Null => return Err(PatchError::BadRequest("Invalid JSON Patch".to_string())),
        other => {
            return Err(PatchError::BadRequest(format!(
                "error decoding patch: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_kind(other)
            )));
        }
    };
    match target {
        Value::Object(doc) => {
            let mut doc = doc.clone();
            merge_docs(&mut doc, patch);
            Ok(Value::Object(doc))
        }
        // Not reachable with a stored object; json-patch turns the patch into the document.
        _ => {
            let mut out = Value::Object(patch.clone());
            prune_nulls(&mut out);
            Ok(out)
        }
    }
}

pub(super) fn merge_docs(doc: &mut Map<String, Value>, patch: &Map<String, Value>) {
    for (k, v) in patch {
        if v.is_null() {
            doc.remove(k);
            continue;
        }
        match doc.get_mut(k) {
            Some(cur) if !cur.is_null() => merge_value(cur, v),
            _ => {
                let mut v = v.clone();
                prune_nulls(&mut v);
                doc.insert(k.clone(), v);
            }
        }
    }
}

pub(super) fn merge_value(cur: &mut Value, patch: &Value) {
    match (cur, patch) {
        (Value::Object(c), Value::Object(p)) => merge_docs(c, p),
        // json-patch v4 prunes the patch only when the current value is not an object.
        (cur @ Value::Object(_), p) => *cur = p.clone(),
        (cur, p) => {
            let mut p = p.clone();
            prune_nulls(&mut p);
            *cur = p;
        }
    }
}

/// Drops null object members at any depth; null array elements stay.
pub(super) fn prune_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(prune_nulls);
        }
        Value::Array(a) => a.iter_mut().filter(|v| !v.is_null()).for_each(prune_nulls),
        _ => {}
    }
}
