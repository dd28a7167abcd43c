//! One fresh testbed per row: the whole chain as the demo runs it. kube-sim (RBAC enforced,
//! OpenShift pod admission) and openstack-sim run inside the bench process; kube-sim's process
//! runner plays the kubelet and runs every operator pod whose image is the release's operator
//! image as a process of the real `csi-operator` binary, under its service account, restarting
//! it when it exits; a stand-in cloud credential operator copies the root credentials into each
//! CredentialsRequest's Secret; `manifests/openshift/` is applied as the cluster version
//! operator applies it. From there the CSO starts, creates the driver operators' Deployments,
//! and their pods install the drivers.
//!
//! The root credentials hold a recognisable password ([`CANARY_PASSWORD`]) that openstack-sim
//! accepts, so the checks can look for it everywhere it must not be.
//!
//! Everything here observes kube-sim's store, process table and request log directly (not
//! through the API), so observing adds nothing to the request log and works while the API
//! server is down. Faults go through kube-sim's admin HTTP paths (`/__sim/…`), as a tester
//! outside the process would send them, and openstack-sim's handle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::Api;
use kube_sim::resources::GroupResource;
use kube_sim::{LocalProgram, ProcessConfig, ProcessInfo, RbacConfig, RequestRecord};
use operator_kit::apply::SPEC_HASH_ANNOTATION;
use operator_kit::hash::{
    DEP_ANNOTATION_PREFIX, DependencyKind, configmap_hash, dependency_annotation_key, secret_hash,
};
use serde_json::{Value, json};
use testbed::cvo::Manifest;
use testbed::{Settings, Testbed};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::sim_process::locate_binary;

/// The password of the OpenStack user the cluster's credentials name: planted so that the
/// secret scan can find it in any log, Event or status it leaks into.
pub(crate) const CANARY_PASSWORD: &str = "Rel1abil1ty-canary-7f3a9c2e";
/// The wrong password a rotation to bad credentials puts in clouds.yaml (also a secret).
pub(crate) const BAD_PASSWORD: &str = "Rel1abil1ty-wrong-5e8d1b4a";
/// The release manifests, applied as the cluster version operator does.
const MANIFEST_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../manifests/openshift");
/// The CSO Deployment in the release manifests.
const CSO_DEPLOYMENT: &str = "cluster-storage-operator";
/// The log level the rows run the operators at (Storage/cluster, which the CSO passes on to
/// both ClusterCSIDrivers): their debug logs are scanned for secrets too.
pub(crate) const LOG_LEVEL: &str = "Debug";
/// How often the CCO stand-in provisions CredentialsRequests (as the demo runs it).
const CCO_PERIOD: Duration = Duration::from_millis(250);
/// Bound on waiting for a process to exit after a signal.
const EXIT_LIMIT: Duration = Duration::from_secs(15);

/// Tells apart the log directories of rows run one after another by one bench process.
static CHAINS: AtomicUsize = AtomicUsize::new(0);

/// The three operators of the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Operator {
    Cso,
    Cinder,
    Manila,
}

impl Operator {
    pub(crate) const ALL: [Operator; 3] = [Operator::Cso, Operator::Cinder, Operator::Manila];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Operator::Cso => "CSO",
            Operator::Cinder => "Cinder",
            Operator::Manila => "Manila",
        }
    }

    pub(crate) fn namespace(self) -> &'static str {
        match self {
            Operator::Cso => "openshift-cluster-storage-operator",
            Operator::Cinder | Operator::Manila => testbed::DRIVER_NAMESPACE,
        }
    }

    pub(crate) fn deployment(self) -> &'static str {
        match self {
            Operator::Cso => CSO_DEPLOYMENT,
            Operator::Cinder => "openstack-cinder-csi-driver-operator",
            Operator::Manila => "manila-csi-driver-operator",
        }
    }

    /// Its service account, the user of its requests in kube-sim's log.
    pub(crate) fn user(self) -> String {
        format!(
            "system:serviceaccount:{}:{}",
            self.namespace(),
            self.deployment()
        )
    }

    /// Its leader-election Lease.
    pub(crate) fn lease(self) -> &'static str {
        match self {
            Operator::Cso => "cluster-storage-operator-lock",
            Operator::Cinder => "openstack-cinder-csi-driver-operator-lock",
            Operator::Manila => "openstack-manila-csi-driver-operator-lock",
        }
    }
}

/// One of the two ClusterCSIDrivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Driver {
    Cinder,
    Manila,
}

impl Driver {
    pub(crate) const ALL: [Driver; 2] = [Driver::Cinder, Driver::Manila];

    pub(crate) fn cr(self) -> &'static str {
        match self {
            Driver::Cinder => testbed::CINDER_CLUSTER_CSI_DRIVER,
            Driver::Manila => testbed::MANILA_CLUSTER_CSI_DRIVER,
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Driver::Cinder => "Cinder",
            Driver::Manila => "Manila",
        }
    }

    /// The `*Available` conditions of a driver that is up.
    pub(crate) fn available(self) -> &'static [&'static str] {
        match self {
            Driver::Cinder => &[
                "OpenStackCinderDriverControllerServiceControllerAvailable",
                "OpenStackCinderDriverNodeServiceControllerAvailable",
            ],
            Driver::Manila => &[
                "OpenStackManilaDriverControllerServiceControllerAvailable",
                "OpenStackManilaDriverNodeServiceControllerAvailable",
                "NFSDriverNodeServiceControllerAvailable",
            ],
        }
    }
}

