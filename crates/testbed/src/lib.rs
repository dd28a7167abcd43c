//! testbed: an OpenShift-on-OpenStack cluster made of the two emulators, as the demo, the
//! end-to-end tests and the benchmarks need it.
//!
//! `Testbed::start` runs kube-sim and openstack-sim on loopback and seeds what the installer
//! and the Cluster Storage Operator would have left behind for a driver operator: the OpenShift
//! CRDs, Nodes, the `cluster` singletons (Infrastructure, Proxy, APIServer), the user cloud
//! config, the credentials Secret pointing at openstack-sim, and the ClusterCSIDriver(s): Cinder's
//! by default, Manila's (with its namespace and driver credentials) when asked. Whether the cloud
//! offers Manila, and which share types, is openstack-sim's setting. Unless told otherwise it
//! also runs the CSI provisioner and scheduler stand-ins ([`csi_provisioner`], [`scheduler`]),
//! so claims of the installed drivers' classes get volumes. This is emulator-side code:
//! product crates never depend on it.

pub mod cco;
pub mod cert_manager;
pub mod csi_attacher;
pub mod csi_provisioner;
pub mod cvo;
mod in_process;
pub mod kubelet;
pub mod operators;
pub mod scheduler;
pub mod service_ca;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Config};
use kube_sim::KubeSim;
use openstack_sim::OpenStackSim;
use serde_json::{Value, json};

/// The namespace of the Cinder driver and operator.
pub const DRIVER_NAMESPACE: &str = "openshift-cluster-csi-drivers";
/// The namespace of the user cloud config.
pub const CONFIG_NAMESPACE: &str = "openshift-config";
/// The credentials Secret the CredentialsRequest produces.
pub const CREDENTIALS_SECRET: &str = "openstack-cloud-credentials";
/// The Cinder ClusterCSIDriver.
pub const CINDER_CLUSTER_CSI_DRIVER: &str = "cinder.csi.openstack.org";
/// The Manila ClusterCSIDriver.
pub const MANILA_CLUSTER_CSI_DRIVER: &str = "manila.csi.openstack.org";
/// The namespace of the Manila driver (CSO creates it whether or not the cloud has Manila).
pub const MANILA_NAMESPACE: &str = "openshift-manila-csi-driver";
/// The Secret the Manila driver pods mount (the cloud credential operator mints it).
pub const MANILA_CREDENTIALS_SECRET: &str = "manila-cloud-credentials";

/// How to seed the cluster.
#[derive(Debug, Clone)]
pub struct Settings {
    /// kube-sim settings (workload simulator, history, ...).
    pub kube: kube_sim::SimConfig,
    /// Where kube-sim listens (port 0: any free port).
    pub kube_listen: std::net::SocketAddr,
    /// openstack-sim settings (zones, share types, TLS, ...).
    pub openstack: openstack_sim::SimConfig,
    pub control_plane_nodes: usize,
    pub worker_nodes: usize,
    pub infrastructure_name: String,
    /// `status.controlPlaneTopology` of Infrastructure.
    pub control_plane_topology: String,
    /// The `openshift-config/cloud-provider-config` INI (`None`: no such ConfigMap).
    pub cloud_provider_config: Option<String>,
    /// Proxy `status` (httpProxy, httpsProxy, noProxy); empty for none.
    pub proxy: BTreeMap<String, String>,
    /// Create the ClusterCSIDriver `cinder.csi.openstack.org` (as CSO would).
    pub cinder_cluster_csi_driver: bool,
    /// Seed what CSO and the cloud credential operator leave for the Manila operator: the
    /// namespace `openshift-manila-csi-driver`, the `manila-cloud-credentials` Secret in it and
    /// the ClusterCSIDriver `manila.csi.openstack.org`. CSO does this on every OpenStack
    /// cluster; whether Manila exists is `openstack.share_types`.
    pub manila_cluster_csi_driver: bool,
    /// Admit pods as OpenShift does (kube-sim's OpenShift admission mode): the default SCCs,
    /// namespace UID ranges and SCC admission, beside Pod Security Admission. Overrides
    /// `kube.admission.openshift` when true. On for the Cluster Storage Operator's cluster,
    /// where every pod we ship must pass it.
    pub openshift_admission: bool,
    /// Seed OpenShift's APIs (its CRDs, namespaces, `cluster` singletons, cloud config and the
    /// credentials the cloud credential operator would mint). Off: a plain Kubernetes cluster
    /// (see [`Settings::plain_kubernetes`]).
    pub openshift_apis: bool,
    /// Run the cert-manager stand-in ([`cert_manager`]); it acts once a test installs the
    /// cert-manager CRDs.
    pub cert_manager: bool,
    /// Run the CSI provisioner and scheduler stand-ins: claims of Cinder and Manila classes
    /// are provisioned in openstack-sim once the driver is installed (see [`csi_provisioner`]).
    pub csi_provisioner: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            kube: kube_sim::SimConfig::default(),
            kube_listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            openstack: openstack_sim::SimConfig::default(),
            control_plane_nodes: 3,
            worker_nodes: 3,
            infrastructure_name: "ostest-x7k2p".into(),
            control_plane_topology: "HighlyAvailable".into(),
            cloud_provider_config: Some("[Global]\nsecret-name = openstack-credentials\nsecret-namespace = kube-system\n\n[BlockStorage]\nignore-volume-az = yes\n".into()),
            proxy: BTreeMap::new(),
            cinder_cluster_csi_driver: true,
            manila_cluster_csi_driver: false,
            openshift_admission: false,
            openshift_apis: true,
            cert_manager: false,
            csi_provisioner: true,
        }
    }
}

