//! The channel's side of the level-1 interface: it turns the endpoint's callbacks into raw
//! events for the next batch, and serves each connection's bytes from the extents the
//! application handed to `sendv`.

use std::cell::Cell;

use wire::IpAddr;

use super::buffers::{Buffers, Extent};
use crate::api::{App, Ctl, Handle, Source};
use crate::tcb::End;

/// Extents a connection can hold (`sendv` takes no more; contiguous extents merge).
pub const MAX_EXTENTS: usize = 16;

/// Where a received view lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Where {
    /// In the payload the caller passed to `input` as view `id`, at `off`.
    Frame { id: u32, off: u32, len: u32 },
    /// Copied into the batch's arena (data that came out of the reassembly buffer, which is
    /// returned to its pool at once).
    Arena { off: u32, len: u32 },
}

/// An event as stored until its batch is handed out. The cookie is a cell because an
/// `accept` made while the batch is handled binds it for the events of that connection still
/// to come in the same batch (a request often arrives right behind the handshake's ACK).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Raw {
    pub(crate) h: Handle,
    pub(crate) cookie: Cell<Option<u64>>,
    pub(crate) kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Knock { port: u16, remote: (IpAddr, u16) },
    Connected { outcome: Result<(), End> },
    Recv { at: Where },
    Sent { acked: u64, window: u32 },
    PeerClosed,
    Dead { end: End },
}

/// One connection, as the channel keeps it: the application's cookie and the extents still to
/// be acknowledged.
#[derive(Debug)]
pub struct ChannelConn {
    pub(crate) cookie: u64,
    /// Accepted by the application (or opened by it).
    pub(crate) accepted: bool,
    pub(crate) rejected: bool,
    pub(crate) established: bool,
    ext: [Extent; MAX_EXTENTS],
    head: usize,
    len: usize,
    /// Stream offset of the first byte of `ext[head]`.
    base: u64,
    end: u64,
    reported: u64,
}

impl ChannelConn {
    pub(crate) fn new(cookie: u64, accepted: bool) -> ChannelConn {
        let none = Extent { buf: super::buffers::BufId::default(), off: 0, len: 0 };
        ChannelConn {
            cookie,
            accepted,
            rejected: false,
            established: false,
            ext: [none; MAX_EXTENTS],
            head: 0,
            len: 0,
            base: 0,
            end: 0,
            reported: 0,
        }
    }

    /// The cookie, once the application holds the connection.
    fn bound(&self) -> Option<u64> {
        self.accepted.then_some(self.cookie)
    }

    fn at(&self, i: usize) -> &Extent {
        &self.ext[(self.head + i) % MAX_EXTENTS]
    }

    /// Appends what `room` allows of `extents`; returns the bytes taken.
    pub(crate) fn take(&mut self, bufs: &mut Buffers, extents: &[Extent], room: u64) -> u32 {
        let mut taken = 0u64;
        for e in extents {
            let n = u64::from(e.len).min(room - taken);
            if n == 0 {
                break;
            }
            let part = Extent { len: n as u32, ..*e };
            let last = (self.head + self.len + MAX_EXTENTS - 1) % MAX_EXTENTS;
            if self.len > 0 && self.ext[last].buf == part.buf && self.ext[last].off + self.ext[last].len == part.off {
                self.ext[last].len += part.len;
                bufs.lend(part, false);
            } else if self.len < MAX_EXTENTS {
                self.ext[(self.head + self.len) % MAX_EXTENTS] = part;
                self.len += 1;
                bufs.lend(part, true);
            } else {
                break;
            }
            taken += n;
            self.end += n;
        }
        taken as u32
    }

    /// Lets go of the extents below stream offset `acked`.
    fn release_below(&mut self, bufs: &mut Buffers, acked: u64) {
        while self.len > 0 && self.base < acked {
            let e = &mut self.ext[self.head];
            let n = (acked - self.base).min(u64::from(e.len)) as u32;
            e.off += n;
            e.len -= n;
            self.base += u64::from(n);
            if e.len == 0 {
                bufs.release(e.buf);
                self.head = (self.head + 1) % MAX_EXTENTS;
                self.len -= 1;
            }
        }
    }

    fn release_all(&mut self, bufs: &mut Buffers) {
        while self.len > 0 {
            bufs.release(self.ext[self.head].buf);
            self.head = (self.head + 1) % MAX_EXTENTS;
            self.len -= 1;
        }
    }

