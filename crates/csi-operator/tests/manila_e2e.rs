//! End-to-end tests of the Manila operator: the real `csi-operator openstack-manila start`
//! binary as a process against kube-sim and openstack-sim over loopback, one test per scenario
//! of issue 4, item 7 (and the OpenStack request budget of item 8). Each test starts its own
//! emulators and its own process and asserts what an administrator would see (objects,
//! conditions, the request logs of both emulators), never how long anything took.
//!
//! The harness seeds what CSO and the cloud credential operator leave behind for Manila (the
//! ClusterCSIDriver, the driver namespace, `manila-cloud-credentials`) in every test, with or
//! without Manila in the cloud: that is what a real cluster looks like.

mod common;

use std::collections::BTreeMap;

use common::*;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service, ServiceAccount};
use k8s_openapi::api::storage::v1::{CSIDriver, StorageClass};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use openstack_sim::{
    Fault, SimDomain, SimExportLocation, SimProject, SimService, SimShare, SimShareNetwork,
    SimShareNetworkSubnet, SimShareType, SimStorage, SimUser,
};
use serde_json::json;
use testbed::Testbed;

/// Hash annotation of Secret `openshift-manila-csi-driver/manila-cloud-credentials` on the
/// controller and node pod templates (anchors §1.6 key derivation; ours: OpenShift has none).
const MANILA_CREDENTIALS_HASH_KEY: &str =
    "operator.openshift.io/dep-ddab15b13a85fe62beb3dcb9cf5af8cbfe1e5";

fn manila_deployments(bed: &Testbed) -> Api<Deployment> {
    Api::namespaced(bed.client.clone(), MANILA_NS)
}

fn manila_daemonsets(bed: &Testbed) -> Api<DaemonSet> {
    Api::namespaced(bed.client.clone(), MANILA_NS)
}

async fn manila_deployment(bed: &Testbed) -> Option<Deployment> {
    manila_deployments(bed)
        .get_opt(MANILA_CONTROLLER)
        .await
        .expect("get Deployment")
}

async fn manila_daemonset(bed: &Testbed, name: &str) -> Option<DaemonSet> {
    manila_daemonsets(bed)
        .get_opt(name)
        .await
        .expect("get DaemonSet")
}

/// Names of the StorageClasses this operator makes (`csi-manila-*`), sorted.
async fn manila_storage_classes(bed: &Testbed) -> Vec<String> {
    let mut names: Vec<String> = Api::<StorageClass>::all(bed.client.clone())
        .list(&ListParams::default())
        .await
        .expect("list StorageClasses")
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .filter(|n| n.starts_with("csi-manila-"))
        .collect();
    names.sort();
    names
}

async fn manila_csi_driver(bed: &Testbed) -> Option<CSIDriver> {
    Api::<CSIDriver>::all(bed.client.clone())
        .get_opt(MANILA_CR)
        .await
        .expect("get CSIDriver")
}

/// Share-type listings openstack-sim served (any status).
fn share_type_listings(bed: &Testbed) -> Vec<openstack_sim::RequestRecord> {
    bed.openstack
        .requests()
        .into_iter()
        .filter(|r| r.service == SimService::Share && r.path.ends_with("/types"))
        .collect()
}

fn describe_openstack(r: &openstack_sim::RequestRecord) -> String {
    format!(
        "{} {} -> {} as {:?}{}",
        r.method,
        r.path,
        r.status,
        r.user_id,
        if r.issued_token {
            " (token issued)"
        } else {
            ""
        }
    )
}

/// No condition, Event or log line holds any of `secrets`.
async fn assert_no_secret_leaks(bed: &Testbed, op: &OperatorProcess, secrets: &[&str]) {
    let conditions = bed.conditions(MANILA_CR).await;
    let events = event_messages(bed).await;
    let output = op.output();
    for s in secrets {
        for (t, (_, _, m)) in &conditions {
            assert!(!m.contains(s), "condition {t} echoes a secret: {m}");
        }
        for e in &events {
            assert!(!e.contains(s), "an Event echoes a secret: {e}");
        }
        assert!(!output.contains(s), "the operator log echoes a secret");
    }
}

