//! An AF_XDP socket on one NIC queue, with its own UMEM and the four rings.
//!
//! Frame ownership follows the rings: free list (ours) → fill ring (kernel) → RX ring (ours)
//! → TX ring (kernel) → completion ring (ours) → free list. Ring indices are shared with the
//! kernel through the mapped producer/consumer words, read with acquire and written with
//! release ordering, as the kernel's own libxdp does.

use crate::pins::Pins;
use crate::port::{Frame, Port};
pub use crate::sys::XdpStatistics;
use crate::sys::{self, MmapOffsets, RingOffset, XdpDesc};
use crate::umem::Umem;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};

/// How the socket was bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindMode {
    /// The driver DMAs straight into the UMEM.
    ZeroCopy,
    /// The kernel copies between its buffers and the UMEM (veth, generic XDP).
    Copy,
}

/// Sizes for a socket.
#[derive(Debug, Clone, Copy)]
pub struct XskConfig {
    /// Frames in the UMEM.
    pub frames: usize,
    /// Bytes per frame (2048 or 4096).
    pub frame_size: usize,
    /// Entries in each ring (power of two).
    pub ring_size: u32,
    /// Force copy mode instead of trying zero-copy first.
    pub force_copy: bool,
    /// Bytes of arena to lend out beyond the frames (see [`Port::region`]); packets then
    /// may be gathered from several buffers (unaligned chunks, multi-buffer TX).
    pub lend: usize,
    /// Preferred busy polling on the socket, if wanted (see [`BusyPoll`]).
    pub busy_poll: Option<BusyPoll>,
}

/// Preferred busy polling (Linux 5.11+): the engine's own `recvfrom` and `sendto` run the
/// device's NAPI for its queue in the engine's thread, and the kernel keeps that queue's
/// interrupts (veth: its peer's wakeups of the NAPI thread) off while the engine polls, so a
/// batch costs no wakeup or context switch. The interface's `napi_defer_hard_irqs` and
/// `gro_flush_timeout` (see [`crate::napi`]) make the kernel keep them off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BusyPoll {
    /// `SO_BUSY_POLL`: microseconds a blocking busy poll may spin (the engine's never block).
    pub usecs: u32,
    /// `SO_BUSY_POLL_BUDGET`: packets one busy poll may take from the device (the batch).
    pub budget: u16,
}

/// Why a socket asked to busy-poll does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoBusyPoll {
    /// The kernel refused an option (its error).
    Refused(String),
    /// A copy-mode socket on a kernel that busy-polls only zero-copy ones (see
    /// [`crate::napi::copy_mode_busy_polls`]).
    CopyMode,
}

impl std::fmt::Display for NoBusyPoll {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoBusyPoll::Refused(e) => write!(f, "the kernel refused it ({e})"),
            NoBusyPoll::CopyMode => f.write_str(
                "AF_XDP copy mode, where Linux 6.13 and later busy-poll no socket (only zero-copy ones get their queue's NAPI)",
            ),
        }
    }
}

impl BusyPoll {
    /// Sets the options on `fd`: preferred busy polling, its time and its budget. Raising
    /// the time or the budget above the system's takes CAP_NET_ADMIN.
    pub fn apply(self, fd: &OwnedFd) -> io::Result<()> {
        let name = |e: io::Error, what: &str| io::Error::new(e.kind(), format!("{what}: {e}"));
        sys::set_socket_int(fd, sys::SO_PREFER_BUSY_POLL, 1).map_err(|e| name(e, "SO_PREFER_BUSY_POLL"))?;
        sys::set_socket_int(fd, sys::SO_BUSY_POLL, self.usecs as i32).map_err(|e| name(e, "SO_BUSY_POLL"))?;
        sys::set_socket_int(fd, sys::SO_BUSY_POLL_BUDGET, i32::from(self.budget))
            .map_err(|e| name(e, "SO_BUSY_POLL_BUDGET"))
    }
}

impl Default for XskConfig {
    fn default() -> Self {
        XskConfig {
            frames: 4096,
            frame_size: crate::umem::DEFAULT_FRAME_SIZE,
            ring_size: 2048,
            force_copy: false,
            lend: 0,
            busy_poll: None,
        }
    }
}

