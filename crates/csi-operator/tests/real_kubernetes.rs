//! The plain-Kubernetes install on the real control plane in Kubernetes mode (no OpenShift API
//! at all; Pod Security `restricted` by default, so each namespace gets only what its labels
//! ask for; real RBAC for both operators). The test installs as docs/install-kubernetes.md
//! says, with the real `kubectl apply -k manifests/kubernetes` and the two credentials Secrets;
//! from there the real controller-manager creates the operator pods, the kubelet stand-in runs
//! them as processes of this crate's binary under their ServiceAccounts' tokens, and they
//! install both drivers. The test only watches. The Helm chart (`charts/openstack-csi-operators`)
//! is installed the same way with the real `helm install`, and the switch from the upstream
//! Cinder chart is done both with the `manifests/adopt-helm-cinder` overlay and with the chart's
//! `cinder.adoptHelmRelease` values. Both installs end by scraping each operator's `/metrics`
//! exactly as its own ServiceMonitor (`manifests/kubernetes/monitoring`, the chart's
//! `monitoring`) tells a Prometheus, with the Prometheus operator's real CRD installed.

mod common;
mod real;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, ListParams, PostParams};
use real::*;
use serde_json::json;

const DRIVERS_NS: &str = "openshift-cluster-csi-drivers";
const MANILA_NS: &str = "openshift-manila-csi-driver";
/// The operator image of `manifests/kubernetes`.
const IMAGE: &str = "quay.io/example/csi-operator:v0.1.0";

