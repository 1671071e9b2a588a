//! The engine: one per NIC queue, on its own core, owning its port, buffers, tables, timers
//! and counters, with nothing shared (IX's run-to-completion dataplane).
//!
//! One iteration ([`engine`]): receive up to `batch` frames and run each through the receive
//! path ([`rx`]: ARP/IPv4/ICMP, IPv6/ICMPv6/neighbour discovery, UDP/TCP and the application), put replies on TX, let the
//! application originate through the transmit path ([`tx`]), run timers, kick TX. The engine
//! never waits to fill a batch; when there is no work it sleeps in poll().

pub mod channel_service;
pub mod config;
pub mod counters;
pub mod engine;
mod family;
pub mod metrics;
pub mod neighbour_cache;
mod node;
pub mod published;
mod rx;
pub mod service;
pub mod strays;
pub mod tcp_service;
mod tx;
pub use timer;
pub use timer::{Duration, Instant};

pub use channel_service::ChannelService;
pub use config::{EngineConfig, IdlePolicy};
pub use counters::{Counters, DropReason};
pub use engine::Engine;
pub use metrics::Samples;
pub use service::{Datagram, Originate, SendError, Service, Verdict};
pub use strays::{StrayLink, Strays};
pub use tcp_service::TcpService;
