//! The Cluster Storage Operator at runtime: its watches, one reconcile of `Storage/cluster` in
//! named steps, and the two status writers (`Storage/cluster` and `ClusterOperator/storage`).
//!
//! One reconcile, in order (anchors §3):
//! 1. `Storage/cluster`: Unmanaged hands everything to the administrator (only the
//!    ClusterOperator says `Unknown / Unmanaged`); Removed and Force are refused
//!    (`ManagementStateDegraded`), the CSO being non-removable.
//! 2. The config observer keeps `spec.observedConfig.targetconfig.proxy` in step with the
//!    cluster proxy, which every driver operator Deployment gets injected.
//! 3. The starter picks the drivers of `Infrastructure.status.platformStatus.type` from the
//!    [registry](crate::registry). A driver once started stays started (as Go's controller
//!    managers are never stopped); a foreign CSIDriver of the same name keeps it from starting
//!    until the administrator opts in ([`crate::ownership`]).
//! 4. Per started driver: the OLM removal (when the driver had an OLM package; its operator is
//!    deployed only once that is finished), the static
//!    objects, the `ClusterCSIDriver` (created once), the operator Deployment and, for Manila,
//!    the CA syncer; each step posts the conditions Go's controller of that name posts.
//! 5. The `Storage/cluster` status, then `ClusterOperator/storage` from it.
//!
//! Every step reads the watch caches; a reconcile in which nothing changed sends no request.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};

use k8s_openapi::api::storage::v1::CSIDriver;
use openshift_api::common::ManagementState;
use openshift_api::config::Infrastructure;
use openshift_api::operator::{ClusterCSIDriver, Storage};
use operator_kit::apply::Applier;
use operator_kit::board::{StepBoard, StepError};
use operator_kit::cache::{Cache, CacheBuilder};
use operator_kit::clusters::Clients;
use operator_kit::conditions::{self, OperatorCondition};
use operator_kit::config_observer::{self, CONFIG_OBSERVATION_PREFIX};
use operator_kit::events::{EventRecorder, EventType};
use operator_kit::hooks::TopologyMode;

use operator_kit::kinds::known as ar;
use operator_kit::logging::LogControl;
use operator_kit::metrics::{Metrics, WriteVerb};
use operator_kit::observed_config::{self, ServingInfo};
use operator_kit::runtime::Outcome;
use operator_kit::status::{Flushed, GenerationStatus, StatusBoard, StatusWriter};
use operator_kit::steps;
use serde_json::Value;
use tracing::{debug, info, warn};

use crate::build::{self, Inputs, OPERATOR_IMAGE_VERSION_ENV};
use crate::hosted;
use crate::olm_sync;
use crate::ownership::{self, Owner};
use crate::registry::{self, CSI_OPERATOR_NAMESPACE, DRIVERS, Driver, OPTIONAL_DRIVERS, Selection};
use crate::status as roll_up;

/// The CSO's own namespace (lease, Events).
pub const OPERATOR_NAMESPACE: &str = "openshift-cluster-storage-operator";
/// The CSO Deployment: the object its Events are about, as Go's recorder does.
pub const OPERATOR_DEPLOYMENT: &str = "cluster-storage-operator";
/// The lease of the CSO's leader election.
pub const LOCK_NAME: &str = "cluster-storage-operator-lock";
/// The reporting component of Events and the user agent.
pub const COMPONENT: &str = "cluster-storage-operator";
/// The name of `Storage` and `ClusterOperator` objects.
const STORAGE_NAME: &str = openshift_api::operator::STORAGE_NAME;
const CLUSTER_OPERATOR_NAME: &str = "storage";
/// `CSIDriverStarterDegraded`'s prefix (Go `CSIDriverStarter` with `WithSyncDegradedOnError`).
const STARTER_PREFIX: &str = "CSIDriverStarter";
/// The Manila CA syncer (`ResourceSyncController`).
const RESOURCE_SYNC_PREFIX: &str = "ResourceSyncController";
/// On OpenStack the CSO provides no default StorageClass: the driver does.
const DEFAULT_STORAGE_CLASS_PREFIX: &str = "DefaultStorageClassController";
const DEFAULT_STORAGE_CLASS_MESSAGE: &str =
    "StorageClass provided by supplied CSI Driver instead of the cluster-storage-operator";
/// The `DefaultStorageClassController` conditions on OpenStack, as the Go controller writes
/// them for a platform whose CSI driver provides the default class: Available with its message
/// and Progressing False, both with no reason (Go sets none).
pub fn default_storage_class_conditions() -> [OperatorCondition; 2] {
    [
        OperatorCondition::new(
            conditions::available_type(DEFAULT_STORAGE_CLASS_PREFIX),
            conditions::TRUE,
            "",
            DEFAULT_STORAGE_CLASS_MESSAGE,
        ),
        OperatorCondition::new(
            conditions::progressing_type(DEFAULT_STORAGE_CLASS_PREFIX),
            conditions::FALSE,
            "",
            "",
        ),
    ]
}

