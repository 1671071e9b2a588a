//! `sirocco store`: a durable Redis-protocol store on the level-2 channel (Arrakis's Redis),
//! one engine per queue, each with its own log on its own storage queue, every engine
//! serving every key.

use crate::serve::options::own_options;
use crate::serve::{Defaults, ServeArgs};
use crate::tcp_limits::{session_limits, ConnLimit};
use clap::Args;
use std::path::{Path, PathBuf};
use store::log::dir;
use wire::Protocol;

#[derive(Args)]
pub struct StoreArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    #[command(flatten)]
    pub store: StoreOptions,
}

own_options! {
    /// The store's options; each has a config-file key of the same name (`_` for `-`).
    pub struct StoreOptions {
        /// Directory of the log and snapshot (created if missing; on a file system with
        /// O_DIRECT: ext4, xfs). Required.
        #[arg(long, value_name = "DIR")]
        pub dir: Option<PathBuf>,
        /// Size of each log segment, in megabytes, 1 to 4096 (segments are zero-filled before
        /// use) [default: 64].
        #[arg(long, value_name = "MB")]
        pub segment_mb: Option<u64>,
        /// Compact the log in the background into a snapshot once it holds at least this many
        /// megabytes (Redis's auto-aof-rewrite-min-size), 1 to 1048576 [default: 64]...
        #[arg(long, value_name = "MB")]
        pub compact_mb: Option<u64>,
        /// ...and has grown by this percentage of the last snapshot's size (Redis's
        /// auto-aof-rewrite-percentage; 0: the size alone decides), at most 100000 [default: 100].
        #[arg(long, value_name = "PERCENT")]
        pub compact_percent: Option<u64>,
        /// Logs each engine writes, each with one commit in flight: more than one helps only
        /// a device that flushes concurrent writes in parallel [default: 1].
        #[arg(long, value_name = "N")]
        pub log_lanes: Option<usize>,
        /// Most connections open at once, all engines together (more are reset) [default: 10000].
        #[arg(long, value_name = "N")]
        pub max_conns: Option<usize>,
        /// Size --max-conns from this many MiB instead (all engines together): as many
        /// connections as fit at what an idle one holds (the start line says how many and
        /// at what size). Not with --max-conns
        #[arg(long, value_name = "MIB", conflicts_with = "max_conns")]
        pub conn_memory: Option<u64>,
        /// The default user's password, as Redis's requirepass: clients must AUTH before any
        /// other command. On the command line it shows in `ps`; the config file keeps it out.
        #[arg(long, value_name = "PASSWORD")]
        pub requirepass: Option<String>,
        /// Be a replica of the Redis primary at HOST PORT (Redis's replicaof): load its
        /// snapshot, follow its stream, refuse writes; every change durable on this store's
        /// own log. In the config file: `replicaof = ["HOST", "PORT"]`.
        #[arg(long, num_args = 2, value_names = ["HOST", "PORT"])]
        pub replicaof: Option<Vec<String>>,
        /// The password the primary asks of its replicas (Redis's masterauth).
        #[arg(long, value_name = "PASSWORD")]
        pub masterauth: Option<String>,
        /// Databases, as Redis's `databases`: SELECT 0 to N-1, 1 to 256 [default: 16].
        #[arg(long, value_name = "N")]
        pub databases: Option<usize>,
    }
}

/// The store's options with their defaults, checked.
struct Checked {
    dir: PathBuf,
    seg_mb: u64,
    compact_mb: u64,
    compact_percent: u64,
    lanes: usize,
    max_conns: usize,
    requirepass: Option<Vec<u8>>,
    replicaof: Option<(String, u16)>,
    masterauth: Option<Vec<u8>>,
    databases: usize,
}

impl StoreOptions {
    /// The command line's options over the config file's (its connection limit, in either
    /// form, over the file's).
    fn over(self, file: StoreOptions) -> StoreOptions {
        let limit = ConnLimit { max_conns: self.max_conns, conn_memory: self.conn_memory }
            .over(ConnLimit { max_conns: file.max_conns, conn_memory: file.conn_memory });
        StoreOptions { max_conns: limit.max_conns, conn_memory: limit.conn_memory, ..self.or(file) }
    }

