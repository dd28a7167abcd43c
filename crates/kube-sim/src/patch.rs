//! The three PATCH bodies the API server accepts besides apply: JSON merge patch (RFC 7386),
//! JSON patch (RFC 6902) and strategic merge patch.
//!
//! Each function takes the current object and the decoded patch body and returns the patched
//! object, or the error the real kube-apiserver (v1.33) would answer with. The real server does
//! not use the RFCs directly but `gopkg.in/evanphx/json-patch.v4` and apimachinery's
//! `strategicpatch`, whose quirks clients can see (a JSON patch `replace` of a missing object
//! key adds it, negative array indices count from the end, strategic merge puts list items
//! that are new in the patch before the live ones, …); this module reproduces those quirks on
//! purpose. It is pure: it must not decode into typed objects, default, validate, prune or
//! touch `managedFields`; the caller does those after patching, as the server does.

use crate::builtin_lists::BuiltinLists;
use crate::list_types::ListKind;
use serde_json::{Map, Value};
use std::fmt;

/// Why a patch could not be applied, with the HTTP status the real server answers with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchError {
    /// 400 `BadRequest`: the patch document is malformed. The string is the Status message.
    BadRequest(String),
    /// 422 `Invalid`: the patch is well formed but cannot be applied (a failed JSON patch
    /// `test`, a path that does not exist, a list of lists). The real server wraps these with
    /// `NewGenericServerResponse`, so the Status message is always the generic
    /// "the server rejected our request due to an error in our request" carried here, and
    /// `details` is empty.
    Invalid(String),
    /// 413 `RequestEntityTooLarge`: a JSON patch of more than 10,000 operations.
    RequestEntityTooLarge(String),
    /// 500 with an empty reason (`StatusReasonUnknown`): errors the strategic merge code
    /// returns without classifying them, which the server passes through untouched, e.g.
    /// `map: map[image:nginx] does not contain declared merge key: name`. kubectl prints
    /// these as "Error from server: …".
    Internal(String),
}

impl PatchError {
    /// The HTTP status code of the Status the server answers with.
    pub fn code(&self) -> u16 {
        match self {
            PatchError::BadRequest(_) => 400,
            PatchError::Invalid(_) => 422,
            PatchError::RequestEntityTooLarge(_) => 413,
            PatchError::Internal(_) => 500,
        }
    }

    /// The Status `reason` (empty for [`PatchError::Internal`], as on the real server).
    pub fn reason(&self) -> &'static str {
        match self {
            PatchError::BadRequest(_) => "BadRequest",
            PatchError::Invalid(_) => "Invalid",
            PatchError::RequestEntityTooLarge(_) => "RequestEntityTooLarge",
            PatchError::Internal(_) => "",
        }
    }

    /// The Status `message`.
    pub fn message(&self) -> &str {
        match self {
            PatchError::BadRequest(m)
            | PatchError::Invalid(m)
            | PatchError::RequestEntityTooLarge(m)
            | PatchError::Internal(m) => m,
        }
    }
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for PatchError {}

/// What `NewGenericServerResponse(422, …)` puts in the Status message, whatever the cause.
const INVALID_MESSAGE: &str = "the server rejected our request due to an error in our request";

/// The JSON kind names Go's `encoding/json` uses in "cannot unmarshal X into …".
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

// ---------------------------------------------------------------------------------------------
// JSON merge patch
// ---------------------------------------------------------------------------------------------

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

fn merge_docs(doc: &mut Map<String, Value>, patch: &Map<String, Value>) {
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

fn merge_value(cur: &mut Value, patch: &Value) {
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
fn prune_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(prune_nulls);
        }
        Value::Array(a) => a.iter_mut().filter(|v| !v.is_null()).for_each(prune_nulls),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// JSON patch
// ---------------------------------------------------------------------------------------------

/// The most operations the server accepts in one JSON patch.
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The server's `JSONPatchMaxCopyBytes`: how much `copy` operations may add to a document.
const MAX_JSON_PATCH_COPY_BYTES: usize = 3 * 1024 * 1024;

/// Why one JSON patch operation failed; every case is a 422 with the generic message, except
/// the ones where json-patch v4 dereferences a nil value and the server answers 500.
#[derive(Debug, PartialEq)]
enum OpError {
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

fn failed<T>(msg: impl Into<String>) -> Result<T, OpError> {
    Err(OpError::Failed(msg.into()))
}

/// Applies one operation; `copied_bytes` accumulates the JSON size of every copied value.
fn apply_op(doc: &mut Value, op: &Value, copied_bytes: &mut usize) -> Result<(), OpError> {
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
fn decode_key(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// json-patch v4's `findObject`: the container holding the last token of `path`, and that
/// token. The first token is dropped unread, so "a/b" means "/b", as in v4.
fn find_container<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
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
fn atoi(key: &str) -> Option<i64> {
    key.parse::<i64>().ok()
}

/// An existing element's index; v4 lets `-n` count from the end.
fn index_get(len: usize, key: &str) -> Option<usize> {
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
fn index_add(len: usize, key: &str) -> Option<usize> {
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
fn container_get<'a>(con: &'a Value, key: &str) -> Result<Option<&'a Value>, OpError> {
    match con {
        Value::Object(m) => Ok(m.get(key).filter(|v| !v.is_null())),
        Value::Array(a) => match index_get(a.len(), key).and_then(|i| a.get(i)) {
            Some(v) => Ok(Some(v).filter(|v| !v.is_null())),
            None => failed(format!("Unable to access invalid index: {key}")),
        },
        _ => failed("not a container"),
    }
}

fn container_add(con: &mut Value, key: &str, val: Value) -> Result<(), OpError> {
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

fn container_remove(con: &mut Value, key: &str) -> Result<Value, OpError> {
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

// ---------------------------------------------------------------------------------------------
// Strategic merge patch
// ---------------------------------------------------------------------------------------------

const DIRECTIVE: &str = "$patch";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";
const RETAIN_KEYS: &str = "$retainKeys";

/// Where strategic merge gets each field's patch strategy from. Paths are field names from the
/// object root, list indices omitted.
pub(crate) trait SmpSchema {
    /// The strategy of the list at `path`.
    fn list_strategy(&self, path: &[&str]) -> ListKind;
    /// Whether the struct at `path` has `patchStrategy=replace`.
    fn replaces_object(&self, path: &[&str]) -> bool;
}

impl SmpSchema for BuiltinLists {
    fn list_strategy(&self, path: &[&str]) -> ListKind {
        self.smp_strategy(path)
    }

    fn replaces_object(&self, path: &[&str]) -> bool {
        self.smp_replaces_object(path)
    }
}

/// How `strategicpatch` fails; mapped onto the server's answers by [`SmpError::into_patch`].
#[derive(Debug)]
enum SmpError {
    /// The `mergepatch` errors the server turns into 400s.
    BadRequest(String),
    /// The ones it turns into 422s with the generic message, which hides the cause.
    Unprocessable,
    /// Everything else: passed through as a 500 with the error's text.
    Other(String),
}

impl SmpError {
    fn into_patch(self) -> PatchError {
        match self {
            SmpError::BadRequest(m) => PatchError::BadRequest(m),
            SmpError::Unprocessable => PatchError::Invalid(INVALID_MESSAGE.to_string()),
            SmpError::Other(m) => PatchError::Internal(m),
        }
    }
}

type SmpResult<T> = Result<T, SmpError>;

/// Applies a strategic merge patch (`application/strategic-merge-patch+json`) to a built-in
/// object, following apimachinery's `strategicpatch` as the server calls it
/// (`MergeParallelList` and `IgnoreUnmatchedNulls` on).
///
/// Maps merge recursively and `null` deletes a key; lists follow `lists.smp_strategy`:
/// merged by key (patch items update the matching live item or are added), unioned as a
/// set, or replaced. The directives `$patch` (`replace`, `delete`, and in lists `merge`,
/// which is refused), `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>` and
/// `$retainKeys` are honoured, and the order of merged lists is the one the real code
/// produces. Directive keys that the real server would lose when decoding the result into a
/// typed object are removed from the result. The caller must refuse strategic merge for
/// custom resources (415) before calling this.
pub fn strategic_merge_patch(
    target: &Value,
    patch: &Value,
    lists: &BuiltinLists,
) -> Result<Value, PatchError> {
    strategic_merge_patch_with(target, patch, lists)
}

/// [`strategic_merge_patch`] over any schema (tests use the fake one of apimachinery's suite).
pub(crate) fn strategic_merge_patch_with(
    target: &Value,
    patch: &Value,
    schema: &impl SmpSchema,
) -> Result<Value, PatchError> {
    let patch = match patch {
        Value::Object(p) => p.clone(),
        // Decoding `null` into the patch map leaves it nil: nothing to merge.
        Value::Null => return Ok(target.clone()),
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_kind(other)
            )));
        }
    };
    let Value::Object(original) = target else {
        return Err(PatchError::Internal(
            mergepatch_bad_arg_type(MAP_TYPE, target).to_string(),
        ));
    };
    let merged = merge_map(original.clone(), patch, &mut Vec::new(), schema)
        .map_err(SmpError::into_patch)?;
    let mut out = Value::Object(merged);
    strip_directive_keys(&mut out);
    Ok(out)
}

/// The Go type names `reflect.TypeOf(...).String()` gives decoded JSON values.
const MAP_TYPE: &str = "map[string]interface {}";
const SLICE_TYPE: &str = "[]interface {}";

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.as_i64().is_some() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => SLICE_TYPE,
        Value::Object(_) => MAP_TYPE,
    }
}

