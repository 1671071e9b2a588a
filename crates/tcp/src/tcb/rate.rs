//! Delivery rate samples (draft-cheng-iccrg-delivery-rate-estimation), which BBR's model of
//! the path is made of: on each ACK, the bytes delivered since a segment was sent, over the
//! longer of the time its flight took to send and the time it took to be acknowledged.
//!
//! The draft keeps a snapshot in every segment sent. There is no per-segment state here (no
//! retransmission queue: segments are made again from the source), so the sampler keeps a
//! ring of snapshots taken as new data goes out, at most one per 1/32 of the window: an ACK
//! takes the newest snapshot it covers, whose error is then a thirty-second of a flight.
//! Retransmissions take no snapshot (their ACK says nothing clean about the rate).

pub use crate::rate_sample::RateSample;
use crate::seq::Seq;
use timer::{Duration, Instant};

const SNAPS: usize = 64;

#[derive(Clone, Copy, Debug)]
struct Snap {
    /// The snapshot's segment ends here: an ACK at or past it delivered it.
    end: Seq,
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    sent: Instant,
    app_limited: bool,
}

/// The connection's delivery accounting and its snapshots (allocated with the first, so a
/// connection that does not run BBR carries none).
#[derive(Clone)]
pub(super) struct RateSampler {
    /// Bytes delivered so far (acknowledged cumulatively or SACKed).
    pub(super) delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    /// Samples are app-limited until `delivered` passes this (0: not limited).
    app_limited_until: u64,
    snaps: Option<Box<[Snap; SNAPS]>>,
    head: usize,
    len: usize,
}

const BLANK: Snap = Snap {
    end: Seq(0),
    delivered: 0,
    delivered_time: Instant::ZERO,
    first_sent_time: Instant::ZERO,
    sent: Instant::ZERO,
    app_limited: false,
};

impl Default for RateSampler {
    fn default() -> Self {
        RateSampler {
            delivered: 0,
            delivered_time: Instant::ZERO,
            first_sent_time: Instant::ZERO,
            app_limited_until: 0,
            snaps: None,
            head: 0,
            len: 0,
        }
    }
}

impl RateSampler {
    /// New data `[.., end)` left at `now` with `inflight` bytes out before it; `spacing` is the
    /// least distance between snapshots.
    pub(super) fn on_send(&mut self, end: Seq, now: Instant, inflight: u32, spacing: u32) {
        if inflight == 0 {
            // A new flight: its rate is measured from here.
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        let snaps = self.snaps.get_or_insert_with(|| Box::new([BLANK; SNAPS]));
        if self.len > 0 {
            let last = snaps[(self.head + self.len - 1) % SNAPS];
            if end.since(last.end) < spacing && end > last.end {
                return;
            }
        }
        let s = Snap {
            end,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            sent: now,
            app_limited: self.app_limited_until > 0,
        };
        if self.len == SNAPS {
            self.head = (self.head + 1) % SNAPS;
            self.len -= 1;
        }
        snaps[(self.head + self.len) % SNAPS] = s;
        self.len += 1;
    }

    /// The sender ran out of data with room in its window: samples until what is in flight
    /// now is delivered are app-limited.
    pub(super) fn set_app_limited(&mut self, inflight: u32) {
        self.app_limited_until = (self.delivered + u64::from(inflight)).max(1);
    }

    /// An ACK delivered `newly` bytes, the highest of them ending at `highest`. Returns the
    /// sample of the newest snapshot it covers, if any.
    pub(super) fn on_ack(&mut self, now: Instant, newly: u32, highest: Seq) -> Option<RateSample> {
        if newly == 0 {
            return None;
        }
        self.delivered += u64::from(newly);
        self.delivered_time = now;
        if self.app_limited_until > 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let snaps = self.snaps.as_deref()?;
        let mut newest = None;
        while self.len > 0 && snaps[self.head].end <= highest {
            newest = Some(snaps[self.head]);
            self.head = (self.head + 1) % SNAPS;
            self.len -= 1;
        }
        let p = newest?;
        self.first_sent_time = p.sent;
        let send_elapsed = p.sent.since(p.first_sent_time);
        let ack_elapsed = now.since(p.delivered_time);
        let interval = send_elapsed.max(ack_elapsed);
        if interval < Duration::from_micros(100) {
            return None; // too short to mean anything
        }
        let rate = (self.delivered - p.delivered) as f64 / interval.as_secs_f64();
        Some(RateSample { rate, rtt: now.since(p.sent), prior_delivered: p.delivered, app_limited: p.app_limited })
    }

    /// A timeout: what was in flight is gone, and its snapshots with it.
    pub(super) fn clear(&mut self) {
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_flight_samples_its_rate() {
        // A segment of 1000 bytes a millisecond, each acknowledged 20 ms after it left: the
        // path delivers 1 MB/s. (The first flight's samples run low, as the draft's do: its
        // ACKs are timed from the first send.)
        let mut r = RateSampler::default();
        let ms = |n: u64| Instant::ZERO + Duration::from_millis(n);
        let mut last = None;
        for t in 0..100u32 {
            if t >= 20 {
                last = r.on_ack(ms(u64::from(t)), 1000, Seq(1000 * (t - 19))).or(last);
            }
            let inflight = 1000 * t.min(20);
            r.on_send(Seq(1000 * (t + 1)), ms(u64::from(t)), inflight, 1000);
        }
        let s = last.expect("a sample");
        assert!((s.rate - 1e6).abs() < 0.15e6, "{}", s.rate);
        assert_eq!(s.rtt, Duration::from_millis(20));
        assert!(!s.app_limited);
    }

    #[test]
    fn snapshots_are_spaced_and_bounded() {
        let mut r = RateSampler::default();
        for i in 0..1000u32 {
            r.on_send(Seq(100 * (i + 1)), Instant::ZERO, 100 * i, 1000);
        }
        assert_eq!(r.len, 64, "the ring holds the newest");
        // One snapshot per 1000 bytes, not per 100-byte segment.
        let snaps = r.snaps.as_deref().unwrap();
        let a = snaps[r.head];
        let b = snaps[(r.head + 1) % SNAPS];
        assert_eq!(b.end.since(a.end), 1000);
    }

    #[test]
    fn samples_after_running_dry_are_app_limited_until_that_flight_is_delivered() {
        let mut r = RateSampler::default();
        let ms = |n: u64| Instant::ZERO + Duration::from_millis(n);
        r.on_send(Seq(1000), ms(0), 0, 1);
        r.set_app_limited(1000);
        r.on_send(Seq(2000), ms(1), 1000, 1);
        let s = r.on_ack(ms(20), 1000, Seq(1000)).expect("sample");
        assert!(!s.app_limited, "sent before the sender ran dry");
        let s = r.on_ack(ms(21), 1000, Seq(2000)).expect("sample");
        assert!(s.app_limited);
    }
}
