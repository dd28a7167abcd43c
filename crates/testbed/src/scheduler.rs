//! A stand-in for kube-scheduler's volume binding, for bare Pods that use claims: a Pod with no
//! `nodeName` that mounts PersistentVolumeClaims gets a node once its claims allow it.
//!
//! - A claim of a `WaitForFirstConsumer` class that is not bound yet gets the annotation
//!   `volume.kubernetes.io/selected-node` with the chosen node (the provisioner then creates
//!   the volume in that node's zone); the Pod waits.
//! - Once every claim is bound, the Pod is bound to a node: the first Ready node it fits
//!   (selectors, affinity, taints, as kube-sim's workload simulator judges them) that also
//!   satisfies the required node affinity of its volumes.
//! - A missing claim, or no fitting node, leaves the Pod unscheduled with a Warning
//!   `FailedScheduling` Event.
//!
//! Pods that use no claim are left alone (kube-sim's workload simulator keeps Deployment and
//! DaemonSet pods virtual). Once placed, the kubelet stand-in ([`crate::kubelet`]) reports the
//! Pod Running when its volumes are ready; no container runs.

use std::sync::Arc;

use kube_sim::ClusterHandle;
use kube_sim::workload::node_should_run;
use serde_json::{Value, json};

use crate::in_process::{self, text};

/// The claim annotation the scheduler sets for `WaitForFirstConsumer` classes.
pub const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";

const SCHEDULER: &str = "default-scheduler";

/// The claim names a Pod's volumes reference.
pub(crate) fn claims(pod: &Value) -> Vec<String> {
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            v.pointer("/persistentVolumeClaim/claimName")
                .and_then(Value::as_str)
        })
        .map(str::to_owned)
        .collect()
}

fn node_ready(node: &Value) -> bool {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| text(c, "/type") == "Ready" && text(c, "/status") == "True")
        && node.pointer("/spec/unschedulable").and_then(Value::as_bool) != Some(true)
}

/// Whether a node satisfies a PV's required node affinity (`In` / `NotIn` / `Exists` terms).
fn fits_volume(node: &Value, pv: &Value) -> bool {
    let Some(terms) = pv
        .pointer("/spec/nodeAffinity/required/nodeSelectorTerms")
        .and_then(Value::as_array)
    else {
        return true;
    };
    let labels = node.pointer("/metadata/labels");
    terms.iter().any(|term| {
        term.get("matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .all(|e| {
                let value = labels
                    .and_then(|l| l.get(text(e, "/key")))
                    .and_then(Value::as_str);
                let values: Vec<&str> = e
                    .get("values")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                match text(e, "/operator") {
                    "In" => value.is_some_and(|v| values.contains(&v)),
                    "NotIn" => value.is_none_or(|v| !values.contains(&v)),
                    "Exists" => value.is_some(),
                    "DoesNotExist" => value.is_none(),
                    _ => false,
                }
            })
    })
}

/// One pass over unscheduled Pods that use claims; returns how many it acted on.
pub fn sync_once(kube: &ClusterHandle) -> usize {
    let pods = in_process::list(kube, "", "pods", None);
    let mut acted = 0;
    for pod in pods {
        if pod.pointer("/metadata/deletionTimestamp").is_some()
            || !text(&pod, "/spec/nodeName").is_empty()
        {
            continue;
        }
        let names = claims(&pod);
        if names.is_empty() {
            continue;
        }
        acted += usize::from(schedule(kube, &pod, &names));
    }
    acted
}

fn failed(kube: &ClusterHandle, pod: &Value, message: &str) {
    let _ = in_process::event(kube, pod, "Warning", "FailedScheduling", message, SCHEDULER);
}

fn schedule(kube: &ClusterHandle, pod: &Arc<Value>, names: &[String]) -> bool {
    let ns = text(pod, "/metadata/namespace");
    let mut volumes = Vec::new();
    let mut waiting = Vec::new();
    for name in names {
        let Some(claim) = in_process::get(kube, "", "persistentvolumeclaims", ns, name) else {
            failed(
                kube,
                pod,
                &format!("0/0 nodes are available: persistentvolumeclaim \"{name}\" not found."),
            );
            return false;
        };
        let volume = text(&claim, "/spec/volumeName");
        if !volume.is_empty() && text(&claim, "/status/phase") == "Bound" {
            if let Some(pv) = in_process::get(kube, "", "persistentvolumes", "", volume) {
                volumes.push(pv);
            }
        } else {
            waiting.push(claim);
        }
    }
    let spec = pod.get("spec").cloned().unwrap_or(json!({}));
    let nodes = in_process::list(kube, "", "nodes", None);
    let total = nodes.len();
    let Some(node) = nodes.into_iter().find(|n| {
        node_ready(n) && node_should_run(n, &spec).0 && volumes.iter().all(|pv| fits_volume(n, pv))
    }) else {
        failed(
            kube,
            pod,
            &format!(
                "0/{total} nodes are available: no node fits the pod and its volumes' node affinity."
            ),
        );
        return false;
    };
    let node_name = text(&node, "/metadata/name");
    if !waiting.is_empty() {
        let mut acted = false;
        for claim in waiting {
            let has = claim
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(SELECTED_NODE))
                .is_some();
            let class = text(&claim, "/spec/storageClassName");
            let wffc = in_process::get(kube, "storage.k8s.io", "storageclasses", "", class)
                .is_some_and(|c| text(&c, "/volumeBindingMode") == "WaitForFirstConsumer");
            if wffc && !has {
                acted |= in_process::merge(
                    kube,
                    ("", "persistentvolumeclaims"),
                    ns,
                    text(&claim, "/metadata/name"),
                    false,
                    &json!({"metadata": {"annotations": {SELECTED_NODE: node_name}}}),
                    SCHEDULER,
                )
                .is_ok();
            }
        }
        return acted;
    }
    // What the `pods/binding` subresource does: set `spec.nodeName` and PodScheduled.
    let name = text(pod, "/metadata/name").to_owned();
    let node_name = node_name.to_owned();
    kube.write(|c| {
        let Some(rt) = c.resource("", "v1", "pods") else {
            return false;
        };
        let Some(current) = c.store().get(&rt.group_resource(), ns, &name) else {
            return false;
        };
        let mut bound = (*current).clone();
        bound["spec"]["nodeName"] = json!(node_name);
        let now = in_process::now();
        if let Some(status) = bound.get_mut("status").and_then(Value::as_object_mut) {
            status.insert(
                "conditions".into(),
                json!([{"type": "PodScheduled", "status": "True", "lastTransitionTime": now}]),
            );
        }
        c.controller_put(&rt, bound);
        true
    })
}
