//! SMB's assets against operator-kit's contract for a driver's assets and against OpenShift's
//! list (openshift/csi-operator, `assets/overlays/samba/generated/standalone/`), written out
//! literally so a reviewer can hold one against the other.

use operator_kit::assets::Replacements;
use smb::{ASSETS, NAMESPACE};

const NS: &str = NAMESPACE;

/// File, kind, name and namespace of every object SMB ships, in render order (the
/// control-plane static list, the guest static list, the Deployment, the DaemonSet). The
/// Service and ServiceMonitor are ours and OpenShift's; SMB has no StorageClass and no
/// VolumeSnapshotClass (an administrator writes one per share).
#[rustfmt::skip]
const INVENTORY: &[(&str, &str, &str, Option<&str>)] = &[
    ("controller_sa.yaml", "ServiceAccount", "smb-csi-driver-controller-sa", Some(NS)),
    ("controller_pdb.yaml", "PodDisruptionBudget", "smb-csi-driver-controller-pdb", Some(NS)),
    ("kube_rbac_proxy_role.yaml", "ClusterRole", "smb-kube-rbac-proxy-role", None),
    ("kube_rbac_proxy_binding.yaml", "ClusterRoleBinding", "smb-kube-rbac-proxy-binding", None),
    ("prometheus_role.yaml", "Role", "smb-csi-driver-prometheus", Some(NS)),
    ("prometheus_binding.yaml", "RoleBinding", "smb-csi-driver-prometheus", Some(NS)),
    ("service.yaml", "Service", "smb-csi-driver-controller-metrics", Some(NS)),
    ("servicemonitor.yaml", "ServiceMonitor", "smb-csi-driver-controller-monitor", Some(NS)),
    ("node_sa.yaml", "ServiceAccount", "smb-csi-driver-node-sa", Some(NS)),
    ("privileged_role.yaml", "ClusterRole", "smb-privileged-role", None),
    ("lease_leader_election_role.yaml", "Role", "smb-csi-driver-lease-leader-election", Some(NS)),
    ("lease_leader_election_binding.yaml", "RoleBinding", "smb-csi-driver-lease-leader-election", Some(NS)),
    ("main_provisioner_binding.yaml", "ClusterRoleBinding", "smb-csi-main-provisioner-binding", None),
    ("main_resizer_binding.yaml", "ClusterRoleBinding", "smb-csi-main-resizer-binding", None),
    ("storageclass_reader_resizer_binding.yaml", "ClusterRoleBinding", "smb-csi-storageclass-reader-resizer-binding", None),
    ("controller_privileged_binding.yaml", "ClusterRoleBinding", "csi-smb-controller-privileged-binding", None),
    ("node_privileged_binding.yaml", "ClusterRoleBinding", "smb-node-privileged-binding", None),
    ("csidriver.yaml", "CSIDriver", "smb.csi.k8s.io", None),
    ("controller.yaml", "Deployment", "smb-csi-driver-controller", Some(NS)),
    ("node.yaml", "DaemonSet", "smb-csi-driver-node", Some(NS)),
];

/// SMB's images (`${…_IMAGE}`): no attacher (shares are not attached), no snapshotter.
const IMAGES: &[&str] = &[
    "DRIVER_IMAGE",
    "PROVISIONER_IMAGE",
    "RESIZER_IMAGE",
    "LIVENESS_PROBE_IMAGE",
    "NODE_DRIVER_REGISTRAR_IMAGE",
    "KUBE_RBAC_PROXY_IMAGE",
];

/// What SMB's assets declare (after operator-kit's contract: known placeholders, one object
/// of a kind the kit can write, a namespace that fits the kind's scope, nothing twice) is the
/// list above, order included, and the images are those of its controller and node pods.
#[test]
fn assets_match_openshift() {
    let inventory = ASSETS.inventory(&Replacements::examples(NS));
    assert_eq!(inventory.unwrap_or_else(|e| panic!("{e}")), INVENTORY);
    assert_eq!(ASSETS.image_placeholders(), IMAGES);
    // Only the kinds a CRD serves wait for it.
    for asset in ASSETS.all() {
        assert_eq!(
            asset.requires_crd.is_some(),
            asset.name == "servicemonitor.yaml",
            "{}",
            asset.name
        );
    }
}
