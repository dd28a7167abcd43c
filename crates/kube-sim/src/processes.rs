//! The process runner: the kubelet part of the workload simulator for Deployments whose
//! container image maps to a local program. Their pods run as real child processes, so the
//! demo and the end-to-end tests run the real chain (the Cluster Storage Operator's Deployment
//! starts the CSO, which creates the Cinder and Manila operator Deployments, which run too).
//!
//! The model, and why:
//! - Only images listed in [`ProcessConfig::images`] run, one process per replica (at most
//!   [`MAX_REPLICAS`]), from the first container whose image is mapped. Every other Deployment
//!   keeps its virtual pods.
//! - The command line and environment are built as the kubelet builds a container's:
//!   `command` (minus [`LocalProgram::drop_leading`]) and `args` with `$(VAR)` expansion,
//!   `envFrom` then `env` with the downward API and ConfigMap/Secret references read from the
//!   store; a missing non-optional reference keeps the pod from starting
//!   (`CreateContainerConfigError`) until the object appears. The environment is otherwise
//!   clean (PATH, HOME, RUST_LOG, RUST_BACKTRACE pass through), and `KUBECONFIG` points at a
//!   kubeconfig whose user is the pod's service account (its token the user name, or the
//!   token kube-sim issued to it in issued-tokens mode), so the request log says who asked.
//! - A process that exits is restarted with exponential back-off (restartPolicy Always); a
//!   template change, scale-down or deletion stops the pod with SIGTERM, then SIGKILL after the
//!   grace period. Recreate waits for the old pods to be gone before starting new ones;
//!   RollingUpdate starts the new pods at once, while the old ones terminate.
//! - A pod runs only once admission (`pod_admission.rs`: SCCs, Pod Security) admits it, as the
//!   ReplicaSet controller's create would be refused: a refused template starts no process
//!   (a RollingUpdate keeps the old template's pods, a Recreate has stopped them), and is
//!   judged again after every write, so fixing the template, an SCC, a grant or the namespace
//!   starts it.
//! - A process-backed pod is up only while its process runs: [`Readiness`] tells the status
//!   simulation in `workload.rs`, which keeps its pure status functions and its delay.
//!
//! What it must not do: run anything not mapped explicitly; hand kube-sim's own environment to
//! a pod; echo Secret values (errors name objects and keys, never values); outlive the
//! simulator (shutdown stops every pod, dropping the `KubeSim` kills them, `kill_on_drop` is
//! the last resort); use `unsafe` or a signal API (signals go through `/bin/kill`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine;
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::sync::watch;

use crate::Shared;
use crate::api::Cluster;

/// At most this many processes per Deployment, whatever its replica count.
pub const MAX_REPLICAS: usize = 3;
/// The restart back-off: first wait, cap, and how long a run must last to reset it.
pub const BACKOFF_INITIAL: Duration = Duration::from_secs(1);
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
pub const BACKOFF_RESET: Duration = Duration::from_secs(60);
/// The longest a pod is given to stop after SIGTERM (its terminationGracePeriodSeconds,
/// default 30, is capped so tests and the demo do not hang on a stuck process).
pub const MAX_GRACE: Duration = Duration::from_secs(10);
/// How much of a pod's output is kept in memory when there is no log directory.
pub const TAIL_BYTES: usize = 64 * 1024;
/// The pod IP (and host IP) the downward API reports: every process runs on loopback.
pub const POD_IP: &str = "127.0.0.1";
/// The node name the downward API reports when the pod template names none.
pub const NODE_NAME: &str = "kube-sim";
/// Environment variables passed from kube-sim's own environment when set.
const PASSED_THROUGH: [&str; 4] = ["PATH", "HOME", "RUST_LOG", "RUST_BACKTRACE"];

// ----- configuration ---------------------------------------------------------------------------

/// The local program an image reference runs as.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalProgram {
    /// The executable, e.g. `target/debug/csi-operator`.
    pub program: PathBuf,
    /// How many leading entries of the container's `command` to drop: 1 drops the image's
    /// binary name (`csi-operator`) that `program` replaces.
    pub drop_leading: usize,
    /// Appended after the pod's args, e.g. `--metrics-listen=127.0.0.1:0`.
    pub extra_args: Vec<String>,
    /// Extra environment, applied last (it overrides the pod's).
    pub env: BTreeMap<String, String>,
}

impl LocalProgram {
    /// `program` with nothing dropped, added or overridden.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            ..Self::default()
        }
    }
}

/// Which images run as local processes, and where their output and kubeconfigs go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessConfig {
    /// Image reference (exactly as in the pod template) → the program it runs as.
    pub images: BTreeMap<String, LocalProgram>,
    /// Each pod's stdout and stderr go to `<log_dir>/<namespace>_<pod>.log`, appended across
    /// restarts; `None` keeps the last [`TAIL_BYTES`] of each pod's output in memory.
    pub log_dir: Option<PathBuf>,
    /// Where the per-service-account kubeconfigs are written; `None` uses a directory under
    /// the system's temporary directory, removed when the `KubeSim` is dropped.
    pub kubeconfig_dir: Option<PathBuf>,
}

impl ProcessConfig {
    /// Adds an image mapping.
    pub fn with_image(mut self, image: impl Into<String>, program: LocalProgram) -> Self {
        self.images.insert(image.into(), program);
        self
    }
}

// ----- what is observable ----------------------------------------------------------------------

/// One process-backed pod, as [`crate::KubeSim::processes`] and `GET /__sim/processes` report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessInfo {
    pub namespace: String,
    pub deployment: String,
    /// `<deployment>-<pod-template-hash>-<5 characters>`, stable for the pod's life.
    pub pod: String,
    pub template_hash: String,
    pub program: PathBuf,
    /// The pid while a process runs (also the process group id).
    pub pid: Option<u32>,
    /// Start attempts after the first, as the kubelet's restartCount.
    pub restarts: u32,
    #[serde(flatten)]
    pub state: ProcessState,
    /// How the last process ended, e.g. `exit status: 1` or `signal: 9 (SIGKILL)`.
    pub last_exit: Option<String>,
    /// The log file, when [`ProcessConfig::log_dir`] is set.
    pub log: Option<PathBuf>,
}

impl ProcessInfo {
    pub fn running(&self) -> bool {
        self.state == ProcessState::Running
    }
}

/// A process-backed pod's container state, with the kubelet's reasons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum ProcessState {
    /// Not running: `ContainerCreating` (about to start), `CrashLoopBackOff` (waiting to be
    /// restarted), `RunContainerError` (the program cannot be started) or
    /// `CreateContainerConfigError` (a referenced ConfigMap, Secret or key is missing).
    Waiting {
        reason: String,
        message: String,
    },
    Running,
    /// SIGTERM sent; SIGKILL follows after the grace period.
    Terminating,
}

impl ProcessState {
    fn waiting(reason: &str, message: impl Into<String>) -> Self {
        Self::Waiting {
            reason: reason.into(),
            message: message.into(),
        }
    }
}

// ----- shared state ----------------------------------------------------------------------------