fn credentials(name: &str, clouds_yaml: &str, ca: Option<&str>) -> Secret {
    let mut data = BTreeMap::from([(
        "clouds.yaml".to_owned(),
        ByteString(clouds_yaml.as_bytes().to_vec()),
    )]);
    if let Some(ca) = ca {
        data.insert("cacert".to_owned(), ByteString(ca.as_bytes().to_vec()));
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).expect("a Secret")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_drivers_install_from_the_kustomize_base_on_a_real_kubernetes_control_plane() {
    let openstack = openstack_sim::SimConfig {
        share_types: Some(vec![openstack_sim::SimShareType::new("default")]),
        ..Default::default()
    };
    let mut c = RealCluster::kubernetes(openstack, &[IMAGE]).await;

    // The image the base names is the one the kubelet runs: a renamed image must fail here,
    // not silently run nothing.
    let rendered = c
        .kubectl(&["kustomize", "manifests/kubernetes"])
        .expect("kubectl kustomize");
    assert!(
        rendered.contains(&format!("image: {IMAGE}")),
        "the base's operator image changed"
    );

    // `kubectl apply -k manifests/kubernetes`, accepted whole by the real API server.
    c.kubectl(&["apply", "-k", "manifests/kubernetes"])
        .expect("kubectl apply -k");

    // Pod Security is the server's: our namespaces carry their level, and an unlabelled
    // namespace gets the restricted default (a privileged pod there is refused).
    for ns in [DRIVERS_NS, MANILA_NS] {
        let labels = Api::<Namespace>::all(c.client.clone())
            .get(ns)
            .await
            .unwrap()
            .metadata
            .labels
            .unwrap_or_default();
        assert_eq!(
            labels
                .get("pod-security.kubernetes.io/enforce")
                .map(String::as_str),
            Some("privileged"),
            "{ns}"
        );
    }

    let clouds = c.openstack.clouds_yaml("openstack");
    let ca = c.openstack.ca_pem().map(str::to_owned);
    Api::<Secret>::namespaced(c.client.clone(), DRIVERS_NS)
        .create(
            &PostParams::default(),
            &credentials("openstack-cloud-credentials", &clouds, ca.as_deref()),
        )
        .await
        .expect("openstack-cloud-credentials");
    Api::<Secret>::namespaced(c.client.clone(), MANILA_NS)
        .create(
            &PostParams::default(),
            &credentials("manila-cloud-credentials", &clouds, ca.as_deref()),
        )
        .await
        .expect("manila-cloud-credentials");

    c.wait("Cinder available", async |c| {
        driver_available(c, "cinder.csi.openstack.org", &CINDER_AVAILABLE).await
    })
    .await;
    c.wait("Manila available", async |c| {
        driver_available(c, "manila.csi.openstack.org", &MANILA_AVAILABLE).await
    })
    .await;
    let workloads = c
        .wait("every workload's pods ready", async |c| {
            workloads_complete(c, &[DRIVERS_NS, MANILA_NS]).await
        })
        .await;
    assert!(workloads >= 6, "{workloads} workloads");
    c.assert_nothing_refused().await;

    // Each operator created its own ClusterCSIDriver (no CSO on plain Kubernetes), as its
    // ServiceAccount.
    let requests = c.requests();
    for (cr, operator) in [
        (
            "cinder.csi.openstack.org",
            "openstack-cinder-csi-driver-operator",
        ),
        ("manila.csi.openstack.org", "manila-csi-driver-operator"),
    ] {
        let creators: Vec<&str> = requests
            .iter()
            .filter(|r| {
                r.verb == "create"
                    && r.resource == "operator.openshift.io/clustercsidrivers"
                    && r.name == cr
                    && r.code == 201
            })
            .map(|r| r.user.as_str())
            .collect();
        assert_eq!(
            creators,
            [format!("system:serviceaccount:{DRIVERS_NS}:{operator}")],
            "{cr}"
        );
    }
    // Controllers placed as Kubernetes labels nodes: on control-plane Nodes (preferred), apart.
    let pods = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(c.client.clone(), DRIVERS_NS)
        .list(&ListParams::default().labels("app=openstack-cinder-csi-driver-controller"))
        .await
        .unwrap();
    let mut nodes: Vec<String> = pods
        .items
        .into_iter()
        .filter_map(|p| p.spec?.node_name)
        .collect();
    nodes.sort();
    nodes.dedup();
    assert_eq!(
        nodes.len(),
        2,
        "two controller replicas on two Nodes: {nodes:?}"
    );

    // Idle: no write by either operator for 20 s (leases aside).
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = c.requests().len();
    tokio::time::sleep(Duration::from_secs(20)).await;
    let idle = c.requests().split_off(before);
    assert_eq!(
        operator_writes(&idle),
        Vec::<String>::new(),
        "writes while idle"
    );

    // Nothing OpenShift appeared.
    let groups = c.client.list_api_groups().await.unwrap();
    let openshift: Vec<&str> = groups
        .groups
        .iter()
        .map(|g| g.name.as_str())
        .filter(|n| n.ends_with("openshift.io"))
        .collect();
    assert_eq!(
        openshift,
        ["operator.openshift.io"],
        "only the ClusterCSIDriver CRD's group"
    );

    // The operators' own ServiceMonitors, applied as docs/metrics.md says once the Prometheus
    // operator's CRD is installed, and followed to each operator's /metrics.
    c.kubectl(&[
        "apply",
        "-f",
        "crates/openshift-api/crds/servicemonitors.monitoring.coreos.com.yaml",
    ])
    .expect("the ServiceMonitor CRD");
    c.wait("manifests/kubernetes/monitoring applied", async |c| {
        c.kubectl(&["apply", "-k", "manifests/kubernetes/monitoring"])
            .map(|_| ())
    })
    .await;
    operators_scraped_as_their_service_monitors_say(&mut c, DRIVERS_NS).await;
}

/// The Helm chart on the same plane, as a chart user installs it: `helm install` with their
/// own operator image (the kubelet runs only that name, so a chart that ignored the value
/// would run nothing), their own namespace for the operators and each driver's
/// `settings.kubeletDir` (k0s's), then the two credentials Secrets; both drivers become
/// available with their node DaemonSets under k0s's kubelet directory (the settings
/// ConfigMaps the chart rendered, read where each operator looks), every pod admitted, no
/// request refused by RBAC.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_drivers_install_from_the_helm_chart_on_a_real_kubernetes_control_plane() {
    const CHART_IMAGE: &str = "registry.example.com/storage/csi-operator:v0.1.0-chart";
    const OPERATORS_NS: &str = "openstack-csi";
    let openstack = openstack_sim::SimConfig {
        share_types: Some(vec![openstack_sim::SimShareType::new("default")]),
        ..Default::default()
    };
    let mut c = RealCluster::kubernetes(openstack, &[CHART_IMAGE]).await;
    // The Prometheus operator's ServiceMonitor CRD, as kube-prometheus-stack installs it:
    // Helm then renders the operators' own ServiceMonitors (`monitoring.enabled`).
    c.kubectl(&[
        "apply",
        "-f",
        "crates/openshift-api/crds/servicemonitors.monitoring.coreos.com.yaml",
    ])
    .expect("the ServiceMonitor CRD");
    c.wait("the ServiceMonitor API served", async |c| {
        c.kubectl(&["get", "servicemonitors", "-A"]).map(|_| ())
    })
    .await;
    let (repository, tag) = CHART_IMAGE.rsplit_once(':').expect("a tag");
    let installed = c
        .helm(&[
            "install",
            "openstack-csi",
            "charts/openstack-csi-operators",
            "--namespace",
            "default",
            "--set",
            &format!("image.repository={repository}"),
            "--set",
            &format!("image.tag={tag}"),
            "--set",
            &format!("namespaces.operators={OPERATORS_NS}"),
            "--set",
            "cinder.settings.kubeletDir=/var/lib/k0s/kubelet",
            "--set",
            "manila.settings.kubeletDir=/var/lib/k0s/kubelet",
        ])
        .expect("helm install");
    assert!(installed.contains("STATUS: deployed"), "{installed}");
    // The chart's notes give the next steps for the namespaces chosen.
    assert!(
        installed.contains(&format!(
            "kubectl -n {OPERATORS_NS} create secret generic openstack-cloud-credentials"
        )) && installed
            .contains("kubectl wait --for=create clustercsidriver/manila.csi.openstack.org"),
        "{installed}"
    );

    let clouds = c.openstack.clouds_yaml("openstack");
    let ca = c.openstack.ca_pem().map(str::to_owned);
    Api::<Secret>::namespaced(c.client.clone(), OPERATORS_NS)
        .create(
            &PostParams::default(),
            &credentials("openstack-cloud-credentials", &clouds, ca.as_deref()),
        )
        .await
        .expect("openstack-cloud-credentials");
    Api::<Secret>::namespaced(c.client.clone(), MANILA_NS)
        .create(
            &PostParams::default(),
            &credentials("manila-cloud-credentials", &clouds, ca.as_deref()),
        )
        .await
        .expect("manila-cloud-credentials");

    c.wait("Cinder available", async |c| {
        driver_available(c, "cinder.csi.openstack.org", &CINDER_AVAILABLE).await
    })
    .await;
    c.wait("Manila available", async |c| {
        driver_available(c, "manila.csi.openstack.org", &MANILA_AVAILABLE).await
    })
    .await;
    let workloads = c
        .wait("every workload's pods ready", async |c| {
            workloads_complete(c, &[OPERATORS_NS, MANILA_NS]).await
        })
        .await;
    assert!(workloads >= 6, "{workloads} workloads");
    for (namespace, daemonset) in [
        (OPERATORS_NS, "openstack-cinder-csi-driver-node"),
        (MANILA_NS, "openstack-manila-csi-nodeplugin"),
        (MANILA_NS, "csi-nodeplugin-nfsplugin"),
    ] {
        c.wait("the chart's kubeletDir in force", async |c| {
            under_k0s(c, namespace, daemonset).await
        })
        .await;
    }
    c.assert_nothing_refused().await;
    // Nothing landed in the default namespace of the operators.
    let default_ns = Api::<Namespace>::all(c.client.clone())
        .get_opt(DRIVERS_NS)
        .await
        .expect("get");
    assert!(default_ns.is_none(), "{DRIVERS_NS} was created");
    let status = c
        .helm(&["status", "openstack-csi", "--namespace", "default"])
        .expect("helm status");
    assert!(status.contains("STATUS: deployed"), "{status}");

    // Each operator scraped as its ServiceMonitor says, with a Prometheus's rights.
    operators_scraped_as_their_service_monitors_say(&mut c, OPERATORS_NS).await;
}

