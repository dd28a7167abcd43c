//! The client against openstack-sim over HTTP and HTTPS: token reuse, renewal, credential
//! change, errors by step and status, catalog lookups, AZ lists, the topology rule and Manila
//! share types, Cinder volume types.

use std::sync::Arc;
use std::time::Duration;

use openstack::{
    Client, ClientOptions, CloudConfig, ErrorKind, Interface, ProxySetting, Service, Session, Step,
    topology_enabled,
};
use openstack_sim::{
    DEFAULT_APP_CREDENTIAL_ID, DEFAULT_APP_CREDENTIAL_SECRET, DEFAULT_PASSWORD, DEFAULT_USER,
    Fault, OpenStackSim, SimConfig, SimService, SimShareType, SimVolumeType, Zone,
};

fn provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

async fn start(config: SimConfig) -> OpenStackSim {
    provider();
    OpenStackSim::start(config, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("sim starts")
}

fn options(sim: &OpenStackSim) -> ClientOptions {
    ClientOptions {
        ca_bundle: sim.ca_pem().map(|p| p.as_bytes().to_vec()),
        request_timeout: Duration::from_secs(10),
        proxy: ProxySetting::Disabled,
        ..ClientOptions::default()
    }
}

fn config(yaml: &str) -> CloudConfig {
    CloudConfig::from_clouds_yaml(yaml, "openstack").expect("valid clouds.yaml")
}

fn client(sim: &OpenStackSim) -> Client {
    Client::new(config(&sim.clouds_yaml("openstack")), &options(sim)).expect("client")
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn token_is_reused_across_calls() {
    let sim = start(SimConfig::default()).await;
    let c = client(&sim);
    for _ in 0..3 {
        assert_eq!(c.compute_availability_zones().await, Ok(names(&["nova"])));
        assert_eq!(c.volume_availability_zones().await, Ok(names(&["nova"])));
        let types = c.share_types().await.expect("share types");
        assert_eq!(types.len(), 1);
    }
    assert_eq!(sim.token_issuances(), 1, "{:#?}", sim.requests());
    assert_eq!(sim.count(SimService::Compute, "/os-availability-zone"), 3);
    assert_eq!(sim.count(SimService::Volume, "/os-availability-zone"), 3);
    assert_eq!(sim.count(SimService::Share, "/types"), 3);
    let auth = &sim.requests()[0];
    assert_eq!(auth.auth_method.as_deref(), Some("password"));
    assert!(
        auth.user_agent
            .as_deref()
            .is_some_and(|ua| ua.starts_with("csi-operator/")),
        "{auth:?}"
    );
}

#[tokio::test]
async fn concurrent_callers_share_one_token() {
    let sim = start(SimConfig::default()).await;
    let c = Arc::new(client(&sim));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let c = c.clone();
        tasks.push(tokio::spawn(
            async move { c.compute_availability_zones().await },
        ));
    }
    for t in tasks {
        assert!(t.await.expect("task").is_ok());
    }
    assert_eq!(sim.token_issuances(), 1);
}

#[tokio::test]
async fn https_with_the_generated_ca() {
    let sim = start(SimConfig {
        tls: true,
        ..SimConfig::default()
    })
    .await;
    assert!(sim.url().starts_with("https://"));
    let yaml = sim.clouds_yaml("openstack");
    let cfg = config(&yaml);
    assert_eq!(
        cfg.cacert_path.as_deref().map(std::path::Path::new),
        sim.ca_file()
    );
    // The path in clouds.yaml holds the same CA the caller may pass as bytes.
    let from_file = std::fs::read(cfg.cacert_path.as_deref().expect("cacert")).expect("ca file");
    let c = Client::new(
        cfg.clone(),
        &ClientOptions {
            ca_bundle: Some(from_file),
            ..options(&sim)
        },
    )
    .expect("client");
    assert_eq!(c.compute_availability_zones().await, Ok(names(&["nova"])));
    assert_eq!(c.share_types().await.map(|t| t.len()), Ok(1));
    assert_eq!(sim.token_issuances(), 1);

    // Without the CA the handshake fails, and the message says what to provide.
    let c = Client::new(
        cfg,
        &ClientOptions {
            ca_bundle: None,
            ..options(&sim)
        },
    )
    .expect("client");
    let e = c
        .compute_availability_zones()
        .await
        .expect_err("unknown CA");
    assert_eq!(e.kind(), ErrorKind::Tls, "{e}");
    assert_eq!(e.step(), Some(Step::Authenticate));
    assert!(e.to_string().contains("cacert"), "{e}");
}

#[tokio::test]
async fn verify_false_skips_certificate_checks() {
    let sim = start(SimConfig {
        tls: true,
        ..SimConfig::default()
    })
    .await;
    let mut cfg = config(&sim.clouds_yaml("openstack"));
    cfg.verify = false;
    let c = Client::new(
        cfg,
        &ClientOptions {
            ca_bundle: None,
            ..options(&sim)
        },
    )
    .expect("client");
    assert!(c.compute_availability_zones().await.is_ok());
}

#[tokio::test]
async fn bad_ca_bundle_is_a_config_error() {
    provider();
    let cfg = config(
        "clouds:\n  openstack:\n    auth: {auth_url: 'https://k/v3', user_id: u, password: p, project_id: x}\n",
    );
    let e = Client::new(
        cfg,
        &ClientOptions {
            ca_bundle: Some(b"not a pem".to_vec()),
            ..ClientOptions::default()
        },
    )
    .expect_err("no certificate");
    assert_eq!(e.kind(), ErrorKind::InvalidConfig);
    assert!(e.to_string().contains("CA bundle"), "{e}");
}

#[tokio::test]
async fn token_is_renewed_after_expiry() {
    let sim = start(SimConfig {
        token_lifetime: Duration::from_secs(2),
        ..SimConfig::default()
    })
    .await;
    let c = client(&sim);
    assert!(c.compute_availability_zones().await.is_ok());
    assert_eq!(sim.token_issuances(), 1);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(c.compute_availability_zones().await.is_ok());
    assert_eq!(sim.token_issuances(), 2);
    // The renewal happened before the call: no request was refused.
    assert!(
        sim.requests().iter().all(|r| r.status < 400),
        "{:#?}",
        sim.requests()
    );
}

#[tokio::test]
async fn revoked_token_is_replaced_once() {
    let sim = start(SimConfig::default()).await;
    let c = client(&sim);
    assert!(c.volume_availability_zones().await.is_ok());
    sim.revoke_tokens();
    assert_eq!(c.volume_availability_zones().await, Ok(names(&["nova"])));
    assert_eq!(sim.token_issuances(), 2);
    let statuses: Vec<u16> = sim.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![201, 200, 401, 201, 200]);
}

