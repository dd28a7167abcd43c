//! kube-rs against kube-sim, part 3: what writes do. Optimistic concurrency, generation, the
//! status subresource, the four patch types (merge, JSON, strategic, server-side apply),
//! deletion (finalizers, owner-reference garbage collection, namespaces), defaulting, CRDs
//! (serving, pruning, schema validation, cleanup) and immutable fields.
//!
//! Each test asserts what a real kube-apiserver (v1.33) does with the same request: an operator
//! that compares desired and live objects must see the same live objects here as on a cluster.

mod common;

use std::collections::BTreeMap;

use common::{TestResult, config_map, eventually, namespace, next, start, start_with, status};
use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service};
use k8s_openapi::api::storage::v1::{CSIDriver, StorageClass};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::{Client, ResourceExt};
use kube_sim::SimConfig;
use serde_json::{Value, json};

fn from_json<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a valid object")
}

/// A Deployment with two containers; `app`'s image is tagged, `sidecar`'s is not.
fn deployment(name: &str) -> Deployment {
    from_json(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [
                    {"name": "app", "image": "registry.example/app:1.0"},
                    {"name": "sidecar", "image": "registry.example/sidecar"}
                ]}
            }
        }
    }))
}

fn owner_ref(owner: &ConfigMap, block: bool) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.name_any(),
        uid: owner.uid().expect("a stored object has a uid"),
        block_owner_deletion: block.then_some(true),
        controller: None,
    }
}

fn without_finalizers() -> Patch<Value> {
    Patch::Merge(json!({"metadata": {"finalizers": null}}))
}

async fn gone<K>(api: &Api<K>, name: &str) -> Option<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    K::DynamicType: Default,
{
    api.get_opt(name)
        .await
        .ok()
        .flatten()
        .is_none()
        .then_some(())
}

fn as_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("serializable")
}

// ----- update, generation, status ----------------------------------------------------------

#[tokio::test]
async fn update_with_a_stale_resource_version_is_a_conflict() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let first = cms
        .create(&PostParams::default(), &config_map("c", &[], &[("k", "1")]))
        .await?;
    let mut mine = first.clone();
    mine.data = Some([("k".to_string(), "2".to_string())].into());
    let updated = cms.replace("c", &PostParams::default(), &mine).await?;
    assert_ne!(
        updated.resource_version(),
        first.resource_version(),
        "a change gets a new resourceVersion"
    );
    let mut theirs = first.clone();
    theirs.data = Some([("k".to_string(), "3".to_string())].into());
    match cms.replace("c", &PostParams::default(), &theirs).await {
        Err(kube::Error::Api(ae)) => assert_eq!((ae.code, ae.reason.as_str()), (409, "Conflict")),
        other => panic!("expected a Conflict, got {other:?}"),
    }
    assert_eq!(
        cms.get("c").await?.data.unwrap_or_default()["k"],
        "2",
        "the stale write was not applied"
    );
    let same = cms.replace("c", &PostParams::default(), &updated).await?;
    assert_eq!(
        same.resource_version(),
        updated.resource_version(),
        "a no-op update does not move the resourceVersion"
    );
    Ok(())
}

#[tokio::test]
async fn generation_moves_only_on_spec_changes() -> TestResult {
    let (_sim, client) = start().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(&PostParams::default(), &deployment("gen"))
        .await?;
    let labelled = deployments
        .patch(
            "gen",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}})),
        )
        .await?;
    assert_eq!(
        labelled.metadata.generation,
        Some(1),
        "a label change is not a spec change"
    );
    let annotated = deployments
        .patch(
            "gen",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"note": "x"}}})),
        )
        .await?;
    assert_eq!(
        annotated.metadata.generation,
        Some(2),
        "Deployments (only) count annotation changes, since they are copied to ReplicaSets"
    );
    let scaled = deployments
        .patch(
            "gen",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await?;
    assert_eq!(scaled.metadata.generation, Some(3));
    let status = deployments
        .patch_status(
            "gen",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"observedGeneration": 3}})),
        )
        .await?;
    assert_eq!(
        status.metadata.generation,
        Some(3),
        "a status write is not a spec change"
    );
    Ok(())
}

#[tokio::test]
async fn the_status_subresource_writes_only_status() -> TestResult {
    // Without the workload simulator, which (like a real deployment controller) writes status.
    let (_sim, client) = start_with(SimConfig {
        workloads: None,
        ..SimConfig::default()
    })
    .await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let mut d = deployment("st");
    d.spec.as_mut().expect("spec").replicas = Some(1);
    let created = deployments.create(&PostParams::default(), &d).await?;
    assert_eq!(created.spec.as_ref().and_then(|s| s.replicas), Some(1));

    let patched = deployments
        .patch_status("st", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 9}, "status": {"observedGeneration": 1, "replicas": 4}})))
        .await?;
    assert_eq!(
        patched.spec.as_ref().and_then(|s| s.replicas),
        Some(1),
        "spec is ignored on /status"
    );
    assert_eq!(patched.status.as_ref().and_then(|s| s.replicas), Some(4));

    let mut whole = deployments.get("st").await?;
    whole.spec.as_mut().expect("spec").replicas = Some(7);
    whole.status.as_mut().expect("status").replicas = Some(5);
    let replaced = deployments
        .replace_status("st", &PostParams::default(), &whole)
        .await?;
    assert_eq!(
        replaced.spec.as_ref().and_then(|s| s.replicas),
        Some(1),
        "spec is ignored on /status"
    );
    assert_eq!(replaced.status.as_ref().and_then(|s| s.replicas), Some(5));

    let main = deployments
        .patch(
            "st",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}, "status": {"replicas": 0}})),
        )
        .await?;
    assert_eq!(main.spec.as_ref().and_then(|s| s.replicas), Some(2));
    assert_eq!(
        main.status.as_ref().and_then(|s| s.replicas),
        Some(5),
        "status is ignored on the main resource"
    );

    let mut fresh = deployment("st2");
    fresh.status = Some(from_json(json!({"replicas": 3})));
    let created = deployments.create(&PostParams::default(), &fresh).await?;
    assert_eq!(
        created.status.and_then(|s| s.replicas),
        None,
        "status is dropped on create"
    );
    Ok(())
}

