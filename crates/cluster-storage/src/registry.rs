//! The driver registry: every CSI driver operator the CSO can start, as one declarative entry
//! each (anchors §3.2–§3.3), and the platform rule that picks them ([`select`],
//! [`drivers_for`]).
//!
//! Adding a driver operator means adding a [`Driver`] to [`DRIVERS`] (with its assets in
//! `assets/<name>/`). The names here (condition
//! prefixes, object names, env vars) are OpenShift's exactly: CSO's conditions on
//! `Storage/cluster`, the operator Deployments and the image env vars are read by other tools.
//!
//! What this module must not do: read the environment, build objects or do any I/O. It only
//! says *what* exists; the steps that apply it live elsewhere.

use openshift_api::config::ObjectReference;
use operator_kit::assets::Asset;

/// The platform (`Infrastructure.status.platformStatus.type`) on which Cinder and Manila run.
pub const OPENSTACK: &str = "OpenStack";

/// The namespace of the CSI driver operators' Deployments (`manifests/02_…namespace.yaml`).
pub const CSI_OPERATOR_NAMESPACE: &str = "openshift-cluster-csi-drivers";

/// One `${PLACEHOLDER}` of an operator Deployment asset and the CSO environment variable whose
/// value replaces it (CSO `ImageReplacer` and `sidecarReplacer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageVar {
    /// The placeholder in the operator Deployment asset, e.g. `${OPERATOR_IMAGE}`.
    pub placeholder: &'static str,
    /// The CSO's own environment variable, e.g. `OPENSTACK_CINDER_DRIVER_OPERATOR_IMAGE`.
    pub cso_env: &'static str,
}

/// The placeholders every driver operator Deployment may use, filled from the CSO environment
/// variables of the same name (CSO `pkg/operator/csidriveroperator/util.go`).
pub const SIDECAR_IMAGE_VARS: &[ImageVar] = &[
    ImageVar {
        placeholder: "${PROVISIONER_IMAGE}",
        cso_env: "PROVISIONER_IMAGE",
    },
    ImageVar {
        placeholder: "${ATTACHER_IMAGE}",
        cso_env: "ATTACHER_IMAGE",
    },
    ImageVar {
        placeholder: "${RESIZER_IMAGE}",
        cso_env: "RESIZER_IMAGE",
    },
    ImageVar {
        placeholder: "${SNAPSHOTTER_IMAGE}",
        cso_env: "SNAPSHOTTER_IMAGE",
    },
    ImageVar {
        placeholder: "${NODE_DRIVER_REGISTRAR_IMAGE}",
        cso_env: "NODE_DRIVER_REGISTRAR_IMAGE",
    },
    ImageVar {
        placeholder: "${LIVENESS_PROBE_IMAGE}",
        cso_env: "LIVENESS_PROBE_IMAGE",
    },
    ImageVar {
        placeholder: "${KUBE_RBAC_PROXY_IMAGE}",
        cso_env: "KUBE_RBAC_PROXY_IMAGE",
    },
    ImageVar {
        placeholder: "${TOOLS_IMAGE}",
        cso_env: "TOOLS_IMAGE",
    },
];

/// A related object as it appears in `ClusterOperator.status.relatedObjects`, in static form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Related {
    /// API group, `""` for core.
    pub group: &'static str,
    /// Plural resource.
    pub resource: &'static str,
    /// Namespace, `""` for cluster-scoped objects.
    pub namespace: &'static str,
    /// Name.
    pub name: &'static str,
}

impl Related {
    /// The API form.
    pub fn to_object_reference(&self) -> ObjectReference {
        ObjectReference {
            group: self.group.to_owned(),
            resource: self.resource.to_owned(),
            namespace: self.namespace.to_owned(),
            name: self.name.to_owned(),
        }
    }
}

