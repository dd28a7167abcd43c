//! The SMB operator on kube-sim: operator-kit's reconcile around `smb::Smb` installs the driver
//! from its assets alone and reports OpenShift's `Samba…` conditions, with no snapshot-class
//! condition (the driver has no VolumeSnapshotClass).

use std::collections::BTreeMap;
use std::time::Duration;

use kube::api::{Api, DynamicObject, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use kube_sim::{KubeSim, SimConfig};
use operator_kit::csi::{CommonOptions, CsiOperator};
use operator_kit::kinds::known as ar;
use operator_kit::logging::LogControl;
use operator_kit::metrics::Metrics;
use serde_json::{Value, json};

const NS: &str = smb::NAMESPACE;

async fn create(client: &Client, api_version: &str, kind: &str, value: Value) {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar(api_version, kind));
    let obj: DynamicObject = serde_json::from_value(value).expect("object");
    api.create(&PostParams::default(), &obj)
        .await
        .expect("created");
}

/// kube-sim with the ClusterCSIDriver CRD (and, when `snapshot_crd`, the VolumeSnapshotClass
/// one), the namespace, a Ready node and the CR `smb.csi.k8s.io`.
async fn cluster(snapshot_crd: bool) -> (KubeSim, Client) {
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let sim = KubeSim::start(SimConfig::default(), "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("kube-sim");
    let kubeconfig = Kubeconfig::from_yaml(&sim.kubeconfig("admin")).expect("kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("config");
    let client = Client::try_from(config).expect("client");
    let crd = |group: &str, plural: &str, kind: &str, scope: &str| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}"),
            "annotations": {"api-approved.kubernetes.io": "https://github.com/kubernetes-csi/external-snapshotter/pull/419"}},
        "spec": {"group": group, "scope": scope,
            "names": {"plural": plural, "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
    };
    let crds = "apiextensions.k8s.io/v1";
    let c = crd(
        "operator.openshift.io",
        "clustercsidrivers",
        "ClusterCSIDriver",
        "Cluster",
    );
    create(&client, crds, "CustomResourceDefinition", c).await;
    if snapshot_crd {
        let c = crd(
            "snapshot.storage.k8s.io",
            "volumesnapshotclasses",
            "VolumeSnapshotClass",
            "Cluster",
        );
        create(&client, crds, "CustomResourceDefinition", c).await;
    }
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    create(&client, "v1", "Namespace", ns).await;
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"kubernetes.io/os": "linux"}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    create(&client, "v1", "Node", node).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let cr = json!({"apiVersion": "operator.openshift.io/v1", "kind": "ClusterCSIDriver",
        "metadata": {"name": smb::CSI_DRIVER_NAME}, "spec": {"managementState": "Managed"}});
    create(&client, "operator.openshift.io/v1", "ClusterCSIDriver", cr).await;
    (sim, client)
}

