//! Claims as a user makes them on a testbed whose storage drivers are installed: the CSI
//! provisioner and scheduler stand-ins turn them into OpenStack volumes and shares, bound PVs,
//! and the Events an administrator reads with `kubectl describe pvc`.
//!
//! The drivers are "installed" by seeding what the operators would leave: the CSIDriver object
//! and the controller Deployment (which kube-sim's workload simulator makes Available), plus
//! the `cloud-conf` ConfigMap that turns Cinder's topology on.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Event, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSIDriver, StorageClass, VolumeAttachment};
use k8s_openapi::serde::de::DeserializeOwned;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use testbed::{DRIVER_NAMESPACE, Settings, Testbed, wait_for};

const DEADLINE: Duration = Duration::from_secs(20);
const NS: &str = "default";

fn typed<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a valid object")
}

async fn bed() -> Testbed {
    Testbed::start(Settings::default()).await.expect("testbed")
}

/// What the Cinder or Manila operator leaves installed: the CSIDriver, the controller
/// Deployment (Available once the workload simulator has started its pods) and, for Cinder,
/// `cloud-conf` with topology on.
async fn install(bed: &Testbed, driver: &str, controller: &str) {
    let drivers: Api<CSIDriver> = Api::all(bed.client.clone());
    drivers
        .create(
            &PostParams::default(),
            &typed(json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                "metadata": {"name": driver}, "spec": {"attachRequired": driver.starts_with("cinder")}})),
        )
        .await
        .expect("CSIDriver");
    let deployments: Api<Deployment> = Api::namespaced(bed.client.clone(), DRIVER_NAMESPACE);
    deployments
        .create(
            &PostParams::default(),
            &typed(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": controller},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": controller}},
                    "template": {"metadata": {"labels": {"app": controller}},
                        "spec": {"containers": [{"name": "driver", "image": "quay.io/example/driver:v1"}]}}}})),
        )
        .await
        .expect("controller Deployment");
    if driver.starts_with("cinder") {
        let cms: Api<ConfigMap> = Api::namespaced(bed.client.clone(), DRIVER_NAMESPACE);
        cms.create(
            &PostParams::default(),
            &typed(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cloud-conf"}, "data": {"enable_topology": "true"}})),
        )
        .await
        .expect("cloud-conf");
    }
}

async fn install_cinder(bed: &Testbed) {
    install(
        bed,
        "cinder.csi.openstack.org",
        "openstack-cinder-csi-driver-controller",
    )
    .await;
}

async fn install_manila(bed: &Testbed) {
    install(
        bed,
        "manila.csi.openstack.org",
        "openstack-manila-csi-controllerplugin",
    )
    .await;
}

async fn class(bed: &Testbed, body: Value) {
    let classes: Api<StorageClass> = Api::all(bed.client.clone());
    classes
        .create(&PostParams::default(), &typed(body))
        .await
        .expect("StorageClass");
}

fn cinder_class(name: &str, binding: &str, reclaim: &str, expansion: bool) -> Value {
    json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
        "provisioner": "cinder.csi.openstack.org", "volumeBindingMode": binding,
        "reclaimPolicy": reclaim, "allowVolumeExpansion": expansion})
}

fn manila_class(name: &str, share_type: &str) -> Value {
    json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
        "provisioner": "manila.csi.openstack.org", "parameters": {"type": share_type}})
}

async fn claim(bed: &Testbed, name: &str, class: Option<&str>, mode: &str, size: &str) {
    let mut spec = json!({"accessModes": [mode], "resources": {"requests": {"storage": size}}});
    if let Some(c) = class {
        spec["storageClassName"] = json!(c);
    }
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(bed.client.clone(), NS);
    claims
        .create(
            &PostParams::default(),
            &typed(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name}, "spec": spec})),
        )
        .await
        .expect("claim created");
}

async fn get_claim(bed: &Testbed, name: &str) -> Option<PersistentVolumeClaim> {
    Api::<PersistentVolumeClaim>::namespaced(bed.client.clone(), NS)
        .get_opt(name)
        .await
        .expect("get claim")
}

