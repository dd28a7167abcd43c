//! [`validate_update`]: the immutability rules a real server adds on update.

use super::Errs;
use super::access::{at, immutable, semantic_eq};
use super::create::validate_create;
use super::volumes::{
    persistent_volume_claim_update, persistent_volume_update, volume_attachment_update,
};
use crate::field_error::{FieldError, index};
use serde_json::{Value, json};

/// Update-time validation: everything of [`validate_create`] on `new` plus the kind's
/// immutable fields, compared with `old` (both after defaulting).
pub fn validate_update(group: &str, kind: &str, old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errs = validate_create(group, kind, new);
    if !old.is_object() || !new.is_object() {
        return errs;
    }
    let e = &mut errs;
    match (group, kind) {
        ("apps", "Deployment" | "DaemonSet" | "ReplicaSet") => {
            immutable(
                at(old, &["spec", "selector"]),
                at(new, &["spec", "selector"]),
                "spec.selector",
                e,
            );
        }
        ("apps", "StatefulSet") => {
            const MUTABLE: &[&str] = &[
                "replicas",
                "ordinals",
                "template",
                "updateStrategy",
                "revisionHistoryLimit",
                "persistentVolumeClaimRetentionPolicy",
                "minReadySeconds",
            ];
            let strip = |v: &Value| -> Value {
                let mut spec = v
                    .get("spec")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                spec.retain(|k, _| !MUTABLE.contains(&k.as_str()));
                Value::Object(spec)
            };
            if !semantic_eq(Some(&strip(old)), Some(&strip(new))) {
                e.push(FieldError::forbidden(
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
                ));
            }
        }
        ("", "Service") => service_update(old, new, e),
        ("", "Secret") => {
            immutable(old.get("type"), new.get("type"), "type", e);
            immutable_data(old, new, &["data"], e);
        }
        ("", "ConfigMap") => immutable_data(old, new, &["data", "binaryData"], e),
        ("", "PersistentVolumeClaim") => persistent_volume_claim_update(old, new, e),
        ("", "PersistentVolume") => persistent_volume_update(old, new, e),
        ("storage.k8s.io", "VolumeAttachment") => volume_attachment_update(old, new, e),
        ("storage.k8s.io", "StorageClass") => {
            for field in ["parameters", "provisioner", "reclaimPolicy"] {
                if !semantic_eq(old.get(field), new.get(field)) {
                    e.push(FieldError::forbidden(
                        field,
                        format!("updates to {field} are forbidden."),
                    ));
                }
            }
            immutable(
                old.get("volumeBindingMode"),
                new.get("volumeBindingMode"),
                "volumeBindingMode",
                e,
            );
        }
        ("storage.k8s.io", "CSIDriver") => {
            immutable(
                at(old, &["spec", "attachRequired"]),
                at(new, &["spec", "attachRequired"]),
                "spec.attachedRequired",
                e,
            );
            immutable(
                at(old, &["spec", "volumeLifecycleModes"]),
                at(new, &["spec", "volumeLifecycleModes"]),
                "spec.volumeLifecycleModes",
                e,
            );
        }
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding")
            if !semantic_eq(old.get("roleRef"), new.get("roleRef")) =>
        {
            e.push(FieldError::invalid(
                "roleRef",
                new.get("roleRef").cloned().unwrap_or(Value::Null),
                "cannot change roleRef",
            ));
        }
        _ => {}
    }
    errs
}

/// Secret and ConfigMap with `immutable: true`.
pub(super) fn immutable_data(old: &Value, new: &Value, fields: &[&str], errs: &mut Errs) {
    if old.get("immutable") != Some(&Value::Bool(true)) {
        return;
    }
    if new.get("immutable") != Some(&Value::Bool(true)) {
        errs.push(FieldError::forbidden(
            "immutable",
            "field is immutable when `immutable` is set",
        ));
    }
    for field in fields {
        if !semantic_eq(old.get(*field), new.get(*field)) {
            errs.push(FieldError::forbidden(
                *field,
                "field is immutable when `immutable` is set",
            ));
        }
    }
}

/// `validateUpgradeDowngradeClusterIPs`: the primary cluster IP never changes.
pub(super) fn service_update(old: &Value, new: &Value, errs: &mut Errs) {
    let is_external =
        |v: &Value| at(v, &["spec", "type"]).and_then(Value::as_str) == Some("ExternalName");
    if is_external(old) || is_external(new) {
        return;
    }
    let ips = |v: &Value| -> Vec<String> {
        at(v, &["spec", "clusterIPs"])
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|x| x.as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let headless = |ips: &[String]| ips.first().is_some_and(|ip| ip == "None");
    let (old_ips, new_ips) = (ips(old), ips(new));
    if headless(&old_ips) && headless(&new_ips) {
        return;
    }
    let value = json!(new_ips);
    let path0 = index("spec.clusterIPs", 0);
    if old_ips.len() == new_ips.len() {
        for (i, (a, b)) in old_ips.iter().zip(&new_ips).enumerate() {
            if a != b {
                errs.push(FieldError::invalid(
                    index("spec.clusterIPs", i),
                    value.clone(),
                    "may not change once set",
                ));
            }
        }
    } else if old_ips.len() > new_ips.len() {
        if new_ips.is_empty() {
            errs.push(FieldError::invalid(
                &path0,
                value.clone(),
                "primary clusterIP can not be unset",
            ));
        }
        if let (Some(a), Some(b)) = (old_ips.first(), new_ips.first())
            && a != b
        {
            errs.push(FieldError::invalid(
                &path0,
                value.clone(),
                "may not change once set",
            ));
        }
        if new_ips.len() == 1
            && at(new, &["spec", "ipFamilyPolicy"]).and_then(Value::as_str) != Some("SingleStack")
        {
            errs.push(FieldError::invalid(
                &path0,
                value,
                "`ipFamilyPolicy` must be set to 'SingleStack' when releasing the secondary clusterIP",
            ));
        }
    } else if let (Some(a), Some(b)) = (old_ips.first(), new_ips.first())
        && a != b
    {
        errs.push(FieldError::invalid(
            &path0,
            value,
            "may not change once set",
        ));
    }
}
