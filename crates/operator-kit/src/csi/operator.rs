//! [`CsiOperator`]: the reconcile skeleton around a [`Driver`], and the [`Kit`] its steps use.

use crate::spec::DriverSpec;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use openshift_api::config::Infrastructure;
use tracing::{info, warn};

use super::{BaseFacts, Driver, Facts, Flow, Pass, StepBoard, StepError, log_level_condition};

/// Condition prefix of the metrics serving certificate step (plain Kubernetes only).
pub const METRICS_CERT_PREFIX: &str = "MetricsServingCertController";
/// Condition prefix of the extra StorageClasses of the driver settings.
pub const EXTRA_CLASSES_PREFIX: &str = "ExtraStorageClassController";
use crate::apply::{Applied, Applier, ApplyError};
use crate::cache::Cache;
use crate::clusters::Clients;
use crate::conditions::{self, OperatorCondition};
use crate::config_observer;
use crate::config_observer::CONFIG_OBSERVATION_PREFIX;
use crate::desired::Desired;
use crate::events::EventRecorder;
use crate::hooks::TopologyMode;
use crate::kinds::known as ar;
use crate::logging::LogControl;
use crate::loglevel::LogLevel;
use crate::metrics::{Metrics, WriteVerb};
use crate::runtime::Outcome;
use crate::settings::{self, DriverSettings};
use crate::status::StatusWriter;
use crate::steps::{self, Management};

/// What a driver's steps work with: the client, the watch cache, the apply engine (whose
/// writes become Events), the metrics, and the driver namespace.
pub struct Kit {
    /// The guest cluster's client (the only cluster when standalone): the CR, the cluster
    /// singletons and the node side are read and written with it.
    pub client: Client,
    /// Every cluster the operator writes to; [`Kit::apply`] routes by namespace.
    pub clients: Clients,
    pub cache: Cache,
    pub applier: Applier,
    pub recorder: EventRecorder,
    pub metrics: Arc<Metrics>,
    /// The namespace of the driver's objects.
    pub namespace: String,
    /// The namespace of the guest-side objects (equal to `namespace` when standalone).
    pub node_namespace: String,
    /// The node DaemonSets' last generations that finished rolling out.
    pub(super) stable_generations: super::workloads::StableGenerations,
}

impl Kit {
    /// Whether the cluster is plain Kubernetes: no `Infrastructure/cluster` in the cache (as
    /// [`BaseFacts::kubernetes`](super::BaseFacts::kubernetes) is decided).
    pub fn on_kubernetes(&self) -> bool {
        self.cache.get::<Infrastructure>(None, "cluster").is_none()
    }

    /// Applies `d` with the kit's apply engine; see [`Kit::apply_with`].
    pub async fn apply(
        &self,
        d: &Desired,
        expected_generation: Option<i64>,
    ) -> Result<Applied, ApplyError> {
        self.apply_with(&self.applier, d, expected_generation).await
    }

    /// Applies `d` with `applier` and counts what the engine did (a re-creation is a delete
    /// and a create) or the error (a kind whose CRD is not served is not counted).
    pub async fn apply_with(
        &self,
        applier: &Applier,
        d: &Desired,
        expected_generation: Option<i64>,
    ) -> Result<Applied, ApplyError> {
        match applier
            .apply(&d.resource, &d.object, expected_generation)
            .await
        {
            Ok(applied) => {
                self.metrics.applied(&d.resource.kind, applied.action);
                Ok(applied)
            }
            Err(e) => {
                if !matches!(e, ApplyError::KindNotServed { .. }) {
                    self.metrics.error("apply");
                }
                Err(e)
            }
        }
    }
}

/// How a driver operator is started.
pub struct Settings {
    /// The namespace of the driver's objects (the control-plane namespace when hosted).
    pub namespace: String,
    /// The namespace of the guest-side objects (`${NODE_NAMESPACE}`): `namespace` when
    /// standalone.
    pub node_namespace: String,
    /// What the operator's Events are about ([`super::events_about`]).
    pub events_about: ObjectReference,
    /// The operator's user agent (Events' reporting component).
    pub user_agent: &'static str,
    /// Image env vars and `OPERATOR_IMAGE_VERSION`.
    pub images: BTreeMap<String, String>,
    /// Cluster ID when there is no Infrastructure object (plain Kubernetes).
    pub cluster_id: Option<String>,
    /// Take the metrics serving certificates from cert-manager while its CRD is served (plain
    /// Kubernetes only; the caller registered its watches with [`crate::cert_manager::register`]).
    pub cert_manager: Option<crate::cert_manager::CertManager>,
    /// What the management cluster's environment gives a hosted control plane (`RUN_AS_USER`,
    /// its proxy); read only when the clients are hosted ([`crate::hosted::Hosted::from_env`]).
    pub hosted_env: crate::hosted::Hosted,
}

