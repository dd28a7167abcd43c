//! End-to-end tests of the Cinder operator: the real `csi-operator openstack-cinder start`
//! binary as a process against kube-sim and openstack-sim over loopback, one test per
//! scenario of issue 3, item 7. Each test starts its own emulators and its own process, and
//! asserts what an administrator would see (objects, conditions, the request logs), never how
//! long anything took.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use openstack_sim::{SimDomain, SimProject, SimUser, SimVolumeType, Zone};
use serde_json::json;
use testbed::Settings;

const SNAPSHOT_CRD: &str = "volumesnapshotclasses.snapshot.storage.k8s.io";

fn image(name: &str) -> String {
    testbed::example_images()
        .get(name)
        .cloned()
        .expect("example image")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_converges_and_conditions_become_available() {
    let bed = bed().await;
    let mut op = OperatorProcess::start(&bed);
    let conditions = wait_available(&bed).await;
    for t in [
        "ManagementStateDegraded",
        "ConfigObservationDegraded",
        "ConfigSyncDegraded",
        "OpenStackCinderDriverControlPlaneStaticResourcesControllerDegraded",
        "OpenStackCinderDriverGuestStaticResourcesControllerDegraded",
        "OpenStackCinderDriverControllerServiceControllerDegraded",
        "OpenStackCinderDriverNodeServiceControllerDegraded",
        "StorageClassControllerDegraded",
        "VolumeSnapshotClassControllerDegraded",
    ] {
        assert_eq!(
            conditions.get(t).map(|c| c.0.as_str()),
            Some("False"),
            "{t} is reported and False: {conditions:#?}"
        );
    }
    let d = deployment(&bed).await.expect("controller Deployment");
    assert_eq!(
        container(deployment_pod(&d), "csi-driver").and_then(|c| c.image.clone()),
        Some(image("DRIVER_IMAGE")),
        "images come from the environment"
    );
    assert_eq!(d.spec.as_ref().and_then(|s| s.replicas), Some(2));
    assert!(daemonset(&bed).await.is_some(), "node DaemonSet");
    assert!(csi_driver(&bed).await.is_some(), "CSIDriver");
    assert!(storage_class(&bed).await.is_some(), "StorageClass");
    let conf = cloud_conf(&bed).await.expect("cloud-conf");
    assert_eq!(
        conf.get("enable_topology").map(String::as_str),
        Some("true")
    );
    assert!(op.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_edit_of_the_deployment_spec_is_reverted_and_user_label_kept() {
    let bed = bed().await;
    let mut op = OperatorProcess::start(&bed);
    wait_available(&bed).await;
    let api: Api<Deployment> = Api::namespaced(bed.client.clone(), NS);
    api.patch(
        CONTROLLER,
        &PatchParams::default(),
        &Patch::Strategic(json!({
            "metadata": {"labels": {"team": "storage-admins"}},
            "spec": {"template": {"spec": {"containers": [
                {"name": "csi-driver", "image": "quay.io/someone/else:latest"}
            ]}}},
        })),
    )
    .await
    .expect("user edit");
    let want = image("DRIVER_IMAGE");
    eventually("the edited image to be reverted", || async {
        let d = deployment(&bed).await.ok_or("no Deployment")?;
        let img = container(deployment_pod(&d), "csi-driver").and_then(|c| c.image.clone());
        let label = d
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("team"))
            .cloned();
        if img.as_deref() == Some(want.as_str()) {
            Ok(label)
        } else {
            Err(format!("image {img:?}"))
        }
    })
    .await;
    // The revert is a stomp of the spec only: the user's label survives it and later resyncs.
    wait_quiet(&bed).await;
    let d = deployment(&bed).await.expect("Deployment");
    assert_eq!(
        d.metadata.labels.as_ref().and_then(|l| l.get("team")),
        Some(&"storage-admins".to_string()),
        "user label kept: {:?}",
        d.metadata.labels
    );
    assert_eq!(
        container(deployment_pod(&d), "csi-driver").and_then(|c| c.image.clone()),
        Some(want)
    );
    assert!(op.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credential_rotation_rolls_the_pods_and_reaches_openstack() {
    let bed = bed().await;
    let mut op = OperatorProcess::start(&bed);
    wait_available(&bed).await;
    let d = deployment(&bed).await.expect("Deployment");
    let ds = daemonset(&bed).await.expect("DaemonSet");
    let d_before = deployment_template_annotations(&d)
        .get(CREDENTIALS_HASH_KEY)
        .cloned()
        .expect("Deployment pod template has the credentials hash");
    let ds_before = daemonset_template_annotations(&ds)
        .get(CREDENTIALS_HASH_KEY)
        .cloned()
        .expect("DaemonSet pod template has the credentials hash");
    assert_eq!(d_before, ds_before, "same Secret, same hash");

    // The cloud credential operator mints a new user; the old password is retired.
    let domain = SimDomain::default();
    bed.openstack.add_user(SimUser {
        id: "u-rotated".into(),
        name: "rotated".into(),
        domain: domain.clone(),
        password: "rotated-password-7f3a".into(),
        project: SimProject {
            id: "p-demo".into(),
            name: openstack_sim::DEFAULT_PROJECT.into(),
            domain,
        },
    });
    bed.openstack.clear_requests();
    let rotated =
        bed.openstack
            .clouds_yaml_password("openstack", "rotated", "rotated-password-7f3a");
    bed.put_credentials(&rotated, None).await.expect("rotate");
    bed.openstack
        .set_password(openstack_sim::DEFAULT_USER, "retired-password");

    let (d_after, ds_after) = eventually("new hashes on both pod templates", || async {
        let d = deployment(&bed).await.ok_or("no Deployment")?;
        let ds = daemonset(&bed).await.ok_or("no DaemonSet")?;
        let a = deployment_template_annotations(&d)
            .get(CREDENTIALS_HASH_KEY)
            .cloned();
        let b = daemonset_template_annotations(&ds)
            .get(CREDENTIALS_HASH_KEY)
            .cloned();
        match (a, b) {
            (Some(a), Some(b)) if a != d_before && b != ds_before => Ok((a, b)),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(d_after, ds_after);

    // The next availability-zone listing authenticates as the new user.
    eventually("an AZ listing with the new credentials", || async {
        let log = bed.openstack.requests();
        let issued = log
            .iter()
            .any(|r| r.issued_token && r.user_id.as_deref() == Some("u-rotated"));
        let listed = log.iter().any(|r| {
            r.service == openstack_sim::SimService::Compute
                && r.path.contains("availability-zone")
                && r.user_id.as_deref() == Some("u-rotated")
                && r.status == 200
        });
        if issued && listed {
            Ok(())
        } else {
            Err(format!("{log:#?}"))
        }
    })
    .await;
    // Nothing after the rotation used the old user or its (now revoked) token.
    let stale: Vec<_> = bed
        .openstack
        .requests()
        .into_iter()
        .filter(|r| r.user_id.as_deref() != Some("u-rotated"))
        .map(|r| format!("{} {} -> {} as {:?}", r.method, r.path, r.status, r.user_id))
        .collect();
    assert!(
        stale.is_empty(),
        "every OpenStack call after the rotation uses the new credentials: {stale:#?}"
    );
    let (_, message) = wait_condition(&bed, "ConfigSyncDegraded", "False").await;
    assert!(message.is_empty(), "{message}");
    assert!(op.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_replica_control_plane_gets_one_controller_replica() {
    let bed = bed_with(Settings {
        control_plane_topology: "SingleReplica".into(),
        control_plane_nodes: 1,
        worker_nodes: 0,
        ..Settings::default()
    })
    .await;
    let mut op = OperatorProcess::start(&bed);
    wait_available(&bed).await;
    let d = deployment(&bed).await.expect("Deployment");
    assert_eq!(d.spec.as_ref().and_then(|s| s.replicas), Some(1));
    assert!(op.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_control_plane_clears_the_node_selector() {
    let bed = bed_with(Settings {
        control_plane_topology: "External".into(),
        ..Settings::default()
    })
    .await;
    let mut op = OperatorProcess::start(&bed);
    wait_available(&bed).await;
    let d = deployment(&bed).await.expect("Deployment");
    let selector = deployment_pod(&d)
        .and_then(|p| p.node_selector.clone())
        .unwrap_or_default();
    assert!(selector.is_empty(), "nodeSelector {selector:?}");
    assert_eq!(d.spec.as_ref().and_then(|s| s.replicas), Some(1));
    assert!(op.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_and_trusted_ca_reach_the_driver_containers() {
    let proxy = BTreeMap::from([
        (
            "httpProxy".to_string(),
            "http://proxy.example:3128".to_string(),
        ),
        (
            "httpsProxy".to_string(),
            "http://proxy.example:3129".to_string(),
        ),
        (
            "noProxy".to_string(),
            ".cluster.local,10.0.0.0/16".to_string(),
        ),
    ]);
    let bed = bed_with(Settings {
        proxy,
        ..Settings::default()
    })
    .await;
    let mut op = OperatorProcess::start(&bed);
    wait_available(&bed).await;
    // The operator creates the empty, labelled ConfigMap; the network operator fills it.
    let cm = config_map(&bed, NS, TRUSTED_CA)
        .await
        .expect("trusted CA ConfigMap");
    assert_eq!(
        cm.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("config.openshift.io/inject-trusted-cabundle")),
        Some(&"true".to_string())
    );
    let pem = "-----BEGIN CERTIFICATE-----\nTUlJQmZha2U=\n-----END CERTIFICATE-----\n";
    Api::<ConfigMap>::namespaced(bed.client.clone(), NS)
        .patch(
            TRUSTED_CA,
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"ca-bundle.crt": pem}})),
        )
        .await
        .expect("inject CA");

    let want_env = [
        ("HTTPS_PROXY", "http://proxy.example:3129"),
        ("HTTP_PROXY", "http://proxy.example:3128"),
        ("NO_PROXY", ".cluster.local,10.0.0.0/16"),
    ];
    let check_pod = |pod: Option<&k8s_openapi::api::core::v1::PodSpec>,
                     annotations: &BTreeMap<String, String>|
     -> Result<(), String> {
        let driver = container(pod, "csi-driver").ok_or("no csi-driver container")?;
        let env: BTreeMap<String, String> = driver
            .env
            .iter()
            .flatten()
            .filter_map(|e| e.value.clone().map(|v| (e.name.clone(), v)))
            .collect();
        for (k, v) in want_env {
            if env.get(k).map(String::as_str) != Some(v) {
                return Err(format!("csi-driver env {k}: {env:?}"));
            }
        }
        let mounted = driver.volume_mounts.iter().flatten().any(|m| {
            m.name == "non-standard-root-system-trust-ca-bundle"
                && m.mount_path == "/etc/pki/ca-trust/extracted/pem"
                && m.read_only == Some(true)
        });
        if !mounted {
            return Err(format!("csi-driver mounts {:?}", driver.volume_mounts));
        }
        let volume = pod
            .and_then(|p| p.volumes.as_ref())
            .and_then(|v| {
                v.iter()
                    .find(|v| v.name == "non-standard-root-system-trust-ca-bundle")
            })
            .and_then(|v| v.config_map.as_ref())
            .map(|c| c.name.clone());
        if volume.as_deref() != Some(TRUSTED_CA) {
            return Err(format!("CA volume {volume:?}"));
        }
        if !annotations.contains_key(TRUSTED_CA_HASH_KEY) {
            return Err(format!("no CA hash annotation: {annotations:?}"));
        }
        Ok(())
    };
    eventually("proxy env and CA mount in the Deployment", || async {
        let d = deployment(&bed).await.ok_or("no Deployment")?;
        check_pod(deployment_pod(&d), &deployment_template_annotations(&d))
    })
    .await;
    eventually("proxy env and CA mount in the DaemonSet", || async {
        let ds = daemonset(&bed).await.ok_or("no DaemonSet")?;
        check_pod(daemonset_pod(&ds), &daemonset_template_annotations(&ds))
    })
    .await;
    // Only the containers named by the inject annotations get them.
    let d = deployment(&bed).await.expect("Deployment");
    let provisioner = container(deployment_pod(&d), "csi-provisioner").expect("provisioner");
    assert!(
        !provisioner
            .env
            .iter()
            .flatten()
            .any(|e| e.name.ends_with("_PROXY")),
        "{:?}",
        provisioner.env
    );
    // The injected bundle is not wiped by the operator's own apply of that ConfigMap.
    wait_quiet(&bed).await;
    let cm = config_map(&bed, NS, TRUSTED_CA).await.expect("ConfigMap");
    assert_eq!(
        cm.data.as_ref().and_then(|d| d.get("ca-bundle.crt")),
        Some(&pem.to_string())
    );
    assert!(op.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_class_state_removed_deletes_standard_csi() {
    let bed = bed().await;
    let mut op = OperatorProcess::start(&bed);
    wait_available(&bed).await;
    assert!(storage_class(&bed).await.is_some());
    patch_cr_spec(&bed, json!({"storageClassState": "Removed"})).await;
    eventually("standard-csi to be deleted", || async {
        match storage_class(&bed).await {
            None => Ok(()),
            Some(_) => Err("still there".to_string()),
        }
    })
    .await;
    // And it stays deleted.
    wait_quiet(&bed).await;
    assert!(storage_class(&bed).await.is_none());
    wait_condition(&bed, "StorageClassControllerDegraded", "False").await;
    assert!(op.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_class_state_unmanaged_leaves_an_admin_edit_alone() {
    let bed = bed().await;
    let mut op = OperatorProcess::start(&bed);
    wait_available(&bed).await;
    patch_cr_spec(&bed, json!({"storageClassState": "Unmanaged"})).await;
    let api: Api<StorageClass> = Api::all(bed.client.clone());
    // Give the operator time to see Unmanaged before the edit (otherwise Managed reverts it).
    wait_quiet(&bed).await;
    api.patch(
        STORAGE_CLASS,
        &PatchParams::default(),
        &Patch::Merge(json!({"allowVolumeExpansion": false})),
    )
    .await
    .expect("admin edit");
    bed.kube.clear_requests();
    wait_quiet(&bed).await;
    let sc = storage_class(&bed).await.expect("StorageClass");
    assert_eq!(sc.allow_volume_expansion, Some(false), "edit kept");
    let touched: Vec<String> = operator_requests(&bed)
        .iter()
        .filter(|r| is_write(r) && r.resource == "storage.k8s.io/storageclasses")
        .map(describe)
        .collect();
    assert!(touched.is_empty(), "{touched:#?}");
    // Back to Managed, the same edit is reverted: the test above would have seen it.
    patch_cr_spec(&bed, json!({"storageClassState": "Managed"})).await;
    eventually("Managed to restore allowVolumeExpansion", || async {
        let sc = storage_class(&bed).await.ok_or("no StorageClass")?;
        if sc.allow_volume_expansion == Some(true) {
            Ok(())
        } else {
            Err(format!("{:?}", sc.allow_volume_expansion))
        }
    })
    .await;
    assert!(op.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn management_state_unmanaged_makes_no_writes() {
    let bed = bed().await;
    let mut op = OperatorProcess::start(&bed);
    wait_available(&bed).await;
    patch_cr_spec(&bed, json!({"managementState": "Unmanaged"})).await;
    // The operator may still be finishing a reconcile that began before it saw the change.
    wait_quiet(&bed).await;
    let api: Api<Deployment> = Api::namespaced(bed.client.clone(), NS);
    api.patch(
        CONTROLLER,
        &PatchParams::default(),
        &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
            {"name": "csi-driver", "image": "quay.io/admin/debug-driver:1"}
        ]}}}})),
    )
    .await
    .expect("admin edit");
    Api::<StorageClass>::all(bed.client.clone())
        .delete(STORAGE_CLASS, &DeleteParams::default())
        .await
        .expect("admin deletes the StorageClass");
    bed.kube.clear_requests();
    tokio::time::sleep(RESYNC * 3).await;
    let writes: Vec<String> = operator_requests(&bed)
        .iter()
        .filter(|r| is_write(r) && !is_lease(r))
        .map(describe)
        .collect();
    assert!(writes.is_empty(), "Unmanaged operator wrote: {writes:#?}");
    let d = deployment(&bed).await.expect("Deployment");
    assert_eq!(
        container(deployment_pod(&d), "csi-driver").and_then(|c| c.image.clone()),
        Some("quay.io/admin/debug-driver:1".to_string())
    );
    assert!(storage_class(&bed).await.is_none());
    assert!(op.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volume_snapshot_class_appears_after_its_crd_is_created() {
    let bed = bed().await;
    let crds: Api<CustomResourceDefinition> = Api::all(bed.client.clone());
    crds.delete(SNAPSHOT_CRD, &DeleteParams::default())
        .await
        .expect("delete the snapshot CRD");
    eventually("the snapshot CRD to be gone", || async {
        match crds.get_opt(SNAPSHOT_CRD).await {
            Ok(None) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let mut op = OperatorProcess::start(&bed);
    // Without the CRD the step waits; nothing is degraded.
    wait_available(&bed).await;
    let crd = openshift_api::crds::parsed()
        .expect("CRDs")
        .into_iter()
        .find(|c| c.metadata.name.as_deref() == Some(SNAPSHOT_CRD))
        .expect("the snapshot CRD ships with openshift-api");
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("create the snapshot CRD");
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("snapshot.storage.k8s.io", "v1", "VolumeSnapshotClass"),
        "volumesnapshotclasses",
    );
    let classes: Api<DynamicObject> = Api::all_with(bed.client.clone(), &ar);
    let vsc = eventually("VolumeSnapshotClass standard-csi", || async {
        match classes.get_opt(STORAGE_CLASS).await {
            Ok(Some(v)) => Ok(v),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(vsc.data["driver"], "cinder.csi.openstack.org");
    assert_eq!(vsc.data["deletionPolicy"], "Delete");
    assert_eq!(vsc.data["parameters"]["force-create"], "false");
    wait_condition(&bed, "VolumeSnapshotClassControllerDegraded", "False").await;
    assert!(op.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn availability_zone_mismatch_disables_topology() {
    let bed = bed_with(Settings {
        openstack: openstack_sim::SimConfig {
            compute_zones: vec![Zone::available("az-compute-1")],
            volume_zones: vec![Zone::available("nova")],
            ..openstack_sim::SimConfig::default()
        },
        ..Settings::default()
    })
    .await;
    let mut op = OperatorProcess::start(&bed);
    wait_available(&bed).await;
    let conf = eventually("cloud-conf", || async {
        cloud_conf(&bed).await.ok_or_else(|| "absent".to_string())
    })
    .await;
    assert_eq!(
        conf.get("enable_topology").map(String::as_str),
        Some("false"),
        "{conf:#?}"
    );
    assert!(op.is_running());
}

/// The common checks of a bad-input scenario: ConfigSyncDegraded is True with a readable
/// message that names what is wrong and echoes no secret; the process is alive; every other
/// step still applied its objects and is not degraded.
async fn assert_config_sync_degraded(
    bed: &testbed::Testbed,
    op: &mut OperatorProcess,
    message_mentions: &[&str],
    secrets: &[&str],
) {
    let (reason, message) = wait_condition(bed, "ConfigSyncDegraded", "True").await;
    eprintln!("ConfigSyncDegraded: {reason}: {message}");
    assert!(!reason.is_empty(), "a reason is given");
    for m in message_mentions {
        assert!(
            message.contains(m),
            "the message {message:?} should mention {m:?}"
        );
    }
    eventually("the other steps to apply their objects", || async {
        let missing: Vec<&str> = [
            ("Deployment", deployment(bed).await.is_some()),
            ("DaemonSet", daemonset(bed).await.is_some()),
            ("StorageClass", storage_class(bed).await.is_some()),
            ("CSIDriver", csi_driver(bed).await.is_some()),
            (
                "trusted CA ConfigMap",
                config_map(bed, NS, TRUSTED_CA).await.is_some(),
            ),
        ]
        .into_iter()
        .filter(|(_, present)| !present)
        .map(|(what, _)| what)
        .collect();
        let c = bed.conditions(CR).await;
        let degraded: Vec<&String> = c
            .iter()
            .filter(|(t, (s, _, _))| {
                t.ends_with("Degraded") && *t != "ConfigSyncDegraded" && s != "False"
            })
            .map(|(t, _)| t)
            .collect();
        if missing.is_empty() && degraded.is_empty() && c.len() >= 10 {
            Ok(())
        } else {
            Err(format!("missing {missing:?}; {c:#?}"))
        }
    })
    .await;
    assert!(op.is_running(), "the process stays alive");
    let c = bed.conditions(CR).await;
    let output = op.output();
    let events = event_messages(bed).await;
    for s in secrets {
        for (t, (_, _, m)) in &c {
            assert!(!m.contains(s), "condition {t} echoes a secret: {m}");
        }
        assert!(!output.contains(s), "the log echoes a secret");
        for e in &events {
            assert!(!e.contains(s), "an Event echoes a secret: {e}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_clouds_yaml_is_a_readable_degraded_condition() {
    let bed = bed().await;
    let bad = "clouds:\n  openstack:\n    auth:\n      password: hunter2-secret-91\n      auth_url: [unterminated\n";
    bed.put_credentials(bad, None).await.expect("credentials");
    let mut op = OperatorProcess::start(&bed);
    assert_config_sync_degraded(
        &bed,
        &mut op,
        &["clouds.yaml", "openstack-cloud-credentials", "line 5"],
        &["hunter2-secret-91"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_user_ini_is_a_readable_degraded_condition() {
    let bed = bed().await;
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("cinder-csi-config".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "config".to_string(),
            "[BlockStorage\nthis is not ini at all\n".to_string(),
        )])),
        ..Default::default()
    };
    Api::<ConfigMap>::namespaced(bed.client.clone(), testbed::CONFIG_NAMESPACE)
        .create(&PostParams::default(), &cm)
        .await
        .expect("cinder-csi-config");
    let mut op = OperatorProcess::start(&bed);
    assert_config_sync_degraded(
        &bed,
        &mut op,
        &["cinder-csi-config", "line 1"],
        &[openstack_sim::DEFAULT_PASSWORD],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_keystone_is_a_readable_degraded_condition() {
    let bed = bed().await;
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
    let mut op = OperatorProcess::start(&bed);
    assert_config_sync_degraded(
        &bed,
        &mut op,
        &["availability zones", "Keystone", "cannot connect"],
        &[openstack_sim::DEFAULT_PASSWORD],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_password_is_a_readable_degraded_condition() {
    let bed = bed().await;
    let clouds = bed.openstack.clouds_yaml_password(
        "openstack",
        openstack_sim::DEFAULT_USER,
        "not-the-password-5521",
    );
    bed.put_credentials(&clouds, None)
        .await
        .expect("credentials");
    let mut op = OperatorProcess::start(&bed);
    assert_config_sync_degraded(
        &bed,
        &mut op,
        &["availability zones", "rejected", "401"],
        &["not-the-password-5521", openstack_sim::DEFAULT_PASSWORD],
    )
    .await;
}

/// Fencing on SIGTERM: the reconcile in flight (an install slowed by a slow API server) is
/// cancelled, and the lease is released only after that, so the release is the process's last
/// write and a successor never overlaps with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_install_cancels_the_reconcile_then_releases_the_lease() {
    let bed = bed().await;
    bed.kube.inject(kube_sim::Fault {
        matches: kube_sim::RequestMatch {
            verb: "create".into(),
            user: OPERATOR_USER.into(),
            ..Default::default()
        },
        code: 0,
        times: 0,
        latency_ms: 400,
    });
    let mut op = OperatorProcess::start(&bed);
    eventually("the install to be under way", || async {
        let creates = requests_of(&bed, OPERATOR_USER)
            .iter()
            .filter(|r| r.verb == "create" && !is_lease(r))
            .count();
        if creates >= 2 {
            Ok(())
        } else {
            Err(format!("{creates} creates"))
        }
    })
    .await;
    assert!(
        op.terminate(Duration::from_secs(20)).await,
        "the process ends promptly on SIGTERM although a reconcile was stalled:\n{}",
        op.tail()
    );

    let requests = requests_of(&bed, OPERATOR_USER);
    let release = requests
        .iter()
        .rfind(|r| is_lease(r) && r.verb == "update")
        .expect("the lease is released on SIGTERM");
    let after: Vec<String> = requests
        .iter()
        .filter(|r| is_write(r) && r.at_ms > release.at_ms)
        .map(describe)
        .collect();
    assert!(
        after.is_empty(),
        "writes after the lease release: {after:#?}"
    );
    let lease =
        Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(bed.client.clone(), NS)
            .get(cinder::OPERATOR_LOCK_NAME)
            .await
            .expect("lease");
    let holder = lease
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    assert!(holder.is_empty(), "released, not held by {holder:?}");
    bed.kube.clear_faults();
}

/// `verify: false` works (test clouds use it) but exposes the credentials: the operator says so
/// in a condition that does not degrade the cluster, and clears it when the Secret is fixed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_false_is_reported_in_a_condition_and_the_driver_still_installs() {
    let bed = bed_with(Settings {
        openstack: openstack_sim::SimConfig {
            tls: true,
            ..openstack_sim::SimConfig::default()
        },
        ..Settings::default()
    })
    .await;
    let secure = bed.clouds_yaml();
    let insecure = secure.replacen(
        "  \"openstack\":\n",
        "  \"openstack\":\n    verify: false\n",
        1,
    );
    assert_ne!(secure, insecure, "{secure}");
    bed.put_credentials(&insecure, bed.openstack.ca_pem())
        .await
        .expect("credentials");
    let mut op = OperatorProcess::start(&bed);
    wait_available(&bed).await;
    let (reason, message) = wait_condition(&bed, "InsecureOpenStackConnection", "True").await;
    assert_eq!(reason, "InsecureCloudConfig");
    assert!(
        message.contains("verify: false")
            && message.contains("openshift-cluster-csi-drivers/openstack-cloud-credentials"),
        "{message}"
    );
    assert!(
        !message.contains(openstack_sim::DEFAULT_PASSWORD),
        "{message}"
    );
    let conditions = bed.conditions(CR).await;
    for (t, (status, ..)) in &conditions {
        if t.ends_with("Degraded") {
            assert_eq!(status, "False", "{t}");
        }
    }

    bed.put_credentials(&secure, bed.openstack.ca_pem())
        .await
        .expect("fixed");
    wait_condition(&bed, "InsecureOpenStackConnection", "False").await;
    assert!(op.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotation_to_a_wrong_password_is_reported_and_recovers() {
    let bed = bed().await;
    let mut op = OperatorProcess::start(&bed);
    wait_available(&bed).await;
    let wrong = bed.openstack.clouds_yaml_password(
        "openstack",
        openstack_sim::DEFAULT_USER,
        "typo-in-rotation-3318",
    );
    bed.put_credentials(&wrong, None).await.expect("rotate");
    let (_, message) = wait_condition(&bed, "ConfigSyncDegraded", "True").await;
    assert!(message.contains("rejected"), "{message}");
    assert!(!message.contains("typo-in-rotation-3318"), "{message}");
    // The driver's topology does not flip on a failed listing.
    let conf = cloud_conf(&bed).await.expect("cloud-conf");
    assert_eq!(
        conf.get("enable_topology").map(String::as_str),
        Some("true")
    );
    // Fixing the Secret clears the condition at once (no wait for the retry timer).
    bed.put_credentials(&bed.clouds_yaml(), None)
        .await
        .expect("rotate back");
    wait_condition(&bed, "ConfigSyncDegraded", "False").await;
    assert!(!op.output().contains("typo-in-rotation-3318"));
    assert!(op.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_operator_makes_no_writes_and_no_gets() {
    let bed = bed().await;
    let mut op = OperatorProcess::start(&bed);
    wait_available(&bed).await;
    wait_quiet(&bed).await;
    bed.kube.clear_requests();
    tokio::time::sleep(RESYNC * 2 + Duration::from_secs(1)).await;
    let requests: Vec<String> = operator_requests(&bed)
        .iter()
        .filter(|r| r.verb != "watch" && !is_lease(r))
        .map(describe)
        .collect();
    assert!(
        requests.is_empty(),
        "an idle operator made requests: {requests:#?}"
    );
    assert!(op.is_running());
}

/// `--log-format json`: every line the operator writes is one klog-style JSON object (a log
/// pipeline that parses kubelet's JSON parses ours), and the text format carries no ANSI
/// colour codes when stderr is not a terminal (a pod's log never is).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_klog_object_a_line_and_text_logs_have_no_colour_codes() {
    let bed = bed().await;
    let mut op = OperatorProcess::start_with(&bed, &["--log-format", "json"]);
    wait_available(&bed).await;
    assert!(op.terminate(Duration::from_secs(20)).await);
    let output = op.output();
    let lines: Vec<&str> = output.lines().collect();
    assert!(lines.len() >= 3, "{output}");
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not one JSON object ({e}): {line}"));
        assert!(v["ts"].is_f64(), "{line}");
        assert!(v["caller"].is_string(), "{line}");
        assert!(v["msg"].is_string(), "{line}");
        assert!(v.get("v").is_some() || v.get("err").is_some(), "{line}");
    }

    let bed = common::bed().await;
    let mut op = OperatorProcess::start(&bed);
    wait_available(&bed).await;
    assert!(op.terminate(Duration::from_secs(20)).await);
    let output = op.output();
    assert!(output.contains("INFO"), "{output}");
    assert!(
        !output.contains('\u{1b}'),
        "ANSI escape codes in a pod log: {output}"
    );
}

/// Issue 13 item 2: opted in with the ClusterCSIDriver annotation, the operator keeps one
/// StorageClass per public volume type (named as Manila's share-type classes are), under the
/// RBAC the CSO grants it; a type that disappears keeps its class and is reported; opted out
/// again, nothing more is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volume_type_storage_classes_follow_cinder_when_opted_in() {
    const OPT_IN: &str = "cinder.csi.openstack.org/volume-type-storage-classes";
    const CONDITION: &str = "CinderVolumeTypeStorageClassControllerDegraded";
    let mut settings = Settings::default();
    settings.kube.rbac = Some(kube_sim::RbacConfig::default());
    settings.openstack.volume_types = vec![
        SimVolumeType::public("__DEFAULT__"),
        SimVolumeType::public("fast_SSD"),
        SimVolumeType::public("hdd"),
        SimVolumeType::private("tenant-gold"),
    ];
    let bed = bed_with(settings).await;
    grant_cinder_operator_rbac(&bed, &[OPERATOR_USER]).await;
    let mut op = OperatorProcess::start(&bed);
    wait_available(&bed).await;
    let api: Api<StorageClass> = Api::all(bed.client.clone());
    let per_type = |list: Vec<StorageClass>| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = list
            .into_iter()
            .filter(|sc| {
                sc.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("csi-cinder-"))
            })
            .map(|sc| {
                let ty = sc
                    .parameters
                    .unwrap_or_default()
                    .remove("type")
                    .unwrap_or_default();
                (sc.metadata.name.unwrap_or_default(), ty)
            })
            .collect();
        v.sort();
        v
    };
    // Off by default: no class, no condition, no volume-type listing.
    wait_quiet(&bed).await;
    assert!(per_type(api.list(&Default::default()).await.expect("list").items).is_empty());
    assert!(!bed.conditions(CR).await.contains_key(CONDITION));
    assert_eq!(
        bed.openstack
            .count(openstack_sim::SimService::Volume, "/types"),
        0
    );

    cr_api_patch_annotation(&bed, OPT_IN, Some("true")).await;
    let classes = eventually("one class per public volume type", || async {
        let found = per_type(
            api.list(&Default::default())
                .await
                .map_err(|e| e.to_string())?
                .items,
        );
        if found.len() == 2 {
            Ok(found)
        } else {
            Err(format!("{found:?}"))
        }
    })
    .await;
    assert_eq!(
        classes,
        [
            ("csi-cinder-fast-ssd".to_string(), "fast_SSD".to_string()),
            ("csi-cinder-hdd".to_string(), "hdd".to_string()),
        ]
    );
    let (_, message) = wait_condition(&bed, CONDITION, "False").await;
    assert!(
        message.contains("private volume types get no StorageClass")
            && message.contains("tenant-gold"),
        "{message}"
    );
    let hdd = api.get("csi-cinder-hdd").await.expect("csi-cinder-hdd");
    assert_eq!(hdd.provisioner, "cinder.csi.openstack.org");
    assert_eq!(
        hdd.volume_binding_mode.as_deref(),
        Some("WaitForFirstConsumer")
    );
    assert!(
        !hdd.metadata
            .annotations
            .unwrap_or_default()
            .contains_key("storageclass.kubernetes.io/is-default-class"),
        "never the default class"
    );

    // An admin removing the label (the watch no longer sees the class) gets it back: update
    // under RBAC and the provisioner-pinned rights.
    api.patch(
        "csi-cinder-hdd",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"metadata": {"labels": {"cinder.csi.openstack.org/volume-type-class": null}}}),
        ),
    )
    .await
    .expect("admin edit");
    eventually("the label restored", || async {
        let sc = api.get("csi-cinder-hdd").await.map_err(|e| e.to_string())?;
        match sc
            .metadata
            .labels
            .unwrap_or_default()
            .get("cinder.csi.openstack.org/volume-type-class")
        {
            Some(v) if v == "true" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // `hdd` disappears from Cinder: a credentials change lists again at once; its class stays.
    bed.openstack.set_volume_types(vec![
        SimVolumeType::public("__DEFAULT__"),
        SimVolumeType::public("fast_SSD"),
    ]);
    rotate_credentials_to_same_password(&bed).await;
    let (_, message) = eventually("hdd reported gone", || async {
        let c = bed.conditions(CR).await;
        match c.get(CONDITION) {
            Some((s, r, m)) if s == "False" && m.contains("no longer offered by Cinder: hdd") => {
                Ok((r.clone(), m.clone()))
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(
        message.contains("kept because bound volumes need them"),
        "{message}"
    );
    assert!(
        api.get_opt("csi-cinder-hdd").await.expect("get").is_some(),
        "kept"
    );

    // A value that is neither true nor false is named, and nothing is deleted.
    cr_api_patch_annotation(&bed, OPT_IN, Some("yes")).await;
    let (_, message) = wait_condition(&bed, CONDITION, "True").await;
    assert!(message.contains("\"yes\""), "{message}");
    // Off again: the condition goes, the classes stay (volumes may use them), nothing written.
    cr_api_patch_annotation(&bed, OPT_IN, None).await;
    eventually("the condition removed", || async {
        if bed.conditions(CR).await.contains_key(CONDITION) {
            Err("still there".to_string())
        } else {
            Ok(())
        }
    })
    .await;
    wait_quiet(&bed).await;
    assert_eq!(
        per_type(api.list(&Default::default()).await.expect("list").items).len(),
        2
    );
    let denied: Vec<String> = operator_requests(&bed)
        .iter()
        .filter(|r| r.code == 403)
        .map(describe)
        .collect();
    assert!(denied.is_empty(), "RBAC refused: {denied:#?}");
    assert!(op.is_running());
}

/// Sets (or, with `None`, removes) an annotation on the ClusterCSIDriver as the admin.
async fn cr_api_patch_annotation(bed: &testbed::Testbed, key: &str, value: Option<&str>) {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("operator.openshift.io", "v1", "ClusterCSIDriver"),
        "clustercsidrivers",
    );
    Api::<DynamicObject>::all_with(bed.client.clone(), &ar)
        .patch(
            CR,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {key: value}}})),
        )
        .await
        .expect("annotate the ClusterCSIDriver");
}

/// Replaces the credentials Secret with the same clouds.yaml plus a marker key, so its
/// fingerprint changes (as a rotation does) and the operator asks OpenStack again at once.
async fn rotate_credentials_to_same_password(bed: &testbed::Testbed) {
    let api: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(bed.client.clone(), NS);
    api.patch(
        "openstack-cloud-credentials",
        &PatchParams::default(),
        &Patch::Merge(json!({"stringData": {"rotated": "1"}})),
    )
    .await
    .expect("touch the credentials Secret");
}
