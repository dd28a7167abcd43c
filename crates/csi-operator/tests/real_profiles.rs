//! The release's cluster profiles judged by OpenShift's own cluster version operator on the
//! real control plane (see `real/mod.rs`): run as HyperShift runs the guest's CVO (the
//! `ibm-cloud-managed` profile, on the payload without the file HyperShift removes,
//! `control-plane-operator/controllers/hostedcontrolplane/v2/cvo/deployment.go`), it applies
//! the CSO's namespaces, RBAC and `Storage/cluster` but no CSO Deployment and no
//! CredentialsRequest: on HyperShift the CSO runs in the management cluster.

mod real;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use real::*;

const V1: &str = "0.0.1-snapshot";
const CSO_NS: &str = "openshift-cluster-storage-operator";
/// The file HyperShift removes from the payload (`manifestsToOmit`).
const OMITTED: &str = "0000_50_cluster-storage-operator_10_deployment-ibm-cloud-managed.yaml";

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hypershifts_guest_cvo_installs_no_cso_and_no_credentials_request() {
    let mut c = RealCluster::openshift(openstack_sim::SimConfig::default(), &[V1]).await;
    // The payload as HyperShift prepares it: every file but the one it removes.
    let mut p = payload(V1);
    p.remove.insert(OMITTED.to_owned());
    c.run_cvo_with_profile(&p, "ibm-cloud-managed").await;

    // What the profile includes arrives: the CSO's ServiceAccount and Storage/cluster.
    c.wait(
        "the guest's CSO ServiceAccount and Storage/cluster",
        async |c| {
            let sa = Api::<ServiceAccount>::namespaced(c.client.clone(), CSO_NS)
                .get_opt("cluster-storage-operator")
                .await
                .map_err(|e| e.to_string())?;
            let storage = Api::<DynamicObject>::all_with(
                c.client.clone(),
                &resource("operator.openshift.io", "v1", "Storage", "storages"),
            )
            .get_opt("cluster")
            .await
            .map_err(|e| e.to_string())?;
            match (sa, storage) {
                (Some(_), Some(_)) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    // The component is then held at ClusterOperator/storage, which no CSO will report: by then
    // every manifest before it, the CSO Deployments included, has been applied or excluded.
    // (A CSO Deployment showing up ends the wait too, to fail below with what it is.)
    c.wait("the CVO to wait for ClusterOperator/storage", async |c| {
        let cso = Api::<Deployment>::namespaced(c.client.clone(), CSO_NS)
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        if !cso.items.is_empty() {
            return Ok(());
        }
        let conditions = realkube::cvo::conditions(&c.client).await;
        let progressing = conditions
            .get("Progressing")
            .map(|(_, _, m)| m.clone())
            .unwrap_or_default();
        let failing = conditions
            .get("Failing")
            .map(|(_, _, m)| m.clone())
            .unwrap_or_default();
        if progressing.contains("storage") || failing.contains("storage") {
            Ok(())
        } else {
            Err(format!("{conditions:#?}"))
        }
    })
    .await;
    let deployments = Api::<Deployment>::namespaced(c.client.clone(), CSO_NS)
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(
        deployments.items.is_empty(),
        "no CSO in the guest: {:?}",
        deployments
            .items
            .iter()
            .map(|d| d.metadata.name.clone())
            .collect::<Vec<_>>()
    );
    let requests = Api::<DynamicObject>::all_with(
        c.client.clone(),
        &resource(
            "cloudcredential.openshift.io",
            "v1",
            "CredentialsRequest",
            "credentialsrequests",
        ),
    )
    .list(&ListParams::default())
    .await
    .unwrap();
    assert!(
        requests.items.is_empty(),
        "no CredentialsRequest in the guest: {:?}",
        requests
            .items
            .iter()
            .map(|r| r.metadata.name.clone())
            .collect::<Vec<_>>()
    );
}