// ----- patches -----------------------------------------------------------------------------

#[tokio::test]
async fn json_merge_patch_sets_and_removes_keys() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(
        &PostParams::default(),
        &config_map(
            "m",
            &[("keep", "yes"), ("drop", "yes")],
            &[("a", "1"), ("b", "2")],
        ),
    )
    .await?;
    let patch = json!({"metadata": {"labels": {"drop": null, "new": "yes"}}, "data": {"a": null, "c": "3"}});
    let out = cms
        .patch("m", &PatchParams::default(), &Patch::Merge(patch))
        .await?;
    assert_eq!(
        out.data.clone().unwrap_or_default(),
        BTreeMap::from([
            ("b".to_string(), "2".to_string()),
            ("c".to_string(), "3".to_string())
        ])
    );
    assert_eq!(
        out.labels(),
        &BTreeMap::from([
            ("keep".to_string(), "yes".to_string()),
            ("new".to_string(), "yes".to_string())
        ])
    );
    Ok(())
}

#[tokio::test]
async fn json_patch_applies_operations_and_a_failing_test_rejects_all() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &config_map("j", &[], &[("a", "1")]))
        .await?;
    let ops: json_patch::Patch = from_json(json!([
        {"op": "test", "path": "/data/a", "value": "1"},
        {"op": "replace", "path": "/data/a", "value": "2"},
        {"op": "add", "path": "/data/b", "value": "x"}
    ]));
    let out = cms
        .patch("j", &PatchParams::default(), &Patch::<()>::Json(ops))
        .await?;
    let rv = out.resource_version();
    assert_eq!(
        out.data.unwrap_or_default(),
        BTreeMap::from([
            ("a".to_string(), "2".to_string()),
            ("b".to_string(), "x".to_string())
        ])
    );

    let failing: json_patch::Patch = from_json(json!([
        {"op": "replace", "path": "/data/b", "value": "changed"},
        {"op": "test", "path": "/data/a", "value": "1"}
    ]));
    let s = status(
        cms.patch("j", &PatchParams::default(), &Patch::<()>::Json(failing))
            .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    let now = cms.get("j").await?;
    assert_eq!(
        now.data.unwrap_or_default()["b"],
        "x",
        "no operation of a failed patch is applied"
    );
    assert_eq!(now.metadata.resource_version, rv);
    Ok(())
}

#[tokio::test]
async fn strategic_merge_patch_merges_containers_by_name() -> TestResult {
    let (_sim, client) = start().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(&PostParams::default(), &deployment("smp"))
        .await?;
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "registry.example/app:2.0"}]}}}});
    let out = deployments
        .patch("smp", &PatchParams::default(), &Patch::Strategic(patch))
        .await?;
    let containers = out
        .spec
        .expect("spec")
        .template
        .spec
        .expect("pod spec")
        .containers;
    let images: Vec<(String, String)> = containers
        .iter()
        .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        images,
        [
            ("app".to_string(), "registry.example/app:2.0".to_string()),
            (
                "sidecar".to_string(),
                "registry.example/sidecar".to_string()
            )
        ],
        "the other container is kept"
    );
    Ok(())
}

#[tokio::test]
async fn strategic_merge_patch_delete_directive_removes_a_container() -> TestResult {
    let (_sim, client) = start().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(&PostParams::default(), &deployment("smpdel"))
        .await?;
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}});
    let out = deployments
        .patch("smpdel", &PatchParams::default(), &Patch::Strategic(patch))
        .await?;
    let names: Vec<String> = out
        .spec
        .expect("spec")
        .template
        .spec
        .expect("pod spec")
        .containers
        .iter()
        .map(|c| c.name.clone())
        .collect();
    assert_eq!(names, ["app"]);
    Ok(())
}

#[tokio::test]
async fn strategic_merge_patch_is_rejected_for_custom_resources() -> TestResult {
    let (_sim, client) = start().await;
    let widgets = serve_widgets(&client).await;
    widgets
        .create(&PostParams::default(), &widget("w", json!({"size": 1})))
        .await?;
    let s = status(
        widgets
            .patch(
                "w",
                &PatchParams::default(),
                &Patch::Strategic(json!({"spec": {"size": 2}})),
            )
            .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (415, "UnsupportedMediaType"));
    Ok(())
}

