//! The metrics endpoint as OpenShift's monitoring stack meets it: an operator process
//! (operator-kit's `process::run`, under its own service account with RBAC enforced) serves
//! `/metrics` over HTTPS with the certificate the service-ca stand-in issued for its Service;
//! Prometheus' service account, which holds `get /metrics`, scrapes it; a service account
//! without that right is refused with 403, a request without a token with 401; `/healthz` and
//! `/readyz` answer anyone; a rotated certificate is served without a restart.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::serde::de::DeserializeOwned;
use kube::Client;
use kube::api::{Api, PostParams};
use kube_sim::{KubeSim, RbacConfig, SimConfig};
use operator_kit::metrics::Metrics;
use operator_kit::process::{self, EndpointOptions, ProcessOptions, Reconciler};
use operator_kit::runtime::{LoopOptions, Outcome};
use operator_kit::serving::{CertSource, Serving};
use serde_json::json;
use testbed::service_ca::ServiceCa;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::{self, pki_types::CertificateDer, pki_types::ServerName};

const NS: &str = "ops";
const SERVICE: &str = "operator-metrics";
const SECRET: &str = "operator-serving-cert";
const OPERATOR: &str = "system:serviceaccount:ops:operator";
const PROMETHEUS: &str = "system:serviceaccount:openshift-monitoring:prometheus-k8s";
const INTRUDER: &str = "system:serviceaccount:openshift-monitoring:intruder";
const DEADLINE: Duration = Duration::from_secs(20);

fn typed<T: DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).expect("a valid object")
}

async fn create<K>(api: &Api<K>, v: serde_json::Value)
where
    K: kube::Resource + Clone + DeserializeOwned + k8s_openapi::serde::Serialize + std::fmt::Debug,
{
    api.create(&PostParams::default(), &typed(v))
        .await
        .expect("created");
}

/// The cluster: RBAC on; the operator may hold its lease and create reviews (as
/// `system:auth-delegator` grants); Prometheus may `get /metrics` (cluster-monitoring's
/// ClusterRole); the intruder may not; the operator's metrics Service asks service-ca for a
/// certificate.
async fn cluster() -> (KubeSim, Client) {
    let sim = KubeSim::start(
        SimConfig {
            workloads: None,
            rbac: Some(RbacConfig::default()),
            ..SimConfig::default()
        },
        "127.0.0.1:0".parse().expect("address"),
    )
    .await
    .expect("kube-sim starts");
    let admin = testbed::client_for(&sim, "admin").await.expect("admin");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(admin.clone());
    for ns in [NS, "openshift-monitoring"] {
        create(&namespaces, json!({"metadata": {"name": ns}})).await;
    }
    for (ns, sa) in [
        (NS, "operator"),
        ("openshift-monitoring", "prometheus-k8s"),
        ("openshift-monitoring", "intruder"),
    ] {
        create(
            &Api::<ServiceAccount>::namespaced(admin.clone(), ns),
            json!({"metadata": {"name": sa}}),
        )
        .await;
    }
    let cluster_roles: Api<ClusterRole> = Api::all(admin.clone());
    let cluster_bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    for (role, rules, sa_ns, sa) in [
        (
            "auth-delegator",
            json!([
                {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
                {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
            ]),
            NS,
            "operator",
        ),
        (
            "prometheus-k8s",
            json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]),
            "openshift-monitoring",
            "prometheus-k8s",
        ),
    ] {
        create(
            &cluster_roles,
            json!({"metadata": {"name": role}, "rules": rules}),
        )
        .await;
        create(&cluster_bindings, json!({"metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": sa_ns}]}))
        .await;
    }
    create(
        &Api::<Role>::namespaced(admin.clone(), NS),
        json!({"metadata": {"name": "lease"}, "rules": [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list", "watch", "create", "update", "patch"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]}),
    )
    .await;
    create(
        &Api::<RoleBinding>::namespaced(admin.clone(), NS),
        json!({"metadata": {"name": "lease"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "lease"},
        "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": NS}]}),
    )
    .await;
    create(
        &Api::<Service>::namespaced(admin.clone(), NS),
        json!({"metadata": {"name": SERVICE, "annotations": {
            "service.beta.openshift.io/serving-cert-secret-name": SECRET}},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}],
                     "selector": {"name": "operator"}}}),
    )
    .await;
    (sim, admin)
}