#[tokio::test]
async fn service_401_after_reauth_is_reported() {
    let sim = start(SimConfig::default()).await;
    let c = client(&sim);
    sim.inject(Fault::status(401).on(SimService::Compute));
    let e = c.compute_availability_zones().await.expect_err("401");
    assert_eq!(e.status(), Some(401));
    assert_eq!(e.step(), Some(Step::ListComputeZones));
    assert!(e.to_string().contains("token was rejected"), "{e}");
    assert_eq!(
        sim.token_issuances(),
        2,
        "one retry with a fresh token, no more"
    );
}

#[tokio::test]
async fn session_keeps_the_client_until_credentials_change() {
    let sim = start(SimConfig::default()).await;
    let session = Session::new();
    let opts = options(&sim);
    let a = session
        .client(config(&sim.clouds_yaml("openstack")), &opts)
        .expect("client");
    assert!(a.compute_availability_zones().await.is_ok());
    let b = session
        .client(config(&sim.clouds_yaml("openstack")), &opts)
        .expect("client");
    assert!(Arc::ptr_eq(&a, &b), "same credentials, same client");
    assert!(b.volume_availability_zones().await.is_ok());
    assert_eq!(sim.token_issuances(), 1);

    // Rotation: new password in Keystone and in the Secret.
    sim.set_password(DEFAULT_USER, "rotated-pw");
    let c = session
        .client(
            config(&sim.clouds_yaml_password("openstack", DEFAULT_USER, "rotated-pw")),
            &opts,
        )
        .expect("client");
    assert!(!Arc::ptr_eq(&a, &c), "new credentials, new client");
    assert_ne!(a.fingerprint(), c.fingerprint());
    assert!(c.compute_availability_zones().await.is_ok());
    assert_eq!(sim.token_issuances(), 2);
    let last_auth = sim
        .requests()
        .into_iter()
        .rfind(|r| r.issued_token)
        .expect("auth");
    assert_eq!(last_auth.status, 201);

    // A transport change alone (here the User-Agent) also gives a new client.
    let d = session
        .client(
            config(&sim.clouds_yaml_password("openstack", DEFAULT_USER, "rotated-pw")),
            &ClientOptions {
                user_agent: "other".into(),
                ..opts.clone()
            },
        )
        .expect("client");
    assert!(!Arc::ptr_eq(&c, &d));
}