fn applied(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

fn managers(cm: &ConfigMap) -> Vec<(String, String)> {
    let mut m: Vec<(String, String)> = cm
        .managed_fields()
        .iter()
        .map(|e| {
            (
                e.manager.clone().unwrap_or_default(),
                e.operation.clone().unwrap_or_default(),
            )
        })
        .collect();
    m.sort();
    m
}

#[tokio::test]
async fn server_side_apply_creates_and_reapplying_is_a_no_op() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PatchParams::apply("operator-a");
    let first = cms
        .patch(
            "ssa",
            &pp,
            &Patch::Apply(applied("ssa", json!({"a": "1", "b": "2"}))),
        )
        .await?;
    assert_eq!(first.data.clone().unwrap_or_default().len(), 2);
    assert_eq!(
        managers(&first),
        [("operator-a".to_string(), "Apply".to_string())]
    );
    let entry = &first.managed_fields()[0];
    assert_eq!(entry.fields_type.as_deref(), Some("FieldsV1"));
    let owned = as_json(&entry.fields_v1);
    assert!(
        owned.pointer("/f:data/f:a").is_some() && owned.pointer("/f:data/f:b").is_some(),
        "operator-a owns data.a and data.b: {owned}"
    );
    let again = cms
        .patch(
            "ssa",
            &pp,
            &Patch::Apply(applied("ssa", json!({"a": "1", "b": "2"}))),
        )
        .await?;
    assert_eq!(
        again.resource_version(),
        first.resource_version(),
        "re-applying the same configuration writes nothing"
    );
    // Dropping a field from the applied configuration removes it (operator-a owned it).
    let shrunk = cms
        .patch("ssa", &pp, &Patch::Apply(applied("ssa", json!({"a": "1"}))))
        .await?;
    assert_eq!(
        shrunk
            .data
            .unwrap_or_default()
            .keys()
            .cloned()
            .collect::<Vec<_>>(),
        ["a"]
    );
    Ok(())
}

#[tokio::test]
async fn server_side_apply_conflicts_between_managers_and_force_takes_over() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.patch(
        "ssa",
        &PatchParams::apply("operator-a"),
        &Patch::Apply(applied("ssa", json!({"a": "1", "b": "2"}))),
    )
    .await?;
    let s = status(
        cms.patch(
            "ssa",
            &PatchParams::apply("operator-b"),
            &Patch::Apply(applied("ssa", json!({"a": "9"}))),
        )
        .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert!(
        s.message.contains("conflict with \"operator-a\""),
        "{}",
        s.message
    );
    let causes = s.details.map(|d| d.causes).unwrap_or_default();
    assert!(
        causes
            .iter()
            .any(|c| c.reason == "FieldManagerConflict" && c.field == ".data.a"),
        "{causes:?}"
    );
    assert_eq!(
        cms.get("ssa").await?.data.unwrap_or_default()["a"],
        "1",
        "the conflicting apply changed nothing"
    );

    let forced = cms
        .patch(
            "ssa",
            &PatchParams::apply("operator-b").force(),
            &Patch::Apply(applied("ssa", json!({"a": "9"}))),
        )
        .await?;
    assert_eq!(
        forced.data.clone().unwrap_or_default(),
        BTreeMap::from([
            ("a".to_string(), "9".to_string()),
            ("b".to_string(), "2".to_string())
        ])
    );
    assert_eq!(
        managers(&forced),
        [
            ("operator-a".to_string(), "Apply".to_string()),
            ("operator-b".to_string(), "Apply".to_string())
        ]
    );
    let a_owns = forced
        .managed_fields()
        .iter()
        .find(|e| e.manager.as_deref() == Some("operator-a"))
        .map(|e| as_json(&e.fields_v1))
        .unwrap_or_default();
    assert!(
        a_owns.pointer("/f:data/f:a").is_none() && a_owns.pointer("/f:data/f:b").is_some(),
        "force moved data.a to operator-b: {a_owns}"
    );

    // A non-apply write by another manager shows up as an Update entry.
    let updated = cms
        .patch(
            "ssa",
            &PatchParams {
                field_manager: Some("kubectl-edit".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"data": {"c": "3"}})),
        )
        .await?;
    assert!(
        managers(&updated).contains(&("kubectl-edit".to_string(), "Update".to_string())),
        "{:?}",
        managers(&updated)
    );
    Ok(())
}

// ----- deletion ----------------------------------------------------------------------------

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut held = config_map("held", &[], &[]);
    held.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
    cms.create(&PostParams::default(), &held).await?;
    let rv = cms
        .list(&ListParams::default())
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();
    let mut events = cms
        .watch(&WatchParams::default().disable_bookmarks().timeout(60), &rv)
        .await?
        .boxed();

    let deleted = cms.delete("held", &DeleteParams::default()).await?;
    let marked = deleted
        .left()
        .expect("the object is returned, not a Status, while finalizers remain");
    assert!(marked.metadata.deletion_timestamp.is_some());
    let still = cms.get("held").await?;
    assert!(
        still.metadata.deletion_timestamp.is_some(),
        "it stays, marked for deletion"
    );
    assert_eq!(still.finalizers(), ["example.com/cleanup"]);
    let s = status(
        cms.patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"finalizers": ["example.com/cleanup", "example.com/new"]}}),
            ),
        )
        .await,
    );
    assert_eq!(
        (s.code, s.reason.as_str()),
        (422, "Invalid"),
        "no new finalizers on a deleting object"
    );

    cms.patch("held", &PatchParams::default(), &without_finalizers())
        .await?;
    assert!(
        cms.get_opt("held").await?.is_none(),
        "gone once the last finalizer is removed"
    );

    let mut seen = Vec::new();
    for _ in 0..2 {
        match next(&mut events).await {
            Some(Ok(WatchEvent::Modified(cm))) => seen.push(format!(
                "MODIFIED deleting={}",
                cm.metadata.deletion_timestamp.is_some()
            )),
            Some(Ok(WatchEvent::Deleted(cm))) => seen.push(format!("DELETED {}", cm.name_any())),
            other => seen.push(format!("{other:?}")),
        }
    }
    // A real server deletes instead of storing the emptied object: no MODIFIED in between.
    assert_eq!(seen, ["MODIFIED deleting=true", "DELETED held"]);
    Ok(())
}