/// `mergepatch.ErrBadArgType`.
fn mergepatch_bad_arg_type(expected: &str, actual: &Value) -> String {
    format!("expected a {expected}, but received a {}", go_type(actual))
}

fn bad_arg_type(expected: &str, actual: &Value) -> SmpError {
    SmpError::Other(mergepatch_bad_arg_type(expected, actual))
}

/// `mergepatch.ErrNoMergeKey`.
fn no_merge_key(m: &Map<String, Value>, key: &str) -> SmpError {
    SmpError::Other(format!(
        "map: {} does not contain declared merge key: {key}",
        go_map(m)
    ))
}

/// `mergepatch.ErrBadPatchType`.
fn bad_patch_type(directive: &Value, m: &Map<String, Value>) -> SmpError {
    SmpError::Other(format!(
        "unknown patch type: {} in map: {}",
        go_percent_s(directive),
        go_map(m)
    ))
}

/// Go's `%v` of a decoded JSON value, as in error messages.
fn go_v(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(f)) => go_float(f),
            (None, None) => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(a) => go_list(a),
        Value::Object(m) => go_map(m),
    }
}

fn go_list(a: &[Value]) -> String {
    let items: Vec<String> = a.iter().map(go_v).collect();
    format!("[{}]", items.join(" "))
}

/// `%v` of a map: keys sorted, as `fmt` prints maps.
fn go_map(m: &Map<String, Value>) -> String {
    let mut items: Vec<(&String, &Value)> = m.iter().collect();
    items.sort_by(|a, b| a.0.cmp(b.0));
    let items: Vec<String> = items
        .into_iter()
        .map(|(k, v)| format!("{k}:{}", go_v(v)))
        .collect();
    format!("map[{}]", items.join(" "))
}

/// `%s` of a directive value: strings print plainly, other scalars as Go's bad-verb form.
fn go_percent_s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "%!s(<nil>)".to_string(),
        Value::Bool(_) | Value::Number(_) => format!("%!s({}={})", go_type(v), go_v(v)),
        Value::Array(_) | Value::Object(_) => go_v(v),
    }
}

/// `%v` of a float64 (`strconv` %g, shortest): exponent form below 1e-4 and from 1e6 on.
fn go_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let sci = format!("{f:e}");
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let Ok(exp) = exp.parse::<i32>() else {
        return sci;
    };
    if (-4..6).contains(&exp) {
        return f.to_string();
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

/// `strategicpatch.mergeMap`.
fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    path: &mut Vec<String>,
    schema: &impl SmpSchema,
) -> SmpResult<Map<String, Value>> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        if directive == "replace" {
            patch.remove(DIRECTIVE);
            return Ok(patch);
        }
        if directive == "delete" {
            return Ok(Map::new());
        }
        // `$patch: merge` is not accepted on maps either.
        return Err(bad_patch_type(directive, &patch));
    }
    apply_retain_keys(&mut original, &mut patch)?;
    merge_set_element_order(&mut original, &mut patch, path, schema)?;

    for (key, patch_v) in patch {
        let (key, is_delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            (extract_key(&key, DELETE_FROM_PRIMITIVE_LIST)?, true)
        } else {
            (key, false)
        };
        if patch_v.is_null() {
            original.remove(&key);
            continue;
        }
        let Some(slot) = original.get_mut(&key) else {
            if !is_delete_list {
                let mut v = patch_v;
                discard_nulls(&mut v);
                if let Some(v) = remove_directives(v) {
                    original.insert(key, v);
                }
            }
            continue;
        };
        path.push(key);
        let result = merge_field(slot, patch_v, is_delete_list, path, schema);
        let key = path.pop().unwrap_or_default();
        if !result? {
            original.remove(&key);
        }
    }
    Ok(original)
}

/// Merges `patch_v` into the existing field `slot` at `path`; `Ok(false)` when the field must
/// go (its new value was a directive-only map).
fn merge_field(
    slot: &mut Value,
    patch_v: Value,
    is_delete_list: bool,
    path: &[String],
    schema: &impl SmpSchema,
) -> SmpResult<bool> {
    let refs: Vec<&str> = path.iter().map(String::as_str).collect();
    match (slot, patch_v) {
        (Value::Object(orig), Value::Object(p)) => {
            if schema.replaces_object(&refs) {
                *orig = p;
            } else {
                let taken = std::mem::take(orig);
                *orig = merge_map(taken, p, &mut path.to_vec(), schema)?;
            }
            Ok(true)
        }
        (Value::Array(orig), Value::Array(p)) => {
            let strategy = schema.list_strategy(&refs);
            let taken = std::mem::take(orig);
            *orig = merge_slice_handler(taken, p, &strategy, is_delete_list, path, schema)?.0;
            Ok(true)
        }
        (slot, patch_v) => {
            // Same Go type: the scalar branch, which even a `$deleteFromPrimitiveList` key
            // reaches and overwrites with.
            if same_scalar_type(slot, &patch_v) {
                *slot = patch_v;
                return Ok(true);
            }
            if is_delete_list {
                return Ok(true);
            }
            let mut v = patch_v;
            discard_nulls(&mut v);
            match remove_directives(v) {
                Some(v) => {
                    *slot = v;
                    Ok(true)
                }
                None => Ok(false),
            }
        }
    }
}

/// Whether two scalars have the same Go type once decoded (int64 and float64 differ).
fn same_scalar_type(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Bool(_), Value::Bool(_)) | (Value::String(_), Value::String(_)) => true,
        (Value::Number(x), Value::Number(y)) => x.as_i64().is_some() == y.as_i64().is_some(),
        _ => false,
    }
}

/// `strategicpatch.extractKey`: the field name after `<prefix>/`.
fn extract_key(s: &str, prefix: &str) -> SmpResult<String> {
    match s.split_once('/') {
        Some((head, field)) if head == prefix => Ok(field.to_string()),
        _ if prefix == DELETE_FROM_PRIMITIVE_LIST => Err(SmpError::BadRequest(
            "invalid patch format of primitive list".to_string(),
        )),
        _ => Err(SmpError::BadRequest(
            "invalid patch format of setElementOrder list".to_string(),
        )),
    }
}

