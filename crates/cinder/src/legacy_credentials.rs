//! The credentials of a cloud-provider-openstack `cloud.conf` (the INI file the upstream
//! `openstack-cinder-csi` and `openstack-manila-csi` Helm charts read from a Secret) as the
//! `clouds.yaml` the operators and drivers read, for users switching from the charts
//! (`csi-operator convert-cloud-conf`, docs/install-kubernetes.md).
//!
//! Only `[Global]` carries credentials. Its keys, as cloud-provider-openstack's `AuthOpts`
//! reads them: `auth-url`; `username` or `user-id` with `password`, or
//! `application-credential-id` / `-name` with `application-credential-secret`; `tenant-id` /
//! `tenant-name` (or `project-id` / `project-name`); `user-domain-*`, `tenant-domain-*` /
//! `project-domain-*`, and `domain-id` / `domain-name` for both when those are absent;
//! `region`; `tls-insecure`. A file that points at a clouds.yaml (`use-clouds`) or needs a
//! file path (`ca-file`, `cert-file`) cannot be converted blindly and says so.
//!
//! Errors name the line or the key, never a value (a password could be in it). The result is
//! checked by the same parser the operators use, so what converts also loads.

use serde_json::{Map, Value, json};

use crate::config::{IniError, parse_ini};

/// The cloud name the operators read from `clouds.yaml` (OpenShift's convention).
pub const CLOUD_NAME: &str = "openstack";

/// Why a cloud.conf cannot be converted. Messages say what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LegacyCredentialsError {
    #[error("the cloud.conf is not valid INI: {0}")]
    Ini(#[from] IniError),
    #[error("the cloud.conf has no [Global] section; the credentials belong there")]
    NoGlobal,
    #[error(
        "[Global] has no auth-url; set it to the Keystone endpoint, e.g. https://keystone.example.com:5000/v3"
    )]
    NoAuthUrl,
    #[error(
        "[Global] has neither username/user-id with password nor application-credential-id or \
         -name with application-credential-secret"
    )]
    NoCredentials,
    #[error("[Global] has {present} but no {missing}")]
    Incomplete {
        present: &'static str,
        missing: &'static str,
    },
    #[error(
        "[Global] sets use-clouds: the credentials are in the clouds.yaml it names; give that \
         file (with the cloud renamed to \"openstack\") instead of converting"
    )]
    UsesCloudsYaml,
    #[error(
        "[Global] sets {0}, a path inside the chart's pods that cannot be followed from here; \
         remove it and give the CA as the Secret's `cacert` key (client certificates are not \
         supported)"
    )]
    FilePath(&'static str),
    #[error(
        "[Global] the value of {key} starts with a quote that does not end it: a `;` or `#` \
         inside quotes starts a comment for the INI reader, so the value would be cut; write \
         it between backquotes (`…`) instead"
    )]
    CutValue { key: String },
    #[error("[Global] {key} must be true or false")]
    NotBool { key: &'static str },
    #[error("the converted clouds.yaml does not load: {0}")]
    Invalid(String),
}

