//! One client connection, sans-IO: bytes in, commands run, replies out — held back until
//! what they show is durable.
//!
//! Replies are gathered in the session and released together once the order's durable
//! prefix reaches the highest sequence number any of them depends on; later replies queue
//! behind earlier ones, so pipelined requests are answered in order.
//!
//! Requests are read on while the client does not read its replies, as Redis reads them: a
//! client may write a whole pipeline (100 000 commands) before it reads anything, and holding
//! its requests back until it reads would leave both sides waiting. Released replies beyond
//! what the network takes ([`LIMIT`]) wait in the session, up to the output-buffer limit
//! ([`OUTPUT_LIMIT`], Redis's `client-output-buffer-limit`); a client past it is closed, as
//! Redis closes it.

mod conn;
mod multi;
mod replica;
mod view;

pub use view::ClientView;

use crate::command::{execute, Argv, Ctx, Done};
use crate::repl::feed::Feed;
use replica::Follower;
use resp::reply;
use resp::{Parsed, Parser};
use tcp::channel::streams::Unread;

/// Output handed to the network at most (the channel holds the receive window closed above
/// it, which would stop a client that writes before it reads).
pub const LIMIT: usize = tcp::channel::streams::HIGH_WATER;

/// Replies a connection may have waiting for its client to read them before it is closed.
pub const OUTPUT_LIMIT: usize = 64 << 20;

/// Where released replies go.
pub trait Out {
    /// Appends bytes to the connection's output.
    fn put(&mut self, b: &[u8]);
    /// Output not yet taken by the network.
    fn backlog(&self) -> usize;
}

/// What the connection is to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep it open.
    Open,
    /// Close it once the output is sent.
    Close,
}

/// One connection.
pub struct Session {
    parser: Parser,
    /// Received bytes not yet handled, from the start of a request.
    buf: Unread,
    held: Vec<u8>,
    wait: u64,
    /// Replies released, waiting for room in the network's output (from `ready_at`).
    ready: Vec<u8>,
    ready_at: usize,
    closing: bool,
    /// The output-buffer limit for this connection.
    output_limit: usize,
    /// Closed for passing it.
    pub overflowed: bool,
    /// Set while the server has the session on its list of those waiting for durability.
    pub queued: bool,
    /// Requests handled.
    pub commands: u64,
    /// MULTI's queue and the keys WATCHed.
    tx: multi::Tx,
    /// Its id, name and whether it has authenticated.
    conn: conn::Conn,
    /// Where a replica is in its sync and stream.
    replica: replica::ReplicaConn,
    /// The peer's address (ROLE and INFO show a replica's).
    peer: String,
    /// The connection's id once the server serves it as a replica.
    pub follower_conn: Option<u64>,
    /// A WAIT for replicas' acknowledgements: later requests wait behind it.
    acks: Option<replica::AckWait>,
    /// A blocking command that found nothing yet: its request, run again each batch until
    /// it answers or its deadline (Unix ms; 0: none) passes. Later requests wait behind it.
    blocked: Option<(Vec<u8>, i64)>,
    /// The clock at the last input (WAIT's deadline).
    now_ms: i64,
    /// The database SELECTed.
    db: usize,
    /// What CLIENT LIST shows of it (None: not listed, as the replica link's own session).
    view: Option<std::sync::Arc<ClientView>>,
}

impl Default for Session {
    fn default() -> Self {
        Session::new()
    }
}

impl Session {
    /// A new connection's session.
    pub fn new() -> Session {
        Session {
            parser: Parser::new(resp::request::REDIS_MAX_BULK),
            buf: Unread::default(),
            held: Vec::new(),
            wait: 0,
            ready: Vec::new(),
            ready_at: 0,
            closing: false,
            output_limit: OUTPUT_LIMIT,
            overflowed: false,
            queued: false,
            commands: 0,
            tx: multi::Tx::default(),
            conn: conn::Conn::default(),
            replica: replica::ReplicaConn::default(),
            peer: String::new(),
            follower_conn: None,
            acks: None,
            blocked: None,
            now_ms: 0,
            db: 0,
            view: None,
        }
    }