/// Condition types on `Storage/cluster` that only controllers of OpenShift's Go CSO write,
/// controllers this CSO does not run: the volume-data-source-validator's starter, static
/// resources and Deployment (`openshift/cluster-storage-operator`
/// `pkg/operator/volumedatasourcevalidator`; the release retires the validator itself,
/// `…_90_retire_03` to `_06`) and the SELinuxMount GA readiness check
/// (`pkg/operator/selinuxmountreadiness`). Removed on every reconcile, as the driver operators
/// remove theirs: after a takeover nothing would ever update them, and the ClusterOperator is
/// the union of every `Storage/cluster` condition, so a `…Progressing=True`, `…Degraded=True`
/// or `…Upgradeable=False` the Go CSO left would hold `ClusterOperator/storage` forever.
pub const RETIRED_STORAGE_CONDITIONS: &[&str] = &[
    "VolumeDataSourceValidatorStarterDegraded",
    "VolumeDataSourceValidatorStaticControllerDegraded",
    "VolumeDataSourceValidatorDeploymentControllerProgressing",
    "VolumeDataSourceValidatorDeploymentControllerDegraded",
    "SELinuxMountGAReadinessControllerDegraded",
    "SELinuxMountGAReadinessControllerUpgradeable",
];

/// How long a driver operator may go without a status before the CR step looks again (Go's
/// CR controller resyncs every 20 minutes; the watch on the ClusterCSIDriver does the rest).
const RESYNC: Duration = Duration::from_secs(20 * 60);

/// How the operator is started.
#[derive(Debug, Clone)]
pub struct Options {
    /// The CSO's namespace.
    pub namespace: String,
    /// The CSO's environment: the image variables of every driver and `OPERATOR_IMAGE_VERSION`.
    pub env: BTreeMap<String, String>,
    /// How long a `…Degraded` condition must last before `ClusterOperator/storage` says
    /// Degraded (2 minutes, as library-go).
    pub degraded_inertia: Duration,
    /// Set when the CSO serves a hosted control plane (`--guest-kubeconfig`): `namespace` is
    /// then the control-plane namespace of the management cluster, where the driver operators
    /// run beside the CSO; `Storage`, `ClusterOperator/storage` and the driver operators'
    /// guest objects are the guest's.
    pub hosted: Option<operator_kit::hosted::Hosted>,
    /// The optional drivers the administrator opted in to ([`registry::OPTIONAL_DRIVERS`],
    /// `--optional-driver`): started on any platform besides the platform's own. Empty by
    /// default; OpenShift installs these through OLM.
    pub optional_drivers: Vec<&'static Driver>,
}

impl Options {
    /// Standalone defaults with this environment.
    pub fn new(env: BTreeMap<String, String>) -> Self {
        Self {
            namespace: OPERATOR_NAMESPACE.to_owned(),
            env,
            degraded_inertia: roll_up::DEGRADED_INERTIA,
            hosted: None,
            optional_drivers: Vec::new(),
        }
    }

    /// Every driver this CSO may start: the registered ones and the opted-in optional ones.
    pub fn drivers(&self) -> impl Iterator<Item = &'static Driver> + '_ {
        DRIVERS.iter().chain(self.optional_drivers.iter().copied())
    }

    /// Where the driver operators run: the control-plane namespace when hosted.
    pub fn driver_operator_namespace(&self) -> &str {
        match self.hosted {
            Some(_) => &self.namespace,
            None => CSI_OPERATOR_NAMESPACE,
        }
    }
}

/// Every variable of the process environment the CSO reads: each registered driver's images,
/// the sidecar images and `OPERATOR_IMAGE_VERSION`.
pub fn env_from_process() -> BTreeMap<String, String> {
    DRIVERS
        .iter()
        .chain(OPTIONAL_DRIVERS)
        .flat_map(Driver::all_image_vars)
        .map(|v| v.cso_env)
        .chain([OPERATOR_IMAGE_VERSION_ENV])
        // The images of the drivers' pods in a hosted control plane's management cluster.
        .chain(
            DRIVERS
                .iter()
                .filter_map(hosted::driver_control_plane_image_env),
        )
        .chain([hosted::LIVENESS_PROBE_CONTROL_PLANE_IMAGE_ENV])
        .filter_map(|name| std::env::var(name).ok().map(|v| (name.to_owned(), v)))
        .collect()
}

/// Inputs with every image set, for what does not depend on values (names and kinds).
fn placeholder_inputs() -> Inputs {
    let mut env = BTreeMap::new();
    for name in DRIVERS
        .iter()
        .filter_map(hosted::driver_control_plane_image_env)
        .chain([hosted::LIVENESS_PROBE_CONTROL_PLANE_IMAGE_ENV])
    {
        env.insert(name.to_owned(), "placeholder".to_owned());
    }
    for v in DRIVERS
        .iter()
        .chain(OPTIONAL_DRIVERS)
        .flat_map(Driver::all_image_vars)
    {
        env.insert(v.cso_env.to_owned(), "placeholder".to_owned());
    }
    env.insert(
        OPERATOR_IMAGE_VERSION_ENV.to_owned(),
        "placeholder".to_owned(),
    );
    Inputs {
        env,
        ..Inputs::default()
    }
}

