//! The apply engine against kube-sim: one write per object at install, zero requests of any
//! kind at steady state, the stomp of spec drift, user labels kept, delete-and-recreate of
//! immutable changes, injected CA bundles preserved, 409 handled, missing CRDs reported as
//! `KindNotServed`, and an Event for every write.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event, ObjectReference};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Config};
use kube_sim::{Fault, KubeSim, RequestMatch, RequestRecord, SimConfig};
use operator_kit::apply::{Action, Applier, ApplyError, SPEC_HASH_ANNOTATION};
use operator_kit::cache::{Cache, CacheBuilder};
use operator_kit::events::EventRecorder;
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

const NS: &str = "operator-ns";
const DEADLINE: Duration = Duration::from_secs(10);
const CR_NAME: &str = "cinder.csi.openstack.org";

async fn start() -> (KubeSim, Client) {
    let sim = KubeSim::start(
        SimConfig::default(),
        "127.0.0.1:0".parse().expect("address"),
    )
    .await
    .expect("kube-sim starts");
    let client = client_for(&sim, "operator").await;
    (sim, client)
}

async fn client_for(sim: &KubeSim, user: &str) -> Client {
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let kubeconfig = Kubeconfig::from_yaml(&sim.kubeconfig(user)).expect("kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("config");
    Client::try_from(config).expect("client")
}

async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let until = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < until,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn ar(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn deployment_ar() -> ApiResource {
    ar("apps", "v1", "Deployment", "deployments")
}
fn daemonset_ar() -> ApiResource {
    ar("apps", "v1", "DaemonSet", "daemonsets")
}
fn configmap_ar() -> ApiResource {
    ar("", "v1", "ConfigMap", "configmaps")
}
fn secret_ar() -> ApiResource {
    ar("", "v1", "Secret", "secrets")
}
fn service_ar() -> ApiResource {
    ar("", "v1", "Service", "services")
}
fn sa_ar() -> ApiResource {
    ar("", "v1", "ServiceAccount", "serviceaccounts")
}
fn clusterrole_ar() -> ApiResource {
    ar(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
    )
}
fn crb_ar() -> ApiResource {
    ar(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
    )
}
fn sc_ar() -> ApiResource {
    ar("storage.k8s.io", "v1", "StorageClass", "storageclasses")
}
fn csidriver_ar() -> ApiResource {
    ar("storage.k8s.io", "v1", "CSIDriver", "csidrivers")
}
fn servicemonitor_ar() -> ApiResource {
    ar(
        "monitoring.coreos.com",
        "v1",
        "ServiceMonitor",
        "servicemonitors",
    )
}
fn vsc_ar() -> ApiResource {
    ar(
        "snapshot.storage.k8s.io",
        "v1",
        "VolumeSnapshotClass",
        "volumesnapshotclasses",
    )
}

fn obj(value: Value) -> DynamicObject {
    serde_json::from_value(value).expect("a valid object")
}

fn deployment() -> DynamicObject {
    obj(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "controller", "namespace": NS, "labels": {"app": "controller"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "controller"}},
            "template": {
                "metadata": {"labels": {"app": "controller"}},
                "spec": {"containers": [{"name": "driver", "image": "driver:1", "args": ["--v=2"]}]}
            }
        }
    }))
}

fn daemonset() -> DynamicObject {
    obj(json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "node", "namespace": NS},
        "spec": {
            "selector": {"matchLabels": {"app": "node"}},
            "template": {
                "metadata": {"labels": {"app": "node"}},
                "spec": {"containers": [{"name": "driver", "image": "driver:1"}]}
            }
        }
    }))
}

fn configmap() -> DynamicObject {
    obj(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "trusted-ca", "namespace": NS,
            "labels": {"config.openshift.io/inject-trusted-cabundle": "true"}},
        "data": {"other": "x"}
    }))
}

fn secret() -> DynamicObject {
    obj(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "creds", "namespace": NS},
        "stringData": {"password": "s3cr3t-value"}
    }))
}

fn service() -> DynamicObject {
    obj(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "metrics", "namespace": NS},
        "spec": {"selector": {"app": "controller"}, "ports": [{"name": "m", "port": 443, "targetPort": 9202}]}
    }))
}

fn service_account() -> DynamicObject {
    obj(json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "controller-sa", "namespace": NS}
    }))
}

fn cluster_role() -> DynamicObject {
    obj(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "driver-role"},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}]
    }))
}

fn cluster_role_binding() -> DynamicObject {
    obj(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "driver-binding"},
        "roleRef": {"kind": "ClusterRole", "name": "driver-role"},
        "subjects": [{"kind": "ServiceAccount", "name": "controller-sa", "namespace": NS}]
    }))
}

fn storage_class(parameters: Value) -> DynamicObject {
    obj(json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "standard-csi",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "cinder.csi.openstack.org",
        "parameters": parameters,
        "allowVolumeExpansion": true,
        "volumeBindingMode": "WaitForFirstConsumer"
    }))
}

fn csi_driver(attach_required: bool) -> DynamicObject {
    obj(json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
        "metadata": {"name": "cinder.csi.openstack.org"},
        "spec": {"attachRequired": attach_required, "podInfoOnMount": true}
    }))
}

fn service_monitor() -> DynamicObject {
    obj(json!({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
        "metadata": {"name": "metrics", "namespace": NS},
        "spec": {"endpoints": [{"port": "m"}], "selector": {"matchLabels": {"app": "controller"}}}
    }))
}

fn all_objects() -> Vec<(ApiResource, DynamicObject)> {
    vec![
        (sa_ar(), service_account()),
        (clusterrole_ar(), cluster_role()),
        (crb_ar(), cluster_role_binding()),
        (configmap_ar(), configmap()),
        (secret_ar(), secret()),
        (service_ar(), service()),
        (deployment_ar(), deployment()),
        (daemonset_ar(), daemonset()),
        (sc_ar(), storage_class(json!({"type": "standard"}))),
        (csidriver_ar(), csi_driver(true)),
    ]
}

