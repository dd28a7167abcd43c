//! The Manila CSI driver operator at runtime: the driver as operator-kit's [`csi`] describes
//! one, plus its own steps (the check of Manila in [`crate::check`], the CA copy, the
//! CSIDriver, and the StorageClasses in [`crate::storage_classes`]).
//!
//! Until Manila has been found usable once, the reconcile writes one condition,
//! `CSIControllerDisabled=True / PreConditionNotSatisfied`, and nothing else: no object, no
//! Degraded condition, and the process stays up (anchors §5.1). After that every step runs on
//! every reconcile and the driver is never torn down. OpenStack is asked only when a check is
//! due (every `--share-type-refresh`, and at once when the credentials Secret changes); watch
//! events on StorageClasses or CSIDrivers cost no OpenStack request (users file §1.15), and
//! the Keystone token is reused until it expires.
//!
//! The reconcile never waits for OpenStack: a check runs in the background and the reconcile
//! goes on with the last known answer meanwhile, so status writes and `Unmanaged` take effect
//! at once. Until the very first check has answered nothing is written.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::storage::v1::CSIDriver;

use operator_kit::cache::{Cache, CacheBuilder};
use operator_kit::clusters::Clients;
use operator_kit::conditions::{self, OperatorCondition};
use operator_kit::csi::{
    self, BaseFacts, CommonOptions, Flow, Group, Kit, Pass, StepError, Workload, clouds_yaml_of,
};
use operator_kit::kinds::known as ar;
use tracing::debug;

use crate::build::{
    self, BuildError, Desired, DriverFacts, Facts, FsGroupPolicy, controller_desired,
};
use crate::check::ManilaCheck;
pub use crate::check::SERVICE_REACHABLE;
use crate::detect::{self, Status};
pub use crate::export_network::EXPORT_NETWORK_REACHABLE;
use crate::nodes::NodeView;
use crate::{
    CLOUD_PROVIDER_CONFIGMAP, CONFIG_NAMESPACE, CONTROLLER_DEPLOYMENT_NAME, CSI_DRIVER_NAME,
    DRIVER_CREDENTIALS_SECRET, METRICS_SERVING_CERT_SECRET, NFS_DAEMONSET_NAME,
    NODE_DAEMONSET_NAME, OPERATOR_CREDENTIALS_SECRET,
};

/// Condition names, exactly as the Go operator's controllers are named (anchors §5.2).
pub const DISABLED_CONDITION: &str = "CSIControllerDisabled";
/// Reason of [`DISABLED_CONDITION`].
pub const DISABLED_REASON: &str = "PreConditionNotSatisfied";
operator_kit::condition_prefixes!("OpenStackManila");
const NFS_PREFIX: &str = "NFSDriverNodeServiceController";
const RESOURCE_SYNC_PREFIX: &str = "ResourceSyncController";
/// Ours: OpenShift applied the CSIDriver from the precondition and reported its errors in
/// `StarterControllerDegraded`.
const CSI_DRIVER_PREFIX: &str = "OpenStackManilaDriverCSIDriverController";
/// The operand name in ManagementStateDegraded messages: the Go management-state controller's
/// name (`ControllerNamePrefix` + `CSIDriver`), as Cinder's is `OpenStackCinderCSIDriver`.
const OPERAND: &str = "OpenStackManilaCSIDriver";

/// How the operator is started: the kit's common options (it derefs to them) and Manila's own.
#[derive(Debug, Clone)]
pub struct Options {
    /// Namespaces (the operator's, with its lease and `openstack-cloud-credentials`; the
    /// driver's), images, cluster ID, cert-manager, hosted, ClusterCSIDriver creation.
    pub common: CommonOptions,
    /// How often share types are listed again.
    pub share_type_refresh: Duration,
    /// The raw `CSI_FSGROUP_POLICY` value.
    pub fs_group_policy: Option<String>,
}

impl Options {
    /// Standalone defaults with these images.
    pub fn new(images: BTreeMap<String, String>) -> Self {
        Self {
            common: CommonOptions::standalone(&crate::SPEC, images),
            share_type_refresh: detect::DEFAULT_REFRESH,
            fs_group_policy: None,
        }
    }

