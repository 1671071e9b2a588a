//! IPv4 routing: IPLookup (longest-prefix match to an output gate) and ICMPTimeExceeded
//! (the answer a router sends for a packet whose TTL ran out).

use super::headers::ipv4_in;
use super::lpm::{Dir24, Route};
use super::Args;
use crate::module::{Ctx, Module, Out};
use crate::packet::Batch;
use wire::ethernet::{self, EtherType, EthernetFrame};
use wire::icmp::{self, IcmpRepr};
use wire::{EthernetRepr, Ipv4Addr, Ipv4Packet, Ipv4Repr, Protocol};

/// Most routes read from a file.
const MAX_ROUTES: usize = 16 << 20;

/// Sends each IPv4 packet out of the gate of the longest prefix that covers its destination.
/// Routes come from `routes=["A.B.C.D/LEN GATE", ...]` and/or `file="PATH"` (one route per
/// line, `#` comments). Packets no route covers, and frames that are not IPv4, are dropped
/// (`misses`, `not_ipv4`).
pub struct IpLookup {
    table: Dir24,
    gates: u32,
    misses: u64,
    not_ipv4: u64,
}

impl IpLookup {
    pub(super) fn new(a: &Args) -> Result<IpLookup, String> {
        let mut routes = Vec::new();
        for s in a.strings("routes")? {
            routes.push(Route::parse(&s)?);
        }
        if let Some(path) = a.string("file")? {
            let text = std::fs::read_to_string(&path).map_err(|e| format!("reading routes from {path}: {e}"))?;
            for (n, line) in text.lines().enumerate() {
                let line = line.split('#').next().unwrap_or("").trim();
                if line.is_empty() {
                    continue;
                }
                if routes.len() == MAX_ROUTES {
                    return Err(format!("{path}: more than {MAX_ROUTES} routes"));
                }
                routes.push(Route::parse(line).map_err(|e| format!("{path}:{}: {e}", n + 1))?);
            }
        }
        if routes.is_empty() {
            return Err("no routes: give routes=[\"A.B.C.D/LEN GATE\", ...] or file=\"PATH\"".into());
        }
        let gates = routes.iter().map(|r| r.hop + 1).max().unwrap_or(1);
        Ok(IpLookup { table: Dir24::build(&routes)?, gates, misses: 0, not_ipv4: 0 })
    }
}

impl Module for IpLookup {
    fn ogates(&self) -> u32 {
        self.gates
    }

    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            let Some((_, ip)) = ipv4_in(ctx.pool.data(p)) else {
                self.not_ipv4 += 1;
                out.drop(p);
                continue;
            };
            match self.table.lookup(ip.dst_addr().to_u32()) {
                Some(g) => out.emit(g, p),
                None => {
                    self.misses += 1;
                    out.drop(p);
                }
            }
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("routes", self.table.routes() as u64), ("misses", self.misses), ("not_ipv4", self.not_ipv4)]
    }
}

/// The precedence an ICMP error goes with (RFC 1812 §4.3.2.5: internetwork control).
const INTERNETWORK_CONTROL: u8 = 0xc0;
/// The original header (up to 60 bytes) and 8 bytes after it (RFC 792).
const MAX_QUOTE: usize = 68;

/// Turns each IPv4 packet into the ICMP time-exceeded message (type 11, code 0) a router at
/// `addr` sends back to its source: Ethernet addresses swapped, the original IP header and
/// its first 8 payload bytes quoted (RFC 792, RFC 1812 §4.3.2.3). No error is sent about an
/// ICMP error, a non-initial fragment or a packet from a broadcast or multicast source
/// (`suppressed`, dropped). Connect it to the PortOut of the port the packet came in by.
pub struct IcmpTimeExceeded {
    addr: Ipv4Addr,
    suppressed: u64,
}

impl IcmpTimeExceeded {
    pub(super) fn new(a: &Args) -> Result<IcmpTimeExceeded, String> {
        let s = a.string("addr")?.ok_or("addr=\"A.B.C.D\" (the router's address) is required")?;
        let addr: std::net::Ipv4Addr = s.parse().map_err(|_| format!("addr: '{s}' is not an IPv4 address"))?;
        Ok(IcmpTimeExceeded { addr: Ipv4Addr(addr.octets()), suppressed: 0 })
    }
}

/// True if no error may be sent about `ip`, which came from `from` (RFC 1812 §4.3.2.7).
fn no_error_about(ip: &Ipv4Packet<&[u8]>, from: wire::MacAddr) -> bool {
    let src = ip.src_addr().0;
    let icmp_error = ip.protocol() == Protocol::ICMP && ip.payload().first().is_some_and(|&t| icmp::kind::is_error(t));
    ip.frag_offset() != 0 || icmp_error || src[0] >= 224 || src == [255; 4] || src == [0; 4] || from.is_multicast()
}

impl Module for IcmpTimeExceeded {
    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            let d = ctx.pool.data(p);
            let Some((at, ip)) =
                ipv4_in(d).filter(|(_, ip)| !no_error_about(ip, EthernetFrame::new_unchecked(d).src_addr()))
            else {
                self.suppressed += 1;
                out.drop(p);
                continue;
            };
            let mut quote = [0u8; MAX_QUOTE];
            let qlen = (ip.header_len() + 8).min(d.len() - at);
            quote[..qlen].copy_from_slice(&d[at..at + qlen]);
            let frame = EthernetFrame::new_unchecked(d);
            let eth =
                EthernetRepr { src: frame.dst_addr(), dst: frame.src_addr(), vlan: None, ethertype: EtherType::IPV4 };
            let message = IcmpRepr::TimeExceeded { quote: &quote[..qlen] };
            let icmp_len = icmp::HEADER_LEN + qlen;
            let ipr = Ipv4Repr {
                src: self.addr,
                dst: ip.src_addr(),
                protocol: Protocol::ICMP,
                payload_len: icmp_len,
                ttl: 64,
                ident: 0,
                tos: INTERNETWORK_CONTROL,
                dont_frag: false,
            };
            // The answer is untagged IPv4 from the router's address, built in the same buffer.
            let ip_at = ethernet::HEADER_LEN;
            if !ctx.pool.set_len(p, ip_at + ipr.header_len() + icmp_len) {
                out.drop(p);
                continue;
            }
            let b = ctx.pool.data_mut(p);
            eth.emit(b);
            ipr.emit(&mut b[ip_at..]);
            message.emit(&mut b[ip_at + ipr.header_len()..]);
            out.emit(0, p);
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("suppressed", self.suppressed)]
    }
}
