//! Create: body checks, namespace placement, generateName, and the create path of a write.

use super::admit;
use super::support::{
    crd_status, daemonset_template_generation, now, obj_meta_mut, record_creator,
    reset_status_on_create,
};
use super::{Cluster, Outcome, WriteOptions};
use crate::admission;
use crate::admission_plugins::{Attributes, Write};
use crate::errors::ApiError;
use crate::field_error::FieldError;
use crate::resources::{GroupResource, Origin, ResourceType};
use serde_json::{Value, json};

impl Cluster {
    pub fn create(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Outcome, ApiError> {
        let mut obj = self.check_body(rt, body)?;
        self.place_in_namespace(rt, namespace, &mut obj)?;
        let meta = obj_meta_mut(&mut obj)?;
        if meta
            .get("resourceVersion")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
        {
            return Err(ApiError::internal(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        let name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let generate = meta
            .get("generateName")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let generated = name.is_empty() && !generate.is_empty();
        let name = if generated {
            let n = format!("{generate}{}", self.generated_suffix());
            obj_meta_mut(&mut obj)?.insert("name".into(), Value::String(n.clone()));
            n
        } else {
            name
        };
        if name.is_empty() {
            return Err(ApiError::invalid(
                rt,
                "",
                &[FieldError::required(
                    "metadata.name",
                    "name or generateName is required",
                )],
            ));
        }
        let ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        self.check_namespace_accepts(rt, &ns)?;
        self.check_crd_accepts(rt)?;
        let meta = obj_meta_mut(&mut obj)?;
        for system in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "selfLink",
            "managedFields",
            "resourceVersion",
        ] {
            meta.remove(system);
        }
        let mut warnings = admission::decode(rt, &mut obj, opts.field_validation)?;
        reset_status_on_create(rt, &mut obj);
        admission::default(rt, &mut obj);
        // The field manager sees the decoded, defaulted object, before the strategy prepares it
        // (finalizers, status), as in the real handler chain.
        let now = now();
        record_creator(rt, &mut obj, &opts.manager, &now);
        admission::prepare(rt, &mut obj, None);
        admit::mutate(self, rt, &mut obj);
        if rt.group.is_empty()
            && rt.kind == "Service"
            && crate::defaults::allocate_cluster_ip(&mut obj, self.next_cluster_ip)
        {
            self.next_cluster_ip += 1;
        }
        let errors = admission::validate_create(rt, &obj);
        if !errors.is_empty() {
            return Err(ApiError::invalid(rt, &name, &errors));
        }
        warnings.extend(admit::validate(
            self,
            &Attributes {
                rt,
                write: Write::Create {
                    object: &obj,
                    generated,
                },
                subresource: None,
                requester: opts.requester.as_ref(),
            },
        )?);
        // Existence is checked by storage, after validation; a terminating object says so.
        if let Some(existing) = self.store.get(&rt.group_resource(), &ns, &name) {
            let mut e = ApiError::already_exists(rt, &name);
            if existing.pointer("/metadata/deletionTimestamp").is_some() {
                e.message = format!("object is being deleted: {}", e.message);
            }
            return Err(e);
        }
        let uid = self.new_uid();
        let meta = obj_meta_mut(&mut obj)?;
        meta.insert("uid".into(), Value::String(uid));
        meta.insert("creationTimestamp".into(), Value::String(now.clone()));
        if rt.tracks_generation {
            meta.insert("generation".into(), json!(1));
        }
        daemonset_template_generation(rt, None, &mut obj);
        if rt.kind == "CustomResourceDefinition" && rt.group == "apiextensions.k8s.io" {
            crd_status(&mut obj);
        }
        if opts.dry_run {
            let mut out = Outcome::new(201, self.present(rt, &obj));
            out.warnings = warnings;
            return Ok(out);
        }
        let stored = self.store.put(&rt.group_resource(), obj);
        self.after_write(rt, &stored);
        let mut out = Outcome::new(201, self.present(rt, &stored));
        out.warnings = warnings;
        Ok(out)
    }

    /// Body shape and type checks shared by create and update.
    pub(super) fn check_body(&self, rt: &ResourceType, body: Value) -> Result<Value, ApiError> {
        let Value::Object(map) = body else {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        };
        let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default();
        let api_version = map
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if kind.is_empty() {
            return Err(ApiError::bad_request(format!(
                "Object 'Kind' is missing in '{}'",
                Value::Object(map.clone())
            )));
        }
        if api_version.is_empty() {
            return Err(ApiError::bad_request(format!(
                "Object 'apiVersion' is missing in '{}'",
                Value::Object(map.clone())
            )));
        }
        if kind != rt.kind {
            return Err(ApiError::bad_request(format!(
                "the server could not decode the object: kind {kind:?} does not match the resource's kind {:?}",
                rt.kind
            )));
        }
        if api_version != rt.api_version() {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({})",
                rt.api_version()
            )));
        }
        let mut obj = Value::Object(map);
        if obj.get("metadata").is_none() {
            obj["metadata"] = json!({});
        }
        if !obj["metadata"].is_object() {
            return Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: metadata must be an object",
                rt.kind, rt.version, rt.kind
            )));
        }
        Ok(obj)
    }

    pub(super) fn place_in_namespace(
        &self,
        rt: &ResourceType,
        namespace: &str,
        obj: &mut Value,
    ) -> Result<(), ApiError> {
        let meta = obj_meta_mut(obj)?;
        if rt.namespaced {
            let body_ns = meta
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if body_ns.is_empty() {
                meta.insert("namespace".into(), Value::String(namespace.to_string()));
            } else if body_ns != namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        } else {
            meta.remove("namespace");
        }
        Ok(())
    }

    pub(super) fn check_namespace_accepts(
        &self,
        rt: &ResourceType,
        ns: &str,
    ) -> Result<(), ApiError> {
        if !rt.namespaced {
            return Ok(());
        }
        let ns_type = self
            .catalogue
            .get("", "v1", "namespaces")
            .ok_or_else(|| ApiError::internal("namespaces not served"))?;
        let Some(namespace) = self.store.get(&ns_type.group_resource(), "", ns) else {
            return Err(ApiError::not_found(&ns_type, ns));
        };
        if namespace.pointer("/metadata/deletionTimestamp").is_some() {
            let mut e = ApiError::forbidden(
                rt,
                "",
                &format!(
                    "unable to create new content in namespace {ns} because it is being terminated"
                ),
            );
            if let Some(d) = e.details.as_mut() {
                d["causes"] = json!([{"reason": "NamespaceTerminating", "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]);
            }
            return Err(e);
        }
        Ok(())
    }

    /// Instances of a CRD that is being deleted cannot be created (customresource_handler.go).
    pub(super) fn check_crd_accepts(&self, rt: &ResourceType) -> Result<(), ApiError> {
        let Origin::Crd { crd_name, .. } = &rt.origin else {
            return Ok(());
        };
        let crds = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
        let terminating = self
            .store
            .get(&crds, "", crd_name)
            .is_some_and(|crd| crd.pointer("/metadata/deletionTimestamp").is_some());
        if terminating {
            return Err(ApiError::method_not_allowed(
                "create not allowed while custom resource definition is terminating",
            ));
        }
        Ok(())
    }
}
