//! The release's ValidatingAdmissionPolicies `manila-csi-driver-operator-storageclasses`
//! (`manifests/openshift/…15…`, bound by `…16…`) and
//! `openstack-cinder-csi-driver-operator-storageclasses` (`…17…`, `…18…`), enforced by kube-sim
//! as an API server does: with every manifest applied as the cluster version operator applies
//! them, the Manila operator's service account creates, updates, applies and deletes its own
//! StorageClasses (provisioner `manila.csi.openstack.org`) and is refused, with the API
//! server's 422, for any StorageClass of another provisioner, although its ClusterRole grants
//! every StorageClass (one per share type, names known only at run time); the Cinder
//! operator's likewise for `cinder.csi.openstack.org` (one class per volume type, opted in).
//! Other users are not affected.

use std::path::Path;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, core::Status};
use serde_json::{Value, json};
use testbed::{Settings, Testbed};

const MANILA_OPERATOR: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:manila-csi-driver-operator";
const CINDER_OPERATOR: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:openstack-cinder-csi-driver-operator";
const MANILA: &str = "manila.csi.openstack.org";
const CINDER: &str = "cinder.csi.openstack.org";
const POLICY: &str = "manila-csi-driver-operator-storageclasses";

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// A testbed with every release manifest applied, and clients for the Manila operator's
/// service account and for the Cinder operator's.
async fn released() -> (Testbed, Client, Client) {
    let bed = Testbed::start(Settings::default())
        .await
        .expect("testbed starts");
    // The cloud credential operator's namespace is the CCO's manifest, not ours.
    let cco: Namespace = serde_json::from_value(
        json!({"metadata": {"name": "openshift-cloud-credential-operator"}}),
    )
    .expect("namespace");
    match Api::<Namespace>::all(bed.client.clone())
        .create(&PostParams::default(), &cco)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("CCO namespace: {e}"),
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests/openshift");
    testbed::cvo::apply_dir(&bed.client, &dir)
        .await
        .expect("the release applies");
    let manila = testbed::client_for(&bed.kube, MANILA_OPERATOR)
        .await
        .expect("client");
    let cinder = testbed::client_for(&bed.kube, CINDER_OPERATOR)
        .await
        .expect("client");
    (bed, manila, cinder)
}

fn class(name: &str, provisioner: &str) -> StorageClass {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "provisioner": provisioner,
        "parameters": {"type": "default"}
    }))
    .expect("a StorageClass")
}

fn classes(client: &Client) -> Api<StorageClass> {
    Api::all(client.clone())
}

fn refusal<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> Box<Status> {
    match result {
        Err(kube::Error::Api(s)) => s,
        other => panic!("expected the API server to refuse, got {other:?}"),
    }
}

