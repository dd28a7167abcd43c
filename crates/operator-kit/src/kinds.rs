//! The kinds operators manage, by apiVersion and kind, with the resource names the API
//! serves them under; and the conversion of typed or parsed objects into the dynamic form the
//! apply engine and caches work with.
//!
//! Knowing the plural statically means an operator needs no discovery round-trip to start,
//! and an asset of a kind not listed here is a programming error reported at build time.

use kube::api::DynamicObject;
use kube::core::{ApiResource, GroupVersionKind};
use serde::Serialize;

/// (apiVersion, kind, plural, namespaced)
const KINDS: &[(&str, &str, &str, bool)] = &[
    ("v1", "Namespace", "namespaces", false),
    ("v1", "ConfigMap", "configmaps", true),
    ("v1", "Secret", "secrets", true),
    ("v1", "ServiceAccount", "serviceaccounts", true),
    ("v1", "Service", "services", true),
    ("apps/v1", "Deployment", "deployments", true),
    ("apps/v1", "DaemonSet", "daemonsets", true),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "clusterroles",
        false,
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
    ),
    ("rbac.authorization.k8s.io/v1", "Role", "roles", true),
    (
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "rolebindings",
        true,
    ),
    ("storage.k8s.io/v1", "CSIDriver", "csidrivers", false),
    ("storage.k8s.io/v1", "StorageClass", "storageclasses", false),
    (
        "policy/v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
    ),
    (
        "networking.k8s.io/v1",
        "NetworkPolicy",
        "networkpolicies",
        true,
    ),
    (
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    ),
    (
        "monitoring.coreos.com/v1",
        "ServiceMonitor",
        "servicemonitors",
        true,
    ),
    (
        "snapshot.storage.k8s.io/v1",
        "VolumeSnapshotClass",
        "volumesnapshotclasses",
        false,
    ),
    ("cert-manager.io/v1", "Certificate", "certificates", true),
    ("cert-manager.io/v1", "Issuer", "issuers", true),
    (
        "operator.openshift.io/v1",
        "ClusterCSIDriver",
        "clustercsidrivers",
        false,
    ),
    ("operator.openshift.io/v1", "Storage", "storages", false),
    (
        "config.openshift.io/v1",
        "ClusterOperator",
        "clusteroperators",
        false,
    ),
    (
        "config.openshift.io/v1",
        "Infrastructure",
        "infrastructures",
        false,
    ),
    ("config.openshift.io/v1", "Proxy", "proxies", false),
    ("config.openshift.io/v1", "APIServer", "apiservers", false),
    (
        "cloudcredential.openshift.io/v1",
        "CredentialsRequest",
        "credentialsrequests",
        true,
    ),
];

/// Why an object cannot be handled.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KindError {
    #[error(
        "{kind} ({api_version}) is not a kind operator-kit manages; add it to operator-kit's kinds table"
    )]
    Unknown { api_version: String, kind: String },
    #[error("the object could not be converted: {0}")]
    Convert(String),
}

/// The ApiResource of a known kind.
pub fn api_resource(api_version: &str, kind: &str) -> Result<ApiResource, KindError> {
    let (_, _, plural, _) = KINDS
        .iter()
        .find(|(v, k, _, _)| *v == api_version && *k == kind)
        .ok_or_else(|| KindError::Unknown {
            api_version: api_version.into(),
            kind: kind.into(),
        })?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    Ok(ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, kind),
        plural,
    ))
}

/// The ApiResource of a kind the caller names literally (and so knows to be in the table; each
/// operator's tests exercise every kind it uses). A miss is a programming error: it is logged and
/// answered with the resource a Kubernetes naming guess gives (`<kind>s`), never a panic.
pub fn known(api_version: &str, kind: &str) -> ApiResource {
    api_resource(api_version, kind).unwrap_or_else(|e| {
        tracing::error!(error = %e, "kind missing from operator-kit's table");
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group, version, kind),
            &format!("{}s", kind.to_lowercase()),
        )
    })
}

/// Whether a known kind is namespaced.
pub fn is_namespaced(api_version: &str, kind: &str) -> bool {
    KINDS
        .iter()
        .any(|(v, k, _, ns)| *v == api_version && *k == kind && *ns)
}

/// A typed or parsed object as a DynamicObject plus its ApiResource.
pub fn dynamic<T: Serialize>(obj: &T) -> Result<(ApiResource, DynamicObject), KindError> {
    let value = serde_json::to_value(obj).map_err(|e| KindError::Convert(e.to_string()))?;
    from_value(value)
}

/// A JSON object (with apiVersion and kind) as a DynamicObject plus its ApiResource.
pub fn from_value(value: serde_json::Value) -> Result<(ApiResource, DynamicObject), KindError> {
    let api_version = value
        .get("apiVersion")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string();
    let kind = value
        .get("kind")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string();
    let ar = api_resource(&api_version, &kind)?;
    let obj: DynamicObject =
        serde_json::from_value(value).map_err(|e| KindError::Convert(e.to_string()))?;
    Ok((ar, obj))
}

/// A 404 that means "no such resource" rather than "no such object": the status names no
/// object. (A create in a missing namespace names the namespace, so it is not this.)
pub fn is_kind_not_served(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(s) if s.code == 404 => {
            s.details.as_ref().is_none_or(|d| d.name.is_empty())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_kinds_resolve_and_unknown_ones_say_what_to_do() {
        let ar = api_resource("apps/v1", "Deployment").expect("known");
        assert_eq!(
            (ar.group.as_str(), ar.plural.as_str()),
            ("apps", "deployments")
        );
        let core = api_resource("v1", "ConfigMap").expect("known");
        assert_eq!((core.group.as_str(), core.version.as_str()), ("", "v1"));
        let err = api_resource("apps/v1", "StatefulSet").expect_err("unknown");
        assert!(
            err.to_string()
                .contains("add it to operator-kit's kinds table")
        );
        assert!(is_namespaced("v1", "Secret") && !is_namespaced("storage.k8s.io/v1", "CSIDriver"));
    }

    #[test]
    fn objects_convert_to_dynamic_form() {
        let (ar, obj) = from_value(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}, "data": {"k": "v"}}))
            .expect("converts");
        assert_eq!(ar.kind, "ConfigMap");
        assert_eq!(obj.metadata.name.as_deref(), Some("a"));
        assert_eq!(obj.data["data"]["k"], "v");
        assert!(
            from_value(json!({"kind": "ConfigMap"})).is_err(),
            "no apiVersion"
        );
    }

    #[test]
    fn known_kinds_come_from_the_table_and_a_miss_keeps_its_group_and_kind() {
        let sc = known("storage.k8s.io/v1", "StorageClass");
        assert_eq!(sc.plural, "storageclasses");
        let miss = known("example.com/v1", "Widget");
        assert_eq!(
            (miss.group.as_str(), miss.kind.as_str()),
            ("example.com", "Widget")
        );
        assert_eq!(miss.plural, "widgets");
    }
}
