//! Scenario `manila-operator`: the Manila operator's cost to OpenStack and to the cluster
//! (issue 4 item 8). The operator runs as its own process (`csi-operator openstack-manila
//! start`), so its resident memory is its own; the cluster (kube-sim + openstack-sim, seeded by
//! `testbed`) runs inside the bench process, whose request logs tell the operator's requests
//! apart (kube-sim by user; openstack-sim serves nobody else).
//!
//! Measured, with Manila offering two share types: CR creation → every object and both
//! StorageClasses applied, Kubernetes and OpenStack requests during install, the OpenStack
//! requests that 50 unrelated StorageClasses and 50 unrelated CSIDrivers cause, and the
//! operator's resident memory. Then an idle window with a short share-type refresh and short
//! Keystone tokens, counted from openstack-sim's log and extrapolated to an idle hour at the
//! default settings (5-minute refresh, 1-hour tokens). Then the same idle window on a cloud
//! without Manila (the disabled path).
//!
//! This module only measures and reports; it asserts nothing (targets are printed as
//! PASS/OVER, never enforced) and owns every process it starts.

use super::budget::{
    CONVERGE_LIMIT, INSTALL as BUDGET_INSTALL, MEMORY_KIB as BUDGET_MEMORY_KIB, QUIET, RESYNC,
};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::api::storage::v1::{CSIDriver, CSIDriverSpec, StorageClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, PostParams};
use kube_sim::RequestRecord;
use openstack_sim::{SimService, SimShareType};
use testbed::{Settings, Testbed};

use super::Options;
use crate::cluster::{
    Target, Unrelated, VerbCounts, describe, seed_unrelated, verdict, written_objects,
};
use crate::measure::{Memory, mib, run_bounded};
use crate::operator_process::{OperatorCommand, OperatorProcess};
use crate::report::{Section, Table};

pub const NAME: &str = "manila-operator";

/// The operator's service account, as its pod would authenticate; kube-sim records it as the
/// user of every request the operator makes.
const OPERATOR_USER: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:openstack-manila-csi-driver-operator";
const CR_NAME: &str = "manila.csi.openstack.org";
/// The driver's namespace, and the Secret the cloud credential operator puts there for the
/// driver pods (`manila::DRIVER_NAMESPACE`, `manila::DRIVER_CREDENTIALS_SECRET`).
const DRIVER_NAMESPACE: &str = "openshift-manila-csi-driver";
const DRIVER_CREDENTIALS_SECRET: &str = "manila-cloud-credentials";
const METRIC_PREFIX: &str = "openstack_manila_csi_driver_operator";
/// The operator's Event source (`manila::USER_AGENT`).
const EVENT_COMPONENT: &str = "openstack-manila-csi-driver-operator";
/// Set to run the operators at `--v 4` and keep their logs.
const TRACE_ENV: &str = "BENCH_MANILA_TRACE";
/// The share types openstack-sim offers, and the StorageClasses they become.
const SHARE_TYPES: [&str; 2] = ["default", "Gold_Fast"];
const STORAGE_CLASSES: [&str; 2] = ["csi-manila-default", "csi-manila-gold-fast"];
const AVAILABLE: [&str; 3] = [
    "OpenStackManilaDriverControllerServiceControllerAvailable",
    "OpenStackManilaDriverNodeServiceControllerAvailable",
    "NFSDriverNodeServiceControllerAvailable",
];
const DISABLED_CONDITION: &str = "CSIControllerDisabled";

/// Unrelated StorageClasses and CSIDrivers created (then deleted) while the operator watches.
const UNRELATED_OBJECTS: usize = 50;
/// How long after the last unrelated event the logs are read: more than two resync periods,
/// so a reaction deferred to a resync would be counted.
const CHURN_SETTLE: Duration = Duration::from_secs(5);
const CHURN_LIMIT: Duration = Duration::from_secs(60);
const CONCURRENCY: usize = 32;

/// The short settings of the idle windows, and the operator's defaults they are extrapolated
/// to (`--share-type-refresh 5m`, Keystone's default token lifetime of one hour).
const SHORT: Cadence = Cadence {
    refresh: Duration::from_secs(2),
    token_lifetime: Duration::from_secs(6),
};
const DEFAULTS: Cadence = Cadence {
    refresh: Duration::from_secs(300),
    token_lifetime: Duration::from_secs(3600),
};
/// The OpenStack client renews a token this long before it expires, at most (and at most a
/// tenth of its lifetime): `openstack::client`'s rule, so a token never expires mid-request.
const MAX_RENEW_MARGIN: Duration = Duration::from_secs(300);
/// Below this many share-type lists per refresh period, the report explains why.
const LAGGING: f64 = 0.95;

#[derive(Debug, Clone, Copy)]
struct Scale {
    /// Nodes in all (3 of them control-plane).
    nodes: usize,
    unrelated: Unrelated,
    /// Each idle window (enabled and disabled).
    idle_window: Duration,
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
                idle_window: Duration::from_secs(12),
            }
        } else {
            Scale {
                nodes: 1_000,
                unrelated: Unrelated {
                    namespaces: 100,
                    secrets: 10_000,
                    config_maps: 10_000,
                },
                idle_window: Duration::from_secs(60),
            }
        }
    }
}

/// How often the operator lists share types and how long Keystone's tokens live.
#[derive(Debug, Clone, Copy)]
struct Cadence {
    refresh: Duration,
    token_lifetime: Duration,
}

