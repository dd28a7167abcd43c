//! Building the kube-rs client the way every subcommand needs it: from `--kubeconfig` when
//! given, else from the environment (in-cluster service account or `KUBECONFIG`).

use std::path::Path;

use anyhow::Context;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

/// Installs the process-wide TLS provider (kube-rs and reqwest share one; without it the
/// first TLS connection panics).
pub fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

pub async fn client(kubeconfig: Option<&Path>) -> anyhow::Result<Client> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path).with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("kubeconfig {} is not usable", path.display()))?
        }
        None => Config::infer().await.context("no kubeconfig given and none found in the environment (KUBECONFIG, ~/.kube/config, in-cluster)")?,
    };
    Client::try_from(config).context("cannot build a Kubernetes client")
}

/// The operator's own lease timing: SingleReplica control planes get the longer lease
/// (anchors §4.1); anything unreadable (plain Kubernetes has no Infrastructure) keeps the
/// default.
pub async fn leader_timing(client: &Client) -> operator_kit::leader_timing::LeaderTiming {
    use operator_kit::leader_timing::LeaderTiming;
    let api: kube::Api<openshift_api::config::Infrastructure> = kube::Api::all(client.clone());
    match api.get_opt("cluster").await {
        Ok(Some(infra)) => LeaderTiming::for_control_plane(
            &operator_kit::hooks::TopologyMode::parse(infra.control_plane_topology().as_str()),
        ),
        _ => LeaderTiming::DEFAULT,
    }
}
