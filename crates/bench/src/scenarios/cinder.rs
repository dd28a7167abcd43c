//! Scenario `cinder-operator`: the Cinder operator against DESIGN §7's budgets. The operator
//! runs as its own process (`csi-operator openstack-cinder start`), so its resident memory is
//! its own; the cluster (kube-sim + openstack-sim, seeded by `testbed`) runs inside the bench
//! process, whose request log tells the operator's requests apart by user.
//!
//! Measured: CR creation → every operand object applied, requests by verb during install and
//! during an idle window of several resync periods, the operator's resident memory in a cluster
//! full of unrelated objects, and credential-rotation latency to the new hash annotations.
//! This module only measures and reports; it asserts nothing (budgets are printed as
//! PASS/OVER, never enforced) and owns every process and file it starts or writes.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use kube_sim::RequestRecord;
use testbed::{Settings, Testbed};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::Options;
use crate::measure::{self, Memory, mib, ms, percentile, run_bounded};
use crate::report::{Section, Table};

pub const NAME: &str = "cinder-operator";

/// The operator's service account, as its pod would authenticate; kube-sim records it as the
/// user of every request the operator makes.
const OPERATOR_USER: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:openstack-cinder-csi-driver-operator";
const CR_NAME: &str = "cinder.csi.openstack.org";
const CONTROLLER: &str = "openstack-cinder-csi-driver-controller";
const NODE: &str = "openstack-cinder-csi-driver-node";
const METRIC_RECONCILES: &str = "openstack_cinder_csi_driver_operator_reconciles_total";
const DEP_PREFIX: &str = "operator.openshift.io/dep-";
/// Set to print every request the operator made during install and to run the operator at
/// `--v 4` (for finding out why a figure is what it is).
const TRACE_ENV: &str = "BENCH_CINDER_TRACE";
/// The operator's Event source (`cinder::USER_AGENT`).
const EVENT_COMPONENT: &str = "openstack-cinder-csi-driver-operator";
/// Overrides where the `csi-operator` binary is found (as for `kube-sim-scale`).
const BIN_ENV: &str = "CSI_OPERATOR_BIN";

/// The operator's resync period in this scenario, and the idle window it is watched for.
const RESYNC: Duration = Duration::from_secs(2);
const IDLE_WINDOW: Duration = Duration::from_secs(10);
/// No operator write for this long ends the install (and each rotation) window.
const QUIET: Duration = Duration::from_secs(2);
/// Bounds on waiting, so a stuck operator fails the run instead of hanging it.
const READY_LIMIT: Duration = Duration::from_secs(60);
const CONVERGE_LIMIT: Duration = Duration::from_secs(120);
const ROTATION_LIMIT: Duration = Duration::from_secs(30);
const SEED_LIMIT: Duration = Duration::from_secs(600);
/// How often the rotation loop reads the pod templates: the resolution of that figure.
const ROTATION_POLL: Duration = Duration::from_millis(5);
const CONCURRENCY: usize = 32;

/// DESIGN §7.
const BUDGET_INSTALL: Duration = Duration::from_millis(100);
const BUDGET_ROTATION: Duration = Duration::from_millis(500);
const BUDGET_MEMORY_KIB: u64 = 20 * 1024;

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

/// What a request of the operator was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    /// An object the operator deploys (RBAC, Deployment, ConfigMap, StorageClass, ...).
    Operand,
    /// Its own ClusterCSIDriver (status, observedConfig).
    Cr,
    Event,
    /// Leader election.
    Lease,
}

impl Target {
    const ALL: [Target; 4] = [Target::Operand, Target::Cr, Target::Event, Target::Lease];

    fn of(r: &RequestRecord) -> Target {
        match r.resource.as_str() {
            "coordination.k8s.io/leases" => Target::Lease,
            "/events" | "events.k8s.io/events" => Target::Event,
            "operator.openshift.io/clustercsidrivers" => Target::Cr,
            _ => Target::Operand,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Target::Operand => "operand objects",
            Target::Cr => "ClusterCSIDriver",
            Target::Event => "Events",
            Target::Lease => "Lease",
        }
    }
}

/// Requests counted by verb and by what they were for.
#[derive(Debug, Default, Clone)]
struct VerbCounts {
    counts: BTreeMap<String, BTreeMap<Target, usize>>,
}

