//! The control-plane controllers a real cluster runs next to the API server and that operators
//! rely on: the garbage collector (owner references, orphan and foreground deletion), the
//! namespace controller (deleting a namespace's contents before the namespace), CRD
//! instance cleanup, and the pvc- and pv-protection controllers (`protection`). They act
//! through the same `Cluster` verbs as clients, without HTTP.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::Shared;
use crate::api::{
    self, Cluster, DeleteOptions, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Propagation, WriteOptions,
};
use crate::resources::{GroupResource, ResourceType};

const NAMESPACE_FINALIZER: &str = "kubernetes";
const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The namespaces every cluster starts with.
pub fn seed(shared: &Shared) {
    let mut c = shared.lock();
    let Some(rt) = c.resource("", "v1", "namespaces") else {
        return;
    };
    let opts = WriteOptions {
        manager: "kube-apiserver".into(),
        ..Default::default()
    };
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let _ = c.create(
            &rt,
            "",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            &opts,
        );
    }
}

/// Runs the controllers until shutdown, one pass after each burst of writes.
pub async fn run(shared: Arc<Shared>) {
    let mut changed = shared.changed.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        // Passes repeat until nothing more happens: one deletion can unblock the next.
        let mut acted = false;
        for _ in 0..100 {
            if !pass(&mut shared.lock()) {
                break;
            }
            acted = true;
        }
        if acted {
            // Other loops (the workload simulator) react to what the controllers wrote; our
            // own next pass finds nothing to do and stops.
            shared.changed.send_modify(|n| *n += 1);
        }
        tokio::select! {
            r = changed.changed() => if r.is_err() { return },
            _ = shutdown.changed() => return,
        }
    }
}

/// One sweep; returns whether anything was changed.
pub fn pass(c: &mut Cluster) -> bool {
    let mut acted = false;
    for (gr, (ns, name)) in c.store().terminating() {
        acted |= finish_terminating(c, &gr, &ns, &name);
    }
    for (gr, (ns, name)) in c.store().dependents() {
        acted |= collect_dependent(c, &gr, &ns, &name);
    }
    acted
}

fn rt_for(c: &Cluster, gr: &GroupResource) -> Option<Arc<ResourceType>> {
    api::storage_type(c, gr)
}

/// Objects owned by `owner_uid`, as (type, namespace, name, blockOwnerDeletion).
fn dependents_of(c: &Cluster, owner_uid: &str) -> Vec<(GroupResource, String, String, bool)> {
    let mut out = Vec::new();
    for (gr, (ns, name)) in c.store().dependents() {
        let Some(obj) = c.store().get(&gr, &ns, &name) else {
            continue;
        };
        for r in owner_refs(&obj) {
            if r.get("uid").and_then(Value::as_str) == Some(owner_uid) {
                let blocks = r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true);
                out.push((gr.clone(), ns.clone(), name.clone(), blocks));
            }
        }
    }
    out
}

fn owner_refs(obj: &Value) -> Vec<Value> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn finish_terminating(c: &mut Cluster, gr: &GroupResource, ns: &str, name: &str) -> bool {
    let Some(obj) = c.store().get(gr, ns, name) else {
        return false;
    };
    let Some(rt) = rt_for(c, gr) else {
        return false;
    };
    let uid = obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let fins = api::finalizers(&obj);
    let mut acted = false;
    if fins.contains(ORPHAN_FINALIZER) {
        for (dgr, dns, dname, _) in dependents_of(c, &uid) {
            remove_owner_ref(c, &dgr, &dns, &dname, &uid);
        }
        c.controller_remove_finalizer(&rt, ns, name, ORPHAN_FINALIZER);
        return true;
    }
    if fins.contains(FOREGROUND_FINALIZER) {
        let deps = dependents_of(c, &uid);
        for (dgr, dns, dname, _) in &deps {
            let deleting = c
                .store()
                .get(dgr, dns, dname)
                .is_some_and(|d| d.pointer("/metadata/deletionTimestamp").is_some());
            if !deleting && let Some(drt) = rt_for(c, dgr) {
                let opts = DeleteOptions {
                    propagation: Some(Propagation::Foreground),
                    ..Default::default()
                };
                let _ = c.delete(&drt, dns, dname, &opts);
                acted = true;
            }
        }
        if !deps.iter().any(|(_, _, _, blocks)| *blocks) {
            c.controller_remove_finalizer(&rt, ns, name, FOREGROUND_FINALIZER);
            return true;
        }
        return acted;
    }
    if rt.group.is_empty() && rt.kind == "Namespace" {
        return finish_namespace(c, name);
    }
    if let Some(finalizer) = super::protection::releasable(c, &rt, &obj) {
        c.controller_remove_finalizer(&rt, ns, name, finalizer);
        return true;
    }
    if rt.group == "apiextensions.k8s.io"
        && rt.kind == "CustomResourceDefinition"
        && fins.contains(CRD_CLEANUP_FINALIZER)
    {
        return finish_crd(c, &rt, &obj, name);
    }
    acted
}

