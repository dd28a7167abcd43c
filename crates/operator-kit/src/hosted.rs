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
    fn run_as_user_must_be_a_non_negative_integer() {
        assert_eq!(parse_run_as_user("1001"), Ok(1001));
        for bad in ["-1", "root", "", "1.5"] {
            let err = parse_run_as_user(bad).unwrap_err();
            assert!(err.contains("RUN_AS_USER"), "{err}");
        }
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