    /// The namespace of the guest-side objects (`${NODE_NAMESPACE}`).
    pub fn node_namespace(&self) -> String {
        self.common.node_namespace(&crate::SPEC)
    }
}

operator_kit::deref_common_options!(Options);

/// What the operator watches: its CR, the cluster singletons, both of its namespaces, the
/// installer's cloud config namespace, each cluster-scoped object it writes (by name), and its
/// share-type StorageClasses (by label: one watch however many there are).
pub fn watches(clients: impl Into<Clients>, opts: &Options) -> Result<CacheBuilder, BuildError> {
    let mut builder = csi::base_watches(
        CacheBuilder::new(
            clients,
            [
                opts.operator_namespace.clone(),
                opts.namespace.clone(),
                opts.node_namespace(),
            ],
        ),
        CSI_DRIVER_NAME,
    )
    .in_namespace(&ar("v1", "ConfigMap"), CONFIG_NAMESPACE);
    builder = builder
        .namespaced(&ar("v1", "ConfigMap"))
        .cluster_selected(
            &ar("storage.k8s.io/v1", "StorageClass"),
            &crate::storage_classes::CLASSES.selector(),
        )
        // The extra classes of the driver settings (operator_kit::settings).
        .cluster_selected(
            &ar("storage.k8s.io/v1", "StorageClass"),
            &operator_kit::settings::extra_class_selector(CSI_DRIVER_NAME),
        );
    // Secrets by name only, so the Role can name them: the operator never needs to see a
    // Secret it does not know (a namespace-wide watch would read every credential there).
    for (namespace, name) in secrets_read(opts) {
        builder = builder.namespaced_object(&ar("v1", "Secret"), namespace, name);
    }
    // The controller Deployment in `namespace`, the node DaemonSets in the node namespace
    // (the same unless hosted, where the control-plane namespace has no DaemonSet and its Role
    // grants none).
    builder = builder
        .in_namespace(&ar("apps/v1", "Deployment"), &opts.namespace)
        .in_namespace(&ar("apps/v1", "DaemonSet"), &opts.node_namespace());
    if opts.hosted.is_some() {
        builder = operator_kit::hosted::watch(builder, &opts.namespace);
        let node_ns = opts.node_namespace();
        // The node plugins' mounts in the guest (the controller's `openstack-cloud-config` is
        // mounted, not read).
        builder = build::MOUNTS.hosted_reads(&node_ns).watch(
            builder,
            &[&opts.operator_namespace, &opts.namespace, &node_ns],
        );
    }
    let (objects, _) = build::everything(&placeholder_facts(opts), &[])?;
    // Written Secrets are among `secrets_read`, watched by name above.
    Ok(csi::watch_written(
        builder,
        objects,
        opts.cert_manager.is_some(),
    ))
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
    let images = crate::assets::ASSETS.image_placeholders();
    let base = BaseFacts::placeholder(&opts.namespace, &opts.images, &images)
        .with_node_side(&opts.node_namespace(), opts.hosted.clone());
    Facts::new(base, DriverFacts::default())
}

impl csi::DriverOptions for Options {
    type Driver = Manila;
    const SPEC: &'static operator_kit::spec::DriverSpec = &crate::SPEC;
    const ASSETS: operator_kit::assets::AssetSet = crate::assets::ASSETS;
    fn into_driver(self, clients: &Clients, cache: &Cache) -> Manila {
        Manila {
            check: ManilaCheck::new(self.operator_namespace.clone(), self.share_type_refresh),
            nodes: NodeView::start(clients.guest().clone(), cache.nudger()),
            opts: self,
            share_types: Vec::new(),
            gone: Vec::new(),
        }
    }
}

/// The Manila driver, described for operator-kit.
pub struct Manila {
    opts: Options,
    check: ManilaCheck,
    /// The nodes' addresses, for the export-network diagnostic.
    nodes: NodeView,
    /// Share types of the latest successful listing, and those gone since.
    share_types: Vec<String>,
    gone: Vec<String>,
}

