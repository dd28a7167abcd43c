//! Scenario `cluster-storage`: the Cluster Storage Operator (CSO) against DESIGN §7's budgets,
//! the CSO being an operator like the driver operators. It runs as its own process
//! (`csi-operator cluster-storage start`), so its resident memory is its own; the cluster
//! (kube-sim + openstack-sim, seeded by `testbed`) runs inside the bench process, whose request
//! log tells the CSO's requests apart by user. The release manifests (`manifests/openshift/`)
//! are applied as the cluster version operator applies them; the driver operators do NOT run
//! (their Deployments are simulated pods), so this measures the CSO alone, and the scenario
//! plays the driver operators by writing ClusterCSIDriver conditions.
//!
//! Measured: `Storage/cluster` created → every per-driver object applied and
//! `ClusterOperator/storage` written, the writes at install by resource and verb against the
//! number of objects, requests during an idle window of several resync periods, a
//! ClusterCSIDriver condition change → `ClusterOperator/storage` updated, and the CSO's
//! resident memory in a cluster full of unrelated objects. This module only measures and
//! reports; it asserts nothing (budgets are printed as PASS/OVER, never enforced) and owns
//! every process and file it starts or writes.

use super::budget::{
    CONVERGE_LIMIT, IDLE_WINDOW, INSTALL as BUDGET_INSTALL, MEMORY_KIB as BUDGET_MEMORY_KIB, QUIET,
    RESYNC,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube_sim::RequestRecord;
use serde_json::{Value, json};
use testbed::cvo::Manifest;
use testbed::{Settings, Testbed};

use super::Options;
use crate::cluster::{Unrelated, describe, query_suffix, seed_unrelated, verdict, written_objects};
use crate::measure::{Memory, mib, ms, percentile};
use crate::operator_process::{OperatorCommand, OperatorProcess};
use crate::report::{Section, Table};

pub const NAME: &str = "cluster-storage";

/// The CSO's service account (manifests/openshift), as its pod would authenticate; kube-sim
/// records it as the user of every request the CSO makes.
const CSO_USER: &str =
    "system:serviceaccount:openshift-cluster-storage-operator:cluster-storage-operator";
const CSO_NAMESPACE: &str = "openshift-cluster-storage-operator";
const METRIC_PREFIX: &str = "cluster_storage_operator";
/// The CSO's Event source (`cluster_storage::operator::COMPONENT`).
const EVENT_COMPONENT: &str = "cluster-storage-operator";
/// Set to print every request the CSO made during install and to run it at `--v 4`.
const TRACE_ENV: &str = "BENCH_CSO_TRACE";
/// The release manifests, applied as the cluster version operator does.
const MANIFEST_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../manifests/openshift");
/// The manifest the CVO gives the CSO its environment (images, versions) with.
const CSO_DEPLOYMENT_MANIFEST: &str = "0000_50_cluster-storage-operator_10_deployment.yaml";

const CINDER_CR: &str = testbed::CINDER_CLUSTER_CSI_DRIVER;
const MANILA_CR: &str = testbed::MANILA_CLUSTER_CSI_DRIVER;
/// The driver operator Deployments the CSO applies, in `testbed::DRIVER_NAMESPACE`.
const DRIVER_OPERATORS: [&str; 2] = [
    "manila-csi-driver-operator",
    "openstack-cinder-csi-driver-operator",
];
/// The Manila CA syncer's copy of `openshift-config/cloud-provider-config`.
const CA_COPY: &str = "cloud-provider-config";
/// The Cinder condition the condition-change phase toggles, as the Cinder operator posts it.
const CINDER_AVAILABLE: &str = "OpenStackCinderDriverControllerServiceControllerAvailable";

const STORAGES: &str = "operator.openshift.io/storages";
const CLUSTER_OPERATORS: &str = "config.openshift.io/clusteroperators";
const CLUSTER_CSI_DRIVERS: &str = "operator.openshift.io/clustercsidrivers";
const LEASES: &str = "coordination.k8s.io/leases";

/// Bound on waiting for a condition change to reach the ClusterOperator.
const CHANGE_LIMIT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(10);

/// DESIGN §7. It has no figure for a status roll-up; the nearest is "a change in the cluster
/// → the operator's answer written" of a credential rotation (500 ms).
const BUDGET_CHANGE: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Copy)]
struct Scale {
    /// Nodes in all (3 of them control-plane).
    nodes: usize,
    unrelated: Unrelated,
    changes: usize,
}

impl Scale {
    fn new(quick: bool) -> Self {
        if quick {
            Scale {
                nodes: 100,
                unrelated: Unrelated {
                    namespaces: 10,
                    secrets: 1_000,
                    config_maps: 1_000,
                },
                changes: 3,
            }
        } else {
            Scale {
                nodes: 1_000,
                unrelated: Unrelated {
                    namespaces: 100,
                    secrets: 10_000,
                    config_maps: 10_000,
                },
                changes: 7,
            }
        }
    }
}

/// What one CSO write was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum WriteKind {
    /// A per-driver object the CSO applies (RBAC, Service, ConfigMap, Deployment,
    /// ClusterCSIDriver, the CA copy).
    Object,
    /// `Storage/cluster` spec (the config observer's `observedConfig`, OLM progress).
    StorageSpec,
    /// A `status` subresource write (`Storage/cluster`, `ClusterOperator/storage`).
    Status,
    Event,
    Lease,
}

impl WriteKind {
    fn of(r: &RequestRecord) -> WriteKind {
        match r.resource.as_str() {
            LEASES => WriteKind::Lease,
            "/events" | "events.k8s.io/events" => WriteKind::Event,
            _ if r.subresource == "status" => WriteKind::Status,
            STORAGES => WriteKind::StorageSpec,
            _ => WriteKind::Object,
        }
    }

