//! One host's TCP: listeners, the connection table (a hash of the 4-tuple into a preallocated
//! slab), the SYN backlog with SYN cookies when it is full, TIME-WAIT limits, timers on a
//! wheel, and the level-1 application interface (callbacks in the style of Sandstorm's
//! tcp_accept / tcp_recv / tcp_sent / tcp_write / tcp_close).
//!
//! Still sans-IO: segments come in through [`Endpoint::input`], time through
//! [`Endpoint::advance`], and segments leave through an [`Output`] the caller provides, which
//! stands for free slots of the TX ring. Nothing is built unless a slot is free; a connection
//! that could not send stays queued for the next [`Endpoint::output`].

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use timer::{TimerId, TimerWheel};
use wire::tcp::{TcpFlags, TcpOptions, TcpRepr};
use wire::IpAddr;

pub use crate::api::{App, Ctl, Gather, Handle, Output, PinnedFrames, Placed, Source, MAX_RUNS};
use crate::config::Config;
use crate::env::Env;
use crate::isn;
use crate::seq::Seq;
use crate::siphash::Key;
use crate::stats::Stats;
use crate::tcb::{SegOut, State, Tcb};
use crate::time_wait::{Answer, QuietTable};
use crate::timestamps::ts_clock;
use crate::tuple::Tuple;
use crate::tuple_table::{TupleHash, TupleTable};
use timer::{Duration, Instant};

/// Limits and secrets of an endpoint.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections in the table (all states).
    pub max_conns: usize,
    /// Half-open connections per listener; beyond it SYNs are answered with cookies.
    pub syn_backlog: u32,
    /// Connections in TIME-WAIT; beyond it new ones close at once.
    pub max_time_wait: usize,
    /// Reassembly buffers shared by all connections.
    pub ooo_buffers: usize,
    /// Largest receive window any connection uses (sizes the reassembly buffers).
    pub max_rcv_buf: u32,
    /// Challenge ACKs per second (RFC 5961 §7).
    pub challenge_per_sec: u32,
    /// Ephemeral ports for active opens.
    pub ephemeral: (u16, u16),
    /// Key for ISNs, cookies and the table hash.
    pub secret: [u64; 2],
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_conns: 65_536,
            syn_backlog: 1024,
            max_time_wait: 32_768,
            ooo_buffers: 64,
            max_rcv_buf: 256 * 1024,
            challenge_per_sec: 1000,
            ephemeral: (32_768, 60_999),
            secret: [0x5eed_0000_0000_0001, 0x5eed_0000_0000_0002],
        }
    }
}

impl Limits {
    /// These limits for a table of `max_conns` connections: TIME-WAIT kept for up to half as
    /// many (as Linux sizes tcp_max_tw_buckets from its established table), never fewer than
    /// here, so that a server closing most of its connections at once still waits them out.
    /// The TIME-WAIT table's memory is only touched as it fills.
    pub fn for_conns(self, max_conns: usize) -> Limits {
        Limits { max_conns, max_time_wait: self.max_time_wait.max(max_conns / 2), ..self }
    }
}

/// Why an active open could not start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectError {
    /// The connection table is full.
    TableFull,
    /// No ephemeral port is free for this destination.
    NoPort,
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ConnectError::TableFull => "the connection table is full",
            ConnectError::NoPort => "no ephemeral port is free for this destination",
        })
    }
}

impl std::error::Error for ConnectError {}

struct Listener {
    /// The configuration for IPv4 connections and for IPv6 ones ([`Config::for_ipv6`]),
    /// shared by the connections accepted.
    cfg: [Arc<Config>; 2],
    half_open: u32,
}

struct Slot<C> {
    tcb: Option<Tcb>,
    conn: Option<C>,
    gen: u32,
    timer: Option<(TimerId, u64)>,
    /// When the application asked to be woken ([`Ctl::wake_at`]).
    wake: Option<Instant>,
    queued: bool,
    half_open: bool,
    accepted: bool,
}

/// Hashes kept from the engine's hints: it names the frame two ahead of the one it processes.
const HINTED: usize = 4;

/// Replies sent without a connection (RSTs, cookie SYN-ACKs) wait here, headers only, until
/// the next [`Endpoint::output`]; beyond this many they are dropped (and counted).
const STATELESS: usize = 256;

/// How long after the last cookie an ACK for no connection is dropped instead of reset (two
/// cookie lifetimes).
const COOKIE_QUIET: Duration = Duration::from_secs(128);

/// The earlier of two optional times.
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Timer ticks are milliseconds: a deadline's tick is the first at or after it.
fn tick(t: Instant) -> u64 {
    t.as_nanos().div_ceil(1_000_000)
}

