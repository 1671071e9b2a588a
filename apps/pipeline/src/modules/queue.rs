//! Modules that hold packets and hand them on from their own task: Queue (a FIFO that
//! decouples two parts of the pipeline, and may close a cycle) and Delay (a delay line).

use super::Args;
use crate::module::{Ctx, Module, Out};
use crate::packet::{Batch, Pkt, BATCH};
use std::collections::VecDeque;

/// A FIFO of up to `size` packets; its task hands on up to `burst` per run. A packet that
/// finds it full is dropped (`overflows`). Backpressure: once it is `high` full (3/4 of
/// `size` by default) it asks the pipeline to stop running the tasks that feed it, until it
/// drains below `low` (1/4) — their packets then wait in the NIC rings and their sources.
pub struct Queue {
    q: VecDeque<Pkt>,
    size: usize,
    burst: usize,
    high: usize,
    low: usize,
    congested: bool,
    overflows: u64,
    congestions: u64,
}

impl Queue {
    pub(super) fn new(a: &Args) -> Result<Queue, String> {
        let size = a.int("size", 1024, 2..=1 << 20)? as usize;
        let burst = a.int("burst", BATCH as i64, 1..=BATCH as i64)? as usize;
        let high = a.int("high", (size * 3 / 4) as i64, 1..=size as i64)? as usize;
        let low = a.int("low", (size / 4) as i64, 0..=high as i64 - 1)? as usize;
        Ok(Queue {
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
        if !self.congested && self.q.len() >= self.high {
            self.congested = true;
            self.congestions += 1;
        }
    }

    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, _ctx: &mut Ctx<'_>, out: &mut Out) -> usize {
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
