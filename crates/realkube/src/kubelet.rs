//! The kubelet stand-in, the one part of a cluster the real control plane lacks and the only
//! part (with the cloud) the tests fake:
//! - it registers its Nodes (control-plane Nodes labelled and tainted as OpenShift's masters,
//!   workers plain), marks them Ready, takes off the `not-ready` taint admission puts on a new
//!   Node, and renews their Leases;
//! - every pod the real scheduler binds to one of them becomes Running and Ready;
//! - a pod whose container image maps to a [`LocalProgram`] runs as a local process, its command
//!   line and environment built as a kubelet builds a container's (`$(VAR)` expansion, `env`,
//!   `envFrom`, the downward API, ConfigMap and Secret references), its mounted Secrets,
//!   ConfigMaps and projected ServiceAccount tokens written under the pod's own folder
//!   (`$(REALKUBE_POD_ROOT)` + mountPath), and `KUBECONFIG` holding a TokenRequest token bound
//!   to the pod, so the API server authenticates and authorizes it as its ServiceAccount. Such a
//!   pod is Ready while its process runs; an exit is restarted with back-off;
//! - a deleted pod's process gets SIGTERM, then SIGKILL after its grace period (capped), and the
//!   pod is then removed, as the kubelet confirms a deletion.
//!
//! What it must not do: decide anything the control plane decides (which pods exist, where they
//! run, whether they are admitted); hand the test's environment to a pod beyond PATH, HOME and
//! the log settings; write a Secret value anywhere but the pod's own folder.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::authentication::v1::BoundObjectReference;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Node, Pod, Secret};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube_sim::processes::expand;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

/// Tests mint ServiceAccount tokens as the kubelet does (`TokenRequest`).
pub use crate::plane::token_request;
use crate::{ControlPlane, KUBELET_USER, PlaneError};

/// A program that stands for an image: its first `drop_leading` command words are replaced by
/// `program`, then `extra_args` follow (with `$(REALKUBE_POD_ROOT)` and the container's
/// variables expanded). The same mapping kube-sim's process runner takes.
pub use kube_sim::LocalProgram;

/// One Node the stand-in plays.
#[derive(Debug, Clone)]
pub struct NodeSpec {
    pub name: String,
    pub control_plane: bool,
}

/// What the stand-in plays and runs.
#[derive(Debug, Clone)]
pub struct Config {
    pub nodes: Vec<NodeSpec>,
    /// Image → program; every other image's pods only turn Running.
    pub images: BTreeMap<String, LocalProgram>,
    /// Labels every Node gets (a zone, say) beside its role labels.
    pub node_labels: BTreeMap<String, String>,
    /// Control-plane Nodes labelled and tainted `node-role.kubernetes.io/master` as OpenShift
    /// still does (beside `control-plane`); plain Kubernetes dropped both in 1.24.
    pub openshift_roles: bool,
}

impl Config {
    /// `control_planes` masters (`master-N`) and `workers` workers (`worker-N`).
    pub fn cluster(control_planes: usize, workers: usize) -> Self {
        let nodes = (0..control_planes)
            .map(|i| NodeSpec {
                name: format!("master-{i}"),
                control_plane: true,
            })
            .chain((0..workers).map(|i| NodeSpec {
                name: format!("worker-{i}"),
                control_plane: false,
            }))
            .collect();
        Self {
            nodes,
            images: BTreeMap::new(),
            node_labels: BTreeMap::new(),
            openshift_roles: true,
        }
    }

    /// Like [`Config::cluster`], with control-plane Nodes as Kubernetes 1.24+ labels and
    /// taints them (`node-role.kubernetes.io/control-plane` only).
    pub fn kubernetes_cluster(control_planes: usize, workers: usize) -> Self {
        Self {
            openshift_roles: false,
            ..Self::cluster(control_planes, workers)
        }
    }

    pub fn with_image(mut self, image: impl Into<String>, program: LocalProgram) -> Self {
        self.images.insert(image.into(), program);
        self
    }
}