/// What the CSO watches: its CR and ClusterOperator, the cluster singletons, every registered
/// driver's ClusterCSIDriver and CSIDriver (by name), the Deployments and ConfigMaps of the
/// driver operators' namespace, the installer's cloud config, and each object it applies.
pub fn watches(
    clients: impl Into<Clients>,
    opts: &Options,
) -> Result<CacheBuilder, build::BuildError> {
    let operators_ns = opts.driver_operator_namespace();
    let mut builder = CacheBuilder::new(clients, [opts.namespace.clone()])
        .cluster_object(&ar("operator.openshift.io/v1", "Storage"), STORAGE_NAME)
        .cluster_object(
            &ar("config.openshift.io/v1", "ClusterOperator"),
            CLUSTER_OPERATOR_NAME,
        )
        .cluster_object(&ar("config.openshift.io/v1", "Infrastructure"), "cluster")
        .cluster_object(&ar("config.openshift.io/v1", "Proxy"), "cluster")
        .cluster_object(&ar("config.openshift.io/v1", "APIServer"), "cluster")
        .in_namespace(&ar("v1", "ConfigMap"), build::CONFIG_NAMESPACE)
        .in_namespace(&ar("v1", "ConfigMap"), operators_ns)
        .in_namespace(&ar("apps/v1", "Deployment"), operators_ns);
    if opts.hosted.is_some() {
        builder = operator_kit::hosted::watch(builder, &opts.namespace);
    }
    let inputs = placeholder_inputs();
    for driver in opts.drivers() {
        builder = builder
            .cluster_object(
                &ar("operator.openshift.io/v1", "ClusterCSIDriver"),
                driver.cluster_csi_driver,
            )
            .cluster_object(
                &ar("storage.k8s.io/v1", "CSIDriver"),
                driver.cluster_csi_driver,
            );
        let statics = match &opts.hosted {
            Some(h) => {
                let objects = hosted::hosted_operator_objects(driver, &inputs, h)?;
                objects
                    .management
                    .into_iter()
                    .chain(objects.guest)
                    .collect()
            }
            None => build::operator_objects(driver, &inputs)?
                .static_desired(driver)
                .map_err(build::BuildError::Desired)?,
        };
        for d in statics {
            // In namespaces the CSO does not own (openshift-config, the Manila
            // namespace) only the objects it applies are watched, by name, so that its RBAC
            // there can be limited to those names.
            builder = match d.object.metadata.namespace.as_deref() {
                Some(ns) if ns != operators_ns && !ns.is_empty() => {
                    let name = d.object.metadata.name.clone().unwrap_or_default();
                    builder.namespaced_object(&d.resource, ns, &name)
                }
                _ => builder.object(&d.resource, &d.object),
            };
        }
    }
    Ok(builder)
}

/// The state the operator keeps between reconciles.
pub struct Operator {
    client: Client,
    /// Every cluster the CSO writes to (the guest's only, unless hosted).
    clients: Clients,
    opts: Options,
    cache: Cache,
    applier: Applier,
    recorder: EventRecorder,
    storage_status: StatusWriter,
    co_status: StatusWriter,
    metrics: Arc<Metrics>,
    log: LogControl,
    operator_log_level: steps::OperatorLogLevel,
    /// Drivers started so far, in [`DRIVERS`] order; never shrinks.
    started: Vec<&'static Driver>,
}

impl Operator {
    pub fn new(
        clients: impl Into<Clients>,
        opts: Options,
        cache: Cache,
        metrics: Arc<Metrics>,
        log: LogControl,
    ) -> Self {
        let clients: Clients = clients.into();
        // Storage, the ClusterOperator and the ClusterCSIDrivers are the guest's.
        let client = clients.guest().clone();
        let involved = ObjectReference {
            api_version: Some("apps/v1".into()),
            kind: Some("Deployment".into()),
            namespace: Some(opts.namespace.clone()),
            name: Some(OPERATOR_DEPLOYMENT.into()),
            ..Default::default()
        };
        // Events are about the CSO's own Deployment, in the cluster it runs in.
        let recorder = EventRecorder::new(
            clients.own().clone(),
            involved,
            COMPONENT,
            &steps::instance_name(COMPONENT),
        );
        let applier = Applier::new(clients.clone(), cache.clone(), recorder.clone());
        let storage_status = StatusWriter::new(
            client.clone(),
            &ar("operator.openshift.io/v1", "Storage"),
            None,
        );
        let co_status = StatusWriter::new(
            client.clone(),
            &ar("config.openshift.io/v1", "ClusterOperator"),
            None,
        );
        Self {
            client,
            clients,
            opts,
            cache,
            applier,
            recorder,
            storage_status,
            co_status,
            metrics,
            log,
            operator_log_level: steps::OperatorLogLevel::default(),
            started: Vec::new(),
        }
    }

