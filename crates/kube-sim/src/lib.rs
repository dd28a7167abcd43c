//! kube-sim: a faithful emulator of the Kubernetes API server, for tests and the demo.
//!
//! It serves the Kubernetes REST API over HTTP (or HTTPS with a generated CA) on loopback with
//! the semantics operators depend on: resourceVersions, list+watch with resumption and
//! `410 Gone`, optimistic concurrency, generation, the status subresource, merge / JSON /
//! strategic-merge patches and server-side apply with managed fields, finalizers, owner-reference
//! garbage collection, namespace deletion, CRDs that become served resources, and what a real
//! server does to what you write (defaulting, pruning, validation, immutable fields, the
//! ValidatingAdmissionPolicies of `admission_policy`). It records
//! every request and can inject faults, so tests can count writes and break things on purpose.
//!
//! kube-sim is test and demo infrastructure: product code must never depend on it.

pub(crate) mod admission;
pub(crate) mod admission_plugins;
pub(crate) mod admission_policy;
pub mod api;
pub(crate) mod authentication;
pub(crate) mod builtin_lists;
mod builtin_types;
pub(crate) mod crd;
pub(crate) mod defaults;
mod discovery;
pub(crate) mod errors;
pub(crate) mod field_error;
pub(crate) mod json;
pub(crate) mod json_path;
pub mod kubeconfig;
pub(crate) mod list_types;
pub(crate) mod observe;
pub(crate) mod patch;
pub mod pod_admission;
pub(crate) mod pod_security;
mod printers;
pub(crate) mod protobuf;
pub mod rbac;
pub mod resources;
pub(crate) mod reviews;
pub mod scc;
pub(crate) mod selector;
mod server;
pub(crate) mod ssa;
pub(crate) mod storage_admission;
pub(crate) mod store;
mod table;
pub mod validation;
mod workloads;
mod yaml;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::watch;

pub use api::Cluster;
pub use authentication::Authentication;
pub use observe::{Fault, RequestMatch, RequestRecord};
pub use pod_admission::AdmissionConfig;
pub use processes::{LocalProgram, ProcessConfig, ProcessInfo, ProcessState};
pub use rbac::RbacConfig;
pub use workload::WorkloadConfig;
use workloads::controllers;
pub use workloads::{processes, workload};

/// How the simulator behaves; the defaults suit tests.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// How many events the watch history keeps before older resourceVersions answer 410.
    pub history_limit: usize,
    /// Events buffered per watcher before a slow watcher is dropped.
    pub watch_buffer: usize,
    /// Watch duration when the client gives no `timeoutSeconds`.
    pub default_watch_timeout: Duration,
    /// How often a watch that allows bookmarks gets one.
    pub bookmark_interval: Duration,
    /// Serve HTTPS with a freshly generated CA.
    pub tls: bool,
    /// The workload simulator (Deployment/DaemonSet status); `None` switches it off.
    pub workloads: Option<WorkloadConfig>,
    /// RBAC authorization (see `rbac`); `None`, the default, allows every request.
    pub rbac: Option<RbacConfig>,
    /// Deployments whose image maps to a local program run it as real processes (see
    /// `processes.rs`); `None` runs none.
    pub processes: Option<ProcessConfig>,
    /// Pod admission (see `pod_admission.rs`): Pod Security Admission by default; OpenShift's
    /// SCC admission, SCC kind and namespace UID ranges with [`AdmissionConfig::openshift`].
    pub admission: AdmissionConfig,
    /// How bearer tokens are read (see `authentication.rs`); `None`, the default, chooses by
    /// the listen address: user-name tokens on loopback, issued tokens beyond it.
    pub authentication: Option<Authentication>,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            history_limit: 10_000,
            watch_buffer: 10_000,
            default_watch_timeout: Duration::from_secs(1800),
            bookmark_interval: Duration::from_secs(60),
            tls: false,
            workloads: Some(WorkloadConfig::default()),
            rbac: None,
            processes: None,
            admission: AdmissionConfig::default(),
            authentication: None,
        }
    }
}

