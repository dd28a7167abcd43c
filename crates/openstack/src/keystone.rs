//! Keystone v3 in pure functions: the `POST /v3/auth/tokens` body, the token answer, and the
//! catalog with endpoint selection by service type, interface and region.
//!
//! No I/O here. The request body is the only value built from secrets; it is sent and dropped,
//! never logged.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::clouds::{AppCredentialRef, AuthMethod, DomainRef, Interface, ProjectRef, UserRef};
use crate::error::Error;

/// The services we call, with the catalog types that name them (current name first is not
/// required: every listed type is accepted, in this order of preference).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Service {
    Compute,
    Volume,
    SharedFileSystem,
}

impl Service {
    pub fn catalog_types(self) -> &'static [&'static str] {
        match self {
            Service::Compute => &["compute"],
            Service::Volume => &["block-storage", "volumev3", "volumev2", "volume"],
            Service::SharedFileSystem => &["sharev2", "shared-file-system"],
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Service::Compute => "Nova (compute)",
            Service::Volume => "Cinder (block-storage / volumev3)",
            Service::SharedFileSystem => "Manila (sharev2)",
        }
    }
}

/// The `/auth/tokens` URL for an `auth_url` with or without its `/v3` suffix.
pub fn tokens_url(auth_url: &str) -> String {
    v3_url(auth_url, "auth/tokens")
}

/// The `/auth/catalog` URL (the catalog of the token presented, as it is now).
pub fn catalog_url(auth_url: &str) -> String {
    v3_url(auth_url, "auth/catalog")
}

fn v3_url(auth_url: &str, path: &str) -> String {
    let base = auth_url.trim_end_matches('/');
    if base.ends_with("/v3") {
        format!("{base}/{path}")
    } else {
        format!("{base}/v3/{path}")
    }
}

fn domain_json(d: &DomainRef) -> Value {
    match d {
        DomainRef::Id(id) => json!({ "id": id }),
        DomainRef::Name(name) => json!({ "name": name }),
    }
}

fn user_json(u: &UserRef) -> Value {
    match u {
        UserRef::Id(id) => json!({ "id": id }),
        UserRef::Name { name, domain } => json!({ "name": name, "domain": domain_json(domain) }),
    }
}

/// The body of `POST /v3/auth/tokens`. Contains the secret: send it, never log it.
pub fn auth_request_body(auth: &AuthMethod) -> Value {
    match auth {
        AuthMethod::Password {
            user,
            password,
            project,
        } => {
            let mut user = user_json(user);
            if let Some(obj) = user.as_object_mut() {
                obj.insert("password".into(), Value::String(password.expose().into()));
            }
            let project = match project {
                ProjectRef::Id(id) => json!({ "id": id }),
                ProjectRef::Name { name, domain } => {
                    json!({ "name": name, "domain": domain_json(domain) })
                }
            };
            json!({ "auth": {
                "identity": { "methods": ["password"], "password": { "user": user } },
                "scope": { "project": project },
            }})
        }
        AuthMethod::ApplicationCredential { credential, secret } => {
            let cred = match credential {
                AppCredentialRef::Id(id) => json!({ "id": id, "secret": secret.expose() }),
                AppCredentialRef::Name { name, user } => {
                    json!({ "name": name, "user": user_json(user), "secret": secret.expose() })
                }
            };
            json!({ "auth": { "identity": {
                "methods": ["application_credential"],
                "application_credential": cred,
            }}})
        }
    }
}

/// One catalog entry.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct CatalogService {
    #[serde(rename = "type")]
    pub service_type: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub endpoints: Vec<CatalogEndpoint>,
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct CatalogEndpoint {
    pub interface: String,
    #[serde(default)]
    pub region: Option<String>,
    #[serde(default)]
    pub region_id: Option<String>,
    pub url: String,
}

impl CatalogEndpoint {
    fn region_name(&self) -> &str {
        self.region_id
            .as_deref()
            .or(self.region.as_deref())
            .unwrap_or("")
    }

    fn in_region(&self, region: &str) -> bool {
        self.region_id.as_deref() == Some(region) || self.region.as_deref() == Some(region)
    }
}

/// What the token answer tells us.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenInfo {
    pub expires_at: jiff::Timestamp,
    pub issued_at: Option<jiff::Timestamp>,
    pub catalog: Vec<CatalogService>,
}

#[derive(Deserialize)]
struct TokenBody {
    token: RawToken,
}

#[derive(Deserialize)]
struct RawToken {
    expires_at: String,
    #[serde(default)]
    issued_at: Option<String>,
    #[serde(default)]
    catalog: Option<Vec<CatalogService>>,
}

