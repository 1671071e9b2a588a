//! Callbacks over the channel, for servers that think in connections and byte streams (in
//! the spirit of libevent's bufferevents and MegaPipe's lwsocket): implement
//! [`StreamServer`] and wrap it in [`Streams`], which is a channel [`Server`].
//!
//! `Streams` does the channel's bookkeeping: a cookie per connection, an [`Outbox`] per
//! connection (what the application writes goes out as the peer's window opens), the
//! receive window (reopened as soon as the application has taken the bytes, held closed while
//! its output waits — so a client that does not read its answers is held back by TCP rather
//! than by our memory), a connection limit, and closing once the output is sent.
//!
//! ```
//! use tcp::channel::streams::{StreamServer, Streams, Verdict, Writer};
//! use tcp::End;
//! use wire::IpAddr;
//!
//! /// Answers every line with its length.
//! struct LineLengths;
//!
//! impl StreamServer for LineLengths {
//!     type Conn = Vec<u8>; // the partial line
//!
//!     fn open(&mut self, _remote: (IpAddr, u16), _port: u16) -> Option<Vec<u8>> {
//!         Some(Vec::new())
//!     }
//!
//!     fn data(&mut self, line: &mut Vec<u8>, data: &[u8], w: &mut Writer<'_, '_>) -> Verdict {
//!         for &b in data {
//!             if b == b'\n' {
//!                 w.write(format!("{}\n", line.len()).as_bytes());
//!                 line.clear();
//!             } else if line.len() < 4096 {
//!                 line.push(b);
//!             } else {
//!                 return Verdict::Close;
//!             }
//!         }
//!         Verdict::Continue
//!     }
//!
//!     fn closed(&mut self, _line: Vec<u8>, _end: End) {}
//! }
//!
//! // On an engine: ChannelService::new(Streams::new(LineLengths, 10_000), &[port], cfg,
//! // limits, Buffers::new(65_536, 2048)).
//! let server = Streams::new(LineLengths, 10_000);
//! assert_eq!(server.open_connections(), 0);
//! ```

use super::{Calls, Event, Events, Outbox, Server};
use crate::api::Handle;
use crate::tcb::End;
use timer::Instant;
use wire::IpAddr;

/// Output waiting for the window above which the receive window is held closed.
pub const HIGH_WATER: usize = 256 * 1024;

/// What a connection is to do after a callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Keep it open.
    Continue,
    /// Close it once what was written is sent.
    Close,
}

/// Writes a connection's output.
pub struct Writer<'a, 'c> {
    id: u64,
    outbox: &'a mut Outbox,
    calls: &'a mut Calls<'c>,
    failed: &'a mut bool,
    waiting: &'a mut bool,
}

impl Writer<'_, '_> {
    /// Appends `b` to the connection's output. If the send buffers run out the connection is
    /// reset (its output could not be whole).
    pub fn write(&mut self, b: &[u8]) {
        if !*self.failed && !self.outbox.write(self.calls.buffers(), b) {
            *self.failed = true;
        }
    }

    /// The connection's id, for [`StreamServer::woken`] (reused once the connection is gone).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Bytes written and not yet taken by TCP.
    pub fn backlog(&self) -> usize {
        self.outbox.unsent()
    }

    /// The application put work off because of the backlog: [`StreamServer::drained`] is
    /// called once it is at most [`HIGH_WATER`].
    pub fn wait_for_drain(&mut self) {
        *self.waiting = true;
    }
}

/// Bytes a connection received and has not handled yet (the start of a request that is not
/// all there, or requests left unread while output waits). While it is empty, new bytes are
/// handled where they lie and only what is left over is copied.
#[derive(Debug, Default)]
pub struct Unread(Vec<u8>);

impl Unread {
    /// Hands `data` (after what is kept) to `run`, which returns how many bytes it took;
    /// keeps the rest.
    pub fn feed(&mut self, data: &[u8], run: impl FnOnce(&[u8]) -> usize) {
        if self.0.is_empty() {
            let used = run(data);
            self.0.extend_from_slice(&data[used..]);
        } else {
            self.0.extend_from_slice(data);
            self.again(run);
        }
    }

    /// Hands what is kept to `run` again; keeps what it did not take.
    pub fn again(&mut self, run: impl FnOnce(&[u8]) -> usize) {
        let used = run(&self.0);
        self.0.drain(..used);
    }

    /// Bytes kept.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True if none are kept.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Makes room for `n` more bytes.
    pub fn reserve(&mut self, n: usize) {
        self.0.reserve(n);
    }

    /// Forgets what is kept.
    pub fn clear(&mut self) {
        self.0.clear();
    }
}

