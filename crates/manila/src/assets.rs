//! The Manila operator's YAML assets, embedded in the binary, and the lists the reconcile steps
//! need: static control-plane objects, static guest objects, the CSIDriver, the controller
//! Deployment, the two node DaemonSets and the VolumeSnapshotClass. StorageClasses have no
//! asset: there is one per share type, built in [`crate::build`].
//!
//! Two sources, one list per step: the sidecar and RBAC objects every CSI driver ships are the
//! kit's shared assets ([`operator_kit::csi::shared`]) filled with Manila's [`PREFIXES`] at
//! compile time (no attacher binding: shares are not attached; the node ServiceAccount serves
//! both node plugins, Manila's and NFS's); `assets/` holds only what is Manila's own: its
//! Namespace, the controller Deployment and the two node DaemonSets, the metrics Service and
//! ServiceMonitor (three ports), the PDB (the controller's labels), the CSIDriver, the
//! VolumeSnapshotClass, the `csi-manila-secrets` Secret and the Role that lets the sidecars
//! read it.
//!
//! The files are ours, written from the behaviour inventory (anchors §5.2); file names are
//! those of OpenShift's generated assets so that logs and docs line up. They contain `${NAME}`
//! placeholders (operator-kit's `assets::PLACEHOLDERS` and images) that its replacer fills; this module does not
//! replace, parse or apply anything.

pub use operator_kit::assets::{Asset, AssetSet};
use operator_kit::csi::shared::Prefixes;
use operator_kit::{asset, asset_list};

/// Manila's names in the shared assets, OpenShift's (`pkg/driver/openstack-manila`):
/// `manila-csi-driver-controller-sa`, `openstack-manila-kube-rbac-proxy-role`, ….
pub const PREFIXES: Prefixes = Prefixes {
    asset: "manila-csi-driver",
    short: "openstack-manila",
};

/// The CRDs that gate the ServiceMonitor and the VolumeSnapshotClass (the kit's, one definition).
pub use operator_kit::csi::{SERVICE_MONITOR_CRD, VOLUME_SNAPSHOT_CLASS_CRD};

/// The controller Deployment (`openstack-manila-csi-controllerplugin`).
pub const CONTROLLER_DEPLOYMENT: Asset = asset!("controller.yaml");
/// The Manila node DaemonSet (`openstack-manila-csi-nodeplugin`).
pub const NODE_DAEMONSET: Asset = asset!("node.yaml");
/// The NFS node DaemonSet (`csi-nodeplugin-nfsplugin`).
pub const NFS_DAEMONSET: Asset = asset!("node_nfs.yaml");
/// CSIDriver `manila.csi.openstack.org`; one step writes it, with `fsGroupPolicy` set
/// (anchors §8.3 fixed: OpenShift had two writers).
pub const CSI_DRIVER: Asset = asset!("csidriver.yaml");
/// VolumeSnapshotClass `csi-manila-standard`, applied once its CRD exists.
pub const VOLUME_SNAPSHOT_CLASS: Asset =
    asset!("volumesnapshotclass.yaml", crd = VOLUME_SNAPSHOT_CLASS_CRD);

/// Static objects of the driver namespace's control-plane side, in apply order: the Namespace
/// first (everything else lives in it), then by file name.
pub const CONTROL_PLANE_STATIC: &[Asset] = asset_list![PREFIXES;
    "namespace.yaml", CABUNDLE_CM, "controller_pdb.yaml", CONTROLLER_SA, "service.yaml",
    "servicemonitor.yaml" => SERVICE_MONITOR_CRD,
];

/// Static objects of the guest side, in apply order: roles, then bindings, then the rest.
pub const GUEST_STATIC: &[Asset] = asset_list![PREFIXES;
    // Stage 1: roles, so bindings never point at a missing role.
    KUBE_RBAC_PROXY_ROLE, LEASE_LEADER_ELECTION_ROLE, PRIVILEGED_ROLE, PROMETHEUS_ROLE,
    "secret_reader_role.yaml",
    // Stage 2: bindings (no attacher binding: Manila has no attacher).
    KUBE_RBAC_PROXY_BINDING, LEASE_LEADER_ELECTION_BINDING, MAIN_PROVISIONER_BINDING,
    MAIN_RESIZER_BINDING, MAIN_SNAPSHOTTER_BINDING, NODE_PRIVILEGED_BINDING, PROMETHEUS_BINDING,
    "secret_reader_binding.yaml", STORAGECLASS_READER_RESIZER_BINDING,
    VOLUMESNAPSHOT_READER_PROVISIONER_BINDING,
    // Stage 3: everything else.
    "config_secret.yaml", NODE_SA,
];