impl Cadence {
    /// How often an idle operator gets a new token: the client renews it a margin before it
    /// expires, and only a share-type check asks for one, so at the first check after that.
    fn token_period(self) -> Duration {
        let renew_after = self
            .token_lifetime
            .saturating_sub(MAX_RENEW_MARGIN.min(self.token_lifetime / 10));
        let refresh = self.refresh.max(Duration::from_millis(1));
        let checks = (renew_after.as_secs_f64() / refresh.as_secs_f64())
            .ceil()
            .max(1.0);
        refresh.mul_f64(checks)
    }
}

/// openstack-sim's request log of one window, by what each request was.
#[derive(Debug, Default, Clone)]
struct OpenStackCounts {
    /// Successful Keystone authentications (each issues a token).
    tokens: usize,
    /// `GET …/types` on Manila.
    lists: usize,
    /// `GET …/v3/auth/catalog` on Keystone: how a cloud without Manila is checked again with
    /// the cached token.
    catalogs: usize,
    /// The export-network diagnostic's reads (`…/shares…`, `…/share-networks…`), which have
    /// their own pace (`manila::check::EXPORT_NETWORK_REFRESH`, an hour).
    exports: usize,
    /// Anything else, described for the notes.
    other: Vec<String>,
}

impl OpenStackCounts {
    fn of(records: &[openstack_sim::RequestRecord]) -> Self {
        let mut counts = OpenStackCounts::default();
        for r in records {
            if r.issued_token {
                counts.tokens += 1;
            } else if r.service == SimService::Share
                && r.method == "GET"
                && r.path.ends_with("/types")
            {
                counts.lists += 1;
            } else if r.service == SimService::Identity
                && r.method == "GET"
                && r.path.ends_with("/auth/catalog")
            {
                counts.catalogs += 1;
            } else if r.service == SimService::Share
                && r.method == "GET"
                && (r.path.contains("/shares") || r.path.contains("/share-networks"))
            {
                counts.exports += 1;
            } else {
                counts
                    .other
                    .push(format!("{} {} → {}", r.method, r.path, r.status));
            }
        }
        counts
    }

    fn all(&self) -> usize {
        self.tokens + self.lists + self.catalogs + self.exports + self.other.len()
    }
}

/// Events counted in a window, as a rate per period and per idle hour at other settings.
#[derive(Debug, Clone, Copy)]
struct Rate {
    count: usize,
    /// Events per period of the measured settings (1.0: exactly one per period).
    per_period: f64,
    /// The same rate with the period of the default settings, per hour.
    per_hour_at_defaults: f64,
    /// Most events a window can hold at one per period: one more than whole periods fit,
    /// because the window starts at an arbitrary point of the cycle.
    allowed: usize,
}

impl Rate {
    fn new(count: usize, window: Duration, period: Duration, default_period: Duration) -> Self {
        let periods = window.as_secs_f64() / period.as_secs_f64().max(1e-9);
        let per_period = count as f64 / periods.max(1e-9);
        Rate {
            count,
            per_period,
            per_hour_at_defaults: per_period * 3600.0 / default_period.as_secs_f64().max(1e-9),
            allowed: periods.floor() as usize + 1,
        }
    }
}

/// The OpenStack requests of one idle window, extrapolated.
#[derive(Debug, Clone)]
struct IdleOpenStack {
    window: Duration,
    counts: OpenStackCounts,
    tokens: Rate,
    lists: Rate,
    catalogs: Rate,
    other: Rate,
    /// The operator's Kubernetes requests in the same window.
    kube: VerbCounts,
    /// Kubernetes requests other than watches and leader election.
    kube_unexpected: Vec<String>,
    memory: Memory,
}

impl IdleOpenStack {
    fn new(
        window: Duration,
        counts: OpenStackCounts,
        kube: &[RequestRecord],
        memory: Memory,
    ) -> Self {
        let token = |c| Rate::new(c, window, SHORT.token_period(), DEFAULTS.token_period());
        let refresh = |c| Rate::new(c, window, SHORT.refresh, DEFAULTS.refresh);
        IdleOpenStack {
            window,
            tokens: token(counts.tokens),
            lists: refresh(counts.lists),
            catalogs: refresh(counts.catalogs),
            other: refresh(counts.other.len()),
            counts,
            kube: VerbCounts::of(kube),
            kube_unexpected: unexpected(kube),
            memory,
        }
    }

    fn per_hour_at_defaults(&self) -> f64 {
        self.tokens.per_hour_at_defaults
            + self.lists.per_hour_at_defaults
            + self.catalogs.per_hour_at_defaults
            + self.other.per_hour_at_defaults
    }
}

struct Install {
    /// From the CR's create request to the last operand write, as kube-sim timed them.
    elapsed: Duration,
    /// From the CR's create request to the last operand create (every object exists).
    all_created: Duration,
    /// From the CR's create request to the create of the second StorageClass.
    classes_created: Duration,
    operand_writes: usize,
    /// Writes per operand object (`Kind.group/name -n namespace`), from the write Events.
    writes_per_object: BTreeMap<String, usize>,
    requests: VerbCounts,
    failed: Vec<String>,
    openstack: OpenStackCounts,
}

struct Churn {
    openstack: OpenStackCounts,
    kube: VerbCounts,
    kube_unexpected: Vec<String>,
    /// From the first create to the last delete, done by the bench.
    took: Duration,
}

struct Figures {
    scale: Scale,
    install: Install,
    churn: Churn,
    enabled: IdleOpenStack,
    disabled: IdleOpenStack,
    before_cr: Memory,
    after_install: Memory,
    after_churn: Memory,
}

pub async fn run(options: Options) -> anyhow::Result<Section> {
    let scale = Scale::new(options.quick);
    let (install, churn, enabled, memory) = enabled_phases(scale).await?;
    let disabled = disabled_phase(scale).await?;
    Ok(section(&Figures {
        scale,
        install,
        churn,
        enabled,
        disabled,
        before_cr: memory[0],
        after_install: memory[1],
        after_churn: memory[2],
    }))
}

