//! A stand-in for the kubelet's side of a bare Pod that mounts claims, so that what a user
//! waits for (`kubectl wait --for=condition=Ready pod/...`) happens: once the scheduler
//! stand-in has bound such a Pod to a node, every claim it mounts is Bound, and every volume
//! whose driver requires attach is attached to that node (a `VolumeAttachment` with
//! `status.attached`), the Pod is reported `Running` and `Ready`, as a kubelet reports it after
//! mounting the volumes and starting the containers.
//!
//! Nothing runs and nothing is mounted: it only writes status. Pods without claims are kube-sim's
//! workload simulator's (or a test's) and are left alone, and so is a Pod that already has a
//! phase other than `Pending`.

use kube_sim::ClusterHandle;
use serde_json::{Value, json};

use crate::in_process::{self, text};

const KUBELET: &str = "kubelet";

/// One pass over the scheduled, not yet running Pods that mount claims; returns how many it
/// started.
pub fn sync_once(kube: &ClusterHandle) -> usize {
    let mut started = 0;
    for pod in in_process::list(kube, "", "pods", None) {
        let node = text(&pod, "/spec/nodeName");
        let phase = text(&pod, "/status/phase");
        if node.is_empty()
            || pod.pointer("/metadata/deletionTimestamp").is_some()
            || !(phase.is_empty() || phase == "Pending")
        {
            continue;
        }
        let claims = crate::scheduler::claims(&pod);
        if claims.is_empty() || !volumes_ready(kube, &pod, &claims, node) {
            continue;
        }
        started += usize::from(start(kube, &pod, node));
    }
    started
}

/// Every claim Bound and each of its volumes attached to `node` when its driver needs that.
fn volumes_ready(kube: &ClusterHandle, pod: &Value, claims: &[String], node: &str) -> bool {
    let ns = text(pod, "/metadata/namespace");
    let attachments = in_process::list(kube, "storage.k8s.io", "volumeattachments", None);
    claims.iter().all(|name| {
        let Some(claim) = in_process::get(kube, "", "persistentvolumeclaims", ns, name) else {
            return false;
        };
        let volume = text(&claim, "/spec/volumeName");
        if text(&claim, "/status/phase") != "Bound" || volume.is_empty() {
            return false;
        }
        let Some(pv) = in_process::get(kube, "", "persistentvolumes", "", volume) else {
            return false;
        };
        let driver = text(&pv, "/spec/csi/driver");
        if driver.is_empty() || !attach_required(kube, driver) {
            return true;
        }
        attachments.iter().any(|va| {
            text(va, "/spec/source/persistentVolumeName") == volume
                && text(va, "/spec/nodeName") == node
                && va.pointer("/status/attached").and_then(Value::as_bool) == Some(true)
        })
    })
}

/// The CSIDriver's `attachRequired` (true when unset, as the API defaults it).
fn attach_required(kube: &ClusterHandle, driver: &str) -> bool {
    in_process::get(kube, "storage.k8s.io", "csidrivers", "", driver)
        .and_then(|d| d.pointer("/spec/attachRequired").and_then(Value::as_bool))
        .unwrap_or(true)
}

fn start(kube: &ClusterHandle, pod: &Value, node: &str) -> bool {
    let now = in_process::now();
    let host_ip = in_process::get(kube, "", "nodes", "", node)
        .and_then(|n| {
            n.pointer("/status/addresses")
                .and_then(Value::as_array)
                .and_then(|a| {
                    a.iter()
                        .find(|x| x.get("type").and_then(Value::as_str) == Some("InternalIP"))
                        .and_then(|x| x.get("address").cloned())
                })
        })
        .unwrap_or(Value::Null);
    let containers: Vec<Value> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            json!({
                "name": c.get("name").cloned().unwrap_or(Value::Null),
                "image": c.get("image").cloned().unwrap_or(Value::Null),
                "imageID": "",
                "ready": true,
                "started": true,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
            })
        })
        .collect();
    let condition = |t: &str| json!({"type": t, "status": "True", "lastTransitionTime": now});
    let status = json!({"status": {
        "phase": "Running",
        "hostIP": host_ip,
        "startTime": now,
        "conditions": [
            condition("PodReadyToStartContainers"),
            condition("Initialized"),
            condition("Ready"),
            condition("ContainersReady"),
            condition("PodScheduled"),
        ],
        "containerStatuses": containers,
    }});
    in_process::merge(
        kube,
        ("", "pods"),
        text(pod, "/metadata/namespace"),
        text(pod, "/metadata/name"),
        true,
        &status,
        KUBELET,
    )
    .is_ok()
}
