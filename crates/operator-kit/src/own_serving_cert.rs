//! The operator's own metrics serving certificate where no service-ca fills its serving-cert
//! Secret (plain Kubernetes, `--metrics-serving-cert-secret`): a Prometheus can only verify
//! the endpoint against a CA it can read, and a certificate generated at each start has none.
//! So the operator keeps one self-signed certificate in that Secret of its own namespace (the
//! one its Deployment mounts, which service-ca fills on OpenShift), valid for the metrics
//! Service's DNS names, with `ca.crt` beside `tls.crt` (the same certificate: it is its own
//! CA), and serves that: a ServiceMonitor names `ca.crt` of that Secret and the Service's DNS
//! name. It is renewed as the drivers' ones are ([`crate::metrics_cert`]). A Secret of that
//! name the operator did not issue (an administrator's, or what a cert-manager `Certificate`
//! writes, whose `ca.crt` is the issuer's CA) is served as it is and never written.
//!
//! [`plan`] is pure; [`ensure`] reads and writes the Secret.

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, PostParams};

use crate::metrics_cert::{self, Decision, IssueError, Request};

/// The Secret's key a ServiceMonitor's `tlsConfig.ca` names.
pub const CA_KEY: &str = "ca.crt";

/// The certificate and key to serve (PEM).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pem {
    pub cert: Vec<u8>,
    pub key: Vec<u8>,
}

/// What to do with the Secret.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Serve what it holds.
    Use(Pem),
    /// Write this Secret (a new certificate) and serve it.
    Write(Box<Secret>, Pem),
}

/// Why the Secret cannot be served or written.
#[derive(Debug, thiserror::Error)]
pub enum OwnCertError {
    #[error(transparent)]
    Issue(#[from] IssueError),
    #[error(
        "Secret {namespace}/{name} was not issued by this operator and has no tls.crt and tls.key; give it both or delete it"
    )]
    Incomplete { namespace: String, name: String },
    #[error("Secret {namespace}/{name}: {source}")]
    Api {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
}

fn key(secret: &Secret, k: &str) -> Option<Vec<u8>> {
    secret.data.as_ref()?.get(k).map(|b| b.0.clone())
}

/// What to do about `existing` at `now`: issue when absent, ours and due, or ours without
/// `ca.crt`; otherwise serve it.
pub fn plan(
    request: &Request,
    existing: Option<&Secret>,
    now: jiff::Timestamp,
) -> Result<Plan, OwnCertError> {
    let decision = metrics_cert::decide(existing, now);
    let ours_without_ca =
        decision == Decision::Keep && existing.is_some_and(|s| key(s, CA_KEY).is_none());
    if let (Some(s), false) = (existing, decision == Decision::Issue || ours_without_ca) {
        return match (key(s, "tls.crt"), key(s, "tls.key")) {
            (Some(cert), Some(key)) => Ok(Plan::Use(Pem { cert, key })),
            _ => Err(OwnCertError::Incomplete {
                namespace: request.namespace.clone(),
                name: request.secret.clone(),
            }),
        };
    }
    let mut secret = metrics_cert::issue(request, now)?;
    let data = secret.data.get_or_insert_with(Default::default);
    let cert = data.get("tls.crt").map(|b| b.0.clone()).unwrap_or_default();
    let key = data.get("tls.key").map(|b| b.0.clone()).unwrap_or_default();
    data.insert(CA_KEY.to_owned(), ByteString(cert.clone()));
    Ok(Plan::Write(Box::new(secret), Pem { cert, key }))
}

