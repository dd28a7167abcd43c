//! The Manila operator in-process against kube-sim and openstack-sim: silent and disabled
//! without Manila; with Manila, every object and one StorageClass per share type, following
//! share-type changes, credential rotations and outages; bad input reported, not crashing.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::api::storage::v1::{CSIDriver, StorageClass};
use kube::Api;
use kube::api::{DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use manila::operator::{self, Options};
use openstack_sim::{Fault, SimService, SimShareType};
use testbed::operators::{Lease, run_driver_operator};
use testbed::{Settings, Testbed, wait_for};

const CR: &str = "manila.csi.openstack.org";
const NS: &str = "openshift-manila-csi-driver";
const USER: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:openstack-manila-csi-driver-operator";
const DEADLINE: Duration = Duration::from_secs(20);

fn images() -> BTreeMap<String, String> {
    let mut images = testbed::example_images();
    images.insert(
        "NFS_DRIVER_IMAGE".into(),
        "quay.io/example/csi-driver-nfs:v4.20".into(),
    );
    images
}

async fn start_operator(
    bed: &Testbed,
    refresh: Duration,
    fs_group_policy: Option<&str>,
) -> tokio::sync::oneshot::Sender<()> {
    let client = testbed::client_for(&bed.kube, USER).await.expect("client");
    let mut opts = Options::new(images());
    opts.share_type_refresh = refresh;
    opts.fs_group_policy = fs_group_policy.map(str::to_string);
    let lease = Lease {
        namespace: manila::OPERATOR_NAMESPACE,
        name: manila::OPERATOR_LOCK_NAME,
        resync: Duration::from_secs(1),
    };
    run_driver_operator(client, opts, operator::watches, lease)
}

fn settings(share_types: Option<&[&str]>) -> Settings {
    let mut s = Settings {
        cinder_cluster_csi_driver: false,
        ..Settings::default()
    };
    s.openstack.share_types = share_types.map(|t| t.iter().map(|n| SimShareType::new(n)).collect());
    s
}

/// What CSO and the cloud credential operator leave behind for a Manila install.
async fn seed_manila(bed: &Testbed) {
    bed.create_cluster_csi_driver(CR).await.expect("CR");
    let namespaces: Api<Namespace> = Api::all(bed.client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(NS.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
    put_driver_credentials(bed, &bed.clouds_yaml()).await;
}

async fn put_driver_credentials(bed: &Testbed, clouds_yaml: &str) {
    let api: Api<Secret> = Api::namespaced(bed.client.clone(), NS);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("manila-cloud-credentials".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "clouds.yaml".to_string(),
            ByteString(clouds_yaml.as_bytes().to_vec()),
        )])),
        ..Default::default()
    };
    api.patch(
        "manila-cloud-credentials",
        &PatchParams::apply("test").force(),
        &Patch::Apply(&secret),
    )
    .await
    .expect("manila-cloud-credentials");
}

async fn condition(bed: &Testbed, t: &str) -> Option<(String, String, String)> {
    bed.conditions(CR).await.get(t).cloned()
}

async fn wait_condition(
    bed: &Testbed,
    t: &str,
    pred: impl Fn(&(String, String, String)) -> bool,
) -> (String, String, String) {
    let found = wait_for(DEADLINE, || async {
        condition(bed, t).await.filter(|c| pred(c))
    })
    .await;
    match found {
        Some(c) => c,
        None => panic!(
            "condition {t} never matched; conditions: {:#?}",
            bed.conditions(CR).await
        ),
    }
}

async fn storage_class_names(bed: &Testbed) -> Vec<String> {
    let api: Api<StorageClass> = Api::all(bed.client.clone());
    api.list(&Default::default())
        .await
        .map(|l| {
            l.items
                .into_iter()
                .filter_map(|s| s.metadata.name)
                .filter(|n| n.starts_with("csi-manila-"))
                .collect()
        })
        .unwrap_or_default()
}

fn template_annotations(d: &Deployment) -> BTreeMap<String, String> {
    d.spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default()
}

