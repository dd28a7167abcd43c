//! clouds.yaml parsing: every supported shape, and malformed input with messages that say what
//! is wrong without quoting a secret.

use openstack::{
    AppCredentialRef, AuthMethod, CloudConfig, DEFAULT_CLOUD, DomainRef, Interface, ProjectRef,
    UserRef,
};

fn parse(yaml: &str) -> Result<CloudConfig, String> {
    CloudConfig::from_clouds_yaml(yaml, DEFAULT_CLOUD).map_err(|e| e.to_string())
}

fn err(yaml: &str) -> String {
    parse(yaml).expect_err("must fail")
}

const PASSWORD: &str = r#"
clouds:
  openstack:
    auth:
      auth_url: https://keystone.example.com:5000/v3
      username: kube
      password: "s3cr3t-pw"
      project_name: shiftstack
      user_domain_name: Default
      project_domain_name: Default
    region_name: regionOne
    interface: internal
    cacert: /etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem
    identity_api_version: 3
    volume_api_version: 3
"#;

#[test]
fn password_cloud() {
    let c = parse(PASSWORD).expect("valid");
    assert_eq!(c.cloud_name, "openstack");
    assert_eq!(c.auth_url, "https://keystone.example.com:5000/v3");
    assert_eq!(c.region.as_deref(), Some("regionOne"));
    assert_eq!(c.interface, Interface::Internal);
    assert!(c.verify);
    assert_eq!(
        c.cacert_path.as_deref(),
        Some("/etc/kubernetes/static-pod-resources/configmaps/cloud-config/ca-bundle.pem")
    );
    let AuthMethod::Password {
        user,
        password,
        project,
    } = &c.auth
    else {
        panic!("password auth expected");
    };
    assert_eq!(
        user,
        &UserRef::Name {
            name: "kube".into(),
            domain: DomainRef::Name("Default".into())
        }
    );
    assert_eq!(password.expose(), "s3cr3t-pw");
    assert_eq!(
        project,
        &ProjectRef::Name {
            name: "shiftstack".into(),
            domain: DomainRef::Name("Default".into())
        }
    );
}

#[test]
fn debug_never_shows_the_password() {
    let c = parse(PASSWORD).expect("valid");
    let dbg = format!("{c:?}");
    assert!(!dbg.contains("s3cr3t-pw"), "{dbg}");
    assert!(dbg.contains("<redacted>"), "{dbg}");
}

#[test]
fn ids_instead_of_names_and_defaults() {
    let c = parse(
        r#"
clouds:
  openstack:
    auth:
      auth_url: http://k/identity
      user_id: u-1
      password: 123456
      project_id: p-1
"#,
    )
    .expect("valid");
    assert_eq!(c.interface, Interface::Public, "public is the default");
    assert_eq!(c.region, None);
    let AuthMethod::Password {
        user,
        project,
        password,
    } = &c.auth
    else {
        panic!("password auth expected");
    };
    assert_eq!(user, &UserRef::Id("u-1".into()));
    assert_eq!(project, &ProjectRef::Id("p-1".into()));
    assert_eq!(
        password.expose(),
        "123456",
        "a numeric password is still a password"
    );

    // Plain scalars keep their text exactly (no float or octal reinterpretation).
    let c = parse(
        "clouds:\n  openstack:\n    auth: {auth_url: 'http://k', user_id: u, password: 1.10, project_id: x}\n",
    )
    .expect("valid");
    let AuthMethod::Password { password, .. } = &c.auth else {
        panic!("password auth expected");
    };
    assert_eq!(password.expose(), "1.10");
}

#[test]
fn domain_name_fills_user_and_project_domains() {
    let c = parse(
        r#"
clouds:
  openstack:
    auth:
      auth_url: http://k/v3
      username: u
      password: p
      project_name: proj
      domain_id: d-1
"#,
    )
    .expect("valid");
    let AuthMethod::Password { user, project, .. } = &c.auth else {
        panic!("password auth expected");
    };
    assert_eq!(
        user,
        &UserRef::Name {
            name: "u".into(),
            domain: DomainRef::Id("d-1".into())
        }
    );
    assert_eq!(
        project,
        &ProjectRef::Name {
            name: "proj".into(),
            domain: DomainRef::Id("d-1".into())
        }
    );
}