impl VerbCounts {
    fn of(records: &[RequestRecord]) -> Self {
        let mut counts: BTreeMap<String, BTreeMap<Target, usize>> = BTreeMap::new();
        for r in records {
            *counts
                .entry(r.verb.clone())
                .or_default()
                .entry(Target::of(r))
                .or_default() += 1;
        }
        VerbCounts { counts }
    }

    fn get(&self, verb: &str, target: Option<Target>) -> usize {
        self.counts.get(verb).map_or(0, |by| match target {
            Some(t) => by.get(&t).copied().unwrap_or(0),
            None => by.values().sum(),
        })
    }

    /// Requests of `verbs` for anything but leader election.
    fn without_lease(&self, verbs: &[&str]) -> usize {
        verbs
            .iter()
            .map(|v| self.get(v, None) - self.get(v, Some(Target::Lease)))
            .sum()
    }

    fn table(&self, title: &str) -> Table {
        let mut header = vec!["Verb"];
        header.extend(Target::ALL.iter().map(|t| t.label()));
        header.push("all");
        let mut table = Table::new(title, &header);
        let order = [
            "get",
            "list",
            "watch",
            "create",
            "update",
            "patch",
            "delete",
            "deletecollection",
        ];
        let mut verbs: Vec<&str> = order
            .iter()
            .copied()
            .filter(|v| self.counts.contains_key(*v))
            .collect();
        verbs.extend(
            self.counts
                .keys()
                .map(String::as_str)
                .filter(|v| !order.contains(v)),
        );
        if verbs.is_empty() {
            let mut row = vec!["(no requests)".to_string()];
            row.extend((0..=Target::ALL.len()).map(|_| "0".to_string()));
            table.row(row);
        }
        for verb in verbs {
            let mut row = vec![verb.to_string()];
            row.extend(
                Target::ALL
                    .iter()
                    .map(|t| self.get(verb, Some(*t)).to_string()),
            );
            row.push(self.get(verb, None).to_string());
            table.row(row);
        }
        table
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
    seed_unrelated(&bed.client, scale).await?;
    let mut operator = OperatorProcess::start(&bed)?;
    eprintln!(
        "  operator (pid {}) started; metrics at {}",
        operator.pid(),
        operator.metrics
    );
    let figures = measure_all(&bed, &mut operator, scale).await;
    match figures {
        Ok(f) => Ok(section(&f)),
        Err(e) => Err(e.context(format!(
            "the operator's log ends with:\n{}",
            operator.log_tail()
        ))),
    }
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

/// About 1 KiB of printable filler, like a CA bundle or a small config file.
fn filler(i: usize) -> String {
    let line = format!("{i:08}-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\n");
    line.repeat(1024 / line.len() + 1)
}

/// Secrets and ConfigMaps the operator has no business with, in namespaces of their own: its
/// memory must not grow with them (DESIGN §3, scoped watches).
async fn seed_unrelated(client: &Client, scale: Scale) -> anyhow::Result<()> {
    eprintln!(
        "  creating {} Secrets and {} ConfigMaps in {} other namespaces",
        scale.secrets, scale.config_maps, scale.namespaces
    );
    let namespace_of = move |i: usize| format!("unrelated-{}", i % scale.namespaces);
    let namespaces: Api<Namespace> = Api::all(client.clone());
    run_bounded(scale.namespaces, CONCURRENCY, SEED_LIMIT, |i| {
        let api = namespaces.clone();
        async move {
            let ns = Namespace {
                metadata: ObjectMeta {
                    name: Some(namespace_of(i)),
                    ..Default::default()
                },
                ..Default::default()
            };
            api.create(&PostParams::default(), &ns)
                .await
                .with_context(|| format!("creating namespace {}", namespace_of(i)))?;
            Ok(())
        }
    })
    .await?;
    run_bounded(scale.secrets, CONCURRENCY, SEED_LIMIT, |i| {
        let api: Api<Secret> = Api::namespaced(client.clone(), &namespace_of(i));
        async move {
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(format!("secret-{i}")),
                    ..Default::default()
                },
                type_: Some("Opaque".into()),
                data: Some(BTreeMap::from([
                    (
                        "password".to_string(),
                        ByteString(format!("{i:032x}").into_bytes()),
                    ),
                    ("ca.crt".to_string(), ByteString(filler(i).into_bytes())),
                ])),
                ..Default::default()
            };
            api.create(&PostParams::default(), &secret)
                .await
                .with_context(|| format!("creating secret-{i}"))?;
            Ok(())
        }
    })
    .await?;
    run_bounded(scale.config_maps, CONCURRENCY, SEED_LIMIT, |i| {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace_of(i));
        async move {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(format!("config-{i}")),
                    ..Default::default()
                },
                data: Some(BTreeMap::from([("config.yaml".to_string(), filler(i))])),
                ..Default::default()
            };
            api.create(&PostParams::default(), &cm)
                .await
                .with_context(|| format!("creating config-{i}"))?;
            Ok(())
        }
    })
    .await?;
    Ok(())
}

