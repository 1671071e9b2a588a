//! Congestion control: NewReno (RFC 5681 / 6582) and CUBIC (RFC 9438), chosen per listener or
//! connect. Windows are in bytes; the loss-recovery machinery (fast retransmit, SACK recovery)
//! lives in the connection and calls these hooks.

use timer::{Duration, Instant};

/// Which algorithm a connection uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CcKind {
    /// RFC 5681 slow start and congestion avoidance, RFC 6582 recovery.
    NewReno,
    /// RFC 9438.
    #[default]
    Cubic,
}

/// CUBIC constants (RFC 9438 §4.6, §5).
const C: f64 = 0.4;
const BETA: f64 = 0.7;

#[derive(Debug, Clone, Copy, Default)]
struct Cubic {
    /// Window before the last reduction, in segments.
    w_max: f64,
    /// Start of the current avoidance epoch (None until the first ACK after a reduction).
    epoch: Option<Instant>,
    k: f64,
    /// The Reno-friendly estimate, in segments.
    w_est: f64,
    cwnd_epoch: f64,
}

/// Congestion state of one connection.
#[derive(Debug, Clone, Copy)]
pub struct Congestion {
    kind: CcKind,
    smss: u32,
    cwnd: u32,
    ssthresh: u32,
    /// Bytes acknowledged in avoidance since cwnd last grew (Reno byte counting).
    acked_acc: u32,
    cubic: Cubic,
}

impl Congestion {
    /// Initial window per RFC 6928: min(10·MSS, max(2·MSS, 14600)).
    pub fn new(kind: CcKind, smss: u32) -> Congestion {
        let smss = smss.max(1);
        let iw = (10 * smss).min((2 * smss).max(14_600));
        Congestion { kind, smss, cwnd: iw, ssthresh: u32::MAX, acked_acc: 0, cubic: Cubic::default() }
    }

    /// The algorithm.
    pub fn kind(&self) -> CcKind {
        self.kind
    }

    /// Congestion window in bytes.
    pub fn cwnd(&self) -> u32 {
        self.cwnd
    }

    /// Slow-start threshold in bytes.
    pub fn ssthresh(&self) -> u32 {
        self.ssthresh
    }

    /// The sender's MSS changed (path MTU); windows keep their byte values but never fall
    /// below what one segment needs.
    pub fn set_smss(&mut self, smss: u32) {
        self.smss = smss.max(1);
        self.cwnd = self.cwnd.max(self.smss);
    }

    /// New data was acknowledged outside loss recovery. `flight` is what was outstanding
    /// before this ACK, so an application-limited sender does not inflate its window.
    pub fn on_ack(&mut self, acked: u32, now: Instant, srtt: Duration, flight: u32) {
        if flight < self.cwnd / 2 && self.cwnd > 2 * self.smss {
            return; // application-limited (RFC 7661's idea, simplified): keep the window
        }
        if self.cwnd < self.ssthresh {
            // Slow start with appropriate byte counting, L = 2·SMSS (RFC 3465).
            self.cwnd = self.cwnd.saturating_add(acked.min(2 * self.smss));
            return;
        }
        match self.kind {
            CcKind::NewReno => self.reno_avoid(acked),
            CcKind::Cubic => self.cubic_avoid(acked, now, srtt),
        }
    }

    fn reno_avoid(&mut self, acked: u32) {
        self.acked_acc = self.acked_acc.saturating_add(acked);
        if self.acked_acc >= self.cwnd {
            self.acked_acc -= self.cwnd;
            self.cwnd = self.cwnd.saturating_add(self.smss);
        }
    }

    fn cubic_avoid(&mut self, acked: u32, now: Instant, srtt: Duration) {
        let smss = f64::from(self.smss);
        let cwnd = f64::from(self.cwnd) / smss;
        let c = &mut self.cubic;
        let start = *c.epoch.get_or_insert_with(|| {
            c.cwnd_epoch = cwnd;
            c.k = if c.w_max > cwnd { ((c.w_max - cwnd) / C).cbrt() } else { 0.0 };
            c.w_max = c.w_max.max(cwnd);
            c.w_est = cwnd;
            now
        });
        let t = (now.since(start) + srtt).as_secs_f64();
        let target = (C * (t - c.k).powi(3) + c.w_max).clamp(cwnd, 1.5 * cwnd);
        let segs = f64::from(acked) / smss;
        // RFC 9438 §4.3: the Reno-friendly region with alpha = 3(1-beta)/(1+beta).
        c.w_est += 3.0 * (1.0 - BETA) / (1.0 + BETA) * segs / cwnd;
        let next = if target < c.w_est { c.w_est } else { cwnd + (target - cwnd) / cwnd * segs };
        self.cwnd = ((next * smss) as u32).max(self.cwnd);
    }