/// A pod the stand-in runs as a process, as a test sees it.
#[derive(Debug, Clone)]
pub struct PodProcess {
    pub namespace: String,
    pub pod: String,
    pub node: String,
    pub pid: Option<u32>,
    pub restarts: u32,
    /// Why it is not running, when it is not (a missing Secret, the last exit).
    pub waiting: Option<String>,
    pub log: PathBuf,
}

/// The running stand-in. Dropping it kills its processes.
pub struct Kubelet {
    processes: Arc<Mutex<Vec<PodProcess>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    dir: PathBuf,
}

/// Environment variables a pod gets from the test's own environment.
const PASSED_THROUGH: [&str; 4] = ["PATH", "HOME", "RUST_LOG", "RUST_BACKTRACE"];
/// The longest a deleted pod's process is given after SIGTERM.
const MAX_GRACE: Duration = Duration::from_secs(10);
const BACKOFF_INITIAL: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// The variable (and argument placeholder) naming a pod's folder, under which its volumes are.
pub const POD_ROOT_VAR: &str = "REALKUBE_POD_ROOT";

impl Kubelet {
    /// Registers the Nodes and starts playing them.
    pub async fn start(plane: &ControlPlane, config: Config) -> Result<Self, PlaneError> {
        let token = plane
            .token_for(KUBELET_USER)
            .ok_or_else(|| PlaneError::Client("no kubelet token".into()))?
            .to_owned();
        let client = plane.client_for_token(&token).await?;
        register_nodes(&client, &config)
            .await
            .map_err(|e| PlaneError::Seed(format!("registering Nodes: {e}")))?;
        let dir = plane.dir().join("pods");
        std::fs::create_dir_all(&dir).map_err(|e| PlaneError::Prepare {
            dir: dir.clone(),
            reason: e.to_string(),
        })?;
        let processes = Arc::new(Mutex::new(Vec::new()));
        let pods = PodLoop {
            client: client.clone(),
            config: config.clone(),
            dir: dir.clone(),
            url: plane.url().to_owned(),
            ca_pem: plane.ca_pem().to_owned(),
            runs: HashMap::new(),
            report: processes.clone(),
            next_ip: 0,
        };
        let tasks = vec![
            tokio::spawn(pods.run()),
            tokio::spawn(renew_leases(client, config.nodes)),
        ];
        Ok(Self {
            processes,
            tasks,
            dir,
        })
    }

    /// The pods run as processes.
    pub fn processes(&self) -> Vec<PodProcess> {
        self.processes.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// Every process's state and the tail of its output, for a failing test's message.
    pub fn report(&self) -> String {
        let mut out = String::new();
        for p in self.processes() {
            let log = std::fs::read_to_string(&p.log).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            out.push_str(&format!(
                "--- pod {}/{} on {} pid {:?} restarts {} waiting {:?}\n{}\n",
                p.namespace,
                p.pod,
                p.node,
                p.pid,
                p.restarts,
                p.waiting,
                lines[lines.len().saturating_sub(15)..].join("\n")
            ));
        }
        out
    }

    /// Where the pods' folders and logs are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        // Aborting the pod loop drops its children, which kills them (kill_on_drop).
        for t in &self.tasks {
            t.abort();
        }
    }
}