    fn label(self) -> &'static str {
        match self {
            WriteKind::Object => "per-driver object",
            WriteKind::StorageSpec => "Storage spec",
            WriteKind::Status => "status",
            WriteKind::Event => "Event",
            WriteKind::Lease => "leader election",
        }
    }
}

/// What a request of the CSO was for, as the request tables split them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    /// What it applies (per-driver objects) and the cluster facts it reads.
    Other,
    /// Its own CR and ClusterOperator (spec and status).
    Own,
    Event,
    Lease,
}

impl Class {
    const ALL: [Class; 4] = [Class::Other, Class::Own, Class::Event, Class::Lease];

    fn of(r: &RequestRecord) -> Class {
        match r.resource.as_str() {
            LEASES => Class::Lease,
            "/events" | "events.k8s.io/events" => Class::Event,
            STORAGES | CLUSTER_OPERATORS => Class::Own,
            _ => Class::Other,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Class::Other => "per-driver objects, cluster config",
            Class::Own => "Storage, ClusterOperator",
            Class::Event => "Events",
            Class::Lease => "Lease",
        }
    }
}

/// Requests counted by verb (rows) and by what they were for (columns).
fn verb_table(title: &str, records: &[RequestRecord]) -> Table {
    let mut counts: BTreeMap<String, BTreeMap<Class, usize>> = BTreeMap::new();
    for r in records {
        *counts
            .entry(r.verb.clone())
            .or_default()
            .entry(Class::of(r))
            .or_default() += 1;
    }
    let mut header = vec!["Verb"];
    header.extend(Class::ALL.iter().map(|c| c.label()));
    header.push("all");
    let mut table = Table::new(title, &header);
    let order = [
        "get", "list", "watch", "create", "update", "patch", "delete",
    ];
    let mut verbs: Vec<&str> = order
        .iter()
        .copied()
        .filter(|v| counts.contains_key(*v))
        .collect();
    verbs.extend(
        counts
            .keys()
            .map(String::as_str)
            .filter(|v| !order.contains(v)),
    );
    if verbs.is_empty() {
        let mut row = vec!["(no requests)".to_string()];
        row.extend((0..=Class::ALL.len()).map(|_| "0".to_string()));
        table.row(row);
    }
    for verb in verbs {
        let by = counts.get(verb);
        let n = |c: &Class| by.and_then(|b| b.get(c)).copied().unwrap_or(0);
        let mut row = vec![verb.to_string()];
        row.extend(Class::ALL.iter().map(|c| n(c).to_string()));
        row.push(Class::ALL.iter().map(n).sum::<usize>().to_string());
        table.row(row);
    }
    table
}

/// The resource without its group, for the narrow columns (`clusteroperators/status`).
fn short_label(r: &RequestRecord) -> String {
    let resource = r.resource.rsplit('/').next().unwrap_or_default();
    if r.subresource.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}/{}", r.subresource)
    }
}

/// `group/resource[/subresource]` as a short label (`configmaps`, `apps/deployments`).
fn resource_label(r: &RequestRecord) -> String {
    let resource = r.resource.trim_start_matches('/');
    if r.subresource.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}/{}", r.subresource)
    }
}

/// Writes of one resource at install.
#[derive(Debug, Default, Clone)]
struct ResourceWrites {
    kind: Option<WriteKind>,
    /// Distinct objects written (namespace/name).
    objects: BTreeSet<String>,
    by_verb: BTreeMap<String, usize>,
}

impl ResourceWrites {
    fn total(&self) -> usize {
        self.by_verb.values().sum()
    }
}

/// CSO writes grouped by resource, with the objects each named (kube-sim's log names the
/// object of a create too, from the request body).
fn writes_by_resource(records: &[RequestRecord]) -> BTreeMap<String, ResourceWrites> {
    let mut out: BTreeMap<String, ResourceWrites> = BTreeMap::new();
    for r in records.iter().filter(|r| r.is_write()) {
        let entry = out.entry(resource_label(r)).or_default();
        entry.kind = Some(WriteKind::of(r));
        entry.objects.insert(object_key(r));
        *entry.by_verb.entry(r.verb.clone()).or_default() += 1;
    }
    out
}

/// A GET answered 404: the apply engine reading an object that does not exist yet, which is
/// how it learns to create it when the object's kind is not in its watch cache. Not a failure.
fn is_read_of_missing(r: &RequestRecord) -> bool {
    r.verb == "get" && r.code == 404
}

/// Requests grouped as `verb resource ×count (code ×n, …)`, most frequent first, so that a
/// per-reconcile pattern reads as one line rather than hundreds.
fn summarize<'a>(records: impl Iterator<Item = &'a RequestRecord>) -> Vec<String> {
    let mut groups: BTreeMap<(String, String), BTreeMap<u16, usize>> = BTreeMap::new();
    for r in records {
        *groups
            .entry((r.verb.clone(), resource_label(r)))
            .or_default()
            .entry(r.code)
            .or_default() += 1;
    }
    let mut lines: Vec<(usize, String)> = groups
        .into_iter()
        .map(|((verb, resource), codes)| {
            let total: usize = codes.values().sum();
            let codes: Vec<String> = codes
                .iter()
                .map(|(code, n)| format!("{code} ×{n}"))
                .collect();
            (
                total,
                format!("{verb} {resource} ×{total} ({})", codes.join(", ")),
            )
        })
        .collect();
    lines.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    lines.into_iter().map(|(_, line)| line).collect()
}

fn object_key(r: &RequestRecord) -> String {
    if r.namespace.is_empty() {
        r.name.clone()
    } else {
        format!("{}/{}", r.namespace, r.name)
    }
}