/// Each operator's `/metrics` scraped as its ServiceMonitor in `namespace` says ([`scrape`]) with
/// a Prometheus's token has `build_info` and `process_*`; without the token it is refused, and
/// verified against another CA the handshake fails.
async fn operators_scraped_as_their_service_monitors_say(c: &mut RealCluster, namespace: &str) {
    let token = prometheus_token(c).await;
    for (monitor, pod) in [
        (
            "openstack-cinder-csi-driver-operator-monitor",
            "openstack-cinder-csi-driver-operator-",
        ),
        (
            "manila-csi-driver-operator-monitor",
            "manila-csi-driver-operator-",
        ),
    ] {
        let body = c
            .wait(
                "the operator's metrics scraped as its ServiceMonitor says",
                async |c| match scrape(c, namespace, monitor, pod, Some(&token), None).await? {
                    (200, body) => Ok(body),
                    (code, body) => Err(format!("{code}: {body}")),
                },
            )
            .await;
        assert!(
            body.contains("_build_info{"),
            "{monitor}: no build_info in\n{body}"
        );
        assert!(body.contains("process_cpu_seconds"), "{monitor}");
        // The checks can fail: no token is refused, another CA is not trusted.
        let (code, _) = scrape(c, namespace, monitor, pod, None, None)
            .await
            .expect("scrape without a token");
        assert_eq!(code, 401, "{monitor}: without a token");
        let (_, other_ca) = operator_kit::serving::self_signed(&["x".to_owned()]).expect("a CA");
        let err = scrape(c, namespace, monitor, pod, Some(&token), Some(&other_ca))
            .await
            .expect_err("another CA");
        assert!(err.contains("certificate"), "{monitor}: {err}");
    }
}

