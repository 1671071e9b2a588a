//! Modules that rewrite headers in place: VLAN tags, the IPv4 checksum and TTL, and random
//! loss (the WAN emulator's other half, with Delay).

use super::{Args, Rand};
use crate::module::{Ctx, Module, Out};
use crate::packet::Batch;
use wire::checksum;

use wire::ethernet::{payload_after_tags, EtherType, HEADER_LEN as ETH_HDR, TAG_LEN};

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// Where the IPv4 header starts in an Ethernet frame (after up to two VLAN tags), if the frame
/// holds a whole, well-formed one.
pub(crate) fn ipv4_at(b: &[u8]) -> Option<usize> {
    let (ip, ethertype) = payload_after_tags(b)?;
    if ethertype != EtherType::IPV4 {
        return None;
    }
    let v = *b.get(ip)?;
    let ihl = usize::from(v & 0x0f) * 4;
    (v >> 4 == 4 && ihl >= 20 && b.len() >= ip + ihl).then_some(ip)
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
            let d = ctx.pool.data_mut(p);
            d.copy_within(TAG_LEN..TAG_LEN + 12, 0);
            d[12..14].copy_from_slice(&EtherType::VLAN.to_be_bytes());
            d[14..16].copy_from_slice(&self.tci.to_be_bytes());
            out.emit(0, p);
        }
    }
}

/// Pops the outer VLAN tag (802.1Q or 802.1ad); untagged frames pass unchanged.
pub struct VlanPop;

impl Module for VlanPop {
    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            let d = ctx.pool.data_mut(p);
            if d.len() >= ETH_HDR + TAG_LEN && matches!(u16_at(d, 12), Some(EtherType::VLAN | EtherType::QINQ)) {
                d.copy_within(0..12, TAG_LEN);
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
            let d = ctx.pool.data_mut(p);
            let Some(ip) = ipv4_at(d) else {
                out.emit(0, p);
                continue;
            };
            let ihl = usize::from(d[ip] & 0x0f) * 4;
            if self.verify {
                if checksum::checksum(&d[ip..ip + ihl]) == 0 {
                    out.emit(0, p);
                } else {
                    out.drop(p);
                }
                continue;
            }
            d[ip + 10..ip + 12].fill(0);
            let c = checksum::checksum(&d[ip..ip + ihl]);
            d[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
            out.emit(0, p);
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
            let d = ctx.pool.data_mut(p);
            let Some(ip) = ipv4_at(d) else {
                out.emit(0, p);
                continue;
            };
            let (ttl, proto) = (d[ip + 8], d[ip + 9]);
            if ttl <= 1 {
                out.emit(1, p);
                continue;
            }
            let old = u16::from_be_bytes([ttl, proto]);
            let new = u16::from_be_bytes([ttl - 1, proto]);
            let hc = u16::from_be_bytes([d[ip + 10], d[ip + 11]]);
            d[ip + 8] = ttl - 1;
            d[ip + 10..ip + 12].copy_from_slice(&checksum::update16(hc, old, new).to_be_bytes());
            out.emit(0, p);
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

pub(crate) const TCP: u8 = 6;
pub(crate) const UDP: u8 = 17;
pub(crate) const ICMP: u8 = 1;

/// The flow of an IPv4 frame, if it is one.
pub(crate) fn flow_of(d: &[u8]) -> Option<Flow> {
    let ip = ipv4_at(d)?;
    let ihl = usize::from(d[ip] & 0x0f) * 4;
    let l4 = ip + ihl;
    let proto = d[ip + 9];
    let be32 = |at: usize| u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]]);
    let later_fragment = u16_at(d, ip + 6)? & 0x1fff != 0;
    let mut f = Flow { ip, l4, proto, src: be32(ip + 12), dst: be32(ip + 16), sport: 0, dport: 0, ports: false };
    if later_fragment {
        return Some(f);
    }
    match proto {
        TCP | UDP if d.len() >= l4 + if proto == TCP { 20 } else { 8 } => {
            f.sport = u16_at(d, l4)?;
            f.dport = u16_at(d, l4 + 2)?;
            f.ports = true;
        }
        ICMP if d.len() >= l4 + 8 && matches!(d[l4], 0 | 8) => {
            let id = u16_at(d, l4 + 4)?;
            (f.sport, f.dport, f.ports) = (id, id, true);
        }
        _ => {}
    }
    Some(f)
}
