//! The loop: what wakes the simulator, and one pass over every Deployment and DaemonSet.

use super::config::{WorkloadConfig, WorkloadKind, with_volume_wait};
use super::daemonsets::{DaemonSetTrack, daemonset_status_admitted};
use super::deployments::{DeploymentTrack, deployment_status_admitted};
use super::helpers::{int, pod_template_hash, stamp, text};
use super::pods::{PodCreation, earliest};
use crate::api::{Cluster, WriteOptions};
use crate::pod_admission::AdmissionConfig;
use crate::{Shared, pod_admission};
use jiff::Timestamp;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// What the simulator remembers between passes, by object uid.
#[derive(Default)]
pub(super) struct Memory {
    pub(super) deployments: HashMap<String, DeploymentTrack>,
    pub(super) daemonsets: HashMap<String, DaemonSetTrack>,
    /// The admission refusal last reported (as an Event) per workload uid.
    pub(super) refusals: HashMap<String, String>,
}

/// Runs until shutdown: one pass after every write, and one whenever a pod's readiness, its
/// availability or a progress deadline comes due.
pub async fn run(shared: Arc<Shared>) {
    let mut changed = shared.changed.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    let mut memory = Memory::default();
    loop {
        if *shutdown.borrow() {
            return;
        }
        let wake = pass(&shared, &mut memory);
        let sleep = match wake {
            // A few milliseconds late rather than early: the deadline is compared with `>=`.
            Some(at) => {
                Duration::try_from(at.duration_since(Timestamp::now())).unwrap_or(Duration::ZERO)
                    + Duration::from_millis(5)
            }
            None => Duration::from_secs(3600),
        }
        .min(Duration::from_secs(3600));
        tokio::select! {
            r = changed.changed() => if r.is_err() { return },
            r = shutdown.changed() => if r.is_err() { return },
            () = tokio::time::sleep(sleep) => {}
        }
    }
}

/// Computes every workload's status and writes those that changed; returns when the next one
/// is due to change on its own.
pub(super) fn pass(shared: &Shared, memory: &mut Memory) -> Option<Timestamp> {
    let config = shared
        .workloads
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let Some(config) = config else {
        // Switched off: the controllers stop, the virtual pods keep running.
        return None;
    };
    let running = crate::processes::Readiness::of(shared);
    let admission = shared.admission();
    // Compute and write under one lock: a client write in between would otherwise be
    // overwritten by a status write carrying the object's older spec.
    let (wrote, wake) = {
        let mut cluster = shared.lock();
        sync(
            &mut cluster,
            memory,
            &config,
            &admission,
            running.as_ref(),
            Timestamp::now(),
        )
    };
    if wrote {
        shared.changed.send_modify(|n| *n += 1);
    }
    wake
}

pub(super) fn sync(
    c: &mut Cluster,
    memory: &mut Memory,
    config: &WorkloadConfig,
    admission: &AdmissionConfig,
    processes: Option<&crate::processes::Readiness>,
    now: Timestamp,
) -> (bool, Option<Timestamp>) {
    let mut wrote = false;
    let mut wake: Option<Timestamp> = None;
    let nodes: Vec<Arc<Value>> = match c.resource("", "v1", "nodes") {
        Some(rt) => c
            .store()
            .iter(&rt.group_resource(), None, None)
            .map(|(_, o)| o.clone())
            .collect(),
        None => Vec::new(),
    };

    if let Some(rt) = c.resource("apps", "v1", "deployments") {
        let objects: Vec<Arc<Value>> = c
            .store()
            .iter(&rt.group_resource(), None, None)
            .map(|(_, o)| o.clone())
            .collect();
        let mut seen = HashMap::new();
        for obj in objects {
            let key = identity(&obj);
            let mut track = memory.deployments.remove(&key);
            let running = processes.and_then(|p| p.running_hashes(&obj));
            let creation = deployment_creation(c, admission, &obj);
            wrote |= report_refusal(c, memory, &obj, &creation, now);
            let mut held = None;
            let config = with_volume_wait(c, config, WorkloadKind::Deployment, &obj, &mut held);
            let (status, due) = deployment_status_admitted(
                &obj,
                &mut track,
                now,
                config,
                running.as_ref(),
                &creation,
            );
            if let Some(t) = track {
                seen.insert(key, t);
            }
            wake = earliest(wake, due);
            if obj.get("status") != Some(&status) {
                let mut updated = (*obj).clone();
                if let Some(o) = updated.as_object_mut() {
                    o.insert("status".into(), status);
                }
                c.controller_put(&rt, updated);
                wrote = true;
            }
        }
        memory.deployments = seen;
    }

    if let Some(rt) = c.resource("apps", "v1", "daemonsets") {
        let objects: Vec<Arc<Value>> = c
            .store()
            .iter(&rt.group_resource(), None, None)
            .map(|(_, o)| o.clone())
            .collect();
        let mut seen = HashMap::new();
        for obj in objects {
            let key = identity(&obj);
            let mut track = memory.daemonsets.remove(&key).unwrap_or_default();
            let creation = daemonset_creation(c, admission, &obj);
            wrote |= report_refusal(c, memory, &obj, &creation, now);
            let mut held = None;
            let config = with_volume_wait(c, config, WorkloadKind::DaemonSet, &obj, &mut held);
            let (status, due) =
                daemonset_status_admitted(&obj, &nodes, &mut track, now, config, &creation);
            seen.insert(key, track);
            wake = earliest(wake, due);
            if obj.get("status") != Some(&status) {
                let mut updated = (*obj).clone();
                if let Some(o) = updated.as_object_mut() {
                    o.insert("status".into(), status);
                }
                c.controller_put(&rt, updated);
                wrote = true;
            }
        }
        memory.daemonsets = seen;
    }
    (wrote, wake)
}