fn images() -> BTreeMap<String, String> {
    let mut images = testbed::example_images();
    images.insert(
        "NFS_DRIVER_IMAGE".into(),
        "quay.io/example/csi-driver-nfs:v4.20".into(),
    );
    images
}

fn start_operator(bed: &Testbed, refresh: Duration) -> anyhow::Result<OperatorProcess> {
    let operator = OperatorProcess::start(
        bed,
        OperatorCommand {
            subcommand: "openstack-manila",
            user: OPERATOR_USER,
            metric_prefix: METRIC_PREFIX,
            args: vec![
                "--share-type-refresh".into(),
                format!("{}s", refresh.as_secs()),
                "--resync".into(),
                format!("{}s", RESYNC.as_secs()),
            ],
            env: images(),
            trace: std::env::var_os(TRACE_ENV).is_some(),
        },
    )?;
    eprintln!(
        "  operator (pid {}, --share-type-refresh {}s) started; metrics at {}",
        operator.pid(),
        refresh.as_secs(),
        operator.metrics_addr()
    );
    Ok(operator)
}

/// Install, unrelated churn and memory with the default refresh; then the idle window with
/// the short settings, by a second operator process on the same cluster.
async fn enabled_phases(
    scale: Scale,
) -> anyhow::Result<(Install, Churn, IdleOpenStack, [Memory; 3])> {
    eprintln!(
        "  starting kube-sim and openstack-sim (Manila with {} share types) with {} Nodes",
        SHARE_TYPES.len(),
        scale.nodes
    );
    let mut settings = Settings {
        worker_nodes: scale.nodes.saturating_sub(3),
        cinder_cluster_csi_driver: false,
        ..Settings::default()
    };
    settings.openstack.share_types =
        Some(SHARE_TYPES.iter().map(|t| SimShareType::new(t)).collect());
    let bed = Testbed::start(settings)
        .await
        .context("cannot start the testbed")?;
    seed_unrelated(&bed.client, scale.unrelated).await?;
    seed_driver_namespace(&bed).await?;

    let mut operator = start_operator(&bed, DEFAULTS.refresh)?;
    let first = async {
        operator.wait_ready().await?;
        let before_cr = operator.memory()?;
        eprintln!("  install");
        let install = install(&bed, &mut operator).await?;
        let after_install = operator.memory()?;
        eprintln!("  {UNRELATED_OBJECTS} unrelated StorageClasses and CSIDrivers");
        let churn = churn(&bed, &mut operator).await?;
        let after_churn = operator.memory()?;
        anyhow::Ok((install, churn, [before_cr, after_install, after_churn]))
    }
    .await;
    let (install, churn, memory) = operator.explain(first)?;
    operator.stop().await?;

    bed.openstack.set_token_lifetime(SHORT.token_lifetime);
    let mut operator = start_operator(&bed, SHORT.refresh)?;
    eprintln!(
        "  idle for {:?} (tokens live {:?})",
        scale.idle_window, SHORT.token_lifetime
    );
    let idle = idle(&bed, &mut operator, scale.idle_window).await;
    let idle = operator.explain(idle)?;
    operator.stop().await?;
    Ok((install, churn, idle, memory))
}

/// What the cloud credential operator leaves behind for the driver: its namespace and the
/// Secret the driver pods mount. (`testbed` creates only the Cinder side.)
async fn seed_driver_namespace(bed: &Testbed) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(bed.client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(DRIVER_NAMESPACE.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("cannot create namespace {DRIVER_NAMESPACE}"))?;
    let secrets: Api<Secret> = Api::namespaced(bed.client.clone(), DRIVER_NAMESPACE);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(DRIVER_CREDENTIALS_SECRET.into()),
            ..Default::default()
        },
        type_: Some("Opaque".into()),
        data: Some(BTreeMap::from([(
            "clouds.yaml".to_string(),
            ByteString(bed.clouds_yaml().into_bytes()),
        )])),
        ..Default::default()
    };
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .with_context(|| format!("cannot create Secret {DRIVER_CREDENTIALS_SECRET}"))?;
    Ok(())
}

