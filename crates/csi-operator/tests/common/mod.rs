//! Shared harness of the end-to-end tests: a testbed (kube-sim + openstack-sim seeded as an
//! OpenShift-on-OpenStack cluster) and the real `csi-operator` binary (the Cinder or the Manila
//! operator) started against it as a child process, with its own kubeconfig user so its
//! requests can be told from the test's.
//!
//! The child is killed when its guard is dropped, also when a test panics; its output goes to a
//! file whose tail is printed on failure. Every wait polls with a generous deadline: the tests
//! run on a loaded 2-core machine and assert behaviour, never timings.

#![allow(dead_code)] // each test binary uses a different part of the harness

pub mod chain;
pub mod kubernetes;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{ConfigMap, Container, Namespace, PodSpec, Secret};
use k8s_openapi::api::storage::v1::{CSIDriver, StorageClass};
use kube::api::{Api, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube_sim::RequestRecord;
use serde_json::Value;
use testbed::{Settings, Testbed};

/// The operator's identity in kube-sim's request log (its service account in OpenShift).
pub const OPERATOR_USER: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:openstack-cinder-csi-driver-operator";
pub const CR: &str = "cinder.csi.openstack.org";
pub const NS: &str = testbed::DRIVER_NAMESPACE;
pub const CONTROLLER: &str = "openstack-cinder-csi-driver-controller";
pub const NODE: &str = "openstack-cinder-csi-driver-node";
pub const STORAGE_CLASS: &str = "standard-csi";
pub const TRUSTED_CA: &str = "openstack-cinder-csi-driver-trusted-ca-bundle";
/// Hash annotation of Secret `openshift-cluster-csi-drivers/openstack-cloud-credentials`
/// (anchors §1.6).
pub const CREDENTIALS_HASH_KEY: &str =
    "operator.openshift.io/dep-4b51488ec5b742a098d092dfe49449df0986e";
/// Hash annotation of the trusted CA bundle ConfigMap (anchors §1.6).
pub const TRUSTED_CA_HASH_KEY: &str =
    "operator.openshift.io/dep-28104e6bcb20f4d44a571c8e2f3f0a1f5a880";
/// The operator's resync period in these tests.
pub const RESYNC: Duration = Duration::from_secs(2);
/// How long any state may take to appear on a loaded machine.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Starts the emulators with default settings.
pub async fn bed() -> Testbed {
    bed_with(Settings::default()).await
}

pub async fn bed_with(settings: Settings) -> Testbed {
    Testbed::start(settings).await.expect("testbed starts")
}

/// The `csi-operator openstack-cinder start` process; killed on drop.
pub struct OperatorProcess {
    child: Child,
    kubeconfig: PathBuf,
    log: PathBuf,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl OperatorProcess {
    /// Runs the binary against `bed` as [`OPERATOR_USER`], with the example images and a
    /// short resync.
    pub fn start(bed: &Testbed) -> Self {
        Self::spawn(
            bed,
            OPERATOR_USER,
            &[
                "openstack-cinder",
                "start",
                "--namespace",
                NS,
                "--topology-refresh",
                "10m",
            ],
            testbed::example_images(),
        )
    }

    /// Like [`OperatorProcess::start`], with `extra` flags after the usual ones.
    pub fn start_with(bed: &Testbed, extra: &[&str]) -> Self {
        let mut args = vec![
            "openstack-cinder",
            "start",
            "--namespace",
            NS,
            "--topology-refresh",
            "10m",
        ];
        args.extend_from_slice(extra);
        Self::spawn(bed, OPERATOR_USER, &args, testbed::example_images())
    }

    /// Runs `csi-operator openstack-manila start` against `bed` as [`MANILA_OPERATOR_USER`],
    /// with the example images, a short resync and `--share-type-refresh share_type_refresh`.
    pub fn start_manila(bed: &Testbed, share_type_refresh: &str) -> Self {
        Self::spawn(
            bed,
            MANILA_OPERATOR_USER,
            &[
                "openstack-manila",
                "start",
                "--namespace",
                NS,
                "--share-type-refresh",
                share_type_refresh,
            ],
            manila_images(),
        )
    }

    /// Runs `csi-operator cluster-storage start` against `bed` as [`CSO_USER`] with the
    /// environment of the CSO Deployment manifest (overridden by `env`) and `extra` flags.
    pub fn start_cso(bed: &Testbed, extra: &[&str], env: BTreeMap<String, String>) -> Self {
        let mut all_env = cso_manifest_env();
        all_env.extend(env);
        let mut args = vec!["cluster-storage", "start"];
        args.extend_from_slice(extra);
        Self::spawn(bed, CSO_USER, &args, all_env)
    }

    /// Runs the binary with `args` (subcommand first) as `user`, plus the flags every
    /// end-to-end test shares: any free metrics port, a short resync, a fixed identity.
    fn spawn(bed: &Testbed, user: &str, args: &[&str], images: BTreeMap<String, String>) -> Self {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let stem = format!(
            "csi-operator-e2e-{}-{}-{n}",
            std::process::id(),
            bed.kube.addr().port()
        );
        let dir = std::env::temp_dir();
        let kubeconfig = dir.join(format!("{stem}.kubeconfig"));
        let log = dir.join(format!("{stem}.log"));
        std::fs::write(&kubeconfig, bed.kube.kubeconfig(user)).expect("kubeconfig");
        let out = std::fs::File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_csi-operator"))
            .args(args)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args([
                "--metrics-listen",
                "127.0.0.1:0",
                "--resync",
                "2s",
                "--identity",
                "e2e",
            ])
            .envs(images)
            .env_remove("POD_NAME")
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .expect("csi-operator starts");
        Self {
            child,
            kubeconfig,
            log,
        }
    }

    /// The process has not exited.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends SIGTERM (what the kubelet sends when a pod is deleted) and waits up to `within`
    /// for the process to exit; whether it did.
    pub async fn terminate(&mut self, within: Duration) -> bool {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {pid}");
        let until = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < until {
            if !self.is_running() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    /// Everything the process printed so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last lines of the output, for failure messages.
    pub fn tail(&self) -> String {
        let out = self.output();
        let lines: Vec<&str> = out.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- csi-operator output (tail) ---\n{}\n---", self.tail());
        }
        let _ = std::fs::remove_file(&self.kubeconfig);
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Polls `check` until it yields a value; panics with `what` and the last observation when
/// [`DEADLINE`] passes.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let until = tokio::time::Instant::now() + DEADLINE;
    loop {
        match check().await {
            Ok(v) => return v,
            Err(last) if tokio::time::Instant::now() >= until => {
                panic!("timed out waiting for {what}; last seen: {last}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// ClusterCSIDriver conditions: type → (status, reason, message).
pub type Conditions = BTreeMap<String, (String, String, String)>;

/// Waits until the controller and node services are Available and every `*Degraded` is False.
pub async fn wait_available(bed: &Testbed) -> Conditions {
    eventually("the ClusterCSIDriver to become Available", || async {
        let c = bed.conditions(CR).await;
        let ok = |t: &str| c.get(t).is_some_and(|(s, _, _)| s == "True");
        let degraded: Vec<&String> = c
            .iter()
            .filter(|(t, (s, _, _))| t.ends_with("Degraded") && s != "False")
            .map(|(t, _)| t)
            .collect();
        if ok("OpenStackCinderDriverControllerServiceControllerAvailable")
            && ok("OpenStackCinderDriverNodeServiceControllerAvailable")
            && degraded.is_empty()
        {
            Ok(c)
        } else {
            Err(format!("{c:#?}"))
        }
    })
    .await
}

/// Waits until condition `type_` has `status`; returns its (reason, message).
pub async fn wait_condition(bed: &Testbed, type_: &str, status: &str) -> (String, String) {
    eventually(&format!("{type_}={status}"), || async {
        let c = bed.conditions(CR).await;
        match c.get(type_) {
            Some((s, reason, message)) if s == status => Ok((reason.clone(), message.clone())),
            _ => Err(format!("{c:#?}")),
        }
    })
    .await
}

fn cr_api(bed: &Testbed) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("operator.openshift.io", "v1", "ClusterCSIDriver"),
        "clustercsidrivers",
    );
    Api::all_with(bed.client.clone(), &ar)
}

/// Merge-patches the ClusterCSIDriver's `spec` as the admin.
pub async fn patch_cr_spec(bed: &Testbed, spec: Value) {
    patch_cr_spec_of(bed, CR, spec).await
}

/// Merge-patches the `spec` of ClusterCSIDriver `cr` as the admin.
pub async fn patch_cr_spec_of(bed: &Testbed, cr: &str, spec: Value) {
    cr_api(bed)
        .patch(
            cr,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "spec": spec })),
        )
        .await
        .expect("patch ClusterCSIDriver");
}

pub async fn deployment(bed: &Testbed) -> Option<Deployment> {
    Api::<Deployment>::namespaced(bed.client.clone(), NS)
        .get_opt(CONTROLLER)
        .await
        .expect("get Deployment")
}

pub async fn daemonset(bed: &Testbed) -> Option<DaemonSet> {
    Api::<DaemonSet>::namespaced(bed.client.clone(), NS)
        .get_opt(NODE)
        .await
        .expect("get DaemonSet")
}

pub async fn config_map(bed: &Testbed, ns: &str, name: &str) -> Option<ConfigMap> {
    Api::<ConfigMap>::namespaced(bed.client.clone(), ns)
        .get_opt(name)
        .await
        .expect("get ConfigMap")
}

pub async fn storage_class(bed: &Testbed) -> Option<StorageClass> {
    Api::<StorageClass>::all(bed.client.clone())
        .get_opt(STORAGE_CLASS)
        .await
        .expect("get StorageClass")
}

pub async fn csi_driver(bed: &Testbed) -> Option<CSIDriver> {
    Api::<CSIDriver>::all(bed.client.clone())
        .get_opt(CR)
        .await
        .expect("get CSIDriver")
}

/// `cloud-conf` data, once it exists.
pub async fn cloud_conf(bed: &Testbed) -> Option<BTreeMap<String, String>> {
    config_map(bed, NS, "cloud-conf").await.and_then(|c| c.data)
}

pub fn deployment_pod(d: &Deployment) -> Option<&PodSpec> {
    d.spec.as_ref().and_then(|s| s.template.spec.as_ref())
}

pub fn daemonset_pod(d: &DaemonSet) -> Option<&PodSpec> {
    d.spec.as_ref().and_then(|s| s.template.spec.as_ref())
}

pub fn container<'a>(pod: Option<&'a PodSpec>, name: &str) -> Option<&'a Container> {
    pod.and_then(|p| p.containers.iter().find(|c| c.name == name))
}

pub fn deployment_template_annotations(d: &Deployment) -> BTreeMap<String, String> {
    d.spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default()
}

pub fn daemonset_template_annotations(d: &DaemonSet) -> BTreeMap<String, String> {
    d.spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default()
}

/// Requests the operator process made (by its kubeconfig user).
pub fn operator_requests(bed: &Testbed) -> Vec<RequestRecord> {
    bed.kube
        .requests()
        .into_iter()
        .filter(|r| r.user == OPERATOR_USER)
        .collect()
}

pub fn is_write(r: &RequestRecord) -> bool {
    matches!(
        r.verb.as_str(),
        "create" | "update" | "patch" | "delete" | "deletecollection"
    )
}

/// Leader election renews a Lease while the operator runs; that is not a write to anything
/// the operator manages.
pub fn is_lease(r: &RequestRecord) -> bool {
    r.resource == "coordination.k8s.io/leases"
}

pub fn describe(r: &RequestRecord) -> String {
    format!(
        "{} {} {}{} -> {}",
        r.verb,
        r.path,
        r.query,
        if r.subresource.is_empty() {
            String::new()
        } else {
            format!(" [{}]", r.subresource)
        },
        r.code
    )
}

/// Waits until the operator has made no write (lease renewals aside) for two resync periods,
/// so a following measurement starts from steady state.
pub async fn wait_quiet(bed: &Testbed) {
    eventually("the operator to stop writing", || async {
        bed.kube.clear_requests();
        tokio::time::sleep(RESYNC * 2).await;
        let writes: Vec<String> = operator_requests(bed)
            .iter()
            .filter(|r| is_write(r) && !is_lease(r))
            .map(describe)
            .collect();
        if writes.is_empty() {
            Ok(())
        } else {
            Err(format!("{writes:#?}"))
        }
    })
    .await
}

/// Every Event message in the cluster (to check that no secret leaks into them).
pub async fn event_messages(bed: &Testbed) -> Vec<String> {
    use k8s_openapi::api::core::v1::Event;
    Api::<Event>::all(bed.client.clone())
        .list(&Default::default())
        .await
        .map(|l| l.items.into_iter().filter_map(|e| e.message).collect())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// The Manila operator.

/// The Manila operator's identity in kube-sim's request log (its service account in OpenShift,
/// anchors §3.3).
pub const MANILA_OPERATOR_USER: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:manila-csi-driver-operator";
pub const MANILA_CR: &str = "manila.csi.openstack.org";
/// The namespace of the Manila driver's objects.
pub const MANILA_NS: &str = "openshift-manila-csi-driver";
/// The Secret the Manila driver pods mount (CredentialsRequest `manila-csi-drivers`).
pub const MANILA_CREDENTIALS: &str = "manila-cloud-credentials";
pub const MANILA_CONTROLLER: &str = "openstack-manila-csi-controllerplugin";
pub const MANILA_NODE: &str = "openstack-manila-csi-nodeplugin";
pub const MANILA_NFS_NODE: &str = "csi-nodeplugin-nfsplugin";

/// The example images plus the NFS driver image the Manila operator also needs.
pub fn manila_images() -> BTreeMap<String, String> {
    let mut images = testbed::example_images();
    images.insert(
        "NFS_DRIVER_IMAGE".into(),
        "quay.io/example/csi-driver-nfs:v4.20".into(),
    );
    images
}

/// Testbed settings for Manila: openstack-sim offers `share_types` (`None`: no Manila at all)
/// and no Cinder ClusterCSIDriver is created (no Cinder operator runs in these tests).
pub fn manila_settings(share_types: Option<&[&str]>) -> Settings {
    let mut s = Settings {
        cinder_cluster_csi_driver: false,
        ..Settings::default()
    };
    s.openstack.share_types = share_types.map(|names| {
        names
            .iter()
            .map(|n| openstack_sim::SimShareType::new(n))
            .collect()
    });
    s
}

/// What CSO and the cloud credential operator leave behind for the Manila operator, whether or
/// not the cloud has Manila: the ClusterCSIDriver, the driver namespace (CSO's asset, anchors
/// §3.3) and `manila-cloud-credentials` in it (CredentialsRequest `manila-csi-drivers`, §3.5).
/// Each object is created only when missing, so a testbed that already seeds it is fine.
pub async fn seed_manila(bed: &Testbed) {
    if cr_api(bed)
        .get_opt(MANILA_CR)
        .await
        .expect("get ClusterCSIDriver")
        .is_none()
    {
        bed.create_cluster_csi_driver(MANILA_CR)
            .await
            .expect("Manila ClusterCSIDriver");
    }
    let namespaces: Api<Namespace> = Api::all(bed.client.clone());
    if namespaces
        .get_opt(MANILA_NS)
        .await
        .expect("get Namespace")
        .is_none()
    {
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {
                "name": MANILA_NS,
                "annotations": {
                    "openshift.io/node-selector": "",
                    "workload.openshift.io/allowed": "management",
                },
                "labels": {
                    "pod-security.kubernetes.io/enforce": "privileged",
                    "pod-security.kubernetes.io/audit": "privileged",
                    "pod-security.kubernetes.io/warn": "privileged",
                },
            },
        }))
        .expect("Namespace");
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .expect("create the Manila namespace");
    }
    put_manila_credentials(bed, &bed.clouds_yaml()).await;
}