/// `strategicpatch.discardNullValuesFromPatch`.
fn discard_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(discard_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// `strategicpatch.removeDirectives`: `None` when the value itself is a `$patch` map.
fn remove_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(m) => {
            if m.contains_key(DIRECTIVE) {
                return None;
            }
            let mut out = Map::new();
            for (k, v) in m {
                if let Some(v) = remove_directives(v) {
                    out.insert(k, v);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(a) => Some(Value::Array(
            a.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

/// Removes the directive keys a typed decode of the result would drop, so that a stored object
/// never carries them (they can survive in values the patch replaced or added verbatim).
fn strip_directive_keys(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| {
                k != DIRECTIVE
                    && k != RETAIN_KEYS
                    && !k.starts_with("$setElementOrder/")
                    && !k.starts_with("$deleteFromPrimitiveList/")
            });
            m.values_mut().for_each(strip_directive_keys);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_directive_keys),
        _ => {}
    }
}

/// `strategicpatch.applyRetainKeysDirective`.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> SmpResult<()> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let bad = || SmpError::BadRequest("invalid patch format of retainKeys".to_string());
    let Value::Array(retain) = retain else {
        return Err(bad());
    };
    let listed = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !listed(k) {
            return Err(bad());
        }
    }
    original.retain(|k, _| listed(k));
    Ok(())
}

/// The merge key of a strategic-merge list strategy ("" for sets and atomic lists).
fn merge_key_of(strategy: &ListKind) -> &str {
    match strategy {
        ListKind::Map(keys) => keys.first().map_or("", String::as_str),
        _ => "",
    }
}

/// `strategicpatch.mergePatchIntoOriginal`: merges every `$setElementOrder/<field>` list with
/// its field and orders the result as the directive says.
fn merge_set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    path: &[String],
    schema: &impl SmpSchema,
) -> SmpResult<()> {
    let directives: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for directive in directives {
        let Some(order) = patch.remove(&directive) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(bad_arg_type(SLICE_TYPE, &order));
        };
        let field = extract_key(&directive, SET_ELEMENT_ORDER)?;
        let original_list = match original.get(&field) {
            None => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(bad_arg_type(SLICE_TYPE, other)),
        };
        let patch_list = match patch.get(&field) {
            None => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(bad_arg_type(SLICE_TYPE, other)),
        };
        let mut sub_path = path.to_vec();
        sub_path.push(field.clone());
        let refs: Vec<&str> = sub_path.iter().map(String::as_str).collect();
        let strategy = schema.list_strategy(&refs);
        let merge_key = merge_key_of(&strategy);
        validate_patch_with_set_order_list(
            patch_list.as_deref().unwrap_or_default(),
            &order,
            merge_key,
        )?;
        // Go orders the result against its own view of the live list, which the merge has
        // edited in place (deleted items shifted out, new items written into the freed
        // slots); `live_view` reproduces that view.
        let (merged, live_view) = match (&original_list, &patch_list) {
            (Some(o), None) => (o.clone(), o.clone()),
            (None, Some(p)) => (
                p.iter().cloned().filter_map(remove_directives).collect(),
                Vec::new(),
            ),
            (Some(o), Some(p)) => {
                merge_slice_handler(o.clone(), p.clone(), &strategy, false, &sub_path, schema)?
            }
            (None, None) => continue,
        };
        let (patch_items, server_only) = if merge_key.is_empty() {
            partition_primitives(merged, &order)
        } else {
            partition_maps(merged, &order, merge_key)?
        };
        let original_list = original_list.unwrap_or_default();
        let kind =
            slice_element_type(&[&original_list, patch_list.as_deref().unwrap_or_default()])?;
        let ordered = normalize_element_order(
            patch_items,
            server_only,
            &order,
            &live_view,
            merge_key,
            kind,
        )?;
        original.insert(field.clone(), Value::Array(ordered));
        patch.remove(&field);
    }
    Ok(())
}

/// `strategicpatch.validatePatchWithSetOrderList`: the patch list must follow the directive's
/// order (items marked with `$patch` aside).
fn validate_patch_with_set_order_list(
    patch_list: &[Value],
    order: &[Value],
    merge_key: &str,
) -> SmpResult<()> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = if merge_key.is_empty() {
        patch_list.iter().collect()
    } else {
        let mut kept = Vec::new();
        for v in patch_list {
            let Value::Object(m) = v else {
                return Err(bad_arg_type(MAP_TYPE, v));
            };
            if m.get(DIRECTIVE).is_none_or(|d| d != "delete") {
                kept.push(v);
            }
        }
        kept
    };
    let (mut pi, mut oi) = (0, 0);
    while let (Some(p), Some(o)) = (non_delete.get(pi), order.get(oi)) {
        if p.as_object().is_some_and(|m| m.contains_key(DIRECTIVE)) {
            pi += 1;
            continue;
        }
        if merge_key_value_equal(p, o, merge_key)? {
            pi += 1;
        }
        oi += 1;
    }
    if pi < non_delete.len() && oi >= order.len() {
        return Err(SmpError::Other(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            go_list(patch_list),
            go_list(order)
        )));
    }
    Ok(())
}

/// `strategicpatch.mergeKeyValueEqual`.
fn merge_key_value_equal(left: &Value, right: &Value, merge_key: &str) -> SmpResult<bool> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let Value::Object(l) = left else {
        return Err(bad_arg_type(MAP_TYPE, left));
    };
    let Value::Object(r) = right else {
        return Err(bad_arg_type(MAP_TYPE, right));
    };
    let Some(lv) = l.get(merge_key) else {
        return Err(no_merge_key(l, merge_key));
    };
    let Some(rv) = r.get(merge_key) else {
        return Err(no_merge_key(r, merge_key));
    };
    Ok(lv == rv)
}

/// `strategicpatch.mergeSliceHandler`: the merged list, and what the caller's view of the live
/// list holds afterwards (see [`merge_slice`]).
fn merge_slice_handler(
    original: Vec<Value>,
    patch: Vec<Value>,
    strategy: &ListKind,
    is_delete_list: bool,
    path: &[String],
    schema: &impl SmpSchema,
) -> SmpResult<(Vec<Value>, Vec<Value>)> {
    if matches!(strategy, ListKind::Atomic) && !is_delete_list {
        return Ok((patch, original));
    }
    // `Name()` of the item schema in Go's message: the Go kind of the element type.
    let item_kind = if matches!(strategy, ListKind::Set) {
        "string"
    } else {
        "struct"
    };
    merge_slice(
        original,
        patch,
        merge_key_of(strategy),
        item_kind,
        is_delete_list,
        path,
        schema,
    )
}

/// The Go type shared by a list's elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ElemKind {
    Map,
    String,
    Bool,
    Int,
    Float,
}

/// `strategicpatch.sliceElementType`.
fn slice_element_type(slices: &[&[Value]]) -> SmpResult<ElemKind> {
    let mut seen: Option<ElemKind> = None;
    for v in slices.iter().flat_map(|s| s.iter()) {
        let kind = match v {
            Value::Object(_) => Some(ElemKind::Map),
            Value::String(_) => Some(ElemKind::String),
            Value::Bool(_) => Some(ElemKind::Bool),
            Value::Number(n) if n.as_i64().is_some() => Some(ElemKind::Int),
            Value::Number(_) => Some(ElemKind::Float),
            Value::Array(_) if seen.is_none() => {
                // mergepatch.ErrNoListOfLists ("lists of lists are not supported").
                return Err(SmpError::Unprocessable);
            }
            Value::Array(_) | Value::Null => None,
        };
        match (seen, kind) {
            // A leading null makes Go call Kind() on a nil reflect.Type.
            (None, None) => {
                return Err(SmpError::Other(
                    "runtime error: invalid memory address or nil pointer dereference".to_string(),
                ));
            }
            (None, Some(k)) => seen = Some(k),
            (Some(prev), Some(k)) if prev == k => {}
            _ => {
                let lists: Vec<String> = slices.iter().map(|s| go_list(s)).collect();
                return Err(SmpError::Other(format!(
                    "list element types are not identical: [{}]",
                    lists.join(" ")
                )));
            }
        }
    }
    seen.ok_or_else(|| SmpError::Other("no elements in any of the given slices".to_string()))
}

