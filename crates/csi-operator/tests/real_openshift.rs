//! The whole release on the real control plane in OpenShift mode, installed and upgraded by
//! OpenShift's own cluster version operator with `manifests/openshift` as its payload (see
//! `real/mod.rs`): real SCC admission and restricted Pod Security by default, real RBAC for
//! every operator (TokenRequest tokens of their ServiceAccounts), the real controller-manager
//! creating every pod and the real scheduler placing them. Nothing here plays an operator.

mod real;

use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use real::*;

const V1: &str = "0.0.1-snapshot";
const V2: &str = "0.0.2-snapshot";
const CSO_NS: &str = "openshift-cluster-storage-operator";
const DRIVERS_NS: &str = "openshift-cluster-csi-drivers";
const MANILA_NS: &str = "openshift-manila-csi-driver";

/// A cluster on `openstack` with release V1 applied by the CVO and storage healthy.
async fn installed(openstack: openstack_sim::SimConfig) -> RealCluster {
    let mut c = RealCluster::openshift(openstack, &[V1]).await;
    c.run_cvo(&payload(V1)).await;
    c.wait("ClusterVersion to finish applying", async |c| {
        cluster_version_done(c, V1).await
    })
    .await;
    c.wait("ClusterOperator/storage healthy", async |c| {
        storage_healthy(c, V1).await
    })
    .await;
    c
}

/// A ClusterVersion that applied `version` completely.
async fn cluster_version_done(c: &RealCluster, version: &str) -> Result<(), String> {
    let conditions = realkube::cvo::conditions(&c.client).await;
    let available = conditions.get("Available").cloned().unwrap_or_default();
    let failing = conditions.get("Failing").cloned().unwrap_or_default();
    let progressing = conditions.get("Progressing").cloned().unwrap_or_default();
    if available.0 == "True"
        && failing.0 != "True"
        && progressing.0 == "False"
        && progressing.2.contains(version)
    {
        Ok(())
    } else {
        Err(format!("{conditions:#?}"))
    }
}