/// One CSI driver operator the CSO can start (Go `CSIOperatorConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Driver {
    /// Short name for logs and the `render` subcommand, e.g. `openstack-cinder`.
    pub name: &'static str,
    /// `ConditionPrefix`: every condition the CSO writes for this driver on `Storage/cluster`
    /// starts with it (`OpenStackCinderCSIDriverOperatorCRAvailable`, `ManilaProgressing`, …).
    pub condition_prefix: &'static str,
    /// `Infrastructure.status.platformStatus.type` on which the driver runs.
    pub platform: &'static str,
    /// Name of the `ClusterCSIDriver` (and of the CSIDriver) the operator reconciles.
    pub cluster_csi_driver: &'static str,
    /// Name of the operator Deployment.
    pub operator_deployment: &'static str,
    /// Namespace of the operator Deployment, its ServiceAccount, Role and metrics Service.
    pub operator_namespace: &'static str,
    /// Namespace the driver's own pods run in (Manila has its own).
    pub driver_namespace: &'static str,
    /// The driver-specific placeholders and the CSO env vars that fill them; the sidecar ones
    /// ([`SIDECAR_IMAGE_VARS`]) apply to every driver.
    pub image_vars: &'static [ImageVar],
    /// `AllowDisabled`: whether a `…Disabled` condition on the ClusterCSIDriver counts as
    /// "nothing to run" (Manila without a Manila service) rather than as not yet available.
    pub allow_disabled: bool,
    /// Whether the CSO runs the CA syncer for this driver (`openshift-config/
    /// cloud-provider-config` copied into [`CSI_OPERATOR_NAMESPACE`], anchors §3.6).
    pub syncs_cloud_ca: bool,
    /// The static objects reported in `ClusterOperator.status.relatedObjects` once the driver
    /// is started, in asset order (the namespaced "all"-category kinds, such as the metrics
    /// Service, are left out as library-go's static-resource controller does).
    pub related_objects: &'static [Related],
    /// How the driver's operator was installed through OLM before OpenShift 4.6, when it was
    /// (Manila): the CSO removes that installation before deploying its own (anchors §3.7).
    pub olm: Option<&'static crate::olm::OlmOptions>,
    /// The YAML assets of the operator's objects (`assets/<name>/`).
    pub assets: &'static DriverAssets,
}

impl Driver {
    /// The `ClusterCSIDriver` entry appended after [`Driver::related_objects`].
    pub fn cluster_csi_driver_reference(&self) -> ObjectReference {
        ObjectReference {
            group: "operator.openshift.io".to_owned(),
            resource: "clustercsidrivers".to_owned(),
            namespace: String::new(),
            name: self.cluster_csi_driver.to_owned(),
        }
    }

    /// All `${PLACEHOLDER}` → CSO env var pairs for this driver's operator Deployment: its own
    /// first, then the sidecars'.
    pub fn all_image_vars(&self) -> impl Iterator<Item = &'static ImageVar> {
        self.image_vars.iter().chain(SIDECAR_IMAGE_VARS.iter())
    }
}

const RBAC: &str = "rbac.authorization.k8s.io";

/// OpenStack Manila (`csioperatorclient/manila.go`).
pub const MANILA: Driver = Driver {
    name: "openstack-manila",
    condition_prefix: "Manila",
    platform: OPENSTACK,
    cluster_csi_driver: "manila.csi.openstack.org",
    operator_deployment: "manila-csi-driver-operator",
    operator_namespace: CSI_OPERATOR_NAMESPACE,
    driver_namespace: "openshift-manila-csi-driver",
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
            name: "openshift-manila-csi-driver",
        },
        Related {
            group: "",
            resource: "serviceaccounts",
            namespace: CSI_OPERATOR_NAMESPACE,
            name: "manila-csi-driver-operator",
        },
        Related {
            group: RBAC,
            resource: "roles",
            namespace: CSI_OPERATOR_NAMESPACE,
            name: "manila-csi-driver-operator-role",
        },
        Related {
            group: RBAC,
            resource: "rolebindings",
            namespace: CSI_OPERATOR_NAMESPACE,
            name: "manila-csi-driver-operator-rolebinding",
        },
        Related {
            group: RBAC,
            resource: "clusterroles",
            namespace: "",
            name: "manila-csi-driver-operator-clusterrole",
        },
        Related {
            group: RBAC,
            resource: "clusterrolebindings",
            namespace: "",
            name: "manila-csi-driver-operator-clusterrolebinding",
        },
    ],
    olm: Some(&crate::olm::MANILA_OLM),
    assets: &MANILA_ASSETS,
};

