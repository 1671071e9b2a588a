//! The level-1 application interface: UDP handlers that answer in place, and a producer hook
//! for applications that originate traffic (the load generator).

use timer::{Duration, Instant};
use wire::tcp::TcpRepr;
use wire::IpAddr;

/// A datagram handed to an application, in the receive buffer itself.
pub struct Datagram<'a> {
    /// Sender's address (IPv4 or IPv6: the reply goes back in the same family).
    pub src: IpAddr,
    /// Sender's port.
    pub src_port: u16,
    /// Our port it was sent to.
    pub dst_port: u16,
    /// The payload is `buf[..len]`; the rest of `buf` is room for a longer reply (bounded
    /// by the MTU).
    pub buf: &'a mut [u8],
    /// Payload length.
    pub len: usize,
}

/// What to do with a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Send the payload back unchanged to the sender: the engine only swaps addresses and
    /// ports, which leaves every checksum valid as it is.
    Echo,
    /// Send `buf[..n]` back to the sender; the engine fixes lengths and checksums.
    Reply(usize),
    /// As `Reply`, with the one's-complement sum of `buf[..len]` (RFC 1071, folded, not
    /// complemented) supplied by an application that built the payload from pieces whose
    /// sums it knew beforehand; the engine then never reads the payload.
    ReplySummed {
        /// Payload length.
        len: usize,
        /// Folded sum of the payload.
        sum: u16,
    },
    /// The application took the datagram and sends nothing back (a sink, a generator's
    /// reply); the buffer is released.
    Consume,
    /// The application refused the datagram (counted as a drop).
    Drop,
}

/// An application served by an engine.
pub trait Service {
    /// UDP ports this application serves on the engine's addresses, IPv4 and IPv6 (none by
    /// default: a TCP-only application).
    fn udp_ports(&self) -> Vec<u16> {
        Vec::new()
    }

    /// Handles one datagram to one of [`Service::udp_ports`].
    fn udp(&mut self, _now: Instant, _d: Datagram<'_>) -> Verdict {
        Verdict::Drop
    }

    /// Called once per loop iteration to originate frames through `out`; returns how many it
    /// queued (0 when idle, so the engine may sleep).
    fn produce(&mut self, _now: Instant, _out: &mut dyn Originate) -> usize {
        0
    }

    /// True while the application wants the engine to keep polling even with no traffic.
    fn busy(&self) -> bool {
        false
    }

    /// TCP ports this application serves on the engine's address.
    fn tcp_ports(&self) -> Vec<u16> {
        Vec::new()
    }

    /// One TCP segment to one of [`Service::tcp_ports`], checksum verified; `payload` is a view of
    /// the receive buffer, valid for this call — or, when [`Service::holds_tcp_frames`], until
    /// [`Service::produce`] of this iteration returns, as `out.view(view)`.
    fn tcp(&mut self, now: Instant, src: IpAddr, dst: IpAddr, seg: &TcpRepr, payload: &[u8], view: u32) {
        let _ = (now, src, dst, seg, payload, view);
    }

    /// A router on the way from `local:local_port` to `remote:remote_port` could not forward a
    /// packet of ours larger than `mtu` (ICMPv6 Packet Too Big, ICMP fragmentation needed):
    /// TCP sends smaller segments on that connection from now on.
    fn path_mtu(&mut self, local: IpAddr, remote: IpAddr, local_port: u16, remote_port: u16, mtu: u16) {
        let _ = (local, remote, local_port, remote_port, mtu);
    }

    /// Addresses of this application's state that `frame` (received, not yet checked) will
    /// be looked up in first, handed to `each` for the engine to prefetch while it processes
    /// the frames before it (none by default).
    fn hints(&self, frame: &[u8], each: &mut dyn FnMut(*const u8)) {
        let _ = (frame, each);
    }

    /// True if the engine should keep the frames of TCP segments until `produce` returns (an
    /// application that hands out views of them in batches).
    fn holds_tcp_frames(&self) -> bool {
        false
    }

    /// With `on` (several engines), the application's TCP leaves a segment of a connection it
    /// does not hold to the engine, which hands it to the engine that does, rather than
    /// answering it with a reset.
    fn forward_strays(&mut self, on: bool) {
        let _ = on;
    }

    /// True if the last segment given to [`Service::tcp`] was left to the engine.
    fn take_stray(&mut self) -> bool {
        false
    }

    /// The NIC port lends `region` of its arena (it was opened with some to lend): buffers
    /// placed there can be sent as packet payload where they are
    /// ([`Originate::tcp_gather`]). Called once, before the loop starts.
    fn lend(&mut self, region: io::ArenaRegion) {
        let _ = region;
    }