/// One object of the driver settings that could not be applied or removed.
#[derive(Debug, thiserror::Error)]
pub enum SettingsFailure {
    #[error(
        "cannot delete ServiceMonitor {namespace}/{name} (serviceMonitor.enabled is false): {source}"
    )]
    DeleteServiceMonitor {
        namespace: String,
        name: String,
        source: ApplyError,
    },
    #[error(
        "storageClasses: {0} is a name the operator gives its own StorageClasses; choose another"
    )]
    ReservedClassName(String),
    #[error(
        "storageClasses: StorageClass {name} already exists and is not an extra class of {provisioner}; choose another name, or delete it first to have the operator manage it"
    )]
    ClassNameTaken {
        name: String,
        provisioner: &'static str,
    },
    #[error(
        "storageClasses: the {provisioner} operator writes no StorageClass (its service account has no right to); remove storageClasses from the settings and create the classes yourself"
    )]
    ClassesNotManaged { provisioner: &'static str },
    #[error("StorageClass {name}: {source}")]
    ApplyClass { name: String, source: ApplyError },
    #[error("cannot delete StorageClass {name}: {source}")]
    DeleteClass { name: String, source: ApplyError },
}

/// The failures of one settings step, in order, on one line (`DriverSettingsDegraded`,
/// `ExtraStorageClassesDegraded`; reason `SyncError`).
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct SettingsFailures(pub Vec<SettingsFailure>);

/// What every driver operator is started with, whatever its driver: each driver's `Options`
/// holds one (and derefs to it) beside its own knobs.
#[derive(Debug, Clone, Default)]
pub struct CommonOptions {
    /// The operator's own namespace: its lease, and the Deployment its Events are about.
    pub operator_namespace: String,
    /// The namespace of the driver's controller (standalone, also of its node plugins; hosted,
    /// the control-plane namespace).
    pub namespace: String,
    /// Image env vars and `OPERATOR_IMAGE_VERSION`.
    pub images: BTreeMap<String, String>,
    /// Cluster ID when there is no Infrastructure object (plain Kubernetes).
    pub cluster_id: Option<String>,
    /// Have cert-manager issue the metrics serving certificate while its CRD is served (plain
    /// Kubernetes; `None` on OpenShift, where service-ca does).
    pub cert_manager: Option<crate::cert_manager::CertManager>,
    /// Set when the operator serves a hosted control plane (`--guest-kubeconfig`): the node
    /// side then lives in the guest, in the spec's driver namespace.
    pub hosted: Option<crate::hosted::Hosted>,
    /// Create the ClusterCSIDriver when it is missing (plain Kubernetes, where no Cluster
    /// Storage Operator creates it); see [`CsiOperator::create_cluster_csi_driver`].
    pub create_cluster_csi_driver: bool,
}

/// A driver operator's start options: the kit's [`CommonOptions`] (through `Deref`), the
/// driver's own knobs, and the driver they make ([`CsiOperator::from_options`]).
pub trait DriverOptions: std::ops::Deref<Target = CommonOptions> {
    /// The driver these options configure.
    type Driver: Driver;
    /// The driver's declaration: names, prefixes, the Events reference.
    const SPEC: &'static DriverSpec;
    /// The driver's operand assets (what the operator applies).
    const ASSETS: crate::assets::AssetSet;
    /// The images of the operator's environment that its assets use, and, for a driver that
    /// runs on hosted control planes, the control-plane variants (anchors §4.8).
    fn images_from_env() -> BTreeMap<String, String> {
        let mut names = Self::ASSETS.image_placeholders();
        if Self::SPEC.hosted.is_some() {
            names.extend(crate::hosted::CONTROL_PLANE_IMAGE_ENV_VARS);
        }
        super::images_from_env(&names)
    }
    /// The driver, with its own state; `clients` and `cache` are the operator's, for state
    /// that follows the cluster (Manila's view of the nodes).
    fn into_driver(self, clients: &Clients, cache: &Cache) -> Self::Driver;
}

/// Makes a driver's `Options` (a struct with a `common: CommonOptions` field) deref to its
/// [`CommonOptions`], so the kit's knobs read the same in every driver (`opts.namespace`).
#[macro_export]
macro_rules! deref_common_options {
    ($options:ty) => {
        impl ::std::ops::Deref for $options {
            type Target = $crate::csi::CommonOptions;
            fn deref(&self) -> &$crate::csi::CommonOptions {
                &self.common
            }
        }
        impl ::std::ops::DerefMut for $options {
            fn deref_mut(&mut self) -> &mut $crate::csi::CommonOptions {
                &mut self.common
            }
        }
    };
}

impl CommonOptions {
    /// Standalone defaults for the driver of `spec`, with these images.
    pub fn standalone(spec: &DriverSpec, images: BTreeMap<String, String>) -> Self {
        Self {
            operator_namespace: spec.operator_namespace.into(),
            namespace: spec.driver_namespace.into(),
            images,
            ..Self::default()
        }
    }

    /// The namespace of the guest-side objects (`${NODE_NAMESPACE}`): the spec's driver
    /// namespace in the guest when hosted, else `namespace`.
    pub fn node_namespace(&self, spec: &DriverSpec) -> String {
        match self.hosted {
            Some(_) => spec.driver_namespace.to_string(),
            None => self.namespace.clone(),
        }
    }

    /// The kit's settings for the driver of `spec`.
    pub fn settings(&self, spec: &DriverSpec) -> Settings {
        Settings {
            events_about: super::events_about(&self.operator_namespace, spec.operator_deployment),
            namespace: self.namespace.clone(),
            node_namespace: self.node_namespace(spec),
            hosted_env: self.hosted.clone().unwrap_or_default(),
            user_agent: spec.user_agent,
            images: self.images.clone(),
            cluster_id: self.cluster_id.clone(),
            cert_manager: self.cert_manager.clone(),
        }
    }
}