async fn owner_and_dependent(
    cms: &Api<ConfigMap>,
    block: bool,
    dependent_finalizer: Option<&str>,
) -> (ConfigMap, ConfigMap) {
    let owner = cms
        .create(&PostParams::default(), &config_map("owner", &[], &[]))
        .await
        .expect("owner created");
    let mut dep = config_map("dependent", &[], &[]);
    dep.metadata.owner_references = Some(vec![owner_ref(&owner, block)]);
    dep.metadata.finalizers = dependent_finalizer.map(|f| vec![f.to_string()]);
    let dep = cms
        .create(&PostParams::default(), &dep)
        .await
        .expect("dependent created");
    (owner, dep)
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents_and_drops_their_owner_references() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    owner_and_dependent(&cms, false, None).await;
    cms.delete("owner", &DeleteParams::orphan()).await?;
    eventually("the owner to be gone", || gone(&cms, "owner")).await;
    let dep = eventually("the dependent's ownerReferences to be removed", || async {
        cms.get("dependent")
            .await
            .ok()
            .filter(|d| d.owner_references().is_empty())
    })
    .await;
    assert!(
        dep.metadata.deletion_timestamp.is_none(),
        "the dependent is kept"
    );
    Ok(())
}

#[tokio::test]
async fn background_deletion_collects_dependents() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    owner_and_dependent(&cms, false, None).await;
    cms.delete("owner", &DeleteParams::background()).await?;
    assert!(
        cms.get_opt("owner").await?.is_none(),
        "the owner goes at once"
    );
    eventually("the garbage collector to delete the dependent", || {
        gone(&cms, "dependent")
    })
    .await;
    Ok(())
}

#[tokio::test]
async fn default_propagation_collects_dependents_too() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    owner_and_dependent(&cms, false, None).await;
    cms.delete("owner", &DeleteParams::default()).await?;
    eventually("the garbage collector to delete the dependent", || {
        gone(&cms, "dependent")
    })
    .await;
    Ok(())
}

#[tokio::test]
async fn foreground_deletion_waits_for_blocking_dependents() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    owner_and_dependent(&cms, true, Some("example.com/hold")).await;
    cms.delete("owner", &DeleteParams::foreground()).await?;
    let owner = cms.get("owner").await?;
    assert!(owner.metadata.deletion_timestamp.is_some());
    assert!(
        owner
            .finalizers()
            .contains(&"foregroundDeletion".to_string()),
        "{:?}",
        owner.finalizers()
    );
    eventually(
        "the dependent to be deleted by the garbage collector",
        || async {
            cms.get("dependent")
                .await
                .ok()
                .filter(|d| d.metadata.deletion_timestamp.is_some())
        },
    )
    .await;
    assert!(
        cms.get_opt("owner").await?.is_some(),
        "the owner waits for its blocking dependent"
    );
    cms.patch("dependent", &PatchParams::default(), &without_finalizers())
        .await?;
    eventually("the dependent to be gone", || gone(&cms, "dependent")).await;
    eventually("the owner to follow", || gone(&cms, "owner")).await;
    Ok(())
}

