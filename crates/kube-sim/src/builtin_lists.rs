//! The list merge strategies of the built-in kinds kube-sim serves.
//!
//! Strategic merge patch and server-side apply both need to know, for each list in an object,
//! whether it is replaced whole, merged as a set of scalars, or merged as a map keyed by some
//! fields. For built-in types the real API server reads this from the Go types: the
//! `patchStrategy`/`patchMergeKey` struct tags drive strategic merge patch, and the
//! `+listType`/`+listMapKey` markers (falling back to the patch tags, as kube-openapi's
//! `schemaconv` does) drive server-side apply. The two can differ: a container's `ports` merge
//! by `containerPort` in a strategic merge patch but by `containerPort`+`protocol` in apply.
//!
//! The tables below were derived mechanically from k8s.io/api, k8s.io/apimachinery and
//! k8s.io/apiextensions-apiserver v0.33.9 (walking each kind's Go structs from the root,
//! reading tags and markers) and keep only the fields that are, or lead to, a list that is not
//! atomic, plus the one struct strategic merge replaces whole (PodDisruptionBudget's
//! `spec.selector`); every list not named here is atomic. This module only answers questions
//! about paths: it must not look at or change objects, and it knows nothing of custom resources
//! (their list types come from the CRD schema, elsewhere).

use crate::list_types::{ListKind, ListTypes};

/// How one list merges, as written in the Go types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    Atomic,
    Set,
    Map(&'static [&'static str]),
}

impl Strategy {
    fn to_list_kind(self) -> ListKind {
        match self {
            Strategy::Atomic => ListKind::Atomic,
            Strategy::Set => ListKind::Set,
            Strategy::Map(keys) => ListKind::Map(keys.iter().map(|k| (*k).to_string()).collect()),
        }
    }
}

/// What a field holds.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// A struct: the next path segment names one of its fields.
    Object,
    /// A struct with `patchStrategy=replace`: a strategic merge patch replaces it whole
    /// instead of merging into it (PodDisruptionBudget's `spec.selector`).
    ReplacedObject,
    /// A map with arbitrary keys: the next path segment is a key, the one after a field of the
    /// value struct.
    Map,
    /// A list: list indices are omitted from paths, so the next segment names a field of the
    /// item struct.
    List { smp: Strategy, ssa: Strategy },
}

/// One field on the way to a non-atomic list.
#[derive(Debug)]
struct Field {
    name: &'static str,
    shape: Shape,
    /// The fields of the value (struct, map value or list item) that matter, if any.
    sub: &'static [Field],
}

impl Field {
    const fn object(name: &'static str, sub: &'static [Field]) -> Field {
        Field {
            name,
            shape: Shape::Object,
            sub,
        }
    }

    const fn replaced_object(name: &'static str, sub: &'static [Field]) -> Field {
        Field {
            name,
            shape: Shape::ReplacedObject,
            sub,
        }
    }

    const fn map(name: &'static str, sub: &'static [Field]) -> Field {
        Field {
            name,
            shape: Shape::Map,
            sub,
        }
    }

    const fn list(
        name: &'static str,
        smp: Strategy,
        ssa: Strategy,
        sub: &'static [Field],
    ) -> Field {
        Field {
            name,
            shape: Shape::List { smp, ssa },
            sub,
        }
    }
}

/// The list merge strategies of one built-in kind.
///
/// Unknown kinds (custom resources included) get an empty table: every list atomic.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinLists {
    root: &'static [Field],
}

impl BuiltinLists {
    /// The table for `kind` in API group `group` (`""` for the core group). The version does
    /// not matter: every kind kube-sim serves has one version.
    pub fn for_kind(group: &str, kind: &str) -> BuiltinLists {
        let root = ROOTS
            .iter()
            .find(|(g, k, _)| *g == group && *k == kind)
            .map_or(&[][..], |(_, _, fields)| *fields);
        BuiltinLists { root }
    }

    /// The strategic-merge-patch behaviour of the list at `path` (field names from the object
    /// root, list indices omitted): `Set` for `patchStrategy=merge` over scalars, `Map([key])`
    /// for `patchStrategy=merge` with `patchMergeKey=key`, `Atomic` otherwise.
    pub fn smp_strategy(&self, path: &[&str]) -> ListKind {
        match self.lookup(path) {
            Some(Shape::List { smp, .. }) => smp.to_list_kind(),
            _ => ListKind::Atomic,
        }
    }

