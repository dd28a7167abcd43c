//! The status writer against kube-sim: it writes only on change, keeps `lastTransitionTime`
//! unless a status flips, leaves other writers' conditions alone, and survives 409s.

use std::time::Duration;

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Config};
use kube_sim::{Fault, KubeSim, RequestMatch, SimConfig};
use operator_kit::conditions::OperatorCondition;
use operator_kit::status::{Flushed, GenerationStatus, StatusBoard, StatusWriter, last_generation};
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

const NAME: &str = "cinder.csi.openstack.org";

async fn client_for(sim: &KubeSim, user: &str) -> Client {
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let kubeconfig = Kubeconfig::from_yaml(&sim.kubeconfig(user)).expect("kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("config");
    Client::try_from(config).expect("client")
}

fn cr_ar() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Driver"),
        "drivers",
    )
}

/// A simulator with a cluster-scoped CRD that has a status subresource, and one CR.
async fn setup() -> (KubeSim, Client, Api<DynamicObject>) {
    let sim = KubeSim::start(
        SimConfig::default(),
        "127.0.0.1:0".parse().expect("address"),
    )
    .await
    .expect("kube-sim starts");
    let client = client_for(&sim, "operator").await;
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    let crd: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "drivers.example.com"},
        "spec": {
            "group": "example.com", "scope": "Cluster",
            "names": {"plural": "drivers", "singular": "driver", "kind": "Driver", "listKind": "DriverList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    }))
    .expect("crd");
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("crd created");
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &cr_ar());
    let cr: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Driver",
        "metadata": {"name": NAME}, "spec": {"logLevel": "Normal"}
    }))
    .expect("cr");
    let until = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match api.create(&PostParams::default(), &cr).await {
            Ok(_) => break,
            Err(e) => {
                assert!(tokio::time::Instant::now() < until, "CR not created: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    (sim, client, api)
}

fn available(message: &str) -> OperatorCondition {
    OperatorCondition::new("DriverAvailable", "True", "AsExpected", message)
}

fn operator_requests(sim: &KubeSim) -> Vec<kube_sim::RequestRecord> {
    sim.requests()
        .into_iter()
        .filter(|r| r.user == "operator")
        .collect()
}

#[tokio::test]
async fn writes_only_on_change_and_keeps_transition_time() -> TestResult {
    let (sim, client, api) = setup().await;
    let writer = StatusWriter::new(client.clone(), &cr_ar(), None);
    let mut board = StatusBoard::new();
    board.set_condition(available("ok"));
    board.record_generation(GenerationStatus {
        group: "apps".into(),
        resource: "deployments".into(),
        namespace: "ns".into(),
        name: "controller".into(),
        last_generation: 3,
        hash: String::new(),
    });
    let live = api.get(NAME).await?;
    let written = match writer.flush(&board, &live).await? {
        Flushed::Written(o) => o,
        Flushed::Unchanged => panic!("the first flush must write"),
    };
    let status = &written.data["status"];
    assert_eq!(status["conditions"][0]["type"], "DriverAvailable");
    assert_eq!(status["observedGeneration"], 1);
    assert_eq!(
        last_generation(&written, "apps", "deployments", "ns", "controller"),
        Some(3)
    );
    let first_ltt = status["conditions"][0]["lastTransitionTime"].clone();

    // Same board, with the fresh object or with the stale one a lagging cache would give:
    // no request at all.
    sim.clear_requests();
    assert!(matches!(
        writer.flush(&board, &written).await?,
        Flushed::Unchanged
    ));
    assert!(matches!(
        writer.flush(&board, &live).await?,
        Flushed::Unchanged
    ));
    assert!(
        operator_requests(&sim).is_empty(),
        "{:#?}",
        operator_requests(&sim)
    );

    // A new message with the same status: written, transition time kept.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    board.set_condition(available("still ok"));
    let Flushed::Written(again) = writer.flush(&board, &written).await? else {
        panic!("a message change must be written");
    };
    assert_eq!(again.data["status"]["conditions"][0]["message"], "still ok");
    assert_eq!(
        again.data["status"]["conditions"][0]["lastTransitionTime"],
        first_ltt
    );

    // A flip: new transition time.
    board.set_condition(OperatorCondition::new(
        "DriverAvailable",
        "False",
        "Deploying",
        "wait",
    ));
    let Flushed::Written(flipped) = writer.flush(&board, &again).await? else {
        panic!("a flip must be written");
    };
    assert_ne!(
        flipped.data["status"]["conditions"][0]["lastTransitionTime"],
        first_ltt
    );
    Ok(())
}

#[tokio::test]
async fn other_writers_conditions_are_left_alone() -> TestResult {
    let (sim, client, api) = setup().await;
    // Another controller (e.g. CSO) owns a condition on the same CR.
    let other = client_for(&sim, "other").await;
    let other_api: Api<DynamicObject> = Api::all_with(other, &cr_ar());
    let foreign = json!({"status": {"conditions": [{"type": "ForeignDegraded", "status": "False",
        "lastTransitionTime": "2020-01-01T00:00:00Z", "reason": "AsExpected", "message": ""}]}});
    other_api
        .patch_status(NAME, &PatchParams::default(), &Patch::Merge(&foreign))
        .await?;
    let writer = StatusWriter::new(client, &cr_ar(), None);
    let mut board = StatusBoard::new();
    board.set_condition(available("ok"));
    let live = api.get(NAME).await?;
    let Flushed::Written(written) = writer.flush(&board, &live).await? else {
        panic!("must write");
    };
    let conditions = written.data["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(conditions.len(), 2);
    assert_eq!(conditions[0]["type"], "ForeignDegraded");
    assert_eq!(conditions[0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
    Ok(())
}

#[tokio::test]
async fn conflict_is_retried_with_a_fresh_read() -> TestResult {
    let (sim, client, api) = setup().await;
    let writer = StatusWriter::new(client, &cr_ar(), None);
    let live = api.get(NAME).await?;
    // Someone else changes the CR after we read it: our resourceVersion is stale.
    let other = client_for(&sim, "other").await;
    let other_api: Api<DynamicObject> = Api::all_with(other, &cr_ar());
    other_api
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await?;
    sim.clear_requests();
    let mut board = StatusBoard::new();
    board.set_condition(available("ok"));
    let Flushed::Written(written) = writer.flush(&board, &live).await? else {
        panic!("must write after retrying");
    };
    assert_eq!(
        written
            .metadata
            .labels
            .clone()
            .unwrap_or_default()
            .get("x")
            .map(String::as_str),
        Some("y")
    );
    let seen = |sim: &KubeSim| -> Vec<(String, u16)> {
        operator_requests(sim)
            .into_iter()
            .map(|r| (r.verb, r.code))
            .collect()
    };
    let expected = [
        ("update".to_string(), 409),
        ("get".to_string(), 200),
        ("update".to_string(), 200),
    ];
    assert_eq!(
        seen(&sim),
        expected,
        "a stale resourceVersion: one re-read, one retry"
    );

    // A 409 the server makes up (etcd contention) is handled the same way.
    sim.inject(Fault {
        matches: RequestMatch {
            verb: "update".into(),
            path_contains: "/status".into(),
            user: "operator".into(),
            ..Default::default()
        },
        code: 409,
        times: 1,
        latency_ms: 0,
    });
    sim.clear_requests();
    board.set_condition(available("changed"));
    assert!(matches!(
        writer.flush(&board, &written).await?,
        Flushed::Written(_)
    ));
    assert_eq!(seen(&sim), expected);
    Ok(())
}
