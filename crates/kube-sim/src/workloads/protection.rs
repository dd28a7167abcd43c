//! The pvc-protection and pv-protection controllers of kube-controller-manager: a terminating
//! claim keeps its `kubernetes.io/pvc-protection` finalizer while a scheduled Pod that has not
//! finished uses it, and a terminating volume keeps `kubernetes.io/pv-protection` while it is
//! Bound. The admission plugin that adds the finalizers is `storage_admission`.

use serde_json::Value;

use crate::api::{self, Cluster};
use crate::resources::{GroupResource, ResourceType};
use crate::storage_admission::{PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER};

/// The protection finalizer the controllers may drop from this terminating object, if any.
pub fn releasable(c: &Cluster, rt: &ResourceType, obj: &Value) -> Option<&'static str> {
    let fins = api::finalizers(obj);
    if rt.is(("", "PersistentVolumeClaim")) && fins.contains(PVC_PROTECTION_FINALIZER) {
        let ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return (!claim_in_use(c, ns, name)).then_some(PVC_PROTECTION_FINALIZER);
    }
    if rt.is(("", "PersistentVolume")) && fins.contains(PV_PROTECTION_FINALIZER) {
        let bound = obj.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
        return (!bound).then_some(PV_PROTECTION_FINALIZER);
    }
    None
}

/// Whether a Pod in `ns` that is scheduled and not finished mounts the claim. Unscheduled
/// pods do not count, as in the real controller: the kubelet refuses to start a pod whose
/// claim is being deleted.
pub fn claim_in_use(c: &Cluster, ns: &str, claim: &str) -> bool {
    let pods = GroupResource::new("", "pods");
    c.store().iter(&pods, Some(ns), None).any(|(_, pod)| {
        let scheduled = pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty());
        let finished = matches!(
            pod.pointer("/status/phase").and_then(Value::as_str),
            Some("Succeeded" | "Failed")
        );
        scheduled && !finished && pod_claims(pod).any(|c| c == claim)
    })
}

/// The claim names a Pod's volumes reference.
pub fn pod_claims(pod: &Value) -> impl Iterator<Item = &str> {
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            v.pointer("/persistentVolumeClaim/claimName")
                .and_then(Value::as_str)
        })
}
