//! kube-rs against kube-sim, part 4: fine points where kube-sim once differed from a real
//! kube-apiserver (v1.33) and was fixed. One test per behaviour, each failing if its fix is
//! undone: controller write loops, generation on deletion, update/create-on-update rules,
//! unserved API groups, watch and list options (`timeoutSeconds=0`, `sendInitialEvents`,
//! `resourceVersionMatch`, future resourceVersions, selector exits), delete-collection, garbage
//! collection of unresolvable owners, propagation finalizers, DELETE bodies, PUT name checks,
//! managed fields, metadata-only requests and the scale subresource.
//!
//! Where kube-rs has no typed call for a request (or validates it away before sending), the
//! tests send it raw through the same client, as an operator's escape hatch would.

mod common;

use std::time::Duration;

use common::{TestResult, config_map, eventually, namespace, next, start, start_with, status};
use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, ObjectMeta, Patch,
    PatchParams, PostParams, VersionMatch, WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::PartialObjectMeta;
use kube::runtime::watcher;
use kube::{Client, Config, ResourceExt};
use kube_sim::{KubeSim, SimConfig};
use serde_json::{Value, json};

fn from_json<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a valid object")
}

fn as_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("serializable")
}

fn get_request(path: &str) -> http::Request<Vec<u8>> {
    http::Request::get(path)
        .body(Vec::new())
        .expect("a valid request")
}

fn json_request(method: &str, path: &str, body: &Value) -> http::Request<Vec<u8>> {
    http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).expect("serializable"))
        .expect("a valid request")
}

/// A raw answer: status code, headers and body, for what kube-rs would turn into an error
/// before the test could see how it looked.
async fn send_raw(client: &Client, req: http::Request<Vec<u8>>) -> (u16, http::HeaderMap, String) {
    use http_body_util::BodyExt;
    let res = client
        .send(req.map(kube::client::Body::from))
        .await
        .expect("an HTTP response");
    let code = res.status().as_u16();
    let headers = res.headers().clone();
    let body = res
        .into_body()
        .collect()
        .await
        .expect("the whole body")
        .to_bytes();
    (code, headers, String::from_utf8_lossy(&body).into_owned())
}

fn header<'a>(headers: &'a http::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// A client without kube-rs' default retry layer, which retries a 504 fifteen times with
/// exponential backoff (minutes) before reporting it.
async fn client_without_retries(sim: &KubeSim) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(&sim.kubeconfig("test")).expect("a kubeconfig");
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a client configuration");
    config.default_retry = false;
    Client::try_from(config).expect("a kube-rs client")
}

/// A watch opened with a raw query string (options kube-rs' `WatchParams` cannot express).
async fn raw_watch(
    client: &Client,
    path_and_query: &str,
) -> kube::Result<BoxStream<'static, kube::Result<WatchEvent<ConfigMap>>>> {
    Ok(client
        .request_events::<ConfigMap>(get_request(path_and_query))
        .await?
        .boxed())
}

/// The next event that is not a bookmark.
async fn next_change<S>(stream: &mut S) -> WatchEvent<ConfigMap>
where
    S: futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin,
{
    loop {
        match next(stream).await {
            Some(Ok(WatchEvent::Bookmark(_))) => continue,
            Some(Ok(e)) => return e,
            other => panic!("expected a watch event, got {other:?}"),
        }
    }
}

fn describe(e: &WatchEvent<ConfigMap>) -> String {
    match e {
        WatchEvent::Added(o) => format!("ADDED {}", o.name_any()),
        WatchEvent::Modified(o) => format!("MODIFIED {}", o.name_any()),
        WatchEvent::Deleted(o) => format!("DELETED {}", o.name_any()),
        WatchEvent::Bookmark(_) => "BOOKMARK".into(),
        WatchEvent::Error(s) => format!("ERROR {} {}", s.code, s.message),
    }
}

/// The cluster-wide resourceVersion, as a list reports it.
async fn global_rv(cms: &Api<ConfigMap>) -> u64 {
    cms.list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .and_then(|rv| rv.parse().ok())
        .expect("a numeric list resourceVersion")
}

fn rv_of(cm: &ConfigMap) -> u64 {
    cm.resource_version()
        .and_then(|rv| rv.parse().ok())
        .expect("a numeric resourceVersion")
}

