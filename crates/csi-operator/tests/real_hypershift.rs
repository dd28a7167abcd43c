//! A hosted control plane (HyperShift) on two real control planes: the management cluster runs
//! the Cluster Storage Operator, both driver operators and the drivers' controllers in its
//! control-plane namespace; the guest holds the ClusterCSIDriver, the CSIDriver, the node
//! DaemonSets, the StorageClasses and `ClusterOperator/storage` (anchors §3.8, §4.8, §5.5).
//!
//! The test plays what HyperShift does around us, and nothing of ours: the hosted cluster
//! version operator applies the release's `hypershift` profile to the guest; the control-plane
//! operator creates the control-plane namespace, the `HostedControlPlane`, the guest kubeconfig
//! Secret, the cloud credentials and CA, and deploys the CSO from the release's `-hypershift`
//! manifests; the hosted cluster config operator copies the credentials into the guest. Every
//! pod is created by the real controller-manager, placed by the real scheduler and admitted by
//! SCC admission on its own plane; the operators run as processes under TokenRequest tokens of
//! their ServiceAccounts in the management cluster and reach the guest with the kubeconfig.

mod real;
#[path = "guides/runner.rs"]
mod runner;

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use kube::Client;
use kube::api::{Api, ListParams};
use real::*;
use serde_json::{Value, json};

const V1: &str = "0.0.1-snapshot";
/// The control-plane namespace of the hosted cluster `guest` (HyperShift's `<ns>-<name>`).
const CP_NS: &str = "clusters-guest";
const DRIVERS_NS: &str = "openshift-cluster-csi-drivers";
const MANILA_NS: &str = "openshift-manila-csi-driver";
/// The manifest HyperShift's control-plane operator deletes from the hosted CVO's payload.
const IBM_CLOUD_CSO_DEPLOYMENT: &str =
    "0000_50_cluster-storage-operator_10_deployment-ibm-cloud-managed.yaml";

/// The `HostedControlPlane` API as this test needs it: our own minimal CRD (the fields the
/// operators read; the rest preserved), standing for HyperShift's.
fn hosted_control_plane_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "hostedcontrolplanes.hypershift.openshift.io"},
        "spec": {
            "group": "hypershift.openshift.io",
            "scope": "Namespaced",
            "names": {"plural": "hostedcontrolplanes", "singular": "hostedcontrolplane",
                      "kind": "HostedControlPlane", "listKind": "HostedControlPlaneList"},
            "versions": [{
                "name": "v1beta1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                }},
            }],
        },
    })
}

fn hosted_control_plane() -> Value {
    json!({
        "apiVersion": "hypershift.openshift.io/v1beta1",
        "kind": "HostedControlPlane",
        "metadata": {"name": "guest", "namespace": CP_NS},
        "spec": {
            "platform": {"type": "OpenStack"},
            "nodeSelector": {"hypershift.openshift.io/control-plane": "true"},
            "labels": {"hosted-by": "realkube"},
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "control-plane",
                             "effect": "NoSchedule"}],
            "configuration": {"apiServer": {"tlsSecurityProfile": {"type": "Intermediate",
                                                                     "intermediate": {}}}},
        },
    })
}

/// The documents of the manifest files in `dir` (sorted by name, as the CVO reads them).
fn manifests_in(dir: &Path) -> Vec<(String, Value)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("manifest dir")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .flat_map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).expect("manifest");
            realkube::apply::parse(&text)
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .into_iter()
                .map(move |d| (name.clone(), d))
        })
        .collect()
}

/// Replaces every image of the payload (as the release does) in a document.
fn with_release_images(doc: &mut Value, images: &BTreeMap<String, String>) {
    match doc {
        Value::String(s) => {
            if let Some(to) = images.get(s.as_str()) {
                *s = to.clone();
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|v| with_release_images(v, images)),
        Value::Object(o) => o.values_mut().for_each(|v| with_release_images(v, images)),
        _ => {}
    }
}

async fn apply_all(client: &Client, docs: &[Value]) {
    for doc in docs {
        realkube::apply::object(client, doc)
            .await
            .unwrap_or_else(|e| panic!("apply {}: {e}", doc["metadata"]["name"]));
    }
}

fn clouds_secret(namespace: &str, name: &str, clouds_yaml: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": name, "namespace": namespace},
           "stringData": {"clouds.yaml": clouds_yaml}})
}

