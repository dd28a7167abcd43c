//! `csi-operator`: the operators' binary. Each component is a subcommand: the Cluster Storage
//! Operator, the OpenStack Cinder and Manila CSI driver operators and `render` (print what an
//! operator would apply). Built with the `lab` feature (the default in a checkout, never in the
//! image) it also holds the Kubernetes API emulator (`sim`) and `demo` (the whole chain on both
//! emulators).
//!
//! This file only parses the command line and wires components together; the behaviour lives
//! in the library crates.

mod cinder;
mod client;
mod cluster_storage;
#[cfg(feature = "lab")]
mod demo;
mod duration;
mod flags;
mod manila;
#[cfg(feature = "lab")]
mod sim;

use clap::{Parser, Subcommand};

#[cfg(feature = "lab")]
const ABOUT: &str =
    "OpenStack CSI driver operators, the Cluster Storage Operator, and their emulators";
#[cfg(not(feature = "lab"))]
const ABOUT: &str = "OpenStack CSI driver operators and the Cluster Storage Operator";

/// `--version`: the release version, the commit it was built from, and whether the emulators
/// are linked (an image never has them).
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\ncommit: ",
    env!("CSI_OPERATOR_GIT_COMMIT"),
    "\nbuild: ",
    env!("CSI_OPERATOR_BUILD_KIND"),
);

#[derive(Parser)]
#[command(
    name = "csi-operator",
    version,
    long_version = LONG_VERSION,
    propagate_version = true,
    about = ABOUT,
    // A flag given twice takes the last value, so that a launcher can append overrides to a
    // Deployment's args (kube-sim's process runner does, e.g. --metrics-listen).
    args_override_self = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The Cluster Storage Operator: starts the driver operators of the platform and reports
    /// through Storage/cluster and ClusterOperator/storage.
    #[command(name = "cluster-storage", subcommand)]
    ClusterStorage(ClusterStorageCommand),
    /// The OpenStack Cinder CSI driver operator.
    #[command(name = "openstack-cinder", subcommand)]
    OpenStackCinder(CinderCommand),
    /// The OpenStack Manila CSI driver operator.
    #[command(name = "openstack-manila", subcommand)]
    OpenStackManila(ManilaCommand),
    /// Print, as YAML, every object an operator would apply, with no cluster.
    #[command(subcommand)]
    Render(RenderCommand),
    /// Run kube-sim, the Kubernetes API emulator, for kubectl and operators to talk to.
    #[cfg(feature = "lab")]
    Sim(sim::SimArgs),
    /// Run the Cinder and Manila operators against emulated Kubernetes and OpenStack, show the
    /// installs converge, and keep the cluster up for kubectl.
    #[cfg(feature = "lab")]
    Demo(demo::DemoArgs),
}

#[derive(Subcommand)]
enum ClusterStorageCommand {
    /// Run the operator until SIGTERM or Ctrl-C.
    Start(cluster_storage::StartArgs),
}

#[derive(Subcommand)]
enum CinderCommand {
    /// Run the operator until SIGTERM or Ctrl-C.
    Start(cinder::StartArgs),
}

#[derive(Subcommand)]
enum ManilaCommand {
    /// Run the operator until SIGTERM or Ctrl-C.
    Start(manila::StartArgs),
}

#[derive(Subcommand)]
enum RenderCommand {
    /// The Cinder driver's objects.
    #[command(name = "openstack-cinder")]
    OpenStackCinder(cinder::RenderArgs),
    /// The Manila driver's objects, for the share types given.
    #[command(name = "openstack-manila")]
    OpenStackManila(manila::RenderArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    client::install_crypto();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        match cli.command {
            #[cfg(feature = "lab")]
            Command::Sim(args) => {
                operator_kit::logging::LogControl::init(2);
                sim::run(args).await
            }
            Command::ClusterStorage(ClusterStorageCommand::Start(args)) => {
                cluster_storage::start(args, terminated()).await
            }
            Command::OpenStackCinder(CinderCommand::Start(args)) => {
                cinder::start(args, terminated()).await
            }
            Command::OpenStackManila(ManilaCommand::Start(args)) => {
                manila::start(args, terminated()).await
            }
            Command::Render(RenderCommand::OpenStackManila(args)) => {
                print!("{}", manila::render(&args)?);
                Ok(())
            }
            #[cfg(feature = "lab")]
            Command::Demo(args) => demo::run(args, terminated()).await,
            Command::Render(RenderCommand::OpenStackCinder(args)) => {
                print!("{}", cinder::render(&args)?);
                Ok(())
            }
        }
    })
}

/// Resolves on SIGTERM (how Kubernetes stops a pod) or Ctrl-C.
async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
