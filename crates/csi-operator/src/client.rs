//! Building the kube-rs client the way every subcommand needs it: from `--kubeconfig` when
//! given, else from the environment (in-cluster service account or `KUBECONFIG`).

use std::path::Path;

use anyhow::Context;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use operator_kit::cache::CacheBuilder;
use operator_kit::clusters::Clients;
use operator_kit::csi::{CommonOptions, CsiOperator, DriverOptions};

/// Installs the process-wide TLS provider (kube-rs and reqwest share one; without it the
/// first TLS connection panics).
pub fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

pub async fn client(kubeconfig: Option<&Path>) -> anyhow::Result<Client> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path).with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("kubeconfig {} is not usable", path.display()))?
        }
        None => Config::infer().await.context("no kubeconfig given and none found in the environment (KUBECONFIG, ~/.kube/config, in-cluster)")?,
    };
    // Deadlines on every request, and Retry-After honoured (operator_kit::client_config).
    operator_kit::client_config::client(without_client_retries(config))
        .context("cannot build a Kubernetes client")
}

/// How long the start-up read of `Infrastructure/cluster` may take before the default lease
/// timing is used: a stalled API server must not keep a starting operator from answering
/// SIGTERM or from campaigning.
const STARTUP_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// kube-rs retries 429/503/504 up to 15 times with back-off up to 1000 s by default, so one
/// apply could hang for hours behind a struggling API server. Every operator call already sits
/// in a reconcile that is retried with capped back-off (and fenced by leadership and a
/// deadline), and lease calls have their own timeouts, so the client itself does not retry.
fn without_client_retries(mut config: Config) -> Config {
    config.default_retry = false;
    config
}

/// The operator's own lease timing: SingleReplica control planes get the longer lease
/// (anchors §4.1); anything unreadable (plain Kubernetes has no Infrastructure) keeps the
/// default. `client` is the guest's: a hosted control plane's topology is the guest's
/// Infrastructure (`External`), and its operators may not read the management cluster's.
pub async fn leader_timing(client: &Client) -> operator_kit::leader_timing::LeaderTiming {
    use operator_kit::leader_timing::LeaderTiming;
    let api: kube::Api<openshift_api::config::Infrastructure> = kube::Api::all(client.clone());
    match tokio::time::timeout(STARTUP_READ_TIMEOUT, api.get_opt("cluster")).await {
        Ok(Ok(Some(infra))) => LeaderTiming::for_control_plane(
            &operator_kit::hooks::TopologyMode::parse(infra.control_plane_topology().as_str()),
        ),
        _ => LeaderTiming::DEFAULT,
    }
}

/// The crates of this binary whose log verbosity follows the operator's level (`-v`, then
/// the CR's `operatorLogLevel`); libraries such as kube and hyper stay quieter.
pub const LOG_TARGETS: &[&str] = &[
    "csi_operator",
    "cluster_storage",
    "cinder",
    "manila",
    "smb",
    "openstack",
];

/// The flags every operator process shares (`openstack-cinder start`, `openstack-manila start`,
/// `cluster-storage start`).
#[derive(clap::Args)]
pub struct ProcessFlags {
    /// Kubeconfig to use; in a pod, leave it out to use the service account.
    #[arg(long)]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// The replica's identity in the lease (defaults to the pod name).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// Reconcile at least this often even when nothing changes.
    #[arg(long, default_value = "1m", value_parser = crate::duration::parse_duration)]
    pub resync: std::time::Duration,
    /// Initial klog verbosity of the operator (its CR's operatorLogLevel takes over).
    #[arg(short = 'v', long = "v", default_value_t = 2)]
    pub verbosity: u8,
    /// How log lines are written to stderr: `text` (coloured only on a terminal) or `json`
    /// (one klog-compatible object per line: ts, caller, msg, v or err, then the line's pairs).
    #[arg(long, default_value = "text", value_parser = operator_kit::log_format::LogFormat::parse)]
    pub log_format: operator_kit::log_format::LogFormat,
    /// Serve a hosted control plane (HyperShift): the kubeconfig of the guest cluster. The
    /// operator then runs in the management cluster's control-plane namespace (`--namespace`),
    /// which keeps its lease and the driver's controller; the ClusterCSIDriver and the node
    /// side are the guest's (docs/hypershift.md).
    #[arg(long, value_name = "PATH")]
    pub guest_kubeconfig: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub metrics: crate::flags::MetricsFlags,
    #[command(flatten)]
    pub leader_election: crate::flags::LeaderElectionFlags,
}

