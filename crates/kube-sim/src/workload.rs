//! The workload simulator: plays the Deployment and DaemonSet controllers, the scheduler and the
//! kubelets of a real cluster, so operators see their workloads' status move as it would.
//!
//! The model, and why it looks the way it does:
//! - Controllers react within milliseconds on a real cluster, so `observedGeneration`, the
//!   replica counts and the conditions are written as soon as a change is seen. What takes time
//!   is pods starting: a pod becomes ready `delayMs` after it is created, and available
//!   `minReadySeconds` after that. An operator that treats `observedGeneration == generation`
//!   as "rolled out" is wrong on a real cluster and is wrong here too. A pod once ready stays
//!   ready, so changing the delay affects only pods still starting.
//! - No Pods or ReplicaSets are stored: the simulator keeps its virtual pods in memory and
//!   writes only the status a real controller would write, with the real condition reasons and
//!   messages, and only when it differs from the stored one.
//! - DaemonSet placement follows the DaemonSet controller: node name, `nodeSelector`, required
//!   node affinity and taints (with the tolerations every daemon pod gets automatically). A
//!   Deployment's pods are assumed to find room somewhere.
//! - Workloads listed in [`WorkloadConfig::unavailable`] never get a ready pod, so their
//!   conditions say so and, past `progressDeadlineSeconds`, the rollout times out.
//! - A Deployment whose image maps to a local program runs real processes (`processes.rs`);
//!   its pods are up only while their processes run, which the status functions are told.
//! - Pods go through admission (`pod_admission.rs`: SCCs, Pod Security) when the controller
//!   would create them. A refused pod is never created: the Deployment reports
//!   `ReplicaFailure=True / FailedCreate` with the API server's message (as the ReplicaSet
//!   controller's condition reaches it), the DaemonSet schedules nothing new, and each new
//!   refusal is a `FailedCreate` Warning Event. Admission is judged again on every pass, so a
//!   changed template, SCC, RBAC grant or namespace lets the pods come (controllers retry).
//!
//! The status computations are pure functions of the object, the nodes, what the simulator
//! remembers of its virtual pods, and the time; [`run`] feeds them and writes the results.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::Shared;
use crate::api::{Cluster, WriteOptions};
use crate::pod_admission::{self, AdmissionConfig, Verdict};

/// Settings of the workload simulator.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WorkloadConfig {
    /// How long a pod takes to become ready after it is created, in milliseconds.
    pub delay_ms: u64,
    /// Workloads whose pods never become ready.
    pub unavailable: Vec<WorkloadRef>,
    /// Caps every Deployment's `progressDeadlineSeconds` (a time compression for tests that
    /// must see a rollout time out without waiting the default ten minutes); `None` keeps the
    /// Deployments' own deadlines.
    pub max_progress_deadline_seconds: Option<u64>,
    /// Play the kubelet's volume setup: a pod whose containers mount a Secret or ConfigMap
    /// (directly or projected, not `optional`) that does not exist in its namespace stays in
    /// `ContainerCreating` and never becomes ready, until the object appears. Off by default
    /// because OpenShift testbeds have no service-ca to fill the drivers' serving-cert Secrets;
    /// the plain-Kubernetes testbed turns it on.
    pub require_volume_sources: bool,
}

/// One Deployment or DaemonSet, by kind, namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadRef {
    pub kind: WorkloadKind,
    pub namespace: String,
    pub name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WorkloadKind {
    Deployment,
    DaemonSet,
}

impl WorkloadConfig {
    /// Whether the workload is listed as kept unavailable.
    pub fn is_unavailable(&self, kind: WorkloadKind, namespace: &str, name: &str) -> bool {
        self.unavailable
            .iter()
            .any(|w| w.kind == kind && w.namespace == namespace && w.name == name)
    }

    fn delay(&self) -> SignedDuration {
        SignedDuration::from_millis(i64::try_from(self.delay_ms).unwrap_or(i64::MAX))
    }
}

/// The Secrets and ConfigMaps (`("Secret", name)`) a pod template's containers mount that
/// do not exist in `namespace` and are not optional: what the kubelet waits for
/// (`FailedMount`). A volume no container mounts is not set up, so it is not waited for.
pub fn missing_volume_sources(
    c: &Cluster,
    namespace: &str,
    template: &Value,
) -> Vec<(String, String)> {
    let spec = template.get("spec").unwrap_or(&Value::Null);
    let mounted: BTreeSet<&str> = ["initContainers", "containers"]
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c.get("volumeMounts").and_then(Value::as_array))
        .flatten()
        .filter_map(|m| m.get("name").and_then(Value::as_str))
        .collect();
    // (kind, the source, the field naming the object: `secretName` on a Secret volume,
    // `name` everywhere else).
    let mut wanted: Vec<(&str, &Value, &str)> = Vec::new();
    for v in spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if !v
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| mounted.contains(n))
        {
            continue;
        }
        if let Some(s) = v.get("secret") {
            wanted.push(("Secret", s, "secretName"));
        }
        if let Some(cm) = v.get("configMap") {
            wanted.push(("ConfigMap", cm, "name"));
        }
        for source in v
            .pointer("/projected/sources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(s) = source.get("secret") {
                wanted.push(("Secret", s, "name"));
            }
            if let Some(cm) = source.get("configMap") {
                wanted.push(("ConfigMap", cm, "name"));
            }
        }
    }
    let mut missing = Vec::new();
    for (kind, source, field) in wanted {
        if source.get("optional").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let plural = if kind == "Secret" {
            "secrets"
        } else {
            "configmaps"
        };
        let name = source
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default();
        let exists = c
            .resource("", "v1", plural)
            .is_some_and(|rt| c.store.get(&rt.group_resource(), namespace, name).is_some());
        if !exists {
            missing.push((kind.to_owned(), name.to_owned()));
        }
    }
    missing
}

/// `config`, or a copy holding `kind namespace/name` unavailable when the kubelet would still
/// wait for one of its volumes ([`WorkloadConfig::require_volume_sources`]).
fn with_volume_wait<'a>(
    c: &Cluster,
    config: &'a WorkloadConfig,
    kind: WorkloadKind,
    obj: &Value,
    copy: &'a mut Option<WorkloadConfig>,
) -> &'a WorkloadConfig {
    let namespace = text(obj, "/metadata/namespace");
    let template = obj.pointer("/spec/template").unwrap_or(&Value::Null);
    if !config.require_volume_sources || missing_volume_sources(c, namespace, template).is_empty() {
        return config;
    }
    let mut held = config.clone();
    held.unavailable.push(WorkloadRef {
        kind,
        namespace: namespace.to_owned(),
        name: text(obj, "/metadata/name").to_owned(),
    });
    copy.insert(held)
}

// ----- the loop --------------------------------------------------------------------------------

/// What the simulator remembers between passes, by object uid.
#[derive(Default)]
struct Memory {
    deployments: HashMap<String, DeploymentTrack>,
    daemonsets: HashMap<String, DaemonSetTrack>,
    /// The admission refusal last reported (as an Event) per workload uid.
    refusals: HashMap<String, String>,
}

/// Whether the controller can create a workload's pods now.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PodCreation {
    /// Admitted (or no admission applies).
    #[default]
    Admitted,
    /// Admission cannot decide yet (the namespace has no UID range): no pod, no failure.
    Pending,
    /// Refused, with the API server's message.
    Refused(String),
}

impl PodCreation {
    fn of(verdict: Verdict) -> Self {
        match verdict {
            Verdict::Admitted(_) => Self::Admitted,
            Verdict::Pending(_) => Self::Pending,
            Verdict::Refused(m) => Self::Refused(m),
        }
    }

    fn blocked(&self) -> bool {
        *self != Self::Admitted
    }
}

/// Runs until shutdown: one pass after every write, and one whenever a pod's readiness, its
/// availability or a progress deadline comes due.
pub async fn run(shared: Arc<Shared>) {
    let mut changed = shared.changed.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    let mut memory = Memory::default();
    loop {
        if *shutdown.borrow() {
            return;
        }
        let wake = pass(&shared, &mut memory);
        let sleep = match wake {
            // A few milliseconds late rather than early: the deadline is compared with `>=`.
            Some(at) => {
                Duration::try_from(at.duration_since(Timestamp::now())).unwrap_or(Duration::ZERO)
                    + Duration::from_millis(5)
            }
            None => Duration::from_secs(3600),
        }
        .min(Duration::from_secs(3600));
        tokio::select! {
            r = changed.changed() => if r.is_err() { return },
            r = shutdown.changed() => if r.is_err() { return },
            () = tokio::time::sleep(sleep) => {}
        }
    }
}

/// Computes every workload's status and writes those that changed; returns when the next one
/// is due to change on its own.
fn pass(shared: &Shared, memory: &mut Memory) -> Option<Timestamp> {
    let config = shared
        .workloads
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let Some(config) = config else {
        // Switched off: the controllers stop, the virtual pods keep running.
        return None;
    };
    let running = crate::processes::Readiness::of(shared);
    let admission = shared.admission();
    // Compute and write under one lock: a client write in between would otherwise be
    // overwritten by a status write carrying the object's older spec.
    let (wrote, wake) = {
        let mut cluster = shared.lock();
        sync(
            &mut cluster,
            memory,
            &config,
            &admission,
            running.as_ref(),
            Timestamp::now(),
        )
    };
    if wrote {
        shared.changed.send_modify(|n| *n += 1);
    }
    wake
}