#[tokio::test]
async fn deleting_a_namespace_removes_its_contents_then_itself() -> TestResult {
    let (_sim, client) = start().await;
    let ns = namespace(&client, "doomed").await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    cms.create(&PostParams::default(), &config_map("plain", &[], &[]))
        .await?;
    let mut held = config_map("held", &[], &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held).await?;

    namespaces.delete(&ns, &DeleteParams::default()).await?;
    let terminating = namespaces.get(&ns).await?;
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(
        terminating.status.and_then(|s| s.phase).as_deref(),
        Some("Terminating")
    );
    eventually("the namespace's objects to be deleted", || {
        gone(&cms, "plain")
    })
    .await;

    let s = status(
        cms.create(&PostParams::default(), &config_map("late", &[], &[]))
            .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
    assert!(
        s.message.contains("because it is being terminated"),
        "{}",
        s.message
    );

    assert!(
        namespaces.get_opt(&ns).await?.is_some(),
        "the namespace waits for its last object"
    );
    cms.patch("held", &PatchParams::default(), &without_finalizers())
        .await?;
    eventually("the namespace to be gone", || gone(&namespaces, &ns)).await;
    Ok(())
}

// ----- defaulting --------------------------------------------------------------------------

#[tokio::test]
async fn a_minimal_deployment_reads_back_with_kubernetes_defaults() -> TestResult {
    let (_sim, client) = start().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let d = as_json(
        &deployments
            .create(&PostParams::default(), &deployment("defaults"))
            .await?,
    );
    let spec = &d["spec"];
    assert_eq!(spec["replicas"], 1);
    assert_eq!(
        spec["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Always");
    assert_eq!(pod["dnsPolicy"], "ClusterFirst");
    assert_eq!(pod["schedulerName"], "default-scheduler");
    assert_eq!(pod["terminationGracePeriodSeconds"], 30);
    assert_eq!(pod["securityContext"], json!({}));
    let app = &pod["containers"][0];
    assert_eq!(app["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(app["terminationMessagePolicy"], "File");
    assert_eq!(app["imagePullPolicy"], "IfNotPresent", "a tagged image");
    assert_eq!(
        pod["containers"][1]["imagePullPolicy"], "Always",
        "an untagged image means :latest"
    );
    // What the server returns is what it stored.
    assert_eq!(
        as_json(&deployments.get("defaults").await?)["spec"],
        d["spec"]
    );
    Ok(())
}

#[tokio::test]
async fn a_service_reads_back_with_defaults_and_a_cluster_ip() -> TestResult {
    let (_sim, client) = start().await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc: Service = from_json(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
    }));
    let s = as_json(&services.create(&PostParams::default(), &svc).await?);
    let spec = &s["spec"];
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(spec["sessionAffinity"], "None");
    let ip = spec["clusterIP"].as_str().unwrap_or_default();
    assert!(
        ip.parse::<std::net::Ipv4Addr>().is_ok(),
        "an allocated clusterIP: {ip:?}"
    );
    assert_eq!(spec["clusterIPs"], json!([ip]));
    assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
    assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert_eq!(spec["ports"][0]["protocol"], "TCP");
    assert_eq!(spec["ports"][0]["targetPort"], 80);
    let other = as_json(&services.create(&PostParams::default(), &from_json::<Service>(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "other"}, "spec": {"ports": [{"port": 81}]}
    }))).await?);
    assert_ne!(
        other["spec"]["clusterIP"], spec["clusterIP"],
        "each Service gets its own IP"
    );
    Ok(())
}

#[tokio::test]
async fn secret_string_data_is_folded_into_data() -> TestResult {
    let (_sim, client) = start().await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("creds".into()),
            ..Default::default()
        },
        data: Some(
            [
                ("kept".to_string(), ByteString(b"old".to_vec())),
                ("both".to_string(), ByteString(b"from-data".to_vec())),
            ]
            .into(),
        ),
        string_data: Some(
            [
                ("password".to_string(), "s3cret".to_string()),
                ("both".to_string(), "from-stringData".to_string()),
            ]
            .into(),
        ),
        ..Default::default()
    };
    let out = secrets.create(&PostParams::default(), &secret).await?;
    assert_eq!(out.string_data, None, "stringData is write-only");
    assert_eq!(out.type_.as_deref(), Some("Opaque"));
    let data = out.data.unwrap_or_default();
    assert_eq!(
        data.get("password").map(|b| b.0.as_slice()),
        Some(&b"s3cret"[..])
    );
    assert_eq!(data.get("kept").map(|b| b.0.as_slice()), Some(&b"old"[..]));
    assert_eq!(
        data.get("both").map(|b| b.0.as_slice()),
        Some(&b"from-stringData"[..]),
        "stringData wins"
    );
    Ok(())
}

#[tokio::test]
async fn managed_fields_are_recorded_for_every_write() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams {
        field_manager: Some("my-operator".into()),
        ..Default::default()
    };
    let created = cms
        .create(&pp, &config_map("mf", &[], &[("a", "1")]))
        .await?;
    assert_eq!(
        managers(&created),
        [("my-operator".to_string(), "Update".to_string())]
    );
    let entry = &created.managed_fields()[0];
    assert_eq!(entry.api_version.as_deref(), Some("v1"));
    assert!(entry.time.is_some());
    assert!(as_json(&entry.fields_v1).pointer("/f:data/f:a").is_some());
    let unnamed = cms
        .create(
            &PostParams::default(),
            &config_map("mf2", &[], &[("b", "2")]),
        )
        .await?;
    let manager = managers(&unnamed)
        .first()
        .map(|(m, _)| m.clone())
        .unwrap_or_default();
    assert!(
        !manager.is_empty(),
        "the manager defaults to the client's user agent"
    );
    Ok(())
}

// ----- custom resources --------------------------------------------------------------------

fn crd(plural: &str, kind: &str, scope: &str, schema: Value) -> CustomResourceDefinition {
    from_json(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {
            "group": "example.com",
            "scope": scope,
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": schema}
            }]
        }
    }))
}

fn widget_schema() -> Value {
    json!({"type": "object", "properties": {
        "spec": {"type": "object", "required": ["size"], "properties": {
            "size": {"type": "integer", "minimum": 1},
            "color": {"type": "string", "enum": ["red", "blue"]},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}
        }},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
    }})
}

fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    )
}

fn widget(name: &str, spec: Value) -> DynamicObject {
    DynamicObject::new(name, &widget_resource()).data(json!({"spec": spec}))
}

