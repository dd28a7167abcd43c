//! `csi-operator cluster-storage start`: the Cluster Storage Operator process.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use cluster_storage::operator::{self, Operator, Options};
use operator_kit::logging::LogControl;
use operator_kit::metrics::Metrics;

use crate::duration::parse_duration;

#[derive(clap::Args)]
pub struct StartArgs {
    #[command(flatten)]
    process: crate::client::ProcessFlags,
    /// Namespace of the operator: its lease and its Events.
    #[arg(long, default_value = operator::OPERATOR_NAMESPACE)]
    namespace: String,
    /// Where to serve Prometheus metrics (`/metrics`) and `/healthz`.
    #[arg(long, default_value = "0.0.0.0:8443")]
    metrics_listen: SocketAddr,
    /// How long a Degraded condition must last before ClusterOperator/storage says Degraded.
    #[arg(long, default_value = "2m", value_parser = parse_duration, hide = true)]
    degraded_inertia: Duration,
    /// Also start this optional driver operator, on any platform; repeatable, or a
    /// comma-separated list in CSO_OPTIONAL_DRIVERS. The one optional driver is `smb`
    /// (smb.csi.k8s.io, docs/smb.md); it needs SMB_DRIVER_OPERATOR_IMAGE and SMB_DRIVER_IMAGE
    /// in the environment. None by default: OpenShift installs SMB through OLM.
    #[arg(
        long = "optional-driver",
        env = "CSO_OPTIONAL_DRIVERS",
        value_delimiter = ',',
        value_parser = optional_driver
    )]
    optional_drivers: Vec<&'static cluster_storage::registry::Driver>,
}

fn optional_driver(name: &str) -> Result<&'static cluster_storage::registry::Driver, String> {
    cluster_storage::registry::optional(name.trim())
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
    if hosted.is_some()
        && let Some(d) = args.optional_drivers.first()
    {
        anyhow::bail!(
            "--optional-driver {}: optional drivers run on standalone clusters only, not in a hosted control plane",
            d.name
        );
    }
    let opts = Options {
        namespace: args.namespace.clone(),
        env: operator::env_from_process(),
        degraded_inertia: args.degraded_inertia,
        hosted,
        optional_drivers: args.optional_drivers,
    };
    let cache = operator::watches(clients.clone(), &opts)
        .context("cannot prepare the watches")?
        .start();
    let metrics = Metrics::new("cluster_storage_operator");
    let guest = clients.guest().clone();
    let op = Operator::new(clients, opts, cache.clone(), metrics.clone(), log);
    let launch = crate::client::Launch {
        namespace: args.namespace,
        lock_name: operator::LOCK_NAME,
        identity: args.process.identity,
        component: operator::COMPONENT,
        metrics_listen: args.metrics_listen,
        endpoint: args.process.metrics.endpoint(),
        resync: args.process.resync,
        leader_election: args.process.leader_election,
    };
    crate::client::run_operator(own, &guest, launch, cache, metrics, op, shutdown).await
}
