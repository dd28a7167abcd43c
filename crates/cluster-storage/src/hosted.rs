//! The objects the CSO applies for each driver operator when the control plane is hosted
//! (HyperShift, anchors §3.8), split between the two clusters as OpenShift splits them:
//!
//! - **management**, in the control-plane namespace (`HostedControlPlane`'s namespace): the
//!   operator's ServiceAccount (with the `pull-secret` image pull secret), its Role and
//!   RoleBinding there, its metrics Service, its config ConfigMap (TLS from the
//!   HostedControlPlane's `spec.configuration.apiServer.tlsSecurityProfile`) and its Deployment;
//! - **guest**: the operator's ClusterRole and ClusterRoleBinding, Cinder's Roles, RoleBindings
//!   and ServiceAccount, Manila's namespace, and the ClusterCSIDriver.
//!
//! The Deployment is the standalone one ([`crate::build::operator_objects`]) changed as the
//! Go CSO's `hypershift/mgmt` assets and `HyperShiftDeploymentController` change it: the
//! control-plane namespace, `--guest-kubeconfig` with the `service-network-admin-kubeconfig`
//! Secret, `DRIVER_CONTROL_PLANE_IMAGE` and `LIVENESS_PROBE_CONTROL_PLANE_IMAGE`, the
//! `hypershift-control-plane` priority class, HyperShift's tolerations and affinity, the
//! HostedControlPlane's node selector, labels and tolerations, `RUN_AS_USER`, the CA ConfigMap
//! `openstack-cloud-config`, `release.openshift.io/desired-version` and the managed-by label.
//! [`version_annotation`](operator_kit::hosted::version_annotation) is the pure part of the
//! DeploymentVersionController that follows it.
//!
//! What this module must not do: read the environment, the API or a file, or decide which
//! client applies what (the runtime routes by namespace: the control-plane namespace is the
//! management cluster, everything else the guest).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    Affinity, ConfigMap, Container, EnvVar, LocalObjectReference, NodeAffinity,
    NodeSelectorRequirement, NodeSelectorTerm, PodAffinity, PodAffinityTerm,
    PreferredSchedulingTerm, SecretVolumeSource, Service, ServiceAccount, Toleration, Volume,
    VolumeMount, WeightedPodAffinityTerm,
};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use openshift_api::operator::ClusterCSIDriver;
use operator_kit::assets::{Asset, Replacements};
use operator_kit::desired::{self, Desired};
use operator_kit::hosted::{
    CLOUD_CA_CONFIG_MAP, DESIRED_VERSION_ANNOTATION, GUEST_KUBECONFIG_PATH,
    GUEST_KUBECONFIG_SECRET, HOSTED_CONTROL_PLANE_LABEL, Hosted, MANAGED_BY_CSO, MANAGED_BY_LABEL,
    PRIORITY_CLASS,
};
use operator_kit::observed_config::{ServingInfo, observe_serving_info};

use crate::build::{
    BuildError, Inputs, OPERATOR_CONFIG_KEY, OPERATOR_IMAGE_VERSION_ENV, OperatorObjects,
    cluster_csi_driver, operator_config_yaml, operator_objects,
};
use crate::registry::Driver;

/// The volume (and mount) name of the guest kubeconfig in the operator Deployment.
pub const GUEST_KUBECONFIG_VOLUME: &str = "guest-kubeconfig";
/// The image pull Secret HyperShift puts in every control-plane namespace.
pub const PULL_SECRET: &str = "pull-secret";
/// Pod label by which HyperShift lets a control-plane pod reach the management API server.
pub const NEED_MANAGEMENT_KAS_ACCESS_LABEL: &str =
    "hypershift.openshift.io/need-management-kas-access";
/// Node label and taint of HyperShift's control-plane nodes.
pub const CONTROL_PLANE_NODE_LABEL: &str = "hypershift.openshift.io/control-plane";
/// Node label and taint naming the hosted cluster a node is dedicated to.
pub const CLUSTER_NODE_LABEL: &str = "hypershift.openshift.io/cluster";
/// The CSO env var with the liveness probe image for pods in the management cluster.
pub const LIVENESS_PROBE_CONTROL_PLANE_IMAGE_ENV: &str = "LIVENESS_PROBE_CONTROL_PLANE_IMAGE";
/// The operator's env var with its driver's image for pods in the management cluster.
pub const DRIVER_CONTROL_PLANE_IMAGE_ENV: &str = "DRIVER_CONTROL_PLANE_IMAGE";
/// The CSO Deployment's `RUN_AS_USER`, passed on to the operator (management clusters without
/// SCCs, such as AKS).
pub const RUN_AS_USER_ENV: &str = "RUN_AS_USER";

