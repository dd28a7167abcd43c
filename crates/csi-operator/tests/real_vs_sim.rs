//! kube-sim measured against the real API server, not trusted: the requests the Cinder operator
//! makes during an install, a rotation and a removal (every object `csi-operator render
//! openstack-cinder` prints: create, a repeated create, read back, a stale update, the rotation's
//! pod-template annotation patch, a server-side apply, delete, read after delete), and a watch
//! over them, are sent to both servers by the same client. What comes back is compared: status
//! codes and reasons, the objects as stored (defaulted fields, generation), managedFields owners,
//! resourceVersion behaviour, and the watch's event types.
//!
//! Every difference is either fixed in kube-sim or listed in [`KNOWN`] with why it does not
//! matter (docs/kube-sim.md lists the same); the test fails on a difference not listed and on a
//! listed difference that no longer occurs, so the list stays true.

mod real;

use std::collections::{BTreeMap, BTreeSet};

use futures::{StreamExt, TryStreamExt};
use kube::Client;
use kube::api::{
    Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::Scope;
use realkube::{ControlPlane, Mode, Options};
use serde_json::{Value, json};

const NS: &str = "openshift-cluster-csi-drivers";

/// A difference kube-sim is allowed to have: (object kind or `*`, step, JSON pointer prefix),
/// and why it does not matter.
const KNOWN: &[(&str, &str, &str, &str)] = &[(
    "Service",
    "*",
    "/spec/clusterIP",
    "kube-sim hands out ClusterIPs in order from 10.96.0.1, the real allocator at random: no \
         operator reads a Service's ClusterIP",
)];

/// What one server answered to one step.
#[derive(Debug, Clone, PartialEq)]
struct Answer {
    code: u16,
    reason: String,
    body: Value,
}

fn answer(result: Result<DynamicObject, kube::Error>) -> Answer {
    match result {
        Ok(o) => Answer {
            code: 200,
            reason: String::new(),
            body: normalize(serde_json::to_value(o).unwrap_or(Value::Null)),
        },
        Err(kube::Error::Api(s)) => Answer {
            code: s.code,
            reason: s.reason,
            body: Value::Null,
        },
        Err(e) => Answer {
            code: 0,
            reason: e.to_string(),
            body: Value::Null,
        },
    }
}

/// The object without what differs between any two servers by nature (uid, times,
/// resourceVersion values); managedFields reduced to (manager, operation, subresource).
fn normalize(mut v: Value) -> Value {
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in ["uid", "resourceVersion", "creationTimestamp", "selfLink"] {
            meta.remove(k);
        }
        if let Some(fields) = meta.remove("managedFields") {
            let owners: BTreeSet<String> = fields
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| {
                    format!(
                        "{} {} {}",
                        f["manager"].as_str().unwrap_or(""),
                        f["operation"].as_str().unwrap_or(""),
                        f["subresource"].as_str().unwrap_or("")
                    )
                })
                .collect();
            meta.insert("managedFields".into(), json!(owners));
        }
    }
    v
}

/// Every leaf where `a` and `b` differ, as (pointer, a, b).
fn diff(pointer: &str, a: &Value, b: &Value, out: &mut Vec<(String, Value, Value)>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let p = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
                diff(
                    &p,
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff(&format!("{pointer}/{i}"), p, q, out);
            }
        }
        _ if a != b => out.push((pointer.to_owned(), a.clone(), b.clone())),
        _ => {}
    }
}

/// The API of `obj`'s kind on `client`.
async fn api_for(client: &Client, obj: &Value) -> (Api<DynamicObject>, ApiResource) {
    let api_version = obj["apiVersion"].as_str().unwrap();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, obj["kind"].as_str().unwrap());
    let (ar, caps) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .unwrap_or_else(|e| panic!("{gvk:?}: {e}"));
    let api = match caps.scope {
        Scope::Namespaced => Api::namespaced_with(
            client.clone(),
            obj["metadata"]["namespace"].as_str().unwrap_or(NS),
            &ar,
        ),
        Scope::Cluster => Api::all_with(client.clone(), &ar),
    };
    (api, ar)
}

