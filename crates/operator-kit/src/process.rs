//! One operator process: leader election, the metrics endpoint, the watch caches and the
//! reconcile loop, wired together and shut down in order.
//!
//! The endpoint serves `/metrics` over HTTPS with delegated authentication (`serving`,
//! `delegated_auth`) and `/healthz`, `/readyz` from the state this module feeds to `health`:
//! the caches' sync state, the leader election's state, and when each reconcile starts and
//! ends.
//!
//! Writes happen only while this replica holds the lease. On SIGTERM the loop stops, then the
//! lease is released so a successor takes over at once; losing the lease makes the process
//! exit with an error (the kubelet restarts it as a candidate), as client-go's elector does.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use tokio::sync::{Mutex, watch};
use tracing::{info, warn};

use crate::cache::{Cache, SyncState};
use crate::delegated_auth::DelegatedAuth;
use crate::health::{Health, Leadership};
use crate::leader::{LeaderElector, LeaderState};
use crate::leader_timing::LeaderTiming;
use crate::metrics::{self, Metrics};
use crate::runtime::{self, LoopOptions, Outcome};
use crate::serving::{self, CertSource, Serving};

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
    /// How the endpoint is served.
    pub endpoint: EndpointOptions,
    pub loop_options: LoopOptions,
}

/// How the metrics and health endpoint is served.
#[derive(Debug, Clone)]
pub struct EndpointOptions {
    pub serving: Serving,
    /// Names in the self-signed certificate, when one is served.
    pub self_signed_names: Vec<String>,
    /// A reconcile running longer than this fails `/healthz` (the kubelet then restarts the
    /// container).
    pub stuck_after: Duration,
}

