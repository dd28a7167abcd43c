//! The Cinder operator in-process against kube-sim and openstack-sim: install converges,
//! conditions become Available, and an idle operator makes no request.

use std::time::Duration;

use cinder::operator::{self, Options};
use testbed::operators::{Lease, run_driver_operator};
use testbed::{Settings, Testbed, wait_for};

const CR: &str = "cinder.csi.openstack.org";
const USER: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:openstack-cinder-csi-driver-operator";

async fn start_operator(bed: &Testbed) -> tokio::sync::oneshot::Sender<()> {
    let client = testbed::client_for(&bed.kube, USER).await.expect("client");
    let lease = Lease {
        namespace: testbed::DRIVER_NAMESPACE,
        name: cinder::OPERATOR_LOCK_NAME,
        resync: Duration::from_secs(2),
    };
    let opts = Options::new(testbed::example_images());
    run_driver_operator(client, opts, operator::watches, lease)
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
