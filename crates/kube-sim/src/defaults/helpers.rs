//! Small helpers over JSON maps. "Unset" follows Go: a nil pointer is an absent or null field;
//! a zero-valued string or number field is also unset when the Go field is not a pointer.

use serde_json::{Map, Value, json};

/// `metadata.creationTimestamp` of an embedded ObjectMeta serialises as `null` in v1.33.
pub(super) fn set_if_unset_null(m: &mut Map<String, Value>, key: &str) {
    if !m.contains_key(key) {
        m.insert(key.to_string(), Value::Null);
    }
}

pub(super) fn is_absent(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Null))
}

/// Sets `key` when absent or null (a Go pointer field that is nil).
pub(super) fn set_if_unset(m: &mut Map<String, Value>, key: &str, value: Value) {
    if is_absent(m.get(key)) {
        m.insert(key.to_string(), value);
    }
}

/// Sets a Go string field when absent, null or "".
pub(super) fn set_str_if_empty(m: &mut Map<String, Value>, key: &str, value: &str) {
    let empty = match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    };
    if empty {
        m.insert(key.to_string(), json!(value));
    }
}

/// Sets a Go integer field when absent, null or 0.
pub(super) fn set_int_if_zero(m: &mut Map<String, Value>, key: &str, value: i64) {
    let zero = match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(_) => false,
    };
    if zero {
        m.insert(key.to_string(), json!(value));
    }
}

/// The child object at `key`, created when absent or null. `None` when it has another type.
pub(super) fn ensure_obj<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    let entry = m.entry(key.to_string()).or_insert(Value::Null);
    if entry.is_null() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut()
}

/// The child object at `key` when present.
pub(super) fn obj_at<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// Runs `f` on every object element of the list at `key`; other elements are left alone.
pub(super) fn for_each_obj(
    m: &mut Map<String, Value>,
    key: &str,
    mut f: impl FnMut(&mut Map<String, Value>),
) {
    if let Some(Value::Array(items)) = m.get_mut(key) {
        for item in items.iter_mut() {
            if let Some(o) = item.as_object_mut() {
                f(o);
            }
        }
    }
}

pub(super) fn str_at<'a>(m: &'a Map<String, Value>, key: &str) -> &'a str {
    m.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Non-omitempty Go status fields serialise even when zero.
pub(super) fn zero_fields(m: &mut Map<String, Value>, keys: &[&str]) {
    for k in keys {
        set_if_unset(m, k, json!(0));
    }
}
