//! Tests of the install manifests in `manifests/openshift/`: the files the cluster version
//! operator (and `csi-operator demo`) applies to install the Cluster Storage Operator.
//!
//! They check that every file holds exactly one object of a kind we know, with the names and
//! namespaces OpenShift uses (anchors §2.2, §2.3, §3.1, §3.3, §3.5, §4.2, §4.7); that what the Go
//! CSO's release ships on OpenStack is shipped too (storage alerts, the namespace admission
//! policy, the operator namespace at run level 49 outside the Storage capability); that the
//! objects a release retires (`release.openshift.io/delete`) are exactly the ones we renamed or
//! dropped; that no default-deny NetworkPolicy isolates the driver pods; that applying
//! them in file order to a kube-sim testbed succeeds; that the sidecar ClusterRoles grant what
//! the upstream sidecars need and that every `openshift-csi-*` role the driver assets bind to
//! exists; that the RBAC is least privilege (no wildcards; Secrets only in the two driver
//! namespaces); and that the CSO may watch, apply and grant every object it applies for the
//! driver operators. These tests must not edit the manifests or reach any network but loopback.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::Value;

const CSO_NS: &str = "openshift-cluster-storage-operator";
const DRIVERS_NS: &str = "openshift-cluster-csi-drivers";
const MANILA_NS: &str = "openshift-manila-csi-driver";
const CCO_NS: &str = "openshift-cloud-credential-operator";

/// The release manifests that retire an object rather than create it.
const DELETE: &str = "release.openshift.io/delete";

/// One manifest file: its name and its single object.
struct Manifest {
    file: String,
    obj: Value,
}

impl Manifest {
    fn kind(&self) -> &str {
        self.obj["kind"].as_str().unwrap_or("")
    }
    fn name(&self) -> &str {
        self.obj["metadata"]["name"].as_str().unwrap_or("")
    }
    fn namespace(&self) -> Option<&str> {
        self.obj["metadata"]["namespace"].as_str()
    }
    fn annotation(&self, key: &str) -> Option<&str> {
        self.obj["metadata"]["annotations"][key].as_str()
    }
    fn is_delete(&self) -> bool {
        self.annotation(DELETE) == Some("true")
    }
}

fn manifest_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests/openshift")
}

/// `(apiVersion, plural, namespaced)` of every kind the install manifests may hold.
fn known_kinds() -> BTreeMap<&'static str, (&'static str, &'static str, bool)> {
    BTreeMap::from([
        ("Namespace", ("v1", "namespaces", false)),
        ("ServiceAccount", ("v1", "serviceaccounts", true)),
        (
            "CredentialsRequest",
            (
                "cloudcredential.openshift.io/v1",
                "credentialsrequests",
                true,
            ),
        ),
        ("Storage", ("operator.openshift.io/v1", "storages", false)),
        (
            "ClusterOperator",
            ("config.openshift.io/v1", "clusteroperators", false),
        ),
        (
            "ClusterRole",
            ("rbac.authorization.k8s.io/v1", "clusterroles", false),
        ),
        (
            "ClusterRoleBinding",
            ("rbac.authorization.k8s.io/v1", "clusterrolebindings", false),
        ),
        ("Role", ("rbac.authorization.k8s.io/v1", "roles", true)),
        (
            "RoleBinding",
            ("rbac.authorization.k8s.io/v1", "rolebindings", true),
        ),
        (
            "NetworkPolicy",
            ("networking.k8s.io/v1", "networkpolicies", true),
        ),
        ("Deployment", ("apps/v1", "deployments", true)),
        ("ConfigMap", ("v1", "configmaps", true)),
        ("Service", ("v1", "services", true)),
        (
            "ServiceMonitor",
            ("monitoring.coreos.com/v1", "servicemonitors", true),
        ),
        (
            "PrometheusRule",
            ("monitoring.coreos.com/v1", "prometheusrules", true),
        ),
        (
            "ValidatingAdmissionPolicy",
            (
                "admissionregistration.k8s.io/v1",
                "validatingadmissionpolicies",
                false,
            ),
        ),
        (
            "ValidatingAdmissionPolicyBinding",
            (
                "admissionregistration.k8s.io/v1",
                "validatingadmissionpolicybindings",
                false,
            ),
        ),
    ])
}

/// The objects the release creates and updates on a standalone cluster (the
/// `self-managed-high-availability` profile), in the order the cluster version operator applies
/// them (by file name); the retiring manifests and other profiles' variants are left out.
fn load() -> Vec<Manifest> {
    load_all()
        .into_iter()
        .filter(|m| !m.is_delete())
        .filter(|m| {
            m.annotation("include.release.openshift.io/self-managed-high-availability")
                == Some("true")
        })
        .collect()
}

/// Every manifest file, retiring ones included, by file name. `image-references` (the release
/// tooling's image list, not a manifest) is the one other file allowed.
fn load_all() -> Vec<Manifest> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(manifest_dir())
        .expect("manifests/openshift exists")
        .map(|e| e.expect("readable entry").path())
        // `hypershift/` holds the manifests no CVO applies (tested on their own).
        .filter(|p| p.is_file())
        .filter(|p| p.file_name().is_none_or(|n| n != "image-references"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no manifests found");
    files
        .into_iter()
        .map(|path| {
            let file = path
                .file_name()
                .and_then(|n| n.to_str())
                .expect("utf-8 file name")
                .to_owned();
            assert!(
                file.ends_with(".yaml"),
                "{file}: only .yaml files belong here"
            );
            let text = std::fs::read_to_string(&path).expect("readable file");
            let mut docs = operator_kit::assets::parse_values(&file, &text)
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(docs.len(), 1, "{file}: exactly one object per file");
            Manifest {
                file,
                obj: docs.remove(0),
            }
        })
        .collect()
}

/// The run level OpenShift ships each object at: the operator namespace alone at 49 (the snapshot
/// controller operator, of run level 50 too, needs it); the CSO namespace's default-deny
/// NetworkPolicy and monitoring's ServiceMonitor and discovery RBAC at 90, after every component
/// of run level 50 (`0000_90_cluster-storage-operator_{01_prometheusrbac,02_servicemonitor,
/// 10_network-policy-cso-deny-all}.yaml`); the rest at 50 with the storage stack.
fn run_level(m: &Manifest) -> &'static str {
    let at_90 = matches!(
        (m.kind(), m.namespace(), m.name()),
        ("NetworkPolicy", Some(CSO_NS), "default-deny")
            | ("ServiceMonitor", Some(CSO_NS), "cluster-storage-operator")
            | ("Role" | "RoleBinding", Some(CSO_NS), "prometheus")
    );
    if m.kind() == "Namespace" && m.name() == CSO_NS {
        "49"
    } else if at_90 {
        "90"
    } else {
        "50"
    }
}

fn typed<T: k8s_openapi::serde::de::DeserializeOwned>(m: &Manifest) -> T {
    serde_json::from_value(m.obj.clone())
        .unwrap_or_else(|e| panic!("{}: not a valid {}: {e}", m.file, m.kind()))
}

fn find<'a>(all: &'a [Manifest], kind: &str, ns: Option<&str>, name: &str) -> &'a Manifest {
    all.iter()
        .find(|m| m.kind() == kind && m.namespace() == ns && m.name() == name)
        .unwrap_or_else(|| panic!("missing {kind} {ns:?}/{name}"))
}

#[test]
fn every_file_is_one_object_of_a_known_kind() {
    let kinds = known_kinds();
    for m in load_all() {
        let Some((api_version, _, namespaced)) = kinds.get(m.kind()) else {
            panic!("{}: unknown kind {:?}", m.file, m.kind());
        };
        assert_eq!(m.obj["apiVersion"], *api_version, "{}", m.file);
        assert!(!m.name().is_empty(), "{}: no metadata.name", m.file);
        assert_eq!(
            m.namespace().is_some(),
            *namespaced,
            "{}: namespace set iff the kind is namespaced",
            m.file
        );
        let prefix = format!("0000_{}_cluster-storage-operator_", run_level(&m));
        assert!(
            m.file.starts_with(&prefix),
            "{}: CVO-style run-level prefix {prefix}",
            m.file
        );
        // Typed parses catch misspelled structure that a JSON value would accept.
        match m.kind() {
            "Namespace" => drop(typed::<Namespace>(&m)),
            "ServiceAccount" => drop(typed::<ServiceAccount>(&m)),
            "ClusterRole" => drop(typed::<ClusterRole>(&m)),
            "ClusterRoleBinding" => drop(typed::<ClusterRoleBinding>(&m)),
            "Role" => drop(typed::<Role>(&m)),
            "RoleBinding" => drop(typed::<RoleBinding>(&m)),
            "NetworkPolicy" => drop(typed::<NetworkPolicy>(&m)),
            "Deployment" => drop(typed::<Deployment>(&m)),
            "CredentialsRequest" => drop(typed::<openshift_api::CredentialsRequest>(&m)),
            "Storage" => drop(typed::<openshift_api::Storage>(&m)),
            "ClusterOperator" => drop(typed::<openshift_api::ClusterOperator>(&m)),
            "ConfigMap" => drop(typed::<k8s_openapi::api::core::v1::ConfigMap>(&m)),
            "Service" => drop(typed::<k8s_openapi::api::core::v1::Service>(&m)),
            "ServiceMonitor" => drop(typed::<openshift_api::ServiceMonitor>(&m)),
            "ValidatingAdmissionPolicy" => drop(typed::<ValidatingAdmissionPolicy>(&m)),
            "ValidatingAdmissionPolicyBinding" => {
                drop(typed::<ValidatingAdmissionPolicyBinding>(&m))
            }
            "PrometheusRule" => assert!(m.obj["spec"]["groups"].is_array(), "{}", m.file),
            other => panic!("{}: no typed check for {other}", m.file),
        }
        // As OpenShift ships them: the operator namespace (the snapshot controller operator,
        // of another capability, uses it) and the namespace admission policy are outside the
        // Storage capability; everything else belongs to it.
        let outside = (m.kind() == "Namespace" && m.name() == CSO_NS)
            || m.kind().starts_with("ValidatingAdmissionPolicy");
        let capability = m.annotation("capability.openshift.io/name");
        if outside {
            assert_eq!(capability, None, "{}: no capability annotation", m.file);
        } else {
            assert!(
                capability.is_some_and(|c| c.starts_with("Storage")),
                "{}: belongs to the Storage capability",
                m.file
            );
        }
    }
}

// ---- Cluster profiles (compatibility C28) ------------------------------------------------------