/// Reads the Secret, writes a new certificate into it when [`plan`] says so, and returns what
/// to serve. A concurrent writer (another replica) makes the write conflict: then the Secret
/// is read again.
pub async fn ensure(client: &Client, request: &Request) -> Result<Pem, OwnCertError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), &request.namespace);
    let api_err = |source| OwnCertError::Api {
        namespace: request.namespace.clone(),
        name: request.secret.clone(),
        source,
    };
    let mut attempts = 0;
    loop {
        attempts += 1;
        let existing = api.get_opt(&request.secret).await.map_err(api_err)?;
        let (mut secret, pem) = match plan(request, existing.as_ref(), jiff::Timestamp::now())? {
            Plan::Use(pem) => return Ok(pem),
            Plan::Write(secret, pem) => (secret, pem),
        };
        let written = match existing {
            Some(old) => {
                secret.metadata.resource_version = old.metadata.resource_version;
                api.replace(&request.secret, &PostParams::default(), &secret)
                    .await
            }
            None => api.create(&PostParams::default(), &secret).await,
        };
        match written {
            Ok(_) => {
                tracing::info!(
                    secret = %request.secret,
                    namespace = %request.namespace,
                    "issued the operator's self-signed metrics serving certificate"
                );
                return Ok(pem);
            }
            Err(kube::Error::Api(e)) if e.code == 409 && attempts < 3 => continue,
            Err(e) => return Err(api_err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use std::collections::BTreeMap;

    fn request() -> Request {
        Request {
            namespace: "ops".into(),
            service: "op-metrics".into(),
            secret: "op-serving-cert".into(),
        }
    }

    fn now() -> jiff::Timestamp {
        "2026-01-10T12:00:00Z".parse().unwrap()
    }

    #[test]
    fn a_missing_secret_is_issued_with_its_certificate_as_ca() {
        let Plan::Write(secret, pem) = plan(&request(), None, now()).expect("plan") else {
            panic!("expected a write");
        };
        assert_eq!(secret.metadata.name.as_deref(), Some("op-serving-cert"));
        assert_eq!(secret.metadata.namespace.as_deref(), Some("ops"));
        assert_eq!(key(&secret, CA_KEY), Some(pem.cert.clone()));
        assert_eq!(key(&secret, "tls.key"), Some(pem.key));
        // Kept as it is the next time: stable, so a ServiceMonitor's CA stays valid.
        let again = plan(&request(), Some(&secret), now()).expect("plan");
        assert_eq!(
            again,
            Plan::Use(Pem {
                cert: pem.cert,
                key: key(&secret, "tls.key").unwrap()
            })
        );
    }

    #[test]
    fn ours_without_a_ca_or_due_is_issued_again() {
        let Plan::Write(secret, _) = plan(&request(), None, now()).expect("plan") else {
            panic!("expected a write");
        };
        let mut without_ca = (*secret).clone();
        without_ca.data.as_mut().unwrap().remove(CA_KEY);
        assert!(matches!(
            plan(&request(), Some(&without_ca), now()),
            Ok(Plan::Write(..))
        ));
        let late: jiff::Timestamp = "2026-12-20T00:00:00Z".parse().unwrap();
        assert!(matches!(
            plan(&request(), Some(&secret), late),
            Ok(Plan::Write(..))
        ));
    }

    #[test]
    fn someone_elses_secret_is_served_as_it_is_or_refused_when_incomplete() {
        let foreign = Secret {
            metadata: ObjectMeta {
                name: Some("op-serving-cert".into()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([
                ("tls.crt".to_owned(), ByteString(b"C".to_vec())),
                ("tls.key".to_owned(), ByteString(b"K".to_vec())),
            ])),
            ..Secret::default()
        };
        assert_eq!(
            plan(&request(), Some(&foreign), now()).expect("plan"),
            Plan::Use(Pem {
                cert: b"C".to_vec(),
                key: b"K".to_vec()
            })
        );
        let mut incomplete = foreign.clone();
        incomplete.data.as_mut().unwrap().remove("tls.key");
        let err = plan(&request(), Some(&incomplete), now()).expect_err("incomplete");
        assert!(
            err.to_string().contains("has no tls.crt and tls.key"),
            "{err}"
        );
    }
}