/// A driver operator: the kit's reconcile around the driver `D`.
pub struct CsiOperator<D: Driver> {
    kit: Kit,
    driver: D,
    status: StatusWriter,
    log: LogControl,
    operator_log_level: steps::OperatorLogLevel,
    images: BTreeMap<String, String>,
    cluster_id: Option<String>,
    /// Create the ClusterCSIDriver when it is missing (plain Kubernetes, where no Cluster
    /// Storage Operator does it); see [`CsiOperator::create_cluster_csi_driver`].
    create_cr: bool,
    /// Whether the missing ClusterCSIDriver was already reported, so a resync does not repeat
    /// the same `info` line every few minutes.
    reported_missing: bool,
    /// The operator's name (its user agent): the name of its self-signed cert-manager Issuer.
    operator_name: &'static str,
    cert_manager: Option<crate::cert_manager::CertManager>,
    /// The hosted environment ([`Settings::hosted_env`]); its control plane is read from the
    /// cache on every reconcile.
    hosted_env: crate::hosted::Hosted,
    /// The driver settings last read without error ([`crate::settings`]): kept applied while
    /// the ConfigMap holds a mistake.
    last_good_settings: Option<DriverSettings>,
}

impl<D: Driver> CsiOperator<D> {
    pub fn new(
        clients: impl Into<Clients>,
        cache: Cache,
        metrics: Arc<Metrics>,
        log: LogControl,
        settings: Settings,
        driver: D,
    ) -> Self {
        let clients: Clients = clients.into();
        let client = clients.guest().clone();
        // The Events are about the operator's own Deployment, in the cluster it runs in.
        let recorder = EventRecorder::new(
            clients.own().clone(),
            settings.events_about,
            settings.user_agent,
            &steps::instance_name(settings.user_agent),
        );
        let applier = Applier::new(clients.clone(), cache.clone(), recorder.clone());
        let status = StatusWriter::new(
            client.clone(),
            &ar("operator.openshift.io/v1", "ClusterCSIDriver"),
            None,
        );
        Self {
            kit: Kit {
                client,
                clients,
                cache,
                applier,
                recorder,
                metrics,
                namespace: settings.namespace,
                node_namespace: settings.node_namespace,
                stable_generations: Default::default(),
            },
            driver,
            status,
            log,
            operator_log_level: steps::OperatorLogLevel::default(),
            images: settings.images,
            cluster_id: settings.cluster_id,
            create_cr: false,
            reported_missing: false,
            operator_name: settings.user_agent,
            cert_manager: settings.cert_manager,
            last_good_settings: None,
            hosted_env: settings.hosted_env,
        }
    }

    /// The operator that `opts` describe: its driver, made from them, run with the kit's
    /// settings of the driver's spec. Every driver's operator is made this way, so a driver
    /// only says what its options make ([`DriverOptions::into_driver`]).
    pub fn from_options<O: DriverOptions<Driver = D>>(
        clients: impl Into<Clients>,
        opts: O,
        cache: Cache,
        metrics: Arc<Metrics>,
        log: LogControl,
    ) -> Self {
        let clients: Clients = clients.into();
        let common = CommonOptions::clone(&opts);
        let driver = opts.into_driver(&clients, &cache);
        Self::for_spec(clients, cache, metrics, log, (O::SPEC, &common), driver)
    }

    /// The operator of the driver of `spec`, started with `options`.
    fn for_spec(
        clients: impl Into<Clients>,
        cache: Cache,
        metrics: Arc<Metrics>,
        log: LogControl,
        (spec, options): (&DriverSpec, &CommonOptions),
        driver: D,
    ) -> Self {
        Self::new(clients, cache, metrics, log, options.settings(spec), driver)
            .create_cluster_csi_driver(options.create_cluster_csi_driver)
    }

    /// Creates the driver's ClusterCSIDriver (`Managed`, log levels `Normal`, as the Cluster
    /// Storage Operator creates it) when it does not exist. For plain Kubernetes: there is no
    /// CSO, and shipping the CR beside its CRD in one `kubectl apply -k` fails on the first run
    /// ("ensure CRDs are installed first"). Once created, the CR is the administrator's: it is
    /// never updated from here.
    pub fn create_cluster_csi_driver(mut self, create: bool) -> Self {
        self.create_cr = create;
        self
    }

    /// The driver, for its own state.
    pub fn driver(&self) -> &D {
        &self.driver
    }

    /// One reconcile of the driver's ClusterCSIDriver.
    pub async fn reconcile(&mut self) -> Outcome {
        let started = Instant::now();
        // Events are written beside the steps, never between an object and the next.
        let events = self.kit.recorder.clone();
        let outcome = events.alongside(self.reconcile_inner()).await;
        let ok = matches!(outcome, Outcome::Done { .. });
        self.kit.metrics.reconciled(started.elapsed(), ok);
        outcome
    }

