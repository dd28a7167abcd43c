//! HTTPS with the generated CA, and the `/__sim/` admin paths that operators running as
//! separate processes are observed and disturbed through.

mod common;

use std::time::Duration;

use common::{TestResult, client_for, config_map, start};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube_sim::{KubeSim, SimConfig};
use serde_json::{Value, json};

async fn admin(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Value,
) -> Result<Value, kube::Error> {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap_or_default())
        .expect("a request");
    let text = client.request_text(req).await?;
    Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test]
async fn https_with_the_generated_ca_is_trusted_by_kube_rs() -> TestResult {
    let sim = KubeSim::start(
        SimConfig {
            tls: true,
            ..Default::default()
        },
        "127.0.0.1:0".parse()?,
    )
    .await?;
    assert!(sim.url().starts_with("https://"));
    assert!(
        sim.ca_pem()
            .is_some_and(|pem| pem.contains("BEGIN CERTIFICATE"))
    );
    let client = client_for(&sim, "tls-user").await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.create(
        &PostParams::default(),
        &config_map("over-tls", &[], &[("a", "b")]),
    )
    .await?;
    assert_eq!(
        cms.get("over-tls")
            .await?
            .data
            .and_then(|d| d.get("a").cloned()),
        Some("b".into())
    );
    let mine = sim
        .requests()
        .into_iter()
        .filter(|r| r.user == "tls-user" && r.is_write())
        .count();
    assert_eq!(mine, 1, "the request log names the kubeconfig's user");
    Ok(())
}

#[tokio::test]
async fn faults_and_the_request_log_over_http() -> TestResult {
    let (sim, client) = start().await;
    admin(&client, "DELETE", "/__sim/requests", json!(null)).await?;
    admin(
        &client,
        "POST",
        "/__sim/faults",
        json!({"match": {"verb": "create", "resource": "configmaps"}, "code": 500, "times": 1}),
    )
    .await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let first = cms
        .create(&PostParams::default(), &config_map("x", &[], &[]))
        .await;
    assert!(
        matches!(first, Err(kube::Error::Api(ref s)) if s.code == 500),
        "{first:?}"
    );
    cms.create(&PostParams::default(), &config_map("x", &[], &[]))
        .await?;
    let log = admin(&client, "GET", "/__sim/requests", json!(null)).await?;
    let codes: Vec<u64> = log
        .as_array()
        .expect("the log is a list")
        .iter()
        .filter(|r| r["verb"] == "create")
        .filter_map(|r| r["code"].as_u64())
        .collect();
    assert_eq!(
        codes,
        vec![500, 201],
        "admin requests themselves are not logged"
    );
    assert_eq!(
        admin(&client, "GET", "/__sim/faults", json!(null)).await?,
        json!([]),
        "used up"
    );
    assert_eq!(
        sim.requests().iter().filter(|r| r.verb == "admin").count(),
        0
    );
    Ok(())
}

#[tokio::test]
async fn compaction_and_restart_over_http() -> TestResult {
    let (sim, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let old = cms
        .create(&PostParams::default(), &config_map("a", &[], &[]))
        .await?;
    cms.create(&PostParams::default(), &config_map("b", &[], &[]))
        .await?;
    admin(&client, "POST", "/__sim/compact", json!(null)).await?;
    let rv = old.metadata.resource_version.unwrap_or_default();
    let raw = http::Request::get(format!(
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=1"
    ))
    .body(Vec::new())?;
    let text = client.request_text(raw).await?;
    assert!(
        text.contains("\"code\":410"),
        "resuming from before the compaction is Gone: {text}"
    );

    admin(
        &client,
        "POST",
        "/__sim/restart?downtimeMs=200",
        json!(null),
    )
    .await?;
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The client reconnects once the server is back, and the data is still there.
    common::eventually("the server to come back", || async {
        cms.get_opt("b").await.ok().flatten()
    })
    .await;
    let bad = admin(
        &client,
        "POST",
        "/__sim/restart?downtimeMs=soon",
        json!(null),
    )
    .await;
    assert!(
        matches!(bad, Err(kube::Error::Api(ref s)) if s.code == 400),
        "{bad:?}"
    );
    drop(sim);
    Ok(())
}