/// One mapped ring of `T` entries.
struct Ring<T> {
    map: *mut u8,
    map_len: usize,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    desc: *mut T,
    mask: u32,
    size: u32,
    /// Our copy of the index we advance.
    cached_prod: u32,
    /// Our copy of the index the other side advances.
    cached_cons: u32,
}

impl<T: Copy> Ring<T> {
    fn map(fd: &OwnedFd, off: &RingOffset, size: u32, pgoff: i64) -> io::Result<Ring<T>> {
        let map_len = off.desc as usize + size as usize * std::mem::size_of::<T>();
        let map = sys::mmap_ring(fd, map_len, pgoff)?;
        // SAFETY: the offsets come from the kernel's XDP_MMAP_OFFSETS for this mapping and lie
        // inside it; the words are 4-byte aligned u32s the kernel updates concurrently, hence
        // accessed only as atomics.
        unsafe {
            Ok(Ring {
                map,
                map_len,
                producer: map.add(off.producer as usize) as *const AtomicU32,
                consumer: map.add(off.consumer as usize) as *const AtomicU32,
                flags: map.add(off.flags as usize) as *const AtomicU32,
                desc: map.add(off.desc as usize) as *mut T,
                mask: size - 1,
                size,
                cached_prod: 0,
                cached_cons: 0,
            })
        }
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: points into our live mapping (see `map`).
        unsafe { &*self.producer }
    }
    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as above.
        unsafe { &*self.consumer }
    }
    fn needs_wakeup(&self) -> bool {
        // SAFETY: as above.
        unsafe { &*self.flags }.load(Ordering::Relaxed) & sys::XDP_RING_NEED_WAKEUP != 0
    }

    // --- producer side (fill, TX) ---

    /// Free entries we may produce, refreshing the kernel's consumer index only when needed.
    fn free(&mut self, want: u32) -> u32 {
        let free = self.size - (self.cached_prod.wrapping_sub(self.cached_cons));
        if free >= want {
            return free;
        }
        self.cached_cons = self.consumer().load(Ordering::Acquire);
        self.size - (self.cached_prod.wrapping_sub(self.cached_cons))
    }

    fn write(&mut self, i: u32, v: T) {
        // SAFETY: index masked into the ring's entry array, inside the mapping; this entry is
        // between the kernel's consumer and our producer, so the kernel does not read it now.
        unsafe { self.desc.add((self.cached_prod.wrapping_add(i) & self.mask) as usize).write(v) };
    }

    fn submit(&mut self, n: u32) {
        self.cached_prod = self.cached_prod.wrapping_add(n);
        self.producer().store(self.cached_prod, Ordering::Release);
    }

    /// Entries produced but not yet consumed by the kernel.
    fn outstanding(&self) -> u32 {
        self.cached_prod.wrapping_sub(self.consumer().load(Ordering::Acquire))
    }

    // --- consumer side (RX, completion) ---

    fn available(&mut self, want: u32) -> u32 {
        let mut n = self.cached_prod.wrapping_sub(self.cached_cons);
        if n == 0 {
            self.cached_prod = self.producer().load(Ordering::Acquire);
            n = self.cached_prod.wrapping_sub(self.cached_cons);
        }
        n.min(want)
    }

    fn read(&self, i: u32) -> T {
        // SAFETY: index masked into the entry array; the entry lies between our consumer and
        // the kernel's producer (published with release, loaded with acquire), so it is written.
        unsafe { self.desc.add((self.cached_cons.wrapping_add(i) & self.mask) as usize).read() }
    }

    fn release(&mut self, n: u32) {
        self.cached_cons = self.cached_cons.wrapping_add(n);
        self.consumer().store(self.cached_cons, Ordering::Release);
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        // SAFETY: our own ring mapping, no longer referenced.
        unsafe { sys::munmap(self.map, self.map_len) };
    }
}

/// Counters the port keeps itself.
#[derive(Debug, Default, Clone, Copy)]
pub struct XskCounters {
    /// TX kicks (sendto calls).
    pub tx_kicks: u64,
    /// Kicks that returned an error other than EAGAIN/EBUSY/ENOBUFS.
    pub tx_kick_errors: u64,
    /// Fill-ring wakeups (recvfrom calls).
    pub rx_wakeups: u64,
    /// poll() calls made while idle.
    pub polls: u64,
    /// Kicks after which the kernel had taken nothing (the device was busy).
    pub tx_stalled_kicks: u64,
    /// Descriptors one copy-mode kick may transmit.
    pub tx_budget: u32,
    /// Short waits for a full device queue to drain.
    pub tx_waits: u64,
    /// Busy polls: `recvfrom` calls that ran the queue's NAPI in the engine's thread.
    pub busy_polls: u64,
}

