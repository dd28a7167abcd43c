//! Validation of built-in kinds, with the rules, field paths and messages of kube-apiserver v1.33.
//!
//! Operators meet these errors as `422 Invalid` responses whose causes name a field path and a
//! message (`spec.selector: Invalid value: ...: field is immutable`); tests and users compare
//! those strings, so paths and texts here follow the real server's `field.Error`s exactly,
//! including its quirks (a pod template's labels are reported at `spec.template.labels`, a
//! CSIDriver's `attachRequired` at `spec.attachedRequired`).
//!
//! Split of work: [`validate_name`] checks `metadata.name`, [`validate_labels_and_annotations`]
//! and [`validate_finalizers`] the rest of the top-level metadata, [`validate_create`] the body
//! of a kind (after [`crate::defaults::apply_defaults`]), and [`validate_update`] adds the
//! immutability rules. The caller runs the ones it needs and joins the errors; generic metadata
//! update rules (name, namespace, uid unchanged) are the caller's too.
//!
//! A field of the wrong JSON type is reported as `FieldValueTypeInvalid` ("must be of type
//! object"); a real server rejects such a body earlier, with a 400 decode error. This module is
//! pure: no I/O, no panics on any input, and it never changes the object.

use crate::defaults::VOLUME_SOURCES;
use std::collections::BTreeSet;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::field_error::{FieldError, child, index, key};

type Errs = Vec<FieldError>;

// ---------------------------------------------------------------------------------------------
// apimachinery string rules (k8s.io/apimachinery/pkg/util/validation)
// ---------------------------------------------------------------------------------------------

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const CONFIG_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_KEY_MSG: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
const IMMUTABLE: &str = "field is immutable";
const NEGATIVE: &str = "must be greater than or equal to 0";
/// `core.MaxSecretSize`, also the ConfigMap limit.
const MAX_SECRET_SIZE: usize = 1024 * 1024;
const TOTAL_ANNOTATION_SIZE: usize = 256 * 1024;

fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
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

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

fn is_label_shape(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => alnum(f) && alnum(l) && b.iter().all(|&c| alnum(c) || c == b'-'),
        _ => false,
    }
}

fn is_subdomain_shape(s: &str) -> bool {
    !s.is_empty() && s.split('.').all(is_label_shape)
}

fn is_qualified_name_part(s: &str) -> bool {
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

/// Tests a DNS-1123 subdomain; the error joins apimachinery's messages with "; ".
pub fn is_dns1123_subdomain(s: &str) -> Result<(), String> {
    let errs = dns1123_subdomain_errors(s);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("; "))
    }
}

/// Tests a DNS-1123 label; the error joins apimachinery's messages with "; ".
pub fn is_dns1123_label(s: &str) -> Result<(), String> {
    let errs = dns1123_label_errors(s);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("; "))
    }
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

fn port_name_errors(port: &str) -> Vec<String> {
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

fn port_range_error() -> String {
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

fn finalizer_names(list: &[Value], path: &str, standard: Option<&[&str]>, errs: &mut Errs) {
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

fn validate_labels(v: Option<&Value>, path: &str, errs: &mut Errs) {
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

fn validate_annotations(v: Option<&Value>, path: &str, errs: &mut Errs) {
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

// ---------------------------------------------------------------------------------------------
// JSON access with type errors
// ---------------------------------------------------------------------------------------------

fn type_name(v: &Value) -> &'static str {
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

fn wrong_type(errs: &mut Errs, path: &str, v: &Value, expected: &str) {
    errs.push(FieldError::type_invalid(
        path,
        json!(type_name(v)),
        format!("must be of type {expected}"),
    ));
}

fn absent(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Null))
}

/// An optional object; `None` when absent, null or of the wrong type (then reported).
fn as_obj<'a>(v: Option<&'a Value>, path: &str, errs: &mut Errs) -> Option<&'a Map<String, Value>> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(other) => {
            wrong_type(errs, path, other, "object");
            None
        }
    }
}

fn opt_obj<'a>(
    m: Option<&'a Map<String, Value>>,
    k: &str,
    path: &str,
    errs: &mut Errs,
) -> Option<&'a Map<String, Value>> {
    as_obj(m.and_then(|m| m.get(k)), path, errs)
}

fn opt_arr<'a>(
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
fn opt_str<'a>(m: Option<&'a Map<String, Value>>, k: &str, path: &str, errs: &mut Errs) -> &'a str {
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
fn opt_int(m: Option<&Map<String, Value>>, k: &str, path: &str, errs: &mut Errs) -> Option<i64> {
    match m.and_then(|m| m.get(k)) {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_i64().is_some() => n.as_i64(),
        Some(other) => {
            wrong_type(errs, path, other, "integer");
            None
        }
    }
}

fn opt_bool(m: Option<&Map<String, Value>>, k: &str, path: &str, errs: &mut Errs) -> Option<bool> {
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
fn obj_items<'a>(
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
fn str_items<'a>(
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

fn nonnegative(m: Option<&Map<String, Value>>, k: &str, path: &str, errs: &mut Errs) {
    if let Some(n) = opt_int(m, k, path, errs)
        && n < 0
    {
        errs.push(FieldError::invalid(path, json!(n), NEGATIVE));
    }
}

fn enum_str(value: &str, path: &str, allowed: &[&str], required: bool, errs: &mut Errs) {
    if value.is_empty() {
        if required {
            errs.push(FieldError::required(path, ""));
        }
    } else if !allowed.contains(&value) {
        errs.push(FieldError::not_supported(path, json!(value), allowed));
    }
}

/// The spec of an object: absent means empty; another type is reported and stops validation.
fn spec_of<'a>(
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
fn semantic_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
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

fn immutable(old: Option<&Value>, new: Option<&Value>, path: &str, errs: &mut Errs) {
    if !semantic_eq(old, new) {
        errs.push(FieldError::invalid(
            path,
            new.cloned().unwrap_or(Value::Null),
            IMMUTABLE,
        ));
    }
}

fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, k| cur.get(k))
}

// ---------------------------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------------------------

enum Selector {
    /// A nil selector: matches nothing.
    Nothing,
    /// An empty selector: matches everything.
    Everything,
    Requirements(Vec<(String, String, Vec<String>)>),
    /// `LabelSelectorAsSelector` failed.
    Invalid,
}

fn parse_selector(v: Option<&Value>) -> Selector {
    let sel = match v {
        None | Some(Value::Null) => return Selector::Nothing,
        Some(Value::Object(m)) => m,
        Some(_) => return Selector::Invalid,
    };
    let mut reqs = Vec::new();
    match sel.get("matchLabels") {
        None | Some(Value::Null) => {}
        Some(Value::Object(labels)) => {
            for (k, v) in labels {
                let Some(v) = v.as_str() else {
                    return Selector::Invalid;
                };
                if !qualified_name_errors(k).is_empty() || !label_value_errors(v).is_empty() {
                    return Selector::Invalid;
                }
                reqs.push((k.clone(), "In".to_string(), vec![v.to_string()]));
            }
        }
        Some(_) => return Selector::Invalid,
    }
    match sel.get("matchExpressions") {
        None | Some(Value::Null) => {}
        Some(Value::Array(exprs)) => {
            for e in exprs {
                let (Some(k), Some(op)) = (
                    e.get("key").and_then(Value::as_str),
                    e.get("operator").and_then(Value::as_str),
                ) else {
                    return Selector::Invalid;
                };
                let values: Vec<String> = match e.get("values") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(vs)) => {
                        let strs: Option<Vec<String>> =
                            vs.iter().map(|v| v.as_str().map(str::to_string)).collect();
                        let Some(strs) = strs else {
                            return Selector::Invalid;
                        };
                        strs
                    }
                    Some(_) => return Selector::Invalid,
                };
                let ok = match op {
                    "In" | "NotIn" => !values.is_empty(),
                    "Exists" | "DoesNotExist" => values.is_empty(),
                    _ => false,
                };
                if !ok || !qualified_name_errors(k).is_empty() {
                    return Selector::Invalid;
                }
                reqs.push((k.to_string(), op.to_string(), values));
            }
        }
        Some(_) => return Selector::Invalid,
    }
    if reqs.is_empty() {
        Selector::Everything
    } else {
        Selector::Requirements(reqs)
    }
}

fn selector_matches(sel: &Selector, labels: Option<&Map<String, Value>>) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    match sel {
        Selector::Nothing | Selector::Invalid => false,
        Selector::Everything => true,
        Selector::Requirements(reqs) => reqs.iter().all(|(k, op, values)| match op.as_str() {
            "In" => get(k).is_some_and(|v| values.iter().any(|x| x == v)),
            "NotIn" => get(k).is_none_or(|v| !values.iter().any(|x| x == v)),
            "Exists" => get(k).is_some(),
            "DoesNotExist" => get(k).is_none(),
            _ => false,
        }),
    }
}

