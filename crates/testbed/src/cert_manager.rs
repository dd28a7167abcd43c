//! A stand-in for cert-manager's controller, for plain-Kubernetes tests of the operators'
//! cert-manager path (`operator_kit::cert_manager`). Opt-in (`Settings::cert_manager`): it does
//! nothing until the test installs cert-manager's CRDs ([`install_crds`], from a fixture with
//! the real schema's key fields), then, for every `cert-manager.io/v1` Certificate whose issuer
//! exists, keeps its `spec.secretName` filled with a self-signed `kubernetes.io/tls`
//! certificate for its `dnsNames`, annotated as cert-manager annotates it
//! (`cert-manager.io/certificate-name`, `issuer-name`, `issuer-kind`, plus the
//! `secretTemplate`'s annotations), and sets the Certificate's `Ready` condition.
//!
//! As cert-manager does, it issues again when the Secret is missing or lacks those annotations
//! (so it takes over a Secret someone else wrote), and only then; other annotations on the
//! Secret are kept. A Certificate whose issuer is missing gets `Ready=False`. It polls (every
//! `period`), which is fine for a stand-in. Emulator-side code: product crates never depend on
//! it.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

/// On a Secret cert-manager filled: the Certificate, and its issuer's name and kind.
pub const CERTIFICATE_NAME: &str = "cert-manager.io/certificate-name";
pub const ISSUER_NAME: &str = "cert-manager.io/issuer-name";
pub const ISSUER_KIND: &str = "cert-manager.io/issuer-kind";

/// Why the stand-in could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum CertManagerError {
    #[error("cannot make a certificate: {0}")]
    Certificate(String),
    #[error("the CRD fixture is not valid: {0}")]
    Fixture(String),
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cert-manager.io", "v1", kind),
        plural,
    )
}

/// Creates the CRDs of a multi-document YAML `fixture` (an existing one is left as it is).
pub async fn install_crds(client: &Client, fixture: &str) -> Result<(), CertManagerError> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let values = operator_kit::assets::parse_values("cert-manager CRDs", fixture)
        .map_err(|e| CertManagerError::Fixture(e.to_string()))?;
    for value in values {
        let crd: CustomResourceDefinition =
            serde_json::from_value(value).map_err(|e| CertManagerError::Fixture(e.to_string()))?;
        match crds.create(&PostParams::default(), &crd).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Deletes the CRDs of `fixture` (and so every Certificate and Issuer), as uninstalling
/// cert-manager does.
pub async fn remove_crds(client: &Client, fixture: &str) -> Result<(), CertManagerError> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let values = operator_kit::assets::parse_values("cert-manager CRDs", fixture)
        .map_err(|e| CertManagerError::Fixture(e.to_string()))?;
    for value in values {
        let name = value["metadata"]["name"].as_str().unwrap_or_default();
        match crds.delete(name, &Default::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// What the stand-in did in one pass.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pass {
    /// Secrets (re)issued, as `namespace/name`.
    pub issued: Vec<String>,
}

/// One pass over every Certificate; a cluster without the CRD is an empty pass.
pub async fn sync_once(client: &Client) -> Result<Pass, CertManagerError> {
    let certificates: Api<DynamicObject> =
        Api::all_with(client.clone(), &resource("Certificate", "certificates"));
    let list = match certificates.list(&ListParams::default()).await {
        Ok(list) => list,
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(Pass::default()),
        Err(e) => return Err(e.into()),
    };
    let mut pass = Pass::default();
    for cert in list.items {
        if let Some(issued) = sync_certificate(client, &cert).await? {
            pass.issued.push(issued);
        }
    }
    Ok(pass)
}

/// Keeps one Certificate's Secret and Ready condition; returns the Secret when it was issued.
async fn sync_certificate(
    client: &Client,
    cert: &DynamicObject,
) -> Result<Option<String>, CertManagerError> {
    let (Some(ns), Some(name)) = (
        cert.metadata.namespace.as_deref(),
        cert.metadata.name.as_deref(),
    ) else {
        return Ok(None);
    };
    let spec = &cert.data["spec"];
    let secret_name = spec["secretName"].as_str().unwrap_or_default();
    let issuer_name = spec["issuerRef"]["name"].as_str().unwrap_or_default();
    let issuer_kind = spec["issuerRef"]["kind"].as_str().unwrap_or("Issuer");
    let issuer = match issuer_kind {
        "ClusterIssuer" => {
            Api::<DynamicObject>::all_with(
                client.clone(),
                &resource("ClusterIssuer", "clusterissuers"),
            )
            .get_opt(issuer_name)
            .await
        }
        _ => {
            Api::<DynamicObject>::namespaced_with(
                client.clone(),
                ns,
                &resource("Issuer", "issuers"),
            )
            .get_opt(issuer_name)
            .await
        }
    };
    let issuer_found = match issuer {
        Ok(found) => found.is_some(),
        Err(kube::Error::Api(s)) if s.code == 404 => false,
        Err(e) => return Err(e.into()),
    };
    if !issuer_found || secret_name.is_empty() {
        let message = if secret_name.is_empty() {
            "spec.secretName is empty".to_owned()
        } else {
            format!(
                "Referenced \"{issuer_kind}\" not found: {issuer_kind}.cert-manager.io \"{issuer_name}\" not found"
            )
        };
        set_ready(client, cert, "False", "Pending", &message).await?;
        return Ok(None);
    }
    let wanted: BTreeMap<String, String> = [
        (CERTIFICATE_NAME, name),
        (ISSUER_NAME, issuer_name),
        (ISSUER_KIND, issuer_kind),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let template: BTreeMap<String, String> =
        serde_json::from_value(spec["secretTemplate"]["annotations"].clone()).unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let live = secrets.get_opt(secret_name).await?;
    let has = |secret: &Secret, want: &BTreeMap<String, String>| {
        let annotations = secret.metadata.annotations.clone().unwrap_or_default();
        want.iter().all(|(k, v)| annotations.get(k) == Some(v))
    };
    let issued = match &live {
        Some(secret) if has(secret, &wanted) => {
            // Issued already: only the template's annotations are brought back, as
            // cert-manager does without a new certificate.
            if !has(secret, &template) {
                secrets
                    .patch(
                        secret_name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"metadata": {"annotations": template}})),
                    )
                    .await?;
            }
            None
        }
        _ => {
            let mut annotations = wanted;
            annotations.extend(template);
            let (cert_pem, key_pem) = self_signed(spec)?;
            let data = BTreeMap::from([
                (
                    "tls.crt".to_owned(),
                    ByteString(cert_pem.clone().into_bytes()),
                ),
                ("tls.key".to_owned(), ByteString(key_pem.into_bytes())),
                ("ca.crt".to_owned(), ByteString(cert_pem.into_bytes())),
            ]);
            match live {
                // Other annotations stay, as cert-manager's server-side apply keeps them.
                Some(_) => {
                    let patch = json!({"metadata": {"annotations": annotations},
                        "type": "kubernetes.io/tls", "data": data});
                    secrets
                        .patch(secret_name, &PatchParams::default(), &Patch::Merge(patch))
                        .await?;
                }
                None => {
                    let secret = Secret {
                        metadata: ObjectMeta {
                            name: Some(secret_name.to_owned()),
                            namespace: Some(ns.to_owned()),
                            annotations: Some(annotations),
                            ..Default::default()
                        },
                        type_: Some("kubernetes.io/tls".to_owned()),
                        data: Some(data),
                        ..Default::default()
                    };
                    secrets.create(&PostParams::default(), &secret).await?;
                }
            }
            Some(format!("{ns}/{secret_name}"))
        }
    };
    set_ready(
        client,
        cert,
        "True",
        "Ready",
        "Certificate is up to date and has not expired",
    )
    .await?;
    Ok(issued)
}