    /// Whether a strategic merge patch replaces the object at `path` whole
    /// (`patchStrategy=replace` on a struct field) instead of merging into it.
    pub fn smp_replaces_object(&self, path: &[&str]) -> bool {
        matches!(self.lookup(path), Some(Shape::ReplacedObject))
    }

    /// Walks `path` through the tables; `None` when it leaves them (an atomic list, or a field
    /// that leads to none).
    fn lookup(&self, path: &[&str]) -> Option<Shape> {
        let mut fields = self.root;
        let mut rest = path;
        loop {
            let (name, tail) = rest.split_first()?;
            let field = fields.iter().find(|f| f.name == *name)?;
            if tail.is_empty() {
                return Some(field.shape);
            }
            rest = match field.shape {
                Shape::Object | Shape::ReplacedObject | Shape::List { .. } => tail,
                // The segment after a map field is a key of that map; the value's fields follow.
                Shape::Map => tail.get(1..).filter(|r| !r.is_empty())?,
            };
            fields = field.sub;
        }
    }
}

impl ListTypes for BuiltinLists {
    /// The server-side-apply list type at `path`, as the OpenAPI `x-kubernetes-list-type`
    /// (or, without it, `x-kubernetes-patch-strategy`) of the real type declares it.
    fn list_kind(&self, path: &[&str]) -> ListKind {
        match self.lookup(path) {
            Some(Shape::List { ssa, .. }) => ssa.to_list_kind(),
            _ => ListKind::Atomic,
        }
    }
}

// The tables. Each static lists the fields of one Go struct that are non-atomic lists or lead to
// one; statics (not consts) so that JSONSchemaProps can refer to itself.

/// A kind whose only lists are its metadata's (Secret, ConfigMap, the RBAC kinds, ...).
static METADATA_ONLY: [Field; 1] = [Field::object("metadata", &META_OBJECT_META)];

/// A status whose only list is `conditions`, keyed by `type` (Deployment, DaemonSet, ...).
static CONDITIONS_BY_TYPE: [Field; 1] = [Field::list(
    "conditions",
    Strategy::Map(&["type"]),
    Strategy::Map(&["type"]),
    &[],
)];

/// `Namespace` (core).
static CORE_NAMESPACE: [Field; 2] = [
    Field::object("metadata", &META_OBJECT_META),
    Field::object("status", &CONDITIONS_BY_TYPE),
];

/// `ObjectMeta` (meta).
static META_OBJECT_META: [Field; 2] = [
    Field::list(
        "ownerReferences",
        Strategy::Map(&["uid"]),
        Strategy::Map(&["uid"]),
        &[],
    ),
    Field::list("finalizers", Strategy::Set, Strategy::Set, &[]),
];

/// `Node` (core).
static CORE_NODE: [Field; 3] = [
    Field::object("metadata", &META_OBJECT_META),
    Field::object("spec", &CORE_NODE_SPEC),
    Field::object("status", &CORE_NODE_STATUS),
];

/// `NodeSpec` (core).
static CORE_NODE_SPEC: [Field; 1] = [Field::list("podCIDRs", Strategy::Set, Strategy::Set, &[])];

/// `NodeStatus` (core).
static CORE_NODE_STATUS: [Field; 2] = [
    Field::list(
        "conditions",
        Strategy::Map(&["type"]),
        Strategy::Map(&["type"]),
        &[],
    ),
    Field::list(
        "addresses",
        Strategy::Map(&["type"]),
        Strategy::Map(&["type"]),
        &[],
    ),
];

/// `ServiceAccount` (core).
static CORE_SERVICE_ACCOUNT: [Field; 2] = [
    Field::object("metadata", &META_OBJECT_META),
    Field::list(
        "secrets",
        Strategy::Map(&["name"]),
        Strategy::Map(&["name"]),
        &[],
    ),
];

/// `Service` (core).
static CORE_SERVICE: [Field; 3] = [
    Field::object("metadata", &META_OBJECT_META),
    Field::object("spec", &CORE_SERVICE_SPEC),
    Field::object("status", &CONDITIONS_BY_TYPE),
];