/// The operator's requests for one object, on one server: each step's answer.
async fn replay(client: &Client, obj: &Value) -> Vec<(&'static str, Answer)> {
    let (api, _) = api_for(client, obj).await;
    let name = obj["metadata"]["name"].as_str().unwrap().to_owned();
    let desired: DynamicObject = serde_json::from_value(obj.clone()).unwrap();
    let mut steps = Vec::new();
    let created = api.create(&PostParams::default(), &desired).await;
    let first_rv = created
        .as_ref()
        .ok()
        .and_then(|o| o.metadata.resource_version.clone());
    steps.push(("create", answer(created)));
    steps.push((
        "create again",
        answer(api.create(&PostParams::default(), &desired).await),
    ));
    steps.push(("get", answer(api.get(&name).await)));
    // The rotation: a new hash annotation on the pod template (workloads) or the object.
    let rotation = if obj["spec"]["template"].is_object() {
        json!({"spec": {"template": {"metadata": {"annotations": {"operator.openshift.io/dep-example": "rotated"}}}}})
    } else {
        json!({"metadata": {"annotations": {"operator.openshift.io/dep-example": "rotated"}}})
    };
    let patched = api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&rotation))
        .await;
    let second_rv = patched
        .as_ref()
        .ok()
        .and_then(|o| o.metadata.resource_version.clone());
    steps.push(("rotation patch", answer(patched)));
    steps.push((
        "resourceVersion grows",
        Answer {
            code: u16::from(matches!((&first_rv, &second_rv), (Some(a), Some(b)) if a != b)),
            reason: String::new(),
            body: Value::Null,
        },
    ));
    // An update from the object as first read: the stale resourceVersion conflicts.
    let mut stale = desired.clone();
    stale.metadata.resource_version = first_rv;
    steps.push((
        "stale update",
        answer(api.replace(&name, &PostParams::default(), &stale).await),
    ));
    let mut applied = obj.clone();
    applied["metadata"]["labels"] = json!({"example.com/applied": "yes"});
    steps.push((
        "server-side apply",
        answer(
            api.patch(
                &name,
                &PatchParams::apply("differential").force(),
                &Patch::Apply(&applied),
            )
            .await,
        ),
    ));
    let deleted = api
        .delete(&name, &DeleteParams::default())
        .await
        .map(|_| desired.clone());
    steps.push((
        "delete",
        Answer {
            body: Value::Null,
            ..answer(deleted)
        },
    ));
    steps.push(("get after delete", answer(api.get(&name).await)));
    steps
}

