//! The parsed `openAPIV3Schema`: [`Schema`], read once per CRD so that every write to a custom
//! resource walks a typed tree instead of re-reading JSON.

use super::common::json_type_name;
use super::pattern::Regex;
use crate::list_types::{ListKind, ListTypes};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// `additionalProperties`: a bare boolean or a schema.
#[derive(Debug, Clone)]
pub(super) enum Additional {
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
    pub(super) type_: String,
    /// The format as written, or empty when the server strips it as unsupported.
    pub(super) format: String,
    pub(super) nullable: bool,
    pub(super) default: Option<Value>,
    pub(super) enum_: Option<Vec<Value>>,
    pub(super) required: Vec<String>,
    pub(super) properties: BTreeMap<String, Schema>,
    pub(super) additional: Option<Additional>,
    pub(super) items: Option<Box<Schema>>,
    pub(super) maximum: Option<f64>,
    pub(super) exclusive_maximum: bool,
    pub(super) minimum: Option<f64>,
    pub(super) exclusive_minimum: bool,
    pub(super) multiple_of: Option<f64>,
    pub(super) max_length: Option<i64>,
    pub(super) min_length: Option<i64>,
    pub(super) pattern: Option<String>,
    /// The compiled pattern; `None` with a pattern set means "not enforceable here".
    pub(super) regex: Option<Regex>,
    pub(super) max_items: Option<i64>,
    pub(super) min_items: Option<i64>,
    pub(super) unique_items: bool,
    pub(super) max_properties: Option<i64>,
    pub(super) min_properties: Option<i64>,
    pub(super) all_of: Vec<Schema>,
    pub(super) any_of: Vec<Schema>,
    pub(super) one_of: Vec<Schema>,
    pub(super) not: Option<Box<Schema>>,
    pub(super) preserve_unknown: bool,
    pub(super) embedded: bool,
    pub(super) int_or_string: bool,
    pub(super) list_type: Option<String>,
    pub(super) list_map_keys: Vec<String>,
}

/// Formats the server keeps (`StripUnsupportedFormatsPostProcessor`); names compared with
/// dashes removed, as go-openapi normalizes them.
pub(super) const SUPPORTED_FORMATS: &[&str] = &[
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

pub(super) fn opt_f64(m: &Map<String, Value>, k: &str) -> Result<Option<f64>, String> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => Err(format!(
            "{k}: must be a number, not {}",
            json_type_name(other)
        )),
    }
}

pub(super) fn opt_i64(m: &Map<String, Value>, k: &str) -> Result<Option<i64>, String> {
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

pub(super) fn opt_bool(m: &Map<String, Value>, k: &str) -> Result<bool, String> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(format!(
            "{k}: must be a boolean, not {}",
            json_type_name(other)
        )),
    }
}

pub(super) fn opt_str(m: &Map<String, Value>, k: &str) -> Result<Option<String>, String> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "{k}: must be a string, not {}",
            json_type_name(other)
        )),
    }
}

pub(super) fn opt_strings(m: &Map<String, Value>, k: &str) -> Result<Vec<String>, String> {
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

pub(super) fn schema_list(m: &Map<String, Value>, k: &str) -> Result<Vec<Schema>, String> {
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
    pub(super) fn status(&self) -> Option<&Schema> {
        self.properties.get("status")
    }

    /// The schema that applies to a field of this object, as pruning and defaulting see it.
    pub(super) fn field_schema(&self, k: &str) -> FieldSchema<'_> {
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

pub(super) enum FieldSchema<'a> {
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
