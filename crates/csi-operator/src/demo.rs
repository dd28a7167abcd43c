//! `csi-operator demo`: the Cinder and Manila operators on one machine, with no cluster.
//!
//! It starts kube-sim and openstack-sim in-process, seeded as an OpenShift-on-OpenStack cluster
//! (the `testbed` crate) with both ClusterCSIDrivers, runs both operators against them
//! in-process, prints each step condition as it changes while the install converges (plain
//! lines on stderr, readable in a terminal and in CI logs), then a summary on stdout (per
//! ClusterCSIDriver: what its operator created, its conditions; Cinder's `enable_topology`,
//! Manila's StorageClass per share type; the time it took), and keeps the cluster up for
//! kubectl until Ctrl-C or SIGTERM. `--exit-when-ready` turns it into a check for CI.
//!
//! openstack-sim offers Manila with two share types by default; `--no-manila` takes Manila out
//! of its catalog to show the disabled path (`CSIControllerDisabled`, nothing deployed).
//!
//! This is emulator-side code: each operator runs exactly as its `start` subcommand runs it.
//! The demo reads kube-sim's state and request log directly (not through the API), so what it
//! watches adds nothing to the request log a user inspects.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use kube::Client;
use kube_sim::resources::GroupResource;
use kube_sim::{KubeSim, RequestRecord};
use openstack_sim::SimShareType;
use operator_kit::cache::Cache;
use operator_kit::leader_timing::LeaderTiming;
use operator_kit::logging::LogControl;
use operator_kit::metrics::Metrics;
use operator_kit::process::{self, ProcessOptions, Reconciler};
use operator_kit::runtime::LoopOptions;
use serde_json::Value;
use testbed::{Settings, Testbed};

use crate::sim::parse_duration;

/// The user the Cinder operator authenticates as (kube-sim records it in the request log).
const CINDER_USER: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:openstack-cinder-csi-driver-operator";
/// The user the Manila operator authenticates as.
const MANILA_USER: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:openstack-manila-csi-driver-operator";
/// The user of the kubeconfig written for kubectl.
const KUBECTL_USER: &str = "admin";
/// How often the live view looks at kube-sim's state.
const POLL: Duration = Duration::from_millis(50);
/// The share types openstack-sim offers unless `--share-type` says otherwise: one plain, one
/// that the operator has to turn into a valid StorageClass name (`csi-manila-cephfs-gold`).
const DEFAULT_SHARE_TYPES: [&str; 2] = ["default", "CEPHFS_gold"];
/// The Manila conditions an installed driver reports (the Go operator's controller names).
const MANILA_AVAILABLE: [&str; 3] = [
    "OpenStackManilaDriverControllerServiceControllerAvailable",
    "OpenStackManilaDriverNodeServiceControllerAvailable",
    "NFSDriverNodeServiceControllerAvailable",
];
/// Kinds listed one per line in the summary; the others (RBAC, monitoring, the lease, ...)
/// are counted on one line, so that the summary stays short.
const LISTED_KINDS: [&str; 8] = [
    "CSIDriver",
    "ConfigMap",
    "DaemonSet",
    "Deployment",
    "Namespace",
    "Secret",
    "StorageClass",
    "VolumeSnapshotClass",
];

#[derive(clap::Args)]
pub struct DemoArgs {
    /// Address kube-sim serves kubectl on; if the port is taken, a free port on the same IP is
    /// used instead (port 0 always picks a free port).
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Where to write the kubeconfig for kubectl.
    #[arg(long, default_value = "kube-sim.kubeconfig")]
    kubeconfig: PathBuf,
    /// Exit once the install has converged (status 0), or with an error and the conditions if
    /// it has not within --timeout; for CI.
    #[arg(long)]
    exit_when_ready: bool,
    /// How long the install may take to converge, e.g. `60s`, `2m`.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    timeout: Duration,
    /// Run openstack-sim without Manila (no `sharev2` in its catalog): the Manila operator
    /// reports CSIControllerDisabled and deploys nothing.
    #[arg(long)]
    no_manila: bool,
    /// A Manila share type openstack-sim offers; repeatable [default: default, CEPHFS_gold].
    #[arg(long = "share-type", value_name = "NAME", conflicts_with = "no_manila")]
    share_types: Vec<String>,
}

/// One of the two ClusterCSIDrivers the demo installs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Driver {
    Cinder,
    Manila,
}

impl Driver {
    pub const ALL: [Driver; 2] = [Driver::Cinder, Driver::Manila];

    /// The short name in the live view.
    pub fn tag(self) -> &'static str {
        match self {
            Driver::Cinder => "cinder",
            Driver::Manila => "manila",
        }
    }

    /// The ClusterCSIDriver's name.
    pub fn cr(self) -> &'static str {
        match self {
            Driver::Cinder => cinder::CSI_DRIVER_NAME,
            Driver::Manila => manila::CSI_DRIVER_NAME,
        }
    }

    fn user(self) -> &'static str {
        match self {
            Driver::Cinder => CINDER_USER,
            Driver::Manila => MANILA_USER,
        }
    }

    /// The driver whose operator created `o`. Every Manila asset lives in the Manila
    /// namespace or has `manila` in its name (and no Cinder asset does), so the name tells;
    /// kube-sim's request log cannot, as a create names no object.
    pub fn of(o: &CreatedObject) -> Driver {
        if o.namespace == manila::DRIVER_NAMESPACE || o.name.contains("manila") {
            Driver::Manila
        } else {
            Driver::Cinder
        }
    }
}

/// One condition of a ClusterCSIDriver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// A ClusterCSIDriver's conditions by type.
pub type Conditions = BTreeMap<String, Condition>;

/// One object an operator created.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CreatedObject {
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

/// What the summary says about one ClusterCSIDriver.
#[derive(Debug, Clone, Default)]
pub struct DriverReport {
    pub created: Vec<CreatedObject>,
    pub conditions: Conditions,
    /// Cinder: `enable_topology` as published in `cloud-conf`.
    pub enable_topology: Option<String>,
    /// Manila: (share type, StorageClass) for every `csi-manila-*` StorageClass.
    pub share_type_classes: Vec<(String, String)>,
}

