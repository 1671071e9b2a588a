//! Stream mode's per-engine state (Atlas): the storage port, the files open on it (one
//! registration per file however many responses use it), and the connections that want a
//! read looked at — when a response is queued, the window opens, a read completes or a
//! buffer comes back. The engine loop drives it through [`crate::WebService`]: reap, plan
//! reads, submit, once per iteration.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::path::{Path, PathBuf};

use io::storage::{Buf, Completion, FileId, StorageConfig, StorageError, StoragePort};
use io::ArenaRegion;
use tcp::Handle;

/// Counters.
#[derive(Debug, Default, Clone, Copy)]
pub struct StreamStats {
    /// Reads started.
    pub reads: u64,
    /// Bytes those reads wanted.
    pub read_bytes: u64,
    /// Times a connection waited because every buffer was in use.
    pub buffer_waits: u64,
    /// Reads that failed (the connection is reset).
    pub read_errors: u64,
    /// Files opened on the port.
    pub opens: u64,
    /// Reads of bytes read before, sent, and let go of, for a retransmission.
    pub rereads: u64,
    /// Bytes those reads wanted.
    pub reread_bytes: u64,
}

/// One engine's streaming state.
pub struct Streamer {
    /// The storage queues.
    pub port: StoragePort,
    by_path: HashMap<PathBuf, FileId>,
    refs: HashMap<FileId, (u32, PathBuf)>,
    /// Connections to look at for a read.
    pub wanted: Vec<Handle>,
    /// Connections that found no free buffer (or the storage port full), fewest bytes left to
    /// read first ([`Streamer::wait`]); each also in `oldest`, and live in neither once served
    /// from the other ([`crate::conn::Streaming::queued`] holds the place that is live).
    by_left: BinaryHeap<Waiting>,
    /// The same, in the order they began to wait.
    oldest: VecDeque<Waiting>,
    /// Connections that began to wait so far (ties go to the first).
    waits: u64,
    /// Waiting connections served so far.
    served: u64,
    /// Completions reaped, waiting to be handed to their connections.
    pub done: Vec<Completion>,
    /// Counters.
    pub stats: StreamStats,
    /// Buffers let go of, to be freed once no packet on its way out carries them.
    retiring: Vec<Buf>,
    cfg: StorageConfig,
    /// The buffers live in the NIC port's arena: segments are sent from them as they are.
    lent: bool,
}

impl Streamer {
    /// The storage port of a stream-mode engine: `mib` MiB of `kib` KiB buffers, checked
    /// (`--stream-memory`, `--stream-buffer`).
    pub fn storage(mib: u64, kib: u32) -> Result<StorageConfig, String> {
        if !(1..=65_536).contains(&mib) {
            return Err("--stream-memory must be 1..65536 (MiB)".into());
        }
        if !(4..=1024).contains(&kib) || !kib.is_multiple_of(4) {
            return Err("--stream-buffer must be 4..1024 KiB, a multiple of 4".into());
        }
        let buf_size = kib as usize * 1024;
        let buffers = (mib * (1 << 20) / buf_size as u64).max(1);
        // io_uring registers at most 2^14 buffers (IORING_MAX_REG_BUFFERS).
        if buffers > 1 << 14 {
            return Err(format!(
                "--stream-memory {mib} MiB in {kib} KiB buffers is {buffers} buffers; io_uring registers at most 16384: use larger buffers or less memory"
            ));
        }
        Ok(StorageConfig { buffers: buffers as u32, buf_size, ..StorageConfig::default() })
    }

    /// The first engine's streamer, made before anything runs so that what is missing
    /// (io_uring, O_DIRECT under the root) is one line at start; and a line saying what the
    /// kernel offers.
    pub fn first(cfg: StorageConfig, site: &crate::Site) -> Result<(Streamer, String), String> {
        let mut st = Streamer::new(cfg).map_err(|e| e.to_string())?;
        let said = format!(
            "stream mode: {}; {} buffers of {} KiB per engine on {}",
            st.port.features(),
            cfg.buffers,
            cfg.buf_size >> 10,
            st.port.pool_ref().pages()
        );
        if let Some(path) = site.files.iter().find_map(|f| f.source.as_deref()) {
            let f = st.open(path).map_err(|e| e.to_string())?;
            st.release(f);
        }
        Ok((st, said))
    }