/// The process runner's state in [`Shared`].
pub(crate) struct Processes {
    config: Mutex<Option<ProcessConfig>>,
    table: Mutex<Table>,
    ca_pem: Option<String>,
    /// The kubeconfig directory used when the configuration names none.
    scratch: PathBuf,
}

#[derive(Default)]
struct Table {
    next_id: u64,
    /// Bumped on every configuration change: pods of an older generation are replaced.
    generation: u64,
    pods: BTreeMap<u64, Pod>,
}

struct Pod {
    uid: String,
    namespace: String,
    deployment: String,
    name: String,
    hash: String,
    index: usize,
    generation: u64,
    template: Value,
    program: PathBuf,
    stop: watch::Sender<bool>,
    stopping: bool,
    pid: Option<u32>,
    restarts: u32,
    state: ProcessState,
    last_exit: Option<String>,
    log: Option<PathBuf>,
    tail: Arc<Mutex<Vec<u8>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Processes {
    pub(crate) fn new(config: Option<ProcessConfig>, ca_pem: Option<String>) -> Self {
        static INSTANCE: AtomicU64 = AtomicU64::new(0);
        let n = INSTANCE.fetch_add(1, Ordering::Relaxed);
        Self {
            config: Mutex::new(config),
            table: Mutex::new(Table::default()),
            ca_pem,
            scratch: std::env::temp_dir()
                .join(format!("kube-sim-{}-{n}-kubeconfigs", std::process::id())),
        }
    }

    /// Replaces the configuration; pods started under the old one are replaced.
    pub(crate) fn set(&self, config: Option<ProcessConfig>) {
        let mut current = lock(&self.config);
        if *current != config {
            *current = config;
            lock(&self.table).generation += 1;
        }
    }

    pub(crate) fn list(&self) -> Vec<ProcessInfo> {
        lock(&self.table)
            .pods
            .values()
            .map(|p| ProcessInfo {
                namespace: p.namespace.clone(),
                deployment: p.deployment.clone(),
                pod: p.name.clone(),
                template_hash: p.hash.clone(),
                program: p.program.clone(),
                pid: p.pid,
                restarts: p.restarts,
                state: p.state.clone(),
                last_exit: p.last_exit.clone(),
                log: p.log.clone(),
            })
            .collect()
    }

    /// The last [`TAIL_BYTES`] of a pod's output (from its log file when there is one).
    pub(crate) fn output(&self, namespace: &str, pod: &str) -> Option<String> {
        let (log, tail) = {
            let table = lock(&self.table);
            let p = table
                .pods
                .values()
                .rev()
                .find(|p| p.namespace == namespace && p.name == pod)?;
            (p.log.clone(), p.tail.clone())
        };
        let bytes = match log {
            Some(path) => {
                let all = std::fs::read(path).unwrap_or_default();
                let from = all.len().saturating_sub(TAIL_BYTES);
                all.get(from..).unwrap_or_default().to_vec()
            }
            None => lock(&tail).clone(),
        };
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// SIGKILL to every running pod's process group at once, without waiting, and removal of
    /// the scratch kubeconfig directory: the simulator is going away, so there is nothing for
    /// a graceful shutdown to hand over to.
    pub(crate) fn kill_now(&self) {
        let pids: Vec<u32> = lock(&self.table)
            .pods
            .values()
            .filter_map(|p| p.pid)
            .collect();
        for pid in pids {
            let _ = std::process::Command::new("/bin/kill")
                .args(["-s", "KILL", "--", &format!("-{pid}")])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.scratch);
    }

    fn update(&self, id: u64, f: impl FnOnce(&mut Pod)) -> bool {
        let mut table = lock(&self.table);
        let Some(pod) = table.pods.get_mut(&id) else {
            return false;
        };
        let before = (pod.state.clone(), pod.pid, pod.restarts);
        f(pod);
        before != (pod.state.clone(), pod.pid, pod.restarts)
    }
}

// ----- readiness for the status simulation -----------------------------------------------------

/// A snapshot of which process-backed pods run, for the status simulation.
pub(crate) struct Readiness {
    images: BTreeSet<String>,
    /// Deployment uid → template hash → running pods of the current configuration.
    running: HashMap<String, BTreeMap<String, usize>>,
}

impl Readiness {
    /// `None` when no image runs as a process.
    pub(crate) fn of(shared: &Shared) -> Option<Self> {
        let images: BTreeSet<String> = lock(&shared.processes.config)
            .as_ref()?
            .images
            .keys()
            .cloned()
            .collect();
        let table = lock(&shared.processes.table);
        let mut running: HashMap<String, BTreeMap<String, usize>> = HashMap::new();
        for p in table.pods.values() {
            if p.state == ProcessState::Running && !p.stopping && p.generation == table.generation {
                *running
                    .entry(p.uid.clone())
                    .or_default()
                    .entry(p.hash.clone())
                    .or_default() += 1;
            }
        }
        Some(Self { images, running })
    }

    /// For a Deployment whose pods run as processes, the pod-template-hashes whose processes
    /// all run; `None` for a Deployment with virtual pods.
    pub(crate) fn running_hashes(&self, dep: &Value) -> Option<BTreeSet<String>> {
        let template = dep.pointer("/spec/template")?;
        containers(template)
            .iter()
            .any(|c| self.images.contains(text(c, "/image")))
            .then_some(())?;
        let want = replicas(dep).max(1);
        let uid = text(dep, "/metadata/uid");
        Some(
            self.running
                .get(uid)
                .map(|by_hash| {
                    by_hash
                        .iter()
                        .filter(|(_, n)| **n >= want)
                        .map(|(h, _)| h.clone())
                        .collect()
                })
                .unwrap_or_default(),
        )
    }
}

// ----- what the Deployments ask for (pure) -----------------------------------------------------

/// What one process-backed Deployment asks of the runner.
#[derive(Debug, Clone)]
struct Want {
    uid: String,
    namespace: String,
    deployment: String,
    hash: String,
    replicas: usize,
    recreate: bool,
    paused: bool,
    template: Value,
    container: usize,
    program: LocalProgram,
    /// Whether admission admits the pods of `template` (see `pod_admission.rs`).
    admitted: bool,
}

fn containers(template: &Value) -> Vec<Value> {
    template
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The replicas that run as processes.
fn replicas(dep: &Value) -> usize {
    let n = dep
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .max(0);
    usize::try_from(n).unwrap_or(MAX_REPLICAS).min(MAX_REPLICAS)
}

/// The Deployment's wish, when a container's image is mapped and it is not being deleted.
fn want(dep: &Value, images: &BTreeMap<String, LocalProgram>) -> Option<Want> {
    if dep.pointer("/metadata/deletionTimestamp").is_some() {
        return None;
    }
    let template = dep.pointer("/spec/template")?.clone();
    let (container, program) = containers(&template)
        .iter()
        .enumerate()
        .find_map(|(i, c)| images.get(text(c, "/image")).map(|p| (i, p.clone())))?;
    let collision = dep
        .pointer("/status/collisionCount")
        .and_then(Value::as_i64);
    Some(Want {
        uid: text(dep, "/metadata/uid").to_string(),
        namespace: text(dep, "/metadata/namespace").to_string(),
        deployment: text(dep, "/metadata/name").to_string(),
        hash: crate::workload::pod_template_hash(&template, collision),
        replicas: replicas(dep),
        recreate: text(dep, "/spec/strategy/type") == "Recreate",
        paused: dep.pointer("/spec/paused").and_then(Value::as_bool) == Some(true),
        template,
        container,
        program,
        admitted: true,
    })
}

/// A pod the runner has, as [`decide`] sees it.
#[derive(Debug, Clone)]
struct PodView {
    id: u64,
    uid: String,
    hash: String,
    index: usize,
    generation: u64,
    stopping: bool,
    template: Value,
}

/// A pod to start: the Deployment (index into the wants), its template and replica index.
#[derive(Debug, Clone, PartialEq)]
struct Launch {
    want: usize,
    hash: String,
    template: Value,
    index: usize,
}

#[derive(Debug, Default, PartialEq)]
struct Decision {
    stop: Vec<u64>,
    start: Vec<Launch>,
}

/// The deployment controller and kubelet in one step: which pods to stop and which to start.
/// A paused Deployment keeps the template its pods run; Recreate starts nothing while any
/// other pod of the Deployment remains; RollingUpdate starts the new pods at once.
fn decide(wants: &[Want], pods: &[PodView], generation: u64) -> Decision {
    let mut decision = Decision::default();
    // The template each Deployment's pods should run.
    let targets: Vec<(String, Value)> = wants
        .iter()
        .map(|w| {
            let running = pods
                .iter()
                .find(|p| p.uid == w.uid && !p.stopping && p.generation == generation);
            match running {
                Some(p) if w.paused => (p.hash.clone(), p.template.clone()),
                _ => (w.hash.clone(), w.template.clone()),
            }
        })
        .collect();
    let mut kept: BTreeSet<(String, String, usize)> = BTreeSet::new();
    let mut kept_ids: BTreeSet<u64> = BTreeSet::new();
    for p in pods.iter().filter(|p| !p.stopping) {
        let desired = p.generation == generation
            && wants.iter().zip(&targets).any(|(w, (hash, _))| {
                // A refused new template leaves a rolling update's old pods running.
                let current = *hash == p.hash || (!w.admitted && !w.recreate);
                w.uid == p.uid && current && p.index < w.replicas
            });
        if desired && kept.insert((p.uid.clone(), p.hash.clone(), p.index)) {
            kept_ids.insert(p.id);
        } else {
            decision.stop.push(p.id);
        }
    }
    for (i, (w, (hash, template))) in wants.iter().zip(&targets).enumerate() {
        let others_remain = pods
            .iter()
            .any(|p| p.uid == w.uid && !kept_ids.contains(&p.id));
        if (w.recreate && others_remain) || (!w.admitted && *hash == w.hash) {
            continue;
        }
        for index in 0..w.replicas {
            if !kept.contains(&(w.uid.clone(), hash.clone(), index)) {
                decision.start.push(Launch {
                    want: i,
                    hash: hash.clone(),
                    template: template.clone(),
                    index,
                });
            }
        }
    }
    decision
}

/// `<deployment>-<hash>-<5 characters>`, the characters derived from the Deployment's uid, the
/// hash and the replica index so the name is stable for the pod's life.
fn pod_name(deployment: &str, hash: &str, uid: &str, index: usize) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in uid.bytes().chain(hash.bytes()).chain(index.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let suffix: String = (0..5)
        .map(|i| {
            let n = usize::try_from((h >> (i * 12)) % ALPHANUMS.len() as u64).unwrap_or(0);
            char::from(ALPHANUMS.get(n).copied().unwrap_or(b'b'))
        })
        .collect();
    format!("{deployment}-{hash}-{suffix}")
}

/// A random RFC 4122 version 4 UUID, for the downward API's `metadata.uid`.
fn random_uid() -> String {
    let word = || {
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
    };
    let (a, b) = (word(), word());
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0x0fff,
        0x8000 | (b >> 48) & 0x3fff,
        b & 0xffff_ffff_ffff
    )
}

/// The restart back-off after a process that ran for `ran`: doubling from
/// [`BACKOFF_INITIAL`] to [`BACKOFF_MAX`], back to the start after a run of
/// [`BACKOFF_RESET`].
pub fn next_backoff(previous: Option<Duration>, ran: Duration) -> Duration {
    match previous {
        Some(p) if ran < BACKOFF_RESET => (p * 2).min(BACKOFF_MAX),
        _ => BACKOFF_INITIAL,
    }
}

/// terminationGracePeriodSeconds (default 30), capped at [`MAX_GRACE`].
fn grace_period(template: &Value) -> Duration {
    let secs = template
        .pointer("/spec/terminationGracePeriodSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(30)
        .max(0);
    Duration::from_secs(u64::try_from(secs).unwrap_or(0)).min(MAX_GRACE)
}

// ----- the container's command line and environment (pure) ------------------------------------

/// Why a container cannot be configured, with the kubelet's messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("configmap \"{name}\" not found")]
    ConfigMapNotFound { name: String },
    #[error("secret \"{name}\" not found")]
    SecretNotFound { name: String },
    #[error("couldn't find key {key} in ConfigMap {namespace}/{name}")]
    ConfigMapKeyNotFound {
        namespace: String,
        name: String,
        key: String,
    },
    #[error("couldn't find key {key} in Secret {namespace}/{name}")]
    SecretKeyNotFound {
        namespace: String,
        name: String,
        key: String,
    },
    #[error(
        "env var {var:?}: unsupported fieldPath {path:?} (kube-sim supports metadata.name, metadata.namespace, metadata.uid, metadata.labels['…'], metadata.annotations['…'], spec.nodeName, spec.serviceAccountName, status.podIP(s), status.hostIP(s))"
    )]
    UnsupportedField { var: String, path: String },
}