async fn register_nodes(client: &Client, config: &Config) -> Result<(), kube::Error> {
    let api: Api<Node> = Api::all(client.clone());
    for spec in &config.nodes {
        let mut labels = BTreeMap::from([
            ("kubernetes.io/hostname".to_owned(), spec.name.clone()),
            ("kubernetes.io/os".to_owned(), "linux".to_owned()),
            ("kubernetes.io/arch".to_owned(), "amd64".to_owned()),
        ]);
        labels.extend(config.node_labels.clone());
        let taints = if spec.control_plane {
            labels.insert(
                "node-role.kubernetes.io/control-plane".into(),
                String::new(),
            );
            let role = if config.openshift_roles {
                labels.insert("node-role.kubernetes.io/master".into(), String::new());
                "node-role.kubernetes.io/master"
            } else {
                "node-role.kubernetes.io/control-plane"
            };
            json!([{"key": role, "effect": "NoSchedule"}])
        } else {
            labels.insert("node-role.kubernetes.io/worker".into(), String::new());
            json!([])
        };
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": spec.name, "labels": labels},
            "spec": {"taints": taints},
        }))
        .map_err(kube::Error::SerdeError)?;
        match api.create(&PostParams::default(), &node).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e),
        }
        let now = jiff::Timestamp::now().to_string();
        let status = json!({"status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "250"},
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "250"},
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": spec.name}],
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "realkube kubelet stand-in", "lastHeartbeatTime": now, "lastTransitionTime": now},
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory", "lastHeartbeatTime": now, "lastTransitionTime": now},
                {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure", "lastHeartbeatTime": now, "lastTransitionTime": now},
                {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID", "lastHeartbeatTime": now, "lastTransitionTime": now},
            ],
            "nodeInfo": {"kubeletVersion": "v1.36.0", "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64",
                "containerRuntimeVersion": "realkube://0", "kernelVersion": "", "osImage": "realkube", "bootID": "", "machineID": "", "systemUUID": ""},
        }});
        api.patch_status(&spec.name, &PatchParams::default(), &Patch::Merge(&status))
            .await?;
        // TaintNodesByCondition taints a new Node not-ready; the node lifecycle controller
        // (not run: it would judge our heartbeats) takes it off once Ready, so we do.
        let current = api.get(&spec.name).await?;
        let kept: Vec<_> = current
            .spec
            .and_then(|s| s.taints)
            .unwrap_or_default()
            .into_iter()
            .filter(|t| t.key != "node.kubernetes.io/not-ready")
            .collect();
        api.patch(
            &spec.name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"taints": kept}})),
        )
        .await?;
    }
    Ok(())
}

/// Renews each Node's Lease every 10 s, as a kubelet does.
async fn renew_leases(client: Client, nodes: Vec<NodeSpec>) {
    let api: Api<Lease> = Api::namespaced(client, "kube-node-lease");
    loop {
        for node in &nodes {
            let lease = json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": node.name, "namespace": "kube-node-lease"},
                "spec": {"holderIdentity": node.name, "leaseDurationSeconds": 40,
                         "renewTime": jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()},
            });
            let _ = api
                .patch(
                    &node.name,
                    &PatchParams::apply(KUBELET_USER).force(),
                    &Patch::Apply(&lease),
                )
                .await;
        }
        tokio::time::sleep(Duration::from_secs(10)).await;
    }
}

/// One pod on one of our Nodes.
struct Run {
    namespace: String,
    name: String,
    node: String,
    ip: String,
    /// The program, when the pod's image maps to one.
    program: Option<(String, LocalProgram)>,
    child: Option<Child>,
    pid: Option<u32>,
    restarts: u32,
    next_start: Instant,
    backoff: Duration,
    waiting: Option<String>,
    /// (ready, restarts) as last written to the pod's status.
    reported: Option<(bool, u32)>,
    deleting: bool,
    log: PathBuf,
    started_at: String,
}

struct PodLoop {
    client: Client,
    config: Config,
    dir: PathBuf,
    url: String,
    ca_pem: String,
    runs: HashMap<String, Run>,
    report: Arc<Mutex<Vec<PodProcess>>>,
    next_ip: u32,
}

impl PodLoop {
    async fn run(mut self) {
        let api: Api<Pod> = Api::all(self.client.clone());
        let (store, writer) = reflector::store();
        let mut events = reflector(
            writer,
            watcher(api, watcher::Config::default()).default_backoff(),
        )
        .touched_objects()
        .boxed();
        loop {
            // Every change, and at least every 500 ms for restarts and exits.
            let _ = tokio::time::timeout(Duration::from_millis(500), events.next()).await;
            let pods = store.state();
            self.sync(&pods).await;
        }
    }

