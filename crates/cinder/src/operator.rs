//! The Cinder CSI driver operator at runtime: the driver as operator-kit's [`csi`] describes
//! one (its default StorageClass declared for the kit's step), plus its own steps (the
//! cloud-config sync in [`crate::config_sync`], the volume-type classes, Helm adoption).
//!
//! Every step reads the same snapshot (from watch caches), builds its objects with the pure
//! functions of `build`, applies them with the one apply engine and yields its own
//! conditions, named as OpenShift names them so the Cluster Storage Operator and users' alerts
//! keep working. A failing step never stops the others; the reconcile then retries with
//! backoff. OpenStack is only asked for availability zones, on a timer and when credentials
//! change.

use std::collections::BTreeMap;
use std::time::Duration;

use operator_kit::cache::{Cache, CacheBuilder};
use operator_kit::clusters::Clients;
use operator_kit::csi::{self, BaseFacts, CommonOptions, Group, Kit, Pass, Workload};
use operator_kit::kinds::known as ar;

use crate::adoption::Adoption;
use crate::build::{self, BuildError, Desired, DriverFacts, Facts, controller_desired};
use crate::config;
use crate::config_sync::ConfigSync;
use crate::volume_type_classes::VolumeTypeClasses;
use crate::{
    CONTROLLER_DEPLOYMENT_NAME, CONTROLLER_NAME_PREFIX, CREDENTIALS_SECRET, CSI_DRIVER_NAME,
    METRICS_SERVING_CERT_SECRET, NODE_DAEMONSET_NAME,
};

// Condition-name prefixes, exactly as the Go operator's controllers are named (anchors §4.1).
operator_kit::condition_prefixes!("OpenStackCinder");

/// How the operator is started: the kit's common options (it derefs to them) and Cinder's own.
#[derive(Debug, Clone)]
pub struct Options {
    /// Namespaces, images, cluster ID, cert-manager, hosted, ClusterCSIDriver creation. Cinder's
    /// operator and driver share one namespace (`operator_namespace` == `namespace`).
    pub common: CommonOptions,
    /// How often availability zones are listed again (users file §1.1); `0` means once per set
    /// of credentials.
    pub topology_refresh: Duration,
    /// Adopt the upstream chart's CSIDriver and StorageClasses from this Helm release
    /// (`--adopt-helm-release`; [`crate::adoption`]).
    pub adopt_helm_release: Option<crate::helm_adoption::Release>,
}

impl Options {
    /// Standalone defaults with these images.
    pub fn new(images: BTreeMap<String, String>) -> Self {
        Self {
            common: CommonOptions::standalone(&crate::SPEC, images),
            topology_refresh: Duration::from_secs(600),
            adopt_helm_release: None,
        }
    }

    /// The namespace of the guest-side objects (`${NODE_NAMESPACE}`).
    pub fn node_namespace(&self) -> String {
        self.common.node_namespace(&crate::SPEC)
    }
}

operator_kit::deref_common_options!(Options);

/// What the operator watches: its CR, the cluster singletons, its namespace's objects (its
/// Secrets by name), and each cluster-scoped object it writes (by name, so memory does not
/// grow with the cluster).
pub fn watches(clients: impl Into<Clients>, opts: &Options) -> Result<CacheBuilder, BuildError> {
    let ns = opts.namespace.as_str();
    let node_ns = opts.node_namespace();
    let mut builder = csi::base_watches(
        CacheBuilder::new(clients, [ns.to_string(), node_ns.clone()]),
        CSI_DRIVER_NAME,
    )
    .in_namespace(&ar("v1", "ConfigMap"), config::USER_CONFIG_NAMESPACE)
    // The opt-in per-volume-type classes: names known only once Cinder answers.
    .cluster_selected(
        &ar("storage.k8s.io/v1", "StorageClass"),
        &crate::volume_types::CLASSES.selector(),
    )
    // The extra classes of the driver settings (operator_kit::settings).
    .cluster_selected(
        &ar("storage.k8s.io/v1", "StorageClass"),
        &operator_kit::settings::extra_class_selector(CSI_DRIVER_NAME),
    );
    // The controller Deployment lives in `ns`, the node DaemonSet in `node_ns` (the same
    // namespace unless hosted, where the control-plane namespace has no DaemonSet and its
    // Role grants none).
    builder = builder
        .namespaced(&ar("v1", "ConfigMap"))
        .in_namespace(&ar("apps/v1", "Deployment"), ns)
        .in_namespace(&ar("apps/v1", "DaemonSet"), &node_ns);
    // Secrets by name only, so the Role can name them: a namespace-wide watch would read
    // every credential of the namespace, other operators' included. Hosted, the guest's
    // namespace has the node plugin's copies.
    for namespace in [ns, node_ns.as_str()] {
        for (namespace, name) in secrets_read(namespace) {
            builder = builder.namespaced_object(&ar("v1", "Secret"), namespace, name);
        }
    }
    if opts.hosted.is_some() {
        builder = operator_kit::hosted::watch(builder, ns);
        // The node plugins' mounts in the guest, and the CA config sync copies here.
        let mut reads = build::MOUNTS.hosted_reads(&node_ns);
        reads.config_maps.push((
            ns.to_string(),
            operator_kit::hosted::CLOUD_CA_CONFIG_MAP.into(),
        ));
        builder = reads.watch(builder, &[ns, node_ns.as_str()]);
    }
    // The chart's classes, by name, when they are to be adopted (and kept after `helm
    // uninstall` deletes them). The adoption record is a ConfigMap of `ns`, watched above.
    if opts.adopt_helm_release.is_some() {
        for name in crate::helm_adoption::CHART_STORAGE_CLASSES {
            builder = builder.cluster_object(&ar("storage.k8s.io/v1", "StorageClass"), name);
        }
    }
    // Register every desired object; placeholder values do not change names or kinds.
    let base = BaseFacts::placeholder(
        ns,
        &opts.images,
        &crate::assets::ASSETS.image_placeholders(),
    )
    .with_node_side(&node_ns, opts.hosted.clone());
    let objects = build::everything(&Facts::new(base, DriverFacts::default()))?;
    // A Secret it writes is among `secrets_read`, watched by name above.
    Ok(csi::watch_written(
        builder,
        objects,
        opts.cert_manager.is_some(),
    ))
}

