//! Ethernet switching: L2Forward (a learning switch) and MACRewrite (a router's next hop).

use super::Args;
use crate::module::{Ctx, Module, Out};
use crate::packet::Batch;
use wire::ethernet::HEADER_LEN;
use wire::{EthernetFrame, MacAddr};

/// Slots probed for a MAC before giving up (a learn is then skipped, a lookup misses).
const PROBE: usize = 8;

#[derive(Clone, Copy, Default)]
struct Entry {
    /// The MAC as an integer plus one (0: empty slot).
    key: u64,
    gate: u32,
    /// When it was last seen, in seconds since the pipeline started.
    seen_s: u32,
}

/// A learning switch with one gate pair per port: a frame that enters on input gate i
/// teaches that its source MAC lives behind gate i, and leaves by the gate its destination
/// was learnt on; broadcast, multicast and unknown destinations are flooded out of every
/// other gate. A frame whose destination lives behind the gate it came from is dropped
/// (`filtered`). Entries not seen for `timeout_s` seconds are forgotten.
pub struct L2Forward {
    gates: u32,
    table: Vec<Entry>,
    mask: usize,
    timeout_s: u32,
    learnt: u64,
    floods: u64,
    filtered: u64,
    table_full: u64,
}

fn mac_key(m: MacAddr) -> u64 {
    let mut k = [0u8; 8];
    k[2..].copy_from_slice(&m.0);
    u64::from_be_bytes(k) + 1
}

fn slot_of(key: u64, mask: usize) -> usize {
    // Fibonacci hashing spreads MACs that differ only in their last bytes.
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize & mask
}

impl L2Forward {
    pub(super) fn new(a: &Args) -> Result<L2Forward, String> {
        let gates = a.int("gates", 2, 2..=64)? as u32;
        let size = a.int("size", 4096, 16..=1 << 22)? as usize;
        let timeout_s = a.int("timeout_s", 300, 1..=86_400)? as u32;
        // Half full at most, so probes stay short.
        let slots = (size * 2).next_power_of_two();
        Ok(L2Forward {
            gates,
            table: vec![Entry::default(); slots],
            mask: slots - 1,
            timeout_s,
            learnt: 0,
            floods: 0,
            filtered: 0,
            table_full: 0,
        })
    }

    fn live(&self, e: &Entry, now_s: u32) -> bool {
        e.key != 0 && now_s.wrapping_sub(e.seen_s) < self.timeout_s
    }

    fn lookup(&self, key: u64, now_s: u32) -> Option<u32> {
        let s = slot_of(key, self.mask);
        (0..PROBE)
            .map(|i| &self.table[(s + i) & self.mask])
            .find(|e| e.key == key && self.live(e, now_s))
            .map(|e| e.gate)
    }

    fn learn(&mut self, key: u64, gate: u32, now_s: u32) {
        let s = slot_of(key, self.mask);
        let mut free = None;
        for i in 0..PROBE {
            let at = (s + i) & self.mask;
            let e = self.table[at];
            if e.key == key {
                self.table[at] = Entry { key, gate, seen_s: now_s };
                return;
            }
            if free.is_none() && !self.live(&e, now_s) {
                free = Some(at);
            }
        }
        match free {
            Some(at) => {
                self.table[at] = Entry { key, gate, seen_s: now_s };
                self.learnt += 1;
            }
            None => self.table_full += 1,
        }
    }
}

impl Module for L2Forward {
    fn igates(&self) -> u32 {
        self.gates
    }

    fn ogates(&self) -> u32 {
        self.gates
    }

    fn process(&mut self, ctx: &mut Ctx<'_>, igate: u32, batch: &Batch, out: &mut Out) {
        let now_s = (ctx.now.as_millis() / 1000) as u32;
        for &p in batch.pkts() {
            let Ok(frame) = EthernetFrame::new_checked(ctx.pool.data(p)) else {
                out.drop(p);
                continue;
            };
            let (dst, src) = (frame.dst_addr(), frame.src_addr());
            if !src.is_multicast() {
                self.learn(mac_key(src), igate, now_s);
            }
            let to = if dst.is_multicast() { None } else { self.lookup(mac_key(dst), now_s) };
            match to {
                Some(g) if g == igate => {
                    self.filtered += 1;
                    out.drop(p);
                }
                Some(g) => out.emit(g, p),
                None => {
                    self.floods += 1;
                    // The original leaves by the first other gate, copies by the rest.
                    let mut others = (0..self.gates).filter(|&g| g != igate);
                    let first = others.next().unwrap_or(0);
                    for g in others {
                        if let Some(c) = ctx.pool.copy(p) {
                            out.emit(g, c);
                        }
                    }
                    out.emit(first, p);
                }
            }
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("learnt", self.learnt),
            ("floods", self.floods),
            ("filtered", self.filtered),
            ("table_full", self.table_full),
        ]
    }
}

/// Sets the Ethernet source and/or destination address (`src=`, `dst=`), as a router does
/// for the next hop.
pub struct MacRewrite {
    src: Option<MacAddr>,
    dst: Option<MacAddr>,
}

impl MacRewrite {
    pub(super) fn new(a: &Args) -> Result<MacRewrite, String> {
        let mac = |k: &str| -> Result<Option<MacAddr>, String> {
            match a.string(k)? {
                None => Ok(None),
                Some(s) => MacAddr::parse(&s).map(Some).ok_or_else(|| format!("{k}: '{s}' is not a MAC address")),
            }
        };
        let (src, dst) = (mac("src")?, mac("dst")?);
        if src.is_none() && dst.is_none() {
            return Err("give src=\"MAC\", dst=\"MAC\" or both".into());
        }
        Ok(MacRewrite { src, dst })
    }
}

impl Module for MacRewrite {
    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            let d = ctx.pool.data_mut(p);
            if d.len() < HEADER_LEN {
                out.drop(p);
                continue;
            }
            let mut frame = EthernetFrame::new_unchecked(d);
            if let Some(m) = self.dst {
                frame.set_dst_addr(m);
            }
            if let Some(m) = self.src {
                frame.set_src_addr(m);
            }
            out.emit(0, p);
        }
    }
}
