//! A deterministic network simulator for sirocco. One seed decides everything: which packets
//! the links lose, duplicate, reorder, corrupt or queue, and every application's choices, so a
//! failure found by a property test replays exactly.
//!
//! - [`rng`]: the only source of randomness.
//! - [`link`]: one-way links with impairments and the packets in flight on them, in time
//!   order ([`link::Net`]), for any kind of host.
//! - [`engines`]: hosts that are whole engines (ARP, IP, UDP, TCP) with their applications,
//!   joined by those links through in-memory ports: the data path as it runs, on a virtual
//!   clock.
//! - [`stream`]: a TCP application whose byte streams check themselves.
//! - [`tls`]: the test certificates and a rustls client for the HTTPS tests.
//! - [`trace`]: the packet trace of what the engines sent, kept when a seed is replayed.
//! - [`replay`]: a property over many seeds; one seed replayed with the trace of the
//!   connection that failed (`scripts/replay-seed`).
//!
//! The TCP crate's own simulator (its tests) drives bare endpoints over the same links.

pub mod engines;
pub mod link;
pub mod replay;
pub mod rng;
pub mod stream;
pub mod tls;
pub mod trace;

pub use link::{Fate, Link, Net, NetStats};
pub use rng::Rng;
