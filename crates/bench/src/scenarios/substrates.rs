//! Scenario `substrates`: the Cinder operator's install, idle and rotation figures on both
//! substrates side by side, with one procedure: kube-sim (the testbed, in the bench process) and
//! the real control plane (`realkube`: OpenShift's kube-apiserver in OpenShift mode with SCC
//! admission, the real controller-manager and scheduler, the kubelet stand-in keeping Nodes and
//! pods alive). The operator is the product binary as its own process; on kube-sim it is its
//! ServiceAccount by name, on the real control plane by a TokenRequest token under the RBAC
//! `manifests/kubernetes` grants it. Requests come from kube-sim's request log and from the API
//! server's audit log, read as the same records.
//!
//! Request and write counts must hold on both substrates (DESIGN §7); latencies are compared
//! within this run only. This module measures and reports; the verdicts are printed, never
//! enforced.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube_sim::RequestRecord;
use openstack_sim::OpenStackSim;
use realkube::kubelet::{self, Kubelet};
use realkube::{ControlPlane, Mode, Options as PlaneOptions};
use serde_json::json;
use testbed::{Settings, Testbed};

use super::Options;
use super::budget::{QUIET, RESYNC};
use crate::cluster::{RequestLog, Target, VerbCounts, verdict};
use crate::measure::{ms, percentile};
use crate::operator_process::{OperatorCommand, OperatorProcess};
use crate::report::{Section, Table};

pub const NAME: &str = "substrates";

const NS: &str = testbed::DRIVER_NAMESPACE;
const OPERATOR_SA: &str = "openstack-cinder-csi-driver-operator";
const OPERATOR_USER: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:openstack-cinder-csi-driver-operator";
const CR_NAME: &str = "cinder.csi.openstack.org";
const DEP_PREFIX: &str = "operator.openshift.io/dep-";
/// How long the idle operator is watched.
const IDLE: Duration = Duration::from_secs(30);
const ROTATIONS: usize = 5;
const ROTATION_LIMIT: Duration = Duration::from_secs(30);
/// The Cinder operator's RBAC in `manifests/kubernetes` (the same assets the CSO applies on
/// OpenShift): its ServiceAccount, the shared sidecar roles, its ClusterRole, Roles and bindings.
const RBAC_FILES: &[&str] = &[
    "04_", "06_", "07_", "08_", "09_", "10_", "11_", "12_", "14_", "16_", "17_", "21_", "22_",
];

/// One substrate under the same procedure.
enum Substrate {
    Sim(Box<Testbed>),
    Real(Box<Real>),
}

/// The real control plane with its kubelet stand-in and cloud.
struct Real {
    plane: ControlPlane,
    _kubelet: Kubelet,
    openstack: OpenStackSim,
    client: Client,
}

impl RequestLog for Substrate {
    fn all_requests(&self) -> Vec<RequestRecord> {
        match self {
            Substrate::Sim(bed) => bed.kube.requests(),
            Substrate::Real(real) => real.plane.requests(),
        }
    }
}

impl Substrate {
    fn client(&self) -> &Client {
        match self {
            Substrate::Sim(bed) => &bed.client,
            Substrate::Real(real) => &real.client,
        }
    }

    fn openstack(&self) -> &OpenStackSim {
        match self {
            Substrate::Sim(bed) => &bed.openstack,
            Substrate::Real(real) => &real.openstack,
        }
    }

    async fn sim() -> anyhow::Result<Self> {
        let settings = Settings {
            cinder_cluster_csi_driver: false,
            worker_nodes: 3,
            csi_provisioner: false,
            ..Settings::default()
        };
        let bed = Testbed::start(settings).await.context("testbed")?;
        Ok(Substrate::Sim(Box::new(bed)))
    }