/// The port's and the kernel's counters for one socket.
#[derive(Debug, Default, Clone, Copy)]
pub struct XskStats {
    /// Counted by the port.
    pub port: XskCounters,
    /// Counted by the kernel (zero if it could not be read).
    pub kernel: XdpStatistics,
}

impl std::fmt::Display for XskStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "af_xdp: kernel rx_dropped {} rx_ring_full {} fill_ring_empty {} rx_invalid {} tx_invalid {} | tx kicks {} (budget {}, {} took nothing, {} waits) kick errors {} polls {}",
            self.kernel.rx_dropped,
            self.kernel.rx_ring_full,
            self.kernel.rx_fill_ring_empty_descs,
            self.kernel.rx_invalid_descs,
            self.kernel.tx_invalid_descs,
            self.port.tx_kicks,
            self.port.tx_budget,
            self.port.tx_stalled_kicks,
            self.port.tx_waits,
            self.port.tx_kick_errors,
            self.port.polls
        )
    }
}

/// An AF_XDP socket bound to one (interface, queue), with its own UMEM.
pub struct XskPort {
    // Field order is drop order: rings, then the socket, then the UMEM it registered.
    rx: Ring<XdpDesc>,
    tx: Ring<XdpDesc>,
    fill: Ring<u64>,
    comp: Ring<u64>,
    fd: OwnedFd,
    umem: Umem,
    free_list: Vec<u64>,
    pins: Pins,
    mode: BindMode,
    queue: u32,
    /// Frames the fill ring should hold when we can afford it.
    fill_target: u32,
    /// The last kick left frames on the TX ring and the kernel took none of them.
    tx_stalled: bool,
    counters: XskCounters,
    /// The UMEM is in unaligned mode (RX addresses carry an offset in their top bits).
    unaligned: bool,
    /// Bytes of TX metadata before a descriptor's address, if the kernel took them.
    tx_meta: Option<u32>,
    /// Per 4 KiB page of the lent region: descriptors starting there that the kernel has not
    /// completed.
    in_flight: Vec<u16>,
    /// The socket busy-polls: `busy_poll` runs the queue's NAPI.
    busy_poll: bool,
    busy_poll_refused: Option<NoBusyPoll>,
}

/// Granule of the lent region's in-flight counts.
const PAGE_SHIFT: u32 = 12;

// SAFETY: the raw pointers point into mappings owned by this value; it is used by one thread
// at a time (an engine), and moving it between threads is fine.
unsafe impl Send for XskPort {}

/// What a bound socket was made with: all a process needs, with the socket and its packet
/// memory, to map the rings and run it (see [`XskPort::adopt`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XskShape {
    /// The queue it is bound to.
    pub queue: u32,
    /// Frames in the UMEM.
    pub frames: usize,
    /// Bytes per frame.
    pub frame_size: usize,
    /// Entries in each ring.
    pub ring_size: u32,
    /// How it was bound.
    pub mode: BindMode,
    /// Descriptors one copy-mode kick may transmit.
    pub tx_budget: u32,
    /// Bytes of TX metadata before a descriptor's address, if the kernel took them.
    pub tx_meta: Option<u32>,
    /// The UMEM is in unaligned mode (memory lent beyond the frames).
    pub unaligned: bool,
    /// The socket busy-polls (the options of [`XskConfig::busy_poll`] took).
    pub busy_poll: bool,
}

/// A socket bound to its queue with its UMEM registered, before its rings are mapped: what a
/// control daemon opens on an application's behalf and hands over (socket and memory file).
pub struct XskBound {
    fd: OwnedFd,
    umem: Umem,
    shape: XskShape,
    busy_poll_refused: Option<NoBusyPoll>,
}

