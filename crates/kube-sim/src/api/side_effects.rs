//! What a write changes besides the object (the catalogue of served CRDs), and the hooks the
//! in-process controllers write through.

use super::Cluster;
use super::support::{finalizers, same_ignoring_managed_fields};
use crate::resources::{Origin, ResourceType};
use crate::{crd, store};
use serde_json::{Value, json};
use std::sync::Arc;

impl Cluster {
    /// Keeps the catalogue in step with stored CRDs.
    pub(super) fn after_write(&mut self, rt: &ResourceType, stored: &Value) {
        if rt.kind == "CustomResourceDefinition" && rt.group == "apiextensions.k8s.io" {
            self.serve_crd(stored);
        }
    }

    pub(super) fn serve_crd(&mut self, crd: &Value) {
        let Ok(info) = crd::crd_info(crd) else {
            return;
        };
        let crd_name = crd
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        // A terminating CRD stays served until its instances are gone (creates are refused
        // meanwhile); `finish_delete` stops serving it when the CRD itself goes.
        self.catalogue.remove_crd(&crd_name);
        let storage_version = info
            .versions
            .iter()
            .find(|v| v.storage)
            .map(|v| v.name.clone())
            .unwrap_or_default();
        for v in info.versions {
            self.catalogue.insert(ResourceType {
                group: info.group.clone(),
                version: v.name.clone(),
                kind: info.kind.clone(),
                list_kind: info.list_kind.clone(),
                plural: info.plural.clone(),
                singular: info.singular.clone(),
                namespaced: info.namespaced,
                short_names: info.short_names.clone(),
                categories: info.categories.clone(),
                status_subresource: v.status_subresource,
                scale_subresource: v.scale_subresource.is_some(),
                tracks_generation: true,
                storage_version: storage_version.clone(),
                origin: Origin::Crd {
                    crd_name: crd_name.clone(),
                    schema: v.schema.map(Arc::new),
                    printer_columns: v.printer_columns,
                },
            });
        }
    }

    /// Internal writes by the emulated controllers (GC, namespace controller, workload
    /// simulator): a status or metadata change without HTTP, preconditions or managers.
    pub fn controller_put(&mut self, rt: &ResourceType, obj: Value) -> Arc<Value> {
        // Controllers write through the API too, and the server drops no-op updates.
        let (ns, name) = store::key_of(&obj);
        if let Some(current) = self.store.get(&rt.group_resource(), &ns, &name)
            && same_ignoring_managed_fields(&current, &obj)
        {
            return current;
        }
        let stored = self.store.put(&rt.group_resource(), obj);
        self.after_write(rt, &stored);
        stored
    }

    /// Internal removal by the emulated controllers (e.g. dropping a finalizer they own).
    pub fn controller_remove_finalizer(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        finalizer: &str,
    ) {
        let Some(old) = self.store.get(&rt.group_resource(), ns, name) else {
            return;
        };
        let mut obj = (*old).clone();
        let mut fins = finalizers(&obj);
        if !fins.remove(finalizer) {
            return;
        }
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            if fins.is_empty() {
                meta.remove("finalizers");
            } else {
                meta.insert("finalizers".into(), json!(fins.iter().collect::<Vec<_>>()));
            }
        }
        if obj.pointer("/metadata/deletionTimestamp").is_some() && fins.is_empty() {
            self.finish_delete(rt, ns, name);
        } else {
            self.store.put(&rt.group_resource(), obj);
        }
    }

    /// Removes a namespace whose contents are gone (the namespace controller's last step).
    pub fn controller_finalize_namespace(&mut self, name: &str) {
        if let Some(rt) = self.catalogue.get("", "v1", "namespaces") {
            self.finish_delete(&rt, "", name);
        }
    }
}