/// Requests of the operator other than watches and its lease renewals.
fn operator_requests(bed: &Testbed) -> Vec<String> {
    bed.kube
        .requests()
        .into_iter()
        .filter(|r| r.user.contains("openstack-manila") && r.verb != "watch")
        .map(|r| format!("{} {} {}", r.verb, r.path, r.code))
        .filter(|r| !r.starts_with("update /apis/coordination.k8s.io"))
        .collect()
}

#[tokio::test]
async fn without_manila_the_driver_is_disabled_and_the_operator_idles() {
    let bed = Testbed::start(settings(None)).await.expect("testbed");
    bed.create_cluster_csi_driver(CR).await.expect("CR");
    let _stop = start_operator(&bed, Duration::from_secs(600), None).await;
    let (_, reason, message) =
        wait_condition(&bed, "CSIControllerDisabled", |c| c.0 == "True").await;
    assert_eq!(reason, "PreConditionNotSatisfied");
    assert!(
        message.starts_with("Pre-condition not satisfied: ") && message.contains("sharev2"),
        "{message}"
    );
    let conditions = bed.conditions(CR).await;
    for (t, (status, reason, message)) in &conditions {
        if t.ends_with("Degraded") {
            assert_eq!(status, "False", "{t}: {reason}: {message}");
        }
    }
    // Nothing deployed.
    let deployments: Api<Deployment> = Api::namespaced(bed.client.clone(), NS);
    assert!(
        deployments
            .get_opt("openstack-manila-csi-controllerplugin")
            .await
            .expect("get")
            .is_none()
    );
    let drivers: Api<CSIDriver> = Api::all(bed.client.clone());
    assert!(drivers.get_opt(CR).await.expect("get").is_none());
    let namespaces: Api<Namespace> = Api::all(bed.client.clone());
    assert!(namespaces.get_opt(NS).await.expect("get").is_none());
    assert!(storage_class_names(&bed).await.is_empty());
    // Idle: several resyncs, no Kubernetes request but watches, no OpenStack request.
    tokio::time::sleep(Duration::from_secs(1)).await;
    bed.kube.clear_requests();
    bed.openstack.clear_requests();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let requests = operator_requests(&bed);
    assert!(
        requests.is_empty(),
        "idle operator made requests: {requests:#?}"
    );
    assert!(bed.openstack.requests().is_empty());
}