/// The `clouds.yaml` (one cloud, [`CLOUD_NAME`]) holding the credentials of `cloud_conf`.
pub fn clouds_yaml_from_cloud_conf(cloud_conf: &str) -> Result<String, LegacyCredentialsError> {
    let ini = parse_ini(cloud_conf)?;
    let global = ini
        .section("Global")
        .ok_or(LegacyCredentialsError::NoGlobal)?;
    // A quoted value that still starts with its quote was cut at a `;` or `#` (go-ini's
    // inline comments, which gcfg, the charts' reader, does not apply inside quotes): a
    // password converted that way would be silently wrong.
    if let Some(k) = global
        .keys
        .iter()
        .find(|k| k.value.starts_with(['"', '\'']))
    {
        return Err(LegacyCredentialsError::CutValue {
            key: k.name.clone(),
        });
    }
    // An empty value is as good as absent (charts template every key, set or not).
    let get = |key: &str| global.get(key).map(str::trim).filter(|v| !v.is_empty());
    let first = |keys: &[&str]| keys.iter().find_map(|k| get(k));

    let flag = |key: &'static str| -> Result<bool, LegacyCredentialsError> {
        get(key).map_or(Ok(false), |v| {
            parse_bool(v).ok_or(LegacyCredentialsError::NotBool { key })
        })
    };
    if flag("use-clouds")? {
        return Err(LegacyCredentialsError::UsesCloudsYaml);
    }
    for key in ["ca-file", "cert-file", "key-file"] {
        if get(key).is_some() {
            return Err(LegacyCredentialsError::FilePath(key));
        }
    }
    let auth_url = get("auth-url").ok_or(LegacyCredentialsError::NoAuthUrl)?;

    let mut auth = Map::new();
    auth.insert("auth_url".into(), json!(auth_url));
    let app_id = first(&["application-credential-id"]);
    let app_name = first(&["application-credential-name"]);
    let app_secret = first(&["application-credential-secret"]);
    let user_name = get("username");
    let user_id = get("user-id");
    let password = get("password");
    let application = app_id.is_some() || app_name.is_some() || app_secret.is_some();

    let domain_id = get("domain-id");
    let domain_name = get("domain-name");
    let user_domain_id = get("user-domain-id").or(domain_id);
    let user_domain_name = get("user-domain-name").or(domain_name);

    if application {
        let secret = app_secret.ok_or(LegacyCredentialsError::Incomplete {
            present: "an application credential",
            missing: "application-credential-secret",
        })?;
        match (app_id, app_name) {
            (Some(id), _) => {
                auth.insert("application_credential_id".into(), json!(id));
            }
            (None, Some(name)) => {
                // A credential named, not identified, belongs to a user Keystone must find.
                if user_name.is_none() && user_id.is_none() {
                    return Err(LegacyCredentialsError::Incomplete {
                        present: "application-credential-name",
                        missing: "username or user-id (the credential's owner)",
                    });
                }
                auth.insert("application_credential_name".into(), json!(name));
            }
            (None, None) => {
                return Err(LegacyCredentialsError::Incomplete {
                    present: "application-credential-secret",
                    missing: "application-credential-id or application-credential-name",
                });
            }
        }
        auth.insert("application_credential_secret".into(), json!(secret));
        if app_id.is_none() {
            insert_user(
                &mut auth,
                user_name,
                user_id,
                user_domain_name,
                user_domain_id,
            );
        }
    } else {
        if user_name.is_none() && user_id.is_none() {
            return Err(if password.is_some() {
                LegacyCredentialsError::Incomplete {
                    present: "password",
                    missing: "username or user-id",
                }
            } else {
                LegacyCredentialsError::NoCredentials
            });
        }
        let password = password.ok_or(LegacyCredentialsError::Incomplete {
            present: "a user",
            missing: "password",
        })?;
        insert_user(
            &mut auth,
            user_name,
            user_id,
            user_domain_name,
            user_domain_id,
        );
        auth.insert("password".into(), json!(password));
        let project_id = first(&["tenant-id", "project-id"]);
        let project_name = first(&["tenant-name", "project-name"]);
        if let Some(id) = project_id {
            auth.insert("project_id".into(), json!(id));
        } else if let Some(name) = project_name {
            auth.insert("project_name".into(), json!(name));
            let pd_id = first(&["tenant-domain-id", "project-domain-id"]).or(domain_id);
            let pd_name = first(&["tenant-domain-name", "project-domain-name"]).or(domain_name);
            if let Some(id) = pd_id {
                auth.insert("project_domain_id".into(), json!(id));
            } else if let Some(name) = pd_name {
                auth.insert("project_domain_name".into(), json!(name));
            }
        }
    }

    let mut cloud = Map::new();
    if application {
        cloud.insert("auth_type".into(), json!("v3applicationcredential"));
    }
    cloud.insert("auth".into(), Value::Object(auth));
    cloud.insert("identity_api_version".into(), json!(3));
    if let Some(region) = get("region") {
        cloud.insert("region_name".into(), json!(region));
    }
    if flag("tls-insecure")? {
        cloud.insert("verify".into(), json!(false));
    }
    let file = json!({"clouds": {CLOUD_NAME: Value::Object(cloud)}});
    let yaml = operator_kit::assets::to_yaml(&file)
        .map_err(|e| LegacyCredentialsError::Invalid(e.to_string()))?;
    // What converts must also load, with the operators' own rules (e.g. a user name needs a
    // domain); their messages name fields, not values.
    openstack::CloudConfig::from_clouds_yaml(&yaml, CLOUD_NAME)
        .map_err(|e| LegacyCredentialsError::Invalid(e.to_string()))?;
    Ok(yaml)
}

