//! `csi-operator demo`: the whole chain on one machine, with no cluster.
//!
//! It starts kube-sim and openstack-sim in-process, seeded as the installer leaves an
//! OpenShift-on-OpenStack cluster (the `testbed` crate: Nodes, Infrastructure, cloud config,
//! root credentials), runs a stand-in cloud credential operator, and applies
//! `manifests/openshift/` as the cluster version operator would. From there nothing is
//! in-process: kube-sim's process runner starts the Cluster Storage Operator's pod as a local
//! process of this binary; the CSO creates the Cinder and Manila operator Deployments, whose
//! pods kube-sim runs the same way; they install the drivers.
//!
//! The live view prints each condition of `ClusterOperator/storage` and of both
//! ClusterCSIDrivers as it changes, and each operator pod starting or restarting (plain lines
//! on stderr, readable in a terminal and in CI logs); then a summary on stdout (the
//! ClusterOperator, the operator pods and their logs, per ClusterCSIDriver what was created and
//! its conditions, Cinder's `enable_topology`, Manila's StorageClass per share type, the time
//! it took), and keeps the cluster up for kubectl until Ctrl-C or SIGTERM.
//! `--exit-when-ready` turns it into a check for CI.
//!
//! openstack-sim offers Manila with two share types by default; `--no-manila` takes Manila out
//! of its catalog to show the disabled path (`CSIControllerDisabled`, nothing deployed).
//!
//! kube-sim serves HTTPS with a CA it generates, written into the kubeconfig for kubectl (as
//! `admin`, a superuser) and into each operator pod's: a current kubectl sends no bearer token
//! over plain HTTP, and with RBAC enforced it would be `system:anonymous`, refused everything.
//!
//! The demo reads kube-sim's state and request log directly (not through the API), so what it
//! watches adds nothing to the request log a user inspects.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use kube_sim::resources::GroupResource;
use kube_sim::{KubeSim, RequestRecord};
use openstack_sim::SimShareType;
use serde_json::Value;
use testbed::{Settings, Testbed};

use crate::duration::parse_duration;

/// The users the operators authenticate as: their pods' service accounts (kube-sim's process
/// runner gives each pod a kubeconfig for its service account, and records it per request).
const CSO_USER: &str =
    "system:serviceaccount:openshift-cluster-storage-operator:cluster-storage-operator";
const CINDER_USER: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:openstack-cinder-csi-driver-operator";
const MANILA_USER: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:manila-csi-driver-operator";
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
    /// The release manifests to apply as the cluster version operator would [default:
    /// manifests/openshift of the source tree this binary was built from].
    #[arg(long, value_name = "DIR")]
    manifests: Option<PathBuf>,
    /// Where the operator processes' output goes, one file per pod.
    #[arg(long, default_value = "demo-logs")]
    log_dir: PathBuf,
}

/// What the live view follows: `ClusterOperator/storage` and the two ClusterCSIDrivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    ClusterOperator,
    Cinder,
    Manila,
}

impl Source {
    pub const ALL: [Source; 3] = [Source::ClusterOperator, Source::Cinder, Source::Manila];

    pub fn of(driver: Driver) -> Source {
        match driver {
            Driver::Cinder => Source::Cinder,
            Driver::Manila => Source::Manila,
        }
    }

    /// The short name in the live view.
    pub fn tag(self) -> &'static str {
        match self {
            Source::ClusterOperator => "storage",
            Source::Cinder => Driver::Cinder.tag(),
            Source::Manila => Driver::Manila.tag(),
        }
    }
}