    async fn reconcile_inner(&mut self) -> Outcome {
        let (cr_obj, cr) =
            match steps::read_cluster_csi_driver(&self.kit.cache, &self.status, D::CR_NAME) {
                Ok(Some(found)) => found,
                Ok(None) => return self.missing_cluster_csi_driver().await,
                Err(e) => {
                    warn!(error = %e, "the ClusterCSIDriver cannot be read");
                    self.kit.metrics.error("config");
                    return Outcome::Failed {
                        requeue_after: None,
                    };
                }
            };
        self.operator_log_level
            .sync(&self.log, &steps::operator_log_level_of(&cr));
        let mut pass = Pass {
            cr,
            cr_obj,
            board: StepBoard::new(),
            requeue_after: None,
            hold_workloads: None,
        };
        for retired in D::RETIRED_CONDITIONS {
            pass.board.remove_condition(retired);
        }
        let state = pass.cr.spec.operator.management_state();
        match steps::management_state(&mut pass.board, &state, D::OPERAND) {
            Management::Reconcile => {}
            // Unmanaged hands the driver to the administrator: no writes at all.
            Management::NoWrites => {
                return Outcome::Done {
                    requeue_after: None,
                };
            }
            Management::StatusOnly => return self.flush(&pass).await,
        }
        pass.board.set_condition(log_level_condition(&pass.cr));
        match self.driver.prepare(&self.kit, &mut pass).await {
            Flow::Continue => {}
            Flow::StatusOnly => return self.flush(&pass).await,
            Flow::Stop => {
                return Outcome::Done {
                    requeue_after: pass.requeue_after,
                };
            }
        }

        let mut base = self.base_facts(&mut pass);
        let facts_kubernetes = base.kubernetes;
        self.observe_config(&mut pass, &mut base).await;
        let own = self.driver.own_facts(&self.kit, &base);
        let mut facts = Facts::read(&self.kit.cache, base, &D::MOUNTS, own);
        self.driver
            .configure(&self.kit, &mut pass, &mut facts)
            .await;
        let settings = self.driver_settings(&mut pass, &facts);
        let mut groups = self.driver.static_groups(&self.kit, &facts);
        self.service_monitors(&mut pass, &mut groups, settings.as_ref(), facts_kubernetes)
            .await;
        if facts_kubernetes {
            let services: Vec<Desired> = groups
                .iter()
                .filter_map(|g| g.objects.as_ref().ok())
                .flatten()
                .filter(|d| d.resource.kind == "Service")
                .cloned()
                .collect();
            self.metrics_certs(&mut pass, &services).await;
        }
        for group in groups {
            steps::apply_group(
                &self.kit.applier,
                &self.kit.metrics,
                &mut pass.board,
                group.prefix,
                group.objects,
            )
            .await;
        }
        self.driver
            .before_workloads(&self.kit, &mut pass, &mut facts)
            .await;
        let mut controller = self.driver.controller(&facts);
        match (pass.hold_workloads.clone(), &settings) {
            // The settings are wrong and none were read before: the live workloads stay as
            // they are (reverting them to defaults could move a kubelet directory back), and
            // so do their conditions; DriverSettingsDegraded says why.
            (None, None) => {}
            (None, Some(settings)) => {
                if let Ok(d) = controller.desired.as_mut() {
                    settings.apply_controller(&mut d.object);
                }
                let controller_name = controller.name;
                self.kit.controller_step(&mut pass, controller).await;
                self.record_version(&mut pass, controller_name).await;
                for mut daemonset in self.driver.daemonsets(&facts) {
                    if let Ok(d) = daemonset.desired.as_mut() {
                        settings.apply_node(&mut d.object);
                    }
                    self.kit.daemonset_step(&mut pass, daemonset).await;
                }
            }
            (Some(hold), _) => {
                let prefixes: Vec<&str> = std::iter::once(controller.prefix)
                    .chain(self.driver.daemonsets(&facts).iter().map(|w| w.prefix))
                    .collect();
                for prefix in prefixes {
                    held(&mut pass, prefix, &hold);
                }
            }
        }
        if let Some(desired) = self.driver.storage_class(&facts) {
            let state = pass.cr.spec.storage_class_state();
            let result = match desired {
                Ok(desired) => super::default_class::step(&self.kit, desired, &state).await,
                Err(e) => Err(e.into()),
            };
            pass.post(super::default_class::STORAGE_CLASS_PREFIX, result);
        }
        self.driver
            .after_workloads(&self.kit, &mut pass, &facts)
            .await;
        if let Some(settings) = &settings {
            let result = self.extra_storage_classes(settings).await;
            if self.has_settings() || result.is_err() {
                pass.post(EXTRA_CLASSES_PREFIX, result);
            } else {
                pass.board
                    .remove_condition(&conditions::degraded_type(EXTRA_CLASSES_PREFIX));
            }
        }
        let snapshot_class = self.driver.snapshot_class(&facts);
        self.kit
            .snapshot_class_step(&mut pass, snapshot_class)
            .await;
        self.flush(&pass).await
    }

    /// The name of the driver's settings ConfigMap, in the driver's namespace.
    fn settings_name(&self) -> String {
        settings::config_map_name(self.operator_name)
    }

    /// Whether the administrator created the settings ConfigMap.
    fn has_settings(&self) -> bool {
        self.kit
            .cache
            .config_map(&self.kit.namespace, &self.settings_name())
            .is_some()
    }