/// Where a `valueFrom` or `envFrom` reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    ConfigMap,
    Secret,
}

/// A ConfigMap's or Secret's data by name (Secret values decoded), `None` when it is missing.
pub type Lookup<'a> = dyn Fn(Source, &str) -> Option<BTreeMap<String, String>> + 'a;

/// The pod facts the downward API exposes.
#[derive(Debug, Clone)]
pub struct PodFacts {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub hash: String,
    pub service_account: String,
    pub node_name: String,
}

/// The service account a pod template runs as.
fn service_account(template: &Value) -> String {
    ["/spec/serviceAccountName", "/spec/serviceAccount"]
        .iter()
        .map(|p| text(template, p))
        .find(|s| !s.is_empty())
        .unwrap_or("default")
        .to_string()
}

/// Kubernetes' `$(VAR)` expansion: a defined variable is replaced, an undefined one is kept
/// as written, `$$` is an escaped `$`, and an unclosed `$(` is kept literally.
pub fn expand(input: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('(') {
            match tail.find(')') {
                Some(end) => {
                    let name = &tail[..end];
                    match vars.get(name) {
                        Some(v) => out.push_str(v),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &tail[end + 1..];
                }
                None => {
                    out.push_str("$(");
                    rest = tail;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The downward API value of `path` for the pod.
fn field_value(path: &str, pod: &PodFacts, template: &Value) -> Option<String> {
    let keyed = |prefix: &str| {
        path.strip_prefix(prefix)
            .and_then(|r| r.strip_prefix("['"))
            .and_then(|r| r.strip_suffix("']"))
    };
    Some(match path {
        "metadata.name" => pod.name.clone(),
        "metadata.namespace" => pod.namespace.clone(),
        "metadata.uid" => pod.uid.clone(),
        "spec.nodeName" => pod.node_name.clone(),
        "spec.serviceAccountName" => pod.service_account.clone(),
        "status.podIP" | "status.podIPs" | "status.hostIP" | "status.hostIPs" => POD_IP.into(),
        _ => {
            if let Some(key) = keyed("metadata.labels") {
                if key == "pod-template-hash" {
                    return Some(pod.hash.clone());
                }
                return Some(
                    text(
                        template,
                        &format!("/metadata/labels/{}", pointer_escape(key)),
                    )
                    .to_string(),
                );
            }
            let key = keyed("metadata.annotations")?;
            text(
                template,
                &format!("/metadata/annotations/{}", pointer_escape(key)),
            )
            .to_string()
        }
    })
}

fn pointer_escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The container's environment as the kubelet builds it: `envFrom` sources in order, then
/// `env` entries in order (values expanded against what is defined so far), later names
/// overriding earlier ones. `lookup` returns a ConfigMap's or Secret's (decoded) data.
pub fn resolve_env(
    container: &Value,
    template: &Value,
    pod: &PodFacts,
    lookup: &Lookup<'_>,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut env = BTreeMap::new();
    let not_found = |source: Source, name: &str| match source {
        Source::ConfigMap => ConfigError::ConfigMapNotFound { name: name.into() },
        Source::Secret => ConfigError::SecretNotFound { name: name.into() },
    };
    for from in container
        .get("envFrom")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let prefix = text(from, "/prefix");
        let (source, reference) = match (from.get("configMapRef"), from.get("secretRef")) {
            (Some(r), _) => (Source::ConfigMap, r),
            (None, Some(r)) => (Source::Secret, r),
            (None, None) => continue,
        };
        let name = text(reference, "/name");
        match lookup(source, name) {
            Some(data) => {
                for (k, v) in data {
                    let key = format!("{prefix}{k}");
                    // The kubelet skips keys that cannot be environment variable names.
                    if !key.is_empty() && !key.contains('=') {
                        env.insert(key, v);
                    }
                }
            }
            None if optional(reference) => {}
            None => return Err(not_found(source, name)),
        }
    }
    for var in container
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = text(var, "/name").to_string();
        if name.is_empty() {
            continue;
        }
        let Some(from) = var.get("valueFrom") else {
            let value = expand(text(var, "/value"), &env);
            env.insert(name, value);
            continue;
        };
        if let Some(field) = from.get("fieldRef") {
            let path = text(field, "/fieldPath");
            let value =
                field_value(path, pod, template).ok_or_else(|| ConfigError::UnsupportedField {
                    var: name.clone(),
                    path: path.into(),
                })?;
            env.insert(name, value);
            continue;
        }
        let (source, reference) = match (from.get("configMapKeyRef"), from.get("secretKeyRef")) {
            (Some(r), _) => (Source::ConfigMap, r),
            (None, Some(r)) => (Source::Secret, r),
            // resourceFieldRef: container resources are not modelled; the variable is unset.
            (None, None) => continue,
        };
        let object = text(reference, "/name");
        let key = text(reference, "/key");
        let value = match lookup(source, object) {
            None if optional(reference) => continue,
            None => return Err(not_found(source, object)),
            Some(data) => match data.get(key) {
                Some(v) => v.clone(),
                None if optional(reference) => continue,
                None => {
                    let (namespace, name, key) =
                        (pod.namespace.clone(), object.to_string(), key.to_string());
                    return Err(match source {
                        Source::ConfigMap => ConfigError::ConfigMapKeyNotFound {
                            namespace,
                            name,
                            key,
                        },
                        Source::Secret => ConfigError::SecretKeyNotFound {
                            namespace,
                            name,
                            key,
                        },
                    });
                }
            },
        };
        env.insert(name, value);
    }
    Ok(env)
}

fn optional(reference: &Value) -> bool {
    reference.get("optional").and_then(Value::as_bool) == Some(true)
}

/// The arguments after the program: the container's `command` minus `drop_leading` entries,
/// then its `args`, both with `$(VAR)` expansion from the container's environment, then the
/// program's `extra_args` as they are.
pub fn command_line(
    container: &Value,
    program: &LocalProgram,
    env: &BTreeMap<String, String>,
) -> Vec<String> {
    let list = |field: &str| -> Vec<String> {
        container
            .get(field)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    list("command")
        .into_iter()
        .skip(program.drop_leading)
        .chain(list("args"))
        .map(|a| expand(&a, env))
        .chain(program.extra_args.iter().cloned())
        .collect()
}

/// ConfigMap or Secret data from the store, Secret values base64-decoded.
fn lookup_in(
    c: &Cluster,
    namespace: &str,
    source: Source,
    name: &str,
) -> Option<BTreeMap<String, String>> {
    let plural = match source {
        Source::ConfigMap => "configmaps",
        Source::Secret => "secrets",
    };
    let rt = c.resource("", "v1", plural)?;
    let obj = c.store.get(&rt.group_resource(), namespace, name)?;
    let data = obj.get("data").and_then(Value::as_object);
    Some(
        data.into_iter()
            .flatten()
            .filter_map(|(k, v)| {
                let s = v.as_str()?;
                let value = match source {
                    Source::ConfigMap => s.to_string(),
                    Source::Secret => String::from_utf8_lossy(
                        &base64::engine::general_purpose::STANDARD.decode(s).ok()?,
                    )
                    .into_owned(),
                };
                Some((k.clone(), value))
            })
            .collect(),
    )
}

// ----- the loop --------------------------------------------------------------------------------

/// Runs until shutdown: reconciles the pods after every write (a Deployment changed, a
/// ConfigMap appeared, a pod's process started or ended).
pub(crate) async fn run(shared: Arc<Shared>) {
    let mut changed = shared.changed.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        if *shutdown.borrow() {
            return;
        }
        reconcile(&shared);
        tokio::select! {
            r = changed.changed() => if r.is_err() { return },
            r = shutdown.changed() => if r.is_err() { return },
        }
    }
}

fn reconcile(shared: &Arc<Shared>) {
    let config = lock(&shared.processes.config).clone();
    let wants: Vec<Want> = match &config {
        None => Vec::new(),
        Some(config) => {
            let admission = shared.admission();
            let c = shared.lock();
            match c.resource("apps", "v1", "deployments") {
                Some(rt) => c
                    .store
                    .iter(&rt.group_resource(), None, None)
                    .filter_map(|(_, d)| want(d, &config.images))
                    .map(|mut w| {
                        let generate_name = format!("{}-{}-", w.deployment, w.hash);
                        w.admitted = matches!(
                            crate::pod_admission::admit_template(
                                &c,
                                &admission,
                                &w.template,
                                &w.namespace,
                                &generate_name,
                                "replicaset-controller",
                            ),
                            crate::pod_admission::Verdict::Admitted(_)
                        );
                        w
                    })
                    .collect(),
                None => Vec::new(),
            }
        }
    };
    let mut table = lock(&shared.processes.table);
    let views: Vec<PodView> = table
        .pods
        .iter()
        .map(|(id, p)| PodView {
            id: *id,
            uid: p.uid.clone(),
            hash: p.hash.clone(),
            index: p.index,
            generation: p.generation,
            stopping: p.stopping,
            template: p.template.clone(),
        })
        .collect();
    let decision = decide(&wants, &views, table.generation);
    for id in decision.stop {
        if let Some(p) = table.pods.get_mut(&id) {
            p.stopping = true;
            p.stop.send_replace(true);
        }
    }
    let Some(config) = config else { return };
    let kubeconfig_dir = config
        .kubeconfig_dir
        .clone()
        .unwrap_or_else(|| shared.processes.scratch.clone());
    for launch in decision.start {
        let Some(w) = wants.get(launch.want) else {
            continue;
        };
        let id = table.next_id;
        table.next_id += 1;
        let name = pod_name(&w.deployment, &launch.hash, &w.uid, launch.index);
        let log = config
            .log_dir
            .as_ref()
            .map(|d| d.join(format!("{}_{name}.log", w.namespace)));
        let tail = Arc::new(Mutex::new(Vec::new()));
        let (stop, stop_rx) = watch::channel(false);
        let plan = Plan {
            id,
            pod: PodFacts {
                name: name.clone(),
                namespace: w.namespace.clone(),
                uid: random_uid(),
                hash: launch.hash.clone(),
                service_account: service_account(&launch.template),
                node_name: match text(&launch.template, "/spec/nodeName") {
                    "" => NODE_NAME.to_string(),
                    n => n.to_string(),
                },
            },
            container: containers(&launch.template)
                .get(w.container)
                .cloned()
                .unwrap_or(Value::Null),
            grace: grace_period(&launch.template),
            template: launch.template.clone(),
            program: w.program.clone(),
            log: log.clone(),
            tail: tail.clone(),
            kubeconfig_dir: kubeconfig_dir.clone(),
        };
        let generation = table.generation;
        table.pods.insert(
            id,
            Pod {
                uid: w.uid.clone(),
                namespace: w.namespace.clone(),
                deployment: w.deployment.clone(),
                name,
                hash: launch.hash,
                index: launch.index,
                generation,
                template: launch.template,
                program: w.program.program.clone(),
                stop,
                stopping: false,
                pid: None,
                restarts: 0,
                state: ProcessState::waiting("ContainerCreating", ""),
                last_exit: None,
                log,
                tail,
            },
        );
        tokio::spawn(supervise(shared.clone(), plan, stop_rx));
    }
}

// ----- one pod ---------------------------------------------------------------------------------

/// Everything a pod's supervisor needs, fixed when the pod is created.
struct Plan {
    id: u64,
    pod: PodFacts,
    template: Value,
    container: Value,
    program: LocalProgram,
    grace: Duration,
    log: Option<PathBuf>,
    tail: Arc<Mutex<Vec<u8>>>,
    kubeconfig_dir: PathBuf,
}

/// A resolved start: arguments, environment and the kubeconfig to write.
struct Start {
    args: Vec<String>,
    env: BTreeMap<String, String>,
    kubeconfig_path: PathBuf,
    kubeconfig: String,
}

impl Plan {
    /// Reads what the container references from the store and builds its start.
    fn prepare(&self, shared: &Shared) -> Result<Start, ConfigError> {
        let container_env = {
            let c = shared.lock();
            let lookup =
                |source: Source, name: &str| lookup_in(&c, &self.pod.namespace, source, name);
            resolve_env(&self.container, &self.template, &self.pod, &lookup)?
        };
        let args = command_line(&self.container, &self.program, &container_env);
        let user = format!(
            "system:serviceaccount:{}:{}",
            self.pod.namespace, self.pod.service_account
        );
        let kubeconfig_path = self.kubeconfig_dir.join(format!(
            "{}.{}.kubeconfig",
            self.pod.namespace, self.pod.service_account
        ));
        let mut env: BTreeMap<String, String> = PASSED_THROUGH
            .iter()
            .filter_map(|k| Some((k.to_string(), std::env::var(k).ok()?)))
            .collect();
        env.extend(container_env);
        env.insert(
            "KUBECONFIG".into(),
            kubeconfig_path.to_string_lossy().into_owned(),
        );
        env.extend(self.program.env.clone());
        Ok(Start {
            args,
            env,
            // With issued tokens, the service account's own token (issued once, shared by its
            // pods), as a kubelet mounts a service-account token.
            kubeconfig: crate::kubeconfig::render_with_token(
                &shared.address(),
                &user,
                &shared.tokens.token_for(&user),
                shared.processes.ca_pem.as_deref(),
            ),
            kubeconfig_path,
        })
    }

    /// Appends a line of kube-sim's own to the pod's output.
    fn note(&self, line: &str) {
        let line = format!("--- kube-sim: {line}\n");
        match &self.log {
            Some(path) => {
                let _ = append(path, line.as_bytes());
            }
            None => push_tail(&self.tail, line.as_bytes()),
        }
    }

    /// Writes the kubeconfig and starts the process.
    fn spawn(&self, start: &Start) -> Result<Child, String> {
        write_atomically(&start.kubeconfig_path, &start.kubeconfig, &self.pod.name).map_err(
            |e| {
                format!(
                    "cannot write the kubeconfig {}: {e}",
                    start.kubeconfig_path.display()
                )
            },
        )?;
        let mut cmd = Command::new(&self.program.program);
        cmd.args(&start.args)
            .env_clear()
            .envs(&start.env)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            // Its own process group, so stopping it also stops what it started.
            .process_group(0);
        match &self.log {
            Some(path) => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        format!("cannot create the log directory {}: {e}", dir.display())
                    })?;
                }
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| format!("cannot open the log file {}: {e}", path.display()))?;
                let err = file
                    .try_clone()
                    .map_err(|e| format!("cannot open the log file {}: {e}", path.display()))?;
                cmd.stdout(file).stderr(err);
            }
            None => {
                cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
            }
        }
        let mut child = cmd.spawn().map_err(|e| {
            format!(
                "cannot start {}: {e} (check the program path in the process configuration for this image)",
                self.program.program.display()
            )
        })?;
        if let Some(out) = child.stdout.take() {
            tokio::spawn(collect(out, self.tail.clone()));
        }
        if let Some(err) = child.stderr.take() {
            tokio::spawn(collect(err, self.tail.clone()));
        }
        Ok(child)
    }
}