#[tokio::test]
async fn wrong_password_is_rejected_by_keystone() {
    let sim = start(SimConfig::default()).await;
    let yaml = sim.clouds_yaml_password("openstack", DEFAULT_USER, "wrong-pw-123");
    let c = Client::new(config(&yaml), &options(&sim)).expect("client");
    let e = c.compute_availability_zones().await.expect_err("401");
    let msg = e.to_string();
    assert_eq!(e.kind(), ErrorKind::CredentialsRejected);
    assert_eq!(e.step(), Some(Step::Authenticate));
    assert!(
        msg.contains("the credentials were rejected by Keystone"),
        "{msg}"
    );
    assert!(
        msg.starts_with("authenticate with Keystone at http://"),
        "{msg}"
    );
    assert!(!msg.contains("wrong-pw-123"), "{msg}");
    assert!(!format!("{e:?}").contains("wrong-pw-123"));
    assert!(!format!("{c:?}").contains("wrong-pw-123"));
}

#[tokio::test]
async fn application_credentials() {
    let sim = start(SimConfig::default()).await;
    let yaml = sim.clouds_yaml_app_credential(
        "openstack",
        DEFAULT_APP_CREDENTIAL_ID,
        DEFAULT_APP_CREDENTIAL_SECRET,
    );
    let c = Client::new(config(&yaml), &options(&sim)).expect("client");
    assert_eq!(c.volume_availability_zones().await, Ok(names(&["nova"])));
    let auth = &sim.requests()[0];
    assert_eq!(auth.auth_method.as_deref(), Some("application_credential"));
    assert_eq!(auth.user_id.as_deref(), Some("u-admin"));

    let yaml = sim.clouds_yaml_app_credential("openstack", DEFAULT_APP_CREDENTIAL_ID, "nope-xyz");
    let c = Client::new(config(&yaml), &options(&sim)).expect("client");
    let e = c.volume_availability_zones().await.expect_err("401");
    assert_eq!(e.kind(), ErrorKind::CredentialsRejected);
    assert!(!e.to_string().contains("nope-xyz"));

    // Deleting the application credential revokes its tokens; re-auth then fails.
    let yaml = sim.clouds_yaml_app_credential(
        "openstack",
        DEFAULT_APP_CREDENTIAL_ID,
        DEFAULT_APP_CREDENTIAL_SECRET,
    );
    let c = Client::new(config(&yaml), &options(&sim)).expect("client");
    assert!(c.authenticate().await.is_ok());
    sim.remove_app_credential(DEFAULT_APP_CREDENTIAL_ID);
    let e = c.compute_availability_zones().await.expect_err("revoked");
    assert_eq!(e.step(), Some(Step::Authenticate));
    assert_eq!(e.status(), Some(401));
}

