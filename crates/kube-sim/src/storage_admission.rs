//! The API server's admission plugins for volumes, which every Kubernetes cluster runs:
//!
//! - DefaultStorageClass (mutating, create): a claim that names no class (no
//!   `spec.storageClassName` and no beta class annotation) gets the class annotated
//!   `storageclass.kubernetes.io/is-default-class: "true"`; of several, the newest (then the
//!   first by name). An explicit `""` means "no class" and is left alone.
//! - StorageObjectInUseProtection (mutating, create): claims get the finalizer
//!   `kubernetes.io/pvc-protection`, volumes `kubernetes.io/pv-protection`; the protection
//!   controllers (`workloads::controllers`) remove them when the object is no longer in use.
//! - PersistentVolumeClaimResize (validating, update): a claim may grow only when it is bound
//!   and its class has `allowVolumeExpansion: true`.
//!
//! They read StorageClasses from the store, so they live beside the verb handlers rather than
//! in the pure `defaults` and `validation` modules.

use serde_json::{Value, json};

use crate::admission_plugins::{AdmissionPlugin, Attributes, Write};
use crate::errors::ApiError;
use crate::resources::{GroupResource, ResourceType};
use crate::store::ClusterView;

pub const PVC_PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";
pub const PV_PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";
pub const DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";
const BETA_DEFAULT_CLASS_ANNOTATION: &str = "storageclass.beta.kubernetes.io/is-default-class";
const BETA_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// The three volume plugins in the admission chain (`admission_plugins`).
pub(crate) struct VolumePlugins;

impl AdmissionPlugin for VolumePlugins {
    fn mutate_create(&self, cluster: &dyn ClusterView, rt: &ResourceType, object: &mut Value) {
        on_create(cluster, rt, object);
    }
    fn validate(
        &self,
        cluster: &dyn ClusterView,
        a: &Attributes<'_>,
    ) -> Result<Vec<String>, ApiError> {
        if let Write::Update { old, new } = a.write {
            on_update(cluster, a.rt, old, new, a.subresource)?;
        }
        Ok(Vec::new())
    }
}

fn is_pvc(rt: &ResourceType) -> bool {
    rt.is(("", "PersistentVolumeClaim"))
}

/// Mutations of the two create-time plugins, run after defaulting and before validation.
fn on_create(cluster: &dyn ClusterView, rt: &ResourceType, obj: &mut Value) {
    if is_pvc(rt) {
        let has_class = obj
            .pointer("/spec/storageClassName")
            .is_some_and(|v| !v.is_null())
            || obj
                .pointer("/metadata/annotations")
                .and_then(Value::as_object)
                .is_some_and(|a| a.contains_key(BETA_CLASS_ANNOTATION));
        if !has_class
            && let Some(class) = default_class(cluster)
            && let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
        {
            spec.insert("storageClassName".into(), json!(class));
        }
        add_finalizer(obj, PVC_PROTECTION_FINALIZER);
    } else if rt.is(("", "PersistentVolume")) {
        add_finalizer(obj, PV_PROTECTION_FINALIZER);
    }
}

/// The default StorageClass's name, as `GetDefaultClass` picks it.
pub fn default_class(cluster: &dyn ClusterView) -> Option<String> {
    let gr = GroupResource::new("storage.k8s.io", "storageclasses");
    let mut defaults: Vec<(String, String)> = cluster
        .store()
        .iter(&gr, None, None)
        .filter(|(_, sc)| {
            let a = |k: &str| {
                sc.pointer("/metadata/annotations")
                    .and_then(|m| m.get(k))
                    .and_then(Value::as_str)
                    == Some("true")
            };
            a(DEFAULT_CLASS_ANNOTATION) || a(BETA_DEFAULT_CLASS_ANNOTATION)
        })
        .map(|((_, name), sc)| {
            let created = sc
                .pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            (created, name.clone())
        })
        .collect();
    // Newest first; equal timestamps (one-second resolution) by name.
    defaults.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    defaults.into_iter().next().map(|(_, name)| name)
}

fn add_finalizer(obj: &mut Value, finalizer: &str) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    match meta.get_mut("finalizers") {
        Some(Value::Array(list)) => {
            if !list.iter().any(|f| f == finalizer) {
                list.push(json!(finalizer));
            }
        }
        None | Some(Value::Null) => {
            meta.insert("finalizers".into(), json!([finalizer]));
        }
        // A wrong type is validation's to report.
        Some(_) => {}
    }
}

fn storage_request(obj: &Value) -> Option<i128> {
    obj.pointer("/spec/resources/requests/storage")
        .and_then(crate::defaults::quantity_milli)
}

