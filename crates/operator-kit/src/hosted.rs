//! Hosted control planes (HyperShift): what an operator reads about the control plane it
//! serves when it runs in a management cluster and reaches the guest through a kubeconfig.
//!
//! In a hosted cluster the CSO, the driver operators and the drivers' controller Deployments
//! live in the control-plane namespace of the management cluster (anchors §3.8, §4.8, §5.5);
//! the ClusterCSIDriver, CSIDriver, node DaemonSets, StorageClasses and the node side's RBAC
//! live in the guest. This module holds the facts of that placement, read from the
//! `HostedControlPlane` object of the control-plane namespace, and the names OpenShift gives
//! the pieces, and the hooks both drivers run on their controller Deployment when hosted
//! ([`hosted_controller_shape`], [`hosted_controller_hooks`], [`hosted_service_account`]). It
//! is pure: it parses and adjusts objects handed to it and reads nothing itself (the
//! environment comes in through a lookup function).
//!
//! What it must not do: decide which cluster an object goes to (the kit's client routing does
//! that by namespace), or decide which objects exist (the drivers' and the CSO's builders do).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    Affinity, EnvVar, NodeAffinity, NodeSelectorRequirement, NodeSelectorTerm, PodAffinity,
    PodAffinityTerm, PodSecurityContext, PreferredSchedulingTerm, SecretVolumeSource, Toleration,
    Volume, VolumeMount, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};

/// Mount path of the guest kubeconfig in the operators' pods (anchors §3.8).
pub const GUEST_KUBECONFIG_PATH: &str = "/etc/guest-kubeconfig/kubeconfig";
/// The Secret of the control-plane namespace holding the guest kubeconfig (`kubeconfig` key).
pub const GUEST_KUBECONFIG_SECRET: &str = "service-network-admin-kubeconfig";
/// Where the drivers' controller sidecars find the guest kubeconfig (anchors §4.8).
pub const HOSTED_KUBECONFIG_PATH: &str = "/etc/hosted-kubernetes/kubeconfig";
/// The CA ConfigMap of the control-plane namespace (`cloud-provider-config` when standalone).
pub const CLOUD_CA_CONFIG_MAP: &str = "openstack-cloud-config";
/// `priorityClassName` of every control-plane pod.
pub const PRIORITY_CLASS: &str = "hypershift-control-plane";
/// Label on the Deployments the CSO manages in the control-plane namespace.
pub const MANAGED_BY_LABEL: &str = "hypershift.openshift.io/managed-by";
/// Its value.
pub const MANAGED_BY_CSO: &str = "cluster-storage-operator";
/// Pod label naming the control-plane namespace (pod affinity keeps a plane's pods together).
pub const HOSTED_CONTROL_PLANE_LABEL: &str = "hypershift.openshift.io/hosted-control-plane";
/// Annotation with the release the Deployment is meant to run.
pub const DESIRED_VERSION_ANNOTATION: &str = "release.openshift.io/desired-version";
/// Annotation the DeploymentVersionController sets once that release has rolled out.
pub const VERSION_ANNOTATION: &str = "release.openshift.io/version";

/// `hypershift.openshift.io/v1beta1` `HostedControlPlane`, namespaced.
pub fn hosted_control_plane_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("hypershift.openshift.io", "v1beta1", "HostedControlPlane"),
        "hostedcontrolplanes",
    )
}

/// What the builders need from the `HostedControlPlane` of the control-plane namespace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostedControlPlane {
    /// The control-plane namespace in the management cluster (`${NAMESPACE}` of the
    /// control-plane objects).
    pub namespace: String,
    /// `spec.nodeSelector`: replaces the control-plane pods' node selector when set.
    pub node_selector: BTreeMap<String, String>,
    /// `spec.labels`: added to the control-plane pods' template (existing keys win).
    pub labels: BTreeMap<String, String>,
    /// `spec.tolerations`: appended to the control-plane pods' tolerations.
    pub tolerations: Vec<Toleration>,
    /// `spec.configuration.apiServer.tlsSecurityProfile`, as written (the CSO's operator
    /// config takes its TLS settings from it).
    pub tls_security_profile: Option<serde_json::Value>,
}

/// Why a `HostedControlPlane` could not be read; the message says which field and how to fix.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum HostedError {
    #[error(
        "HostedControlPlane {namespace}/{name}: {field} is not {expected}; correct the \
         HostedCluster it comes from"
    )]
    Field {
        namespace: String,
        name: String,
        field: &'static str,
        expected: &'static str,
    },
}