/// Reconciles until both workloads are Available (at most 50 times) and returns the CR's
/// conditions as type → status.
async fn install(client: &Client) -> (BTreeMap<String, String>, CsiOperator<smb::Smb>) {
    let images = smb::ASSETS
        .image_placeholders()
        .into_iter()
        .map(|i| (i.to_string(), format!("example.org/{}:1", i.to_lowercase())))
        .collect();
    let opts = smb::Options {
        common: CommonOptions {
            cluster_id: Some("c1".into()),
            ..CommonOptions::standalone(&smb::SPEC, images)
        },
    };
    let cache = smb::watches(client.clone(), &opts)
        .expect("watches")
        .start();
    cache.wait_until_ready().await;
    let mut op = CsiOperator::from_options(
        client.clone(),
        opts,
        cache,
        Metrics::new("smb"),
        LogControl::detached(),
    );
    let crs: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ar("operator.openshift.io/v1", "ClusterCSIDriver"),
    );
    let mut conditions = BTreeMap::new();
    for _ in 0..50 {
        op.reconcile().await;
        let cr = crs.get(smb::CSI_DRIVER_NAME).await.expect("CR");
        conditions = serde_json::from_value::<Vec<Value>>(cr.data["status"]["conditions"].clone())
            .unwrap_or_default()
            .into_iter()
            .map(|c| {
                (
                    c["type"].as_str().unwrap_or_default().to_string(),
                    c["status"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        let is = |t: &str| conditions.get(t).is_some_and(|s| s == "True");
        if is("SambaDriverControllerServiceControllerAvailable")
            && is("SambaDriverNodeServiceControllerAvailable")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (conditions, op)
}

#[tokio::test]
async fn the_smb_driver_installs_from_its_description_and_reports_samba_conditions() {
    // The snapshot CRD is served: a driver with a class would apply it and post its condition.
    let (sim, client) = cluster(true).await;
    let (conditions, mut op) = install(&client).await;
    for (t, want) in [
        ("ManagementStateDegraded", "False"),
        (
            "SambaDriverControlPlaneStaticResourcesControllerDegraded",
            "False",
        ),
        ("SambaDriverGuestStaticResourcesControllerDegraded", "False"),
        ("SambaDriverControllerServiceControllerDegraded", "False"),
        ("SambaDriverControllerServiceControllerAvailable", "True"),
        ("SambaDriverNodeServiceControllerDegraded", "False"),
        ("SambaDriverNodeServiceControllerAvailable", "True"),
    ] {
        assert_eq!(
            conditions.get(t).map(String::as_str),
            Some(want),
            "{t}: {conditions:#?}"
        );
    }
    assert!(
        !conditions.contains_key("VolumeSnapshotClassControllerDegraded"),
        "no snapshot class, no condition for one: {conditions:#?}"
    );
    let classes = sim
        .requests()
        .into_iter()
        .filter(|r| r.is_write() && r.resource.contains("volumesnapshotclasses"))
        .count();
    assert_eq!(classes, 0, "no VolumeSnapshotClass is written");

    // What the driver is: its CSIDriver, its workloads' images, and no StorageClass.
    let csi: Api<DynamicObject> =
        Api::all_with(client.clone(), &ar("storage.k8s.io/v1", "CSIDriver"));
    let driver = csi.get(smb::CSI_DRIVER_NAME).await.expect("CSIDriver");
    assert_eq!(driver.data["spec"]["attachRequired"], false);
    let deployments: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NS, &ar("apps/v1", "Deployment"));
    let controller = deployments
        .get(smb::CONTROLLER_DEPLOYMENT_NAME)
        .await
        .expect("controller");
    let containers = controller.data["spec"]["template"]["spec"]["containers"].clone();
    let images: Vec<&str> = containers
        .as_array()
        .expect("containers")
        .iter()
        .filter_map(|c| c["image"].as_str())
        .collect();
    assert!(images.contains(&"example.org/driver_image:1"), "{images:?}");
    let sc_writes = sim
        .requests()
        .into_iter()
        .filter(|r| r.is_write() && r.resource.contains("storageclasses"))
        .count();
    assert_eq!(sc_writes, 0, "SMB ships no StorageClass");
    // Installed: further reconciles write nothing.
    let writes = |sim: &KubeSim| -> Vec<String> {
        sim.requests()
            .into_iter()
            .filter(|r| r.is_write())
            .map(|r| {
                format!(
                    "{} {} {}/{} {}",
                    r.verb, r.resource, r.namespace, r.name, r.subresource
                )
            })
            .collect()
    };
    // Available comes before the controller carries its metrics certificate's hash (the
    // certificate is issued in the same pass, and the cache sees it a moment later): settle
    // first, within a bound, then nothing may be written.
    for _ in 0..20 {
        let n = writes(&sim).len();
        tokio::time::sleep(Duration::from_millis(100)).await;
        op.reconcile().await;
        if writes(&sim).len() == n {
            break;
        }
    }
    let before = writes(&sim).len();
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        op.reconcile().await;
    }
    assert_eq!(
        writes(&sim)[before..],
        [] as [String; 0],
        "writes at steady state"
    );
}

#[test]
fn every_asset_renders_with_known_placeholders_only() {
    for a in smb::ASSETS.all() {
        assert!(
            a.unknown_placeholders().is_empty(),
            "{}: {:?}",
            a.name,
            a.unknown_placeholders()
        );
    }
    let base = operator_kit::csi::BaseFacts::placeholder(
        NS,
        &BTreeMap::new(),
        &smb::ASSETS.image_placeholders(),
    );
    let objects = smb::everything(&operator_kit::csi::Facts::new(base, ())).expect("renders");
    assert_eq!(objects.len(), smb::ASSETS.all().count());
    // Every namespaced object is in the namespace, and the names are OpenShift's.
    for d in &objects {
        if let Some(ns) = &d.object.metadata.namespace {
            assert_eq!(ns, NS, "{}", d.asset);
        }
    }
    let kinds: Vec<String> = objects
        .iter()
        .map(|d| {
            format!(
                "{}/{}",
                d.resource.kind,
                d.object.metadata.name.clone().unwrap_or_default()
            )
        })
        .collect();
    for want in [
        "CSIDriver/smb.csi.k8s.io",
        "Deployment/smb-csi-driver-controller",
        "DaemonSet/smb-csi-driver-node",
        "ServiceMonitor/smb-csi-driver-controller-monitor",
    ] {
        assert!(kinds.iter().any(|k| k == want), "{want}: {kinds:?}");
    }
    assert_eq!(
        smb::ASSETS.image_placeholders(),
        [
            "DRIVER_IMAGE",
            "PROVISIONER_IMAGE",
            "RESIZER_IMAGE",
            "LIVENESS_PROBE_IMAGE",
            "NODE_DRIVER_REGISTRAR_IMAGE",
            "KUBE_RBAC_PROXY_IMAGE"
        ]
    );
}

/// Least privilege: the SMB operator may write no StorageClass, so extra classes in its driver
/// settings are refused with a message saying what to do, and none is written.
#[tokio::test]
async fn extra_storage_classes_in_the_settings_are_refused_not_attempted() {
    let (sim, client) = cluster(false).await;
    let (_, mut op) = install(&client).await;
    let settings = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": operator_kit::settings::config_map_name(smb::SPEC.user_agent), "namespace": NS},
        "data": {"settings.yaml": "storageClasses:\n- name: team-share\n  parameters: {source: //smb.example/team}\n"}});
    Api::<DynamicObject>::namespaced_with(client.clone(), NS, &ar("v1", "ConfigMap"))
        .create(
            &PostParams::default(),
            &serde_json::from_value(settings).expect("ConfigMap"),
        )
        .await
        .expect("settings created");
    let crs: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ar("operator.openshift.io/v1", "ClusterCSIDriver"),
    );
    let mut refused = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        op.reconcile().await;
        let cr = crs.get(smb::CSI_DRIVER_NAME).await.expect("CR");
        refused = cr.data["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "ExtraStorageClassControllerDegraded" && c["status"] == "True")
            .and_then(|c| c["message"].as_str().map(str::to_owned));
        if refused.is_some() {
            break;
        }
    }
    let message = refused.expect("ExtraStorageClassControllerDegraded=True");
    assert!(
        message.contains("writes no StorageClass")
            && message.contains("create the classes yourself"),
        "{message}"
    );
    let sc_writes = sim
        .requests()
        .into_iter()
        .filter(|r| r.is_write() && r.resource.contains("storageclasses"))
        .count();
    assert_eq!(sc_writes, 0, "no StorageClass write is even attempted");
}