impl Default for EndpointOptions {
    /// HTTPS with the service-ca certificate from OpenShift's mount path, as the operators'
    /// Deployments have it.
    fn default() -> Self {
        Self {
            serving: Serving::Https(CertSource::dir(serving::DEFAULT_CERT_DIR)),
            self_signed_names: vec!["localhost".into(), "127.0.0.1".into()],
            stuck_after: Duration::from_secs(600),
        }
    }
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
    #[error("cannot serve metrics over HTTPS: {0}")]
    Certificate(#[from] serving::CertError),
    #[error("cannot serve metrics over HTTPS: {0}")]
    Tls(#[from] rustls::Error),
}

/// The watches that have not completed their first list.
fn unsynced(cache: &Cache) -> Vec<String> {
    let mut out: Vec<String> = cache
        .states()
        .into_iter()
        .filter(|(_, _, state)| *state == SyncState::Starting)
        .map(|(kind, _, _)| kind)
        .collect();
    out.sort();
    out.dedup();
    out
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

    let health = Health::new(options.endpoint.stuck_after);
    {
        let cache = cache.clone();
        health.watch_caches(Box::new(move || unsynced(&cache)));
    }
    if let Some(addr) = options.metrics_addr {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ProcessError::Metrics { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| ProcessError::Metrics { addr, source })?;
        let stopped = async move {
            let _ = stop_for_metrics.wait_for(|s| *s).await;
        };
        match &options.endpoint.serving {
            Serving::PlainHttp => {
                warn!(%addr, "serving metrics over plain HTTP without authentication");
                let router = metrics::router(metrics::Endpoint {
                    metrics: metrics.clone(),
                    health: health.clone(),
                    auth: None,
                });
                tokio::spawn(async move {
                    if let Err(e) = axum::serve(listener, router)
                        .with_graceful_shutdown(stopped)
                        .await
                    {
                        warn!(error = %e, "metrics endpoint stopped");
                    }
                });
            }
            Serving::Https(source) => {
                let cert = match source {
                    CertSource::Secret { service, secret } => {
                        own_certificate(
                            client.clone(),
                            crate::metrics_cert::Request {
                                namespace: options.namespace.clone(),
                                service: service.clone(),
                                secret: secret.clone(),
                            },
                            &options.endpoint.self_signed_names,
                            stop_rx.clone(),
                        )
                        .await?
                    }
                    _ => serving::certificate(
                        source,
                        &options.endpoint.self_signed_names,
                        stop_rx.clone(),
                    )?,
                };
                let tls = serving::TlsListener::new(listener, serving::acceptor(cert)?)
                    .map_err(|source| ProcessError::Metrics { addr, source })?;
                info!(%addr, "serving metrics over HTTPS");
                let router = metrics::router(metrics::Endpoint {
                    metrics: metrics.clone(),
                    health: health.clone(),
                    auth: Some(DelegatedAuth::kube(client.clone())),
                });
                tokio::spawn(async move {
                    if let Err(e) = axum::serve(tls, router)
                        .with_graceful_shutdown(stopped)
                        .await
                    {
                        warn!(error = %e, "metrics endpoint stopped");
                    }
                });
            }
        }
    }

    let elector = LeaderElector::new(
        client,
        &options.namespace,
        &options.lock_name,
        &options.identity,
        options.timing,
    );
    // The lease is released only once the loop has stopped (and with it every request of the
    // reconcile in flight): a successor must not start writing while this replica still is.
    let (release_tx, mut release_rx) = watch::channel(false);
    let leader = elector.run(async move {
        let _ = release_rx.wait_for(|r| *r).await;
    });
    let mut states = leader.subscribe();
    let (leading_tx, leading_rx) = watch::channel(false);
    let lock = options.lock_name.clone();
    let lost = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let lost_flag = lost.clone();
    let stop_on_loss = stop_rx.clone();
    let health_of_lease = health.clone();
    tokio::spawn(async move {
        loop {
            let state = *states.borrow_and_update();
            health_of_lease.set_leadership(match state {
                LeaderState::Candidate => Leadership::Standby,
                LeaderState::Leading => Leadership::Leading,
                LeaderState::Lost => Leadership::Lost,
                LeaderState::Stopped => Leadership::Stopped,
            });
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

    // A stalled API server can keep the caches from syncing; SIGTERM must still end the
    // process promptly.
    tokio::select! {
        () = cache.wait_until_ready() => info!("watch caches synced"),
        // The guard `wait_for` returns is not Send: drop it inside the branch future.
        () = async { let _ = stop_for_leader.wait_for(|s| *s).await; } => {
            info!("shutdown before the watch caches synced");
            release_tx.send_replace(true);
            leader.join().await;
            return Ok(());
        }
    }
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
            let health = health.clone();
            async move {
                let _busy = health.begin_reconcile();
                r.lock().await.reconcile().await
            }
        },
    )
    .await;
    if lost.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(ProcessError::LostLease(options.lock_name));
    }
    // Shutdown: the loop has returned, so no write of ours can follow; release the lease.
    release_tx.send_replace(true);
    leader.join().await;
    info!("stopped");
    Ok(())
}

/// How often the operator's own serving-cert Secret is looked at again (renewal, a
/// cert-manager rotation); while it cannot be read or written, every [`OWN_CERT_RETRY`].
const OWN_CERT_RECHECK: Duration = Duration::from_secs(600);
const OWN_CERT_RETRY: Duration = Duration::from_secs(10);

/// The certificate of [`CertSource::Secret`]: the Secret's, kept current by a task; a
/// temporary self-signed one while the Secret cannot be had (logged, retried).
async fn own_certificate(
    client: kube::Client,
    request: crate::metrics_cert::Request,
    fallback_names: &[String],
    mut stop: watch::Receiver<bool>,
) -> Result<Arc<serving::ReloadingCert>, ProcessError> {
    use crate::own_serving_cert::{Pem, ensure};
    let path = std::path::PathBuf::from(format!("Secret {}/{}", request.namespace, request.secret));
    let parse = move |pem: &Pem| serving::parse_pem(&pem.cert, &pem.key, &path, &path);
    let (initial, mut last) = match ensure(&client, &request)
        .await
        .map_err(|e| e.to_string())
        .and_then(|p| parse(&p).map(|k| (k, p)).map_err(|e| e.to_string()))
    {
        Ok((key, pem)) => {
            info!(secret = %request.secret, "serving metrics with the certificate of the operator's serving-cert Secret");
            (key, Some(pem))
        }
        Err(e) => {
            warn!(error = %e, "serving metrics with a temporary self-signed certificate until the serving-cert Secret can be used");
            (serving::self_signed(fallback_names)?.0, None)
        }
    };
    let cert = serving::ReloadingCert::new(initial);
    let kept = cert.clone();
    tokio::spawn(async move {
        loop {
            let wait = if last.is_some() {
                OWN_CERT_RECHECK
            } else {
                OWN_CERT_RETRY
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            match ensure(&client, &request).await {
                Ok(pem) if last.as_ref() == Some(&pem) => {}
                Ok(pem) => match parse(&pem) {
                    Ok(key) => {
                        kept.replace(key);
                        info!(secret = %request.secret, "serving-cert Secret changed; reloaded");
                        last = Some(pem);
                    }
                    Err(e) => {
                        warn!(error = %e, "cannot use the serving-cert Secret; keeping the certificate in use")
                    }
                },
                Err(e) => {
                    warn!(error = %e, "cannot read or renew the serving-cert Secret; keeping the certificate in use")
                }
            }
        }
    });
    Ok(cert)
}
