//! BBR (draft-cardwell-iccrg-bbr-congestion-control, version 1): congestion control from a
//! model of the path — its bottleneck bandwidth (the most delivered per second over the last
//! ten round trips) and its round-trip propagation time (the least RTT over ten seconds) —
//! rather than from loss. It paces at a gain times the bandwidth and keeps about two
//! bandwidth-delay products in flight; random loss does not shrink the model, which is what
//! lets it keep a path's rate where loss-based algorithms fall to MSS/RTT·1.22/√p. It is
//! what CDNs run and what the kernel on this kind of machine runs by default.
//!
//! Sans-IO: it takes rate samples, deliveries, the flight and the time, and gives a window
//! and a pacing rate.

use crate::rate_sample::RateSample;
use timer::{Duration, Instant};

/// 2/ln 2: doubles the delivery rate each round trip in Startup.
const HIGH_GAIN: f64 = 2.885;
/// ProbeBW's pacing gains, one per round trip.
const CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Rounds the bandwidth filter spans.
const BW_ROUNDS: usize = 10;
/// How long a minimum RTT stays valid before ProbeRTT looks again.
const RTPROP_WINDOW: Duration = Duration::from_secs(10);
const PROBE_RTT_TIME: Duration = Duration::from_millis(200);
/// Segments the window never goes under (and ProbeRTT's window).
const MIN_SEGMENTS: u32 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// One connection's BBR state.
#[derive(Debug, Clone, Copy)]
pub struct Bbr {
    mode: Mode,
    smss: u32,
    cwnd: u32,
    /// Bytes per second.
    pacing_rate: f64,
    pacing_gain: f64,
    cwnd_gain: f64,
    /// Per-round maxima of the delivery rate, the last BW_ROUNDS rounds.
    bw_rounds: [f64; BW_ROUNDS],
    rt_prop: Option<Duration>,
    rt_prop_stamp: Instant,
    round_count: u64,
    next_round_delivered: u64,
    full_bw: f64,
    full_bw_count: u32,
    filled_pipe: bool,
    cycle_index: usize,
    cycle_stamp: Instant,
    probe_rtt_done: Option<Instant>,
    probe_rtt_round_done: bool,
    prior_cwnd: u32,
    /// Recovery's first round: the window keeps what is in flight plus what is delivered.
    conservation_until: Option<u64>,
    idle_restart: bool,
}

/// What an ACK delivered, as BBR reads it.
#[derive(Debug, Clone, Copy)]
pub struct Delivery {
    /// The rate sampler's sample, if the ACK gave one.
    pub sample: Option<RateSample>,
    /// Bytes newly delivered.
    pub delivered: u32,
    /// Bytes delivered so far.
    pub total: u64,
    /// Bytes still in flight.
    pub inflight: u32,
    /// The smoothed RTT.
    pub srtt: Option<Duration>,
}

impl Bbr {
    /// Startup with the initial window `cwnd`.
    pub fn new(smss: u32, cwnd: u32, now: Instant) -> Bbr {
        Bbr {
            mode: Mode::Startup,
            smss,
            cwnd,
            pacing_rate: 0.0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            bw_rounds: [0.0; BW_ROUNDS],
            rt_prop: None,
            rt_prop_stamp: now,
            round_count: 0,
            next_round_delivered: 0,
            full_bw: 0.0,
            full_bw_count: 0,
            filled_pipe: false,
            cycle_index: 0,
            cycle_stamp: now,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            prior_cwnd: cwnd,
            conservation_until: None,
            idle_restart: false,
        }
    }

    /// The congestion window in bytes.
    pub fn cwnd(&self) -> u32 {
        self.cwnd
    }

    /// The segment size changed.
    pub fn set_smss(&mut self, smss: u32) {
        self.smss = smss.max(1);
        self.cwnd = self.cwnd.max(MIN_SEGMENTS * self.smss);
    }