fn operator_requests(bed: &Testbed) -> Vec<RequestRecord> {
    bed.kube
        .requests()
        .into_iter()
        .filter(|r| r.user == OPERATOR_USER)
        .collect()
}

/// Writes other than leader election: what "the operator is still working" means.
fn working_writes(records: &[RequestRecord]) -> usize {
    records
        .iter()
        .filter(|r| r.is_write() && Target::of(r) != Target::Lease)
        .count()
}

/// Waits until the operator has made no write (leader election aside) for [`QUIET`].
async fn wait_quiet(bed: &Testbed, operator: &mut OperatorProcess) -> anyhow::Result<()> {
    let deadline = Instant::now() + CONVERGE_LIMIT;
    let mut seen = usize::MAX;
    let mut since = Instant::now();
    loop {
        operator.check_alive()?;
        let writes = working_writes(&operator_requests(bed));
        if writes != seen {
            seen = writes;
            since = Instant::now();
        } else if since.elapsed() >= QUIET {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the operator kept writing for {CONVERGE_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
    wait_quiet(bed, operator).await?;

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
    let ours: Vec<RequestRecord> = log
        .into_iter()
        .filter(|r| r.user == OPERATOR_USER)
        .collect();
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
    let writes_per_object = written_objects(&bed.client).await?;
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

/// Which object each operand write was for, counted per object. kube-sim's request log does
/// not name the object of a create (the name is in the body), so this reads the write Events
/// the apply engine records ("Created <Kind.group/name -n ns> because it was missing", as
/// library-go words them); the caller cross-checks their number with the log.
async fn written_objects(client: &Client) -> anyhow::Result<BTreeMap<String, usize>> {
    let events = Api::<Event>::all(client.clone())
        .list(&ListParams::default())
        .await
        .context("cannot list Events")?;
    let mut per_object = BTreeMap::new();
    for e in events.items {
        let ours = e.reporting_component.as_deref() == Some(EVENT_COMPONENT)
            || e.source.as_ref().and_then(|s| s.component.as_deref()) == Some(EVENT_COMPONENT);
        if let (true, Some(object)) = (ours, e.message.as_deref().and_then(write_event_object)) {
            *per_object.entry(object.to_string()).or_insert(0) += 1;
        }
    }
    Ok(per_object)
}

/// The object a write Event's message names, or `None` for any other message.
fn write_event_object(message: &str) -> Option<&str> {
    let rest = ["Created ", "Updated ", "Deleted "]
        .iter()
        .find_map(|verb| message.strip_prefix(verb))?;
    let object = rest.split(" because").next()?.trim();
    (!object.is_empty()).then_some(object)
}

async fn idle(bed: &Testbed, operator: &mut OperatorProcess) -> anyhow::Result<Idle> {
    bed.kube.clear_requests();
    tokio::time::sleep(IDLE_WINDOW).await;
    operator.check_alive()?;
    let ours = operator_requests(bed);
    let unexpected = ours
        .iter()
        .filter(|r| r.verb != "watch" && Target::of(r) != Target::Lease)
        .map(|r| format!("{} {}{}", r.verb, r.path, query_suffix(&r.query)))
        .collect();
    Ok(Idle {
        requests: VerbCounts::of(&ours),
        unexpected,
    })
}

fn query_suffix(query: &str) -> String {
    if query.is_empty() {
        String::new()
    } else {
        format!("?{query}")
    }
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
    wait_quiet(bed, operator).await?;
    let operand_writes = operator_requests(bed)
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

fn verdict(ok: bool) -> String {
    if ok { "PASS" } else { "OVER" }.to_string()
}

fn section(f: &Figures) -> Section {
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
    let idle_writes =
        idle.without_lease(&["create", "update", "patch", "delete", "deletecollection"]);
    let idle_reads = idle.without_lease(&["get", "list"]);
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

    let setup = format!(
        "The cluster is `testbed` (kube-sim with its workload simulator, and openstack-sim) inside \
         the `bench` process: an OpenShift-on-OpenStack cluster with {} Nodes (3 control-plane), \
         plus {} Secrets and {} ConfigMaps (about 1 KiB each) in {} unrelated namespaces, all \
         created before the operator starts. The operator runs as its own process, `csi-operator \
         openstack-cinder start --kubeconfig F --namespace openshift-cluster-csi-drivers \
         --metrics-listen ADDR --resync {}s` with the image variables of \
         `testbed::example_images`, authenticated as its service account so kube-sim's request \
         log tells its requests apart. Once its caches are synced (its first reconcile shows on \
         `/metrics`), the ClusterCSIDriver `{CR_NAME}` is created; the install ends when the \
         controller and node services are Available and the operator has made no write for {} s. \
         Then the operator is left alone for {} s ({} resync periods), and then the credentials \
         Secret is rotated {} times (new Keystone password, Secret replaced with the new \
         clouds.yaml), each time waiting until the operator is quiet again. Memory is VmRSS and \
         VmHWM of the operator process from `/proc/<pid>/status`.\n",
        f.scale.nodes,
        f.scale.secrets,
        f.scale.config_maps,
        f.scale.namespaces,
        RESYNC.as_secs(),
        QUIET.as_secs(),
        IDLE_WINDOW.as_secs(),
        IDLE_WINDOW.as_secs() / RESYNC.as_secs().max(1),
        f.scale.rotations,
    );
    Section {
        name: NAME,
        title: "The Cinder operator".into(),
        setup,
        tables: vec![
            budgets,
            install_table,
            idle_table,
            rotation_table,
            memory_table,
        ],
        notes,
    }
}

/// The operator as a child process, killed (with its kubeconfig and log removed) on drop so it
/// never outlives the scenario.
struct OperatorProcess {
    child: Child,
    metrics: std::net::SocketAddr,
    kubeconfig: PathBuf,
    log: PathBuf,
    /// Tracing runs keep the operator's log for reading afterwards.
    keep_log: bool,
}

impl OperatorProcess {
    fn start(bed: &Testbed) -> anyhow::Result<Self> {
        let bin = locate_binary()?;
        let tmp = std::env::temp_dir();
        let pid = std::process::id();
        let kubeconfig = tmp.join(format!("bench-cinder-{pid}.kubeconfig"));
        let log = tmp.join(format!("bench-cinder-{pid}.log"));
        std::fs::write(&kubeconfig, bed.kube.kubeconfig(OPERATOR_USER))
            .with_context(|| format!("cannot write {}", kubeconfig.display()))?;
        let log_file = std::fs::File::create(&log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let metrics = free_port()?;
        let tracing = std::env::var_os(TRACE_ENV).is_some();
        let child = Command::new(&bin)
            .args(["openstack-cinder", "start", "--kubeconfig"])
            .arg(&kubeconfig)
            .args(["--namespace", testbed::DRIVER_NAMESPACE, "--metrics-listen"])
            .arg(metrics.to_string())
            .args(["--resync", &format!("{}s", RESYNC.as_secs())])
            .args(["--v", if tracing { "4" } else { "2" }])
            .envs(testbed::example_images())
            // The log is read back as plain text when the scenario fails.
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .spawn()
            .with_context(|| format!("cannot start {}", bin.display()))?;
        Ok(OperatorProcess {
            child,
            metrics,
            kubeconfig,
            log,
            keep_log: tracing,
        })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn memory(&self) -> anyhow::Result<Memory> {
        measure::memory(self.pid())
    }

    fn check_alive(&mut self) -> anyhow::Result<()> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => anyhow::bail!("the operator exited ({status})"),
        }
    }

    /// Waits for the first reconcile, which runs once the operator leads and its watch caches
    /// are synced.
    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + READY_LIMIT;
        loop {
            self.check_alive()?;
            if let Ok(page) = http_get(self.metrics, "/metrics").await
                && reconciles(&page) > 0
            {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the operator did not reconcile within {READY_LIMIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn log_tail(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.log) {
            let _ = f.read_to_string(&mut text);
        }
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.kubeconfig);
        if self.keep_log {
            eprintln!("  the operator's log is kept in {}", self.log.display());
        } else {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

/// A loopback port nobody listens on right now, for the operator's metrics endpoint.
fn free_port() -> anyhow::Result<std::net::SocketAddr> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").context("cannot find a free loopback port")?;
    Ok(listener.local_addr()?)
}

/// A bare HTTP/1.0 GET: enough for the metrics page, with no HTTP client dependency.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> anyhow::Result<String> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
            .await?;
        let mut response = String::new();
        stream.read_to_string(&mut response).await?;
        anyhow::Ok(response)
    };
    let response = tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .context("metrics endpoint did not answer")??;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .context("malformed HTTP response")?;
    anyhow::ensure!(
        head.lines().next().is_some_and(|l| l.contains(" 200 ")),
        "metrics endpoint answered {}",
        head.lines().next().unwrap_or_default()
    );
    Ok(body.to_string())
}

/// The sum of the reconcile counters on a Prometheus text page.
fn reconciles(page: &str) -> u64 {
    page.lines()
        .filter(|l| l.starts_with(METRIC_RECONCILES))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

/// `$CSI_OPERATOR_BIN`, else `csi-operator` next to this binary, (re)built first under
/// `cargo run` with the same profile so the figures describe the operator's current source.
fn locate_binary() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os(BIN_ENV) {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().context("cannot find the bench binary's own path")?;
    let dir = exe.parent().context("the bench binary has no directory")?;
    let bin = dir.join("csi-operator");
    if let (Some(cargo), Some(manifest_dir)) = (
        std::env::var_os("CARGO"),
        std::env::var_os("CARGO_MANIFEST_DIR"),
    ) {
        let profile = if cfg!(debug_assertions) {
            "dev"
        } else {
            "release"
        };
        eprintln!("building csi-operator ({profile}) for the operator process");
        let status = Command::new(cargo)
            .args([
                "build",
                "--quiet",
                "-p",
                "csi-operator",
                "--profile",
                profile,
                "--manifest-path",
            ])
            .arg(PathBuf::from(manifest_dir).join("Cargo.toml"))
            .status()
            .context("cannot run cargo to build csi-operator")?;
        anyhow::ensure!(status.success(), "building csi-operator failed ({status})");
    }
    anyhow::ensure!(
        bin.is_file(),
        "{} not found: build it with `cargo build --release -p csi-operator` or set {BIN_ENV} to its path",
        bin.display()
    );
    Ok(bin)
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
            namespace: String::new(),
            name: String::new(),
            code: 200,
        }
    }

    #[test]
    fn requests_are_split_by_what_they_were_for() {
        let counts = VerbCounts::of(&[
            record("get", "coordination.k8s.io/leases"),
            record("update", "coordination.k8s.io/leases"),
            record("create", "/events"),
            record("update", "operator.openshift.io/clustercsidrivers"),
            record("create", "apps/deployments"),
            record("watch", "/secrets"),
        ]);
        assert_eq!(counts.get("update", None), 2);
        assert_eq!(counts.get("update", Some(Target::Lease)), 1);
        assert_eq!(counts.get("create", Some(Target::Operand)), 1);
        assert_eq!(counts.get("create", Some(Target::Event)), 1);
        assert_eq!(counts.without_lease(&["get", "list"]), 0);
        assert_eq!(counts.without_lease(&["create", "update"]), 3);
        let table = counts.table("t");
        assert!(table.rows.iter().all(|r| r.len() == table.header.len()));
        assert_eq!(table.rows[0][0], "get", "verbs in the usual order");
        assert_eq!(table.rows.len(), 4);
        let empty = VerbCounts::default().table("t");
        assert_eq!(empty.rows.len(), 1);
        assert_eq!(empty.rows[0].len(), empty.header.len());
    }

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

    #[test]
    fn write_events_name_their_object() {
        assert_eq!(
            write_event_object("Created ConfigMap/cloud-conf -n ns because it was missing"),
            Some("ConfigMap/cloud-conf -n ns")
        );
        assert_eq!(
            write_event_object("Updated Deployment.apps/x -n ns because it changed"),
            Some("Deployment.apps/x -n ns")
        );
        assert_eq!(
            write_event_object("Deleted StorageClass.storage.k8s.io/sc"),
            Some("StorageClass.storage.k8s.io/sc")
        );
        assert_eq!(
            write_event_object("Operator log level changed to Debug"),
            None
        );
        assert_eq!(write_event_object("Created  because"), None);
    }

    #[test]
    fn reconcile_counters_are_summed_from_the_metrics_page() {
        let page = format!(
            "# HELP x\n{METRIC_RECONCILES}{{result=\"success\"}} 3\n{METRIC_RECONCILES}{{result=\"error\"}} 1\nother_total 9\n"
        );
        assert_eq!(reconciles(&page), 4);
        assert_eq!(reconciles("# EOF\n"), 0);
    }
}
