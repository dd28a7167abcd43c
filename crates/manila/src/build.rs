//! The pure half of the Manila operator: from a snapshot of facts to the objects it wants to
//! exist. No client, no I/O — `csi-operator render openstack-manila` prints exactly what this
//! returns, and the operator applies exactly the same.
//!
//! Differences from OpenShift, on purpose (anchors §8.2, §8.3, §5.2):
//! * the trusted CA bundle hook looks for `manila-csi-driver-trusted-ca-bundle` in the driver
//!   namespace, where the ConfigMap is created (OpenShift looked in the operator namespace and
//!   never injected the bundle);
//! * the CSIDriver is built in one place, with `fsGroupPolicy` from `CSI_FSGROUP_POLICY`
//!   (OpenShift had two writers that would fight if the variable was set);
//! * the controller and node pods carry the hash of `manila-cloud-credentials`, so a rotation
//!   rolls them (OpenShift had no hash for it).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::ObjectMeta;
use operator_kit::csi::Mounts;
use operator_kit::desired;
use operator_kit::kinds;

use crate::assets::{
    Asset, CONTROL_PLANE_STATIC, CONTROLLER_DEPLOYMENT, CSI_DRIVER, GUEST_STATIC, NFS_DAEMONSET,
    NODE_DAEMONSET, VOLUME_SNAPSHOT_CLASS,
};
use crate::{
    CLOUD_PROVIDER_CONFIGMAP, CSI_DRIVER_NAME, CSI_SECRET, DRIVER_CREDENTIALS_SECRET,
    METRICS_SERVING_CERT_SECRET, TRUSTED_CA_BUNDLE_CONFIGMAP,
};

/// What only Manila's builders need, beside the kit's facts.
#[derive(Debug, Clone, Default)]
pub struct DriverFacts {
    /// The CSIDriver's `fsGroupPolicy`.
    pub fs_group_policy: FsGroupPolicy,
}

/// Everything the desired objects depend on, gathered by the operator (or given to `render`):
/// operator-kit's facts with Manila's own. Hosted, `namespace` is the control-plane namespace
/// and the controller mounts its CA from `openstack-cloud-config`.
pub type Facts = operator_kit::csi::Facts<DriverFacts>;

/// What the driver's pods mount: the trusted CA bundle, `manila-cloud-credentials` (its hash
/// rolls them) and the metrics serving certificate.
pub const MOUNTS: Mounts = Mounts {
    trusted_ca_bundle: Some(TRUSTED_CA_BUNDLE_CONFIGMAP),
    credentials: Some(DRIVER_CREDENTIALS_SECRET),
    metrics_cert: METRICS_SERVING_CERT_SECRET,
};

/// The CSIDriver `fsGroupPolicy` values Kubernetes accepts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FsGroupPolicy {
    #[default]
    None,
    File,
    ReadWriteOnceWithFSType,
}

impl FsGroupPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            FsGroupPolicy::None => "None",
            FsGroupPolicy::File => "File",
            FsGroupPolicy::ReadWriteOnceWithFSType => "ReadWriteOnceWithFSType",
        }
    }

    /// Parses the `CSI_FSGROUP_POLICY` value; unset or empty is `None` (OpenShift's default).
    pub fn parse(value: Option<&str>) -> Result<Self, FsGroupPolicyError> {
        match value.map(str::trim) {
            None | Some("") | Some("None") => Ok(FsGroupPolicy::None),
            Some("File") => Ok(FsGroupPolicy::File),
            Some("ReadWriteOnceWithFSType") => Ok(FsGroupPolicy::ReadWriteOnceWithFSType),
            Some(other) => Err(FsGroupPolicyError(other.to_string())),
        }
    }
}

/// An unknown `CSI_FSGROUP_POLICY` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "environment variable CSI_FSGROUP_POLICY={0:?} is not a CSIDriver fsGroupPolicy; set it to None, File or ReadWriteOnceWithFSType in the operator Deployment (the CSIDriver keeps its current policy, or None when it is created)"
)]
pub struct FsGroupPolicyError(pub String);

pub use operator_kit::desired::{BuildError, Desired};

