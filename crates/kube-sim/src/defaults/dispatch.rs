//! The entry points: which defaults a kind gets on every write, and the create- and
//! update-only preparations (cluster IPs, carried-over fields).

use super::apps::{daemon_set, deployment, replica_set, stateful_set};
use super::core_group::{
    endpoints, namespace, node, persistent_volume, persistent_volume_claim, secret, service,
    service_carry_over, service_ip_families,
};
use super::helpers::{ensure_obj, set_str_if_empty};
use super::other_groups::{
    crd, csi_driver, lease, network_policy, pod_disruption_budget, role_binding, storage_class,
};
use super::pods::{pod, pod_admission, pod_template};
use serde_json::{Value, json};

/// Fills in the server-side defaults for a built-in kind, in place. Unknown kinds: no-op.
///
/// `group` is the API group (`""` for the core group), `kind` the object's kind. Safe to run on
/// every write: applying it twice gives the same object as applying it once.
pub fn apply_defaults(group: &str, kind: &str, obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    match (group, kind) {
        ("apps", "Deployment") => deployment(root),
        ("apps", "DaemonSet") => daemon_set(root),
        ("apps", "StatefulSet") => stateful_set(root),
        ("apps", "ReplicaSet") => replica_set(root),
        ("", "Pod") => pod(root),
        ("", "PodTemplate") => pod_template(root, "template"),
        ("", "Service") => service(root),
        ("", "Namespace") => namespace(root),
        ("", "Secret") => secret(root),
        ("", "Node") => node(root),
        ("", "PersistentVolumeClaim") => persistent_volume_claim(root),
        ("", "PersistentVolume") => persistent_volume(root),
        ("", "Endpoints") => endpoints(root),
        ("storage.k8s.io", "StorageClass") => storage_class(root),
        ("storage.k8s.io", "CSIDriver") => csi_driver(root),
        ("policy", "PodDisruptionBudget") => pod_disruption_budget(root),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => role_binding(root),
        ("networking.k8s.io", "NetworkPolicy") => network_policy(root),
        ("coordination.k8s.io", "Lease") => lease(root),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd(root),
        ("scheduling.k8s.io", "PriorityClass") => {
            set_str_if_empty(root, "preemptionPolicy", "PreemptLowerPriority");
        }
        // ConfigMap (`data` defaults to an empty map, which serialises as nothing), ServiceAccount,
        // Role, ClusterRole and Event have no visible server-side defaults.
        _ => {}
    }
}

/// Create-only mutations of admission plugins and registry strategies. Call after
/// [`apply_defaults`] on create, never on update. Unknown kinds: no-op.
///
/// - Namespace: `status` reset to `{phase: Active}`, `kubernetes` appended to `spec.finalizers`
///   (the namespace controller removes it later, so re-adding it on update would be wrong).
/// - Pod: `status` reset to `{phase: Pending, qosClass}`; the ServiceAccount admission plugin's
///   `serviceAccountName: default`, DefaultTolerationSeconds' two 300 s tolerations, Priority
///   admission's `priority` and `preemptionPolicy`.
/// - Service: `ipFamilyPolicy` and `ipFamilies` as the REST storage initialises them on a
///   single-stack IPv4 cluster, and `clusterIPs` from a client-set `clusterIP`.
pub fn prepare_for_create(group: &str, kind: &str, obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    match (group, kind) {
        ("", "Namespace") => {
            root.insert("status".into(), json!({"phase": "Active"}));
            if let Some(spec) = ensure_obj(root, "spec") {
                match spec.get_mut("finalizers") {
                    None | Some(Value::Null) => {
                        spec.insert("finalizers".into(), json!(["kubernetes"]));
                    }
                    Some(Value::Array(list)) => {
                        if !list.iter().any(|f| f == "kubernetes") {
                            list.push(json!("kubernetes"));
                        }
                    }
                    Some(_) => {}
                }
            }
        }
        ("", "Pod") => pod_admission(root),
        ("", "Service") => service_ip_families(root),
        _ => {}
    }
}

/// Values a server keeps from the stored object on update. Call after [`apply_defaults`] on the
/// new object, before validation. Unknown kinds: no-op.
///
/// - Service (REST `patchAllocatedValues` + `normalizeClusterIPs`): a PUT that omits the
///   allocated `clusterIP`/`clusterIPs`, `nodePort`s or `healthCheckNodePort` gets the old ones, and
///   so do an omitted `ipFamilyPolicy`/`ipFamilies`; a changed `clusterIP` with unchanged
///   `clusterIPs` rewrites `clusterIPs[0]` (validation then rejects the change).
/// - Namespace: `spec.finalizers` only change through the `finalize` subresource.
pub fn prepare_for_update(group: &str, kind: &str, old: &Value, new: &mut Value) {
    let (Some(old_root), Some(new_root)) = (old.as_object(), new.as_object_mut()) else {
        return;
    };
    match (group, kind) {
        ("", "Service") => service_carry_over(old_root, new_root),
        ("", "Namespace") => {
            let old_finalizers = old_root
                .get("spec")
                .and_then(|s| s.get("finalizers"))
                .cloned();
            if let Some(spec) = ensure_obj(new_root, "spec") {
                match old_finalizers {
                    Some(f) => {
                        spec.insert("finalizers".into(), f);
                    }
                    None => {
                        spec.remove("finalizers");
                    }
                }
            }
        }
        _ => {}
    }
}

/// Gives a Service its cluster IP from the caller's counter: `next` 1 is 10.96.0.1 (the address
/// of the `kubernetes` Service on a default cluster), 2 is 10.96.0.2, and so on through the
/// default 10.96.0.0/12 range, wrapping around inside it.
///
/// Does nothing for `ExternalName` Services, headless ones (`clusterIP: None`) and ones whose
/// client chose an address; in those cases only `clusterIP` and `clusterIPs` are brought in line.
/// Returns whether the counter was used, so the caller knows to advance it.
pub fn allocate_cluster_ip(obj: &mut Value, next: u32) -> bool {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return false;
    };
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return false;
    }
    let single = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let first_plural = match spec.get("clusterIPs") {
        Some(Value::Array(ips)) => ips.first().and_then(Value::as_str).map(str::to_string),
        _ => None,
    };
    match (single.is_empty(), first_plural) {
        (false, None) => {
            if matches!(
                spec.get("clusterIPs"),
                None | Some(Value::Null) | Some(Value::Array(_))
            ) {
                spec.insert("clusterIPs".into(), json!([single]));
            }
            false
        }
        (true, Some(first)) => {
            spec.insert("clusterIP".into(), json!(first));
            false
        }
        (false, Some(_)) => false,
        (true, None) => {
            // Host part 1..=2^20-2 of 10.96.0.0/12: never the network or broadcast address.
            const HOSTS: u32 = (1 << 20) - 2;
            let offset = next.wrapping_sub(1) % HOSTS + 1;
            let addr = 0x0A60_0000_u32 + offset;
            let ip = format!(
                "{}.{}.{}.{}",
                addr >> 24,
                (addr >> 16) & 0xff,
                (addr >> 8) & 0xff,
                addr & 0xff
            );
            spec.insert("clusterIP".into(), json!(ip));
            spec.insert("clusterIPs".into(), json!([ip]));
            true
        }
    }
}