    /// The drivers started so far.
    pub fn started(&self) -> &[&'static Driver] {
        &self.started
    }

    /// One reconcile of `Storage/cluster`.
    pub async fn reconcile(&mut self) -> Outcome {
        let began = Instant::now();
        // Events are written beside the steps, never between an object and the next.
        let events = self.recorder.clone();
        let outcome = events.alongside(self.reconcile_inner()).await;
        self.metrics
            .reconciled(began.elapsed(), matches!(outcome, Outcome::Done { .. }));
        outcome
    }

    async fn reconcile_inner(&mut self) -> Outcome {
        let Some(cached) = self.cache.get_object::<Storage>(None, STORAGE_NAME) else {
            // The cluster version operator creates it; without it there is nothing to report
            // on (Go's status syncer would delete the ClusterOperator; we leave it alone).
            debug!("Storage/{STORAGE_NAME} does not exist; waiting for it");
            return Outcome::Done {
                requeue_after: None,
            };
        };
        // Our own last write when the watch has not shown it yet: its generations keep the
        // operator Deployments from being written again.
        let storage_obj = self.storage_status.newest(&cached);
        let storage: Storage = match steps::decode_cr(&storage_obj) {
            Ok(s) => s,
            Err(e) => {
                warn!(error = %e, "Storage/{STORAGE_NAME} cannot be read");
                self.metrics.error("config");
                return Outcome::Failed {
                    requeue_after: None,
                };
            }
        };
        let operator_level = storage
            .spec
            .operator
            .operator_log_level
            .as_ref()
            .map(|l| l.as_str().to_owned())
            .unwrap_or_default();
        self.operator_log_level.sync(&self.log, &operator_level);

        let management = storage.spec.operator.management_state();
        let mut board = StepBoard::new();
        for retired in RETIRED_STORAGE_CONDITIONS {
            board.remove_condition(retired);
        }
        match steps::management_state(&mut board, &management, "Storage") {
            steps::Management::Reconcile => {}
            steps::Management::NoWrites => {
                // The administrator has the wheel; only the ClusterOperator says so.
                return self
                    .cluster_operator_step(&storage_obj, &management, false, None)
                    .await;
            }
            steps::Management::StatusOnly => {
                let after = self.flush_storage(&board, &storage_obj).await;
                let failed = after.is_none();
                let after = after.unwrap_or(storage_obj);
                return self
                    .cluster_operator_step(&after, &management, failed, None)
                    .await;
            }
        }

        let mut storage_obj = storage_obj;
        let infra: Option<Infrastructure> = self.cache.get::<Infrastructure>(None, "cluster");
        let mut inputs = Inputs {
            env: self.opts.env.clone(),
            log_level: storage.spec.operator.log_level(),
            topology: infra
                .as_ref()
                .map(|i| TopologyMode::parse(i.control_plane_topology().as_str()))
                .unwrap_or(TopologyMode::HighlyAvailable),
            ..Inputs::default()
        };
        let observed = config_observer::observe_with(
            &self.client,
            &self.cache,
            &storage_obj,
            observed_config::cso_observed_config,
        )
        .await;
        match board.post(CONFIG_OBSERVATION_PREFIX, observed.map_err(StepError::from)) {
            Some(observed) => {
                inputs.proxy = observed.proxy;
                inputs.serving = observed.serving;
                if let Some(written) = observed.written {
                    self.metrics.write("Storage", WriteVerb::Update);
                    storage_obj = Arc::new(written);
                    self.storage_status.remember(storage_obj.clone());
                }
            }
            None => inputs.serving = ServingInfo::intermediate(),
        }

        self.starter_step(&mut board, infra.as_ref()).await;
        let hosted = self.hosted_control_plane(&mut board);
        let mut requeue: Option<Duration> = None;
        for driver in self.started.clone() {
            // A driver once installed through OLM is removed from OLM before its operator is
            // deployed (anchors §3.7); once finished, this costs nothing.
            let mut deploy = true;
            if let Some(olm) = driver.olm
                && !olm_sync::settled(driver, &storage_obj)
            {
                let out =
                    olm_sync::sync(&self.client, driver, olm, storage_obj.clone(), &mut board)
                        .await;
                storage_obj = out.storage;
                deploy = out.complete;
                requeue = earliest(requeue, out.requeue_after);
            }
            self.driver_steps(
                &mut board,
                driver,
                &inputs,
                &storage_obj,
                deploy,
                hosted.as_ref(),
            )
            .await;
        }
        if self.opts.hosted.is_some() {
            self.version_step(&mut board).await;
        }
        for c in default_storage_class_conditions() {
            board.set_condition(c);
        }

        let after = self.flush_storage(&board, &storage_obj).await;
        let failed = board.failed() || after.is_none();
        let after = after.unwrap_or(storage_obj);
        self.cluster_operator_step(&after, &management, failed, requeue)
            .await
    }

