//! [`validate_create`]: which rules a kind's body is checked against on create.

use super::access::{as_obj, opt_arr, opt_obj, spec_of, wrong_type};
use super::apps::{daemon_set, deployment, replica_set, stateful_set};
use super::core_group::{config_map, event, secret, service};
use super::names::finalizer_names;
use super::other_groups::{
    csi_driver, lease, network_policy, pod_disruption_budget, policy_rules, role_binding,
    storage_class,
};
use super::pods::{pod_spec, pod_template_spec};
use super::selectors::validate_label_selector;
use super::volumes::{persistent_volume, persistent_volume_claim, volume_attachment};
use crate::field_error::{FieldError, index};
use serde_json::{Map, Value};

/// Create-time validation of the built-in kinds' bodies (after defaulting): required fields,
/// enums, references within the object, sizes. Top-level metadata is checked by
/// [`validate_name`], [`validate_labels_and_annotations`] and [`validate_finalizers`].
/// Unknown kinds, and CustomResourceDefinitions (validated by `crate::crd`): no errors.
pub fn validate_create(group: &str, kind: &str, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(root) = obj.as_object() else {
        wrong_type(&mut errs, "", obj, "object");
        return errs;
    };
    let e = &mut errs;
    match (group, kind) {
        ("apps", "Deployment") => deployment(root, e),
        ("apps", "DaemonSet") => daemon_set(root, e),
        ("apps", "StatefulSet") => stateful_set(root, e),
        ("apps", "ReplicaSet") => replica_set(root, e),
        ("", "Pod") => {
            let empty = Map::new();
            if let Some(spec) = spec_of(root, &empty, e) {
                pod_spec(spec, "spec", e);
            }
        }
        ("", "PodTemplate") => match as_obj(root.get("template"), "template", e) {
            Some(t) => pod_template_spec(t, "template", e),
            None => pod_template_spec(&Map::new(), "template", e),
        },
        ("", "Service") => service(root, e),
        ("", "ConfigMap") => config_map(root, e),
        ("", "Secret") => secret(root, e),
        ("", "Namespace") => {
            let spec = opt_obj(Some(root), "spec", "spec", e);
            let finalizers = opt_arr(spec, "finalizers", "spec.finalizers", e);
            finalizer_names(
                finalizers.map_or(&[], Vec::as_slice),
                "spec.finalizers",
                Some(&["kubernetes"]),
                e,
            );
        }
        ("", "Event") => event(root, e),
        ("", "PersistentVolumeClaim") => persistent_volume_claim(root, e),
        ("", "PersistentVolume") => persistent_volume(root, e),
        ("storage.k8s.io", "VolumeAttachment") => volume_attachment(root, e),
        ("storage.k8s.io", "StorageClass") => storage_class(root, e),
        ("storage.k8s.io", "CSIDriver") => csi_driver(root, e),
        ("policy", "PodDisruptionBudget") => pod_disruption_budget(root, e),
        ("rbac.authorization.k8s.io", "Role") => policy_rules(root, true, e),
        ("rbac.authorization.k8s.io", "ClusterRole") => {
            policy_rules(root, false, e);
            if let Some(agg) = opt_obj(Some(root), "aggregationRule", "aggregationRule", e) {
                let path = "aggregationRule.clusterRoleSelectors";
                let selectors = opt_arr(Some(agg), "clusterRoleSelectors", path, e);
                if selectors.is_none_or(Vec::is_empty) {
                    e.push(FieldError::required(
                        path,
                        "at least one clusterRoleSelector required if aggregationRule is non-nil",
                    ));
                }
                for (i, s) in selectors.into_iter().flatten().enumerate() {
                    validate_label_selector(Some(s), &index(path, i), e);
                }
            }
        }
        ("rbac.authorization.k8s.io", "RoleBinding") => role_binding(root, true, e),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => role_binding(root, false, e),
        ("networking.k8s.io", "NetworkPolicy") => network_policy(root, e),
        ("coordination.k8s.io", "Lease") => lease(root, e),
        _ => {}
    }
    errs
}
