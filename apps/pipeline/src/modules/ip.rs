//! IPv4 routing: IPLookup (longest-prefix match to an output gate) and ICMPTimeExceeded
//! (the answer a router sends for a packet whose TTL ran out).

use super::headers::ipv4_at;
use super::lpm::{Dir24, Route};
use super::Args;
use crate::module::{Ctx, Module, Out};
use crate::packet::Batch;
use wire::checksum;

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
            let d = ctx.pool.data(p);
            let Some(ip) = ipv4_at(d) else {
                self.not_ipv4 += 1;
                out.drop(p);
                continue;
            };
            let dst = u32::from_be_bytes([d[ip + 16], d[ip + 17], d[ip + 18], d[ip + 19]]);
            match self.table.lookup(dst) {
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

const ICMP: u8 = 1;
const ICMP_TIME_EXCEEDED: u8 = 11;
/// ICMP types that are errors themselves: no error is sent about them (RFC 1812 §4.3.2.7).
const ICMP_ERRORS: [u8; 5] = [3, 4, 5, 11, 12];
const ETH: usize = 14;

/// Turns each IPv4 packet into the ICMP time-exceeded message (type 11, code 0) a router at
/// `addr` sends back to its source: Ethernet addresses swapped, the original IP header and
/// its first 8 payload bytes quoted (RFC 792, RFC 1812 §4.3.2.3). No error is sent about an
/// ICMP error, a non-initial fragment or a packet from a broadcast or multicast source
/// (`suppressed`, dropped). Connect it to the PortOut of the port the packet came in by.
pub struct IcmpTimeExceeded {
    addr: [u8; 4],
    suppressed: u64,
}

impl IcmpTimeExceeded {
    pub(super) fn new(a: &Args) -> Result<IcmpTimeExceeded, String> {
        let s = a.string("addr")?.ok_or("addr=\"A.B.C.D\" (the router's address) is required")?;
        let addr: std::net::Ipv4Addr = s.parse().map_err(|_| format!("addr: '{s}' is not an IPv4 address"))?;
        Ok(IcmpTimeExceeded { addr: addr.octets(), suppressed: 0 })
    }
}

/// Why no error is sent about the packet at `ip` in `d`, if there is a reason.
fn no_error_about(d: &[u8], ip: usize, ihl: usize) -> bool {
    let frag_off = u16::from_be_bytes([d[ip + 6], d[ip + 7]]) & 0x1fff;
    let src = &d[ip + 12..ip + 16];
    let icmp_error = d[ip + 9] == ICMP && d.get(ip + ihl).is_some_and(|t| ICMP_ERRORS.contains(t));
    frag_off != 0 || icmp_error || src[0] >= 224 || src == [255; 4] || src == [0; 4] || d[6] & 1 != 0
}

impl Module for IcmpTimeExceeded {
    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            let d = ctx.pool.data(p);
            let Some(ip) = ipv4_at(d) else {
                self.suppressed += 1;
                out.drop(p);
                continue;
            };
            let ihl = usize::from(d[ip] & 0x0f) * 4;
            if no_error_about(d, ip, ihl) {
                self.suppressed += 1;
                out.drop(p);
                continue;
            }
            // The quote: the original header and up to 8 bytes after it.
            let mut quote = [0u8; 68];
            let qlen = (ihl + 8).min(d.len() - ip);
            quote[..qlen].copy_from_slice(&d[ip..ip + qlen]);
            let mut macs = [0u8; 12];
            macs.copy_from_slice(&d[..12]);
            let src = [quote[12], quote[13], quote[14], quote[15]];

            // The answer is untagged IPv4 from the router's address, built in the same buffer.
            let total = 20 + 8 + qlen;
            if !ctx.pool.set_len(p, ETH + total) {
                out.drop(p);
                continue;
            }
            let b = ctx.pool.data_mut(p);
            b[0..6].copy_from_slice(&macs[6..12]);
            b[6..12].copy_from_slice(&macs[0..6]);
            b[12..14].copy_from_slice(&[0x08, 0x00]);
            let h = &mut b[ETH..ETH + 20];
            h.copy_from_slice(&[0x45, 0xc0, 0, 0, 0, 0, 0, 0, 64, ICMP, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            h[12..16].copy_from_slice(&self.addr);
            h[16..20].copy_from_slice(&src);
            let c = checksum::checksum(h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            let m = &mut b[ETH + 20..ETH + total];
            m[..8].copy_from_slice(&[ICMP_TIME_EXCEEDED, 0, 0, 0, 0, 0, 0, 0]);
            m[8..].copy_from_slice(&quote[..qlen]);
            let c = checksum::checksum(m);
            m[2..4].copy_from_slice(&c.to_be_bytes());
            out.emit(0, p);
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("suppressed", self.suppressed)]
    }
}
