//! Property tests of clouds.yaml parsing ([`CloudConfig::from_clouds_yaml`]):
//!
//! * any text, and any YAML made of clouds.yaml's own keys with values of any type, is parsed
//!   or refused without a panic, and a refusal is a `parse clouds.yaml: …` message;
//! * a valid cloud written in any of the shapes the parser accepts (ids or names, domains
//!   given per user and project or through `domain_*` / `default_domain`, password or
//!   application credential, JSON or block YAML, names in any script) reads back as exactly
//!   the configuration it was written from;
//! * a cloud with one thing wrong is refused with a message naming the cloud and the key to
//!   fix, and no message ever quotes the password or application-credential secret.

use openstack::{
    AppCredentialRef, AuthMethod, CloudConfig, DomainRef, Error, Interface, ProjectRef, Secret,
    UserRef,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

// --- writing YAML ------------------------------------------------------------------------------

/// Block-style YAML with every string double-quoted (JSON's escapes are valid YAML escapes), so
/// a value such as `yes`, `123` or `~` stays a string.
fn block_yaml(value: &Value) -> String {
    let mut out = String::new();
    write_block(value, 0, &mut out);
    out
}

fn write_block(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                out.push_str(&pad);
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                match v {
                    Value::Object(m) if !m.is_empty() => {
                        out.push('\n');
                        write_block(v, indent + 2, out);
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.push('\n');
                        write_block(v, indent + 2, out);
                    }
                    scalar => {
                        out.push(' ');
                        out.push_str(&scalar.to_string());
                        out.push('\n');
                    }
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                out.push_str(&pad);
                out.push_str("- ");
                // Flow style inside a list keeps the writer simple; it is still YAML.
                out.push_str(&item.to_string());
                out.push('\n');
            }
        }
        scalar => {
            out.push_str(&pad);
            out.push_str(&scalar.to_string());
            out.push('\n');
        }
    }
}

/// The two spellings of one document: JSON (YAML 1.2 is a superset) and block YAML.
fn spellings(doc: &Value) -> [String; 2] {
    [
        serde_json::to_string_pretty(doc).unwrap_or_default(),
        block_yaml(doc),
    ]
}

// --- a model of a valid cloud ------------------------------------------------------------------

/// A name-like value in any script, possibly padded with spaces (the parser trims them).
fn text() -> BoxedStrategy<String> {
    prop_oneof![
        "[a-zA-Z0-9_.-]{1,16}",
        "\\PC{1,16}",
        // Values YAML would read as something else if they were not quoted.
        Just("yes".to_string()),
        Just("123".to_string()),
        Just("~".to_string()),
        Just("null".to_string()),
        Just("3.0".to_string()),
    ]
    .prop_filter("not blank", |s| !s.trim().is_empty())
    .prop_flat_map(|s| prop_oneof![Just(s.clone()), Just(format!("  {s} "))].boxed())
    .boxed()
}

/// A secret unlike anything else in the document, so finding it in a message is a leak.
fn secret() -> impl Strategy<Value = String> {
    prop_oneof![
        "PW[a-zA-Z0-9]{16}",
        "PW\\PC{16}",
        "PW[a-z]{8} with spaces !#:\\{\\}"
    ]
}

#[derive(Clone, Debug)]
enum DomainM {
    Id(String),
    Name(String),
}

impl DomainM {
    fn expected(&self) -> DomainRef {
        match self {
            DomainM::Id(v) => DomainRef::Id(v.trim().to_string()),
            DomainM::Name(v) => DomainRef::Name(v.trim().to_string()),
        }
    }
}

fn domain() -> impl Strategy<Value = DomainM> {
    prop_oneof![text().prop_map(DomainM::Id), text().prop_map(DomainM::Name)]
}

/// Where a domain is written: under its own key (`user_domain_id`, …) or through a fallback
/// key that fills in both user and project domains.
#[derive(Clone, Debug)]
enum Fallback {
    DomainId(String),
    DomainName(String),
    DefaultDomain(String),
}