/// One condition: status, reason, message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Condition {
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// Conditions by type.
pub(crate) type Conditions = BTreeMap<String, Condition>;

/// What the chain looks like at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub co: Conditions,
    pub drivers: BTreeMap<Driver, Conditions>,
}

/// The conditions in `status.conditions` of a stored object.
fn conditions_of(obj: &Value) -> Conditions {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
                    (
                        s("type").to_string(),
                        Condition {
                            status: s("status").to_string(),
                            reason: s("reason").to_string(),
                            message: s("message").to_string(),
                        },
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Collections left out of the object comparison: records of what happened (Events, Leases),
/// and what kube-sim's workload simulator derives with generated names.
const TRANSIENT: [&str; 7] = [
    "/events",
    "events.k8s.io/events",
    "coordination.k8s.io/leases",
    "/pods",
    "apps/replicasets",
    "apps/controllerrevisions",
    "discovery.k8s.io/endpointslices",
];

fn key_label(gr: &GroupResource, namespace: &str, name: &str) -> String {
    let resource = if gr.group.is_empty() {
        gr.resource.clone()
    } else {
        format!("{}.{}", gr.resource, gr.group)
    };
    if namespace.is_empty() {
        format!("{resource} {name}")
    } else {
        format!("{resource} {namespace}/{name}")
    }
}

/// Object name → its content ([`Chain::objects`]).
pub(crate) type Objects = BTreeMap<String, Content>;

/// What an object holds ([`content`]) and its digest, which is what is compared.
#[derive(Debug, Clone)]
pub(crate) struct Content {
    pub digest: u64,
    /// Kept to say where two contents differ.
    pub value: Value,
}

impl Content {
    pub(crate) fn of(obj: &Value, dependencies: &Dependencies) -> Self {
        use std::hash::{Hash, Hasher};
        let value = content(obj, dependencies);
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        value.to_string().hash(&mut hasher);
        Content {
            digest: hasher.finish(),
            value,
        }
    }
}

/// The JSON pointer of the first place where `a` and `b` differ (`""`: the whole value).
pub(crate) fn first_difference(a: &Value, b: &Value) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) if p == q => {}
                    (Some(p), Some(q)) => return format!("/{k}{}", first_difference(p, q)),
                    _ => return format!("/{k}"),
                }
            }
            String::new()
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .position(|(p, q)| p != q)
            .map(|i| format!("/{i}{}", first_difference(&x[i], &y[i])))
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// The user names of the three operators.
pub(crate) fn operator_users() -> Vec<String> {
    Operator::ALL.iter().map(|op| op.user()).collect()
}

/// The objects `users` created, updated or patched with success in `records`, named as
/// [`Chain::objects`] names them (Events and Leases aside).
pub(crate) fn written_by(records: &[RequestRecord], users: &[String]) -> BTreeSet<String> {
    records
        .iter()
        .filter(|r| {
            users.contains(&r.user)
                && matches!(r.verb.as_str(), "create" | "update" | "patch")
                && r.subresource.is_empty()
                && (200..300).contains(&r.code)
                && !r.name.is_empty()
                && is_working_write(r)
        })
        .map(|r| {
            let (group, resource) = r.resource.split_once('/').unwrap_or(("", &r.resource));
            key_label(&GroupResource::new(group, resource), &r.namespace, &r.name)
        })
        .collect()
}

/// Dependency annotation key (`operator.openshift.io/dep-…`) → the hash of that ConfigMap's
/// or Secret's content now.
pub(crate) type Dependencies = BTreeMap<String, String>;

/// The library-go dependency hash of a stored Secret or ConfigMap (`None`: unreadable).
fn dependency_hash(kind: DependencyKind, obj: &Value) -> Option<String> {
    match kind {
        DependencyKind::Secret => serde_json::from_value::<Secret>(obj.clone())
            .ok()
            .map(|s| secret_hash(&s)),
        DependencyKind::ConfigMap => serde_json::from_value::<ConfigMap>(obj.clone())
            .ok()
            .map(|c| configmap_hash(&c)),
    }
}

/// What the API server adds to an object that differs between two clusters holding the same
/// content: identity, versions, times, field managers, and status (the conditions' own check
/// reads status). Everything else (spec, data, labels, annotations, owners by kind and name)
/// is content.
const SERVER_FIELDS: [&str; 6] = [
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
];

/// Annotations the API server or its controllers count up on each change: how often an object
/// changed on the way is not what it holds.
const SERVER_COUNTERS: [&str; 2] = [
    "deprecated.daemonset.template.generation",
    "deployment.kubernetes.io/revision",
];