impl Settings {
    /// A cluster as the installer leaves it for the Cluster Storage Operator: no
    /// ClusterCSIDriver (the CSO creates them), everything else as by default.
    pub fn for_cluster_storage_operator() -> Self {
        Self {
            cinder_cluster_csi_driver: false,
            manila_cluster_csi_driver: false,
            openshift_admission: true,
            ..Self::default()
        }
    }

    /// A plain Kubernetes cluster (1.24 or later) as `kubeadm` leaves it: Nodes only, the
    /// control-plane ones labelled and tainted `node-role.kubernetes.io/control-plane` (the
    /// `master` label and taint are gone since 1.24), no CRD, no OpenShift namespace, no
    /// Infrastructure, no credentials and no ClusterCSIDriver. Pod Security admission by
    /// namespace labels, as every Kubernetes API server runs it, and pods that wait for the
    /// Secrets and ConfigMaps they mount (kube-sim's `require_volume_sources`).
    pub fn plain_kubernetes() -> Self {
        // No service-ca here: pods wait for the Secrets they mount, as a kubelet does, so a
        // serving certificate nobody issues keeps the driver from becoming Available.
        let kube = kube_sim::SimConfig {
            workloads: Some(kube_sim::WorkloadConfig {
                require_volume_sources: true,
                ..kube_sim::WorkloadConfig::default()
            }),
            ..kube_sim::SimConfig::default()
        };
        Self {
            kube,
            cloud_provider_config: None,
            cinder_cluster_csi_driver: false,
            manila_cluster_csi_driver: false,
            openshift_admission: false,
            openshift_apis: false,
            ..Self::default()
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    #[error("cannot start {what}: {source}")]
    Start {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot seed {what}: {source}")]
    Seed {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("kube-sim's kubeconfig is not usable: {0}")]
    Kubeconfig(String),
    #[error("OpenShift CRDs: {0}")]
    Crds(String),
}

/// The running emulators and a client for the `admin` user.
pub struct Testbed {
    pub kube: KubeSim,
    pub openstack: OpenStackSim,
    pub client: Client,
    /// The stand-in controllers' task, stopped with the testbed.
    _stand_ins: Option<AbortOnDrop>,
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn seed_err(what: impl Into<String>) -> impl FnOnce(kube::Error) -> TestbedError {
    let what = what.into();
    move |source| TestbedError::Seed { what, source }
}

/// A kube-rs client for a kube-sim user.
pub async fn client_for(sim: &KubeSim, user: &str) -> Result<Client, TestbedError> {
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let kc = Kubeconfig::from_yaml(&sim.kubeconfig(user))
        .map_err(|e| TestbedError::Kubeconfig(e.to_string()))?;
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|e| TestbedError::Kubeconfig(e.to_string()))?;
    Client::try_from(config).map_err(|e| TestbedError::Kubeconfig(e.to_string()))
}

impl Testbed {
    /// Starts both emulators on loopback and seeds the cluster.
    pub async fn start(settings: Settings) -> Result<Self, TestbedError> {
        let any = "127.0.0.1:0"
            .parse()
            .map_err(|_| TestbedError::Kubeconfig("bad loopback address".into()))?;
        let mut kube_config = settings.kube.clone();
        if settings.openshift_admission {
            kube_config.admission.openshift = true;
        }
        let kube = KubeSim::start(kube_config, settings.kube_listen)
            .await
            .map_err(|source| TestbedError::Start {
                what: "kube-sim",
                source,
            })?;
        let openstack = OpenStackSim::start(settings.openstack.clone(), any)
            .await
            .map_err(|source| TestbedError::Start {
                what: "openstack-sim",
                source,
            })?;
        let client = client_for(&kube, "admin").await?;
        let stand_ins = settings.csi_provisioner.then(|| {
            AbortOnDrop(
                csi_provisioner::CsiProvisioner::new(kube.handle(), openstack.handle()).spawn(),
            )
        });
        let bed = Self {
            kube,
            openstack,
            client,
            _stand_ins: stand_ins,
        };
        bed.seed(&settings).await?;
        if settings.cert_manager {
            cert_manager::spawn(bed.client.clone(), Duration::from_millis(250));
        }
        Ok(bed)
    }

    /// The clouds.yaml the credentials Secret holds.
    pub fn clouds_yaml(&self) -> String {
        self.openstack.clouds_yaml("openstack")
    }

    async fn seed(&self, s: &Settings) -> Result<(), TestbedError> {
        if !s.openshift_apis {
            return self.seed_nodes(s).await;
        }
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        for crd in openshift_api::crds::parsed().map_err(|e| TestbedError::Crds(e.to_string()))? {
            let name = crd.metadata.name.clone().unwrap_or_default();
            crds.create(&PostParams::default(), &crd)
                .await
                .map_err(seed_err(format!("CRD {name}")))?;
        }
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        for ns in [
            CONFIG_NAMESPACE,
            DRIVER_NAMESPACE,
            "openshift-config-managed",
            "openshift-cluster-storage-operator",
            "openshift-monitoring",
        ] {
            let obj = Namespace {
                metadata: ObjectMeta {
                    name: Some(ns.into()),
                    ..Default::default()
                },
                ..Default::default()
            };
            namespaces
                .create(&PostParams::default(), &obj)
                .await
                .map_err(seed_err(format!("namespace {ns}")))?;
        }
        self.seed_nodes(s).await?;
        seed_singletons(&self.client, s).await?;
        if let Some(ini) = &s.cloud_provider_config {
            let cms: Api<ConfigMap> = Api::namespaced(self.client.clone(), CONFIG_NAMESPACE);
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some("cloud-provider-config".into()),
                    ..Default::default()
                },
                data: Some(BTreeMap::from([("config".to_string(), ini.clone())])),
                ..Default::default()
            };
            cms.create(&PostParams::default(), &cm)
                .await
                .map_err(seed_err("cloud-provider-config"))?;
        }
        self.put_credentials(&self.clouds_yaml(), self.openstack.ca_pem())
            .await?;
        self.put_root_credentials(&self.clouds_yaml(), self.openstack.ca_pem())
            .await?;
        if s.cinder_cluster_csi_driver {
            self.create_cluster_csi_driver(CINDER_CLUSTER_CSI_DRIVER)
                .await?;
        }
        if s.manila_cluster_csi_driver {
            self.seed_manila().await?;
        }
        Ok(())
    }

    /// The Manila namespace as CSO creates it (privileged pod security: the node plugins
    /// mount host paths), the driver's credentials, and the ClusterCSIDriver.
    async fn seed_manila(&self) -> Result<(), TestbedError> {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let labels = [
            "pod-security.kubernetes.io/enforce",
            "pod-security.kubernetes.io/audit",
            "pod-security.kubernetes.io/warn",
        ]
        .iter()
        .map(|k| (k.to_string(), "privileged".to_string()))
        .collect();
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(MANILA_NAMESPACE.into()),
                labels: Some(labels),
                annotations: Some(BTreeMap::from([(
                    "openshift.io/node-selector".to_string(),
                    String::new(),
                )])),
                ..Default::default()
            },
            ..Default::default()
        };
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .map_err(seed_err(format!("namespace {MANILA_NAMESPACE}")))?;
        self.put_manila_credentials(&self.clouds_yaml()).await?;
        self.create_cluster_csi_driver(MANILA_CLUSTER_CSI_DRIVER)
            .await
    }

    async fn seed_nodes(&self, s: &Settings) -> Result<(), TestbedError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let ready = json!({"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}]});
        // OpenShift still labels and taints control-plane nodes `master`; Kubernetes dropped
        // both in 1.24 and keeps only `control-plane`.
        let (labels, taint) = if s.openshift_apis {
            (
                json!({"node-role.kubernetes.io/master": "", "node-role.kubernetes.io/control-plane": "",
                    "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "nova"}),
                "node-role.kubernetes.io/master",
            )
        } else {
            (
                json!({"node-role.kubernetes.io/control-plane": "",
                    "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "nova"}),
                "node-role.kubernetes.io/control-plane",
            )
        };
        for i in 0..s.control_plane_nodes {
            let node: Node = serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": format!("master-{i}"), "labels": labels},
                "spec": {"taints": [{"key": taint, "effect": "NoSchedule"}]},
                "status": ready,
            }))
            .map_err(|e| TestbedError::Crds(e.to_string()))?;
            nodes
                .create(&PostParams::default(), &node)
                .await
                .map_err(seed_err(format!("node master-{i}")))?;
        }
        for i in 0..s.worker_nodes {
            let node: Node = serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": format!("worker-{i}"), "labels": {
                    "node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "nova"}},
                "status": ready,
            }))
            .map_err(|e| TestbedError::Crds(e.to_string()))?;
            nodes
                .create(&PostParams::default(), &node)
                .await
                .map_err(seed_err(format!("node worker-{i}")))?;
        }
        Ok(())
    }

    /// Creates or replaces the credentials Secret (a rotation when it exists).
    pub async fn put_credentials(
        &self,
        clouds_yaml: &str,
        cacert: Option<&str>,
    ) -> Result<(), TestbedError> {
        put_clouds_secret(
            &self.client,
            DRIVER_NAMESPACE,
            CREDENTIALS_SECRET,
            clouds_yaml,
            cacert,
        )
        .await
    }

    /// Creates or replaces the installer's root credentials `kube-system/openstack-credentials`,
    /// which the cloud credential operator ([`cco`]) copies into each CredentialsRequest's
    /// target Secret.
    pub async fn put_root_credentials(
        &self,
        clouds_yaml: &str,
        cacert: Option<&str>,
    ) -> Result<(), TestbedError> {
        put_clouds_secret(
            &self.client,
            cco::ROOT_NAMESPACE,
            cco::ROOT_SECRET,
            clouds_yaml,
            cacert,
        )
        .await
    }

    /// Creates or replaces `openshift-manila-csi-driver/manila-cloud-credentials` (a rotation
    /// when it exists).
    pub async fn put_manila_credentials(&self, clouds_yaml: &str) -> Result<(), TestbedError> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), MANILA_NAMESPACE);
        let data = BTreeMap::from([(
            "clouds.yaml".to_string(),
            ByteString(clouds_yaml.as_bytes().to_vec()),
        )]);
        put_secret(&api, MANILA_CREDENTIALS_SECRET, data).await
    }

    /// Creates a ClusterCSIDriver as CSO does: Managed, Normal log levels.
    pub async fn create_cluster_csi_driver(&self, name: &str) -> Result<(), TestbedError> {
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("operator.openshift.io", "v1", "ClusterCSIDriver"),
            "clustercsidrivers",
        );
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "operator.openshift.io/v1", "kind": "ClusterCSIDriver",
            "metadata": {"name": name},
            "spec": {"managementState": "Managed", "logLevel": "Normal", "operatorLogLevel": "Normal"},
        }))
        .map_err(|e| TestbedError::Crds(e.to_string()))?;
        api.create(&PostParams::default(), &obj)
            .await
            .map_err(seed_err(format!("ClusterCSIDriver {name}")))?;
        Ok(())
    }

    /// The ClusterCSIDriver's conditions (type → (status, reason, message)).
    pub async fn conditions(&self, name: &str) -> BTreeMap<String, (String, String, String)> {
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("operator.openshift.io", "v1", "ClusterCSIDriver"),
            "clustercsidrivers",
        );
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
        let Ok(Some(obj)) = api.get_opt(name).await else {
            return BTreeMap::new();
        };
        obj.data
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        let s = |k: &str| {
                            c.get(k)
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_string()
                        };
                        (s("type"), (s("status"), s("reason"), s("message")))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Infrastructure, Proxy and APIServer `cluster` as the installer leaves them (with status), on