struct Install {
    /// From the Storage create to the first ClusterOperator status write after every object
    /// was created (kube-sim's clock): the budget's figure.
    applied_and_reported: Option<Duration>,
    /// From the Storage create to the last create of a per-driver object.
    all_created: Duration,
    /// From the Storage create to the last write of a per-driver object.
    last_object_write: Duration,
    /// From the Storage create to the first ClusterOperator status write.
    first_report: Option<Duration>,
    writes: BTreeMap<String, ResourceWrites>,
    /// Distinct per-driver objects written.
    objects: usize,
    object_writes: usize,
    /// Most writes of any one per-driver object, and which objects were written more than once.
    most_per_object: usize,
    repeated: Vec<String>,
    /// Per-driver objects the write Events name (a cross-check of the count from the log).
    evented_objects: usize,
    /// Expected objects that the scenario found missing afterwards.
    missing: Vec<String>,
    /// CSO requests by verb and by what they were for.
    requests: Table,
    /// Live reads (GET/LIST) at install, summarized by verb and resource.
    reads: Vec<String>,
    failed: Vec<String>,
    /// Storage and ClusterOperator status writes, with their time from the Storage create.
    status_trail: Vec<String>,
}

struct Idle {
    requests: Table,
    /// Writes and GETs/LISTs, leader election aside; new watches.
    writes: usize,
    reads: usize,
    watches: usize,
    unexpected: Vec<String>,
}

struct Change {
    /// The Cinder condition's new status.
    status: &'static str,
    /// From the ClusterCSIDriver status patch to the CSO's ClusterOperator status write.
    latency: Duration,
    /// From the patch to the CSO's Storage status write.
    storage_latency: Option<Duration>,
    /// ClusterOperator/storage `Available` after the change.
    co_available: String,
    /// CSO writes caused by the change, leader election aside, described by resource.
    writes: BTreeMap<String, usize>,
    live_reads: usize,
}

struct Figures {
    scale: Scale,
    install: Install,
    idle: Idle,
    changes: Vec<Change>,
    before_storage: Memory,
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
        ..Settings::for_cluster_storage_operator()
    })
    .await
    .context("cannot start the testbed")?;
    seed_unrelated(&bed.client, scale.unrelated).await?;

    let manifests = testbed::cvo::load(&PathBuf::from(MANIFEST_DIR))
        .with_context(|| format!("cannot load the release manifests of {MANIFEST_DIR}"))?;
    let (storage_cr, others): (Vec<Manifest>, Vec<Manifest>) = manifests
        .into_iter()
        .partition(|m| m.object.get("kind").and_then(Value::as_str) == Some("Storage"));
    anyhow::ensure!(
        storage_cr.len() == 1,
        "expected one Storage manifest in {MANIFEST_DIR}, found {}",
        storage_cr.len()
    );
    let env = manifest_env(&others)?;
    eprintln!(
        "  applying {} release manifests (Storage/cluster held back)",
        others.len()
    );
    testbed::cco::create_namespace(&bed.client)
        .await
        .context("cannot create the cloud credential operator's namespace")?;
    testbed::cvo::apply_all(&bed.client, &others)
        .await
        .context("cannot apply the release manifests")?;

    let mut operator = OperatorProcess::start(
        &bed,
        OperatorCommand {
            subcommand: "cluster-storage",
            user: CSO_USER,
            metric_prefix: METRIC_PREFIX,
            args: vec![
                "--namespace".into(),
                CSO_NAMESPACE.into(),
                "--resync".into(),
                format!("{}s", RESYNC.as_secs()),
            ],
            env,
            trace: std::env::var_os(TRACE_ENV).is_some(),
        },
    )?;
    eprintln!(
        "  CSO (pid {}) started; metrics at {}",
        operator.pid(),
        operator.metrics_addr()
    );
    let figures = measure_all(&bed, &mut operator, scale, &storage_cr).await;
    operator.explain(figures).map(|f| section(&f))
}

/// The `env` of the CSO Deployment manifest: the images and versions the CVO gives it.
fn manifest_env(manifests: &[Manifest]) -> anyhow::Result<BTreeMap<String, String>> {
    let deployment = manifests
        .iter()
        .find(|m| m.file == CSO_DEPLOYMENT_MANIFEST)
        .with_context(|| format!("{MANIFEST_DIR} has no {CSO_DEPLOYMENT_MANIFEST}"))?;
    let env = deployment
        .object
        .pointer("/spec/template/spec/containers/0/env")
        .and_then(Value::as_array)
        .with_context(|| format!("{CSO_DEPLOYMENT_MANIFEST} has no container env"))?;
    Ok(env
        .iter()
        .filter_map(|e| {
            Some((
                e.get("name")?.as_str()?.to_string(),
                e.get("value")?.as_str()?.to_string(),
            ))
        })
        .collect())
}

async fn measure_all(
    bed: &Testbed,
    operator: &mut OperatorProcess,
    scale: Scale,
    storage_cr: &[Manifest],
) -> anyhow::Result<Figures> {
    operator.wait_ready().await?;
    let before_storage = operator.memory()?;
    if std::env::var_os(TRACE_ENV).is_some() {
        eprintln!("  CSO requests at start:");
        for r in operator.requests(bed) {
            eprintln!("    {}", describe(&r));
        }
    }
    eprintln!("  install");
    let install = install(bed, operator, storage_cr).await?;
    let after_install = operator.memory()?;
    eprintln!("  idle for {IDLE_WINDOW:?}");
    let idle = idle(bed, operator).await?;
    eprintln!("  {} ClusterCSIDriver condition changes", scale.changes);
    // Manila reports itself disabled once, so that Cinder's condition alone decides
    // `ClusterOperator/storage` Available.
    report_conditions(
        bed,
        MANILA_CR,
        json!([{"type": "CSIControllerDisabled", "status": "True",
                "reason": "PreConditionNotSatisfied",
                "message": "Pre-condition not satisfied: no Manila service"}]),
    )
    .await?;
    operator.wait_quiet(bed, QUIET).await?;
    let mut changes = Vec::new();
    for i in 1..=scale.changes {
        changes.push(change(bed, operator, i).await?);
    }
    let end = operator.memory()?;
    Ok(Figures {
        scale,
        install,
        idle,
        changes,
        before_storage,
        after_install,
        end,
    })
}

