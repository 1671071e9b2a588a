//! The server's certificate and key, loaded from PEM into a rustls configuration: TLS 1.3
//! only, ALPN `http/1.1` (or what the server names), no session tickets (so nothing is
//! written after the handshake that the record layer would have to carry), and secret
//! extraction on, so the traffic keys come out to the record layer.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;
use std::path::Path;
use std::sync::Arc;

/// Why the certificate or key could not be used; its Display is the one line a user sees.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// A loaded TLS server configuration.
#[derive(Clone)]
pub struct TlsConfig {
    /// What rustls runs the handshake with.
    pub rustls: Arc<ServerConfig>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig").finish_non_exhaustive()
    }
}

fn pem_error(what: &str, path: &Path, e: impl std::fmt::Display) -> ConfigError {
    ConfigError(format!("{what} {}: {e}", path.display()))
}

impl TlsConfig {
    /// Loads the certificate chain (leaf first) and private key (PKCS#8, PKCS#1 or SEC1) from
    /// PEM files, offering `alpn` (e.g. `http/1.1`).
    pub fn from_pem_files(cert: &Path, key: &Path, alpn: &[&[u8]]) -> Result<TlsConfig, ConfigError> {
        let certs = CertificateDer::pem_file_iter(cert)
            .map_err(|e| pem_error("certificate", cert, e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| pem_error("certificate", cert, e))?;
        if certs.is_empty() {
            return Err(ConfigError(format!("certificate {}: no CERTIFICATE block in the file", cert.display())));
        }
        let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| pem_error("private key", key, e))?;
        Self::from_der(certs, key_der, alpn)
            .map_err(|e| ConfigError(format!("certificate {} with key {}: {e}", cert.display(), key.display())))
    }

    /// The same from DER (tests).
    pub fn from_der(
        certs: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        alpn: &[&[u8]],
    ) -> Result<TlsConfig, ConfigError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut cfg = ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| ConfigError(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| ConfigError(e.to_string()))?;
        cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        cfg.enable_secret_extraction = true;
        cfg.send_tls13_tickets = 0;
        cfg.max_early_data_size = 0;
        cfg.ignore_client_order = false;
        Ok(TlsConfig { rustls: Arc::new(cfg) })
    }
}
