//! Server-side apply and updates through the `status` subresource, as client-go's and
//! kube-rs' `patch_status` with `Patch::Apply` use them: each field manager's managedFields
//! entry says `subresource: status`, list-map conditions merge by key with ownership per
//! manager, and the main resource and its status do not take over each other's fields.

mod common;

use common::{TestResult, start};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

/// Gadgets: a spec and status conditions that are a list map keyed by `type`, as
/// ClusterCSIDriver's and every OpenShift operator's are.
fn gadget_crd() -> CustomResourceDefinition {
    let condition = json!({
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": {"type": "string"},
            "status": {"type": "string"},
            "reason": {"type": "string"},
            "message": {"type": "string"}
        }
    });
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"},
                        "color": {"type": "string"}
                    }},
                    "status": {"type": "object", "properties": {
                        "observedGeneration": {"type": "integer"},
                        "conditions": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["type"],
                            "items": condition
                        }
                    }}
                }}}
            }]
        }
    }))
    .expect("a valid CRD")
}

async fn serve_gadgets(client: &Client) -> Api<DynamicObject> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &gadget_crd())
        .await
        .expect("CRD created");
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Gadget"),
        "gadgets",
    );
    let gadgets: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    common::eventually("gadgets to be served", || async {
        gadgets.list(&ListParams::default()).await.ok().map(|_| ())
    })
    .await;
    gadgets
}

fn gadget(body: Value) -> Value {
    let mut out =
        json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}});
    if let (Some(out), Some(body)) = (out.as_object_mut(), body.as_object()) {
        out.extend(body.clone());
    }
    out
}

fn condition(kind: &str, status: &str) -> Value {
    json!({"type": kind, "status": status, "reason": "AsExpected", "message": format!("{kind} is {status}")})
}

/// The object as JSON.
fn as_json(o: &DynamicObject) -> Value {
    serde_json::to_value(o).expect("JSON")
}

