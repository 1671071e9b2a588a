//! Congestion control: NewReno (RFC 5681 / 6582), CUBIC (RFC 9438) and BBR ([`crate::bbr`]),
//! chosen per listener or connect. Windows are in bytes; the loss-recovery machinery (fast
//! retransmit, SACK recovery) lives in the connection and calls these hooks.

use crate::bbr::{Bbr, Delivery};
pub use crate::rate_sample::RateSample;
use timer::{Duration, Instant};

/// Which algorithm a connection uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CcKind {
    /// RFC 5681 slow start and congestion avoidance, RFC 6582 recovery.
    NewReno,
    /// RFC 9438.
    #[default]
    Cubic,
    /// BBR v1: a model of the path instead of loss (see [`crate::bbr`]); paced.
    Bbr,
}

impl std::str::FromStr for CcKind {
    type Err = String;
    fn from_str(s: &str) -> Result<CcKind, String> {
        match s {
            "cubic" => Ok(CcKind::Cubic),
            "newreno" | "reno" => Ok(CcKind::NewReno),
            "bbr" => Ok(CcKind::Bbr),
            _ => Err(format!("unknown congestion control '{s}': cubic, newreno or bbr")),
        }
    }
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

/// HyStart++ (RFC 9406 §4.2) constants: RTT samples per round, and the bounds of the
/// threshold of RTT growth that ends slow start.
const HYSTART_SAMPLES: u32 = 8;
const HYSTART_MIN_THRESH: Duration = Duration::from_millis(4);
const HYSTART_MAX_THRESH: Duration = Duration::from_millis(16);

/// HyStart++'s rounds: slow start ends when the RTT of a round grows by an eighth over the
/// last one, before the queue it fills overflows and drops half a window (on a drop-tail
/// bottleneck of one BDP, doubling the window each round drops a whole window's worth).
#[derive(Debug, Clone, Copy, Default)]
struct HyStart {
    /// The round ends when this sequence number (SND.MAX when it began) is acknowledged.
    round_end: Option<u32>,
    last_min: Option<Duration>,
    cur_min: Option<Duration>,
    samples: u32,
}

/// The window a loss response is about to cut, to put back if the loss proves spurious
/// ([`Congestion::restore`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CcWindow {
    cwnd: u32,
    ssthresh: u32,
    w_max: f64,
}

/// Congestion state of one connection.
#[derive(Debug, Clone)]
pub struct Congestion {
    kind: CcKind,
    smss: u32,
    cwnd: u32,
    ssthresh: u32,
    /// Bytes acknowledged in avoidance since cwnd last grew (Reno byte counting).
    acked_acc: u32,
    cubic: Cubic,
    hystart: HyStart,
    /// Boxed: 224 bytes only the connections that use it carry.
    bbr: Option<Box<Bbr>>,
}

impl Congestion {
    /// Initial window per RFC 6928: min(10·MSS, max(2·MSS, 14600)).
    pub fn new(kind: CcKind, smss: u32) -> Congestion {
        Congestion::new_at(kind, smss, Instant::ZERO)
    }

    /// As [`Congestion::new`], at `now` (BBR keeps the time of its minimum RTT).
    pub fn new_at(kind: CcKind, smss: u32, now: Instant) -> Congestion {
        let smss = smss.max(1);
        let iw = (10 * smss).min((2 * smss).max(14_600));
        Congestion {
            kind,
            smss,
            cwnd: iw,
            ssthresh: u32::MAX,
            acked_acc: 0,
            cubic: Cubic::default(),
            hystart: HyStart::default(),
            bbr: (kind == CcKind::Bbr).then(|| Box::new(Bbr::new(smss, iw, now))),
        }
    }

    /// Bytes per second to pace at, for an algorithm that paces (BBR).
    pub fn pacing_rate(&self) -> Option<f64> {
        self.bbr.as_deref().and_then(Bbr::pacing_rate)
    }

    /// BBR's update on an ACK and what it delivered; nothing for the loss-based algorithms,
    /// which take [`Congestion::on_ack`].
    pub fn on_delivery(&mut self, now: Instant, d: Delivery) {
        if let Some(b) = &mut self.bbr {
            b.on_ack(now, d);
            self.cwnd = b.cwnd();
        }
    }

