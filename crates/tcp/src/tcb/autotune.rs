//! Receive-window autotuning, in the manner of Linux's dynamic right-sizing: once per round
//! trip, the window becomes three times what arrived in the last one (never less than it
//! was), up to `cfg.rcv_buf_max`. A sender that the window limits sends a window per round
//! trip, so the window triples each round until the path, not the window, is the limit; a
//! connection that receives little keeps a small one, and the memory of its reassembly
//! never grows.
//!
//! The receiver's round trip comes from the timestamps the sender echoes (the lowest seen),
//! or from the connection's own RTT estimate when it sends data too; without either the
//! window stays where it started.

use super::{Env, Tcb};
use crate::seq::Seq;
use timer::{Duration, Instant};

/// Measurement state.
#[derive(Clone, Copy)]
pub(super) struct Tune {
    /// RCV.NXT when the current round began (None before the first data).
    mark: Option<Seq>,
    since: Instant,
    /// The lowest round trip seen from echoed timestamps.
    rtt: Option<Duration>,
}

impl Tune {
    pub(super) fn new(now: Instant) -> Tune {
        Tune { mark: None, since: now, rtt: None }
    }
}

/// The window grows to this many times the data of one round trip.
const ROUNDS: u32 = 3;

impl Tcb {
    /// In-order data arrived, with the TSecr it carried.
    pub(super) fn autotune(&mut self, env: &Env, now: Instant, tsecr: Option<u32>) {
        let Some(max) = self.cfg.rcv_buf_max else { return };
        let max = max.min(env.pool.window().min(u32::MAX as usize) as u32);
        if self.rcv.buf >= max {
            return;
        }
        if let Some(echo) = tsecr.filter(|&e| e != 0) {
            let ms = self.ts_clock(now).wrapping_sub(echo);
            if ms < 60_000 {
                let r = Duration::from_millis(u64::from(ms.max(1)));
                self.rcv.tune.rtt = Some(self.rcv.tune.rtt.map_or(r, |m| m.min(r)));
            }
        }
        let Some(rtt) = self.rcv.tune.rtt.or(self.rtt.srtt()) else { return };
        let t = &mut self.rcv.tune;
        let Some(mark) = t.mark else {
            t.mark = Some(self.rcv.nxt);
            t.since = now;
            return;
        };
        if now.since(t.since) < rtt {
            return;
        }
        let round = self.rcv.nxt.since(mark);
        t.mark = Some(self.rcv.nxt);
        t.since = now;
        let want = round.saturating_mul(ROUNDS).min(max);
        if want > self.rcv.buf {
            self.rcv.buf = want;
        }
    }

    /// The receive window now (what autotuning grew it to).
    pub fn rcv_buf(&self) -> u32 {
        self.rcv.buf
    }
}
