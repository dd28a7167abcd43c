//! The export-network calls against openstack-sim: the cluster's shares (filtered by the
//! driver's tag, newest first, capped), their export locations, and share networks with
//! subnets, including the fallback for clouds older than microversion 2.51.

use std::time::Duration;

use openstack::{Client, ClientOptions, CloudConfig, MANILA_CLUSTER_KEY, ProxySetting, Step};
use openstack_sim::{
    Fault, OpenStackSim, SimConfig, SimExportLocation, SimService, SimShare, SimShareNetwork,
    SimShareNetworkSubnet, SimStorage,
};

async fn start() -> (OpenStackSim, Client) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sim = OpenStackSim::start(SimConfig::default(), "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("sim starts");
    let options = ClientOptions {
        request_timeout: Duration::from_secs(10),
        proxy: ProxySetting::Disabled,
        ..ClientOptions::default()
    };
    let config = CloudConfig::from_clouds_yaml(&sim.clouds_yaml("openstack"), "openstack")
        .expect("clouds.yaml");
    let client = Client::new(config, &options).expect("client");
    (sim, client)
}

fn seed(sim: &OpenStackSim) {
    let mut shares = vec![
        SimShare::new("s-old", "pvc-old")
            .with_metadata(MANILA_CLUSTER_KEY, "c1")
            .of_type("gold")
            .on_share_network("sn-1")
            .exported_at(SimExportLocation::new("172.16.0.5:/old"))
            .exported_at(SimExportLocation::admin_only("10.254.0.5:/old")),
        SimShare::new("s-other", "pvc-other").with_metadata(MANILA_CLUSTER_KEY, "c2"),
        SimShare::new("s-new", "pvc-new")
            .with_metadata(MANILA_CLUSTER_KEY, "c1")
            .exported_at(SimExportLocation::new("[fd00:5::9]:/new")),
    ];
    let mut error = SimShare::new("s-error", "pvc-error").with_metadata(MANILA_CLUSTER_KEY, "c1");
    error.status = "error".into();
    shares.push(error);
    sim.set_storage(SimStorage {
        shares,
        ..SimStorage::default()
    });
    sim.set_share_networks(vec![SimShareNetwork::new(
        "sn-1",
        "storage",
        vec![
            SimShareNetworkSubnet::new("sub-1", "172.16.0.0/24"),
            SimShareNetworkSubnet::new("sub-2", "fd00:5::/64"),
        ],
    )]);
}

#[tokio::test]
async fn the_clusters_available_shares_newest_first_and_capped() {
    let (sim, c) = start().await;
    seed(&sim);
    let shares = c
        .shares_tagged(MANILA_CLUSTER_KEY, "c1", 10)
        .await
        .expect("listed");
    let ids: Vec<&str> = shares.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        ["s-new", "s-old"],
        "c1's available shares, newest first"
    );
    assert_eq!(shares[1].share_type(), "gold");
    assert_eq!(shares[1].share_network_id.as_deref(), Some("sn-1"));
    assert_eq!(shares[0].share_network_id, None);
    let one = c
        .shares_tagged(MANILA_CLUSTER_KEY, "c1", 1)
        .await
        .expect("listed");
    assert_eq!(one.len(), 1);
    let listing = sim
        .requests()
        .into_iter()
        .rfind(|r| r.path.ends_with("/shares/detail"))
        .expect("logged");
    assert_eq!(listing.manila_microversion.as_deref(), Some("2.14"));
}

#[tokio::test]
async fn export_locations_and_subnets_are_read() {
    let (sim, c) = start().await;
    seed(&sim);
    let locations = c.share_export_locations("s-old").await.expect("read");
    assert_eq!(locations.len(), 2);
    assert_eq!(
        locations[0].addresses,
        ["172.16.0.5".parse::<std::net::IpAddr>().expect("ip")]
    );
    assert!(locations[0].preferred && locations[1].is_admin_only);
    let v6 = c.share_export_locations("s-new").await.expect("read");
    assert_eq!(
        v6[0].addresses,
        ["fd00:5::9".parse::<std::net::IpAddr>().expect("ip")]
    );
    let missing = c.share_export_locations("nope").await.expect_err("404");
    assert_eq!(missing.status(), Some(404));
    assert_eq!(missing.step(), Some(Step::ListShareExportLocations));
    let refused = c
        .share_export_locations("../types")
        .await
        .expect_err("not an id");
    assert_eq!(refused.step(), Some(Step::ListShareExportLocations));

    let network = c.share_network("sn-1").await.expect("read");
    let cidrs: Vec<String> = network
        .subnets
        .iter()
        .filter_map(|s| s.cidr.map(|c| c.to_string()))
        .collect();
    assert_eq!(cidrs, ["172.16.0.0/24", "fd00:5::/64"]);
    assert_eq!(
        c.share_network("sn-9").await.expect_err("404").status(),
        Some(404)
    );
}

/// A cloud older than 2.51 answers 406; the network is read again with 2.14, where the first
/// subnet's CIDR is the network's own field.
#[tokio::test]
async fn an_older_cloud_is_read_without_subnets() {
    let (sim, c) = start().await;
    seed(&sim);
    sim.inject(
        Fault::respond(
            406,
            r#"{"notAcceptable": {"code": 406, "message": "Version 2.51 is not supported by the API."}}"#,
        )
        .on_path("/public/share/v2/share-networks/sn-1")
        .times(1),
    );
    let network = c
        .share_network("sn-1")
        .await
        .expect("read after the fallback");
    assert_eq!(network.subnets.len(), 1);
    assert_eq!(
        network.subnets[0].cidr.map(|c| c.to_string()).as_deref(),
        Some("172.16.0.0/24")
    );
    let versions: Vec<Option<String>> = sim
        .requests()
        .into_iter()
        .filter(|r| r.service == SimService::Share && r.path.ends_with("/share-networks/sn-1"))
        .map(|r| r.manila_microversion)
        .collect();
    assert_eq!(versions, [Some("2.51".into()), Some("2.14".into())]);
}

/// A broken answer is an error naming the step, never a panic or an unbounded read.
#[tokio::test]
async fn malformed_answers_are_errors_of_their_step() {
    let (sim, c) = start().await;
    seed(&sim);
    sim.inject(
        Fault::respond(200, "{\"shares\": [")
            .on(SimService::Share)
            .times(1),
    );
    let e = c
        .shares_tagged(MANILA_CLUSTER_KEY, "c1", 10)
        .await
        .expect_err("bad JSON");
    assert_eq!(e.step(), Some(Step::ListShares));
    assert!(e.to_string().contains("not JSON"), "{e}");
    sim.inject(
        Fault::respond(200, "{\"share_network\": 5}")
            .on(SimService::Share)
            .times(1),
    );
    let e = c.share_network("sn-1").await.expect_err("not a network");
    assert_eq!(e.step(), Some(Step::ReadShareNetwork));
}