#[tokio::test]
async fn forbidden_and_not_found_name_the_step() {
    let sim = start(SimConfig::default()).await;
    let c = client(&sim);
    sim.inject(Fault::status(403).on(SimService::Volume));
    let e = c.volume_availability_zones().await.expect_err("403");
    assert_eq!(e.kind(), ErrorKind::Forbidden);
    let msg = e.to_string();
    assert!(
        msg.starts_with("list Cinder (volume) availability zones at http://"),
        "{msg}"
    );
    assert!(msg.contains("HTTP 403"), "{msg}");
    assert!(
        msg.contains("injected fault"),
        "the server's message is kept: {msg}"
    );
    sim.clear_faults();

    let mut cfg = config(&sim.clouds_yaml("openstack"));
    cfg.auth_url = format!("{}/nowhere", sim.url());
    let c = Client::new(cfg, &options(&sim)).expect("client");
    let e = c.authenticate().await.expect_err("404");
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("auth.auth_url"), "{e}");
}

#[tokio::test]
async fn keystone_503_then_recovery() {
    let sim = start(SimConfig::default()).await;
    let c = client(&sim);
    sim.inject(Fault::status(503).on(SimService::Identity).times(1));
    let e = c.share_types().await.expect_err("503");
    assert_eq!(e.kind(), ErrorKind::ServerError);
    assert_eq!(e.step(), Some(Step::Authenticate));
    assert!(e.to_string().contains("HTTP 503"), "{e}");
    assert!(
        c.share_types().await.is_ok(),
        "the fault was for one request"
    );
    assert_eq!(sim.token_issuances(), 1);
}

#[tokio::test]
async fn timeout_is_reported_as_such() {
    let sim = start(SimConfig::default()).await;
    let c = Client::new(
        config(&sim.clouds_yaml("openstack")),
        &ClientOptions {
            request_timeout: Duration::from_millis(300),
            ..options(&sim)
        },
    )
    .expect("client");
    assert!(c.authenticate().await.is_ok());
    sim.inject(Fault::latency(Duration::from_secs(5)).on(SimService::Compute));
    let e = c.compute_availability_zones().await.expect_err("timeout");
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert_eq!(e.step(), Some(Step::ListComputeZones));
    assert!(e.to_string().contains("timeout"), "{e}");
}

#[tokio::test]
async fn unreachable_keystone() {
    provider();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let cfg = config(&format!(
        "clouds:\n  openstack:\n    auth: {{auth_url: 'http://127.0.0.1:{port}/v3', user_id: u, password: p, project_id: x}}\n"
    ));
    let c = Client::new(
        cfg,
        &ClientOptions {
            proxy: ProxySetting::Disabled,
            ..ClientOptions::default()
        },
    )
    .expect("client");
    let e = c.authenticate().await.expect_err("refused");
    assert_eq!(e.kind(), ErrorKind::Unreachable, "{e}");
    assert!(e.to_string().contains("cannot connect"), "{e}");
}

#[tokio::test]
async fn manila_absent_from_the_catalog() {
    let sim = start(SimConfig {
        share_types: None,
        ..SimConfig::default()
    })
    .await;
    let c = client(&sim);
    assert_eq!(c.has_service(Service::SharedFileSystem).await, Ok(false));
    let e = c.share_types().await.expect_err("no manila");
    assert_eq!(e.kind(), ErrorKind::MissingEndpoint);
    let msg = e.to_string();
    assert!(msg.starts_with("catalog lookup:"), "{msg}");
    assert!(msg.contains("sharev2"), "{msg}");
    assert!(msg.contains("compute, identity, volumev3"), "{msg}");

    // Manila appears: a new token sees it.
    sim.add_share_type(SimShareType::new("ceph_fs"));
    c.forget_token().await;
    assert_eq!(c.has_service(Service::SharedFileSystem).await, Ok(true));
    let types = c.share_types().await.expect("share types");
    assert_eq!(types[0].name, "ceph_fs");
}