/// `ValidateLabelSelector`.
fn validate_label_selector(v: Option<&Value>, path: &str, errs: &mut Errs) {
    let Some(sel) = as_obj(v, path, errs) else {
        return;
    };
    validate_labels(sel.get("matchLabels"), &child(path, "matchLabels"), errs);
    let exprs_path = child(path, "matchExpressions");
    let exprs = opt_arr(Some(sel), "matchExpressions", &exprs_path, errs);
    for (i, e) in obj_items(exprs, &exprs_path, errs) {
        let p = index(&exprs_path, i);
        let op = opt_str(Some(e), "operator", &child(&p, "operator"), errs);
        let values_path = child(&p, "values");
        let values = opt_arr(Some(e), "values", &values_path, errs);
        let n_values = values.map_or(0, Vec::len);
        match op {
            "In" | "NotIn" => {
                if n_values == 0 {
                    errs.push(FieldError::required(
                        &values_path,
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if n_values > 0 {
                    errs.push(FieldError::forbidden(
                        &values_path,
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => errs.push(FieldError::invalid(
                child(&p, "operator"),
                json!(other),
                "not a valid selector operator",
            )),
        }
        let k = opt_str(Some(e), "key", &child(&p, "key"), errs);
        for m in qualified_name_errors(k) {
            errs.push(FieldError::invalid(child(&p, "key"), json!(k), m));
        }
        for (j, v) in str_items(values, &values_path, errs) {
            for m in label_value_errors(v) {
                errs.push(FieldError::invalid(index(&values_path, j), json!(v), m));
            }
        }
    }
}

fn selector_is_empty(v: Option<&Value>) -> bool {
    let Some(Value::Object(sel)) = v else {
        return false;
    };
    let n = |k: &str| match sel.get(k) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    };
    n("matchLabels") + n("matchExpressions") == 0
}

// ---------------------------------------------------------------------------------------------
// Create
// ---------------------------------------------------------------------------------------------

/// Create-time validation of the built-in kinds' bodies (after defaulting): required fields,
/// enums, references within the object, sizes. Top-level metadata is checked by
/// [`validate_name`], [`validate_labels_and_annotations`] and [`validate_finalizers`].
/// Unknown kinds, and CustomResourceDefinitions (validated by `crate::crd_schema`): no errors.
pub fn validate_create(group: &str, kind: &str, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(root) = obj.as_object() else {
        wrong_type(&mut errs, "", obj, "object");
        return errs;
    };
    let e = &mut errs;
    match (group, kind) {
        ("apps", "Deployment") => deployment(root, e),
        ("apps", "DaemonSet") => daemon_set(root, e),
        ("apps", "StatefulSet") => stateful_set(root, e),
        ("apps", "ReplicaSet") => replica_set(root, e),
        ("", "Pod") => {
            let empty = Map::new();
            if let Some(spec) = spec_of(root, &empty, e) {
                pod_spec(spec, "spec", e);
            }
        }
        ("", "PodTemplate") => match as_obj(root.get("template"), "template", e) {
            Some(t) => pod_template_spec(t, "template", e),
            None => pod_template_spec(&Map::new(), "template", e),
        },
        ("", "Service") => service(root, e),
        ("", "ConfigMap") => config_map(root, e),
        ("", "Secret") => secret(root, e),
        ("", "Namespace") => {
            let spec = opt_obj(Some(root), "spec", "spec", e);
            let finalizers = opt_arr(spec, "finalizers", "spec.finalizers", e);
            finalizer_names(
                finalizers.map_or(&[], Vec::as_slice),
                "spec.finalizers",
                Some(&["kubernetes"]),
                e,
            );
        }
        ("", "Event") => event(root, e),
        ("storage.k8s.io", "StorageClass") => storage_class(root, e),
        ("storage.k8s.io", "CSIDriver") => csi_driver(root, e),
        ("policy", "PodDisruptionBudget") => pod_disruption_budget(root, e),
        ("rbac.authorization.k8s.io", "Role") => policy_rules(root, true, e),
        ("rbac.authorization.k8s.io", "ClusterRole") => {
            policy_rules(root, false, e);
            if let Some(agg) = opt_obj(Some(root), "aggregationRule", "aggregationRule", e) {
                let path = "aggregationRule.clusterRoleSelectors";
                let selectors = opt_arr(Some(agg), "clusterRoleSelectors", path, e);
                if selectors.is_none_or(Vec::is_empty) {
                    e.push(FieldError::required(
                        path,
                        "at least one clusterRoleSelector required if aggregationRule is non-nil",
                    ));
                }
                for (i, s) in selectors.into_iter().flatten().enumerate() {
                    validate_label_selector(Some(s), &index(path, i), e);
                }
            }
        }
        ("rbac.authorization.k8s.io", "RoleBinding") => role_binding(root, true, e),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => role_binding(root, false, e),
        ("networking.k8s.io", "NetworkPolicy") => network_policy(root, e),
        ("coordination.k8s.io", "Lease") => lease(root, e),
        _ => {}
    }
    errs
}

// --- apps ------------------------------------------------------------------------------------

fn deployment(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    nonnegative(Some(spec), "replicas", "spec.replicas", errs);
    let selector = spec.get("selector");
    if absent(selector) {
        errs.push(FieldError::required("spec.selector", ""));
    } else {
        validate_label_selector(selector, "spec.selector", errs);
        if selector_is_empty(selector) {
            errs.push(FieldError::invalid(
                "spec.selector",
                selector.cloned().unwrap_or(Value::Null),
                "empty selector is invalid for deployment",
            ));
        }
    }
    match parse_selector(selector) {
        Selector::Invalid => errs.push(FieldError::invalid(
            "spec.selector",
            selector.cloned().unwrap_or(Value::Null),
            "invalid label selector",
        )),
        sel => replica_set_template(spec, &sel, errs),
    }
    let strategy_path = "spec.strategy";
    let strategy = opt_obj(Some(spec), "strategy", strategy_path, errs);
    let kind = opt_str(strategy, "type", "spec.strategy.type", errs);
    let rolling = strategy
        .and_then(|s| s.get("rollingUpdate"))
        .filter(|v| !v.is_null());
    match kind {
        "Recreate" => {
            if rolling.is_some() {
                errs.push(FieldError::forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => match as_obj(rolling, "spec.strategy.rollingUpdate", errs) {
            None if rolling.is_none() => errs.push(FieldError::required(
                "spec.strategy.rollingUpdate",
                "this should be defaulted and never be nil",
            )),
            None => {}
            Some(ru) => {
                let p = "spec.strategy.rollingUpdate";
                let unavailable = ru.get("maxUnavailable");
                let surge = ru.get("maxSurge");
                positive_int_or_percent(unavailable, &child(p, "maxUnavailable"), errs);
                positive_int_or_percent(surge, &child(p, "maxSurge"), errs);
                if int_or_percent_value(unavailable) == 0 && int_or_percent_value(surge) == 0 {
                    errs.push(FieldError::invalid(
                        child(p, "maxUnavailable"),
                        unavailable.cloned().unwrap_or(Value::Null),
                        "may not be 0 when `maxSurge` is 0",
                    ));
                }
                not_more_than_100_percent(unavailable, &child(p, "maxUnavailable"), errs);
            }
        },
        _ => errs.push(FieldError::not_supported(
            strategy_path,
            Value::Object(strategy.cloned().unwrap_or_default()),
            &["Recreate", "RollingUpdate"],
        )),
    }
    nonnegative(Some(spec), "minReadySeconds", "spec.minReadySeconds", errs);
    nonnegative(
        Some(spec),
        "revisionHistoryLimit",
        "spec.revisionHistoryLimit",
        errs,
    );
    if let Some(deadline) = opt_int(
        Some(spec),
        "progressDeadlineSeconds",
        "spec.progressDeadlineSeconds",
        errs,
    ) {
        if deadline < 0 {
            errs.push(FieldError::invalid(
                "spec.progressDeadlineSeconds",
                json!(deadline),
                NEGATIVE,
            ));
        }
        let min_ready = spec
            .get("minReadySeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if deadline <= min_ready {
            errs.push(FieldError::invalid(
                "spec.progressDeadlineSeconds",
                json!(deadline),
                "must be greater than minReadySeconds",
            ));
        }
    }
}

/// `ValidatePodTemplateSpecForReplicaSet`, shared by Deployments and ReplicaSets.
fn replica_set_template(spec: &Map<String, Value>, sel: &Selector, errs: &mut Errs) {
    let empty = Map::new();
    let Some(template) = template_of(spec, &empty, errs) else {
        return;
    };
    check_selector_matches(template, sel, errs);
    pod_template_spec(template, "spec.template", errs);
    let tspec = template.get("spec").and_then(Value::as_object);
    let restart = tspec
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if restart != "Always" {
        errs.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            json!(restart),
            &["Always"],
        ));
    }
    if tspec.is_some_and(|s| !absent(s.get("activeDeadlineSeconds"))) {
        errs.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in ReplicaSet is not Supported",
        ));
    }
}

fn template_of<'a>(
    spec: &'a Map<String, Value>,
    empty: &'a Map<String, Value>,
    errs: &mut Errs,
) -> Option<&'a Map<String, Value>> {
    match spec.get("template") {
        None | Some(Value::Null) => Some(empty),
        Some(Value::Object(t)) => Some(t),
        Some(other) => {
            wrong_type(errs, "spec.template", other, "object");
            None
        }
    }
}

fn check_selector_matches(template: &Map<String, Value>, sel: &Selector, errs: &mut Errs) {
    if matches!(sel, Selector::Everything | Selector::Invalid) {
        return;
    }
    let labels = template.get("metadata").and_then(|m| m.get("labels"));
    if !selector_matches(sel, labels.and_then(Value::as_object)) {
        errs.push(FieldError::invalid(
            "spec.template.metadata.labels",
            labels.cloned().unwrap_or(Value::Null),
            "`selector` does not match template `labels`",
        ));
    }
}

fn daemon_set(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    let selector = spec.get("selector");
    validate_label_selector(selector, "spec.selector", errs);
    let empty_template = Map::new();
    let Some(template) = template_of(spec, &empty_template, errs) else {
        return;
    };
    let sel = parse_selector(selector);
    if !matches!(sel, Selector::Invalid) {
        let labels = template.get("metadata").and_then(|m| m.get("labels"));
        if !selector_matches(&sel, labels.and_then(Value::as_object)) {
            errs.push(FieldError::invalid(
                "spec.template.metadata.labels",
                labels.cloned().unwrap_or(Value::Null),
                "`selector` does not match template `labels`",
            ));
        }
    }
    if selector_is_empty(selector) {
        errs.push(FieldError::invalid(
            "spec.selector",
            selector.cloned().unwrap_or(Value::Null),
            "empty selector is invalid for daemonset",
        ));
    }
    pod_template_spec(template, "spec.template", errs);
    let tspec = template.get("spec").and_then(Value::as_object);
    let restart = tspec
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if restart != "Always" {
        errs.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            json!(restart),
            &["Always"],
        ));
    }
    if let Some(ads) = tspec
        .and_then(|s| s.get("activeDeadlineSeconds"))
        .filter(|v| !v.is_null())
    {
        errs.push(FieldError::invalid(
            "spec.template.spec.activeDeadlineSeconds",
            ads.clone(),
            "activeDeadlineSeconds must be nil for daemonset",
        ));
    }
    nonnegative(Some(spec), "minReadySeconds", "spec.minReadySeconds", errs);
    nonnegative(
        Some(spec),
        "templateGeneration",
        "spec.templateGeneration",
        errs,
    );
    let p = "spec.updateStrategy";
    let strategy = opt_obj(Some(spec), "updateStrategy", p, errs);
    match opt_str(strategy, "type", "spec.updateStrategy.type", errs) {
        "OnDelete" => {}
        "RollingUpdate" => {
            let ru_path = "spec.updateStrategy.rollingUpdate";
            match opt_obj(strategy, "rollingUpdate", ru_path, errs) {
                None => errs.push(FieldError::required(ru_path, "")),
                Some(ru) => {
                    let unavailable = ru.get("maxUnavailable");
                    let surge = ru.get("maxSurge");
                    let (up, sp) = (child(ru_path, "maxUnavailable"), child(ru_path, "maxSurge"));
                    positive_int_or_percent(unavailable, &up, errs);
                    positive_int_or_percent(surge, &sp, errs);
                    not_more_than_100_percent(unavailable, &up, errs);
                    not_more_than_100_percent(surge, &sp, errs);
                    let has_unavailable = int_or_percent_value(unavailable) != 0;
                    let has_surge = int_or_percent_value(surge) != 0;
                    if has_unavailable && has_surge {
                        errs.push(FieldError::invalid(
                            sp,
                            surge.cloned().unwrap_or(Value::Null),
                            "may not be set when maxUnavailable is non-zero",
                        ));
                    } else if !has_unavailable && !has_surge {
                        errs.push(FieldError::required(up, "cannot be 0 when maxSurge is 0"));
                    }
                }
            }
        }
        _ => errs.push(FieldError::not_supported(
            p,
            Value::Object(strategy.cloned().unwrap_or_default()),
            &["RollingUpdate", "OnDelete"],
        )),
    }
    nonnegative(
        Some(spec),
        "revisionHistoryLimit",
        "spec.revisionHistoryLimit",
        errs,
    );
}

fn stateful_set(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    enum_str(
        opt_str(
            Some(spec),
            "podManagementPolicy",
            "spec.podManagementPolicy",
            errs,
        ),
        "spec.podManagementPolicy",
        &["OrderedReady", "Parallel"],
        true,
        errs,
    );
    let strategy = opt_obj(Some(spec), "updateStrategy", "spec.updateStrategy", errs);
    match opt_str(strategy, "type", "spec.updateStrategy.type", errs) {
        "" => errs.push(FieldError::required("spec.updateStrategy", "")),
        "OnDelete" | "RollingUpdate" => {}
        other => errs.push(FieldError::not_supported(
            "spec.updateStrategy",
            json!(other),
            &["OnDelete", "RollingUpdate"],
        )),
    }
    nonnegative(Some(spec), "replicas", "spec.replicas", errs);
    nonnegative(Some(spec), "minReadySeconds", "spec.minReadySeconds", errs);
    let selector = spec.get("selector");
    if absent(selector) {
        errs.push(FieldError::required("spec.selector", ""));
    } else {
        validate_label_selector(selector, "spec.selector", errs);
        if selector_is_empty(selector) {
            errs.push(FieldError::invalid(
                "spec.selector",
                selector.cloned().unwrap_or(Value::Null),
                "empty selector is invalid for statefulset",
            ));
        }
    }
    let empty_template = Map::new();
    let Some(template) = template_of(spec, &empty_template, errs) else {
        return;
    };
    match parse_selector(selector) {
        Selector::Invalid => errs.push(FieldError::invalid(
            "spec.selector",
            selector.cloned().unwrap_or(Value::Null),
            "invalid label selector",
        )),
        sel => check_selector_matches(template, &sel, errs),
    }
    pod_template_spec(template, "spec.template", errs);
    let restart = template
        .get("spec")
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if restart != "Always" {
        errs.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            json!(restart),
            &["Always"],
        ));
    }
}

fn replica_set(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    nonnegative(Some(spec), "replicas", "spec.replicas", errs);
    nonnegative(Some(spec), "minReadySeconds", "spec.minReadySeconds", errs);
    let selector = spec.get("selector");
    if absent(selector) {
        errs.push(FieldError::required("spec.selector", ""));
    } else {
        validate_label_selector(selector, "spec.selector", errs);
        if selector_is_empty(selector) {
            errs.push(FieldError::invalid(
                "spec.selector",
                selector.cloned().unwrap_or(Value::Null),
                "empty selector is invalid for deployment",
            ));
        }
    }
    match parse_selector(selector) {
        Selector::Invalid => errs.push(FieldError::invalid(
            "spec.selector",
            selector.cloned().unwrap_or(Value::Null),
            "invalid label selector",
        )),
        sel => replica_set_template(spec, &sel, errs),
    }
}

enum IntOrString<'a> {
    Int(i64),
    Str(&'a str),
}

fn int_or_string(v: Option<&Value>) -> Option<IntOrString<'_>> {
    match v {
        Some(Value::Number(n)) => n.as_i64().map(IntOrString::Int),
        Some(Value::String(s)) => Some(IntOrString::Str(s)),
        _ => None,
    }
}