/// Deletes everything in the namespace; once it is empty, drops the `kubernetes` finalizer and
/// the namespace with it.
fn finish_namespace(c: &mut Cluster, name: &str) -> bool {
    let collections: Vec<GroupResource> = c.store().collections().cloned().collect();
    let mut remaining = 0;
    let mut acted = false;
    for gr in collections {
        let Some(rt) = rt_for(c, &gr) else { continue };
        if !rt.namespaced {
            continue;
        }
        let names: Vec<(String, bool)> = c
            .store()
            .iter(&gr, Some(name), None)
            .map(|((_, n), o)| {
                (
                    n.clone(),
                    o.pointer("/metadata/deletionTimestamp").is_some(),
                )
            })
            .collect();
        for (n, deleting) in names {
            remaining += 1;
            if !deleting {
                let _ = c.delete(
                    &rt,
                    name,
                    &n,
                    &DeleteOptions {
                        propagation: Some(Propagation::Background),
                        ..Default::default()
                    },
                );
                acted = true;
            }
        }
    }
    if remaining == 0 {
        let Some(ns_rt) = c.resource("", "v1", "namespaces") else {
            return acted;
        };
        let Some(ns_obj) = c.store().get(&ns_rt.group_resource(), "", name) else {
            return acted;
        };
        let mut obj = (*ns_obj).clone();
        if let Some(f) = obj
            .pointer_mut("/spec/finalizers")
            .and_then(Value::as_array_mut)
        {
            f.retain(|x| x.as_str() != Some(NAMESPACE_FINALIZER));
        }
        let spec_empty = obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if spec_empty && api::finalizers(&obj).is_empty() {
            c.controller_finalize_namespace(name);
            return true;
        }
        // Other finalizers hold the namespace: strip ours once, then wait for them.
        if obj != *ns_obj {
            c.controller_put(&ns_rt, obj);
            return true;
        }
        return acted;
    }
    acted
}

fn finish_crd(c: &mut Cluster, crd_rt: &ResourceType, crd: &Value, name: &str) -> bool {
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let plural = crd
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let gr = GroupResource::new(group, plural);
    let Some(rt) = rt_for(c, &gr) else {
        // Not served (e.g. a CRD that never had a valid version): drop what is stored anyway,
        // so instances cannot resurface when a CRD of the same name comes back.
        c.purge_collection(&gr);
        c.controller_remove_finalizer(crd_rt, "", name, CRD_CLEANUP_FINALIZER);
        return true;
    };
    let objects: Vec<(String, String, bool)> = c
        .store()
        .iter(&gr, None, None)
        .map(|((ns, n), o)| {
            (
                ns.clone(),
                n.clone(),
                o.pointer("/metadata/deletionTimestamp").is_some(),
            )
        })
        .collect();
    if objects.is_empty() {
        c.purge_collection(&gr);
        c.controller_remove_finalizer(crd_rt, "", name, CRD_CLEANUP_FINALIZER);
        return true;
    }
    let mut acted = false;
    for (ns, n, deleting) in objects {
        if !deleting {
            let _ = c.delete(&rt, &ns, &n, &DeleteOptions::default());
            acted = true;
        }
    }
    acted
}

/// Whether the owner a reference names exists: same uid, kind and name, in the dependent's
/// namespace or cluster-scoped.
fn owner_exists(c: &Cluster, dependent_ns: &str, r: &Value) -> bool {
    let Some(uid) = r.get("uid").and_then(Value::as_str) else {
        return false;
    };
    // A reference the real GC cannot resolve (kind not served, or a cluster-scoped dependent
    // naming a namespaced owner) is retried forever, never taken as a dead owner.
    let api_version = r
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = r.get("kind").and_then(Value::as_str).unwrap_or_default();
    match c.catalogue().by_kind(api_version, kind) {
        None => return true,
        Some(owner_type) if owner_type.namespaced && dependent_ns.is_empty() => return true,
        Some(_) => {}
    }
    let Some(owner) = c.store().by_uid(uid) else {
        return false;
    };
    let kind_ok = owner.get("kind").and_then(Value::as_str)
        == r.get("kind").and_then(Value::as_str)
        || owner.get("kind").is_none();
    let name_ok = owner.pointer("/metadata/name") == r.get("name");
    let owner_ns = owner
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    kind_ok && name_ok && (owner_ns.is_empty() || owner_ns == dependent_ns)
}

/// Deletes a dependent whose owners are all gone, or drops the references to the gone ones
/// when some owners remain.
fn collect_dependent(c: &mut Cluster, gr: &GroupResource, ns: &str, name: &str) -> bool {
    let Some(obj) = c.store().get(gr, ns, name) else {
        return false;
    };
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        return false;
    }
    let refs = owner_refs(&obj);
    let (alive, dead): (Vec<&Value>, Vec<&Value>) =
        refs.iter().partition(|r| owner_exists(c, ns, r));
    if dead.is_empty() {
        return false;
    }
    let Some(rt) = rt_for(c, gr) else {
        return false;
    };
    if alive.is_empty() {
        let _ = c.delete(
            &rt,
            ns,
            name,
            &DeleteOptions {
                propagation: Some(Propagation::Background),
                ..Default::default()
            },
        );
        return true;
    }
    for r in dead {
        if let Some(uid) = r.get("uid").and_then(Value::as_str) {
            remove_owner_ref(c, gr, ns, name, uid);
        }
    }
    true
}

fn remove_owner_ref(c: &mut Cluster, gr: &GroupResource, ns: &str, name: &str, owner_uid: &str) {
    let Some(rt) = rt_for(c, gr) else { return };
    let Some(obj) = c.store().get(gr, ns, name) else {
        return;
    };
    let mut obj = (*obj).clone();
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(refs) = meta
        .get_mut("ownerReferences")
        .and_then(Value::as_array_mut)
    {
        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(owner_uid));
        if refs.is_empty() {
            meta.remove("ownerReferences");
        }
    }
    c.controller_put(&rt, obj);
}