/// The clients of an operator process: the client of the cluster it runs in (its lease,
/// Events and control-plane objects), the routed [`Clients`](operator_kit::clusters::Clients),
/// and, with `--guest-kubeconfig`, the hosted environment (`RUN_AS_USER` checked here, so a
/// bad value stops the start with its message).
pub struct ProcessClients {
    pub own: Client,
    pub clients: operator_kit::clusters::Clients,
    pub hosted: Option<operator_kit::hosted::Hosted>,
}

impl ProcessFlags {
    /// Builds the clients; `control_plane_namespace` is the operator's namespace.
    pub async fn clients(&self, control_plane_namespace: &str) -> anyhow::Result<ProcessClients> {
        let own = client(self.kubeconfig.as_deref()).await?;
        let Some(guest_path) = &self.guest_kubeconfig else {
            return Ok(ProcessClients {
                clients: own.clone().into(),
                own,
                hosted: None,
            });
        };
        let guest = client(Some(guest_path))
            .await
            .context("--guest-kubeconfig")?;
        // The control plane itself is read from its HostedControlPlane on every reconcile.
        let hosted = operator_kit::hosted::Hosted::from_env(
            operator_kit::hosted::HostedControlPlane {
                namespace: control_plane_namespace.to_string(),
                ..Default::default()
            },
            |name| std::env::var(name).ok(),
        )
        .map_err(anyhow::Error::msg)?;
        Ok(ProcessClients {
            clients: operator_kit::clusters::Clients::hosted(
                own.clone(),
                control_plane_namespace,
                guest,
            ),
            own,
            hosted: Some(hosted),
        })
    }
}

/// The source commit for `<prefix>_build_info`: the one `--version` prints, or `unknown` when
/// the build did not record it (build.rs).
pub fn revision() -> &'static str {
    let commit = env!("CSI_OPERATOR_GIT_COMMIT");
    if commit.starts_with("unknown") {
        "unknown"
    } else {
        commit
    }
}

/// What tells one operator process from another, besides its options.
pub struct Names {
    /// The lease name.
    pub lock_name: &'static str,
    /// The component name (its user agent), for the default identity.
    pub component: &'static str,
    /// The prefix of its metrics (`<prefix>_build_info`, ...).
    pub metrics_prefix: &'static str,
}

impl Names {
    /// A driver operator's names, as its spec declares them.
    pub const fn of(spec: &operator_kit::spec::DriverSpec) -> Self {
        Self {
            lock_name: spec.lock_name,
            component: spec.user_agent,
            metrics_prefix: spec.metrics_prefix,
        }
    }
}

/// An operator subcommand's `start`, whatever the operator: the flags every process shares,
/// the namespace of its lease, where its metrics are served, and its names.
pub struct Shell {
    pub process: ProcessFlags,
    /// `--namespace`: the lease's (and, hosted, the control-plane namespace).
    pub namespace: String,
    pub metrics_listen: std::net::SocketAddr,
    pub names: Names,
}

impl Shell {
    pub fn new(
        process: ProcessFlags,
        namespace: &str,
        metrics_listen: std::net::SocketAddr,
        names: Names,
    ) -> Self {
        Self {
            process,
            namespace: namespace.to_string(),
            metrics_listen,
            names,
        }
    }

