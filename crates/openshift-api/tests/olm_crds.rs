//! OLM's Subscription and ClusterServiceVersion CRDs and the old `ManilaDriver` CRD against
//! kube-sim: they are accepted and served under upstream's names, scope and short names, the
//! server validates what upstream's schema requires (with a message naming the field), the
//! status subresource works, and the old CR's finalizers behave as the CSO's OLM removal flow
//! expects (a delete leaves it terminating until the finalizers are stripped).

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ObjectMeta, Patch,
    PatchParams, PostParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use kube_sim::{KubeSim, SimConfig};
use openshift_api::crds;
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

const NS: &str = "openshift-manila-csi-driver-operator";

async fn start() -> (KubeSim, Client) {
    let sim = KubeSim::start(SimConfig::default(), "127.0.0.1:0".parse().unwrap())
        .await
        .expect("kube-sim starts");
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let kubeconfig = Kubeconfig::from_yaml(&sim.kubeconfig("test")).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    (sim, Client::try_from(config).unwrap())
}

fn resource(group: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1alpha1", kind), plural)
}

fn subscriptions() -> ApiResource {
    resource("operators.coreos.com", "Subscription", "subscriptions")
}

fn csvs() -> ApiResource {
    resource(
        "operators.coreos.com",
        "ClusterServiceVersion",
        "clusterserviceversions",
    )
}

fn manila_drivers() -> ApiResource {
    resource("csi.openshift.io", "ManilaDriver", "maniladrivers")
}

/// Creates every embedded CRD (as the testbed does) plus a namespace, and waits until the
/// three CRDs under test are served.
async fn install(client: &Client) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds::parsed().expect("embedded CRDs parse") {
        api.create(&PostParams::default(), &crd)
            .await
            .unwrap_or_else(|e| panic!("CRD {:?} accepted: {e}", crd.metadata.name));
    }
    let until = tokio::time::Instant::now() + Duration::from_secs(10);
    for ar in [subscriptions(), csvs(), manila_drivers()] {
        let dynamic: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        while dynamic.list(&Default::default()).await.is_err() {
            assert!(tokio::time::Instant::now() < until, "{} served", ar.kind);
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(NS.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

fn object(v: Value) -> DynamicObject {
    serde_json::from_value(v).expect("test object is a valid DynamicObject")
}

/// The API error status code and message, failing the test on success or transport errors.
fn api_error<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> (u16, String) {
    match r {
        Err(kube::Error::Api(s)) => (s.code, s.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn subscription(spec: Value) -> DynamicObject {
    object(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": "manila-csi-driver-operator", "namespace": NS},
        "spec": spec
    }))
}

#[tokio::test]
async fn discovery_shows_upstream_names_scope_and_short_names() -> TestResult {
    let (_sim, client) = start().await;
    install(&client).await;
    let olm = client
        .list_api_group_resources("operators.coreos.com/v1alpha1")
        .await?;
    let find = |list: &k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList,
                name: &str| {
        list.resources
            .iter()
            .find(|r| r.name == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in discovery"))
    };
    let sub = find(&olm, "subscriptions");
    assert!(sub.namespaced);
    assert_eq!(sub.kind, "Subscription");
    assert_eq!(sub.short_names, Some(vec!["sub".into(), "subs".into()]));
    let csv = find(&olm, "clusterserviceversions");
    assert!(csv.namespaced);
    assert_eq!(csv.short_names, Some(vec!["csv".into(), "csvs".into()]));
    find(&olm, "subscriptions/status");
    find(&olm, "clusterserviceversions/status");
    let old = client
        .list_api_group_resources("csi.openshift.io/v1alpha1")
        .await?;
    let md = find(&old, "maniladrivers");
    assert!(!md.namespaced, "ManilaDriver is cluster-scoped");
    assert_eq!(md.kind, "ManilaDriver");
    Ok(())
}

#[tokio::test]
async fn subscription_round_trips_with_status_and_requires_its_fields() -> TestResult {
    let (_sim, client) = start().await;
    install(&client).await;
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &subscriptions());
    let spec = json!({
        "name": "manila-csi-driver-operator",
        "source": "redhat-operators",
        "sourceNamespace": "openshift-marketplace",
        "channel": "preview",
        "installPlanApproval": "Automatic",
        "startingCSV": "manila-csi-driver-operator.v4.5.0",
        "config": {"env": [{"name": "X", "value": "y"}]}
    });
    api.create(&PostParams::default(), &subscription(spec.clone()))
        .await?;

    // status is only written through /status, and upstream requires lastUpdated in it.
    let status = json!({"status": {
        "currentCSV": "manila-csi-driver-operator.v4.5.0",
        "installedCSV": "manila-csi-driver-operator.v4.5.0",
        "state": "AtLatestKnown",
        "lastUpdated": "2020-08-01T10:00:00Z",
        "installPlanRef": {"kind": "InstallPlan", "name": "install-abcde", "namespace": NS}
    }});
    api.patch_status(
        "manila-csi-driver-operator",
        &PatchParams::default(),
        &Patch::Merge(&status),
    )
    .await?;
    let got = api.get("manila-csi-driver-operator").await?;
    assert_eq!(got.data["spec"], spec);
    assert_eq!(
        got.data["status"]["currentCSV"],
        "manila-csi-driver-operator.v4.5.0"
    );
    assert_eq!(got.data["status"]["state"], "AtLatestKnown");
    assert_eq!(
        got.data["status"]["installPlanRef"]["name"],
        "install-abcde"
    );

    let (code, msg) = api_error(
        api.patch_status(
            "manila-csi-driver-operator",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"lastUpdated": null}})),
        )
        .await,
    );
    assert_eq!(code, 422);
    assert!(msg.contains("status.lastUpdated"), "{msg}");

    // A Subscription without spec.source is rejected, naming the field.
    let mut bad = subscription(json!({"name": "p", "sourceNamespace": "openshift-marketplace"}));
    bad.metadata.name = Some("bad".into());
    let (code, msg) = api_error(api.create(&PostParams::default(), &bad).await);
    assert_eq!(code, 422);
    assert!(msg.contains("spec.source"), "{msg}");
    // A wrongly typed field is rejected too.
    let mut bad = subscription(json!({"name": 7, "source": "s", "sourceNamespace": "n"}));
    bad.metadata.name = Some("bad".into());
    let (code, msg) = api_error(api.create(&PostParams::default(), &bad).await);
    assert_eq!(code, 422);
    assert!(msg.contains("spec.name"), "{msg}");

    // Listing across namespaces is what the CSO does.
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &subscriptions());
    assert_eq!(all.list(&Default::default()).await?.items.len(), 1);
    api.delete("manila-csi-driver-operator", &DeleteParams::default())
        .await?;
    assert!(api.get_opt("manila-csi-driver-operator").await?.is_none());
    Ok(())
}

