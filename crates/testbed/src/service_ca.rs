//! A stand-in for OpenShift's service-ca operator: every Service annotated
//! `service.beta.openshift.io/serving-cert-secret-name` (or the older `service.alpha...` key)
//! gets that `kubernetes.io/tls` Secret in its namespace, holding `tls.crt` (the serving
//! certificate for `<service>.<namespace>.svc`, then the CA) and `tls.key`, signed by one
//! service CA, annotated with the originating Service as service-ca does.
//!
//! An existing Secret is left alone (service-ca regenerates only on expiry or when asked);
//! [`ServiceCa::rotate`] issues a new certificate on demand, as deleting the Secret makes
//! service-ca do, for tests of certificate reloading. Clients trust [`ServiceCa::ca_pem`]
//! (on a cluster: the `service-ca.crt` of an injected CA bundle). Emulator-side code: product
//! crates never depend on it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Secret, Service};
use kube::Client;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// The annotation that asks for a serving certificate.
pub const SERVING_CERT_ANNOTATION: &str = "service.beta.openshift.io/serving-cert-secret-name";
/// The pre-4.x spelling, still honoured by service-ca.
pub const SERVING_CERT_ANNOTATION_ALPHA: &str =
    "service.alpha.openshift.io/serving-cert-secret-name";
const ORIGINATING_NAME: &str = "service.beta.openshift.io/originating-service-name";
const ORIGINATING_UID: &str = "service.beta.openshift.io/originating-service-uid";

/// Why the stand-in could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum ServiceCaError {
    #[error("cannot make a certificate: {0}")]
    Certificate(String),
    #[error(transparent)]
    Kube(#[from] kube::Error),
}

fn cert_err(e: rcgen::Error) -> ServiceCaError {
    ServiceCaError::Certificate(e.to_string())
}

/// One service CA and what it signs.
pub struct ServiceCa {
    issuer: Issuer<'static, KeyPair>,
    ca_pem: String,
}

/// A serving certificate and its key, as PEM.
#[derive(Debug, Clone)]
pub struct ServingCert {
    /// The serving certificate followed by the CA certificate.
    pub cert_pem: String,
    pub key_pem: String,
}

impl ServiceCa {
    /// A new CA, named as service-ca names its signer.
    pub fn new() -> Result<Arc<Self>, ServiceCaError> {
        let key = KeyPair::generate().map_err(cert_err)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(cert_err)?;
        params.distinguished_name.push(
            DnType::CommonName,
            "openshift-service-serving-signer@kube-sim",
        );
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = params.self_signed(&key).map_err(cert_err)?;
        Ok(Arc::new(Self {
            issuer: Issuer::new(params, key),
            ca_pem: ca.pem(),
        }))
    }

    /// The CA certificate clients trust.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// A fresh certificate for `<service>.<namespace>.svc` (and `.svc.cluster.local`).
    pub fn issue(&self, service: &str, namespace: &str) -> Result<ServingCert, ServiceCaError> {
        let key = KeyPair::generate().map_err(cert_err)?;
        let mut params = CertificateParams::new(vec![
            format!("{service}.{namespace}.svc"),
            format!("{service}.{namespace}.svc.cluster.local"),
        ])
        .map_err(cert_err)?;
        params
            .distinguished_name
            .push(DnType::CommonName, format!("{service}.{namespace}.svc"));
        let cert = params.signed_by(&key, &self.issuer).map_err(cert_err)?;
        Ok(ServingCert {
            cert_pem: format!("{}{}", cert.pem(), self.ca_pem),
            key_pem: key.serialize_pem(),
        })
    }

