//! Loss recovery: duplicate ACKs, NewReno (RFC 6582), SACK-based recovery (RFC 6675) with
//! its pipe and IsLost, and the retransmission it chooses.

use super::{Env, SegOut, Tcb, DUP_THRESH};
use crate::seq::Seq;
use timer::Instant;

impl Tcb {
    pub(super) fn on_dup_ack(&mut self, env: &mut Env) {
        self.rec.dupacks += 1;
        match self.rec.point {
            None => {
                if self.rec.dupacks >= DUP_THRESH || (self.opts.sack && self.sack_loss()) {
                    self.enter_recovery(env);
                }
            }
            Some(_) if !self.opts.sack => {
                // NewReno: each further duplicate means a segment left the network.
                self.cc.set_cwnd(self.cc.cwnd() + self.snd.mss);
            }
            Some(_) => {}
        }
    }

    /// RFC 6675's IsLost(SND.UNA): enough SACKed above the first hole.
    pub(super) fn sack_loss(&self) -> bool {
        self.lost_boundary() > self.snd.una
    }

    pub(super) fn enter_recovery(&mut self, env: &mut Env) {
        // RFC 6582's guard: one reduction per window of data.
        if self.snd.una <= self.rec.last_recover && self.rec.last_recover != self.snd.iss {
            return;
        }
        env.stats.fast_recoveries += 1;
        self.rec.probe = None;
        self.timers.pto = None;
        self.due.tail_probe = false;
        let flight = self.flight();
        self.rec.point = Some(self.snd.max);
        self.rec.last_recover = self.snd.max;
        let w = self.cc.on_loss(flight);
        if self.opts.sack {
            self.rec.high_rxt = self.snd.una;
            self.rec.rtx_una = true; // RFC 6675 §5 (4.3): the first segment goes at once
        } else {
            self.cc.set_cwnd(w + 3 * self.snd.mss);
            self.rec.rtx_una = true;
        }
        self.rtt_probe = None;
    }

    /// Every unSACKed byte below this is lost (RFC 6675 IsLost): walking down from the top,
    /// the first SACKed range at which more than (DupThresh − 1)·SMSS bytes, or DupThresh
    /// ranges, are SACKed above.
    /// RACK's boundary is taken when it is higher.
    pub(super) fn lost_boundary(&self) -> Seq {
        let rack = self.rack_boundary();
        let mut bytes = 0u32;
        for (n, r) in self.rec.sacked.as_slice().iter().rev().enumerate() {
            bytes += r.right.since(r.left);
            if bytes > (DUP_THRESH - 1) * self.snd.mss || n as u32 + 1 >= DUP_THRESH {
                return if r.left > rack { r.left } else { rack };
            }
        }
        rack
    }

    pub(super) fn unsacked(&self, a: Seq, b: Seq) -> u32 {
        if b <= a {
            return 0;
        }
        b.since(a) - self.rec.sacked.covered(a, b)
    }

    /// Bytes in the network: RFC 6675's pipe during SACK recovery, otherwise what was sent
    /// from SND.UNA less what the peer SACKed.
    pub(super) fn flight(&self) -> u32 {
        if self.rec.point.is_some() && self.opts.sack {
            let lost = self.lost_boundary();
            self.unsacked(lost.max(self.snd.una), self.snd.max) + self.unsacked(self.snd.una, self.rec.high_rxt)
        } else {
            self.unsacked(self.snd.una, self.snd.nxt)
        }
    }

    pub(super) fn retransmission(&mut self, env: &mut Env, now: Instant, cut: &dyn Fn(u64) -> u32) -> Option<SegOut> {
        if self.rec.rtx_una {
            if cut(self.snd.una_off) == 0 && self.snd.una_off < self.snd.src_end {
                // The source is fetching those bytes again: the retransmission stays owed.
                return None;
            }
            self.rec.rtx_una = false;
            let seq = self.snd.una;
            let max = if self.opts.sack { self.unsacked_run(seq) } else { self.snd.mss };
            let s = self.data_segment(now, seq, max, true, cut)?;
            if self.opts.sack {
                self.rec.high_rxt = self.rec.high_rxt.max(seq + s.repr.payload_len as u32);
            }
            env.stats.retransmits += 1;
            self.rec.retrans += 1;
            return Some(s);
        }
        if self.rec.point.is_none() || !self.opts.sack {
            return None;
        }
        let pipe = self.flight();
        if self.cc.cwnd().saturating_sub(pipe) < self.snd.mss {
            return None;
        }
        // NextSeg (RFC 6675 §4), rules 1 and 3: the lowest unSACKed byte above HighRxt that is
        // lost, or failing that, below the highest SACKed byte.
        let lost = self.lost_boundary();
        let top = self.rec.sacked.highest()?;
        let mut s = self.rec.high_rxt.max(self.snd.una);
        for r in self.rec.sacked.as_slice() {
            if s >= r.left && s < r.right {
                s = r.right;
            }
        }
        let rule1 = s < lost;
        if !rule1 && (s >= top || self.data_left() > 0 && self.usable_window() > 0) {
            return None; // rule 2 (new data) comes before rule 3
        }
        let run = self.unsacked_run(s);
        if run == 0 {
            return None;
        }
        let seg = self.data_segment(now, s, run, true, cut)?;
        self.rec.high_rxt = s + seg.repr.payload_len as u32;
        env.stats.retransmits += 1;
        self.rec.retrans += 1;
        Some(seg)
    }

    /// UnSACKed bytes from `s` up to the next SACKed range or SND.MAX.
    pub(super) fn unsacked_run(&self, s: Seq) -> u32 {
        let next = self.rec.sacked.as_slice().iter().find(|r| r.left > s).map_or(self.snd.max, |r| r.left);
        let end = next.min(self.snd.max);
        if end > s {
            end.since(s)
        } else {
            0
        }
    }
}