/// The CSO env var with `driver`'s own image for pods in the management cluster
/// (`csioperatorclient/{cinder,manila}.go`; the driver's [`Driver::hosted`]).
pub fn driver_control_plane_image_env(driver: &Driver) -> Option<&'static str> {
    driver.hosted.map(|h| h.control_plane_image_env)
}

/// The condition-message name of the management Role and RoleBinding.
pub const MANAGEMENT_ROLE: &str = "hypershift/role.yaml";

/// The management Role asset of `driver` (`assets/operator/hypershift/role.yaml` of its crate).
fn management_role_asset(driver: &Driver) -> Option<Asset> {
    driver.hosted.map(|h| h.management_role)
}

/// Everything the CSO applies for one driver operator of a hosted control plane.
#[derive(Debug)]
pub struct HostedOperatorObjects {
    /// In the control-plane namespace of the management cluster, in apply order:
    /// ServiceAccount, Role, RoleBinding, metrics Service, config ConfigMap.
    pub management: Vec<Desired>,
    /// In the guest, in apply order: Manila's Namespace; Cinder's ServiceAccount, Roles and
    /// RoleBindings; the ClusterRole and ClusterRoleBinding.
    pub guest: Vec<Desired>,
    /// The operator Deployment, in the control-plane namespace of the management cluster.
    pub deployment: Desired,
    /// The guest's ClusterCSIDriver, created when missing and never updated (as standalone).
    pub cluster_csi_driver: ClusterCSIDriver,
}

/// The same objects, typed (for tests, `render` and the field-for-field comparison).
#[derive(Debug, Clone, PartialEq)]
pub struct HostedTyped {
    /// The management objects other than the Deployment.
    pub service_account: ServiceAccount,
    pub role: Role,
    pub role_binding: RoleBinding,
    pub metrics_service: Service,
    pub config_map: ConfigMap,
    pub deployment: Deployment,
    /// The guest objects (typed as the standalone build makes them).
    pub guest: GuestObjects,
}

/// The guest half, as the standalone objects it is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestObjects {
    pub namespace: Option<k8s_openapi::api::core::v1::Namespace>,
    /// Cinder only (the Go CSO's Manila guest assets have no ServiceAccount or Role).
    pub service_account: Option<ServiceAccount>,
    pub roles: Vec<Role>,
    pub role_bindings: Vec<RoleBinding>,
    pub cluster_role: k8s_openapi::api::rbac::v1::ClusterRole,
    pub cluster_role_binding: k8s_openapi::api::rbac::v1::ClusterRoleBinding,
}

/// Whether the guest gets the operator's ServiceAccount, Roles and RoleBindings (Cinder's
/// `hypershift/guest` assets have them, Manila's only the Namespace and cluster-scoped RBAC).
pub fn guest_has_namespaced_objects(driver: &Driver) -> bool {
    driver.hosted.is_some_and(|h| h.guest_namespaced_objects)
}

/// The condition prefix of the step applying the management objects (Go's
/// `<prefix>CSIDriverOperatorMgmtStaticController`, beside the guest's
/// `<prefix>CSIDriverOperatorStaticController`).
pub fn management_static_controller(driver: &Driver) -> String {
    format!(
        "{}CSIDriverOperatorMgmtStaticController",
        driver.condition_prefix
    )
}

/// The name of library-go's DeploymentVersionController in the Go CSO (its condition prefix on
/// `Storage/cluster`, one per driver operator, all of this name).
pub const DEPLOYMENT_VERSION_CONTROLLER: &str = "DeploymentVersionController";

/// `ClusterOperator.status.relatedObjects` entries of `driver` on a hosted control plane: the
/// guest's static objects (the Go CSO lists those of its guest static-resource controller
/// only), in [`Driver::related_objects`] order; the ClusterCSIDriver follows as standalone.
pub fn hosted_related_objects(driver: &Driver) -> Vec<openshift_api::config::ObjectReference> {
    driver
        .related_objects
        .iter()
        .filter(|r| guest_has_namespaced_objects(driver) || r.namespace.is_empty())
        .map(|r| r.to_object_reference())
        .collect()
}

/// Why the hosted objects cannot be built, beyond the standalone reasons.
fn hosted_error(driver: &Driver, message: String) -> BuildError {
    BuildError::Hosted {
        driver: driver.name,
        message,
    }
}

/// The serving TLS settings of the HostedControlPlane's API server profile (Intermediate when
/// it has none), as the Go CSO's `tlsSettingsFromHCP` reads them.
pub fn hosted_serving_info(hosted: &Hosted) -> Result<ServingInfo, String> {
    let Some(profile) = &hosted.control_plane.tls_security_profile else {
        return Ok(ServingInfo::intermediate());
    };
    let wrapped = serde_json::json!({"spec": {"tlsSecurityProfile": profile}});
    observe_serving_info(Some(&wrapped)).map_err(|e| {
        format!(
            "HostedControlPlane {}: spec.configuration.apiServer.tlsSecurityProfile cannot be \
             read ({e}); correct the HostedCluster's API server TLS profile",
            hosted.control_plane.namespace
        )
    })
}

