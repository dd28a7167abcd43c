//! The Cinder CSI driver operator at runtime: watches, one reconcile in named steps, status.
//!
//! Every step reads the same snapshot (from watch caches), builds its objects with the pure
//! functions of `build`, applies them with the one apply engine and yields its own
//! conditions, named as OpenShift names them so the Cluster Storage Operator and users' alerts
//! keep working. A failing step never stops the others; the reconcile then retries with
//! backoff. OpenStack is only asked for availability zones, on a timer and when credentials
//! change.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference, Secret};
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};

use openshift_api::config::Infrastructure;
use openshift_api::operator::{ClusterCSIDriver, StorageClassState};
use operator_kit::apply::{Applier, ApplyError};
use operator_kit::cache::{Cache, CacheBuilder, Lookup};
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
use tracing::{debug, warn};

use crate::build::{self, Desired, Facts};
use crate::config::{self, CloudConfigRef};
use crate::topology::{TopologySource, TopologyState, UserOverride, VolumeZone};
use crate::{
    CLOUD_CONF_CONFIGMAP, CONTROLLER_DEPLOYMENT_NAME, CONTROLLER_NAME_PREFIX, CREDENTIALS_SECRET,
    CSI_DRIVER_NAME, METRICS_SERVING_CERT_SECRET, NODE_DAEMONSET_NAME,
    SYNCED_CLOUD_PROVIDER_CONFIGMAP, TRUSTED_CA_BUNDLE_CONFIGMAP, USER_AGENT,
};

/// Condition-name prefixes, exactly as the Go operator's controllers are named (anchors §4.1).
/// Condition types OpenShift's Go Cinder operators wrote and this one does not: the legacy
/// standalone operator's static-resources controller, and the conditional one whose stale
/// condition Go's `StaleConditionRemovalController` meant to remove but never matched (anchors
/// §4.1, §8). Removed on every reconcile, so after a takeover none of them stays on the CR as
/// the Go operator left it (a Degraded=True there would never clear).
const RETIRED_CONDITIONS: &[&str] = &[
    "OpenStackCinderDriverStaticResourcesControllerDegraded",
    "OpenStackCinderDriverConditionalStaticResourcesControllerDegraded",
];
const CONTROLLER_PREFIX: &str = "OpenStackCinderDriverControllerServiceController";
const NODE_PREFIX: &str = "OpenStackCinderDriverNodeServiceController";
const CP_STATIC_PREFIX: &str = "OpenStackCinderDriverControlPlaneStaticResourcesController";
const GUEST_STATIC_PREFIX: &str = "OpenStackCinderDriverGuestStaticResourcesController";
const STORAGE_CLASS_PREFIX: &str = "StorageClassController";
const SNAPSHOT_CLASS_PREFIX: &str = "VolumeSnapshotClassController";
const CONFIG_SYNC_PREFIX: &str = "ConfigSync";
/// The operand name in ManagementStateDegraded messages.
const OPERAND: &str = "OpenStackCinderCSIDriver";

/// How the operator is started.
#[derive(Debug, Clone)]
pub struct Options {
    /// The namespace of the driver (and of the operator's own lease).
    pub namespace: String,
    /// Image env vars and `OPERATOR_IMAGE_VERSION`.
    pub images: BTreeMap<String, String>,
    /// How often availability zones are listed again (users file §1.1); `0` means once per set
    /// of credentials.
    pub topology_refresh: Duration,
    /// Cluster ID when there is no Infrastructure object (plain Kubernetes).
    pub cluster_id: Option<String>,
}

