//! cert-manager as the source of the drivers' metrics serving certificates on plain Kubernetes
//! ([`crate::metrics_cert`] is the fallback). When the cluster serves `cert-manager.io/v1`
//! Certificates (the CRD [`CERTIFICATE_CRD`] exists), the operator applies, for each Secret a
//! Service asks for, a `Certificate` of the same name whose `secretName` is that Secret, and
//! never writes the Secret itself: cert-manager issues and rotates it. The issuer is the one
//! named by `--cert-manager-issuer KIND/NAME` ([`IssuerRef`]), or else a namespaced self-signed
//! `Issuer` the operator applies beside the Certificate ([`selfsigned_issuer_name`]).
//!
//! Duration and renewal are left to cert-manager's defaults (90 days, renewed when a third
//! remains): an administrator's issuer may cap durations or enforce a policy
//! (approver-policy, ACME, Vault) that a fixed 365-day request would break, and renewal is
//! cert-manager's job here, not ours. The driver pods roll on the Secret's hash either way.
//!
//! Hand-over between the two sources, without either fighting the other:
//! - A Secret the operator issued itself carries [`ISSUED_UNTIL_ANNOTATION`] and none of
//!   cert-manager's annotations, so cert-manager re-issues into it at once (it re-issues
//!   whenever its annotations are missing). The Certificate's `secretTemplate` sets our
//!   annotation to [`ISSUED_BY_CERT_MANAGER`], which is not a time: were cert-manager's CRD
//!   removed later, [`crate::metrics_cert::decide`] finds the Secret due and the operator issues
//!   its own again, instead of keeping a certificate nobody renews until a date that was never
//!   its expiry. While the CRD is served the operator never calls `decide` at all.
//! - A Secret that neither the operator nor its Certificate wrote (an administrator's, or one
//!   another `Certificate` fills) is [`Ownership::Foreign`]: no Certificate is applied for it.
//!
//! The Certificate and Issuer watches are registered only where the operator can use them
//! ([`register`], [`on_plain_kubernetes`]): on OpenShift its Roles grant nothing in
//! `cert-manager.io`, and a refused watch would be retried forever.
//!
//! Everything here but [`on_plain_kubernetes`] is pure.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Secret;
use kube::api::DynamicObject;
use serde_json::json;

use crate::cache::{CacheBuilder, Lookup};
use crate::desired::{self, BuildError, Desired};
use crate::kinds::known as ar;
pub use crate::metrics_cert::ISSUED_BY_CERT_MANAGER;
use crate::metrics_cert::{ISSUED_UNTIL_ANNOTATION, Request};

/// The CRD whose presence switches the operator to cert-manager.
pub const CERTIFICATE_CRD: &str = "certificates.cert-manager.io";
/// The API version of Certificates and Issuers.
pub const API_VERSION: &str = "cert-manager.io/v1";
/// On a Secret cert-manager wrote: the Certificate that owns it.
pub const CERTIFICATE_NAME_ANNOTATION: &str = "cert-manager.io/certificate-name";
/// How long a Certificate may stay not Ready before the step reports it.
pub const NOT_READY_GRACE: Duration = Duration::from_secs(300);

/// The kind of issuer a Certificate names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IssuerKind {
    /// A namespaced `Issuer`, in the Certificate's namespace.
    Issuer,
    /// A cluster-scoped `ClusterIssuer`.
    ClusterIssuer,
}

impl IssuerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Issuer => "Issuer",
            Self::ClusterIssuer => "ClusterIssuer",
        }
    }
}

/// The issuer of the Certificates: `--cert-manager-issuer KIND/NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuerRef {
    pub kind: IssuerKind,
    pub name: String,
}

impl std::fmt::Display for IssuerRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.kind.as_str(), self.name)
    }
}

impl FromStr for IssuerRef {
    type Err = String;