    /// A streamer on a new storage port.
    pub fn new(cfg: StorageConfig) -> Result<Streamer, StorageError> {
        Ok(Streamer {
            port: StoragePort::new(cfg)?,
            by_path: HashMap::new(),
            refs: HashMap::new(),
            wanted: Vec::new(),
            by_left: BinaryHeap::new(),
            oldest: VecDeque::new(),
            waits: 0,
            served: 0,
            done: Vec::new(),
            stats: StreamStats::default(),
            retiring: Vec::new(),
            cfg,
            lent: false,
        })
    }

    /// Moves the buffers into `region`, lent by the NIC port, so that what is read is sent
    /// from where it lands (Atlas: no copy between disk and NIC). Done before any file is
    /// open or read is made; on failure the buffers stay where they were (and are copied
    /// from), and the reason is returned.
    pub fn relocate(&mut self, region: &ArenaRegion) -> Result<(), StorageError> {
        assert!(self.refs.is_empty() && self.port.in_flight() == 0, "relocated before use");
        self.port = StoragePort::new_in(self.cfg, Some(region))?;
        self.lent = true;
        Ok(())
    }

    /// True if the buffers are in the NIC port's arena.
    pub fn lent(&self) -> bool {
        self.lent
    }

    /// A buffer no connection holds any more; freed by [`Streamer::tend`].
    pub fn retire(&mut self, b: Buf) {
        self.retiring.push(b);
    }

    /// Frees the retired buffers no packet carries any more (`busy(addr, len)` says if one
    /// does); connections waiting for one are given them in the service's next round.
    pub fn tend(&mut self, busy: &dyn Fn(u64, usize) -> bool) {
        if self.retiring.is_empty() {
            return;
        }
        let size = self.port.pool_ref().buf_size();
        let mut i = 0;
        while i < self.retiring.len() {
            let b = &self.retiring[i];
            if self.port.pool_ref().arena_addr(b, 0).is_some_and(|a| busy(a, size)) {
                i += 1;
                continue;
            }
            let b = self.retiring.swap_remove(i);
            self.port.pool().free(b);
        }
    }

    /// The file at `path`, opened on the port if no response uses it yet; one more use.
    pub fn open(&mut self, path: &Path) -> Result<FileId, StorageError> {
        if let Some(&f) = self.by_path.get(path) {
            self.refs.get_mut(&f).expect("open files are counted").0 += 1;
            return Ok(f);
        }
        let (f, _) = self.port.open(path, false)?;
        self.stats.opens += 1;
        self.by_path.insert(path.to_path_buf(), f);
        self.refs.insert(f, (1, path.to_path_buf()));
        Ok(f)
    }

    /// One use of `f` fewer; closed when none is left.
    pub fn release(&mut self, f: FileId) {
        let Some(e) = self.refs.get_mut(&f) else { return };
        e.0 -= 1;
        if e.0 == 0 {
            let (_, path) = self.refs.remove(&f).expect("present");
            self.by_path.remove(&path);
            self.port.close(f);
        }
    }

    /// Connection `h`, with `left` bytes still to read, waits for a buffer; its place in the
    /// queue is returned. When buffers are short — a slow disk, more streams than memory —
    /// the one closest to done goes first (shortest remaining first): shared evenly, 1 000
    /// streams of 1 MiB on a 50 MB/s disk each took 20 s and none completed sooner; in this
    /// order files complete one after another at the disk's rate. A read for a
    /// retransmission counts as nothing left (TCP is stalled on it). So that a long
    /// download is never starved by shorter ones, every [`OLDEST_SHARE`]th buffer goes to
    /// the connection that has waited longest.
    pub fn wait(&mut self, h: Handle, left: u64) -> u64 {
        self.waits += 1;
        let w = Waiting { left, seq: self.waits, h, by_age: false };
        self.by_left.push(w);
        self.oldest.push_back(Waiting { by_age: true, ..w });
        self.waits
    }

