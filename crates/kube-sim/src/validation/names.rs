//! apimachinery's string rules (`k8s.io/apimachinery/pkg/util/validation`: DNS names, qualified
//! names, label values, config keys) and the checks of `metadata` every kind gets.

use super::Errs;
use super::access::{as_obj, opt_arr, wrong_type};
use crate::field_error::{FieldError, index, key};
use serde_json::{Value, json};

pub(super) const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
pub(super) const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
pub(super) const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
pub(super) const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
pub(super) const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
pub(super) const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
pub(super) const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
pub(super) const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
pub(super) const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
pub(super) const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
pub(super) const CONFIG_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
pub(super) const CONFIG_KEY_MSG: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
/// `core.MaxSecretSize`, also the ConfigMap limit.
pub(super) const MAX_SECRET_SIZE: usize = 1024 * 1024;
pub(super) const TOTAL_ANNOTATION_SIZE: usize = 256 * 1024;

pub(super) fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

pub(super) fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

pub(super) fn is_label_shape(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => alnum(f) && alnum(l) && b.iter().all(|&c| alnum(c) || c == b'-'),
        _ => false,
    }
}

pub(super) fn is_subdomain_shape(s: &str) -> bool {
    !s.is_empty() && s.split('.').all(is_label_shape)
}