/// Every Secret the operator reads, as (namespace, name), in its namespace `namespace`: the
/// OpenStack credentials (its own calls and the driver's config; their hash rolls the pods)
/// and the driver's metrics serving certificate (its hash rolls the controller; issued here
/// where no service-ca does). The Role grants `get`, `list` and `watch` on these names only
/// (`assets/openstack-cinder/roles.yaml` of the CSO).
pub fn secrets_read(namespace: &str) -> [(&str, &'static str); 2] {
    [
        (namespace, CREDENTIALS_SECRET),
        (namespace, METRICS_SERVING_CERT_SECRET),
    ]
}

impl csi::DriverOptions for Options {
    type Driver = Cinder;
    const SPEC: &'static operator_kit::spec::DriverSpec = &crate::SPEC;
    const ASSETS: operator_kit::assets::AssetSet = crate::assets::ASSETS;
    fn into_driver(self, _clients: &Clients, _cache: &Cache) -> Cinder {
        Cinder {
            config_sync: ConfigSync::new(self.topology_refresh),
            volume_types: VolumeTypeClasses::new(self.topology_refresh),
            adoption: self.adopt_helm_release.map(Adoption::new),
        }
    }
}

/// The Cinder driver, described for operator-kit.
pub struct Cinder {
    config_sync: ConfigSync,
    volume_types: VolumeTypeClasses,
    /// `--adopt-helm-release`: the chart's objects to take over, and when to start ours.
    adoption: Option<Adoption>,
}

impl csi::Driver for Cinder {
    type Own = DriverFacts;
    const MOUNTS: csi::Mounts = build::MOUNTS;
    const CR_NAME: &'static str = CSI_DRIVER_NAME;
    const OPERAND: &'static str = "OpenStackCinderCSIDriver";
    const CONTROLLER_NAME_PREFIX: &'static str = CONTROLLER_NAME_PREFIX;
    /// Condition types OpenShift's Go Cinder operators wrote and this one does not: the
    /// legacy standalone operator's static-resources controller, and the conditional one
    /// whose stale condition Go's `StaleConditionRemovalController` meant to remove but never
    /// matched (anchors §4.1, §8). Removed on every reconcile, so after a takeover none of
    /// them stays on the CR as the Go operator left it (a Degraded=True there would never
    /// clear).
    const RETIRED_CONDITIONS: &'static [&'static str] = &[
        "OpenStackCinderDriverStaticResourcesControllerDegraded",
        "OpenStackCinderDriverConditionalStaticResourcesControllerDegraded",
    ];

    /// `standard-csi`, the per-volume-type classes `csi-cinder-<type>` and, when adopting a
    /// Helm release, the chart's classes.
    fn reserved_storage_class(&self, name: &str) -> bool {
        name == "standard-csi"
            || name.starts_with("csi-cinder-")
            || crate::helm_adoption::CHART_STORAGE_CLASSES.contains(&name)
    }

    /// Config sync: cloud-conf, with enable_topology from OpenStack (its hash rolls the pods).
    async fn configure(&mut self, kit: &Kit, pass: &mut Pass, facts: &mut Facts) {
        facts.driver.cloud_conf = self.config_sync.step(kit, pass, facts).await;
        if let Some(adoption) = self.adoption.as_mut() {
            adoption.before(kit, pass).await;
        }
    }

    fn static_groups(&self, _kit: &Kit, facts: &Facts) -> Vec<Group> {
        vec![
            Group {
                prefix: CP_STATIC_PREFIX,
                objects: build::control_plane_static(facts),
            },
            Group {
                prefix: GUEST_STATIC_PREFIX,
                objects: build::guest_static(facts).and_then(|mut objects| {
                    if let Some(adoption) = &self.adoption {
                        adoption.csi_driver(&mut objects)?;
                    }
                    Ok(objects)
                }),
            },
        ]
    }

    fn controller(&self, facts: &Facts) -> Workload {
        let desired = controller_desired(facts);
        Workload::new(CONTROLLER_PREFIX, CONTROLLER_DEPLOYMENT_NAME, desired)
    }

    fn daemonsets(&self, facts: &Facts) -> Vec<Workload> {
        vec![Workload::new(
            NODE_PREFIX,
            NODE_DAEMONSET_NAME,
            build::node_desired(facts),
        )]
    }

    async fn after_workloads(&mut self, kit: &Kit, pass: &mut Pass, _facts: &Facts) {
        self.volume_types.step(kit, pass).await;
        if let Some(adoption) = self.adoption.as_mut() {
            adoption.after(kit, pass).await;
        }
    }

    fn storage_class(&self, facts: &Facts) -> Option<Result<Desired, BuildError>> {
        Some(build::storage_class(facts))
    }

    fn snapshot_class(&self, facts: &Facts) -> Result<Desired, BuildError> {
        build::volume_snapshot_class(facts)
    }
}

/// The prefix used in condition names, for callers and tests.
pub fn condition_prefix() -> &'static str {
    CONTROLLER_NAME_PREFIX
}