pub async fn run(
    args: DemoArgs,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    // The operators log only when asked (RUST_LOG): their lines would bury the live view.
    let log = if std::env::var_os("RUST_LOG").is_some() {
        LogControl::init(2)
    } else {
        LogControl::detached()
    };
    let mut shutdown = std::pin::pin!(shutdown);
    let share_types: Option<Vec<String>> = if args.no_manila {
        None
    } else if args.share_types.is_empty() {
        Some(DEFAULT_SHARE_TYPES.map(str::to_string).to_vec())
    } else {
        Some(args.share_types.clone())
    };

    let seeding = Instant::now();
    let settings = |kube_listen| {
        let mut s = Settings {
            kube_listen,
            manila_cluster_csi_driver: true,
            ..Settings::default()
        };
        s.openstack.share_types = share_types
            .as_ref()
            .map(|names| names.iter().map(|n| SimShareType::new(n)).collect());
        s
    };
    // A taken port falls back to a free one on the same IP, so a second demo (or a running
    // `csi-operator sim`) does not stop this one.
    let (bed, fell_back) = match Testbed::start(settings(args.listen)).await {
        Ok(bed) => (bed, false),
        Err(testbed::TestbedError::Start { source, .. })
            if source.kind() == std::io::ErrorKind::AddrInUse =>
        {
            let any = SocketAddr::new(args.listen.ip(), 0);
            let bed = Testbed::start(settings(any))
                .await
                .context("cannot start the emulated cluster")?;
            (bed, true)
        }
        Err(e) => {
            return Err(e).with_context(|| {
                format!(
                    "cannot start the emulated cluster on {}; choose another address with --listen",
                    args.listen
                )
            });
        }
    };
    let front = bed.kube.addr();
    let url = format!("http://{front}");
    std::fs::write(
        &args.kubeconfig,
        kube_sim::kubeconfig::render(&url, KUBECTL_USER, None),
    )
    .with_context(|| {
        format!(
            "cannot write the kubeconfig to {}; choose another path with --kubeconfig",
            args.kubeconfig.display()
        )
    })?;
    let kubeconfig = absolute(&args.kubeconfig);
    if fell_back {
        eprintln!(
            "demo: {} is taken; serving kube-sim on {front} instead",
            args.listen
        );
    }
    eprintln!(
        "demo: kube-sim at {url} (kubeconfig {}), openstack-sim at {}",
        kubeconfig.display(),
        bed.openstack.url()
    );
    match &share_types {
        Some(names) => eprintln!(
            "demo: openstack-sim offers Manila with share types {}",
            names.join(", ")
        ),
        None => eprintln!("demo: openstack-sim has no Manila (--no-manila)"),
    }
    eprintln!(
        "demo: seeded in {} ms: 3 control-plane and 3 worker Nodes, Infrastructure, Proxy, \
         APIServer, cloud config, credentials, namespace {}, ClusterCSIDrivers {} and {}",
        seeding.elapsed().as_millis(),
        manila::DRIVER_NAMESPACE,
        Driver::Cinder.cr(),
        Driver::Manila.cr(),
    );

    let before = object_uids(&bed.kube);
    let started = Instant::now();
    let mut operators = vec![
        start_cinder(&bed, log.clone()).await?,
        start_manila(&bed, log).await?,
    ];
    eprintln!(
        "demo: Cinder and Manila operators started (identity demo); step conditions as they change:"
    );

    let manila_expected = share_types.is_some();
    let mut seen: BTreeMap<Driver, Conditions> = BTreeMap::new();
    let mut created_shown = 0;
    let mut converged_after: Option<Duration> = None;
    let deadline = tokio::time::Instant::now() + args.timeout;
    let mut timed_out = false;
    let mut ticker = tokio::time::interval(POLL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut shutdown => {
                eprintln!("demo: stopping");
                stop_all(operators).await;
                return Ok(());
            }
            _ = ticker.tick() => {}
        }
        if let Some(i) = operators.iter().position(|o| o.task.is_finished()) {
            let op = operators.swap_remove(i);
            let outcome = op.task.await;
            stop_all(operators).await;
            anyhow::bail!(
                "the {} operator stopped: {}",
                op.name,
                describe_exit(outcome)
            );
        }
        let now: BTreeMap<Driver, Conditions> = Driver::ALL
            .iter()
            .map(|d| (*d, cr_conditions(&bed.kube, *d)))
            .collect();
        // Until the install converges, objects appearing are progress worth a line too (the
        // first status write may come only after most of them exist). Not after a timeout: an
        // install stuck for hours must not copy the request log every tick.
        let installing = converged_after.is_none() && !timed_out;
        let mut printed = false;
        let mut created = created_shown;
        for d in Driver::ALL {
            let empty = Conditions::new();
            let (Some(current), previous) = (now.get(&d), seen.get(&d).unwrap_or(&empty)) else {
                continue;
            };
            let changes = changed(previous, current);
            if changes.is_empty() {
                continue;
            }
            created = operator_creates(&bed.kube.requests());
            let lines = progress_lines(
                started.elapsed().as_millis(),
                created,
                d,
                previous,
                &changes,
            );
            for line in lines {
                eprintln!("{line}");
            }
            printed = true;
        }
        if !printed && installing {
            created = operator_creates(&bed.kube.requests());
            if created != created_shown {
                let ms = started.elapsed().as_millis();
                eprintln!("{ms:>7} ms  {created:>3} created");
            }
        }
        created_shown = created;
        seen = now;
        let empty = Conditions::new();
        let cinder_now = seen.get(&Driver::Cinder).unwrap_or(&empty);
        let manila_now = seen.get(&Driver::Manila).unwrap_or(&empty);
        if converged_after.is_none() && converged(cinder_now, manila_now, manila_expected) {
            let took = started.elapsed();
            converged_after = Some(took);
            let reports = reports(&bed.kube, &before, &seen);
            print!(
                "{}",
                summary(&reports, took, &kubeconfig, args.exit_when_ready)
            );
            if args.exit_when_ready {
                stop_all(operators).await;
                return Ok(());
            }
            eprintln!("demo: press Ctrl-C to stop; condition changes keep being printed");
        }
        if converged_after.is_none() && !timed_out && tokio::time::Instant::now() >= deadline {
            timed_out = true;
            eprint!("{}", not_converged(args.timeout, &seen));
            if args.exit_when_ready {
                stop_all(operators).await;
                anyhow::bail!(
                    "the install did not converge within {:?} (conditions above)",
                    args.timeout
                );
            }
            eprintln!(
                "demo: keeping the cluster up to look around: kubectl --kubeconfig {} get \
                 clustercsidriver -o yaml; press Ctrl-C to stop",
                kubeconfig.display(),
            );
        }
    }
}