/// `ServiceSpec` (core).
static CORE_SERVICE_SPEC: [Field; 1] = [Field::list(
    "ports",
    Strategy::Map(&["port"]),
    Strategy::Map(&["port", "protocol"]),
    &[],
)];

/// `Pod` (core).
static CORE_POD: [Field; 3] = [
    Field::object("metadata", &META_OBJECT_META),
    Field::object("spec", &CORE_POD_SPEC),
    Field::object("status", &CORE_POD_STATUS),
];

/// `PodSpec` (core).
static CORE_POD_SPEC: [Field; 10] = [
    Field::list(
        "volumes",
        Strategy::Map(&["name"]),
        Strategy::Map(&["name"]),
        &CORE_VOLUME,
    ),
    Field::list(
        "initContainers",
        Strategy::Map(&["name"]),
        Strategy::Map(&["name"]),
        &CORE_CONTAINER,
    ),
    Field::list(
        "containers",
        Strategy::Map(&["name"]),
        Strategy::Map(&["name"]),
        &CORE_CONTAINER,
    ),
    Field::list(
        "ephemeralContainers",
        Strategy::Map(&["name"]),
        Strategy::Map(&["name"]),
        &CORE_EPHEMERAL_CONTAINER,
    ),
    Field::list(
        "imagePullSecrets",
        Strategy::Map(&["name"]),
        Strategy::Map(&["name"]),
        &[],
    ),
    Field::list(
        "hostAliases",
        Strategy::Map(&["ip"]),
        Strategy::Map(&["ip"]),
        &[],
    ),
    Field::list(
        "topologySpreadConstraints",
        Strategy::Map(&["topologyKey"]),
        Strategy::Map(&["topologyKey", "whenUnsatisfiable"]),
        &[],
    ),
    Field::list(
        "schedulingGates",
        Strategy::Map(&["name"]),
        Strategy::Map(&["name"]),
        &[],
    ),
    Field::list(
        "resourceClaims",
        Strategy::Map(&["name"]),
        Strategy::Map(&["name"]),
        &[],
    ),
    Field::object("resources", &CORE_RESOURCE_REQUIREMENTS),
];

/// `Volume` (core).
static CORE_VOLUME: [Field; 1] = [Field::object("ephemeral", &CORE_EPHEMERAL_VOLUME_SOURCE)];

/// `EphemeralVolumeSource` (core).
static CORE_EPHEMERAL_VOLUME_SOURCE: [Field; 1] =
    [Field::object("volumeClaimTemplate", &METADATA_ONLY)];

/// `Container` (core).
static CORE_CONTAINER: [Field; 5] = [
    Field::list(
        "ports",
        Strategy::Map(&["containerPort"]),
        Strategy::Map(&["containerPort", "protocol"]),
        &[],
    ),
    Field::list(
        "env",
        Strategy::Map(&["name"]),
        Strategy::Map(&["name"]),
        &[],
    ),
    Field::object("resources", &CORE_RESOURCE_REQUIREMENTS),
    Field::list(
        "volumeMounts",
        Strategy::Map(&["mountPath"]),
        Strategy::Map(&["mountPath"]),
        &[],
    ),
    Field::list(
        "volumeDevices",
        Strategy::Map(&["devicePath"]),
        Strategy::Map(&["devicePath"]),
        &[],
    ),
];

/// `ResourceRequirements` (core).
static CORE_RESOURCE_REQUIREMENTS: [Field; 1] = [Field::list(
    "claims",
    Strategy::Atomic,
    Strategy::Map(&["name"]),
    &[],
)];

/// `EphemeralContainer` (core).
static CORE_EPHEMERAL_CONTAINER: [Field; 5] = [
    Field::list(
        "ports",
        Strategy::Map(&["containerPort"]),
        Strategy::Map(&["containerPort", "protocol"]),
        &[],
    ),
    Field::list(
        "env",
        Strategy::Map(&["name"]),
        Strategy::Map(&["name"]),
        &[],
    ),
    Field::object("resources", &CORE_RESOURCE_REQUIREMENTS),
    Field::list(
        "volumeMounts",
        Strategy::Map(&["mountPath"]),
        Strategy::Map(&["mountPath"]),
        &[],
    ),
    Field::list(
        "volumeDevices",
        Strategy::Map(&["devicePath"]),
        Strategy::Map(&["devicePath"]),
        &[],
    ),
];

