//! Fencing with two operator processes: a reconcile that straddles a lease steal.
//!
//! Two replicas of the real `csi-operator openstack-cinder start` binary run against one
//! kube-sim with RBAC on, with a lease that expires in seconds (`--leader-elect-*`). The first
//! leads and installs through a slow API server (every create it sends is delayed); while that
//! install is in flight, its lease requests start failing, so it cannot renew, and the second
//! replica takes the lease over and finishes the install. kube-sim's request log, in the order
//! the server completed the requests, must show no write of the deposed replica after the new
//! leader's first write (its lease acquisition). Were the reconcile in flight left to finish
//! (no cancellation in `operator_kit::runtime`), the deposed replica's remaining creates,
//! updates, Events and status writes would land after the steal, and this test would fail.
//!
//! kube-sim tells clients apart only by user, so each replica runs as its own service account,
//! both named by every binding of the operator's roles as the CSO grants them. Every wait is on
//! a condition with a generous deadline; no assertion is about how long anything took.

mod common;

use common::*;
use kube_sim::{Fault, RbacConfig, RequestMatch, RequestRecord};
use testbed::Settings;

/// The first replica's service account: the operator's own.
const FIRST_USER: &str = OPERATOR_USER;
/// The second replica's service account (bound to the same roles).
const SECOND_USER: &str =
    "system:serviceaccount:openshift-cluster-csi-drivers:openstack-cinder-csi-driver-operator-b";
/// The replicas' identities in the Lease (their pod names).
const FIRST: &str = "openstack-cinder-csi-driver-operator-7d9f8b6c5-first";
const SECOND: &str = "openstack-cinder-csi-driver-operator-7d9f8b6c5-second";

/// A lease a standby may take over 4 s after the last renewal it saw; the leader gives up after
/// 2 s without one. The gap between the two is what keeps the old leader's last requests
/// ahead of the new leader's first.
const SHORT_LEASE: [&str; 3] = [
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=2s",
    "--leader-elect-retry-period=500ms",
];

fn describe_at(i: usize, r: &RequestRecord) -> String {
    format!("#{i} {} {}", r.user, describe(r))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposed_leader_writes_nothing_after_the_new_leader_starts() {
    let mut settings = Settings::default();
    settings.kube.rbac = Some(RbacConfig::default());
    let bed = bed_with(settings).await;
    grant_cinder_operator_rbac(&bed, &[FIRST_USER, SECOND_USER]).await;

    // A slow API server for the first replica: each of its creates takes 400 ms, so its install
    // (dozens of objects) is still in flight when it loses the lease.
    bed.kube.inject(Fault {
        matches: RequestMatch {
            verb: "create".into(),
            user: FIRST_USER.into(),
            ..Default::default()
        },
        code: 0,
        times: 0,
        latency_ms: 400,
    });
    let mut first = OperatorProcess::start_cinder_replica(&bed, FIRST_USER, FIRST, &SHORT_LEASE);
    eventually("the first replica to lead", || async {
        let holder = cinder_lease_holder(&bed).await;
        if holder == FIRST {
            Ok(())
        } else {
            Err(format!("holder {holder:?}"))
        }
    })
    .await;
    let mut second = OperatorProcess::start_cinder_replica(&bed, SECOND_USER, SECOND, &SHORT_LEASE);
    eventually(
        "the second replica to watch the lease and the first to be installing",
        || async {
            let requests = bed.kube.requests();
            let polled = requests
                .iter()
                .any(|r| r.user == SECOND_USER && is_lease(r) && r.verb == "get");
            let creates = requests
                .iter()
                .filter(|r| r.user == FIRST_USER && r.verb == "create" && !is_lease(r))
                .count();
            if polled && creates >= 2 {
                Ok(())
            } else {
                Err(format!(
                    "second polled: {polled}; first's creates: {creates}"
                ))
            }
        },
    )
    .await;

    // The first replica can no longer renew: every lease request of its user fails.
    bed.kube.inject(Fault {
        matches: RequestMatch {
            resource: "coordination.k8s.io/leases".into(),
            user: FIRST_USER.into(),
            ..Default::default()
        },
        code: 503,
        times: 0,
        latency_ms: 0,
    });
    eventually("the second replica to take the lease over", || async {
        let holder = cinder_lease_holder(&bed).await;
        if holder == SECOND {
            Ok(())
        } else {
            Err(format!("holder {holder:?}"))
        }
    })
    .await;
    eventually("the deposed replica to exit", || {
        let exited = if first.is_running() {
            Err(first.tail())
        } else {
            Ok(())
        };
        async move { exited }
    })
    .await;
    wait_available(&bed).await;
    assert!(second.is_running(), "{}", second.tail());
    let requests = bed.kube.requests();
    bed.kube.clear_faults();

    // In the order the server completed them: nothing of the first replica after the second's
    // first write.
    let steal = requests
        .iter()
        .position(|r| r.user == SECOND_USER && is_write(r))
        .expect("the second replica wrote");
    assert!(
        is_lease(&requests[steal]) && requests[steal].verb == "update",
        "the new leader's first write takes the lease over: {}",
        describe_at(steal, &requests[steal])
    );
    let late: Vec<String> = requests
        .iter()
        .enumerate()
        .skip(steal + 1)
        .filter(|(_, r)| r.user == FIRST_USER && is_write(r))
        .map(|(i, r)| describe_at(i, r))
        .collect();
    assert!(
        late.is_empty(),
        "the deposed replica wrote after {}:\n{late:#?}\n--- deposed replica ---\n{}",
        describe_at(steal, &requests[steal]),
        first.tail()
    );

    // The lease was stolen in the middle of the install: the first replica had created some of
    // the driver's objects, and the second created the rest.
    let created_by = |user: &str| {
        requests
            .iter()
            .filter(|r| {
                r.user == user
                    && r.verb == "create"
                    && r.code == 201
                    && !is_lease(r)
                    && !r.resource.ends_with("/events")
            })
            .count()
    };
    assert!(created_by(FIRST_USER) >= 2, "the first replica installed");
    assert!(
        created_by(SECOND_USER) >= 1,
        "the second replica finished an install the first had not"
    );

    // The deposed replica says why it stopped, and that its reconcile was cut, not finished
    // (the loop is told to stop as the lease is lost, so either of the loop's two reasons may
    // be the one logged).
    let out = first.output();
    for said in [
        "failed to renew the leader lease within the renew deadline",
        "the reconcile in flight is cancelled",
        "lost the leader lease",
    ] {
        assert!(out.contains(said), "{said:?} missing from:\n{out}");
    }
    let denied = bed.kube.forbidden_requests();
    assert!(denied.is_empty(), "RBAC refused: {denied:#?}");
    assert!(second.is_running());
}
