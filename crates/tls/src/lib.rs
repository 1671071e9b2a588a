//! TLS 1.3 inside sirocco's stack. rustls runs the handshake ([`handshake`]); after it,
//! sirocco's own record layer ([`record`], [`session`]) seals the outgoing stream in place in
//! the segment being written. Records are laid on fixed offsets of the stream
//! ([`layout`]), so the record holding any byte — its number, its key, its content — follows
//! from the TCP sequence number alone: a retransmission is sealed again, byte for byte the
//! same, from the application's bytes (read from disk again in Atlas's stream mode), and no
//! ciphertext is ever kept. [`app::Tls`] puts this between TCP and any application.

pub mod app;
pub mod config;
pub mod handshake;
pub mod layout;
pub mod record;
pub mod session;

pub use app::{Conn, Listener, Tls, TlsStats};
pub use config::{ConfigError, TlsConfig};
pub use session::{Poll, Session};