/// A Prometheus ServiceAccount's token, with what kube-prometheus-stack's Prometheus
/// ClusterRole grants for scraping: `get` on the non-resource URL `/metrics`.
async fn prometheus_token(c: &RealCluster) -> String {
    let dir = std::env::temp_dir().join(format!("prometheus-rbac-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let path = dir.join("prometheus.yaml");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: monitoring}\n---\n\
         apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: prometheus, namespace: monitoring}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: prometheus-scrape}\n\
         rules:\n- nonResourceURLs: [/metrics]\n  verbs: [get]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: prometheus-scrape}\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: prometheus-scrape}\n\
         subjects:\n- {kind: ServiceAccount, name: prometheus, namespace: monitoring}\n",
    )
    .expect("write");
    c.kubectl(&["apply", "-f", path.to_str().expect("a path")])
        .expect("Prometheus's ServiceAccount and rights");
    realkube::kubelet::token_request(&c.client, "monitoring", "prometheus", None)
        .await
        .expect("a token")
}

/// `/metrics` of the operator whose pods' names start with `pod`, scraped as ServiceMonitor
/// `namespace/monitor` tells a Prometheus: its endpoint's scheme (https) and path, the CA of
/// its `tlsConfig.ca` Secret key (or `ca_pem`), its `tlsConfig.serverName`, and `token` as
/// its `bearerTokenFile` (a Prometheus's). The one thing not from the ServiceMonitor is the
/// address: the stand-in kubelet has no pod network, so the address the process logged.
/// Returns the status and body; a TLS failure is an error.
async fn scrape(
    c: &RealCluster,
    namespace: &str,
    monitor: &str,
    pod: &str,
    token: Option<&str>,
    ca_pem: Option<&str>,
) -> Result<(u16, String), String> {
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls::{self, pki_types::CertificateDer, pki_types::ServerName};
    let sm: serde_json::Value = serde_json::from_str(&c.kubectl(&[
        "get",
        "servicemonitor",
        monitor,
        "-n",
        namespace,
        "-o",
        "json",
    ])?)
    .map_err(|e| e.to_string())?;
    let endpoint = &sm["spec"]["endpoints"][0];
    if endpoint["scheme"] != "https" {
        return Err(format!("{monitor}: scheme {}", endpoint["scheme"]));
    }
    let path = endpoint["path"].as_str().unwrap_or("/metrics").to_owned();
    let tls = &endpoint["tlsConfig"];
    let server = tls["serverName"]
        .as_str()
        .ok_or("no serverName")?
        .to_owned();
    if endpoint["bearerTokenFile"].as_str().is_none() && token.is_some() {
        return Err(format!(
            "{monitor}: no bearerTokenFile, yet a token is sent"
        ));
    }
    let ca = match ca_pem {
        Some(p) => p.to_owned(),
        None => {
            let (name, key) = (
                tls["ca"]["secret"]["name"]
                    .as_str()
                    .ok_or("no tlsConfig.ca.secret")?,
                tls["ca"]["secret"]["key"]
                    .as_str()
                    .ok_or("no tlsConfig.ca.secret key")?,
            );
            let secret = Api::<Secret>::namespaced(c.client.clone(), namespace)
                .get(name)
                .await
                .map_err(|e| format!("Secret {name}: {e}"))?;
            let data = secret.data.unwrap_or_default();
            let pem = data.get(key).ok_or(format!("Secret {name} has no {key}"))?;
            String::from_utf8_lossy(&pem.0).into_owned()
        }
    };
    let process = c
        .kubelet
        .processes()
        .into_iter()
        .find(|p| p.namespace == namespace && p.pod.starts_with(pod) && p.pid.is_some())
        .ok_or(format!("no running pod {pod}*"))?;
    let log = std::fs::read_to_string(&process.log).map_err(|e| e.to_string())?;
    let addr: std::net::SocketAddr = log
        .lines()
        .filter(|l| l.contains("serving metrics over HTTPS"))
        .filter_map(|l| l.split("127.0.0.1:").nth(1))
        .filter_map(|rest| {
            let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
            format!("127.0.0.1:{port}").parse().ok()
        })
        .next_back()
        .ok_or("the operator has not logged its metrics address")?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(ca.as_bytes()) {
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
    let name = ServerName::try_from(server).map_err(|e| e.to_string())?;
    let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, stream)
        .await
        .map_err(|e| format!("TLS: {e}"))?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    tls.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n").as_bytes(),
    )
    .await
    .map_err(|e| e.to_string())?;
    let mut response = Vec::new();
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
    Ok((code, body))
}