    /// Picks the drivers for the platform and starts those whose CSIDriver is not someone
    /// else's. Posts `CSIDriverStarterDegraded` (foreign CSIDrivers), the no-driver condition
    /// and `StorageOperatorUpgradeable`.
    async fn starter_step(&mut self, board: &mut StepBoard, infra: Option<&Infrastructure>) {
        let platform = infra
            .and_then(Infrastructure::platform_type)
            .map(|p| p.as_str().to_owned());
        let selection = registry::select_with(platform.as_deref(), &self.opts.optional_drivers);
        let mut blocked = Vec::new();
        for driver in &selection.drivers {
            if self.started.iter().any(|d| d.name == driver.name) {
                continue;
            }
            match self.csi_driver_owner(driver) {
                Owner::Foreign { installed_by } => {
                    blocked.push(ownership::foreign_message(driver, installed_by.as_deref()));
                }
                owner => {
                    if owner == Owner::TakeOverAllowed {
                        self.recorder
                            .record(
                                EventType::Warning,
                                "CSIDriverTakeOver",
                                &format!(
                                    "CSIDriver {} was installed by someone else; taking it over as its {} annotation allows",
                                    driver.cluster_csi_driver,
                                    ownership::TAKE_OVER_ANNOTATION
                                ),
                            )
                            .await;
                    }
                    info!(driver = driver.name, "starting the driver operator");
                    self.started.push(driver);
                }
            }
        }
        self.started.sort_by_key(|d| {
            DRIVERS
                .iter()
                .chain(OPTIONAL_DRIVERS)
                .position(|x| x.name == d.name)
                .unwrap_or(usize::MAX)
        });
        let shown = Selection {
            drivers: self.started.clone(),
            message: selection.message.clone(),
        };
        let (set, remove) = roll_up::starter_conditions(&shown);
        for c in set {
            board.set_condition(c);
        }
        for t in remove {
            board.remove_condition(t);
        }
        let result = if blocked.is_empty() {
            Ok(())
        } else {
            Err(StepError::Reasoned {
                reason: ownership::FOREIGN_CSI_DRIVER_REASON,
                message: blocked.join("\n"),
            })
        };
        board.post(STARTER_PREFIX, result);
    }

    fn csi_driver_owner(&self, driver: &Driver) -> Owner {
        let live = self
            .cache
            .get_object::<CSIDriver>(None, driver.cluster_csi_driver);
        let empty = BTreeMap::new();
        match live {
            None => ownership::classify(false, &empty, &empty),
            Some(obj) => ownership::classify(
                true,
                obj.metadata.labels.as_ref().unwrap_or(&empty),
                obj.metadata.annotations.as_ref().unwrap_or(&empty),
            ),
        }
    }

    /// Every step of one started driver.
    async fn driver_steps(
        &mut self,
        board: &mut StepBoard,
        driver: &'static Driver,
        inputs: &Inputs,
        storage: &DynamicObject,
        deploy: bool,
        hosted: Option<&operator_kit::hosted::Hosted>,
    ) {
        let prefix = driver.condition_prefix;
        let static_prefix = format!("{prefix}CSIDriverOperatorStaticController");
        let deployment_prefix = format!("{prefix}{}", roll_up::DEPLOYMENT_CONTROLLER_INFIX);
        // Standalone: everything in one cluster. Hosted: the management objects (in the
        // control-plane namespace) under their own controller, the guest's under the
        // standalone name, as the Go CSO names them.
        let built = match hosted {
            None => build::operator_objects(driver, inputs).map(|o| {
                let deployment = o.deployment_desired(driver);
                (None, o.static_desired(driver), deployment)
            }),
            Some(h) => hosted::hosted_operator_objects(driver, inputs, h)
                .map(|o| (Some(o.management), Ok(o.guest), Ok(o.deployment))),
        };
        let (management, statics, deployment) = match built {
            Ok(b) => b,
            Err(e) => {
                // A missing image blocks the static objects and the Deployment alike.
                board.post_error(&[&static_prefix, &deployment_prefix], &StepError::other(e));
                self.cr_step(board, driver, inputs).await;
                return;
            }
        };
        if let Some(management) = management {
            steps::apply_group(
                &self.applier,
                &self.metrics,
                board,
                &hosted::management_static_controller(driver),
                Ok(management),
            )
            .await;
        }
        steps::apply_group(&self.applier, &self.metrics, board, &static_prefix, statics).await;
        self.cr_step(board, driver, inputs).await;
        // Not before the OLM-installed operator is gone (Go `olmRemovalComplete`).
        if deploy {
            self.deployment_step(board, driver, deployment, storage)
                .await;
        }
        // Hosted, HyperShift gives the control-plane namespace its CA (`openstack-cloud-config`)
        // and the CSO runs no CA syncer (anchors §5.5).
        if driver.syncs_cloud_ca && self.opts.hosted.is_none() {
            self.ca_sync_step(board).await;
        }
    }

