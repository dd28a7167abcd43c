//! What the CRD modules share: Go's quoting and number formatting (messages must read as the
//! server's), JSON access helpers and field-error constructors.

use crate::field_error::{FieldError, FieldErrorKind};
use crate::json::go_quote;
use serde_json::{Map, Value};

/// Go's `%v` for a float64: shortest representation, exponent form outside [1e-4, 1e21).
pub(super) fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let a = f.abs();
    if a != 0.0 && !(1e-4..1e21).contains(&a) {
        // Rust prints `1e21`; Go prints `1e+21` and pads the exponent to two digits.
        let s = format!("{f:e}");
        if let Some((mant, exp)) = s.split_once('e') {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            let digits = if digits.len() < 2 {
                format!("0{digits}")
            } else {
                digits.to_string()
            };
            return format!("{mant}e{sign}{digits}");
        }
        return s;
    }
    format!("{f}")
}

/// A JSON number as the API server's decoder sees it: integers that fit int64 stay integers,
/// everything else is a float64.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Num {
    Int(i64),
    Float(f64),
}

pub(super) fn num_of(n: &serde_json::Number) -> Num {
    match n.as_i64() {
        Some(i) => Num::Int(i),
        None => Num::Float(n.as_f64().unwrap_or(f64::NAN)),
    }
}

impl Num {
    pub(super) fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

/// JSON equality where numbers compare by value (1 == 1.0), as Go's decoded values mostly do.
pub(super) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (num_of(x), num_of(y)) {
            (Num::Int(i), Num::Int(j)) => i == j,
            (p, q) => p.as_f64() == q.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// The JSON type name kube-openapi reports for a decoded value.
pub(super) fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::String(_) => "string",
        Value::Number(n) => match num_of(n) {
            Num::Int(_) => "integer",
            Num::Float(_) => "number",
        },
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

pub(super) fn str_at<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

pub(super) fn bool_at(v: &Value, k: &str) -> bool {
    v.get(k).and_then(Value::as_bool).unwrap_or(false)
}

pub(super) fn arr_at<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

pub(super) fn strings_at(v: &Value, k: &str) -> Vec<String> {
    arr_at(v, k)
        .iter()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

/// A cause with an arbitrary kind, for messages the shared constructors don't shape.
pub(super) fn cause(
    kind: FieldErrorKind,
    field: impl Into<String>,
    value: Option<Value>,
    detail: impl Into<String>,
) -> FieldError {
    FieldError {
        kind,
        field: field.into(),
        value,
        detail: detail.into(),
    }
}

/// `field.NotSupported` with Go quoting of each supported value.
pub(super) fn not_supported(
    field: impl Into<String>,
    value: Value,
    supported: &[String],
) -> FieldError {
    let detail = if supported.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        format!("supported values: {}", quoted.join(", "))
    };
    cause(FieldErrorKind::NotSupported, field, Some(value), detail)
}

pub(super) fn immutable(field: impl Into<String>, value: Value) -> FieldError {
    FieldError::invalid(field, value, "field is immutable")
}

pub(super) fn sub_map<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a Map<String, Value>> {
    m.get(k).and_then(Value::as_object)
}

pub(super) fn m_str<'a>(m: &'a Map<String, Value>, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or("")
}

pub(super) fn m_bool(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool).unwrap_or(false)
}

pub(super) fn props_of(m: &Map<String, Value>) -> Vec<(&String, &Map<String, Value>)> {
    sub_map(m, "properties")
        .map(|p| {
            p.iter()
                .filter_map(|(k, v)| v.as_object().map(|o| (k, o)))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn prop_path(path: &str, k: &str) -> String {
    format!("{path}.properties[{k}]")
}