impl csi::Driver for Manila {
    type Own = DriverFacts;
    const MOUNTS: csi::Mounts = build::MOUNTS;
    const CR_NAME: &'static str = CSI_DRIVER_NAME;
    const OPERAND: &'static str = OPERAND;
    const CONTROLLER_NAME_PREFIX: &'static str = "OpenStackManila";
    /// Condition types OpenShift's Go Manila operators wrote and this one does not: the
    /// conditional static-resources controller's, the static-resources controller's, and the
    /// legacy standalone operator's Disabled and Degraded (anchors §5.1). Removed on every
    /// reconcile, so after a takeover none of them stays on the CR as the Go operator left it
    /// (a Degraded=True there would never clear, a Disabled=True would hide the driver).
    const RETIRED_CONDITIONS: &'static [&'static str] = &[
        "ManilaDriverConditionalStaticResourcesControllerDegraded",
        "ManilaDriverStaticResourcesControllerDegraded",
        "ManilaControllerDisabled",
        "ManilaControllerDegraded",
    ];

    /// Nothing is deployed until Manila has been usable once.
    async fn prepare(&mut self, kit: &Kit, pass: &mut Pass) -> Flow {
        pass.board.set_condition(self.insecure_connection(kit));
        let (status, requeue) = self.check.status(kit, &self.cluster_id(kit));
        pass.requeue_after = requeue;
        let error = match status {
            Status::Unknown => {
                // The first check runs and nudges when it has answered. Nothing is known
                // yet that is worth a write: not Disabled, not Degraded.
                debug!("waiting for the first answer of OpenStack about Manila");
                return Flow::Stop;
            }
            Status::Disabled(failure) => {
                // Nothing deployed, not Degraded: CSO reports the driver as disabled.
                pass.board.set_condition(OperatorCondition::new(
                    DISABLED_CONDITION,
                    conditions::TRUE,
                    DISABLED_REASON,
                    format!("Pre-condition not satisfied: {}", failure.message),
                ));
                return Flow::StatusOnly;
            }
            Status::Enabled {
                share_types,
                gone,
                error,
            } => {
                self.share_types = share_types;
                self.gone = gone;
                error
            }
        };
        pass.board.remove_condition(DISABLED_CONDITION);
        for c in self.check.starter_conditions(error.as_ref()) {
            pass.board.set_condition(c);
        }
        if let Some(c) = self.check.export_network_condition(&self.nodes.known()) {
            pass.board.set_condition(c);
        }
        Flow::Continue
    }

    /// The share-type classes `csi-manila-<share type>`.
    fn reserved_storage_class(&self, name: &str) -> bool {
        name.starts_with(crate::STORAGE_CLASS_PREFIX)
    }

    fn own_facts(&self, _kit: &Kit, _base: &BaseFacts) -> DriverFacts {
        let policy = FsGroupPolicy::parse(self.opts.fs_group_policy.as_deref());
        DriverFacts {
            fs_group_policy: policy.unwrap_or_default(),
        }
    }

    fn static_groups(&self, kit: &Kit, facts: &Facts) -> Vec<Group> {
        // The Namespace is created when missing and otherwise left to its owner (CSO on
        // OpenShift): the apply engine cannot update a Namespace read from the watch cache
        // yet (the cached copy has no kind; reported to operator-kit).
        // Hosted, the Namespace is the guest's and comes with the guest group.
        let missing = |objects: Vec<Desired>| -> Vec<Desired> {
            objects
                .into_iter()
                .filter(|d| {
                    d.resource.kind != "Namespace"
                        || d.object.metadata.name.as_deref().is_none_or(|name| {
                            kit.cache.get_object::<Namespace>(None, name).is_none()
                        })
                })
                .collect()
        };
        vec![
            Group {
                prefix: CP_STATIC_PREFIX,
                objects: build::control_plane_static(facts).map(missing),
            },
            Group {
                prefix: GUEST_STATIC_PREFIX,
                objects: build::guest_static(facts).map(missing),
            },
        ]
    }

    async fn before_workloads(&mut self, kit: &Kit, pass: &mut Pass, facts: &mut Facts) {
        pass.post(
            RESOURCE_SYNC_PREFIX,
            resource_sync(kit, facts.node_namespace()).await,
        );
        pass.post(CSI_DRIVER_PREFIX, self.csi_driver(kit, facts).await);
    }

    fn controller(&self, facts: &Facts) -> Workload {
        let desired = controller_desired(facts);
        Workload::new(CONTROLLER_PREFIX, CONTROLLER_DEPLOYMENT_NAME, desired)
    }

    fn daemonsets(&self, facts: &Facts) -> Vec<Workload> {
        vec![
            Workload::new(NODE_PREFIX, NODE_DAEMONSET_NAME, build::node_desired(facts)),
            Workload::new(NFS_PREFIX, NFS_DAEMONSET_NAME, build::nfs_desired(facts)),
        ]
    }

    async fn after_workloads(&mut self, kit: &Kit, pass: &mut Pass, facts: &Facts) {
        let ns = facts.node_namespace();
        crate::storage_classes::step(kit, pass, ns, &self.share_types, &self.gone).await;
    }

    fn snapshot_class(&self, facts: &Facts) -> Result<Desired, BuildError> {
        build::volume_snapshot_class(facts)
    }
}

