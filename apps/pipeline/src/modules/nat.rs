//! NAT: source address and port translation, as a home or carrier-grade NAT does it.

use super::headers::{flow_of, Flow};
use super::Args;
use crate::module::{Ctx, Module, Out};
use crate::packet::Batch;
use std::collections::HashMap;
use timer::{Duration, Instant};
use wire::{IcmpPacket, Ipv4Addr, Ipv4Packet, Protocol, TcpPacket, UdpPacket};

#[derive(Clone, Copy)]
struct Binding {
    int_addr: u32,
    int_port: u16,
    last: Instant,
}

const PROTOS: [u8; 3] = [Protocol::TCP, Protocol::UDP, Protocol::ICMP];

fn proto_index(p: u8) -> Option<usize> {
    PROTOS.iter().position(|&x| x == p)
}

/// Source NAT. Packets from inside enter by input gate 0 and leave by output gate 0 from
/// `ext_addr` and a port of `ports` (ICMP echo: an identifier); answers from outside enter
/// by input gate 1 and leave by output gate 1 to the inside host and port they belong to.
/// TCP, UDP and ICMP echo; checksums updated incrementally. A binding not used for
/// `timeout_s` seconds may be given to another flow. Other packets, answers without a
/// binding, and flows that find every port bound are dropped (counted).
pub struct Nat {
    ext: u32,
    lo: u16,
    range: usize,
    timeout: Duration,
    fwd: HashMap<(u8, u32, u16), u16>,
    /// Per protocol, per external port: who has it.
    rev: Vec<Option<Binding>>,
    hand: [usize; 3],
    bound: u64,
    expired: u64,
    no_port: u64,
    no_binding: u64,
    unsupported: u64,
}

impl Nat {
    pub(super) fn new(a: &Args) -> Result<Nat, String> {
        let ext = a.string("ext_addr")?.ok_or("ext_addr=\"A.B.C.D\" (the outside address) is required")?;
        let ext: std::net::Ipv4Addr = ext.parse().map_err(|_| format!("ext_addr: '{ext}' is not an IPv4 address"))?;
        let (lo, hi) = match a.string("ports")? {
            None => (1024, 65535),
            Some(r) => {
                let bad = || format!("ports: '{r}' is not a range LOW-HIGH of 1 to 65535");
                let (l, h) = r.split_once('-').ok_or_else(bad)?;
                let (l, h): (u16, u16) = (l.parse().map_err(|_| bad())?, h.parse().map_err(|_| bad())?);
                if l == 0 || l > h {
                    return Err(bad());
                }
                (l, h)
            }
        };
        let range = usize::from(hi - lo) + 1;
        let timeout_s = a.int("timeout_s", 120, 1..=86_400)? as u64;
        Ok(Nat {
            ext: u32::from(ext),
            lo,
            range,
            timeout: Duration::from_secs(timeout_s),
            fwd: HashMap::with_capacity(range * PROTOS.len()),
            rev: vec![None; range * PROTOS.len()],
            hand: [0; 3],
            bound: 0,
            expired: 0,
            no_port: 0,
            no_binding: 0,
            unsupported: 0,
        })
    }

    /// A free (or expired) external port for protocol index `pi`.
    fn allocate(&mut self, pi: usize, now: Instant) -> Option<u16> {
        for _ in 0..self.range {
            let i = self.hand[pi];
            self.hand[pi] = (i + 1) % self.range;
            let slot = pi * self.range + i;
            match self.rev[slot] {
                None => return Some(self.lo + i as u16),
                Some(b) if now.since(b.last) > self.timeout => {
                    self.fwd.remove(&(PROTOS[pi], b.int_addr, b.int_port));
                    self.expired += 1;
                    self.rev[slot] = None;
                    return Some(self.lo + i as u16);
                }
                Some(_) => {}
            }
        }
        None
    }
}

/// Rewrites the source (`src`) or destination address and port (or ICMP identifier) of the
/// flow in `d`, with the checksums that cover them.
fn rewrite(d: &mut [u8], f: &Flow, src: bool, addr: u32, port: u16) {
    let new = Ipv4Addr::from_u32(addr);
    let mut ip = Ipv4Packet::new_unchecked(&mut d[f.ip..]);
    let old = if src { ip.src_addr() } else { ip.dst_addr() };
    if src {
        ip.set_src_addr(new);
    } else {
        ip.set_dst_addr(new);
    }
    let t = &mut d[f.l4..];
    match f.proto {
        Protocol::TCP => {
            let mut s = TcpPacket::new_unchecked(t);
            s.update_checksum_for_addr(old, new);
            if src {
                s.set_src_port(port)
            } else {
                s.set_dst_port(port)
            }
        }
        Protocol::UDP => {
            let mut u = UdpPacket::new_unchecked(t);
            u.update_checksum_for_addr(old, new);
            if src {
                u.set_src_port(port)
            } else {
                u.set_dst_port(port)
            }
        }
        // ICMP echo: the identifier, under the ICMP checksum only.
        _ => IcmpPacket::new_unchecked(t).set_ident(port),
    }
}

impl Module for Nat {
    fn igates(&self) -> u32 {
        2
    }

    fn ogates(&self) -> u32 {
        2
    }

    fn process(&mut self, ctx: &mut Ctx<'_>, igate: u32, batch: &Batch, out: &mut Out) {
        let now = ctx.now;
        for &p in batch.pkts() {
            let d = ctx.pool.data(p);
            let Some((f, pi)) = flow_of(d).filter(|f| f.ports).and_then(|f| Some((f, proto_index(f.proto)?))) else {
                self.unsupported += 1;
                out.drop(p);
                continue;
            };
            if igate == 0 {
                let key = (f.proto, f.src, f.sport);
                let port = match self.fwd.get(&key) {
                    Some(&port) => port,
                    None => {
                        let Some(port) = self.allocate(pi, now) else {
                            self.no_port += 1;
                            out.drop(p);
                            continue;
                        };
                        self.fwd.insert(key, port);
                        self.bound += 1;
                        port
                    }
                };
                self.rev[pi * self.range + usize::from(port - self.lo)] =
                    Some(Binding { int_addr: f.src, int_port: f.sport, last: now });
                rewrite(ctx.pool.data_mut(p), &f, true, self.ext, port);
                out.emit(0, p);
            } else {
                let slot = (f.dst == self.ext && f.dport >= self.lo && usize::from(f.dport - self.lo) < self.range)
                    .then(|| pi * self.range + usize::from(f.dport - self.lo));
                let Some(b) = slot.and_then(|s| self.rev[s].as_mut()).filter(|b| now.since(b.last) <= self.timeout)
                else {
                    self.no_binding += 1;
                    out.drop(p);
                    continue;
                };
                b.last = now;
                let (addr, port) = (b.int_addr, b.int_port);
                rewrite(ctx.pool.data_mut(p), &f, false, addr, port);
                out.emit(1, p);
            }
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("bound", self.bound),
            ("expired", self.expired),
            ("no_port", self.no_port),
            ("no_binding", self.no_binding),
            ("unsupported", self.unsupported),
        ]
    }
}

#[cfg(test)]
mod tests;