/// One server's answers to the whole replay, and the event types a ConfigMap watch saw.
async fn run(
    client: &Client,
    objects: &[Value],
) -> (BTreeMap<(String, &'static str), Answer>, Vec<String>) {
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    let _ = realkube::apply::object(client, &ns).await;
    for extra in ["openshift-monitoring"] {
        let _ = realkube::apply::object(
            client,
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": extra}}),
        )
        .await;
    }
    let cms: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NS,
        &ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
    );
    let rv = cms
        .list_metadata(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap_or_default();
    let mut watch = cms
        .watch(&WatchParams::default().timeout(60), &rv)
        .await
        .unwrap()
        .boxed();
    let mut answers = BTreeMap::new();
    for obj in objects {
        let key = format!(
            "{} {}",
            obj["kind"].as_str().unwrap(),
            obj["metadata"]["name"].as_str().unwrap()
        );
        for (step, a) in replay(client, obj).await {
            answers.insert((key.clone(), step), a);
        }
    }
    let configmaps = objects.iter().filter(|o| o["kind"] == "ConfigMap").count();
    let mut events = Vec::new();
    // Each ConfigMap: ADDED, MODIFIED (rotation), MODIFIED (apply), DELETED.
    while events.len() < configmaps * 4 {
        match tokio::time::timeout(std::time::Duration::from_secs(10), watch.try_next()).await {
            Ok(Ok(Some(WatchEvent::Added(o)))) => {
                events.push(format!("ADDED {}", o.metadata.name.unwrap_or_default()))
            }
            Ok(Ok(Some(WatchEvent::Modified(o)))) => {
                events.push(format!("MODIFIED {}", o.metadata.name.unwrap_or_default()))
            }
            Ok(Ok(Some(WatchEvent::Deleted(o)))) => {
                events.push(format!("DELETED {}", o.metadata.name.unwrap_or_default()))
            }
            Ok(Ok(Some(_))) => {}
            _ => break,
        }
    }
    (answers, events)
}

fn rendered_objects() -> Vec<Value> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_csi-operator"))
        .args(["render", "openstack-cinder"])
        .output()
        .expect("csi-operator render");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    realkube::apply::parse(&String::from_utf8_lossy(&out.stdout)).expect("render prints YAML")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_sim_answers_the_operators_requests_as_the_real_api_server_does() {
    let objects = rendered_objects();
    assert!(objects.len() > 20, "{} objects", objects.len());

    let crds = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../openshift-api/crds");
    let mut options = Options::api_only(Mode::OpenShift);
    options.crds = vec![crds.join("servicemonitors.monitoring.coreos.com.yaml")];
    let plane = ControlPlane::start(options)
        .await
        .expect("the real control plane starts");
    let real = plane.admin_client().await.unwrap();

    let sim_config = kube_sim::SimConfig {
        workloads: None,
        ..Default::default()
    };
    let sim = kube_sim::KubeSim::start(sim_config, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("kube-sim starts");
    let sim_client = testbed::client_for(&sim, "admin").await.unwrap();
    let crd_api: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(sim_client.clone());
    for crd in openshift_api::crds::parsed().unwrap() {
        crd_api.create(&PostParams::default(), &crd).await.unwrap();
    }

    let (sim_answers, sim_events) = run(&sim_client, &objects).await;
    let (real_answers, real_events) = run(&real, &objects).await;

    let mut found: Vec<(String, &str, String, String)> = Vec::new();
    for ((object, step), real) in &real_answers {
        let sim = &sim_answers[&(object.clone(), *step)];
        if (sim.code, &sim.reason) != (real.code, &real.reason) {
            found.push((
                object.clone(),
                step,
                "(code)".into(),
                format!(
                    "kube-sim {} {:?}, real {} {:?}",
                    sim.code, sim.reason, real.code, real.reason
                ),
            ));
        }
        let mut d = Vec::new();
        diff("", &sim.body, &real.body, &mut d);
        for (pointer, s, r) in d {
            found.push((
                object.clone(),
                step,
                pointer,
                format!("kube-sim {s}, real {r}"),
            ));
        }
    }
    if sim_events != real_events {
        found.push((
            "watch".into(),
            "events",
            "".into(),
            format!("kube-sim {sim_events:?}, real {real_events:?}"),
        ));
    }
    let kind_of = |object: &str| object.split(' ').next().unwrap_or("").to_owned();
    let listed = |object: &str, step: &str, pointer: &str| {
        KNOWN.iter().position(|(k, s, p, _)| {
            (*k == "*" || *k == kind_of(object))
                && (*s == "*" || *s == step)
                && pointer.starts_with(p)
        })
    };
    let mut used = BTreeSet::new();
    let unlisted: Vec<String> = found
        .iter()
        .filter(|(o, s, p, _)| match listed(o, s, p) {
            Some(i) => {
                used.insert(i);
                false
            }
            None => true,
        })
        .map(|(o, s, p, what)| format!("{o} [{s}] {p}: {what}"))
        .collect();
    assert!(
        unlisted.is_empty(),
        "{} differences kube-sim does not declare:\n{}",
        unlisted.len(),
        unlisted.join("\n")
    );
    let stale: Vec<&str> = KNOWN
        .iter()
        .enumerate()
        .filter(|(i, _)| !used.contains(i))
        .map(|(_, k)| k.3)
        .collect();
    assert!(
        stale.is_empty(),
        "listed differences that no longer occur: {stale:#?}"
    );
}

use std::path::PathBuf;