fn held(mut cm: ConfigMap) -> ConfigMap {
    cm.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cm
}

fn without_finalizers() -> Patch<Value> {
    Patch::Merge(json!({"metadata": {"finalizers": null}}))
}

fn deployment(name: &str) -> Deployment {
    from_json(json!({
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
}

fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    )
}

/// Creates a namespaced Widget CRD (any spec accepted) and waits until it is served.
async fn serve_widgets(client: &Client) -> Api<DynamicObject> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = from_json(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }}}
            }]
        }
    }));
    crds.create(&PostParams::default(), &crd)
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

// ----- 1. controllers do not write in a loop -----------------------------------------------

#[tokio::test]
async fn a_namespace_held_by_another_finalizer_is_not_rewritten_in_a_loop() -> TestResult {
    let (_sim, client) = start().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some("held".into()),
            finalizers: Some(vec!["example.com/hold".into()]),
            ..Default::default()
        },
        ..Default::default()
    };
    namespaces.create(&PostParams::default(), &ns).await?;
    namespaces.delete("held", &DeleteParams::default()).await?;
    eventually(
        "the empty namespace to wait on its own finalizer",
        || async {
            let n = namespaces.get("held").await.ok()?;
            let spec_finalizers = n.spec.and_then(|s| s.finalizers).unwrap_or_default();
            (n.metadata.deletion_timestamp.is_some() && spec_finalizers.is_empty()).then_some(())
        },
    )
    .await;

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let before = global_rv(&cms).await;
    cms.create(&PostParams::default(), &config_map("elsewhere", &[], &[]))
        .await?;
    // Let the controllers react to that write: a rewrite loop would show as dozens of
    // resourceVersions (a too-short wait can only hide the bug, never fail the test falsely).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = global_rv(&cms).await;
    assert!(
        after - before < 10,
        "one ConfigMap moved the resourceVersion from {before} to {after}"
    );
    let still = namespaces.get("held").await?;
    assert_eq!(still.finalizers(), ["example.com/hold"]);
    Ok(())
}

// ----- 2. generation moves when deletion starts --------------------------------------------

#[tokio::test]
async fn deletion_moves_the_generation_of_a_deployment_and_a_custom_resource() -> TestResult {
    let (_sim, client) = start_with(SimConfig {
        workloads: None,
        ..SimConfig::default()
    })
    .await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let mut d = deployment("fg");
    d.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    let created = deployments.create(&PostParams::default(), &d).await?;
    assert_eq!(created.metadata.generation, Some(1));
    let deleting = deployments
        .delete("fg", &DeleteParams::foreground())
        .await?
        .left()
        .expect("the Deployment stays, deleting");
    assert!(
        deleting
            .finalizers()
            .contains(&"foregroundDeletion".to_string()),
        "{:?}",
        deleting.finalizers()
    );
    assert_eq!(deleting.metadata.generation, Some(2));
    assert_eq!(deployments.get("fg").await?.metadata.generation, Some(2));

    let widgets = serve_widgets(&client).await;
    let mut w = DynamicObject::new("w", &widget_resource()).data(json!({"spec": {"size": 1}}));
    w.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    let created = widgets.create(&PostParams::default(), &w).await?;
    assert_eq!(created.metadata.generation, Some(1));
    let deleting = widgets
        .delete("w", &DeleteParams::default())
        .await?
        .left()
        .expect("the Widget stays, deleting");
    assert!(deleting.metadata.deletion_timestamp.is_some());
    assert_eq!(deleting.metadata.generation, Some(2));
    Ok(())
}

// ----- 3. unconditional updates and create-on-update ---------------------------------------

fn lease(name: &str, holder: &str) -> Lease {
    from_json(json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15}
    }))
}

