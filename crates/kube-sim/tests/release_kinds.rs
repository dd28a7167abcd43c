//! What the cluster version operator's in-place updates of release manifests meet on a real API
//! server, checked through kube-rs: a binding's `roleRef` cannot change (`422 Invalid`, `cannot
//! change roleRef`), so a release that points an existing binding at another role is refused
//! forever; and `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy and its binding are
//! served and stored (the Cluster Storage Operator's release ships one), without evaluating CEL.

mod common;

use common::{TestResult, start, status};
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, PostParams};
use serde_json::json;

fn binding(role: &str) -> ClusterRoleBinding {
    serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "cluster-storage-operator-role"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "cluster-storage-operator",
                      "namespace": "openshift-cluster-storage-operator"}],
    }))
    .expect("a ClusterRoleBinding")
}

#[tokio::test]
async fn an_update_that_changes_role_ref_is_invalid_and_other_updates_are_not() -> TestResult {
    let (_sim, client) = start().await;
    let api: Api<ClusterRoleBinding> = Api::all(client);
    let live = api
        .create(&PostParams::default(), &binding("cluster-admin"))
        .await?;

    let mut changed = binding("cluster-storage-operator");
    changed.metadata.resource_version = live.metadata.resource_version.clone();
    let s = status(
        api.replace(
            "cluster-storage-operator-role",
            &PostParams::default(),
            &changed,
        )
        .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"), "{s:?}");
    assert!(s.message.contains("cannot change roleRef"), "{}", s.message);
    // The refused update left the binding as it was.
    let after = api.get("cluster-storage-operator-role").await?;
    assert_eq!(after.role_ref.name, "cluster-admin");

    // Subjects and metadata may change in place.
    let mut same_role = after.clone();
    same_role.subjects = Some(vec![]);
    same_role
        .metadata
        .labels
        .get_or_insert_default()
        .insert("a".into(), "b".into());
    let updated = api
        .replace(
            "cluster-storage-operator-role",
            &PostParams::default(),
            &same_role,
        )
        .await?;
    assert_eq!(updated.subjects.unwrap_or_default().len(), 0);
    Ok(())
}

#[tokio::test]
async fn validating_admission_policies_and_bindings_are_stored() -> TestResult {
    let (_sim, client) = start().await;
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    let policy: ValidatingAdmissionPolicy = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "storage-labels"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["namespaces"]}]},
            "validations": [{"expression": "true", "reason": "Invalid"}],
        },
    }))?;
    let created = policies.create(&PostParams::default(), &policy).await?;
    assert_eq!(created.metadata.generation, Some(1));
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(client);
    let binding: ValidatingAdmissionPolicyBinding = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "storage-labels-binding"},
        "spec": {"policyName": "storage-labels", "validationActions": ["Deny"]},
    }))?;
    bindings.create(&PostParams::default(), &binding).await?;
    let got = bindings.get("storage-labels-binding").await?;
    assert_eq!(
        got.spec.and_then(|s| s.policy_name).as_deref(),
        Some("storage-labels")
    );
    assert_eq!(policies.list(&Default::default()).await?.items.len(), 1);
    Ok(())
}
