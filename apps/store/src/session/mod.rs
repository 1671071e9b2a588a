//! One client connection, sans-IO: bytes in, commands run, replies out — held back until
//! what they show is durable.
//!
//! Replies are gathered in the session and released together once the order's durable
//! prefix reaches the highest sequence number any of them depends on; later replies queue
//! behind earlier ones, so pipelined requests are answered in order. While replies or output
//! pile up past [`LIMIT`], requests are left unread (the client's own TCP window then holds it
//! back).

use crate::command::{execute, Argv, Ctx};
use resp::reply;
use resp::{Parsed, Parser};
use tcp::channel::streams::Unread;

/// Replies held, or output waiting for the network, above which requests are left unread.
pub const LIMIT: usize = tcp::channel::streams::HIGH_WATER;

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
    closing: bool,
    /// Set while the server has the session on its list of those waiting for durability.
    pub queued: bool,
    /// Requests handled.
    pub commands: u64,
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
            closing: false,
            queued: false,
            commands: 0,
        }
    }

    /// The sequence number the held replies wait for, if any are held.
    pub fn waiting(&self) -> Option<u64> {
        (!self.held.is_empty()).then_some(self.wait)
    }

    /// Bytes received and not yet handled.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// Takes received bytes; `durable` is the order's durable prefix now.
    pub fn input(&mut self, data: &[u8], ctx: &mut Ctx<'_>, durable: u64, out: &mut dyn Out) -> Flow {
        if self.closing {
            return self.flow();
        }
        let mut unread = std::mem::take(&mut self.buf);
        unread.feed(data, |d| self.run(d, ctx, out));
        if let Some(n) = self.parser.pending_bulk() {
            // Room for a long value early (up to 1 MB: a declared length alone must not make
            // a connection take much memory; beyond it the buffer grows as bytes arrive).
            unread.reserve(n.min(1 << 20));
        }
        self.buf = unread;
        self.release(durable, out);
        self.flow()
    }

    /// Sends held replies if `durable` now covers them, and goes on with requests left
    /// unread.
    pub fn resume(&mut self, ctx: &mut Ctx<'_>, durable: u64, out: &mut dyn Out) -> Flow {
        self.release(durable, out);
        if !self.closing && !self.buf.is_empty() {
            let mut unread = std::mem::take(&mut self.buf);
            unread.again(|d| self.run(d, ctx, out));
            self.buf = unread;
            self.release(durable, out);
        }
        self.flow()
    }

    fn flow(&self) -> Flow {
        if self.closing && self.held.is_empty() {
            Flow::Close
        } else {
            Flow::Open
        }
    }

    fn release(&mut self, durable: u64, out: &mut dyn Out) {
        if !self.held.is_empty() && self.wait <= durable {
            out.put(&self.held);
            self.held.clear();
        }
    }

    /// Handles the requests at the start of `data`; returns the bytes taken.
    fn run(&mut self, data: &[u8], ctx: &mut Ctx<'_>, out: &mut dyn Out) -> usize {
        let mut at = 0;
        while at < data.len() && !self.closing && self.held.len() <= LIMIT && out.backlog() <= LIMIT {
            match self.parser.parse(&data[at..]) {
                Parsed::Incomplete => break,
                Parsed::Request { consumed } => {
                    let req = &data[at..at + consumed];
                    if !self.parser.args.is_empty() {
                        let done = execute(Argv::new(&self.parser.args, req), ctx, &mut self.held);
                        self.wait = self.wait.max(done.wait);
                        self.commands += 1;
                        self.closing = done.close;
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