    /// Creates the driver's `ClusterCSIDriver` when missing (never updates it: admin edits
    /// persist) and copies its conditions as `<P>CSIDriverOperatorCR*`; posts
    /// `<P>CSIDriverOperatorDegraded`.
    async fn cr_step(&self, board: &mut StepBoard, driver: &Driver, inputs: &Inputs) {
        let prefix = format!("{}CSIDriverOperator", driver.condition_prefix);
        let live = self
            .cache
            .get_object::<ClusterCSIDriver>(None, driver.cluster_csi_driver);
        let live = match live {
            Some(obj) => Some(obj),
            None => {
                let created = self.create_cluster_csi_driver(driver, inputs).await;
                match board.post(&prefix, created.map_err(StepError::other)) {
                    Some(obj) => obj,
                    None => return,
                }
            }
        };
        let cr_conditions = live
            .as_deref()
            .map(steps::previous_conditions)
            .unwrap_or_default();
        for c in roll_up::driver_cr_conditions(driver, &cr_conditions, jiff::Timestamp::now()) {
            board.set_condition(c);
        }
        if let Some(obj) = &live {
            board.record_generation(GenerationStatus {
                group: "operator.openshift.io".into(),
                resource: "clustercsidrivers".into(),
                namespace: String::new(),
                name: driver.cluster_csi_driver.into(),
                last_generation: obj.metadata.generation.unwrap_or_default(),
                hash: String::new(),
            });
        }
        board.post(&prefix, Ok(()));
    }

    async fn create_cluster_csi_driver(
        &self,
        driver: &Driver,
        inputs: &Inputs,
    ) -> Result<Option<Arc<DynamicObject>>, CreateError> {
        let cr = build::cluster_csi_driver(driver, &inputs.log_level);
        match steps::create_cluster_csi_driver(&self.client, &self.metrics, &cr).await {
            Ok(Some(created)) => {
                info!(
                    name = driver.cluster_csi_driver,
                    "created the ClusterCSIDriver"
                );
                self.recorder
                    .created(
                        &ar("operator.openshift.io/v1", "ClusterCSIDriver"),
                        None,
                        driver.cluster_csi_driver,
                    )
                    .await;
                let obj = serde_json::to_value(&created)
                    .ok()
                    .and_then(|v| serde_json::from_value::<DynamicObject>(v).ok())
                    .map(Arc::new);
                Ok(obj)
            }
            // Our cache lagged behind; the watch brings it.
            Ok(None) => Ok(None),
            Err(source) => {
                self.metrics.error("kube_api");
                Err(CreateError {
                    name: driver.cluster_csi_driver,
                    source,
                })
            }
        }
    }

    /// Applies the operator Deployment (expected generation from `Storage.status.generations`)
    /// and posts `<P>Progressing` and `<P>CSIDriverOperatorDeploymentDegraded`.
    async fn deployment_step(
        &self,
        board: &mut StepBoard,
        driver: &Driver,
        desired: Result<operator_kit::desired::Desired, operator_kit::desired::BuildError>,
        storage: &DynamicObject,
    ) {
        let prefix = format!(
            "{}{}",
            driver.condition_prefix,
            roll_up::DEPLOYMENT_CONTROLLER_INFIX
        );
        let ns = self.opts.driver_operator_namespace();
        let name = driver.operator_deployment;
        let applied = match desired {
            Ok(d) => {
                steps::apply_workload(&self.applier, &self.metrics, board, storage, &d, ns, name)
                    .await
                    .map_err(StepError::from)
            }
            Err(e) => Err(e.into()),
        };
        let Some(applied) = board.post(&prefix, applied) else {
            return;
        };
        let live: Deployment = serde_json::to_value(&*applied.object)
            .ok()
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        roll_up::post_operator_deployment(board, driver, &prefix, &live);
    }

    /// Hosted: the HostedControlPlane of the control-plane namespace with the hosted
    /// environment, posting `HostedControlPlaneDegraded` (absent or malformed: the operator
    /// Deployments are placed without its node selector, labels and tolerations until it is
    /// corrected). `None` when standalone.
    fn hosted_control_plane(&self, board: &mut StepBoard) -> Option<operator_kit::hosted::Hosted> {
        let env = self.opts.hosted.as_ref()?;
        let mut hosted = env.clone();
        let read = operator_kit::hosted::read_control_plane(&self.cache, &self.opts.namespace);
        let result = match read {
            Ok(plane) => {
                hosted.control_plane = plane;
                Ok(())
            }
            Err(message) => {
                hosted.control_plane.namespace = self.opts.namespace.clone();
                Err(StepError::other(message))
            }
        };
        board.post(operator_kit::hosted::CONDITION_PREFIX, result);
        Some(hosted)
    }

    /// Hosted: library-go's DeploymentVersionController on each driver operator Deployment
    /// (one `DeploymentVersionControllerDegraded` for all, as the Go CSO names each of its
    /// controllers alike); see [`operator_kit::hosted::version_to_record`].
    async fn version_step(&self, board: &mut StepBoard) {
        let Some(version) = self.opts.env.get(OPERATOR_IMAGE_VERSION_ENV) else {
            return;
        };
        let ns = self.opts.driver_operator_namespace();
        let mut errors = Vec::new();
        for driver in &self.started {
            match operator_kit::hosted::record_version(
                self.clients.for_namespace(Some(ns)),
                &self.cache,
                ns,
                driver.operator_deployment,
                version,
            )
            .await
            {
                Ok(true) => self.metrics.write("Deployment", WriteVerb::Update),
                Ok(false) => {}
                Err(e) => errors.push(StepError::other(e)),
            }
        }
        let result = if errors.is_empty() {
            Ok(())
        } else {
            Err(StepError::All(errors))
        };
        board.post(hosted::DEPLOYMENT_VERSION_CONTROLLER, result);
    }

