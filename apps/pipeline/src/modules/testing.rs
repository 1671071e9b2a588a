//! For module tests: one module run on a batch of frames, with exact frames out.

use super::Registry;
use crate::module::{Ctx, Module, Out};
use crate::packet::{Batch, Pool};
use crate::port::NamedPort;
use timer::Instant;

/// A module made from `class(args)`, alone, with `pool` buffers.
pub(crate) struct One {
    pub(crate) m: Box<dyn Module>,
    pub(crate) pool: Pool,
    pub(crate) offsets: Vec<Option<usize>>,
    pub(crate) ports: Vec<NamedPort>,
}

/// What one call gave: per output gate the frames, and how many were dropped.
pub(crate) type Gates = (Vec<Vec<Vec<u8>>>, usize);

impl One {
    pub(crate) fn new(class: &str, args: &str) -> One {
        let script = crate::script::parse(&format!("m :: {class}({args})")).unwrap();
        let m = Registry::default().make(&script.modules[0], &[]).unwrap();
        // Every attribute at its own place, as if each were read downstream.
        let mut offsets = Vec::new();
        let mut at = 0;
        for a in m.attrs() {
            offsets.push(Some(at));
            at += a.size;
        }
        One { m, pool: Pool::new(256), offsets, ports: Vec::new() }
    }

    fn collect(&mut self, mut out: Out) -> Gates {
        let (freed, _) = out.take_freed();
        let freed: Vec<_> = freed.collect();
        let dropped = freed.len();
        for p in freed {
            self.pool.free(p);
        }
        let gates = out
            .gates()
            .iter()
            .map(|b| {
                b.pkts()
                    .iter()
                    .map(|&p| {
                        let d = self.pool.data(p).to_vec();
                        self.pool.free(p);
                        d
                    })
                    .collect()
            })
            .collect();
        (gates, dropped)
    }

    /// Gives `frames` to input gate `igate` at time `now_ns`.
    pub(crate) fn process_at(&mut self, igate: u32, frames: &[Vec<u8>], now_ns: u64) -> Gates {
        let mut batch = Batch::default();
        for f in frames {
            assert!(batch.push(self.pool.alloc(f).unwrap()));
        }
        let mut out = Out::new(self.m.ogates());
        let mut ctx = Ctx {
            pool: &mut self.pool,
            now: Instant::from_nanos(now_ns),
            offsets: &self.offsets,
            ports: &mut self.ports,
        };
        self.m.process(&mut ctx, igate, &batch, &mut out);
        self.collect(out)
    }

    /// Runs the module's task once at time `now_ns`.
    pub(crate) fn task_at(&mut self, now_ns: u64) -> Gates {
        let mut out = Out::new(self.m.ogates());
        let mut ctx = Ctx {
            pool: &mut self.pool,
            now: Instant::from_nanos(now_ns),
            offsets: &self.offsets,
            ports: &mut self.ports,
        };
        self.m.run_task(&mut ctx, &mut out);
        self.collect(out)
    }
}

/// Runs module `class(args)` once on `frames`.
pub(crate) fn run(class: &str, args: &str, frames: &[Vec<u8>]) -> Gates {
    One::new(class, args).process_at(0, frames, 0)
}

/// Frames with right checksums, for module tests.
pub(crate) mod frames {
    use wire::checksum;

    pub(crate) const MAC_1: [u8; 6] = [2, 0, 0, 0, 0, 1];
    pub(crate) const MAC_2: [u8; 6] = [2, 0, 0, 0, 0, 2];

    /// Ethernet + IPv4 (TTL `ttl`) + `l4` (whose checksum at `csum_at`, if any, is filled in
    /// over the pseudo-header).
    fn build(src: [u8; 4], dst: [u8; 4], ttl: u8, proto: u8, mut l4: Vec<u8>, csum_at: Option<usize>) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend(MAC_2);
        f.extend(MAC_1);
        f.extend([0x08, 0x00]);
        let total = (20 + l4.len()) as u16;
        let mut ip = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, ttl, proto, 0, 0];
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip.extend(src);
        ip.extend(dst);
        let c = checksum::checksum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        if let Some(at) = csum_at {
            let ph = if proto == 1 {
                0
            } else {
                checksum::pseudo_header(wire::Ipv4Addr(src), wire::Ipv4Addr(dst), proto, l4.len() as u16)
            };
            let c = checksum::fold(checksum::add(ph, &l4));
            l4[at..at + 2].copy_from_slice(&(!c).to_be_bytes());
        }
        f.extend(ip);
        f.extend(l4);
        f
    }

    pub(crate) fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        udp_ttl(src, dst, 64, sport, dport, payload)
    }

    /// As [`udp`], with TTL `ttl`.
    pub(crate) fn udp_ttl(src: [u8; 4], dst: [u8; 4], ttl: u8, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut u = Vec::new();
        u.extend(sport.to_be_bytes());
        u.extend(dport.to_be_bytes());
        u.extend(((8 + payload.len()) as u16).to_be_bytes());
        u.extend([0, 0]);
        u.extend(payload);
        build(src, dst, ttl, 17, u, Some(6))
    }

    pub(crate) fn tcp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
        let mut t = vec![0u8; 20];
        t[0..2].copy_from_slice(&sport.to_be_bytes());
        t[2..4].copy_from_slice(&dport.to_be_bytes());
        t[4..8].copy_from_slice(&1000u32.to_be_bytes());
        t[12] = 5 << 4;
        t[13] = 0x02; // SYN
        t[14..16].copy_from_slice(&65535u16.to_be_bytes());
        build(src, dst, 64, 6, t, Some(16))
    }

    pub(crate) fn echo(src: [u8; 4], dst: [u8; 4], reply: bool, id: u16) -> Vec<u8> {
        let mut m = vec![if reply { 0 } else { 8 }, 0, 0, 0];
        m.extend(id.to_be_bytes());
        m.extend(7u16.to_be_bytes());
        m.extend(b"ping data");
        build(src, dst, 64, 1, m, Some(2))
    }

    /// True if the frame's IPv4 header checksum and its TCP/UDP/ICMP checksum are right.
    pub(crate) fn checksums_ok(f: &[u8]) -> bool {
        let ip = &f[14..34];
        let (proto, l4) = (ip[9], &f[34..]);
        let src: [u8; 4] = ip[12..16].try_into().unwrap();
        let dst: [u8; 4] = ip[16..20].try_into().unwrap();
        let ph = if proto == 1 {
            0
        } else {
            checksum::pseudo_header(wire::Ipv4Addr(src), wire::Ipv4Addr(dst), proto, l4.len() as u16)
        };
        checksum::checksum(ip) == 0 && checksum::fold(checksum::add(ph, l4)) == 0xffff
    }
}
