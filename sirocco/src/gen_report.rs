//! The generator's report: achieved rates, loss and latency percentiles, as text and JSON.

use crate::dataplane::Outcome;
use gen::{Histogram, UdpGen};
use std::time::Duration;

/// What a generator run measured, summed over engines.
pub struct Report {
    pub offered_rate: u64,
    pub size: usize,
    pub sent: u64,
    pub received: u64,
    pub behind: u64,
    pub foreign: u64,
    pub unresolved: u64,
    pub send_secs: f64,
    pub rtt: Histogram,
    pub tx_ring_full: u64,
    pub engines: usize,
}

impl Report {
    pub fn new(out: &Outcome<UdpGen>, offered_rate: u64, size: usize, duration: Duration) -> Report {
        let mut r = Report {
            offered_rate,
            size,
            sent: 0,
            received: 0,
            behind: 0,
            foreign: 0,
            unresolved: 0,
            send_secs: 0.0,
            rtt: Histogram::default(),
            tx_ring_full: out.total().dropped(engine::Drop::TxRingFull),
            engines: out.engines.len(),
        };
        let mut first = u64::MAX;
        let mut last = 0;
        for (_, g) in &out.engines {
            r.sent += g.sent;
            r.received += g.received;
            r.behind += g.behind;
            r.foreign += g.foreign;
            r.unresolved += g.unresolved;
            r.rtt.merge(&g.rtt);
            if g.sent > 0 {
                first = first.min(g.first_send);
                last = last.max(g.last_send);
            }
        }
        r.send_secs = if last > first { (last - first) as f64 / 1e9 } else { duration.as_secs_f64() };
        r
    }

    /// Sent datagrams per second over the sending period (TX-ring-full drops excluded).
    pub fn tx_rate(&self) -> f64 {
        (self.sent - self.tx_ring_full.min(self.sent)) as f64 / self.send_secs.max(1e-9)
    }

    /// Replies per second over the sending period.
    pub fn rx_rate(&self) -> f64 {
        self.received as f64 / self.send_secs.max(1e-9)
    }

    fn loss(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            1.0 - self.received as f64 / self.sent as f64
        }
    }

    pub fn why_nothing_sent(&self) -> &'static str {
        if self.unresolved > 0 {
            "the destination's MAC address never resolved (is the destination up and on this link?)"
        } else {
            "no TX room (is the interface up?)"
        }
    }

    pub fn text(&self) -> String {
        let us = |q: f64| self.rtt.quantile(q) as f64 / 1000.0;
        format!(
            "gen udp: {} engine(s), offered {} pps, payload {} B\n  sent {} ({:.0} pps), received {} ({:.0} pps), loss {:.3}%\n  behind schedule {}, tx ring full {}, foreign {}\n  rtt us: p50 {:.1} p90 {:.1} p99 {:.1} p99.9 {:.1} max {:.1}\n",
            self.engines,
            self.offered_rate,
            self.size,
            self.sent,
            self.tx_rate(),
            self.received,
            self.rx_rate(),
            self.loss() * 100.0,
            self.behind,
            self.tx_ring_full,
            self.foreign,
            us(0.5),
            us(0.9),
            us(0.99),
            us(0.999),
            self.rtt.max() as f64 / 1000.0
        )
    }

    pub fn json(&self) -> String {
        format!(
            "{{\"offered_pps\":{},\"payload_bytes\":{},\"engines\":{},\"sent\":{},\"received\":{},\"tx_pps\":{:.1},\"rx_pps\":{:.1},\"loss\":{:.6},\"behind\":{},\"tx_ring_full\":{},\"foreign\":{},\"send_secs\":{:.6},\"rtt_ns\":{{\"p50\":{},\"p90\":{},\"p99\":{},\"p999\":{},\"max\":{}}}}}\n",
            self.offered_rate,
            self.size,
            self.engines,
            self.sent,
            self.received,
            self.tx_rate(),
            self.rx_rate(),
            self.loss(),
            self.behind,
            self.tx_ring_full,
            self.foreign,
            self.send_secs,
            self.rtt.quantile(0.5),
            self.rtt.quantile(0.9),
            self.rtt.quantile(0.99),
            self.rtt.quantile(0.999),
            self.rtt.max()
        )
    }
}