/// `GET /v3/auth/catalog` requests in the sim's log.
fn catalog_reads(sim: &OpenStackSim) -> usize {
    sim.count(SimService::Identity, "/v3/auth/catalog")
}

#[tokio::test]
async fn a_service_in_the_token_catalog_costs_no_extra_call() {
    let sim = start(SimConfig::default()).await;
    let c = client(&sim);
    assert_eq!(c.has_service(Service::SharedFileSystem).await, Ok(true));
    assert_eq!(c.has_service(Service::SharedFileSystem).await, Ok(true));
    assert_eq!(sim.token_issuances(), 1);
    assert_eq!(sim.requests().len(), 1, "{:#?}", sim.requests());
}

#[tokio::test]
async fn manila_added_while_the_token_is_valid_is_seen_at_the_next_check() {
    let sim = start(SimConfig {
        share_types: None,
        ..SimConfig::default()
    })
    .await;
    let c = client(&sim);
    assert_eq!(c.has_service(Service::SharedFileSystem).await, Ok(false));
    assert_eq!(
        sim.token_issuances(),
        1,
        "a fresh token is trusted as it is"
    );
    assert_eq!(catalog_reads(&sim), 0);

    // The cached token (valid for hours) has a catalog without Manila; the cloud adds it.
    sim.add_share_type(SimShareType::new("ceph_fs"));
    assert_eq!(c.has_service(Service::SharedFileSystem).await, Ok(true));
    assert_eq!(
        catalog_reads(&sim),
        1,
        "absence is confirmed with the current catalog"
    );
    assert_eq!(sim.token_issuances(), 1, "without a new token");
    // The current catalog replaced the token's: Manila is called with the same token.
    let types = c.share_types().await.expect("share types");
    assert_eq!(types[0].name, "ceph_fs");

    // Present: the cached catalog is trusted, no further call.
    assert_eq!(c.has_service(Service::SharedFileSystem).await, Ok(true));
    assert_eq!(catalog_reads(&sim), 1);
    assert_eq!(sim.token_issuances(), 1);
    let log = sim.requests();
    let read = log
        .iter()
        .find(|r| r.path.ends_with("/auth/catalog"))
        .expect("logged");
    assert_eq!((read.method.as_str(), read.status), ("GET", 200));
    assert_eq!(read.user_id.as_deref(), Some("u-admin"));
    assert_eq!(read.token, log[0].token, "the cached token was presented");
}

#[tokio::test]
async fn manila_absent_from_both_catalogs_is_absent() {
    let sim = start(SimConfig {
        share_types: None,
        ..SimConfig::default()
    })
    .await;
    let c = client(&sim);
    assert_eq!(c.has_service(Service::SharedFileSystem).await, Ok(false));
    for reads in 1..=3 {
        assert_eq!(c.has_service(Service::SharedFileSystem).await, Ok(false));
        assert_eq!(catalog_reads(&sim), reads, "one catalog read per check");
    }
    assert_eq!(sim.token_issuances(), 1, "one token for all of them");
}

#[tokio::test]
async fn a_refused_token_at_the_catalog_means_a_new_token() {
    let sim = start(SimConfig {
        share_types: None,
        ..SimConfig::default()
    })
    .await;
    let c = client(&sim);
    assert_eq!(c.has_service(Service::SharedFileSystem).await, Ok(false));
    // The token is revoked (or expired early) and the cloud adds Manila.
    sim.revoke_tokens();
    sim.add_share_type(SimShareType::new("ceph_fs"));
    assert_eq!(c.has_service(Service::SharedFileSystem).await, Ok(true));
    assert_eq!(sim.token_issuances(), 2);
    let statuses: Vec<(String, u16)> = sim
        .requests()
        .iter()
        .map(|r| (r.path.clone(), r.status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("/identity/v3/auth/tokens".to_string(), 201),
            ("/identity/v3/auth/catalog".to_string(), 401),
            ("/identity/v3/auth/tokens".to_string(), 201),
        ]
    );
    assert_eq!(c.share_types().await.expect("share types").len(), 1);
    assert_eq!(sim.token_issuances(), 2);
}

