//! What a UDP generator run measured, summed over engines: rates, loss, round trips; as text
//! and JSON.

use super::load::Percentiles;
use crate::dataplane::Outcome;
use gen::{Histogram, UdpGen};
use serde::Serialize;
use std::time::Duration;

/// What a generator run measured, summed over engines.
pub(super) struct Report {
    offered_rate: u64,
    size: usize,
    pub(super) sent: u64,
    received: u64,
    behind: u64,
    foreign: u64,
    unresolved: u64,
    send_secs: f64,
    rtt: Histogram,
    tx_ring_full: u64,
    engines: usize,
}

/// The report as JSON.
#[derive(Serialize)]
pub(super) struct ReportJson {
    offered_pps: u64,
    payload_bytes: usize,
    engines: usize,
    sent: u64,
    received: u64,
    tx_pps: f64,
    rx_pps: f64,
    loss: f64,
    behind: u64,
    tx_ring_full: u64,
    foreign: u64,
    send_secs: f64,
    rtt_ns: Percentiles,
}

impl Report {
    pub(super) fn new(out: &Outcome<UdpGen>, offered_rate: u64, size: usize, duration: Duration) -> Report {
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
            tx_ring_full: out.total().dropped(engine::DropReason::TxRingFull),
            engines: out.engines.len(),
        };
        let (mut first, mut last) = (engine::Instant::from_nanos(u64::MAX), engine::Instant::ZERO);
        for g in out.apps() {
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
        r.send_secs = if last > first { last.since(first).as_secs_f64() } else { duration.as_secs_f64() };
        r
    }

    /// Sent datagrams per second over the sending period (TX-ring-full drops excluded).
    pub(super) fn tx_rate(&self) -> f64 {
        (self.sent - self.tx_ring_full.min(self.sent)) as f64 / self.send_secs.max(1e-9)
    }

    /// Replies per second over the sending period.
    pub(super) fn rx_rate(&self) -> f64 {
        self.received as f64 / self.send_secs.max(1e-9)
    }

    pub(super) fn loss(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            1.0 - self.received as f64 / self.sent as f64
        }
    }

    pub(super) fn why_nothing_sent(&self) -> &'static str {
        if self.unresolved > 0 {
            "the destination's MAC address never resolved (is the destination up and on this link?)"
        } else {
            "no TX room (is the interface up?)"
        }
    }

    pub(super) fn text(&self) -> String {
        format!(
            "gen udp: {} engine(s), offered {} pps, payload {} B\n  sent {} ({:.0} pps), received {} ({:.0} pps), loss {:.3}%\n  behind schedule {}, tx ring full {}, foreign {}\n  rtt us: {}\n",
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
            Percentiles::of(&self.rtt).micros()
        )
    }

    pub(super) fn json(&self) -> ReportJson {
        ReportJson {
            offered_pps: self.offered_rate,
            payload_bytes: self.size,
            engines: self.engines,
            sent: self.sent,
            received: self.received,
            tx_pps: self.tx_rate(),
            rx_pps: self.rx_rate(),
            loss: self.loss(),
            behind: self.behind,
            tx_ring_full: self.tx_ring_full,
            foreign: self.foreign,
            send_secs: self.send_secs,
            rtt_ns: Percentiles::of(&self.rtt),
        }
    }
}