/// any API server that serves their CRDs: kube-sim here, the real control plane in `real`.
pub async fn seed_singletons(client: &Client, s: &Settings) -> Result<(), TestbedError> {
    let infra = json!({
        "apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
        "metadata": {"name": "cluster"},
        "spec": {"cloudConfig": {"name": "cloud-provider-config", "key": "config"}, "platformSpec": {"type": "OpenStack"}},
    });
    let infra_status = json!({
        "infrastructureName": s.infrastructure_name,
        "platform": "OpenStack",
        "platformStatus": {"type": "OpenStack", "openstack": {"cloudName": "openstack"}},
        "controlPlaneTopology": s.control_plane_topology,
        "infrastructureTopology": "HighlyAvailable",
        "apiServerURL": "https://api.ostest.example:6443",
        "apiServerInternalURI": "https://api-int.ostest.example:6443",
        "etcdDiscoveryDomain": "",
    });
    create_with_status(
        client,
        "config.openshift.io",
        "Infrastructure",
        "infrastructures",
        infra,
        infra_status,
    )
    .await?;
    let proxy_status: serde_json::Map<String, Value> = s
        .proxy
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let proxy = json!({"apiVersion": "config.openshift.io/v1", "kind": "Proxy", "metadata": {"name": "cluster"}, "spec": {}});
    create_with_status(
        client,
        "config.openshift.io",
        "Proxy",
        "proxies",
        proxy,
        Value::Object(proxy_status),
    )
    .await?;
    let apiserver = json!({"apiVersion": "config.openshift.io/v1", "kind": "APIServer", "metadata": {"name": "cluster"}, "spec": {}});
    create_with_status(
        client,
        "config.openshift.io",
        "APIServer",
        "apiservers",
        apiserver,
        json!({}),
    )
    .await?;
    Ok(())
}

