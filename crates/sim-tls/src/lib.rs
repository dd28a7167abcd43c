//! HTTPS for the emulators (kube-sim and openstack-sim): a CA generated at start and a serving
//! certificate for the listen address, and one HTTP/1.1 connection served plain or over TLS.
//!
//! A crate of its own because openstack-sim does not depend on kube-sim and should not pull in
//! k8s-openapi and a CEL interpreter for forty lines of rcgen and hyper. Test substrate only:
//! keys live in memory, are never written and never reused across starts.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::service::HttpService;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::{self, pki_types::PrivateKeyDer, pki_types::PrivatePkcs8KeyDer};

/// The names a generated pair carries.
#[derive(Debug, Clone, Copy)]
pub struct Names<'a> {
    /// The CA's common name, which clients show when they distrust it.
    pub ca: &'a str,
    /// The serving certificate's common name.
    pub server: &'a str,
    /// DNS names the serving certificate is valid for, besides the listen address's IP.
    pub dns: &'a [&'a str],
}

/// A CA and a serving certificate it signed for `addr`: the acceptor, and the CA's PEM for the
/// client configuration (kubeconfig, clouds.yaml) that must trust it.
pub fn self_signed(addr: SocketAddr, names: Names<'_>) -> Result<(TlsAcceptor, String), String> {
    let ca_key = KeyPair::generate().map_err(|e| e.to_string())?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, names.ca);
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).map_err(|e| e.to_string())?;
    let ca_issuer = rcgen::Issuer::new(ca_params, ca_key);

    let key = KeyPair::generate().map_err(|e| e.to_string())?;
    let dns: Vec<String> = names.dns.iter().map(|d| d.to_string()).collect();
    let mut params = CertificateParams::new(dns).map_err(|e| e.to_string())?;
    params.subject_alt_names.push(SanType::IpAddress(addr.ip()));
    params
        .distinguished_name
        .push(DnType::CommonName, names.server);
    let cert = params
        .signed_by(&key, &ca_issuer)
        .map_err(|e| e.to_string())?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .map_err(|e| e.to_string())?;
    // Both emulators speak HTTP/1.1 only; saying so keeps clients from trying h2.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((TlsAcceptor::from(Arc::new(config)), ca_cert.pem()))
}

/// Serves one accepted connection with `service` until the client is done or `stop` resolves
/// (a shutdown, or an emulated restart that must cut open connections). A failed TLS
/// handshake just ends the connection, as a real server's would.
pub async fn serve_connection<S>(
    stream: TcpStream,
    tls: Option<TlsAcceptor>,
    service: S,
    stop: impl Future<Output = ()>,
) where
    S: HttpService<Incoming>,
    S::ResBody: 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let builder = hyper::server::conn::http1::Builder::new();
    match tls {
        Some(acceptor) => {
            let Ok(tls_stream) = acceptor.accept(stream).await else {
                return;
            };
            let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(tls_stream), service);
            tokio::select! {
                _ = conn => {}
                _ = stop => {}
            }
        }
        None => {
            let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::select! {
                _ = conn => {}
                _ = stop => {}
            }
        }
    }
}