fn to_desired(
    asset: &'static str,
    crd: Option<&'static str>,
    value: serde_json::Value,
) -> Result<Desired, BuildError> {
    desired::from_value(asset, crd, value)
}

fn typed_to_desired<T: serde::Serialize>(
    asset: &'static str,
    obj: &T,
) -> Result<Desired, BuildError> {
    desired::from_typed(asset, None, obj)
}

fn render_typed<T: serde::de::DeserializeOwned>(
    asset: &Asset,
    facts: &Facts,
) -> Result<T, BuildError> {
    Ok(asset.render_object(&facts.replacements())?)
}

/// The Namespace asset: the driver namespace, which is the guest's when hosted.
const NAMESPACE_ASSET: &str = "namespace.yaml";
/// The ServiceMonitor asset, absent from the hosted set.
const SERVICE_MONITOR_ASSET: &str = "servicemonitor.yaml";
/// The controller's ServiceAccount asset.
const CONTROLLER_SA_ASSET: &str = "controller_sa.yaml";

/// The static objects of the driver namespace (Namespace first). Hosted: those of the
/// control-plane namespace only (the Namespace is the guest's, see [`guest_static`]; no
/// ServiceMonitor; the controller's ServiceAccount pulls with the plane's pull secret).
pub fn control_plane_static(facts: &Facts) -> Result<Vec<Desired>, BuildError> {
    facts.control_plane_static(
        CONTROL_PLANE_STATIC,
        &[NAMESPACE_ASSET, SERVICE_MONITOR_ASSET],
        CONTROLLER_SA_ASSET,
    )
}

/// RBAC, the node ServiceAccount and the static `csi-manila-secrets`; hosted, the guest's
/// driver Namespace first.
pub fn guest_static(facts: &Facts) -> Result<Vec<Desired>, BuildError> {
    let mut out = Vec::new();
    if facts.hosted.is_some()
        && let Some(asset) = CONTROL_PLANE_STATIC
            .iter()
            .find(|a| a.name == NAMESPACE_ASSET)
    {
        let mut d = facts.render(asset)?;
        d.object.metadata.name = Some(facts.node_namespace().to_string());
        out.push(d);
    }
    for a in GUEST_STATIC {
        out.push(facts.render(a)?);
    }
    Ok(out)
}

/// The CSIDriver with `fsGroupPolicy` from the facts: the only place it is built.
pub fn csi_driver(facts: &Facts) -> Result<Desired, BuildError> {
    let mut d = facts.render(&CSI_DRIVER)?;
    if let Some(spec) = d
        .object
        .data
        .get_mut("spec")
        .and_then(|s| s.as_object_mut())
    {
        spec.insert(
            "fsGroupPolicy".into(),
            facts.driver.fs_group_policy.as_str().into(),
        );
    }
    Ok(d)
}

/// The controller Deployment with its hooks: topology, proxy, replicas, trusted CA bundle
/// (from the driver namespace), then the hashes of the credentials and the metrics cert.
pub fn controller_deployment(facts: &Facts) -> Result<Deployment, BuildError> {
    // Hosted: Go's hypershift asset with its CA rename (anchors §4.8, §5.5).
    facts.controller_deployment(&CONTROLLER_DEPLOYMENT, &MOUNTS, rename_ca_config_map)
}

/// The volume of the controller that mounts the cloud's CA.
const CA_VOLUME: &str = "cacert";

/// Hosted, the controller reads the cloud's CA from `openstack-cloud-config` of the
/// control-plane namespace (`controller_rename_config_map.yaml` of openshift/csi-operator).
fn rename_ca_config_map(d: &mut Deployment) {
    let volumes = d
        .spec
        .as_mut()
        .and_then(|s| s.template.spec.as_mut())
        .and_then(|p| p.volumes.as_mut());
    for v in volumes.into_iter().flatten() {
        if v.name == CA_VOLUME
            && let Some(cm) = v.config_map.as_mut()
        {
            cm.name = operator_kit::hosted::CLOUD_CA_CONFIG_MAP.to_string();
        }
    }
}