async fn create_namespace(client: &Client) {
    let api: Api<DynamicObject> =
        Api::all_with(client.clone(), &ar("", "v1", "Namespace", "namespaces"));
    api.create(
        &Default::default(),
        &obj(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})),
    )
    .await
    .expect("namespace created");
}

fn recorder(client: &Client) -> EventRecorder {
    EventRecorder::new(
        client.clone(),
        ObjectReference {
            api_version: Some("operator.openshift.io/v1".into()),
            kind: Some("ClusterCSIDriver".into()),
            name: Some(CR_NAME.into()),
            ..Default::default()
        },
        "test-operator",
        "test-pod",
    )
}

async fn cache_for(client: &Client, extra: &[(ApiResource, DynamicObject)]) -> Cache {
    let mut builder = CacheBuilder::new(client.clone(), [NS]);
    for (a, o) in all_objects().iter().chain(extra) {
        builder = builder.object(a, o);
    }
    let cache = builder.start();
    tokio::time::timeout(DEADLINE, cache.wait_until_ready())
        .await
        .expect("caches sync");
    cache
}

/// Everything but Events (best-effort side writes counted separately) and watches (the
/// caches' long-running streams, which open after the initial list).
fn operand_requests(sim: &KubeSim) -> Vec<RequestRecord> {
    sim.requests()
        .into_iter()
        .filter(|r| r.user == "operator" && !r.resource.ends_with("events") && r.verb != "watch")
        .collect()
}

#[tokio::test]
async fn install_writes_once_per_object_and_steady_state_makes_no_requests() -> TestResult {
    let (sim, client) = start().await;
    create_namespace(&client).await;
    let cache = cache_for(&client, &[]).await;
    let applier = Applier::new(client.clone(), cache.clone(), recorder(&client));
    sim.clear_requests();

    let mut generations = Vec::new();
    for (a, o) in all_objects() {
        let applied = applier.apply(&a, &o, None).await?;
        assert_eq!(applied.action, Action::Created, "{}", a.kind);
        generations.push(applied.generation);
    }
    let writes: Vec<_> = operand_requests(&sim);
    assert_eq!(
        writes.len(),
        all_objects().len(),
        "one request per object: {writes:#?}"
    );
    assert!(
        writes.iter().all(|r| r.verb == "create" && r.code == 201),
        "{writes:#?}"
    );

    // Immediately (before the watch events arrive) and again after the caches caught up.
    for round in 0..2 {
        sim.clear_requests();
        for ((a, o), generation) in all_objects().into_iter().zip(&generations) {
            let applied = applier.apply(&a, &o, *generation).await?;
            assert_eq!(
                applied.action,
                Action::Unchanged,
                "round {round}: {}",
                a.kind
            );
        }
        let requests: Vec<_> = sim
            .requests()
            .into_iter()
            .filter(|r| r.user == "operator" && r.verb != "watch")
            .collect();
        assert!(
            requests.is_empty(),
            "round {round}: steady state made requests: {requests:#?}"
        );
        // Wait until every cached object is the one we wrote.
        for (a, o) in all_objects() {
            let ns = o.metadata.namespace.as_deref();
            let name = o.metadata.name.clone().unwrap_or_default();
            eventually("the cache to see our writes", || {
                let found = cache.object(&a, ns, &name).is_some();
                async move { found.then_some(()) }
            })
            .await;
        }
    }
    Ok(())
}

#[tokio::test]
async fn user_spec_edit_is_stomped_user_label_kept_our_label_restored() -> TestResult {
    let (sim, client) = start().await;
    create_namespace(&client).await;
    let cache = cache_for(&client, &[]).await;
    let applier = Applier::new(client.clone(), cache.clone(), recorder(&client));
    let created = applier.apply(&deployment_ar(), &deployment(), None).await?;
    let gen1 = created.generation;

    let user = client_for(&sim, "admin").await;
    let api: Api<DynamicObject> = Api::namespaced_with(user, NS, &deployment_ar());
    let edit =
        json!({"metadata": {"labels": {"user": "mine", "app": "hacked"}}, "spec": {"replicas": 5}});
    api.patch("controller", &PatchParams::default(), &Patch::Merge(&edit))
        .await?;
    eventually("the cache to see the user's edit", || {
        let g = cache
            .object(&deployment_ar(), Some(NS), "controller")
            .and_then(|o| o.metadata.generation);
        async move { (g > gen1).then_some(()) }
    })
    .await;

    let applied = applier.apply(&deployment_ar(), &deployment(), gen1).await?;
    assert_eq!(applied.action, Action::Updated);
    let live = api.get("controller").await?;
    assert_eq!(
        live.data["spec"]["replicas"], 2,
        "the spec edit is reverted"
    );
    let labels = live.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels.get("user").map(String::as_str),
        Some("mine"),
        "user label kept"
    );
    assert_eq!(
        labels.get("app").map(String::as_str),
        Some("controller"),
        "our label restored"
    );
    assert!(
        live.metadata
            .annotations
            .unwrap_or_default()
            .contains_key(SPEC_HASH_ANNOTATION),
        "spec hash annotation set"
    );

    // The generation the engine reports is the one to record: the next apply is a no-op.
    sim.clear_requests();
    let again = applier
        .apply(&deployment_ar(), &deployment(), applied.generation)
        .await?;
    assert_eq!(again.action, Action::Unchanged);
    // Without a recorded generation, library-go writes once (expected generation -1).
    let forced = applier.apply(&deployment_ar(), &deployment(), None).await?;
    assert_eq!(forced.action, Action::Updated);

    // A desired spec change reaches the object through the spec hash.
    let mut changed = deployment();
    changed.data["spec"]["template"]["spec"]["containers"][0]["image"] = json!("driver:2");
    let applied = applier
        .apply(&deployment_ar(), &changed, forced.generation)
        .await?;
    assert_eq!(applied.action, Action::Updated);
    let live = api.get("controller").await?;
    assert_eq!(
        live.data["spec"]["template"]["spec"]["containers"][0]["image"],
        "driver:2"
    );
    Ok(())
}