#[tokio::test]
async fn lease_updates_need_a_resource_version_and_a_put_creates_a_lease() -> TestResult {
    let (_sim, client) = start().await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    leases
        .create(&PostParams::default(), &lease("x", "a"))
        .await?;
    let s = status(
        leases
            .replace("x", &PostParams::default(), &lease("x", "b"))
            .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        s.message,
        "leases.coordination.k8s.io \"x\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"
    );

    let (code, _, body) = send_raw(
        &client,
        json_request(
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/default/leases/fresh",
            &as_json(&lease("fresh", "a")),
        ),
    )
    .await;
    assert_eq!(code, 201, "a PUT of a missing Lease creates it: {body}");
    let fresh = leases.get("fresh").await?;
    assert_eq!(
        fresh.spec.and_then(|s| s.holder_identity).as_deref(),
        Some("a")
    );
    let replaced = leases
        .replace("other", &PostParams::default(), &lease("other", "c"))
        .await?;
    assert!(replaced.uid().is_some(), "created through Api::replace");

    // ConfigMaps allow unconditional updates but never create on update.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &config_map("c", &[], &[("k", "1")]))
        .await?;
    let updated = cms
        .replace(
            "c",
            &PostParams::default(),
            &config_map("c", &[], &[("k", "2")]),
        )
        .await?;
    assert_eq!(updated.data.unwrap_or_default()["k"], "2");
    let s = status(
        cms.replace(
            "missing",
            &PostParams::default(),
            &config_map("missing", &[], &[]),
        )
        .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
    Ok(())
}

// ----- 4. unserved groups and unknown resources --------------------------------------------

#[tokio::test]
async fn an_unserved_group_is_a_plain_404_and_an_unknown_resource_a_status() -> TestResult {
    let (_sim, client) = start().await;
    let widgets: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &widget_resource());
    match widgets.get_opt("x").await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 404, "{s:?}"),
        other => panic!("an API that is not installed is an error, not absent: {other:?}"),
    }

    let (code, headers, body) = send_raw(&client, get_request("/apis/example.com/v1")).await;
    assert_eq!(code, 404, "{body}");
    let content_type = header(&headers, "content-type");
    assert!(
        content_type.starts_with("text/plain"),
        "content type {content_type:?}: {body}"
    );

    let s = status(
        client
            .request_text(get_request("/apis/apps/v1/namespaces/default/frobs/x"))
            .await,
    );
    assert_eq!(
        (s.code, s.reason.as_str()),
        (404, "NotFound"),
        "a JSON Status inside a served group version: {s:?}"
    );
    Ok(())
}

// ----- 5-6, 9-10. watch options --------------------------------------------------------------

#[tokio::test]
async fn a_watch_with_timeout_seconds_zero_stays_open() -> TestResult {
    let (_sim, client) = start().await;
    let ns = namespace(&client, "zero").await;
    let mut events = raw_watch(
        &client,
        &format!("/api/v1/namespaces/{ns}/configmaps?watch=true&timeoutSeconds=0"),
    )
    .await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    cms.create(&PostParams::default(), &config_map("late", &[], &[]))
        .await?;
    assert_eq!(describe(&next_change(&mut events).await), "ADDED late");
    Ok(())
}

#[tokio::test]
async fn send_initial_events_false_skips_the_current_state() -> TestResult {
    let (_sim, client) = start().await;
    let ns = namespace(&client, "nosync").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    cms.create(&PostParams::default(), &config_map("old", &[], &[]))
        .await?;
    let mut events = raw_watch(
        &client,
        &format!(
            "/api/v1/namespaces/{ns}/configmaps?watch=true&sendInitialEvents=false\
             &resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
        ),
    )
    .await?;
    cms.create(&PostParams::default(), &config_map("new", &[], &[]))
        .await?;
    assert_eq!(
        describe(&next_change(&mut events).await),
        "ADDED new",
        "no ADDED for the object that existed before the watch"
    );

    let rv = global_rv(&cms).await;
    let s = status(
        raw_watch(
            &client,
            &format!(
                "/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={rv}\
                 &resourceVersionMatch=NotOlderThan"
            ),
        )
        .await
        .map(|_| ()),
    );
    assert_eq!(
        (s.code, s.reason.as_str()),
        (422, "Invalid"),
        "resourceVersionMatch needs sendInitialEvents on a watch: {}",
        s.message
    );

    // kube-rs' streaming lists (sendInitialEvents=true) still sync and end on the bookmark.
    let mut stream = watcher(cms.clone(), watcher::Config::default().streaming_lists()).boxed();
    let mut initial = Vec::new();
    loop {
        match next(&mut stream).await.expect("the watcher keeps going")? {
            watcher::Event::Init => {}
            watcher::Event::InitApply(cm) => initial.push(cm.name_any()),
            watcher::Event::InitDone => break,
            other => panic!("unexpected event before InitDone: {other:?}"),
        }
    }
    initial.sort();
    assert_eq!(initial, ["new", "old"]);
    Ok(())
}

