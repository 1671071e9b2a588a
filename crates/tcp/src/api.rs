//! TCP's public face to applications at level 1 (callbacks, Sandstorm's style): the
//! connection's [`Source`] of bytes, the [`App`] callbacks and what they ask of their
//! connection ([`Ctl`]), the [`Handle`] naming a connection, and the [`Output`] the caller
//! gives for segments to leave by (free slots of the TX ring), with its [`Gather`] and
//! [`PinnedFrames`] variants. The connection table that drives them is [`crate::endpoint`];
//! the level-2 interface is [`crate::channel`].

use crate::tcb::{End, SegOut};
use wire::IpAddr;

/// Where a connection's outgoing bytes come from. Nothing is copied into a send buffer: the
/// stack asks for the bytes at an offset each time it (re)transmits.
pub trait Source {
    /// Stream offset one past the last byte available now (never decreases).
    fn end(&self) -> u64;
    /// Copies the bytes at `off .. off + dst.len()` (all below `end`) into `dst`.
    fn fill(&self, off: u64, dst: &mut [u8]);
    /// Everything before `off` is acknowledged and will never be asked for again.
    fn release(&mut self, off: u64) {
        let _ = off;
    }
    /// The end of the message (a response) holding stream offset `off`, for a layer that
    /// frames the stream: TLS cuts its records there, so no record needs bytes of two
    /// messages. `u64::MAX` when the source does not say.
    fn boundary(&self, off: u64) -> u64 {
        let _ = off;
        u64::MAX
    }
}

/// What a callback asks of its connection, applied when it returns.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Ctl {
    pub(crate) done: u32,
    pub(crate) close: bool,
    pub(crate) abort: bool,
    pub(crate) wake: Option<crate::Instant>,
}

impl Ctl {
    /// The application is finished with `n` more received bytes (the window reopens).
    pub fn recv_done(&mut self, n: u32) {
        self.done = self.done.saturating_add(n);
    }
    /// Half-close once the source is sent.
    pub fn close(&mut self) {
        self.close = true;
    }
    /// Reset the connection.
    pub fn abort(&mut self) {
        self.abort = true;
    }
    /// Calls [`App::woken`] at `at` or soon after (the earliest of the times asked for, until
    /// it is called). The connection's one timer serves it: an application's deadlines cost
    /// nothing per idle connection and nothing scans for them.
    pub fn wake_at(&mut self, at: crate::Instant) {
        self.wake = Some(self.wake.map_or(at, |w| w.min(at)));
    }
    /// The wake-up asked for, if any (for a layer between TCP and its application).
    pub fn wants_wake(&self) -> Option<crate::Instant> {
        self.wake
    }
    /// Whether `close` was asked for (for a layer between TCP and its application, such as
    /// TLS, that forwards what the application asked).
    pub fn wants_close(&self) -> bool {
        self.close
    }
    /// Whether `abort` was asked for.
    pub fn wants_abort(&self) -> bool {
        self.abort
    }
}

/// A connection's handle: slab index and generation, so a stale handle never reaches a reused
/// slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handle {
    pub(crate) idx: u32,
    pub(crate) gen: u32,
}

impl Handle {
    /// A number unique among live connections (for logs and tests).
    pub fn index(&self) -> u32 {
        self.idx
    }

    /// The handle as one number, to carry through an asynchronous request (a disk read's
    /// cookie) and back with [`Handle::from_bits`]. A connection that ended meanwhile is
    /// told apart by its generation: the endpoint no longer answers for it.
    pub fn to_bits(self) -> u64 {
        (u64::from(self.gen) << 32) | u64::from(self.idx)
    }

    /// The handle [`Handle::to_bits`] made.
    pub fn from_bits(bits: u64) -> Handle {
        Handle { idx: bits as u32, gen: (bits >> 32) as u32 }
    }
}