#[test]
fn application_credential_by_id_and_by_name() {
    let c = parse(
        r#"
clouds:
  openstack:
    auth_type: v3applicationcredential
    auth:
      auth_url: https://k:5000
      application_credential_id: ac-1
      application_credential_secret: ac-s3cret
"#,
    )
    .expect("valid");
    let AuthMethod::ApplicationCredential { credential, secret } = &c.auth else {
        panic!("application credential expected");
    };
    assert_eq!(credential, &AppCredentialRef::Id("ac-1".into()));
    assert_eq!(secret.expose(), "ac-s3cret");
    assert!(!format!("{c:?}").contains("ac-s3cret"));

    // No auth_type, but application-credential keys: gophercloud picks that method too.
    let c = parse(
        r#"
clouds:
  openstack:
    auth:
      auth_url: https://k:5000
      application_credential_name: op
      application_credential_secret: s
      username: kube
      user_domain_id: default
"#,
    )
    .expect("valid");
    assert_eq!(
        c.auth,
        AuthMethod::ApplicationCredential {
            credential: AppCredentialRef::Name {
                name: "op".into(),
                user: UserRef::Name {
                    name: "kube".into(),
                    domain: DomainRef::Id("default".into())
                }
            },
            secret: openstack::Secret::new("s"),
        }
    );
}

#[test]
fn other_cloud_is_selectable_and_verify_false() {
    let yaml = r#"
clouds:
  openstack:
    auth: {auth_url: "http://a/v3", user_id: u, password: p, project_id: x}
  other:
    auth: {auth_url: "http://b/v3", user_id: u, password: p, project_id: x}
    verify: false
    interface: adminURL
"#;
    let c = CloudConfig::from_clouds_yaml(yaml, "other").expect("valid");
    assert_eq!(c.auth_url, "http://b/v3");
    assert!(!c.verify);
    assert_eq!(c.interface, Interface::Admin);
}

#[test]
fn insecure_settings_are_named_and_secure_ones_are_not() {
    assert!(
        parse(PASSWORD)
            .expect("valid")
            .insecure_settings()
            .is_empty()
    );
    let yaml = r#"
clouds:
  openstack:
    auth: {auth_url: "http://admin:hunter2@keystone.example.com:5000/v3", user_id: u, password: p, project_id: x}
    verify: false
"#;
    let found = CloudConfig::from_clouds_yaml(yaml, "openstack")
        .expect("valid")
        .insecure_settings();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].contains("verify: false") && found[0].contains("cacert"),
        "{}",
        found[0]
    );
    assert!(
        found[1].contains("plain HTTP") && found[1].contains("https://"),
        "{}",
        found[1]
    );
    assert!(
        !found[1].contains("hunter2"),
        "user-info never shown: {}",
        found[1]
    );
}

#[test]
fn not_yaml() {
    let e = err("clouds: [unclosed\n  password: hunter2-secret");
    assert!(
        e.starts_with("parse clouds.yaml: not a valid clouds.yaml document"),
        "{e}"
    );
    assert!(!e.contains("hunter2-secret"), "{e}");
}

#[test]
fn empty_file() {
    assert!(err("").contains("the file is empty"));
    assert!(err("   \n").contains("the file is empty"));
}

#[test]
fn no_clouds_key() {
    let e = err("foo: bar\n");
    assert!(e.contains("no top-level `clouds:` mapping"), "{e}");
}

#[test]
fn clouds_is_not_a_mapping() {
    let e = err("clouds: [a, b]\n");
    assert!(e.contains("not a valid clouds.yaml document"), "{e}");
}

#[test]
fn cloud_missing_names_the_ones_present() {
    let e = err("clouds:\n  mycloud:\n    auth: {auth_url: 'http://k/v3'}\n");
    assert!(e.contains("no cloud named \"openstack\""), "{e}");
    assert!(e.contains("\"mycloud\""), "{e}");
    let e = err("clouds: {}\n");
    assert!(e.contains("defines no cloud"), "{e}");
}