/// `strategicpatch.mergeSlice`. Besides the merged list it returns what a Go caller holding
/// the original slice sees in it afterwards: deletions shift items left in place (the last
/// slot keeping its old value) and new items are appended into the slots that frees.
fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
    item_kind: &str,
    is_delete_list: bool,
    path: &[String],
    schema: &impl SmpSchema,
) -> SmpResult<(Vec<Value>, Vec<Value>)> {
    if original.is_empty() && patch.is_empty() {
        return Ok((original, Vec::new()));
    }
    let kind = slice_element_type(&[&original, &patch])?;
    if kind != ElemKind::Map {
        if is_delete_list {
            let kept = original
                .iter()
                .filter(|v| !patch.contains(v))
                .cloned()
                .collect();
            return Ok((kept, original));
        }
        let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
        for v in original.iter().chain(patch.iter()) {
            if !merged.contains(v) {
                merged.push(v.clone());
            }
        }
        let (patch_items, server_only) = partition_primitives(merged, &patch);
        let ordered =
            normalize_element_order(patch_items, server_only, &patch, &original, "", kind)?;
        return Ok((ordered, original));
    }
    if merge_key.is_empty() {
        return Err(SmpError::Other(format!(
            "cannot merge lists without merge key for {item_kind}"
        )));
    }
    let mut view = original.clone();
    let (original, patch, replaced) =
        merge_slice_with_special_elements(original, patch, merge_key, &mut view)?;
    let merged =
        merge_slice_without_special_elements(original.clone(), &patch, merge_key, path, schema)?;
    if !replaced {
        // Appends land in the caller's slice while they fit in the slots deletions freed.
        let appended = merged.get(original.len()..).unwrap_or_default();
        for (slot, item) in view.iter_mut().skip(original.len()).zip(appended) {
            *slot = item.clone();
        }
    }
    let (patch_items, server_only) = partition_maps(merged, &patch, merge_key)?;
    let ordered =
        normalize_element_order(patch_items, server_only, &patch, &original, merge_key, kind)?;
    Ok((ordered, view))
}

/// `strategicpatch.mergeSliceWithSpecialElements`: applies `$patch: delete` items to the
/// original (and to the caller's `view` of it, as Go's in-place deletion does), and
/// `$patch: replace` by making the rest of the patch the original. Returns the new original,
/// the patch items left to merge, and whether the list was replaced.
fn merge_slice_with_special_elements(
    original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
    view: &mut [Value],
) -> SmpResult<(Vec<Value>, Vec<Value>, bool)> {
    let mut original = original;
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for v in patch {
        let Value::Object(m) = &v else {
            return Err(bad_arg_type(MAP_TYPE, &v));
        };
        match m.get(DIRECTIVE) {
            None => plain.push(v),
            Some(d) if d == "delete" => {
                let Some(value) = m.get(merge_key) else {
                    return Err(no_merge_key(m, merge_key));
                };
                while let Some(i) = original
                    .iter()
                    .position(|o| o.get(merge_key) == Some(value))
                {
                    original.remove(i);
                    // Go's append(s[:i], s[i+1:]...) shifts the rest left in the shared array
                    // and leaves the last slot as it was.
                    let live = original.len() + 1;
                    let last = view.get(live - 1).cloned();
                    if let (Some(shifted), Some(last)) = (view.get_mut(i..live), last) {
                        shifted.rotate_left(1);
                        if let Some(slot) = shifted.last_mut() {
                            *slot = last;
                        }
                    }
                }
            }
            Some(d) if d == "replace" => replace = true,
            Some(d) if d == "merge" => {
                return Err(SmpError::Other(
                    "merging lists cannot yet be specified in the patch".to_string(),
                ));
            }
            Some(d) => return Err(bad_patch_type(d, m)),
        }
    }
    if replace {
        Ok((plain, Vec::new(), true))
    } else {
        Ok((original, plain, false))
    }
}

