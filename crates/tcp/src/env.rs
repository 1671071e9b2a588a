//! What the connections of one endpoint share: reassembly buffers, counters, the budget of
//! challenge ACKs (RFC 5961 §7). Connections in TIME-WAIT use it too.

use crate::reasm::OooPool;
use crate::stats::Stats;
use timer::{Duration, Instant};

/// Shared state the connections of one endpoint use.
pub struct Env {
    /// Reassembly buffers.
    pub pool: OooPool,
    /// Counters.
    pub stats: Stats,
    challenge_window: Instant,
    challenge_left: u32,
    challenge_per_sec: u32,
}

impl Env {
    /// `ooo_buffers` reassembly buffers for windows up to `window`; at most `challenge_per_sec`
    /// challenge ACKs a second (RFC 5961 §7).
    pub fn new(ooo_buffers: usize, window: u32, challenge_per_sec: u32) -> Env {
        Env {
            pool: OooPool::new(ooo_buffers, window as usize),
            stats: Stats::default(),
            challenge_window: Instant::ZERO,
            challenge_left: challenge_per_sec,
            challenge_per_sec,
        }
    }

    pub(crate) fn allow_challenge(&mut self, now: Instant) -> bool {
        if now >= self.challenge_window + Duration::from_secs(1) {
            self.challenge_window = now;
            self.challenge_left = self.challenge_per_sec;
        }
        if self.challenge_left == 0 {
            self.stats.challenge_limited += 1;
            return false;
        }
        self.challenge_left -= 1;
        self.stats.challenge_acks += 1;
        true
    }
}