async fn create_with_status(
    client: &Client,
    group: &str,
    kind: &str,
    plural: &str,
    obj: Value,
    status: Value,
) -> Result<(), TestbedError> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural);
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let obj: DynamicObject =
        serde_json::from_value(obj).map_err(|e| TestbedError::Crds(e.to_string()))?;
    let name = obj.metadata.name.clone().unwrap_or_default();
    api.create(&PostParams::default(), &obj)
        .await
        .map_err(seed_err(format!("{kind} {name}")))?;
    if status.as_object().is_some_and(|s| !s.is_empty()) {
        api.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": status})),
        )
        .await
        .map_err(seed_err(format!("{kind} {name} status")))?;
    }
    Ok(())
}

/// Creates or updates a credentials Secret as the cloud credential operator writes one:
/// `clouds.yaml`, and the cloud's CA as `cacert` when it has one.
pub async fn put_clouds_secret(
    client: &Client,
    namespace: &str,
    name: &str,
    clouds_yaml: &str,
    cacert: Option<&str>,
) -> Result<(), TestbedError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let mut data = BTreeMap::from([(
        "clouds.yaml".to_string(),
        ByteString(clouds_yaml.as_bytes().to_vec()),
    )]);
    if let Some(ca) = cacert {
        data.insert("cacert".to_string(), ByteString(ca.as_bytes().to_vec()));
    }
    put_secret(&api, name, data).await
}

