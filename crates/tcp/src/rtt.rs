//! Retransmission timer state (RFC 6298): smoothed RTT, variance, RTO with backoff.

use timer::Duration;

/// The RTT estimator and the current retransmission timeout.
#[derive(Debug, Clone, Copy)]
pub struct Rtt {
    srtt: Option<Duration>,
    rttvar: Duration,
    rto: Duration,
    min_rto: Duration,
    max_rto: Duration,
    backoff: u32,
}

/// Clock granularity G of RFC 6298: sirocco's timers run on a millisecond wheel.
const GRANULARITY: Duration = Duration::from_millis(1);

impl Rtt {
    /// Before any measurement: RTO = `initial` (RFC 6298 §2.1 says 1 s).
    pub fn new(initial: Duration, min_rto: Duration, max_rto: Duration) -> Rtt {
        Rtt { srtt: None, rttvar: Duration::ZERO, rto: initial.clamp(min_rto, max_rto), min_rto, max_rto, backoff: 0 }
    }

    /// Takes one RTT sample (never from a retransmitted segment: Karn). Clears the backoff,
    /// since a fresh sample means the path answers again (§5.7 leaves this to the sender).
    pub fn sample(&mut self, r: Duration) {
        let r = r.max(Duration::from_micros(1));
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                // RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|; SRTT = 7/8 SRTT + 1/8 R
                self.rttvar = (self.rttvar * 3 + s.abs_diff(r)) / 4;
                self.srtt = Some((s * 7 + r) / 8);
            }
        }
        let s = self.srtt.unwrap_or(r);
        self.rto = (s + GRANULARITY.max(self.rttvar * 4)).clamp(self.min_rto, self.max_rto);
        self.backoff = 0;
    }

    /// The timeout to arm now, with exponential backoff applied (§5.5).
    pub fn rto(&self) -> Duration {
        self.rto.saturating_mul(1u64 << self.backoff.min(30)).min(self.max_rto)
    }

    /// Doubles the timeout after it expired.
    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(30);
    }

    /// New data was acknowledged: the path works, so the next timeout starts from the
    /// unbacked-off RTO again (as BSD does) even when Karn's rule allowed no sample.
    pub fn progress(&mut self) {
        self.backoff = 0;
    }

    /// Expirations since the last fresh sample.
    pub fn backoffs(&self) -> u32 {
        self.backoff
    }

    /// Smoothed RTT, if measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// RTT variation.
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6298_arithmetic() {
        let ms = Duration::from_millis;
        let mut r = Rtt::new(ms(1000), ms(200), ms(60_000));
        assert_eq!(r.rto(), ms(1000));
        r.sample(ms(100)); // SRTT 100ms, RTTVAR 50ms -> 300ms
        assert_eq!(r.rto(), ms(300));
        r.sample(ms(100)); // RTTVAR 37.5ms -> 100 + 150 = 250ms
        assert_eq!(r.rto(), ms(250));
        r.back_off();
        r.back_off();
        assert_eq!(r.rto(), ms(1000));
        r.sample(ms(10)); // pulls down, clamped at the minimum
        assert!(r.rto() >= ms(200));
        for _ in 0..40 {
            r.back_off();
        }
        assert_eq!(r.rto(), ms(60_000));
    }
}
