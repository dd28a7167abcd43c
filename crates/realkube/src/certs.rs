//! The plane's certificates and keys, made fresh for each plane: a CA, the API server's
//! serving certificate for loopback and `kubernetes.default.svc`, and the ServiceAccount token
//! signing key (ECDSA P-256, which the API server signs ES256 tokens with).

use std::path::Path;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// Paths and PEM the plane uses.
pub(crate) struct Certs {
    pub(crate) ca_pem: String,
}

/// Writes `ca.crt`, `server.crt`, `server.key`, `sa.key` and `sa.pub` into `dir`.
pub(crate) fn write(dir: &Path) -> Result<Certs, String> {
    let err = |e: rcgen::Error| e.to_string();
    let ca_key = KeyPair::generate().map_err(err)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca.distinguished_name
        .push(DnType::CommonName, "realkube-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).map_err(err)?;
    let issuer = Issuer::new(ca, ca_key);

    let server_key = KeyPair::generate().map_err(err)?;
    let mut server = CertificateParams::new(vec![
        "127.0.0.1".to_owned(),
        "localhost".to_owned(),
        "kubernetes.default.svc".to_owned(),
        "10.96.0.1".to_owned(),
    ])
    .map_err(err)?;
    server
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    let server_cert = server.signed_by(&server_key, &issuer).map_err(err)?;

    let sa_key = KeyPair::generate().map_err(err)?;
    let files = [
        ("ca.crt", ca_cert.pem()),
        ("server.crt", server_cert.pem()),
        ("server.key", server_key.serialize_pem()),
        ("sa.key", sa_key.serialize_pem()),
        ("sa.pub", sa_key.public_key_pem()),
    ];
    for (name, pem) in files {
        std::fs::write(dir.join(name), pem).map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(Certs {
        ca_pem: ca_cert.pem(),
    })
}
