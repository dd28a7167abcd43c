//! kube-rs against kube-sim, part 1: discovery, create, get, list (selectors and paging) and
//! the Status bodies of errors.
//!
//! These are acceptance tests of kube-sim's faithfulness: each asserts what a real
//! kube-apiserver (v1.33) answers to the same kube-rs call, so an operator that passes against
//! kube-sim behaves the same on a cluster. Watches, faults and controllers are in
//! `kube_rs_watch.rs`; updates, patches, deletion, defaulting, CRDs and immutability in
//! `kube_rs_writes.rs`.

mod common;

use common::{TestResult, config_map, eventually, namespace, start, status};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Discovery, Scope};
use kube::{Client, ResourceExt};
use serde_json::json;

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1.0"}]}
            }
        }
    }))
    .expect("a valid Deployment")
}

fn widget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }}}
            }]
        }
    }))
    .expect("a valid CRD")
}

async fn discover(client: &Client) -> Discovery {
    Discovery::new(client.clone())
        .run()
        .await
        .expect("discovery succeeds")
}

#[tokio::test]
async fn discovery_lists_builtin_resources_with_their_scope() -> TestResult {
    let (_sim, client) = start().await;
    let discovery = discover(&client).await;
    let cases = [
        (
            GroupVersionKind::gvk("apps", "v1", "Deployment"),
            "deployments",
            Scope::Namespaced,
        ),
        (
            GroupVersionKind::gvk("apps", "v1", "DaemonSet"),
            "daemonsets",
            Scope::Namespaced,
        ),
        (
            GroupVersionKind::gvk("", "v1", "ConfigMap"),
            "configmaps",
            Scope::Namespaced,
        ),
        (
            GroupVersionKind::gvk("", "v1", "Secret"),
            "secrets",
            Scope::Namespaced,
        ),
        (
            GroupVersionKind::gvk("", "v1", "Namespace"),
            "namespaces",
            Scope::Cluster,
        ),
        (
            GroupVersionKind::gvk("", "v1", "Node"),
            "nodes",
            Scope::Cluster,
        ),
        (
            GroupVersionKind::gvk("storage.k8s.io", "v1", "CSIDriver"),
            "csidrivers",
            Scope::Cluster,
        ),
        (
            GroupVersionKind::gvk("storage.k8s.io", "v1", "StorageClass"),
            "storageclasses",
            Scope::Cluster,
        ),
        (
            GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
            Scope::Cluster,
        ),
        (
            GroupVersionKind::gvk("coordination.k8s.io", "v1", "Lease"),
            "leases",
            Scope::Namespaced,
        ),
    ];
    for (gvk, plural, scope) in cases {
        let (ar, caps) = discovery
            .resolve_gvk(&gvk)
            .unwrap_or_else(|| panic!("{gvk:?} is discovered"));
        assert_eq!(ar.plural, plural, "{gvk:?}");
        assert_eq!(caps.scope, scope, "{gvk:?}");
    }
    let (_, caps) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment"))
        .expect("deployments");
    assert!(
        caps.subresources
            .iter()
            .any(|(ar, _)| ar.plural == "deployments/status" || ar.plural == "status"),
        "deployments/status is listed"
    );
    Ok(())
}

/// kubectl and kube-rs' `run_aggregated` use aggregated discovery (GA since 1.30).
#[tokio::test]
async fn aggregated_discovery_lists_builtin_resources() -> TestResult {
    let (_sim, client) = start().await;
    let discovery = Discovery::new(client.clone()).run_aggregated().await?;
    let (ar, caps) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment"))
        .expect("deployments discovered");
    assert_eq!(
        (ar.plural.as_str(), caps.scope),
        ("deployments", Scope::Namespaced)
    );
    let (_, caps) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("", "v1", "Namespace"))
        .expect("namespaces discovered");
    assert_eq!(caps.scope, Scope::Cluster);
    Ok(())
}

#[tokio::test]
async fn a_crd_appears_in_discovery_and_disappears_when_deleted() -> TestResult {
    let (_sim, client) = start().await;
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    assert!(
        discover(&client).await.resolve_gvk(&gvk).is_none(),
        "not served before the CRD exists"
    );
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &widget_crd()).await?;
    let (ar, caps) = eventually("the CRD's resource to be discovered", || async {
        discover(&client).await.resolve_gvk(&gvk)
    })
    .await;
    assert_eq!(
        (ar.plural.as_str(), caps.scope),
        ("widgets", Scope::Namespaced)
    );
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await?;
    eventually("the CRD's resource to leave discovery", || async {
        discover(&client)
            .await
            .resolve_gvk(&gvk)
            .is_none()
            .then_some(())
    })
    .await;
    eventually("the CRD to be gone", || async {
        crds.get_opt("widgets.example.com")
            .await
            .ok()
            .flatten()
            .is_none()
            .then_some(())
    })
    .await;
    Ok(())
}