    async fn sync(&mut self, pods: &[Arc<Pod>]) {
        let ours: Vec<&Arc<Pod>> = pods
            .iter()
            .filter(|p| {
                let node = p
                    .spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_deref())
                    .unwrap_or_default();
                self.config.nodes.iter().any(|n| n.name == node)
            })
            .collect();
        let live: std::collections::HashSet<String> =
            ours.iter().filter_map(|p| p.metadata.uid.clone()).collect();
        // Pods gone from the API: their processes end (dropping a child kills it).
        self.runs.retain(|uid, _| live.contains(uid));
        for pod in ours {
            self.sync_pod(pod).await;
        }
        let report: Vec<PodProcess> = self
            .runs
            .values()
            .filter(|r| r.program.is_some())
            .map(|r| PodProcess {
                namespace: r.namespace.clone(),
                pod: r.name.clone(),
                node: r.node.clone(),
                pid: r.pid,
                restarts: r.restarts,
                waiting: r.waiting.clone(),
                log: r.log.clone(),
            })
            .collect();
        if let Ok(mut r) = self.report.lock() {
            *r = report;
        }
    }

    async fn sync_pod(&mut self, pod: &Pod) {
        let Some(uid) = pod.metadata.uid.clone() else {
            return;
        };
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        if !self.runs.contains_key(&uid) {
            self.next_ip += 1;
            let ip = format!("10.128.{}.{}", self.next_ip / 250, self.next_ip % 250 + 1);
            let program = pod
                .spec
                .iter()
                .flat_map(|s| s.containers.iter())
                .find_map(|c| {
                    let image = c.image.as_deref()?;
                    Some((c.name.clone(), self.config.images.get(image)?.clone()))
                });
            self.runs.insert(
                uid.clone(),
                Run {
                    log: self.dir.join(format!("{namespace}_{name}.log")),
                    namespace: namespace.clone(),
                    name: name.clone(),
                    node: pod
                        .spec
                        .as_ref()
                        .and_then(|s| s.node_name.clone())
                        .unwrap_or_default(),
                    ip,
                    program,
                    child: None,
                    pid: None,
                    restarts: 0,
                    next_start: Instant::now(),
                    backoff: BACKOFF_INITIAL,
                    waiting: None,
                    reported: None,
                    deleting: false,
                    started_at: jiff::Timestamp::now()
                        .strftime("%Y-%m-%dT%H:%M:%SZ")
                        .to_string(),
                },
            );
        }
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &namespace);
        if pod.metadata.deletion_timestamp.is_some() {
            let Some(run) = self.runs.get_mut(&uid) else {
                return;
            };
            if run.deleting {
                return;
            }
            run.deleting = true;
            let child = run.child.take();
            let grace = pod
                .spec
                .as_ref()
                .and_then(|s| s.termination_grace_period_seconds)
                .map(|s| Duration::from_secs(s.max(0) as u64))
                .unwrap_or(Duration::from_secs(30))
                .min(MAX_GRACE);
            tokio::spawn(async move {
                if let Some(child) = child {
                    terminate(child, grace).await;
                }
                let params = DeleteParams {
                    grace_period_seconds: Some(0),
                    preconditions: Some(kube::api::Preconditions {
                        uid: Some(uid),
                        resource_version: None,
                    }),
                    ..Default::default()
                };
                let _ = api.delete(&name, &params).await;
            });
            return;
        }
        let (needs_start, has_program) = {
            let Some(run) = self.runs.get_mut(&uid) else {
                return;
            };
            if let Some(child) = run.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                run.child = None;
                run.pid = None;
                run.restarts += 1;
                run.waiting = Some(format!("exited: {status}"));
                run.next_start = Instant::now() + run.backoff;
                run.backoff = (run.backoff * 2).min(BACKOFF_MAX);
            }
            (
                run.program.is_some() && run.child.is_none() && Instant::now() >= run.next_start,
                run.program.is_some(),
            )
        };
        if needs_start {
            let started = self.start_process(pod, &uid).await;
            if let Some(run) = self.runs.get_mut(&uid) {
                match started {
                    Ok(child) => {
                        run.pid = child.id();
                        run.child = Some(child);
                        run.waiting = None;
                        run.started_at = jiff::Timestamp::now()
                            .strftime("%Y-%m-%dT%H:%M:%SZ")
                            .to_string();
                    }
                    Err(why) => {
                        run.waiting = Some(why);
                        run.next_start = Instant::now() + Duration::from_secs(1);
                    }
                }
            }
        }
        let Some(run) = self.runs.get_mut(&uid) else {
            return;
        };
        let ready = !has_program || run.child.is_some();
        if run.reported == Some((ready, run.restarts)) {
            return;
        }
        let status = pod_status(pod, run, ready);
        if api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .is_ok()
        {
            run.reported = Some((ready, run.restarts));
        }
    }

    /// Builds the container's start as a kubelet would and starts it.
    async fn start_process(&self, pod: &Pod, uid: &str) -> Result<Child, String> {
        let run = self.runs.get(uid).ok_or("no run")?;
        let (container_name, program) = run.program.clone().ok_or("no program")?;
        let spec = pod.spec.as_ref().ok_or("no spec")?;
        let container = spec
            .containers
            .iter()
            .find(|c| c.name == container_name)
            .ok_or("no container")?;
        let namespace = run.namespace.clone();
        let root = self.dir.join(format!("{}_{}", run.namespace, run.name));
        std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
        let sa = spec
            .service_account_name
            .clone()
            .unwrap_or_else(|| "default".into());
        let bound = BoundObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: pod.metadata.name.clone(),
            uid: Some(uid.to_owned()),
        };
        let token = token_request(&self.client, &namespace, &sa, Some(bound))
            .await
            .map_err(|e| format!("TokenRequest for {namespace}/{sa}: {e}"))?;
        let sources = Sources {
            client: &self.client,
            namespace: &namespace,
        };
        write_volumes(&sources, pod, container, &root, &token, &self.ca_pem).await?;
        let mut vars = resolve_env(&sources, pod, container, &run.ip).await?;
        let root_text = root.display().to_string();
        vars.insert(POD_ROOT_VAR.into(), root_text.clone());
        let kubeconfig = root.join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            crate::plane::kubeconfig_yaml(&self.url, &self.ca_pem, &token),
        )
        .map_err(|e| e.to_string())?;
        let mut args: Vec<String> = container
            .command
            .iter()
            .flatten()
            .skip(program.drop_leading)
            .chain(container.args.iter().flatten())
            .map(|a| expand(a, &vars))
            .collect();
        args.extend(program.extra_args.iter().map(|a| expand(a, &vars)));
        let args = rebase_mounted_paths(args, container, &root);
        let mut env: BTreeMap<String, String> = PASSED_THROUGH
            .iter()
            .filter_map(|k| Some((k.to_string(), std::env::var(k).ok()?)))
            .collect();
        env.extend(vars);
        env.insert("KUBECONFIG".into(), kubeconfig.display().to_string());
        env.extend(program.env.clone());
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&run.log)
            .map_err(|e| e.to_string())?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        Command::new(&program.program)
            .args(&args)
            .env_clear()
            .envs(&env)
            .current_dir(&root)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .kill_on_drop(true)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("{}: {e}", program.program.display()))
    }
}

