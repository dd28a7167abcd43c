//! HTTPS for the operator's metrics and health endpoint, as library-go's controllercmd serves
//! it: the service-ca serving certificate (`tls.crt`, `tls.key`) from a directory, picked up
//! again when service-ca rotates it, or a self-signed certificate where there is no service-ca.
//!
//! The certificate is chosen per handshake by [`ReloadingCert`], which a background task
//! refreshes by polling the files every few seconds (no inotify dependency; a rotation is
//! rare and a few seconds' delay harmless). A file that cannot be read or parsed never stops
//! the endpoint: the last good certificate stays in use and the problem is logged (the file's
//! path and the parse error, never its content). When the directory holds no certificate at
//! start, as when the serving-cert Secret has not been created yet, a self-signed certificate
//! is served until the files appear, as library-go does.
//!
//! This module knows nothing of authentication or of what is served; see `delegated_auth` and
//! `metrics`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tracing::{debug, info, warn};

/// The file names service-ca writes into a `kubernetes.io/tls` Secret.
pub const CERT_FILE: &str = "tls.crt";
pub const KEY_FILE: &str = "tls.key";
/// Where OpenShift's operator Deployments mount the serving-cert Secret.
pub const DEFAULT_CERT_DIR: &str = "/var/run/secrets/serving-cert";
/// How often the certificate files are looked at again.
pub const DEFAULT_RELOAD_INTERVAL: Duration = Duration::from_secs(5);
/// A client that does not finish its handshake in this time is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How the endpoint is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Serving {
    /// Plain HTTP, no authentication: for local development and benchmarks only.
    PlainHttp,
    /// HTTPS with delegated authentication and authorization of `/metrics`.
    Https(CertSource),
}

/// Where the serving certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertSource {
    /// `tls.crt` and `tls.key` in this directory, reloaded when they change; self-signed
    /// until they exist.
    Dir {
        dir: PathBuf,
        reload_every: Duration,
    },
    /// A certificate generated at start for these names (clusters without service-ca).
    SelfSigned { names: Vec<String> },
    /// A stable self-signed certificate the operator keeps in Secret `secret` of its own
    /// namespace, for Service `service`'s DNS names, so that a Prometheus can verify it
    /// ([`crate::own_serving_cert`]; plain Kubernetes). Served by the process, which reads the
    /// API: [`certificate`] refuses it.
    Secret { service: String, secret: String },
}

impl CertSource {
    /// The service-ca directory with the default poll interval.
    pub fn dir(dir: impl Into<PathBuf>) -> Self {
        Self::Dir {
            dir: dir.into(),
            reload_every: DEFAULT_RELOAD_INTERVAL,
        }
    }
}

/// Why a certificate could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} holds no PEM certificate")]
    NoCertificate { path: PathBuf },
    #[error("{path} is not valid PEM: {reason}")]
    BadPem { path: PathBuf, reason: String },
    #[error("{path} holds no PEM private key (PKCS#8, PKCS#1 or SEC1): {reason}")]
    BadKey { path: PathBuf, reason: String },
    #[error("the key in {key} does not fit the certificate in {cert}: {reason}")]
    Mismatch {
        cert: PathBuf,
        key: PathBuf,
        reason: String,
    },
    #[error("cannot generate a self-signed certificate: {0}")]
    Generate(String),
}