#[tokio::test]
async fn create_sets_system_metadata() -> TestResult {
    let (_sim, client) = start().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let d = deployments
        .create(&PostParams::default(), &deployment("web"))
        .await?;
    assert!(!d.uid().unwrap_or_default().is_empty(), "uid");
    assert!(d.metadata.creation_timestamp.is_some(), "creationTimestamp");
    assert!(
        !d.resource_version().unwrap_or_default().is_empty(),
        "resourceVersion"
    );
    assert_eq!(
        d.metadata.generation,
        Some(1),
        "a Deployment starts at generation 1"
    );
    assert_eq!(d.namespace().as_deref(), Some("default"));

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = cms
        .create(
            &PostParams::default(),
            &config_map("plain", &[], &[("k", "v")]),
        )
        .await?;
    assert_eq!(
        cm.metadata.generation, None,
        "ConfigMaps have no generation"
    );
    assert_ne!(cm.uid(), d.uid(), "uids are unique");
    let again = cms.get("plain").await?;
    assert_eq!(again.uid(), cm.uid());
    assert_eq!(again.resource_version(), cm.resource_version());
    Ok(())
}

#[tokio::test]
async fn create_with_generate_name_gets_a_random_suffix() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut cm = config_map("", &[], &[]);
    cm.metadata.name = None;
    cm.metadata.generate_name = Some("gen-".into());
    let a = cms.create(&PostParams::default(), &cm).await?;
    let b = cms.create(&PostParams::default(), &cm).await?;
    for made in [&a, &b] {
        let name = made.name_any();
        assert!(
            name.starts_with("gen-") && name.len() == "gen-".len() + 5,
            "generated name {name:?}"
        );
        assert_eq!(made.metadata.generate_name.as_deref(), Some("gen-"));
    }
    assert_ne!(a.name_any(), b.name_any());
    Ok(())
}

#[tokio::test]
async fn create_in_a_missing_namespace_is_not_found() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "nowhere");
    let s = status(
        cms.create(&PostParams::default(), &config_map("a", &[], &[]))
            .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
    assert_eq!(s.message, "namespaces \"nowhere\" not found");
    Ok(())
}

#[tokio::test]
async fn create_twice_is_already_exists() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &config_map("dup", &[], &[]))
        .await?;
    match cms
        .create(&PostParams::default(), &config_map("dup", &[], &[]))
        .await
    {
        Err(kube::Error::Api(ae)) => {
            assert_eq!((ae.code, ae.reason.as_str()), (409, "AlreadyExists"));
            assert_eq!(ae.message, "configmaps \"dup\" already exists");
            let details = ae.details.as_ref().expect("details");
            assert_eq!(
                (details.name.as_str(), details.kind.as_str()),
                ("dup", "configmaps")
            );
        }
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn an_invalid_name_is_rejected_as_invalid() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let s = status(
        cms.create(
            &PostParams::default(),
            &config_map("Not_A_Valid_Name", &[], &[]),
        )
        .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    assert!(
        s.message
            .starts_with("ConfigMap \"Not_A_Valid_Name\" is invalid: metadata.name: Invalid value"),
        "{}",
        s.message
    );
    let causes = s
        .details
        .as_ref()
        .map(|d| d.causes.clone())
        .unwrap_or_default();
    assert!(
        causes
            .iter()
            .any(|c| c.field == "metadata.name" && c.reason == "FieldValueInvalid"),
        "{causes:?}"
    );
    assert!(
        cms.get_opt("Not_A_Valid_Name").await?.is_none(),
        "nothing was stored"
    );
    Ok(())
}

#[tokio::test]
async fn get_opt_is_none_for_a_missing_object() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert!(cms.get_opt("missing").await?.is_none());
    let s = status(cms.get("missing").await);
    assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
    assert_eq!(s.message, "configmaps \"missing\" not found");
    cms.create(
        &PostParams::default(),
        &config_map("present", &[], &[("k", "v")]),
    )
    .await?;
    let got = cms.get_opt("present").await?.expect("found");
    assert_eq!(
        got.data.unwrap_or_default().get("k").map(String::as_str),
        Some("v")
    );
    Ok(())
}