/// The Manila node DaemonSet with its hooks: trusted CA bundle, proxy, credentials hash (of
/// the guest namespace's objects).
pub fn node_daemonset(facts: &Facts) -> Result<DaemonSet, BuildError> {
    facts.node_daemonset(&NODE_DAEMONSET, &MOUNTS)
}

/// The NFS node DaemonSet, without hooks (it calls no API).
pub fn nfs_daemonset(facts: &Facts) -> Result<DaemonSet, BuildError> {
    render_typed(&NFS_DAEMONSET, facts)
}

pub fn controller_desired(facts: &Facts) -> Result<Desired, BuildError> {
    typed_to_desired(CONTROLLER_DEPLOYMENT.name, &controller_deployment(facts)?)
}

pub fn node_desired(facts: &Facts) -> Result<Desired, BuildError> {
    typed_to_desired(NODE_DAEMONSET.name, &node_daemonset(facts)?)
}

pub fn nfs_desired(facts: &Facts) -> Result<Desired, BuildError> {
    typed_to_desired(NFS_DAEMONSET.name, &nfs_daemonset(facts)?)
}

/// VolumeSnapshotClass `csi-manila-standard`.
pub fn volume_snapshot_class(facts: &Facts) -> Result<Desired, BuildError> {
    facts.render(&VOLUME_SNAPSHOT_CLASS)
}

/// The StorageClass of one share type (anchors §5.3): `type` is the original share-type name;
/// the secrets point at `csi-manila-secrets` in the driver namespace; Immediate binding (a
/// share is reachable from every node); expansion allowed. No default-class annotation: the
/// admin's choice on the live object is kept by the apply engine.
pub fn storage_class(namespace: &str, name: &str, share_type: &str) -> Result<Desired, BuildError> {
    let mut parameters = BTreeMap::from([("type".to_string(), share_type.to_string())]);
    for secret in [
        "provisioner",
        "node-stage",
        "node-publish",
        "controller-expand",
    ] {
        parameters.insert(
            format!("csi.storage.k8s.io/{secret}-secret-name"),
            CSI_SECRET.to_string(),
        );
        parameters.insert(
            format!("csi.storage.k8s.io/{secret}-secret-namespace"),
            namespace.to_string(),
        );
    }
    let sc = StorageClass {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(BTreeMap::from([(
                crate::SHARE_TYPE_CLASS_LABEL.to_string(),
                "true".to_string(),
            )])),
            ..Default::default()
        },
        provisioner: CSI_DRIVER_NAME.to_string(),
        parameters: Some(parameters),
        reclaim_policy: Some("Delete".into()),
        volume_binding_mode: Some("Immediate".into()),
        allow_volume_expansion: Some(true),
        ..Default::default()
    };
    let mut value = serde_json::to_value(&sc).map_err(|e| BuildError::Kind {
        asset: "storageclass (per share type)",
        source: kinds::KindError::Convert(e.to_string()),
    })?;
    value["apiVersion"] = "storage.k8s.io/v1".into();
    value["kind"] = "StorageClass".into();
    to_desired("storageclass (per share type)", None, value)
}

/// The copy of `openshift-config/cloud-provider-config` in the driver namespace that the pods
/// mount for `ca-bundle.pem` (OpenShift's ResourceSyncController): the whole data, as there.
pub fn cloud_provider_config_copy(
    namespace: &str,
    source: &ConfigMap,
) -> Result<Desired, BuildError> {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(CLOUD_PROVIDER_CONFIGMAP.into()),
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        data: source.data.clone(),
        binary_data: source.binary_data.clone(),
        ..Default::default()
    };
    let mut value = serde_json::to_value(&cm).map_err(|e| BuildError::Kind {
        asset: "cloud-provider-config (synced)",
        source: kinds::KindError::Convert(e.to_string()),
    })?;
    value["apiVersion"] = "v1".into();
    value["kind"] = "ConfigMap".into();
    to_desired("cloud-provider-config (synced)", None, value)
}