/// Parses a PEM certificate chain and key into what rustls serves. `cert_path` and
/// `key_path` only name the sources in errors.
pub fn parse_pem(
    cert_pem: &[u8],
    key_pem: &[u8],
    cert_path: &Path,
    key_path: &Path,
) -> Result<CertifiedKey, CertError> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CertError::BadPem {
            path: cert_path.to_owned(),
            reason: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(CertError::NoCertificate {
            path: cert_path.to_owned(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| CertError::BadKey {
        path: key_path.to_owned(),
        reason: e.to_string(),
    })?;
    let provider = rustls::crypto::ring::default_provider();
    CertifiedKey::from_der(chain, key, &provider).map_err(|e| CertError::Mismatch {
        cert: cert_path.to_owned(),
        key: key_path.to_owned(),
        reason: e.to_string(),
    })
}

/// Reads `tls.crt` and `tls.key` from `dir`. `Ok(None)` when either file is absent.
pub fn load_dir(dir: &Path) -> Result<Option<(CertifiedKey, FileStamp)>, CertError> {
    let cert_path = dir.join(CERT_FILE);
    let key_path = dir.join(KEY_FILE);
    let read = |p: &Path| match std::fs::read(p) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(CertError::Read {
            path: p.to_owned(),
            source,
        }),
    };
    let (Some(cert), Some(key)) = (read(&cert_path)?, read(&key_path)?) else {
        return Ok(None);
    };
    let stamp = FileStamp::of(&cert, &key);
    Ok(Some((
        parse_pem(&cert, &key, &cert_path, &key_path)?,
        stamp,
    )))
}

/// A digest of the two files' contents: what tells a rotation apart from nothing new (kubelet
/// rewrites Secret volumes through symlink swaps, so mtimes alone mislead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp([u8; 32]);

impl FileStamp {
    fn of(cert: &[u8], key: &[u8]) -> Self {
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        ctx.update(cert);
        ctx.update(&[0]);
        ctx.update(key);
        let mut out = [0u8; 32];
        out.copy_from_slice(ctx.finish().as_ref());
        Self(out)
    }
}

/// A self-signed certificate for `names` (DNS names or IP addresses), its key, and the
/// certificate's PEM (for clients that want to pin it).
pub fn self_signed(names: &[String]) -> Result<(CertifiedKey, String), CertError> {
    let names = if names.is_empty() {
        vec!["localhost".to_string()]
    } else {
        names.to_vec()
    };
    let key = rcgen::KeyPair::generate().map_err(|e| CertError::Generate(e.to_string()))?;
    let mut params =
        rcgen::CertificateParams::new(names).map_err(|e| CertError::Generate(e.to_string()))?;
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        "csi-operator self-signed metrics",
    );
    let cert = params
        .self_signed(&key)
        .map_err(|e| CertError::Generate(e.to_string()))?;
    let pem = cert.pem();
    let provider = rustls::crypto::ring::default_provider();
    let certified = CertifiedKey::from_der(
        vec![cert.der().clone()],
        PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        &provider,
    )
    .map_err(|e| CertError::Generate(e.to_string()))?;
    Ok((certified, pem))
}

/// The certificate served on each handshake; swapped in place on reload.
#[derive(Debug)]
pub struct ReloadingCert {
    current: RwLock<Arc<CertifiedKey>>,
    /// The files the current certificate came from; `None` while self-signed.
    stamp: RwLock<Option<FileStamp>>,
}

impl ReloadingCert {
    pub fn new(initial: CertifiedKey) -> Arc<Self> {
        Arc::new(Self {
            current: RwLock::new(Arc::new(initial)),
            stamp: RwLock::new(None),
        })
    }

