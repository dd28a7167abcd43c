//! The loop that starts and stops processes, and the life of one pod: start, restart with
//! back-off, logs, termination.

use super::command::{
    ConfigError, PodFacts, Source, command_line, lookup_in, resolve_env, service_account,
};
use super::desired::{
    PodView, Want, decide, grace_period, next_backoff, pod_name, random_uid, want,
};
use super::state::{LocalProgram, Pod, ProcessState, containers, lock, text};
use super::{NODE_NAME, PASSED_THROUGH, TAIL_BYTES};
use crate::Shared;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::sync::watch;

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

pub(super) fn reconcile(shared: &Arc<Shared>) {
    let config = lock(&shared.processes.config).clone();
    let wants: Vec<Want> = match &config {
        None => Vec::new(),
        Some(config) => {
            let admission = shared.admission();
            let c = shared.lock();
            match c.resource("apps", "v1", "deployments") {
                Some(rt) => c
                    .store()
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
pub(super) struct Plan {
    pub(super) id: u64,
    pub(super) pod: PodFacts,
    pub(super) template: Value,
    pub(super) container: Value,
    pub(super) program: LocalProgram,
    pub(super) grace: Duration,
    pub(super) log: Option<PathBuf>,
    pub(super) tail: Arc<Mutex<Vec<u8>>>,
    pub(super) kubeconfig_dir: PathBuf,
}

/// A resolved start: arguments, environment and the kubeconfig to write.
pub(super) struct Start {
    pub(super) args: Vec<String>,
    pub(super) env: BTreeMap<String, String>,
    pub(super) kubeconfig_path: PathBuf,
    pub(super) kubeconfig: String,
}

impl Plan {
    /// Reads what the container references from the store and builds its start.
    pub(super) fn prepare(&self, shared: &Shared) -> Result<Start, ConfigError> {
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
    pub(super) fn note(&self, line: &str) {
        let line = format!("--- kube-sim: {line}\n");
        match &self.log {
            Some(path) => {
                let _ = append(path, line.as_bytes());
            }
            None => push_tail(&self.tail, line.as_bytes()),
        }
    }

    /// Writes the kubeconfig and starts the process.
    pub(super) fn spawn(&self, start: &Start) -> Result<Child, String> {
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
pub(super) async fn supervise(shared: Arc<Shared>, plan: Plan, mut stop: watch::Receiver<bool>) {
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
pub(super) async fn stopped(
    stop: &mut watch::Receiver<bool>,
    shutdown: &mut watch::Receiver<bool>,
) {
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

pub(super) fn describe(status: std::io::Result<ExitStatus>) -> String {
    match status {
        Ok(s) => s.to_string(),
        Err(e) => format!("unknown ({e})"),
    }
}

/// SIGTERM to the process group, SIGKILL after `grace`; returns how the process ended.
pub(super) async fn terminate(child: &mut Child, grace: Duration) -> std::io::Result<ExitStatus> {
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
pub(super) async fn signal_group(pgid: u32, signal: &str) -> bool {
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
pub(super) async fn collect(mut pipe: impl AsyncRead + Unpin, tail: Arc<Mutex<Vec<u8>>>) {
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => push_tail(&tail, buf.get(..n).unwrap_or_default()),
        }
    }
}

pub(super) fn push_tail(tail: &Mutex<Vec<u8>>, bytes: &[u8]) {
    let mut t = lock(tail);
    t.extend_from_slice(bytes);
    let excess = t.len().saturating_sub(TAIL_BYTES);
    t.drain(..excess);
}

pub(super) fn append(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
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
pub(super) fn write_atomically(path: &Path, content: &str, unique: &str) -> std::io::Result<()> {
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