    async fn real() -> anyhow::Result<Self> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let crds = root.join("crates/openshift-api/crds");
        let mut options = PlaneOptions::full(Mode::OpenShift);
        options.crds = vec![
            crds.join("servicemonitors.monitoring.coreos.com.yaml"),
            crds.join("prometheusrules.monitoring.coreos.com.yaml"),
        ];
        let plane = ControlPlane::start(options)
            .await
            .context("the real control plane")?;
        let mut nodes = kubelet::Config::cluster(3, 3);
        nodes
            .node_labels
            .insert("topology.kubernetes.io/zone".into(), "nova".into());
        let kubelet = Kubelet::start(&plane, nodes)
            .await
            .context("the kubelet stand-in")?;
        let openstack =
            OpenStackSim::start(openstack_sim::SimConfig::default(), "127.0.0.1:0".parse()?)
                .await
                .context("openstack-sim")?;
        let client = plane.admin_client().await?;
        for ns in [
            NS,
            "openshift-config",
            "openshift-config-managed",
            "openshift-monitoring",
        ] {
            realkube::apply::object(
                &client,
                &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            )
            .await?;
        }
        let settings = Settings::default();
        testbed::seed_singletons(&client, &settings).await?;
        let cloud_config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cloud-provider-config", "namespace": "openshift-config"},
            "data": {"config": settings.cloud_provider_config.clone().unwrap_or_default()}});
        realkube::apply::object(&client, &cloud_config).await?;
        testbed::put_clouds_secret(
            &client,
            NS,
            testbed::CREDENTIALS_SECRET,
            &openstack.clouds_yaml("openstack"),
            openstack.ca_pem(),
        )
        .await?;
        let dir = root.join("manifests/kubernetes");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .with_context(|| format!("{}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| RBAC_FILES.iter().any(|f| n.starts_with(f)))
            })
            .collect();
        files.sort();
        anyhow::ensure!(
            files.len() == RBAC_FILES.len(),
            "manifests/kubernetes changed: {files:?}"
        );
        realkube::apply::files(&client, &files).await?;
        Ok(Substrate::Real(Box::new(Real {
            plane,
            _kubelet: kubelet,
            openstack,
            client,
        })))
    }

    async fn operator_kubeconfig(&self) -> anyhow::Result<String> {
        Ok(match self {
            Substrate::Sim(bed) => bed.kube.kubeconfig(OPERATOR_USER),
            Substrate::Real(real) => {
                let token = real.plane.service_account_token(NS, OPERATOR_SA).await?;
                real.plane.kubeconfig_yaml(&token)
            }
        })
    }
}

/// What one substrate measured.
struct Figures {
    install: VerbCounts,
    install_writes: usize,
    install_objects: usize,
    install_failed: usize,
    install_latency: Option<Duration>,
    idle: VerbCounts,
    rotations: Vec<Duration>,
    rotation_writes: Vec<usize>,
}

