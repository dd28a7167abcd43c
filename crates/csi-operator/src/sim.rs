//! `csi-operator sim`: kube-sim as a standalone server until Ctrl-C.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use kube_sim::{KubeSim, SimConfig, WorkloadConfig};

#[derive(clap::Args)]
pub struct SimArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Where to write a kubeconfig for kubectl and operators.
    #[arg(long, default_value = "kube-sim.kubeconfig")]
    kubeconfig: PathBuf,
    /// The user name the kubeconfig authenticates as (recorded in the request log).
    #[arg(long, default_value = "admin")]
    user: String,
    /// Serve HTTPS with a generated CA (written into the kubeconfig).
    #[arg(long)]
    tls: bool,
    /// Do not simulate workloads (Deployment and DaemonSet status stay empty).
    #[arg(long)]
    no_workloads: bool,
    /// Delay before the workload simulator reports a change, e.g. `500ms`, `2s`.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    workload_delay: Duration,
}

/// Parses `250ms`, `2s`, `1m`, `1h`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{s:?}: missing unit (ms, s, m or h)"))?;
    let (n, unit) = s.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{s:?}: expected a number followed by ms, s, m or h"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        "h" => Ok(Duration::from_secs(n * 3600)),
        other => Err(format!("{s:?}: unknown unit {other:?} (use ms, s, m or h)")),
    }
}

pub async fn run(args: SimArgs) -> anyhow::Result<()> {
    let config = SimConfig {
        tls: args.tls,
        workloads: (!args.no_workloads).then(|| WorkloadConfig {
            delay_ms: args.workload_delay.as_millis() as u64,
            ..Default::default()
        }),
        ..Default::default()
    };
    let sim = KubeSim::start(config, args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    std::fs::write(&args.kubeconfig, sim.kubeconfig(&args.user))
        .with_context(|| format!("cannot write {}", args.kubeconfig.display()))?;
    let path = std::fs::canonicalize(&args.kubeconfig).unwrap_or(args.kubeconfig.clone());
    println!("kube-sim serving at {}", sim.url());
    println!("kubeconfig written to {}", path.display());
    println!(
        "try: kubectl --kubeconfig {} get namespaces",
        path.display()
    );
    println!("press Ctrl-C to stop");
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    println!("stopping");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units_and_reject_garbage() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("5d").is_err());
    }
}
