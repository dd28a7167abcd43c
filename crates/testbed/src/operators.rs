//! A driver operator run in-process against the testbed, as its process runs it (lease,
//! loop, no metrics listener), for tests that watch what it does to the cluster. The operator
//! is made as the binary makes it ([`CsiOperator::from_options`]); only the process shell
//! around it (flags, signals, the metrics port) is left out.

use std::time::Duration;

use kube::Client;
use operator_kit::cache::CacheBuilder;
use operator_kit::csi::{CsiOperator, DriverOptions};
use operator_kit::logging::LogControl;
use operator_kit::metrics::Metrics;
use operator_kit::process::{self, EndpointOptions, ProcessOptions, Reconciler};
use operator_kit::runtime::LoopOptions;
use tokio::sync::oneshot;

/// Where a test runs an operator: its lease's namespace and name, and how often it resyncs.
pub struct Lease<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub resync: Duration,
}

/// Starts the operator that `opts` describe, as `client`'s user, with the watches `watches`
/// makes; it runs until the returned sender is used or dropped.
///
/// # Panics
/// When the watches cannot be prepared: the test's options are wrong.
pub fn run_driver_operator<O, E>(
    client: Client,
    opts: O,
    watches: impl FnOnce(Client, &O) -> Result<CacheBuilder, E>,
    lease: Lease<'_>,
) -> oneshot::Sender<()>
where
    O: DriverOptions,
    E: std::fmt::Display,
    CsiOperator<O::Driver>: Reconciler + Send + 'static,
{
    let cache = watches(client.clone(), &opts)
        .unwrap_or_else(|e| panic!("the watches: {e}"))
        .start();
    let metrics = Metrics::new("test");
    let operator = CsiOperator::from_options(
        client.clone(),
        opts,
        cache.clone(),
        metrics.clone(),
        LogControl::detached(),
    );
    let options = ProcessOptions {
        namespace: lease.namespace.into(),
        lock_name: lease.name.into(),
        identity: "test".into(),
        timing: operator_kit::leader_timing::LeaderTiming::DEFAULT,
        metrics_addr: None,
        endpoint: EndpointOptions::default(),
        loop_options: LoopOptions {
            resync: lease.resync,
            ..LoopOptions::default()
        },
    };
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = process::run(client, options, cache, metrics, operator, async move {
            let _ = stopped.await;
        })
        .await;
    });
    stop
}
