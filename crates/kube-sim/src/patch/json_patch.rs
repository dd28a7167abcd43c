//! JSON patch (`application/json-patch+json`, RFC 6902), with the server's operation limits
//! and its error texts.

use super::error::{INVALID_MESSAGE, PatchError, json_kind};
use serde_json::{Map, Value};

/// The most operations the server accepts in one JSON patch.
pub(super) const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The server's `JSONPatchMaxCopyBytes`: how much `copy` operations may add to a document.
pub(super) const MAX_JSON_PATCH_COPY_BYTES: usize = 3 * 1024 * 1024;

/// Why one JSON patch operation failed; every case is a 422 with the generic message, except
/// the ones where json-patch v4 dereferences a nil value and the server answers 500.
#[derive(Debug, PartialEq)]
pub(super) enum OpError {
    Failed(String),
    NilValue,
}

/// Applies a JSON patch (`application/json-patch+json`) with the semantics of
/// evanphx/json-patch v4, which the server uses.
///
/// Malformed bodies (not an array, an operation that is not an object, a non-string
/// `op`/`path`/`from`) are 400s with the decoder's message; an operation that cannot be
/// applied is a 422 with the server's generic message. `null` is an empty patch.
pub fn json_patch(target: &Value, patch: &Value) -> Result<Value, PatchError> {
    let ops = match patch {
        Value::Null => return Ok(target.clone()),
        Value::Array(ops) => ops,
        other => {
            return Err(PatchError::BadRequest(format!(
                "error decoding patch: json: cannot unmarshal {} into Go value of type []handlers.jsonPatchOp",
                json_kind(other)
            )));
        }
    };
    // The server's strict pre-decode into `[]jsonPatchOp{Op, Path, From string; Value any}`.
    for op in ops {
        match op {
            Value::Null => {}
            Value::Object(m) => {
                for field in ["op", "path", "from"] {
                    if let Some(v) = m.get(field).filter(|v| !v.is_null() && !v.is_string()) {
                        return Err(PatchError::BadRequest(format!(
                            "error decoding patch: json: cannot unmarshal {} into Go struct field jsonPatchOp.{field} of type string",
                            json_kind(v)
                        )));
                    }
                }
            }
            other => {
                return Err(PatchError::BadRequest(format!(
                    "error decoding patch: json: cannot unmarshal {} into Go value of type handlers.jsonPatchOp",
                    json_kind(other)
                )));
            }
        }
    }
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::RequestEntityTooLarge(format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            ops.len()
        )));
    }
    let mut doc = target.clone();
    let mut copied_bytes = 0;
    for op in ops {
        apply_op(&mut doc, op, &mut copied_bytes).map_err(|e| match e {
            OpError::Failed(_) => PatchError::Invalid(INVALID_MESSAGE.to_string()),
            OpError::NilValue => PatchError::Internal(
                "runtime error: invalid memory address or nil pointer dereference".to_string(),
            ),
        })?;
    }
    Ok(doc)
}

pub(super) fn failed<T>(msg: impl Into<String>) -> Result<T, OpError> {
    Err(OpError::Failed(msg.into()))
}