/// Every object for these share types, in apply order: for `render`. Share types that get no
/// StorageClass (see [`crate::names`]) are returned as errors beside the objects.
pub fn everything(
    facts: &Facts,
    share_types: &[String],
) -> Result<(Vec<Desired>, Vec<crate::names::NameError>), BuildError> {
    let mut out = control_plane_static(facts)?;
    out.extend(guest_static(facts)?);
    out.push(csi_driver(facts)?);
    out.push(controller_desired(facts)?);
    out.push(node_desired(facts)?);
    out.push(nfs_desired(facts)?);
    out.push(volume_snapshot_class(facts)?);
    let (names, errors) = crate::names::storage_class_names(share_types.iter().map(String::as_str));
    for (name, share_type) in &names {
        out.push(storage_class(facts.node_namespace(), name, share_type)?);
    }
    Ok((out, errors.into_iter().map(|(_, e)| e).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use k8s_openapi::api::core::v1::Secret;
    use operator_kit::csi::BaseFacts;
    use operator_kit::hooks;
    use operator_kit::hosted::Hosted;

    pub(crate) fn facts() -> Facts {
        let base = BaseFacts::example(
            crate::DRIVER_NAMESPACE,
            &crate::assets::ASSETS.image_placeholders(),
        );
        Facts::new(base, DriverFacts::default())
    }

    fn template_annotations<T: hooks::PodWorkload>(w: &mut T) -> BTreeMap<String, String> {
        w.template_mut()
            .metadata
            .as_ref()
            .and_then(|m| m.annotations.clone())
            .unwrap_or_default()
    }

    #[test]
    fn everything_renders_with_two_share_types() {
        let (all, errors) =
            everything(&facts(), &["default".into(), "Gold_Fast".into()]).expect("renders");
        assert!(errors.is_empty());
        for d in &all {
            let text = serde_json::to_string(&d.object).expect("serializes");
            assert!(!text.contains("${"), "{} keeps a placeholder", d.asset);
        }
        let scs: Vec<String> = all
            .iter()
            .filter(|d| d.resource.kind == "StorageClass")
            .filter_map(|d| d.object.metadata.name.clone())
            .collect();
        assert_eq!(scs, ["csi-manila-default", "csi-manila-gold-fast"]);
        assert_eq!(all.len(), 23 + 5 + 2);
    }

    #[test]
    fn storage_class_per_share_type() {
        let d = storage_class(
            "openshift-manila-csi-driver",
            "csi-manila-gold-fast",
            "Gold_Fast",
        )
        .expect("builds");
        let v = serde_json::to_value(&d.object).expect("json");
        assert_eq!(v["provisioner"], "manila.csi.openstack.org");
        assert_eq!(v["volumeBindingMode"], "Immediate");
        assert_eq!(v["reclaimPolicy"], "Delete");
        assert_eq!(v["allowVolumeExpansion"], true);
        assert_eq!(v["parameters"]["type"], "Gold_Fast");
        for s in [
            "provisioner",
            "node-stage",
            "node-publish",
            "controller-expand",
        ] {
            assert_eq!(
                v["parameters"][format!("csi.storage.k8s.io/{s}-secret-name")],
                "csi-manila-secrets"
            );
            assert_eq!(
                v["parameters"][format!("csi.storage.k8s.io/{s}-secret-namespace")],
                "openshift-manila-csi-driver"
            );
        }
        assert_eq!(v["parameters"].as_object().map(|o| o.len()), Some(9));
        assert!(v["metadata"].get("annotations").is_none());
    }

    #[test]
    fn fs_group_policy_from_env() {
        assert_eq!(FsGroupPolicy::parse(None), Ok(FsGroupPolicy::None));
        assert_eq!(FsGroupPolicy::parse(Some("")), Ok(FsGroupPolicy::None));
        assert_eq!(FsGroupPolicy::parse(Some("File")), Ok(FsGroupPolicy::File));
        assert_eq!(
            FsGroupPolicy::parse(Some("ReadWriteOnceWithFSType")),
            Ok(FsGroupPolicy::ReadWriteOnceWithFSType)
        );
        let e = FsGroupPolicy::parse(Some("file")).expect_err("case matters, as in Kubernetes");
        assert!(e.to_string().contains("CSI_FSGROUP_POLICY=\"file\""), "{e}");
        let mut f = facts();
        f.driver.fs_group_policy = FsGroupPolicy::File;
        let d = csi_driver(&f).expect("builds");
        assert_eq!(d.object.data["spec"]["fsGroupPolicy"], "File");
        assert_eq!(d.object.data["spec"]["attachRequired"], false);
    }

    #[test]
    fn credential_rotation_rolls_controller_and_node_pods() {
        let secret = |v: &str| Secret {
            metadata: ObjectMeta {
                name: Some(DRIVER_CREDENTIALS_SECRET.into()),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(
                "clouds.yaml".to_string(),
                ByteString(v.as_bytes().to_vec()),
            )])),
            ..Default::default()
        };
        let key = operator_kit::hash::dependency_annotation_key(
            operator_kit::hash::DependencyKind::Secret,
            crate::DRIVER_NAMESPACE,
            DRIVER_CREDENTIALS_SECRET,
        );
        let mut f = facts();
        f.credentials = Some(secret("one"));
        let mut c1 = controller_deployment(&f).expect("builds");
        let mut n1 = node_daemonset(&f).expect("builds");
        f.credentials = Some(secret("two"));
        let mut c2 = controller_deployment(&f).expect("builds");
        let mut n2 = node_daemonset(&f).expect("builds");
        let (a1, a2) = (template_annotations(&mut c1), template_annotations(&mut c2));
        assert!(a1.contains_key(&key), "{a1:?}");
        assert_ne!(a1.get(&key), a2.get(&key));
        let (b1, b2) = (template_annotations(&mut n1), template_annotations(&mut n2));
        assert!(b1.contains_key(&key), "{b1:?}");
        assert_ne!(b1.get(&key), b2.get(&key));
    }

    #[test]
    fn ca_bundle_is_injected_from_the_driver_namespace() {
        let mut f = facts();
        f.trusted_ca_bundle = Some(ConfigMap {
            metadata: ObjectMeta {
                name: Some(TRUSTED_CA_BUNDLE_CONFIGMAP.into()),
                namespace: Some(crate::DRIVER_NAMESPACE.into()),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(
                "ca-bundle.crt".to_string(),
                "PEM".to_string(),
            )])),
            ..Default::default()
        });
        let mut d = controller_deployment(&f).expect("builds");
        let key = operator_kit::hash::dependency_annotation_key(
            operator_kit::hash::DependencyKind::ConfigMap,
            crate::DRIVER_NAMESPACE,
            TRUSTED_CA_BUNDLE_CONFIGMAP,
        );
        assert!(template_annotations(&mut d).contains_key(&key));
        let pod = d
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .expect("pod");
        assert!(
            pod.volumes
                .iter()
                .flatten()
                .any(|v| v.name == hooks::CA_BUNDLE_VOLUME)
        );
    }

    #[test]
    fn a_missing_nfs_image_is_a_clear_error() {
        let mut f = facts();
        f.images.remove("NFS_DRIVER_IMAGE");
        let err = nfs_daemonset(&f).expect_err("unreplaced placeholder");
        assert!(err.to_string().contains("NFS_DRIVER_IMAGE"), "{err}");
    }

    #[test]
    fn cloud_provider_config_is_copied_whole() {
        let src = ConfigMap {
            data: Some(BTreeMap::from([
                ("config".to_string(), "[Global]".to_string()),
                ("ca-bundle.pem".to_string(), "PEM".to_string()),
            ])),
            ..Default::default()
        };
        let d = cloud_provider_config_copy("openshift-manila-csi-driver", &src).expect("builds");
        assert_eq!(
            d.object.metadata.namespace.as_deref(),
            Some("openshift-manila-csi-driver")
        );
        assert_eq!(d.object.data["data"]["ca-bundle.pem"], "PEM");
    }

    /// The driver settings' kubeletDir reaches every kubelet path of both node DaemonSets
    /// (host paths, mounts, socket addresses, the wait script), and nothing else moves.
    #[test]
    fn the_kubelet_dir_setting_moves_every_kubelet_path_of_both_node_plugins() {
        let settings =
            operator_kit::settings::parse("kubeletDir: /var/lib/k0s/kubelet").expect("valid");
        for before in [
            node_desired(&facts()).expect("builds"),
            nfs_desired(&facts()).expect("builds"),
        ] {
            let text = serde_json::to_string(&before.object.data).expect("json");
            assert!(text.contains("/var/lib/kubelet"), "{text}");
            let mut after = before.clone();
            settings.apply_node(&mut after.object);
            let moved = serde_json::to_string(&after.object.data).expect("json");
            assert!(!moved.contains("/var/lib/kubelet"), "{moved}");
            assert_eq!(
                moved.replace("/var/lib/k0s/kubelet", "/var/lib/kubelet"),
                text,
                "only kubelet paths change"
            );
        }
    }

    fn hosted_facts() -> Facts {
        let mut f = facts();
        f.namespace = "clusters-guest".into();
        f.node_namespace = crate::DRIVER_NAMESPACE.into();
        f.images
            .insert("OPERATOR_IMAGE_VERSION".into(), "4.20.0".into());
        f.hosted = Some(Hosted::default());
        f
    }

    /// Anchors §5.5: the hosted set, the guest namespace and the CA rename.
    #[test]
    fn hosted_objects_split_between_the_control_plane_and_the_guest() {
        let f = hosted_facts();
        let cp = control_plane_static(&f).expect("builds");
        let kinds: Vec<&str> = cp.iter().map(|d| d.resource.kind.as_str()).collect();
        assert!(
            !kinds.contains(&"ServiceMonitor") && !kinds.contains(&"Namespace"),
            "{kinds:?}"
        );
        for d in &cp {
            assert_eq!(
                d.object.metadata.namespace.as_deref(),
                Some("clusters-guest")
            );
        }
        let guest = guest_static(&f).expect("builds");
        assert_eq!(guest[0].resource.kind, "Namespace");
        assert_eq!(
            guest[0].object.metadata.name.as_deref(),
            Some(crate::DRIVER_NAMESPACE)
        );
        let d = controller_deployment(&f).expect("builds");
        let pod = d.spec.unwrap().template.spec.unwrap();
        let cacert = pod
            .volumes
            .unwrap()
            .into_iter()
            .find(|v| v.name == "cacert")
            .unwrap();
        assert_eq!(cacert.config_map.unwrap().name, "openstack-cloud-config");
        // The node plugin keeps the guest's synced copy.
        let ds = serde_json::to_string(&node_daemonset(&f).unwrap()).unwrap();
        assert!(ds.contains("cloud-provider-config") && !ds.contains("openstack-cloud-config"));
        let (all, _) = everything(&f, &["gold".into()]).expect("builds");
        let sc = all
            .iter()
            .find(|d| d.resource.kind == "StorageClass")
            .unwrap();
        assert_eq!(
            sc.object.data["parameters"]["csi.storage.k8s.io/provisioner-secret-namespace"],
            crate::DRIVER_NAMESPACE
        );
        // Standalone keeps its Namespace first and its CA ConfigMap name.
        let standalone = control_plane_static(&facts()).expect("builds");
        assert_eq!(standalone[0].resource.kind, "Namespace");
        assert!(
            guest_static(&facts())
                .unwrap()
                .iter()
                .all(|d| d.resource.kind != "Namespace")
        );
    }

    #[test]
    fn hosted_node_plugin_hashes_the_guest_credentials() {
        let mut f = hosted_facts();
        let secret = |v: &str| Secret {
            data: Some(BTreeMap::from([(
                "clouds.yaml".to_string(),
                ByteString(v.as_bytes().to_vec()),
            )])),
            ..Default::default()
        };
        f.credentials = Some(secret("management"));
        f.node_credentials = Some(secret("guest"));
        let key = operator_kit::hash::dependency_annotation_key(
            operator_kit::hash::DependencyKind::Secret,
            crate::DRIVER_NAMESPACE,
            DRIVER_CREDENTIALS_SECRET,
        );
        let mut ds = node_daemonset(&f).expect("builds");
        assert_eq!(
            template_annotations(&mut ds)[&key],
            operator_kit::hash::secret_hash(&secret("guest"))
        );
    }
}
