//! A client configured by `operator_kit::client_config` gives up on a server that accepts the
//! connection and never answers, instead of waiting for the kernel (~15 minutes).

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::{Client, Config};
use operator_kit::client_config::{Timeouts, configure_with};
use tokio::net::TcpListener;

/// Accepts every connection and holds it open without reading or answering, as a peer behind
/// a dead link looks to the client. Returns its address and how many connections it took.
async fn black_hole() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(stream);
        }
    });
    (addr, accepted)
}

fn client(addr: std::net::SocketAddr, read: Duration) -> Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config = Config::new(format!("http://{addr}").parse().expect("uri"));
    config.default_retry = false;
    let config = configure_with(
        config,
        Timeouts {
            connect: Duration::from_secs(5),
            read,
            write: Duration::from_secs(5),
        },
    );
    Client::try_from(config).expect("client")
}

#[tokio::test]
async fn a_server_that_never_answers_fails_the_request_within_the_read_timeout() {
    let (addr, accepted) = black_hole().await;
    let client = client(addr, Duration::from_millis(300));
    let api: Api<ConfigMap> = Api::namespaced(client, "ns");
    // A LIST, as a watch cache's first request, and a write, as a status update.
    let list = tokio::time::timeout(Duration::from_secs(10), api.list(&Default::default())).await;
    let Ok(result) = list else {
        panic!("the LIST was still waiting after 10 s");
    };
    assert!(result.is_err(), "no answer cannot be a list");
    let write = tokio::time::timeout(
        Duration::from_secs(10),
        api.create(&PostParams::default(), &ConfigMap::default()),
    )
    .await;
    let Ok(result) = write else {
        panic!("the create was still waiting after 10 s");
    };
    assert!(result.is_err());
    assert!(accepted.load(std::sync::atomic::Ordering::SeqCst) >= 1);
}
