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