fn label(key: &str, value: &str) -> Value {
    json!({"metadata": {"labels": {key: value}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manila_operator_writes_only_manila_storage_classes() -> TestResult {
    let (bed, manila, _) = released().await;
    let admin = classes(&bed.client);
    for (name, provisioner) in [("csi-cinder-sc", CINDER), ("standard", CINDER)] {
        if admin.get_opt(name).await?.is_none() {
            admin
                .create(&PostParams::default(), &class(name, provisioner))
                .await?;
        }
    }
    let own = classes(&manila);

    // Its own classes: create, update (patch, apply), delete.
    own.create(&PostParams::default(), &class("csi-manila-gold", MANILA))
        .await?;
    own.patch(
        "csi-manila-gold",
        &PatchParams::default(),
        &Patch::Merge(&label("tier", "gold")),
    )
    .await?;
    let applied = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "csi-manila-silver"}, "provisioner": MANILA,
        "parameters": {"type": "silver"}});
    own.patch(
        "csi-manila-silver",
        &PatchParams::apply("manila-csi-driver-operator"),
        &Patch::Apply(&applied),
    )
    .await?;
    own.delete("csi-manila-silver", &DeleteParams::default())
        .await?;

    // Another provisioner: refused on create, update and delete, with the server's message.
    let refused = refusal(
        own.create(&PostParams::default(), &class("csi-manila-fake", CINDER))
            .await,
    );
    assert_eq!((refused.code, refused.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        refused.message,
        format!(
            "storageclasses.storage.k8s.io \"csi-manila-fake\" is forbidden: \
             ValidatingAdmissionPolicy '{POLICY}' with binding '{POLICY}-binding' denied request: \
             the Manila CSI driver operator may only write StorageClasses of provisioner {MANILA}, \
             not {CINDER}"
        )
    );
    for name in ["csi-cinder-sc", "standard"] {
        let refused = refusal(
            own.patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&label("taken", "yes")),
            )
            .await,
        );
        assert_eq!(refused.code, 422, "{name}: {}", refused.message);
        assert!(
            refused.message.contains(&format!(
                "denied request: the Manila CSI driver operator may only write StorageClasses of \
                 provisioner {MANILA}, not {CINDER}"
            )),
            "{name}: {}",
            refused.message
        );
        let refused = refusal(own.delete(name, &DeleteParams::default()).await);
        assert_eq!(refused.code, 422, "{name}: {}", refused.message);
        // Admission has no object on delete, so the API server names it "Unknown".
        assert_eq!(
            refused.message,
            format!(
                "storageclasses.storage.k8s.io \"Unknown\" is forbidden: \
                 ValidatingAdmissionPolicy '{POLICY}' with binding '{POLICY}-binding' denied \
                 request: the Manila CSI driver operator may only change or delete \
                 StorageClasses of provisioner {MANILA}, not {CINDER}"
            )
        );
        // A dry run is judged the same.
        let dry = DeleteParams {
            dry_run: true,
            ..DeleteParams::default()
        };
        assert_eq!(refusal(own.delete(name, &dry).await).code, 422);
        assert_eq!(admin.get(name).await?.provisioner, CINDER);
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cinder_operator_writes_only_cinder_storage_classes() -> TestResult {
    const CINDER_POLICY: &str = "openstack-cinder-csi-driver-operator-storageclasses";
    let (bed, manila, cinder) = released().await;
    classes(&manila)
        .create(&PostParams::default(), &class("csi-manila-gold", MANILA))
        .await?;
    let own = classes(&cinder);
    // Its own classes (standard-csi, one per volume type): create, update, delete.
    own.create(&PostParams::default(), &class("csi-cinder-ssd", CINDER))
        .await?;
    own.patch(
        "csi-cinder-ssd",
        &PatchParams::default(),
        &Patch::Merge(&label("cinder.csi.openstack.org/volume-type-class", "true")),
    )
    .await?;
    own.delete("csi-cinder-ssd", &DeleteParams::default())
        .await?;
    // Another provisioner: refused on create, update and delete.
    let refused = refusal(
        own.create(&PostParams::default(), &class("csi-cinder-fake", MANILA))
            .await,
    );
    assert_eq!(
        refused.message,
        format!(
            "storageclasses.storage.k8s.io \"csi-cinder-fake\" is forbidden: \
             ValidatingAdmissionPolicy '{CINDER_POLICY}' with binding '{CINDER_POLICY}-binding' \
             denied request: the Cinder CSI driver operator may only write StorageClasses of \
             provisioner {CINDER}, not {MANILA}"
        )
    );
    let refused = refusal(
        own.patch(
            "csi-manila-gold",
            &PatchParams::default(),
            &Patch::Merge(&label("taken", "yes")),
        )
        .await,
    );
    assert_eq!(refused.code, 422, "{}", refused.message);
    let refused = refusal(
        own.delete("csi-manila-gold", &DeleteParams::default())
            .await,
    );
    assert!(
        refused.message.contains(
            "the Cinder CSI driver operator may only change or delete StorageClasses of \
             provisioner cinder.csi.openstack.org, not manila.csi.openstack.org"
        ),
        "{}",
        refused.message
    );
    assert_eq!(
        classes(&bed.client)
            .get("csi-manila-gold")
            .await?
            .provisioner,
        MANILA
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_users_are_not_restricted() -> TestResult {
    let (bed, manila, cinder) = released().await;
    classes(&manila)
        .create(&PostParams::default(), &class("csi-manila-gold", MANILA))
        .await?;
    classes(&cinder)
        .create(&PostParams::default(), &class("standard", CINDER))
        .await?;
    // An administrator writes any class, either operator's included.
    let api = classes(&bed.client);
    api.create(
        &PostParams::default(),
        &class("scratch", "example.com/other"),
    )
    .await?;
    for name in ["scratch", "csi-manila-gold", "standard"] {
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&label("seen", "yes")),
        )
        .await?;
        api.delete(name, &DeleteParams::default()).await?;
    }
    Ok(())
}