/// SIGTERM, then SIGKILL after `grace`.
async fn terminate(mut child: Child, grace: Duration) {
    if let Some(pid) = child.id() {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status()
            .await;
        if tokio::time::timeout(grace, child.wait()).await.is_ok() {
            return;
        }
    }
    let _ = child.kill().await;
}

/// The status a kubelet reports for a pod that runs (ready or not).
fn pod_status(pod: &Pod, run: &Run, ready: bool) -> Value {
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let flag = |b: bool| if b { "True" } else { "False" };
    let containers: Vec<Value> = pod
        .spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .map(|c| {
            let is_program = run.program.as_ref().is_some_and(|(n, _)| *n == c.name);
            let restarts = if is_program { run.restarts } else { 0 };
            let state = if ready || !is_program {
                json!({"running": {"startedAt": run.started_at}})
            } else {
                json!({"waiting": {"reason": "CrashLoopBackOff", "message": run.waiting.clone().unwrap_or_default()}})
            };
            json!({
                "name": c.name, "image": c.image, "imageID": "", "containerID": format!("realkube://{}", c.name),
                "ready": ready || !is_program, "started": ready || !is_program,
                "restartCount": restarts, "state": state,
            })
        })
        .collect();
    json!({"status": {
        "phase": "Running",
        "hostIP": "127.0.0.1", "hostIPs": [{"ip": "127.0.0.1"}],
        "podIP": run.ip, "podIPs": [{"ip": run.ip}],
        "startTime": pod.status.as_ref().and_then(|s| s.start_time.as_ref()).map(|t| json!(t)).unwrap_or(json!(now)),
        "conditions": [
            {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": now},
            {"type": "Initialized", "status": "True", "lastTransitionTime": now},
            {"type": "Ready", "status": flag(ready), "lastTransitionTime": now},
            {"type": "ContainersReady", "status": flag(ready), "lastTransitionTime": now},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
        ],
        "containerStatuses": containers,
    }})
}

/// Where a pod's ConfigMaps and Secrets are read from.
struct Sources<'a> {
    client: &'a Client,
    namespace: &'a str,
}

