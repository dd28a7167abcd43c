//! The SecurityContextConstraints a new OpenShift cluster starts with, the ClusterRoles that
//! grant their use, and the CRD that serves the kind: what the OpenShift mode seeds.

use super::{SAFE_VOLUMES, SCC_GROUP, SCC_RESOURCE};
use serde_json::{Value, json};

#[allow(clippy::too_many_arguments)]
fn scc(
    name: &str,
    description: &str,
    priority: Option<i64>,
    host: [bool; 5],
    privilege_escalation: bool,
    caps: (&[&str], &[&str]),
    run_as_user: &str,
    se_linux: &str,
    groups: (&str, &str),
    volumes: &[&str],
    seccomp: &[&str],
    subjects: (&[&str], &[&str]),
) -> Value {
    let [privileged, network, pid, ipc, ports] = host;
    let mut v = json!({
        "apiVersion": "security.openshift.io/v1",
        "kind": "SecurityContextConstraints",
        "metadata": {
            "name": name,
            "annotations": {
                "include.release.openshift.io/self-managed-high-availability": "true",
                "include.release.openshift.io/single-node-developer": "true",
                "kubernetes.io/description": description,
                "release.openshift.io/create-only": "true",
            },
        },
        "allowHostDirVolumePlugin": volumes.contains(&"hostPath") || volumes.contains(&"*"),
        "allowHostIPC": ipc,
        "allowHostNetwork": network,
        "allowHostPID": pid,
        "allowHostPorts": ports,
        "allowPrivilegeEscalation": privilege_escalation,
        "allowPrivilegedContainer": privileged,
        "allowedCapabilities": if caps.0.is_empty() { Value::Null } else { json!(caps.0) },
        "defaultAddCapabilities": null,
        "fsGroup": {"type": groups.0},
        "groups": subjects.1,
        "priority": priority,
        "readOnlyRootFilesystem": false,
        "requiredDropCapabilities": caps.1,
        "runAsUser": {"type": run_as_user},
        "seLinuxContext": {"type": se_linux},
        "supplementalGroups": {"type": groups.1},
        "users": subjects.0,
        "volumes": volumes,
    });
    if !seccomp.is_empty() {
        v["seccompProfiles"] = json!(seccomp);
    }
    if privileged {
        v["allowedUnsafeSysctls"] = json!(["*"]);
    }
    v
}