    /// `Issuer/NAME` or `ClusterIssuer/NAME`; the message of a refusal says what is expected.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let expected =
            "expected KIND/NAME with KIND Issuer or ClusterIssuer, e.g. ClusterIssuer/my-ca";
        let Some((kind, name)) = s.split_once('/') else {
            return Err(format!("{s:?}: {expected}"));
        };
        let kind = match kind {
            "Issuer" => IssuerKind::Issuer,
            "ClusterIssuer" => IssuerKind::ClusterIssuer,
            other => return Err(format!("{s:?}: unknown issuer kind {other:?}; {expected}")),
        };
        if !is_dns_subdomain(name) {
            return Err(format!(
                "{s:?}: {name:?} is not a valid object name (lowercase letters, digits, '-' and \
                 '.', at most 253 characters); {expected}"
            ));
        }
        Ok(Self {
            kind,
            name: name.to_owned(),
        })
    }
}

/// A Kubernetes object name (RFC 1123 subdomain), as the API server would accept it.
fn is_dns_subdomain(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// How an operator uses cert-manager: on plain Kubernetes only, with the administrator's
/// issuer or its own self-signed one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CertManager {
    /// `--cert-manager-issuer`; `None`: a self-signed `Issuer` the operator applies.
    pub issuer: Option<IssuerRef>,
}

/// The self-signed Issuer an operator applies in a namespace when no issuer is named.
pub fn selfsigned_issuer_name(operator: &str) -> String {
    format!("{operator}-selfsigned")
}

impl CertManager {
    /// The issuer the Certificates of `operator` point at.
    pub fn issuer_for(&self, operator: &str) -> IssuerRef {
        self.issuer.clone().unwrap_or_else(|| IssuerRef {
            kind: IssuerKind::Issuer,
            name: selfsigned_issuer_name(operator),
        })
    }

    /// Whether the operator applies its own self-signed Issuer.
    pub fn owns_issuer(&self) -> bool {
        self.issuer.is_none()
    }
}

/// The operator's self-signed `Issuer` in `namespace`.
pub fn issuer(namespace: &str, name: &str) -> Result<Desired, BuildError> {
    desired::from_value(
        "cert-manager self-signed Issuer",
        Some(CERTIFICATE_CRD),
        json!({
            "apiVersion": API_VERSION,
            "kind": "Issuer",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selfSigned": {}},
        }),
    )
}

/// The DNS names a Service is reached by, which its certificate must name.
pub fn dns_names(request: &Request) -> Vec<String> {
    let (svc, ns) = (&request.service, &request.namespace);
    vec![
        format!("{svc}.{ns}.svc"),
        format!("{svc}.{ns}.svc.cluster.local"),
    ]
}

/// The `Certificate` that fills `request`'s Secret, issued by `issuer`.
pub fn certificate(request: &Request, issuer: &IssuerRef) -> Result<Desired, BuildError> {
    desired::from_value(
        "cert-manager Certificate for the metrics serving certificate",
        Some(CERTIFICATE_CRD),
        json!({
            "apiVersion": API_VERSION,
            "kind": "Certificate",
            "metadata": {"name": request.secret, "namespace": request.namespace},
            "spec": {
                "secretName": request.secret,
                "commonName": format!("{}.{}.svc", request.service, request.namespace),
                "dnsNames": dns_names(request),
                "issuerRef": {
                    "group": "cert-manager.io",
                    "kind": issuer.kind.as_str(),
                    "name": issuer.name,
                },
                // A new key at each renewal, not only a new certificate.
                "privateKey": {"rotationPolicy": "Always"},
                // See the module doc: marks the Secret's certificate as not the operator's.
                "secretTemplate": {"annotations": {ISSUED_UNTIL_ANNOTATION: ISSUED_BY_CERT_MANAGER}},
            },
        }),
    )
}

/// Whose the requested Secret is, when cert-manager is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    /// Absent, issued by the operator, or filled through the operator's Certificate: apply the
    /// Certificate.
    Ours,
    /// Written by someone else (an administrator, another Certificate, named here when known):
    /// leave it, and apply no Certificate.
    Foreign(Option<String>),
}