    /// The certificate served now.
    pub fn current(&self) -> Arc<CertifiedKey> {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn set(&self, key: CertifiedKey, stamp: Option<FileStamp>) {
        *self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(key);
        *self
            .stamp
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = stamp;
    }

    /// Serves `key` from now on.
    pub fn replace(&self, key: CertifiedKey) {
        self.set(key, None);
    }

    fn stamp(&self) -> Option<FileStamp> {
        *self
            .stamp
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Looks at the directory once: swaps in a changed, valid certificate. Returns whether it
    /// swapped. Errors leave the served certificate as it is.
    pub fn reload_from(&self, dir: &Path) -> Result<bool, CertError> {
        match load_dir(dir)? {
            None => Ok(false),
            Some((_, stamp)) if Some(stamp) == self.stamp() => Ok(false),
            Some((key, stamp)) => {
                self.set(key, Some(stamp));
                Ok(true)
            }
        }
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// The certificate for `source`, and for a directory the task that keeps it current (it ends
/// when `stop` flips).
pub fn certificate(
    source: &CertSource,
    self_signed_names: &[String],
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<Arc<ReloadingCert>, CertError> {
    match source {
        CertSource::Secret { .. } => Err(CertError::Generate(
            "a certificate kept in a Secret is read from the API by the process, not here".into(),
        )),
        CertSource::SelfSigned { names } => {
            let names = if names.is_empty() {
                self_signed_names
            } else {
                names
            };
            let (key, _) = self_signed(names)?;
            info!("serving metrics with a self-signed certificate");
            Ok(ReloadingCert::new(key))
        }
        CertSource::Dir { dir, reload_every } => {
            let (fallback, _) = self_signed(self_signed_names)?;
            let cert = ReloadingCert::new(fallback);
            match cert.reload_from(dir) {
                Ok(true) => {
                    info!(dir = %dir.display(), "serving metrics with the certificate from the directory")
                }
                Ok(false) => warn!(
                    dir = %dir.display(),
                    "no {CERT_FILE} and {KEY_FILE} yet: serving metrics with an insecure self-signed certificate until they appear"
                ),
                Err(e) => {
                    warn!(error = %e, "serving metrics with an insecure self-signed certificate until the files are fixed")
                }
            }
            let watched = cert.clone();
            let dir = dir.clone();
            let every = *reload_every;
            tokio::spawn(async move {
                let mut last_error = String::new();
                loop {
                    tokio::select! {
                        _ = tokio::time::sleep(every) => {}
                        _ = stop.wait_for(|s| *s) => return,
                    }
                    match watched.reload_from(&dir) {
                        Ok(true) => {
                            info!(dir = %dir.display(), "serving certificate changed; reloaded");
                            last_error.clear();
                        }
                        Ok(false) => last_error.clear(),
                        Err(e) => {
                            // Once per distinct problem, not every poll.
                            let msg = e.to_string();
                            if msg != last_error {
                                warn!(error = %msg, "cannot reload the serving certificate; keeping the one in use");
                                last_error = msg;
                            }
                        }
                    }
                }
            });
            Ok(cert)
        }
    }
}

/// A TLS acceptor that asks `cert` on every handshake (TLS 1.2 and 1.3, HTTP/1.1).
pub fn acceptor(cert: Arc<ReloadingCert>) -> Result<TlsAcceptor, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(cert);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A listener handing axum connections whose TLS handshake completed. Handshakes run in their
/// own tasks, so a slow or silent client cannot hold up the others.
pub struct TlsListener {
    local: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
}

impl TlsListener {
    pub fn new(listener: TcpListener, acceptor: TlsAcceptor) -> std::io::Result<Self> {
        let local = listener.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        tokio::spawn(async move {
            loop {
                let (stream, peer) = match listener.accept().await {
                    Ok(x) => x,
                    Err(e) => {
                        // Out of file descriptors and the like: pause rather than spin.
                        debug!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                if tx.is_closed() {
                    return;
                }
                let acceptor = acceptor.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(Self { local, ready })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(x) => x,
            // The accept task only ends when this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pem_pair() -> (String, String) {
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["x.ns.svc".to_string()])
            .expect("params")
            .self_signed(&key)
            .expect("cert");
        (cert.pem(), key.serialize_pem())
    }

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    #[test]
    fn a_valid_pair_parses() {
        let (cert, key) = pem_pair();
        parse_pem(cert.as_bytes(), key.as_bytes(), &p("c"), &p("k")).expect("valid");
    }

    #[test]
    fn malformed_pem_is_a_clear_error() {
        let (cert, key) = pem_pair();
        let cases: Vec<(Vec<u8>, Vec<u8>, &str)> = vec![
            (
                b"not a certificate".to_vec(),
                key.clone().into_bytes(),
                "holds no PEM certificate",
            ),
            (
                b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n".to_vec(),
                key.clone().into_bytes(),
                "is not valid PEM",
            ),
            (
                cert.clone().into_bytes(),
                b"garbage".to_vec(),
                "holds no PEM private key",
            ),
            (
                cert.clone().into_bytes(),
                b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".to_vec(),
                "/k",
            ),
        ];
        for (c, k, want) in cases {
            let err = parse_pem(&c, &k, &p("/c"), &p("/k"))
                .expect_err("malformed input is refused")
                .to_string();
            assert!(err.contains(want), "{err:?} should say {want:?}");
            assert!(!err.contains("BEGIN"), "no file content in errors: {err}");
        }
    }

    #[test]
    fn a_key_of_another_certificate_is_refused() {
        let (cert, _) = pem_pair();
        let (_, other_key) = pem_pair();
        let err = parse_pem(cert.as_bytes(), other_key.as_bytes(), &p("c"), &p("k"))
            .expect_err("mismatch")
            .to_string();
        assert!(err.contains("does not fit"), "{err}");
    }

    #[test]
    fn a_directory_reloads_only_on_change_and_keeps_the_last_good_certificate() {
        let dir = std::env::temp_dir().join(format!("serving-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (fallback, _) = self_signed(&["localhost".into()]).expect("self-signed");
        let cert = ReloadingCert::new(fallback);
        assert!(
            !cert.reload_from(&dir).expect("empty dir is fine"),
            "nothing to load yet"
        );

        let (c1, k1) = pem_pair();
        std::fs::write(dir.join(CERT_FILE), &c1).expect("write");
        std::fs::write(dir.join(KEY_FILE), &k1).expect("write");
        assert!(cert.reload_from(&dir).expect("loads"));
        let first = cert.current();
        assert!(
            !cert.reload_from(&dir).expect("same files"),
            "no change, no swap"
        );

        std::fs::write(dir.join(CERT_FILE), "broken").expect("write");
        assert!(cert.reload_from(&dir).is_err());
        assert!(
            Arc::ptr_eq(&first, &cert.current()),
            "the last good one stays"
        );

        let (c2, k2) = pem_pair();
        std::fs::write(dir.join(CERT_FILE), &c2).expect("write");
        std::fs::write(dir.join(KEY_FILE), &k2).expect("write");
        assert!(cert.reload_from(&dir).expect("rotated"));
        assert_ne!(first.cert, cert.current().cert);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
