//! Output: the next segment to send — SYN, retransmission, new data within the windows,
//! probe or ACK — with its header, options and window.

use wire::tcp::{TcpFlags, TcpOptions, TcpRepr};

use super::{syn_options, ts_clock, Env, Reset, RttProbe, SegOut, State, Tcb};
use crate::cc::CcKind;
use crate::seq::Seq;
use timer::{Duration, Instant};

impl Tcb {
    pub(super) fn data_left(&self) -> u64 {
        let off = self.snd.una_off + u64::from(self.snd.nxt.since(self.snd.una));
        self.snd.src_end.saturating_sub(off)
    }

    pub(super) fn has_data_beyond_window(&self) -> bool {
        let usable = (self.snd.una + self.snd.wnd).since(self.snd.nxt);
        let usable = if self.snd.una + self.snd.wnd > self.snd.nxt { usable } else { 0 };
        self.data_left() > 0 && usable == 0
    }

    /// The next segment to send, if any. Call until it returns None (or the TX ring is full:
    /// whatever was not taken is offered again at the next call).
    pub fn poll(&mut self, env: &mut Env, now: Instant) -> Option<SegOut> {
        self.poll_cut(env, now, &|_| u32::MAX)
    }

    /// As [`Tcb::poll`], with no data segment crossing a boundary of the source: `cut(off)` is
    /// the most bytes a segment starting at stream offset `off` may carry. A source made of
    /// ready frames (Sandstorm) gives each frame's end, so every segment is one whole frame; a
    /// source read from disk (Atlas) gives what it holds at `off`, 0 while a read is under way,
    /// and no data is sent from there (first transmission or retransmission) until it has.
    pub fn poll_cut(&mut self, env: &mut Env, now: Instant, cut: &dyn Fn(u64) -> u32) -> Option<SegOut> {
        let out = self.next_segment(env, now, cut);
        if let Some(s) = &out {
            env.stats.segs_out += 1;
            if s.repr.flags.has(TcpFlags::RST) {
                env.stats.resets_out += 1;
            }
        }
        // Also when nothing went: data that waits on a shut window needs the probe timer.
        self.arm(now);
        out
    }

    pub(super) fn next_segment(&mut self, env: &mut Env, now: Instant, cut: &dyn Fn(u64) -> u32) -> Option<SegOut> {
        if let Some(r) = self.due.rst.take() {
            return Some(self.rst(r));
        }
        match self.state {
            State::Closed => return None,
            State::SynSent if self.snd.nxt == self.snd.iss => return Some(self.syn(now, false)),
            State::SynReceived if self.snd.nxt == self.snd.iss => return Some(self.syn(now, true)),
            State::SynSent => return None,
            State::SynReceived => return self.due.ack.then(|| self.pure_ack(now, self.snd.nxt)),
            State::TimeWait => return self.due.ack.then(|| self.pure_ack(now, self.snd.max)),
            _ => {}
        }
        // A paced sender (BBR) sends no data before its time; ACKs and probes go regardless.
        if self.timers.pace.is_none_or(|t| t <= now) {
            self.timers.pace = None;
            let data = match self.retransmission(env, now, cut) {
                Some(s) => Some(s),
                None if self.due.tail_probe => self.tail_probe(env, now, cut),
                None => None,
            };
            if let Some(s) = data.or_else(|| self.new_data(now, cut)) {
                self.paced(now, s.repr.payload_len as u32);
                return Some(s);
            }
        }
        if self.due.probe {
            self.due.probe = false;
            env.stats.probes += 1;
            // An old sequence number forces the peer to answer with its window (RFC 9293
            // §3.8.6.1 allows a probe without data; Linux sends this one).
            return Some(self.pure_ack(now, self.snd.una - 1));
        }
        if self.due.ack {
            // SND.MAX, not SND.NXT: after a timeout SND.NXT goes back, and an ACK numbered
            // below what the peer already received would be dropped as a duplicate.
            return Some(self.pure_ack(now, self.snd.max));
        }
        None
    }

    pub(super) fn rst(&self, Reset { seq, ack }: Reset) -> SegOut {
        let mut flags = TcpFlags::RST;
        if ack.is_some() {
            flags |= TcpFlags::ACK;
        }
        SegOut {
            repr: TcpRepr {
                src_port: self.tuple.local_port,
                dst_port: self.tuple.remote_port,
                seq: seq.0,
                ack: ack.map_or(0, |a| a.0),
                flags: TcpFlags(flags),
                window: 0,
                options: TcpOptions::default(),
                payload_len: 0,
            },
            data_off: 0,
        }
    }

