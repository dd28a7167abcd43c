//! CustomResourceDefinitions (`apiextensions.k8s.io/v1`) and the custom resources they serve,
//! treated the way kube-apiserver v1.33 treats them.
//!
//! What is here:
//! - [`validate_crd`]: the 422 causes a real server returns for a malformed CRD on create and
//!   update (names, group, scope, versions, storage version, stored versions, structural
//!   schema rules, defaults that must validate and be pruned, list/map markers, subresources,
//!   printer columns, conversion, the `*.k8s.io` approval annotation).
//! - [`prepare_crd`]: the v1 defaults and `status.storedVersions` bookkeeping the server does
//!   before validating.
//! - [`crd_info`]: what the rest of kube-sim needs to serve a CRD.
//! - [`Schema`] with [`prune`], [`apply_defaults`], [`validate`] and [`validate_status`]: what
//!   happens to a custom resource on its way in (and, for defaults, on every read).
//!
//! What this module must not do: any I/O, any storage or watch work, generic ObjectMeta
//! validation (labels, annotations, generateName handling: the caller does those for every
//! kind), and it never panics on user input: every malformed value becomes an error.
//!
//! `x-kubernetes-validations` (CEL) rules are accepted in schemas and their static shape is
//! checked, but they are NOT evaluated on custom resources: kube-sim has no CEL interpreter.
//! Validation ratcheting on update (errors on unchanged fields being ignored) is not done.
//!
//! Regular expressions (`pattern:`) are read as Go reads them and matched by the `regex` crate
//! ([`crate::go_regex`]).

use crate::field_error::{FieldError, FieldErrorKind, child, index, key};
use crate::go_regex::{Regex, RegexError};
use crate::list_types::{ListKind, ListTypes};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

// ---------------------------------------------------------------------------------------------
// Small helpers shared by everything below.
// ---------------------------------------------------------------------------------------------

/// Go's `strconv.Quote`, which is how the server quotes values inside messages.
fn go_quote(s: &str) -> String {
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
fn go_float(f: f64) -> String {
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
enum Num {
    Int(i64),
    Float(f64),
}

fn num_of(n: &serde_json::Number) -> Num {
    match n.as_i64() {
        Some(i) => Num::Int(i),
        None => Num::Float(n.as_f64().unwrap_or(f64::NAN)),
    }
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

/// JSON equality where numbers compare by value (1 == 1.0), as Go's decoded values mostly do.
fn json_eq(a: &Value, b: &Value) -> bool {
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
fn json_type_name(v: &Value) -> &'static str {
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

fn str_at<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn bool_at(v: &Value, k: &str) -> bool {
    v.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn arr_at<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn strings_at(v: &Value, k: &str) -> Vec<String> {
    arr_at(v, k)
        .iter()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

/// A cause with an arbitrary kind, for messages the shared constructors don't shape.
fn cause(
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
fn not_supported(field: impl Into<String>, value: Value, supported: &[String]) -> FieldError {
    let detail = if supported.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        format!("supported values: {}", quoted.join(", "))
    };
    cause(FieldErrorKind::NotSupported, field, Some(value), detail)
}

fn immutable(field: impl Into<String>, value: Value) -> FieldError {
    FieldError::invalid(field, value, "field is immutable")
}

// ---------------------------------------------------------------------------------------------
// DNS name rules (k8s.io/apimachinery/pkg/util/validation).
// ---------------------------------------------------------------------------------------------

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn is_dns1123_label_shape(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => alnum(f) && alnum(l) && b.iter().all(|&c| alnum(c) || c == b'-'),
        _ => false,
    }
}

fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if !s.split('.').all(is_dns1123_label_shape) {
        errs.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    errs
}

fn dns1035_label_errors(s: &str) -> Vec<String> {
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

// ---------------------------------------------------------------------------------------------
// The parsed schema.
// ---------------------------------------------------------------------------------------------

/// `additionalProperties`: a bare boolean or a schema.
#[derive(Debug, Clone)]
enum Additional {
    Bool(bool),
    Schema(Box<Schema>),
}

/// A parsed `openAPIV3Schema` node (the root or any node below it).
///
/// The structural part (`properties`, `items`, `additionalProperties` and the
/// `x-kubernetes-*` markers of this node) drives pruning, defaulting and list types; the value
/// validations (including `allOf`/`anyOf`/`oneOf`/`not`) drive [`validate`].
#[derive(Debug, Clone, Default)]
pub struct Schema {
    type_: String,
    /// The format as written, or empty when the server strips it as unsupported.
    format: String,
    nullable: bool,
    default: Option<Value>,
    enum_: Option<Vec<Value>>,
    required: Vec<String>,
    properties: BTreeMap<String, Schema>,
    additional: Option<Additional>,
    items: Option<Box<Schema>>,
    maximum: Option<f64>,
    exclusive_maximum: bool,
    minimum: Option<f64>,
    exclusive_minimum: bool,
    multiple_of: Option<f64>,
    max_length: Option<i64>,
    min_length: Option<i64>,
    pattern: Option<String>,
    /// The compiled pattern; `None` with a pattern set means "not enforceable here".
    regex: Option<Regex>,
    max_items: Option<i64>,
    min_items: Option<i64>,
    unique_items: bool,
    max_properties: Option<i64>,
    min_properties: Option<i64>,
    all_of: Vec<Schema>,
    any_of: Vec<Schema>,
    one_of: Vec<Schema>,
    not: Option<Box<Schema>>,
    preserve_unknown: bool,
    embedded: bool,
    int_or_string: bool,
    list_type: Option<String>,
    list_map_keys: Vec<String>,
}

/// Formats the server keeps (`StripUnsupportedFormatsPostProcessor`); names compared with
/// dashes removed, as go-openapi normalizes them.
const SUPPORTED_FORMATS: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
];

fn opt_f64(m: &Map<String, Value>, k: &str) -> Result<Option<f64>, String> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => Err(format!(
            "{k}: must be a number, not {}",
            json_type_name(other)
        )),
    }
}

fn opt_i64(m: &Map<String, Value>, k: &str) -> Result<Option<i64>, String> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => Ok(Some(i)),
            None => Err(format!("{k}: must be an integer")),
        },
        Some(other) => Err(format!(
            "{k}: must be an integer, not {}",
            json_type_name(other)
        )),
    }
}

fn opt_bool(m: &Map<String, Value>, k: &str) -> Result<bool, String> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(format!(
            "{k}: must be a boolean, not {}",
            json_type_name(other)
        )),
    }
}

fn opt_str(m: &Map<String, Value>, k: &str) -> Result<Option<String>, String> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "{k}: must be a string, not {}",
            json_type_name(other)
        )),
    }
}

fn opt_strings(m: &Map<String, Value>, k: &str) -> Result<Vec<String>, String> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("{k}: must be a list of strings"))
            })
            .collect(),
        Some(other) => Err(format!(
            "{k}: must be a list of strings, not {}",
            json_type_name(other)
        )),
    }
}

fn schema_list(m: &Map<String, Value>, k: &str) -> Result<Vec<Schema>, String> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, v)| Schema::parse(v).map_err(|e| format!("{k}[{i}].{e}")))
            .collect(),
        Some(other) => Err(format!(
            "{k}: must be a list of schemas, not {}",
            json_type_name(other)
        )),
    }
}

impl Schema {
    /// Parses an `openAPIV3Schema` value. Fails on values the server could not decode into a
    /// JSONSchemaProps (wrong JSON types) or would not accept as a structural schema
    /// (`items` as a list).
    pub fn parse(v: &Value) -> Result<Schema, String> {
        let m = v
            .as_object()
            .ok_or_else(|| format!("must be an object, not {}", json_type_name(v)))?;
        let mut s = Schema {
            type_: opt_str(m, "type")?.unwrap_or_default(),
            ..Schema::default()
        };
        let format = opt_str(m, "format")?.unwrap_or_default();
        if SUPPORTED_FORMATS.contains(&format.replace('-', "").as_str()) {
            s.format = format;
        }
        s.nullable = opt_bool(m, "nullable")?;
        s.default = m.get("default").filter(|d| !d.is_null()).cloned();
        s.enum_ = match m.get("enum") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => {
                return Err(format!(
                    "enum: must be a list, not {}",
                    json_type_name(other)
                ));
            }
        };
        s.required = opt_strings(m, "required")?;
        if let Some(p) = m.get("properties").filter(|p| !p.is_null()) {
            let p = p.as_object().ok_or("properties: must be an object")?;
            for (k, sub) in p {
                let parsed = Schema::parse(sub).map_err(|e| format!("properties[{k}].{e}"))?;
                s.properties.insert(k.clone(), parsed);
            }
        }
        s.additional = match m.get("additionalProperties") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(Additional::Bool(*b)),
            Some(sub @ Value::Object(_)) => Some(Additional::Schema(Box::new(
                Schema::parse(sub).map_err(|e| format!("additionalProperties.{e}"))?,
            ))),
            Some(other) => {
                return Err(format!(
                    "additionalProperties: must be a boolean or a schema, not {}",
                    json_type_name(other)
                ));
            }
        };
        s.items = match m.get("items") {
            None | Some(Value::Null) => None,
            Some(sub @ Value::Object(_)) => Some(Box::new(
                Schema::parse(sub).map_err(|e| format!("items.{e}"))?,
            )),
            Some(_) => return Err("items: must be a schema object and not an array".into()),
        };
        s.maximum = opt_f64(m, "maximum")?;
        s.exclusive_maximum = opt_bool(m, "exclusiveMaximum")?;
        s.minimum = opt_f64(m, "minimum")?;
        s.exclusive_minimum = opt_bool(m, "exclusiveMinimum")?;
        s.multiple_of = opt_f64(m, "multipleOf")?;
        s.max_length = opt_i64(m, "maxLength")?;
        s.min_length = opt_i64(m, "minLength")?;
        s.pattern = opt_str(m, "pattern")?;
        if let Some(p) = &s.pattern {
            s.regex = Regex::new(p).ok();
        }
        s.max_items = opt_i64(m, "maxItems")?;
        s.min_items = opt_i64(m, "minItems")?;
        s.unique_items = opt_bool(m, "uniqueItems")?;
        s.max_properties = opt_i64(m, "maxProperties")?;
        s.min_properties = opt_i64(m, "minProperties")?;
        s.all_of = schema_list(m, "allOf")?;
        s.any_of = schema_list(m, "anyOf")?;
        s.one_of = schema_list(m, "oneOf")?;
        s.not = match m.get("not") {
            None | Some(Value::Null) => None,
            Some(sub) => Some(Box::new(
                Schema::parse(sub).map_err(|e| format!("not.{e}"))?,
            )),
        };
        s.preserve_unknown = opt_bool(m, "x-kubernetes-preserve-unknown-fields")?;
        s.embedded = opt_bool(m, "x-kubernetes-embedded-resource")?;
        s.int_or_string = opt_bool(m, "x-kubernetes-int-or-string")?;
        s.list_type = opt_str(m, "x-kubernetes-list-type")?;
        s.list_map_keys = opt_strings(m, "x-kubernetes-list-map-keys")?;
        Ok(s)
    }

    /// The schema of `status`, which the `/status` subresource validates on its own.
    fn status(&self) -> Option<&Schema> {
        self.properties.get("status")
    }

    /// The schema that applies to a field of this object, as pruning and defaulting see it.
    fn field_schema(&self, k: &str) -> FieldSchema<'_> {
        if let Some(p) = self.properties.get(k) {
            return FieldSchema::Known(p);
        }
        match &self.additional {
            Some(Additional::Schema(s)) => FieldSchema::Known(s),
            // `additionalProperties: true|false` keeps the key but knows nothing below it.
            Some(Additional::Bool(_)) => FieldSchema::Unknown,
            None => FieldSchema::Absent,
        }
    }
}

enum FieldSchema<'a> {
    Known(&'a Schema),
    /// Covered by a bare `additionalProperties`: kept, with no schema for what is inside.
    Unknown,
    /// Not in the schema at all.
    Absent,
}

impl ListTypes for Schema {
    fn list_kind(&self, path: &[&str]) -> ListKind {
        let mut node = self;
        for seg in path {
            // List indices are omitted from paths: step through arrays to their items.
            while let Some(items) = &node.items {
                node = items;
            }
            node = match node.field_schema(seg) {
                FieldSchema::Known(s) => s,
                _ => return ListKind::Atomic,
            };
        }
        match node.list_type.as_deref() {
            Some("set") => ListKind::Set,
            Some("map") => ListKind::Map(node.list_map_keys.clone()),
            _ => ListKind::Atomic,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Pruning (pkg/apiserver/schema/pruning) and dropping of non-nullable nulls.
// ---------------------------------------------------------------------------------------------

const META_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

/// The fields of ObjectMeta; anything else inside an embedded resource's `metadata` is dropped
/// when the server round-trips it through the Go type.
const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

fn join_key(parent: &str, k: &str) -> String {
    if parent.is_empty() {
        k.to_string()
    } else {
        format!("{parent}.{k}")
    }
}

/// Drops fields not in the structural schema, as the server does when it decodes a custom
/// resource: `x-kubernetes-preserve-unknown-fields` keeps unknown fields (still pruning inside
/// known ones), `x-kubernetes-embedded-resource` keeps `apiVersion`/`kind`/`metadata` and drops
/// unknown ObjectMeta fields, and at the root `apiVersion`, `kind` and `metadata` are never
/// touched (the caller handles root metadata). Then non-nullable `null` values without a default
/// are removed. Returns the pruned paths, sorted, as `unknown field` warnings name them
/// (`spec.foo`, `spec.items[0].bar`).
pub fn prune(schema: &Schema, obj: &mut Value) -> Vec<String> {
    let mut out = Vec::new();
    prune_node(obj, Some(schema), "", true, &mut out);
    prune_nulls(obj, Some(schema));
    out.sort();
    out
}

fn prune_node(
    x: &mut Value,
    s: Option<&Schema>,
    path: &str,
    embedded_root: bool,
    out: &mut Vec<String>,
) {
    let embedded = embedded_root || s.is_some_and(|s| s.embedded);
    if let Some(s) = s.filter(|s| s.preserve_unknown) {
        skip_prune(x, s, path, embedded, out);
        return;
    }
    match x {
        Value::Object(m) => {
            let Some(s) = s else {
                for k in m.keys() {
                    out.push(join_key(path, k));
                }
                m.clear();
                return;
            };
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    if k == "metadata" && !embedded_root {
                        prune_embedded_meta(m, path, out);
                    }
                    continue;
                }
                let sub_path = join_key(path, &k);
                match s.field_schema(&k) {
                    FieldSchema::Known(sub) => {
                        if let Some(v) = m.get_mut(&k) {
                            prune_node(v, Some(sub), &sub_path, false, out);
                        }
                    }
                    FieldSchema::Unknown => {
                        if let Some(v) = m.get_mut(&k) {
                            prune_node(v, None, &sub_path, false, out);
                        }
                    }
                    FieldSchema::Absent => {
                        out.push(sub_path);
                        m.remove(&k);
                    }
                }
            }
        }
        Value::Array(a) => {
            let items = s.and_then(|s| s.items.as_deref());
            for (i, v) in a.iter_mut().enumerate() {
                prune_node(v, items, &format!("{path}[{i}]"), false, out);
            }
        }
        _ => {}
    }
}

/// Under `x-kubernetes-preserve-unknown-fields`: unknown fields stay, known ones are pruned.
fn skip_prune(x: &mut Value, s: &Schema, path: &str, embedded: bool, out: &mut Vec<String>) {
    match x {
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    if k == "metadata" && !path.is_empty() {
                        prune_embedded_meta(m, path, out);
                    }
                    continue;
                }
                let sub_path = join_key(path, &k);
                let sub = match s.field_schema(&k) {
                    FieldSchema::Known(sub) => Some(sub),
                    FieldSchema::Unknown => None,
                    FieldSchema::Absent => continue,
                };
                if let Some(v) = m.get_mut(&k) {
                    prune_node(v, sub, &sub_path, false, out);
                }
            }
        }
        Value::Array(a) => {
            // The server keeps skipping (not pruning) into the items of a preserved array.
            if let Some(items) = s.items.as_deref() {
                for (i, v) in a.iter_mut().enumerate() {
                    skip_prune(v, items, &format!("{path}[{i}]"), items.embedded, out);
                }
            }
        }
        _ => {}
    }
}

/// An embedded resource's metadata goes through the ObjectMeta Go type: unknown keys vanish.
fn prune_embedded_meta(parent: &mut Map<String, Value>, path: &str, out: &mut Vec<String>) {
    let Some(Value::Object(meta)) = parent.get_mut("metadata") else {
        return;
    };
    let unknown: Vec<String> = meta
        .keys()
        .filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str()))
        .cloned()
        .collect();
    for k in unknown {
        out.push(format!("{}.{k}", join_key(path, "metadata")));
        meta.remove(&k);
    }
}

