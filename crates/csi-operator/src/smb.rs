//! `csi-operator smb start` and `csi-operator render smb`: the SMB CSI driver operator
//! (`smb.csi.k8s.io`), which the Cluster Storage Operator starts only when the administrator
//! opts in (`cluster-storage start --optional-driver smb`, docs/smb.md).

use std::net::SocketAddr;

use anyhow::Context;
use operator_kit::csi::Facts;

use crate::client::{Names, Shell};

/// The driver image `render smb` shows when none is given: csi-driver-smb's upstream release.
const UPSTREAM_DRIVER_IMAGE: &str = "registry.k8s.io/sig-storage/smbplugin:v1.17.0";

/// The SMB operator process's lease, component and metrics prefix.
const NAMES: Names = Names::of(&smb::SPEC);

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
    #[command(flatten)]
    driver: crate::flags::DriverFlags,
}

pub async fn start(
    args: StartArgs,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    if args.process.guest_kubeconfig.is_some() {
        anyhow::bail!(
            "--guest-kubeconfig: the SMB driver runs on standalone clusters only, as OpenShift's (no hosted control plane)"
        );
    }
    let namespace = args.namespace.clone();
    let own = |common| smb::Options { common };
    Shell::new(args.process, &args.namespace, args.metrics_listen, NAMES)
        .start_driver((&args.driver, namespace), own, smb::watches, shutdown)
        .await
}

#[derive(clap::Args)]
pub struct RenderArgs {
    /// Namespace of the driver.
    #[arg(long, default_value = smb::NAMESPACE)]
    namespace: String,
    #[command(flatten)]
    cluster: crate::render::ClusterFlags,
    /// An image, as NAME=IMAGE (e.g. DRIVER_IMAGE=registry.example/smbplugin:v1); repeatable.
    /// Images not given are taken from the environment variables of the same names, else are
    /// the upstream releases.
    #[arg(long = "image", value_parser = crate::render::parse_pair)]
    images: Vec<(String, String)>,
    /// Proxy settings as observed (HTTP_PROXY=..., NO_PROXY=...); repeatable.
    #[arg(long = "proxy", value_parser = crate::render::parse_pair)]
    proxy: Vec<(String, String)>,
}

/// Prints every object the operator would apply.
pub fn render(args: &RenderArgs) -> anyhow::Result<String> {
    let upstream = [("DRIVER_IMAGE".to_owned(), UPSTREAM_DRIVER_IMAGE.to_owned())];
    let images = crate::render::images::<smb::Options>(&[&upstream[..], &args.images].concat());
    let environment = crate::render::EnvironmentFlags {
        proxy: args.proxy.clone(),
        hosted: Default::default(),
    };
    let base = crate::render::base_facts(&args.namespace, &args.cluster, &environment, images)?;
    let objects = smb::everything(&Facts::new(base, ())).context(
        "cannot build the objects; give every image with --image NAME=IMAGE (or the environment variable of the same name)",
    )?;
    crate::render::yaml_stream(objects)
}
