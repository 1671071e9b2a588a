//! Compaction in the background: the log is rewritten as a snapshot when it has grown well
//! beyond the live data, while requests go on.
//!
//! 1. The compactor prepares the first segment of a new generation for every log and asks
//!    them to switch; each engine switches between two commits and says the last number it
//!    wrote to the old generation. B, the highest of those, is the snapshot's base: every
//!    number up to B is in an old log, every number above it in a new one.
//! 2. Once all have switched, every change up to B is in memory (each engine finished the
//!    commands that took those numbers before it switched). The compactor copies the keys
//!    one shard at a time (holding one lock for one shard's copy, never the whole keyspace)
//!    into `snapshot.tmp`. Changes made meanwhile may or may not be in it; the replay applies
//!    every change above B in order, and records hold whole states, so either way the result
//!    is the same.
//! 3. The snapshot replaces the old one only when every change that could have shaped it
//!    (every number taken before the copy ended) is durable, so it never holds a change a
//!    crash could take back — nor lacks a key whose removal a crash could take back.
//! 4. The old generation's logs are removed.
//!
//! A crash at any step leaves the old snapshot and every log since it, which replay as
//! before.

use super::order::Order;
use super::{dir, snapshot};
use crate::keyspace::Databases;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The generations, shared by the engines' log writers and the compactor.
pub struct Gens {
    /// The generation engines are to write to.
    target: AtomicU64,
    /// Per engine: the generation it writes to.
    current: Vec<AtomicU64>,
    /// Per engine: the last number it wrote to its previous generation.
    last_old: Vec<AtomicU64>,
    /// Log bytes written since the last snapshot, all engines.
    bytes: AtomicU64,
    /// Size of the last snapshot.
    snapshot_bytes: AtomicU64,
    running: AtomicBool,
    /// Compactions finished.
    pub done: AtomicU64,
    /// Log bytes above which a compaction starts...
    threshold: u64,
    /// ...if they are also beyond this percentage of the last snapshot's size.
    percent: u64,
    /// Log lanes per engine.
    lanes: usize,
}

/// What a compaction did.
#[derive(Debug, Clone, Copy)]
pub struct Report {
    /// The new generation.
    pub gen: u64,
    /// The snapshot's base.
    pub base: u64,
    /// Keys written.
    pub keys: u64,
    /// Log segments removed.
    pub removed: usize,
    /// How long it took.
    pub took: Duration,
}

impl Gens {
    /// Generations for `engines` engines starting at `gen`, compacting when the log is past
    /// `threshold` bytes and past `percent` % of the last snapshot (of `snapshot_bytes`), as
    /// Redis's `auto-aof-rewrite-min-size` and `auto-aof-rewrite-percentage`.
    pub fn new(engines: usize, lanes: usize, gen: u64, threshold: u64, percent: u64, snapshot_bytes: u64) -> Gens {
        Gens {
            target: AtomicU64::new(gen),
            current: (0..engines).map(|_| AtomicU64::new(gen)).collect(),
            last_old: (0..engines).map(|_| AtomicU64::new(0)).collect(),
            bytes: AtomicU64::new(0),
            snapshot_bytes: AtomicU64::new(snapshot_bytes),
            running: AtomicBool::new(false),
            done: AtomicU64::new(0),
            threshold,
            percent,
            lanes: lanes.clamp(1, super::MAX_LANES),
        }
    }

    /// Log lanes per engine.
    pub fn lanes(&self) -> usize {
        self.lanes
    }

    /// The generation engines are to write to.
    pub fn target(&self) -> u64 {
        self.target.load(Ordering::SeqCst)
    }

    /// Engine `e` now writes to `gen`; `last_old` was its last number in the previous one.
    pub fn switched(&self, e: usize, gen: u64, last_old: u64) {
        self.last_old[e].store(last_old, Ordering::SeqCst);
        self.current[e].store(gen, Ordering::SeqCst);
    }

    /// A commit of `n` bytes was written.
    pub fn wrote(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// True (once) when a compaction should start now: the caller runs [`compact`].
    pub fn should_start(&self) -> bool {
        let grown = self.snapshot_bytes.load(Ordering::Relaxed).saturating_mul(self.percent) / 100;
        let limit = self.threshold.max(grown);
        self.bytes.load(Ordering::Relaxed) > limit
            && self.running.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst).is_ok()
    }

    /// A compaction that [`Gens::should_start`] allowed did not start after all.
    pub fn abandon(&self) {
        self.running.store(false, Ordering::SeqCst);
    }

    /// True while a compaction runs.
    pub fn running(&self) -> bool {
        self.running.load(Ordering::SeqCst)
    }
}

/// Waits (bounded) until `ok` holds; false if it did not within `limit`.
fn wait_for(limit: Duration, ok: impl Fn() -> bool) -> bool {
    let t = Instant::now();
    while !ok() {
        if t.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    true
}

/// Runs one compaction of `dir` (segments of `seg_size` bytes). Call after
/// [`Gens::should_start`] said so; it clears the running flag when it ends, however it ends.
pub fn compact(dir_path: &Path, dbs: &Databases, order: &Order, gens: &Gens, seg_size: u64) -> Result<Report, String> {
    let r = run(dir_path, dbs, order, gens, seg_size);
    gens.running.store(false, Ordering::SeqCst);
    r
}

fn run(dir_path: &Path, dbs: &Databases, order: &Order, gens: &Gens, seg_size: u64) -> Result<Report, String> {
    let t = Instant::now();
    let old = gens.target();
    let gen = old + 1;
    for log in 0..gens.current.len() * gens.lanes {
        let p = dir_path.join(dir::segment_name(gen, log, 0));
        dir::prepare_segment(&p, seg_size).map_err(|err| format!("{}: {err}", p.display()))?;
    }
    let bytes_before = gens.bytes.load(Ordering::Relaxed);
    gens.target.store(gen, Ordering::SeqCst);
    // Engines switch between commits; an idle one within its poll timeout.
    if !wait_for(Duration::from_secs(30), || gens.current.iter().all(|c| c.load(Ordering::SeqCst) == gen)) {
        return Err("compaction: engines did not switch to the new log within 30 s".into());
    }
    let base = gens.last_old.iter().map(|l| l.load(Ordering::SeqCst)).max().unwrap_or(0);
    let keys = snapshot::write(dir_path, dbs, base, gen, || {
        let last = order.last();
        if wait_for(Duration::from_secs(30), || order.durable() >= last) {
            Ok(())
        } else {
            Err(format!("compaction: change {last} did not become durable within 30 s"))
        }
    })?;
    let mut removed = 0;
    for ((g, ..), p) in dir::segments(dir_path).map_err(|e| format!("{}: {e}", dir_path.display()))? {
        if g < gen {
            dir::recycle(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            removed += 1;
        }
    }
    dir::sync_dir(dir_path).map_err(|e| format!("{}: {e}", dir_path.display()))?;
    let size = std::fs::metadata(dir_path.join("snapshot")).map_or(0, |m| m.len());
    gens.snapshot_bytes.store(size, Ordering::Relaxed);
    gens.bytes.fetch_sub(bytes_before, Ordering::Relaxed);
    gens.done.fetch_add(1, Ordering::Relaxed);
    Ok(Report { gen, base, keys, removed, took: t.elapsed() })
}