async fn measure(substrate: &Substrate) -> anyhow::Result<Figures> {
    let command = OperatorCommand {
        subcommand: "openstack-cinder",
        user: OPERATOR_USER,
        metric_prefix: "openstack_cinder_csi_driver_operator",
        args: ["--namespace", NS, "--resync"]
            .iter()
            .map(|s| s.to_string())
            .chain([format!("{}s", RESYNC.as_secs())])
            .collect(),
        env: testbed::example_images(),
        trace: false,
    };
    let mut operator =
        OperatorProcess::start_with(&substrate.operator_kubeconfig().await?, command)?;
    operator.wait_ready().await?;
    let client = substrate.client().clone();

    // Install: from the ClusterCSIDriver's create to the operator's quiet.
    let before = substrate.all_requests().len();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("operator.openshift.io", "v1", "ClusterCSIDriver"),
        "clustercsidrivers",
    );
    let cr: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "operator.openshift.io/v1", "kind": "ClusterCSIDriver", "metadata": {"name": CR_NAME},
        "spec": {"managementState": "Managed", "logLevel": "Normal", "operatorLogLevel": "Normal"},
    }))?;
    Api::<DynamicObject>::all_with(client.clone(), &ar)
        .create(&PostParams::default(), &cr)
        .await?;
    let install_result = async {
        wait_for_workloads(&client).await?;
        operator.wait_quiet(substrate, QUIET).await
    }
    .await;
    operator.explain(install_result)?;
    let all = substrate.all_requests();
    let window = &all[before.min(all.len())..];
    let created_at = window
        .iter()
        .find(|r| r.verb == "create" && r.resource == "operator.openshift.io/clustercsidrivers")
        .map(|r| r.at_ms);
    let ours: Vec<RequestRecord> = window
        .iter()
        .filter(|r| operator.is_ours(r))
        .cloned()
        .collect();
    let operand_writes: Vec<&RequestRecord> = ours
        .iter()
        .filter(|r| r.is_write() && Target::of(r) == Target::Operand)
        .collect();
    let install_latency = match (created_at, operand_writes.iter().map(|r| r.at_ms).max()) {
        (Some(a), Some(b)) => Some(Duration::from_millis(b.saturating_sub(a))),
        _ => None,
    };
    let objects: BTreeSet<(String, String, String)> = ours
        .iter()
        .filter(|r| {
            r.verb == "create" && Target::of(r) == Target::Operand && (200..300).contains(&r.code)
        })
        .map(|r| (r.resource.clone(), r.namespace.clone(), r.name.clone()))
        .collect();

    // Idle.
    let before = substrate.all_requests().len();
    tokio::time::sleep(IDLE).await;
    let all = substrate.all_requests();
    let idle: Vec<RequestRecord> = all[before.min(all.len())..]
        .iter()
        .filter(|r| operator.is_ours(r))
        .cloned()
        .collect();

    // Rotations: a new Keystone password, the Secret replaced, until both templates change.
    let mut rotations = Vec::new();
    let mut rotation_writes = Vec::new();
    for i in 0..ROTATIONS {
        let before_hashes = template_hashes(&client).await?;
        let password = format!("rotated-{i}");
        substrate
            .openstack()
            .set_password(openstack_sim::DEFAULT_USER, &password);
        let clouds = substrate.openstack().clouds_yaml_password(
            "openstack",
            openstack_sim::DEFAULT_USER,
            &password,
        );
        let before = substrate.all_requests().len();
        let sent = Instant::now();
        testbed::put_clouds_secret(
            &client,
            NS,
            testbed::CREDENTIALS_SECRET,
            &clouds,
            substrate.openstack().ca_pem(),
        )
        .await?;
        loop {
            let now = template_hashes(&client).await?;
            if now.0 != before_hashes.0 && now.1 != before_hashes.1 {
                rotations.push(sent.elapsed());
                break;
            }
            operator.check_alive()?;
            anyhow::ensure!(
                sent.elapsed() < ROTATION_LIMIT,
                "rotation {i}: the pod templates kept their hashes"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        operator.wait_quiet(substrate, QUIET).await?;
        let all = substrate.all_requests();
        rotation_writes.push(
            all[before.min(all.len())..]
                .iter()
                .filter(|r| operator.is_ours(r) && r.is_write() && Target::of(r) == Target::Operand)
                .count(),
        );
    }
    operator.stop().await?;
    Ok(Figures {
        install: VerbCounts::of(&ours),
        install_writes: operand_writes.len(),
        install_objects: objects.len(),
        install_failed: ours.iter().filter(|r| r.code >= 400).count(),
        install_latency,
        idle: VerbCounts::of(&idle),
        rotations,
        rotation_writes,
    })
}

/// Waits until the operator has made the controller Deployment and the node DaemonSet.
async fn wait_for_workloads(client: &Client) -> anyhow::Result<()> {
    let deadline = Instant::now() + super::budget::CONVERGE_LIMIT;
    loop {
        let d = Api::<Deployment>::namespaced(client.clone(), NS)
            .get_opt("openstack-cinder-csi-driver-controller")
            .await?;
        let ds = Api::<DaemonSet>::namespaced(client.clone(), NS)
            .get_opt("openstack-cinder-csi-driver-node")
            .await?;
        if d.is_some() && ds.is_some() {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "no controller Deployment and node DaemonSet"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The `dep-` hash annotations of the controller's and the node plugin's pod templates.
async fn template_hashes(client: &Client) -> anyhow::Result<(String, String)> {
    let pick = |t: Option<&k8s_openapi::api::core::v1::PodTemplateSpec>| -> String {
        t.and_then(|t| t.metadata.as_ref()?.annotations.as_ref())
            .map(|a| {
                a.iter()
                    .filter(|(k, _)| k.starts_with(DEP_PREFIX))
                    .map(|(k, v)| format!("{k}={v};"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let d = Api::<Deployment>::namespaced(client.clone(), NS)
        .get("openstack-cinder-csi-driver-controller")
        .await?;
    let ds = Api::<DaemonSet>::namespaced(client.clone(), NS)
        .get("openstack-cinder-csi-driver-node")
        .await?;
    Ok((
        pick(d.spec.as_ref().map(|s| &s.template)),
        pick(ds.spec.as_ref().map(|s| &s.template)),
    ))
}

pub async fn run(_options: Options) -> anyhow::Result<Section> {
    let sim = Substrate::sim().await?;
    let sim_figures = measure(&sim).await.context("on kube-sim")?;
    drop(sim);
    let real = Substrate::real().await?;
    let real_figures = measure(&real).await.context("on the real control plane")?;
    drop(real);
    Ok(report(
        &["kube-sim", "real control plane"],
        &[sim_figures, real_figures],
    ))
}

fn report(labels: &[&str; 2], figures: &[Figures; 2]) -> Section {
    let per_minute = |n: usize| format!("{:.1}", n as f64 * 60.0 / IDLE.as_secs_f64());
    let idle_writes = |f: &Figures| {
        f.idle
            .without_lease(&["create", "update", "patch", "delete"])
    };
    let idle_reads = |f: &Figures| f.idle.without_lease(&["get", "list"]);
    let mut side = Table::new(
        "Side by side",
        &["What", labels[0], labels[1], "Budget", "Verdict (both)"],
    );
    let both = |f: &dyn Fn(&Figures) -> String| [f(&figures[0]), f(&figures[1])];
    let mut row = |what: &str, cells: [String; 2], budget: &str, ok: Option<bool>| {
        side.row(vec![
            what.into(),
            cells[0].clone(),
            cells[1].clone(),
            budget.into(),
            ok.map(verdict).unwrap_or_else(|| "-".into()),
        ]);
    };
    let one_per_object = figures
        .iter()
        .all(|f| f.install_writes == f.install_objects && f.install_failed == 0);
    row(
        "operand writes at install (objects)",
        both(&|f| format!("{} ({})", f.install_writes, f.install_objects)),
        "one per object",
        Some(one_per_object),
    );
    row(
        "failed requests at install",
        both(&|f| f.install_failed.to_string()),
        "none without cause",
        Some(figures.iter().all(|f| f.install_failed == 0)),
    );
    row(
        "all requests at install (Events, status, lease included)",
        both(&|f| {
            let verbs = [
                "get", "list", "watch", "create", "update", "patch", "delete",
            ];
            verbs
                .iter()
                .map(|v| f.install.get(v, None))
                .sum::<usize>()
                .to_string()
        }),
        "-",
        None,
    );
    row(
        "ClusterCSIDriver created → last operand write",
        both(&|f| {
            f.install_latency
                .map(|d| format!("{} ms", ms(d)))
                .unwrap_or_else(|| "-".into())
        }),
        "< 100 ms",
        None,
    );
    row(
        "writes per idle minute, leader election aside",
        both(&|f| per_minute(idle_writes(f))),
        "0",
        Some(figures.iter().all(|f| idle_writes(f) == 0)),
    );
    row(
        "GETs and LISTs per idle minute, leader election aside",
        both(&|f| per_minute(idle_reads(f))),
        "0",
        Some(figures.iter().all(|f| idle_reads(f) == 0)),
    );
    row(
        "requests per idle minute, leader election included",
        both(&|f| {
            let verbs = [
                "get", "list", "watch", "create", "update", "patch", "delete",
            ];
            per_minute(verbs.iter().map(|v| f.idle.get(v, None)).sum())
        }),
        "-",
        None,
    );
    row(
        &format!("credentials replaced → both hashes new (median of {ROTATIONS})"),
        both(&|f| format!("{} ms", ms(percentile(&f.rotations, 0.5)))),
        "< 500 ms",
        Some(
            figures
                .iter()
                .all(|f| percentile(&f.rotations, 0.5) < Duration::from_millis(500)),
        ),
    );
    row(
        "operand writes per rotation",
        both(&|f| {
            f.rotation_writes
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }),
        "2 (Deployment, DaemonSet)",
        Some(
            figures
                .iter()
                .all(|f| f.rotation_writes.iter().all(|n| *n == 2)),
        ),
    );
    let mut tables = vec![side];
    for (label, f) in labels.iter().zip(figures) {
        tables.push(f.install.table(&format!(
            "Operator requests during install on {label}, by verb"
        )));
        tables.push(f.idle.table(&format!(
            "Operator requests while idle ({} s) on {label}, by verb",
            IDLE.as_secs()
        )));
    }
    Section {
        name: NAME,
        title: "The Cinder operator on kube-sim and on the real control plane".into(),
        setup: format!(
            "One procedure on both substrates. **kube-sim**: the testbed in the bench process (6 Nodes, \
             workload simulator on, RBAC off; the operator is its ServiceAccount by name). **Real \
             control plane**: `realkube` in OpenShift mode (OpenShift's kube-apiserver with SCC admission \
             and restricted Pod Security, the real kube-controller-manager and kube-scheduler, etcd on \
             tmpfs, 6 Nodes kept by the kubelet stand-in, which turns the drivers' pods Running), \
             OpenShift's CRDs, the installer's singletons, and the Cinder operator's RBAC from \
             `manifests/kubernetes`; the operator authenticates with a TokenRequest token of its \
             ServiceAccount. On both, the product binary runs `csi-operator openstack-cinder start \
             --namespace {NS} --resync {}s` with the images of `testbed::example_images`; once it has \
             reconciled, the ClusterCSIDriver is created; the install ends when the controller \
             Deployment and node DaemonSet exist and the operator has made no write for {} s. Then it is \
             left alone for {} s, then the credentials Secret is replaced {ROTATIONS} times with a new \
             Keystone password. Requests come from kube-sim's request log and from the API server's \
             audit log (`realkube::audit`), read as the same records.",
            RESYNC.as_secs(),
            QUIET.as_secs(),
            IDLE.as_secs()
        ),
        tables,
        notes: vec![
            "Latencies are each server's own clock from the ClusterCSIDriver create to the operator's last operand write (kube-sim 1 ms resolution, the audit log's request-received times); \
             rotations are timed by the bench from sending the Secret to reading both templates with new hashes, polling every 5 ms. \
             Latencies are for comparison within this run; counts must hold on both."
                .into(),
            "The real API server runs admission (SCC, Pod Security, the ValidatingAdmissionPolicy plugin) and RBAC on every request, and etcd stores every write; \
             kube-sim does neither here, so the difference in latency is mostly the server's, not the operator's."
                .into(),
            "Leader election renews the Lease every 26 s with a GET and an update; it is counted in 'requests per idle minute, leader election included' only."
                .into(),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(verb: &str, resource: &str) -> RequestRecord {
        RequestRecord {
            at_ms: 0,
            verb: verb.into(),
            method: String::new(),
            path: String::new(),
            query: String::new(),
            user: OPERATOR_USER.into(),
            user_agent: String::new(),
            resource: resource.into(),
            subresource: String::new(),
            namespace: NS.into(),
            name: "x".into(),
            code: 200,
        }
    }

    fn figures(install_writes: usize, idle: &[RequestRecord], rotation_writes: usize) -> Figures {
        Figures {
            install: VerbCounts::default(),
            install_writes,
            install_objects: 26,
            install_failed: 0,
            install_latency: Some(Duration::from_millis(50)),
            idle: VerbCounts::of(idle),
            rotations: vec![Duration::from_millis(60)],
            rotation_writes: vec![rotation_writes],
        }
    }

    fn verdicts(section: &Section) -> Vec<String> {
        section.tables[0]
            .rows
            .iter()
            .map(|r| r[4].clone())
            .collect()
    }

    #[test]
    fn the_verdicts_pass_only_when_both_substrates_hold_the_counts() {
        let lease = [record("update", "coordination.k8s.io/leases")];
        let section = report(
            &["kube-sim", "real"],
            &[figures(26, &lease, 2), figures(26, &lease, 2)],
        );
        assert!(
            verdicts(&section).iter().all(|v| v == "PASS" || v == "-"),
            "{:?}",
            verdicts(&section)
        );

        // One substrate writes twice for an object, writes while idle, and rolls three objects.
        let bad = figures(
            27,
            &[
                record("update", "apps/deployments"),
                record("get", "/configmaps"),
            ],
            3,
        );
        let good = figures(26, &[], 2);
        let section = report(&["kube-sim", "real"], &[good, bad]);
        let over = verdicts(&section).iter().filter(|v| *v == "OVER").count();
        assert_eq!(over, 4, "{:?}", verdicts(&section));
    }
}