impl Fallback {
    fn expected(&self) -> DomainRef {
        match self {
            Fallback::DomainId(v) | Fallback::DefaultDomain(v) => DomainRef::Id(v.trim().into()),
            Fallback::DomainName(v) => DomainRef::Name(v.trim().into()),
        }
    }

    fn write(&self, auth: &mut Map<String, Value>) {
        let (k, v) = match self {
            Fallback::DomainId(v) => ("domain_id", v),
            Fallback::DomainName(v) => ("domain_name", v),
            Fallback::DefaultDomain(v) => ("default_domain", v),
        };
        auth.insert(k.into(), json!(v));
    }
}

fn fallback() -> impl Strategy<Value = Fallback> {
    prop_oneof![
        text().prop_map(Fallback::DomainId),
        text().prop_map(Fallback::DomainName),
        text().prop_map(Fallback::DefaultDomain),
    ]
}

#[derive(Clone, Debug)]
enum UserM {
    Id(String),
    /// `None`: the domain comes from the fallback.
    Name(String, Option<DomainM>),
}

#[derive(Clone, Debug)]
enum ProjectM {
    Id(String),
    /// Keystone v2's `tenant_id`.
    TenantId(String),
    Name(String, Option<DomainM>),
    /// Keystone v2's `tenant_name`.
    TenantName(String, Option<DomainM>),
}

#[derive(Clone, Debug)]
enum MethodM {
    Password {
        user: UserM,
        password: String,
        project: ProjectM,
        auth_type: Option<&'static str>,
    },
    AppCredentialId {
        id: String,
        secret: String,
        auth_type: bool,
    },
    AppCredentialName {
        name: String,
        user: UserM,
        secret: String,
        auth_type: bool,
    },
}

#[derive(Clone, Debug)]
struct CloudM {
    cloud: String,
    auth_url: String,
    fallback: Option<Fallback>,
    method: MethodM,
    region: Option<String>,
    /// As written, and what it means.
    interface: Option<(String, Interface)>,
    identity_api_version: Option<Value>,
    cacert: Option<String>,
    verify: Option<bool>,
    /// Keys os-client-config knows and this parser ignores.
    ignored: Vec<(&'static str, Value)>,
}

/// A user, with a domain of its own unless a fallback can supply it.
fn user(has_fallback: bool) -> BoxedStrategy<UserM> {
    let own = prop_oneof![
        text().prop_map(UserM::Id),
        (text(), domain()).prop_map(|(n, d)| UserM::Name(n, Some(d))),
    ];
    if has_fallback {
        prop_oneof![own, text().prop_map(|n| UserM::Name(n, None))].boxed()
    } else {
        own.boxed()
    }
}

fn project(has_fallback: bool) -> BoxedStrategy<ProjectM> {
    let dom = if has_fallback {
        proptest::option::of(domain()).boxed()
    } else {
        domain().prop_map(Some).boxed()
    };
    prop_oneof![
        text().prop_map(ProjectM::Id),
        text().prop_map(ProjectM::TenantId),
        (text(), dom.clone()).prop_map(|(n, d)| ProjectM::Name(n, d)),
        (text(), dom).prop_map(|(n, d)| ProjectM::TenantName(n, d)),
    ]
    .boxed()
}

fn method(has_fallback: bool) -> BoxedStrategy<MethodM> {
    prop_oneof![
        (
            user(has_fallback),
            secret(),
            project(has_fallback),
            prop_oneof![Just(None), Just(Some("password")), Just(Some("v3password"))],
        )
            .prop_map(|(user, password, project, auth_type)| MethodM::Password {
                user,
                password,
                project,
                auth_type,
            }),
        (text(), secret(), any::<bool>()).prop_map(|(id, secret, auth_type)| {
            MethodM::AppCredentialId {
                id,
                secret,
                auth_type,
            }
        }),
        (text(), user(has_fallback), secret(), any::<bool>()).prop_map(
            |(name, user, secret, auth_type)| MethodM::AppCredentialName {
                name,
                user,
                secret,
                auth_type,
            }
        ),
    ]
    .boxed()
}

fn interface() -> impl Strategy<Value = (String, Interface)> {
    (
        prop_oneof![
            Just(("public", Interface::Public)),
            Just(("publicURL", Interface::Public)),
            Just(("internal", Interface::Internal)),
            Just(("internalURL", Interface::Internal)),
            Just(("admin", Interface::Admin)),
            Just(("adminURL", Interface::Admin)),
        ],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|((spelling, i), upper, padded)| {
            let s = if upper {
                spelling.to_uppercase()
            } else {
                spelling.to_string()
            };
            (if padded { format!(" {s} ") } else { s }, i)
        })
}

fn cloud() -> BoxedStrategy<CloudM> {
    proptest::option::of(fallback())
        .prop_flat_map(|fallback| {
            let has_fallback = fallback.is_some();
            (
                text().prop_map(|s| s.trim().to_string()),
                (
                    prop_oneof![Just("https://"), Just("http://")],
                    "[a-z0-9.-]{1,20}(:[0-9]{1,5})?(/[a-zA-Z0-9/_.-]{0,20})?",
                )
                    .prop_map(|(scheme, rest)| format!("{scheme}{rest}")),
                Just(fallback),
                method(has_fallback),
                proptest::option::of(text()),
                proptest::option::of(interface()),
                proptest::option::of(prop_oneof![
                    Just(json!(3)),
                    Just(json!(3.0)),
                    Just(json!("3")),
                    Just(json!(" v3 ")),
                    Just(json!("3.0")),
                ]),
                proptest::option::of(text()),
                proptest::option::of(any::<bool>()),
                proptest::collection::vec(
                    prop_oneof![
                        Just(("volume_api_version", json!(3))),
                        Just(("log_file", json!("/dev/null"))),
                        Just(("block_storage_api_version", json!("3"))),
                        Just(("operation_log", json!({"logging": true}))),
                        Just(("regions", json!(["a", "b"]))),
                    ],
                    0..3,
                ),
            )
                .prop_map(
                    |(
                        cloud,
                        auth_url,
                        fallback,
                        method,
                        region,
                        interface,
                        identity_api_version,
                        cacert,
                        verify,
                        ignored,
                    )| CloudM {
                        cloud,
                        auth_url,
                        fallback,
                        method,
                        region,
                        interface,
                        identity_api_version,
                        cacert,
                        verify,
                        ignored,
                    },
                )
        })
        .boxed()
}

impl CloudM {
    fn fallback_domain(&self) -> Option<DomainRef> {
        self.fallback.as_ref().map(Fallback::expected)
    }