fn sync(
    c: &mut Cluster,
    memory: &mut Memory,
    config: &WorkloadConfig,
    admission: &AdmissionConfig,
    processes: Option<&crate::processes::Readiness>,
    now: Timestamp,
) -> (bool, Option<Timestamp>) {
    let mut wrote = false;
    let mut wake: Option<Timestamp> = None;
    let nodes: Vec<Arc<Value>> = match c.resource("", "v1", "nodes") {
        Some(rt) => c
            .store
            .iter(&rt.group_resource(), None, None)
            .map(|(_, o)| o.clone())
            .collect(),
        None => Vec::new(),
    };

    if let Some(rt) = c.resource("apps", "v1", "deployments") {
        let objects: Vec<Arc<Value>> = c
            .store
            .iter(&rt.group_resource(), None, None)
            .map(|(_, o)| o.clone())
            .collect();
        let mut seen = HashMap::new();
        for obj in objects {
            let key = identity(&obj);
            let mut track = memory.deployments.remove(&key);
            let running = processes.and_then(|p| p.running_hashes(&obj));
            let creation = deployment_creation(c, admission, &obj);
            wrote |= report_refusal(c, memory, &obj, &creation, now);
            let mut held = None;
            let config = with_volume_wait(c, config, WorkloadKind::Deployment, &obj, &mut held);
            let (status, due) = deployment_status_admitted(
                &obj,
                &mut track,
                now,
                config,
                running.as_ref(),
                &creation,
            );
            if let Some(t) = track {
                seen.insert(key, t);
            }
            wake = earliest(wake, due);
            if obj.get("status") != Some(&status) {
                let mut updated = (*obj).clone();
                if let Some(o) = updated.as_object_mut() {
                    o.insert("status".into(), status);
                }
                c.controller_put(&rt, updated);
                wrote = true;
            }
        }
        memory.deployments = seen;
    }

    if let Some(rt) = c.resource("apps", "v1", "daemonsets") {
        let objects: Vec<Arc<Value>> = c
            .store
            .iter(&rt.group_resource(), None, None)
            .map(|(_, o)| o.clone())
            .collect();
        let mut seen = HashMap::new();
        for obj in objects {
            let key = identity(&obj);
            let mut track = memory.daemonsets.remove(&key).unwrap_or_default();
            let creation = daemonset_creation(c, admission, &obj);
            wrote |= report_refusal(c, memory, &obj, &creation, now);
            let mut held = None;
            let config = with_volume_wait(c, config, WorkloadKind::DaemonSet, &obj, &mut held);
            let (status, due) =
                daemonset_status_admitted(&obj, &nodes, &mut track, now, config, &creation);
            seen.insert(key, track);
            wake = earliest(wake, due);
            if obj.get("status") != Some(&status) {
                let mut updated = (*obj).clone();
                if let Some(o) = updated.as_object_mut() {
                    o.insert("status".into(), status);
                }
                c.controller_put(&rt, updated);
                wrote = true;
            }
        }
        memory.daemonsets = seen;
    }
    (wrote, wake)
}

/// Whether the ReplicaSet controller could create the Deployment's pods now.
fn deployment_creation(c: &Cluster, admission: &AdmissionConfig, dep: &Value) -> PodCreation {
    let template = dep
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(Value::Null);
    let hash = pod_template_hash(&template, int(dep, "/status/collisionCount"));
    let generate_name = format!("{}-{hash}-", text(dep, "/metadata/name"));
    PodCreation::of(pod_admission::admit_template(
        c,
        admission,
        &template,
        text(dep, "/metadata/namespace"),
        &generate_name,
        "replicaset-controller",
    ))
}

/// Whether the DaemonSet controller could create the DaemonSet's pods now.
fn daemonset_creation(c: &Cluster, admission: &AdmissionConfig, ds: &Value) -> PodCreation {
    let template = ds.pointer("/spec/template").cloned().unwrap_or(Value::Null);
    PodCreation::of(pod_admission::admit_template(
        c,
        admission,
        &template,
        text(ds, "/metadata/namespace"),
        &format!("{}-", text(ds, "/metadata/name")),
        "daemon-set-controller",
    ))
}

/// Records a new refusal as the controller's `FailedCreate` Warning Event (once per distinct
/// message); returns whether it wrote.
fn report_refusal(
    c: &mut Cluster,
    memory: &mut Memory,
    obj: &Value,
    creation: &PodCreation,
    now: Timestamp,
) -> bool {
    let key = identity(obj);
    let PodCreation::Refused(message) = creation else {
        memory.refusals.remove(&key);
        return false;
    };
    if memory.refusals.get(&key) == Some(message) {
        return false;
    }
    memory.refusals.insert(key, message.clone());
    let Some(rt) = c.resource("", "v1", "events") else {
        return false;
    };
    let name = text(obj, "/metadata/name");
    let namespace = text(obj, "/metadata/namespace");
    let (involved, component) = if obj.get("kind").and_then(Value::as_str) == Some("DaemonSet") {
        (
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name,
                   "namespace": namespace, "uid": text(obj, "/metadata/uid")}),
            "daemonset-controller",
        )
    } else {
        let template = obj
            .pointer("/spec/template")
            .cloned()
            .unwrap_or(Value::Null);
        let hash = pod_template_hash(&template, int(obj, "/status/collisionCount"));
        (
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{name}-{hash}"),
                   "namespace": namespace}),
            "replicaset-controller",
        )
    };
    let stamp_now = stamp(now);
    let event = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": format!("{name}.{:x}", now.as_nanosecond().unsigned_abs()),
            "namespace": namespace,
        },
        "involvedObject": involved,
        "reason": "FailedCreate",
        "message": format!("Error creating: {message}"),
        "type": "Warning",
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": "",
        "firstTimestamp": stamp_now,
        "lastTimestamp": stamp_now,
        "count": 1,
    });
    let opts = WriteOptions {
        manager: component.into(),
        ..Default::default()
    };
    c.create(&rt, namespace, event, &opts).is_ok()
}

/// The uid, so a deleted and recreated workload starts afresh.
fn identity(obj: &Value) -> String {
    match obj.pointer("/metadata/uid").and_then(Value::as_str) {
        Some(uid) => uid.to_string(),
        None => format!(
            "{}/{}",
            text(obj, "/metadata/namespace"),
            text(obj, "/metadata/name")
        ),
    }
}

fn earliest(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

// ----- pods ------------------------------------------------------------------------------------

/// When a group of pods started and, once they passed their readiness checks, since when they
/// have been ready. Readiness is kept once reached, so raising the delay later does not take
/// running pods down; lowering it speeds up the pods still starting.
#[derive(Debug, Clone, PartialEq)]
struct Start {
    since: Timestamp,
    ready_since: Option<Timestamp>,
}

impl Start {
    fn at(now: Timestamp) -> Self {
        Self {
            since: now,
            ready_since: None,
        }
    }

    /// Pods found already running when the simulator first sees them.
    fn settled() -> Self {
        Self {
            since: Timestamp::UNIX_EPOCH,
            ready_since: Some(Timestamp::UNIX_EPOCH),
        }
    }

    /// Marks the pods ready once the delay has passed; pods held unavailable lose readiness.
    fn latch(&mut self, up: bool, delay: SignedDuration, now: Timestamp) {
        if !up {
            self.ready_since = None;
        } else if self.ready_since.is_none() && now >= later(self.since, delay) {
            self.ready_since = Some(later(self.since, delay));
        }
    }

    fn ready(&self) -> bool {
        self.ready_since.is_some()
    }

    /// Ready for at least `min_ready` (the pod's `minReadySeconds`).
    fn available(&self, min_ready: SignedDuration, now: Timestamp) -> bool {
        self.ready_since.is_some_and(|r| now >= later(r, min_ready))
    }

    /// When the pods will next become ready or available by themselves.
    fn next_change(
        &self,
        up: bool,
        delay: SignedDuration,
        min_ready: SignedDuration,
        now: Timestamp,
    ) -> Option<Timestamp> {
        if !up {
            return None;
        }
        let at = match self.ready_since {
            None => later(self.since, delay),
            Some(r) => later(r, min_ready),
        };
        (at > now).then_some(at)
    }
}

// ----- Deployments -----------------------------------------------------------------------------

/// What the simulator remembers of one Deployment's pods.
#[derive(Debug, Clone, PartialEq)]
pub struct DeploymentTrack {
    /// The pod-template-hash of the newest ReplicaSet (frozen while the Deployment is paused).
    hash: String,
    /// When the newest ReplicaSet's pods started (or were last allowed to become ready).
    start: Start,
    /// Whether the previous ReplicaSet's pods were available when this rollout began, so a
    /// rolling update keeps them serving until the new ones are available.
    replacing: bool,
    /// Whether the pods were being kept unavailable at the last pass.
    unavailable: bool,
}

/// The spec fields that shape a Deployment's status, with the API's defaults.
struct DeploymentSpec<'a> {
    name: &'a str,
    generation: i64,
    replicas: i64,
    rolling: bool,
    max_surge: i64,
    max_unavailable: i64,
    min_ready: SignedDuration,
    deadline: Option<SignedDuration>,
    paused: bool,
    hash: String,
}