/// An operator running in-process, and how to stop it.
struct Running {
    name: &'static str,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), process::ProcessError>>,
}

/// The process options both operators share: the demo identity and a short resync, so that a
/// change made with kubectl shows up quickly even where no watch covers it.
fn process_options(namespace: &str, lock_name: &str) -> ProcessOptions {
    ProcessOptions {
        namespace: namespace.into(),
        lock_name: lock_name.into(),
        identity: "demo".into(),
        timing: LeaderTiming::DEFAULT,
        metrics_addr: None,
        loop_options: LoopOptions {
            resync: Duration::from_secs(5),
            ..LoopOptions::default()
        },
    }
}

fn spawn<R: Reconciler + Send + 'static>(
    name: &'static str,
    client: Client,
    options: ProcessOptions,
    cache: Cache,
    metrics: std::sync::Arc<Metrics>,
    op: R,
) -> Running {
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(process::run(
        client,
        options,
        cache,
        metrics,
        op,
        async move {
            let _ = rx.await;
        },
    ));
    Running { name, stop, task }
}

/// Runs the Cinder operator in-process as its pod would run it.
async fn start_cinder(bed: &Testbed, log: LogControl) -> anyhow::Result<Running> {
    use cinder::operator::{self, Operator, Options};
    let client = testbed::client_for(&bed.kube, CINDER_USER)
        .await
        .context("cannot build the Cinder operator's client")?;
    let mut images = testbed::example_images();
    // Images set in the environment win, as they do for `openstack-cinder start`.
    images.extend(operator::images_from_env());
    let opts = Options {
        namespace: testbed::DRIVER_NAMESPACE.into(),
        images,
        topology_refresh: Duration::from_secs(600),
        cluster_id: None,
    };
    let cache = operator::watches(client.clone(), &opts)
        .context("cannot prepare the Cinder operator's watches")?
        .start();
    let metrics = Metrics::new("openstack_cinder_csi_driver_operator");
    let op = Operator::new(client.clone(), opts, cache.clone(), metrics.clone(), log);
    let options = process_options(testbed::DRIVER_NAMESPACE, cinder::OPERATOR_LOCK_NAME);
    Ok(spawn("Cinder", client, options, cache, metrics, op))
}

/// Runs the Manila operator in-process as its pod would run it, with the default share-type
/// refresh (openstack-sim's share types do not change during the demo).
async fn start_manila(bed: &Testbed, log: LogControl) -> anyhow::Result<Running> {
    use manila::operator::{self, Operator, Options};
    let client = testbed::client_for(&bed.kube, MANILA_USER)
        .await
        .context("cannot build the Manila operator's client")?;
    let mut images = testbed::manila_example_images();
    images.extend(operator::images_from_env());
    let mut opts = Options::new(images);
    opts.fs_group_policy = std::env::var(manila::FSGROUP_POLICY_ENV).ok();
    let cache = operator::watches(client.clone(), &opts)
        .context("cannot prepare the Manila operator's watches")?
        .start();
    let metrics = Metrics::new("openstack_manila_csi_driver_operator");
    let op = Operator::new(client.clone(), opts, cache.clone(), metrics.clone(), log);
    let options = process_options(manila::OPERATOR_NAMESPACE, manila::OPERATOR_LOCK_NAME);
    Ok(spawn("Manila", client, options, cache, metrics, op))
}

/// Stops the operators and waits (briefly) for them to release their leases.
async fn stop_all(operators: Vec<Running>) {
    let mut tasks = Vec::new();
    for op in operators {
        let _ = op.stop.send(());
        tasks.push((op.name, op.task));
    }
    for (name, task) in tasks {
        if tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .is_err()
        {
            eprintln!("demo: the {name} operator did not stop within 5s; exiting anyway");
        }
    }
}

