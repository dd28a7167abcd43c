//! A third CSI driver, declared only here: a name, a few assets and the hooks the kit needs.
//! It installs on kube-sim with operator-kit's reconcile and reports its conditions, which is
//! the proof that adding a driver is a description, not a copy (docs/architecture.md).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{Api, DynamicObject, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use kube_sim::{Fault, KubeSim, RequestMatch, SimConfig};
use operator_kit::cache::CacheBuilder;
use operator_kit::csi::{
    self, CsiOperator, Driver, Facts, Group, Hold, Kit, Mounts, Pass, Settings, Workload,
};
use operator_kit::desired::{self, BuildError, Desired};
use operator_kit::kinds::known as ar;
use operator_kit::logging::LogControl;
use operator_kit::metrics::Metrics;
use serde_json::{Value, json};

const NAME: &str = "fake.csi.example.org";
const NS: &str = "fake-csi";

/// The fake driver: everything it is, in one value (and, for the hold test, whether it holds
/// its workloads back, which the test changes between reconciles).
#[derive(Default)]
struct Fake {
    hold: Arc<Mutex<Option<Hold>>>,
}

fn object(asset: &'static str, ns: &str, value: Value) -> Result<Desired, BuildError> {
    let mut value = value;
    value["metadata"]["namespace"] = json!(ns);
    desired::from_value(asset, None, value)
}

fn pod_template(image: &str) -> Value {
    json!({"metadata": {"labels": {"app": "fake"}},
        "spec": {"containers": [{"name": "driver", "image": image}]}})
}

impl Driver for Fake {
    type Own = ();
    const MOUNTS: Mounts = Mounts {
        trusted_ca_bundle: Some("fake-trusted-ca-bundle"),
        credentials: Some("fake-cloud-credentials"),
        metrics_cert: "fake-metrics-serving-cert",
    };
    const CR_NAME: &'static str = NAME;
    const OPERAND: &'static str = "FakeCSIDriver";
    const CONTROLLER_NAME_PREFIX: &'static str = "Fake";

    async fn configure(&mut self, _kit: &Kit, pass: &mut Pass, _facts: &mut Facts<()>) {
        pass.hold_workloads = self.hold.lock().expect("lock").clone();
    }
    fn static_groups(&self, _kit: &Kit, f: &Facts<()>) -> Vec<Group> {
        let objects = [
            object(
                "sa.yaml",
                &f.namespace,
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "fake-sa"}}),
            ),
            object(
                "cm.yaml",
                &f.namespace,
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fake-config"}, "data": {"cluster": f.cluster_id}}),
            ),
        ];
        vec![Group {
            prefix: "FakeStaticResourcesController",
            objects: objects.into_iter().collect(),
        }]
    }
    fn controller(&self, f: &Facts<()>) -> Workload {
        let desired = object(
            "controller.yaml",
            &f.namespace,
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "fake-controller"},
            "spec": {"selector": {"matchLabels": {"app": "fake"}}, "template": pod_template(&f.images["DRIVER_IMAGE"])}}),
        );
        Workload {
            prefix: "FakeControllerServiceController",
            name: "fake-controller",
            desired,
        }
    }
    fn daemonsets(&self, f: &Facts<()>) -> Vec<Workload> {
        let desired = object(
            "node.yaml",
            &f.namespace,
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "fake-node"},
            "spec": {"selector": {"matchLabels": {"app": "fake"}}, "template": pod_template(&f.images["DRIVER_IMAGE"])}}),
        );
        vec![Workload {
            prefix: "FakeNodeServiceController",
            name: "fake-node",
            desired,
        }]
    }
    fn snapshot_class(&self, _f: &Facts<()>) -> Result<Desired, BuildError> {
        desired::from_value(
            "snapshotclass.yaml",
            Some(csi::VOLUME_SNAPSHOT_CLASS_CRD),
            json!({"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass", "metadata": {"name": "fake"}, "driver": NAME, "deletionPolicy": "Delete"}),
        )
    }
}

async fn client(sim: &KubeSim) -> Client {
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let kubeconfig = Kubeconfig::from_yaml(&sim.kubeconfig("admin")).expect("kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("config");
    Client::try_from(config).expect("client")
}

async fn create(client: &Client, api_version: &str, kind: &str, value: Value) {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar(api_version, kind));
    let obj: DynamicObject = serde_json::from_value(value).expect("object");
    api.create(&PostParams::default(), &obj)
        .await
        .expect("created");
}