/// The Nodes the pods of a workload run on (pods selected by `labels`).
async fn nodes_of(c: &RealCluster, namespace: &str, labels: &str) -> Vec<String> {
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), namespace);
    let mut nodes: Vec<String> = pods
        .list(&ListParams::default().labels(labels))
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| p.spec?.node_name)
        .collect();
    nodes.sort();
    nodes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_cvo_installs_and_upgrades_the_release_under_real_admission_and_rbac() {
    let mut c = RealCluster::openshift(openstack_sim::SimConfig::default(), &[V1, V2]).await;
    c.run_cvo(&payload(V1)).await;

    // The CVO applies the whole payload: the ClusterOperator barrier passes once our CSO, started
    // from the Deployment before it, reports Available.
    c.wait("ClusterVersion to finish applying 0.0.1", async |c| {
        cluster_version_done(c, V1).await
    })
    .await;
    let co = c
        .wait("ClusterOperator/storage healthy", async |c| {
            storage_healthy(c, V1).await
        })
        .await;
    assert!(
        co["status"]["relatedObjects"]
            .as_array()
            .is_some_and(|r| !r.is_empty()),
        "{co:#}"
    );
    c.wait("Cinder available", async |c| {
        driver_available(c, "cinder.csi.openstack.org", &CINDER_AVAILABLE).await
    })
    .await;
    c.wait("Manila available", async |c| {
        driver_available(c, "manila.csi.openstack.org", &MANILA_AVAILABLE).await
    })
    .await;
    let workloads = c
        .wait("every workload's pods ready", async |c| {
            workloads_complete(c, &[CSO_NS, DRIVERS_NS, MANILA_NS]).await
        })
        .await;
    assert!(
        workloads >= 7,
        "only {workloads} Deployments and DaemonSets"
    );

    // Placement by the real scheduler: the drivers' controllers on two different control-plane
    // Nodes (their anti-affinity), the node plugins on every Node.
    for (ns, labels) in [
        (DRIVERS_NS, "app=openstack-cinder-csi-driver-controller"),
        (
            MANILA_NS,
            "app=openstack-manila-csi,component=controllerplugin",
        ),
    ] {
        let nodes = nodes_of(&c, ns, labels).await;
        assert_eq!(nodes.len(), 2, "{ns} {labels}: {nodes:?}");
        assert!(
            nodes.iter().all(|n| n.starts_with("master-")),
            "{labels}: {nodes:?}"
        );
        assert_ne!(
            nodes[0], nodes[1],
            "{labels}: anti-affinity keeps replicas apart"
        );
    }
    let node_plugins = nodes_of(&c, DRIVERS_NS, "app=openstack-cinder-csi-driver-node").await;
    assert_eq!(
        node_plugins.len(),
        5,
        "the Cinder node plugin on every Node: {node_plugins:?}"
    );

    // Every pod admitted, no request refused, every operator one process that never restarted.
    c.assert_nothing_refused().await;
    let processes = c.kubelet.processes();
    assert_eq!(
        processes.len(),
        3,
        "the CSO and both driver operators:\n{}",
        c.kubelet.report()
    );
    for p in &processes {
        assert_eq!(p.restarts, 0, "{p:?}\n{}", c.kubelet.report());
    }

    // Idle: no write (leases aside) by any operator for 20 s.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = c.requests().len();
    tokio::time::sleep(Duration::from_secs(20)).await;
    let idle = c.requests().split_off(before);
    assert_eq!(
        operator_writes(&idle),
        Vec::<String>::new(),
        "writes while idle"
    );

    // A version-changing upgrade with new images: the next release's CVO updates the CSO
    // Deployment (before the ClusterOperator barrier), the CSO reports the new version, and
    // the driver operators and drivers roll to the new images.
    realkube::cvo::feature_gates(&c.client, &[V1, V2])
        .await
        .expect("feature gates for 0.0.2");
    c.run_cvo(&payload(V2)).await;
    c.wait("ClusterVersion to finish applying 0.0.2", async |c| {
        cluster_version_done(c, V2).await
    })
    .await;
    c.wait("ClusterOperator/storage healthy at 0.0.2", async |c| {
        storage_healthy(c, V2).await
    })
    .await;
    let new_image = release_operator_image(V2);
    c.wait("the driver operators on the new image", async |c| {
        let images: Vec<String> = Api::<Deployment>::namespaced(c.client.clone(), DRIVERS_NS)
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .filter(|d| {
                d.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.ends_with("-operator"))
            })
            .filter_map(|d| d.spec?.template.spec?.containers.first()?.image.clone())
            .collect();
        if images.len() == 2 && images.iter().all(|i| *i == new_image) {
            Ok(())
        } else {
            Err(format!("{images:?}"))
        }
    })
    .await;
    c.wait("every workload's pods ready after the upgrade", async |c| {
        workloads_complete(c, &[CSO_NS, DRIVERS_NS, MANILA_NS]).await
    })
    .await;
    c.assert_nothing_refused().await;
}

/// The check above can fail: with the ClusterOperator manifest back before the Deployment (the
/// order this project shipped), the real CVO stops at the ClusterOperator barrier and never
/// creates the CSO Deployment, so nothing can ever make `storage` Available.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cvo_never_starts_the_cso_when_the_cluster_operator_sorts_before_its_deployment() {
    let mut c = RealCluster::openshift(openstack_sim::SimConfig::default(), &[V1]).await;
    let mut old_order = payload(V1);
    let current = std::fs::read_dir(manifest_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .find(|n| n.ends_with("_cluster_operator.yaml"))
        .expect("the ClusterOperator manifest");
    old_order.rename.insert(
        current,
        "0000_50_cluster-storage-operator_05_cluster_operator.yaml".into(),
    );
    c.run_cvo(&old_order).await;
    c.wait("the CVO to report the barrier", async |c| {
        let conditions = realkube::cvo::conditions(&c.client).await;
        match conditions.get("Failing") {
            Some((s, _, m)) if s == "True" && m.contains("storage") => Ok(()),
            _ => Err(format!("{conditions:#?}")),
        }
    })
    .await;
    let cso = Api::<Deployment>::namespaced(c.client.clone(), CSO_NS)
        .get_opt("cluster-storage-operator")
        .await
        .unwrap();
    assert!(
        cso.is_none(),
        "the Deployment sorts after the barrier and is never applied"
    );
}

/// The credentials hash annotation of the Cinder workloads (anchors §1.6).
const CREDENTIALS_HASH_KEY: &str =
    "operator.openshift.io/dep-4b51488ec5b742a098d092dfe49449df0986e";

