//! Level 2: the channel (the IX / MegaPipe interface). The application handles *batches* of
//! events — `knock`, `connected`, `recv` (a read-only view), `sent`, `peer_closed`, `dead` —
//! each naming the connection's handle and the cookie the application bound to it, and answers
//! with calls: `accept`/`reject`, `connect`, `sendv` (returns what the peer's window took; the
//! rest is the application's to send after a later `sent`), `recv_done` (reopens the receive
//! window), `close`, `abort`.
//!
//! A batch is what one engine iteration produced: every segment of the receive batch and every
//! timer that fired. The handler runs once per iteration, after the receive batch, while the
//! engine still holds the receive frames, so `recv` views point into the frames themselves
//! (data that waited in the reassembly buffer is copied into the batch's arena instead, as that
//! buffer goes back to its pool at once). Calls take effect when made — the channel lives in
//! the engine's thread, so there is no crossing to batch — and the segments they cause are
//! built together after the handler returns, straight into the TX ring.
//!
//! Sent bytes live in [`Buffers`], which the application writes and TCP references until
//! they are acknowledged: zero-copy on the send side, with retransmissions read from the same
//! memory.

pub mod buffers;
mod hub;
pub mod outbox;
pub mod streams;

use wire::tcp::TcpRepr;
use wire::IpAddr;

pub use buffers::{BufError, BufId, Buffers, Extent};
pub use hub::{ChannelConn, Hub, MAX_EXTENTS};
pub use outbox::Outbox;

use crate::config::Config;
use crate::endpoint::{ConnectError, Endpoint, Handle, Limits, Output};
use crate::rss::Rss;
use crate::tcb::{End, Tcb};
use hub::{Kind, Raw, Where};
use timer::Instant;

/// An event of a batch. `cookie` is what the application bound at `accept` or `connect` (an
/// `accept` made while handling a knock applies to the rest of that batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// A connection to a listening port completed its handshake. Answer with `accept` or
    /// `reject` while handling this batch; a knock left unanswered is rejected.
    Knock {
        /// The new connection.
        h: Handle,
        /// Our port it reached.
        port: u16,
        /// The peer.
        remote: (IpAddr, u16),
    },
    /// An active open finished: `Ok` when established, else why it failed.
    Connected {
        /// The connection.
        h: Handle,
        /// The application's cookie.
        cookie: u64,
        /// The outcome.
        outcome: Result<(), End>,
    },
    /// In-order bytes, valid during this batch. The window stays closed by them until
    /// `recv_done`.
    Recv {
        /// The connection.
        h: Handle,
        /// The application's cookie.
        cookie: u64,
        /// The bytes.
        data: &'a [u8],
    },
    /// The peer acknowledged `acked` more bytes and/or its window opened; `window` is what
    /// `sendv` would take now.
    Sent {
        /// The connection.
        h: Handle,
        /// The application's cookie.
        cookie: u64,
        /// Bytes newly acknowledged.
        acked: u64,
        /// Bytes `sendv` takes now.
        window: u32,
    },
    /// The peer finished sending (FIN). Our side stays open until `close`.
    PeerClosed {
        /// The connection.
        h: Handle,
        /// The application's cookie.
        cookie: u64,
    },
    /// The connection ended; the handle is no longer valid.
    Dead {
        /// The connection.
        h: Handle,
        /// The application's cookie.
        cookie: u64,
        /// How it ended.
        end: End,
    },
}

/// Where `recv` views point: the payloads the caller passed to [`Channel::input`], by the id
/// it gave them, still alive while the batch is handled.
pub trait Views {
    /// The payload passed to `input` with `id`.
    fn view(&self, id: u32) -> &[u8];
}

/// A batch of events.
pub struct Events<'a> {
    raw: &'a [Raw],
    arena: &'a [u8],
    views: &'a dyn Views,
}

impl<'a> Events<'a> {
    /// Events in the batch.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// True for an empty batch.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The events in the order they happened. Events of a knocked connection that was not
    /// accepted while its knock was handled are left out (it is reset at the end of the batch).
    pub fn iter(&self) -> impl Iterator<Item = Event<'a>> + '_ {
        self.raw
            .iter()
            .filter(|r| r.cookie.get().is_some() || matches!(r.kind, Kind::Knock { .. }))
            .map(|r| self.resolve(r))
    }