/// Whether the operator's Certificate may manage `existing`.
pub fn ownership(request: &Request, existing: Option<&Secret>) -> Ownership {
    let Some(secret) = existing else {
        return Ownership::Ours;
    };
    let empty = BTreeMap::new();
    let annotations = secret.metadata.annotations.as_ref().unwrap_or(&empty);
    match annotations.get(CERTIFICATE_NAME_ANNOTATION) {
        Some(name) if *name == request.secret => Ownership::Ours,
        Some(other) => Ownership::Foreign(Some(other.clone())),
        // Ours from the self-signed days (or marked by our Certificate's template).
        None if annotations.contains_key(ISSUED_UNTIL_ANNOTATION) => Ownership::Ours,
        None => Ownership::Foreign(None),
    }
}

/// Where a Certificate stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    Ready,
    /// Not Ready yet; look again after this long.
    Pending(Duration),
    /// Not Ready for longer than [`NOT_READY_GRACE`]: what cert-manager says.
    Stuck(String),
}

/// The Ready condition of a cached Certificate at `now`. The time not Ready counts from the
/// later of its creation and the Ready condition's last transition.
pub fn readiness(certificate: &DynamicObject, now: Timestamp) -> Readiness {
    let ready = certificate.data["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"));
    if ready.is_some_and(|c| c["status"] == "True") {
        return Readiness::Ready;
    }
    let since = [
        certificate
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
        ready.and_then(|c| c["lastTransitionTime"].as_str().map(str::to_owned)),
    ]
    .into_iter()
    .flatten()
    .filter_map(|t| t.parse::<Timestamp>().ok())
    .max()
    .unwrap_or(now);
    let waited = now.duration_since(since).unsigned_abs();
    if waited < NOT_READY_GRACE {
        return Readiness::Pending(NOT_READY_GRACE - waited);
    }
    let text = |key: &str| ready.and_then(|c| c[key].as_str()).unwrap_or_default();
    Readiness::Stuck(match ready {
        Some(_) => format!(
            "Ready={} ({}: {})",
            text("status"),
            text("reason"),
            text("message")
        ),
        None => "no Ready condition: is cert-manager's controller running?".to_owned(),
    })
}

/// The message of a Certificate stuck not Ready: what is wrong and where to look.
pub fn stuck_message(request: &Request, issuer: &IssuerRef, minutes: u64, what: &str) -> String {
    format!(
        "cert-manager has not issued Certificate {ns}/{name} (for the metrics serving \
         certificate Secret {name}) within {minutes} minutes: {what}; check that cert-manager \
         runs and that {issuer} exists and is Ready (kubectl -n {ns} describe certificate {name})",
        ns = request.namespace,
        name = request.secret,
    )
}

/// Whether the Certificate CRD is in the cache (so cert-manager's API is served).
pub fn served(lookup: &Lookup) -> bool {
    matches!(lookup, Lookup::Found(_))
}