fn percent(s: &str) -> Option<i64> {
    let digits = s.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `ValidatePositiveIntOrPercent`.
fn positive_int_or_percent(v: Option<&Value>, path: &str, errs: &mut Errs) {
    match (v, int_or_string(v)) {
        (_, Some(IntOrString::Str(s))) => {
            if percent(s).is_none() {
                errs.push(FieldError::invalid(
                    path,
                    json!(s),
                    regex_error(
                        "a valid percent string must be a numeric string followed by an ending '%'",
                        "[0-9]+%",
                        &["1%", "93%"],
                    ),
                ));
            }
        }
        (_, Some(IntOrString::Int(n))) => {
            if n < 0 {
                errs.push(FieldError::invalid(path, json!(n), NEGATIVE));
            }
        }
        (None | Some(Value::Null), None) => {}
        (Some(other), None) => wrong_type(errs, path, other, "integer or string"),
    }
}

fn int_or_percent_value(v: Option<&Value>) -> i64 {
    match int_or_string(v) {
        Some(IntOrString::Int(n)) => n,
        Some(IntOrString::Str(s)) => percent(s).or_else(|| s.parse().ok()).unwrap_or(0),
        None => 0,
    }
}

fn not_more_than_100_percent(v: Option<&Value>, path: &str, errs: &mut Errs) {
    if let Some(IntOrString::Str(s)) = int_or_string(v)
        && percent(s).is_some_and(|p| p > 100)
    {
        errs.push(FieldError::invalid(
            path,
            json!(s),
            "must not be greater than 100%",
        ));
    }
}

// --- pods ------------------------------------------------------------------------------------

/// `ValidatePodTemplateSpec`; note the real server reports template labels at `<path>.labels`.
fn pod_template_spec(template: &Map<String, Value>, path: &str, errs: &mut Errs) {
    let meta = opt_obj(Some(template), "metadata", &child(path, "metadata"), errs);
    validate_labels(
        meta.and_then(|m| m.get("labels")),
        &child(path, "labels"),
        errs,
    );
    validate_annotations(
        meta.and_then(|m| m.get("annotations")),
        &child(path, "annotations"),
        errs,
    );
    let spec_path = child(path, "spec");
    let spec = opt_obj(Some(template), "spec", &spec_path, errs);
    if template
        .get("spec")
        .is_some_and(|s| !s.is_null() && !s.is_object())
    {
        return;
    }
    let empty = Map::new();
    pod_spec(spec.unwrap_or(&empty), &spec_path, errs);
    if spec
        .and_then(|s| s.get("ephemeralContainers"))
        .is_some_and(|e| e.as_array().is_some_and(|a| !a.is_empty()))
    {
        errs.push(FieldError::forbidden(
            child(&spec_path, "ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
}

/// `ValidatePodSpec`, the parts operators meet.
fn pod_spec(spec: &Map<String, Value>, path: &str, errs: &mut Errs) {
    let volumes = pod_volumes(spec, path, errs);
    let containers_path = child(path, "containers");
    let containers = opt_arr(Some(spec), "containers", &containers_path, errs);
    if spec
        .get("containers")
        .is_none_or(|c| c.is_null() || c.as_array().is_some_and(Vec::is_empty))
    {
        errs.push(FieldError::required(&containers_path, ""));
    }
    let mut names = BTreeSet::new();
    containers_of(
        containers,
        &containers_path,
        &volumes,
        &mut names,
        false,
        errs,
    );
    let init_path = child(path, "initContainers");
    let init = opt_arr(Some(spec), "initContainers", &init_path, errs);
    containers_of(init, &init_path, &volumes, &mut names, true, errs);

    let restart = opt_str(
        Some(spec),
        "restartPolicy",
        &child(path, "restartPolicy"),
        errs,
    );
    enum_str(
        restart,
        &child(path, "restartPolicy"),
        &["Always", "OnFailure", "Never"],
        true,
        errs,
    );
    let dns = opt_str(Some(spec), "dnsPolicy", &child(path, "dnsPolicy"), errs);
    enum_str(
        dns,
        &child(path, "dnsPolicy"),
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        true,
        errs,
    );
    for k in ["serviceAccountName", "priorityClassName"] {
        let p = child(path, k);
        let v = opt_str(Some(spec), k, &p, errs);
        if !v.is_empty() {
            for m in dns1123_subdomain_errors(v) {
                errs.push(FieldError::invalid(&p, json!(v), m));
            }
        }
    }
    for k in ["hostname", "subdomain"] {
        let p = child(path, k);
        let v = opt_str(Some(spec), k, &p, errs);
        if !v.is_empty() {
            for m in dns1123_label_errors(v) {
                errs.push(FieldError::invalid(&p, json!(v), m));
            }
        }
    }
    validate_labels(spec.get("nodeSelector"), &child(path, "nodeSelector"), errs);
    if let Some(ads) = opt_int(
        Some(spec),
        "activeDeadlineSeconds",
        &child(path, "activeDeadlineSeconds"),
        errs,
    ) && !(1..=i64::from(i32::MAX)).contains(&ads)
    {
        errs.push(FieldError::invalid(
            child(path, "activeDeadlineSeconds"),
            json!(ads),
            format!("must be between 1 and {}, inclusive", i32::MAX),
        ));
    }
    let tol_path = child(path, "tolerations");
    let tolerations = opt_arr(Some(spec), "tolerations", &tol_path, errs);
    for (i, t) in obj_items(tolerations, &tol_path, errs) {
        let p = index(&tol_path, i);
        let op = opt_str(Some(t), "operator", &child(&p, "operator"), errs);
        let k = opt_str(Some(t), "key", &child(&p, "key"), errs);
        let value = opt_str(Some(t), "value", &child(&p, "value"), errs);
        if !k.is_empty() {
            for m in qualified_name_errors(k) {
                errs.push(FieldError::invalid(child(&p, "key"), json!(k), m));
            }
        }
        match op {
            "" | "Equal" => {
                if k.is_empty() {
                    errs.push(FieldError::invalid(
                        child(&p, "operator"),
                        json!(op),
                        "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
                    ));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(FieldError::invalid(
                        child(&p, "operator"),
                        json!(t),
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                child(&p, "operator"),
                json!(other),
                &["Equal", "Exists"],
            )),
        }
        let effect = opt_str(Some(t), "effect", &child(&p, "effect"), errs);
        if !effect.is_empty() {
            enum_str(
                effect,
                &child(&p, "effect"),
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
                false,
                errs,
            );
        }
    }
}

fn pod_volumes(spec: &Map<String, Value>, path: &str, errs: &mut Errs) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let vols_path = child(path, "volumes");
    let volumes = opt_arr(Some(spec), "volumes", &vols_path, errs);
    for (i, v) in obj_items(volumes, &vols_path, errs) {
        let p = index(&vols_path, i);
        let name_path = child(&p, "name");
        let name = opt_str(Some(v), "name", &name_path, errs);
        let sources: Vec<&str> = VOLUME_SOURCES
            .iter()
            .copied()
            .filter(|k| !absent(v.get(*k)))
            .collect();
        match sources.as_slice() {
            [] => errs.push(FieldError::required(&p, "must specify a volume type")),
            [_] => {}
            [_, second, ..] => {
                errs.push(FieldError::forbidden(
                    child(&p, second),
                    "may not specify more than 1 volume type",
                ));
            }
        }
        if name.is_empty() {
            errs.push(FieldError::required(&name_path, ""));
        } else {
            for m in dns1123_label_errors(name) {
                errs.push(FieldError::invalid(&name_path, json!(name), m));
            }
        }
        if !names.insert(name.to_string()) {
            errs.push(FieldError::duplicate(&name_path, json!(name)));
        }
        let required = [
            ("secret", "secretName"),
            ("configMap", "name"),
            ("persistentVolumeClaim", "claimName"),
            ("hostPath", "path"),
        ];
        for (source, field) in required {
            let sp = child(&p, source);
            if let Some(src) = opt_obj(Some(v), source, &sp, errs) {
                if opt_str(Some(src), field, &child(&sp, field), errs).is_empty() {
                    errs.push(FieldError::required(child(&sp, field), ""));
                }
                if let Some(mode) =
                    opt_int(Some(src), "defaultMode", &child(&sp, "defaultMode"), errs)
                    && !(0..=0o777).contains(&mode)
                {
                    errs.push(FieldError::invalid(
                        child(&sp, "defaultMode"),
                        json!(mode),
                        "must be a number between 0 and 0777 (octal), both inclusive",
                    ));
                }
            }
        }
        if let Some(hp) = v.get("hostPath").and_then(Value::as_object) {
            let t = opt_str(Some(hp), "type", &child(&p, "hostPath.type"), errs);
            let allowed = [
                "",
                "BlockDevice",
                "CharDevice",
                "Directory",
                "DirectoryOrCreate",
                "File",
                "FileOrCreate",
                "Socket",
            ];
            if !allowed.contains(&t) {
                errs.push(FieldError::not_supported(
                    child(&p, "hostPath.type"),
                    json!(t),
                    &allowed,
                ));
            }
        }
    }
    names
}

fn containers_of(
    list: Option<&Vec<Value>>,
    path: &str,
    volumes: &BTreeSet<String>,
    names: &mut BTreeSet<String>,
    init: bool,
    errs: &mut Errs,
) {
    for (i, c) in obj_items(list, path, errs) {
        let p = index(path, i);
        let name_path = child(&p, "name");
        let name = opt_str(Some(c), "name", &name_path, errs);
        if name.is_empty() {
            errs.push(FieldError::required(&name_path, ""));
        } else {
            for m in dns1123_label_errors(name) {
                errs.push(FieldError::invalid(&name_path, json!(name), m));
            }
        }
        if !name.is_empty() && !names.insert(name.to_string()) {
            errs.push(FieldError::duplicate(&name_path, json!(name)));
        }
        if opt_str(Some(c), "image", &child(&p, "image"), errs).is_empty() {
            errs.push(FieldError::required(child(&p, "image"), ""));
        }
        container_ports(c, &p, errs);
        container_env(c, &p, errs);
        volume_mounts(c, &p, volumes, errs);
        let pull = opt_str(
            Some(c),
            "imagePullPolicy",
            &child(&p, "imagePullPolicy"),
            errs,
        );
        enum_str(
            pull,
            &child(&p, "imagePullPolicy"),
            &["Always", "IfNotPresent", "Never"],
            true,
            errs,
        );
        let tmp = opt_str(
            Some(c),
            "terminationMessagePolicy",
            &child(&p, "terminationMessagePolicy"),
            errs,
        );
        enum_str(
            tmp,
            &child(&p, "terminationMessagePolicy"),
            &["File", "FallbackToLogsOnError"],
            true,
            errs,
        );
        for probe_name in ["livenessProbe", "readinessProbe", "startupProbe"] {
            let pp = child(&p, probe_name);
            if let Some(probe) = opt_obj(Some(c), probe_name, &pp, errs) {
                if init {
                    // Only restartable (sidecar) init containers may have probes.
                    if c.get("restartPolicy").and_then(Value::as_str) != Some("Always") {
                        errs.push(FieldError::forbidden(
                            &pp,
                            "may not be set for init containers without restartPolicy=Always",
                        ));
                    }
                }
                validate_probe(probe, &pp, errs);
                if probe_name != "readinessProbe"
                    && probe
                        .get("successThreshold")
                        .and_then(Value::as_i64)
                        .is_some_and(|n| n != 1)
                {
                    errs.push(FieldError::invalid(
                        child(&pp, "successThreshold"),
                        probe
                            .get("successThreshold")
                            .cloned()
                            .unwrap_or(Value::Null),
                        "must be 1",
                    ));
                }
            }
        }
        container_resources(c, &p, errs);
    }
}

fn container_ports(c: &Map<String, Value>, p: &str, errs: &mut Errs) {
    let ports_path = child(p, "ports");
    let ports = opt_arr(Some(c), "ports", &ports_path, errs);
    let mut names = BTreeSet::new();
    for (i, port) in obj_items(ports, &ports_path, errs) {
        let pp = index(&ports_path, i);
        let name = opt_str(Some(port), "name", &child(&pp, "name"), errs);
        if !name.is_empty() {
            let msgs = port_name_errors(name);
            if !msgs.is_empty() {
                for m in msgs {
                    errs.push(FieldError::invalid(child(&pp, "name"), json!(name), m));
                }
            } else if !names.insert(name.to_string()) {
                errs.push(FieldError::duplicate(child(&pp, "name"), json!(name)));
            }
        }
        match opt_int(
            Some(port),
            "containerPort",
            &child(&pp, "containerPort"),
            errs,
        ) {
            None | Some(0)
                if port
                    .get("containerPort")
                    .is_none_or(|v| v.is_null() || v.as_i64() == Some(0)) =>
            {
                errs.push(FieldError::required(child(&pp, "containerPort"), ""));
            }
            Some(n) if !(1..=65535).contains(&n) => {
                errs.push(FieldError::invalid(
                    child(&pp, "containerPort"),
                    json!(n),
                    port_range_error(),
                ));
            }
            _ => {}
        }
        if let Some(n) = opt_int(Some(port), "hostPort", &child(&pp, "hostPort"), errs)
            && n != 0
            && !(1..=65535).contains(&n)
        {
            errs.push(FieldError::invalid(
                child(&pp, "hostPort"),
                json!(n),
                port_range_error(),
            ));
        }
        let proto = opt_str(Some(port), "protocol", &child(&pp, "protocol"), errs);
        enum_str(
            proto,
            &child(&pp, "protocol"),
            &["SCTP", "TCP", "UDP"],
            true,
            errs,
        );
    }
}

fn container_env(c: &Map<String, Value>, p: &str, errs: &mut Errs) {
    let env_path = child(p, "env");
    let env = opt_arr(Some(c), "env", &env_path, errs);
    for (i, e) in obj_items(env, &env_path, errs) {
        let ep = index(&env_path, i);
        let name = opt_str(Some(e), "name", &child(&ep, "name"), errs);
        if name.is_empty() {
            errs.push(FieldError::required(child(&ep, "name"), ""));
        } else if !name.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'=') {
            // RelaxedEnvironmentVariableValidation is on by default in v1.33.
            errs.push(FieldError::invalid(
                child(&ep, "name"),
                json!(name),
                "a valid environment variable name must consist only of printable ASCII characters other than '='",
            ));
        }
        let from_path = child(&ep, "valueFrom");
        if let Some(from) = opt_obj(Some(e), "valueFrom", &from_path, errs) {
            let sources = [
                "fieldRef",
                "resourceFieldRef",
                "configMapKeyRef",
                "secretKeyRef",
            ];
            let n = sources.iter().filter(|k| !absent(from.get(**k))).count();
            if n == 0 {
                errs.push(FieldError::invalid(
                    &from_path,
                    json!(""),
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
                ));
            } else if n > 1 {
                errs.push(FieldError::invalid(
                    &from_path,
                    json!(""),
                    "may not have more than one field specified at a time",
                ));
            }
            if !opt_str(Some(e), "value", &child(&ep, "value"), errs).is_empty() {
                errs.push(FieldError::invalid(
                    &from_path,
                    json!(""),
                    "may not be specified when `value` is not empty",
                ));
            }
            for r in ["configMapKeyRef", "secretKeyRef"] {
                let rp = child(&from_path, r);
                if let Some(sel) = opt_obj(Some(from), r, &rp, errs) {
                    if opt_str(Some(sel), "name", &child(&rp, "name"), errs).is_empty() {
                        errs.push(FieldError::required(child(&rp, "name"), ""));
                    }
                    let k = opt_str(Some(sel), "key", &child(&rp, "key"), errs);
                    if k.is_empty() {
                        errs.push(FieldError::required(child(&rp, "key"), ""));
                    } else {
                        for m in config_key_errors(k) {
                            errs.push(FieldError::invalid(child(&rp, "key"), json!(k), m));
                        }
                    }
                }
            }
            let fp = child(&from_path, "fieldRef");
            if let Some(f) = opt_obj(Some(from), "fieldRef", &fp, errs)
                && opt_str(Some(f), "fieldPath", &child(&fp, "fieldPath"), errs).is_empty()
            {
                errs.push(FieldError::required(child(&fp, "fieldPath"), ""));
            }
        }
    }
}

fn volume_mounts(c: &Map<String, Value>, p: &str, volumes: &BTreeSet<String>, errs: &mut Errs) {
    let mounts_path = child(p, "volumeMounts");
    let mounts = opt_arr(Some(c), "volumeMounts", &mounts_path, errs);
    let mut mount_points = BTreeSet::new();
    for (i, m) in obj_items(mounts, &mounts_path, errs) {
        let mp = index(&mounts_path, i);
        let name = opt_str(Some(m), "name", &child(&mp, "name"), errs);
        if name.is_empty() {
            errs.push(FieldError::required(child(&mp, "name"), ""));
        }
        if !volumes.contains(name) {
            errs.push(FieldError {
                kind: crate::field_error::FieldErrorKind::NotFound,
                field: child(&mp, "name"),
                value: Some(json!(name)),
                detail: String::new(),
            });
        }
        let mount_path = opt_str(Some(m), "mountPath", &child(&mp, "mountPath"), errs);
        if mount_path.is_empty() {
            errs.push(FieldError::required(child(&mp, "mountPath"), ""));
        }
        if !mount_points.insert(mount_path.to_string()) {
            errs.push(FieldError::invalid(
                child(&mp, "mountPath"),
                json!(mount_path),
                "must be unique",
            ));
        }
    }
}

fn validate_probe(probe: &Map<String, Value>, path: &str, errs: &mut Errs) {
    let handlers: Vec<&str> = ["exec", "httpGet", "tcpSocket", "grpc"]
        .into_iter()
        .filter(|k| !absent(probe.get(*k)))
        .collect();
    match handlers.as_slice() {
        [] => errs.push(FieldError::required(path, "must specify a handler type")),
        [_] => {}
        [_, second, ..] => errs.push(FieldError::forbidden(
            child(path, second),
            "may not specify more than 1 handler type",
        )),
    }
    for k in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        nonnegative(Some(probe), k, &child(path, k), errs);
    }
    let hp = child(path, "httpGet");
    if let Some(h) = opt_obj(Some(probe), "httpGet", &hp, errs) {
        if opt_str(Some(h), "path", &child(&hp, "path"), errs).is_empty() {
            errs.push(FieldError::required(child(&hp, "path"), ""));
        }
        port_num_or_name(h.get("port"), &child(&hp, "port"), errs);
        let scheme = opt_str(Some(h), "scheme", &child(&hp, "scheme"), errs);
        enum_str(
            scheme,
            &child(&hp, "scheme"),
            &["HTTP", "HTTPS"],
            false,
            errs,
        );
    }
    let tp = child(path, "tcpSocket");
    if let Some(t) = opt_obj(Some(probe), "tcpSocket", &tp, errs) {
        port_num_or_name(t.get("port"), &child(&tp, "port"), errs);
    }
    let gp = child(path, "grpc");
    if let Some(g) = opt_obj(Some(probe), "grpc", &gp, errs) {
        let port = opt_int(Some(g), "port", &child(&gp, "port"), errs).unwrap_or(0);
        if !(1..=65535).contains(&port) {
            errs.push(FieldError::invalid(
                child(&gp, "port"),
                json!(port),
                port_range_error(),
            ));
        }
    }
}

/// `ValidatePortNumOrName`.
fn port_num_or_name(v: Option<&Value>, path: &str, errs: &mut Errs) {
    match v {
        Some(Value::Number(n)) => {
            let n = n.as_i64().unwrap_or(0);
            if !(1..=65535).contains(&n) {
                errs.push(FieldError::invalid(path, json!(n), port_range_error()));
            }
        }
        Some(Value::String(s)) => {
            for m in port_name_errors(s) {
                errs.push(FieldError::invalid(path, json!(s), m));
            }
        }
        None | Some(Value::Null) => {
            errs.push(FieldError::invalid(path, json!(0), port_range_error()))
        }
        Some(other) => wrong_type(errs, path, other, "integer or string"),
    }
}

fn container_resources(c: &Map<String, Value>, p: &str, errs: &mut Errs) {
    let rp = child(p, "resources");
    let Some(res) = opt_obj(Some(c), "resources", &rp, errs) else {
        return;
    };
    let limits = opt_obj(Some(res), "limits", &child(&rp, "limits"), errs);
    let requests = opt_obj(Some(res), "requests", &child(&rp, "requests"), errs);
    for (list, name) in [(limits, "limits"), (requests, "requests")] {
        for (k, v) in list.into_iter().flatten() {
            let qp = key(&child(&rp, name), k);
            match crate::defaults::quantity_milli(v) {
                None => errs.push(FieldError::invalid(
                    &qp,
                    v.clone(),
                    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                )),
                Some(q) if q < 0 => errs.push(FieldError::invalid(&qp, v.clone(), NEGATIVE)),
                Some(_) => {}
            }
        }
    }
    for (k, req) in requests.into_iter().flatten() {
        let limit = limits.and_then(|l| l.get(k));
        if let (Some(r), Some(l)) = (
            crate::defaults::quantity_milli(req),
            limit.and_then(crate::defaults::quantity_milli),
        ) && r > l
        {
            let show = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
            errs.push(FieldError::invalid(
                key(&child(&rp, "requests"), k),
                json!(show(req)),
                format!(
                    "must be less than or equal to {k} limit of {}",
                    limit.map(show).unwrap_or_default()
                ),
            ));
        }
    }
}

// --- core ------------------------------------------------------------------------------------

fn service(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    let service_type = opt_str(Some(spec), "type", "spec.type", errs);
    if service_type.is_empty() {
        errs.push(FieldError::required("spec.type", ""));
    } else if !["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"].contains(&service_type) {
        errs.push(FieldError::not_supported(
            "spec.type",
            json!(service_type),
            &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
        ));
    }
    let cluster_ip = opt_str(Some(spec), "clusterIP", "spec.clusterIP", errs);
    let headless = cluster_ip == "None";
    let ips = opt_arr(Some(spec), "clusterIPs", "spec.clusterIPs", errs);
    if service_type == "ExternalName" {
        let name = opt_str(Some(spec), "externalName", "spec.externalName", errs);
        if name.is_empty() {
            errs.push(FieldError::required("spec.externalName", ""));
        } else {
            let trimmed = name.strip_suffix('.').unwrap_or(name);
            for m in dns1123_subdomain_errors(trimmed) {
                errs.push(FieldError::invalid("spec.externalName", json!(name), m));
            }
        }
        if !cluster_ip.is_empty() || ips.is_some_and(|a| !a.is_empty()) {
            errs.push(FieldError::forbidden(
                "spec.clusterIPs",
                "may not be set for ExternalName services",
            ));
        }
    }
    for (i, ip) in str_items(ips, "spec.clusterIPs", errs) {
        if ip != "None" && ip.parse::<std::net::IpAddr>().is_err() {
            errs.push(FieldError::invalid(
                index("spec.clusterIPs", i),
                json!(ip),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
    }
    let ports = opt_arr(Some(spec), "ports", "spec.ports", errs);
    if ports.is_none_or(Vec::is_empty) && !headless && service_type != "ExternalName" {
        errs.push(FieldError::required("spec.ports", ""));
    }
    let require_name = ports.is_some_and(|p| p.len() > 1);
    let mut names = BTreeSet::new();
    let mut seen = Vec::new();
    for (i, port) in obj_items(ports, "spec.ports", errs) {
        let pp = index("spec.ports", i);
        let name = opt_str(Some(port), "name", &child(&pp, "name"), errs);
        if require_name && name.is_empty() {
            errs.push(FieldError::required(child(&pp, "name"), ""));
        } else if !name.is_empty() {
            for m in dns1123_label_errors(name) {
                errs.push(FieldError::invalid(child(&pp, "name"), json!(name), m));
            }
            if !names.insert(name.to_string()) {
                errs.push(FieldError::duplicate(child(&pp, "name"), json!(name)));
            }
        }
        let number = opt_int(Some(port), "port", &child(&pp, "port"), errs).unwrap_or(0);
        if !(1..=65535).contains(&number) {
            errs.push(FieldError::invalid(
                child(&pp, "port"),
                json!(number),
                port_range_error(),
            ));
        }
        let proto = opt_str(Some(port), "protocol", &child(&pp, "protocol"), errs);
        enum_str(
            proto,
            &child(&pp, "protocol"),
            &["SCTP", "TCP", "UDP"],
            true,
            errs,
        );
        if !absent(port.get("targetPort")) {
            port_num_or_name(port.get("targetPort"), &child(&pp, "targetPort"), errs);
        }
        if let Some(node_port) = opt_int(Some(port), "nodePort", &child(&pp, "nodePort"), errs)
            && node_port != 0
        {
            if service_type == "ClusterIP" {
                errs.push(FieldError::forbidden(
                    child(&pp, "nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            } else if !(30000..=32767).contains(&node_port) {
                errs.push(FieldError::invalid(
                    child(&pp, "nodePort"),
                    json!(node_port),
                    "provided port is not in the valid range. The range of valid ports is 30000-32767",
                ));
            }
        }
        let pair = (number, proto.to_string());
        if seen.contains(&pair) {
            errs.push(FieldError::duplicate(
                &pp,
                json!({"port": number, "protocol": proto}),
            ));
        }
        seen.push(pair);
    }
    validate_labels(spec.get("selector"), "spec.selector", errs);
    let affinity = opt_str(Some(spec), "sessionAffinity", "spec.sessionAffinity", errs);
    enum_str(
        affinity,
        "spec.sessionAffinity",
        &["ClientIP", "None"],
        true,
        errs,
    );
    let has_external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let accessible = matches!(service_type, "LoadBalancer" | "NodePort")
        || (service_type == "ClusterIP" && has_external_ips);
    let etp = opt_str(
        Some(spec),
        "externalTrafficPolicy",
        "spec.externalTrafficPolicy",
        errs,
    );
    if !accessible && !etp.is_empty() {
        errs.push(FieldError::invalid(
            "spec.externalTrafficPolicy",
            json!(etp),
            "may only be set for externally-accessible services",
        ));
    } else if accessible {
        enum_str(
            etp,
            "spec.externalTrafficPolicy",
            &["Cluster", "Local"],
            true,
            errs,
        );
    }
    let itp = opt_str(
        Some(spec),
        "internalTrafficPolicy",
        "spec.internalTrafficPolicy",
        errs,
    );
    let needs_itp = matches!(service_type, "ClusterIP" | "NodePort" | "LoadBalancer");
    enum_str(
        itp,
        "spec.internalTrafficPolicy",
        &["Cluster", "Local"],
        needs_itp,
        errs,
    );
    let policy = opt_str(Some(spec), "ipFamilyPolicy", "spec.ipFamilyPolicy", errs);
    enum_str(
        policy,
        "spec.ipFamilyPolicy",
        &["PreferDualStack", "RequireDualStack", "SingleStack"],
        false,
        errs,
    );
    let families = opt_arr(Some(spec), "ipFamilies", "spec.ipFamilies", errs);
    let mut seen_families = BTreeSet::new();
    for (i, f) in str_items(families, "spec.ipFamilies", errs) {
        let fp = index("spec.ipFamilies", i);
        if !["IPv4", "IPv6"].contains(&f) {
            errs.push(FieldError::not_supported(&fp, json!(f), &["IPv4", "IPv6"]));
        } else if !seen_families.insert(f) {
            errs.push(FieldError::duplicate(&fp, json!(f)));
        }
    }
}

fn config_map(root: &Map<String, Value>, errs: &mut Errs) {
    let data = opt_obj(Some(root), "data", "data", errs);
    let binary = opt_obj(Some(root), "binaryData", "binaryData", errs);
    let mut total = 0usize;
    for (k, v) in data.into_iter().flatten() {
        let path = key("data", k);
        for m in config_key_errors(k) {
            errs.push(FieldError::invalid(&path, json!(k), m));
        }
        if binary.is_some_and(|b| b.contains_key(k)) {
            errs.push(FieldError::invalid(
                &path,
                json!(k),
                "duplicate of key present in binaryData",
            ));
        }
        match v.as_str() {
            Some(s) => total += s.len(),
            None => wrong_type(errs, &path, v, "string"),
        }
    }
    for (k, v) in binary.into_iter().flatten() {
        let path = key("binaryData", k);
        for m in config_key_errors(k) {
            errs.push(FieldError::invalid(&path, json!(k), m));
        }
        total += decoded_len(v, &path, errs);
    }
    opt_bool(Some(root), "immutable", "immutable", errs);
    if total > MAX_SECRET_SIZE {
        errs.push(FieldError::too_long("", json!(""), MAX_SECRET_SIZE));
    }
}

/// The decoded length of a base64 `[]byte` field; malformed values are reported the way Go's
/// decoder words them (a real server answers 400 for these).
fn decoded_len(v: &Value, path: &str, errs: &mut Errs) -> usize {
    let Some(s) = v.as_str() else {
        wrong_type(errs, path, v, "string");
        return 0;
    };
    decode_base64(s, path, errs).map_or(0, |b| b.len())
}

fn decode_base64(s: &str, path: &str, errs: &mut Errs) -> Option<Vec<u8>> {
    // Go's decoder skips line breaks.
    let cleaned: String = s.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    match base64::engine::general_purpose::STANDARD.decode(cleaned.as_bytes()) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            let at = match e {
                base64::DecodeError::InvalidByte(i, _)
                | base64::DecodeError::InvalidLastSymbol(i, _) => i,
                _ => cleaned.len(),
            };
            errs.push(FieldError::invalid(
                path,
                json!("<secret contents redacted>"),
                format!("illegal base64 data at input byte {at}"),
            ));
            None
        }
    }
}

fn secret(root: &Map<String, Value>, errs: &mut Errs) {
    let data = opt_obj(Some(root), "data", "data", errs);
    let mut total = 0usize;
    let mut decoded: std::collections::BTreeMap<&str, Vec<u8>> = Default::default();
    for (k, v) in data.into_iter().flatten() {
        let path = key("data", k);
        for m in config_key_errors(k) {
            errs.push(FieldError::invalid(&path, json!(k), m));
        }
        if let Some(s) = v.as_str() {
            if let Some(bytes) = decode_base64(s, &path, errs) {
                total += bytes.len();
                decoded.insert(k, bytes);
            }
        } else {
            wrong_type(errs, &path, v, "string");
        }
    }
    // stringData only survives when defaulting could not fold it.
    for (k, v) in opt_obj(Some(root), "stringData", "stringData", errs)
        .into_iter()
        .flatten()
    {
        let path = key("stringData", k);
        for m in config_key_errors(k) {
            errs.push(FieldError::invalid(&path, json!(k), m));
        }
        match v.as_str() {
            Some(s) => total += s.len(),
            None => wrong_type(errs, &path, v, "string"),
        }
    }
    if total > MAX_SECRET_SIZE {
        errs.push(FieldError::too_long("data", json!(""), MAX_SECRET_SIZE));
    }
    opt_bool(Some(root), "immutable", "immutable", errs);
    let has = |k: &str| decoded.contains_key(k) || data.is_some_and(|d| d.contains_key(k));
    match opt_str(Some(root), "type", "type", errs) {
        "kubernetes.io/service-account-token" => {
            let annotated = root
                .get("metadata")
                .and_then(|m| m.get("annotations"))
                .and_then(|a| a.get("kubernetes.io/service-account.name"))
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty());
            if !annotated {
                errs.push(FieldError::required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson" => {
            let k = if opt_str(Some(root), "type", "type", &mut Vec::new())
                == "kubernetes.io/dockercfg"
            {
                ".dockercfg"
            } else {
                ".dockerconfigjson"
            };
            match decoded.get(k) {
                None if !has(k) => errs.push(FieldError::required(key("data", k), "")),
                None => {}
                Some(bytes) => {
                    if let Err(e) = serde_json::from_slice::<Map<String, Value>>(bytes) {
                        errs.push(FieldError::invalid(
                            key("data", k),
                            json!("<secret contents redacted>"),
                            e.to_string(),
                        ));
                    }
                }
            }
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errs.push(FieldError::required("data[username]", ""));
            errs.push(FieldError::required("data[password]", ""));
        }
        "kubernetes.io/ssh-auth" if decoded.get("ssh-privatekey").is_none_or(Vec::is_empty) => {
            errs.push(FieldError::required("data[ssh-privatekey]", ""));
        }
        "kubernetes.io/tls" => {
            for k in ["tls.crt", "tls.key"] {
                if !has(k) {
                    errs.push(FieldError::required(key("data", k), ""));
                }
            }
        }
        _ => {}
    }
}

fn event(root: &Map<String, Value>, errs: &mut Errs) {
    let namespace = root
        .get("metadata")
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let involved = opt_obj(Some(root), "involvedObject", "involvedObject", errs);
    let involved_ns = opt_str(involved, "namespace", "involvedObject.namespace", errs);
    let event_time_set = !absent(root.get("eventTime"));
    let mismatch = if !event_time_set {
        if involved_ns.is_empty() {
            !namespace.is_empty() && namespace != "default"
        } else {
            namespace != involved_ns
        }
    } else {
        involved_ns.is_empty() && namespace != "default" && namespace != "kube-system"
    };
    if mismatch {
        errs.push(FieldError::invalid(
            "involvedObject.namespace",
            json!(involved_ns),
            "does not match event.namespace",
        ));
    }
    if event_time_set {
        let controller = opt_str(Some(root), "reportingComponent", "reportingComponent", errs);
        if controller.is_empty() {
            errs.push(FieldError::required("reportingComponent", ""));
        }
        for m in qualified_name_errors(controller) {
            errs.push(FieldError::invalid(
                "reportingComponent",
                json!(controller),
                m,
            ));
        }
        for (field, limit) in [("reportingInstance", 128), ("action", 128), ("reason", 128)] {
            let v = opt_str(Some(root), field, field, errs);
            if v.is_empty() {
                errs.push(FieldError::required(field, ""));
            }
            if v.len() > limit {
                errs.push(FieldError::invalid(
                    field,
                    json!(""),
                    format!("can have at most {limit} characters"),
                ));
            }
        }
        if opt_str(Some(root), "message", "message", errs).len() > 1024 {
            errs.push(FieldError::invalid(
                "message",
                json!(""),
                "can have at most 1024 characters",
            ));
        }
    }
    for m in dns1123_subdomain_errors(namespace) {
        errs.push(FieldError::invalid("namespace", json!(namespace), m));
    }
}

// --- other groups ----------------------------------------------------------------------------

fn storage_class(root: &Map<String, Value>, errs: &mut Errs) {
    let provisioner = opt_str(Some(root), "provisioner", "provisioner", errs);
    if provisioner.is_empty() {
        errs.push(FieldError::required("provisioner", ""));
    } else {
        for m in qualified_name_errors(&provisioner.to_lowercase()) {
            errs.push(FieldError::invalid(
                "provisioner",
                json!(provisioner.to_lowercase()),
                m,
            ));
        }
    }
    if let Some(params) = opt_obj(Some(root), "parameters", "parameters", errs) {
        if params.len() > 512 {
            errs.push(FieldError::too_long("parameters", json!(""), 512));
        } else {
            let mut total = 0usize;
            for (k, v) in params {
                if k.is_empty() {
                    errs.push(FieldError::invalid(
                        "parameters",
                        json!(k),
                        "field can not be empty.",
                    ));
                }
                match v.as_str() {
                    Some(s) => total += k.len() + s.len(),
                    None => wrong_type(errs, &key("parameters", k), v, "string"),
                }
            }
            if total > 256 * 1024 {
                errs.push(FieldError::too_long("parameters", json!(""), 256 * 1024));
            }
        }
    }
    let reclaim = opt_str(Some(root), "reclaimPolicy", "reclaimPolicy", errs);
    enum_str(reclaim, "reclaimPolicy", &["Delete", "Retain"], false, errs);
    let binding = opt_str(Some(root), "volumeBindingMode", "volumeBindingMode", errs);
    if absent(root.get("volumeBindingMode")) {
        errs.push(FieldError::required("volumeBindingMode", ""));
    } else if !["Immediate", "WaitForFirstConsumer"].contains(&binding) {
        errs.push(FieldError::not_supported(
            "volumeBindingMode",
            json!(binding),
            &["Immediate", "WaitForFirstConsumer"],
        ));
    }
    opt_bool(
        Some(root),
        "allowVolumeExpansion",
        "allowVolumeExpansion",
        errs,
    );
}

fn csi_driver(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    // The real server spells this path `attachedRequired`.
    for (field, path) in [
        ("attachRequired", "spec.attachedRequired"),
        ("podInfoOnMount", "spec.podInfoOnMount"),
        ("storageCapacity", "spec.storageCapacity"),
        ("seLinuxMount", "spec.seLinuxMount"),
    ] {
        if opt_bool(Some(spec), field, path, errs).is_none() && absent(spec.get(field)) {
            errs.push(FieldError::required(path, ""));
        }
    }
    opt_bool(
        Some(spec),
        "requiresRepublish",
        "spec.requiresRepublish",
        errs,
    );
    if !absent(spec.get("fsGroupPolicy")) {
        let policy = opt_str(Some(spec), "fsGroupPolicy", "spec.fsGroupPolicy", errs);
        if !["File", "None", "ReadWriteOnceWithFSType"].contains(&policy) {
            errs.push(FieldError::not_supported(
                "spec.fsGroupPolicy",
                json!(policy),
                &["File", "None", "ReadWriteOnceWithFSType"],
            ));
        }
    }
    let modes = opt_arr(
        Some(spec),
        "volumeLifecycleModes",
        "spec.volumeLifecycleModes",
        errs,
    );
    for (_, mode) in str_items(modes, "spec.volumeLifecycleModes", errs) {
        if !["Persistent", "Ephemeral"].contains(&mode) {
            errs.push(FieldError::not_supported(
                "spec.volumeLifecycleModes",
                json!(mode),
                &["Persistent", "Ephemeral"],
            ));
        }
    }
    let tokens = opt_arr(Some(spec), "tokenRequests", "spec.tokenRequests", errs);
    let mut audiences = BTreeSet::new();
    for (i, t) in obj_items(tokens, "spec.tokenRequests", errs) {
        let p = index("spec.tokenRequests", i);
        let audience = opt_str(Some(t), "audience", &child(&p, "audience"), errs);
        if !audiences.insert(audience) {
            errs.push(FieldError::duplicate(
                child(&p, "audience"),
                json!(audience),
            ));
            continue;
        }
        if let Some(exp) = opt_int(
            Some(t),
            "expirationSeconds",
            &child(&p, "expirationSeconds"),
            errs,
        ) {
            if exp < 600 {
                errs.push(FieldError::invalid(
                    child(&p, "expirationSeconds"),
                    json!(exp),
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if exp > 1 << 32 {
                errs.push(FieldError::invalid(
                    child(&p, "expirationSeconds"),
                    json!(exp),
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
        }
    }
    let period_path = "spec.nodeAllocatableUpdatePeriodSeconds";
    if let Some(period) = opt_int(
        Some(spec),
        "nodeAllocatableUpdatePeriodSeconds",
        period_path,
        errs,
    ) && period < 10
    {
        errs.push(FieldError::invalid(
            period_path,
            json!(period),
            "must be greater than or equal to 10 seconds",
        ));
    }
}

fn pod_disruption_budget(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    let min = spec.get("minAvailable").filter(|v| !v.is_null());
    let max = spec.get("maxUnavailable").filter(|v| !v.is_null());
    if min.is_some() && max.is_some() {
        errs.push(FieldError::invalid(
            "spec",
            Value::Object(spec.clone()),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (v, path) in [(min, "spec.minAvailable"), (max, "spec.maxUnavailable")] {
        if v.is_some() {
            positive_int_or_percent(v, path, errs);
            not_more_than_100_percent(v, path, errs);
        }
    }
    validate_label_selector(spec.get("selector"), "spec.selector", errs);
    let policy_path = "spec.unhealthyPodEvictionPolicy";
    if !absent(spec.get("unhealthyPodEvictionPolicy")) {
        let policy = opt_str(Some(spec), "unhealthyPodEvictionPolicy", policy_path, errs);
        if !["AlwaysAllow", "IfHealthyBudget"].contains(&policy) {
            errs.push(FieldError::not_supported(
                policy_path,
                json!(policy),
                &["AlwaysAllow", "IfHealthyBudget"],
            ));
        }
    }
}

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn policy_rules(root: &Map<String, Value>, namespaced: bool, errs: &mut Errs) {
    let rules = opt_arr(Some(root), "rules", "rules", errs);
    for (i, rule) in obj_items(rules, "rules", errs) {
        let p = index("rules", i);
        let count = |k: &str, errs: &mut Errs| {
            str_items(
                opt_arr(Some(rule), k, &child(&p, k), errs),
                &child(&p, k),
                errs,
            )
            .len()
        };
        if count("verbs", errs) == 0 {
            errs.push(FieldError::required(
                child(&p, "verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = count("nonResourceURLs", errs);
        let (groups, resources, names) = (
            count("apiGroups", errs),
            count("resources", errs),
            count("resourceNames", errs),
        );
        if urls > 0 {
            let value = rule.get("nonResourceURLs").cloned().unwrap_or(Value::Null);
            if namespaced {
                errs.push(FieldError::invalid(
                    child(&p, "nonResourceURLs"),
                    value.clone(),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if groups > 0 || resources > 0 || names > 0 {
                errs.push(FieldError::invalid(
                    child(&p, "nonResourceURLs"),
                    value,
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if groups == 0 {
            errs.push(FieldError::required(
                child(&p, "apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if resources == 0 {
            errs.push(FieldError::required(
                child(&p, "resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
}

fn role_binding(root: &Map<String, Value>, namespaced: bool, errs: &mut Errs) {
    let role_ref = opt_obj(Some(root), "roleRef", "roleRef", errs);
    let group = opt_str(role_ref, "apiGroup", "roleRef.apiGroup", errs);
    if group != RBAC_GROUP {
        errs.push(FieldError::not_supported(
            "roleRef.apiGroup",
            json!(group),
            &[RBAC_GROUP],
        ));
    }
    let kind = opt_str(role_ref, "kind", "roleRef.kind", errs);
    if namespaced {
        if !["Role", "ClusterRole"].contains(&kind) {
            errs.push(FieldError::not_supported(
                "roleRef.kind",
                json!(kind),
                &["Role", "ClusterRole"],
            ));
        }
    } else if kind != "ClusterRole" {
        errs.push(FieldError::not_supported(
            "roleRef.kind",
            json!(kind),
            &["ClusterRole"],
        ));
    }
    let name = opt_str(role_ref, "name", "roleRef.name", errs);
    if name.is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    } else {
        for m in path_segment_errors(name) {
            errs.push(FieldError::invalid("roleRef.name", json!(name), m));
        }
    }
    let subjects = opt_arr(Some(root), "subjects", "subjects", errs);
    for (i, s) in obj_items(subjects, "subjects", errs) {
        let p = index("subjects", i);
        let name = opt_str(Some(s), "name", &child(&p, "name"), errs);
        if name.is_empty() {
            errs.push(FieldError::required(child(&p, "name"), ""));
        }
        let group = opt_str(Some(s), "apiGroup", &child(&p, "apiGroup"), errs);
        match opt_str(Some(s), "kind", &child(&p, "kind"), errs) {
            "ServiceAccount" => {
                if !name.is_empty() {
                    for m in dns1123_subdomain_errors(name) {
                        errs.push(FieldError::invalid(child(&p, "name"), json!(name), m));
                    }
                }
                if !group.is_empty() {
                    errs.push(FieldError::not_supported(
                        child(&p, "apiGroup"),
                        json!(group),
                        &[""],
                    ));
                }
                if !namespaced
                    && opt_str(Some(s), "namespace", &child(&p, "namespace"), errs).is_empty()
                {
                    errs.push(FieldError::required(child(&p, "namespace"), ""));
                }
            }
            "User" | "Group" => {
                if group != RBAC_GROUP {
                    errs.push(FieldError::not_supported(
                        child(&p, "apiGroup"),
                        json!(group),
                        &[RBAC_GROUP],
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                child(&p, "kind"),
                json!(other),
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
}

fn network_policy(root: &Map<String, Value>, errs: &mut Errs) {
    let empty = Map::new();
    let Some(spec) = spec_of(root, &empty, errs) else {
        return;
    };
    validate_label_selector(spec.get("podSelector"), "spec.podSelector", errs);
    for (direction, peers_key) in [("ingress", "from"), ("egress", "to")] {
        let dp = child("spec", direction);
        let rules = opt_arr(Some(spec), direction, &dp, errs);
        for (i, rule) in obj_items(rules, &dp, errs) {
            let rp = index(&dp, i);
            let ports_path = child(&rp, "ports");
            for (j, port) in obj_items(
                opt_arr(Some(rule), "ports", &ports_path, errs),
                &ports_path,
                errs,
            ) {
                let pp = index(&ports_path, j);
                let proto = opt_str(Some(port), "protocol", &child(&pp, "protocol"), errs);
                if !proto.is_empty() && !["SCTP", "TCP", "UDP"].contains(&proto) {
                    errs.push(FieldError::not_supported(
                        child(&pp, "protocol"),
                        json!(proto),
                        &["SCTP", "TCP", "UDP"],
                    ));
                }
                if !absent(port.get("port")) {
                    port_num_or_name(port.get("port"), &child(&pp, "port"), errs);
                }
            }
            let peers_path = child(&rp, peers_key);
            for (j, peer) in obj_items(
                opt_arr(Some(rule), peers_key, &peers_path, errs),
                &peers_path,
                errs,
            ) {
                let pp = index(&peers_path, j);
                let n = ["podSelector", "namespaceSelector", "ipBlock"]
                    .iter()
                    .filter(|k| !absent(peer.get(**k)))
                    .count();
                if n == 0 {
                    errs.push(FieldError::required(&pp, "must specify a peer"));
                }
                for k in ["podSelector", "namespaceSelector"] {
                    validate_label_selector(peer.get(k), &child(&pp, k), errs);
                }
                if !absent(peer.get("ipBlock")) && n > 1 {
                    errs.push(FieldError::forbidden(
                        &pp,
                        "may not specify both ipBlock and another peer",
                    ));
                }
            }
        }
    }
    let types = opt_arr(Some(spec), "policyTypes", "spec.policyTypes", errs);
    if let Some(list) = types
        && list.len() > 2
    {
        errs.push(FieldError::invalid(
            "spec.policyTypes",
            Value::Array(list.clone()),
            "may not specify more than two policyTypes",
        ));
        return;
    }
    for (i, t) in str_items(types, "spec.policyTypes", errs) {
        if !["Ingress", "Egress"].contains(&t) {
            errs.push(FieldError::not_supported(
                index("spec.policyTypes", i),
                json!(t),
                &["Ingress", "Egress"],
            ));
        }
    }
}

fn lease(root: &Map<String, Value>, errs: &mut Errs) {
    let spec = opt_obj(Some(root), "spec", "spec", errs);
    if let Some(d) = opt_int(
        spec,
        "leaseDurationSeconds",
        "spec.leaseDurationSeconds",
        errs,
    ) && d <= 0
    {
        errs.push(FieldError::invalid(
            "spec.leaseDurationSeconds",
            json!(d),
            "must be greater than 0",
        ));
    }
    if let Some(t) = opt_int(spec, "leaseTransitions", "spec.leaseTransitions", errs)
        && t < 0
    {
        errs.push(FieldError::invalid(
            "spec.leaseTransitions",
            json!(t),
            NEGATIVE,
        ));
    }
    opt_str(spec, "holderIdentity", "spec.holderIdentity", errs);
    for k in ["acquireTime", "renewTime"] {
        let p = child("spec", k);
        let t = opt_str(spec, k, &p, errs);
        if !t.is_empty() && !looks_like_rfc3339(t) {
            errs.push(FieldError::invalid(
                &p,
                json!(t),
                "must be an RFC3339 timestamp with microseconds",
            ));
        }
    }
    let strategy = opt_str(spec, "strategy", "spec.strategy", errs);
    if !strategy.is_empty() && strategy != "OldestEmulationVersion" {
        errs.push(FieldError::not_supported(
            "spec.strategy",
            json!(strategy),
            &["OldestEmulationVersion"],
        ));
    }
    if !opt_str(spec, "preferredHolder", "spec.preferredHolder", errs).is_empty()
        && strategy.is_empty()
    {
        errs.push(FieldError::forbidden(
            "spec.preferredHolder",
            "may only be specified if `strategy` is defined",
        ));
    }
}

fn looks_like_rfc3339(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() >= 20
        && b.get(4) == Some(&b'-')
        && b.get(7) == Some(&b'-')
        && matches!(b.get(10), Some(b'T' | b't'))
        && b.get(13) == Some(&b':')
        && b.get(16) == Some(&b':')
        && (t.ends_with('Z')
            || t.ends_with('z')
            || t.get(t.len().saturating_sub(6)..)
                .is_some_and(|z| z.starts_with('+') || z.starts_with('-')))
}

// ---------------------------------------------------------------------------------------------
// Update
// ---------------------------------------------------------------------------------------------

/// Update-time validation: everything of [`validate_create`] on `new` plus the kind's
/// immutable fields, compared with `old` (both after defaulting).
pub fn validate_update(group: &str, kind: &str, old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs = validate_create(group, kind, new);
    if !old.is_object() || !new.is_object() {
        return errs;
    }
    let e = &mut errs;
    match (group, kind) {
        ("apps", "Deployment" | "DaemonSet" | "ReplicaSet") => {
            immutable(
                at(old, &["spec", "selector"]),
                at(new, &["spec", "selector"]),
                "spec.selector",
                e,
            );
        }
        ("apps", "StatefulSet") => {
            const MUTABLE: &[&str] = &[
                "replicas",
                "ordinals",
                "template",
                "updateStrategy",
                "revisionHistoryLimit",
                "persistentVolumeClaimRetentionPolicy",
                "minReadySeconds",
            ];
            let strip = |v: &Value| -> Value {
                let mut spec = v
                    .get("spec")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                spec.retain(|k, _| !MUTABLE.contains(&k.as_str()));
                Value::Object(spec)
            };
            if !semantic_eq(Some(&strip(old)), Some(&strip(new))) {
                e.push(FieldError::forbidden(
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
                ));
            }
        }
        ("", "Service") => service_update(old, new, e),
        ("", "Secret") => {
            immutable(old.get("type"), new.get("type"), "type", e);
            immutable_data(old, new, &["data"], e);
        }
        ("", "ConfigMap") => immutable_data(old, new, &["data", "binaryData"], e),
        ("storage.k8s.io", "StorageClass") => {
            for field in ["parameters", "provisioner", "reclaimPolicy"] {
                if !semantic_eq(old.get(field), new.get(field)) {
                    e.push(FieldError::forbidden(
                        field,
                        format!("updates to {field} are forbidden."),
                    ));
                }
            }
            immutable(
                old.get("volumeBindingMode"),
                new.get("volumeBindingMode"),
                "volumeBindingMode",
                e,
            );
        }
        ("storage.k8s.io", "CSIDriver") => {
            immutable(
                at(old, &["spec", "attachRequired"]),
                at(new, &["spec", "attachRequired"]),
                "spec.attachedRequired",
                e,
            );
            immutable(
                at(old, &["spec", "volumeLifecycleModes"]),
                at(new, &["spec", "volumeLifecycleModes"]),
                "spec.volumeLifecycleModes",
                e,
            );
        }
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding")
            if !semantic_eq(old.get("roleRef"), new.get("roleRef")) =>
        {
            e.push(FieldError::invalid(
                "roleRef",
                new.get("roleRef").cloned().unwrap_or(Value::Null),
                "cannot change roleRef",
            ));
        }
        _ => {}
    }
    errs
}

/// Secret and ConfigMap with `immutable: true`.
fn immutable_data(old: &Value, new: &Value, fields: &[&str], errs: &mut Errs) {
    if old.get("immutable") != Some(&Value::Bool(true)) {
        return;
    }
    if new.get("immutable") != Some(&Value::Bool(true)) {
        errs.push(FieldError::forbidden(
            "immutable",
            "field is immutable when `immutable` is set",
        ));
    }
    for field in fields {
        if !semantic_eq(old.get(*field), new.get(*field)) {
            errs.push(FieldError::forbidden(
                *field,
                "field is immutable when `immutable` is set",
            ));
        }
    }
}

/// `validateUpgradeDowngradeClusterIPs`: the primary cluster IP never changes.
fn service_update(old: &Value, new: &Value, errs: &mut Errs) {
    let is_external =
        |v: &Value| at(v, &["spec", "type"]).and_then(Value::as_str) == Some("ExternalName");
    if is_external(old) || is_external(new) {
        return;
    }
    let ips = |v: &Value| -> Vec<String> {
        at(v, &["spec", "clusterIPs"])
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|x| x.as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let headless = |ips: &[String]| ips.first().is_some_and(|ip| ip == "None");
    let (old_ips, new_ips) = (ips(old), ips(new));
    if headless(&old_ips) && headless(&new_ips) {
        return;
    }
    let value = json!(new_ips);
    let path0 = index("spec.clusterIPs", 0);
    if old_ips.len() == new_ips.len() {
        for (i, (a, b)) in old_ips.iter().zip(&new_ips).enumerate() {
            if a != b {
                errs.push(FieldError::invalid(
                    index("spec.clusterIPs", i),
                    value.clone(),
                    "may not change once set",
                ));
            }
        }
    } else if old_ips.len() > new_ips.len() {
        if new_ips.is_empty() {
            errs.push(FieldError::invalid(
                &path0,
                value.clone(),
                "primary clusterIP can not be unset",
            ));
        }
        if let (Some(a), Some(b)) = (old_ips.first(), new_ips.first())
            && a != b
        {
            errs.push(FieldError::invalid(
                &path0,
                value.clone(),
                "may not change once set",
            ));
        }
        if new_ips.len() == 1
            && at(new, &["spec", "ipFamilyPolicy"]).and_then(Value::as_str) != Some("SingleStack")
        {
            errs.push(FieldError::invalid(
                &path0,
                value,
                "`ipFamilyPolicy` must be set to 'SingleStack' when releasing the secondary clusterIP",
            ));
        }
    } else if let (Some(a), Some(b)) = (old_ips.first(), new_ips.first())
        && a != b
    {
        errs.push(FieldError::invalid(
            &path0,
            value,
            "may not change once set",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defaults::apply_defaults;

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn has(errs: &[FieldError], needle: &str) -> bool {
        errs.iter().any(|e| e.to_string().contains(needle))
    }

    fn defaulted(group: &str, kind: &str, mut obj: Value) -> Value {
        apply_defaults(group, kind, &mut obj);
        obj
    }

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                             "spec": {"containers": [{"name": "web", "image": "nginx:1"}]}}
            }
        })
    }

    #[test]
    fn name_rules() {
        let long = "a".repeat(254);
        let sub = "Invalid value";
        assert!(validate_name("apps", "Deployment", "web.example-1").is_empty());
        assert!(validate_name("apps", "Deployment", &"a".repeat(253)).is_empty());
        for bad in [
            "Web",
            "web_1",
            "-web",
            "web-",
            ".web",
            "web..x",
            long.as_str(),
        ] {
            let errs = validate_name("apps", "Deployment", bad);
            assert!(!errs.is_empty(), "{bad}");
            assert!(
                errs.iter()
                    .all(|e| e.field == "metadata.name" && e.to_string().contains(sub)),
                "{bad}"
            );
        }
        let errs = validate_name("", "ConfigMap", &long);
        assert_eq!(
            messages(&errs),
            vec![format!(
                "metadata.name: Invalid value: \"{long}\": must be no more than 253 characters"
            )]
        );
        assert_eq!(
            messages(&validate_name("", "Secret", "Bad_Name")),
            vec!["metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string()]
        );
        // Namespaces: DNS-1123 labels.
        assert!(validate_name("", "Namespace", "team-a").is_empty());
        assert_eq!(
            messages(&validate_name("", "Namespace", "team.a")),
            vec!["metadata.name: Invalid value: \"team.a\": must not contain dots".to_string()]
        );
        assert!(has(
            &validate_name("", "Namespace", "Team"),
            "a lowercase RFC 1123 label must consist of"
        ));
        assert!(has(
            &validate_name("", "Namespace", &"a".repeat(64)),
            "must be no more than 63 characters"
        ));
        assert!(has(
            &validate_name("apps", "StatefulSet", "db.x"),
            "must not contain dots"
        ));
        // Services: DNS-1035 labels (no leading digit).
        assert!(validate_name("", "Service", "api").is_empty());
        assert_eq!(
            messages(&validate_name("", "Service", "1api")),
            vec!["metadata.name: Invalid value: \"1api\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string()]
        );
        // RBAC: path segments, so uppercase and colons are fine.
        assert!(
            validate_name(
                "rbac.authorization.k8s.io",
                "ClusterRole",
                "system:Controller_X"
            )
            .is_empty()
        );
        assert_eq!(
            messages(&validate_name("rbac.authorization.k8s.io", "Role", "a/b%c")),
            vec![
                "metadata.name: Invalid value: \"a/b%c\": may not contain '/'".to_string(),
                "metadata.name: Invalid value: \"a/b%c\": may not contain '%'".to_string()
            ]
        );
        assert!(has(
            &validate_name("rbac.authorization.k8s.io", "RoleBinding", ".."),
            "may not be '..'"
        ));
        assert_eq!(
            messages(&validate_name("", "Pod", "")),
            vec!["metadata.name: Required value: name or generateName is required".to_string()]
        );
        assert!(is_dns1123_label("ok-1").is_ok());
        assert!(is_dns1123_label("no_").is_err());
        assert!(is_dns1123_subdomain("a.b").is_ok());
        assert!(is_dns1123_subdomain("").is_err());
    }

    #[test]
    fn labels_and_annotations() {
        let meta = json!({"labels": {"app": "ok", "example.com/tier": "a_b.c", "bad key": "x", "k": "-bad"},
                          "annotations": {"Example.COM/Anything": "free text", "a/b/c": "x"}});
        let errs = validate_labels_and_annotations(&meta);
        assert!(has(
            &errs,
            "metadata.labels: Invalid value: \"bad key\": name part must consist of alphanumeric characters"
        ));
        assert!(has(
            &errs,
            "metadata.labels: Invalid value: \"-bad\": a valid label must be an empty string or consist of"
        ));
        assert!(has(
            &errs,
            "metadata.annotations: Invalid value: \"a/b/c\": a qualified name must consist of"
        ));
        assert_eq!(errs.len(), 3, "{:?}", messages(&errs));
        let big = json!({"annotations": {"a": "x".repeat(TOTAL_ANNOTATION_SIZE)}});
        assert_eq!(
            messages(&validate_labels_and_annotations(&big)),
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes".to_string()]
        );
        assert!(has(
            &validate_labels_and_annotations(&json!({"labels": {"a": 1}})),
            "metadata.labels[a]"
        ));
        assert!(has(
            &validate_labels_and_annotations(&json!({"labels": "x"})),
            "must be of type object"
        ));
        assert!(validate_labels_and_annotations(&json!({"labels": {"a": ""}})).is_empty());
        let fin = validate_finalizers(
            &json!({"finalizers": ["example.com/cleanup", "custom", "orphan", "foregroundDeletion"]}),
            true,
        );
        assert!(has(
            &fin,
            "name is neither a standard finalizer name nor is it fully qualified"
        ));
        assert!(has(&fin, "cannot be both set"));
        // Custom resources: only the qualified-name rule (the 4.5 Manila operator's finalizer).
        let cr = json!({"finalizers": ["finalizer.manila.csi.openshift.io"]});
        assert!(validate_finalizers(&cr, false).is_empty());
        assert!(!validate_finalizers(&cr, true).is_empty());
        assert!(!validate_finalizers(&json!({"finalizers": ["Bad_Name!"]}), false).is_empty());
    }

    #[test]
    fn deployment_create_rules() {
        let ok = defaulted("apps", "Deployment", deployment());
        assert!(
            validate_create("apps", "Deployment", &ok).is_empty(),
            "{:?}",
            messages(&validate_create("apps", "Deployment", &ok))
        );

        let mut mismatch = deployment();
        mismatch["spec"]["template"]["metadata"]["labels"] = json!({"app": "other"});
        let errs = validate_create(
            "apps",
            "Deployment",
            &defaulted("apps", "Deployment", mismatch),
        );
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec.template.metadata.labels");
        assert_eq!(
            errs[0].detail,
            "`selector` does not match template `labels`"
        );

        let mut no_selector = deployment();
        no_selector["spec"]
            .as_object_mut()
            .map(|s| s.remove("selector"));
        let errs = validate_create(
            "apps",
            "Deployment",
            &defaulted("apps", "Deployment", no_selector),
        );
        assert!(has(&errs, "spec.selector: Required value"));
        assert!(has(&errs, "spec.template.metadata.labels: Invalid value"));

        let mut empty_sel = deployment();
        empty_sel["spec"]["selector"] = json!({});
        assert!(has(
            &validate_create(
                "apps",
                "Deployment",
                &defaulted("apps", "Deployment", empty_sel)
            ),
            "empty selector is invalid for deployment"
        ));

        let mut bad = deployment();
        bad["spec"]["template"]["spec"] = json!({
            "containers": [
                {"name": "Web", "ports": [{"containerPort": 70000}, {"containerPort": 0, "protocol": "ICMP"}],
                 "volumeMounts": [{"name": "missing", "mountPath": "/x"}]},
                {"name": "Web", "image": "x"}
            ],
            "volumes": [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}],
            "restartPolicy": "Never"
        });
        bad["spec"]["strategy"] = json!({"type": "Recreate", "rollingUpdate": {}});
        let errs = validate_create("apps", "Deployment", &defaulted("apps", "Deployment", bad));
        for want in [
            "spec.template.spec.containers[0].name: Invalid value: \"Web\": a lowercase RFC 1123 label",
            "spec.template.spec.containers[1].name: Duplicate value: \"Web\"",
            "spec.template.spec.containers[0].image: Required value",
            "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "spec.template.spec.containers[0].ports[1].containerPort: Required value",
            "spec.template.spec.containers[0].ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"missing\"",
            "spec.template.spec.volumes[1].name: Duplicate value: \"v\"",
            "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
            "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'",
        ] {
            assert!(has(&errs, want), "missing {want}\n{:#?}", messages(&errs));
        }

        let mut no_containers = deployment();
        no_containers["spec"]["template"]["spec"]["containers"] = json!([]);
        assert!(has(
            &validate_create(
                "apps",
                "Deployment",
                &defaulted("apps", "Deployment", no_containers)
            ),
            "spec.template.spec.containers: Required value"
        ));

        let mut zero = deployment();
        zero["spec"]["strategy"] =
            json!({"rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}});
        zero["spec"]["replicas"] = json!(-1);
        let errs = validate_create("apps", "Deployment", &defaulted("apps", "Deployment", zero));
        assert!(has(
            &errs,
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"
        ));
        assert!(has(
            &errs,
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        ));

        let mut template_label = deployment();
        template_label["spec"]["template"]["metadata"]["labels"]["bad key"] = json!("x");
        assert!(has(
            &validate_create(
                "apps",
                "Deployment",
                &defaulted("apps", "Deployment", template_label)
            ),
            "spec.template.labels: Invalid value: \"bad key\""
        ));
    }

    #[test]
    fn daemon_set_rules() {
        let ds = json!({"spec": {"selector": {"matchLabels": {"app": "n"}},
            "template": {"metadata": {"labels": {"app": "n"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}});
        let ok = defaulted("apps", "DaemonSet", ds.clone());
        assert!(
            validate_create("apps", "DaemonSet", &ok).is_empty(),
            "{:?}",
            messages(&validate_create("apps", "DaemonSet", &ok))
        );
        let mut both = ds.clone();
        both["spec"]["updateStrategy"] =
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}});
        assert!(has(
            &validate_create("apps", "DaemonSet", &defaulted("apps", "DaemonSet", both)),
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero"
        ));
        let mut mismatch = ds;
        mismatch["spec"]["selector"] =
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]});
        assert!(has(
            &validate_create(
                "apps",
                "DaemonSet",
                &defaulted("apps", "DaemonSet", mismatch)
            ),
            "`selector` does not match template `labels`"
        ));
    }

    #[test]
    fn service_rules() {
        let ok = defaulted(
            "",
            "Service",
            json!({"spec": {"selector": {"app": "a"}, "ports": [{"port": 80}]}}),
        );
        assert!(
            validate_create("", "Service", &ok).is_empty(),
            "{:?}",
            messages(&validate_create("", "Service", &ok))
        );
        let no_ports = defaulted("", "Service", json!({"spec": {}}));
        assert_eq!(
            messages(&validate_create("", "Service", &no_ports)),
            vec!["spec.ports: Required value".to_string()]
        );
        let headless = defaulted("", "Service", json!({"spec": {"clusterIP": "None"}}));
        assert!(validate_create("", "Service", &headless).is_empty());
        let ext = defaulted(
            "",
            "Service",
            json!({"spec": {"type": "ExternalName", "externalName": "db.example.com."}}),
        );
        assert!(
            validate_create("", "Service", &ext).is_empty(),
            "{:?}",
            messages(&validate_create("", "Service", &ext))
        );
        let ext_missing = defaulted("", "Service", json!({"spec": {"type": "ExternalName"}}));
        assert!(has(
            &validate_create("", "Service", &ext_missing),
            "spec.externalName: Required value"
        ));
        let dup = defaulted(
            "",
            "Service",
            json!({"spec": {"type": "Bogus", "ports": [{"port": 80, "name": "a"}, {"port": 80, "name": "a"}, {"port": 0}]}}),
        );
        let errs = validate_create("", "Service", &dup);
        for want in [
            "spec.type: Unsupported value: \"Bogus\"",
            "spec.ports[1].name: Duplicate value: \"a\"",
            "spec.ports[1]: Duplicate value:",
            "spec.ports[2].name: Required value",
            "spec.ports[2].port: Invalid value: 0: must be between 1 and 65535, inclusive",
        ] {
            assert!(has(&errs, want), "missing {want}\n{:#?}", messages(&errs));
        }
        let node_port = defaulted(
            "",
            "Service",
            json!({"spec": {"ports": [{"port": 80, "nodePort": 30001}]}}),
        );
        assert!(has(
            &validate_create("", "Service", &node_port),
            "may not be used when `type` is 'ClusterIP'"
        ));
    }

    #[test]
    fn config_map_and_secret_rules() {
        let cm = json!({"data": {"good.key": "v", "bad key": "v", "..x": "v"}});
        let errs = validate_create("", "ConfigMap", &cm);
        assert!(has(
            &errs,
            "data[bad key]: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
        ));
        assert!(has(
            &errs,
            "data[..x]: Invalid value: \"..x\": must not start with '..'"
        ));
        assert_eq!(errs.len(), 2);
        let big = json!({"data": {"a": "x".repeat(MAX_SECRET_SIZE + 1)}});
        assert_eq!(
            messages(&validate_create("", "ConfigMap", &big)),
            vec![": Too long: may not be more than 1048576 bytes".to_string()]
        );
        let both = json!({"data": {"a": "x"}, "binaryData": {"a": "eA=="}});
        assert!(has(
            &validate_create("", "ConfigMap", &both),
            "duplicate of key present in binaryData"
        ));

        let secret = defaulted(
            "",
            "Secret",
            json!({"stringData": {"ok": "v"}, "data": {"bad/key": "eA=="}}),
        );
        let errs = validate_create("", "Secret", &secret);
        assert_eq!(errs.len(), 1, "{:?}", messages(&errs));
        assert_eq!(errs[0].field, "data[bad/key]");
        let tls = defaulted(
            "",
            "Secret",
            json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}}),
        );
        assert_eq!(
            messages(&validate_create("", "Secret", &tls)),
            vec!["data[tls.key]: Required value".to_string()]
        );
        let bad_b64 = json!({"type": "Opaque", "data": {"a": "!!!"}});
        assert!(has(
            &validate_create("", "Secret", &bad_b64),
            "illegal base64 data at input byte 0"
        ));
        let big = json!({"data": {"a": base64::engine::general_purpose::STANDARD.encode(vec![0u8; MAX_SECRET_SIZE + 1])}});
        assert!(has(
            &validate_create("", "Secret", &big),
            "data: Too long: may not be more than 1048576 bytes"
        ));
        let sa = json!({"type": "kubernetes.io/service-account-token"});
        assert!(has(
            &validate_create("", "Secret", &sa),
            "metadata.annotations[kubernetes.io/service-account.name]: Required value"
        ));
    }

    #[test]
    fn storage_rules() {
        let sc = defaulted(
            "storage.k8s.io",
            "StorageClass",
            json!({"provisioner": "cinder.csi.openstack.org"}),
        );
        assert!(validate_create("storage.k8s.io", "StorageClass", &sc).is_empty());
        let bad = defaulted(
            "storage.k8s.io",
            "StorageClass",
            json!({"reclaimPolicy": "Recycle", "volumeBindingMode": "Later"}),
        );
        let errs = validate_create("storage.k8s.io", "StorageClass", &bad);
        assert_eq!(
            messages(&errs),
            vec![
                "provisioner: Required value".to_string(),
                "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\"".to_string(),
                "volumeBindingMode: Unsupported value: \"Later\": supported values: \"Immediate\", \"WaitForFirstConsumer\"".to_string(),
            ]
        );
        let driver = defaulted(
            "storage.k8s.io",
            "CSIDriver",
            json!({"spec": {"fsGroupPolicy": "Sometimes"}}),
        );
        assert_eq!(
            messages(&validate_create("storage.k8s.io", "CSIDriver", &driver)),
            vec!["spec.fsGroupPolicy: Unsupported value: \"Sometimes\": supported values: \"File\", \"None\", \"ReadWriteOnceWithFSType\"".to_string()]
        );
        let undefaulted = json!({"spec": {}});
        assert!(has(
            &validate_create("storage.k8s.io", "CSIDriver", &undefaulted),
            "spec.attachedRequired: Required value"
        ));
    }

    #[test]
    fn policy_rbac_network_lease_rules() {
        let pdb = defaulted(
            "policy",
            "PodDisruptionBudget",
            json!({"spec": {"minAvailable": 1, "maxUnavailable": "10%"}}),
        );
        assert!(has(
            &validate_create("policy", "PodDisruptionBudget", &pdb),
            "spec: Invalid value: {"
        ));
        assert!(has(
            &validate_create("policy", "PodDisruptionBudget", &pdb),
            "minAvailable and maxUnavailable cannot be both set"
        ));
        let pct = defaulted(
            "policy",
            "PodDisruptionBudget",
            json!({"spec": {"maxUnavailable": "150%"}}),
        );
        assert!(has(
            &validate_create("policy", "PodDisruptionBudget", &pct),
            "spec.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%"
        ));

        let role = json!({"rules": [{"apiGroups": [""], "resources": ["pods"]}, {"nonResourceURLs": ["/x"], "verbs": ["get"]}]});
        let errs = validate_create("rbac.authorization.k8s.io", "Role", &role);
        assert_eq!(
            messages(&errs),
            vec![
                "rules[0].verbs: Required value: verbs must contain at least one value".to_string(),
                "rules[1].nonResourceURLs: Invalid value: [\"/x\"]: namespaced rules cannot apply to non-resource URLs".to_string(),
            ]
        );
        assert!(
            validate_create(
                "rbac.authorization.k8s.io",
                "ClusterRole",
                &json!({"rules": [{"nonResourceURLs": ["/x"], "verbs": ["get"]}]})
            )
            .is_empty()
        );
        let rb = defaulted(
            "rbac.authorization.k8s.io",
            "RoleBinding",
            json!({"roleRef": {}, "subjects": [{"kind": "Robot", "name": "r"}]}),
        );
        let errs = validate_create("rbac.authorization.k8s.io", "RoleBinding", &rb);
        assert!(has(&errs, "roleRef.kind: Unsupported value: \"\""));
        assert!(has(&errs, "roleRef.name: Required value"));
        assert!(has(&errs, "subjects[0].kind: Unsupported value: \"Robot\""));
        let crb = defaulted(
            "rbac.authorization.k8s.io",
            "ClusterRoleBinding",
            json!({"roleRef": {"kind": "ClusterRole", "name": "r"}, "subjects": [{"kind": "ServiceAccount", "name": "sa"}]}),
        );
        assert_eq!(
            messages(&validate_create(
                "rbac.authorization.k8s.io",
                "ClusterRoleBinding",
                &crb
            )),
            vec!["subjects[0].namespace: Required value".to_string()]
        );

        let np = defaulted(
            "networking.k8s.io",
            "NetworkPolicy",
            json!({"spec": {"podSelector": {}, "policyTypes": ["Ingress", "Sideways"]}}),
        );
        assert_eq!(
            messages(&validate_create("networking.k8s.io", "NetworkPolicy", &np)),
            vec!["spec.policyTypes[1]: Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\"".to_string()]
        );
        let lease = json!({"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1, "renewTime": "yesterday"}});
        let errs = validate_create("coordination.k8s.io", "Lease", &lease);
        assert!(has(
            &errs,
            "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"
        ));
        assert!(has(
            &errs,
            "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"
        ));
        assert!(has(&errs, "spec.renewTime"));
        let good = json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 137, "renewTime": "2025-01-01T00:00:00.000000Z"}});
        assert!(validate_create("coordination.k8s.io", "Lease", &good).is_empty());
    }

    #[test]
    fn pod_spec_details() {
        let pod = defaulted(
            "",
            "Pod",
            json!({"spec": {
                "containers": [{
                    "name": "c", "image": "i:1",
                    "env": [{"name": "A=B"}, {"name": ""},
                            {"name": "X", "value": "v", "valueFrom": {"secretKeyRef": {"name": "s"}}}],
                    "livenessProbe": {"periodSeconds": -1, "successThreshold": 2},
                    "readinessProbe": {"httpGet": {"port": "Not_A_Name"}, "exec": {"command": ["true"]}},
                    "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
                    "volumeMounts": [{"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/a"}]
                }],
                "initContainers": [{"name": "c", "image": "i:1", "readinessProbe": {"exec": {"command": ["x"]}}}],
                "volumes": [{"name": "v", "hostPath": {"path": "/x", "type": "Weird"}},
                            {"name": "w", "secret": {"defaultMode": 4095}}],
                "tolerations": [{"operator": "Exists", "value": "x"}, {"key": "k", "operator": "Sometimes"}],
                "dnsPolicy": "Cloud",
                "activeDeadlineSeconds": 0
            }}),
        );
        let errs = validate_create("", "Pod", &pod);
        for want in [
            "spec.containers[0].env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
            "spec.containers[0].env[1].name: Required value",
            "spec.containers[0].env[2].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
            "spec.containers[0].env[2].valueFrom.secretKeyRef.key: Required value",
            "spec.containers[0].livenessProbe: Required value: must specify a handler type",
            "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
            "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
            "spec.containers[0].readinessProbe.httpGet: Forbidden: may not specify more than 1 handler type",
            "spec.containers[0].readinessProbe.httpGet.port: Invalid value: \"Not_A_Name\"",
            "spec.containers[0].resources.requests[cpu]: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
            "spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/a\": must be unique",
            "spec.initContainers[0].name: Duplicate value: \"c\"",
            "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
            "spec.volumes[0].hostPath.type: Unsupported value: \"Weird\"",
            "spec.volumes[1].secret.secretName: Required value",
            "spec.volumes[1].secret.defaultMode: Invalid value: 4095: must be a number between 0 and 0777 (octal), both inclusive",
            "spec.tolerations[0].operator: Invalid value: {",
            "spec.tolerations[1].operator: Unsupported value: \"Sometimes\": supported values: \"Equal\", \"Exists\"",
            "spec.dnsPolicy: Unsupported value: \"Cloud\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"",
            "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
        ] {
            assert!(has(&errs, want), "missing {want}\n{:#?}", messages(&errs));
        }
    }

    #[test]
    fn namespace_event_and_aggregation_rules() {
        let ns = json!({"spec": {"finalizers": ["kubernetes", "custom", "example.com/x"]}});
        assert_eq!(
            messages(&validate_create("", "Namespace", &ns)),
            vec!["spec.finalizers: Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified".to_string()]
        );
        let ev = json!({"metadata": {"namespace": "a"}, "involvedObject": {"namespace": "b"}});
        assert_eq!(
            messages(&validate_create("", "Event", &ev)),
            vec![
                "involvedObject.namespace: Invalid value: \"b\": does not match event.namespace"
                    .to_string()
            ]
        );
        let ok = json!({"metadata": {"namespace": "a"}, "involvedObject": {"namespace": "a"}});
        assert!(validate_create("", "Event", &ok).is_empty());
        let series = json!({"metadata": {"namespace": "a"}, "involvedObject": {"namespace": "a"}, "eventTime": "2025-01-01T00:00:00.000000Z"});
        let errs = validate_create("", "Event", &series);
        assert!(has(&errs, "reportingComponent: Required value"));
        assert!(has(&errs, "action: Required value"));
        let agg = json!({"aggregationRule": {}});
        assert_eq!(
            messages(&validate_create("rbac.authorization.k8s.io", "ClusterRole", &agg)),
            vec!["aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil".to_string()]
        );
        let sel = json!({"spec": {"podSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}, {"key": "b", "operator": "In"}, {"key": "c", "operator": "Near"}]}}});
        let errs = validate_create(
            "networking.k8s.io",
            "NetworkPolicy",
            &defaulted("networking.k8s.io", "NetworkPolicy", sel),
        );
        assert!(has(
            &errs,
            "spec.podSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        ));
        assert!(has(
            &errs,
            "spec.podSelector.matchExpressions[1].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
        ));
        assert!(has(
            &errs,
            "spec.podSelector.matchExpressions[2].operator: Invalid value: \"Near\": not a valid selector operator"
        ));
    }

    #[test]
    fn immutable_fields_on_update() {
        let old = defaulted("apps", "Deployment", deployment());
        let mut new = old.clone();
        new["spec"]["selector"] = json!({"matchLabels": {"app": "web", "tier": "x"}});
        new["spec"]["template"]["metadata"]["labels"]["tier"] = json!("x");
        let errs = validate_update("apps", "Deployment", &old, &new);
        assert_eq!(errs.len(), 1, "{:?}", messages(&errs));
        assert_eq!(errs[0].field, "spec.selector");
        assert_eq!(errs[0].detail, "field is immutable");
        // Semantically equal selectors are not a change.
        let mut same = old.clone();
        same["spec"]["selector"]["matchExpressions"] = json!([]);
        same["spec"]["replicas"] = json!(3);
        assert!(validate_update("apps", "Deployment", &old, &same).is_empty());

        let ds_old = defaulted(
            "apps",
            "DaemonSet",
            json!({"spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b", "c": "d"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}}),
        );
        let mut ds_new = ds_old.clone();
        ds_new["spec"]["selector"] = json!({"matchLabels": {"c": "d"}});
        assert_eq!(
            messages(&validate_update("apps", "DaemonSet", &ds_old, &ds_new))[0]
                .split(": ")
                .next(),
            Some("spec.selector")
        );

        let sts_old = defaulted(
            "apps",
            "StatefulSet",
            json!({"spec": {"serviceName": "db", "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}}),
        );
        let mut sts_new = sts_old.clone();
        sts_new["spec"]["replicas"] = json!(5);
        assert!(validate_update("apps", "StatefulSet", &sts_old, &sts_new).is_empty());
        sts_new["spec"]["serviceName"] = json!("other");
        assert!(has(
            &validate_update("apps", "StatefulSet", &sts_old, &sts_new),
            "spec: Forbidden: updates to statefulset spec for fields other than"
        ));

        let svc_old = json!({"spec": {"type": "ClusterIP", "clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.5"], "ports": [{"port": 80}]}});
        let svc_old = defaulted("", "Service", svc_old);
        let mut svc_new = svc_old.clone();
        svc_new["spec"]["clusterIP"] = json!("10.96.0.6");
        svc_new["spec"]["clusterIPs"] = json!(["10.96.0.6"]);
        assert_eq!(
            messages(&validate_update("", "Service", &svc_old, &svc_new)),
            vec![
                "spec.clusterIPs[0]: Invalid value: [\"10.96.0.6\"]: may not change once set"
                    .to_string()
            ]
        );

        let sec_old = json!({"type": "Opaque", "data": {"a": "eA=="}, "immutable": true});
        let mut sec_new = sec_old.clone();
        sec_new["data"]["a"] = json!("eQ==");
        sec_new["immutable"] = json!(false);
        sec_new["type"] = json!("kubernetes.io/basic-auth");
        let errs = validate_update("", "Secret", &sec_old, &sec_new);
        for want in [
            "type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable",
            "immutable: Forbidden: field is immutable when `immutable` is set",
            "data: Forbidden: field is immutable when `immutable` is set",
        ] {
            assert!(has(&errs, want), "missing {want}: {:?}", messages(&errs));
        }
        let mutable_old = json!({"type": "Opaque", "data": {"a": "eA=="}});
        let mut mutable_new = mutable_old.clone();
        mutable_new["data"]["a"] = json!("eQ==");
        assert!(validate_update("", "Secret", &mutable_old, &mutable_new).is_empty());

        let cm_old = json!({"data": {"a": "1"}, "binaryData": {"b": "eA=="}, "immutable": true});
        let mut cm_new = cm_old.clone();
        cm_new["binaryData"] = json!({});
        assert_eq!(
            messages(&validate_update("", "ConfigMap", &cm_old, &cm_new)),
            vec!["binaryData: Forbidden: field is immutable when `immutable` is set".to_string()]
        );

        let sc_old = defaulted(
            "storage.k8s.io",
            "StorageClass",
            json!({"provisioner": "a.b", "parameters": {"type": "ssd"}}),
        );
        let mut sc_new = sc_old.clone();
        sc_new["provisioner"] = json!("c.d");
        sc_new["parameters"] = json!({"type": "hdd"});
        sc_new["reclaimPolicy"] = json!("Retain");
        sc_new["volumeBindingMode"] = json!("WaitForFirstConsumer");
        sc_new["allowVolumeExpansion"] = json!(true);
        assert_eq!(
            messages(&validate_update(
                "storage.k8s.io",
                "StorageClass",
                &sc_old,
                &sc_new
            )),
            vec![
                "parameters: Forbidden: updates to parameters are forbidden.".to_string(),
                "provisioner: Forbidden: updates to provisioner are forbidden.".to_string(),
                "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.".to_string(),
                "volumeBindingMode: Invalid value: \"WaitForFirstConsumer\": field is immutable"
                    .to_string(),
            ]
        );

        let d_old = defaulted("storage.k8s.io", "CSIDriver", json!({"spec": {}}));
        let mut d_new = d_old.clone();
        d_new["spec"]["attachRequired"] = json!(false);
        d_new["spec"]["volumeLifecycleModes"] = json!(["Persistent", "Ephemeral"]);
        // Mutable since v1.28 and earlier: podInfoOnMount, fsGroupPolicy, storageCapacity, ...
        d_new["spec"]["podInfoOnMount"] = json!(true);
        d_new["spec"]["fsGroupPolicy"] = json!("File");
        d_new["spec"]["storageCapacity"] = json!(true);
        d_new["spec"]["requiresRepublish"] = json!(true);
        d_new["spec"]["seLinuxMount"] = json!(true);
        assert_eq!(
            messages(&validate_update("storage.k8s.io", "CSIDriver", &d_old, &d_new)),
            vec![
                "spec.attachedRequired: Invalid value: false: field is immutable".to_string(),
                "spec.volumeLifecycleModes: Invalid value: [\"Persistent\",\"Ephemeral\"]: field is immutable".to_string(),
            ]
        );

        let rb_old = defaulted(
            "rbac.authorization.k8s.io",
            "RoleBinding",
            json!({"roleRef": {"kind": "Role", "name": "a"}}),
        );
        let mut rb_new = rb_old.clone();
        rb_new["roleRef"]["name"] = json!("b");
        let errs = validate_update("rbac.authorization.k8s.io", "RoleBinding", &rb_old, &rb_new);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "roleRef");
        assert_eq!(errs[0].detail, "cannot change roleRef");

        // PodDisruptionBudget specs are mutable in policy/v1.
        let pdb_old = defaulted(
            "policy",
            "PodDisruptionBudget",
            json!({"spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}}),
        );
        let mut pdb_new = pdb_old.clone();
        pdb_new["spec"]["selector"] = json!({"matchLabels": {"a": "c"}});
        assert!(validate_update("policy", "PodDisruptionBudget", &pdb_old, &pdb_new).is_empty());
    }

    #[test]
    fn malformed_input_is_reported_not_panicked_on() {
        let errs = validate_create("apps", "Deployment", &json!({"spec": "a string"}));
        assert_eq!(
            messages(&errs),
            vec!["spec: Invalid value: \"string\": must be of type object".to_string()]
        );
        let errs = validate_create(
            "apps",
            "Deployment",
            &json!({"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": {"name": "x"}}}}}),
        );
        assert!(
            has(
                &errs,
                "spec.template.spec.containers: Invalid value: \"object\": must be of type array"
            ),
            "{:?}",
            messages(&errs)
        );
        let errs = validate_create(
            "",
            "Pod",
            &json!({"spec": {"containers": [1, {"name": 5, "image": "i", "ports": "x"}]}}),
        );
        assert!(has(
            &errs,
            "spec.containers[0]: Invalid value: \"integer\": must be of type object"
        ));
        assert!(has(
            &errs,
            "spec.containers[1].name: Invalid value: \"integer\": must be of type string"
        ));
        assert!(has(
            &errs,
            "spec.containers[1].ports: Invalid value: \"string\": must be of type array"
        ));
        assert!(has(
            &validate_create("", "Service", &json!([1])),
            ": Invalid value: \"array\": must be of type object"
        ));

        let kinds = [
            ("apps", "Deployment"),
            ("apps", "DaemonSet"),
            ("apps", "StatefulSet"),
            ("apps", "ReplicaSet"),
            ("", "Pod"),
            ("", "PodTemplate"),
            ("", "Service"),
            ("", "ConfigMap"),
            ("", "Secret"),
            ("", "Namespace"),
            ("", "Event"),
            ("storage.k8s.io", "StorageClass"),
            ("storage.k8s.io", "CSIDriver"),
            ("policy", "PodDisruptionBudget"),
            ("rbac.authorization.k8s.io", "Role"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("rbac.authorization.k8s.io", "RoleBinding"),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
            ("networking.k8s.io", "NetworkPolicy"),
            ("coordination.k8s.io", "Lease"),
        ];
        let shapes = [
            json!(null),
            json!("s"),
            json!(1),
            json!([]),
            json!({}),
            json!({"spec": [], "data": 1, "rules": {}, "roleRef": "x", "subjects": "x", "metadata": 1, "status": 1}),
            json!({"spec": {"selector": "x", "template": 1, "ports": [1, "x", {"port": "a", "targetPort": []}],
                "containers": [{"resources": {"limits": {"cpu": []}, "requests": 1}, "env": [1, {"valueFrom": 1}],
                "livenessProbe": {"httpGet": 1}, "volumeMounts": {}}], "volumes": [{"hostPath": 1}],
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": []}},
                "updateStrategy": {"type": 1}, "versions": [1], "names": "x", "policyTypes": [1, 2, 3],
                "minAvailable": [], "tokenRequests": [{"audience": 1}], "volumeLifecycleModes": "x",
                "finalizers": [1], "ingress": [{"ports": [{"port": {}}], "from": [1, {}]}]},
                "data": {"a": 1, "b": "***"}, "binaryData": {"c": 2}, "stringData": {"d": 3},
                "rules": [{"verbs": "x"}], "subjects": [1], "provisioner": 1, "parameters": {"a": 1},
                "involvedObject": 1, "eventTime": "x", "reportingComponent": 1}),
        ];
        for (group, kind) in kinds {
            for shape in &shapes {
                let _ = validate_create(group, kind, shape);
                for other in &shapes {
                    let _ = validate_update(group, kind, shape, other);
                }
            }
        }
    }
}
