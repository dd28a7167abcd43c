//! The opt-in StorageClasses per volume type, in-process against kube-sim and openstack-sim:
//! `storageClassState: Removed` deletes only the classes the operator made, and a cloud with
//! more public types than the limit gets that many classes and a condition counting the rest.

use std::time::Duration;

use cinder::operator::{self, Options};
use cinder::volume_types::{CLASS_LABEL, OPT_IN_ANNOTATION};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::Api;
use kube::api::{DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use openstack_sim::SimVolumeType;
use testbed::operators::{Lease, run_driver_operator};
use testbed::{Settings, Testbed, wait_for};

const CR: &str = "cinder.csi.openstack.org";
const CONDITION: &str = "CinderVolumeTypeStorageClassControllerDegraded";
const DEADLINE: Duration = Duration::from_secs(30);

async fn start_operator(bed: &Testbed) -> tokio::sync::oneshot::Sender<()> {
    let client = testbed::client_for(
        &bed.kube,
        "system:serviceaccount:openshift-cluster-csi-drivers:openstack-cinder-csi-driver-operator",
    )
    .await
    .expect("client");
    let opts = Options::new(testbed::example_images());
    let lease = Lease {
        namespace: testbed::DRIVER_NAMESPACE,
        name: cinder::OPERATOR_LOCK_NAME,
        resync: Duration::from_secs(1),
    };
    run_driver_operator(client, opts, operator::watches, lease)
}

/// Opts the ClusterCSIDriver in to per-type classes, with `storageClassState` as given.
async fn opt_in(bed: &Testbed, storage_class_state: &str) {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("operator.openshift.io", "v1", "ClusterCSIDriver"),
        "clustercsidrivers",
    );
    Api::<DynamicObject>::all_with(bed.client.clone(), &ar)
        .patch(
            CR,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({
                "metadata": {"annotations": {OPT_IN_ANNOTATION: "true"}},
                "spec": {"storageClassState": storage_class_state},
            })),
        )
        .await
        .expect("the ClusterCSIDriver patched");
}

fn class(name: &str, provisioner: &str, labelled: bool) -> StorageClass {
    StorageClass {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: labelled.then(|| [(CLASS_LABEL.to_string(), "true".to_string())].into()),
            ..Default::default()
        },
        provisioner: provisioner.into(),
        ..Default::default()
    }
}

async fn per_type_classes(bed: &Testbed) -> Vec<String> {
    Api::<StorageClass>::all(bed.client.clone())
        .list(&Default::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|sc| sc.metadata.name)
        .filter(|n| n.starts_with("csi-cinder-"))
        .collect()
}

/// Issue 24: with `Removed`, a class named `csi-cinder-<type>` is deleted only when it is the
/// operator's (its label, the Cinder provisioner); same-named classes made by someone else
/// survive, whether labelled like ours or not.
#[tokio::test]
async fn removed_deletes_only_the_classes_the_operator_made() {
    let mut settings = Settings::default();
    settings.openstack.volume_types = vec![
        SimVolumeType::public("gold"),
        SimVolumeType::public("hdd"),
        SimVolumeType::public("ssd"),
    ];
    let bed = Testbed::start(settings).await.expect("testbed");
    let api: Api<StorageClass> = Api::all(bed.client.clone());
    for sc in [
        class("csi-cinder-gold", "cinder.csi.openstack.org", true),
        class("csi-cinder-hdd", "cinder.csi.openstack.org", false),
        class("csi-cinder-ssd", "example.com/nfs", true),
    ] {
        api.create(&PostParams::default(), &sc)
            .await
            .expect("class created");
    }
    opt_in(&bed, "Removed").await;
    let _stop = start_operator(&bed).await;

    let gone = wait_for(DEADLINE, || async {
        let conditions = bed.conditions(CR).await;
        let posted = conditions.contains_key(CONDITION);
        let gold = api.get_opt("csi-cinder-gold").await.ok().flatten();
        (posted && gold.is_none()).then_some(())
    })
    .await;
    assert!(
        gone.is_some(),
        "our class csi-cinder-gold deleted and the step reported: {:?} {:#?}",
        per_type_classes(&bed).await,
        bed.conditions(CR).await
    );
    // A few more reconciles (resync 1 s) must not delete the others either.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut left = per_type_classes(&bed).await;
    left.sort();
    assert_eq!(left, ["csi-cinder-hdd", "csi-cinder-ssd"]);
    let (status, _, message) = bed.conditions(CR).await[CONDITION].clone();
    assert_eq!(status, "False", "{message}");
}

/// Issue 24: past the limit, public volume types get no class, and the condition says how
/// many.
#[tokio::test]
async fn past_the_limit_volume_types_get_no_class_and_the_condition_counts_them() {
    use operator_kit::class_names::MAX_CLASSES;
    let mut settings = Settings::default();
    settings.openstack.volume_types = (0..MAX_CLASSES + 7)
        .map(|n| SimVolumeType::public(&format!("type-{n:03}")))
        .collect();
    let bed = Testbed::start(settings).await.expect("testbed");
    opt_in(&bed, "Managed").await;
    let _stop = start_operator(&bed).await;
    let reported = wait_for(DEADLINE, || async {
        bed.conditions(CR)
            .await
            .get(CONDITION)
            .filter(|(_, _, m)| m.contains("get none"))
            .cloned()
    })
    .await;
    let Some((status, _, message)) = reported else {
        panic!(
            "no count of the types left out: {:#?}",
            bed.conditions(CR).await
        );
    };
    assert_eq!(status, "False", "{message}");
    assert!(message.contains("7 volume types get none"), "{message}");
    assert_eq!(per_type_classes(&bed).await.len(), MAX_CLASSES);
}