#[tokio::test]
async fn with_manila_everything_is_deployed_and_follows_changes() {
    let bed = Testbed::start(settings(Some(&["default", "Gold_Fast"])))
        .await
        .expect("testbed");
    seed_manila(&bed).await;
    let _stop = start_operator(&bed, Duration::from_secs(1), None).await;
    for t in [
        "OpenStackManilaDriverControllerServiceControllerAvailable",
        "OpenStackManilaDriverNodeServiceControllerAvailable",
        "NFSDriverNodeServiceControllerAvailable",
    ] {
        wait_condition(&bed, t, |c| c.0 == "True").await;
    }
    let conditions = bed.conditions(CR).await;
    assert!(
        !conditions.contains_key("CSIControllerDisabled"),
        "{conditions:#?}"
    );
    for (t, (status, reason, message)) in &conditions {
        if t.ends_with("Degraded") {
            assert_eq!(status, "False", "{t}: {reason}: {message}");
        }
    }
    let mut scs = storage_class_names(&bed).await;
    scs.sort();
    assert_eq!(scs, ["csi-manila-default", "csi-manila-gold-fast"]);
    let sc_api: Api<StorageClass> = Api::all(bed.client.clone());
    let gold = sc_api.get("csi-manila-gold-fast").await.expect("sc");
    assert_eq!(gold.parameters.as_ref().unwrap()["type"], "Gold_Fast");
    assert_eq!(gold.volume_binding_mode.as_deref(), Some("Immediate"));
    let ds: Api<DaemonSet> = Api::namespaced(bed.client.clone(), NS);
    for name in [
        "openstack-manila-csi-nodeplugin",
        "csi-nodeplugin-nfsplugin",
    ] {
        ds.get(name).await.expect(name);
    }
    let secrets: Api<Secret> = Api::namespaced(bed.client.clone(), NS);
    secrets.get("csi-manila-secrets").await.expect("csi secret");
    let drivers: Api<CSIDriver> = Api::all(bed.client.clone());
    let driver = drivers.get(CR).await.expect("csidriver");
    assert_eq!(driver.spec.fs_group_policy.as_deref(), Some("None"));

    // The admin makes a Manila class the default: the operator keeps that choice.
    sc_api
        .patch(
            "csi-manila-default",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"annotations": {
                "storageclass.kubernetes.io/is-default-class": "true"}}})),
        )
        .await
        .expect("annotate");

    // A share type added later appears within one refresh.
    bed.openstack.add_share_type(SimShareType::new("silver"));
    let appeared = wait_for(DEADLINE, || async {
        storage_class_names(&bed)
            .await
            .contains(&"csi-manila-silver".to_string())
            .then_some(())
    })
    .await;
    assert!(appeared.is_some(), "{:?}", storage_class_names(&bed).await);

    // A share type that disappears keeps its class and is named.
    bed.openstack.remove_share_type("default");
    let (_, _, message) = wait_condition(&bed, "ManilaStorageClassControllerDegraded", |c| {
        c.2.contains("no longer offered") && c.2.contains("default")
    })
    .await;
    assert!(message.contains("kept"), "{message}");
    let default = sc_api.get("csi-manila-default").await.expect("kept");
    assert_eq!(
        default.metadata.annotations.unwrap_or_default()["storageclass.kubernetes.io/is-default-class"],
        "true"
    );

    // Rotation: new password in Keystone, new Secrets. The pods roll and the next detection
    // authenticates with the new password (the old tokens are revoked by the password change).
    let deployments: Api<Deployment> = Api::namespaced(bed.client.clone(), NS);
    let before = template_annotations(
        &deployments
            .get("openstack-manila-csi-controllerplugin")
            .await
            .expect("deployment"),
    );
    let issued = bed.openstack.token_issuances();
    bed.openstack
        .set_password(openstack_sim::DEFAULT_USER, "rotated-password");
    let rotated = bed.openstack.clouds_yaml_password(
        "openstack",
        openstack_sim::DEFAULT_USER,
        "rotated-password",
    );
    bed.put_credentials(&rotated, bed.openstack.ca_pem())
        .await
        .expect("rotate");
    put_driver_credentials(&bed, &rotated).await;
    let rolled = wait_for(DEADLINE, || async {
        let d = deployments
            .get("openstack-manila-csi-controllerplugin")
            .await
            .ok()?;
        (template_annotations(&d) != before).then_some(())
    })
    .await;
    assert!(rolled.is_some(), "the controller pods did not roll");
    let node = ds.get("openstack-manila-csi-nodeplugin").await.expect("ds");
    let key = operator_kit::hash::dependency_annotation_key(
        operator_kit::hash::DependencyKind::Secret,
        NS,
        "manila-cloud-credentials",
    );
    assert!(
        node.spec
            .and_then(|s| s.template.metadata)
            .and_then(|m| m.annotations)
            .is_some_and(|a| a.contains_key(&key)),
        "node pods carry the credentials hash"
    );
    let new_token = wait_for(DEADLINE, || async {
        (bed.openstack.token_issuances() > issued).then_some(())
    })
    .await;
    assert!(
        new_token.is_some(),
        "no authentication with the new credentials"
    );
    wait_condition(&bed, "StarterControllerDegraded", |c| c.0 == "False").await;

    // Outage: the driver stays, the condition explains.
    bed.openstack
        .inject(Fault::status(503).on(SimService::Share));
    let (_, reason, message) =
        wait_condition(&bed, "ManilaServiceReachable", |c| c.0 == "False").await;
    assert_eq!(reason, "ManilaUnavailable");
    assert!(message.contains("stays installed"), "{message}");
    assert!(condition(&bed, "CSIControllerDisabled").await.is_none());
    deployments
        .get("openstack-manila-csi-controllerplugin")
        .await
        .expect("the driver stays");
    assert!(storage_class_names(&bed).await.len() >= 3);
    assert_eq!(
        condition(&bed, "StarterControllerDegraded")
            .await
            .map(|c| c.0),
        Some("False".to_string()),
        "a Manila outage does not degrade the cluster"
    );
    bed.openstack.clear_faults();
    wait_condition(&bed, "ManilaServiceReachable", |c| c.0 == "True").await;
}