/// The credentials hash on the Cinder controller's and node plugin's pod templates.
async fn cinder_credential_hashes(c: &RealCluster) -> Result<(String, String), String> {
    let annotation = |t: Option<&k8s_openapi::api::core::v1::PodTemplateSpec>| {
        t.and_then(|t| {
            t.metadata
                .as_ref()?
                .annotations
                .as_ref()?
                .get(CREDENTIALS_HASH_KEY)
                .cloned()
        })
    };
    let d = Api::<Deployment>::namespaced(c.client.clone(), DRIVERS_NS)
        .get_opt("openstack-cinder-csi-driver-controller")
        .await
        .map_err(|e| e.to_string())?
        .ok_or("no controller Deployment")?;
    let ds = Api::<DaemonSet>::namespaced(c.client.clone(), DRIVERS_NS)
        .get_opt("openstack-cinder-csi-driver-node")
        .await
        .map_err(|e| e.to_string())?
        .ok_or("no node DaemonSet")?;
    match (
        annotation(d.spec.as_ref().map(|s| &s.template)),
        annotation(ds.spec.as_ref().map(|s| &s.template)),
    ) {
        (Some(a), Some(b)) => Ok((a, b)),
        other => Err(format!("{other:?}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_manila_cinder_converges_and_a_credential_rotation_rolls_the_driver() {
    let openstack = openstack_sim::SimConfig {
        share_types: None,
        ..Default::default()
    };
    let mut c = installed(openstack).await;
    c.wait("Cinder available", async |c| {
        driver_available(c, "cinder.csi.openstack.org", &CINDER_AVAILABLE).await
    })
    .await;
    let (reason, message) = c
        .wait("Manila to report CSIControllerDisabled", async |c| {
            let cr = c
                .get(
                    "operator.openshift.io/v1",
                    "ClusterCSIDriver",
                    "clustercsidrivers",
                    "manila.csi.openstack.org",
                )
                .await
                .ok_or("no Manila ClusterCSIDriver")?;
            match RealCluster::conditions(&cr).get("CSIControllerDisabled") {
                Some((s, r, m)) if s == "True" => Ok((r.clone(), m.clone())),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    assert_eq!(reason, "PreConditionNotSatisfied");
    assert!(message.contains("sharev2"), "{message}");
    let manila = Api::<Deployment>::namespaced(c.client.clone(), MANILA_NS)
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(
        manila.items.is_empty(),
        "Manila deploys nothing without Manila"
    );
    c.wait("every workload's pods ready", async |c| {
        workloads_complete(c, &[CSO_NS, DRIVERS_NS]).await
    })
    .await;
    let (controller_before, node_before) = c
        .wait("credential hashes", async |c| {
            cinder_credential_hashes(c).await
        })
        .await;

    // The cloud credential operator mints a new user; the driver rolls, on the real
    // controller-manager, to pods with the new hash.
    let domain = openstack_sim::SimDomain::default();
    c.openstack.add_user(openstack_sim::SimUser {
        id: "u-rotated".into(),
        name: "rotated".into(),
        domain: domain.clone(),
        password: "rotated-password-7f3a".into(),
        project: openstack_sim::SimProject {
            id: "p-demo".into(),
            name: openstack_sim::DEFAULT_PROJECT.into(),
            domain,
        },
    });
    let rotated = c
        .openstack
        .clouds_yaml_password("openstack", "rotated", "rotated-password-7f3a");
    c.put_root_credentials(&rotated).await;
    let (controller_after, node_after) = c
        .wait("new credential hashes on both pod templates", async |c| {
            let (a, b) = cinder_credential_hashes(c).await?;
            if a != controller_before && b != node_before {
                Ok((a, b))
            } else {
                Err(format!("unchanged: {a} {b}"))
            }
        })
        .await;
    assert_eq!(controller_after, node_after);
    c.wait(
        "every workload's pods ready after the rotation",
        async |c| workloads_complete(c, &[CSO_NS, DRIVERS_NS]).await,
    )
    .await;
    c.wait("the operator to use the new user", async |c| {
        let used = c
            .openstack
            .requests()
            .iter()
            .any(|r| r.user_id.as_deref() == Some("u-rotated") && r.status == 200);
        if used {
            Ok(())
        } else {
            Err("no request as u-rotated yet".to_owned())
        }
    })
    .await;
    c.assert_nothing_refused().await;

    // The operators' own RBAC writes pass the admission policies that pin them (in force since
    // the CVO applied them): deleted, each object is made again by its owner, unrefused. One at
    // a time: without its own binding the Cinder operator may write nothing until the CSO has
    // made it again.
    use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
    for name in [
        "openstack-cinder-node-privileged-binding",
        "openstack-cinder-csi-driver-operator-clusterrolebinding",
    ] {
        let bindings: Api<ClusterRoleBinding> = Api::all(c.client.clone());
        bindings
            .delete(name, &Default::default())
            .await
            .expect("delete a binding");
        c.wait(&format!("{name} made again by its operator"), async |c| {
            let api: Api<ClusterRoleBinding> = Api::all(c.client.clone());
            api.get_opt(name)
                .await
                .map_err(|e| e.to_string())?
                .ok_or(format!("no {name} yet"))?;
            Ok(())
        })
        .await;
    }
    assert_eq!(
        c.refusals(),
        Vec::<String>::new(),
        "requests refused by RBAC or a policy"
    );
}

/// docs/smb.md's opt-in, done as it says on the real control plane with OpenShift's own CVO:
/// the administrator marks the CSO Deployment unmanaged with a CVO override and gives it
/// `CSO_OPTIONAL_DRIVERS=smb` and the SMB images. The CSO starts the SMB operator, whose
/// driver comes up under real RBAC and SCC admission (its controller binds the privileged
/// SCC), with no request refused, no pod refused, and the CVO leaving the opt-in alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opted_in_through_a_cvo_override_the_cso_runs_smb_under_real_rbac_and_scc() {
    use kube::api::{DynamicObject, Patch, PatchParams};
    use serde_json::json;
    const CSO: &str = "cluster-storage-operator";
    const SMB_AVAILABLE: [&str; 2] = [
        "SambaDriverControllerServiceControllerAvailable",
        "SambaDriverNodeServiceControllerAvailable",
    ];
    let mut c = installed(openstack_sim::SimConfig::default()).await;

    let versions = Api::<DynamicObject>::all_with(
        c.client.clone(),
        &operator_kit::kinds::known("config.openshift.io/v1", "ClusterVersion"),
    );
    let unmanaged = json!({"spec": {"overrides": [{"kind": "Deployment", "group": "apps",
        "namespace": CSO_NS, "name": CSO, "unmanaged": true}]}});
    versions
        .patch("version", &PatchParams::default(), &Patch::Merge(unmanaged))
        .await
        .expect("the CVO override");
    let opt_in = json!({"spec": {"template": {"spec": {"containers": [{"name": CSO, "env": [
        {"name": "CSO_OPTIONAL_DRIVERS", "value": "smb"},
        {"name": "SMB_DRIVER_OPERATOR_IMAGE", "value": release_operator_image(V1)},
        {"name": "SMB_DRIVER_IMAGE", "value": format!("quay.io/example/smbplugin:{V1}")},
    ]}]}}}});
    Api::<Deployment>::namespaced(c.client.clone(), CSO_NS)
        .patch(CSO, &PatchParams::default(), &Patch::Strategic(opt_in))
        .await
        .expect("the opt-in");

    c.wait("SMB available", async |c| {
        driver_available(c, "smb.csi.k8s.io", &SMB_AVAILABLE).await
    })
    .await;
    c.wait("every workload's pods ready, SMB's included", async |c| {
        let ready = workloads_complete(c, &[CSO_NS, DRIVERS_NS]).await?;
        let smb = Api::<DaemonSet>::namespaced(c.client.clone(), DRIVERS_NS)
            .get_opt("smb-csi-driver-node")
            .await
            .map_err(|e| e.to_string())?;
        smb.map(|_| ready)
            .ok_or("no SMB node DaemonSet yet".to_owned())
    })
    .await;
    c.wait("ClusterOperator/storage healthy with SMB", async |c| {
        storage_healthy(c, V1).await
    })
    .await;
    // The override holds: the CVO has not put the Deployment back.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let cso = Api::<Deployment>::namespaced(c.client.clone(), CSO_NS)
        .get(CSO)
        .await
        .expect("the CSO Deployment");
    let env = serde_json::to_value(&cso.spec.expect("spec").template)
        .expect("template")["spec"]["containers"][0]["env"]
        .clone();
    assert!(
        env.as_array()
            .into_iter()
            .flatten()
            .any(|e| e["name"] == "CSO_OPTIONAL_DRIVERS" && e["value"] == "smb"),
        "{env:#}"
    );
    c.assert_nothing_refused().await;
}
