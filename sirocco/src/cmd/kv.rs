//! `sirocco kv`: a memcached-compatible cache on the level-2 channel, one engine per queue,
//! every engine serving every key from one shared cache.

use crate::serve::options::{own_options, Size};
use crate::serve::{Defaults, ServeArgs};
use crate::tcp_limits::{session_limits, ConnLimit};
use clap::Args;
use kv::cache::{Cache, CacheConfig};
use kv::server::{unix_now, Shared};
use kv::stats::Board;
use std::sync::Arc;
use wire::Protocol;

#[derive(Args)]
pub struct KvArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    #[command(flatten)]
    pub kv: KvOptions,
}

own_options! {
    /// The cache's options; each has a config-file key of the same name (`_` for `-`).
    pub struct KvOptions {
        /// Item memory in megabytes (slab pages; the process also holds packet and send
        /// buffers, see docs/kv.md), 1 to 1048576 [default: 64].
        #[arg(long, value_name = "MB")]
        pub memory: Option<usize>,
        /// Largest item (key, value and memcached's item header), in bytes, or with a k or m
        /// suffix; 1k to 128m [default: 1m].
        #[arg(long, value_name = "BYTES")]
        pub max_item_size: Option<Size>,
        /// Most connections open at once, all engines together (more are reset) [default: 4096].
        #[arg(long, value_name = "N")]
        pub max_conns: Option<usize>,
        /// Size --max-conns from this many MiB instead (all engines together): as many
        /// connections as fit at what an idle one holds (the start line says how many and
        /// at what size). Not with --max-conns
        #[arg(long, value_name = "MIB", conflicts_with = "max_conns")]
        pub conn_memory: Option<u64>,
    }
}

impl KvOptions {
    /// The command line's options over the config file's (its connection limit, in either
    /// form, over the file's).
    fn over(self, file: KvOptions) -> KvOptions {
        let limit = ConnLimit { max_conns: self.max_conns, conn_memory: self.conn_memory }
            .over(ConnLimit { max_conns: file.max_conns, conn_memory: file.conn_memory });
        KvOptions { max_conns: limit.max_conns, conn_memory: limit.conn_memory, ..self.or(file) }
    }

    /// Megabytes of items, bytes per item at most, connections at most; checked.
    fn checked(&self) -> Result<(usize, usize, usize), String> {
        let memory_mb = self.memory.unwrap_or(64);
        if memory_mb == 0 || memory_mb > (1 << 20) {
            return Err("--memory must be between 1 and 1048576 MB".into());
        }
        let max_item = self.max_item_size.map_or(1 << 20, |s| s.0);
        if !(1024..=(128 << 20)).contains(&max_item) {
            return Err("--max-item-size must be between 1k and 128m".into());
        }
        let limit = ConnLimit { max_conns: self.max_conns, conn_memory: self.conn_memory };
        let max_conns = limit.resolve(kv::service::bytes_per_connection(), 4096, "in all")?;
        Ok((memory_mb, max_item, max_conns))
    }
}

/// Runs the KV server.
pub fn run(a: KvArgs) -> Result<(), String> {
    let s = a.serve.setup::<KvOptions>(Defaults { port: 11211, idle_spins: 0 })?;
    let (memory_mb, max_item, max_conns) = a.kv.over(s.own.clone()).checked()?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let queues = s.opts.queues.or_else(|| io::iface::Interface::lookup(&s.opts.iface).ok().map(|i| i.rx_queues));
    let engines = queues.map_or(cpus, |q| q as usize).max(1);
    let cfg = CacheConfig::for_engines(memory_mb << 20, max_item, engines);
    if s.check_only(&format!("memcached protocol on port {}, {memory_mb} MB of items", s.port))? {
        return Ok(());
    }
    let cache = Cache::new(cfg, unix_now())?;
    let shared = Arc::new(Shared {
        cache,
        board: Board::new(engines.max(64)),
        port: s.port,
        max_conns,
        engines,
        started: unix_now(),
        detail: Default::default(),
    });
    let (port, tcp_cfg) = (s.port, s.opts.tcp.bulk());
    let per_engine = max_conns.div_ceil(engines);
    let make = |q: u32| {
        kv::service::service(
            shared.clone(),
            q as usize,
            port,
            per_engine,
            tcp_cfg,
            session_limits(&tcp_cfg, per_engine),
        )
    };
    let what = format!("memcached protocol on port {port}, {memory_mb} MB of items");
    let out = s.run(&what, &[(Protocol::TCP, port)], make, None)?;
    for line in kv::service::exit_lines(out.apps()) {
        println!("{line}");
    }
    Ok(())
}