impl<'a> DeploymentSpec<'a> {
    fn of(dep: &'a Value) -> Self {
        let replicas = int(dep, "/spec/replicas")
            .unwrap_or(1)
            .clamp(0, i64::from(i32::MAX));
        let rolling = dep
            .pointer("/spec/strategy/type")
            .and_then(Value::as_str)
            .is_none_or(|t| t == "RollingUpdate");
        // Rounding as in the deployment controller's ResolveFenceposts: surge up, unavailable
        // down, and never both zero.
        let surge = scaled(
            dep.pointer("/spec/strategy/rollingUpdate/maxSurge"),
            &json!("25%"),
            replicas,
            true,
        );
        let mut unavailable = scaled(
            dep.pointer("/spec/strategy/rollingUpdate/maxUnavailable"),
            &json!("25%"),
            replicas,
            false,
        );
        if surge == 0 && unavailable == 0 {
            unavailable = 1;
        }
        let max_unavailable = if rolling && replicas > 0 {
            unavailable.min(replicas)
        } else {
            0
        };
        // The API defaults progressDeadlineSeconds to 600; MaxInt32 means "no deadline".
        let deadline = match int(dep, "/spec/progressDeadlineSeconds") {
            Some(s) if s >= i64::from(i32::MAX) => None,
            Some(s) => Some(SignedDuration::from_secs(s.max(0))),
            None => Some(SignedDuration::from_secs(600)),
        };
        let template = dep
            .pointer("/spec/template")
            .cloned()
            .unwrap_or(Value::Null);
        Self {
            name: dep
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            generation: int(dep, "/metadata/generation").unwrap_or(0),
            replicas,
            rolling,
            max_surge: if rolling { surge } else { 0 },
            max_unavailable,
            min_ready: SignedDuration::from_secs(
                int(dep, "/spec/minReadySeconds").unwrap_or(0).max(0),
            ),
            deadline,
            paused: dep
                .pointer("/spec/paused")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            hash: pod_template_hash(&template, int(dep, "/status/collisionCount")),
        }
    }
}

/// The counts a Deployment's status reports.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Counts {
    replicas: i64,
    updated: i64,
    ready: i64,
    available: i64,
}

impl Counts {
    fn stored(dep: &Value) -> Self {
        let get = |f: &str| int(dep, &format!("/status/{f}")).unwrap_or(0);
        Self {
            replicas: get("replicas"),
            updated: get("updatedReplicas"),
            ready: get("readyReplicas"),
            available: get("availableReplicas"),
        }
    }
}

/// The status the deployment controller would write for `dep` at `now`, and when it will next
/// change by itself. `track` is the simulator's memory of the Deployment's pods (`None` the
/// first time it is seen) and is updated in place.
pub fn deployment_status(
    dep: &Value,
    track: &mut Option<DeploymentTrack>,
    now: Timestamp,
    config: &WorkloadConfig,
) -> (Value, Option<Timestamp>) {
    deployment_status_with(dep, track, now, config, None)
}

/// [`deployment_status`] for a Deployment whose pods may run as local processes
/// (`processes.rs`): `running` is then the pod-template-hashes whose processes all run, and
/// the pods are up only while theirs do; `None` means virtual pods.
pub fn deployment_status_with(
    dep: &Value,
    track: &mut Option<DeploymentTrack>,
    now: Timestamp,
    config: &WorkloadConfig,
    running: Option<&BTreeSet<String>>,
) -> (Value, Option<Timestamp>) {
    deployment_status_admitted(dep, track, now, config, running, &PodCreation::Admitted)
}

