//! Leader election against kube-sim: one leader among candidates, release on shutdown hands
//! over at once, an expired lease is taken over, and a stolen lease is reported as lost.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use kube_sim::{KubeSim, SimConfig};
use operator_kit::leader::{LeaderElector, LeaderHandle, LeaderState, LeaderTimings, lock_name};
use tokio::sync::oneshot;

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

const NS: &str = "default";
const DEADLINE: Duration = Duration::from_secs(10);

async fn client_for(sim: &KubeSim, user: &str) -> Client {
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let kubeconfig = Kubeconfig::from_yaml(&sim.kubeconfig(user)).expect("kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("config");
    Client::try_from(config).expect("client")
}

async fn start() -> (KubeSim, Client) {
    let sim = KubeSim::start(
        SimConfig::default(),
        "127.0.0.1:0".parse().expect("address"),
    )
    .await
    .expect("kube-sim starts");
    let client = client_for(&sim, "test").await;
    (sim, client)
}

async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
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

/// A lease far longer than the test deadline: only a release (or expiry of a record that
/// says otherwise) can hand it over in time.
fn long_lease() -> LeaderTimings {
    LeaderTimings {
        lease_duration: Duration::from_secs(60),
        renew_deadline: Duration::from_secs(40),
        retry_period: Duration::from_millis(100),
    }
}

fn candidate(client: &Client, identity: &str) -> (LeaderHandle, oneshot::Sender<()>) {
    let (stop, stopped) = oneshot::channel::<()>();
    let elector = LeaderElector::new(
        client.clone(),
        NS,
        &lock_name("test-operator"),
        identity,
        long_lease(),
    );
    let handle = elector.run(async move {
        let _ = stopped.await;
    });
    (handle, stop)
}

async fn holder(client: &Client) -> Option<String> {
    let api: Api<Lease> = Api::namespaced(client.clone(), NS);
    api.get_opt("test-operator-lock")
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
}

#[tokio::test]
async fn exactly_one_of_two_candidates_leads_and_release_hands_over() -> TestResult {
    let (_sim, client) = start().await;
    let (a, stop_a) = candidate(&client, "a");
    let (b, stop_b) = candidate(&client, "b");
    let leader = eventually("a leader", || {
        let state = (a.is_leading(), b.is_leading());
        async move {
            match state {
                (true, false) => Some("a"),
                (false, true) => Some("b"),
                _ => None,
            }
        }
    })
    .await;
    // Several retry periods later, still exactly one leader, and the Lease names it.
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!(a.is_leading() && b.is_leading()), "two leaders");
        assert!(
            a.is_leading() || b.is_leading(),
            "leadership lost without cause"
        );
    }
    assert_eq!(holder(&client).await.as_deref(), Some(leader));

    // The leader shuts down: it releases the lease, and the other takes over long before the
    // 60 s lease would have expired.
    let (mut follower, follower_stop, leader_handle, leader_stop) = if leader == "a" {
        (b, stop_b, a, stop_a)
    } else {
        (a, stop_a, b, stop_b)
    };
    let _ = leader_stop.send(());
    let mut leader_state = leader_handle.subscribe();
    leader_handle.join().await;
    assert_eq!(*leader_state.borrow_and_update(), LeaderState::Stopped);
    assert!(
        tokio::time::timeout(DEADLINE, follower.wait_leading())
            .await
            .unwrap_or(false),
        "the follower takes over after the release"
    );
    assert_ne!(holder(&client).await.as_deref(), Some(leader));
    let _ = follower_stop.send(());
    follower.join().await;
    assert_eq!(holder(&client).await, None, "released on shutdown");
    Ok(())
}

#[tokio::test]
async fn an_expired_lease_is_taken_over() -> TestResult {
    let (_sim, client) = start().await;
    let api: Api<Lease> = Api::namespaced(client.clone(), NS);
    let old = MicroTime(jiff::Timestamp::from_second(1_600_000_000)?);
    api.create(
        &PostParams::default(),
        &Lease {
            metadata: ObjectMeta {
                name: Some("test-operator-lock".into()),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some("crashed-replica".into()),
                lease_duration_seconds: Some(1),
                acquire_time: Some(old.clone()),
                renew_time: Some(old),
                lease_transitions: Some(4),
                ..Default::default()
            }),
        },
    )
    .await?;
    let (mut me, stop) = candidate(&client, "me");
    assert!(
        tokio::time::timeout(DEADLINE, me.wait_leading())
            .await
            .unwrap_or(false),
        "the expired lease is taken over"
    );
    let spec = api
        .get("test-operator-lock")
        .await?
        .spec
        .unwrap_or_default();
    assert_eq!(spec.holder_identity.as_deref(), Some("me"));
    assert_eq!(spec.lease_transitions, Some(5));
    assert_eq!(spec.lease_duration_seconds, Some(60));
    let _ = stop.send(());
    me.join().await;
    Ok(())
}

#[tokio::test]
async fn a_held_lease_is_not_taken_over_while_it_is_renewed() -> TestResult {
    let (_sim, client) = start().await;
    let (mut first, stop_first) = candidate(&client, "first");
    assert!(
        tokio::time::timeout(DEADLINE, first.wait_leading())
            .await
            .unwrap_or(false)
    );
    let (second, stop_second) = candidate(&client, "second");
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(second.state(), LeaderState::Candidate);
    }
    let _ = stop_second.send(());
    second.join().await;
    assert!(first.is_leading());
    let _ = stop_first.send(());
    first.join().await;
    Ok(())
}

#[tokio::test]
async fn a_stolen_lease_is_reported_as_lost() -> TestResult {
    let (_sim, client) = start().await;
    let (mut me, _stop) = candidate(&client, "me");
    assert!(
        tokio::time::timeout(DEADLINE, me.wait_leading())
            .await
            .unwrap_or(false)
    );
    // Someone overwrites the lease (e.g. a partitioned replica came back with a new record).
    let api: Api<Lease> = Api::namespaced(client.clone(), NS);
    eventually("the lease to be overwritten", || {
        let api = api.clone();
        async move {
            let mut lease = api.get("test-operator-lock").await.ok()?;
            if let Some(spec) = lease.spec.as_mut() {
                spec.holder_identity = Some("thief".into());
                spec.renew_time = Some(MicroTime(jiff::Timestamp::now()));
            }
            // A 409 means the leader renewed meanwhile: read again.
            api.replace("test-operator-lock", &PostParams::default(), &lease)
                .await
                .ok()
        }
    })
    .await;
    let mut state = me.subscribe();
    let lost = tokio::time::timeout(DEADLINE, state.wait_for(|s| *s == LeaderState::Lost)).await;
    assert!(lost.is_ok(), "loss of leadership is observable");
    Ok(())
}
