//! Pruning of custom-resource fields the schema does not declare (the apiserver's
//! `pkg/apiserver/schema/pruning`), and dropping of nulls in non-nullable fields.

use super::schema::{FieldSchema, Schema};
use serde_json::{Map, Value};

pub(super) const META_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

/// The fields of ObjectMeta; anything else inside an embedded resource's `metadata` is dropped
/// when the server round-trips it through the Go type.
pub(super) const OBJECT_META_FIELDS: &[&str] = &[
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

pub(super) fn join_key(parent: &str, k: &str) -> String {
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

pub(super) fn prune_node(
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
pub(super) fn skip_prune(
    x: &mut Value,
    s: &Schema,
    path: &str,
    embedded: bool,
    out: &mut Vec<String>,
) {
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
pub(super) fn prune_embedded_meta(
    parent: &mut Map<String, Value>,
    path: &str,
    out: &mut Vec<String>,
) {
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
pub(super) fn prune_nulls(x: &mut Value, s: Option<&Schema>) {
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