    /// The driver settings to apply ([`crate::settings`]): the defaults without the
    /// ConfigMap; its contents when they are valid; else the ones last read (`None` when
    /// there are none: nothing they govern is written). `DriverSettingsDegraded` is set only
    /// while the ConfigMap exists (or just went), so a cluster that never created one, OpenShift
    /// included, sees no new condition.
    fn driver_settings(
        &mut self,
        pass: &mut Pass,
        facts: &Facts<D::Own>,
    ) -> Option<DriverSettings> {
        let ns = self.kit.namespace.clone();
        let name = self.settings_name();
        let condition = conditions::degraded_type(settings::PREFIX);
        let Some(cm) = self.kit.cache.config_map(&ns, &name) else {
            pass.board.remove_condition(&condition);
            self.last_good_settings = Some(DriverSettings::default());
            return self.last_good_settings.clone();
        };
        let parsed = read_settings(&cm).and_then(|s| {
            let controller = self.driver.controller(facts).desired;
            let nodes = self.driver.daemonsets(facts);
            if let Ok(c) = &controller {
                let nodes: Vec<&kube::api::DynamicObject> = nodes
                    .iter()
                    .filter_map(|w| w.desired.as_ref().ok())
                    .map(|d| &d.object)
                    .collect();
                s.check_containers(&c.object, &nodes)?;
            }
            Ok(s)
        });
        match parsed {
            Ok(s) => {
                pass.post::<()>(settings::PREFIX, Ok(()));
                self.last_good_settings = Some(s);
            }
            Err(e) => {
                let kept = if self.last_good_settings.is_some() {
                    "the settings last read stay applied"
                } else {
                    "the controller Deployment, the node DaemonSets, the ServiceMonitor and the \
                     extra StorageClasses are left as they are"
                };
                self.kit.metrics.error("config");
                let rejected = SettingsRejected {
                    config_map: format!("{ns}/{name}"),
                    error: e,
                    kept,
                };
                pass.post::<()>(settings::PREFIX, Err(StepError::other(rejected)));
            }
        }
        self.last_good_settings.clone()
    }

    /// The ServiceMonitor objects of the static groups, as `serviceMonitor.enabled` says:
    /// enabled, applied with their group; disabled, taken out of it and deleted when ours
    /// exists; settings unknown (`None`), taken out and left as they are.
    async fn service_monitors(
        &self,
        pass: &mut Pass,
        groups: &mut [super::Group],
        settings: Option<&DriverSettings>,
        kubernetes: bool,
    ) {
        if let Some(s) = settings.filter(|s| s.service_monitor) {
            let services: Vec<Desired> = groups
                .iter()
                .filter_map(|g| g.objects.as_ref().ok())
                .flatten()
                .filter(|d| d.resource.kind == "Service")
                .cloned()
                .collect();
            let requests = crate::metrics_cert::requests(&services);
            let has_ca = |ns: &str, name: &str| {
                self.kit
                    .cache
                    .secret(ns, name)
                    .and_then(|s| s.data)
                    .is_some_and(|d| d.contains_key("ca.crt"))
            };
            for group in groups.iter_mut() {
                for d in group.objects.iter_mut().flatten() {
                    if d.resource.kind == "ServiceMonitor" {
                        settings::service_monitor(
                            &mut d.object,
                            &s.service_monitor_labels,
                            kubernetes,
                            &requests,
                            has_ca,
                        );
                    }
                }
            }
            return;
        }
        let mut removed = Vec::new();
        for group in groups.iter_mut() {
            if let Ok(objects) = group.objects.as_mut() {
                objects.retain(|d| {
                    let monitor = d.resource.kind == "ServiceMonitor";
                    if monitor {
                        removed.push(d.clone());
                    }
                    !monitor
                });
            }
        }
        if settings.is_none() {
            return;
        }
        let mut errors = Vec::new();
        for d in removed {
            let ns = d.object.metadata.namespace.clone();
            let name = d.object.metadata.name.clone().unwrap_or_default();
            if !matches!(
                self.kit.cache.lookup(&d.resource, ns.as_deref(), &name),
                crate::cache::Lookup::Found(_)
            ) {
                continue;
            }
            match self
                .kit
                .applier
                .delete(&d.resource, ns.as_deref(), &name)
                .await
            {
                Ok(true) => self.kit.metrics.write("ServiceMonitor", WriteVerb::Delete),
                Ok(false) => {}
                Err(source) => errors.push(SettingsFailure::DeleteServiceMonitor {
                    namespace: ns.unwrap_or_default(),
                    name,
                    source,
                }),
            }
        }
        if !errors.is_empty() {
            pass.post::<()>(settings::PREFIX, Err(SettingsFailures(errors).into()));
        }
    }

