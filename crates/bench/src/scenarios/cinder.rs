//! Scenario `cinder-operator`: the Cinder operator against DESIGN §7's budgets. The operator
//! runs as its own process (`csi-operator openstack-cinder start`), so its resident memory is
//! its own; the cluster (kube-sim + openstack-sim, seeded by `testbed`) runs inside the bench
//! process, whose request log tells the operator's requests apart by user.
//!
//! Measured: CR creation → every operand object applied, requests by verb during install and
//! during an idle window of several resync periods, the operator's resident memory in a cluster
//! full of unrelated objects, and credential-rotation latency to the new hash annotations. A
//! second, small cluster lacks the optional CRDs (snapshots, monitoring, OpenShift's config
//! API): there the idle window is measured again, and then the VolumeSnapshotClass CRD is
//! created to time how soon the operator applies its snapshot class.
//! This module only measures and reports; it asserts nothing (budgets are printed as
//! PASS/OVER, never enforced) and owns every process and file it starts or writes.

use super::budget::{
    CONVERGE_LIMIT, IDLE_WINDOW, INSTALL as BUDGET_INSTALL, MEMORY_KIB as BUDGET_MEMORY_KIB, QUIET,
    RESYNC,
};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube_sim::RequestRecord;
use testbed::{Settings, Testbed};

use super::Options;
use crate::cluster::{
    Target, Unrelated, VerbCounts, describe, query_suffix, seed_unrelated, verdict, written_objects,
};
use crate::measure::{Memory, mib, ms, percentile};
use crate::operator_process::{OperatorCommand, OperatorProcess};
use crate::report::{Section, Table};

pub const NAME: &str = "cinder-operator";

/// The operator's service account, as its pod would authenticate; kube-sim records it as the
/// user of every request the operator makes.
const OPERATOR_USER: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:openstack-cinder-csi-driver-operator";
const CR_NAME: &str = "cinder.csi.openstack.org";
const CONTROLLER: &str = "openstack-cinder-csi-driver-controller";
const NODE: &str = "openstack-cinder-csi-driver-node";
const METRIC_PREFIX: &str = "openstack_cinder_csi_driver_operator";
const DEP_PREFIX: &str = "operator.openshift.io/dep-";
/// Set to print every request the operator made during install and to run the operator at
/// `--v 4` (for finding out why a figure is what it is).
const TRACE_ENV: &str = "BENCH_CINDER_TRACE";
/// The operator's Event source (`cinder::USER_AGENT`).
const EVENT_COMPONENT: &str = "openstack-cinder-csi-driver-operator";

/// Bound on waiting for a rotation, so a stuck operator fails the run instead of hanging it.
const ROTATION_LIMIT: Duration = Duration::from_secs(30);
/// How often the rotation loop reads the pod templates: the resolution of that figure.
const ROTATION_POLL: Duration = Duration::from_millis(5);

/// DESIGN §7.
const BUDGET_ROTATION: Duration = Duration::from_millis(500);

/// CRDs a cluster may lack, and that the operator must neither need nor poll for: snapshots
/// (no snapshot controller installed), monitoring (no Prometheus operator), and OpenShift's
/// config API (plain Kubernetes; the operator then takes `--cluster-id`).
const OPTIONAL_CRDS: [&str; 6] = [
    "volumesnapshotclasses.snapshot.storage.k8s.io",
    "servicemonitors.monitoring.coreos.com",
    "prometheusrules.monitoring.coreos.com",
    "infrastructures.config.openshift.io",
    "proxies.config.openshift.io",
    "apiservers.config.openshift.io",
];
const SNAPSHOT_CLASS_CRD: &str = "volumesnapshotclasses.snapshot.storage.k8s.io";
/// The VolumeSnapshotClass the operator applies once its CRD is served.
const SNAPSHOT_CLASS: &str = "standard-csi";
/// Worker Nodes of the cluster without the optional CRDs (its figures are requests, not memory).
const BARE_WORKERS: usize = 3;
/// Bound on waiting for the deleted CRDs to go and for the snapshot class to appear.
const CRD_LIMIT: Duration = Duration::from_secs(30);
/// "A CRD created afterwards is picked up within seconds" (issue 10); not a DESIGN §7 figure.
const BUDGET_CRD_PICKUP: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy)]
struct Scale {
    /// Nodes in all (3 of them control-plane).
    nodes: usize,
    namespaces: usize,
    secrets: usize,
    config_maps: usize,
    rotations: usize,
}