/// A digest of what `obj` holds, the same for two objects that differ only in what the API
/// server adds ([`SERVER_FIELDS`], `status`, the uids in `ownerReferences`). Keys are sorted
/// (serde_json's map), so the digest does not depend on the order fields were written in.
///
/// Hashes of other objects' content are compared with those objects, not with the clean
/// install: a generated serving certificate differs from run to run, and so does every hash of
/// it. A dependency annotation that matches its Secret or ConfigMap now ([`Dependencies`])
/// counts as `current`, one that does not (pods not rolled after a change) keeps its value and
/// so differs; the apply engine's `spec-hash`, a hash of the rest of the object, is left out.
pub(crate) fn content(obj: &Value, dependencies: &Dependencies) -> Value {
    let mut content = obj.clone();
    if let Some(map) = content.as_object_mut() {
        map.remove("status");
    }
    // A Service's cluster IPs are allocated by the API server, one per create.
    if let Some(spec) = content.get_mut("spec").and_then(Value::as_object_mut)
        && obj["kind"] == "Service"
    {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    if let Some(annotations) = content
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        for counter in SERVER_COUNTERS {
            annotations.remove(counter);
        }
    }
    for pointer in [
        "/metadata/annotations",
        "/spec/template/metadata/annotations",
    ] {
        if let Some(annotations) = content.pointer_mut(pointer).and_then(Value::as_object_mut) {
            annotations.remove(SPEC_HASH_ANNOTATION);
            for (key, value) in annotations.iter_mut() {
                if key.starts_with(DEP_ANNOTATION_PREFIX)
                    && dependencies
                        .get(key)
                        .is_some_and(|now| value.as_str() == Some(now))
                {
                    *value = Value::from("current");
                }
            }
        }
    }
    if let Some(meta) = content.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in SERVER_FIELDS {
            meta.remove(field);
        }
        for owner in meta
            .get_mut("ownerReferences")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(owner) = owner.as_object_mut() {
                owner.remove("uid");
            }
        }
    }
    content
}

/// A second replica of the CSO ([`Chain::start_twin`]).
#[derive(Debug, Clone)]
pub(crate) struct Twin {
    /// The user its requests carry.
    pub user: String,
    pub deployment: String,
    /// (apiVersion, kind, namespace, name) of what was created for it, in order.
    objects: Vec<(String, String, String, String)>,
}

/// Creates `object` as the admin.
async fn create(client: &kube::Client, object: &Value) -> anyhow::Result<()> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let resource =
        kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(group, version, kind));
    let ns = object["metadata"]["namespace"].as_str();
    let api: Api<kube::api::DynamicObject> = match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let obj: kube::api::DynamicObject = serde_json::from_value(object.clone())?;
    api.create(&kube::api::PostParams::default(), &obj)
        .await
        .with_context(|| format!("cannot create {kind} {}", object["metadata"]["name"]))?;
    Ok(())
}

/// A running chain on a fresh testbed. Dropping it stops the CCO stand-in; dropping the
/// testbed kills the operator processes.
pub(crate) struct Chain {
    pub bed: Arc<Testbed>,
    cco: tokio::task::JoinHandle<()>,
    /// The CVO stand-in's retries of what waits behind the ClusterOperator barrier.
    cvo: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
    manifests: Vec<Manifest>,
    log_dir: PathBuf,
    keep_logs: bool,
    markers: AtomicUsize,
    /// A moment and kube-sim's clock then, to put `Instant`s on its clock.
    clock: (Instant, u64),
}