/// A self-signed certificate for the Certificate's `dnsNames` (and `commonName`), valid for
/// its `duration` in whole hours, else cert-manager's default of 90 days.
fn self_signed(spec: &Value) -> Result<(String, String), CertManagerError> {
    let err = |e: rcgen::Error| CertManagerError::Certificate(e.to_string());
    let names: Vec<String> = spec["dnsNames"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str().map(str::to_owned))
        .collect();
    let key = rcgen::KeyPair::generate().map_err(err)?;
    let mut params = rcgen::CertificateParams::new(names).map_err(err)?;
    if let Some(cn) = spec["commonName"].as_str() {
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
    }
    let hours = spec["duration"]
        .as_str()
        .and_then(|d| d.strip_suffix('h'))
        .and_then(|h| h.parse::<u64>().ok())
        .unwrap_or(90 * 24);
    let now = std::time::SystemTime::now();
    params.not_before = (now - Duration::from_secs(3600)).into();
    params.not_after = (now + Duration::from_secs(hours * 3600)).into();
    let cert = params.self_signed(&key).map_err(err)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Sets the Certificate's `Ready` condition through `/status`, when it changed.
async fn set_ready(
    client: &Client,
    cert: &DynamicObject,
    status: &str,
    reason: &str,
    message: &str,
) -> Result<(), CertManagerError> {
    let current = cert.data["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"));
    if current
        .is_some_and(|c| c["status"] == status && c["reason"] == reason && c["message"] == message)
    {
        return Ok(());
    }
    let (Some(ns), Some(name)) = (
        cert.metadata.namespace.as_deref(),
        cert.metadata.name.as_deref(),
    ) else {
        return Ok(());
    };
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let condition = json!({"type": "Ready", "status": status, "reason": reason,
        "message": message, "lastTransitionTime": now,
        "observedGeneration": cert.metadata.generation});
    Api::<DynamicObject>::namespaced_with(
        client.clone(),
        ns,
        &resource("Certificate", "certificates"),
    )
    .patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"conditions": [condition]}})),
    )
    .await?;
    Ok(())
}

/// Runs [`sync_once`] every `period` until the task is aborted; errors are retried.
pub fn spawn(client: Client, period: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let _ = sync_once(&client).await;
            tokio::time::sleep(period).await;
        }
    })
}