/// Everything HyperShift does before and around the CSO, then the CSO itself.
async fn install(management: &RealCluster, guest: &mut RealCluster) {
    let payload = payload(V1);
    let namespace =
        |name: &str| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});

    // The hosted CVO: HyperShift runs OpenShift's CVO for the guest with the
    // ibm-cloud-managed profile, after deleting the manifests of operators it runs in the
    // control plane instead (the CSO's IBM Cloud Deployment among them).
    let mut hosted_payload = payload.clone();
    hosted_payload
        .remove
        .insert(IBM_CLOUD_CSO_DEPLOYMENT.to_owned());
    guest
        .run_cvo_with_profile(&hosted_payload, "ibm-cloud-managed")
        .await;

    // The HyperShift operator: the HostedControlPlane API and the priority class of every
    // control-plane pod. The control-plane operator: namespace, HostedControlPlane, guest
    // kubeconfig.
    realkube::apply::object(&management.client, &hosted_control_plane_crd())
        .await
        .expect("HostedControlPlane CRD");
    let priority_class = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "hypershift-control-plane"}, "value": 100000000,
        "description": "control-plane components of hosted clusters"});
    realkube::apply::object(&management.client, &priority_class)
        .await
        .expect("the control-plane priority class");
    realkube::apply::object(&management.client, &namespace(CP_NS))
        .await
        .expect("control-plane namespace");
    let hcp = hosted_control_plane();
    let mut created = false;
    for _ in 0..40 {
        if realkube::apply::object(&management.client, &hcp)
            .await
            .is_ok()
        {
            created = true;
            break;
        }
        // The CRD is served a moment after it is established.
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    assert!(created, "the HostedControlPlane could not be created");
    // HyperShift's service-network-admin kubeconfig is the guest's administrator.
    let kubeconfig = guest_admin_kubeconfig(guest);
    let guest_kubeconfig = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "service-network-admin-kubeconfig", "namespace": CP_NS},
        "stringData": {"kubeconfig": kubeconfig}});
    realkube::apply::object(&management.client, &guest_kubeconfig)
        .await
        .expect("guest kubeconfig");
    // The hosted cluster config operator copies the credentials into the guest's namespace
    // once the hosted CVO has made it.
    guest
        .wait("the guest's driver namespace", async |g| {
            Api::<k8s_openapi::api::core::v1::Namespace>::all(g.client.clone())
                .get(DRIVERS_NS)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
        .await;
    put_credentials(management, guest, &guest.openstack.clouds_yaml("openstack")).await;

    // The CSO, as the control-plane operator deploys it from the release's -hypershift
    // manifests (its ServiceAccount and Deployment) with its own Role, in the control-plane
    // namespace.
    let mut cso_docs: Vec<Value> = manifests_in(&manifest_dir().join("hypershift"))
        .into_iter()
        .filter(|(_, d)| matches!(d["kind"].as_str(), Some("ServiceAccount" | "Deployment")))
        .map(|(_, mut d)| {
            with_release_images(&mut d, &payload.images);
            d["metadata"]["namespace"] = json!(CP_NS);
            d
        })
        .collect();
    assert_eq!(cso_docs.len(), 2, "the CSO's ServiceAccount and Deployment");
    cso_docs.extend(control_plane_operator_objects());
    // Bindings before the Deployment, so the CSO's first requests are allowed.
    cso_docs.sort_by_key(|d| d["kind"] == "Deployment");
    apply_all(&management.client, &cso_docs).await;
}

/// What HyperShift's control-plane operator gives the CSO in the control-plane namespace: its
/// Role (what it grants, restated: the CSO deploys the driver operators there, with their
/// RBAC) and its serving certificate (HyperShift's PKI signs one for the `cluster-storage-operator`
/// name; here the service-ca stand-in mints it for a Service of that name).
fn control_plane_operator_objects() -> Vec<Value> {
    let all = |groups: &[&str], resources: &[&str]| json!({"apiGroups": groups, "resources": resources, "verbs": ["*"]});
    vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "cluster-storage-operator", "namespace": CP_NS},
        "rules": [
            all(&["coordination.k8s.io"], &["leases"]),
            all(&["apps"], &["deployments", "replicasets"]),
            all(&["policy"], &["poddisruptionbudgets"]),
            all(&[""], &["serviceaccounts", "services", "configmaps", "pods", "endpoints", "events", "secrets"]),
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
             "verbs": ["watch", "list", "get", "create", "delete", "patch", "update"]},
            {"apiGroups": ["hypershift.openshift.io"], "resources": ["hostedcontrolplanes"],
             "verbs": ["watch", "list", "get"]},
        ]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "cluster-storage-operator", "namespace": CP_NS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cluster-storage-operator"},
            "subjects": [{"kind": "ServiceAccount", "name": "cluster-storage-operator", "namespace": CP_NS}]}),
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "cluster-storage-operator", "namespace": CP_NS,
                "annotations": {"service.beta.openshift.io/serving-cert-secret-name":
                                "cluster-storage-operator-serving-cert"}},
            "spec": {"selector": {"name": "cluster-storage-operator"},
                     "ports": [{"name": "metrics", "port": 8443}]}}),
    ]
}

