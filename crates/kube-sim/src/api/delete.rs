//! Delete and deletecollection: finalizers, propagation, and the body a delete returns.

use super::admit;
use super::support::{finalizers, is_namespace, meta_finalizers_changed, now, obj_meta_mut};
use super::{
    CRD_CLEANUP_FINALIZER, Cluster, DeleteOptions, FOREGROUND_FINALIZER, ListOptions,
    ORPHAN_FINALIZER, Outcome, Propagation,
};
use crate::admission_plugins::{Attributes, Write};
use crate::errors::ApiError;
use crate::resources::ResourceType;
use crate::{errors, store};
use serde_json::{Value, json};
use std::sync::Arc;

impl Cluster {
    pub fn delete(
        &mut self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Outcome, ApiError> {
        let ns = if rt.namespaced { namespace } else { "" };
        let old = self
            .store
            .get(&rt.group_resource(), ns, name)
            .ok_or_else(|| ApiError::not_found(rt, name))?;
        let uid = old
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if let Some(want) = &opts.precondition_uid
            && *want != uid
        {
            return Err(ApiError::conflict(
                rt,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"
                ),
            ));
        }
        if let Some(want) = &opts.precondition_rv {
            let have = store::rv_of(&old).to_string();
            if *want != have {
                return Err(ApiError::conflict(
                    rt,
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {have}"
                    ),
                ));
            }
        }
        let warnings = admit::validate(
            self,
            &Attributes {
                rt,
                write: Write::Delete { old: &old },
                subresource: None,
                requester: opts.requester.as_ref(),
            },
        )?;
        let mut obj = (*old).clone();
        let mut fins = finalizers(&obj);
        if opts.propagation.is_some() {
            // The request's policy replaces whatever GC finalizer an earlier delete left.
            fins.remove(ORPHAN_FINALIZER);
            fins.remove(FOREGROUND_FINALIZER);
        }
        match opts.propagation {
            Some(Propagation::Orphan) => {
                fins.insert(ORPHAN_FINALIZER.into());
            }
            Some(Propagation::Foreground) => {
                fins.insert(FOREGROUND_FINALIZER.into());
            }
            _ => {}
        }
        if rt.kind == "CustomResourceDefinition" && rt.group == "apiextensions.k8s.io" {
            fins.insert(CRD_CLEANUP_FINALIZER.into());
        }
        let namespace_finalizing = is_namespace(rt);
        if opts.dry_run {
            return Ok(Outcome::new(200, self.present(rt, &obj)).warned(warnings));
        }
        if fins.is_empty() && !namespace_finalizing {
            let gone = self
                .finish_delete(rt, ns, name)
                .ok_or_else(|| ApiError::not_found(rt, name))?;
            return Ok(Outcome::new(200, self.deleted_body(rt, &gone, &uid)).warned(warnings));
        }
        let already_deleting = obj.pointer("/metadata/deletionTimestamp").is_some();
        let meta = obj_meta_mut(&mut obj)?;
        if !already_deleting {
            meta.insert("deletionTimestamp".into(), Value::String(now()));
            meta.insert("deletionGracePeriodSeconds".into(), json!(0));
            // markAsDeleting: the generation moves when deletion starts.
            if let Some(g) = meta
                .get("generation")
                .and_then(Value::as_i64)
                .filter(|g| *g > 0)
            {
                meta.insert("generation".into(), json!(g + 1));
            }
        }
        meta.insert("finalizers".into(), json!(fins.iter().collect::<Vec<_>>()));
        if namespace_finalizing {
            obj["status"] = json!({"phase": "Terminating"});
        }
        if meta_finalizers_changed(&old, &obj) || !already_deleting {
            let stored = self.store.put(&rt.group_resource(), obj);
            self.after_write(rt, &stored);
            return Ok(Outcome::new(200, self.present(rt, &stored)).warned(warnings));
        }
        Ok(Outcome::new(200, self.present(rt, &old)).warned(warnings))
    }

    /// What a DELETE returns once the object is gone: the object for custom resources and
    /// pods, a Success Status for the other built-ins.
    pub(super) fn deleted_body(&self, rt: &ResourceType, gone: &Value, uid: &str) -> Value {
        if rt.returns_deleted_object() {
            self.present(rt, gone)
        } else {
            errors::success_status(
                rt,
                gone.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                uid,
            )
        }
    }

    /// Removes the object for good and runs the removal side effects.
    pub(super) fn finish_delete(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
    ) -> Option<Arc<Value>> {
        let gone = self.store.remove(&rt.group_resource(), ns, name)?;
        if rt.kind == "CustomResourceDefinition" && rt.group == "apiextensions.k8s.io" {
            self.catalogue.remove_crd(name);
        }
        Some(gone)
    }

    pub fn delete_collection(
        &mut self,
        rt: &ResourceType,
        namespace: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Outcome, ApiError> {
        let names: Vec<(String, String)> = self
            .store
            .iter(&rt.group_resource(), namespace, None)
            .filter(|(_, o)| list.labels.matches(o) && list.fields.matches(o))
            .map(|(k, _)| k.clone())
            .collect();
        let mut items = Vec::new();
        let mut warnings = Vec::new();
        for (ns, name) in names {
            let before = self.store.get(&rt.group_resource(), &ns, &name);
            match self.delete(rt, &ns, &name, opts) {
                Ok(out) => {
                    warnings.extend(out.warnings);
                    // Every deleted (or now terminating) object is listed, whatever the type
                    // answers to a single DELETE.
                    let shown = if out.body.get("kind").and_then(Value::as_str) == Some("Status") {
                        before.map(|b| (*b).clone())
                    } else {
                        Some(out.body)
                    };
                    if let Some(obj) = shown {
                        items.push(self.list_item(rt, &obj));
                    }
                }
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Outcome::new(
            200,
            json!({"kind": rt.list_kind, "apiVersion": rt.api_version(), "metadata": {"resourceVersion": self.store.current_rv().to_string()}, "items": items}),
        )
        .warned(warnings))
    }
}
