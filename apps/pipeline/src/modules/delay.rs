//! Delay: a delay line for the WAN emulator, as the middlebox of the Atlas evaluation. Each
//! flow (the pair of IPv4 addresses, the same both ways) falls in one of the delay bands by a
//! hash, so a client keeps one round-trip time; packets wait on a timing wheel whose slots
//! are lists threaded through the packets' buffer indices: holding a packet costs no memory
//! beyond one index, and nothing is allocated per packet.

use super::headers::ipv4_in;
use super::Args;
use crate::module::{Ctx, Module, Out};
use crate::packet::{Batch, Pkt, BATCH};

const NONE: u32 = u32::MAX;
/// Longest delay.
pub const MAX_DELAY_MS: f64 = 10_000.0;

#[derive(Clone, Copy)]
struct Slot {
    head: u32,
    tail: u32,
}

const EMPTY: Slot = Slot { head: NONE, tail: NONE };

/// Holds each packet for its flow's delay: `delay_ms=D` for all, or `bands=[D1, D2, ...]`
/// (milliseconds) with flows spread over the bands evenly by a hash of their addresses.
/// The wheel turns every `tick_us` microseconds (100 by default): a packet leaves in the
/// first run of the task at least its delay after it came, and no more than a tick later.
pub struct Delay {
    bands_ns: Vec<u64>,
    tick_ns: u64,
    slots: Vec<Slot>,
    /// Per buffer index: the next packet in the same slot.
    next: Vec<u32>,
    /// The tick whose slot leaves next.
    cursor: u64,
    held: u64,
    clamped: u64,
}

impl Delay {
    pub(super) fn new(a: &Args) -> Result<Delay, String> {
        let mut bands = a.floats("bands")?;
        let one = a.float("delay_ms", -1.0, 0.0..=MAX_DELAY_MS)?;
        match (bands.is_empty(), one >= 0.0) {
            (true, true) => bands.push(one),
            (false, false) => {}
            (true, false) => return Err("give delay_ms=D or bands=[D1, D2, ...] (milliseconds)".into()),
            (false, true) => return Err("give delay_ms or bands, not both".into()),
        }
        if bands.len() > 64 || bands.iter().any(|b| !(0.0..=MAX_DELAY_MS).contains(b)) {
            return Err(format!("bands: at most 64, each from 0 to {MAX_DELAY_MS} ms"));
        }
        let tick_ns = a.int("tick_us", 100, 1..=100_000)? as u64 * 1000;
        let bands_ns: Vec<u64> = bands.iter().map(|b| (b * 1e6) as u64).collect();
        let longest = bands_ns.iter().copied().max().unwrap_or(0);
        // Room for the longest delay twice over, so a task that runs late never wraps.
        let slots = ((2 * longest / tick_ns) as usize + 2).next_power_of_two();
        Ok(Delay { bands_ns, tick_ns, slots: vec![EMPTY; slots], next: Vec::new(), cursor: 0, held: 0, clamped: 0 })
    }

    fn band(&self, d: &[u8]) -> u64 {
        if self.bands_ns.len() == 1 {
            return self.bands_ns[0];
        }
        let (a, b) = match ipv4_in(d) {
            Some((_, ip)) => {
                let (x, y) = (ip.src_addr().to_u32(), ip.dst_addr().to_u32());
                (x.min(y), x.max(y))
            }
            None => (0, 0),
        };
        let h = (u64::from(a) << 32 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.bands_ns[((h >> 32) % self.bands_ns.len() as u64) as usize]
    }

    fn push(&mut self, tick: u64, p: Pkt) {
        let i = p.index();
        self.next[i] = NONE;
        let mask = self.slots.len() as u64 - 1;
        let s = &mut self.slots[(tick & mask) as usize];
        if s.tail == NONE {
            s.head = i as u32;
        } else {
            self.next[s.tail as usize] = i as u32;
        }
        s.tail = i as u32;
    }
}

impl Module for Delay {
    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        if self.next.len() < ctx.pool.capacity() {
            self.next = vec![NONE; ctx.pool.capacity()];
            self.cursor = ctx.now.as_nanos() / self.tick_ns;
        }
        if self.held == 0 {
            self.cursor = self.cursor.max(ctx.now.as_nanos() / self.tick_ns);
        }
        let span = self.slots.len() as u64 - 1;
        for &p in batch.pkts() {
            let at = ctx.now.as_nanos() + self.band(ctx.pool.data(p));
            // Rounded up: never early.
            let mut tick = at.div_ceil(self.tick_ns);
            if tick >= self.cursor + span {
                // The task fell a whole wheel behind: leave as late as the wheel allows.
                tick = self.cursor + span - 1;
                self.clamped += 1;
            }
            self.push(tick.max(self.cursor), p);
            self.held += 1;
        }
        let _ = out;
    }

    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>, out: &mut Out) -> usize {
        if self.held == 0 {
            self.cursor = self.cursor.max(ctx.now.as_nanos() / self.tick_ns);
            return 0;
        }
        let now_tick = ctx.now.as_nanos() / self.tick_ns;
        let mask = self.slots.len() as u64 - 1;
        let mut n = 0;
        while self.cursor <= now_tick && n < BATCH && (n as u64) < self.held {
            let s = &mut self.slots[(self.cursor & mask) as usize];
            while s.head != NONE && n < BATCH {
                let i = s.head as usize;
                s.head = self.next[i];
                out.emit(0, Pkt::from_index(i));
                n += 1;
            }
            if s.head != NONE {
                break;
            }
            s.tail = NONE;
            self.cursor += 1;
        }
        self.held -= n as u64;
        if self.held == 0 {
            self.cursor = self.cursor.max(now_tick);
        }
        n
    }

    fn decouples(&self) -> bool {
        true
    }

    fn holds(&self) -> usize {
        self.held as usize
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("held", self.held), ("clamped", self.clamped)]
    }
}