impl XskBound {
    /// Creates the UMEM (in a memory file if `shared`), the socket and its rings, and binds
    /// to `queue` of `ifindex`, trying zero-copy first unless `cfg.force_copy`.
    pub fn open(ifindex: u32, queue: u32, cfg: XskConfig, shared: bool) -> io::Result<XskBound> {
        let ring_size = cfg.ring_size;
        if !ring_size.is_power_of_two() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "ring size must be a power of two"));
        }
        let umem = if shared {
            Umem::new_shared(cfg.frames, cfg.frame_size, cfg.lend)?
        } else {
            Umem::new(cfg.frames, cfg.frame_size, cfg.lend)?
        };
        let fd = sys::xsk_socket().map_err(|e| ctx(e, "socket(AF_XDP)"))?;
        // A packet whose payload is a slice of a lent buffer starts anywhere and may cross
        // chunk boundaries: that takes unaligned chunks, and its headers being in another
        // buffer takes multi-buffer packets (Linux 6.6+).
        let gather = cfg.lend > 0;
        let mut reg = sys::UmemReg {
            addr: umem.as_ptr() as u64,
            len: umem.len() as u64,
            chunk_size: umem.frame_size() as u32,
            flags: if gather { sys::XDP_UMEM_UNALIGNED_CHUNK_FLAG } else { 0 },
            ..Default::default()
        };
        let sg = if gather { sys::XDP_USE_SG } else { 0 };
        // Gathered packets also ask the kernel to finish their TCP checksum (TX metadata,
        // Linux 6.8+), as it does for its own stack's packets on a device with checksum
        // offload: nobody reads a payload to sum it. Older kernels refuse the metadata
        // length; the port then works without it.
        let meta = sys::TX_METADATA_LEN;
        let mut tx_meta = false;
        if gather {
            let with = sys::UmemReg { tx_metadata_len: meta, flags: reg.flags | sys::XDP_UMEM_TX_METADATA_LEN, ..reg };
            tx_meta = sys::set_opt(&fd, sys::XDP_UMEM_REG, &with).is_ok();
            if tx_meta {
                reg = with;
            }
        }
        if !tx_meta {
            sys::set_opt(&fd, sys::XDP_UMEM_REG, &reg).map_err(|e| ctx(e, "XDP_UMEM_REG"))?;
        }
        sys::set_opt(&fd, sys::XDP_UMEM_FILL_RING, &ring_size)?;
        sys::set_opt(&fd, sys::XDP_UMEM_COMPLETION_RING, &ring_size)?;
        sys::set_opt(&fd, sys::XDP_RX_RING, &ring_size)?;
        sys::set_opt(&fd, sys::XDP_TX_RING, &ring_size)?;

        let mut mode = BindMode::ZeroCopy;
        let zc = if cfg.force_copy {
            Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
        } else {
            sys::xsk_bind(&fd, ifindex, queue, sys::XDP_ZEROCOPY | sys::XDP_USE_NEED_WAKEUP | sg)
        };
        if zc.is_err() {
            mode = BindMode::Copy;
            sys::xsk_bind(&fd, ifindex, queue, sys::XDP_COPY | sys::XDP_USE_NEED_WAKEUP | sg).map_err(|e| {
                let what = if gather { " with multi-buffer packets (Linux 6.6+)" } else { "" };
                ctx(e, &format!("bind AF_XDP socket to queue {queue}{what}"))
            })?;
        }

        // Copy mode transmits at most 32 descriptors per sendto unless told more (Linux 6.17+);
        // a whole ring per kick saves a system call per 32 frames. Older kernels refuse the
        // option and keep 32, which `flush` copes with by kicking again.
        let tx_budget = if mode == BindMode::Copy && sys::set_opt(&fd, sys::XDP_MAX_TX_SKB_BUDGET, &ring_size).is_ok() {
            ring_size
        } else {
            32
        };
        // A socket that cannot busy-poll gets no options: its sendto would try for nothing.
        let busy = cfg.busy_poll.map(|b| {
            if mode == BindMode::Copy && !crate::napi::copy_mode_busy_polls() {
                Err(NoBusyPoll::CopyMode)
            } else {
                b.apply(&fd).map_err(|e| NoBusyPoll::Refused(e.to_string()))
            }
        });
        let busy_poll_refused = busy.as_ref().and_then(|r| r.as_ref().err().cloned());
        let shape = XskShape {
            queue,
            frames: umem.frames(),
            frame_size: umem.frame_size(),
            ring_size,
            mode,
            tx_budget,
            tx_meta: tx_meta.then_some(meta),
            unaligned: gather,
            busy_poll: matches!(busy, Some(Ok(()))),
        };
        Ok(XskBound { fd, umem, shape, busy_poll_refused })
    }

    /// What it was made with.
    pub fn shape(&self) -> XskShape {
        self.shape
    }

    /// Why the socket does not busy-poll although it was asked to, if it does not.
    pub fn busy_poll_refused(&self) -> Option<&NoBusyPoll> {
        self.busy_poll_refused.as_ref()
    }
    /// The socket, to hand over.
    pub fn socket_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
    /// The packet memory's file, to hand over (if opened shared).
    pub fn memory_fd(&self) -> Option<RawFd> {
        self.umem.file().map(|f| f.as_raw_fd())
    }

    /// Maps the rings and makes the port.
    pub fn into_port(self) -> io::Result<XskPort> {
        let XskBound { fd, umem, shape, busy_poll_refused } = self;
        let ring_size = shape.ring_size;
        if !ring_size.is_power_of_two() || shape.frames != umem.frames() || shape.frame_size != umem.frame_size() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "socket shape does not match its packet memory"));
        }
        let off: MmapOffsets = sys::get_opt(&fd, sys::XDP_MMAP_OFFSETS).map_err(|e| ctx(e, "XDP_MMAP_OFFSETS"))?;
        let rx = Ring::map(&fd, &off.rx, ring_size, sys::XDP_PGOFF_RX_RING)?;
        let tx = Ring::map(&fd, &off.tx, ring_size, sys::XDP_PGOFF_TX_RING)?;
        let fill = Ring::map(&fd, &off.fr, ring_size, sys::XDP_UMEM_PGOFF_FILL_RING)?;
        let comp = Ring::map(&fd, &off.cr, ring_size, sys::XDP_UMEM_PGOFF_COMPLETION_RING)?;
        let frames = umem.frames();
        let fs = umem.frame_size() as u64;
        let lent = umem.region().map_or(0, |r| r.len());
        // With TX metadata every TX address must leave room for it below: frame 0's would not.
        let first = u64::from(shape.tx_meta.is_some());
        let free_list: Vec<u64> = (first..frames as u64).rev().map(|i| i * fs).collect();
        let mut port = XskPort {
            rx,
            tx,
            fill,
            comp,
            fd,
            umem,
            free_list,
            pins: Pins::new(frames, fs as usize),
            mode: shape.mode,
            queue: shape.queue,
            // Half the frames wait in the fill ring for RX; the other half serve TX.
            fill_target: ring_size.min(frames as u32 / 2),
            tx_stalled: false,
            counters: XskCounters { tx_budget: shape.tx_budget, ..XskCounters::default() },
            unaligned: shape.unaligned,
            tx_meta: shape.tx_meta,
            in_flight: vec![0; lent >> PAGE_SHIFT],
            busy_poll: shape.busy_poll,
            busy_poll_refused,
        };
        port.refill();
        Ok(port)
    }
}

