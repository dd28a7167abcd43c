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

use operator_kit::assets::{Asset, AssetSet};
use operator_kit::cache::{Cache, CacheBuilder};
use operator_kit::clusters::Clients;
use operator_kit::csi::shared::Prefixes;
use operator_kit::csi::{
    self, BaseFacts, CommonOptions, Driver, Facts, Group, Kit, Mounts, Workload,
};
use operator_kit::desired::{self, BuildError, Desired};
use operator_kit::kinds::known as ar;
use operator_kit::spec::{self, DriverAssets, DriverSpec, ImageVar, RBAC_GROUP, Related};
use operator_kit::{asset, asset_list};

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

// Condition prefixes: library-go's controllers with OpenShift's `Samba` name prefix.
operator_kit::condition_prefixes!("Samba");

/// OpenShift's names for SMB's sidecar objects (`smb-csi-driver-…`, `smb-…`).
pub const PREFIXES: Prefixes = Prefixes {
    asset: "smb-csi-driver",
    short: "smb",
};

/// The controller Deployment (`smb-csi-driver-controller`).
pub const CONTROLLER: Asset = asset!("controller.yaml");
/// The node DaemonSet (`smb-csi-driver-node`).
pub const NODE: Asset = asset!("node.yaml");
/// Static objects of the driver namespace's control-plane side (the apply waves order them).
pub const CONTROL_PLANE_STATIC: &[Asset] = asset_list![PREFIXES;
    CONTROLLER_SA, "controller_pdb.yaml", KUBE_RBAC_PROXY_ROLE, KUBE_RBAC_PROXY_BINDING,
    PROMETHEUS_ROLE, PROMETHEUS_BINDING, "service.yaml",
    "servicemonitor.yaml" => csi::SERVICE_MONITOR_CRD,
];
/// Static objects of the guest side (the same cluster: SMB runs standalone only).
pub const GUEST_STATIC: &[Asset] = asset_list![PREFIXES;
    NODE_SA, PRIVILEGED_ROLE, LEASE_LEADER_ELECTION_ROLE, LEASE_LEADER_ELECTION_BINDING,
    MAIN_PROVISIONER_BINDING, MAIN_RESIZER_BINDING, STORAGECLASS_READER_RESIZER_BINDING,
    // SMB's controller mounts host paths too (OpenShift binds it to the privileged SCC).
    "controller_privileged_binding.yaml", NODE_PRIVILEGED_BINDING, "csidriver.yaml",
];

/// What SMB's pods mount: no cloud credentials and no trusted CA bundle, only the controller's
/// metrics certificate (its hash rolls the controller).
pub const MOUNTS: Mounts = Mounts {
    trusted_ca_bundle: None,
    credentials: None,
    metrics_cert: METRICS_SERVING_CERT_SECRET,
};

/// Every asset once, in the order `render smb` prints them.
pub const ASSETS: AssetSet = AssetSet(&[CONTROL_PLANE_STATIC, GUEST_STATIC, &[CONTROLLER, NODE]]);

pub fn statics(facts: &Facts<()>, assets: &[Asset]) -> Result<Vec<Desired>, BuildError> {
    assets.iter().map(|a| facts.render(a)).collect()
}

pub fn controller(facts: &Facts<()>) -> Result<Desired, BuildError> {
    let d = facts.controller_deployment(&CONTROLLER, &MOUNTS, |_| {})?;
    desired::from_typed(CONTROLLER.name, None, &d)
}

pub fn node(facts: &Facts<()>) -> Result<Desired, BuildError> {
    let ds = facts.node_daemonset(&NODE, &MOUNTS)?;
    desired::from_typed(NODE.name, None, &ds)
}

pub fn everything(facts: &Facts<()>) -> Result<Vec<Desired>, BuildError> {
    let mut out = statics(facts, CONTROL_PLANE_STATIC)?;
    out.extend(statics(facts, GUEST_STATIC)?);
    out.push(controller(facts)?);
    out.push(node(facts)?);
    Ok(out)
}

pub struct Smb;

impl Driver for Smb {
    type Own = ();
    const MOUNTS: Mounts = MOUNTS;
    const CR_NAME: &'static str = CSI_DRIVER_NAME;
    const OPERAND: &'static str = SPEC.operand;
    const CONTROLLER_NAME_PREFIX: &'static str = SPEC.controller_name_prefix;
    /// Least privilege: the operator's ClusterRole reads StorageClasses and writes none.
    const EXTRA_STORAGE_CLASSES: bool = false;

    fn static_groups(&self, _kit: &Kit, facts: &Facts<()>) -> Vec<Group> {
        vec![
            Group {
                prefix: CP_STATIC_PREFIX,
                objects: statics(facts, CONTROL_PLANE_STATIC),
            },
            Group {
                prefix: GUEST_STATIC_PREFIX,
                objects: statics(facts, GUEST_STATIC),
            },
        ]
    }
    fn controller(&self, facts: &Facts<()>) -> Workload {
        Workload::new(
            CONTROLLER_PREFIX,
            CONTROLLER_DEPLOYMENT_NAME,
            controller(facts),
        )
    }
    fn daemonsets(&self, facts: &Facts<()>) -> Vec<Workload> {
        vec![Workload::new(NODE_PREFIX, NODE_DAEMONSET_NAME, node(facts))]
    }
}

/// How the operator is started: the kit's common options (it derefs to them); SMB has no
/// knobs of its own.
#[derive(Debug, Clone)]
pub struct Options {
    pub common: CommonOptions,
}

operator_kit::deref_common_options!(Options);

impl csi::DriverOptions for Options {
    type Driver = Smb;
    const SPEC: &'static operator_kit::spec::DriverSpec = &SPEC;
    const ASSETS: AssetSet = ASSETS;
    fn into_driver(self, _clients: &Clients, _cache: &Cache) -> Smb {
        Smb
    }
}

/// What the operator watches: its CR, the cluster singletons, its namespace's objects and each
/// cluster-scoped object it writes (by name); no StorageClass (it writes none).
pub fn watches(clients: impl Into<Clients>, opts: &Options) -> Result<CacheBuilder, BuildError> {
    let ns = opts.namespace.as_str();
    let builder = csi::base_watches(CacheBuilder::new(clients, [ns]), CSI_DRIVER_NAME)
        .namespaced(&ar("v1", "ConfigMap"))
        .in_namespace(&ar("apps/v1", "Deployment"), ns)
        .in_namespace(&ar("apps/v1", "DaemonSet"), ns)
        // The one Secret it reads: its metrics certificate (self-issued on plain Kubernetes;
        // unwatched, it would be rewritten on every reconcile).
        .namespaced_object(&ar("v1", "Secret"), ns, METRICS_SERVING_CERT_SECRET);
    let base = BaseFacts::placeholder(ns, &opts.images, &ASSETS.image_placeholders());
    let objects = everything(&Facts::new(base, ()))?;
    Ok(csi::watch_written(
        builder,
        objects,
        opts.cert_manager.is_some(),
    ))
}