impl HostedControlPlane {
    /// Reads the fields the builders use from the object as the API server returned it.
    /// Fields the builders do not use are ignored; a used field of the wrong shape is an error.
    pub fn from_object(obj: &DynamicObject) -> Result<Self, HostedError> {
        let namespace = obj.metadata.namespace.clone().unwrap_or_default();
        let name = obj.metadata.name.clone().unwrap_or_default();
        let spec = obj.data.get("spec");
        let field_err = |field: &'static str, expected: &'static str| HostedError::Field {
            namespace: namespace.clone(),
            name: name.clone(),
            field,
            expected,
        };
        let strings =
            |field: &'static str, key: &str| -> Result<BTreeMap<String, String>, HostedError> {
                match spec.and_then(|s| s.get(key)) {
                    None | Some(serde_json::Value::Null) => Ok(BTreeMap::new()),
                    Some(v) => serde_json::from_value(v.clone())
                        .map_err(|_| field_err(field, "a map of strings to strings")),
                }
            };
        let node_selector = strings("spec.nodeSelector", "nodeSelector")?;
        let labels = strings("spec.labels", "labels")?;
        let tolerations = match spec.and_then(|s| s.get("tolerations")) {
            None | Some(serde_json::Value::Null) => Vec::new(),
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|_| field_err("spec.tolerations", "a list of tolerations"))?,
        };
        let tls_security_profile = spec
            .and_then(|s| s.pointer("/configuration/apiServer/tlsSecurityProfile"))
            .filter(|v| !v.is_null())
            .cloned();
        Ok(Self {
            namespace,
            node_selector,
            labels,
            tolerations,
            tls_security_profile,
        })
    }
}

/// How an operator runs when its control plane is hosted: the `HostedControlPlane` it serves
/// and what the management cluster's environment gives the control-plane workloads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hosted {
    pub control_plane: HostedControlPlane,
    /// `RUN_AS_USER` of the operator's environment, checked: the controller pod's `runAsUser`.
    pub run_as_user: Option<i64>,
    /// The management cluster's own `HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY` (appended to the
    /// controller's containers).
    pub management_proxy: BTreeMap<String, String>,
}

impl Hosted {
    /// The hosted facts of an operator whose environment `lookup` reads: `RUN_AS_USER`
    /// (checked; unset or empty is none) and the management cluster's proxy variables.
    pub fn from_env(
        control_plane: HostedControlPlane,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let run_as_user = match lookup("RUN_AS_USER").filter(|v| !v.is_empty()) {
            Some(v) => Some(parse_run_as_user(&v)?),
            None => None,
        };
        Ok(Self {
            control_plane,
            run_as_user,
            management_proxy: management_proxy(&lookup),
        })
    }
}

/// Condition prefix of the hosted control plane's reading (`HostedControlPlaneDegraded`).
pub const CONDITION_PREFIX: &str = "HostedControlPlane";

/// Registers the watch of the `HostedControlPlane`s of the control-plane namespace (the
/// management cluster's; the cache routes it there by namespace).
pub fn watch(
    builder: crate::cache::CacheBuilder,
    control_plane_namespace: &str,
) -> crate::cache::CacheBuilder {
    builder.in_namespace(&hosted_control_plane_resource(), control_plane_namespace)
}

/// Why the `HostedControlPlane` of the control-plane namespace cannot be used: the message
/// of `HostedControlPlaneDegraded`, saying what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ControlPlaneError {
    #[error(
        "no HostedControlPlane in the control-plane namespace {namespace} of the management \
         cluster; the operator places the driver's controller by it (HyperShift creates it \
         with the hosted cluster)"
    )]
    Missing { namespace: String },
    #[error(
        "{count} HostedControlPlanes in the control-plane namespace {namespace}; a \
         control-plane namespace holds exactly one"
    )]
    Several { namespace: String, count: usize },
    #[error(transparent)]
    Malformed(#[from] HostedError),
}

/// The one `HostedControlPlane` of `namespace` from the cache, read; an error saying what to
/// fix when there is none, several, or it is malformed.
pub fn read_control_plane(
    cache: &crate::cache::Cache,
    namespace: &str,
) -> Result<HostedControlPlane, ControlPlaneError> {
    let planes = cache.list(&hosted_control_plane_resource(), namespace);
    match planes.as_slice() {
        [one] => Ok(HostedControlPlane::from_object(one)?),
        [] => Err(ControlPlaneError::Missing {
            namespace: namespace.to_string(),
        }),
        many => Err(ControlPlaneError::Several {
            namespace: namespace.to_string(),
            count: many.len(),
        }),
    }
}

/// library-go's DeploymentVersionController, decided: the version to record in the
/// Deployment's `release.openshift.io/version` annotation, or `None` when there is nothing to
/// do. It is recorded only when the Deployment is meant for the operator's own version
/// (`release.openshift.io/desired-version` equals `operator_version`), has not recorded it
/// yet, and has finished rolling out (the controller-manager observed its generation and says
/// `NewReplicaSetAvailable`). HyperShift reads it to tell an upgraded control plane.
pub fn version_to_record(
    deployment: &k8s_openapi::api::apps::v1::Deployment,
    operator_version: &str,
) -> Option<String> {
    match version_annotation(deployment, operator_version) {
        VersionAnnotation::Set(version) => Some(version),
        VersionAnnotation::NotOurs
        | VersionAnnotation::AlreadySet
        | VersionAnnotation::RollingOut => None,
    }
}