/// Parses the body of a successful `POST /v3/auth/tokens`.
pub fn parse_token_body(body: &[u8]) -> Result<TokenInfo, String> {
    let raw: TokenBody = serde_json::from_slice(body)
        .map_err(|e| format!("the token body is not a Keystone v3 token: {e}"))?;
    let expires_at: jiff::Timestamp = raw
        .token
        .expires_at
        .parse()
        .map_err(|e| format!("token.expires_at is not a timestamp: {e}"))?;
    let issued_at = raw.token.issued_at.and_then(|s| s.parse().ok());
    let catalog = raw.token.catalog.ok_or_else(|| {
        "the token has no catalog (an unscoped token?): the credentials must be scoped to a \
         project"
            .to_string()
    })?;
    Ok(TokenInfo {
        expires_at,
        issued_at,
        catalog,
    })
}

#[derive(Deserialize)]
struct CatalogBody {
    catalog: Vec<CatalogService>,
}

/// Parses the body of a successful `GET /v3/auth/catalog`: `{"catalog": [...]}`, the same
/// entries as a token's catalog.
pub fn parse_catalog_body(body: &[u8]) -> Result<Vec<CatalogService>, String> {
    serde_json::from_slice::<CatalogBody>(body)
        .map(|b| b.catalog)
        .map_err(|e| format!("the answer is not a Keystone v3 catalog: {e}"))
}

