//! The SMB CSI driver operator: installs kubernetes-csi's csi-driver-smb (`smb.csi.k8s.io`,
//! CIFS/SMB shares as volumes) and reports through its ClusterCSIDriver, as OpenShift's
//! `smb-csi-driver-operator` (openshift/csi-operator, `pkg/driver/samba`) does.
//!
//! The whole driver is a description for operator-kit's reconcile ([`Smb`]): its YAML assets,
//! the kit's [`BaseFacts`] (an SMB share needs no cloud, so there are no credentials, no cloud
//! config and no facts of its own), two static groups, the controller Deployment and the node
//! DaemonSet. It has no StorageClass (an administrator writes one per share, with its
//! `source` and credentials Secret) and no VolumeSnapshotClass, as OpenShift ships none.
//! Standalone clusters only, as OpenShift's (`StandaloneOnly`).
//!
//! Names, condition prefixes (`Samba…`) and ports are OpenShift's; the assets are ours.
//! Nothing here reads the environment or does I/O but [`watches`] and the kit's reconcile.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use operator_kit::asset;
use operator_kit::assets::Asset;
use operator_kit::cache::{Cache, CacheBuilder};
use operator_kit::clusters::Clients;
use operator_kit::csi::{self, BaseFacts, CsiOperator, Driver, Group, Kit, Settings, Workload};
use operator_kit::desired::{self, BuildError, Desired};
use operator_kit::kinds::known as ar;
use operator_kit::logging::LogControl;
use operator_kit::metrics::Metrics;
use operator_kit::spec::{self, DriverAssets, DriverSpec, ImageVar, RBAC_GROUP, Related};

/// The CSI driver, its CSIDriver and its ClusterCSIDriver.
pub const CSI_DRIVER_NAME: &str = "smb.csi.k8s.io";
/// Where the operator and the driver run (OpenShift's OLM default for it).
pub const NAMESPACE: &str = "openshift-cluster-csi-drivers";
/// The operator's user agent and Event source.
pub const USER_AGENT: &str = "smb-csi-driver-operator";
/// The operator's own Deployment (the object its Events are about).
pub const OPERATOR_DEPLOYMENT_NAME: &str = "smb-csi-driver-operator";
/// The operator's leader-election Lease.
pub const OPERATOR_LOCK_NAME: &str = "smb-csi-driver-operator-lock";
/// The controller Deployment.
pub const CONTROLLER_DEPLOYMENT_NAME: &str = "smb-csi-driver-controller";
/// The node DaemonSet.
pub const NODE_DAEMONSET_NAME: &str = "smb-csi-driver-node";

/// The controller's metrics serving certificate (service-ca on OpenShift; on plain Kubernetes
/// the operator issues it, so it watches it by name).
pub const METRICS_SERVING_CERT_SECRET: &str = "smb-csi-driver-controller-metrics-serving-cert";

/// The operator's objects as the Cluster Storage Operator applies them (`assets/operator/`).
pub const OPERATOR_ASSETS: DriverAssets = operator_kit::driver_assets!("smb", "../assets/operator");

/// A related object of [`SPEC`]: RBAC kinds in their group, namespaced ones in [`NAMESPACE`].
const fn related(resource: &'static str, namespaced: bool, name: &'static str) -> Related {
    let rbac = !matches!(resource.as_bytes(), b"serviceaccounts");
    Related {
        group: if rbac { RBAC_GROUP } else { "" },
        resource,
        namespace: if namespaced { NAMESPACE } else { "" },
        name,
    }
}

/// SMB, declared once: what the CSO registry (an optional driver there, started only when the
/// administrator opts in) and the binary read. Not in OpenShift's CSO, which leaves SMB to OLM;
/// the names are those of OpenShift's OLM-installed operator.
pub const SPEC: DriverSpec = DriverSpec {
    name: "smb",
    cluster_csi_driver: CSI_DRIVER_NAME,
    operand: "SambaCSIDriver",
    controller_name_prefix: "Samba",
    condition_prefix: "Samba",
    platform: spec::ANY_PLATFORM,
    operator_deployment: OPERATOR_DEPLOYMENT_NAME,
    operator_namespace: NAMESPACE,
    driver_namespace: NAMESPACE,
    lock_name: OPERATOR_LOCK_NAME,
    user_agent: USER_AGENT,
    metrics_prefix: "smb_csi_driver_operator",
    metrics_serving_cert_secret: METRICS_SERVING_CERT_SECRET,
    image_vars: &[
        ImageVar {
            placeholder: "${OPERATOR_IMAGE}",
            cso_env: "SMB_DRIVER_OPERATOR_IMAGE",
        },
        ImageVar {
            placeholder: "${DRIVER_IMAGE}",
            cso_env: "SMB_DRIVER_IMAGE",
        },
    ],
    allow_disabled: false,
    syncs_cloud_ca: false,
    related_objects: &[
        related("serviceaccounts", true, "smb-csi-driver-operator"),
        related("roles", true, "smb-csi-driver-operator-role"),
        related("rolebindings", true, "smb-csi-driver-operator-rolebinding"),
        related("clusterroles", false, "smb-csi-driver-operator-clusterrole"),
        related(
            "clusterrolebindings",
            false,
            "smb-csi-driver-operator-clusterrolebinding",
        ),
    ],
    olm: None,
    assets: &OPERATOR_ASSETS,
    hosted: None,
};

