//! The pure half of the Cinder operator: from a snapshot of facts to the objects it wants to
//! exist. No client, no I/O — `render` prints exactly what this returns, and the operator
//! applies exactly the same.
//!
//! Hooks run in the order of the Go operator (anchors §4.1), because their effects (hash
//! annotations, env order) decide whether switching operators rolls the pods.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::ConfigMap;
use operator_kit::csi::Mounts;
use operator_kit::desired;
use operator_kit::hooks;
use operator_kit::kinds;

use crate::assets::{
    CONTROL_PLANE_STATIC, CONTROLLER_DEPLOYMENT, GUEST_STATIC, NODE_DAEMONSET, STORAGE_CLASS,
    VOLUME_SNAPSHOT_CLASS,
};
use crate::{
    CLOUD_CONF_CONFIGMAP, CREDENTIALS_SECRET, METRICS_SERVING_CERT_SECRET,
    TRUSTED_CA_BUNDLE_CONFIGMAP,
};

/// What only Cinder's builders need, beside the kit's facts.
#[derive(Debug, Clone, Default)]
pub struct DriverFacts {
    /// The `cloud-conf` ConfigMap as it will be (its hash rolls the pods; hosted, it goes to
    /// both namespaces).
    pub cloud_conf: Option<ConfigMap>,
}

/// Everything the desired objects depend on, gathered by the operator (or given to `render`):
/// operator-kit's facts with Cinder's own.
pub type Facts = operator_kit::csi::Facts<DriverFacts>;

/// What the driver's pods mount: the trusted CA bundle, `openstack-cloud-credentials` and the
/// metrics serving certificate.
pub const MOUNTS: Mounts = Mounts {
    trusted_ca_bundle: Some(TRUSTED_CA_BUNDLE_CONFIGMAP),
    credentials: Some(CREDENTIALS_SECRET),
    metrics_cert: METRICS_SERVING_CERT_SECRET,
};

pub use operator_kit::desired::{BuildError, Desired};

/// The static objects of the control plane (ordered roles, bindings, the rest). Hosted: no
/// ServiceMonitor (the hypershift set has none), and the controller's ServiceAccount pulls with
/// the plane's pull secret.
pub fn control_plane_static(facts: &Facts) -> Result<Vec<Desired>, BuildError> {
    facts.control_plane_static(
        CONTROL_PLANE_STATIC,
        &[SERVICE_MONITOR_ASSET],
        CONTROLLER_SA_ASSET,
    )
}

/// The ServiceMonitor asset, absent from the hosted set.
const SERVICE_MONITOR_ASSET: &str = "servicemonitor.yaml";
/// The controller's ServiceAccount asset.
const CONTROLLER_SA_ASSET: &str = "controller_sa.yaml";

/// The static objects of the guest cluster (CSIDriver, node SA, RBAC).
pub fn guest_static(facts: &Facts) -> Result<Vec<Desired>, BuildError> {
    GUEST_STATIC.iter().map(|a| facts.render(a)).collect()
}

/// The controller Deployment with the hooks of §4.1, in order (operator-kit's), and the hash
/// of `cloud-conf`.
pub fn controller_deployment(facts: &Facts) -> Result<Deployment, BuildError> {
    let mut d = facts.controller_deployment(&CONTROLLER_DEPLOYMENT, &MOUNTS, |_| {})?;
    let cloud_conf = facts.driver.cloud_conf.as_ref();
    hooks::configmap_hash_annotation(&mut d, &facts.namespace, CLOUD_CONF_CONFIGMAP, cloud_conf);
    Ok(d)
}

/// The node DaemonSet with the hooks of §4.1, in order, and the hash of `cloud-conf` (the same
/// data in both namespaces when hosted).
pub fn node_daemonset(facts: &Facts) -> Result<DaemonSet, BuildError> {
    let mut ds = facts.node_daemonset(&NODE_DAEMONSET, &MOUNTS)?;
    let cloud_conf = facts.driver.cloud_conf.as_ref();
    hooks::configmap_hash_annotation(
        &mut ds,
        facts.node_namespace(),
        CLOUD_CONF_CONFIGMAP,
        cloud_conf,
    );
    Ok(ds)
}

/// The controller Deployment in dynamic form.
pub fn controller_desired(facts: &Facts) -> Result<Desired, BuildError> {
    desired::from_typed(
        CONTROLLER_DEPLOYMENT.name,
        None,
        &controller_deployment(facts)?,
    )
}

/// The node DaemonSet in dynamic form.
pub fn node_desired(facts: &Facts) -> Result<Desired, BuildError> {
    desired::from_typed(NODE_DAEMONSET.name, None, &node_daemonset(facts)?)
}

