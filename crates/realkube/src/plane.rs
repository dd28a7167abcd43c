//! One control plane: etcd, kube-apiserver and, when asked, kube-controller-manager and
//! kube-scheduler, as child processes of the test on loopback ports, in a directory of its own.
//! Dropping the [`ControlPlane`] ends every process by its own pid and removes its directories;
//! each process also gets SIGKILL when the test process dies (`setpriv --pdeathsig`), so a
//! killed test leaves nothing running.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

use crate::binaries::{Binaries, BinaryError};
use crate::{ADMIN_USER, KUBELET_USER, certs, openshift};

/// Which API the plane serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `--openshift-config`: OpenShift's admission chain (SCC admission, restricted Pod Security
    /// by default), OpenShift's CRDs and default SCCs installed, namespaces annotated as
    /// cluster-policy-controller annotates them.
    OpenShift,
    /// Plain Kubernetes: no OpenShift API at all.
    Kubernetes,
}

/// How to start a plane.
#[derive(Debug, Clone)]
pub struct Options {
    pub mode: Mode,
    /// Run kube-controller-manager (ReplicaSets, DaemonSet pods, garbage collection, namespace
    /// deletion, ServiceAccounts and their CA ConfigMap).
    pub controller_manager: bool,
    /// Run kube-scheduler.
    pub scheduler: bool,
    /// More users in the static token file, with their groups (their token is
    /// [`ControlPlane::token_for`]).
    pub users: Vec<(String, Vec<String>)>,
    /// CRD manifests to install beside the mode's own (OpenShift mode installs the CRDs in
    /// `../shared/realkube/crds`).
    pub crds: Vec<PathBuf>,
}

impl Options {
    /// A whole plane (controller-manager and scheduler) in `mode`.
    pub fn full(mode: Mode) -> Self {
        Self {
            mode,
            controller_manager: true,
            scheduler: true,
            users: Vec::new(),
            crds: Vec::new(),
        }
    }

    /// The API server and etcd alone.
    pub fn api_only(mode: Mode) -> Self {
        Self {
            controller_manager: false,
            scheduler: false,
            ..Self::full(mode)
        }
    }
}

/// Why a plane did not come up.
#[derive(Debug, thiserror::Error)]
pub enum PlaneError {
    #[error(transparent)]
    Binaries(#[from] BinaryError),
    #[error("cannot prepare the plane's directory {dir}: {reason}")]
    Prepare { dir: PathBuf, reason: String },
    #[error("cannot start {name} ({path}): {reason}")]
    Spawn {
        name: &'static str,
        path: PathBuf,
        reason: String,
    },
    #[error("{name} exited with {status} before the plane was ready; its log:\n{log}")]
    Exited {
        name: &'static str,
        status: String,
        log: String,
    },
    #[error("the API server was not ready within {0:?}; its log:\n{1}")]
    NotReady(Duration, String),
    #[error("client: {0}")]
    Client(String),
    #[error("seeding the plane: {0}")]
    Seed(String),
}

/// A running control plane. Drop ends it.
pub struct ControlPlane {
    mode: Mode,
    dir: PathBuf,
    etcd_data: PathBuf,
    processes: Vec<(&'static str, Child)>,
    url: String,
    ca_pem: String,
    tokens: BTreeMap<String, String>,
    started: Instant,
    binaries: Binaries,
    background: Vec<tokio::task::JoinHandle<()>>,
}

static PLANES: AtomicU32 = AtomicU32::new(0);

/// How long the API server may take to answer `/readyz` (about 3 s on an idle machine; the
/// test suite runs many processes on 2 cores).
const READY_DEADLINE: Duration = Duration::from_secs(120);

impl ControlPlane {
    /// Starts a plane and waits until its API server is ready and, in OpenShift mode, seeded.
    pub async fn start(options: Options) -> Result<Self, PlaneError> {
        let binaries = Binaries::find()?;
        let n = PLANES.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}-{n}", std::process::id());
        let dir = std::env::temp_dir().join(format!("realkube-{id}"));
        // etcd on tmpfs: fsync on a disk would make every write of the tests slow.
        let shm = Path::new("/dev/shm");
        let etcd_data =
            if shm.is_dir() { shm } else { dir.as_path() }.join(format!("realkube-etcd-{id}"));
        let prepare = |reason: String| PlaneError::Prepare {
            dir: dir.clone(),
            reason,
        };
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| prepare(e.to_string()))?;
        let certs = certs::write(&dir).map_err(prepare)?;

