//! Input: one segment through RFC 9293's checks (sequence, PAWS, RST, SYN, ACK), data
//! delivered in order or kept for reassembly, the FIN, and the ACK field's effects.

use wire::tcp::{TcpFlags, TcpRepr};

use super::{End, Env, Reset, State, Tcb, PAWS_IDLE};
use crate::bbr::Delivery;
use crate::cc::CcKind;
use crate::seq::Seq;
use timer::{Duration, Instant};

impl Tcb {
    /// Processes one segment addressed to this connection, in RFC 9293 §3.10.7.4's order.
    /// In-order data goes to `deliver`, which returns how many of those bytes the
    /// application is already done with.
    pub fn on_segment(
        &mut self,
        env: &mut Env,
        now: Instant,
        seg: &TcpRepr,
        payload: &[u8],
        deliver: &mut dyn FnMut(&[u8]) -> u32,
    ) {
        match self.state {
            State::Closed => return,
            State::SynSent => {
                self.on_syn_sent(env, now, seg, payload, deliver);
                self.arm(now);
                return;
            }
            _ => {}
        }
        self.heard_from_peer(now);
        if self.syn_again(seg) || self.paws_rejects(env, now, seg) || !self.sequence_acceptable(env, now, seg, payload)
        {
            return;
        }
        if self.control_bits_end(env, now, seg) {
            return;
        }
        self.update_ts_recent(now, seg);
        if !self.on_ack(env, now, seg, payload.len()) || self.state == State::Closed {
            return;
        }
        let (seq, data, fin) = self.trim_to_window(env, seg, payload);
        self.take_text(env, now, seg, seq, data, deliver);
        if fin {
            self.take_fin_at(now, seq + data.len() as u32);
        }
        self.arm(now);
    }

    /// Any segment from the peer restarts its silence timers.
    fn heard_from_peer(&mut self, now: Instant) {
        self.timers.last_rx = now;
        self.timers.probes = 0;
        self.timers.keepalive = None;
        if self.state == State::FinWait2 {
            // FIN-WAIT-2 times out only while the peer is silent: it may still be sending.
            self.timers.end = Some(now + self.cfg.fin_wait2);
        }
    }

    /// A retransmitted SYN while our SYN-ACK is outstanding: the SYN-ACK goes again.
    fn syn_again(&mut self, seg: &TcpRepr) -> bool {
        let f = seg.flags;
        let again = self.state == State::SynReceived
            && f.has(TcpFlags::SYN)
            && !f.has(TcpFlags::ACK)
            && Seq(seg.seq) == self.rcv.irs;
        if again {
            self.snd.nxt = self.snd.iss;
        }
        again
    }

    /// PAWS (RFC 7323 §5): an old timestamp marks an old duplicate, answered with an ACK.
    fn paws_rejects(&mut self, env: &mut Env, now: Instant, seg: &TcpRepr) -> bool {
        if !self.opts.ts || seg.flags.has(TcpFlags::RST) {
            return false;
        }
        let Some((tsval, _)) = seg.options.timestamps else { return false };
        let old = (tsval.wrapping_sub(self.ts.recent) as i32) < 0 && now.since(self.ts.recent_at) < PAWS_IDLE;
        if old {
            env.stats.paws_dropped += 1;
            self.due.ack = true;
        }
        old
    }

