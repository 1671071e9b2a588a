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

/// Flows one grant may cover (`MAX_FLOWS` in the kernel programs).
pub const MAX_FLOWS: usize = 4;

/// A flow of a grant: a protocol and a port, or a range of ports (the ephemeral ports a
/// server's own connections come back to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    /// The protocol.
    pub proto: Proto,
    /// The lowest port (1 to 65535).
    pub lo: u16,
    /// The highest port.
    pub hi: u16,
}

impl Flow {
    /// One port.
    pub fn port(proto: Proto, port: u16) -> Flow {
        Flow { proto, lo: port, hi: port }
    }

    /// From `PROTO/PORT` or `PROTO/LOW-HIGH` (as requests and the policy spell it).
    pub fn parse(s: &str) -> Result<Flow, String> {
        let bad = || format!("'{s}': PROTO/PORT or PROTO/LOW-HIGH (udp or tcp, ports 1 to 65535)");
        let (p, r) = s.split_once('/').ok_or_else(bad)?;
        let proto = Proto::parse(p).ok_or_else(bad)?;
        let (lo, hi) = r.split_once('-').unwrap_or((r, r));
        let (lo, hi): (u16, u16) = (lo.parse().map_err(|_| bad())?, hi.parse().map_err(|_| bad())?);
        if lo == 0 || lo > hi {
            return Err(bad());
        }
        Ok(Flow { proto, lo, hi })
    }

    /// Whether the two share a port.
    pub fn overlaps(&self, o: &Flow) -> bool {
        self.proto == o.proto && self.lo <= o.hi && o.lo <= self.hi
    }

    /// Whether `port` of `proto` is in it.
    pub fn covers(&self, proto: Proto, port: u16) -> bool {
        self.proto == proto && (self.lo..=self.hi).contains(&port)
    }

    /// A single port, not a range.
    pub fn is_port(&self) -> bool {
        self.lo == self.hi
    }
}

impl std::fmt::Display for Flow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_port() {
            write!(f, "{}/{}", self.proto.name(), self.lo)
        } else {
            write!(f, "{}/{}-{}", self.proto.name(), self.lo, self.hi)
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
    /// Its flows at that address (1 to [`MAX_FLOWS`], none overlapping another).
    pub flows: Vec<Flow>,
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

impl Want {
    /// Its flows as text (`udp/53 tcp/53`).
    pub fn flows_text(&self) -> String {
        self.flows.iter().map(Flow::to_string).collect::<Vec<_>>().join(" ")
    }
}

/// Packet memory a queue gets when the request does not say: 4096 frames of 4 KiB.
pub const DEFAULT_QUEUE_MEMORY: u64 = 4096 * 4096;
