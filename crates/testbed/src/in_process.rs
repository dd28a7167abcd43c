//! Reads and writes of kube-sim's state from a stand-in controller in the same process, through
//! the API verbs (`Cluster::create`, `patch`, `delete`) so admission, validation and watches
//! behave as for any client, but without HTTP: the stand-ins add nothing to the request log
//! that tests and benchmarks count, and they wake on every committed write.

use std::sync::Arc;

use jiff::Timestamp;
use kube_sim::ClusterHandle;
use kube_sim::api::{DeleteOptions, PatchType, WriteOptions};
use kube_sim::resources::GroupResource;
use serde_json::{Value, json};

/// A write the API server refused, as `code: message`.
pub type WriteError = String;

/// The objects of a collection (in one namespace or all), as stored now.
pub fn list(h: &ClusterHandle, group: &str, plural: &str, ns: Option<&str>) -> Vec<Arc<Value>> {
    let gr = GroupResource::new(group, plural);
    let c = h.cluster();
    c.store()
        .iter(&gr, ns, None)
        .map(|(_, obj)| obj.clone())
        .collect()
}

pub fn get(
    h: &ClusterHandle,
    group: &str,
    plural: &str,
    ns: &str,
    name: &str,
) -> Option<Arc<Value>> {
    h.cluster()
        .store()
        .get(&GroupResource::new(group, plural), ns, name)
}

fn opts(manager: &str) -> WriteOptions {
    WriteOptions {
        manager: manager.to_owned(),
        ..Default::default()
    }
}

/// Every kind the stand-ins touch is served at `v1` (core and `storage.k8s.io`).
const VERSION: &str = "v1";

pub fn create(
    h: &ClusterHandle,
    group: &str,
    plural: &str,
    ns: &str,
    body: Value,
    manager: &str,
) -> Result<Value, WriteError> {
    h.write(|c| {
        let rt = c
            .resource(group, VERSION, plural)
            .ok_or_else(|| format!("{plural} not served"))?;
        c.create(&rt, ns, body, &opts(manager))
            .map(|o| o.body)
            .map_err(|e| format!("{}: {}", e.code, e.message))
    })
}

/// A JSON merge patch of the object, or of its `status` subresource; `kind` is
/// `(group, plural)`.
pub fn merge(
    h: &ClusterHandle,
    (group, plural): (&str, &str),
    ns: &str,
    name: &str,
    status: bool,
    patch: &Value,
    manager: &str,
) -> Result<Value, WriteError> {
    let body = patch.to_string().into_bytes();
    h.write(|c| {
        let rt = c
            .resource(group, VERSION, plural)
            .ok_or_else(|| format!("{plural} not served"))?;
        let sub = status.then_some("status");
        c.patch(&rt, ns, name, sub, PatchType::Merge, &body, &opts(manager))
            .map(|o| o.body)
            .map_err(|e| format!("{}: {}", e.code, e.message))
    })
}

pub fn delete(
    h: &ClusterHandle,
    group: &str,
    plural: &str,
    ns: &str,
    name: &str,
) -> Result<(), WriteError> {
    h.write(|c| {
        let rt = c
            .resource(group, VERSION, plural)
            .ok_or_else(|| format!("{plural} not served"))?;
        match c.delete(&rt, ns, name, &DeleteOptions::default()) {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 => Ok(()),
            Err(e) => Err(format!("{}: {}", e.code, e.message)),
        }
    })
}

pub fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub fn now() -> String {
    Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// FNV-1a, for stable Event names.
fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Records a core/v1 Event about `obj` once per (object, reason, message): a real recorder
/// would bump the count of a repeated Event, which nothing here reads, so repeats are dropped
/// rather than written on every pass.
pub fn event(
    h: &ClusterHandle,
    obj: &Value,
    type_: &str,
    reason: &str,
    message: &str,
    component: &str,
) -> Result<(), WriteError> {
    let involved_ns = text(obj, "/metadata/namespace");
    let ns = if involved_ns.is_empty() {
        "default"
    } else {
        involved_ns
    };
    let uid = text(obj, "/metadata/uid");
    let name = format!(
        "{}.{:016x}",
        text(obj, "/metadata/name"),
        fnv(&[uid, reason, message])
    );
    if get(h, "", "events", ns, &name).is_some() {
        return Ok(());
    }
    let now = now();
    let mut involved = json!({
        "apiVersion": text(obj, "/apiVersion"),
        "kind": text(obj, "/kind"),
        "name": text(obj, "/metadata/name"),
        "uid": uid,
        "resourceVersion": text(obj, "/metadata/resourceVersion"),
    });
    if !involved_ns.is_empty() {
        involved["namespace"] = json!(involved_ns);
    }
    let body = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": ns},
        "involvedObject": involved,
        "type": type_, "reason": reason, "message": message,
        "source": {"component": component},
        "reportingComponent": component, "reportingInstance": "",
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
    });
    match create(h, "", "events", ns, body, component) {
        Err(e) if e.starts_with("409") => Ok(()),
        other => other.map(|_| ()),
    }
}