    /// The CA syncer (anchors §3.6): `openshift-config/cloud-provider-config` copied whole into
    /// the driver operators' namespace; the copy goes when the source goes.
    async fn ca_sync_step(&self, board: &mut StepBoard) {
        let result = self.sync_cloud_ca().await;
        if result.is_err() {
            self.metrics.error("apply");
        }
        board.post(RESOURCE_SYNC_PREFIX, result);
    }

    async fn sync_cloud_ca(&self) -> Result<(), StepError> {
        let source = self
            .cache
            .config_map(build::CONFIG_NAMESPACE, build::CLOUD_PROVIDER_CONFIG);
        match source {
            Some(source) => {
                let copy = build::cloud_ca_copy(&source, CSI_OPERATOR_NAMESPACE);
                let d =
                    operator_kit::desired::from_typed("cloud-provider-config (copy)", None, &copy)?;
                let applied = self.applier.apply(&d.resource, &d.object, None).await?;
                self.metrics.applied("ConfigMap", applied.action);
            }
            None => {
                self.applier
                    .delete(
                        &ar("v1", "ConfigMap"),
                        Some(CSI_OPERATOR_NAMESPACE),
                        build::CLOUD_PROVIDER_CONFIG,
                    )
                    .await?;
            }
        }
        Ok(())
    }

    /// Writes the `Storage/cluster` status; the object after the write (or as it was when
    /// nothing changed), `None` when the write failed.
    async fn flush_storage(
        &self,
        board: &StatusBoard,
        storage: &Arc<DynamicObject>,
    ) -> Option<Arc<DynamicObject>> {
        match self.storage_status.flush(board, storage).await {
            Ok(Flushed::Written(obj)) => {
                self.metrics.write("Storage", WriteVerb::Update);
                Some(obj)
            }
            Ok(Flushed::Unchanged) => Some(storage.clone()),
            Err(e) => {
                self.metrics.error("kube_api");
                warn!(error = %e, "cannot write the Storage status");
                None
            }
        }
    }

    /// `ClusterOperator/storage` from the `Storage/cluster` conditions: created when missing,
    /// its status written only when it changed (with an `OperatorStatusChanged` Event).
    async fn cluster_operator_step(
        &self,
        storage: &DynamicObject,
        management: &ManagementState,
        failed: bool,
        requeue: Option<Duration>,
    ) -> Outcome {
        let now = jiff::Timestamp::now();
        let storage_conditions = steps::previous_conditions(storage);
        let mut requeue = earliest(
            requeue,
            roll_up::inertia_wakeup(&storage_conditions, self.opts.degraded_inertia, now),
        );
        if !matches!(management, ManagementState::Unmanaged) {
            requeue = Some(requeue.map_or(RESYNC, |r| r.min(RESYNC)));
        }
        let co = match self.cluster_operator().await {
            Ok(co) => co,
            Err(e) => {
                warn!(error = %e, "cannot create ClusterOperator/{CLUSTER_OPERATOR_NAME}");
                return Outcome::Failed {
                    requeue_after: requeue,
                };
            }
        };
        let mut board = StatusBoard::new();
        board.omit_observed_generation();
        let wanted = roll_up::cluster_operator_conditions_with_inertia(
            management,
            &storage_conditions,
            self.opts.degraded_inertia,
            now,
        );
        for c in &wanted {
            board.set_condition(c.clone());
        }
        let existing_related: Vec<openshift_api::config::ObjectReference> = co
            .data
            .pointer("/status/relatedObjects")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        let related = if self.opts.hosted.is_some() {
            roll_up::hosted_related_objects(&self.started, &existing_related)
        } else {
            roll_up::related_objects(&self.started, &existing_related)
        };
        board.set_field(
            "relatedObjects",
            serde_json::to_value(&related).unwrap_or(Value::Null),
        );
        let versions = roll_up::versions(
            self.opts
                .env
                .get(OPERATOR_IMAGE_VERSION_ENV)
                .map(String::as_str),
        );
        board.set_field(
            "versions",
            serde_json::to_value(&versions).unwrap_or(Value::Null),
        );
        let before = steps::previous_conditions(&co);
        match self.co_status.flush(&board, &co).await {
            Ok(Flushed::Written(_)) => {
                self.metrics.write("ClusterOperator", WriteVerb::Update);
                if let Some(message) = roll_up::status_change_message(&before, &wanted) {
                    info!("{message}");
                    self.recorder
                        .record(EventType::Normal, "OperatorStatusChanged", &message)
                        .await;
                }
            }
            Ok(Flushed::Unchanged) => {}
            Err(e) => {
                self.metrics.error("kube_api");
                warn!(error = %e, "cannot write the ClusterOperator status");
                return Outcome::Failed {
                    requeue_after: requeue,
                };
            }
        }
        if failed {
            Outcome::Failed {
                requeue_after: requeue,
            }
        } else {
            Outcome::Done {
                requeue_after: requeue,
            }
        }
    }

