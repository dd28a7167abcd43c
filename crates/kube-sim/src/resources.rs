//! The catalogue of resources kube-sim serves: the built-in types and whatever the stored
//! CustomResourceDefinitions add.
//!
//! A `ResourceType` is everything the HTTP layer, discovery and the store need to know about
//! one group/version/resource. This module only describes; it stores no objects.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::crd::Schema;

/// Identifies a stored collection independently of version: objects of all served versions of a
/// CRD live in one collection, as in etcd.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    pub fn new(group: &str, resource: &str) -> Self {
        Self {
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }

    /// `deployments.apps`, `configmaps`: how the server names a resource in messages.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

/// Where a served resource's definition comes from.
#[derive(Debug, Clone)]
pub enum Origin {
    Builtin,
    /// Served because of the named CRD; the schema (if any) prunes, defaults and validates.
    Crd {
        crd_name: String,
        schema: Option<Arc<Schema>>,
        printer_columns: Vec<serde_json::Value>,
    },
}

/// One group/version/resource as discovery presents it.
#[derive(Debug, Clone)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub status_subresource: bool,
    pub scale_subresource: bool,
    /// Whether `metadata.generation` is maintained (built-ins whose strategy sets it, all CRs).
    pub tracks_generation: bool,
    /// The version objects are stored in (for CRDs: the storage version).
    pub storage_version: String,
    pub origin: Origin,
}

impl ResourceType {
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.plural)
    }

    /// `apps/v1` or `v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn is_custom(&self) -> bool {
        matches!(self.origin, Origin::Crd { .. })
    }

    /// `Deployment.apps`, as used in `"Deployment.apps \"x\" is invalid"`.
    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    pub fn verbs(&self) -> Vec<&'static str> {
        if !self.is_custom() && is_review(&self.group, &self.plural) {
            // Reviews are answered, never stored.
            return vec!["create"];
        }
        if self.is(("", "Namespace")) {
            // Namespaces have no DeleteCollection: `DELETE /api/v1/namespaces` is refused.
            return vec![
                "create", "delete", "get", "list", "patch", "update", "watch",
            ];
        }
        vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
    }

    /// Whether this is the built-in `(group, kind)`.
    pub fn is(&self, (group, kind): (&str, &str)) -> bool {
        !self.is_custom() && self.group == group && self.kind == kind
    }

    /// Whether a PUT without a resourceVersion is accepted (the strategy's
    /// AllowUnconditionalUpdate): not for custom resources, Leases, CSIDrivers, CSINodes and CRDs.
    pub fn allows_unconditional_update(&self) -> bool {
        !self.is_custom()
            && ![
                ("coordination.k8s.io", "Lease"),
                ("storage.k8s.io", "CSIDriver"),
                ("storage.k8s.io", "CSINode"),
                ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ]
            .iter()
            .any(|gk| self.is(*gk))
    }

    /// Whether a PUT of a missing object creates it (AllowCreateOnUpdate).
    pub fn allows_create_on_update(&self) -> bool {
        [
            ("coordination.k8s.io", "Lease"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
            ("rbac.authorization.k8s.io", "Role"),
            ("rbac.authorization.k8s.io", "RoleBinding"),
            ("", "Event"),
        ]
        .iter()
        .any(|gk| self.is(*gk))
    }

    /// Whether DELETE answers with the deleted object rather than a Success Status
    /// (the registry's ReturnDeletedObject).
    pub fn returns_deleted_object(&self) -> bool {
        self.is_custom()
            || self.is(("", "Pod"))
            || self.is(("", "Service"))
            || self.is(("", "ServiceAccount"))
    }
}

struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    status: bool,
    scale: bool,
    generation: bool,
    categories: &'static [&'static str],
}

const fn b(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
) -> Builtin {
    Builtin {
        group,
        version,
        kind,
        plural,
        namespaced,
        short,
        status: false,
        scale: false,
        generation: false,
        categories: &[],
    }
}

const fn with_status(mut x: Builtin) -> Builtin {
    x.status = true;
    x
}

const fn with_generation(mut x: Builtin) -> Builtin {
    x.generation = true;
    x
}

const fn with_scale(mut x: Builtin) -> Builtin {
    x.scale = true;
    x
}

const fn all(mut x: Builtin) -> Builtin {
    x.categories = &["all"];
    x
}