    /// The waiting connection to serve next, if any; `live(h, place)` says whether `h` still
    /// waits at that place (the copy in the other order was served, or the connection ended).
    pub fn next_waiting(&mut self, live: &dyn Fn(Handle, u64) -> bool) -> Option<Waiting> {
        let oldest_turn = self.served % OLDEST_SHARE == OLDEST_SHARE - 1;
        loop {
            let w = if oldest_turn { self.oldest.pop_front() } else { self.by_left.pop() };
            let w = match w {
                Some(w) => w,
                // One order emptied of live entries: the other holds only stale ones too.
                None => {
                    self.by_left.clear();
                    self.oldest.clear();
                    return None;
                }
            };
            if live(w.h, w.seq) {
                self.served += 1;
                return Some(w);
            }
        }
    }

    /// `w`, taken by [`Streamer::next_waiting`] and still without a buffer, keeps its place.
    pub fn wait_on(&mut self, w: Waiting) {
        self.served -= 1;
        if w.by_age {
            self.oldest.push_front(w);
        } else {
            self.by_left.push(w);
        }
    }

    /// Files open now.
    pub fn open_files(&self) -> usize {
        self.refs.len()
    }
}

/// One buffer in this many goes to the connection that has waited longest.
pub const OLDEST_SHARE: u64 = 8;

/// A connection waiting for a buffer: the heap gives the one with the fewest bytes left to
/// read first, then the one that began to wait first.
#[derive(Debug, Clone, Copy)]
pub struct Waiting {
    left: u64,
    seq: u64,
    /// The connection.
    pub h: Handle,
    /// Taken in the order of waiting, not of bytes left.
    by_age: bool,
}

impl Ord for Waiting {
    fn cmp(&self, o: &Self) -> Ordering {
        // BinaryHeap pops its greatest: the fewest bytes left, then the earliest, is greatest.
        (o.left, o.seq).cmp(&(self.left, self.seq))
    }
}

impl PartialOrd for Waiting {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl PartialEq for Waiting {
    fn eq(&self, o: &Self) -> bool {
        (self.left, self.seq) == (o.left, o.seq)
    }
}

impl Eq for Waiting {}

/// The cookie a read carries: the connection's handle.
pub fn cookie(h: Handle) -> u64 {
    h.to_bits()
}

/// The connection a read's cookie names (it may have ended since).
pub fn handle(cookie: u64) -> Handle {
    Handle::from_bits(cookie)
}

#[cfg(test)]
mod storage_tests {
    use super::{Handle, Streamer};

    #[test]
    fn the_waiting_connection_with_fewest_bytes_left_goes_first_and_the_oldest_every_eighth() {
        let mut st = Streamer::new(Streamer::storage(1, 256).unwrap()).unwrap();
        let h = |i: u64| Handle::from_bits((1 << 32) | i);
        // A long download waits first, then nine shorter ones.
        let mut place = std::collections::HashMap::new();
        place.insert(0, st.wait(h(0), 1 << 30));
        for i in 1..10 {
            place.insert(i, st.wait(h(i), 1000 * (10 - i)));
        }
        let mut order = Vec::new();
        let mut kept = false;
        loop {
            let live = |x: Handle, at: u64| place.get(&x.index().into()) == Some(&at);
            let Some(w) = st.next_waiting(&live) else { break };
            if w.h == h(9) && !kept {
                // Still no buffer: it keeps its place, and is the next one given.
                kept = true;
                st.wait_on(w);
                continue;
            }
            place.remove(&u64::from(w.h.index()));
            order.push(w.h.index());
        }
        // Fewest bytes left first; the eighth buffer to the one waiting longest.
        assert_eq!(order, [9, 8, 7, 6, 5, 4, 3, 0, 2, 1]);
    }

    #[test]
    fn stream_memory_is_cut_into_buffers_io_uring_can_register() {
        let c = Streamer::storage(64, 256).unwrap();
        assert_eq!((c.buffers, c.buf_size), (256, 256 << 10));
        assert_eq!(Streamer::storage(1, 1024).unwrap().buffers, 1);
        for (mib, kib) in [(0, 256), (65_537, 256), (64, 2), (64, 6), (64, 2048)] {
            assert!(Streamer::storage(mib, kib).is_err(), "{mib} MiB of {kib} KiB");
        }
        let e = Streamer::storage(1024, 4).unwrap_err();
        assert!(e.contains("262144 buffers; io_uring registers at most 16384"), "{e}");
    }
}