/// Condition prefix of the version recording, after library-go's controller name.
pub fn version_controller_prefix(controller_name_prefix: &str) -> String {
    format!("{controller_name_prefix}DeploymentVersionController")
}

/// Records the rolled-out version on the Deployment `namespace/name` when
/// [`version_to_record`] says so (a metadata-only merge patch, which does not roll it).
pub async fn record_version(
    client: &kube::Client,
    cache: &crate::cache::Cache,
    namespace: &str,
    name: &str,
    operator_version: &str,
) -> Result<bool, RecordVersionError> {
    use k8s_openapi::api::apps::v1::Deployment;
    let Some(live) = cache.get::<Deployment>(Some(namespace), name) else {
        return Ok(false);
    };
    let Some(version) = version_to_record(&live, operator_version) else {
        return Ok(false);
    };
    let patch = serde_json::json!({"metadata": {"annotations": {VERSION_ANNOTATION: version}}});
    kube::Api::<Deployment>::namespaced(client.clone(), namespace)
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .map(|_| true)
        .map_err(|source| RecordVersionError {
            version,
            deployment: format!("{namespace}/{name}"),
            source,
        })
}

/// The version annotation could not be written on a Deployment.
#[derive(Debug, thiserror::Error)]
#[error("cannot record version {version} on Deployment {deployment}: {source}")]
pub struct RecordVersionError {
    version: String,
    /// `namespace/name`.
    deployment: String,
    source: kube::Error,
}

/// The objects a driver operator reads on a hosted control plane beyond what its standalone
/// watches cover, as (namespace, name): its watches must add them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostedReads {
    pub config_maps: Vec<(String, String)>,
    pub secrets: Vec<(String, String)>,
}

impl HostedReads {
    /// Registers watches for what is read (by name; a ConfigMap of a namespace in `owned`
    /// is already covered by the namespace-wide ConfigMap watch).
    pub fn watch(
        &self,
        mut builder: crate::cache::CacheBuilder,
        owned: &[&str],
    ) -> crate::cache::CacheBuilder {
        let config_map = crate::kinds::known("v1", "ConfigMap");
        let secret = crate::kinds::known("v1", "Secret");
        for (ns, name) in &self.config_maps {
            if !owned.contains(&ns.as_str()) {
                builder = builder.namespaced_object(&config_map, ns, name);
            }
        }
        for (ns, name) in &self.secrets {
            builder = builder.namespaced_object(&secret, ns, name);
        }
        builder
    }
}

/// `RUN_AS_USER` must be a non-negative integer (csi-operator refuses anything else).
pub fn parse_run_as_user(value: &str) -> Result<i64, String> {
    match value.trim().parse::<i64>() {
        Ok(n) if n >= 0 => Ok(n),
        _ => Err(format!(
            "RUN_AS_USER {value:?} is not a non-negative integer; set it to the user ID the \
             control-plane pods run as, or unset it"
        )),
    }
}

/// Image variables of the operator's environment that replace images of the controller's
/// containers on a hosted control plane (anchors §4.8): `csi-driver`, `csi-liveness-probe`, and
/// every container whose name contains `kube-rbac-proxy`, in that order.
pub const CONTROL_PLANE_IMAGE_ENV_VARS: [&str; 3] = [
    "DRIVER_CONTROL_PLANE_IMAGE",
    "LIVENESS_PROBE_CONTROL_PLANE_IMAGE",
    "KUBE_RBAC_PROXY_CONTROL_PLANE_IMAGE",
];
/// The controller sidecars that talk to the guest's API server, so get its kubeconfig.
pub const GUEST_API_SIDECARS: [&str; 4] = [
    "csi-provisioner",
    "csi-attacher",
    "csi-resizer",
    "csi-snapshotter",
];
/// Name of the guest kubeconfig volume in the controller pod.
pub const HOSTED_KUBECONFIG_VOLUME: &str = "hosted-kubeconfig";
/// Where [`HOSTED_KUBECONFIG_VOLUME`] is mounted (the directory of [`HOSTED_KUBECONFIG_PATH`]).
pub const HOSTED_KUBECONFIG_DIR: &str = "/etc/hosted-kubernetes";
/// The pull secret HyperShift puts in every control-plane namespace.
pub const PULL_SECRET: &str = "pull-secret";
/// Taint key of the management cluster's control-plane nodes.
pub const CONTROL_PLANE_TAINT: &str = "hypershift.openshift.io/control-plane";
/// Taint key of the nodes dedicated to one hosted cluster (value: its namespace).
pub const CLUSTER_TAINT: &str = "hypershift.openshift.io/cluster";
/// The proxy variables of the management cluster, in the order they are appended.
pub const MANAGEMENT_PROXY_ENV_VARS: [&str; 3] = ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"];