/// Condition prefixes: library-go's controllers with OpenShift's `Samba` name prefix.
pub const CONTROL_PLANE_STATIC_PREFIX: &str = "SambaDriverControlPlaneStaticResourcesController";
pub const GUEST_STATIC_PREFIX: &str = "SambaDriverGuestStaticResourcesController";
pub const CONTROLLER_PREFIX: &str = "SambaDriverControllerServiceController";
pub const NODE_PREFIX: &str = "SambaDriverNodeServiceController";

/// The controller Deployment asset.
pub const CONTROLLER: Asset = asset!("controller.yaml");
/// The node DaemonSet asset.
pub const NODE: Asset = asset!("node.yaml");
/// The controller's side: its account, disruption budget, metrics and their RBAC.
pub const CONTROL_PLANE_STATIC: &[Asset] = &[
    asset!("controller_sa.yaml"),
    asset!("controller_pdb.yaml"),
    asset!("kube_rbac_proxy_role.yaml"),
    asset!("kube_rbac_proxy_binding.yaml"),
    asset!("prometheus_role.yaml"),
    asset!("prometheus_binding.yaml"),
    asset!("service.yaml"),
    asset!("servicemonitor.yaml", crd = csi::SERVICE_MONITOR_CRD),
];
/// The node's side and the sidecars' RBAC (roles before bindings), then the CSIDriver.
pub const GUEST_STATIC: &[Asset] = &[
    asset!("node_sa.yaml"),
    asset!("privileged_role.yaml"),
    asset!("lease_leader_election_role.yaml"),
    asset!("lease_leader_election_binding.yaml"),
    asset!("main_provisioner_binding.yaml"),
    asset!("main_resizer_binding.yaml"),
    asset!("storageclass_reader_resizer_binding.yaml"),
    asset!("controller_privileged_binding.yaml"),
    asset!("node_privileged_binding.yaml"),
    asset!("csidriver.yaml"),
];

/// Every asset, for the image list and the tests.
pub fn assets() -> impl Iterator<Item = &'static Asset> {
    CONTROL_PLANE_STATIC
        .iter()
        .chain(GUEST_STATIC)
        .chain([&CONTROLLER, &NODE])
}

/// The images the assets use (`DRIVER_IMAGE` and the sidecars'), read from the environment.
pub fn image_placeholders() -> Vec<&'static str> {
    operator_kit::assets::image_placeholders(assets())
}

/// The static objects of `assets`.
pub fn statics(facts: &BaseFacts, assets: &[Asset]) -> Result<Vec<Desired>, BuildError> {
    let repl = facts.replacements();
    assets
        .iter()
        .map(|a| desired::from_asset(a, &repl))
        .collect()
}

/// The controller Deployment, placed by the topology, with the observed proxy.
pub fn controller(facts: &BaseFacts) -> Result<Desired, BuildError> {
    let mut d: Deployment = CONTROLLER.render_object(&facts.replacements())?;
    facts.place_controller(&mut d);
    desired::from_typed(CONTROLLER.name, None, &d)
}

/// The node DaemonSet, with the observed proxy.
pub fn node(facts: &BaseFacts) -> Result<Desired, BuildError> {
    let mut ds: DaemonSet = NODE.render_object(&facts.replacements())?;
    operator_kit::hooks::inject_proxy(&mut ds, &facts.proxy);
    desired::from_typed(NODE.name, None, &ds)
}

/// Every object the operator applies, in order (what `render smb` prints).
pub fn everything(facts: &BaseFacts) -> Result<Vec<Desired>, BuildError> {
    let mut out = statics(facts, CONTROL_PLANE_STATIC)?;
    out.extend(statics(facts, GUEST_STATIC)?);
    out.push(controller(facts)?);
    out.push(node(facts)?);
    Ok(out)
}

