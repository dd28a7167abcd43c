//! Update, patch and server-side apply, and the scale subresource: every write that replaces
//! an existing object.

use super::admit;
use super::support::{
    apply_error, copy_field, crd_status, daemonset_template_generation, finalizers, is_namespace,
    now, obj_meta_mut, same_ignoring_managed_fields, same_ignoring_resource_version, spec_changed,
    unreachable_apply,
};
use super::{Cluster, Outcome, PatchType, WriteOptions};
use crate::admission_plugins::{Attributes, Write};
use crate::builtin_lists::BuiltinLists;
use crate::errors::ApiError;
use crate::field_error::FieldError;
use crate::resources::{ResourceType, scale_of};
use crate::{admission, patch, ssa, store};
use serde_json::{Value, json};
use std::sync::Arc;

impl Cluster {
    /// PUT, on the main resource or a subresource (`status`).
    pub fn update(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        subresource: Option<&str>,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Outcome, ApiError> {
        let mut obj = self.check_body(rt, body)?;
        self.place_in_namespace(rt, namespace, &mut obj)?;
        let body_name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let ns = if rt.namespaced { namespace } else { "" };
        let Some(old) = self.store.get(&rt.group_resource(), ns, name) else {
            if rt.allows_create_on_update() && subresource.is_none() {
                if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("resourceVersion");
                }
                return self.create(rt, namespace, obj, opts);
            }
            return Err(ApiError::not_found(rt, name));
        };
        let body_rv = obj
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if body_rv.is_empty() && !rt.allows_unconditional_update() {
            return Err(ApiError::invalid_resource(
                rt,
                name,
                &[FieldError::invalid(
                    "metadata.resourceVersion",
                    json!(0),
                    "must be specified for an update",
                )],
            ));
        }
        if !body_rv.is_empty() && body_rv != store::rv_of(&old).to_string() {
            return Err(ApiError::stale(rt, name));
        }
        self.write_update(rt, &old, obj, subresource, opts, true)
    }