#[tokio::test]
async fn leaving_a_selector_is_deleted_with_the_previous_object() -> TestResult {
    let (_sim, client) = start().await;
    let ns = namespace(&client, "exit").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    cms.create(
        &PostParams::default(),
        &config_map("c", &[("app", "x")], &[("k", "1")]),
    )
    .await?;
    let rv = global_rv(&cms).await;
    let mut events = cms
        .watch(
            &WatchParams::default()
                .labels("app=x")
                .disable_bookmarks()
                .timeout(60),
            &rv.to_string(),
        )
        .await?
        .boxed();
    let moved = cms
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"app": "y"}}, "data": {"k": "2"}})),
        )
        .await?;
    match next_change(&mut events).await {
        WatchEvent::Deleted(cm) => {
            assert_eq!(cm.labels().get("app").map(String::as_str), Some("x"));
            assert_eq!(cm.data.unwrap_or_default()["k"], "1");
            assert_eq!(
                cm.metadata.resource_version,
                moved.metadata.resource_version
            );
        }
        other => panic!("expected DELETED, got {}", describe(&other)),
    }
    Ok(())
}

#[tokio::test]
async fn a_watch_from_a_future_resource_version_waits_for_it() -> TestResult {
    let (_sim, client) = start().await;
    let ns = namespace(&client, "future").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    cms.create(&PostParams::default(), &config_map("c", &[], &[]))
        .await?;
    let target = global_rv(&cms).await + 100;
    let mut events = cms
        .watch(
            &WatchParams::default().disable_bookmarks().timeout(60),
            &target.to_string(),
        )
        .await?
        .boxed();
    let mut i = 0;
    loop {
        i += 1;
        let out = cms
            .patch(
                "c",
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"i": i.to_string()}})),
            )
            .await?;
        if rv_of(&out) > target {
            break;
        }
    }
    match next_change(&mut events).await {
        WatchEvent::Modified(cm) => assert!(
            rv_of(&cm) > target,
            "nothing at or before {target} is sent, got {}",
            rv_of(&cm)
        ),
        other => panic!("expected MODIFIED, got {}", describe(&other)),
    }
    Ok(())
}

// ----- 11. list resourceVersion semantics ---------------------------------------------------

/// Percent-encodes a query value (continue tokens are base64).
fn query_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn list_resource_version_and_match_are_honoured() -> TestResult {
    let (sim, client) = start().await;
    let ns = namespace(&client, "listrv").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    for name in ["before", "doomed"] {
        cms.create(&PostParams::default(), &config_map(name, &[], &[]))
            .await?;
    }
    let then = global_rv(&cms).await;
    cms.create(&PostParams::default(), &config_map("later", &[], &[]))
        .await?;
    cms.delete("doomed", &DeleteParams::default()).await?;

    // A resourceVersion the server has not reached: 504 Timeout with a Retry-After, which
    // kube-rs' retry layer honours (so the answer is read here without that layer).
    let far = then + 1000;
    let (code, headers, body) = send_raw(
        &client_without_retries(&sim).await,
        get_request(&format!(
            "/api/v1/namespaces/{ns}/configmaps?resourceVersion={far}"
        )),
    )
    .await;
    let s: kube::core::Status = serde_json::from_str(&body)?;
    assert_eq!((code, s.reason.as_str()), (504, "Timeout"), "{body}");

    // kube-rs refuses these before sending them; the server must refuse them too.
    let s = status(
        client
            .request_text(get_request(&format!(
                "/api/v1/namespaces/{ns}/configmaps?resourceVersionMatch=Exact"
            )))
            .await,
    );
    assert_eq!(
        (s.code, s.reason.as_str()),
        (422, "Invalid"),
        "{}",
        s.message
    );

    let exact = cms
        .list(
            &ListParams::default()
                .at(&then.to_string())
                .matching(VersionMatch::Exact),
        )
        .await?;
    let mut names: Vec<String> = exact.items.iter().map(ResourceExt::name_any).collect();
    names.sort();
    assert_eq!(names, ["before", "doomed"], "the list as it was at {then}");
    assert_eq!(
        exact.metadata.resource_version,
        Some(then.to_string()),
        "an exact list is at the requested resourceVersion"
    );

    let token = cms
        .list(&ListParams::default().limit(1))
        .await?
        .metadata
        .continue_
        .expect("a continue token");
    let s = status(
        client
            .request_text(get_request(&format!(
                "/api/v1/namespaces/{ns}/configmaps?limit=1&continue={}&resourceVersion={then}",
                query_escape(&token)
            )))
            .await,
    );
    assert_eq!(
        (s.code, s.reason.as_str()),
        (400, "BadRequest"),
        "{}",
        s.message
    );
    // Checked last, so the list semantics above are reported on their own.
    assert_eq!(
        header(&headers, "retry-after"),
        "1",
        "the 504's Retry-After, from its retryAfterSeconds: {body}"
    );
    Ok(())
}