/// What Helm's ownership metadata left on an object.
fn helm_metadata(meta: &kube::api::ObjectMeta) -> Vec<String> {
    let mut left: Vec<String> = meta
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("meta.helm.sh/"))
        .map(|(k, _)| k.clone())
        .collect();
    left.extend(
        meta.labels
            .iter()
            .flatten()
            .filter(|(k, v)| *k == "app.kubernetes.io/managed-by" && *v == "Helm")
            .map(|(k, _)| k.clone()),
    );
    left
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_helm_adoption_overlay_takes_over_the_upstream_charts_release_on_a_real_control_plane()
{
    adoption_takes_over(Install::Overlay).await;
}

/// The same switch with our Helm chart instead of the overlay: `cinder.adoptHelmRelease` gives
/// the Cinder operator the flag and the adoption's rights in the release's namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_charts_adoption_values_take_over_the_upstream_charts_release_on_a_real_control_plane()
{
    adoption_takes_over(Install::Chart).await;
}

/// How the operators are installed for an adoption.
enum Install {
    /// `kubectl apply -k manifests/adopt-helm-cinder`.
    Overlay,
    /// `helm install` of charts/openstack-csi-operators with `cinder.adoptHelmRelease`.
    Chart,
}

async fn adoption_takes_over(install: Install) {
    use k8s_openapi::api::storage::v1::{CSIDriver, StorageClass};
    let mut c = RealCluster::kubernetes(openstack_sim::SimConfig::default(), &[IMAGE]).await;

    // What `helm install cinder-csi -n kube-system` left: its pods made by the real
    // controller-manager and placed by the real scheduler.
    for o in common::kubernetes::chart_objects() {
        realkube::apply::object(&c.client, &o)
            .await
            .expect("the chart's objects");
    }
    c.wait("the chart's pods ready", async |c| {
        workloads_complete(c, &[common::kubernetes::RELEASE_NS]).await
    })
    .await;
    let chart_driver = Api::<CSIDriver>::all(c.client.clone())
        .get("cinder.csi.openstack.org")
        .await
        .unwrap();

    // The operators with the adoption, and the Cinder credentials.
    match install {
        Install::Overlay => {
            c.kubectl(&["apply", "-k", "manifests/adopt-helm-cinder"])
                .expect("kubectl apply -k the overlay");
        }
        Install::Chart => {
            c.helm(&[
                "install",
                "openstack-csi",
                "charts/openstack-csi-operators",
                "--namespace",
                "default",
                "--set",
                &format!(
                    "cinder.adoptHelmRelease.name={}",
                    common::kubernetes::RELEASE
                ),
                "--set",
                &format!(
                    "cinder.adoptHelmRelease.namespace={}",
                    common::kubernetes::RELEASE_NS
                ),
            ])
            .expect("helm install with the adoption");
        }
    }
    let clouds = c.openstack.clouds_yaml("openstack");
    let ca = c.openstack.ca_pem().map(str::to_owned);
    Api::<Secret>::namespaced(c.client.clone(), DRIVERS_NS)
        .create(
            &PostParams::default(),
            &credentials("openstack-cloud-credentials", &clouds, ca.as_deref()),
        )
        .await
        .expect("openstack-cloud-credentials");

    // Adopted and waiting for `helm uninstall`: Helm's ownership gone, nothing of its own started
    // beside the chart's driver.
    let cr_conditions = async |c: &RealCluster| {
        c.get(
            "operator.openshift.io/v1",
            "ClusterCSIDriver",
            "clustercsidrivers",
            "cinder.csi.openstack.org",
        )
        .await
        .map(|cr| RealCluster::conditions(&cr))
        .unwrap_or_default()
    };
    c.wait(
        "the adoption to wait for helm uninstall",
        async |c| match cr_conditions(c).await.get("HelmReleaseAdoptionProgressing") {
            Some((s, r, m))
                if s == "True"
                    && r == "WaitingForHelmUninstall"
                    && m.contains("helm uninstall cinder-csi -n kube-system") =>
            {
                Ok(())
            }
            other => Err(format!("{other:?}")),
        },
    )
    .await;
    c.wait("Helm's metadata removed", async |c| {
        let d = Api::<CSIDriver>::all(c.client.clone())
            .get("cinder.csi.openstack.org")
            .await
            .map_err(|e| e.to_string())?;
        let mut left = helm_metadata(&d.metadata);
        for name in ["csi-cinder-sc-delete", "csi-cinder-sc-retain"] {
            let sc = Api::<StorageClass>::all(c.client.clone())
                .get(name)
                .await
                .map_err(|e| e.to_string())?;
            left.extend(helm_metadata(&sc.metadata));
        }
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("{left:?}"))
        }
    })
    .await;
    let ours =
        Api::<k8s_openapi::api::apps::v1::DaemonSet>::namespaced(c.client.clone(), DRIVERS_NS);
    assert!(
        ours.get_opt("openstack-cinder-csi-driver-node")
            .await
            .unwrap()
            .is_none(),
        "no node plugin beside the chart's"
    );

    // `helm uninstall`: every object of the release deleted; the operator brings the CSIDriver
    // and classes back with the chart's immutable fields, and its own driver up.
    for o in common::kubernetes::chart_objects().iter().rev() {
        let (api, name) = {
            let api_version = o["apiVersion"].as_str().unwrap();
            let (group, version) = api_version.split_once('/').unwrap();
            let ar = kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
                group,
                version,
                o["kind"].as_str().unwrap(),
            ));
            let api: Api<kube::api::DynamicObject> = match o["metadata"]["namespace"].as_str() {
                Some(ns) => Api::namespaced_with(c.client.clone(), ns, &ar),
                None => Api::all_with(c.client.clone(), &ar),
            };
            (api, o["metadata"]["name"].as_str().unwrap().to_owned())
        };
        api.delete(&name, &kube::api::DeleteParams::background())
            .await
            .expect("helm uninstall");
    }
    c.wait("Cinder available", async |c| {
        driver_available(c, "cinder.csi.openstack.org", &CINDER_AVAILABLE).await
    })
    .await;
    c.wait("Adopted", async |c| {
        match cr_conditions(c).await.get("HelmReleaseAdoptionProgressing") {
            Some((s, r, _)) if s == "False" && r == "Adopted" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let driver = Api::<CSIDriver>::all(c.client.clone())
        .get("cinder.csi.openstack.org")
        .await
        .unwrap();
    assert_ne!(driver.metadata.uid, chart_driver.metadata.uid, "re-created");
    assert_eq!(driver.spec, chart_driver.spec, "the chart's spec is kept");
    for (name, reclaim) in [
        ("csi-cinder-sc-delete", "Delete"),
        ("csi-cinder-sc-retain", "Retain"),
    ] {
        let sc = Api::<StorageClass>::all(c.client.clone())
            .get(name)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(sc.reclaim_policy.as_deref(), Some(reclaim), "{name}");
    }
    c.wait("the operator's driver ready", async |c| {
        workloads_complete(c, &[DRIVERS_NS]).await
    })
    .await;
    assert_eq!(
        c.failed_creates().await,
        Vec::<String>::new(),
        "pods refused by admission"
    );
    let refused: Vec<String> = c
        .refusals()
        .into_iter()
        .filter(|r| r.contains("openstack-cinder-csi-driver-operator "))
        .collect();
    assert_eq!(
        refused,
        Vec::<String>::new(),
        "the Cinder operator's requests refused"
    );
}

/// The node DaemonSet's host paths and the controller's replicas, as the API server has them.
async fn cinder_knobs(c: &RealCluster) -> Result<(Vec<String>, i64), String> {
    use k8s_openapi::api::apps::v1::Deployment;
    let paths = host_paths(c, DRIVERS_NS, "openstack-cinder-csi-driver-node").await?;
    let d = Api::<Deployment>::namespaced(c.client.clone(), DRIVERS_NS)
        .get("openstack-cinder-csi-driver-controller")
        .await
        .map_err(|e| e.to_string())?;
    let replicas = d.spec.and_then(|s| s.replicas).unwrap_or(-1);
    Ok((paths, i64::from(replicas)))
}

/// The host paths of DaemonSet `namespace/name`, as the API server has them.
async fn host_paths(c: &RealCluster, namespace: &str, name: &str) -> Result<Vec<String>, String> {
    use k8s_openapi::api::apps::v1::DaemonSet;
    let ds = Api::<DaemonSet>::namespaced(c.client.clone(), namespace)
        .get(name)
        .await
        .map_err(|e| e.to_string())?;
    Ok(ds
        .spec
        .and_then(|s| s.template.spec)
        .map(|s| s.volumes.unwrap_or_default())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|v| v.host_path.map(|h| h.path))
        .collect())
}

/// Every kubelet host path of DaemonSet `namespace/name` under k0s's directory.
async fn under_k0s(c: &RealCluster, namespace: &str, name: &str) -> Result<(), String> {
    let paths = host_paths(c, namespace, name).await?;
    if paths.iter().any(|p| p.starts_with("/var/lib/k0s/kubelet"))
        && !paths.iter().any(|p| p.starts_with("/var/lib/kubelet"))
    {
        Ok(())
    } else {
        Err(format!("{namespace}/{name}: host paths {paths:?}"))
    }
}

/// The settings are in force: every kubelet host path under k0s's directory, one replica.
async fn k0s_and_one_replica(c: &RealCluster) -> Result<(), String> {
    let (paths, replicas) = cinder_knobs(c).await?;
    let moved = !paths.is_empty()
        && paths.iter().any(|p| p.starts_with("/var/lib/k0s/kubelet"))
        && !paths.iter().any(|p| p.starts_with("/var/lib/kubelet"));
    if moved && replicas == 1 {
        Ok(())
    } else {
        Err(format!("host paths {paths:?}, replicas {replicas}"))
    }
}

/// docs/driver-settings.md on the real control plane: the settings ConfigMap, created with
/// kubectl as the guide says, moves the node plugin to k0s's kubelet directory and sets one
/// controller replica; the real API server accepts the objects, the operator keeps them after
/// an administrator edits the DaemonSet and scales the Deployment, and a mistake in the
/// ConfigMap is reported without undoing anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn driver_settings_take_effect_and_are_kept_on_a_real_control_plane() {
    let mut c = RealCluster::kubernetes(openstack_sim::SimConfig::default(), &[IMAGE]).await;
    // The Prometheus operator's ServiceMonitor CRD, as kube-prometheus-stack installs it.
    c.kubectl(&[
        "apply",
        "-f",
        "crates/openshift-api/crds/servicemonitors.monitoring.coreos.com.yaml",
    ])
    .expect("the ServiceMonitor CRD");
    c.kubectl(&[
        "wait",
        "--for=condition=Established",
        "crd/servicemonitors.monitoring.coreos.com",
        "--timeout=60s",
    ])
    .expect("the CRD established");
    c.kubectl(&["apply", "-k", "manifests/kubernetes"])
        .expect("kubectl apply -k");
    let dir = std::env::temp_dir().join(format!("driver-settings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("settings.yaml");
    std::fs::write(
        &file,
        "kubeletDir: /var/lib/k0s/kubelet\ncontroller:\n  replicas: 1\n\
         imagePullSecrets: [{name: my-registry}]\n\
         serviceMonitor: {labels: {release: kube-prometheus-stack}}\n\
         storageClasses:\n- name: fast-ssd\n  parameters: {type: ssd}\n",
    )
    .unwrap();
    let from_file = format!("--from-file=settings.yaml={}", file.display());
    c.kubectl(&[
        "-n",
        DRIVERS_NS,
        "create",
        "configmap",
        "openstack-cinder-csi-driver-operator-settings",
        &from_file,
    ])
    .expect("kubectl create configmap");
    let clouds = c.openstack.clouds_yaml("openstack");
    let ca = c.openstack.ca_pem().map(str::to_owned);
    Api::<Secret>::namespaced(c.client.clone(), DRIVERS_NS)
        .create(
            &PostParams::default(),
            &credentials("openstack-cloud-credentials", &clouds, ca.as_deref()),
        )
        .await
        .expect("openstack-cloud-credentials");

    c.wait("Cinder available", async |c| {
        driver_available(c, "cinder.csi.openstack.org", &CINDER_AVAILABLE).await
    })
    .await;
    c.wait("the settings in force", async |c| {
        k0s_and_one_replica(c).await
    })
    .await;
    let sc = Api::<k8s_openapi::api::storage::v1::StorageClass>::all(c.client.clone())
        .get("fast-ssd")
        .await
        .expect("the extra StorageClass");
    assert_eq!(sc.provisioner, "cinder.csi.openstack.org");

    // The driver's ServiceMonitor, accepted by the API server with the Prometheus operator's
    // CRD: labelled for kube-prometheus-stack, verifying the certificate the operator issued
    // (no cert-manager here: its own self-signed `tls.crt`), not OpenShift's service CA.
    let monitor = c
        .wait("the driver's ServiceMonitor", async |c| {
            let out = c
                .kubectl(&[
                    "-n",
                    DRIVERS_NS,
                    "get",
                    "servicemonitor",
                    "openstack-cinder-csi-driver-controller-monitor",
                    "-o",
                    "json",
                ])
                .map_err(|e| e.to_string())?;
            serde_json::from_str::<serde_json::Value>(&out).map_err(|e| e.to_string())
        })
        .await;
    assert_eq!(
        monitor["metadata"]["labels"]["release"], "kube-prometheus-stack",
        "{monitor}"
    );
    let endpoints = monitor["spec"]["endpoints"].as_array().expect("endpoints");
    assert_eq!(endpoints.len(), 5, "{monitor}");
    for e in endpoints {
        assert_eq!(
            e["tlsConfig"],
            json!({
                "ca": {"secret": {
                    "name": "openstack-cinder-csi-driver-controller-metrics-serving-cert",
                    "key": "tls.crt",
                    }},
                "serverName": format!("openstack-cinder-csi-driver-controller-metrics.{DRIVERS_NS}.svc"),
            }),
            "{e}"
        );
    }

    // At rest with the settings and the ServiceMonitor: no write by the operator for 15 s.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = c.requests().len();
    tokio::time::sleep(Duration::from_secs(15)).await;
    let idle = c.requests().split_off(before);
    assert_eq!(
        operator_writes(&idle),
        Vec::<String>::new(),
        "writes while idle"
    );

    // An administrator edits the DaemonSet back to /var/lib/kubelet and scales the Deployment.
    let patch = r#"{"spec":{"template":{"spec":{"volumes":[{"name":"kubelet-dir","hostPath":{"path":"/var/lib/kubelet","type":"Directory"}}]}}}}"#;
    c.kubectl(&[
        "-n",
        DRIVERS_NS,
        "patch",
        "daemonset",
        "openstack-cinder-csi-driver-node",
        "--type=strategic",
        "-p",
        patch,
    ])
    .expect("kubectl patch daemonset");
    c.kubectl(&[
        "-n",
        DRIVERS_NS,
        "scale",
        "deployment",
        "openstack-cinder-csi-driver-controller",
        "--replicas=3",
    ])
    .expect("kubectl scale");
    c.wait("the edits reverted", async |c| k0s_and_one_replica(c).await)
        .await;

    // A typo: the condition names the key, and nothing applied is lost.
    std::fs::write(
        &file,
        "kubeletDir: /var/lib/k0s/kubelet\ncontroler: {replicas: 1}\n",
    )
    .unwrap();
    let yaml = c
        .kubectl(&[
            "-n",
            DRIVERS_NS,
            "create",
            "configmap",
            "openstack-cinder-csi-driver-operator-settings",
            &from_file,
            "--dry-run=client",
            "-o",
            "yaml",
        ])
        .expect("the new ConfigMap");
    let replaced = dir.join("configmap.yaml");
    std::fs::write(&replaced, yaml).unwrap();
    c.kubectl(&["replace", "-f", &replaced.display().to_string()])
        .expect("kubectl replace");
    let message = c
        .wait("DriverSettingsDegraded", async |c| {
            let cr = c
                .get(
                    "operator.openshift.io/v1",
                    "ClusterCSIDriver",
                    "clustercsidrivers",
                    "cinder.csi.openstack.org",
                )
                .await
                .ok_or("no CR")?;
            match RealCluster::conditions(&cr).get("DriverSettingsDegraded") {
                Some((s, _, m)) if s == "True" => Ok(m.clone()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    assert!(
        message.contains("controler: unknown key; the keys allowed here are kubeletDir"),
        "{message}"
    );
    k0s_and_one_replica(&c).await.expect("nothing undone");
    assert!(
        Api::<k8s_openapi::api::storage::v1::StorageClass>::all(c.client.clone())
            .get_opt("fast-ssd")
            .await
            .unwrap()
            .is_some(),
        "the extra StorageClass kept"
    );
    assert_eq!(
        c.refusals(),
        Vec::<String>::new(),
        "requests refused by RBAC"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
