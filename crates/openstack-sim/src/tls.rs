//! HTTPS for openstack-sim: a CA generated at start and a serving certificate for the listen
//! address, so clients can be tested with a private CA (the `cacert` of clouds.yaml) and no files.
//! Test substrate only: keys live in memory and are never reused.

use std::net::SocketAddr;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::{self, pki_types::PrivateKeyDer, pki_types::PrivatePkcs8KeyDer};

/// Returns the acceptor and the CA certificate PEM for clouds.yaml.
pub fn self_signed(addr: SocketAddr) -> Result<(TlsAcceptor, String), String> {
    let ca_key = KeyPair::generate().map_err(|e| e.to_string())?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "openstack-sim-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).map_err(|e| e.to_string())?;
    let ca_issuer = rcgen::Issuer::new(ca_params, ca_key);

    let key = KeyPair::generate().map_err(|e| e.to_string())?;
    let mut params = CertificateParams::new(vec![
        "localhost".to_string(),
        "openstack-sim.local".to_string(),
    ])
    .map_err(|e| e.to_string())?;
    params.subject_alt_names.push(SanType::IpAddress(addr.ip()));
    params
        .distinguished_name
        .push(DnType::CommonName, "openstack-sim");
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
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((TlsAcceptor::from(Arc::new(config)), ca_cert.pem()))
}