        let mut users = vec![
            (ADMIN_USER.to_owned(), vec!["system:masters".to_owned()]),
            (KUBELET_USER.to_owned(), vec!["system:masters".to_owned()]),
        ];
        users.extend(options.users.iter().cloned());
        let tokens: BTreeMap<String, String> = users
            .iter()
            .map(|(u, _)| (u.clone(), format!("{u}-{id}-{}", nonce())))
            .collect();
        let token_file: String = users
            .iter()
            .enumerate()
            .map(|(i, (u, groups))| {
                format!("{},{u},{},\"{}\"\n", tokens[u], 1000 + i, groups.join(","))
            })
            .collect();
        std::fs::write(dir.join("tokens.csv"), token_file).map_err(|e| prepare(e.to_string()))?;
        std::fs::write(dir.join("audit-policy.yaml"), AUDIT_POLICY)
            .map_err(|e| prepare(e.to_string()))?;

        let mut plane = Self {
            mode: options.mode,
            dir: dir.clone(),
            etcd_data: etcd_data.clone(),
            processes: Vec::new(),
            url: String::new(),
            ca_pem: certs.ca_pem,
            tokens,
            started: Instant::now(),
            binaries: binaries.clone(),
            background: Vec::new(),
        };

        let etcd_port = free_port();
        let peer_port = free_port();
        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        plane.spawn(
            "etcd",
            &binaries.etcd,
            &[
                "--name=realkube".into(),
                format!("--data-dir={}", etcd_data.display()),
                format!("--listen-client-urls={etcd_url}"),
                format!("--advertise-client-urls={etcd_url}"),
                format!("--listen-peer-urls={peer_url}"),
                format!("--initial-advertise-peer-urls={peer_url}"),
                format!("--initial-cluster=realkube={peer_url}"),
                "--log-level=warn".into(),
                // No fsync: the data lives on tmpfs for one test.
                "--unsafe-no-fsync".into(),
            ],
        )?;

        let port = free_port();
        plane.url = format!("https://127.0.0.1:{port}");
        let args = match options.mode {
            Mode::OpenShift => {
                let config = openshift::api_server_config(&dir, &etcd_url, port);
                let path = dir.join("openshift-config.yaml");
                std::fs::write(&path, config.to_string()).map_err(|e| prepare(e.to_string()))?;
                vec![
                    format!("--openshift-config={}", path.display()),
                    "-v=1".into(),
                ]
            }
            Mode::Kubernetes => {
                std::fs::write(dir.join("admission.yaml"), POD_SECURITY_RESTRICTED)
                    .map_err(|e| prepare(e.to_string()))?;
                kubernetes_flags(&dir, &etcd_url, port)
            }
        };
        plane.spawn("kube-apiserver", &binaries.kube_apiserver, &args)?;
        plane.wait_ready().await?;

        let admin = plane.admin_kubeconfig_path();
        if options.controller_manager {
            let kc = admin.display().to_string();
            plane.spawn(
                "kube-controller-manager",
                &binaries.kube_controller_manager,
                &[
                    format!("--kubeconfig={kc}"),
                    format!("--authentication-kubeconfig={kc}"),
                    format!("--authorization-kubeconfig={kc}"),
                    format!("--service-account-private-key-file={}", dir.join("sa.key").display()),
                    format!("--root-ca-file={}", dir.join("ca.crt").display()),
                    // Each controller acts as its own ServiceAccount, as OpenShift's
                    // controller-manager does: with the admin's credentials every pod the
                    // ReplicaSet and DaemonSet controllers create would pass SCC admission
                    // (the admin may use every SCC), and a missing SCC binding of ours with it.
                    "--use-service-account-credentials=true".into(),
                    "--leader-elect=false".into(),
                    // No cloud, no node IPAM, and the kubelet stand-in keeps its Nodes Ready
                    // itself: the node lifecycle controller would taint them otherwise.
                    "--controllers=*,-nodeipam,-nodelifecycle,-service-lb-controller,-route,-cloud-node-lifecycle".into(),
                    "--secure-port=0".into(),
                    "-v=1".into(),
                ],
            )?;
        }
        if options.scheduler {
            let kc = admin.display().to_string();
            plane.spawn(
                "kube-scheduler",
                &binaries.kube_scheduler,
                &[
                    format!("--kubeconfig={kc}"),
                    format!("--authentication-kubeconfig={kc}"),
                    format!("--authorization-kubeconfig={kc}"),
                    "--leader-elect=false".into(),
                    "--secure-port=0".into(),
                    "-v=1".into(),
                ],
            )?;
        }
        let client = plane.admin_client().await?;
        let mut crds = options.crds.clone();
        if options.mode == Mode::OpenShift {
            crds.extend(openshift::crd_files().map_err(PlaneError::Seed)?);
        }
        crate::apply::crds(&client, &crds)
            .await
            .map_err(|e| PlaneError::Seed(e.to_string()))?;
        if options.mode == Mode::OpenShift {
            openshift::seed(&client).await.map_err(PlaneError::Seed)?;
            plane
                .background
                .push(tokio::spawn(openshift::annotate_namespaces(client)));
        }
        Ok(plane)
    }

