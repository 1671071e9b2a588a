//! `sirocco ctl`: the control plane that lets several sirocco servers share one interface,
//! each with the flows it was granted (Arrakis). The rules are sans-IO: the daemon's policy —
//! which users may ask for which grants ([`policy`]) —, the grants in force with their
//! overlap rules ([`grants`]), and the requests servers send over the control socket
//! ([`request`]). Around them the daemon that owns the interface and gives each grant its own
//! virtual NIC in a private namespace ([`daemon`], with [`msg`], [`netns`], [`vnic`]), and
//! what a server run with `--ctl` does to get one ([`client`]); the kernel programs are in
//! `io::ctl_path`.

pub mod client;
pub mod daemon;
pub mod grants;
mod msg;
mod netns;
pub mod policy;
pub mod request;
mod vnic;

use std::net::Ipv4Addr;

/// A transport protocol a grant covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    /// UDP.
    Udp,
    /// TCP.
    Tcp,
}

impl Proto {
    /// Its name, as requests and the policy spell it.
    pub fn name(self) -> &'static str {
        match self {
            Proto::Udp => "udp",
            Proto::Tcp => "tcp",
        }
    }

    /// Its IP protocol number.
    pub fn number(self) -> u8 {
        match self {
            Proto::Udp => 17,
            Proto::Tcp => 6,
        }
    }

    /// From its IP protocol number.
    pub fn from_number(n: u8) -> Option<Proto> {
        [Proto::Udp, Proto::Tcp].into_iter().find(|p| p.number() == n)
    }

    /// From its name.
    pub fn parse(s: &str) -> Option<Proto> {
        match s {
            "udp" => Some(Proto::Udp),
            "tcp" => Some(Proto::Tcp),
            _ => None,
        }
    }
}

/// What a server asks for: its flows, and optionally its queues and rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Want {
    /// The application's name (unique among grants in force).
    pub app: String,
    /// The address it serves.
    pub addr: Ipv4Addr,
    /// The protocol.
    pub proto: Proto,
    /// The port (1 to 65535).
    pub port: u16,
    /// Queues (engines) wanted.
    pub queues: u32,
    /// Most packets per second it may send, if limited.
    pub pps: Option<u64>,
    /// Most bits per second it may send, if limited.
    pub bps: Option<u64>,
    /// Packet memory per queue, in bytes: frames, and what the application lends its
    /// storage buffers from.
    pub memory: u64,
    /// Of that, the bytes lent to storage buffers (the rest is cut into frames).
    pub lend: u64,
}

/// Packet memory a queue gets when the request does not say: 4096 frames of 4 KiB.
pub const DEFAULT_QUEUE_MEMORY: u64 = 4096 * 4096;
