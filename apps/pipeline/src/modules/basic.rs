//! Modules that make, take or pass packets without looking at them: Source, Sink, Bypass.

use super::{drop_all, Args};
use crate::module::{Ctx, Module, Out};
use crate::packet::{Batch, BATCH};

/// Makes packets: `size` bytes each (the first eight hold a counter, big-endian), `count` in
/// all (0: without end), `batch` per run.
pub struct Source {
    size: usize,
    left: Option<u64>,
    batch: usize,
    seq: u64,
}

impl Source {
    pub(super) fn new(a: &Args) -> Result<Source, String> {
        let size = a.int("size", 64, 8..=(crate::packet::BUF_SIZE - crate::packet::HEADROOM) as i64)? as usize;
        let count = a.int("count", 0, 0..=i64::MAX)? as u64;
        let batch = a.int("batch", BATCH as i64, 1..=BATCH as i64)? as usize;
        Ok(Source { size, left: (count > 0).then_some(count), batch, seq: 0 })
    }
}

impl Module for Source {
    fn igates(&self) -> u32 {
        0
    }

    fn process(&mut self, _ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        drop_all(batch, out);
    }

    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, ctx: &mut Ctx<'_>, out: &mut Out) -> usize {
        let n = self.left.map_or(self.batch, |l| (l as usize).min(self.batch));
        let mut frame = [0u8; crate::packet::BUF_SIZE];
        let mut made = 0;
        for _ in 0..n {
            frame[..8].copy_from_slice(&self.seq.to_be_bytes());
            let Some(p) = ctx.pool.alloc(&frame[..self.size]) else { break };
            self.seq += 1;
            out.emit(0, p);
            made += 1;
        }
        if let Some(l) = &mut self.left {
            *l -= made as u64;
        }
        made
    }
}

/// Frees every packet.
pub struct Sink;

impl Module for Sink {
    fn ogates(&self) -> u32 {
        0
    }

    fn process(&mut self, _ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        drop_all(batch, out);
    }
}

/// Passes packets on unchanged.
pub struct Bypass;

impl Module for Bypass {
    fn process(&mut self, _ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            out.emit(0, p);
        }
    }
}