impl Chain {
    /// Starts the emulators and the CCO stand-in with the canary credentials in place; the
    /// release is not applied yet ([`Chain::install`]).
    pub(crate) async fn start(worker_nodes: usize, keep_logs: bool) -> anyhow::Result<Self> {
        let manifests = release_manifests()?;
        let log_dir = std::env::temp_dir().join(format!(
            "bench-reliability-{}-{}",
            std::process::id(),
            CHAINS.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&log_dir)
            .with_context(|| format!("cannot create {}", log_dir.display()))?;
        let mut settings = Settings {
            worker_nodes,
            ..Settings::for_cluster_storage_operator()
        };
        settings.kube.rbac = Some(RbacConfig::default());
        settings.kube.processes = Some(process_config(&manifests, &log_dir)?);
        for user in &mut settings.openstack.users {
            user.password = CANARY_PASSWORD.into();
        }
        let bed = Testbed::start(settings)
            .await
            .context("cannot start the testbed")?;
        let good = bed.openstack.clouds_yaml_password(
            "openstack",
            openstack_sim::DEFAULT_USER,
            CANARY_PASSWORD,
        );
        bed.put_root_credentials(&good, bed.openstack.ca_pem())
            .await
            .context("cannot plant the root credentials")?;
        bed.put_credentials(&good, bed.openstack.ca_pem())
            .await
            .context("cannot plant the Cinder credentials")?;
        testbed::cco::create_namespace(&bed.client)
            .await
            .context("cannot create the cloud credential operator's namespace")?;
        let cco = testbed::cco::spawn(bed.client.clone(), CCO_PERIOD);
        let mut chain = Chain {
            bed: Arc::new(bed),
            cco,
            cvo: Default::default(),
            manifests,
            log_dir,
            keep_logs,
            markers: AtomicUsize::new(0),
            clock: (Instant::now(), 0),
        };
        let before = Instant::now();
        let at_ms = chain.marker().await?;
        chain.clock = (before + before.elapsed() / 2, at_ms);
        Ok(chain)
    }

    /// `at` on kube-sim's clock (the request log's `at_ms`), to a millisecond or two.
    pub(crate) fn sim_ms(&self, at: Instant) -> u64 {
        let (then, ms) = self.clock;
        if at >= then {
            ms + (at - then).as_millis() as u64
        } else {
            ms.saturating_sub((then - at).as_millis() as u64)
        }
    }

    /// Applies the release as the cluster version operator does: the install starts.
    pub(crate) async fn install(&self) -> anyhow::Result<Instant> {
        let at = Instant::now();
        testbed::cvo::apply(&self.bed.client, &self.manifests)
            .await
            .context("cannot apply the release manifests")?;
        let retries = testbed::cvo::spawn(
            self.bed.client.clone(),
            self.manifests.clone(),
            testbed::cvo::Options::default(),
            CCO_PERIOD,
        );
        if let Ok(mut tasks) = self.cvo.lock() {
            tasks.push(retries);
        }
        Ok(at)
    }

    /// Rotates the root credentials (the CCO stand-in copies them to every driver Secret).
    pub(crate) async fn rotate_credentials(&self, password: &str) -> anyhow::Result<()> {
        let clouds = self.bed.openstack.clouds_yaml_password(
            "openstack",
            openstack_sim::DEFAULT_USER,
            password,
        );
        self.bed
            .put_root_credentials(&clouds, self.bed.openstack.ca_pem())
            .await
            .context("cannot rotate the root credentials")
    }

    /// The conditions of ClusterOperator/storage and both ClusterCSIDrivers, from the store.
    pub(crate) fn snapshot(&self) -> Snapshot {
        snapshot(&self.bed)
    }

    /// The stored object `group/resource namespace/name`.
    pub(crate) fn object(
        &self,
        group: &str,
        resource: &str,
        ns: &str,
        name: &str,
    ) -> Option<Value> {
        let gr = GroupResource::new(group, resource);
        self.bed
            .kube
            .cluster()
            .store()
            .get(&gr, ns, name)
            .map(|o| (*o).clone())
    }

    /// Every stored object but Events, Leases and what the workload simulator derives, as
    /// `resource.group namespace/name`, with its content ([`Content`]).
    pub(crate) fn objects(&self) -> Objects {
        let cluster = self.bed.kube.cluster();
        let store = cluster.store();
        let mut out = Objects::new();
        let collections: Vec<GroupResource> = store.collections().cloned().collect();
        let mut dependencies = Dependencies::new();
        for (kind, gr) in [
            (DependencyKind::Secret, GroupResource::new("", "secrets")),
            (
                DependencyKind::ConfigMap,
                GroupResource::new("", "configmaps"),
            ),
        ] {
            for ((ns, name), obj) in store.iter(&gr, None, None) {
                if let Some(hash) = dependency_hash(kind, obj) {
                    dependencies.insert(dependency_annotation_key(kind, ns, name), hash);
                }
            }
        }
        for gr in collections {
            let label = format!("{}/{}", gr.group, gr.resource);
            if TRANSIENT.contains(&label.as_str()) {
                continue;
            }
            for ((ns, name), obj) in store.iter(&gr, None, None) {
                out.insert(key_label(&gr, ns, name), Content::of(obj, &dependencies));
            }
        }
        out
    }

    /// The objects (as [`Chain::objects`] names them) that an operator created, updated or
    /// patched successfully so far: what the operators own, whose content must come back.
    pub(crate) fn written_by_operators(&self) -> BTreeSet<String> {
        written_by(&self.requests(), &operator_users())
    }

    /// Where any of `needles` occurs: in the operator pods' output (all runs) and in any
    /// stored object other than a Secret (Events, ClusterCSIDriver / Storage / ClusterOperator
    /// status, ConfigMaps, annotations, ...).
    pub(crate) fn find_secrets(&self, needles: &[&str]) -> anyhow::Result<Vec<String>> {
        let mut found = Vec::new();
        let mut logs: Vec<PathBuf> = std::fs::read_dir(&self.log_dir)
            .with_context(|| format!("cannot list {}", self.log_dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        logs.sort();
        anyhow::ensure!(
            !logs.is_empty(),
            "no operator log in {}",
            self.log_dir.display()
        );
        for path in logs {
            let bytes =
                std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            let text = String::from_utf8_lossy(&bytes);
            for needle in needles {
                let n = text.matches(needle).count();
                if n > 0 {
                    let name = path.file_name().unwrap_or_default().to_string_lossy();
                    found.push(format!("log {name} ({n}×)"));
                }
            }
        }
        let cluster = self.bed.kube.cluster();
        let store = cluster.store();
        let collections: Vec<GroupResource> = store.collections().cloned().collect();
        for gr in collections {
            if gr.group.is_empty() && gr.resource == "secrets" {
                continue;
            }
            for ((ns, name), obj) in store.iter(&gr, None, None) {
                let text = obj.to_string();
                if needles.iter().any(|n| text.contains(n)) {
                    let mut where_ = key_label(&gr, ns, name);
                    if let Some(status) = obj.get("status")
                        && needles.iter().any(|n| status.to_string().contains(n))
                    {
                        where_ += " (status)";
                    }
                    found.push(where_);
                }
            }
        }
        Ok(found)
    }

    /// The operator's pod as kube-sim's process runner reports it.
    pub(crate) fn process(&self, op: Operator) -> Option<ProcessInfo> {
        process(&self.bed, op)
    }

    /// Every request served so far.
    pub(crate) fn requests(&self) -> Vec<RequestRecord> {
        self.bed.kube.requests()
    }

    /// A request of the bench that kube-sim records, so that what happened before and after
    /// a moment can be told apart in its log on its own clock; returns its `at_ms`.
    pub(crate) async fn marker(&self) -> anyhow::Result<u64> {
        let name = format!(
            "reliability-marker-{}",
            self.markers.fetch_add(1, Ordering::Relaxed)
        );
        let namespaces: Api<Namespace> = Api::all(self.bed.client.clone());
        namespaces
            .get_opt(&name)
            .await
            .with_context(|| format!("marker request {name}"))?;
        let suffix = format!("/namespaces/{name}");
        self.requests()
            .iter()
            .rev()
            .find(|r| r.path.ends_with(&suffix))
            .map(|r| r.at_ms)
            .with_context(|| format!("kube-sim's log has no marker {name}"))
    }

    /// Waits until the operator's first successful write of anything but its Lease and Events:
    /// it is installing. Returns the record.
    pub(crate) async fn wait_first_write(
        &self,
        op: Operator,
        limit: Duration,
    ) -> anyhow::Result<RequestRecord> {
        let user = op.user();
        let until = Instant::now() + limit;
        loop {
            if let Some(r) = self
                .requests()
                .into_iter()
                .find(|r| r.user == user && is_working_write(r) && (200..300).contains(&r.code))
            {
                return Ok(r);
            }
            anyhow::ensure!(
                Instant::now() < until,
                "the {} operator made no write within {limit:?}",
                op.label()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until the operator first holds its lease (its first successful lease write):
    /// it is about to reconcile.
    pub(crate) async fn wait_leading(&self, op: Operator, limit: Duration) -> anyhow::Result<()> {
        let user = op.user();
        let until = Instant::now() + limit;
        loop {
            if self.requests().iter().any(|r| {
                r.user == user
                    && r.is_write()
                    && r.resource == "coordination.k8s.io/leases"
                    && (200..300).contains(&r.code)
            }) {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < until,
                "the {} operator did not lead within {limit:?}",
                op.label()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Sends `signal` (`TERM`, `KILL`) to the operator's process and waits until it has
    /// exited; returns the pid it had.
    pub(crate) async fn signal(&self, op: Operator, signal: &str) -> anyhow::Result<u32> {
        let pid = self
            .process(op)
            .and_then(|p| p.pid)
            .with_context(|| format!("the {} operator has no running process", op.label()))?;
        // No signal crate in the dependency tree: the `kill` utility, for our own child only.
        let status = std::process::Command::new("/bin/kill")
            .args(["-s", signal, &pid.to_string()])
            .status()
            .context("cannot run /bin/kill")?;
        anyhow::ensure!(status.success(), "kill -s {signal} {pid} failed ({status})");
        let until = Instant::now() + EXIT_LIMIT;
        while self.process(op).and_then(|p| p.pid) == Some(pid) {
            anyhow::ensure!(
                Instant::now() < until,
                "the {} operator (pid {pid}) did not exit within {EXIT_LIMIT:?} of SIG{signal}",
                op.label()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(pid)
    }

    /// A kube-sim admin request (`/__sim/…`), as a tester outside the process sends it.
    pub(crate) async fn admin(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<()> {
        admin_request(self.bed.kube.addr(), method, path, body)
            .await
            .map(drop)
    }

    /// Injects a kube-sim fault (`POST /__sim/faults`).
    pub(crate) async fn inject(&self, fault: Value) -> anyhow::Result<()> {
        self.admin("POST", "/__sim/faults", Some(&fault)).await
    }

    /// How many requests of each user kube-sim's faults have matched so far (`GET
    /// /__sim/faults`): a request a fault delays and whose client gave up is in no log.
    pub(crate) async fn fault_matches(&self) -> anyhow::Result<BTreeMap<String, u64>> {
        let body = admin_request(self.bed.kube.addr(), "GET", "/__sim/faults", None).await?;
        let faults: Vec<Value> = serde_json::from_str(&body).context("GET /__sim/faults")?;
        let mut by_user = BTreeMap::new();
        for f in faults {
            let user = f["match"]["user"].as_str().unwrap_or_default().to_owned();
            *by_user.entry(user).or_default() += f["matched"].as_u64().unwrap_or(0);
        }
        Ok(by_user)
    }

    /// Clears every kube-sim fault (`DELETE /__sim/faults`).
    pub(crate) async fn clear_faults(&self) -> anyhow::Result<()> {
        self.admin("DELETE", "/__sim/faults", None).await
    }

    /// Whether kube-sim answers (its admin paths are never faulted).
    pub(crate) async fn api_up(&self) -> bool {
        self.admin("GET", "/__sim/faults", None).await.is_ok()
    }

    /// Every operator process's whole output so far (all runs of every pod), for the checks
    /// that look for a log line.
    pub(crate) fn log_text(&self) -> anyhow::Result<String> {
        let mut text = String::new();
        for entry in std::fs::read_dir(&self.log_dir)
            .with_context(|| format!("cannot list {}", self.log_dir.display()))?
        {
            let path = entry?.path();
            let bytes =
                std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            text.push_str(&String::from_utf8_lossy(&bytes));
        }
        Ok(text)
    }

    /// `status.desiredNumberScheduled` of every DaemonSet in the drivers' namespaces, by
    /// `namespace/name`: how many Nodes each schedules a pod on (kube-sim's DaemonSet pods are
    /// virtual, so this is where a Node's pods show).
    pub(crate) fn node_daemonsets(&self) -> BTreeMap<String, i64> {
        let cluster = self.bed.kube.cluster();
        let daemonsets = GroupResource::new("apps", "daemonsets");
        [testbed::DRIVER_NAMESPACE, testbed::MANILA_NAMESPACE]
            .iter()
            .flat_map(|ns| {
                cluster
                    .store()
                    .iter(&daemonsets, Some(ns), None)
                    .map(|((ns, name), ds)| {
                        (
                            format!("{ns}/{name}"),
                            ds.pointer("/status/desiredNumberScheduled")
                                .and_then(Value::as_i64)
                                .unwrap_or(0),
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Starts a second CSO replica ([`Twin`]): a copy of the CSO's Deployment under a twin
    /// service account bound to every role the CSO's is bound to. Same image, arguments and
    /// lease; the request log tells the two replicas apart by user.
    pub(crate) async fn start_twin(&self) -> anyhow::Result<Twin> {
        let ns = Operator::Cso.namespace();
        let name = format!("{CSO_DEPLOYMENT}-twin");
        let cso_user = Operator::Cso.user();
        let client = &self.bed.client;
        let mut twin = Twin {
            user: format!("system:serviceaccount:{ns}:{name}"),
            deployment: name.clone(),
            objects: Vec::new(),
        };
        let created = |api: &str, kind: &str, ns: &str, name: &str| {
            (
                api.to_string(),
                kind.to_string(),
                ns.to_string(),
                name.to_string(),
            )
        };
        create(
            client,
            &json!({"apiVersion": "v1", "kind": "ServiceAccount",
                               "metadata": {"name": name, "namespace": ns}}),
        )
        .await?;
        twin.objects
            .push(created("v1", "ServiceAccount", ns, &name));
        // The store's lock is held only here, never across an await.
        let (bindings, deployment) = {
            let cluster = self.bed.kube.cluster();
            let mut bindings = Vec::new();
            for (resource, kind) in [
                ("clusterrolebindings", "ClusterRoleBinding"),
                ("rolebindings", "RoleBinding"),
            ] {
                let gr = GroupResource::new("rbac.authorization.k8s.io", resource);
                for ((bns, bname), b) in cluster.store().iter(&gr, None, None) {
                    let binds_cso = b["subjects"].as_array().into_iter().flatten().any(|s| {
                        s["kind"] == "ServiceAccount"
                            && s["namespace"] == ns
                            && s["name"] == CSO_DEPLOYMENT
                    });
                    if !binds_cso {
                        continue;
                    }
                    let mut meta = json!({"name": format!("{bname}-twin")});
                    if !bns.is_empty() {
                        meta["namespace"] = json!(bns);
                    }
                    bindings.push(json!({
                        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
                        "metadata": meta, "roleRef": b["roleRef"].clone(),
                        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
                    }));
                }
            }
            let deployment = cluster
                .store()
                .get(
                    &GroupResource::new("apps", "deployments"),
                    ns,
                    CSO_DEPLOYMENT,
                )
                .map(|d| (*d).clone())
                .context("the CSO has no Deployment")?;
            (bindings, deployment)
        };
        anyhow::ensure!(!bindings.is_empty(), "no binding names {cso_user}");
        for b in bindings {
            create(client, &b).await?;
            twin.objects.push(created(
                "rbac.authorization.k8s.io/v1",
                b["kind"].as_str().unwrap_or_default(),
                b["metadata"]["namespace"].as_str().unwrap_or_default(),
                b["metadata"]["name"].as_str().unwrap_or_default(),
            ));
        }
        let mut template = deployment["spec"]["template"].clone();
        template["metadata"] = json!({"labels": {"name": name}});
        template["spec"]["serviceAccountName"] = json!(name);
        create(
            client,
            &json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"name": name}},
                         "template": template},
            }),
        )
        .await?;
        twin.objects
            .push(created("apps/v1", "Deployment", ns, &name));
        Ok(twin)
    }

    /// Removes what [`Chain::start_twin`] created and waits until its process is gone.
    pub(crate) async fn remove_twin(&self, twin: &Twin) -> anyhow::Result<()> {
        for (api_version, kind, ns, name) in twin.objects.iter().rev() {
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
            let resource = kube::api::ApiResource::from_gvk(&gvk);
            let api: Api<kube::api::DynamicObject> = if ns.is_empty() {
                Api::all_with(self.bed.client.clone(), &resource)
            } else {
                Api::namespaced_with(self.bed.client.clone(), ns, &resource)
            };
            api.delete(name, &kube::api::DeleteParams::default())
                .await
                .with_context(|| format!("cannot delete {kind} {ns}/{name}"))?;
        }
        let until = Instant::now() + EXIT_LIMIT;
        while self
            .bed
            .kube
            .processes()
            .iter()
            .any(|p| p.deployment == twin.deployment && p.pid.is_some())
        {
            anyhow::ensure!(
                Instant::now() < until,
                "the second CSO replica still runs {EXIT_LIMIT:?} after its Deployment was deleted"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// The last lines of every operator pod's output, for a failure's explanation.
    pub(crate) fn log_tails(&self, lines: usize) -> String {
        let mut out = String::new();
        for op in Operator::ALL {
            let Some(p) = self.process(op) else { continue };
            let text = self
                .bed
                .kube
                .process_output(&p.namespace, &p.pod)
                .unwrap_or_default();
            let all: Vec<&str> = text.lines().collect();
            out += &format!(
                "--- {} ({:?}, restarts {}, last exit {:?})\n",
                p.pod, p.state, p.restarts, p.last_exit
            );
            for l in &all[all.len().saturating_sub(lines)..] {
                out += l;
                out.push('\n');
            }
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
        self.bed.kube.shutdown();
        if self.keep_logs {
            eprintln!("  operator logs kept in {}", self.log_dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.log_dir);
        }
    }
}

/// See [`Chain::snapshot`].
pub(crate) fn snapshot(bed: &Testbed) -> Snapshot {
    let cluster = bed.kube.cluster();
    let store = cluster.store();
    let co = store
        .get(
            &GroupResource::new("config.openshift.io", "clusteroperators"),
            "",
            "storage",
        )
        .map(|o| conditions_of(&o))
        .unwrap_or_default();
    let ccd = GroupResource::new("operator.openshift.io", "clustercsidrivers");
    let drivers = Driver::ALL
        .iter()
        .map(|d| {
            (
                *d,
                store
                    .get(&ccd, "", d.cr())
                    .map(|o| conditions_of(&o))
                    .unwrap_or_default(),
            )
        })
        .collect();
    Snapshot { co, drivers }
}

/// See [`Chain::process`].
pub(crate) fn process(bed: &Testbed, op: Operator) -> Option<ProcessInfo> {
    bed.kube
        .processes()
        .into_iter()
        .filter(|p| p.namespace == op.namespace() && p.deployment == op.deployment())
        .max_by_key(|p| p.pid.is_some())
}

/// A write that is work: not leader election, not an Event.
pub(crate) fn is_working_write(r: &RequestRecord) -> bool {
    r.is_write()
        && !matches!(
            r.resource.as_str(),
            "coordination.k8s.io/leases" | "/events" | "events.k8s.io/events"
        )
}

/// `manifests/openshift/` with Storage/cluster asking for [`LOG_LEVEL`].
fn release_manifests() -> anyhow::Result<Vec<Manifest>> {
    let mut manifests = testbed::cvo::load(Path::new(MANIFEST_DIR))
        .with_context(|| format!("cannot load the release manifests of {MANIFEST_DIR}"))?;
    let storage = manifests
        .iter_mut()
        .find(|m| m.object["kind"] == "Storage")
        .with_context(|| format!("{MANIFEST_DIR} has no Storage manifest"))?;
    storage.object["spec"]["logLevel"] = json!(LOG_LEVEL);
    storage.object["spec"]["operatorLogLevel"] = json!(LOG_LEVEL);
    Ok(manifests)
}

/// kube-sim's process runner configuration, as the demo builds it: the CSO's image and every
/// `*_OPERATOR_IMAGE` of its environment run as `csi-operator` (the image's first command word
/// replaced by the binary), metrics on any free port, output to one file per pod.
fn process_config(manifests: &[Manifest], log_dir: &Path) -> anyhow::Result<ProcessConfig> {
    let cso = manifests
        .iter()
        .find(|m| {
            m.object["kind"] == "Deployment" && m.object["metadata"]["name"] == CSO_DEPLOYMENT
        })
        .context("the release manifests have no cluster-storage-operator Deployment")?;
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
    let program = LocalProgram {
        program: locate_binary()?,
        drop_leading: 1,
        extra_args: vec!["--metrics-listen=127.0.0.1:0".to_owned()],
        env: BTreeMap::new(),
    };
    Ok(images.into_iter().fold(
        ProcessConfig {
            log_dir: Some(log_dir.to_owned()),
            ..ProcessConfig::default()
        },
        |c, image| c.with_image(image, program.clone()),
    ))
}

/// A bare HTTP/1.1 request to kube-sim's admin paths (plain HTTP on loopback, where any bearer
/// token may use them); an answer other than 200 is an error. Returns the answer's body.
async fn admin_request(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> anyhow::Result<String> {
    let body = body.map(Value::to_string).unwrap_or_default();
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream
            .write_all(
                format!(
                    "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer admin\r\n\
                     Content-Type: application/json\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            )
            .await?;
        let mut response = String::new();
        stream.read_to_string(&mut response).await?;
        anyhow::Ok(response)
    };
    let response = tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .with_context(|| format!("{method} {path}: no answer"))?
        .with_context(|| format!("{method} {path}"))?;
    let status = response.lines().next().unwrap_or_default();
    anyhow::ensure!(
        status.contains(" 200 "),
        "{method} {path} answered {status}"
    );
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    // kube-sim answers admin requests with a length, but read a chunked body too.
    Ok(if response.contains("transfer-encoding: chunked") {
        dechunk(&body)
    } else {
        body
    })
}

/// The payload of an HTTP/1.1 chunked body.
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_are_read_from_status() {
        let obj = json!({"status": {"conditions": [
            {"type": "Available", "status": "True", "reason": "AsExpected", "message": "ok"},
            {"type": "Degraded", "status": "False"},
        ]}});
        let c = conditions_of(&obj);
        assert_eq!(c["Available"].status, "True");
        assert_eq!(c["Available"].reason, "AsExpected");
        assert_eq!(c["Degraded"].message, "");
        assert!(conditions_of(&json!({})).is_empty());
    }

    #[test]
    fn object_keys_name_group_namespace_and_name() {
        let core = GroupResource::new("", "configmaps");
        assert_eq!(key_label(&core, "ns", "a"), "configmaps ns/a");
        let sc = GroupResource::new("storage.k8s.io", "storageclasses");
        assert_eq!(key_label(&sc, "", "b"), "storageclasses.storage.k8s.io b");
    }

    #[test]
    fn operators_authenticate_as_their_service_accounts() {
        assert_eq!(
            Operator::Cso.user(),
            "system:serviceaccount:openshift-cluster-storage-operator:cluster-storage-operator"
        );
        assert_eq!(
            Operator::Cinder.user(),
            "system:serviceaccount:openshift-cluster-csi-drivers:openstack-cinder-csi-driver-operator"
        );
    }

    #[test]
    fn leases_and_events_are_not_work() {
        let mut r = RequestRecord {
            at_ms: 0,
            verb: "update".into(),
            method: "PUT".into(),
            path: String::new(),
            query: String::new(),
            user: String::new(),
            user_agent: String::new(),
            resource: "coordination.k8s.io/leases".into(),
            subresource: String::new(),
            namespace: String::new(),
            name: String::new(),
            code: 200,
        };
        assert!(!is_working_write(&r));
        r.resource = "apps/deployments".into();
        assert!(is_working_write(&r));
        r.verb = "get".into();
        assert!(!is_working_write(&r));
    }

    fn content_digest(obj: &Value, deps: &Dependencies) -> u64 {
        Content::of(obj, deps).digest
    }

    fn content_digest_(obj: &Value) -> u64 {
        content_digest(obj, &Dependencies::new())
    }

    #[test]
    fn the_first_difference_is_named_by_its_path() {
        let a = json!({"spec": {"args": ["--a", "--b"], "x": 1}});
        let b = json!({"spec": {"args": ["--a", "--c"], "x": 1}});
        assert_eq!(first_difference(&a, &b), "/spec/args/1");
        let c = json!({"spec": {"args": ["--a"], "x": 1}});
        assert_eq!(first_difference(&a, &c), "/spec/args");
        assert_eq!(first_difference(&a, &a), "");
    }

    #[test]
    fn dependency_hashes_count_when_current_and_differ_when_stale() {
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
                            "metadata": {"name": "creds", "namespace": "ns"},
                            "data": {"clouds.yaml": "YQ=="}});
        let key = dependency_annotation_key(DependencyKind::Secret, "ns", "creds");
        let now = dependency_hash(DependencyKind::Secret, &secret).unwrap_or_default();
        let deps: Dependencies = [(key.clone(), now.clone())].into();
        let deployment = |hash: &str, spec_hash: &str| {
            json!({"metadata": {"name": "d", "annotations": {key.clone(): hash, SPEC_HASH_ANNOTATION: spec_hash}},
                   "spec": {"template": {"metadata": {"annotations": {key.clone(): hash}}}}})
        };
        // Two runs with different certificate contents: each current, so the same content.
        let other_deps: Dependencies = [(key.clone(), "other".to_string())].into();
        assert_eq!(
            content_digest(&deployment(&now, "x"), &deps),
            content_digest(&deployment("other", "y"), &other_deps)
        );
        // Pods not rolled after the Secret changed: the hash is stale, the content differs.
        assert_ne!(
            content_digest(&deployment("stale", "x"), &deps),
            content_digest(&deployment(&now, "x"), &deps)
        );
    }

    #[test]
    fn content_digests_ignore_what_the_server_adds_and_see_what_the_object_holds() {
        let secret = |uid: &str, rv: &str, password: &str| {
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "s", "namespace": "n", "uid": uid,
                                "resourceVersion": rv, "creationTimestamp": "2026-01-01T00:00:00Z",
                                "managedFields": [{"manager": rv}],
                                "ownerReferences": [{"kind": "ClusterCSIDriver", "name": "c", "uid": uid}]},
                   "data": {"clouds.yaml": password},
                   "status": {"anything": rv}})
        };
        assert_eq!(
            content_digest_(&secret("a", "1", "good")),
            content_digest_(&secret("b", "2", "good"))
        );
        assert_ne!(
            content_digest_(&secret("a", "1", "good")),
            content_digest_(&secret("a", "1", "stale"))
        );
        let mut relabelled = secret("a", "1", "good");
        relabelled["metadata"]["labels"] = json!({"x": "y"});
        assert_ne!(
            content_digest_(&relabelled),
            content_digest_(&secret("a", "1", "good"))
        );
    }

    #[test]
    fn owned_objects_are_those_an_operator_wrote_with_success() {
        let rec = |user: &str, verb: &str, resource: &str, name: &str, code: u16| RequestRecord {
            at_ms: 0,
            verb: verb.into(),
            method: String::new(),
            path: String::new(),
            query: String::new(),
            user: user.into(),
            user_agent: String::new(),
            resource: resource.into(),
            subresource: String::new(),
            namespace: "ns".into(),
            name: name.into(),
            code,
        };
        let op = Operator::Cinder.user();
        let records = [
            rec(&op, "patch", "apps/deployments", "d", 200),
            rec(&op, "patch", "/secrets", "refused", 403),
            rec(&op, "get", "/configmaps", "read", 200),
            rec("admin", "create", "/configmaps", "theirs", 201),
            rec(&op, "update", "coordination.k8s.io/leases", "lock", 200),
        ];
        assert_eq!(
            written_by(&records, &operator_users()),
            BTreeSet::from(["deployments.apps ns/d".to_string()])
        );
    }
}
