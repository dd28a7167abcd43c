//! The testbed's CVO stand-in follows the real cluster version operator where the fast tests
//! lean on it (the real one is run by `real_openshift.rs`): a ClusterOperator manifest holds
//! back the rest of its component until the operator is Available, so a release whose
//! ClusterOperator sorts before its operator's Deployment never starts the operator here either.

mod common;

use common::chain::release;
use serde_json::json;
use testbed::cvo::{Action, Options, apply_with};
use testbed::{Settings, Testbed};

const CO_FILE_SUFFIX: &str = "_cluster_operator.yaml";
const DEPLOYMENT: &str = "0000_50_cluster-storage-operator_10_deployment.yaml";

fn action_of(report: &testbed::cvo::Report, file: &str) -> Action {
    report
        .outcomes
        .iter()
        .find(|(f, _)| f == file)
        .map(|(_, a)| a.clone())
        .unwrap_or_else(|| panic!("{file} is not in the release"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_operator_barrier_holds_back_the_rest_of_its_component() {
    let bed = Testbed::start(Settings::for_cluster_storage_operator())
        .await
        .expect("testbed");
    testbed::cco::create_namespace(&bed.client)
        .await
        .expect("the CCO's namespace");
    let manifests = release(None, &[]);
    let co_file = manifests
        .iter()
        .map(|m| m.file.clone())
        .find(|f| f.ends_with(CO_FILE_SUFFIX))
        .expect("a ClusterOperator manifest");

    // Nobody runs the CSO: everything up to the ClusterOperator is applied, the Deployment
    // among it; what follows it in its component waits.
    let first = apply_with(&bed.client, &manifests, &Options::default())
        .await
        .expect("apply");
    assert_eq!(action_of(&first, DEPLOYMENT), Action::Created);
    assert!(!first.complete());
    let after: Vec<&String> = first
        .outcomes
        .iter()
        .filter(|(f, a)| *a == Action::Blocked && f.starts_with("0000_50_"))
        .map(|(f, _)| f)
        .collect();
    assert!(
        after.iter().all(|f| f.as_str() > co_file.as_str()),
        "{after:?}"
    );
    assert!(!after.is_empty(), "nothing sorts after {co_file}");

    // The operator reports Available: the next attempt applies the rest.
    common::patch_status(
        &bed,
        "config.openshift.io/v1",
        "ClusterOperator",
        "storage",
        json!({"conditions": [{"type": "Available", "status": "True", "reason": "AsExpected", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
    )
    .await;
    let second = apply_with(&bed.client, &manifests, &Options::default())
        .await
        .expect("apply");
    assert!(second.complete(), "{:?}", second.outcomes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_operator_before_its_deployment_never_starts_the_operator() {
    let bed = Testbed::start(Settings::for_cluster_storage_operator())
        .await
        .expect("testbed");
    testbed::cco::create_namespace(&bed.client)
        .await
        .expect("the CCO's namespace");
    let mut manifests = release(None, &[]);
    for m in &mut manifests {
        if m.file.ends_with(CO_FILE_SUFFIX) {
            m.file = "0000_50_cluster-storage-operator_05_cluster_operator.yaml".into();
        }
    }
    manifests.sort_by(|a, b| a.file.cmp(&b.file));
    for _ in 0..3 {
        let report = apply_with(&bed.client, &manifests, &Options::default())
            .await
            .expect("apply");
        assert_eq!(action_of(&report, DEPLOYMENT), Action::Blocked);
    }
}
