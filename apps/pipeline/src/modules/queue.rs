//! Modules that hold packets and hand them on from their own task: Queue (a FIFO that
//! decouples two parts of the pipeline, and may close a cycle) and Delay (a delay line).

use super::Args;
use crate::module::{Ctx, Module, Out};
use crate::packet::{Batch, Pkt, BATCH};
use std::collections::VecDeque;
use timer::Instant;

/// A FIFO of up to `size` packets; its task hands on up to `burst` per run. A packet that
/// finds it full is dropped (`overflows`). Backpressure: once it is `high` full (3/4 of
/// `size` by default) it asks the pipeline to stop running the tasks that feed it, until it
/// drains below `low` (1/4) — their packets then wait in the NIC rings and their sources.
///
/// With `rate=BITS` (bits per second of whole frames) it is a bottleneck link instead: the
/// task releases packets no faster than the rate (a token bucket of two full frames, so they
/// leave spaced as a link of that speed sends them), and a full queue drops at its tail
/// with no backpressure — the drop-tail router queue of a real path, in front of which the
/// WAN emulator's delay and loss sit.
pub struct Queue {
    q: VecDeque<Pkt>,
    size: usize,
    burst: usize,
    high: usize,
    low: usize,
    congested: bool,
    overflows: u64,
    congestions: u64,
    /// Bits per second; 0: as fast as the task runs.
    rate: u64,
    /// Bits times 1e9 the link may send now, at most `bucket`.
    tokens: u128,
    bucket: u128,
    last: Option<Instant>,
}

/// Bits times 1e9 that two full-size Ethernet frames take: the shaper's bucket.
const SHAPER_BUCKET: u128 = 2 * 1514 * 8 * 1_000_000_000;

impl Queue {
    pub(super) fn new(a: &Args) -> Result<Queue, String> {
        let size = a.int("size", 1024, 2..=1 << 20)? as usize;
        let burst = a.int("burst", BATCH as i64, 1..=BATCH as i64)? as usize;
        let high = a.int("high", (size * 3 / 4) as i64, 1..=size as i64)? as usize;
        let low = a.int("low", (size / 4) as i64, 0..=high as i64 - 1)? as usize;
        let rate = a.int("rate", 0, 0..=1_000_000_000_000)? as u64;
        Ok(Queue {
            rate,
            tokens: 0,
            bucket: SHAPER_BUCKET,
            last: None,
            q: VecDeque::with_capacity(size),
            size,
            burst,
            high,
            low,
            congested: false,
            overflows: 0,
            congestions: 0,
        })
    }
}

impl Queue {
    /// The bottleneck's task: what the rate allows since the last run, in order.
    fn shape(&mut self, ctx: &mut Ctx<'_>, out: &mut Out) -> usize {
        let last = *self.last.get_or_insert(ctx.now);
        let dt = u128::from(ctx.now.since(last).as_nanos());
        self.last = Some(ctx.now);
        // An idle link saves up no more than the bucket: a burst after a pause leaves spaced.
        self.tokens = (self.tokens + dt * u128::from(self.rate)).min(self.bucket);
        let mut n = 0;
        while n < self.burst {
            let Some(&p) = self.q.front() else { break };
            let cost = ctx.pool.data(p).len() as u128 * 8 * 1_000_000_000;
            if self.tokens < cost {
                break;
            }
            self.tokens -= cost;
            self.q.pop_front();
            out.emit(0, p);
            n += 1;
        }
        n
    }
}

impl Module for Queue {
    fn process(&mut self, _ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            if self.q.len() < self.size {
                self.q.push_back(p);
            } else {
                self.overflows += 1;
                out.drop(p);
            }
        }
        if self.rate == 0 && !self.congested && self.q.len() >= self.high {
            self.congested = true;
            self.congestions += 1;
        }
    }

    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>, out: &mut Out) -> usize {
        if self.rate > 0 {
            return self.shape(ctx, out);
        }
        let n = self.burst.min(self.q.len());
        for p in self.q.drain(..n) {
            out.emit(0, p);
        }
        if self.congested && self.q.len() < self.low {
            self.congested = false;
        }
        n
    }

    fn decouples(&self) -> bool {
        true
    }

    fn holds(&self) -> usize {
        self.q.len()
    }

    fn congested(&self) -> bool {
        self.congested
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("queued", self.q.len() as u64), ("overflows", self.overflows), ("congestions", self.congestions)]
    }
}
