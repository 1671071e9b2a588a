//! One engine's log writer: group commit on the engine's storage queue, in lanes.
//!
//! Changes are staged as they happen. Whenever a lane is free and changes are staged, all of
//! them become one commit, written with O_DIRECT|O_DSYNC into the lane's current segment (a
//! reused or zero-filled one) from the port's registered buffers. The more clients write at
//! once, the more each device write carries.
//!
//! A lane is a log of its own (its own segment files) with one commit in flight at a time:
//! that is what makes a torn write recognisable at replay (only a log's last commit can be
//! incomplete). With one lane, clients fall into two groups that alternate: those whose
//! requests arrived while a commit was being written wait for it and then for their own, so
//! each waits about two device writes. With two lanes a batch is written as soon as it is
//! staged, on whichever lane is free, and waits about one — on a device that flushes
//! concurrent writes in parallel. The virtual disk measured here serialises its flushes: two
//! lanes made commits smaller and slower (45.6k SET/s against 52k with one, 50 clients), so
//! one lane is the default. Replay merges all logs by number.

use super::compact::Gens;
use super::dir::{prepare_segment, segment_name};
use super::stage::Stage;
use io::storage::{Buf, FileId, StorageError, StoragePort, SubmitError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

pub use super::MAX_LANES;

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
    /// Time from a commit's first write to its completion being taken, all commits (ns).
    pub commit_ns: u64,
}

struct InFlight {
    /// Where the commit starts in the segment.
    at: u64,
    /// Bytes of it submitted so far.
    submitted: usize,
    /// Writes not yet completed.
    parts: u32,
    records: u64,
    first: u64,
    last: u64,
    started: Instant,
}

/// One lane: a log of its own.
struct Lane {
    /// The log's index in file names (engine × lanes + lane).
    log: usize,
    seg: FileId,
    seg_no: u32,
    seg_len: u64,
    off: u64,
    next: Option<JoinHandle<std::io::Result<()>>>,
    commit: Vec<u8>,
    inflight: Option<InFlight>,
    /// The last number in this generation's log (0: none yet), for the next commit's header.
    log_last: u64,
}

/// One engine's log.
pub struct LogWriter {
    port: StoragePort,
    /// The changes waiting for a commit (the engine's [`crate::command::Journal`]).
    pub stage: Stage,
    gens: Arc<Gens>,
    /// The last number in a durable commit, any lane (at a switch: the last in the old
    /// generation).
    last_seq: u64,
    dir: PathBuf,
    gen: u64,
    seg_size: u64,
    lanes: Vec<Lane>,
    failed: Option<String>,
    reaped: Vec<Buf>,
    /// Counters.
    pub stats: LogStats,
    /// Where durable commits go for replicas (once one has attached).
    pub feed: Option<Arc<crate::repl::feed::Feed>>,
}

fn open_segment(port: &mut StoragePort, path: &Path) -> Result<(FileId, u64), String> {
    port.open_dsync(path).map_err(|e: StorageError| e.to_string())
}

fn spawn_prepare(path: PathBuf, size: u64) -> Option<JoinHandle<std::io::Result<()>>> {
    // If no thread can be started, the segment is made when it is needed.
    std::thread::Builder::new().name("store-segment".into()).spawn(move || prepare_segment(&path, size)).ok()
}

impl Lane {
    /// Opens segment 0 of generation `gen` of log `log` (prepared already, or made now).
    fn start(port: &mut StoragePort, dir: &Path, gen: u64, log: usize, seg_size: u64) -> Result<Lane, String> {
        let path = dir.join(segment_name(gen, log, 0));
        if !path.exists() {
            prepare_segment(&path, seg_size).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let (seg, seg_len) = open_segment(port, &path)?;
        let next = spawn_prepare(dir.join(segment_name(gen, log, 1)), seg_size);
        Ok(Lane { log, seg, seg_no: 0, seg_len, off: 0, next, commit: Vec::new(), inflight: None, log_last: 0 })
    }

    /// Moves to the next segment (prepared in the background, or made now).
    fn next_segment(&mut self, port: &mut StoragePort, dir: &Path, gen: u64, seg_size: u64) -> Result<(), String> {
        let prepared = self.next.take().map(JoinHandle::join);
        port.close(self.seg);
        self.seg_no += 1;
        let path = dir.join(segment_name(gen, self.log, self.seg_no));
        let need = (self.commit.len() as u64).max(seg_size);
        match prepared {
            Some(Ok(Ok(()))) if need <= seg_size => {}
            // A commit longer than a segment (a value of many megabytes) gets one of its own.
            _ => prepare_segment(&path, need).map_err(|e| format!("{}: {e}", path.display()))?,
        }
        let (seg, len) = open_segment(port, &path)?;
        self.seg = seg;
        self.seg_len = len;
        self.off = 0;
        self.next = spawn_prepare(dir.join(segment_name(gen, self.log, self.seg_no + 1)), seg_size);
        Ok(())
    }
}

impl LogWriter {
    /// Engine `engine`'s log of `gens`' current generation in `dir`, in segments of
    /// `seg_size` bytes, written through `port`: `gens.lanes()` logs, each with its first
    /// segment ready (and the second being made).
    pub fn new(
        mut port: StoragePort,
        stage: Stage,
        gens: Arc<Gens>,
        dir: PathBuf,
        engine: usize,
        seg_size: u64,
    ) -> Result<LogWriter, String> {
        let gen = gens.target();
        let n = gens.lanes();
        let mut lanes = Vec::new();
        for l in 0..n {
            lanes.push(Lane::start(&mut port, &dir, gen, engine * n + l, seg_size)?);
        }
        Ok(LogWriter {
            port,
            stage,
            gens,
            last_seq: 0,
            dir,
            gen,
            seg_size,
            lanes,
            failed: None,
            reaped: Vec::new(),
            feed: None,
            stats: LogStats { segments: n as u64, ..LogStats::default() },
        })
    }