fn dynamic(bed: &Testbed, group: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural);
    Api::all_with(bed.client.clone(), &ar)
}

fn cluster_operators(bed: &Testbed) -> Api<DynamicObject> {
    dynamic(
        bed,
        "config.openshift.io",
        "ClusterOperator",
        "clusteroperators",
    )
}

fn cluster_csi_drivers(bed: &Testbed) -> Api<DynamicObject> {
    dynamic(
        bed,
        "operator.openshift.io",
        "ClusterCSIDriver",
        "clustercsidrivers",
    )
}

/// A status condition of an object: (status, reason).
fn condition(obj: &DynamicObject, type_: &str) -> Option<(String, String)> {
    obj.data
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
        .map(|c| {
            let s = |k: &str| {
                c.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            (s("status"), s("reason"))
        })
}

/// What the install must have produced; the names of what is missing.
async fn missing_after_install(bed: &Testbed) -> anyhow::Result<Vec<String>> {
    let mut missing = Vec::new();
    let deployments: Api<Deployment> =
        Api::namespaced(bed.client.clone(), testbed::DRIVER_NAMESPACE);
    for name in DRIVER_OPERATORS {
        let available = deployments
            .get_opt(name)
            .await
            .with_context(|| format!("cannot read Deployment {name}"))?
            .and_then(|d| d.status)
            .and_then(|s| s.available_replicas)
            .unwrap_or(0);
        if available < 1 {
            missing.push(format!("Deployment {name} (available)"));
        }
    }
    for name in [CINDER_CR, MANILA_CR] {
        if cluster_csi_drivers(bed)
            .get_opt(name)
            .await
            .with_context(|| format!("cannot read ClusterCSIDriver {name}"))?
            .is_none()
        {
            missing.push(format!("ClusterCSIDriver {name}"));
        }
    }
    let config_maps: Api<ConfigMap> =
        Api::namespaced(bed.client.clone(), testbed::DRIVER_NAMESPACE);
    if config_maps
        .get_opt(CA_COPY)
        .await
        .context("cannot read the CA copy")?
        .is_none()
    {
        missing.push(format!("ConfigMap {CA_COPY} (the CA copy)"));
    }
    let co = cluster_operators(bed)
        .get_opt("storage")
        .await
        .context("cannot read ClusterOperator/storage")?;
    if co
        .as_ref()
        .and_then(|c| condition(c, "Available"))
        .is_none()
    {
        missing.push("ClusterOperator/storage Available".into());
    }
    Ok(missing)
}

async fn install(
    bed: &Testbed,
    operator: &mut OperatorProcess,
    storage_cr: &[Manifest],
) -> anyhow::Result<Install> {
    bed.kube.clear_requests();
    testbed::cvo::apply_all(&bed.client, storage_cr)
        .await
        .context("cannot create Storage/cluster")?;
    let deadline = Instant::now() + CONVERGE_LIMIT;
    loop {
        operator.check_alive()?;
        let missing = missing_after_install(bed).await?;
        if missing.is_empty() {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the CSO did not install everything within {CONVERGE_LIMIT:?}; missing: {}",
            missing.join(", ")
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    operator.wait_quiet(bed, QUIET).await?;

    let log = bed.kube.requests();
    let created = log
        .iter()
        .find(|r| r.verb == "create" && r.resource == STORAGES && r.user != CSO_USER)
        .context("kube-sim's request log has no create of Storage/cluster")?
        .at_ms;
    let ours: Vec<RequestRecord> = log.into_iter().filter(|r| operator.is_ours(r)).collect();
    let since = |at: u64| Duration::from_millis(at.saturating_sub(created));
    if std::env::var_os(TRACE_ENV).is_some() {
        for r in &ours {
            eprintln!(
                "    {:>6} ms {:<6} {}{} {} → {}",
                r.at_ms.saturating_sub(created),
                r.verb,
                r.path,
                query_suffix(&r.query),
                r.name,
                r.code
            );
        }
    }
    let objects: Vec<&RequestRecord> = ours
        .iter()
        .filter(|r| r.is_write() && WriteKind::of(r) == WriteKind::Object)
        .collect();
    let last_object_write = objects
        .iter()
        .map(|r| r.at_ms)
        .max()
        .context("the CSO wrote no per-driver object")?;
    let last_create = objects
        .iter()
        .filter(|r| r.verb == "create")
        .map(|r| r.at_ms)
        .max()
        .unwrap_or(last_object_write);
    let co_writes: Vec<u64> = ours
        .iter()
        .filter(|r| r.is_write() && r.resource == CLUSTER_OPERATORS && r.subresource == "status")
        .map(|r| r.at_ms)
        .collect();
    let mut per_object: BTreeMap<String, usize> = BTreeMap::new();
    for r in &objects {
        *per_object
            .entry(format!("{} {}", resource_label(r), object_key(r)))
            .or_default() += 1;
    }
    let evented_objects = written_objects(&bed.client, EVENT_COMPONENT)
        .await?
        .keys()
        .filter(|o| !o.starts_with("Storage") && !o.starts_with("ClusterOperator"))
        .count();
    let status_trail = ours
        .iter()
        .filter(|r| r.is_write())
        .filter(|r| matches!(WriteKind::of(r), WriteKind::Status | WriteKind::StorageSpec))
        .map(|r| {
            format!(
                "{} {} at {} ms",
                r.verb,
                resource_label(r),
                since(r.at_ms).as_millis()
            )
        })
        .collect();
    Ok(Install {
        applied_and_reported: co_writes
            .iter()
            .copied()
            .find(|at| *at >= last_create)
            .map(since),
        all_created: since(last_create),
        last_object_write: since(last_object_write),
        first_report: co_writes.first().copied().map(since),
        writes: writes_by_resource(&ours),
        objects: per_object.len(),
        object_writes: objects.len(),
        most_per_object: per_object.values().copied().max().unwrap_or(0),
        repeated: per_object
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect(),
        evented_objects,
        missing: missing_after_install(bed).await?,
        requests: verb_table("CSO requests during install, by verb", &ours),
        reads: summarize(
            ours.iter()
                .filter(|r| matches!(r.verb.as_str(), "get" | "list") && r.resource != LEASES),
        ),
        failed: ours
            .iter()
            .filter(|r| r.code >= 400 && !is_read_of_missing(r))
            .map(|r| format!("{} {} {} → {}", r.verb, resource_label(r), r.name, r.code))
            .collect(),
        status_trail,
    })
}

async fn idle(bed: &Testbed, operator: &mut OperatorProcess) -> anyhow::Result<Idle> {
    bed.kube.clear_requests();
    tokio::time::sleep(IDLE_WINDOW).await;
    operator.check_alive()?;
    let ours = operator.requests(bed);
    Ok(Idle {
        unexpected: summarize(
            ours.iter()
                .filter(|r| r.verb != "watch" && r.resource != LEASES),
        ),
        requests: verb_table(
            &format!(
                "CSO requests in the idle window ({} s), by verb",
                IDLE_WINDOW.as_secs()
            ),
            &ours,
        ),
        writes: ours
            .iter()
            .filter(|r| r.is_write() && r.resource != LEASES)
            .count(),
        reads: ours
            .iter()
            .filter(|r| matches!(r.verb.as_str(), "get" | "list") && r.resource != LEASES)
            .count(),
        watches: ours.iter().filter(|r| r.verb == "watch").count(),
    })
}

/// Plays a driver operator: replaces its ClusterCSIDriver's conditions (a status merge patch,
/// as the operator's status writer would send them).
async fn report_conditions(bed: &Testbed, cr: &str, conditions: Value) -> anyhow::Result<()> {
    let now = "2026-01-01T00:00:00Z";
    let conditions: Vec<Value> = conditions
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    let mut c = c.clone();
                    c["lastTransitionTime"] = json!(now);
                    c
                })
                .collect()
        })
        .unwrap_or_default();
    cluster_csi_drivers(bed)
        .patch_status(
            cr,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": conditions}})),
        )
        .await
        .with_context(|| format!("cannot patch the status of ClusterCSIDriver {cr}"))?;
    Ok(())
}