/// A TCP endpoint: all connections of one engine.
pub struct Endpoint<A: App> {
    limits: Limits,
    key: Key,
    env: Env,
    listeners: HashMap<u16, Listener>,
    /// The key of both tables' hashes (not the ISN key).
    table_key: Key,
    /// Hashes computed for [`Endpoint::lookup_hints`], kept for the input of the same frames
    /// a moment later, so a frame's tuple is hashed once.
    hinted: [Cell<Option<(Tuple, TupleHash)>>; HINTED],
    hinted_next: Cell<usize>,
    /// Live connections by tuple: the slot holding each.
    table: TupleTable,
    /// Connections in TIME-WAIT, apart (see [`crate::time_wait`]).
    quiet: QuietTable,
    /// The time of the input or timer run under way (a connection entering TIME-WAIT owes
    /// its last ACK, timestamped then).
    clock: Instant,
    slots: Vec<Slot<A::Conn>>,
    free: Vec<u32>,
    wheel: TimerWheel<(u32, u32)>,
    fired: Vec<(u32, u32)>,
    queue: VecDeque<(u32, u32)>,
    stateless: VecDeque<(Tuple, TcpRepr)>,
    last_cookie: Option<Instant>,
    next_port: u16,
    /// Segments of no connection here are left to the engine (another engine may hold the
    /// connection) rather than answered with a reset.
    forward_strays: bool,
    /// The last segment given to `input` was such a stray.
    stray: bool,
    /// A connection that paces its segments (BBR) was opened here: its timers must be met on
    /// time, so the engine asks for the next deadline before it sleeps.
    paces: bool,
}

impl<A: App> Endpoint<A> {
    /// An endpoint with everything preallocated for `limits.max_conns` connections.
    pub fn new(limits: Limits, now: Instant) -> Self {
        let key = Key(limits.secret);
        let n = limits.max_conns;
        Endpoint {
            limits,
            key,
            env: Env::new(limits.ooo_buffers, limits.max_rcv_buf, limits.challenge_per_sec),
            listeners: HashMap::new(),
            table_key: Key([key.0[1], key.0[0]]),
            hinted: Default::default(),
            hinted_next: Cell::new(0),
            table: TupleTable::with_capacity(n),
            quiet: QuietTable::new(limits.max_time_wait),
            clock: now,
            slots: Vec::with_capacity(n),
            free: Vec::with_capacity(n),
            wheel: TimerWheel::new(4096, n + 16, tick(now)),
            fired: Vec::with_capacity(n),
            queue: VecDeque::with_capacity(n),
            stateless: VecDeque::with_capacity(STATELESS),
            last_cookie: None,
            // Start somewhere in the range chosen by the secret, so a new run (with a new
            // secret) does not begin on the ports the last one left in TIME-WAIT at peers.
            next_port: {
                let (lo, hi) = limits.ephemeral;
                let span = u64::from(hi.saturating_sub(lo)) + 1;
                lo + ((limits.secret[0] ^ limits.secret[1]) % span) as u16
            },
            forward_strays: false,
            stray: false,
            paces: false,
        }
    }

    /// The memory one connection holds in an endpoint sized for it, idle: its slot (the
    /// control block and the application's state), its timer's room, up to four tuple-table
    /// entries (the table is twice `max_conns` rounded up to a power of two) and its places in
    /// the free list and queues, and its share of the TIME-WAIT table ([`Limits::for_conns`]:
    /// an entry per two connections). What a busy connection borrows beyond that (reassembly,
    /// SACK scoreboard, send buffers) comes from pools sized apart. For sizing `max_conns`
    /// from a memory budget.
    pub fn bytes_per_connection() -> usize {
        std::mem::size_of::<Slot<A::Conn>>()
            + TimerWheel::<(u32, u32)>::node_bytes()
            + 4 * 8
            + std::mem::size_of::<u32>()
            + 2 * std::mem::size_of::<(u32, u32)>()
            + QuietTable::entry_bytes() / 2
    }

    /// Counters.
    pub fn stats(&self) -> &Stats {
        &self.env.stats
    }

    /// Connections in the table (every state but TIME-WAIT, which is kept apart).
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True when no connection exists (TIME-WAIT aside).
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Connections in TIME-WAIT.
    pub fn time_wait(&self) -> usize {
        self.quiet.len()
    }

    /// Timers scheduled on the wheel.
    pub fn timers(&self) -> usize {
        self.wheel.len()
    }

    /// The limits it was made with.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Reassembly buffers lent out.
    pub fn ooo_in_use(&self) -> usize {
        self.env.pool.total() - self.env.pool.available()
    }

    /// Listens on `port` with `cfg` for the connections it accepts. Replaces an older listener.
    pub fn listen(&mut self, port: u16, cfg: Config) {
        let half_open = self.listeners.get(&port).map_or(0, |l| l.half_open);
        let cfg = [Arc::new(cfg), Arc::new(cfg.for_ipv6())];
        self.listeners.insert(port, Listener { cfg, half_open });
    }

    /// Stops listening (existing connections stay).
    pub fn unlisten(&mut self, port: u16) {
        self.listeners.remove(&port);
    }

    /// The connection behind a handle, if it is still alive.
    pub fn tcb(&self, h: Handle) -> Option<&Tcb> {
        self.slots.get(h.idx as usize).filter(|s| s.gen == h.gen).and_then(|s| s.tcb.as_ref())
    }