impl Scale {
    fn new(quick: bool) -> Self {
        let full = Scale {
            nodes: 1_000,
            namespaces: 100,
            secrets: 10_000,
            config_maps: 10_000,
            rotations: 7,
        };
        if !quick {
            return full;
        }
        Scale {
            nodes: full.nodes / 10,
            namespaces: full.namespaces / 10,
            secrets: full.secrets / 10,
            config_maps: full.config_maps / 10,
            rotations: 3,
        }
    }
}

struct Install {
    /// From the CR's create request to the last operand write, as kube-sim timed them.
    elapsed: Duration,
    /// From the CR's create request to the last operand create (every object exists).
    all_created: Duration,
    /// Operand write requests in kube-sim's log.
    operand_writes: usize,
    /// Operand writes no write Event names (the Events are how creates get their names).
    unattributed: usize,
    /// Writes per operand object (`Kind.group/name -n namespace`), from the write Events.
    writes_per_object: BTreeMap<String, usize>,
    requests: VerbCounts,
    /// Operator requests that failed (`verb resource name → code`).
    failed: Vec<String>,
}

struct Idle {
    requests: VerbCounts,
    /// Requests other than watches and leader election, for the report.
    unexpected: Vec<String>,
}

struct Rotation {
    latency: Duration,
    /// Operator writes to operand objects caused by this rotation.
    operand_writes: usize,
    /// Requests to openstack-sim (Keystone, Nova, Cinder) caused by this rotation.
    openstack_requests: usize,
}

/// The cluster without the optional CRDs.
struct Bare {
    install: Install,
    idle: Idle,
    /// VolumeSnapshotClass CRD created → the operator's create of the snapshot class, on
    /// kube-sim's clock.
    snapshot_class: Duration,
    /// The operator's requests in that time (`verb path → code`).
    after_crd: Vec<String>,
}

struct Figures {
    scale: Scale,
    install: Install,
    idle: Idle,
    rotations: Vec<Rotation>,
    before_cr: Memory,
    after_install: Memory,
    end: Memory,
}

pub async fn run(options: Options) -> anyhow::Result<Section> {
    let scale = Scale::new(options.quick);
    eprintln!(
        "  starting kube-sim and openstack-sim with {} Nodes",
        scale.nodes
    );
    let bed = Testbed::start(Settings {
        worker_nodes: scale.nodes.saturating_sub(3),
        cinder_cluster_csi_driver: false,
        ..Settings::default()
    })
    .await
    .context("cannot start the testbed")?;
    seed_unrelated(
        &bed.client,
        Unrelated {
            namespaces: scale.namespaces,
            secrets: scale.secrets,
            config_maps: scale.config_maps,
        },
    )
    .await?;
    let mut operator = OperatorProcess::start(
        &bed,
        OperatorCommand {
            subcommand: "openstack-cinder",
            user: OPERATOR_USER,
            metric_prefix: METRIC_PREFIX,
            args: vec![
                "--namespace".into(),
                testbed::DRIVER_NAMESPACE.into(),
                "--resync".into(),
                format!("{}s", RESYNC.as_secs()),
            ],
            env: testbed::example_images(),
            trace: std::env::var_os(TRACE_ENV).is_some(),
        },
    )?;
    eprintln!(
        "  operator (pid {}) started; metrics at {}",
        operator.pid(),
        operator.metrics_addr()
    );
    let measured = measure_all(&bed, &mut operator, scale).await;
    let figures = operator.explain(measured)?;
    // The first cluster is done with: free the machine for the second.
    drop(operator);
    drop(bed);
    eprintln!("  a cluster without the optional CRDs");
    let bare = without_optional_crds().await?;
    Ok(section(&figures, &bare))
}

