//! A stand-in for the cloud credential operator's OpenStack actuator (anchors §2.6): every
//! `CredentialsRequest` in `openshift-cloud-credential-operator` gets its target Secret, a copy
//! of the root secret `kube-system/openstack-credentials` (`clouds.yaml`, and `cacert` when
//! present), labelled and annotated as the CCO does, and `status.provisioned: true`.
//!
//! A target namespace that does not exist yet is skipped and retried, as the CCO reports
//! `MissingTargetNamespace` and retries. Secrets are written only when their data differ, so a
//! steady cluster sees no writes.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::Client;
use kube::api::{Api, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;

/// The CCO's namespace, where CredentialsRequests live.
pub const NAMESPACE: &str = "openshift-cloud-credential-operator";
/// The root credentials the installer leaves.
pub const ROOT_NAMESPACE: &str = "kube-system";
pub const ROOT_SECRET: &str = "openstack-credentials";
const LABEL: &str = "cloudcredential.openshift.io/credentials-request";

/// Creates the CCO's namespace (its own release manifest, which ours do not include); an
/// existing one is fine.
pub async fn create_namespace(client: &Client) -> Result<(), kube::Error> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(NAMESPACE.to_owned()),
            ..Default::default()
        },
        ..Default::default()
    };
    match namespaces.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Provisions every CredentialsRequest once; returns how many target Secrets were written.
pub async fn provision_once(client: &Client) -> Result<usize, kube::Error> {
    let roots: Api<Secret> = Api::namespaced(client.clone(), ROOT_NAMESPACE);
    let Some(root) = roots.get_opt(ROOT_SECRET).await? else {
        return Ok(0);
    };
    let root_data = root.data.unwrap_or_default();
    let data: BTreeMap<String, ByteString> = root_data
        .into_iter()
        .filter(|(k, _)| k == "clouds.yaml" || k == "cacert")
        .collect();
    let ar =
        operator_kit::kinds::api_resource("cloudcredential.openshift.io/v1", "CredentialsRequest")
            .map_err(|e| kube::Error::Service(e.to_string().into()))?;
    let requests: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &ar);
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut written = 0;
    for cr in requests.list(&Default::default()).await?.items {
        let name = cr.metadata.name.clone().unwrap_or_default();
        let target_ns = cr
            .data
            .pointer("/spec/secretRef/namespace")
            .and_then(|v| v.as_str());
        let target = cr
            .data
            .pointer("/spec/secretRef/name")
            .and_then(|v| v.as_str());
        let (Some(target_ns), Some(target)) = (target_ns, target) else {
            continue;
        };
        if namespaces.get_opt(target_ns).await?.is_none() {
            continue;
        }
        let secrets: Api<Secret> = Api::namespaced(client.clone(), target_ns);
        let live = secrets.get_opt(target).await?;
        if live.as_ref().and_then(|s| s.data.as_ref()) != Some(&data) {
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(target.to_owned()),
                    namespace: Some(target_ns.to_owned()),
                    labels: Some(BTreeMap::from([(LABEL.to_owned(), "true".to_owned())])),
                    annotations: Some(BTreeMap::from([(
                        LABEL.to_owned(),
                        format!("{NAMESPACE}/{name}"),
                    )])),
                    ..Default::default()
                },
                data: Some(data.clone()),
                type_: Some("Opaque".to_owned()),
                ..Default::default()
            };
            match live {
                None => {
                    secrets.create(&PostParams::default(), &secret).await?;
                }
                Some(_) => {
                    secrets
                        .patch(
                            target,
                            &PatchParams::default(),
                            &Patch::Merge(json!({"data": data, "metadata": {
                                "labels": secret.metadata.labels,
                                "annotations": secret.metadata.annotations}})),
                        )
                        .await?;
                }
            }
            written += 1;
        }
        // `lastSyncGeneration` is required by the CRD's status schema (the CCO records the
        // generation it provisioned); without it the status write is refused and every
        // CredentialsRequest listed after this one would never get its Secret.
        let generation = cr.metadata.generation.unwrap_or_default();
        if cr.data.pointer("/status/provisioned") != Some(&json!(true))
            || cr.data.pointer("/status/lastSyncGeneration") != Some(&json!(generation))
        {
            requests
                .patch_status(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {
                        "provisioned": true,
                        "lastSyncGeneration": generation,
                    }})),
                )
                .await?;
        }
    }
    Ok(written)
}

/// Runs [`provision_once`] every `period` until the task is aborted; errors are retried.
pub fn spawn(client: Client, period: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let _ = provision_once(&client).await;
            tokio::time::sleep(period).await;
        }
    })
}