/// Every asset once, in the order `csi-operator render` prints them: the static lists, then
/// the CSIDriver, the Deployment, both DaemonSets and the VolumeSnapshotClass.
pub const ASSETS: AssetSet = AssetSet(&[
    CONTROL_PLANE_STATIC,
    GUEST_STATIC,
    &[
        CSI_DRIVER,
        CONTROLLER_DEPLOYMENT,
        NODE_DAEMONSET,
        NFS_DAEMONSET,
        VOLUME_SNAPSHOT_CLASS,
    ],
]);

#[cfg(test)]
mod tests {
    //! Golden checks of the assets against anchors §5.2, written out literally so a reviewer
    //! can hold them against the anchors file.

    use super::*;
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use operator_kit::assets::Replacements;
    use serde_json::Value;

    const NS: &str = "openshift-manila-csi-driver";

    /// Anchors §5.2: file, kind, name and namespace of every object we ship.
    #[rustfmt::skip]
    const INVENTORY: &[(&str, &str, &str, Option<&str>)] = &[
        ("namespace.yaml", "Namespace", NS, None),
        ("cabundle_cm.yaml", "ConfigMap", "manila-csi-driver-trusted-ca-bundle", Some(NS)),
        ("controller_pdb.yaml", "PodDisruptionBudget", "openstack-manila-csi-controllerplugin-pdb", Some(NS)),
        ("controller_sa.yaml", "ServiceAccount", "manila-csi-driver-controller-sa", Some(NS)),
        ("service.yaml", "Service", "manila-csi-driver-controller-metrics", Some(NS)),
        ("servicemonitor.yaml", "ServiceMonitor", "manila-csi-driver-controller-monitor", Some(NS)),
        ("kube_rbac_proxy_role.yaml", "ClusterRole", "openstack-manila-kube-rbac-proxy-role", None),
        ("lease_leader_election_role.yaml", "Role", "manila-csi-driver-lease-leader-election", Some(NS)),
        ("privileged_role.yaml", "ClusterRole", "openstack-manila-privileged-role", None),
        ("prometheus_role.yaml", "Role", "manila-csi-driver-prometheus", Some(NS)),
        ("secret_reader_role.yaml", "Role", "manila-csi-driver-secret-reader", Some(NS)),
        ("kube_rbac_proxy_binding.yaml", "ClusterRoleBinding", "openstack-manila-kube-rbac-proxy-binding", None),
        ("lease_leader_election_binding.yaml", "RoleBinding", "manila-csi-driver-lease-leader-election", Some(NS)),
        ("main_provisioner_binding.yaml", "ClusterRoleBinding", "openstack-manila-csi-main-provisioner-binding", None),
        ("main_resizer_binding.yaml", "ClusterRoleBinding", "openstack-manila-csi-main-resizer-binding", None),
        ("main_snapshotter_binding.yaml", "ClusterRoleBinding", "openstack-manila-csi-main-snapshotter-binding", None),
        ("node_privileged_binding.yaml", "ClusterRoleBinding", "openstack-manila-node-privileged-binding", None),
        ("prometheus_binding.yaml", "RoleBinding", "manila-csi-driver-prometheus", Some(NS)),
        ("secret_reader_binding.yaml", "RoleBinding", "manila-csi-driver-secret-reader", Some(NS)),
        ("storageclass_reader_resizer_binding.yaml", "ClusterRoleBinding", "openstack-manila-csi-storageclass-reader-resizer-binding", None),
        ("volumesnapshot_reader_provisioner_binding.yaml", "ClusterRoleBinding", "openstack-manila-csi-volumesnapshot-reader-provisioner-binding", None),
        ("config_secret.yaml", "Secret", "csi-manila-secrets", Some(NS)),
        ("node_sa.yaml", "ServiceAccount", "manila-csi-driver-node-sa", Some(NS)),
        ("csidriver.yaml", "CSIDriver", "manila.csi.openstack.org", None),
        ("controller.yaml", "Deployment", "openstack-manila-csi-controllerplugin", Some(NS)),
        ("node.yaml", "DaemonSet", "openstack-manila-csi-nodeplugin", Some(NS)),
        ("node_nfs.yaml", "DaemonSet", "csi-nodeplugin-nfsplugin", Some(NS)),
        ("volumesnapshotclass.yaml", "VolumeSnapshotClass", "csi-manila-standard", None),
    ];