/// The built-in types kube-sim serves. Generation tracking follows the real registry
/// strategies: only the types whose PrepareForCreate sets `metadata.generation`.
const BUILTINS: &[Builtin] = &[
    with_status(b("", "v1", "Namespace", "namespaces", false, &["ns"])),
    with_status(b("", "v1", "Node", "nodes", false, &["no"])),
    b("", "v1", "Secret", "secrets", true, &[]),
    b("", "v1", "ConfigMap", "configmaps", true, &["cm"]),
    b("", "v1", "ServiceAccount", "serviceaccounts", true, &["sa"]),
    all(with_status(b(
        "",
        "v1",
        "Service",
        "services",
        true,
        &["svc"],
    ))),
    b("", "v1", "Event", "events", true, &["ev"]),
    all(with_status(b("", "v1", "Pod", "pods", true, &["po"]))),
    with_status(b(
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        false,
        &["pv"],
    )),
    with_status(b(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
        &["pvc"],
    )),
    all(with_scale(with_generation(with_status(b(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        true,
        &["deploy"],
    ))))),
    all(with_generation(with_status(b(
        "apps",
        "v1",
        "DaemonSet",
        "daemonsets",
        true,
        &["ds"],
    )))),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        false,
        &[],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        &[],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        true,
        &[],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        true,
        &[],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "CSIDriver",
        "csidrivers",
        false,
        &[],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        false,
        &["sc"],
    ),
    b("storage.k8s.io", "v1", "CSINode", "csinodes", false, &[]),
    with_status(b(
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        "volumeattachments",
        false,
        &[],
    )),
    with_generation(with_status(b(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
        &["pdb"],
    ))),
    b("coordination.k8s.io", "v1", "Lease", "leases", true, &[]),
    b("events.k8s.io", "v1", "Event", "events", true, &["ev"]),
    with_generation(with_status(b(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        &["crd", "crds"],
    ))),
    with_generation(b(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        true,
        &["netpol"],
    )),
    // Stored and served so that release manifests shipping them apply; their CEL is not
    // evaluated (docs/kube-sim.md).
    with_generation(with_status(b(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        false,
        &[],
    ))),
    with_generation(b(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        false,
        &[],
    )),
    // Create-only and never stored: delegated authentication and authorization (reviews.rs).
    b(
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        "tokenreviews",
        false,
        &[],
    ),
    b(
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        false,
        &[],
    ),
    // The requester's own: `kubectl auth whoami` and `kubectl auth can-i`.
    b(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        false,
        &[],
    ),
    b(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        false,
        &[],
    ),
];

/// All served resources, keyed by `(group, version)` then plural.
#[derive(Debug, Clone, Default)]
pub struct Catalogue {
    by_gv: BTreeMap<(String, String), BTreeMap<String, Arc<ResourceType>>>,
}

impl Catalogue {
    /// The built-in resources only.
    pub fn builtin() -> Self {
        let mut c = Self::default();
        for x in BUILTINS {
            c.insert(ResourceType {
                group: x.group.into(),
                version: x.version.into(),
                kind: x.kind.into(),
                list_kind: format!("{}List", x.kind),
                plural: x.plural.into(),
                singular: x.kind.to_lowercase(),
                namespaced: x.namespaced,
                short_names: x.short.iter().map(|s| s.to_string()).collect(),
                categories: x.categories.iter().map(|s| s.to_string()).collect(),
                status_subresource: x.status,
                scale_subresource: x.scale,
                tracks_generation: x.generation,
                storage_version: x.version.into(),
                origin: Origin::Builtin,
            });
        }
        c
    }

    pub fn insert(&mut self, rt: ResourceType) {
        self.by_gv
            .entry((rt.group.clone(), rt.version.clone()))
            .or_default()
            .insert(rt.plural.clone(), Arc::new(rt));
    }

