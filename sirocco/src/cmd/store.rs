//! `sirocco store`: a durable Redis-protocol store on the level-2 channel (Arrakis's Redis),
//! one engine per queue, each with its own log on its own storage queue, every engine
//! serving every key.

use crate::serve::{Defaults, ServeArgs};
use crate::tcp_limits::tcp_limits;
use clap::Args;
use engine::ChannelService;
use io::storage::{StorageConfig, StoragePort};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use store::keyspace::Keyspace;
use store::log::compact::Gens;
use store::log::order::Order;
use store::log::stage::Stage;
use store::log::writer::LogWriter;
use store::log::{dir, replay};
use store::server::{unix_ms, EngineStats, Shared, Store};
use tcp::channel::streams::Streams;
use tcp::channel::Buffers;
use wire::Protocol;

#[derive(Args)]
pub struct StoreArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    /// Directory of the log and snapshot (created if missing; on a file system with
    /// O_DIRECT: ext4, xfs).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Size of each log segment, in megabytes (segments are zero-filled before use) [default: 64].
    #[arg(long, value_name = "MB")]
    pub segment_mb: Option<u64>,
    /// Compact the log in the background into a snapshot once it holds at least this many
    /// megabytes (Redis's auto-aof-rewrite-min-size) [default: 64]...
    #[arg(long, value_name = "MB")]
    pub compact_mb: Option<u64>,
    /// ...and has grown by this percentage of the last snapshot's size (Redis's
    /// auto-aof-rewrite-percentage; 0: the size alone decides) [default: 100].
    #[arg(long, value_name = "PERCENT")]
    pub compact_percent: Option<u64>,
    /// Logs each engine writes, each with one commit in flight: more than one helps only
    /// a device that flushes concurrent writes in parallel [default: 1].
    #[arg(long, value_name = "N")]
    pub log_lanes: Option<usize>,
    /// Most connections open at once, all engines together (more are reset) [default: 10000].
    #[arg(long, value_name = "N")]
    pub max_conns: Option<usize>,
}

/// The store's own keys in the config file.
#[derive(Deserialize, Default)]
pub struct StoreConfig {
    dir: Option<PathBuf>,
    segment_mb: Option<u64>,
    compact_mb: Option<u64>,
    compact_percent: Option<u64>,
    log_lanes: Option<usize>,
    max_conns: Option<usize>,
}

/// Send buffers per engine (2 KB each), as the KV server.
const SEND_BUFFERS: usize = 65_536;

/// The log's storage queue: 64 buffers of 256 KB (a commit of up to 16 MB in flight at
/// once; longer ones go out as buffers come back).
fn log_storage() -> StorageConfig {
    StorageConfig { entries: 128, buffers: 64, buf_size: 256 << 10, max_files: 4, ..StorageConfig::default() }
}

