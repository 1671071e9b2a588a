//! TIME-WAIT kept apart from the live connections: a closed connection waits out 2·MSL as a
//! few dozen bytes in a table of its own instead of a whole connection in the main one, which
//! then holds only what carries data. Short connections (a web server's one request per
//! connection) leave one of these each: in the main table they took whole slots (872 bytes)
//! by the tens of thousands, and lookups of the live connections missed in cache among them.
//!
//! What TIME-WAIT still has to do is small and fixed (RFC 9293 §3.10.7.4, RFC 7323 §5,
//! RFC 5961): acknowledge a retransmitted FIN and restart the wait, acknowledge anything
//! unacceptable, drop old duplicates by their timestamps, go on an exact RST, answer other
//! RSTs and SYNs with a (rate-limited) challenge ACK, and let a clearly newer SYN reopen the
//! 4-tuple (RFC 6191). The table is consulted only when the main one misses.

use std::collections::VecDeque;

use timer::{Duration, Instant};
use wire::tcp::{TcpFlags, TcpOptions, TcpRepr};

use crate::env::Env;
use crate::seq::Seq;
use crate::timestamps::{ts_clock, PAWS_IDLE};
use crate::tuple::Tuple;
use crate::tuple_table::{TupleHash, TupleTable};

/// Timestamps of a connection in TIME-WAIT, if it negotiated them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QuietTs {
    /// TS.Recent.
    pub(crate) recent: u32,
    pub(crate) recent_at: Instant,
    /// Added to our clock in TSvals.
    pub(crate) offset: u32,
}

/// One connection in TIME-WAIT.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quiet {
    /// SND.NXT (everything, FIN included, acknowledged).
    pub(crate) snd_nxt: Seq,
    /// RCV.NXT (past the peer's FIN).
    pub(crate) rcv_nxt: Seq,
    /// The receive window still advertised, in bytes, and as the window field says it.
    pub(crate) rcv_wnd: u32,
    pub(crate) wnd_field: u16,
    pub(crate) ts: Option<QuietTs>,
    /// When it ends.
    pub(crate) until: Instant,
    /// How long a retransmitted FIN makes it wait again.
    pub(crate) wait: Duration,
}

/// What a segment to a connection in TIME-WAIT calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Nothing.
    Nothing,
    /// An ACK ([`Quiet::ack`]).
    Ack,
    /// The connection goes (an exact RST).
    Gone,
}

impl Quiet {
    /// Handles a segment with `payload_len` bytes.
    pub(crate) fn on_segment(&mut self, env: &mut Env, now: Instant, seg: &TcpRepr, payload_len: usize) -> Answer {
        let f = seg.flags;
        let rst = f.has(TcpFlags::RST);
        if let (Some(ts), Some((tsval, _)), false) = (self.ts, seg.options.timestamps, rst) {
            if (tsval.wrapping_sub(ts.recent) as i32) < 0 && now.since(ts.recent_at) < PAWS_IDLE {
                env.stats.paws_dropped += 1;
                return Answer::Ack;
            }
        }
        let seq0 = Seq(seg.seq);
        let seg_len = payload_len as u32 + u32::from(f.has(TcpFlags::SYN)) + u32::from(f.has(TcpFlags::FIN));
        let in_wnd = |s: Seq| s.in_range(self.rcv_nxt, self.rcv_nxt + self.rcv_wnd);
        let acceptable = match (seg_len, self.rcv_wnd) {
            (0, 0) => seq0 == self.rcv_nxt,
            (0, _) => in_wnd(seq0),
            (_, 0) => seq0 == self.rcv_nxt,
            _ => in_wnd(seq0) || in_wnd(seq0 + seg_len - 1),
        };
        if !acceptable {
            env.stats.out_of_window += 1;
            if rst {
                return Answer::Nothing;
            }
            // The only thing that can arrive here is a retransmission of the peer's FIN,
            // which lies below RCV.NXT: acknowledge it and wait 2·MSL again.
            if f.has(TcpFlags::FIN) {
                self.until = now + self.wait;
            }
            return Answer::Ack;
        }
        if rst {
            if seq0 == self.rcv_nxt {
                env.stats.resets_in += 1;
                return Answer::Gone;
            }
            return if env.allow_challenge(now) { Answer::Ack } else { Answer::Nothing };
        }
        if f.has(TcpFlags::SYN) {
            return if env.allow_challenge(now) { Answer::Ack } else { Answer::Nothing };
        }
        if !f.has(TcpFlags::ACK) {
            return Answer::Nothing;
        }
        if let (Some(ts), Some((tsval, _))) = (self.ts.as_mut(), seg.options.timestamps) {
            if seq0 <= self.rcv_nxt && (tsval.wrapping_sub(ts.recent) as i32) >= 0 {
                ts.recent = tsval;
                ts.recent_at = now;
            }
        }
        if f.has(TcpFlags::FIN) {
            self.until = now + self.wait;
            return Answer::Ack;
        }
        Answer::Nothing
    }

