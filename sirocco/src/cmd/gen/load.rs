//! What the load generators share: how long they run and where their report goes, how a
//! rate is split over engines, and latency percentiles as the reports print and write them.

use crate::serve::secs;
use clap::Args;
use gen::Histogram;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// How long a generator runs, and its JSON report.
#[derive(Args)]
pub struct LoadArgs {
    /// Seconds to send load.
    #[arg(long, default_value_t = 5.0)]
    pub duration: f64,
    /// Seconds left for answers after sending stops.
    #[arg(long, default_value_t = 0.5)]
    pub drain: f64,
    /// Also write the report as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

impl LoadArgs {
    /// The sending time and the drain time after it.
    pub fn times(&self) -> Result<(Duration, Duration), String> {
        Ok((secs(self.duration, "--duration")?, secs(self.drain, "--drain")?))
    }
}

/// `rate` split over `queues` engines, the remainder to the first ones.
/// The generator's own address for connections to `dst`: its --addr of `dst`'s family, which
/// the kernel must not have (a TCP generator's connections use every ephemeral port).
pub fn own_address(
    opts: &crate::dataplane::Options,
    dst: std::net::IpAddr,
    what: &str,
) -> Result<wire::IpAddr, String> {
    io::iface::require_root().map_err(|e| e.to_string())?;
    let ifc = io::iface::Interface::lookup(&opts.iface).map_err(|e| e.to_string())?;
    let (local, kernels) = match dst {
        std::net::IpAddr::V4(_) => {
            let a = opts.addr4(&format!("{what} to an IPv4 --dst"))?;
            (wire::IpAddr::V4(a), ifc.kernel_has(a))
        }
        std::net::IpAddr::V6(_) => {
            let a = opts.addr6.ok_or_else(|| format!("--dst {dst} is IPv6: give {what} an IPv6 --addr too"))?;
            (wire::IpAddr::V6(a), ifc.kernel_has6(a))
        }
    };
    if kernels.map_err(|e| e.to_string())? {
        return Err(format!(
            "--addr {local} is the kernel's on {}: {what} needs an address of its own (its connections use every ephemeral port)",
            ifc.name
        ));
    }
    Ok(local)
}

pub fn share(rate: u64, queues: u32, q: u32) -> u64 {
    rate / u64::from(queues) + u64::from(u64::from(q) < rate % u64::from(queues))
}

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