fn guest_admin_kubeconfig(guest: &RealCluster) -> String {
    let admin = guest
        .plane
        .token_for(GUEST_ADMIN_USER)
        .expect("the guest's service-network-admin token");
    guest.plane.kubeconfig_yaml(admin)
}

/// Requests refused (403: RBAC or an admission policy; 422: validation) to the operators:
/// their ServiceAccounts, and on the guest the administrator's kubeconfig they use there.
fn refused(c: &RealCluster) -> Vec<String> {
    let mut out: Vec<String> = c
        .requests()
        .into_iter()
        .filter(|r| r.code == 403 || r.code == 422)
        .filter(|r| is_operator(&r.user))
        .map(|r| {
            format!(
                "{} {} {} {}/{} {} → {}",
                r.user, r.verb, r.resource, r.namespace, r.name, r.subresource, r.code
            )
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Whether a request's user is one of ours: an operator's ServiceAccount in the management
/// cluster, or (in the guest) the service-network-admin the operators act as there.
fn is_operator(user: &str) -> bool {
    (user.starts_with("system:serviceaccount:") && !user.starts_with("system:serviceaccount:kube-"))
        || user == GUEST_ADMIN_USER
}

/// The cloud credentials where HyperShift puts them: the control-plane namespace (for the
/// controllers) and the guest's driver operator namespace (for the node plugins); writing them
/// again is a rotation.
async fn put_credentials(management: &RealCluster, guest: &RealCluster, clouds: &str) {
    for name in ["openstack-cloud-credentials", "manila-cloud-credentials"] {
        realkube::apply::object(&management.client, &clouds_secret(CP_NS, name, clouds))
            .await
            .expect("control-plane credentials");
        realkube::apply::object(&guest.client, &clouds_secret(DRIVERS_NS, name, clouds))
            .await
            .expect("guest credentials");
    }
}

/// Each Deployment and DaemonSet of `namespace` on `c`, by name, with its pod template's
/// annotations.
async fn templates(c: &RealCluster, namespace: &str) -> BTreeMap<String, Value> {
    // Both kinds as JSON: the pod template's annotations sit at the same path.
    let mut out = BTreeMap::new();
    for (kind, plural) in [("Deployment", "deployments"), ("DaemonSet", "daemonsets")] {
        let ar = kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("apps", "v1", kind),
            plural,
        );
        let items =
            Api::<kube::api::DynamicObject>::namespaced_with(c.client.clone(), namespace, &ar)
                .list(&ListParams::default())
                .await
                .map(|l| l.items)
                .unwrap_or_default();
        for o in items {
            let annotations = o.data["spec"]["template"]["metadata"]["annotations"].clone();
            out.insert(
                format!("{kind}/{}", o.metadata.name.unwrap_or_default()),
                if annotations.is_null() {
                    json!({})
                } else {
                    annotations
                },
            );
        }
    }
    out
}

/// Polls `check` on both planes until it returns `Ok`; on timeout, fails with its last error
/// and what both planes report (the operators run in the management cluster, their work is
/// mostly in the guest).
async fn wait_both<T>(
    management: &RealCluster,
    guest: &RealCluster,
    what: &str,
    mut check: impl AsyncFnMut(&RealCluster, &RealCluster) -> Result<T, String>,
) -> T {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        match check(management, guest).await {
            Ok(v) => return v,
            Err(last) if std::time::Instant::now() > deadline => panic!(
                "timed out waiting for {what}: {last}\n=== management\n{}\n=== guest\n{}\n=== refused\n{:?}\n{:?}\n=== pods refused\n{:?}\n{:?}",
                management.report(),
                guest.report(),
                refused(management),
                refused(guest),
                management.failed_creates().await,
                guest.failed_creates().await,
            ),
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(500)).await,
        }
    }
}