/// Writes the Secret's files where the kubelet would mount them.
async fn mount(admin: &Client, dir: &Path) {
    let secret = Api::<Secret>::namespaced(admin.clone(), NS)
        .get(SECRET)
        .await
        .expect("serving-cert secret");
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    for (key, bytes) in secret.data.unwrap_or_default() {
        // Written beside, then renamed, as the kubelet swaps a Secret volume's content.
        let tmp = dir.join(format!(".{key}.tmp"));
        std::fs::write(&tmp, bytes.0).expect("write");
        std::fs::rename(&tmp, dir.join(&key)).expect("rename");
    }
}

struct Counting(Arc<Metrics>);

impl Reconciler for Counting {
    async fn reconcile(&mut self) -> Outcome {
        self.0.reconciled(Duration::from_millis(1), true);
        Outcome::Done {
            requeue_after: None,
        }
    }
}

fn free_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

/// One HTTPS request; returns the status code, the body and the server's certificate.
async fn get(
    addr: SocketAddr,
    ca_pem: &str,
    path: &str,
    token: Option<&str>,
) -> Result<(u16, String, Vec<u8>), String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(ca_pem.as_bytes()) {
        let cert: CertificateDer<'static> = cert.map_err(|e| e.to_string())?;
        roots.add(cert).map_err(|e| e.to_string())?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    // Prometheus' tlsConfig.serverName: the Service's DNS name, not the pod address.
    let name = ServerName::try_from(format!("{SERVICE}.{NS}.svc")).map_err(|e| e.to_string())?;
    let mut tls = TlsConnector::from(Arc::new(config))
        .connect(name, stream)
        .await
        .map_err(|e| e.to_string())?;
    let served = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.as_ref().to_vec())
        .unwrap_or_default();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    tls.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n").as_bytes(),
    )
    .await
    .map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    // A server closing without close_notify is fine for a Connection: close response.
    let _ = tls.read_to_end(&mut response).await;
    let text = String::from_utf8_lossy(&response).into_owned();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status line in {text:?}"))?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((code, body, served))
}

