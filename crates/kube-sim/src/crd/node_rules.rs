//! The OpenAPI rules every node of a CRD's schema must follow on its own
//! (`ValidateCustomResourceDefinitionOpenAPISchema`): types, formats, list and map markers,
//! and the static shape of `x-kubernetes-validations`.

use super::common::{m_bool, m_str, prop_path, props_of, sub_map};
use super::common::{not_supported, str_at};
use super::pruning::META_FIELDS;
use crate::field_error::FieldError;
use serde_json::{Map, Value};
use std::collections::HashSet;

pub(super) const OPENAPI_TYPES: &[&str] =
    &["array", "boolean", "integer", "number", "object", "string"];

/// `ValidateCustomResourceDefinitionOpenAPISchema` for one node and everything below it.
pub(super) fn openapi_checks(
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

pub(super) fn type_mismatch(path: &str, ty: &str, detail: &str) -> FieldError {
    if ty.is_empty() {
        FieldError::required(format!("{path}.type"), detail)
    } else {
        FieldError::invalid(format!("{path}.type"), Value::String(ty.into()), detail)
    }
}

pub(super) fn list_and_map_type_checks(
    m: &Map<String, Value>,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
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

pub(super) fn strings_of(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The static checks of `x-kubernetes-validations` (the CEL expressions are not compiled).
pub(super) fn validations_checks(m: &Map<String, Value>, path: &str, errs: &mut Vec<FieldError>) {
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

/// The part of `specStandardValidator` state that matters without CEL.
#[derive(Clone)]
pub(super) struct Ssv {
    pub(super) allow_defaults: bool,
    pub(super) reason: String,
    pub(super) inside_meta: bool,
}

impl Ssv {
    pub(super) fn forbid_defaults(&self, reason: &str) -> Ssv {
        Ssv {
            allow_defaults: false,
            reason: reason.to_string(),
            ..self.clone()
        }
    }
}