    /// The common tail of update and patch: carry system fields over, apply subresource rules,
    /// decode, default, validate, bump generation, record managed fields and store.
    pub(super) fn write_update(
        &mut self,
        rt: &ResourceType,
        old: &Arc<Value>,
        mut obj: Value,
        subresource: Option<&str>,
        opts: &WriteOptions,
        record_manager: bool,
    ) -> Result<Outcome, ApiError> {
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if let Some(uid) = obj
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
        {
            let old_uid = old
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if uid != old_uid {
                return Err(ApiError::conflict(
                    rt,
                    &name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {old_uid}"
                    ),
                ));
            }
        }
        obj = match subresource {
            None => {
                if rt.status_subresource {
                    copy_field(old, &mut obj, "status");
                }
                obj
            }
            Some("status") if rt.status_subresource => {
                let mut merged = (**old).clone();
                copy_field(&obj, &mut merged, "status");
                // As the status strategies do, managedFields stay as the write brought them: an
                // apply's are what the field manager computed for it (a non-apply write's are
                // recorded below from the stored ones, never from the request).
                if let Some(managed) = obj.pointer("/metadata/managedFields").cloned()
                    && let Some(meta) = merged.get_mut("metadata").and_then(Value::as_object_mut)
                {
                    meta.insert("managedFields".into(), managed);
                }
                merged
            }
            Some(other) => return Err(ApiError::no_route_for(other)),
        };
        {
            let old_meta = old
                .get("metadata")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let meta = obj_meta_mut(&mut obj)?;
            for system in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "resourceVersion",
            ] {
                match old_meta.get(system) {
                    Some(v) => meta.insert(system.into(), v.clone()),
                    None => meta.remove(system),
                };
            }
            meta.remove("selfLink");
            if !meta.contains_key("managedFields")
                || meta
                    .get("managedFields")
                    .is_some_and(|m| m.as_array().is_some_and(Vec::is_empty))
            {
                match old_meta.get("managedFields") {
                    Some(v) => meta.insert("managedFields".into(), v.clone()),
                    None => meta.remove("managedFields"),
                };
            }
        }
        let mut warnings = admission::decode(rt, &mut obj, opts.field_validation)?;
        admission::default(rt, &mut obj);
        admission::prepare(rt, &mut obj, Some(old));
        let mut errors = if subresource == Some("status") {
            admission::validate_status_update(rt, &obj)
        } else {
            admission::validate_update(rt, old, &obj)
        };
        if old.pointer("/metadata/deletionTimestamp").is_some() {
            let before = finalizers(old);
            let added: Vec<_> = finalizers(&obj).difference(&before).cloned().collect();
            if !added.is_empty() {
                errors.push(FieldError::forbidden("metadata.finalizers", format!("no new finalizers can be added if the object is being deleted, found new finalizers {added:?}")));
            }
        }
        if !errors.is_empty() {
            return Err(ApiError::invalid(rt, &name, &errors));
        }
        warnings.extend(admit::validate(
            self,
            &Attributes {
                rt,
                write: Write::Update { old, new: &obj },
                subresource,
                requester: opts.requester.as_ref(),
            },
        )?);
        if rt.tracks_generation && spec_changed(rt, old, &obj) {
            let g = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            obj_meta_mut(&mut obj)?.insert("generation".into(), json!(g + 1));
        }
        daemonset_template_generation(rt, Some(old), &mut obj);
        if rt.kind == "CustomResourceDefinition" && rt.group == "apiextensions.k8s.io" {
            crd_status(&mut obj);
        }
        // An apply has already computed managedFields: a change of ownership alone (another
        // manager applying the same values) is a write; a non-apply write records them below.
        let unchanged = if record_manager {
            same_ignoring_managed_fields(old, &obj)
        } else {
            same_ignoring_resource_version(old, &obj)
        };
        if unchanged {
            let mut out = Outcome::new(200, self.present(rt, old));
            out.warnings = warnings;
            return Ok(out);
        }
        if record_manager {
            let lists = admission::list_types(rt);
            ssa::record_update(
                Some(old),
                &mut obj,
                &opts.manager,
                lists.as_ref(),
                &now(),
                &rt.api_version(),
                subresource,
            );
        }
        if opts.dry_run {
            return Ok(Outcome {
                code: 200,
                body: self.present(rt, &obj),
                warnings,
            });
        }
        let deleting = obj.pointer("/metadata/deletionTimestamp").is_some();
        if deleting && finalizers(&obj).is_empty() && !is_namespace(rt) {
            let ns = obj
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            // The emptied object is never stored: the server deletes the stored one, so
            // watchers see DELETED only (etcd3 store's deleteWithoutFinalizers).
            let gone = self.finish_delete(rt, &ns, &name);
            let body = gone.map(|g| self.present(rt, &g)).unwrap_or(Value::Null);
            return Ok(Outcome {
                code: 200,
                body,
                warnings,
            });
        }
        let stored = self.store.put(&rt.group_resource(), obj);
        self.after_write(rt, &stored);
        Ok(Outcome {
            code: 200,
            body: self.present(rt, &stored),
            warnings,
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        subresource: Option<&str>,
        patch_type: PatchType,
        body: &[u8],
        opts: &WriteOptions,
    ) -> Result<Outcome, ApiError> {
        let ns = if rt.namespaced { namespace } else { "" };
        let old = self.store.get(&rt.group_resource(), ns, name);
        if patch_type == PatchType::Apply {
            return self.server_side_apply(rt, namespace, name, subresource, old, body, opts);
        }
        let old = old.ok_or_else(|| ApiError::not_found(rt, name))?;
        let patch_doc: Value = serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
        let current = self.present(rt, &old);
        let patched = match patch_type {
            PatchType::Merge => patch::merge_patch(&current, &patch_doc),
            PatchType::Json => patch::json_patch(&current, &patch_doc),
            PatchType::Strategic => {
                if rt.is_custom() {
                    return Err(ApiError::unsupported_media_type_for_custom());
                }
                patch::strategic_merge_patch(
                    &current,
                    &patch_doc,
                    &BuiltinLists::for_kind(&rt.group, &rt.kind),
                )
            }
            PatchType::Apply => unreachable_apply(),
        }
        .map_err(ApiError::from)?;
        let patched_rv = patched
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !patched_rv.is_empty() && patched_rv != store::rv_of(&old).to_string() {
            return Err(ApiError::stale(rt, name));
        }
        let mut patched = self.check_body(rt, patched)?;
        if patched.pointer("/metadata/name").and_then(Value::as_str) != Some(name) {
            return Err(ApiError::bad_request(
                "metadata.name: the name of the object does not match the name on the URL",
            ));
        }
        self.place_in_namespace(rt, namespace, &mut patched)?;
        self.write_update(rt, &old, patched, subresource, opts, true)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn server_side_apply(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        subresource: Option<&str>,
        old: Option<Arc<Value>>,
        body: &[u8],
        opts: &WriteOptions,
    ) -> Result<Outcome, ApiError> {
        if opts.manager.is_empty() {
            return Err(ApiError::bad_request(
                "PATCH, application/apply-patch+yaml requires fieldManager to be set",
            ));
        }
        let text = std::str::from_utf8(body)
            .map_err(|_| ApiError::bad_request("error decoding YAML: the body is not UTF-8"))?;
        let config: Value = crate::yaml::from_str(text)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
        let mut config = self.check_body(rt, config)?;
        match config.pointer("/metadata/name").and_then(Value::as_str) {
            Some(n) if n == name => {}
            Some(_) | None => {
                return Err(ApiError::bad_request(format!(
                    "metadata.name: Invalid value: {:?}: the name of the object must match the name on the URL ({name})",
                    config
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                )));
            }
        }
        self.place_in_namespace(rt, namespace, &mut config)?;
        // The strategy's reset fields: what this endpoint will not write is not applied, so
        // it is neither owned nor in conflict (the field manager's ignore filter).
        if rt.status_subresource
            && let Some(config) = config.as_object_mut()
        {
            config.remove(if subresource == Some("status") {
                "spec"
            } else {
                "status"
            });
        }
        let lists = admission::list_types(rt);
        let live = old.as_ref().map(|o| self.present(rt, o));
        let merged = ssa::apply(
            live.as_ref(),
            &config,
            &opts.manager,
            opts.force,
            lists.as_ref(),
            &now(),
            &rt.api_version(),
            subresource,
        )
        .map_err(|e| apply_error(rt, name, e))?;
        match old {
            None => {
                let managed = merged.pointer("/metadata/managedFields").cloned();
                let mut create_opts = opts.clone();
                create_opts.manager = String::new();
                let mut out =
                    self.create_with_managed_fields(rt, namespace, merged, &create_opts, managed)?;
                out.code = 201;
                Ok(out)
            }
            Some(old) => self.write_update(rt, &old, merged, subresource, opts, false),
        }
    }

    pub(super) fn create_with_managed_fields(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        obj: Value,
        opts: &WriteOptions,
        managed: Option<Value>,
    ) -> Result<Outcome, ApiError> {
        // Create records an Update entry for `opts.manager`; an apply-create must carry the
        // Apply entry instead, so create with the dry-run pipeline and then store ourselves.
        let mut dry = opts.clone();
        dry.dry_run = true;
        let out = self.create(rt, namespace, obj, &dry)?;
        let mut obj = out.body;
        if let (Some(meta), Some(m)) = (
            obj.get_mut("metadata").and_then(Value::as_object_mut),
            managed,
        ) {
            meta.insert("managedFields".into(), m);
        }
        if opts.dry_run {
            return Ok(Outcome {
                code: 201,
                body: obj,
                warnings: out.warnings,
            });
        }
        let stored = self.store.put(&rt.group_resource(), obj);
        self.after_write(rt, &stored);
        Ok(Outcome {
            code: 201,
            body: self.present(rt, &stored),
            warnings: out.warnings,
        })
    }

    /// GET .../scale: an `autoscaling/v1` Scale view of a Deployment.
    pub fn get_scale(
        &self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
    ) -> Result<Value, ApiError> {
        let obj = self.get(rt, namespace, name)?;
        Ok(scale_of(&obj))
    }

    /// PUT or PATCH .../scale: only `spec.replicas` of the target changes.
    pub fn update_scale(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        scale: &Value,
        opts: &WriteOptions,
    ) -> Result<Outcome, ApiError> {
        let ns = if rt.namespaced { namespace } else { "" };
        let old = self
            .store
            .get(&rt.group_resource(), ns, name)
            .ok_or_else(|| ApiError::not_found(rt, name))?;
        if let Some(rv) = scale
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
            && rv != store::rv_of(&old).to_string()
        {
            return Err(ApiError::stale(rt, name));
        }
        let replicas = match scale.pointer("/spec/replicas") {
            Some(Value::Number(n))
                if n.as_i64()
                    .is_some_and(|r| (0..=i64::from(i32::MAX)).contains(&r)) =>
            {
                n.clone()
            }
            Some(other) => {
                return Err(ApiError::invalid_scale(
                    name,
                    &[FieldError::invalid(
                        "spec.replicas",
                        other.clone(),
                        "must be greater than or equal to 0",
                    )],
                ));
            }
            None => serde_json::Number::from(0),
        };
        let mut obj = self.present(rt, &old);
        obj["spec"]["replicas"] = Value::Number(replicas);
        let out = self.write_update(rt, &old, obj, None, opts, true)?;
        Ok(Outcome {
            code: out.code,
            body: scale_of(&out.body),
            warnings: out.warnings,
        })
    }
}