/// The driver's objects are still in place (after an outage, Manila must not be uninstalled:
/// pods must still unmount their shares).
async fn assert_driver_installed(bed: &Testbed, storage_classes: &[&str]) {
    assert!(manila_deployment(bed).await.is_some(), "controller stays");
    for ds in [MANILA_NODE, MANILA_NFS_NODE] {
        assert!(manila_daemonset(bed, ds).await.is_some(), "{ds} stays");
    }
    assert!(manila_csi_driver(bed).await.is_some(), "CSIDriver stays");
    let classes = manila_storage_classes(bed).await;
    for sc in storage_classes {
        assert!(classes.iter().any(|c| c == sc), "{sc} stays: {classes:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_manila_the_driver_is_disabled_nothing_is_created_and_the_operator_idles() {
    let bed = bed_with(manila_settings(None)).await;
    seed_manila(&bed).await;
    // A short refresh: the failing detection repeats while idle and must not write each time.
    let mut op = OperatorProcess::start_manila(&bed, "2s");
    let (reason, message) =
        wait_condition_of(&bed, MANILA_CR, "CSIControllerDisabled", "True").await;
    assert_eq!(reason, "PreConditionNotSatisfied");
    assert!(
        message.starts_with("Pre-condition not satisfied: "),
        "{message}"
    );
    assert!(
        message.contains("sharev2") && message.contains("Manila"),
        "the message names the check that failed: {message}"
    );
    let conditions = bed.conditions(MANILA_CR).await;
    for (t, (status, reason, message)) in &conditions {
        if t.ends_with("Degraded") {
            assert_eq!(status, "False", "{t}: {reason}: {message}");
        }
    }

    // Everything it wrote since it started is its status (and its lease).
    let writes: Vec<String> = requests_of(&bed, MANILA_OPERATOR_USER)
        .iter()
        .filter(|r| is_write(r) && !is_lease(r))
        .filter(|r| {
            !(r.resource == "operator.openshift.io/clustercsidrivers" && r.subresource == "status")
        })
        .map(describe)
        .collect();
    assert!(writes.is_empty(), "a disabled operator wrote: {writes:#?}");

    // Idle over several failing detections: no write and no GET (lease renewals aside).
    wait_quiet_as(&bed, MANILA_OPERATOR_USER).await;
    bed.kube.clear_requests();
    tokio::time::sleep(RESYNC * 3).await;
    let requests: Vec<String> = requests_of(&bed, MANILA_OPERATOR_USER)
        .iter()
        .filter(|r| r.verb != "watch" && !is_lease(r))
        .map(describe)
        .collect();
    assert!(
        requests.is_empty(),
        "a disabled, idle operator made requests: {requests:#?}"
    );

    // Nothing of the driver exists: the namespace holds only what CSO and CCO put there.
    let client = bed.client.clone();
    let lp = ListParams::default();
    let deployments = Api::<Deployment>::namespaced(client.clone(), MANILA_NS)
        .list(&lp)
        .await
        .expect("list");
    let daemonsets = Api::<DaemonSet>::namespaced(client.clone(), MANILA_NS)
        .list(&lp)
        .await
        .expect("list");
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), MANILA_NS)
        .list(&lp)
        .await
        .expect("list");
    let services = Api::<Service>::namespaced(client.clone(), MANILA_NS)
        .list(&lp)
        .await
        .expect("list");
    let accounts = Api::<ServiceAccount>::namespaced(client.clone(), MANILA_NS)
        .list(&lp)
        .await
        .expect("list");
    let secrets: Vec<String> = Api::<Secret>::namespaced(client.clone(), MANILA_NS)
        .list(&lp)
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect();
    assert!(deployments.items.is_empty(), "no Deployment");
    assert!(daemonsets.items.is_empty(), "no DaemonSet");
    assert!(config_maps.items.is_empty(), "no ConfigMap");
    assert!(services.items.is_empty(), "no Service");
    assert!(accounts.items.is_empty(), "no ServiceAccount");
    assert_eq!(secrets, [MANILA_CREDENTIALS], "only CCO's Secret");
    assert!(manila_csi_driver(&bed).await.is_none(), "no CSIDriver");
    assert!(manila_storage_classes(&bed).await.is_empty());
    assert!(
        !exists(
            &bed,
            "snapshot.storage.k8s.io/v1",
            "VolumeSnapshotClass",
            "volumesnapshotclasses",
            None,
            "csi-manila-standard"
        )
        .await
    );
    assert!(op.is_running(), "the process stays alive");
}