    fn resolve(&self, r: &Raw) -> Event<'a> {
        let (h, cookie) = (r.h, r.cookie.get().unwrap_or(0));
        match r.kind {
            Kind::Knock { port, remote } => Event::Knock { h, port, remote },
            Kind::Connected { outcome } => Event::Connected { h, cookie, outcome },
            Kind::Recv { at } => {
                let data = match at {
                    Where::Frame { id, off, len } => &self.views.view(id)[off as usize..(off + len) as usize],
                    Where::Arena { off, len } => &self.arena[off as usize..(off + len) as usize],
                };
                Event::Recv { h, cookie, data }
            }
            Kind::Sent { acked, window } => Event::Sent { h, cookie, acked, window },
            Kind::PeerClosed => Event::PeerClosed { h, cookie },
            Kind::Dead { end } => Event::Dead { h, cookie, end },
        }
    }
}

/// Why a call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallError {
    /// The handle names no live connection (stale, or already dead).
    BadHandle,
    /// `sendv` on a knocked connection not yet accepted.
    NotAccepted,
    /// `accept` or `reject` of a connection already answered.
    AlreadyAnswered,
    /// `sendv` after `close` (or after the connection began to end).
    Closing,
    /// An extent outside an allocated buffer.
    BadExtent,
    /// `connect` could not start.
    Connect(ConnectError),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::BadHandle => f.write_str("no such connection"),
            CallError::NotAccepted => f.write_str("the connection is not accepted yet"),
            CallError::AlreadyAnswered => f.write_str("the connection was already accepted or rejected"),
            CallError::Closing => f.write_str("the connection is closing"),
            CallError::BadExtent => f.write_str("the extent is outside an allocated buffer"),
            CallError::Connect(e) => write!(f, "connect: {e}"),
        }
    }
}

impl std::error::Error for CallError {}

/// What the channel counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChannelStats {
    /// Batches handed to the application (non-empty ones).
    pub batches: u64,
    /// Events handed out.
    pub events: u64,
    /// Knocks the application did not answer (rejected).
    pub unanswered: u64,
    /// `sendv` calls.
    pub sendv: u64,
    /// Bytes `sendv` took.
    pub sendv_bytes: u64,
    /// `sendv` calls that took less than offered (the window, or the extent limit).
    pub sendv_trimmed: u64,
    /// `recv` bytes copied out of the reassembly buffer (the rest were frame views).
    pub recv_copied: u64,
    /// Calls refused.
    pub refused: u64,
}

/// The level-2 application.
pub trait Server {
    /// Handles one batch (possibly empty: an application that opens connections of its own
    /// does it here).
    fn handle(&mut self, events: &Events<'_>, calls: &mut Calls<'_>);

    /// True while the application has work to do without new events (the engine keeps
    /// polling instead of sleeping).
    fn busy(&self) -> bool {
        false
    }

    /// A file descriptor whose readiness should also wake a sleeping engine (e.g. the ring
    /// of a storage queue whose writes the application waits for).
    fn wake_fd(&self) -> Option<i32> {
        None
    }
}

/// The calls a handler makes.
pub struct Calls<'a> {
    batch: &'a [Raw],
    ep: &'a mut Endpoint<Hub>,
    hub: &'a mut Hub,
    stats: &'a mut ChannelStats,
    now: Instant,
    cfg: Config,
    rss: Option<&'a (Rss, u16)>,
}