    /// Applies the extra StorageClasses of the settings and deletes those of ours (labelled
    /// [`settings::EXTRA_CLASS_LABEL`] with this driver) no longer listed. A name already
    /// taken by a class that is not an extra class of this driver, or one the driver itself
    /// names, is refused, never taken over.
    async fn extra_storage_classes(&self, settings: &DriverSettings) -> Result<(), StepError> {
        let provisioner = D::CR_NAME;
        let resource = ar("storage.k8s.io/v1", "StorageClass");
        let ours = |o: &kube::api::DynamicObject| {
            o.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(settings::EXTRA_CLASS_LABEL))
                .is_some_and(|v| v == provisioner)
        };
        let mut errors = Vec::new();
        let wanted = settings.storage_classes(provisioner)?;
        if !D::EXTRA_STORAGE_CLASSES {
            return match wanted.is_empty() {
                true => Ok(()),
                false => {
                    Err(
                        SettingsFailures(vec![SettingsFailure::ClassesNotManaged { provisioner }])
                            .into(),
                    )
                }
            };
        }
        let mut names = std::collections::BTreeSet::new();
        for d in &wanted {
            let name = d.object.metadata.name.clone().unwrap_or_default();
            names.insert(name.clone());
            if self.driver.reserved_storage_class(&name) {
                errors.push(SettingsFailure::ReservedClassName(name));
                continue;
            }
            if let crate::cache::Lookup::Found(live) = self.kit.cache.lookup(&resource, None, &name)
                && !ours(&live)
            {
                errors.push(SettingsFailure::ClassNameTaken { name, provisioner });
                continue;
            }
            if let Err(source) = self.kit.apply(d, None).await {
                errors.push(SettingsFailure::ApplyClass { name, source });
            }
        }
        let selector = settings::extra_class_selector(provisioner);
        for live in self.kit.cache.list_selected(&resource, &selector) {
            let name = live.metadata.name.clone().unwrap_or_default();
            if names.contains(&name) || !ours(&live) {
                continue;
            }
            match self
                .kit
                .applier
                .delete_owned(&resource, None, &name, &ours)
                .await
            {
                Ok(true) => self.kit.metrics.write("StorageClass", WriteVerb::Delete),
                Ok(false) => {}
                Err(source) => errors.push(SettingsFailure::DeleteClass { name, source }),
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(SettingsFailures(errors).into())
        }
    }

    /// The ClusterCSIDriver is absent: create it when asked to, else say once, at `info`, what
    /// the operator waits for and how to provide it (at debug level an idle operator looked
    /// broken).
    async fn missing_cluster_csi_driver(&mut self) -> Outcome {
        if !self.create_cr {
            if !self.reported_missing {
                info!(
                    name = D::CR_NAME,
                    "the ClusterCSIDriver {} does not exist, so nothing is installed; create it \
                     (kubectl create -f - <<< '{{\"apiVersion\": \"operator.openshift.io/v1\", \
                     \"kind\": \"ClusterCSIDriver\", \"metadata\": {{\"name\": \"{}\"}}, \
                     \"spec\": {{\"managementState\": \"Managed\"}}}}') or start the operator \
                     with --create-cluster-csi-driver",
                    D::CR_NAME,
                    D::CR_NAME
                );
                self.reported_missing = true;
            }
            return Outcome::Done {
                requeue_after: None,
            };
        }
        let cr = openshift_api::operator::ClusterCSIDriver::new(
            D::CR_NAME,
            openshift_api::operator::ClusterCSIDriverSpec::new(
                openshift_api::common::ManagementState::Managed,
                openshift_api::common::LogLevel::Normal,
            ),
        );
        match steps::create_cluster_csi_driver(&self.kit.client, &self.kit.metrics, &cr).await {
            Ok(Some(_)) => {
                info!(
                    name = D::CR_NAME,
                    "created the ClusterCSIDriver (--create-cluster-csi-driver); edit its spec \
                     to change what is installed"
                );
                // The watch brings the new object and wakes the next reconcile.
                Outcome::Done {
                    requeue_after: None,
                }
            }
            // Someone else created it between our cache and now: the watch brings it.
            Ok(None) => Outcome::Done {
                requeue_after: None,
            },
            Err(e) => {
                warn!(name = D::CR_NAME, error = %e, "cannot create the ClusterCSIDriver");
                self.kit.metrics.error("apply");
                Outcome::Failed {
                    requeue_after: None,
                }
            }
        }
    }

    /// Plain Kubernetes has no service-ca: have cert-manager issue the metrics serving
    /// certificates the `services` ask for while its Certificate CRD is served
    /// ([`crate::cert_manager`]), else issue them here and renew them, unless someone else
    /// provides them ([`crate::metrics_cert`]). Failures are
    /// `MetricsServingCertControllerDegraded`.
    async fn metrics_certs(&self, pass: &mut Pass, services: &[Desired]) {
        use crate::metrics_cert::{self, Decision};
        let requests = metrics_cert::requests(services);
        if let Some(cm) = &self.cert_manager {
            let crd = ar("apiextensions.k8s.io/v1", "CustomResourceDefinition");
            let lookup = self
                .kit
                .cache
                .lookup(&crd, None, crate::cert_manager::CERTIFICATE_CRD);
            // While the CRD is served the Secrets are cert-manager's: no `decide` below, so our
            // annotation on a Secret cert-manager re-issued into can never make us write it.
            if crate::cert_manager::served(&lookup) {
                return self.cert_manager_certs(pass, cm, &requests).await;
            }
        }
        let now = jiff::Timestamp::now();
        let mut result = Ok(());
        for request in requests {
            let existing = self.kit.cache.secret(&request.namespace, &request.secret);
            if metrics_cert::decide(existing.as_ref(), now) != Decision::Issue {
                continue;
            }
            let applied = metrics_cert::issue(&request, now)
                .map_err(StepError::other)
                .and_then(|secret| {
                    crate::desired::from_typed(
                        "self-signed metrics serving certificate",
                        None,
                        &secret,
                    )
                    .map_err(StepError::from)
                });
            let step = match applied {
                Ok(d) => self
                    .kit
                    .apply(&d, None)
                    .await
                    .map(|_| {
                        info!(
                            secret = %request.secret,
                            namespace = %request.namespace,
                            "issued a self-signed metrics serving certificate (no service-ca)"
                        );
                    })
                    .map_err(StepError::from),
                Err(e) => Err(e),
            };
            if step.is_err() {
                result = step;
            }
        }
        pass.post(METRICS_CERT_PREFIX, result);
    }