const HYPERSHIFT: &str = "hypershift";
const IBM: &str = "ibm-cloud-managed";
const SELF_MANAGED: &str = "self-managed-high-availability";
const SNO: &str = "single-node-developer";
/// Every profile OpenShift's CSO release names.
const ALL: &[&str] = &[HYPERSHIFT, IBM, SELF_MANAGED, SNO];
/// The standalone profiles only: the CredentialsRequests (no cloud credential operator in a
/// hosted or IBM Cloud managed cluster) and the standalone CSO Deployment.
const STANDALONE: &[&str] = &[SELF_MANAGED, SNO];
/// OpenShift's `04_configmap.yaml`, the Go CSO's config file: everywhere but HyperShift.
const IBM_AND_STANDALONE: &[&str] = &[IBM, SELF_MANAGED, SNO];
/// OpenShift's `10_deployment-ibm-cloud-managed.yaml`.
const MANAGED: &[&str] = &[HYPERSHIFT, IBM];

/// Each of our manifests (its file name without `cluster-storage-operator_`), its counterpart in
/// OpenShift's CSO `manifests/` (`-` where it has none), and the profiles that counterpart is
/// annotated with, restated from OpenShift's files. Where there is no counterpart: Manila's
/// namespace is in every profile, as the drivers' namespace is (C15); the admission policies of
/// C24, C25, C30 and C31 are, as OpenShift's own policy (13, 14) is; the retirement of our
/// earlier default-deny (C22) only where that release could run (it shipped the standalone
/// profiles only); the volume-data-source-validator's retirements (C16) wherever the Go CSO
/// created it, which is every profile.
const PROFILES: &[(&str, &str, &[&str])] = &[
    (
        "0000_49_01_namespace_operator.yaml",
        "0000_49_cluster-storage-operator_01_operator_namespace.yaml",
        ALL,
    ),
    (
        "0000_50_01_namespace_csi_drivers.yaml",
        "02_csi_driver_operators_namespace.yaml",
        ALL,
    ),
    ("0000_50_01_namespace_manila.yaml", "-", ALL),
    (
        "0000_50_03_credentials_request_cinder.yaml",
        "03_credentials_request_cinder.yaml",
        STANDALONE,
    ),
    (
        "0000_50_03_credentials_request_manila.yaml",
        "03_credentials_request_manila.yaml",
        STANDALONE,
    ),
    (
        "0000_50_03_credentials_request_manila_namespace.yaml",
        "03_credentials_request_manila_namespace.yaml",
        STANDALONE,
    ),
    ("0000_50_04_storage_cr.yaml", "06_operator_cr.yaml", ALL),
    (
        "0000_50_06_provisioner_volumesnapshot_reader_role.yaml",
        "09_openshift-csi-provisioner-volumesnapshot-reader-role.yaml",
        ALL,
    ),
    (
        "0000_50_06_resizer_storageclass_reader_role.yaml",
        "09_openshift-csi-resizer-storageclass-reader-role.yaml",
        ALL,
    ),
    (
        "0000_50_06_sidecar_main_attacher_role.yaml",
        "09_sidecar-main_attacher_role.yaml",
        ALL,
    ),
    (
        "0000_50_06_sidecar_main_provisioner_role.yaml",
        "09_sidecar-main_provisioner_role.yaml",
        ALL,
    ),
    (
        "0000_50_06_sidecar_main_resizer_role.yaml",
        "09_sidecar-main_resizer_role.yaml",
        ALL,
    ),
    (
        "0000_50_06_sidecar_main_snapshotter_role.yaml",
        "09_sidecar-main_snapshotter_role.yaml",
        ALL,
    ),
    (
        "0000_50_07_service_account.yaml",
        "07_service_account.yaml",
        ALL,
    ),
    (
        "0000_50_08_00_clusterrole.yaml",
        "08_operator_rbac.yaml",
        ALL,
    ),
    (
        "0000_50_08_01_clusterrole_driver_operators.yaml",
        "08_operator_rbac.yaml",
        ALL,
    ),
    (
        "0000_50_08_02_role_csi_drivers.yaml",
        "08_operator_rbac.yaml",
        ALL,
    ),
    (
        "0000_50_08_03_role_manila.yaml",
        "08_operator_rbac.yaml",
        ALL,
    ),
    (
        "0000_50_08_04_role_operator.yaml",
        "08_operator_rbac.yaml",
        ALL,
    ),
    (
        "0000_50_08_05_role_config.yaml",
        "08_operator_rbac.yaml",
        ALL,
    ),
    (
        "0000_50_08_06_role_default.yaml",
        "08_operator_rbac.yaml",
        ALL,
    ),
    (
        "0000_50_08_10_clusterrolebinding.yaml",
        "08_operator_rbac.yaml",
        ALL,
    ),
    (
        "0000_50_08_11_clusterrolebinding_driver_operators.yaml",
        "08_operator_rbac.yaml",
        ALL,
    ),
    (
        "0000_50_08_12_rolebinding_csi_drivers.yaml",
        "08_operator_rbac.yaml",
        ALL,
    ),
    (
        "0000_50_08_13_rolebinding_manila.yaml",
        "08_operator_rbac.yaml",
        ALL,
    ),
    (
        "0000_50_08_14_rolebinding_operator.yaml",
        "08_operator_rbac.yaml",
        ALL,
    ),
    (
        "0000_50_08_15_rolebinding_config.yaml",
        "08_operator_rbac.yaml",
        ALL,
    ),
    (
        "0000_50_08_16_rolebinding_default.yaml",
        "08_operator_rbac.yaml",
        ALL,
    ),
    (
        "0000_50_09_metrics_00_service.yaml",
        "09_metrics_service.yaml",
        ALL,
    ),
    (
        "0000_50_09_network_policy_csi-drivers_01_allow_egress_to_api_server.yaml",
        "09_network-policy-allow-egress-to-api-server.yaml",
        ALL,
    ),
    (
        "0000_50_09_network_policy_csi-drivers_02_allow_to_dns.yaml",
        "09_network-policy-allow-to-dns.yaml",
        ALL,
    ),
    (
        "0000_50_09_network_policy_csi-drivers_03_allow_all_egress.yaml",
        "09_network-policy-allow-all-egress.yaml",
        ALL,
    ),
    (
        "0000_50_09_network_policy_csi-drivers_04_allow_ingress_to_metrics_range.yaml",
        "09_network-policy-allow-ingress-to-metrics.yaml",
        ALL,
    ),
    (
        "0000_50_09_network_policy_csi-drivers_05_allow_ingress_to_operator_metrics_range.yaml",
        "09_network-policy-allow-ingress-to-operator-metrics-range.yaml",
        ALL,
    ),
    (
        "0000_50_09_network_policy_cso_01_allow_egress_to_api_server.yaml",
        "09_network-policy-cso-allow-egress-to-api-server.yaml",
        ALL,
    ),
    (
        "0000_50_09_network_policy_cso_02_allow_to_dns.yaml",
        "09_network-policy-cso-allow-to-dns.yaml",
        ALL,
    ),
    (
        "0000_50_09_network_policy_cso_03_allow_ingress_to_operator_metrics.yaml",
        "09_network-policy-cso-allow-ingress-to-operator-metrics.yaml",
        ALL,
    ),
    (
        "0000_50_09_network_policy_cso_04_allow_all_egress.yaml",
        "09_network-policy-cso-allow-all-egress.yaml",
        ALL,
    ),
    (
        "0000_50_10_deployment-ibm-cloud-managed.yaml",
        "10_deployment-ibm-cloud-managed.yaml",
        MANAGED,
    ),
    (
        "0000_50_10_deployment.yaml",
        "10_deployment.yaml",
        STANDALONE,
    ),
    (
        "0000_50_11_cluster_operator.yaml",
        "11_cluster_operator.yaml",
        ALL,
    ),
    (
        "0000_50_12_prometheusrules.yaml",
        "12_prometheusrules.yaml",
        ALL,
    ),
    (
        "0000_50_13_validating_admission_policy.yaml",
        "13_validating_admission_policy.yaml",
        ALL,
    ),
    (
        "0000_50_14_validating_admission_policy_binding.yaml",
        "14_validating_admission_policy_binding.yaml",
        ALL,
    ),
    (
        "0000_50_15_validating_admission_policy_manila_storageclasses.yaml",
        "-",
        ALL,
    ),
    (
        "0000_50_16_validating_admission_policy_binding_manila_storageclasses.yaml",
        "-",
        ALL,
    ),
    (
        "0000_50_17_validating_admission_policy_cinder_storageclasses.yaml",
        "-",
        ALL,
    ),
    (
        "0000_50_18_validating_admission_policy_binding_cinder_storageclasses.yaml",
        "-",
        ALL,
    ),
    (
        "0000_50_19_validating_admission_policy_cinder_rbac.yaml",
        "-",
        ALL,
    ),
    (
        "0000_50_20_validating_admission_policy_binding_cinder_rbac.yaml",
        "-",
        ALL,
    ),
    (
        "0000_50_21_validating_admission_policy_manila_rbac.yaml",
        "-",
        ALL,
    ),
    (
        "0000_50_22_validating_admission_policy_binding_manila_rbac.yaml",
        "-",
        ALL,
    ),
    (
        "0000_50_23_validating_admission_policy_cso_cluster_writes.yaml",
        "-",
        ALL,
    ),
    (
        "0000_50_24_validating_admission_policy_binding_cso_cluster_writes.yaml",
        "-",
        ALL,
    ),
    (
        "0000_50_25_validating_admission_policy_service_account_tokens.yaml",
        "-",
        ALL,
    ),
    (
        "0000_50_26_validating_admission_policy_binding_service_account_tokens.yaml",
        "-",
        ALL,
    ),
    (
        "0000_50_90_retire_00_clusterrolebinding_cluster_admin.yaml",
        "08_operator_rbac.yaml",
        ALL,
    ),
    (
        "0000_50_90_retire_01_network_policy_csi-drivers_default_deny.yaml",
        "-",
        STANDALONE,
    ),
    (
        "0000_50_90_retire_02_configmap_operator_config.yaml",
        "04_configmap.yaml",
        IBM_AND_STANDALONE,
    ),
    (
        "0000_50_90_retire_03_deployment_volume_data_source_validator.yaml",
        "pkg/operator/volumedatasourcevalidator",
        ALL,
    ),
    (
        "0000_50_90_retire_04_clusterrolebinding_volume_data_source_validator.yaml",
        "pkg/operator/volumedatasourcevalidator",
        ALL,
    ),
    (
        "0000_50_90_retire_05_clusterrole_volume_data_source_validator.yaml",
        "pkg/operator/volumedatasourcevalidator",
        ALL,
    ),
    (
        "0000_50_90_retire_06_serviceaccount_volume_data_source_validator.yaml",
        "pkg/operator/volumedatasourcevalidator",
        ALL,
    ),
    (
        "0000_90_01_prometheus_00_role.yaml",
        "0000_90_cluster-storage-operator_01_prometheusrbac.yaml",
        ALL,
    ),
    (
        "0000_90_01_prometheus_01_rolebinding.yaml",
        "0000_90_cluster-storage-operator_01_prometheusrbac.yaml",
        ALL,
    ),
    (
        "0000_90_02_servicemonitor.yaml",
        "0000_90_cluster-storage-operator_02_servicemonitor.yaml",
        ALL,
    ),
    (
        "0000_90_10_network_policy_cso_default_deny.yaml",
        "0000_90_cluster-storage-operator_10_network-policy-cso-deny-all.yaml",
        ALL,
    ),
];