/// State shared by the HTTP front, the admin paths and the built-in controllers.
pub struct Shared {
    cluster: Mutex<Cluster>,
    pub(crate) log: observe::RequestLog,
    pub(crate) faults: observe::Faults,
    /// Bumped after every committed write; controllers wait on it.
    pub(crate) changed: watch::Sender<u64>,
    /// Bumped to restart the server; carries the downtime in milliseconds.
    pub(crate) restart: watch::Sender<u64>,
    pub(crate) shutdown: watch::Sender<bool>,
    pub(crate) started: Instant,
    pub(crate) config: SimConfig,
    pub(crate) workloads: Mutex<Option<WorkloadConfig>>,
    pub(crate) rbac: rbac::RbacState,
    pub(crate) processes: processes::Processes,
    pub(crate) admission: Mutex<AdmissionConfig>,
    pub(crate) tokens: authentication::Tokens,
    address: OnceLock<String>,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Cluster> {
        self.cluster
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs a write under the lock and wakes the controllers afterwards.
    pub(crate) fn write<T>(&self, f: impl FnOnce(&mut Cluster) -> T) -> T {
        let out = f(&mut self.lock());
        self.changed.send_modify(|n| *n += 1);
        out
    }

    /// The pod admission settings now in force.
    pub(crate) fn admission(&self) -> AdmissionConfig {
        self.admission
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn address(&self) -> String {
        self.address.get().cloned().unwrap_or_default()
    }
}

/// A cloneable handle on a running kube-sim's state, for controllers that run beside it in the
/// same process (the testbed's stand-ins): they read and write through the same `Cluster`
/// verbs as kube-sim's own controllers, without HTTP (so they add nothing to the request log),
/// and wake on every committed write.
#[derive(Clone)]
pub struct ClusterHandle {
    shared: Arc<Shared>,
}

impl ClusterHandle {
    /// The state, locked for reading (or a write that should not wake the controllers).
    pub fn cluster(&self) -> MutexGuard<'_, Cluster> {
        self.shared.lock()
    }

    /// Runs a write and wakes the controllers (and every `changes` receiver).
    pub fn write<T>(&self, f: impl FnOnce(&mut Cluster) -> T) -> T {
        self.shared.write(f)
    }

    /// Changes on every committed write.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.shared.changed.subscribe()
    }

    /// Becomes `true` when the simulator shuts down.
    pub fn shutdown(&self) -> watch::Receiver<bool> {
        self.shared.shutdown.subscribe()
    }
}

/// A running simulator. Dropping it stops the server and its controllers.
pub struct KubeSim {
    shared: Arc<Shared>,
    addr: SocketAddr,
    ca_pem: Option<String>,
}

impl KubeSim {
    /// Starts serving on `listen` (use port 0 for any free port).
    pub async fn start(config: SimConfig, listen: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let (tls_acceptor, ca_pem) = if config.tls {
            let names = sim_tls::Names {
                ca: "kube-sim-ca",
                server: "kube-apiserver",
                dns: &["localhost", "kubernetes.default.svc"],
            };
            let (acceptor, ca) =
                sim_tls::self_signed(addr, names).map_err(std::io::Error::other)?;
            (Some(acceptor), Some(ca))
        } else {
            (None, None)
        };
        let shared = Arc::new(Shared {
            cluster: Mutex::new(Cluster::new(config.history_limit, config.watch_buffer)),
            log: observe::RequestLog::default(),
            faults: observe::Faults::default(),
            changed: watch::channel(0).0,
            restart: watch::channel(0).0,
            shutdown: watch::channel(false).0,
            started: Instant::now(),
            workloads: Mutex::new(config.workloads.clone()),
            rbac: rbac::RbacState::new(config.rbac.clone()),
            processes: processes::Processes::new(config.processes.clone(), ca_pem.clone()),
            admission: Mutex::new(config.admission.clone()),
            tokens: authentication::Tokens::new(
                config
                    .authentication
                    .unwrap_or_else(|| Authentication::for_listen_address(listen.ip())),
            ),
            config,
            address: OnceLock::new(),
        });
        let scheme = if ca_pem.is_some() { "https" } else { "http" };
        let _ = shared.address.set(format!("{scheme}://{addr}"));
        controllers::seed(&shared);
        if shared.admission().openshift {
            pod_admission::seed(&mut shared.lock());
            pod_admission::allocate_namespaces(&mut shared.lock());
        }
        tokio::spawn(server::serve(shared.clone(), listener, tls_acceptor));
        tokio::spawn(controllers::run(shared.clone()));
        tokio::spawn(workload::run(shared.clone()));
        tokio::spawn(processes::run(shared.clone()));
        tokio::spawn(pod_admission::run(shared.clone()));
        Ok(Self {
            shared,
            addr,
            ca_pem,
        })
    }