    /// Removes every version served because of the named CRD.
    pub fn remove_crd(&mut self, crd_name: &str) {
        for resources in self.by_gv.values_mut() {
            resources.retain(
                |_, rt| !matches!(&rt.origin, Origin::Crd { crd_name: n, .. } if n == crd_name),
            );
        }
        self.by_gv.retain(|_, r| !r.is_empty());
    }

    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.by_gv
            .get(&(group.to_string(), version.to_string()))?
            .get(plural)
            .cloned()
    }

    /// The resource type for a stored collection, in its storage version.
    pub fn storage_type(&self, gr: &GroupResource) -> Option<Arc<ResourceType>> {
        self.by_gv
            .iter()
            .filter(|((g, _), _)| *g == gr.group)
            .filter_map(|(_, r)| r.get(&gr.resource))
            .find(|rt| rt.version == rt.storage_version)
            .cloned()
    }

    /// Finds the type by apiVersion and kind, as needed to resolve owner references.
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceType>> {
        let (group, version) = split_api_version(api_version);
        self.by_gv
            .get(&(group.to_string(), version.to_string()))?
            .values()
            .find(|rt| rt.kind == kind)
            .cloned()
    }

    pub fn group_versions(
        &self,
    ) -> impl Iterator<Item = (&(String, String), &BTreeMap<String, Arc<ResourceType>>)> {
        self.by_gv.iter()
    }

    pub fn has_group_version(&self, group: &str, version: &str) -> bool {
        self.by_gv
            .contains_key(&(group.to_string(), version.to_string()))
    }
}

/// `apps/v1` → (`apps`, `v1`); `v1` → (``, `v1`).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// The Scale view of a workload.
pub fn scale_of(obj: &Value) -> Value {
    let meta = obj.get("metadata").cloned().unwrap_or_default();
    let pick = |k: &str| meta.get(k).cloned().unwrap_or(Value::Null);
    let selector = obj
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": pick("name"), "namespace": pick("namespace"), "uid": pick("uid"), "resourceVersion": pick("resourceVersion"), "creationTimestamp": pick("creationTimestamp")},
        "spec": {"replicas": obj.pointer("/spec/replicas").cloned().unwrap_or(json!(1))},
        "status": {"replicas": obj.pointer("/status/replicas").cloned().unwrap_or(json!(0)), "selector": selector},
    })
}

/// The review resources: answered, never stored.
pub fn is_review(group: &str, plural: &str) -> bool {
    matches!(
        (group, plural),
        (
            "authentication.k8s.io",
            "tokenreviews" | "selfsubjectreviews"
        ) | (
            "authorization.k8s.io",
            "subjectaccessreviews" | "selfsubjectaccessreviews"
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_four_reviews_are_handled_here() {
        assert!(is_review("authentication.k8s.io", "tokenreviews"));
        assert!(is_review("authorization.k8s.io", "subjectaccessreviews"));
        assert!(is_review("authentication.k8s.io", "selfsubjectreviews"));
        assert!(is_review(
            "authorization.k8s.io",
            "selfsubjectaccessreviews"
        ));
        assert!(!is_review(
            "authorization.k8s.io",
            "selfsubjectrulesreviews"
        ));
        assert!(!is_review("", "tokenreviews"));
    }

    #[test]
    fn builtins_are_served_with_their_shape() {
        let c = Catalogue::builtin();
        let d = c
            .get("apps", "v1", "deployments")
            .expect("deployments served");
        assert!(d.namespaced && d.status_subresource && d.tracks_generation);
        assert_eq!(d.list_kind, "DeploymentList");
        let cm = c.get("", "v1", "configmaps").expect("configmaps served");
        assert!(
            !cm.tracks_generation,
            "a real server never sets generation on ConfigMaps"
        );
        assert!(!c.get("", "v1", "namespaces").expect("ns").namespaced);
        assert!(c.get("apps", "v1", "replicasets").is_none());
        let pvc = c
            .get("", "v1", "persistentvolumeclaims")
            .expect("pvcs served");
        assert!(pvc.namespaced && pvc.status_subresource && !pvc.tracks_generation);
        assert_eq!(pvc.short_names, vec!["pvc".to_string()]);
        let pv = c.get("", "v1", "persistentvolumes").expect("pvs served");
        assert!(!pv.namespaced && pv.status_subresource);
        let va = c
            .get("storage.k8s.io", "v1", "volumeattachments")
            .expect("volume attachments served");
        assert!(!va.namespaced && va.status_subresource);
        assert_eq!(
            c.by_kind("storage.k8s.io/v1", "CSIDriver")
                .map(|r| r.plural.clone()),
            Some("csidrivers".into())
        );
    }
}