/// The profiles a manifest is included in (`include.release.openshift.io/<profile>: "true"`).
fn profiles_of(m: &Manifest) -> BTreeSet<String> {
    m.obj["metadata"]["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            let profile = k.strip_prefix("include.release.openshift.io/")?;
            assert_eq!(v, "true", "{}: {k} is {v}", m.file);
            Some(profile.to_owned())
        })
        .collect()
}

/// The differences between the manifests' profiles and [`PROFILES`], one line each.
fn profile_differences(all: &[Manifest]) -> Vec<String> {
    let want: BTreeMap<String, (&str, BTreeSet<String>)> = PROFILES
        .iter()
        .map(|(file, go, profiles)| {
            let set = profiles.iter().map(|p| (*p).to_owned()).collect();
            ((*file).to_owned(), (*go, set))
        })
        .collect();
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for m in all {
        let short = m.file.replacen("cluster-storage-operator_", "", 1);
        seen.insert(short.clone());
        let got = profiles_of(m);
        match want.get(&short) {
            None => out.push(format!(
                "{}: not in the profile table; add it with its OpenShift counterpart",
                m.file
            )),
            Some((go, profiles)) if *profiles != got => out.push(format!(
                "{}: profiles {got:?}, but OpenShift's {go} has {profiles:?}",
                m.file
            )),
            Some(_) => {}
        }
    }
    for file in want.keys().filter(|f| !seen.contains(*f)) {
        out.push(format!("{file}: in the profile table but not shipped"));
    }
    out
}

#[test]
fn every_manifest_is_in_the_profiles_openshifts_counterpart_is_in() {
    let all = load_all();
    let diffs = profile_differences(&all);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    // The check fails on a missing annotation: take one away from a copy.
    let mut broken = load_all();
    let deployment = broken
        .iter_mut()
        .find(|m| m.file.ends_with("_10_deployment.yaml"))
        .expect("the CSO Deployment");
    deployment.obj["metadata"]["annotations"]
        .as_object_mut()
        .expect("annotations")
        .remove("include.release.openshift.io/single-node-developer");
    let diffs = profile_differences(&broken);
    assert_eq!(diffs.len(), 1, "{diffs:?}");
    assert!(
        diffs[0].contains("_10_deployment.yaml") && diffs[0].contains("10_deployment.yaml"),
        "{diffs:?}"
    );
}

/// Which manifests a cluster version operator of `profile` applies: one CSO Deployment in the
/// standalone and IBM Cloud profiles (each its own variant), the CredentialsRequests only where
/// a cloud credential operator runs.
#[test]
fn each_profile_gets_one_cso_deployment_and_credentials_only_standalone() {
    let all: Vec<Manifest> = load_all().into_iter().filter(|m| !m.is_delete()).collect();
    for profile in ALL {
        let included: Vec<&Manifest> = all
            .iter()
            .filter(|m| profiles_of(m).contains(*profile))
            .collect();
        let deployments: Vec<&str> = included
            .iter()
            .filter(|m| m.kind() == "Deployment")
            .map(|m| m.file.as_str())
            .collect();
        assert_eq!(deployments.len(), 1, "{profile}: {deployments:?}");
        let credentials = included
            .iter()
            .filter(|m| m.kind() == "CredentialsRequest")
            .count();
        let standalone = STANDALONE.contains(profile);
        assert_eq!(credentials, if standalone { 3 } else { 0 }, "{profile}");
    }
    // HyperShift's CVO runs with the ibm-cloud-managed profile and drops the IBM Cloud CSO
    // Deployment by this exact file name (control-plane-operator/controllers/
    // hostedcontrolplane/v2/cvo/deployment.go, manifestsToOmit), so no CSO starts in the guest.
    assert!(
        all.iter().any(|m| m.file
            == "0000_50_cluster-storage-operator_10_deployment-ibm-cloud-managed.yaml"
            && m.kind() == "Deployment"),
        "the IBM Cloud CSO Deployment keeps the file name HyperShift removes"
    );
}

fn hypershift_manifests() -> Vec<Manifest> {
    let dir = manifest_dir().join("hypershift");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("manifests/openshift/hypershift exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).expect("readable");
            let mut docs = operator_kit::assets::parse_values(&file, &text)
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(docs.len(), 1, "{file}");
            Manifest {
                file,
                obj: docs.remove(0),
            }
        })
        .collect()
}

/// OpenShift's `*-hypershift.yaml` manifests: the operator CR, ServiceAccount, RBAC, Deployment
/// and ClusterOperator, with no profile (no CVO applies them) and no namespace (HyperShift puts
/// the CSO in the control-plane namespace); the Deployment reaches the guest through the
/// admin kubeconfig Secret HyperShift gives every control-plane component.
#[test]
fn the_hypershift_manifests_are_openshifts_set_and_no_cvo_applies_them() {
    let all = hypershift_manifests();
    let got: BTreeSet<(String, String)> = all
        .iter()
        .map(|m| (m.kind().to_owned(), m.name().to_owned()))
        .collect();
    let want: BTreeSet<(String, String)> = [
        ("Storage", "cluster"),
        ("ServiceAccount", "cluster-storage-operator"),
        ("ClusterRoleBinding", "cluster-storage-operator"),
        ("Deployment", "cluster-storage-operator"),
        ("ClusterOperator", "storage"),
    ]
    .into_iter()
    .map(|(k, n)| (k.to_owned(), n.to_owned()))
    .collect();
    assert_eq!(got, want);
    let kinds = known_kinds();
    for m in &all {
        assert!(m.file.ends_with("-hypershift.yaml"), "{}", m.file);
        assert!(
            m.file.starts_with("0000_50_cluster-storage-operator_"),
            "{}",
            m.file
        );
        assert_eq!(
            m.obj["apiVersion"],
            kinds[m.kind()].0,
            "{}: apiVersion",
            m.file
        );
        assert!(profiles_of(m).is_empty(), "{}: no profile", m.file);
        assert_eq!(
            m.namespace(),
            None,
            "{}: HyperShift sets the namespace",
            m.file
        );
    }
    let binding: ClusterRoleBinding = typed(find(
        &all,
        "ClusterRoleBinding",
        None,
        "cluster-storage-operator",
    ));
    assert_eq!(
        binding.role_ref.name, "cluster-storage-operator",
        "least privilege (C17)"
    );
    let d: Deployment = typed(find(&all, "Deployment", None, "cluster-storage-operator"));
    let pod = d.spec.unwrap().template.spec.unwrap();
    let c = &pod.containers[0];
    let args = c.args.clone().unwrap_or_default();
    assert!(
        args.contains(&"--guest-kubeconfig=/etc/guest-kubeconfig/kubeconfig".to_owned()),
        "{args:?}"
    );
    let mount = c
        .volume_mounts
        .iter()
        .flatten()
        .find(|v| v.mount_path == "/etc/guest-kubeconfig")
        .expect("the guest kubeconfig is mounted");
    let volume = pod
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == mount.name)
        .expect("its volume");
    assert_eq!(
        volume
            .secret
            .as_ref()
            .and_then(|s| s.secret_name.as_deref()),
        Some("service-network-admin-kubeconfig")
    );
    let env: BTreeSet<&str> = c.env.iter().flatten().map(|e| e.name.as_str()).collect();
    // The names HyperShift replaces with the release's images (its storage component's
    // envreplace.go), the control-plane ones included.
    for name in [
        "OPENSTACK_CINDER_DRIVER_OPERATOR_IMAGE",
        "OPENSTACK_CINDER_DRIVER_IMAGE",
        "MANILA_DRIVER_OPERATOR_IMAGE",
        "MANILA_DRIVER_IMAGE",
        "MANILA_NFS_DRIVER_IMAGE",
        "OPENSTACK_CINDER_DRIVER_CONTROL_PLANE_IMAGE",
        "MANILA_DRIVER_CONTROL_PLANE_IMAGE",
        "LIVENESS_PROBE_CONTROL_PLANE_IMAGE",
        "KUBE_RBAC_PROXY_CONTROL_PLANE_IMAGE",
        "OPERATOR_IMAGE_VERSION",
    ] {
        assert!(env.contains(name), "{name} missing from {env:?}");
    }
    // HyperShift sets each image variable to the release's image of the tag its storage
    // component maps the name to (`v2/storage/envreplace.go`, restated for the names we use);
    // a variable it does not know would keep this file's placeholder image.
    const HYPERSHIFT_REPLACES: &[(&str, &str)] = &[
        (
            "OPENSTACK_CINDER_DRIVER_OPERATOR_IMAGE",
            "openstack-cinder-csi-driver-operator",
        ),
        (
            "OPENSTACK_CINDER_DRIVER_IMAGE",
            "openstack-cinder-csi-driver",
        ),
        ("MANILA_DRIVER_OPERATOR_IMAGE", "csi-driver-manila-operator"),
        ("MANILA_DRIVER_IMAGE", "csi-driver-manila"),
        ("MANILA_NFS_DRIVER_IMAGE", "csi-driver-nfs"),
        ("PROVISIONER_IMAGE", "csi-external-provisioner"),
        ("ATTACHER_IMAGE", "csi-external-attacher"),
        ("RESIZER_IMAGE", "csi-external-resizer"),
        ("SNAPSHOTTER_IMAGE", "csi-external-snapshotter"),
        ("NODE_DRIVER_REGISTRAR_IMAGE", "csi-node-driver-registrar"),
        ("LIVENESS_PROBE_IMAGE", "csi-livenessprobe"),
        ("KUBE_RBAC_PROXY_IMAGE", "kube-rbac-proxy"),
        ("TOOLS_IMAGE", "tools"),
        (
            "OPENSTACK_CINDER_DRIVER_CONTROL_PLANE_IMAGE",
            "openstack-cinder-csi-driver",
        ),
        ("MANILA_DRIVER_CONTROL_PLANE_IMAGE", "csi-driver-manila"),
        ("LIVENESS_PROBE_CONTROL_PLANE_IMAGE", "csi-livenessprobe"),
        ("KUBE_RBAC_PROXY_CONTROL_PLANE_IMAGE", "kube-rbac-proxy"),
    ];
    for name in env.iter().filter(|n| n.ends_with("_IMAGE")) {
        assert!(
            HYPERSHIFT_REPLACES.iter().any(|(n, _)| n == name),
            "{name}: HyperShift does not replace it"
        );
    }
    // The standalone Deployment's image variables are all here too.
    let standalone: Deployment = typed(find(
        &load(),
        "Deployment",
        Some(CSO_NS),
        "cluster-storage-operator",
    ));
    for e in standalone.spec.unwrap().template.spec.unwrap().containers[0]
        .env
        .iter()
        .flatten()
    {
        assert!(env.contains(e.name.as_str()), "{} missing", e.name);
    }
}