#[tokio::test]
async fn key_with_dash_suffix_deletes_the_label() -> TestResult {
    let (_sim, client) = start().await;
    create_namespace(&client).await;
    let cache = cache_for(&client, &[]).await;
    let applier = Applier::new(client.clone(), cache, recorder(&client));
    let mut sa = service_account();
    sa.metadata.labels = Some([("old".to_string(), "x".to_string())].into());
    applier.apply(&sa_ar(), &sa, None).await?;
    sa.metadata.labels = Some([("old-".to_string(), String::new())].into());
    let applied = applier.apply(&sa_ar(), &sa, None).await?;
    assert_eq!(applied.action, Action::Updated);
    let live: Api<DynamicObject> = Api::namespaced_with(client, NS, &sa_ar());
    let labels = live
        .get("controller-sa")
        .await?
        .metadata
        .labels
        .unwrap_or_default();
    assert!(
        !labels.contains_key("old") && !labels.contains_key("old-"),
        "{labels:?}"
    );
    Ok(())
}

#[tokio::test]
async fn storage_class_parameter_change_recreates_and_keeps_the_admins_default_choice() -> TestResult
{
    let (sim, client) = start().await;
    create_namespace(&client).await;
    let cache = cache_for(&client, &[]).await;
    let applier = Applier::new(client.clone(), cache.clone(), recorder(&client));
    applier
        .apply(&sc_ar(), &storage_class(json!({"type": "standard"})), None)
        .await?;

    // The admin makes another class the default and un-defaults ours.
    let admin = client_for(&sim, "admin").await;
    let api: Api<DynamicObject> = Api::all_with(admin, &sc_ar());
    let patch = json!({"metadata": {"annotations": {"storageclass.kubernetes.io/is-default-class": "false"}}});
    api.patch(
        "standard-csi",
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    eventually("the cache to see the admin's choice", || {
        let v = cache
            .object(&sc_ar(), None, "standard-csi")
            .and_then(|o| o.metadata.annotations.clone())
            .and_then(|a| {
                a.get("storageclass.kubernetes.io/is-default-class")
                    .cloned()
            });
        async move { (v.as_deref() == Some("false")).then_some(()) }
    })
    .await;

    // Same parameters: the admin's value is kept, nothing is written.
    sim.clear_requests();
    let same = applier
        .apply(&sc_ar(), &storage_class(json!({"type": "standard"})), None)
        .await?;
    assert_eq!(same.action, Action::Unchanged);
    assert!(operand_requests(&sim).is_empty());

    let applied = applier
        .apply(&sc_ar(), &storage_class(json!({"type": "fast"})), None)
        .await?;
    assert_eq!(applied.action, Action::Recreated);
    let verbs: Vec<_> = operand_requests(&sim).into_iter().map(|r| r.verb).collect();
    assert_eq!(verbs, ["delete", "create"]);
    let live = api.get("standard-csi").await?;
    assert_eq!(live.data["parameters"]["type"], "fast");
    assert_eq!(
        live.metadata.annotations.unwrap_or_default()["storageclass.kubernetes.io/is-default-class"],
        "false",
        "the admin's default-class choice survives the re-create"
    );

    // A mutable field (allowVolumeExpansion) is updated in place.
    let mut sc = storage_class(json!({"type": "fast"}));
    sc.data["allowVolumeExpansion"] = json!(false);
    sim.clear_requests();
    let applied = applier.apply(&sc_ar(), &sc, None).await?;
    assert_eq!(applied.action, Action::Updated);
    Ok(())
}

#[tokio::test]
async fn storage_class_recreate_blocked_by_a_finalizer_is_reported_like_library_go() -> TestResult {
    let (sim, client) = start().await;
    create_namespace(&client).await;
    let cache = cache_for(&client, &[]).await;
    let applier = Applier::new(client.clone(), cache.clone(), recorder(&client));
    applier
        .apply(&sc_ar(), &storage_class(json!({"type": "standard"})), None)
        .await?;
    let admin = client_for(&sim, "admin").await;
    let api: Api<DynamicObject> = Api::all_with(admin, &sc_ar());
    let patch = json!({"metadata": {"finalizers": ["example.com/hold"]}});
    api.patch(
        "standard-csi",
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    eventually("the cache to see the finalizer", || {
        let has = cache
            .object(&sc_ar(), None, "standard-csi")
            .is_some_and(|o| o.metadata.finalizers.is_some());
        async move { has.then_some(()) }
    })
    .await;
    let err = applier
        .apply(&sc_ar(), &storage_class(json!({"type": "fast"})), None)
        .await
        .expect_err("the old class is still there");
    assert!(matches!(err, ApplyError::RecreatePending { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "failed to re-create StorageClass standard-csi, waiting for the original object to be deleted"
    );
    Ok(())
}

#[tokio::test]
async fn csidriver_spec_change_recreates_and_metadata_change_updates() -> TestResult {
    let (sim, client) = start().await;
    create_namespace(&client).await;
    let cache = cache_for(&client, &[]).await;
    let applier = Applier::new(client.clone(), cache, recorder(&client));
    let first = applier
        .apply(&csidriver_ar(), &csi_driver(true), None)
        .await?;
    sim.clear_requests();
    let applied = applier
        .apply(&csidriver_ar(), &csi_driver(false), None)
        .await?;
    assert_eq!(applied.action, Action::Recreated);
    assert_ne!(
        applied.object.metadata.uid, first.object.metadata.uid,
        "a new object"
    );
    assert_eq!(applied.object.data["spec"]["attachRequired"], false);
    let verbs: Vec<_> = operand_requests(&sim).into_iter().map(|r| r.verb).collect();
    assert_eq!(verbs, ["delete", "create"]);

    let mut labelled = csi_driver(false);
    labelled.metadata.labels = Some([("extra".to_string(), "yes".to_string())].into());
    let applied = applier.apply(&csidriver_ar(), &labelled, None).await?;
    assert_eq!(applied.action, Action::Updated);
    Ok(())
}

#[tokio::test]
async fn injected_ca_bundle_is_preserved() -> TestResult {
    let (sim, client) = start().await;
    create_namespace(&client).await;
    let cache = cache_for(&client, &[]).await;
    let applier = Applier::new(client.clone(), cache.clone(), recorder(&client));
    applier.apply(&configmap_ar(), &configmap(), None).await?;

    // The Cluster Network Operator injects the trusted bundle.
    let cno = client_for(&sim, "cno").await;
    let api: Api<ConfigMap> = Api::namespaced(cno, NS);
    let patch = json!({"data": {"ca-bundle.crt": "-----BEGIN CERTIFICATE-----"}});
    api.patch("trusted-ca", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    eventually("the cache to see the bundle", || {
        let has = cache
            .object(&configmap_ar(), Some(NS), "trusted-ca")
            .is_some_and(|o| o.data["data"].get("ca-bundle.crt").is_some());
        async move { has.then_some(()) }
    })
    .await;

    sim.clear_requests();
    let applied = applier.apply(&configmap_ar(), &configmap(), None).await?;
    assert_eq!(
        applied.action,
        Action::Unchanged,
        "the injected key does not count as drift"
    );
    assert!(operand_requests(&sim).is_empty());

    let mut changed = configmap();
    changed.data["data"]["other"] = json!("y");
    let applied = applier.apply(&configmap_ar(), &changed, None).await?;
    assert_eq!(applied.action, Action::Updated);
    let live = api.get("trusted-ca").await?.data.unwrap_or_default();
    assert_eq!(
        live.get("ca-bundle.crt").map(String::as_str),
        Some("-----BEGIN CERTIFICATE-----")
    );
    assert_eq!(live.get("other").map(String::as_str), Some("y"));

    // Without the label, extra keys are removed (data is replaced wholesale).
    let mut plain = changed.clone();
    plain.metadata.labels = None;
    plain.metadata.name = Some("plain".into());
    applier.apply(&configmap_ar(), &plain, None).await?;
    api.patch(
        "plain",
        &PatchParams::default(),
        &Patch::Merge(&json!({"data": {"stray": "z"}})),
    )
    .await?;
    let applied = eventually("the engine to notice the stray key", || {
        let applier = &applier;
        let plain = plain.clone();
        async move {
            let a = applier.apply(&configmap_ar(), &plain, None).await.ok()?;
            (a.action == Action::Updated).then_some(a)
        }
    })
    .await;
    assert!(applied.object.data["data"].get("stray").is_none());
    Ok(())
}

#[tokio::test]
async fn conflict_costs_one_get_and_one_retry() -> TestResult {
    let (sim, client) = start().await;
    create_namespace(&client).await;
    let cache = cache_for(&client, &[]).await;
    let applier = Applier::new(client.clone(), cache, recorder(&client));
    applier.apply(&configmap_ar(), &configmap(), None).await?;
    sim.inject(Fault {
        matches: RequestMatch {
            verb: "update".into(),
            resource: "configmaps".into(),
            ..Default::default()
        },
        code: 409,
        times: 1,
        latency_ms: 0,
    });
    sim.clear_requests();
    let mut changed = configmap();
    changed.data["data"]["other"] = json!("changed");
    let applied = applier.apply(&configmap_ar(), &changed, None).await?;
    assert_eq!(applied.action, Action::Updated);
    let seen: Vec<_> = operand_requests(&sim)
        .into_iter()
        .map(|r| (r.verb, r.code))
        .collect();
    assert_eq!(
        seen,
        [
            ("update".to_string(), 409),
            ("get".to_string(), 200),
            ("update".to_string(), 200)
        ]
    );
    Ok(())
}

#[tokio::test]
async fn missing_servicemonitor_crd_is_kind_not_served() -> TestResult {
    let (sim, client) = start().await;
    create_namespace(&client).await;
    // Watched: the cache learns the kind is not served, so the apply makes no request.
    let cache = cache_for(&client, &[(servicemonitor_ar(), service_monitor())]).await;
    let applier = Applier::new(client.clone(), cache, recorder(&client));
    sim.clear_requests();
    let err = applier
        .apply(&servicemonitor_ar(), &service_monitor(), None)
        .await
        .expect_err("no CRD");
    assert!(matches!(err, ApplyError::KindNotServed { .. }), "{err:?}");
    assert!(err.to_string().contains("ServiceMonitor"), "{err}");
    assert!(
        operand_requests(&sim).is_empty(),
        "{:#?}",
        operand_requests(&sim)
    );

    // Not watched: a live read finds out the same.
    let bare = Applier::new(
        client.clone(),
        CacheBuilder::new(client.clone(), [NS]).start(),
        recorder(&client),
    );
    let err = bare
        .apply(&servicemonitor_ar(), &service_monitor(), None)
        .await
        .expect_err("no CRD");
    assert!(matches!(err, ApplyError::KindNotServed { .. }), "{err:?}");
    // Deleting an object of a kind that is not served is not an error.
    assert!(
        !bare
            .delete(&servicemonitor_ar(), Some(NS), "metrics")
            .await?
    );
    Ok(())
}

#[tokio::test]
async fn volume_snapshot_class_annotations_are_restored_and_idle_is_quiet() -> TestResult {
    let (sim, client) = start().await;
    create_namespace(&client).await;
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ar(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
        ),
    );
    crds.create(&Default::default(), &obj(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "volumesnapshotclasses.snapshot.storage.k8s.io",
            "annotations": {"api-approved.kubernetes.io": "https://github.com/kubernetes-csi/external-snapshotter/pull/419"}},
        "spec": {
            "group": "snapshot.storage.k8s.io", "scope": "Cluster",
            "names": {"plural": "volumesnapshotclasses", "singular": "volumesnapshotclass",
                      "kind": "VolumeSnapshotClass", "listKind": "VolumeSnapshotClassList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "driver": {"type": "string"}, "deletionPolicy": {"type": "string"},
                    "parameters": {"type": "object", "additionalProperties": {"type": "string"}}}}}}]
        }
    }))).await?;
    let vsc = obj(json!({
        "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
        "metadata": {"name": "standard-csi",
            "annotations": {"snapshot.storage.kubernetes.io/is-default-class": "true"}},
        "driver": "cinder.csi.openstack.org", "deletionPolicy": "Delete"
    }));
    let cache = eventually(
        "the VolumeSnapshotClass kind to be served and cached",
        || {
            let client = client.clone();
            let vsc = vsc.clone();
            async move {
                let cache = cache_for(&client, &[(vsc_ar(), vsc.clone())]).await;
                matches!(
                    cache.lookup(&vsc_ar(), None, "standard-csi"),
                    operator_kit::cache::Lookup::Absent { .. }
                )
                .then_some(cache)
            }
        },
    )
    .await;
    let applier = Applier::new(client.clone(), cache.clone(), recorder(&client));
    assert_eq!(
        applier.apply(&vsc_ar(), &vsc, None).await?.action,
        Action::Created
    );

    let admin = client_for(&sim, "admin").await;
    let api: Api<DynamicObject> = Api::all_with(admin, &vsc_ar());
    let patch = json!({"metadata": {"annotations": {"snapshot.storage.kubernetes.io/is-default-class": null}}});
    api.patch(
        "standard-csi",
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    eventually("the cache to see the removed annotation", || {
        let gone = cache
            .object(&vsc_ar(), None, "standard-csi")
            .is_some_and(|o| o.metadata.annotations.as_ref().is_none_or(|a| a.is_empty()));
        async move { gone.then_some(()) }
    })
    .await;
    assert_eq!(
        applier.apply(&vsc_ar(), &vsc, None).await?.action,
        Action::Updated
    );
    let live = api.get("standard-csi").await?;
    assert_eq!(
        live.metadata.annotations.unwrap_or_default()["snapshot.storage.kubernetes.io/is-default-class"],
        "true",
        "the annotation is restored (OpenShift's controller leaves it removed)"
    );
    sim.clear_requests();
    for _ in 0..3 {
        assert_eq!(
            applier.apply(&vsc_ar(), &vsc, None).await?.action,
            Action::Unchanged
        );
    }
    assert!(operand_requests(&sim).is_empty(), "no PUT at every resync");
    Ok(())
}