    /// Loss detected by duplicate ACKs or SACK: sets ssthresh and returns the window to use
    /// during recovery.
    pub fn on_loss(&mut self, flight: u32) -> u32 {
        let flight = flight.max(self.smss);
        match self.kind {
            CcKind::NewReno => self.ssthresh = (flight / 2).max(2 * self.smss),
            CcKind::Cubic => {
                let smss = f64::from(self.smss);
                let cwnd = f64::from(self.cwnd) / smss;
                let c = &mut self.cubic;
                // Fast convergence (§4.7): give way to newer flows after successive losses.
                c.w_max = if cwnd < c.w_max { cwnd * (1.0 + BETA) / 2.0 } else { cwnd };
                c.epoch = None;
                self.ssthresh = ((f64::from(flight) * BETA) as u32).max(2 * self.smss);
            }
        }
        self.acked_acc = 0;
        self.cwnd = self.ssthresh;
        self.cwnd
    }

    /// Recovery ended with all data up to the recovery point acknowledged.
    pub fn on_recovery_exit(&mut self, flight: u32) {
        // RFC 6582 §3.2 step 3: min(ssthresh, FlightSize + SMSS), never below one segment.
        self.cwnd = self.ssthresh.min(flight.saturating_add(self.smss)).max(self.smss);
    }

    /// During recovery the window follows the recovery algorithm, which sets it here.
    pub fn set_cwnd(&mut self, cwnd: u32) {
        self.cwnd = cwnd.max(self.smss);
    }

    /// The retransmission timer expired: restart from one segment (RFC 5681 §3.1).
    pub fn on_rto(&mut self, flight: u32, first_expiry: bool) {
        if first_expiry {
            let beta = if self.kind == CcKind::Cubic { BETA } else { 0.5 };
            self.ssthresh = ((f64::from(flight) * beta) as u32).max(2 * self.smss);
            if self.kind == CcKind::Cubic {
                self.cubic.w_max = f64::from(self.cwnd) / f64::from(self.smss);
            }
        }
        self.cubic.epoch = None;
        self.acked_acc = 0;
        self.cwnd = self.smss;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_window_and_slow_start() {
        let mut c = Congestion::new(CcKind::NewReno, 1460);
        assert_eq!(c.cwnd(), 14600);
        c.on_ack(1460, Instant::ZERO, Duration::from_millis(10), c.cwnd());
        assert_eq!(c.cwnd(), 16060);
        let w = c.on_loss(20_000);
        assert_eq!(w, 10_000);
        // Avoidance: one segment per window of bytes acknowledged.
        for _ in 0..7 {
            c.on_ack(1460, Instant::ZERO, Duration::from_millis(10), c.cwnd());
        }
        assert_eq!(c.cwnd(), 10_000 + 1460);
        c.on_rto(11_460, true);
        assert_eq!((c.cwnd(), c.ssthresh()), (1460, 5730));
    }

    #[test]
    fn cubic_reduces_by_beta_and_regrows_towards_wmax() {
        let mut c = Congestion::new(CcKind::Cubic, 1000);
        c.on_loss(100_000);
        assert_eq!(c.cwnd(), 70_000);
        let mut now = Instant::ZERO;
        for _ in 0..2000 {
            now += Duration::from_millis(1);
            let w = c.cwnd();
            c.on_ack(1000, now, Duration::from_millis(20), w);
        }
        // After two seconds CUBIC is past K (≈4.2 s for W_max 100) only partly: between the
        // reduced window and W_max, and growing.
        assert!(c.cwnd() > 70_000 && c.cwnd() < 110_000, "{}", c.cwnd());
    }
}