fn insert_user(
    auth: &mut Map<String, Value>,
    name: Option<&str>,
    id: Option<&str>,
    domain_name: Option<&str>,
    domain_id: Option<&str>,
) {
    if let Some(id) = id {
        auth.insert("user_id".into(), json!(id));
    } else if let Some(name) = name {
        auth.insert("username".into(), json!(name));
        if let Some(d) = domain_id {
            auth.insert("user_domain_id".into(), json!(d));
        } else if let Some(d) = domain_name {
            auth.insert("user_domain_name".into(), json!(d));
        }
    }
}

/// The booleans gcfg (cloud-provider-openstack's INI reader) accepts.
fn parse_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cloud(yaml: &str) -> Value {
        let v: Value = operator_kit::assets::parse_values("clouds.yaml", yaml)
            .expect("YAML")
            .remove(0);
        v["clouds"][CLOUD_NAME].clone()
    }

    #[test]
    fn a_chart_password_config_converts() {
        let conf = "[Global]\nauth-url = https://keystone.example.com:5000/v3\nusername = \
                    svc\npassword = `s3cr;t#`\nregion = RegionOne\ntenant-name = kube\n\
                    domain-name = Default\n\n[BlockStorage]\nignore-volume-az = true\n";
        let c = cloud(&clouds_yaml_from_cloud_conf(conf).expect("converts"));
        assert_eq!(
            c,
            json!({"auth": {"auth_url": "https://keystone.example.com:5000/v3",
                "username": "svc", "user_domain_name": "Default", "password": "s3cr;t#",
                "project_name": "kube", "project_domain_name": "Default"},
                "identity_api_version": 3, "region_name": "RegionOne"})
        );
    }

    #[test]
    fn specific_domains_win_over_domain_name_and_ids_over_names() {
        let conf = "[Global]\nauth-url=https://k/v3\nuser-id=u1\npassword=p\n\
                    tenant-id=p1\ntenant-name=ignored\nuser-domain-name=Users\n\
                    domain-name=Default\ntls-insecure=true\n";
        let c = cloud(&clouds_yaml_from_cloud_conf(conf).expect("converts"));
        assert_eq!(c["auth"]["user_id"], "u1");
        assert_eq!(c["auth"]["project_id"], "p1");
        assert!(c["auth"].get("project_name").is_none());
        assert_eq!(c["verify"], false);
        let conf = "[Global]\nauth-url=https://k/v3\nusername=u\npassword=p\nproject-name=p\n\
                    user-domain-name=Users\nproject-domain-id=abc\ndomain-name=Default\n";
        let c = cloud(&clouds_yaml_from_cloud_conf(conf).expect("converts"));
        assert_eq!(c["auth"]["user_domain_name"], "Users");
        assert_eq!(c["auth"]["project_domain_id"], "abc");
    }

    #[test]
    fn application_credentials_convert() {
        let conf = "[Global]\nauth-url=https://k/v3\napplication-credential-id=abc\n\
                    application-credential-secret=shh\nregion=R\n";
        let c = cloud(&clouds_yaml_from_cloud_conf(conf).expect("converts"));
        assert_eq!(
            c,
            json!({"auth_type": "v3applicationcredential", "auth": {"auth_url": "https://k/v3",
                "application_credential_id": "abc", "application_credential_secret": "shh"},
                "identity_api_version": 3, "region_name": "R"})
        );
        let conf = "[Global]\nauth-url=https://k/v3\napplication-credential-name=ci\n\
                    application-credential-secret=shh\nusername=u\ndomain-name=Default\n";
        let c = cloud(&clouds_yaml_from_cloud_conf(conf).expect("converts"));
        assert_eq!(c["auth"]["application_credential_name"], "ci");
        assert_eq!(c["auth"]["username"], "u");
        assert_eq!(c["auth"]["user_domain_name"], "Default");
    }

    /// Every malformed input gets its own message, and no message holds a value.
    #[test]
    fn malformed_input_is_refused_without_echoing_secrets() {
        let cases: &[(&str, &str)] = &[
            ("", "no [Global]"),
            ("[Global\nauth-url=x\n", "line 1"),
            ("[Global]\npassword hunter2\n", "line 2"),
            (
                "[Global]\npassword = \"hunter2\n",
                "quote that does not end it",
            ),
            (
                "[Global]\npassword = \"hunt;er2\"\n",
                "quote that does not end it",
            ),
            ("[Global]\nauth-url = `https://k\n", "never closed"),
            ("[BlockStorage]\nbs-version=v3\n", "no [Global]"),
            ("[Global]\nusername=u\npassword=hunter2\n", "no auth-url"),
            ("[Global]\nauth-url=https://k/v3\n", "neither username"),
            (
                "[Global]\nauth-url=https://k/v3\npassword=hunter2\n",
                "no username or user-id",
            ),
            (
                "[Global]\nauth-url=https://k/v3\nusername=u\n",
                "no password",
            ),
            (
                "[Global]\nauth-url=https://k/v3\napplication-credential-id=a\n",
                "no application-credential-secret",
            ),
            (
                "[Global]\nauth-url=https://k/v3\napplication-credential-secret=hunter2\n",
                "no application-credential-id or application-credential-name",
            ),
            (
                "[Global]\nauth-url=https://k/v3\napplication-credential-name=n\napplication-credential-secret=hunter2\n",
                "the credential's owner",
            ),
            (
                "[Global]\nuse-clouds=true\nclouds-file=/etc/c.yaml\n",
                "use-clouds",
            ),
            (
                "[Global]\nuse-clouds=maybe\n",
                "use-clouds must be true or false",
            ),
            (
                "[Global]\nauth-url=https://k/v3\nusername=u\npassword=hunter2\nca-file=/etc/ca.crt\n",
                "ca-file",
            ),
            (
                "[Global]\nauth-url=https://k/v3\nusername=u\npassword=hunter2\ntls-insecure=sure\n",
                "tls-insecure must be true or false",
            ),
            // A user name without a domain, which Keystone v3 cannot resolve.
            (
                "[Global]\nauth-url=https://k/v3\nusername=u\npassword=hunter2\ntenant-id=p\n",
                "does not load",
            ),
        ];
        for (conf, want) in cases {
            let err = clouds_yaml_from_cloud_conf(conf)
                .expect_err(conf)
                .to_string();
            assert!(err.contains(want), "{conf:?}: {err}");
            assert!(!err.contains("hunter2"), "{conf:?} leaks: {err}");
        }
    }

    proptest::proptest! {
        /// Arbitrary text never panics: it converts or says why not.
        #[test]
        fn any_text_converts_or_is_refused(text in "(\\[Global\\]\n)?([a-z-]{1,12} ?= ?[ -~]{0,20}\n){0,8}") {
            let _ = clouds_yaml_from_cloud_conf(&text);
        }
    }
}