    /// True if a SYN is clearly newer than the connection that waits: a higher sequence
    /// number, or with timestamps a newer TSval (RFC 6191).
    pub(crate) fn accepts_reopen(&self, syn: &TcpRepr) -> bool {
        match (self.ts, syn.options.timestamps) {
            (Some(ts), Some((tsval, _))) => (tsval.wrapping_sub(ts.recent) as i32) > 0,
            _ => Seq(syn.seq) > self.rcv_nxt,
        }
    }

    /// The ACK it sends, at `now`, on tuple `t`.
    pub(crate) fn ack(&self, t: &Tuple, now: Instant) -> TcpRepr {
        let options =
            TcpOptions { timestamps: self.ts.map(|ts| (ts_clock(ts.offset, now), ts.recent)), ..TcpOptions::default() };
        TcpRepr {
            src_port: t.local_port,
            dst_port: t.remote_port,
            seq: self.snd_nxt.0,
            ack: self.rcv_nxt.0,
            flags: TcpFlags(TcpFlags::ACK),
            window: self.wnd_field,
            options,
            payload_len: 0,
        }
    }
}

/// The connections in TIME-WAIT, at most `max`: when full, the oldest goes early (counted by
/// the caller), as Linux does past tcp_max_tw_buckets. Lookups take the tuple's hash under
/// the endpoint's table key, computed once for this table and the connection table.
pub(crate) struct QuietTable {
    map: TupleTable,
    /// The waiting connections, dense (the map names them by position).
    records: Vec<(Tuple, TupleHash, Quiet)>,
    /// Tuples (with their hashes) in the order they entered, with the end each had then: all
    /// waits are equally long, so the front is always the next to end, unless a FIN
    /// restarted it.
    order: VecDeque<(Tuple, TupleHash, Instant)>,
    max: usize,
}

