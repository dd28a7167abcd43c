//! Every ValidatingAdmissionPolicy we ship, judged by the real API server's CEL evaluator: the
//! writes each must allow and the writes each must refuse, made as the operator's own
//! ServiceAccount (a TokenRequest token, so RBAC is the server's too). The refusals are the
//! compromised operator's steps: each is allowed by its RBAC (the message shows the policy, not
//! RBAC, refused it) and refused by a policy.

mod real;

use std::path::{Path, PathBuf};

use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use realkube::{ControlPlane, Mode, Options};
use serde_json::{Value, json};

const DRIVERS_NS: &str = "openshift-cluster-csi-drivers";
const MANILA_NS: &str = "openshift-manila-csi-driver";

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

/// The objects of a folder's YAML files (CVO delete manifests and kustomizations aside).
fn objects(dir: &Path) -> Vec<Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|e| e == "yaml") && !p.ends_with("kustomization.yaml")
        })
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| realkube::apply::read(f).unwrap())
        .filter(|o| o["metadata"]["annotations"]["release.openshift.io/delete"] != "true")
        // A release manifest of another cluster profile (the IBM Cloud CSO Deployment) is not
        // applied on a standalone cluster; plain-Kubernetes manifests have no profile.
        .filter(|o| {
            let annotations = o["metadata"]["annotations"].as_object();
            let profiles = annotations
                .into_iter()
                .flatten()
                .filter(|(k, _)| k.starts_with("include.release.openshift.io/"))
                .count();
            profiles == 0
                || o["metadata"]["annotations"]
                    ["include.release.openshift.io/self-managed-high-availability"]
                    == "true"
        })
        .collect()
}

/// POST (or DELETE, with `delete`) of `obj` as `client`: Ok, or the API server's message.
async fn write(client: &Client, obj: &Value, delete: bool) -> Result<(), String> {
    let api_version = obj["apiVersion"].as_str().unwrap();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, obj["kind"].as_str().unwrap());
    let (resource, caps) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .map_err(|e| e.to_string())?;
    let api: Api<DynamicObject> = match obj["metadata"]["namespace"].as_str() {
        Some(ns) if caps.scope == kube::discovery::Scope::Namespaced => {
            Api::namespaced_with(client.clone(), ns, &resource)
        }
        _ => Api::all_with(client.clone(), &resource),
    };
    let name = obj["metadata"]["name"].as_str().unwrap();
    let result = if delete {
        api.delete(name, &DeleteParams::default()).await.map(|_| ())
    } else {
        let o: DynamicObject = serde_json::from_value(obj.clone()).unwrap();
        api.create(&PostParams::default(), &o).await.map(|_| ())
    };
    result.map_err(|e| match e {
        kube::Error::Api(s) => format!("{} {}", s.code, s.message),
        other => other.to_string(),
    })
}

/// Asserts a refusal by the named policy (not by RBAC).
fn refused_by(result: Result<(), String>, policy: &str, step: &str) {
    let message = result.expect_err(&format!("{step}: allowed, must be refused by {policy}"));
    assert!(
        message.contains(&format!("ValidatingAdmissionPolicy '{policy}'")),
        "{step}: refused, but not by {policy}: {message}"
    );
}

fn storage_class(name: &str, provisioner: &str) -> Value {
    json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name}, "provisioner": provisioner})
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
}

fn binding(name: &str, role: &str, sa_ns: &str, sa: &str) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "namespace": sa_ns, "name": sa}]})
}

