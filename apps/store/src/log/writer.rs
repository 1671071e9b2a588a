//! One engine's log writer: group commit on the engine's storage queue.
//!
//! Changes are staged as they happen; when no commit is in flight, everything staged becomes
//! one commit, written with O_DIRECT|O_DSYNC into the current (pre-zeroed) segment from the
//! port's registered buffers. While it is in flight new changes gather for the next one, so
//! the more clients write at once, the more each device write carries. One commit in flight
//! per log is also what makes a torn write recognisable at replay: only the last commit of a
//! log can be incomplete.

use super::compact::Gens;
use super::dir::{prepare_segment, segment_name};
use super::stage::Stage;
use io::storage::{FileId, StoragePort};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

/// What a writer counted.
#[derive(Debug, Default, Clone, Copy)]
pub struct LogStats {
    /// Commits made durable.
    pub commits: u64,
    /// Records in them.
    pub records: u64,
    /// Bytes written (padding included).
    pub bytes: u64,
    /// Device writes (a long commit takes several).
    pub writes: u64,
    /// Segments started.
    pub segments: u64,
}

struct InFlight {
    /// Where the commit starts in the segment.
    at: u64,
    /// Bytes of it submitted so far.
    submitted: usize,
    /// Writes not yet completed.
    parts: u32,
    records: u64,
    last: u64,
}

/// One engine's log.
pub struct LogWriter {
    port: StoragePort,
    /// The changes waiting for a commit (the engine's [`crate::command::Journal`]).
    pub stage: Stage,
    gens: Arc<Gens>,
    /// The last number in a durable commit.
    last_seq: u64,
    dir: PathBuf,
    gen: u64,
    engine: usize,
    seg_size: u64,
    seg: FileId,
    seg_no: u32,
    seg_len: u64,
    off: u64,
    next: Option<JoinHandle<std::io::Result<()>>>,
    commit: Vec<u8>,
    inflight: Option<InFlight>,
    failed: Option<String>,
    reaped: Vec<io::storage::Buf>,
    /// Counters.
    pub stats: LogStats,
}

impl LogWriter {
    /// Engine `engine`'s log of `gens`' current generation in `dir`, in segments of
    /// `seg_size` bytes, written through `port`. Prepares the first segment (and starts on
    /// the second).
    pub fn new(
        mut port: StoragePort,
        stage: Stage,
        gens: Arc<Gens>,
        dir: PathBuf,
        engine: usize,
        seg_size: u64,
    ) -> Result<LogWriter, String> {
        let gen = gens.target();
        let path = dir.join(segment_name(gen, engine, 0));
        prepare_segment(&path, seg_size).map_err(|e| format!("{}: {e}", path.display()))?;
        let (seg, seg_len) = port.open_dsync(&path).map_err(|e| e.to_string())?;
        let mut w = LogWriter {
            port,
            stage,
            gens,
            last_seq: 0,
            dir,
            gen,
            engine,
            seg_size,
            seg,
            seg_no: 0,
            seg_len,
            off: 0,
            next: None,
            commit: Vec::new(),
            inflight: None,
            failed: None,
            reaped: Vec::new(),
            stats: LogStats { segments: 1, ..LogStats::default() },
        };
        w.prepare_next();
        Ok(w)
    }

    fn prepare_next(&mut self) {
        let path = self.dir.join(segment_name(self.gen, self.engine, self.seg_no + 1));
        let size = self.seg_size;
        self.next = Some(std::thread::spawn(move || prepare_segment(&path, size)));
    }

