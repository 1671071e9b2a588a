//! `sirocco gen kv`: memcached (or Redis) load in the manner of mutilate (ETC and USR, or 1 KB
//! sets or gets), open loop, on sirocco's own TCP, with latency from each request's due time, as text and JSON.

use super::kv_report::{self, Run};
use super::load::{share, LoadArgs};
use crate::dataplane::{self, report, DataplaneArgs, Until};
use crate::tcp_limits::tcp_limits;
use clap::Args;
use gen::kv::{KeySpace, KvGen, KvGenConfig, KvGenStats, Proto, Workload};
use std::net::IpAddr;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

/// Longest the key space may take to store before the run is given up.
const PRELOAD_LIMIT: Duration = Duration::from_secs(60);

#[derive(clap::ValueEnum, Clone, Copy)]
pub enum WorkloadArg {
    /// Keys 20-70 B, values 1 B-1 KB, 75% gets (Facebook's ETC, as in IX).
    Etc,
    /// Keys under 20 B, 2-byte values, 99% gets (Facebook's USR).
    Usr,
    /// Only sets of 1 KB values on 16-byte keys.
    Set1k,
    /// Only gets of 1 KB values on 16-byte keys.
    Get1k,
    /// Redis only: transactions of five sets of 1 KB values (MULTI, 5 SETs, EXEC).
    Multi5,
}

#[derive(clap::ValueEnum, Clone, Copy)]
pub enum ProtoArg {
    /// memcached's text protocol.
    Memcache,
    /// Redis's RESP2 (GET and SET).
    Redis,
}

#[derive(Args)]
pub struct GenKvArgs {
    #[command(flatten)]
    pub dp: DataplaneArgs,
    /// The server's address.
    #[arg(long, value_name = "ADDR")]
    pub dst: IpAddr,
    /// The server's port.
    #[arg(long, default_value_t = 11211, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// The workload.
    #[arg(long, value_enum, default_value_t = WorkloadArg::Usr)]
    pub workload: WorkloadArg,
    /// The protocol.
    #[arg(long, value_enum, default_value_t = ProtoArg::Memcache)]
    pub protocol: ProtoArg,
    /// Keys in the key space (stored before the run, drawn uniformly during it).
    #[arg(long, default_value_t = 100_000)]
    pub keys: usize,
    /// Requests per second over all engines (open loop, exponential interarrival times).
    #[arg(long)]
    pub rate: u64,
    /// Connections per engine.
    #[arg(long, default_value_t = 32)]
    pub conns: usize,
    /// Requests outstanding per connection at most (IX's clients pipelined up to 4).
    #[arg(long, default_value_t = 4)]
    pub depth: usize,
    /// Do not store the key space first (it is already there, from an earlier run with the
    /// same --keys, --workload and --seed).
    #[arg(long)]
    pub no_preload: bool,
    /// Seed of the key space and the request stream.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub load: LoadArgs,
}

/// Runs the generator and prints its report.
pub fn run(a: GenKvArgs) -> Result<(), String> {
    let (duration, drain) = a.load.times()?;
    if !(1..=60_000).contains(&a.conns) {
        return Err("--conns must be 1..60000".into());
    }
    if !(1..=1024).contains(&a.depth) {
        return Err("--depth must be 1..1024".into());
    }
    if !(1..=10_000_000).contains(&a.keys) {
        return Err("--keys must be 1..10000000".into());
    }
    if a.rate == 0 {
        return Err("--rate must be at least 1 request per second".into());
    }
    // An open-loop generator must be awake when requests fall due: it polls without
    // sleeping (yielding between empty polls) unless --idle-spins says otherwise.
    let opts = a.dp.options(true, u32::MAX)?;
    let local = super::load::own_address(&opts, a.dst, "gen kv")?;
    let queues = opts.queues.unwrap_or(1).max(1);
    let opts = dataplane::Options { queues: Some(queues), ..opts };
    let (workload, workload_name) = match a.workload {
        WorkloadArg::Etc => (Workload::Etc, "etc"),
        WorkloadArg::Usr => (Workload::Usr, "usr"),
        WorkloadArg::Set1k => (Workload::Set1k, "set1k"),
        WorkloadArg::Get1k => (Workload::Get1k, "get1k"),
        WorkloadArg::Multi5 => (Workload::Multi5, "multi5"),
    };
    let proto = match a.protocol {
        ProtoArg::Memcache => Proto::Memcache,
        ProtoArg::Redis => Proto::Resp,
    };
    if workload == Workload::Multi5 && proto != Proto::Resp {
        return Err("--workload multi5 is Redis's MULTI/EXEC: add --protocol redis".into());
    }
    let keys = Arc::new(KeySpace::new(workload, a.keys, a.seed));
    let limits = tcp_limits();
    let running = Arc::new(AtomicUsize::new(queues as usize));
    let make = |q: u32| {
        let per = a.keys.div_ceil(queues as usize);
        let from = (q as usize * per).min(a.keys);
        let cfg = KvGenConfig {
            local,
            dst: a.dst.into(),
            port: a.port,
            workload,
            proto,
            keys: keys.clone(),
            preload: if a.no_preload { 0..0 } else { from..(from + per).min(a.keys) },
            conns: a.conns,
            depth: a.depth,
            rate: share(a.rate, queues, q),
            duration: duration.into(),
            drain: drain.into(),
            seed: a.seed.wrapping_mul(31).wrapping_add(u64::from(q) + 1),
        };
        // Requests are copied into 2 KB send buffers until acknowledged: enough for every
        // connection's pipeline of the largest sets.
        let bufs = tcp::channel::Buffers::new(a.conns * (a.depth.max(64) + 4), 2048);
        let g = KvGen::new(cfg).count_down_when_finished(running.clone());
        engine::ChannelService::client(g, tcp::Config::default(), limits, bufs)
    };
    let until = Until::CountedDown(running.clone(), duration + drain + PRELOAD_LIMIT);
    let out = dataplane::run(&opts, &[(wire::Protocol::TCP, 0)], make, until, "gen kv")?;
    if let Some(p) = &a.dp.counters {
        report::write_counters_json(&out, p)?;
    }
    let mut s = KvGenStats::default();
    for svc in out.apps() {
        s.merge(&svc.server.stats);
    }
    let (mk, mv) = keys.mean_sizes();
    let run = Run {
        workload: workload_name,
        keys: a.keys,
        mean_sizes: (mk, mv),
        conns: a.conns,
        depth: a.depth,
        rate: a.rate,
        json: a.load.json.as_deref(),
    };
    kv_report::report(&run, &s, out.engines.len(), duration.as_secs_f64())?;
    if s.completed == 0 {
        return Err("no answer came (is the server up and listening?)".into());
    }
    Ok(())
}
