//! The pure half of the Cinder operator: from a snapshot of facts to the objects it wants to
//! exist. No client, no I/O — `render` prints exactly what this returns, and the operator
//! applies exactly the same.
//!
//! Hooks run in the order of the Go operator (anchors §4.1), because their effects (hash
//! annotations, env order) decide whether switching operators rolls the pods.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::DynamicObject;
use operator_kit::assets::Replacements;
use operator_kit::desired;
use operator_kit::hooks::{self, TopologyMode};
use operator_kit::hosted::Hosted;
use operator_kit::kinds;
use operator_kit::leader_timing::LeaderTiming;
use operator_kit::loglevel::LogLevel;
use operator_kit::observed_config::ServingInfo;
use operator_kit::redact::RedactedSecret;

use crate::assets::{
    Asset, CONTROL_PLANE_STATIC, CONTROLLER_DEPLOYMENT, GUEST_STATIC, NODE_DAEMONSET,
    STORAGE_CLASS, VOLUME_SNAPSHOT_CLASS,
};
use crate::{
    CLOUD_CONF_CONFIGMAP, CREDENTIALS_SECRET, METRICS_SERVING_CERT_SECRET,
    TRUSTED_CA_BUNDLE_CONFIGMAP,
};

/// Everything the desired objects depend on, gathered by the operator (or given to `render`).
/// Its `Debug` shows the Secrets' names and keys only (the credentials and the serving key).
#[derive(Clone, Default)]
pub struct Facts {
    /// The control-plane namespace (standalone: also the node namespace).
    pub namespace: String,
    /// Image env vars (`DRIVER_IMAGE`, …) and `OPERATOR_IMAGE_VERSION`.
    pub images: BTreeMap<String, String>,
    /// Infrastructure `status.infrastructureName`, the driver's `--cluster`.
    pub cluster_id: String,
    pub topology: TopologyMode,
    /// Plain Kubernetes (no Infrastructure object): control-plane placement by Kubernetes'
    /// node role instead of OpenShift's `master` ([`hooks::kubernetes_control_plane`]).
    pub kubernetes: bool,
    /// The ClusterCSIDriver's `spec.logLevel` (operands' verbosity).
    pub log_level: LogLevel,
    /// Observed proxy env (`HTTP_PROXY`, …).
    pub proxy: BTreeMap<String, String>,
    /// Observed TLS settings for kube-rbac-proxy.
    pub serving: ServingInfo,
    /// The live trusted CA bundle ConfigMap (the network operator injects `ca-bundle.crt`).
    pub trusted_ca_bundle: Option<ConfigMap>,
    /// The `cloud-conf` ConfigMap as it will be (its hash rolls the pods).
    pub cloud_conf: Option<ConfigMap>,
    /// The `openstack-cloud-credentials` Secret.
    pub credentials: Option<Secret>,
    /// The metrics serving certificate Secret.
    pub metrics_cert: Option<Secret>,
    /// The namespace of the guest-side objects (`${NODE_NAMESPACE}`: the node DaemonSet, the
    /// node RBAC subjects). Empty means `namespace` (standalone).
    pub node_namespace: String,
    /// Set on a hosted control plane: the controller takes the hypershift shape and hooks, the
    /// control-plane set has no ServiceMonitor, and `cloud-conf` goes to both namespaces.
    pub hosted: Option<Hosted>,
    /// Hosted only: the trusted CA bundle ConfigMap of the guest namespace (the node
    /// DaemonSet's; standalone it is `trusted_ca_bundle`).
    pub node_trusted_ca_bundle: Option<ConfigMap>,
    /// Hosted only: `openstack-cloud-credentials` of the guest namespace (the node
    /// DaemonSet's; standalone it is `credentials`).
    pub node_credentials: Option<Secret>,
}

impl std::fmt::Debug for Facts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Destructured, so a new field cannot be added without deciding how it prints.
        let Facts {
            namespace,
            images,
            cluster_id,
            topology,
            kubernetes,
            log_level,
            proxy,
            serving,
            trusted_ca_bundle,
            cloud_conf,
            credentials,
            metrics_cert,
            node_namespace,
            hosted,
            node_trusted_ca_bundle,
            node_credentials,
        } = self;
        f.debug_struct("Facts")
            .field("namespace", namespace)
            .field("images", images)
            .field("cluster_id", cluster_id)
            .field("topology", topology)
            .field("kubernetes", kubernetes)
            .field("log_level", log_level)
            .field("proxy", proxy)
            .field("serving", serving)
            .field("trusted_ca_bundle", trusted_ca_bundle)
            .field("cloud_conf", cloud_conf)
            .field("credentials", &RedactedSecret(credentials))
            .field("metrics_cert", &RedactedSecret(metrics_cert))
            .field("node_namespace", node_namespace)
            .field("hosted", hosted)
            .field("node_trusted_ca_bundle", node_trusted_ca_bundle)
            .field("node_credentials", &RedactedSecret(node_credentials))
            .finish()
    }
}