/// One condition change of the Cinder driver operator, alternating Available and not:
/// timed on kube-sim's clock from the status patch to the CSO's ClusterOperator status write.
async fn change(bed: &Testbed, operator: &mut OperatorProcess, i: usize) -> anyhow::Result<Change> {
    let (status, reason, message) = if i % 2 == 1 {
        ("True", "AsExpected", "Deployment is available".to_string())
    } else {
        (
            "False",
            "Deploying",
            format!("Waiting for Deployment (change {i})"),
        )
    };
    bed.kube.clear_requests();
    report_conditions(
        bed,
        CINDER_CR,
        json!([{"type": CINDER_AVAILABLE, "status": status, "reason": reason,
                "message": message}]),
    )
    .await?;
    let patched = bed
        .kube
        .requests()
        .iter()
        .find(|r| {
            r.resource == CLUSTER_CSI_DRIVERS && r.subresource == "status" && r.user != CSO_USER
        })
        .map(|r| r.at_ms)
        .context("kube-sim's request log has no ClusterCSIDriver status patch")?;
    let sent = Instant::now();
    let co_written = loop {
        let written = operator
            .requests(bed)
            .iter()
            .find(|r| r.is_write() && r.resource == CLUSTER_OPERATORS && r.subresource == "status")
            .map(|r| r.at_ms);
        if let Some(at) = written {
            break at;
        }
        operator.check_alive()?;
        anyhow::ensure!(
            sent.elapsed() < CHANGE_LIMIT,
            "change {i}: the CSO did not write ClusterOperator/storage within {CHANGE_LIMIT:?}"
        );
        tokio::time::sleep(POLL).await;
    };
    operator.wait_quiet(bed, QUIET).await?;
    let ours = operator.requests(bed);
    let storage_written = ours
        .iter()
        .find(|r| r.is_write() && r.resource == STORAGES && r.subresource == "status")
        .map(|r| r.at_ms);
    let mut writes = BTreeMap::new();
    for r in ours.iter().filter(|r| r.is_write() && r.resource != LEASES) {
        *writes.entry(short_label(r)).or_insert(0) += 1;
    }
    let co = cluster_operators(bed)
        .get_opt("storage")
        .await
        .context("cannot read ClusterOperator/storage")?;
    Ok(Change {
        status,
        latency: Duration::from_millis(co_written.saturating_sub(patched)),
        storage_latency: storage_written
            .map(|at| Duration::from_millis(at.saturating_sub(patched))),
        co_available: co
            .as_ref()
            .and_then(|c| condition(c, "Available"))
            .map(|(s, _)| s)
            .unwrap_or_else(|| "-".into()),
        writes,
        live_reads: ours
            .iter()
            .filter(|r| matches!(r.verb.as_str(), "get" | "list") && r.resource != LEASES)
            .count(),
    })
}