#[tokio::test]
async fn writes_record_events_without_secret_values() -> TestResult {
    let (_sim, client) = start().await;
    create_namespace(&client).await;
    let cache = cache_for(&client, &[]).await;
    let applier = Applier::new(client.clone(), cache.clone(), recorder(&client));
    applier.apply(&deployment_ar(), &deployment(), None).await?;
    applier.apply(&secret_ar(), &secret(), None).await?;
    let mut changed = secret();
    changed.data["stringData"]["password"] = json!("another-s3cr3t");
    applier.apply(&secret_ar(), &changed, None).await?;
    assert!(
        applier
            .delete(&deployment_ar(), Some(NS), "controller")
            .await?
    );

    // A cluster-scoped CR's Events live in `default`.
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let list = events.list(&ListParams::default()).await?;
    let reasons: Vec<_> = list.items.iter().filter_map(|e| e.reason.clone()).collect();
    for want in [
        "DeploymentCreated",
        "SecretCreated",
        "SecretUpdated",
        "DeploymentDeleted",
    ] {
        assert!(
            reasons.iter().any(|r| r == want),
            "{want} missing from {reasons:?}"
        );
    }
    for e in &list.items {
        assert_eq!(e.involved_object.name.as_deref(), Some(CR_NAME));
        assert_eq!(e.involved_object.kind.as_deref(), Some("ClusterCSIDriver"));
        let message = e.message.clone().unwrap_or_default();
        assert!(
            !message.contains("s3cr3t"),
            "secret value in an event: {message}"
        );
    }
    let created = list
        .items
        .iter()
        .find(|e| e.reason.as_deref() == Some("DeploymentCreated"))
        .and_then(|e| e.message.clone());
    assert_eq!(
        created.as_deref(),
        Some("Created Deployment.apps/controller -n operator-ns because it was missing")
    );

    // Deleting what is already gone costs nothing once the cache saw the deletion.
    eventually("the cache to see the deletion", || {
        let gone = cache
            .object(&deployment_ar(), Some(NS), "controller")
            .is_none();
        async move { gone.then_some(()) }
    })
    .await;
    assert!(
        !applier
            .delete(&deployment_ar(), Some(NS), "controller")
            .await?
    );
    Ok(())
}