/// Names of the ConfigMaps a list returns, sorted.
async fn names(api: &Api<ConfigMap>, lp: &ListParams) -> Vec<String> {
    let mut names: Vec<String> = api
        .list(lp)
        .await
        .expect("list succeeds")
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn list_honours_label_selectors() -> TestResult {
    let (_sim, client) = start().await;
    let ns = namespace(&client, "labels").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    for (name, labels) in [
        ("a", vec![("app", "web"), ("tier", "front")]),
        ("b", vec![("app", "web"), ("tier", "back")]),
        ("c", vec![("app", "db")]),
        ("d", vec![]),
    ] {
        cms.create(&PostParams::default(), &config_map(name, &labels, &[]))
            .await?;
    }
    let cases: [(&str, &[&str]); 8] = [
        ("app=web", &["a", "b"]),
        ("app==web", &["a", "b"]),
        ("app!=web", &["c", "d"]),
        ("tier in (front,middle)", &["a"]),
        ("tier notin (front)", &["b", "c", "d"]),
        ("tier", &["a", "b"]),
        ("!tier", &["c", "d"]),
        ("app=web,tier!=front", &["b"]),
    ];
    for (selector, want) in cases {
        assert_eq!(
            names(&cms, &ListParams::default().labels(selector)).await,
            want,
            "labelSelector {selector:?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn list_honours_field_selectors() -> TestResult {
    let (_sim, client) = start().await;
    for ns in ["one", "two"] {
        namespace(&client, ns).await;
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        for name in ["x", "y"] {
            cms.create(&PostParams::default(), &config_map(name, &[], &[]))
                .await?;
        }
    }
    let one: Api<ConfigMap> = Api::namespaced(client.clone(), "one");
    assert_eq!(
        names(&one, &ListParams::default().fields("metadata.name=x")).await,
        ["x"]
    );
    assert_eq!(
        names(&one, &ListParams::default().fields("metadata.name!=x")).await,
        ["y"]
    );
    let all: Api<ConfigMap> = Api::all(client.clone());
    let in_two = all
        .list(&ListParams::default().fields("metadata.namespace=two"))
        .await?;
    let mut got: Vec<(String, String)> = in_two
        .items
        .iter()
        .map(|c| (c.namespace().unwrap_or_default(), c.name_any()))
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("two".to_string(), "x".to_string()),
            ("two".to_string(), "y".to_string())
        ]
    );
    let both = all
        .list(&ListParams::default().fields("metadata.name=y"))
        .await?;
    assert_eq!(both.items.len(), 2, "one y per namespace");
    Ok(())
}

#[tokio::test]
async fn list_pages_with_limit_and_continue() -> TestResult {
    let (_sim, client) = start().await;
    let ns = namespace(&client, "paging").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    for i in 0..25 {
        cms.create(
            &PostParams::default(),
            &config_map(&format!("cm-{i:02}"), &[], &[]),
        )
        .await?;
    }
    let mut seen = Vec::new();
    let mut sizes = Vec::new();
    let mut list_rvs = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(10);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = cms.list(&lp).await?;
        sizes.push(page.items.len());
        list_rvs.push(page.metadata.resource_version.clone().unwrap_or_default());
        if token.is_none() {
            assert_eq!(
                page.metadata.remaining_item_count,
                Some(15),
                "remainingItemCount on the first page"
            );
        }
        seen.extend(page.items.iter().map(ResourceExt::name_any));
        token = page.metadata.continue_.clone().filter(|c| !c.is_empty());
        if token.is_none() {
            break;
        }
        assert!(sizes.len() < 10, "paging does not end");
    }
    assert_eq!(sizes, [10, 10, 5]);
    let want: Vec<String> = (0..25).map(|i| format!("cm-{i:02}")).collect();
    assert_eq!(seen, want, "every object once, in key order");
    assert!(
        list_rvs
            .iter()
            .all(|rv| rv == &list_rvs[0] && !rv.is_empty()),
        "one list resourceVersion across pages: {list_rvs:?}"
    );
    Ok(())
}