    /// `ClusterOperator/storage` from the cache, created (empty) when missing.
    async fn cluster_operator(&self) -> Result<Arc<DynamicObject>, kube::Error> {
        let car = ar("config.openshift.io/v1", "ClusterOperator");
        if let Some(co) = self.cache.object(&car, None, CLUSTER_OPERATOR_NAME) {
            return Ok(co);
        }
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &car);
        let mut obj = DynamicObject::new(CLUSTER_OPERATOR_NAME, &car);
        obj.data = serde_json::json!({"spec": {}});
        match api.create(&PostParams::default(), &obj).await {
            Ok(created) => {
                self.metrics.write("ClusterOperator", WriteVerb::Create);
                Ok(Arc::new(created))
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                api.get(CLUSTER_OPERATOR_NAME).await.map(Arc::new)
            }
            Err(e) => Err(e),
        }
    }
}

/// The ClusterCSIDriver of a started driver could not be created.
#[derive(Debug, thiserror::Error)]
#[error("cannot create ClusterCSIDriver {name}: {source}")]
struct CreateError {
    name: &'static str,
    source: kube::Error,
}

fn earliest(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl operator_kit::process::Reconciler for Operator {
    fn reconcile(&mut self) -> impl std::future::Future<Output = Outcome> + Send {
        Operator::reconcile(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use operator_kit::conditions::types;

    /// Go's DefaultStorageClassController sets no reason on OpenStack (anchors §3.4).
    #[test]
    fn default_storage_class_conditions_carry_go_s_empty_reason() {
        let [available, progressing] = default_storage_class_conditions();
        assert_eq!(available.type_, "DefaultStorageClassControllerAvailable");
        assert_eq!(
            (available.status.as_str(), available.reason.as_str()),
            ("True", "")
        );
        assert_eq!(available.message, DEFAULT_STORAGE_CLASS_MESSAGE);
        assert_eq!(
            progressing.type_,
            "DefaultStorageClassControllerProgressing"
        );
        assert_eq!(
            (
                progressing.status.as_str(),
                progressing.reason.as_str(),
                progressing.message.as_str()
            ),
            ("False", "", "")
        );
    }

    /// The Go-only types removed from `Storage/cluster` are none of the types this CSO writes,
    /// which would otherwise be removed and written again on every reconcile.
    #[test]
    fn retired_storage_conditions_are_none_of_ours() {
        let mut ours: Vec<String> = default_storage_class_conditions()
            .into_iter()
            .map(|c| c.type_)
            .collect();
        ours.extend([
            conditions::degraded_type(STARTER_PREFIX),
            conditions::degraded_type(RESOURCE_SYNC_PREFIX),
            types::CONFIG_OBSERVATION_DEGRADED.to_owned(),
            roll_up::STORAGE_OPERATOR_UPGRADEABLE.to_owned(),
            roll_up::CSI_DRIVER_STARTER_AVAILABLE.to_owned(),
        ]);
        for driver in DRIVERS {
            let p = driver.condition_prefix;
            for suffix in ["Available", "Progressing", "Degraded", "Upgradeable"] {
                ours.push(roll_up::cr_condition_type(driver, suffix));
            }
            ours.push(conditions::progressing_type(p));
            ours.push(conditions::degraded_type(&format!("{p}CSIDriverOperator")));
            ours.push(conditions::degraded_type(&format!(
                "{p}CSIDriverOperatorStaticController"
            )));
            ours.push(conditions::degraded_type(&format!(
                "{p}{}",
                roll_up::DEPLOYMENT_CONTROLLER_INFIX
            )));
        }
        for t in RETIRED_STORAGE_CONDITIONS {
            assert!(!ours.iter().any(|o| o == t), "{t} is ours");
            assert!(
                t.starts_with("VolumeDataSourceValidator") || t.starts_with("SELinuxMount"),
                "{t}: only the Go CSO controllers this one does not run"
            );
        }
    }

    #[test]
    fn every_applied_object_is_known_before_start_so_it_can_be_watched() {
        for driver in DRIVERS {
            let objects = build::operator_objects(driver, &placeholder_inputs())
                .expect("placeholder inputs build");
            let statics = objects.static_desired(driver).expect("desired");
            assert!(statics.len() > 5, "{}", driver.name);
            let outside: Vec<_> = statics
                .iter()
                .filter(|d| {
                    d.object
                        .metadata
                        .namespace
                        .as_deref()
                        .is_some_and(|ns| ns != CSI_OPERATOR_NAMESPACE)
                })
                .collect();
            assert!(!outside.is_empty(), "{}", driver.name);
        }
    }
}