    /// Bytes per second to pace at (None before the first RTT is known).
    pub fn pacing_rate(&self) -> Option<f64> {
        (self.pacing_rate > 0.0).then_some(self.pacing_rate)
    }

    /// The bottleneck bandwidth estimate, bytes per second.
    pub fn btl_bw(&self) -> f64 {
        self.bw_rounds.iter().copied().fold(0.0, f64::max)
    }

    fn bdp(&self, gain: f64) -> Option<u32> {
        let rt = self.rt_prop?;
        let bw = self.btl_bw();
        (bw > 0.0).then(|| (gain * bw * rt.as_secs_f64()) as u32)
    }

    /// Bytes sent in one burst at the pacing rate (about a millisecond's worth, at least two
    /// segments): the timer wheel's granularity.
    fn quantum(&self) -> u32 {
        ((self.pacing_rate / 1000.0) as u32).clamp(2 * self.smss, 64 * 1024)
    }

    /// An ACK and what it delivered.
    pub fn on_ack(&mut self, now: Instant, d: Delivery) {
        let Delivery { sample, delivered, total, inflight, srtt } = d;
        let mut round_start = false;
        // Whether the minimum had expired is taken before this sample renews it: ProbeRTT
        // goes by it (draft §4.5.3).
        let expired = now.since(self.rt_prop_stamp) > RTPROP_WINDOW;
        if let Some(s) = sample {
            if s.prior_delivered >= self.next_round_delivered {
                self.next_round_delivered = total;
                self.round_count += 1;
                round_start = true;
                self.bw_rounds[(self.round_count as usize) % BW_ROUNDS] = 0.0;
            }
            let best = self.btl_bw();
            let slot = &mut self.bw_rounds[(self.round_count as usize) % BW_ROUNDS];
            if !s.app_limited || s.rate >= best {
                *slot = slot.max(s.rate);
            }
            if self.rt_prop.is_none_or(|r| s.rtt <= r) || expired {
                self.rt_prop = Some(s.rtt);
                self.rt_prop_stamp = now;
            }
        }
        if self.conservation_until.is_some_and(|r| self.round_count > r) {
            self.conservation_until = None;
        }
        if round_start && !self.filled_pipe {
            self.check_full_pipe(sample.is_some_and(|s| s.app_limited));
        }
        self.update_mode(now, inflight, round_start, expired);
        self.set_pacing_rate(srtt);
        self.set_cwnd(delivered, total, inflight);
    }

