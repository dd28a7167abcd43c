//! Defaults of the `apps` group: Deployments, DaemonSets, StatefulSets, ReplicaSets.

use super::core_group::persistent_volume_claim;
use super::helpers::{
    ensure_obj, for_each_obj, obj_at, set_if_unset, set_if_unset_null, set_str_if_empty,
    zero_fields,
};
use super::pods::pod_template;
use serde_json::{Map, Value, json};

pub(super) fn deployment(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        set_if_unset(spec, "replicas", json!(1));
        if let Some(strategy) = ensure_obj(spec, "strategy") {
            set_str_if_empty(strategy, "type", "RollingUpdate");
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                && let Some(ru) = ensure_obj(strategy, "rollingUpdate")
            {
                set_if_unset(ru, "maxUnavailable", json!("25%"));
                set_if_unset(ru, "maxSurge", json!("25%"));
            }
        }
        set_if_unset(spec, "revisionHistoryLimit", json!(10));
        set_if_unset(spec, "progressDeadlineSeconds", json!(600));
        pod_template(spec, "template");
    }
    ensure_obj(root, "status");
}

pub(super) fn daemon_set(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        if let Some(strategy) = ensure_obj(spec, "updateStrategy") {
            set_str_if_empty(strategy, "type", "RollingUpdate");
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                && let Some(ru) = ensure_obj(strategy, "rollingUpdate")
            {
                set_if_unset(ru, "maxUnavailable", json!(1));
                set_if_unset(ru, "maxSurge", json!(0));
            }
        }
        set_if_unset(spec, "revisionHistoryLimit", json!(10));
        pod_template(spec, "template");
    }
    if let Some(status) = ensure_obj(root, "status") {
        zero_fields(
            status,
            &[
                "currentNumberScheduled",
                "numberMisscheduled",
                "desiredNumberScheduled",
                "numberReady",
            ],
        );
    }
}

pub(super) fn stateful_set(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        set_str_if_empty(spec, "podManagementPolicy", "OrderedReady");
        if let Some(strategy) = ensure_obj(spec, "updateStrategy") {
            // Only an unset type brings an empty rollingUpdate; an explicit RollingUpdate without
            // one stays without one (SetDefaults_StatefulSet).
            let unset = matches!(strategy.get("type"), None | Some(Value::Null))
                || strategy.get("type").and_then(Value::as_str) == Some("");
            if unset {
                strategy.insert("type".into(), json!("RollingUpdate"));
                set_if_unset(strategy, "rollingUpdate", json!({}));
            }
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                && let Some(ru) = obj_at(strategy, "rollingUpdate")
            {
                set_if_unset(ru, "partition", json!(0));
            }
        }
        if let Some(policy) = ensure_obj(spec, "persistentVolumeClaimRetentionPolicy") {
            set_str_if_empty(policy, "whenDeleted", "Retain");
            set_str_if_empty(policy, "whenScaled", "Retain");
        }
        set_if_unset(spec, "replicas", json!(1));
        set_if_unset(spec, "revisionHistoryLimit", json!(10));
        pod_template(spec, "template");
        for_each_obj(spec, "volumeClaimTemplates", |pvc| {
            // Embedded PersistentVolumeClaims serialise with their TypeMeta and a zero status.
            set_str_if_empty(pvc, "apiVersion", "v1");
            set_str_if_empty(pvc, "kind", "PersistentVolumeClaim");
            if let Some(meta) = ensure_obj(pvc, "metadata") {
                set_if_unset_null(meta, "creationTimestamp");
            }
            persistent_volume_claim(pvc);
        });
    }
    if let Some(status) = ensure_obj(root, "status") {
        zero_fields(status, &["replicas", "availableReplicas"]);
    }
}

pub(super) fn replica_set(root: &mut Map<String, Value>) {
    if let Some(spec) = ensure_obj(root, "spec") {
        set_if_unset(spec, "replicas", json!(1));
        pod_template(spec, "template");
    }
    if let Some(status) = ensure_obj(root, "status") {
        zero_fields(status, &["replicas"]);
    }
}
