//! End-to-end tests of the Cluster Storage Operator: the real `csi-operator cluster-storage
//! start` process against kube-sim, after `manifests/openshift/` was applied as the cluster
//! version operator applies it.
//!
//! Here the driver operators do not run (their Deployments are plain simulated pods), so the
//! tests play the driver operators by writing ClusterCSIDriver conditions, which pins the
//! roll-up into `Storage/cluster` and `ClusterOperator/storage` exactly (anchors §3.4). The
//! whole chain with the driver operators running is `chain_e2e.rs`.

mod common;

use std::collections::BTreeMap;

use common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use serde_json::{Value, json};
use testbed::Settings;

const CINDER_OPERATOR: &str = "openstack-cinder-csi-driver-operator";
const MANILA_OPERATOR: &str = "manila-csi-driver-operator";

async fn cso_bed() -> testbed::Testbed {
    let bed = bed_with(Settings::for_cluster_storage_operator()).await;
    apply_manifests(&bed).await;
    bed
}

async fn wait_deployment(bed: &testbed::Testbed, name: &str) -> Deployment {
    eventually(&format!("Deployment {name}"), || async {
        deployment_in(bed, NS, name)
            .await
            .ok_or_else(|| "missing".to_string())
    })
    .await
}

fn env_of(d: &Deployment) -> BTreeMap<String, String> {
    deployment_pod(d)
        .and_then(|p| p.containers.first())
        .and_then(|c| c.env.clone())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| Some((e.name, e.value?)))
        .collect()
}