/// Builds the typed hosted objects of `driver`'s operator.
pub fn hosted_typed(
    driver: &Driver,
    inputs: &Inputs,
    hosted: &Hosted,
) -> Result<HostedTyped, BuildError> {
    let ns = hosted.control_plane.namespace.as_str();
    if ns.is_empty() {
        return Err(hosted_error(
            driver,
            "the HostedControlPlane has no namespace; the control-plane namespace is where the \
             operator runs"
                .to_owned(),
        ));
    }
    let cp_image_env = driver_control_plane_image_env(driver).ok_or_else(|| {
        hosted_error(
            driver,
            "this driver operator has no HyperShift control-plane image variable".to_owned(),
        )
    })?;
    let image = |env: &'static str| -> Result<String, BuildError> {
        inputs
            .env
            .get(env)
            .filter(|v| !v.is_empty())
            .cloned()
            .ok_or(BuildError::MissingImage {
                driver: driver.name,
                env,
                placeholder: if env == cp_image_env {
                    "${DRIVER_CONTROL_PLANE_IMAGE}"
                } else {
                    "${LIVENESS_PROBE_CONTROL_PLANE_IMAGE}"
                },
            })
    };
    let driver_cp_image = image(cp_image_env)?;
    let liveness_cp_image = image(LIVENESS_PROBE_CONTROL_PLANE_IMAGE_ENV)?;
    let version = inputs
        .env
        .get(OPERATOR_IMAGE_VERSION_ENV)
        .filter(|v| !v.is_empty())
        .cloned()
        .ok_or(BuildError::MissingVersion {
            driver: driver.name,
        })?;
    let serving = hosted_serving_info(hosted).map_err(|m| hosted_error(driver, m))?;

    let standalone: OperatorObjects = operator_objects(driver, inputs)?;

    // Management: the ServiceAccount with HyperShift's pull secret.
    let mut service_account = standalone.service_account.clone();
    service_account.metadata.namespace = Some(ns.to_owned());
    service_account.image_pull_secrets = Some(vec![LocalObjectReference {
        name: PULL_SECRET.to_owned(),
    }]);

    let role_asset = management_role_asset(driver)
        .ok_or_else(|| hosted_error(driver, "no management Role asset".to_owned()))?;
    let mut repl = Replacements::new();
    repl.set("CONTROLPLANE_NAMESPACE", ns);
    let role: Role = role_asset.render_object(&repl)?;
    let role_binding = management_role_binding(driver, &role, ns);

    let mut metrics_service = standalone.metrics_service.clone();
    metrics_service.metadata.namespace = Some(ns.to_owned());

    let mut config_map = standalone.config_map.clone();
    config_map.metadata.namespace = Some(ns.to_owned());
    config_map.data.get_or_insert_with(BTreeMap::new).insert(
        OPERATOR_CONFIG_KEY.to_owned(),
        operator_config_yaml(&serving)?,
    );

    let deployment = hosted_deployment(
        driver,
        standalone.deployment.clone(),
        hosted,
        &version,
        &driver_cp_image,
        &liveness_cp_image,
    )?;

    // Guest: the cluster-scoped RBAC, and Cinder's namespaced objects (OpenShift's Manila guest
    // assets have none), Manila's namespace.
    let cinder = guest_has_namespaced_objects(driver);
    let guest = GuestObjects {
        namespace: standalone.namespace.clone(),
        service_account: cinder.then(|| standalone.service_account.clone()),
        roles: if cinder {
            standalone.roles.clone()
        } else {
            Vec::new()
        },
        role_bindings: if cinder {
            standalone.role_bindings.clone()
        } else {
            Vec::new()
        },
        cluster_role: standalone.cluster_role.clone(),
        cluster_role_binding: standalone.cluster_role_binding.clone(),
    };

    Ok(HostedTyped {
        service_account,
        role,
        role_binding,
        metrics_service,
        config_map,
        deployment,
        guest,
    })
}

/// The RoleBinding of the management Role to the operator's ServiceAccount.
fn management_role_binding(driver: &Driver, role: &Role, ns: &str) -> RoleBinding {
    let role_name = role.metadata.name.clone().unwrap_or_default();
    RoleBinding {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(format!("{}-rolebinding", driver.operator_deployment)),
            namespace: Some(ns.to_owned()),
            ..Default::default()
        },
        role_ref: k8s_openapi::api::rbac::v1::RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "Role".to_owned(),
            name: role_name,
        },
        subjects: Some(vec![k8s_openapi::api::rbac::v1::Subject {
            kind: "ServiceAccount".to_owned(),
            name: driver.operator_deployment.to_owned(),
            namespace: Some(ns.to_owned()),
            api_group: None,
        }]),
    }
}