    fn write_user(&self, user: &UserM, auth: &mut Map<String, Value>) {
        match user {
            UserM::Id(id) => {
                auth.insert("user_id".into(), json!(id));
            }
            UserM::Name(name, domain) => {
                auth.insert("username".into(), json!(name));
                match domain {
                    Some(DomainM::Id(d)) => auth.insert("user_domain_id".into(), json!(d)),
                    Some(DomainM::Name(d)) => auth.insert("user_domain_name".into(), json!(d)),
                    None => None,
                };
            }
        }
    }

    fn expected_user(&self, user: &UserM) -> UserRef {
        match user {
            UserM::Id(id) => UserRef::Id(id.trim().into()),
            UserM::Name(name, domain) => UserRef::Name {
                name: name.trim().into(),
                domain: domain
                    .as_ref()
                    .map(DomainM::expected)
                    .or_else(|| self.fallback_domain())
                    .unwrap_or(DomainRef::Id(String::new())),
            },
        }
    }

    /// The `clouds:` document.
    fn doc(&self) -> Value {
        let mut auth = Map::new();
        auth.insert("auth_url".into(), json!(self.auth_url));
        if let Some(f) = &self.fallback {
            f.write(&mut auth);
        }
        let mut cloud = Map::new();
        match &self.method {
            MethodM::Password {
                user,
                password,
                project,
                auth_type,
            } => {
                self.write_user(user, &mut auth);
                auth.insert("password".into(), json!(password));
                let (id_key, name_key, id, name, domain) = match project {
                    ProjectM::Id(v) => ("project_id", "", Some(v), None, None),
                    ProjectM::TenantId(v) => ("tenant_id", "", Some(v), None, None),
                    ProjectM::Name(v, d) => ("", "project_name", None, Some(v), d.as_ref()),
                    ProjectM::TenantName(v, d) => ("", "tenant_name", None, Some(v), d.as_ref()),
                };
                if let Some(id) = id {
                    auth.insert(id_key.into(), json!(id));
                }
                if let Some(name) = name {
                    auth.insert(name_key.into(), json!(name));
                }
                match domain {
                    Some(DomainM::Id(d)) => auth.insert("project_domain_id".into(), json!(d)),
                    Some(DomainM::Name(d)) => auth.insert("project_domain_name".into(), json!(d)),
                    None => None,
                };
                if let Some(t) = auth_type {
                    cloud.insert("auth_type".into(), json!(t));
                }
            }
            MethodM::AppCredentialId {
                id,
                secret,
                auth_type,
            } => {
                auth.insert("application_credential_id".into(), json!(id));
                auth.insert("application_credential_secret".into(), json!(secret));
                if *auth_type {
                    cloud.insert("auth_type".into(), json!("v3applicationcredential"));
                }
            }
            MethodM::AppCredentialName {
                name,
                user,
                secret,
                auth_type,
            } => {
                auth.insert("application_credential_name".into(), json!(name));
                self.write_user(user, &mut auth);
                auth.insert("application_credential_secret".into(), json!(secret));
                if *auth_type {
                    cloud.insert("auth_type".into(), json!("v3applicationcredential"));
                }
            }
        }
        cloud.insert("auth".into(), Value::Object(auth));
        if let Some(r) = &self.region {
            cloud.insert("region_name".into(), json!(r));
        }
        if let Some((i, _)) = &self.interface {
            cloud.insert("interface".into(), json!(i));
        }
        if let Some(v) = &self.identity_api_version {
            cloud.insert("identity_api_version".into(), v.clone());
        }
        if let Some(c) = &self.cacert {
            cloud.insert("cacert".into(), json!(c));
        }
        if let Some(v) = self.verify {
            cloud.insert("verify".into(), json!(v));
        }
        for (k, v) in &self.ignored {
            cloud.insert((*k).into(), v.clone());
        }
        let mut clouds = Map::new();
        clouds.insert(self.cloud.clone(), Value::Object(cloud));
        json!({ "clouds": clouds })
    }