#[test]
fn names_and_namespaces_are_openshifts() {
    let all = load();
    let got: BTreeSet<(String, String, String)> = all
        .iter()
        .map(|m| {
            (
                m.kind().to_owned(),
                m.namespace().unwrap_or("").to_owned(),
                m.name().to_owned(),
            )
        })
        .collect();
    assert_eq!(got.len(), all.len(), "no object appears twice");
    let want = [
        ("Namespace", "", CSO_NS),
        ("Namespace", "", DRIVERS_NS),
        (
            "CredentialsRequest",
            CCO_NS,
            "openstack-cinder-csi-driver-operator",
        ),
        ("CredentialsRequest", CCO_NS, "manila-csi-driver-operator"),
        ("CredentialsRequest", CCO_NS, "manila-csi-drivers"),
        ("Storage", "", "cluster"),
        ("ClusterOperator", "", "storage"),
        ("ClusterRole", "", "openshift-csi-main-attacher-role"),
        ("ClusterRole", "", "openshift-csi-main-provisioner-role"),
        ("ClusterRole", "", "openshift-csi-main-resizer-role"),
        ("ClusterRole", "", "openshift-csi-main-snapshotter-role"),
        (
            "ClusterRole",
            "",
            "openshift-csi-resizer-storageclass-reader-role",
        ),
        (
            "ClusterRole",
            "",
            "openshift-csi-provisioner-volumesnapshot-reader-role",
        ),
        ("ServiceAccount", CSO_NS, "cluster-storage-operator"),
        ("ClusterRoleBinding", "", "cluster-storage-operator"),
        ("Deployment", CSO_NS, "cluster-storage-operator"),
        ("PrometheusRule", CSO_NS, "prometheus"),
        ("Service", CSO_NS, "cluster-storage-operator-metrics"),
        ("ServiceMonitor", CSO_NS, "cluster-storage-operator"),
        ("Role", CSO_NS, "prometheus"),
        ("RoleBinding", CSO_NS, "prometheus"),
        (
            "ValidatingAdmissionPolicy",
            "",
            "openshift-storage-policy-validation",
        ),
        (
            "ValidatingAdmissionPolicyBinding",
            "",
            "openshift-storage-policy-validation-binding",
        ),
        ("NetworkPolicy", DRIVERS_NS, "allow-egress-to-api-server"),
        ("NetworkPolicy", DRIVERS_NS, "allow-to-dns"),
        ("NetworkPolicy", DRIVERS_NS, "allow-all-egress"),
        (
            "NetworkPolicy",
            DRIVERS_NS,
            "allow-ingress-to-metrics-range",
        ),
        (
            "NetworkPolicy",
            DRIVERS_NS,
            "allow-ingress-to-operator-metrics-range",
        ),
        ("NetworkPolicy", CSO_NS, "default-deny"),
        ("NetworkPolicy", CSO_NS, "allow-egress-to-api-server"),
        ("NetworkPolicy", CSO_NS, "allow-to-dns"),
        ("NetworkPolicy", CSO_NS, "allow-ingress-to-operator-metrics"),
        ("NetworkPolicy", CSO_NS, "allow-all-egress"),
    ];
    for (kind, ns, name) in want {
        assert!(
            got.contains(&(kind.into(), ns.into(), name.into())),
            "missing {kind} {ns}/{name}"
        );
    }
}

#[test]
fn order_is_dependencies_first() {
    let all = load();
    let position = |pred: &dyn Fn(&Manifest) -> bool| all.iter().position(pred);
    for (i, m) in all.iter().enumerate() {
        if let Some(ns) = m.namespace()
            && let Some(p) = position(&|n| n.kind() == "Namespace" && n.name() == ns)
        {
            assert!(p < i, "{}: its namespace comes later", m.file);
        }
        if m.kind().ends_with("RoleBinding") {
            let role_kind = m.obj["roleRef"]["kind"].as_str().unwrap_or("");
            let role = m.obj["roleRef"]["name"].as_str().unwrap_or("");
            if let Some(p) = position(&|n| n.kind() == role_kind && n.name() == role) {
                assert!(p < i, "{}: its role comes later", m.file);
            }
        }
    }
    // The operator starts when everything it relies on exists (monitoring's discovery rights
    // are not the operator's: they come at run level 90 with the ServiceMonitor).
    let deployment = position(&|m| m.kind() == "Deployment").expect("the CSO Deployment");
    for (i, m) in all.iter().enumerate() {
        if matches!(
            m.kind(),
            "Namespace"
                | "ServiceAccount"
                | "ClusterRole"
                | "Role"
                | "ClusterRoleBinding"
                | "RoleBinding"
        ) && run_level(m) != "90"
        {
            assert!(i < deployment, "{}: comes after the CSO Deployment", m.file);
        }
    }
    // The Go CSO's cluster-admin binding is retired after the Deployment: the Go CSO keeps
    // what it was granted until ours replaces it.
    let all_files = load_all();
    let go_binding = all_files
        .iter()
        .find(|m| m.is_delete() && m.name() == "cluster-storage-operator-role")
        .expect("the retiring manifest of the Go CSO's binding");
    assert!(
        go_binding.file > all[deployment].file,
        "{}: retires the Go CSO's rights before the CSO Deployment is replaced",
        go_binding.file
    );
    // Bindings point at roles that exist (here, or for the CSO's own, nowhere else).
    for m in all.iter().filter(|m| m.kind().ends_with("RoleBinding")) {
        let role = m.obj["roleRef"]["name"].as_str().unwrap_or("");
        assert!(
            all.iter()
                .any(|r| r.kind().ends_with("Role") && r.name() == role),
            "{}: roleRef {role} is not shipped",
            m.file
        );
    }
}

#[test]
fn namespaces_carry_the_anchor_labels_and_annotations() {
    let all = load();
    // The Manila namespace may also come from the CSO alone (a static asset of the Manila
    // driver operator): checked here only when the release ships it.
    let shipped = |ns: &str| {
        all.iter()
            .any(|m| m.kind() == "Namespace" && m.name() == ns)
    };
    for ns in [DRIVERS_NS, MANILA_NS].into_iter().filter(|ns| shipped(ns)) {
        let m = find(&all, "Namespace", None, ns);
        for mode in ["enforce", "audit", "warn"] {
            assert_eq!(
                m.obj["metadata"]["labels"][format!("pod-security.kubernetes.io/{mode}")],
                "privileged",
                "{ns}: node plugins run privileged"
            );
        }
    }
    let drivers = find(&all, "Namespace", None, DRIVERS_NS);
    assert_eq!(
        drivers.obj["metadata"]["labels"]["openshift.io/cluster-monitoring"],
        "true"
    );
    for ns in [CSO_NS, DRIVERS_NS, MANILA_NS]
        .into_iter()
        .filter(|ns| shipped(ns))
    {
        let m = find(&all, "Namespace", None, ns);
        assert_eq!(
            m.obj["metadata"]["annotations"]["openshift.io/node-selector"], "",
            "{ns}"
        );
        assert_eq!(
            m.obj["metadata"]["annotations"]["workload.openshift.io/allowed"], "management",
            "{ns}"
        );
    }
    // The operator namespace: run level 49 and outside the Storage capability (checked with
    // every file), scraped by cluster monitoring.
    let cso = find(&all, "Namespace", None, CSO_NS);
    assert!(cso.file.starts_with("0000_49_"), "{}", cso.file);
    assert_eq!(
        cso.obj["metadata"]["labels"]["openshift.io/cluster-monitoring"],
        "true"
    );
}

#[test]
fn credentials_requests_target_the_anchor_secrets() {
    let all = load();
    for (name, secret_ns, secret) in [
        (
            "openstack-cinder-csi-driver-operator",
            DRIVERS_NS,
            "openstack-cloud-credentials",
        ),
        (
            "manila-csi-driver-operator",
            DRIVERS_NS,
            "manila-cloud-credentials",
        ),
        ("manila-csi-drivers", MANILA_NS, "manila-cloud-credentials"),
    ] {
        let m = find(&all, "CredentialsRequest", Some(CCO_NS), name);
        assert_eq!(m.obj["spec"]["secretRef"]["name"], secret, "{name}");
        assert_eq!(m.obj["spec"]["secretRef"]["namespace"], secret_ns, "{name}");
        assert_eq!(
            m.obj["spec"]["providerSpec"]["kind"],
            "OpenStackProviderSpec"
        );
        assert_eq!(
            m.obj["spec"]["providerSpec"]["apiVersion"],
            "cloudcredential.openshift.io/v1"
        );
        assert_eq!(
            m.obj["metadata"]["annotations"]["capability.openshift.io/name"],
            "Storage+CloudCredential"
        );
    }
}

#[test]
fn storage_cr_is_create_only_and_managed() {
    let all = load();
    let m = find(&all, "Storage", None, "cluster");
    assert_eq!(
        m.obj["metadata"]["annotations"]["release.openshift.io/create-only"],
        "true"
    );
    assert_eq!(m.obj["spec"]["managementState"], "Managed");
    assert_eq!(m.obj["spec"]["logLevel"], "Normal");
    assert_eq!(m.obj["spec"]["operatorLogLevel"], "Normal");
    let co = find(&all, "ClusterOperator", None, "storage");
    assert_eq!(co.obj["status"]["versions"][0]["name"], "operator");
}

