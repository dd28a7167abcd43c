//! What happens to an object between the request body and the store: decoding (unknown-field
//! handling), defaulting and validation, for built-in types and custom resources alike.
//!
//! This module only routes to the rule sets (`builtin_types`, `defaults`, `validation`,
//! `crd`) so the verb handlers in `api` have one place to call.

use serde_json::Value;

use crate::builtin_lists::BuiltinLists;
use crate::errors::ApiError;
use crate::field_error::FieldError;
use crate::list_types::{AllAtomic, ListTypes};
use crate::resources::{Origin, ResourceType};
use crate::{admission_policy, builtin_types, crd, defaults, validation};

/// The `fieldValidation` query parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    Ignore,
    /// The server default since 1.27: drop unknown fields, warn about them.
    #[default]
    Warn,
    Strict,
}

impl FieldValidation {
    pub fn parse(s: Option<&str>) -> Result<Self, ApiError> {
        match s {
            None | Some("") | Some("Warn") => Ok(Self::Warn),
            Some("Ignore") => Ok(Self::Ignore),
            Some("Strict") => Ok(Self::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation parameter unsupported: {other}, must be one of Ignore, Warn, Strict"
            ))),
        }
    }
}

/// Decodes the object as the server's codec would: built-ins through their types, custom
/// resources through their structural schema (pruning). Returns the warnings to send.
pub fn decode(
    rt: &ResourceType,
    obj: &mut Value,
    mode: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    let unknown = match &rt.origin {
        Origin::Builtin => match builtin_types::roundtrip(&rt.group, &rt.kind, obj) {
            Some(Ok(decoded)) => {
                *obj = decoded.object;
                decoded.unknown_fields
            }
            Some(Err(e)) => {
                return Err(ApiError::bad_request(format!(
                    "{} in version \"{}\" cannot be handled as a {}: {}",
                    rt.kind, rt.version, rt.kind, e
                )));
            }
            None => Vec::new(),
        },
        Origin::Crd { schema, .. } => match schema {
            Some(schema) => prune_custom(schema, obj),
            None => Vec::new(),
        },
    };
    if unknown.is_empty() {
        return Ok(Vec::new());
    }
    match mode {
        FieldValidation::Ignore => Ok(Vec::new()),
        FieldValidation::Warn => Ok(unknown
            .iter()
            .map(|f| format!("unknown field \"{f}\""))
            .collect()),
        FieldValidation::Strict => {
            let list = unknown
                .iter()
                .map(|f| format!("unknown field \"{f}\""))
                .collect::<Vec<_>>()
                .join(", ");
            Err(ApiError::bad_request(format!(
                "strict decoding error: {list}"
            )))
        }
    }
}

/// Prunes a custom resource; `metadata` is handled as ObjectMeta (not by the schema).
fn prune_custom(schema: &crd::Schema, obj: &mut Value) -> Vec<String> {
    let metadata = obj.as_object_mut().and_then(|o| o.remove("metadata"));
    let pruned = crd::prune(schema, obj);
    if let (Some(m), Some(o)) = (metadata, obj.as_object_mut()) {
        o.insert("metadata".into(), m);
    }
    pruned
}

/// Applies the defaults a real server applies while decoding the body (before the field
/// manager sees the object, so the writer owns defaulted fields as on a cluster).
pub fn default(rt: &ResourceType, obj: &mut Value) {
    match &rt.origin {
        Origin::Builtin => {
            defaults::apply_defaults(&rt.group, &rt.kind, obj);
            admission_policy::default(rt, obj);
        }
        Origin::Crd {
            schema: Some(schema),
            ..
        } => crd::apply_defaults(schema, obj),
        Origin::Crd { schema: None, .. } => {}
    }
}

/// Create-time validation, including the object's name and metadata.
pub fn validate_create(rt: &ResourceType, obj: &Value) -> Vec<FieldError> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let is_crd = rt.group == "apiextensions.k8s.io" && rt.kind == "CustomResourceDefinition";
    // A CRD's name is checked by the CRD rules (it must be `<plural>.<group>`), once.
    let mut errors = if is_crd {
        Vec::new()
    } else {
        validation::validate_name(&rt.group, &rt.kind, name)
    };
    if let Some(meta) = obj.get("metadata") {
        errors.extend(validation::validate_labels_and_annotations(meta));
        errors.extend(validation::validate_finalizers(
            meta,
            matches!(rt.origin, Origin::Builtin),
        ));
    }
    match &rt.origin {
        Origin::Builtin => {
            errors.extend(validation::validate_create(&rt.group, &rt.kind, obj));
            errors.extend(admission_policy::validate(rt, obj));
            if rt.kind == "CustomResourceDefinition" {
                errors.extend(crd::validate_crd(obj, None));
            }
        }
        Origin::Crd {
            schema: Some(schema),
            ..
        } => errors.extend(crd::validate(schema, obj)),
        Origin::Crd { schema: None, .. } => {}
    }
    errors
}

/// Update-time validation: the create rules plus immutability.
pub fn validate_update(rt: &ResourceType, old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(meta) = new.get("metadata") {
        errors.extend(validation::validate_labels_and_annotations(meta));
        errors.extend(validation::validate_finalizers(
            meta,
            matches!(rt.origin, Origin::Builtin),
        ));
    }
    match &rt.origin {
        Origin::Builtin => {
            errors.extend(validation::validate_update(&rt.group, &rt.kind, old, new));
            errors.extend(admission_policy::validate(rt, new));
            if rt.kind == "CustomResourceDefinition" {
                errors.extend(crd::validate_crd(new, Some(old)));
            }
        }
        Origin::Crd {
            schema: Some(schema),
            ..
        } => errors.extend(crd::validate(schema, new)),
        Origin::Crd { schema: None, .. } => {}
    }
    errors
}

/// Validation of a write through the `status` subresource of a custom resource.
pub fn validate_status_update(rt: &ResourceType, new: &Value) -> Vec<FieldError> {
    match &rt.origin {
        Origin::Crd {
            schema: Some(schema),
            ..
        } => crd::validate_status(schema, new),
        _ => Vec::new(),
    }
}

/// The registry strategy's PrepareForCreate / PrepareForUpdate (`old` is `None` on create):
/// what the server sets after the field manager ran (e.g. the Namespace finalizer, a CRD's
/// derived names and storedVersions), so no client owns those fields.
pub fn prepare(rt: &ResourceType, obj: &mut Value, old: Option<&Value>) {
    if let Origin::Builtin = rt.origin {
        match old {
            None => defaults::prepare_for_create(&rt.group, &rt.kind, obj),
            Some(old) => defaults::prepare_for_update(&rt.group, &rt.kind, old, obj),
        }
    }
    if rt.group == "apiextensions.k8s.io" && rt.kind == "CustomResourceDefinition" {
        crd::prepare_crd(obj, old);
    }
}

/// How lists of this type merge (for strategic merge patch and server-side apply).
pub fn list_types(rt: &ResourceType) -> Box<dyn ListTypes + Send + Sync> {
    match &rt.origin {
        Origin::Builtin => Box::new(BuiltinLists::for_kind(&rt.group, &rt.kind)),
        Origin::Crd {
            schema: Some(schema),
            ..
        } => Box::new(SchemaLists(schema.clone())),
        Origin::Crd { schema: None, .. } => Box::new(AllAtomic),
    }
}

struct SchemaLists(std::sync::Arc<crd::Schema>);

impl ListTypes for SchemaLists {
    fn list_kind(&self, path: &[&str]) -> crate::list_types::ListKind {
        self.0.list_kind(path)
    }
}