/// Creates the namespaced Widget CRD and waits until widgets are served in `default`.
async fn serve_widgets(client: &Client) -> Api<DynamicObject> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(
        &PostParams::default(),
        &crd("widgets", "Widget", "Namespaced", widget_schema()),
    )
    .await
    .expect("CRD created");
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &widget_resource());
    eventually("widgets to be served", || async {
        widgets.list(&ListParams::default()).await.ok().map(|_| ())
    })
    .await;
    widgets
}

#[tokio::test]
async fn crds_become_served_namespaced_and_cluster_scoped() -> TestResult {
    let (_sim, client) = start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let widgets = serve_widgets(&client).await;
    let established = crds.get("widgets.example.com").await?;
    let conditions = established
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default();
    assert!(
        conditions
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True"),
        "{conditions:?}"
    );

    let w = widgets
        .create(
            &PostParams::default(),
            &widget("w1", json!({"size": 2, "color": "red"})),
        )
        .await?;
    assert_eq!(w.metadata.generation, Some(1));
    assert_eq!(w.data["spec"]["size"], 2);
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &widget_resource());
    assert_eq!(all.list(&ListParams::default()).await?.items.len(), 1);

    crds.create(
        &PostParams::default(),
        &crd(
            "gadgets",
            "Gadget",
            "Cluster",
            json!({"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"mode": {"type": "string"}}},
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
            }}),
        ),
    )
    .await?;
    let gadget_ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Gadget"),
        "gadgets",
    );
    let gadgets: Api<DynamicObject> = Api::all_with(client.clone(), &gadget_ar);
    let g = eventually("gadgets to be served", || async {
        gadgets
            .create(
                &PostParams::default(),
                &DynamicObject::new("g1", &gadget_ar).data(json!({"spec": {"mode": "fast"}})),
            )
            .await
            .ok()
    })
    .await;
    assert_eq!(g.metadata.namespace, None, "cluster-scoped");
    let st = gadgets
        .patch_status(
            "g1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"mode": "slow"}, "status": {"phase": "Ready"}})),
        )
        .await?;
    assert_eq!(
        (
            st.data["spec"]["mode"].as_str(),
            st.data["status"]["phase"].as_str()
        ),
        (Some("fast"), Some("Ready"))
    );
    Ok(())
}

#[tokio::test]
async fn custom_resources_have_a_status_subresource_and_generation() -> TestResult {
    let (_sim, client) = start().await;
    let widgets = serve_widgets(&client).await;
    widgets
        .create(&PostParams::default(), &widget("w", json!({"size": 1})))
        .await?;
    let st = widgets
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 50}, "status": {"ready": true}})),
        )
        .await?;
    assert_eq!(st.data["spec"]["size"], 1, "spec is ignored on /status");
    assert_eq!(st.data["status"]["ready"], true);
    assert_eq!(st.metadata.generation, Some(1));
    let main = widgets
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 5}, "status": {"ready": false}})),
        )
        .await?;
    assert_eq!(main.data["spec"]["size"], 5);
    assert_eq!(
        main.data["status"]["ready"], true,
        "status is ignored on the main resource"
    );
    assert_eq!(main.metadata.generation, Some(2));
    Ok(())
}

#[tokio::test]
async fn unknown_fields_of_custom_resources_are_pruned() -> TestResult {
    let (_sim, client) = start().await;
    let widgets = serve_widgets(&client).await;
    let mut w = widget(
        "pruned",
        json!({"size": 3, "unknown": "dropped", "labels": {"a": "b"}}),
    );
    w.data["extraTopLevel"] = json!(true);
    let out = widgets.create(&PostParams::default(), &w).await?;
    assert_eq!(out.data["spec"], json!({"size": 3, "labels": {"a": "b"}}));
    assert!(out.data.get("extraTopLevel").is_none(), "{:?}", out.data);
    assert_eq!(
        widgets.get("pruned").await?.data["spec"],
        json!({"size": 3, "labels": {"a": "b"}}),
        "pruned in storage too"
    );
    Ok(())
}

#[tokio::test]
async fn custom_resources_violating_the_schema_are_invalid() -> TestResult {
    let (_sim, client) = start().await;
    let widgets = serve_widgets(&client).await;
    let cases = [
        ("wrong-type", json!({"size": "big"}), "spec.size"),
        (
            "bad-enum",
            json!({"size": 1, "color": "green"}),
            "spec.color",
        ),
        ("missing", json!({"color": "red"}), "spec.size"),
        ("too-small", json!({"size": 0}), "spec.size"),
    ];
    for (name, spec, field) in cases {
        let s = status(
            widgets
                .create(&PostParams::default(), &widget(name, spec))
                .await,
        );
        assert_eq!(
            (s.code, s.reason.as_str()),
            (422, "Invalid"),
            "{name}: {}",
            s.message
        );
        assert!(
            s.message
                .starts_with(&format!("Widget.example.com \"{name}\" is invalid")),
            "{}",
            s.message
        );
        let causes = s.details.map(|d| d.causes).unwrap_or_default();
        assert!(
            causes.iter().any(|c| c.field == field),
            "{name}: {causes:?}"
        );
    }
    widgets
        .create(&PostParams::default(), &widget("ok", json!({"size": 1})))
        .await?;
    let s = status(
        widgets
            .patch(
                "ok",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"color": "purple"}})),
            )
            .await,
    );
    assert_eq!(
        (s.code, s.reason.as_str()),
        (422, "Invalid"),
        "updates are validated too"
    );
    Ok(())
}