/// `PodStatus` (core).
static CORE_POD_STATUS: [Field; 7] = [
    Field::list(
        "conditions",
        Strategy::Map(&["type"]),
        Strategy::Map(&["type"]),
        &[],
    ),
    Field::list("hostIPs", Strategy::Map(&["ip"]), Strategy::Atomic, &[]),
    Field::list(
        "podIPs",
        Strategy::Map(&["ip"]),
        Strategy::Map(&["ip"]),
        &[],
    ),
    Field::list(
        "initContainerStatuses",
        Strategy::Atomic,
        Strategy::Atomic,
        &CORE_CONTAINER_STATUS,
    ),
    Field::list(
        "containerStatuses",
        Strategy::Atomic,
        Strategy::Atomic,
        &CORE_CONTAINER_STATUS,
    ),
    Field::list(
        "ephemeralContainerStatuses",
        Strategy::Atomic,
        Strategy::Atomic,
        &CORE_CONTAINER_STATUS,
    ),
    Field::list(
        "resourceClaimStatuses",
        Strategy::Map(&["name"]),
        Strategy::Map(&["name"]),
        &[],
    ),
];

/// `ContainerStatus` (core).
static CORE_CONTAINER_STATUS: [Field; 3] = [
    Field::object("resources", &CORE_RESOURCE_REQUIREMENTS),
    Field::list(
        "volumeMounts",
        Strategy::Map(&["mountPath"]),
        Strategy::Map(&["mountPath"]),
        &[],
    ),
    Field::list(
        "allocatedResourcesStatus",
        Strategy::Map(&["name"]),
        Strategy::Map(&["name"]),
        &CORE_RESOURCE_STATUS,
    ),
];

/// `ResourceStatus` (core).
static CORE_RESOURCE_STATUS: [Field; 1] = [Field::list(
    "resources",
    Strategy::Atomic,
    Strategy::Map(&["resourceID"]),
    &[],
)];

/// `Deployment` (apps).
static APPS_DEPLOYMENT: [Field; 3] = [
    Field::object("metadata", &META_OBJECT_META),
    Field::object("spec", &APPS_DEPLOYMENT_SPEC),
    Field::object("status", &CONDITIONS_BY_TYPE),
];

/// `DeploymentSpec` (apps).
static APPS_DEPLOYMENT_SPEC: [Field; 1] = [Field::object("template", &CORE_POD_TEMPLATE_SPEC)];

/// `PodTemplateSpec` (core).
static CORE_POD_TEMPLATE_SPEC: [Field; 2] = [
    Field::object("metadata", &META_OBJECT_META),
    Field::object("spec", &CORE_POD_SPEC),
];

/// `DaemonSet` (apps).
static APPS_DAEMON_SET: [Field; 3] = [
    Field::object("metadata", &META_OBJECT_META),
    Field::object("spec", &APPS_DAEMON_SET_SPEC),
    Field::object("status", &CONDITIONS_BY_TYPE),
];

/// `DaemonSetSpec` (apps).
static APPS_DAEMON_SET_SPEC: [Field; 1] = [Field::object("template", &CORE_POD_TEMPLATE_SPEC)];

/// `CSIDriver` (storage).
static STORAGE_CSI_DRIVER: [Field; 2] = [
    Field::object("metadata", &META_OBJECT_META),
    Field::object("spec", &STORAGE_CSI_DRIVER_SPEC),
];

/// `CSIDriverSpec` (storage).
static STORAGE_CSI_DRIVER_SPEC: [Field; 1] = [Field::list(
    "volumeLifecycleModes",
    Strategy::Atomic,
    Strategy::Set,
    &[],
)];

/// `PersistentVolumeClaim` (core).
static CORE_PERSISTENT_VOLUME_CLAIM: [Field; 2] = [
    Field::object("metadata", &META_OBJECT_META),
    Field::object("status", &CONDITIONS_BY_TYPE),
];

