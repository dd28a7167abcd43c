//! Field-level validation errors, shaped like the API server's `field.Error`.
//!
//! Every validator in kube-sim (names, built-in types, CRD schemas, immutability) reports
//! `FieldError`s; the HTTP layer turns a non-empty list into one `422 Invalid` Status whose
//! `details.causes` carry them, exactly as a real server does. This module must stay free of
//! I/O and of any other kube-sim module so that validators can be tested on their own.

use serde_json::Value;
use std::fmt;

/// The kinds of field error the API server reports (`k8s.io/apimachinery/pkg/util/validation/field`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// `FieldValueRequired`: "Required value".
    Required,
    /// `FieldValueInvalid`: "Invalid value".
    Invalid,
    /// `FieldValueNotSupported`: "Unsupported value".
    NotSupported,
    /// `FieldValueForbidden`: "Forbidden".
    Forbidden,
    /// `FieldValueDuplicate`: "Duplicate value".
    Duplicate,
    /// `FieldValueTooLong`: "Too long".
    TooLong,
    /// `FieldValueTypeInvalid`: "Invalid value" for a wrong JSON type.
    TypeInvalid,
    /// `FieldValueNotFound`: "Not found".
    NotFound,
    /// `FieldValueTooMany`: "Too many".
    TooMany,
}

impl FieldErrorKind {
    /// The `reason` string of a Status cause.
    pub fn cause_reason(self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Invalid => "FieldValueInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Forbidden => "FieldValueForbidden",
            Self::Duplicate => "FieldValueDuplicate",
            Self::TooLong => "FieldValueTooLong",
            Self::TypeInvalid => "FieldValueTypeInvalid",
            Self::NotFound => "FieldValueNotFound",
            Self::TooMany => "FieldValueTooMany",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::Forbidden => "Forbidden",
            Self::Duplicate => "Duplicate value",
            Self::TooLong => "Too long",
            Self::NotFound => "Not found",
            Self::TooMany => "Too many",
        }
    }
}

/// One invalid field: its path (`spec.template.spec.containers[0].image`), what is wrong, the
/// offending value when the server would echo it, and a human explanation.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub kind: FieldErrorKind,
    pub field: String,
    pub value: Option<Value>,
    pub detail: String,
}

impl FieldError {
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            kind: FieldErrorKind::Required,
            field: field.into(),
            value: None,
            detail: detail.into(),
        }
    }

    pub fn invalid(field: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        Self {
            kind: FieldErrorKind::Invalid,
            field: field.into(),
            value: Some(value),
            detail: detail.into(),
        }
    }

    /// An enum violation; `supported` lists the allowed values as the server prints them.
    pub fn not_supported(field: impl Into<String>, value: Value, supported: &[&str]) -> Self {
        let list = supported
            .iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ");
        Self {
            kind: FieldErrorKind::NotSupported,
            field: field.into(),
            value: Some(value),
            detail: if list.is_empty() {
                String::new()
            } else {
                format!("supported values: {list}")
            },
        }
    }

    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            kind: FieldErrorKind::Forbidden,
            field: field.into(),
            value: None,
            detail: detail.into(),
        }
    }

    pub fn duplicate(field: impl Into<String>, value: Value) -> Self {
        Self {
            kind: FieldErrorKind::Duplicate,
            field: field.into(),
            value: Some(value),
            detail: String::new(),
        }
    }

    pub fn too_long(field: impl Into<String>, value: Value, max: usize) -> Self {
        Self {
            kind: FieldErrorKind::TooLong,
            field: field.into(),
            value: Some(value),
            detail: format!("may not be more than {max} bytes"),
        }
    }

    /// More items than allowed: "Too many: 5: must have at most 3 items".
    pub fn too_many(field: impl Into<String>, actual: usize, max: usize, what: &str) -> Self {
        Self {
            kind: FieldErrorKind::TooMany,
            field: field.into(),
            value: Some(Value::from(actual)),
            detail: format!("must have at most {max} {what}"),
        }
    }

    pub fn type_invalid(field: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        Self {
            kind: FieldErrorKind::TypeInvalid,
            field: field.into(),
            value: Some(value),
            detail: detail.into(),
        }
    }

    /// The message without the field path, as it appears in a Status cause.
    pub fn message(&self) -> String {
        let mut out = self.kind.label().to_string();
        if let Some(v) = &self.value
            && !matches!(
                self.kind,
                FieldErrorKind::Required | FieldErrorKind::Forbidden | FieldErrorKind::TooLong
            )
        {
            out.push_str(": ");
            out.push_str(&render_value(v));
        }
        if !self.detail.is_empty() {
            out.push_str(": ");
            out.push_str(&self.detail);
        }
        out
    }
}

/// Values are echoed the way Go's `%#v`-ish rendering in `field.Error` prints them: strings
/// quoted, numbers and booleans bare, anything bigger as compact JSON.
fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message())
    }
}

/// Joins a path the way the server prints it: `spec.containers[0].name`.
pub fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

/// `parent[i]`.
pub fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// `parent[key]` for map entries.
pub fn key(parent: &str, k: &str) -> String {
    format!("{parent}[{k}]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_match_the_api_server() {
        assert_eq!(
            FieldError::required("spec.selector", "").to_string(),
            "spec.selector: Required value"
        );
        assert_eq!(
            FieldError::not_supported("spec.type", json!("Foo"), &["A", "B"]).to_string(),
            "spec.type: Unsupported value: \"Foo\": supported values: \"A\", \"B\""
        );
        assert_eq!(
            FieldError::invalid(
                "metadata.name",
                json!("Bad_Name"),
                "a lowercase RFC 1123 subdomain"
            )
            .to_string(),
            "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"
        );
        assert_eq!(
            FieldError::forbidden("spec", "updates are forbidden").to_string(),
            "spec: Forbidden: updates are forbidden"
        );
    }

    #[test]
    fn paths_compose() {
        assert_eq!(index(&child("spec", "containers"), 0), "spec.containers[0]");
        assert_eq!(key("data", "a.b"), "data[a.b]");
        assert_eq!(child("", "spec"), "spec");
    }
}