async fn bound(bed: &Testbed, name: &str) -> PersistentVolumeClaim {
    wait_for(DEADLINE, || async {
        get_claim(bed, name)
            .await
            .filter(|c| c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"))
    })
    .await
    .unwrap_or_else(|| panic!("claim {name} never Bound"))
}

async fn events(bed: &Testbed, object: &str) -> Vec<(String, String, String)> {
    Api::<Event>::namespaced(bed.client.clone(), NS)
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(object))
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default(),
            )
        })
        .collect()
}

async fn event_with(bed: &Testbed, object: &str, reason: &str) -> (String, String, String) {
    wait_for(DEADLINE, || async {
        events(bed, object)
            .await
            .into_iter()
            .find(|(_, r, _)| r == reason)
    })
    .await
    .unwrap_or_else(|| panic!("no {reason} Event for {object}"))
}

async fn volume(bed: &Testbed, name: &str) -> PersistentVolume {
    Api::<PersistentVolume>::all(bed.client.clone())
        .get(name)
        .await
        .expect("PV")
}

#[tokio::test]
async fn a_manila_claim_is_shared_read_write_many_at_once() {
    let bed = bed().await;
    install_manila(&bed).await;
    class(&bed, manila_class("csi-manila-default", "default")).await;
    claim(
        &bed,
        "shared",
        Some("csi-manila-default"),
        "ReadWriteMany",
        "1Gi",
    )
    .await;

    let pvc = bound(&bed, "shared").await;
    let uid = pvc.metadata.uid.clone().expect("uid");
    let pv_name = format!("pvc-{uid}");
    let spec = pvc.spec.clone().expect("spec");
    assert_eq!(spec.volume_name.as_deref(), Some(pv_name.as_str()));
    let status = pvc.status.clone().expect("status");
    assert_eq!(status.access_modes, Some(vec!["ReadWriteMany".to_string()]));
    assert_eq!(
        status.capacity.expect("capacity")["storage"].0,
        "1Gi".to_string()
    );
    let annotations = pvc.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(annotations["pv.kubernetes.io/bind-completed"], "yes");
    assert_eq!(annotations["pv.kubernetes.io/bound-by-controller"], "yes");
    assert_eq!(
        annotations["volume.kubernetes.io/storage-provisioner"],
        "manila.csi.openstack.org"
    );

    let pv = volume(&bed, &pv_name).await;
    let pv_spec = pv.spec.clone().expect("pv spec");
    let csi = pv_spec.csi.clone().expect("csi source");
    assert_eq!(csi.driver, "manila.csi.openstack.org");
    let shares = bed.openstack.handle().storage().shares;
    assert_eq!(shares.len(), 1);
    assert_eq!(csi.volume_handle, shares[0].id);
    assert_eq!(
        (
            shares[0].share_type_name.as_str(),
            shares[0].share_proto.as_str(),
            shares[0].size
        ),
        ("default", "NFS", 1)
    );
    assert_eq!(
        pv_spec.claim_ref.and_then(|r| r.name),
        Some("shared".to_string())
    );
    assert_eq!(
        pv_spec.persistent_volume_reclaim_policy.as_deref(),
        Some("Delete")
    );
    assert_eq!(
        pv_spec.storage_class_name.as_deref(),
        Some("csi-manila-default")
    );
    assert_eq!(
        pv.metadata.annotations.unwrap_or_default()["pv.kubernetes.io/provisioned-by"],
        "manila.csi.openstack.org"
    );
    assert_eq!(pv.status.and_then(|s| s.phase).as_deref(), Some("Bound"));
    let (kind, _, message) = event_with(&bed, "shared", "ProvisioningSucceeded").await;
    assert_eq!(kind, "Normal");
    assert_eq!(
        message,
        format!("Successfully provisioned volume {pv_name}")
    );
}