#[tokio::test]
async fn a_malformed_or_failed_catalog_answer_is_a_clear_error() {
    let sim = start(SimConfig {
        share_types: None,
        ..SimConfig::default()
    })
    .await;
    let c = client(&sim);
    assert_eq!(c.has_service(Service::SharedFileSystem).await, Ok(false));
    for body in [r#"{"catalog": 5}"#, "<html>", ""] {
        sim.inject(
            Fault::respond(200, body)
                .on_path("/identity/v3/auth/catalog")
                .times(1),
        );
        let e = c
            .has_service(Service::SharedFileSystem)
            .await
            .expect_err(body);
        assert_eq!(e.kind(), ErrorKind::InvalidResponse, "{body}: {e}");
        assert_eq!(e.step(), Some(Step::ReadCatalog));
        let msg = e.to_string();
        assert!(
            msg.contains("read the service catalog from Keystone"),
            "{msg}"
        );
        assert!(msg.contains("not a Keystone v3 catalog"), "{msg}");
    }
    sim.inject(
        Fault::status(503)
            .on_path("/identity/v3/auth/catalog")
            .times(1),
    );
    let e = c
        .has_service(Service::SharedFileSystem)
        .await
        .expect_err("503");
    assert_eq!(
        (e.kind(), e.step()),
        (ErrorKind::ServerError, Some(Step::ReadCatalog))
    );
    assert_eq!(
        sim.token_issuances(),
        1,
        "no new token for a failed catalog read"
    );
    // The next answer is read as usual.
    assert_eq!(c.has_service(Service::SharedFileSystem).await, Ok(false));
}

#[tokio::test]
async fn an_oversized_answer_is_refused_not_buffered() {
    let sim = start(SimConfig::default()).await;
    let c = client(&sim);
    c.authenticate().await.expect("token");
    let huge = format!(
        r#"{{"availabilityZoneInfo": [], "pad": "{}"}}"#,
        "x".repeat(9 << 20)
    );
    sim.inject(Fault::respond(200, huge).on(SimService::Compute).times(1));
    let e = c.compute_availability_zones().await.expect_err("too large");
    assert_eq!(e.kind(), ErrorKind::InvalidResponse, "{e}");
    assert!(e.to_string().contains("larger than 8 MiB"), "{e}");
    // The next answer is read as usual.
    assert_eq!(c.compute_availability_zones().await, Ok(names(&["nova"])));
}

#[tokio::test]
async fn truncated_and_malformed_answers_are_named_not_panicked_on() {
    let sim = start(SimConfig::default()).await;
    let c = client(&sim);
    c.authenticate().await.expect("token");
    for body in [
        r#"{"availabilityZoneInfo": [{"zoneName": "no"#,
        "",
        "[]",
        "null",
        "\u{0}",
    ] {
        sim.inject(Fault::respond(200, body).on(SimService::Compute).times(1));
        let e = c.compute_availability_zones().await.expect_err(body);
        assert_eq!(e.kind(), ErrorKind::InvalidResponse, "{body}: {e}");
        assert!(e.to_string().contains("list Nova"), "{e}");
    }
}

#[tokio::test]
async fn a_server_that_echoes_the_password_never_leaks_it() {
    let sim = start(SimConfig::default()).await;
    let yaml = sim.clouds_yaml("openstack");
    let c = client(&sim);
    let password = DEFAULT_PASSWORD;
    assert!(yaml.contains(password));
    for pad in [0usize, 280, 295, 299] {
        let body = format!(
            r#"{{"error": {{"code": 401, "message": "{}bad password {password} for user"}}}}"#,
            "p".repeat(pad)
        );
        sim.inject(Fault::respond(401, body).on(SimService::Identity).times(1));
        c.forget_token().await;
        let e = c.authenticate().await.expect_err("refused");
        let shown = format!("{e} {e:?}");
        assert!(!shown.contains(password), "pad {pad}: {shown}");
        assert!(
            !shown.contains(&password[..password.len().min(6)]),
            "pad {pad}: {shown}"
        );
    }
}