/// HyperShift's tolerations for control-plane pods of the hosted cluster `ns`, after the
/// standalone operator's own (`CriticalAddonsOnly`, the master taint).
fn hypershift_tolerations(ns: &str) -> Vec<Toleration> {
    vec![
        Toleration {
            key: Some("CriticalAddonsOnly".to_owned()),
            operator: Some("Exists".to_owned()),
            ..Default::default()
        },
        Toleration {
            key: Some("node-role.kubernetes.io/master".to_owned()),
            operator: Some("Exists".to_owned()),
            effect: Some("NoSchedule".to_owned()),
            ..Default::default()
        },
        Toleration {
            key: Some(CONTROL_PLANE_NODE_LABEL.to_owned()),
            operator: Some("Exists".to_owned()),
            ..Default::default()
        },
        Toleration {
            key: Some(CLUSTER_NODE_LABEL.to_owned()),
            operator: Some("Equal".to_owned()),
            value: Some(ns.to_owned()),
            ..Default::default()
        },
    ]
}

/// Prefer HyperShift's control-plane nodes, those of this hosted cluster most, and the nodes
/// running this control plane's other pods.
fn hypershift_affinity(ns: &str) -> Affinity {
    let preference = |key: &str, value: &str, weight: i32| PreferredSchedulingTerm {
        weight,
        preference: NodeSelectorTerm {
            match_expressions: Some(vec![NodeSelectorRequirement {
                key: key.to_owned(),
                operator: "In".to_owned(),
                values: Some(vec![value.to_owned()]),
            }]),
            match_fields: None,
        },
    };
    Affinity {
        node_affinity: Some(NodeAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                preference(CONTROL_PLANE_NODE_LABEL, "true", 50),
                preference(CLUSTER_NODE_LABEL, ns, 100),
            ]),
            required_during_scheduling_ignored_during_execution: None,
        }),
        pod_affinity: Some(PodAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                WeightedPodAffinityTerm {
                    weight: 100,
                    pod_affinity_term: PodAffinityTerm {
                        label_selector: Some(LabelSelector {
                            match_labels: Some(BTreeMap::from([(
                                HOSTED_CONTROL_PLANE_LABEL.to_owned(),
                                ns.to_owned(),
                            )])),
                            match_expressions: None,
                        }),
                        topology_key: "kubernetes.io/hostname".to_owned(),
                        ..Default::default()
                    },
                },
            ]),
            required_during_scheduling_ignored_during_execution: None,
        }),
        pod_anti_affinity: None,
    }
}

fn env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        value_from: None,
    }
}

/// The standalone operator Deployment made the hosted one (see the module documentation).
fn hosted_deployment(
    driver: &Driver,
    mut d: Deployment,
    hosted: &Hosted,
    version: &str,
    driver_cp_image: &str,
    liveness_cp_image: &str,
) -> Result<Deployment, BuildError> {
    let cp = &hosted.control_plane;
    let ns = cp.namespace.as_str();
    d.metadata.namespace = Some(ns.to_owned());
    d.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(MANAGED_BY_LABEL.to_owned(), MANAGED_BY_CSO.to_owned());
    d.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(DESIRED_VERSION_ANNOTATION.to_owned(), version.to_owned());
    let malformed = || {
        hosted_error(
            driver,
            "the operator Deployment asset has no pod template".to_owned(),
        )
    };
    let spec = d.spec.as_mut().ok_or_else(malformed)?;
    let template = &mut spec.template;
    let labels = template
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(BTreeMap::new);
    labels.insert("app".to_owned(), driver.operator_deployment.to_owned());
    labels.insert(
        NEED_MANAGEMENT_KAS_ACCESS_LABEL.to_owned(),
        "true".to_owned(),
    );
    // The HostedControlPlane's labels; existing keys win (the selector uses them).
    for (k, v) in &cp.labels {
        labels.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let pod = template.spec.as_mut().ok_or_else(malformed)?;
    pod.priority_class_name = Some(PRIORITY_CLASS.to_owned());
    pod.node_selector = (!cp.node_selector.is_empty()).then(|| cp.node_selector.clone());
    let mut tolerations = hypershift_tolerations(ns);
    tolerations.extend(cp.tolerations.iter().cloned());
    pod.tolerations = Some(tolerations);
    pod.affinity = Some(hypershift_affinity(ns));
    if let Some(uid) = hosted.run_as_user {
        pod.security_context
            .get_or_insert_with(Default::default)
            .run_as_user = Some(uid);
    }
    let volumes = pod.volumes.get_or_insert_with(Vec::new);
    for v in volumes.iter_mut() {
        if let Some(cm) = v.config_map.as_mut()
            && cm.name == crate::build::CLOUD_PROVIDER_CONFIG
        {
            cm.name = CLOUD_CA_CONFIG_MAP.to_owned();
        }
    }
    volumes.push(Volume {
        name: GUEST_KUBECONFIG_VOLUME.to_owned(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(GUEST_KUBECONFIG_SECRET.to_owned()),
            ..Default::default()
        }),
        ..Default::default()
    });
    let container: &mut Container = pod
        .containers
        .iter_mut()
        .find(|c| c.name == driver.operator_deployment)
        .ok_or_else(malformed)?;
    let args = container.args.get_or_insert_with(Vec::new);
    for a in args.iter_mut() {
        if a.starts_with("--namespace=") {
            *a = format!("--namespace={ns}");
        }
    }
    args.push(format!("--guest-kubeconfig={GUEST_KUBECONFIG_PATH}"));
    let envs = container.env.get_or_insert_with(Vec::new);
    envs.splice(
        0..0,
        [
            env(DRIVER_CONTROL_PLANE_IMAGE_ENV, driver_cp_image),
            env(LIVENESS_PROBE_CONTROL_PLANE_IMAGE_ENV, liveness_cp_image),
        ],
    );
    if let Some(uid) = hosted.run_as_user {
        envs.push(env(RUN_AS_USER_ENV, &uid.to_string()));
    }
    let dir = GUEST_KUBECONFIG_PATH
        .rsplit_once('/')
        .map_or(GUEST_KUBECONFIG_PATH, |(dir, _)| dir);
    container.volume_mounts.get_or_insert_with(Vec::new).insert(
        0,
        VolumeMount {
            name: GUEST_KUBECONFIG_VOLUME.to_owned(),
            mount_path: dir.to_owned(),
            ..Default::default()
        },
    );
    Ok(d)
}

