//! One operator process: leader election, the metrics endpoint, the watch caches and the
//! reconcile loop, wired together and shut down in order.
//!
//! Writes happen only while this replica holds the lease. On SIGTERM the loop stops, then the
//! lease is released so a successor takes over at once; losing the lease makes the process
//! exit with an error (the kubelet restarts it as a candidate), as client-go's elector does.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use kube::Client;
use tokio::sync::{Mutex, watch};
use tracing::{info, warn};

use crate::cache::Cache;
use crate::leader::{LeaderElector, LeaderState};
use crate::leader_timing::LeaderTiming;
use crate::metrics::{self, Metrics};
use crate::runtime::{self, LoopOptions, Outcome};

/// How the process runs.
#[derive(Debug, Clone)]
pub struct ProcessOptions {
    /// Namespace of the lease.
    pub namespace: String,
    /// Lease name, `<operator>-lock`.
    pub lock_name: String,
    /// This replica's identity in the lease (the pod name).
    pub identity: String,
    pub timing: LeaderTiming,
    /// Where `/metrics` is served; `None` for no endpoint.
    pub metrics_addr: Option<SocketAddr>,
    pub loop_options: LoopOptions,
}

/// Why the process stopped.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("lost the leader lease {0}; exiting so that only one replica writes")]
    LostLease(String),
    #[error("cannot serve metrics on {addr}: {source}")]
    Metrics {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Something that reconciles the operator's CR once.
pub trait Reconciler: Send + 'static {
    fn reconcile(&mut self) -> impl Future<Output = Outcome> + Send;
}

/// Runs until `shutdown` resolves (or the lease is lost).
pub async fn run<R: Reconciler>(
    client: Client,
    options: ProcessOptions,
    cache: Cache,
    metrics: Arc<Metrics>,
    reconciler: R,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ProcessError> {
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut stop_for_metrics = stop_rx.clone();
    let mut stop_for_leader = stop_rx.clone();
    tokio::spawn(async move {
        shutdown.await;
        stop_tx.send_replace(true);
    });

    if let Some(addr) = options.metrics_addr {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ProcessError::Metrics { addr, source })?;
        info!(%addr, "serving metrics");
        let router = metrics::router(metrics.clone());
        tokio::spawn(async move {
            let stopped = async move {
                let _ = stop_for_metrics.wait_for(|s| *s).await;
            };
            if let Err(e) = axum::serve(listener, router)
                .with_graceful_shutdown(stopped)
                .await
            {
                warn!(error = %e, "metrics endpoint stopped");
            }
        });
    }

    let elector = LeaderElector::new(
        client,
        &options.namespace,
        &options.lock_name,
        &options.identity,
        options.timing,
    );
    let leader = elector.run(async move {
        let _ = stop_for_leader.wait_for(|s| *s).await;
    });
    let mut states = leader.subscribe();
    let (leading_tx, leading_rx) = watch::channel(false);
    let lock = options.lock_name.clone();
    let lost = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let lost_flag = lost.clone();
    let stop_on_loss = stop_rx.clone();
    tokio::spawn(async move {
        loop {
            let state = *states.borrow_and_update();
            leading_tx.send_replace(state == LeaderState::Leading);
            if state == LeaderState::Leading {
                info!(lease = %lock, "leading");
            }
            if state == LeaderState::Lost {
                lost_flag.store(true, std::sync::atomic::Ordering::SeqCst);
                return;
            }
            if states.changed().await.is_err() || *stop_on_loss.borrow() {
                return;
            }
        }
    });

    cache.wait_until_ready().await;
    info!("watch caches synced");
    let reconciler = Arc::new(Mutex::new(reconciler));
    let mut loop_stop = stop_rx.clone();
    let lost_watch = lost.clone();
    let (loop_stop_tx, loop_stop_rx) = watch::channel(false);
    // The loop stops on shutdown or on a lost lease, whichever comes first.
    let mut leading_for_loss = leading_rx.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = loop_stop.wait_for(|s| *s) => break,
                r = leading_for_loss.changed() => {
                    if r.is_err() || lost_watch.load(std::sync::atomic::Ordering::SeqCst) { break; }
                }
            }
        }
        loop_stop_tx.send_replace(true);
    });
    runtime::run(
        options.loop_options,
        cache.changes(),
        leading_rx,
        loop_stop_rx,
        move || {
            let r = reconciler.clone();
            async move { r.lock().await.reconcile().await }
        },
    )
    .await;
    if lost.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(ProcessError::LostLease(options.lock_name));
    }
    // Shutdown: the elector releases the lease once `shutdown` fired; wait for it.
    leader.join().await;
    info!("stopped");
    Ok(())
}
