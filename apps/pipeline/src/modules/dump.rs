//! Dump: a copy of every packet that passes, into a pcap file.

use super::Args;
use crate::module::{Ctx, Module, Out};
use crate::packet::Batch;
use std::fs::File;
use std::io::BufWriter;
use std::time::{SystemTime, UNIX_EPOCH};
use timer::{Duration, Instant};
use wire::pcap::PcapWriter;

/// How long written packets may wait in the buffer before it is flushed to the file.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// Writes every packet that passes to the pcap file `path` (readable by tcpdump and
/// Wireshark) and passes it on unchanged. Writes go through a 1 MiB buffer, flushed at
/// least every second and when the pipeline stops; a write that fails stops the dump
/// (counted), never the traffic.
pub struct Dump {
    out: Option<PcapWriter<BufWriter<File>>>,
    /// Wall-clock microseconds at the pipeline's time 0.
    epoch_us: u64,
    flushed: Instant,
    written: u64,
    failed: u64,
}

impl Dump {
    pub(super) fn new(a: &Args) -> Result<Dump, String> {
        let path = a.string("path")?.ok_or("path=\"FILE\" is required")?;
        let f = File::create(&path).map_err(|e| format!("{path}: {e}"))?;
        let out = PcapWriter::new(BufWriter::with_capacity(1 << 20, f)).map_err(|e| format!("{path}: {e}"))?;
        let epoch_us = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0);
        Ok(Dump { out: Some(out), epoch_us, flushed: Instant::ZERO, written: 0, failed: 0 })
    }
}

impl Module for Dump {
    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        if let Some(w) = &mut self.out {
            let t = self.epoch_us + ctx.now.as_micros();
            let mut ok = batch.pkts().iter().all(|&p| w.write(t, ctx.pool.data(p)).is_ok());
            if ok && ctx.now.since(self.flushed) > FLUSH_EVERY {
                self.flushed = ctx.now;
                ok = w.flush().is_ok();
            }
            if ok {
                self.written += batch.len() as u64;
            } else {
                self.failed += 1;
                self.out = None;
            }
        }
        for &p in batch.pkts() {
            out.emit(0, p);
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("written", self.written), ("failed", self.failed)]
    }
}

impl Drop for Dump {
    fn drop(&mut self) {
        if let Some(w) = &mut self.out {
            let _ = w.flush();
        }
    }
}
