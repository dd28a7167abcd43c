//! The OpenStack Manila CSI driver operator: its embedded YAML assets ([`assets`]), the
//! share-type → StorageClass name rule ([`names`]), the pure detection state of "is Manila
//! usable" ([`detect`]), the pure builders of every desired object ([`build`]), the pure
//! comparison of the shares' export networks with the nodes' addresses ([`export_network`])
//! and the runtime that watches, detects, applies and reports ([`operator`], [`check`],
//! [`nodes`]).
//!
//! Everything but [`operator`], [`check`] and [`nodes`] is pure: no Kubernetes client, no OpenStack call, no clock read
//! (callers pass `Instant`s), no environment read. Names below are part of the compatibility
//! contract with OpenShift's operator (anchors §5) and must not change.

pub mod assets;
pub mod build;
pub mod check;
pub mod detect;
pub mod export_network;
pub mod names;
pub mod nodes;
pub mod operator;
pub mod storage_classes;

use operator_kit::spec::{
    self, CSI_OPERATOR_NAMESPACE, DriverAssets, DriverSpec, HostedSpec, ImageVar, OldCr,
    OlmOptions, RBAC_GROUP, Related,
};

/// Name of the CSI driver, of its CSIDriver object and of the ClusterCSIDriver CR.
pub const CSI_DRIVER_NAME: &str = "manila.csi.openstack.org";
/// Namespace of the operator itself, its lease and the credentials Secret it reads
/// (`openstack-cloud-credentials`, anchors §3.5).
pub const OPERATOR_NAMESPACE: &str = "openshift-cluster-csi-drivers";
/// Namespace of the driver's objects (`${NAMESPACE}` and `${NODE_NAMESPACE}` on a standalone
/// cluster, anchors §5.2).
pub const DRIVER_NAMESPACE: &str = "openshift-manila-csi-driver";
/// User-Agent the operator presents to OpenStack.
pub const USER_AGENT: &str = "openstack-manila-csi-driver-operator";
/// The operator's own Deployment (applied by the CSO, anchors §3.3): the object its Events are
/// about, as library-go's recorder uses the controller reference of the current pod.
pub const OPERATOR_DEPLOYMENT_NAME: &str = "manila-csi-driver-operator";
/// The operator's own leader-election lock (a Lease in the operator namespace).
pub const OPERATOR_LOCK_NAME: &str = "openstack-manila-csi-driver-operator-lock";

/// The controller Deployment.
pub const CONTROLLER_DEPLOYMENT_NAME: &str = "openstack-manila-csi-controllerplugin";
/// The Manila node DaemonSet.
pub const NODE_DAEMONSET_NAME: &str = "openstack-manila-csi-nodeplugin";
/// The NFS node DaemonSet (the forwarding target of the Manila node plugin).
pub const NFS_DAEMONSET_NAME: &str = "csi-nodeplugin-nfsplugin";
/// The VolumeSnapshotClass.
pub const VOLUME_SNAPSHOT_CLASS_NAME: &str = "csi-manila-standard";
/// Prefix of every StorageClass this operator creates (`csi-manila-<share type>`).
pub const STORAGE_CLASS_PREFIX: &str = "csi-manila-";

/// Secret with `clouds.yaml` (and optionally `cacert`) the operator authenticates with, in
/// [`OPERATOR_NAMESPACE`]; minted by the cloud credential operator for Cinder and shared.
pub const OPERATOR_CREDENTIALS_SECRET: &str = "openstack-cloud-credentials";
/// Secret with `clouds.yaml` the driver pods mount, in [`DRIVER_NAMESPACE`] (CredentialsRequest
/// `manila-csi-drivers`). Its hash rolls the pods (fix of the rotation gap, anchors §5.2).
pub const DRIVER_CREDENTIALS_SECRET: &str = "manila-cloud-credentials";
/// The static CSI Secret that points the driver at the mounted clouds.yaml.
pub const CSI_SECRET: &str = "csi-manila-secrets";
/// The label on every share-type StorageClass the operator writes: one watch selected by it
/// covers them all, however many share types Manila offers (ours; OpenShift's classes carry
/// no label, and an unlabelled class left by it is adopted at the first apply).
pub const SHARE_TYPE_CLASS_LABEL: &str = "manila.csi.openstack.org/share-type-class";
/// Secret the service CA operator fills for the metrics Service.
pub const METRICS_SERVING_CERT_SECRET: &str = "manila-csi-driver-controller-metrics-serving-cert";
/// ConfigMap that receives the cluster's trusted CA bundle (key `ca-bundle.crt`).
pub const TRUSTED_CA_BUNDLE_CONFIGMAP: &str = "manila-csi-driver-trusted-ca-bundle";
/// The cloud provider config: its `ca-bundle.pem` key is the cloud's CA. The operator reads the
/// CSO-synced copy in [`OPERATOR_NAMESPACE`]; the driver pods mount a copy in
/// [`DRIVER_NAMESPACE`] that this operator syncs from `openshift-config`.
pub const CLOUD_PROVIDER_CONFIGMAP: &str = "cloud-provider-config";
/// Namespace of the installer's cloud provider config (the source of the sync).
pub const CONFIG_NAMESPACE: &str = "openshift-config";
/// Environment variable that sets the CSIDriver's `fsGroupPolicy`.
pub const FSGROUP_POLICY_ENV: &str = "CSI_FSGROUP_POLICY";