    fn checked(self) -> Result<Checked, String> {
        let dir = self.dir.ok_or("--dir (or `dir` in the config) is required: where the log lives")?;
        let seg_mb = self.segment_mb.unwrap_or(64);
        if !(1..=4096).contains(&seg_mb) {
            return Err("--segment-mb must be between 1 and 4096".into());
        }
        let compact_mb = self.compact_mb.unwrap_or(64);
        let compact_percent = self.compact_percent.unwrap_or(100);
        if compact_percent > 100_000 {
            return Err("--compact-percent must be at most 100000".into());
        }
        if !(1..=1 << 20).contains(&compact_mb) {
            return Err("--compact-mb must be between 1 and 1048576".into());
        }
        let lanes = self.log_lanes.unwrap_or(1);
        if !(1..=store::log::MAX_LANES).contains(&lanes) {
            return Err(format!("--log-lanes must be between 1 and {}", store::log::MAX_LANES));
        }
        let limit = ConnLimit { max_conns: self.max_conns, conn_memory: self.conn_memory };
        let max_conns = limit.resolve(store::service::bytes_per_connection(), 10_000, "in all")?;
        let requirepass = self.requirepass.map(String::into_bytes);
        if requirepass.as_ref().is_some_and(|p| p.is_empty() || p.len() > 512) {
            return Err("--requirepass must be 1 to 512 bytes".into());
        }
        let replicaof = match self.replicaof.as_deref() {
            None => None,
            Some([host, port]) => {
                let port = port.parse::<u16>().ok().filter(|&p| p > 0);
                let port = port.ok_or(format!(
                    "--replicaof {host} {}: the port must be 1 to 65535",
                    self.replicaof.as_ref().map_or("", |r| &r[1])
                ))?;
                if host.is_empty() {
                    return Err("--replicaof needs a host".into());
                }
                Some((host.clone(), port))
            }
            Some(_) => return Err("--replicaof takes two values: HOST PORT".into()),
        };
        let masterauth = self.masterauth.map(String::into_bytes);
        let databases = self.databases.unwrap_or(16);
        if !(1..=256).contains(&databases) {
            return Err("--databases must be between 1 and 256".into());
        }
        Ok(Checked {
            dir,
            seg_mb,
            compact_mb,
            compact_percent,
            lanes,
            max_conns,
            requirepass,
            replicaof,
            masterauth,
            databases,
        })
    }
}

/// Runs the store.
pub fn run(a: StoreArgs) -> Result<(), String> {
    let s = a.serve.setup::<StoreOptions>(Defaults { port: 6379, idle_spins: 0 })?;
    let Checked {
        dir: dir_path,
        seg_mb,
        compact_mb,
        compact_percent,
        lanes,
        max_conns,
        requirepass,
        replicaof,
        masterauth,
        databases,
    } = a.store.over(s.own.clone()).checked()?;
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
    let settings = store::open::Settings {
        dir: dir_path.clone(),
        segment_bytes: seg_mb << 20,
        compact_bytes: compact_mb << 20,
        compact_percent,
        lanes,
        max_conns,
        port: s.port,
        requirepass,
        replicaof: replicaof.clone(),
        databases,
    };
    // A replica's link logs through a writer of its own, as one more engine.
    let logs = engines + usize::from(replicaof.is_some());
    let store::open::Opened { shared, mut writers, recovered: rec } = store::open::open(&settings, logs, cpus)?;
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
    if let Some(up) = shared.upstream.clone() {
        let Some(log) = writers.last_mut().and_then(Option::take) else {
            return Err("the replica's link has no log".into());
        };
        let (host, p) = replicaof.clone().unwrap_or_default();
        println!("store: a replica of {host}:{p} (writes are refused; the primary's changes are logged here)");
        let f = store::repl::follow::Follower::new(shared.clone(), up, log, s.port, masterauth, engines);
        std::thread::Builder::new()
            .name("store-replica".into())
            .spawn(move || f.run())
            .map_err(|e| format!("no thread for the replica's link: {e}"))?;
    }
    let (port, tcp_cfg) = (s.port, s.opts.tcp.bulk());
    let per_engine = max_conns.div_ceil(engines);
    let make = |q: u32| {
        let Some(log) = writers.get_mut(q as usize).and_then(Option::take) else {
            tracing::error!("engine {q} has no log (expected {engines} engines)");
            std::process::exit(1)
        };
        store::service::service(
            shared.clone(),
            q as usize,
            log,
            port,
            per_engine,
            tcp_cfg,
            session_limits(&tcp_cfg, per_engine),
        )
    };
    let what = format!("Redis protocol on port {port}, log in {}", dir_path.display());
    let out = s.run(&what, &[(Protocol::TCP, port)], make, None)?;
    for (q, svc) in out.apps().enumerate() {
        println!("{}", store::service::exit_line(q, svc));
    }
    println!("{}", shared.summary());
    Ok(())
}