/// Creates or replaces `openshift-manila-csi-driver/manila-cloud-credentials` (as the cloud
/// credential operator does on a rotation).
pub async fn put_manila_credentials(bed: &Testbed, clouds_yaml: &str) {
    let api: Api<Secret> = Api::namespaced(bed.client.clone(), MANILA_NS);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(MANILA_CREDENTIALS.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "clouds.yaml".to_string(),
            ByteString(clouds_yaml.as_bytes().to_vec()),
        )])),
        type_: Some("Opaque".into()),
        ..Default::default()
    };
    api.patch(
        MANILA_CREDENTIALS,
        &PatchParams::apply("cloud-credential-operator").force(),
        &Patch::Apply(&secret),
    )
    .await
    .expect("manila-cloud-credentials");
}

/// Waits until condition `type_` of ClusterCSIDriver `cr` has `status`; returns its
/// (reason, message).
pub async fn wait_condition_of(
    bed: &Testbed,
    cr: &str,
    type_: &str,
    status: &str,
) -> (String, String) {
    eventually(&format!("{cr}: {type_}={status}"), || async {
        let c = bed.conditions(cr).await;
        match c.get(type_) {
            Some((s, reason, message)) if s == status => Ok((reason.clone(), message.clone())),
            _ => Err(format!("{c:#?}")),
        }
    })
    .await
}