/// Supervises one pod until it is stopped: starts its process, restarts it with back-off,
/// and terminates it when asked or at shutdown.
async fn supervise(shared: Arc<Shared>, plan: Plan, mut stop: watch::Receiver<bool>) {
    let mut shutdown = shared.shutdown.subscribe();
    let mut changed = shared.changed.subscribe();
    let mut backoff: Option<Duration> = None;
    let mut attempts: u32 = 0;
    let mut last_config_error = String::new();
    let set = |f: &dyn Fn(&mut Pod)| {
        if shared.processes.update(plan.id, f) {
            shared.changed.send_modify(|n| *n += 1);
        }
    };
    loop {
        if *stop.borrow() || *shutdown.borrow() {
            break;
        }
        let start = match plan.prepare(&shared) {
            Ok(s) => s,
            Err(e) => {
                // CreateContainerConfigError: retried whenever the cluster changes.
                let message = e.to_string();
                if message != last_config_error {
                    plan.note(&format!("CreateContainerConfigError: {message}"));
                    last_config_error.clone_from(&message);
                }
                set(&|p| {
                    p.state = ProcessState::waiting("CreateContainerConfigError", message.clone())
                });
                tokio::select! {
                    r = changed.changed() => if r.is_err() { break },
                    () = stopped(&mut stop, &mut shutdown) => break,
                }
                continue;
            }
        };
        last_config_error.clear();
        if attempts > 0 {
            set(&|p| p.restarts += 1);
        }
        attempts = attempts.saturating_add(1);
        let began = Instant::now();
        let exit = match plan.spawn(&start) {
            Err(message) => {
                plan.note(&message);
                set(&|p| {
                    p.pid = None;
                    p.state = ProcessState::waiting("RunContainerError", message.clone());
                });
                None
            }
            Ok(mut child) => {
                let pid = child.id();
                plan.note(&format!(
                    "started process {} (attempt {attempts})",
                    pid.map(|p| p.to_string()).unwrap_or_default()
                ));
                set(&|p| {
                    p.pid = pid;
                    p.state = ProcessState::Running;
                });
                tokio::select! {
                    status = child.wait() => Some(describe(status)),
                    () = stopped(&mut stop, &mut shutdown) => {
                        set(&|p| p.state = ProcessState::Terminating);
                        let status = terminate(&mut child, plan.grace).await;
                        let how = describe(status);
                        plan.note(&format!("stopped: {how}"));
                        set(&|p| {
                            p.pid = None;
                            p.last_exit = Some(how.clone());
                        });
                        break;
                    }
                }
            }
        };
        let wait = next_backoff(backoff, began.elapsed());
        backoff = Some(wait);
        if let Some(how) = exit {
            plan.note(&format!("exited: {how}; restarting in {}s", wait.as_secs()));
            set(&|p| {
                p.pid = None;
                p.last_exit = Some(how.clone());
                p.state = ProcessState::waiting(
                    "CrashLoopBackOff",
                    format!(
                        "back-off {}s restarting failed container of pod {}_{}",
                        wait.as_secs(),
                        plan.pod.namespace,
                        plan.pod.name
                    ),
                );
            });
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = stopped(&mut stop, &mut shutdown) => break,
        }
    }
    lock(&shared.processes.table).pods.remove(&plan.id);
    shared.changed.send_modify(|n| *n += 1);
}