async fn wait_until<F, Fut>(
    operator: &mut OperatorProcess,
    what: &str,
    mut done: F,
) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = Instant::now() + CONVERGE_LIMIT;
    loop {
        operator.check_alive()?;
        let state = match done().await {
            Ok(()) => return Ok(()),
            Err(state) => state,
        };
        anyhow::ensure!(
            Instant::now() < deadline,
            "{what} within {CONVERGE_LIMIT:?}; {state}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn install(bed: &Testbed, operator: &mut OperatorProcess) -> anyhow::Result<Install> {
    bed.kube.clear_requests();
    bed.openstack.clear_requests();
    bed.create_cluster_csi_driver(CR_NAME)
        .await
        .context("cannot create the ClusterCSIDriver")?;
    let classes: Api<StorageClass> = Api::all(bed.client.clone());
    wait_until(operator, "the driver did not become Available", || async {
        let c = bed.conditions(CR_NAME).await;
        let available = AVAILABLE
            .iter()
            .all(|t| c.get(*t).is_some_and(|(status, _, _)| status == "True"));
        let mut missing = Vec::new();
        for name in STORAGE_CLASSES {
            if !matches!(classes.get_opt(name).await, Ok(Some(_))) {
                missing.push(name);
            }
        }
        if available && missing.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "missing StorageClasses: {missing:?}; conditions: {c:?}"
            ))
        }
    })
    .await?;
    operator.wait_quiet(bed, QUIET).await?;

    let log = bed.kube.requests();
    let created = log
        .iter()
        .find(|r| {
            r.verb == "create"
                && r.resource == "operator.openshift.io/clustercsidrivers"
                && !operator.is_ours(r)
        })
        .context("kube-sim's request log has no create of the ClusterCSIDriver")?
        .at_ms;
    let ours: Vec<RequestRecord> = log.into_iter().filter(|r| operator.is_ours(r)).collect();
    let operand: Vec<&RequestRecord> = ours
        .iter()
        .filter(|r| r.is_write() && Target::of(r) == Target::Operand)
        .collect();
    let last = operand
        .iter()
        .map(|r| r.at_ms)
        .max()
        .context("the operator wrote no operand object")?;
    let last_create = operand
        .iter()
        .filter(|r| r.verb == "create")
        .map(|r| r.at_ms)
        .max()
        .unwrap_or(last);
    let mut class_creates: Vec<u64> = operand
        .iter()
        .filter(|r| r.verb == "create" && r.resource == "storage.k8s.io/storageclasses")
        .map(|r| r.at_ms)
        .collect();
    class_creates.sort_unstable();
    let classes_created = class_creates
        .get(STORAGE_CLASSES.len() - 1)
        .copied()
        .context("kube-sim's log has fewer StorageClass creates than share types")?;
    let failed = ours
        .iter()
        .filter(|r| r.code >= 400)
        .map(|r| format!("{} {} {} → {}", r.verb, r.resource, r.name, r.code))
        .collect();
    Ok(Install {
        elapsed: Duration::from_millis(last.saturating_sub(created)),
        all_created: Duration::from_millis(last_create.saturating_sub(created)),
        classes_created: Duration::from_millis(classes_created.saturating_sub(created)),
        operand_writes: operand.len(),
        writes_per_object: written_objects(&bed.client, EVENT_COMPONENT).await?,
        requests: VerbCounts::of(&ours),
        failed,
        openstack: OpenStackCounts::of(&bed.openstack.requests()),
    })
}

/// Requests other than watches and leader election.
fn unexpected(records: &[RequestRecord]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r.verb != "watch" && Target::of(r) != Target::Lease)
        .map(describe)
        .collect()
}

/// Creates and then deletes [`UNRELATED_OBJECTS`] StorageClasses and as many CSIDrivers of
/// other drivers, and counts what the operator asked of OpenStack (and of Kubernetes) meanwhile
/// and for [`CHURN_SETTLE`] after. The operator's refresh is the default 5 minutes and its
/// token lives an hour, so nothing periodic falls into this window: every request counted
/// would be caused by the events.
async fn churn(bed: &Testbed, operator: &mut OperatorProcess) -> anyhow::Result<Churn> {
    let classes: Api<StorageClass> = Api::all(bed.client.clone());
    let drivers: Api<CSIDriver> = Api::all(bed.client.clone());
    let driver_name = |i: usize| format!("unrelated-{i}.csi.example.com");
    let class_name = |i: usize| format!("unrelated-{i}");
    bed.kube.clear_requests();
    bed.openstack.clear_requests();
    let started = Instant::now();
    run_bounded(UNRELATED_OBJECTS, CONCURRENCY, CHURN_LIMIT, |i| {
        let api = classes.clone();
        async move {
            let class = StorageClass {
                metadata: ObjectMeta {
                    name: Some(class_name(i)),
                    ..Default::default()
                },
                provisioner: driver_name(i),
                ..Default::default()
            };
            api.create(&PostParams::default(), &class)
                .await
                .with_context(|| format!("creating StorageClass {}", class_name(i)))?;
            Ok(())
        }
    })
    .await?;
    run_bounded(UNRELATED_OBJECTS, CONCURRENCY, CHURN_LIMIT, |i| {
        let api = drivers.clone();
        async move {
            let driver = CSIDriver {
                metadata: ObjectMeta {
                    name: Some(driver_name(i)),
                    ..Default::default()
                },
                spec: CSIDriverSpec::default(),
            };
            api.create(&PostParams::default(), &driver)
                .await
                .with_context(|| format!("creating CSIDriver {}", driver_name(i)))?;
            Ok(())
        }
    })
    .await?;
    run_bounded(UNRELATED_OBJECTS, CONCURRENCY, CHURN_LIMIT, |i| {
        let (classes, drivers) = (classes.clone(), drivers.clone());
        async move {
            classes
                .delete(&class_name(i), &DeleteParams::default())
                .await
                .with_context(|| format!("deleting StorageClass {}", class_name(i)))?;
            drivers
                .delete(&driver_name(i), &DeleteParams::default())
                .await
                .with_context(|| format!("deleting CSIDriver {}", driver_name(i)))?;
            Ok(())
        }
    })
    .await?;
    let took = started.elapsed();
    tokio::time::sleep(CHURN_SETTLE).await;
    operator.check_alive()?;
    let ours = operator.requests(bed);
    Ok(Churn {
        openstack: OpenStackCounts::of(&bed.openstack.requests()),
        kube: VerbCounts::of(&ours),
        kube_unexpected: unexpected(&ours),
        took,
    })
}

/// Waits for the operator's first reconcile and quiet, then counts an idle window.
async fn idle(
    bed: &Testbed,
    operator: &mut OperatorProcess,
    window: Duration,
) -> anyhow::Result<IdleOpenStack> {
    operator.wait_ready().await?;
    operator.wait_quiet(bed, QUIET).await?;
    bed.kube.clear_requests();
    bed.openstack.clear_requests();
    tokio::time::sleep(window).await;
    operator.check_alive()?;
    let counts = OpenStackCounts::of(&bed.openstack.requests());
    Ok(IdleOpenStack::new(
        window,
        counts,
        &operator.requests(bed),
        operator.memory()?,
    ))
}