    /// An RTT sample from an ACK of `ack` in slow start, with `snd_max` the highest sequence
    /// number sent (RFC 9406 §4.3, without the conservative phase: as Linux's HyStart, slow
    /// start ends where the delay grows, and CUBIC takes over from there).
    pub fn on_rtt(&mut self, rtt: Duration, ack: u32, snd_max: u32) {
        if self.cwnd >= self.ssthresh || self.bbr.is_some() {
            return;
        }
        let h = &mut self.hystart;
        let new_round = h.round_end.is_none_or(|end| (ack.wrapping_sub(end) as i32) >= 0);
        if new_round {
            h.round_end = Some(snd_max);
            h.last_min = h.cur_min.or(h.last_min);
            h.cur_min = None;
            h.samples = 0;
        }
        h.cur_min = Some(h.cur_min.map_or(rtt, |m| m.min(rtt)));
        h.samples += 1;
        if self.cwnd < 16 * self.smss || h.samples < HYSTART_SAMPLES {
            return;
        }
        if let (Some(cur), Some(last)) = (h.cur_min, h.last_min) {
            let thresh = (last / 8).clamp(HYSTART_MIN_THRESH, HYSTART_MAX_THRESH);
            if cur >= last + thresh {
                self.ssthresh = self.cwnd;
            }
        }
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
        if let Some(b) = &mut self.bbr {
            b.set_smss(self.smss);
            self.cwnd = b.cwnd();
        }
    }