pub(super) fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_alphanumeric();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            alnum(f)
                && alnum(l)
                && b.iter()
                    .all(|&c| alnum(c) || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `IsDNS1123Label`'s messages; empty when valid.
pub fn dns1123_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !is_label_shape(s) {
        if is_subdomain_shape(s) {
            // A valid subdomain that is not a valid label: the length was checked, so it is dots.
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`'s messages; empty when valid.
pub fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !is_subdomain_shape(s) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1035Label`'s messages (Service names); empty when valid.
pub fn dns1035_label_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !(is_label_shape(s) && s.as_bytes().first().is_some_and(u8::is_ascii_lowercase)) {
        errs.push(regex_error(
            DNS1035_LABEL_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `IsQualifiedName`: label keys, annotation keys, finalizers, provisioners.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain_errors(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_MSG,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !is_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue`.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `IsConfigMapKey`: keys of ConfigMap and Secret data.
pub fn config_key_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253));
    }
    if value.is_empty()
        || !value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    {
        errs.push(regex_error(
            CONFIG_KEY_MSG,
            CONFIG_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if value == "." {
        errs.push("must not be '.'".to_string());
    } else if value == ".." {
        errs.push("must not be '..'".to_string());
    } else if value.starts_with("..") {
        errs.push("must not start with '..'".to_string());
    }
    errs
}

/// `IsValidPathSegmentName`: RBAC object names.
pub fn path_segment_errors(value: &str) -> Vec<String> {
    if value == "." || value == ".." {
        return vec![format!("may not be '{value}'")];
    }
    let mut errs = Vec::new();
    for bad in ["/", "%"] {
        if value.contains(bad) {
            errs.push(format!("may not contain '{bad}'"));
        }
    }
    errs
}

pub(super) fn port_name_errors(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push(max_len_error(15));
    }
    if port.is_empty()
        || !port
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if !port.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

pub(super) fn port_range_error() -> String {
    "must be between 1 and 65535, inclusive".to_string()
}

// ---------------------------------------------------------------------------------------------
// Names and metadata
// ---------------------------------------------------------------------------------------------

/// Name rules per resource as the real server enforces them on `metadata.name`: DNS-1123 label
/// for Namespaces and StatefulSets, DNS-1035 label for Services, path-segment names for RBAC
/// objects, DNS-1123 subdomain for everything else (custom resources included).
pub fn validate_name(group: &str, kind: &str, name: &str) -> Vec<FieldError> {
    const FIELD: &str = "metadata.name";
    if name.is_empty() {
        return vec![FieldError::required(
            FIELD,
            "name or generateName is required",
        )];
    }
    let msgs = match (group, kind) {
        ("", "Namespace") | ("apps", "StatefulSet") => dns1123_label_errors(name),
        ("", "Service") => dns1035_label_errors(name),
        (
            "rbac.authorization.k8s.io",
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding",
        ) => path_segment_errors(name),
        _ => dns1123_subdomain_errors(name),
    };
    msgs.into_iter()
        .map(|m| FieldError::invalid(FIELD, json!(name), m))
        .collect()
}

/// `metadata.labels` (qualified-name keys, label values) and `metadata.annotations`
/// (qualified-name keys ignoring case, 256 KiB in total) of an object's metadata.
pub fn validate_labels_and_annotations(meta: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(meta) = meta.as_object() else {
        if !meta.is_null() {
            wrong_type(&mut errs, "metadata", meta, "object");
        }
        return errs;
    };
    validate_labels(meta.get("labels"), "metadata.labels", &mut errs);
    validate_annotations(meta.get("annotations"), "metadata.annotations", &mut errs);
    errs
}

/// `metadata.finalizers`: qualified names; for a built-in object (core validation's
/// `validateKubeFinalizerName`), a name without a `/` must also be one of the standard
/// finalizers. Custom resources get only the qualified-name check (apimachinery's
/// `ValidateFinalizerName`), so `finalizer.manila.csi.openshift.io` is accepted there.
pub fn validate_finalizers(meta: &Value, builtin: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(list) = opt_arr(
        meta.as_object(),
        "finalizers",
        "metadata.finalizers",
        &mut errs,
    ) {
        finalizer_names(
            list,
            "metadata.finalizers",
            builtin.then_some(&["kubernetes", "orphan", "foregroundDeletion"][..]),
            &mut errs,
        );
        let has = |n: &str| list.iter().any(|f| f.as_str() == Some(n));
        if has("orphan") && has("foregroundDeletion") {
            errs.push(FieldError::invalid(
                "metadata.finalizers",
                Value::Array(list.clone()),
                "finalizers orphan and foregroundDeletion cannot be both set",
            ));
        }
    }
    errs
}

pub(super) fn finalizer_names(
    list: &[Value],
    path: &str,
    standard: Option<&[&str]>,
    errs: &mut Errs,
) {
    for (i, f) in list.iter().enumerate() {
        let Some(name) = f.as_str() else {
            wrong_type(errs, &index(path, i), f, "string");
            continue;
        };
        for m in qualified_name_errors(name) {
            errs.push(FieldError::invalid(path, json!(name), m));
        }
        if !name.contains('/') && standard.is_some_and(|s| !s.contains(&name)) {
            errs.push(FieldError::invalid(
                path,
                json!(name),
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
}

pub(super) fn validate_labels(v: Option<&Value>, path: &str, errs: &mut Errs) {
    let Some(labels) = as_obj(v, path, errs) else {
        return;
    };
    for (k, val) in labels {
        for m in qualified_name_errors(k) {
            errs.push(FieldError::invalid(path, json!(k), m));
        }
        match val.as_str() {
            Some(s) => {
                for m in label_value_errors(s) {
                    errs.push(FieldError::invalid(path, json!(s), m));
                }
            }
            None => wrong_type(errs, &key(path, k), val, "string"),
        }
    }
}

pub(super) fn validate_annotations(v: Option<&Value>, path: &str, errs: &mut Errs) {
    let Some(annotations) = as_obj(v, path, errs) else {
        return;
    };
    let mut total = 0usize;
    for (k, val) in annotations {
        for m in qualified_name_errors(&k.to_lowercase()) {
            errs.push(FieldError::invalid(path, json!(k), m));
        }
        match val.as_str() {
            Some(s) => total += k.len() + s.len(),
            None => wrong_type(errs, &key(path, k), val, "string"),
        }
    }
    if total > TOTAL_ANNOTATION_SIZE {
        errs.push(FieldError::too_long(path, json!(""), TOTAL_ANNOTATION_SIZE));
    }
}