/// Inside `alongside` (a reconcile) an Event never stands between one write and the next:
/// with every Event write taking 400 ms, all three objects are created before the second
/// Event arrives, and every Event is still written by the time `alongside` returns. A
/// cancelled scope (a lost lease) writes none of what it queued.
#[tokio::test]
async fn events_are_written_beside_the_work_and_not_after_it_is_cancelled() -> TestResult {
    let (sim, client) = start().await;
    create_namespace(&client).await;
    let cache = cache_for(&client, &[]).await;
    let events = recorder(&client);
    let applier = Applier::new(client.clone(), cache.clone(), events.clone());
    sim.inject(Fault {
        matches: RequestMatch {
            verb: "create".into(),
            resource: "events".into(),
            ..Default::default()
        },
        code: 0,
        times: 0,
        latency_ms: 400,
    });
    sim.clear_requests();
    events
        .alongside(async {
            applier.apply(&deployment_ar(), &deployment(), None).await?;
            applier.apply(&secret_ar(), &secret(), None).await?;
            applier.apply(&sa_ar(), &service_account(), None).await?;
            Ok::<_, ApplyError>(())
        })
        .await?;
    let creates: Vec<bool> = sim
        .requests()
        .iter()
        .filter(|r| r.verb == "create")
        .map(|r| r.resource.ends_with("events"))
        .collect();
    let last_object = creates.iter().rposition(|is_event| !is_event);
    let events_before = creates[..last_object.unwrap_or(0)]
        .iter()
        .filter(|is_event| **is_event)
        .count();
    assert!(
        events_before <= 1,
        "an Event write held up the next object: {creates:?} (true = Event)"
    );
    assert_eq!(
        creates.iter().filter(|is_event| **is_event).count(),
        3,
        "every Event is written before `alongside` returns: {creates:?}"
    );

    // Cancelled while its first Event is in flight: that one may land, the rest never do.
    sim.clear_requests();
    let scope = events.alongside(async {
        applier
            .delete(&deployment_ar(), Some(NS), "controller")
            .await?;
        applier.delete(&sa_ar(), Some(NS), "controller-sa").await?;
        std::future::pending::<()>().await;
        Ok::<_, ApplyError>(())
    });
    let cancelled = tokio::time::timeout(Duration::from_millis(200), scope).await;
    assert!(cancelled.is_err(), "the work never ends by itself");
    tokio::time::sleep(Duration::from_millis(600)).await;
    let written = sim
        .requests()
        .iter()
        .filter(|r| r.verb == "create" && r.resource.ends_with("events"))
        .count();
    assert!(
        written <= 1,
        "{written} Events written after the scope was cancelled"
    );

    // Outside a scope, an Event is written before `record` returns, as before (a repeat of
    // the first DeploymentCreated, so a patch of its count).
    sim.clear_faults();
    sim.clear_requests();
    applier.apply(&deployment_ar(), &deployment(), None).await?;
    let writes: Vec<(String, bool)> = sim
        .requests()
        .iter()
        .filter(|r| r.is_write())
        .map(|r| (r.verb.clone(), r.resource.ends_with("events")))
        .collect();
    assert_eq!(
        writes,
        [("create".to_string(), false), ("patch".to_string(), true)]
    );
    Ok(())
}

