//! The whole chain as it runs on a cluster, for `chain_e2e.rs`: kube-sim with RBAC enforced
//! and its process runner mapping the release's operator images to this crate's binary, the
//! cloud credential operator stand-in, and `manifests/openshift/` applied as the cluster version
//! operator applies it. From there nothing runs in the test process: kube-sim starts the CSO's
//! pod under its service account, the CSO creates the driver operator Deployments, whose pods
//! kube-sim runs the same way.
//!
//! Tests here observe only: kube-sim's store through the admin client, its process table and its
//! request log and RBAC denials. Every wait polls with [`CHAIN_DEADLINE`] (three operator
//! processes start on a loaded 2-core machine) and asserts states, never timings. When a test
//! panics, the [`Chain`] guard prints every operator pod's state and output tail and the RBAC
//! denials, so a failure says which operator stopped where.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use kube_sim::{LocalProgram, ProcessConfig, ProcessInfo, RbacConfig};
use serde_json::{Value, json};
use testbed::cvo::Manifest;
use testbed::{Settings, Testbed};

use super::{Conditions, cluster_object, conditions_of, manifest_dir, patch_status};

/// The Available conditions of a Cinder driver that is up.
pub const CINDER_AVAILABLE: [&str; 2] = [
    "OpenStackCinderDriverControllerServiceControllerAvailable",
    "OpenStackCinderDriverNodeServiceControllerAvailable",
];
/// The Available conditions of a Manila driver that is up.
pub const MANILA_AVAILABLE: [&str; 3] = [
    "OpenStackManilaDriverControllerServiceControllerAvailable",
    "OpenStackManilaDriverNodeServiceControllerAvailable",
    "NFSDriverNodeServiceControllerAvailable",
];
/// A healthy `ClusterOperator/storage`.
pub const HEALTHY: [(&str, &str); 3] = [
    ("Available", "True"),
    ("Progressing", "False"),
    ("Degraded", "False"),
];

/// How long any state of the chain may take to appear.
pub const CHAIN_DEADLINE: Duration = Duration::from_secs(90);

pub const CSO_NS: &str = "openshift-cluster-storage-operator";
pub const CSO_DEPLOYMENT: &str = "cluster-storage-operator";
pub const CINDER_OPERATOR: &str = "openstack-cinder-csi-driver-operator";
pub const MANILA_OPERATOR: &str = "manila-csi-driver-operator";
/// The image the release manifests give the CSO (and, by default, both driver operators).
pub const RELEASE_IMAGE: &str = "quay.io/example/csi-operator:v4.20";
/// The CSO environment variables that name the driver operators' images.
pub const CINDER_OPERATOR_IMAGE_ENV: &str = "OPENSTACK_CINDER_DRIVER_OPERATOR_IMAGE";
pub const MANILA_OPERATOR_IMAGE_ENV: &str = "MANILA_DRIVER_OPERATOR_IMAGE";

/// This crate's binary as an image runs it: the image's `csi-operator` command word replaced
/// by the binary, metrics on any free port (three operators share loopback), then `extra`.
pub fn csi_operator(extra: &[&str]) -> LocalProgram {
    let mut extra_args = vec!["--metrics-listen=127.0.0.1:0".to_owned()];
    extra_args.extend(extra.iter().map(|a| a.to_string()));
    LocalProgram {
        program: env!("CARGO_BIN_EXE_csi-operator").into(),
        drop_leading: 1,
        extra_args,
        env: BTreeMap::new(),
    }
}

/// `manifests/openshift/` as the CVO reads it, with the CSO Deployment's container `image`
/// replaced when `image` is given and the listed `env` values replaced (each must exist: a
/// renamed variable must fail the test, not silently test nothing).
pub fn release(image: Option<&str>, env: &[(&str, &str)]) -> Vec<Manifest> {
    let mut manifests = testbed::cvo::load(&manifest_dir()).expect("the release manifests load");
    let cso = manifests
        .iter_mut()
        .find(|m| {
            m.object["kind"] == "Deployment" && m.object["metadata"]["name"] == CSO_DEPLOYMENT
        })
        .expect("the CSO Deployment manifest");
    let container = &mut cso.object["spec"]["template"]["spec"]["containers"][0];
    if let Some(image) = image {
        container["image"] = json!(image);
    }
    for (name, value) in env {
        let entry = container["env"]
            .as_array_mut()
            .and_then(|list| list.iter_mut().find(|e| e["name"] == *name))
            .unwrap_or_else(|| panic!("the CSO Deployment has no env var {name}"));
        entry["value"] = json!(value);
    }
    manifests
}