impl Sources<'_> {
    /// A ConfigMap's or Secret's data (Secret values decoded), `None` when it does not exist.
    async fn data(
        &self,
        secret: bool,
        name: &str,
    ) -> Result<Option<BTreeMap<String, Vec<u8>>>, String> {
        if secret {
            let api: Api<Secret> = Api::namespaced(self.client.clone(), self.namespace);
            let found = api.get_opt(name).await.map_err(|e| e.to_string())?;
            Ok(found.map(|s| {
                s.data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.0))
                    .collect()
            }))
        } else {
            let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), self.namespace);
            let found = api.get_opt(name).await.map_err(|e| e.to_string())?;
            Ok(found.map(|c| {
                let mut data: BTreeMap<String, Vec<u8>> = c
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.into_bytes()))
                    .collect();
                data.extend(
                    c.binary_data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, v.0)),
                );
                data
            }))
        }
    }

    /// Like [`Sources::data`], but a missing non-optional source is the kubelet's error.
    async fn required(
        &self,
        secret: bool,
        name: &str,
        optional: bool,
    ) -> Result<BTreeMap<String, Vec<u8>>, String> {
        match self.data(secret, name).await? {
            Some(d) => Ok(d),
            None if optional => Ok(BTreeMap::new()),
            None => Err(format!(
                "{} \"{name}\" not found",
                if secret { "secret" } else { "configmap" }
            )),
        }
    }
}

/// The downward API value of `path`.
fn field_value(pod: &Pod, path: &str, ip: &str) -> Option<String> {
    let keyed = |prefix: &str| {
        path.strip_prefix(prefix)?
            .strip_prefix("['")?
            .strip_suffix("']")
            .map(str::to_owned)
    };
    let spec = pod.spec.as_ref();
    Some(match path {
        "metadata.name" => pod.metadata.name.clone()?,
        "metadata.namespace" => pod.metadata.namespace.clone()?,
        "metadata.uid" => pod.metadata.uid.clone()?,
        "spec.nodeName" => spec?.node_name.clone()?,
        "spec.serviceAccountName" => spec?.service_account_name.clone()?,
        "status.podIP" | "status.podIPs" => ip.to_owned(),
        "status.hostIP" | "status.hostIPs" => "127.0.0.1".to_owned(),
        _ => {
            if let Some(k) = keyed("metadata.labels") {
                return pod.metadata.labels.as_ref()?.get(&k).cloned();
            }
            let k = keyed("metadata.annotations")?;
            return pod.metadata.annotations.as_ref()?.get(&k).cloned();
        }
    })
}