#[tokio::test]
async fn user_deleting_an_object_gets_it_recreated() -> TestResult {
    let (sim, client) = start().await;
    create_namespace(&client).await;
    let cache = cache_for(&client, &[]).await;
    let applier = Applier::new(client.clone(), cache.clone(), recorder(&client));
    applier.apply(&sa_ar(), &service_account(), None).await?;
    let admin = client_for(&sim, "admin").await;
    let api: Api<DynamicObject> = Api::namespaced_with(admin, NS, &sa_ar());
    api.delete("controller-sa", &Default::default()).await?;
    let applied = eventually("the engine to re-create the deleted object", || {
        let applier = &applier;
        async move {
            let a = applier
                .apply(&sa_ar(), &service_account(), None)
                .await
                .ok()?;
            (a.action == Action::Created).then_some(a)
        }
    })
    .await;
    assert_eq!(applied.action, Action::Created);
    Ok(())
}

/// Objects that existed before the operator started come from the caches' initial list, where
/// (as on a real server) items carry no apiVersion/kind; updating them must still send a
/// complete object.
#[tokio::test]
async fn objects_listed_at_start_can_be_updated() -> TestResult {
    let (_sim, client) = start().await;
    create_namespace(&client).await;
    let cms: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &configmap_ar());
    let mut old = configmap();
    old.data["data"] = json!({"stale": "value"});
    cms.create(&Default::default(), &old).await?;
    let cache = cache_for(&client, &[]).await;
    let applier = Applier::new(client.clone(), cache.clone(), recorder(&client));
    let applied = applier.apply(&configmap_ar(), &configmap(), None).await?;
    assert_eq!(applied.action, Action::Updated);
    let live = cms
        .get(configmap().metadata.name.as_deref().unwrap_or_default())
        .await?;
    assert!(live.data["data"].get("stale").is_none(), "{:?}", live.data);
    Ok(())
}

