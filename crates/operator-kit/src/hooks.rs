//! Object hooks: pure functions that adjust a desired Deployment or DaemonSet from snapshot
//! facts (library-go's deployment / DaemonSet hooks, anchors §1.5 and §1.6).
//!
//! Each hook takes the facts it needs as plain arguments (topology, proxy map, the ConfigMap or
//! Secret it depends on, already read from a cache) and mutates the object; none reads the
//! API, the environment or a clock. Drivers call them in the order their anchors give
//! (anchors §4.1 for Cinder). Hooks are idempotent: running one twice gives the same object.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, EnvVar, KeyToPath, PodSpec, PodTemplateSpec,
    Secret, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::hash::{self, DependencyKind};

/// Annotation on the workload listing (comma-separated) the containers that get proxy env vars.
pub const INJECT_PROXY_ANNOTATION: &str = "config.openshift.io/inject-proxy";
/// Annotation listing the containers that get the trusted CA bundle mounted.
pub const INJECT_CA_BUNDLE_ANNOTATION: &str = "config.openshift.io/inject-proxy-cabundle";
/// Name of the CA bundle volume added by [`inject_trusted_ca_bundle`].
pub const CA_BUNDLE_VOLUME: &str = "non-standard-root-system-trust-ca-bundle";
/// Key of the bundle in the trusted-CA ConfigMap (filled in by the cluster network operator).
pub const CA_BUNDLE_KEY: &str = "ca-bundle.crt";
/// File name of the bundle inside the mount.
pub const CA_BUNDLE_PATH: &str = "tls-ca-bundle.pem";
/// Where the system trust store expects extracted PEM bundles.
pub const CA_BUNDLE_MOUNT_PATH: &str = "/etc/pki/ca-trust/extracted/pem";

/// `Infrastructure.status.controlPlaneTopology` (and `infrastructureTopology`) values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TopologyMode {
    /// Several control-plane nodes (the default when unknown).
    #[default]
    HighlyAvailable,
    /// A single control-plane node (SNO).
    SingleReplica,
    /// The control plane runs outside the cluster (HyperShift).
    External,
    /// Two control-plane nodes and an arbiter.
    HighlyAvailableArbiter,
    /// Two-node control plane.
    DualReplica,
    /// A value this version does not know, kept verbatim.
    Other(String),
}

impl TopologyMode {
    /// Reads the API value; `""` (not yet reported) is `HighlyAvailable`, as OpenShift treats it.
    pub fn parse(value: &str) -> TopologyMode {
        match value {
            "" | "HighlyAvailable" => TopologyMode::HighlyAvailable,
            "SingleReplica" => TopologyMode::SingleReplica,
            "External" => TopologyMode::External,
            "HighlyAvailableArbiter" => TopologyMode::HighlyAvailableArbiter,
            "DualReplica" => TopologyMode::DualReplica,
            other => TopologyMode::Other(other.to_owned()),
        }
    }

    /// The API spelling.
    pub fn as_str(&self) -> &str {
        match self {
            TopologyMode::HighlyAvailable => "HighlyAvailable",
            TopologyMode::SingleReplica => "SingleReplica",
            TopologyMode::External => "External",
            TopologyMode::HighlyAvailableArbiter => "HighlyAvailableArbiter",
            TopologyMode::DualReplica => "DualReplica",
            TopologyMode::Other(s) => s,
        }
    }
}

/// A workload with a pod template: Deployment or DaemonSet.
pub trait PodWorkload {
    /// The workload's own metadata.
    fn meta(&self) -> &ObjectMeta;
    /// The workload's own metadata, mutable.
    fn meta_mut(&mut self) -> &mut ObjectMeta;
    /// The pod template (created empty if the spec is absent).
    fn template_mut(&mut self) -> &mut PodTemplateSpec;
}

impl PodWorkload for Deployment {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
    fn template_mut(&mut self) -> &mut PodTemplateSpec {
        &mut self.spec.get_or_insert_with(Default::default).template
    }
}

impl PodWorkload for DaemonSet {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
    fn template_mut(&mut self) -> &mut PodTemplateSpec {
        &mut self.spec.get_or_insert_with(Default::default).template
    }
}