/// Waits until the three Manila driver services are Available, every `*Degraded` is False and
/// `CSIControllerDisabled` is gone.
pub async fn wait_manila_available(bed: &Testbed) -> Conditions {
    eventually(
        "the Manila ClusterCSIDriver to become Available",
        || async {
            let c = bed.conditions(MANILA_CR).await;
            let ok = |t: &str| c.get(t).is_some_and(|(s, _, _)| s == "True");
            let degraded = c
                .iter()
                .any(|(t, (s, _, _))| t.ends_with("Degraded") && s != "False");
            if ok("OpenStackManilaDriverControllerServiceControllerAvailable")
                && ok("OpenStackManilaDriverNodeServiceControllerAvailable")
                && ok("NFSDriverNodeServiceControllerAvailable")
                && !degraded
                && !c.contains_key("CSIControllerDisabled")
            {
                Ok(c)
            } else {
                Err(format!("{c:#?}"))
            }
        },
    )
    .await
}

/// Requests made by the kube-sim user `user`.
pub fn requests_of(bed: &Testbed, user: &str) -> Vec<RequestRecord> {
    bed.kube
        .requests()
        .into_iter()
        .filter(|r| r.user == user)
        .collect()
}

/// [`wait_quiet`] for the process running as `user`.
pub async fn wait_quiet_as(bed: &Testbed, user: &str) {
    eventually("the operator to stop writing", || async {
        bed.kube.clear_requests();
        tokio::time::sleep(RESYNC * 2).await;
        let writes: Vec<String> = requests_of(bed, user)
            .iter()
            .filter(|r| is_write(r) && !is_lease(r))
            .map(describe)
            .collect();
        if writes.is_empty() {
            Ok(())
        } else {
            Err(format!("{writes:#?}"))
        }
    })
    .await
}

