//! Loss recovery: duplicate ACKs, NewReno (RFC 6582), SACK-based recovery (RFC 6675) with
//! its pipe and IsLost, the window during recovery by proportional rate reduction (RFC 6937),
//! and the retransmission it chooses.

use super::{Env, SegOut, Tcb, DUP_THRESH};
use crate::cc::CcKind;
use crate::seq::Seq;
use timer::Instant;

impl Tcb {
    pub(super) fn on_dup_ack(&mut self, env: &mut Env) {
        self.rec.dupacks += 1;
        match self.rec.point {
            None => {
                // Once the path proved it reorders, RACK's time window decides, not the count.
                let by_count = self.rec.dupacks >= DUP_THRESH && !(self.opts.sack && self.reordering_seen());
                if by_count || (self.opts.sack && self.sack_loss()) {
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

    /// The path reorders (a segment sent once arrived after one sent later), and RACK's time
    /// window is on to take that into account.
    pub(super) fn reordering_seen(&self) -> bool {
        self.cfg.rack && self.rec.reordered
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
        self.undo_arm();
        self.rec.point = Some(self.snd.max);
        self.rec.last_recover = self.snd.max;
        self.rec.after_rto = false;
        let w = self.cc.on_loss(flight);
        if self.opts.sack {
            self.rec.high_rxt = self.snd.una;
            self.rec.rtx_una = true; // RFC 6675 §5 (4.3): the first segment goes at once
            self.rec.prr = super::Prr { recover_fs: flight.max(1), delivered: 0, out: 0 };
            // The window follows PRR from here: what is in the network now, until ACKs
            // say how much more may go (the first retransmission goes regardless).
            self.cc.set_cwnd(self.flight());
        } else {
            self.cc.set_cwnd(w + 3 * self.snd.mss);
            self.rec.rtx_una = true;
        }
        self.rtt_probe = None;
    }

    /// PRR (RFC 6937 §3.1) on an ACK during SACK recovery: `delivered` bytes reached the
    /// peer (cumulatively or SACKed). The window becomes pipe + sndcnt: while the pipe is
    /// above ssthresh, sending follows the deliveries scaled by ssthresh/RecoverFS; below
    /// it, slow start up to ssthresh (the SSRB bound), so a burst of losses does not leave
    /// the window far below what the path holds.
    ///
    /// When the ACK marked more data lost, the pipe just fell by that much: slow start up to
    /// ssthresh would send it all at once, at line rate into the queue that dropped it, so
    /// sending is held to what was delivered (PRR-CRB, as Linux does in that case).
    pub(super) fn prr_on_ack(&mut self, delivered: u32, newly_lost: bool) {
        if self.rec.point.is_none() || self.rec.after_rto || !self.opts.sack || self.cc.kind() == CcKind::Bbr {
            return;
        }
        self.rec.prr.delivered = self.rec.prr.delivered.saturating_add(delivered);
        let p = self.rec.prr;
        let pipe = self.flight();
        let ssthresh = self.cc.ssthresh();
        let sndcnt = if pipe > ssthresh {
            let share = (u64::from(p.delivered) * u64::from(ssthresh)).div_ceil(u64::from(p.recover_fs.max(1)));
            (share as u32).saturating_sub(p.out)
        } else if newly_lost {
            (ssthresh - pipe).min(delivered)
        } else {
            let limit = p.delivered.saturating_sub(p.out).max(delivered) + self.snd.mss;
            (ssthresh - pipe).min(limit)
        };
        self.cc.set_cwnd(pipe.saturating_add(sndcnt));
    }

    /// Losses marked by a timer rather than an ACK (RACK's reordering timer): nothing was
    /// delivered, so nothing more may go than one segment beyond what is in the network —
    /// the window set at the last ACK, over a pipe that just fell by every byte marked, would
    /// let thousands of retransmissions leave in one burst.
    pub(super) fn prr_on_marking(&mut self) {
        if self.rec.point.is_none() || self.rec.after_rto || !self.opts.sack || self.cc.kind() == CcKind::Bbr {
            return;
        }
        let pipe = self.flight();
        if self.cc.cwnd() > pipe + self.snd.mss {
            self.cc.set_cwnd(pipe + self.snd.mss);
        }
    }

    /// What is known lost now, to see whether an event marked more: the RFC 6675/RACK
    /// boundary and the retransmissions found lost.
    pub(super) fn lost_mark(&self) -> (Seq, u32) {
        (self.lost_boundary(), self.rtx_lost_bytes())
    }

    /// Every unSACKed byte below this is lost (RFC 6675 IsLost): walking down from the top,
    /// the first SACKed range at which more than (DupThresh − 1)·SMSS bytes, or DupThresh
    /// ranges, are SACKed above.
    /// RACK's boundary is taken when it is higher. Once a DSACK showed the path reorders,
    /// RACK's time window alone decides (RFC 8985 §6.2: a count of segments above a hole says
    /// nothing about loss when segments overtake each other by hundreds).
    pub(super) fn lost_boundary(&self) -> Seq {
        let rack = self.rack_boundary();
        if self.reordering_seen() {
            return rack;
        }
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
            (self.unsacked(lost.max(self.snd.una), self.snd.max) + self.unsacked(self.snd.una, self.rec.high_rxt))
                .saturating_sub(self.rtx_lost_bytes())
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
                self.rec.high_rxt = self.rec.high_rxt.max(seq + seg_len(&s));
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
        // A retransmission found lost goes again before any other hole.
        if let Some(e) = self.rec.log.first_lost(self.snd.una) {
            let mut s = e.left.max(self.snd.una);
            for r in self.rec.sacked.as_slice() {
                if s >= r.left && s < r.right {
                    s = r.right;
                }
            }
            if s < e.right {
                let run = self.unsacked_run(s).min(e.right.since(s));
                if cut(self.snd.una_off + u64::from(s.since(self.snd.una))) == 0 {
                    return None; // the source fetches those bytes again first
                }
                let seg = self.data_segment(now, s, run, true, cut)?;
                env.stats.retransmits += 1;
                env.stats.lost_retransmits += 1;
                self.rec.retrans += 1;
                return Some(seg);
            }
        }
        // NextSeg (RFC 6675 §4) rule 1: the lowest unSACKed byte above HighRxt that is lost.
        // Rule 3 (any unSACKed byte below the highest SACKed one, when nothing else may go)
        // is left out, as Linux leaves it: with a large window shut by the peer it resent
        // whole windows of data that was only in flight, or whose SACKs the scoreboard had
        // no room for.
        let lost = self.lost_boundary();
        // After a timeout every hole is lost, SACKed data or not.
        let top = self.rec.sacked.highest().unwrap_or(self.snd.una);
        let mut s = self.rec.high_rxt.max(self.snd.una);
        for r in self.rec.sacked.as_slice() {
            if s >= r.left && s < r.right {
                s = r.right;
            }
        }
        if s >= lost || s >= top.max(lost) {
            return None;
        }
        let run = self.unsacked_run(s);
        if run == 0 {
            return None;
        }
        let seg = self.data_segment(now, s, run, true, cut)?;
        self.rec.high_rxt = s + seg_len(&seg);
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

/// Sequence space a segment takes: its data, and one for a FIN (a FIN resent after a timeout
/// must move HighRxt past itself, or NextSeg picks it again and again).
fn seg_len(s: &SegOut) -> u32 {
    s.repr.payload_len as u32 + u32::from(s.repr.flags.has(wire::tcp::TcpFlags::FIN))
}