    /// The first check (RFC 9293 §3.10.7.4): does the segment fall in the receive window?
    /// An unacceptable one is answered with an ACK and otherwise dropped.
    fn sequence_acceptable(&mut self, env: &mut Env, now: Instant, seg: &TcpRepr, payload: &[u8]) -> bool {
        let f = seg.flags;
        let seq0 = Seq(seg.seq);
        let seg_len = payload.len() as u32 + u32::from(f.has(TcpFlags::SYN)) + u32::from(f.has(TcpFlags::FIN));
        let wnd = self.rcv_wnd();
        let in_wnd = |s: Seq| s.in_range(self.rcv.nxt, self.rcv.nxt + wnd);
        let acceptable = match (seg_len, wnd) {
            (0, 0) => seq0 == self.rcv.nxt,
            (0, _) => in_wnd(seq0),
            (_, 0) => seq0 == self.rcv.nxt, // zero window: take the control bits, not the data
            _ => in_wnd(seq0) || in_wnd(seq0 + seg_len - 1),
        };
        if acceptable {
            return true;
        }
        env.stats.out_of_window += 1;
        if !payload.is_empty() && seq0 + seg_len <= self.rcv.nxt {
            self.note_duplicate(seq0, seq0 + payload.len() as u32);
        }
        if !f.has(TcpFlags::RST) {
            self.due.ack = true;
        }
        // With our window shut, "special allowance should be made to accept valid ACKs"
        // (RFC 9293 §3.10.7.4). A peer's window probe (Linux sends SND.UNA - 1) may be
        // the only segment it sends: ignoring its ACK, with both windows shut (an echo
        // whose output waits on its own unacknowledged data), leaves the two sides
        // waiting on our retransmission timer as it backs off.
        let valid_ack = f.has(TcpFlags::ACK)
            && !f.has(TcpFlags::RST)
            && !f.has(TcpFlags::SYN)
            && self.state != State::SynReceived
            && Seq(seg.ack) > self.snd.una;
        if wnd == 0 && valid_ack && self.on_ack(env, now, seg, 0) && self.state != State::Closed {
            self.arm(now);
        }
        false
    }

    /// The second to fifth checks: RST, SYN and a missing ACK. True when the segment ends
    /// here (RFC 5961's challenge ACKs for a RST off the exact next sequence number and for
    /// a SYN in a synchronized state).
    fn control_bits_end(&mut self, env: &mut Env, now: Instant, seg: &TcpRepr) -> bool {
        let f = seg.flags;
        if f.has(TcpFlags::RST) {
            if Seq(seg.seq) == self.rcv.nxt {
                env.stats.resets_in += 1;
                let why = if self.state == State::SynReceived && !self.passive { End::Refused } else { End::Reset };
                self.finish(why);
            } else if env.allow_challenge(now) {
                self.due.ack = true;
            }
            return true;
        }
        if f.has(TcpFlags::SYN) {
            if env.allow_challenge(now) {
                self.due.ack = true;
            }
            return true;
        }
        !f.has(TcpFlags::ACK)
    }

    /// TS.Recent (RFC 7323 §4.3) from segments that cover the last ACK we sent.
    fn update_ts_recent(&mut self, now: Instant, seg: &TcpRepr) {
        if !self.opts.ts {
            return;
        }
        if let Some((tsval, _)) = seg.options.timestamps {
            if Seq(seg.seq) <= self.rcv.last_ack_sent && (tsval.wrapping_sub(self.ts.recent) as i32) >= 0 {
                self.ts.recent = tsval;
                self.ts.recent_at = now;
            }
        }
    }