    /// Starts the operator: checks the leader-election flags, sets up logging and the clients,
    /// makes the options (`options`, given the guest's client and the hosted environment),
    /// starts the watches (`watches`) and the metrics, makes the operator (`operator`) and runs
    /// it with leader election until `shutdown` or a lost lease ([`run_operator`]).
    pub async fn start<O, E, R>(
        self,
        options: impl AsyncFnOnce(&Client, Option<operator_kit::hosted::Hosted>) -> anyhow::Result<O>,
        watches: impl FnOnce(
            operator_kit::clusters::Clients,
            &O,
        ) -> Result<operator_kit::cache::CacheBuilder, E>,
        operator: impl FnOnce(
            operator_kit::clusters::Clients,
            O,
            operator_kit::cache::Cache,
            std::sync::Arc<operator_kit::metrics::Metrics>,
            operator_kit::logging::LogControl,
        ) -> R,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()>
    where
        E: std::error::Error + Send + Sync + 'static,
        R: operator_kit::process::Reconciler,
    {
        let Shell {
            process,
            namespace,
            metrics_listen,
            names,
        } = self;
        process.leader_election.check()?;
        let log = operator_kit::logging::LogControl::init_with(
            process.verbosity,
            process.log_format,
            LOG_TARGETS,
        );
        let ProcessClients {
            own,
            clients,
            hosted,
        } = process.clients(&namespace).await?;
        let client = clients.guest().clone();
        let opts = options(&client, hosted).await?;
        let cache = watches(clients.clone(), &opts)
            .context("cannot prepare the watches")?
            .start();
        let metrics = operator_kit::metrics::Metrics::new(names.metrics_prefix);
        let op = operator(clients, opts, cache.clone(), metrics.clone(), log);
        let launch = Launch {
            namespace,
            lock_name: names.lock_name,
            identity: process.identity,
            component: names.component,
            metrics_listen,
            endpoint: process.metrics.endpoint(),
            resync: process.resync,
            leader_election: process.leader_election,
        };
        run_operator(own, &client, launch, cache, metrics, op, shutdown).await
    }
}

impl Shell {
    /// Starts a driver operator: the kit's options from `flags` (its objects in
    /// `driver_namespace`, the images from the environment), the driver's own made by `own`
    /// from them, and the operator they describe ([`CsiOperator::from_options`]).
    pub async fn start_driver<O, E>(
        self,
        (flags, driver_namespace): (&crate::flags::DriverFlags, String),
        own: impl FnOnce(CommonOptions) -> O,
        watches: impl FnOnce(Clients, &O) -> Result<CacheBuilder, E>,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()>
    where
        O: DriverOptions,
        E: std::error::Error + Send + Sync + 'static,
        CsiOperator<O::Driver>: operator_kit::process::Reconciler,
    {
        let namespaces = (self.namespace.clone(), driver_namespace);
        let options = async |client: &Client, hosted| {
            let images = O::images_from_env();
            Ok(own(flags.options(client, namespaces, images, hosted).await))
        };
        self.start(options, watches, CsiOperator::from_options, shutdown)
            .await
    }
}

/// What every operator subcommand passes to [`run_operator`].
pub struct Launch {
    /// Namespace of the lease.
    pub namespace: String,
    /// The lease name.
    pub lock_name: &'static str,
    /// `--identity`, else `<component>-<pid>`.
    pub identity: Option<String>,
    /// The component name for the default identity.
    pub component: &'static str,
    pub metrics_listen: std::net::SocketAddr,
    /// How the metrics endpoint is served (`ProcessFlags::metrics`).
    pub endpoint: operator_kit::process::EndpointOptions,
    pub resync: std::time::Duration,
    /// `--leader-elect-*` (`ProcessFlags::leader_election`).
    pub leader_election: crate::flags::LeaderElectionFlags,
}

/// Runs a reconciler as an operator process: the lease timing for the control-plane topology
/// (with the `--leader-elect-*` overrides), leader election, metrics and the loop, until
/// `shutdown` or a lost lease.
pub async fn run_operator<R: operator_kit::process::Reconciler>(
    client: Client,
    guest: &Client,
    launch: Launch,
    cache: operator_kit::cache::Cache,
    metrics: std::sync::Arc<operator_kit::metrics::Metrics>,
    reconciler: R,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    metrics.set_build_info(env!("CARGO_PKG_VERSION"), revision());
    // The flags given were checked at start (`LeaderElectionFlags::check`); a contradiction
    // with the topology's defaults fails here, before campaigning.
    let base = if launch.leader_election.is_complete() {
        operator_kit::leader_timing::LeaderTiming::DEFAULT
    } else {
        leader_timing(guest).await
    };
    let timing = launch.leader_election.resolve(base)?;
    let identity = launch
        .identity
        .unwrap_or_else(|| format!("{}-{}", launch.component, std::process::id()));
    let options = operator_kit::process::ProcessOptions {
        namespace: launch.namespace,
        lock_name: launch.lock_name.to_string(),
        identity,
        timing,
        metrics_addr: Some(launch.metrics_listen),
        endpoint: launch.endpoint,
        loop_options: operator_kit::runtime::LoopOptions {
            resync: launch.resync,
            ..operator_kit::runtime::LoopOptions::default()
        },
    };
    operator_kit::process::run(client, options, cache, metrics, reconciler, shutdown).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_clients_do_not_retry_by_themselves() {
        let config = Config::new("https://127.0.0.1:6443".parse().expect("uri"));
        assert!(config.default_retry, "kube-rs retries by default");
        assert!(!without_client_retries(config).default_retry);
    }
}
