//! Managers (`fieldpath.ManagedFields` plus times) and their `metadata.managedFields` encoding.

use super::fieldpath::{FieldSet, PathElement};
use super::text::{go_json_string, go_quote, json_type_name, rfc3339_seconds};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) manager: String,
    pub(super) operation: Operation,
    pub(super) api_version: String,
    pub(super) subresource: String,
    pub(super) time: Option<String>,
    pub(super) set: FieldSet,
}

/// Keyed by the server's manager identifier (see [`identifier`]).
pub(super) type Managers = BTreeMap<String, Entry>;

/// `BuildManagerIdentifier`: the JSON of the entry without fields, type and time, and without
/// apiVersion for appliers (so an applier is one manager across versions).
pub(super) fn identifier(
    manager: &str,
    operation: Operation,
    api_version: &str,
    subresource: &str,
) -> String {
    let mut out = String::from("{");
    let mut first = true;
    let mut field = |name: &str, value: &str, out: &mut String| {
        if value.is_empty() {
            return;
        }
        if !first {
            out.push(',');
        }
        first = false;
        go_json_string(name, out);
        out.push(':');
        go_json_string(value, out);
    };
    field("manager", manager, &mut out);
    field("operation", operation.as_str(), &mut out);
    if operation == Operation::Update {
        field("apiVersion", api_version, &mut out);
    }
    field("subresource", subresource, &mut out);
    out.push('}');
    out
}

pub(super) fn new_entry(
    manager: &str,
    operation: Operation,
    api_version: &str,
    subresource: &str,
) -> Entry {
    Entry {
        manager: manager.to_string(),
        operation,
        api_version: api_version.to_string(),
        subresource: subresource.to_string(),
        time: None,
        set: FieldSet::default(),
    }
}

/// `printManager`: how conflict messages name a manager.
pub(super) fn print_manager(e: &Entry) -> String {
    let mut s = go_quote(&e.manager);
    if !e.subresource.is_empty() {
        s = format!("{s} with subresource {}", go_quote(&e.subresource));
    }
    if e.operation == Operation::Update {
        s = format!("{s} using {}", e.api_version);
    }
    s
}

pub(super) fn decode_managed_fields(obj: &Value) -> Result<Managers, String> {
    let mut managers = Managers::new();
    let Some(raw) = obj.get("metadata").and_then(|m| m.get("managedFields")) else {
        return Ok(managers);
    };
    let entries = match raw {
        Value::Null => return Ok(managers),
        Value::Array(a) => a,
        other => {
            return Err(format!(
                "managedFields must be a list, got {}",
                json_type_name(other)
            ));
        }
    };
    for (i, raw_entry) in entries.iter().enumerate() {
        let Some(e) = raw_entry.as_object() else {
            return Err(format!("managed fields entry {i} is not an object"));
        };
        let string_field = |name: &str| -> Result<String, String> {
            match e.get(name) {
                None | Some(Value::Null) => Ok(String::new()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(other) => Err(format!(
                    "{name} of managed fields entry {i} must be a string, got {}",
                    json_type_name(other)
                )),
            }
        };
        let operation = match string_field("operation")?.as_str() {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return Err("operation must be `Apply` or `Update`".to_string()),
        };
        let api_version = string_field("apiVersion")?;
        if api_version.is_empty() {
            return Err("apiVersion must not be empty".to_string());
        }
        match string_field("fieldsType")?.as_str() {
            "FieldsV1" => {}
            "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
            other => {
                return Err(format!(
                    "invalid fieldsType {} in managed fields entry {i}",
                    go_quote(other)
                ));
            }
        }
        let manager = string_field("manager")?;
        let subresource = string_field("subresource")?;
        let time = Some(string_field("time")?).filter(|t| !t.is_empty());
        let set = FieldSet::from_fields_v1(e.get("fieldsV1").unwrap_or(&Value::Null))
            .map_err(|err| format!("error decoding versioned set from entry {i}: {err}"))?;
        let id = identifier(&manager, operation, &api_version, &subresource);
        managers.insert(
            id,
            Entry {
                manager,
                operation,
                api_version,
                subresource,
                time,
                set,
            },
        );
    }
    Ok(managers)
}

pub(super) fn encode_managed_fields(managers: &Managers) -> Option<Value> {
    if managers.is_empty() {
        return None;
    }
    let mut entries: Vec<&Entry> = managers.values().collect();
    entries.sort_by(|p, q| {
        let secs = |e: &Entry| e.time.as_deref().and_then(rfc3339_seconds).unwrap_or(0);
        p.operation
            .as_str()
            .cmp(q.operation.as_str())
            .then_with(|| secs(p).cmp(&secs(q)))
            .then_with(|| p.manager.cmp(&q.manager))
            .then_with(|| p.api_version.cmp(&q.api_version))
            .then_with(|| p.subresource.cmp(&q.subresource))
    });
    let encoded = entries
        .into_iter()
        .map(|e| {
            let mut m = Map::new();
            if !e.manager.is_empty() {
                m.insert("manager".into(), Value::String(e.manager.clone()));
            }
            m.insert("operation".into(), e.operation.as_str().into());
            m.insert("apiVersion".into(), Value::String(e.api_version.clone()));
            if let Some(t) = &e.time {
                m.insert("time".into(), Value::String(t.clone()));
            }
            m.insert("fieldsType".into(), "FieldsV1".into());
            m.insert("fieldsV1".into(), e.set.to_fields_v1());
            if !e.subresource.is_empty() {
                m.insert("subresource".into(), Value::String(e.subresource.clone()));
            }
            Value::Object(m)
        })
        .collect();
    Some(Value::Array(encoded))
}

pub(super) fn set_managed_fields(obj: &mut Value, managers: &Managers) {
    let Value::Object(root) = obj else { return };
    match encode_managed_fields(managers) {
        Some(encoded) => {
            let meta = root
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.insert("managedFields".into(), encoded);
            }
        }
        None => remove_managed_fields(obj),
    }
}

pub(super) fn remove_managed_fields(obj: &mut Value) {
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        meta.remove("managedFields");
    }
}

/// The fields the server never records as owned (`stripMetaManager`).
pub(super) fn strip_set() -> FieldSet {
    let mut s = FieldSet::default();
    let f = |n: &str| PathElement::Field(n.to_string());
    s.insert(&[f("apiVersion")]);
    s.insert(&[f("kind")]);
    s.insert(&[f("metadata")]);
    for name in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        s.insert(&[f("metadata"), f(name)]);
    }
    s
}

pub(super) fn strip_fields(managers: &mut Managers, id: &str) {
    if let Some(e) = managers.get_mut(id) {
        e.set = e.set.difference(&strip_set());
        if e.set.is_empty() {
            managers.remove(id);
        }
    }
}