fn opt_ms(d: Option<Duration>) -> String {
    d.map_or_else(|| "-".into(), |d| format!("{} ms", d.as_millis()))
}

fn section(f: &Figures) -> Section {
    let install = &f.install;
    let status_writes: usize = install
        .writes
        .values()
        .filter(|w| w.kind == Some(WriteKind::Status))
        .map(ResourceWrites::total)
        .sum();
    let status_detail: Vec<String> = install
        .writes
        .iter()
        .filter(|(_, w)| w.kind == Some(WriteKind::Status))
        .map(|(k, w)| format!("{k} ×{}", w.total()))
        .collect();
    let spec_writes: usize = install
        .writes
        .values()
        .filter(|w| w.kind == Some(WriteKind::StorageSpec))
        .map(ResourceWrites::total)
        .sum();
    let (idle_writes, idle_reads) = (f.idle.writes, f.idle.reads);
    let latencies: Vec<Duration> = f.changes.iter().map(|c| c.latency).collect();
    let median = percentile(&latencies, 50.0);
    let objects = install.objects;

    let mut budgets = Table::new(
        "Against the budgets of DESIGN §7",
        &["What", "Measured", "Budget", "Verdict"],
    );
    budgets.row(vec![
        format!(
            "Storage/cluster created → every per-driver object applied and ClusterOperator/storage written ({objects} objects, 2 drivers)"
        ),
        opt_ms(install.applied_and_reported),
        format!("< {} ms", BUDGET_INSTALL.as_millis()),
        verdict(
            install
                .applied_and_reported
                .is_some_and(|d| d < BUDGET_INSTALL),
        ),
    ]);
    budgets.row(vec![
        format!("Storage/cluster created → every per-driver object created ({objects} objects)"),
        format!("{} ms", install.all_created.as_millis()),
        format!("< {} ms", BUDGET_INSTALL.as_millis()),
        verdict(install.all_created < BUDGET_INSTALL),
    ]);
    budgets.row(vec![
        "writes at install (per-driver objects; status writes apart)".into(),
        format!(
            "{} writes for {objects} objects (at most {} per object), plus {status_writes} status writes ({}) and {spec_writes} write(s) of Storage/cluster spec.observedConfig; {} failed requests",
            install.object_writes,
            install.most_per_object,
            if status_detail.is_empty() {
                "none".to_string()
            } else {
                status_detail.join(", ")
            },
            install.failed.len()
        ),
        "one per object plus the status writes, no retries without cause".into(),
        verdict(
            install.object_writes == objects
                && install.most_per_object <= 1
                && install.failed.is_empty(),
        ),
    ]);
    budgets.row(vec![
        format!(
            "requests while idle ({} s = {} resync periods), leader election aside",
            IDLE_WINDOW.as_secs(),
            IDLE_WINDOW.as_secs() / RESYNC.as_secs().max(1)
        ),
        format!(
            "{idle_writes} writes, {idle_reads} GETs/LISTs, {} new watches",
            f.idle.watches
        ),
        "no writes, no live GETs; watches only".into(),
        verdict(idle_writes == 0 && idle_reads == 0),
    ]);
    budgets.row(vec![
        format!(
            "ClusterCSIDriver condition changed → ClusterOperator/storage written (median of {})",
            latencies.len()
        ),
        format!("{} ms", ms(median)),
        format!(
            "< {} ms (none in §7; that of a rotation)",
            BUDGET_CHANGE.as_millis()
        ),
        verdict(median < BUDGET_CHANGE),
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
                f.scale.unrelated.secrets + f.scale.unrelated.config_maps
            ),
            format!("{} MiB", mib(kib)),
            format!("< {} MiB", BUDGET_MEMORY_KIB / 1024),
            verdict(kib < BUDGET_MEMORY_KIB),
        ]);
    }

    let mut writes_table = Table::new(
        "CSO writes at install, by resource and verb",
        &[
            "Resource",
            "Write is for",
            "objects",
            "create",
            "update",
            "patch",
            "delete",
            "writes",
        ],
    );
    let mut rows: Vec<(&String, &ResourceWrites)> = install.writes.iter().collect();
    rows.sort_by_key(|(k, w)| (w.kind, (*k).clone()));
    for (resource, w) in rows {
        let verb = |v: &str| w.by_verb.get(v).copied().unwrap_or(0).to_string();
        let kind = w.kind.unwrap_or(WriteKind::Object);
        writes_table.row(vec![
            resource.clone(),
            kind.label().into(),
            // Events have generated names; their count is their number of writes.
            if kind == WriteKind::Event {
                "-".into()
            } else {
                w.objects.len().to_string()
            },
            verb("create"),
            verb("update"),
            verb("patch"),
            verb("delete"),
            w.total().to_string(),
        ]);
    }

    let install_table = install.requests.clone();
    let idle_table = f.idle.requests.clone();

    let mut latency_table = Table::new(
        "Install timeline (kube-sim's clock, from the Storage/cluster create)",
        &["Event", "ms"],
    );
    for (label, d) in [
        (
            "first ClusterOperator/storage status write",
            install.first_report,
        ),
        ("last per-driver object created", Some(install.all_created)),
        (
            "last per-driver object written",
            Some(install.last_object_write),
        ),
        (
            "ClusterOperator/storage written after the last create",
            install.applied_and_reported,
        ),
    ] {
        latency_table.row(vec![
            label.into(),
            d.map_or_else(|| "-".into(), |d| d.as_millis().to_string()),
        ]);
    }

    let mut change_table = Table::new(
        "ClusterCSIDriver condition changes (the Cinder operator played by the bench)",
        &[
            "Change",
            "Cinder Available",
            "→ Storage status, ms",
            "→ ClusterOperator status, ms",
            "ClusterOperator Available",
            "CSO writes",
            "live GETs/LISTs",
        ],
    );
    for (i, c) in f.changes.iter().enumerate() {
        change_table.row(vec![
            (i + 1).to_string(),
            c.status.into(),
            c.storage_latency
                .map_or_else(|| "-".into(), |d| d.as_millis().to_string()),
            c.latency.as_millis().to_string(),
            c.co_available.clone(),
            c.writes
                .iter()
                .map(|(k, n)| format!("{k} ×{n}"))
                .collect::<Vec<_>>()
                .join(", "),
            c.live_reads.to_string(),
        ]);
    }
    let blank = || "-".to_string();
    change_table.row(vec![
        "median".into(),
        blank(),
        blank(),
        ms(median),
        blank(),
        blank(),
        blank(),
    ]);
    change_table.row(vec![
        "max".into(),
        blank(),
        blank(),
        ms(percentile(&latencies, 100.0)),
        blank(),
        blank(),
        blank(),
    ]);

    let mut memory_table = Table::new("CSO resident memory", &["When", "VmRSS MiB", "VmHWM MiB"]);
    for (label, m) in [
        ("caches synced, no Storage/cluster yet", f.before_storage),
        ("after install", f.after_install),
        ("after idle window and condition changes", f.end),
    ] {
        memory_table.row(vec![label.into(), mib(m.rss_kib), mib(m.hwm_kib)]);
    }

    let mut notes = vec![
        "Install times are kube-sim's own clock (1 ms resolution), from the arrival of the Storage/cluster create (sent as the cluster version operator sends it) to the arrival of the CSO's requests, so neither the client nor polling is in them. The budget's figure ends at the first ClusterOperator/storage status write that follows the last create of a per-driver object.".to_string(),
        "Per-driver objects are the CSO's writes other than status subresources, Storage/cluster's spec, Events and its Lease: for each of the two drivers the ServiceAccount, Roles, RoleBindings, ClusterRole, ClusterRoleBinding, metrics Service, config ConfigMap, operator Deployment and ClusterCSIDriver, plus Manila's copy of the cloud CA. kube-sim's log names the object of every write, so objects are counted from it.".to_string(),
        "Status writes are `storages/status` (Storage/cluster) and `clusteroperators/status` (ClusterOperator/storage): one per reconcile whose conditions changed. At install the first pair ends the reconcile that creates the objects; the second follows kube-sim's workload simulator reporting the driver operator Deployments rolled out (`<Driver>Progressing: Waiting for Deployment to act on changes` clears; their pods are simulated, the driver operators do not run).".to_string(),
        format!(
            "Condition changes alternate the Cinder operator's `{CINDER_AVAILABLE}` between True and False, with Manila reporting itself disabled, so ClusterOperator/storage Available follows it; timed on kube-sim's clock from the ClusterCSIDriver status patch to the CSO's status writes."
        ),
        format!(
            "Leader election is counted apart: the leader renews its Lease every retry period (26 s) with a GET and an update, as client-go does; the idle window ({} s) may hold one renewal.",
            IDLE_WINDOW.as_secs()
        ),
        "kube-sim and openstack-sim run in the bench process and share the machine's cores with the CSO.".to_string(),
    ];
    if install.evented_objects != objects {
        notes.push(format!(
            "The CSO's write Events name {} objects other than Storage and ClusterOperator; the request log names {objects}.",
            install.evented_objects
        ));
    }
    if !install.repeated.is_empty() {
        notes.push(format!(
            "Per-driver objects written more than once at install: {}.",
            install.repeated.join(", ")
        ));
    }
    if !install.status_trail.is_empty() {
        notes.push(format!(
            "Storage and ClusterOperator writes at install, in order: {}.",
            install.status_trail.join("; ")
        ));
    }
    if !install.reads.is_empty() {
        notes.push(format!(
            "Live reads at install (besides the watches and leader election): {}.",
            install.reads.join(", ")
        ));
    }
    if !install.failed.is_empty() {
        notes.push(format!(
            "Failed CSO requests at install: {}.",
            install.failed.join(", ")
        ));
    }
    if !install.missing.is_empty() {
        notes.push(format!(
            "Missing after install: {}.",
            install.missing.join(", ")
        ));
    }
    if !f.idle.unexpected.is_empty() {
        notes.push(format!(
            "Requests in the idle window other than watches and leader election: {}.",
            f.idle.unexpected.join(", ")
        ));
    }

    let setup = format!(
        "The cluster is `testbed` (kube-sim with its workload simulator, and openstack-sim) inside \
         the `bench` process, seeded as the installer leaves an OpenShift-on-OpenStack cluster for \
         the CSO (no ClusterCSIDriver): {} Nodes (3 control-plane), plus {} Secrets and {} \
         ConfigMaps (about 1 KiB each) in {} unrelated namespaces. `manifests/openshift/` is applied \
         as the cluster version operator applies it, except `Storage/cluster`, held back. The CSO \
         runs as its own process, the product binary the image ships (built by `hack/build-product.sh`), `csi-operator cluster-storage start --kubeconfig F --namespace \
         {CSO_NAMESPACE} --metrics-listen ADDR --resync {}s` with the environment of its Deployment \
         manifest, authenticated as its service account so kube-sim's request log tells its \
         requests apart. The driver operators do not run: their Deployments get simulated pods. \
         Once the CSO's caches are synced (its first reconcile shows on `/metrics`), \
         `Storage/cluster` is created from its manifest; the install ends when both driver \
         operator Deployments are available, both ClusterCSIDrivers and the CA copy exist, \
         ClusterOperator/storage has conditions and the CSO has made no write for {} s. Then the \
         CSO is left alone for {} s ({} resync periods); then the bench, playing the Cinder \
         operator, changes its ClusterCSIDriver's conditions {} times, each time waiting until \
         the CSO is quiet again. Memory is VmRSS and VmHWM of the CSO process from \
         `/proc/<pid>/status`.\n",
        f.scale.nodes,
        f.scale.unrelated.secrets,
        f.scale.unrelated.config_maps,
        f.scale.unrelated.namespaces,
        RESYNC.as_secs(),
        QUIET.as_secs(),
        IDLE_WINDOW.as_secs(),
        IDLE_WINDOW.as_secs() / RESYNC.as_secs().max(1),
        f.scale.changes,
    );
    Section {
        name: NAME,
        title: "The Cluster Storage Operator".into(),
        setup,
        tables: vec![
            budgets,
            latency_table,
            writes_table,
            install_table,
            idle_table,
            change_table,
            memory_table,
        ],
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(verb: &str, resource: &str, sub: &str, ns: &str, name: &str) -> RequestRecord {
        RequestRecord {
            at_ms: 0,
            verb: verb.into(),
            method: String::new(),
            path: String::new(),
            query: String::new(),
            user: CSO_USER.into(),
            user_agent: String::new(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
            code: 200,
        }
    }

    #[test]
    fn writes_are_told_apart_by_what_they_are_for() {
        let of = |resource, sub| WriteKind::of(&record("update", resource, sub, "", "x"));
        assert_eq!(of(STORAGES, "status"), WriteKind::Status);
        assert_eq!(of(CLUSTER_OPERATORS, "status"), WriteKind::Status);
        assert_eq!(of(STORAGES, ""), WriteKind::StorageSpec);
        assert_eq!(of(CLUSTER_CSI_DRIVERS, ""), WriteKind::Object);
        assert_eq!(of("/configmaps", ""), WriteKind::Object);
        assert_eq!(of("/events", ""), WriteKind::Event);
        assert_eq!(of(LEASES, ""), WriteKind::Lease);
    }

    #[test]
    fn writes_are_grouped_by_resource_with_their_objects() {
        let writes = writes_by_resource(&[
            record("create", "/configmaps", "", "ns", "a"),
            record("update", "/configmaps", "", "ns", "a"),
            record("create", "/configmaps", "", "ns", "b"),
            record("update", STORAGES, "status", "", "cluster"),
            record("get", "/configmaps", "", "ns", "c"),
        ]);
        let cms = &writes["configmaps"];
        assert_eq!(cms.objects.len(), 2);
        assert_eq!(cms.total(), 3);
        assert_eq!(cms.by_verb["create"], 2);
        let status = &writes["operator.openshift.io/storages/status"];
        assert_eq!(status.kind, Some(WriteKind::Status));
        assert_eq!(writes.len(), 2, "reads are not writes");
    }

    #[test]
    fn requests_are_summarized_by_verb_and_resource() {
        let mut missing = record("get", "/serviceaccounts", "", "ns", "a");
        missing.code = 404;
        assert!(is_read_of_missing(&missing));
        let found = record("get", "/serviceaccounts", "", "ns", "a");
        assert!(!is_read_of_missing(&found));
        let list = record("list", "operators.coreos.com/subscriptions", "", "", "");
        let lines = summarize([&missing, &found, &found, &list].into_iter());
        assert_eq!(
            lines,
            vec![
                "get serviceaccounts ×3 (200 ×2, 404 ×1)".to_string(),
                "list operators.coreos.com/subscriptions ×1 (200 ×1)".to_string(),
            ]
        );
    }

    #[test]
    fn request_tables_split_by_what_requests_were_for() {
        let table = verb_table(
            "t",
            &[
                record("get", LEASES, "", "ns", "lock"),
                record("update", STORAGES, "status", "", "cluster"),
                record("update", CLUSTER_OPERATORS, "status", "", "storage"),
                record("create", "/events", "", "ns", ""),
                record("create", "/serviceaccounts", "", "ns", "sa"),
            ],
        );
        assert!(table.rows.iter().all(|r| r.len() == table.header.len()));
        assert_eq!(table.rows[0], vec!["get", "0", "0", "0", "1", "1"]);
        assert_eq!(table.rows[1], vec!["create", "1", "0", "1", "0", "2"]);
        assert_eq!(table.rows[2], vec!["update", "0", "2", "0", "0", "2"]);
        let empty = verb_table("t", &[]);
        assert_eq!(empty.rows.len(), 1);
        assert_eq!(empty.rows[0].len(), empty.header.len());
        assert_eq!(
            short_label(&record(
                "update",
                CLUSTER_OPERATORS,
                "status",
                "",
                "storage"
            )),
            "clusteroperators/status"
        );
        assert_eq!(
            short_label(&record("get", "/secrets", "", "", "")),
            "secrets"
        );
    }

    #[test]
    fn the_cso_environment_comes_from_its_deployment_manifest() {
        let manifests = testbed::cvo::load(&PathBuf::from(MANIFEST_DIR)).expect("manifests");
        let env = manifest_env(&manifests).expect("env");
        assert!(env.contains_key("OPERATOR_IMAGE_VERSION"), "{env:?}");
        assert!(env.contains_key("OPENSTACK_CINDER_DRIVER_OPERATOR_IMAGE"));
        // POD_NAME comes from the downward API, not a value: the process gets its own identity.
        assert!(!env.contains_key("POD_NAME"));
        assert!(manifest_env(&[]).is_err());
    }
}