/// OpenStack Cinder (`csioperatorclient/cinder.go`).
pub const CINDER: Driver = Driver {
    name: "openstack-cinder",
    condition_prefix: "OpenStackCinder",
    platform: OPENSTACK,
    cluster_csi_driver: "cinder.csi.openstack.org",
    operator_deployment: "openstack-cinder-csi-driver-operator",
    operator_namespace: CSI_OPERATOR_NAMESPACE,
    driver_namespace: CSI_OPERATOR_NAMESPACE,
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
            group: RBAC,
            resource: "roles",
            namespace: CSI_OPERATOR_NAMESPACE,
            name: "openstack-cinder-csi-driver-operator-role",
        },
        Related {
            group: RBAC,
            resource: "rolebindings",
            namespace: CSI_OPERATOR_NAMESPACE,
            name: "openstack-cinder-csi-driver-operator-rolebinding",
        },
        Related {
            group: RBAC,
            resource: "clusterroles",
            namespace: "",
            name: "openstack-cinder-csi-driver-operator-clusterrole",
        },
        Related {
            group: RBAC,
            resource: "clusterrolebindings",
            namespace: "",
            name: "openstack-cinder-csi-driver-operator-clusterrolebinding",
        },
    ],
    olm: None,
    assets: &CINDER_ASSETS,
};

/// `platform` of a driver that needs no cloud and runs on any platform (SMB).
pub const ANY_PLATFORM: &str = "*";

/// SMB (`smb.csi.k8s.io`, openshift/csi-operator `pkg/driver/samba`): an optional driver, not
/// in [`DRIVERS`]. OpenShift installs its operator through OLM and its CSO never starts it;
/// this CSO starts it only when the administrator opts in (`cluster-storage start
/// --optional-driver smb`, [`select_with`]). It runs in the CSI drivers' namespace and has no
/// cloud, no credentials and no CA to sync.
pub const SMB: Driver = Driver {
    name: "smb",
    condition_prefix: "Samba",
    platform: ANY_PLATFORM,
    cluster_csi_driver: "smb.csi.k8s.io",
    operator_deployment: "smb-csi-driver-operator",
    operator_namespace: CSI_OPERATOR_NAMESPACE,
    driver_namespace: CSI_OPERATOR_NAMESPACE,
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
        Related {
            group: "",
            resource: "serviceaccounts",
            namespace: CSI_OPERATOR_NAMESPACE,
            name: "smb-csi-driver-operator",
        },
        Related {
            group: RBAC,
            resource: "roles",
            namespace: CSI_OPERATOR_NAMESPACE,
            name: "smb-csi-driver-operator-role",
        },
        Related {
            group: RBAC,
            resource: "rolebindings",
            namespace: CSI_OPERATOR_NAMESPACE,
            name: "smb-csi-driver-operator-rolebinding",
        },
        Related {
            group: RBAC,
            resource: "clusterroles",
            namespace: "",
            name: "smb-csi-driver-operator-clusterrole",
        },
        Related {
            group: RBAC,
            resource: "clusterrolebindings",
            namespace: "",
            name: "smb-csi-driver-operator-clusterrolebinding",
        },
    ],
    olm: None,
    assets: &SMB_ASSETS,
};

/// The drivers started only when the administrator names them ([`select_with`]).
pub const OPTIONAL_DRIVERS: &[Driver] = &[SMB];

/// The optional driver with this [`Driver::name`], or an error that lists the known ones.
pub fn optional(name: &str) -> Result<&'static Driver, String> {
    OPTIONAL_DRIVERS
        .iter()
        .find(|d| d.name == name)
        .ok_or_else(|| {
            let known: Vec<&str> = OPTIONAL_DRIVERS.iter().map(|d| d.name).collect();
            format!(
                "{name:?} is not an optional driver; the optional drivers are: {}",
                known.join(", ")
            )
        })
}