pub use operator_kit::desired::{BuildError, Desired};

impl Facts {
    /// The namespace of the guest-side objects: `node_namespace`, or `namespace` when unset.
    pub fn node_namespace(&self) -> &str {
        if self.node_namespace.is_empty() {
            &self.namespace
        } else {
            &self.node_namespace
        }
    }

    /// The node DaemonSet's trusted CA bundle and credentials: the guest namespace's when
    /// hosted, the one namespace's otherwise.
    fn node_inputs(&self) -> (Option<&ConfigMap>, Option<&Secret>) {
        if self.hosted.is_some() {
            (
                self.node_trusted_ca_bundle.as_ref(),
                self.node_credentials.as_ref(),
            )
        } else {
            (self.trusted_ca_bundle.as_ref(), self.credentials.as_ref())
        }
    }

    /// The `${NAME}` replacements every asset gets.
    pub fn replacements(&self) -> Replacements {
        Replacements::new()
            .images_from_env(&self.images)
            .namespaces(&self.namespace, self.node_namespace())
            .cluster_id(&self.cluster_id)
            .log_level(self.log_level)
            // Sidecars always use the HA timings, also on single-replica control planes (§1.5).
            .leader_election(&LeaderTiming::DEFAULT)
            .tls(&self.serving)
    }
}

fn render_static(asset: &Asset, facts: &Facts) -> Result<Desired, BuildError> {
    desired::from_asset(asset, &facts.replacements())
}

/// The static objects of the control plane (ordered roles, bindings, the rest). Hosted: no
/// ServiceMonitor (the hypershift set has none), and the controller's ServiceAccount pulls with
/// the plane's pull secret.
pub fn control_plane_static(facts: &Facts) -> Result<Vec<Desired>, BuildError> {
    let hosted = facts.hosted.is_some();
    CONTROL_PLANE_STATIC
        .iter()
        .filter(|a| !(hosted && a.name == SERVICE_MONITOR_ASSET))
        .map(|a| {
            let mut d = render_static(a, facts)?;
            if hosted && a.name == CONTROLLER_SA_ASSET {
                operator_kit::hosted::hosted_service_account(&mut d.object);
            }
            Ok(d)
        })
        .collect()
}

/// The ServiceMonitor asset, absent from the hosted set.
const SERVICE_MONITOR_ASSET: &str = "servicemonitor.yaml";
/// The controller's ServiceAccount asset.
const CONTROLLER_SA_ASSET: &str = "controller_sa.yaml";

/// The static objects of the guest cluster (CSIDriver, node SA, RBAC).
pub fn guest_static(facts: &Facts) -> Result<Vec<Desired>, BuildError> {
    GUEST_STATIC
        .iter()
        .map(|a| render_static(a, facts))
        .collect()
}

/// The controller Deployment with the hooks of §4.1, in order.
pub fn controller_deployment(facts: &Facts) -> Result<Deployment, BuildError> {
    let repl = facts.replacements();
    let mut d: Deployment = CONTROLLER_DEPLOYMENT.render_object(&repl)?;
    let ns = facts.namespace.as_str();
    if let Some(hosted) = &facts.hosted {
        // Go's hypershift asset, then its hypershift hooks in place of topology, proxy and
        // replicas (anchors §4.8).
        let version = release_version(CONTROLLER_DEPLOYMENT.name, &repl)?;
        operator_kit::hosted::hosted_controller_shape(&mut d, ns, &version);
        operator_kit::hosted::hosted_controller_hooks(&mut d, hosted, &facts.images);
    } else {
        hooks::control_plane_topology(&mut d, &facts.topology);
        if facts.kubernetes {
            hooks::kubernetes_control_plane(&mut d);
        }
        hooks::inject_proxy(&mut d, &facts.proxy);
        hooks::replicas(&mut d, &facts.topology);
    }
    hooks::inject_trusted_ca_bundle(
        &mut d,
        ns,
        TRUSTED_CA_BUNDLE_CONFIGMAP,
        facts.trusted_ca_bundle.as_ref(),
    );
    hooks::configmap_hash_annotation(&mut d, ns, CLOUD_CONF_CONFIGMAP, facts.cloud_conf.as_ref());
    hooks::secret_hash_annotation(&mut d, ns, CREDENTIALS_SECRET, facts.credentials.as_ref());
    hooks::secret_hash_annotation(
        &mut d,
        ns,
        METRICS_SERVING_CERT_SECRET,
        facts.metrics_cert.as_ref(),
    );
    Ok(d)
}