/// Waits until the policies are in force (the API server loads a new policy within a moment).
async fn until_in_force(client: &Client, probe: &Value, policy: &str) {
    for _ in 0..100 {
        match write(client, probe, false).await {
            Err(m) if m.contains(policy) => return,
            Ok(()) => {
                let _ = write(client, probe, true).await;
            }
            Err(_) => {}
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    panic!("{policy} never came into force");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_admission_policy_we_ship_allows_the_operators_writes_and_refuses_the_compromised_operators()
 {
    let monitoring = repo("crates/openshift-api/crds");
    let mut options = Options::api_only(Mode::OpenShift);
    options.crds = vec![
        monitoring.join("servicemonitors.monitoring.coreos.com.yaml"),
        monitoring.join("prometheusrules.monitoring.coreos.com.yaml"),
    ];
    let plane = ControlPlane::start(options)
        .await
        .expect("the plane starts");
    let admin = plane.admin_client().await.unwrap();
    // What earlier run levels and the installer leave.
    for ns in [
        "openshift-cloud-credential-operator",
        "openshift-config",
        "openshift-config-managed",
    ] {
        realkube::apply::object(
            &admin,
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await
        .unwrap();
    }
    // The release as the CVO applies it, and the driver operators' RBAC as the CSO applies it
    // (the same assets generate manifests/kubernetes).
    for obj in objects(&repo("manifests/openshift")) {
        realkube::apply::object(&admin, &obj)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    for obj in objects(&repo("manifests/kubernetes")) {
        if ["Deployment", "CustomResourceDefinition"]
            .contains(&obj["kind"].as_str().unwrap_or_default())
        {
            continue;
        }
        realkube::apply::object(&admin, &obj)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let cinder = plane
        .service_account_client(DRIVERS_NS, "openstack-cinder-csi-driver-operator")
        .await
        .unwrap();
    let manila = plane
        .service_account_client(DRIVERS_NS, "manila-csi-driver-operator")
        .await
        .unwrap();
    let cso = plane
        .service_account_client(
            "openshift-cluster-storage-operator",
            "cluster-storage-operator",
        )
        .await
        .unwrap();

    // --- openshift-storage-policy-validation: Namespace labels (anyone).
    let label = "storage.openshift.io/fsgroup-change-policy";
    let bad_ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bad-labels", "labels": {label: "Bogus"}}});
    until_in_force(&admin, &bad_ns, "openshift-storage-policy-validation").await;
    let message = write(&admin, &bad_ns, false).await.unwrap_err();
    assert!(
        message.contains("Invalid value 'Bogus'") && message.contains("Always, OnRootMismatch"),
        "{message}"
    );
    write(&admin, &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "good-labels", "labels": {label: "OnRootMismatch"}}}), false)
        .await
        .expect("a known value is allowed");

    // --- The StorageClass policies: each driver operator writes only its provisioner's classes.
    write(
        &admin,
        &storage_class("foreign", "kubernetes.io/no-provisioner"),
        false,
    )
    .await
    .unwrap();
    for (client, provisioner, other, policy) in [
        (
            &cinder,
            "cinder.csi.openstack.org",
            "manila.csi.openstack.org",
            "openstack-cinder-csi-driver-operator-storageclasses",
        ),
        (
            &manila,
            "manila.csi.openstack.org",
            "cinder.csi.openstack.org",
            "manila-csi-driver-operator-storageclasses",
        ),
    ] {
        let own = storage_class(&format!("own-{}", &provisioner[..6]), provisioner);
        until_in_force(client, &storage_class("probe", other), policy).await;
        write(client, &own, false).await.expect("its own class");
        refused_by(
            write(client, &storage_class("stolen", other), false).await,
            policy,
            "a class of another provisioner",
        );
        refused_by(
            write(client, &storage_class("foreign", provisioner), true).await,
            policy,
            "deleting a foreign class",
        );
        write(client, &own, true)
            .await
            .expect("deleting its own class");
    }

    // --- The Cinder operator's RBAC: its own roles and bindings pass ...
    let privileged = cluster_role(
        "openstack-cinder-privileged-role",
        json!([{"apiGroups": ["security.openshift.io"], "resources": ["securitycontextconstraints"], "resourceNames": ["privileged"], "verbs": ["use"]}]),
    );
    let cinder_rbac = "openstack-cinder-csi-driver-operator-rbac";
    until_in_force(&cinder, &cluster_role("probe-role", json!([])), cinder_rbac).await;
    write(&cinder, &privileged, false)
        .await
        .expect("its own ClusterRole");
    write(
        &cinder,
        &binding(
            "openstack-cinder-node-privileged-binding",
            "openstack-cinder-privileged-role",
            DRIVERS_NS,
            "openstack-cinder-csi-driver-node-sa",
        ),
        false,
    )
    .await
    .expect("its own binding, as its asset makes it");
    // ... and the compromised operator is refused at each step: a role of its own making with
    // StorageClass writes, a binding of the privileged SCC to another ServiceAccount, its own
    // binding re-made for another ServiceAccount or another role.
    let sc_writer = json!([{"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": ["create", "update", "delete"]}]);
    refused_by(
        write(
            &cinder,
            &cluster_role("cinder-storageclass-writer", sc_writer.clone()),
            false,
        )
        .await,
        cinder_rbac,
        "a ClusterRole of its making",
    );
    refused_by(
        write(
            &cinder,
            &binding(
                "cinder-extra",
                "openstack-cinder-privileged-role",
                DRIVERS_NS,
                "default",
            ),
            false,
        )
        .await,
        cinder_rbac,
        "binding the privileged SCC to another ServiceAccount",
    );
    write(&cinder, &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "openstack-cinder-node-privileged-binding"}}), true)
        .await
        .expect("its RBAC lets it delete its own binding");
    refused_by(
        write(
            &cinder,
            &binding(
                "openstack-cinder-node-privileged-binding",
                "openstack-cinder-privileged-role",
                DRIVERS_NS,
                "default",
            ),
            false,
        )
        .await,
        cinder_rbac,
        "its own binding re-made for another ServiceAccount",
    );
    refused_by(
        write(
            &cinder,
            &binding(
                "openstack-cinder-node-privileged-binding",
                "openshift-csi-main-provisioner-role",
                DRIVERS_NS,
                "openstack-cinder-csi-driver-node-sa",
            ),
            false,
        )
        .await,
        cinder_rbac,
        "its own binding re-made for another role",
    );

    // --- The Manila operator's RBAC, the same way (its drivers live in their own namespace).
    let manila_rbac = "manila-csi-driver-operator-rbac";
    until_in_force(&manila, &cluster_role("probe-role", json!([])), manila_rbac).await;
    write(
        &manila,
        &cluster_role(
            "openstack-manila-privileged-role",
            privileged["rules"].clone(),
        ),
        false,
    )
    .await
    .expect("its own ClusterRole");
    write(
        &manila,
        &binding(
            "openstack-manila-node-privileged-binding",
            "openstack-manila-privileged-role",
            MANILA_NS,
            "manila-csi-driver-node-sa",
        ),
        false,
    )
    .await
    .expect("its own binding");
    refused_by(
        write(
            &manila,
            &cluster_role("manila-storageclass-writer", sc_writer.clone()),
            false,
        )
        .await,
        manila_rbac,
        "a ClusterRole of its making",
    );
    refused_by(
        write(
            &manila,
            &binding(
                "manila-extra",
                "openstack-manila-privileged-role",
                MANILA_NS,
                "default",
            ),
            false,
        )
        .await,
        manila_rbac,
        "binding the privileged SCC to another ServiceAccount",
    );

    // --- The CSO: no StorageClass, VolumeSnapshotClass or CSIDriver of its own; only the driver
    // operators' ClusterRoles and bindings, each to its operator.
    let cso_policy = "cluster-storage-operator-cluster-writes";
    until_in_force(
        &cso,
        &storage_class("probe", "cinder.csi.openstack.org"),
        cso_policy,
    )
    .await;
    refused_by(
        write(
            &cso,
            &storage_class("cso-class", "cinder.csi.openstack.org"),
            false,
        )
        .await,
        cso_policy,
        "a StorageClass",
    );
    refused_by(
        write(&cso, &json!({"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass", "metadata": {"name": "cso-snapshots"}, "driver": "cinder.csi.openstack.org", "deletionPolicy": "Delete"}), false).await,
        cso_policy,
        "a VolumeSnapshotClass",
    );
    refused_by(
        write(&cso, &json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "evil.csi.example.com"}, "spec": {}}), false).await,
        cso_policy,
        "a CSIDriver",
    );
    refused_by(
        write(
            &cso,
            &cluster_role("cso-storageclass-writer", sc_writer),
            false,
        )
        .await,
        cso_policy,
        "a ClusterRole of its making",
    );
    let operator_binding = "openstack-cinder-csi-driver-operator-clusterrolebinding";
    let operator_role = "openstack-cinder-csi-driver-operator-clusterrole";
    write(&admin, &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": operator_binding}}), true)
        .await
        .unwrap();
    refused_by(
        write(
            &cso,
            &binding(operator_binding, operator_role, DRIVERS_NS, "default"),
            false,
        )
        .await,
        cso_policy,
        "a driver operator's role bound to another ServiceAccount",
    );
    write(
        &cso,
        &binding(
            operator_binding,
            operator_role,
            DRIVERS_NS,
            "openstack-cinder-csi-driver-operator",
        ),
        false,
    )
    .await
    .expect("the Cinder operator's binding, as the CSO makes it");

    // --- No operator mints a ServiceAccount token: each may create Secrets in its namespaces
    // (so RBAC passes) but not one of type kubernetes.io/service-account-token, which the token
    // controller would fill with a token of the ServiceAccount it names.
    let token_policy = "storage-operators-service-account-tokens";
    let token_secret = |ns: &str, name: &str, sa: &str| {
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {"name": name, "namespace": ns,
                "annotations": {"kubernetes.io/service-account.name": sa}}})
    };
    // The CSO probes: it may delete Secrets there, so a probe admitted early is cleaned up.
    until_in_force(
        &cso,
        &token_secret(DRIVERS_NS, "probe-token", "default"),
        token_policy,
    )
    .await;
    for (client, ns, who) in [
        (&cinder, DRIVERS_NS, "the Cinder operator"),
        (&manila, MANILA_NS, "the Manila operator"),
        (&cso, DRIVERS_NS, "the CSO"),
        (&cso, MANILA_NS, "the CSO"),
    ] {
        refused_by(
            write(
                client,
                &token_secret(
                    ns,
                    "minted-token",
                    "openstack-cinder-csi-driver-controller-sa",
                ),
                false,
            )
            .await,
            token_policy,
            &format!("{who} minting a token Secret in {ns}"),
        );
    }
    // An ordinary Secret is still theirs to create (the policy is about the type only).
    let opaque = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "an-ordinary-secret", "namespace": DRIVERS_NS}});
    write(&cso, &opaque, false)
        .await
        .expect("an Opaque Secret, which the CSO's Role allows");
    // Anyone else (here the administrator) is not matched.
    write(
        &admin,
        &token_secret(DRIVERS_NS, "admin-token", "default"),
        false,
    )
    .await
    .expect("the administrator's token Secret");
}