    fn fill(&self, bufs: &Buffers, off: u64, dst: &mut [u8]) {
        let mut pos = self.base;
        let mut done = 0;
        for i in 0..self.len {
            if done == dst.len() {
                break;
            }
            let e = *self.at(i);
            let e_end = pos + u64::from(e.len);
            let want = off + done as u64;
            if want < e_end {
                let skip = (want - pos) as u32;
                let n = ((e.len - skip) as usize).min(dst.len() - done);
                let part = Extent { buf: e.buf, off: e.off + skip, len: n as u32 };
                dst[done..done + n].copy_from_slice(bufs.bytes(part));
                done += n;
            }
            pos = e_end;
        }
        debug_assert_eq!(done, dst.len(), "TCP asked for bytes the extents do not hold");
    }
}

impl Source for ChannelConn {
    fn end(&self) -> u64 {
        self.end
    }

    fn fill(&self, _off: u64, _dst: &mut [u8]) {
        // The extents name memory in the hub's buffers, so the hub's App::fill serves every
        // channel connection; nothing reaches this.
        debug_assert!(false, "channel connections are filled by the hub");
    }
}

/// The level-1 application behind a channel.
pub struct Hub {
    pub(crate) next: Vec<Raw>,
    pub(crate) arena: Vec<u8>,
    pub(crate) bufs: Buffers,
    /// The payload being input now: (view id, address, length), to tell frame views from
    /// reassembled data.
    pub(crate) seg: Option<(u32, usize, usize)>,
}

impl Hub {
    pub(crate) fn new(bufs: Buffers) -> Hub {
        Hub { next: Vec::new(), arena: Vec::new(), bufs, seg: None }
    }

    fn push(&mut self, h: Handle, cookie: Option<u64>, kind: Kind) {
        self.next.push(Raw { h, cookie: Cell::new(cookie), kind });
    }

    fn place(&mut self, data: &[u8]) -> Where {
        if let Some((id, base, len)) = self.seg {
            let p = data.as_ptr() as usize;
            if p >= base && p + data.len() <= base + len {
                return Where::Frame { id, off: (p - base) as u32, len: data.len() as u32 };
            }
        }
        let off = self.arena.len() as u32;
        self.arena.extend_from_slice(data);
        Where::Arena { off, len: data.len() as u32 }
    }
}

impl App for Hub {
    type Conn = ChannelConn;

    fn accept(&mut self, h: Handle, port: u16, remote: (IpAddr, u16)) -> Option<ChannelConn> {
        self.push(h, None, Kind::Knock { port, remote });
        Some(ChannelConn::new(0, false))
    }

    fn opened(&mut self, _h: Handle, c: &mut ChannelConn, _ctl: &mut Ctl) {
        c.established = true;
    }

    fn connected(&mut self, h: Handle, c: &mut ChannelConn, _ctl: &mut Ctl) {
        c.established = true;
        self.push(h, c.bound(), Kind::Connected { outcome: Ok(()) });
    }

    fn recv(&mut self, h: Handle, c: &mut ChannelConn, data: &[u8], _ctl: &mut Ctl) {
        if c.rejected || data.is_empty() {
            return;
        }
        let at = self.place(data);
        self.push(h, c.bound(), Kind::Recv { at });
    }

    fn sent(&mut self, h: Handle, c: &mut ChannelConn, acked: u64, _ctl: &mut Ctl) {
        c.release_below(&mut self.bufs, acked);
        let n = acked - c.reported;
        c.reported = acked;
        // The window is read when the batch is handed out, so it is the latest.
        self.push(h, c.bound(), Kind::Sent { acked: n, window: 0 });
    }

    fn peer_closed(&mut self, h: Handle, c: &mut ChannelConn, _ctl: &mut Ctl) {
        // The application decides when to close its side.
        self.push(h, c.bound(), Kind::PeerClosed);
    }

    fn closed(&mut self, h: Handle, mut c: ChannelConn, end: End) {
        c.release_all(&mut self.bufs);
        if c.rejected {
            return;
        }
        if c.accepted && !c.established {
            self.push(h, c.bound(), Kind::Connected { outcome: Err(end) });
        } else {
            self.push(h, c.bound(), Kind::Dead { end });
        }
    }

    fn fill(&self, c: &ChannelConn, off: u64, dst: &mut [u8]) {
        c.fill(&self.bufs, off, dst);
    }
}