#[tokio::test]
async fn deleting_a_crd_removes_its_objects_and_stops_serving() -> TestResult {
    let (_sim, client) = start().await;
    let widgets = serve_widgets(&client).await;
    for name in ["a", "b"] {
        widgets
            .create(&PostParams::default(), &widget(name, json!({"size": 1})))
            .await?;
    }
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await?;
    eventually("the CRD to be gone", || gone(&crds, "widgets.example.com")).await;
    // The group is gone with its only CRD: the server answers a plain-text 404, which kube-rs
    // reports as an unparsable error body, not as a NotFound Status.
    let s = status(widgets.list(&ListParams::default()).await);
    assert_eq!(
        (s.code, s.reason.as_str()),
        (404, "Failed to parse error data"),
        "no longer served"
    );
    // Recreated, it starts empty: the old objects went with it.
    let widgets = serve_widgets(&client).await;
    assert!(widgets.list(&ListParams::default()).await?.items.is_empty());
    Ok(())
}

/// While its instances are being deleted, a terminating CRD keeps serving them (get, update,
/// delete) but refuses new ones, and it goes only after the last instance.
#[tokio::test]
async fn a_terminating_crd_waits_for_its_objects() -> TestResult {
    let (_sim, client) = start().await;
    let widgets = serve_widgets(&client).await;
    widgets
        .create(&PostParams::default(), &widget("plain", json!({"size": 1})))
        .await?;
    let mut held = widget("held", json!({"size": 1}));
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    widgets.create(&PostParams::default(), &held).await?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await?;

    eventually("the instances to be deleted", || async {
        let plain_gone = widgets.get_opt("plain").await.ok()?.is_none();
        let held_deleting = widgets
            .get("held")
            .await
            .ok()?
            .metadata
            .deletion_timestamp
            .is_some();
        (plain_gone && held_deleting).then_some(())
    })
    .await;
    let crd = crds.get("widgets.example.com").await?;
    assert!(
        crd.metadata.deletion_timestamp.is_some(),
        "the CRD waits, terminating"
    );
    let s = status(
        widgets
            .create(&PostParams::default(), &widget("late", json!({"size": 1})))
            .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (405, "MethodNotAllowed"));
    assert_eq!(
        s.message,
        "create not allowed while custom resource definition is terminating"
    );

    widgets
        .patch("held", &PatchParams::default(), &without_finalizers())
        .await?;
    eventually("the CRD to be gone", || gone(&crds, "widgets.example.com")).await;
    Ok(())
}

// ----- immutable fields --------------------------------------------------------------------

/// A 422 Invalid naming `field` with `detail` in the message, as the real validation says it.
fn assert_rejected(result: Result<impl std::fmt::Debug, kube::Error>, field: &str, detail: &str) {
    let s = status(result);
    assert_eq!(
        (s.code, s.reason.as_str()),
        (422, "Invalid"),
        "{field}: {}",
        s.message
    );
    assert!(
        s.message.contains(&format!("{field}: ")) && s.message.contains(detail),
        "{field}: {}",
        s.message
    );
    let causes = s.details.map(|d| d.causes).unwrap_or_default();
    assert!(
        causes.iter().any(|c| c.field == field),
        "{field}: {causes:?}"
    );
}

#[tokio::test]
async fn csidriver_spec_is_immutable() -> TestResult {
    let (_sim, client) = start().await;
    let drivers: Api<CSIDriver> = Api::all(client.clone());
    drivers
        .create(&PostParams::default(), &from_json(json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "cinder.csi.openstack.org"},
            "spec": {"attachRequired": true, "podInfoOnMount": false}
        })))
        .await?;
    let result = drivers
        .patch(
            "cinder.csi.openstack.org",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"attachRequired": false}})),
        )
        .await;
    // The real validation names the field `spec.attachedRequired` (sic).
    assert_rejected(
        result,
        "spec.attachedRequired",
        "Invalid value: false: field is immutable",
    );
    let labelled = drivers
        .patch(
            "cinder.csi.openstack.org",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await?;
    assert_eq!(
        labelled.spec.attach_required,
        Some(true),
        "metadata stays mutable"
    );
    Ok(())
}

#[tokio::test]
async fn storageclass_parameters_are_immutable() -> TestResult {
    let (_sim, client) = start().await;
    let classes: Api<StorageClass> = Api::all(client.clone());
    classes
        .create(&PostParams::default(), &from_json(json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "standard"},
            "provisioner": "cinder.csi.openstack.org", "parameters": {"type": "ssd"}
        })))
        .await?;
    let result = classes
        .patch(
            "standard",
            &PatchParams::default(),
            &Patch::Merge(json!({"parameters": {"type": "hdd"}})),
        )
        .await;
    assert_rejected(
        result,
        "parameters",
        "Forbidden: updates to parameters are forbidden.",
    );
    let result = classes
        .patch(
            "standard",
            &PatchParams::default(),
            &Patch::Merge(json!({"provisioner": "other.example.com"})),
        )
        .await;
    assert_rejected(
        result,
        "provisioner",
        "Forbidden: updates to provisioner are forbidden.",
    );
    Ok(())
}