/// The conditions of a source, read from kube-sim's store (not through the API, so that the
/// demo adds nothing to the request log).
fn source_conditions(sim: &KubeSim, source: Source) -> Conditions {
    let (gr, name) = match source {
        Source::ClusterOperator => (
            GroupResource::new("config.openshift.io", "clusteroperators"),
            "storage",
        ),
        Source::Cinder | Source::Manila => (
            GroupResource::new("operator.openshift.io", "clustercsidrivers"),
            match source {
                Source::Manila => Driver::Manila.cr(),
                _ => Driver::Cinder.cr(),
            },
        ),
    };
    let obj = sim.cluster().store().get(&gr, "", name);
    obj.map(|o| conditions_of(&o)).unwrap_or_default()
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

    /// The service account its operator runs as.
    fn user(self) -> &'static str {
        match self {
            Driver::Cinder => CINDER_USER,
            Driver::Manila => MANILA_USER,
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
    let mut shutdown = std::pin::pin!(shutdown);
    let share_types: Option<Vec<String>> = if args.no_manila {
        None
    } else if args.share_types.is_empty() {
        Some(DEFAULT_SHARE_TYPES.map(str::to_string).to_vec())
    } else {
        Some(args.share_types.clone())
    };
    let manifest_dir = args.manifests.clone().unwrap_or_else(default_manifest_dir);
    let manifests = testbed::cvo::load(&manifest_dir).with_context(|| {
        format!(
            "cannot read the release manifests in {}; point --manifests at manifests/openshift of this repository",
            manifest_dir.display()
        )
    })?;
    std::fs::create_dir_all(&args.log_dir).with_context(|| {
        format!(
            "cannot create the log directory {}; choose another with --log-dir",
            args.log_dir.display()
        )
    })?;
    let processes = process_config(&manifests, &absolute(&args.log_dir))?;

    let seeding = Instant::now();
    let settings = |kube_listen| {
        let mut s = Settings {
            kube_listen,
            ..Settings::for_cluster_storage_operator()
        };
        s.kube.processes = Some(processes.clone());
        // As on a cluster: each operator can do only what its service account is granted.
        s.kube.rbac = Some(kube_sim::RbacConfig::default());
        // HTTPS, as a cluster serves: kubectl sends no bearer token over plain HTTP, so with
        // RBAC on it would be system:anonymous and refused everything. The generated CA goes
        // into every kubeconfig kube-sim hands out (the operator pods' included).
        s.kube.tls = true;
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
    let url = bed.kube.url();
    crate::sim::write_private(&args.kubeconfig, &bed.kube.kubeconfig(KUBECTL_USER)).with_context(
        || {
            format!(
                "cannot write the kubeconfig to {}; choose another path with --kubeconfig",
                args.kubeconfig.display()
            )
        },
    )?;
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
        "demo: seeded in {} ms as the installer leaves a cluster: 3 control-plane and 3 worker \
         Nodes, Infrastructure (OpenStack), Proxy, APIServer, cloud config, root credentials",
        seeding.elapsed().as_millis(),
    );

    let started = Instant::now();
    testbed::cco::create_namespace(&bed.client)
        .await
        .context("cannot create the cloud credential operator's namespace")?;
    let cco = testbed::cco::spawn(bed.client.clone(), Duration::from_millis(250));
    testbed::cvo::apply(&bed.client, &manifests)
        .await
        .context("the release manifests do not apply")?;
    // What waits behind the ClusterOperator barrier is applied once the CSO is Available.
    let cvo = testbed::cvo::spawn(
        bed.client.clone(),
        manifests.clone(),
        testbed::cvo::Options::default(),
        Duration::from_millis(500),
    );
    eprintln!(
        "demo: applied {} release manifests from {} as the cluster version operator would; \
         kube-sim runs each operator pod as a local process under its service account, with RBAC \
         enforced (logs in {}):",
        manifests.len(),
        manifest_dir.display(),
        absolute(&args.log_dir).display(),
    );

    let manila_expected = share_types.is_some();
    let mut seen: BTreeMap<Source, Conditions> = BTreeMap::new();
    let mut pods_seen: BTreeMap<String, (Option<u32>, u32)> = BTreeMap::new();
    let mut created_shown = 0;
    let mut converged_after: Option<Duration> = None;
    let deadline = tokio::time::Instant::now() + args.timeout;
    let mut timed_out = false;
    let mut ticker = tokio::time::interval(POLL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let outcome = loop {
        tokio::select! {
            _ = &mut shutdown => {
                eprintln!("demo: stopping");
                break Ok(());
            }
            _ = ticker.tick() => {}
        }
        for line in process_lines(
            started.elapsed().as_millis(),
            &mut pods_seen,
            &bed.kube.processes(),
        ) {
            eprintln!("{line}");
        }
        let now: BTreeMap<Source, Conditions> = Source::ALL
            .iter()
            .map(|s| (*s, source_conditions(&bed.kube, *s)))
            .collect();
        // Until the install converges, objects appearing are progress worth a line too (the
        // first status write may come only after most of them exist). Not after a timeout: an
        // install stuck for hours must not copy the request log every tick.
        let installing = converged_after.is_none() && !timed_out;
        let mut printed = false;
        let mut created = created_shown;
        for source in Source::ALL {
            let empty = Conditions::new();
            let (Some(current), previous) = (now.get(&source), seen.get(&source).unwrap_or(&empty))
            else {
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
                source.tag(),
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
        let get = |s: Source| seen.get(&s).unwrap_or(&empty);
        if converged_after.is_none()
            && converged(
                get(Source::ClusterOperator),
                get(Source::Cinder),
                get(Source::Manila),
                manila_expected,
            )
        {
            let took = started.elapsed();
            converged_after = Some(took);
            let driver_conditions: BTreeMap<Driver, Conditions> = Driver::ALL
                .iter()
                .map(|d| (*d, get(Source::of(*d)).clone()))
                .collect();
            let reports = reports(&bed.kube, &driver_conditions);
            let refused = bed.kube.forbidden_requests();
            if !refused.is_empty() {
                eprintln!(
                    "demo: RBAC refused {} request(s) of the operators:\n  {}",
                    refused.len(),
                    refused.join("\n  ")
                );
            }
            print!(
                "{}",
                summary(
                    get(Source::ClusterOperator),
                    &created_by(&bed.kube, &bed.kube.requests(), CSO_USER),
                    &bed.kube.processes(),
                    &reports,
                    took,
                    &kubeconfig,
                    args.exit_when_ready
                )
            );
            if args.exit_when_ready {
                break Ok(());
            }
            eprintln!("demo: press Ctrl-C to stop; condition changes keep being printed");
        }
        if converged_after.is_none() && !timed_out && tokio::time::Instant::now() >= deadline {
            timed_out = true;
            eprint!(
                "{}",
                not_converged(args.timeout, &seen, &bed.kube.processes())
            );
            if args.exit_when_ready {
                break Err(anyhow::anyhow!(
                    "the install did not converge within {:?} (conditions above)",
                    args.timeout
                ));
            }
            eprintln!(
                "demo: keeping the cluster up to look around: kubectl --kubeconfig {} get \
                 clusteroperator storage -o yaml; press Ctrl-C to stop",
                kubeconfig.display(),
            );
        }
    };
    cco.abort();
    cvo.abort();
    stop_processes(&bed.kube).await;
    outcome
}

/// `manifests/openshift/` of the source tree the binary was built from.
fn default_manifest_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests/openshift")
}

/// kube-sim's process runner configuration: every operator image of the release (the CSO's
/// own image and the `*_OPERATOR_IMAGE`s in its environment) runs as this binary, whose first
/// command word (`csi-operator`) is the image's entry point; metrics go to a free port.
fn process_config(
    manifests: &[testbed::cvo::Manifest],
    log_dir: &Path,
) -> anyhow::Result<kube_sim::ProcessConfig> {
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let cso = manifests
        .iter()
        .find(|m| {
            m.object["kind"] == "Deployment"
                && m.object["metadata"]["name"] == cluster_storage::operator::OPERATOR_DEPLOYMENT
        })
        .context("the release manifests have no cluster-storage-operator Deployment")?;
    let container = &cso.object["spec"]["template"]["spec"]["containers"][0];
    let mut images: BTreeSet<String> = container["image"]
        .as_str()
        .map(str::to_owned)
        .into_iter()
        .collect();
    for e in container["env"].as_array().into_iter().flatten() {
        let name = e["name"].as_str().unwrap_or_default();
        if name.ends_with("_OPERATOR_IMAGE")
            && let Some(v) = e["value"].as_str()
        {
            images.insert(v.to_owned());
        }
    }
    let program = kube_sim::LocalProgram {
        program: exe,
        drop_leading: 1,
        extra_args: vec!["--metrics-listen=127.0.0.1:0".to_owned()],
        env: BTreeMap::new(),
    };
    let mut config = kube_sim::ProcessConfig {
        log_dir: Some(log_dir.to_owned()),
        ..kube_sim::ProcessConfig::default()
    };
    for image in images {
        config = config.with_image(image, program.clone());
    }
    Ok(config)
}

/// Stops kube-sim's controllers and gives the operator processes their grace period (they
/// release their leases on SIGTERM).
async fn stop_processes(sim: &KubeSim) {
    sim.shutdown();
    let until = tokio::time::Instant::now() + Duration::from_secs(10);
    while sim.processes().iter().any(|p| p.pid.is_some()) && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Lines for process-backed pods that started, restarted or stopped since the last look (a
/// pod about to start is not news).
pub fn process_lines(
    ms: u128,
    seen: &mut BTreeMap<String, (Option<u32>, u32)>,
    now: &[kube_sim::ProcessInfo],
) -> Vec<String> {
    let mut out = Vec::new();
    for p in now {
        let key = format!("{}/{}", p.namespace, p.pod);
        let state = (p.pid, p.restarts);
        let before = seen.get(&key).copied();
        if before == Some(state) {
            continue;
        }
        let what = match (p.pid, &p.state) {
            (Some(pid), _) if before.is_some_and(|(_, r)| p.restarts > r) => {
                format!("restarted as pid {pid} (restarts: {})", p.restarts)
            }
            (Some(pid), _) => format!("started as pid {pid}"),
            (None, kube_sim::ProcessState::Waiting { reason, .. })
                if reason == "ContainerCreating" =>
            {
                continue;
            }
            (None, state) => {
                let why = match state {
                    kube_sim::ProcessState::Waiting { reason, message } => {
                        format!("{reason}: {message}")
                    }
                    kube_sim::ProcessState::Terminating => "terminating".to_owned(),
                    kube_sim::ProcessState::Running => "running".to_owned(),
                };
                let log = p
                    .log
                    .as_ref()
                    .map(|l| format!("; log {}", l.display()))
                    .unwrap_or_default();
                format!("not running ({why}){log}")
            }
        };
        out.push(format!("{ms:>7} ms  pod {key} {what}"));
        seen.insert(key, state);
    }
    out
}

fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
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

/// `ClusterOperator/storage` says storage works: Available, not Progressing, not Degraded.
pub fn cluster_operator_converged(co: &Conditions) -> bool {
    let is = |t: &str, status: &str| co.get(t).is_some_and(|c| c.status == status);
    is("Available", "True") && is("Progressing", "False") && is("Degraded", "False")
}

/// The install has converged: the ClusterOperator says storage works, Cinder is available,
/// Manila available or disabled as expected.
pub fn converged(
    co: &Conditions,
    cinder: &Conditions,
    manila: &Conditions,
    manila_in_cloud: bool,
) -> bool {
    cluster_operator_converged(co)
        && cinder_converged(cinder)
        && manila_converged(manila, manila_in_cloud)
}

/// One line of the live view: elapsed ms, objects created so far, the driver, the condition.
pub fn progress_line(ms: u128, created: usize, tag: &str, kind: &str, c: &Condition) -> String {
    let mut line = format!(
        "{ms:>7} ms  {created:>3} created  {tag:<7}  {kind} = {} ({})",
        c.status, c.reason
    );
    if explains(kind, c) {
        // Union messages have one line per condition; the live view keeps one line each.
        line.push_str(": ");
        line.push_str(&c.message.lines().collect::<Vec<_>>().join("; "));
    }
    line
}

/// The live view's lines for one driver's changes from `before`: one per change, except that
/// steps newly reporting `Degraded = False` share one line (a recovery from `True` keeps its
/// own).
pub fn progress_lines(
    ms: u128,
    created: usize,
    tag: &str,
    before: &Conditions,
    changes: &[(&str, &Condition)],
) -> Vec<String> {
    let mut out = Vec::new();
    let mut fine = 0;
    for (kind, c) in changes {
        if quiet(kind, c) && c.reason == "AsExpected" && !before.contains_key(*kind) {
            fine += 1;
        } else {
            out.push(progress_line(ms, created, tag, kind, c));
        }
    }
    if fine > 0 {
        let steps = if fine == 1 {
            "step reports"
        } else {
            "steps report"
        };
        out.push(format!(
            "{ms:>7} ms  {created:>3} created  {tag:<7}  {fine} {steps} Degraded = False"
        ));
    }
    out
}

/// Whether a request log entry is an operator successfully creating an operand (its Events
/// are bookkeeping, not objects it installs).
fn is_operator_create(r: &RequestRecord) -> bool {
    [CSO_USER, CINDER_USER, MANILA_USER].contains(&r.user.as_str())
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

/// The objects `user` created that still exist, from the request log (a create names its
/// object there, as in an audit log), with their kinds from the store.
fn created_by(sim: &KubeSim, log: &[RequestRecord], user: &str) -> Vec<CreatedObject> {
    let cluster = sim.cluster();
    let store = cluster.store();
    let mut out: BTreeSet<CreatedObject> = BTreeSet::new();
    for r in log
        .iter()
        .filter(|r| r.user == user && is_operator_create(r) && !r.name.is_empty())
    {
        let Some((group, resource)) = r.resource.split_once('/') else {
            continue;
        };
        let gr = GroupResource::new(group, resource);
        if let Some(obj) = store.get(&gr, &r.namespace, &r.name) {
            out.insert(CreatedObject {
                kind: obj
                    .get("kind")
                    .and_then(Value::as_str)
                    .map_or_else(|| gr.qualified(), str::to_string),
                namespace: r.namespace.clone(),
                name: r.name.clone(),
            });
        }
    }
    out.into_iter().collect()
}

/// `enable_topology` as the Cinder operator published it in `cloud-conf`.
fn enable_topology(sim: &KubeSim) -> Option<String> {
    let gr = GroupResource::new("", "configmaps");
    let cm =
        sim.cluster()
            .store()
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
        .store()
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
    conditions: &BTreeMap<Driver, Conditions>,
) -> BTreeMap<Driver, DriverReport> {
    let log = sim.requests();
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
    for (driver, report) in out.iter_mut() {
        report.created = created_by(sim, &log, driver.user());
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
    cluster_operator: &Conditions,
    cso_created: &[CreatedObject],
    processes: &[kube_sim::ProcessInfo],
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
    out.push_str(&cluster_section(cluster_operator, processes));
    out.push_str("Cluster Storage Operator:\n");
    out.push_str(&objects_section(cso_created, &[]));
    for d in Driver::ALL {
        out.push_str(&driver_section(d, reports.get(&d).unwrap_or(&empty)));
    }
    if !exiting {
        let kc = kubeconfig.display();
        out.push_str(&format!(
            "\nThe cluster stays up. Try:\n  kubectl --kubeconfig {kc} get clusteroperator storage -o yaml\n  kubectl --kubeconfig {kc} get clustercsidriver,deploy,ds,storageclass -A\n  kubectl --kubeconfig {kc} get clustercsidriver {} -o yaml\n  kubectl --kubeconfig {kc} get clustercsidriver {} -o yaml\n",
            Driver::Cinder.cr(),
            Driver::Manila.cr(),
        ));
    }
    out
}

/// `ClusterOperator/storage` (every condition: there are five) and the operator pods.
fn cluster_section(co: &Conditions, processes: &[kube_sim::ProcessInfo]) -> String {
    let mut out = String::from("\nClusterOperator storage:\n");
    let rows: Vec<Vec<String>> = co
        .iter()
        .map(|(t, c)| {
            vec![
                t.clone(),
                c.status.clone(),
                c.reason.clone(),
                c.message.lines().next().unwrap_or_default().to_owned(),
            ]
        })
        .collect();
    out.push_str(&table(&["TYPE", "STATUS", "REASON", "MESSAGE"], &rows));
    if !processes.is_empty() {
        out.push_str("  operator pods (local processes):\n");
        let rows: Vec<Vec<String>> = processes
            .iter()
            .map(|p| {
                vec![
                    format!("{}/{}", p.namespace, p.pod),
                    p.pid.map_or_else(|| "-".to_owned(), |pid| pid.to_string()),
                    p.restarts.to_string(),
                    p.log
                        .as_ref()
                        .map_or_else(String::new, |l| l.display().to_string()),
                ]
            })
            .collect();
        out.push_str(&indented(&table(&["POD", "PID", "RESTARTS", "LOG"], &rows)));
    }
    out
}

fn not_converged(
    timeout: Duration,
    seen: &BTreeMap<Source, Conditions>,
    processes: &[kube_sim::ProcessInfo],
) -> String {
    let mut out = format!("\ndemo: the install has not converged after {timeout:?}.\n");
    let empty = Conditions::new();
    out.push_str(&cluster_section(
        seen.get(&Source::ClusterOperator).unwrap_or(&empty),
        processes,
    ));
    for d in Driver::ALL {
        out.push_str(&format!("ClusterCSIDriver {}\n", d.cr()));
        out.push_str(&conditions_section(
            seen.get(&Source::of(d)).unwrap_or(&empty),
        ));
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

    fn co_healthy() -> Conditions {
        set(&[
            ("Available", "True", "AsExpected"),
            ("Progressing", "False", "AsExpected"),
            ("Degraded", "False", "AsExpected"),
            ("Upgradeable", "True", "AsExpected"),
        ])
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

        let co = co_healthy();
        assert!(converged(&co, &cinder_healthy(), &manila_installed(), true));
        assert!(converged(&co, &cinder_healthy(), &manila_disabled(), false));
        assert!(!converged(&co, &BTreeMap::new(), &manila_installed(), true));
        assert!(!converged(&co, &cinder_healthy(), &BTreeMap::new(), true));
        // The drivers are fine but the ClusterOperator does not say so (yet).
        assert!(!converged(
            &BTreeMap::new(),
            &cinder_healthy(),
            &manila_installed(),
            true
        ));
        let mut progressing = co_healthy();
        progressing.insert("Progressing".into(), cond("True", "X_Deploying"));
        assert!(!converged(
            &progressing,
            &cinder_healthy(),
            &manila_installed(),
            true
        ));
    }

    fn pod(
        pid: Option<u32>,
        restarts: u32,
        state: kube_sim::ProcessState,
    ) -> kube_sim::ProcessInfo {
        kube_sim::ProcessInfo {
            namespace: "ns".into(),
            deployment: "op".into(),
            pod: "op-1".into(),
            template_hash: "1".into(),
            program: "/bin/x".into(),
            pid,
            restarts,
            state,
            last_exit: None,
            log: Some("/logs/ns_op-1.log".into()),
        }
    }

    #[test]
    fn pod_lines_say_started_restarted_and_why_a_pod_is_down() {
        let waiting = |reason: &str| kube_sim::ProcessState::Waiting {
            reason: reason.into(),
            message: "exit status: 1".into(),
        };
        let mut seen = BTreeMap::new();
        assert!(
            process_lines(1, &mut seen, &[pod(None, 0, waiting("ContainerCreating"))]).is_empty()
        );
        assert_eq!(
            process_lines(
                2,
                &mut seen,
                &[pod(Some(7), 0, kube_sim::ProcessState::Running)]
            ),
            ["      2 ms  pod ns/op-1 started as pid 7"]
        );
        assert!(
            process_lines(
                3,
                &mut seen,
                &[pod(Some(7), 0, kube_sim::ProcessState::Running)]
            )
            .is_empty()
        );
        assert_eq!(
            process_lines(4, &mut seen, &[pod(None, 0, waiting("CrashLoopBackOff"))]),
            [
                "      4 ms  pod ns/op-1 not running (CrashLoopBackOff: exit status: 1); log /logs/ns_op-1.log"
            ]
        );
        assert_eq!(
            process_lines(
                5,
                &mut seen,
                &[pod(Some(9), 1, kube_sim::ProcessState::Running)]
            ),
            ["      5 ms  pod ns/op-1 restarted as pid 9 (restarts: 1)"]
        );
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
            progress_line(42, 7, Driver::Cinder.tag(), "XAvailable", &ok),
            "     42 ms    7 created  cinder   XAvailable = True (AsExpected)"
        );
        let bad = Condition {
            status: "True".into(),
            reason: "SyncError".into(),
            message: "cannot reach Keystone".into(),
        };
        let line = progress_line(1, 0, Driver::Manila.tag(), "XDegraded", &bad);
        assert!(line.ends_with(": cannot reach Keystone"), "{line}");
        assert!(line.contains(" manila   XDegraded"), "{line}");
        let disabled = &manila_disabled()["CSIControllerDisabled"];
        let line = progress_line(
            1,
            0,
            Driver::Manila.tag(),
            "CSIControllerDisabled",
            disabled,
        );
        assert!(
            line.ends_with("= True (PreConditionNotSatisfied): Pre-condition not satisfied: the cloud has no sharev2 service"),
            "{line}"
        );
    }

    #[test]
    fn new_steps_that_are_not_degraded_share_one_line_and_the_rest_keep_theirs() {
        let now = cinder_healthy();
        let changes = changed(&BTreeMap::new(), &now);
        let lines = progress_lines(5, 3, Driver::Cinder.tag(), &BTreeMap::new(), &changes);
        assert_eq!(lines.len(), 4, "{lines:#?}");
        assert_eq!(
            lines.last().map(String::as_str),
            Some("      5 ms    3 created  cinder   1 step reports Degraded = False")
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
        let lines = progress_lines(
            5,
            3,
            Driver::Manila.tag(),
            &before,
            &changed(&before, &recovered),
        );
        assert_eq!(
            lines,
            [
                "      5 ms    3 created  manila   ADegraded = False (AsExpected)",
                "      5 ms    3 created  manila   1 step reports Degraded = False",
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
        let out = summary(
            &co_healthy(),
            &[],
            &[],
            &reports,
            Duration::from_millis(812),
            Path::new("/k"),
            true,
        );
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
        let staying = summary(
            &co_healthy(),
            &[],
            &[],
            &reports,
            Duration::from_millis(1),
            Path::new("/k"),
            false,
        );
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
        let out = summary(
            &co_healthy(),
            &[],
            &[],
            &reports,
            Duration::from_millis(5),
            Path::new("/k"),
            true,
        );
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
            &BTreeMap::from([(Source::Cinder, c)]),
            &[],
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