impl Calls<'_> {
    /// The engine's clock now, for applications that time what they do.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The send buffers.
    pub fn buffers(&mut self) -> &mut Buffers {
        &mut self.hub.bufs
    }

    fn refused<T>(&mut self, e: CallError) -> Result<T, CallError> {
        self.stats.refused += 1;
        Err(e)
    }

    /// Accepts a knocked connection and binds `cookie` to it.
    pub fn accept(&mut self, h: Handle, cookie: u64) -> Result<(), CallError> {
        match self.ep.conn_mut(h) {
            None => self.refused(CallError::BadHandle),
            Some(c) if c.accepted || c.rejected => self.refused(CallError::AlreadyAnswered),
            Some(c) => {
                c.accepted = true;
                c.cookie = cookie;
                for r in self.batch.iter().filter(|r| r.h == h) {
                    r.cookie.set(Some(cookie));
                }
                Ok(())
            }
        }
    }

    /// Refuses a knocked connection (it is reset; no `dead` follows).
    pub fn reject(&mut self, h: Handle) -> Result<(), CallError> {
        match self.ep.conn_mut(h) {
            None => self.refused(CallError::BadHandle),
            Some(c) if c.accepted || c.rejected => self.refused(CallError::AlreadyAnswered),
            Some(c) => {
                c.rejected = true;
                self.ep.abort(self.hub, h);
                Ok(())
            }
        }
    }

    /// Opens a connection from `local` to `remote:port`; `connected` reports the outcome. With
    /// the NIC's RSS configuration known ([`Channel::set_rss`]), the source port is one whose
    /// replies the NIC puts on this engine's queue.
    pub fn connect(&mut self, cookie: u64, local: IpAddr, remote: IpAddr, port: u16) -> Result<Handle, CallError> {
        let conn = ChannelConn::new(cookie, true);
        let rss = self.rss;
        let mine = |p: u16| rss.is_none_or(|(r, q)| r.queue(remote, local, port, p) == *q);
        match self.ep.connect(self.now, local, remote, port, self.cfg, conn, mine) {
            Ok(h) => Ok(h),
            Err((e, _)) => self.refused(CallError::Connect(e)),
        }
    }

    /// Bytes `sendv` would take on `h` now (the peer's window beyond what is queued).
    pub fn window(&self, h: Handle) -> Option<u32> {
        self.ep.conn(h)?;
        self.ep.tcb(h).map(|t| if t.is_closing() { 0 } else { t.send_room().min(u64::from(u32::MAX)) as u32 })
    }

    /// Sends `extents` in order, as far as the peer's window (and [`MAX_EXTENTS`] per
    /// connection) allows; returns the bytes taken. Their buffers must not change until
    /// acknowledged, which the buffers enforce; the rest is the caller's to send again after
    /// a `sent` event.
    pub fn sendv(&mut self, h: Handle, extents: &[Extent]) -> Result<u32, CallError> {
        let room = match self.ep.tcb(h) {
            None => return self.refused(CallError::BadHandle),
            Some(_) if self.ep.conn(h).is_none() => return self.refused(CallError::BadHandle),
            Some(t) if t.is_closing() => return self.refused(CallError::Closing),
            Some(t) => t.send_room(),
        };
        if extents.iter().any(|e| !self.hub.bufs.valid(*e)) {
            return self.refused(CallError::BadExtent);
        }
        let Some(c) = self.ep.conn_mut(h) else {
            return self.refused(CallError::BadHandle);
        };
        if !c.accepted {
            return self.refused(CallError::NotAccepted);
        }
        let taken = c.take(&mut self.hub.bufs, extents, room);
        let offered: u64 = extents.iter().map(|e| u64::from(e.len)).sum();
        self.stats.sendv += 1;
        self.stats.sendv_bytes += u64::from(taken);
        if u64::from(taken) < offered {
            self.stats.sendv_trimmed += 1;
        }
        if taken > 0 {
            self.ep.kick(h);
        }
        Ok(taken)
    }

    /// The application is done with `n` received bytes of `h`: the window reopens.
    pub fn recv_done(&mut self, h: Handle, n: u32) -> Result<(), CallError> {
        if self.ep.conn_mut(h).is_none() {
            return self.refused(CallError::BadHandle);
        }
        self.ep.recv_done(h, n);
        Ok(())
    }

    /// Whether `h`'s FIN (and so everything before it) has left.
    pub fn fin_sent(&self, h: Handle) -> bool {
        self.ep.tcb(h).is_some_and(Tcb::fin_sent)
    }

    /// Half-closes `h` once what `sendv` took is sent.
    pub fn close(&mut self, h: Handle) -> Result<(), CallError> {
        if self.ep.conn_mut(h).is_none() {
            return self.refused(CallError::BadHandle);
        }
        self.ep.close(h);
        Ok(())
    }

    /// Resets `h`; a `dead` event follows.
    pub fn abort(&mut self, h: Handle) -> Result<(), CallError> {
        if self.ep.conn_mut(h).is_none() {
            return self.refused(CallError::BadHandle);
        }
        self.ep.abort(self.hub, h);
        Ok(())
    }
}

/// One engine's TCP with the channel interface on top.
pub struct Channel {
    ep: Endpoint<Hub>,
    hub: Hub,
    cur: Vec<Raw>,
    cur_arena: Vec<u8>,
    stats: ChannelStats,
    connect_cfg: Config,
    rss: Option<(Rss, u16)>,
}

impl Channel {
    /// What an idle connection holds in a channel's endpoint sized for it (see
    /// [`Endpoint::bytes_per_connection`]); the server's own state per connection comes on top.
    pub fn bytes_per_connection() -> usize {
        Endpoint::<Hub>::bytes_per_connection()
    }

