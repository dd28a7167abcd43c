//! `csi-operator smb start` and `csi-operator render smb`: the SMB CSI driver operator
//! (`smb.csi.k8s.io`), which the Cluster Storage Operator starts only when the administrator
//! opts in (`cluster-storage start --optional-driver smb`, docs/smb.md).

use std::net::SocketAddr;

use anyhow::Context;
use operator_kit::csi::BaseFacts;
use operator_kit::logging::LogControl;
use operator_kit::loglevel::LogLevel;
use operator_kit::metrics::Metrics;
use operator_kit::observed_config::ServingInfo;

/// The driver image `render smb` shows when none is given: csi-driver-smb's upstream release.
const UPSTREAM_DRIVER_IMAGE: &str = "registry.k8s.io/sig-storage/smbplugin:v1.17.0";

#[derive(clap::Args)]
pub struct StartArgs {
    #[command(flatten)]
    process: crate::client::ProcessFlags,
    /// Namespace of the operator and of the driver's objects.
    #[arg(long, default_value = smb::NAMESPACE)]
    namespace: String,
    /// Where to serve Prometheus metrics (`/metrics`) and `/healthz`.
    #[arg(long, default_value = "0.0.0.0:8081")]
    metrics_listen: SocketAddr,
    /// Cluster ID when the cluster has no Infrastructure object.
    #[arg(long)]
    cluster_id: Option<String>,
    /// Create the ClusterCSIDriver (Managed) when it does not exist, as the Cluster Storage
    /// Operator does on OpenShift; for plain Kubernetes.
    #[arg(long)]
    create_cluster_csi_driver: bool,
    #[command(flatten)]
    cert_manager: crate::flags::CertManagerFlags,
}

pub async fn start(
    args: StartArgs,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    args.process.leader_election.check()?;
    if args.process.guest_kubeconfig.is_some() {
        anyhow::bail!(
            "--guest-kubeconfig: the SMB driver runs on standalone clusters only, as OpenShift's (no hosted control plane)"
        );
    }
    let log = LogControl::init_with(
        args.process.verbosity,
        args.process.log_format,
        crate::client::LOG_TARGETS,
    );
    let crate::client::ProcessClients { own, clients, .. } =
        args.process.clients(&args.namespace).await?;
    let client = clients.guest().clone();
    let opts = smb::Options {
        namespace: args.namespace.clone(),
        images: operator_kit::csi::images_from_env(&smb::image_placeholders()),
        cluster_id: args.cluster_id.clone(),
        cert_manager: args.cert_manager.settings(&client).await,
    };
    let cache = smb::watches(clients.clone(), &opts)
        .context("cannot prepare the watches")?
        .start();
    let metrics = Metrics::new(smb::SPEC.metrics_prefix);
    let op = smb::operator(clients, opts, cache.clone(), metrics.clone(), log)
        .create_cluster_csi_driver(args.create_cluster_csi_driver);
    let launch = crate::client::Launch {
        namespace: args.namespace,
        lock_name: smb::SPEC.lock_name,
        identity: args.process.identity,
        component: smb::SPEC.user_agent,
        metrics_listen: args.metrics_listen,
        endpoint: args.process.metrics.endpoint(),
        resync: args.process.resync,
        leader_election: args.process.leader_election,
    };
    crate::client::run_operator(own, &client, launch, cache, metrics, op, shutdown).await
}

#[derive(clap::Args)]
pub struct RenderArgs {
    /// Namespace of the driver.
    #[arg(long, default_value = smb::NAMESPACE)]
    namespace: String,
    /// The cluster ID (Infrastructure status.infrastructureName).
    #[arg(long, default_value = "cluster-id")]
    cluster_id: String,
    /// Control-plane topology: HighlyAvailable, SingleReplica, External, ...
    #[arg(long, default_value = "HighlyAvailable")]
    control_plane_topology: String,
    /// Operand log level: Normal, Debug, Trace, TraceAll.
    #[arg(long, default_value = "Normal")]
    log_level: String,
    /// An image, as NAME=IMAGE (e.g. DRIVER_IMAGE=registry.example/smbplugin:v1); repeatable.
    /// Images not given are taken from the environment variables of the same names, else are
    /// the upstream releases.
    #[arg(long = "image", value_parser = crate::flags::parse_pair)]
    images: Vec<(String, String)>,
    /// Proxy settings as observed (HTTP_PROXY=..., NO_PROXY=...); repeatable.
    #[arg(long = "proxy", value_parser = crate::flags::parse_pair)]
    proxy: Vec<(String, String)>,
}

/// Prints every object the operator would apply.
pub fn render(args: &RenderArgs) -> anyhow::Result<String> {
    let mut images =
        cluster_storage::kubernetes::upstream_operand_images(&cluster_storage::registry::SMB);
    images.insert("DRIVER_IMAGE".into(), UPSTREAM_DRIVER_IMAGE.into());
    images.extend(operator_kit::csi::images_from_env(
        &smb::image_placeholders(),
    ));
    images.extend(args.images.iter().cloned());
    let level = LogLevel::parse(&args.log_level);
    if let Some(bad) = level.unknown {
        anyhow::bail!("--log-level {bad:?} is not one of Normal, Debug, Trace, TraceAll");
    }
    let facts = BaseFacts {
        namespace: args.namespace.clone(),
        node_namespace: args.namespace.clone(),
        images,
        cluster_id: args.cluster_id.clone(),
        topology: crate::flags::topology(&args.control_plane_topology)?,
        log_level: level.level,
        proxy: args.proxy.iter().cloned().collect(),
        serving: ServingInfo::intermediate(),
        ..BaseFacts::default()
    };
    let objects = smb::everything(&facts).context(
        "cannot build the objects; give every image with --image NAME=IMAGE (or the environment variable of the same name)",
    )?;
    crate::flags::yaml_stream(&objects)
}