    /// Its CLIENT ID.
    pub fn id(&self) -> u64 {
        self.conn.id()
    }

    /// Its CLIENT LIST view.
    pub fn view(&self) -> Option<&std::sync::Arc<ClientView>> {
        self.view.as_ref()
    }

    /// True once CLIENT KILL chose it.
    pub fn killed(&self) -> bool {
        self.view.as_ref().is_some_and(|v| v.killed.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Listed for CLIENT LIST as `view` (made for this session's id).
    pub fn with_view(mut self, view: std::sync::Arc<ClientView>) -> Session {
        self.view = Some(view);
        self
    }

    /// Publishes what CLIENT LIST shows that changes batch by batch.
    fn publish(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(v) = &self.view {
            v.db.store(self.db, Relaxed);
            v.qbuf.store(self.buf.len(), Relaxed);
            v.omem.store(self.held.len() + self.unsent(), Relaxed);
            v.multi.store(self.tx.queued_count(), Relaxed);
            v.replica.store(self.replica.follower.is_some(), Relaxed);
        }
    }

    /// A session for a client at `peer`.
    pub fn with_peer(mut self, peer: String) -> Session {
        self.peer = peer;
        self
    }

    /// True once the connection is a replica's (it synced: the server feeds it the stream).
    pub fn is_follower(&self) -> bool {
        self.replica.follower.is_some()
    }

    /// True while a WAIT waits for replicas (the server looks again every batch).
    pub fn waiting_for_replicas(&self) -> bool {
        self.acks.is_some()
    }

    /// The deadline (Unix ms; 0: none) of a blocking command waiting for something to take:
    /// the server runs it again when the store changes, or when the deadline passes.
    pub fn blocked_until(&self) -> Option<i64> {
        self.blocked.as_ref().map(|b| b.1)
    }

    /// Points the context at this connection's database.
    fn enter_db(&self, ctx: &mut Ctx<'_>) {
        let info = ctx.info;
        if let Some(ks) = info.databases().and_then(|d| d.db(self.db)) {
            ctx.ks = ks;
        }
    }

    /// Runs a blocked command again: it answers if it now finds something, or its deadline
    /// has passed.
    fn retry_blocked(&mut self, ctx: &mut Ctx<'_>) {
        let Some((req, at)) = self.blocked.take() else { return };
        if !matches!(self.parser.parse(&req), Parsed::Request { .. }) {
            return;
        }
        let a = Argv::new(&self.parser.args, &req);
        ctx.journal.select(self.db);
        let mut v3;
        let out: &mut dyn reply::Sink = if self.conn.resp3() {
            v3 = reply::Resp3(&mut self.held);
            &mut v3
        } else {
            &mut self.held
        };
        let done = execute(a, ctx, out);
        match done.block {
            // Every blocking command times out with a null array, as Redis's do.
            Some(_) if at != 0 && ctx.now_ms >= at => reply::null_array(out),
            Some(_) => self.blocked = Some((req, at)),
            None => self.wait = self.wait.max(done.wait),
        }
    }

    /// The replica's number in the feed, if it is one.
    pub fn replica_id(&self) -> Option<u64> {
        self.replica.id
    }

    /// The sequence number the held replies wait for, if any are held.
    pub fn waiting(&self) -> Option<u64> {
        (!self.held.is_empty()).then_some(self.wait)
    }

    /// Bytes received and not yet handled.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// Released replies waiting for room in the network's output.
    pub fn unsent(&self) -> usize {
        self.ready.len() - self.ready_at
    }

    /// A smaller output-buffer limit (tests, configuration).
    pub fn with_output_limit(mut self, bytes: usize) -> Session {
        self.output_limit = bytes;
        self
    }

    /// Takes received bytes; `durable` is the order's durable prefix now.
    pub fn input(&mut self, data: &[u8], ctx: &mut Ctx<'_>, durable: u64, out: &mut dyn Out) -> Flow {
        if self.closing {
            return self.flow();
        }
        self.now_ms = ctx.now_ms;
        self.enter_db(ctx);
        let mut unread = std::mem::take(&mut self.buf);
        unread.feed(data, |d| self.run(d, ctx));
        if let Some(n) = self.parser.pending_bulk() {
            // Room for a long value early (up to 1 MB: a declared length alone must not make
            // a connection take much memory; beyond it the buffer grows as bytes arrive).
            unread.reserve(n.min(1 << 20));
        }
        self.buf = unread;
        let info = ctx.info;
        self.release(durable, out, info.feed());
        self.publish();
        self.flow()
    }

    /// Sends held replies if `durable` now covers them, and goes on with requests left
    /// unread.
    pub fn resume(&mut self, ctx: &mut Ctx<'_>, durable: u64, out: &mut dyn Out) -> Flow {
        let info = ctx.info;
        self.now_ms = ctx.now_ms;
        self.enter_db(ctx);
        self.retry_blocked(ctx);
        self.release(durable, out, info.feed());
        if !self.closing && !self.buf.is_empty() && self.acks.is_none() && self.blocked.is_none() {
            let mut unread = std::mem::take(&mut self.buf);
            unread.again(|d| self.run(d, ctx));
            self.buf = unread;
            self.release(durable, out, info.feed());
        }
        self.publish();
        self.flow()
    }

    fn flow(&self) -> Flow {
        if self.overflowed || (self.closing && self.held.is_empty() && self.unsent() == 0) {
            Flow::Close
        } else {
            Flow::Open
        }
    }

    /// Replies whose writes are durable become ready; ready replies go to the network while
    /// its output is under [`LIMIT`]; then a replica's stream, as far as there is room.
    fn release(&mut self, durable: u64, out: &mut dyn Out, feed: Option<&Feed>) {
        if let Some(w) = self.acks {
            // The client's changes are durable, in the stream, and acknowledged by enough
            // replicas — or the time is up: the count goes out.
            let at = feed.filter(|_| w.seq <= durable).and_then(|f| f.offset_after(w.seq));
            let acked = match (feed, at) {
                (Some(f), Some(at)) => f.acked(at),
                _ => 0,
            };
            if acked >= w.need || (w.deadline_ms != 0 && self.now_ms >= w.deadline_ms) || feed.is_none() {
                reply::int(&mut self.held, acked as i64);
                self.acks = None;
            }
        }
        if !self.held.is_empty() && self.wait <= durable {
            if self.unsent() == 0 && out.backlog() + self.held.len() <= LIMIT {
                out.put(&self.held);
            } else {
                self.ready.extend_from_slice(&self.held);
            }
            self.held.clear();
        }
        if let (Some(feed), Some(Follower::Loading { .. })) = (feed, &self.replica.follower) {
            self.send_file(feed);
        }
        let room = LIMIT.saturating_sub(out.backlog());
        if room > 0 && self.unsent() > 0 {
            let n = room.min(self.unsent());
            out.put(&self.ready[self.ready_at..self.ready_at + n]);
            self.ready_at += n;
            if self.ready_at == self.ready.len() {
                self.ready.clear();
                self.ready_at = 0;
            } else if self.ready_at > self.ready.len() / 2 {
                self.ready.drain(..self.ready_at);
                self.ready_at = 0;
            }
        }
        if let (Some(feed), Some(Follower::Streaming { next })) = (feed, &mut self.replica.follower) {
            let room = LIMIT.saturating_sub(out.backlog());
            if self.held.is_empty() && self.ready.is_empty() && room > 0 {
                match feed.read(*next, room, |b| out.put(b)) {
                    Some(n) => *next = n,
                    // Fallen out of the backlog: it must sync again, as Redis makes it.
                    None => self.overflowed = true,
                }
            }
        }
        if self.held.len() + self.unsent() > self.output_limit {
            self.overflowed = true;
        }
    }

    /// A replica's full sync: once the stream has passed the change its snapshot was taken
    /// at, the file goes out (after PSYNC's +FULLRESYNC with the offset the stream continues
    /// from), and the stream follows it.
    fn send_file(&mut self, feed: &Feed) {
        let Some(Follower::Loading { last, psync, rdb_only, rdb }) = &mut self.replica.follower else { return };
        let (psync, rdb_only) = (*psync, *rdb_only);
        let offset = if rdb_only {
            0
        } else {
            match feed.mark(*last) {
                Some(o) => o,
                None => return,
            }
        };
        let file = std::mem::take(rdb);
        if psync {
            self.ready.extend_from_slice(format!("+FULLRESYNC {} {offset}\r\n", feed.replid()).as_bytes());
        }
        self.ready.extend_from_slice(format!("${}\r\n", file.len()).as_bytes());
        self.ready.extend_from_slice(&file);
        // The file is allowed on top of the usual limit.
        self.output_limit = self.output_limit.max(self.unsent() + OUTPUT_LIMIT);
        if rdb_only {
            self.closing = true;
            self.replica.follower = None;
            return;
        }
        self.replica.follower = Some(Follower::Streaming { next: offset });
        if let Some(id) = self.replica.id {
            feed.update(id, true, None, 0);
        }
    }

    /// Handles the requests at the start of `data`; returns the bytes taken.
    fn run(&mut self, data: &[u8], ctx: &mut Ctx<'_>) -> usize {
        let mut at = 0;
        while at < data.len() && !self.closing && !self.overflowed && self.acks.is_none() && self.blocked.is_none() {
            match self.parser.parse(&data[at..]) {
                Parsed::Incomplete => break,
                Parsed::Request { consumed } => {
                    let req = &data[at..at + consumed];
                    if !self.parser.args.is_empty() {
                        let a = Argv::new(&self.parser.args, req);
                        ctx.journal.select(self.db);
                        let mut ran = crate::command::ran();
                        // Replies in the protocol the client chose (HELLO).
                        let mut v3;
                        let out: &mut dyn reply::Sink = if self.conn.resp3() {
                            v3 = reply::Resp3(&mut self.held);
                            &mut v3
                        } else {
                            &mut self.held
                        };
                        let done = match self.conn.handle(a, ctx, self.view.as_deref(), out) {
                            Some(done) => done,
                            None if !self.tx.in_multi() && a.get(0).eq_ignore_ascii_case(b"wait") => {
                                if let Some((need, deadline_ms)) = replica::wait_args(a, ctx.now_ms, out) {
                                    if let Some(f) = ctx.info.feed() {
                                        f.getack();
                                    }
                                    self.acks = Some(replica::AckWait { seq: self.wait, need, deadline_ms });
                                }
                                Done::default()
                            }
                            None => match self.replica.handle(a, ctx, &self.peer, out) {
                                Some(done) => done,
                                None => match self.tx.handle(a, req, ctx, out) {
                                    Some(done) => done,
                                    None => {
                                        ran = crate::command::ran();
                                        execute(a, ctx, out)
                                    }
                                },
                            },
                        };
                        if let Some(v) = &self.view {
                            // The table's commands say which they were as they run (no second
                            // lookup of the name); the session's own are looked up.
                            let id = if ran != crate::command::ran() {
                                crate::command::last_id()
                            } else {
                                crate::command::id_of(a.get(0))
                            };
                            v.last_ms.store(ctx.now_ms, std::sync::atomic::Ordering::Relaxed);
                            v.cmd.store(id, std::sync::atomic::Ordering::Relaxed);
                        }
                        self.wait = self.wait.max(done.wait);
                        // SELECT (also inside EXEC) moved the context to another database.
                        self.db = ctx.ks.index();
                        if let Some(deadline) = done.block {
                            self.blocked = Some((req.to_vec(), deadline));
                        }
                        self.commands += 1;
                        self.closing = done.close;
                        if self.held.len() + self.unsent() + self.tx.queued_bytes() > self.output_limit {
                            self.overflowed = true;
                        }
                    }
                    at += consumed;
                }
                Parsed::Error(e) => {
                    reply::error(&mut self.held, format!("ERR Protocol error: {}", e.text()).as_bytes());
                    self.closing = true;
                    return data.len();
                }
            }
        }
        at
    }
}

#[cfg(test)]
mod tests;
