//! Serving certificates for the drivers' metrics endpoints where no service-ca operator fills
//! them (plain Kubernetes). On OpenShift a Service annotated
//! `service.beta.openshift.io/serving-cert-secret-name` gets that `kubernetes.io/tls` Secret
//! from service-ca, and the driver's kube-rbac-proxy sidecars mount it (not optionally: the
//! controller pod cannot start without it). Without service-ca the operator issues a
//! self-signed certificate for the Service's DNS names into that Secret itself, and issues a
//! new one when less than [`RENEW_BEFORE_DAYS`] of its [`VALIDITY_DAYS`] remain; the pods roll
//! through the Secret's hash annotation.
//!
//! A Secret of that name that the operator did not issue (no [`ISSUED_UNTIL_ANNOTATION`]: one an
//! administrator or someone else's cert-manager `Certificate` wrote) is never touched, so
//! bringing your own certificate is creating that Secret. While cert-manager's CRD is served the
//! operator hands its Secrets to cert-manager instead ([`crate::cert_manager`]); the Secrets
//! cert-manager fills through the operator's Certificates carry
//! [`ISSUED_BY_CERT_MANAGER`] in that annotation, so once cert-manager is
//! gone they are issued here again.
//!
//! Everything here but [`CsiServingCerts::step`] (in `csi::operator`) is pure: the clock is an
//! argument.

use std::collections::BTreeMap;

use jiff::{Timestamp, ToSpan, tz::TimeZone};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::desired::Desired;

/// The Service annotation service-ca answers, naming the Secret to fill.
pub const SERVING_CERT_ANNOTATION: &str = "service.beta.openshift.io/serving-cert-secret-name";
/// On a Secret the operator issued: the certificate's `notAfter` (RFC 3339), so renewal needs
/// no X.509 parsing and a Secret without it is recognisably someone else's.
pub const ISSUED_UNTIL_ANNOTATION: &str = "csi.openstack.org/self-signed-serving-cert-not-after";
/// The value the cert-manager Certificate's `secretTemplate` gives [`ISSUED_UNTIL_ANNOTATION`]:
/// the certificate is cert-manager's, so without cert-manager the operator must issue again.
/// (Here, below `cert_manager`, which writes it, because this module reads it.)
pub const ISSUED_BY_CERT_MANAGER: &str = "issued-by-cert-manager";
/// How long an issued certificate is valid.
pub const VALIDITY_DAYS: i64 = 365;
/// Renew when fewer days than this remain (a month of margin for a missed reconcile).
pub const RENEW_BEFORE_DAYS: i64 = 30;

/// One Secret a Service asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub namespace: String,
    pub service: String,
    pub secret: String,
}

/// The serving-certificate Secrets the Services among `objects` ask for.
pub fn requests(objects: &[Desired]) -> Vec<Request> {
    objects
        .iter()
        .filter(|d| d.resource.kind == "Service")
        .filter_map(|d| {
            let meta = &d.object.metadata;
            let secret = meta.annotations.as_ref()?.get(SERVING_CERT_ANNOTATION)?;
            Some(Request {
                namespace: meta.namespace.clone()?,
                service: meta.name.clone()?,
                secret: secret.clone(),
            })
        })
        .collect()
}

/// What to do about one requested Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Absent, or ours and due (or unreadable): issue a new certificate.
    Issue,
    /// Ours and valid.
    Keep,
    /// Someone else's (cert-manager, an administrator): leave it alone.
    Foreign,
}

/// Whether `existing` must be (re)issued at `now`.
pub fn decide(existing: Option<&Secret>, now: Timestamp) -> Decision {
    let Some(secret) = existing else {
        return Decision::Issue;
    };
    let Some(until) = secret
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ISSUED_UNTIL_ANNOTATION))
    else {
        return Decision::Foreign;
    };
    if until == ISSUED_BY_CERT_MANAGER {
        // cert-manager filled it through our Certificate, and cert-manager is gone (else this
        // is not called): nobody renews it, so issue our own.
        return Decision::Issue;
    }
    // In hours: a Timestamp has no calendar, so `days()` would be refused.
    let renew_from = now.checked_add((RENEW_BEFORE_DAYS * 24).hours());
    match (until.parse::<Timestamp>(), renew_from) {
        (Ok(until), Ok(renew_from)) if renew_from < until => Decision::Keep,
        // Due, or an annotation we cannot read on our own Secret: issue again.
        _ => Decision::Issue,
    }
}

/// Why no certificate could be issued.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot issue a self-signed serving certificate for Service {namespace}/{service}: {cause}"
)]
pub struct IssueError {
    namespace: String,
    service: String,
    cause: String,
}

