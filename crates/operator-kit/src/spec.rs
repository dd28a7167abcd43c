//! A CSI driver operator as one declaration: its names, prefixes, image variables, related
//! objects and operator assets, in one [`DriverSpec`] value that the driver's crate exports
//! (`cinder::SPEC`, `manila::SPEC`). The Cluster Storage Operator's registry, the binary's
//! `start` and `render` subcommands, the plain-Kubernetes manifests and the Helm chart read
//! it, so a driver's names are written once.
//!
//! The names are OpenShift's exactly (anchors §3.2–§3.3, §4, §5): the CSO's conditions on
//! `Storage/cluster`, the operator Deployments, leases and image env vars are read by other
//! tools and by a running cluster's objects.
//!
//! What this module must not do: hold logic about *using* a spec (applying, rolling up status,
//! the OLM removal flow); those stay with the CSO and the kit's runtime. It is data only, plus
//! the derivations that belong to the data ([`DriverSpec::all_image_vars`]).

use openshift_api::config::ObjectReference;

use crate::assets::Asset;

/// The platform (`Infrastructure.status.platformStatus.type`) on which Cinder and Manila run.
pub const OPENSTACK: &str = "OpenStack";

/// `platform` of a driver that needs no cloud and runs on any platform (SMB); the CSO starts
/// such a driver only when the administrator opts in.
pub const ANY_PLATFORM: &str = "*";

/// The namespace of the CSI driver operators' Deployments on OpenShift
/// (`manifests/02_…namespace.yaml`).
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

/// The API group of the RBAC kinds, for [`Related`] entries.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

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

/// The old operator's CR type and the one object of it the OLM removal deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OldCr {
    /// API group, e.g. `csi.openshift.io`.
    pub group: &'static str,
    /// API version, e.g. `v1alpha1`.
    pub version: &'static str,
    /// Kind, e.g. `ManilaDriver`.
    pub kind: &'static str,
    /// Resource, e.g. `maniladrivers`.
    pub plural: &'static str,
    /// The (cluster-scoped) object's name: always `cluster` in Go (`oldCRName`).
    pub name: &'static str,
}

impl OldCr {
    /// `group/version`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }
}

/// What identifies a driver operator that OLM installed before OpenShift 4.6 (Go
/// `OLMOptions`); the CSO's `olm` module removes that installation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OlmOptions {
    /// Name of the Deployment OLM created for the operator; its namespace is the
    /// Subscription's.
    pub operator_deployment: &'static str,
    /// The OLM package (`Subscription.spec.name`).
    pub package: &'static str,
    /// The old operator's CR.
    pub old_cr: OldCr,
}

/// The YAML assets of one driver operator, as the CSO applies them (`assets/operator/` of the
/// driver's crate). Declare them with [`driver_assets!`](crate::driver_assets).
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

impl DriverAssets {
    /// Every asset but the Namespace, for tests and `render`.
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

/// Declares a [`DriverAssets`] from the files of one directory of the calling crate:
/// `driver_assets!("openstack-cinder", "../assets/operator")`, or with a trailing
/// `namespace` when the directory also holds the driver's `namespace.yaml`. The directory is
/// relative to the calling source file (as `include_str!`'s is); the first argument prefixes
/// the assets' names (`openstack-cinder/deployment.yaml`), which error messages and `render`
/// show.
#[macro_export]
macro_rules! driver_assets {
    ($name:literal, $dir:literal) => {
        $crate::driver_assets!(@build $name, $dir, None)
    };
    ($name:literal, $dir:literal, namespace) => {
        $crate::driver_assets!(
            @build $name, $dir, Some($crate::driver_assets!(@one $name, $dir, "namespace.yaml"))
        )
    };
    (@build $name:literal, $dir:literal, $namespace:expr) => {
        $crate::spec::DriverAssets {
            namespace: $namespace,
            service_account: $crate::driver_assets!(@one $name, $dir, "serviceaccount.yaml"),
            roles: $crate::driver_assets!(@one $name, $dir, "roles.yaml"),
            role_bindings: $crate::driver_assets!(@one $name, $dir, "rolebindings.yaml"),
            cluster_role: $crate::driver_assets!(@one $name, $dir, "clusterrole.yaml"),
            cluster_role_binding: $crate::driver_assets!(@one $name, $dir, "clusterrolebinding.yaml"),
            metrics_service: $crate::driver_assets!(@one $name, $dir, "service.yaml"),
            config_map: $crate::driver_assets!(@one $name, $dir, "configmap.yaml"),
            deployment: $crate::driver_assets!(@one $name, $dir, "deployment.yaml"),
        }
    };
    (@one $name:literal, $dir:literal, $file:literal) => {
        $crate::assets::Asset {
            name: concat!($name, "/", $file),
            content: include_str!(concat!($dir, "/", $file)),
            requires_crd: None,
        }
    };
}

/// What the CSO needs to run the driver operator of a hosted control plane (anchors §3.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostedSpec {
    /// The operator's Role in the control-plane namespace of the management cluster
    /// (`assets/operator/hypershift/role.yaml`).
    pub management_role: Asset,
    /// The CSO env var with the driver's own image for pods in the management cluster
    /// (`csioperatorclient/{cinder,manila}.go`).
    pub control_plane_image_env: &'static str,
    /// Whether the guest gets the operator's ServiceAccount, Roles and RoleBindings (Cinder's
    /// Go `hypershift/guest` assets have them, Manila's only the Namespace and cluster-scoped
    /// RBAC).
    pub guest_namespaced_objects: bool,
}