/// [`deployment_status_with`] when the newest ReplicaSet's pods may not be creatable:
/// admission pending or refused, they do not exist (pods of an earlier template that a rolling
/// update keeps stay), and a refusal is the `ReplicaFailure` condition.
pub fn deployment_status_admitted(
    dep: &Value,
    track: &mut Option<DeploymentTrack>,
    now: Timestamp,
    config: &WorkloadConfig,
    running: Option<&BTreeSet<String>>,
    creation: &PodCreation,
) -> (Value, Option<Timestamp>) {
    let mut spec = DeploymentSpec::of(dep);
    if let Some(cap) = config.max_progress_deadline_seconds {
        let cap = SignedDuration::from_secs(i64::try_from(cap).unwrap_or(i64::MAX));
        spec.deadline = Some(spec.deadline.map_or(cap, |d| d.min(cap)));
    }
    let namespace = text(dep, "/metadata/namespace");
    // The pods that run are those of the template the Deployment last rolled out to, which a
    // paused Deployment keeps.
    let pod_hash = match track {
        Some(t) if spec.paused => t.hash.as_str(),
        _ => spec.hash.as_str(),
    };
    let unavailable = config.is_unavailable(WorkloadKind::Deployment, namespace, spec.name)
        || running.is_some_and(|r| !r.contains(pod_hash))
        || creation.blocked();
    let delay = config.delay();
    let stored = Counts::stored(dep);

    let t = match track.take() {
        None => {
            // Seen for the first time (a new Deployment, or the simulator just switched on):
            // a status that already reports this generation fully available is taken as true.
            let settled = int(dep, "/status/observedGeneration") == Some(spec.generation)
                && stored.updated == spec.replicas
                && stored.available == spec.replicas;
            let start = if settled && !unavailable {
                Start::settled()
            } else {
                Start::at(now)
            };
            DeploymentTrack {
                hash: spec.hash.clone(),
                start,
                replacing: false,
                unavailable,
            }
        }
        Some(mut t) => {
            if t.hash != spec.hash && !spec.paused {
                let serving = !t.unavailable && t.start.available(spec.min_ready, now);
                t = DeploymentTrack {
                    hash: spec.hash.clone(),
                    start: Start::at(now),
                    replacing: serving,
                    unavailable,
                };
            }
            if t.unavailable && !unavailable {
                // The pods only start passing their readiness checks from now on.
                t.start = Start::at(now);
            }
            t.unavailable = unavailable;
            t
        }
    };
    let mut t = t;

    let up = !unavailable;
    t.start.latch(up, delay, now);
    let new_ready = t.start.ready();
    let new_available = t.start.available(spec.min_ready, now);
    let n = spec.replicas;
    let counts = if creation.blocked() {
        // No new pod exists; a rolling update keeps the old ones it may not scale down.
        let old = if t.replacing && spec.rolling {
            n - spec.max_unavailable
        } else {
            0
        };
        Counts {
            replicas: old,
            updated: 0,
            ready: old,
            available: old,
        }
    } else if t.replacing && up && spec.rolling && !new_available {
        // Mid rolling update: the new ReplicaSet has surged as far as maxSurge and
        // maxUnavailable allow, the old one is scaled down to the minimum that must stay
        // available, and nothing moves until the new pods are available.
        let new = n.min(spec.max_surge.saturating_add(spec.max_unavailable));
        let old = n - spec.max_unavailable;
        Counts {
            replicas: old + new,
            updated: new,
            ready: old + if new_ready { new } else { 0 },
            available: old,
        }
    } else {
        Counts {
            replicas: n,
            updated: n,
            ready: if new_ready { n } else { 0 },
            available: if new_available { n } else { 0 },
        }
    };

    let mut wake = t.start.next_change(up, delay, spec.min_ready, now);

    let stamp_now = stamp(now);
    let previous: Vec<Value> = dep
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let available_cond = if counts.available >= n - spec.max_unavailable {
        condition(
            find(&previous, "Available"),
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
            &stamp_now,
        )
    } else {
        condition(
            find(&previous, "Available"),
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
            &stamp_now,
        )
    };

    let mut progressing = find(&previous, "Progressing").cloned();
    if let Some(deadline) = spec.deadline {
        let rs = format!("{}-{}", spec.name, t.hash);
        let reason_of = |c: &Option<Value>| {
            c.as_ref()
                .and_then(|c| c.get("reason"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        if spec.paused {
            let reason = reason_of(&progressing);
            // A reported timeout is not overwritten by the paused condition.
            if reason != "ProgressDeadlineExceeded" && reason != "DeploymentPaused" {
                progressing = Some(condition(
                    progressing.as_ref(),
                    "Progressing",
                    "Unknown",
                    "DeploymentPaused",
                    "Deployment is paused",
                    &stamp_now,
                ));
            }
        } else {
            if reason_of(&progressing) == "DeploymentPaused" {
                progressing = Some(condition(
                    progressing.as_ref(),
                    "Progressing",
                    "Unknown",
                    "DeploymentResumed",
                    "Deployment is resumed",
                    &stamp_now,
                ));
            }
            let names_current = progressing
                .as_ref()
                .and_then(|c| c.get("message"))
                .and_then(Value::as_str)
                .is_some_and(|m| m.contains(&format!("\"{rs}\"")));
            let was_complete = counts.replicas == counts.updated
                && reason_of(&progressing) == "NewReplicaSetAvailable"
                && names_current;
            if !was_complete {
                let complete = counts.updated == n && counts.replicas == n && counts.available == n;
                // A new ReplicaSet, more updated, ready or available pods, or fewer old ones.
                let progressed = !names_current
                    || counts.updated > stored.updated
                    || counts.replicas - counts.updated < stored.replicas - stored.updated
                    || counts.ready > stored.ready
                    || counts.available > stored.available;
                if complete {
                    let msg = format!("ReplicaSet \"{rs}\" has successfully progressed.");
                    progressing = Some(condition(
                        progressing.as_ref(),
                        "Progressing",
                        "True",
                        "NewReplicaSetAvailable",
                        &msg,
                        &stamp_now,
                    ));
                } else if progressed {
                    // Unlike other conditions, progress refreshes lastUpdateTime even when the
                    // reason stays the same: that time is what the deadline counts from.
                    let msg = format!("ReplicaSet \"{rs}\" is progressing.");
                    let mut c = condition(
                        progressing.as_ref(),
                        "Progressing",
                        "True",
                        "ReplicaSetUpdated",
                        &msg,
                        &stamp_now,
                    );
                    if let Some(o) = c.as_object_mut() {
                        o.insert("lastUpdateTime".into(), Value::String(stamp_now.clone()));
                    }
                    progressing = Some(c);
                } else if timed_out(progressing.as_ref(), deadline, now) {
                    let msg = format!("ReplicaSet \"{rs}\" has timed out progressing.");
                    progressing = Some(condition(
                        progressing.as_ref(),
                        "Progressing",
                        "False",
                        "ProgressDeadlineExceeded",
                        &msg,
                        &stamp_now,
                    ));
                }
            }
            if let Some(c) = &progressing {
                let reason = c.get("reason").and_then(Value::as_str).unwrap_or_default();
                if !matches!(
                    reason,
                    "NewReplicaSetAvailable" | "ProgressDeadlineExceeded"
                ) {
                    // The controller compares with a strict "before", at second resolution.
                    wake = earliest(
                        wake,
                        Some(later(
                            later(last_update(c, now), deadline),
                            SignedDuration::from_secs(1),
                        )),
                    );
                }
            }
        }
    }

    let mut conditions: Vec<Value> = previous
        .iter()
        .filter(|c| {
            !matches!(
                c.get("type").and_then(Value::as_str),
                Some("Available" | "Progressing" | "ReplicaFailure")
            )
        })
        .cloned()
        .collect();
    conditions.push(available_cond);
    conditions.extend(progressing);
    if let PodCreation::Refused(message) = creation {
        conditions.push(condition(
            find(&previous, "ReplicaFailure"),
            "ReplicaFailure",
            "True",
            "FailedCreate",
            message,
            &stamp_now,
        ));
    }

    let mut status = Map::new();
    put_nonzero(&mut status, "observedGeneration", spec.generation);
    put_nonzero(&mut status, "replicas", counts.replicas);
    put_nonzero(&mut status, "updatedReplicas", counts.updated);
    put_nonzero(&mut status, "readyReplicas", counts.ready);
    put_nonzero(&mut status, "availableReplicas", counts.available);
    put_nonzero(
        &mut status,
        "unavailableReplicas",
        (counts.replicas - counts.available).max(0),
    );
    status.insert("conditions".into(), Value::Array(conditions));
    if let Some(cc) = dep.pointer("/status/collisionCount") {
        status.insert("collisionCount".into(), cc.clone());
    }
    *track = Some(t);
    (Value::Object(status), wake)
}

/// The deployment controller's DeploymentTimedOut.
fn timed_out(progressing: Option<&Value>, deadline: SignedDuration, now: Timestamp) -> bool {
    let Some(c) = progressing else { return false };
    match c.get("reason").and_then(Value::as_str) {
        Some("NewReplicaSetAvailable") => false,
        Some("ProgressDeadlineExceeded") => true,
        _ => later(last_update(c, now), deadline) < now,
    }
}

fn last_update(c: &Value, now: Timestamp) -> Timestamp {
    c.get("lastUpdateTime")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(now)
}

// ----- DaemonSets ------------------------------------------------------------------------------

/// What the simulator remembers of one DaemonSet: its virtual pods, by node name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DaemonSetTrack {
    pods: BTreeMap<String, DaemonPod>,
    unavailable: bool,
    /// Whether the simulator has seen the DaemonSet before.
    seen: bool,
}

#[derive(Debug, Clone, PartialEq)]
struct DaemonPod {
    /// The template hash the pod was created from.
    hash: String,
    start: Start,
    /// A surge replacement: the previous pod still runs beside this one until this one is
    /// available, and as the older pod it is the one the status counts.
    surging: bool,
}

/// Where a DaemonSet's pod should be, node by node.
struct Placement {
    node: String,
    should_run: bool,
    should_continue: bool,
    node_ready: bool,
}

/// The status the DaemonSet controller would write for `ds` at `now` given the cluster's
/// nodes, and when it will next change by itself. `track` holds the DaemonSet's virtual pods
/// and is updated in place (pods are created, replaced and removed as the controller would).
pub fn daemonset_status(
    ds: &Value,
    nodes: &[Arc<Value>],
    track: &mut DaemonSetTrack,
    now: Timestamp,
    config: &WorkloadConfig,
) -> (Value, Option<Timestamp>) {
    daemonset_status_admitted(ds, nodes, track, now, config, &PodCreation::Admitted)
}

/// [`daemonset_status`] when new pods may not be creatable: while admission is pending or
/// refuses them, no pod is created (nor replaced by a rolling update); existing pods stay.
pub fn daemonset_status_admitted(
    ds: &Value,
    nodes: &[Arc<Value>],
    track: &mut DaemonSetTrack,
    now: Timestamp,
    config: &WorkloadConfig,
    creation: &PodCreation,
) -> (Value, Option<Timestamp>) {
    let name = text(ds, "/metadata/name");
    let namespace = text(ds, "/metadata/namespace");
    let template = ds.pointer("/spec/template").cloned().unwrap_or(Value::Null);
    let pod_spec = template.get("spec").cloned().unwrap_or(Value::Null);
    let hash = pod_template_hash(&template, int(ds, "/status/collisionCount"));
    let unavailable = config.is_unavailable(WorkloadKind::DaemonSet, namespace, name);
    let up = !unavailable;
    let delay = config.delay();
    for pod in track.pods.values_mut() {
        if track.unavailable && up {
            pod.start = Start::at(now);
        }
        pod.start.latch(up, delay, now);
    }
    track.unavailable = unavailable;
    let new_pod = |surging: bool| {
        let mut start = Start::at(now);
        start.latch(up, delay, now);
        DaemonPod {
            hash: hash.clone(),
            start,
            surging,
        }
    };
    let min_ready = SignedDuration::from_secs(int(ds, "/spec/minReadySeconds").unwrap_or(0).max(0));

    let placements: Vec<Placement> = nodes
        .iter()
        .map(|node| {
            let (should_run, should_continue) = node_should_run(node, &pod_spec);
            Placement {
                node: text(node, "/metadata/name").to_string(),
                should_run,
                should_continue,
                node_ready: node_ready(node),
            }
        })
        .collect();
    let by_node: HashMap<&str, &Placement> =
        placements.iter().map(|p| (p.node.as_str(), p)).collect();

    // Pods leave nodes that are gone or that they may no longer run on, and appear on nodes
    // they should run on.
    track.pods.retain(|node, _| {
        by_node
            .get(node.as_str())
            .is_some_and(|p| p.should_run || p.should_continue)
    });
    // Seen for the first time (the simulator just switched on) with a status that reports
    // this generation fully available: its pods are taken as running.
    let desired_now = placements.iter().filter(|p| p.should_run).count() as i64;
    let settled = !track.seen
        && up
        && int(ds, "/status/observedGeneration") == int(ds, "/metadata/generation")
        && int(ds, "/status/numberAvailable") == Some(desired_now)
        && int(ds, "/status/updatedNumberScheduled") == Some(desired_now);
    track.seen = true;
    for p in placements
        .iter()
        .filter(|p| p.should_run && !creation.blocked())
    {
        track.pods.entry(p.node.clone()).or_insert_with(|| {
            if settled {
                DaemonPod {
                    hash: hash.clone(),
                    start: Start::settled(),
                    surging: false,
                }
            } else {
                new_pod(false)
            }
        });
    }

    let ready =
        |pod: &DaemonPod, node_ready: bool| up && node_ready && (pod.surging || pod.start.ready());
    let available = |pod: &DaemonPod, node_ready: bool| {
        ready(pod, node_ready) && (pod.surging || pod.start.available(min_ready, now))
    };
    // A surging pod's own availability, which decides when the old pod goes.
    let new_available =
        |pod: &DaemonPod, node_ready: bool| up && node_ready && pod.start.available(min_ready, now);

    let strategy = ds
        .pointer("/spec/updateStrategy/type")
        .and_then(Value::as_str)
        .unwrap_or("RollingUpdate");
    if strategy == "RollingUpdate" && !creation.blocked() {
        let desired = placements.iter().filter(|p| p.should_run).count() as i64;
        let max_surge = scaled(
            ds.pointer("/spec/updateStrategy/rollingUpdate/maxSurge"),
            &json!(0),
            desired,
            true,
        );
        let mut max_unavailable = scaled(
            ds.pointer("/spec/updateStrategy/rollingUpdate/maxUnavailable"),
            &json!(1),
            desired,
            true,
        );
        if desired > 0 && max_surge == 0 && max_unavailable == 0 {
            max_unavailable = 1;
        }
        // One controller sync per round, until nothing more can happen at this instant.
        for _ in 0..=placements.len() {
            let mut acted = false;
            let targets: Vec<&Placement> = placements.iter().filter(|p| p.should_run).collect();
            if max_surge == 0 {
                let mut unavailable_count = targets
                    .iter()
                    .filter(|p| {
                        track
                            .pods
                            .get(&p.node)
                            .is_some_and(|pod| pod.hash == hash && !available(pod, p.node_ready))
                    })
                    .count() as i64;
                let mut replace = Vec::new();
                for p in &targets {
                    let Some(pod) = track.pods.get(&p.node) else {
                        continue;
                    };
                    if pod.hash == hash {
                        continue;
                    }
                    if !available(pod, p.node_ready) {
                        replace.push(p.node.clone());
                    } else if unavailable_count < max_unavailable {
                        replace.push(p.node.clone());
                        unavailable_count += 1;
                    }
                }
                for node in replace {
                    track.pods.insert(node, new_pod(false));
                    acted = true;
                }
            } else {
                let mut surges = 0;
                for p in &targets {
                    if let Some(pod) = track.pods.get_mut(&p.node)
                        && pod.surging
                    {
                        if new_available(pod, p.node_ready) {
                            pod.surging = false;
                            acted = true;
                        } else {
                            surges += 1;
                        }
                    }
                }
                for p in &targets {
                    let Some(pod) = track.pods.get_mut(&p.node) else {
                        continue;
                    };
                    if pod.hash == hash {
                        continue;
                    }
                    if !available(pod, p.node_ready) {
                        *pod = new_pod(false);
                        acted = true;
                    } else if surges < max_surge {
                        *pod = new_pod(true);
                        surges += 1;
                        acted = true;
                    }
                }
            }
            if !acted {
                break;
            }
        }
    }

    let (
        mut desired,
        mut current,
        mut number_ready,
        mut number_available,
        mut updated,
        mut misscheduled,
    ) = (0, 0, 0, 0, 0, 0);
    let mut wake = None;
    for p in &placements {
        let Some(pod) = track.pods.get(&p.node) else {
            desired += i64::from(p.should_run);
            continue;
        };
        if p.node_ready {
            wake = earliest(wake, pod.start.next_change(up, delay, min_ready, now));
        }
        if !p.should_run {
            misscheduled += 1;
            continue;
        }
        desired += 1;
        current += 1;
        if ready(pod, p.node_ready) {
            number_ready += 1;
            if available(pod, p.node_ready) {
                number_available += 1;
            }
        }
        if pod.hash == hash && !pod.surging {
            updated += 1;
        }
    }

    let mut status = Map::new();
    status.insert("currentNumberScheduled".into(), json!(current));
    status.insert("desiredNumberScheduled".into(), json!(desired));
    status.insert("numberMisscheduled".into(), json!(misscheduled));
    status.insert("numberReady".into(), json!(number_ready));
    put_nonzero(&mut status, "numberAvailable", number_available);
    put_nonzero(&mut status, "numberUnavailable", desired - number_available);
    put_nonzero(&mut status, "updatedNumberScheduled", updated);
    put_nonzero(
        &mut status,
        "observedGeneration",
        int(ds, "/metadata/generation").unwrap_or(0),
    );
    for kept in ["collisionCount", "conditions"] {
        if let Some(v) = ds.pointer(&format!("/status/{kept}")) {
            status.insert(kept.into(), v.clone());
        }
    }
    (Value::Object(status), wake)
}

// ----- scheduling ------------------------------------------------------------------------------

/// The tolerations the DaemonSet controller adds to every daemon pod, so node problems and
/// cordoning do not keep or drive daemons off their nodes.
const DAEMON_TOLERATIONS: [(&str, &str); 6] = [
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
];

/// The DaemonSet controller's NodeShouldRunDaemonPod for a pod spec: `(should_run,
/// should_continue_running)`. A pod that may not start on a node (an untolerated NoSchedule
/// taint) may still keep running there unless a NoExecute taint is untolerated.
pub fn node_should_run(node: &Value, pod_spec: &Value) -> (bool, bool) {
    let node_name = text(node, "/metadata/name");
    let wanted = pod_spec
        .get("nodeName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !wanted.is_empty() && wanted != node_name {
        return (false, false);
    }
    if !fits_node_affinity(node, pod_spec) {
        return (false, false);
    }
    let mut tolerations: Vec<Value> = pod_spec
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut automatic: Vec<(&str, &str)> = DAEMON_TOLERATIONS.to_vec();
    if pod_spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        automatic.push(("node.kubernetes.io/network-unavailable", "NoSchedule"));
    }
    tolerations.extend(
        automatic
            .into_iter()
            .map(|(key, effect)| json!({"key": key, "operator": "Exists", "effect": effect})),
    );

    let mut taints: Vec<Value> = node
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    // The node lifecycle controller taints cordoned nodes; mirror it for nodes created bare.
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true)
        && !taints.iter().any(|t| {
            t.get("key").and_then(Value::as_str) == Some("node.kubernetes.io/unschedulable")
        })
    {
        taints.push(json!({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}));
    }
    let untolerated = |effects: &[&str]| {
        taints.iter().any(|taint| {
            let effect = taint
                .get("effect")
                .and_then(Value::as_str)
                .unwrap_or_default();
            effects.contains(&effect) && !tolerations.iter().any(|t| tolerates(t, taint))
        })
    };
    if untolerated(&["NoSchedule", "NoExecute"]) {
        return (false, !untolerated(&["NoExecute"]));
    }
    (true, true)
}