/// The names of `kind` objects in `namespace` on `c`.
async fn names<K>(c: &RealCluster, namespace: &str) -> Vec<String>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + for<'de> k8s_openapi::serde::Deserialize<'de>
        + std::fmt::Debug,
{
    let mut names: Vec<String> = Api::<K>::namespaced(c.client.clone(), namespace)
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|o| o.meta().name.clone())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_control_plane_runs_both_drivers_across_the_management_cluster_and_the_guest() {
    let (management, mut guest) = RealCluster::hosted(V1).await;
    install(&management, &mut guest).await;

    // The guest sees a storage cluster operator like any other, at the release's version.
    wait_both(
        &management,
        &guest,
        "the guest's ClusterOperator/storage healthy",
        async |_, g| storage_healthy(g, V1).await,
    )
    .await;
    wait_both(
        &management,
        &guest,
        "Cinder available in the guest",
        async |_, g| driver_available(g, "cinder.csi.openstack.org", &CINDER_AVAILABLE).await,
    )
    .await;
    wait_both(
        &management,
        &guest,
        "Manila available in the guest",
        async |_, g| driver_available(g, "manila.csi.openstack.org", &MANILA_AVAILABLE).await,
    )
    .await;

    // The split: operators and controllers in the control-plane namespace of the management
    // cluster, node plugins in the guest, and neither where the other belongs.
    let control_plane = wait_both(
        &management,
        &guest,
        "every control-plane workload ready",
        async |m, _| workloads_complete(m, &[CP_NS]).await,
    )
    .await;
    let deployments = names::<Deployment>(&management, CP_NS).await;
    for name in [
        "cluster-storage-operator",
        "openstack-cinder-csi-driver-operator",
        "manila-csi-driver-operator",
        "openstack-cinder-csi-driver-controller",
        "openstack-manila-csi-controllerplugin",
    ] {
        assert!(
            deployments.iter().any(|d| d == name),
            "{name} not in {deployments:?}"
        );
    }
    assert_eq!(
        control_plane,
        deployments.len(),
        "no DaemonSet in the control plane"
    );
    wait_both(
        &management,
        &guest,
        "the node plugins ready in the guest",
        async |_, g| workloads_complete(g, &[DRIVERS_NS, MANILA_NS]).await,
    )
    .await;
    assert_eq!(
        names::<Deployment>(&guest, DRIVERS_NS).await,
        Vec::<String>::new(),
        "no controller in the guest"
    );
    assert_eq!(
        names::<Deployment>(&guest, MANILA_NS).await,
        Vec::<String>::new(),
        "no controller in the guest"
    );
    let daemonsets = [
        names::<DaemonSet>(&guest, DRIVERS_NS).await,
        names::<DaemonSet>(&guest, MANILA_NS).await,
    ]
    .concat();
    assert_eq!(daemonsets.len(), 3, "{daemonsets:?}");
    for (kind, plural, name) in [
        ("CSIDriver", "csidrivers", "cinder.csi.openstack.org"),
        ("CSIDriver", "csidrivers", "manila.csi.openstack.org"),
        ("StorageClass", "storageclasses", "standard-csi"),
    ] {
        assert!(
            guest
                .get("storage.k8s.io/v1", kind, plural, name)
                .await
                .is_some(),
            "{kind} {name} in the guest"
        );
        assert!(
            management
                .get("storage.k8s.io/v1", kind, plural, name)
                .await
                .is_none(),
            "{kind} {name} is not the management cluster's"
        );
    }

    // Cinder's cloud config where each side mounts it: the controller's in the control-plane
    // namespace, the node plugin's in the guest.
    assert!(
        management.config_map(CP_NS, "cloud-conf").await.is_some(),
        "cloud-conf in the control-plane namespace"
    );
    assert!(
        guest.config_map(DRIVERS_NS, "cloud-conf").await.is_some(),
        "cloud-conf in the guest"
    );
    // The DeploymentVersionControllers: the CSO records each driver operator's rollout of this
    // release, each driver operator its controller's.
    wait_both(
        &management,
        &guest,
        "release.openshift.io/version on every control-plane Deployment",
        async |m, _| {
            let deployments = Api::<Deployment>::namespaced(m.client.clone(), CP_NS)
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?
                .items;
            let missing: Vec<String> = deployments
                .iter()
                .filter(|d| d.metadata.name.as_deref() != Some("cluster-storage-operator"))
                .filter(|d| {
                    d.metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get("release.openshift.io/version"))
                        .map(String::as_str)
                        != Some(V1)
                })
                .filter_map(|d| d.metadata.name.clone())
                .collect();
            if missing.is_empty() && deployments.len() == 5 {
                Ok(())
            } else {
                Err(format!("not recorded on {missing:?}"))
            }
        },
    )
    .await;
    // ClusterOperator/storage names what the guest holds, nothing of the management cluster.
    // Waited for, not read once: the version annotation just written moves each Deployment's
    // generation (the apps strategy bumps it on annotation changes), so the controllers are
    // briefly Progressing until the deployment controller observes it, as with Go's operators.
    let co = wait_both(
        &management,
        &guest,
        "the guest's ClusterOperator/storage healthy again",
        async |_, g| storage_healthy(g, V1).await,
    )
    .await;
    let related = co["status"]["relatedObjects"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(!related.is_empty());
    assert!(
        related.iter().all(|r| r["namespace"] != CP_NS),
        "{related:#?}"
    );

    // HyperShift's placement of the controllers: the plane's node selector, labels and
    // tolerations, its priority class, on the management cluster's Nodes.
    let controller: Deployment = Api::namespaced(management.client.clone(), CP_NS)
        .get("openstack-cinder-csi-driver-controller")
        .await
        .expect("the Cinder controller");
    let template = controller.spec.expect("spec").template;
    let pod = template.spec.expect("pod spec");
    assert_eq!(
        pod.priority_class_name.as_deref(),
        Some("hypershift-control-plane")
    );
    assert_eq!(
        pod.node_selector
            .unwrap_or_default()
            .get("hypershift.openshift.io/control-plane"),
        Some(&"true".to_string())
    );
    assert!(
        pod.tolerations
            .unwrap_or_default()
            .iter()
            .any(|t| t.key.as_deref() == Some("dedicated")),
        "the plane's tolerations"
    );
    assert_eq!(
        template
            .metadata
            .and_then(|m| m.labels)
            .unwrap_or_default()
            .get("hosted-by"),
        Some(&"realkube".to_string())
    );

    // Every pod admitted and no request refused, on either plane; the three operators are
    // processes of the management cluster that never restarted.
    for (plane, c) in [("management", &management), ("guest", &guest)] {
        assert_eq!(
            c.failed_creates().await,
            Vec::<String>::new(),
            "{plane}: pods refused"
        );
        assert_eq!(
            refused(c),
            Vec::<String>::new(),
            "{plane}: requests refused"
        );
    }
    let processes = management.kubelet.processes();
    assert_eq!(processes.len(), 3, "{}", management.kubelet.report());
    for p in &processes {
        assert_eq!(p.restarts, 0, "{p:?}\n{}", management.kubelet.report());
    }
    assert!(
        guest.kubelet.processes().is_empty(),
        "no operator runs in the guest"
    );

    // Idle: no write by any operator on either plane for 20 s (leases aside).
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    let (m_before, g_before) = (management.requests().len(), guest.requests().len());
    tokio::time::sleep(std::time::Duration::from_secs(20)).await;
    let idle_writes = |c: &RealCluster, before: usize| {
        c.requests()
            .split_off(before)
            .into_iter()
            .filter(|r| r.is_write() && is_operator(&r.user))
            .filter(|r| r.resource != "coordination.k8s.io/leases")
            .map(|r| {
                format!(
                    "{} {} {} {}/{} {}",
                    r.user, r.verb, r.resource, r.namespace, r.name, r.subresource
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        idle_writes(&management, m_before),
        Vec::<String>::new(),
        "management writes while idle"
    );
    assert_eq!(
        idle_writes(&guest, g_before),
        Vec::<String>::new(),
        "guest writes while idle"
    );

    // A credential rotation rolls the controllers in the management cluster and the node
    // plugins in the guest.
    let before_m = templates(&management, CP_NS).await;
    let before_g = [
        templates(&guest, DRIVERS_NS).await,
        templates(&guest, MANILA_NS).await,
    ];
    let domain = openstack_sim::SimDomain::default();
    guest.openstack.add_user(openstack_sim::SimUser {
        id: "u-rotated".into(),
        name: "rotated".into(),
        domain: domain.clone(),
        password: "rotated-password-9c1e".into(),
        project: openstack_sim::SimProject {
            id: "p-demo".into(),
            name: openstack_sim::DEFAULT_PROJECT.into(),
            domain,
        },
    });
    let rotated =
        guest
            .openstack
            .clouds_yaml_password("openstack", "rotated", "rotated-password-9c1e");
    put_credentials(&management, &guest, &rotated).await;
    wait_both(
        &management,
        &guest,
        "the controllers rolled for the new credentials",
        async |m, _| {
            let now = templates(m, CP_NS).await;
            let rolled: Vec<&String> = [
                "Deployment/openstack-cinder-csi-driver-controller",
                "Deployment/openstack-manila-csi-controllerplugin",
            ]
            .iter()
            .filter_map(|k| before_m.get_key_value(*k).map(|(k, _)| k))
            .filter(|k| now.get(*k) != before_m.get(*k))
            .collect();
            if rolled.len() == 2 {
                Ok(())
            } else {
                Err(format!("rolled only {rolled:?}"))
            }
        },
    )
    .await;
    wait_both(
        &management,
        &guest,
        "the node plugins rolled for the new credentials",
        async |_, g| {
            let now = [
                templates(g, DRIVERS_NS).await,
                templates(g, MANILA_NS).await,
            ];
            if now[0].get("DaemonSet/openstack-cinder-csi-driver-node")
                != before_g[0].get("DaemonSet/openstack-cinder-csi-driver-node")
            {
                Ok(())
            } else {
                Err(format!("{now:#?}"))
            }
        },
    )
    .await;
    wait_both(
        &management,
        &guest,
        "every control-plane workload ready after the rotation",
        async |m, _| workloads_complete(m, &[CP_NS]).await,
    )
    .await;
    for (plane, c) in [("management", &management), ("guest", &guest)] {
        assert_eq!(
            refused(c),
            Vec::<String>::new(),
            "{plane}: requests refused"
        );
    }

    // docs/hypershift.md, as an administrator of the management cluster runs it.
    let management_admin = management
        .plane
        .token_for(realkube::ADMIN_USER)
        .expect("the management admin token");
    let work = runner::Workdir::new(
        "hypershift",
        &management.plane.kubeconfig_yaml(management_admin),
    );
    let guest_admin = guest
        .plane
        .token_for(realkube::ADMIN_USER)
        .expect("the guest admin token");
    work.provide(
        "guest.kubeconfig",
        &guest.plane.kubeconfig_yaml(guest_admin),
    );
    work.run_guide("hypershift");
}
