//! `csi-operator cluster-storage start`: the Cluster Storage Operator process.

use std::net::SocketAddr;
use std::time::Duration;

use cluster_storage::operator::{self, Operator, Options};

use crate::client::{Names, Shell};
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
}

/// The Cluster Storage Operator process's lease, component and metrics prefix.
const NAMES: Names = Names {
    lock_name: operator::LOCK_NAME,
    component: operator::COMPONENT,
    metrics_prefix: "cluster_storage_operator",
};

pub async fn start(
    args: StartArgs,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let shell = Shell::new(args.process, &args.namespace, args.metrics_listen, NAMES);
    let options = async |_: &kube::Client, hosted| {
        Ok(Options {
            namespace: args.namespace,
            env: operator::env_from_process(),
            degraded_inertia: args.degraded_inertia,
            hosted,
        })
    };
    shell
        .start(options, operator::watches, Operator::new, shutdown)
        .await
}
