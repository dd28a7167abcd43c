//! What the CRD modules share: Go's quoting and number formatting (messages must read as the
//! server's), JSON access helpers, field-error constructors and the DNS name rules.

use crate::field_error::{FieldError, FieldErrorKind};
use serde_json::Value;
use std::fmt::Write as _;

/// Go's `strconv.Quote`, which is how the server quotes values inside messages.
pub(super) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

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

// ---------------------------------------------------------------------------------------------
// DNS name rules (k8s.io/apimachinery/pkg/util/validation).
// ---------------------------------------------------------------------------------------------

pub(super) const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
pub(super) const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

pub(super) fn is_dns1123_label_shape(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => alnum(f) && alnum(l) && b.iter().all(|&c| alnum(c) || c == b'-'),
        _ => false,
    }
}

pub(super) fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if !s.split('.').all(is_dns1123_label_shape) {
        errs.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    errs
}

pub(super) fn dns1035_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let shape =
        is_dns1123_label_shape(s) && s.as_bytes().first().is_some_and(u8::is_ascii_lowercase);
    if !shape {
        errs.push(DNS1035_LABEL_MSG.to_string());
    }
    errs
}
