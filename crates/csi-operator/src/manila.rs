//! `csi-operator openstack-manila start` and `csi-operator render openstack-manila`.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use manila::build::{self, Facts, FsGroupPolicy};
use manila::operator::{self, Operator, Options};
use operator_kit::logging::LogControl;
use operator_kit::loglevel::LogLevel;
use operator_kit::metrics::Metrics;
use operator_kit::observed_config::ServingInfo;

use crate::duration::parse_duration;

#[derive(clap::Args)]
pub struct StartArgs {
    #[command(flatten)]
    process: crate::client::ProcessFlags,
    /// Namespace of the operator: its lease and the openstack-cloud-credentials Secret.
    #[arg(long, default_value = manila::SPEC.operator_namespace)]
    namespace: String,
    /// Namespace of the driver's objects.
    #[arg(long, default_value = manila::SPEC.driver_namespace)]
    driver_namespace: String,
    /// How often to list Manila share types again (new share types get their StorageClass
    /// within one period; a credential change triggers a listing at once).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    share_type_refresh: Duration,
    /// Where to serve Prometheus metrics (`/metrics`) and `/healthz`.
    #[arg(long, default_value = "0.0.0.0:8081")]
    metrics_listen: SocketAddr,
    /// Cluster ID for `--cluster-id` when the cluster has no Infrastructure object.
    #[arg(long)]
    cluster_id: Option<String>,
    /// Create the ClusterCSIDriver (Managed) when it does not exist, as the Cluster Storage
    /// Operator does on OpenShift; for plain Kubernetes (manifests/kubernetes/ sets it).
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
    let log = LogControl::init_with(
        args.process.verbosity,
        args.process.log_format,
        crate::client::LOG_TARGETS,
    );
    let crate::client::ProcessClients {
        own,
        clients,
        hosted,
    } = args.process.clients(&args.namespace).await?;
    let client = clients.guest().clone();
    let opts = Options {
        operator_namespace: args.namespace.clone(),
        // Hosted, the driver's controller runs beside the operator in the control-plane
        // namespace; the node side keeps manila::DRIVER_NAMESPACE in the guest.
        namespace: if hosted.is_some() {
            args.namespace.clone()
        } else {
            args.driver_namespace.clone()
        },
        images: operator::images_from_env(),
        share_type_refresh: args.share_type_refresh,
        cluster_id: args.cluster_id.clone(),
        cert_manager: args.cert_manager.settings(&client).await,
        fs_group_policy: std::env::var(manila::FSGROUP_POLICY_ENV).ok(),
        hosted,
    };
    let cache = operator::watches(clients.clone(), &opts)
        .context("cannot prepare the watches")?
        .start();
    let metrics = Metrics::new(manila::SPEC.metrics_prefix);
    let op = Operator::new(clients, opts, cache.clone(), metrics.clone(), log)
        .create_cluster_csi_driver(args.create_cluster_csi_driver);
    let launch = crate::client::Launch {
        namespace: args.namespace,
        lock_name: manila::SPEC.lock_name,
        identity: args.process.identity,
        component: manila::SPEC.user_agent,
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
    #[arg(long, default_value = manila::SPEC.driver_namespace)]
    namespace: String,
    /// A Manila share type to make a StorageClass for; repeatable.
    #[arg(long = "share-type")]
    share_types: Vec<String>,
    /// The cluster ID (Infrastructure status.infrastructureName).
    #[arg(long, default_value = "cluster-id")]
    cluster_id: String,
    /// Control-plane topology: HighlyAvailable, SingleReplica, External, ...
    #[arg(long, default_value = "HighlyAvailable")]
    control_plane_topology: String,
    /// Operand log level: Normal, Debug, Trace, TraceAll.
    #[arg(long, default_value = "Normal")]
    log_level: String,
    /// The CSIDriver fsGroupPolicy (as CSI_FSGROUP_POLICY): None, File, ReadWriteOnceWithFSType.
    #[arg(long, env = "CSI_FSGROUP_POLICY", default_value = "None")]
    fs_group_policy: String,
    /// An image, as NAME=IMAGE (e.g. NFS_DRIVER_IMAGE=quay.io/...); repeatable. Images not
    /// given are taken from the environment variables of the same names, else are the
    /// upstream releases that manifests/kubernetes/ uses.
    #[arg(long = "image", value_parser = crate::flags::parse_pair)]
    images: Vec<(String, String)>,
    /// Proxy settings as observed (HTTP_PROXY=..., HTTPS_PROXY=..., NO_PROXY=...); repeatable.
    #[arg(long = "proxy", value_parser = crate::flags::parse_pair)]
    proxy: Vec<(String, String)>,
    #[command(flatten)]
    hosted: crate::hosted_render::HostedArgs,
}

/// Prints every object the operator would apply once Manila offers these share types.
pub fn render(args: &RenderArgs) -> anyhow::Result<String> {
    // Images matter little to what `render` shows; without any, the upstream releases that
    // manifests/kubernetes/ uses, so the command works as the docs type it.
    let mut images = cluster_storage::kubernetes::upstream_operand_images(&manila::SPEC);
    images.extend(operator::images_from_env());
    images.extend(args.images.iter().cloned());
    let level = LogLevel::parse(&args.log_level);
    if let Some(bad) = level.unknown {
        anyhow::bail!("--log-level {bad:?} is not one of Normal, Debug, Trace, TraceAll");
    }
    if args.share_types.is_empty() {
        anyhow::bail!(
            "give at least one --share-type NAME: without share types the operator deploys nothing (Manila is disabled)"
        );
    }
    let hosted = args.hosted.hosted(&mut images)?;
    // Hosted, the control-plane objects go to the control-plane namespace and --namespace is
    // the guest's.
    let namespace = match &hosted {
        Some(h) => h.control_plane.namespace.clone(),
        None => args.namespace.clone(),
    };
    let facts = Facts {
        namespace,
        node_namespace: args.namespace.clone(),
        hosted,
        images,
        cluster_id: args.cluster_id.clone(),
        topology: crate::flags::topology(&args.control_plane_topology)?,
        log_level: level.level,
        proxy: args.proxy.iter().cloned().collect(),
        serving: ServingInfo::intermediate(),
        fs_group_policy: FsGroupPolicy::parse(Some(&args.fs_group_policy))?,
        ..Facts::default()
    };
    let (objects, errors) =
        build::everything(&facts, &args.share_types).context("cannot build the objects")?;
    let mut out = String::new();
    for e in errors {
        out.push_str(&format!("# {e}\n"));
    }
    out.push_str(&crate::flags::yaml_stream(&objects)?);
    Ok(out)
}