/// StorageClass `standard-csi`; the kit's default-class step settles its default-class
/// annotation against the cluster's other classes (`operator_kit::csi::default_class`).
pub fn storage_class(facts: &Facts) -> Result<Desired, BuildError> {
    facts.render(&STORAGE_CLASS)
}

pub use operator_kit::class_names::DEFAULT_CLASS_ANNOTATION;

/// VolumeSnapshotClass `standard-csi`.
pub fn volume_snapshot_class(facts: &Facts) -> Result<Desired, BuildError> {
    facts.render(&VOLUME_SNAPSHOT_CLASS)
}

/// The `cloud-conf` ConfigMap in dynamic form.
pub fn cloud_conf_desired(cm: &ConfigMap) -> Result<Desired, BuildError> {
    let mut value = serde_json::to_value(cm).map_err(|e| BuildError::Kind {
        asset: "cloud-conf (generated)",
        source: kinds::KindError::Convert(e.to_string()),
    })?;
    // Typed ConfigMaps serialize without apiVersion/kind; the apply engine needs them.
    value["apiVersion"] = "v1".into();
    value["kind"] = "ConfigMap".into();
    desired::from_value("cloud-conf (generated)", None, value)
}

/// The `cloud-conf` ConfigMaps config sync writes: in the control-plane namespace and, hosted,
/// the same data in the guest namespace, where the node DaemonSet mounts it (anchors §4.5).
pub fn cloud_conf_copies(facts: &Facts, cm: &ConfigMap) -> Result<Vec<Desired>, BuildError> {
    let mut namespaces = vec![facts.namespace.as_str()];
    if facts.hosted.is_some() && facts.node_namespace() != facts.namespace {
        namespaces.push(facts.node_namespace());
    }
    namespaces
        .into_iter()
        .map(|ns| {
            let mut copy = cm.clone();
            copy.metadata.namespace = Some(ns.to_string());
            cloud_conf_desired(&copy)
        })
        .collect()
}