impl XskPort {
    /// Creates the UMEM, the socket and its rings, and binds to `queue` of `ifindex`, trying
    /// zero-copy first unless `cfg.force_copy`.
    pub fn open(ifindex: u32, queue: u32, cfg: XskConfig) -> io::Result<XskPort> {
        XskBound::open(ifindex, queue, cfg, false)?.into_port()
    }

    /// [`XskPort::open`], waiting up to three seconds while the queue is busy: a socket just
    /// closed on it (a server restarted) holds it until the kernel has released it.
    pub fn open_when_free(ifindex: u32, queue: u32, cfg: XskConfig) -> io::Result<XskPort> {
        let mut tries = 0;
        loop {
            match XskPort::open(ifindex, queue, cfg) {
                // The error carries context, so EBUSY may show in its text only.
                Err(e)
                    if tries < 30
                        && (e.raw_os_error() == Some(libc::EBUSY)
                            || e.to_string().ends_with(&format!("(os error {})", libc::EBUSY))) =>
                {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                r => return r,
            }
        }
    }

    /// A socket another process bound and handed over, with its packet memory's file and
    /// its shape (an application's socket from `sirocco ctl`).
    pub fn adopt(socket: OwnedFd, memory: OwnedFd, shape: XskShape) -> io::Result<XskPort> {
        let umem = Umem::from_file(memory, shape.frames, shape.frame_size)?;
        if shape.unaligned != (umem.region().is_some()) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "socket shape does not match its packet memory"));
        }
        XskBound { fd: socket, umem, shape, busy_poll_refused: None }.into_port()
    }

    /// True if the socket busy-polls ([`Port::busy_poll`] runs the queue's NAPI).
    pub fn busy_polls(&self) -> bool {
        self.busy_poll
    }

    /// Why the socket does not busy-poll although it was asked to, if it does not.
    pub fn busy_poll_refused(&self) -> Option<&NoBusyPoll> {
        self.busy_poll_refused.as_ref()
    }

    /// How the socket was bound.
    pub fn mode(&self) -> BindMode {
        self.mode
    }
    /// The queue this socket serves.
    pub fn queue(&self) -> u32 {
        self.queue
    }
    /// The socket descriptor (for the XSKMAP).
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
    /// What backs the UMEM.
    pub fn pages(&self) -> crate::arena::Pages {
        self.umem.pages()
    }
    /// Bytes lent beyond the frames (0: none; see [`XskConfig::lend`]).
    pub fn lent(&self) -> usize {
        self.umem.region().map_or(0, |r| r.len())
    }
    /// True if packets may ask the kernel or device to finish their checksum (TX metadata).
    pub fn tx_csum_offload(&self) -> bool {
        self.tx_meta.is_some()
    }
    /// The port's own counters.
    pub fn counters(&self) -> XskCounters {
        self.counters
    }
    /// The port's and the kernel's counters.
    pub fn stats(&self) -> XskStats {
        XskStats { port: self.counters, kernel: self.kernel_stats().unwrap_or_default() }
    }

    /// The kernel's counters for this socket (drops for lack of fill buffers or RX room).
    pub fn kernel_stats(&self) -> io::Result<XdpStatistics> {
        sys::get_opt(&self.fd, sys::XDP_STATISTICS)
    }

    fn reap_completions(&mut self) {
        let n = self.comp.available(self.comp.size);
        for i in 0..n {
            let a = self.comp.read(i);
            self.give_back(a);
        }
        if n > 0 {
            self.comp.release(n);
        }
    }

    /// A frame the kernel or the engine is done with goes home: a pinned frame to its
    /// pinner, a lent byte range to its lender (by lowering its in-flight count), any other to
    /// the free list.
    #[inline]
    fn give_back(&mut self, a: u64) {
        if self.umem.in_region(a) {
            let page = ((a - self.umem.region_start()) >> PAGE_SHIFT) as usize;
            debug_assert!(self.in_flight[page] > 0, "a lent range completed that was not sent");
            self.in_flight[page] = self.in_flight[page].saturating_sub(1);
        } else {
            // A completion names the packet's address, which may lie inside its frame (a
            // reply in its RX frame, headers after TX metadata): the frame goes back whole,
            // or in unaligned mode the fill ring would drift into the next frame.
            let frame = a & !(self.umem.frame_size() as u64 - 1);
            if !self.pins.give_back(frame) {
                self.free_list.push(frame);
            }
        }
    }

    fn refill(&mut self) {
        let in_fill = self.fill.cached_prod.wrapping_sub(self.fill.consumer().load(Ordering::Acquire));
        let want = self.fill_target.saturating_sub(in_fill).min(self.free_list.len() as u32);
        if want == 0 {
            return;
        }
        let n = self.fill.free(want).min(want);
        for i in 0..n {
            let a = self.free_list.pop().expect("counted above");
            self.fill.write(i, a);
        }
        self.fill.submit(n);
    }
}