/// Applies one operation; `copied_bytes` accumulates the JSON size of every copied value.
pub(super) fn apply_op(
    doc: &mut Value,
    op: &Value,
    copied_bytes: &mut usize,
) -> Result<(), OpError> {
    let empty = Map::new();
    let op = op.as_object().unwrap_or(&empty);
    let string_field = |name: &str| op.get(name).and_then(Value::as_str);
    // `value` absent and `value: null` differ in json-patch v4: None vs Some(Null).
    let value = op.get("value").cloned();
    let kind = string_field("op").unwrap_or("unknown");
    let path = string_field("path");
    let from = string_field("from");
    match kind {
        "add" => {
            let Some(path) = path else {
                return failed("add operation failed to decode path");
            };
            let Some((con, key)) = find_container(doc, path) else {
                return failed(format!(
                    "add operation does not apply: doc is missing path: \"{path}\""
                ));
            };
            container_add(con, &key, value.unwrap_or(Value::Null))
        }
        "remove" => {
            let Some(path) = path else {
                return failed("remove operation failed to decode path");
            };
            let Some((con, key)) = find_container(doc, path) else {
                return failed(format!(
                    "remove operation does not apply: doc is missing path: \"{path}\""
                ));
            };
            container_remove(con, &key).map(drop)
        }
        "replace" => {
            let Some(path) = path else {
                return failed("replace operation failed to decode path");
            };
            if path.is_empty() {
                // v4 wraps a nil error here, so a scalar or null value is silently ignored.
                match value {
                    Some(v @ (Value::Object(_) | Value::Array(_))) => *doc = v,
                    Some(_) => {}
                    None => return Err(OpError::NilValue),
                }
                return Ok(());
            }
            let Some((con, key)) = find_container(doc, path) else {
                return failed(format!(
                    "replace operation does not apply: doc is missing path: {path}"
                ));
            };
            let value = value.unwrap_or(Value::Null);
            match con {
                // An object "get" never fails in v4, so replacing a missing key adds it.
                Value::Object(m) => {
                    m.insert(key, value);
                    Ok(())
                }
                Value::Array(a) => match index_get(a.len(), &key).and_then(|i| a.get_mut(i)) {
                    Some(slot) => {
                        *slot = value;
                        Ok(())
                    }
                    None => failed(format!(
                        "replace operation does not apply: doc is missing key: {path}"
                    )),
                },
                _ => failed("replace operation hit a scalar"),
            }
        }
        "move" => {
            let Some(from) = from else {
                return failed("move operation failed to decode from");
            };
            let Some((con, key)) = find_container(doc, from) else {
                return failed(format!(
                    "move operation does not apply: doc is missing from path: {from}"
                ));
            };
            let val = container_remove(con, &key)?;
            let Some(path) = path else {
                return failed("move operation failed to decode path");
            };
            let Some((con, key)) = find_container(doc, path) else {
                return failed(format!(
                    "move operation does not apply: doc is missing destination path: {path}"
                ));
            };
            container_add(con, &key, val)
        }
        "copy" => {
            let Some(from) = from else {
                return failed("copy operation failed to decode from");
            };
            let Some((con, key)) = find_container(doc, from) else {
                return failed(format!(
                    "copy operation does not apply: doc is missing from path: {from}"
                ));
            };
            // v4 copies a missing object key as null instead of failing.
            let val = container_get(con, &key)?.cloned().unwrap_or(Value::Null);
            if !val.is_null() {
                *copied_bytes += serde_json::to_string(&val).map_or(0, |s| s.len());
            }
            if *copied_bytes > MAX_JSON_PATCH_COPY_BYTES {
                return failed(format!(
                    "Unable to complete the copy, the accumulated size increase of copy is {copied_bytes}, exceeding the limit {MAX_JSON_PATCH_COPY_BYTES}"
                ));
            }
            let Some(path) = path else {
                return failed("copy operation failed to decode path");
            };
            let Some((con, key)) = find_container(doc, path) else {
                return failed(format!(
                    "copy operation does not apply: doc is missing destination path: {path}"
                ));
            };
            container_add(con, &key, val)
        }
        "test" => {
            let Some(path) = path else {
                return failed("test operation failed to decode path");
            };
            if path.is_empty() {
                return match value {
                    None => Err(OpError::NilValue),
                    Some(v) if v == *doc => Ok(()),
                    Some(_) => failed("testing value  failed"),
                };
            }
            let Some((con, key)) = find_container(doc, path) else {
                return failed(format!(
                    "test operation does not apply: is missing path: {path}"
                ));
            };
            let current = container_get(con, &key)?;
            match (current, value) {
                // v4 sees a null member as absent: only an explicit `value: null` matches it.
                (None, Some(Value::Null)) => Ok(()),
                (None, None) => Err(OpError::NilValue),
                (Some(cur), Some(v)) if !v.is_null() && *cur == v => Ok(()),
                _ => failed(format!("testing value {path} failed")),
            }
        }
        other => failed(format!("Unexpected kind: {other}")),
    }
}

