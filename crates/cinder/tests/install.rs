//! The Cinder operator in-process against kube-sim and openstack-sim: install converges,
//! conditions become Available, and an idle operator makes no request.

use std::time::Duration;

use cinder::operator::{self, Options};
use operator_kit::logging::LogControl;
use operator_kit::metrics::Metrics;
use operator_kit::process::{self, ProcessOptions};
use operator_kit::runtime::LoopOptions;
use testbed::{Settings, Testbed, wait_for};

const CR: &str = "cinder.csi.openstack.org";

async fn start_operator(bed: &Testbed) -> tokio::sync::oneshot::Sender<()> {
    let client = testbed::client_for(
        &bed.kube,
        "system:serviceaccount:openshift-cluster-csi-drivers:openstack-cinder-csi-driver-operator",
    )
    .await
    .expect("client");
    let opts = Options::new(testbed::example_images());
    let cache = operator::watches(client.clone(), &opts)
        .expect("watches")
        .start();
    let metrics = Metrics::new("test");
    let op = operator::new(
        client.clone(),
        opts,
        cache.clone(),
        metrics.clone(),
        LogControl::detached(),
    );
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let options = ProcessOptions {
        namespace: testbed::DRIVER_NAMESPACE.into(),
        lock_name: cinder::OPERATOR_LOCK_NAME.into(),
        identity: "test".into(),
        timing: operator_kit::leader_timing::LeaderTiming::DEFAULT,
        metrics_addr: None,
        endpoint: operator_kit::process::EndpointOptions::default(),
        loop_options: LoopOptions {
            resync: Duration::from_secs(2),
            ..LoopOptions::default()
        },
    };
    tokio::spawn(async move {
        let _ = process::run(client, options, cache, metrics, op, async move {
            let _ = rx.await;
        })
        .await;
    });
    tx
}

#[tokio::test]
async fn install_converges_and_idles_without_requests() {
    let bed = Testbed::start(Settings::default()).await.expect("testbed");
    let _stop = start_operator(&bed).await;
    let available = wait_for(Duration::from_secs(30), || async {
        let c = bed.conditions(CR).await;
        let ok = |t: &str| c.get(t).is_some_and(|(s, _, _)| s == "True");
        (ok("OpenStackCinderDriverControllerServiceControllerAvailable")
            && ok("OpenStackCinderDriverNodeServiceControllerAvailable"))
        .then_some(c)
    })
    .await;
    let Some(conditions) = available else {
        panic!("not available: {:#?}", bed.conditions(CR).await);
    };
    assert!(
        conditions.len() >= 10,
        "every step reports: {conditions:#?}"
    );
    for (t, (status, reason, message)) in &conditions {
        if t.ends_with("Degraded") {
            assert_eq!(status, "False", "{t}: {reason}: {message}");
        }
    }
    // Idle: after two resync periods, no writes and no GETs from the operator.
    tokio::time::sleep(Duration::from_secs(1)).await;
    bed.kube.clear_requests();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let operator_requests: Vec<_> = bed
        .kube
        .requests()
        .into_iter()
        .filter(|r| r.user.contains("openstack-cinder") && r.verb != "watch")
        .map(|r| format!("{} {} {}", r.verb, r.path, r.code))
        .collect();
    let writes_or_gets: Vec<_> = operator_requests
        .iter()
        .filter(|r| !r.starts_with("update /apis/coordination.k8s.io"))
        .collect();
    assert!(
        writes_or_gets.is_empty(),
        "idle operator made requests: {writes_or_gets:#?}"
    );
}
