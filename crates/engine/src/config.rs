//! What an engine serves and how.

use wire::ethernet::MacAddr;
use wire::ipv4::Ipv4Addr;
use wire::ipv6::Ipv6Addr;

/// TTL of packets sirocco sends.
pub const TTL: u8 = 64;

/// What an engine serves and how.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The IPv4 address served, if any.
    pub addr: Option<Ipv4Addr>,
    /// The interface's MAC address.
    pub mac: MacAddr,
    /// True when the kernel does not have `addr`: the engine then answers ARP and ICMP echo
    /// and resolves neighbours itself; otherwise it asks the kernel's neighbour table.
    pub owns_alone: bool,
    /// The IPv6 address served, if any.
    pub addr6: Option<Ipv6Addr>,
    /// As `owns_alone`, for `addr6`: the engine then answers neighbour solicitations (for the
    /// address and its solicited-node group) and ICMPv6 echo, and resolves neighbours itself.
    pub owns_alone6: bool,
    /// Interface name (for kernel neighbour lookups).
    pub iface: String,
    /// IP MTU.
    pub mtu: usize,
    /// Largest receive batch per iteration (IX's bound on batching).
    pub batch: usize,
    /// Empty iterations before sleeping in poll().
    pub idle_spins: u32,
    /// What an iteration that received nothing does before the next one.
    pub idle: IdlePolicy,
    /// Frames dropped on purpose, per million, on receive and on send: an impairment for
    /// testing loss recovery against real peers (0 in service).
    pub loss_ppm: u32,
}

/// What the engine does after an iteration that received nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdlePolicy {
    /// Poll again at once: best when the kernel's receive work for the queue runs on another
    /// core (or in hardware), so spinning steals from nobody.
    Spin,
    /// Yield the CPU first: when the kernel's receive work (the NAPI thread that copies frames
    /// into the RX ring in AF_XDP copy mode) shares this core, spinning would starve it.
    Yield,
}

impl EngineConfig {
    /// Also serves the IPv6 address `addr6` (owned alone or shared with the kernel).
    pub fn with_ipv6(mut self, addr6: Ipv6Addr, owns_alone6: bool) -> Self {
        self.addr6 = Some(addr6);
        self.owns_alone6 = owns_alone6;
        self
    }

    /// Serves IPv6 only: `addr6`, owned alone or shared.
    pub fn ipv6_only(addr6: Ipv6Addr, mac: MacAddr, owns_alone6: bool, iface: &str) -> Self {
        let mut c = EngineConfig::new(Ipv4Addr::UNSPECIFIED, mac, false, iface).with_ipv6(addr6, owns_alone6);
        c.addr = None;
        c
    }

    /// Defaults for `addr` on an interface with `mac`.
    pub fn new(addr: Ipv4Addr, mac: MacAddr, owns_alone: bool, iface: &str) -> Self {
        EngineConfig {
            addr: Some(addr),
            mac,
            owns_alone,
            addr6: None,
            owns_alone6: false,
            iface: iface.to_string(),
            mtu: 1500,
            batch: 64,
            idle_spins: 2000,
            idle: IdlePolicy::Yield,
            loss_ppm: 0,
        }
    }
}