    fn expected(&self) -> CloudConfig {
        let auth = match &self.method {
            MethodM::Password {
                user,
                password,
                project,
                ..
            } => {
                let project_domain = |d: &Option<DomainM>| {
                    d.as_ref()
                        .map(DomainM::expected)
                        .or_else(|| self.fallback_domain())
                        .unwrap_or(DomainRef::Id(String::new()))
                };
                AuthMethod::Password {
                    user: self.expected_user(user),
                    password: Secret::new(password.clone()),
                    project: match project {
                        ProjectM::Id(v) | ProjectM::TenantId(v) => ProjectRef::Id(v.trim().into()),
                        ProjectM::Name(v, d) | ProjectM::TenantName(v, d) => ProjectRef::Name {
                            name: v.trim().into(),
                            domain: project_domain(d),
                        },
                    },
                }
            }
            MethodM::AppCredentialId { id, secret, .. } => AuthMethod::ApplicationCredential {
                credential: AppCredentialRef::Id(id.trim().into()),
                secret: Secret::new(secret.clone()),
            },
            MethodM::AppCredentialName {
                name, user, secret, ..
            } => AuthMethod::ApplicationCredential {
                credential: AppCredentialRef::Name {
                    name: name.trim().into(),
                    user: self.expected_user(user),
                },
                secret: Secret::new(secret.clone()),
            },
        };
        CloudConfig {
            cloud_name: self.cloud.clone(),
            auth_url: self.auth_url.clone(),
            auth,
            region: self.region.as_ref().map(|r| r.trim().to_string()),
            interface: self.interface.as_ref().map_or(Interface::Public, |i| i.1),
            cacert_path: self.cacert.as_ref().map(|c| c.trim().to_string()),
            verify: self.verify.unwrap_or(true),
        }
    }

