//! Storage queues: the diskmap of the Atlas thesis on a stock kernel. One io_uring per engine,
//! reads and writes with O_DIRECT (no page cache) into registered, 4 KiB-aligned buffers from a
//! bounded pool, registered files, and completions reaped by the engine's own loop — no
//! helper thread (the kernel's SQ polling thread only if asked for).
//!
//! A logical request is one completion however it is carried out: long requests are cut into
//! parts of at most `max_part` bytes, short transfers are continued, and the request completes
//! when every part has; a read that meets the end of the file completes with the bytes up to it.
//!
//! The port is not web-specific: the streaming web server reads with it, the durable store
//! writes and syncs its log with it.

mod features;
mod pool;

pub use features::Features;
pub use pool::{Buf, BufferPool, DIRECT_ALIGN};

use io_uring::{opcode, squeue, types, IoUring};
use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// How a storage port is made.
#[derive(Debug, Clone, Copy)]
pub struct StorageConfig {
    /// Submission queue entries (and most requests in flight).
    pub entries: u32,
    /// Buffers in the pool.
    pub buffers: u32,
    /// Bytes per buffer (a multiple of [`DIRECT_ALIGN`]); the longest request.
    pub buf_size: usize,
    /// Files open at once.
    pub max_files: u32,
    /// Longest single transfer a request is cut into (a multiple of [`DIRECT_ALIGN`]).
    pub max_part: u32,
    /// Let a kernel thread poll the submission queue (idle time before it sleeps, ms).
    pub sqpoll_idle_ms: Option<u32>,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            entries: 256,
            buffers: 64,
            buf_size: 256 << 10,
            max_files: 1024,
            max_part: 128 << 10,
            sqpoll_idle_ms: None,
        }
    }
}

/// Why a port or a file could not be set up: one line for the operator.
#[derive(Debug)]
pub enum StorageError {
    /// io_uring is missing, disabled, or lacks an operation the port needs.
    Unavailable(String),
    /// The file system refuses O_DIRECT.
    NoDirect(String),
    /// A file could not be opened.
    Open(String, io::Error),
    /// Every file slot is in use.
    TooManyFiles(u32),
    /// Setting up the port failed otherwise.
    Io(String, io::Error),
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageError::Unavailable(why) => write!(f, "storage: io_uring is not usable here: {why}"),
            StorageError::NoDirect(path) => {
                write!(
                    f,
                    "{path}: the file system does not support O_DIRECT; put the files on ext4, xfs or a block device"
                )
            }
            StorageError::Open(path, e) => write!(f, "{path}: {e}"),
            StorageError::TooManyFiles(n) => write!(f, "storage: all {n} file slots are in use"),
            StorageError::Io(what, e) => write!(f, "storage: {what}: {e}"),
        }
    }
}

impl std::error::Error for StorageError {}

/// A file open on the port (its registered-file slot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId(u32);

/// Why a request was not taken. The buffer, if any, comes back with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitError {
    /// Offset or length not a multiple of [`DIRECT_ALIGN`].
    Misaligned,
    /// Longer than a buffer.
    TooLong,
    /// As many requests in flight as the port takes; reap some first.
    Busy,
    /// No such open file.
    BadFile,
}

/// A finished request.
#[derive(Debug)]
pub struct Completion {
    /// What the caller passed with the request.
    pub cookie: u64,
    /// The request's buffer, back to the caller (None for a sync).
    pub buf: Option<Buf>,
    /// Bytes transferred (a read stops early at the end of the file), or the error number.
    pub result: Result<u32, i32>,
}

/// Counters.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StorageStats {
    /// Read requests completed.
    pub reads: u64,
    /// Write requests completed.
    pub writes: u64,
    /// Syncs completed.
    pub syncs: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Transfers submitted (a request cut in parts counts each).
    pub parts: u64,
    /// Short transfers continued.
    pub continued: u64,
    /// Requests that completed with an error.
    pub errors: u64,
    /// System calls that submitted or waited.
    pub enters: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
    Sync,
}