/// The application (level 1): callbacks with the connection's own state, which is also its
/// source.
pub trait App {
    /// Per-connection state: the cookie of MegaPipe and IX, and the source of its bytes.
    type Conn: Source;
    /// A connection to a listening port completed its handshake. Return its state to accept
    /// it, None to refuse (it is reset).
    fn accept(&mut self, h: Handle, local_port: u16, remote: (IpAddr, u16)) -> Option<Self::Conn>;
    /// A passive open completed and was accepted (right after `accept`, with a `Ctl`).
    fn opened(&mut self, h: Handle, c: &mut Self::Conn, ctl: &mut Ctl) {
        let _ = (h, c, ctl);
    }
    /// An active open completed.
    fn connected(&mut self, h: Handle, c: &mut Self::Conn, ctl: &mut Ctl) {
        let _ = (h, c, ctl);
    }
    /// In-order data, as a read-only view valid during the call. Call `ctl.recv_done` for what
    /// is finished with (now or later through [`Endpoint::recv_done`]).
    fn recv(&mut self, h: Handle, c: &mut Self::Conn, data: &[u8], ctl: &mut Ctl);
    /// The peer acknowledged everything before stream offset `acked`, or its window opened.
    fn sent(&mut self, h: Handle, c: &mut Self::Conn, acked: u64, ctl: &mut Ctl) {
        let _ = (h, c, acked, ctl);
    }
    /// The time a callback gave [`Ctl::wake_at`] has come.
    fn woken(&mut self, h: Handle, c: &mut Self::Conn, ctl: &mut Ctl) {
        let _ = (h, c, ctl);
    }
    /// The peer finished sending (FIN).
    fn peer_closed(&mut self, h: Handle, c: &mut Self::Conn, ctl: &mut Ctl) {
        let _ = (h, c);
        ctl.close();
    }
    /// The connection ended; its state comes back.
    fn closed(&mut self, h: Handle, c: Self::Conn, end: End);
    /// Copies the bytes of `c` at `off .. off + dst.len()` into a segment. An application
    /// whose connections send from memory it holds itself (the channel's buffers) overrides
    /// this; by default the connection's own [`Source`] fills.
    fn fill(&self, c: &Self::Conn, off: u64, dst: &mut [u8]) {
        c.fill(off, dst);
    }
    /// The most bytes a segment starting at stream offset `off` of `c` may carry. An
    /// application that keeps its bytes as ready-made segments (Sandstorm) returns the end of
    /// the one at `off`, so segments always line up with them; one that reads its bytes from
    /// disk as the window opens (Atlas) returns how many it holds at `off`, and 0 while they
    /// are being read — nothing is sent from `off` then, and the application kicks the
    /// connection ([`Endpoint::kick`]) when the read completes. No limit by
    /// default.
    fn seg_limit(&self, c: &Self::Conn, off: u64) -> u32 {
        let _ = (c, off);
        u32::MAX
    }
    /// Writes a whole data segment — `seg`'s header and its payload from stream offset
    /// `seg.data_off` — into `buf` (`header_len + payload_len` bytes) from a segment the
    /// application prepared, checksum included, and returns true; false has the segment built
    /// the ordinary way (header emitted, payload filled, checksum summed over it).
    fn write_ready(&self, c: &Self::Conn, seg: &SegOut, local: IpAddr, remote: IpAddr, buf: &mut [u8]) -> bool {
        let _ = (c, seg, local, remote, buf);
        false
    }
    /// The connection had something to send from stream offset `off` (a retransmission, or
    /// new bytes) and [`App::seg_limit`] said 0 there: an application that let go of bytes
    /// once they were sent (Atlas frees a buffer when its transmission completes) fetches
    /// them again, and kicks the connection ([`Endpoint::kick`]) when it holds them.
    fn starved(&mut self, h: Handle, c: &mut Self::Conn, off: u64) {
        let _ = (h, c, off);
    }
    /// Where the bytes of `c` from stream offset `off` are, at most `max` of them: in the TX
    /// port's lent region, to be sent from there as they are (Atlas: a disk read's buffer
    /// becomes the payload), or to be copied with [`App::fill`]. Copy by default.
    fn placed(&self, c: &Self::Conn, off: u64, max: u32) -> Placed {
        let _ = (c, off);
        Placed::Copy { len: max }
    }
    /// Sends a data segment from a replica the application keeps in the TX arena (Sandstorm's
    /// pre-copy): picks or makes a frame holding the segment's bytes and sends it through
    /// `r` with the header rewritten in place. True if sent that way (or lost like a dropped
    /// packet); false has it written by [`App::write_ready`] or built the ordinary way.
    fn send_replica(
        &mut self,
        c: &Self::Conn,
        seg: &SegOut,
        local: IpAddr,
        remote: IpAddr,
        r: &mut dyn PinnedFrames,
    ) -> bool {
        let _ = (c, seg, local, remote, r);
        false
    }
}