    /// The application state of a connection (to push more into its source, say; then call
    /// [`kick`](Self::kick)).
    pub fn conn_mut(&mut self, h: Handle) -> Option<&mut A::Conn> {
        self.slots.get_mut(h.idx as usize).filter(|s| s.gen == h.gen).and_then(|s| s.conn.as_mut())
    }

    /// The application state of a connection, if it is still alive.
    pub fn conn(&self, h: Handle) -> Option<&A::Conn> {
        self.slots.get(h.idx as usize).filter(|s| s.gen == h.gen).and_then(|s| s.conn.as_ref())
    }

    /// Handles of the connections the application holds (for a periodic sweep: idle and
    /// header timeouts). Allocates; not for the per-packet path.
    pub fn handles(&self) -> Vec<Handle> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.conn.is_some())
            .map(|(i, s)| Handle { idx: i as u32, gen: s.gen })
            .collect()
    }

    /// Re-reads the connection's source and queues it for output.
    pub fn kick(&mut self, h: Handle) {
        self.with_tcb(h, |_, _| {});
    }

    /// The application is done with `n` received bytes.
    pub fn recv_done(&mut self, h: Handle, n: u32) {
        self.with_tcb(h, |t, _| t.recv_done(n));
    }

    /// Half-closes once the source is sent.
    pub fn close(&mut self, h: Handle) {
        self.with_tcb(h, |t, _| t.close());
    }

    /// Resets the connection. Its state is handed back through `App::closed`.
    pub fn abort(&mut self, app: &mut A, h: Handle) {
        if self.with_tcb(h, |t, _| t.abort()) {
            self.after(app, h.idx);
        }
    }

    fn with_tcb(&mut self, h: Handle, f: impl FnOnce(&mut Tcb, &mut Env)) -> bool {
        let Some(slot) = self.slots.get_mut(h.idx as usize).filter(|s| s.gen == h.gen) else {
            return false;
        };
        let Some(tcb) = slot.tcb.as_mut() else {
            return false;
        };
        if let Some(c) = &slot.conn {
            tcb.set_source_end(c.end());
        }
        f(tcb, &mut self.env);
        self.queue_output(h.idx);
        self.sync_timer(h.idx);
        true
    }

    /// The addresses where the lookups of a segment from `remote:remote_port` to
    /// `local:local_port` start (the connection table's, then TIME-WAIT's), for the caller to
    /// prefetch while it processes the frames before that segment.
    pub fn lookup_hints(&self, local: IpAddr, remote: IpAddr, local_port: u16, remote_port: u16) -> [*const u8; 2] {
        let t = Tuple { local, remote, local_port, remote_port };
        let h = self.hash(&t);
        let i = self.hinted_next.get();
        self.hinted[i].set(Some((t, h)));
        self.hinted_next.set((i + 1) % HINTED);
        [self.table.first_slot(h), self.quiet.first_slot(h)]
    }

    /// The slot of the live connection on `t` (of hash `h`), if any.
    fn slot_of(&self, h: TupleHash, t: &Tuple) -> Option<u32> {
        let slots = &self.slots;
        self.table.get(h, |i| slots[i as usize].tcb.as_ref().is_some_and(|c| c.tuple() == t))
    }

    fn hash(&self, t: &Tuple) -> TupleHash {
        TupleHash::of(self.table_key, t)
    }

    /// The hash of a received segment's tuple: from the hints when they named it.
    fn input_hash(&self, t: &Tuple) -> TupleHash {
        for c in &self.hinted {
            if let Some((ht, h)) = c.get() {
                if ht == *t {
                    return h;
                }
            }
        }
        self.hash(t)
    }

    /// Smaller path MTU learned for a destination (ICMP "fragmentation needed").
    pub fn path_mtu(&mut self, local: IpAddr, remote: IpAddr, local_port: u16, remote_port: u16, mtu: u16) {
        let t = Tuple { local, remote, local_port, remote_port };
        if let Some(i) = self.slot_of(self.hash(&t), &t) {
            if let Some(tcb) = self.slots[i as usize].tcb.as_mut() {
                tcb.set_path_mtu(mtu);
                self.queue_output(i);
            }
        }
    }

    // ---- slots -----------------------------------------------------------------------------

    fn alloc(&mut self, t: Tuple, tcb: Tcb, conn: Option<A::Conn>) -> Option<u32> {
        if self.table.len() >= self.limits.max_conns {
            return None;
        }
        self.paces |= tcb.paces();
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot {
                    tcb: None,
                    conn: None,
                    gen: 0,
                    timer: None,
                    wake: None,
                    queued: false,
                    half_open: false,
                    accepted: false,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let s = &mut self.slots[idx as usize];
        s.accepted = conn.is_some();
        s.tcb = Some(tcb);
        s.conn = conn;
        s.half_open = false;
        s.wake = None;
        self.table.insert(self.hash(&t), idx);
        Some(idx)
    }

    fn free_slot(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        let Some(mut tcb) = s.tcb.take() else {
            return;
        };
        tcb.release(&mut self.env);
        if let Some((id, _)) = s.timer.take() {
            self.wheel.cancel(id);
        }
        if s.half_open {
            s.half_open = false;
            if let Some(l) = self.listeners.get_mut(&tcb.tuple().local_port) {
                l.half_open = l.half_open.saturating_sub(1);
            }
        }
        s.gen = s.gen.wrapping_add(1);
        // An entry it may still have in the output queue is stale now (skipped by its
        // generation); the slot's next connection must be able to queue itself.
        s.queued = false;
        s.conn = None;
        self.table.remove(self.hash(tcb.tuple()), idx);
        self.free.push(idx);
    }

    fn queue_output(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        if !s.queued && s.tcb.as_ref().is_some_and(|t| t.wants_output()) {
            s.queued = true;
            self.queue.push_back((idx, s.gen));
        }
    }

    fn sync_timer(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        let Some(tcb) = s.tcb.as_ref() else {
            return;
        };
        let want = earliest(tcb.deadline(), s.wake).map(tick);
        match (s.timer, want) {
            (Some((id, _)), None) => {
                self.wheel.cancel(id);
                s.timer = None;
            }
            (Some((id, at)), Some(w)) if w < at => {
                self.wheel.cancel(id);
                s.timer = self.wheel.schedule(w, (idx, s.gen)).map(|id| (id, w));
            }
            (None, Some(w)) => s.timer = self.wheel.schedule(w, (idx, s.gen)).map(|id| (id, w)),
            _ => {}
        }
    }

    /// Passes a connection's notes to the application, applies what it asked, and queues
    /// output, reschedules the timer or frees the slot.
    fn after(&mut self, app: &mut A, idx: u32) {
        let gen = self.slots[idx as usize].gen;
        let h = Handle { idx, gen };
        let Some(tcb) = self.slots[idx as usize].tcb.as_mut() else {
            return;
        };
        let notes = tcb.take_notes();
        let mut ctl = Ctl::default();
        if notes.established {
            let s = &mut self.slots[idx as usize];
            if s.half_open {
                s.half_open = false;
                let port = s.tcb.as_ref().map_or(0, |t| t.tuple().local_port);
                if let Some(l) = self.listeners.get_mut(&port) {
                    l.half_open = l.half_open.saturating_sub(1);
                }
            }
            let passive = s.tcb.as_ref().is_some_and(|t| t.is_passive());
            if passive && !s.accepted {
                Self::accept_into(app, h, s);
                if s.conn.is_none() {
                    ctl.abort();
                }
            }
            match (passive, s.conn.as_mut()) {
                (true, Some(c)) => app.opened(h, c, &mut ctl),
                (false, Some(c)) => app.connected(h, c, &mut ctl),
                _ => {}
            }
        }
        let s = &mut self.slots[idx as usize];
        let tcb = s.tcb.as_mut().expect("checked above");
        if let Some(c) = s.conn.as_mut() {
            if notes.acked > 0 || notes.window_opened {
                c.release(tcb.acked_offset());
                app.sent(h, c, tcb.acked_offset(), &mut ctl);
            }
            if notes.peer_fin {
                app.peer_closed(h, c, &mut ctl);
            }
        }
        s.wake = earliest(s.wake, ctl.wake);
        Self::apply(tcb, s.conn.as_ref(), ctl);
        let tcb = s.tcb.as_mut().expect("checked above");
        let end = tcb.take_notes().end.or(notes.end);
        if let Some(end) = end {
            if let Some(c) = s.conn.take() {
                app.closed(h, c, end);
            }
        }
        let state = tcb.state();
        if state == State::TimeWait {
            // Out of the table into the TIME-WAIT one, with the ACK it may owe (of the
            // peer's FIN): nothing else is left to send once our FIN is acknowledged.
            let (t, q, owes_ack) = (*tcb.tuple(), tcb.quiet(), tcb.wants_output());
            self.free_slot(idx);
            if owes_ack {
                let ack = q.ack(&t, self.clock);
                self.send_stateless(&t, ack);
            }
            if !self.quiet.insert(self.hash(&t), t, q) {
                self.env.stats.time_wait_recycled += 1;
            }
            return;
        }
        if state == State::Closed && !tcb.wants_output() {
            self.free_slot(idx);
            return;
        }
        self.queue_output(idx);
        self.sync_timer(idx);
    }

    fn accept_into(app: &mut A, h: Handle, s: &mut Slot<A::Conn>) {
        s.accepted = true;
        let t = *s.tcb.as_ref().expect("live slot").tuple();
        s.conn = app.accept(h, t.local_port, (t.remote, t.remote_port));
    }

    fn apply(tcb: &mut Tcb, conn: Option<&A::Conn>, ctl: Ctl) {
        if let Some(c) = conn {
            tcb.set_source_end(c.end());
        }
        if ctl.done > 0 {
            tcb.recv_done(ctl.done);
        }
        if ctl.abort {
            tcb.abort();
        } else if ctl.close {
            tcb.close();
        }
    }

    // ---- input -----------------------------------------------------------------------------

    /// True if connection `idx` is a passive half-open one that `seg` (an ACK) does not
    /// complete.
    fn twin_half_open(&self, idx: u32, seg: &TcpRepr) -> bool {
        let f = seg.flags;
        let Some(tcb) = self.slots[idx as usize].tcb.as_ref() else { return false };
        tcb.state() == State::SynReceived
            && tcb.is_passive()
            && f.has(TcpFlags::ACK)
            && !f.has(TcpFlags::SYN)
            && !f.has(TcpFlags::RST)
            && seg.ack != tcb.numbers().snd_nxt.0
    }

    /// With `on`, a segment of no connection here (other than a SYN) is not answered but
    /// left to the caller ([`Endpoint::take_stray`]): with several engines, the one whose
    /// queue received it may not be the one holding its connection.
    pub fn set_forward_strays(&mut self, on: bool) {
        self.forward_strays = on;
    }

    /// True if the last segment given to [`Endpoint::input`] was left to the caller.
    pub fn take_stray(&mut self) -> bool {
        std::mem::take(&mut self.stray)
    }

    /// Takes one segment (checksum already verified) from `remote` to `local`. Data goes to
    /// the application as views of `payload`; whatever is to be sent goes out at the next
    /// [`output`](Self::output).
    pub fn input(&mut self, app: &mut A, now: Instant, remote: IpAddr, local: IpAddr, seg: &TcpRepr, payload: &[u8]) {
        self.env.stats.segs_in += 1;
        self.stray = false;
        self.clock = now;
        let t = Tuple { local, remote, local_port: seg.dst_port, remote_port: seg.src_port };
        let f = seg.flags;
        let h = self.input_hash(&t);
        if let Some(idx) = self.slot_of(h, &t) {
            if self.forward_strays && self.twin_half_open(idx, seg) {
                // The client's SYN was retransmitted after it moved queue (Linux rehashes a
                // socket after a SYN timeout too): this engine opened a second, half-open
                // connection for a tuple another engine holds, and the client's ACK is for
                // the other one's SYN-ACK. The twin goes, quietly; the segment goes on to
                // its connection (the last engine round resets it, as RFC 9293 asks, if no
                // engine holds one).
                self.free_slot(idx);
                self.stray = true;
                self.env.stats.strays += 1;
                return;
            }
            self.segment_to(app, idx, now, seg, payload);
            return;
        }
        if let Some(q) = self.quiet.get_mut(h, &t) {
            // A new SYN with a higher sequence number (or newer timestamp) reopens the tuple
            // (RFC 9293 §3.10.7.4, RFC 6191); anything else is TIME-WAIT's to answer.
            if !(f.has(TcpFlags::SYN) && !f.has(TcpFlags::ACK) && q.accepts_reopen(seg)) {
                match q.on_segment(&mut self.env, now, seg, payload.len()) {
                    Answer::Ack => {
                        let ack = q.ack(&t, now);
                        self.send_stateless(&t, ack);
                    }
                    Answer::Gone => {
                        self.quiet.remove(h, &t);
                    }
                    Answer::Nothing => {}
                }
                return;
            }
            self.quiet.remove(h, &t);
        }
        // A segment of a connection that may be another engine's: left to the engine, which
        // hands it on. A SYN opens a connection here.
        let opens = f.has(TcpFlags::SYN) && !f.has(TcpFlags::ACK);
        if self.forward_strays && !opens {
            self.stray = true;
            self.env.stats.strays += 1;
            return;
        }
        if f.has(TcpFlags::RST) {
            return;
        }
        let Some(listener) = self.listeners.get(&t.local_port) else {
            self.env.stats.no_connection += 1;
            self.reset_reply(&t, seg, payload.len());
            return;
        };
        let cfg = listener.cfg[usize::from(t.is_ipv6())].clone();
        let half_open = listener.half_open;
        if f.has(TcpFlags::SYN) && !f.has(TcpFlags::ACK) {
            if self.table.len() >= self.limits.max_conns {
                // Refused at once, so the client learns it now instead of retrying its SYN for
                // a minute; the connections already open are not touched.
                self.env.stats.table_full += 1;
                self.reset_reply(&t, seg, payload.len());
                return;
            }
            if half_open >= self.limits.syn_backlog {
                self.cookie_reply(&t, &cfg, seg, now);
                return;
            }
            let tcb = Tcb::accept(t, cfg, isn::isn(self.key, &t, now), isn::ts_offset(self.key, &t), now, seg);
            if let Some(idx) = self.alloc(t, tcb, None) {
                self.slots[idx as usize].half_open = true;
                if let Some(l) = self.listeners.get_mut(&t.local_port) {
                    l.half_open += 1;
                }
                self.queue_output(idx);
                self.sync_timer(idx);
            }
            return;
        }
        if f.has(TcpFlags::ACK) && !f.has(TcpFlags::SYN) {
            if let Some(mss) = isn::check_cookie(self.key, &t, seg.seq, seg.ack, now) {
                let syn = isn::CookieSyn::recall(mss, seg.options.timestamps.map(|t| t.1));
                let iss = Seq(seg.ack.wrapping_sub(1));
                let tcb = Tcb::from_cookie(t, cfg, iss, isn::ts_offset(self.key, &t), now, seg, syn);
                if let Some(idx) = self.alloc(t, tcb, None) {
                    self.env.stats.cookies_accepted += 1;
                    self.env.stats.established += 1;
                    self.after(app, idx);
                    if self.slots[idx as usize].tcb.is_some() {
                        self.segment_to(app, idx, now, seg, payload);
                    }
                } else {
                    self.env.stats.table_full += 1;
                }
                return;
            }
            // While cookies are out, an ACK that does not validate may be a later segment of
            // a cookie connection whose first ACK was lost (only SEQ = ISN + 1 carries the
            // proof): drop it quietly, the peer resends from ISN + 1. A reset would kill it.
            if self.last_cookie.is_some_and(|t| now.since(t) < COOKIE_QUIET) {
                self.env.stats.cookies_invalid += 1;
                return;
            }
        }
        self.env.stats.no_connection += 1;
        self.reset_reply(&t, seg, payload.len());
    }

    fn segment_to(&mut self, app: &mut A, idx: u32, now: Instant, seg: &TcpRepr, payload: &[u8]) {
        let gen = self.slots[idx as usize].gen;
        let h = Handle { idx, gen };
        let s = &mut self.slots[idx as usize];
        let Some(tcb) = s.tcb.as_mut() else {
            return;
        };
        let mut ctl = Ctl::default();
        let mut pending_accept = !s.accepted;
        let mut refused = false;
        let conn = &mut s.conn;
        let accepted = &mut s.accepted;
        let t = *tcb.tuple();
        tcb.on_segment(&mut self.env, now, seg, payload, &mut |data| {
            // Data can arrive on the ACK that completes the handshake: accept first.
            if pending_accept {
                pending_accept = false;
                *accepted = true;
                *conn = app.accept(h, t.local_port, (t.remote, t.remote_port));
                refused = conn.is_none();
            }
            match conn.as_mut() {
                Some(c) => {
                    let before = ctl.done;
                    app.recv(h, c, data, &mut ctl);
                    let n = ctl.done - before;
                    ctl.done = before;
                    n
                }
                None => data.len() as u32, // refused: drop it, the reset follows
            }
        });
        if refused {
            ctl.abort();
        }
        let tcb = s.tcb.as_mut().expect("checked above");
        s.wake = earliest(s.wake, ctl.wake);
        Self::apply(tcb, s.conn.as_ref(), ctl);
        self.after(app, idx);
    }

    fn reset_reply(&mut self, t: &Tuple, seg: &TcpRepr, len: usize) {
        if seg.flags.has(TcpFlags::RST) {
            return;
        }
        // RFC 9293 §3.10.7.1: <SEQ=SEG.ACK><CTL=RST> if the ACK bit is set, otherwise
        // <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>.
        let (seq, ack, flags) = if seg.flags.has(TcpFlags::ACK) {
            (seg.ack, 0, TcpFlags::RST)
        } else {
            let l = len as u32 + u32::from(seg.flags.has(TcpFlags::SYN)) + u32::from(seg.flags.has(TcpFlags::FIN));
            (0, seg.seq.wrapping_add(l), TcpFlags::RST | TcpFlags::ACK)
        };
        let r = TcpRepr {
            src_port: t.local_port,
            dst_port: t.remote_port,
            seq,
            ack,
            flags: TcpFlags(flags),
            window: 0,
            options: TcpOptions::default(),
            payload_len: 0,
        };
        self.env.stats.resets_out += 1;
        self.send_stateless(t, r);
    }

    fn cookie_reply(&mut self, t: &Tuple, cfg: &Config, syn: &TcpRepr, now: Instant) {
        let peer_mss = syn.options.mss.unwrap_or(536);
        let c = isn::cookie(self.key, t, syn.seq, peer_mss.min(cfg.mss), now);
        let mut o = TcpOptions { mss: Some(cfg.mss), ..TcpOptions::default() };
        // Without timestamps there is nowhere to keep window scale and SACK: both are off.
        if let (true, Some((tsval, _))) = (cfg.timestamps, syn.options.timestamps) {
            let ws = (cfg.window_scale && syn.options.window_scale.is_some()).then(|| cfg.rcv_wscale());
            let peer_ws = syn.options.window_scale.filter(|_| ws.is_some());
            let sack = cfg.sack && syn.options.sack_permitted;
            o.window_scale = ws;
            o.sack_permitted = sack;
            o.timestamps = Some((isn::options_to_ts(ts_clock(isn::ts_offset(self.key, t), now), peer_ws, sack), tsval));
        }
        let r = TcpRepr {
            src_port: t.local_port,
            dst_port: t.remote_port,
            seq: c.0,
            ack: syn.seq.wrapping_add(1),
            flags: TcpFlags(TcpFlags::SYN | TcpFlags::ACK),
            window: cfg.rcv_buf.min(65_535) as u16,
            options: o,
            payload_len: 0,
        };
        self.env.stats.cookies_sent += 1;
        self.last_cookie = Some(now);
        self.send_stateless(t, r);
    }

    fn send_stateless(&mut self, t: &Tuple, r: TcpRepr) {
        if self.stateless.len() >= STATELESS {
            self.env.stats.tx_full += 1;
            return;
        }
        self.stateless.push_back((*t, r));
    }

    // ---- active open -----------------------------------------------------------------------

    /// Opens a connection from `local` to `remote:port` with state `conn`. `port_ok` says
    /// which source ports may be used (an engine passes the ports whose flow hash lands on
    /// its own queue).
    #[allow(clippy::too_many_arguments)]
    pub fn connect(
        &mut self,
        now: Instant,
        local: IpAddr,
        remote: IpAddr,
        port: u16,
        cfg: Config,
        conn: A::Conn,
        port_ok: impl Fn(u16) -> bool,
    ) -> Result<Handle, (ConnectError, A::Conn)> {
        if self.table.len() >= self.limits.max_conns {
            return Err((ConnectError::TableFull, conn));
        }
        let (lo, hi) = self.limits.ephemeral;
        let span = u32::from(hi - lo) + 1;
        let mut chosen = None;
        for _ in 0..span {
            let p = self.next_port;
            self.next_port = if p >= hi { lo } else { p + 1 };
            let t = Tuple { local, remote, local_port: p, remote_port: port };
            // Not a tuple in TIME-WAIT either: its old segments may still be about.
            let h = self.hash(&t);
            if port_ok(p)
                && self.slot_of(h, &t).is_none()
                && !self.quiet.contains(h, &t)
                && !self.listeners.contains_key(&p)
            {
                chosen = Some(t);
                break;
            }
        }
        let Some(t) = chosen else {
            return Err((ConnectError::NoPort, conn));
        };
        let cfg = Arc::new(if t.is_ipv6() { cfg.for_ipv6() } else { cfg });
        let tcb = Tcb::connect(t, cfg, isn::isn(self.key, &t, now), isn::ts_offset(self.key, &t), now);
        let idx = self.alloc(t, tcb, Some(conn)).expect("room checked above");
        self.queue_output(idx);
        self.sync_timer(idx);
        Ok(Handle { idx, gen: self.slots[idx as usize].gen })
    }

    // ---- output and time -------------------------------------------------------------------

    /// Sends what queued connections have to send, while the TX ring has room.
    pub fn output(&mut self, app: &mut A, now: Instant, out: &mut impl Output) {
        self.connections_output(app, now, out);
        // Connectionless replies get what room is left: under a SYN flood the cookies must not
        // starve the connections that exist.
        while out.room() > 0 {
            let Some((t, r)) = self.stateless.pop_front() else {
                break;
            };
            self.env.stats.segs_out += 1;
            out.send(t.local, t.remote, r.header_len(), &mut |buf| r.emit(buf, t.local, t.remote));
        }
    }

    fn connections_output(&mut self, app: &mut A, now: Instant, out: &mut impl Output) {
        while out.room() > 0 {
            let Some(&(idx, gen)) = self.queue.front() else {
                break;
            };
            let s = &mut self.slots[idx as usize];
            if s.gen != gen || s.tcb.is_none() {
                self.queue.pop_front();
                continue;
            }
            let tcb = s.tcb.as_mut().expect("checked");
            if let Some(c) = &s.conn {
                tcb.set_source_end(c.end());
            }
            let mut done = false;
            // The lowest offset where the application said it holds nothing, if it did: a
            // retransmission's, rather than the new data's behind it that a read brings anyway.
            let starved = std::cell::Cell::new(None::<u64>);
            while out.room() > 0 {
                let conn = &s.conn;
                let polled = match conn {
                    Some(c) => {
                        let app = &*app;
                        tcb.poll_cut(&mut self.env, now, &|off| {
                            let n = app.seg_limit(c, off);
                            if n == 0 {
                                starved.set(Some(starved.get().map_or(off, |s| s.min(off))));
                            }
                            n
                        })
                    }
                    None => tcb.poll(&mut self.env, now),
                };
                let Some(seg) = polled else {
                    done = true;
                    break;
                };
                let t = *tcb.tuple();
                let h = seg.repr.header_len();
                let len = seg.repr.payload_len;
                if let (true, Some(c), Some(r)) = (len > 0, conn, out.replicas()) {
                    if app.send_replica(c, &seg, t.local, t.remote, r) {
                        continue;
                    }
                }
                let app = &*app;
                if let (true, Some(c), Some(g)) = (len > 0, conn, out.gather()) {
                    if gather(app, c, &seg, &t, g) {
                        continue;
                    }
                }
                out.send(t.local, t.remote, h + len, &mut |buf| {
                    if len > 0 {
                        if let Some(c) = conn {
                            if app.write_ready(c, &seg, t.local, t.remote, buf) {
                                return;
                            }
                            app.fill(c, seg.data_off, &mut buf[h..h + len]);
                        }
                    }
                    seg.repr.emit(buf, t.local, t.remote);
                });
            }
            if !done {
                break; // TX full: this connection goes first next time
            }
            self.queue.pop_front();
            let s = &mut self.slots[idx as usize];
            s.queued = false;
            if let (Some(off), Some(c)) = (starved.get(), s.conn.as_mut()) {
                app.starved(Handle { idx, gen }, c, off);
            }
            // The connection has nothing more to send until something changes; only notes
            // (or its end) need the full treatment, which may queue it again.
            let tcb = s.tcb.as_ref().expect("checked");
            if tcb.has_notes() || tcb.state() == State::Closed {
                self.after(app, idx);
            } else {
                self.sync_timer(idx);
            }
        }
        if out.room() == 0 && !self.queue.is_empty() {
            self.env.stats.tx_full += 1;
        }
    }

    /// Runs the timers due at `now`.
    pub fn advance(&mut self, app: &mut A, now: Instant) {
        self.clock = now;
        self.quiet.expire(now);
        let fired = &mut self.fired;
        self.wheel.advance(now.as_millis(), |t| fired.push(t));
        let mut i = 0;
        while i < self.fired.len() {
            let (idx, gen) = self.fired[i];
            i += 1;
            let s = &mut self.slots[idx as usize];
            if s.gen != gen {
                continue;
            }
            s.timer = None;
            let Some(tcb) = s.tcb.as_mut() else {
                continue;
            };
            if tcb.deadline().is_some_and(|d| d <= now) {
                tcb.on_timer(&mut self.env, now);
            }
            if s.wake.is_some_and(|w| w <= now) {
                s.wake = None;
                if let Some(c) = s.conn.as_mut() {
                    let mut ctl = Ctl::default();
                    app.woken(Handle { idx, gen }, c, &mut ctl);
                    s.wake = ctl.wake;
                    Self::apply(tcb, Some(c), ctl);
                }
            }
            self.after(app, idx);
        }
        self.fired.clear();
    }

    /// True once a connection that paces its segments (BBR) was opened here.
    pub fn paces(&self) -> bool {
        self.paces
    }

    /// The earliest time `advance` has work (for sleeping; scans, so not per packet).
    pub fn next_deadline(&self) -> Option<Instant> {
        let wheel = self.wheel.next_deadline().map(Instant::from_millis);
        match (wheel, self.quiet.next_end()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// True if some connection (or a connectionless reply) waits to send.
    pub fn has_output(&self) -> bool {
        !self.queue.is_empty() || !self.stateless.is_empty()
    }
}

/// Sends `seg` gathered from where the application says its bytes are, if some are in the
/// lent region; false to have it copied the ordinary way.
fn gather<A: App>(app: &A, c: &A::Conn, seg: &SegOut, t: &Tuple, g: &mut dyn Gather) -> bool {
    let end = seg.data_off + seg.repr.payload_len as u64;
    let mut runs = [Placed::Copy { len: 0 }; MAX_RUNS];
    let (mut n, mut off, mut arena) = (0, seg.data_off, false);
    while off < end {
        if n == MAX_RUNS {
            return false;
        }
        let r = app.placed(c, off, (end - off) as u32);
        if r.is_empty() {
            return false;
        }
        arena |= matches!(r, Placed::Arena { .. });
        // Adjacent copies are one copy.
        match (n.checked_sub(1).map(|i| &mut runs[i]), r) {
            (Some(Placed::Copy { len }), Placed::Copy { len: more }) => *len += more,
            _ => {
                runs[n] = r;
                n += 1;
            }
        }
        off += u64::from(r.len());
    }
    if !arena {
        return false;
    }
    let data_off = seg.data_off;
    g.send(
        t.local,
        t.remote,
        seg.repr.header_len(),
        &runs[..n],
        &mut |at, buf| app.fill(c, data_off + at, buf),
        &mut |buf, sum| match sum {
            Some(sum) => seg.repr.emit_header(buf, t.local, t.remote, sum),
            None => seg.repr.emit_header_partial(buf, t.local, t.remote),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use wire::Ipv4Addr;

    // Every byte of the tuple must reach the hash: an earlier hasher dropped what came after
    // the first 16 bytes the derived Hash wrote, which put all peers of one address in one
    // bucket.
    #[test]
    fn tuples_differing_anywhere_hash_apart() {
        let key = Key([1, 2]);
        let base = Tuple {
            local: wire::IpAddr::V4(Ipv4Addr([198, 18, 0, 10])),
            remote: wire::IpAddr::V4(Ipv4Addr([198, 18, 0, 2])),
            local_port: 80,
            remote_port: 40_000,
        };
        let mut seen = HashSet::new();
        for i in 0..1000u16 {
            assert!(seen.insert(TupleHash::of(key, &Tuple { remote_port: 40_000 + i, ..base })));
            assert!(seen.insert(TupleHash::of(key, &Tuple { local_port: 1000 + i, ..base })));
            let r = wire::IpAddr::V4(Ipv4Addr([198, 19, (i >> 8) as u8, i as u8]));
            assert!(seen.insert(TupleHash::of(key, &Tuple { remote: r, ..base })));
            let mut a6 = [0x20, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
            a6[14..].copy_from_slice(&i.to_be_bytes());
            let v6 = wire::IpAddr::V6(wire::Ipv6Addr(a6));
            assert!(seen.insert(TupleHash::of(key, &Tuple { local: v6, remote: v6, ..base })));
        }
    }
}
