//! The Cinder operator's YAML assets, embedded in the binary, and the lists the reconcile steps
//! need (static control-plane objects, static guest objects, the controller Deployment, the node
//! DaemonSet, the StorageClass and the VolumeSnapshotClass).
//!
//! Two sources, one list per step: the sidecar and RBAC objects every CSI driver ships are the
//! kit's shared assets ([`operator_kit::csi::shared`]) filled with Cinder's [`PREFIXES`] at
//! compile time; `assets/` holds only what is Cinder's own: the controller Deployment and node
//! DaemonSet, the metrics Service and ServiceMonitor (five ports, the driver's among them), the
//! PDB (the controller's labels), the CSIDriver, StorageClass and VolumeSnapshotClass.
//!
//! The files are ours, written from the behaviour inventory (anchors §4.2–§4.7); file names are
//! those of OpenShift's generated assets so that logs and docs line up. They contain
//! `${NAME}` placeholders (operator-kit's `assets::PLACEHOLDERS` and images) that its replacer fills; this module
//! does not replace, parse or apply anything.

pub use operator_kit::assets::{Asset, AssetSet};
use operator_kit::csi::shared::Prefixes;
use operator_kit::{asset, asset_list};

/// Cinder's names in the shared assets, OpenShift's (`pkg/driver/openstack-cinder`):
/// `openstack-cinder-csi-driver-controller-sa`, `openstack-cinder-kube-rbac-proxy-role`, ….
pub const PREFIXES: Prefixes = Prefixes {
    asset: "openstack-cinder-csi-driver",
    short: "openstack-cinder",
};

/// The CRDs that gate the ServiceMonitor and the VolumeSnapshotClass (the kit's, one definition).
pub use operator_kit::csi::{SERVICE_MONITOR_CRD, VOLUME_SNAPSHOT_CLASS_CRD};

/// The controller Deployment (`openstack-cinder-csi-driver-controller`), applied by the
/// controller-service step with the Deployment hooks of anchors §4.1.
pub const CONTROLLER_DEPLOYMENT: Asset = asset!("controller.yaml");
/// The node DaemonSet (`openstack-cinder-csi-driver-node`), applied by the node-service step.
pub const NODE_DAEMONSET: Asset = asset!("node.yaml");
/// StorageClass `standard-csi`, applied by the storage-class step.
pub const STORAGE_CLASS: Asset = asset!("storageclass.yaml");
/// VolumeSnapshotClass `standard-csi`, applied by the snapshot-class step once its CRD exists.
pub const VOLUME_SNAPSHOT_CLASS: Asset =
    asset!("volumesnapshotclass.yaml", crd = VOLUME_SNAPSHOT_CLASS_CRD);

/// Static objects in the control-plane namespace, in apply order: Roles and ClusterRoles, then
/// their bindings, then the rest (anchors §4.1; within a stage, by file name, because OpenShift's
/// order within a stage is a Go map's and therefore arbitrary). This set has no RBAC.
pub const CONTROL_PLANE_STATIC: &[Asset] = asset_list![PREFIXES;
    CABUNDLE_CM, "controller_pdb.yaml", CONTROLLER_SA, "service.yaml",
    "servicemonitor.yaml" => SERVICE_MONITOR_CRD,
];

/// Static objects of the guest cluster (the same cluster when standalone), in apply order:
/// Roles and ClusterRoles, then bindings, then the rest.
pub const GUEST_STATIC: &[Asset] = asset_list![PREFIXES;
    // Stage 1: roles, so bindings never point at a missing role.
    KUBE_RBAC_PROXY_ROLE, LEASE_LEADER_ELECTION_ROLE, PRIVILEGED_ROLE, PROMETHEUS_ROLE,
    // Stage 2: bindings.
    KUBE_RBAC_PROXY_BINDING, LEASE_LEADER_ELECTION_BINDING, MAIN_ATTACHER_BINDING,
    MAIN_PROVISIONER_BINDING, MAIN_RESIZER_BINDING, MAIN_SNAPSHOTTER_BINDING,
    NODE_PRIVILEGED_BINDING, PROMETHEUS_BINDING, STORAGECLASS_READER_RESIZER_BINDING,
    VOLUMESNAPSHOT_READER_PROVISIONER_BINDING,
    // Stage 3: everything else.
    "csidriver.yaml", NODE_SA,
];

/// Every asset once, in the order `csi-operator render` prints them: the static lists, then
/// the Deployment, DaemonSet, StorageClass and VolumeSnapshotClass.
pub const ASSETS: AssetSet = AssetSet(&[
    CONTROL_PLANE_STATIC,
    GUEST_STATIC,
    &[
        CONTROLLER_DEPLOYMENT,
        NODE_DAEMONSET,
        STORAGE_CLASS,
        VOLUME_SNAPSHOT_CLASS,
    ],
]);

#[cfg(test)]
mod tests {
    //! Golden checks of the assets against the anchors (§4.2–§4.7, §6.1). The expected values
    //! are written out literally so a reviewer can hold them against the anchors file.

    use super::*;
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
    use k8s_openapi::api::core::v1::{Container, PodSpec, Service};
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
    use k8s_openapi::api::storage::v1::{CSIDriver, StorageClass};
    use operator_kit::assets::Replacements;
    use serde_json::Value;
    use std::collections::BTreeMap;

    const NS: &str = "openshift-cluster-csi-drivers";