// ----- 7. delete collection ------------------------------------------------------------------

#[tokio::test]
async fn delete_collection_returns_the_deleted_objects_and_is_refused_for_namespaces() -> TestResult
{
    let (_sim, client) = start().await;
    let ns = namespace(&client, "bulk").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    for name in ["a", "b"] {
        cms.create(
            &PostParams::default(),
            &config_map(name, &[], &[("k", name)]),
        )
        .await?;
    }
    let list = cms
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await?
        .left()
        .expect("a list of what was deleted");
    let mut names: Vec<String> = list.items.iter().map(ResourceExt::name_any).collect();
    names.sort();
    assert_eq!(names, ["a", "b"]);
    assert!(cms.list(&ListParams::default()).await?.items.is_empty());

    let s = status(
        client
            .request_text(
                http::Request::delete("/api/v1/namespaces")
                    .body(Vec::new())
                    .expect("a valid request"),
            )
            .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (405, "MethodNotAllowed"));
    let namespaces: Api<Namespace> = Api::all(client.clone());
    assert!(namespaces.get_opt(&ns).await?.is_some(), "nothing deleted");

    let resources = client.list_core_api_resources("v1").await?;
    let verbs = |name: &str| {
        resources
            .resources
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.verbs.clone())
            .unwrap_or_default()
    };
    assert!(
        !verbs("namespaces").contains(&"deletecollection".to_string()),
        "{:?}",
        verbs("namespaces")
    );
    assert!(verbs("configmaps").contains(&"deletecollection".to_string()));
    Ok(())
}

// ----- 8. garbage collection of unresolvable owners -----------------------------------------

fn owned_by(name: &str, api_version: &str, kind: &str, uid: &str) -> ConfigMap {
    let mut cm = config_map(name, &[], &[]);
    cm.metadata.owner_references = Some(vec![OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: "owner".into(),
        uid: uid.into(),
        ..Default::default()
    }]);
    cm
}

#[tokio::test]
async fn an_owner_of_an_unserved_kind_keeps_its_dependent() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(
        &PostParams::default(),
        &owned_by(
            "unresolvable",
            "example.com/v1",
            "Widget",
            "5d1c2a8e-0f43-4c8b-9a35-2f1f6c7d0a01",
        ),
    )
    .await?;
    cms.create(
        &PostParams::default(),
        &owned_by(
            "orphaned",
            "v1",
            "ConfigMap",
            "5d1c2a8e-0f43-4c8b-9a35-2f1f6c7d0a02",
        ),
    )
    .await?;
    eventually(
        "the dependent of a missing ConfigMap to be collected",
        || async {
            cms.get_opt("orphaned")
                .await
                .ok()
                .flatten()
                .is_none()
                .then_some(())
        },
    )
    .await;
    // More writes wake the collector again; the unresolvable reference still holds.
    for i in 0..3 {
        cms.patch(
            "unresolvable",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"i": i.to_string()}})),
        )
        .await?;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let kept = cms.get("unresolvable").await?;
    assert!(kept.metadata.deletion_timestamp.is_none());
    Ok(())
}

// ----- 12. propagation finalizers are replaced -----------------------------------------------