/// The objects the CSO applies for `driver`'s operator when the control plane is hosted,
/// split between the management cluster and the guest (see the module documentation).
/// `inputs` are the standalone ones (the CSO's environment, the guest's `Storage` log level,
/// the guest's proxy); `inputs.serving` is not used: the TLS profile is the
/// HostedControlPlane's. `inputs.env` must also hold the driver's `*_CONTROL_PLANE_IMAGE` and
/// `LIVENESS_PROBE_CONTROL_PLANE_IMAGE`.
pub fn hosted_operator_objects(
    driver: &Driver,
    inputs: &Inputs,
    hosted: &Hosted,
) -> Result<HostedOperatorObjects, BuildError> {
    let t = hosted_typed(driver, inputs, hosted)?;
    let a = driver.assets;
    let e = BuildError::Desired;
    let management = vec![
        desired::from_typed(a.service_account.name, None, &t.service_account).map_err(e)?,
        desired::from_typed(MANAGEMENT_ROLE, None, &t.role).map_err(e)?,
        desired::from_typed(MANAGEMENT_ROLE, None, &t.role_binding).map_err(e)?,
        desired::from_typed(a.metrics_service.name, None, &t.metrics_service).map_err(e)?,
        desired::from_typed(a.config_map.name, None, &t.config_map).map_err(e)?,
    ];
    let mut guest = Vec::new();
    if let (Some(ns), Some(asset)) = (&t.guest.namespace, a.namespace) {
        guest.push(desired::from_typed(asset.name, None, ns).map_err(e)?);
    }
    if let Some(sa) = &t.guest.service_account {
        guest.push(desired::from_typed(a.service_account.name, None, sa).map_err(e)?);
    }
    for r in &t.guest.roles {
        guest.push(desired::from_typed(a.roles.name, None, r).map_err(e)?);
    }
    for b in &t.guest.role_bindings {
        guest.push(desired::from_typed(a.role_bindings.name, None, b).map_err(e)?);
    }
    guest.push(desired::from_typed(a.cluster_role.name, None, &t.guest.cluster_role).map_err(e)?);
    guest.push(
        desired::from_typed(
            a.cluster_role_binding.name,
            None,
            &t.guest.cluster_role_binding,
        )
        .map_err(e)?,
    );
    Ok(HostedOperatorObjects {
        management,
        guest,
        deployment: desired::from_typed(a.deployment.name, None, &t.deployment).map_err(e)?,
        cluster_csi_driver: cluster_csi_driver(driver, &inputs.log_level),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{CINDER, DRIVERS, MANILA};
    use operator_kit::hosted::HostedControlPlane;

    const NS: &str = "clusters-guest";

    fn env() -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        for d in DRIVERS {
            for v in d.all_image_vars() {
                env.insert(
                    v.cso_env.to_owned(),
                    format!("quay.io/test/{}:1", v.cso_env),
                );
            }
            if let Some(cp) = driver_control_plane_image_env(d) {
                env.insert(cp.to_owned(), format!("quay.io/test/{cp}:1"));
            }
        }
        env.insert(
            LIVENESS_PROBE_CONTROL_PLANE_IMAGE_ENV.to_owned(),
            "quay.io/test/lp-cp:1".to_owned(),
        );
        env.insert(OPERATOR_IMAGE_VERSION_ENV.to_owned(), "4.20.1".to_owned());
        env
    }

    fn inputs() -> Inputs {
        Inputs {
            env: env(),
            ..Inputs::default()
        }
    }

    fn hosted() -> Hosted {
        Hosted {
            control_plane: HostedControlPlane {
                namespace: NS.to_owned(),
                node_selector: BTreeMap::from([("role".to_owned(), "cp".to_owned())]),
                labels: BTreeMap::from([
                    ("team".to_owned(), "storage".to_owned()),
                    // Never overrides the selector's label.
                    ("name".to_owned(), "other".to_owned()),
                ]),
                tolerations: vec![Toleration {
                    key: Some("dedicated".to_owned()),
                    operator: Some("Equal".to_owned()),
                    value: Some("cp".to_owned()),
                    effect: Some("NoSchedule".to_owned()),
                    ..Default::default()
                }],
                tls_security_profile: Some(serde_json::json!({"type": "Modern", "modern": {}})),
            },
            run_as_user: None,
            management_proxy: BTreeMap::new(),
        }
    }

    fn namespace_of(d: &Desired) -> Option<String> {
        d.object.metadata.namespace.clone()
    }

    fn kinds(ds: &[Desired]) -> Vec<String> {
        ds.iter()
            .map(|d| {
                let kind = d.resource.kind.clone();
                match namespace_of(d) {
                    Some(ns) => format!(
                        "{kind} {ns}/{}",
                        d.object.metadata.name.clone().unwrap_or_default()
                    ),
                    None => format!(
                        "{kind} {}",
                        d.object.metadata.name.clone().unwrap_or_default()
                    ),
                }
            })
            .collect()
    }

    #[test]
    fn objects_split_between_the_control_plane_namespace_and_the_guest_as_openshift_splits_them() {
        let cinder = hosted_operator_objects(&CINDER, &inputs(), &hosted()).expect("builds");
        assert_eq!(
            kinds(&cinder.management),
            [
                "ServiceAccount clusters-guest/openstack-cinder-csi-driver-operator",
                "Role clusters-guest/openstack-cinder-csi-driver-operator-role",
                "RoleBinding clusters-guest/openstack-cinder-csi-driver-operator-rolebinding",
                "Service clusters-guest/openstack-cinder-csi-driver-operator-metrics",
                "ConfigMap clusters-guest/openstack-cinder-csi-driver-operator-config",
            ]
        );
        assert_eq!(namespace_of(&cinder.deployment).as_deref(), Some(NS));
        assert_eq!(
            kinds(&cinder.guest),
            [
                "ServiceAccount openshift-cluster-csi-drivers/openstack-cinder-csi-driver-operator",
                "Role openshift-cluster-csi-drivers/openstack-cinder-csi-driver-operator-role",
                "Role openshift-config/openstack-cinder-csi-driver-operator-role",
                "RoleBinding openshift-cluster-csi-drivers/openstack-cinder-csi-driver-operator-rolebinding",
                "RoleBinding openshift-config/openstack-cinder-csi-driver-operator-rolebinding",
                "ClusterRole openstack-cinder-csi-driver-operator-clusterrole",
                "ClusterRoleBinding openstack-cinder-csi-driver-operator-clusterrolebinding",
            ]
        );
        assert_eq!(
            cinder.cluster_csi_driver.metadata.name.as_deref(),
            Some("cinder.csi.openstack.org")
        );
        let manila = hosted_operator_objects(&MANILA, &inputs(), &hosted()).expect("builds");
        assert_eq!(
            kinds(&manila.guest),
            [
                "Namespace openshift-manila-csi-driver",
                "ClusterRole manila-csi-driver-operator-clusterrole",
                "ClusterRoleBinding manila-csi-driver-operator-clusterrolebinding",
            ]
        );
        // The runtime's rule holds: the control-plane namespace is the management cluster's,
        // nothing of the guest is in it.
        for o in [&cinder, &manila] {
            assert!(
                o.management
                    .iter()
                    .all(|d| namespace_of(d).as_deref() == Some(NS))
            );
            assert!(
                o.guest
                    .iter()
                    .all(|d| namespace_of(d).as_deref() != Some(NS))
            );
        }
    }

    fn deployment(driver: &Driver, hosted: &Hosted) -> Deployment {
        hosted_typed(driver, &inputs(), hosted)
            .expect("builds")
            .deployment
    }

    #[test]
    fn the_deployment_runs_in_the_control_plane_and_reaches_the_guest() {
        for driver in [&CINDER, &MANILA] {
            let d = deployment(driver, &hosted());
            let meta = &d.metadata;
            assert_eq!(
                meta.labels.as_ref().unwrap()[MANAGED_BY_LABEL],
                MANAGED_BY_CSO
            );
            assert_eq!(
                meta.annotations.as_ref().unwrap()[DESIRED_VERSION_ANNOTATION],
                "4.20.1"
            );
            let template = &d.spec.as_ref().unwrap().template;
            let labels = template.metadata.as_ref().unwrap().labels.as_ref().unwrap();
            assert_eq!(
                labels["name"], driver.operator_deployment,
                "the selector's label stays"
            );
            assert_eq!(labels["team"], "storage");
            assert_eq!(labels[NEED_MANAGEMENT_KAS_ACCESS_LABEL], "true");
            let pod = template.spec.as_ref().unwrap();
            assert_eq!(pod.priority_class_name.as_deref(), Some(PRIORITY_CLASS));
            assert_eq!(
                pod.node_selector,
                Some(BTreeMap::from([("role".to_owned(), "cp".to_owned())])),
                "the HostedControlPlane's selector replaces the master one"
            );
            let tolerations: Vec<_> = pod
                .tolerations
                .iter()
                .flatten()
                .map(|t| (t.key.clone().unwrap_or_default(), t.value.clone()))
                .collect();
            assert_eq!(
                tolerations,
                [
                    ("CriticalAddonsOnly".to_owned(), None),
                    ("node-role.kubernetes.io/master".to_owned(), None),
                    (CONTROL_PLANE_NODE_LABEL.to_owned(), None),
                    (CLUSTER_NODE_LABEL.to_owned(), Some(NS.to_owned())),
                    ("dedicated".to_owned(), Some("cp".to_owned())),
                ]
            );
            let affinity = serde_json::to_value(pod.affinity.as_ref().unwrap()).unwrap();
            assert_eq!(
                affinity["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
                    ["labelSelector"]["matchLabels"][HOSTED_CONTROL_PLANE_LABEL],
                NS
            );
            let c = &pod.containers[0];
            let args = c.args.as_ref().unwrap();
            assert!(args.contains(&format!("--namespace={NS}")), "{args:?}");
            assert_eq!(
                args.last().unwrap(),
                "--guest-kubeconfig=/etc/guest-kubeconfig/kubeconfig"
            );
            let env: Vec<(&str, Option<&str>)> = c
                .env
                .iter()
                .flatten()
                .map(|e| (e.name.as_str(), e.value.as_deref()))
                .collect();
            let cp_env = driver_control_plane_image_env(driver).unwrap();
            let cp_image = format!("quay.io/test/{cp_env}:1");
            assert_eq!(
                env[0],
                (DRIVER_CONTROL_PLANE_IMAGE_ENV, Some(cp_image.as_str()))
            );
            assert_eq!(
                env[1],
                (
                    LIVENESS_PROBE_CONTROL_PLANE_IMAGE_ENV,
                    Some("quay.io/test/lp-cp:1")
                )
            );
            assert!(!env.iter().any(|(n, _)| *n == RUN_AS_USER_ENV));
            let volumes = pod.volumes.as_ref().unwrap();
            let guest = volumes
                .iter()
                .find(|v| v.name == GUEST_KUBECONFIG_VOLUME)
                .unwrap();
            assert_eq!(
                guest.secret.as_ref().unwrap().secret_name.as_deref(),
                Some(GUEST_KUBECONFIG_SECRET)
            );
            assert!(
                c.volume_mounts
                    .iter()
                    .flatten()
                    .any(|m| m.name == GUEST_KUBECONFIG_VOLUME
                        && m.mount_path == "/etc/guest-kubeconfig")
            );
            let ca = volumes.iter().find(|v| v.name == "legacy-cacert").unwrap();
            assert_eq!(ca.config_map.as_ref().unwrap().name, CLOUD_CA_CONFIG_MAP);
        }
        // Without a node selector on the HostedControlPlane there is none at all (not master's).
        let mut plain = hosted();
        plain.control_plane.node_selector.clear();
        let d = deployment(&CINDER, &plain);
        assert_eq!(d.spec.unwrap().template.spec.unwrap().node_selector, None);
    }

    #[test]
    fn run_as_user_reaches_the_pod_and_the_operator() {
        let mut h = hosted();
        h.run_as_user = Some(1001);
        let d = deployment(&MANILA, &h);
        let pod = d.spec.unwrap().template.spec.unwrap();
        assert_eq!(pod.security_context.unwrap().run_as_user, Some(1001));
        let env = pod.containers[0].env.clone().unwrap();
        assert!(
            env.iter()
                .any(|e| e.name == RUN_AS_USER_ENV && e.value.as_deref() == Some("1001"))
        );
    }

    fn config_yaml(h: &Hosted) -> String {
        hosted_typed(&CINDER, &inputs(), h)
            .expect("builds")
            .config_map
            .data
            .unwrap()[OPERATOR_CONFIG_KEY]
            .clone()
    }

    #[test]
    fn the_operator_config_takes_the_hosted_control_planes_tls_profile() {
        let modern = config_yaml(&hosted());
        assert!(modern.contains("minTLSVersion: VersionTLS13"), "{modern}");
        let mut none = hosted();
        none.control_plane.tls_security_profile = None;
        let intermediate = config_yaml(&none);
        assert!(
            intermediate.contains("minTLSVersion: VersionTLS12"),
            "{intermediate}"
        );
        assert!(
            intermediate.contains("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
            "{intermediate}"
        );
        let mut custom = hosted();
        custom.control_plane.tls_security_profile = Some(serde_json::json!({
            "type": "Custom",
            "custom": {"minTLSVersion": "VersionTLS12", "ciphers": ["ECDHE-RSA-AES256-GCM-SHA384"]}
        }));
        let yaml = config_yaml(&custom);
        assert!(
            yaml.contains("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
            "{yaml}"
        );
        assert!(!yaml.contains("AES_128"), "{yaml}");
        // The standalone APIServer profile of `inputs.serving` is not used.
        assert_ne!(modern, intermediate);
        let mut bad = hosted();
        bad.control_plane.tls_security_profile = Some(serde_json::json!({"type": 7}));
        let e = hosted_typed(&CINDER, &inputs(), &bad)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("HostedControlPlane clusters-guest") && e.contains("tlsSecurityProfile"),
            "{e}"
        );
    }

    #[test]
    fn missing_facts_are_named() {
        for (env_var, driver) in [
            ("OPENSTACK_CINDER_DRIVER_CONTROL_PLANE_IMAGE", &CINDER),
            ("MANILA_DRIVER_CONTROL_PLANE_IMAGE", &MANILA),
            (LIVENESS_PROBE_CONTROL_PLANE_IMAGE_ENV, &CINDER),
        ] {
            let mut i = inputs();
            i.env.remove(env_var);
            let e = hosted_typed(driver, &i, &hosted()).unwrap_err().to_string();
            assert!(e.contains(env_var), "{e}");
        }
        let mut h = hosted();
        h.control_plane.namespace.clear();
        let e = hosted_typed(&CINDER, &inputs(), &h)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no namespace"), "{e}");
    }

    #[test]
    fn the_management_role_is_openshifts_in_the_control_plane_namespace() {
        for driver in [&CINDER, &MANILA] {
            let t = hosted_typed(driver, &inputs(), &hosted()).expect("builds");
            assert_eq!(t.role.metadata.namespace.as_deref(), Some(NS));
            let rules = t.role.rules.clone().unwrap();
            assert!(rules.iter().any(|r| r.api_groups.as_deref()
                == Some(&["hypershift.openshift.io".to_owned()][..])
                && r.resources.as_deref() == Some(&["hostedcontrolplanes".to_owned()][..])));
            assert_eq!(
                t.role_binding.role_ref.name,
                t.role.metadata.name.clone().unwrap()
            );
            let subject = &t.role_binding.subjects.as_ref().unwrap()[0];
            assert_eq!(subject.name, driver.operator_deployment);
            assert_eq!(subject.namespace.as_deref(), Some(NS));
            assert_eq!(
                t.service_account.image_pull_secrets.as_ref().unwrap()[0].name,
                PULL_SECRET
            );
        }
    }

    #[test]
    fn related_objects_are_the_guests_static_objects() {
        for driver in [&CINDER, &MANILA] {
            let o = hosted_operator_objects(driver, &inputs(), &hosted()).expect("builds");
            let guest: Vec<(String, String)> = o
                .guest
                .iter()
                .map(|d| {
                    (
                        d.object.metadata.namespace.clone().unwrap_or_default(),
                        d.object.metadata.name.clone().unwrap_or_default(),
                    )
                })
                .collect();
            let related = hosted_related_objects(driver);
            assert!(!related.is_empty());
            for r in &related {
                assert!(
                    guest.contains(&(r.namespace.clone(), r.name.clone())),
                    "{}: {r:?} is not a guest object",
                    driver.name
                );
            }
        }
        // Manila's guest has no operator ServiceAccount: it is not listed.
        assert!(
            hosted_related_objects(&MANILA)
                .iter()
                .all(|r| r.resource != "serviceaccounts")
        );
        assert_eq!(
            management_static_controller(&CINDER),
            "OpenStackCinderCSIDriverOperatorMgmtStaticController"
        );
    }
}