/// A cloud without Manila: the operator reports `CSIControllerDisabled` and idles.
async fn disabled_phase(scale: Scale) -> anyhow::Result<IdleOpenStack> {
    eprintln!("  starting a cluster on a cloud without Manila");
    let mut settings = Settings {
        cinder_cluster_csi_driver: false,
        ..Settings::default()
    };
    settings.openstack.share_types = None;
    settings.openstack.token_lifetime = SHORT.token_lifetime;
    let bed = Testbed::start(settings)
        .await
        .context("cannot start the testbed without Manila")?;
    let mut operator = start_operator(&bed, SHORT.refresh)?;
    let measured = async {
        operator.wait_ready().await?;
        bed.create_cluster_csi_driver(CR_NAME)
            .await
            .context("cannot create the ClusterCSIDriver")?;
        wait_until(
            &mut operator,
            "the driver was not reported disabled",
            || async {
                let c = bed.conditions(CR_NAME).await;
                match c.get(DISABLED_CONDITION) {
                    Some((status, _, _)) if status == "True" => Ok(()),
                    _ => Err(format!("conditions: {c:?}")),
                }
            },
        )
        .await?;
        eprintln!(
            "  disabled; idle for {:?} (tokens live {:?})",
            scale.idle_window, SHORT.token_lifetime
        );
        idle(&bed, &mut operator, scale.idle_window).await
    }
    .await;
    let idle = operator.explain(measured)?;
    operator.stop().await?;
    Ok(idle)
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 60.0 && s % 60.0 == 0.0 {
        format!("{} min", s / 60.0)
    } else {
        format!("{s} s")
    }
}

fn ratio(r: f64) -> String {
    format!("{r:.2}")
}

fn per_hour(r: f64) -> String {
    format!("{r:.1}")
}

/// Rows of the idle table for one path; the targets per idle hour at the defaults. Each refresh
/// makes one check: a share-type list while Manila is there, a catalog read while it is not.
fn idle_rows(table: &mut Table, path: &str, idle: &IdleOpenStack, enabled: bool) {
    let token_target = 3600.0 / DEFAULTS.token_lifetime.as_secs_f64();
    let check_target = 3600.0 / DEFAULTS.refresh.as_secs_f64();
    let (list_target, catalog_target) = if enabled {
        (check_target, 0.0)
    } else {
        (0.0, check_target)
    };
    for (what, rate, period, default_period, target) in [
        (
            "Keystone token issuances",
            idle.tokens,
            SHORT.token_period(),
            DEFAULTS.token_period(),
            token_target,
        ),
        (
            "share-type lists",
            idle.lists,
            SHORT.refresh,
            DEFAULTS.refresh,
            list_target,
        ),
        (
            "Keystone catalog reads",
            idle.catalogs,
            SHORT.refresh,
            DEFAULTS.refresh,
            catalog_target,
        ),
        (
            "other requests",
            idle.other,
            SHORT.refresh,
            DEFAULTS.refresh,
            0.0,
        ),
    ] {
        table.row(vec![
            format!("{path}: {what}"),
            rate.count.to_string(),
            secs(period),
            ratio(rate.per_period),
            secs(default_period),
            per_hour(rate.per_hour_at_defaults),
            per_hour(target),
        ]);
    }
    table.row(vec![
        format!("{path}: all"),
        idle.counts.all().to_string(),
        "-".into(),
        "-".into(),
        "-".into(),
        per_hour(idle.per_hour_at_defaults()),
        per_hour(token_target + check_target),
    ]);
}

/// One token per renewal period and one list per refresh (none while disabled), nothing else.
fn idle_within_target(idle: &IdleOpenStack, enabled: bool) -> bool {
    let checks_ok = if enabled {
        idle.lists.count <= idle.lists.allowed && idle.catalogs.count == 0
    } else {
        idle.catalogs.count <= idle.catalogs.allowed && idle.lists.count == 0
    };
    // The diagnostic reads its shares once an hour: at most one listing in a window shorter.
    idle.tokens.count <= idle.tokens.allowed
        && checks_ok
        && idle.other.count == 0
        && idle.counts.exports <= 1
}