/// A small cluster without [`OPTIONAL_CRDS`]: install, the idle window, then the
/// VolumeSnapshotClass CRD appears.
async fn without_optional_crds() -> anyhow::Result<Bare> {
    let bed = Testbed::start(Settings {
        worker_nodes: BARE_WORKERS,
        cinder_cluster_csi_driver: false,
        ..Settings::default()
    })
    .await
    .context("cannot start the testbed without the optional CRDs")?;
    let crds: Api<CustomResourceDefinition> = Api::all(bed.client.clone());
    // Kept to be created again later, as an administrator installing the snapshot
    // controller would.
    let snapshot_crd = crds
        .get(SNAPSHOT_CLASS_CRD)
        .await
        .with_context(|| format!("cannot read the CRD {SNAPSHOT_CLASS_CRD}"))?;
    for name in OPTIONAL_CRDS {
        crds.delete(name, &DeleteParams::default())
            .await
            .with_context(|| format!("cannot delete the CRD {name}"))?;
    }
    let deadline = Instant::now() + CRD_LIMIT;
    for name in OPTIONAL_CRDS {
        while crds.get_opt(name).await?.is_some() {
            anyhow::ensure!(
                Instant::now() < deadline,
                "the CRD {name} was still there {CRD_LIMIT:?} after its deletion"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let mut operator = OperatorProcess::start(
        &bed,
        OperatorCommand {
            subcommand: "openstack-cinder",
            user: OPERATOR_USER,
            metric_prefix: METRIC_PREFIX,
            args: vec![
                "--namespace".into(),
                testbed::DRIVER_NAMESPACE.into(),
                "--resync".into(),
                format!("{}s", RESYNC.as_secs()),
                // No Infrastructure object to read it from.
                "--cluster-id".into(),
                Settings::default().infrastructure_name,
            ],
            env: testbed::example_images(),
            trace: std::env::var_os(TRACE_ENV).is_some(),
        },
    )?;
    let measured = async {
        operator.wait_ready().await?;
        eprintln!("  install without the optional CRDs");
        let install = install(&bed, &mut operator).await?;
        eprintln!("  idle for {IDLE_WINDOW:?} without the optional CRDs");
        let idle = idle(&bed, &mut operator).await?;
        eprintln!("  the VolumeSnapshotClass CRD appears");
        let (snapshot_class, after_crd) =
            snapshot_crd_appears(&bed, &mut operator, snapshot_crd).await?;
        Ok(Bare {
            install,
            idle,
            snapshot_class,
            after_crd,
        })
    }
    .await;
    operator.explain(measured)
}

/// Creates the VolumeSnapshotClass CRD and waits for the operator's snapshot class: the time
/// between the two creates on kube-sim's clock, and the operator's requests meanwhile.
async fn snapshot_crd_appears(
    bed: &Testbed,
    operator: &mut OperatorProcess,
    mut crd: CustomResourceDefinition,
) -> anyhow::Result<(Duration, Vec<String>)> {
    // As it was written (`api-approved.kubernetes.io` included), without what the server set.
    crd.metadata = ObjectMeta {
        name: Some(SNAPSHOT_CLASS_CRD.into()),
        annotations: crd.metadata.annotations.take(),
        labels: crd.metadata.labels.take(),
        ..Default::default()
    };
    crd.status = None;
    bed.kube.clear_requests();
    Api::<CustomResourceDefinition>::all(bed.client.clone())
        .create(&PostParams::default(), &crd)
        .await
        .with_context(|| format!("cannot create the CRD {SNAPSHOT_CLASS_CRD}"))?;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("snapshot.storage.k8s.io", "v1", "VolumeSnapshotClass"),
        "volumesnapshotclasses",
    );
    let classes: Api<DynamicObject> = Api::all_with(bed.client.clone(), &ar);
    let deadline = Instant::now() + CRD_LIMIT;
    loop {
        operator.check_alive()?;
        // A 404 while the new kind is not yet served reads as absent too.
        if classes
            .get_opt(SNAPSHOT_CLASS)
            .await
            .ok()
            .flatten()
            .is_some()
        {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the operator did not apply the VolumeSnapshotClass {SNAPSHOT_CLASS} within \
             {CRD_LIMIT:?} of its CRD's creation; conditions: {:?}",
            bed.conditions(CR_NAME).await
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let log = bed.kube.requests();
    let at = |pred: &dyn Fn(&RequestRecord) -> bool| log.iter().find(|r| pred(r)).map(|r| r.at_ms);
    let crd_created = at(&|r| {
        r.verb == "create"
            && r.resource == "apiextensions.k8s.io/customresourcedefinitions"
            && r.code < 300
    })
    .context("kube-sim's log has no create of the CRD")?;
    let class_created = at(&|r| {
        operator.is_ours(r)
            && r.verb == "create"
            && r.resource == "snapshot.storage.k8s.io/volumesnapshotclasses"
            && r.code < 300
    })
    .context("kube-sim's log has no create of the snapshot class by the operator")?;
    let between = log
        .iter()
        .filter(|r| operator.is_ours(r) && r.at_ms <= class_created)
        .map(describe)
        .collect();
    Ok((
        Duration::from_millis(class_created.saturating_sub(crd_created)),
        between,
    ))
}

async fn measure_all(
    bed: &Testbed,
    operator: &mut OperatorProcess,
    scale: Scale,
) -> anyhow::Result<Figures> {
    operator.wait_ready().await?;
    let before_cr = operator.memory()?;
    eprintln!("  install");
    let install = install(bed, operator).await?;
    let after_install = operator.memory()?;
    eprintln!("  idle for {IDLE_WINDOW:?}");
    let idle = idle(bed, operator).await?;
    eprintln!("  {} credential rotations", scale.rotations);
    let mut rotations = Vec::new();
    for i in 1..=scale.rotations {
        rotations.push(rotate(bed, operator, i).await?);
    }
    let end = operator.memory()?;
    Ok(Figures {
        scale,
        install,
        idle,
        rotations,
        before_cr,
        after_install,
        end,
    })
}

async fn install(bed: &Testbed, operator: &mut OperatorProcess) -> anyhow::Result<Install> {
    bed.kube.clear_requests();
    bed.create_cluster_csi_driver(CR_NAME)
        .await
        .context("cannot create the ClusterCSIDriver")?;
    let deadline = Instant::now() + CONVERGE_LIMIT;
    loop {
        operator.check_alive()?;
        let c = bed.conditions(CR_NAME).await;
        let available = |t: &str| {
            c.get(&format!("OpenStackCinderDriver{t}Available"))
                .is_some_and(|(status, _, _)| status == "True")
        };
        if available("ControllerServiceController") && available("NodeServiceController") {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the driver did not become Available within {CONVERGE_LIMIT:?}; conditions: {c:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    operator.wait_quiet(bed, QUIET).await?;

    let log = bed.kube.requests();
    let created = log
        .iter()
        .find(|r| {
            r.verb == "create"
                && r.resource == "operator.openshift.io/clustercsidrivers"
                && r.user != OPERATOR_USER
        })
        .context("kube-sim's request log has no create of the ClusterCSIDriver")?
        .at_ms;
    let ours: Vec<RequestRecord> = log.into_iter().filter(|r| operator.is_ours(r)).collect();
    if std::env::var_os(TRACE_ENV).is_some() {
        for r in &ours {
            eprintln!(
                "    {:>6} ms {:<6} {}{} → {}",
                r.at_ms.saturating_sub(created),
                r.verb,
                r.path,
                query_suffix(&r.query),
                r.code
            );
        }
    }
    let operand: Vec<&RequestRecord> = ours
        .iter()
        .filter(|r| r.is_write() && Target::of(r) == Target::Operand)
        .collect();
    let last = operand
        .iter()
        .map(|r| r.at_ms)
        .max()
        .context("the operator wrote no operand object")?;
    // Creates only: when every object first existed, before any re-write.
    let last_create = operand
        .iter()
        .filter(|r| r.verb == "create")
        .map(|r| r.at_ms)
        .max()
        .unwrap_or(last);
    let writes_per_object = written_objects(&bed.client, EVENT_COMPONENT).await?;
    let evented: usize = writes_per_object.values().sum();
    let unattributed = operand.len().saturating_sub(evented);
    let failed = ours
        .iter()
        .filter(|r| r.code >= 400)
        .map(|r| format!("{} {} {} → {}", r.verb, r.resource, r.name, r.code))
        .collect();
    Ok(Install {
        elapsed: Duration::from_millis(last.saturating_sub(created)),
        all_created: Duration::from_millis(last_create.saturating_sub(created)),
        operand_writes: operand.len(),
        unattributed,
        writes_per_object,
        requests: VerbCounts::of(&ours),
        failed,
    })
}

async fn idle(bed: &Testbed, operator: &mut OperatorProcess) -> anyhow::Result<Idle> {
    bed.kube.clear_requests();
    tokio::time::sleep(IDLE_WINDOW).await;
    operator.check_alive()?;
    let ours = operator.requests(bed);
    let unexpected = ours
        .iter()
        .filter(|r| r.verb != "watch" && Target::of(r) != Target::Lease)
        .map(describe)
        .collect();
    Ok(Idle {
        requests: VerbCounts::of(&ours),
        unexpected,
    })
}

/// The `operator.openshift.io/dep-…` annotations of a pod template.
fn dep_hashes(annotations: Option<&BTreeMap<String, String>>) -> BTreeMap<String, String> {
    annotations
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with(DEP_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

async fn template_hashes(
    client: &Client,
) -> anyhow::Result<(BTreeMap<String, String>, BTreeMap<String, String>)> {
    let ns = testbed::DRIVER_NAMESPACE;
    let deployment = Api::<Deployment>::namespaced(client.clone(), ns)
        .get(CONTROLLER)
        .await
        .with_context(|| format!("cannot read Deployment {CONTROLLER}"))?;
    let daemon_set = Api::<DaemonSet>::namespaced(client.clone(), ns)
        .get(NODE)
        .await
        .with_context(|| format!("cannot read DaemonSet {NODE}"))?;
    let of_template = |t: Option<&ObjectMeta>| dep_hashes(t.and_then(|m| m.annotations.as_ref()));
    Ok((
        of_template(
            deployment
                .spec
                .as_ref()
                .and_then(|s| s.template.metadata.as_ref()),
        ),
        of_template(
            daemon_set
                .spec
                .as_ref()
                .and_then(|s| s.template.metadata.as_ref()),
        ),
    ))
}

/// One credential rotation as an administrator (or the cloud credential operator) does it: the
/// password changes in Keystone, then the Secret is replaced with the new clouds.yaml. Timed
/// from sending the replace to both pod templates carrying new hashes.
async fn rotate(
    bed: &Testbed,
    operator: &mut OperatorProcess,
    i: usize,
) -> anyhow::Result<Rotation> {
    let (deployment_before, daemon_set_before) = template_hashes(&bed.client).await?;
    anyhow::ensure!(
        !deployment_before.is_empty() && !daemon_set_before.is_empty(),
        "the pod templates carry no {DEP_PREFIX}… annotation to watch"
    );
    let password = format!("rotated-password-{i}");
    bed.openstack
        .set_password(openstack_sim::DEFAULT_USER, &password);
    let clouds_yaml =
        bed.openstack
            .clouds_yaml_password("openstack", openstack_sim::DEFAULT_USER, &password);
    let secrets: Api<Secret> = Api::namespaced(bed.client.clone(), testbed::DRIVER_NAMESPACE);
    let mut secret = secrets
        .get(testbed::CREDENTIALS_SECRET)
        .await
        .context("cannot read the credentials Secret")?;
    secret
        .data
        .get_or_insert_with(BTreeMap::new)
        .insert("clouds.yaml".into(), ByteString(clouds_yaml.into_bytes()));
    bed.kube.clear_requests();
    bed.openstack.clear_requests();

    let sent = Instant::now();
    secrets
        .replace(testbed::CREDENTIALS_SECRET, &PostParams::default(), &secret)
        .await
        .context("cannot replace the credentials Secret")?;
    let latency = loop {
        let (deployment, daemon_set) = template_hashes(&bed.client).await?;
        if deployment != deployment_before && daemon_set != daemon_set_before {
            break sent.elapsed();
        }
        operator.check_alive()?;
        if sent.elapsed() >= ROTATION_LIMIT {
            anyhow::bail!(
                "rotation {i}: the pod templates kept their hashes for {ROTATION_LIMIT:?} \
                 (Deployment {}, DaemonSet {}); OpenStack requests since: {:?}; conditions: {:?}",
                if deployment == deployment_before {
                    "unchanged"
                } else {
                    "changed"
                },
                if daemon_set == daemon_set_before {
                    "unchanged"
                } else {
                    "changed"
                },
                openstack_requests(bed),
                bed.conditions(CR_NAME).await
            );
        }
        tokio::time::sleep(ROTATION_POLL).await;
    };
    operator.wait_quiet(bed, QUIET).await?;
    let operand_writes = operator
        .requests(bed)
        .iter()
        .filter(|r| r.is_write() && Target::of(r) == Target::Operand)
        .count();
    Ok(Rotation {
        latency,
        operand_writes,
        openstack_requests: bed.openstack.requests().len(),
    })
}

/// openstack-sim's request log as `METHOD path → status` lines.
fn openstack_requests(bed: &Testbed) -> Vec<String> {
    bed.openstack
        .requests()
        .iter()
        .map(|r| format!("{} {} → {}", r.method, r.path, r.status))
        .collect()
}

/// Writes and live reads (GET/LIST) in an idle window, leader election aside.
fn idle_counts(idle: &Idle) -> (usize, usize) {
    let r = &idle.requests;
    (
        r.without_lease(&["create", "update", "patch", "delete", "deletecollection"]),
        r.without_lease(&["get", "list"]),
    )
}

fn section(f: &Figures, bare: &Bare) -> Section {
    let objects = f.install.writes_per_object.len();
    let operand_writes = f.install.operand_writes;
    let most = f
        .install
        .writes_per_object
        .values()
        .copied()
        .max()
        .unwrap_or(0);
    let idle = &f.idle.requests;
    let (idle_writes, idle_reads) = idle_counts(&f.idle);
    let (bare_writes, bare_reads) = idle_counts(&bare.idle);
    let latencies: Vec<Duration> = f.rotations.iter().map(|r| r.latency).collect();
    let median = percentile(&latencies, 50.0);

    let mut budgets = Table::new(
        "Against the budgets of DESIGN §7",
        &["What", "Measured", "Budget", "Verdict"],
    );
    budgets.row(vec![
        format!(
            "ClusterCSIDriver created → last operand write, every object applied ({objects} objects)"
        ),
        format!("{} ms", f.install.elapsed.as_millis()),
        format!("< {} ms", BUDGET_INSTALL.as_millis()),
        verdict(f.install.elapsed < BUDGET_INSTALL),
    ]);
    budgets.row(vec![
        format!("ClusterCSIDriver created → every operand object created ({objects} objects)"),
        format!("{} ms", f.install.all_created.as_millis()),
        format!("< {} ms", BUDGET_INSTALL.as_millis()),
        verdict(f.install.all_created < BUDGET_INSTALL),
    ]);
    budgets.row(vec![
        "writes at install (operand objects)".into(),
        format!(
            "{operand_writes} writes for {objects} objects (at most {most} per object), {} failed requests",
            f.install.failed.len()
        ),
        "one per object, no retries without cause".into(),
        verdict(operand_writes == objects && most <= 1 && f.install.failed.is_empty()),
    ]);
    budgets.row(vec![
        format!(
            "requests while idle ({} s = {} resync periods), leader election aside",
            IDLE_WINDOW.as_secs(),
            IDLE_WINDOW.as_secs() / RESYNC.as_secs().max(1)
        ),
        format!(
            "{idle_writes} writes, {idle_reads} GETs/LISTs, {} new watches",
            idle.get("watch", None)
        ),
        "no writes, no live GETs; watches only".into(),
        verdict(idle_writes == 0 && idle_reads == 0),
    ]);
    budgets.row(vec![
        format!(
            "requests while idle, the optional CRDs absent ({} s), leader election aside",
            IDLE_WINDOW.as_secs()
        ),
        format!(
            "{bare_writes} writes, {bare_reads} GETs/LISTs, {} new watches",
            bare.idle.requests.get("watch", None)
        ),
        "no writes, no live GETs; watches only".into(),
        verdict(bare_writes == 0 && bare_reads == 0),
    ]);
    budgets.row(vec![
        "VolumeSnapshotClass CRD created afterwards → the snapshot class applied".into(),
        format!("{} ms", bare.snapshot_class.as_millis()),
        format!("< {} s", BUDGET_CRD_PICKUP.as_secs()),
        verdict(bare.snapshot_class < BUDGET_CRD_PICKUP),
    ]);
    for (label, kib) in [
        (
            "resident memory after install, VmRSS",
            f.after_install.rss_kib,
        ),
        ("resident memory peak, VmHWM (whole run)", f.end.hwm_kib),
    ] {
        budgets.row(vec![
            format!(
                "{label} ({} Nodes, {} unrelated Secrets/ConfigMaps)",
                f.scale.nodes,
                f.scale.secrets + f.scale.config_maps
            ),
            format!("{} MiB", mib(kib)),
            format!("< {} MiB", BUDGET_MEMORY_KIB / 1024),
            verdict(kib < BUDGET_MEMORY_KIB),
        ]);
    }
    budgets.row(vec![
        format!(
            "credentials Secret replaced → new hash on Deployment and DaemonSet (median of {})",
            latencies.len()
        ),
        format!("{} ms", ms(median)),
        format!("< {} ms", BUDGET_ROTATION.as_millis()),
        verdict(median < BUDGET_ROTATION),
    ]);

    let install_table = f
        .install
        .requests
        .table("Operator requests during install, by verb");
    let idle_table = idle.table(&format!(
        "Operator requests in the idle window ({} s), by verb",
        IDLE_WINDOW.as_secs()
    ));
    let bare_idle_table = bare.idle.requests.table(&format!(
        "Operator requests in the idle window ({} s) with the optional CRDs absent, by verb",
        IDLE_WINDOW.as_secs()
    ));

    let mut rotation_table = Table::new(
        "Credential rotations",
        &[
            "Rotation",
            "Secret replaced → both hashes new, ms",
            "operand writes",
            "OpenStack requests",
        ],
    );
    for (i, r) in f.rotations.iter().enumerate() {
        rotation_table.row(vec![
            (i + 1).to_string(),
            ms(r.latency),
            r.operand_writes.to_string(),
            r.openstack_requests.to_string(),
        ]);
    }
    rotation_table.row(vec!["median".into(), ms(median), "-".into(), "-".into()]);
    rotation_table.row(vec![
        "max".into(),
        ms(percentile(&latencies, 100.0)),
        "-".into(),
        "-".into(),
    ]);

    let mut memory_table = Table::new(
        "Operator resident memory",
        &["When", "VmRSS MiB", "VmHWM MiB"],
    );
    for (label, m) in [
        ("caches synced, no ClusterCSIDriver yet", f.before_cr),
        ("after install", f.after_install),
        ("after idle window and rotations", f.end),
    ] {
        memory_table.row(vec![label.into(), mib(m.rss_kib), mib(m.hwm_kib)]);
    }

    let mut notes = vec![
        "Install times are kube-sim's own clock (1 ms resolution): from the arrival of the ClusterCSIDriver create request to the arrival of the operator's last write to an operand object (the budget's figure), and to its last create (every object exists, before any re-write), so neither the client nor polling is in them.".to_string(),
        "Operand objects are everything the operator wrote except its ClusterCSIDriver (status, observedConfig), Events and its Lease. kube-sim's log does not name the object of a create, so objects are counted from the write Events the operator records for each create, update and delete.".to_string(),
        format!(
            "Leader election is counted apart: the leader renews its Lease every retry period (26 s) with a GET and an update, as client-go does; the idle window ({} s) may hold one renewal.",
            IDLE_WINDOW.as_secs()
        ),
        format!(
            "Rotation latency is measured by the bench process, from sending the Secret replace to reading both pod templates with new `{DEP_PREFIX}…` values, polling every {} ms; the operator also lists availability zones from openstack-sim again with the new credentials before it is done.",
            ROTATION_POLL.as_millis()
        ),
        "kube-sim and openstack-sim run in the bench process and share the machine's cores with the operator.".to_string(),
    ];
    let repeated: Vec<String> = f
        .install
        .writes_per_object
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(k, n)| format!("{k} ×{n}"))
        .collect();
    if !repeated.is_empty() {
        notes.push(format!(
            "Operand objects written more than once at install: {}.",
            repeated.join(", ")
        ));
    }
    if f.install.unattributed > 0 {
        notes.push(format!(
            "{} operand writes at install have no write Event naming their object, so the per-object count covers only the others.",
            f.install.unattributed
        ));
    }
    if !f.install.failed.is_empty() {
        notes.push(format!(
            "Failed operator requests at install: {}.",
            f.install.failed.join(", ")
        ));
    }
    if !f.idle.unexpected.is_empty() {
        notes.push(format!(
            "Requests in the idle window other than watches and leader election: {}.",
            f.idle.unexpected.join(", ")
        ));
    }
    notes.push(format!(
        "Without the optional CRDs the install made {} operand writes for {} objects; from the VolumeSnapshotClass CRD's create to the operator's create of `{SNAPSHOT_CLASS}` (kube-sim's clock) the operator made these requests: {}.",
        bare.install.operand_writes,
        bare.install.writes_per_object.len(),
        bare.after_crd.join(", ")
    ));
    if !bare.idle.unexpected.is_empty() {
        notes.push(format!(
            "Requests in the idle window without the optional CRDs other than watches and leader election: {}.",
            bare.idle.unexpected.join(", ")
        ));
    }
    if !bare.install.failed.is_empty() {
        notes.push(format!(
            "Failed operator requests at install without the optional CRDs: {}.",
            bare.install.failed.join(", ")
        ));
    }

    let setup = format!(
        "The cluster is `testbed` (kube-sim with its workload simulator, and openstack-sim) inside \
         the `bench` process: an OpenShift-on-OpenStack cluster with {} Nodes (3 control-plane), \
         plus {} Secrets and {} ConfigMaps (about 1 KiB each) in {} unrelated namespaces, all \
         created before the operator starts. The operator runs as its own process, the product binary the image ships (built by `hack/build-product.sh`), `csi-operator \
         openstack-cinder start --kubeconfig F --namespace openshift-cluster-csi-drivers \
         --metrics-listen ADDR --resync {}s` with the image variables of \
         `testbed::example_images`, authenticated as its service account so kube-sim's request \
         log tells its requests apart. Once its caches are synced (its first reconcile shows on \
         `/metrics`), the ClusterCSIDriver `{CR_NAME}` is created; the install ends when the \
         controller and node services are Available and the operator has made no write for {} s. \
         Then the operator is left alone for {} s ({} resync periods), and then the credentials \
         Secret is rotated {} times (new Keystone password, Secret replaced with the new \
         clouds.yaml), each time waiting until the operator is quiet again. Memory is VmRSS and \
         VmHWM of the operator process from `/proc/<pid>/status`.\n\n\
         A second, smaller cluster ({} Nodes, no unrelated objects) is seeded the same way and \
         then loses the optional CRDs {}, as on a cluster without the snapshot controller, the \
         Prometheus operator or OpenShift's config API; the operator is started there with \
         `--cluster-id` (no Infrastructure object) and goes through the same install and idle \
         window. Then the VolumeSnapshotClass CRD is created again and the time from its create \
         to the operator's create of the `{SNAPSHOT_CLASS}` VolumeSnapshotClass is taken from \
         kube-sim's log.\n",
        f.scale.nodes,
        f.scale.secrets,
        f.scale.config_maps,
        f.scale.namespaces,
        RESYNC.as_secs(),
        QUIET.as_secs(),
        IDLE_WINDOW.as_secs(),
        IDLE_WINDOW.as_secs() / RESYNC.as_secs().max(1),
        f.scale.rotations,
        3 + BARE_WORKERS,
        OPTIONAL_CRDS
            .iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    Section {
        name: NAME,
        title: "The Cinder operator".into(),
        setup,
        tables: vec![
            budgets,
            install_table,
            idle_table,
            bare_idle_table,
            rotation_table,
            memory_table,
        ],
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_dependency_hashes_are_compared() {
        let annotations = BTreeMap::from([
            (format!("{DEP_PREFIX}abc"), "v1".to_string()),
            (
                "kubectl.kubernetes.io/restartedAt".to_string(),
                "x".to_string(),
            ),
        ]);
        let hashes = dep_hashes(Some(&annotations));
        assert_eq!(hashes.len(), 1);
        assert!(dep_hashes(None).is_empty());
    }
}