/// RFC 6901 unescaping of one reference token.
pub(super) fn decode_key(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// json-patch v4's `findObject`: the container holding the last token of `path`, and that
/// token. The first token is dropped unread, so "a/b" means "/b", as in v4.
pub(super) fn find_container<'a>(
    doc: &'a mut Value,
    path: &str,
) -> Option<(&'a mut Value, String)> {
    let tokens: Vec<&str> = path.split('/').collect();
    let (last, parents) = tokens.get(1..)?.split_last()?;
    let mut cur = doc;
    for token in parents {
        let key = decode_key(token);
        let next = match cur {
            Value::Object(m) => m.get_mut(&key)?,
            Value::Array(a) => {
                let i = index_get(a.len(), &key)?;
                a.get_mut(i)?
            }
            _ => return None,
        };
        if !(next.is_object() || next.is_array()) {
            return None;
        }
        cur = next;
    }
    Some((cur, decode_key(last)))
}

/// Go's `strconv.Atoi`, which Rust's `i64` parser matches (optional sign, decimal digits).
pub(super) fn atoi(key: &str) -> Option<i64> {
    key.parse::<i64>().ok()
}

/// An existing element's index; v4 lets `-n` count from the end.
pub(super) fn index_get(len: usize, key: &str) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let mut idx = atoi(key)?;
    if idx < 0 {
        if idx < -len {
            return None;
        }
        idx += len;
    }
    if idx >= len {
        return None;
    }
    usize::try_from(idx).ok()
}

/// An insertion index: `-` or `len` append, `-1` too.
pub(super) fn index_add(len: usize, key: &str) -> Option<usize> {
    if key == "-" {
        return Some(len);
    }
    let size = i64::try_from(len).ok()?.checked_add(1)?;
    let mut idx = atoi(key)?;
    if idx >= size {
        return None;
    }
    if idx < 0 {
        if idx < -size {
            return None;
        }
        idx += size;
    }
    usize::try_from(idx).ok()
}

/// The value at `key`; `Ok(None)` for a missing or null object member, an error for a bad
/// array index, as in v4.
pub(super) fn container_get<'a>(con: &'a Value, key: &str) -> Result<Option<&'a Value>, OpError> {
    match con {
        Value::Object(m) => Ok(m.get(key).filter(|v| !v.is_null())),
        Value::Array(a) => match index_get(a.len(), key).and_then(|i| a.get(i)) {
            Some(v) => Ok(Some(v).filter(|v| !v.is_null())),
            None => failed(format!("Unable to access invalid index: {key}")),
        },
        _ => failed("not a container"),
    }
}

pub(super) fn container_add(con: &mut Value, key: &str, val: Value) -> Result<(), OpError> {
    match con {
        Value::Object(m) => {
            m.insert(key.to_string(), val);
            Ok(())
        }
        Value::Array(a) => match index_add(a.len(), key) {
            Some(i) if i <= a.len() => {
                a.insert(i, val);
                Ok(())
            }
            _ => failed(format!("Unable to access invalid index: {key}")),
        },
        _ => failed("not a container"),
    }
}

pub(super) fn container_remove(con: &mut Value, key: &str) -> Result<Value, OpError> {
    match con {
        Value::Object(m) => match m.remove(key) {
            Some(v) => Ok(v),
            None => failed(format!("Unable to remove nonexistent key: {key}")),
        },
        Value::Array(a) => match index_get(a.len(), key) {
            Some(i) if i < a.len() => Ok(a.remove(i)),
            _ => failed(format!("Unable to access invalid index: {key}")),
        },
        _ => failed("not a container"),
    }
}