/// Where a run of a connection's bytes is (see [`App::placed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// `len` bytes at address `addr` of the TX port's lent region.
    Arena {
        /// Arena address of the first byte.
        addr: u64,
        /// How many.
        len: u32,
    },
    /// `len` bytes that [`App::fill`] copies.
    Copy {
        /// How many.
        len: u32,
    },
}

impl Placed {
    /// Bytes in the run.
    pub fn len(&self) -> u32 {
        match *self {
            Placed::Arena { len, .. } | Placed::Copy { len } => len,
        }
    }
    /// True if the run is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Most runs one gathered segment is made of; a segment in more pieces is copied instead.
pub const MAX_RUNS: usize = 8;

/// A TX path that sends a segment gathered from several buffers.
pub trait Gather {
    /// Sends one segment from `local` to `remote`: a TCP header of `header_len` bytes, then
    /// the payload in `runs`. `fill(at, buf)` copies the payload bytes from offset `at` on
    /// into `buf` for each `Copy` run; then `header(buf, sum)` writes the header, given the
    /// one's-complement sum of the payload (RFC 1071, unfolded) for its checksum, or None
    /// when the device finishes the checksum (the field then holds the pseudo-header sum,
    /// as for CHECKSUM_PARTIAL). False if
    /// the segment could not be sent this way (no room for its pieces): nothing was sent,
    /// and the caller sends it the ordinary way.
    fn send(
        &mut self,
        local: IpAddr,
        remote: IpAddr,
        header_len: usize,
        runs: &[Placed],
        fill: &mut dyn FnMut(u64, &mut [u8]),
        header: &mut dyn FnMut(&mut [u8], Option<u64>),
    ) -> bool;
}

/// The TX arena, for applications that keep replicas of prepared segments in it.
pub trait PinnedFrames {
    /// A frame taken out of circulation for the application, or None (none free, or the
    /// output cannot pin). It comes back to the application after each transmission.
    fn pin(&mut self) -> Option<u64>;
    /// Room for a segment in a pinned frame (where the TCP header goes, to the frame's end),
    /// placed for a packet over IPv6 (`v6`) or IPv4: a replica serves one family.
    fn segment_mut(&mut self, frame: u64, v6: bool) -> &mut [u8];
    /// Sends the segment of `len` bytes held by pinned `frame` to `remote`, after `write`
    /// has rewritten it in place. Uses one unit of the output's room.
    fn send(&mut self, remote: IpAddr, frame: u64, len: usize, write: &mut dyn FnMut(&mut [u8]));
}

/// The TX ring, as seen by the stack.
pub trait Output {
    /// Segments that can be sent now.
    fn room(&self) -> usize;
    /// Sends one segment of `len` bytes (TCP header and payload) from `local` to `remote`;
    /// `write` fills the buffer. Only called when `room() > 0`.
    fn send(&mut self, local: IpAddr, remote: IpAddr, len: usize, write: &mut dyn FnMut(&mut [u8]));
    /// The TX arena for replicas, if this output has one.
    fn replicas(&mut self) -> Option<&mut dyn PinnedFrames> {
        None
    }
    /// The gathering TX path, if this output has a lent region to send from.
    fn gather(&mut self) -> Option<&mut dyn Gather> {
        None
    }
}