#[test]
fn unknown_auth_type() {
    let e = err(
        "clouds:\n  openstack:\n    auth_type: v3oidcpassword\n    auth: {auth_url: 'http://k/v3'}\n",
    );
    assert!(e.contains("unknown auth_type \"v3oidcpassword\""), "{e}");
    assert!(e.contains("v3applicationcredential"), "{e}");
    let e =
        err("clouds:\n  openstack:\n    auth_type: token\n    auth: {auth_url: 'http://k/v3'}\n");
    assert!(e.contains("not supported"), "{e}");
}

#[test]
fn missing_password() {
    let e = err(
        "clouds:\n  openstack:\n    auth: {auth_url: 'http://k/v3', username: u, \
         user_domain_name: D, project_id: p}\n",
    );
    assert!(
        e.contains("cloud \"openstack\": auth.password is missing"),
        "{e}"
    );
}

#[test]
fn missing_pieces_are_named() {
    let cases = [
        (
            "clouds:\n  openstack:\n    region_name: r\n",
            "no `auth:` section",
        ),
        ("clouds:\n  openstack:\n", "no `auth:` section"),
        (
            "clouds:\n  openstack:\n    auth: {username: u, password: p}\n",
            "auth.auth_url is missing",
        ),
        (
            "clouds:\n  openstack:\n    auth: {auth_url: 'keystone:5000', user_id: u, password: p, project_id: x}\n",
            "must start with http:// or https://",
        ),
        (
            "clouds:\n  openstack:\n    auth: {auth_url: 'http://k', password: p, project_id: x}\n",
            "auth.username (or auth.user_id) is missing",
        ),
        (
            "clouds:\n  openstack:\n    auth: {auth_url: 'http://k', username: u, password: p, project_id: x}\n",
            "needs a domain: set auth.user_domain_name",
        ),
        (
            "clouds:\n  openstack:\n    auth: {auth_url: 'http://k', user_id: u, password: p, project_name: x}\n",
            "needs a domain: set auth.project_domain_name",
        ),
        (
            "clouds:\n  openstack:\n    auth: {auth_url: 'http://k', user_id: u, password: p}\n",
            "no project",
        ),
        (
            "clouds:\n  openstack:\n    auth_type: v3applicationcredential\n    auth: {auth_url: 'http://k', application_credential_id: a}\n",
            "application_credential_secret is missing",
        ),
        (
            "clouds:\n  openstack:\n    auth_type: v3applicationcredential\n    auth: {auth_url: 'http://k', application_credential_secret: s}\n",
            "application_credential_id (or application_credential_name",
        ),
        (
            "clouds:\n  openstack:\n    identity_api_version: 2\n    auth: {auth_url: 'http://k', user_id: u, password: p, project_id: x}\n",
            "only Keystone v3",
        ),
        (
            "clouds:\n  openstack:\n    interface: private\n    auth: {auth_url: 'http://k', user_id: u, password: p, project_id: x}\n",
            "interface \"private\" is not one of public, internal, admin",
        ),
    ];
    for (yaml, want) in cases {
        let e = err(yaml);
        assert!(e.contains(want), "for {yaml:?}: got {e}");
    }
}

#[test]
fn secret_of_the_wrong_shape_is_not_echoed() {
    let e = err(
        "clouds:\n  openstack:\n    auth:\n      auth_url: http://k\n      user_id: u\n      \
         password: [hunter2-secret]\n      project_id: x\n",
    );
    assert!(e.contains("line 6"), "the location is given: {e}");
    assert!(!e.contains("hunter2-secret"), "{e}");
}

#[test]
fn wrong_type_in_a_plain_field_is_explained() {
    let e = err(
        "clouds:\n  openstack:\n    verify: maybe\n    auth: {auth_url: 'http://k', user_id: u, password: p, project_id: x}\n",
    );
    assert!(e.contains("not a valid clouds.yaml document"), "{e}");
}