/// The container's environment: `envFrom`, then `env` in order, each value `$(VAR)`-expanded
/// against what came before it.
async fn resolve_env(
    sources: &Sources<'_>,
    pod: &Pod,
    container: &Container,
    ip: &str,
) -> Result<BTreeMap<String, String>, String> {
    let mut vars = BTreeMap::new();
    for from in container.env_from.iter().flatten() {
        let prefix = from.prefix.clone().unwrap_or_default();
        let (secret, name, optional) = if let Some(s) = &from.secret_ref {
            (true, s.name.clone(), s.optional.unwrap_or(false))
        } else if let Some(c) = &from.config_map_ref {
            (false, c.name.clone(), c.optional.unwrap_or(false))
        } else {
            continue;
        };
        for (k, v) in sources.required(secret, &name, optional).await? {
            vars.insert(
                format!("{prefix}{k}"),
                String::from_utf8_lossy(&v).into_owned(),
            );
        }
    }
    for var in container.env.iter().flatten() {
        let value = if let Some(v) = &var.value {
            expand(v, &vars)
        } else if let Some(from) = &var.value_from {
            if let Some(f) = &from.field_ref {
                field_value(pod, &f.field_path, ip).ok_or_else(|| {
                    format!("env {}: no value for fieldPath {}", var.name, f.field_path)
                })?
            } else if let Some(r) = &from.config_map_key_ref {
                match key_of(sources, false, &r.name, &r.key, r.optional.unwrap_or(false)).await? {
                    Some(v) => v,
                    None => continue,
                }
            } else if let Some(r) = &from.secret_key_ref {
                match key_of(sources, true, &r.name, &r.key, r.optional.unwrap_or(false)).await? {
                    Some(v) => v,
                    None => continue,
                }
            } else {
                // resourceFieldRef: no limits are enforced here.
                "0".to_owned()
            }
        } else {
            String::new()
        };
        vars.insert(var.name.clone(), value);
    }
    Ok(vars)
}

async fn key_of(
    sources: &Sources<'_>,
    secret: bool,
    name: &str,
    key: &str,
    optional: bool,
) -> Result<Option<String>, String> {
    let data = sources.required(secret, name, optional).await?;
    match data.get(key) {
        Some(v) => Ok(Some(String::from_utf8_lossy(v).into_owned())),
        None if optional => Ok(None),
        None => Err(format!(
            "couldn't find key {key} in {} {}/{name}",
            if secret { "Secret" } else { "ConfigMap" },
            sources.namespace
        )),
    }
}

/// A process has no mount namespace: an argument naming a file under one of the container's
/// mount paths (`/etc/guest-kubeconfig/kubeconfig`, or `--flag=` followed by such a path) is
/// rebased under the pod's folder, where [`write_volumes`] put the volume.
fn rebase_mounted_paths(args: Vec<String>, container: &Container, root: &Path) -> Vec<String> {
    let mounts: Vec<&str> = container
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| m.mount_path.trim_end_matches('/'))
        .filter(|p| p.starts_with('/') && p.len() > 1)
        .collect();
    let rebase = |path: &str| -> Option<String> {
        mounts
            .iter()
            .any(|m| path == *m || path.starts_with(&format!("{m}/")))
            .then(|| {
                root.join(path.trim_start_matches('/'))
                    .display()
                    .to_string()
            })
    };
    args.into_iter()
        .map(|arg| {
            if let Some(rebased) = rebase(&arg) {
                return rebased;
            }
            match arg.split_once('=') {
                Some((flag, path)) if flag.starts_with('-') => match rebase(path) {
                    Some(rebased) => format!("{flag}={rebased}"),
                    None => arg,
                },
                _ => arg,
            }
        })
        .collect()
}

/// Writes the container's mounted volumes under `root` + mountPath.
async fn write_volumes(
    sources: &Sources<'_>,
    pod: &Pod,
    container: &Container,
    root: &Path,
    token: &str,
    ca_pem: &str,
) -> Result<(), String> {
    let volumes = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.clone())
        .unwrap_or_default();
    for mount in container.volume_mounts.iter().flatten() {
        let Some(volume) = volumes.iter().find(|v| v.name == mount.name) else {
            continue;
        };
        let target = root.join(mount.mount_path.trim_start_matches('/'));
        let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        if let Some(s) = &volume.secret {
            let data = sources
                .required(
                    true,
                    s.secret_name.as_deref().unwrap_or_default(),
                    s.optional.unwrap_or(false),
                )
                .await?;
            files.extend(select(data, s.items.as_deref()));
        } else if let Some(c) = &volume.config_map {
            let data = sources
                .required(false, &c.name, c.optional.unwrap_or(false))
                .await?;
            files.extend(select(data, c.items.as_deref()));
        } else if let Some(p) = &volume.projected {
            for source in p.sources.iter().flatten() {
                if let Some(t) = &source.service_account_token {
                    files.insert(t.path.clone(), token.as_bytes().to_vec());
                } else if let Some(c) = &source.config_map {
                    // kube-root-ca.crt is the plane's CA; read it from the API all the same.
                    let data = sources
                        .required(false, &c.name, c.optional.unwrap_or(false))
                        .await?;
                    files.extend(select(data, c.items.as_deref()));
                } else if let Some(s) = &source.secret {
                    let data = sources
                        .required(true, &s.name, s.optional.unwrap_or(false))
                        .await?;
                    files.extend(select(data, s.items.as_deref()));
                } else if let Some(d) = &source.downward_api {
                    for item in d.items.iter().flatten() {
                        if let Some(f) = &item.field_ref {
                            let v = field_value(pod, &f.field_path, "").unwrap_or_default();
                            files.insert(item.path.clone(), v.into_bytes());
                        }
                    }
                }
            }
        }
        let _ = ca_pem;
        std::fs::create_dir_all(&target).map_err(|e| format!("{}: {e}", target.display()))?;
        for (path, bytes) in files {
            let file = target.join(&path);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            std::fs::write(&file, bytes).map_err(|e| format!("{}: {e}", file.display()))?;
        }
    }
    Ok(())
}

