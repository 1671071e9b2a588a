//! Lost retransmissions (RFC 8985 §6.2 applied to segments sent again). RACK's sequence-order
//! shortcut ([`super::rack`]) covers first transmissions, which leave in sequence order; a
//! retransmission leaves later than the data above it, so a lost one would wait for the
//! retransmission timer — 200 ms at least, then a window of one segment. On a path that loses
//! 1 % of its packets, one recovery in a few loses a retransmission, and the timer took most of
//! the time. The log keeps each outstanding retransmission's range, its send time and SND.MAX
//! when it left: once a segment sent after it is delivered (a SACK above that SND.MAX, or a
//! later retransmission acknowledged) and a round trip plus the reordering window has passed,
//! it is lost and goes again, with no timeout and no further window reduction (it belongs to
//! the same recovery episode).
//!
//! A fixed table per connection, allocated with its first retransmission (a connection that
//! never loses anything does not carry it): nothing is allocated per packet. When it is full the entry
//! highest in sequence is forgotten (its loss, if any, is left to the timer): the lowest ones
//! hold SND.UNA back, and one of those lost for good stalls the connection until the timeout
//! while the window's worth above it waits.

use super::Tcb;
use crate::seq::Seq;
use timer::{Duration, Instant};

/// Retransmissions tracked per connection.
pub(super) const RTX_LOG: usize = 64;

#[derive(Clone, Copy, Debug)]
pub(super) struct Sent {
    pub(super) left: Seq,
    pub(super) right: Seq,
    /// SND.MAX when it left: bytes above were first sent after it.
    after: Seq,
    at: Instant,
    /// Found lost: to be sent again.
    pub(super) lost: bool,
}

/// The retransmissions in flight.
#[derive(Clone, Default)]
pub(super) struct RtxLog {
    e: Option<Box<[Sent; RTX_LOG]>>,
    len: usize,
    /// Send time of the newest retransmission known delivered (RACK.xmit_ts for them).
    delivered_at: Option<Instant>,
}

const BLANK: Sent = Sent { left: Seq(0), right: Seq(0), after: Seq(0), at: Instant::ZERO, lost: false };

impl RtxLog {
    pub(super) fn clear(&mut self) {
        self.len = 0;
    }

    pub(super) fn entries(&self) -> &[Sent] {
        self.e.as_deref().map_or(&[], |e| &e[..self.len])
    }

    fn entries_mut(&mut self) -> &mut [Sent] {
        match self.e.as_deref_mut() {
            Some(e) => &mut e[..self.len],
            None => &mut [],
        }
    }

    /// `[left, right)` was sent again at `at`, when SND.MAX was `after`.
    pub(super) fn record(&mut self, left: Seq, right: Seq, after: Seq, at: Instant, una: Seq) {
        let s = Sent { left, right, after, at, lost: false };
        let len = self.len;
        let e = self.e.get_or_insert_with(|| Box::new([BLANK; RTX_LOG]));
        if let Some(x) = e[..len].iter_mut().find(|x| x.left < right && left < x.right) {
            *x = s;
            return;
        }
        if len == RTX_LOG {
            let highest = (0..len).max_by_key(|&i| e[i].left.since(una)).unwrap_or(0);
            if e[highest].left.since(una) > left.since(una) {
                e[highest] = s;
            }
            return;
        }
        e[len] = s;
        self.len += 1;
    }

    /// The lowest entry found lost.
    pub(super) fn first_lost(&self, una: Seq) -> Option<Sent> {
        self.entries().iter().filter(|x| x.lost).min_by_key(|x| x.left.since(una)).copied()
    }

    fn remove(&mut self, i: usize) {
        let last = self.len - 1;
        let e = self.entries_mut();
        e[i] = e[last];
        self.len -= 1;
    }
}

impl Tcb {
    /// After an ACK (or when the reordering timer fires): forgets what was delivered, marks
    /// what was overtaken, and arms the reordering timer for what may yet be.
    pub(super) fn rtx_log_check(&mut self, now: Instant) {
        if self.rec.log.len == 0 {
            return;
        }
        let una = self.snd.una;
        let mut i = 0;
        while i < self.rec.log.len {
            let e = &mut self.rec.log.entries_mut()[i];
            if e.left < una {
                e.left = una;
            }
            let (l, r, at) = (e.left, e.right, e.at);
            if l >= r || self.rec.sacked.covered(l, r) == r.since(l) {
                let d = &mut self.rec.log.delivered_at;
                *d = Some(d.map_or(at, |d| d.max(at)));
                self.rec.log.remove(i);
            } else {
                i += 1;
            }
        }
        let top = self.rec.sacked.highest();
        let delivered_at = self.rec.log.delivered_at;
        let wait = self.rtt.srtt().map_or(Duration::from_millis(1), |s| s + (s / 4).max(Duration::from_millis(1)));
        let mut next: Option<Instant> = None;
        for e in self.rec.log.entries_mut() {
            if e.lost {
                continue;
            }
            let overtaken = top.is_some_and(|t| t > e.after) || delivered_at.is_some_and(|d| d > e.at);
            if !overtaken {
                continue;
            }
            let due = e.at + wait;
            if now >= due {
                e.lost = true;
            } else {
                next = Some(next.map_or(due, |n| n.min(due)));
            }
        }
        if let Some(due) = next {
            self.timers.reo = Some(self.timers.reo.map_or(due, |t| t.min(due)));
        }
    }

    /// Bytes of retransmissions found lost and not yet sent again: not in the network.
    pub(super) fn rtx_lost_bytes(&self) -> u32 {
        self.rec.log.entries().iter().filter(|e| e.lost).map(|e| self.unsacked(e.left.max(self.snd.una), e.right)).sum()
    }
}
