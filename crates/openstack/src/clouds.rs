//! clouds.yaml: our own serde structs, and their validation into a [`CloudConfig`] that can only
//! describe something Keystone v3 accepts.
//!
//! Pure: no file or network I/O (the `cacert` path is reported, never read here). Messages name
//! the cloud and the key that is wrong and never quote a password, application-credential
//! secret or token.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

use crate::error::Error;
use crate::secret::Secret;

/// The cloud the OpenShift credentials Secret names (anchors §2.6).
pub const DEFAULT_CLOUD: &str = "openstack";

/// Which endpoint of a catalog entry to call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Interface {
    #[default]
    Public,
    Internal,
    Admin,
}

impl Interface {
    pub fn as_str(self) -> &'static str {
        match self {
            Interface::Public => "public",
            Interface::Internal => "internal",
            Interface::Admin => "admin",
        }
    }

    /// Accepts the Keystone v3 names and the v2-style `publicURL` spellings that
    /// os-client-config also accepts.
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "public" | "publicurl" => Some(Interface::Public),
            "internal" | "internalurl" => Some(Interface::Internal),
            "admin" | "adminurl" => Some(Interface::Admin),
            _ => None,
        }
    }
}

impl fmt::Display for Interface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A Keystone domain, by id or by name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DomainRef {
    Id(String),
    Name(String),
}

/// A Keystone user, by id or by name within a domain.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum UserRef {
    Id(String),
    Name { name: String, domain: DomainRef },
}

/// The project the token is scoped to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ProjectRef {
    Id(String),
    Name { name: String, domain: DomainRef },
}

/// An application credential, by id, or by name for a user.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AppCredentialRef {
    Id(String),
    Name { name: String, user: UserRef },
}

/// How to authenticate. `Debug` shows who, never the secret (see [`Secret`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AuthMethod {
    Password {
        user: UserRef,
        password: Secret,
        project: ProjectRef,
    },
    /// Application credentials carry their own project; Keystone refuses an extra scope.
    ApplicationCredential {
        credential: AppCredentialRef,
        secret: Secret,
    },
}

/// One validated cloud of a clouds.yaml. `Debug` is written by hand: the auth URL may carry
/// `user:password@`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct CloudConfig {
    /// The clouds.yaml key this came from (for messages).
    pub cloud_name: String,
    pub auth_url: String,
    pub auth: AuthMethod,
    pub region: Option<String>,
    pub interface: Interface,
    /// The `cacert` path as written; the caller decides whether to read it (in OpenShift the
    /// CA comes from the Secret's `cacert` key or a ConfigMap instead).
    pub cacert_path: Option<String>,
    /// `verify: false` turns off TLS certificate verification.
    pub verify: bool,
}

impl fmt::Debug for CloudConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloudConfig")
            .field("cloud_name", &self.cloud_name)
            .field("auth_url", &crate::redact::display_url(&self.auth_url))
            .field("auth", &self.auth)
            .field("region", &self.region)
            .field("interface", &self.interface)
            .field("cacert_path", &self.cacert_path)
            .field("verify", &self.verify)
            .finish()
    }
}

impl CloudConfig {
    /// Parses `text` and validates the cloud named `cloud_name`.
    pub fn from_clouds_yaml(text: &str, cloud_name: &str) -> Result<Self, Error> {
        let file = CloudsFile::parse(text)?;
        file.cloud(cloud_name)
    }

    /// What in this configuration weakens transport security, one sentence each (for a
    /// condition an administrator reads): `verify: false`, and an `http://` auth URL, over
    /// which the password or application credential itself travels in clear text. Both are
    /// accepted (test clouds use them), but they must not go unnoticed.
    pub fn insecure_settings(&self) -> Vec<String> {
        let mut found = Vec::new();
        if !self.verify {
            found.push(format!(
                "cloud {:?} in clouds.yaml sets verify: false, so the OpenStack endpoints' certificates are not checked and anyone on the path can read the credentials; remove it and put the cloud's CA in the Secret's cacert key",
                self.cloud_name
            ));
        }
        if self
            .auth_url
            .get(..7)
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"))
        {
            found.push(format!(
                "cloud {:?} in clouds.yaml has the auth_url {}, plain HTTP: the password or application credential crosses the network unencrypted; use an https:// Keystone endpoint",
                self.cloud_name,
                crate::redact::display_url(&self.auth_url)
            ));
        }
        found
    }

    /// The secrets this config carries, so messages coming back from a server can be scrubbed.
    pub(crate) fn secrets(&self) -> Vec<&str> {
        match &self.auth {
            AuthMethod::Password { password, .. } => vec![password.expose()],
            AuthMethod::ApplicationCredential { secret, .. } => vec![secret.expose()],
        }
    }
}

/// [`CloudConfig::insecure_settings`] of the cloud `cloud_name` in a clouds.yaml as stored in a
/// Secret. A file that does not parse has no findings here: its errors are reported by
/// whatever uses it.
pub fn insecure_settings_in(clouds_yaml: &[u8], cloud_name: &str) -> Vec<String> {
    std::str::from_utf8(clouds_yaml)
        .ok()
        .and_then(|text| CloudConfig::from_clouds_yaml(text, cloud_name).ok())
        .map(|c| c.insecure_settings())
        .unwrap_or_default()
}