/// Whether the ReplicaSet controller could create the Deployment's pods now.
pub(super) fn deployment_creation(
    c: &Cluster,
    admission: &AdmissionConfig,
    dep: &Value,
) -> PodCreation {
    let template = dep
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(Value::Null);
    let hash = pod_template_hash(&template, int(dep, "/status/collisionCount"));
    let generate_name = format!("{}-{hash}-", text(dep, "/metadata/name"));
    PodCreation::of(pod_admission::admit_template(
        c,
        admission,
        &template,
        text(dep, "/metadata/namespace"),
        &generate_name,
        "replicaset-controller",
    ))
}

/// Whether the DaemonSet controller could create the DaemonSet's pods now.
pub(super) fn daemonset_creation(
    c: &Cluster,
    admission: &AdmissionConfig,
    ds: &Value,
) -> PodCreation {
    let template = ds.pointer("/spec/template").cloned().unwrap_or(Value::Null);
    PodCreation::of(pod_admission::admit_template(
        c,
        admission,
        &template,
        text(ds, "/metadata/namespace"),
        &format!("{}-", text(ds, "/metadata/name")),
        "daemon-set-controller",
    ))
}

/// Records a new refusal as the controller's `FailedCreate` Warning Event (once per distinct
/// message); returns whether it wrote.
pub(super) fn report_refusal(
    c: &mut Cluster,
    memory: &mut Memory,
    obj: &Value,
    creation: &PodCreation,
    now: Timestamp,
) -> bool {
    let key = identity(obj);
    let PodCreation::Refused(message) = creation else {
        memory.refusals.remove(&key);
        return false;
    };
    if memory.refusals.get(&key) == Some(message) {
        return false;
    }
    memory.refusals.insert(key, message.clone());
    let Some(rt) = c.resource("", "v1", "events") else {
        return false;
    };
    let name = text(obj, "/metadata/name");
    let namespace = text(obj, "/metadata/namespace");
    let (involved, component) = if obj.get("kind").and_then(Value::as_str) == Some("DaemonSet") {
        (
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name,
                   "namespace": namespace, "uid": text(obj, "/metadata/uid")}),
            "daemonset-controller",
        )
    } else {
        let template = obj
            .pointer("/spec/template")
            .cloned()
            .unwrap_or(Value::Null);
        let hash = pod_template_hash(&template, int(obj, "/status/collisionCount"));
        (
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{name}-{hash}"),
                   "namespace": namespace}),
            "replicaset-controller",
        )
    };
    let stamp_now = stamp(now);
    let event = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": format!("{name}.{:x}", now.as_nanosecond().unsigned_abs()),
            "namespace": namespace,
        },
        "involvedObject": involved,
        "reason": "FailedCreate",
        "message": format!("Error creating: {message}"),
        "type": "Warning",
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": "",
        "firstTimestamp": stamp_now,
        "lastTimestamp": stamp_now,
        "count": 1,
    });
    let opts = WriteOptions {
        manager: component.into(),
        ..Default::default()
    };
    c.create(&rt, namespace, event, &opts).is_ok()
}

/// The uid, so a deleted and recreated workload starts afresh.
pub(super) fn identity(obj: &Value) -> String {
    match obj.pointer("/metadata/uid").and_then(Value::as_str) {
        Some(uid) => uid.to_string(),
        None => format!(
            "{}/{}",
            text(obj, "/metadata/namespace"),
            text(obj, "/metadata/name")
        ),
    }
}
