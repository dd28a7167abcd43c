//! The operators' client honours `Retry-After`: after an API server's 429 asks it to wait a
//! second, it sends nothing more until then, however fast its callers retry.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Config;
use kube::api::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube_sim::{Fault, KubeSim, RequestMatch, SimConfig};
use tokio::time::Instant;

#[tokio::test]
async fn after_a_429_with_retry_after_the_client_waits_before_its_next_request() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sim = KubeSim::start(
        SimConfig::default(),
        "127.0.0.1:0".parse().expect("address"),
    )
    .await
    .expect("kube-sim starts");
    let kubeconfig = Kubeconfig::from_yaml(&sim.kubeconfig("operator")).expect("kubeconfig");
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("config");
    config.default_retry = false;
    let client = operator_kit::client_config::client(config).expect("client");
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.list(&Default::default()).await.expect("served");

    // kube-sim throttles as an API server does: 429 with `Retry-After: 1`.
    sim.inject(Fault {
        matches: RequestMatch {
            verb: "list".into(),
            resource: "configmaps".into(),
            user: "operator".into(),
            ..Default::default()
        },
        code: 429,
        times: 0,
        latency_ms: 0,
    });
    sim.clear_requests();
    // A caller that retries at once, as a reconcile's next step would.
    let until = Instant::now() + Duration::from_millis(1500);
    while let Ok(answer) = tokio::time::timeout_at(until, api.list(&Default::default())).await {
        assert!(answer.is_err(), "a throttled list cannot succeed");
    }
    let sent = sim
        .requests()
        .into_iter()
        .filter(|r| r.user == "operator" && r.verb == "list")
        .count();
    // At 0 s and after the second's wait; without the wait, hundreds.
    assert!(
        (1..=3).contains(&sent),
        "{sent} requests sent in 1.5 s under Retry-After: 1"
    );

    sim.clear_faults();
    tokio::time::timeout(Duration::from_secs(10), api.list(&Default::default()))
        .await
        .expect("answered once the hold is over")
        .expect("served again");
}