/// Runs the store.
pub fn run(a: StoreArgs) -> Result<(), String> {
    let s = a.serve.setup::<StoreConfig>(Defaults { port: 6379, idle_spins: 0 })?;
    let dir_path =
        a.dir.or(s.own.dir.clone()).ok_or("--dir (or `dir` in the config) is required: where the log lives")?;
    let seg_mb = a.segment_mb.or(s.own.segment_mb).unwrap_or(64);
    if !(1..=4096).contains(&seg_mb) {
        return Err("--segment-mb must be between 1 and 4096".into());
    }
    let compact_mb = a.compact_mb.or(s.own.compact_mb).unwrap_or(64);
    let compact_percent = a.compact_percent.or(s.own.compact_percent).unwrap_or(100);
    if compact_percent > 100_000 {
        return Err("--compact-percent must be at most 100000".into());
    }
    if !(1..=1 << 20).contains(&compact_mb) {
        return Err("--compact-mb must be between 1 and 1048576".into());
    }
    let lanes = a.log_lanes.or(s.own.log_lanes).unwrap_or(1);
    if !(1..=store::log::writer::MAX_LANES).contains(&lanes) {
        return Err(format!("--log-lanes must be between 1 and {}", store::log::writer::MAX_LANES));
    }
    let max_conns = a.max_conns.or(s.own.max_conns).unwrap_or(10_000);
    if max_conns == 0 {
        return Err("--max-conns must be at least 1".into());
    }
    if s.checking() {
        // Nothing is created or replayed: the folder must be one, or its parent must be.
        let at = if dir_path.exists() {
            dir_path.clone()
        } else {
            dir_path.parent().map(Path::to_path_buf).unwrap_or_default()
        };
        if !at.is_dir() {
            return Err(format!("{}: not a folder sirocco could keep its log in", dir_path.display()));
        }
    }
    if s.check_only(&format!("redis protocol on port {}, log in {}", s.port, dir_path.display()))? {
        return Ok(());
    }
    std::fs::create_dir_all(&dir_path).map_err(|e| format!("{}: {e}", dir_path.display()))?;
    let _lock = dir::lock(&dir_path)?;

    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let queues = s.opts.queues.or_else(|| io::iface::Interface::lookup(&s.opts.iface).ok().map(|i| i.rx_queues));
    let engines = queues.map_or(cpus, |q| q as usize).max(1);
    // Many shards even for one engine: the background snapshot holds one shard's lock at a
    // time, so a request waits at most for a 64th of the keys to be copied.
    let ks = Keyspace::new(store::keyspace::MAX_SHARDS);
    let rec = replay::recover(&dir_path, &ks, unix_ms())?;
    for n in &rec.notes {
        tracing::info!("store: {n}");
    }
    println!(
        "store: {} keys recovered from {} ({} changes replayed, {} expired while down; last change {}); log generation {}",
        rec.keys,
        dir_path.display(),
        rec.replayed,
        rec.expired,
        rec.last,
        rec.gen
    );
    let order = Arc::new(Order::new(engines, rec.last));
    let snapshot_bytes = std::fs::metadata(dir_path.join("snapshot")).map_or(0, |m| m.len());
    let gens = Arc::new(Gens::new(engines, lanes, rec.gen, compact_mb << 20, compact_percent, snapshot_bytes));
    let mut writers = Vec::new();
    for e in 0..engines {
        let port = StoragePort::new(log_storage()).map_err(|e| e.to_string())?;
        // The kernel's helpers for the log's writes may run on any CPU the process may use:
        // pinned to the engine's busy core they would wait for it (a write took seven times
        // as long). Inside a cpuset that allows fewer CPUs the kernel refuses, and they stay
        // where they are.
        let _ = port.set_worker_cpus(&(0..cpus).collect::<Vec<_>>());
        let stage = Stage::new(order.clone(), e);
        writers.push(Some(LogWriter::new(port, stage, gens.clone(), dir_path.clone(), e, seg_mb << 20)?));
    }
    let shared = Arc::new(Shared {
        ks,
        order,
        gens,
        seg_size: seg_mb << 20,
        engines: (0..engines).map(|_| EngineStats::default()).collect(),
        port: s.port,
        dir: dir_path.clone(),
        max_conns,
        started: unix_ms() / 1000,
    });
    let (port, tcp_cfg) = (s.port, s.opts.tcp.bulk());
    let per_engine = max_conns.div_ceil(engines);
    let make = |q: u32| {
        let Some(log) = writers.get_mut(q as usize).and_then(Option::take) else {
            tracing::error!("engine {q} has no log (expected {engines} engines)");
            std::process::exit(1)
        };
        let bufs = Buffers::new(SEND_BUFFERS, 2048);
        let app = Streams::new(Store::new(shared.clone(), q as usize, log), per_engine);
        ChannelService::new(app, &[port], tcp_cfg, tcp_cfg.limits(tcp_limits()), bufs).with_metrics(store_metrics)
    };
    let what = format!("Redis protocol on port {port}, log in {}", dir_path.display());
    let out = s.run(&what, &[(Protocol::TCP, port)], make, None)?;
    for (q, svc) in out.apps().enumerate() {
        let streams = &svc.server;
        let l = &streams.app.log.stats;
        println!(
            "engine {q} store: connections {} (refused {}, reset for want of buffers {}) commits {} records {} \
             log bytes {} device writes {} segments {} mean commit {:.0} us; tcp retransmits {}",
            streams.stats.opened,
            streams.stats.refused,
            streams.stats.no_buffer,
            l.commits,
            l.records,
            l.bytes,
            l.writes,
            l.segments,
            l.commit_ns as f64 / 1e3 / l.commits.max(1) as f64,
            svc.ch.endpoint().stats().retransmits,
        );
    }
    println!(
        "store: {} keys, last durable change {}, {} compactions",
        shared.ks.len(),
        shared.order.durable(),
        shared.gens.done.load(std::sync::atomic::Ordering::Relaxed)
    );
    Ok(())
}

/// The store's counters for the metrics endpoint: requests, connections, durable commits.
fn store_metrics(s: &Streams<Store>, out: &mut engine::Samples) {
    use std::sync::atomic::Ordering::Relaxed;
    let c = s.app.counters();
    out.counter("sirocco_store_commands_total", "Requests handled.", c.commands.load(Relaxed));
    out.counter("sirocco_store_connections_accepted_total", "Connections accepted.", c.connections.load(Relaxed));
    out.counter(
        "sirocco_store_connections_rejected_total",
        "Connections refused at the limit.",
        c.rejected.load(Relaxed),
    );
    out.gauge("sirocco_store_connections", "Connections open.", c.open.load(Relaxed).max(0) as u64);
    out.counter(
        "sirocco_store_log_commits_total",
        "Log commits made durable (group commits).",
        c.commits.load(Relaxed),
    );
    out.counter("sirocco_store_log_records_total", "Log records in them.", c.records.load(Relaxed));
    out.counter("sirocco_store_log_bytes_total", "Log bytes written.", c.log_bytes.load(Relaxed));
}
