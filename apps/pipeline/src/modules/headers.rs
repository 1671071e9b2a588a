//! Modules that rewrite headers in place: VLAN tags, the IPv4 checksum and TTL, and random
//! loss (the WAN emulator's other half, with Delay).

use super::{Args, Rand};
use crate::module::{Ctx, Module, Out};
use crate::packet::Batch;
use wire::ethernet::{payload_after_tags, pop_tag, push_tag, EtherType, HEADER_LEN as ETH_HDR, TAG_LEN};
use wire::icmp::{self, IcmpPacket};
use wire::{tcp, udp, Ipv4Packet, Protocol, TcpPacket, UdpPacket};

/// The IPv4 packet an Ethernet frame carries after up to two VLAN tags, and where it starts,
/// if its header and the length it claims are whole.
pub(crate) fn ipv4_in(b: &[u8]) -> Option<(usize, Ipv4Packet<&[u8]>)> {
    let (at, ethertype) = payload_after_tags(b)?;
    if ethertype != EtherType::IPV4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(&b[at..]).ok()?;
    (ip.version() == 4).then_some((at, ip))
}

/// As [`ipv4_in`], to rewrite.
pub(crate) fn ipv4_in_mut(b: &mut [u8]) -> Option<Ipv4Packet<&mut [u8]>> {
    let (at, _) = ipv4_in(b)?;
    Some(Ipv4Packet::new_unchecked(&mut b[at..]))
}

/// Pushes an 802.1Q tag (`tci`: priority, DEI and VLAN id) after the MAC addresses.
pub struct VlanPush {
    tci: u16,
}

impl VlanPush {
    pub(super) fn new(a: &Args) -> Result<VlanPush, String> {
        Ok(VlanPush { tci: a.int("tci", 0, 0..=0xffff)? as u16 })
    }
}

impl Module for VlanPush {
    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            if ctx.pool.data(p).len() < ETH_HDR || !ctx.pool.push_front(p, TAG_LEN) {
                out.drop(p);
                continue;
            }
            push_tag(ctx.pool.data_mut(p), self.tci);
            out.emit(0, p);
        }
    }
}

/// Pops the outer VLAN tag (802.1Q or 802.1ad); untagged frames pass unchanged.
pub struct VlanPop;

impl Module for VlanPop {
    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            if pop_tag(ctx.pool.data_mut(p)) {
                ctx.pool.pull_front(p, TAG_LEN);
            }
            out.emit(0, p);
        }
    }
}

/// Sets the IPv4 header checksum, or with `verify=true` passes only packets whose checksum is
/// right (the others are dropped). Other packets pass unchanged.
pub struct IpChecksum {
    verify: bool,
}

impl IpChecksum {
    pub(super) fn new(a: &Args) -> Result<IpChecksum, String> {
        let verify = a.flag("verify", false)?;
        Ok(IpChecksum { verify })
    }
}

impl Module for IpChecksum {
    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            let Some(mut ip) = ipv4_in_mut(ctx.pool.data_mut(p)) else {
                out.emit(0, p);
                continue;
            };
            if !self.verify {
                ip.fill_checksum();
                out.emit(0, p);
            } else if ip.verify_checksum() {
                out.emit(0, p);
            } else {
                out.drop(p);
            }
        }
    }
}

/// Decrements the IPv4 TTL, updating the checksum incrementally (RFC 1624). A packet that
/// arrives with TTL 0 or 1 goes out of gate 1 unchanged (for an ICMP time-exceeded answer;
/// dropped if nothing is connected). Other packets pass unchanged.
pub struct UpdateTtl;

impl Module for UpdateTtl {
    fn ogates(&self) -> u32 {
        2
    }

    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            let Some(mut ip) = ipv4_in_mut(ctx.pool.data_mut(p)) else {
                out.emit(0, p);
                continue;
            };
            match ip.ttl() {
                0 | 1 => out.emit(1, p),
                ttl => {
                    ip.set_ttl(ttl - 1);
                    out.emit(0, p);
                }
            }
        }
    }
}

/// Drops each packet with probability `rate` (a random loss, as a lossy path has).
pub struct Loss {
    rate: f64,
    rand: Rand,
}

impl Loss {
    pub(super) fn new(a: &Args) -> Result<Loss, String> {
        Ok(Loss { rate: a.float("rate", 0.0, 0.0..=1.0)?, rand: Rand::from_args(a)? })
    }
}

impl Module for Loss {
    fn process(&mut self, _ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            if Rand::unit(self.rand.next()) < self.rate {
                out.drop(p);
            } else {
                out.emit(0, p);
            }
        }
    }
}

#[cfg(test)]
mod tests;

/// Where a frame's IPv4 and transport headers are, and its 5-tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flow {
    /// Offset of the IPv4 header.
    pub ip: usize,
    /// Offset of the transport header (valid only if `ports` is true).
    pub l4: usize,
    pub proto: u8,
    pub src: u32,
    pub dst: u32,
    /// Ports for TCP and UDP; the identifier (twice) for ICMP echo; 0 otherwise.
    pub sport: u16,
    pub dport: u16,
    /// True if the transport header is whole and the packet is not a later fragment.
    pub ports: bool,
}

/// The flow of an IPv4 frame, if it is one.
pub(crate) fn flow_of(d: &[u8]) -> Option<Flow> {
    let (at, ip) = ipv4_in(d)?;
    let proto = ip.protocol();
    let (src, dst) = (ip.src_addr().to_u32(), ip.dst_addr().to_u32());
    let mut f = Flow { ip: at, l4: at + ip.header_len(), proto, src, dst, sport: 0, dport: 0, ports: false };
    if ip.frag_offset() != 0 {
        return Some(f);
    }
    let t = ip.payload();
    let ports = match proto {
        Protocol::TCP if t.len() >= tcp::HEADER_LEN => {
            let s = TcpPacket::new_unchecked(t);
            Some((s.src_port(), s.dst_port()))
        }
        Protocol::UDP if t.len() >= udp::HEADER_LEN => {
            let u = UdpPacket::new_unchecked(t);
            Some((u.src_port(), u.dst_port()))
        }
        Protocol::ICMP if t.len() >= icmp::HEADER_LEN => {
            let m = IcmpPacket::new_unchecked(t);
            matches!(m.msg_type(), icmp::kind::ECHO_REPLY | icmp::kind::ECHO_REQUEST).then(|| (m.ident(), m.ident()))
        }
        _ => None,
    };
    if let Some((s, d)) = ports {
        (f.sport, f.dport, f.ports) = (s, d, true);
    }
    Some(f)
}