/// Plays a driver operator: replaces the ClusterCSIDriver's conditions.
async fn report(bed: &testbed::Testbed, cr: &str, conditions: Value) {
    let now = "2026-01-01T00:00:00Z";
    let conditions: Vec<Value> = conditions
        .as_array()
        .expect("list")
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c["lastTransitionTime"] = json!(now);
            c
        })
        .collect();
    patch_status(
        bed,
        "operator.openshift.io/v1",
        "ClusterCSIDriver",
        cr,
        json!({"conditions": conditions}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_openstack_both_driver_operators_start_and_the_status_rolls_up_exactly() {
    let bed = cso_bed().await;
    let _cso = OperatorProcess::start_cso(&bed, &[], BTreeMap::new());
    let env = cso_manifest_env();

    // Both ClusterCSIDrivers, created with Storage's log level.
    for cr in [CR, MANILA_CR] {
        let obj = eventually(&format!("ClusterCSIDriver {cr}"), || async {
            cluster_object(&bed, "operator.openshift.io/v1", "ClusterCSIDriver", cr)
                .await
                .ok_or_else(|| "missing".to_string())
        })
        .await;
        assert_eq!(obj["spec"]["managementState"], "Managed");
        assert_eq!(obj["spec"]["logLevel"], "Normal");
        assert_eq!(obj["spec"]["operatorLogLevel"], "Normal");
    }
    // The operator Deployments with the CSO's images.
    let cinder = wait_deployment(&bed, CINDER_OPERATOR).await;
    let container = &deployment_pod(&cinder).unwrap().containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some(env["OPENSTACK_CINDER_DRIVER_OPERATOR_IMAGE"].as_str())
    );
    let cinder_env = env_of(&cinder);
    assert_eq!(
        cinder_env["DRIVER_IMAGE"],
        env["OPENSTACK_CINDER_DRIVER_IMAGE"]
    );
    assert_eq!(cinder_env["PROVISIONER_IMAGE"], env["PROVISIONER_IMAGE"]);
    assert!(
        container
            .args
            .as_ref()
            .unwrap()
            .contains(&"-v=2".to_string()),
        "{:?}",
        container.args
    );
    let manila = wait_deployment(&bed, MANILA_OPERATOR).await;
    assert_eq!(
        env_of(&manila)["NFS_DRIVER_IMAGE"],
        env["MANILA_NFS_DRIVER_IMAGE"]
    );
    // The operator config with the APIServer TLS profile.
    let config = eventually("the operator config", || async {
        config_map(&bed, NS, "openstack-cinder-csi-driver-operator-config")
            .await
            .and_then(|c| c.data)
            .and_then(|d| d.get("config.yaml").cloned())
            .ok_or_else(|| "missing".to_string())
    })
    .await;
    assert!(config.contains("GenericOperatorConfig"), "{config}");
    assert!(config.contains("minTLSVersion: VersionTLS12"), "{config}");

    // Nobody reported yet: waiting for both operators.
    let (_, reason, message) = wait_co_condition(&bed, "Available", "False").await;
    assert_eq!(
        reason,
        "ManilaCSIDriverOperatorCR_WaitForOperator::OpenStackCinderCSIDriverOperatorCR_WaitForOperator"
    );
    assert_eq!(
        message,
        "ManilaCSIDriverOperatorCRAvailable: Waiting for Manila operator to report status\nOpenStackCinderCSIDriverOperatorCRAvailable: Waiting for OpenStackCinder operator to report status"
    );
    wait_co_condition(&bed, "Progressing", "True").await;

    // Anchors §3.4 worked example, with Manila disabled (no Manila service).
    report(
        &bed,
        CR,
        json!([{"type": "OpenStackCinderDriverControllerServiceControllerAvailable",
                "status": "False", "reason": "Deploying", "message": "Waiting for Deployment"}]),
    )
    .await;
    report(
        &bed,
        MANILA_CR,
        json!([{"type": "CSIControllerDisabled", "status": "True",
                "reason": "PreConditionNotSatisfied",
                "message": "Pre-condition not satisfied: no Manila service"}]),
    )
    .await;
    let (_, reason, message) = eventually("the worked example", || async {
        let co = cluster_operator(&bed).await;
        let c = conditions_of(&co)
            .get("Available")
            .cloned()
            .unwrap_or_default();
        if c.1
            .starts_with("OpenStackCinderCSIDriverOperatorCR_OpenStackCinder")
        {
            Ok(c)
        } else {
            Err(format!("{c:?}"))
        }
    })
    .await;
    assert_eq!(
        reason,
        "OpenStackCinderCSIDriverOperatorCR_OpenStackCinderDriverControllerServiceController_Deploying"
    );
    assert_eq!(
        message,
        "OpenStackCinderCSIDriverOperatorCRAvailable: OpenStackCinderDriverControllerServiceControllerAvailable: Waiting for Deployment"
    );
    let st = conditions_of(&storage(&bed).await);
    assert_eq!(
        st["ManilaCSIDriverOperatorCRAvailable"],
        (
            "True".into(),
            "DriverDisabled".into(),
            "CSI driver for Manila is disabled: Pre-condition not satisfied: no Manila service"
                .into()
        )
    );
    assert_eq!(
        st["DefaultStorageClassControllerAvailable"].2,
        "StorageClass provided by supplied CSI Driver instead of the cluster-storage-operator"
    );

    // Cinder becomes available: so does storage.
    report(
        &bed,
        CR,
        json!([{"type": "OpenStackCinderDriverControllerServiceControllerAvailable",
                "status": "True", "reason": "AsExpected", "message": "Deployment is available"},
               {"type": "OpenStackCinderDriverControllerServiceControllerProgressing",
                "status": "False", "reason": "AsExpected", "message": ""}]),
    )
    .await;
    wait_co_condition(&bed, "Available", "True").await;
    wait_co_condition(&bed, "Progressing", "False").await;
    wait_co_condition(&bed, "Degraded", "False").await;
    wait_co_condition(&bed, "Upgradeable", "True").await;

    // relatedObjects: per driver (Manila first), then the static list; versions.
    let co = cluster_operator(&bed).await;
    let related = co["status"]["relatedObjects"].as_array().unwrap().clone();
    assert_eq!(
        related[0],
        json!({"group": "", "resource": "namespaces", "name": "openshift-manila-csi-driver"})
    );
    for name in [CR, MANILA_CR] {
        assert!(
            related.contains(&json!({"group": "operator.openshift.io",
                "resource": "clustercsidrivers", "name": name})),
            "{related:#?}"
        );
    }
    assert_eq!(
        related.last().unwrap(),
        &json!({"group": "rbac.authorization.k8s.io", "resource": "clusterrolebindings",
                "name": "cluster-storage-operator"})
    );
    assert_eq!(
        co["status"]["versions"],
        json!([{"name": "operator", "version": "0.0.1-snapshot"}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_platform_starts_nothing_and_says_why() {
    let bed = cso_bed().await;
    patch_status(
        &bed,
        "config.openshift.io/v1",
        "Infrastructure",
        "cluster",
        json!({"platformStatus": {"type": "AWS"}, "platform": "AWS"}),
    )
    .await;
    let _cso = OperatorProcess::start_cso(&bed, &[], BTreeMap::new());
    let (_, _, message) = wait_co_condition(&bed, "Available", "True").await;
    assert!(
        message.contains("No CSI driver operator started: the platform is \"AWS\""),
        "{message}"
    );
    wait_co_condition(&bed, "Upgradeable", "True").await;
    let st = conditions_of(&storage(&bed).await);
    assert_eq!(st["StorageOperatorUpgradeable"].0, "True");
    for name in [CINDER_OPERATOR, MANILA_OPERATOR] {
        assert!(deployment_in(&bed, NS, name).await.is_none(), "{name}");
    }
    for cr in [CR, MANILA_CR] {
        assert!(
            cluster_object(&bed, "operator.openshift.io/v1", "ClusterCSIDriver", cr)
                .await
                .is_none()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unmanaged_storage_hands_control_to_the_administrator() {
    let bed = cso_bed().await;
    let _cso = OperatorProcess::start_cso(&bed, &[], BTreeMap::new());
    wait_deployment(&bed, CINDER_OPERATOR).await;
    patch_object(
        &bed,
        "operator.openshift.io/v1",
        "Storage",
        "cluster",
        json!({"spec": {"managementState": "Unmanaged"}}),
    )
    .await;
    for t in ["Available", "Progressing", "Degraded", "Upgradeable"] {
        let (_, reason, _) = wait_co_condition(&bed, t, "Unknown").await;
        assert_eq!(reason, "Unmanaged");
    }
    // The administrator deletes an operator Deployment: it stays deleted.
    Api::<Deployment>::namespaced(bed.client.clone(), NS)
        .delete(CINDER_OPERATOR, &DeleteParams::default())
        .await
        .expect("delete");
    bed.kube.clear_requests();
    tokio::time::sleep(RESYNC * 3).await;
    assert!(deployment_in(&bed, NS, CINDER_OPERATOR).await.is_none());
    let writes: Vec<String> = bed
        .kube
        .requests()
        .iter()
        .filter(|r| r.user == CSO_USER && is_write(r) && !is_lease(r))
        .map(describe)
        .collect();
    assert!(writes.is_empty(), "{writes:#?}");
    // Managed again: it comes back.
    patch_object(
        &bed,
        "operator.openshift.io/v1",
        "Storage",
        "cluster",
        json!({"spec": {"managementState": "Managed"}}),
    )
    .await;
    wait_deployment(&bed, CINDER_OPERATOR).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_cluster_csi_driver_is_recreated_and_admin_edits_persist() {
    let bed = cso_bed().await;
    let _cso = OperatorProcess::start_cso(&bed, &[], BTreeMap::new());
    let before = wait_deployment(&bed, CINDER_OPERATOR).await;
    eventually("the Cinder ClusterCSIDriver", || async {
        cluster_object(&bed, "operator.openshift.io/v1", "ClusterCSIDriver", CR)
            .await
            .ok_or_else(|| "missing".to_string())
    })
    .await;
    // An admin edit is never overwritten.
    patch_object(
        &bed,
        "operator.openshift.io/v1",
        "ClusterCSIDriver",
        CR,
        json!({"spec": {"logLevel": "Debug"}}),
    )
    .await;
    tokio::time::sleep(RESYNC * 2).await;
    let cr = cluster_object(&bed, "operator.openshift.io/v1", "ClusterCSIDriver", CR)
        .await
        .unwrap();
    assert_eq!(cr["spec"]["logLevel"], "Debug");
    // Deleted: recreated with Storage's values; the operator Deployment is untouched.
    let ar =
        operator_kit::kinds::api_resource("operator.openshift.io/v1", "ClusterCSIDriver").unwrap();
    Api::<DynamicObject>::all_with(bed.client.clone(), &ar)
        .delete(CR, &DeleteParams::default())
        .await
        .expect("delete");
    let old_uid = cr["metadata"]["uid"].clone();
    let again = eventually("the ClusterCSIDriver to be recreated", || async {
        match cluster_object(&bed, "operator.openshift.io/v1", "ClusterCSIDriver", CR).await {
            Some(o) if o["metadata"]["uid"] != old_uid => Ok(o),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(again["spec"]["logLevel"], "Normal");
    let after = wait_deployment(&bed, CINDER_OPERATOR).await;
    assert_eq!(before.metadata.uid, after.metadata.uid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_csi_driver_blocks_its_operator_until_the_administrator_opts_in() {
    let bed = cso_bed().await;
    let csidrivers: Api<k8s_openapi::api::storage::v1::CSIDriver> = Api::all(bed.client.clone());
    let helm: k8s_openapi::api::storage::v1::CSIDriver = serde_json::from_value(json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
        "metadata": {"name": CR,
            "labels": {"app.kubernetes.io/managed-by": "Helm"},
            "annotations": {"meta.helm.sh/release-name": "cinder-csi",
                            "meta.helm.sh/release-namespace": "kube-system"}},
        "spec": {"attachRequired": true, "podInfoOnMount": true}
    }))
    .unwrap();
    csidrivers
        .create(&PostParams::default(), &helm)
        .await
        .expect("foreign CSIDriver");
    let _cso = OperatorProcess::start_cso(&bed, &["--degraded-inertia", "1s"], BTreeMap::new());
    let (_, reason, message) = wait_co_condition(&bed, "Degraded", "True").await;
    assert_eq!(reason, "CSIDriverStarter_ForeignCSIDriver");
    assert!(
        message.contains("CSIDriver cinder.csi.openstack.org already exists and was not installed by OpenShift (installed by Helm release cinder-csi in namespace kube-system)"),
        "{message}"
    );
    assert!(
        message.contains("csi.openshift.io/take-over=true"),
        "{message}"
    );
    // Manila is not affected; Cinder's operator is not started.
    wait_deployment(&bed, MANILA_OPERATOR).await;
    assert!(deployment_in(&bed, NS, CINDER_OPERATOR).await.is_none());
    assert!(
        cluster_object(&bed, "operator.openshift.io/v1", "ClusterCSIDriver", CR)
            .await
            .is_none()
    );
    // The opt-in.
    patch_object(
        &bed,
        "storage.k8s.io/v1",
        "CSIDriver",
        CR,
        json!({"metadata": {"annotations": {"csi.openshift.io/take-over": "true"}}}),
    )
    .await;
    wait_deployment(&bed, CINDER_OPERATOR).await;
    wait_co_condition(&bed, "Degraded", "False").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_images_in_the_cso_environment_roll_the_operator_deployments() {
    let bed = cso_bed().await;
    let cso = OperatorProcess::start_cso(&bed, &[], BTreeMap::new());
    let before = wait_deployment(&bed, CINDER_OPERATOR).await;
    drop(cso);
    let upgraded = BTreeMap::from([
        (
            "OPENSTACK_CINDER_DRIVER_OPERATOR_IMAGE".to_string(),
            "quay.io/example/csi-operator:v4.21".to_string(),
        ),
        (
            "OPENSTACK_CINDER_DRIVER_IMAGE".to_string(),
            "quay.io/example/cinder-csi-plugin:v4.21".to_string(),
        ),
        ("OPERATOR_IMAGE_VERSION".to_string(), "4.21.0".to_string()),
    ]);
    let _cso = OperatorProcess::start_cso(&bed, &[], upgraded);
    let after = eventually("the upgraded operator Deployment", || async {
        let d = wait_deployment(&bed, CINDER_OPERATOR).await;
        let image = deployment_pod(&d)
            .and_then(|p| p.containers.first())
            .and_then(|c| c.image.clone());
        if image.as_deref() == Some("quay.io/example/csi-operator:v4.21") {
            Ok(d)
        } else {
            Err(format!("{image:?}"))
        }
    })
    .await;
    assert_eq!(
        env_of(&after)["DRIVER_IMAGE"],
        "quay.io/example/cinder-csi-plugin:v4.21"
    );
    assert!(after.metadata.generation > before.metadata.generation);
    eventually("the new version on the ClusterOperator", || async {
        let co = cluster_operator(&bed).await;
        if co["status"]["versions"] == json!([{"name": "operator", "version": "4.21.0"}]) {
            Ok(())
        } else {
            Err(co["status"]["versions"].to_string())
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ca_syncer_copies_the_cloud_config_and_deletes_the_copy_with_the_source() {
    let bed = cso_bed().await;
    let _cso = OperatorProcess::start_cso(&bed, &[], BTreeMap::new());
    let source = config_map(&bed, testbed::CONFIG_NAMESPACE, "cloud-provider-config")
        .await
        .expect("seeded");
    let copy = eventually("the copy", || async {
        config_map(&bed, NS, "cloud-provider-config")
            .await
            .ok_or_else(|| "missing".to_string())
    })
    .await;
    assert_eq!(copy.data, source.data);
    // An update is copied.
    let cms: Api<ConfigMap> = Api::namespaced(bed.client.clone(), testbed::CONFIG_NAMESPACE);
    cms.patch(
        "cloud-provider-config",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"data": {"ca-bundle.pem": "PEM"}})),
    )
    .await
    .expect("patch");
    eventually("the updated copy", || async {
        match config_map(&bed, NS, "cloud-provider-config").await {
            Some(c)
                if c.data
                    .as_ref()
                    .and_then(|d| d.get("ca-bundle.pem"))
                    .is_some() =>
            {
                Ok(())
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    cms.delete("cloud-provider-config", &DeleteParams::default())
        .await
        .expect("delete");
    eventually("the copy to go", || async {
        match config_map(&bed, NS, "cloud-provider-config").await {
            None => Ok(()),
            Some(c) => Err(format!("{c:?}")),
        }
    })
    .await;
    let st = conditions_of(&storage(&bed).await);
    assert_eq!(st["ResourceSyncControllerDegraded"].0, "False");
}

/// The OpenShift 4.5 Manila install through OLM (anchors §3.7): Subscription, CSV, the OLM
/// operator Deployment owned by the CSV (so that the garbage collector removes it with the CSV,
/// as OLM does), and the old `ManilaDriver` CR with its finalizer. `hold` puts a finalizer on
/// the CSV so that its deletion stalls until the test releases it.
async fn install_manila_through_olm(bed: &testbed::Testbed, hold: bool) {
    const NS45: &str = "openshift-manila-csi-driver";
    const CSV: &str = "manila-csi-driver-operator.4.5.0-202008031234";
    let create = |api_version: &str, kind: &str, ns: Option<&str>, body: Value| {
        let ar = operator_kit::kinds::api_resource(api_version, kind).unwrap_or_else(|_| {
            let (group, version) = api_version.split_once('/').unwrap();
            let plural = format!("{}s", kind.to_lowercase());
            kube::core::ApiResource::from_gvk_with_plural(
                &kube::core::GroupVersionKind::gvk(group, version, kind),
                &plural,
            )
        });
        let api: Api<DynamicObject> = match ns {
            Some(ns) => Api::namespaced_with(bed.client.clone(), ns, &ar),
            None => Api::all_with(bed.client.clone(), &ar),
        };
        let obj: DynamicObject = serde_json::from_value(body).unwrap();
        async move {
            api.create(&PostParams::default(), &obj)
                .await
                .expect("create")
        }
    };
    let sub = create(
        "operators.coreos.com/v1alpha1",
        "Subscription",
        Some(NS45),
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
               "metadata": {"name": "manila-csi-driver-operator", "namespace": NS45},
               "spec": {"name": "manila-csi-driver-operator", "source": "redhat-operators",
                        "sourceNamespace": "openshift-marketplace", "channel": "4.5"}}),
    )
    .await;
    patch_namespaced_status(
        bed,
        "operators.coreos.com/v1alpha1",
        "Subscription",
        NS45,
        sub.metadata.name.as_deref().unwrap(),
        json!({"currentCSV": CSV, "installedCSV": CSV, "state": "AtLatestKnown",
               "lastUpdated": "2020-08-03T12:34:00Z"}),
    )
    .await;
    let finalizers = if hold {
        json!(["test.example.com/hold"])
    } else {
        json!([])
    };
    let csv = create(
        "operators.coreos.com/v1alpha1",
        "ClusterServiceVersion",
        Some(NS45),
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
               "metadata": {"name": CSV, "namespace": NS45, "finalizers": finalizers},
               "spec": {"displayName": "Manila CSI Driver Operator", "version": "4.5.0",
                        "install": {"strategy": "deployment"}}}),
    )
    .await;
    create(
        "apps/v1",
        "Deployment",
        Some(NS45),
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "csi-driver-manila-operator", "namespace": NS45,
                   "ownerReferences": [{"apiVersion": "operators.coreos.com/v1alpha1",
                       "kind": "ClusterServiceVersion", "name": CSV,
                       "uid": csv.metadata.uid, "controller": true}]},
               "spec": {"selector": {"matchLabels": {"name": "m"}},
                   "template": {"metadata": {"labels": {"name": "m"}},
                       "spec": {"containers": [{"name": "m", "image": "quay.io/openshift/manila-operator:4.5"}]}}}}),
    )
    .await;
    create(
        "csi.openshift.io/v1alpha1",
        "ManilaDriver",
        None,
        json!({"apiVersion": "csi.openshift.io/v1alpha1", "kind": "ManilaDriver",
               "metadata": {"name": "cluster", "finalizers": ["finalizer.manila.csi.openshift.io"]},
               "spec": {}}),
    )
    .await;
}

async fn patch_namespaced_status(
    bed: &testbed::Testbed,
    api_version: &str,
    kind: &str,
    ns: &str,
    name: &str,
    status: Value,
) {
    let (group, version) = api_version.split_once('/').unwrap();
    let ar = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk(group, version, kind),
        &format!("{}s", kind.to_lowercase()),
    );
    Api::<DynamicObject>::namespaced_with(bed.client.clone(), ns, &ar)
        .patch_status(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"status": status})),
        )
        .await
        .expect("status patch");
}

fn olm_ar(kind: &str, plural: &str) -> kube::core::ApiResource {
    kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("operators.coreos.com", "v1alpha1", kind),
        plural,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_olm_installed_manila_operator_is_removed_first_and_a_restart_resumes_the_removal() {
    const NS45: &str = "openshift-manila-csi-driver";
    let bed = cso_bed().await;
    install_manila_through_olm(&bed, true).await;
    let cso = OperatorProcess::start_cso(&bed, &[], BTreeMap::new());

    // The Subscription goes first; the CSV deletion stalls on the test's finalizer.
    let st = eventually("the removal to wait for the CSV", || async {
        let st = storage(&bed).await;
        let c = conditions_of(&st);
        match c.get("ManilaOLMOperatorRemovalProgressing") {
            Some(p) if p.2 == "Waiting for OLM CSV to be deleted" => Ok(st),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let c = conditions_of(&st);
    assert_eq!(
        c["ManilaOLMOperatorRemovalProgressing"],
        (
            "True".into(),
            "RemovingOLMOperator".into(),
            "Waiting for OLM CSV to be deleted".into()
        )
    );
    assert_eq!(c["ManilaOLMOperatorRemovalAvailable"].0, "False");
    let annotations = &st["metadata"]["annotations"];
    assert_eq!(
        annotations["Manila.olm-removal.storage.openshift.io/namespace"],
        NS45
    );
    assert_eq!(
        annotations["Manila.olm-removal.storage.openshift.io/csvName"],
        "manila-csi-driver-operator.4.5.0-202008031234"
    );
    let subs: Api<DynamicObject> = Api::namespaced_with(
        bed.client.clone(),
        NS45,
        &olm_ar("Subscription", "subscriptions"),
    );
    assert!(
        subs.get_opt("manila-csi-driver-operator")
            .await
            .unwrap()
            .is_none()
    );
    // Cinder is deployed meanwhile; the new Manila operator is not.
    wait_deployment(&bed, CINDER_OPERATOR).await;
    assert!(deployment_in(&bed, NS, MANILA_OPERATOR).await.is_none());

    // The CSO restarts in the middle; the saved progress carries the removal on.
    drop(cso);
    let _cso = OperatorProcess::start_cso(&bed, &[], BTreeMap::new());
    let csvs: Api<DynamicObject> = Api::namespaced_with(
        bed.client.clone(),
        NS45,
        &olm_ar("ClusterServiceVersion", "clusterserviceversions"),
    );
    csvs.patch(
        "manila-csi-driver-operator.4.5.0-202008031234",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("release the CSV");

    let (_, reason, message) = eventually("the removal to finish", || async {
        let c = conditions_of(&storage(&bed).await);
        match c.get("ManilaOLMOperatorRemovalAvailable") {
            Some(a) if a.0 == "True" => Ok(a.clone()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(reason, "Finished");
    assert_eq!(message, "CSI driver has been removed from OLM");
    // OLM's Deployment went with the CSV; the old CR lost its finalizer and is gone.
    assert!(
        deployment_in(&bed, NS45, "csi-driver-manila-operator")
            .await
            .is_none()
    );
    let old_cr = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("csi.openshift.io", "v1alpha1", "ManilaDriver"),
        "maniladrivers",
    );
    eventually("the old CR to go", || async {
        match Api::<DynamicObject>::all_with(bed.client.clone(), &old_cr)
            .get_opt("cluster")
            .await
        {
            Ok(None) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    // Only now the new operator; the saved progress is cleared.
    wait_deployment(&bed, MANILA_OPERATOR).await;
    eventually("the saved progress to be cleared", || async {
        let st = storage(&bed).await;
        let ns =
            &st["metadata"]["annotations"]["Manila.olm-removal.storage.openshift.io/namespace"];
        if ns == "" {
            Ok(())
        } else {
            Err(ns.to_string())
        }
    })
    .await;
    let c = conditions_of(&storage(&bed).await);
    assert_eq!(c["ManilaOLMOperatorRemovalProgressing"].0, "False");
    assert_eq!(c["ManilaOLMOperatorRemovalDegraded"].0, "False");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_olm_install_manila_is_deployed_at_once_and_the_flow_costs_nothing_after() {
    let bed = cso_bed().await;
    let _cso = OperatorProcess::start_cso(&bed, &[], BTreeMap::new());
    wait_deployment(&bed, MANILA_OPERATOR).await;
    let c = eventually("the flow to finish", || async {
        let c = conditions_of(&storage(&bed).await);
        match c.get("ManilaOLMOperatorRemovalAvailable") {
            Some(a) if a.0 == "True" => Ok(c),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(c["ManilaOLMOperatorRemovalAvailable"].1, "Finished");
    // Once finished, no more OLM requests.
    tokio::time::sleep(RESYNC).await;
    bed.kube.clear_requests();
    tokio::time::sleep(RESYNC * 2).await;
    let olm: Vec<String> = bed
        .kube
        .requests()
        .iter()
        .filter(|r| r.user == CSO_USER && r.resource.starts_with("operators.coreos.com"))
        .map(describe)
        .collect();
    assert!(olm.is_empty(), "{olm:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_log_level_drives_the_operators_verbosity_but_never_rewrites_a_cluster_csi_driver()
{
    let bed = cso_bed().await;
    let _cso = OperatorProcess::start_cso(&bed, &[], BTreeMap::new());
    wait_deployment(&bed, CINDER_OPERATOR).await;
    patch_object(
        &bed,
        "operator.openshift.io/v1",
        "Storage",
        "cluster",
        json!({"spec": {"logLevel": "Debug"}}),
    )
    .await;
    for name in [CINDER_OPERATOR, MANILA_OPERATOR] {
        eventually(&format!("{name} at -v=4"), || async {
            let d = wait_deployment(&bed, name).await;
            let args = deployment_pod(&d)
                .and_then(|p| p.containers.first())
                .and_then(|c| c.args.clone())
                .unwrap_or_default();
            if args.iter().any(|a| a == "-v=4") {
                Ok(())
            } else {
                Err(format!("{args:?}"))
            }
        })
        .await;
    }
    // The ClusterCSIDrivers were created with Normal and keep it: the CSO creates them once.
    let cr = cluster_object(&bed, "operator.openshift.io/v1", "ClusterCSIDriver", CR)
        .await
        .expect("exists");
    assert_eq!(cr["spec"]["logLevel"], "Normal");
}

/// Issue 24: under a sustained 409 to every write, the CSO backs off between reconciles
/// instead of running the whole reconcile again every second (it sent 1,390 requests in 10 s):
/// in 20 s, seven reconciles by the backoff (0, 0.2, 0.6, 1.4, 3, 6.2 and 12.6 s after the
/// first failure) and a few more started by watch events of writes that landed before the
/// storm, each giving up on the Storage status after four writes; and it converges once the
/// conflicts stop. Retrying every second, as it did, makes about fifteen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_of_409s_is_met_with_backoff_and_converges_after() {
    use kube_sim::{Fault, RequestMatch};
    let bed = cso_bed().await;
    let _cso = OperatorProcess::start_cso(&bed, &[], BTreeMap::new());
    eventually("the CSO's first write", || async {
        if requests_of(&bed, CSO_USER)
            .iter()
            .any(|r| is_write(r) && !is_lease(r))
        {
            Ok(())
        } else {
            Err("none yet".to_string())
        }
    })
    .await;
    for verb in ["create", "update", "patch", "delete"] {
        bed.kube.inject(Fault {
            matches: RequestMatch {
                verb: verb.into(),
                user: CSO_USER.into(),
                ..Default::default()
            },
            code: 409,
            times: 0,
            latency_ms: 0,
        });
    }
    bed.kube.clear_requests();
    tokio::time::sleep(std::time::Duration::from_secs(20)).await;
    let during = requests_of(&bed, CSO_USER);
    bed.kube.clear_faults();
    let storage_status_writes = during
        .iter()
        .filter(|r| {
            r.verb == "update"
                && r.resource == "operator.openshift.io/storages"
                && r.subresource == "status"
        })
        .count();
    assert!(
        (1..=40).contains(&storage_status_writes),
        "{storage_status_writes} Storage status writes (four per reconcile) and {} requests in 20 s of 409s",
        during.len()
    );
    for cr in [CR, MANILA_CR] {
        eventually(
            &format!("ClusterCSIDriver {cr} after the storm"),
            || async {
                cluster_object(&bed, "operator.openshift.io/v1", "ClusterCSIDriver", cr)
                    .await
                    .ok_or_else(|| "missing".to_string())
            },
        )
        .await;
    }
    for name in [CINDER_OPERATOR, MANILA_OPERATOR] {
        wait_deployment(&bed, name).await;
    }
}
