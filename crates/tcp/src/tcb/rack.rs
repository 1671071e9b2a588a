//! Time-based loss marking (RACK, RFC 8985 §6), in sequence order. RFC 6675 calls a hole lost
//! only once three segments above it are SACKed, so a flight of a few segments that loses one
//! waits for the retransmission timer. RACK calls a segment lost once a segment sent after it
//! has been delivered and a reordering window has passed. Segments sent for the first time go
//! out in sequence order, so "sent after" is "above": once a SACK shows data delivered above
//! a hole, a timer of the reordering window starts, and when it fires every hole below that
//! data is lost (retransmitted holes are left to the timers: HighRxt keeps NextSeg off them).
//!
//! The window is a quarter of the smoothed RTT (RFC 8985's RACK.min_RTT/4, with SRTT), at
//! least a millisecond, the granularity of sirocco's timers; a quarter more for each recovery
//! in which a DSACK showed the path reorders, up to one RTT (see [`super::undo`]).

use super::{Env, Tcb};
use crate::seq::Seq;
use timer::{Duration, Instant};

impl Tcb {
    /// After an ACK's SACK blocks are taken: starts the reordering timer if data is SACKed
    /// above a hole not yet known lost.
    pub(super) fn rack_on_ack(&mut self, now: Instant) {
        if !self.opts.sack || !self.cfg.rack || self.timers.reo.is_some() {
            return;
        }
        let Some(delivered) = self.rec.sacked.as_slice().last().map(|r| r.left) else {
            return;
        };
        if delivered <= self.lost_boundary() {
            return;
        }
        let window = self.rtt.srtt().map_or(Duration::from_millis(1), |s| {
            (s / 4 * u64::from(self.rec.reo_mult)).min(s).max(Duration::from_millis(1))
        });
        self.rec.reo_mark = delivered;
        self.timers.reo = Some(now + window);
    }

    /// The reordering window passed: what is still unSACKed below the mark is lost.
    pub(super) fn on_reorder_timer(&mut self, env: &mut Env, now: Instant) {
        self.timers.reo = None;
        self.rtx_log_check(now);
        if self.rec.reo_mark <= self.snd.una {
            return;
        }
        if self.rec.reo_mark > self.rec.rack_lost {
            self.rec.rack_lost = self.rec.reo_mark;
        }
        if self.rec.point.is_none() && self.sack_loss() {
            self.enter_recovery(env);
        }
        self.prr_on_marking();
        // SACKs that came meanwhile may show more above: look again.
        self.rack_on_ack(now);
    }

    /// RACK's boundary: unSACKed bytes below it are lost (SND.UNA when none is known).
    pub(super) fn rack_boundary(&self) -> Seq {
        if self.rec.rack_lost > self.snd.una {
            self.rec.rack_lost
        } else {
            self.snd.una
        }
    }
}