    fn secret(&self) -> &str {
        match &self.method {
            MethodM::Password { password, .. } => password,
            MethodM::AppCredentialId { secret, .. } | MethodM::AppCredentialName { secret, .. } => {
                secret
            }
        }
    }
}

// --- one thing wrong ---------------------------------------------------------------------------

/// A change that makes a valid cloud invalid, and the key the message must name.
#[derive(Clone, Debug)]
enum Breakage {
    RemoveAuth,
    RemoveAuthUrl,
    AuthUrlWithoutScheme,
    BadInterface,
    IdentityV2,
    UnknownAuthType,
    TokenAuthType,
    /// Every way of naming a user removed (password, or application credential by name).
    RemoveUser,
    RemoveUserDomain,
    EmptySecret,
    RemoveSecret,
    RemoveProject,
    RemoveProjectDomain,
    RemoveAppCredentialRef,
    /// Asking for a cloud the file does not define.
    OtherCloud,
}

fn breakage() -> impl Strategy<Value = Breakage> {
    prop_oneof![
        Just(Breakage::RemoveAuth),
        Just(Breakage::RemoveAuthUrl),
        Just(Breakage::AuthUrlWithoutScheme),
        Just(Breakage::BadInterface),
        Just(Breakage::IdentityV2),
        Just(Breakage::UnknownAuthType),
        Just(Breakage::TokenAuthType),
        Just(Breakage::RemoveUser),
        Just(Breakage::RemoveUserDomain),
        Just(Breakage::EmptySecret),
        Just(Breakage::RemoveSecret),
        Just(Breakage::RemoveProject),
        Just(Breakage::RemoveProjectDomain),
        Just(Breakage::RemoveAppCredentialRef),
        Just(Breakage::OtherCloud),
    ]
}

const DOMAIN_KEYS: [&str; 3] = ["domain_id", "domain_name", "default_domain"];

/// Applies `b` to the document of `m`: the key the message must name, or `None` when this
/// breakage does not apply to this cloud (e.g. a project for an application credential).
fn break_doc(m: &CloudM, b: &Breakage, doc: &mut Value) -> Option<&'static str> {
    let cloud = doc["clouds"][m.cloud.as_str()].as_object_mut()?;
    let password = matches!(m.method, MethodM::Password { .. });
    let by_name = |u: &UserM| matches!(u, UserM::Name(..));
    let user = match &m.method {
        MethodM::Password { user, .. } | MethodM::AppCredentialName { user, .. } => Some(user),
        MethodM::AppCredentialId { .. } => None,
    };
    let secret_key = if password {
        "auth.password"
    } else {
        "auth.application_credential_secret"
    };
    let strip = |auth: &mut Map<String, Value>, keys: &[&str]| {
        for k in keys {
            auth.remove(*k);
        }
    };
    match b {
        Breakage::RemoveAuth => {
            cloud.remove("auth");
            Some("`auth:`")
        }
        Breakage::OtherCloud => None,
        Breakage::BadInterface => {
            cloud.insert("interface".into(), json!("private"));
            Some("interface")
        }
        Breakage::IdentityV2 => {
            cloud.insert("identity_api_version".into(), json!(2));
            Some("identity_api_version")
        }
        Breakage::UnknownAuthType => {
            cloud.insert("auth_type".into(), json!("v3oidcpassword"));
            Some("auth_type")
        }
        Breakage::TokenAuthType => {
            cloud.insert("auth_type".into(), json!("v3token"));
            Some("auth_type")
        }
        _ => {
            let auth = cloud.get_mut("auth")?.as_object_mut()?;
            match b {
                Breakage::RemoveAuthUrl => {
                    auth.remove("auth_url");
                    Some("auth.auth_url")
                }
                Breakage::AuthUrlWithoutScheme => {
                    let url = m.auth_url.split_once("://").map_or("", |(_, r)| r);
                    auth.insert("auth_url".into(), json!(url));
                    Some("auth.auth_url")
                }
                Breakage::EmptySecret => {
                    let key = secret_key.trim_start_matches("auth.");
                    auth.insert(key.into(), json!(""));
                    Some(secret_key)
                }
                Breakage::RemoveSecret => {
                    auth.remove(secret_key.trim_start_matches("auth."));
                    Some(secret_key)
                }
                Breakage::RemoveUser if user.is_some() => {
                    strip(auth, &["user_id", "username"]);
                    Some("auth.username")
                }
                Breakage::RemoveUserDomain if user.is_some_and(by_name) => {
                    strip(auth, &["user_domain_id", "user_domain_name"]);
                    strip(auth, &DOMAIN_KEYS);
                    Some("auth.user_domain_name")
                }
                Breakage::RemoveProject if password => {
                    strip(
                        auth,
                        &["project_id", "project_name", "tenant_id", "tenant_name"],
                    );
                    Some("auth.project_id")
                }
                Breakage::RemoveProjectDomain
                    if matches!(
                        m.method,
                        MethodM::Password {
                            project: ProjectM::Name(..) | ProjectM::TenantName(..),
                            ..
                        }
                    ) && !user.is_some_and(|u| matches!(u, UserM::Name(_, None))) =>
                {
                    strip(auth, &["project_domain_id", "project_domain_name"]);
                    strip(auth, &DOMAIN_KEYS);
                    Some("auth.project_domain_name")
                }
                Breakage::RemoveAppCredentialRef if !password => {
                    strip(
                        auth,
                        &["application_credential_id", "application_credential_name"],
                    );
                    // Without `auth_type`, the secret alone still selects the method.
                    Some("auth.application_credential_id")
                }
                _ => None,
            }
        }
    }
}