#[tokio::test]
async fn a_new_propagation_policy_replaces_the_previous_finalizer() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    // Orphan, then Foreground. The collector drops `orphan` quickly, so this direction is
    // only checked when the second delete saw it.
    cms.create(&PostParams::default(), &held(config_map("o", &[], &[])))
        .await?;
    let first = cms
        .delete("o", &DeleteParams::orphan())
        .await?
        .left()
        .expect("held, so returned");
    assert!(first.finalizers().contains(&"orphan".to_string()));
    let second = cms
        .delete("o", &DeleteParams::foreground())
        .await?
        .left()
        .expect("held, so returned");
    let fins = second.finalizers();
    assert!(
        fins.contains(&"foregroundDeletion".to_string()) && !fins.contains(&"orphan".to_string()),
        "{fins:?}"
    );
    assert!(fins.contains(&"example.com/hold".to_string()), "{fins:?}");

    // Foreground (kept by a blocking dependent that cannot go yet), then Orphan: deterministic.
    let owner = cms
        .create(&PostParams::default(), &held(config_map("f", &[], &[])))
        .await?;
    let mut dep = held(config_map("f-dep", &[], &[]));
    dep.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "f".into(),
        uid: owner.uid().expect("a uid"),
        block_owner_deletion: Some(true),
        controller: None,
    }]);
    cms.create(&PostParams::default(), &dep).await?;
    cms.delete("f", &DeleteParams::foreground()).await?;
    eventually("the blocking dependent to be deleting", || async {
        cms.get("f-dep")
            .await
            .ok()
            .filter(|d| d.metadata.deletion_timestamp.is_some())
    })
    .await;
    let waiting = cms.get("f").await?;
    assert!(
        waiting
            .finalizers()
            .contains(&"foregroundDeletion".to_string()),
        "{:?}",
        waiting.finalizers()
    );
    let orphaning = cms
        .delete("f", &DeleteParams::orphan())
        .await?
        .left()
        .expect("held, so returned");
    let fins = orphaning.finalizers();
    assert!(
        fins.contains(&"orphan".to_string()) && !fins.contains(&"foregroundDeletion".to_string()),
        "{fins:?}"
    );
    cms.patch("f-dep", &PatchParams::default(), &without_finalizers())
        .await?;
    Ok(())
}

// ----- 13-15. what writes answer -------------------------------------------------------------

#[tokio::test]
async fn deleting_a_service_returns_it_and_a_config_map_a_status() -> TestResult {
    let (_sim, client) = start().await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc: Service = from_json(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
    }));
    services.create(&PostParams::default(), &svc).await?;
    let deleted = services
        .delete("web", &DeleteParams::default())
        .await?
        .left()
        .expect("the deleted Service, not a Status");
    assert_eq!(deleted.name_any(), "web");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &config_map("c", &[], &[]))
        .await?;
    let st = cms
        .delete("c", &DeleteParams::default())
        .await?
        .right()
        .expect("a Status, not the ConfigMap");
    assert!(st.is_success(), "{st:?}");
    Ok(())
}

#[tokio::test]
async fn a_put_without_a_name_does_not_match_the_url() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &config_map("x", &[], &[]))
        .await?;
    let s = status(
        client
            .request_text(json_request(
                "PUT",
                "/api/v1/namespaces/default/configmaps/x",
                &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}, "data": {"k": "v"}}),
            ))
            .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        s.message,
        "the name of the object () does not match the name on the URL (x)"
    );
    assert!(cms.get("x").await?.data.is_none(), "nothing written");
    Ok(())
}

#[tokio::test]
async fn creating_over_a_deleting_object_says_it_is_being_deleted() -> TestResult {
    let (_sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &held(config_map("d", &[], &[])))
        .await?;
    cms.delete("d", &DeleteParams::default()).await?;
    let s = status(
        cms.create(&PostParams::default(), &config_map("d", &[], &[]))
            .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (409, "AlreadyExists"));
    assert!(
        s.message.starts_with("object is being deleted: "),
        "{}",
        s.message
    );
    Ok(())
}

// ----- 16. managed fields ------------------------------------------------------------------

fn owned_fields<K: kube::Resource>(obj: &K, manager: &str) -> Value {
    obj.meta()
        .managed_fields
        .iter()
        .flatten()
        .find(|e| e.manager.as_deref() == Some(manager))
        .map(|e| as_json(&e.fields_v1))
        .unwrap_or_else(|| panic!("no managedFields entry for {manager}"))
}