/// `strategicpatch.findMapInSliceBasedOnKeyValue`: the index of the first map whose merge key
/// has `value`.
fn find_by_key(list: &[Value], merge_key: &str, value: &Value) -> SmpResult<Option<usize>> {
    for (i, v) in list.iter().enumerate() {
        let Value::Object(m) = v else {
            return Err(SmpError::Other(format!("value for key {i} is not a map")));
        };
        if m.get(merge_key) == Some(value) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// `strategicpatch.mergeSliceWithoutSpecialElements`: merges each patch item into the live
/// item with the same key, or appends it.
fn merge_slice_without_special_elements(
    mut original: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    path: &[String],
    schema: &impl SmpSchema,
) -> SmpResult<Vec<Value>> {
    for v in patch {
        let Value::Object(item) = v else {
            return Err(bad_arg_type(MAP_TYPE, v));
        };
        let Some(value) = item.get(merge_key) else {
            return Err(no_merge_key(item, merge_key));
        };
        let found = find_by_key(&original, merge_key, value)?;
        match found.and_then(|i| original.get_mut(i)) {
            Some(Value::Object(live)) => {
                let taken = std::mem::take(live);
                *live = merge_map(taken, item.clone(), &mut path.to_vec(), schema)?;
            }
            _ => original.push(v.clone()),
        }
    }
    Ok(original)
}

/// `strategicpatch.partitionPrimitivesByPresentInList`.
fn partition_primitives(merged: Vec<Value>, by: &[Value]) -> (Vec<Value>, Vec<Value>) {
    merged.into_iter().partition(|v| by.contains(v))
}

/// `strategicpatch.partitionMapsByPresentInList`.
fn partition_maps(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: &str,
) -> SmpResult<(Vec<Value>, Vec<Value>)> {
    let mut in_patch = Vec::new();
    let mut server_only = Vec::new();
    for v in merged {
        let Value::Object(m) = &v else {
            return Err(bad_arg_type(MAP_TYPE, &v));
        };
        let Some(value) = m.get(merge_key) else {
            return Err(no_merge_key(m, merge_key));
        };
        if find_by_key(by, merge_key, value)?.is_some() {
            in_patch.push(v);
        } else {
            server_only.push(v);
        }
    }
    Ok((in_patch, server_only))
}

/// `strategicpatch.normalizeElementOrder`: patch items in patch order, live-only items in live
/// order, then interleaved by [`merge_sorted_slice`].
fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: ElemKind,
) -> SmpResult<Vec<Value>> {
    let patch_items = normalize_slice_order(patch_items, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    Ok(merge_sorted_slice(
        server_only,
        patch_items,
        server_order,
        merge_key,
        kind,
    ))
}

/// `strategicpatch.normalizeSliceOrder`: a stable sort by position in `order`; `$patch: delete`
/// items go last.
fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: ElemKind,
) -> SmpResult<Vec<Value>> {
    let mut to_sort = to_sort;
    let mut to_delete = Vec::new();
    if kind == ElemKind::Map {
        for v in to_sort.iter().chain(order.iter()) {
            let Value::Object(m) = v else {
                return Err(bad_arg_type(MAP_TYPE, v));
            };
            if !m.contains_key(merge_key) {
                return Err(no_merge_key(m, merge_key));
            }
        }
        let (keep, delete): (Vec<Value>, Vec<Value>) = to_sort
            .into_iter()
            .partition(|v| v.get(DIRECTIVE).is_none_or(|d| d != "delete"));
        to_sort = keep;
        to_delete = delete;
    }
    // Every item is in `order` on the paths the server takes; an absent one sorts last
    // rather than reproducing Go's inconsistent comparator.
    to_sort.sort_by_key(|v| index_in(order, v, merge_key, kind).unwrap_or(usize::MAX));
    to_sort.extend(to_delete);
    Ok(to_sort)
}

/// `strategicpatch.index`: position of `item` in `list`, by merge key for maps (a missing or
/// null key compares as Go's nil).
fn index_in(list: &[Value], item: &Value, merge_key: &str, kind: ElemKind) -> Option<usize> {
    if kind == ElemKind::Map {
        let key_of = |v: &Value| v.get(merge_key).filter(|k| !k.is_null()).cloned();
        let wanted = key_of(item);
        list.iter().position(|v| key_of(v) == wanted)
    } else {
        list.iter().position(|v| v == item)
    }
}

/// `strategicpatch.mergeSortedSlice`: inserts live-only items (`left`) among patch items
/// (`right`); a live-only item goes first only if both are live and it came first in the live
/// list, so items new in the patch come before the live items they are compared with.
fn merge_sorted_slice(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    kind: ElemKind,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                match (
                    index_in(server_order, l, merge_key, kind),
                    index_in(server_order, r, merge_key, kind),
                ) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                }
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "csi-controller",
                "namespace": "openshift-cluster-csi-drivers",
                "labels": {"app": "csi-controller", "tier": "control"},
                "finalizers": ["a.example.com/one"],
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "u1"}
                ]
            },
            "spec": {
                "replicas": 2,
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}
                },
                "template": {
                    "metadata": {"labels": {"app": "csi-controller"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "driver",
                                "image": "driver:1.0",
                                "env": [
                                    {"name": "LOG", "value": "2"},
                                    {"name": "CLOUD", "value": "openstack"}
                                ],
                                "ports": [
                                    {"containerPort": 9808, "name": "healthz", "protocol": "TCP"}
                                ],
                                "volumeMounts": [
                                    {"mountPath": "/csi", "name": "socket-dir"}
                                ]
                            },
                            {"name": "provisioner", "image": "provisioner:3.0"},
                            {"name": "attacher", "image": "attacher:4.0"}
                        ],
                        "volumes": [
                            {"name": "socket-dir", "emptyDir": {}},
                            {"name": "config", "configMap": {"name": "cloud-conf"}}
                        ],
                        "tolerations": [
                            {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"}
                        ]
                    }
                }
            }
        })
    }

    fn deploy_lists() -> BuiltinLists {
        BuiltinLists::for_kind("apps", "Deployment")
    }

    fn smp(target: &Value, patch: Value) -> Result<Value, PatchError> {
        strategic_merge_patch(target, &patch, &deploy_lists())
    }

    fn pod_spec(v: &Value) -> &Value {
        &v["spec"]["template"]["spec"]
    }

    fn names(list: &Value) -> Vec<&str> {
        list.as_array()
            .map(|a| a.iter().filter_map(|i| i["name"].as_str()).collect())
            .unwrap_or_default()
    }

    // ---- merge patch ------------------------------------------------------------------------

    #[test]
    fn merge_patch_merges_objects_and_null_deletes() {
        let out = merge_patch(
            &deployment(),
            &json!({"metadata": {"labels": {"tier": null, "new": "x"}}, "spec": {"replicas": 3}}),
        )
        .unwrap();
        assert_eq!(
            out["metadata"]["labels"],
            json!({"app": "csi-controller", "new": "x"})
        );
        assert_eq!(out["spec"]["replicas"], 3);
        assert_eq!(out["spec"]["strategy"]["type"], "RollingUpdate");
    }

    #[test]
    fn merge_patch_replaces_lists_whole() {
        let out = merge_patch(
            &deployment(),
            &json!({"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "x", "args": null}]}}}}),
        )
        .unwrap();
        // The live value is a list, not an object: the patch replaces it with nulls pruned.
        assert_eq!(
            pod_spec(&out)["containers"],
            json!([{"name": "only", "image": "x"}])
        );
    }

    #[test]
    fn merge_patch_prunes_nulls_only_where_json_patch_v4_does() {
        let target = json!({"a": {"x": 1}, "b": 1});
        // New member: nulls pruned at any depth, also inside arrays of objects.
        let out = merge_patch(
            &target,
            &json!({"c": {"d": null, "e": [{"f": null, "g": 1}, null]}}),
        )
        .unwrap();
        assert_eq!(out["c"], json!({"e": [{"g": 1}, null]}));
        // An array replacing an object keeps its nulls (v4 returns the patch untouched).
        let out = merge_patch(&target, &json!({"a": [{"f": null}]})).unwrap();
        assert_eq!(out["a"], json!([{"f": null}]));
        // A scalar replaced by an object: pruned.
        let out = merge_patch(&target, &json!({"b": {"k": null, "l": 2}})).unwrap();
        assert_eq!(out["b"], json!({"l": 2}));
        // Deleting a missing key is fine.
        let out = merge_patch(&target, &json!({"zzz": null})).unwrap();
        assert_eq!(out, target);
    }

    #[test]
    fn merge_patch_rejects_non_object_patches_like_the_server() {
        let t = deployment();
        assert_eq!(
            merge_patch(&t, &json!([1])),
            Err(PatchError::BadRequest(
                "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}".into()
            ))
        );
        for (patch, kind) in [
            (json!("s"), "string"),
            (json!(1), "number"),
            (json!(true), "bool"),
        ] {
            let err = merge_patch(&t, &patch).unwrap_err();
            assert_eq!(err.code(), 400);
            assert!(
                err.message().contains(&format!("cannot unmarshal {kind} ")),
                "{err}"
            );
        }
        let err = merge_patch(&t, &Value::Null).unwrap_err();
        assert_eq!(err, PatchError::BadRequest("Invalid JSON Patch".into()));
        assert_eq!(err.reason(), "BadRequest");
    }

    // ---- JSON patch -------------------------------------------------------------------------

    fn jp(target: &Value, patch: Value) -> Result<Value, PatchError> {
        json_patch(target, &patch)
    }

    fn op_err(target: &Value, op: Value) -> OpError {
        let mut doc = target.clone();
        apply_op(&mut doc, &op, &mut 0).unwrap_err()
    }

    fn invalid() -> PatchError {
        PatchError::Invalid(INVALID_MESSAGE.to_string())
    }

    #[test]
    fn json_patch_add_replace_remove() {
        let out = jp(
            &deployment(),
            json!([
                {"op": "replace", "path": "/spec/replicas", "value": 5},
                {"op": "add", "path": "/metadata/labels/team", "value": "storage"},
                {"op": "remove", "path": "/metadata/labels/tier"},
                {"op": "add", "path": "/spec/template/spec/containers/1/args", "value": ["--v=2"]},
                {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "driver:2.0"}
            ]),
        )
        .unwrap();
        assert_eq!(out["spec"]["replicas"], 5);
        assert_eq!(
            out["metadata"]["labels"],
            json!({"app": "csi-controller", "team": "storage"})
        );
        assert_eq!(pod_spec(&out)["containers"][1]["args"], json!(["--v=2"]));
        assert_eq!(pod_spec(&out)["containers"][0]["image"], "driver:2.0");
    }

    #[test]
    fn json_patch_array_indices() {
        let t = json!({"l": ["a", "b"]});
        let apply = |op: Value| jp(&t, json!([op])).map(|v| v["l"].clone());
        assert_eq!(
            apply(json!({"op": "add", "path": "/l/-", "value": "c"})),
            Ok(json!(["a", "b", "c"]))
        );
        assert_eq!(
            apply(json!({"op": "add", "path": "/l/0", "value": "c"})),
            Ok(json!(["c", "a", "b"]))
        );
        assert_eq!(
            apply(json!({"op": "add", "path": "/l/2", "value": "c"})),
            Ok(json!(["a", "b", "c"]))
        );
        // Negative indices count from the end in json-patch v4.
        assert_eq!(
            apply(json!({"op": "add", "path": "/l/-1", "value": "c"})),
            Ok(json!(["a", "b", "c"]))
        );
        assert_eq!(
            apply(json!({"op": "remove", "path": "/l/-1"})),
            Ok(json!(["a"]))
        );
        assert_eq!(
            apply(json!({"op": "replace", "path": "/l/-2", "value": "z"})),
            Ok(json!(["z", "b"]))
        );
        assert_eq!(
            apply(json!({"op": "add", "path": "/l/3", "value": "c"})),
            Err(invalid())
        );
        assert_eq!(
            apply(json!({"op": "add", "path": "/l/-4", "value": "c"})),
            Err(invalid())
        );
        assert_eq!(
            apply(json!({"op": "add", "path": "/l/x", "value": "c"})),
            Err(invalid())
        );
        assert_eq!(
            apply(json!({"op": "remove", "path": "/l/2"})),
            Err(invalid())
        );
        assert_eq!(
            apply(json!({"op": "remove", "path": "/l/-3"})),
            Err(invalid())
        );
        assert_eq!(
            apply(json!({"op": "replace", "path": "/l/2", "value": "c"})),
            Err(invalid())
        );
    }

    #[test]
    fn json_patch_v4_quirks() {
        let t = json!({"a": {"b": 1}, "n": null});
        // replace of a missing object key adds it.
        let out = jp(&t, json!([{"op": "replace", "path": "/a/c", "value": 2}])).unwrap();
        assert_eq!(out["a"], json!({"b": 1, "c": 2}));
        // add without a value adds null.
        let out = jp(&t, json!([{"op": "add", "path": "/a/c"}])).unwrap();
        assert_eq!(out["a"], json!({"b": 1, "c": null}));
        // copy from a missing key copies null.
        let out = jp(&t, json!([{"op": "copy", "from": "/a/zz", "path": "/a/c"}])).unwrap();
        assert_eq!(out["a"], json!({"b": 1, "c": null}));
        // replace of the whole document with a scalar is silently ignored.
        assert_eq!(
            jp(&t, json!([{"op": "replace", "path": "", "value": 3}])),
            Ok(t.clone())
        );
        let out = jp(
            &t,
            json!([{"op": "replace", "path": "", "value": {"x": 1}}]),
        )
        .unwrap();
        assert_eq!(out, json!({"x": 1}));
        // The first token is never read: "a/c" means "/c".
        let out = jp(&t, json!([{"op": "add", "path": "zzz/c", "value": 1}])).unwrap();
        assert_eq!(out["c"], 1);
        // A null member cannot be walked through but can be removed.
        assert_eq!(
            jp(&t, json!([{"op": "add", "path": "/n/x", "value": 1}])),
            Err(invalid())
        );
        let out = jp(&t, json!([{"op": "remove", "path": "/n"}])).unwrap();
        assert!(out.get("n").is_none());
        // ~1 and ~0 unescape to / and ~.
        let out = jp(
            &json!({"m": {}}),
            json!([{"op": "add", "path": "/m/a~1b~0c", "value": 1}]),
        )
        .unwrap();
        assert_eq!(out["m"], json!({"a/b~c": 1}));
    }

    #[test]
    fn json_patch_move_copy() {
        let t = json!({"a": {"x": [1, 2]}, "b": {}});
        let out = jp(&t, json!([{"op": "move", "from": "/a/x", "path": "/b/y"}])).unwrap();
        assert_eq!(out, json!({"a": {}, "b": {"y": [1, 2]}}));
        let out = jp(
            &t,
            json!([{"op": "copy", "from": "/a/x/1", "path": "/a/x/0"}]),
        )
        .unwrap();
        assert_eq!(out["a"]["x"], json!([2, 1, 2]));
        let out = jp(
            &t,
            json!([{"op": "move", "from": "/a/x/0", "path": "/a/x/-"}]),
        )
        .unwrap();
        assert_eq!(out["a"]["x"], json!([2, 1]));
        assert_eq!(
            jp(
                &t,
                json!([{"op": "move", "from": "/a/nope", "path": "/b/y"}])
            ),
            Err(invalid())
        );
        assert_eq!(
            jp(
                &t,
                json!([{"op": "move", "from": "/a/x", "path": "/nope/y"}])
            ),
            Err(invalid())
        );
        assert_eq!(
            jp(
                &t,
                json!([{"op": "copy", "from": "/a/x/5", "path": "/b/y"}])
            ),
            Err(invalid())
        );
        assert_eq!(
            jp(&t, json!([{"op": "copy", "path": "/b/y"}])),
            Err(invalid())
        );
    }

    #[test]
    fn json_patch_test_op() {
        let t = deployment();
        let pass = json!([
            {"op": "test", "path": "/spec/replicas", "value": 2},
            {"op": "test", "path": "/spec/template/spec/containers/0/name", "value": "driver"},
            {"op": "test", "path": "/metadata/missing", "value": null},
            {"op": "replace", "path": "/spec/replicas", "value": 3}
        ]);
        assert_eq!(jp(&t, pass).unwrap()["spec"]["replicas"], 3);
        // A failed test is a 422 with the server's generic message, and nothing is applied.
        let err = jp(
            &t,
            json!([{"op": "replace", "path": "/spec/replicas", "value": 9}, {"op": "test", "path": "/spec/replicas", "value": 2}]),
        )
        .unwrap_err();
        assert_eq!(err, invalid());
        assert_eq!((err.code(), err.reason()), (422, "Invalid"));
        assert_eq!(
            err.message(),
            "the server rejected our request due to an error in our request"
        );
        assert_eq!(
            op_err(
                &t,
                json!({"op": "test", "path": "/spec/replicas", "value": "2"})
            ),
            OpError::Failed("testing value /spec/replicas failed".into())
        );
        // A value of null does not match a present value, nor does a missing value.
        assert!(
            jp(
                &t,
                json!([{"op": "test", "path": "/spec/replicas", "value": null}])
            )
            .is_err()
        );
        assert!(jp(&t, json!([{"op": "test", "path": "/spec/replicas"}])).is_err());
        // Testing a missing path with no value at all makes json-patch v4 dereference nil.
        let err = jp(&t, json!([{"op": "test", "path": "/metadata/missing"}])).unwrap_err();
        assert_eq!(err.code(), 500);
        assert!(jp(&t, json!([{"op": "test", "path": "", "value": t.clone()}])).is_ok());
        assert!(jp(&t, json!([{"op": "test", "path": "/nope/x", "value": 1}])).is_err());
    }

    #[test]
    fn json_patch_operation_errors_are_422() {
        let t = deployment();
        for op in [
            json!({"op": "add", "path": "/spec/nope/x", "value": 1}),
            json!({"op": "remove", "path": "/metadata/labels/nope"}),
            json!({"op": "add", "path": "", "value": 1}),
            json!({"op": "add", "value": 1}),
            json!({"op": "frobnicate", "path": "/a"}),
            json!({"path": "/a"}),
            json!({"op": null, "path": "/a"}),
            json!({"op": "add", "path": "/spec/replicas/x", "value": 1}),
        ] {
            assert_eq!(jp(&t, json!([op.clone()])), Err(invalid()), "{op}");
        }
        assert_eq!(
            op_err(&t, json!({"op": "frobnicate", "path": "/a"})),
            OpError::Failed("Unexpected kind: frobnicate".into())
        );
        // A null operation decodes to an empty one.
        assert_eq!(jp(&t, json!([null])), Err(invalid()));
    }

    #[test]
    fn json_patch_malformed_bodies_are_400() {
        let t = deployment();
        let bad = |patch: Value| match jp(&t, patch) {
            Err(PatchError::BadRequest(m)) => m,
            other => panic!("expected BadRequest, got {other:?}"),
        };
        assert_eq!(
            bad(json!({"op": "add"})),
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
        );
        assert_eq!(
            bad(json!("x")),
            "error decoding patch: json: cannot unmarshal string into Go value of type []handlers.jsonPatchOp"
        );
        assert_eq!(
            bad(json!([1])),
            "error decoding patch: json: cannot unmarshal number into Go value of type handlers.jsonPatchOp"
        );
        assert_eq!(
            bad(json!([{"op": 1, "path": "/a"}])),
            "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string"
        );
        assert_eq!(
            bad(json!([{"op": "add", "path": ["a"]}])),
            "error decoding patch: json: cannot unmarshal array into Go struct field jsonPatchOp.path of type string"
        );
        assert_eq!(
            bad(json!([{"op": "move", "from": true, "path": "/a"}])),
            "error decoding patch: json: cannot unmarshal bool into Go struct field jsonPatchOp.from of type string"
        );
        // `null` is an empty patch.
        assert_eq!(jp(&t, Value::Null), Ok(t.clone()));
        assert_eq!(jp(&t, json!([])), Ok(t.clone()));
    }

    #[test]
    fn json_patch_limits() {
        let t = json!({"a": 1});
        let ops: Vec<Value> = (0..=MAX_JSON_PATCH_OPERATIONS)
            .map(|_| json!({"op": "test", "path": "/a", "value": 1}))
            .collect();
        let err = jp(&t, Value::Array(ops)).unwrap_err();
        assert_eq!(
            err,
            PatchError::RequestEntityTooLarge(
                "The allowed maximum operations in a JSON patch is 10000, got 10001".into()
            )
        );
        assert_eq!((err.code(), err.reason()), (413, "RequestEntityTooLarge"));
        // Copies may add at most 3 MiB.
        let big = "x".repeat(1024 * 1024);
        let t = json!({"s": big, "l": []});
        let copy = json!({"op": "copy", "from": "/s", "path": "/l/-"});
        assert!(jp(&t, json!([copy.clone(), copy.clone()])).is_ok());
        assert_eq!(
            jp(&t, json!([copy.clone(), copy.clone(), copy])),
            Err(invalid())
        );
    }

    // ---- strategic merge patch --------------------------------------------------------------

    #[test]
    fn smp_container_image_by_name_keeps_the_others() {
        let out = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "provisioner", "image": "provisioner:3.1"}]}}}}),
        )
        .unwrap();
        let spec = pod_spec(&out);
        assert_eq!(
            names(&spec["containers"]),
            ["driver", "provisioner", "attacher"]
        );
        assert_eq!(spec["containers"][1]["image"], "provisioner:3.1");
        assert_eq!(
            spec["containers"][0],
            pod_spec(&deployment())["containers"][0]
        );
        assert_eq!(out["spec"]["replicas"], 2);
    }

    #[test]
    fn smp_new_list_items_come_first() {
        // The real code puts items new in the patch before the live ones.
        let out = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "driver", "env": [{"name": "DEBUG", "value": "1"}]},
                {"name": "resizer", "image": "resizer:1.0"}
            ]}}}}),
        )
        .unwrap();
        let spec = pod_spec(&out);
        assert_eq!(
            names(&spec["containers"]),
            ["driver", "resizer", "provisioner", "attacher"]
        );
        assert_eq!(
            names(&spec["containers"][0]["env"]),
            ["DEBUG", "LOG", "CLOUD"]
        );
        assert_eq!(spec["containers"][0]["image"], "driver:1.0");
    }

    #[test]
    fn smp_env_update_and_null_field() {
        let out = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "driver", "env": [{"name": "LOG", "value": "5"}], "volumeMounts": null}
            ]}}}}),
        )
        .unwrap();
        let driver = &pod_spec(&out)["containers"][0];
        assert_eq!(
            driver["env"],
            json!([{"name": "LOG", "value": "5"}, {"name": "CLOUD", "value": "openstack"}])
        );
        assert!(driver.get("volumeMounts").is_none());
        assert_eq!(
            driver["ports"],
            pod_spec(&deployment())["containers"][0]["ports"]
        );
    }

    #[test]
    fn smp_tolerations_are_replaced_whole() {
        let out = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {"tolerations": [{"operator": "Exists"}]}}}}),
        )
        .unwrap();
        assert_eq!(
            pod_spec(&out)["tolerations"],
            json!([{"operator": "Exists"}])
        );
    }

    #[test]
    fn smp_container_ports_merge_by_container_port() {
        let out = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "driver", "ports": [{"containerPort": 9808, "name": "health"}, {"containerPort": 8080}]}
            ]}}}}),
        )
        .unwrap();
        assert_eq!(
            pod_spec(&out)["containers"][0]["ports"],
            json!([{"containerPort": 9808, "name": "health", "protocol": "TCP"}, {"containerPort": 8080}])
        );
    }

    #[test]
    fn smp_service_ports_merge_by_port() {
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "m"},
            "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                               {"name": "metrics", "port": 9090, "protocol": "TCP"}],
                     "selector": {"app": "x"}}});
        let lists = BuiltinLists::for_kind("", "Service");
        let out = strategic_merge_patch(
            &svc,
            &json!({"spec": {"ports": [{"port": 80, "targetPort": 8081}], "selector": {"tier": "y"}}}),
            &lists,
        )
        .unwrap();
        assert_eq!(
            out["spec"]["ports"][0],
            json!({"name": "http", "port": 80, "targetPort": 8081, "protocol": "TCP"})
        );
        assert_eq!(out["spec"]["ports"][1]["port"], 9090);
        assert_eq!(out["spec"]["selector"], json!({"app": "x", "tier": "y"}));
    }

    #[test]
    fn smp_status_conditions_merge_by_type() {
        let node = json!({"kind": "Node", "status": {"conditions": [
            {"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}]}});
        let out = strategic_merge_patch(
            &node,
            &json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletDown"}]}}),
            &BuiltinLists::for_kind("", "Node"),
        )
        .unwrap();
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type": "Ready", "status": "False", "reason": "KubeletDown"}, {"type": "DiskPressure", "status": "False"}])
        );
    }

    #[test]
    fn smp_metadata_finalizers_union_and_owner_references_by_uid() {
        let out = smp(
            &deployment(),
            json!({"metadata": {
                "finalizers": ["a.example.com/one", "b.example.com/two"],
                "ownerReferences": [{"uid": "u2", "kind": "Secret", "name": "s", "apiVersion": "v1"}],
                "labels": {"tier": null}
            }}),
        )
        .unwrap();
        assert_eq!(
            out["metadata"]["finalizers"],
            json!(["a.example.com/one", "b.example.com/two"])
        );
        let uids: Vec<&str> = out["metadata"]["ownerReferences"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|o| o["uid"].as_str())
            .collect();
        assert_eq!(uids, ["u2", "u1"]);
        assert_eq!(out["metadata"]["labels"], json!({"app": "csi-controller"}));
        // A new scalar goes before the live ones, as in the real code.
        let out = smp(
            &deployment(),
            json!({"metadata": {"finalizers": ["c/three"]}}),
        )
        .unwrap();
        assert_eq!(
            out["metadata"]["finalizers"],
            json!(["c/three", "a.example.com/one"])
        );
    }

    #[test]
    fn smp_patch_replace_on_list_and_map() {
        let out = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {"volumes": [{"$patch": "replace"}, {"name": "new", "emptyDir": {}}]}}},
                   "metadata": {"labels": {"$patch": "replace", "only": "this"}}}),
        )
        .unwrap();
        assert_eq!(
            pod_spec(&out)["volumes"],
            json!([{"name": "new", "emptyDir": {}}])
        );
        assert_eq!(out["metadata"]["labels"], json!({"only": "this"}));
        // Replacing with an empty list.
        let out = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {"volumes": [{"$patch": "replace"}]}}}}),
        )
        .unwrap();
        assert_eq!(pod_spec(&out)["volumes"], json!([]));
    }

    #[test]
    fn smp_patch_delete_on_list_item_and_map() {
        let out = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {
                "volumes": [{"name": "config", "$patch": "delete"}],
                "containers": [{"name": "attacher", "$patch": "delete"}]
            }}, "strategy": {"$patch": "delete"}}}),
        )
        .unwrap();
        assert_eq!(names(&pod_spec(&out)["volumes"]), ["socket-dir"]);
        assert_eq!(
            names(&pod_spec(&out)["containers"]),
            ["driver", "provisioner"]
        );
        // `$patch: delete` on a map empties it rather than removing the key.
        assert_eq!(out["spec"]["strategy"], json!({}));
        // A delete item without its merge key is an error.
        let err = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {"volumes": [{"$patch": "delete"}]}}}}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Internal(
                "map: map[$patch:delete] does not contain declared merge key: name".into()
            )
        );
    }

    #[test]
    fn smp_patch_merge_and_unknown_directives_are_refused() {
        let err = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {"containers": [{"$patch": "merge"}]}}}}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Internal("merging lists cannot yet be specified in the patch".into())
        );
        assert_eq!((err.code(), err.reason()), (500, ""));
        let err = smp(
            &deployment(),
            json!({"metadata": {"labels": {"$patch": "merge", "a": "b"}}}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Internal("unknown patch type: merge in map: map[$patch:merge a:b]".into())
        );
        let err = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "driver", "$patch": "frob"}]}}}}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Internal(
                "unknown patch type: frob in map: map[$patch:frob name:driver]".into()
            )
        );
        let err = smp(&deployment(), json!({"$patch": 1})).unwrap_err();
        assert_eq!(
            err,
            PatchError::Internal("unknown patch type: %!s(int64=1) in map: map[$patch:1]".into())
        );
        // A directive map for a field the object lacks is dropped, not checked.
        let out = smp(
            &deployment(),
            json!({"spec": {"paused": {"$patch": "frob"}}}),
        )
        .unwrap();
        assert!(out["spec"].get("paused").is_none());
    }

    #[test]
    fn smp_top_level_replace_and_delete() {
        let out = smp(
            &deployment(),
            json!({"$patch": "replace", "kind": "Deployment"}),
        )
        .unwrap();
        assert_eq!(out, json!({"kind": "Deployment"}));
        let out = smp(&deployment(), json!({"$patch": "delete"})).unwrap();
        assert_eq!(out, json!({}));
    }

    #[test]
    fn smp_delete_from_primitive_list() {
        let mut d = deployment();
        d["metadata"]["finalizers"] = json!(["a", "b", "c"]);
        let out = smp(
            &d,
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zzz"]}}),
        )
        .unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "c"]));
        // On a missing list nothing is added.
        let out = smp(
            &d,
            json!({"metadata": {"$deleteFromPrimitiveList/nope": ["b"]}}),
        )
        .unwrap();
        assert!(out["metadata"].get("nope").is_none());
        assert!(
            out["metadata"]
                .get("$deleteFromPrimitiveList/nope")
                .is_none()
        );
        // It works on atomic scalar lists too.
        let mut d = deployment();
        d["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["--a", "--b"]);
        let out = smp(
            &d,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "driver", "$deleteFromPrimitiveList/args": ["--a"]}]}}}}),
        )
        .unwrap();
        assert_eq!(pod_spec(&out)["containers"][0]["args"], json!(["--b"]));
        let err = smp(&d, json!({"metadata": {"$deleteFromPrimitiveList": ["b"]}})).unwrap_err();
        assert_eq!(
            err,
            PatchError::BadRequest("invalid patch format of primitive list".into())
        );
    }

    #[test]
    fn smp_set_element_order() {
        let out = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "attacher"}, {"name": "driver"}, {"name": "provisioner"}],
                "containers": [{"name": "attacher", "image": "attacher:4.1"}]
            }}}}),
        )
        .unwrap();
        let spec = pod_spec(&out);
        assert_eq!(
            names(&spec["containers"]),
            ["attacher", "driver", "provisioner"]
        );
        assert_eq!(spec["containers"][0]["image"], "attacher:4.1");
        assert!(spec.get("$setElementOrder/containers").is_none());
        // With an item new in the patch.
        let out = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "driver"}, {"name": "provisioner"}, {"name": "attacher"}, {"name": "resizer"}],
                "containers": [{"name": "resizer", "image": "r:1"}]
            }}}}),
        )
        .unwrap();
        assert_eq!(
            names(&pod_spec(&out)["containers"]),
            ["driver", "provisioner", "attacher", "resizer"]
        );
        // Primitive list.
        let mut d = deployment();
        d["metadata"]["finalizers"] = json!(["a", "b"]);
        let out = smp(
            &d,
            json!({"metadata": {"$setElementOrder/finalizers": ["c", "b", "a"], "finalizers": ["c"]}}),
        )
        .unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["c", "b", "a"]));
    }

    #[test]
    fn smp_set_element_order_errors() {
        let err = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "driver"}, {"name": "attacher"}],
                "containers": [{"name": "attacher", "image": "a"}, {"name": "driver", "image": "d"}]
            }}}}),
        )
        .unwrap_err();
        assert_eq!(err.code(), 500);
        assert!(
            err.message().starts_with("The order in patch list:\n"),
            "{err}"
        );
        assert!(
            err.message()
                .contains("doesn't match $setElementOrder list:"),
            "{err}"
        );
        let err = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {"$setElementOrder/containers": "driver"}}}}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Internal("expected a []interface {}, but received a string".into())
        );
        let err = smp(
            &deployment(),
            json!({"metadata": {"$setElementOrderfinalizers": []}}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::BadRequest("invalid patch format of setElementOrder list".into())
        );
    }

    #[test]
    fn smp_retain_keys() {
        let out = smp(
            &deployment(),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        )
        .unwrap();
        assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
        // Volumes carry retainKeys too: switching a volume's source.
        let out = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {"volumes": [
                {"name": "config", "$retainKeys": ["name", "secret"], "secret": {"secretName": "s"}}
            ]}}}}),
        )
        .unwrap();
        assert_eq!(
            pod_spec(&out)["volumes"][1],
            json!({"name": "config", "secret": {"secretName": "s"}})
        );
        let bad = PatchError::BadRequest("invalid patch format of retainKeys".into());
        let err = smp(
            &deployment(),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": {}}}}),
        )
        .unwrap_err();
        assert_eq!(err, bad);
        let err = smp(
            &deployment(),
            json!({"spec": {"strategy": {"$retainKeys": "type"}}}),
        )
        .unwrap_err();
        assert_eq!(err, bad);
    }

    #[test]
    fn smp_pdb_selector_is_replaced() {
        let pdb = json!({"kind": "PodDisruptionBudget", "spec": {"minAvailable": 1,
            "selector": {"matchLabels": {"app": "a", "tier": "t"}}}});
        let out = strategic_merge_patch(
            &pdb,
            &json!({"spec": {"selector": {"matchLabels": {"app": "b"}}}}),
            &BuiltinLists::for_kind("policy", "PodDisruptionBudget"),
        )
        .unwrap();
        assert_eq!(
            out["spec"]["selector"],
            json!({"matchLabels": {"app": "b"}})
        );
        assert_eq!(out["spec"]["minAvailable"], 1);
    }

    #[test]
    fn smp_type_changes_and_new_fields() {
        let out = smp(
            &deployment(),
            json!({"spec": {
                "replicas": "3",
                "strategy": "Recreate",
                "template": {"spec": {"nodeSelector": {"a": "b", "c": null}, "affinity": {"$patch": "delete"}}}
            }}),
        )
        .unwrap();
        assert_eq!(out["spec"]["replicas"], "3");
        assert_eq!(out["spec"]["strategy"], "Recreate");
        // New fields lose their nulls and directive maps.
        assert_eq!(pod_spec(&out)["nodeSelector"], json!({"a": "b"}));
        assert!(pod_spec(&out).get("affinity").is_none());
    }

    #[test]
    fn smp_directive_keys_never_reach_the_result() {
        let out = smp(
            &deployment(),
            json!({"spec": {"template": {"spec": {
                "tolerations": [{"key": "k", "$patch": "x"}],
                "initContainers": [{"name": "init", "$setElementOrder/env": [{"name": "A"}], "env": [{"name": "A"}]}]
            }}}}),
        )
        .unwrap();
        assert_eq!(pod_spec(&out)["tolerations"], json!([{"key": "k"}]));
        assert_eq!(
            pod_spec(&out)["initContainers"],
            json!([{"name": "init", "env": [{"name": "A"}]}])
        );
    }

    #[test]
    fn smp_malformed_patches() {
        let t = deployment();
        let err = smp(&t, json!([1])).unwrap_err();
        assert_eq!(
            err,
            PatchError::BadRequest(
                "json: cannot unmarshal array into Go value of type map[string]interface {}".into()
            )
        );
        assert_eq!(smp(&t, json!("x")).unwrap_err().code(), 400);
        assert_eq!(smp(&t, Value::Null), Ok(t.clone()));
        assert_eq!(smp(&t, json!({})), Ok(t.clone()));
        // A list item without its merge key.
        let err = smp(
            &t,
            json!({"spec": {"template": {"spec": {"containers": [{"image": "nginx:1.25"}]}}}}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Internal(
                "map: map[image:nginx:1.25] does not contain declared merge key: name".into()
            )
        );
        // Mixed element types.
        let err = smp(
            &t,
            json!({"spec": {"template": {"spec": {"containers": ["driver"]}}}}),
        )
        .unwrap_err();
        assert!(
            err.message()
                .starts_with("list element types are not identical: "),
            "{err}"
        );
        // Lists of lists: 422.
        let mut d = t.clone();
        d["metadata"]["finalizers"] = json!([]);
        let err = smp(&d, json!({"metadata": {"finalizers": [["a"]]}})).unwrap_err();
        assert_eq!(err, invalid());
        // Merging maps into a set of scalars.
        let err = smp(&d, json!({"metadata": {"finalizers": [{"a": 1}]}})).unwrap_err();
        assert_eq!(
            err,
            PatchError::Internal("cannot merge lists without merge key for string".into())
        );
        // A leading null item.
        let err = smp(&t, json!({"metadata": {"finalizers": [null]}})).unwrap_err();
        assert_eq!(err.code(), 500);
    }

    #[test]
    fn go_formatting() {
        assert_eq!(
            go_v(&json!({"b": [1, 2.5, "x"], "a": null, "c": true})),
            "map[a:<nil> b:[1 2.5 x] c:true]"
        );
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(123456.5), "123456.5");
        assert_eq!(go_float(1.5e-7), "1.5e-07");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_percent_s(&json!(1.5)), "%!s(float64=1.5)");
        assert_eq!(go_percent_s(&json!(true)), "%!s(bool=true)");
        assert_eq!(go_type(&json!(null)), "%!s(<nil>)");
    }

    #[test]
    fn patch_error_display() {
        let e = PatchError::BadRequest("x".into());
        assert_eq!(e.to_string(), "x");
        assert_eq!(e.code(), 400);
    }
}