/// Picks the endpoint URL for `service` on `interface`, in `region` if one is configured.
pub fn select_endpoint(
    catalog: &[CatalogService],
    service: Service,
    interface: Interface,
    region: Option<&str>,
) -> Result<String, Error> {
    let types = service.catalog_types();
    let Some(entry) = types
        .iter()
        .find_map(|t| catalog.iter().find(|s| s.service_type == *t))
    else {
        let mut present: Vec<&str> = catalog.iter().map(|s| s.service_type.as_str()).collect();
        present.sort_unstable();
        present.dedup();
        return Err(Error::EndpointNotFound(format!(
            "the Keystone catalog has no {} service (looked for type {}); the catalog has: {}",
            service.label(),
            types.join(" or "),
            if present.is_empty() {
                "nothing".to_string()
            } else {
                present.join(", ")
            }
        )));
    };
    let matching: Vec<&CatalogEndpoint> = entry
        .endpoints
        .iter()
        .filter(|e| Interface::parse(&e.interface) == Some(interface))
        .filter(|e| region.is_none_or(|r| e.in_region(r)))
        .collect();
    let available = || {
        let mut v: Vec<String> = entry
            .endpoints
            .iter()
            .map(|e| format!("{} in region \"{}\"", e.interface, e.region_name()))
            .collect();
        v.sort();
        v.dedup();
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    match matching.as_slice() {
        [] => Err(Error::EndpointNotFound(format!(
            "the {} service (type {}) has no {} endpoint{}; it has: {}. Check region_name and \
             interface in clouds.yaml",
            service.label(),
            entry.service_type,
            interface,
            region
                .map(|r| format!(" in region \"{r}\""))
                .unwrap_or_default(),
            available()
        ))),
        [one] => Ok(one.url.clone()),
        [first, rest @ ..] => {
            if rest.iter().all(|e| e.region_name() == first.region_name()) {
                Ok(first.url.clone())
            } else {
                Err(Error::EndpointNotFound(format!(
                    "the {} service has {} endpoints in several regions ({}); set region_name \
                     in clouds.yaml",
                    service.label(),
                    interface,
                    available()
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    fn ep(interface: &str, region: &str, url: &str) -> CatalogEndpoint {
        CatalogEndpoint {
            interface: interface.into(),
            region: Some(region.into()),
            region_id: Some(region.into()),
            url: url.into(),
        }
    }

    fn catalog() -> Vec<CatalogService> {
        vec![
            CatalogService {
                service_type: "compute".into(),
                name: Some("nova".into()),
                endpoints: vec![
                    ep("public", "RegionOne", "https://pub/compute"),
                    ep("internal", "RegionOne", "https://int/compute"),
                    ep("public", "RegionTwo", "https://pub2/compute"),
                ],
            },
            CatalogService {
                service_type: "volumev3".into(),
                name: None,
                endpoints: vec![ep("public", "RegionOne", "https://pub/volume")],
            },
        ]
    }

    #[test]
    fn tokens_url_with_and_without_v3() {
        assert_eq!(
            tokens_url("https://k:5000/v3"),
            "https://k:5000/v3/auth/tokens"
        );
        assert_eq!(
            tokens_url("https://k:5000/v3/"),
            "https://k:5000/v3/auth/tokens"
        );
        assert_eq!(
            tokens_url("https://k:5000"),
            "https://k:5000/v3/auth/tokens"
        );
        assert_eq!(
            tokens_url("https://k/identity/"),
            "https://k/identity/v3/auth/tokens"
        );
    }

    #[test]
    fn catalog_url_and_body() {
        assert_eq!(
            catalog_url("https://k:5000/v3/"),
            "https://k:5000/v3/auth/catalog"
        );
        assert_eq!(
            catalog_url("https://k/identity"),
            "https://k/identity/v3/auth/catalog"
        );
        let c = parse_catalog_body(
            br#"{"catalog": [{"type": "sharev2", "endpoints": [
                {"interface": "public", "region": "R", "url": "u"}]}],
                "links": {"self": "https://k/v3/auth/catalog", "next": null}}"#,
        )
        .expect("parses");
        assert_eq!(c[0].service_type, "sharev2");
        for bad in ["{}", "[]", r#"{"catalog": {}}"#, "<html>", ""] {
            let e = parse_catalog_body(bad.as_bytes()).expect_err(bad);
            assert!(e.contains("not a Keystone v3 catalog"), "{e}");
        }
    }

    #[test]
    fn endpoint_by_interface_and_region() {
        let c = catalog();
        let got = select_endpoint(&c, Service::Compute, Interface::Internal, Some("RegionOne"));
        assert_eq!(got.as_deref(), Ok("https://int/compute"));
        let got = select_endpoint(&c, Service::Compute, Interface::Public, Some("RegionTwo"));
        assert_eq!(got.as_deref(), Ok("https://pub2/compute"));
        let got = select_endpoint(&c, Service::Volume, Interface::Public, None);
        assert_eq!(got.as_deref(), Ok("https://pub/volume"));
    }

    #[test]
    fn ambiguous_region_is_an_error() {
        let err = select_endpoint(&catalog(), Service::Compute, Interface::Public, None)
            .expect_err("two regions");
        assert!(err.to_string().contains("set region_name"), "{err}");
    }

    #[test]
    fn missing_service_names_what_is_missing() {
        let err = select_endpoint(
            &catalog(),
            Service::SharedFileSystem,
            Interface::Public,
            None,
        )
        .expect_err("no manila");
        let msg = err.to_string();
        assert!(msg.contains("Manila"), "{msg}");
        assert!(msg.contains("sharev2"), "{msg}");
        assert!(msg.contains("compute, volumev3"), "{msg}");
    }

    #[test]
    fn missing_interface_or_region_names_what_exists() {
        let err = select_endpoint(&catalog(), Service::Volume, Interface::Admin, None)
            .expect_err("no admin");
        let msg = err.to_string();
        assert!(msg.contains("no admin endpoint"), "{msg}");
        assert!(msg.contains("public in region \"RegionOne\""), "{msg}");
        let err = select_endpoint(&catalog(), Service::Volume, Interface::Public, Some("X"))
            .expect_err("no region X");
        assert!(err.to_string().contains("in region \"X\""), "{err}");
    }

    #[test]
    fn password_body_shape() {
        let body = auth_request_body(&AuthMethod::Password {
            user: UserRef::Name {
                name: "u".into(),
                domain: DomainRef::Name("Default".into()),
            },
            password: Secret::new("pw"),
            project: ProjectRef::Name {
                name: "p".into(),
                domain: DomainRef::Id("default".into()),
            },
        });
        assert_eq!(
            body,
            json!({"auth": {
                "identity": {"methods": ["password"], "password": {"user": {
                    "name": "u", "domain": {"name": "Default"}, "password": "pw"}}},
                "scope": {"project": {"name": "p", "domain": {"id": "default"}}}
            }})
        );
    }

    #[test]
    fn app_credential_body_has_no_scope() {
        let body = auth_request_body(&AuthMethod::ApplicationCredential {
            credential: AppCredentialRef::Name {
                name: "ac".into(),
                user: UserRef::Id("uid".into()),
            },
            secret: Secret::new("s"),
        });
        assert_eq!(
            body,
            json!({"auth": {"identity": {"methods": ["application_credential"],
                "application_credential": {"name": "ac", "user": {"id": "uid"}, "secret": "s"}}}})
        );
    }

    #[test]
    fn token_body_parsing() {
        let body = br#"{"token": {"expires_at": "2030-01-01T00:00:00.000000Z",
            "issued_at": "2029-12-31T23:00:00.000000Z",
            "catalog": [{"type": "compute", "endpoints": [
                {"interface": "public", "region": "R", "url": "u"}]}]}}"#;
        let t = parse_token_body(body).expect("parses");
        assert_eq!(t.catalog.len(), 1);
        assert!(t.issued_at.is_some());
        let err = parse_token_body(br#"{"token": {"expires_at": "2030-01-01T00:00:00Z"}}"#)
            .expect_err("no catalog");
        assert!(err.contains("no catalog"), "{err}");
        let err = parse_token_body(b"not json").expect_err("not json");
        assert!(err.contains("not a Keystone v3 token"), "{err}");
        let err = parse_token_body(br#"{"token": {"expires_at": "soon", "catalog": []}}"#)
            .expect_err("bad time");
        assert!(err.contains("expires_at"), "{err}");
    }
}