/// PersistentVolumeClaimResize, on a write of the claim itself (not its status).
fn on_update(
    cluster: &dyn ClusterView,
    rt: &ResourceType,
    old: &Value,
    new: &Value,
    subresource: Option<&str>,
) -> Result<(), ApiError> {
    if !is_pvc(rt) || subresource.is_some() {
        return Ok(());
    }
    let (Some(old_size), Some(new_size)) = (storage_request(old), storage_request(new)) else {
        return Ok(());
    };
    if new_size <= old_size {
        return Ok(());
    }
    let name = new
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if old.pointer("/status/phase").and_then(Value::as_str) != Some("Bound") {
        return Err(ApiError::forbidden(
            rt,
            name,
            "Only bound persistent volume claims can be expanded",
        ));
    }
    let class = new
        .pointer("/spec/storageClassName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let allows = !class.is_empty()
        && cluster
            .store()
            .get(
                &GroupResource::new("storage.k8s.io", "storageclasses"),
                "",
                class,
            )
            .and_then(|sc| sc.get("allowVolumeExpansion").and_then(Value::as_bool))
            == Some(true);
    if !allows {
        return Err(ApiError::forbidden(
            rt,
            name,
            "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Cluster, WriteOptions};

    fn create(c: &mut Cluster, plural: &str, group: &str, ns: &str, body: Value) -> Value {
        let rt = c.resource(group, "v1", plural).expect("served");
        c.create(&rt, ns, body, &WriteOptions::default())
            .unwrap_or_else(|e| panic!("{}: {}", e.code, e.message))
            .body
    }

    fn class(c: &mut Cluster, name: &str, default: bool, created: &str) {
        let rt = c
            .resource("storage.k8s.io", "v1", "storageclasses")
            .expect("served");
        let mut sc = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name}, "provisioner": "example.com/disk"});
        if default {
            sc["metadata"]["annotations"] = json!({DEFAULT_CLASS_ANNOTATION: "true"});
        }
        create(c, "storageclasses", "storage.k8s.io", "", sc);
        // Creation times have one-second resolution; set them apart by hand.
        let mut stored = (*c
            .store()
            .get(&rt.group_resource(), "", name)
            .expect("stored"))
        .clone();
        stored["metadata"]["creationTimestamp"] = json!(created);
        c.controller_put(&rt, stored);
    }

    fn claim(c: &mut Cluster, name: &str, class: Option<&str>) -> Value {
        let mut spec = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}});
        if let Some(class) = class {
            spec["storageClassName"] = json!(class);
        }
        create(
            c,
            "persistentvolumeclaims",
            "",
            "default",
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name}, "spec": spec}),
        )
    }

    #[test]
    fn the_newest_default_class_is_given_to_claims_without_one() {
        let mut c = Cluster::new(100, 100);
        create(
            &mut c,
            "namespaces",
            "",
            "",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}),
        );
        let none = claim(&mut c, "before", None);
        assert!(
            none["spec"].get("storageClassName").is_none(),
            "no default yet"
        );
        class(&mut c, "old", true, "2026-01-01T00:00:00Z");
        class(&mut c, "plain", false, "2026-03-01T00:00:00Z");
        class(&mut c, "new", true, "2026-02-01T00:00:00Z");
        assert_eq!(default_class(&c).as_deref(), Some("new"));
        let got = claim(&mut c, "after", None);
        assert_eq!(got["spec"]["storageClassName"], "new");
        assert_eq!(
            got["metadata"]["finalizers"],
            json!([PVC_PROTECTION_FINALIZER])
        );
        assert_eq!(got["status"]["phase"], "Pending");
        // An explicit class, even "", is left alone.
        assert_eq!(
            claim(&mut c, "explicit", Some("plain"))["spec"]["storageClassName"],
            "plain"
        );
        assert_eq!(
            claim(&mut c, "none", Some(""))["spec"]["storageClassName"],
            ""
        );
    }

    #[test]
    fn volumes_get_their_protection_finalizer() {
        let mut c = Cluster::new(100, 100);
        let pv = create(
            &mut c,
            "persistentvolumes",
            "",
            "",
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                    "hostPath": {"path": "/data"}},
                "status": {"phase": "Bound"}}),
        );
        assert_eq!(
            pv["metadata"]["finalizers"],
            json!([PV_PROTECTION_FINALIZER])
        );
        assert_eq!(
            pv["status"]["phase"], "Pending",
            "status is not settable on create"
        );
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    }
}