    /// The asset `file` rendered with the values a real run would use on a standalone cluster
    /// (so the golden args below read like the rendered objects of the anchors), parsed as the
    /// operator parses it.
    fn object<T: serde::de::DeserializeOwned>(file: &str) -> T {
        let asset = ASSETS
            .get(file)
            .unwrap_or_else(|| panic!("{file} is not embedded"));
        asset
            .render_object(&Replacements::examples(NS))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The kind an asset declares, checked by the kit's contract on the way.
    fn kind_of(asset: &Asset) -> String {
        asset
            .declared(&Replacements::examples(NS))
            .unwrap_or_else(|e| panic!("{e}"))
            .kind
    }

    /// Anchors §4.2: file, kind, name and namespace of every standalone object we ship, in
    /// render order.
    #[rustfmt::skip]
    const INVENTORY: &[(&str, &str, &str, Option<&str>)] = &[
        ("cabundle_cm.yaml", "ConfigMap", "openstack-cinder-csi-driver-trusted-ca-bundle", Some(NS)),
        ("controller_pdb.yaml", "PodDisruptionBudget", "openstack-cinder-csi-driver-controller-pdb", Some(NS)),
        ("controller_sa.yaml", "ServiceAccount", "openstack-cinder-csi-driver-controller-sa", Some(NS)),
        ("service.yaml", "Service", "openstack-cinder-csi-driver-controller-metrics", Some(NS)),
        ("servicemonitor.yaml", "ServiceMonitor", "openstack-cinder-csi-driver-controller-monitor", Some(NS)),
        ("kube_rbac_proxy_role.yaml", "ClusterRole", "openstack-cinder-kube-rbac-proxy-role", None),
        ("lease_leader_election_role.yaml", "Role", "openstack-cinder-csi-driver-lease-leader-election", Some(NS)),
        ("privileged_role.yaml", "ClusterRole", "openstack-cinder-privileged-role", None),
        ("prometheus_role.yaml", "Role", "openstack-cinder-csi-driver-prometheus", Some(NS)),
        ("kube_rbac_proxy_binding.yaml", "ClusterRoleBinding", "openstack-cinder-kube-rbac-proxy-binding", None),
        ("lease_leader_election_binding.yaml", "RoleBinding", "openstack-cinder-csi-driver-lease-leader-election", Some(NS)),
        ("main_attacher_binding.yaml", "ClusterRoleBinding", "openstack-cinder-csi-main-attacher-binding", None),
        ("main_provisioner_binding.yaml", "ClusterRoleBinding", "openstack-cinder-csi-main-provisioner-binding", None),
        ("main_resizer_binding.yaml", "ClusterRoleBinding", "openstack-cinder-csi-main-resizer-binding", None),
        ("main_snapshotter_binding.yaml", "ClusterRoleBinding", "openstack-cinder-csi-main-snapshotter-binding", None),
        ("node_privileged_binding.yaml", "ClusterRoleBinding", "openstack-cinder-node-privileged-binding", None),
        ("prometheus_binding.yaml", "RoleBinding", "openstack-cinder-csi-driver-prometheus", Some(NS)),
        ("storageclass_reader_resizer_binding.yaml", "ClusterRoleBinding", "openstack-cinder-csi-storageclass-reader-resizer-binding", None),
        ("volumesnapshot_reader_provisioner_binding.yaml", "ClusterRoleBinding", "openstack-cinder-csi-volumesnapshot-reader-provisioner-binding", None),
        ("csidriver.yaml", "CSIDriver", "cinder.csi.openstack.org", None),
        ("node_sa.yaml", "ServiceAccount", "openstack-cinder-csi-driver-node-sa", Some(NS)),
        ("controller.yaml", "Deployment", "openstack-cinder-csi-driver-controller", Some(NS)),
        ("node.yaml", "DaemonSet", "openstack-cinder-csi-driver-node", Some(NS)),
        ("storageclass.yaml", "StorageClass", "standard-csi", None),
        ("volumesnapshotclass.yaml", "VolumeSnapshotClass", "standard-csi", None),
    ];

    /// The images Cinder's operator reads from its environment (`${…_IMAGE}` in the assets).
    const IMAGES: &[&str] = &[
        "DRIVER_IMAGE",
        "PROVISIONER_IMAGE",
        "ATTACHER_IMAGE",
        "RESIZER_IMAGE",
        "SNAPSHOTTER_IMAGE",
        "LIVENESS_PROBE_IMAGE",
        "NODE_DRIVER_REGISTRAR_IMAGE",
        "KUBE_RBAC_PROXY_IMAGE",
    ];

    /// Every asset keeps operator-kit's contract for a driver's assets (known placeholders, one
    /// object of a kind the kit can write, a namespace that fits the kind's scope, nothing
    /// twice) and declares the object anchors §4.2 lists, in render order; the images are
    /// those Cinder's operator reads from its environment.
    #[test]
    fn assets_match_anchors() {
        let inventory = ASSETS.inventory(&Replacements::examples(NS));
        assert_eq!(inventory.unwrap_or_else(|e| panic!("{e}")), INVENTORY);
        assert_eq!(ASSETS.image_placeholders(), IMAGES);
    }

    fn stage(kind: &str) -> u8 {
        match kind {
            "ClusterRole" | "Role" => 1,
            "ClusterRoleBinding" | "RoleBinding" => 2,
            _ => 3,
        }
    }

    /// Anchors §4.1: static lists hold no workload or class objects, roles come before
    /// bindings, bindings before the rest.
    #[test]
    fn static_lists_are_filtered_and_ordered() {
        for list in [CONTROL_PLANE_STATIC, GUEST_STATIC] {
            let stages: Vec<u8> = list.iter().map(|a| stage(&kind_of(a))).collect();
            assert!(stages.is_sorted(), "out of order: {stages:?}");
            for asset in list {
                let kind = kind_of(asset);
                assert!(
                    ![
                        "Deployment",
                        "DaemonSet",
                        "StorageClass",
                        "VolumeSnapshotClass"
                    ]
                    .contains(&kind.as_str()),
                    "{} ({kind}) belongs to its own step",
                    asset.name
                );
            }
        }
        let cp: Vec<&str> = CONTROL_PLANE_STATIC.iter().map(|a| a.name).collect();
        assert_eq!(
            cp,
            [
                "cabundle_cm.yaml",
                "controller_pdb.yaml",
                "controller_sa.yaml",
                "service.yaml",
                "servicemonitor.yaml"
            ]
        );
        assert_eq!(kind_of(&CONTROLLER_DEPLOYMENT), "Deployment");
        assert_eq!(kind_of(&NODE_DAEMONSET), "DaemonSet");
        assert_eq!(kind_of(&STORAGE_CLASS), "StorageClass");
        assert_eq!(kind_of(&VOLUME_SNAPSHOT_CLASS), "VolumeSnapshotClass");
    }

    #[test]
    fn crd_backed_assets_name_their_crd() {
        for asset in ASSETS.all() {
            let expected = match kind_of(asset).as_str() {
                "ServiceMonitor" => Some(SERVICE_MONITOR_CRD),
                "VolumeSnapshotClass" => Some(VOLUME_SNAPSHOT_CLASS_CRD),
                _ => None,
            };
            assert_eq!(asset.requires_crd, expected, "{}", asset.name);
        }
    }

    fn container<'a>(spec: &'a PodSpec, name: &str) -> &'a Container {
        spec.containers
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no container {name}"))
    }

    fn requests(c: &Container) -> (String, String) {
        let r = c.resources.as_ref().unwrap().requests.as_ref().unwrap();
        (r["cpu"].0.clone(), r["memory"].0.clone())
    }

    fn args(c: &Container) -> Vec<&str> {
        c.args
            .as_ref()
            .unwrap()
            .iter()
            .map(String::as_str)
            .collect()
    }

    fn ports(c: &Container) -> Vec<(String, i32)> {
        c.ports
            .iter()
            .flatten()
            .map(|p| (p.name.clone().unwrap(), p.container_port))
            .collect()
    }

    fn mounts(c: &Container) -> Vec<(&str, &str, bool)> {
        c.volume_mounts
            .iter()
            .flatten()
            .map(|m| {
                (
                    m.name.as_str(),
                    m.mount_path.as_str(),
                    m.read_only.unwrap_or(false),
                )
            })
            .collect()
    }

    fn quantity_milli(q: &str) -> u64 {
        q.strip_suffix('m').unwrap().parse().unwrap()
    }

    fn quantity_mi(q: &str) -> u64 {
        q.strip_suffix("Mi").unwrap().parse().unwrap()
    }

    fn leader_args(ns: &str) -> Vec<String> {
        vec![
            "--leader-election".into(),
            "--leader-election-lease-duration=137s".into(),
            "--leader-election-renew-deadline=107s".into(),
            "--leader-election-retry-period=26s".into(),
            format!("--leader-election-namespace={ns}"),
        ]
    }

    fn rbac_proxy_args(exposed: u16, loopback: u16) -> Vec<String> {
        vec![
            format!("--secure-listen-address=0.0.0.0:{exposed}"),
            format!("--upstream=http://127.0.0.1:{loopback}/"),
            "--tls-cert-file=/etc/tls/private/tls.crt".into(),
            "--tls-private-key-file=/etc/tls/private/tls.key".into(),
            "--tls-cipher-suites=TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384".into(),
            "--tls-min-version=VersionTLS12".into(),
            "--logtostderr=true".into(),
        ]
    }

    /// Anchors §4.3 and §6.1: the controller Deployment.
    #[test]
    fn controller_deployment_golden() {
        let d: Deployment = object(CONTROLLER_DEPLOYMENT.name);
        let ann = d.metadata.annotations.as_ref().unwrap();
        assert_eq!(ann["config.openshift.io/inject-proxy"], "csi-driver");
        assert_eq!(
            ann["config.openshift.io/inject-proxy-cabundle"],
            "csi-driver"
        );
        let spec = d.spec.as_ref().unwrap();
        assert_eq!(spec.replicas, None, "replicas come from the replicas hook");
        assert_eq!(
            spec.selector.match_labels.as_ref().unwrap()["app"],
            "openstack-cinder-csi-driver-controller"
        );
        let strategy = spec.strategy.as_ref().unwrap();
        assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"));
        let ru = strategy.rolling_update.as_ref().unwrap();
        assert_eq!(
            serde_json::to_value(&ru.max_surge).unwrap(),
            serde_json::json!(0)
        );
        assert_eq!(
            serde_json::to_value(&ru.max_unavailable).unwrap(),
            serde_json::json!(1)
        );

        let meta = spec.template.metadata.as_ref().unwrap();
        let pann = meta.annotations.as_ref().unwrap();
        assert_eq!(
            pann["cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"],
            "cacert,config-cinderplugin,secret-cinderplugin,socket-dir"
        );
        assert_eq!(pann["openshift.io/required-scc"], "restricted-v2");
        assert_eq!(
            pann["target.workload.openshift.io/management"],
            r#"{"effect": "PreferredDuringScheduling"}"#
        );
        let labels = meta.labels.as_ref().unwrap();
        assert_eq!(labels.len(), 5);
        assert_eq!(labels["app"], "openstack-cinder-csi-driver-controller");
        for policy in ["all-egress", "api-server", "dns", "metrics-range"] {
            assert_eq!(
                labels[&format!("openshift.storage.network-policy.{policy}")],
                "allow"
            );
        }

        let pod = spec.template.spec.as_ref().unwrap();
        assert_eq!(
            pod.service_account_name.as_deref(),
            Some("openstack-cinder-csi-driver-controller-sa")
        );
        assert_eq!(
            pod.priority_class_name.as_deref(),
            Some("system-cluster-critical")
        );
        assert_eq!(
            pod.node_selector.as_ref().unwrap(),
            &BTreeMap::from([("node-role.kubernetes.io/master".to_string(), String::new())])
        );
        let tolerations: Vec<_> = pod
            .tolerations
            .iter()
            .flatten()
            .map(|t| (t.key.as_deref(), t.operator.as_deref(), t.effect.as_deref()))
            .collect();
        assert_eq!(
            tolerations,
            [
                (Some("CriticalAddonsOnly"), Some("Exists"), None),
                (
                    Some("node-role.kubernetes.io/master"),
                    Some("Exists"),
                    Some("NoSchedule")
                )
            ]
        );
        let anti = pod
            .affinity
            .as_ref()
            .unwrap()
            .pod_anti_affinity
            .as_ref()
            .unwrap();
        let pref = &anti
            .preferred_during_scheduling_ignored_during_execution
            .as_ref()
            .unwrap()[0];
        assert_eq!(pref.weight, 100);
        assert_eq!(
            pref.pod_affinity_term.topology_key,
            "kubernetes.io/hostname"
        );

        let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "csi-driver",
                "kube-rbac-proxy-8202",
                "csi-provisioner",
                "provisioner-kube-rbac-proxy",
                "csi-attacher",
                "attacher-kube-rbac-proxy",
                "csi-resizer",
                "resizer-kube-rbac-proxy",
                "csi-snapshotter",
                "snapshotter-kube-rbac-proxy",
                "csi-liveness-probe",
            ]
        );
        for c in &pod.containers {
            assert_eq!(
                c.security_context
                    .as_ref()
                    .unwrap()
                    .read_only_root_filesystem,
                Some(true),
                "{}",
                c.name
            );
            assert_eq!(
                c.termination_message_policy.as_deref(),
                Some("FallbackToLogsOnError")
            );
            assert_eq!(c.image_pull_policy.as_deref(), Some("IfNotPresent"));
            let (cpu, mem) = requests(c);
            assert_eq!(cpu, "10m", "{}", c.name);
            let want_mem = if c.name.contains("kube-rbac-proxy") {
                "20Mi"
            } else {
                "50Mi"
            };
            assert_eq!(mem, want_mem, "{}", c.name);
            assert!(
                c.resources.as_ref().unwrap().limits.is_none(),
                "no limits anywhere"
            );
        }
        // Anchors §6.1: 11 containers, 110m CPU and 400Mi memory requested.
        let cpu: u64 = pod
            .containers
            .iter()
            .map(|c| quantity_milli(&requests(c).0))
            .sum();
        let mem: u64 = pod
            .containers
            .iter()
            .map(|c| quantity_mi(&requests(c).1))
            .sum();
        assert_eq!((pod.containers.len(), cpu, mem), (11, 110, 400));

        let driver = container(pod, "csi-driver");
        assert_eq!(
            driver.image.as_deref(),
            Some("quay.io/test/driver_image:latest")
        );
        assert_eq!(
            args(driver),
            [
                "/bin/cinder-csi-plugin",
                "--provide-controller-service=true",
                "--provide-node-service=false",
                "--endpoint=$(CSI_ENDPOINT)",
                "--http-endpoint=localhost:8202",
                "--cloud-config=$(CLOUD_CONFIG)",
                "--cluster=mycluster-x7k2p",
                "--with-topology=$(ENABLE_TOPOLOGY)",
                "--v=2",
            ]
        );
        let env = driver.env.as_ref().unwrap();
        assert_eq!(env[0].name, "CSI_ENDPOINT");
        assert_eq!(env[0].value.as_deref(), Some("unix://csi/csi.sock"));
        assert_eq!(env[1].name, "CLOUD_CONFIG");
        assert_eq!(
            env[1].value.as_deref(),
            Some("/etc/kubernetes/config/cloud.conf")
        );
        assert_eq!(env[2].name, "ENABLE_TOPOLOGY");
        let cm_ref = env[2]
            .value_from
            .as_ref()
            .unwrap()
            .config_map_key_ref
            .as_ref()
            .unwrap();
        assert_eq!(
            (cm_ref.name.as_str(), cm_ref.key.as_str()),
            ("cloud-conf", "enable_topology")
        );
        assert_eq!(ports(driver), [("healthz".to_string(), 10301)]);
        let probe = driver.liveness_probe.as_ref().unwrap();
        assert_eq!(
            probe.http_get.as_ref().unwrap().path.as_deref(),
            Some("/healthz")
        );
        assert_eq!(probe.http_get.as_ref().unwrap().host, None);
        assert_eq!(
            (
                probe.initial_delay_seconds,
                probe.timeout_seconds,
                probe.period_seconds,
                probe.failure_threshold
            ),
            (Some(10), Some(10), Some(30), Some(5))
        );
        assert_eq!(
            mounts(driver),
            [
                (
                    "cacert",
                    "/etc/kubernetes/static-pod-resources/configmaps/cloud-config",
                    false
                ),
                ("config-cinderplugin", "/etc/kubernetes/config", true),
                ("secret-cinderplugin", "/etc/kubernetes/secret", true),
                ("socket-dir", "/csi", false),
            ]
        );

        // Anchors §4.7: loopback 820x, exposed 920x, one proxy per sidecar with metrics.
        for (proxy, exposed, port_name) in [
            ("kube-rbac-proxy-8202", 9202, "driver-m"),
            ("provisioner-kube-rbac-proxy", 9203, "provisioner-m"),
            ("attacher-kube-rbac-proxy", 9204, "attacher-m"),
            ("resizer-kube-rbac-proxy", 9205, "resizer-m"),
            ("snapshotter-kube-rbac-proxy", 9206, "snapshotter-m"),
        ] {
            let c = container(pod, proxy);
            assert_eq!(
                c.image.as_deref(),
                Some("quay.io/test/kube_rbac_proxy_image:latest")
            );
            assert_eq!(args(c), rbac_proxy_args(exposed, exposed - 1000));
            assert_eq!(ports(c), [(port_name.to_string(), i32::from(exposed))]);
            assert_eq!(
                mounts(c),
                [("metrics-serving-cert", "/etc/tls/private", false)]
            );
        }

        let sidecar_socket = [("socket-dir", "/var/lib/csi/sockets/pluginproxy/", false)];
        let csi_address = "--csi-address=/var/lib/csi/sockets/pluginproxy/csi.sock";
        let mut want: Vec<String> =
            vec![csi_address.into(), "--http-endpoint=localhost:8203".into()];
        want.extend(leader_args(NS));
        want.extend([
            "--v=2".into(),
            "--timeout=3m".into(),
            "--default-fstype=ext4".into(),
        ]);
        let c = container(pod, "csi-provisioner");
        assert_eq!(
            c.image.as_deref(),
            Some("quay.io/test/provisioner_image:latest")
        );
        assert_eq!(args(c), want);
        assert_eq!(mounts(c), sidecar_socket);

        let mut want: Vec<String> =
            vec![csi_address.into(), "--http-endpoint=localhost:8204".into()];
        want.extend(leader_args(NS));
        want.extend(["--v=2".into(), "--timeout=3m".into()]);
        let c = container(pod, "csi-attacher");
        assert_eq!(
            c.image.as_deref(),
            Some("quay.io/test/attacher_image:latest")
        );
        assert_eq!(args(c), want);
        assert_eq!(mounts(c), sidecar_socket);

        let mut want: Vec<String> =
            vec![csi_address.into(), "--http-endpoint=localhost:8205".into()];
        want.extend(leader_args(NS));
        want.push("--v=2".into());
        let c = container(pod, "csi-resizer");
        assert_eq!(
            c.image.as_deref(),
            Some("quay.io/test/resizer_image:latest")
        );
        assert_eq!(args(c), want);
        assert_eq!(mounts(c), sidecar_socket);

        let mut want: Vec<String> = vec![
            csi_address.into(),
            "--metrics-address=localhost:8206".into(),
        ];
        want.extend(leader_args(NS));
        want.push("--v=2".into());
        let c = container(pod, "csi-snapshotter");
        assert_eq!(
            c.image.as_deref(),
            Some("quay.io/test/snapshotter_image:latest")
        );
        assert_eq!(args(c), want);
        assert_eq!(mounts(c), sidecar_socket);

        let c = container(pod, "csi-liveness-probe");
        assert_eq!(
            c.image.as_deref(),
            Some("quay.io/test/liveness_probe_image:latest")
        );
        assert_eq!(
            args(c),
            [
                "--csi-address=/csi/csi.sock",
                "--health-port=10301",
                "--v=2",
                "--probe-timeout=10s"
            ]
        );
        assert_eq!(mounts(c), [("socket-dir", "/csi", false)]);

        let volumes = serde_json::to_value(pod.volumes.as_ref().unwrap()).unwrap();
        assert_eq!(
            volumes,
            serde_json::json!([
                {"name": "socket-dir", "emptyDir": {}},
                {"name": "metrics-serving-cert",
                 "secret": {"secretName": "openstack-cinder-csi-driver-controller-metrics-serving-cert"}},
                {"name": "secret-cinderplugin",
                 "secret": {"secretName": "openstack-cloud-credentials",
                            "items": [{"key": "clouds.yaml", "path": "clouds.yaml"}]}},
                {"name": "config-cinderplugin",
                 "configMap": {"name": "cloud-conf",
                               "items": [{"key": "cloud.conf", "path": "cloud.conf"}]}},
                {"name": "cacert",
                 "configMap": {"name": "cloud-conf", "optional": true,
                               "items": [{"key": "ca-bundle.pem", "path": "ca-bundle.pem"}]}},
            ])
        );
    }

    /// Anchors §4.4 and §6.1: the node DaemonSet.
    #[test]
    fn node_daemonset_golden() {
        let ds: DaemonSet = object(NODE_DAEMONSET.name);
        let ann = ds.metadata.annotations.as_ref().unwrap();
        assert_eq!(ann["config.openshift.io/inject-proxy"], "csi-driver");
        assert_eq!(
            ann["config.openshift.io/inject-proxy-cabundle"],
            "csi-driver"
        );
        let spec = ds.spec.as_ref().unwrap();
        let strategy = spec.update_strategy.as_ref().unwrap();
        assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"));
        assert_eq!(
            serde_json::to_value(&strategy.rolling_update.as_ref().unwrap().max_unavailable)
                .unwrap(),
            serde_json::json!("10%")
        );
        let meta = spec.template.metadata.as_ref().unwrap();
        assert_eq!(
            meta.labels.as_ref().unwrap(),
            &BTreeMap::from([(
                "app".to_string(),
                "openstack-cinder-csi-driver-node".to_string()
            )])
        );
        let pann = meta.annotations.as_ref().unwrap();
        assert_eq!(
            pann["cluster-autoscaler.kubernetes.io/enable-ds-eviction"],
            "false"
        );
        assert_eq!(pann["openshift.io/required-scc"], "privileged");
        assert_eq!(
            pann["target.workload.openshift.io/management"],
            r#"{"effect": "PreferredDuringScheduling"}"#
        );

        let pod = spec.template.spec.as_ref().unwrap();
        assert_eq!(pod.host_network, Some(true));
        assert_eq!(
            pod.priority_class_name.as_deref(),
            Some("system-node-critical")
        );
        assert_eq!(
            pod.service_account_name.as_deref(),
            Some("openstack-cinder-csi-driver-node-sa")
        );
        assert_eq!(
            pod.node_selector.as_ref().unwrap()["kubernetes.io/os"],
            "linux"
        );
        let tolerations = pod.tolerations.as_ref().unwrap();
        assert_eq!(tolerations.len(), 1);
        assert_eq!(tolerations[0].operator.as_deref(), Some("Exists"));
        assert_eq!(tolerations[0].key, None);

        let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "csi-driver",
                "csi-liveness-probe",
                "csi-node-driver-registrar"
            ]
        );
        for c in &pod.containers {
            assert_eq!(
                requests(c),
                ("10m".to_string(), "50Mi".to_string()),
                "{}",
                c.name
            );
            assert_eq!(
                c.security_context
                    .as_ref()
                    .unwrap()
                    .read_only_root_filesystem,
                Some(true)
            );
        }

        let driver = container(pod, "csi-driver");
        assert_eq!(
            args(driver),
            [
                "/bin/cinder-csi-plugin",
                "--provide-controller-service=false",
                "--provide-node-service=true",
                "--endpoint=$(CSI_ENDPOINT)",
                "--cloud-config=$(CLOUD_CONFIG)",
                "--with-topology=$(ENABLE_TOPOLOGY)",
                "--v=2",
            ]
        );
        let env_names: Vec<&str> = driver
            .env
            .iter()
            .flatten()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(
            env_names,
            ["CSI_ENDPOINT", "CLOUD_CONFIG", "ENABLE_TOPOLOGY"]
        );
        assert_eq!(ports(driver), [("healthz".to_string(), 10300)]);
        let probe = driver.liveness_probe.as_ref().unwrap();
        assert_eq!(
            probe.http_get.as_ref().unwrap().host.as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(
            (
                probe.initial_delay_seconds,
                probe.timeout_seconds,
                probe.period_seconds
            ),
            (Some(10), Some(10), Some(30))
        );
        assert_eq!(probe.failure_threshold, Some(5));
        let sc = driver.security_context.as_ref().unwrap();
        assert_eq!(sc.privileged, Some(true));
        assert_eq!(sc.allow_privilege_escalation, Some(true));
        assert_eq!(
            sc.capabilities.as_ref().unwrap().add.as_ref().unwrap(),
            &["SYS_ADMIN"]
        );
        assert_eq!(
            mounts(driver),
            [
                ("kubelet-dir", "/var/lib/kubelet", false),
                ("socket-dir", "/csi", false),
                ("device-dir", "/dev", false),
                ("etc-selinux", "/etc/selinux", false),
                ("sys-fs", "/sys/fs", false),
                (
                    "cacert",
                    "/etc/kubernetes/static-pod-resources/configmaps/cloud-config",
                    false
                ),
                ("config-cinderplugin", "/etc/kubernetes/config", true),
                ("secret-cinderplugin", "/etc/kubernetes/secret", true),
            ]
        );
        let propagation: Vec<Option<&str>> = driver
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| m.mount_propagation.as_deref())
            .collect();
        assert_eq!(propagation[0], Some("Bidirectional"));
        assert_eq!(propagation[2], Some("HostToContainer"));

        let c = container(pod, "csi-liveness-probe");
        assert_eq!(
            args(c),
            [
                "--csi-address=/csi/csi.sock",
                "--http-endpoint=127.0.0.1:10300",
                "--v=2",
                "--probe-timeout=10s"
            ]
        );

        let c = container(pod, "csi-node-driver-registrar");
        assert_eq!(
            c.image.as_deref(),
            Some("quay.io/test/node_driver_registrar_image:latest")
        );
        assert_eq!(
            args(c),
            [
                "--csi-address=/csi/csi.sock",
                "--kubelet-registration-path=/var/lib/kubelet/plugins/cinder.csi.openstack.org/csi.sock",
                "--http-endpoint=127.0.0.1:10304",
                "--v=2",
            ]
        );
        let pre_stop = c.lifecycle.as_ref().unwrap().pre_stop.as_ref().unwrap();
        assert_eq!(
            pre_stop.exec.as_ref().unwrap().command.as_ref().unwrap(),
            &[
                "/bin/sh",
                "-c",
                "rm -rf /registration/cinder.csi.openstack.org-reg.sock /csi/csi.sock"
            ]
        );
        assert_eq!(ports(c), [("rhealthz".to_string(), 10304)]);
        let probe = c.liveness_probe.as_ref().unwrap();
        assert_eq!(
            (
                probe.initial_delay_seconds,
                probe.timeout_seconds,
                probe.period_seconds,
                probe.failure_threshold
            ),
            (Some(10), Some(3), Some(10), Some(5))
        );
        assert_eq!(c.security_context.as_ref().unwrap().privileged, Some(true));

        let host_paths: Vec<(String, String, String)> = pod
            .volumes
            .iter()
            .flatten()
            .filter_map(|v| {
                let hp = v.host_path.as_ref()?;
                Some((v.name.clone(), hp.path.clone(), hp.type_.clone().unwrap()))
            })
            .collect();
        let want: Vec<(String, String, String)> = [
            ("kubelet-dir", "/var/lib/kubelet", "Directory"),
            (
                "socket-dir",
                "/var/lib/kubelet/plugins/cinder.csi.openstack.org/",
                "DirectoryOrCreate",
            ),
            (
                "registration-dir",
                "/var/lib/kubelet/plugins_registry/",
                "Directory",
            ),
            ("device-dir", "/dev", "Directory"),
            ("etc-selinux", "/etc/selinux", "DirectoryOrCreate"),
            ("sys-fs", "/sys/fs", "Directory"),
        ]
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect();
        assert_eq!(host_paths, want);
        let others: Vec<&str> = pod
            .volumes
            .iter()
            .flatten()
            .filter(|v| v.host_path.is_none())
            .map(|v| v.name.as_str())
            .collect();
        assert_eq!(
            others,
            [
                "metrics-serving-cert",
                "cacert",
                "config-cinderplugin",
                "secret-cinderplugin"
            ]
        );
        let cacert = pod
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name == "cacert")
            .unwrap();
        assert_eq!(cacert.config_map.as_ref().unwrap().optional, Some(true));
    }

    /// Anchors §4.2 and §4.7: metrics Service and ServiceMonitor.
    #[test]
    fn metrics_service_and_monitor_golden() {
        let svc: Service = object("service.yaml");
        assert_eq!(
            svc.metadata.annotations.as_ref().unwrap()["service.beta.openshift.io/serving-cert-secret-name"],
            "openstack-cinder-csi-driver-controller-metrics-serving-cert"
        );
        assert_eq!(
            svc.metadata.labels.as_ref().unwrap()["app"],
            "openstack-cinder-csi-driver-controller-metrics"
        );
        let spec = svc.spec.as_ref().unwrap();
        assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
        assert_eq!(
            spec.selector.as_ref().unwrap()["app"],
            "openstack-cinder-csi-driver-controller"
        );
        let ports: Vec<(String, i32, Value)> = spec
            .ports
            .iter()
            .flatten()
            .map(|p| {
                (
                    p.name.clone().unwrap(),
                    p.port,
                    serde_json::to_value(&p.target_port).unwrap(),
                )
            })
            .collect();
        let want: Vec<(String, i32, Value)> = [
            ("provisioner-m", 9203),
            ("attacher-m", 9204),
            ("resizer-m", 9205),
            ("snapshotter-m", 9206),
            ("driver-m", 9202),
        ]
        .iter()
        .map(|(n, p)| (n.to_string(), *p, Value::from(*n)))
        .collect();
        assert_eq!(ports, want);

        let sm = object::<Value>("servicemonitor.yaml");
        assert_eq!(sm["spec"]["jobLabel"], "component");
        assert_eq!(
            sm["spec"]["selector"]["matchLabels"]["app"],
            "openstack-cinder-csi-driver-controller-metrics"
        );
        let endpoints = sm["spec"]["endpoints"].as_array().unwrap();
        let ports: Vec<&str> = endpoints
            .iter()
            .map(|e| e["port"].as_str().unwrap())
            .collect();
        assert_eq!(
            ports,
            [
                "provisioner-m",
                "attacher-m",
                "resizer-m",
                "snapshotter-m",
                "driver-m"
            ]
        );
        for e in endpoints {
            assert_eq!(e["interval"], "30s");
            assert_eq!(e["scheme"], "https");
            assert_eq!(e["path"], "/metrics");
            assert_eq!(
                e["bearerTokenFile"],
                "/var/run/secrets/kubernetes.io/serviceaccount/token"
            );
            assert_eq!(
                e["tlsConfig"]["caFile"],
                "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt"
            );
            assert_eq!(
                e["tlsConfig"]["serverName"],
                "openstack-cinder-csi-driver-controller-metrics.openshift-cluster-csi-drivers.svc"
            );
        }
    }

    /// Anchors §4.2: the trusted CA bundle ConfigMap and the PDB.
    #[test]
    fn cabundle_and_pdb_golden() {
        let cm = object::<Value>("cabundle_cm.yaml");
        assert_eq!(
            cm["metadata"]["labels"]["config.openshift.io/inject-trusted-cabundle"],
            "true"
        );
        assert!(cm.get("data").is_none(), "the injector owns the data");

        let pdb: PodDisruptionBudget = object("controller_pdb.yaml");
        let spec = pdb.spec.unwrap();
        assert_eq!(
            serde_json::to_value(&spec.max_unavailable).unwrap(),
            serde_json::json!(1)
        );
        assert_eq!(
            spec.unhealthy_pod_eviction_policy.as_deref(),
            Some("AlwaysAllow")
        );
        assert_eq!(
            spec.selector.unwrap().match_labels.unwrap()["app"],
            "openstack-cinder-csi-driver-controller"
        );
    }

    /// Anchors §4.6: CSIDriver, StorageClass and VolumeSnapshotClass.
    #[test]
    fn driver_and_classes_golden() {
        let d: CSIDriver = object("csidriver.yaml");
        assert_eq!(
            d.metadata.annotations.as_ref().unwrap()["csi.openshift.io/managed"],
            "true"
        );
        let s = d.spec;
        assert_eq!(s.attach_required, Some(true));
        assert_eq!(s.fs_group_policy.as_deref(), Some("File"));
        assert_eq!(s.pod_info_on_mount, Some(true));
        assert_eq!(s.requires_republish, Some(false));
        assert_eq!(s.se_linux_mount, Some(true));
        assert_eq!(s.storage_capacity, Some(false));
        assert_eq!(
            s.volume_lifecycle_modes.as_deref(),
            Some(&["Persistent".to_string()][..])
        );

        let sc: StorageClass = object(STORAGE_CLASS.name);
        assert_eq!(
            sc.metadata.annotations.as_ref().unwrap()["storageclass.kubernetes.io/is-default-class"],
            "true"
        );
        assert_eq!(sc.provisioner, "cinder.csi.openstack.org");
        assert_eq!(sc.parameters, None);
        assert_eq!(sc.reclaim_policy.as_deref(), Some("Delete"));
        assert_eq!(
            sc.volume_binding_mode.as_deref(),
            Some("WaitForFirstConsumer")
        );
        assert_eq!(sc.allow_volume_expansion, Some(true));

        let vsc = object::<Value>(VOLUME_SNAPSHOT_CLASS.name);
        assert_eq!(vsc["apiVersion"], "snapshot.storage.k8s.io/v1");
        assert_eq!(
            vsc["metadata"]["annotations"]["snapshot.storage.kubernetes.io/is-default-class"],
            "true"
        );
        assert_eq!(vsc["driver"], "cinder.csi.openstack.org");
        assert_eq!(vsc["deletionPolicy"], "Delete");
        assert_eq!(
            vsc["parameters"],
            serde_json::json!({"force-create": "false"})
        );
    }

    fn subjects_of(v: &Value) -> Vec<(String, String, String)> {
        v["subjects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["kind"].as_str().unwrap().to_string(),
                    s["name"].as_str().unwrap().to_string(),
                    s["namespace"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    /// Anchors §4.2: RBAC rules, role references and subjects.
    #[test]
    fn rbac_golden() {
        let controller_sa = (
            "ServiceAccount".to_string(),
            "openstack-cinder-csi-driver-controller-sa".to_string(),
            NS.to_string(),
        );
        #[rustfmt::skip]
        let controller_bindings = [
            ("kube_rbac_proxy_binding.yaml", "ClusterRole", "openstack-cinder-kube-rbac-proxy-role"),
            ("lease_leader_election_binding.yaml", "Role", "openstack-cinder-csi-driver-lease-leader-election"),
            ("main_attacher_binding.yaml", "ClusterRole", "openshift-csi-main-attacher-role"),
            ("main_provisioner_binding.yaml", "ClusterRole", "openshift-csi-main-provisioner-role"),
            ("main_resizer_binding.yaml", "ClusterRole", "openshift-csi-main-resizer-role"),
            ("main_snapshotter_binding.yaml", "ClusterRole", "openshift-csi-main-snapshotter-role"),
            ("storageclass_reader_resizer_binding.yaml", "ClusterRole", "openshift-csi-resizer-storageclass-reader-role"),
            ("volumesnapshot_reader_provisioner_binding.yaml", "ClusterRole", "openshift-csi-provisioner-volumesnapshot-reader-role"),
        ];
        for (file, kind, role) in controller_bindings {
            let v = object::<Value>(file);
            assert_eq!(v["roleRef"]["kind"], kind, "{file}");
            assert_eq!(v["roleRef"]["name"], role, "{file}");
            assert_eq!(v["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
            assert_eq!(
                subjects_of(&v),
                std::slice::from_ref(&controller_sa),
                "{file}"
            );
        }
        // The kube-rbac-proxy binding is the one subject in ${NAMESPACE}; all others use
        // ${NODE_NAMESPACE} (they differ on HyperShift).
        for asset in GUEST_STATIC {
            if asset.content.contains("subjects:") && asset.name != "prometheus_binding.yaml" {
                let expected = if asset.name == "kube_rbac_proxy_binding.yaml" {
                    "namespace: ${NAMESPACE}"
                } else {
                    "namespace: ${NODE_NAMESPACE}"
                };
                let subjects = asset.content.split("subjects:").nth(1).unwrap();
                assert!(subjects.contains(expected), "{}", asset.name);
            }
        }

        let v = object::<Value>("node_privileged_binding.yaml");
        assert_eq!(v["roleRef"]["name"], "openstack-cinder-privileged-role");
        assert_eq!(
            subjects_of(&v),
            [(
                "ServiceAccount".to_string(),
                "openstack-cinder-csi-driver-node-sa".to_string(),
                NS.to_string()
            )]
        );
        let v = object::<Value>("prometheus_binding.yaml");
        assert_eq!(v["roleRef"]["kind"], "Role");
        assert_eq!(
            v["roleRef"]["name"],
            "openstack-cinder-csi-driver-prometheus"
        );
        assert_eq!(
            subjects_of(&v),
            [(
                "ServiceAccount".to_string(),
                "prometheus-k8s".to_string(),
                "openshift-monitoring".to_string()
            )]
        );
        // Typed parses check apiVersion and kind against the Kubernetes schema.
        let _: RoleBinding = object("prometheus_binding.yaml");
        let _: RoleBinding = object("lease_leader_election_binding.yaml");
        let _: ClusterRoleBinding = object("kube_rbac_proxy_binding.yaml");

        let r: ClusterRole = object("kube_rbac_proxy_role.yaml");
        let rule = &r.rules.unwrap()[0];
        assert_eq!(
            rule.api_groups.as_deref(),
            Some(&["authentication.k8s.io".to_string()][..])
        );
        assert_eq!(
            rule.resources.as_deref(),
            Some(&["tokenreviews".to_string()][..])
        );
        assert_eq!(rule.verbs, ["create"]);

        let r: Role = object("lease_leader_election_role.yaml");
        let rule = &r.rules.unwrap()[0];
        assert_eq!(
            rule.api_groups.as_deref(),
            Some(&["coordination.k8s.io".to_string()][..])
        );
        assert_eq!(rule.resources.as_deref(), Some(&["leases".to_string()][..]));
        assert_eq!(
            rule.verbs,
            ["get", "watch", "list", "delete", "update", "create"]
        );

        let r: ClusterRole = object("privileged_role.yaml");
        let rule = &r.rules.unwrap()[0];
        assert_eq!(
            rule.api_groups.as_deref(),
            Some(&["security.openshift.io".to_string()][..])
        );
        assert_eq!(
            rule.resources.as_deref(),
            Some(&["securitycontextconstraints".to_string()][..])
        );
        assert_eq!(
            rule.resource_names.as_deref(),
            Some(&["privileged".to_string()][..])
        );
        assert_eq!(rule.verbs, ["use"]);

        let r: Role = object("prometheus_role.yaml");
        let rule = &r.rules.unwrap()[0];
        assert_eq!(rule.api_groups.as_deref(), Some(&[String::new()][..]));
        assert_eq!(
            rule.resources.as_deref(),
            Some(
                &[
                    "services".to_string(),
                    "endpoints".to_string(),
                    "pods".to_string()
                ][..]
            )
        );
        assert_eq!(rule.verbs, ["get", "list", "watch"]);
    }
}