/// Issue 24: a cloud with more share types than operator-kit's limit gets a StorageClass for
/// that many of them, and the condition says how many got none.
#[tokio::test]
async fn past_the_limit_share_types_get_no_class_and_the_condition_counts_them() {
    use operator_kit::class_names::MAX_CLASSES;
    let types: Vec<String> = (0..MAX_CLASSES + 20)
        .map(|n| format!("type-{n:03}"))
        .collect();
    let refs: Vec<&str> = types.iter().map(String::as_str).collect();
    let bed = Testbed::start(settings(Some(&refs)))
        .await
        .expect("testbed");
    seed_manila(&bed).await;
    let _stop = start_operator(&bed, Duration::from_secs(600), None).await;
    let (status, _, message) = wait_condition(&bed, "ManilaStorageClassControllerDegraded", |c| {
        c.2.contains("get none")
    })
    .await;
    assert_eq!(status, "False", "a limit is not a failure: {message}");
    assert!(
        message.contains(&format!("{} share types would", MAX_CLASSES + 20))
            && message.contains("20 share types get none")
            && message.contains(&format!("\"type-{MAX_CLASSES:03}\"")),
        "{message}"
    );
    let classes = storage_class_names(&bed).await;
    assert_eq!(classes.len(), MAX_CLASSES, "{classes:?}");
    assert!(classes.contains(&"csi-manila-type-000".to_string()));
}

#[tokio::test]
async fn bad_input_is_reported_not_fatal() {
    let bed = Testbed::start(settings(Some(&["default"])))
        .await
        .expect("testbed");
    seed_manila(&bed).await;
    let _stop = start_operator(&bed, Duration::from_secs(600), Some("Everything")).await;
    let (_, _, message) = wait_condition(
        &bed,
        "OpenStackManilaDriverCSIDriverControllerDegraded",
        |c| c.0 == "True",
    )
    .await;
    assert!(
        message.contains("CSI_FSGROUP_POLICY=\"Everything\""),
        "{message}"
    );
    let drivers: Api<CSIDriver> = Api::all(bed.client.clone());
    let driver = wait_for(DEADLINE, || async {
        drivers.get_opt(CR).await.ok().flatten()
    })
    .await
    .expect("created with the default policy");
    assert_eq!(driver.spec.fs_group_policy.as_deref(), Some("None"));

    // A management state the schema allows but the operator does not support.
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("operator.openshift.io", "v1", "ClusterCSIDriver"),
        "clustercsidrivers",
    );
    let api: Api<DynamicObject> = Api::all_with(bed.client.clone(), &ar);
    api.patch(
        CR,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"managementState": "Removed"}})),
    )
    .await
    .expect("patch");
    let (_, _, message) = wait_condition(&bed, "ManagementStateDegraded", |c| c.0 == "True").await;
    assert!(message.contains("Removed is not supported"), "{message}");

    // Malformed credentials: reported as such, the driver stays.
    api.patch(
        CR,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"managementState": "Managed"}})),
    )
    .await
    .expect("patch");
    bed.put_credentials("clouds: [not, a, map", None)
        .await
        .expect("bad credentials");
    let (_, _, message) = wait_condition(&bed, "ManilaServiceReachable", |c| c.0 == "False").await;
    assert!(message.contains("openstack-cloud-credentials"), "{message}");
    assert!(!message.contains("sim-password"), "no secret in messages");
}

/// The ClusterCSIDriver as stored (for `metadata.generation` and `status.observedGeneration`).
async fn cluster_csi_driver(bed: &Testbed) -> DynamicObject {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("operator.openshift.io", "v1", "ClusterCSIDriver"),
        "clustercsidrivers",
    );
    let api: Api<DynamicObject> = Api::all_with(bed.client.clone(), &ar);
    api.get(CR).await.expect("ClusterCSIDriver")
}