fn pod_spec_mut<W: PodWorkload>(workload: &mut W) -> &mut PodSpec {
    workload
        .template_mut()
        .spec
        .get_or_insert_with(Default::default)
}

/// Container names listed in an annotation of the workload (comma-separated; blanks around
/// names are ignored, empty entries dropped).
fn annotated_containers<W: PodWorkload>(workload: &W, annotation: &str) -> Vec<String> {
    workload
        .meta()
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotation))
        .map(|list| {
            list.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Every container and init container whose name is in `names`.
fn named_containers<'a>(
    spec: &'a mut PodSpec,
    names: &'a [String],
) -> impl Iterator<Item = &'a mut Container> + 'a {
    spec.init_containers
        .iter_mut()
        .flatten()
        .chain(spec.containers.iter_mut())
        .filter(move |c| names.contains(&c.name))
}

/// Control-plane topology hook: with an `External` control plane the controller must not be
/// pinned to control-plane nodes, so the pod template's `nodeSelector` is cleared (set to `{}`).
pub fn control_plane_topology<W: PodWorkload>(workload: &mut W, topology: &TopologyMode) {
    if *topology == TopologyMode::External {
        pod_spec_mut(workload).node_selector = Some(BTreeMap::new());
    }
}

/// OpenShift's control-plane node role, in the assets' `nodeSelector` and tolerations.
pub const MASTER_ROLE: &str = "node-role.kubernetes.io/master";
/// Kubernetes' control-plane node role (kubeadm and most distributions; since 1.24 the only
/// one: `master` was dropped).
pub const CONTROL_PLANE_ROLE: &str = "node-role.kubernetes.io/control-plane";

/// Control-plane placement on plain Kubernetes (no Infrastructure object): OpenShift's
/// `node-role.kubernetes.io/master` selector would leave the pods Pending on any cluster of
/// 1.24 or later, and a managed cluster has no control-plane nodes at all. So the `master`
/// selector is replaced by a *preferred* node affinity for `node-role.kubernetes.io/control-plane`
/// (the pods go to control-plane nodes when there are some, anywhere otherwise), and every
/// toleration of the `master` taint gets a twin for the `control-plane` taint. A `nodeSelector`
/// left empty is removed. On OpenShift this hook is not called: its objects stay exactly as
/// OpenShift's.
pub fn kubernetes_control_plane<W: PodWorkload>(workload: &mut W) {
    use k8s_openapi::api::core::v1::{
        Affinity, NodeAffinity, NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm,
        Toleration,
    };
    let spec = pod_spec_mut(workload);
    let Some(selector) = spec.node_selector.as_mut() else {
        return;
    };
    if selector.remove(MASTER_ROLE).is_none() {
        return;
    }
    if selector.is_empty() {
        spec.node_selector = None;
    }
    let term = PreferredSchedulingTerm {
        weight: 100,
        preference: NodeSelectorTerm {
            match_expressions: Some(vec![NodeSelectorRequirement {
                key: CONTROL_PLANE_ROLE.into(),
                operator: "Exists".into(),
                values: None,
            }]),
            match_fields: None,
        },
    };
    let node_affinity = spec
        .affinity
        .get_or_insert_with(Affinity::default)
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    let preferred = node_affinity
        .preferred_during_scheduling_ignored_during_execution
        .get_or_insert_with(Vec::new);
    if !preferred.contains(&term) {
        preferred.push(term);
    }
    if let Some(tolerations) = spec.tolerations.as_mut() {
        let twins: Vec<Toleration> = tolerations
            .iter()
            .filter(|t| t.key.as_deref() == Some(MASTER_ROLE))
            .map(|t| Toleration {
                key: Some(CONTROL_PLANE_ROLE.into()),
                ..t.clone()
            })
            .filter(|twin| !tolerations.contains(twin))
            .collect();
        tolerations.extend(twins);
    }
}

/// Replicas hook: 2 on a `HighlyAvailable` control plane, 1 on any other topology
/// (SingleReplica, External, HighlyAvailableArbiter, DualReplica, unknown).
pub fn replicas(deployment: &mut Deployment, topology: &TopologyMode) {
    let n = if *topology == TopologyMode::HighlyAvailable {
        2
    } else {
        1
    };
    deployment
        .spec
        .get_or_insert_with(Default::default)
        .replicas = Some(n);
}

/// Proxy hook: adds the observed proxy settings (`HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`, as
/// held under `targetcsiconfig.proxy` of the observed config) as env vars, sorted by name, to the
/// containers and init containers named in [`INJECT_PROXY_ANNOTATION`]. An empty map is a
/// no-op. A variable the container already defines with the same name is replaced rather than
/// duplicated.
pub fn inject_proxy<W: PodWorkload>(workload: &mut W, proxy: &BTreeMap<String, String>) {
    if proxy.is_empty() {
        return;
    }
    let names = annotated_containers(workload, INJECT_PROXY_ANNOTATION);
    if names.is_empty() {
        return;
    }
    for container in named_containers(pod_spec_mut(workload), &names) {
        let env = container.env.get_or_insert_with(Vec::new);
        env.retain(|e| !proxy.contains_key(&e.name));
        // BTreeMap iteration is sorted by name, as library-go's MapToEnvVars sorts.
        env.extend(proxy.iter().map(|(name, value)| EnvVar {
            name: name.clone(),
            value: Some(value.clone()),
            value_from: None,
        }));
    }
}

/// Trusted CA bundle hook. `configmap` is the trusted-CA ConfigMap `namespace/name` as found
/// in the cache (`None` when it does not exist).
///
/// When it exists and has the key `ca-bundle.crt`: adds the volume
/// `non-standard-root-system-trust-ca-bundle` (`ca-bundle.crt` → `tls-ca-bundle.pem`), mounts it
/// read-only at `/etc/pki/ca-trust/extracted/pem` in the containers and init containers named
/// in [`INJECT_CA_BUNDLE_ANNOTATION`], and adds the ConfigMap's hash annotation so a new bundle
/// rolls the pods. Otherwise nothing changes.
pub fn inject_trusted_ca_bundle<W: PodWorkload>(
    workload: &mut W,
    namespace: &str,
    name: &str,
    configmap: Option<&ConfigMap>,
) {
    let Some(cm) = configmap else { return };
    if !cm
        .data
        .as_ref()
        .is_some_and(|d| d.contains_key(CA_BUNDLE_KEY))
    {
        return;
    }
    let names = annotated_containers(workload, INJECT_CA_BUNDLE_ANNOTATION);
    let spec = pod_spec_mut(workload);
    let volume = Volume {
        name: CA_BUNDLE_VOLUME.to_owned(),
        config_map: Some(ConfigMapVolumeSource {
            name: name.to_owned(),
            items: Some(vec![KeyToPath {
                key: CA_BUNDLE_KEY.to_owned(),
                path: CA_BUNDLE_PATH.to_owned(),
                mode: None,
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let volumes = spec.volumes.get_or_insert_with(Vec::new);
    volumes.retain(|v| v.name != CA_BUNDLE_VOLUME);
    volumes.push(volume);
    for container in named_containers(spec, &names) {
        let mounts = container.volume_mounts.get_or_insert_with(Vec::new);
        mounts.retain(|m| m.name != CA_BUNDLE_VOLUME);
        mounts.push(VolumeMount {
            name: CA_BUNDLE_VOLUME.to_owned(),
            mount_path: CA_BUNDLE_MOUNT_PATH.to_owned(),
            read_only: Some(true),
            ..Default::default()
        });
    }
    configmap_hash_annotation(workload, namespace, name, Some(cm));
}

/// ConfigMap hash hook: records the hash of ConfigMap `namespace/name` under its
/// `operator.openshift.io/dep-…` key on both the workload and its pod template. A missing
/// ConfigMap (`None`) adds nothing (which is not the same as an empty one).
pub fn configmap_hash_annotation<W: PodWorkload>(
    workload: &mut W,
    namespace: &str,
    name: &str,
    configmap: Option<&ConfigMap>,
) {
    if let Some(cm) = configmap {
        let key = hash::dependency_annotation_key(DependencyKind::ConfigMap, namespace, name);
        set_hash_annotation(workload, key, hash::configmap_hash(cm));
    }
}

/// Secret hash hook: as [`configmap_hash_annotation`], for Secret `namespace/name`. Only the
/// hash is written, never the data.
pub fn secret_hash_annotation<W: PodWorkload>(
    workload: &mut W,
    namespace: &str,
    name: &str,
    secret: Option<&Secret>,
) {
    if let Some(secret) = secret {
        let key = hash::dependency_annotation_key(DependencyKind::Secret, namespace, name);
        set_hash_annotation(workload, key, hash::secret_hash(secret));
    }
}

fn set_hash_annotation<W: PodWorkload>(workload: &mut W, key: String, value: String) {
    workload
        .meta_mut()
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(key.clone(), value.clone());
    workload
        .template_mut()
        .metadata
        .get_or_insert_with(Default::default)
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(key, value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use k8s_openapi::api::apps::v1::{DaemonSetSpec, DeploymentSpec};

    fn container(name: &str) -> Container {
        Container {
            name: name.into(),
            ..Default::default()
        }
    }

    fn deployment(annotations: &[(&str, &str)]) -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                annotations: Some(
                    annotations
                        .iter()
                        .map(|(k, v)| ((*k).into(), (*v).into()))
                        .collect(),
                ),
                ..Default::default()
            },
            spec: Some(DeploymentSpec {
                replicas: Some(7),
                template: PodTemplateSpec {
                    metadata: None,
                    spec: Some(PodSpec {
                        node_selector: Some(BTreeMap::from([(
                            "node-role.kubernetes.io/master".into(),
                            String::new(),
                        )])),
                        init_containers: Some(vec![container("init")]),
                        containers: vec![container("csi-driver"), container("sidecar")],
                        ..Default::default()
                    }),
                },
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn pod(d: &Deployment) -> &PodSpec {
        d.spec.as_ref().unwrap().template.spec.as_ref().unwrap()
    }

    fn env_of(c: &Container) -> Vec<(String, String)> {
        c.env
            .iter()
            .flatten()
            .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn kubernetes_placement_prefers_control_plane_nodes_without_requiring_them() {
        use k8s_openapi::api::core::v1::Toleration;
        let mut d = deployment(&[]);
        d.spec
            .as_mut()
            .unwrap()
            .template
            .spec
            .as_mut()
            .unwrap()
            .tolerations = Some(vec![Toleration {
            key: Some(MASTER_ROLE.into()),
            operator: Some("Exists".into()),
            effect: Some("NoSchedule".into()),
            ..Default::default()
        }]);
        kubernetes_control_plane(&mut d);
        let once = d.clone();
        kubernetes_control_plane(&mut d);
        assert_eq!(d, once, "idempotent");
        let spec = pod(&d);
        assert_eq!(spec.node_selector, None, "no selector left that could fail");
        let v = serde_json::to_value(spec).unwrap();
        assert_eq!(
            v["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"],
            serde_json::json!([{"weight": 100, "preference": {"matchExpressions": [
                {"key": CONTROL_PLANE_ROLE, "operator": "Exists"}]}}])
        );
        let keys: Vec<_> = spec
            .tolerations
            .iter()
            .flatten()
            .map(|t| (t.key.clone().unwrap(), t.effect.clone().unwrap()))
            .collect();
        assert_eq!(
            keys,
            [
                (MASTER_ROLE.to_string(), "NoSchedule".to_string()),
                (CONTROL_PLANE_ROLE.to_string(), "NoSchedule".to_string())
            ]
        );
    }

    #[test]
    fn kubernetes_placement_leaves_other_selectors_alone() {
        let mut d = deployment(&[]);
        d.spec
            .as_mut()
            .unwrap()
            .template
            .spec
            .as_mut()
            .unwrap()
            .node_selector = Some(BTreeMap::from([(
            "kubernetes.io/os".into(),
            "linux".into(),
        )]));
        let before = d.clone();
        kubernetes_control_plane(&mut d);
        assert_eq!(d, before, "no master selector: nothing to replace");
    }

    #[test]
    fn topology_parse_round_trip() {
        for s in [
            "HighlyAvailable",
            "SingleReplica",
            "External",
            "HighlyAvailableArbiter",
            "DualReplica",
            "Future",
        ] {
            assert_eq!(TopologyMode::parse(s).as_str(), s);
        }
        assert_eq!(TopologyMode::parse(""), TopologyMode::HighlyAvailable);
    }

    #[test]
    fn external_clears_node_selector() {
        let mut d = deployment(&[]);
        control_plane_topology(&mut d, &TopologyMode::HighlyAvailable);
        assert_eq!(pod(&d).node_selector.as_ref().unwrap().len(), 1);
        control_plane_topology(&mut d, &TopologyMode::SingleReplica);
        assert_eq!(pod(&d).node_selector.as_ref().unwrap().len(), 1);
        control_plane_topology(&mut d, &TopologyMode::External);
        assert_eq!(pod(&d).node_selector, Some(BTreeMap::new()));
    }

    #[test]
    fn replicas_two_only_for_highly_available() {
        for (t, n) in [
            (TopologyMode::HighlyAvailable, 2),
            (TopologyMode::SingleReplica, 1),
            (TopologyMode::External, 1),
            (TopologyMode::HighlyAvailableArbiter, 1),
            (TopologyMode::DualReplica, 1),
            (TopologyMode::Other("X".into()), 1),
        ] {
            let mut d = deployment(&[]);
            replicas(&mut d, &t);
            assert_eq!(d.spec.unwrap().replicas, Some(n), "{t:?}");
        }
        let mut empty = Deployment::default();
        replicas(&mut empty, &TopologyMode::HighlyAvailable);
        assert_eq!(empty.spec.unwrap().replicas, Some(2));
    }

    fn proxy() -> BTreeMap<String, String> {
        BTreeMap::from([
            ("NO_PROXY".into(), ".cluster.local".into()),
            ("HTTPS_PROXY".into(), "https://p:3128".into()),
            ("HTTP_PROXY".into(), "http://p:3128".into()),
        ])
    }

    #[test]
    fn proxy_goes_to_named_containers_sorted() {
        let mut d = deployment(&[(INJECT_PROXY_ANNOTATION, "csi-driver, init")]);
        d.spec
            .as_mut()
            .unwrap()
            .template
            .spec
            .as_mut()
            .unwrap()
            .containers[0]
            .env = Some(vec![EnvVar {
            name: "CSI_ENDPOINT".into(),
            value: Some("unix://x".into()),
            value_from: None,
        }]);
        inject_proxy(&mut d, &proxy());
        let p = pod(&d);
        let names: Vec<String> = env_of(&p.containers[0])
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            names,
            ["CSI_ENDPOINT", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"]
        );
        assert_eq!(env_of(&p.init_containers.as_ref().unwrap()[0]).len(), 3);
        assert!(p.containers[1].env.is_none());
        // Idempotent.
        let once = d.clone();
        inject_proxy(&mut d, &proxy());
        assert_eq!(d, once);
    }

    #[test]
    fn proxy_noop_without_values_or_annotation() {
        let mut d = deployment(&[(INJECT_PROXY_ANNOTATION, "csi-driver")]);
        let before = d.clone();
        inject_proxy(&mut d, &BTreeMap::new());
        assert_eq!(d, before);
        let mut d = deployment(&[]);
        let before = d.clone();
        inject_proxy(&mut d, &proxy());
        assert_eq!(d, before);
    }

    #[test]
    fn proxy_works_on_daemonsets() {
        let mut ds = DaemonSet {
            metadata: ObjectMeta {
                annotations: Some(BTreeMap::from([(
                    INJECT_PROXY_ANNOTATION.into(),
                    "csi-driver".into(),
                )])),
                ..Default::default()
            },
            spec: Some(DaemonSetSpec {
                template: PodTemplateSpec {
                    metadata: None,
                    spec: Some(PodSpec {
                        containers: vec![container("csi-driver")],
                        ..Default::default()
                    }),
                },
                ..Default::default()
            }),
            ..Default::default()
        };
        inject_proxy(&mut ds, &proxy());
        assert_eq!(
            ds.spec.unwrap().template.spec.unwrap().containers[0]
                .env
                .as_ref()
                .unwrap()
                .len(),
            3
        );
    }

    fn ca_cm(with_key: bool) -> ConfigMap {
        ConfigMap {
            data: Some(if with_key {
                BTreeMap::from([(CA_BUNDLE_KEY.into(), "-----BEGIN CERTIFICATE-----\n".into())])
            } else {
                BTreeMap::from([("other".into(), "x".into())])
            }),
            ..Default::default()
        }
    }

    #[test]
    fn ca_bundle_injected_and_hashed() {
        let mut d = deployment(&[(INJECT_CA_BUNDLE_ANNOTATION, "csi-driver")]);
        let cm = ca_cm(true);
        inject_trusted_ca_bundle(&mut d, "ns", "trusted-ca", Some(&cm));
        let p = pod(&d);
        let vol = p
            .volumes
            .as_ref()
            .unwrap()
            .iter()
            .find(|v| v.name == CA_BUNDLE_VOLUME)
            .unwrap();
        let src = vol.config_map.as_ref().unwrap();
        assert_eq!(src.name, "trusted-ca");
        assert_eq!(src.items.as_ref().unwrap()[0].key, "ca-bundle.crt");
        assert_eq!(src.items.as_ref().unwrap()[0].path, "tls-ca-bundle.pem");
        let mount = &p.containers[0].volume_mounts.as_ref().unwrap()[0];
        assert_eq!(mount.mount_path, "/etc/pki/ca-trust/extracted/pem");
        assert_eq!(mount.read_only, Some(true));
        assert!(p.containers[1].volume_mounts.is_none());
        let key = hash::dependency_annotation_key(DependencyKind::ConfigMap, "ns", "trusted-ca");
        assert_eq!(
            d.metadata.annotations.as_ref().unwrap().get(&key),
            Some(&hash::configmap_hash(&cm))
        );
        // Idempotent.
        let once = d.clone();
        inject_trusted_ca_bundle(&mut d, "ns", "trusted-ca", Some(&cm));
        assert_eq!(d, once);
    }

    #[test]
    fn ca_bundle_noop_when_missing_or_without_key() {
        for cm in [None, Some(ca_cm(false))] {
            let mut d = deployment(&[(INJECT_CA_BUNDLE_ANNOTATION, "csi-driver")]);
            let before = d.clone();
            inject_trusted_ca_bundle(&mut d, "ns", "trusted-ca", cm.as_ref());
            assert_eq!(d, before);
        }
    }

    #[test]
    fn hash_annotations_on_both_levels() {
        let mut d = deployment(&[]);
        let cm = ConfigMap {
            data: Some(BTreeMap::from([("a".into(), "b".into())])),
            ..Default::default()
        };
        configmap_hash_annotation(
            &mut d,
            "openshift-cluster-csi-drivers",
            "cloud-conf",
            Some(&cm),
        );
        let secret = Secret {
            data: Some(BTreeMap::from([("k".into(), ByteString(b"v".to_vec()))])),
            ..Default::default()
        };
        secret_hash_annotation(
            &mut d,
            "openshift-cluster-csi-drivers",
            "openstack-cloud-credentials",
            Some(&secret),
        );
        let top = d.metadata.annotations.clone().unwrap();
        let tmpl = d
            .spec
            .as_ref()
            .unwrap()
            .template
            .metadata
            .as_ref()
            .unwrap()
            .annotations
            .clone()
            .unwrap();
        assert_eq!(
            top.get("operator.openshift.io/dep-2a78a60e2cfb360d9fe72d1859d93b0fdd3bc")
                .map(String::as_str),
            Some("L9A_7g==")
        );
        assert!(
            top.contains_key("operator.openshift.io/dep-4b51488ec5b742a098d092dfe49449df0986e")
        );
        assert_eq!(top, tmpl);
    }

    #[test]
    fn missing_dependency_adds_no_annotation() {
        let mut d = deployment(&[]);
        configmap_hash_annotation(&mut d, "ns", "cm", None);
        secret_hash_annotation(&mut d, "ns", "s", None);
        assert_eq!(d.metadata.annotations, Some(BTreeMap::new()));
        assert!(d.spec.unwrap().template.metadata.is_none());
    }
}