    /// The cert-manager path of [`Self::metrics_certs`]: the operator's self-signed Issuer
    /// (unless `--cert-manager-issuer` names one) and one Certificate per requested Secret
    /// that is the operator's to hand over; the Certificates' Ready conditions, from the
    /// watch, say whether cert-manager delivered.
    async fn cert_manager_certs(
        &self,
        pass: &mut Pass,
        cm: &crate::cert_manager::CertManager,
        requests: &[crate::metrics_cert::Request],
    ) {
        use crate::cert_manager::{self as cmgr, Ownership, Readiness};
        let now = jiff::Timestamp::now();
        let issuer = cm.issuer_for(self.operator_name);
        let mut errors: Vec<String> = Vec::new();
        let mut issuer_namespaces = std::collections::BTreeSet::new();
        for request in requests {
            let ns = request.namespace.as_str();
            let existing = self.kit.cache.secret(ns, &request.secret);
            if let Ownership::Foreign(_) = cmgr::ownership(request, existing.as_ref()) {
                // An administrator's Secret, or another Certificate's: theirs to renew.
                continue;
            }
            let mut objects = Vec::new();
            if cm.owns_issuer() && issuer_namespaces.insert(ns.to_owned()) {
                objects.push(cmgr::issuer(ns, &issuer.name));
            }
            objects.push(cmgr::certificate(request, &issuer));
            for desired in objects {
                let applied = match desired {
                    Ok(d) => self.kit.apply(&d, None).await.map(|_| ()),
                    Err(e) => {
                        errors.push(e.to_string());
                        continue;
                    }
                };
                match applied {
                    // The CRD went away between the cache and now: its watch brings the switch.
                    Ok(()) | Err(ApplyError::KindNotServed { .. }) => {}
                    Err(e) => errors.push(cmgr::apply_hint(&e.to_string())),
                }
            }
            let cert = ar(cmgr::API_VERSION, "Certificate");
            let Some(live) = self.kit.cache.object(&cert, Some(ns), &request.secret) else {
                continue; // just created: its watch event brings it back here
            };
            match cmgr::readiness(&live, now) {
                Readiness::Ready => {}
                Readiness::Pending(after) => {
                    pass.requeue_after = Some(pass.requeue_after.map_or(after, |r| r.min(after)));
                }
                Readiness::Stuck(what) => errors.push(cmgr::stuck_message(
                    request,
                    &issuer,
                    cmgr::NOT_READY_GRACE.as_secs() / 60,
                    &what,
                )),
            }
        }
        let result = if errors.is_empty() {
            Ok(())
        } else {
            Err(StepError::Objects(errors))
        };
        pass.post(METRICS_CERT_PREFIX, result);
    }

    fn base_facts(&self, pass: &mut Pass) -> BaseFacts {
        let infra: Option<Infrastructure> = self.kit.cache.get::<Infrastructure>(None, "cluster");
        let topology = infra
            .as_ref()
            .map(|i| TopologyMode::parse(i.control_plane_topology().as_str()))
            .unwrap_or_default();
        let cluster_id = infra
            .as_ref()
            .and_then(|i| i.infrastructure_name().map(str::to_string))
            .or_else(|| self.cluster_id.clone())
            .unwrap_or_default();
        let raw_level = pass
            .cr
            .spec
            .operator
            .log_level
            .as_ref()
            .map(|l| l.as_str().to_string())
            .unwrap_or_default();
        BaseFacts {
            namespace: self.kit.namespace.clone(),
            node_namespace: self.kit.node_namespace.clone(),
            hosted: self.hosted(pass),
            images: self.images.clone(),
            cluster_id,
            topology,
            kubernetes: infra.is_none(),
            log_level: LogLevel::parse(&raw_level).level,
            ..BaseFacts::default()
        }
    }

    /// When hosted, the `HostedControlPlane` of the control-plane namespace with the hosted
    /// environment; its absence or a malformed field is `HostedControlPlaneDegraded` (the
    /// controller is then placed without the plane's node selector, labels and tolerations
    /// until it is corrected).
    fn hosted(&self, pass: &mut Pass) -> Option<crate::hosted::Hosted> {
        let namespace = self.kit.clients.control_plane_namespace()?;
        let read = crate::hosted::read_control_plane(&self.kit.cache, namespace);
        let mut hosted = self.hosted_env.clone();
        let result = match read {
            Ok(plane) => {
                hosted.control_plane = plane;
                Ok(())
            }
            Err(message) => {
                hosted.control_plane.namespace = namespace.to_string();
                Err(StepError::other(message))
            }
        };
        pass.post(crate::hosted::CONDITION_PREFIX, result);
        Some(hosted)
    }

