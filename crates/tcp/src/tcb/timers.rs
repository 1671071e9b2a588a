//! Timers: retransmission (RFC 6298), tail loss probe and reordering (RFC 8985), delayed ACK,
//! window probes, keep-alive, TIME-WAIT and FIN-WAIT-2; which of them run is recomputed
//! after every event.

use super::{End, Env, State, Tcb};
use timer::Instant;

impl Tcb {
    /// The earliest time [`on_timer`](Self::on_timer) has something to do.
    pub fn deadline(&self) -> Option<Instant> {
        [
            self.timers.rtx,
            self.timers.pto,
            self.timers.reo,
            self.timers.pace,
            self.timers.delack,
            self.timers.persist,
            self.timers.keepalive,
            self.timers.end,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Runs what is due at `now`.
    pub fn on_timer(&mut self, env: &mut Env, now: Instant) {
        if self.timers.end.is_some_and(|t| t <= now) {
            let tw = self.state == State::TimeWait;
            if !tw {
                env.stats.timeouts += 1;
            }
            self.finish(if tw { End::Closed } else { End::TimedOut });
            return;
        }
        if self.timers.delack.is_some_and(|t| t <= now) {
            self.timers.delack = None;
            self.due.ack = true;
        }
        if self.timers.rtx.is_some_and(|t| t <= now) {
            self.on_rto(env, now);
            if self.state == State::Closed {
                return;
            }
        }
        if self.timers.reo.is_some_and(|t| t <= now) {
            self.on_reorder_timer(env, now);
        }
        if self.timers.pto.is_some_and(|t| t <= now) {
            self.on_probe_timer();
        }
        if self.timers.pace.is_some_and(|t| t <= now) {
            self.timers.pace = None; // the connection's output runs next
        }
        if self.timers.persist.is_some_and(|t| t <= now) {
            self.timers.persist = None;
            self.timers.probes += 1;
            if self.timers.probes > self.cfg.retries {
                env.stats.timeouts += 1;
                self.finish(End::TimedOut);
                return;
            }
            self.due.probe = true;
        }
        if self.timers.keepalive.is_some_and(|t| t <= now) {
            self.timers.keepalive = None;
            let ka = self.cfg.keepalive.expect("keep-alive armed only when configured");
            if self.timers.probes >= ka.count {
                env.stats.timeouts += 1;
                self.finish(End::TimedOut);
                return;
            }
            self.timers.probes += 1;
            self.due.probe = true;
            self.timers.keepalive = Some(now + ka.interval);
        }
        self.arm(now);
    }

    pub(super) fn on_rto(&mut self, env: &mut Env, now: Instant) {
        self.timers.rtx = None;
        self.timers.pto = None;
        self.timers.reo = None;
        self.due.tail_probe = false;
        self.rec.probe = None;
        let outstanding = self.snd.max > self.snd.una || matches!(self.state, State::SynSent | State::SynReceived);
        if !outstanding {
            return;
        }
        self.timers.retries += 1;
        let limit = match self.state {
            _ if !self.is_synchronized() => self.cfg.syn_retries,
            State::LastAck | State::Closing => self.cfg.retries.min(self.cfg.orphan_retries),
            _ => self.cfg.retries,
        };
        if self.timers.retries > limit {
            env.stats.timeouts += 1;
            self.finish(End::TimedOut);
            return;
        }
        env.stats.rtos += 1;
        let first = self.rtt.backoffs() == 0;
        self.rtt.back_off();
        let flight = self.flight();
        if self.opts.sack && self.is_synchronized() && first {
            self.undo_arm();
        } else {
            self.rec.undo = Default::default(); // a timeout again: the path is not just late
        }
        if self.is_synchronized() {
            self.cc.on_rto(flight, first);
        }
        self.rate.clear();
        self.rec.last_recover = self.snd.max;
        self.rec.dupacks = 0;
        self.rec.log.clear();
        self.rtt_probe = None;
        if self.opts.sack && self.is_synchronized() && first {
            // As Linux does: what the peer SACKed stays SACKed and everything else is lost.
            // The holes go again in slow start from one segment, through the SACK recovery's
            // NextSeg, and the data the peer holds is not sent twice.
            self.rec.point = Some(self.snd.max);
            self.rec.after_rto = true;
            self.rec.rack_lost = self.snd.max;
            self.rec.high_rxt = self.snd.una;
            self.rec.rtx_una = true;
        } else {
            // A timeout again, or no SACK: the peer may have dropped what it SACKed (RFC 2018
            // §8), so start again from SND.UNA.
            self.rec.point = None;
            self.rec.after_rto = false;
            self.rec.rtx_una = false;
            self.rec.sacked.clear();
            self.rec.rack_lost = self.snd.una;
            self.rec.high_rxt = self.snd.una;
            self.snd.nxt = self.snd.una;
        }
        self.timers.rtx = Some(now + self.rtt.rto());
    }

    /// Recomputes which timers run.
    pub(super) fn arm(&mut self, now: Instant) {
        if matches!(self.state, State::Closed | State::TimeWait) {
            return;
        }
        let outstanding = self.snd.max > self.snd.una || matches!(self.state, State::SynSent | State::SynReceived);
        if !outstanding {
            self.timers.rtx = None;
        } else if self.timers.rtx.is_none() && self.snd.nxt > self.snd.una {
            self.timers.rtx = Some(now + self.rtt.rto());
        }
        // Window probes: data waits, the window is shut, nothing in flight to bring an update.
        let waiting = self.is_synchronized() && !outstanding && self.has_data_beyond_window();
        if !waiting {
            self.timers.persist = None;
        } else if self.timers.persist.is_none() {
            let backoff = self.rtt.rto().saturating_mul(1 << self.timers.probes.min(10)).min(self.cfg.rto_max);
            self.timers.persist = Some(now + backoff);
        }
        match self.cfg.keepalive {
            Some(ka) if self.is_synchronized() && !outstanding && !waiting => {
                if self.timers.keepalive.is_none() {
                    self.timers.keepalive = Some(self.timers.last_rx + ka.idle);
                }
            }
            _ => self.timers.keepalive = None,
        }
        self.arm_probe(now);
    }
}