#[tokio::test]
async fn a_cinder_claim_waits_for_its_first_pod_and_lands_in_its_zone() {
    let bed = bed().await;
    install_cinder(&bed).await;
    let mut default_class = cinder_class("standard-csi", "WaitForFirstConsumer", "Delete", true);
    default_class["metadata"]["annotations"] =
        json!({"storageclass.kubernetes.io/is-default-class": "true"});
    default_class["parameters"] = json!({"csi.storage.k8s.io/fstype": "xfs"});
    class(&bed, default_class).await;
    // No class named: the DefaultStorageClass admission plugin picks standard-csi.
    claim(&bed, "data", None, "ReadWriteOnce", "1.5Gi").await;
    let (_, _, message) = event_with(&bed, "data", "WaitForFirstConsumer").await;
    assert_eq!(
        message,
        "waiting for first consumer to be created before binding"
    );
    let pvc = get_claim(&bed, "data").await.expect("claim");
    assert_eq!(
        pvc.spec
            .as_ref()
            .and_then(|s| s.storage_class_name.as_deref()),
        Some("standard-csi")
    );
    assert_eq!(
        pvc.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Pending")
    );
    assert!(bed.openstack.handle().storage().volumes.is_empty());

    let pods: Api<Pod> = Api::namespaced(bed.client.clone(), NS);
    pods.create(
        &PostParams::default(),
        &typed(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app"},
            "spec": {"containers": [{"name": "app", "image": "quay.io/example/app:v1",
                "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}}),
        ),
    )
    .await
    .expect("pod");

    let pvc = bound(&bed, "data").await;
    let selected =
        pvc.metadata.annotations.clone().unwrap_or_default()["volume.kubernetes.io/selected-node"]
            .clone();
    assert!(selected.starts_with("worker-"), "{selected}");
    let volumes = bed.openstack.handle().storage().volumes;
    assert_eq!(volumes.len(), 1);
    assert_eq!(volumes[0].size, 2, "1.5Gi rounds up to 2 GiB");
    assert_eq!(volumes[0].availability_zone, "nova");
    assert_eq!(
        volumes[0]
            .metadata
            .get("cinder.csi.openstack.org/cluster")
            .map(String::as_str),
        Some("ostest-x7k2p")
    );
    let pv_name = pvc.spec.and_then(|s| s.volume_name).expect("volume name");
    let pv = volume(&bed, &pv_name).await;
    let pv_spec = pv.spec.expect("pv spec");
    let csi = pv_spec.csi.expect("csi");
    assert_eq!(csi.volume_handle, volumes[0].id);
    assert_eq!(csi.fs_type.as_deref(), Some("xfs"));
    let affinity = serde_json::to_value(pv_spec.node_affinity).expect("json");
    assert_eq!(
        affinity["required"]["nodeSelectorTerms"][0]["matchExpressions"][0],
        json!({"key": "topology.cinder.csi.openstack.org/zone", "operator": "In", "values": ["nova"]})
    );
    // The scheduler binds the pod once its claim is bound.
    let pod = wait_for(DEADLINE, || async {
        pods.get("app")
            .await
            .ok()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
    })
    .await
    .expect("pod scheduled");
    assert_eq!(pod.spec.and_then(|s| s.node_name), Some(selected));
}

#[tokio::test]
async fn without_the_driver_a_claim_stays_pending_until_it_is_installed() {
    let bed = bed().await;
    class(
        &bed,
        cinder_class("standard-csi", "Immediate", "Delete", false),
    )
    .await;
    claim(&bed, "early", Some("standard-csi"), "ReadWriteOnce", "1Gi").await;
    let (kind, _, message) = event_with(&bed, "early", "ExternalProvisioning").await;
    assert_eq!(kind, "Normal");
    assert!(
        message.starts_with("Waiting for a volume to be created either by the external provisioner 'cinder.csi.openstack.org'"),
        "{message}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pvc = get_claim(&bed, "early").await.expect("claim");
    assert_eq!(pvc.status.and_then(|s| s.phase).as_deref(), Some("Pending"));
    assert!(bed.openstack.handle().storage().volumes.is_empty());

    install_cinder(&bed).await;
    bound(&bed, "early").await;
}

#[tokio::test]
async fn refusals_are_provisioning_failed_events() {
    let bed = bed().await;
    install_manila(&bed).await;
    install_cinder(&bed).await;
    class(&bed, manila_class("gold", "platinum")).await;
    claim(&bed, "shiny", Some("gold"), "ReadWriteMany", "1Gi").await;
    let (kind, _, message) = event_with(&bed, "shiny", "ProvisioningFailed").await;
    assert_eq!(kind, "Warning");
    assert!(
        message.starts_with("failed to provision volume with StorageClass \"gold\": rpc error: code = Internal desc = failed to create volume pvc-"),
        "{message}"
    );
    assert!(
        message.ends_with("but got 404 instead: {\"itemNotFound\":{\"code\":404,\"message\":\"Share type not found.\"}}"),
        "{message}"
    );
    let pvc = get_claim(&bed, "shiny").await.expect("claim");
    assert_eq!(pvc.status.and_then(|s| s.phase).as_deref(), Some("Pending"));
    assert!(bed.openstack.handle().storage().shares.is_empty());

    // Cinder file systems are single-node.
    class(
        &bed,
        cinder_class("standard-csi", "Immediate", "Delete", false),
    )
    .await;
    claim(&bed, "many", Some("standard-csi"), "ReadWriteMany", "1Gi").await;
    let (_, _, message) = event_with(&bed, "many", "ProvisioningFailed").await;
    assert!(message.contains("InvalidArgument"), "{message}");
    assert!(bed.openstack.handle().storage().volumes.is_empty());

    // Once the cloud has the type, the next retry succeeds.
    bed.openstack
        .handle()
        .add_share_type(openstack_sim::SimShareType::new("platinum"));
    bound(&bed, "shiny").await;
}

#[tokio::test]
async fn deleting_a_claim_reclaims_its_volume_as_the_class_says() {
    let bed = bed().await;
    install_cinder(&bed).await;
    class(
        &bed,
        cinder_class("standard-csi", "Immediate", "Delete", false),
    )
    .await;
    class(&bed, cinder_class("keep", "Immediate", "Retain", false)).await;
    claim(
        &bed,
        "scratch",
        Some("standard-csi"),
        "ReadWriteOnce",
        "1Gi",
    )
    .await;
    claim(&bed, "precious", Some("keep"), "ReadWriteOnce", "1Gi").await;
    let scratch = bound(&bed, "scratch").await;
    let precious = bound(&bed, "precious").await;
    let os = bed.openstack.handle();
    assert_eq!(os.storage().volumes.len(), 2);
    let pv_of = |c: &PersistentVolumeClaim| {
        c.spec
            .as_ref()
            .and_then(|s| s.volume_name.clone())
            .expect("bound")
    };
    let (scratch_pv, precious_pv) = (pv_of(&scratch), pv_of(&precious));

    let claims: Api<PersistentVolumeClaim> = Api::namespaced(bed.client.clone(), NS);
    for name in ["scratch", "precious"] {
        claims
            .delete(name, &DeleteParams::default())
            .await
            .expect("delete");
    }
    let pvs: Api<PersistentVolume> = Api::all(bed.client.clone());
    wait_for(DEADLINE, || async {
        pvs.get_opt(&scratch_pv)
            .await
            .expect("get pv")
            .is_none()
            .then_some(())
    })
    .await
    .expect("the Delete volume's PV is gone");
    // A volume an administrator creates by hand is Available.
    pvs.create(
        &PostParams::default(),
        &typed(
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "manual"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                "nfs": {"server": "192.0.2.1", "path": "/exports/manual"}}}),
        ),
    )
    .await
    .expect("static PV");
    wait_for(DEADLINE, || async {
        pvs.get_opt("manual")
            .await
            .expect("get pv")
            .filter(|pv| pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Available"))
    })
    .await
    .expect("a static volume is Available");
    let released = wait_for(DEADLINE, || async {
        pvs.get_opt(&precious_pv)
            .await
            .expect("get pv")
            .filter(|pv| pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Released"))
    })
    .await
    .expect("the Retain volume is Released");
    assert!(released.metadata.deletion_timestamp.is_none());
    let left: Vec<String> = os.storage().volumes.into_iter().map(|v| v.name).collect();
    assert_eq!(
        left,
        vec![precious_pv],
        "only the retained volume is left in Cinder"
    );
}

#[tokio::test]
async fn a_bound_claim_grows_when_its_class_allows_it() {
    let bed = bed().await;
    install_cinder(&bed).await;
    class(
        &bed,
        cinder_class("standard-csi", "Immediate", "Delete", true),
    )
    .await;
    class(&bed, cinder_class("fixed", "Immediate", "Delete", false)).await;
    claim(&bed, "grows", Some("standard-csi"), "ReadWriteOnce", "1Gi").await;
    claim(&bed, "stays", Some("fixed"), "ReadWriteOnce", "1Gi").await;
    bound(&bed, "grows").await;
    bound(&bed, "stays").await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(bed.client.clone(), NS);
    let bigger = Patch::Merge(json!({"spec": {"resources": {"requests": {"storage": "3Gi"}}}}));
    let err = claims
        .patch("stays", &PatchParams::default(), &bigger)
        .await
        .expect_err("the class does not allow expansion");
    assert!(
        err.to_string()
            .contains("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"),
        "{err}"
    );
    claims
        .patch("grows", &PatchParams::default(), &bigger)
        .await
        .expect("grow");
    let pvc = wait_for(DEADLINE, || async {
        get_claim(&bed, "grows").await.filter(|c| {
            c.status
                .as_ref()
                .and_then(|s| s.capacity.as_ref())
                .is_some_and(|cap| cap["storage"].0 == "3Gi")
        })
    })
    .await
    .expect("the claim's capacity grows");
    let pv = volume(&bed, &pvc.spec.and_then(|s| s.volume_name).expect("bound")).await;
    assert_eq!(
        pv.spec.and_then(|s| s.capacity).expect("capacity")["storage"].0,
        "3Gi"
    );
    let handle = bed.openstack.handle();
    let sizes: Vec<u64> = handle.storage().volumes.iter().map(|v| v.size).collect();
    assert!(sizes.contains(&3) && sizes.contains(&1), "{sizes:?}");
    let (_, _, message) = event_with(&bed, "grows", "VolumeResizeSuccessful").await;
    assert!(message.starts_with("Resize volume succeeded"), "{message}");
}

#[tokio::test]
async fn a_used_volume_is_attached_and_its_claim_held_until_the_pod_goes() {
    let bed = bed().await;
    install_cinder(&bed).await;
    class(
        &bed,
        cinder_class("standard-csi", "Immediate", "Delete", false),
    )
    .await;
    claim(&bed, "db", Some("standard-csi"), "ReadWriteOnce", "1Gi").await;
    let pvc = bound(&bed, "db").await;
    let pv_name = pvc.spec.and_then(|s| s.volume_name).expect("bound");
    let pods: Api<Pod> = Api::namespaced(bed.client.clone(), NS);
    pods.create(
        &PostParams::default(),
        &typed(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db"},
            "spec": {"containers": [{"name": "db", "image": "quay.io/example/db:v1"}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "db"}}]}}),
        ),
    )
    .await
    .expect("pod");
    let attachments: Api<VolumeAttachment> = Api::all(bed.client.clone());
    let va = wait_for(DEADLINE, || async {
        attachments
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .into_iter()
            .find(|va| va.status.as_ref().is_some_and(|s| s.attached))
    })
    .await
    .expect("the volume is attached");
    assert_eq!(va.spec.attacher, "cinder.csi.openstack.org");
    assert_eq!(
        va.spec.source.persistent_volume_name.as_deref(),
        Some(pv_name.as_str())
    );
    let node = va.spec.node_name.clone();
    let os = bed.openstack.handle();
    assert_eq!(os.storage().volumes[0].attachments, vec![node]);
    assert_eq!(os.storage().volumes[0].status, "in-use");

    // With its volume attached the kubelet reports the Pod Running and Ready, on that node.
    let running = wait_for(DEADLINE, || async {
        let p = pods.get("db").await.expect("pod");
        let status = p.status.clone()?;
        let ready = status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        (status.phase.as_deref() == Some("Running") && ready).then_some(p)
    })
    .await
    .expect("the pod runs once its volume is attached");
    assert_eq!(
        running.spec.and_then(|s| s.node_name).as_deref(),
        Some(va.spec.node_name.as_str())
    );

    // The claim's deletion waits for the Pod (pvc-protection).
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(bed.client.clone(), NS);
    claims
        .delete("db", &DeleteParams::default())
        .await
        .expect("delete claim");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held = get_claim(&bed, "db").await.expect("still there");
    assert!(held.metadata.deletion_timestamp.is_some());
    assert_eq!(os.storage().volumes.len(), 1);

    pods.delete("db", &DeleteParams::default())
        .await
        .expect("delete pod");
    wait_for(DEADLINE, || async {
        (os.storage().volumes.is_empty()
            && get_claim(&bed, "db").await.is_none()
            && attachments
                .list(&ListParams::default())
                .await
                .expect("list")
                .items
                .is_empty())
        .then_some(())
    })
    .await
    .expect("detached, then the claim, its PV and the volume are gone");
    let events = events(&bed, &pv_name).await;
    assert!(
        events.iter().all(|(kind, _, _)| kind != "Warning"),
        "{events:?}"
    );
}
