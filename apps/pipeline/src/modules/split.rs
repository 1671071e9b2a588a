//! Modules that share packets among their output gates: RoundRobin, Replicate, RandomSplit.

use super::Args;
use crate::module::{Ctx, Module, Out};
use crate::packet::Batch;

/// Deals packets to its gates in turn.
pub struct RoundRobin {
    pub(super) gates: u32,
    pub(super) next: u32,
}

impl Module for RoundRobin {
    fn ogates(&self) -> u32 {
        self.gates
    }

    fn process(&mut self, _ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            out.emit(self.next, p);
            self.next = (self.next + 1) % self.gates;
        }
    }
}

/// Sends each packet out of every gate (copies beyond the first; a copy the pool has no
/// buffer for is not made).
pub struct Replicate {
    pub(super) gates: u32,
}

impl Module for Replicate {
    fn ogates(&self) -> u32 {
        self.gates
    }

    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            for g in 1..self.gates {
                if let Some(c) = ctx.pool.copy(p) {
                    out.emit(g, c);
                }
            }
            out.emit(0, p);
        }
    }
}

/// A xorshift64 generator: cheap per packet, and the same stream for the same `seed=`.
pub(crate) struct Rand(u64);

impl Rand {
    /// From a module's `seed=` argument (1 by default).
    pub(crate) fn from_args(a: &Args) -> Result<Rand, String> {
        Ok(Rand(a.int("seed", 1, 1..=i64::MAX)? as u64))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in [0, 1) from the high bits of `r`.
    pub(crate) fn unit(r: u64) -> f64 {
        (r >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Sends each packet to a gate at random, or drops it with probability `drop`.
pub struct RandomSplit {
    gates: u32,
    drop: f64,
    rand: Rand,
}

impl RandomSplit {
    pub(super) fn new(a: &Args) -> Result<RandomSplit, String> {
        Ok(RandomSplit { gates: a.gates()?, drop: a.float("drop", 0.0, 0.0..=1.0)?, rand: Rand::from_args(a)? })
    }
}

impl Module for RandomSplit {
    fn ogates(&self) -> u32 {
        self.gates
    }

    fn process(&mut self, _ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            let r = self.rand.next();
            if Rand::unit(r) >= self.drop {
                out.emit((r % u64::from(self.gates)) as u32, p);
            } else {
                out.drop(p);
            }
        }
    }
}