    /// Manila's images (`${…_IMAGE}`): no attacher (shares are not attached), one NFS driver.
    const IMAGES: &[&str] = &[
        "DRIVER_IMAGE",
        "PROVISIONER_IMAGE",
        "RESIZER_IMAGE",
        "SNAPSHOTTER_IMAGE",
        "LIVENESS_PROBE_IMAGE",
        "NODE_DRIVER_REGISTRAR_IMAGE",
        "KUBE_RBAC_PROXY_IMAGE",
        "NFS_DRIVER_IMAGE",
    ];

    /// Anchors §5.2 against what the assets declare, in render order, after operator-kit's
    /// contract for a driver's assets (known placeholders, one object of a kind the kit can
    /// write, a namespace that fits the kind's scope, nothing twice); Manila's images have no
    /// attacher.
    #[test]
    fn assets_match_anchors() {
        let inventory = ASSETS.inventory(&Replacements::examples(NS));
        assert_eq!(inventory.unwrap_or_else(|e| panic!("{e}")), INVENTORY);
        assert_eq!(ASSETS.image_placeholders(), IMAGES);
        // No attacher anywhere: Manila shares are not attached.
        assert!(
            ASSETS
                .all()
                .all(|a| !a.content.contains("ATTACHER_IMAGE")
                    && !a.content.contains("main-attacher"))
        );
    }