/// Resolves when the pod is to stop (or the simulator shuts down, or the runner is gone).
async fn stopped(stop: &mut watch::Receiver<bool>, shutdown: &mut watch::Receiver<bool>) {
    loop {
        if *stop.borrow() || *shutdown.borrow() {
            return;
        }
        tokio::select! {
            r = stop.changed() => if r.is_err() { return },
            r = shutdown.changed() => if r.is_err() { return },
        }
    }
}

fn describe(status: std::io::Result<ExitStatus>) -> String {
    match status {
        Ok(s) => s.to_string(),
        Err(e) => format!("unknown ({e})"),
    }
}

/// SIGTERM to the process group, SIGKILL after `grace`; returns how the process ended.
async fn terminate(child: &mut Child, grace: Duration) -> std::io::Result<ExitStatus> {
    // `id()` is `None` once the process has been reaped: then its pid may belong to someone
    // else and must not be signalled.
    if let Some(pid) = child.id() {
        if !signal_group(pid, "TERM").await {
            let _ = child.start_kill();
        }
        if let Ok(status) = tokio::time::timeout(grace, child.wait()).await {
            return status;
        }
        if let Some(pid) = child.id() {
            signal_group(pid, "KILL").await;
        }
    }
    let _ = child.start_kill();
    child.wait().await
}