/// The CSO's image and every `*_OPERATOR_IMAGE` of its environment in `manifests`.
pub fn operator_images(manifests: &[Manifest]) -> BTreeSet<String> {
    let cso = manifests
        .iter()
        .find(|m| {
            m.object["kind"] == "Deployment" && m.object["metadata"]["name"] == CSO_DEPLOYMENT
        })
        .expect("the CSO Deployment manifest");
    let container = &cso.object["spec"]["template"]["spec"]["containers"][0];
    let mut images: BTreeSet<String> = container["image"]
        .as_str()
        .map(str::to_owned)
        .into_iter()
        .collect();
    for e in container["env"].as_array().into_iter().flatten() {
        if e["name"]
            .as_str()
            .is_some_and(|n| n.ends_with("_OPERATOR_IMAGE"))
            && let Some(v) = e["value"].as_str()
        {
            images.insert(v.to_owned());
        }
    }
    images
}

/// Every image of `manifests` (see [`operator_images`]) run as [`csi_operator`] with no extra
/// flags, as the demo maps them. Output is kept in memory (no log directory).
pub fn processes_for(manifests: &[Manifest]) -> ProcessConfig {
    operator_images(manifests)
        .into_iter()
        .fold(ProcessConfig::default(), |c, image| {
            c.with_image(image, csi_operator(&[]))
        })
}

/// Every object of the kind `ar` names in the cluster, as JSON.
async fn list_json(bed: &Testbed, ar: &kube::core::ApiResource) -> Result<Vec<Value>, String> {
    let list = kube::api::Api::<kube::api::DynamicObject>::all_with(bed.client.clone(), ar)
        .list(&Default::default())
        .await
        .map_err(|e| e.to_string())?;
    list.items
        .iter()
        .map(|o| serde_json::to_value(o).map_err(|e| e.to_string()))
        .collect()
}