/// Creates the Secret, or replaces its data when it exists.
async fn put_secret(
    api: &Api<Secret>,
    name: &str,
    data: BTreeMap<String, ByteString>,
) -> Result<(), TestbedError> {
    let what = format!("Secret {name}");
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(data),
        type_: Some("Opaque".into()),
        ..Default::default()
    };
    match api.get_opt(name).await.map_err(seed_err(what.clone()))? {
        None => api
            .create(&PostParams::default(), &secret)
            .await
            .map(|_| ()),
        Some(_) => api
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"data": secret.data})),
            )
            .await
            .map(|_| ()),
    }
    .map_err(seed_err(what))
}

/// Image environment for the operators: every placeholder image pointing at an example registry.
pub fn example_images() -> BTreeMap<String, String> {
    [
        "DRIVER_IMAGE",
        "PROVISIONER_IMAGE",
        "ATTACHER_IMAGE",
        "RESIZER_IMAGE",
        "SNAPSHOTTER_IMAGE",
        "LIVENESS_PROBE_IMAGE",
        "NODE_DRIVER_REGISTRAR_IMAGE",
        "KUBE_RBAC_PROXY_IMAGE",
        "TOOLS_IMAGE",
    ]
    .iter()
    .map(|name| {
        (
            name.to_string(),
            format!(
                "quay.io/example/{}:v4.20",
                name.trim_end_matches("_IMAGE")
                    .to_lowercase()
                    .replace('_', "-")
            ),
        )
    })
    .chain([("OPERATOR_IMAGE_VERSION".to_string(), "4.20.0".to_string())])
    .collect()
}