/// The files a volume's `items` select (all keys when it has none).
fn select(
    data: BTreeMap<String, Vec<u8>>,
    items: Option<&[k8s_openapi::api::core::v1::KeyToPath]>,
) -> BTreeMap<String, Vec<u8>> {
    match items {
        None | Some([]) => data,
        Some(items) => items
            .iter()
            .filter_map(|i| Some((i.path.clone(), data.get(&i.key)?.clone())))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_under_a_mount_path_are_rebased_into_the_pod_folder() {
        let container: Container = serde_json::from_value(json!({
            "name": "c",
            "volumeMounts": [
                {"name": "guest", "mountPath": "/etc/guest-kubeconfig"},
                {"name": "cert", "mountPath": "/var/run/secrets/serving-cert/"},
            ],
        }))
        .expect("container");
        let args = [
            "--guest-kubeconfig=/etc/guest-kubeconfig/kubeconfig",
            "/var/run/secrets/serving-cert/tls.crt",
            "--other=/etc/guest-kubeconfig-not-a-mount/x",
            "--v=2",
            "start",
        ]
        .map(String::from)
        .to_vec();
        let got = rebase_mounted_paths(args, &container, Path::new("/pods/ns_p"));
        assert_eq!(
            got,
            [
                "--guest-kubeconfig=/pods/ns_p/etc/guest-kubeconfig/kubeconfig",
                "/pods/ns_p/var/run/secrets/serving-cert/tls.crt",
                "--other=/etc/guest-kubeconfig-not-a-mount/x",
                "--v=2",
                "start",
            ]
        );
    }

    #[test]
    fn items_select_keys_and_rename_them() {
        let data = BTreeMap::from([
            ("a".to_owned(), b"1".to_vec()),
            ("b".to_owned(), b"2".to_vec()),
        ]);
        let items = [k8s_openapi::api::core::v1::KeyToPath {
            key: "b".into(),
            path: "dir/b.txt".into(),
            mode: None,
        }];
        let picked = select(data.clone(), Some(&items));
        assert_eq!(picked.keys().collect::<Vec<_>>(), ["dir/b.txt"]);
        assert_eq!(select(data, None).len(), 2);
    }

    #[test]
    fn the_downward_api_reads_labels_and_refuses_unknown_paths() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "n", "labels": {"app": "a"}},
            "spec": {"containers": [], "nodeName": "master-0"},
        }))
        .unwrap();
        assert_eq!(
            field_value(&pod, "metadata.labels['app']", "1").as_deref(),
            Some("a")
        );
        assert_eq!(
            field_value(&pod, "spec.nodeName", "1").as_deref(),
            Some("master-0")
        );
        assert_eq!(
            field_value(&pod, "status.podIP", "10.0.0.1").as_deref(),
            Some("10.0.0.1")
        );
        assert_eq!(field_value(&pod, "metadata.labels['none']", "1"), None);
        assert_eq!(field_value(&pod, "spec.unknown", "1"), None);
    }
}