/// Watches what the cert-manager path reads: the Certificate CRD (by name, so its creation or
/// removal reaches the loop at once), and Certificates and Issuers in `namespaces`. A watch of
/// a kind whose CRD is missing waits on the CRD and costs nothing meanwhile.
pub fn register<'a>(
    mut builder: CacheBuilder,
    namespaces: impl IntoIterator<Item = &'a str>,
) -> CacheBuilder {
    builder = builder.cluster_object(
        &ar("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        CERTIFICATE_CRD,
    );
    for ns in namespaces {
        builder = builder
            .in_namespace(&ar(API_VERSION, "Certificate"), ns)
            .in_namespace(&ar(API_VERSION, "Issuer"), ns);
    }
    builder
}

/// Whether the operator runs on plain Kubernetes, asked once at start: `Infrastructure/cluster`
/// is absent (its kind not served, or no such object). Only then are cert-manager's kinds
/// watched (see the module doc). An answer that says nothing (API unreachable after a few
/// tries, RBAC refusing the read) counts as OpenShift, which only keeps the self-signed
/// fallback; the reason is logged.
pub async fn on_plain_kubernetes(client: &kube::Client) -> bool {
    let api: kube::Api<DynamicObject> = kube::Api::all_with(
        client.clone(),
        &ar("config.openshift.io/v1", "Infrastructure"),
    );
    let mut delay = Duration::from_millis(500);
    for attempt in 1..=5 {
        match api.get_opt("cluster").await {
            Ok(found) => return found.is_none(),
            Err(e) if crate::kinds::is_kind_not_served(&e) => return true,
            Err(e) if attempt == 5 || matches!(&e, kube::Error::Api(s) if s.code == 403) => {
                tracing::warn!(error = %e,
                    "cannot tell whether this is OpenShift (Infrastructure/cluster unreadable); \
                     not using cert-manager for the metrics serving certificates until restarted");
                return false;
            }
            Err(e) => {
                tracing::debug!(error = %e, "reading Infrastructure/cluster; retrying");
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
        }
    }
    false
}

/// The message of a failed Certificate or Issuer write, with what to do when RBAC refused it.
pub fn apply_hint(error: &str) -> String {
    if error.contains("403") || error.to_lowercase().contains("forbidden") {
        format!(
            "{error}; the operator's Role needs get/list/watch/create/update/patch/delete on \
             certificates and issuers in group cert-manager.io in this namespace (re-apply manifests/kubernetes/, which grants it)"
        )
    } else {
        error.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn request() -> Request {
        Request {
            namespace: "ns".into(),
            service: "svc".into(),
            secret: "svc-cert".into(),
        }
    }

    #[test]
    fn issuer_flags_parse_and_malformed_ones_say_what_is_expected() {
        assert_eq!(
            "ClusterIssuer/my-ca".parse::<IssuerRef>(),
            Ok(IssuerRef {
                kind: IssuerKind::ClusterIssuer,
                name: "my-ca".into()
            })
        );
        assert_eq!(
            "Issuer/ca.example"
                .parse::<IssuerRef>()
                .map(|i| i.to_string()),
            Ok("Issuer/ca.example".to_owned())
        );
        for (bad, says) in [
            ("Foo/x", "unknown issuer kind \"Foo\""),
            ("ClusterIssuer/", "not a valid object name"),
            ("x", "expected KIND/NAME"),
            ("", "expected KIND/NAME"),
            ("Issuer/My_CA", "not a valid object name"),
            ("Issuer/a/b", "not a valid object name"),
            ("issuer/x", "unknown issuer kind"),
        ] {
            let err = bad.parse::<IssuerRef>().expect_err(bad);
            assert!(err.contains(says), "{bad:?}: {err}");
            assert!(err.contains("ClusterIssuer/my-ca"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn the_certificate_names_the_secret_the_service_and_the_issuer() {
        let issuer = CertManager::default().issuer_for("op");
        let d = certificate(&request(), &issuer).expect("builds");
        assert_eq!(d.resource.plural, "certificates");
        assert_eq!(d.requires_crd, Some(CERTIFICATE_CRD));
        assert_eq!(d.object.metadata.name.as_deref(), Some("svc-cert"));
        assert_eq!(d.object.metadata.namespace.as_deref(), Some("ns"));
        let spec = &d.object.data["spec"];
        assert_eq!(spec["secretName"], "svc-cert");
        assert_eq!(
            spec["dnsNames"],
            json!(["svc.ns.svc", "svc.ns.svc.cluster.local"])
        );
        assert_eq!(
            spec["issuerRef"],
            json!({"group": "cert-manager.io", "kind": "Issuer", "name": "op-selfsigned"})
        );
        assert_eq!(spec["privateKey"]["rotationPolicy"], "Always");
        // Left to cert-manager (see the module doc).
        assert!(spec.get("duration").is_none() && spec.get("renewBefore").is_none());
        assert_eq!(
            spec["secretTemplate"]["annotations"][ISSUED_UNTIL_ANNOTATION],
            ISSUED_BY_CERT_MANAGER
        );

        let named = CertManager {
            issuer: Some("ClusterIssuer/my-ca".parse().unwrap()),
        };
        assert!(!named.owns_issuer());
        let d = certificate(&request(), &named.issuer_for("op")).unwrap();
        assert_eq!(
            d.object.data["spec"]["issuerRef"],
            json!({"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "my-ca"})
        );
    }

    #[test]
    fn the_own_issuer_is_namespaced_and_self_signed() {
        assert!(CertManager::default().owns_issuer());
        let d = issuer("ns", &selfsigned_issuer_name("op")).expect("builds");
        assert_eq!(d.resource.plural, "issuers");
        assert_eq!(d.object.metadata.name.as_deref(), Some("op-selfsigned"));
        assert_eq!(d.object.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(d.object.data["spec"], json!({"selfSigned": {}}));
    }

    fn secret(annotations: &[(&str, &str)]) -> Secret {
        Secret {
            metadata: ObjectMeta {
                annotations: Some(
                    annotations
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            ..Secret::default()
        }
    }

    #[test]
    fn only_secrets_of_the_operator_or_its_certificate_are_handed_to_cert_manager() {
        let r = request();
        assert_eq!(ownership(&r, None), Ownership::Ours);
        let self_signed = crate::metrics_cert::issue(&r, Timestamp::now()).unwrap();
        assert_eq!(ownership(&r, Some(&self_signed)), Ownership::Ours);
        assert_eq!(
            ownership(
                &r,
                Some(&secret(&[(CERTIFICATE_NAME_ANNOTATION, "svc-cert")]))
            ),
            Ownership::Ours
        );
        assert_eq!(
            ownership(&r, Some(&secret(&[(CERTIFICATE_NAME_ANNOTATION, "mine")]))),
            Ownership::Foreign(Some("mine".into()))
        );
        assert_eq!(ownership(&r, Some(&secret(&[]))), Ownership::Foreign(None));
    }

    #[test]
    fn a_secret_cert_manager_filled_is_issued_again_once_cert_manager_is_gone() {
        use crate::metrics_cert::{Decision, decide};
        // What cert-manager leaves: its annotations, and ours as the template set it.
        let filled = secret(&[
            (CERTIFICATE_NAME_ANNOTATION, "svc-cert"),
            (ISSUED_UNTIL_ANNOTATION, ISSUED_BY_CERT_MANAGER),
        ]);
        assert_eq!(decide(Some(&filled), Timestamp::now()), Decision::Issue);
    }

    fn cert(created: &str, ready: Option<(&str, &str)>) -> DynamicObject {
        let mut v = json!({"apiVersion": API_VERSION, "kind": "Certificate",
            "metadata": {"name": "svc-cert", "namespace": "ns", "creationTimestamp": created}});
        if let Some((status, since)) = ready {
            v["status"] = json!({"conditions": [{"type": "Ready", "status": status,
                "reason": "Pending", "message": "issuer not found", "lastTransitionTime": since}]});
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_certificate_not_ready_for_long_is_reported() {
        let now: Timestamp = "2026-01-10T12:00:00Z".parse().unwrap();
        assert_eq!(
            readiness(
                &cert(
                    "2026-01-10T11:00:00Z",
                    Some(("True", "2026-01-10T11:00:01Z"))
                ),
                now
            ),
            Readiness::Ready
        );
        assert_eq!(
            readiness(&cert("2026-01-10T11:59:00Z", None), now),
            Readiness::Pending(Duration::from_secs(240))
        );
        // A recent transition restarts the count even on an old Certificate.
        assert_eq!(
            readiness(
                &cert(
                    "2026-01-01T00:00:00Z",
                    Some(("False", "2026-01-10T11:58:00Z"))
                ),
                now
            ),
            Readiness::Pending(Duration::from_secs(180))
        );
        match readiness(
            &cert(
                "2026-01-01T00:00:00Z",
                Some(("False", "2026-01-10T11:00:00Z")),
            ),
            now,
        ) {
            Readiness::Stuck(m) => assert!(m.contains("issuer not found"), "{m}"),
            other => panic!("{other:?}"),
        }
        match readiness(&cert("2026-01-10T11:00:00Z", None), now) {
            Readiness::Stuck(m) => assert!(m.contains("controller running"), "{m}"),
            other => panic!("{other:?}"),
        }
        let m = stuck_message(&request(), &"ClusterIssuer/my-ca".parse().unwrap(), 5, "x");
        assert!(m.contains("ClusterIssuer/my-ca") && m.contains("describe certificate svc-cert"));
    }
}