/// Every object of anchors §5.2 with its API version, kind, plural and namespace.
const SECTION_5_2: &[(&str, &str, &str, bool, &str)] = &[
    (
        "v1",
        "ConfigMap",
        "configmaps",
        true,
        "manila-csi-driver-trusted-ca-bundle",
    ),
    (
        "apps/v1",
        "Deployment",
        "deployments",
        true,
        MANILA_CONTROLLER,
    ),
    (
        "policy/v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
        "openstack-manila-csi-controllerplugin-pdb",
    ),
    (
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        true,
        "manila-csi-driver-controller-sa",
    ),
    (
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        true,
        "manila-csi-driver-node-sa",
    ),
    (
        "v1",
        "Service",
        "services",
        true,
        "manila-csi-driver-controller-metrics",
    ),
    ("v1", "Secret", "secrets", true, "csi-manila-secrets"),
    (
        "storage.k8s.io/v1",
        "CSIDriver",
        "csidrivers",
        false,
        MANILA_CR,
    ),
    ("apps/v1", "DaemonSet", "daemonsets", true, MANILA_NODE),
    ("apps/v1", "DaemonSet", "daemonsets", true, MANILA_NFS_NODE),
    (
        "snapshot.storage.k8s.io/v1",
        "VolumeSnapshotClass",
        "volumesnapshotclasses",
        false,
        "csi-manila-standard",
    ),
    // RBAC: the bindings of the table (no attacher) and their own roles.
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        "openstack-manila-csi-main-provisioner-binding",
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        "openstack-manila-csi-main-resizer-binding",
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        "openstack-manila-csi-main-snapshotter-binding",
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        "openstack-manila-csi-storageclass-reader-resizer-binding",
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        "openstack-manila-csi-volumesnapshot-reader-provisioner-binding",
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        "openstack-manila-kube-rbac-proxy-binding",
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        "openstack-manila-node-privileged-binding",
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "clusterroles",
        false,
        "openstack-manila-kube-rbac-proxy-role",
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "clusterroles",
        false,
        "openstack-manila-privileged-role",
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "Role",
        "roles",
        true,
        "manila-csi-driver-lease-leader-election",
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "rolebindings",
        true,
        "manila-csi-driver-lease-leader-election",
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "Role",
        "roles",
        true,
        "manila-csi-driver-prometheus",
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "rolebindings",
        true,
        "manila-csi-driver-prometheus",
    ),
    // The ResourceSyncController's copy of openshift-config/cloud-provider-config.
    (
        "v1",
        "ConfigMap",
        "configmaps",
        true,
        "cloud-provider-config",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_manila_every_object_is_deployed_with_a_class_per_share_type_and_available() {
    let bed = bed_with(manila_settings(Some(&["default", "Gold_Fast"]))).await;
    seed_manila(&bed).await;
    let mut op = OperatorProcess::start_manila(&bed, "10m");
    let conditions = wait_manila_available(&bed).await;
    for t in [
        "ManagementStateDegraded",
        "ConfigObservationDegraded",
        "StarterControllerDegraded",
        "ResourceSyncControllerDegraded",
        "OpenStackManilaDriverControlPlaneStaticResourcesControllerDegraded",
        "OpenStackManilaDriverGuestStaticResourcesControllerDegraded",
        "OpenStackManilaDriverControllerServiceControllerDegraded",
        "OpenStackManilaDriverNodeServiceControllerDegraded",
        "NFSDriverNodeServiceControllerDegraded",
        "VolumeSnapshotClassControllerDegraded",
    ] {
        assert_eq!(
            conditions.get(t).map(|c| c.0.as_str()),
            Some("False"),
            "{t} is reported and False: {conditions:#?}"
        );
    }
    // The testbed's Keystone is plain HTTP: both clouds.yaml Secrets are named for it, and
    // the cluster is not degraded by it.
    let (status, reason, message) = &conditions["InsecureOpenStackConnection"];
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "InsecureCloudConfig")
    );
    assert!(
        message.contains("plain HTTP")
            && message.contains("openshift-cluster-csi-drivers/openstack-cloud-credentials")
            && message.contains("openshift-manila-csi-driver/manila-cloud-credentials"),
        "{message}"
    );

    // Every object of anchors §5.2 (the VolumeSnapshotClass may follow its step a little later).
    eventually("every object of anchors §5.2", || async {
        let mut missing = Vec::new();
        for (api_version, kind, plural, namespaced, name) in SECTION_5_2 {
            let ns = namespaced.then_some(MANILA_NS);
            if !exists(&bed, api_version, kind, plural, ns, name).await {
                missing.push(format!("{kind} {name}"));
            }
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!("missing {missing:?}"))
        }
    })
    .await;

    // The CSIDriver (one writer, fsGroupPolicy from CSI_FSGROUP_POLICY, unset here).
    let driver = manila_csi_driver(&bed).await.expect("CSIDriver");
    assert_eq!(driver.spec.attach_required, Some(false));
    assert_eq!(driver.spec.pod_info_on_mount, Some(false));
    assert_eq!(driver.spec.fs_group_policy.as_deref(), Some("None"));
    assert_eq!(
        driver
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("csi.openshift.io/managed"))
            .map(String::as_str),
        Some("true")
    );

    // The controller: the NFS driver beside the Manila driver, the sidecars, no attacher.
    let d = manila_deployment(&bed).await.expect("Deployment");
    let names: Vec<&str> = deployment_pod(&d)
        .map(|p| p.containers.iter().map(|c| c.name.as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        names,
        [
            "csi-driver",
            "csi-driver-nfs",
            "csi-provisioner",
            "provisioner-kube-rbac-proxy",
            "csi-resizer",
            "resizer-kube-rbac-proxy",
            "csi-snapshotter",
            "snapshotter-kube-rbac-proxy",
            "csi-liveness-probe",
        ]
    );
    assert_eq!(
        container(deployment_pod(&d), "csi-driver-nfs").and_then(|c| c.image.clone()),
        manila_images().get("NFS_DRIVER_IMAGE").cloned(),
        "the NFS image comes from the environment"
    );
    assert!(
        deployment_template_annotations(&d).contains_key(MANILA_CREDENTIALS_HASH_KEY),
        "the controller pods carry the credentials hash: {:?}",
        deployment_template_annotations(&d)
    );
    // The node plugin waits for the NFS socket.
    let node = manila_daemonset(&bed, MANILA_NODE)
        .await
        .expect("node DaemonSet");
    let init: Vec<String> = daemonset_pod(&node)
        .and_then(|p| p.init_containers.as_ref())
        .map(|c| c.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default();
    assert_eq!(init, ["wait-for-nfs-plugin"]);
    // The static CSI Secret points the driver at the mounted clouds.yaml (no credentials).
    let csi_secret = Api::<Secret>::namespaced(bed.client.clone(), MANILA_NS)
        .get("csi-manila-secrets")
        .await
        .expect("csi-manila-secrets");
    let data: BTreeMap<String, String> = csi_secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
        .collect();
    assert_eq!(
        data,
        BTreeMap::from([
            ("os-cloud".to_string(), "openstack".to_string()),
            (
                "os-cloudsFile".to_string(),
                "/etc/openstack/clouds.yaml".to_string()
            ),
            ("os-useClouds".to_string(), "true".to_string()),
        ])
    );

    // One StorageClass per share type, anchors §5.3.
    assert_eq!(
        manila_storage_classes(&bed).await,
        ["csi-manila-default", "csi-manila-gold-fast"]
    );
    let gold = Api::<StorageClass>::all(bed.client.clone())
        .get("csi-manila-gold-fast")
        .await
        .expect("StorageClass");
    let params = gold.parameters.clone().unwrap_or_default();
    assert_eq!(params.get("type").map(String::as_str), Some("Gold_Fast"));
    assert_eq!(gold.provisioner, MANILA_CR);
    assert_eq!(gold.volume_binding_mode.as_deref(), Some("Immediate"));
    assert_eq!(gold.reclaim_policy.as_deref(), Some("Delete"));
    assert_eq!(gold.allow_volume_expansion, Some(true));
    for s in [
        "provisioner",
        "node-stage",
        "node-publish",
        "controller-expand",
    ] {
        assert_eq!(
            params
                .get(&format!("csi.storage.k8s.io/{s}-secret-name"))
                .map(String::as_str),
            Some("csi-manila-secrets")
        );
        assert_eq!(
            params
                .get(&format!("csi.storage.k8s.io/{s}-secret-namespace"))
                .map(String::as_str),
            Some(MANILA_NS)
        );
    }
    assert!(op.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_share_type_added_later_gets_its_storage_class() {
    let bed = bed_with(manila_settings(Some(&["default", "Gold_Fast"]))).await;
    seed_manila(&bed).await;
    let mut op = OperatorProcess::start_manila(&bed, "2s");
    wait_manila_available(&bed).await;
    assert_eq!(
        manila_storage_classes(&bed).await,
        ["csi-manila-default", "csi-manila-gold-fast"]
    );
    bed.openstack
        .add_share_type(SimShareType::new("silver_NFS"));
    eventually("csi-manila-silver-nfs to appear", || async {
        let classes = manila_storage_classes(&bed).await;
        if classes.iter().any(|c| c == "csi-manila-silver-nfs") {
            Ok(())
        } else {
            Err(format!("{classes:?}"))
        }
    })
    .await;
    let silver = Api::<StorageClass>::all(bed.client.clone())
        .get("csi-manila-silver-nfs")
        .await
        .expect("StorageClass");
    assert_eq!(
        silver
            .parameters
            .as_ref()
            .and_then(|p| p.get("type"))
            .map(String::as_str),
        Some("silver_NFS"),
        "the type parameter is the original share-type name"
    );
    wait_condition_of(
        &bed,
        MANILA_CR,
        "ManilaStorageClassControllerDegraded",
        "False",
    )
    .await;
    assert!(op.is_running());
}

/// Seed 002: the driver appears when Manila appears. The operator's Keystone token (valid for
/// hours) was issued with a catalog without `sharev2`; the next detection must not trust it,
/// and reads the current catalog with that same token instead of asking for a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manila_enabled_in_the_cloud_after_install_is_installed_at_the_next_refresh() {
    let bed = bed_with(manila_settings(None)).await;
    seed_manila(&bed).await;
    let mut op = OperatorProcess::start_manila(&bed, "2s");
    wait_condition_of(&bed, MANILA_CR, "CSIControllerDisabled", "True").await;
    assert!(manila_deployment(&bed).await.is_none());
    assert_eq!(bed.openstack.token_issuances(), 1);

    bed.openstack.set_manila_enabled(true);
    bed.openstack.add_share_type(SimShareType::new("default"));
    wait_manila_available(&bed).await;
    assert_driver_installed(&bed, &["csi-manila-default"]).await;
    let disabled = bed
        .conditions(MANILA_CR)
        .await
        .remove("CSIControllerDisabled");
    assert!(
        disabled
            .as_ref()
            .is_none_or(|(status, ..)| status != "True"),
        "{disabled:?}"
    );
    assert!(op.is_running(), "installed without a restart");
    let log = bed.openstack.requests();
    assert_eq!(
        bed.openstack.token_issuances(),
        1,
        "Manila was found without a second token: {:#?}",
        log.iter().map(describe_openstack).collect::<Vec<_>>()
    );
    assert!(
        log.iter()
            .any(|r| r.path.ends_with("/v3/auth/catalog") && r.status == 200),
        "found in the current catalog: {:#?}",
        log.iter().map(describe_openstack).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credential_rotation_rolls_the_pods_and_the_next_detection_uses_the_new_credentials() {
    let bed = bed_with(manila_settings(Some(&["default"]))).await;
    seed_manila(&bed).await;
    // A long refresh: the only detection after the rotation is the one the rotation triggers.
    let mut op = OperatorProcess::start_manila(&bed, "10m");
    wait_manila_available(&bed).await;
    let d = manila_deployment(&bed).await.expect("Deployment");
    let ds = manila_daemonset(&bed, MANILA_NODE)
        .await
        .expect("DaemonSet");
    let d_before = deployment_template_annotations(&d)
        .get(MANILA_CREDENTIALS_HASH_KEY)
        .cloned()
        .expect("the controller pod template has the credentials hash");
    let ds_before = daemonset_template_annotations(&ds)
        .get(MANILA_CREDENTIALS_HASH_KEY)
        .cloned()
        .expect("the node pod template has the credentials hash");
    assert_eq!(d_before, ds_before, "same Secret, same hash");

    // The cloud credential operator mints a new user and rewrites both Secrets; the old
    // password is retired (which revokes its tokens).
    let domain = SimDomain::default();
    bed.openstack.add_user(SimUser {
        id: "u-rotated".into(),
        name: "rotated".into(),
        domain: domain.clone(),
        password: "rotated-password-4c1d".into(),
        project: SimProject {
            id: "p-demo".into(),
            name: openstack_sim::DEFAULT_PROJECT.into(),
            domain,
        },
    });
    bed.openstack.clear_requests();
    let rotated =
        bed.openstack
            .clouds_yaml_password("openstack", "rotated", "rotated-password-4c1d");
    bed.put_credentials(&rotated, None).await.expect("rotate");
    put_manila_credentials(&bed, &rotated).await;
    bed.openstack
        .set_password(openstack_sim::DEFAULT_USER, "retired-password");

    let (d_after, ds_after) = eventually("new hashes on both pod templates", || async {
        let d = manila_deployment(&bed).await.ok_or("no Deployment")?;
        let ds = manila_daemonset(&bed, MANILA_NODE)
            .await
            .ok_or("no DaemonSet")?;
        let a = deployment_template_annotations(&d)
            .get(MANILA_CREDENTIALS_HASH_KEY)
            .cloned();
        let b = daemonset_template_annotations(&ds)
            .get(MANILA_CREDENTIALS_HASH_KEY)
            .cloned();
        match (a, b) {
            (Some(a), Some(b)) if a != d_before && b != ds_before => Ok((a, b)),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(d_after, ds_after);

    // The detection the rotation triggered authenticated as the new user and listed share
    // types with its token.
    eventually("a share-type listing with the new credentials", || async {
        let log = bed.openstack.requests();
        let issued = log
            .iter()
            .any(|r| r.issued_token && r.user_id.as_deref() == Some("u-rotated"));
        let listed = share_type_listings(&bed)
            .iter()
            .any(|r| r.user_id.as_deref() == Some("u-rotated") && r.status == 200);
        if issued && listed {
            Ok(())
        } else {
            Err(format!(
                "{:#?}",
                log.iter().map(describe_openstack).collect::<Vec<_>>()
            ))
        }
    })
    .await;
    let stale: Vec<String> = bed
        .openstack
        .requests()
        .iter()
        .filter(|r| r.user_id.as_deref() != Some("u-rotated"))
        .map(describe_openstack)
        .collect();
    assert!(
        stale.is_empty(),
        "every OpenStack call after the rotation uses the new credentials: {stale:#?}"
    );
    wait_condition_of(&bed, MANILA_CR, "StarterControllerDegraded", "False").await;
    assert_no_secret_leaks(&bed, &op, &["rotated-password-4c1d"]).await;
    assert!(op.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manila_outage_after_start_keeps_the_driver_and_is_explained() {
    let bed = bed_with(manila_settings(Some(&["default", "Gold_Fast"]))).await;
    seed_manila(&bed).await;
    let mut op = OperatorProcess::start_manila(&bed, "2s");
    wait_manila_available(&bed).await;
    let classes = ["csi-manila-default", "csi-manila-gold-fast"];

    // The share service answers 503.
    bed.openstack
        .inject(Fault::status(503).on(SimService::Share));
    let (reason, message) =
        wait_condition_of(&bed, MANILA_CR, "ManilaServiceReachable", "False").await;
    eprintln!("outage: {reason}: {message}");
    assert_eq!(reason, "ManilaUnavailable");
    assert!(message.contains("503"), "{message}");
    assert!(message.contains("stays installed"), "{message}");
    assert!(
        !bed.conditions(MANILA_CR)
            .await
            .contains_key("CSIControllerDisabled"),
        "an installed driver is not reported as disabled"
    );
    assert_driver_installed(&bed, &classes).await;
    assert_eq!(
        bed.conditions(MANILA_CR)
            .await
            .get("StarterControllerDegraded")
            .map(|c| c.0.clone()),
        Some("False".to_string()),
        "a cloud-side Manila outage must not degrade the cluster"
    );
    bed.openstack.clear_faults();
    wait_condition_of(&bed, MANILA_CR, "ManilaServiceReachable", "True").await;

    // Manila is removed from the cloud altogether.
    bed.openstack.set_manila_enabled(false);
    let (_, message) = wait_condition_of(&bed, MANILA_CR, "ManilaServiceReachable", "False").await;
    eprintln!("Manila removed: {message}");
    assert!(message.contains("Manila cannot be used now"), "{message}");
    // Several detections later the driver is still there, and not flapping.
    wait_quiet_as(&bed, MANILA_OPERATOR_USER).await;
    assert_driver_installed(&bed, &classes).await;
    assert!(
        !bed.conditions(MANILA_CR)
            .await
            .contains_key("CSIControllerDisabled")
    );
    assert!(op.is_running());
}

/// Drops the enum of `operatorLogLevel` and the pattern of `managementState` from the
/// ClusterCSIDriver CRD, as an older or hand-edited CRD would, so that values the current
/// schema rejects can reach the operator.
async fn relax_cluster_csi_driver_schema(bed: &Testbed) {
    let crds: Api<CustomResourceDefinition> = Api::all(bed.client.clone());
    let name = "clustercsidrivers.operator.openshift.io";
    let mut crd = crds.get(name).await.expect("the ClusterCSIDriver CRD");
    crd.metadata.managed_fields = None;
    for version in &mut crd.spec.versions {
        let spec = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
            .and_then(|s| s.properties.as_mut())
            .and_then(|p| p.get_mut("spec"))
            .and_then(|s| s.properties.as_mut())
            .expect("spec properties");
        if let Some(level) = spec.get_mut("operatorLogLevel") {
            level.enum_ = None;
        }
        if let Some(state) = spec.get_mut("managementState") {
            state.pattern = None;
        }
    }
    crds.replace(name, &PostParams::default(), &crd)
        .await
        .expect("replace the CRD");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_cr_input_is_a_readable_condition_and_the_process_lives() {
    let bed = bed_with(manila_settings(Some(&["default"]))).await;
    seed_manila(&bed).await;
    let mut op = OperatorProcess::start_manila(&bed, "10m");
    wait_manila_available(&bed).await;

    // The current schema stops a misspelt management state at the API server.
    let ar = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("operator.openshift.io", "v1", "ClusterCSIDriver"),
        "clustercsidrivers",
    );
    let crs: Api<kube::api::DynamicObject> = Api::all_with(bed.client.clone(), &ar);
    let rejected = crs
        .patch(
            MANILA_CR,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"managementState": "Manged"}})),
        )
        .await;
    assert!(
        matches!(&rejected, Err(kube::Error::Api(e)) if e.code == 422),
        "{rejected:?}"
    );

    // A value the schema allows but the operator does not support.
    patch_cr_spec_of(&bed, MANILA_CR, json!({"managementState": "Force"})).await;
    let (reason, message) =
        wait_condition_of(&bed, MANILA_CR, "ManagementStateDegraded", "True").await;
    assert_eq!(reason, "Unknown");
    assert!(
        message.contains("\"Force\"") && message.contains("Managed or Unmanaged"),
        "{message}"
    );
    assert!(op.is_running());

    // With a schema that lets anything through (an older CRD), a misspelt value is reported
    // the same way, and an unknown operatorLogLevel gets its own readable condition.
    relax_cluster_csi_driver_schema(&bed).await;
    patch_cr_spec_of(&bed, MANILA_CR, json!({"managementState": "Manged"})).await;
    eventually("ManagementStateDegraded to name \"Manged\"", || async {
        let c = bed.conditions(MANILA_CR).await;
        match c.get("ManagementStateDegraded") {
            Some((s, _, m)) if s == "True" && m.contains("\"Manged\"") => Ok(()),
            _ => Err(format!("{c:#?}")),
        }
    })
    .await;
    assert!(op.is_running());
    patch_cr_spec_of(
        &bed,
        MANILA_CR,
        json!({"managementState": "Managed", "operatorLogLevel": "Chatty"}),
    )
    .await;
    let (reason, message) =
        wait_condition_of(&bed, MANILA_CR, "LoggingSyncerDegraded", "True").await;
    assert_eq!(reason, "InvalidLogLevel");
    assert!(
        message.contains("spec.operatorLogLevel \"Chatty\"")
            && message.contains("Normal, Debug, Trace, TraceAll"),
        "{message}"
    );
    wait_condition_of(&bed, MANILA_CR, "ManagementStateDegraded", "False").await;
    // The driver keeps running meanwhile; fixing the value clears the condition.
    assert!(manila_deployment(&bed).await.is_some());
    patch_cr_spec_of(&bed, MANILA_CR, json!({"operatorLogLevel": "Debug"})).await;
    wait_condition_of(&bed, MANILA_CR, "LoggingSyncerDegraded", "False").await;
    assert!(op.is_running());
}

/// A rejected or unreachable Keystone before Manila was ever usable: disabled (not degraded)
/// with a message that says what failed and no secret, and a fix of the Secret recovers at
/// once, not at the next refresh (which is 10 minutes away here).
async fn assert_disabled_then_recovers(
    bed: &Testbed,
    op: &mut OperatorProcess,
    message_mentions: &[&str],
    secrets: &[&str],
) {
    let (reason, message) =
        wait_condition_of(bed, MANILA_CR, "CSIControllerDisabled", "True").await;
    eprintln!("CSIControllerDisabled: {reason}: {message}");
    assert_eq!(reason, "PreConditionNotSatisfied");
    for m in message_mentions {
        assert!(
            message.contains(m),
            "the message {message:?} should mention {m:?}"
        );
    }
    let conditions = bed.conditions(MANILA_CR).await;
    for (t, (status, _, m)) in &conditions {
        if t.ends_with("Degraded") {
            assert_eq!(status, "False", "{t}: {m}");
        }
    }
    assert!(manila_deployment(bed).await.is_none(), "nothing deployed");
    assert!(op.is_running());
    assert_no_secret_leaks(bed, op, secrets).await;

    bed.put_credentials(&bed.clouds_yaml(), None)
        .await
        .expect("fix the credentials");
    wait_manila_available(bed).await;
    assert_eq!(
        manila_storage_classes(bed).await,
        ["csi-manila-default"],
        "{:?}",
        bed.conditions(MANILA_CR).await
    );
    assert_no_secret_leaks(bed, op, secrets).await;
    assert!(op.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_disables_readably_and_recovers_when_the_secret_is_fixed() {
    let bed = bed_with(manila_settings(Some(&["default"]))).await;
    seed_manila(&bed).await;
    let wrong = bed.openstack.clouds_yaml_password(
        "openstack",
        openstack_sim::DEFAULT_USER,
        "not-the-password-8812",
    );
    bed.put_credentials(&wrong, None)
        .await
        .expect("credentials");
    let mut op = OperatorProcess::start_manila(&bed, "10m");
    assert_disabled_then_recovers(
        &bed,
        &mut op,
        &["cannot authenticate", "401"],
        &["not-the-password-8812", openstack_sim::DEFAULT_PASSWORD],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_keystone_disables_readably_and_recovers_when_the_secret_is_fixed() {
    let bed = bed_with(manila_settings(Some(&["default"]))).await;
    seed_manila(&bed).await;
    // A port that nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port");
    let clouds = bed
        .clouds_yaml()
        .replace(&bed.openstack.url(), &format!("http://{closed}"));
    assert!(clouds.contains(&closed.to_string()), "{clouds}");
    bed.put_credentials(&clouds, None)
        .await
        .expect("credentials");
    let mut op = OperatorProcess::start_manila(&bed, "10m");
    assert_disabled_then_recovers(
        &bed,
        &mut op,
        &["Keystone", "cannot connect"],
        &[openstack_sim::DEFAULT_PASSWORD],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_with_manila_no_writes_no_gets_and_no_openstack_call_on_unrelated_events() {
    let bed = bed_with(manila_settings(Some(&["default", "Gold_Fast"]))).await;
    seed_manila(&bed).await;
    let mut op = OperatorProcess::start_manila(&bed, "10m");
    wait_manila_available(&bed).await;
    wait_quiet_as(&bed, MANILA_OPERATOR_USER).await;
    bed.kube.clear_requests();
    bed.openstack.clear_requests();

    // Unrelated StorageClass and CSIDriver events: the anchors' operator re-authenticated and
    // listed share types on each (users file §1.15).
    let sc: StorageClass = serde_json::from_value(json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "local-fast"},
        "provisioner": "kubernetes.io/no-provisioner",
    }))
    .expect("StorageClass");
    Api::<StorageClass>::all(bed.client.clone())
        .create(&PostParams::default(), &sc)
        .await
        .expect("create an unrelated StorageClass");
    let driver: CSIDriver = serde_json::from_value(json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
        "metadata": {"name": "other.csi.example.com"},
        "spec": {"attachRequired": false},
    }))
    .expect("CSIDriver");
    Api::<CSIDriver>::all(bed.client.clone())
        .create(&PostParams::default(), &driver)
        .await
        .expect("create an unrelated CSIDriver");

    // Several resyncs pass.
    tokio::time::sleep(RESYNC * 3).await;
    let requests: Vec<String> = requests_of(&bed, MANILA_OPERATOR_USER)
        .iter()
        .filter(|r| r.verb != "watch" && !is_lease(r))
        .map(describe)
        .collect();
    assert!(
        requests.is_empty(),
        "an idle operator made requests: {requests:#?}"
    );
    let openstack: Vec<String> = bed
        .openstack
        .requests()
        .iter()
        .map(describe_openstack)
        .collect();
    assert!(
        openstack.is_empty(),
        "OpenStack calls while idle with a 10m refresh: {openstack:#?}"
    );
    assert!(op.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_openstack_requests_are_one_share_type_list_per_refresh_and_one_token() {
    let bed = bed_with(manila_settings(Some(&["default", "Gold_Fast"]))).await;
    seed_manila(&bed).await;
    let mut op = OperatorProcess::start_manila(&bed, "2s");
    wait_manila_available(&bed).await;
    wait_quiet_as(&bed, MANILA_OPERATOR_USER).await;
    bed.kube.clear_requests();

    // Several refreshes while idle.
    let before = share_type_listings(&bed).len();
    eventually("four more share-type listings", || async {
        let n = share_type_listings(&bed).len();
        if n >= before + 4 {
            Ok(())
        } else {
            Err(format!("{n} listings"))
        }
    })
    .await;

    // Kubernetes: nothing changed, so nothing was written.
    let writes: Vec<String> = requests_of(&bed, MANILA_OPERATOR_USER)
        .iter()
        .filter(|r| is_write(r) && !is_lease(r))
        .map(describe)
        .collect();
    assert!(writes.is_empty(), "refreshes wrote: {writes:#?}");

    // OpenStack, over the whole run: one token, reused by every listing, and nothing but
    // listings besides it.
    let log = bed.openstack.requests();
    let issued: Vec<&openstack_sim::RequestRecord> =
        log.iter().filter(|r| r.issued_token).collect();
    assert_eq!(
        issued.len(),
        1,
        "one token issuance: {:#?}",
        log.iter().map(describe_openstack).collect::<Vec<_>>()
    );
    let token = issued.first().and_then(|r| r.token.clone());
    let other: Vec<String> = log
        .iter()
        .filter(|r| !r.issued_token)
        .filter(|r| {
            // The share-type listing, and the export-network check's one page of this
            // cluster's shares (none here, so nothing more is read).
            !(r.service == SimService::Share
                && r.method == "GET"
                && (r.path.ends_with("/types") || r.path.ends_with("/shares/detail"))
                && r.status == 200
                && r.token == token)
        })
        .map(describe_openstack)
        .collect();
    assert!(
        other.is_empty(),
        "besides the token, only share-type and share listings with that token: {other:#?}"
    );
    let share_listings = log
        .iter()
        .filter(|r| r.path.ends_with("/shares/detail"))
        .count();
    assert!(
        share_listings <= share_type_listings(&bed).len(),
        "at most one share listing per share-type listing: {share_listings}"
    );
    // Exactly one listing per detection (each refresh is one detection, logged once).
    eventually("one listing per logged detection", || async {
        let detections = op.output().matches("listed Manila share types").count();
        let listings = share_type_listings(&bed).len();
        if detections == listings {
            Ok(())
        } else {
            Err(format!("{listings} listings, {detections} detections"))
        }
    })
    .await;
    assert!(op.is_running());
}

/// Sets `status.addresses` of Node `name` to these InternalIPs (as the kubelet reports them).
async fn set_node_addresses(bed: &Testbed, name: &str, ips: &[&str]) {
    let addresses: Vec<serde_json::Value> = ips
        .iter()
        .map(|ip| json!({"type": "InternalIP", "address": ip}))
        .chain(std::iter::once(
            json!({"type": "Hostname", "address": name}),
        ))
        .collect();
    Api::<Node>::all(bed.client.clone())
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"addresses": addresses}})),
        )
        .await
        .expect("patch the Node's addresses");
}

/// Seed 002's secondary storage network, with RBAC on: the cluster's share of type "gold" is
/// exported on the storage network 172.16.0.0/24 of its share network, and every node is on
/// the machine network only. The operator says so (False, naming the share type, the CIDR,
/// the share network and what to do) without degrading anything; when a worker gets an
/// address on the storage network it turns True, with no new OpenStack call for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_network_no_node_is_on_is_reported_until_a_node_joins_it() {
    let mut settings = manila_settings(Some(&["default", "gold"]));
    settings.kube.rbac = Some(kube_sim::RbacConfig::default());
    let cluster = settings.infrastructure_name.clone();
    let bed = bed_with(settings).await;
    seed_manila(&bed).await;
    grant_driver_operator_rbac(&bed, "openstack-manila", &[MANILA_OPERATOR_USER]).await;
    let nodes = [
        "master-0", "master-1", "master-2", "worker-0", "worker-1", "worker-2",
    ];
    for (i, node) in nodes.iter().enumerate() {
        set_node_addresses(&bed, node, &[&format!("10.0.0.{}", 10 + i)]).await;
    }
    bed.openstack.set_share_networks(vec![SimShareNetwork::new(
        "sn-storage",
        "storage",
        vec![SimShareNetworkSubnet::new("sub-storage", "172.16.0.0/24")],
    )]);
    bed.openstack.set_storage(SimStorage {
        shares: vec![
            SimShare::new("share-1", "pvc-0a1b")
                .with_metadata(openstack::MANILA_CLUSTER_KEY, &cluster)
                .of_type("gold")
                .on_share_network("sn-storage")
                .exported_at(SimExportLocation::new("172.16.0.5:/share-1"))
                .exported_at(SimExportLocation::admin_only("10.254.0.5:/share-1")),
            // Another cluster's share on a network no node is on: not ours to judge.
            SimShare::new("share-other", "pvc-other")
                .with_metadata(openstack::MANILA_CLUSTER_KEY, "another-cluster")
                .on_share_network("sn-elsewhere")
                .exported_at(SimExportLocation::new("192.168.77.5:/other")),
        ],
        ..SimStorage::default()
    });
    let mut op = OperatorProcess::start_manila(&bed, "2s");
    wait_manila_available(&bed).await;

    let (reason, message) =
        wait_condition_of(&bed, MANILA_CR, "ManilaExportNetworkReachable", "False").await;
    assert_eq!(reason, "NoNodeOnExportNetwork");
    for part in [
        "share type \"gold\"",
        "172.16.0.0/24",
        "share network sn-storage",
        "share-1 at 172.16.0.5",
        "6 nodes",
        "router",
        "docs/manila-network.md",
    ] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    assert!(
        !message.contains("share-other") && !message.contains("192.168.77"),
        "{message}"
    );
    // A hint about the cloud's network, not a broken operator: nothing is Degraded and the
    // driver stays Available.
    let conditions = bed.conditions(MANILA_CR).await;
    for (t, (status, reason, message)) in &conditions {
        if t.ends_with("Degraded") {
            assert_eq!(status, "False", "{t}: {reason}: {message}");
        }
    }
    assert_eq!(
        conditions
            .get("ManilaServiceReachable")
            .map(|c| c.0.as_str()),
        Some("True")
    );

    // worker-1 is attached to the storage network.
    set_node_addresses(&bed, "worker-1", &["10.0.0.14", "172.16.0.21"]).await;
    let (reason, message) =
        wait_condition_of(&bed, MANILA_CR, "ManilaExportNetworkReachable", "True").await;
    assert_eq!(reason, "AsExpected");
    assert!(
        message.contains("share type \"gold\" on 172.16.0.0/24 (1 of 6)"),
        "{message}"
    );

    // OpenStack: the export locations of the share were read once (they do not change), only
    // the cluster's own shares were asked for, and its share network was read at 2.51.
    let log = bed.openstack.requests();
    let locations = log
        .iter()
        .filter(|r| r.path.ends_with("/shares/share-1/export_locations"))
        .count();
    assert_eq!(locations, 1, "export locations are remembered by share id");
    assert!(
        !log.iter()
            .any(|r| r.path.contains("share-other") || r.path.contains("sn-elsewhere")),
        "another cluster's share was looked at"
    );
    assert!(
        log.iter()
            .any(|r| r.path.ends_with("/share-networks/sn-storage")
                && r.manila_microversion.as_deref() == Some("2.51")
                && r.status == 200)
    );
    // RBAC: the operator's Node watch was allowed (its ClusterRole grants list and watch).
    let refused: Vec<String> = requests_of(&bed, MANILA_OPERATOR_USER)
        .iter()
        .filter(|r| r.resource == "/nodes" && r.code == 403)
        .map(describe)
        .collect();
    assert!(refused.is_empty(), "{refused:#?}");
    let node_reads: Vec<String> = requests_of(&bed, MANILA_OPERATOR_USER)
        .iter()
        .filter(|r| r.resource == "/nodes" && r.code == 200)
        .map(|r| r.verb.clone())
        .collect();
    assert!(
        node_reads.iter().any(|v| v == "list") && node_reads.iter().any(|v| v == "watch"),
        "the Node view lists and watches: {node_reads:?}"
    );
    assert!(
        !node_reads.iter().any(|v| v == "get"),
        "no live GET of a Node: {node_reads:?}"
    );
    assert!(op.is_running());
}