fn clouds_yaml_message(e: &Error) -> Result<&str, TestCaseError> {
    match e {
        Error::CloudsYaml(m) => Ok(m),
        other => Err(TestCaseError::fail(format!(
            "not a clouds.yaml error: {other:?}"
        ))),
    }
}

// --- arbitrary YAML made of clouds.yaml's keys --------------------------------------------------

const KEYS: &[&str] = &[
    "clouds",
    "openstack",
    "auth",
    "auth_url",
    "auth_type",
    "username",
    "user_id",
    "password",
    "user_domain_name",
    "user_domain_id",
    "project_id",
    "project_name",
    "tenant_id",
    "tenant_name",
    "project_domain_name",
    "project_domain_id",
    "domain_id",
    "domain_name",
    "default_domain",
    "application_credential_id",
    "application_credential_name",
    "application_credential_secret",
    "region_name",
    "interface",
    "identity_api_version",
    "cacert",
    "verify",
];

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "\\PC{0,12}".prop_map(Value::String),
        Just(json!("https://keystone:5000/v3")),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    proptest::sample::select(KEYS).prop_map(String::from),
                    "\\PC{0,6}"
                ],
                inner,
                0..6,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

// --- the properties ----------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_text_is_parsed_or_refused_without_panic(
        text in prop_oneof![any::<String>(), "\\PC{0,200}", "[ \t\n:{}\\[\\]\"'&*!|>#%@`,-]{0,80}"],
        cloud in prop_oneof![Just("openstack".to_string()), any::<String>()],
    ) {
        match CloudConfig::from_clouds_yaml(&text, &cloud) {
            Ok(c) => prop_assert!(c.auth_url.starts_with("http")),
            Err(e) => {
                clouds_yaml_message(&e)?;
                prop_assert!(e.to_string().starts_with("parse clouds.yaml: "), "{}", e);
            }
        }
    }

    #[test]
    fn any_yaml_of_clouds_yaml_keys_is_parsed_or_refused_without_panic(
        doc in any_json(),
        auth in any_json(),
        cloud in any_json(),
        block in any::<bool>(),
    ) {
        // Three shapes: anything, anything under `clouds:`, anything under `auth:`.
        for doc in [
            doc,
            json!({"clouds": {"openstack": cloud}}),
            json!({"clouds": {"openstack": {"auth": auth}}}),
        ] {
            let text = if block { block_yaml(&doc) } else { doc.to_string() };
            match CloudConfig::from_clouds_yaml(&text, "openstack") {
                Ok(c) => {
                    prop_assert!(
                        c.auth_url.starts_with("http://") || c.auth_url.starts_with("https://")
                    );
                    prop_assert_eq!(c.auth_url.trim(), c.auth_url.as_str());
                }
                Err(e) => {
                    let m = clouds_yaml_message(&e)?;
                    prop_assert!(!m.is_empty());
                }
            }
        }
    }

    #[test]
    fn a_valid_cloud_reads_back_as_written(m in cloud()) {
        for text in spellings(&m.doc()) {
            let parsed = CloudConfig::from_clouds_yaml(&text, &m.cloud);
            prop_assert_eq!(parsed.as_ref(), Ok(&m.expected()), "{}", text);
            // The secret is there to be sent, and nowhere in what prints.
            let c = parsed.map_err(|e| TestCaseError::fail(e.to_string()))?;
            let printed = format!("{c:?}");
            prop_assert!(!printed.contains(m.secret()), "{}", printed);
            for finding in c.insecure_settings() {
                prop_assert!(!finding.contains(m.secret()), "{}", finding);
            }
        }
    }

    #[test]
    fn one_thing_wrong_is_named_and_the_secret_never_quoted(m in cloud(), b in breakage()) {
        let mut doc = m.doc();
        let Some(key) = break_doc(&m, &b, &mut doc) else {
            if let Breakage::OtherCloud = b {
                let other = format!("{}-other", m.cloud);
                for text in spellings(&doc) {
                    let e = CloudConfig::from_clouds_yaml(&text, &other)
                        .expect_err("no such cloud");
                    let msg = clouds_yaml_message(&e)?;
                    prop_assert!(msg.contains("there is no cloud named"), "{}", msg);
                    prop_assert!(msg.contains(&other), "{}", msg);
                    prop_assert!(!msg.contains(m.secret()), "{}", msg);
                }
            }
            return Ok(());
        };
        for text in spellings(&doc) {
            let result = CloudConfig::from_clouds_yaml(&text, &m.cloud);
            let e = match result {
                Ok(c) => return Err(TestCaseError::fail(format!("{b:?} accepted: {c:?}\n{text}"))),
                Err(e) => e,
            };
            let msg = clouds_yaml_message(&e)?;
            prop_assert!(msg.contains(key), "{:?}: {} does not name {}", b, msg, key);
            prop_assert!(
                msg.contains(&format!("cloud \"{}\"", m.cloud)),
                "{:?}: {} does not name the cloud", b, msg
            );
            prop_assert!(!msg.contains(m.secret()), "{:?} quotes the secret: {}", b, msg);
            prop_assert!(!e.to_string().contains(m.secret()));
        }
    }

    /// A value of the wrong YAML type anywhere in a valid cloud is refused (or ignored, for
    /// keys the parser does not read) with a message that points at it and never quotes the
    /// secret.
    #[test]
    fn a_value_of_the_wrong_type_never_echoes_the_secret(
        m in cloud(),
        key in proptest::sample::select(KEYS),
        bad in prop_oneof![
            Just(json!([1, 2])),
            Just(json!({"nested": true})),
            Just(json!(12.5)),
            Just(json!(true)),
            Just(Value::Null),
        ],
        at_auth in any::<bool>(),
    ) {
        let mut doc = m.doc();
        let target = if at_auth {
            doc["clouds"][m.cloud.as_str()]["auth"].as_object_mut()
        } else {
            doc["clouds"][m.cloud.as_str()].as_object_mut()
        };
        if let Some(t) = target {
            t.insert(key.to_string(), bad);
        }
        for text in spellings(&doc) {
            if let Err(e) = CloudConfig::from_clouds_yaml(&text, &m.cloud) {
                let msg = clouds_yaml_message(&e)?;
                prop_assert!(!msg.contains(m.secret()), "{}", msg);
                // A YAML type error points at the value (line and column); a validation error
                // names the cloud and what to set (not always `key`: a stray
                // `application_credential_secret` selects that method, and the message then
                // asks for the credential's id).
                let cloud = format!("cloud \"{}\": ", m.cloud);
                prop_assert!(msg.contains(" at line ") || msg.starts_with(&cloud), "{}: {}", key, msg);
            }
        }
    }
}