/// What the operator watches: its CR, the cluster singletons, its namespace's objects, and
/// each cluster-scoped object it writes (by name, so memory does not grow with the cluster).
pub fn watches(client: Client, opts: &Options) -> Result<CacheBuilder, build::BuildError> {
    let ns = opts.namespace.as_str();
    let mut builder = CacheBuilder::new(client, [ns.to_string()])
        .cluster_object(
            &ar("operator.openshift.io/v1", "ClusterCSIDriver"),
            CSI_DRIVER_NAME,
        )
        .cluster_object(&ar("config.openshift.io/v1", "Infrastructure"), "cluster")
        .cluster_object(&ar("config.openshift.io/v1", "Proxy"), "cluster")
        .cluster_object(&ar("config.openshift.io/v1", "APIServer"), "cluster")
        .in_namespace(&ar("v1", "ConfigMap"), config::USER_CONFIG_NAMESPACE)
        .cluster_object(
            &ar("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            crate::assets::VOLUME_SNAPSHOT_CLASS_CRD,
        )
        .cluster_object(
            &ar("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            crate::assets::SERVICE_MONITOR_CRD,
        );
    for kind in [
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "DaemonSet"),
    ] {
        builder = builder.namespaced(&ar(kind.0, kind.1));
    }
    // Register every desired object; placeholder values do not change names or kinds.
    let facts = placeholder_facts(opts);
    for d in build::everything(&facts)? {
        builder = builder.object(&d.resource, &d.object);
    }
    Ok(builder)
}

/// Facts with every image set, for the things that do not depend on values (names, kinds).
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

/// The state the operator keeps between reconciles.
pub struct Operator {
    client: Client,
    opts: Options,
    cache: Cache,
    applier: Applier,
    status: StatusWriter,
    metrics: Arc<Metrics>,
    log: LogControl,
    topology: TopologyState,
    openstack: Arc<openstack::Session>,
    /// An availability-zone listing running in the background (refreshes after the first,
    /// so a slow or hung OpenStack never holds up the other steps). It nudges the loop when
    /// its answer is ready; dropping it aborts the listing.
    listing: Option<(
        String,
        operator_kit::cache::Background<Result<bool, crate::topology::TopologyError>>,
    )>,
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
        let involved = events_about(&opts.namespace);
        let recorder = EventRecorder::new(
            client.clone(),
            involved,
            USER_AGENT,
            &steps::instance_name(USER_AGENT),
        );
        let applier = Applier::new(client.clone(), cache.clone(), recorder);
        let status = StatusWriter::new(
            client.clone(),
            &ar("operator.openshift.io/v1", "ClusterCSIDriver"),
            None,
        );
        let topology = TopologyState::new(opts.topology_refresh, Duration::from_secs(60));
        Self {
            client,
            opts,
            cache,
            applier,
            status,
            metrics,
            log,
            topology,
            openstack: Arc::new(openstack::Session::new()),
            listing: None,
            operator_log_level: steps::OperatorLogLevel::default(),
        }
    }

    /// One reconcile of `cinder.csi.openstack.org`.
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
            steps::Management::StatusOnly => return self.flush(&board, &cr_obj, false).await,
        }

        let mut failed = false;
        let mut facts = self.base_facts(&cr);

        // Config observer: Proxy and APIServer → spec.observedConfig (and the facts).
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
                board.set_condition(OperatorCondition::new(
                    conditions::types::CONFIG_OBSERVATION_DEGRADED,
                    conditions::FALSE,
                    reasons::AS_EXPECTED,
                    "",
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

        // Config sync: cloud-conf, with enable_topology from OpenStack.
        let (cloud_conf, requeue) = self.config_sync(&mut board, &mut failed).await;
        facts.cloud_conf = cloud_conf;

        // Static resources.
        let cp = build::control_plane_static(&facts);
        failed |= steps::apply_group(
            &self.applier,
            &self.metrics,
            &mut board,
            CP_STATIC_PREFIX,
            cp,
        )
        .await;
        let guest = build::guest_static(&facts);
        failed |= steps::apply_group(
            &self.applier,
            &self.metrics,
            &mut board,
            GUEST_STATIC_PREFIX,
            guest,
        )
        .await;

        // Controller Deployment and node DaemonSet.
        failed |= self.controller_step(&mut board, &facts, &cr_obj).await;
        failed |= self.node_step(&mut board, &facts, &cr_obj).await;

        // Storage classes.
        failed |= self.storage_class_step(&mut board, &facts, &cr).await;
        failed |= self.snapshot_class_step(&mut board, &facts).await;

        let flushed = self.flush(&board, &cr_obj, failed).await;
        match (flushed, failed) {
            (Outcome::Failed { .. }, _) | (_, true) => Outcome::Failed {
                requeue_after: requeue,
            },
            _ => Outcome::Done {
                requeue_after: requeue,
            },
        }
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
            credentials: self.cache.secret(ns, CREDENTIALS_SECRET),
            metrics_cert: self.cache.secret(ns, METRICS_SERVING_CERT_SECRET),
            ..Facts::default()
        }
    }

    /// Generates and applies `cloud-conf`; returns it (for the hash annotations) and when the
    /// availability zones are due again.
    async fn config_sync(
        &mut self,
        board: &mut StatusBoard,
        failed: &mut bool,
    ) -> (Option<ConfigMap>, Option<Duration>) {
        let ns = self.opts.namespace.clone();
        let credentials = self.cache.secret(&ns, CREDENTIALS_SECRET);
        let clouds_yaml = credentials
            .as_ref()
            .and_then(|s| s.data.as_ref())
            .and_then(|d| d.get("clouds.yaml"))
            .map(|b| b.0.as_slice());
        board.set_condition(conditions::insecure_connection(
            &[(&format!("{ns}/{CREDENTIALS_SECRET}"), clouds_yaml)],
            |b| openstack::insecure_settings_in(b, openstack::DEFAULT_CLOUD),
        ));
        match self.cloud_conf(&ns).await {
            Ok((cm, requeue, stale)) => {
                let result = match build::cloud_conf_desired(&cm) {
                    Ok(d) => self.apply_one(&d, None).await.map(|_| ()),
                    Err(e) => Err(e.to_string()),
                };
                match result.and_then(|()| stale.map_or(Ok(()), Err)) {
                    Ok(()) => board.set_condition(conditions::degraded(CONFIG_SYNC_PREFIX, None)),
                    Err(e) => {
                        *failed = true;
                        board.set_condition(conditions::degraded(CONFIG_SYNC_PREFIX, Some(&e)));
                    }
                }
                (Some(cm), requeue)
            }
            Err((message, requeue)) => {
                *failed = true;
                self.metrics.error("config");
                board.set_condition(conditions::degraded(CONFIG_SYNC_PREFIX, Some(&message)));
                // Keep rolling out what exists: the live cloud-conf still describes the cloud.
                (self.cache.config_map(&ns, CLOUD_CONF_CONFIGMAP), requeue)
            }
        }
    }

    /// The third value is set when the latest availability-zone listing failed and an earlier
    /// result is published: `cloud-conf` is still applied, but the failure is reported.
    #[allow(clippy::type_complexity)]
    async fn cloud_conf(
        &mut self,
        ns: &str,
    ) -> Result<(ConfigMap, Option<Duration>, Option<String>), (String, Option<Duration>)> {
        let user = self
            .cache
            .config_map(config::USER_CONFIG_NAMESPACE, config::USER_CONFIG_NAME);
        let infra: Option<Infrastructure> =
            self.cache
                .typed("config.openshift.io/v1", "Infrastructure", None, "cluster");
        let cloud_ref = infra
            .as_ref()
            .and_then(|i| i.spec.cloud_config.as_ref())
            .map(|c| CloudConfigRef {
                name: c.name.clone(),
                key: c.key.clone().unwrap_or_default(),
            });
        let infra_cm = cloud_ref
            .as_ref()
            .filter(|r| !r.name.is_empty())
            .and_then(|r| {
                self.cache
                    .config_map(config::USER_CONFIG_NAMESPACE, &r.name)
            });
        let source = config::select_source(user.as_ref(), cloud_ref.as_ref(), infra_cm.as_ref())
            .map_err(|e| (e.to_string(), None))?;
        let credentials = self.cache.secret(ns, CREDENTIALS_SECRET);
        let synced = self.cache.config_map(ns, SYNCED_CLOUD_PROVIDER_CONFIGMAP);
        let ca = config::select_ca(synced.as_ref(), credentials.as_ref(), ns)
            .map_err(|e| (e.to_string(), None))?;
        let origin = source
            .origin
            .as_ref()
            .map(|o| format!("{}/{}", o.namespace, o.name))
            .unwrap_or_default();
        let user_override = source.enable_topology.as_deref().map(|value| UserOverride {
            value,
            origin: &origin,
        });
        let fingerprint = fingerprint(credentials.as_ref(), ca.as_ref().map(|c| c.pem.as_str()));
        let now = Instant::now();
        // A finished background listing is recorded first (for the credentials it used).
        if let Some((used, listing)) = self.listing.as_mut()
            && let Some(answer) = listing.try_take()
        {
            let used = std::mem::take(used);
            self.listing = None;
            let outcome = answer.unwrap_or_else(|e| {
                Err(crate::topology::TopologyError::Lookup(format!(
                    "the listing task failed: {e}"
                )))
            });
            self.record_listing(now, &used, outcome);
        }
        let due = self
            .topology
            .is_due(now, user_override.is_some(), &fingerprint);
        let listing_current = self
            .listing
            .as_ref()
            .is_some_and(|(used, _)| *used == fingerprint);
        if due && !listing_current {
            let task = list_zones(
                self.openstack.clone(),
                ns.to_string(),
                credentials.clone(),
                ca.as_ref().map(|c| c.pem.as_bytes().to_vec()),
            );
            if self.topology.decide(None).is_ok() {
                // A value exists: refresh in the background and publish it when it is known.
                self.listing = Some((fingerprint.clone(), self.cache.nudger().spawn(task)));
            } else {
                // The first value: cloud-conf cannot be written without it.
                let outcome = task.await;
                self.record_listing(now, &fingerprint, outcome);
            }
        }
        let requeue = if self.listing.is_some() {
            // The listing nudges the loop when its answer is ready: no timer meanwhile.
            None
        } else {
            self.topology
                .requeue_after(Instant::now(), user_override.is_some(), &fingerprint)
        };
        let value = self
            .topology
            .decide(user_override)
            .map_err(|e| (e.to_string(), requeue))?;
        let data = config::cloud_conf_data(&source, ca.as_ref(), &value.value)
            .map_err(|e| (e.to_string(), requeue))?;
        // A rotation to bad credentials must not look healthy just because an earlier listing
        // succeeded (the driver will fail with them too).
        let stale = match (&value.source, self.topology.last_error()) {
            (TopologySource::PreviousResult, Some(e)) => Some(format!(
                "{e}; {} keeps {}={} from the last successful listing",
                CLOUD_CONF_CONFIGMAP,
                config::ENABLE_TOPOLOGY_KEY,
                value.value
            )),
            _ => None,
        };
        Ok((config::cloud_conf_configmap(ns, data), requeue, stale))
    }

    fn record_listing(
        &mut self,
        at: Instant,
        fingerprint: &str,
        outcome: Result<bool, crate::topology::TopologyError>,
    ) {
        if let Err(e) = &outcome {
            self.metrics.error("openstack");
            warn!(error = %e, "cannot list availability zones");
        }
        self.topology.record(at, fingerprint, outcome);
    }

    /// Applies one object; returns its live generation.
    async fn apply_one(
        &self,
        d: &Desired,
        expected_generation: Option<i64>,
    ) -> Result<Option<i64>, String> {
        match self
            .applier
            .apply(&d.resource, &d.object, expected_generation)
            .await
        {
            Ok(applied) => {
                self.metrics.applied(&d.resource.kind, applied.action);
                Ok(applied.generation)
            }
            Err(e) => {
                self.metrics.error("apply");
                Err(e.to_string())
            }
        }
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
            Err(e) => {
                board.set_condition(conditions::degraded(
                    CONTROLLER_PREFIX,
                    Some(&e.to_string()),
                ));
                return true;
            }
        };
        let expected =
            status::last_generation(cr, "apps", "deployments", ns, CONTROLLER_DEPLOYMENT_NAME);
        match self.apply_one(&desired, expected).await {
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
                        board.set_condition(conditions::degraded(CONTROLLER_PREFIX, None));
                        false
                    }
                    Some(Err(_)) => {
                        board.set_condition(conditions::degraded(
                            CONTROLLER_PREFIX,
                            Some("Deployment was progressing too long"),
                        ));
                        true
                    }
                    None => {
                        board.set_condition(conditions::degraded(CONTROLLER_PREFIX, None));
                        false
                    }
                }
            }
            Err(e) => {
                board.set_condition(conditions::degraded(CONTROLLER_PREFIX, Some(&e)));
                true
            }
        }
    }

    async fn node_step(&self, board: &mut StatusBoard, facts: &Facts, cr: &DynamicObject) -> bool {
        let ns = self.opts.namespace.as_str();
        let mut desired = match build::node_desired(facts) {
            Ok(d) => d,
            Err(e) => {
                board.set_condition(conditions::degraded(NODE_PREFIX, Some(&e.to_string())));
                return true;
            }
        };
        let live: Option<DaemonSet> =
            self.cache
                .typed("apps/v1", "DaemonSet", Some(ns), NODE_DAEMONSET_NAME);
        if let Some(stable) = progressing::stable_generation_annotation(live.as_ref()) {
            let annotations = desired
                .object
                .metadata
                .annotations
                .get_or_insert_with(BTreeMap::new);
            annotations.insert("storage.openshift.io/stable-generation".into(), stable);
        }
        let expected = status::last_generation(cr, "apps", "daemonsets", ns, NODE_DAEMONSET_NAME);
        match self.apply_one(&desired, expected).await {
            Ok(generation) => {
                board.record_generation(GenerationStatus {
                    group: "apps".into(),
                    resource: "daemonsets".into(),
                    namespace: ns.into(),
                    name: NODE_DAEMONSET_NAME.into(),
                    last_generation: generation.unwrap_or_default(),
                    hash: String::new(),
                });
                if let Some(ds) = self.cache.typed::<DaemonSet>(
                    "apps/v1",
                    "DaemonSet",
                    Some(ns),
                    NODE_DAEMONSET_NAME,
                ) {
                    for cond in progressing::daemonset_conditions(NODE_PREFIX, &ds).into_vec() {
                        board.set_condition(cond);
                    }
                }
                board.set_condition(conditions::degraded(NODE_PREFIX, None));
                false
            }
            Err(e) => {
                board.set_condition(conditions::degraded(NODE_PREFIX, Some(&e)));
                true
            }
        }
    }

    async fn storage_class_step(
        &self,
        board: &mut StatusBoard,
        facts: &Facts,
        cr: &ClusterCSIDriver,
    ) -> bool {
        let desired = match build::storage_class(facts) {
            Ok(d) => d,
            Err(e) => {
                board.set_condition(conditions::degraded(
                    STORAGE_CLASS_PREFIX,
                    Some(&e.to_string()),
                ));
                return true;
            }
        };
        let result = match cr.spec.storage_class_state() {
            StorageClassState::Managed | StorageClassState::Unset => {
                let mut desired = desired;
                match self.settle_default_class(&mut desired).await {
                    Ok(()) => self.apply_one(&desired, None).await.map(|_| ()),
                    Err(e) => Err(e),
                }
            }
            StorageClassState::Unmanaged => Ok(()),
            StorageClassState::Removed => {
                let name = desired.object.metadata.name.clone().unwrap_or_default();
                match self.applier.delete(&desired.resource, None, &name).await {
                    Ok(deleted) => {
                        if deleted {
                            self.metrics.write("StorageClass", WriteVerb::Delete);
                        }
                        Ok(())
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
            StorageClassState::Unknown(other) => Err(format!(
                "invalid StorageClassState {other}; set spec.storageClassState to Managed, Unmanaged or Removed"
            )),
        };
        match result {
            Ok(()) => {
                board.set_condition(conditions::degraded(STORAGE_CLASS_PREFIX, None));
                false
            }
            Err(e) => {
                board.set_condition(conditions::degraded(STORAGE_CLASS_PREFIX, Some(&e)));
                true
            }
        }
    }

    /// Settles the default-class annotation of `desired` as library-go does (anchors §1.12),
    /// listing the cluster's StorageClasses only when the live class of its name is missing or
    /// has no default-class key (so a steady state reads nothing live).
    async fn settle_default_class(&self, desired: &mut Desired) -> Result<(), String> {
        let name = desired.object.metadata.name.clone().unwrap_or_default();
        let live = match self.cache.lookup(&desired.resource, None, &name) {
            Lookup::Found(o) => Some(o),
            _ => None,
        };
        if !build::default_class_needs_list(&desired.object, live.as_deref()) {
            return Ok(());
        }
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &desired.resource);
        let classes = api
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("cannot list StorageClasses to settle the default class: {e}"))?;
        build::set_default_storage_class(&mut desired.object, &classes.items);
        Ok(())
    }

    /// Waits for the snapshot CRD rather than failing (anchors §4.6).
    async fn snapshot_class_step(&self, board: &mut StatusBoard, facts: &Facts) -> bool {
        let crd = ar("apiextensions.k8s.io/v1", "CustomResourceDefinition");
        let served = matches!(
            self.cache
                .lookup(&crd, None, crate::assets::VOLUME_SNAPSHOT_CLASS_CRD),
            Lookup::Found(_)
        );
        if !served {
            board.set_condition(conditions::degraded(SNAPSHOT_CLASS_PREFIX, None));
            return false;
        }
        let result = match build::volume_snapshot_class(facts) {
            Ok(d) => match self.applier.apply(&d.resource, &d.object, None).await {
                Ok(applied) => {
                    self.metrics.applied("VolumeSnapshotClass", applied.action);
                    Ok(())
                }
                // The CRD was just created and its watch has not caught up: next time.
                Err(ApplyError::KindNotServed { .. }) => Ok(()),
                Err(e) => Err(e.to_string()),
            },
            Err(e) => Err(e.to_string()),
        };
        match result {
            Ok(()) => {
                board.set_condition(conditions::degraded(SNAPSHOT_CLASS_PREFIX, None));
                false
            }
            Err(e) => {
                board.set_condition(conditions::degraded(SNAPSHOT_CLASS_PREFIX, Some(&e)));
                true
            }
        }
    }

    async fn flush(&self, board: &StatusBoard, cr: &DynamicObject, failed: bool) -> Outcome {
        match self.status.flush(board, cr).await {
            Ok(_) if !failed => Outcome::Done {
                requeue_after: None,
            },
            Ok(_) => Outcome::Failed {
                requeue_after: None,
            },
            Err(e) => {
                self.metrics.error("kube_api");
                warn!(error = %e, "cannot write the ClusterCSIDriver status");
                Outcome::Failed {
                    requeue_after: None,
                }
            }
        }
    }
}