/// (manager, operation, subresource) of every managedFields entry, sorted (the server orders
/// them by operation, then by time in seconds, which a test cannot pin).
fn entries(o: &DynamicObject) -> Vec<(String, String, String)> {
    let mut out: Vec<_> = o
        .managed_fields()
        .iter()
        .map(|e| {
            (
                e.manager.clone().unwrap_or_default(),
                e.operation.clone().unwrap_or_default(),
                e.subresource.clone().unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    out
}

/// The FieldsV1 of `manager`'s entry with `operation`.
fn fields_of(o: &DynamicObject, manager: &str, operation: &str) -> Value {
    o.managed_fields()
        .iter()
        .find(|e| {
            e.manager.as_deref() == Some(manager) && e.operation.as_deref() == Some(operation)
        })
        .and_then(|e| e.fields_v1.as_ref())
        .map(|f| f.0.clone())
        .unwrap_or_else(|| panic!("no {operation} entry for {manager} in {:#}", as_json(o)))
}

fn condition_types(o: &DynamicObject) -> Vec<String> {
    o.data
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c["type"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn entry(manager: &str, operation: &str, subresource: &str) -> (String, String, String) {
    (manager.into(), operation.into(), subresource.into())
}

#[tokio::test]
async fn status_apply_records_each_manager_with_the_status_subresource() -> TestResult {
    let (_sim, client) = start().await;
    let gadgets = serve_gadgets(&client).await;
    let apply = |m: &str| PatchParams::apply(m);

    // The main resource, applied with a status the main endpoint ignores.
    let created = gadgets
        .patch(
            "g",
            &apply("spec-owner"),
            &Patch::Apply(gadget(json!({
                "spec": {"size": 1},
                "status": {"conditions": [condition("Sneaky", "True")]}
            }))),
        )
        .await?;
    assert!(
        condition_types(&created).is_empty(),
        "status is reset on the main resource"
    );
    assert_eq!(entries(&created), [entry("spec-owner", "Apply", "")]);
    let spec_fields = fields_of(&created, "spec-owner", "Apply");
    assert!(spec_fields.get("f:spec").is_some(), "{spec_fields}");
    assert!(spec_fields.get("f:status").is_none(), "{spec_fields}");

    // Two managers apply their own conditions through /status.
    let a = gadgets
        .patch_status(
            "g",
            &apply("mgr-a"),
            &Patch::Apply(gadget(json!({"status": {"conditions": [
                condition("Available", "True"),
                condition("Degraded", "False"),
            ]}}))),
        )
        .await?;
    assert_eq!(condition_types(&a), ["Available", "Degraded"]);
    let b = gadgets
        .patch_status(
            "g",
            &apply("mgr-b"),
            &Patch::Apply(gadget(json!({"status": {"conditions": [
                condition("Progressing", "False"),
            ]}}))),
        )
        .await?;
    assert_eq!(
        condition_types(&b),
        ["Available", "Degraded", "Progressing"]
    );
    assert_eq!(
        entries(&b),
        [
            entry("mgr-a", "Apply", "status"),
            entry("mgr-b", "Apply", "status"),
            entry("spec-owner", "Apply", ""),
        ]
    );
    let a_fields = fields_of(&b, "mgr-a", "Apply");
    let a_conditions = a_fields
        .pointer("/f:status/f:conditions")
        .and_then(Value::as_object)
        .expect("mgr-a owns conditions");
    assert!(
        a_conditions.contains_key(r#"k:{"type":"Available"}"#),
        "{a_fields}"
    );
    assert!(
        a_conditions.contains_key(r#"k:{"type":"Degraded"}"#),
        "{a_fields}"
    );
    assert!(
        !a_conditions.contains_key(r#"k:{"type":"Progressing"}"#),
        "{a_fields}"
    );
    assert!(a_fields.get("f:spec").is_none(), "{a_fields}");
    let b_fields = fields_of(&b, "mgr-b", "Apply");
    assert_eq!(
        b_fields
            .pointer("/f:status/f:conditions")
            .and_then(Value::as_object)
            .map(|c| c.keys().cloned().collect::<Vec<_>>()),
        Some(vec![r#"k:{"type":"Progressing"}"#.to_string()]),
        "{b_fields}"
    );
    assert_eq!(
        b.data["spec"],
        json!({"size": 1}),
        "status applies leave spec"
    );

    // Another manager's condition is a conflict, as on a real server.
    let conflict = gadgets
        .patch_status(
            "g",
            &apply("mgr-b"),
            &Patch::Apply(gadget(json!({"status": {"conditions": [
                condition("Progressing", "False"),
                condition("Available", "False"),
            ]}}))),
        )
        .await;
    match conflict {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 409, "{s:?}");
            assert!(
                s.message
                    .contains(r#"conflicts with "mgr-a" with subresource "status""#),
                "{s:?}"
            );
            assert!(
                s.message
                    .contains(r#".status.conditions[type="Available"].status"#),
                "{s:?}"
            );
        }
        other => panic!("expected a conflict, got {other:?}"),
    }

    // The same values applied by another manager: ownership is shared, which is a write.
    let shared = gadgets
        .patch_status(
            "g",
            &apply("mgr-d"),
            &Patch::Apply(gadget(json!({"status": {"conditions": [
                condition("Available", "True"),
            ]}}))),
        )
        .await?;
    assert_eq!(as_json(&shared)["status"], as_json(&b)["status"]);
    assert_ne!(shared.resource_version(), b.resource_version());
    assert!(
        fields_of(&shared, "mgr-d", "Apply")
            .pointer(r#"/f:status/f:conditions/k:{"type":"Available"}/f:status"#)
            .is_some()
    );

    // A manager that stops applying a condition it owned removes it; the others' stay.
    let dropped = gadgets
        .patch_status(
            "g",
            &apply("mgr-a"),
            &Patch::Apply(gadget(json!({"status": {"conditions": [
                condition("Available", "True"),
            ]}}))),
        )
        .await?;
    assert_eq!(condition_types(&dropped), ["Available", "Progressing"]);

    // A no-op re-apply changes nothing, not even the resourceVersion.
    let again = gadgets
        .patch_status(
            "g",
            &apply("mgr-b"),
            &Patch::Apply(gadget(json!({"status": {"conditions": [
                condition("Progressing", "False"),
            ]}}))),
        )
        .await?;
    assert_eq!(again.resource_version(), dropped.resource_version());
    assert_eq!(as_json(&again), as_json(&dropped));

    // A status apply that also sends spec: spec is reset, and not owned.
    let with_spec = gadgets
        .patch_status(
            "g",
            &apply("mgr-c"),
            &Patch::Apply(gadget(json!({
                "spec": {"size": 99},
                "status": {"observedGeneration": 1}
            }))),
        )
        .await?;
    assert_eq!(with_spec.data["spec"], json!({"size": 1}));
    assert_eq!(
        with_spec.data.pointer("/status/observedGeneration"),
        Some(&json!(1))
    );
    let c_fields = fields_of(&with_spec, "mgr-c", "Apply");
    assert!(c_fields.get("f:spec").is_none(), "{c_fields}");
    assert!(
        c_fields.pointer("/f:status/f:observedGeneration").is_some(),
        "{c_fields}"
    );

    // The main resource's applier changes spec; the status managers keep what they own.
    let respec = gadgets
        .patch(
            "g",
            &apply("spec-owner"),
            &Patch::Apply(gadget(json!({"spec": {"size": 2}}))),
        )
        .await?;
    assert_eq!(respec.data["spec"], json!({"size": 2}));
    assert_eq!(condition_types(&respec), ["Available", "Progressing"]);
    assert_eq!(
        entries(&respec),
        [
            entry("mgr-a", "Apply", "status"),
            entry("mgr-b", "Apply", "status"),
            entry("mgr-c", "Apply", "status"),
            entry("mgr-d", "Apply", "status"),
            entry("spec-owner", "Apply", ""),
        ]
    );
    // The status owners do not own spec, so the spec applier needs no force, and vice versa.
    assert!(
        fields_of(&respec, "spec-owner", "Apply")
            .get("f:status")
            .is_none()
    );
    Ok(())
}

#[tokio::test]
async fn status_updates_are_recorded_with_the_status_subresource() -> TestResult {
    let (_sim, client) = start().await;
    let gadgets = serve_gadgets(&client).await;
    gadgets
        .patch(
            "g",
            &PatchParams::apply("spec-owner"),
            &Patch::Apply(gadget(json!({"spec": {"size": 1}}))),
        )
        .await?;
    // A merge patch of status by a controller: an Update entry on the status subresource.
    let patched = gadgets
        .patch_status(
            "g",
            &PatchParams {
                field_manager: Some("controller".into()),
                ..PatchParams::default()
            },
            &Patch::Merge(json!({
                "spec": {"size": 5},
                "status": {"conditions": [condition("Available", "True")]}
            })),
        )
        .await?;
    assert_eq!(
        entries(&patched),
        [
            entry("controller", "Update", "status"),
            entry("spec-owner", "Apply", ""),
        ]
    );
    let fields = fields_of(&patched, "controller", "Update");
    assert!(
        fields
            .pointer(r#"/f:status/f:conditions/k:{"type":"Available"}"#)
            .is_some(),
        "{fields}"
    );
    assert!(fields.get("f:spec").is_none(), "{fields}");
    assert_eq!(patched.data["spec"], json!({"size": 1}));

    // A PUT of status by another manager: its own entry; a spec write on the main resource
    // does not take status over.
    let mut whole = patched.clone();
    whole.data["status"]["conditions"] = json!([
        condition("Available", "True"),
        condition("Degraded", "False"),
    ]);
    whole.metadata.managed_fields = None;
    let replaced = gadgets
        .replace_status(
            "g",
            &PostParams {
                field_manager: Some("other".into()),
                ..PostParams::default()
            },
            &whole,
        )
        .await?;
    assert_eq!(condition_types(&replaced), ["Available", "Degraded"]);
    assert!(entries(&replaced).contains(&entry("other", "Update", "status")));
    let main = gadgets
        .patch(
            "g",
            &PatchParams {
                field_manager: Some("editor".into()),
                ..PatchParams::default()
            },
            &Patch::Merge(json!({"spec": {"size": 3}, "status": {"conditions": []}})),
        )
        .await?;
    assert_eq!(condition_types(&main), ["Available", "Degraded"]);
    let editor = fields_of(&main, "editor", "Update");
    assert!(editor.get("f:status").is_none(), "{editor}");
    assert!(editor.pointer("/f:spec/f:size").is_some(), "{editor}");
    Ok(())
}

/// The same with a built-in kind, whose list semantics come from the Go types: Deployment
/// status conditions are a list map keyed by `type`.
#[tokio::test]
async fn deployment_status_conditions_merge_by_manager() -> TestResult {
    // Without the workload simulator, which writes Deployment status as a controller would.
    let (_sim, client) = common::start_with(kube_sim::SimConfig {
        workloads: None,
        ..kube_sim::SimConfig::default()
    })
    .await;
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(client.clone(), "default");
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}},
                         "spec": {"containers": [{"name": "c", "image": "registry.example/c:1"}]}}
        }
    });
    deployments
        .patch(
            "d",
            &PatchParams::apply("installer"),
            &Patch::Apply(&deployment),
        )
        .await?;
    let status = |conditions: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "status": {"conditions": conditions}})
    };
    deployments
        .patch_status(
            "d",
            &PatchParams::apply("mgr-a"),
            &Patch::Apply(status(json!([condition("Available", "True")]))),
        )
        .await?;
    let both = deployments
        .patch_status(
            "d",
            &PatchParams::apply("mgr-b"),
            &Patch::Apply(status(json!([condition("Progressing", "True")]))),
        )
        .await?;
    let types: Vec<String> = both
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(|cs| cs.iter().map(|c| c.type_.clone()).collect())
        .unwrap_or_default();
    assert_eq!(types, ["Available", "Progressing"]);
    let mut managers: Vec<(String, String)> = both
        .managed_fields()
        .iter()
        .map(|e| {
            (
                e.manager.clone().unwrap_or_default(),
                e.subresource.clone().unwrap_or_default(),
            )
        })
        .collect();
    managers.sort();
    assert_eq!(
        managers,
        [
            ("installer".to_string(), String::new()),
            ("mgr-a".to_string(), "status".to_string()),
            ("mgr-b".to_string(), "status".to_string()),
        ]
    );
    let again = deployments
        .patch_status(
            "d",
            &PatchParams::apply("mgr-b"),
            &Patch::Apply(status(json!([condition("Progressing", "True")]))),
        )
        .await?;
    assert_eq!(again.resource_version(), both.resource_version());
    Ok(())
}