impl Manila {
    /// The cluster ID the driver tags its shares with (`--cluster-id`): Infrastructure
    /// `status.infrastructureName`, else `--cluster-id` of the operator; empty when neither.
    fn cluster_id(&self, kit: &Kit) -> String {
        let infra: Option<openshift_api::config::Infrastructure> =
            kit.cache
                .get::<openshift_api::config::Infrastructure>(None, "cluster");
        infra
            .as_ref()
            .and_then(|i| i.infrastructure_name().map(str::to_string))
            .or_else(|| self.opts.cluster_id.clone())
            .unwrap_or_default()
    }

    /// `InsecureOpenStackConnection` over both clouds.yaml files this operator deals with: its
    /// own (for the share-type listing) and the driver's.
    fn insecure_connection(&self, kit: &Kit) -> OperatorCondition {
        let (op_ns, ns) = (&self.opts.operator_namespace, &self.opts.namespace);
        let operator = kit.cache.secret(op_ns, OPERATOR_CREDENTIALS_SECRET);
        let driver = kit.cache.secret(ns, DRIVER_CREDENTIALS_SECRET);
        conditions::insecure_connection(
            &[
                (
                    &format!("{op_ns}/{OPERATOR_CREDENTIALS_SECRET}"),
                    clouds_yaml_of(operator.as_ref()),
                ),
                (
                    &format!("{ns}/{DRIVER_CREDENTIALS_SECRET}"),
                    clouds_yaml_of(driver.as_ref()),
                ),
            ],
            |b| openstack::insecure_settings_in(b, openstack::DEFAULT_CLOUD),
        )
    }

    /// The one writer of the CSIDriver (anchors §8.3 fixed). An invalid `CSI_FSGROUP_POLICY`
    /// is reported and leaves a live CSIDriver as it is.
    async fn csi_driver(&self, kit: &Kit, facts: &Facts) -> Result<(), StepError> {
        let policy = FsGroupPolicy::parse(self.opts.fs_group_policy.as_deref());
        let desired = build::csi_driver(facts)?;
        let exists = kit
            .cache
            .get_object::<CSIDriver>(None, CSI_DRIVER_NAME)
            .is_some();
        if policy.is_ok() || !exists {
            kit.apply(&desired, None).await?;
        }
        policy.map(|_| ()).map_err(StepError::other)
    }
}

/// Copies `openshift-config/cloud-provider-config` into the driver namespace `ns` (the
/// guest's when hosted) for the node pods' `cacert` volume; deletes the copy when the source
/// is gone (anchors §5.2, §3.6).
async fn resource_sync(kit: &Kit, ns: &str) -> Result<(), StepError> {
    match kit
        .cache
        .config_map(CONFIG_NAMESPACE, CLOUD_PROVIDER_CONFIGMAP)
    {
        Some(source) => {
            kit.apply(&build::cloud_provider_config_copy(ns, &source)?, None)
                .await?;
        }
        None => {
            kit.applier
                .delete(&ar("v1", "ConfigMap"), Some(ns), CLOUD_PROVIDER_CONFIGMAP)
                .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use operator_kit::status::StatusBoard;
    use operator_kit::steps;

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
}
