//! The accept loop: serving until shutdown, and the emulated restart that drops every
//! connection and binds again after the downtime.

use super::handle::handle;
use crate::Shared;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// Serves until `shutdown` fires; a restart drops the listener and every connection, waits
/// the requested downtime, and binds the same address again.
pub async fn serve(
    shared: Arc<Shared>,
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let addr: SocketAddr = match listener.local_addr() {
        Ok(a) => a,
        Err(_) => return,
    };
    let mut listener = Some(listener);
    let mut restart = shared.restart.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        let l = match listener.take() {
            Some(l) => l,
            None => match bind_again(addr).await {
                Some(l) => l,
                None => return,
            },
        };
        loop {
            tokio::select! {
                accepted = l.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(connection(shared.clone(), stream, tls.clone()));
                }
                changed = restart.changed() => {
                    if changed.is_err() { return; }
                    break;
                }
                _ = shutdown.changed() => return,
            }
        }
        drop(l);
        let downtime = *restart.borrow_and_update();
        tokio::time::sleep(Duration::from_millis(downtime)).await;
    }
}

pub(super) async fn bind_again(addr: SocketAddr) -> Option<TcpListener> {
    for _ in 0..100 {
        if let Ok(l) = TcpListener::bind(addr).await {
            return Some(l);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

pub(super) async fn connection(
    shared: Arc<Shared>,
    stream: tokio::net::TcpStream,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let mut restart = shared.restart.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    let svc_shared = shared.clone();
    let service = hyper::service::service_fn(move |req| handle(svc_shared.clone(), req));
    // A restart cuts open connections too, as a restarting API server's clients see.
    let stop = async {
        tokio::select! {
            _ = restart.changed() => {}
            _ = shutdown.changed() => {}
        }
    };
    sim_tls::serve_connection(stream, tls, service, stop).await;
}
