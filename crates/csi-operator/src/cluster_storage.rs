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
    let optional_drivers = args.optional_drivers;
    let options = async |_: &kube::Client, hosted: Option<_>| {
        standalone_only(&optional_drivers, hosted.is_some())?;
        Ok(Options {
            namespace: args.namespace,
            env: operator::env_from_process(),
            degraded_inertia: args.degraded_inertia,
            hosted,
            optional_drivers,
        })
    };
    shell
        .start(options, operator::watches, Operator::new, shutdown)
        .await
}

/// Optional drivers run on standalone clusters only, as OpenShift's: in a hosted control plane
/// (`--guest-kubeconfig`) the CSO refuses to start with them rather than ignore the opt-in.
fn standalone_only(
    optional_drivers: &[&'static cluster_storage::registry::Driver],
    hosted: bool,
) -> anyhow::Result<()> {
    match optional_drivers.first() {
        Some(d) if hosted => anyhow::bail!(
            "--optional-driver {}: optional drivers run on standalone clusters only, not in a hosted control plane; remove CSO_OPTIONAL_DRIVERS (or the flag) from the hosted CSO",
            d.name
        ),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosted_cso_refuses_optional_drivers_and_a_standalone_one_takes_them() {
        let smb = optional_driver("smb").expect("smb is optional");
        assert!(standalone_only(&[smb], false).is_ok());
        assert!(standalone_only(&[], true).is_ok());
        let refused = standalone_only(&[smb], true).expect_err("refused when hosted");
        assert!(
            refused.to_string().contains("--optional-driver smb")
                && refused.to_string().contains("standalone clusters only"),
            "{refused}"
        );
        let unknown = optional_driver(" nfs").expect_err("not an optional driver");
        assert!(
            unknown.contains("smb"),
            "names the optional drivers: {unknown}"
        );
    }
}