/// A `kubernetes.io/tls` Secret with a new self-signed certificate for the Service's DNS names
/// (`<svc>`, `<svc>.<ns>`, `<svc>.<ns>.svc`, `<svc>.<ns>.svc.cluster.local`), valid from a day
/// before `now` (clock skew) for [`VALIDITY_DAYS`].
pub fn issue(request: &Request, now: Timestamp) -> Result<Secret, IssueError> {
    let err = |cause: String| IssueError {
        namespace: request.namespace.clone(),
        service: request.service.clone(),
        cause,
    };
    let (svc, ns) = (&request.service, &request.namespace);
    let names = vec![
        svc.clone(),
        format!("{svc}.{ns}"),
        format!("{svc}.{ns}.svc"),
        format!("{svc}.{ns}.svc.cluster.local"),
    ];
    let day = |t: Timestamp| {
        let d = t.to_zoned(TimeZone::UTC).date();
        rcgen::date_time_ymd(i32::from(d.year()), d.month() as u8, d.day() as u8)
    };
    let from = now
        .checked_sub(24.hours())
        .map_err(|e| err(e.to_string()))?;
    let until = now
        .checked_add((VALIDITY_DAYS * 24).hours())
        .map_err(|e| err(e.to_string()))?;
    let key = rcgen::KeyPair::generate().map_err(|e| err(e.to_string()))?;
    let mut params = rcgen::CertificateParams::new(names).map_err(|e| err(e.to_string()))?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("{svc}.{ns}.svc"));
    params.not_before = day(from);
    params.not_after = day(until);
    let cert = params.self_signed(&key).map_err(|e| err(e.to_string()))?;
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(request.secret.clone()),
            namespace: Some(request.namespace.clone()),
            annotations: Some(BTreeMap::from([(
                ISSUED_UNTIL_ANNOTATION.to_owned(),
                // The day the certificate's notAfter names, at midnight UTC.
                until
                    .to_zoned(TimeZone::UTC)
                    .date()
                    .to_zoned(TimeZone::UTC)
                    .map_err(|e| err(e.to_string()))?
                    .timestamp()
                    .to_string(),
            )])),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/tls".to_owned()),
        data: Some(BTreeMap::from([
            ("tls.crt".to_owned(), ByteString(cert.pem().into_bytes())),
            (
                "tls.key".to_owned(),
                ByteString(key.serialize_pem().into_bytes()),
            ),
        ])),
        ..Secret::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Request {
        Request {
            namespace: "ns".into(),
            service: "svc".into(),
            secret: "svc-cert".into(),
        }
    }

    fn now() -> Timestamp {
        "2026-01-10T12:00:00Z".parse().unwrap()
    }

    #[test]
    fn an_issued_certificate_is_kept_until_a_month_before_it_expires() {
        let s = issue(&request(), now()).expect("issued");
        assert_eq!(s.type_.as_deref(), Some("kubernetes.io/tls"));
        let data = s.data.as_ref().unwrap();
        assert!(String::from_utf8_lossy(&data["tls.crt"].0).starts_with("-----BEGIN CERTIFICATE"));
        assert!(String::from_utf8_lossy(&data["tls.key"].0).contains("PRIVATE KEY"));
        let until: Timestamp = s.metadata.annotations.as_ref().unwrap()[ISSUED_UNTIL_ANNOTATION]
            .parse()
            .unwrap();
        assert_eq!(until.to_string(), "2027-01-10T00:00:00Z");
        assert_eq!(decide(Some(&s), now()), Decision::Keep);
        let late = until.checked_sub((RENEW_BEFORE_DAYS * 24).hours()).unwrap();
        assert_eq!(decide(Some(&s), late), Decision::Issue);
        assert_eq!(decide(None, now()), Decision::Issue);
    }

    #[test]
    fn the_certificate_names_the_service() {
        use base64::Engine;
        let s = issue(&request(), now()).expect("issued");
        let pem = String::from_utf8(s.data.unwrap()["tls.crt"].0.clone()).unwrap();
        let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .expect("PEM body");
        // A SAN dNSName is stored as its plain ASCII bytes.
        for name in ["svc.ns.svc", "svc.ns.svc.cluster.local"] {
            assert!(
                der.windows(name.len()).any(|w| w == name.as_bytes()),
                "{name}"
            );
        }
    }

    #[test]
    fn a_secret_someone_else_wrote_is_left_alone() {
        let foreign = Secret {
            metadata: ObjectMeta {
                annotations: Some(BTreeMap::from([(
                    "cert-manager.io/certificate-name".to_owned(),
                    "svc".to_owned(),
                )])),
                ..ObjectMeta::default()
            },
            ..Secret::default()
        };
        assert_eq!(decide(Some(&foreign), now()), Decision::Foreign);
        let mut garbled = issue(&request(), now()).unwrap();
        garbled
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(ISSUED_UNTIL_ANNOTATION.into(), "not a time".into());
        assert_eq!(
            decide(Some(&garbled), now()),
            Decision::Issue,
            "ours, unreadable"
        );
    }
}
