//! Latency percentiles of a generator's histogram, as the reports print and write them.

use gen::Histogram;
use serde::Serialize;

/// Percentiles in nanoseconds.
#[derive(Serialize, Clone, Copy)]
pub struct Percentiles {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl Percentiles {
    pub fn of(h: &Histogram) -> Percentiles {
        Percentiles {
            p50: h.quantile(0.5),
            p90: h.quantile(0.9),
            p99: h.quantile(0.99),
            p999: h.quantile(0.999),
            max: h.max(),
        }
    }

    /// `p50 … max` in microseconds with one decimal.
    pub fn micros(&self) -> String {
        let us = |ns: u64| ns as f64 / 1000.0;
        format!(
            "p50 {:.1} p90 {:.1} p99 {:.1} p99.9 {:.1} max {:.1}",
            us(self.p50),
            us(self.p90),
            us(self.p99),
            us(self.p999),
            us(self.max)
        )
    }
}
