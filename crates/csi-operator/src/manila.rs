//! `csi-operator openstack-manila start` and `csi-operator render openstack-manila`.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use manila::build::{self, DriverFacts, Facts, FsGroupPolicy};
use manila::operator::{self, Options};

use crate::client::{Names, Shell};
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
    #[command(flatten)]
    driver: crate::flags::DriverFlags,
}

/// The Manila operator process's lease, component and metrics prefix.
const NAMES: Names = Names::of(&manila::SPEC);

pub async fn start(
    args: StartArgs,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let shell = Shell::new(args.process, &args.namespace, args.metrics_listen, NAMES);
    let share_type_refresh = args.share_type_refresh;
    let own = |common| Options {
        common,
        share_type_refresh,
        fs_group_policy: std::env::var(manila::FSGROUP_POLICY_ENV).ok(),
    };
    let driver = (&args.driver, args.driver_namespace);
    shell
        .start_driver(driver, own, operator::watches, shutdown)
        .await
}

#[derive(clap::Args)]
pub struct RenderArgs {
    /// Namespace of the driver.
    #[arg(long, default_value = manila::SPEC.driver_namespace)]
    namespace: String,
    /// A Manila share type to make a StorageClass for; repeatable.
    #[arg(long = "share-type")]
    share_types: Vec<String>,
    #[command(flatten)]
    cluster: crate::render::ClusterFlags,
    /// The CSIDriver fsGroupPolicy (as CSI_FSGROUP_POLICY): None, File, ReadWriteOnceWithFSType.
    #[arg(long, env = "CSI_FSGROUP_POLICY", default_value = "None")]
    fs_group_policy: String,
    /// An image, as NAME=IMAGE (e.g. NFS_DRIVER_IMAGE=quay.io/...); repeatable. Images not
    /// given are taken from the environment variables of the same names, else are the
    /// upstream releases that manifests/kubernetes/ uses.
    #[arg(long = "image", value_parser = crate::render::parse_pair)]
    images: Vec<(String, String)>,
    #[command(flatten)]
    environment: crate::render::EnvironmentFlags,
}

/// Prints every object the operator would apply once Manila offers these share types.
pub fn render(args: &RenderArgs) -> anyhow::Result<String> {
    if args.share_types.is_empty() {
        anyhow::bail!(
            "give at least one --share-type NAME: without share types the operator deploys nothing (Manila is disabled)"
        );
    }
    let images = crate::render::images::<Options>(&args.images);
    let base =
        crate::render::base_facts(&args.namespace, &args.cluster, &args.environment, images)?;
    let own = DriverFacts {
        fs_group_policy: FsGroupPolicy::parse(Some(&args.fs_group_policy))?,
    };
    let facts = Facts::new(base, own);
    let (objects, errors) =
        build::everything(&facts, &args.share_types).context("cannot build the objects")?;
    let mut out = String::new();
    for e in errors {
        out.push_str(&format!("# {e}\n"));
    }
    out.push_str(&crate::render::yaml_stream(objects)?);
    Ok(out)
}