/// Signals a process group through `/bin/kill`; whether the signal was sent.
async fn signal_group(pgid: u32, signal: &str) -> bool {
    Command::new("/bin/kill")
        .args(["-s", signal, "--", &format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .is_ok_and(|s| s.success())
}

/// Copies a pipe into the in-memory tail until the process closes it.
async fn collect(mut pipe: impl AsyncRead + Unpin, tail: Arc<Mutex<Vec<u8>>>) {
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => push_tail(&tail, buf.get(..n).unwrap_or_default()),
        }
    }
}

fn push_tail(tail: &Mutex<Vec<u8>>, bytes: &[u8]) {
    let mut t = lock(tail);
    t.extend_from_slice(bytes);
    let excess = t.len().saturating_sub(TAIL_BYTES);
    t.drain(..excess);
}

fn append(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(bytes)
}

/// Writes through a temporary file and a rename, so a process starting meanwhile never reads
/// half a kubeconfig.
fn write_atomically(path: &Path, content: &str, unique: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension(format!("{unique}.tmp"));
    // Readable by the owner only: with issued tokens a kubeconfig is a credential.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    std::io::Write::write_all(&mut file, content.as_bytes())?;
    drop(file);
    std::fs::rename(&tmp, path)
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(image: &str, replicas: i64) -> Value {
        json!({
            "metadata": {"name": "op", "namespace": "ns", "uid": "u1", "generation": 1},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "op"}},
                "template": {
                    "metadata": {"labels": {"app": "op"}, "annotations": {"a/b": "c"}},
                    "spec": {
                        "serviceAccountName": "op-sa",
                        "containers": [
                            {"name": "sidecar", "image": "other:1"},
                            {"name": "op", "image": image, "command": ["csi-operator", "start"], "args": ["--v=$(LEVEL)"]},
                        ],
                    },
                },
            },
        })
    }

    fn images() -> BTreeMap<String, LocalProgram> {
        BTreeMap::from([(
            "op:1".to_string(),
            LocalProgram {
                program: "/bin/op".into(),
                drop_leading: 1,
                extra_args: vec!["--x=$(LEVEL)".into()],
                env: BTreeMap::new(),
            },
        )])
    }

    fn facts() -> PodFacts {
        PodFacts {
            name: "op-abc-bcdfg".into(),
            namespace: "ns".into(),
            uid: "pod-uid".into(),
            hash: "abc".into(),
            service_account: "op-sa".into(),
            node_name: NODE_NAME.into(),
        }
    }

    #[test]
    fn expansion_follows_kubernetes() {
        let vars = BTreeMap::from([
            ("A".to_string(), "1".to_string()),
            ("B".into(), "x$(A)".into()),
        ]);
        let cases = [
            ("$(A)", "1"),
            ("pre-$(A)-post", "pre-1-post"),
            ("$(B)", "x$(A)"),
            ("$(MISSING)", "$(MISSING)"),
            ("$$(A)", "$(A)"),
            ("$$", "$"),
            ("$A", "$A"),
            ("a$", "a$"),
            ("$(A", "$(A"),
            ("$(A)$(A)", "11"),
            ("ünï$(A)cödé", "ünï1cödé"),
        ];
        for (input, want) in cases {
            assert_eq!(expand(input, &vars), want, "{input}");
        }
    }

    #[test]
    fn only_mapped_images_are_wanted() {
        let w = want(&deployment("op:1", 1), &images()).expect("mapped");
        assert_eq!(
            (w.container, w.replicas, w.recreate, w.paused),
            (1, 1, false, false)
        );
        assert!(
            want(&deployment("op:2", 1), &images()).is_none(),
            "a tag must match exactly"
        );
        let mut deleting = deployment("op:1", 1);
        deleting["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        assert!(
            want(&deleting, &images()).is_none(),
            "a Deployment being deleted has no pods"
        );
        assert_eq!(
            want(&deployment("op:1", 7), &images()).map(|w| w.replicas),
            Some(MAX_REPLICAS)
        );
        assert_eq!(
            want(&deployment("op:1", -1), &images()).map(|w| w.replicas),
            Some(0)
        );
        let mut defaulted = deployment("op:1", 1);
        defaulted["spec"]
            .as_object_mut()
            .map(|s| s.remove("replicas"));
        assert_eq!(want(&defaulted, &images()).map(|w| w.replicas), Some(1));
    }

    #[test]
    fn the_command_line_drops_expands_and_appends() {
        let dep = deployment("op:1", 1);
        let container = &dep["spec"]["template"]["spec"]["containers"][1];
        let env = BTreeMap::from([("LEVEL".to_string(), "4".to_string())]);
        let program = images().remove("op:1").expect("mapped");
        assert_eq!(
            command_line(container, &program, &env),
            ["start", "--v=4", "--x=$(LEVEL)"],
            "extra args are not expanded"
        );
        let too_many = LocalProgram {
            drop_leading: 5,
            ..program
        };
        assert_eq!(
            command_line(container, &too_many, &env),
            ["--v=4", "--x=$(LEVEL)"]
        );
    }

    #[test]
    fn env_resolves_like_the_kubelet() {
        let container = json!({"envFrom": [
            {"configMapRef": {"name": "cm"}, "prefix": "CM_"},
            {"secretRef": {"name": "gone", "optional": true}},
        ], "env": [
            {"name": "CM_a", "value": "overridden"},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
            {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "HASH", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['pod-template-hash']"}}},
            {"name": "ANN", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['a/b']"}}},
            {"name": "FROM_CM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "a"}}},
            {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "password"}}},
            {"name": "OPT", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "x", "optional": true}}},
            {"name": "OPT_KEY", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "nope", "optional": true}}},
            {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}},
            {"name": "COMBINED", "value": "$(POD)/$(FROM_CM)/$(UNKNOWN)"},
        ]});
        let dep = deployment("op:1", 1);
        let template = &dep["spec"]["template"];
        let lookup = |source: Source, name: &str| match (source, name) {
            (Source::ConfigMap, "cm") => Some(BTreeMap::from([
                ("a".to_string(), "from-cm".to_string()),
                ("b=c".into(), "bad key".into()),
            ])),
            (Source::Secret, "s") => Some(BTreeMap::from([(
                "password".to_string(),
                "hunter2".to_string(),
            )])),
            _ => None,
        };
        let env = resolve_env(&container, template, &facts(), &lookup).expect("resolves");
        let get = |k: &str| env.get(k).map(String::as_str);
        assert_eq!(get("CM_a"), Some("overridden"), "env overrides envFrom");
        assert_eq!(get("CM_b=c"), None, "invalid names are skipped");
        assert_eq!(get("POD"), Some("op-abc-bcdfg"));
        assert_eq!(get("NS"), Some("ns"));
        assert_eq!(get("SA"), Some("op-sa"));
        assert_eq!(get("NODE"), Some(NODE_NAME));
        assert_eq!(get("IP"), Some(POD_IP));
        assert_eq!(get("APP"), Some("op"));
        assert_eq!(get("HASH"), Some("abc"));
        assert_eq!(get("ANN"), Some("c"));
        assert_eq!(get("FROM_CM"), Some("from-cm"));
        assert_eq!(get("FROM_SECRET"), Some("hunter2"));
        assert_eq!(get("OPT"), None);
        assert_eq!(get("OPT_KEY"), None);
        assert_eq!(get("MEM"), None);
        assert_eq!(get("COMBINED"), Some("op-abc-bcdfg/from-cm/$(UNKNOWN)"));
    }

    #[test]
    fn missing_references_are_container_config_errors() {
        let dep = deployment("op:1", 1);
        let template = &dep["spec"]["template"];
        let lookup = |source: Source, name: &str| match (source, name) {
            (Source::ConfigMap, "cm") | (Source::Secret, "s") => Some(BTreeMap::from([(
                "a".to_string(),
                "secret-value".to_string(),
            )])),
            _ => None,
        };
        let cases = [
            (
                json!({"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "a"}}}]}),
                "configmap \"nope\" not found",
            ),
            (
                json!({"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "a"}}}]}),
                "secret \"nope\" not found",
            ),
            (
                json!({"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "b"}}}]}),
                "couldn't find key b in ConfigMap ns/cm",
            ),
            (
                json!({"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "b"}}}]}),
                "couldn't find key b in Secret ns/s",
            ),
            (
                json!({"envFrom": [{"secretRef": {"name": "nope"}}]}),
                "secret \"nope\" not found",
            ),
            (
                json!({"envFrom": [{"configMapRef": {"name": "nope"}}]}),
                "configmap \"nope\" not found",
            ),
            (
                json!({"env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}]}),
                "unsupported fieldPath \"spec.bogus\"",
            ),
        ];
        for (container, want) in cases {
            let err = resolve_env(&container, template, &facts(), &lookup).expect_err("fails");
            let message = err.to_string();
            assert!(message.contains(want), "{message} should contain {want}");
            assert!(
                !message.contains("secret-value"),
                "never a value: {message}"
            );
        }
    }

    #[test]
    fn backoff_doubles_caps_and_resets() {
        let short = Duration::from_secs(1);
        assert_eq!(next_backoff(None, short), BACKOFF_INITIAL);
        let mut b = None;
        let mut seen = Vec::new();
        for _ in 0..7 {
            let next = next_backoff(b, short);
            seen.push(next.as_secs());
            b = Some(next);
        }
        assert_eq!(seen, [1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(
            next_backoff(b, BACKOFF_RESET),
            BACKOFF_INITIAL,
            "a long run resets it"
        );
    }

    #[test]
    fn the_grace_period_is_capped() {
        assert_eq!(grace_period(&json!({})), MAX_GRACE);
        assert_eq!(
            grace_period(&json!({"spec": {"terminationGracePeriodSeconds": 2}})),
            Duration::from_secs(2)
        );
        assert_eq!(
            grace_period(&json!({"spec": {"terminationGracePeriodSeconds": -1}})),
            Duration::ZERO
        );
    }

    #[test]
    fn pod_names_are_stable_and_distinct() {
        let a = pod_name("op", "abc", "u1", 0);
        assert_eq!(a, pod_name("op", "abc", "u1", 0));
        assert!(
            a.starts_with("op-abc-") && a.len() == "op-abc-".len() + 5,
            "{a}"
        );
        assert_ne!(a, pod_name("op", "abc", "u1", 1));
        assert_ne!(a, pod_name("op", "abc", "u2", 0));
        let uid = random_uid();
        assert_eq!(uid.len(), 36, "{uid}");
        assert_ne!(uid, random_uid());
    }

    fn view(id: u64, hash: &str, index: usize, stopping: bool) -> PodView {
        PodView {
            id,
            uid: "u1".into(),
            hash: hash.into(),
            index,
            generation: 0,
            stopping,
            template: json!({"old": hash}),
        }
    }

    fn wanted(mut f: impl FnMut(&mut Value)) -> Want {
        let mut dep = deployment("op:1", 1);
        f(&mut dep);
        want(&dep, &images()).expect("mapped")
    }

    #[test]
    fn decisions_start_stop_and_roll() {
        let w = wanted(|_| {});
        let h = w.hash.clone();
        let d = decide(std::slice::from_ref(&w), &[], 0);
        assert_eq!(d.stop, Vec::<u64>::new());
        assert_eq!(
            d.start
                .iter()
                .map(|l| (l.hash.as_str(), l.index))
                .collect::<Vec<_>>(),
            [(h.as_str(), 0)]
        );

        assert_eq!(
            decide(std::slice::from_ref(&w), &[view(1, &h, 0, false)], 0),
            Decision::default(),
            "running as wanted"
        );
        let d = decide(&[], &[view(1, &h, 0, false)], 0);
        assert_eq!(d.stop, [1], "deleted Deployments lose their pods");
        let d = decide(std::slice::from_ref(&w), &[view(1, &h, 0, false)], 1);
        assert_eq!(
            (d.stop.as_slice(), d.start.len()),
            (&[1u64][..], 1),
            "a configuration change replaces pods"
        );

        let scaled = wanted(|d| d["spec"]["replicas"] = json!(0));
        assert_eq!(decide(&[scaled], &[view(1, &h, 0, false)], 0).stop, [1]);
        let three = wanted(|d| d["spec"]["replicas"] = json!(3));
        assert_eq!(
            decide(&[three], &[view(1, &h, 0, false)], 0)
                .start
                .iter()
                .map(|l| l.index)
                .collect::<Vec<_>>(),
            [1, 2]
        );

        // A template change: RollingUpdate starts the new pod while the old one stops.
        let d = decide(std::slice::from_ref(&w), &[view(1, "old", 0, false)], 0);
        assert_eq!((d.stop.as_slice(), d.start.len()), (&[1u64][..], 1));
        let d = decide(std::slice::from_ref(&w), &[view(1, "old", 0, true)], 0);
        assert_eq!(
            d.start.len(),
            1,
            "rolling: not held back by a terminating pod"
        );
    }

    #[test]
    fn recreate_waits_for_the_old_pods_to_be_gone() {
        let w = wanted(|d| d["spec"]["strategy"] = json!({"type": "Recreate"}));
        let d = decide(std::slice::from_ref(&w), &[view(1, "old", 0, false)], 0);
        assert_eq!((d.stop.as_slice(), d.start.len()), (&[1u64][..], 0));
        assert_eq!(
            decide(std::slice::from_ref(&w), &[view(1, "old", 0, true)], 0),
            Decision::default()
        );
        assert_eq!(decide(std::slice::from_ref(&w), &[], 0).start.len(), 1);
    }

    #[test]
    fn a_paused_deployment_keeps_its_running_template() {
        let w = wanted(|d| d["spec"]["paused"] = json!(true));
        assert_eq!(
            decide(std::slice::from_ref(&w), &[view(1, "old", 0, false)], 0),
            Decision::default()
        );
        let w3 = wanted(|d| {
            d["spec"]["paused"] = json!(true);
            d["spec"]["replicas"] = json!(2);
        });
        let d = decide(&[w3], &[view(1, "old", 0, false)], 0);
        assert_eq!(
            d.start,
            [Launch {
                want: 0,
                hash: "old".into(),
                template: json!({"old": "old"}),
                index: 1
            }],
            "scaling a paused Deployment uses the running template"
        );
        let fresh = decide(std::slice::from_ref(&w), &[], 0);
        assert_eq!(
            fresh.start.first().map(|l| l.hash.clone()),
            Some(w.hash.clone())
        );
    }

    #[test]
    fn readiness_reports_hashes_whose_pods_all_run() {
        let r = Readiness {
            images: BTreeSet::from(["op:1".to_string()]),
            running: HashMap::from([(
                "u1".to_string(),
                BTreeMap::from([("a".to_string(), 1), ("b".to_string(), 2)]),
            )]),
        };
        assert_eq!(
            r.running_hashes(&deployment("other:9", 1)),
            None,
            "virtual pods"
        );
        assert_eq!(
            r.running_hashes(&deployment("op:1", 1)),
            Some(BTreeSet::from(["a".to_string(), "b".to_string()]))
        );
        assert_eq!(
            r.running_hashes(&deployment("op:1", 2)),
            Some(BTreeSet::from(["b".to_string()]))
        );
        let mut other = deployment("op:1", 1);
        other["metadata"]["uid"] = json!("u2");
        assert_eq!(r.running_hashes(&other), Some(BTreeSet::new()));
    }

    #[test]
    fn the_status_follows_the_processes() {
        use crate::workload::{WorkloadConfig, deployment_status_with};
        let dep = deployment("op:1", 1);
        let hash = want(&dep, &images()).expect("mapped").hash;
        let config = WorkloadConfig::default();
        let at = |s: i64| jiff::Timestamp::from_second(1_700_000_000 + s).expect("time");
        let available = |status: &Value| {
            status["conditions"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"))
                .map(|c| c["status"].clone())
        };
        let mut track = None;
        let none = BTreeSet::new();
        let up = BTreeSet::from([hash.clone()]);
        let (s, _) = deployment_status_with(&dep, &mut track, at(0), &config, Some(&none));
        assert_eq!(
            (available(&s), s["readyReplicas"].as_i64()),
            (Some(json!("False")), None),
            "not started yet"
        );
        let (s, _) = deployment_status_with(&dep, &mut track, at(1), &config, Some(&up));
        assert_eq!(
            (available(&s), s["readyReplicas"].as_i64()),
            (Some(json!("True")), Some(1))
        );
        let (s, _) = deployment_status_with(
            &dep,
            &mut track,
            at(2),
            &config,
            Some(&BTreeSet::from(["other".to_string()])),
        );
        assert_eq!(
            available(&s),
            Some(json!("False")),
            "the process of another template does not count"
        );
        let (s, _) = deployment_status_with(&dep, &mut track, at(3), &config, None);
        assert_eq!(available(&s), Some(json!("True")), "virtual pods are up");
    }
}