fn describe_exit(
    outcome: Result<Result<(), process::ProcessError>, tokio::task::JoinError>,
) -> String {
    match outcome {
        Ok(Ok(())) => "it exited".into(),
        Ok(Err(e)) => e.to_string(),
        Err(e) => format!("it crashed: {e}"),
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The uids of every object in kube-sim, to tell afterwards what is new.
fn object_uids(sim: &KubeSim) -> HashSet<String> {
    let cluster = sim.cluster();
    let store = &cluster.store;
    let collections: Vec<GroupResource> = store.collections().cloned().collect();
    collections
        .iter()
        .flat_map(|gr| store.iter(gr, None, None))
        .filter_map(|(_, obj)| uid(obj).map(str::to_string))
        .collect()
}

fn uid(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/uid").and_then(Value::as_str)
}

/// A ClusterCSIDriver's conditions, read from kube-sim's store.
fn cr_conditions(sim: &KubeSim, driver: Driver) -> Conditions {
    let gr = GroupResource::new("operator.openshift.io", "clustercsidrivers");
    let obj = sim.cluster().store.get(&gr, "", driver.cr());
    obj.map(|o| conditions_of(&o)).unwrap_or_default()
}

/// `status.conditions` of an operator CR, by type. Entries without a type are skipped.
pub fn conditions_of(obj: &Value) -> Conditions {
    let Some(list) = obj.pointer("/status/conditions").and_then(Value::as_array) else {
        return BTreeMap::new();
    };
    list.iter()
        .filter_map(|c| {
            let s = |k: &str| {
                c.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let t = s("type");
            (!t.is_empty()).then(|| {
                (
                    t,
                    Condition {
                        status: s("status"),
                        reason: s("reason"),
                        message: s("message"),
                    },
                )
            })
        })
        .collect()
}

/// Conditions that are new or whose status or reason changed (a new message alone is noise).
pub fn changed<'a>(before: &Conditions, now: &'a Conditions) -> Vec<(&'a str, &'a Condition)> {
    now.iter()
        .filter(|(t, c)| {
            before
                .get(*t)
                .is_none_or(|b| b.status != c.status || b.reason != c.reason)
        })
        .map(|(t, c)| (t.as_str(), c))
        .collect()
}

/// Whether the condition is in the state a healthy operator reports.
fn healthy(kind: &str, c: &Condition) -> bool {
    if kind.ends_with("Degraded") || kind.ends_with("Progressing") {
        c.status == "False"
    } else if kind.ends_with("Available") || kind.ends_with("Upgradeable") {
        c.status == "True"
    } else {
        true
    }
}

/// A step saying it is fine: there are many of them, so the live view and the summary count
/// them instead of giving each a line.
fn quiet(kind: &str, c: &Condition) -> bool {
    kind.ends_with("Degraded") && c.status == "False"
}

/// Whether the message is worth showing: the condition is unhealthy, or it says why a driver
/// is disabled.
fn explains(kind: &str, c: &Condition) -> bool {
    !c.message.is_empty()
        && (!healthy(kind, c) || (kind.ends_with("Disabled") && c.status == "True"))
}

/// Cinder installed: the controller Deployment and the node DaemonSet are available, every
/// other step reports available, and nothing is degraded or still progressing.
pub fn cinder_converged(conditions: &Conditions) -> bool {
    let prefix = cinder::operator::condition_prefix();
    let required = [
        format!("{prefix}DriverControllerServiceControllerAvailable"),
        format!("{prefix}DriverNodeServiceControllerAvailable"),
    ];
    required.iter().all(|t| conditions.contains_key(t))
        && conditions.iter().all(|(t, c)| healthy(t, c))
}

/// Manila settled: with Manila in the cloud, its three workloads available and nothing
/// unhealthy or disabled; without, disabled as CSO expects (`CSIControllerDisabled=True`,
/// `PreConditionNotSatisfied`) and nothing degraded.
pub fn manila_converged(conditions: &Conditions, manila_in_cloud: bool) -> bool {
    let all_healthy = conditions.iter().all(|(t, c)| healthy(t, c));
    let disabled = conditions
        .get(manila::operator::DISABLED_CONDITION)
        .is_some_and(|c| c.status == "True" && c.reason == manila::operator::DISABLED_REASON);
    if manila_in_cloud {
        MANILA_AVAILABLE.iter().all(|t| conditions.contains_key(*t))
            && all_healthy
            && !conditions.contains_key(manila::operator::DISABLED_CONDITION)
    } else {
        disabled && all_healthy
    }
}

/// The install has converged: Cinder available, Manila available or disabled as expected.
pub fn converged(cinder: &Conditions, manila: &Conditions, manila_in_cloud: bool) -> bool {
    cinder_converged(cinder) && manila_converged(manila, manila_in_cloud)
}

/// One line of the live view: elapsed ms, objects created so far, the driver, the condition.
pub fn progress_line(
    ms: u128,
    created: usize,
    driver: Driver,
    kind: &str,
    c: &Condition,
) -> String {
    let mut line = format!(
        "{ms:>7} ms  {created:>3} created  {}  {kind} = {} ({})",
        driver.tag(),
        c.status,
        c.reason
    );
    if explains(kind, c) {
        line.push_str(": ");
        line.push_str(&c.message);
    }
    line
}

/// The live view's lines for one driver's changes from `before`: one per change, except that
/// steps newly reporting `Degraded = False` share one line (a recovery from `True` keeps its
/// own).
pub fn progress_lines(
    ms: u128,
    created: usize,
    driver: Driver,
    before: &Conditions,
    changes: &[(&str, &Condition)],
) -> Vec<String> {
    let mut out = Vec::new();
    let mut fine = 0;
    for (kind, c) in changes {
        if quiet(kind, c) && c.reason == "AsExpected" && !before.contains_key(*kind) {
            fine += 1;
        } else {
            out.push(progress_line(ms, created, driver, kind, c));
        }
    }
    if fine > 0 {
        let steps = if fine == 1 {
            "step reports"
        } else {
            "steps report"
        };
        out.push(format!(
            "{ms:>7} ms  {created:>3} created  {}  {fine} {steps} Degraded = False",
            driver.tag()
        ));
    }
    out
}

/// Whether a request log entry is an operator successfully creating an operand (its Events
/// are bookkeeping, not objects it installs).
fn is_operator_create(r: &RequestRecord) -> bool {
    Driver::ALL.iter().any(|d| r.user == d.user())
        && r.verb == "create"
        && (200..300).contains(&r.code)
        && r.subresource.is_empty()
        && !is_events(&r.resource)
}

fn is_events(resource: &str) -> bool {
    resource == "/events" || resource == "events.k8s.io/events"
}

/// How many objects the operators have created so far.
pub fn operator_creates(log: &[RequestRecord]) -> usize {
    log.iter().filter(|r| is_operator_create(r)).count()
}

/// The objects the operators created: those absent before they started, in the collections
/// their request log shows they created objects in.
fn created_objects(sim: &KubeSim, before: &HashSet<String>) -> Vec<CreatedObject> {
    let touched: BTreeSet<String> = sim
        .requests()
        .iter()
        .filter(|r| is_operator_create(r))
        .map(|r| r.resource.clone())
        .collect();
    let cluster = sim.cluster();
    let store = &cluster.store;
    let collections: Vec<GroupResource> = store
        .collections()
        .filter(|gr| touched.contains(&format!("{}/{}", gr.group, gr.resource)))
        .cloned()
        .collect();
    let mut out: Vec<CreatedObject> = collections
        .iter()
        .flat_map(|gr| {
            store
                .iter(gr, None, None)
                .filter(|(_, obj)| uid(obj).is_some_and(|u| !before.contains(u)))
                .map(move |((ns, name), obj)| CreatedObject {
                    kind: obj
                        .get("kind")
                        .and_then(Value::as_str)
                        .map_or_else(|| gr.qualified(), str::to_string),
                    namespace: ns.clone(),
                    name: name.clone(),
                })
        })
        .collect();
    out.sort();
    out
}

/// `enable_topology` as the Cinder operator published it in `cloud-conf`.
fn enable_topology(sim: &KubeSim) -> Option<String> {
    let gr = GroupResource::new("", "configmaps");
    let cm =
        sim.cluster()
            .store
            .get(&gr, testbed::DRIVER_NAMESPACE, cinder::CLOUD_CONF_CONFIGMAP)?;
    cm.pointer(&format!("/data/{}", cinder::config::ENABLE_TOPOLOGY_KEY))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// (share type, StorageClass) of every Manila StorageClass, from its `type` parameter.
fn share_type_classes(sim: &KubeSim) -> Vec<(String, String)> {
    let gr = GroupResource::new("storage.k8s.io", "storageclasses");
    let cluster = sim.cluster();
    let mut out: Vec<(String, String)> = cluster
        .store
        .iter(&gr, None, None)
        .filter(|((_, name), _)| name.starts_with(manila::STORAGE_CLASS_PREFIX))
        .map(|((_, name), obj)| {
            let share_type = obj
                .pointer("/parameters/type")
                .and_then(Value::as_str)
                .unwrap_or("?");
            (share_type.to_string(), name.clone())
        })
        .collect();
    out.sort();
    out
}

/// What the summary reports, read from kube-sim once the install has converged.
fn reports(
    sim: &KubeSim,
    before: &HashSet<String>,
    conditions: &BTreeMap<Driver, Conditions>,
) -> BTreeMap<Driver, DriverReport> {
    let mut out: BTreeMap<Driver, DriverReport> = Driver::ALL
        .iter()
        .map(|d| {
            (
                *d,
                DriverReport {
                    conditions: conditions.get(d).cloned().unwrap_or_default(),
                    ..DriverReport::default()
                },
            )
        })
        .collect();
    for o in created_objects(sim, before) {
        if let Some(r) = out.get_mut(&Driver::of(&o)) {
            r.created.push(o);
        }
    }
    if let Some(r) = out.get_mut(&Driver::Cinder) {
        r.enable_topology = enable_topology(sim);
    }
    if let Some(r) = out.get_mut(&Driver::Manila) {
        r.share_type_classes = share_type_classes(sim);
    }
    out
}

/// Left-aligned columns separated by two spaces, as kubectl prints tables.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.len());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let last = cells.len().saturating_sub(1);
        let mut s = String::from("  ");
        for (i, cell) in cells.into_iter().enumerate() {
            if i == last {
                s.push_str(cell);
            } else {
                let w = widths.get(i).copied().unwrap_or(0);
                s.push_str(&format!("{cell:<w$}  "));
            }
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// Indents every line of `text` by two more spaces (tables nested under a heading).
fn indented(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// The conditions worth reading (available, progressing, disabled, anything unhealthy), and a
/// count of the steps that only say they are not degraded.
fn conditions_section(conditions: &Conditions) -> String {
    if conditions.is_empty() {
        return "  conditions: none reported yet\n".into();
    }
    let (fine, shown): (Vec<_>, Vec<_>) = conditions.iter().partition(|(t, c)| quiet(t, c));
    let mut out = String::from("  conditions");
    if !fine.is_empty() {
        out.push_str(&format!(" (and {} more with Degraded = False)", fine.len()));
    }
    out.push_str(":\n");
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|(t, c)| {
            vec![
                t.to_string(),
                c.status.clone(),
                c.reason.clone(),
                c.message.clone(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        out.push_str(&indented(&table(
            &["TYPE", "STATUS", "REASON", "MESSAGE"],
            &rows,
        )));
    }
    out
}

/// The objects of the listed kinds one per line, the rest counted by kind. A Manila
/// StorageClass names its share type, which shows what the name sanitizer did.
fn objects_section(created: &[CreatedObject], share_types: &[(String, String)]) -> String {
    let noun = if created.len() == 1 {
        "object"
    } else {
        "objects"
    };
    let mut out = format!("  created {} {noun}", created.len());
    let (listed, other): (Vec<&CreatedObject>, Vec<&CreatedObject>) = created
        .iter()
        .partition(|o| LISTED_KINDS.contains(&o.kind.as_str()));
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for o in &other {
        *counts.entry(o.kind.as_str()).or_default() += 1;
    }
    let counted: Vec<String> = counts
        .iter()
        .map(|(k, n)| {
            if *n == 1 {
                k.to_string()
            } else {
                format!("{n} {k}")
            }
        })
        .collect();
    if listed.is_empty() {
        if !counted.is_empty() {
            out.push_str(": ");
            out.push_str(&counted.join(", "));
        }
        out.push('\n');
        return out;
    }
    out.push_str(":\n");
    let rows: Vec<Vec<String>> = listed
        .iter()
        .map(|o| {
            let ns = if o.namespace.is_empty() {
                "-"
            } else {
                &o.namespace
            };
            let share_type = (o.kind == "StorageClass")
                .then(|| share_types.iter().find(|(_, sc)| *sc == o.name))
                .flatten();
            let name = match share_type {
                Some((t, _)) => format!("{} (share type {t})", o.name),
                None => o.name.clone(),
            };
            vec![o.kind.clone(), ns.to_string(), name]
        })
        .collect();
    out.push_str(&indented(&table(&["KIND", "NAMESPACE", "NAME"], &rows)));
    if !counted.is_empty() {
        out.push_str(&format!("    and {}\n", counted.join(", ")));
    }
    out
}

fn driver_section(driver: Driver, r: &DriverReport) -> String {
    let state = match driver {
        Driver::Cinder => "installed".to_string(),
        Driver::Manila if is_disabled(&r.conditions) => {
            "disabled, the driver is not deployed".to_string()
        }
        Driver::Manila => {
            let n = r.share_type_classes.len();
            let noun = if n == 1 { "share type" } else { "share types" };
            format!("installed, {n} {noun}")
        }
    };
    let mut out = format!("\nClusterCSIDriver {}: {state}\n", driver.cr());
    out.push_str(&objects_section(&r.created, &r.share_type_classes));
    out.push_str(&conditions_section(&r.conditions));
    if driver == Driver::Cinder {
        out.push_str(&format!(
            "  enable_topology (ConfigMap {}/{}): {}\n",
            testbed::DRIVER_NAMESPACE,
            cinder::CLOUD_CONF_CONFIGMAP,
            r.enable_topology.as_deref().unwrap_or("(not set)")
        ));
    }
    out
}

fn is_disabled(conditions: &Conditions) -> bool {
    conditions
        .get(manila::operator::DISABLED_CONDITION)
        .is_some_and(|c| c.status == "True")
}

/// The summary printed once the install has converged.
pub fn summary(
    reports: &BTreeMap<Driver, DriverReport>,
    took: Duration,
    kubeconfig: &Path,
    exiting: bool,
) -> String {
    let empty = DriverReport::default();
    let manila = reports.get(&Driver::Manila).unwrap_or(&empty);
    let manila_state = if is_disabled(&manila.conditions) {
        "the Manila CSI driver is disabled, as CSIControllerDisabled below explains"
    } else {
        "the Manila CSI driver is installed"
    };
    let mut out = format!(
        "\nConverged in {} ms: the Cinder CSI driver is installed; {manila_state}.\n",
        took.as_millis()
    );
    for d in Driver::ALL {
        out.push_str(&driver_section(d, reports.get(&d).unwrap_or(&empty)));
    }
    if !exiting {
        let kc = kubeconfig.display();
        out.push_str(&format!(
            "\nThe cluster stays up. Try:\n  kubectl --kubeconfig {kc} get clustercsidriver,deploy,ds,storageclass -A\n  kubectl --kubeconfig {kc} get clustercsidriver {} -o yaml\n  kubectl --kubeconfig {kc} get clustercsidriver {} -o yaml\n",
            Driver::Cinder.cr(),
            Driver::Manila.cr(),
        ));
    }
    out
}

fn not_converged(timeout: Duration, conditions: &BTreeMap<Driver, Conditions>) -> String {
    let mut out = format!("\ndemo: the install has not converged after {timeout:?}.\n");
    let empty = Conditions::new();
    for d in Driver::ALL {
        out.push_str(&format!("ClusterCSIDriver {}\n", d.cr()));
        out.push_str(&conditions_section(conditions.get(&d).unwrap_or(&empty)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cond(status: &str, reason: &str) -> Condition {
        Condition {
            status: status.into(),
            reason: reason.into(),
            message: String::new(),
        }
    }

    fn set(entries: &[(&str, &str, &str)]) -> Conditions {
        entries
            .iter()
            .map(|(t, s, r)| (t.to_string(), cond(s, r)))
            .collect()
    }

    fn cinder_healthy() -> Conditions {
        set(&[
            (
                "OpenStackCinderDriverControllerServiceControllerAvailable",
                "True",
                "AsExpected",
            ),
            (
                "OpenStackCinderDriverNodeServiceControllerAvailable",
                "True",
                "AsExpected",
            ),
            (
                "OpenStackCinderDriverControllerServiceControllerProgressing",
                "False",
                "AsExpected",
            ),
            ("StorageClassControllerDegraded", "False", "AsExpected"),
        ])
    }

    fn manila_installed() -> Conditions {
        let mut c = set(&[
            ("ManagementStateDegraded", "False", "AsExpected"),
            ("StarterControllerDegraded", "False", "AsExpected"),
        ]);
        for t in MANILA_AVAILABLE {
            c.insert(t.to_string(), cond("True", "AsExpected"));
        }
        c
    }

    fn manila_disabled() -> Conditions {
        let mut c = set(&[("ManagementStateDegraded", "False", "AsExpected")]);
        c.insert(
            "CSIControllerDisabled".into(),
            Condition {
                status: "True".into(),
                reason: "PreConditionNotSatisfied".into(),
                message: "Pre-condition not satisfied: the cloud has no sharev2 service".into(),
            },
        );
        c
    }

    #[test]
    fn conditions_are_read_by_type_and_malformed_entries_skipped() {
        let obj = json!({"status": {"conditions": [
            {"type": "ADegraded", "status": "False", "reason": "AsExpected", "message": "m"},
            {"status": "True"},
            {"type": 3},
            "garbage",
        ]}});
        let c = conditions_of(&obj);
        assert_eq!(c.len(), 1);
        assert_eq!(
            c["ADegraded"],
            Condition {
                status: "False".into(),
                reason: "AsExpected".into(),
                message: "m".into()
            }
        );
        assert!(conditions_of(&json!({"status": {"conditions": "x"}})).is_empty());
        assert!(conditions_of(&json!({})).is_empty());
    }

    #[test]
    fn cinder_converges_with_both_workloads_available_and_nothing_unhealthy() {
        assert!(cinder_converged(&cinder_healthy()));

        let mut missing = cinder_healthy();
        missing.remove("OpenStackCinderDriverNodeServiceControllerAvailable");
        assert!(!cinder_converged(&missing), "the DaemonSet must report");

        let mut degraded = cinder_healthy();
        degraded.insert(
            "StorageClassControllerDegraded".into(),
            cond("True", "SyncError"),
        );
        assert!(!cinder_converged(&degraded));

        let mut progressing = cinder_healthy();
        progressing.insert(
            "OpenStackCinderDriverControllerServiceControllerProgressing".into(),
            cond("True", "Deploying"),
        );
        assert!(!cinder_converged(&progressing));

        let mut unavailable = cinder_healthy();
        unavailable.insert(
            "OpenStackCinderDriverNodeServiceControllerAvailable".into(),
            cond("False", "Deploying"),
        );
        assert!(!cinder_converged(&unavailable));
        assert!(!cinder_converged(&BTreeMap::new()));
    }

    #[test]
    fn manila_converges_installed_with_manila_and_disabled_without() {
        assert!(manila_converged(&manila_installed(), true));
        assert!(manila_converged(&manila_disabled(), false));
        // Each state is wrong for the other cloud.
        assert!(!manila_converged(&manila_disabled(), true));
        assert!(!manila_converged(&manila_installed(), false));
        assert!(!manila_converged(&BTreeMap::new(), true));
        assert!(!manila_converged(&BTreeMap::new(), false));

        for t in MANILA_AVAILABLE {
            let mut missing = manila_installed();
            missing.remove(t);
            assert!(!manila_converged(&missing, true), "{t} must report");
        }
        let mut outage = manila_installed();
        outage.insert(
            "StarterControllerDegraded".into(),
            cond("True", "ManilaUnavailable"),
        );
        assert!(!manila_converged(&outage, true));

        let mut other_reason = manila_disabled();
        if let Some(c) = other_reason.get_mut("CSIControllerDisabled") {
            c.reason = "Something".into();
        }
        assert!(!manila_converged(&other_reason, false));
        let mut degraded = manila_disabled();
        degraded.insert("ManagementStateDegraded".into(), cond("True", "Unknown"));
        assert!(
            !manila_converged(&degraded, false),
            "disabled must not degrade"
        );

        assert!(converged(&cinder_healthy(), &manila_installed(), true));
        assert!(converged(&cinder_healthy(), &manila_disabled(), false));
        assert!(!converged(&BTreeMap::new(), &manila_installed(), true));
        assert!(!converged(&cinder_healthy(), &BTreeMap::new(), true));
    }

    #[test]
    fn only_new_conditions_and_status_or_reason_flips_are_reported() {
        let before = cinder_healthy();
        let mut now = before.clone();
        assert!(changed(&before, &now).is_empty());
        if let Some(c) = now.get_mut("StorageClassControllerDegraded") {
            c.message = "new wording".into();
        }
        assert!(changed(&before, &now).is_empty(), "message-only change");
        now.insert(
            "StorageClassControllerDegraded".into(),
            cond("True", "SyncError"),
        );
        now.insert("NewAvailable".into(), cond("True", "AsExpected"));
        let kinds: Vec<&str> = changed(&before, &now).into_iter().map(|(t, _)| t).collect();
        assert_eq!(kinds, ["NewAvailable", "StorageClassControllerDegraded"]);
    }

    #[test]
    fn progress_lines_show_time_count_driver_and_the_message_only_when_it_explains() {
        let ok = Condition {
            status: "True".into(),
            reason: "AsExpected".into(),
            message: "all good".into(),
        };
        assert_eq!(
            progress_line(42, 7, Driver::Cinder, "XAvailable", &ok),
            "     42 ms    7 created  cinder  XAvailable = True (AsExpected)"
        );
        let bad = Condition {
            status: "True".into(),
            reason: "SyncError".into(),
            message: "cannot reach Keystone".into(),
        };
        let line = progress_line(1, 0, Driver::Manila, "XDegraded", &bad);
        assert!(line.ends_with(": cannot reach Keystone"), "{line}");
        assert!(line.contains(" manila  XDegraded"), "{line}");
        let disabled = &manila_disabled()["CSIControllerDisabled"];
        let line = progress_line(1, 0, Driver::Manila, "CSIControllerDisabled", disabled);
        assert!(
            line.ends_with("= True (PreConditionNotSatisfied): Pre-condition not satisfied: the cloud has no sharev2 service"),
            "{line}"
        );
    }

    #[test]
    fn new_steps_that_are_not_degraded_share_one_line_and_the_rest_keep_theirs() {
        let now = cinder_healthy();
        let changes = changed(&BTreeMap::new(), &now);
        let lines = progress_lines(5, 3, Driver::Cinder, &BTreeMap::new(), &changes);
        assert_eq!(lines.len(), 4, "{lines:#?}");
        assert_eq!(
            lines.last().map(String::as_str),
            Some("      5 ms    3 created  cinder  1 step reports Degraded = False")
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("OpenStackCinderDriverNodeServiceControllerAvailable = True")),
            "{lines:#?}"
        );
        // A recovery is news: it keeps its own line.
        let recovered = set(&[
            ("ADegraded", "False", "AsExpected"),
            ("BDegraded", "False", "AsExpected"),
        ]);
        let before = set(&[("ADegraded", "True", "SyncError")]);
        let lines = progress_lines(5, 3, Driver::Manila, &before, &changed(&before, &recovered));
        assert_eq!(
            lines,
            [
                "      5 ms    3 created  manila  ADegraded = False (AsExpected)",
                "      5 ms    3 created  manila  1 step reports Degraded = False",
            ]
        );
    }

    fn record(user: &str, verb: &str, resource: &str, code: u16) -> RequestRecord {
        RequestRecord {
            at_ms: 0,
            verb: verb.into(),
            method: "POST".into(),
            path: String::new(),
            query: String::new(),
            user: user.into(),
            user_agent: String::new(),
            resource: resource.into(),
            subresource: String::new(),
            namespace: String::new(),
            name: String::new(),
            code,
        }
    }

    #[test]
    fn only_the_operators_successful_creates_of_operands_count() {
        let log = vec![
            record(CINDER_USER, "create", "apps/deployments", 201),
            record(MANILA_USER, "create", "apps/deployments", 201),
            record(CINDER_USER, "create", "/configmaps", 201),
            record(CINDER_USER, "create", "/configmaps", 409),
            record(MANILA_USER, "create", "/events", 201),
            record(CINDER_USER, "update", "apps/deployments", 200),
            record("admin", "create", "/secrets", 201),
        ];
        assert_eq!(operator_creates(&log), 3);
    }

    fn obj(kind: &str, ns: &str, name: &str) -> CreatedObject {
        CreatedObject {
            kind: kind.into(),
            namespace: ns.into(),
            name: name.into(),
        }
    }

    #[test]
    fn objects_are_attributed_by_the_manila_namespace_or_name() {
        for o in [
            obj(
                "DaemonSet",
                "openshift-manila-csi-driver",
                "csi-nodeplugin-nfsplugin",
            ),
            obj("StorageClass", "", "csi-manila-cephfs-gold"),
            obj("CSIDriver", "", "manila.csi.openstack.org"),
            obj(
                "Lease",
                "openshift-cluster-csi-drivers",
                "openstack-manila-csi-driver-operator-lock",
            ),
        ] {
            assert_eq!(Driver::of(&o), Driver::Manila, "{o:?}");
        }
        for o in [
            obj("StorageClass", "", "standard-csi"),
            obj("ConfigMap", "openshift-cluster-csi-drivers", "cloud-conf"),
            obj("CSIDriver", "", "cinder.csi.openstack.org"),
        ] {
            assert_eq!(Driver::of(&o), Driver::Cinder, "{o:?}");
        }
    }

    #[test]
    fn tables_align_columns_without_trailing_spaces() {
        let t = table(
            &["KIND", "NAME"],
            &[
                vec!["Deployment".into(), "a".into()],
                vec!["CSIDriver".into(), "".into()],
            ],
        );
        assert_eq!(t, "  KIND        NAME\n  Deployment  a\n  CSIDriver\n");
    }

    fn words(l: &str) -> Vec<&str> {
        l.split_whitespace().collect()
    }

    #[test]
    fn the_summary_lists_main_objects_counts_the_rest_and_shows_share_types() {
        let cinder = DriverReport {
            created: vec![
                obj("ClusterRole", "", "openstack-cinder-privileged-role"),
                obj("ClusterRoleBinding", "", "a"),
                obj("ClusterRoleBinding", "", "b"),
                obj(
                    "Deployment",
                    "openshift-cluster-csi-drivers",
                    "openstack-cinder-csi-driver-controller",
                ),
                obj("StorageClass", "", "standard-csi"),
            ],
            conditions: cinder_healthy(),
            enable_topology: Some("true".into()),
            share_type_classes: vec![],
        };
        let manila = DriverReport {
            created: vec![obj("StorageClass", "", "csi-manila-cephfs-gold")],
            conditions: manila_installed(),
            enable_topology: None,
            share_type_classes: vec![
                ("CEPHFS_gold".into(), "csi-manila-cephfs-gold".into()),
                ("default".into(), "csi-manila-default".into()),
            ],
        };
        let reports = BTreeMap::from([(Driver::Cinder, cinder), (Driver::Manila, manila)]);
        let out = summary(&reports, Duration::from_millis(812), Path::new("/k"), true);
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            out.contains("Converged in 812 ms: the Cinder CSI driver is installed; the Manila CSI driver is installed."),
            "{out}"
        );
        assert!(
            lines.iter().any(|l| words(l)
                == [
                    "Deployment",
                    "openshift-cluster-csi-drivers",
                    "openstack-cinder-csi-driver-controller"
                ]),
            "{out}"
        );
        assert!(
            lines
                .iter()
                .any(|l| words(l) == ["StorageClass", "-", "standard-csi"]),
            "{out}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.trim() == "and ClusterRole, 2 ClusterRoleBinding"),
            "{out}"
        );
        assert!(
            !out.contains("openstack-cinder-privileged-role"),
            "RBAC is counted, not listed:\n{out}"
        );
        assert!(
            lines.iter().any(|l| words(l)
                == [
                    "StorageClass",
                    "-",
                    "csi-manila-cephfs-gold",
                    "(share",
                    "type",
                    "CEPHFS_gold)"
                ]),
            "{out}"
        );
        assert!(
            out.contains("ClusterCSIDriver manila.csi.openstack.org: installed, 2 share types"),
            "{out}"
        );
        assert!(
            out.contains("conditions (and 1 more with Degraded = False):"),
            "{out}"
        );
        assert!(
            !lines
                .iter()
                .any(|l| l.contains("StorageClassControllerDegraded")),
            "{out}"
        );
        assert!(
            out.contains(
                "  enable_topology (ConfigMap openshift-cluster-csi-drivers/cloud-conf): true"
            ),
            "{out}"
        );
        assert!(!out.contains("The cluster stays up"), "{out}");
        let staying = summary(&reports, Duration::from_millis(1), Path::new("/k"), false);
        assert!(
            staying.contains(
                "kubectl --kubeconfig /k get clustercsidriver manila.csi.openstack.org -o yaml"
            ),
            "{staying}"
        );
    }

    #[test]
    fn a_disabled_manila_is_summarised_with_its_condition_and_message() {
        let manila = DriverReport {
            created: vec![obj(
                "Lease",
                "openshift-cluster-csi-drivers",
                "openstack-manila-csi-driver-operator-lock",
            )],
            conditions: manila_disabled(),
            ..DriverReport::default()
        };
        let reports = BTreeMap::from([
            (
                Driver::Cinder,
                DriverReport {
                    conditions: cinder_healthy(),
                    ..DriverReport::default()
                },
            ),
            (Driver::Manila, manila),
        ]);
        let out = summary(&reports, Duration::from_millis(5), Path::new("/k"), true);
        assert!(
            out.contains(
                "the Manila CSI driver is disabled, as CSIControllerDisabled below explains"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "ClusterCSIDriver manila.csi.openstack.org: disabled, the driver is not deployed"
            ),
            "{out}"
        );
        assert!(out.contains("  created 1 object: Lease\n"), "{out}");
        assert!(
            out.lines().any(|l| words(l)
                == [
                    "CSIControllerDisabled",
                    "True",
                    "PreConditionNotSatisfied",
                    "Pre-condition",
                    "not",
                    "satisfied:",
                    "the",
                    "cloud",
                    "has",
                    "no",
                    "sharev2",
                    "service"
                ]),
            "{out}"
        );
        assert!(!out.contains("share type"), "{out}");
    }

    #[test]
    fn a_timeout_report_lists_both_drivers_conditions_or_says_there_are_none() {
        let mut c = cinder_healthy();
        c.insert(
            "StorageClassControllerDegraded".into(),
            Condition {
                status: "True".into(),
                reason: "SyncError".into(),
                message: "cannot create StorageClass".into(),
            },
        );
        let report = not_converged(
            Duration::from_secs(60),
            &BTreeMap::from([(Driver::Cinder, c)]),
        );
        assert!(report.contains("has not converged after 60s"), "{report}");
        assert!(
            report.lines().any(|l| words(l)
                == [
                    "StorageClassControllerDegraded",
                    "True",
                    "SyncError",
                    "cannot",
                    "create",
                    "StorageClass"
                ]),
            "{report}"
        );
        assert!(
            report.contains(
                "ClusterCSIDriver manila.csi.openstack.org\n  conditions: none reported yet"
            ),
            "{report}"
        );
    }
}