    fn check_full_pipe(&mut self, app_limited: bool) {
        if app_limited {
            return;
        }
        let bw = self.btl_bw();
        if bw >= self.full_bw * 1.25 {
            self.full_bw = bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        if self.full_bw_count >= 3 {
            self.filled_pipe = true;
        }
    }

    fn update_mode(&mut self, now: Instant, inflight: u32, round_start: bool, expired: bool) {
        if self.mode == Mode::Startup && self.filled_pipe {
            self.mode = Mode::Drain;
            self.pacing_gain = 1.0 / HIGH_GAIN;
            self.cwnd_gain = HIGH_GAIN;
        }
        if self.mode == Mode::Drain && self.bdp(1.0).is_some_and(|b| inflight <= b) {
            self.enter_probe_bw(now);
        }
        if self.mode == Mode::ProbeBw {
            self.advance_cycle(now, inflight);
        }
        // ProbeRTT: a minimum RTT older than its window is looked for again with a small flight.
        if expired && self.mode != Mode::ProbeRtt && !self.idle_restart {
            self.mode = Mode::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = 1.0;
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
            self.probe_rtt_done = None;
        }
        if self.mode == Mode::ProbeRtt {
            match self.probe_rtt_done {
                None if inflight <= MIN_SEGMENTS * self.smss => {
                    self.probe_rtt_done = Some(now + PROBE_RTT_TIME);
                    self.probe_rtt_round_done = false;
                    self.next_round_delivered = 0; // the next sample starts a round
                }
                Some(done) => {
                    if round_start {
                        self.probe_rtt_round_done = true;
                    }
                    if self.probe_rtt_round_done && now >= done {
                        self.rt_prop_stamp = now;
                        self.cwnd = self.cwnd.max(self.prior_cwnd);
                        if self.filled_pipe {
                            self.enter_probe_bw(now);
                        } else {
                            self.mode = Mode::Startup;
                            self.pacing_gain = HIGH_GAIN;
                            self.cwnd_gain = HIGH_GAIN;
                        }
                    }
                }
                None => {}
            }
        }
        self.idle_restart = false;
    }

    fn enter_probe_bw(&mut self, now: Instant) {
        self.mode = Mode::ProbeBw;
        self.cwnd_gain = 2.0;
        // Any phase but the draining one, spread by the clock so flows do not probe in step.
        self.cycle_index = (CYCLE.len() - 1 - (now.as_nanos() / 1000 % 7) as usize) % CYCLE.len();
        if self.cycle_index == 1 {
            self.cycle_index = 2;
        }
        self.cycle_stamp = now;
        self.pacing_gain = CYCLE[self.cycle_index];
    }

    fn advance_cycle(&mut self, now: Instant, inflight: u32) {
        let Some(rt) = self.rt_prop else { return };
        let full_length = now.since(self.cycle_stamp) > rt;
        let gain = self.pacing_gain;
        let next = if gain > 1.0 {
            full_length && self.bdp(gain).is_none_or(|b| inflight >= b)
        } else if gain < 1.0 {
            full_length || self.bdp(1.0).is_some_and(|b| inflight <= b)
        } else {
            full_length
        };
        if next {
            self.cycle_index = (self.cycle_index + 1) % CYCLE.len();
            self.cycle_stamp = now;
            self.pacing_gain = CYCLE[self.cycle_index];
        }
    }

    fn set_pacing_rate(&mut self, srtt: Option<Duration>) {
        let bw = self.btl_bw();
        if bw > 0.0 {
            let rate = self.pacing_gain * bw;
            // Until the pipe is known full, never pace slower than already paced.
            if self.filled_pipe || rate > self.pacing_rate {
                self.pacing_rate = rate;
            }
        } else if let Some(rtt) = srtt {
            // Before any sample: the initial window over the first RTT, at Startup's gain.
            let rtt = rtt.as_secs_f64().max(1e-4);
            self.pacing_rate = HIGH_GAIN * f64::from(self.cwnd) / rtt;
        }
    }

    fn set_cwnd(&mut self, delivered: u32, total: u64, inflight: u32) {
        let min = MIN_SEGMENTS * self.smss;
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(min).max(min);
            return;
        }
        let target = self.bdp(self.cwnd_gain).map(|b| b + 3 * self.quantum());
        if self.conservation_until.is_some() {
            self.cwnd = self.cwnd.max(inflight.saturating_add(delivered));
        } else if let Some(target) = target {
            if self.filled_pipe {
                self.cwnd = self.cwnd.saturating_add(delivered).min(target);
            } else if self.cwnd < target || total < u64::from(10 * self.smss) {
                self.cwnd = self.cwnd.saturating_add(delivered);
            }
        } else {
            self.cwnd = self.cwnd.saturating_add(delivered);
        }
        self.cwnd = self.cwnd.max(min);
    }

    /// Loss recovery began: for one round, the window holds what is in flight (packet
    /// conservation); the window before is restored when recovery ends. Loss does not touch
    /// the model.
    pub fn on_loss(&mut self, inflight: u32) {
        self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        self.cwnd = inflight.saturating_add(self.smss).max(MIN_SEGMENTS * self.smss);
        self.conservation_until = Some(self.round_count + 1);
    }

    /// Recovery ended.
    pub fn on_recovery_exit(&mut self) {
        self.conservation_until = None;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.prior_cwnd = 0;
    }