/// Every driver operator, in the order of the Go CSO's standalone list (Manila before Cinder).
/// The order matters: drivers start in it, and their related objects are listed in it.
pub const DRIVERS: &[Driver] = &[MANILA, CINDER];

/// The driver with this [`Driver::name`] or [`Driver::cluster_csi_driver`], if registered
/// (optional drivers included).
pub fn find(name: &str) -> Option<&'static Driver> {
    DRIVERS
        .iter()
        .chain(OPTIONAL_DRIVERS)
        .find(|d| d.name == name || d.cluster_csi_driver == name)
}

/// What the CSO starts for a platform, and, when that is nothing, why (for the status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The drivers to start, in [`DRIVERS`] order.
    pub drivers: Vec<&'static Driver>,
    /// Set when no driver is started: a sentence for the administrator saying why.
    pub message: Option<String>,
}

/// The drivers for `platform` (`Infrastructure.status.platformStatus.type`; `None` when
/// `platformStatus` is missing). Go `shouldRunController` steps 1–2; Cinder and Manila are GA,
/// so no feature gate applies.
pub fn select(platform: Option<&str>) -> Selection {
    select_with(platform, &[])
}

/// [`select`], plus the optional drivers the administrator opted in to (`opted_in`, from
/// [`OPTIONAL_DRIVERS`]), on any platform, after the platform's own.
pub fn select_with(platform: Option<&str>, opted_in: &[&'static Driver]) -> Selection {
    let mut drivers: Vec<&'static Driver> = match platform {
        Some(p) if !p.is_empty() => DRIVERS.iter().filter(|d| d.platform == p).collect(),
        _ => Vec::new(),
    };
    for d in opted_in {
        if (d.platform == ANY_PLATFORM || Some(d.platform) == platform)
            && !drivers.iter().any(|x| x.name == d.name)
        {
            drivers.push(d);
        }
    }
    let message = if !drivers.is_empty() {
        None
    } else {
        Some(match platform {
            None | Some("") => "No CSI driver operator started: Infrastructure/cluster has no \
                 status.platformStatus.type; this operator starts the OpenStack Cinder and \
                 Manila driver operators when the platform is OpenStack"
                .to_owned(),
            Some(p) => format!(
                "No CSI driver operator started: the platform is {p:?}, and this operator \
                 starts driver operators only on OpenStack (Cinder and Manila)"
            ),
        })
    };
    Selection { drivers, message }
}

/// The drivers for `platform`, without the explanation (see [`select`]).
pub fn drivers_for(platform: Option<&str>) -> Vec<&'static Driver> {
    select(platform).drivers
}

/// The YAML assets of one driver operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverAssets {
    /// The driver's own Namespace, when it has one (Manila), applied before everything else.
    pub namespace: Option<Asset>,
    /// ServiceAccount.
    pub service_account: Asset,
    /// Roles (several documents, one per namespace).
    pub roles: Asset,
    /// RoleBindings (one per Role).
    pub role_bindings: Asset,
    /// ClusterRole.
    pub cluster_role: Asset,
    /// ClusterRoleBinding.
    pub cluster_role_binding: Asset,
    /// Metrics Service.
    pub metrics_service: Asset,
    /// Operator config ConfigMap (its `config.yaml` is filled in when the objects are built).
    pub config_map: Asset,
    /// Operator Deployment.
    pub deployment: Asset,
}

macro_rules! driver_assets {
    ($dir:literal) => {
        driver_assets!($dir, None)
    };
    ($dir:literal, namespace) => {
        driver_assets!($dir, Some(driver_assets!(@one $dir, "namespace.yaml")))
    };
    ($dir:literal, $namespace:expr) => {
        DriverAssets {
            namespace: $namespace,
            service_account: driver_assets!(@one $dir, "serviceaccount.yaml"),
            roles: driver_assets!(@one $dir, "roles.yaml"),
            role_bindings: driver_assets!(@one $dir, "rolebindings.yaml"),
            cluster_role: driver_assets!(@one $dir, "clusterrole.yaml"),
            cluster_role_binding: driver_assets!(@one $dir, "clusterrolebinding.yaml"),
            metrics_service: driver_assets!(@one $dir, "service.yaml"),
            config_map: driver_assets!(@one $dir, "configmap.yaml"),
            deployment: driver_assets!(@one $dir, "deployment.yaml"),
        }
    };
    (@one $dir:literal, $file:literal) => {
        Asset {
            name: concat!($dir, "/", $file),
            content: include_str!(concat!("../assets/", $dir, "/", $file)),
            requires_crd: None,
        }
    };
}