/// A parsed clouds.yaml with every cloud still unvalidated.
#[derive(Debug)]
pub struct CloudsFile {
    clouds: BTreeMap<String, Option<RawCloud>>,
}

impl CloudsFile {
    pub fn parse(text: &str) -> Result<Self, Error> {
        if text.trim().is_empty() {
            return Err(Error::CloudsYaml(
                "the file is empty; it needs a top-level `clouds:` mapping".into(),
            ));
        }
        let raw: RawFile = crate::yaml::from_str(text)
            .map_err(|e| Error::CloudsYaml(format!("not a valid clouds.yaml document: {e}")))?;
        let clouds = raw
            .clouds
            .ok_or_else(|| Error::CloudsYaml("there is no top-level `clouds:` mapping".into()))?;
        Ok(Self { clouds })
    }

    /// The names of the clouds in the file.
    pub fn names(&self) -> Vec<&str> {
        self.clouds.keys().map(String::as_str).collect()
    }

    pub fn cloud(&self, name: &str) -> Result<CloudConfig, Error> {
        let Some(entry) = self.clouds.get(name) else {
            let names = self.names();
            let have = if names.is_empty() {
                "the file defines no cloud".to_string()
            } else {
                format!("the file defines {}", quoted_list(&names))
            };
            return Err(Error::CloudsYaml(format!(
                "there is no cloud named \"{name}\" under `clouds:` ({have})"
            )));
        };
        let raw = entry.clone().unwrap_or_default();
        raw.validate(name)
    }
}

fn quoted_list(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Deserialize)]
struct RawFile {
    clouds: Option<BTreeMap<String, Option<RawCloud>>>,
}

/// Unknown keys (`volume_api_version`, `log_file`, …) are ignored as os-client-config does.
#[derive(Clone, Debug, Default, Deserialize)]
struct RawCloud {
    auth: Option<RawAuth>,
    auth_type: Option<String>,
    region_name: Option<String>,
    interface: Option<String>,
    identity_api_version: Option<Scalar>,
    cacert: Option<String>,
    verify: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct RawAuth {
    auth_url: Option<RawUrl>,
    username: Option<String>,
    user_id: Option<String>,
    password: Option<Secret>,
    user_domain_name: Option<String>,
    user_domain_id: Option<String>,
    project_id: Option<String>,
    project_name: Option<String>,
    // Keystone v2 names that clouds.yaml files in the wild still use.
    tenant_id: Option<String>,
    tenant_name: Option<String>,
    project_domain_name: Option<String>,
    project_domain_id: Option<String>,
    domain_id: Option<String>,
    domain_name: Option<String>,
    default_domain: Option<String>,
    application_credential_id: Option<String>,
    application_credential_name: Option<String>,
    application_credential_secret: Option<Secret>,
}

/// `identity_api_version: 3` and `"3"` both occur.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum Scalar {
    Int(i64),
    Float(f64),
    Text(String),
}

impl Scalar {
    fn text(&self) -> String {
        match self {
            Scalar::Int(i) => i.to_string(),
            Scalar::Float(f) => f.to_string(),
            Scalar::Text(s) => s.trim().to_string(),
        }
    }
}

/// A URL as written in clouds.yaml. `Debug` drops its user-info, since a parsed file may end
/// up in a debug log line or a test failure.
#[derive(Clone, Default, Deserialize)]
#[serde(transparent)]
struct RawUrl(String);

impl fmt::Debug for RawUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&crate::redact::display_url(&self.0), f)
    }
}