#[tokio::test]
async fn hidden_catalog_entry() {
    let sim = start(SimConfig::default()).await;
    sim.hide_catalog_entry("volumev3");
    let c = client(&sim);
    let e = c.volume_availability_zones().await.expect_err("no cinder");
    assert_eq!(e.kind(), ErrorKind::MissingEndpoint);
    assert!(e.to_string().contains("Cinder"), "{e}");
    assert!(c.compute_availability_zones().await.is_ok());
}

#[tokio::test]
async fn share_types_change_at_runtime_with_microversion() {
    let sim = start(SimConfig::default()).await;
    let c = client(&sim);
    sim.add_share_type(SimShareType::new("gold"));
    let got: Vec<String> = c
        .share_types()
        .await
        .expect("types")
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(got, names(&["default", "gold"]));
    sim.remove_share_type("default");
    let got = c.share_types().await.expect("types");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].name, "gold");
    assert_eq!(
        got[0]
            .extra_specs
            .get("driver_handles_share_servers")
            .and_then(|v| v.as_str()),
        Some("False")
    );
    let rec = sim
        .requests()
        .into_iter()
        .rfind(|r| r.service == SimService::Share)
        .expect("share call");
    assert_eq!(
        rec.manila_microversion.as_deref(),
        Some(openstack::MANILA_MICROVERSION)
    );
    sim.remove_share_type("gold");
    assert_eq!(c.share_types().await.map(|t| t.len()), Ok(0));
}

#[tokio::test]
async fn availability_zones_and_topology() {
    let sim = start(SimConfig::default()).await;
    let c = client(&sim);
    let topo = || async {
        let compute = c.compute_availability_zones().await.expect("compute");
        let volume = c.volume_availability_zones().await.expect("volume");
        topology_enabled(&compute, &volume)
    };

    sim.set_compute_zones(vec![Zone::available("az2"), Zone::available("az1")]);
    sim.set_volume_zones(vec![Zone::available("az1"), Zone::available("az2")]);
    assert!(topo().await, "equal sets");
    assert_eq!(
        c.compute_availability_zones().await,
        Ok(names(&["az1", "az2"]))
    );

    sim.set_volume_zones(vec![Zone::available("az1"), Zone::available("az3")]);
    assert!(!topo().await, "compute AZ az2 missing from volume");

    sim.set_volume_zones(vec![Zone::available("nova")]);
    sim.set_compute_zones(vec![
        Zone::available("az1"),
        Zone::available("az2"),
        Zone::available("az3"),
    ]);
    assert!(!topo().await, "more compute than volume AZs");

    sim.set_compute_zones(vec![Zone::available("az1"), Zone::unavailable("az9")]);
    sim.set_volume_zones(vec![
        Zone::available("az1"),
        Zone::available("az2"),
        Zone::unavailable("az9"),
    ]);
    assert_eq!(c.compute_availability_zones().await, Ok(names(&["az1"])));
    assert_eq!(
        c.volume_availability_zones().await,
        Ok(names(&["az1", "az2"]))
    );
    assert!(
        topo().await,
        "unavailable zones are ignored; extra volume AZs are fine"
    );

    sim.set_compute_zones(vec![Zone::unavailable("az1")]);
    let e = c
        .compute_availability_zones()
        .await
        .expect_err("none available");
    assert!(
        e.to_string().contains("no available availability zone"),
        "{e}"
    );
    sim.set_volume_zones(vec![]);
    let e = c.volume_availability_zones().await.expect_err("empty");
    assert!(
        e.to_string()
            .contains("Cinder reports no availability zone"),
        "{e}"
    );
    assert_eq!(sim.token_issuances(), 1);
}