    /// Hosted: the DeploymentVersionController of library-go on the controller Deployment
    /// (see [`crate::hosted::version_to_record`]).
    async fn record_version(&self, pass: &mut Pass, controller: &str) {
        if !self.kit.clients.is_hosted() {
            return;
        }
        let Some(version) = self.images.get("OPERATOR_IMAGE_VERSION") else {
            return;
        };
        let ns = self.kit.namespace.as_str();
        let result = crate::hosted::record_version(
            self.kit.clients.for_namespace(Some(ns)),
            &self.kit.cache,
            ns,
            controller,
            version,
        )
        .await;
        if let Ok(true) = result {
            self.kit.metrics.write("Deployment", WriteVerb::Update);
        }
        let prefix = crate::hosted::version_controller_prefix(D::CONTROLLER_NAME_PREFIX);
        pass.post(&prefix, result.map(|_| ()).map_err(StepError::other));
    }

    /// Config observer: Proxy and APIServer → `spec.observedConfig` (and the facts).
    async fn observe_config(&self, pass: &mut Pass, base: &mut BaseFacts) {
        let kit = &self.kit;
        match config_observer::observe(&kit.client, &kit.cache, &pass.cr_obj).await {
            Ok(observed) => {
                base.proxy = observed.proxy;
                base.serving = observed.serving;
                // The status write that ends this reconcile must build on the CR just written,
                // or it would meet a 409 and cost a GET and a retry.
                if let Some(written) = observed.written {
                    kit.metrics.write("ClusterCSIDriver", WriteVerb::Update);
                    pass.cr_obj = Arc::new(written);
                    self.status.remember(pass.cr_obj.clone());
                }
                pass.post(CONFIG_OBSERVATION_PREFIX, Ok(()));
            }
            Err(e) => {
                pass.post::<()>(CONFIG_OBSERVATION_PREFIX, Err(e.into()));
            }
        }
    }

    /// Writes the status posted on the board; the outcome says whether a step failed.
    async fn flush(&self, pass: &Pass) -> Outcome {
        let requeue_after = pass.requeue_after;
        match self.status.flush(&pass.board, &pass.cr_obj).await {
            Ok(_) if !pass.board.failed() => Outcome::Done { requeue_after },
            Ok(_) => Outcome::Failed { requeue_after },
            Err(e) => {
                self.kit.metrics.error("kube_api");
                warn!(error = %e, "cannot write the ClusterCSIDriver status");
                Outcome::Failed { requeue_after }
            }
        }
    }
}

/// The driver settings ConfigMap holds a mistake: `DriverSettingsDegraded` says where, what,
/// and what is kept meanwhile.
#[derive(Debug, thiserror::Error)]
#[error(
    "ConfigMap {config_map}, key {key}: {error}; {kept} until it is corrected (see \
     docs/driver-settings.md)",
    key = settings::DATA_KEY
)]
struct SettingsRejected {
    /// `namespace/name`.
    config_map: String,
    error: settings::SettingsError,
    /// What stays applied meanwhile.
    kept: &'static str,
}

/// The settings of a driver's ConfigMap: only [`settings::DATA_KEY`] may be set.
fn read_settings(
    cm: &k8s_openapi::api::core::v1::ConfigMap,
) -> Result<DriverSettings, settings::SettingsError> {
    let data = cm.data.clone().unwrap_or_default();
    let other: Vec<&String> = data
        .keys()
        .filter(|k| *k != settings::DATA_KEY)
        .chain(cm.binary_data.iter().flat_map(|b| b.keys()))
        .collect();
    if let Some(k) = other.first() {
        return Err(settings::SettingsError(format!(
            "data key {k:?} is not read; put the settings under the key {} only",
            settings::DATA_KEY
        )));
    }
    settings::parse(data.get(settings::DATA_KEY).map_or("", String::as_str))
}

/// The conditions of a workload the driver holds back: not Available, Progressing, not
/// Degraded (waiting is not a failure), all saying why.
fn held(pass: &mut Pass, prefix: &str, hold: &super::Hold) {
    for (suffix, status) in [
        ("Available", conditions::FALSE),
        ("Progressing", conditions::TRUE),
    ] {
        pass.board.set_condition(OperatorCondition::new(
            format!("{prefix}{suffix}"),
            status,
            hold.reason.as_str(),
            hold.message.as_str(),
        ));
    }
    pass.post(prefix, Ok(()));
}

impl<D: Driver> crate::process::Reconciler for CsiOperator<D> {
    fn reconcile(&mut self) -> impl std::future::Future<Output = Outcome> + Send {
        CsiOperator::reconcile(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `DriverSettingsDegraded` names the ConfigMap and key, the mistake and what is kept.
    #[test]
    fn rejected_settings_say_where_what_and_what_is_kept() {
        let rejected = StepError::other(SettingsRejected {
            config_map: "drivers/cinder-settings".into(),
            error: settings::SettingsError("replicas: not a number".into()),
            kept: "the settings last read stay applied",
        });
        assert_eq!(rejected.reason(), "SyncError");
        assert_eq!(
            rejected.to_string(),
            format!(
                "ConfigMap drivers/cinder-settings, key {}: replicas: not a number; the settings \
                 last read stay applied until it is corrected (see docs/driver-settings.md)",
                settings::DATA_KEY
            )
        );
    }
}