fn first_cert_der(pem: &str) -> Vec<u8> {
    rustls::pki_types::pem::PemObject::pem_slice_iter(pem.as_bytes())
        .next()
        .expect("a certificate")
        .map(|c: CertificateDer<'static>| c.as_ref().to_vec())
        .expect("valid PEM")
}

async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let until = tokio::time::Instant::now() + DEADLINE;
    loop {
        match check().await {
            Ok(v) => return v,
            Err(last) if tokio::time::Instant::now() >= until => {
                panic!("timed out waiting for {what}; last: {last}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("metrics-scrape-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_over_https_and_nobody_else_does() {
    let (sim, admin) = cluster().await;
    let ca = ServiceCa::new().expect("service CA");
    assert_eq!(ca.sync_once(&admin).await.expect("service-ca"), 1);
    assert_eq!(
        ca.sync_once(&admin).await.expect("service-ca"),
        0,
        "an existing Secret is left alone"
    );
    let dir = temp_dir();
    mount(&admin, &dir).await;

    let operator = testbed::client_for(&sim, OPERATOR).await.expect("client");
    let metrics = Metrics::new("scrape_test");
    let addr = free_port();
    let options = ProcessOptions {
        namespace: NS.into(),
        lock_name: "scrape-test-lock".into(),
        identity: "scrape-test".into(),
        timing: operator_kit::leader_timing::LeaderTiming::DEFAULT,
        metrics_addr: Some(addr),
        endpoint: EndpointOptions {
            serving: Serving::Https(CertSource::Dir {
                dir: dir.clone(),
                reload_every: Duration::from_millis(100),
            }),
            ..EndpointOptions::default()
        },
        loop_options: LoopOptions::default(),
    };
    // One real watch, so that readiness waits for a sync.
    let config_maps =
        kube::discovery::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
    let cache = operator_kit::cache::CacheBuilder::new(operator.clone(), [NS])
        .namespaced(&config_maps)
        .start();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(process::run(
        operator,
        options,
        cache,
        metrics.clone(),
        Counting(metrics),
        async move {
            let _ = stopped.await;
        },
    ));

    // Probes are open, and ready once the caches synced and the election runs.
    let ca_pem = ca.ca_pem().to_owned();
    eventually("/readyz", || async {
        match get(addr, &ca_pem, "/readyz", None).await? {
            (200, body, _) if body == "ok" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let (code, _, served) = get(addr, &ca_pem, "/healthz", None).await.expect("healthz");
    assert_eq!(code, 200);
    let secret = Api::<Secret>::namespaced(admin.clone(), NS)
        .get(SECRET)
        .await
        .expect("secret");
    let data = secret.data.unwrap_or_default();
    let issued_cert = String::from_utf8_lossy(&data["tls.crt"].0).into_owned();
    assert_eq!(
        served,
        first_cert_der(&issued_cert),
        "the service-ca certificate is served"
    );

    // Prometheus reads the page once its first reconcile is counted.
    let page = eventually("a scrape with a reconcile counted", || async {
        match get(addr, &ca_pem, "/metrics", Some(PROMETHEUS)).await? {
            (200, body, _) if body.contains("scrape_test_reconciles_total{result=\"success\"}") => {
                Ok(body)
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(
        page.contains("# TYPE scrape_test_reconciles counter"),
        "{page}"
    );

    let (code, body, _) = get(addr, &ca_pem, "/metrics", Some(INTRUDER))
        .await
        .expect("request");
    assert_eq!(code, 403, "{body}");
    assert!(!body.contains("scrape_test"), "no metrics to the refused");
    let (code, _, _) = get(addr, &ca_pem, "/metrics", None).await.expect("request");
    assert_eq!(code, 401);
    let (code, _, _) = get(
        addr,
        &ca_pem,
        "/metrics",
        Some("system:serviceaccount:openshift-monitoring:deleted"),
    )
    .await
    .expect("request");
    assert_eq!(code, 401, "a token the API server rejects");

    // The cached verdicts keep a steady scraper to one review of each kind.
    sim.clear_requests();
    for _ in 0..5 {
        let (code, _, _) = get(addr, &ca_pem, "/metrics", Some(PROMETHEUS))
            .await
            .expect("scrape");
        assert_eq!(code, 200);
    }
    let reviews = sim
        .requests()
        .into_iter()
        .filter(|r| r.resource.ends_with("reviews"))
        .count();
    assert_eq!(reviews, 0, "already cached: no review for five scrapes");

    // service-ca rotates: the new certificate is served without a restart.
    let rotated = ca.rotate(&admin, NS, SERVICE).await.expect("rotation");
    mount(&admin, &dir).await;
    let want = first_cert_der(&rotated.cert_pem);
    assert_ne!(want, served);
    eventually("the rotated certificate", || async {
        let (code, _, now) = get(addr, &ca_pem, "/healthz", None).await?;
        if code == 200 && now == want {
            Ok(())
        } else {
            Err("still the old certificate".to_string())
        }
    })
    .await;
    let (code, _, _) = get(addr, &ca_pem, "/metrics", Some(PROMETHEUS))
        .await
        .expect("scrape after rotation");
    assert_eq!(code, 200);

    let _ = stop.send(());
    let _ = tokio::time::timeout(DEADLINE, task).await;
    let _ = std::fs::remove_dir_all(&dir);
}