#[tokio::test]
async fn interface_and_region_select_the_endpoint() {
    let sim = start(SimConfig::default()).await;
    let mut cfg = config(&sim.clouds_yaml("openstack"));
    cfg.interface = Interface::Internal;
    let c = Client::new(cfg.clone(), &options(&sim)).expect("client");
    assert!(c.compute_availability_zones().await.is_ok());
    let rec = sim
        .requests()
        .into_iter()
        .rfind(|r| r.service == SimService::Compute)
        .expect("compute call");
    assert_eq!(rec.interface.as_deref(), Some("internal"));

    cfg.interface = Interface::Admin;
    let c = Client::new(cfg.clone(), &options(&sim)).expect("client");
    let e = c.compute_availability_zones().await.expect_err("no admin");
    assert!(e.to_string().contains("no admin endpoint"), "{e}");

    cfg.interface = Interface::Public;
    cfg.region = Some("RegionTwo".into());
    let c = Client::new(cfg, &options(&sim)).expect("client");
    let e = c
        .endpoint(Service::Compute)
        .await
        .expect_err("no such region");
    let msg = e.to_string();
    assert!(msg.contains("in region \"RegionTwo\""), "{msg}");
    assert!(msg.contains("public in region \"RegionOne\""), "{msg}");
}

#[tokio::test]
async fn explicit_proxy_carries_every_request() {
    let sim = start(SimConfig::default()).await;
    let mut cfg = config(&sim.clouds_yaml("openstack"));
    // Keystone under a name that only the proxy (the sim) can serve.
    cfg.auth_url = "http://keystone.invalid/identity/v3".into();
    let c = Client::new(
        cfg,
        &ClientOptions {
            proxy: ProxySetting::Explicit {
                url: sim.url(),
                no_proxy: None,
            },
            ..options(&sim)
        },
    )
    .expect("client");
    assert!(c.compute_availability_zones().await.is_ok());
    let reqs = sim.requests();
    assert_eq!(reqs[0].proxied_host.as_deref(), Some("keystone.invalid"));
    assert!(reqs.iter().all(|r| r.proxied_host.is_some()), "{reqs:#?}");
}

#[tokio::test]
async fn sim_rejects_unknown_users_and_bad_bodies() {
    let sim = start(SimConfig::default()).await;
    let yaml = sim.clouds_yaml_password("openstack", "nobody", DEFAULT_PASSWORD);
    let c = Client::new(config(&yaml), &options(&sim)).expect("client");
    let e = c.authenticate().await.expect_err("unknown user");
    assert_eq!(e.status(), Some(401));
    let rec = &sim.requests()[0];
    assert!(!rec.issued_token);
    assert_eq!(rec.status, 401);
}

#[tokio::test]
async fn volume_types_are_listed_with_their_visibility() {
    let sim = start(SimConfig::default()).await;
    let c = client(&sim);
    let types = c.volume_types().await.expect("volume types");
    assert_eq!(
        types
            .iter()
            .map(|t| (t.name.as_str(), t.is_public))
            .collect::<Vec<_>>(),
        [("__DEFAULT__", true)]
    );
    sim.handle().set_volume_types(vec![
        SimVolumeType::public("ssd"),
        SimVolumeType::private("replicated"),
    ]);
    let types = c.volume_types().await.expect("volume types");
    assert_eq!(
        types
            .iter()
            .map(|t| (t.name.as_str(), t.is_public))
            .collect::<Vec<_>>(),
        [("ssd", true), ("replicated", false)]
    );
    // A broken answer names the step and what was wrong, never a credential.
    sim.handle()
        .inject(Fault::respond(200, "{\"volume_types\": 3}").on(SimService::Volume));
    let e = c.volume_types().await.expect_err("malformed answer");
    assert_eq!(e.kind(), ErrorKind::InvalidResponse);
    let msg = e.to_string();
    assert!(msg.contains("list Cinder volume types"), "{msg}");
    assert!(!msg.contains(DEFAULT_PASSWORD), "{msg}");
}