struct Request {
    cookie: u64,
    kind: Kind,
    file: u32,
    off: u64,
    len: u32,
    buf: Option<Buf>,
    /// Transfers in flight.
    parts: u32,
    /// Bytes transferred so far.
    done: u32,
    /// Where a read met the end of the file (bytes from the request's start).
    eof_at: Option<u32>,
    err: Option<i32>,
}

/// One engine's storage queues.
pub struct StoragePort {
    // Declared before the pool so the ring (which refers to the pool's memory) goes first.
    ring: IoUring,
    files: Vec<Option<File>>,
    reqs: Vec<Option<Request>>,
    free_reqs: Vec<u32>,
    unsubmitted: u32,
    max_part: u32,
    features: Features,
    /// Counters.
    pub stats: StorageStats,
    pool: BufferPool,
}

/// Completions taken from the ring per pass.
const REAP_BATCH: usize = 64;

impl StoragePort {
    /// Sets up the ring, the buffer pool (registered) and the file table. Fails with one
    /// line saying what is missing.
    pub fn new(cfg: StorageConfig) -> Result<StoragePort, StorageError> {
        Self::new_in(cfg, None)
    }

    /// As [`StoragePort::new`], with the buffers in `region` (a NIC port's lent arena) when
    /// given, so what is read can be transmitted without a copy.
    pub fn new_in(cfg: StorageConfig, region: Option<&crate::ArenaRegion>) -> Result<StoragePort, StorageError> {
        let aligned = |n: usize| n > 0 && n.is_multiple_of(DIRECT_ALIGN);
        if !aligned(cfg.buf_size) || !aligned(cfg.max_part as usize) || cfg.entries == 0 || cfg.max_files == 0 {
            return Err(StorageError::Io(
                "configuration".into(),
                io::Error::new(io::ErrorKind::InvalidInput, "buffer and part sizes must be multiples of 4096"),
            ));
        }
        let mut b = IoUring::builder();
        b.setup_cqsize(cfg.entries * 2);
        if let Some(idle) = cfg.sqpoll_idle_ms {
            b.setup_sqpoll(idle);
        }
        let ring = b.build(cfg.entries).map_err(|e| {
            StorageError::Unavailable(format!("io_uring_setup: {e} (see sysctl kernel.io_uring_disabled)"))
        })?;
        let features = Features::of(&ring);
        if let Some(op) = features.missing() {
            return Err(StorageError::Unavailable(format!("the kernel lacks {op}")));
        }
        let pool = match region {
            Some(r) => BufferPool::in_region(r, cfg.buffers, cfg.buf_size),
            None => BufferPool::new(cfg.buffers, cfg.buf_size),
        }
        .map_err(|e| StorageError::Io("buffer pool".into(), e))?;
        let iovecs: Vec<libc::iovec> = (0..pool.count())
            .map(|i| libc::iovec { iov_base: pool.addr(i).cast(), iov_len: pool.buf_size() })
            .collect();
        // SAFETY: every iovec is a buffer of the pool, which lives in this port and is
        // dropped after the ring (field order), so the registration never outlives it.
        unsafe { ring.submitter().register_buffers(&iovecs) }
            .map_err(|e| StorageError::Io("registering buffers (RLIMIT_MEMLOCK?)".into(), e))?;
        ring.submitter()
            .register_files_sparse(cfg.max_files)
            .map_err(|e| StorageError::Io("registering the file table".into(), e))?;
        Ok(StoragePort {
            ring,
            files: (0..cfg.max_files).map(|_| None).collect(),
            reqs: (0..cfg.entries).map(|_| None).collect(),
            free_reqs: (0..cfg.entries).rev().collect(),
            unsubmitted: 0,
            max_part: cfg.max_part,
            features,
            stats: StorageStats::default(),
            pool,
        })
    }

    /// What the kernel offers.
    pub fn features(&self) -> &Features {
        &self.features
    }

    /// The buffers.
    pub fn pool(&mut self) -> &mut BufferPool {
        &mut self.pool
    }

    /// The buffers, read-only.
    pub fn pool_ref(&self) -> &BufferPool {
        &self.pool
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.reqs.len() - self.free_reqs.len()
    }