#[test]
fn deployment_runs_the_cso_with_every_image() {
    let all = load();
    let d: Deployment = typed(find(
        &all,
        "Deployment",
        Some(CSO_NS),
        "cluster-storage-operator",
    ));
    let spec = d.spec.expect("spec");
    assert_eq!(spec.replicas, Some(1));
    let pod = spec.template.spec.expect("pod spec");
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some("cluster-storage-operator")
    );
    assert_eq!(pod.containers.len(), 1);
    let c = &pod.containers[0];
    assert_eq!(
        c.command.as_deref(),
        Some(
            &[
                "csi-operator".to_string(),
                "cluster-storage".into(),
                "start".into()
            ][..]
        )
    );
    let env: BTreeMap<String, Option<String>> = c
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.clone(), e.value.clone()))
        .collect();
    for name in [
        "OPENSTACK_CINDER_DRIVER_OPERATOR_IMAGE",
        "OPENSTACK_CINDER_DRIVER_IMAGE",
        "MANILA_DRIVER_OPERATOR_IMAGE",
        "MANILA_DRIVER_IMAGE",
        "MANILA_NFS_DRIVER_IMAGE",
        "PROVISIONER_IMAGE",
        "ATTACHER_IMAGE",
        "RESIZER_IMAGE",
        "SNAPSHOTTER_IMAGE",
        "NODE_DRIVER_REGISTRAR_IMAGE",
        "LIVENESS_PROBE_IMAGE",
        "KUBE_RBAC_PROXY_IMAGE",
        "TOOLS_IMAGE",
        "OPERATOR_IMAGE_VERSION",
    ] {
        assert!(
            env.get(name)
                .is_some_and(|v| v.as_deref().is_some_and(|v| !v.is_empty())),
            "env {name} missing or empty"
        );
    }
    let resources = c.resources.as_ref().expect("resources");
    let requests = resources.requests.as_ref().expect("requests");
    assert_eq!(requests["cpu"].0, "10m");
    assert_eq!(requests["memory"].0, "20Mi");
    assert!(resources.limits.is_none(), "no limits (anchors §6.1)");
    // Its labels must match the policies that let it reach the API server and DNS.
    let labels = spec
        .template
        .metadata
        .and_then(|m| m.labels)
        .unwrap_or_default();
    for policy in ["api-server", "dns"] {
        assert_eq!(
            labels
                .get(&format!("openshift.storage.network-policy.{policy}"))
                .map(String::as_str),
            Some("allow"),
            "pod label for {policy}"
        );
    }
}

#[test]
fn network_policies_open_the_anchor_ports() {
    let all = load();
    let ports = |ns: &str, name: &str| -> Vec<(i32, Option<i32>)> {
        let p: NetworkPolicy = typed(find(&all, "NetworkPolicy", Some(ns), name));
        let spec = p.spec.expect("spec");
        spec.ingress
            .iter()
            .flatten()
            .flat_map(|r| r.ports.iter().flatten())
            .chain(
                spec.egress
                    .iter()
                    .flatten()
                    .flat_map(|r| r.ports.iter().flatten()),
            )
            .filter_map(|p| match &p.port {
                Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n)) => {
                    Some((*n, p.end_port))
                }
                _ => None,
            })
            .collect()
    };
    assert_eq!(
        ports(DRIVERS_NS, "allow-ingress-to-metrics-range"),
        [(9201, Some(9223))]
    );
    assert_eq!(
        ports(DRIVERS_NS, "allow-egress-to-api-server"),
        [(6443, None)]
    );
    assert!(ports(DRIVERS_NS, "allow-to-dns").contains(&(5353, None)));
    assert_eq!(
        ports(DRIVERS_NS, "allow-ingress-to-operator-metrics-range"),
        [(8443, Some(8445))]
    );
}

/// No default-deny in the driver namespace (OpenShift has none there; it isolated driver pods
/// whose flows no policy allowed), and allow-all-egress as OpenShift writes it: every TCP port.
#[test]
fn no_default_deny_isolates_the_driver_pods_and_all_egress_is_openshifts() {
    let all = load();
    let isolating: Vec<&str> = all
        .iter()
        .filter(|m| m.kind() == "NetworkPolicy" && m.namespace() == Some(DRIVERS_NS))
        .filter(|m| m.obj["spec"]["podSelector"] == serde_json::json!({}))
        .map(|m| m.file.as_str())
        .collect();
    assert!(
        isolating.is_empty(),
        "policies selecting every pod of {DRIVERS_NS}: {isolating:?}"
    );
    for ns in [DRIVERS_NS, CSO_NS] {
        let p = find(&all, "NetworkPolicy", Some(ns), "allow-all-egress");
        assert_eq!(
            p.obj["spec"],
            serde_json::json!({
                "podSelector": {"matchLabels": {"openshift.storage.network-policy.all-egress": "allow"}},
                "egress": [{"ports": [{"protocol": "TCP", "port": 1, "endPort": 65535}]}],
                "policyTypes": ["Egress"],
            }),
            "{ns}"
        );
    }
    // The driver operators carry the label the policy selects.
    for asset in [
        cinder::SPEC.assets.deployment.content,
        manila::SPEC.assets.deployment.content,
    ] {
        assert!(
            asset.contains("openshift.storage.network-policy.all-egress: allow"),
            "a driver operator Deployment lacks the all-egress label"
        );
    }
}

/// The CSO namespace's default-deny comes at run level 90, as OpenShift moved it there
/// ("Apply default-deny NetworkPolicy after operands have restarted"): after the CSO Deployment
/// and the ClusterOperator barrier, and after every component of run level 50, among them the
/// snapshot controller operator whose pods share the namespace. The policies that let the CSO
/// pod out come before its Deployment, and the pod carries the labels they select, so the deny
/// never cuts it off.
#[test]
fn the_cso_namespace_is_denied_after_everything_else_and_the_cso_is_let_out() {
    let all = load();
    let deny = find(&all, "NetworkPolicy", Some(CSO_NS), "default-deny");
    assert_eq!(
        deny.file, "0000_90_cluster-storage-operator_10_network_policy_cso_default_deny.yaml",
        "OpenShift's run level 90 and position (…_10_network-policy-cso-deny-all.yaml)"
    );
    assert_eq!(
        deny.obj["spec"],
        serde_json::json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})
    );
    let last_of_run_level_50 = all
        .iter()
        .filter(|m| m.file.starts_with("0000_50_"))
        .map(|m| m.file.as_str())
        .max()
        .expect("run level 50");
    assert!(deny.file.as_str() > last_of_run_level_50);
    let deployment = find(&all, "Deployment", Some(CSO_NS), "cluster-storage-operator");
    let pod_labels = &deployment.obj["spec"]["template"]["metadata"]["labels"];
    for name in [
        "allow-egress-to-api-server",
        "allow-to-dns",
        "allow-ingress-to-operator-metrics",
    ] {
        let allow = find(&all, "NetworkPolicy", Some(CSO_NS), name);
        assert!(allow.file < deployment.file, "{}", allow.file);
        let selector = allow.obj["spec"]["podSelector"]["matchLabels"]
            .as_object()
            .expect("matchLabels");
        for (k, v) in selector {
            assert_eq!(&pod_labels[k], v, "the CSO pod is not selected by {name}");
        }
    }
}

/// The CSO's ServiceMonitor is OpenShift's (`0000_90_cluster-storage-operator_02_servicemonitor.yaml`:
/// run level 90, every 30 s over HTTPS, the service CA and the Service's name verified,
/// EndpointSlice discovery, which the `prometheus` Role allows) but for how Prometheus
/// authenticates: its service account token, not the monitoring client certificate, because
/// our metrics endpoint authenticates scrapers by TokenReview only (compatibility C27).
#[test]
fn the_service_monitor_is_openshifts_but_for_the_scrapers_credential() {
    let all = load();
    let sm = find(
        &all,
        "ServiceMonitor",
        Some(CSO_NS),
        "cluster-storage-operator",
    );
    assert_eq!(
        sm.file,
        "0000_90_cluster-storage-operator_02_servicemonitor.yaml"
    );
    let mut spec = sm.obj["spec"].clone();
    let endpoint = spec["endpoints"][0].as_object_mut().expect("one endpoint");
    assert_eq!(
        endpoint.remove("bearerTokenFile"),
        Some(serde_json::json!(
            "/var/run/secrets/kubernetes.io/serviceaccount/token"
        ))
    );
    // OpenShift's, with its client certificate and key taken out.
    assert_eq!(
        spec,
        serde_json::json!({
            "endpoints": [{
                "interval": "30s",
                "path": "/metrics",
                "port": "https",
                "scheme": "https",
                "tlsConfig": {
                    "caFile": "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt",
                    "serverName": "cluster-storage-operator-metrics.openshift-cluster-storage-operator.svc",
                },
            }],
            "jobLabel": "component",
            "selector": {"matchLabels": {"app": "cluster-storage-operator-metrics"}},
            "serviceDiscoveryRole": "EndpointSlice",
        })
    );
    let role: Role = typed(find(&all, "Role", Some(CSO_NS), "prometheus"));
    let rules = role.rules.unwrap_or_default();
    for (group, resource) in [
        ("", "services"),
        ("", "endpoints"),
        ("", "pods"),
        ("discovery.k8s.io", "endpointslices"),
    ] {
        for verb in ["get", "list", "watch"] {
            assert!(
                grants(&rules, group, resource, verb),
                "prometheus may not {verb} {group}/{resource}"
            );
        }
    }
    let service = find(
        &all,
        "Service",
        Some(CSO_NS),
        "cluster-storage-operator-metrics",
    );
    assert_eq!(
        service.obj["metadata"]["labels"]["app"],
        "cluster-storage-operator-metrics"
    );
    assert_eq!(service.obj["spec"]["ports"][0]["name"], "https");
}