/// Whether `api_version`/`kind` `name` (in `namespace`, if namespaced) exists, read as the
/// admin through discovery-free dynamic access.
pub async fn exists(
    bed: &Testbed,
    api_version: &str,
    kind: &str,
    plural: &str,
    namespace: Option<&str>,
    name: &str,
) -> bool {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(bed.client.clone(), ns, &ar),
        None => Api::all_with(bed.client.clone(), &ar),
    };
    matches!(api.get_opt(name).await, Ok(Some(_)))
}

// ---------------------------------------------------------------------------------------------
// The Cluster Storage Operator.

/// The CSO's identity in kube-sim's request log (its service account, manifests/openshift).
pub const CSO_USER: &str =
    "system:serviceaccount:openshift-cluster-storage-operator:cluster-storage-operator";

/// `manifests/openshift/` of this repository.
pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../manifests/openshift")
}

/// The `env` of the CSO Deployment manifest (the images and versions the CVO gives it).
pub fn cso_manifest_env() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(
        manifest_dir().join("0000_50_cluster-storage-operator_10_deployment.yaml"),
    )
    .expect("the CSO Deployment manifest");
    let docs = operator_kit::assets::parse_values("deployment", &text).expect("parses");
    docs[0]["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .expect("env list")
        .iter()
        .filter_map(|e| {
            Some((
                e["name"].as_str()?.to_owned(),
                e["value"].as_str()?.to_owned(),
            ))
        })
        .collect()
}

