//! Stream mode's per-engine state (Atlas): the storage port, the files open on it (one
//! registration per file however many responses use it), and the connections that want a
//! read looked at — when a response is queued, the window opens, a read completes or a
//! buffer comes back. The engine loop drives it through [`crate::WebService`]: reap, plan
//! reads, submit, once per iteration.

use std::collections::{HashMap, VecDeque};
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
    /// Connections that found no free buffer (or the storage port full), in the order they
    /// began to wait; each is in it once ([`crate::conn::Streaming::queued`]).
    pub starved: VecDeque<Handle>,
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
            starved: VecDeque::new(),
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

    /// Files open now.
    pub fn open_files(&self) -> usize {
        self.refs.len()
    }
}

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
    use super::Streamer;

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