/// `CSINode` (storage).
static STORAGE_CSI_NODE: [Field; 2] = [
    Field::object("metadata", &META_OBJECT_META),
    Field::object("spec", &STORAGE_CSI_NODE_SPEC),
];

/// `CSINodeSpec` (storage).
static STORAGE_CSI_NODE_SPEC: [Field; 1] = [Field::list(
    "drivers",
    Strategy::Map(&["name"]),
    Strategy::Map(&["name"]),
    &[],
)];

/// `PodDisruptionBudget` (policy).
static POLICY_POD_DISRUPTION_BUDGET: [Field; 3] = [
    Field::object("metadata", &META_OBJECT_META),
    Field::object("spec", &POLICY_POD_DISRUPTION_BUDGET_SPEC),
    Field::object("status", &CONDITIONS_BY_TYPE),
];

/// `PodDisruptionBudgetSpec` (policy).
static POLICY_POD_DISRUPTION_BUDGET_SPEC: [Field; 1] = [Field::replaced_object("selector", &[])];

/// `CustomResourceDefinition` (apiext).
static APIEXT_CUSTOM_RESOURCE_DEFINITION: [Field; 3] = [
    Field::object("metadata", &META_OBJECT_META),
    Field::object("spec", &APIEXT_CUSTOM_RESOURCE_DEFINITION_SPEC),
    Field::object("status", &APIEXT_CUSTOM_RESOURCE_DEFINITION_STATUS),
];

/// `CustomResourceDefinitionSpec` (apiext).
static APIEXT_CUSTOM_RESOURCE_DEFINITION_SPEC: [Field; 1] = [Field::list(
    "versions",
    Strategy::Atomic,
    Strategy::Atomic,
    &APIEXT_CUSTOM_RESOURCE_DEFINITION_VERSION,
)];

/// `CustomResourceDefinitionVersion` (apiext).
static APIEXT_CUSTOM_RESOURCE_DEFINITION_VERSION: [Field; 1] =
    [Field::object("schema", &APIEXT_CUSTOM_RESOURCE_VALIDATION)];

/// `CustomResourceValidation` (apiext).
static APIEXT_CUSTOM_RESOURCE_VALIDATION: [Field; 1] =
    [Field::object("openAPIV3Schema", &APIEXT_JSON_SCHEMA_PROPS)];

/// `JSONSchemaProps` (apiext).
static APIEXT_JSON_SCHEMA_PROPS: [Field; 8] = [
    Field::list(
        "allOf",
        Strategy::Atomic,
        Strategy::Atomic,
        &APIEXT_JSON_SCHEMA_PROPS,
    ),
    Field::list(
        "oneOf",
        Strategy::Atomic,
        Strategy::Atomic,
        &APIEXT_JSON_SCHEMA_PROPS,
    ),
    Field::list(
        "anyOf",
        Strategy::Atomic,
        Strategy::Atomic,
        &APIEXT_JSON_SCHEMA_PROPS,
    ),
    Field::object("not", &APIEXT_JSON_SCHEMA_PROPS),
    Field::map("properties", &APIEXT_JSON_SCHEMA_PROPS),
    Field::map("patternProperties", &APIEXT_JSON_SCHEMA_PROPS),
    Field::map("definitions", &APIEXT_JSON_SCHEMA_PROPS),
    Field::list(
        "x-kubernetes-validations",
        Strategy::Map(&["rule"]),
        Strategy::Map(&["rule"]),
        &[],
    ),
];

/// `CustomResourceDefinitionStatus` (apiext).
static APIEXT_CUSTOM_RESOURCE_DEFINITION_STATUS: [Field; 1] = [Field::list(
    "conditions",
    Strategy::Atomic,
    Strategy::Map(&["type"]),
    &[],
)];

