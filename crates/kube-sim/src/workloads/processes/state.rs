//! The runner's configuration, what it lets callers observe ([`ProcessInfo`]), its shared
//! state, and the readiness the status simulation reads.

use super::{MAX_REPLICAS, TAIL_BYTES};
use crate::Shared;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::watch;

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
    pub(super) fn waiting(reason: &str, message: impl Into<String>) -> Self {
        Self::Waiting {
            reason: reason.into(),
            message: message.into(),
        }
    }
}

// ----- shared state ----------------------------------------------------------------------------

/// The process runner's state in [`Shared`].
pub(crate) struct Processes {
    pub(super) config: Mutex<Option<ProcessConfig>>,
    pub(super) table: Mutex<Table>,
    pub(super) ca_pem: Option<String>,
    /// The kubeconfig directory used when the configuration names none.
    pub(super) scratch: PathBuf,
}

#[derive(Default)]
pub(super) struct Table {
    pub(super) next_id: u64,
    /// Bumped on every configuration change: pods of an older generation are replaced.
    pub(super) generation: u64,
    pub(super) pods: BTreeMap<u64, Pod>,
}

pub(super) struct Pod {
    pub(super) uid: String,
    pub(super) namespace: String,
    pub(super) deployment: String,
    pub(super) name: String,
    pub(super) hash: String,
    pub(super) index: usize,
    pub(super) generation: u64,
    pub(super) template: Value,
    pub(super) program: PathBuf,
    pub(super) stop: watch::Sender<bool>,
    pub(super) stopping: bool,
    pub(super) pid: Option<u32>,
    pub(super) restarts: u32,
    pub(super) state: ProcessState,
    pub(super) last_exit: Option<String>,
    pub(super) log: Option<PathBuf>,
    pub(super) tail: Arc<Mutex<Vec<u8>>>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
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

    pub(super) fn update(&self, id: u64, f: impl FnOnce(&mut Pod)) -> bool {
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
    pub(super) images: BTreeSet<String>,
    /// Deployment uid → template hash → running pods of the current configuration.
    pub(super) running: HashMap<String, BTreeMap<String, usize>>,
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

pub(super) fn containers(template: &Value) -> Vec<Value> {
    template
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The replicas that run as processes.
pub(super) fn replicas(dep: &Value) -> usize {
    let n = dep
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .max(0);
    usize::try_from(n).unwrap_or(MAX_REPLICAS).min(MAX_REPLICAS)
}

pub(super) fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}