    /// Another file descriptor whose readiness wakes the engine from its sleep in poll()
    /// (e.g. a storage queue's ring, when the application waits for a write to finish).
    fn wake_fd(&self) -> Option<i32> {
        None
    }

    /// Longest the engine may sleep in poll() when idle (timers due sooner need an earlier
    /// wake-up); the engine sleeps whole milliseconds, at most 100.
    fn idle_wait(&self) -> Duration {
        Duration::from_millis(100)
    }

    /// When the application's earliest timer is due, if it has one (asked only before the
    /// engine sleeps, never per packet): a paced TCP connection's next segment must leave on
    /// time, not when the next ACK happens to wake the engine.
    fn next_deadline(&self) -> Option<Instant> {
        None
    }

    /// Writes the application's counters into `out` for the metrics endpoint (called a few
    /// times a second, never per packet; none by default).
    fn metrics(&self, out: &mut crate::Samples) {
        let _ = out;
    }

    /// Writes the application's TCP connections into `out` (for `sirocco ss`; on request,
    /// never per packet; none by default).
    fn connections(&self, out: &mut Vec<crate::metrics::ConnInfo>) {
        let _ = out;
    }
}

/// Why a frame could not be originated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    /// No TX slot or buffer now; try again next iteration.
    Full,
    /// The destination's MAC is not known yet (a request is out).
    Unresolved,
    /// The payload does not fit in one frame.
    TooLong,
    /// The engine has no address of the destination's family.
    NoAddress,
}

/// What an application may use to originate UDP datagrams from the engine's address.
pub trait Originate {
    /// Room for more frames in this iteration.
    fn room(&self) -> usize;
    /// Builds a datagram to `dst:dst_port` from `src_port` (from the engine's address of
    /// `dst`'s family); `fill` writes the payload into the buffer it is given and returns its
    /// length.
    fn udp(
        &mut self,
        dst: IpAddr,
        dst_port: u16,
        src_port: u16,
        fill: &mut dyn FnMut(&mut [u8]) -> usize,
    ) -> Result<(), SendError>;

    /// Builds an IP packet (of `dst`'s family) carrying a TCP segment of `len` bytes to
    /// `dst`; `write` fills the segment (header with its checksum, and payload).
    fn tcp(&mut self, dst: IpAddr, len: usize, write: &mut dyn FnMut(&mut [u8])) -> Result<(), SendError>;

    /// The payload of the TCP segment this iteration handed over as `view` (for applications
    /// that [hold the frames](Service::holds_tcp_frames); empty otherwise).
    fn view(&self, view: u32) -> &[u8];

    /// Builds an IP packet carrying a TCP segment gathered from pieces: a header of
    /// `header_len` bytes, then the payload `runs`, those in the lent region sent from where
    /// they are. See [`tcp::Gather::send`] for `fill` and `header`.
    fn tcp_gather(
        &mut self,
        dst: IpAddr,
        header_len: usize,
        runs: &[tcp::Placed],
        fill: &mut dyn FnMut(u64, &mut [u8]),
        header: &mut dyn FnMut(&mut [u8], Option<u64>),
    ) -> Result<(), SendError> {
        let _ = (dst, header_len, runs, fill, header);
        Err(SendError::Full)
    }
    /// True while a packet carrying lent bytes that start in `addr .. addr + len` is not yet
    /// transmitted (see [`io::Port::region_busy`]).
    fn region_busy(&self, addr: u64, len: usize) -> bool {
        let _ = (addr, len);
        false
    }

    /// Pins a free frame for the application to keep (see [`io::Port::pin`]); None if none
    /// is free or the port cannot pin.
    fn pin(&mut self) -> Option<u64> {
        None
    }
    /// Gives a pinned frame the application holds back to the free list.
    fn unpin(&mut self, frame: u64) {
        let _ = frame;
    }
    /// Hands each pinned frame that came back (transmitted, or dropped unsent) to `each`.
    fn returned(&mut self, each: &mut dyn FnMut(u64)) {
        let _ = each;
    }
    /// The TCP segment area of a pinned frame: after the link and IPv6 headers (`v6`) or the
    /// IPv4 ones.
    fn pinned_segment(&mut self, frame: u64, v6: bool) -> &mut [u8] {
        let _ = (frame, v6);
        &mut []
    }
    /// Sends the TCP segment of `len` bytes that pinned `frame` holds to `dst`, after `write`
    /// has rewritten it in place (where [`Originate::pinned_segment`] put it for `dst`'s
    /// family); the engine writes the link and IP headers. On failure the frame comes back
    /// through [`Originate::returned`].
    fn tcp_pinned(
        &mut self,
        dst: IpAddr,
        frame: u64,
        len: usize,
        write: &mut dyn FnMut(&mut [u8]),
    ) -> Result<(), SendError> {
        let _ = (dst, frame, len, write);
        Err(SendError::Full)
    }
}