    /// The segment's text cut to the window: what we already have and what does not fit are
    /// dropped. Returns where the rest starts, the rest, and whether its FIN still counts.
    fn trim_to_window<'p>(&mut self, env: &mut Env, seg: &TcpRepr, payload: &'p [u8]) -> (Seq, &'p [u8], bool) {
        let mut seq = Seq(seg.seq);
        let mut data = payload;
        let mut fin = seg.flags.has(TcpFlags::FIN);
        if seq < self.rcv.nxt {
            let dup = self.rcv.nxt.since(seq) as usize;
            if !data.is_empty() {
                self.note_duplicate(seq, seq + dup.min(data.len()) as u32);
            }
            if dup > data.len() {
                fin = false; // the FIN too is old (FIN seq < rcv_nxt)
                data = &[];
            } else {
                data = &data[dup..];
            }
            seq = self.rcv.nxt;
        }
        let room = self.rcv_wnd().saturating_sub(seq.since(self.rcv.nxt));
        if data.len() as u32 > room {
            data = &data[..room as usize];
            fin = false;
            self.due.ack = true; // tell the sender where the window ends
            env.stats.out_of_window += 1;
        }
        (seq, data, fin)
    }

    /// The seventh step, the segment text: in order it is delivered (with what it lets out
    /// of the out-of-order queue), ahead of a hole it is kept and answered at once.
    fn take_text(
        &mut self,
        env: &mut Env,
        now: Instant,
        seg: &TcpRepr,
        seq: Seq,
        data: &[u8],
        deliver: &mut dyn FnMut(&[u8]) -> u32,
    ) {
        if !matches!(self.state, State::Established | State::FinWait1 | State::FinWait2) || data.is_empty() {
            return;
        }
        if self.rcv.fin {
            return; // data after the peer's FIN cannot be; ignore it
        }
        if seq != self.rcv.nxt {
            if self.rcv.ooo.store(&mut env.pool, self.rcv.nxt, seq, data) {
                env.stats.ooo_kept += 1;
            } else {
                env.stats.ooo_dropped += 1;
            }
            self.due.ack = true; // duplicate ACK with SACK blocks, at once (RFC 5681 §4.2)
            return;
        }
        self.take_data(data, deliver);
        let tsecr = if self.opts.ts { seg.options.timestamps.map(|t| t.1) } else { None };
        self.autotune(env, now, tsecr);
        if !self.rcv.ooo.is_empty() {
            self.pull_ooo(env, deliver);
            self.due.ack = true; // a hole filled: tell the sender at once (RFC 5681 §4.2)
        }
        self.rcv.unacked += data.len() as u32;
        if self.rcv.unacked >= 2 * u32::from(self.cfg.mss) {
            self.due.ack = true;
        } else if self.timers.delack.is_none() {
            self.timers.delack = Some(now + self.cfg.delayed_ack);
        }
    }

    /// The eighth step, a FIN at sequence `at`: taken when everything before it is, else
    /// remembered until the hole before it fills.
    fn take_fin_at(&mut self, now: Instant, at: Seq) {
        if at == self.rcv.nxt {
            self.take_fin(now);
        } else if at > self.rcv.nxt {
            self.rcv.fin_at = Some(at);
            self.due.ack = true;
        }
    }

    fn note_duplicate(&mut self, left: Seq, right: Seq) {
        if self.opts.sack && right > left {
            self.rcv.dsack = Some((left, right));
            self.due.ack = true;
        }
    }

    pub(super) fn take_data(&mut self, data: &[u8], deliver: &mut dyn FnMut(&[u8]) -> u32) {
        self.rcv.nxt = self.rcv.nxt + data.len() as u32;
        self.rcv.held += data.len() as u32;
        let done = deliver(data).min(data.len() as u32);
        self.rcv.held -= done;
    }

    pub(super) fn pull_ooo(&mut self, env: &mut Env, deliver: &mut dyn FnMut(&[u8]) -> u32) {
        let mut held = 0u32;
        let mut done = 0u32;
        if let Some(end) = self.rcv.ooo.take_ready(self.rcv.nxt, |d| {
            held += d.len() as u32;
            done += deliver(d).min(d.len() as u32);
        }) {
            self.rcv.nxt = end;
        }
        self.rcv.held += held - done;
        self.rcv.ooo.release(&mut env.pool, false);
        if self.rcv.fin_at == Some(self.rcv.nxt) {
            self.take_fin(self.timers.last_rx);
        }
    }

    pub(super) fn take_fin(&mut self, now: Instant) {
        if self.rcv.fin {
            self.due.ack = true;
            return;
        }
        self.rcv.fin = true;
        self.rcv.fin_at = None;
        self.rcv.nxt = self.rcv.nxt + 1;
        self.due.ack = true;
        self.notes.peer_fin = true;
        match self.state {
            State::SynReceived | State::Established => self.state = State::CloseWait,
            State::FinWait1 => {
                if self.fin_acked() {
                    self.enter_time_wait(now);
                } else {
                    self.state = State::Closing;
                }
            }
            State::FinWait2 => self.enter_time_wait(now),
            _ => {}
        }
    }

    pub(super) fn fin_acked(&self) -> bool {
        self.snd.fin_seq.is_some_and(|f| self.snd.una > f)
    }

    pub(super) fn on_syn_sent(
        &mut self,
        env: &mut Env,
        now: Instant,
        seg: &TcpRepr,
        payload: &[u8],
        deliver: &mut dyn FnMut(&[u8]) -> u32,
    ) {
        let f = seg.flags;
        let ack = Seq(seg.ack);
        if f.has(TcpFlags::ACK) && (ack <= self.snd.iss || ack > self.snd.max) {
            if !f.has(TcpFlags::RST) {
                self.due.rst = Some(Reset { seq: ack, ack: None });
            }
            return;
        }
        if f.has(TcpFlags::RST) {
            if f.has(TcpFlags::ACK) {
                env.stats.resets_in += 1;
                self.finish(End::Refused);
            }
            return;
        }
        if !f.has(TcpFlags::SYN) {
            return;
        }
        self.timers.last_rx = now;
        self.take_syn(seg, now);
        if f.has(TcpFlags::ACK) {
            self.snd.una = ack;
            self.snd.wnd = u32::from(seg.window); // SYN-ACK windows are unscaled too
            self.snd.max_wnd = self.snd.wnd;
            self.snd.wl2 = ack;
            self.timers.rtx = None;
            self.timers.retries = 0;
            if let Some(p) = self.rtt_probe.take() {
                if ack >= p.seq {
                    self.rtt.sample(now - p.sent);
                }
            }
            self.state = State::Established;
            self.notes.established = true;
            env.stats.established += 1;
            self.due.ack = true;
            if !payload.is_empty() {
                let room = self.rcv_wnd_for_syn();
                let data = &payload[..payload.len().min(room as usize)];
                self.take_data(data, deliver);
            }
            if f.has(TcpFlags::FIN) {
                self.take_fin(now);
            }
        } else {
            // Simultaneous open: SYN-RECEIVED, and our SYN goes out again as a SYN-ACK.
            self.state = State::SynReceived;
            self.snd.nxt = self.snd.iss;
            self.timers.rtx = None;
        }
    }

    pub(super) fn rcv_wnd_for_syn(&self) -> u32 {
        self.cfg.rcv_buf.min(65_535)
    }

    /// The ACK field (RFC 9293 §3.10.7.4 fifth check, RFC 5961 §5). Returns false when the
    /// segment is to be dropped.
    pub(super) fn on_ack(&mut self, env: &mut Env, now: Instant, seg: &TcpRepr, data_len: usize) -> bool {
        let ack = Seq(seg.ack);
        if self.state == State::SynReceived {
            if ack > self.snd.una && ack <= self.snd.max {
                self.state = State::Established;
                self.notes.established = true;
                env.stats.established += 1;
                if self.snd.closing {
                    self.state = State::FinWait1;
                }
                self.snd.wnd = u32::from(seg.window) << self.snd.wscale;
                self.snd.max_wnd = self.snd.max_wnd.max(self.snd.wnd);
                self.snd.wl1 = Seq(seg.seq);
                self.snd.wl2 = ack;
            } else {
                self.due.rst = Some(Reset { seq: ack, ack: None });
                return false;
            }
        }
        if ack > self.snd.max {
            self.due.ack = true; // acknowledges something never sent
            return false;
        }
        if ack < self.snd.una - self.snd.max_wnd.max(1) {
            if env.allow_challenge(now) {
                self.due.ack = true;
            }
            return false;
        }

        let wnd = u32::from(seg.window) << self.snd.wscale;
        let (una_before, sacked_before) = (self.snd.una, self.sacked_bytes());
        let (lost_before, lost_rtx_before) = if self.opts.sack { self.lost_mark() } else { (self.snd.una, 0) };
        let (highest_before, resent_below) = (self.rec.sacked.highest(), self.resent_below());
        let new_sack = self.opts.sack && self.take_sack_blocks(env, seg);
        let advanced = ack > self.snd.una;
        // RFC 8985 §6.2 step 2 (RACK.reord): the hole at SND.UNA, sent once, filled after the
        // peer had data above it: it was overtaken on the path. (A block SACKed late below
        // others is no proof: the ACKs that first reported it may have been lost.)
        if let Some(top) = highest_before {
            if advanced && self.snd.una < top && self.snd.una >= resent_below {
                self.rec.reordered = true;
            }
        }
        if advanced {
            let tsecr = if self.opts.ts { seg.options.timestamps.map(|t| t.1) } else { None };
            self.on_new_ack(env, now, ack, tsecr);
        } else if ack == self.snd.una
            && data_len == 0
            && !seg.flags.has(TcpFlags::SYN)
            && !seg.flags.has(TcpFlags::FIN)
            && self.snd.max > self.snd.una
            && (wnd == self.snd.wnd || new_sack)
        {
            self.on_dup_ack(env);
        }

        self.settle_probe(env, seg, advanced, new_sack, data_len);
        if new_sack {
            self.rack_on_ack(now);
        }
        if advanced || new_sack {
            let delivered = (self.snd.una.since(una_before) + self.sacked_bytes()).saturating_sub(sacked_before);
            if self.opts.sack {
                self.rtx_log_check(now);
                let (lost, lost_rtx) = self.lost_mark();
                let newly_lost = lost > lost_before.max(self.snd.una) || lost_rtx > lost_rtx_before;
                self.prr_on_ack(delivered, newly_lost);
            }
            if self.cc.kind() == CcKind::Bbr {
                let highest = match self.rec.sacked.highest() {
                    Some(h) if new_sack && h > self.snd.una => h,
                    _ => self.snd.una,
                };
                let sample = self.rate.on_ack(now, delivered, highest);
                let (total, inflight, srtt) = (self.rate.delivered, self.flight(), self.rtt.srtt());
                self.cc.on_delivery(now, Delivery { sample, delivered, total, inflight, srtt });
            }
        }

        // Window update (RFC 9293: SND.WL1 < SEG.SEQ or (= and SND.WL2 =< SEG.ACK)).
        let seq = Seq(seg.seq);
        if self.snd.wl1 < seq || (self.snd.wl1 == seq && self.snd.wl2 <= ack) {
            if wnd > self.snd.wnd {
                self.notes.window_opened = true;
            }
            self.snd.wnd = wnd;
            self.snd.max_wnd = self.snd.max_wnd.max(wnd);
            self.snd.wl1 = seq;
            self.snd.wl2 = ack;
        }

        match self.state {
            State::FinWait1 if self.fin_acked() => {
                self.state = State::FinWait2;
                self.timers.end = Some(now + self.cfg.fin_wait2);
            }
            State::Closing if self.fin_acked() => self.enter_time_wait(now),
            State::LastAck if self.fin_acked() => {
                self.finish(End::Closed);
                return false;
            }
            _ => {}
        }
        true
    }

    /// Bytes the peer SACKed above SND.UNA.
    pub(super) fn sacked_bytes(&self) -> u32 {
        self.rec.sacked.covered(self.snd.una, self.snd.max)
    }

    /// Takes the SACK blocks of `seg`; true if any SACKed something new.
    pub(super) fn take_sack_blocks(&mut self, env: &mut Env, seg: &TcpRepr) -> bool {
        // RFC 2883: a first block below the cumulative ACK, or inside the second block,
        // reports data received twice.
        if let [Some((l, r)), second, ..] = seg.options.sack_blocks {
            let (l, r) = (Seq(l), Seq(r));
            let inside = second.is_some_and(|(l2, r2)| l >= Seq(l2) && r <= Seq(r2));
            let below = r <= Seq(seg.ack) && l >= self.snd.una - self.snd.max_wnd.max(1);
            if l < r && (below || inside) {
                self.undo_on_dsack(env, l, r.since(l));
            }
        }
        let mut news = false;
        for &(l, r) in seg.options.sack_blocks.iter().flatten() {
            let (l, r) = (Seq(l), Seq(r));
            // Only blocks inside what is outstanding (RFC 2018 leaves validation to us).
            if l < r && l >= self.snd.una && r <= self.snd.max {
                let before = self.rec.sacked.covered(l, r);
                if before < r.since(l) && self.rec.sacked.insert(l, r) {
                    news = true;
                }
            }
        }
        news
    }

    /// Data below this may have been sent more than once (HighRxt during a recovery).
    fn resent_below(&self) -> Seq {
        if self.rec.high_rxt > self.snd.una {
            self.rec.high_rxt
        } else {
            self.snd.una
        }
    }

    pub(super) fn on_new_ack(&mut self, env: &mut Env, now: Instant, ack: Seq, tsecr: Option<u32>) {
        let mut acked = ack.since(self.snd.una);
        if self.snd.una == self.snd.iss {
            acked -= 1; // the SYN
        }
        if let Some(f) = self.snd.fin_seq {
            if ack > f {
                acked -= 1; // the FIN
            }
        }
        let flight_before = self.flight();
        self.snd.una_off += u64::from(acked);
        self.notes.acked += u64::from(acked);
        self.snd.una = ack;
        if self.snd.nxt < ack {
            self.snd.nxt = ack;
        }
        self.timers.retries = 0;
        self.timers.pto = None; // restarted on new ACKs (RFC 8985 §7.2)
        self.rec.sacked.remove_below(ack);
        if self.rec.high_rxt < ack {
            self.rec.high_rxt = ack;
        }
        let mut sample = None;
        if let Some(p) = self.rtt_probe {
            if ack >= p.seq {
                sample = Some(now.since(p.sent));
                self.rtt_probe = None;
            }
        }
        if let Some(echo) = tsecr.filter(|&e| e != 0 && (e.wrapping_sub(self.ts.last_rtx) as i32) >= 0) {
            // RFC 7323 §4: the echoed timestamp names the transmission being acknowledged,
            // retransmissions included, so it gives a sample where Karn's rule gives none.
            // An echo older than the last retransmission is skipped: it comes from a peer
            // that got the original while its ACK was lost, and would count the whole
            // timeout as path delay.
            let ms = self.ts_clock(now).wrapping_sub(echo);
            if ms < 60_000 && sample.is_none() {
                sample = Some(Duration::from_millis(u64::from(ms)));
            }
        }
        if let Some(r) = sample {
            self.rtt.sample(r);
            if self.rec.point.is_none() {
                self.cc.on_rtt(r, ack.0, self.snd.max.0);
            }
        }
        self.rtt.progress();
        self.rec.dupacks = 0;
        self.undo_after_rto(env, tsecr);
        match self.rec.point {
            Some(point) if ack >= point => {
                self.rec.point = None;
                self.rec.rtx_una = false;
                if self.rec.after_rto {
                    // Slow start carried the window through the timeout's recovery; it goes on.
                    self.rec.after_rto = false;
                } else if self.cc.kind() == CcKind::Bbr {
                    self.cc.on_recovery_exit(self.flight());
                } else if self.opts.sack {
                    self.cc.set_cwnd(self.cc.ssthresh());
                } else {
                    self.cc.on_recovery_exit(self.flight());
                }
                self.undo_at_recovery_end(env, tsecr);
            }
            Some(_) if self.rec.after_rto => {
                self.cc.on_ack(acked, now, self.rtt.srtt().unwrap_or(Duration::ZERO), flight_before);
            }
            Some(_) if !self.opts.sack => {
                // NewReno partial ACK (RFC 6582 §3.2 step 3): retransmit the next hole,
                // deflate by what was acknowledged, keep one segment of the new data.
                self.rec.rtx_una = true;
                let c = self.cc.cwnd().saturating_sub(acked);
                let c = if acked >= self.snd.mss { c + self.snd.mss } else { c };
                self.cc.set_cwnd(c);
            }
            Some(_) => {}
            None => self.cc.on_ack(acked, now, self.rtt.srtt().unwrap_or(Duration::ZERO), flight_before),
        }
        // Restart the timer for what remains outstanding (RFC 6298 §5.3).
        self.timers.rtx = if self.snd.max > self.snd.una { Some(now + self.rtt.rto()) } else { None };
        if self.opts.sack && self.rec.point.is_none() && self.sack_loss() {
            self.enter_recovery(env);
        }
    }
}
