//! One HTTP connection: the responses queued on its stream, the partial request it holds,
//! and its deadlines.

use crate::fetch::{Fetch, Plan};
use io::storage::FileId;
use std::collections::VecDeque;
use tcp::Instant;

/// Where a response's bytes come from.
#[derive(Debug, Clone, Copy)]
pub enum Body {
    /// A packetised `200` (store slot), with the head that says `close` or not, for `date`.
    Ready {
        /// Store slot.
        obj: u32,
        /// `Connection: close` head.
        close: bool,
        /// The date in its head.
        date: u64,
    },
    /// Formatted bytes at `at` in the connection's scratch (errors, 304, HEAD, redirects).
    Bytes {
        /// Offset in the scratch.
        at: u32,
    },
    /// Stream mode: a formatted head in the scratch, then file bytes read from disk as the
    /// window opens (the connection's [`Fetch`] holds them).
    Disk {
        /// Head offset in the scratch.
        at: u32,
        /// Head length.
        head: u32,
        /// The file (open on the engine's storage port).
        file: FileId,
    },
    /// A formatted head in the scratch, then body bytes of a store object from `from` (206).
    Range {
        /// Store slot.
        obj: u32,
        /// Head offset in the scratch.
        at: u32,
        /// Head length.
        head: u32,
        /// First body byte.
        from: u64,
    },
}

/// A response on the stream.
#[derive(Debug, Clone, Copy)]
pub struct Resp {
    /// Stream offset of its first byte.
    pub start: u64,
    /// Its length.
    pub len: u64,
    /// Its bytes.
    pub body: Body,
}

/// Most responses queued on one connection (pipelining depth); further requests wait in
/// the partial buffer until responses are acknowledged.
pub const MAX_QUEUED: usize = 32;

/// Connection state.
pub struct Conn {
    /// Responses not yet fully acknowledged, in stream order.
    pub resps: VecDeque<Resp>,
    /// Stream end: bytes queued so far.
    pub end: u64,
    /// Formatted response bytes.
    pub scratch: Vec<u8>,
    /// Request bytes not parsed yet.
    pub partial: Vec<u8>,
    /// Request body bytes still to discard.
    pub skip: u64,
    /// Requests answered.
    pub requests: u32,
    /// No more requests are read (close after the responses).
    pub closing: bool,
    /// When the connection is given up if nothing changes (milliseconds, engine clock).
    pub deadline: Instant,
    /// Stream mode's part, from the first response read from disk: kept apart so that the
    /// connections of a server answering from memory do not carry it (144 bytes; issue 44).
    pub streaming: Option<Box<Streaming>>,
}

/// What a connection of stream mode holds besides the rest.
#[derive(Debug, Default)]
pub struct Streaming {
    /// The file bytes of its responses, read as the window opens.
    pub fetch: Fetch,
    /// The read in flight for it, if any.
    pub reading: Option<Plan>,
    /// Its place in the streamer's queue of connections waiting for a buffer (0: not in it).
    pub queued: u64,
}

impl Conn {
    /// A new connection.
    pub fn new(deadline: Instant) -> Conn {
        Conn {
            resps: VecDeque::new(),
            end: 0,
            scratch: Vec::new(),
            partial: Vec::new(),
            skip: 0,
            requests: 0,
            closing: false,
            deadline,
            streaming: None,
        }
    }

    /// Stream mode's part, made on first use.
    pub fn streaming(&mut self) -> &mut Streaming {
        self.streaming.get_or_insert_with(Box::default)
    }

    /// Stream mode: the bytes read from disk and held at stream offset `off`.
    pub fn held_at(&self, off: u64) -> u64 {
        self.streaming.as_ref().map_or(0, |s| s.fetch.held_at(off))
    }

    /// True when a stream-mode connection has file bytes to read and no read in flight.
    pub fn wants_read(&self) -> bool {
        self.streaming.as_ref().is_some_and(|s| !s.fetch.is_empty() && s.reading.is_none())
    }

    /// Queues a response of `len` bytes.
    pub fn push(&mut self, len: u64, body: Body) {
        self.resps.push_back(Resp { start: self.end, len, body });
        self.end += len;
    }

    /// The responses covering stream offset `off`, from the first one that does.
    pub fn at(&self, off: u64) -> impl Iterator<Item = &Resp> {
        let i = self.resps.partition_point(|r| r.start + r.len <= off);
        self.resps.range(i..)
    }

    /// The response holding `off`.
    pub fn find(&self, off: u64) -> Option<&Resp> {
        self.at(off).next().filter(|r| r.start <= off)
    }

    /// True when nothing is queued or pending.
    pub fn idle(&self) -> bool {
        self.resps.is_empty() && self.partial.is_empty()
    }

    /// Drops formatted bytes no queued response refers to.
    pub fn compact_scratch(&mut self) {
        let min = self
            .resps
            .iter()
            .filter_map(|r| match r.body {
                Body::Bytes { at } | Body::Range { at, .. } | Body::Disk { at, .. } => Some(at),
                Body::Ready { .. } => None,
            })
            .min();
        match min {
            None => self.scratch.clear(),
            Some(m) if m > 0 && self.scratch.len() > 16 * 1024 => {
                self.scratch.drain(..m as usize);
                for r in &mut self.resps {
                    if let Body::Bytes { at } | Body::Range { at, .. } | Body::Disk { at, .. } = &mut r.body {
                        *at -= m;
                    }
                }
            }
            Some(_) => {}
        }
    }
}

impl tcp::Source for Conn {
    fn end(&self) -> u64 {
        self.end
    }
    fn fill(&self, _off: u64, dst: &mut [u8]) {
        // Never called: the server's `App::fill` reads the store, which the connection does
        // not own.
        dst.fill(0);
    }
    fn boundary(&self, off: u64) -> u64 {
        self.find(off).map_or(u64::MAX, |r| r.start + r.len)
    }
}
