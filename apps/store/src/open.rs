//! Opening a store on its folder for a number of engines: the keys recovered from the
//! snapshot and the log, the global order of changes, the compaction generations, and one
//! log writer per engine on a storage queue of its own. What is left to the caller is the
//! network: a [`crate::server::Store`] per engine on its writer.

use crate::keyspace::Databases;
use crate::log::compact::Gens;
use crate::log::order::Order;
use crate::log::replay::{self, Recovery};
use crate::log::stage::Stage;
use crate::log::writer::LogWriter;
use crate::server::{unix_ms, EngineStats, Shared};
use io::storage::{StorageConfig, StoragePort};
use std::path::PathBuf;
use std::sync::Arc;

/// How a store is laid out and compacted.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The folder of the log and snapshot.
    pub dir: PathBuf,
    /// Bytes per log segment.
    pub segment_bytes: u64,
    /// Compact once the log holds this many bytes...
    pub compact_bytes: u64,
    /// ...and has grown by this percentage of the last snapshot.
    pub compact_percent: u64,
    /// Logs per engine.
    pub lanes: usize,
    /// Connections at most, all engines together.
    pub max_conns: usize,
    /// The port served (INFO reports it).
    pub port: u16,
    /// The default user's password (Redis's `requirepass`); None: no AUTH needed.
    pub requirepass: Option<Vec<u8>>,
    /// The Redis primary this store is a replica of (host, port); None: a primary.
    pub replicaof: Option<(String, u16)>,
    /// Databases (Redis's `databases`; SELECT 0 to N-1).
    pub databases: usize,
}

/// A store opened: what every engine shares, each engine's log writer, and what recovery
/// found.
pub struct Opened {
    /// The keys, the order of changes, the generations, the counters.
    pub shared: Arc<Shared>,
    /// Engine `e`'s log writer, to be taken by its engine.
    pub writers: Vec<Option<LogWriter>>,
    /// What recovery found.
    pub recovered: Recovery,
}

/// The log's storage queue: 64 buffers of 256 KB (a commit of up to 16 MB in flight at
/// once; longer ones go out as buffers come back).
fn log_storage() -> StorageConfig {
    StorageConfig { entries: 128, buffers: 64, buf_size: 256 << 10, max_files: 4, ..StorageConfig::default() }
}

/// Recovers the store in `s.dir` and opens a log writer for each of `engines`; the kernel's
/// helpers for the log's writes may run on any of the first `cpus` CPUs.
pub fn open(s: &Settings, engines: usize, cpus: usize) -> Result<Opened, String> {
    // Many shards even for one engine: the background snapshot holds one shard's lock at a
    // time, so a request waits at most for a 64th of the keys to be copied.
    let dbs = Databases::new(s.databases, crate::keyspace::MAX_SHARDS);
    let recovered = replay::recover(&s.dir, &dbs, unix_ms())?;
    let order = Arc::new(Order::new(engines, recovered.last));
    let snapshot_bytes = std::fs::metadata(s.dir.join("snapshot")).map_or(0, |m| m.len());
    let gens = Arc::new(Gens::new(engines, s.lanes, recovered.gen, s.compact_bytes, s.compact_percent, snapshot_bytes));
    let mut writers = Vec::new();
    for e in 0..engines {
        let port = StoragePort::new(log_storage()).map_err(|e| e.to_string())?;
        // Pinned to the engine's busy core the kernel's helpers would wait for it (a write
        // took seven times as long). Inside a cpuset that allows fewer CPUs the kernel
        // refuses, and they stay where they are.
        let _ = port.set_worker_cpus(&(0..cpus).collect::<Vec<_>>());
        let stage = Stage::new(order.clone(), e);
        writers.push(Some(LogWriter::new(port, stage, gens.clone(), s.dir.clone(), e, s.segment_bytes)?));
    }
    /// The replication backlog: what a replica may fall behind by (or fetch while it loads
    /// its full sync) and still continue.
    const REPL_BACKLOG: usize = 64 << 20;
    let shared = Arc::new(Shared {
        dbs,
        order,
        gens,
        seg_size: s.segment_bytes,
        engines: (0..engines).map(|_| EngineStats::default()).collect(),
        port: s.port,
        requirepass: s.requirepass.clone(),
        dir: s.dir.clone(),
        max_conns: s.max_conns,
        started: unix_ms() / 1000,
        feed: Arc::new(crate::repl::feed::Feed::new(REPL_BACKLOG)),
        clients: Default::default(),
        kills: Default::default(),
        upstream: s.replicaof.as_ref().map(|(h, p)| Arc::new(crate::repl::follow::Upstream::new(h, *p))),
    });
    Ok(Opened { shared, writers, recovered })
}