fn section(f: &Figures) -> Section {
    let objects = f.install.writes_per_object.len();
    let most = f
        .install
        .writes_per_object
        .values()
        .copied()
        .max()
        .unwrap_or(0);
    let token_target = 3600.0 / DEFAULTS.token_lifetime.as_secs_f64();
    let list_target = 3600.0 / DEFAULTS.refresh.as_secs_f64();
    let writes = ["create", "update", "patch", "delete", "deletecollection"];
    let reads = ["get", "list"];

    let mut targets = Table::new(
        "Against the targets of issue 4 and the budgets of DESIGN §7",
        &["What", "Measured", "Target", "Verdict"],
    );
    targets.row(vec![
        format!("ClusterCSIDriver created → every object created ({objects} objects)"),
        format!("{} ms", f.install.all_created.as_millis()),
        format!("< {} ms", BUDGET_INSTALL.as_millis()),
        verdict(f.install.all_created < BUDGET_INSTALL),
    ]);
    targets.row(vec![
        format!(
            "ClusterCSIDriver created → both StorageClasses created ({} share types)",
            SHARE_TYPES.len()
        ),
        format!("{} ms", f.install.classes_created.as_millis()),
        format!("< {} ms", BUDGET_INSTALL.as_millis()),
        verdict(f.install.classes_created < BUDGET_INSTALL),
    ]);
    targets.row(vec![
        "ClusterCSIDriver created → last operand write".into(),
        format!("{} ms", f.install.elapsed.as_millis()),
        format!("< {} ms", BUDGET_INSTALL.as_millis()),
        verdict(f.install.elapsed < BUDGET_INSTALL),
    ]);
    targets.row(vec![
        "writes at install (operand objects)".into(),
        format!(
            "{} writes for {objects} objects (at most {most} per object), {} failed requests",
            f.install.operand_writes,
            f.install.failed.len()
        ),
        "one per object, no retries without cause".into(),
        verdict(f.install.operand_writes == objects && most <= 1 && f.install.failed.is_empty()),
    ]);
    targets.row(vec![
        "OpenStack requests at install".into(),
        format!(
            "{} token, {} share-type list, {} export-network reads, {} other",
            f.install.openstack.tokens,
            f.install.openstack.lists,
            f.install.openstack.exports,
            f.install.openstack.other.len()
        ),
        "one token, one share-type list, one share listing (no share yet: the export-network diagnostic has nothing more to read)".into(),
        verdict(
            f.install.openstack.tokens <= 1
                && f.install.openstack.lists <= 1
                && f.install.openstack.exports <= 1
                && f.install.openstack.other.is_empty(),
        ),
    ]);
    targets.row(vec![
        format!(
            "OpenStack requests per idle hour, Manila enabled (extrapolated to a {} refresh and {} tokens)",
            secs(DEFAULTS.refresh),
            secs(DEFAULTS.token_lifetime)
        ),
        format!(
            "{} ({} tokens + {} lists + {} other; {} export-network reads in the window, hourly apart)",
            per_hour(f.enabled.per_hour_at_defaults()),
            per_hour(f.enabled.tokens.per_hour_at_defaults),
            per_hour(f.enabled.lists.per_hour_at_defaults),
            per_hour(f.enabled.other.per_hour_at_defaults),
            f.enabled.counts.exports
        ),
        format!(
            "{} (one token per token lifetime + one list per refresh)",
            per_hour(token_target + list_target)
        ),
        verdict(idle_within_target(&f.enabled, true)),
    ]);
    targets.row(vec![
        format!(
            "OpenStack requests caused by {UNRELATED_OBJECTS} unrelated StorageClasses and {UNRELATED_OBJECTS} CSIDrivers (created, deleted)"
        ),
        f.churn.openstack.all().to_string(),
        "0".into(),
        verdict(f.churn.openstack.all() == 0),
    ]);
    targets.row(vec![
        "Kubernetes requests caused by them, watches and leader election aside".into(),
        format!(
            "{} writes, {} GETs/LISTs",
            f.churn.kube.without_lease(&writes),
            f.churn.kube.without_lease(&reads)
        ),
        "none".into(),
        verdict(f.churn.kube_unexpected.is_empty()),
    ]);
    targets.row(vec![
        "OpenStack requests per idle hour, Manila absent (disabled; extrapolated likewise)".into(),
        format!(
            "{} ({} tokens + {} catalog reads + {} lists + {} other)",
            per_hour(f.disabled.per_hour_at_defaults()),
            per_hour(f.disabled.tokens.per_hour_at_defaults),
            per_hour(f.disabled.catalogs.per_hour_at_defaults),
            per_hour(f.disabled.lists.per_hour_at_defaults),
            per_hour(f.disabled.other.per_hour_at_defaults)
        ),
        format!(
            "{} (one token per token lifetime + one catalog read per refresh, the absent Manila's check)",
            per_hour(token_target + list_target)
        ),
        verdict(idle_within_target(&f.disabled, false)),
    ]);
    for (label, idle) in [("enabled", &f.enabled), ("disabled", &f.disabled)] {
        targets.row(vec![
            format!(
                "Kubernetes requests while idle, {label} ({}, {} refresh), leader election aside",
                secs(idle.window),
                secs(SHORT.refresh)
            ),
            format!(
                "{} writes, {} GETs/LISTs, {} new watches",
                idle.kube.without_lease(&writes),
                idle.kube.without_lease(&reads),
                idle.kube.get("watch", None)
            ),
            "no writes, no live GETs; watches only".into(),
            verdict(idle.kube.without_lease(&writes) == 0 && idle.kube.without_lease(&reads) == 0),
        ]);
    }
    for (label, kib) in [
        (
            "resident memory after install, VmRSS",
            f.after_install.rss_kib,
        ),
        (
            "resident memory peak, VmHWM (install and unrelated events)",
            f.after_churn.hwm_kib,
        ),
    ] {
        targets.row(vec![
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

    let mut idle_table = Table::new(
        "OpenStack requests while idle, extrapolated to the default settings",
        &[
            "Requests",
            "in the window",
            "period measured",
            "per period",
            "period at defaults",
            "per idle hour at defaults",
            "target per idle hour",
        ],
    );
    idle_rows(&mut idle_table, "Manila enabled", &f.enabled, true);
    idle_rows(&mut idle_table, "Manila absent", &f.disabled, false);

    let install_table = f
        .install
        .requests
        .table("Operator Kubernetes requests during install, by verb");
    let churn_table = f.churn.kube.table(&format!(
        "Operator Kubernetes requests while {UNRELATED_OBJECTS} unrelated StorageClasses and CSIDrivers come and go (and {} s after), by verb",
        CHURN_SETTLE.as_secs()
    ));

    let mut memory_table = Table::new(
        "Operator resident memory",
        &["When", "VmRSS MiB", "VmHWM MiB"],
    );
    for (label, m) in [
        ("caches synced, no ClusterCSIDriver yet", f.before_cr),
        ("after install", f.after_install),
        (
            "after the unrelated StorageClasses and CSIDrivers",
            f.after_churn,
        ),
        (
            "second process, after the idle window with short settings",
            f.enabled.memory,
        ),
        ("Manila absent, after the idle window", f.disabled.memory),
    ] {
        memory_table.row(vec![label.into(), mib(m.rss_kib), mib(m.hwm_kib)]);
    }

    let mut notes = vec![
        format!(
            "Idle counts are extrapolated by rate: events per period of the short settings ({} refresh, tokens living {}), times the periods of an hour at the defaults. The OpenStack client renews a token min({}, a tenth of its lifetime) before it expires, at the first share-type check after that: every {} with the short settings and every {} with the defaults, so the defaults give {} tokens per hour rather than exactly 1.",
            secs(SHORT.refresh),
            secs(SHORT.token_lifetime),
            secs(MAX_RENEW_MARGIN),
            secs(SHORT.token_period()),
            secs(DEFAULTS.token_period()),
            per_hour(3600.0 / DEFAULTS.token_period().as_secs_f64())
        ),
        "A verdict on an idle window allows one event more than whole periods fit in it, since the window starts at an arbitrary point of the cycle.".into(),
        format!(
            "The unrelated objects were created and deleted by the bench in {} ms; the operator's refresh was the default {} and its token an hour old at most, so no periodic OpenStack request falls in that window and {} s after.",
            f.churn.took.as_millis(),
            secs(DEFAULTS.refresh),
            CHURN_SETTLE.as_secs()
        ),
        "Install times are kube-sim's own clock (1 ms resolution), from the arrival of the ClusterCSIDriver create request; they include the operator's Keystone authentication and share-type listing against openstack-sim.".into(),
        "kube-sim and openstack-sim run in the bench process and share the machine's cores with the operator.".into(),
    ];
    if f.enabled.lists.per_period < LAGGING {
        notes.push(format!(
            "Fewer than one share-type list per {} refresh ({} in {}): the operator counts the wait for its next check from the end of the reconcile that made the previous one, so each cycle is longer than the refresh by one reconcile. That is visible at {} in this build and negligible at {}, so the per-hour figure at the defaults understates the list count by the same ratio (one list per refresh is {} per hour).",
            secs(SHORT.refresh),
            f.enabled.lists.count,
            secs(f.enabled.window),
            secs(SHORT.refresh),
            secs(DEFAULTS.refresh),
            per_hour(list_target)
        ));
    }
    for (what, list) in [
        (
            "OpenStack requests at install other than a token and a share-type list",
            &f.install.openstack.other,
        ),
        (
            "OpenStack requests during the unrelated events",
            &f.churn
                .openstack
                .other
                .iter()
                .cloned()
                .chain(
                    std::iter::repeat_n("token".to_string(), f.churn.openstack.tokens).chain(
                        std::iter::repeat_n("share-type list".to_string(), f.churn.openstack.lists),
                    ),
                )
                .collect(),
        ),
        (
            "Other OpenStack requests while idle (enabled)",
            &f.enabled.counts.other,
        ),
        (
            "Other OpenStack requests while idle (disabled)",
            &f.disabled.counts.other,
        ),
        ("Failed operator requests at install", &f.install.failed),
        (
            "Kubernetes requests during the unrelated events other than watches and leader election",
            &f.churn.kube_unexpected,
        ),
        (
            "Kubernetes requests while idle (enabled) other than watches and leader election",
            &f.enabled.kube_unexpected,
        ),
        (
            "Kubernetes requests while idle (disabled) other than watches and leader election",
            &f.disabled.kube_unexpected,
        ),
    ] {
        if !list.is_empty() {
            notes.push(format!("{what}: {}.", list.join(", ")));
        }
    }
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

    let setup = format!(
        "The cluster is `testbed` (kube-sim with its workload simulator, and openstack-sim \
         offering Manila with the share types {}) inside the `bench` process, with {} Nodes \
         (3 control-plane) and {} Secrets and {} ConfigMaps in {} unrelated namespaces, plus \
         the driver namespace `{DRIVER_NAMESPACE}` with its `{DRIVER_CREDENTIALS_SECRET}` \
         Secret, all created before the operator starts. The operator runs as its own process, the product binary the image ships (built by `hack/build-product.sh`), \
         `csi-operator openstack-manila start --kubeconfig F --metrics-listen ADDR --resync {}s \
         --share-type-refresh D`, authenticated as its service account. With the default \
         refresh ({}) and hour-long tokens: once its caches are synced the ClusterCSIDriver \
         `{CR_NAME}` is created; the install ends when the controller, node and NFS services \
         are Available, both StorageClasses exist and the operator has made no write for {} s; \
         then {UNRELATED_OBJECTS} StorageClasses and {UNRELATED_OBJECTS} CSIDrivers of other \
         drivers are created and deleted. That operator is stopped (SIGTERM) and a second one \
         started with a {} refresh while openstack-sim issues tokens living {}, and left idle \
         for {}. Finally a second cluster whose cloud has no Manila (no `sharev2` in the \
         catalog) gets the same operator with the short settings, its ClusterCSIDriver is \
         created, and once it reports `{DISABLED_CONDITION}=True` it is left idle for {}. \
         OpenStack requests come from openstack-sim's request log; memory is VmRSS and VmHWM \
         from `/proc/<pid>/status`.\n",
        SHARE_TYPES
            .iter()
            .map(|t| format!("`{t}`"))
            .collect::<Vec<_>>()
            .join(" and "),
        f.scale.nodes,
        f.scale.unrelated.secrets,
        f.scale.unrelated.config_maps,
        f.scale.unrelated.namespaces,
        RESYNC.as_secs(),
        secs(DEFAULTS.refresh),
        QUIET.as_secs(),
        secs(SHORT.refresh),
        secs(SHORT.token_lifetime),
        secs(f.enabled.window),
        secs(f.disabled.window),
    );
    Section {
        name: NAME,
        title: "The Manila operator".into(),
        setup,
        tables: vec![
            targets,
            idle_table,
            install_table,
            churn_table,
            memory_table,
        ],
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os_record(
        method: &str,
        path: &str,
        service: SimService,
        issued: bool,
    ) -> openstack_sim::RequestRecord {
        openstack_sim::RequestRecord {
            method: method.into(),
            path: path.into(),
            service,
            interface: None,
            status: 200,
            user_id: None,
            token: None,
            issued_token: issued,
            auth_method: None,
            manila_microversion: None,
            proxied_host: None,
            user_agent: None,
        }
    }

    #[test]
    fn openstack_requests_are_told_apart() {
        let counts = OpenStackCounts::of(&[
            os_record(
                "POST",
                "/identity/v3/auth/tokens",
                SimService::Identity,
                true,
            ),
            os_record(
                "POST",
                "/identity/v3/auth/tokens",
                SimService::Identity,
                false,
            ),
            os_record("GET", "/share/v2/types", SimService::Share, false),
            os_record("GET", "/share/v2/p-demo/types", SimService::Share, false),
            os_record(
                "GET",
                "/identity/v3/auth/catalog",
                SimService::Identity,
                false,
            ),
            os_record(
                "GET",
                "/volume/v3/p-demo/os-availability-zone",
                SimService::Volume,
                false,
            ),
        ]);
        assert_eq!(counts.tokens, 1);
        assert_eq!(counts.lists, 2);
        assert_eq!(counts.catalogs, 1);
        assert_eq!(counts.other.len(), 2, "{:?}", counts.other);
        assert_eq!(counts.all(), 6);
    }

    #[test]
    fn tokens_are_renewed_at_the_first_check_after_the_margin() {
        assert_eq!(SHORT.token_period(), Duration::from_secs(6));
        // One hour tokens are renewed five minutes early: at the 11th five-minute check.
        assert_eq!(DEFAULTS.token_period(), Duration::from_secs(3300));
        let odd = Cadence {
            refresh: Duration::from_secs(4),
            token_lifetime: Duration::from_secs(10),
        };
        assert_eq!(odd.token_period(), Duration::from_secs(12));
        let long_refresh = Cadence {
            refresh: Duration::from_secs(7200),
            token_lifetime: Duration::from_secs(3600),
        };
        assert_eq!(long_refresh.token_period(), Duration::from_secs(7200));
    }

    #[test]
    fn rates_extrapolate_by_period() {
        let lists = Rate::new(6, Duration::from_secs(12), SHORT.refresh, DEFAULTS.refresh);
        assert!((lists.per_period - 1.0).abs() < 1e-9);
        assert!((lists.per_hour_at_defaults - 12.0).abs() < 1e-9);
        assert_eq!(lists.allowed, 7);
        let none = Rate::new(0, Duration::from_secs(12), SHORT.refresh, DEFAULTS.refresh);
        assert_eq!(none.per_hour_at_defaults, 0.0);
        let tokens = Rate::new(
            2,
            Duration::from_secs(12),
            Duration::from_secs(6),
            Duration::from_secs(3600),
        );
        assert!((tokens.per_hour_at_defaults - 1.0).abs() < 1e-9);
        assert_eq!(tokens.allowed, 3);
    }

    #[test]
    fn idle_verdicts_follow_the_targets() {
        let idle_with = |tokens, lists, catalogs, other: usize| {
            IdleOpenStack::new(
                Duration::from_secs(12),
                OpenStackCounts {
                    tokens,
                    lists,
                    catalogs,
                    exports: 0,
                    other: vec!["x".to_string(); other],
                },
                &[],
                Memory {
                    rss_kib: 0,
                    hwm_kib: 0,
                },
            )
        };
        let idle = |tokens, lists, other: usize| idle_with(tokens, lists, 0, other);
        assert!(idle_within_target(&idle(2, 6, 0), true));
        assert!(idle_within_target(&idle(3, 7, 0), true), "window edges");
        assert!(
            !idle_within_target(&idle(4, 6, 0), true),
            "tokens not reused"
        );
        assert!(
            !idle_within_target(&idle(2, 12, 0), true),
            "lists per event"
        );
        assert!(!idle_within_target(&idle(2, 6, 1), true), "other requests");
        assert!(idle_within_target(&idle(2, 0, 0), false));
        assert!(
            !idle_within_target(&idle(2, 1, 0), false),
            "lists while disabled"
        );
        // A 12 s window at a 2 s refresh holds at most 7 checks.
        assert!(idle_within_target(&idle_with(2, 0, 7, 0), false));
        assert!(
            !idle_within_target(&idle_with(2, 0, 8, 0), false),
            "catalog reads more often than the refresh"
        );
        assert!(
            !idle_within_target(&idle_with(2, 6, 1, 0), true),
            "catalog reads while Manila is there: the catalog comes with the token"
        );
    }

    #[test]
    fn idle_table_rows_fit_the_header() {
        let idle = IdleOpenStack::new(
            Duration::from_secs(12),
            OpenStackCounts::default(),
            &[],
            Memory {
                rss_kib: 0,
                hwm_kib: 0,
            },
        );
        let mut table = Table::new("t", &["a", "b", "c", "d", "e", "f", "g"]);
        idle_rows(&mut table, "p", &idle, true);
        assert_eq!(table.rows.len(), 5);
        assert!(table.rows.iter().all(|r| r.len() == table.header.len()));
    }
}