/// A continued list is a snapshot at the first page's resourceVersion: objects created
/// between pages do not show up (etcd reads the later pages at that revision).
#[tokio::test]
async fn list_pages_are_a_consistent_snapshot() -> TestResult {
    let (_sim, client) = start().await;
    let ns = namespace(&client, "snapshot").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    for i in 0..4 {
        cms.create(
            &PostParams::default(),
            &config_map(&format!("cm-{i}"), &[], &[]),
        )
        .await?;
    }
    let first = cms.list(&ListParams::default().limit(2)).await?;
    let token = first.metadata.continue_.clone().expect("a continue token");
    cms.create(&PostParams::default(), &config_map("cm-9-late", &[], &[]))
        .await?;
    let rest = cms
        .list(&ListParams::default().limit(10).continue_token(&token))
        .await?;
    let names: Vec<String> = rest.items.iter().map(ResourceExt::name_any).collect();
    assert_eq!(
        names,
        ["cm-2", "cm-3"],
        "the later page is read at the first page's resourceVersion"
    );
    assert_eq!(
        rest.metadata.resource_version,
        first.metadata.resource_version
    );
    Ok(())
}

#[tokio::test]
async fn an_invalid_selector_is_a_bad_request() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for lp in [
        ListParams::default().labels("app in (web"),
        ListParams::default().labels("app=web=db"),
        ListParams::default().fields("data.k=v"),
        ListParams::default().fields("metadata.name"),
    ] {
        let s = status(cms.list(&lp).await);
        assert_eq!(
            (s.code, s.reason.as_str()),
            (400, "BadRequest"),
            "{lp:?}: {}",
            s.message
        );
    }
    Ok(())
}

#[tokio::test]
async fn errors_are_status_objects_with_real_reasons() -> TestResult {
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = cms
        .create(&PostParams::default(), &config_map("e", &[], &[]))
        .await?;

    let not_found = status(cms.get("nope").await);
    assert_eq!(
        (not_found.code, not_found.reason.as_str()),
        (404, "NotFound")
    );
    assert!(not_found.is_failure());

    let exists = status(
        cms.create(&PostParams::default(), &config_map("e", &[], &[]))
            .await,
    );
    assert_eq!(
        (exists.code, exists.reason.as_str()),
        (409, "AlreadyExists")
    );

    // A real change moves the resourceVersion on; `created` is now stale.
    let mut changed = created.clone();
    changed.data = Some([("x".to_string(), "1".to_string())].into());
    cms.replace("e", &PostParams::default(), &changed).await?;
    let mut stale = created.clone();
    stale.data = Some([("x".to_string(), "2".to_string())].into());
    let conflict = status(cms.replace("e", &PostParams::default(), &stale).await);
    assert_eq!((conflict.code, conflict.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        conflict.message,
        "Operation cannot be fulfilled on configmaps \"e\": the object has been modified; please apply your changes to the latest version and try again"
    );

    let failing_test: json_patch::Patch =
        serde_json::from_value(json!([{"op": "test", "path": "/data/x", "value": "nope"}]))?;
    let invalid = status(
        cms.patch(
            "e",
            &PatchParams::default(),
            &Patch::<()>::Json(failing_test),
        )
        .await,
    );
    assert_eq!((invalid.code, invalid.reason.as_str()), (422, "Invalid"));

    let bad = status(cms.list(&ListParams::default().labels("a in (")).await);
    assert_eq!((bad.code, bad.reason.as_str()), (400, "BadRequest"));

    // POST to a named object's path: the route exists, the method does not.
    let req = http::Request::post("/api/v1/namespaces/default/configmaps/e")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "e"}}),
        )?)?;
    let not_allowed = status(client.request::<serde_json::Value>(req).await);
    assert_eq!(
        (not_allowed.code, not_allowed.reason.as_str()),
        (405, "MethodNotAllowed")
    );

    // A continue token from before a compaction is Gone (reason Expired, code 410).
    for i in 0..3 {
        cms.create(
            &PostParams::default(),
            &config_map(&format!("g{i}"), &[], &[]),
        )
        .await?;
    }
    let page = cms.list(&ListParams::default().limit(1)).await?;
    let token = page.metadata.continue_.clone().expect("a continue token");
    cms.create(&PostParams::default(), &config_map("after", &[], &[]))
        .await?;
    sim.compact();
    let gone = status(
        cms.list(&ListParams::default().limit(1).continue_token(&token))
            .await,
    );
    assert_eq!((gone.code, gone.reason.as_str()), (410, "Expired"));

    for s in [&exists, &conflict, &invalid, &bad, &not_allowed, &gone] {
        assert!(s.is_failure(), "status: Failure in {s:?}");
    }
    Ok(())
}
