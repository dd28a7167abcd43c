//! The TLS settings of the OpenStack clients: the system's trusted roots, read once per
//! process, plus the cloud's own CA bundle (the Secret's `cacert`, a ConfigMap's
//! `ca-bundle.pem`).
//!
//! reqwest's default verifier reads the whole system trust store again for every client it
//! builds, and a client is built for every new set of credentials: on a small machine that was
//! 15 to 30 ms in the middle of an install and of every credentials rotation. Go's clients
//! (gophercloud, the Cinder and Manila drivers) read the system pool once per process
//! (`x509.SystemCertPool`), and so does this module. Verification is the same as reqwest's on
//! Linux: WebPKI with the system roots and the extra ones.

use std::sync::{Arc, OnceLock};

use rustls::RootCertStore;
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::CertificateDer;

use crate::error::Error;

/// The system's roots as read at the first client of the process.
fn system_roots() -> &'static RootCertStore {
    static ROOTS: OnceLock<RootCertStore> = OnceLock::new();
    ROOTS.get_or_init(|| {
        SYSTEM_ROOT_LOADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let found = rustls_native_certs::load_native_certs();
        for error in &found.errors {
            tracing::warn!(%error, "cannot read a system CA certificate");
        }
        let mut roots = RootCertStore::empty();
        let (_, ignored) = roots.add_parsable_certificates(found.certs);
        if ignored > 0 {
            tracing::warn!(
                ignored,
                "system CA certificates that could not be parsed were ignored"
            );
        }
        roots
    })
}

/// How many times this process read the system roots (1 after the first client).
static SYSTEM_ROOT_LOADS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

#[cfg(test)]
fn system_root_loads() -> usize {
    SYSTEM_ROOT_LOADS.load(std::sync::atomic::Ordering::Relaxed)
}

/// The PEM bundle's certificates; an error says what is wrong with it.
pub(crate) fn parse_bundle(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, Error> {
    use rustls::pki_types::pem::PemObject;
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::CaBundle(format!("it is not a PEM certificate bundle: {e}")))?;
    if certs.is_empty() {
        return Err(Error::CaBundle(
            "it holds no PEM certificate (expected -----BEGIN CERTIFICATE----- blocks)".into(),
        ));
    }
    Ok(certs)
}

/// A rustls configuration with `provider` (the process's) that trusts the system roots and
/// `extra` (HTTP/1.1 only, as the client speaks nothing else).
pub(crate) fn client_config(
    provider: Arc<rustls::crypto::CryptoProvider>,
    extra: &[CertificateDer<'static>],
) -> Result<rustls::ClientConfig, Error> {
    let mut roots = system_roots().clone();
    for cert in extra {
        roots.add(cert.clone()).map_err(|e| {
            Error::CaBundle(format!(
                "a certificate of the bundle is not a usable CA: {e}"
            ))
        })?;
    }
    if roots.is_empty() {
        return Err(Error::HttpClient(
            "no CA certificate to verify OpenStack's TLS certificates with: the system has none \
             and the credentials give no cacert"
                .into(),
        ));
    }
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| Error::HttpClient(format!("cannot set up TLS verification: {e}")))?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::HttpClient(format!("cannot set up TLS: {e}")))?
        .with_webpki_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_roots_are_read_once_however_many_clients() {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        for _ in 0..3 {
            let _ = client_config(provider.clone(), &[]);
        }
        assert_eq!(system_root_loads(), 1);
    }

    #[test]
    fn a_bundle_that_is_not_pem_is_refused_with_the_reason() {
        for bad in [
            &b""[..],
            b"not a certificate",
            b"-----BEGIN CERTIFICATE-----\nAAAA",
        ] {
            let error = parse_bundle(bad).expect_err("refused").to_string();
            assert!(error.contains("PEM"), "{error}");
        }
    }
}