/// The shape of a driver's controller Deployment on a hosted control plane, as OpenShift's
/// generator makes its `hypershift` asset from the standalone one (`assets/common/hypershift/`
/// of openshift/csi-operator, anchors §4.8): control-plane tolerations, node and pod affinity
/// towards the plane's nodes and pods (the anti-affinity is kept), `priorityClassName`, the pod
/// label naming the plane, the guest kubeconfig volume and, on the sidecars that call the
/// guest's API, `--kubeconfig=$(KUBECONFIG)` with its env var and mount; the managed-by label and
/// the desired-version annotation on the Deployment. `namespace` is the control-plane
/// namespace, `release_version` the operator's `OPERATOR_IMAGE_VERSION`.
pub fn hosted_controller_shape(d: &mut Deployment, namespace: &str, release_version: &str) {
    d.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(MANAGED_BY_LABEL.into(), MANAGED_BY_CSO.into());
    d.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(DESIRED_VERSION_ANNOTATION.into(), release_version.into());
    let template = &mut d.spec.get_or_insert_with(Default::default).template;
    template
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(HOSTED_CONTROL_PLANE_LABEL.into(), namespace.into());
    let pod = template.spec.get_or_insert_with(Default::default);
    let preference = |key: &str, value: &str, weight: i32| PreferredSchedulingTerm {
        weight,
        preference: NodeSelectorTerm {
            match_expressions: Some(vec![NodeSelectorRequirement {
                key: key.into(),
                operator: "In".into(),
                values: Some(vec![value.into()]),
            }]),
            match_fields: None,
        },
    };
    let affinity = pod.affinity.get_or_insert_with(Affinity::default);
    affinity.node_affinity = Some(NodeAffinity {
        preferred_during_scheduling_ignored_during_execution: Some(vec![
            preference(CONTROL_PLANE_TAINT, "true", 50),
            preference(CLUSTER_TAINT, namespace, 100),
        ]),
        required_during_scheduling_ignored_during_execution: None,
    });
    affinity.pod_affinity = Some(PodAffinity {
        preferred_during_scheduling_ignored_during_execution: Some(vec![WeightedPodAffinityTerm {
            weight: 100,
            pod_affinity_term: PodAffinityTerm {
                label_selector: Some(LabelSelector {
                    match_labels: Some(BTreeMap::from([(
                        HOSTED_CONTROL_PLANE_LABEL.to_string(),
                        namespace.to_string(),
                    )])),
                    match_expressions: None,
                }),
                topology_key: "kubernetes.io/hostname".into(),
                ..Default::default()
            },
        }]),
        required_during_scheduling_ignored_during_execution: None,
    });
    pod.priority_class_name = Some(PRIORITY_CLASS.into());
    let taint = |key: &str, value: &str| Toleration {
        key: Some(key.into()),
        operator: Some("Equal".into()),
        value: Some(value.into()),
        effect: Some("NoSchedule".into()),
        toleration_seconds: None,
    };
    pod.tolerations = Some(vec![
        taint(CONTROL_PLANE_TAINT, "true"),
        taint(CLUSTER_TAINT, namespace),
    ]);
    let volumes = pod.volumes.get_or_insert_with(Vec::new);
    volumes.retain(|v| v.name != HOSTED_KUBECONFIG_VOLUME);
    volumes.push(Volume {
        name: HOSTED_KUBECONFIG_VOLUME.into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(GUEST_KUBECONFIG_SECRET.into()),
            default_mode: Some(0o644),
            ..Default::default()
        }),
        ..Default::default()
    });
    for c in pod
        .containers
        .iter_mut()
        .filter(|c| GUEST_API_SIDECARS.contains(&c.name.as_str()))
    {
        let arg = "--kubeconfig=$(KUBECONFIG)".to_string();
        let args = c.args.get_or_insert_with(Vec::new);
        if !args.contains(&arg) {
            args.push(arg);
        }
        let env = c.env.get_or_insert_with(Vec::new);
        env.retain(|e| e.name != "KUBECONFIG");
        env.push(EnvVar {
            name: "KUBECONFIG".into(),
            value: Some(HOSTED_KUBECONFIG_PATH.into()),
            value_from: None,
        });
        let mounts = c.volume_mounts.get_or_insert_with(Vec::new);
        mounts.retain(|m| m.name != HOSTED_KUBECONFIG_VOLUME);
        mounts.push(VolumeMount {
            name: HOSTED_KUBECONFIG_VOLUME.into(),
            mount_path: HOSTED_KUBECONFIG_DIR.into(),
            read_only: Some(true),
            ..Default::default()
        });
    }
}