/// The SMB driver, described for operator-kit.
pub struct Smb;

impl Driver for Smb {
    type Facts = BaseFacts;
    const CR_NAME: &'static str = CSI_DRIVER_NAME;
    const OPERAND: &'static str = SPEC.operand;
    const CONTROLLER_NAME_PREFIX: &'static str = SPEC.controller_name_prefix;

    fn facts(&self, _kit: &Kit, base: BaseFacts) -> BaseFacts {
        base
    }
    fn static_groups(&self, _kit: &Kit, facts: &BaseFacts) -> Vec<Group> {
        vec![
            Group {
                prefix: CONTROL_PLANE_STATIC_PREFIX,
                objects: statics(facts, CONTROL_PLANE_STATIC),
            },
            Group {
                prefix: GUEST_STATIC_PREFIX,
                objects: statics(facts, GUEST_STATIC),
            },
        ]
    }
    fn controller(&self, facts: &BaseFacts) -> Workload {
        Workload {
            prefix: CONTROLLER_PREFIX,
            name: CONTROLLER_DEPLOYMENT_NAME,
            desired: controller(facts),
        }
    }
    fn daemonsets(&self, facts: &BaseFacts) -> Vec<Workload> {
        vec![Workload {
            prefix: NODE_PREFIX,
            name: NODE_DAEMONSET_NAME,
            desired: node(facts),
        }]
    }
}

/// How the operator is started.
#[derive(Debug, Clone)]
pub struct Options {
    /// The namespace of the operator and the driver.
    pub namespace: String,
    /// Image env vars and `OPERATOR_IMAGE_VERSION`.
    pub images: BTreeMap<String, String>,
    /// Cluster ID when there is no Infrastructure object (plain Kubernetes).
    pub cluster_id: Option<String>,
    /// Have cert-manager issue the metrics serving certificate (plain Kubernetes).
    pub cert_manager: Option<operator_kit::cert_manager::CertManager>,
}

/// What the operator watches: the kit's base watches, its namespace's ConfigMaps (the driver
/// settings), the extra StorageClasses of the settings, its workloads, the metrics serving
/// certificate Secret (by name: no other Secret), and every object it applies (cluster-scoped
/// ones by name).
pub fn watches(clients: impl Into<Clients>, opts: &Options) -> Result<CacheBuilder, BuildError> {
    let ns = opts.namespace.as_str();
    let mut builder = csi::base_watches(CacheBuilder::new(clients, [ns]), CSI_DRIVER_NAME)
        .namespaced(&ar("v1", "ConfigMap"))
        .cluster_selected(
            &ar("storage.k8s.io/v1", "StorageClass"),
            &operator_kit::settings::extra_class_selector(CSI_DRIVER_NAME),
        )
        .in_namespace(&ar("apps/v1", "Deployment"), ns)
        .in_namespace(&ar("apps/v1", "DaemonSet"), ns);
    let objects = everything(&BaseFacts::placeholder(
        ns,
        &opts.images,
        &image_placeholders(),
    ))?;
    // The metrics serving certificate, by name: on plain Kubernetes the kit issues it and
    // must see it, or it would write it again on every reconcile.
    let requests = operator_kit::metrics_cert::requests(&objects);
    for r in &requests {
        builder = builder.namespaced_object(&ar("v1", "Secret"), &r.namespace, &r.secret);
    }
    if opts.cert_manager.is_some() {
        builder = operator_kit::cert_manager::register(
            builder,
            requests.iter().map(|r| r.namespace.as_str()),
        );
    }
    Ok(objects
        .iter()
        .fold(builder, |b, d| b.object(&d.resource, &d.object)))
}

/// The operator: operator-kit's reconcile around [`Smb`].
pub fn operator(
    clients: impl Into<Clients>,
    opts: Options,
    cache: Cache,
    metrics: Arc<Metrics>,
    log: LogControl,
) -> CsiOperator<Smb> {
    let settings = Settings {
        events_about: csi::events_about(&opts.namespace, OPERATOR_DEPLOYMENT_NAME),
        node_namespace: opts.namespace.clone(),
        namespace: opts.namespace,
        hosted_env: Default::default(),
        user_agent: USER_AGENT,
        images: opts.images,
        cluster_id: opts.cluster_id,
        cert_manager: opts.cert_manager,
    };
    CsiOperator::new(clients, cache, metrics, log, settings, Smb)
}