    /// `http://127.0.0.1:PORT` (or https).
    pub fn url(&self) -> String {
        self.shared.address()
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The PEM of the generated CA when serving HTTPS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// A kubeconfig for `user`: its bearer token is the user name, or with
    /// [`Authentication::IssuedTokens`] the token issued to `user` (issued now if need be).
    /// The text holds a credential then: never log it.
    pub fn kubeconfig(&self, user: &str) -> String {
        kubeconfig::render_with_token(&self.url(), user, &self.token(user), self.ca_pem.as_deref())
    }

    /// The bearer token that authenticates `user` (see [`KubeSim::kubeconfig`]).
    pub fn token(&self, user: &str) -> String {
        self.shared.tokens.token_for(user)
    }

    /// How this simulator authenticates bearer tokens.
    pub fn authentication(&self) -> Authentication {
        self.shared.tokens.mode()
    }

    /// Every request served so far.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.shared.log.snapshot()
    }

    pub fn clear_requests(&self) {
        self.shared.log.clear();
    }

    pub fn inject(&self, fault: Fault) {
        self.shared.faults.add(fault);
    }

    pub fn clear_faults(&self) {
        self.shared.faults.clear();
    }

    /// Ends every open watch; clients must re-watch.
    pub fn drop_watches(&self) {
        self.shared.lock().drop_watches();
    }

    /// Forgets the watch history: resuming from any older resourceVersion gets 410 Gone.
    pub fn compact(&self) {
        self.shared.lock().compact();
    }

    /// Drops all connections and refuses new ones for `downtime`; the data is kept.
    pub fn restart(&self, downtime: Duration) {
        self.shared.lock().drop_watches();
        let ms = downtime.as_millis() as u64;
        self.shared.restart.send_modify(|v| *v = ms);
    }

    /// A handle for in-process controllers that outlive this borrow.
    pub fn handle(&self) -> ClusterHandle {
        ClusterHandle {
            shared: self.shared.clone(),
        }
    }

    /// Direct access to the cluster state, for assertions and seeding.
    pub fn cluster(&self) -> MutexGuard<'_, Cluster> {
        self.shared.lock()
    }

    /// Runs a write against the state directly (as if through the API) and wakes the
    /// controllers.
    pub fn write<T>(&self, f: impl FnOnce(&mut Cluster) -> T) -> T {
        self.shared.write(f)
    }

    /// Changes the workload simulator at runtime.
    pub fn set_workloads(&self, config: Option<WorkloadConfig>) {
        *self
            .shared
            .workloads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = config;
        self.shared.changed.send_modify(|n| *n += 1);
    }

    /// Changes which images run as local processes; pods started under the previous
    /// configuration are replaced.
    pub fn set_processes(&self, config: Option<ProcessConfig>) {
        self.shared.processes.set(config);
        self.shared.changed.send_modify(|n| *n += 1);
    }

    /// The pods that run as local processes, with their pid, restarts and state.
    pub fn processes(&self) -> Vec<ProcessInfo> {
        self.shared.processes.list()
    }

    /// The last 64 KiB of a process-backed pod's output (stdout and stderr, with kube-sim's
    /// start and exit notes), `None` for an unknown pod.
    pub fn process_output(&self, namespace: &str, pod: &str) -> Option<String> {
        self.shared.processes.output(namespace, pod)
    }

    /// Changes pod admission at runtime; switching the OpenShift mode on seeds the SCC kind and
    /// default SCCs (keeping existing ones). Controllers re-judge their pods at once.
    pub fn set_admission(&self, config: AdmissionConfig) {
        if config.openshift {
            pod_admission::seed(&mut self.shared.lock());
        }
        *self
            .shared
            .admission
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = config;
        self.shared.changed.send_modify(|n| *n += 1);
    }

    /// The pod admission settings now in force.
    pub fn admission(&self) -> AdmissionConfig {
        self.shared.admission()
    }

    /// Switches RBAC authorization on (`Some`) or off (`None`) at runtime.
    pub fn set_rbac(&self, config: Option<RbacConfig>) {
        self.shared.rbac.set_config(config);
    }

    /// Every request RBAC refused (authorization or escalation), oldest first.
    pub fn rbac_denials(&self) -> Vec<rbac::Denial> {
        self.shared.rbac.denials()
    }

    /// The refused requests as readable lines: who could not do what, and the missing rule.
    pub fn forbidden_requests(&self) -> Vec<String> {
        self.rbac_denials()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    pub fn clear_rbac_denials(&self) {
        self.shared.rbac.clear_denials();
    }

    /// Stops the server and controllers; process-backed pods get SIGTERM and their grace period.
    pub fn shutdown(&self) {
        self.shared.shutdown.send_replace(true);
    }
}

impl Drop for KubeSim {
    fn drop(&mut self) {
        self.shutdown();
        self.shared.processes.kill_now();
    }
}