/// The root field table of each kind.
static ROOTS: [(&str, &str, &[Field]); 25] = [
    ("", "Namespace", &CORE_NAMESPACE),
    ("", "Node", &CORE_NODE),
    ("", "Secret", &METADATA_ONLY),
    ("", "ConfigMap", &METADATA_ONLY),
    ("", "ServiceAccount", &CORE_SERVICE_ACCOUNT),
    ("", "Service", &CORE_SERVICE),
    ("", "Event", &METADATA_ONLY),
    ("", "Pod", &CORE_POD),
    ("", "PersistentVolume", &METADATA_ONLY),
    ("", "PersistentVolumeClaim", &CORE_PERSISTENT_VOLUME_CLAIM),
    ("events.k8s.io", "Event", &METADATA_ONLY),
    ("apps", "Deployment", &APPS_DEPLOYMENT),
    ("apps", "DaemonSet", &APPS_DAEMON_SET),
    ("rbac.authorization.k8s.io", "ClusterRole", &METADATA_ONLY),
    (
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        &METADATA_ONLY,
    ),
    ("rbac.authorization.k8s.io", "Role", &METADATA_ONLY),
    ("rbac.authorization.k8s.io", "RoleBinding", &METADATA_ONLY),
    ("storage.k8s.io", "CSIDriver", &STORAGE_CSI_DRIVER),
    ("storage.k8s.io", "StorageClass", &METADATA_ONLY),
    ("storage.k8s.io", "CSINode", &STORAGE_CSI_NODE),
    ("storage.k8s.io", "VolumeAttachment", &METADATA_ONLY),
    (
        "policy",
        "PodDisruptionBudget",
        &POLICY_POD_DISRUPTION_BUDGET,
    ),
    ("coordination.k8s.io", "Lease", &METADATA_ONLY),
    (
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        &APIEXT_CUSTOM_RESOURCE_DEFINITION,
    ),
    ("networking.k8s.io", "NetworkPolicy", &METADATA_ONLY),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn map(keys: &[&str]) -> ListKind {
        ListKind::Map(keys.iter().map(|k| (*k).to_string()).collect())
    }

    fn both(lists: &BuiltinLists, path: &[&str]) -> (ListKind, ListKind) {
        (lists.smp_strategy(path), lists.list_kind(path))
    }

    /// A path under a Deployment's pod template spec.
    fn deployment_path<'a>(rest: &[&'a str]) -> Vec<&'a str> {
        let mut path = vec!["spec", "template", "spec"];
        path.extend_from_slice(rest);
        path
    }

    #[test]
    fn object_metadata_lists() {
        for (group, kind) in [
            ("", "Namespace"),
            ("", "Secret"),
            ("apps", "Deployment"),
            ("storage.k8s.io", "CSIDriver"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("coordination.k8s.io", "Lease"),
        ] {
            let l = BuiltinLists::for_kind(group, kind);
            assert_eq!(
                both(&l, &["metadata", "ownerReferences"]),
                (map(&["uid"]), map(&["uid"])),
                "{kind}"
            );
            assert_eq!(
                both(&l, &["metadata", "finalizers"]),
                (ListKind::Set, ListKind::Set),
                "{kind}"
            );
            assert_eq!(
                both(&l, &["metadata", "managedFields"]),
                (ListKind::Atomic, ListKind::Atomic),
                "{kind}"
            );
        }
    }

    #[test]
    fn pod_spec_lists_in_deployment_daemonset_and_pod() {
        for (group, kind, prefix) in [
            ("apps", "Deployment", &["spec", "template", "spec"][..]),
            ("apps", "DaemonSet", &["spec", "template", "spec"][..]),
            ("", "Pod", &["spec"][..]),
        ] {
            let l = BuiltinLists::for_kind(group, kind);
            let p = |rest: &[&'static str]| -> Vec<&'static str> {
                prefix.iter().copied().chain(rest.iter().copied()).collect()
            };
            for c in ["containers", "initContainers", "ephemeralContainers"] {
                assert_eq!(
                    both(&l, &p(&[c])),
                    (map(&["name"]), map(&["name"])),
                    "{kind} {c}"
                );
                assert_eq!(
                    both(&l, &p(&[c, "ports"])),
                    (map(&["containerPort"]), map(&["containerPort", "protocol"])),
                    "{kind} {c}"
                );
                assert_eq!(both(&l, &p(&[c, "env"])), (map(&["name"]), map(&["name"])));
                assert_eq!(
                    both(&l, &p(&[c, "volumeMounts"])),
                    (map(&["mountPath"]), map(&["mountPath"]))
                );
                assert_eq!(
                    both(&l, &p(&[c, "volumeDevices"])),
                    (map(&["devicePath"]), map(&["devicePath"]))
                );
                assert_eq!(
                    both(&l, &p(&[c, "args"])),
                    (ListKind::Atomic, ListKind::Atomic)
                );
                assert_eq!(
                    both(&l, &p(&[c, "envFrom"])),
                    (ListKind::Atomic, ListKind::Atomic)
                );
            }
            assert_eq!(both(&l, &p(&["volumes"])), (map(&["name"]), map(&["name"])));
            assert_eq!(
                both(&l, &p(&["imagePullSecrets"])),
                (map(&["name"]), map(&["name"]))
            );
            assert_eq!(both(&l, &p(&["hostAliases"])), (map(&["ip"]), map(&["ip"])));
            assert_eq!(
                both(&l, &p(&["topologySpreadConstraints"])),
                (
                    map(&["topologyKey"]),
                    map(&["topologyKey", "whenUnsatisfiable"])
                )
            );
            assert_eq!(
                both(&l, &p(&["resourceClaims"])),
                (map(&["name"]), map(&["name"]))
            );
            assert_eq!(
                both(&l, &p(&["schedulingGates"])),
                (map(&["name"]), map(&["name"]))
            );
            // Atomic in the real types (+listType=atomic, no patch strategy).
            for atomic in ["tolerations", "readinessGates"] {
                assert_eq!(
                    both(&l, &p(&[atomic])),
                    (ListKind::Atomic, ListKind::Atomic)
                );
            }
            // Resource claims of a container: SSA map by name, no SMP tag.
            assert_eq!(
                both(&l, &p(&["containers", "resources", "claims"])),
                (ListKind::Atomic, map(&["name"]))
            );
        }
        let d = BuiltinLists::for_kind("apps", "Deployment");
        assert_eq!(
            d.smp_strategy(&deployment_path(&["containers", "env"])),
            map(&["name"])
        );
        // The template's own metadata is an ObjectMeta too.
        assert_eq!(
            d.smp_strategy(&["spec", "template", "metadata", "finalizers"]),
            ListKind::Set
        );
    }

    #[test]
    fn statuses_conditions_by_type() {
        for (group, kind) in [
            ("apps", "Deployment"),
            ("apps", "DaemonSet"),
            ("", "Pod"),
            ("", "Node"),
            ("", "Namespace"),
            ("policy", "PodDisruptionBudget"),
        ] {
            let l = BuiltinLists::for_kind(group, kind);
            assert_eq!(
                both(&l, &["status", "conditions"]),
                (map(&["type"]), map(&["type"])),
                "{kind}"
            );
        }
        // The CRD status has no patch tags: atomic for SMP, a map for apply.
        let crd = BuiltinLists::for_kind("apiextensions.k8s.io", "CustomResourceDefinition");
        assert_eq!(
            both(&crd, &["status", "conditions"]),
            (ListKind::Atomic, map(&["type"]))
        );
    }

    #[test]
    fn node_service_and_others() {
        let node = BuiltinLists::for_kind("", "Node");
        assert_eq!(
            both(&node, &["status", "addresses"]),
            (map(&["type"]), map(&["type"]))
        );
        assert_eq!(
            both(&node, &["spec", "taints"]),
            (ListKind::Atomic, ListKind::Atomic)
        );
        assert_eq!(
            both(&node, &["spec", "podCIDRs"]),
            (ListKind::Set, ListKind::Set)
        );
        let svc = BuiltinLists::for_kind("", "Service");
        assert_eq!(
            both(&svc, &["spec", "ports"]),
            (map(&["port"]), map(&["port", "protocol"]))
        );
        let sa = BuiltinLists::for_kind("", "ServiceAccount");
        assert_eq!(both(&sa, &["secrets"]), (map(&["name"]), map(&["name"])));
        let csi = BuiltinLists::for_kind("storage.k8s.io", "CSIDriver");
        assert_eq!(
            both(&csi, &["spec", "volumeLifecycleModes"]),
            (ListKind::Atomic, ListKind::Set)
        );
        assert_eq!(
            both(&csi, &["spec", "tokenRequests"]),
            (ListKind::Atomic, ListKind::Atomic)
        );
        let csinode = BuiltinLists::for_kind("storage.k8s.io", "CSINode");
        assert_eq!(
            both(&csinode, &["spec", "drivers"]),
            (map(&["name"]), map(&["name"]))
        );
        let sc = BuiltinLists::for_kind("storage.k8s.io", "StorageClass");
        assert_eq!(
            both(&sc, &["mountOptions"]),
            (ListKind::Atomic, ListKind::Atomic)
        );
        assert_eq!(
            both(&sc, &["allowedTopologies"]),
            (ListKind::Atomic, ListKind::Atomic)
        );
        for kind in ["ClusterRole", "Role"] {
            let r = BuiltinLists::for_kind("rbac.authorization.k8s.io", kind);
            assert_eq!(both(&r, &["rules"]), (ListKind::Atomic, ListKind::Atomic));
        }
        for kind in ["ClusterRoleBinding", "RoleBinding"] {
            let r = BuiltinLists::for_kind("rbac.authorization.k8s.io", kind);
            assert_eq!(
                both(&r, &["subjects"]),
                (ListKind::Atomic, ListKind::Atomic)
            );
        }
        let np = BuiltinLists::for_kind("networking.k8s.io", "NetworkPolicy");
        for f in ["ingress", "egress", "policyTypes"] {
            assert_eq!(
                both(&np, &["spec", f]),
                (ListKind::Atomic, ListKind::Atomic)
            );
        }
        let pdb = BuiltinLists::for_kind("policy", "PodDisruptionBudget");
        assert!(pdb.smp_replaces_object(&["spec", "selector"]));
        assert!(!pdb.smp_replaces_object(&["spec"]));
        assert!(!pdb.smp_replaces_object(&["spec", "selector", "matchLabels"]));
        let ev = BuiltinLists::for_kind("events.k8s.io", "Event");
        assert_eq!(
            both(&ev, &["metadata", "finalizers"]),
            (ListKind::Set, ListKind::Set)
        );
    }

    #[test]
    fn crd_schema_validations_at_any_depth() {
        let crd = BuiltinLists::for_kind("apiextensions.k8s.io", "CustomResourceDefinition");
        let top = [
            "spec",
            "versions",
            "schema",
            "openAPIV3Schema",
            "x-kubernetes-validations",
        ];
        assert_eq!(both(&crd, &top), (map(&["rule"]), map(&["rule"])));
        // Through two levels of `properties` (a map keyed by property name).
        let deep = [
            "spec",
            "versions",
            "schema",
            "openAPIV3Schema",
            "properties",
            "spec",
            "properties",
            "driverConfig",
            "x-kubernetes-validations",
        ];
        assert_eq!(both(&crd, &deep), (map(&["rule"]), map(&["rule"])));
        // A path that stops at a map key names a struct, not a list.
        let at_key = [
            "spec",
            "versions",
            "schema",
            "openAPIV3Schema",
            "properties",
            "spec",
        ];
        assert_eq!(both(&crd, &at_key), (ListKind::Atomic, ListKind::Atomic));
        assert_eq!(
            both(&crd, &["spec", "versions"]),
            (ListKind::Atomic, ListKind::Atomic)
        );
    }

    #[test]
    fn unknown_kinds_paths_and_groups_are_atomic() {
        let cr = BuiltinLists::for_kind("example.com", "Widget");
        assert_eq!(
            both(&cr, &["metadata", "finalizers"]),
            (ListKind::Atomic, ListKind::Atomic)
        );
        // Right kind, wrong group.
        let wrong = BuiltinLists::for_kind("", "Deployment");
        assert_eq!(
            wrong.smp_strategy(&deployment_path(&["containers"])),
            ListKind::Atomic
        );
        let d = BuiltinLists::for_kind("apps", "Deployment");
        assert_eq!(both(&d, &[]), (ListKind::Atomic, ListKind::Atomic));
        assert_eq!(both(&d, &["spec"]), (ListKind::Atomic, ListKind::Atomic));
        assert_eq!(
            both(&d, &["spec", "nope", "containers"]),
            (ListKind::Atomic, ListKind::Atomic)
        );
        assert_eq!(
            both(&d, &["spec", "template", "spec", "containers", "name"]),
            (ListKind::Atomic, ListKind::Atomic)
        );
    }
}
