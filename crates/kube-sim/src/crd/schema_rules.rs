//! The rules a CRD's `openAPIV3Schema` must follow as a whole: root restrictions, structural
//! rules, and defaults that must validate and be pruned (the per-node rules: `node_rules`).

use super::common::bool_at;
use super::common::{m_bool, m_str, prop_path, props_of, sub_map};
use super::node_rules::{Ssv, openapi_checks};
use super::pattern::{Regex, RegexError};
use super::pruning::{META_FIELDS, prune_node};
use super::schema::Schema;
use super::validation::{Ctx, check};
use crate::field_error::{FieldError, child};
use serde_json::{Map, Value};

/// The JSONSchemaProps fields in Go struct order, as (JSON key, Go field name); the root check
/// with a status subresource walks them in this order and stops at the first offender.
pub(super) const SCHEMA_FIELDS: &[(&str, &str)] = &[
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

pub(super) const ROOT_ALLOWED_WITH_STATUS: &[&str] = &[
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
pub(super) fn is_zero(v: &Value) -> bool {
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
pub(super) fn validate_schema_block(
    block: &Value,
    status_enabled: bool,
    path: &str,
) -> Vec<FieldError> {
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
pub(super) enum Level {
    Root,
    Item,
    Field,
}

/// `anyOf: [{type: integer}, {type: string}]` exactly: the int-or-string exception.
pub(super) fn is_int_or_string_any_of(m: &Map<String, Value>) -> bool {
    let Some(a) = m.get("anyOf").and_then(Value::as_array) else {
        return false;
    };
    let only_type = |v: Option<&Value>, t: &str| {
        v.and_then(Value::as_object)
            .is_some_and(|o| o.len() == 1 && o.get("type").and_then(Value::as_str) == Some(t))
    };
    a.len() == 2 && only_type(a.first(), "integer") && only_type(a.get(1), "string")
}

/// `validateStructuralInvariants`.
pub(super) fn structural_invariants(
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
pub(super) fn root_metadata_ok(meta: &Map<String, Value>) -> bool {
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
pub(super) fn value_validation(
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
pub(super) fn nested_value_validation(
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
pub(super) fn structural_completeness(
    root: &Map<String, Value>,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    junctor_completeness(root, Some(root), path, path, errs);
}

pub(super) fn junctor_completeness(
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

pub(super) fn nested_completeness(
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
pub(super) fn defaults_check(
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
