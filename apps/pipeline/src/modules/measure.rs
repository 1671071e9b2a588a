//! Latency through the pipeline: Timestamp stamps each packet with the time it passed, and
//! Measure, downstream, adds the time since then to a histogram.

use super::Args;
use crate::metadata::{Attr, Mode};
use crate::module::{Ctx, Module, Out};
use crate::packet::Batch;
use timer::histogram::Histogram;
use timer::Instant;

/// The metadata attribute the two share, unless `attr=` names another.
const ATTR: &str = "timestamp";

fn attr_name(a: &Args) -> Result<String, String> {
    Ok(a.string("attr")?.unwrap_or_else(|| ATTR.to_string()))
}

/// Writes the time (nanoseconds since the pipeline started) into metadata `timestamp`.
pub struct Timestamp {
    attr: String,
}

impl Timestamp {
    pub(super) fn new(a: &Args) -> Result<Timestamp, String> {
        Ok(Timestamp { attr: attr_name(a)? })
    }
}

impl Module for Timestamp {
    fn attrs(&self) -> Vec<Attr> {
        vec![Attr::new(&self.attr, 8, Mode::Write)]
    }

    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        let now = ctx.now.as_nanos().to_be_bytes();
        for &p in batch.pkts() {
            if let Some(slot) = ctx.attr_mut(p, 0, 8) {
                slot.copy_from_slice(&now);
            }
            out.emit(0, p);
        }
    }
}

/// Records, for each packet, the time since Timestamp stamped it (`attr=` as there).
pub struct Measure {
    attr: String,
    hist: Histogram,
}

impl Measure {
    pub(super) fn new(a: &Args) -> Result<Measure, String> {
        Ok(Measure { attr: attr_name(a)?, hist: Histogram::default() })
    }
}

impl Module for Measure {
    fn attrs(&self) -> Vec<Attr> {
        vec![Attr::new(&self.attr, 8, Mode::Read)]
    }

    fn process(&mut self, ctx: &mut Ctx<'_>, _igate: u32, batch: &Batch, out: &mut Out) {
        for &p in batch.pkts() {
            if let Some(v) = ctx.attr(p, 0, 8) {
                let mut b = [0u8; 8];
                b.copy_from_slice(v);
                self.hist.record(ctx.now.since(Instant::from_nanos(u64::from_be_bytes(b))).as_nanos());
            }
            out.emit(0, p);
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let h = &self.hist;
        vec![
            ("latency_count", h.count()),
            ("latency_p50_ns", h.quantile(0.5)),
            ("latency_p99_ns", h.quantile(0.99)),
            ("latency_p999_ns", h.quantile(0.999)),
            ("latency_max_ns", h.max()),
        ]
    }
}
