//! One client connection, sans-IO: received bytes in, cache operations, response bytes out.
//!
//! A connection speaks the binary protocol if its first byte is 0x80 and the text protocol
//! otherwise (as memcached decides). Commands are taken straight from the bytes received
//! where they are whole; a command split across segments (or a value of many segments) waits
//! in the session's buffer, which is bounded by the largest item plus a line. While the
//! output waiting for the network is over [`BACKLOG_LIMIT`], commands are left unread, so a
//! client that does not read its answers is held back by its own TCP window, not by our
//! memory.

mod binary;
mod meta;
pub mod out;
mod text;

use crate::cache::Cache;
use crate::stats::Counters;
use out::Out;
use tcp::channel::streams::Unread;

/// Output bytes waiting for the network above which a session stops reading commands.
pub const BACKLOG_LIMIT: usize = tcp::channel::streams::HIGH_WATER;

/// What a server knows beyond the cache, for `stats`.
pub trait Info {
    /// Calls `each(name, value)` for every statistic of `group` (empty: the general ones);
    /// false if there is no such group.
    fn stats(&self, group: &[u8], now: u32, each: &mut dyn FnMut(&str, &str)) -> bool;
    /// The version string (`VERSION …`).
    fn version(&self) -> &str;
    /// `stats reset`: every count from zero, at once for every connection.
    fn reset(&self);
}

/// What a command runs against.
pub struct Ctx<'a> {
    /// The shared cache.
    pub cache: &'a Cache,
    /// Cache time now.
    pub now: u32,
    /// This engine's counters.
    pub counters: &'a Counters,
    /// The server, for `stats` and `version`.
    pub info: &'a dyn Info,
    /// Per-prefix counts (`stats detail`).
    pub detail: &'a crate::stats::Detail,
}

/// What the connection is to do after input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep it open.
    Open,
    /// Close it once the output is sent (`quit`, or a protocol error memcached closes on).
    Close,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Proto {
    Unknown,
    Text,
    Binary,
}

/// How one step of parsing ended.
pub(crate) enum Step {
    /// A command was handled; it took this many bytes.
    Done(usize),
    /// The command is not all here yet.
    Incomplete,
    /// Close the connection.
    Close,
}

/// One connection's protocol state.
pub struct Session {
    proto: Proto,
    buf: Unread,
    /// Bytes still to be skipped (the data of a store that was refused before it arrived).
    swallow: usize,
    closing: bool,
}

impl Default for Session {
    fn default() -> Self {
        Session::new()
    }
}

impl Session {
    /// A new connection's session.
    pub fn new() -> Session {
        Session { proto: Proto::Unknown, buf: Unread::default(), swallow: 0, closing: false }
    }

    /// Bytes received and not yet handled.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// Takes received bytes: handles every whole command (while the output backlog allows)
    /// and keeps the rest.
    pub fn input(&mut self, data: &[u8], ctx: &mut Ctx<'_>, out: &mut dyn Out) -> Flow {
        ctx.counters.bytes_read.add(data.len() as u64);
        if self.closing {
            return Flow::Close;
        }
        let mut unread = std::mem::take(&mut self.buf);
        unread.feed(data, |d| self.run(d, ctx, out));
        self.buf = unread;
        self.flow()
    }

    /// Handles commands left waiting (call when the backlog has shrunk).
    pub fn resume(&mut self, ctx: &mut Ctx<'_>, out: &mut dyn Out) -> Flow {
        if !self.buf.is_empty() && !self.closing {
            self.resume_inner(ctx, out);
        }
        self.flow()
    }

    fn flow(&mut self) -> Flow {
        if self.closing {
            self.buf.clear();
            Flow::Close
        } else {
            Flow::Open
        }
    }

    fn resume_inner(&mut self, ctx: &mut Ctx<'_>, out: &mut dyn Out) {
        let mut unread = std::mem::take(&mut self.buf);
        unread.again(|d| self.run(d, ctx, out));
        self.buf = unread;
    }

    /// Handles the commands at the start of `data`; returns the bytes taken.
    fn run(&mut self, data: &[u8], ctx: &mut Ctx<'_>, out: &mut dyn Out) -> usize {
        let mut at = 0;
        loop {
            if self.swallow > 0 {
                let n = self.swallow.min(data.len() - at);
                self.swallow -= n;
                at += n;
                if self.swallow > 0 {
                    return at;
                }
            }
            if at == data.len() || self.closing || out.backlog() > BACKLOG_LIMIT {
                return at;
            }
            if self.proto == Proto::Unknown {
                self.proto = if data[at] == memcache::binary::REQUEST { Proto::Binary } else { Proto::Text };
            }
            let step = match self.proto {
                Proto::Binary => binary::step(&data[at..], ctx, out, &mut self.swallow),
                _ => text::step(&data[at..], ctx, out, &mut self.swallow),
            };
            match step {
                Step::Done(n) => at += n,
                Step::Incomplete => return at,
                Step::Close => {
                    self.closing = true;
                    return data.len();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
