//! The Manila CSI driver operator at runtime: watches, detection, one reconcile in named steps,
//! status.
//!
//! Until Manila has been found usable once, the reconcile writes one condition,
//! `CSIControllerDisabled=True / PreConditionNotSatisfied`, and nothing else: no object, no
//! Degraded condition, and the process stays up (anchors §5.1). After that every step runs on
//! every reconcile and the driver is never torn down. OpenStack is asked only when a check is
//! due (every `--share-type-refresh`, and at once when the credentials Secret changes); watch
//! events on StorageClasses or CSIDrivers cost no OpenStack request (users file §1.15), and
//! the Keystone token is reused until it expires.
//!
//! The reconcile never waits for OpenStack: a check runs in a background task (each call may
//! take up to two minutes on a slow Keystone) that nudges the loop when its answer is ready,
//! and the reconcile records it and goes on with the last known answer meanwhile, so status
//! writes and `Unmanaged` take effect at once. Until the very first check has answered
//! nothing is written. A check whose credentials were replaced while it ran is discarded.
//!
//! StorageClasses are created per share type, so their names are known only at run time: they
//! are read from a second, smaller watch cache rebuilt when the set of names changes. Changes to
//! them (an admin deleting one) are repaired at the next resync rather than at once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{ObjectReference, Secret};
use kube::Client;
use kube::api::DynamicObject;

use openshift_api::config::Infrastructure;
use openshift_api::operator::ClusterCSIDriver;
use operator_kit::apply::{Applier, ApplyError};
use operator_kit::cache::{Background, Cache, CacheBuilder, Lookup};
use operator_kit::conditions::{self, OperatorCondition, reasons};
use operator_kit::config_observer;
use operator_kit::events::EventRecorder;
use operator_kit::hooks::TopologyMode;

use operator_kit::kinds::known as ar;
use operator_kit::logging::LogControl;
use operator_kit::loglevel::LogLevel;
use operator_kit::metrics::{Metrics, WriteVerb};
use operator_kit::progressing;
use operator_kit::runtime::Outcome;
use operator_kit::status::{self, GenerationStatus, StatusBoard, StatusWriter};
use operator_kit::steps;
use tracing::{debug, info, warn};

use crate::build::{self, Desired, Facts, FsGroupPolicy};
use crate::detect::{self, Detection, Failure, FailureKind, Status};
use crate::{
    CLOUD_PROVIDER_CONFIGMAP, CONFIG_NAMESPACE, CONTROLLER_DEPLOYMENT_NAME, CSI_DRIVER_NAME,
    DRIVER_CREDENTIALS_SECRET, METRICS_SERVING_CERT_SECRET, NFS_DAEMONSET_NAME,
    NODE_DAEMONSET_NAME, OPERATOR_CREDENTIALS_SECRET, TRUSTED_CA_BUNDLE_CONFIGMAP, USER_AGENT,
};

/// Condition names, exactly as the Go operator's controllers are named (anchors §5.2).
pub const DISABLED_CONDITION: &str = "CSIControllerDisabled";
/// Reason of [`DISABLED_CONDITION`].
pub const DISABLED_REASON: &str = "PreConditionNotSatisfied";
const STARTER_PREFIX: &str = "StarterController";
/// Whether Manila answered the last check after the driver was installed.
pub const SERVICE_REACHABLE: &str = "ManilaServiceReachable";
/// Condition types OpenShift's Go Manila operators wrote and this one does not: the
/// conditional static-resources controller's, the static-resources controller's, and the
/// legacy standalone operator's Disabled and Degraded (anchors §5.1). Removed on every
/// reconcile, so after a takeover none of them stays on the CR as the Go operator left it
/// (a Degraded=True there would never clear, a Disabled=True would hide the driver).
const RETIRED_CONDITIONS: &[&str] = &[
    "ManilaDriverConditionalStaticResourcesControllerDegraded",
    "ManilaDriverStaticResourcesControllerDegraded",
    "ManilaControllerDisabled",
    "ManilaControllerDegraded",
];
const CONTROLLER_PREFIX: &str = "OpenStackManilaDriverControllerServiceController";
const NODE_PREFIX: &str = "OpenStackManilaDriverNodeServiceController";
const NFS_PREFIX: &str = "NFSDriverNodeServiceController";
const CP_STATIC_PREFIX: &str = "OpenStackManilaDriverControlPlaneStaticResourcesController";
const GUEST_STATIC_PREFIX: &str = "OpenStackManilaDriverGuestStaticResourcesController";
const RESOURCE_SYNC_PREFIX: &str = "ResourceSyncController";
const SNAPSHOT_CLASS_PREFIX: &str = "VolumeSnapshotClassController";
/// Ours: OpenShift applied the CSIDriver and the StorageClasses from the precondition and
/// reported their errors in `StarterControllerDegraded`.
const CSI_DRIVER_PREFIX: &str = "OpenStackManilaDriverCSIDriverController";
const STORAGE_CLASS_PREFIX: &str = "ManilaStorageClassController";
/// Ours: OpenShift's LoggingSyncer only emitted a warning Event for an unknown log level; here
/// the value and its fix are shown on the CR (named after that controller).
const LOGGING_PREFIX: &str = "LoggingSyncer";
/// The operand name in ManagementStateDegraded messages: the Go management-state controller's
/// name (`ControllerNamePrefix` + `CSIDriver`), as Cinder's is `OpenStackCinderCSIDriver`.
const OPERAND: &str = "OpenStackManilaCSIDriver";
/// HTTP timeout of the OpenStack calls (anchors §5.1: raised to 120 s for slow Keystones).
const OPENSTACK_TIMEOUT: Duration = Duration::from_secs(120);