    /// New data was acknowledged outside loss recovery. `flight` is what was outstanding
    /// before this ACK, so an application-limited sender does not inflate its window.
    pub fn on_ack(&mut self, acked: u32, now: Instant, srtt: Duration, flight: u32) {
        if self.bbr.is_some() {
            return; // BBR's window follows its model (on_delivery)
        }
        if flight < self.cwnd / 2 && self.cwnd > 2 * self.smss {
            return; // application-limited (RFC 7661's idea, simplified): keep the window
        }
        let mut acked = acked;
        if self.cwnd < self.ssthresh {
            // Slow start with byte counting (RFC 3465) and no per-ACK limit, as Linux counts:
            // a receiver behind GRO acknowledges 20 to 45 segments at a time, and L = 2·SMSS
            // held the window to a tenth of its growth there. Bytes past ssthresh go on to
            // congestion avoidance.
            let grown = self.cwnd.saturating_add(acked).min(self.ssthresh);
            acked -= grown - self.cwnd;
            self.cwnd = grown;
            if acked == 0 {
                return;
            }
        }
        match self.kind {
            CcKind::NewReno => self.reno_avoid(acked),
            CcKind::Cubic | CcKind::Bbr => self.cubic_avoid(acked, now, srtt),
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

    /// Loss detected by duplicate ACKs, SACK or a tail loss probe: sets ssthresh and returns
    /// the window to use during recovery. The reduction is from the congestion window, as
    /// RFC 9438 §4.6 and Linux take it, not from the flight: after a tail loss probe or with
    /// most of the window SACKed the flight is a few segments, and a window cut to 70 % of
    /// that lost in one loss what a path that drops 1 % of its packets never gives back.
    /// (The window does not grow while the sender is application-limited, see `on_ack`.)
    pub fn on_loss(&mut self, inflight: u32) -> u32 {
        if let Some(b) = &mut self.bbr {
            b.on_loss(inflight);
            self.cwnd = b.cwnd();
            return self.cwnd;
        }
        let flight = self.cwnd.max(self.smss);
        match self.kind {
            CcKind::NewReno => self.ssthresh = (flight / 2).max(2 * self.smss),
            CcKind::Cubic | CcKind::Bbr => {
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
        if let Some(b) = &mut self.bbr {
            b.on_recovery_exit();
            self.cwnd = b.cwnd();
            return;
        }
        // RFC 6582 §3.2 step 3: min(ssthresh, FlightSize + SMSS), never below one segment.
        self.cwnd = self.ssthresh.min(flight.saturating_add(self.smss)).max(self.smss);
    }

    /// The window as it is now, before a loss response cuts it.
    pub fn window(&self) -> CcWindow {
        CcWindow { cwnd: self.cwnd, ssthresh: self.ssthresh, w_max: self.cubic.w_max }
    }

    /// A loss response proved spurious: the window and slow-start threshold go back to at
    /// least what they were (RFC 3522 §3.2, as Linux's undo), and CUBIC's epoch starts again
    /// from the restored W_max. BBR cut nothing lasting; it leaves packet conservation.
    pub fn restore(&mut self, w: CcWindow) {
        if let Some(b) = &mut self.bbr {
            b.on_recovery_exit();
            self.cwnd = b.cwnd();
            return;
        }
        self.cwnd = self.cwnd.max(w.cwnd);
        self.ssthresh = self.ssthresh.max(w.ssthresh);
        self.cubic.w_max = w.w_max;
        self.cubic.epoch = None;
        self.acked_acc = 0;
    }

    /// During recovery the window follows the recovery algorithm, which sets it here.
    pub fn set_cwnd(&mut self, cwnd: u32) {
        if self.bbr.is_none() {
            self.cwnd = cwnd.max(self.smss);
        }
    }

    /// The retransmission timer expired: restart from one segment (RFC 5681 §3.1).
    pub fn on_rto(&mut self, _flight: u32, first_expiry: bool) {
        if let Some(b) = &mut self.bbr {
            b.on_rto();
            self.cwnd = b.cwnd();
            return;
        }
        let flight = self.cwnd.max(self.smss);
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
        self.hystart = HyStart::default();
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
        // A stretch ACK (a receiver behind GRO) counts every byte it acknowledges.
        c.on_ack(5 * 1460, Instant::ZERO, Duration::from_millis(10), c.cwnd());
        assert_eq!(c.cwnd(), 16060 + 5 * 1460);
        // Halved from the window, not from a flight larger than it...
        let w = c.on_loss(40_000);
        assert_eq!(w, 11_680);
        // Avoidance: one segment per window of bytes acknowledged.
        for _ in 0..8 {
            c.on_ack(1460, Instant::ZERO, Duration::from_millis(10), c.cwnd());
        }
        assert_eq!(c.cwnd(), 11_680 + 1460);
        // ...nor from a flight a tail loss probe left small: from the window.
        c.on_loss(1460);
        assert_eq!(c.cwnd(), (11_680 + 1460) / 2);
        c.on_rto(1460, true);
        assert_eq!((c.cwnd(), c.ssthresh()), (1460, 3285));
    }

    #[test]
    fn hystart_ends_slow_start_when_the_round_trip_grows() {
        let ms = Duration::from_millis;
        let mut c = Congestion::new(CcKind::Cubic, 1000);
        c.on_ack(20_000, Instant::ZERO, ms(20), 30_000); // 30 segments: past the 16 minimum
                                                         // Round r sends up to (r + 1)·30 000; its ACKs come back with the round's RTT.
        let round = |c: &mut Congestion, r: u32, rtt: u64| {
            for i in 1..=10 {
                c.on_rtt(ms(rtt), r * 30_000 + i * 1000, (r + 1) * 30_000);
            }
        };
        // 20 ms, then 22 ms: grown by less than the 4 ms threshold, still slow start.
        round(&mut c, 0, 20);
        round(&mut c, 1, 22);
        assert_eq!(c.ssthresh(), u32::MAX);
        // The queue fills: 27 ms ≥ 22 + max(22/8, 4) ms.
        round(&mut c, 2, 27);
        assert_eq!(c.ssthresh(), c.cwnd(), "slow start ended where the delay grew");
    }

    #[test]
    fn slow_start_stops_at_ssthresh_and_the_rest_goes_to_avoidance() {
        let mut c = Congestion::new(CcKind::NewReno, 1000);
        c.on_loss(10_000); // ssthresh 5000
        c.on_rto(5000, false); // cwnd 1000, slow start to 5000
        c.on_ack(20_000, Instant::ZERO, Duration::from_millis(10), c.cwnd());
        assert_eq!(c.cwnd(), 6000, "slow start ends at ssthresh; the 16 000 bytes left count in avoidance");
    }

    #[test]
    fn cubic_reduces_by_beta_and_regrows_towards_wmax() {
        let mut c = Congestion::new(CcKind::Cubic, 1000);
        c.on_ack(90_000, Instant::ZERO, Duration::from_millis(20), 100_000);
        assert_eq!(c.cwnd(), 100_000);
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