    /// A channel whose applications send from `bufs`; `connect_cfg` is used for active opens.
    pub fn new(limits: Limits, bufs: Buffers, connect_cfg: Config, now: Instant) -> Channel {
        Channel {
            ep: Endpoint::new(limits, now),
            hub: Hub::new(bufs),
            cur: Vec::new(),
            cur_arena: Vec::new(),
            stats: ChannelStats::default(),
            connect_cfg,
            rss: None,
        }
    }

    /// The NIC's RSS configuration and this engine's receive queue: `connect` then chooses
    /// source ports whose replies arrive on that queue.
    pub fn set_rss(&mut self, rss: Rss, queue: u16) {
        self.rss = Some((rss, queue));
    }

    /// The endpoint under the channel (connections, statistics).
    pub fn endpoint(&self) -> &Endpoint<Hub> {
        &self.ep
    }

    /// The endpoint, mutable (engine-level settings such as [`Endpoint::set_forward_strays`]).
    pub fn endpoint_mut(&mut self) -> &mut Endpoint<Hub> {
        &mut self.ep
    }

    /// A smaller path MTU learnt for a connection (see [`Endpoint::path_mtu`]).
    pub fn path_mtu(&mut self, local: IpAddr, remote: IpAddr, local_port: u16, remote_port: u16, mtu: u16) {
        self.ep.path_mtu(local, remote, local_port, remote_port, mtu);
    }

    /// The send buffers.
    pub fn buffers(&self) -> &Buffers {
        &self.hub.bufs
    }

    /// What the channel counted.
    pub fn stats(&self) -> &ChannelStats {
        &self.stats
    }

    /// Listens on `port`.
    pub fn listen(&mut self, port: u16, cfg: Config) {
        self.ep.listen(port, cfg);
    }

    /// Takes one segment; `payload` must stay readable as `views.view(id)` until the next
    /// [`dispatch`](Self::dispatch) returns.
    pub fn input(&mut self, now: Instant, remote: IpAddr, local: IpAddr, seg: &TcpRepr, payload: &[u8], id: u32) {
        self.hub.seg = Some((id, payload.as_ptr() as usize, payload.len()));
        self.ep.input(&mut self.hub, now, remote, local, seg, payload);
        self.hub.seg = None;
    }

    /// Runs the timers due at `now`.
    pub fn advance(&mut self, now: Instant) {
        self.ep.advance(&mut self.hub, now);
    }

    /// Hands the batch gathered since the last dispatch to `server`.
    pub fn dispatch<S: Server + ?Sized>(&mut self, server: &mut S, now: Instant, views: &dyn Views) {
        std::mem::swap(&mut self.cur, &mut self.hub.next);
        std::mem::swap(&mut self.cur_arena, &mut self.hub.arena);
        for r in self.cur.iter_mut() {
            if let Kind::Sent { window, .. } = &mut r.kind {
                *window = self.ep.tcb(r.h).map_or(0, |t| t.send_room().min(u64::from(u32::MAX)) as u32);
            }
        }
        if !self.cur.is_empty() {
            self.stats.batches += 1;
            self.stats.events += self.cur.len() as u64;
        }
        self.stats.recv_copied += self.cur_arena.len() as u64;
        {
            let events = Events { raw: &self.cur, arena: &self.cur_arena, views };
            let mut calls = Calls {
                batch: &self.cur,
                ep: &mut self.ep,
                hub: &mut self.hub,
                stats: &mut self.stats,
                now,
                cfg: self.connect_cfg,
                rss: self.rss.as_ref(),
            };
            server.handle(&events, &mut calls);
        }
        for r in &self.cur {
            if let Kind::Knock { .. } = r.kind {
                let h = r.h;
                if let Some(c) = self.ep.conn_mut(h) {
                    if !c.accepted && !c.rejected {
                        c.rejected = true;
                        self.stats.unanswered += 1;
                        self.ep.abort(&mut self.hub, h);
                    }
                }
            }
        }
        self.cur.clear();
        self.cur_arena.clear();
    }

    /// Sends what connections have to send, while `out` has room.
    pub fn output(&mut self, now: Instant, out: &mut impl Output) {
        self.ep.output(&mut self.hub, now, out);
    }

    /// True if events wait for the next dispatch.
    pub fn has_events(&self) -> bool {
        !self.hub.next.is_empty()
    }
}