    /// Starts one process of the plane, in its own log file.
    fn spawn(
        &mut self,
        name: &'static str,
        path: &Path,
        args: &[String],
    ) -> Result<(), PlaneError> {
        let log = std::fs::File::create(self.dir.join(format!("{name}.log"))).map_err(|e| {
            PlaneError::Spawn {
                name,
                path: path.to_owned(),
                reason: e.to_string(),
            }
        })?;
        let err = log.try_clone().map_err(|e| PlaneError::Spawn {
            name,
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        let mut cmd = with_parent_death_signal(path);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .env_remove("KUBECONFIG");
        let child = cmd.spawn().map_err(|e| PlaneError::Spawn {
            name,
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        self.processes.push((name, child));
        Ok(())
    }

    /// Polls `/readyz` until the API server answers 200, failing at once when a process exits.
    async fn wait_ready(&mut self) -> Result<(), PlaneError> {
        let client = self.admin_client().await?;
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            self.check_alive()?;
            let request = http::Request::get("/readyz")
                .body(Vec::new())
                .map_err(|e| PlaneError::Client(e.to_string()))?;
            if client.request_text(request).await.is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(PlaneError::NotReady(
                    READY_DEADLINE,
                    self.log_tail("kube-apiserver", 40),
                ));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// An error naming the first process of the plane that has exited.
    pub fn check_alive(&mut self) -> Result<(), PlaneError> {
        let mut exited = None;
        for (name, child) in &mut self.processes {
            if let Ok(Some(status)) = child.try_wait() {
                exited = Some((*name, status.to_string()));
                break;
            }
        }
        match exited {
            Some((name, status)) => Err(PlaneError::Exited {
                name,
                status,
                log: self.log_tail(name, 40),
            }),
            None => Ok(()),
        }
    }

    /// The last `lines` lines of a process's log.
    pub fn log_tail(&self, name: &str, lines: usize) -> String {
        let text =
            std::fs::read_to_string(self.dir.join(format!("{name}.log"))).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The CA that signed the serving certificate.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The plane's own directory (certificates, logs, audit log, kubeconfigs).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The binaries it runs (the cluster version operator among them).
    pub fn binaries(&self) -> &Binaries {
        &self.binaries
    }

    /// When the plane was started (audit times are counted from here).
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The static token of a user of [`Options::users`] (or [`ADMIN_USER`], [`KUBELET_USER`]).
    pub fn token_for(&self, user: &str) -> Option<&str> {
        self.tokens.get(user).map(String::as_str)
    }

    /// A kubeconfig for `token`, with the CA embedded.
    pub fn kubeconfig_yaml(&self, token: &str) -> String {
        kubeconfig_yaml(&self.url, &self.ca_pem, token)
    }

    /// The admin's kubeconfig, written once into the plane's directory.
    pub fn admin_kubeconfig_path(&self) -> PathBuf {
        let path = self.dir.join("admin.kubeconfig");
        if !path.exists() {
            let _ = std::fs::write(&path, self.kubeconfig_yaml(&self.tokens[ADMIN_USER]));
        }
        path
    }

    /// A client authenticated as the admin (system:masters).
    pub async fn admin_client(&self) -> Result<Client, PlaneError> {
        self.client_for_token(&self.tokens[ADMIN_USER]).await
    }

    /// A client authenticated by `token`.
    pub async fn client_for_token(&self, token: &str) -> Result<Client, PlaneError> {
        client(&self.kubeconfig_yaml(token)).await
    }

    /// A TokenRequest token of a ServiceAccount (one hour), so a client acting as it is
    /// authorized by the API server's own RBAC.
    pub async fn service_account_token(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<String, PlaneError> {
        let client = self.admin_client().await?;
        token_request(&client, namespace, name, None)
            .await
            .map_err(|e| PlaneError::Client(e.to_string()))
    }

    /// A client acting as a ServiceAccount with a TokenRequest token.
    pub async fn service_account_client(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Client, PlaneError> {
        let token = self.service_account_token(namespace, name).await?;
        self.client_for_token(&token).await
    }

    /// The audit log so far, as requests in kube-sim's request-log shape.
    pub fn requests(&self) -> Vec<kube_sim::RequestRecord> {
        crate::audit::read(&self.dir.join("audit.log"), self.started)
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        for task in &self.background {
            task.abort();
        }
        for (_, child) in self.processes.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.etcd_data);
        if std::env::var_os("REALKUBE_KEEP").is_some() {
            eprintln!("realkube: kept {}", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `path` run so that it gets SIGKILL when the test process dies.
pub(crate) fn with_parent_death_signal(path: &Path) -> Command {
    let setpriv = Path::new("/usr/bin/setpriv");
    if setpriv.is_file() {
        let mut cmd = Command::new(setpriv);
        cmd.arg("--pdeathsig=KILL").arg("--").arg(path);
        cmd
    } else {
        Command::new(path)
    }
}

/// A kubeconfig for `token` at `url`.
pub(crate) fn kubeconfig_yaml(url: &str, ca_pem: &str, token: &str) -> String {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "realkube", "cluster": {"server": url, "certificate-authority-data": ca}}],
        "users": [{"name": "user", "user": {"token": token}}],
        "contexts": [{"name": "realkube", "context": {"cluster": "realkube", "user": "user"}}],
        "current-context": "realkube",
    })
    .to_string()
}

/// A client from a kubeconfig.
pub(crate) async fn client(kubeconfig: &str) -> Result<Client, PlaneError> {
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let kc = Kubeconfig::from_yaml(kubeconfig).map_err(|e| PlaneError::Client(e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|e| PlaneError::Client(e.to_string()))?;
    Client::try_from(config).map_err(|e| PlaneError::Client(e.to_string()))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

fn nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

/// Writes are logged when they complete, watches when they start (a watch never completes
/// while the plane runs), nothing of discovery or health checks.
const AUDIT_POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version", "/openapi*", "/api", "/apis", "/api/*", "/apis/*"]
- level: Metadata
  verbs: ["watch"]
  omitStages: ["RequestReceived", "ResponseComplete"]
- level: Metadata
  omitStages: ["RequestReceived", "ResponseStarted"]
"#;

/// Pod Security enforced `restricted` by default, as a hardened cluster runs it (and as
/// OpenShift does): a namespace that needs more must say so with its labels, so a manifest that
/// forgets them is refused here.
const POD_SECURITY_RESTRICTED: &str = r#"apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: restricted
      enforce-version: latest
      warn: restricted
      warn-version: latest
      audit: restricted
      audit-version: latest
    exemptions:
      namespaces: [kube-system]
"#;

/// The API server's flags on plain Kubernetes.
fn kubernetes_flags(dir: &Path, etcd_url: &str, port: u16) -> Vec<String> {
    let d = dir.display();
    let mut flags = vec![
        format!("--etcd-servers={etcd_url}"),
        format!("--secure-port={port}"),
        "--bind-address=127.0.0.1".into(),
        "--advertise-address=127.0.0.1".into(),
        format!("--tls-cert-file={d}/server.crt"),
        format!("--tls-private-key-file={d}/server.key"),
        format!("--client-ca-file={d}/ca.crt"),
        format!("--token-auth-file={d}/tokens.csv"),
        "--authorization-mode=Node,RBAC".into(),
        "--anonymous-auth=false".into(),
        format!("--service-account-key-file={d}/sa.pub"),
        format!("--service-account-signing-key-file={d}/sa.key"),
        "--service-cluster-ip-range=10.96.0.0/16".into(),
        "--allow-privileged=true".into(),
        "--endpoint-reconciler-type=none".into(),
        "--shutdown-delay-duration=0s".into(),
        format!("--admission-control-config-file={d}/admission.yaml"),
        "-v=1".into(),
    ];
    flags.extend(
        crate::flags::common_flags(dir)
            .into_iter()
            .map(|(k, v)| format!("--{k}={v}")),
    );
    flags
}

/// A TokenRequest token (one hour) of a ServiceAccount, bound to `bound` when given.
pub async fn token_request(
    client: &Client,
    namespace: &str,
    name: &str,
    bound: Option<BoundObjectReference>,
) -> Result<String, kube::Error> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let request = TokenRequest {
        metadata: ObjectMeta::default(),
        spec: TokenRequestSpec {
            audiences: vec!["https://kubernetes.default.svc".into()],
            bound_object_ref: bound,
            expiration_seconds: Some(3600),
        },
        status: None,
    };
    let answer = api
        .create_token_request(name, &PostParams::default(), &request)
        .await?;
    Ok(answer.status.map(|s| s.token).unwrap_or_default())
}