/// Whether any container of the controller Deployment runs with `arg`.
async fn controller_has_arg(bed: &Testbed, arg: &str) -> bool {
    let api: Api<Deployment> = Api::namespaced(bed.client.clone(), NS);
    let Ok(d) = api.get("openstack-manila-csi-controllerplugin").await else {
        return false;
    };
    d.spec.and_then(|s| s.template.spec).is_some_and(|p| {
        p.containers
            .iter()
            .any(|c| c.args.as_ref().is_some_and(|a| a.iter().any(|x| x == arg)))
    })
}

/// Far longer than the test waits for anything, and than the client's 120 s timeout.
const HANG: Duration = Duration::from_secs(3600);
/// What "at once" means below: far under one OpenStack timeout (120 s), which is what a
/// reconcile waiting for a hung OpenStack would take.
const PROMPTLY: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_hung_openstack_does_not_hold_up_the_reconcile() {
    let bed = Testbed::start(settings(Some(&["default"])))
        .await
        .expect("testbed");
    seed_manila(&bed).await;
    let _stop = start_operator(&bed, Duration::from_secs(1), None).await;
    wait_condition(&bed, "ManilaServiceReachable", |c| c.0 == "True").await;
    assert!(controller_has_arg(&bed, "--v=2").await);

    // Manila stops answering; the next refresh's share-type listing hangs.
    bed.openstack
        .inject(Fault::latency(HANG).on(SimService::Share));
    let hung = wait_for(DEADLINE, || async {
        (bed.openstack.in_flight(SimService::Share, "/types") > 0).then_some(())
    })
    .await;
    assert!(hung.is_some(), "no share-type listing reached Manila");

    // The admin turns the driver's logging up: status and driver follow at once.
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("operator.openshift.io", "v1", "ClusterCSIDriver"),
        "clustercsidrivers",
    );
    let api: Api<DynamicObject> = Api::all_with(bed.client.clone(), &ar);
    let patched = api
        .patch(
            CR,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"logLevel": "Debug"}})),
        )
        .await
        .expect("patch");
    let generation = patched.metadata.generation.expect("generation");
    let observed = wait_for(PROMPTLY, || async {
        let cr = cluster_csi_driver(&bed).await;
        (cr.data.pointer("/status/observedGeneration") == Some(&generation.into())).then_some(())
    })
    .await;
    assert!(
        observed.is_some(),
        "the status did not follow generation {generation} while Manila hangs: {:#?}",
        cluster_csi_driver(&bed).await.data.get("status")
    );
    let debug = wait_for(PROMPTLY, || async {
        controller_has_arg(&bed, "--v=4").await.then_some(())
    })
    .await;
    assert!(debug.is_some(), "the driver did not get the new log level");
    assert_eq!(
        bed.openstack.in_flight(SimService::Share, "/types"),
        1,
        "the listing still hangs, and no second one was started beside it"
    );
    assert_eq!(
        condition(&bed, "ManilaServiceReachable").await.map(|c| c.0),
        Some("True".to_string()),
        "nothing is known yet about the hanging check"
    );

    // New credentials while the check hangs: the hanging check is about the old ones, so a
    // check with the new ones starts at once and its answer is shown (Keystone refuses them).
    let issued = bed.openstack.token_issuances();
    let wrong = bed.openstack.clouds_yaml_password(
        "openstack",
        openstack_sim::DEFAULT_USER,
        "not-the-password",
    );
    bed.put_credentials(&wrong, bed.openstack.ca_pem())
        .await
        .expect("rotate");
    let refused = wait_for(PROMPTLY, || async {
        condition(&bed, "ManilaServiceReachable")
            .await
            .filter(|c| c.0 == "False")
    })
    .await;
    let (_, _, message) = refused.expect("the new credentials were not checked while Manila hangs");
    assert!(message.contains("cannot authenticate"), "{message}");
    assert!(
        !message.contains("not-the-password"),
        "no secret in messages"
    );
    assert_eq!(
        bed.openstack.token_issuances(),
        issued,
        "refused, not issued"
    );
}