/// A release retires what an upgrade from the Go operators (or from an earlier version of
/// ours) leaves behind that we renamed or no longer need; nothing retired is also shipped.
#[test]
fn retired_objects_are_the_renamed_and_dropped_ones() {
    let all = load_all();
    let retired: BTreeSet<(String, String, String)> = all
        .iter()
        .filter(|m| m.is_delete())
        .map(|m| {
            (
                m.kind().to_owned(),
                m.namespace().unwrap_or("").to_owned(),
                m.name().to_owned(),
            )
        })
        .collect();
    let want: BTreeSet<(String, String, String)> = [
        // The Go CSO's binding to cluster-admin, replaced by cluster-storage-operator.
        ("ClusterRoleBinding", "", "cluster-storage-operator-role"),
        // Our earlier default-deny among the driver pods.
        ("NetworkPolicy", DRIVERS_NS, "default-deny"),
        // The Go CSO's config file, which our CSO does not read.
        ("ConfigMap", CSO_NS, "cluster-storage-operator-config"),
        // The volume-data-source-validator the Go CSO runs and ours does not (C16); its
        // VolumePopulator CRD stays (populators register there).
        ("Deployment", CSO_NS, "volume-data-source-validator"),
        ("ClusterRoleBinding", "", "volume-data-source-validator"),
        ("ClusterRole", "", "volume-data-source-validator"),
        ("ServiceAccount", CSO_NS, "volume-data-source-validator"),
    ]
    .into_iter()
    .map(|(k, n, x)| (k.to_owned(), n.to_owned(), x.to_owned()))
    .collect();
    // Other retirements (e.g. rights no longer needed) may join these; these must stay.
    let missing: Vec<_> = want.difference(&retired).collect();
    assert!(missing.is_empty(), "not retired: {missing:?}");
    for m in load() {
        let key = (
            m.kind().to_owned(),
            m.namespace().unwrap_or("").to_owned(),
            m.name().to_owned(),
        );
        assert!(!retired.contains(&key), "{}: shipped and retired", m.file);
    }
    let go_binding = find(
        &all,
        "ClusterRoleBinding",
        None,
        "cluster-storage-operator-role",
    );
    assert_eq!(go_binding.obj["roleRef"]["name"], "cluster-admin");
    // Retired after the ClusterOperator manifest, which the cluster version operator passes only
    // once our CSO reports the release's version: the Go CSO, which would recreate its
    // validator and keeps its rights until then, is gone.
    let cluster_operator = find(&all, "ClusterOperator", None, "storage");
    for m in all.iter().filter(|m| {
        m.is_delete()
            && (m.name() == "cluster-storage-operator-role"
                || m.name() == "volume-data-source-validator")
    }) {
        assert!(m.file > cluster_operator.file, "{}", m.file);
    }
}

