//! VXLAN (RFC 7348): Ethernet frames carried in UDP between tunnel endpoints.

use super::headers::flow_of;
use super::Args;
use crate::module::{Ctx, Module, Out};
use crate::packet::Batch;
use wire::build::{Ipv4Frame, IPV4_PAYLOAD_AT};
use wire::{ethernet, udp, Ipv4Addr, MacAddr, Protocol, UdpRepr};

/// The VXLAN header (RFC 7348): flags, reserved, VNI, reserved.
const VXLAN_HEADER_LEN: usize = 8;
/// Outer Ethernet, IPv4, UDP and VXLAN headers.
const OUTER: usize = IPV4_PAYLOAD_AT + udp::HEADER_LEN + VXLAN_HEADER_LEN;
/// The TTL of the outer header.
const TTL: u8 = 64;
const VXLAN_PORT: i64 = 4789;
const FLAG_VNI: u8 = 0x08;

fn mac(a: &Args, k: &str) -> Result<MacAddr, String> {
    let s = a.string(k)?.ok_or_else(|| format!("{k}=\"MAC\" is required"))?;
    MacAddr::parse(&s).ok_or_else(|| format!("{k}: '{s}' is not a MAC address"))
}

fn ip(a: &Args, k: &str) -> Result<Ipv4Addr, String> {
    let s = a.string(k)?.ok_or_else(|| format!("{k}=\"A.B.C.D\" is required"))?;
    s.parse::<std::net::Ipv4Addr>()
        .map(|v| Ipv4Addr(v.octets()))
        .map_err(|_| format!("{k}: '{s}' is not an IPv4 address"))
}

/// Wraps each frame in VXLAN to the tunnel endpoint `dst_ip` (at `dst_mac`) from `src_ip`
/// (`src_mac`) with network identifier `vni`. The UDP source port is taken from a hash of
/// the inner flow, so the underlay spreads flows as RFC 7348 §5 asks; the UDP checksum is 0.
pub struct VxlanEncap {
    outer: Ipv4Frame,
    vni: u32,
    dport: u16,
}

impl VxlanEncap {
    pub(super) fn new(a: &Args) -> Result<VxlanEncap, String> {
        let outer = Ipv4Frame {
            src_mac: mac(a, "src_mac")?,
            dst_mac: mac(a, "dst_mac")?,
            src: ip(a, "src_ip")?,
            dst: ip(a, "dst_ip")?,
            protocol: Protocol::UDP,
        };
        Ok(VxlanEncap {
            outer,
            vni: a.int("vni", 0, 0..=0xff_ffff)? as u32,
            dport: a.int("dport", VXLAN_PORT, 1..=65535)? as u16,
        })
    }
}

impl Module for VxlanEncap {
    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            let inner = ctx.pool.data(p).len();
            let entropy =
                flow_of(ctx.pool.data(p)).map_or(0, |f| (f.src ^ f.dst.rotate_left(16)) as u16 ^ f.sport ^ f.dport);
            if inner + OUTER - ethernet::HEADER_LEN > usize::from(u16::MAX) || !ctx.pool.push_front(p, OUTER) {
                out.drop(p);
                continue;
            }
            let d = ctx.pool.data_mut(p);
            let udp_payload = VXLAN_HEADER_LEN + inner;
            self.outer.emit(d, udp::HEADER_LEN + udp_payload, 0, TTL);
            let udp = UdpRepr { src_port: 0xc000 | (entropy & 0x3fff), dst_port: self.dport, payload_len: udp_payload };
            udp.emit_without_checksum(&mut d[IPV4_PAYLOAD_AT..]);
            let v = &mut d[OUTER - VXLAN_HEADER_LEN..OUTER];
            v.copy_from_slice(&[FLAG_VNI, 0, 0, 0, 0, 0, 0, 0]);
            v[4..7].copy_from_slice(&self.vni.to_be_bytes()[1..]);
            out.emit(0, p);
        }
    }
}

/// Takes the inner frame out of each VXLAN packet (IPv4, UDP to `dport`, the I flag set,
/// and network identifier `vni` if given) out of gate 0; everything else leaves unchanged
/// by gate 1 (dropped if nothing is connected).
pub struct VxlanDecap {
    dport: u16,
    vni: Option<u32>,
    not_vxlan: u64,
}

impl VxlanDecap {
    pub(super) fn new(a: &Args) -> Result<VxlanDecap, String> {
        let vni = a.int("vni", -1, -1..=0xff_ffff)?;
        Ok(VxlanDecap {
            dport: a.int("dport", VXLAN_PORT, 1..=65535)? as u16,
            vni: (vni >= 0).then_some(vni as u32),
            not_vxlan: 0,
        })
    }
}

impl Module for VxlanDecap {
    fn ogates(&self) -> u32 {
        2
    }

    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            let d = ctx.pool.data(p);
            let to_us = |f: &super::headers::Flow| f.proto == Protocol::UDP && f.ports && f.dport == self.dport;
            let inner_at = flow_of(d).filter(to_us).and_then(|f| {
                let at = f.l4 + udp::HEADER_LEN;
                let v = d.get(at..at + VXLAN_HEADER_LEN)?;
                let vni = u32::from_be_bytes([0, v[4], v[5], v[6]]);
                let ok = v[0] & FLAG_VNI != 0 && self.vni.is_none_or(|want| want == vni);
                // The inner frame needs at least its Ethernet header.
                let inner = at + VXLAN_HEADER_LEN;
                (ok && d.len() >= inner + ethernet::HEADER_LEN).then_some(inner)
            });
            match inner_at {
                Some(at) => {
                    ctx.pool.pull_front(p, at);
                    out.emit(0, p);
                }
                None => {
                    self.not_vxlan += 1;
                    out.emit(1, p);
                }
            }
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("not_vxlan", self.not_vxlan)]
    }
}

#[cfg(test)]
mod tests;
