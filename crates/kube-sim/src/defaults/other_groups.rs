//! Defaults of the other built-in groups: storage, policy, RBAC, networking, coordination and
//! CustomResourceDefinitions.

use super::helpers::{
    ensure_obj, for_each_obj, obj_at, set_if_unset, set_str_if_empty, str_at, zero_fields,
};
use serde_json::{Map, Value, json};

pub(super) fn storage_class(root: &mut Map<String, Value>) {
    set_if_unset(root, "reclaimPolicy", json!("Delete"));
    set_if_unset(root, "volumeBindingMode", json!("Immediate"));
}

pub(super) fn csi_driver(root: &mut Map<String, Value>) {
    let Some(spec) = ensure_obj(root, "spec") else {
        return;
    };
    set_if_unset(spec, "attachRequired", json!(true));
    set_if_unset(spec, "podInfoOnMount", json!(false));
    set_if_unset(spec, "storageCapacity", json!(false));
    set_if_unset(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    let modes_empty = match spec.get("volumeLifecycleModes") {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    };
    if modes_empty {
        spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
    }
    set_if_unset(spec, "requiresRepublish", json!(false));
    // SELinuxMountReadWriteOncePod is beta and on by default in v1.33.
    set_if_unset(spec, "seLinuxMount", json!(false));
}

pub(super) fn pod_disruption_budget(root: &mut Map<String, Value>) {
    ensure_obj(root, "spec");
    if let Some(status) = ensure_obj(root, "status") {
        zero_fields(
            status,
            &[
                "disruptionsAllowed",
                "currentHealthy",
                "desiredHealthy",
                "expectedPods",
            ],
        );
    }
}

pub(super) fn role_binding(root: &mut Map<String, Value>) {
    if let Some(role_ref) = ensure_obj(root, "roleRef") {
        set_str_if_empty(role_ref, "apiGroup", "rbac.authorization.k8s.io");
    }
    for_each_obj(root, "subjects", |s| {
        let group_unset = match s.get("apiGroup") {
            None | Some(Value::Null) => true,
            Some(Value::String(g)) => g.is_empty(),
            Some(_) => false,
        };
        if !group_unset {
            return;
        }
        match str_at(s, "kind") {
            // Go defaults it to "", which `omitempty` leaves out of every answer.
            "ServiceAccount" => {
                s.remove("apiGroup");
            }
            "User" | "Group" => {
                s.insert("apiGroup".into(), json!("rbac.authorization.k8s.io"));
            }
            _ => {}
        }
    });
}

pub(super) fn network_policy(root: &mut Map<String, Value>) {
    let Some(spec) = ensure_obj(root, "spec") else {
        return;
    };
    for direction in ["ingress", "egress"] {
        for_each_obj(spec, direction, |rule| {
            for_each_obj(rule, "ports", |p| set_if_unset(p, "protocol", json!("TCP")));
        });
    }
    let types_empty = match spec.get("policyTypes") {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    };
    if types_empty {
        let has_egress = matches!(spec.get("egress"), Some(Value::Array(a)) if !a.is_empty());
        let types = if has_egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".into(), types);
    }
}

pub(super) fn lease(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        // CoordinatedLeaderElection is off by default in v1.33: the strategy drops its fields.
        spec.remove("strategy");
        spec.remove("preferredHolder");
    }
}

pub(super) fn crd(root: &mut Map<String, Value>) {
    let mut storage_version = None;
    if let Some(spec) = ensure_obj(root, "spec") {
        if let Some(names) = obj_at(spec, "names") {
            let kind = str_at(names, "kind").to_string();
            set_str_if_empty(names, "singular", &kind.to_lowercase());
            if !kind.is_empty() {
                set_str_if_empty(names, "listKind", &format!("{kind}List"));
            }
        }
        set_if_unset(spec, "conversion", json!({"strategy": "None"}));
        if let Some(service) = obj_at(spec, "conversion")
            .and_then(|c| obj_at(c, "webhook"))
            .and_then(|w| obj_at(w, "clientConfig"))
            .and_then(|c| obj_at(c, "service"))
        {
            set_if_unset(service, "port", json!(443));
        }
        if let Some(Value::Array(versions)) = spec.get("versions") {
            storage_version = versions
                .iter()
                .find(|v| v.get("storage") == Some(&Value::Bool(true)))
                .and_then(|v| v.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string);
        }
    }
    if let Some(status) = ensure_obj(root, "status") {
        if let Some(accepted) = ensure_obj(status, "acceptedNames") {
            set_if_unset(accepted, "kind", json!(""));
            set_if_unset(accepted, "plural", json!(""));
        }
        // Both the defaulter and the strategy make sure the storage version is recorded.
        let stored = status.entry("storedVersions").or_insert(Value::Null);
        if stored.is_null() {
            *stored = json!([]);
        }
        if let (Value::Array(list), Some(v)) = (stored, storage_version)
            && !list.iter().any(|s| s.as_str() == Some(v.as_str()))
        {
            list.push(json!(v));
        }
    }
}