    fn secret(&self, svc: &Service, namespace: &str, name: &str) -> Result<Secret, ServiceCaError> {
        let service = svc.metadata.name.clone().unwrap_or_default();
        let issued = self.issue(&service, namespace)?;
        Ok(Secret {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(namespace.to_owned()),
                annotations: Some(BTreeMap::from([
                    (ORIGINATING_NAME.to_owned(), service),
                    (
                        ORIGINATING_UID.to_owned(),
                        svc.metadata.uid.clone().unwrap_or_default(),
                    ),
                ])),
                ..Default::default()
            },
            type_: Some("kubernetes.io/tls".to_owned()),
            data: Some(BTreeMap::from([
                (
                    "tls.crt".to_owned(),
                    ByteString(issued.cert_pem.into_bytes()),
                ),
                (
                    "tls.key".to_owned(),
                    ByteString(issued.key_pem.into_bytes()),
                ),
            ])),
            ..Default::default()
        })
    }

    /// Creates the missing serving-cert Secrets of every annotated Service; returns how many.
    pub async fn sync_once(&self, client: &Client) -> Result<usize, ServiceCaError> {
        let services: Api<Service> = Api::all(client.clone());
        let mut created = 0;
        for svc in services.list(&ListParams::default()).await?.items {
            let Some((namespace, secret_name)) = wanted(&svc) else {
                continue;
            };
            let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
            if secrets.get_opt(&secret_name).await?.is_some() {
                continue;
            }
            let secret = self.secret(&svc, &namespace, &secret_name)?;
            match secrets.create(&PostParams::default(), &secret).await {
                Ok(_) => created += 1,
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(created)
    }

    /// Issues a new certificate for the Service `namespace/service` and replaces its Secret's
    /// data (a rotation). Returns the new certificate.
    pub async fn rotate(
        &self,
        client: &Client,
        namespace: &str,
        service: &str,
    ) -> Result<ServingCert, ServiceCaError> {
        let svc = Api::<Service>::namespaced(client.clone(), namespace)
            .get(service)
            .await?;
        let Some((_, secret_name)) = wanted(&svc) else {
            return Err(ServiceCaError::Certificate(format!(
                "Service {namespace}/{service} asks for no serving certificate"
            )));
        };
        let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
        let fresh = self.secret(&svc, namespace, &secret_name)?;
        let data = fresh.data.clone().unwrap_or_default();
        match secrets.get_opt(&secret_name).await? {
            None => {
                secrets.create(&PostParams::default(), &fresh).await?;
            }
            Some(mut live) => {
                live.data = fresh.data;
                live.type_ = fresh.type_;
                secrets
                    .replace(&secret_name, &PostParams::default(), &live)
                    .await?;
            }
        }
        let text = |k: &str| {
            data.get(k)
                .map(|b| String::from_utf8_lossy(&b.0).into_owned())
                .unwrap_or_default()
        };
        Ok(ServingCert {
            cert_pem: text("tls.crt"),
            key_pem: text("tls.key"),
        })
    }

    /// Runs [`ServiceCa::sync_once`] every `period` until the task is aborted; errors are
    /// retried.
    pub fn spawn(self: Arc<Self>, client: Client, period: Duration) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                let _ = self.sync_once(&client).await;
                tokio::time::sleep(period).await;
            }
        })
    }
}

/// `(namespace, secret name)` when the Service asks for a serving certificate.
fn wanted(svc: &Service) -> Option<(String, String)> {
    let annotations = svc.metadata.annotations.as_ref()?;
    let name = annotations
        .get(SERVING_CERT_ANNOTATION)
        .or_else(|| annotations.get(SERVING_CERT_ANNOTATION_ALPHA))
        .filter(|n| !n.is_empty())?;
    Some((svc.metadata.namespace.clone()?, name.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_certificates_name_the_service_and_chain_to_the_ca() {
        let ca = ServiceCa::new().expect("ca");
        let issued = ca.issue("m", "ns").expect("issued");
        assert_eq!(issued.cert_pem.matches("BEGIN CERTIFICATE").count(), 2);
        assert!(issued.cert_pem.ends_with(ca.ca_pem()));
        assert!(issued.key_pem.contains("PRIVATE KEY"));
    }

    #[test]
    fn only_annotated_services_want_a_secret() {
        let svc = |annotations: &[(&str, &str)]| Service {
            metadata: ObjectMeta {
                name: Some("m".into()),
                namespace: Some("ns".into()),
                annotations: Some(
                    annotations
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(wanted(&svc(&[])), None);
        assert_eq!(
            wanted(&svc(&[(SERVING_CERT_ANNOTATION, "m-cert")])),
            Some(("ns".into(), "m-cert".into()))
        );
        assert_eq!(
            wanted(&svc(&[(SERVING_CERT_ANNOTATION_ALPHA, "old")])),
            Some(("ns".into(), "old".into()))
        );
    }
}