    fn container<'a>(spec: &'a PodSpec, name: &str) -> &'a Container {
        spec.containers
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no container {name}"))
    }

    fn args(c: &Container) -> Vec<&str> {
        c.args.iter().flatten().map(String::as_str).collect()
    }

    fn env(c: &Container) -> Vec<(String, Option<String>)> {
        c.env
            .iter()
            .flatten()
            .map(|e| (e.name.clone(), e.value.clone()))
            .collect()
    }

    #[test]
    fn controller_golden() {
        let d: Deployment = CONTROLLER_DEPLOYMENT
            .render_object(&Replacements::examples(NS))
            .unwrap();
        let pod = d.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
        let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "csi-driver",
                "csi-driver-nfs",
                "csi-provisioner",
                "provisioner-kube-rbac-proxy",
                "csi-resizer",
                "resizer-kube-rbac-proxy",
                "csi-snapshotter",
                "snapshotter-kube-rbac-proxy",
                "csi-liveness-probe",
            ]
        );
        let driver = container(pod, "csi-driver");
        assert_eq!(
            args(driver),
            [
                "--provide-controller-service=true",
                "--provide-node-service=false",
                "--v=2",
                "--cluster-id=mycluster-x7k2p",
                "--nodeid=$(NODE_ID)",
                "--endpoint=$(CSI_ENDPOINT)",
                "--drivername=$(DRIVER_NAME)",
                "--share-protocol-selector=$(MANILA_SHARE_PROTO)",
                "--fwdendpoint=$(FWD_CSI_ENDPOINT)",
            ]
        );
        let e = env(driver);
        assert!(e.contains(&(
            "DRIVER_NAME".into(),
            Some("manila.csi.openstack.org".into())
        )));
        assert!(e.contains(&(
            "CSI_ENDPOINT".into(),
            Some("unix:///plugin/csi.sock".into())
        )));
        assert!(e.contains(&("MANILA_SHARE_PROTO".into(), Some("NFS".into()))));
        assert!(e.contains(&(
            "FWD_CSI_ENDPOINT".into(),
            Some("unix:///plugin/csi-nfs.sock".into())
        )));
        let nfs = container(pod, "csi-driver-nfs");
        assert_eq!(
            nfs.image.as_deref(),
            Some("quay.io/test/nfs_driver_image:latest")
        );
        assert_eq!(
            args(nfs),
            [
                "--nodeid=$(NODE_ID)",
                "--endpoint=unix://plugin/csi-nfs.sock",
                "--mount-permissions=0777"
            ]
        );
        let prov = args(container(pod, "csi-provisioner"));
        assert!(prov.contains(&"--http-endpoint=localhost:8203"));
        assert!(prov.contains(&"--timeout=120s"));
        assert!(prov.contains(&"--feature-gates=Topology=true"));
        let res = args(container(pod, "csi-resizer"));
        assert!(res.contains(&"--timeout=240s"));
        assert!(res.contains(&"--handle-volume-inuse-error=false"));
        assert!(
            args(container(pod, "csi-snapshotter")).contains(&"--metrics-address=localhost:8205")
        );
        assert!(args(container(pod, "csi-liveness-probe")).contains(&"--health-port=10306"));
        let volumes = serde_json::to_value(pod.volumes.as_ref().unwrap()).unwrap();
        assert_eq!(
            volumes[2],
            serde_json::json!({"name": "cloud-credentials", "secret": {"secretName": "manila-cloud-credentials",
                "items": [{"key": "clouds.yaml", "path": "clouds.yaml"}]}})
        );
        assert_eq!(volumes[3]["configMap"]["name"], "cloud-provider-config");
        assert_eq!(volumes[3]["configMap"]["optional"], true);
        // Anchors §6.1-style budget: requests only, no limits.
        for c in &pod.containers {
            assert!(c.resources.as_ref().unwrap().limits.is_none(), "{}", c.name);
        }
    }

    #[test]
    fn node_daemonsets_golden() {
        let ds: DaemonSet = NODE_DAEMONSET
            .render_object(&Replacements::examples(NS))
            .unwrap();
        let pod = ds.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
        assert_eq!(pod.host_network, Some(true));
        assert_eq!(pod.dns_policy.as_deref(), Some("ClusterFirstWithHostNet"));
        let init = &pod.init_containers.as_ref().unwrap()[0];
        assert_eq!(init.name, "wait-for-nfs-plugin");
        let script = &init.command.as_ref().unwrap()[2];
        assert!(script.contains("until [ -S /var/lib/kubelet/plugins/csi-nfsplugin/csi.sock ]"));
        let driver = container(pod, "csi-driver");
        assert!(!args(driver).iter().any(|a| a.starts_with("--cluster-id")));
        assert!(args(driver).contains(&"--provide-node-service=true"));
        assert_eq!(
            driver.security_context.as_ref().unwrap().privileged,
            Some(true)
        );
        let reg = container(pod, "csi-node-driver-registrar");
        assert!(args(reg).contains(&"--http-endpoint=127.0.0.1:10307"));
        assert!(
            args(container(pod, "csi-liveness-probe")).contains(&"--http-endpoint=127.0.0.1:10305")
        );

        let nfs: DaemonSet = NFS_DAEMONSET
            .render_object(&Replacements::examples(NS))
            .unwrap();
        let spec = nfs.spec.as_ref().unwrap();
        assert_eq!(
            spec.selector.match_labels.as_ref().unwrap()["component"],
            "nfs-nodeplugin"
        );
        let pod = spec.template.spec.as_ref().unwrap();
        assert_eq!(
            pod.service_account_name.as_deref(),
            Some("manila-csi-driver-node-sa")
        );
        assert_eq!(pod.containers.len(), 1);
        assert!(pod.containers[0].liveness_probe.is_none());
        assert!(nfs.metadata.annotations.is_none(), "no proxy or CA hooks");
    }

    #[test]
    fn secret_driver_and_snapshot_class_golden() {
        let s = ASSETS
            .get("config_secret.yaml")
            .unwrap()
            .render_object::<Value>(&Replacements::examples(NS))
            .unwrap();
        assert_eq!(
            s["stringData"],
            serde_json::json!({"os-cloud": "openstack", "os-cloudsFile": "/etc/openstack/clouds.yaml", "os-useClouds": "true"})
        );
        let d = CSI_DRIVER
            .render_object::<Value>(&Replacements::examples(NS))
            .unwrap();
        assert_eq!(
            d["spec"],
            serde_json::json!({"attachRequired": false, "fsGroupPolicy": "None", "podInfoOnMount": false})
        );
        assert_eq!(
            d["metadata"]["annotations"]["csi.openshift.io/managed"],
            "true"
        );
        let v = VOLUME_SNAPSHOT_CLASS
            .render_object::<Value>(&Replacements::examples(NS))
            .unwrap();
        assert_eq!(v["deletionPolicy"], "Delete");
        assert_eq!(
            v["parameters"],
            serde_json::json!({"csi.storage.k8s.io/snapshotter-secret-name": "csi-manila-secrets",
                "csi.storage.k8s.io/snapshotter-secret-namespace": NS, "force-create": "false"})
        );
        assert!(
            v["metadata"].get("annotations").is_none(),
            "not the default class"
        );
        for a in ASSETS.all() {
            assert_eq!(
                a.requires_crd.is_some(),
                matches!(a.name, "servicemonitor.yaml" | "volumesnapshotclass.yaml"),
                "{}",
                a.name
            );
        }
    }
}