/// A server of byte streams.
pub trait StreamServer {
    /// Per-connection state.
    type Conn;

    /// Called once per batch, before its events (e.g. to read a clock once per batch).
    fn batch(&mut self, _now: Instant) {}

    /// Connection ids (see [`Writer::id`]) to call [`StreamServer::resume`] for, once per
    /// batch after [`StreamServer::batch`]: work that waited on something other than the
    /// connection (a durable write, another engine) can go on.
    fn woken(&mut self, _ids: &mut Vec<u64>) {}

    /// Called for each id [`StreamServer::woken`] gave (if the connection is still open).
    fn resume(&mut self, _c: &mut Self::Conn, _w: &mut Writer<'_, '_>) -> Verdict {
        Verdict::Continue
    }

    /// Called once per batch, after its events.
    fn batch_end(&mut self) {}

    /// See [`Server::busy`].
    fn busy(&self) -> bool {
        false
    }

    /// See [`Server::wake_fd`].
    fn wake_fd(&self) -> Option<i32> {
        None
    }

    /// A connection was refused because the limit was reached.
    fn refused(&mut self) {}

    /// A peer connected to `port`: its state, or None to refuse it (it is reset).
    fn open(&mut self, remote: (IpAddr, u16), port: u16) -> Option<Self::Conn>;

    /// Bytes arrived (valid only during the call: keep what you need).
    fn data(&mut self, c: &mut Self::Conn, data: &[u8], w: &mut Writer<'_, '_>) -> Verdict;

    /// The output waiting for the window is at most [`HIGH_WATER`] after the application
    /// called [`Writer::wait_for_drain`]: the time to continue the work it put off.
    fn drained(&mut self, _c: &mut Self::Conn, _w: &mut Writer<'_, '_>) -> Verdict {
        Verdict::Continue
    }

    /// The peer finished sending. By default the connection closes once its output is sent.
    fn peer_closed(&mut self, _c: &mut Self::Conn, _w: &mut Writer<'_, '_>) -> Verdict {
        Verdict::Close
    }

    /// The connection is gone (closed, reset or timed out).
    fn closed(&mut self, c: Self::Conn, end: End);
}

struct Slot<C> {
    h: Handle,
    conn: C,
    outbox: Outbox,
    /// Received bytes not yet given back to the window (held while output waits).
    owed: u32,
    closing: bool,
    high: bool,
    waiting: bool,
    fin_sent: bool,
}

/// What [`Streams`] counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// Connections opened.
    pub opened: u64,
    /// Connections refused by the application or the limit.
    pub refused: u64,
    /// Connections reset because the send buffers ran out.
    pub no_buffer: u64,
    /// Times a connection's receive window was held closed for its output.
    pub held: u64,
}

/// A [`StreamServer`] as a channel [`Server`].
pub struct Streams<S: StreamServer> {
    /// The application.
    pub app: S,
    slots: Vec<Option<Slot<S::Conn>>>,
    free: Vec<u32>,
    open: usize,
    max_conns: usize,
    woken: Vec<u64>,
    /// What it counted.
    pub stats: StreamStats,
}

impl<S: StreamServer> Streams<S> {
    /// Serves `app`, with at most `max_conns` connections open at once (more are reset).
    pub fn new(app: S, max_conns: usize) -> Self {
        Streams {
            app,
            slots: Vec::new(),
            free: Vec::new(),
            open: 0,
            max_conns,
            woken: Vec::new(),
            stats: StreamStats::default(),
        }
    }

    /// What an idle connection holds here besides the channel's endpoint: its slot (the
    /// application's state with the layer's) and its place in the free list.
    pub fn bytes_per_connection() -> usize {
        std::mem::size_of::<Option<Slot<S::Conn>>>() + std::mem::size_of::<u32>()
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.open
    }

