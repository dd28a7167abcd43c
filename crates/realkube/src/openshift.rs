//! OpenShift mode: the API server's `KubeAPIServerConfig` (OpenShift's admission chain, as
//! MicroShift configures it), OpenShift's CRDs and default SCCs from `../shared/realkube`, and
//! the one thing cluster-policy-controller does that admission depends on: every namespace gets
//! its `openshift.io/sa.scc.*` UID, supplemental-group and MCS ranges. Without them SCC
//! admission forbids the namespace's pods and each pod-template write stalls about 10 s.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::{Value, json};

use crate::binaries::fixtures_dir;

const UID_RANGE: &str = "openshift.io/sa.scc.uid-range";
const SUPPLEMENTAL_GROUPS: &str = "openshift.io/sa.scc.supplemental-groups";
const MCS: &str = "openshift.io/sa.scc.mcs";

/// The `--openshift-config` file's content.
pub(crate) fn api_server_config(dir: &Path, etcd_url: &str, port: u16) -> Value {
    let d = dir.display();
    let mut args = json!({
        "allow-privileged": ["true"],
        "anonymous-auth": ["false"],
        "client-ca-file": [format!("{d}/ca.crt")],
        "token-auth-file": [format!("{d}/tokens.csv")],
        "etcd-servers": [etcd_url],
        "etcd-prefix": ["kubernetes.io"],
        "enable-admission-plugins": [
            "CertificateApproval", "CertificateSigning", "CertificateSubjectRestriction",
            "DefaultIngressClass", "DefaultStorageClass", "DefaultTolerationSeconds", "LimitRanger",
            "MutatingAdmissionWebhook", "NamespaceLifecycle", "NodeRestriction",
            "OwnerReferencesPermissionEnforcement", "PersistentVolumeClaimResize",
            "PodNodeSelector", "PodTolerationRestriction", "Priority", "ResourceQuota",
            "RuntimeClass", "ServiceAccount", "StorageObjectInUseProtection",
            "TaintNodesByCondition", "ValidatingAdmissionWebhook", "ValidatingAdmissionPolicy",
            "network.openshift.io/ExternalIPRanger",
            "network.openshift.io/RestrictedEndpointsAdmission",
            "route.openshift.io/IngressAdmission",
            "scheduling.openshift.io/OriginPodNodeEnvironment",
            "security.openshift.io/DefaultSecurityContextConstraints",
            "security.openshift.io/SCCExecRestrictions",
            "security.openshift.io/SecurityContextConstraint",
            "security.openshift.io/ValidateSecurityContextConstraints",
            "storage.openshift.io/CSIInlineVolumeSecurity"
        ],
        // Plugins that need OpenShift API servers or objects this plane does not run.
        "disable-admission-plugins": [
            "authorization.openshift.io/RestrictSubjectBindings",
            "authorization.openshift.io/ValidateRoleBindingRestriction",
            "autoscaling.openshift.io/ManagementCPUsOverride",
            "config.openshift.io/DenyDeleteClusterConfiguration",
            "config.openshift.io/ValidateAPIServer", "config.openshift.io/ValidateAuthentication",
            "config.openshift.io/ValidateConsole", "config.openshift.io/ValidateFeatureGate",
            "config.openshift.io/ValidateImage", "config.openshift.io/ValidateOAuth",
            "config.openshift.io/ValidateProject", "config.openshift.io/ValidateScheduler",
            "image.openshift.io/ImagePolicy", "quota.openshift.io/ClusterResourceQuota",
            "quota.openshift.io/ValidateClusterResourceQuota"
        ],
        "service-account-signing-key-file": [format!("{d}/sa.key")],
        "service-account-lookup": ["true"],
        "service-cluster-ip-range": ["10.96.0.0/16"],
        "storage-backend": ["etcd3"],
        "storage-media-type": ["application/vnd.kubernetes.protobuf"],
        "tls-cert-file": [format!("{d}/server.crt")],
        "tls-private-key-file": [format!("{d}/server.key")],
        "authorization-mode": ["Scope", "SystemMasters", "RBAC", "Node"],
        "endpoint-reconciler-type": ["none"],
        "shutdown-delay-duration": ["0s"],
        "enable-logs-handler": ["false"],
        "event-ttl": ["3h"],
    });
    for (k, v) in crate::flags::common_flags(dir) {
        args[k] = json!([v]);
    }
    json!({
        "apiVersion": "kubecontrolplane.config.openshift.io/v1",
        "kind": "KubeAPIServerConfig",
        "admission": {"pluginConfig": {"PodSecurity": {"configuration": {
            "kind": "PodSecurityConfiguration",
            "apiVersion": "pod-security.admission.config.k8s.io/v1",
            "defaults": {
                "enforce": "restricted", "enforce-version": "latest",
                "audit": "restricted", "audit-version": "latest",
                "warn": "restricted", "warn-version": "latest"
            }
        }}}},
        "apiServerArguments": args,
        "serviceAccountPublicKeyFiles": [format!("{d}/sa.pub")],
        "servicesSubnet": "10.96.0.0/16",
        "servingInfo": {"bindAddress": format!("127.0.0.1:{port}"), "bindNetwork": "tcp4"},
        "projectConfig": {"defaultNodeSelector": ""},
    })
}

/// OpenShift's CRDs (`../shared/realkube/crds`).
pub(crate) fn crd_files() -> Result<Vec<PathBuf>, String> {
    yaml_files(&fixtures_dir().join("crds"))
}

/// The YAML files of a folder, in name order.
pub(crate) fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| {
            format!(
                "{}: {e} (the realkube fixtures; set REALKUBE_FIXTURES)",
                dir.display()
            )
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    Ok(files)
}

/// The default SCCs and their RBAC, as OpenShift's kube-apiserver-operator installs them.
pub(crate) async fn seed(client: &Client) -> Result<(), String> {
    let files = yaml_files(&fixtures_dir().join("scc"))?;
    crate::apply::files(client, &files)
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// Annotates every namespace, now and as it is created, with SCC ranges (a block of 10,000
/// UIDs per namespace, as cluster-policy-controller allocates them).
pub(crate) async fn annotate_namespaces(client: Client) {
    let api: Api<Namespace> = Api::all(client);
    let mut next_block: u32 = 0;
    let mut events = watcher(api.clone(), watcher::Config::default()).boxed();
    while let Some(event) = events.next().await {
        let namespaces = match event {
            Ok(watcher::Event::Apply(ns) | watcher::Event::InitApply(ns)) => vec![ns],
            Ok(_) => continue,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        for ns in namespaces {
            let annotated = ns
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(UID_RANGE));
            let Some(name) = ns.metadata.name.as_deref() else {
                continue;
            };
            if annotated || ns.metadata.deletion_timestamp.is_some() {
                continue;
            }
            next_block += 1;
            let base = 1_000_000_000 + next_block * 10_000;
            let patch = json!({"metadata": {"annotations": {
                UID_RANGE: format!("{base}/10000"),
                SUPPLEMENTAL_GROUPS: format!("{base}/10000"),
                MCS: format!("s0:c{},c{}", 25 + next_block, next_block % 25),
            }}});
            let _ = api
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await;
        }
    }
}