/// An object in a namespace the operator does not own is watched by name, so RBAC can grant
/// exactly that name: with only `resourceNames: [one]` the watch syncs and the apply engine
/// reads the object from the cache (no live GET); the neighbour stays invisible.
#[tokio::test]
async fn a_namespaced_object_watched_by_name_needs_only_that_name() -> TestResult {
    let sim = KubeSim::start(
        SimConfig {
            rbac: Some(kube_sim::RbacConfig::default()),
            ..SimConfig::default()
        },
        "127.0.0.1:0".parse()?,
    )
    .await?;
    let admin = client_for(&sim, "admin").await;
    create_namespace(&admin).await;
    let rbac: Vec<(ApiResource, Value)> = vec![
        (
            ar("rbac.authorization.k8s.io", "v1", "Role", "roles"),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "one", "namespace": NS},
                   "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                              "resourceNames": ["mine"],
                              "verbs": ["get", "list", "watch", "update", "patch"]}]}),
        ),
        (
            ar(
                "rbac.authorization.k8s.io",
                "v1",
                "RoleBinding",
                "rolebindings",
            ),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "one", "namespace": NS},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "one"},
                   "subjects": [{"kind": "User", "name": "pinned"}]}),
        ),
    ];
    for (ar, body) in rbac {
        Api::<DynamicObject>::namespaced_with(admin.clone(), NS, &ar)
            .create(&Default::default(), &obj(body))
            .await?;
    }
    let cms: Api<DynamicObject> = Api::namespaced_with(admin.clone(), NS, &configmap_ar());
    for name in ["mine", "neighbour"] {
        cms.create(
            &Default::default(),
            &obj(json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name, "namespace": NS}, "data": {"k": "old"}})),
        )
        .await?;
    }
    let client = client_for(&sim, "pinned").await;
    let cache = CacheBuilder::new(client.clone(), Vec::<String>::new())
        .namespaced_object(&configmap_ar(), NS, "mine")
        .start();
    tokio::time::timeout(DEADLINE, cache.wait_until_ready()).await?;
    assert!(cache.object(&configmap_ar(), Some(NS), "mine").is_some());
    assert!(
        cache
            .object(&configmap_ar(), Some(NS), "neighbour")
            .is_none()
    );
    sim.clear_requests();
    let applier = Applier::new(client.clone(), cache.clone(), recorder(&admin));
    let desired = obj(json!({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "mine", "namespace": NS}, "data": {"k": "new"}}));
    let applied = applier.apply(&configmap_ar(), &desired, None).await?;
    assert_eq!(applied.action, Action::Updated);
    let by_pinned: Vec<String> = sim
        .requests()
        .iter()
        .filter(|r| r.user == "pinned" && r.verb != "watch")
        .map(|r| format!("{} {} {}", r.verb, r.resource, r.name))
        .collect();
    assert_eq!(by_pinned, ["update /configmaps mine"], "no live GET");
    assert!(
        sim.forbidden_requests().is_empty(),
        "{:?}",
        sim.forbidden_requests()
    );
    Ok(())
}

/// A watch RBAC refuses does not hold the operator up: the cache settles (`Forbidden`), and
/// a step that needs the object reads it live and reports the 403 that says what is missing.
#[tokio::test]
async fn a_forbidden_watch_settles_and_the_step_reports_the_403() -> TestResult {
    let sim = KubeSim::start(
        SimConfig {
            rbac: Some(kube_sim::RbacConfig::default()),
            ..SimConfig::default()
        },
        "127.0.0.1:0".parse()?,
    )
    .await?;
    let admin = client_for(&sim, "admin").await;
    create_namespace(&admin).await;
    let client = client_for(&sim, "nobody").await;
    let cache = CacheBuilder::new(client.clone(), [NS])
        .namespaced(&configmap_ar())
        .start();
    tokio::time::timeout(DEADLINE, cache.wait_until_ready()).await?;
    assert!(
        cache
            .states()
            .iter()
            .all(|(_, _, s)| *s == operator_kit::cache::SyncState::Forbidden),
        "{:?}",
        cache.states()
    );
    let applier = Applier::new(client.clone(), cache.clone(), recorder(&admin));
    let err = applier
        .apply(&configmap_ar(), &configmap(), None)
        .await
        .expect_err("forbidden");
    let text = err.to_string();
    assert!(
        text.contains("forbidden") && text.contains("configmaps"),
        "{text}"
    );
    Ok(())
}

fn widget_ar() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    )
}

/// Idle means idle on clusters without an optional CRD (no snapshot controller, no
/// monitoring): a watch of a kind that is not served waits on a watch of its CRD instead of
/// listing the kind again and again, and picks the kind up within seconds of the CRD's
/// creation.
#[tokio::test]
async fn a_kind_that_is_not_served_costs_no_request_until_its_crd_appears() -> TestResult {
    let (sim, admin) = start().await;
    let cache = CacheBuilder::new(admin.clone(), [NS])
        .cluster_object(&widget_ar(), "blue")
        .start();
    tokio::time::timeout(DEADLINE, cache.wait_until_ready()).await?;
    assert_eq!(
        cache.states()[0].2,
        operator_kit::cache::SyncState::NotServed
    );
    eventually("a watch on the missing kind's CRD", || async {
        sim.requests()
            .iter()
            .any(|r| r.verb == "watch" && r.resource.ends_with("customresourcedefinitions"))
            .then_some(())
    })
    .await;
    sim.clear_requests();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let polls: Vec<String> = sim
        .requests()
        .into_iter()
        .filter(|r| r.verb != "watch")
        .map(|r| format!("{} {}?{}", r.verb, r.path, r.query))
        .collect();
    assert!(polls.is_empty(), "idle requests: {polls:#?}");

    let crd: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    }))?;
    let crd_ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    );
    Api::<DynamicObject>::all_with(admin.clone(), &crd_ar)
        .create(&Default::default(), &crd)
        .await?;
    eventually("the kind to be watched once its CRD exists", || async {
        (cache.states()[0].2 == operator_kit::cache::SyncState::Synced).then_some(())
    })
    .await;
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "blue"}
    }))?;
    Api::<DynamicObject>::all_with(admin.clone(), &widget_ar())
        .create(&Default::default(), &widget)
        .await?;
    eventually("the new object in the cache", || async {
        matches!(
            cache.lookup(&widget_ar(), None, "blue"),
            operator_kit::cache::Lookup::Found(_)
        )
        .then_some(())
    })
    .await;
    Ok(())
}