    fn knock(&mut self, calls: &mut Calls<'_>, h: Handle, port: u16, remote: (IpAddr, u16)) {
        let conn = if self.open < self.max_conns {
            self.app.open(remote, port)
        } else {
            self.app.refused();
            None
        };
        let Some(conn) = conn else {
            self.stats.refused += 1;
            let _ = calls.reject(h);
            return;
        };
        let i = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            (self.slots.len() - 1) as u32
        });
        if calls.accept(h, u64::from(i)).is_err() {
            self.free.push(i);
            return;
        }
        self.slots[i as usize] = Some(Slot {
            h,
            conn,
            outbox: Outbox::new(),
            owed: 0,
            closing: false,
            high: false,
            waiting: false,
            fin_sent: false,
        });
        self.open += 1;
        self.stats.opened += 1;
    }

    /// Runs `f` on connection `cookie` with a writer, then sends, closes or resets as needed,
    /// and calls `drained` while the application waits for it and the backlog allows.
    fn with<F>(&mut self, calls: &mut Calls<'_>, cookie: u64, f: F)
    where
        F: FnOnce(&mut S, &mut S::Conn, &mut Writer<'_, '_>) -> Verdict,
    {
        if !self.call(calls, cookie, f) {
            return;
        }
        // Bounded: each round either sends or leaves the backlog high (which ends it).
        for _ in 0..16 {
            let Some(Some(slot)) = self.slots.get_mut(cookie as usize) else { return };
            if !slot.waiting || slot.high || slot.closing {
                return;
            }
            slot.waiting = false;
            if !self.call(calls, cookie, |app, c, w| app.drained(c, w)) {
                return;
            }
        }
    }

    /// One callback; false if the connection was reset.
    fn call<F>(&mut self, calls: &mut Calls<'_>, cookie: u64, f: F) -> bool
    where
        F: FnOnce(&mut S, &mut S::Conn, &mut Writer<'_, '_>) -> Verdict,
    {
        let Some(Some(slot)) = self.slots.get_mut(cookie as usize) else { return false };
        let mut failed = false;
        let verdict = {
            let mut w =
                Writer { id: cookie, outbox: &mut slot.outbox, calls, failed: &mut failed, waiting: &mut slot.waiting };
            f(&mut self.app, &mut slot.conn, &mut w)
        };
        if failed {
            self.stats.no_buffer += 1;
            let _ = calls.abort(slot.h);
            slot.closing = true;
            return false;
        }
        if verdict == Verdict::Close {
            slot.closing = true;
        }
        Self::settle(slot, calls, &mut self.stats);
        true
    }

    /// Sends what the window takes, reopens the receive window unless output waits, and
    /// closes a closing connection whose output is all sent.
    fn settle(slot: &mut Slot<S::Conn>, calls: &mut Calls<'_>, stats: &mut StreamStats) {
        let all = slot.outbox.flush(calls, slot.h);
        let high = slot.outbox.unsent() > HIGH_WATER;
        if high && !slot.high {
            stats.held += 1;
        }
        slot.high = high;
        if !high && slot.owed > 0 {
            let _ = calls.recv_done(slot.h, slot.owed);
            slot.owed = 0;
        }
        if slot.closing && all && !slot.fin_sent {
            slot.fin_sent = true;
            let _ = calls.close(slot.h);
        }
    }
}

impl<S: StreamServer> Server for Streams<S> {
    fn handle(&mut self, events: &Events<'_>, calls: &mut Calls<'_>) {
        self.app.batch(calls.now());
        let mut woken = std::mem::take(&mut self.woken);
        self.app.woken(&mut woken);
        for &id in &woken {
            self.with(calls, id, |app, c, w| app.resume(c, w));
        }
        woken.clear();
        self.woken = woken;
        for ev in events.iter() {
            match ev {
                Event::Knock { h, port, remote } => self.knock(calls, h, port, remote),
                Event::Recv { cookie, data, .. } => {
                    if let Some(Some(slot)) = self.slots.get_mut(cookie as usize) {
                        if slot.closing {
                            if slot.fin_sent && calls.fin_sent(slot.h) {
                                // Data for a connection the application closed: a socket
                                // closed with data unread answers with a reset (as Linux
                                // does), so a client that keeps writing after, say, a
                                // protocol error finds out instead of writing forever.
                                let _ = calls.abort(slot.h);
                            } else {
                                // Bytes after a close verdict, while the last output goes,
                                // are read and dropped.
                                let _ = calls.recv_done(slot.h, data.len() as u32);
                            }
                            continue;
                        }
                        slot.owed += data.len() as u32;
                    }
                    self.with(calls, cookie, |app, c, w| app.data(c, data, w));
                }
                Event::Sent { cookie, .. } => self.with(calls, cookie, |_, _, _| Verdict::Continue),
                Event::PeerClosed { cookie, .. } => {
                    self.with(calls, cookie, |app, c, w| app.peer_closed(c, w));
                }
                Event::Dead { cookie, end, .. } => {
                    let Some(slot) = self.slots.get_mut(cookie as usize).and_then(Option::take) else { continue };
                    let mut slot = slot;
                    slot.outbox.clear(calls.buffers());
                    self.free.push(cookie as u32);
                    self.open -= 1;
                    self.app.closed(slot.conn, end);
                }
                Event::Connected { .. } => {}
            }
        }
        self.app.batch_end();
    }

    fn busy(&self) -> bool {
        self.app.busy()
    }

    fn wake_fd(&self) -> Option<i32> {
        self.app.wake_fd()
    }
}