    /// Opens `path` with O_DIRECT, for reading (and writing, creating it, if `write`). Returns
    /// the file and its size.
    pub fn open(&mut self, path: &Path, write: bool) -> Result<(FileId, u64), StorageError> {
        self.open_flags(path, write, 0)
    }

    /// Opens `path` (which must exist) with O_DIRECT and O_DSYNC for writing: a write
    /// completes only once its data, and what is needed to read it back, are on the device
    /// (a FUA write, or a write and a cache flush, as the device allows).
    pub fn open_dsync(&mut self, path: &Path) -> Result<(FileId, u64), StorageError> {
        self.open_flags(path, true, libc::O_DSYNC)
    }

    fn open_flags(&mut self, path: &Path, write: bool, extra: i32) -> Result<(FileId, u64), StorageError> {
        let shown = path.display().to_string();
        let slot =
            self.files.iter().position(Option::is_none).ok_or(StorageError::TooManyFiles(self.files.len() as u32))?;
        let f = File::options()
            .read(true)
            .write(write)
            .create(write && extra == 0)
            .truncate(false)
            .custom_flags(libc::O_DIRECT | libc::O_CLOEXEC | extra)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EINVAL) => StorageError::NoDirect(shown.clone()),
                _ => StorageError::Open(shown.clone(), e),
            })?;
        let size = f.metadata().map_err(|e| StorageError::Open(shown.clone(), e))?.len();
        self.ring
            .submitter()
            .register_files_update(slot as u32, &[f.as_raw_fd()])
            .map_err(|e| StorageError::Io(format!("registering {shown}"), e))?;
        self.files[slot] = Some(f);
        Ok((FileId(slot as u32), size))
    }

    /// Lets the kernel's helper threads for this ring (the io-wq workers that carry out
    /// writes which must block, such as O_DSYNC ones) run only on `cpus`. By default they
    /// inherit the creating thread's CPUs; an engine pinned to a core that it keeps busy
    /// then competes with its own writes (measured: a 24 KB O_DSYNC write took 1.8 ms instead
    /// of 0.26 ms beside a busy thread on the same core).
    pub fn set_worker_cpus(&self, cpus: &[usize]) -> io::Result<()> {
        // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET only writes inside it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus {
            if c >= libc::CPU_SETSIZE as usize {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("CPU {c} is out of range")));
            }
            // SAFETY: `c` is below CPU_SETSIZE, checked above.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        self.ring.submitter().register_iowq_aff(&set)
    }

    /// The ring's descriptor: readable while completions wait to be reaped (to sleep in
    /// poll() on it together with a NIC queue).
    pub fn ring_fd(&self) -> i32 {
        self.ring.as_raw_fd()
    }

    /// Closes a file. Requests still in flight on it finish first (the kernel holds its own
    /// reference until they do).
    pub fn close(&mut self, f: FileId) {
        if let Some(slot) = self.files.get_mut(f.0 as usize) {
            if slot.take().is_some() {
                // Failure leaves a stale slot that is overwritten at the next open.
                let _ = self.ring.submitter().register_files_update(f.0, &[-1]);
            }
        }
    }

    /// Reads `len` bytes at `off` of `file` into the start of `buf`.
    pub fn read(&mut self, file: FileId, off: u64, len: u32, buf: Buf, cookie: u64) -> Result<(), (Buf, SubmitError)> {
        self.transfer(Kind::Read, file, off, len, buf, cookie)
    }

    /// Writes the first `len` bytes of `buf` at `off` of `file`.
    pub fn write(&mut self, file: FileId, off: u64, len: u32, buf: Buf, cookie: u64) -> Result<(), (Buf, SubmitError)> {
        self.transfer(Kind::Write, file, off, len, buf, cookie)
    }

    /// Makes what was written to `file` durable (fdatasync with `data_only`, else fsync).
    pub fn sync(&mut self, file: FileId, data_only: bool, cookie: u64) -> Result<(), SubmitError> {
        if !self.is_open(file) {
            return Err(SubmitError::BadFile);
        }
        let r = self.take_slot(Request {
            cookie,
            kind: Kind::Sync,
            file: file.0,
            off: 0,
            len: 0,
            buf: None,
            parts: 0,
            done: 0,
            eof_at: None,
            err: None,
        })?;
        let flags = if data_only { types::FsyncFlags::DATASYNC } else { types::FsyncFlags::empty() };
        let e = opcode::Fsync::new(types::Fixed(file.0)).flags(flags).build().user_data(u64::from(r) << 32);
        self.push(&e, r);
        Ok(())
    }

    fn is_open(&self, f: FileId) -> bool {
        self.files.get(f.0 as usize).is_some_and(Option::is_some)
    }

    fn take_slot(&mut self, req: Request) -> Result<u32, SubmitError> {
        let r = self.free_reqs.pop().ok_or(SubmitError::Busy)?;
        self.reqs[r as usize] = Some(req);
        Ok(r)
    }

    fn transfer(
        &mut self,
        kind: Kind,
        file: FileId,
        off: u64,
        len: u32,
        buf: Buf,
        cookie: u64,
    ) -> Result<(), (Buf, SubmitError)> {
        let a = DIRECT_ALIGN as u64;
        let check = if !off.is_multiple_of(a) || !u64::from(len).is_multiple_of(a) || len == 0 {
            Err(SubmitError::Misaligned)
        } else if len as usize > self.pool.buf_size() {
            Err(SubmitError::TooLong)
        } else if !self.is_open(file) {
            Err(SubmitError::BadFile)
        } else if self.free_reqs.is_empty() {
            Err(SubmitError::Busy)
        } else {
            Ok(())
        };
        if let Err(e) = check {
            return Err((buf, e));
        }
        let req = Request {
            cookie,
            kind,
            file: file.0,
            off,
            len,
            buf: Some(buf),
            parts: 0,
            done: 0,
            eof_at: None,
            err: None,
        };
        let r = self.take_slot(req).expect("a free slot was checked");
        let mut start = 0;
        while start < len {
            let end = (start + self.max_part).min(len);
            self.push_part(r, start, end);
            start = end;
        }
        Ok(())
    }

    /// Queues the transfer of the request's bytes `start..end`.
    fn push_part(&mut self, r: u32, start: u32, end: u32) {
        let req = self.reqs[r as usize].as_ref().expect("live request");
        let index = req.buf.as_ref().expect("a transfer has a buffer").index();
        // SAFETY: inside buffer `index` (end ≤ len ≤ buffer size, checked on submission).
        let addr = unsafe { self.pool.addr(index).add(start as usize) };
        let (fd, off, n) = (types::Fixed(req.file), req.off + u64::from(start), end - start);
        let e = match req.kind {
            Kind::Read => opcode::ReadFixed::new(fd, addr, n, index as u16).offset(off).build(),
            _ => opcode::WriteFixed::new(fd, addr, n, index as u16).offset(off).build(),
        };
        self.push(&e.user_data((u64::from(r) << 32) | u64::from(start)), r);
    }

    fn push(&mut self, e: &squeue::Entry, r: u32) {
        loop {
            // SAFETY: the entry refers to a registered buffer and file slot of this port; the
            // buffer's token stays in the request until its completion is reaped, so the memory
            // is neither freed nor reused while the kernel writes or reads it.
            if unsafe { self.ring.submission().push(e) }.is_ok() {
                break;
            }
            // The submission queue is full: hand it to the kernel and try again.
            self.enter(0);
        }
        self.unsubmitted += 1;
        self.stats.parts += 1;
        if let Some(req) = self.reqs[r as usize].as_mut() {
            req.parts += 1;
        }
    }

    fn enter(&mut self, want: usize) {
        self.stats.enters += 1;
        // An error (EINTR, EBUSY while completions pile up) leaves the entries queued; the
        // next call submits them.
        if self.ring.submitter().submit_and_wait(want).is_ok() {
            self.unsubmitted = 0;
        }
    }

    /// Hands everything queued to the kernel (one system call; none if nothing is queued or
    /// the kernel's own thread polls the queue).
    pub fn submit(&mut self) {
        if self.unsubmitted > 0 {
            if self.features.sqpoll {
                // Wakes the polling thread only if it went to sleep.
                let _ = self.ring.submit();
                self.unsubmitted = 0;
            } else {
                self.enter(0);
            }
        }
    }

    /// Submits, then waits until at least one completion is ready (for callers with nothing
    /// else to do; the engine loop uses [`StoragePort::reap`]).
    pub fn wait(&mut self) {
        if self.in_flight() > 0 {
            self.enter(1);
        }
    }

    /// Takes finished transfers off the completion queue; for each request that is now
    /// complete, calls `done`. Returns how many requests completed.
    pub fn reap(&mut self, mut done: impl FnMut(Completion)) -> usize {
        let mut completed = 0;
        loop {
            let mut batch = [(0u64, 0i32); REAP_BATCH];
            let mut n = 0;
            for cqe in self.ring.completion().take(REAP_BATCH) {
                batch[n] = (cqe.user_data(), cqe.result());
                n += 1;
            }
            for &(data, res) in &batch[..n] {
                if let Some(c) = self.finish_part((data >> 32) as u32, data as u32, res) {
                    completed += 1;
                    done(c);
                }
            }
            if n < REAP_BATCH {
                break;
            }
        }
        completed
    }

    /// One transfer finished with `res`: continue a short one, complete the request when its
    /// last transfer is in.
    fn finish_part(&mut self, r: u32, start: u32, res: i32) -> Option<Completion> {
        let max_part = self.max_part;
        let req = self.reqs.get_mut(r as usize)?.as_mut()?;
        req.parts -= 1;
        // The part this transfer belongs to ends at the next part boundary (or the end).
        let end = ((start / max_part + 1) * max_part).min(req.len);
        match res {
            e if e < 0 => {
                req.err.get_or_insert(-e);
            }
            0 if req.kind == Kind::Read => req.eof_at = Some(req.eof_at.map_or(start, |x| x.min(start))),
            0 if req.kind == Kind::Write => {
                req.err.get_or_insert(libc::EIO);
            }
            n => {
                let n = n as u32;
                req.done += n;
                let at = start + n;
                if at < end && req.kind != Kind::Sync {
                    if at.is_multiple_of(DIRECT_ALIGN as u32) {
                        // Short but aligned: carry on from where it stopped (a read that is
                        // at the end of the file will come back with 0).
                        self.stats.continued += 1;
                        self.push_part(r, at, end);
                        return None;
                    }
                    // Unaligned and short: only the end of the file does that.
                    req.eof_at = Some(req.eof_at.map_or(at, |x| x.min(at)));
                }
            }
        }
        let req = self.reqs[r as usize].as_ref().expect("live request");
        if req.parts > 0 {
            return None;
        }
        let req = self.reqs[r as usize].take().expect("live request");
        self.free_reqs.push(r);
        let result = match req.err {
            Some(e) => {
                self.stats.errors += 1;
                Err(e)
            }
            None => Ok(match req.kind {
                Kind::Read => {
                    let n = req.eof_at.map_or(req.len, |e| e.min(req.len));
                    self.stats.reads += 1;
                    self.stats.bytes_read += u64::from(n);
                    n
                }
                Kind::Write => {
                    self.stats.writes += 1;
                    self.stats.bytes_written += u64::from(req.done);
                    req.done
                }
                Kind::Sync => {
                    self.stats.syncs += 1;
                    0
                }
            }),
        };
        Some(Completion { cookie: req.cookie, buf: req.buf, result })
    }
}

/// `(off, len)` widened to [`DIRECT_ALIGN`] boundaries: the aligned offset, the aligned
/// length, and where the wanted bytes start in what is read.
pub fn align_range(off: u64, len: u64) -> (u64, u64, usize) {
    let a = DIRECT_ALIGN as u64;
    let start = off - off % a;
    let end = (off + len).next_multiple_of(a);
    (start, end - start, (off - start) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_widen_to_blocks() {
        assert_eq!(align_range(0, 1), (0, 4096, 0));
        assert_eq!(align_range(4095, 2), (0, 8192, 4095));
        assert_eq!(align_range(8192, 4096), (8192, 4096, 0));
        assert_eq!(align_range(10_000, 0), (8192, 4096, 1808));
    }
}