/// The Cinder operator's assets.
pub const CINDER_ASSETS: DriverAssets = driver_assets!("openstack-cinder");
/// The Manila operator's assets.
pub const MANILA_ASSETS: DriverAssets = driver_assets!("openstack-manila", namespace);
/// The SMB operator's assets.
pub const SMB_ASSETS: DriverAssets = driver_assets!("smb");

impl DriverAssets {
    /// Every asset, for tests and `render`.
    pub fn all(&self) -> [Asset; 8] {
        [
            self.service_account,
            self.roles,
            self.role_bindings,
            self.cluster_role,
            self.cluster_role_binding,
            self.metrics_service,
            self.config_map,
            self.deployment,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn openstack_starts_manila_then_cinder() {
        let names: Vec<_> = drivers_for(Some("OpenStack"))
            .iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, ["openstack-manila", "openstack-cinder"]);
        assert_eq!(select(Some("OpenStack")).message, None);
    }

    #[test]
    fn smb_starts_only_when_opted_in_on_any_platform() {
        let names = |s: Selection| s.drivers.iter().map(|d| d.name).collect::<Vec<_>>();
        // Not opted in: never, on any platform (OpenShift installs SMB through OLM).
        for platform in [Some("OpenStack"), Some("AWS"), None] {
            assert!(!names(select(platform)).contains(&"smb"), "{platform:?}");
        }
        let smb = optional("smb").expect("smb is optional");
        assert_eq!(
            names(select_with(Some("OpenStack"), &[smb])),
            ["openstack-manila", "openstack-cinder", "smb"]
        );
        let aws = select_with(Some("AWS"), &[smb, smb]);
        assert_eq!(aws.message, None);
        assert_eq!(names(aws), ["smb"]);
        let err = optional("nfs").unwrap_err();
        assert!(err.contains("\"nfs\"") && err.contains("smb"), "{err}");
        assert!(!DRIVERS.iter().any(|d| d.name == "smb"));
        assert_eq!(find("smb.csi.k8s.io"), Some(&SMB));
        assert!(openshift_api::operator::ClusterCSIDriver::is_valid_name(
            SMB.cluster_csi_driver
        ));
    }

    #[test]
    fn other_platforms_start_nothing_and_say_why() {
        for platform in ["AWS", "None", "openstack", "BareMetal"] {
            let s = select(Some(platform));
            assert!(s.drivers.is_empty(), "{platform}");
            let message = s.message.unwrap();
            assert!(message.contains(&format!("{platform:?}")), "{message}");
            assert!(message.contains("only on OpenStack"), "{message}");
        }
    }

    #[test]
    fn missing_platform_status_starts_nothing_and_says_why() {
        for platform in [None, Some("")] {
            let s = select(platform);
            assert!(s.drivers.is_empty());
            assert!(
                s.message
                    .unwrap()
                    .contains("has no status.platformStatus.type")
            );
        }
    }

    #[test]
    fn entries_match_openshift_names() {
        assert_eq!(CINDER.condition_prefix, "OpenStackCinder");
        assert_eq!(MANILA.condition_prefix, "Manila");
        assert_eq!(CINDER.cluster_csi_driver, "cinder.csi.openstack.org");
        assert_eq!(MANILA.cluster_csi_driver, "manila.csi.openstack.org");
        assert_eq!(
            CINDER.operator_deployment,
            "openstack-cinder-csi-driver-operator"
        );
        assert_eq!(MANILA.operator_deployment, "manila-csi-driver-operator");
        assert_eq!(CINDER.operator_namespace, "openshift-cluster-csi-drivers");
        assert_eq!(MANILA.operator_namespace, "openshift-cluster-csi-drivers");
        assert_eq!(MANILA.driver_namespace, "openshift-manila-csi-driver");
        // (allow_disabled, syncs_cloud_ca): only Manila may be disabled and runs the CA syncer.
        let flags: Vec<_> = DRIVERS
            .iter()
            .map(|d| (d.name, d.allow_disabled, d.syncs_cloud_ca))
            .collect();
        assert_eq!(
            flags,
            [
                ("openstack-manila", true, true),
                ("openstack-cinder", false, false)
            ]
        );
        // The ClusterCSIDriver names are in the CRD's name enum.
        for d in DRIVERS {
            assert!(
                openshift_api::operator::ClusterCSIDriver::is_valid_name(d.cluster_csi_driver),
                "{}",
                d.name
            );
        }
    }

    #[test]
    fn image_vars_match_cso_env() {
        let env = |d: &Driver| -> Vec<(&str, &str)> {
            d.all_image_vars()
                .map(|v| (v.placeholder, v.cso_env))
                .collect()
        };
        let cinder = env(&CINDER);
        assert_eq!(
            &cinder[..2],
            [
                (
                    "${OPERATOR_IMAGE}",
                    "OPENSTACK_CINDER_DRIVER_OPERATOR_IMAGE"
                ),
                ("${DRIVER_IMAGE}", "OPENSTACK_CINDER_DRIVER_IMAGE")
            ]
        );
        let manila = env(&MANILA);
        assert_eq!(
            &manila[..3],
            [
                ("${OPERATOR_IMAGE}", "MANILA_DRIVER_OPERATOR_IMAGE"),
                ("${DRIVER_IMAGE}", "MANILA_DRIVER_IMAGE"),
                ("${NFS_DRIVER_IMAGE}", "MANILA_NFS_DRIVER_IMAGE")
            ]
        );
        for d in DRIVERS {
            let all = env(d);
            // No placeholder is filled twice, and every sidecar one is there.
            let placeholders: HashSet<_> = all.iter().map(|(p, _)| *p).collect();
            assert_eq!(placeholders.len(), all.len(), "{}", d.name);
            for sidecar in SIDECAR_IMAGE_VARS {
                assert!(placeholders.contains(sidecar.placeholder));
                // Sidecar env vars have the placeholder's name.
                assert_eq!(sidecar.placeholder, format!("${{{}}}", sidecar.cso_env));
            }
        }
    }

    #[test]
    fn registry_entries_are_unique() {
        let mut seen = HashSet::new();
        for d in DRIVERS {
            assert!(seen.insert(d.name));
            assert!(seen.insert(d.condition_prefix));
            assert!(seen.insert(d.cluster_csi_driver));
        }
        assert_eq!(find("openstack-cinder"), Some(&CINDER));
        assert_eq!(find("manila.csi.openstack.org"), Some(&MANILA));
        assert_eq!(find("ebs.csi.aws.com"), None);
    }

    #[test]
    fn related_objects_leave_out_the_metrics_service() {
        for d in DRIVERS {
            assert!(d.related_objects.iter().all(|r| r.resource != "services"));
            assert!(d.related_objects.iter().any(|r| r.resource == "serviceaccounts"
                && r.namespace == d.operator_namespace));
            // Cluster-scoped kinds carry no namespace.
            for r in d.related_objects {
                let cluster_scoped = matches!(
                    r.resource,
                    "namespaces" | "clusterroles" | "clusterrolebindings"
                );
                assert_eq!(r.namespace.is_empty(), cluster_scoped, "{r:?}");
            }
        }
        assert_eq!(
            MANILA.related_objects[0].to_object_reference(),
            ObjectReference {
                group: String::new(),
                resource: "namespaces".into(),
                namespace: String::new(),
                name: "openshift-manila-csi-driver".into()
            }
        );
        let cr = CINDER.cluster_csi_driver_reference();
        assert_eq!(
            (cr.group.as_str(), cr.resource.as_str(), cr.name.as_str()),
            (
                "operator.openshift.io",
                "clustercsidrivers",
                "cinder.csi.openstack.org"
            )
        );
    }
}