/// Image environment for the Manila operator: [`example_images`] with the NFS driver image and
/// a driver image of its own.
pub fn manila_example_images() -> BTreeMap<String, String> {
    let mut images = example_images();
    images.insert(
        "DRIVER_IMAGE".into(),
        "quay.io/example/manila-driver:v4.20".into(),
    );
    images.insert(
        "NFS_DRIVER_IMAGE".into(),
        "quay.io/example/csi-driver-nfs:v4.20".into(),
    );
    images
}

/// Polls `check` every 50 ms until it returns `Some` or `deadline` passes.
pub async fn wait_for<T, F, Fut>(deadline: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let until = tokio::time::Instant::now() + deadline;
    loop {
        if let Some(v) = check().await {
            return Some(v);
        }
        if tokio::time::Instant::now() >= until {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn exists(bed: &Testbed) -> (bool, bool, bool) {
        let namespaces: Api<Namespace> = Api::all(bed.client.clone());
        let secrets: Api<Secret> = Api::namespaced(bed.client.clone(), MANILA_NAMESPACE);
        let ns = namespaces
            .get_opt(MANILA_NAMESPACE)
            .await
            .expect("get namespace")
            .is_some();
        let secret = ns
            && secrets
                .get_opt(MANILA_CREDENTIALS_SECRET)
                .await
                .expect("get secret")
                .is_some();
        let cr = bed
            .kube
            .cluster()
            .store()
            .get(
                &kube_sim::resources::GroupResource::new(
                    "operator.openshift.io",
                    "clustercsidrivers",
                ),
                "",
                MANILA_CLUSTER_CSI_DRIVER,
            )
            .is_some();
        (ns, secret, cr)
    }

    #[tokio::test]
    async fn manila_is_seeded_only_when_asked() {
        let plain = Testbed::start(Settings::default()).await.expect("testbed");
        assert_eq!(exists(&plain).await, (false, false, false));

        let bed = Testbed::start(Settings {
            manila_cluster_csi_driver: true,
            ..Settings::default()
        })
        .await
        .expect("testbed");
        assert_eq!(exists(&bed).await, (true, true, true));
        let namespaces: Api<Namespace> = Api::all(bed.client.clone());
        let ns = namespaces.get(MANILA_NAMESPACE).await.expect("namespace");
        assert_eq!(
            ns.metadata.labels.unwrap_or_default()["pod-security.kubernetes.io/enforce"],
            "privileged"
        );
        // A second put rotates the Secret in place.
        bed.put_manila_credentials("clouds: {}\n")
            .await
            .expect("rotate");
        let secrets: Api<Secret> = Api::namespaced(bed.client.clone(), MANILA_NAMESPACE);
        let secret = secrets
            .get(MANILA_CREDENTIALS_SECRET)
            .await
            .expect("secret");
        assert_eq!(
            secret.data.unwrap_or_default()["clouds.yaml"].0,
            b"clouds: {}\n"
        );
    }
}
