//! `csi-operator`: the one binary of the project. Each component is a subcommand; today the
//! Kubernetes API emulator (`sim`), with the operators and the demo to follow.
//!
//! This file only parses the command line and wires components together; the behaviour lives
//! in the library crates.

mod sim;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "csi-operator",
    version,
    about = "OpenStack CSI driver operators and their emulators"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run kube-sim, the Kubernetes API emulator, for kubectl and operators to talk to.
    Sim(sim::SimArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        match cli.command {
            Command::Sim(args) => sim::run(args).await,
        }
    })
}