#[tokio::test]
async fn csv_requires_display_name_and_install_strategy_and_keeps_the_rest() -> TestResult {
    let (_sim, client) = start().await;
    install(&client).await;
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &csvs());
    let csv = |spec: Value| {
        object(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "manila-csi-driver-operator.v4.5.0", "namespace": NS},
            "spec": spec
        }))
    };
    let (code, msg) = api_error(
        api.create(
            &PostParams::default(),
            &csv(json!({"install": {"strategy": "deployment"}})),
        )
        .await,
    );
    assert_eq!(code, 422);
    assert!(msg.contains("spec.displayName"), "{msg}");
    let (code, msg) = api_error(
        api.create(
            &PostParams::default(),
            &csv(json!({"displayName": "Manila", "install": {}})),
        )
        .await,
    );
    assert_eq!(code, 422);
    assert!(msg.contains("spec.install.strategy"), "{msg}");

    let spec = json!({
        "displayName": "Manila CSI Driver Operator",
        "version": "4.5.0",
        "install": {"strategy": "deployment", "spec": {"deployments": [
            {"name": "csi-driver-manila-operator", "spec": {"replicas": 1}}]}},
        "installModes": [{"type": "AllNamespaces", "supported": true}],
        "customresourcedefinitions": {"owned": [{"name": "maniladrivers.csi.openshift.io"}]}
    });
    api.create(&PostParams::default(), &csv(spec.clone()))
        .await?;
    api.patch_status(
        "manila-csi-driver-operator.v4.5.0",
        &PatchParams::default(),
        &Patch::Merge(&json!({"status": {"phase": "Succeeded", "requirementStatus": []}})),
    )
    .await?;
    let got = api.get("manila-csi-driver-operator.v4.5.0").await?;
    assert_eq!(got.data["spec"], spec);
    assert_eq!(got.data["status"]["phase"], "Succeeded");
    Ok(())
}

#[tokio::test]
async fn old_manila_driver_is_named_cluster_and_waits_for_its_finalizers() -> TestResult {
    let (_sim, client) = start().await;
    install(&client).await;
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &manila_drivers());
    // The 4.5 operator's finalizer was `finalizer.manila.csi.openshift.io`, which a real API
    // server accepts on a custom resource (at most with a warning); kube-sim rejects finalizer
    // names without a `/` on every kind, so this test uses a domain-qualified one.
    let cr = |name: &str| {
        object(json!({
            "apiVersion": "csi.openshift.io/v1alpha1", "kind": "ManilaDriver",
            "metadata": {"name": name, "finalizers": ["csi.openshift.io/manila-driver"]},
            "spec": {"anything": {"the": "4.5 operator wrote"}}
        }))
    };
    let (code, msg) = api_error(api.create(&PostParams::default(), &cr("other")).await);
    assert_eq!(code, 422);
    assert!(msg.contains("metadata.name"), "{msg}");

    api.create(&PostParams::default(), &cr("cluster")).await?;
    let got = api.get("cluster").await?;
    assert_eq!(got.data["spec"]["anything"]["the"], "4.5 operator wrote");

    // With the old operator gone nobody removes its finalizer: a delete only marks it.
    api.delete("cluster", &DeleteParams::default()).await?;
    let terminating = api.get("cluster").await?;
    assert!(terminating.metadata.deletion_timestamp.is_some());
    api.patch(
        "cluster",
        &PatchParams::default(),
        &Patch::Merge(&json!({"metadata": {"finalizers": null}})),
    )
    .await?;
    let until = tokio::time::Instant::now() + Duration::from_secs(10);
    while api.get_opt("cluster").await?.is_some() {
        assert!(tokio::time::Instant::now() < until, "ManilaDriver gone");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Ok(())
}
