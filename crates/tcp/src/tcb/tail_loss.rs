//! Tail loss probes (RFC 8985 §7): when the last segments of a flight are lost, no ACK comes
//! to start fast recovery and only the retransmission timer (200 ms at least, then backed
//! off) would find out. A probe timer of about two round trips sends one segment — new data
//! if the window allows, else the last segment again — so the peer's ACK (with SACK) shows
//! the loss or repairs it. A loss the probe repaired is answered as congestion, like any
//! other; a probe the peer reports as a duplicate (DSACK, or a plain duplicate ACK) was not
//! needed and costs the window nothing.
//!
//! Only with SACK: without it the ACK of a probe cannot say what was missing.

use wire::tcp::TcpRepr;

use super::{Env, SegOut, Tcb};
use crate::seq::Seq;
use timer::{Duration, Instant};

/// The peer's worst-case delayed-ACK time (RFC 8985's WCDelAckT): added when a single
/// segment is outstanding, whose ACK the peer may hold back.
const WORST_DELAYED_ACK: Duration = Duration::from_millis(200);
/// Before any RTT sample.
const PTO_UNMEASURED: Duration = Duration::from_secs(1);

/// A probe sent and not yet settled: `end` is SND.MAX after it (RFC 8985's TLP.end_seq).
#[derive(Clone, Copy, Debug)]
pub(super) struct Episode {
    pub(super) end: Seq,
    /// The probe sent bytes again (rather than new data): its ACK may mean a repaired loss.
    pub(super) again: bool,
}

impl Tcb {
    /// True while a probe may be scheduled: synchronized with SACK, data outstanding, no
    /// recovery, no timeout backed off, no probe unsettled.
    fn probe_allowed(&self) -> bool {
        self.opts.sack
            && self.cfg.tail_loss_probes
            && self.is_synchronized()
            && self.snd.max > self.snd.una
            && self.rec.point.is_none()
            && self.rtt.backoffs() == 0
            && self.rec.probe.is_none()
    }

    /// Arms the probe timer if it may run and does not; it never outlasts the retransmission
    /// timer (RFC 8985 §7.2).
    pub(super) fn arm_probe(&mut self, now: Instant) {
        if !self.probe_allowed() {
            self.timers.pto = None;
            return;
        }
        if self.timers.pto.is_some() {
            return;
        }
        let pto = match self.rtt.srtt() {
            Some(srtt) if self.flight() <= self.snd.mss => srtt * 2 + WORST_DELAYED_ACK,
            Some(srtt) => srtt * 2 + Duration::from_millis(2),
            None => PTO_UNMEASURED,
        };
        let at = now + pto;
        self.timers.pto = Some(self.timers.rtx.map_or(at, |rto| at.min(rto)));
    }

    /// The probe timer fired: a probe is owed at the next poll.
    pub(super) fn on_probe_timer(&mut self) {
        self.timers.pto = None;
        if self.probe_allowed() {
            self.due.tail_probe = true;
        }
    }

    /// The probe itself: one new segment if the peer's window has room (the congestion
    /// window may be full: the probe stands for an ACK that did not come), else the last
    /// segment sent, again.
    pub(super) fn tail_probe(&mut self, env: &mut Env, now: Instant, cut: &dyn Fn(u64) -> u32) -> Option<SegOut> {
        self.due.tail_probe = false;
        let new = self.data_left() > 0 && self.usable_window() > 0;
        let s = if new {
            let max = self.usable_window().min(self.snd.mss);
            self.data_segment(now, self.snd.nxt, max, false, cut)?
        } else {
            let data_end = self.snd.fin_seq.unwrap_or(self.snd.max).min(self.snd.max);
            let len = data_end.since(self.snd.una).min(self.snd.mss);
            self.data_segment(now, data_end - len, len, true, cut)?
        };
        env.stats.tail_probes += 1;
        if !new {
            env.stats.retransmits += 1;
            self.rec.retrans += 1;
        }
        self.rec.probe = Some(Episode { end: self.snd.max, again: !new });
        // RFC 8985 §7.3: the retransmission timer restarts after a probe.
        self.timers.rtx = Some(now + self.rtt.rto());
        Some(s)
    }

    /// Settles an unsettled probe on an ACK (RFC 8985 §7.4, as Linux reads it): a probe of new
    /// data, a DSACK of the probe's bytes, or a plain duplicate ACK once the probe is covered
    /// end the episode at no cost; an ACK beyond the probe, with neither, means the probe
    /// repaired a loss, and the window is reduced for it.
    pub(super) fn settle_probe(&mut self, env: &mut Env, seg: &TcpRepr, advanced: bool, news: bool, data_len: usize) {
        let Some(p) = self.rec.probe else { return };
        let ack = Seq(seg.ack);
        if ack < p.end {
            return;
        }
        if !p.again || self.dsack_up_to(seg, p.end) {
            self.rec.probe = None;
        } else if ack > p.end {
            env.stats.tail_recoveries += 1;
            if self.cc.kind() != crate::cc::CcKind::Bbr {
                let flight = self.flight();
                self.cc.on_loss(flight);
            }
            self.rec.probe = None;
        } else if !advanced && !news && data_len == 0 {
            self.rec.probe = None;
        }
    }

    /// A DSACK (RFC 2883: the first block, below the cumulative ACK) for bytes ending at or
    /// before `end`: the peer got some bytes twice.
    fn dsack_up_to(&self, seg: &TcpRepr, end: Seq) -> bool {
        match seg.options.sack_blocks[0] {
            Some((l, r)) => {
                let (l, r) = (Seq(l), Seq(r));
                l < r && r <= Seq(seg.ack) && r <= end
            }
            None => false,
        }
    }
}