fn non_empty(v: &Option<String>) -> Option<String> {
    v.as_ref()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

impl RawCloud {
    fn validate(self, cloud: &str) -> Result<CloudConfig, Error> {
        let bad = |msg: String| Error::CloudsYaml(format!("cloud \"{cloud}\": {msg}"));

        if let Some(v) = &self.identity_api_version {
            let v = v.text();
            if !matches!(v.as_str(), "3" | "3.0" | "v3") {
                return Err(bad(format!(
                    "identity_api_version is {v}, but only Keystone v3 is supported; set it to 3"
                )));
            }
        }
        let interface = match non_empty(&self.interface) {
            None => Interface::Public,
            Some(v) => Interface::parse(&v).ok_or_else(|| {
                bad(format!(
                    "interface \"{v}\" is not one of public, internal, admin"
                ))
            })?,
        };
        let auth = self
            .auth
            .ok_or_else(|| bad("there is no `auth:` section".into()))?;
        let auth_url = non_empty(&auth.auth_url.as_ref().map(|u| u.0.clone()))
            .ok_or_else(|| bad("auth.auth_url is missing; set it to the Keystone URL".into()))?;
        if !(auth_url.starts_with("http://") || auth_url.starts_with("https://")) {
            return Err(bad(format!(
                "auth.auth_url \"{}\" must start with http:// or https://",
                crate::redact::display_url(&auth_url)
            )));
        }

        let has_app_cred = auth.application_credential_id.is_some()
            || auth.application_credential_name.is_some()
            || auth.application_credential_secret.is_some();
        let auth_type = non_empty(&self.auth_type);
        let method = match auth_type.as_deref() {
            Some("password" | "v3password") => auth.password_method(&bad)?,
            Some("v3applicationcredential") => auth.app_credential_method(&bad)?,
            // Like gophercloud's clientconfig: application-credential keys select that method.
            None if has_app_cred => auth.app_credential_method(&bad)?,
            None => auth.password_method(&bad)?,
            Some(t @ ("token" | "v3token" | "v2token" | "v2password")) => {
                return Err(bad(format!(
                    "auth_type \"{t}\" is not supported; use password (v3password) or \
                     v3applicationcredential"
                )));
            }
            Some(other) => {
                return Err(bad(format!(
                    "unknown auth_type \"{other}\"; supported: password, v3password, \
                     v3applicationcredential"
                )));
            }
        };
        Ok(CloudConfig {
            cloud_name: cloud.to_string(),
            auth_url,
            auth: method,
            region: non_empty(&self.region_name),
            interface,
            cacert_path: non_empty(&self.cacert),
            verify: self.verify.unwrap_or(true),
        })
    }
}

impl RawAuth {
    /// `domain_*` and `default_domain` fill in missing user and project domains, as
    /// gophercloud's clientconfig and os-client-config do.
    fn user_domain(&self) -> Option<DomainRef> {
        if let Some(id) = non_empty(&self.user_domain_id) {
            return Some(DomainRef::Id(id));
        }
        if let Some(n) = non_empty(&self.user_domain_name) {
            return Some(DomainRef::Name(n));
        }
        self.fallback_domain()
    }

    fn project_domain(&self) -> Option<DomainRef> {
        if let Some(id) = non_empty(&self.project_domain_id) {
            return Some(DomainRef::Id(id));
        }
        if let Some(n) = non_empty(&self.project_domain_name) {
            return Some(DomainRef::Name(n));
        }
        self.fallback_domain()
    }

    fn fallback_domain(&self) -> Option<DomainRef> {
        if let Some(id) = non_empty(&self.domain_id) {
            return Some(DomainRef::Id(id));
        }
        if let Some(n) = non_empty(&self.domain_name) {
            return Some(DomainRef::Name(n));
        }
        non_empty(&self.default_domain).map(DomainRef::Id)
    }

    fn user(&self, bad: &dyn Fn(String) -> Error, why: &str) -> Result<UserRef, Error> {
        if let Some(id) = non_empty(&self.user_id) {
            return Ok(UserRef::Id(id));
        }
        let name = non_empty(&self.username)
            .ok_or_else(|| bad(format!("auth.username (or auth.user_id) is missing; {why}")))?;
        let domain = self.user_domain().ok_or_else(|| {
            bad(format!(
                "auth.username \"{name}\" needs a domain: set auth.user_domain_name or \
                 auth.user_domain_id (Keystone v3 names users within a domain)"
            ))
        })?;
        Ok(UserRef::Name { name, domain })
    }

    fn password_method(&self, bad: &dyn Fn(String) -> Error) -> Result<AuthMethod, Error> {
        let user = self.user(bad, "password authentication needs a user")?;
        let password = self
            .password
            .clone()
            .filter(|p| !p.is_empty())
            .ok_or_else(|| bad("auth.password is missing or empty".into()))?;
        let project =
            if let Some(id) = non_empty(&self.project_id).or_else(|| non_empty(&self.tenant_id)) {
                ProjectRef::Id(id)
            } else if let Some(name) =
                non_empty(&self.project_name).or_else(|| non_empty(&self.tenant_name))
            {
                let domain = self.project_domain().ok_or_else(|| {
                    bad(format!(
                        "auth.project_name \"{name}\" needs a domain: set \
                     auth.project_domain_name or auth.project_domain_id"
                    ))
                })?;
                ProjectRef::Name { name, domain }
            } else {
                return Err(bad(
                    "no project: set auth.project_id, or auth.project_name with \
                 auth.project_domain_name (the token must be scoped to the cluster's project)"
                        .into(),
                ));
            };
        Ok(AuthMethod::Password {
            user,
            password,
            project,
        })
    }

    fn app_credential_method(&self, bad: &dyn Fn(String) -> Error) -> Result<AuthMethod, Error> {
        let secret = self
            .application_credential_secret
            .clone()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| bad("auth.application_credential_secret is missing or empty".into()))?;
        let credential = if let Some(id) = non_empty(&self.application_credential_id) {
            AppCredentialRef::Id(id)
        } else if let Some(name) = non_empty(&self.application_credential_name) {
            let user = self.user(
                bad,
                "an application credential given by name needs its user",
            )?;
            AppCredentialRef::Name { name, user }
        } else {
            return Err(bad(
                "auth.application_credential_id (or application_credential_name with a user) \
                 is missing"
                    .into(),
            ));
        };
        Ok(AuthMethod::ApplicationCredential { credential, secret })
    }
}