/// Versions are the release tooling's placeholder, replaced by the release version when a
/// release is cut (release.rs substitutes them).
#[test]
fn versions_are_the_release_placeholder() {
    let all = load();
    let d = find(&all, "Deployment", Some(CSO_NS), "cluster-storage-operator");
    let env = d.obj["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .expect("env");
    for name in ["OPERATOR_IMAGE_VERSION", "OPERAND_IMAGE_VERSION"] {
        let v = env.iter().find(|e| e["name"] == name).expect(name);
        assert_eq!(v["value"], "0.0.1-snapshot", "{name}");
    }
    let co = find(&all, "ClusterOperator", None, "storage");
    assert_eq!(
        co.obj["status"]["versions"],
        serde_json::json!([{"name": "operator", "version": "0.0.1-snapshot"}])
    );
}

/// The storage alerts of OpenShift's CSO, under the same object name so that an upgrade
/// updates the Go operator's object instead of doubling every alert.
#[test]
fn prometheus_rules_ship_openshifts_storage_alerts() {
    let all = load();
    let rule = find(&all, "PrometheusRule", Some(CSO_NS), "prometheus");
    assert_eq!(rule.obj["metadata"]["labels"]["role"], "alert-rules");
    let mut alerts: Vec<(String, String, String)> = Vec::new();
    let mut records = BTreeSet::new();
    for g in rule.obj["spec"]["groups"].as_array().expect("groups") {
        for r in g["rules"].as_array().expect("rules") {
            assert!(
                r["expr"].as_str().is_some_and(|e| !e.trim().is_empty()),
                "{r}"
            );
            if let Some(a) = r["alert"].as_str() {
                alerts.push((
                    a.to_owned(),
                    r["labels"]["severity"].as_str().unwrap_or("").to_owned(),
                    r["for"].as_str().unwrap_or("").to_owned(),
                ));
                assert!(r["annotations"]["summary"].is_string(), "{a}: summary");
                assert!(
                    r["annotations"]["description"].is_string(),
                    "{a}: description"
                );
            }
            if let Some(rec) = r["record"].as_str() {
                records.insert(rec.to_owned());
            }
        }
    }
    let t = |a: &str, s: &str, f: &str| (a.to_owned(), s.to_owned(), f.to_owned());
    assert_eq!(
        alerts,
        [
            t("MultipleDefaultStorageClasses", "warning", "10m"),
            t("VolumeAttributesClassParameterMismatch", "warning", "10m"),
            t("PodStartupStorageOperationsFailing", "info", "5m"),
            t("SELinuxMountGAReadinessWorkloadsDetected", "warning", "10m"),
            t("KubePersistentVolumeFillingUp", "critical", "1m"),
            t("KubePersistentVolumeFillingUp", "warning", "1h"),
            t("KubePersistentVolumeInodesFillingUp", "critical", "1m"),
            t("KubePersistentVolumeInodesFillingUp", "warning", "1h"),
            t("KubePersistentVolumeErrors", "warning", "5m"),
        ]
    );
    assert_eq!(records.len(), 5, "{records:?}");
}

/// The namespace storage-label policy and its binding, as OpenShift names and scopes them.
#[test]
fn the_namespace_label_policy_is_bound_to_namespace_writes() {
    let all = load();
    let policy: ValidatingAdmissionPolicy = typed(find(
        &all,
        "ValidatingAdmissionPolicy",
        None,
        "openshift-storage-policy-validation",
    ));
    let binding: ValidatingAdmissionPolicyBinding = typed(find(
        &all,
        "ValidatingAdmissionPolicyBinding",
        None,
        "openshift-storage-policy-validation-binding",
    ));
    let spec = policy.spec.expect("policy spec");
    assert_eq!(spec.failure_policy.as_deref(), Some("Fail"));
    let validations = spec.validations.unwrap_or_default();
    let text = serde_json::to_string(&validations).expect("json");
    for value in [
        "storage.openshift.io/fsgroup-change-policy",
        "storage.openshift.io/selinux-change-policy",
        "Always",
        "OnRootMismatch",
        "Recursive",
        "MountOption",
    ] {
        assert!(
            text.contains(value)
                || serde_json::to_string(&spec.variables)
                    .unwrap()
                    .contains(value),
            "{value}"
        );
    }
    let b = binding.spec.expect("binding spec");
    assert_eq!(
        b.policy_name.as_deref(),
        Some("openshift-storage-policy-validation")
    );
    assert_eq!(b.validation_actions, Some(vec!["Deny".to_owned()]));
}

// ---- RBAC -------------------------------------------------------------------------------------

/// `(kind, namespace, name, rules)` of a Role or ClusterRole.
type RoleRules = (String, Option<String>, String, Vec<PolicyRule>);

/// Every Role and ClusterRole.
fn roles(all: &[Manifest]) -> Vec<RoleRules> {
    all.iter()
        .filter(|m| m.kind() == "Role" || m.kind() == "ClusterRole")
        .map(|m| {
            let rules = serde_json::from_value::<Vec<PolicyRule>>(m.obj["rules"].clone())
                .unwrap_or_else(|e| panic!("{}: rules: {e}", m.file));
            (
                m.kind().to_owned(),
                m.namespace().map(str::to_owned),
                m.name().to_owned(),
                rules,
            )
        })
        .collect()
}

/// What breaks least privilege in these roles: wildcards anywhere, and Secrets granted
/// cluster-wide or in a namespace other than the two driver namespaces.
fn least_privilege_violations(roles: &[RoleRules]) -> Vec<String> {
    let mut out = Vec::new();
    for (kind, ns, name, rules) in roles {
        for rule in rules {
            let groups = rule.api_groups.iter().flatten();
            let resources = rule.resources.iter().flatten();
            for v in rule.verbs.iter().chain(resources.clone()).chain(groups) {
                if v.contains('*') {
                    out.push(format!("{kind} {name}: wildcard {v:?}"));
                }
            }
            if rule.non_resource_urls.is_some() {
                out.push(format!("{kind} {name}: nonResourceURLs"));
            }
            let core = rule.api_groups.iter().flatten().any(|g| g.is_empty());
            if core && resources.clone().any(|r| r == "secrets") {
                let allowed =
                    kind == "Role" && matches!(ns.as_deref(), Some(DRIVERS_NS) | Some(MANILA_NS));
                if !allowed {
                    out.push(format!("{kind} {ns:?}/{name}: grants Secrets"));
                }
            }
        }
    }
    out
}

#[test]
fn rbac_is_least_privilege() {
    let all = load();
    let v = least_privilege_violations(&roles(&all));
    assert!(v.is_empty(), "{v:#?}");
}

#[test]
fn least_privilege_check_catches_wildcards_and_stray_secrets() {
    let rule = |groups: &[&str], resources: &[&str], verbs: &[&str]| PolicyRule {
        api_groups: Some(groups.iter().map(|s| s.to_string()).collect()),
        resources: Some(resources.iter().map(|s| s.to_string()).collect()),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    let bad = vec![
        (
            "ClusterRole".into(),
            None,
            "a".into(),
            vec![rule(&["apps"], &["deployments"], &["*"])],
        ),
        (
            "ClusterRole".into(),
            None,
            "b".into(),
            vec![rule(&["*"], &["pods"], &["get"])],
        ),
        (
            "ClusterRole".into(),
            None,
            "c".into(),
            vec![rule(&[""], &["*"], &["get"])],
        ),
        (
            "ClusterRole".into(),
            None,
            "d".into(),
            vec![rule(&[""], &["secrets"], &["get"])],
        ),
        (
            "Role".into(),
            Some(CSO_NS.into()),
            "e".into(),
            vec![rule(&[""], &["secrets"], &["get"])],
        ),
    ];
    assert_eq!(least_privilege_violations(&bad).len(), 5);
    let ok = vec![(
        "Role".into(),
        Some(MANILA_NS.into()),
        "f".into(),
        vec![rule(&[""], &["secrets"], &["get"])],
    )];
    assert!(least_privilege_violations(&ok).is_empty());
}

/// Whether some rule of `rules` grants `verb` on `group/resource`.
fn grants(rules: &[PolicyRule], group: &str, resource: &str, verb: &str) -> bool {
    rules.iter().any(|r| {
        r.api_groups.iter().flatten().any(|g| g == group)
            && r.resources.iter().flatten().any(|x| x == resource)
            && r.verbs.iter().any(|v| v == verb)
    })
}

/// `(apiGroup, resource, verb)`.
type Perm = (&'static str, &'static str, &'static str);

#[test]
fn sidecar_roles_grant_what_the_upstream_sidecars_need() {
    let all = load();
    let by_name: BTreeMap<String, Vec<PolicyRule>> = roles(&all)
        .into_iter()
        .filter(|(k, ..)| k == "ClusterRole")
        .map(|(_, _, n, r)| (n, r))
        .collect();
    let need: &[(&str, &[Perm])] = &[
        (
            "openshift-csi-main-attacher-role",
            &[
                ("", "persistentvolumes", "patch"),
                ("storage.k8s.io", "csinodes", "watch"),
                ("storage.k8s.io", "volumeattachments", "patch"),
                ("storage.k8s.io", "volumeattachments/status", "patch"),
            ],
        ),
        (
            "openshift-csi-main-provisioner-role",
            &[
                ("", "persistentvolumes", "create"),
                ("", "persistentvolumes", "delete"),
                ("", "persistentvolumeclaims", "update"),
                ("", "events", "create"),
                ("storage.k8s.io", "storageclasses", "watch"),
                ("storage.k8s.io", "csinodes", "watch"),
                ("", "nodes", "watch"),
            ],
        ),
        (
            "openshift-csi-provisioner-volumesnapshot-reader-role",
            &[
                ("snapshot.storage.k8s.io", "volumesnapshots", "get"),
                ("snapshot.storage.k8s.io", "volumesnapshotcontents", "get"),
            ],
        ),
        (
            "openshift-csi-main-resizer-role",
            &[
                ("", "persistentvolumes", "patch"),
                ("", "persistentvolumeclaims", "watch"),
                ("", "persistentvolumeclaims/status", "patch"),
                ("", "events", "create"),
            ],
        ),
        (
            "openshift-csi-resizer-storageclass-reader-role",
            &[("storage.k8s.io", "storageclasses", "get")],
        ),
        (
            "openshift-csi-main-snapshotter-role",
            &[
                ("snapshot.storage.k8s.io", "volumesnapshotclasses", "watch"),
                (
                    "snapshot.storage.k8s.io",
                    "volumesnapshotcontents",
                    "create",
                ),
                (
                    "snapshot.storage.k8s.io",
                    "volumesnapshotcontents/status",
                    "update",
                ),
                ("", "events", "patch"),
            ],
        ),
    ];
    for (role, perms) in need {
        let rules = by_name
            .get(*role)
            .unwrap_or_else(|| panic!("{role} not shipped"));
        for (g, r, v) in *perms {
            assert!(grants(rules, g, r, v), "{role} must grant {v} on {g}/{r}");
        }
    }
}

/// Every `(group, resource, verb)` a list of rules grants, by expanding it.
fn permissions(rules: &[PolicyRule]) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for r in rules {
        assert!(
            r.resource_names.is_none() && r.non_resource_urls.is_none(),
            "shared sidecar roles grant whole resources"
        );
        for g in r.api_groups.iter().flatten() {
            for x in r.resources.iter().flatten() {
                for v in &r.verbs {
                    out.insert((g.clone(), x.clone(), v.clone()));
                }
            }
        }
    }
    out
}

fn expand(rights: &[(&str, &str, &[&str])]) -> BTreeSet<(String, String, String)> {
    rights
        .iter()
        .flat_map(|(g, r, verbs)| {
            verbs
                .iter()
                .map(move |v| (g.to_string(), r.to_string(), v.to_string()))
        })
        .collect()
}

/// The shared sidecar ClusterRoles against OpenShift's (`openshift/cluster-storage-operator`
/// `manifests/09_sidecar-main_*_role.yaml`, `09_openshift-csi-provisioner-volumesnapshot-reader-role.yaml`,
/// `09_openshift-csi-resizer-storageclass-reader-role.yaml`, restated here as facts): each grants
/// what OpenShift's grants less exactly the rights docs/compatibility.md C26 lists (none of which
/// a sidecar uses, see `sidecar_rbac.rs`), plus exactly the additions C26 lists. A change on either
/// side fails here until the row says so.
#[test]
fn shared_sidecar_roles_differ_from_openshifts_only_as_declared() {
    const READ: &[&str] = &["get", "list", "watch"];
    const EVENTS: &[&str] = &["list", "watch", "create", "update", "patch"];
    type Rights = &'static [(&'static str, &'static str, &'static [&'static str])];
    // (role, OpenShift's rules, removed here, added here)
    let expected: &[(&str, Rights, Rights, Rights)] = &[
        (
            "openshift-csi-main-attacher-role",
            &[
                (
                    "",
                    "persistentvolumes",
                    &["get", "list", "watch", "update", "patch"],
                ),
                ("", "nodes", READ),
                ("storage.k8s.io", "csinodes", READ),
                (
                    "storage.k8s.io",
                    "volumeattachments",
                    &["get", "list", "watch", "update", "patch"],
                ),
                ("storage.k8s.io", "volumeattachments/status", &["patch"]),
            ],
            &[],
            &[],
        ),
        (
            "openshift-csi-main-provisioner-role",
            &[
                (
                    "",
                    "persistentvolumes",
                    &["get", "list", "watch", "create", "delete", "patch"],
                ),
                (
                    "",
                    "persistentvolumeclaims",
                    &["get", "list", "watch", "update"],
                ),
                ("storage.k8s.io", "storageclasses", READ),
                ("", "events", EVENTS),
                ("storage.k8s.io", "csinodes", READ),
                ("", "nodes", READ),
            ],
            &[],
            // OpenShift has these in openshift-csi-provisioner-volumeattachment-reader-role.
            &[("storage.k8s.io", "volumeattachments", READ)],
        ),
        (
            "openshift-csi-main-resizer-role",
            &[
                (
                    "",
                    "persistentvolumes",
                    &["get", "list", "watch", "update", "patch"],
                ),
                ("", "persistentvolumeclaims", READ),
                ("", "persistentvolumeclaims/status", &["update", "patch"]),
                ("", "events", EVENTS),
                ("", "pods", READ),
            ],
            &[],
            &[],
        ),
        (
            "openshift-csi-main-snapshotter-role",
            &[
                ("", "persistentvolumes", READ),
                ("", "persistentvolumeclaims", READ),
                ("storage.k8s.io", "storageclasses", READ),
                ("", "events", EVENTS),
                ("", "secrets", &["get", "list"]),
                ("snapshot.storage.k8s.io", "volumesnapshotclasses", READ),
                (
                    "snapshot.storage.k8s.io",
                    "volumesnapshotcontents",
                    &[
                        "create", "get", "list", "watch", "update", "delete", "patch",
                    ],
                ),
                (
                    "snapshot.storage.k8s.io",
                    "volumesnapshotcontents/status",
                    &["update", "patch"],
                ),
                (
                    "snapshot.storage.k8s.io",
                    "volumesnapshots",
                    &["get", "list", "watch", "update"],
                ),
                (
                    "apiextensions.k8s.io",
                    "customresourcedefinitions",
                    &["create", "list", "watch", "delete"],
                ),
            ],
            &[
                ("", "persistentvolumes", READ),
                ("", "persistentvolumeclaims", READ),
                ("storage.k8s.io", "storageclasses", READ),
                ("", "secrets", &["get", "list"]),
                (
                    "snapshot.storage.k8s.io",
                    "volumesnapshotcontents",
                    &["delete"],
                ),
                (
                    "snapshot.storage.k8s.io",
                    "volumesnapshots",
                    &["get", "list", "watch", "update"],
                ),
                (
                    "apiextensions.k8s.io",
                    "customresourcedefinitions",
                    &["create", "list", "watch", "delete"],
                ),
            ],
            &[],
        ),
        (
            "openshift-csi-provisioner-volumesnapshot-reader-role",
            &[
                (
                    "snapshot.storage.k8s.io",
                    "volumesnapshots",
                    &["get", "list", "watch", "update"],
                ),
                (
                    "snapshot.storage.k8s.io",
                    "volumesnapshotcontents",
                    &["get", "list"],
                ),
            ],
            &[(
                "snapshot.storage.k8s.io",
                "volumesnapshots",
                &["watch", "update"],
            )],
            &[],
        ),
        (
            "openshift-csi-resizer-storageclass-reader-role",
            &[("storage.k8s.io", "storageclasses", READ)],
            &[],
            &[],
        ),
    ];
    let all = load();
    let ours: BTreeMap<String, Vec<PolicyRule>> = roles(&all)
        .into_iter()
        .filter(|(k, ..)| k == "ClusterRole")
        .map(|(_, _, n, r)| (n, r))
        .collect();
    for (name, openshift, removed, added) in expected {
        let rules = ours
            .get(*name)
            .unwrap_or_else(|| panic!("{name} not shipped"));
        let got = permissions(rules);
        let (openshift, removed, added) = (expand(openshift), expand(removed), expand(added));
        assert!(
            removed.is_subset(&openshift),
            "{name}: removes what OpenShift lacks"
        );
        assert!(
            added.is_disjoint(&openshift),
            "{name}: adds what OpenShift has"
        );
        let want: BTreeSet<_> = openshift
            .difference(&removed)
            .cloned()
            .chain(added)
            .collect();
        let missing: Vec<_> = want.difference(&got).collect();
        let extra: Vec<_> = got.difference(&want).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{name}: undeclared differences from OpenShift's role: \
             missing {missing:?}, extra {extra:?}"
        );
    }
}

/// ClusterRole names bound, and cluster-scoped RBAC objects created, by the driver assets.
fn driver_asset_rbac() -> (BTreeSet<String>, BTreeSet<String>, BTreeSet<String>) {
    let mut bound = BTreeSet::new();
    let mut cluster_roles = BTreeSet::new();
    let mut cluster_bindings = BTreeSet::new();
    for crate_name in ["cinder", "manila", "smb"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../{crate_name}/assets"));
        for entry in std::fs::read_dir(&dir).expect("driver assets exist") {
            let path = entry.expect("entry").path();
            if !path.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("readable asset");
            let file = path.display().to_string();
            for doc in operator_kit::assets::parse_values(&file, &text).expect("asset parses") {
                let name = doc["metadata"]["name"].as_str().unwrap_or("").to_owned();
                match doc["kind"].as_str() {
                    Some("ClusterRole") => {
                        cluster_roles.insert(name);
                    }
                    Some("ClusterRoleBinding") => {
                        cluster_bindings.insert(name);
                        if let Some(r) = doc["roleRef"]["name"].as_str() {
                            bound.insert(r.to_owned());
                        }
                    }
                    Some("RoleBinding") if doc["roleRef"]["kind"] == "ClusterRole" => {
                        if let Some(r) = doc["roleRef"]["name"].as_str() {
                            bound.insert(r.to_owned());
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    (bound, cluster_roles, cluster_bindings)
}

#[test]
fn every_shared_role_the_drivers_bind_is_shipped_and_bindable() {
    let all = load();
    let (bound, cluster_roles, cluster_bindings) = driver_asset_rbac();
    let union = roles(&all)
        .into_iter()
        .find(|(_, _, n, _)| n == "csi-driver-operator-union-role")
        .expect("union role")
        .3;
    let named = |resource: &str, verb: &str| -> BTreeSet<String> {
        union
            .iter()
            .filter(|r| {
                r.resources.iter().flatten().any(|x| x == resource)
                    && r.verbs.iter().any(|v| v == verb)
            })
            .flat_map(|r| r.resource_names.iter().flatten().cloned())
            .collect()
    };
    let bindable = named("clusterroles", "bind");
    for role in bound.iter().filter(|r| r.starts_with("openshift-csi-")) {
        assert!(
            all.iter()
                .any(|m| m.kind() == "ClusterRole" && m.name() == role),
            "driver assets bind {role}, which the manifests do not ship"
        );
        assert!(bindable.contains(role), "union role lacks bind on {role}");
    }
    // The driver operators may keep their own cluster-scoped RBAC in shape (update/delete are
    // limited by name, so a renamed asset would silently lose that right).
    let updatable_roles = named("clusterroles", "update");
    for r in &cluster_roles {
        assert!(
            updatable_roles.contains(r),
            "union role cannot update ClusterRole {r}"
        );
    }
    let updatable_bindings = named("clusterrolebindings", "update");
    for b in &cluster_bindings {
        assert!(
            updatable_bindings.contains(b),
            "union role cannot update ClusterRoleBinding {b}"
        );
    }
}

// ---- Apply to kube-sim ------------------------------------------------------------------------

fn api_for(client: &kube::Client, m: &Manifest) -> Api<DynamicObject> {
    let (api_version, plural, namespaced) = known_kinds()[m.kind()];
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, m.kind()), plural);
    match (namespaced, m.namespace()) {
        (true, Some(ns)) => Api::namespaced_with(client.clone(), ns, &ar),
        _ => Api::all_with(client.clone(), &ar),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn applying_every_manifest_in_order_succeeds() {
    let bed = testbed::Testbed::start(testbed::Settings::default())
        .await
        .expect("testbed starts");
    // The cloud credential operator's namespace is the CCO's manifest, not ours.
    let namespaces: Api<Namespace> = Api::all(bed.client.clone());
    let cco: Namespace = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CCO_NS}}))
    .expect("namespace");
    namespaces
        .create(&PostParams::default(), &cco)
        .await
        .expect("CCO namespace");

    let all = load();
    for m in &all {
        let api = api_for(&bed.client, m);
        let obj: DynamicObject = serde_json::from_value(m.obj.clone()).expect("dynamic object");
        match api.create(&PostParams::default(), &obj).await {
            Ok(_) => {}
            // The testbed (like an installer) made some namespaces already; the CVO skips them.
            Err(kube::Error::Api(e)) if e.code == 409 && m.kind() == "Namespace" => {}
            Err(e) => panic!("{}: apply failed: {e}", m.file),
        }
    }
    for m in &all {
        let got = api_for(&bed.client, m)
            .get(m.name())
            .await
            .unwrap_or_else(|e| panic!("{}: not readable after apply: {e}", m.file));
        if m.kind() == "Storage" {
            assert_eq!(got.data["spec"]["managementState"], "Managed");
        }
    }
}

/// HyperShift's guest: its CVO runs the `ibm-cloud-managed` profile on the payload without
/// the file HyperShift removes (`manifestsToOmit`), so the guest gets the namespaces, RBAC,
/// Storage, ClusterOperator and policies but no CSO Deployment and no CredentialsRequest; the
/// testbed's CVO stand-in skips what the profile excludes, as the real one does. (With the IBM
/// Cloud Deployment under another file name, HyperShift would not remove it and the guest
/// would run a CSO: this test then fails at "no CSO runs in the guest".)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hypershifts_guest_cvo_applies_no_cso_and_no_credentials_request() {
    let bed = testbed::Testbed::start(testbed::Settings::default())
        .await
        .expect("testbed starts");
    testbed::cco::create_namespace(&bed.client)
        .await
        .expect("the CCO namespace");
    let omitted = "0000_50_cluster-storage-operator_10_deployment-ibm-cloud-managed.yaml";
    let payload: Vec<testbed::cvo::Manifest> = testbed::cvo::load_payload(&manifest_dir())
        .expect("loads")
        .into_iter()
        .filter(|m| m.file != omitted)
        .collect();
    let options = testbed::cvo::Options {
        profile: "ibm-cloud-managed".to_owned(),
        barrier: testbed::cvo::Barrier::None,
        ..Default::default()
    };
    let report = testbed::cvo::apply_with(&bed.client, &payload, &options)
        .await
        .expect("the guest's payload applies");
    let skipped = report.files(&[testbed::cvo::Action::Skipped]);
    let want_skipped: Vec<String> = payload
        .iter()
        .filter(|m| {
            m.object["kind"] == "CredentialsRequest"
                || m.file.ends_with("_10_deployment.yaml")
                || m.file
                    .ends_with("_90_retire_01_network_policy_csi-drivers_default_deny.yaml")
        })
        .map(|m| m.file.clone())
        .collect();
    assert_eq!(skipped, want_skipped);
    let deployments: Api<Deployment> = Api::namespaced(bed.client.clone(), CSO_NS);
    assert!(
        deployments
            .get_opt("cluster-storage-operator")
            .await
            .expect("get")
            .is_none(),
        "no CSO runs in the guest"
    );
    let storage = kube::Api::<DynamicObject>::all_with(
        bed.client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("operator.openshift.io", "v1", "Storage"),
            "storages",
        ),
    );
    assert!(storage.get_opt("cluster").await.expect("get").is_some());
    // The same payload on a standalone cluster gets its CSO.
    let standalone = testbed::cvo::Options {
        barrier: testbed::cvo::Barrier::None,
        ..Default::default()
    };
    testbed::cvo::apply_with(&bed.client, &payload, &standalone)
        .await
        .expect("the standalone payload applies");
    assert!(
        deployments
            .get_opt("cluster-storage-operator")
            .await
            .expect("get")
            .is_some()
    );
}

/// The CSO may watch, read, create and update every object it applies for the driver
/// operators, and may grant every Role and ClusterRole among them (an API server's escalation
/// check: one grants only what one holds, or with `bind`). Checked statically with kube-sim's
/// RBAC evaluator; `chain_e2e.rs` checks the same dynamically.
#[test]
fn the_cso_may_watch_apply_and_grant_every_object_it_applies() {
    use cluster_storage::registry::{CSI_OPERATOR_NAMESPACE, DRIVERS};
    use kube_sim::rbac::{self, Attributes, Decision, PolicyRule as Rule, StaticPolicy, UserInfo};

    let all = load();
    let policy = StaticPolicy::new(all.iter().map(|m| m.obj.clone()));
    let cso = UserInfo::resolve(
        &format!("system:serviceaccount:{CSO_NS}:cluster-storage-operator"),
        &kube_sim::RbacConfig::default(),
    );
    let deployment: Deployment = typed(find(
        &all,
        "Deployment",
        Some(CSO_NS),
        "cluster-storage-operator",
    ));
    let env: BTreeMap<String, String> = deployment.spec.unwrap().template.spec.unwrap().containers
        [0]
    .env
    .clone()
    .unwrap_or_default()
    .into_iter()
    .filter_map(|e| Some((e.name, e.value?)))
    .collect();
    let inputs = cluster_storage::build::Inputs {
        env,
        ..Default::default()
    };
    let refused = std::cell::RefCell::new(Vec::new());
    let check = |verb: &str, group: &str, resource: &str, ns: &str, name: &str| {
        let attrs = Attributes::resource(cso.clone(), verb, group, resource, ns, name);
        if let Decision::Deny { .. } = rbac::authorize(&policy, &attrs) {
            refused
                .borrow_mut()
                .push(format!("{verb} {group}/{resource} {ns}/{name}"));
        }
    };
    for driver in DRIVERS {
        let objects = cluster_storage::build::operator_objects(driver, &inputs).expect("builds");
        let mut desired = objects.static_desired(driver).expect("desired");
        desired.push(objects.deployment_desired(driver).expect("deployment"));
        for d in &desired {
            let group = d.resource.group.as_str();
            let plural = d.resource.plural.as_str();
            let ns = d.object.metadata.namespace.clone().unwrap_or_default();
            let name = d.object.metadata.name.clone().unwrap_or_default();
            // The watch: the whole namespace the CSO owns, else the object by name.
            let watched = if ns == CSI_OPERATOR_NAMESPACE {
                ""
            } else {
                &name
            };
            for verb in ["list", "watch"] {
                check(verb, group, plural, &ns, watched);
            }
            for verb in ["get", "update"] {
                check(verb, group, plural, &ns, &name);
            }
            check("create", group, plural, &ns, "");
            if d.resource.kind == "Role" || d.resource.kind == "ClusterRole" {
                let rules: Vec<Rule> = d.object.data["rules"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(Rule::from_value)
                    .collect();
                if let Err((message, _)) = rbac::confirm_no_escalation(&policy, &cso, &ns, &rules) {
                    refused
                        .borrow_mut()
                        .push(format!("grant {} {ns}/{name}: {message}", d.resource.kind));
                }
            }
        }
        check(
            "create",
            "operator.openshift.io",
            "clustercsidrivers",
            "",
            "",
        );
        check(
            "get",
            "operator.openshift.io",
            "clustercsidrivers",
            "",
            driver.cluster_csi_driver,
        );
    }
    for verb in ["get", "update"] {
        check(
            verb,
            "operator.openshift.io",
            "storages/status",
            "",
            "cluster",
        );
        check(
            verb,
            "config.openshift.io",
            "clusteroperators/status",
            "",
            "storage",
        );
    }
    let refused = refused.into_inner();
    assert!(
        refused.is_empty(),
        "the CSO may not:\n{}",
        refused.join("\n")
    );
}