/// Applies `manifests/openshift/` as the cluster version operator would, after creating the
/// cloud credential operator's namespace (its manifest is the CCO's, not ours).
pub async fn apply_manifests(bed: &Testbed) {
    testbed::cco::create_namespace(&bed.client)
        .await
        .expect("the CCO namespace");
    testbed::cvo::apply_dir(&bed.client, &manifest_dir())
        .await
        .expect("the manifests apply");
}

fn dynamic_api(bed: &Testbed, api_version: &str, kind: &str) -> Api<DynamicObject> {
    let ar = operator_kit::kinds::api_resource(api_version, kind).expect("known kind");
    Api::all_with(bed.client.clone(), &ar)
}

/// A cluster-scoped object by kind and name, as JSON.
pub async fn cluster_object(
    bed: &Testbed,
    api_version: &str,
    kind: &str,
    name: &str,
) -> Option<Value> {
    dynamic_api(bed, api_version, kind)
        .get_opt(name)
        .await
        .ok()
        .flatten()
        .and_then(|o| serde_json::to_value(o).ok())
}

/// Conditions of a status as type → (status, reason, message).
pub fn conditions_of(obj: &Value) -> Conditions {
    obj["status"]["conditions"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    let f = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
                    (f("type"), (f("status"), f("reason"), f("message")))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `ClusterOperator/storage`, as JSON (Null when missing).
pub async fn cluster_operator(bed: &Testbed) -> Value {
    cluster_object(bed, "config.openshift.io/v1", "ClusterOperator", "storage")
        .await
        .unwrap_or(Value::Null)
}

/// `Storage/cluster`, as JSON (Null when missing).
pub async fn storage(bed: &Testbed) -> Value {
    cluster_object(bed, "operator.openshift.io/v1", "Storage", "cluster")
        .await
        .unwrap_or(Value::Null)
}

/// Merge-patches a cluster-scoped object's status.
pub async fn patch_status(bed: &Testbed, api_version: &str, kind: &str, name: &str, status: Value) {
    dynamic_api(bed, api_version, kind)
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": status})),
        )
        .await
        .expect("status patch");
}

/// Merge-patches a cluster-scoped object.
pub async fn patch_object(bed: &Testbed, api_version: &str, kind: &str, name: &str, patch: Value) {
    dynamic_api(bed, api_version, kind)
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("patch");
}

/// A Deployment in a namespace.
pub async fn deployment_in(bed: &Testbed, ns: &str, name: &str) -> Option<Deployment> {
    Api::<Deployment>::namespaced(bed.client.clone(), ns)
        .get_opt(name)
        .await
        .ok()
        .flatten()
}

/// Waits until `ClusterOperator/storage` has condition `type_` with `status`; returns it.
pub async fn wait_co_condition(
    bed: &Testbed,
    type_: &str,
    status: &str,
) -> (String, String, String) {
    eventually(
        &format!("ClusterOperator/storage {type_}={status}"),
        || async {
            let co = cluster_operator(bed).await;
            let conds = conditions_of(&co);
            match conds.get(type_) {
                Some(c) if c.0 == status => Ok(c.clone()),
                other => Err(format!("{other:?} (all: {conds:#?})")),
            }
        },
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// Several replicas of the Cinder operator (fencing).

impl OperatorProcess {
    /// Runs `csi-operator openstack-cinder start` as one replica among several: as kube-sim
    /// user `user`, with lease identity `identity` (its pod name), the example images, a short
    /// resync and `extra` flags (e.g. `--leader-elect-*`). kube-sim tells clients apart only by
    /// user, so each replica needs its own.
    pub fn start_cinder_replica(bed: &Testbed, user: &str, identity: &str, extra: &[&str]) -> Self {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let stem = format!(
            "csi-operator-e2e-{}-{}-{n}",
            std::process::id(),
            bed.kube.addr().port()
        );
        let dir = std::env::temp_dir();
        let kubeconfig = dir.join(format!("{stem}.kubeconfig"));
        let log = dir.join(format!("{stem}.log"));
        std::fs::write(&kubeconfig, bed.kube.kubeconfig(user)).expect("kubeconfig");
        let out = std::fs::File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_csi-operator"))
            .args(["openstack-cinder", "start", "--namespace", NS])
            .args(["--topology-refresh", "10m", "--resync", "2s"])
            .args(["--metrics-listen", "127.0.0.1:0", "--identity", identity])
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(extra)
            .envs(testbed::example_images())
            // The error a replica exits with stays readable in its output.
            .env("RUST_LIB_BACKTRACE", "0")
            .env_remove("POD_NAME")
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .expect("csi-operator starts");
        Self {
            child,
            kubeconfig,
            log,
        }
    }
}

/// Grants the Cinder operator's rights as the CSO applies them (its Roles, ClusterRole and their
/// bindings, from `cluster_storage::build::operator_objects`) to the service accounts `users`
/// (`system:serviceaccount:<ns>:<name>`), each binding naming all of them. Creates the objects
/// as the admin; kube-sim enforces them when RBAC is on (`SimConfig::rbac`).
pub async fn grant_cinder_operator_rbac(bed: &Testbed, users: &[&str]) {
    grant_driver_operator_rbac(bed, "openstack-cinder", users).await;
}

/// [`grant_cinder_operator_rbac`] for any driver operator of the CSO's registry (`driver`:
/// `openstack-cinder`, `openstack-manila`).
pub async fn grant_driver_operator_rbac(bed: &Testbed, driver: &str, users: &[&str]) {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding, Subject};
    let driver = cluster_storage::registry::find(driver).expect("a driver of the registry");
    let inputs = cluster_storage::build::Inputs {
        env: cso_manifest_env(),
        ..Default::default()
    };
    let objects = cluster_storage::build::operator_objects(driver, &inputs).expect("builds");
    let subjects: Vec<Subject> = users
        .iter()
        .map(|user| {
            let (namespace, name) =
                kube_sim::rbac::service_account_of(user).expect("a service account user");
            Subject {
                kind: "ServiceAccount".into(),
                name: name.into(),
                namespace: Some(namespace.into()),
                ..Default::default()
            }
        })
        .collect();
    let pp = PostParams::default();
    for role in &objects.roles {
        let ns = role.metadata.namespace.as_deref().expect("namespaced Role");
        Api::<Role>::namespaced(bed.client.clone(), ns)
            .create(&pp, role)
            .await
            .expect("create the operator's Role");
    }
    for binding in &objects.role_bindings {
        let ns = binding.metadata.namespace.as_deref().expect("namespaced");
        let mut binding = binding.clone();
        binding.subjects = Some(subjects.clone());
        Api::<RoleBinding>::namespaced(bed.client.clone(), ns)
            .create(&pp, &binding)
            .await
            .expect("create the operator's RoleBinding");
    }
    Api::<ClusterRole>::all(bed.client.clone())
        .create(&pp, &objects.cluster_role)
        .await
        .expect("create the operator's ClusterRole");
    let mut binding = objects.cluster_role_binding.clone();
    binding.subjects = Some(subjects);
    Api::<ClusterRoleBinding>::all(bed.client.clone())
        .create(&pp, &binding)
        .await
        .expect("create the operator's ClusterRoleBinding");
}

/// The holder of the Cinder operator's Lease, empty when none.
pub async fn cinder_lease_holder(bed: &Testbed) -> String {
    Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(bed.client.clone(), NS)
        .get_opt(cinder::OPERATOR_LOCK_NAME)
        .await
        .expect("get the Lease")
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .unwrap_or_default()
}