/// `PruneNonNullableNullsWithoutDefaults`: a `null` for a known, non-nullable field without a
/// default is dropped (one with a default is left for defaulting to replace). Nulls inside
/// arrays are kept and fail validation.
fn prune_nulls(x: &mut Value, s: Option<&Schema>) {
    match x {
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                let sub = match s.map(|s| s.field_schema(&k)) {
                    Some(FieldSchema::Known(sub)) => Some(sub),
                    _ => None,
                };
                let drop = m.get(&k).is_some_and(Value::is_null)
                    && sub.is_some_and(|sub| !sub.nullable && sub.default.is_none());
                if drop {
                    m.remove(&k);
                } else if let Some(v) = m.get_mut(&k) {
                    prune_nulls(v, sub);
                }
            }
        }
        Value::Array(a) => {
            let items = s.and_then(|s| s.items.as_deref());
            for v in a.iter_mut() {
                prune_nulls(v, items);
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Defaulting (pkg/apiserver/schema/defaulting).
// ---------------------------------------------------------------------------------------------

/// Applies `default:` values, as the server does after pruning on create and update and again
/// whenever it reads an object from storage. A missing field, or a `null` in a non-nullable
/// field, gets its default; defaults apply inside array items and `additionalProperties`
/// values too, and a default object is itself defaulted further down.
pub fn apply_defaults(schema: &Schema, obj: &mut Value) {
    default_node(obj, schema);
}

fn is_non_nullable_null(x: &Value, s: &Schema) -> bool {
    x.is_null() && !s.nullable
}

fn default_node(x: &mut Value, s: &Schema) {
    match x {
        Value::Object(m) => {
            for (k, prop) in &s.properties {
                let Some(d) = &prop.default else { continue };
                let missing = match m.get(k) {
                    None => true,
                    Some(v) => is_non_nullable_null(v, prop),
                };
                if missing {
                    m.insert(k.clone(), d.clone());
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    default_node(v, prop);
                } else if let Some(Additional::Schema(ap)) = &s.additional {
                    if let Some(d) = ap.default.as_ref().filter(|_| is_non_nullable_null(v, ap)) {
                        *v = d.clone();
                    }
                    default_node(v, ap);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = s.items.as_deref() {
                for v in a.iter_mut() {
                    if let Some(d) = items
                        .default
                        .as_ref()
                        .filter(|_| is_non_nullable_null(v, items))
                    {
                        *v = d.clone();
                    }
                    default_node(v, items);
                }
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Validation of custom resources (kube-openapi's validator as the server configures it, then
// embedded-resource and list-type checks).
// ---------------------------------------------------------------------------------------------

/// Where errors are reported: kube-openapi names a value by its path from the validated root
/// (`spec.replicas`), and the server prefixes that with the validator's field path, which is
/// nil for whole objects (printed `<nil>` when the error names no field) and `status` for the
/// status subresource.
struct Ctx<'a> {
    prefix: Option<&'a str>,
}

impl Ctx<'_> {
    fn field(&self, name: &str) -> String {
        let name = name.strip_prefix('.').unwrap_or(name);
        match (self.prefix, name.is_empty()) {
            (Some(p), true) => p.to_string(),
            (Some(p), false) => child(p, name),
            (None, true) => "<nil>".to_string(),
            (None, false) => name.to_string(),
        }
    }

    fn whole(&self) -> String {
        self.prefix.unwrap_or("<nil>").to_string()
    }
}

/// Validates a custom resource against its schema, with the server's messages, e.g.
/// `spec.logLevel: Unsupported value: "Foo": supported values: "Normal", "Debug"` or
/// `spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer:
/// "string"`. Also checks embedded resources (`apiVersion`/`kind`) and the uniqueness rules of
/// `x-kubernetes-list-type: set|map`. Call it after [`prune`] and [`apply_defaults`].
/// `x-kubernetes-validations` (CEL) rules are not evaluated. Type metadata (`apiVersion`/`kind`
/// matching the CRD) and root ObjectMeta are the caller's to check.
pub fn validate(schema: &Schema, obj: &Value) -> Vec<FieldError> {
    let mut out = Vec::new();
    check(schema, obj, "", &Ctx { prefix: None }, &mut out);
    embedded_checks(obj, schema, "", true, &mut out);
    list_checks(obj, schema, "", &mut out);
    out
}

/// Validates `obj.status` against the schema of `status`, as an update through the `/status`
/// subresource does: field paths start with `status.` but kube-openapi's messages name the
/// value relative to `status` (`status.replicas: Invalid value: "string": replicas in body
/// must be of type integer: "string"`).
pub fn validate_status(schema: &Schema, obj: &Value) -> Vec<FieldError> {
    let mut out = Vec::new();
    let (Some(status_schema), Some(status)) = (schema.status(), obj.get("status")) else {
        return out;
    };
    check(
        status_schema,
        status,
        "",
        &Ctx {
            prefix: Some("status"),
        },
        &mut out,
    );
    embedded_checks(status, status_schema, "status", false, &mut out);
    list_checks(status, status_schema, "status", &mut out);
    out
}

fn type_invalid(ctx: &Ctx, path: &str, type_name: &str, value: &str) -> FieldError {
    FieldError::type_invalid(
        ctx.field(path),
        Value::String(value.to_string()),
        format!(
            "{path} in body must be of type {type_name}: {}",
            go_quote(value)
        ),
    )
}

fn is_json_integer(f: f64) -> bool {
    f.is_finite() && f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0
}

/// kube-openapi's type validator (with the server's `x-kubernetes-int-or-string` expansion).
fn check_type(s: &Schema, x: &Value, path: &str, ctx: &Ctx, out: &mut Vec<FieldError>) {
    let types: Vec<&str> = if s.int_or_string {
        vec!["integer", "string"]
    } else if s.type_.is_empty() {
        vec![]
    } else {
        vec![s.type_.as_str()]
    };
    if types.is_empty() && s.format.is_empty() {
        return;
    }
    if x.is_null() {
        if !types.is_empty() && !s.nullable {
            out.push(type_invalid(ctx, path, &types.join(","), "null"));
        }
        return;
    }
    let sch_type = json_type_name(x);
    let value_format = match x {
        Value::Number(n) => match num_of(n) {
            Num::Int(_) => "int64",
            Num::Float(_) => "float64",
        },
        _ => "",
    };
    let contains = |t: &str| types.contains(&t);
    let is_float_int = match x {
        Value::Number(n) => match num_of(n) {
            Num::Float(f) => is_json_integer(f) && contains("integer"),
            Num::Int(_) => false,
        },
        _ => false,
    };
    let is_int_float = sch_type == "integer" && contains("number");
    let is_string_or_array = matches!(x, Value::String(_) | Value::Array(_));
    let format_checked = !s.format.is_empty() && !is_string_or_array;
    let matches_type_or_format =
        contains(sch_type) || value_format == s.format || is_float_int || is_int_float;
    if format_checked && !matches_type_or_format {
        out.push(type_invalid(ctx, path, &s.format, value_format));
        return;
    }
    let numeric = contains("number") || contains("integer");
    // A string format on a string (or array) value skips the type check entirely.
    let string_format = !s.format.is_empty() && is_string_or_array;
    if string_format && !numeric {
        return;
    }
    if !(contains(sch_type) || is_float_int || is_int_float) {
        out.push(type_invalid(ctx, path, &types.join(","), sch_type));
    }
}

/// One node of kube-openapi's `SchemaValidator.Validate`, in its order: type, allOf/anyOf/
/// oneOf/not, string, format, number, array, enum, object.
fn check(s: &Schema, x: &Value, path: &str, ctx: &Ctx, out: &mut Vec<FieldError>) {
    check_type(s, x, path, ctx, out);
    if x.is_null() {
        check_enum(s, x, path, ctx, out);
        return;
    }
    check_junctors(s, x, path, ctx, out);
    match x {
        Value::String(v) => {
            check_string(s, v, path, ctx, out);
            if !s.format.is_empty() && !format_ok(&s.format, v) {
                out.push(FieldError::type_invalid(
                    ctx.field(path),
                    x.clone(),
                    format!(
                        "{path} in body must be of type {}: {}",
                        s.format,
                        go_quote(v)
                    ),
                ));
            }
        }
        Value::Number(n) => check_number(s, num_of(n), path, ctx, out),
        Value::Array(a) => {
            if let Some(items) = s.items.as_deref() {
                for (i, v) in a.iter().enumerate() {
                    check(items, v, &format!("{path}[{i}]"), ctx, out);
                }
            }
            let size = a.len() as i64;
            if let Some(min) = s.min_items.filter(|&m| size < m) {
                out.push(FieldError::invalid(
                    ctx.field(path),
                    Value::from(size),
                    format!("{path} in body should have at least {min} items"),
                ));
            }
            if let Some(max) = s.max_items.filter(|&m| size > m) {
                out.push(too_many(ctx.field(path), size, max));
            }
            if s.unique_items
                && a.iter()
                    .enumerate()
                    .any(|(i, v)| a.iter().take(i).any(|u| json_eq(u, v)))
            {
                out.push(FieldError::invalid(
                    ctx.field(path),
                    Value::String(String::new()),
                    format!("{path} in body shouldn't contain duplicates"),
                ));
            }
        }
        _ => {}
    }
    check_enum(s, x, path, ctx, out);
    if let Value::Object(m) = x {
        check_object(s, m, path, ctx, out);
    }
}

/// `field.TooMany`. The shared FieldErrorKind has no "Too many" kind yet, so this is reported
/// as an Invalid value with the server's detail text.
fn too_many(field: String, actual: i64, max: i64) -> FieldError {
    FieldError::invalid(
        field,
        Value::from(actual),
        format!("must have at most {max} items"),
    )
}

fn check_string(s: &Schema, v: &str, path: &str, ctx: &Ctx, out: &mut Vec<FieldError>) {
    let len = v.chars().count() as i64;
    if let Some(max) = s.max_length.filter(|&m| len > m) {
        out.push(FieldError::too_long(
            ctx.field(path),
            Value::String(String::new()),
            max.max(0) as usize,
        ));
        return;
    }
    if let Some(min) = s.min_length.filter(|&m| len < m) {
        out.push(FieldError::invalid(
            ctx.field(path),
            Value::String(v.to_string()),
            format!("{path} in body should be at least {min} chars long"),
        ));
        return;
    }
    if let (Some(p), Some(re)) = (&s.pattern, &s.regex)
        && !re.is_match(v)
    {
        out.push(FieldError::invalid(
            ctx.field(path),
            Value::String(v.to_string()),
            format!("{path} in body should match '{p}'"),
        ));
    }
}

fn check_number(s: &Schema, n: Num, path: &str, ctx: &Ctx, out: &mut Vec<FieldError>) {
    let value = match n {
        Num::Int(i) => Value::from(i),
        Num::Float(f) => serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
    };
    let invalid = |detail: String| FieldError::invalid(ctx.field(path), value.clone(), detail);
    if let Some(factor) = s.multiple_of {
        match n {
            Num::Int(i) => {
                let f = factor as i64;
                if f <= 0 {
                    out.push(invalid(format!(
                        "factor MultipleOf declared for {path} must be positive: {f}"
                    )));
                } else if i % f != 0 {
                    out.push(invalid(format!(
                        "{path} in body should be a multiple of {f}"
                    )));
                }
            }
            Num::Float(d) => {
                if factor <= 0.0 {
                    out.push(invalid(format!(
                        "factor MultipleOf declared for {path} must be positive: {}",
                        go_float(factor)
                    )));
                } else {
                    let mult = if factor < 1.0 {
                        1.0 / factor * d
                    } else {
                        d / factor
                    };
                    if !is_json_integer(mult) {
                        out.push(invalid(format!(
                            "{path} in body should be a multiple of {}",
                            go_float(factor)
                        )));
                    }
                }
            }
        }
    }
    if let Some(min) = s.minimum {
        let excl = s.exclusive_minimum;
        let (fails, shown) = match n {
            Num::Int(i) => {
                let m = min as i64;
                (if excl { i <= m } else { i < m }, m.to_string())
            }
            Num::Float(d) => (if excl { d <= min } else { d < min }, go_float(min)),
        };
        if fails {
            let op = if excl {
                "greater than"
            } else {
                "greater than or equal to"
            };
            out.push(invalid(format!("{path} in body should be {op} {shown}")));
        }
    }
    if let Some(max) = s.maximum {
        let excl = s.exclusive_maximum;
        let (fails, shown) = match n {
            Num::Int(i) => {
                let m = max as i64;
                (if excl { i >= m } else { i > m }, m.to_string())
            }
            Num::Float(d) => (if excl { d >= max } else { d > max }, go_float(max)),
        };
        if fails {
            let op = if excl {
                "less than"
            } else {
                "less than or equal to"
            };
            out.push(invalid(format!("{path} in body should be {op} {shown}")));
        }
    }
}

fn check_enum(s: &Schema, x: &Value, path: &str, ctx: &Ctx, out: &mut Vec<FieldError>) {
    let Some(values) = s.enum_.as_ref().filter(|e| !e.is_empty()) else {
        return;
    };
    // A null never matches (Go's reflect sees no value to compare).
    if !x.is_null() && values.iter().any(|e| json_eq(e, x)) {
        return;
    }
    let shown: Vec<String> = values
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string())
        })
        .collect();
    out.push(not_supported(ctx.field(path), x.clone(), &shown));
}

fn check_object(
    s: &Schema,
    m: &Map<String, Value>,
    path: &str,
    ctx: &Ctx,
    out: &mut Vec<FieldError>,
) {
    let n = m.len() as i64;
    if let Some(min) = s.min_properties.filter(|&v| n < v) {
        out.push(FieldError::invalid(
            ctx.field(path),
            Value::from(n),
            format!("{path} in body should have at least {min} properties"),
        ));
    }
    if let Some(max) = s.max_properties.filter(|&v| n > v) {
        out.push(too_many(ctx.field(path), n, max));
    }
    match &s.additional {
        Some(Additional::Bool(false)) => {
            for k in m.keys().filter(|k| !s.properties.contains_key(*k)) {
                out.push(FieldError::invalid(
                    ctx.field(path),
                    Value::String(k.clone()),
                    format!("{path}.{k} in body is a forbidden property"),
                ));
            }
        }
        Some(Additional::Schema(ap)) => {
            for (k, v) in m.iter().filter(|(k, _)| !s.properties.contains_key(*k)) {
                check(ap, v, &format!("{path}.{k}"), ctx, out);
            }
        }
        _ => {}
    }
    for (k, prop) in &s.properties {
        if let Some(v) = m.get(k) {
            check(prop, v, &join_key(path, k), ctx, out);
        }
    }
    for k in &s.required {
        if !m.contains_key(k) {
            out.push(FieldError::required(ctx.field(&format!("{path}.{k}")), ""));
        }
    }
}

/// allOf / anyOf / oneOf / not. kube-openapi keeps the errors of the "best" failing branch; it
/// ranks branches by a count of passed checks, approximated here by the fewest errors.
fn check_junctors(s: &Schema, x: &Value, path: &str, ctx: &Ctx, out: &mut Vec<FieldError>) {
    let run = |sub: &Schema| {
        let mut errs = Vec::new();
        check(sub, x, path, ctx, &mut errs);
        errs
    };
    let composite =
        |detail: String| FieldError::invalid(ctx.whole(), Value::String(String::new()), detail);
    if !s.any_of.is_empty() {
        let mut best: Option<Vec<FieldError>> = None;
        let mut ok = false;
        for sub in &s.any_of {
            let errs = run(sub);
            if errs.is_empty() {
                ok = true;
                break;
            }
            if best.as_ref().is_none_or(|b| errs.len() < b.len()) {
                best = Some(errs);
            }
        }
        if !ok {
            out.push(composite(format!(
                "{} must validate at least one schema (anyOf)",
                go_quote(path)
            )));
            out.extend(best.unwrap_or_default());
        }
    }
    if !s.one_of.is_empty() {
        let mut best: Option<Vec<FieldError>> = None;
        let mut valid = 0;
        for sub in &s.one_of {
            let errs = run(sub);
            if errs.is_empty() {
                valid += 1;
                best = None;
            } else if valid == 0 && best.as_ref().is_none_or(|b| errs.len() < b.len()) {
                best = Some(errs);
            }
        }
        if valid != 1 {
            let extra = if valid == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {valid} valid alternatives")
            };
            out.push(composite(format!(
                "{} must validate one and only one schema (oneOf). {extra}",
                go_quote(path)
            )));
            out.extend(best.unwrap_or_default());
        }
    }
    if !s.all_of.is_empty() {
        let mut valid = 0;
        for sub in &s.all_of {
            let errs = run(sub);
            if errs.is_empty() {
                valid += 1;
            }
            out.extend(errs);
        }
        if valid != s.all_of.len() {
            let extra = if valid == 0 { ". None validated" } else { "" };
            out.push(composite(format!(
                "{} must validate all the schemas (allOf){extra}",
                go_quote(path)
            )));
        }
    }
    if let Some(not) = &s.not
        && run(not).is_empty()
    {
        out.push(composite(format!(
            "{} must not validate the schema (not)",
            go_quote(path)
        )));
    }
}

/// `objectmeta.Validate`: embedded resources need a string `apiVersion` and `kind`.
fn embedded_checks(x: &Value, s: &Schema, path: &str, is_root: bool, out: &mut Vec<FieldError>) {
    match x {
        Value::Object(m) => {
            if s.embedded && !is_root {
                if !m.contains_key("apiVersion") {
                    out.push(FieldError::required(
                        child(path, "apiVersion"),
                        "must not be empty",
                    ));
                }
                if !m.contains_key("kind") {
                    out.push(FieldError::required(
                        child(path, "kind"),
                        "must not be empty",
                    ));
                }
                if let Some(v) = m.get("apiVersion") {
                    let f = child(path, "apiVersion");
                    match v.as_str() {
                        None => out.push(FieldError::invalid(f, v.clone(), "must be a string")),
                        Some("") => {
                            out.push(FieldError::invalid(f, v.clone(), "must not be empty"))
                        }
                        Some(gv) if gv.matches('/').count() > 1 => out.push(FieldError::invalid(
                            f,
                            v.clone(),
                            format!("unexpected GroupVersion string: {gv}"),
                        )),
                        Some(_) => {}
                    }
                }
                if let Some(v) = m.get("kind") {
                    let f = child(path, "kind");
                    match v.as_str() {
                        None => out.push(FieldError::invalid(f, v.clone(), "must be a string")),
                        Some("") => {
                            out.push(FieldError::invalid(f, v.clone(), "must not be empty"))
                        }
                        Some(k) => {
                            let errs = dns1035_label_errors(&k.to_lowercase());
                            if !errs.is_empty() {
                                out.push(FieldError::invalid(
                                    f,
                                    v.clone(),
                                    format!(
                                        "may have mixed case, but should otherwise match: {}",
                                        errs.join(",")
                                    ),
                                ));
                            }
                        }
                    }
                }
            }
            for (k, v) in m {
                match s.field_schema(k) {
                    FieldSchema::Known(sub) if s.properties.contains_key(k) => {
                        embedded_checks(v, sub, &child(path, k), false, out)
                    }
                    FieldSchema::Known(sub) => embedded_checks(v, sub, &key(path, k), false, out),
                    _ => {}
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = s.items.as_deref() {
                for (i, v) in a.iter().enumerate() {
                    embedded_checks(v, items, &index(path, i), false, out);
                }
            }
        }
        _ => {}
    }
}

/// `listtype.ValidateListSetsAndMaps`: duplicates in sets and duplicate keys in maps.
fn list_checks(x: &Value, s: &Schema, path: &str, out: &mut Vec<FieldError>) {
    match x {
        Value::Object(m) => {
            for (k, v) in m {
                if let Some(sub) = s.properties.get(k) {
                    list_checks(v, sub, &child(path, k), out);
                } else if let Some(Additional::Schema(ap)) = &s.additional {
                    list_checks(v, ap, &key(path, k), out);
                }
            }
        }
        Value::Array(a) => {
            match s.list_type.as_deref() {
                Some("set") => {
                    for i in duplicate_indices(a) {
                        if let Some(v) = a.get(i) {
                            out.push(FieldError::duplicate(index(path, i), v.clone()));
                        }
                    }
                }
                Some("map") => list_map_checks(a, s, path, out),
                _ => {}
            }
            if let Some(items) = s.items.as_deref() {
                for (i, v) in a.iter().enumerate() {
                    list_checks(v, items, &index(path, i), out);
                }
            }
        }
        _ => {}
    }
}

/// Indices of the second occurrence of each repeated value (later repeats are not reported).
fn duplicate_indices(a: &[Value]) -> Vec<usize> {
    let mut seen: Vec<(&Value, usize)> = Vec::new();
    let mut out = Vec::new();
    for (i, v) in a.iter().enumerate() {
        match seen.iter_mut().find(|(u, _)| json_strict_eq(u, v)) {
            Some((_, times)) => {
                *times += 1;
                if *times == 2 {
                    out.push(i);
                }
            }
            None => seen.push((v, 1)),
        }
    }
    out
}

/// Go compares set members with `==` on decoded values, so int64 1 and float64 1.0 differ.
fn json_strict_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => num_of(x) == num_of(y),
        _ => a == b,
    }
}

fn list_map_checks(a: &[Value], s: &Schema, path: &str, out: &mut Vec<FieldError>) {
    for (i, x) in a.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            out.push(FieldError::invalid(
                index(path, i),
                x.clone(),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if a.len() <= 1 {
        return;
    }
    let keys: Vec<Value> = a
        .iter()
        .map(|x| {
            let mut key = Map::new();
            if let Value::Object(m) = x {
                for k in &s.list_map_keys {
                    if let Some(v) = m.get(k) {
                        key.insert(k.clone(), v.clone());
                    }
                }
            }
            Value::Object(key)
        })
        .collect();
    for i in duplicate_indices(&keys) {
        if let Some(k) = keys.get(i) {
            out.push(FieldError::duplicate(index(path, i), k.clone()));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// String formats the server checks (go-openapi strfmt as kube-openapi configures it).
// ---------------------------------------------------------------------------------------------

fn format_ok(format: &str, v: &str) -> bool {
    match format.replace('-', "").as_str() {
        "datetime" => is_date_time(v),
        "date" => is_date(v),
        "uuid" => is_uuid(v, None),
        "uuid3" => is_uuid(v, Some('3')),
        "uuid4" => is_uuid(v, Some('4')),
        "uuid5" => is_uuid(v, Some('5')),
        "ipv4" => parse_ipv4(v).is_some(),
        "ipv6" => v.contains(':') && parse_ipv6(v),
        "cidr" => is_cidr(v),
        "mac" => is_mac(v),
        "hostname" => is_hostname(v),
        "byte" => is_base64(v),
        "email" => is_email(v),
        "uri" => is_request_uri(v),
        "hexcolor" => is_hexcolor(v),
        "ssn" => is_ssn(v),
        "bsonobjectid" => v.len() == 24 && v.bytes().all(|b| b.is_ascii_hexdigit()),
        // password accepts anything; isbn, creditcard, rgbcolor and duration are not checked
        // by kube-sim (documented difference).
        _ => true,
    }
}

fn digits(s: &str, n: usize) -> Option<u32> {
    if s.len() == n && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

fn is_date(v: &str) -> bool {
    let parts: Vec<&str> = v.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return false;
    };
    let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// strfmt's `IsDateTime`: a full date, `t`, then `hh:mm:ss[.frac](z|±hh:mm)`.
fn is_date_time(v: &str) -> bool {
    if v.len() < 4 {
        return false;
    }
    let lower = v.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let b = time.as_bytes();
    let two = |i: usize| b.get(i..i + 2).filter(|d| d.iter().all(u8::is_ascii_digit));
    let (Some(h), Some(m), Some(s)) = (two(0), two(3), two(6)) else {
        return false;
    };
    if b.get(2) != Some(&b':') || b.get(5) != Some(&b':') {
        return false;
    }
    let mut i = 8;
    if b.get(i)
        .is_some_and(|&c| c != b'z' && c != b'+' && c != b'-')
    {
        // `(.[0-9]+)?`: any one character then digits.
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    let zone_ok = match b.get(i) {
        Some(b'z') => i + 1 == b.len(),
        Some(b'+') | Some(b'-') => {
            i + 6 == b.len()
                && two(i + 1).is_some()
                && b.get(i + 3) == Some(&b':')
                && two(i + 4).is_some()
        }
        _ => false,
    };
    zone_ok && h <= b"23".as_slice() && m <= b"59".as_slice() && s <= b"59".as_slice()
}

fn is_uuid(v: &str, version: Option<char>) -> bool {
    let hex: String = v.chars().filter(|&c| c != '-').collect();
    // Dashes are optional but only at the canonical places.
    let groups = [8, 4, 4, 4, 12];
    let mut rest = v;
    for (gi, n) in groups.iter().enumerate() {
        let Some(g) = rest.get(..*n) else {
            return false;
        };
        if !g.bytes().all(|b| b.is_ascii_hexdigit()) {
            return false;
        }
        rest = rest.get(*n..).unwrap_or("");
        if gi < 4 {
            rest = rest.strip_prefix('-').unwrap_or(rest);
        }
    }
    if !rest.is_empty() || hex.len() != 32 {
        return false;
    }
    match version {
        None => true,
        Some(ver) => {
            let c = hex.chars().nth(12);
            let variant = hex.chars().nth(16).map(|c| c.to_ascii_lowercase());
            c == Some(ver) && (ver == '3' || matches!(variant, Some('8' | '9' | 'a' | 'b')))
        }
    }
}

/// Go's lenient ("sloppy") IPv4 parse: four decimal parts, leading zeros allowed.
fn parse_ipv4(v: &str) -> Option<[u8; 4]> {
    let parts: Vec<&str> = v.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut out = [0u8; 4];
    for (o, p) in out.iter_mut().zip(&parts) {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = p.parse::<u8>().ok()?;
    }
    Some(out)
}

fn parse_ipv6(v: &str) -> bool {
    v.parse::<std::net::Ipv6Addr>().is_ok()
}

fn is_cidr(v: &str) -> bool {
    let Some((ip, bits)) = v.split_once('/') else {
        return false;
    };
    let Some(bits) =
        (!bits.is_empty() && bits.len() <= 3 && bits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| bits.parse::<u32>().ok())
            .flatten()
    else {
        return false;
    };
    if parse_ipv4(ip).is_some() {
        bits <= 32
    } else {
        ip.contains(':') && parse_ipv6(ip) && bits <= 128
    }
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx…`, `xx-xx…` or `xxxx.xxxx…`.
fn is_mac(v: &str) -> bool {
    let ok_len = |n: usize| n == 6 || n == 8 || n == 20;
    for sep in [':', '-'] {
        let parts: Vec<&str> = v.split(sep).collect();
        if parts.len() > 1 {
            return ok_len(parts.len())
                && parts
                    .iter()
                    .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()));
        }
    }
    let parts: Vec<&str> = v.split('.').collect();
    parts.len() > 1
        && ok_len(parts.len() * 2)
        && parts
            .iter()
            .all(|p| p.len() == 4 && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// strfmt's hostname rule for ASCII names: labels of letters, digits and inner dashes, a final
/// label of letters only (2-63), at most 255 characters.
fn is_hostname(v: &str) -> bool {
    if v.is_empty() || v.len() > 255 {
        return false;
    }
    let labels: Vec<&str> = v.split('.').collect();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && l.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric)
    };
    match labels.as_slice() {
        [single] => {
            label_ok(single)
                && single
                    .as_bytes()
                    .last()
                    .is_some_and(u8::is_ascii_alphanumeric)
        }
        [init @ .., last] => {
            init.iter()
                .all(|l| label_ok(l) && l.as_bytes().last().is_some_and(u8::is_ascii_alphanumeric))
                && (2..=63).contains(&last.len())
                && last.bytes().all(|b| b.is_ascii_alphabetic())
        }
        [] => false,
    }
}

fn is_base64(v: &str) -> bool {
    let b = v.as_bytes();
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return false;
    }
    let alpha = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let pad = b.iter().rev().take_while(|&&c| c == b'=').count();
    pad <= 2
        && b.get(..b.len() - pad)
            .is_some_and(|body| body.iter().all(|&c| alpha(c)))
}

/// An approximation of Go's `net/mail.ParseAddress`: one `@`, non-empty local part and domain,
/// optionally wrapped as `Name <local@domain>`.
fn is_email(v: &str) -> bool {
    let addr = match (v.rfind('<'), v.strip_suffix('>')) {
        (Some(i), Some(inner)) => inner.get(i + 1..).unwrap_or(""),
        _ => v.trim(),
    };
    match addr.rsplit_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.is_empty()
                && !addr
                    .chars()
                    .any(|c| c.is_whitespace() || c == '<' || c == '>')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }
        None => false,
    }
}

/// Go's `url.ParseRequestURI`: an absolute URI (`scheme:…`) or an absolute path.
fn is_request_uri(v: &str) -> bool {
    if v.starts_with('/') {
        return !v.contains(' ');
    }
    match v.split_once(':') {
        Some((scheme, rest)) => {
            scheme
                .as_bytes()
                .first()
                .is_some_and(u8::is_ascii_alphabetic)
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.')
                && !rest.is_empty()
                && !v.contains(' ')
        }
        None => false,
    }
}

fn is_hexcolor(v: &str) -> bool {
    let h = v.strip_prefix('#').unwrap_or(v);
    (h.len() == 3 || h.len() == 6) && h.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_ssn(v: &str) -> bool {
    let d: Vec<char> = v.chars().filter(|c| c.is_ascii_digit()).collect();
    let seps = v.chars().filter(|c| !c.is_ascii_digit()).count();
    d.len() == 9 && (seps == 0 || (seps == 2 && v.len() == 11 && !v.starts_with(['-', ' '])))
}

// ---------------------------------------------------------------------------------------------
// The CRD object itself: defaults, validation, and what serving it needs.
// ---------------------------------------------------------------------------------------------

/// What kube-sim needs to serve one CRD version.
#[derive(Debug, Clone)]
pub struct ServedVersion {
    pub name: String,
    pub storage: bool,
    pub status_subresource: bool,
    /// The `subresources.scale` object (specReplicasPath, statusReplicasPath, labelSelectorPath).
    pub scale_subresource: Option<Value>,
    pub schema: Option<Schema>,
    pub printer_columns: Vec<Value>,
}

/// What kube-sim needs to serve a CRD.
#[derive(Debug, Clone)]
pub struct CrdInfo {
    pub group: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    /// Served versions only, in spec order.
    pub versions: Vec<ServedVersion>,
}

/// Reads a (valid) CRD. Fails with a plain message on a CRD that [`validate_crd`] would reject
/// in ways that make it unservable.
pub fn crd_info(crd: &Value) -> Result<CrdInfo, String> {
    let mut crd = crd.clone();
    set_crd_defaults(&mut crd);
    let spec = crd
        .get("spec")
        .filter(|s| s.is_object())
        .ok_or("spec: must be an object")?;
    let names = spec
        .get("names")
        .filter(|s| s.is_object())
        .ok_or("spec.names: must be an object")?;
    let need = |v: &Value, k: &str, what: &str| -> Result<String, String> {
        str_at(v, k)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| format!("{what}: Required value"))
    };
    let mut versions = Vec::new();
    for (i, v) in arr_at(spec, "versions").iter().enumerate() {
        if !bool_at(v, "served") {
            continue;
        }
        let schema = match v.get("schema").and_then(|s| s.get("openAPIV3Schema")) {
            Some(s) => Some(
                Schema::parse(s)
                    .map_err(|e| format!("spec.versions[{i}].schema.openAPIV3Schema.{e}"))?,
            ),
            None => None,
        };
        let sub = v.get("subresources");
        versions.push(ServedVersion {
            name: need(v, "name", &format!("spec.versions[{i}].name"))?,
            storage: bool_at(v, "storage"),
            status_subresource: sub
                .and_then(|s| s.get("status"))
                .is_some_and(|s| !s.is_null()),
            scale_subresource: sub
                .and_then(|s| s.get("scale"))
                .filter(|s| !s.is_null())
                .cloned(),
            schema,
            printer_columns: arr_at(v, "additionalPrinterColumns").to_vec(),
        });
    }
    Ok(CrdInfo {
        group: need(spec, "group", "spec.group")?,
        plural: need(names, "plural", "spec.names.plural")?,
        singular: need(names, "singular", "spec.names.singular")?,
        kind: need(names, "kind", "spec.names.kind")?,
        list_kind: need(names, "listKind", "spec.names.listKind")?,
        short_names: strings_at(names, "shortNames"),
        categories: strings_at(names, "categories"),
        namespaced: str_at(spec, "scope") != Some("Cluster"),
        versions,
    })
}

/// The v1 defaulting of a CRD (`SetDefaults_CustomResourceDefinition`).
fn set_crd_defaults(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if names
            .get("singular")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            names.insert("singular".into(), Value::String(kind.to_lowercase()));
        }
        if names
            .get("listKind")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
            && !kind.is_empty()
        {
            names.insert("listKind".into(), Value::String(format!("{kind}List")));
        }
    }
    match spec.get_mut("conversion") {
        Some(Value::Object(conv)) => {
            if let Some(Value::Object(service)) = conv
                .get_mut("webhook")
                .and_then(|w| w.get_mut("clientConfig"))
                .and_then(|c| c.get_mut("service"))
            {
                service.entry("port").or_insert(Value::from(443));
            }
        }
        _ => {
            spec.insert("conversion".into(), serde_json::json!({"strategy": "None"}));
        }
    }
}

fn storage_version(crd: &Value) -> Option<String> {
    crd.get("spec")
        .map(|s| arr_at(s, "versions"))
        .unwrap_or(&[])
        .iter()
        .find(|v| bool_at(v, "storage"))
        .and_then(|v| str_at(v, "name"))
        .map(str::to_string)
}

/// What the server does to a CRD before validating and storing it: the v1 defaults
/// (`names.singular`, `names.listKind`, `conversion.strategy: None`, webhook service port 443),
/// and `status` (reset on create, carried over from `old` on update) with the storage version
/// added to `status.storedVersions`. Generation and the controllers' conditions and
/// `acceptedNames` are the caller's.
pub fn prepare_crd(crd: &mut Value, old: Option<&Value>) {
    set_crd_defaults(crd);
    let mut stored: Vec<Value> = match old {
        None => Vec::new(),
        Some(o) => o
            .get("status")
            .map(|s| arr_at(s, "storedVersions").to_vec())
            .unwrap_or_default(),
    };
    if let Some(sv) = storage_version(crd)
        && !stored.iter().any(|v| v.as_str() == Some(&sv))
    {
        stored.push(Value::String(sv));
    }
    let mut status = match old.and_then(|o| o.get("status")) {
        Some(Value::Object(s)) => s.clone(),
        _ => Map::new(),
    };
    status.insert("storedVersions".into(), Value::Array(stored));
    if let Some(m) = crd.as_object_mut() {
        m.insert("status".into(), Value::Object(status));
    }
}

fn is_established(crd: &Value) -> bool {
    crd.get("status")
        .map(|s| arr_at(s, "conditions"))
        .unwrap_or(&[])
        .iter()
        .any(|c| str_at(c, "type") == Some("Established") && str_at(c, "status") == Some("True"))
}

/// How the v1 CRD looks once the server converts it to its internal form: per-version
/// schema, subresources and printer columns that are identical in every version move to the
/// top level, so errors about them are reported under `spec.validation`, `spec.subresources`,
/// `spec.additionalPrinterColumns` instead of `spec.versions[i]`.
struct Hoisted<'a> {
    versions: &'a [Value],
    schema: Option<Option<&'a Value>>,
    subresources: Option<Option<&'a Value>>,
    columns: Option<&'a [Value]>,
}

fn hoist(versions: &[Value]) -> Hoisted<'_> {
    let same = |k: &str| -> bool {
        let first = versions
            .first()
            .and_then(|v| v.get(k))
            .filter(|x| !x.is_null());
        versions
            .iter()
            .all(|v| match (v.get(k).filter(|x| !x.is_null()), first) {
                (None, None) => true,
                (Some(a), Some(b)) => json_eq(a, b),
                _ => false,
            })
    };
    if versions.is_empty() {
        return Hoisted {
            versions,
            schema: None,
            subresources: None,
            columns: None,
        };
    }
    let first = versions.first();
    Hoisted {
        versions,
        schema: same("schema")
            .then(|| first.and_then(|v| v.get("schema")).filter(|x| !x.is_null())),
        subresources: same("subresources").then(|| {
            first
                .and_then(|v| v.get("subresources"))
                .filter(|x| !x.is_null())
        }),
        columns: {
            fn cols(v: &Value) -> &[Value] {
                arr_at(v, "additionalPrinterColumns")
            }
            let f = first.map(cols).unwrap_or(&[]);
            let all_same = versions.iter().all(|v| {
                cols(v).len() == f.len() && cols(v).iter().zip(f).all(|(a, b)| json_eq(a, b))
            });
            all_same.then_some(f)
        },
    }
}

impl Hoisted<'_> {
    fn version_schema(&self, i: usize) -> Option<&Value> {
        match self.schema {
            Some(_) => None,
            None => self
                .versions
                .get(i)
                .and_then(|v| v.get("schema"))
                .filter(|x| !x.is_null()),
        }
    }

    fn version_subresources(&self, i: usize) -> Option<&Value> {
        match self.subresources {
            Some(_) => None,
            None => self
                .versions
                .get(i)
                .and_then(|v| v.get("subresources"))
                .filter(|x| !x.is_null()),
        }
    }

    /// `getSubresourcesForVersion`.
    fn subresources_for(&self, i: usize) -> Option<&Value> {
        match self.subresources {
            Some(top) => top,
            None => self.version_subresources(i),
        }
    }

    fn any_status(&self) -> bool {
        let has = |s: Option<&Value>| {
            s.and_then(|s| s.get("status"))
                .is_some_and(|x| !x.is_null())
        };
        (0..self.versions.len()).any(|i| has(self.subresources_for(i)))
    }
}

/// The server's `must contain unique …` style errors echo whole Go structs; kube-sim echoes
/// the JSON instead.
fn versions_value(spec: &Value) -> Value {
    Value::Array(arr_at(spec, "versions").to_vec())
}

/// Validates a CRD on create (`old` = None) or update, returning the 422 causes the server
/// returns, with its messages and field paths. The object is first defaulted as the server
/// would ([`prepare_crd`]); passing an already prepared object is fine.
///
/// Not checked: generic ObjectMeta rules other than `metadata.name` (the caller's), CEL rule
/// compilation and cost, `selectableFields`, webhook URL/service details and CA bundles, and
/// the update-time leniency for pre-existing violations other than a missing schema.
pub fn validate_crd(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut crd = crd.clone();
    let old_prepared = old.map(|o| {
        let mut o = o.clone();
        set_crd_defaults(&mut o);
        o
    });
    prepare_crd(&mut crd, old);
    let mut errs = Vec::new();
    let null = Value::Null;
    let spec = crd.get("spec").unwrap_or(&null);
    let group = str_at(spec, "group").unwrap_or("");
    let names = spec.get("names").unwrap_or(&null);
    let plural = str_at(names, "plural").unwrap_or("");

    // metadata.name, with the CRD's own name rule.
    match crd.get("metadata").and_then(|m| str_at(m, "name")) {
        Some(name) if !name.is_empty() => {
            for e in dns1123_subdomain_errors(name) {
                errs.push(FieldError::invalid(
                    "metadata.name",
                    Value::String(name.into()),
                    e,
                ));
            }
            if name != format!("{plural}.{group}") {
                errs.push(FieldError::invalid(
                    "metadata.name",
                    Value::String(name.into()),
                    "must be spec.names.plural+\".\"+spec.group",
                ));
            }
        }
        _ => errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        )),
    }

    errs.extend(validate_spec(spec, old_prepared.as_ref()));

    if let Some(old) = &old_prepared {
        let old_spec = old.get("spec").unwrap_or(&null);
        let old_names = old_spec.get("names").unwrap_or(&null);
        let field_value =
            |v: &Value, k: &str| v.get(k).cloned().unwrap_or(Value::String(String::new()));
        if is_established(old) {
            if !json_eq(&field_value(spec, "scope"), &field_value(old_spec, "scope")) {
                errs.push(immutable("spec.scope", field_value(spec, "scope")));
            }
            if !json_eq(&field_value(names, "kind"), &field_value(old_names, "kind")) {
                errs.push(immutable("spec.names.kind", field_value(names, "kind")));
            }
        }
        if !json_eq(&field_value(spec, "group"), &field_value(old_spec, "group")) {
            errs.push(immutable("spec.group", field_value(spec, "group")));
        }
        if !json_eq(
            &field_value(names, "plural"),
            &field_value(old_names, "plural"),
        ) {
            errs.push(immutable("spec.names.plural", field_value(names, "plural")));
        }
    }

    errs.extend(validate_stored_versions(&crd));
    errs.extend(validate_api_approval(&crd, old_prepared.as_ref()));
    let old_preserves = old_prepared.as_ref().is_some_and(|o| {
        o.get("spec")
            .is_some_and(|s| bool_at(s, "preserveUnknownFields"))
    });
    if bool_at(spec, "preserveUnknownFields") && !old_preserves {
        errs.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            Value::Bool(true),
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    errs
}

fn validate_stored_versions(crd: &Value) -> Vec<FieldError> {
    let path = "status.storedVersions";
    let stored = crd
        .get("status")
        .map(|s| arr_at(s, "storedVersions"))
        .unwrap_or(&[]);
    if stored.is_empty() {
        return vec![FieldError::invalid(
            path,
            Value::Array(vec![]),
            "must have at least one stored version",
        )];
    }
    let mut errs = Vec::new();
    let versions = crd
        .get("spec")
        .map(|s| arr_at(s, "versions"))
        .unwrap_or(&[]);
    let mut remaining: Vec<(usize, &str)> = stored
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.as_str().map(|s| (i, s)))
        .collect();
    for v in versions {
        let name = str_at(v, "name").unwrap_or("");
        let found = remaining.iter().any(|(_, s)| *s == name);
        if bool_at(v, "storage") && !found {
            errs.push(FieldError::invalid(
                path,
                Value::Array(stored.to_vec()),
                format!("must have the storage version {name}"),
            ));
        }
        remaining.retain(|(_, s)| *s != name);
    }
    for (i, v) in remaining {
        errs.push(FieldError::invalid(
            index(path, i),
            Value::String(v.into()),
            format!(
                "missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"
            ),
        ));
    }
    errs
}

const APPROVAL: &str = "api-approved.kubernetes.io";

#[derive(PartialEq)]
enum Approval {
    Invalid,
    Approved,
    Bypassed,
    Missing,
}

fn approval_state(crd: &Value) -> Approval {
    let a = crd
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| str_at(a, APPROVAL))
        .unwrap_or("");
    if a.is_empty() {
        Approval::Missing
    } else if a.starts_with("unapproved") {
        Approval::Bypassed
    } else if a.split_once("://").is_some_and(|(scheme, rest)| {
        scheme
            .as_bytes()
            .first()
            .is_some_and(u8::is_ascii_alphabetic)
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
            && !rest.is_empty()
            && !rest.starts_with('/')
    }) {
        Approval::Approved
    } else {
        Approval::Invalid
    }
}

fn validate_api_approval(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let group = crd
        .get("spec")
        .and_then(|s| str_at(s, "group"))
        .unwrap_or("");
    let protected = group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io");
    if !protected {
        return vec![];
    }
    let new = approval_state(crd);
    if old.is_some_and(|o| approval_state(o) == new) {
        return vec![];
    }
    let field = format!("metadata.annotations[{APPROVAL}]");
    let value = crd
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(APPROVAL))
        .cloned();
    match new {
        Approval::Missing => vec![FieldError::required(
            field,
            format!(
                "protected groups must have approval annotation {}, see https://github.com/kubernetes/enhancements/pull/1111",
                go_quote(APPROVAL)
            ),
        )],
        Approval::Invalid => vec![FieldError::invalid(
            field,
            value.unwrap_or(Value::String(String::new())),
            format!(
                "protected groups must have approval annotation {} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111",
                go_quote(APPROVAL)
            ),
        )],
        Approval::Approved | Approval::Bypassed => vec![],
    }
}

fn validate_names(names: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let label = |k: &str, errs: &mut Vec<FieldError>| {
        if let Some(v) = str_at(names, k).filter(|v| !v.is_empty()) {
            let e = dns1035_label_errors(v);
            if !e.is_empty() {
                errs.push(FieldError::invalid(
                    child(path, k),
                    Value::String(v.into()),
                    e.join(","),
                ));
            }
        }
    };
    label("plural", &mut errs);
    label("singular", &mut errs);
    for k in ["kind", "listKind"] {
        if let Some(v) = str_at(names, k).filter(|v| !v.is_empty()) {
            let e = dns1035_label_errors(&v.to_lowercase());
            if !e.is_empty() {
                errs.push(FieldError::invalid(
                    child(path, k),
                    Value::String(v.into()),
                    format!(
                        "may have mixed case, but should otherwise match: {}",
                        e.join(",")
                    ),
                ));
            }
        }
    }
    for (i, s) in arr_at(names, "shortNames").iter().enumerate() {
        let s = s.as_str().unwrap_or("");
        let e = dns1035_label_errors(s);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                index(&child(path, "shortNames"), i),
                Value::String(s.into()),
                e.join(","),
            ));
        }
    }
    let kind = str_at(names, "kind").unwrap_or("");
    if !kind.is_empty() && Some(kind) == str_at(names, "listKind") {
        errs.push(FieldError::invalid(
            child(path, "listKind"),
            Value::String(kind.into()),
            "kind and listKind may not be the same",
        ));
    }
    for (i, s) in arr_at(names, "categories").iter().enumerate() {
        let s = s.as_str().unwrap_or("");
        let e = dns1035_label_errors(s);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                index(&child(path, "categories"), i),
                Value::String(s.into()),
                e.join(","),
            ));
        }
    }
    errs
}

/// `validateCustomResourceDefinitionSpec`, in its order.
fn validate_spec(spec: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let null = Value::Null;
    let group = str_at(spec, "group").unwrap_or("");
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else {
        let e = dns1123_subdomain_errors(group);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                "spec.group",
                Value::String(group.into()),
                e.join(","),
            ));
        } else if !group.contains('.') {
            errs.push(FieldError::invalid(
                "spec.group",
                Value::String(group.into()),
                "should be a domain with at least one dot",
            ));
        }
    }
    match str_at(spec, "scope").unwrap_or("") {
        "" => errs.push(FieldError::required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => errs.push(not_supported(
            "spec.scope",
            Value::String(other.into()),
            &["Cluster".into(), "Namespaced".into()],
        )),
    }

    let versions = arr_at(spec, "versions");
    let h = hoist(versions);
    let preserve = bool_at(spec, "preserveUnknownFields");
    let has_schema = |s: Option<&Value>| {
        s.and_then(|s| s.get("openAPIV3Schema"))
            .is_some_and(|x| !x.is_null())
    };
    // A missing schema is tolerated on update only if the stored CRD already lacked one.
    let old_all_schemas = old.is_none_or(|o| {
        let ov = o.get("spec").map(|s| arr_at(s, "versions")).unwrap_or(&[]);
        ov.iter().all(|v| has_schema(v.get("schema")))
    });
    let top_schema = h.schema.flatten();
    if !has_schema(top_schema) {
        for (i, v) in versions.iter().enumerate() {
            let own = h.version_schema(i);
            if has_schema(own) {
                continue;
            }
            let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
            if old_all_schemas {
                errs.push(FieldError::required(path, "schemas are required"));
            } else if !preserve && bool_at(v, "served") {
                errs.push(FieldError::required(
                    path,
                    "because otherwise all fields are pruned",
                ));
            }
        }
    }
    let any_defaults = versions.iter().any(|v| {
        v.get("schema")
            .and_then(|s| s.get("openAPIV3Schema"))
            .is_some_and(schema_has_default)
    });
    if any_defaults && preserve {
        errs.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            Value::Bool(true),
            "must be false in order to use defaults in the schema",
        ));
    }

    let mut storage = 0;
    let mut seen = HashSet::new();
    let mut unique = true;
    for (i, v) in versions.iter().enumerate() {
        let vp = format!("spec.versions[{i}]");
        if bool_at(v, "storage") {
            storage += 1;
        }
        let name = str_at(v, "name").unwrap_or("");
        if !seen.insert(name.to_string()) {
            unique = false;
        }
        let e = dns1035_label_errors(name);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                child(&vp, "name"),
                Value::String(name.into()),
                e.join(","),
            ));
        }
        errs.extend(validate_deprecation(v, &vp));
        let status_enabled = h
            .subresources_for(i)
            .and_then(|s| s.get("status"))
            .is_some_and(|x| !x.is_null());
        if let Some(schema) = h.version_schema(i) {
            errs.extend(validate_schema_block(
                schema,
                status_enabled,
                &child(&vp, "schema"),
            ));
        }
        if let Some(sub) = h.version_subresources(i) {
            errs.extend(validate_subresources(sub, &child(&vp, "subresources")));
        }
        if h.columns.is_none() {
            for (j, c) in arr_at(v, "additionalPrinterColumns").iter().enumerate() {
                errs.extend(validate_column(
                    c,
                    &index(&child(&vp, "additionalPrinterColumns"), j),
                ));
            }
        }
    }
    if !unique {
        errs.push(FieldError::invalid(
            "spec.versions",
            versions_value(spec),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            versions_value(spec),
            "must have exactly one version marked as storage version",
        ));
    }
    if let Some(first) = versions.first() {
        // The internal form carries versions[0].name as spec.version and validates it again.
        let name = str_at(first, "name").unwrap_or("");
        if !name.is_empty() {
            let e = dns1035_label_errors(name);
            if !e.is_empty() {
                errs.push(FieldError::invalid(
                    "spec.version",
                    Value::String(name.into()),
                    e.join(","),
                ));
            }
        }
    }
    let names = spec.get("names").unwrap_or(&null);
    for k in ["plural", "singular", "kind", "listKind"] {
        if str_at(names, k).unwrap_or("").is_empty() {
            errs.push(FieldError::required(format!("spec.names.{k}"), ""));
        }
    }
    errs.extend(validate_names(names, "spec.names"));
    if let Some(schema) = top_schema {
        errs.extend(validate_schema_block(
            schema,
            h.any_status(),
            "spec.validation",
        ));
    }
    if let Some(sub) = h.subresources.flatten() {
        errs.extend(validate_subresources(sub, "spec.subresources"));
    }
    if let Some(cols) = h.columns {
        for (j, c) in cols.iter().enumerate() {
            errs.extend(validate_column(
                c,
                &index("spec.additionalPrinterColumns", j),
            ));
        }
    }
    errs.extend(validate_conversion(spec.get("conversion"), preserve));
    errs
}

fn validate_deprecation(v: &Value, vp: &str) -> Vec<FieldError> {
    let Some(w) = v.get("deprecationWarning").filter(|w| !w.is_null()) else {
        return vec![];
    };
    let path = child(vp, "deprecationWarning");
    let text = w.as_str().unwrap_or("");
    let mut msgs = Vec::new();
    if !bool_at(v, "deprecated") {
        msgs.push("can only be set for deprecated versions".to_string());
    } else {
        if text.len() > 256 {
            msgs.push("must be <= 256 characters long".into());
        }
        if text.is_empty() {
            msgs.push("must not be an empty string".into());
        }
        // Go's unicode.IsPrint fails first for control characters and non-ASCII spaces.
        if let Some((i, _)) = text
            .char_indices()
            .find(|(_, c)| c.is_control() || (c.is_whitespace() && *c != ' '))
        {
            msgs.push(format!("must only contain printable UTF-8 characters; non-printable character found at index {i}"));
        }
    }
    msgs.into_iter()
        .map(|m| FieldError::invalid(path.clone(), w.clone(), m))
        .collect()
}

fn simple_json_path_errors(s: &str, path: &str) -> Vec<FieldError> {
    if s.is_empty() {
        vec![FieldError::invalid(
            path,
            Value::String(s.into()),
            "must not be empty",
        )]
    } else if !s.starts_with('.') {
        vec![FieldError::invalid(
            path,
            Value::String(s.into()),
            "must be a simple json path starting with .",
        )]
    } else {
        vec![]
    }
}

fn validate_subresources(sub: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(scale) = sub.get("scale").filter(|s| !s.is_null()) else {
        return errs;
    };
    for (k, prefix, what) in [
        (
            "specReplicasPath",
            ".spec.",
            "should be a json path under .spec",
        ),
        (
            "statusReplicasPath",
            ".status.",
            "should be a json path under .status",
        ),
    ] {
        let p = child(path, &format!("scale.{k}"));
        match str_at(scale, k).unwrap_or("") {
            "" => errs.push(FieldError::required(p, "")),
            v => {
                let e = simple_json_path_errors(v, &p);
                if !e.is_empty() {
                    errs.extend(e);
                } else if !v.starts_with(prefix) {
                    errs.push(FieldError::invalid(p, Value::String(v.into()), what));
                }
            }
        }
    }
    if let Some(v) = str_at(scale, "labelSelectorPath").filter(|v| !v.is_empty()) {
        let p = child(path, "scale.labelSelectorPath");
        let e = simple_json_path_errors(v, &p);
        if !e.is_empty() {
            errs.extend(e);
        } else if !v.starts_with(".spec.") && !v.starts_with(".status.") {
            errs.push(FieldError::invalid(
                p,
                Value::String(v.into()),
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errs
}

fn validate_column(c: &Value, path: &str) -> Vec<FieldError> {
    const TYPES: &str = "boolean,date,integer,number,string";
    const FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
    let mut errs = Vec::new();
    if str_at(c, "name").unwrap_or("").is_empty() {
        errs.push(FieldError::required(child(path, "name"), ""));
    }
    match str_at(c, "type").unwrap_or("") {
        "" => errs.push(FieldError::required(
            child(path, "type"),
            format!("must be one of {TYPES}"),
        )),
        t if !TYPES.split(',').any(|x| x == t) => errs.push(FieldError::invalid(
            child(path, "type"),
            Value::String(t.into()),
            format!("must be one of {TYPES}"),
        )),
        _ => {}
    }
    if let Some(f) = str_at(c, "format").filter(|f| !f.is_empty())
        && !FORMATS.split(',').any(|x| x == f)
    {
        errs.push(FieldError::invalid(
            child(path, "format"),
            Value::String(f.into()),
            format!("must be one of {FORMATS}"),
        ));
    }
    match str_at(c, "jsonPath").unwrap_or("") {
        "" => errs.push(FieldError::required(child(path, "JSONPath"), "")),
        p => errs.extend(simple_json_path_errors(p, &child(path, "JSONPath"))),
    }
    errs
}

fn validate_conversion(conv: Option<&Value>, preserve: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(conv) = conv.filter(|c| !c.is_null()) else {
        return errs;
    };
    let strategy = str_at(conv, "strategy").unwrap_or("");
    if strategy != "None" && preserve {
        errs.push(FieldError::invalid(
            "spec.conversion.strategy",
            Value::String(strategy.into()),
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    match strategy {
        "" => errs.push(FieldError::required("spec.conversion.strategy", "")),
        "None" | "Webhook" => {}
        other => errs.push(not_supported(
            "spec.conversion.strategy",
            Value::String(other.into()),
            &["None".into(), "Webhook".into()],
        )),
    }
    let webhook = conv.get("webhook").filter(|w| !w.is_null());
    let client = webhook
        .and_then(|w| w.get("clientConfig"))
        .filter(|c| !c.is_null());
    let review = webhook
        .map(|w| arr_at(w, "conversionReviewVersions"))
        .unwrap_or(&[]);
    if strategy == "Webhook" {
        match client {
            None => errs.push(FieldError::required(
                "spec.conversion.webhookClientConfig",
                "required when strategy is set to Webhook",
            )),
            Some(cc) => {
                let has = |k: &str| cc.get(k).is_some_and(|x| !x.is_null());
                if has("url") == has("service") {
                    errs.push(FieldError::required(
                        "spec.conversion.webhookClientConfig",
                        "exactly one of url or service is required",
                    ));
                }
            }
        }
        let path = "spec.conversion.conversionReviewVersions";
        if review.is_empty() {
            errs.push(FieldError::required(path, ""));
        } else {
            let mut seen = HashSet::new();
            let mut accepted = false;
            for (i, v) in review.iter().enumerate() {
                let s = v.as_str().unwrap_or("");
                if !seen.insert(s) {
                    errs.push(FieldError::invalid(
                        index(path, i),
                        Value::String(s.into()),
                        "duplicate version",
                    ));
                    continue;
                }
                for e in dns1035_label_errors(s) {
                    errs.push(FieldError::invalid(
                        index(path, i),
                        Value::String(s.into()),
                        e,
                    ));
                }
                accepted |= s == "v1" || s == "v1beta1";
            }
            if !accepted {
                errs.push(FieldError::invalid(
                    path,
                    Value::Array(review.to_vec()),
                    "must include at least one of v1, v1beta1",
                ));
            }
        }
    } else {
        if client.is_some() {
            errs.push(FieldError::forbidden(
                "spec.conversion.webhookClientConfig",
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !review.is_empty() {
            errs.push(FieldError::forbidden(
                "spec.conversion.conversionReviewVersions",
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    errs
}

fn schema_has_default(s: &Value) -> bool {
    match s {
        Value::Object(m) => {
            m.get("default").is_some_and(|d| !d.is_null())
                || m.iter().any(|(k, v)| match k.as_str() {
                    "properties" | "patternProperties" | "definitions" | "dependencies" => v
                        .as_object()
                        .is_some_and(|p| p.values().any(schema_has_default)),
                    "items" | "additionalProperties" | "additionalItems" | "not" => match v {
                        Value::Array(a) => a.iter().any(schema_has_default),
                        other => schema_has_default(other),
                    },
                    "allOf" | "anyOf" | "oneOf" => v
                        .as_array()
                        .is_some_and(|a| a.iter().any(schema_has_default)),
                    _ => false,
                })
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Validation of a CRD's openAPIV3Schema: root restrictions, structural rules, defaults, and the
// per-node OpenAPI rules.
// ---------------------------------------------------------------------------------------------

/// The JSONSchemaProps fields in Go struct order, as (JSON key, Go field name); the root check
/// with a status subresource walks them in this order and stops at the first offender.
const SCHEMA_FIELDS: &[(&str, &str)] = &[
    ("id", "ID"),
    ("$schema", "Schema"),
    ("$ref", "Ref"),
    ("description", "Description"),
    ("type", "Type"),
    ("format", "Format"),
    ("title", "Title"),
    ("default", "Default"),
    ("maximum", "Maximum"),
    ("exclusiveMaximum", "ExclusiveMaximum"),
    ("minimum", "Minimum"),
    ("exclusiveMinimum", "ExclusiveMinimum"),
    ("maxLength", "MaxLength"),
    ("minLength", "MinLength"),
    ("pattern", "Pattern"),
    ("maxItems", "MaxItems"),
    ("minItems", "MinItems"),
    ("uniqueItems", "UniqueItems"),
    ("multipleOf", "MultipleOf"),
    ("enum", "Enum"),
    ("maxProperties", "MaxProperties"),
    ("minProperties", "MinProperties"),
    ("required", "Required"),
    ("items", "Items"),
    ("allOf", "AllOf"),
    ("oneOf", "OneOf"),
    ("anyOf", "AnyOf"),
    ("not", "Not"),
    ("properties", "Properties"),
    ("additionalProperties", "AdditionalProperties"),
    ("patternProperties", "PatternProperties"),
    ("dependencies", "Dependencies"),
    ("additionalItems", "AdditionalItems"),
    ("definitions", "Definitions"),
    ("externalDocs", "ExternalDocs"),
    ("example", "Example"),
    ("nullable", "Nullable"),
    (
        "x-kubernetes-preserve-unknown-fields",
        "XPreserveUnknownFields",
    ),
    ("x-kubernetes-embedded-resource", "XEmbeddedResource"),
    ("x-kubernetes-int-or-string", "XIntOrString"),
    ("x-kubernetes-list-map-keys", "XListMapKeys"),
    ("x-kubernetes-list-type", "XListType"),
    ("x-kubernetes-map-type", "XMapType"),
    ("x-kubernetes-validations", "XValidations"),
];

const ROOT_ALLOWED_WITH_STATUS: &[&str] = &[
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
];

/// Go's zero values are skipped by the root check; so are JSON's equivalents.
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
    }
}

/// `validateCustomResourceDefinitionValidation` for one `schema:` block at `path`
/// (`spec.validation` or `spec.versions[i].schema`).
fn validate_schema_block(block: &Value, status_enabled: bool, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(root) = block.get("openAPIV3Schema").filter(|s| !s.is_null()) else {
        return errs;
    };
    let root_path = child(path, "openAPIV3Schema");
    let Some(root_map) = root.as_object() else {
        errs.push(FieldError::invalid(
            root_path,
            root.clone(),
            "must be an object",
        ));
        return errs;
    };
    // The same decode failures the server reports at 400 keep us from going further.
    if let Err(e) = Schema::parse(root) {
        errs.push(FieldError::invalid(
            root_path,
            Value::String(String::new()),
            e,
        ));
        return errs;
    }
    if status_enabled {
        for (json_key, go_name) in SCHEMA_FIELDS {
            let Some(v) = root_map.get(*json_key).filter(|v| !is_zero(v)) else {
                continue;
            };
            if *go_name == "Type" {
                if v.as_str() != Some("object") {
                    errs.push(FieldError::invalid(
                        format!("{root_path}.type"),
                        v.clone(),
                        "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                    ));
                    break;
                }
                continue;
            }
            if !ROOT_ALLOWED_WITH_STATUS.contains(go_name) {
                errs.push(FieldError::invalid(
                    root_path.clone(),
                    root.clone(),
                    format!(
                        "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                        ROOT_ALLOWED_WITH_STATUS.join(" ")
                    ),
                ));
                break;
            }
        }
    }
    if bool_at(root, "nullable") {
        errs.push(FieldError::forbidden(
            format!("{root_path}.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let mut structural = Vec::new();
    structural_invariants(root_map, Level::Root, &root_path, &mut structural);
    structural_completeness(root_map, &root_path, &mut structural);
    structural.sort_by_key(|e| e.to_string());
    if structural.is_empty() {
        defaults_check(root_map, &root_path, true, false, &mut errs);
    } else {
        errs.extend(structural);
    }
    let ssv = Ssv {
        allow_defaults: true,
        reason: String::new(),
        inside_meta: false,
    };
    openapi_checks(root_map, &root_path, &ssv, true, &mut errs);
    errs
}

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

fn sub_map<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a Map<String, Value>> {
    m.get(k).and_then(Value::as_object)
}

fn m_str<'a>(m: &'a Map<String, Value>, k: &str) -> &'a str {
    m.get(k).and_then(Value::as_str).unwrap_or("")
}

fn m_bool(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn props_of(m: &Map<String, Value>) -> Vec<(&String, &Map<String, Value>)> {
    sub_map(m, "properties")
        .map(|p| {
            p.iter()
                .filter_map(|(k, v)| v.as_object().map(|o| (k, o)))
                .collect()
        })
        .unwrap_or_default()
}

/// `anyOf: [{type: integer}, {type: string}]` exactly: the int-or-string exception.
fn is_int_or_string_any_of(m: &Map<String, Value>) -> bool {
    let Some(a) = m.get("anyOf").and_then(Value::as_array) else {
        return false;
    };
    let only_type = |v: Option<&Value>, t: &str| {
        v.and_then(Value::as_object)
            .is_some_and(|o| o.len() == 1 && o.get("type").and_then(Value::as_str) == Some(t))
    };
    a.len() == 2 && only_type(a.first(), "integer") && only_type(a.get(1), "string")
}

fn prop_path(path: &str, k: &str) -> String {
    format!("{path}.properties[{k}]")
}

/// `validateStructuralInvariants`.
fn structural_invariants(
    m: &Map<String, Value>,
    lvl: Level,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let ty = m_str(m, "type");
    let embedded = m_bool(m, "x-kubernetes-embedded-resource");
    let preserve = m_bool(m, "x-kubernetes-preserve-unknown-fields");
    let ios = m_bool(m, "x-kubernetes-int-or-string");
    if ty == "array" && m.get("items").is_none_or(Value::is_null) {
        errs.push(FieldError::required(
            format!("{path}.items"),
            "must be specified",
        ));
    }
    if let Some(items) = sub_map(m, "items") {
        structural_invariants(items, Level::Item, &format!("{path}.items"), errs);
    }
    for (k, p) in props_of(m) {
        structural_invariants(p, Level::Field, &prop_path(path, k), errs);
    }
    if let Some(ap) = m.get("additionalProperties").filter(|v| !v.is_null()) {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                format!("{path}.additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(apm) = ap.as_object() {
            structural_invariants(
                apm,
                Level::Field,
                &format!("{path}.additionalProperties"),
                errs,
            );
        }
    }
    if ios && preserve {
        errs.push(FieldError::invalid(
            format!("{path}.x-kubernetes-preserve-unknown-fields"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if ios && embedded {
        errs.push(FieldError::invalid(
            format!("{path}.x-kubernetes-embedded-resource"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_any_of(m);
    let skip_first_all_of_any_of = m
        .get("allOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_object)
        .is_some_and(is_int_or_string_any_of);
    value_validation(m, skip_any_of, skip_first_all_of_any_of, path, errs);
    if embedded && ty != "object" {
        if ty.is_empty() {
            errs.push(FieldError::required(
                format!("{path}.type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            errs.push(FieldError::invalid(
                format!("{path}.type"),
                Value::String(ty.into()),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if ty.is_empty() && !ios && !preserve {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(format!("{path}.type"), detail));
    }
    if embedded && m.get("additionalProperties").is_some_and(|v| !v.is_null()) {
        errs.push(FieldError::forbidden(
            format!("{path}.additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(FieldError::invalid(
            format!("{path}.type"),
            Value::String(ty.into()),
            "must be object at the root",
        ));
    }
    let check_meta = lvl == Level::Root || embedded;
    let props = sub_map(m, "properties");
    if check_meta {
        for k in ["kind", "apiVersion"] {
            if let Some(p) = props.and_then(|p| sub_map(p, k)) {
                let t = m_str(p, "type");
                if t != "string" {
                    errs.push(FieldError::invalid(
                        format!("{}.type", prop_path(path, k)),
                        Value::String(t.into()),
                        "must be string",
                    ));
                }
            }
        }
    }
    if let Some(meta) = props.and_then(|p| sub_map(p, "metadata")) {
        let mp = prop_path(path, "metadata");
        if check_meta && m_str(meta, "type") != "object" {
            errs.push(FieldError::invalid(
                format!("{mp}.type"),
                Value::String(m_str(meta, "type").into()),
                "must be object",
            ));
        }
        if lvl == Level::Root && !root_metadata_ok(meta) {
            errs.push(FieldError::forbidden(
                mp,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if embedded && !preserve && props.is_none_or(Map::is_empty) {
        errs.push(FieldError::required(
            format!("{path}.properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// At the root, `metadata` may only say it is an object and restrict `name`/`generateName`.
fn root_metadata_ok(meta: &Map<String, Value>) -> bool {
    meta.iter().all(|(k, v)| match k.as_str() {
        "type" | "default" => true,
        "properties" => v.as_object().is_some_and(|p| {
            let n = p.contains_key("name") as usize + p.contains_key("generateName") as usize;
            n > 0 && n == p.len()
        }),
        // Zero values don't survive decoding, so they don't count.
        _ => is_zero(v),
    })
}

/// `validateValueValidation`: the junctors of a structural node, and the pattern.
fn value_validation(
    m: &Map<String, Value>,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let list = |k: &str| -> Vec<&Map<String, Value>> {
        m.get(k)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_object).collect())
            .unwrap_or_default()
    };
    if !skip_any_of {
        for (i, s) in list("anyOf").into_iter().enumerate() {
            nested_value_validation(s, false, &format!("{path}.anyOf[{i}]"), errs);
        }
    }
    for (i, s) in list("allOf").into_iter().enumerate() {
        nested_value_validation(
            s,
            skip_first_all_of_any_of && i == 0,
            &format!("{path}.allOf[{i}]"),
            errs,
        );
    }
    for (i, s) in list("oneOf").into_iter().enumerate() {
        nested_value_validation(s, false, &format!("{path}.oneOf[{i}]"), errs);
    }
    if let Some(not) = sub_map(m, "not") {
        nested_value_validation(not, false, &format!("{path}.not"), errs);
    }
    if let Some(p) = m
        .get("pattern")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        && let Err(RegexError::Invalid(e)) = Regex::new(p)
    {
        errs.push(FieldError::invalid(
            format!("{path}.pattern"),
            Value::String(p.into()),
            format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

/// `validateNestedValueValidation`: inside allOf/anyOf/oneOf/not only value validations may
/// appear.
fn nested_value_validation(
    m: &Map<String, Value>,
    skip_any_of: bool,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    value_validation(m, skip_any_of, false, path, errs);
    if let Some(items) = sub_map(m, "items") {
        nested_value_validation(items, false, &format!("{path}.items"), errs);
    }
    for (k, p) in props_of(m) {
        nested_value_validation(p, false, &prop_path(path, k), errs);
    }
    let forbid = |errs: &mut Vec<FieldError>, k: &str, why: &str| {
        errs.push(FieldError::forbidden(format!("{path}.{k}"), why))
    };
    if !m_str(m, "type").is_empty() {
        forbid(errs, "type", "must be empty to be structural");
    }
    match m.get("additionalProperties") {
        Some(Value::Object(_)) | Some(Value::Bool(true)) => forbid(
            errs,
            "additionalProperties",
            "must be undefined to be structural",
        ),
        _ => {}
    }
    if m.get("default").is_some_and(|d| !d.is_null()) {
        forbid(errs, "default", "must be undefined to be structural");
    }
    if !m_str(m, "title").is_empty() {
        forbid(errs, "title", "must be empty to be structural");
    }
    if !m_str(m, "description").is_empty() {
        forbid(errs, "description", "must be empty to be structural");
    }
    if m_bool(m, "nullable") {
        forbid(errs, "nullable", "must be false to be structural");
    }
    for k in [
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if m_bool(m, k) {
            forbid(errs, k, "must be false to be structural");
        }
    }
    if m.get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        forbid(
            errs,
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        );
    }
    for k in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if m.get(k).is_some_and(|v| !v.is_null()) {
            forbid(errs, k, "must be undefined to be structural");
        }
    }
    if m.get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        forbid(
            errs,
            "x-kubernetes-validations",
            "must be empty to be structural",
        );
    }
    if sub_map(m, "properties").is_some_and(|p| p.contains_key("metadata")) {
        errs.push(FieldError::forbidden(
            prop_path(path, "metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// `validateStructuralCompleteness`: what the root's junctors talk about must exist in the
/// structural part.
fn structural_completeness(root: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    junctor_completeness(root, Some(root), path, path, errs);
}

fn junctor_completeness(
    v: &Map<String, Value>,
    s: Option<&Map<String, Value>>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
) {
    let list = |k: &str| -> Vec<&Map<String, Value>> {
        v.get(k)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_object).collect())
            .unwrap_or_default()
    };
    if let Some(not) = sub_map(v, "not") {
        nested_completeness(not, s, s_path, &format!("{v_path}.not"), errs);
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        for (i, n) in list(k).into_iter().enumerate() {
            nested_completeness(n, s, s_path, &format!("{v_path}.{k}[{i}]"), errs);
        }
    }
}

fn nested_completeness(
    v: &Map<String, Value>,
    s: Option<&Map<String, Value>>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(FieldError::required(
            s_path,
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    junctor_completeness(v, Some(s), s_path, v_path, errs);
    if let Some(items) = sub_map(v, "items") {
        nested_completeness(
            items,
            sub_map(s, "items"),
            &format!("{s_path}.items"),
            &format!("{v_path}.items"),
            errs,
        );
    }
    let s_props = sub_map(s, "properties");
    for (k, p) in props_of(v) {
        match s_props.and_then(|sp| sub_map(sp, k)) {
            Some(sp) => nested_completeness(
                p,
                Some(sp),
                &prop_path(s_path, k),
                &prop_path(v_path, k),
                errs,
            ),
            None => errs.push(FieldError::required(
                prop_path(s_path, k),
                format!("because it is defined in {}", prop_path(v_path, k)),
            )),
        }
    }
}

/// `ValidateDefaults`: every default outside resource metadata must validate against its own
/// schema and survive pruning unchanged.
fn defaults_check(
    m: &Map<String, Value>,
    path: &str,
    is_root: bool,
    inside_meta: bool,
    errs: &mut Vec<FieldError>,
) {
    let embedded = is_root || m_bool(m, "x-kubernetes-embedded-resource");
    let inside_meta = inside_meta && !m_bool(m, "x-kubernetes-embedded-resource");
    if let (Some(d), false) = (m.get("default").filter(|d| !d.is_null()), inside_meta)
        && let Ok(s) = Schema::parse(&Value::Object(m.clone()))
    {
        let dpath = format!("{path}.default");
        let mut pruned = d.clone();
        let mut ignored = Vec::new();
        prune_node(&mut pruned, Some(&s), "", false, &mut ignored);
        if pruned != *d {
            errs.push(FieldError::invalid(
                dpath.clone(),
                d.clone(),
                "must not have unknown fields",
            ));
        }
        let mut verrs = Vec::new();
        check(
            &s,
            d,
            "",
            &Ctx {
                prefix: Some(&dpath),
            },
            &mut verrs,
        );
        errs.extend(verrs);
    }
    if let Some(items) = sub_map(m, "items") {
        defaults_check(items, &format!("{path}.items"), false, inside_meta, errs);
    }
    for (k, p) in props_of(m) {
        let meta = inside_meta || (embedded && META_FIELDS.contains(&k.as_str()));
        defaults_check(p, &prop_path(path, k), false, meta, errs);
    }
}

/// The part of `specStandardValidator` state that matters without CEL.
#[derive(Clone)]
struct Ssv {
    allow_defaults: bool,
    reason: String,
    inside_meta: bool,
}

impl Ssv {
    fn forbid_defaults(&self, reason: &str) -> Ssv {
        Ssv {
            allow_defaults: false,
            reason: reason.to_string(),
            ..self.clone()
        }
    }
}

const OPENAPI_TYPES: &[&str] = &["array", "boolean", "integer", "number", "object", "string"];

/// `ValidateCustomResourceDefinitionOpenAPISchema` for one node and everything below it.
fn openapi_checks(
    m: &Map<String, Value>,
    path: &str,
    ssv: &Ssv,
    is_root: bool,
    errs: &mut Vec<FieldError>,
) {
    let p = |k: &str| format!("{path}.{k}");
    let present = |k: &str| m.get(k).is_some_and(|v| !v.is_null());
    let nonempty_map = |k: &str| {
        m.get(k)
            .and_then(Value::as_object)
            .is_some_and(|o| !o.is_empty())
    };
    let ty = m_str(m, "type");
    // specStandardValidatorV3.validate
    if !ty.is_empty() && !OPENAPI_TYPES.contains(&ty) {
        let list: Vec<String> = OPENAPI_TYPES.iter().map(|s| s.to_string()).collect();
        errs.push(not_supported(p("type"), Value::String(ty.into()), &list));
    }
    if present("default") && !ssv.allow_defaults {
        let mut detail = "must not be set".to_string();
        if !ssv.reason.is_empty() {
            detail = format!("{detail} {}", ssv.reason);
        }
        errs.push(FieldError::forbidden(p("default"), detail));
    }
    if !m_str(m, "id").is_empty() {
        errs.push(FieldError::forbidden(p("id"), "id is not supported"));
    }
    if present("additionalItems") {
        errs.push(FieldError::forbidden(
            p("additionalItems"),
            "additionalItems is not supported",
        ));
    }
    if nonempty_map("patternProperties") {
        errs.push(FieldError::forbidden(
            p("patternProperties"),
            "patternProperties is not supported",
        ));
    }
    if nonempty_map("definitions") {
        errs.push(FieldError::forbidden(
            p("definitions"),
            "definitions is not supported",
        ));
    }
    if present("dependencies") {
        errs.push(FieldError::forbidden(
            p("dependencies"),
            "dependencies is not supported",
        ));
    }
    if present("$ref") {
        errs.push(FieldError::forbidden(p("$ref"), "$ref is not supported"));
    }
    if ty == "null" {
        errs.push(FieldError::forbidden(
            p("type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if m.get("items").is_some_and(Value::is_array) {
        errs.push(FieldError::forbidden(
            p("items"),
            "items must be a schema object and not an array",
        ));
    }
    if ssv.inside_meta && m_bool(m, "x-kubernetes-embedded-resource") {
        errs.push(FieldError::forbidden(
            p("x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
    // The rest of ValidateCustomResourceDefinitionOpenAPISchema.
    if m_bool(m, "uniqueItems") {
        errs.push(FieldError::forbidden(
            p("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let has_props = nonempty_map("properties");
    if let Some(ap) = m.get("additionalProperties").filter(|v| !v.is_null()) {
        if has_props && (ap.as_bool() == Some(false) || ap.is_object()) {
            errs.push(FieldError::forbidden(
                p("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if let Some(apm) = ap.as_object() {
            let sub = if ssv.inside_meta {
                ssv.forbid_defaults("inside additionalProperties applying to object metadata")
            } else {
                ssv.clone()
            };
            openapi_checks(apm, &p("additionalProperties"), &sub, false, errs);
        }
    }
    let embedded = m_bool(m, "x-kubernetes-embedded-resource");
    for (k, sub_schema) in props_of(m) {
        let mut sub = ssv.clone();
        if (is_root || embedded) && META_FIELDS.contains(&k.as_str()) {
            sub.inside_meta = true;
            if is_root {
                sub = sub.forbid_defaults(&format!("in top-level {k}"));
            }
        }
        openapi_checks(sub_schema, &prop_path(path, k), &sub, false, errs);
    }
    if let Some(not) = sub_map(m, "not") {
        openapi_checks(not, &p("not"), ssv, false, errs);
    }
    for k in ["allOf", "oneOf", "anyOf"] {
        for (i, s) in m
            .get(k)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .enumerate()
        {
            if let Some(sm) = s.as_object() {
                openapi_checks(sm, &format!("{path}.{k}[{i}]"), ssv, false, errs);
            }
        }
    }
    if let Some(defs) = sub_map(m, "definitions") {
        for (k, s) in defs {
            if let Some(sm) = s.as_object() {
                openapi_checks(sm, &format!("{path}.definitions[{k}]"), ssv, false, errs);
            }
        }
    }
    match m.get("items") {
        Some(Value::Object(items)) => openapi_checks(items, &p("items"), ssv, false, errs),
        Some(Value::Array(list)) => {
            for (i, s) in list.iter().enumerate() {
                if let Some(sm) = s.as_object() {
                    openapi_checks(sm, &format!("{path}.items[{i}]"), ssv, false, errs);
                }
            }
        }
        _ => {}
    }
    if m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.push(FieldError::invalid(
            p("x-kubernetes-preserve-unknown-fields"),
            Value::Bool(false),
            "must be true or undefined",
        ));
    }
    list_and_map_type_checks(m, path, errs);
    validations_checks(m, path, errs);
}

fn type_mismatch(path: &str, ty: &str, detail: &str) -> FieldError {
    if ty.is_empty() {
        FieldError::required(format!("{path}.type"), detail)
    } else {
        FieldError::invalid(format!("{path}.type"), Value::String(ty.into()), detail)
    }
}

fn list_and_map_type_checks(m: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    let p = |k: &str| format!("{path}.{k}");
    let ty = m_str(m, "type");
    let map_type = m.get("x-kubernetes-map-type").and_then(Value::as_str);
    let list_type = m.get("x-kubernetes-list-type").and_then(Value::as_str);
    let keys = strings_of(m.get("x-kubernetes-list-map-keys"));
    let items = sub_map(m, "items");
    if map_type.is_some() && ty != "object" {
        errs.push(type_mismatch(
            path,
            ty,
            "must be object if x-kubernetes-map-type is specified",
        ));
    }
    if let Some(mt) = map_type.filter(|t| *t != "atomic" && *t != "granular") {
        errs.push(not_supported(
            p("x-kubernetes-map-type"),
            Value::String(mt.into()),
            &["atomic".into(), "granular".into()],
        ));
    }
    if list_type.is_some() && ty != "array" {
        errs.push(type_mismatch(
            path,
            ty,
            "must be array if x-kubernetes-list-type is specified",
        ));
    } else if let (Some("set"), Some(is)) = (list_type, items) {
        let is_list_type = is
            .get("x-kubernetes-list-type")
            .cloned()
            .unwrap_or(Value::Null);
        match m_str(is, "type") {
            "array" if is_list_type.as_str().is_some_and(|t| t != "atomic") => {
                errs.push(FieldError::invalid(
                    format!("{path}.items.x-kubernetes-list-type"),
                    is_list_type,
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                ))
            }
            // The server echoes the items' list type here, not their map type.
            "object"
                if is.get("x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic") =>
            {
                errs.push(FieldError::invalid(
                    format!("{path}.items.x-kubernetes-map-type"),
                    is_list_type,
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                ))
            }
            _ => {}
        }
    }
    if let Some(lt) = list_type.filter(|t| !["atomic", "set", "map"].contains(t)) {
        errs.push(not_supported(
            p("x-kubernetes-list-type"),
            Value::String(lt.into()),
            &["atomic".into(), "set".into(), "map".into()],
        ));
    }
    if !keys.is_empty() {
        match list_type {
            None => errs.push(FieldError::required(
                p("x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some("map") => {}
            Some(other) => errs.push(FieldError::invalid(
                p("x-kubernetes-list-type"),
                Value::String(other.into()),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            errs.push(FieldError::required(
                p("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match m.get("items").filter(|v| !v.is_null()) {
            None => errs.push(FieldError::required(
                p("items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(Value::Object(is)) => {
                let ity = m_str(is, "type");
                if ity != "object" {
                    errs.push(FieldError::invalid(
                        format!("{path}.items.type"),
                        Value::String(ity.into()),
                        "must be object if parent array's x-kubernetes-list-type is map",
                    ));
                } else {
                    let mut seen = HashSet::new();
                    let keys_value =
                        Value::Array(keys.iter().map(|k| Value::String(k.clone())).collect());
                    for k in &keys {
                        match sub_map(is, "properties").and_then(|pr| sub_map(pr, k)) {
                            Some(kp) => {
                                if matches!(m_str(kp, "type"), "array" | "object") {
                                    errs.push(FieldError::invalid(
                                        format!("{}.type", prop_path(&format!("{path}.items"), k)),
                                        Value::String(ity.into()),
                                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                    ));
                                }
                            }
                            None => errs.push(FieldError::invalid(
                                p("x-kubernetes-list-map-keys"),
                                keys_value.clone(),
                                "entries must all be names of item properties",
                            )),
                        }
                        if !seen.insert(k.as_str()) {
                            errs.push(FieldError::invalid(
                                p("x-kubernetes-list-map-keys"),
                                keys_value.clone(),
                                "must not contain duplicate entries",
                            ));
                        }
                    }
                }
            }
            Some(other) => errs.push(FieldError::invalid(
                p("items"),
                other.clone(),
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
        }
    }
    // validateMapListKeysMapSet
    if let (Some(lt @ ("set" | "map")), Some(is)) = (list_type, items) {
        if m_bool(is, "nullable") {
            errs.push(FieldError::forbidden(
                format!("{path}.items.nullable"),
                format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
            ));
        }
        if lt == "map" {
            let required = strings_of(is.get("required"));
            for k in &keys {
                let Some(kp) = sub_map(is, "properties").and_then(|pr| sub_map(pr, k)) else {
                    continue;
                };
                let kpath = prop_path(&format!("{path}.items"), k);
                if !required.contains(k) && kp.get("default").is_none_or(Value::is_null) {
                    errs.push(FieldError::required(
                        format!("{kpath}.default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    ));
                }
                if m_bool(kp, "nullable") {
                    errs.push(FieldError::forbidden(
                        format!("{kpath}.nullable"),
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    ));
                }
            }
        }
    }
}

fn strings_of(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The static checks of `x-kubernetes-validations` (the CEL expressions are not compiled).
fn validations_checks(m: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
    let rules = m
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let newline = |s: &str| s.contains(['\n', '\r']);
    for (i, r) in rules.iter().enumerate() {
        let rp = format!("{path}.x-kubernetes-validations[{i}]");
        let rule = str_at(r, "rule").unwrap_or("");
        let msg = str_at(r, "message").unwrap_or("");
        let (trule, tmsg) = (rule.trim(), msg.trim());
        if trule.is_empty() {
            errs.push(FieldError::required(
                format!("{rp}.rule"),
                "rule is not specified",
            ));
        } else if !msg.is_empty() && tmsg.is_empty() {
            errs.push(FieldError::invalid(
                format!("{rp}.message"),
                Value::String(msg.into()),
                "message must be non-empty if specified",
            ));
        } else if newline(tmsg) {
            errs.push(FieldError::invalid(
                format!("{rp}.message"),
                Value::String(msg.into()),
                "message must not contain line breaks",
            ));
        } else if newline(trule) && tmsg.is_empty() {
            errs.push(FieldError::required(
                format!("{rp}.message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        let mexpr = str_at(r, "messageExpression").unwrap_or("");
        if !mexpr.is_empty() && mexpr.trim().is_empty() {
            errs.push(FieldError::required(
                format!("{rp}.messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = str_at(r, "reason") {
            let ok = [
                "FieldValueDuplicate",
                "FieldValueForbidden",
                "FieldValueInvalid",
                "FieldValueRequired",
            ];
            if !ok.contains(&reason) {
                let list: Vec<String> = ok.iter().map(|s| s.to_string()).collect();
                errs.push(not_supported(
                    format!("{rp}.reason"),
                    Value::String(reason.into()),
                    &list,
                ));
            }
        }
        let fp = str_at(r, "fieldPath").unwrap_or("");
        if !fp.is_empty() && fp.trim().is_empty() {
            errs.push(FieldError::invalid(
                format!("{rp}.fieldPath"),
                Value::String(fp.into()),
                "fieldPath must be non-empty if specified",
            ));
        }
        if newline(fp) {
            errs.push(FieldError::invalid(
                format!("{rp}.fieldPath"),
                Value::String(fp.into()),
                "fieldPath must not contain line breaks",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// OpenShift's ClusterCSIDriver CRD (openshift/api, operator/v1,
    /// zz_generated.crd-manifests/0000_90_csi-driver_01_clustercsidrivers.crd.yaml), with the
    /// descriptions removed.
    const CLUSTER_CSI_DRIVER_CRD: &str = r##"
{
 "apiVersion": "apiextensions.k8s.io/v1",
 "kind": "CustomResourceDefinition",
 "metadata": {
  "annotations": {
   "api-approved.openshift.io": "https://github.com/openshift/api/pull/701",
   "include.release.openshift.io/self-managed-high-availability": "true"
  },
  "name": "clustercsidrivers.operator.openshift.io"
 },
 "spec": {
  "group": "operator.openshift.io",
  "names": {
   "kind": "ClusterCSIDriver",
   "listKind": "ClusterCSIDriverList",
   "plural": "clustercsidrivers",
   "singular": "clustercsidriver"
  },
  "scope": "Cluster",
  "versions": [
   {
    "name": "v1",
    "schema": {
     "openAPIV3Schema": {
      "properties": {
       "apiVersion": {
        "type": "string"
       },
       "kind": {
        "type": "string"
       },
       "metadata": {
        "properties": {
         "name": {
          "enum": [
           "ebs.csi.aws.com",
           "efs.csi.aws.com",
           "disk.csi.azure.com",
           "file.csi.azure.com",
           "filestore.csi.storage.gke.io",
           "pd.csi.storage.gke.io",
           "cinder.csi.openstack.org",
           "csi.vsphere.vmware.com",
           "manila.csi.openstack.org",
           "csi.ovirt.org",
           "csi.kubevirt.io",
           "csi.sharedresource.openshift.io",
           "diskplugin.csi.alibabacloud.com",
           "vpc.block.csi.ibm.io",
           "powervs.csi.ibm.com",
           "secrets-store.csi.k8s.io",
           "smb.csi.k8s.io"
          ],
          "type": "string"
         }
        },
        "type": "object"
       },
       "spec": {
        "properties": {
         "driverConfig": {
          "properties": {
           "aws": {
            "properties": {
             "kmsKeyARN": {
              "pattern": "^arn:(aws|aws-cn|aws-us-gov|aws-iso|aws-iso-b|aws-iso-e|aws-iso-f):kms:[a-z0-9-]+:[0-9]{12}:(key|alias)\\/.*$",
              "type": "string"
             }
            },
            "type": "object"
           },
           "azure": {
            "properties": {
             "diskEncryptionSet": {
              "properties": {
               "name": {
                "maxLength": 80,
                "pattern": "^[a-zA-Z0-9\\_-]+$",
                "type": "string"
               },
               "resourceGroup": {
                "maxLength": 90,
                "pattern": "^[\\w\\.\\-\\(\\)]*[\\w\\-\\(\\)]$",
                "type": "string"
               },
               "subscriptionID": {
                "maxLength": 36,
                "pattern": "^[a-fA-F0-9]{8}-[a-fA-F0-9]{4}-[a-fA-F0-9]{4}-[a-fA-F0-9]{4}-[a-fA-F0-9]{12}$",
                "type": "string"
               }
              },
              "required": [
               "name",
               "resourceGroup",
               "subscriptionID"
              ],
              "type": "object"
             }
            },
            "type": "object"
           },
           "driverType": {
            "enum": [
             "",
             "AWS",
             "Azure",
             "GCP",
             "IBMCloud",
             "vSphere"
            ],
            "type": "string"
           },
           "gcp": {
            "properties": {
             "kmsKey": {
              "properties": {
               "keyRing": {
                "maxLength": 63,
                "minLength": 1,
                "pattern": "^[a-zA-Z0-9\\_-]+$",
                "type": "string"
               },
               "location": {
                "pattern": "^[a-zA-Z0-9\\_-]+$",
                "type": "string"
               },
               "name": {
                "maxLength": 63,
                "minLength": 1,
                "pattern": "^[a-zA-Z0-9\\_-]+$",
                "type": "string"
               },
               "projectID": {
                "maxLength": 30,
                "minLength": 6,
                "pattern": "^[a-z][a-z0-9-]+[a-z0-9]$",
                "type": "string"
               }
              },
              "required": [
               "keyRing",
               "name",
               "projectID"
              ],
              "type": "object"
             }
            },
            "type": "object"
           },
           "ibmcloud": {
            "properties": {
             "encryptionKeyCRN": {
              "maxLength": 154,
              "minLength": 144,
              "pattern": "^crn:v[0-9]+:bluemix:(public|private):(kms|hs-crypto):[a-z-]+:a/[0-9a-f]+:[0-9a-f-]{36}:key:[0-9a-f-]{36}$",
              "type": "string"
             }
            },
            "required": [
             "encryptionKeyCRN"
            ],
            "type": "object"
           },
           "vSphere": {
            "properties": {
             "globalMaxSnapshotsPerBlockVolume": {
              "format": "int32",
              "maximum": 32,
              "minimum": 1,
              "type": "integer"
             },
             "granularMaxSnapshotsPerBlockVolumeInVSAN": {
              "format": "int32",
              "maximum": 32,
              "minimum": 1,
              "type": "integer"
             },
             "granularMaxSnapshotsPerBlockVolumeInVVOL": {
              "format": "int32",
              "maximum": 32,
              "minimum": 1,
              "type": "integer"
             },
             "topologyCategories": {
              "items": {
               "type": "string"
              },
              "type": "array",
              "x-kubernetes-list-type": "atomic"
             }
            },
            "type": "object"
           }
          },
          "required": [
           "driverType"
          ],
          "type": "object",
          "x-kubernetes-validations": [
           {
            "message": "ibmcloud must be set if driverType is 'IBMCloud', but remain unset otherwise",
            "rule": "has(self.driverType) && self.driverType == 'IBMCloud' ? has(self.ibmcloud) : !has(self.ibmcloud)"
           }
          ]
         },
         "logLevel": {
          "default": "Normal",
          "enum": [
           "",
           "Normal",
           "Debug",
           "Trace",
           "TraceAll"
          ],
          "type": "string"
         },
         "managementState": {
          "pattern": "^(Managed|Unmanaged|Force|Removed)$",
          "type": "string"
         },
         "observedConfig": {
          "nullable": true,
          "type": "object",
          "x-kubernetes-preserve-unknown-fields": true
         },
         "operatorLogLevel": {
          "default": "Normal",
          "enum": [
           "",
           "Normal",
           "Debug",
           "Trace",
           "TraceAll"
          ],
          "type": "string"
         },
         "storageClassState": {
          "enum": [
           "",
           "Managed",
           "Unmanaged",
           "Removed"
          ],
          "type": "string"
         },
         "unsupportedConfigOverrides": {
          "nullable": true,
          "type": "object",
          "x-kubernetes-preserve-unknown-fields": true
         }
        },
        "type": "object"
       },
       "status": {
        "properties": {
         "conditions": {
          "items": {
           "properties": {
            "lastTransitionTime": {
             "format": "date-time",
             "type": "string"
            },
            "message": {
             "type": "string"
            },
            "reason": {
             "type": "string"
            },
            "status": {
             "type": "string"
            },
            "type": {
             "type": "string"
            }
           },
           "required": [
            "type"
           ],
           "type": "object"
          },
          "type": "array",
          "x-kubernetes-list-map-keys": [
           "type"
          ],
          "x-kubernetes-list-type": "map"
         },
         "generations": {
          "items": {
           "properties": {
            "group": {
             "type": "string"
            },
            "hash": {
             "type": "string"
            },
            "lastGeneration": {
             "format": "int64",
             "type": "integer"
            },
            "name": {
             "type": "string"
            },
            "namespace": {
             "type": "string"
            },
            "resource": {
             "type": "string"
            }
           },
           "type": "object"
          },
          "type": "array",
          "x-kubernetes-list-type": "atomic"
         },
         "observedGeneration": {
          "format": "int64",
          "type": "integer"
         },
         "readyReplicas": {
          "format": "int32",
          "type": "integer"
         },
         "version": {
          "type": "string"
         }
        },
        "type": "object"
       }
      },
      "required": [
       "spec"
      ],
      "type": "object"
     }
    },
    "served": true,
    "storage": true,
    "subresources": {
     "status": {}
    }
   }
  ]
 }
}"##;

    fn csi_crd() -> Value {
        serde_json::from_str(CLUSTER_CSI_DRIVER_CRD).unwrap()
    }

    fn csi_schema() -> Schema {
        let crd = csi_crd();
        Schema::parse(&crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]).unwrap()
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(|e| e.to_string()).collect()
    }

    fn has(errs: &[FieldError], want: &str) -> bool {
        let got = messages(errs);
        if !got.iter().any(|g| g == want) {
            eprintln!("missing {want:?} in:");
            for g in &got {
                eprintln!("  {g}");
            }
            return false;
        }
        true
    }

    /// The server's processing of a CR body: prune, default, validate.
    fn admit(schema: &Schema, mut obj: Value) -> (Value, Vec<String>, Vec<FieldError>) {
        let pruned = prune(schema, &mut obj);
        apply_defaults(schema, &mut obj);
        let errs = validate(schema, &obj);
        (obj, pruned, errs)
    }

    // ----- helpers -------------------------------------------------------------------------

    #[test]
    fn go_formatting() {
        assert_eq!(go_quote("a\"b\n"), "\"a\\\"b\\n\"");
        assert_eq!(go_float(32.0), "32");
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(0.00001), "1e-05");
    }

    #[test]
    fn dns_rules() {
        assert!(dns1123_subdomain_errors("operator.openshift.io").is_empty());
        assert_eq!(
            dns1123_subdomain_errors("Bad_Group"),
            vec![DNS1123_SUBDOMAIN_MSG.to_string()]
        );
        assert!(dns1035_label_errors("v1beta1").is_empty());
        assert_eq!(
            dns1035_label_errors("1v"),
            vec![DNS1035_LABEL_MSG.to_string()]
        );
        assert_eq!(dns1035_label_errors(&"a".repeat(64)).len(), 1);
    }

    // ----- the ClusterCSIDriver CRD ---------------------------------------------------------

    #[test]
    fn cluster_csi_driver_crd_is_valid_and_served() {
        let crd = csi_crd();
        let errs = validate_crd(&crd, None);
        assert!(errs.is_empty(), "{:#?}", messages(&errs));
        let info = crd_info(&crd).unwrap();
        assert_eq!(info.group, "operator.openshift.io");
        assert_eq!(info.plural, "clustercsidrivers");
        assert_eq!(info.singular, "clustercsidriver");
        assert_eq!(info.kind, "ClusterCSIDriver");
        assert_eq!(info.list_kind, "ClusterCSIDriverList");
        assert!(!info.namespaced);
        assert_eq!(info.versions.len(), 1);
        let v = &info.versions[0];
        assert!(
            v.storage
                && v.status_subresource
                && v.scale_subresource.is_none()
                && v.schema.is_some()
        );
    }

    #[test]
    fn prepare_crd_defaults_like_the_server() {
        let mut crd = csi_crd();
        crd["spec"]["names"]
            .as_object_mut()
            .unwrap()
            .remove("listKind");
        crd["spec"]["names"]
            .as_object_mut()
            .unwrap()
            .remove("singular");
        prepare_crd(&mut crd, None);
        assert_eq!(crd["spec"]["names"]["listKind"], "ClusterCSIDriverList");
        assert_eq!(crd["spec"]["names"]["singular"], "clustercsidriver");
        assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
        // Update keeps the old stored versions and adds the new storage version.
        let old = json!({"spec": crd["spec"].clone(), "status": {"storedVersions": ["v1alpha1"], "conditions": []}});
        let mut new = crd.clone();
        prepare_crd(&mut new, Some(&old));
        assert_eq!(new["status"]["storedVersions"], json!(["v1alpha1", "v1"]));
    }

    #[test]
    fn cluster_csi_driver_cr_round_trip() {
        let s = csi_schema();
        let cr = json!({
            "apiVersion": "operator.openshift.io/v1",
            "kind": "ClusterCSIDriver",
            "metadata": {"name": "cinder.csi.openstack.org", "labels": {"a": "b"}},
            "spec": {
                "managementState": "Managed",
                "unknownField": 1,
                "observedConfig": {"anything": {"goes": [1, 2]}},
                "driverConfig": {"driverType": "", "mystery": true, "vSphere": {"topologyCategories": ["a"], "x": 1}}
            },
            "status": {"conditions": [{"type": "Available", "status": "True", "bogus": "x"}]},
            "topLevelJunk": {}
        });
        let (obj, pruned, errs) = admit(&s, cr);
        assert!(errs.is_empty(), "{:#?}", messages(&errs));
        assert_eq!(
            pruned,
            vec![
                "spec.driverConfig.mystery",
                "spec.driverConfig.vSphere.x",
                "spec.unknownField",
                "status.conditions[0].bogus",
                "topLevelJunk",
            ]
        );
        assert_eq!(
            obj["metadata"]["labels"]["a"], "b",
            "root metadata is left to the caller"
        );
        assert_eq!(
            obj["spec"]["observedConfig"]["anything"]["goes"],
            json!([1, 2]),
            "preserve-unknown-fields keeps everything"
        );
        assert_eq!(obj["spec"]["logLevel"], "Normal");
        assert_eq!(obj["spec"]["operatorLogLevel"], "Normal");
        assert!(
            obj["spec"].get("storageClassState").is_none(),
            "no default, stays absent"
        );
    }

    #[test]
    fn pattern_perl_classes_are_ascii_as_in_go() {
        // kube-apiserver runs `pattern` through Go's regexp, whose `\d` is [0-9] only.
        let s = Schema::parse(&json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "count": {"type": "string", "pattern": "^\\d+$"}
            }}}
        }))
        .unwrap();
        let cr = |v: &str| json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"}, "spec": {"count": v}});
        assert!(validate(&s, &cr("42")).is_empty());
        let errs = validate(&s, &cr("\u{663}"));
        assert!(
            has(
                &errs,
                "spec.count: Invalid value: \"\u{663}\": spec.count in body should match '^\\d+$'"
            ),
            "{:#?}",
            messages(&errs)
        );
    }

    #[test]
    fn cluster_csi_driver_cr_errors_read_like_the_server() {
        let s = csi_schema();
        let cr = json!({
            "apiVersion": "operator.openshift.io/v1",
            "kind": "ClusterCSIDriver",
            "metadata": {"name": "foo.csi.example.com"},
            "spec": {
                "managementState": "Sometimes",
                "logLevel": "Foo",
                "driverConfig": {
                    "driverType": "OpenStack",
                    "vSphere": {"globalMaxSnapshotsPerBlockVolume": "3", "granularMaxSnapshotsPerBlockVolumeInVSAN": 33},
                    "gcp": {"kmsKey": {"keyRing": "", "name": "n", "projectID": "abc"}},
                    "azure": {"diskEncryptionSet": {"name": "x".repeat(81), "resourceGroup": "rg", "subscriptionID": 5}}
                }
            }
        });
        let (_, _, errs) = admit(&s, cr);
        for want in [
            "metadata.name: Unsupported value: \"foo.csi.example.com\": supported values: \"ebs.csi.aws.com\", \"efs.csi.aws.com\", \"disk.csi.azure.com\", \"file.csi.azure.com\", \"filestore.csi.storage.gke.io\", \"pd.csi.storage.gke.io\", \"cinder.csi.openstack.org\", \"csi.vsphere.vmware.com\", \"manila.csi.openstack.org\", \"csi.ovirt.org\", \"csi.kubevirt.io\", \"csi.sharedresource.openshift.io\", \"diskplugin.csi.alibabacloud.com\", \"vpc.block.csi.ibm.io\", \"powervs.csi.ibm.com\", \"secrets-store.csi.k8s.io\", \"smb.csi.k8s.io\"",
            "spec.managementState: Invalid value: \"Sometimes\": spec.managementState in body should match '^(Managed|Unmanaged|Force|Removed)$'",
            "spec.logLevel: Unsupported value: \"Foo\": supported values: \"\", \"Normal\", \"Debug\", \"Trace\", \"TraceAll\"",
            "spec.driverConfig.driverType: Unsupported value: \"OpenStack\": supported values: \"\", \"AWS\", \"Azure\", \"GCP\", \"IBMCloud\", \"vSphere\"",
            "spec.driverConfig.vSphere.globalMaxSnapshotsPerBlockVolume: Invalid value: \"string\": spec.driverConfig.vSphere.globalMaxSnapshotsPerBlockVolume in body must be of type integer: \"string\"",
            "spec.driverConfig.vSphere.granularMaxSnapshotsPerBlockVolumeInVSAN: Invalid value: 33: spec.driverConfig.vSphere.granularMaxSnapshotsPerBlockVolumeInVSAN in body should be less than or equal to 32",
            "spec.driverConfig.gcp.kmsKey.keyRing: Invalid value: \"\": spec.driverConfig.gcp.kmsKey.keyRing in body should be at least 1 chars long",
            "spec.driverConfig.gcp.kmsKey.projectID: Invalid value: \"abc\": spec.driverConfig.gcp.kmsKey.projectID in body should be at least 6 chars long",
            "spec.driverConfig.azure.diskEncryptionSet.name: Too long: may not be more than 80 bytes",
            "spec.driverConfig.azure.diskEncryptionSet.subscriptionID: Invalid value: \"integer\": spec.driverConfig.azure.diskEncryptionSet.subscriptionID in body must be of type string: \"integer\"",
        ] {
            assert!(has(&errs, want), "{want}");
        }
        assert_eq!(errs.len(), 10, "{:#?}", messages(&errs));
    }

    #[test]
    fn required_fields_are_reported_at_their_path() {
        let s = csi_schema();
        let (_, _, errs) = admit(
            &s,
            json!({"metadata": {"name": "cinder.csi.openstack.org"}}),
        );
        assert_eq!(messages(&errs), vec!["spec: Required value"]);
        let (_, _, errs) = admit(
            &s,
            json!({"metadata": {"name": "cinder.csi.openstack.org"}, "spec": {"driverConfig": {"ibmcloud": {}}}}),
        );
        assert!(has(&errs, "spec.driverConfig.driverType: Required value"));
        assert!(has(
            &errs,
            "spec.driverConfig.ibmcloud.encryptionKeyCRN: Required value"
        ));
    }

    #[test]
    fn status_subresource_validation_names_values_relative_to_status() {
        let s = csi_schema();
        let obj = json!({"status": {"readyReplicas": "2", "conditions": [{"type": "A"}, {"type": "A"}, {"status": "x"}]}});
        let errs = validate_status(&s, &obj);
        assert!(has(
            &errs,
            "status.readyReplicas: Invalid value: \"string\": readyReplicas in body must be of type integer: \"string\""
        ));
        assert!(has(&errs, "status.conditions[2].type: Required value"));
        assert!(has(
            &errs,
            "status.conditions[1]: Duplicate value: {\"type\":\"A\"}"
        ));
        assert!(
            validate_status(&s, &json!({"spec": {}})).is_empty(),
            "no status, nothing to check"
        );
    }

    #[test]
    fn list_types_come_from_the_schema() {
        let s = csi_schema();
        assert_eq!(
            s.list_kind(&["status", "conditions"]),
            ListKind::Map(vec!["type".into()])
        );
        assert_eq!(s.list_kind(&["status", "generations"]), ListKind::Atomic);
        assert_eq!(
            s.list_kind(&["spec", "driverConfig", "vSphere", "topologyCategories"]),
            ListKind::Atomic
        );
        assert_eq!(s.list_kind(&["spec", "nope"]), ListKind::Atomic);
        assert_eq!(s.list_kind(&[]), ListKind::Atomic);
    }

    // ----- a namespaced CRD with nested lists ------------------------------------------------

    fn widget_crd() -> Value {
        // A raw string: the json! macro would exceed the recursion limit at this depth.
        serde_json::from_str(
            r#"{
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
                "versions": [{
                    "name": "v1",
                    "served": true,
                    "storage": true,
                    "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                    "additionalPrinterColumns": [{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}],
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["replicas"],
                                "properties": {
                                    "replicas": {"type": "integer", "minimum": 0},
                                    "ratio": {"type": "number", "maximum": 1.5, "nullable": true},
                                    "size": {"type": "string"},
                                    "mode": {"type": "string", "default": "auto"},
                                    "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                                    "created": {"type": "string", "format": "date-time"},
                                    "labels": {"type": "object", "additionalProperties": {"type": "string", "default": "x"}},
                                    "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set", "maxItems": 3},
                                    "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                                    "groups": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name"],
                                        "items": {
                                            "type": "object",
                                            "required": ["name"],
                                            "properties": {
                                                "name": {"type": "string"},
                                                "members": {
                                                    "type": "array",
                                                    "items": {
                                                        "type": "object",
                                                        "properties": {
                                                            "user": {"type": "string", "minLength": 1},
                                                            "role": {"type": "string", "enum": ["admin", "viewer"], "default": "viewer"}
                                                        }
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                            },
                            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
                        }
                    }}
                }]
            }
        }"#,
        )
        .unwrap()
    }

    fn widget_schema() -> Schema {
        Schema::parse(&widget_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]).unwrap()
    }

    #[test]
    fn widget_crd_is_valid_and_namespaced() {
        let crd = widget_crd();
        assert!(
            validate_crd(&crd, None).is_empty(),
            "{:#?}",
            messages(&validate_crd(&crd, None))
        );
        let info = crd_info(&crd).unwrap();
        assert!(info.namespaced);
        assert_eq!(info.list_kind, "WidgetList");
        assert_eq!(info.singular, "widget");
        assert_eq!(info.short_names, vec!["wd"]);
        assert_eq!(info.categories, vec!["all"]);
        assert!(info.versions[0].scale_subresource.is_some());
        assert_eq!(info.versions[0].printer_columns.len(), 1);
        let s = info.versions[0].schema.as_ref().unwrap();
        assert_eq!(
            s.list_kind(&["spec", "groups"]),
            ListKind::Map(vec!["name".into()])
        );
        assert_eq!(s.list_kind(&["spec", "tags"]), ListKind::Set);
        assert_eq!(
            s.list_kind(&["spec", "groups", "members"]),
            ListKind::Atomic
        );
    }

    #[test]
    fn defaults_apply_inside_arrays_and_maps() {
        let s = widget_schema();
        let cr = json!({"spec": {
            "replicas": 1,
            "labels": {"a": "b", "c": null},
            "groups": [{"name": "g", "members": [{"user": "u"}, {"user": "v", "role": "admin"}]}]
        }});
        let (obj, pruned, errs) = admit(&s, cr);
        assert!(pruned.is_empty(), "{pruned:?}");
        assert!(errs.is_empty(), "{:#?}", messages(&errs));
        assert_eq!(obj["spec"]["mode"], "auto");
        assert_eq!(obj["spec"]["labels"], json!({"a": "b", "c": "x"}));
        assert_eq!(obj["spec"]["groups"][0]["members"][0]["role"], "viewer");
        assert_eq!(obj["spec"]["groups"][0]["members"][1]["role"], "admin");
    }

    #[test]
    fn nulls_are_dropped_defaulted_or_rejected_like_the_server() {
        let s = widget_schema();
        let cr = json!({"spec": {"replicas": 1, "size": null, "mode": null, "ratio": null, "tags": [null]}});
        let (obj, _, errs) = admit(&s, cr);
        assert!(
            obj["spec"].get("size").is_none(),
            "non-nullable null without default is dropped"
        );
        assert_eq!(
            obj["spec"]["mode"], "auto",
            "non-nullable null with a default is defaulted"
        );
        assert_eq!(obj["spec"]["ratio"], Value::Null, "nullable null stays");
        assert_eq!(
            messages(&errs),
            vec![
                "spec.tags[0]: Invalid value: \"null\": spec.tags[0] in body must be of type string: \"null\""
            ]
        );
    }

    #[test]
    fn widget_type_errors_at_several_depths() {
        let s = widget_schema();
        let cr = json!({"spec": {
            "replicas": "string",
            "ratio": 2.5,
            "port": true,
            "created": "yesterday",
            "tags": ["a", "b", "a", "c"],
            "template": {"kind": "Pod"},
            "groups": [{"name": "g", "members": [{"user": ""}, {"user": 5, "role": "owner"}]}, {"name": "g"}, "x"]
        }});
        let (_, _, errs) = admit(&s, cr);
        for want in [
            "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
            "spec.ratio: Invalid value: 2.5: spec.ratio in body should be less than or equal to 1.5",
            "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
            "<nil>: Invalid value: \"\": \"spec.port\" must validate at least one schema (anyOf)",
            "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer: \"boolean\"",
            "spec.created: Invalid value: \"yesterday\": spec.created in body must be of type date-time: \"yesterday\"",
            "spec.tags: Invalid value: 4: must have at most 3 items",
            "spec.tags[2]: Duplicate value: \"a\"",
            "spec.template.apiVersion: Required value: must not be empty",
            "spec.groups[0].members[0].user: Invalid value: \"\": spec.groups[0].members[0].user in body should be at least 1 chars long",
            "spec.groups[0].members[1].user: Invalid value: \"integer\": spec.groups[0].members[1].user in body must be of type string: \"integer\"",
            "spec.groups[0].members[1].role: Unsupported value: \"owner\": supported values: \"admin\", \"viewer\"",
            "spec.groups[2]: Invalid value: \"string\": spec.groups[2] in body must be of type object: \"string\"",
            "spec.groups[2]: Invalid value: \"x\": must be an object for an array of list-type map",
        ] {
            assert!(has(&errs, want), "{want}");
        }
    }

    #[test]
    fn list_map_duplicate_keys() {
        let s = widget_schema();
        let (_, _, errs) = admit(
            &s,
            json!({"spec": {"replicas": 0, "groups": [{"name": "a"}, {"name": "a"}, {"name": "a"}]}}),
        );
        assert_eq!(
            messages(&errs),
            vec!["spec.groups[1]: Duplicate value: {\"name\":\"a\"}"]
        );
    }

    #[test]
    fn integers_numbers_and_formats() {
        let s = widget_schema();
        // 2.0 is an integral float: accepted for an integer field, as in Go.
        let (_, _, errs) = admit(
            &s,
            json!({"spec": {"replicas": 2.0, "created": "2024-02-29T10:00:00Z"}}),
        );
        assert!(errs.is_empty(), "{:#?}", messages(&errs));
        let (_, _, errs) = admit(&s, json!({"spec": {"replicas": 2.5}}));
        assert_eq!(
            messages(&errs),
            vec![
                "spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\""
            ]
        );
        let (_, _, errs) = admit(&s, json!({"spec": {"replicas": -1}}));
        assert_eq!(
            messages(&errs),
            vec![
                "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
            ]
        );
        let (_, _, errs) = admit(&s, json!({"spec": {"replicas": 1, "created": 5}}));
        assert_eq!(
            messages(&errs),
            vec![
                "spec.created: Invalid value: \"int64\": spec.created in body must be of type date-time: \"int64\""
            ]
        );
        let (_, _, errs) = admit(&s, json!({"spec": {"replicas": 1, "port": "http"}}));
        assert!(errs.is_empty());
        let (_, _, errs) = admit(&s, json!({"spec": {"replicas": 1, "port": 8080}}));
        assert!(errs.is_empty());
    }

    #[test]
    fn embedded_resources_keep_type_meta_and_prune_object_meta() {
        let s = widget_schema();
        let cr = json!({"spec": {"replicas": 1, "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1}, "spec": {"x": 1}}}});
        let (obj, pruned, errs) = admit(&s, cr);
        assert!(errs.is_empty(), "{:#?}", messages(&errs));
        assert_eq!(pruned, vec!["spec.template.metadata.bogus"]);
        assert_eq!(obj["spec"]["template"]["spec"]["x"], 1);
        assert_eq!(obj["spec"]["template"]["kind"], "Pod");
        let (_, _, errs) = admit(
            &s,
            json!({"spec": {"replicas": 1, "template": {"apiVersion": 1, "kind": "bad kind"}}}),
        );
        assert!(has(
            &errs,
            "spec.template.apiVersion: Invalid value: 1: must be a string"
        ));
        assert!(errs.iter().any(
            |e| e.field == "spec.template.kind" && e.detail.starts_with("may have mixed case")
        ));
    }

    #[test]
    fn preserve_unknown_fields_at_the_root() {
        let s = Schema::parse(&json!({
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}
        }))
        .unwrap();
        let mut obj = json!({"anything": {"x": 1}, "spec": {"a": "b", "junk": 1}});
        let pruned = prune(&s, &mut obj);
        assert_eq!(
            pruned,
            vec!["spec.junk"],
            "known fields are still pruned inside"
        );
        assert_eq!(obj, json!({"anything": {"x": 1}, "spec": {"a": "b"}}));
    }

    #[test]
    fn additional_properties_false_keeps_keys_and_fails_validation() {
        let s = Schema::parse(&json!({
            "type": "object",
            "properties": {"m": {"type": "object", "additionalProperties": false}}
        }))
        .unwrap();
        let (obj, pruned, errs) = admit(&s, json!({"m": {"k": {"deep": 1}}}));
        assert_eq!(pruned, vec!["m.k.deep"]);
        assert_eq!(obj, json!({"m": {"k": {}}}));
        assert_eq!(
            messages(&errs),
            vec!["m: Invalid value: \"k\": m.k in body is a forbidden property"]
        );
    }

    // ----- malformed CRDs -------------------------------------------------------------------

    fn minimal_crd() -> Value {
        json!({
            "metadata": {"name": "foos.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "foos", "kind": "Foo"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}
                }}}]
            }
        })
    }

    /// Sets the value at a JSON pointer, creating the last key if needed.
    fn with(mut crd: Value, pointer: &str, v: Value) -> Value {
        let (parent, last) = pointer.rsplit_once('/').unwrap();
        let target = if parent.is_empty() {
            &mut crd
        } else {
            crd.pointer_mut(parent).unwrap()
        };
        match target {
            Value::Object(m) => {
                m.insert(last.to_string(), v);
            }
            Value::Array(a) => a[last.parse::<usize>().unwrap()] = v,
            _ => panic!("{pointer}"),
        }
        crd
    }

    fn crd_errors(crd: &Value) -> Vec<FieldError> {
        validate_crd(crd, None)
    }

    #[test]
    fn minimal_crd_is_valid() {
        assert!(
            crd_errors(&minimal_crd()).is_empty(),
            "{:#?}",
            messages(&crd_errors(&minimal_crd()))
        );
    }

    #[test]
    fn crd_names_and_group() {
        let errs = crd_errors(&with(minimal_crd(), "/spec/names", json!({})));
        assert!(has(&errs, "spec.names.plural: Required value"));
        assert!(has(&errs, "spec.names.kind: Required value"));
        assert!(has(&errs, "spec.names.listKind: Required value"));
        assert!(has(
            &errs,
            "metadata.name: Invalid value: \"foos.example.com\": must be spec.names.plural+\".\"+spec.group"
        ));
        let errs = crd_errors(&with(
            with(minimal_crd(), "/spec/group", json!("example")),
            "/metadata/name",
            json!("foos.example"),
        ));
        assert_eq!(
            messages(&errs),
            vec![
                "spec.group: Invalid value: \"example\": should be a domain with at least one dot"
            ]
        );
        let errs = crd_errors(&with(minimal_crd(), "/spec/names/kind", json!("Foo_Bar")));
        assert!(errs.iter().any(|e| {
            e.field == "spec.names.kind"
                && e.detail.starts_with(
                    "may have mixed case, but should otherwise match: a DNS-1035 label",
                )
        }));
        let errs = crd_errors(&with(minimal_crd(), "/spec/names/listKind", json!("Foo")));
        assert!(has(
            &errs,
            "spec.names.listKind: Invalid value: \"Foo\": kind and listKind may not be the same"
        ));
        let errs = crd_errors(&with(minimal_crd(), "/metadata", json!({})));
        assert!(has(
            &errs,
            "metadata.name: Required value: name or generateName is required"
        ));
    }

    #[test]
    fn crd_scope_and_versions() {
        let errs = crd_errors(&with(minimal_crd(), "/spec/scope", json!("Global")));
        assert_eq!(
            messages(&errs),
            vec![
                "spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\""
            ]
        );
        let errs = crd_errors(&with(minimal_crd(), "/spec/versions", json!([])));
        assert!(errs.iter().any(|e| e.field == "spec.versions"
            && e.detail == "must have exactly one version marked as storage version"));
        assert!(has(
            &errs,
            "status.storedVersions: Invalid value: []: must have at least one stored version"
        ));
        let mut crd = minimal_crd();
        let v = crd["spec"]["versions"][0].clone();
        let mut v2 = v.clone();
        v2["name"] = json!("v2");
        crd["spec"]["versions"] = json!([v, v2]);
        let errs = crd_errors(&crd);
        assert_eq!(errs.len(), 2, "{:#?}", messages(&errs));
        assert_eq!(errs[0].field, "spec.versions");
        assert_eq!(
            errs[0].detail,
            "must have exactly one version marked as storage version"
        );
        // Only the first storage version is recorded on create, so the server also says this.
        assert_eq!(
            errs[1].to_string(),
            "status.storedVersions: Invalid value: [\"v1\"]: must have the storage version v2"
        );
        let v = crd["spec"]["versions"][0].clone();
        crd["spec"]["versions"] = json!([v.clone(), v]);
        let errs = crd_errors(&crd);
        assert!(
            errs.iter()
                .any(|e| e.detail == "must contain unique version names")
        );
        let errs = crd_errors(&with(minimal_crd(), "/spec/versions/0/name", json!("V1")));
        assert!(errs.iter().any(|e| e.field == "spec.versions[0].name"));
        assert!(
            errs.iter().any(|e| e.field == "spec.version"),
            "the internal spec.version repeats it"
        );
    }

    #[test]
    fn crd_schema_required_and_paths_per_version() {
        let errs = crd_errors(&with(minimal_crd(), "/spec/versions/0/schema", Value::Null));
        assert_eq!(
            messages(&errs),
            vec!["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"]
        );
        // Identical schemas are reported under spec.validation, different ones per version.
        let bad = json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"properties": {}}}}});
        let errs = crd_errors(&with(minimal_crd(), "/spec/versions/0/schema", bad.clone()));
        assert_eq!(
            messages(&errs),
            vec![
                "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
            ]
        );
        let mut crd = minimal_crd();
        let mut v2 = crd["spec"]["versions"][0].clone();
        v2["name"] = json!("v2");
        v2["storage"] = json!(false);
        v2["schema"] = bad;
        crd["spec"]["versions"].as_array_mut().unwrap().push(v2);
        let errs = crd_errors(&crd);
        assert_eq!(
            messages(&errs),
            vec![
                "spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
            ]
        );
    }

    fn schema_errors(schema: Value) -> Vec<FieldError> {
        crd_errors(&with(
            minimal_crd(),
            "/spec/versions/0/schema/openAPIV3Schema",
            schema,
        ))
    }

    #[test]
    fn non_structural_schemas() {
        let p = "spec.validation.openAPIV3Schema";
        let errs = schema_errors(json!({"properties": {"spec": {"type": "object"}}}));
        assert_eq!(
            messages(&errs),
            vec![format!(
                "{p}.type: Required value: must not be empty at the root"
            )]
        );
        let errs = schema_errors(json!({"type": "object", "properties": {"l": {"type": "array"}}}));
        assert_eq!(
            messages(&errs),
            vec![format!(
                "{p}.properties[l].items: Required value: must be specified"
            )]
        );
        let errs = schema_errors(
            json!({"type": "object", "properties": {"m": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}}),
        );
        assert_eq!(
            messages(&errs),
            vec![format!(
                "{p}.properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
            )]
        );
        let errs = schema_errors(
            json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"namespace": {"type": "string"}}}}}),
        );
        assert_eq!(
            messages(&errs),
            vec![format!(
                "{p}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
            )]
        );
        let errs = schema_errors(
            json!({"type": "object", "properties": {"a": {"type": "string", "anyOf": [{"type": "string", "description": "d"}]}}}),
        );
        assert_eq!(
            messages(&errs),
            vec![
                format!(
                    "{p}.properties[a].anyOf[0].description: Forbidden: must be empty to be structural"
                ),
                format!(
                    "{p}.properties[a].anyOf[0].type: Forbidden: must be empty to be structural"
                ),
            ]
        );
        let errs = schema_errors(
            json!({"type": "object", "anyOf": [{"properties": {"ghost": {"maxLength": 1}}}]}),
        );
        assert_eq!(
            messages(&errs),
            vec![format!(
                "{p}.properties[ghost]: Required value: because it is defined in {p}.anyOf[0].properties[ghost]"
            )]
        );
        let errs = schema_errors(json!({"type": "string"}));
        assert!(has(
            &errs,
            &format!("{p}.type: Invalid value: \"string\": must be object at the root")
        ));
        let errs = schema_errors(json!({"type": "object", "properties": {"a": {"type": "strin"}}}));
        assert!(has(
            &errs,
            &format!(
                "{p}.properties[a].type: Unsupported value: \"strin\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""
            )
        ));
        let errs = schema_errors(
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "(x"}}}),
        );
        assert_eq!(
            messages(&errs),
            vec![format!(
                "{p}.properties[a].pattern: Invalid value: \"(x\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `(x`"
            )]
        );
        let errs = schema_errors(
            json!({"type": "object", "properties": {"p": {"x-kubernetes-int-or-string": true}}}),
        );
        assert!(
            errs.is_empty(),
            "int-or-string needs no type: {:#?}",
            messages(&errs)
        );
        let errs = schema_errors(
            json!({"type": "object", "properties": {"p": {"type": "object", "x-kubernetes-preserve-unknown-fields": false}}}),
        );
        assert_eq!(
            messages(&errs),
            vec![format!(
                "{p}.properties[p].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
            )]
        );
        let errs = schema_errors(json!({"type": "object", "nullable": true}));
        assert!(has(
            &errs,
            &format!("{p}.nullable: Forbidden: nullable cannot be true at the root")
        ));
        let errs = schema_errors(
            json!({"type": "object", "properties": {"u": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}}}),
        );
        assert!(has(
            &errs,
            &format!(
                "{p}.properties[u].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
            )
        ));
    }

    #[test]
    fn crd_defaults_must_validate_and_be_pruned() {
        let p = "spec.validation.openAPIV3Schema";
        let errs = schema_errors(
            json!({"type": "object", "properties": {"l": {"type": "string", "enum": ["A"], "default": "B"}}}),
        );
        assert_eq!(
            messages(&errs),
            vec![format!(
                "{p}.properties[l].default: Unsupported value: \"B\": supported values: \"A\""
            )]
        );
        let errs = schema_errors(
            json!({"type": "object", "properties": {"o": {"type": "object", "properties": {"a": {"type": "integer"}}, "default": {"a": 1, "b": 2}}}}),
        );
        assert_eq!(
            messages(&errs),
            vec![format!(
                "{p}.properties[o].default: Invalid value: {{\"a\":1,\"b\":2}}: must not have unknown fields"
            )]
        );
        let errs = schema_errors(
            json!({"type": "object", "properties": {"n": {"type": "integer", "default": "x"}}}),
        );
        assert_eq!(
            messages(&errs),
            vec![format!(
                "{p}.properties[n].default: Invalid value: \"string\":  in body must be of type integer: \"string\""
            )]
        );
        let errs = schema_errors(
            json!({"type": "object", "properties": {"metadata": {"type": "object", "default": {}}}}),
        );
        assert!(has(
            &errs,
            &format!(
                "{p}.properties[metadata].default: Forbidden: must not be set in top-level metadata"
            )
        ));
    }

    #[test]
    fn crd_list_type_markers() {
        let p = "spec.validation.openAPIV3Schema";
        let errs = schema_errors(
            json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}, "x-kubernetes-list-type": "map"}}}),
        );
        assert_eq!(
            messages(&errs),
            vec![format!(
                "{p}.properties[l].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
            )]
        );
        let errs = schema_errors(
            json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"]}}}),
        );
        assert_eq!(
            messages(&errs),
            vec![format!(
                "{p}.properties[l].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
            )]
        );
        let errs = schema_errors(
            json!({"type": "object", "properties": {"l": {"type": "string", "x-kubernetes-list-type": "bag"}}}),
        );
        assert!(has(
            &errs,
            &format!(
                "{p}.properties[l].type: Invalid value: \"string\": must be array if x-kubernetes-list-type is specified"
            )
        ));
        assert!(has(
            &errs,
            &format!(
                "{p}.properties[l].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\""
            )
        ));
    }

    #[test]
    fn crd_status_subresource_restricts_the_root() {
        let mut crd = with(
            minimal_crd(),
            "/spec/versions/0/subresources",
            json!({"status": {}}),
        );
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-embedded-resource"] =
            json!(true);
        let errs = crd_errors(&crd);
        assert!(
            errs.iter()
                .any(|e| e.field == "spec.validation.openAPIV3Schema"
                    && e.detail.starts_with("only [Description Type Format Title"))
        );
    }

    #[test]
    fn crd_subresources_columns_and_conversion() {
        let crd = with(
            minimal_crd(),
            "/spec/versions/0/subresources",
            json!({"scale": {"specReplicasPath": "spec.replicas"}}),
        );
        let errs = crd_errors(&crd);
        assert!(has(
            &errs,
            "spec.subresources.scale.specReplicasPath: Invalid value: \"spec.replicas\": must be a simple json path starting with ."
        ));
        assert!(has(
            &errs,
            "spec.subresources.scale.statusReplicasPath: Required value"
        ));
        let crd = with(
            minimal_crd(),
            "/spec/versions/0/additionalPrinterColumns",
            json!([{"name": "X", "type": "int", "jsonPath": ""}]),
        );
        let errs = crd_errors(&crd);
        assert!(has(
            &errs,
            "spec.additionalPrinterColumns[0].type: Invalid value: \"int\": must be one of boolean,date,integer,number,string"
        ));
        assert!(has(
            &errs,
            "spec.additionalPrinterColumns[0].JSONPath: Required value"
        ));
        let crd = with(
            minimal_crd(),
            "/spec/conversion",
            json!({"strategy": "Webhook"}),
        );
        let errs = crd_errors(&crd);
        assert!(has(
            &errs,
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"
        ));
        assert!(has(
            &errs,
            "spec.conversion.conversionReviewVersions: Required value"
        ));
    }

    #[test]
    fn crd_protected_groups_need_approval() {
        let crd = with(
            with(minimal_crd(), "/spec/group", json!("x.k8s.io")),
            "/metadata/name",
            json!("foos.x.k8s.io"),
        );
        let errs = crd_errors(&crd);
        assert_eq!(
            messages(&errs),
            vec![
                "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
            ]
        );
        let ok = with(
            crd.clone(),
            "/metadata/annotations",
            json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"}),
        );
        assert!(crd_errors(&ok).is_empty());
        let bypass = with(
            crd.clone(),
            "/metadata/annotations",
            json!({"api-approved.kubernetes.io": "unapproved, testing"}),
        );
        assert!(crd_errors(&bypass).is_empty());
        let bad = with(
            crd,
            "/metadata/annotations",
            json!({"api-approved.kubernetes.io": "yes"}),
        );
        assert!(
            crd_errors(&bad)[0]
                .detail
                .contains("with either a URL or a reason starting with \"unapproved\"")
        );
    }

    #[test]
    fn crd_update_rules() {
        let mut old = minimal_crd();
        prepare_crd(&mut old, None);
        // Not yet established: scope may change; group and plural never.
        let errs = validate_crd(
            &with(old.clone(), "/spec/scope", json!("Cluster")),
            Some(&old),
        );
        assert!(errs.is_empty(), "{:#?}", messages(&errs));
        old["status"]["conditions"] = json!([{"type": "Established", "status": "True"}]);
        let errs = validate_crd(
            &with(old.clone(), "/spec/scope", json!("Cluster")),
            Some(&old),
        );
        assert_eq!(
            messages(&errs),
            vec!["spec.scope: Invalid value: \"Cluster\": field is immutable"]
        );
        let errs = validate_crd(
            &with(old.clone(), "/spec/names/kind", json!("Bar")),
            Some(&old),
        );
        assert_eq!(
            messages(&errs),
            vec!["spec.names.kind: Invalid value: \"Bar\": field is immutable"]
        );
        let changed = with(
            with(old.clone(), "/spec/group", json!("other.com")),
            "/metadata/name",
            json!("foos.other.com"),
        );
        assert!(has(
            &validate_crd(&changed, Some(&old)),
            "spec.group: Invalid value: \"other.com\": field is immutable"
        ));
        // A version that was once stored can't disappear from spec.versions.
        let mut renamed = old.clone();
        renamed["spec"]["versions"][0]["name"] = json!("v2");
        let errs = validate_crd(&renamed, Some(&old));
        assert_eq!(
            messages(&errs),
            vec![
                "status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions"
            ]
        );
        // preserveUnknownFields can't be switched on.
        let errs = validate_crd(
            &with(old.clone(), "/spec/preserveUnknownFields", json!(true)),
            Some(&old),
        );
        assert!(has(
            &errs,
            "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"
        ));
    }

    #[test]
    fn junctors_numbers_and_object_sizes() {
        let s = Schema::parse(&json!({
            "type": "object",
            "properties": {
                "one": {"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]},
                "all": {"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 3}]},
                "not": {"type": "string", "not": {"enum": ["x"]}},
                "mul": {"type": "integer", "multipleOf": 5},
                "exc": {"type": "number", "minimum": 1, "exclusiveMinimum": true},
                "obj": {"type": "object", "minProperties": 2, "maxProperties": 3, "additionalProperties": {"type": "string"}}
            }
        }))
        .unwrap();
        let errs = validate(
            &s,
            &json!({"one": 5, "all": "a", "not": "x", "mul": 7, "exc": 1.0, "obj": {"a": "1"}}),
        );
        for want in [
            "<nil>: Invalid value: \"\": \"one\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
            "all: Invalid value: \"a\": all in body should be at least 2 chars long",
            "<nil>: Invalid value: \"\": \"all\" must validate all the schemas (allOf)",
            "<nil>: Invalid value: \"\": \"not\" must not validate the schema (not)",
            "mul: Invalid value: 7: mul in body should be a multiple of 5",
            "exc: Invalid value: 1.0: exc in body should be greater than 1",
            "obj: Invalid value: 1: obj in body should have at least 2 properties",
        ] {
            assert!(has(&errs, want), "{want}");
        }
        assert_eq!(errs.len(), 7, "{:#?}", messages(&errs));
        let errs = validate(&s, &json!({"obj": {"a": "1", "b": "2", "c": "3", "d": 4}}));
        assert!(has(
            &errs,
            "obj: Invalid value: 4: must have at most 3 items"
        ));
        assert!(has(
            &errs,
            "obj.d: Invalid value: \"integer\": obj.d in body must be of type string: \"integer\""
        ));
    }

    #[test]
    fn string_formats() {
        let cases: &[(&str, &str, bool)] = &[
            ("date-time", "2024-01-02T03:04:05.123+01:00", true),
            ("date-time", "2024-01-02 03:04:05Z", false),
            ("date-time", "2024-13-02T03:04:05Z", false),
            ("date", "2023-02-29", false),
            ("uuid", "F2007BBF-F802-4A47-9336-CF7C6B89B378", true),
            ("uuid", "f2007bbf-f802", false),
            ("uuid4", "f2007bbf-f802-4a47-9336-cf7c6b89b378", true),
            ("uuid3", "f2007bbf-f802-4a47-9336-cf7c6b89b378", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "10.0.0.256", false),
            ("ipv6", "fd00::1", true),
            ("ipv6", "10.0.0.1", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("mac", "00:1a:2b:3c:4d:5e", true),
            ("mac", "00:1a:2b", false),
            ("hostname", "api.example.com", true),
            ("hostname", "-bad.example.com", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "hello", false),
            ("email", "a@b.c", true),
            ("email", "nobody", false),
            ("uri", "https://example.com/x", true),
            ("uri", "example.com", false),
            ("password", "anything", true),
        ];
        for (f, v, want) in cases {
            assert_eq!(format_ok(f, v), *want, "{f} {v}");
        }
        // Unsupported formats are stripped by the server, so they never fail.
        let s = Schema::parse(&json!({"type": "string", "format": "int-or-whatever"})).unwrap();
        assert!(validate(&s, &json!("x")).is_empty());
    }

    #[test]
    fn more_crd_schema_rules() {
        let p = "spec.validation.openAPIV3Schema";
        let errs = schema_errors(
            json!({"type": "object", "properties": {"e": {"type": "object", "x-kubernetes-embedded-resource": true, "additionalProperties": {"type": "string"}}}}),
        );
        assert!(has(
            &errs,
            &format!(
                "{p}.properties[e].additionalProperties: Forbidden: must not be used if x-kubernetes-embedded-resource is set"
            )
        ));
        let errs = schema_errors(
            json!({"type": "object", "properties": {"e": {"type": "object", "x-kubernetes-embedded-resource": true}}}),
        );
        assert_eq!(
            messages(&errs),
            vec![format!(
                "{p}.properties[e].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
            )]
        );
        let errs = schema_errors(
            json!({"type": "object", "properties": {"i": {"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true}}}),
        );
        assert_eq!(
            messages(&errs),
            vec![format!(
                "{p}.properties[i].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true"
            )]
        );
        let errs = schema_errors(
            json!({"type": "object", "properties": {"m": {"type": "string", "x-kubernetes-map-type": "sometimes"}}}),
        );
        assert!(has(
            &errs,
            &format!(
                "{p}.properties[m].type: Invalid value: \"string\": must be object if x-kubernetes-map-type is specified"
            )
        ));
        assert!(has(
            &errs,
            &format!(
                "{p}.properties[m].x-kubernetes-map-type: Unsupported value: \"sometimes\": supported values: \"atomic\", \"granular\""
            )
        ));
        let errs = schema_errors(
            json!({"type": "object", "x-kubernetes-validations": [{"rule": " "}, {"rule": "a\nb"}, {"rule": "x", "reason": "Nope"}]}),
        );
        assert!(has(
            &errs,
            &format!("{p}.x-kubernetes-validations[0].rule: Required value: rule is not specified")
        ));
        assert!(has(
            &errs,
            &format!(
                "{p}.x-kubernetes-validations[1].message: Required value: message must be specified if rule contains line breaks"
            )
        ));
        assert!(
            errs.iter()
                .any(|e| e.field == format!("{p}.x-kubernetes-validations[2].reason"))
        );
        let errs = schema_errors(
            json!({"type": "object", "properties": {"s": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "set"}}}),
        );
        assert!(has(
            &errs,
            &format!(
                "{p}.properties[s].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set"
            )
        ));
        let crd = with(
            minimal_crd(),
            "/spec/versions/0/subresources",
            json!({"status": {}}),
        );
        let errs = crd_errors(&with(
            crd,
            "/spec/versions/0/schema/openAPIV3Schema/type",
            json!("array"),
        ));
        assert!(has(
            &errs,
            &format!(
                "{p}.type: Invalid value: \"array\": only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled"
            )
        ));
    }

    #[test]
    fn more_crd_version_rules() {
        let errs = crd_errors(&with(
            minimal_crd(),
            "/spec/versions/0/deprecationWarning",
            json!("old"),
        ));
        assert_eq!(
            messages(&errs),
            vec![
                "spec.versions[0].deprecationWarning: Invalid value: \"old\": can only be set for deprecated versions"
            ]
        );
        let crd = with(minimal_crd(), "/spec/versions/0/deprecated", json!(true));
        assert!(
            crd_errors(&with(
                crd.clone(),
                "/spec/versions/0/deprecationWarning",
                json!("use v2")
            ))
            .is_empty()
        );
        let errs = crd_errors(&with(
            crd,
            "/spec/versions/0/deprecationWarning",
            json!("a\tb"),
        ));
        assert!(
            errs[0]
                .detail
                .contains("non-printable character found at index 1")
        );
        let crd = with(
            minimal_crd(),
            "/spec/versions/0/subresources",
            json!({"scale": {"specReplicasPath": ".spec.r", "statusReplicasPath": ".status.r", "labelSelectorPath": ".metadata.x"}}),
        );
        assert!(has(
            &crd_errors(&crd),
            "spec.subresources.scale.labelSelectorPath: Invalid value: \".metadata.x\": should be a json path under either .spec or .status"
        ));
        let crd = with(
            minimal_crd(),
            "/spec/versions/0/additionalPrinterColumns",
            json!([{"name": "A", "type": "string", "format": "uuid", "jsonPath": ".a"}]),
        );
        assert!(has(
            &crd_errors(&crd),
            "spec.additionalPrinterColumns[0].format: Invalid value: \"uuid\": must be one of byte,date,date-time,double,float,int32,int64,password"
        ));
        let crd = with(
            minimal_crd(),
            "/spec/conversion",
            json!({"strategy": "None", "webhook": {"clientConfig": {"url": "https://x"}, "conversionReviewVersions": ["v1"]}}),
        );
        let errs = crd_errors(&crd);
        assert!(has(
            &errs,
            "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook"
        ));
        assert!(has(
            &errs,
            "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook"
        ));
        let crd = with(
            minimal_crd(),
            "/spec/conversion",
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://x"}, "conversionReviewVersions": ["v3"]}}),
        );
        assert!(has(
            &crd_errors(&crd),
            "spec.conversion.conversionReviewVersions: Invalid value: [\"v3\"]: must include at least one of v1, v1beta1"
        ));
        // A stored CRD that already lacked a schema may keep lacking it on update, but only in
        // versions that are not served.
        let mut old = with(minimal_crd(), "/spec/versions/0/schema", Value::Null);
        prepare_crd(&mut old, None);
        assert_eq!(
            messages(&validate_crd(&old, Some(&old))),
            vec![
                "spec.versions[0].schema.openAPIV3Schema: Required value: because otherwise all fields are pruned"
            ]
        );
        let unserved = with(old.clone(), "/spec/versions/0/served", json!(false));
        assert!(validate_crd(&unserved, Some(&old)).is_empty());
    }

    // ----- garbage in, errors out -------------------------------------------------------------

    #[test]
    fn malformed_crds_never_panic() {
        let garbage = [
            json!(null),
            json!(5),
            json!([]),
            json!({"spec": "x"}),
            json!({"spec": {"versions": "x", "names": 3, "group": 7}}),
            json!({"spec": {"versions": [1, null, "v1", {"name": 5, "schema": 3}]}}),
            json!({"spec": {"versions": [{"name": "v1", "storage": true, "schema": {"openAPIV3Schema": {"properties": 5}}}]}}),
            json!({"spec": {"versions": [{"name": "v1", "storage": true, "schema": {"openAPIV3Schema": {"type": 5, "items": [1]}}}]}}),
            json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": 5, "conversionReviewVersions": [1]}}}}),
            json!({"metadata": {"name": 5, "annotations": 5}, "status": {"storedVersions": "x"}}),
        ];
        for g in &garbage {
            let errs = validate_crd(g, None);
            assert!(!errs.is_empty(), "{g}");
            let _ = validate_crd(g, Some(g));
            let _ = crd_info(g);
            let mut m = g.clone();
            prepare_crd(&mut m, Some(g));
        }
        let errs = validate_crd(&garbage[6], None);
        assert!(has(
            &errs,
            "spec.validation.openAPIV3Schema: Invalid value: \"\": properties: must be an object"
        ));
    }

    #[test]
    fn malformed_schemas_are_parse_errors() {
        assert_eq!(
            Schema::parse(&json!(5)).unwrap_err(),
            "must be an object, not integer"
        );
        assert_eq!(
            Schema::parse(&json!({"type": 5})).unwrap_err(),
            "type: must be a string, not integer"
        );
        assert_eq!(
            Schema::parse(&json!({"properties": {"a": {"items": [{}]}}})).unwrap_err(),
            "properties[a].items: must be a schema object and not an array"
        );
        assert!(Schema::parse(&json!({"maxLength": "3"})).is_err());
        assert!(crd_info(&json!({"spec": {"versions": [{"name": "v1", "served": true, "schema": {"openAPIV3Schema": 1}}]}})).is_err());
    }

    #[test]
    fn malformed_objects_never_panic() {
        let schemas = [csi_schema(), widget_schema(), Schema::default()];
        let objs = [
            json!(null),
            json!(1),
            json!("x"),
            json!([1, {"a": null}]),
            json!({"spec": null}),
            json!({"spec": [], "status": "x"}),
            json!({"spec": {"groups": {"a": 1}, "tags": "x", "labels": [1], "template": []}}),
            json!({"spec": {"replicas": 1e300, "ratio": -1e300, "port": null, "groups": [null, null]}}),
            json!({"metadata": 5, "apiVersion": [], "kind": {}}),
        ];
        for s in &schemas {
            for o in &objs {
                let (_, _, _) = admit(s, o.clone());
                let _ = validate_status(s, o);
            }
        }
        let (obj, pruned, errs) = admit(&widget_schema(), json!({"spec": null}));
        assert_eq!(
            obj,
            json!({}),
            "non-nullable null without default is dropped"
        );
        assert!(pruned.is_empty());
        assert!(errs.is_empty(), "{:#?}", messages(&errs));
    }
}