    /// A retransmission timeout: one segment, growing back by what is delivered; the model
    /// stays.
    pub fn on_rto(&mut self) {
        self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        self.cwnd = self.smss;
        self.conservation_until = None;
    }

    /// The connection restarts from idle: pace at the model's rate at once.
    pub fn on_idle_restart(&mut self) {
        self.idle_restart = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(rate: f64, rtt_ms: u64, prior: u64) -> Option<RateSample> {
        Some(RateSample { rate, rtt: Duration::from_millis(rtt_ms), prior_delivered: prior, app_limited: false })
    }

    /// Feeds one round trip per step: each ACK delivers `per_ack` bytes at `rate`.
    fn rounds(b: &mut Bbr, now: &mut Instant, delivered: &mut u64, n: usize, rate: f64, rtt_ms: u64) {
        for _ in 0..n {
            let prior = *delivered;
            for _ in 0..10 {
                *delivered += 10_000;
                *now += Duration::from_millis(rtt_ms / 10);
                let inflight = b.cwnd().min((rate * rtt_ms as f64 / 1000.0) as u32);
                let srtt = Some(Duration::from_millis(rtt_ms));
                let sample = sample(rate, rtt_ms, prior);
                b.on_ack(*now, Delivery { sample, delivered: 10_000, total: *delivered, inflight, srtt });
            }
        }
    }

    #[test]
    fn startup_ends_when_the_bandwidth_stops_growing_and_the_window_follows_the_model() {
        let mut b = Bbr::new(1000, 10_000, Instant::ZERO);
        let (mut now, mut delivered) = (Instant::ZERO, 0u64);
        rounds(&mut b, &mut now, &mut delivered, 6, 12.5e6, 20); // 100 Mb/s, 20 ms
        assert!(b.filled_pipe, "three rounds without 25 % more bandwidth fill the pipe");
        rounds(&mut b, &mut now, &mut delivered, 20, 12.5e6, 20);
        assert_eq!(b.mode, Mode::ProbeBw);
        let bdp = 12.5e6 * 0.02;
        let w = f64::from(b.cwnd());
        assert!(w >= 1.9 * bdp && w <= 2.5 * bdp, "about two BDPs in flight: {w} of BDP {bdp}");
        let rate = b.pacing_rate().unwrap();
        assert!((0.7 * 12.5e6..=1.3 * 12.5e6).contains(&rate), "pacing near the bandwidth: {rate}");
    }

    #[test]
    fn loss_keeps_the_model_and_recovery_restores_the_window() {
        let mut b = Bbr::new(1000, 10_000, Instant::ZERO);
        let (mut now, mut delivered) = (Instant::ZERO, 0u64);
        rounds(&mut b, &mut now, &mut delivered, 30, 12.5e6, 20);
        let (bw, w) = (b.btl_bw(), b.cwnd());
        b.on_loss(w / 2);
        assert!(b.cwnd() < w);
        assert_eq!(b.btl_bw(), bw, "a loss is not a measure of the path");
        b.on_recovery_exit();
        assert_eq!(b.cwnd(), w);
    }

    #[test]
    fn probe_rtt_after_ten_seconds_without_a_lower_rtt() {
        let mut b = Bbr::new(1000, 10_000, Instant::ZERO);
        let (mut now, mut delivered) = (Instant::ZERO, 0u64);
        rounds(&mut b, &mut now, &mut delivered, 30, 12.5e6, 20);
        // RTTs above the minimum for more than ten seconds.
        for _ in 0..520 {
            let prior = delivered;
            delivered += 10_000;
            now += Duration::from_millis(20);
            let sample = sample(12.5e6, 25, prior);
            b.on_ack(now, Delivery { sample, delivered: 10_000, total: delivered, inflight: b.cwnd(), srtt: None });
            if b.mode == Mode::ProbeRtt {
                break;
            }
        }
        assert_eq!(b.mode, Mode::ProbeRtt);
        assert_eq!(b.cwnd(), 4000);
    }
}
