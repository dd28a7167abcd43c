//! Defaulting of custom resources from schema `default`s (the apiserver's
//! `pkg/apiserver/schema/defaulting`), applied on writes and on every read.

use super::schema::{Additional, Schema};
use serde_json::Value;

/// Applies `default:` values, as the server does after pruning on create and update and again
/// whenever it reads an object from storage. A missing field, or a `null` in a non-nullable
/// field, gets its default; defaults apply inside array items and `additionalProperties`
/// values too, and a default object is itself defaulted further down.
pub fn apply_defaults(schema: &Schema, obj: &mut Value) {
    default_node(obj, schema);
}

pub(super) fn is_non_nullable_null(x: &Value, s: &Schema) -> bool {
    x.is_null() && !s.nullable
}

pub(super) fn default_node(x: &mut Value, s: &Schema) {
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