/// StorageClasses whose names are known only at run time (Manila's, one per share type) are
/// covered by one label-selected watch: a labelled class is read from the cache, a new one is
/// created with one request, a class that exists without the label (made by an earlier
/// operator) gets the label through a 409 and a live read, and the count of watches stays one
/// whatever the number of classes.
#[tokio::test]
async fn label_selected_classes_are_one_watch_and_an_unlabelled_class_is_adopted() -> TestResult {
    let (sim, client) = start().await;
    let class = |name: &str, labelled: bool| {
        let mut o = storage_class(json!({"type": "default"}));
        o.metadata.name = Some(name.to_string());
        o.metadata.annotations = None;
        if labelled {
            o.metadata.labels = Some(
                [(
                    "example.com/share-type-class".to_string(),
                    "true".to_string(),
                )]
                .into(),
            );
        }
        o
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &sc_ar());
    api.create(&Default::default(), &class("left-by-old-operator", false))
        .await?;
    let cache = CacheBuilder::new(client.clone(), Vec::<String>::new())
        .cluster_selected(&sc_ar(), "example.com/share-type-class=true")
        .start();
    tokio::time::timeout(DEADLINE, cache.wait_until_ready()).await?;
    let applier = Applier::new(client.clone(), cache.clone(), recorder(&client));
    sim.clear_requests();
    for i in 0..20 {
        let applied = applier
            .apply(&sc_ar(), &class(&format!("class-{i}"), true), None)
            .await?;
        assert_eq!(applied.action, Action::Created);
    }
    let writes = operand_requests(&sim);
    assert_eq!(
        writes.len(),
        20,
        "one create per class, no GET: {writes:#?}"
    );

    sim.clear_requests();
    let adopted = applier
        .apply(&sc_ar(), &class("left-by-old-operator", true), None)
        .await?;
    assert_eq!(adopted.action, Action::Updated);
    let live = api.get("left-by-old-operator").await?;
    assert_eq!(
        live.metadata
            .labels
            .unwrap_or_default()
            .get("example.com/share-type-class")
            .map(String::as_str),
        Some("true")
    );

    // Once the watch has seen them, every class is answered from the cache.
    eventually("the watch to see the adopted class", || async {
        matches!(
            cache.lookup(&sc_ar(), None, "left-by-old-operator"),
            operator_kit::cache::Lookup::Found(_)
        )
        .then_some(())
    })
    .await;
    sim.clear_requests();
    for i in 0..20 {
        let applied = applier
            .apply(&sc_ar(), &class(&format!("class-{i}"), true), None)
            .await?;
        assert_eq!(applied.action, Action::Unchanged);
    }
    assert!(
        operand_requests(&sim).is_empty(),
        "{:#?}",
        operand_requests(&sim)
    );
    let watches = sim
        .requests()
        .into_iter()
        .filter(|r| r.verb == "watch" && r.resource.ends_with("storageclasses"))
        .count();
    assert!(watches <= 1, "{watches} StorageClass watches");
    Ok(())
}

/// `delete_owned` deletes only what the caller's predicate calls ours: read live when no watch
/// covers the object, and, when the cache is stale, never an object someone else created
/// under the same name after the one the cache shows was deleted (the uid precondition).
#[tokio::test]
async fn delete_owned_deletes_only_what_is_ours() -> TestResult {
    let (sim, client) = start().await;
    let admin = client_for(&sim, "admin").await;
    let classes: Api<DynamicObject> = Api::all_with(admin, &sc_ar());
    let class = |name: &str, owner: &str| {
        obj(
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name, "labels": {"owner": owner}},
            "provisioner": "example.com/x"}),
        )
    };
    let ours = |o: &DynamicObject| {
        o.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("owner"))
            .is_some_and(|v| v == "us")
    };
    for (name, owner) in [("theirs", "them"), ("ours", "us"), ("replaced", "us")] {
        classes
            .create(&Default::default(), &class(name, owner))
            .await?;
    }

    // No watch covers "theirs" and "ours": read live.
    let uncached = CacheBuilder::new(client.clone(), [NS]).start();
    let applier = Applier::new(client.clone(), uncached, recorder(&client));
    assert!(!applier.delete_owned(&sc_ar(), None, "theirs", ours).await?);
    assert!(applier.delete_owned(&sc_ar(), None, "ours", ours).await?);
    assert!(
        !applier
            .delete_owned(&sc_ar(), None, "missing", ours)
            .await?
    );
    assert!(classes.get_opt("theirs").await?.is_some(), "not ours: kept");
    assert!(classes.get_opt("ours").await?.is_none(), "ours: deleted");

    // A cache that still shows our "replaced" after it was deleted and someone else's class
    // took the name.
    let cache = CacheBuilder::new(client.clone(), [NS])
        .cluster_object(&sc_ar(), "replaced")
        .start();
    tokio::time::timeout(DEADLINE, cache.wait_until_ready()).await?;
    sim.inject(Fault {
        matches: RequestMatch {
            verb: "watch".into(),
            resource: "storageclasses".into(),
            ..Default::default()
        },
        code: 0,
        times: 0,
        latency_ms: 5_000,
    });
    sim.drop_watches();
    classes.delete("replaced", &Default::default()).await?;
    classes
        .create(&Default::default(), &class("replaced", "them"))
        .await?;
    let stale = Applier::new(client.clone(), cache.clone(), recorder(&client));
    assert!(
        cache
            .object(&sc_ar(), None, "replaced")
            .is_some_and(|o| ours(&o)),
        "the cache still shows ours"
    );
    assert!(!stale.delete_owned(&sc_ar(), None, "replaced", ours).await?);
    let survivor = classes.get_opt("replaced").await?.expect("kept");
    assert!(
        !ours(&survivor),
        "someone else's class survives a stale view"
    );
    Ok(())
}
