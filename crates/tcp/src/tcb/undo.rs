//! Spurious-retransmission detection and undo. A recovery or timeout that was caused by
//! reordering or a delay spike, not loss, cut the window for nothing; when that shows, the
//! window goes back to what it was. Two proofs, as Linux takes them:
//!
//! - **Timestamps** (Eifel, RFC 3522; the detection F-RTO makes from timestamps): an ACK that
//!   echoes a TSval older than the first retransmission of the episode acknowledges an
//!   original transmission. After a timeout the first ACK that moves SND.UNA tells (the data
//!   was only delayed); in fast recovery the ACK that ends it does.
//! - **DSACK** (RFC 3708, with RFC 2883's duplicate reports): every retransmitted segment of
//!   the episode was reported received twice.
//!
//! A DSACK also shows the path reorders: RACK's reordering window widens (RFC 8985 §6.2.4).

use super::{Env, Tcb};
use crate::cc::CcWindow;
use crate::seq::Seq;
use timer::Instant;

/// What a loss response changed, kept until the episode ends.
#[derive(Clone, Copy, Default)]
pub(super) struct Undo {
    /// The window before the response, while an episode can still be undone.
    prior: Option<CcWindow>,
    /// Our TSval of the episode's first retransmission (None before it).
    rtx_ts: Option<u32>,
    /// Segments retransmitted in the episode, and how many of them a DSACK reported received
    /// twice.
    rtx_segs: u32,
    dsacked: u32,
    /// SND.UNA when the episode began: a DSACK below it is from an earlier one.
    marker: Seq,
}

/// RACK's reordering window grows by a quarter RTT for each recovery that saw a DSACK, up to
/// a whole RTT, and returns to a quarter after this many recoveries without one.
pub(super) const REO_MULT_MAX: u32 = 4;
const REO_RESET_RECOVERIES: u32 = 16;

impl Tcb {
    /// A recovery or a first timeout begins: keep the window it is about to cut. A timeout
    /// during a recovery keeps the window from before the recovery.
    pub(super) fn undo_arm(&mut self) {
        if self.rec.undo.prior.is_some() && self.rec.point.is_some() {
            return;
        }
        self.rec.undo =
            Undo { prior: Some(self.cc.window()), rtx_ts: None, rtx_segs: 0, dsacked: 0, marker: self.snd.una };
        self.rec.reo_recoveries += 1;
        if self.rec.reo_recoveries >= REO_RESET_RECOVERIES {
            self.rec.reo_recoveries = 0;
            self.rec.reo_mult = 1;
        }
    }

    /// A segment went again.
    pub(super) fn undo_on_retransmit(&mut self, now: Instant) {
        if self.rec.undo.prior.is_some() {
            let ts = self.ts_clock(now);
            self.rec.undo.rtx_ts.get_or_insert(ts);
            self.rec.undo.rtx_segs += 1;
        }
    }

    /// A DSACK block (RFC 2883) of `len` bytes at `left`: data the peer got twice.
    pub(super) fn undo_on_dsack(&mut self, env: &mut Env, left: Seq, len: u32) {
        env.stats.dsacks += 1;
        self.rec.reo_recoveries = 0; // the window stays wide while the path keeps reordering
        if !self.rec.reo_dsack_seen {
            self.rec.reo_dsack_seen = true;
            self.rec.reo_mult = (self.rec.reo_mult + 1).min(REO_MULT_MAX);
        }
        let u = &mut self.rec.undo;
        if u.prior.is_some() && left >= u.marker {
            u.dsacked = u.dsacked.saturating_add(len.div_ceil(self.snd.mss.max(1)).max(1));
        }
        // The DSACK of the last retransmission often comes after the ACK that ended the
        // recovery (the original arrived first and filled the hole): undo then, as Linux does
        // in its Open and Disorder states.
        if self.rec.point.is_none() && self.undo_proven(None) {
            self.undo_restore(env);
        }
    }

    /// Was the episode spurious? `tsecr` is the echo of the ACK at hand.
    fn undo_proven(&self, tsecr: Option<u32>) -> bool {
        let u = &self.rec.undo;
        if u.prior.is_none() {
            return false;
        }
        let delayed = match (u.rtx_ts, tsecr) {
            (Some(rtx), Some(echo)) => echo != 0 && (echo.wrapping_sub(rtx) as i32) < 0,
            _ => false,
        };
        delayed || (u.rtx_segs > 0 && u.dsacked >= u.rtx_segs)
    }

    /// The first ACK that moves SND.UNA after a timeout: if it acknowledges an original
    /// transmission, the timeout was spurious; the window comes back and the holes the
    /// timeout marked lost are not sent again. Returns true when it undid.
    pub(super) fn undo_after_rto(&mut self, env: &mut Env, tsecr: Option<u32>) -> bool {
        if !self.rec.after_rto || !self.undo_proven(tsecr) {
            return false;
        }
        self.rec.point = None;
        self.rec.after_rto = false;
        self.rec.rtx_una = false;
        self.rec.rack_lost = self.snd.una;
        self.rec.high_rxt = self.snd.una;
        self.undo_restore(env);
        true
    }

    /// Recovery ended (SND.UNA reached the recovery point): undo if it was spurious. The
    /// episode stays open to DSACKs still on their way, until the next one begins.
    pub(super) fn undo_at_recovery_end(&mut self, env: &mut Env, tsecr: Option<u32>) -> bool {
        let undone = self.undo_proven(tsecr);
        if undone {
            self.undo_restore(env);
        }
        self.rec.reo_dsack_seen = false;
        undone
    }

    fn undo_restore(&mut self, env: &mut Env) {
        if let Some(prior) = self.rec.undo.prior.take() {
            self.cc.restore(prior);
            env.stats.undos += 1;
        }
        self.rec.reo_dsack_seen = false;
    }
}