/// The node DaemonSet with the hooks of §4.1, in order.
pub fn node_daemonset(facts: &Facts) -> Result<DaemonSet, BuildError> {
    let mut ds: DaemonSet = NODE_DAEMONSET.render_object(&facts.replacements())?;
    // The guest namespace's inputs (the same namespace when standalone); `cloud-conf` has the
    // same data in both namespaces.
    let ns = facts.node_namespace();
    let (ca_bundle, credentials) = facts.node_inputs();
    hooks::inject_trusted_ca_bundle(&mut ds, ns, TRUSTED_CA_BUNDLE_CONFIGMAP, ca_bundle);
    hooks::inject_proxy(&mut ds, &facts.proxy);
    hooks::configmap_hash_annotation(&mut ds, ns, CLOUD_CONF_CONFIGMAP, facts.cloud_conf.as_ref());
    hooks::secret_hash_annotation(&mut ds, ns, CREDENTIALS_SECRET, credentials);
    Ok(ds)
}

/// `${RELEASE_VERSION}` (the operator's `OPERATOR_IMAGE_VERSION`), or the replacer's error
/// naming the variable to set: a hosted controller carries it as its desired version.
fn release_version(asset: &'static str, repl: &Replacements) -> Result<String, BuildError> {
    Ok(operator_kit::assets::render(
        asset,
        "${RELEASE_VERSION}",
        repl,
    )?)
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

/// StorageClass `standard-csi`; [`set_default_storage_class`] then settles its default-class
/// annotation against the cluster's other classes.
pub fn storage_class(facts: &Facts) -> Result<Desired, BuildError> {
    render_static(&STORAGE_CLASS, facts)
}

pub use operator_kit::class_names::DEFAULT_CLASS_ANNOTATION;

/// Whether [`set_default_storage_class`] needs the list of every StorageClass: only when the
/// desired class asks to be default and the live class of its name is missing or carries no
/// default-class key (otherwise the live value is kept, whatever the other classes say).
pub fn default_class_needs_list(desired: &DynamicObject, live: Option<&DynamicObject>) -> bool {
    let asks = annotation(desired, DEFAULT_CLASS_ANNOTATION).is_some_and(|v| !v.is_empty());
    asks && live.is_none_or(|l| annotation(l, DEFAULT_CLASS_ANNOTATION).is_none())
}

/// library-go's `SetDefaultStorageClass` (anchors §1.12), so that the operator never makes a
/// second default StorageClass: when `desired` asks to be default, the live class of its name
/// keeps its default-class value (any value, `""` included), and when that class is missing or
/// has no such key while another class is already default, `desired` says `"false"`.
pub fn set_default_storage_class(desired: &mut DynamicObject, existing: &[DynamicObject]) {
    if annotation(desired, DEFAULT_CLASS_ANNOTATION).is_none_or(str::is_empty) {
        return;
    }
    let name = desired.metadata.name.clone().unwrap_or_default();
    let other_defaults = existing
        .iter()
        .filter(|sc| sc.metadata.name.as_deref() != Some(name.as_str()))
        .filter(|sc| annotation(sc, DEFAULT_CLASS_ANNOTATION) == Some("true"))
        .count();
    let same = existing
        .iter()
        .find(|sc| sc.metadata.name.as_deref() == Some(name.as_str()));
    let kept = same.and_then(|sc| annotation(sc, DEFAULT_CLASS_ANNOTATION));
    let value = match kept {
        Some(v) => v.to_string(),
        None if other_defaults > 0 => "false".to_string(),
        None => return,
    };
    desired
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(DEFAULT_CLASS_ANNOTATION.to_string(), value);
}

fn annotation<'a>(obj: &'a DynamicObject, key: &str) -> Option<&'a str> {
    obj.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// VolumeSnapshotClass `standard-csi`.