/// One CSI driver operator, declared (Go `CSIOperatorConfig` plus the driver operator's own
/// names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverSpec {
    /// Short name: the binary's subcommand (`csi-operator openstack-cinder start`), `render`'s
    /// argument and the CSO's log name, e.g. `openstack-cinder`.
    pub name: &'static str,
    /// Name of the `ClusterCSIDriver` (and of the CSIDriver) the operator reconciles.
    pub cluster_csi_driver: &'static str,
    /// The operand in ManagementStateDegraded messages (`OpenStackCinderCSIDriver`).
    pub operand: &'static str,
    /// The Go operator's controller name prefix (`OpenStackCinder`).
    pub controller_name_prefix: &'static str,
    /// `ConditionPrefix`: every condition the CSO writes for this driver on `Storage/cluster`
    /// starts with it (`OpenStackCinderCSIDriverOperatorCRAvailable`, `ManilaProgressing`, …).
    pub condition_prefix: &'static str,
    /// `Infrastructure.status.platformStatus.type` on which the driver runs.
    pub platform: &'static str,
    /// Name of the operator Deployment.
    pub operator_deployment: &'static str,
    /// Namespace of the operator Deployment, its ServiceAccount, Role, lease and metrics
    /// Service.
    pub operator_namespace: &'static str,
    /// Namespace the driver's own pods run in (Manila has its own).
    pub driver_namespace: &'static str,
    /// The operator's leader-election lock (a Lease in the operator namespace).
    pub lock_name: &'static str,
    /// The User-Agent the operator presents to the cloud and the API server.
    pub user_agent: &'static str,
    /// Prefix of the operator's own metrics (`openstack_cinder_csi_driver_operator`).
    pub metrics_prefix: &'static str,
    /// The Secret, in [`DriverSpec::driver_namespace`], holding the serving certificate of the
    /// driver controller's metrics Service (filled by service-ca on OpenShift, issued by the
    /// operator on plain Kubernetes, whose Role then may update it).
    pub metrics_serving_cert_secret: &'static str,
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
    pub olm: Option<&'static OlmOptions>,
    /// The YAML assets of the operator's objects.
    pub assets: &'static DriverAssets,
    /// What a hosted control plane needs, when the driver supports one.
    pub hosted: Option<HostedSpec>,
}

impl DriverSpec {
    /// The `ClusterCSIDriver` entry appended after [`DriverSpec::related_objects`].
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

#[cfg(test)]
mod tests {
    use super::*;

    const ASSET: Asset = Asset {
        name: "x/y.yaml",
        content: "",
        requires_crd: None,
    };
    const ASSETS: DriverAssets = DriverAssets {
        namespace: None,
        service_account: ASSET,
        roles: ASSET,
        role_bindings: ASSET,
        cluster_role: ASSET,
        cluster_role_binding: ASSET,
        metrics_service: ASSET,
        config_map: ASSET,
        deployment: ASSET,
    };
    const SPEC: DriverSpec = DriverSpec {
        name: "fake",
        cluster_csi_driver: "fake.csi.example.org",
        operand: "FakeCSIDriver",
        controller_name_prefix: "Fake",
        condition_prefix: "Fake",
        platform: "None",
        operator_deployment: "fake-operator",
        operator_namespace: "fake",
        driver_namespace: "fake",
        lock_name: "fake-lock",
        user_agent: "fake-operator",
        metrics_prefix: "fake_operator",
        metrics_serving_cert_secret: "fake-metrics-serving-cert",
        image_vars: &[
            ImageVar {
                placeholder: "${OPERATOR_IMAGE}",
                cso_env: "FAKE_OPERATOR_IMAGE",
            },
            ImageVar {
                placeholder: "${DRIVER_IMAGE}",
                cso_env: "FAKE_DRIVER_IMAGE",
            },
        ],
        allow_disabled: false,
        syncs_cloud_ca: false,
        related_objects: &[],
        olm: None,
        assets: &ASSETS,
        hosted: None,
    };

    #[test]
    fn image_vars_are_the_drivers_then_the_sidecars() {
        let all: Vec<_> = SPEC.all_image_vars().map(|v| v.cso_env).collect();
        assert_eq!(&all[..2], ["FAKE_OPERATOR_IMAGE", "FAKE_DRIVER_IMAGE"]);
        assert_eq!(all.len(), 2 + SIDECAR_IMAGE_VARS.len());
        // Sidecar env vars have the placeholder's name.
        for v in SIDECAR_IMAGE_VARS {
            assert_eq!(v.placeholder, format!("${{{}}}", v.cso_env));
        }
    }

    #[test]
    fn the_cluster_csi_driver_reference_names_the_cr() {
        let r = SPEC.cluster_csi_driver_reference();
        assert_eq!(
            (r.group.as_str(), r.resource.as_str(), r.name.as_str()),
            (
                "operator.openshift.io",
                "clustercsidrivers",
                "fake.csi.example.org"
            )
        );
        assert!(r.namespace.is_empty());
    }
}