impl QuietTable {
    pub(crate) fn new(max: usize) -> Self {
        QuietTable {
            map: TupleTable::with_capacity(max),
            records: Vec::with_capacity(max),
            order: VecDeque::with_capacity(max),
            max,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The memory an entry takes when the table is full: its record, its place in the order
    /// and two map slots.
    pub(crate) fn entry_bytes() -> usize {
        std::mem::size_of::<(Tuple, TupleHash, Quiet)>()
            + std::mem::size_of::<(Tuple, TupleHash, Instant)>()
            + 2 * std::mem::size_of::<u64>()
    }

    fn find(&self, h: TupleHash, t: &Tuple) -> Option<u32> {
        self.map.get(h, |i| self.records[i as usize].0 == *t)
    }

    pub(crate) fn contains(&self, h: TupleHash, t: &Tuple) -> bool {
        self.find(h, t).is_some()
    }

    pub(crate) fn get_mut(&mut self, h: TupleHash, t: &Tuple) -> Option<&mut Quiet> {
        let i = self.find(h, t)?;
        Some(&mut self.records[i as usize].2)
    }

    /// Ends `t`'s wait, if it has one; returns whether it had. Its place in `order` is
    /// skipped when it comes up.
    pub(crate) fn remove(&mut self, h: TupleHash, t: &Tuple) -> bool {
        let Some(i) = self.find(h, t) else { return false };
        self.map.remove(h, i);
        self.records.swap_remove(i as usize);
        if let Some(&(_, moved, _)) = self.records.get(i as usize) {
            self.map.renumber(moved, self.records.len() as u32, i);
        }
        true
    }

    /// Where a lookup of `h` starts, to prefetch.
    pub(crate) fn first_slot(&self, h: TupleHash) -> *const u8 {
        self.map.first_slot(h)
    }

    /// Adds a connection; returns false if it went at once, or an older one went to make
    /// room (the table is full, or holds nothing).
    pub(crate) fn insert(&mut self, h: TupleHash, t: Tuple, q: Quiet) -> bool {
        if self.max == 0 {
            return false;
        }
        let mut room = true;
        if let Some(waiting) = self.get_mut(h, &t) {
            *waiting = q;
            self.order.push_back((t, h, q.until));
            return room;
        }
        while self.map.len() >= self.max {
            let Some((old, oh, _)) = self.order.pop_front() else { break };
            room &= !self.remove(oh, &old);
        }
        self.map.insert(h, self.records.len() as u32);
        self.records.push((t, h, q));
        self.order.push_back((t, h, q.until));
        room
    }

    /// Ends the waits that are over at `now`.
    pub(crate) fn expire(&mut self, now: Instant) {
        while let Some(&(t, h, until)) = self.order.front() {
            if until > now {
                break;
            }
            self.order.pop_front();
            match self.find(h, &t).map(|i| self.records[i as usize].2.until) {
                // Restarted by a FIN (or the tuple reopened and closed again): wait on.
                Some(until) if until > now => self.order.push_back((t, h, until)),
                Some(_) => {
                    self.remove(h, &t);
                }
                None => {}
            }
        }
    }

    /// When the next wait ends, if any.
    pub(crate) fn next_end(&self) -> Option<Instant> {
        self.order.front().map(|&(_, _, u)| u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::Ipv4Addr;

    use crate::siphash::Key;

    const T0: Instant = Instant::ZERO;
    const KEY: Key = Key([7, 9]);

    fn h(port: u16) -> TupleHash {
        TupleHash::of(KEY, &tuple(port))
    }

    fn tuple(port: u16) -> Tuple {
        Tuple {
            local: wire::IpAddr::V4(Ipv4Addr([198, 18, 0, 1])),
            remote: wire::IpAddr::V4(Ipv4Addr([198, 18, 0, 2])),
            local_port: 80,
            remote_port: port,
        }
    }

    fn quiet(ts: bool) -> Quiet {
        Quiet {
            snd_nxt: Seq(5000),
            rcv_nxt: Seq(9000),
            rcv_wnd: 65_535,
            wnd_field: 511,
            ts: ts.then_some(QuietTs { recent: 700, recent_at: T0, offset: 100 }),
            until: T0 + Duration::from_secs(60),
            wait: Duration::from_secs(60),
        }
    }

    fn seg(flags: u8, seq: u32, tsval: Option<u32>) -> TcpRepr {
        TcpRepr {
            src_port: 40000,
            dst_port: 80,
            seq,
            ack: 5000,
            flags: TcpFlags(flags),
            window: 100,
            options: TcpOptions { timestamps: tsval.map(|v| (v, 0)), ..TcpOptions::default() },
            payload_len: 0,
        }
    }

    const ACK: u8 = TcpFlags::ACK;
    const FIN: u8 = TcpFlags::FIN;
    const RST: u8 = TcpFlags::RST;
    const SYN: u8 = TcpFlags::SYN;

    #[test]
    fn a_retransmitted_fin_is_acknowledged_and_restarts_the_wait() {
        let (mut env, mut q) = (Env::new(0, 65_535, 10), quiet(true));
        let now = T0 + Duration::from_secs(30);
        assert_eq!(q.on_segment(&mut env, now, &seg(ACK | FIN, 8999, Some(800)), 0), Answer::Ack);
        assert_eq!(q.until, now + Duration::from_secs(60));
        let a = q.ack(&tuple(40000), now);
        assert_eq!((a.seq, a.ack, a.window, a.flags.has(TcpFlags::ACK)), (5000, 9000, 511, true));
        assert_eq!(a.options.timestamps, Some((30_100, 700)), "our clock plus offset, TS.Recent echoed");
        assert_eq!((a.src_port, a.dst_port), (80, 40000));
    }

    #[test]
    fn resets_end_it_only_at_the_exact_sequence_number() {
        let (mut env, mut q) = (Env::new(0, 65_535, 10), quiet(false));
        assert_eq!(q.on_segment(&mut env, T0, &seg(RST, 9100, None), 0), Answer::Ack, "challenge ACK");
        assert_eq!(q.on_segment(&mut env, T0, &seg(RST, 1, None), 0), Answer::Nothing, "outside the window");
        assert_eq!(q.on_segment(&mut env, T0, &seg(RST, 9000, None), 0), Answer::Gone);
        assert_eq!(env.stats.resets_in, 1);
    }

    #[test]
    fn old_duplicates_are_dropped_by_their_timestamps_and_syns_get_a_challenge() {
        let (mut env, mut q) = (Env::new(0, 65_535, 10), quiet(true));
        assert_eq!(q.on_segment(&mut env, T0, &seg(ACK, 9000, Some(600)), 0), Answer::Ack);
        assert_eq!(env.stats.paws_dropped, 1);
        assert_eq!(q.on_segment(&mut env, T0, &seg(ACK, 9000, Some(900)), 0), Answer::Nothing);
        assert_eq!(q.ts.unwrap().recent, 900, "TS.Recent follows acceptable segments");
        assert_eq!(q.on_segment(&mut env, T0, &seg(SYN, 9000, Some(901)), 0), Answer::Ack);
        assert_eq!(q.on_segment(&mut env, T0, &seg(0, 9000, Some(901)), 0), Answer::Nothing, "no ACK bit");
    }

    #[test]
    fn only_a_clearly_newer_syn_reopens_the_tuple() {
        let with_ts = quiet(true);
        assert!(with_ts.accepts_reopen(&seg(SYN, 1, Some(701))), "newer TSval, whatever the sequence");
        assert!(!with_ts.accepts_reopen(&seg(SYN, 20_000, Some(700))));
        let without = quiet(false);
        assert!(without.accepts_reopen(&seg(SYN, 9001, None)));
        assert!(!without.accepts_reopen(&seg(SYN, 8000, None)));
    }

    #[test]
    fn the_table_is_bounded_ends_waits_in_time_and_honours_restarts() {
        let mut t = QuietTable::new(2);
        assert!(t.insert(h(1), tuple(1), quiet(false)));
        let mut later = quiet(false);
        later.until = T0 + Duration::from_secs(61);
        assert!(t.insert(h(2), tuple(2), later));
        assert_eq!(t.next_end(), Some(T0 + Duration::from_secs(60)));
        assert!(!t.insert(h(3), tuple(3), later), "full: the oldest went");
        assert!(t.get_mut(h(1), &tuple(1)).is_none() && t.len() == 2);
        // A FIN restarted tuple 2's wait.
        t.get_mut(h(2), &tuple(2)).unwrap().until = T0 + Duration::from_secs(100);
        t.expire(T0 + Duration::from_secs(61));
        assert!(t.get_mut(h(2), &tuple(2)).is_some(), "restarted: still waiting");
        assert!(t.get_mut(h(3), &tuple(3)).is_none(), "tuple 3's wait is over");
        t.expire(T0 + Duration::from_secs(100));
        assert_eq!(t.len(), 0);
        assert_eq!(t.next_end(), None);
        let mut none = QuietTable::new(0);
        assert!(!none.insert(h(1), tuple(1), quiet(false)), "no TIME-WAIT kept at all");
        assert_eq!(none.len(), 0);
    }
}
