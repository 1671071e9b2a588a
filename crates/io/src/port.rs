//! The port interface: batches of frames in and out of a buffer arena the port owns.

/// A frame in a port's buffer arena, named by its address (offset) in the arena. Frames are
/// owned by exactly one party at a time: the kernel or the engine. The engine gets them from
/// [`Port::recv`] or [`Port::alloc`] and gives them back with [`Port::send`] or [`Port::free`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Offset of the first byte in the arena.
    pub addr: u64,
    /// Length of the packet in bytes (of this buffer's part of it, when `more`).
    pub len: u32,
    /// The packet goes on in the next frame sent (a packet gathered from several buffers,
    /// e.g. headers in a frame and the payload where the disk read put it).
    pub more: bool,
    /// The packet's first frame carries TX metadata written by [`Port::tx_csum_partial`]:
    /// the device (or the kernel) finishes its checksum.
    pub meta: bool,
}

impl Frame {
    /// A whole packet (or an empty buffer) at `addr`.
    #[inline]
    pub const fn new(addr: u64, len: u32) -> Frame {
        Frame { addr, len, more: false, meta: false }
    }
}

/// Room a frame whose packet carries TX metadata leaves before it: a packet meant for
/// [`Port::tx_csum_partial`] starts this far into its buffer.
pub const TX_META_ROOM: u64 = 64;

/// A source and sink of Ethernet frames, driven by one engine thread.
pub trait Port {
    /// Moves up to `out.len()` received frames into `out`; returns how many.
    fn recv(&mut self, out: &mut [Frame]) -> usize;
    /// Hints that the frame's first bytes are read soon (a prefetch); does nothing by default.
    #[inline]
    fn prefetch(&self, f: Frame) {
        let _ = f;
    }
    /// The bytes of a frame (its `len` bytes).
    fn data(&self, f: Frame) -> &[u8];
    /// The writable room of a frame, from its address to the end of its buffer
    /// (at least [`Port::frame_capacity`] bytes for frames from [`Port::alloc`]).
    fn data_mut(&mut self, f: Frame) -> &mut [u8];
    /// Largest frame that fits a buffer.
    fn frame_capacity(&self) -> usize;
    /// An empty buffer for a new frame, if one is free.
    fn alloc(&mut self) -> Option<Frame>;
    /// Returns a frame's buffer to the port.
    fn free(&mut self, f: Frame);
    /// Queues frames for transmission; returns how many were taken (a prefix of `frames`
    /// that ends with a whole packet: a frame marked `more` is taken only with the rest of
    /// its packet). The rest stay with the caller, who must send them later or free them.
    /// Frames in the lent [`region`](Port::region) are never put on the free list: they are
    /// the lender's until [`region_busy`](Port::region_busy) says they are back.
    fn send(&mut self, frames: &[Frame]) -> usize;
    /// Free TX slots right now (a bound on what [`Port::send`] will take).
    fn tx_room(&mut self) -> usize;
    /// Frames [`Port::alloc`] can hand out right now.
    fn free_frames(&mut self) -> usize;
    /// Kicks transmission, reaps completions and refills the receive side.
    fn flush(&mut self);
    /// Sleeps until a frame may be ready to receive or `timeout_ms` passes.
    fn wait(&mut self, timeout_ms: i32);
    /// Runs the device's receive work for this queue once in the caller's thread (preferred
    /// busy polling), if the port does; false if it does not busy-poll.
    fn busy_poll(&mut self) -> bool {
        false
    }
    /// The port's counters and the kernel's for it, each as a metric: its name by
    /// Prometheus conventions, what it counts, its value (read a few times a second for the
    /// metrics endpoint; may make a system call). None by default.
    fn metrics(&self) -> Vec<(&'static str, &'static str, u64)> {
        Vec::new()
    }
    /// As [`Port::wait`], waking also when `other` is readable.
    fn wait_with(&mut self, timeout_ms: i32, other: i32) {
        let _ = other;
        self.wait(timeout_ms);
    }
    /// True while frames wait on the TX ring because the device took nothing at the last
    /// [`flush`](Port::flush) (its queue is full): kicking again at once would be a wasted
    /// system call; [`wait_tx`](Port::wait_tx) instead.
    fn tx_blocked(&mut self) -> bool {
        false
    }
    /// Waits until a frame may be ready to receive or `timeout_us` passes; the next
    /// [`flush`](Port::flush) transmits again.
    fn wait_tx(&mut self, timeout_us: u32) {
        let _ = timeout_us;
    }

    /// Asks the device to finish the checksum of the packet whose first frame starts at
    /// `addr` (at least [`TX_META_ROOM`] into its buffer): the one's-complement sum from byte
    /// `start` to the end goes at `start + offset`, whose field holds the pseudo-header sum
    /// (CHECKSUM_PARTIAL, as the kernel's stack hands a NIC). False if the port cannot (the
    /// sender sums the packet itself); true, and the frame is then sent with `meta` set.
    fn tx_csum_partial(&mut self, addr: u64, start: u16, offset: u16) -> bool {
        let _ = (addr, start, offset);
        false
    }

    /// The part of the arena lent out for buffers that packets may carry as they are (the
    /// storage port's), if the port was made with one.
    fn region(&self) -> Option<crate::ArenaRegion> {
        None
    }
    /// True while some packet carrying bytes of the lent region that start in
    /// `addr .. addr + len` is queued for transmission or not yet completed.
    fn region_busy(&self, addr: u64, len: usize) -> bool {
        let _ = (addr, len);
        false
    }

    /// Takes a free frame out of circulation for the caller to keep (a replica of prepared
    /// data). From then on, each time it is sent and completed, or freed, it comes back
    /// through [`Port::returned`] instead of the free list, until [`Port::unpin`]. None if no
    /// frame is free or the port does not pin.
    fn pin(&mut self) -> Option<Frame> {
        None
    }
    /// Returns a pinned frame, which the caller holds (not in flight), to the free list.
    fn unpin(&mut self, addr: u64) {
        let _ = addr;
    }
    /// Hands every pinned frame that came back since the last call to `each`.
    fn returned(&mut self, each: &mut dyn FnMut(u64)) {
        let _ = each;
    }
}
