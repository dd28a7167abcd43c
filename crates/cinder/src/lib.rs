//! The OpenStack Cinder CSI driver operator's domain code: its embedded YAML assets
//! ([`assets`]), the generation of the driver's `cloud.conf` and the `cloud-conf` ConfigMap
//! ([`config`]), the decision of when to recompute `enable_topology` ([`topology`]), and the
//! conversion of an upstream chart's cloud.conf credentials to clouds.yaml
//! ([`legacy_credentials`]), the opt-in StorageClass per volume type ([`volume_types`]), and the
//! adoption of an upstream chart's CSIDriver and StorageClasses ([`helm_adoption`]).
//!
//! The domain modules are pure: no Kubernetes client, no OpenStack calls, no clock reads, no
//! environment reads. The runtime modules ([`operator`], [`config_sync`],
//! [`volume_type_classes`]) wire them to operator-kit's reconcile (watches, apply, status)
//! and call into them with the facts they have observed. Names below are part of the
//! compatibility contract with OpenShift's operator (anchors §4) and must not change.

pub mod adoption;
pub mod assets;
pub mod build;
pub mod config;
pub mod config_sync;
pub mod helm_adoption;
pub mod legacy_credentials;
pub mod operator;
pub mod topology;
pub mod volume_type_classes;
pub mod volume_types;

use operator_kit::spec::{
    self, CSI_OPERATOR_NAMESPACE, DriverAssets, DriverSpec, HostedSpec, ImageVar, RBAC_GROUP,
    Related,
};

/// Name of the CSI driver, of its CSIDriver object and of the ClusterCSIDriver CR.
pub const CSI_DRIVER_NAME: &str = "cinder.csi.openstack.org";
/// Namespace of the operator and of the driver's objects on a standalone cluster
/// (`${NAMESPACE}` and `${NODE_NAMESPACE}` both become this).
pub const DEFAULT_NAMESPACE: &str = "openshift-cluster-csi-drivers";
/// Prefix of the operator's controller and condition names (`OpenStackCinderDriver…`).
pub const CONTROLLER_NAME_PREFIX: &str = "OpenStackCinder";
/// User-Agent the operator presents to OpenStack.
pub const USER_AGENT: &str = "openstack-cinder-csi-driver-operator";
/// The operator's own Deployment (applied by the CSO, anchors §3.3): the object its Events are
/// about, as library-go's recorder uses the controller reference of the current pod.
pub const OPERATOR_DEPLOYMENT_NAME: &str = "openstack-cinder-csi-driver-operator";
/// The operator's own leader-election lock (a Lease in the operator namespace).
pub const OPERATOR_LOCK_NAME: &str = "openstack-cinder-csi-driver-operator-lock";

/// The controller Deployment.
pub const CONTROLLER_DEPLOYMENT_NAME: &str = "openstack-cinder-csi-driver-controller";
/// The node DaemonSet.
pub const NODE_DAEMONSET_NAME: &str = "openstack-cinder-csi-driver-node";
/// The StorageClass and the VolumeSnapshotClass.
pub const STORAGE_CLASS_NAME: &str = "standard-csi";
/// The VolumeSnapshotClass (same name as the StorageClass).
pub const VOLUME_SNAPSHOT_CLASS_NAME: &str = "standard-csi";
/// Generated ConfigMap the driver reads (`cloud.conf`, `enable_topology`, `ca-bundle.pem`).
pub const CLOUD_CONF_CONFIGMAP: &str = "cloud-conf";
/// Secret with `clouds.yaml` (and optionally `cacert`), minted by the cloud credential operator.
pub const CREDENTIALS_SECRET: &str = "openstack-cloud-credentials";
/// Secret the service CA operator fills for the metrics Service.
pub const METRICS_SERVING_CERT_SECRET: &str =
    "openstack-cinder-csi-driver-controller-metrics-serving-cert";
/// ConfigMap that receives the cluster's trusted CA bundle (key `ca-bundle.crt`).
pub const TRUSTED_CA_BUNDLE_CONFIGMAP: &str = "openstack-cinder-csi-driver-trusted-ca-bundle";
/// The CSO-synced copy of the cloud provider config in the operator namespace, read for the
/// `ca-bundle.pem` key only.
pub const SYNCED_CLOUD_PROVIDER_CONFIGMAP: &str = "cloud-provider-config";

/// The operator's objects as the Cluster Storage Operator applies them (`assets/operator/`).
pub const OPERATOR_ASSETS: DriverAssets =
    operator_kit::driver_assets!("openstack-cinder", "../assets/operator");

/// OpenStack Cinder, declared once (CSO `csioperatorclient/cinder.go` and the operator's own
/// names): what the CSO registry, the binary, the plain-Kubernetes manifests and the chart
/// read.
pub const SPEC: DriverSpec = DriverSpec {
    name: "openstack-cinder",
    cluster_csi_driver: CSI_DRIVER_NAME,
    operand: "OpenStackCinderCSIDriver",
    controller_name_prefix: CONTROLLER_NAME_PREFIX,
    condition_prefix: "OpenStackCinder",
    platform: spec::OPENSTACK,
    operator_deployment: OPERATOR_DEPLOYMENT_NAME,
    operator_namespace: CSI_OPERATOR_NAMESPACE,
    driver_namespace: DEFAULT_NAMESPACE,
    lock_name: OPERATOR_LOCK_NAME,
    user_agent: USER_AGENT,
    metrics_prefix: "openstack_cinder_csi_driver_operator",
    metrics_serving_cert_secret: METRICS_SERVING_CERT_SECRET,
    image_vars: &[
        ImageVar {
            placeholder: "${OPERATOR_IMAGE}",
            cso_env: "OPENSTACK_CINDER_DRIVER_OPERATOR_IMAGE",
        },
        ImageVar {
            placeholder: "${DRIVER_IMAGE}",
            cso_env: "OPENSTACK_CINDER_DRIVER_IMAGE",
        },
    ],
    allow_disabled: false,
    syncs_cloud_ca: false,
    related_objects: &[
        Related {
            group: "",
            resource: "serviceaccounts",
            namespace: CSI_OPERATOR_NAMESPACE,
            name: "openstack-cinder-csi-driver-operator",
        },
        Related {
            group: RBAC_GROUP,
            resource: "roles",
            namespace: CSI_OPERATOR_NAMESPACE,
            name: "openstack-cinder-csi-driver-operator-role",
        },
        Related {
            group: RBAC_GROUP,
            resource: "rolebindings",
            namespace: CSI_OPERATOR_NAMESPACE,
            name: "openstack-cinder-csi-driver-operator-rolebinding",
        },
        Related {
            group: RBAC_GROUP,
            resource: "clusterroles",
            namespace: "",
            name: "openstack-cinder-csi-driver-operator-clusterrole",
        },
        Related {
            group: RBAC_GROUP,
            resource: "clusterrolebindings",
            namespace: "",
            name: "openstack-cinder-csi-driver-operator-clusterrolebinding",
        },
    ],
    olm: None,
    assets: &OPERATOR_ASSETS,
    hosted: Some(HostedSpec {
        management_role: operator_kit::assets::Asset {
            name: "openstack-cinder/hypershift/role.yaml",
            content: include_str!("../assets/operator/hypershift/role.yaml"),
            requires_crd: None,
        },
        control_plane_image_env: "OPENSTACK_CINDER_DRIVER_CONTROL_PLANE_IMAGE",
        guest_namespaced_objects: true,
    }),
};
