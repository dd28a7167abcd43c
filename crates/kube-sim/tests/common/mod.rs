//! Shared helpers for the kube-rs test suites: start a simulator, build a kube-rs client from
//! its kubeconfig, poll with a generous deadline, and pull the `Status` out of API errors.
//!
//! Each test binary uses a different subset, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::Status;
use kube::{Client, Config};
use kube_sim::{KubeSim, SimConfig};

pub type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// How long a test waits for something asynchronous (the garbage collector, a controller)
/// before failing; generous because the machine is loaded.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// A simulator with the default settings and a client for the user `test`.
pub async fn start() -> (KubeSim, Client) {
    start_with(SimConfig::default()).await
}

pub async fn start_with(config: SimConfig) -> (KubeSim, Client) {
    let sim = KubeSim::start(config, "127.0.0.1:0".parse().expect("a socket address"))
        .await
        .expect("kube-sim starts");
    let client = client_for(&sim, "test").await;
    (sim, client)
}

/// A kube-rs client built exactly as an operator builds one from a kubeconfig file.
pub async fn client_for(sim: &KubeSim, user: &str) -> Client {
    // kube-rs needs a process-wide rustls provider only for HTTPS; installing it is harmless
    // otherwise, and a second install (another test in the same binary) is not an error.
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let kubeconfig =
        Kubeconfig::from_yaml(&sim.kubeconfig(user)).expect("kube-rs parses kube-sim's kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube-rs accepts kube-sim's kubeconfig");
    Client::try_from(config).expect("a kube-rs client")
}

/// Creates a namespace and returns its name.
pub async fn namespace(client: &Client, name: &str) -> String {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    api.create(&PostParams::default(), &ns)
        .await
        .expect("namespace created");
    name.to_string()
}

/// A ConfigMap with the given labels and data.
pub fn config_map(name: &str, labels: &[(&str, &str)], data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: (!labels.is_empty()).then(|| {
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            }),
            ..Default::default()
        },
        data: (!data.is_empty()).then(|| {
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        }),
        ..Default::default()
    }
}

/// The Status of an API error; anything else (a transport error) fails the test.
pub fn status(result: Result<impl std::fmt::Debug, kube::Error>) -> Box<Status> {
    match result {
        Err(kube::Error::Api(s)) => s,
        other => panic!("expected an API error Status, got {other:?}"),
    }
}

/// Polls `check` until it returns `Some`, failing with `what` after [`DEADLINE`].
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let until = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < until,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Awaits the next item of a stream, failing after [`DEADLINE`].
pub async fn next<S>(stream: &mut S) -> Option<S::Item>
where
    S: futures::Stream + Unpin,
{
    use futures::StreamExt;
    tokio::time::timeout(DEADLINE, stream.next())
        .await
        .expect("a stream item in time")
}
