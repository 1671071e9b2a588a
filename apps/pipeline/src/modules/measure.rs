//! Latency through the pipeline: Timestamp stamps each packet with the time it passed, and
//! Measure, downstream, adds the time since then to a histogram.

use super::Args;
use crate::metadata::{Attr, Mode};
use crate::module::{Ctx, Module, Out};
use crate::packet::Batch;

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
        let now = ctx.now_ns.to_be_bytes();
        for &p in batch.pkts() {
            if let Some(slot) = ctx.attr_mut(p, 0, 8) {
                slot.copy_from_slice(&now);
            }
            out.emit(0, p);
        }
    }
}

/// Sub-buckets per power of two: values are kept within 1/16 (6 %).
const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB;

/// A log-linear histogram of nanoseconds.
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; BUCKETS], total: 0, max: 0 }
    }
}

impl Histogram {
    fn bucket(v: u64) -> usize {
        if v < SUB as u64 {
            return v as usize;
        }
        let e = 63 - v.leading_zeros();
        let sub = (v >> (e - SUB_BITS)) as usize & (SUB - 1);
        (e - SUB_BITS + 1) as usize * SUB + sub
    }

    /// The smallest value of bucket `b`.
    fn floor(b: usize) -> u64 {
        if b < SUB {
            return b as u64;
        }
        let e = (b / SUB) as u32 + SUB_BITS - 1;
        (1u64 << e) | ((b % SUB) as u64) << (e - SUB_BITS)
    }

    /// Adds one value.
    pub fn record(&mut self, v: u64) {
        self.counts[Self::bucket(v)] += 1;
        self.total += 1;
        self.max = self.max.max(v);
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The value `q` (0 to 1) of the way up, to the histogram's precision (0 if empty).
    pub fn quantile(&self, q: f64) -> u64 {
        let want = ((self.total as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= want {
                return Self::floor(b).min(self.max);
            }
        }
        0
    }

    /// The largest value.
    pub fn max(&self) -> u64 {
        self.max
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
                self.hist.record(ctx.now_ns.saturating_sub(u64::from_be_bytes(b)));
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