pub fn volume_snapshot_class(facts: &Facts) -> Result<Desired, BuildError> {
    render_static(&VOLUME_SNAPSHOT_CLASS, facts)
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
    if let Some(cm) = &facts.cloud_conf {
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

    fn class(name: &str, default: Option<&str>) -> DynamicObject {
        let mut v = serde_json::json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name}, "provisioner": "p"});
        if let Some(d) = default {
            v["metadata"]["annotations"] = serde_json::json!({DEFAULT_CLASS_ANNOTATION: d});
        }
        serde_json::from_value(v).expect("a StorageClass")
    }

    fn default_of(obj: &DynamicObject) -> Option<&str> {
        annotation(obj, DEFAULT_CLASS_ANNOTATION)
    }

    /// Anchors §1.12: never a second default; the admin's value on our class always wins.
    #[test]
    fn default_class_follows_library_go() {
        let ours = || class("standard-csi", Some("true"));
        // Nothing else is default: we are.
        let mut d = ours();
        set_default_storage_class(&mut d, &[class("other", Some("false"))]);
        assert_eq!(default_of(&d), Some("true"));
        // Another class is default and ours does not exist yet: "false".
        let mut d = ours();
        set_default_storage_class(&mut d, &[class("gp-ssd", Some("true"))]);
        assert_eq!(default_of(&d), Some("false"));
        // Ours exists without the key while another is default: "false".
        let mut d = ours();
        set_default_storage_class(
            &mut d,
            &[class("gp-ssd", Some("true")), class("standard-csi", None)],
        );
        assert_eq!(default_of(&d), Some("false"));
        // Ours exists with a value: it is kept, even "" and even "true" beside another default.
        for kept in ["", "false", "true"] {
            let mut d = ours();
            set_default_storage_class(
                &mut d,
                &[
                    class("gp-ssd", Some("true")),
                    class("standard-csi", Some(kept)),
                ],
            );
            assert_eq!(default_of(&d), Some(kept));
        }
        // Ours being default does not count as "another" default.
        let mut d = ours();
        set_default_storage_class(&mut d, &[class("standard-csi", Some("true"))]);
        assert_eq!(default_of(&d), Some("true"));
        // A class that does not ask to be default is left alone.
        let mut d = class("x", None);
        set_default_storage_class(&mut d, &[class("gp-ssd", Some("true"))]);
        assert_eq!(default_of(&d), None);
    }

    #[test]
    fn the_class_list_is_read_only_when_it_can_change_the_answer() {
        let d = class("standard-csi", Some("true"));
        assert!(default_class_needs_list(&d, None));
        assert!(default_class_needs_list(
            &d,
            Some(&class("standard-csi", None))
        ));
        assert!(!default_class_needs_list(
            &d,
            Some(&class("standard-csi", Some("false")))
        ));
        assert!(!default_class_needs_list(&class("x", None), None));
    }
    use k8s_openapi::ByteString;
    use kube::api::ObjectMeta;

    pub(crate) fn facts() -> Facts {
        let images = crate::assets::image_placeholders()
            .into_iter()
            .map(|name| {
                (
                    name.to_string(),
                    format!("registry.example/{}:1", name.to_lowercase()),
                )
            })
            .collect();
        Facts {
            namespace: crate::DEFAULT_NAMESPACE.into(),
            images,
            cluster_id: "mycluster-x7k2p".into(),
            topology: TopologyMode::HighlyAvailable,
            serving: ServingInfo::intermediate(),
            ..Facts::default()
        }
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

    #[test]
    fn debug_shows_secret_names_and_keys_never_values() {
        let planted = "pl4nted-s3cret-value";
        let secret = |name: &str, key: &str| Secret {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                // kubectl's copy of the whole object, values included.
                annotations: Some(BTreeMap::from([(
                    "kubectl.kubernetes.io/last-applied-configuration".to_string(),
                    format!("{{\"stringData\":{{\"{key}\":\"{planted}\"}}}}"),
                )])),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(
                key.to_string(),
                ByteString(format!("password: {planted}").into_bytes()),
            )])),
            string_data: Some(BTreeMap::from([("extra".to_string(), planted.to_string())])),
            ..Default::default()
        };
        let mut f = facts();
        f.credentials = Some(secret(CREDENTIALS_SECRET, "clouds.yaml"));
        f.metrics_cert = Some(secret(crate::METRICS_SERVING_CERT_SECRET, "tls.key"));
        // The planted value as text and as the byte list `ByteString`'s own Debug would print.
        let bytes = format!("{:?}", planted.as_bytes());
        let bytes = bytes.trim_matches(|c| c == '[' || c == ']');
        for printed in [format!("{f:?}"), format!("{f:#?}")] {
            assert!(!printed.contains(planted), "{printed}");
            assert!(!printed.contains(bytes), "{printed}");
            for shown in [
                CREDENTIALS_SECRET,
                "clouds.yaml",
                "tls.key",
                "extra",
                "<redacted>",
            ] {
                assert!(printed.contains(shown), "{shown} missing from {printed}");
            }
        }
        // The rest still prints.
        assert!(format!("{f:?}").contains("mycluster-x7k2p"));
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