/// Every object, in the order the operator applies them: for `render`.
pub fn everything(facts: &Facts) -> Result<Vec<Desired>, BuildError> {
    let mut out = Vec::new();
    if let Some(cm) = &facts.driver.cloud_conf {
        out.extend(cloud_conf_copies(facts, cm)?);
    }
    out.extend(control_plane_static(facts)?);
    out.extend(guest_static(facts)?);
    out.push(controller_desired(facts)?);
    out.push(node_desired(facts)?);
    out.push(storage_class(facts)?);
    out.push(volume_snapshot_class(facts)?);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    use k8s_openapi::ByteString;
    use k8s_openapi::api::core::v1::Secret;
    use kube::api::ObjectMeta;
    use operator_kit::csi::BaseFacts;
    use operator_kit::hooks::TopologyMode;
    use operator_kit::hosted::Hosted;
    use std::collections::BTreeMap;

    pub(crate) fn facts() -> Facts {
        let base = BaseFacts::example(
            crate::DEFAULT_NAMESPACE,
            &crate::assets::ASSETS.image_placeholders(),
        );
        Facts::new(base, DriverFacts::default())
    }

    fn env_names(d: &Deployment, container: &str) -> Vec<String> {
        d.spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .and_then(|p| p.containers.iter().find(|c| c.name == container))
            .and_then(|c| c.env.as_ref())
            .map(|e| e.iter().map(|v| v.name.clone()).collect())
            .unwrap_or_default()
    }

    #[test]
    fn everything_renders_with_every_placeholder_replaced() {
        let all = everything(&facts()).expect("renders");
        assert!(all.len() > 20, "{} objects", all.len());
        for d in &all {
            let text = serde_json::to_string(&d.object).expect("serializes");
            assert!(!text.contains("${"), "{} still has a placeholder", d.asset);
        }
        let d = controller_deployment(&facts()).expect("builds");
        let args = d
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .map(|p| p.containers[0].args.clone().unwrap_or_default())
            .unwrap_or_default();
        assert!(
            args.iter().any(|a| a == "--cluster=mycluster-x7k2p"),
            "{args:?}"
        );
        assert!(args.iter().any(|a| a == "--v=2"));
    }

    #[test]
    fn a_missing_image_is_a_clear_error() {
        let mut f = facts();
        f.images.remove("DRIVER_IMAGE");
        let err = controller_deployment(&f).expect_err("unreplaced placeholder");
        assert!(err.to_string().contains("DRIVER_IMAGE"), "{err}");
    }

    #[test]
    fn topology_decides_replicas_and_placement() {
        let ha = controller_deployment(&facts()).expect("builds");
        assert_eq!(ha.spec.as_ref().and_then(|s| s.replicas), Some(2));
        let mut f = facts();
        f.topology = TopologyMode::parse("SingleReplica");
        let sno = controller_deployment(&f).expect("builds");
        assert_eq!(sno.spec.as_ref().and_then(|s| s.replicas), Some(1));
        f.topology = TopologyMode::parse("External");
        let ext = controller_deployment(&f).expect("builds");
        let selector = ext
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .and_then(|p| p.node_selector.clone())
            .unwrap_or_default();
        assert!(
            selector.is_empty(),
            "External clears the nodeSelector: {selector:?}"
        );
    }

    #[test]
    fn proxy_and_ca_bundle_reach_the_driver_container_only() {
        let mut f = facts();
        f.proxy = BTreeMap::from([("HTTPS_PROXY".to_string(), "http://proxy:3128".to_string())]);
        f.trusted_ca_bundle = Some(ConfigMap {
            metadata: ObjectMeta {
                name: Some(TRUSTED_CA_BUNDLE_CONFIGMAP.into()),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(
                "ca-bundle.crt".to_string(),
                "PEM".to_string(),
            )])),
            ..Default::default()
        });
        let d = controller_deployment(&f).expect("builds");
        assert!(env_names(&d, "csi-driver").contains(&"HTTPS_PROXY".to_string()));
        assert!(!env_names(&d, "csi-provisioner").contains(&"HTTPS_PROXY".to_string()));
        let pod = d
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .expect("pod");
        assert!(pod.volumes.as_ref().is_some_and(|v| {
            v.iter()
                .any(|v| v.name == "non-standard-root-system-trust-ca-bundle")
        }));
    }

    #[test]
    fn credential_rotation_changes_the_pod_template_hash() {
        let mut f = facts();
        let secret = |v: &str| Secret {
            metadata: ObjectMeta {
                name: Some(CREDENTIALS_SECRET.into()),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(
                "clouds.yaml".to_string(),
                ByteString(v.as_bytes().to_vec()),
            )])),
            ..Default::default()
        };
        f.credentials = Some(secret("one"));
        let before = node_daemonset(&f).expect("builds");
        f.credentials = Some(secret("two"));
        let after = node_daemonset(&f).expect("builds");
        let annotations = |ds: &DaemonSet| {
            ds.spec
                .as_ref()
                .and_then(|s| s.template.metadata.as_ref())
                .and_then(|m| m.annotations.clone())
                .unwrap_or_default()
        };
        let key = "operator.openshift.io/dep-4b51488ec5b742a098d092dfe49449df0986e";
        assert!(
            annotations(&before).contains_key(key),
            "{:?}",
            annotations(&before)
        );
        assert_ne!(annotations(&before).get(key), annotations(&after).get(key));
    }

    /// The driver settings' kubeletDir reaches every kubelet path of the real node asset,
    /// and nothing else moves (docs/driver-settings.md).
    #[test]
    fn the_kubelet_dir_setting_moves_every_kubelet_path_of_the_node_plugin() {
        let before = node_desired(&facts()).expect("builds");
        let text = serde_json::to_string(&before.object.data).expect("json");
        assert!(text.matches("/var/lib/kubelet").count() >= 4, "{text}");
        let settings =
            operator_kit::settings::parse("kubeletDir: /var/snap/microk8s/common/var/lib/kubelet")
                .expect("valid");
        let mut after = before.clone();
        settings.apply_node(&mut after.object);
        let moved = serde_json::to_string(&after.object.data).expect("json");
        assert_eq!(
            moved.replace(
                "/var/snap/microk8s/common/var/lib/kubelet",
                "/var/lib/kubelet"
            ),
            text,
            "only kubelet paths change"
        );
        assert!(
            !moved.contains("\"/var/lib/kubelet") && !moved.contains("=/var/lib/kubelet"),
            "{moved}"
        );
        let c = controller_desired(&facts()).expect("builds");
        settings
            .check_containers(&c.object, &[&after.object])
            .expect("no container named");
    }

    fn hosted_facts() -> Facts {
        let mut f = facts();
        f.namespace = "clusters-guest".into();
        f.node_namespace = crate::DEFAULT_NAMESPACE.into();
        f.images
            .insert("OPERATOR_IMAGE_VERSION".into(), "4.20.0".into());
        f.hosted = Some(Hosted {
            control_plane: operator_kit::hosted::HostedControlPlane {
                namespace: "clusters-guest".into(),
                ..Default::default()
            },
            ..Default::default()
        });
        f
    }

    fn secret(name: &str, value: &str) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(
                "clouds.yaml".to_string(),
                ByteString(value.as_bytes().to_vec()),
            )])),
            ..Default::default()
        }
    }

    /// Anchors §4.8: the hosted set and where each object goes.
    #[test]
    fn hosted_objects_split_between_the_control_plane_and_the_guest() {
        let f = hosted_facts();
        let cp = control_plane_static(&f).expect("builds");
        let kinds: Vec<&str> = cp.iter().map(|d| d.resource.kind.as_str()).collect();
        assert!(!kinds.contains(&"ServiceMonitor"), "{kinds:?}");
        for d in &cp {
            assert_eq!(
                d.object.metadata.namespace.as_deref(),
                Some("clusters-guest")
            );
        }
        let sa = cp
            .iter()
            .find(|d| d.resource.kind == "ServiceAccount")
            .expect("controller SA");
        assert_eq!(sa.object.data["imagePullSecrets"][0]["name"], "pull-secret");
        let d = controller_deployment(&f).expect("builds");
        assert_eq!(d.metadata.namespace.as_deref(), Some("clusters-guest"));
        assert_eq!(d.spec.as_ref().unwrap().replicas, Some(1));
        let ds = node_daemonset(&f).expect("builds");
        assert_eq!(
            ds.metadata.namespace.as_deref(),
            Some(crate::DEFAULT_NAMESPACE)
        );
        // Leader election of the sidecars stays in the guest (they act on guest objects).
        let args = serde_json::to_string(&d).unwrap();
        assert!(args.contains("--leader-election-namespace=openshift-cluster-csi-drivers"));
        assert!(args.contains("--kubeconfig=$(KUBECONFIG)"));
        // Standalone shape is untouched by the hosted code.
        let standalone = control_plane_static(&facts()).expect("builds");
        assert!(
            standalone
                .iter()
                .any(|d| d.resource.kind == "ServiceMonitor")
        );
        assert!(
            standalone
                .iter()
                .all(|d| !d.object.data.to_string().contains("pull-secret"))
        );
    }

    /// The controller hashes the control-plane namespace's Secret, the node DaemonSet the
    /// guest's, each under its own namespace's key.
    #[test]
    fn hosted_hashes_follow_each_namespace_inputs() {
        let mut f = hosted_facts();
        f.credentials = Some(secret(CREDENTIALS_SECRET, "management"));
        f.node_credentials = Some(secret(CREDENTIALS_SECRET, "guest"));
        let key = |ns: &str| {
            operator_kit::hash::dependency_annotation_key(
                operator_kit::hash::DependencyKind::Secret,
                ns,
                CREDENTIALS_SECRET,
            )
        };
        let d = controller_deployment(&f).expect("builds");
        let ds = node_daemonset(&f).expect("builds");
        let cp_value = &d.metadata.annotations.as_ref().unwrap()[&key("clusters-guest")];
        let guest_value =
            &ds.metadata.annotations.as_ref().unwrap()[&key(crate::DEFAULT_NAMESPACE)];
        assert_eq!(
            cp_value,
            &operator_kit::hash::secret_hash(f.credentials.as_ref().unwrap())
        );
        assert_eq!(
            guest_value,
            &operator_kit::hash::secret_hash(f.node_credentials.as_ref().unwrap())
        );
        assert_ne!(cp_value, guest_value);
        // Rotating the guest's Secret rolls the node plugins and not the controller.
        f.node_credentials = Some(secret(CREDENTIALS_SECRET, "rotated"));
        assert_eq!(controller_deployment(&f).unwrap(), d);
        assert_ne!(node_daemonset(&f).unwrap(), ds);
    }

    #[test]
    fn hosted_cloud_conf_goes_to_both_namespaces() {
        let f = hosted_facts();
        let cm = crate::config::cloud_conf_configmap("clusters-guest", BTreeMap::new());
        let copies = cloud_conf_copies(&f, &cm).expect("builds");
        let namespaces: Vec<_> = copies
            .iter()
            .map(|d| d.object.metadata.namespace.clone().unwrap())
            .collect();
        assert_eq!(namespaces, ["clusters-guest", crate::DEFAULT_NAMESPACE]);
        assert_eq!(cloud_conf_copies(&facts(), &cm).unwrap().len(), 1);
    }

    #[test]
    fn a_hosted_controller_needs_the_release_version() {
        let mut f = hosted_facts();
        f.images.remove("OPERATOR_IMAGE_VERSION");
        let err = controller_deployment(&f).expect_err("no desired version");
        assert!(err.to_string().contains("OPERATOR_IMAGE_VERSION"), "{err}");
        // Standalone does not need it.
        let mut f = facts();
        f.images.remove("OPERATOR_IMAGE_VERSION");
        controller_deployment(&f).expect("standalone builds");
    }
}