#[tokio::test]
async fn deployment_selector_is_immutable() -> TestResult {
    let (_sim, client) = start().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(&PostParams::default(), &deployment("sel"))
        .await?;
    let patch = json!({"spec": {
        "selector": {"matchLabels": {"app": "other"}},
        "template": {"metadata": {"labels": {"app": "other"}}}
    }});
    let result = deployments
        .patch("sel", &PatchParams::default(), &Patch::Merge(patch))
        .await;
    assert_rejected(result, "spec.selector", "field is immutable");
    Ok(())
}

// ----- protobuf bodies ---------------------------------------------------------------------

/// A length-delimited protobuf field (all these test messages are shorter than 128 bytes).
fn pb_field(number: u8, bytes: &[u8]) -> Vec<u8> {
    assert!(bytes.len() < 128);
    [&[(number << 3) | 2, bytes.len() as u8][..], bytes].concat()
}

/// `k8s\0` + `runtime.Unknown{typeMeta{apiVersion, kind}, raw}`.
fn pb_envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta = [
        pb_field(1, api_version.as_bytes()),
        pb_field(2, kind.as_bytes()),
    ]
    .concat();
    [&b"k8s\0"[..], &pb_field(1, &type_meta), &pb_field(2, raw)].concat()
}

/// Sends `body` as protobuf, accepting protobuf or JSON as client-go does; the status code
/// and the JSON answer.
async fn send_protobuf(
    client: &Client,
    method: &str,
    path: &str,
    body: Vec<u8>,
) -> (u16, String, Value) {
    use http_body_util::BodyExt;
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/vnd.kubernetes.protobuf")
        .header(
            "accept",
            "application/vnd.kubernetes.protobuf,application/json",
        )
        .body(kube::client::Body::from(body))
        .expect("request");
    let response = client.send(request).await.expect("an answer");
    let code = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (
        code,
        content_type,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn protobuf_bodies_of_built_in_kinds_are_decoded_and_answered_in_json() -> TestResult {
    let (_sim, client) = start().await;
    // A ConfigMap {metadata {name: "pb"}, data {"a": "b"}}.
    let raw = [
        pb_field(1, &pb_field(1, b"pb")),
        pb_field(2, &[pb_field(1, b"a"), pb_field(2, b"b")].concat()),
    ]
    .concat();
    let (code, content_type, created) = send_protobuf(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        pb_envelope("v1", "ConfigMap", &raw),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(content_type, "application/json");
    assert_eq!(created["data"], json!({"a": "b"}));
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let stored = configmaps.get("pb").await?;
    assert_eq!(
        stored.data,
        Some(BTreeMap::from([("a".into(), "b".into())]))
    );

    // An update in protobuf, with the resourceVersion it read.
    let rv = stored.resource_version().unwrap_or_default();
    let raw = [
        pb_field(
            1,
            &[pb_field(1, b"pb"), pb_field(6, rv.as_bytes())].concat(),
        ),
        pb_field(2, &[pb_field(1, b"a"), pb_field(2, b"c")].concat()),
    ]
    .concat();
    let (code, _, updated) = send_protobuf(
        &client,
        "PUT",
        "/api/v1/namespaces/default/configmaps/pb",
        pb_envelope("v1", "ConfigMap", &raw),
    )
    .await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["data"], json!({"a": "c"}));

    // A typed client's Delete sends DeleteOptions in protobuf too: dryRun ["All"] keeps it.
    let (code, _, answer) = send_protobuf(
        &client,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/pb",
        pb_envelope("v1", "DeleteOptions", &pb_field(5, b"All")),
    )
    .await;
    assert_eq!(code, 200, "{answer}");
    assert!(configmaps.get_opt("pb").await?.is_some(), "a dry run");

    // Malformed bytes: 400, naming the field; never a crash.
    let bad = pb_envelope("v1", "ConfigMap", &[0x0a, 0x02, 0x08, 0x01]);
    let (code, _, status) = send_protobuf(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        bad,
    )
    .await;
    assert_eq!((code, status["reason"].as_str()), (400, Some("BadRequest")));
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("ObjectMeta.name")),
        "{status}"
    );
    let (code, _, status) = send_protobuf(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        b"{\"kind\":\"ConfigMap\"}".to_vec(),
    )
    .await;
    assert_eq!(code, 400, "{status}");
    Ok(())
}

#[tokio::test]
async fn protobuf_bodies_kube_sim_cannot_decode_are_unsupported_media_types() -> TestResult {
    let (_sim, client) = start().await;
    serve_widgets(&client).await;
    // Custom resources have no protobuf form, on a real server too: the server's message.
    let (code, _, status) = send_protobuf(
        &client,
        "POST",
        "/apis/example.com/v1/namespaces/default/widgets",
        pb_envelope("example.com/v1", "Widget", &[]),
    )
    .await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (415, Some("UnsupportedMediaType"))
    );
    assert_eq!(
        status["message"],
        "the body of the request was in an unknown format - accepted media types include: \
         application/json, application/yaml (got \"application/vnd.kubernetes.protobuf\")"
    );
    // A built-in kind without a protobuf table here: 415 naming what decodes.
    let (code, _, status) = send_protobuf(
        &client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        pb_envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", &[]),
    )
    .await;
    assert_eq!(code, 415, "{status}");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("CustomResourceDefinition")
            && message.contains("apps/v1 Deployment")
            && message.contains("v1 ConfigMap"),
        "{message}"
    );
    Ok(())
}