/// How the operator is started.
#[derive(Debug, Clone)]
pub struct Options {
    /// Namespace of the operator: its lease and the `openstack-cloud-credentials` Secret.
    pub operator_namespace: String,
    /// Namespace of the driver's objects.
    pub namespace: String,
    /// Image env vars and `OPERATOR_IMAGE_VERSION`.
    pub images: BTreeMap<String, String>,
    /// How often share types are listed again.
    pub share_type_refresh: Duration,
    /// Cluster ID when there is no Infrastructure object (plain Kubernetes).
    pub cluster_id: Option<String>,
    /// The raw `CSI_FSGROUP_POLICY` value.
    pub fs_group_policy: Option<String>,
}

impl Options {
    /// Standalone defaults with these images.
    pub fn new(images: BTreeMap<String, String>) -> Self {
        Self {
            operator_namespace: crate::OPERATOR_NAMESPACE.into(),
            namespace: crate::DRIVER_NAMESPACE.into(),
            images,
            share_type_refresh: detect::DEFAULT_REFRESH,
            cluster_id: None,
            fs_group_policy: None,
        }
    }
}

/// What the operator watches: its CR, the cluster singletons, both of its namespaces, the
/// installer's cloud config namespace, and each cluster-scoped object it writes (by name).
pub fn watches(client: Client, opts: &Options) -> Result<CacheBuilder, build::BuildError> {
    let mut builder = CacheBuilder::new(
        client,
        [opts.operator_namespace.clone(), opts.namespace.clone()],
    )
    .cluster_object(
        &ar("operator.openshift.io/v1", "ClusterCSIDriver"),
        CSI_DRIVER_NAME,
    )
    .cluster_object(&ar("config.openshift.io/v1", "Infrastructure"), "cluster")
    .cluster_object(&ar("config.openshift.io/v1", "Proxy"), "cluster")
    .cluster_object(&ar("config.openshift.io/v1", "APIServer"), "cluster")
    .in_namespace(&ar("v1", "ConfigMap"), CONFIG_NAMESPACE)
    .cluster_object(
        &ar("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        crate::assets::VOLUME_SNAPSHOT_CLASS_CRD,
    )
    .cluster_object(
        &ar("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        crate::assets::SERVICE_MONITOR_CRD,
    );
    builder = builder.namespaced(&ar("v1", "ConfigMap"));
    // Secrets by name only, so the Role can name them: the operator never needs to see a
    // Secret it does not know (a namespace-wide watch would read every credential there).
    for (namespace, name) in secrets_read(opts) {
        builder = builder.namespaced_object(&ar("v1", "Secret"), namespace, name);
    }
    for kind in [("apps/v1", "Deployment"), ("apps/v1", "DaemonSet")] {
        builder = builder.in_namespace(&ar(kind.0, kind.1), &opts.namespace);
    }
    let facts = placeholder_facts(opts);
    let (objects, _) = build::everything(&facts, &[])?;
    for d in objects {
        if d.resource.kind == "Secret" {
            // Written Secrets are among `secrets_read`, watched by name above.
            continue;
        }
        builder = builder.object(&d.resource, &d.object);
    }
    Ok(builder)
}

/// Every Secret the operator reads, as (namespace, name): its credentials for the share-type
/// check, the driver's credentials and serving certificate (their hashes roll the pods), and
/// the `csi-manila-secrets` it writes. The Role in each namespace grants `get`, `list` and
/// `watch` on these names only (`assets/openstack-manila/roles.yaml` of the CSO).
pub fn secrets_read(opts: &Options) -> [(&str, &'static str); 4] {
    [
        (
            opts.operator_namespace.as_str(),
            OPERATOR_CREDENTIALS_SECRET,
        ),
        (opts.namespace.as_str(), DRIVER_CREDENTIALS_SECRET),
        (opts.namespace.as_str(), METRICS_SERVING_CERT_SECRET),
        (opts.namespace.as_str(), crate::CSI_SECRET),
    ]
}

/// Facts with every image set, for what does not depend on values (names, kinds).
fn placeholder_facts(opts: &Options) -> Facts {
    let mut images = opts.images.clone();
    for name in crate::assets::IMAGE_PLACEHOLDERS {
        images
            .entry(name.to_string())
            .or_insert_with(|| "placeholder".to_string());
    }
    Facts {
        namespace: opts.namespace.clone(),
        images,
        cluster_id: "placeholder".into(),
        ..Facts::default()
    }
}

/// The watch cache and apply engine of the current set of StorageClass names.
struct ClassCache {
    names: BTreeSet<String>,
    applier: Applier,
}

/// The object the operator's Events are about: its own Deployment in `operator_namespace`, as
/// library-go's recorder uses the controller reference of the current pod. So the Events live
/// in that namespace, which must-gather collects (a relatedObject of the ClusterOperator);
/// Events about the cluster-scoped ClusterCSIDriver would have to live in `default`, which it
/// does not collect.
pub fn events_about(operator_namespace: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("apps/v1".into()),
        kind: Some("Deployment".into()),
        namespace: Some(operator_namespace.to_string()),
        name: Some(crate::OPERATOR_DEPLOYMENT_NAME.into()),
        ..Default::default()
    }
}

/// A Manila check in the background: the share-type names, or why Manila cannot be used.
type Check = Background<Result<Vec<String>, Failure>>;

/// The state the operator keeps between reconciles.
pub struct Operator {
    client: Client,
    opts: Options,
    cache: Cache,
    applier: Applier,
    recorder: EventRecorder,
    classes: Option<ClassCache>,
    status: StatusWriter,
    metrics: Arc<Metrics>,
    log: LogControl,
    detection: Detection,
    openstack: Arc<openstack::Session>,
    /// The Manila check running in the background, with the fingerprint of the credentials
    /// it uses. Dropping it aborts the check.
    check: Option<(String, Check)>,
    operator_log_level: steps::OperatorLogLevel,
}

impl Operator {
    pub fn new(
        client: Client,
        opts: Options,
        cache: Cache,
        metrics: Arc<Metrics>,
        log: LogControl,
    ) -> Self {
        let involved = events_about(&opts.operator_namespace);
        let recorder = EventRecorder::new(
            client.clone(),
            involved,
            USER_AGENT,
            &steps::instance_name(USER_AGENT),
        );
        let applier = Applier::new(client.clone(), cache.clone(), recorder.clone());
        let status = StatusWriter::new(
            client.clone(),
            &ar("operator.openshift.io/v1", "ClusterCSIDriver"),
            None,
        );
        let detection = Detection::new(opts.share_type_refresh);
        Self {
            client,
            opts,
            cache,
            applier,
            recorder,
            classes: None,
            status,
            metrics,
            log,
            detection,
            openstack: Arc::new(openstack::Session::new()),
            check: None,
            operator_log_level: steps::OperatorLogLevel::default(),
        }
    }

    /// One reconcile of `manila.csi.openstack.org`.
    pub async fn reconcile(&mut self) -> Outcome {
        let started = Instant::now();
        let outcome = self.reconcile_inner().await;
        let ok = matches!(outcome, Outcome::Done { .. });
        self.metrics.reconciled(started.elapsed(), ok);
        outcome
    }

    async fn reconcile_inner(&mut self) -> Outcome {
        let (mut cr_obj, cr) = match steps::read_cluster_csi_driver(&self.cache, CSI_DRIVER_NAME) {
            Ok(Some(found)) => found,
            Ok(None) => {
                debug!(
                    "ClusterCSIDriver {CSI_DRIVER_NAME} does not exist; nothing to do until it is created"
                );
                return Outcome::Done {
                    requeue_after: None,
                };
            }
            Err(e) => {
                warn!(error = %e, "the ClusterCSIDriver cannot be read");
                self.metrics.error("config");
                return Outcome::Failed {
                    requeue_after: None,
                };
            }
        };
        self.operator_log_level
            .sync(&self.log, &steps::operator_log_level_of(&cr));
        let mut board = StatusBoard::new();
        for retired in RETIRED_CONDITIONS {
            board.remove_condition(retired);
        }
        match steps::management_state(&mut board, &cr.spec.operator.management_state(), OPERAND) {
            steps::Management::Reconcile => {}
            // Unmanaged hands the driver to the administrator: no writes at all.
            steps::Management::NoWrites => {
                return Outcome::Done {
                    requeue_after: None,
                };
            }
            steps::Management::StatusOnly => return self.flush(&board, &cr_obj, false, None).await,
        }
        board.set_condition(log_level_condition(&cr));
        board.set_condition(self.insecure_connection());

        let running = self.detect();
        let requeue = self.detection.requeue_after(Instant::now(), running);
        let (share_types, gone, error) = match self.detection.status() {
            Status::Unknown => {
                // The first check runs and nudges when it has answered. Nothing is known
                // yet that is worth a write: not Disabled, not Degraded.
                debug!("waiting for the first answer of OpenStack about Manila");
                return Outcome::Done {
                    requeue_after: requeue,
                };
            }
            Status::Disabled(failure) => {
                // Nothing deployed, not Degraded: CSO reports the driver as disabled.
                board.set_condition(OperatorCondition::new(
                    DISABLED_CONDITION,
                    conditions::TRUE,
                    DISABLED_REASON,
                    format!("Pre-condition not satisfied: {}", failure.message),
                ));
                return self.flush(&board, &cr_obj, false, requeue).await;
            }
            Status::Enabled {
                share_types,
                gone,
                error,
            } => (share_types, gone, error),
        };
        board.remove_condition(DISABLED_CONDITION);
        for c in self.starter_conditions(error.as_ref()) {
            board.set_condition(c);
        }

        let mut failed = false;
        let mut facts = self.base_facts(&cr);
        match config_observer::observe(&self.client, &self.cache, &cr_obj).await {
            Ok(observed) => {
                facts.proxy = observed.proxy;
                facts.serving = observed.serving;
                // The status write that ends this reconcile must build on the CR just written,
                // or it would meet a 409 and cost a GET and a retry.
                if let Some(written) = observed.written {
                    self.metrics.write("ClusterCSIDriver", WriteVerb::Update);
                    cr_obj = Arc::new(written);
                }
                board.set_condition(conditions::degraded(
                    conditions::types::CONFIG_OBSERVATION_DEGRADED.trim_end_matches("Degraded"),
                    None,
                ));
            }
            Err(message) => {
                failed = true;
                board.set_condition(OperatorCondition::new(
                    conditions::types::CONFIG_OBSERVATION_DEGRADED,
                    conditions::TRUE,
                    reasons::ERROR,
                    message,
                ));
            }
        }

        // The Namespace is created when missing and otherwise left to its owner (CSO on
        // OpenShift): the apply engine cannot update a Namespace read from the watch cache
        // yet (the cached copy has no kind; reported to operator-kit).
        let ns_exists = self
            .cache
            .get_kind("v1", "Namespace", None, &self.opts.namespace)
            .is_some();
        let cp = build::control_plane_static(&facts).map(|objects| {
            objects
                .into_iter()
                .filter(|d| !(ns_exists && d.resource.kind == "Namespace"))
                .collect()
        });
        failed |= steps::apply_group(
            &self.applier,
            &self.metrics,
            &mut board,
            CP_STATIC_PREFIX,
            cp,
        )
        .await;
        failed |= self.resource_sync_step(&mut board).await;
        let guest = build::guest_static(&facts);
        failed |= steps::apply_group(
            &self.applier,
            &self.metrics,
            &mut board,
            GUEST_STATIC_PREFIX,
            guest,
        )
        .await;
        failed |= self.csi_driver_step(&mut board, &mut facts).await;
        failed |= self.controller_step(&mut board, &facts, &cr_obj).await;
        failed |= self
            .daemonset_step(
                &mut board,
                NODE_PREFIX,
                NODE_DAEMONSET_NAME,
                build::node_desired(&facts),
                &cr_obj,
            )
            .await;
        failed |= self
            .daemonset_step(
                &mut board,
                NFS_PREFIX,
                NFS_DAEMONSET_NAME,
                build::nfs_desired(&facts),
                &cr_obj,
            )
            .await;
        failed |= self
            .storage_class_step(&mut board, &share_types, &gone)
            .await;
        failed |= self.snapshot_class_step(&mut board, &facts).await;
        self.flush(&board, &cr_obj, failed, requeue).await
    }

    /// Whether Manila answered the last check, once the driver is installed:
    /// `ManilaServiceReachable` True, or False with what failed. Deliberately not a `*Degraded`
    /// or `*Available` type: the Cluster Storage Operator unions those into
    /// `ClusterOperator/storage`, and a cloud-side Manila problem must not degrade the whole
    /// cluster (users file §3.3). `StarterControllerDegraded` stays False.
    fn starter_conditions(&self, error: Option<&Failure>) -> [OperatorCondition; 2] {
        let reachable = match error {
            None => OperatorCondition::new(
                SERVICE_REACHABLE,
                conditions::TRUE,
                reasons::AS_EXPECTED,
                "Manila answered the last check",
            ),
            Some(f) => OperatorCondition::new(
                SERVICE_REACHABLE,
                conditions::FALSE,
                "ManilaUnavailable",
                format!(
                    "Manila cannot be used now: {}. The driver stays installed so that existing shares can still be mounted and unmounted, and the StorageClasses of the last successful listing are kept; the check is repeated every {} and when the credentials change",
                    f.message,
                    detect::go_duration(self.detection.refresh())
                ),
            ),
        };
        [conditions::degraded(STARTER_PREFIX, None), reachable]
    }

    /// Records the answer of a finished check and starts a check in the background when one
    /// is due and none runs for the current credentials; never waits for OpenStack. Returns
    /// whether a check is running now.
    fn detect(&mut self) -> bool {
        let ns = self.opts.operator_namespace.clone();
        let credentials = self.cache.secret(&ns, OPERATOR_CREDENTIALS_SECRET);
        let ca = self.ca_bundle(credentials.as_ref(), &ns);
        let fp = fingerprint(credentials.as_ref(), ca.as_deref());
        let now = Instant::now();
        if let Some((used, check)) = self.check.as_mut()
            && let Some(answer) = check.try_take()
        {
            let used = std::mem::take(used);
            self.check = None;
            let result = answer.unwrap_or_else(|stopped| {
                Err(Failure::new(
                    FailureKind::Other,
                    format!("the check of Manila failed inside the operator ({stopped}); see the operator log"),
                ))
            });
            let summary = match &result {
                Ok(types) if !types.is_empty() => Ok(types.len()),
                Ok(_) => Err(Failure::no_share_types().message),
                Err(f) => Err(f.message.clone()),
            };
            if self.detection.finish(now, &used, &fp, result) {
                match summary {
                    Ok(count) => info!(count, "listed Manila share types"),
                    Err(reason) => {
                        self.metrics.error("openstack");
                        info!(%reason, "Manila is not usable");
                    }
                }
            } else {
                debug!("dropped the answer of a Manila check made with credentials replaced since");
            }
        }
        if self.check.as_ref().is_some_and(|(used, _)| *used != fp) {
            info!(
                "the OpenStack credentials changed during a Manila check; checking again with the new ones"
            );
            self.check = None;
        }
        if self.check.is_none() && self.detection.is_due(now, &fp) {
            let work = list_share_types(self.openstack.clone(), credentials, ca, ns);
            self.check = Some((fp, self.cache.nudger().spawn(work)));
        }
        self.check.is_some()
    }

    /// The cloud's CA: the credentials Secret's `cacert`, else `ca-bundle.pem` of the
    /// CSO-synced cloud provider config in the operator namespace.
    fn ca_bundle(&self, credentials: Option<&Secret>, ns: &str) -> Option<Vec<u8>> {
        credentials
            .and_then(|s| s.data.as_ref())
            .and_then(|d| d.get("cacert"))
            .map(|b| b.0.clone())
            .filter(|b| !b.is_empty())
            .or_else(|| {
                self.cache
                    .config_map(ns, CLOUD_PROVIDER_CONFIGMAP)
                    .and_then(|cm| cm.data)
                    .and_then(|d| d.get("ca-bundle.pem").cloned())
                    .filter(|s| !s.is_empty())
                    .map(String::into_bytes)
            })
    }

    /// `InsecureOpenStackConnection` over both clouds.yaml files this operator deals with: its
    /// own (for the share-type listing) and the driver's.
    fn insecure_connection(&self) -> OperatorCondition {
        let operator = self
            .cache
            .secret(&self.opts.operator_namespace, OPERATOR_CREDENTIALS_SECRET);
        let driver = self
            .cache
            .secret(&self.opts.namespace, DRIVER_CREDENTIALS_SECRET);
        let at_operator = format!(
            "{}/{OPERATOR_CREDENTIALS_SECRET}",
            self.opts.operator_namespace
        );
        let at_driver = format!("{}/{DRIVER_CREDENTIALS_SECRET}", self.opts.namespace);
        conditions::insecure_connection(
            &[
                (&at_operator, clouds_yaml_of(operator.as_ref())),
                (&at_driver, clouds_yaml_of(driver.as_ref())),
            ],
            |b| openstack::insecure_settings_in(b, openstack::DEFAULT_CLOUD),
        )
    }

    fn base_facts(&self, cr: &ClusterCSIDriver) -> Facts {
        let infra: Option<Infrastructure> =
            self.cache
                .typed("config.openshift.io/v1", "Infrastructure", None, "cluster");
        let topology = infra
            .as_ref()
            .map(|i| TopologyMode::parse(i.control_plane_topology().as_str()))
            .unwrap_or_default();
        let cluster_id = infra
            .as_ref()
            .and_then(|i| i.infrastructure_name().map(str::to_string))
            .or_else(|| self.opts.cluster_id.clone())
            .unwrap_or_default();
        let raw_level = cr
            .spec
            .operator
            .log_level
            .as_ref()
            .map(|l| l.as_str().to_string())
            .unwrap_or_default();
        let ns = self.opts.namespace.as_str();
        Facts {
            namespace: self.opts.namespace.clone(),
            images: self.opts.images.clone(),
            cluster_id,
            topology,
            log_level: LogLevel::parse(&raw_level).level,
            trusted_ca_bundle: self.cache.config_map(ns, TRUSTED_CA_BUNDLE_CONFIGMAP),
            driver_credentials: self.cache.secret(ns, DRIVER_CREDENTIALS_SECRET),
            metrics_cert: self.cache.secret(ns, METRICS_SERVING_CERT_SECRET),
            ..Facts::default()
        }
    }

    fn count_write(&self, kind: &str, applied: &operator_kit::apply::Applied) {
        if applied.wrote() {
            let verb = match applied.action {
                operator_kit::apply::Action::Created => WriteVerb::Create,
                _ => WriteVerb::Update,
            };
            self.metrics.write(kind, verb);
        }
    }

    /// Applies one object with `applier`; returns its live generation.
    async fn apply_with(
        &self,
        applier: &Applier,
        d: &Desired,
        expected_generation: Option<i64>,
    ) -> Result<Option<i64>, String> {
        match applier
            .apply(&d.resource, &d.object, expected_generation)
            .await
        {
            Ok(applied) => {
                self.count_write(&d.resource.kind, &applied);
                Ok(applied.generation)
            }
            Err(e) => {
                self.metrics.error("apply");
                Err(e.to_string())
            }
        }
    }

    /// Copies `openshift-config/cloud-provider-config` into the driver namespace for the pods'
    /// `cacert` volume; deletes the copy when the source is gone (anchors §5.2, §3.6).
    async fn resource_sync_step(&self, board: &mut StatusBoard) -> bool {
        let ns = self.opts.namespace.as_str();
        let result = match self
            .cache
            .config_map(CONFIG_NAMESPACE, CLOUD_PROVIDER_CONFIGMAP)
        {
            Some(source) => match build::cloud_provider_config_copy(ns, &source) {
                Ok(d) => self.apply_with(&self.applier, &d, None).await.map(|_| ()),
                Err(e) => Err(e.to_string()),
            },
            None => self
                .applier
                .delete(&ar("v1", "ConfigMap"), Some(ns), CLOUD_PROVIDER_CONFIGMAP)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
        };
        self.post(board, RESOURCE_SYNC_PREFIX, result)
    }

    fn post(&self, board: &mut StatusBoard, prefix: &str, result: Result<(), String>) -> bool {
        match result {
            Ok(()) => {
                board.set_condition(conditions::degraded(prefix, None));
                false
            }
            Err(e) => {
                board.set_condition(conditions::degraded(prefix, Some(&e)));
                true
            }
        }
    }

    /// The one writer of the CSIDriver (anchors §8.3 fixed). An invalid `CSI_FSGROUP_POLICY`
    /// is reported and leaves a live CSIDriver as it is.
    async fn csi_driver_step(&self, board: &mut StatusBoard, facts: &mut Facts) -> bool {
        let policy = FsGroupPolicy::parse(self.opts.fs_group_policy.as_deref());
        facts.fs_group_policy = policy.clone().unwrap_or_default();
        let desired = match build::csi_driver(facts) {
            Ok(d) => d,
            Err(e) => return self.post(board, CSI_DRIVER_PREFIX, Err(e.to_string())),
        };
        let exists = self
            .cache
            .get_kind("storage.k8s.io/v1", "CSIDriver", None, CSI_DRIVER_NAME)
            .is_some();
        let result = match &policy {
            Err(_) if exists => Ok(()),
            _ => self
                .apply_with(&self.applier, &desired, None)
                .await
                .map(|_| ()),
        };
        self.post(
            board,
            CSI_DRIVER_PREFIX,
            result.and(policy.map(|_| ()).map_err(|e| e.to_string())),
        )
    }

    async fn controller_step(
        &self,
        board: &mut StatusBoard,
        facts: &Facts,
        cr: &DynamicObject,
    ) -> bool {
        let ns = self.opts.namespace.as_str();
        let desired = match build::controller_desired(facts) {
            Ok(d) => d,
            Err(e) => return self.post(board, CONTROLLER_PREFIX, Err(e.to_string())),
        };
        let expected =
            status::last_generation(cr, "apps", "deployments", ns, CONTROLLER_DEPLOYMENT_NAME);
        match self.apply_with(&self.applier, &desired, expected).await {
            Ok(generation) => {
                board.record_generation(GenerationStatus {
                    group: "apps".into(),
                    resource: "deployments".into(),
                    namespace: ns.into(),
                    name: CONTROLLER_DEPLOYMENT_NAME.into(),
                    last_generation: generation.unwrap_or_default(),
                    hash: String::new(),
                });
                let live: Option<Deployment> = self.cache.typed(
                    "apps/v1",
                    "Deployment",
                    Some(ns),
                    CONTROLLER_DEPLOYMENT_NAME,
                );
                let previous = steps::previous_conditions(cr);
                let now = jiff::Timestamp::now();
                match live.map(|d| {
                    progressing::deployment_conditions(CONTROLLER_PREFIX, &d, &previous, now)
                }) {
                    Some(Ok(c)) => {
                        for cond in c.into_vec() {
                            board.set_condition(cond);
                        }
                        self.post(board, CONTROLLER_PREFIX, Ok(()))
                    }
                    Some(Err(_)) => self.post(
                        board,
                        CONTROLLER_PREFIX,
                        Err("Deployment was progressing too long".into()),
                    ),
                    None => self.post(board, CONTROLLER_PREFIX, Ok(())),
                }
            }
            Err(e) => self.post(board, CONTROLLER_PREFIX, Err(e)),
        }
    }

    async fn daemonset_step(
        &self,
        board: &mut StatusBoard,
        prefix: &str,
        name: &str,
        desired: Result<Desired, build::BuildError>,
        cr: &DynamicObject,
    ) -> bool {
        let ns = self.opts.namespace.as_str();
        let mut desired = match desired {
            Ok(d) => d,
            Err(e) => return self.post(board, prefix, Err(e.to_string())),
        };
        let live: Option<DaemonSet> = self.cache.typed("apps/v1", "DaemonSet", Some(ns), name);
        if let Some(stable) = progressing::stable_generation_annotation(live.as_ref()) {
            desired
                .object
                .metadata
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .insert("storage.openshift.io/stable-generation".into(), stable);
        }
        let expected = status::last_generation(cr, "apps", "daemonsets", ns, name);
        match self.apply_with(&self.applier, &desired, expected).await {
            Ok(generation) => {
                board.record_generation(GenerationStatus {
                    group: "apps".into(),
                    resource: "daemonsets".into(),
                    namespace: ns.into(),
                    name: name.into(),
                    last_generation: generation.unwrap_or_default(),
                    hash: String::new(),
                });
                if let Some(ds) =
                    self.cache
                        .typed::<DaemonSet>("apps/v1", "DaemonSet", Some(ns), name)
                {
                    for cond in progressing::daemonset_conditions(prefix, &ds).into_vec() {
                        board.set_condition(cond);
                    }
                }
                self.post(board, prefix, Ok(()))
            }
            Err(e) => self.post(board, prefix, Err(e)),
        }
    }

    /// One StorageClass per share type. Classes of share types that disappeared are kept
    /// (bound volumes need them) and named in the condition message, as are share types that
    /// get no class because of a name collision.
    async fn storage_class_step(
        &mut self,
        board: &mut StatusBoard,
        share_types: &[String],
        gone: &[String],
    ) -> bool {
        let ns = self.opts.namespace.clone();
        let (names, name_errors) =
            crate::names::storage_class_names(share_types.iter().map(String::as_str));
        let wanted: BTreeSet<String> = names.keys().cloned().collect();
        if self.classes.as_ref().is_none_or(|c| c.names != wanted) {
            self.classes = Some(self.class_cache(wanted));
        }
        let mut errors = Vec::new();
        if let Some(classes) = &self.classes {
            for (name, share_type) in &names {
                let result = match build::storage_class(&ns, name, share_type) {
                    Ok(d) => self
                        .apply_with(&classes.applier, &d, None)
                        .await
                        .map(|_| ()),
                    Err(e) => Err(e.to_string()),
                };
                if let Err(e) = result {
                    errors.push(format!(
                        "StorageClass {name} for share type {share_type:?}: {e}"
                    ));
                }
            }
        }
        let mut notes: Vec<String> = name_errors.iter().map(|(_, e)| e.to_string()).collect();
        if !gone.is_empty() {
            notes.push(format!(
                "share types no longer offered by Manila: {}; their StorageClasses are kept because bound volumes need them (delete them yourself when no PersistentVolume uses them)",
                gone.join(", ")
            ));
        }
        if errors.is_empty() {
            let mut c = conditions::degraded(STORAGE_CLASS_PREFIX, None);
            c.message = notes.join("\n");
            board.set_condition(c);
            false
        } else {
            errors.extend(notes);
            board.set_condition(conditions::degraded(
                STORAGE_CLASS_PREFIX,
                Some(&errors.join("\n")),
            ));
            true
        }
    }

    fn class_cache(&self, names: BTreeSet<String>) -> ClassCache {
        let sc = ar("storage.k8s.io/v1", "StorageClass");
        let mut builder = CacheBuilder::new(self.client.clone(), Vec::<String>::new());
        for name in &names {
            builder = builder.cluster_object(&sc, name);
        }
        let cache = builder.start();
        ClassCache {
            names,
            applier: Applier::new(self.client.clone(), cache, self.recorder.clone()),
        }
    }

    /// Waits for the snapshot CRD rather than failing.
    async fn snapshot_class_step(&self, board: &mut StatusBoard, facts: &Facts) -> bool {
        let crd = ar("apiextensions.k8s.io/v1", "CustomResourceDefinition");
        let served = matches!(
            self.cache
                .lookup(&crd, None, crate::assets::VOLUME_SNAPSHOT_CLASS_CRD),
            Lookup::Found(_)
        );
        if !served {
            return self.post(board, SNAPSHOT_CLASS_PREFIX, Ok(()));
        }
        let result = match build::volume_snapshot_class(facts) {
            Ok(d) => match self.applier.apply(&d.resource, &d.object, None).await {
                Ok(applied) => {
                    self.count_write("VolumeSnapshotClass", &applied);
                    Ok(())
                }
                // The CRD was just created and its watch has not caught up: next time.
                Err(ApplyError::KindNotServed { .. }) => Ok(()),
                Err(e) => Err(e.to_string()),
            },
            Err(e) => Err(e.to_string()),
        };
        self.post(board, SNAPSHOT_CLASS_PREFIX, result)
    }

    async fn flush(
        &self,
        board: &StatusBoard,
        cr: &DynamicObject,
        failed: bool,
        requeue_after: Option<Duration>,
    ) -> Outcome {
        match self.status.flush(board, cr).await {
            Ok(_) if !failed => Outcome::Done { requeue_after },
            Ok(_) => Outcome::Failed { requeue_after },
            Err(e) => {
                self.metrics.error("kube_api");
                warn!(error = %e, "cannot write the ClusterCSIDriver status");
                Outcome::Failed { requeue_after }
            }
        }
    }
}

/// `LoggingSyncerDegraded`: True when `spec.operatorLogLevel` or `spec.logLevel` holds a value
/// the operator does not know (possible only with a CRD that lacks the enum). Both fall back
/// to `Normal`, so nothing breaks, but a typo must not pass silently.
pub fn log_level_condition(cr: &ClusterCSIDriver) -> OperatorCondition {
    let fields = [
        (
            "spec.operatorLogLevel",
            "the operator",
            &cr.spec.operator.operator_log_level,
        ),
        ("spec.logLevel", "the driver", &cr.spec.operator.log_level),
    ];
    let problems: Vec<String> = fields
        .iter()
        .filter_map(|(field, who, value)| {
            let raw = value.as_ref().map(|l| l.as_str().to_string())?;
            LogLevel::parse(&raw).unknown.map(|bad| {
                format!(
                    "{field} {bad:?} is not one of Normal, Debug, Trace, TraceAll; {who} logs at Normal until it is corrected"
                )
            })
        })
        .collect();
    if problems.is_empty() {
        conditions::degraded(LOGGING_PREFIX, None)
    } else {
        OperatorCondition::new(
            conditions::degraded_type(LOGGING_PREFIX),
            conditions::TRUE,
            "InvalidLogLevel",
            problems.join("; "),
        )
    }
}

/// The `clouds.yaml` bytes of a credentials Secret.
fn clouds_yaml_of(secret: Option<&Secret>) -> Option<&[u8]> {
    Some(&secret?.data.as_ref()?.get("clouds.yaml")?.0)
}

/// A digest of the credentials and CA: when it changes, Manila is checked again at once.
fn fingerprint(credentials: Option<&Secret>, ca: Option<&[u8]>) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    match credentials.and_then(|s| s.data.as_ref()) {
        Some(data) => {
            for (k, v) in data {
                ctx.update(k.as_bytes());
                ctx.update(&[0]);
                ctx.update(&v.0);
                ctx.update(&[0]);
            }
        }
        None => ctx.update(b"\x01absent"),
    }
    ctx.update(ca.unwrap_or_default());
    ctx.finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One check of Manila, run in a background task: parse clouds.yaml, authenticate (or reuse
/// the session's token), find `sharev2` in the catalog and list the share types.
async fn list_share_types(
    session: Arc<openstack::Session>,
    credentials: Option<Secret>,
    ca: Option<Vec<u8>>,
    ns: String,
) -> Result<Vec<String>, Failure> {
    let secret_name = format!("{ns}/{OPERATOR_CREDENTIALS_SECRET}");
    let Some(secret) = credentials else {
        return Err(Failure::invalid_credentials(
            &secret_name,
            "the Secret does not exist",
        ));
    };
    let clouds = secret
        .data
        .as_ref()
        .and_then(|d| d.get("clouds.yaml"))
        .ok_or_else(|| Failure::invalid_credentials(&secret_name, "it has no clouds.yaml key"))?;
    let text = std::str::from_utf8(&clouds.0)
        .map_err(|_| Failure::invalid_credentials(&secret_name, "clouds.yaml is not UTF-8 text"))?;
    let cloud = openstack::CloudConfig::from_clouds_yaml(text, openstack::DEFAULT_CLOUD)
        .map_err(|e| Failure::invalid_credentials(&secret_name, e))?;
    let options = openstack::ClientOptions {
        ca_bundle: ca,
        request_timeout: OPENSTACK_TIMEOUT,
        user_agent: USER_AGENT.to_string(),
        ..openstack::ClientOptions::default()
    };
    let client = session
        .client(cloud, &options)
        .map_err(|e| Failure::from_openstack(&e))?;
    if !client
        .has_service(openstack::Service::SharedFileSystem)
        .await
        .map_err(|e| Failure::from_openstack(&e))?
    {
        return Err(Failure::no_manila_service());
    }
    let types = client
        .share_types()
        .await
        .map_err(|e| Failure::from_openstack(&e))?;
    Ok(types.into_iter().map(|t| t.name).collect())
}

/// Reads the image env vars (and OPERATOR_IMAGE_VERSION) from the process environment.
pub fn images_from_env() -> BTreeMap<String, String> {
    crate::assets::IMAGE_PLACEHOLDERS
        .iter()
        .copied()
        .chain(["OPERATOR_IMAGE_VERSION"])
        .filter_map(|name| std::env::var(name).ok().map(|v| (name.to_string(), v)))
        .collect()
}

impl operator_kit::process::Reconciler for Operator {
    fn reconcile(&mut self) -> impl std::future::Future<Output = Outcome> + Send {
        Operator::reconcile(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    /// Every Secret the operator writes is one it watches by name (else the apply engine
    /// would find it uncached, and the Role's named `get` would not cover it).
    #[test]
    fn every_written_secret_is_watched_by_name() {
        let opts = Options::new(BTreeMap::new());
        let (objects, _) = build::everything(&placeholder_facts(&opts), &[]).unwrap();
        let read = secrets_read(&opts);
        let written: Vec<_> = objects
            .iter()
            .filter(|d| d.resource.kind == "Secret")
            .map(|d| {
                (
                    d.object.metadata.namespace.clone().unwrap_or_default(),
                    d.object.metadata.name.clone().unwrap_or_default(),
                )
            })
            .collect();
        assert!(!written.is_empty());
        for (ns, name) in written {
            assert!(
                read.iter().any(|(n, m)| *n == ns && *m == name),
                "{ns}/{name} is written but not watched by name"
            );
        }
    }

    /// `ManagementStateDegraded` names the operator as the Go controller does.
    #[test]
    fn management_state_message_names_openstack_manila_csi_driver() {
        let mut board = StatusBoard::new();
        steps::management_state(
            &mut board,
            &openshift_api::common::ManagementState::Removed,
            OPERAND,
        );
        let c = board
            .conditions()
            .find(|c| c.type_ == "ManagementStateDegraded")
            .expect("posted");
        assert_eq!(
            c.message,
            "Removed is not supported for OpenStackManilaCSIDriver operator"
        );
    }

    #[test]
    fn unknown_log_levels_are_a_readable_condition() {
        let cr = |spec: serde_json::Value| -> ClusterCSIDriver {
            openshift_api::decode::from_value(serde_json::json!({
                "apiVersion": "operator.openshift.io/v1",
                "kind": "ClusterCSIDriver",
                "metadata": {"name": CSI_DRIVER_NAME},
                "spec": spec,
            }))
            .expect("decodes")
        };
        let ok = log_level_condition(&cr(serde_json::json!({
            "managementState": "Managed", "logLevel": "Debug", "operatorLogLevel": ""})));
        assert_eq!(ok.type_, "LoggingSyncerDegraded");
        assert_eq!(ok.status, "False");
        let bad = log_level_condition(&cr(serde_json::json!({
            "managementState": "Managed", "logLevel": "Loud", "operatorLogLevel": "Chatty"})));
        assert_eq!(bad.status, "True");
        assert_eq!(bad.reason, "InvalidLogLevel");
        for text in [
            "spec.operatorLogLevel \"Chatty\"",
            "spec.logLevel \"Loud\"",
            "Normal, Debug, Trace, TraceAll",
        ] {
            assert!(bad.message.contains(text), "{}", bad.message);
        }
    }

    #[test]
    fn fingerprint_changes_with_credentials_and_ca() {
        let s = |v: &str| Secret {
            data: Some(BTreeMap::from([(
                "clouds.yaml".to_string(),
                ByteString(v.as_bytes().to_vec()),
            )])),
            ..Default::default()
        };
        let a = fingerprint(Some(&s("a")), None);
        assert_eq!(a, fingerprint(Some(&s("a")), None));
        assert_ne!(a, fingerprint(Some(&s("b")), None));
        assert_ne!(a, fingerprint(Some(&s("a")), Some(b"ca")));
        assert_ne!(fingerprint(None, None), fingerprint(Some(&s("")), None));
    }
}