#[tokio::test]
async fn managed_fields_exclude_what_the_server_sets_on_create() -> TestResult {
    let (_sim, client) = start_with(SimConfig {
        workloads: None,
        ..SimConfig::default()
    })
    .await;
    let pp = PostParams {
        field_manager: Some("creator".into()),
        ..Default::default()
    };
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = namespaces
        .create(
            &pp,
            &Namespace {
                metadata: ObjectMeta {
                    name: Some("mf".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await?;
    assert_eq!(
        ns.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Active")
    );
    // The name label and status.phase are defaults, applied when the body is decoded, so they
    // count as the client's; spec.finalizers comes later, from the strategy's PrepareForCreate.
    let owned = owned_fields(&ns, "creator");
    assert!(
        owned
            .pointer("/f:metadata/f:labels/f:kubernetes.io~1metadata.name")
            .is_some(),
        "{owned}"
    );
    assert!(
        owned.pointer("/f:spec/f:finalizers").is_none(),
        "the server set spec.finalizers, not the client: {owned}"
    );

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let d = deployments.create(&pp, &deployment("mf")).await?;
    let owned = owned_fields(&d, "creator");
    assert!(
        owned.pointer("/f:spec/f:progressDeadlineSeconds").is_some(),
        "defaults belong to the creator too: {owned}"
    );
    assert!(owned.get("f:status").is_none(), "{owned}");
    Ok(())
}

// ----- 17. metadata-only requests ------------------------------------------------------------

#[tokio::test]
async fn metadata_only_requests_return_partial_object_metadata() -> TestResult {
    let (_sim, client) = start().await;
    let ns = namespace(&client, "meta").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    cms.create(
        &PostParams::default(),
        &config_map("m", &[("tier", "a")], &[("big", "payload")]),
    )
    .await?;

    let list = cms.list_metadata(&ListParams::default()).await?;
    assert_eq!(list.types.kind, "PartialObjectMetadataList");
    assert_eq!(list.items.len(), 1);
    assert_eq!(
        list.items[0].labels().get("tier").map(String::as_str),
        Some("a")
    );
    let one = cms.get_metadata("m").await?;
    assert_eq!(
        one.types.as_ref().map(|t| t.kind.as_str()),
        Some("PartialObjectMetadata")
    );
    assert_eq!(one.labels().get("tier").map(String::as_str), Some("a"));

    let metas: Api<PartialObjectMeta<ConfigMap>> = Api::namespaced(client.clone(), &ns);
    let mut stream = watcher(metas, watcher::Config::default()).boxed();
    loop {
        match next(&mut stream).await.expect("the watcher keeps going")? {
            watcher::Event::InitDone => break,
            watcher::Event::Init | watcher::Event::InitApply(_) => {}
            other => panic!("unexpected event before InitDone: {other:?}"),
        }
    }
    cms.patch(
        "m",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"tier": "b"}}})),
    )
    .await?;
    match next(&mut stream).await.expect("the watcher keeps going")? {
        watcher::Event::Apply(m) => {
            assert_eq!(m.labels().get("tier").map(String::as_str), Some("b"));
            assert_eq!(
                m.types.as_ref().map(|t| t.kind.as_str()),
                Some("PartialObjectMetadata")
            );
        }
        other => panic!("expected Apply, got {other:?}"),
    }
    Ok(())
}

// ----- 18. scale ---------------------------------------------------------------------------

#[tokio::test]
async fn the_scale_subresource_changes_replicas_and_generation() -> TestResult {
    let (_sim, client) = start_with(SimConfig {
        workloads: None,
        ..SimConfig::default()
    })
    .await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(&PostParams::default(), &deployment("sc"))
        .await?;
    let scale = deployments.get_scale("sc").await?;
    assert_eq!(scale.spec.as_ref().and_then(|s| s.replicas), Some(1));
    let scaled = deployments
        .patch_scale(
            "sc",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await?;
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(3));
    let d = deployments.get("sc").await?;
    assert_eq!(d.spec.and_then(|s| s.replicas), Some(3));
    assert_eq!(d.metadata.generation, Some(2));

    let mut negative = deployments.get_scale("sc").await?;
    negative.spec.get_or_insert_with(Default::default).replicas = Some(-1);
    let s = status(
        deployments
            .replace_scale("sc", &PostParams::default(), &negative)
            .await,
    );
    assert_eq!(
        (s.code, s.reason.as_str()),
        (422, "Invalid"),
        "{}",
        s.message
    );
    assert_eq!(
        deployments.get("sc").await?.spec.and_then(|s| s.replicas),
        Some(3)
    );
    Ok(())
}
