//! Hosted control planes (HyperShift): what an operator reads about the control plane it
//! serves when it runs in a management cluster and reaches the guest through a kubeconfig.
//!
//! In a hosted cluster the CSO, the driver operators and the drivers' controller Deployments
//! live in the control-plane namespace of the management cluster (anchors §3.8, §4.8, §5.5);
//! the ClusterCSIDriver, CSIDriver, node DaemonSets, StorageClasses and the node side's RBAC
//! live in the guest. This module holds the facts of that placement, read from the
//! `HostedControlPlane` object of the control-plane namespace, and the names OpenShift gives
//! the pieces. It is pure: it parses objects handed to it and reads nothing itself.
//!
//! What it must not do: decide which cluster an object goes to (the kit's client routing does
//! that by namespace), or build objects (the drivers' and the CSO's builders do).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;
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
    /// The hosted environment of this process: `RUN_AS_USER` (checked) and the management
    /// cluster's proxy variables. The control plane is left empty; the kit reads it from the
    /// cache.
    pub fn from_env() -> Result<Self, String> {
        let run_as_user = match std::env::var("RUN_AS_USER") {
            Ok(v) if !v.is_empty() => Some(parse_run_as_user(&v)?),
            _ => None,
        };
        let management_proxy = ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"]
            .into_iter()
            .filter_map(|k| {
                std::env::var(k)
                    .ok()
                    .filter(|v| !v.is_empty())
                    .map(|v| (k.to_string(), v))
            })
            .collect();
        Ok(Self {
            control_plane: HostedControlPlane::default(),
            run_as_user,
            management_proxy,
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

/// The one `HostedControlPlane` of `namespace` from the cache, read; a message saying what
/// to fix when there is none, several, or it is malformed.
pub fn read_control_plane(
    cache: &crate::cache::Cache,
    namespace: &str,
) -> Result<HostedControlPlane, String> {
    let planes = cache.list(&hosted_control_plane_resource(), namespace);
    match planes.as_slice() {
        [one] => HostedControlPlane::from_object(one).map_err(|e| e.to_string()),
        [] => Err(format!(
            "no HostedControlPlane in the control-plane namespace {namespace} of the management \
             cluster; the operator places the driver's controller by it (HyperShift creates it \
             with the hosted cluster)"
        )),
        many => Err(format!(
            "{} HostedControlPlanes in the control-plane namespace {namespace}; a control-plane \
             namespace holds exactly one",
            many.len()
        )),
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
    let annotations = deployment.metadata.annotations.as_ref()?;
    let desired = annotations.get(DESIRED_VERSION_ANNOTATION)?;
    if desired != operator_version || annotations.get(VERSION_ANNOTATION) == Some(desired) {
        return None;
    }
    let status = deployment.status.as_ref()?;
    if status.observed_generation != deployment.metadata.generation {
        return None;
    }
    let finished = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Progressing")
        .is_some_and(|c| {
            c.status == "True" && c.reason.as_deref() == Some("NewReplicaSetAvailable")
        });
    finished.then(|| desired.clone())
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
) -> Result<bool, String> {
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
        .map_err(|e| {
            format!("cannot record version {version} on Deployment {namespace}/{name}: {e}")
        })
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

#[cfg(test)]
mod tests {
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

    fn deployment(
        desired: Option<&str>,
        recorded: Option<&str>,
        done: bool,
    ) -> k8s_openapi::api::apps::v1::Deployment {
        let mut annotations = serde_json::Map::new();
        if let Some(d) = desired {
            annotations.insert(DESIRED_VERSION_ANNOTATION.into(), d.into());
        }
        if let Some(r) = recorded {
            annotations.insert(VERSION_ANNOTATION.into(), r.into());
        }
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "c", "generation": 3, "annotations": annotations},
            "status": {"observedGeneration": if done { 3 } else { 2 }, "conditions": [
                {"type": "Progressing", "status": "True",
                 "reason": if done { "NewReplicaSetAvailable" } else { "ReplicaSetUpdated" }}]},
        }))
        .expect("deployment")
    }

    #[test]
    fn the_version_is_recorded_once_the_rollout_for_it_finished() {
        assert_eq!(
            version_to_record(&deployment(Some("4.20.1"), None, true), "4.20.1"),
            Some("4.20.1".into())
        );
        assert_eq!(
            version_to_record(&deployment(Some("4.20.1"), Some("4.20.0"), true), "4.20.1"),
            Some("4.20.1".into()),
            "an upgrade records the new version"
        );
        for (d, why) in [
            (deployment(Some("4.20.1"), None, false), "still rolling out"),
            (
                deployment(Some("4.20.1"), Some("4.20.1"), true),
                "already recorded",
            ),
            (
                deployment(Some("4.20.0"), None, true),
                "meant for another version",
            ),
            (deployment(None, None, true), "no desired version"),
        ] {
            assert_eq!(version_to_record(&d, "4.20.1"), None, "{why}");
        }
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
}