/// Toleration.ToleratesTaint: an empty effect matches every effect, an empty key (only valid
/// with `Exists`) every key; `Equal` (the default operator) also compares the value.
pub fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let field = |v: &Value, f: &str| {
        v.get(f)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let effect = field(toleration, "effect");
    if !effect.is_empty() && effect != field(taint, "effect") {
        return false;
    }
    let key = field(toleration, "key");
    if !key.is_empty() && key != field(taint, "key") {
        return false;
    }
    match field(toleration, "operator").as_str() {
        "" | "Equal" => field(toleration, "value") == field(taint, "value"),
        "Exists" => true,
        _ => false,
    }
}

/// `nodeSelector` and required node affinity.
fn fits_node_affinity(node: &Value, pod_spec: &Value) -> bool {
    let labels = node.pointer("/metadata/labels").and_then(Value::as_object);
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    if let Some(selector) = pod_spec.get("nodeSelector").and_then(Value::as_object)
        && !selector.iter().all(|(k, v)| label(k) == v.as_str())
    {
        return false;
    }
    let Some(required) =
        pod_spec.pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution")
    else {
        return true;
    };
    let terms = required
        .get("nodeSelectorTerms")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let name = text(node, "/metadata/name");
    terms.iter().any(|term| {
        let exprs = term
            .get("matchExpressions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let fields = term
            .get("matchFields")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        // An empty term matches no node.
        (!exprs.is_empty() || !fields.is_empty())
            && exprs
                .iter()
                .all(|r| requirement_matches(r, label(text(r, "/key"))))
            && fields
                .iter()
                .all(|r| text(r, "/key") == "metadata.name" && requirement_matches(r, Some(name)))
    })
}

fn requirement_matches(req: &Value, value: Option<&str>) -> bool {
    let values: Vec<&str> = req
        .get("values")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let number = |s: &str| s.parse::<i64>().ok();
    match text(req, "/operator") {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => value.is_none_or(|v| !values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => {
            matches!((value.and_then(number), values.first().and_then(|s| number(s))), (Some(v), Some(w)) if v > w)
        }
        "Lt" => {
            matches!((value.and_then(number), values.first().and_then(|s| number(s))), (Some(v), Some(w)) if v < w)
        }
        _ => false,
    }
}

fn node_ready(node: &Value) -> bool {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Ready")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

// ----- helpers ---------------------------------------------------------------------------------

/// The controllers' ComputeHash: FNV-1a over the pod template (here its canonical JSON, with
/// sorted keys so the same template always hashes the same) and the collision count, written
/// as a decimal and mapped onto the alphabet Kubernetes uses for generated names.
pub fn pod_template_hash(template: &Value, collision_count: Option<i64>) -> String {
    let mut canonical = String::new();
    write_canonical(template, &mut canonical);
    let mut h = fnv1a(0x811c_9dc5, canonical.as_bytes());
    if let Some(c) = collision_count {
        h = fnv1a(h, &(c as u32).to_le_bytes());
    }
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    h.to_string()
        .bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

fn fnv1a(mut h: u32, bytes: &[u8]) -> u32 {
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            out.push('{');
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// An IntOrString scaled against `total` (a percentage rounded up or down), as
/// GetScaledValueFromIntOrPercent; an absent or malformed value takes `default`.
fn scaled(v: Option<&Value>, default: &Value, total: i64, round_up: bool) -> i64 {
    let one = |v: &Value| match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => {
            let p = s.strip_suffix('%')?.parse::<i64>().ok()?;
            Some(if round_up {
                p.saturating_mul(total).saturating_add(99).div_euclid(100)
            } else {
                p.saturating_mul(total).div_euclid(100)
            })
        }
        _ => None,
    };
    v.and_then(one).or_else(|| one(default)).unwrap_or(0)
}

/// A condition of `type_`, keeping the previous one whole when nothing changed and its
/// lastTransitionTime when only the reason or message did.
fn condition(
    previous: Option<&Value>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &str,
) -> Value {
    let field = |f: &str| previous.and_then(|p| p.get(f)).and_then(Value::as_str);
    if let Some(p) = previous
        && field("status") == Some(status)
        && field("reason") == Some(reason)
        && field("message") == Some(message)
    {
        return p.clone();
    }
    let transition = match field("status") {
        Some(s) if s == status => field("lastTransitionTime").unwrap_or(now).to_string(),
        _ => now.to_string(),
    };
    json!({
        "type": type_,
        "status": status,
        "lastUpdateTime": now,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    })
}

fn find<'a>(conditions: &'a [Value], type_: &str) -> Option<&'a Value> {
    conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

/// The status integers Kubernetes omits when zero (`omitempty`).
fn put_nonzero(status: &mut Map<String, Value>, field: &str, value: i64) {
    if value != 0 {
        status.insert(field.into(), json!(value));
    }
}

fn int(v: &Value, pointer: &str) -> Option<i64> {
    v.pointer(pointer).and_then(Value::as_i64)
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn later(t: Timestamp, d: SignedDuration) -> Timestamp {
    t.checked_add(d).unwrap_or(Timestamp::MAX)
}

/// A time as the API server writes it (RFC 3339, seconds).
fn stamp(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).expect("a valid time")
    }

    fn config(delay_ms: u64) -> WorkloadConfig {
        WorkloadConfig {
            delay_ms,
            ..WorkloadConfig::default()
        }
    }

    fn deployment(replicas: i64, image: &str) -> Value {
        json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "generation": 1},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image}]}},
            },
        })
    }

    /// One controller pass, storing the status as the loop does.
    fn step(
        obj: &mut Value,
        track: &mut Option<DeploymentTrack>,
        now: Timestamp,
        cfg: &WorkloadConfig,
    ) -> Option<Timestamp> {
        let (status, wake) = deployment_status(obj, track, now, cfg);
        obj["status"] = status;
        wake
    }

    fn cond<'a>(obj: &'a Value, type_: &str) -> &'a Value {
        obj.pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
            .unwrap_or_else(|| panic!("no {type_} condition in {obj}"))
    }

    fn rs_name(obj: &Value) -> String {
        format!("web-{}", pod_template_hash(&obj["spec"]["template"], None))
    }

    #[test]
    fn a_new_deployment_is_observed_at_once_and_becomes_available_after_the_delay() {
        let mut dep = deployment(3, "nginx:1");
        let mut track = None;
        let cfg = config(5_000);
        let wake = step(&mut dep, &mut track, at(0), &cfg);
        let s = &dep["status"];
        assert_eq!(
            (
                s["observedGeneration"].as_i64(),
                s["replicas"].as_i64(),
                s["updatedReplicas"].as_i64()
            ),
            (Some(1), Some(3), Some(3))
        );
        assert_eq!(s["unavailableReplicas"], 3);
        assert!(
            s.get("readyReplicas").is_none() && s.get("availableReplicas").is_none(),
            "zero counts are omitted: {s}"
        );
        let available = cond(&dep, "Available");
        assert_eq!(
            (&available["status"], &available["reason"]),
            (&json!("False"), &json!("MinimumReplicasUnavailable"))
        );
        assert_eq!(
            available["message"],
            "Deployment does not have minimum availability."
        );
        let progressing = cond(&dep, "Progressing");
        assert_eq!(
            (&progressing["status"], &progressing["reason"]),
            (&json!("True"), &json!("ReplicaSetUpdated"))
        );
        assert_eq!(
            progressing["message"],
            format!("ReplicaSet \"{}\" is progressing.", rs_name(&dep))
        );
        assert_eq!(wake, Some(at(5)));

        assert_eq!(step(&mut dep, &mut track, at(5), &cfg), None);
        let s = &dep["status"];
        assert_eq!(
            (s["readyReplicas"].as_i64(), s["availableReplicas"].as_i64()),
            (Some(3), Some(3))
        );
        assert!(s.get("unavailableReplicas").is_none());
        let available = cond(&dep, "Available");
        assert_eq!(
            (&available["status"], &available["reason"]),
            (&json!("True"), &json!("MinimumReplicasAvailable"))
        );
        assert_eq!(available["message"], "Deployment has minimum availability.");
        assert_eq!(available["lastTransitionTime"], stamp(at(5)));
        let progressing = cond(&dep, "Progressing");
        assert_eq!(progressing["reason"], "NewReplicaSetAvailable");
        assert_eq!(
            progressing["message"],
            format!(
                "ReplicaSet \"{}\" has successfully progressed.",
                rs_name(&dep)
            )
        );
        assert_eq!(
            progressing["lastTransitionTime"],
            stamp(at(0)),
            "Progressing stayed True throughout"
        );
        let types: Vec<&Value> = dep["status"]["conditions"]
            .as_array()
            .expect("conditions")
            .iter()
            .map(|c| &c["type"])
            .collect();
        assert_eq!(types, [&json!("Available"), &json!("Progressing")]);

        let settled = dep["status"].clone();
        step(&mut dep, &mut track, at(500), &cfg);
        assert_eq!(dep["status"], settled, "a settled status is not rewritten");
    }

    #[test]
    fn a_longer_delay_holds_back_starting_pods_but_not_running_ones() {
        let mut dep = deployment(2, "nginx:1");
        let mut track = None;
        step(&mut dep, &mut track, at(0), &config(0));
        assert_eq!(dep["status"]["availableReplicas"], 2);
        step(&mut dep, &mut track, at(1), &config(60_000));
        assert_eq!(
            dep["status"]["availableReplicas"], 2,
            "running pods stay ready"
        );

        let mut slow = deployment(2, "nginx:1");
        let mut track = None;
        step(&mut slow, &mut track, at(0), &config(60_000));
        assert!(slow["status"].get("availableReplicas").is_none());
        step(&mut slow, &mut track, at(1), &config(0));
        assert_eq!(
            slow["status"]["availableReplicas"], 2,
            "starting pods catch up with a shorter delay"
        );
    }

    #[test]
    fn minimum_availability_follows_max_unavailable() {
        // 4 replicas at the default 25% may lose one; Recreate may lose none.
        let mut dep = deployment(4, "nginx:1");
        dep["status"] = json!({"observedGeneration": 1, "replicas": 4, "updatedReplicas": 4, "availableReplicas": 4});
        let mut track = None;
        step(&mut dep, &mut track, at(0), &config(0));
        assert_eq!(cond(&dep, "Available")["status"], "True");
        let mut recreate = deployment(4, "nginx:1");
        recreate["spec"]["strategy"] = json!({"type": "Recreate"});
        let mut track = None;
        step(&mut recreate, &mut track, at(0), &config(1_000));
        assert_eq!(cond(&recreate, "Available")["status"], "False");
        let mut zero = deployment(0, "nginx:1");
        let mut track = None;
        step(&mut zero, &mut track, at(0), &config(1_000));
        assert_eq!(
            cond(&zero, "Available")["status"],
            "True",
            "nothing to wait for"
        );
        assert_eq!(
            cond(&zero, "Progressing")["reason"],
            "NewReplicaSetAvailable"
        );
    }

    #[test]
    fn the_deadline_cap_shortens_long_deadlines_only() {
        let mut cfg = config(0);
        cfg.unavailable.push(WorkloadRef {
            kind: WorkloadKind::Deployment,
            namespace: "ns".into(),
            name: "web".into(),
        });
        cfg.max_progress_deadline_seconds = Some(3);
        // The default 600 s deadline is capped to 3 s.
        let mut dep = deployment(1, "nginx:1");
        let mut track = None;
        assert_eq!(step(&mut dep, &mut track, at(0), &cfg), Some(at(4)));
        step(&mut dep, &mut track, at(4), &cfg);
        assert_eq!(
            cond(&dep, "Progressing")["reason"],
            "ProgressDeadlineExceeded"
        );
        // A shorter deadline of its own is kept.
        let mut short = deployment(1, "nginx:1");
        short["spec"]["progressDeadlineSeconds"] = json!(1);
        let mut track = None;
        assert_eq!(step(&mut short, &mut track, at(0), &cfg), Some(at(2)));
    }

    #[test]
    fn an_unavailable_deployment_times_out_and_recovers_when_released() {
        let mut dep = deployment(2, "nginx:1");
        dep["spec"]["progressDeadlineSeconds"] = json!(10);
        let mut cfg = config(0);
        cfg.unavailable.push(WorkloadRef {
            kind: WorkloadKind::Deployment,
            namespace: "ns".into(),
            name: "web".into(),
        });
        let mut track = None;
        assert_eq!(step(&mut dep, &mut track, at(0), &cfg), Some(at(11)));
        assert_eq!(cond(&dep, "Progressing")["reason"], "ReplicaSetUpdated");
        let before = dep["status"].clone();
        step(&mut dep, &mut track, at(5), &cfg);
        assert_eq!(
            dep["status"], before,
            "no progress, no deadline yet: nothing changes"
        );
        assert_eq!(step(&mut dep, &mut track, at(11), &cfg), None);
        let progressing = cond(&dep, "Progressing");
        assert_eq!(
            (&progressing["status"], &progressing["reason"]),
            (&json!("False"), &json!("ProgressDeadlineExceeded"))
        );
        assert_eq!(
            progressing["message"],
            format!(
                "ReplicaSet \"{}\" has timed out progressing.",
                rs_name(&dep)
            )
        );
        assert_eq!(cond(&dep, "Available")["status"], "False");
        assert!(dep["status"].get("availableReplicas").is_none());

        // Another workload in the list does not hold this one back.
        cfg.unavailable[0].kind = WorkloadKind::DaemonSet;
        step(&mut dep, &mut track, at(20), &cfg);
        assert_eq!(dep["status"]["availableReplicas"], 2);
        let progressing = cond(&dep, "Progressing");
        assert_eq!(
            (&progressing["status"], &progressing["reason"]),
            (&json!("True"), &json!("NewReplicaSetAvailable"))
        );
        assert_eq!(progressing["lastTransitionTime"], stamp(at(20)));
    }

    #[test]
    fn a_template_change_rolls_out_with_surge_and_keeps_old_pods_serving() {
        let mut dep = deployment(4, "nginx:1");
        let mut track = None;
        let cfg = config(10_000);
        step(&mut dep, &mut track, at(0), &cfg);
        step(&mut dep, &mut track, at(10), &cfg);
        let old_rs = rs_name(&dep);
        dep["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
        dep["metadata"]["generation"] = json!(2);
        let new_rs = rs_name(&dep);
        assert_ne!(old_rs, new_rs);

        assert_eq!(step(&mut dep, &mut track, at(20), &cfg), Some(at(30)));
        let s = &dep["status"];
        assert_eq!(s["observedGeneration"], 2);
        // 25% of 4: one surge, one unavailable: 3 old pods stay, 2 new ones start.
        assert_eq!(
            (
                s["replicas"].as_i64(),
                s["updatedReplicas"].as_i64(),
                s["availableReplicas"].as_i64()
            ),
            (Some(5), Some(2), Some(3))
        );
        assert_eq!(cond(&dep, "Available")["status"], "True");
        let progressing = cond(&dep, "Progressing");
        assert_eq!(progressing["reason"], "ReplicaSetUpdated");
        assert_eq!(
            progressing["message"],
            format!("ReplicaSet \"{new_rs}\" is progressing.")
        );

        step(&mut dep, &mut track, at(30), &cfg);
        let s = &dep["status"];
        assert_eq!(
            (
                s["replicas"].as_i64(),
                s["updatedReplicas"].as_i64(),
                s["availableReplicas"].as_i64()
            ),
            (Some(4), Some(4), Some(4))
        );
        assert_eq!(
            cond(&dep, "Progressing")["message"],
            format!("ReplicaSet \"{new_rs}\" has successfully progressed.")
        );
    }

    #[test]
    fn a_paused_deployment_does_not_roll_out_until_resumed() {
        let mut dep = deployment(2, "nginx:1");
        let mut track = None;
        let cfg = config(0);
        step(&mut dep, &mut track, at(0), &cfg);
        dep["spec"]["paused"] = json!(true);
        dep["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
        dep["metadata"]["generation"] = json!(2);
        let old = rs_name(&deployment(2, "nginx:1"));
        step(&mut dep, &mut track, at(5), &cfg);
        let progressing = cond(&dep, "Progressing");
        assert_eq!(
            (&progressing["status"], &progressing["reason"]),
            (&json!("Unknown"), &json!("DeploymentPaused"))
        );
        assert_eq!(progressing["message"], "Deployment is paused");
        assert_eq!(dep["status"]["observedGeneration"], 2);
        assert_eq!(
            track.as_ref().map(|t| t.hash.clone()),
            old.strip_prefix("web-").map(str::to_string),
            "the old template still runs"
        );

        dep["spec"]["paused"] = json!(false);
        step(&mut dep, &mut track, at(6), &cfg);
        assert_eq!(
            cond(&dep, "Progressing")["message"],
            format!(
                "ReplicaSet \"{}\" has successfully progressed.",
                rs_name(&dep)
            )
        );
    }

    #[test]
    fn tolerations_match_taints_as_kubernetes_does() {
        let taint = json!({"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"});
        let valued = json!({"key": "dedicated", "value": "db", "effect": "NoExecute"});
        let cases = [
            (
                json!({"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"}),
                &taint,
                true,
            ),
            (
                json!({"key": "node-role.kubernetes.io/master", "operator": "Exists"}),
                &taint,
                true,
            ),
            (
                json!({"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoExecute"}),
                &taint,
                false,
            ),
            (json!({"operator": "Exists"}), &taint, true),
            (
                json!({"operator": "Exists", "effect": "NoExecute"}),
                &taint,
                false,
            ),
            (json!({"key": "other", "operator": "Exists"}), &taint, false),
            (
                json!({"key": "node-role.kubernetes.io/master"}),
                &taint,
                true,
            ),
            (
                json!({"key": "dedicated", "operator": "Equal", "value": "db"}),
                &valued,
                true,
            ),
            (json!({"key": "dedicated", "value": "web"}), &valued, false),
            (
                json!({"key": "dedicated", "operator": "Lt", "value": "db"}),
                &valued,
                false,
            ),
        ];
        for (toleration, taint, want) in cases {
            assert_eq!(
                tolerates(&toleration, taint),
                want,
                "{toleration} vs {taint}"
            );
        }
    }

    fn node(name: &str, labels: Value, taints: Value, ready: bool) -> Arc<Value> {
        Arc::new(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints},
            "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
        }))
    }

    fn master(name: &str) -> Arc<Value> {
        node(
            name,
            json!({"node-role.kubernetes.io/master": "", "kubernetes.io/os": "linux"}),
            json!([{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]),
            true,
        )
    }

    fn worker(name: &str) -> Arc<Value> {
        node(
            name,
            json!({"node-role.kubernetes.io/worker": "", "kubernetes.io/os": "linux"}),
            json!([]),
            true,
        )
    }

    #[test]
    fn daemon_pods_go_where_selectors_affinity_and_taints_allow() {
        let m = master("m1");
        let w = worker("w1");
        let plain = json!({});
        let tolerant = json!({"tolerations": [{"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"}]});
        assert_eq!(
            node_should_run(&m, &plain),
            (false, true),
            "a NoSchedule taint lets running pods stay"
        );
        assert_eq!(node_should_run(&w, &plain), (true, true));
        assert_eq!(node_should_run(&m, &tolerant), (true, true));
        let masters_only = json!({"nodeSelector": {"node-role.kubernetes.io/master": ""}, "tolerations": tolerant["tolerations"]});
        assert_eq!(node_should_run(&m, &masters_only), (true, true));
        assert_eq!(node_should_run(&w, &masters_only), (false, false));
        let affinity = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "node-role.kubernetes.io/master", "operator": "DoesNotExist"}]},
        ]}}}});
        assert_eq!(node_should_run(&w, &affinity), (true, true));
        assert!(!node_should_run(&m, &affinity).0);
        let by_name = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["w1"]}]},
        ]}}}});
        assert_eq!(node_should_run(&w, &by_name), (true, true));
        assert_eq!(node_should_run(&worker("w2"), &by_name), (false, false));
        assert_eq!(
            node_should_run(&w, &json!({"nodeName": "w2"})),
            (false, false)
        );

        let evicting = node(
            "w3",
            json!({}),
            json!([{"key": "broken", "effect": "NoExecute"}]),
            true,
        );
        assert_eq!(
            node_should_run(&evicting, &plain),
            (false, false),
            "an untolerated NoExecute taint evicts"
        );
        let mut cordoned = (*worker("w4")).clone();
        cordoned["spec"]["unschedulable"] = json!(true);
        assert_eq!(
            node_should_run(&cordoned, &plain),
            (true, true),
            "daemon pods tolerate cordoned nodes"
        );
        let not_ready = node(
            "w5",
            json!({}),
            json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]),
            false,
        );
        assert_eq!(
            node_should_run(&not_ready, &plain),
            (true, true),
            "daemon pods tolerate not-ready nodes"
        );
        let no_network = node(
            "w6",
            json!({}),
            json!([{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]),
            true,
        );
        assert!(!node_should_run(&no_network, &plain).0);
        assert!(node_should_run(&no_network, &json!({"hostNetwork": true})).0);
    }

    fn daemonset(tolerations: Value) -> Value {
        json!({
            "metadata": {"name": "agent", "namespace": "ns", "uid": "u2", "generation": 1},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"tolerations": tolerations, "containers": [{"name": "c", "image": "agent:1"}]}},
            },
        })
    }

    fn ds_counts(status: &Value) -> [i64; 6] {
        [
            "desiredNumberScheduled",
            "currentNumberScheduled",
            "numberReady",
            "numberAvailable",
            "updatedNumberScheduled",
            "numberMisscheduled",
        ]
        .map(|f| status.get(f).and_then(Value::as_i64).unwrap_or(0))
    }

    #[test]
    fn daemonset_status_counts_the_nodes_it_runs_on() {
        let mut nodes = vec![
            master("m1"),
            master("m2"),
            master("m3"),
            worker("w1"),
            worker("w2"),
        ];
        nodes.push(node("w3", json!({}), json!([]), false));
        let cfg = config(3_000);
        let mut ds = daemonset(json!([]));
        let mut track = DaemonSetTrack::default();
        let (status, wake) = daemonset_status(&ds, &nodes, &mut track, at(0), &cfg);
        assert_eq!(ds_counts(&status), [3, 3, 0, 0, 3, 0]);
        assert_eq!(status["numberUnavailable"], 3);
        assert_eq!(status["observedGeneration"], 1);
        assert_eq!(status["numberReady"], 0, "numberReady is always present");
        assert_eq!(wake, Some(at(3)));
        let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(3), &cfg);
        assert_eq!(
            ds_counts(&status),
            [3, 3, 2, 2, 3, 0],
            "the pod on the NotReady node is scheduled but not ready"
        );
        assert_eq!(status["numberUnavailable"], 1);

        ds["spec"]["template"]["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
        ds["metadata"]["generation"] = json!(2);
        let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(4), &cfg);
        assert_eq!(status["desiredNumberScheduled"], 6);
        assert_eq!(status["observedGeneration"], 2);

        // A NoSchedule taint keeps the running pod (misscheduled); NoExecute evicts it.
        let mut tainted = daemonset(json!([]));
        let mut track = DaemonSetTrack::default();
        daemonset_status(&tainted, &nodes, &mut track, at(0), &cfg);
        nodes[3] = node(
            "w1",
            json!({}),
            json!([{"key": "maintenance", "effect": "NoSchedule"}]),
            true,
        );
        let (status, _) = daemonset_status(&tainted, &nodes, &mut track, at(5), &cfg);
        assert_eq!(
            (
                status["desiredNumberScheduled"].as_i64(),
                status["numberMisscheduled"].as_i64()
            ),
            (Some(2), Some(1))
        );
        nodes[3] = node(
            "w1",
            json!({}),
            json!([{"key": "maintenance", "effect": "NoExecute"}]),
            true,
        );
        let (status, _) = daemonset_status(&tainted, &nodes, &mut track, at(6), &cfg);
        assert_eq!(status["numberMisscheduled"], 0);
        nodes.truncate(3);
        tainted["metadata"]["generation"] = json!(1);
        let (status, _) = daemonset_status(&tainted, &nodes, &mut track, at(7), &cfg);
        assert_eq!(
            ds_counts(&status),
            [0, 0, 0, 0, 0, 0],
            "pods go with their nodes"
        );
    }

    #[test]
    fn a_rolled_out_daemonset_found_on_switch_on_stays_available() {
        let nodes = vec![worker("w1"), worker("w2")];
        let mut ds = daemonset(json!([]));
        ds["status"] = json!({"observedGeneration": 1, "desiredNumberScheduled": 2, "currentNumberScheduled": 2,
            "numberReady": 2, "numberAvailable": 2, "updatedNumberScheduled": 2, "numberMisscheduled": 0});
        let mut track = DaemonSetTrack::default();
        let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(0), &config(60_000));
        assert_eq!(status, ds["status"]);
        let mut fresh = DaemonSetTrack::default();
        ds["metadata"]["generation"] = json!(2);
        let (status, _) = daemonset_status(&ds, &nodes, &mut fresh, at(0), &config(60_000));
        assert_eq!(
            ds_counts(&status),
            [2, 2, 0, 0, 2, 0],
            "a generation it has not rolled out starts afresh"
        );
    }

    #[test]
    fn daemonset_rolling_update_replaces_one_pod_at_a_time() {
        let nodes = vec![worker("w1"), worker("w2"), worker("w3")];
        let cfg = config(10_000);
        let mut ds = daemonset(json!([]));
        let mut track = DaemonSetTrack::default();
        daemonset_status(&ds, &nodes, &mut track, at(0), &cfg);
        let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(10), &cfg);
        assert_eq!(ds_counts(&status), [3, 3, 3, 3, 3, 0]);

        ds["spec"]["template"]["spec"]["containers"][0]["image"] = json!("agent:2");
        ds["metadata"]["generation"] = json!(2);
        let mut on_delete = ds.clone();
        let mut on_delete_track = track.clone();
        let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(20), &cfg);
        assert_eq!(
            ds_counts(&status),
            [3, 3, 2, 2, 1, 0],
            "maxUnavailable 1: one pod is replaced"
        );
        let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(30), &cfg);
        assert_eq!(ds_counts(&status), [3, 3, 2, 2, 2, 0]);
        daemonset_status(&ds, &nodes, &mut track, at(40), &cfg);
        let (status, wake) = daemonset_status(&ds, &nodes, &mut track, at(50), &cfg);
        assert_eq!(ds_counts(&status), [3, 3, 3, 3, 3, 0]);
        assert_eq!(wake, None);

        on_delete["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
        let (status, _) = daemonset_status(&on_delete, &nodes, &mut on_delete_track, at(20), &cfg);
        assert_eq!(
            ds_counts(&status),
            [3, 3, 3, 3, 0, 0],
            "OnDelete pods are replaced only when deleted"
        );
    }

    #[test]
    fn daemonset_surge_keeps_old_pods_available() {
        let nodes = vec![worker("w1"), worker("w2")];
        let cfg = config(10_000);
        let mut ds = daemonset(json!([]));
        ds["spec"]["updateStrategy"] =
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}});
        let mut track = DaemonSetTrack::default();
        daemonset_status(&ds, &nodes, &mut track, at(0), &cfg);
        daemonset_status(&ds, &nodes, &mut track, at(10), &cfg);
        ds["spec"]["template"]["spec"]["containers"][0]["image"] = json!("agent:2");
        let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(20), &cfg);
        assert_eq!(
            ds_counts(&status),
            [2, 2, 2, 2, 0, 0],
            "the old pods serve while the new one starts"
        );
        let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(30), &cfg);
        assert_eq!(ds_counts(&status), [2, 2, 2, 2, 1, 0]);
        let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(40), &cfg);
        assert_eq!(ds_counts(&status), [2, 2, 2, 2, 2, 0]);
    }

    #[test]
    fn an_unavailable_daemonset_never_gets_ready_pods() {
        let nodes = vec![worker("w1"), worker("w2")];
        let mut cfg = config(0);
        cfg.unavailable.push(WorkloadRef {
            kind: WorkloadKind::DaemonSet,
            namespace: "ns".into(),
            name: "agent".into(),
        });
        let ds = daemonset(json!([]));
        let mut track = DaemonSetTrack::default();
        let (status, wake) = daemonset_status(&ds, &nodes, &mut track, at(0), &cfg);
        assert_eq!(ds_counts(&status), [2, 2, 0, 0, 2, 0]);
        assert_eq!(status["numberUnavailable"], 2);
        assert_eq!(wake, None);
        let (status, _) = daemonset_status(&ds, &nodes, &mut track, at(1), &config(0));
        assert_eq!(ds_counts(&status), [2, 2, 2, 2, 2, 0]);
    }

    #[test]
    fn the_template_hash_is_stable_and_uses_the_safe_alphabet() {
        let a = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"containers": []}});
        let b: Value = serde_json::from_str(
            r#"{"spec": {"containers": []}, "metadata": {"labels": {"b": "2", "a": "1"}}}"#,
        )
        .expect("json");
        assert_eq!(pod_template_hash(&a, None), pod_template_hash(&b, None));
        assert_ne!(pod_template_hash(&a, None), pod_template_hash(&a, Some(1)));
        assert_ne!(
            pod_template_hash(&a, None),
            pod_template_hash(&json!({"spec": {}}), None)
        );
        assert!(
            pod_template_hash(&a, None)
                .chars()
                .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
        );
    }

    #[test]
    fn the_config_reads_as_the_admin_path_sends_it() {
        let cfg: WorkloadConfig =
            serde_json::from_value(json!({"delayMs": 250, "unavailable": [{"kind": "DaemonSet", "namespace": "a", "name": "b"}]})).expect("parses");
        assert_eq!(cfg.delay_ms, 250);
        assert!(cfg.is_unavailable(WorkloadKind::DaemonSet, "a", "b"));
        assert!(!cfg.is_unavailable(WorkloadKind::Deployment, "a", "b"));
        assert_eq!(
            serde_json::from_value::<WorkloadConfig>(json!({})).expect("defaults"),
            WorkloadConfig::default()
        );
    }
}