/// The Deployment hooks OpenShift's driver operators run on a hosted control plane in place
/// of the proxy and replicas hooks, in their order (`withHyperShift*` of
/// openshift/csi-operator's `hooks.go`, anchors §4.8): one replica; the plane's
/// `nodeSelector` (none when it has none: the guest's `External` topology clears the asset's);
/// its labels on the pod template, where the template has no such key; the control-plane
/// images from `images` (the operator's environment) where set; its tolerations appended;
/// `runAsUser`; the management cluster's proxy variables appended to every container.
pub fn hosted_controller_hooks(
    d: &mut Deployment,
    hosted: &Hosted,
    images: &BTreeMap<String, String>,
) {
    let spec = d.spec.get_or_insert_with(Default::default);
    spec.replicas = Some(1);
    let plane = &hosted.control_plane;
    let template = &mut spec.template;
    if !plane.labels.is_empty() {
        let labels = template
            .metadata
            .get_or_insert_with(Default::default)
            .labels
            .get_or_insert_with(BTreeMap::new);
        for (k, v) in &plane.labels {
            labels.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    let pod = template.spec.get_or_insert_with(Default::default);
    pod.node_selector = (!plane.node_selector.is_empty()).then(|| plane.node_selector.clone());
    let image = |name: &str| images.get(name).filter(|v| !v.is_empty());
    let [driver_env, liveness_env, proxy_env] = CONTROL_PLANE_IMAGE_ENV_VARS;
    for c in pod.containers.iter_mut() {
        if c.name == "csi-driver"
            && let Some(i) = image(driver_env)
        {
            c.image = Some(i.clone());
        }
        if c.name == "csi-liveness-probe"
            && let Some(i) = image(liveness_env)
        {
            c.image = Some(i.clone());
        }
        if c.name.contains("kube-rbac-proxy")
            && let Some(i) = image(proxy_env)
        {
            c.image = Some(i.clone());
        }
    }
    if !plane.tolerations.is_empty() {
        pod.tolerations
            .get_or_insert_with(Vec::new)
            .extend(plane.tolerations.iter().cloned());
    }
    if let Some(uid) = hosted.run_as_user {
        pod.security_context
            .get_or_insert_with(PodSecurityContext::default)
            .run_as_user = Some(uid);
    }
    for name in MANAGEMENT_PROXY_ENV_VARS {
        let Some(value) = hosted.management_proxy.get(name).filter(|v| !v.is_empty()) else {
            continue;
        };
        for c in pod.containers.iter_mut() {
            c.env.get_or_insert_with(Vec::new).push(EnvVar {
                name: name.into(),
                value: Some(value.clone()),
                value_from: None,
            });
        }
    }
}

/// The controller's ServiceAccount on a hosted control plane pulls with the plane's
/// `pull-secret` (`controller_sa_pull_secret.yaml` of openshift/csi-operator).
pub fn hosted_service_account(sa: &mut DynamicObject) {
    sa.data["imagePullSecrets"] = serde_json::json!([{ "name": PULL_SECRET }]);
}

/// The management cluster's proxy variables from the operator's environment (`lookup` reads
/// one variable), as [`Hosted::management_proxy`] holds them: the set, non-empty ones.
pub fn management_proxy(lookup: impl Fn(&str) -> Option<String>) -> BTreeMap<String, String> {
    MANAGEMENT_PROXY_ENV_VARS
        .iter()
        .filter_map(|name| {
            lookup(name)
                .filter(|v| !v.is_empty())
                .map(|v| (name.to_string(), v))
        })
        .collect()
}

/// What library-go's DeploymentVersionController does with a control-plane Deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionAnnotation {
    /// Its `release.openshift.io/desired-version` is not this operator's version: written by
    /// another (earlier) operator, left alone.
    NotOurs,
    /// `release.openshift.io/version` already says the desired version.
    AlreadySet,
    /// The rollout of the desired version has not finished yet.
    RollingOut,
    /// The rollout finished: set `release.openshift.io/version` to this value.
    Set(String),
}

/// The pure part of library-go's DeploymentVersionController (`hypershift/deploymentversion`):
/// once `deployment` (read from the management cluster) has rolled out (its status observed the
/// current generation and its `Progressing` condition is `True / NewReplicaSetAvailable`) and
/// its desired-version annotation is `operator_version` (`OPERATOR_IMAGE_VERSION`), its
/// version annotation is to say so.
pub fn version_annotation(
    deployment: &k8s_openapi::api::apps::v1::Deployment,
    operator_version: &str,
) -> VersionAnnotation {
    let annotations = deployment.metadata.annotations.as_ref();
    let get = |key: &str| annotations.and_then(|a| a.get(key)).map(String::as_str);
    let desired = get(DESIRED_VERSION_ANNOTATION).unwrap_or("");
    if desired != operator_version {
        return VersionAnnotation::NotOurs;
    }
    if get(VERSION_ANNOTATION).unwrap_or("") == desired {
        return VersionAnnotation::AlreadySet;
    }
    let status = deployment.status.as_ref();
    let observed = status.and_then(|s| s.observed_generation).unwrap_or(0);
    if observed != deployment.metadata.generation.unwrap_or(0) {
        return VersionAnnotation::RollingOut;
    }
    let finished = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Progressing"))
        .is_some_and(|c| {
            c.status == "True" && c.reason.as_deref() == Some("NewReplicaSetAvailable")
        });
    if finished {
        VersionAnnotation::Set(desired.to_owned())
    } else {
        VersionAnnotation::RollingOut
    }
}

#[cfg(test)]
mod tests {
    /// `HostedControlPlaneDegraded` says what to fix when the namespace holds no plane or
    /// several.
    #[test]
    fn a_missing_or_doubled_control_plane_says_what_to_fix() {
        let missing = ControlPlaneError::Missing {
            namespace: "clusters-a".into(),
        };
        assert_eq!(
            missing.to_string(),
            "no HostedControlPlane in the control-plane namespace clusters-a of the management \
             cluster; the operator places the driver's controller by it (HyperShift creates it \
             with the hosted cluster)"
        );
        let several = ControlPlaneError::Several {
            namespace: "clusters-a".into(),
            count: 2,
        };
        assert_eq!(
            several.to_string(),
            "2 HostedControlPlanes in the control-plane namespace clusters-a; a control-plane \
             namespace holds exactly one"
        );
    }

    use super::*;

    fn hcp(spec: serde_json::Value) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "hypershift.openshift.io/v1beta1",
            "kind": "HostedControlPlane",
            "metadata": {"name": "guest", "namespace": "clusters-guest"},
            "spec": spec,
        }))
        .expect("object")
    }

    #[test]
    fn reads_placement_and_tls_profile() {
        let got = HostedControlPlane::from_object(&hcp(serde_json::json!({
            "nodeSelector": {"role": "cp"},
            "labels": {"team": "a"},
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "cp", "effect": "NoSchedule"}],
            "configuration": {"apiServer": {"tlsSecurityProfile": {"type": "Modern", "modern": {}}}},
            "releaseImage": "ignored",
        })))
        .expect("reads");
        assert_eq!(got.namespace, "clusters-guest");
        assert_eq!(got.node_selector["role"], "cp");
        assert_eq!(got.labels["team"], "a");
        assert_eq!(got.tolerations[0].key.as_deref(), Some("dedicated"));
        assert_eq!(got.tls_security_profile.unwrap()["type"], "Modern");
        let empty = HostedControlPlane::from_object(&hcp(serde_json::json!({}))).unwrap();
        assert!(empty.node_selector.is_empty() && empty.tolerations.is_empty());
        assert!(empty.tls_security_profile.is_none());
    }

    #[test]
    fn a_malformed_field_names_itself() {
        for (spec, field) in [
            (
                serde_json::json!({"nodeSelector": ["a"]}),
                "spec.nodeSelector",
            ),
            (serde_json::json!({"labels": {"a": 1}}), "spec.labels"),
            (
                serde_json::json!({"tolerations": {"a": "b"}}),
                "spec.tolerations",
            ),
        ] {
            let err = HostedControlPlane::from_object(&hcp(spec)).unwrap_err();
            let text = err.to_string();
            assert!(
                text.contains(field) && text.contains("clusters-guest/guest"),
                "{text}"
            );
        }
    }

    #[test]
    fn the_version_controller_is_named_after_the_driver() {
        assert_eq!(
            version_controller_prefix("OpenStackCinder"),
            "OpenStackCinderDeploymentVersionController"
        );
    }

    #[test]
    fn run_as_user_must_be_a_non_negative_integer() {
        assert_eq!(parse_run_as_user("1001"), Ok(1001));
        for bad in ["-1", "root", "", "1.5"] {
            let err = parse_run_as_user(bad).unwrap_err();
            assert!(err.contains("RUN_AS_USER"), "{err}");
        }
    }

    fn controller() -> Deployment {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "c", "namespace": "ns", "annotations": {"a": "b"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "c"}}, "template": {
                "metadata": {"labels": {"app": "c"}},
                "spec": {
                    "nodeSelector": {"node-role.kubernetes.io/master": ""},
                    "priorityClassName": "system-cluster-critical",
                    "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
                    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"app": "c"}}}}]}},
                    "containers": [
                        {"name": "csi-driver", "image": "driver", "env": [{"name": "X", "value": "1"}]},
                        {"name": "driver-kube-rbac-proxy", "image": "proxy"},
                        {"name": "csi-provisioner", "image": "prov", "args": ["--v=2"]},
                        {"name": "csi-liveness-probe", "image": "probe"},
                    ],
                    "volumes": [{"name": "socket-dir", "emptyDir": {}}],
                }}}
        }))
        .expect("deployment")
    }

    fn pod(d: &Deployment) -> serde_json::Value {
        serde_json::to_value(d).unwrap()["spec"]["template"].clone()
    }

    #[test]
    fn the_hosted_shape_is_the_generated_hypershift_asset() {
        let mut d = controller();
        hosted_controller_shape(&mut d, "clusters-guest", "4.20.0");
        // Twice: the shape is idempotent.
        hosted_controller_shape(&mut d, "clusters-guest", "4.20.0");
        let meta = &d.metadata;
        assert_eq!(
            meta.labels.as_ref().unwrap()[MANAGED_BY_LABEL],
            "cluster-storage-operator"
        );
        assert_eq!(
            meta.annotations.as_ref().unwrap()[DESIRED_VERSION_ANNOTATION],
            "4.20.0"
        );
        let t = pod(&d);
        assert_eq!(
            t["metadata"]["labels"][HOSTED_CONTROL_PLANE_LABEL],
            "clusters-guest"
        );
        let spec = &t["spec"];
        assert_eq!(spec["priorityClassName"], PRIORITY_CLASS);
        assert_eq!(
            spec["tolerations"],
            serde_json::json!([
                {"key": CONTROL_PLANE_TAINT, "operator": "Equal", "value": "true", "effect": "NoSchedule"},
                {"key": CLUSTER_TAINT, "operator": "Equal", "value": "clusters-guest", "effect": "NoSchedule"},
            ])
        );
        let node =
            &spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"];
        assert_eq!(node[0]["weight"], 50);
        assert_eq!(
            node[1]["preference"]["matchExpressions"][0]["values"][0],
            "clusters-guest"
        );
        assert_eq!(
            spec["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
                ["labelSelector"]["matchLabels"][HOSTED_CONTROL_PLANE_LABEL],
            "clusters-guest"
        );
        // The anti-affinity of the standalone asset stays.
        assert!(spec["affinity"]["podAntiAffinity"].is_object());
        // The asset's node selector stays: the hooks decide it.
        assert_eq!(spec["nodeSelector"]["node-role.kubernetes.io/master"], "");
        assert_eq!(
            spec["volumes"][1],
            serde_json::json!({"name": "hosted-kubeconfig",
                "secret": {"secretName": GUEST_KUBECONFIG_SECRET, "defaultMode": 420}})
        );
        assert_eq!(spec["volumes"].as_array().unwrap().len(), 2);
        let containers = spec["containers"].as_array().unwrap();
        // Only the sidecars that call the guest's API get its kubeconfig.
        let prov = &containers[2];
        assert_eq!(
            prov["args"],
            serde_json::json!(["--v=2", "--kubeconfig=$(KUBECONFIG)"])
        );
        assert_eq!(
            prov["env"],
            serde_json::json!([{"name": "KUBECONFIG", "value": HOSTED_KUBECONFIG_PATH}])
        );
        assert_eq!(
            prov["volumeMounts"],
            serde_json::json!([{"name": "hosted-kubeconfig", "mountPath": "/etc/hosted-kubernetes", "readOnly": true}])
        );
        for other in [0, 1, 3] {
            assert!(
                containers[other].get("volumeMounts").is_none(),
                "{}",
                containers[other]
            );
        }
    }

    #[test]
    fn the_hosted_hooks_follow_the_plane_and_the_environment() {
        let hosted = Hosted {
            control_plane: HostedControlPlane {
                namespace: "clusters-guest".into(),
                node_selector: BTreeMap::from([("role".into(), "cp".into())]),
                labels: BTreeMap::from([("team".into(), "a".into()), ("app".into(), "no".into())]),
                tolerations: vec![Toleration {
                    key: Some("dedicated".into()),
                    operator: Some("Exists".into()),
                    ..Default::default()
                }],
                tls_security_profile: None,
            },
            run_as_user: Some(1001),
            management_proxy: BTreeMap::from([
                ("NO_PROXY".into(), ".svc".into()),
                ("HTTP_PROXY".into(), "http://p:3128".into()),
            ]),
        };
        let images = BTreeMap::from([
            (
                "DRIVER_CONTROL_PLANE_IMAGE".to_string(),
                "cp-driver".to_string(),
            ),
            (
                "KUBE_RBAC_PROXY_CONTROL_PLANE_IMAGE".to_string(),
                "cp-proxy".to_string(),
            ),
            (
                "LIVENESS_PROBE_CONTROL_PLANE_IMAGE".to_string(),
                String::new(),
            ),
        ]);
        let mut d = controller();
        hosted_controller_shape(&mut d, "clusters-guest", "4.20.0");
        hosted_controller_hooks(&mut d, &hosted, &images);
        assert_eq!(d.spec.as_ref().unwrap().replicas, Some(1));
        let t = pod(&d);
        assert_eq!(t["metadata"]["labels"]["team"], "a");
        assert_eq!(t["metadata"]["labels"]["app"], "c", "existing keys win");
        let spec = &t["spec"];
        assert_eq!(spec["nodeSelector"], serde_json::json!({"role": "cp"}));
        assert_eq!(spec["tolerations"][2]["key"], "dedicated");
        assert_eq!(spec["securityContext"]["runAsUser"], 1001);
        let c = spec["containers"].as_array().unwrap();
        assert_eq!(c[0]["image"], "cp-driver");
        assert_eq!(c[1]["image"], "cp-proxy");
        assert_eq!(c[2]["image"], "prov");
        assert_eq!(c[3]["image"], "probe", "an empty variable changes nothing");
        // Go's order (HTTP_PROXY, HTTPS_PROXY, NO_PROXY), after what the container had.
        let names: Vec<&str> = c[0]["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["X", "HTTP_PROXY", "NO_PROXY"]);
        assert_eq!(c[2]["env"][1]["name"], "HTTP_PROXY");

        // A plane without placement: no nodeSelector at all (the asset's is cleared), no
        // extra tolerations, no security context, no env.
        let bare = Hosted {
            control_plane: HostedControlPlane::default(),
            ..Hosted::default()
        };
        let mut d = controller();
        hosted_controller_shape(&mut d, "ns", "v");
        hosted_controller_hooks(&mut d, &bare, &BTreeMap::new());
        let spec = pod(&d)["spec"].clone();
        assert!(spec.get("nodeSelector").is_none(), "{spec}");
        assert_eq!(spec["tolerations"].as_array().unwrap().len(), 2);
        assert!(spec.get("securityContext").is_none());
        assert_eq!(spec["containers"][0]["env"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn the_controller_service_account_pulls_with_the_plane_pull_secret() {
        let mut sa: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}}))
        .unwrap();
        hosted_service_account(&mut sa);
        assert_eq!(
            sa.data["imagePullSecrets"],
            serde_json::json!([{"name": "pull-secret"}])
        );
    }

    #[test]
    fn the_environment_gives_run_as_user_and_the_management_proxy() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let h = Hosted::from_env(
            HostedControlPlane::default(),
            env(&[
                ("RUN_AS_USER", "1001"),
                ("HTTPS_PROXY", "http://p"),
                ("NO_PROXY", ""),
            ]),
        )
        .expect("valid");
        assert_eq!(h.run_as_user, Some(1001));
        assert_eq!(
            h.management_proxy,
            BTreeMap::from([("HTTPS_PROXY".to_string(), "http://p".to_string())])
        );
        let none = Hosted::from_env(HostedControlPlane::default(), env(&[("RUN_AS_USER", "")]))
            .expect("empty is unset");
        assert_eq!(none.run_as_user, None);
        let err = Hosted::from_env(HostedControlPlane::default(), env(&[("RUN_AS_USER", "-5")]))
            .unwrap_err();
        assert!(err.contains("RUN_AS_USER \"-5\""), "{err}");
    }
    fn deployment(
        desired: Option<&str>,
        version: Option<&str>,
        generation: i64,
        observed: i64,
        progressing: Option<(&str, &str)>,
    ) -> k8s_openapi::api::apps::v1::Deployment {
        let mut annotations = serde_json::Map::new();
        if let Some(d) = desired {
            annotations.insert(DESIRED_VERSION_ANNOTATION.into(), d.into());
        }
        if let Some(v) = version {
            annotations.insert(VERSION_ANNOTATION.into(), v.into());
        }
        let conditions: Vec<serde_json::Value> = progressing
            .into_iter()
            .map(|(status, reason)| {
                serde_json::json!({"type": "Progressing", "status": status, "reason": reason})
            })
            .chain([serde_json::json!({"type": "Available", "status": "True"})])
            .collect();
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "op", "annotations": annotations, "generation": generation},
            "status": {"observedGeneration": observed, "conditions": conditions},
        }))
        .expect("a Deployment")
    }

    #[test]
    fn the_version_is_set_once_the_desired_version_has_rolled_out() {
        let done = Some(("True", "NewReplicaSetAvailable"));
        assert_eq!(
            version_annotation(&deployment(Some("4.20.1"), None, 3, 3, done), "4.20.1"),
            VersionAnnotation::Set("4.20.1".into())
        );
        // An older version annotation is replaced.
        assert_eq!(
            version_annotation(
                &deployment(Some("4.20.1"), Some("4.20.0"), 3, 3, done),
                "4.20.1"
            ),
            VersionAnnotation::Set("4.20.1".into())
        );
        assert_eq!(
            version_annotation(
                &deployment(Some("4.20.1"), Some("4.20.1"), 3, 3, done),
                "4.20.1"
            ),
            VersionAnnotation::AlreadySet
        );
        // Another operator's Deployment, or one from before the annotation existed.
        assert_eq!(
            version_annotation(&deployment(Some("4.20.0"), None, 3, 3, done), "4.20.1"),
            VersionAnnotation::NotOurs
        );
        assert_eq!(
            version_annotation(&deployment(None, None, 3, 3, done), "4.20.1"),
            VersionAnnotation::NotOurs
        );
        // Not rolled out: the status is of an older generation, or the rollout goes on.
        assert_eq!(
            version_annotation(&deployment(Some("4.20.1"), None, 4, 3, done), "4.20.1"),
            VersionAnnotation::RollingOut
        );
        for progressing in [
            Some(("True", "ReplicaSetUpdated")),
            Some(("False", "ProgressDeadlineExceeded")),
            None,
        ] {
            assert_eq!(
                version_annotation(
                    &deployment(Some("4.20.1"), None, 3, 3, progressing),
                    "4.20.1"
                ),
                VersionAnnotation::RollingOut,
                "{progressing:?}"
            );
        }
    }
}