/// The default SCCs of an OpenShift 4 cluster, with their real field values.
pub fn default_sccs() -> Vec<Value> {
    let legacy_drop: &[&str] = &["KILL", "MKNOD", "SETUID", "SETGID"];
    let none: &[&str] = &[];
    let bind: &[&str] = &["NET_BIND_SERVICE"];
    let all: &[&str] = &["ALL"];
    let runtime_default: &[&str] = &["runtime/default"];
    let mut host_volumes: Vec<&str> = SAFE_VOLUMES.to_vec();
    host_volumes.push("hostPath");
    host_volumes.sort_unstable();
    let mut hostmount_volumes = host_volumes.clone();
    hostmount_volumes.push("nfs");
    hostmount_volumes.sort_unstable();
    let no_host = [false; 5];
    vec![
        scc(
            "anyuid",
            "anyuid provides all features of the restricted SCC but allows users to run with any UID and any GID.",
            Some(10),
            no_host,
            true,
            (none, &["MKNOD"]),
            "RunAsAny",
            "MustRunAs",
            ("RunAsAny", "RunAsAny"),
            &SAFE_VOLUMES,
            none,
            (none, &["system:cluster-admins"]),
        ),
        scc(
            "hostaccess",
            "hostaccess allows access to all host namespaces but still requires pods to be run with a UID and SELinux context that are allocated to the namespace.",
            None,
            [false, true, true, true, true],
            true,
            (none, legacy_drop),
            "MustRunAsRange",
            "MustRunAs",
            ("MustRunAs", "RunAsAny"),
            &host_volumes,
            none,
            (none, none),
        ),
        scc(
            "hostmount-anyuid",
            "hostmount-anyuid provides all the features of the restricted SCC but allows host mounts and any UID by a pod.  This is primarily used by the persistent volume recycler.",
            None,
            no_host,
            true,
            (none, &["MKNOD"]),
            "RunAsAny",
            "MustRunAs",
            ("RunAsAny", "RunAsAny"),
            &hostmount_volumes,
            none,
            (
                &["system:serviceaccount:openshift-infra:pv-recycler-controller"],
                none,
            ),
        ),
        scc(
            "hostnetwork",
            "hostnetwork allows using host networking and host ports but still requires pods to be run with a UID and SELinux context that are allocated to the namespace.",
            None,
            [false, true, false, false, true],
            true,
            (none, legacy_drop),
            "MustRunAsRange",
            "MustRunAs",
            ("MustRunAs", "MustRunAs"),
            &SAFE_VOLUMES,
            none,
            (none, none),
        ),
        scc(
            "hostnetwork-v2",
            "hostnetwork allows using host networking and host ports but still requires pods to be run with a UID and SELinux context that are allocated to the namespace.",
            None,
            [false, true, false, false, true],
            false,
            (bind, all),
            "MustRunAsRange",
            "MustRunAs",
            ("MustRunAs", "MustRunAs"),
            &SAFE_VOLUMES,
            runtime_default,
            (none, none),
        ),
        scc(
            "nonroot",
            "nonroot provides all features of the restricted SCC but allows users to run with any non-root UID.  The user must specify the UID or it must be specified on the by the manifest of the container runtime.",
            None,
            no_host,
            true,
            (none, legacy_drop),
            "MustRunAsNonRoot",
            "MustRunAs",
            ("RunAsAny", "RunAsAny"),
            &SAFE_VOLUMES,
            none,
            (none, none),
        ),
        scc(
            "nonroot-v2",
            "nonroot provides all features of the restricted SCC but allows users to run with any non-root UID.  The user must specify the UID or it must be specified on the by the manifest of the container runtime. On top of the legacy 'nonroot' SCC, it also requires to drop ALL capabilities and does not allow privilege escalation binaries. It will also default the seccomp profile to runtime/default if unset, otherwise this seccomp profile is required.",
            None,
            no_host,
            false,
            (bind, all),
            "MustRunAsNonRoot",
            "MustRunAs",
            ("RunAsAny", "RunAsAny"),
            &SAFE_VOLUMES,
            runtime_default,
            (none, none),
        ),
        scc(
            "privileged",
            "privileged allows access to all privileged and host features and the ability to run as any user, any group, any fsGroup, and with any SELinux context.  WARNING: this is the most relaxed SCC and should be used only for cluster administration. Grant with caution.",
            None,
            [true; 5],
            true,
            (&["*"], none),
            "RunAsAny",
            "RunAsAny",
            ("RunAsAny", "RunAsAny"),
            &["*"],
            &["*"],
            (
                &[
                    "system:admin",
                    "system:serviceaccount:openshift-infra:build-controller",
                ],
                &["system:cluster-admins", "system:nodes", "system:masters"],
            ),
        ),
        scc(
            "restricted",
            "restricted denies access to all host features and requires pods to be run with a UID, and SELinux context that are allocated to the namespace.",
            None,
            no_host,
            true,
            (none, legacy_drop),
            "MustRunAsRange",
            "MustRunAs",
            ("MustRunAs", "RunAsAny"),
            &SAFE_VOLUMES,
            none,
            (none, none),
        ),
        scc(
            "restricted-v2",
            "restricted-v2 denies access to all host features and requires pods to be run with a UID, and SELinux context that are allocated to the namespace. This is the most restrictive SCC and it is used by default for authenticated users. On top of the legacy 'restricted' SCC, it also requires to drop ALL capabilities and does not allow privilege escalation binaries. It will also default the seccomp profile to runtime/default if unset, otherwise this seccomp profile is required.",
            None,
            no_host,
            false,
            (bind, all),
            "MustRunAsRange",
            "MustRunAs",
            ("MustRunAs", "RunAsAny"),
            &SAFE_VOLUMES,
            runtime_default,
            (none, none),
        ),
    ]
}

/// What OpenShift installs with the default SCCs, in creation order: the
/// SecurityContextConstraints CRD, the SCCs, a `system:openshift:scc:<name>` ClusterRole
/// granting `use` of each, and the ClusterRoleBinding of `restricted-v2` to every
/// authenticated user.
pub fn default_objects() -> Vec<Value> {
    let mut out = vec![scc_crd()];
    let sccs = default_sccs();
    let names: Vec<String> = sccs
        .iter()
        .filter_map(|s| s.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    out.extend(sccs);
    for name in &names {
        out.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": format!("system:openshift:scc:{name}")},
            "rules": [{
                "apiGroups": [SCC_GROUP],
                "resources": [SCC_RESOURCE],
                "resourceNames": [name],
                "verbs": ["use"],
            }],
        }));
    }
    out.push(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "system:openshift:scc:restricted-v2"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "system:openshift:scc:restricted-v2",
        },
        "subjects": [{
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Group",
            "name": "system:authenticated",
        }],
    }));
    out
}

/// The CRD that serves SecurityContextConstraints (OpenShift 4 serves them from a CRD too).
/// The schema keeps every field: SCC fields sit at the top level, beside `metadata`.
pub fn scc_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{SCC_RESOURCE}.{SCC_GROUP}")},
        "spec": {
            "group": SCC_GROUP,
            "scope": "Cluster",
            "names": {
                "plural": SCC_RESOURCE,
                "singular": "securitycontextconstraint",
                "kind": "SecurityContextConstraints",
                "listKind": "SecurityContextConstraintsList",
                "shortNames": ["scc"],
            },
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                }},
            }],
        },
    })
}