    /// Why the log cannot go on (a write failed), if it cannot: nothing more is durable.
    pub fn failed(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// True while a commit is being written.
    pub fn in_flight(&self) -> bool {
        self.lanes.iter().any(|l| l.inflight.is_some())
    }

    /// The storage ring's descriptor (readable when a write completed).
    pub fn ring_fd(&self) -> i32 {
        self.port.ring_fd()
    }

    /// Takes finished writes; when a commit is whole and durable, tells the order; then
    /// starts a commit on a free lane if changes are staged. Call every batch.
    pub fn pump(&mut self) {
        if self.failed.is_some() {
            return;
        }
        let mut failed = None;
        let mut done = [0u32; MAX_LANES];
        let mut bufs = std::mem::take(&mut self.reaped);
        self.port.reap(|c| {
            if let Some(d) = done.get_mut(c.cookie as usize) {
                *d += 1;
            }
            if let Err(errno) = c.result {
                failed.get_or_insert(format!("log write failed: {}", std::io::Error::from_raw_os_error(errno)));
            }
            bufs.extend(c.buf);
        });
        for b in bufs.drain(..) {
            self.port.pool().free(b);
        }
        self.reaped = bufs;
        if let Some(e) = failed {
            self.failed = Some(e);
            return;
        }
        for (l, &n) in done.iter().enumerate() {
            if n > 0 {
                self.finish(l, n);
            }
        }
        if !self.in_flight() && self.gens.target() > self.gen {
            if let Err(e) = self.switch_generation() {
                self.failed = Some(e);
                return;
            }
        }
        self.advance();
        self.port.submit();
    }

    /// `n` writes of lane `l` completed.
    fn finish(&mut self, l: usize, n: u32) {
        let lane = &mut self.lanes[l];
        let Some(f) = lane.inflight.as_mut() else { return };
        f.parts -= n;
        if f.parts > 0 || f.submitted < lane.commit.len() {
            return;
        }
        let len = lane.commit.len() as u64;
        self.stats.commits += 1;
        self.stats.commit_ns += f.started.elapsed().as_nanos() as u64;
        self.stats.records += f.records;
        self.stats.bytes += len;
        lane.off = f.at + len;
        lane.log_last = f.last;
        self.last_seq = self.last_seq.max(f.last);
        self.gens.wrote(len);
        lane.inflight = None;
        if let Some(feed) = self.feed.as_ref().filter(|f| f.is_active()) {
            feed.offer(&lane.commit);
        }
        let low = self.lanes.iter().filter_map(|l| l.inflight.as_ref().map(|f| f.first)).min();
        self.stage.settled(low);
    }

    /// Starts a commit on a free lane if changes are staged, and submits what buffers allow
    /// of every commit in flight.
    fn advance(&mut self) {
        if self.stage.has_records() {
            if let Some(l) = self.lanes.iter().position(|l| l.inflight.is_none()) {
                if let Err(e) = self.start_commit(l) {
                    self.failed = Some(e);
                    return;
                }
            }
        }
        for l in 0..self.lanes.len() {
            if let Err(e) = self.submit_parts(l) {
                self.failed = Some(e);
                return;
            }
        }
    }

    fn start_commit(&mut self, l: usize) -> Result<(), String> {
        let lane = &mut self.lanes[l];
        let Some(t) = self.stage.take_commit(&mut lane.commit, self.gen, lane.log_last) else { return Ok(()) };
        if lane.off + lane.commit.len() as u64 > lane.seg_len {
            lane.next_segment(&mut self.port, &self.dir, self.gen, self.seg_size)?;
            self.stats.segments += 1;
        }
        lane.inflight = Some(InFlight {
            at: lane.off,
            submitted: 0,
            parts: 0,
            records: t.records,
            first: t.first,
            last: t.last,
            started: Instant::now(),
        });
        Ok(())
    }

    fn submit_parts(&mut self, l: usize) -> Result<(), String> {
        let lane = &mut self.lanes[l];
        let Some(f) = lane.inflight.as_mut() else { return Ok(()) };
        while f.submitted < lane.commit.len() {
            let Some(mut b) = self.port.pool().alloc() else { break };
            let dst = self.port.pool().get_mut(&mut b);
            let n = dst.len().min(lane.commit.len() - f.submitted);
            dst[..n].copy_from_slice(&lane.commit[f.submitted..f.submitted + n]);
            let at = f.at + f.submitted as u64;
            match self.port.write(lane.seg, at, n as u32, b, l as u64) {
                Ok(()) => {
                    f.submitted += n;
                    f.parts += 1;
                    self.stats.writes += 1;
                }
                Err((b, SubmitError::Busy)) => {
                    self.port.pool().free(b);
                    break;
                }
                Err((b, e)) => {
                    self.port.pool().free(b);
                    return Err(format!("log write refused: {e:?}"));
                }
            }
        }
        Ok(())
    }

    /// Moves every lane to the compactor's new generation (with no commit in flight), whose
    /// first segments it prepared, and says where the old generation ended.
    fn switch_generation(&mut self) -> Result<(), String> {
        let gen = self.gens.target();
        for lane in &mut self.lanes {
            if let Some(h) = lane.next.take() {
                // The old generation's next segment: not needed, but not left half-made either.
                let _ = h.join();
            }
            self.port.close(lane.seg);
            *lane = Lane::start(&mut self.port, &self.dir, gen, lane.log, self.seg_size)?;
            self.stats.segments += 1;
        }
        self.gen = gen;
        self.gens.switched(self.stage.engine(), gen, self.last_seq);
        Ok(())
    }
}