/// A running chain; stops the CCO stand-in on drop (kube-sim kills the pods when the testbed
/// goes) and, when the test panics, prints what every operator pod did.
pub struct Chain {
    pub bed: Testbed,
    cco: tokio::task::JoinHandle<()>,
    /// The CVO stand-in's retries of manifests behind the ClusterOperator barrier.
    cvo: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Chain {
    /// Starts the emulators with RBAC enforced and `processes`, sets the Infrastructure
    /// platform when `platform` is given (before anything reads it), runs the CCO stand-in and
    /// applies `manifests` as the CVO.
    pub async fn start(
        mut settings: Settings,
        processes: ProcessConfig,
        platform: Option<&str>,
        manifests: &[Manifest],
    ) -> Self {
        settings.kube.rbac = Some(RbacConfig::default());
        settings.kube.processes = Some(processes);
        let bed = Testbed::start(settings).await.expect("testbed starts");
        if let Some(p) = platform {
            patch_status(
                &bed,
                "config.openshift.io/v1",
                "Infrastructure",
                "cluster",
                json!({"platformStatus": {"type": p}, "platform": p}),
            )
            .await;
        }
        testbed::cco::create_namespace(&bed.client)
            .await
            .expect("the CCO namespace");
        let cco = testbed::cco::spawn(bed.client.clone(), Duration::from_millis(250));
        let chain = Self {
            bed,
            cco,
            cvo: Default::default(),
        };
        chain.apply(manifests).await;
        chain
    }

    /// Starts the emulators with RBAC enforced and `processes` and nothing else: for plain
    /// Kubernetes (`Settings::plain_kubernetes`), where no cloud credential operator runs and
    /// the test installs as a user would.
    pub async fn bare(mut settings: Settings, processes: ProcessConfig) -> Self {
        settings.kube.rbac = Some(RbacConfig::default());
        settings.kube.processes = Some(processes);
        let bed = Testbed::start(settings).await.expect("testbed starts");
        Self {
            bed,
            cco: tokio::spawn(async {}),
            cvo: Default::default(),
        }
    }

    /// Applies `manifests` as the CVO (also for an upgrade: changed objects are updated): one
    /// attempt now, which must be refused nothing, then the CVO's retries in the background
    /// for what waits behind the ClusterOperator barrier (the CSO's ServiceMonitor, alerts and
    /// admission policies wait until the CSO reports Available, as on a cluster).
    pub async fn apply(&self, manifests: &[Manifest]) {
        testbed::cvo::apply(&self.bed.client, manifests)
            .await
            .expect("the release manifests apply");
        let retries = testbed::cvo::spawn(
            self.bed.client.clone(),
            manifests.to_vec(),
            testbed::cvo::Options::default(),
            Duration::from_millis(500),
        );
        if let Ok(mut tasks) = self.cvo.lock() {
            tasks.push(retries);
        }
    }

    /// The process-backed pods of Deployment `namespace/name`.
    pub fn pods(&self, namespace: &str, name: &str) -> Vec<ProcessInfo> {
        self.bed
            .kube
            .processes()
            .into_iter()
            .filter(|p| p.namespace == namespace && p.deployment == name)
            .collect()
    }

    /// Waits until Deployment `namespace/name` has exactly one pod and it runs; returns it.
    pub async fn wait_running(&self, namespace: &str, name: &str) -> ProcessInfo {
        self.wait(&format!("the pod of {namespace}/{name} to run"), || async {
            match self.pods(namespace, name).as_slice() {
                [p] if p.running() => Ok(p.clone()),
                other => Err(format!("{other:#?}")),
            }
        })
        .await
    }

    /// The RBAC denials, one readable line each, repeats counted (an operator retries a
    /// refused request every resync).
    pub fn denials(&self) -> Vec<String> {
        let mut counted: BTreeMap<String, usize> = BTreeMap::new();
        for d in self.bed.kube.forbidden_requests() {
            *counted.entry(d).or_default() += 1;
        }
        counted
            .into_iter()
            .map(|(d, n)| if n == 1 { d } else { format!("{d} (x{n})") })
            .collect()
    }

    /// Asserts that RBAC refused nothing, listing every refusal otherwise.
    pub fn assert_no_denials(&self) {
        let denied = self.denials();
        assert!(
            denied.is_empty(),
            "RBAC refused {} distinct request(s); the operators need these rules:\n{}",
            denied.len(),
            denied.join("\n")
        );
    }

    /// The users whose `verb` (any write when `None`) on `resource` (`group/plural`, core as
    /// `/plural`) `namespace/name` succeeded; `subresource` must match when given (`""`: the
    /// object itself).
    pub fn writers(
        &self,
        verb: Option<&str>,
        resource: &str,
        subresource: Option<&str>,
        namespace: &str,
        name: &str,
    ) -> BTreeSet<String> {
        self.bed
            .kube
            .requests()
            .into_iter()
            .filter(|r| {
                verb.map_or(r.is_write(), |v| r.verb == v)
                    && (200..300).contains(&r.code)
                    && r.resource == resource
                    && subresource.is_none_or(|s| r.subresource == s)
                    && r.namespace == namespace
                    && r.name == name
            })
            .map(|r| r.user)
            .collect()
    }

    /// Polls `check` until it yields a value; on timeout panics with `what` and the last
    /// observation (the guard adds the operators' output).
    pub async fn wait<T, F, Fut>(&self, what: &str, mut check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, String>>,
    {
        let until = tokio::time::Instant::now() + CHAIN_DEADLINE;
        loop {
            match check().await {
                Ok(v) => return v,
                Err(last) if tokio::time::Instant::now() >= until => {
                    panic!("timed out waiting for {what}; last seen: {last}")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    /// Waits until every Deployment and DaemonSet in the cluster has all its pods created:
    /// admission (SCCs and Pod Security, as OpenShift runs them) refused none, so no Deployment
    /// has `ReplicaFailure` and each has its replicas, and each DaemonSet has as many pods
    /// scheduled as it wants. Returns how many workloads were checked.
    pub async fn wait_pods_admitted(&self) -> usize {
        self.wait("every workload's pods to be admitted", || async {
            let mut problems = Vec::new();
            let deployments = list_json(
                &self.bed,
                &kube::core::ApiResource::erase::<Deployment>(&()),
            )
            .await?;
            let daemonsets =
                list_json(&self.bed, &kube::core::ApiResource::erase::<DaemonSet>(&())).await?;
            for d in &deployments {
                let name = format!(
                    "Deployment {}/{}",
                    d["metadata"]["namespace"], d["metadata"]["name"]
                );
                let conditions = d["status"]["conditions"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if let Some(f) = conditions.iter().find(|c| c["type"] == "ReplicaFailure") {
                    problems.push(format!("{name}: {}", f["message"]));
                } else if d["status"]["replicas"] != d["spec"]["replicas"] {
                    problems.push(format!(
                        "{name}: {} of {} replicas",
                        d["status"]["replicas"], d["spec"]["replicas"]
                    ));
                }
            }
            for d in &daemonsets {
                let name = format!(
                    "DaemonSet {}/{}",
                    d["metadata"]["namespace"], d["metadata"]["name"]
                );
                let (want, have) = (
                    &d["status"]["desiredNumberScheduled"],
                    &d["status"]["currentNumberScheduled"],
                );
                if want != have || want.is_null() {
                    problems.push(format!("{name}: {have} of {want} pods"));
                }
            }
            if problems.is_empty() {
                Ok(deployments.len() + daemonsets.len())
            } else {
                Err(problems.join("\n"))
            }
        })
        .await
    }

    /// `ClusterOperator/storage` conditions.
    pub async fn co_conditions(&self) -> Conditions {
        conditions_of(&super::cluster_operator(&self.bed).await)
    }

    /// Waits until `ClusterOperator/storage` has every `(type, status)` of `want` at once;
    /// returns the ClusterOperator.
    pub async fn wait_co(&self, want: &[(&str, &str)]) -> Value {
        self.wait(&format!("ClusterOperator/storage {want:?}"), || async {
            let co = super::cluster_operator(&self.bed).await;
            let c = conditions_of(&co);
            if want
                .iter()
                .all(|(t, s)| c.get(*t).is_some_and(|(status, _, _)| status == s))
            {
                Ok(co)
            } else {
                Err(format!("{c:#?}"))
            }
        })
        .await
    }

    /// Conditions of ClusterCSIDriver `cr` (empty while it does not exist).
    pub async fn cr_conditions(&self, cr: &str) -> Conditions {
        cluster_object(
            &self.bed,
            "operator.openshift.io/v1",
            "ClusterCSIDriver",
            cr,
        )
        .await
        .map(|o| conditions_of(&o))
        .unwrap_or_default()
    }

    /// Waits until ClusterCSIDriver `cr` has every type of `available` True and no
    /// `*Degraded` other than False; returns its conditions.
    pub async fn wait_driver(&self, cr: &str, available: &[&str]) -> Conditions {
        self.wait(
            &format!("ClusterCSIDriver {cr} to be available"),
            || async {
                let c = self.cr_conditions(cr).await;
                let ok = available
                    .iter()
                    .all(|t| c.get(*t).is_some_and(|(s, _, _)| s == "True"));
                let degraded = c
                    .iter()
                    .any(|(t, (s, _, _))| t.ends_with("Degraded") && s != "False");
                if ok && !degraded {
                    Ok(c)
                } else {
                    Err(format!("{c:#?}"))
                }
            },
        )
        .await
    }

    /// Every operator pod's state, restarts and output tail, and the RBAC denials.
    pub fn report(&self) -> String {
        let mut out = String::new();
        for p in self.bed.kube.processes() {
            out.push_str(&format!(
                "--- pod {}/{} ({}): {:?}, pid {:?}, restarts {}, last exit {:?}\n",
                p.namespace, p.pod, p.deployment, p.state, p.pid, p.restarts, p.last_exit
            ));
            let output = self
                .bed
                .kube
                .process_output(&p.namespace, &p.pod)
                .unwrap_or_default();
            let lines: Vec<&str> = output.lines().collect();
            for l in &lines[lines.len().saturating_sub(40)..] {
                out.push_str(l);
                out.push('\n');
            }
        }
        let denied = self.denials();
        out.push_str(&format!("--- RBAC denials: {}\n", denied.len()));
        for d in denied {
            out.push_str(&d);
            out.push('\n');
        }
        out
    }
}

impl Drop for Chain {
    fn drop(&mut self) {
        self.cco.abort();
        if let Ok(tasks) = self.cvo.lock() {
            tasks.iter().for_each(|t| t.abort());
        }
        if std::thread::panicking() {
            eprintln!("=== the chain at failure ===\n{}", self.report());
        }
    }
}