fn ctx(e: io::Error, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

impl Port for XskPort {
    fn metrics(&self) -> Vec<(&'static str, &'static str, u64)> {
        let st = self.stats();
        let (k, p) = (st.kernel, st.port);
        vec![
            (
                "sirocco_xsk_kernel_rx_dropped_total",
                "Frames the kernel dropped for this socket (no room, bad).",
                k.rx_dropped,
            ),
            (
                "sirocco_xsk_kernel_rx_ring_full_total",
                "Frames the kernel dropped because the RX ring was full.",
                k.rx_ring_full,
            ),
            (
                "sirocco_xsk_kernel_fill_ring_empty_total",
                "Times the kernel found the fill ring empty.",
                k.rx_fill_ring_empty_descs,
            ),
            ("sirocco_xsk_kernel_rx_invalid_total", "Invalid RX descriptors the kernel saw.", k.rx_invalid_descs),
            ("sirocco_xsk_kernel_tx_invalid_total", "Invalid TX descriptors the kernel saw.", k.tx_invalid_descs),
            ("sirocco_xsk_tx_kicks_total", "TX kicks (sendto calls).", p.tx_kicks),
            ("sirocco_xsk_tx_kick_errors_total", "TX kicks that failed.", p.tx_kick_errors),
            ("sirocco_xsk_rx_wakeups_total", "Fill-ring wakeups (recvfrom calls).", p.rx_wakeups),
            ("sirocco_xsk_polls_total", "poll() calls made while idle.", p.polls),
            (
                "sirocco_xsk_busy_polls_total",
                "Busy polls: the queue's receive work run in the engine's thread.",
                p.busy_polls,
            ),
        ]
    }

    fn recv(&mut self, out: &mut [Frame]) -> usize {
        let n = self.rx.available(out.len() as u32);
        for (i, slot) in out.iter_mut().enumerate().take(n as usize) {
            let d = self.rx.read(i as u32);
            let addr = if self.unaligned {
                (d.addr & ((1 << sys::XSK_UNALIGNED_BUF_OFFSET_SHIFT) - 1))
                    + (d.addr >> sys::XSK_UNALIGNED_BUF_OFFSET_SHIFT)
            } else {
                d.addr
            };
            *slot = Frame::new(addr, d.len);
        }
        if n > 0 {
            self.rx.release(n);
        }
        n as usize
    }

    #[inline]
    fn prefetch(&self, f: Frame) {
        self.umem.prefetch(f.addr);
    }

    fn data(&self, f: Frame) -> &[u8] {
        self.umem.slice(f.addr, f.len as usize)
    }

    fn data_mut(&mut self, f: Frame) -> &mut [u8] {
        self.umem.slice_to_frame_end(f.addr)
    }

    fn frame_capacity(&self) -> usize {
        self.umem.frame_size()
    }

    fn alloc(&mut self) -> Option<Frame> {
        if self.free_list.is_empty() {
            self.reap_completions();
        }
        self.free_list.pop().map(|addr| Frame::new(addr, 0))
    }

    fn free(&mut self, f: Frame) {
        if self.umem.in_region(f.addr) {
            // Lent bytes the engine did not send after all: never counted, nothing to return.
            return;
        }
        self.give_back(f.addr);
    }

    fn send(&mut self, frames: &[Frame]) -> usize {
        let mut n = self.tx.free(frames.len() as u32).min(frames.len() as u32);
        // Never a part of a packet: the kernel would wait for the rest, or take the next
        // packet's first buffer for it.
        while n > 0 && frames[n as usize - 1].more {
            n -= 1;
        }
        let start = self.umem.region_start();
        for (i, f) in frames.iter().take(n as usize).enumerate() {
            if self.umem.in_region(f.addr) {
                self.in_flight[((f.addr - start) >> PAGE_SHIFT) as usize] += 1;
            }
            let options = if f.more { sys::XDP_PKT_CONTD } else { 0 } | if f.meta { sys::XDP_TX_METADATA } else { 0 };
            self.tx.write(i as u32, XdpDesc { addr: f.addr, len: f.len, options });
        }
        if n > 0 {
            self.tx.submit(n);
        }
        n as usize
    }

    fn tx_room(&mut self) -> usize {
        self.tx.free(self.tx.size) as usize
    }

    fn free_frames(&mut self) -> usize {
        if self.free_list.is_empty() {
            self.reap_completions();
        }
        self.free_list.len()
    }

    fn flush(&mut self) {
        // Copy mode transmits at most a budget of entries per sendto, so keep kicking while
        // the kernel takes entries, a bounded number of times; a kick that took nothing means
        // the device's queue is full (veth: its peer has not drained it), and kicking on would
        // only burn system calls the peer's core needs time for.
        self.tx_stalled = false;
        for _ in 0..16 {
            if self.tx.outstanding() == 0 || !self.tx.needs_wakeup() {
                break;
            }
            self.counters.tx_kicks += 1;
            let before = self.tx.outstanding();
            match sys::kick_tx(self.fd.as_raw_fd()) {
                None => {}
                Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS) => {}
                Some(_) => {
                    self.counters.tx_kick_errors += 1;
                    break;
                }
            }
            if self.tx.outstanding() == before {
                self.counters.tx_stalled_kicks += 1;
                self.tx_stalled = true;
                break;
            }
        }
        self.reap_completions();
        self.refill();
        if self.fill.needs_wakeup() && self.mode == BindMode::ZeroCopy {
            self.counters.rx_wakeups += 1;
            sys::kick_rx(self.fd.as_raw_fd());
        }
    }

    fn busy_poll(&mut self) -> bool {
        if !self.busy_poll {
            return false;
        }
        self.counters.busy_polls += 1;
        // With the socket's busy-poll options a zero-length recvfrom runs the device's NAPI
        // once, up to the budget, and returns (MSG_DONTWAIT: it never spins or sleeps).
        sys::kick_rx(self.fd.as_raw_fd());
        true
    }

    fn wait(&mut self, timeout_ms: i32) {
        self.counters.polls += 1;
        sys::poll_in(self.fd.as_raw_fd(), timeout_ms);
    }

    fn wait_with(&mut self, timeout_ms: i32, other: i32) {
        self.counters.polls += 1;
        sys::poll_in2(self.fd.as_raw_fd(), other, timeout_ms);
    }

    fn tx_blocked(&mut self) -> bool {
        self.tx_stalled && self.tx.outstanding() > 0
    }

    fn wait_tx(&mut self, timeout_us: u32) {
        // In copy mode poll() itself transmits, on entry and on waking; the engine's next
        // iteration flushes (kicks and reaps) as always.
        self.counters.tx_waits += 1;
        sys::ppoll_in(self.fd.as_raw_fd(), timeout_us);
    }

    fn region(&self) -> Option<crate::ArenaRegion> {
        self.umem.region()
    }

    fn tx_csum_partial(&mut self, addr: u64, start: u16, offset: u16) -> bool {
        let Some(len) = self.tx_meta else { return false };
        let fs = self.umem.frame_size() as u64;
        if self.umem.in_region(addr) || addr % fs < crate::port::TX_META_ROOM {
            return false;
        }
        // `struct xsk_tx_metadata` in the `len` bytes before the packet, inside its frame:
        // flags, csum_start, csum_offset, the rest zero.
        let m = &mut self.umem.slice_to_frame_end(addr - u64::from(len))[..len as usize];
        m.fill(0);
        m[..8].copy_from_slice(&sys::XDP_TXMD_FLAGS_CHECKSUM.to_ne_bytes());
        m[8..10].copy_from_slice(&start.to_ne_bytes());
        m[10..12].copy_from_slice(&offset.to_ne_bytes());
        true
    }

    fn region_busy(&self, addr: u64, len: usize) -> bool {
        let start = self.umem.region_start();
        let (Some(a), Some(e)) = (addr.checked_sub(start), (addr + len as u64).checked_sub(start)) else {
            return false;
        };
        let pages = (a >> PAGE_SHIFT) as usize..((e + (1 << PAGE_SHIFT) - 1) >> PAGE_SHIFT) as usize;
        self.in_flight.get(pages).is_some_and(|p| p.iter().any(|&c| c > 0))
    }

    fn pin(&mut self) -> Option<Frame> {
        // Never take the frames RX needs: pinning stops while the free list is below what
        // the fill ring should hold.
        if self.free_list.len() <= self.fill_target as usize {
            self.reap_completions();
            if self.free_list.len() <= self.fill_target as usize {
                return None;
            }
        }
        self.pins.take(&mut self.free_list).map(|addr| Frame::new(addr, 0))
    }

    fn unpin(&mut self, addr: u64) {
        self.pins.release(addr, &mut self.free_list);
    }

    fn returned(&mut self, each: &mut dyn FnMut(u64)) {
        self.pins.drain(each);
    }
}