    /// Why the log cannot go on (a write failed), if it cannot: nothing more is durable.
    pub fn failed(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// True while a commit is being written.
    pub fn in_flight(&self) -> bool {
        self.inflight.is_some()
    }

    /// The storage ring's descriptor (readable when a write completed).
    pub fn ring_fd(&self) -> i32 {
        self.port.ring_fd()
    }

    /// Takes finished writes; when the commit in flight is whole and durable, tells the
    /// order, then starts the next commit if changes are staged. Call every batch.
    pub fn pump(&mut self) {
        if self.failed.is_some() {
            return;
        }
        let mut failed = None;
        let mut done = 0;
        let mut bufs = std::mem::take(&mut self.reaped);
        self.port.reap(|c| {
            done += 1;
            if let Err(errno) = c.result {
                failed.get_or_insert(format!("log write failed: {}", std::io::Error::from_raw_os_error(errno)));
            }
            bufs.extend(c.buf);
        });
        for b in bufs.drain(..) {
            self.port.pool().free(b);
        }
        self.reaped = bufs;
        self.finish_reaped(done, failed);
        if self.inflight.is_none() && self.failed.is_none() && self.gens.target() > self.gen {
            if let Err(e) = self.switch_generation() {
                self.failed = Some(e);
                return;
            }
        }
        self.advance();
        self.port.submit();
    }

    fn finish_reaped(&mut self, done: u32, failed: Option<String>) {
        if let Some(e) = failed {
            self.failed = Some(e);
            return;
        }
        let Some(f) = self.inflight.as_mut() else { return };
        f.parts -= done;
        if f.parts == 0 && f.submitted == self.commit.len() {
            self.stats.commits += 1;
            self.stats.records += f.records;
            self.stats.bytes += self.commit.len() as u64;
            self.off = f.at + self.commit.len() as u64;
            self.last_seq = f.last;
            self.gens.wrote(self.commit.len() as u64);
            self.inflight = None;
            self.stage.settled();
        }
    }

    /// Starts a commit if none is in flight, and submits what buffers allow of it.
    fn advance(&mut self) {
        if self.inflight.is_none() {
            let Some(t) = self.stage.take_commit(&mut self.commit) else { return };
            if self.off + self.commit.len() as u64 > self.seg_len {
                if let Err(e) = self.next_segment() {
                    self.failed = Some(e);
                    return;
                }
            }
            self.inflight = Some(InFlight { at: self.off, submitted: 0, parts: 0, records: t.records, last: t.last });
        }
        let Some(f) = self.inflight.as_mut() else { return };
        while f.submitted < self.commit.len() {
            let Some(mut b) = self.port.pool().alloc() else { break };
            let pool = self.port.pool();
            let dst = pool.get_mut(&mut b);
            let n = dst.len().min(self.commit.len() - f.submitted);
            dst[..n].copy_from_slice(&self.commit[f.submitted..f.submitted + n]);
            let at = f.at + f.submitted as u64;
            match self.port.write(self.seg, at, n as u32, b, 0) {
                Ok(()) => {
                    f.submitted += n;
                    f.parts += 1;
                    self.stats.writes += 1;
                }
                Err((b, io::storage::SubmitError::Busy)) => {
                    self.port.pool().free(b);
                    break;
                }
                Err((b, e)) => {
                    self.port.pool().free(b);
                    self.failed = Some(format!("log write refused: {e:?}"));
                    return;
                }
            }
        }
    }

    /// Moves to the compactor's new generation (between commits), whose first segment it
    /// prepared.
    fn switch_generation(&mut self) -> Result<(), String> {
        if let Some(h) = self.next.take() {
            // The old generation's next segment: not needed, but not left half-made either.
            let _ = h.join();
        }
        let gen = self.gens.target();
        let path = self.dir.join(segment_name(gen, self.engine, 0));
        let (seg, len) = self.port.open_dsync(&path).map_err(|e| e.to_string())?;
        self.port.close(self.seg);
        self.seg = seg;
        self.seg_len = len;
        self.seg_no = 0;
        self.off = 0;
        self.gen = gen;
        self.stats.segments += 1;
        self.gens.switched(self.engine, gen, self.last_seq);
        self.prepare_next();
        Ok(())
    }

    fn next_segment(&mut self) -> Result<(), String> {
        let prepared = self.next.take().map(|h| h.join());
        self.port.close(self.seg);
        self.seg_no += 1;
        let path = self.dir.join(segment_name(self.gen, self.engine, self.seg_no));
        let need = (self.commit.len() as u64).max(self.seg_size);
        match prepared {
            Some(Ok(Ok(()))) if need <= self.seg_size => {}
            // A commit longer than a segment (a value of many megabytes) gets one of its own.
            _ => prepare_segment(&path, need).map_err(|e| format!("{}: {e}", path.display()))?,
        }
        let (seg, len) = self.port.open_dsync(&path).map_err(|e| e.to_string())?;
        self.seg = seg;
        self.seg_len = len;
        self.off = 0;
        self.stats.segments += 1;
        self.prepare_next();
        Ok(())
    }
}
