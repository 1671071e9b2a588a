//! The HTTPS fixtures the engine-level simulations and the end-to-end tests share: the test
//! certificates (`crates/tls/tests/certs`, made by its `make.sh`) and a rustls client that
//! trusts their CA and asks for `http/1.1`.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use std::path::PathBuf;
use std::sync::Arc;

/// The folder of the test certificates: `ca.pem`, `server.pem`/`server.key` (ECDSA, for
/// `sirocco.test`), `server-rsa.*`.
pub fn certs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tls/tests/certs")
}

/// A TLS 1.3/1.2 client trusting the test CA, with ALPN `http/1.1`.
pub fn client_config() -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(certs().join("ca.pem")).expect("the test CA") {
        roots.add(c.expect("a certificate")).expect("a CA certificate");
    }
    let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring's versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(cfg)
}