/// Lists compute and volume availability zones with the cluster's credentials and decides
/// `enable_topology`; errors name the Secret or the OpenStack step, never a secret value.
async fn list_zones(
    session: Arc<openstack::Session>,
    namespace: String,
    credentials: Option<Secret>,
    ca: Option<Vec<u8>>,
) -> Result<bool, crate::topology::TopologyError> {
    use crate::topology::TopologyError;
    let secret_name = format!("{namespace}/{CREDENTIALS_SECRET}");
    let clouds = credentials
        .as_ref()
        .and_then(|s| s.data.as_ref())
        .and_then(|d| d.get("clouds.yaml"))
        .ok_or_else(|| TopologyError::Lookup(format!("Secret {secret_name} has no clouds.yaml key; it is created from the CredentialsRequest by the cloud credential operator")))?;
    let text = std::str::from_utf8(&clouds.0).map_err(|_| {
        TopologyError::Lookup(format!(
            "clouds.yaml in Secret {secret_name} is not UTF-8 text"
        ))
    })?;
    let cloud = openstack::CloudConfig::from_clouds_yaml(text, openstack::DEFAULT_CLOUD)
        .map_err(|e| TopologyError::Lookup(format!("clouds.yaml in Secret {secret_name}: {e}")))?;
    let options = openstack::ClientOptions {
        ca_bundle: ca,
        request_timeout: Duration::from_secs(30),
        user_agent: USER_AGENT.to_string(),
        ..openstack::ClientOptions::default()
    };
    let client = session
        .client(cloud, &options)
        .map_err(|e| TopologyError::Lookup(e.to_string()))?;
    let compute = client
        .compute_availability_zones()
        .await
        .map_err(|e| TopologyError::Lookup(e.to_string()))?;
    let volume = client
        .volume_availability_zones()
        .await
        .map_err(|e| TopologyError::Lookup(e.to_string()))?;
    let volume: Vec<VolumeZone> = volume
        .into_iter()
        .map(|name| VolumeZone {
            name,
            available: true,
        })
        .collect();
    crate::topology::compute_enable_topology(&compute, &volume)
}

/// A digest of the credentials and CA: when it changes, zones are listed again at once.
fn fingerprint(credentials: Option<&Secret>, ca: Option<&str>) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    if let Some(data) = credentials.and_then(|s| s.data.as_ref()) {
        for (k, v) in data {
            ctx.update(k.as_bytes());
            ctx.update(&[0]);
            ctx.update(&v.0);
            ctx.update(&[0]);
        }
    }
    ctx.update(ca.unwrap_or_default().as_bytes());
    ctx.finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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

/// The prefix used in condition names, for callers and tests.
pub fn condition_prefix() -> &'static str {
    CONTROLLER_NAME_PREFIX
}

impl operator_kit::process::Reconciler for Operator {
    fn reconcile(&mut self) -> impl std::future::Future<Output = Outcome> + Send {
        Operator::reconcile(self)
    }
}