/// kube-sim with the CRD, the namespace, a node and the CR, and the operator of `fake`.
async fn start(fake: Fake) -> (KubeSim, Client, CsiOperator<Fake>) {
    let sim = KubeSim::start(
        SimConfig::default(),
        "127.0.0.1:0".parse().expect("address"),
    )
    .await
    .expect("kube-sim");
    let client = client(&sim).await;
    create(&client, "apiextensions.k8s.io/v1", "CustomResourceDefinition", json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "clustercsidrivers.operator.openshift.io"},
        "spec": {"group": "operator.openshift.io", "scope": "Cluster",
            "names": {"plural": "clustercsidrivers", "singular": "clustercsidriver", "kind": "ClusterCSIDriver", "listKind": "ClusterCSIDriverList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})).await;
    create(
        &client,
        "v1",
        "Namespace",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
    )
    .await;
    // One node, so the node DaemonSet rolls out and finishes.
    create(
        &client,
        "v1",
        "Node",
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    create(&client, "operator.openshift.io/v1", "ClusterCSIDriver", json!({"apiVersion": "operator.openshift.io/v1",
        "kind": "ClusterCSIDriver", "metadata": {"name": NAME}, "spec": {"managementState": "Managed", "logLevel": "Loud"}})).await;

    let images = BTreeMap::from([("DRIVER_IMAGE".to_string(), "example.org/fake:1".to_string())]);
    // The kit's base watches: without them this driver would take the cluster for plain
    // Kubernetes and see no proxy or TLS profile.
    let mut cache = csi::base_watches(CacheBuilder::new(client.clone(), [NS]), NAME);
    for kind in [
        ("v1", "ConfigMap"),
        ("v1", "ServiceAccount"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "DaemonSet"),
    ] {
        cache = cache.namespaced(&ar(kind.0, kind.1));
    }
    let cache = cache.start();
    cache.wait_until_ready().await;
    let settings = Settings {
        namespace: NS.into(),
        node_namespace: NS.into(),
        hosted_env: Default::default(),
        events_about: csi::events_about(NS, "fake-operator"),
        user_agent: "fake-operator",
        images,
        cluster_id: Some("c1".into()),
        cert_manager: None,
    };
    let op = CsiOperator::new(
        client.clone(),
        cache,
        Metrics::new("fake"),
        LogControl::detached(),
        settings,
        fake,
    );
    (sim, client, op)
}

/// The CR's conditions as type → (status, reason).
async fn conditions(client: &Client) -> BTreeMap<String, (String, String)> {
    let crs: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ar("operator.openshift.io/v1", "ClusterCSIDriver"),
    );
    let cr = crs.get(NAME).await.expect("CR");
    serde_json::from_value::<Vec<Value>>(cr.data["status"]["conditions"].clone())
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap_or_default().to_string(),
                (
                    c["status"].as_str().unwrap_or_default().to_string(),
                    c["reason"].as_str().unwrap_or_default().to_string(),
                ),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_driver_described_in_a_few_lines_installs_and_reports_its_conditions() {
    let (sim, client, mut op) = start(Fake::default()).await;
    let crs: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ar("operator.openshift.io/v1", "ClusterCSIDriver"),
    );
    let mut conditions = BTreeMap::new();
    for _ in 0..50 {
        op.reconcile().await;
        let cr = crs.get(NAME).await.expect("CR");
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
        let is = |t: &str, want: &str| conditions.get(t).is_some_and(|s| s == want);
        if is("FakeControllerServiceControllerDegraded", "False")
            && is("FakeNodeServiceControllerAvailable", "True")
            && is("FakeNodeServiceControllerProgressing", "False")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for t in [
        "ManagementStateDegraded",
        "ConfigObservationDegraded",
        "FakeStaticResourcesControllerDegraded",
        "FakeControllerServiceControllerDegraded",
        "FakeNodeServiceControllerDegraded",
        "VolumeSnapshotClassControllerDegraded",
    ] {
        assert_eq!(
            conditions.get(t).map(String::as_str),
            Some("False"),
            "{t}: {conditions:#?}"
        );
    }
    assert_eq!(
        conditions.get("LoggingSyncerDegraded").map(String::as_str),
        Some("True"),
        "a bad logLevel is reported"
    );
    assert_eq!(
        conditions
            .get("FakeNodeServiceControllerProgressing")
            .map(String::as_str),
        Some("False"),
        "the node DaemonSet finished rolling out: {conditions:#?}"
    );
    // The end of the rollout is remembered without writing the DaemonSet again (OpenShift
    // writes a stable-generation annotation then): one write, its create.
    for _ in 0..3 {
        op.reconcile().await;
    }
    let daemonset_writes: Vec<String> = sim
        .requests()
        .into_iter()
        .filter(|r| r.is_write() && r.resource == "apps/daemonsets" && r.subresource.is_empty())
        .map(|r| format!("{} {}", r.verb, r.name))
        .collect();
    assert_eq!(
        daemonset_writes,
        ["create fake-node"],
        "one write per rollout"
    );
    let cms: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &ar("v1", "ConfigMap"));
    assert_eq!(
        cms.get("fake-config")
            .await
            .expect("static object applied")
            .data["data"]["cluster"],
        "c1"
    );
}

#[tokio::test]
async fn a_driver_can_hold_its_workloads_back_and_say_why() {
    let fake = Fake::default();
    let hold = fake.hold.clone();
    *hold.lock().expect("lock") = Some(Hold {
        reason: "WaitingForTheOtherDriver".into(),
        message: "another installation still runs".into(),
    });
    let (sim, client, mut op) = start(fake).await;
    for _ in 0..3 {
        op.reconcile().await;
    }
    let c = conditions(&client).await;
    for (t, status) in [
        ("FakeControllerServiceControllerAvailable", "False"),
        ("FakeControllerServiceControllerProgressing", "True"),
        ("FakeNodeServiceControllerAvailable", "False"),
        ("FakeNodeServiceControllerProgressing", "True"),
    ] {
        assert_eq!(
            c.get(t),
            Some(&(status.to_string(), "WaitingForTheOtherDriver".to_string())),
            "{t}: {c:#?}"
        );
    }
    for t in [
        "FakeControllerServiceControllerDegraded",
        "FakeNodeServiceControllerDegraded",
        "FakeStaticResourcesControllerDegraded",
    ] {
        assert_eq!(c.get(t).map(|s| s.0.as_str()), Some("False"), "{t}: {c:#?}");
    }
    let workload_writes = |sim: &KubeSim| -> Vec<String> {
        sim.requests()
            .into_iter()
            .filter(|r| r.is_write() && r.resource.starts_with("apps/"))
            .map(|r| format!("{} {}", r.verb, r.name))
            .collect()
    };
    assert!(
        workload_writes(&sim).is_empty(),
        "{:?}",
        workload_writes(&sim)
    );
    // The rest was applied meanwhile.
    let cms: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &ar("v1", "ConfigMap"));
    assert!(cms.get_opt("fake-config").await.expect("get").is_some());

    // Released: the workloads are applied at the next reconcile.
    *hold.lock().expect("lock") = None;
    op.reconcile().await;
    let mut writes = workload_writes(&sim);
    writes.sort();
    assert_eq!(writes, ["create fake-controller", "create fake-node"]);
}

/// A reconcile that starts before the watch has shown the previous reconcile's status write
/// reads the generations from that write (the status writer's memo), so it does not write the
/// Deployment and DaemonSet again. The CR's watch is held back (dropped, and its re-watch
/// delayed) so the second reconcile surely reads a cache without the first one's status.
#[tokio::test]
async fn back_to_back_reconciles_write_each_workload_once() {
    let (sim, _client, mut op) = start(Fake::default()).await;
    sim.inject(Fault {
        matches: RequestMatch {
            verb: "watch".into(),
            resource: "clustercsidrivers".into(),
            ..Default::default()
        },
        code: 0,
        times: 0,
        latency_ms: 3_000,
    });
    sim.drop_watches();
    op.reconcile().await;
    op.reconcile().await;
    let writes: Vec<String> = sim
        .requests()
        .into_iter()
        .filter(|r| r.is_write() && r.resource.starts_with("apps/") && r.subresource.is_empty())
        .map(|r| format!("{} {}", r.verb, r.name))
        .collect();
    assert_eq!(writes, ["create fake-controller", "create fake-node"]);
}
