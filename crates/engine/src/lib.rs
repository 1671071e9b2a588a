//! The engine: one per NIC queue, on its own core, owning its port, buffers, tables, timers
//! and counters, with nothing shared (IX's run-to-completion dataplane).
//!
//! One iteration: receive up to `batch` frames, run each through ARP/IPv4/ICMP/UDP/TCP and
//! the application, put replies on TX, let the application originate, run timers, kick TX. The
//! engine never waits to fill a batch; when there is no work it sleeps in poll().

pub mod app;
pub mod arp_cache;
pub mod channel_service;
pub mod counters;
pub mod engine;
pub mod published;
mod stack;
pub mod tcp_service;
pub use timer;

pub use app::{App, Datagram, Originate, SendError, Verdict};
pub use channel_service::ChannelService;
pub use counters::{Counters, Drop};
pub use engine::{Engine, EngineConfig, IdlePolicy};
pub use tcp_service::TcpService;