    pub(super) fn syn(&mut self, now: Instant, ack: bool) -> SegOut {
        let ts = Some((self.ts_clock(now), if ack { self.ts.recent } else { 0 }));
        let options = if ack {
            let peer = TcpOptions {
                window_scale: self.opts.wscale.then_some(self.snd.wscale),
                sack_permitted: self.opts.sack,
                timestamps: self.opts.ts.then_some((0, 0)),
                ..TcpOptions::default()
            };
            syn_options(&self.cfg, Some(&peer), ts)
        } else {
            syn_options(&self.cfg, None, ts)
        };
        let window = self.rcv_wnd_for_syn() as u16;
        if ack {
            self.rcv.adv = self.rcv.nxt + u32::from(window);
            self.rcv.last_ack_sent = self.rcv.nxt;
        }
        self.snd.nxt = self.snd.iss + 1;
        self.snd.max = self.snd.max.max(self.snd.nxt);
        if self.timers.rtx.is_none() {
            self.timers.rtx = Some(now + self.rtt.rto());
        }
        if self.timers.retries == 0 && self.rtt_probe.is_none() {
            self.rtt_probe = Some(RttProbe { seq: self.snd.iss + 1, sent: now });
        } else if self.timers.retries > 0 {
            self.rtt_probe = None;
        }
        SegOut {
            repr: TcpRepr {
                src_port: self.tuple.local_port,
                dst_port: self.tuple.remote_port,
                seq: self.snd.iss.0,
                ack: if ack { self.rcv.nxt.0 } else { 0 },
                flags: TcpFlags(if ack { TcpFlags::SYN | TcpFlags::ACK } else { TcpFlags::SYN }),
                window,
                options,
                payload_len: 0,
            },
            data_off: 0,
        }
    }

    pub(super) fn ts_clock(&self, now: Instant) -> u32 {
        ts_clock(self.ts.offset, now)
    }

    /// A header with ACK, window, timestamps and SACK blocks; records that an ACK went out.
    pub(super) fn header(&mut self, now: Instant, seq: Seq, flags: u8, len: u32) -> TcpRepr {
        let mut options = TcpOptions::default();
        if self.opts.ts {
            options.timestamps = Some((self.ts_clock(now), self.ts.recent));
        }
        let room = self.sack_blocks();
        if room > 0 {
            let mut blocks = [(0u32, 0u32); 4];
            let first = match self.rcv.dsack.take() {
                Some((l, r)) => {
                    blocks[0] = (l.0, r.0);
                    1
                }
                None => 0,
            };
            let n = first + self.rcv.ooo.ranges().recent_first(&mut blocks[first..room]);
            for (o, b) in options.sack_blocks.iter_mut().zip(&blocks[..n]) {
                *o = Some(*b);
            }
        }
        let window = self.window_field();
        self.rcv.last_ack_sent = self.rcv.nxt;
        self.due.ack = false;
        self.timers.delack = None;
        self.rcv.unacked = 0;
        TcpRepr {
            src_port: self.tuple.local_port,
            dst_port: self.tuple.remote_port,
            seq: seq.0,
            ack: self.rcv.nxt.0,
            flags: TcpFlags(flags | TcpFlags::ACK),
            window,
            options,
            payload_len: len as usize,
        }
    }

    pub(super) fn sack_blocks(&self) -> usize {
        if !self.opts.sack {
            return 0;
        }
        let n = self.rcv.ooo.ranges().as_slice().len() + usize::from(self.rcv.dsack.is_some());
        n.min(if self.opts.ts { 3 } else { 4 })
    }

    pub(super) fn sack_option_len(&self) -> u32 {
        match self.sack_blocks() {
            0 => 0,
            n => 4 + 8 * n as u32,
        }
    }

    pub(super) fn pure_ack(&mut self, now: Instant, seq: Seq) -> SegOut {
        SegOut { repr: self.header(now, seq, 0, 0), data_off: 0 }
    }