/// The operator's objects as the Cluster Storage Operator applies them (`assets/operator/`).
pub const OPERATOR_ASSETS: DriverAssets =
    operator_kit::driver_assets!("openstack-manila", "../assets/operator", namespace);

/// How OpenShift 4.5 installed this operator through OLM (CSO `csioperatorclient/manila.go`
/// up to release-4.17); the CSO removes that installation first (anchors §3.7).
pub const OLM: OlmOptions = OlmOptions {
    operator_deployment: "csi-driver-manila-operator",
    package: "manila-csi-driver-operator",
    old_cr: OldCr {
        group: "csi.openshift.io",
        version: "v1alpha1",
        kind: "ManilaDriver",
        plural: "maniladrivers",
        name: "cluster",
    },
};

/// OpenStack Manila, declared once (CSO `csioperatorclient/manila.go` and the operator's own
/// names): what the CSO registry, the binary, the plain-Kubernetes manifests and the chart
/// read.
pub const SPEC: DriverSpec = DriverSpec {
    name: "openstack-manila",
    cluster_csi_driver: CSI_DRIVER_NAME,
    operand: "OpenStackManilaCSIDriver",
    controller_name_prefix: "OpenStackManila",
    condition_prefix: "Manila",
    platform: spec::OPENSTACK,
    operator_deployment: OPERATOR_DEPLOYMENT_NAME,
    operator_namespace: OPERATOR_NAMESPACE,
    driver_namespace: DRIVER_NAMESPACE,
    lock_name: OPERATOR_LOCK_NAME,
    user_agent: USER_AGENT,
    metrics_prefix: "openstack_manila_csi_driver_operator",
    metrics_serving_cert_secret: METRICS_SERVING_CERT_SECRET,
    image_vars: &[
        ImageVar {
            placeholder: "${OPERATOR_IMAGE}",
            cso_env: "MANILA_DRIVER_OPERATOR_IMAGE",
        },
        ImageVar {
            placeholder: "${DRIVER_IMAGE}",
            cso_env: "MANILA_DRIVER_IMAGE",
        },
        ImageVar {
            placeholder: "${NFS_DRIVER_IMAGE}",
            cso_env: "MANILA_NFS_DRIVER_IMAGE",
        },
    ],
    allow_disabled: true,
    syncs_cloud_ca: true,
    related_objects: &[
        Related {
            group: "",
            resource: "namespaces",
            namespace: "",
            name: DRIVER_NAMESPACE,
        },
        Related {
            group: "",
            resource: "serviceaccounts",
            namespace: CSI_OPERATOR_NAMESPACE,
            name: "manila-csi-driver-operator",
        },
        Related {
            group: RBAC_GROUP,
            resource: "roles",
            namespace: CSI_OPERATOR_NAMESPACE,
            name: "manila-csi-driver-operator-role",
        },
        Related {
            group: RBAC_GROUP,
            resource: "rolebindings",
            namespace: CSI_OPERATOR_NAMESPACE,
            name: "manila-csi-driver-operator-rolebinding",
        },
        Related {
            group: RBAC_GROUP,
            resource: "clusterroles",
            namespace: "",
            name: "manila-csi-driver-operator-clusterrole",
        },
        Related {
            group: RBAC_GROUP,
            resource: "clusterrolebindings",
            namespace: "",
            name: "manila-csi-driver-operator-clusterrolebinding",
        },
    ],
    olm: Some(&OLM),
    assets: &OPERATOR_ASSETS,
    hosted: Some(HostedSpec {
        management_role: operator_kit::assets::Asset {
            name: "openstack-manila/hypershift/role.yaml",
            content: include_str!("../assets/operator/hypershift/role.yaml"),
            requires_crd: None,
        },
        control_plane_image_env: "MANILA_DRIVER_CONTROL_PLANE_IMAGE",
        guest_namespaced_objects: false,
    }),
};
