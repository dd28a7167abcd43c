//! Typed reads of JSON fields that report a wrong type as the server's `field.Error` would,
//! so that the per-kind rules read like the Go validation they follow.

use super::Errs;
use crate::field_error::{FieldError, index};
use serde_json::{Map, Value, json};

pub(super) const IMMUTABLE: &str = "field is immutable";
pub(super) const NEGATIVE: &str = "must be greater than or equal to 0";

pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

pub(super) fn wrong_type(errs: &mut Errs, path: &str, v: &Value, expected: &str) {
    errs.push(FieldError::type_invalid(
        path,
        json!(type_name(v)),
        format!("must be of type {expected}"),
    ));
}

pub(super) fn absent(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Null))
}

/// An optional object; `None` when absent, null or of the wrong type (then reported).
pub(super) fn as_obj<'a>(
    v: Option<&'a Value>,
    path: &str,
    errs: &mut Errs,
) -> Option<&'a Map<String, Value>> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(other) => {
            wrong_type(errs, path, other, "object");
            None
        }
    }
}

pub(super) fn opt_obj<'a>(
    m: Option<&'a Map<String, Value>>,
    k: &str,
    path: &str,
    errs: &mut Errs,
) -> Option<&'a Map<String, Value>> {
    as_obj(m.and_then(|m| m.get(k)), path, errs)
}

pub(super) fn opt_arr<'a>(
    m: Option<&'a Map<String, Value>>,
    k: &str,
    path: &str,
    errs: &mut Errs,
) -> Option<&'a Vec<Value>> {
    match m.and_then(|m| m.get(k)) {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => Some(a),
        Some(other) => {
            wrong_type(errs, path, other, "array");
            None
        }
    }
}

/// An optional string; "" when absent or of the wrong type (then reported), as Go decodes it.
pub(super) fn opt_str<'a>(
    m: Option<&'a Map<String, Value>>,
    k: &str,
    path: &str,
    errs: &mut Errs,
) -> &'a str {
    match m.and_then(|m| m.get(k)) {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s,
        Some(other) => {
            wrong_type(errs, path, other, "string");
            ""
        }
    }
}

/// An optional integer; `None` when absent or of the wrong type (then reported).
pub(super) fn opt_int(
    m: Option<&Map<String, Value>>,
    k: &str,
    path: &str,
    errs: &mut Errs,
) -> Option<i64> {
    match m.and_then(|m| m.get(k)) {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_i64().is_some() => n.as_i64(),
        Some(other) => {
            wrong_type(errs, path, other, "integer");
            None
        }
    }
}

pub(super) fn opt_bool(
    m: Option<&Map<String, Value>>,
    k: &str,
    path: &str,
    errs: &mut Errs,
) -> Option<bool> {
    match m.and_then(|m| m.get(k)) {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => {
            wrong_type(errs, path, other, "boolean");
            None
        }
    }
}

/// The elements of an optional list that are objects; other elements are reported.
pub(super) fn obj_items<'a>(
    list: Option<&'a Vec<Value>>,
    path: &str,
    errs: &mut Errs,
) -> Vec<(usize, &'a Map<String, Value>)> {
    let mut out = Vec::new();
    for (i, item) in list.into_iter().flatten().enumerate() {
        match item {
            Value::Object(m) => out.push((i, m)),
            other => wrong_type(errs, &index(path, i), other, "object"),
        }
    }
    out
}

/// Strings of an optional list; other elements are reported.
pub(super) fn str_items<'a>(
    list: Option<&'a Vec<Value>>,
    path: &str,
    errs: &mut Errs,
) -> Vec<(usize, &'a str)> {
    let mut out = Vec::new();
    for (i, item) in list.into_iter().flatten().enumerate() {
        match item {
            Value::String(s) => out.push((i, s.as_str())),
            other => wrong_type(errs, &index(path, i), other, "string"),
        }
    }
    out
}

pub(super) fn nonnegative(m: Option<&Map<String, Value>>, k: &str, path: &str, errs: &mut Errs) {
    if let Some(n) = opt_int(m, k, path, errs)
        && n < 0
    {
        errs.push(FieldError::invalid(path, json!(n), NEGATIVE));
    }
}

pub(super) fn enum_str(value: &str, path: &str, allowed: &[&str], required: bool, errs: &mut Errs) {
    if value.is_empty() {
        if required {
            errs.push(FieldError::required(path, ""));
        }
    } else if !allowed.contains(&value) {
        errs.push(FieldError::not_supported(path, json!(value), allowed));
    }
}

/// The spec of an object: absent means empty; another type is reported and stops validation.
pub(super) fn spec_of<'a>(
    root: &'a Map<String, Value>,
    empty: &'a Map<String, Value>,
    errs: &mut Errs,
) -> Option<&'a Map<String, Value>> {
    match root.get("spec") {
        None | Some(Value::Null) => Some(empty),
        Some(Value::Object(m)) => Some(m),
        Some(other) => {
            wrong_type(errs, "spec", other, "object");
            None
        }
    }
}

/// `apiequality.Semantic.DeepEqual` over JSON: absent, null, empty maps and empty lists are
/// equal, and numbers compare by value.
pub(super) fn semantic_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    fn is_empty(v: Option<&Value>) -> bool {
        match v {
            None | Some(Value::Null) => true,
            Some(Value::Object(m)) => m.values().all(|v| is_empty(Some(v))),
            Some(Value::Array(a)) => a.is_empty(),
            _ => false,
        }
    }
    match (a, b) {
        (x, y) if is_empty(x) && is_empty(y) => true,
        (Some(Value::Object(x)), Some(Value::Object(y))) => x
            .keys()
            .chain(y.keys())
            .all(|k| semantic_eq(x.get(k), y.get(k))),
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| semantic_eq(Some(p), Some(q)))
        }
        (Some(Value::Number(x)), Some(Value::Number(y))) => x.as_f64() == y.as_f64(),
        (x, y) => x == y,
    }
}

pub(super) fn immutable(old: Option<&Value>, new: Option<&Value>, path: &str, errs: &mut Errs) {
    if !semantic_eq(old, new) {
        errs.push(FieldError::invalid(
            path,
            new.cloned().unwrap_or(Value::Null),
            IMMUTABLE,
        ));
    }
}

pub(super) fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, k| cur.get(k))
}