    /// A segment of data (and FIN) starting at `seq` ≥ SND.UNA, at most `max` data bytes.
    pub(super) fn data_segment(
        &mut self,
        now: Instant,
        seq: Seq,
        max: u32,
        rtx: bool,
        cut: &dyn Fn(u64) -> u32,
    ) -> Option<SegOut> {
        let off = self.snd.una_off + u64::from(seq.since(self.snd.una));
        let avail = self.snd.src_end.saturating_sub(off);
        // SACK blocks take room from the payload so the packet still fits the MSS. A cut of 0
        // means the source has no bytes at `off` yet (a disk read is under way): no data.
        let max = max.min(self.snd.mss.saturating_sub(self.sack_option_len()).max(1)).min(cut(off));
        let len = u64::from(max).min(avail) as u32;
        let fin = self.snd.closing && off + u64::from(len) == self.snd.src_end;
        if len == 0 && !fin {
            return None;
        }
        let end = seq + len + u32::from(fin);
        if fin {
            self.snd.fin_seq = Some(seq + len);
        }
        if self.rec.point.is_some() {
            self.rec.prr.out = self.rec.prr.out.saturating_add(len);
        }
        if seq < self.snd.max {
            if self.opts.sack && len > 0 {
                self.rec.log.record(seq, seq + len, self.snd.max, now, self.snd.una);
            }
            self.ts.last_rtx = self.ts_clock(now);
            self.undo_on_retransmit(now);
            if let Some(p) = self.rtt_probe {
                if seq < p.seq {
                    self.rtt_probe = None; // Karn: no sample from a retransmitted range
                }
            }
        } else if self.rtt_probe.is_none() {
            self.rtt_probe = Some(RttProbe { seq: end, sent: now });
        }
        if seq >= self.snd.max && len > 0 && self.cc.kind() == CcKind::Bbr {
            let inflight = self.flight();
            let spacing = self.snd.mss.max(self.cc.cwnd() / 32);
            self.rate.on_send(end, now, inflight, spacing);
        }
        if !rtx {
            self.snd.nxt = end;
            self.timers.pto = None; // restarted after new data (RFC 8985 §7.2)
        }
        self.snd.max = self.snd.max.max(end);
        if self.timers.rtx.is_none() {
            self.timers.rtx = Some(now + self.rtt.rto());
        }
        let psh = if off + u64::from(len) == self.snd.src_end && len > 0 { TcpFlags::PSH } else { 0 };
        let flags = psh | if fin { TcpFlags::FIN } else { 0 };
        Some(SegOut { repr: self.header(now, seq, flags, len), data_off: off })
    }

    /// After a data segment of `len` bytes: the next may leave `len` / rate later. The clock
    /// may fall up to a millisecond behind (the timer wheel's tick): that much is sent in a
    /// burst when the timer fires, and no more.
    fn paced(&mut self, now: Instant, len: u32) {
        let Some(rate) = self.pacing_rate() else { return };
        let gap = Duration::from_nanos((f64::from(len.max(1)) / rate * 1e9) as u64);
        let floor = now.saturating_sub(Duration::from_millis(1));
        let base = self.rec.pace_at.filter(|&t| t > floor).unwrap_or(floor);
        let next = base + gap;
        self.rec.pace_at = Some(next);
        if next > now {
            self.timers.pace = Some(next);
        }
    }

    /// Bytes per second: BBR's own rate, or for a loss-based sender with pacing on, the
    /// window per smoothed RTT, doubled in slow start (so it can double each round) and 1.2
    /// times in avoidance (so ACK compression does not hold it back), as Linux paces.
    fn pacing_rate(&self) -> Option<f64> {
        if self.cc.kind() == CcKind::Bbr {
            return self.cc.pacing_rate();
        }
        if !self.cfg.pacing {
            return None;
        }
        let srtt = self.rtt.srtt()?.as_secs_f64().max(1e-5);
        let cwnd = f64::from(self.cc.cwnd());
        let factor = if self.cc.cwnd() < self.cc.ssthresh() / 2 { 2.0 } else { 1.2 };
        Some(factor * cwnd / srtt)
    }

    pub(super) fn usable_window(&self) -> u32 {
        let edge = self.snd.una + self.snd.wnd;
        if edge > self.snd.nxt {
            edge.since(self.snd.nxt)
        } else {
            0
        }
    }

    pub(super) fn new_data(&mut self, now: Instant, cut: &dyn Fn(u64) -> u32) -> Option<SegOut> {
        let left = self.data_left();
        let fin_due = self.snd.closing && self.snd.fin_seq.is_none_or(|f| self.snd.nxt <= f);
        if left == 0 && !fin_due {
            if self.cc.kind() == CcKind::Bbr && self.rec.point.is_none() {
                // Nothing to send with the window open: what is measured now is the
                // application's pace, not the path's.
                let inflight = self.flight();
                if inflight < self.cc.cwnd() {
                    self.rate.set_app_limited(inflight);
                }
            }
            return None;
        }
        let flight = self.flight();
        let cwnd_room = self.cc.cwnd().saturating_sub(flight);
        let room = self.usable_window().min(cwnd_room);
        let off = self.snd.una_off + u64::from(self.snd.nxt.since(self.snd.una));
        // A full segment is an MSS, or less where the source has a boundary (0: nothing
        // there yet; the application kicks the connection when there is).
        let full = self.snd.mss.min(cut(off));
        let len = u64::from(room.min(full)).min(left) as u32;
        if left > 0 && len == 0 {
            return None;
        }
        // Sender SWS avoidance (RFC 9293 §3.8.6.2.1): a short segment only if it is all we
        // have, or half the peer's largest window, or nothing else is in flight.
        if len < full && u64::from(len) < left && len < self.snd.max_wnd / 2 && flight > 0 {
            return None;
        }
        let seq = self.snd.nxt;
        let rtx = false;
        let s = self.data_segment(now, seq, len, rtx, cut)?;
        Some(s)
    }
}
