//! `sirocco gen http`: HTTP/1.1 load on sirocco's own TCP (keep-alive or a connection per
//! request, closed or open loop), with a latency histogram, as text and JSON.

use super::load::{share, LoadArgs, Percentiles};
use crate::dataplane::{self, report, DataplaneArgs, Until};
use crate::tcp_limits::tcp_limits;
use clap::Args;
use gen::http::{HttpGen, HttpGenConfig, HttpGenStats};
use serde::Serialize;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

/// Longest the first connection may take to open before the run is given up.
const PROBE_LIMIT: Duration = Duration::from_secs(10);

#[derive(Args)]
pub struct GenHttpArgs {
    #[command(flatten)]
    pub dp: DataplaneArgs,
    /// The server's address.
    #[arg(long, value_name = "ADDR")]
    pub dst: IpAddr,
    /// The server's port.
    #[arg(long, default_value_t = 80, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// A path to ask for (repeatable; asked in turn) [default: /].
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Vec<String>,
    /// A file with one path per line, added to --path.
    #[arg(long, value_name = "FILE")]
    pub paths_file: Option<PathBuf>,
    /// Host header [default: the destination address].
    #[arg(long)]
    pub host: Option<String>,
    /// Connections per engine.
    #[arg(long, default_value_t = 10)]
    pub conns: usize,
    /// One request per connection (Connection: close) instead of keep-alive.
    #[arg(long)]
    pub close: bool,
    /// Requests per second over all engines (open loop); 0: closed loop, each connection
    /// asks again as soon as it has its answer.
    #[arg(long, default_value_t = 0)]
    pub rate: u64,
    #[command(flatten)]
    pub load: LoadArgs,
}

fn paths(a: &GenHttpArgs) -> Result<Vec<String>, String> {
    let mut v = a.paths.clone();
    if let Some(f) = &a.paths_file {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        v.extend(text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from));
    }
    if v.is_empty() {
        v.push("/".into());
    }
    for p in &v {
        if !p.starts_with('/') || p.bytes().any(|b| b <= b' ' || b == 0x7f) || p.len() > 1024 {
            return Err(format!("bad path {p:?}: a path starts with / and has no spaces or control characters"));
        }
    }
    if v.len() > 100_000 {
        return Err("at most 100000 paths".into());
    }
    Ok(v)
}

/// Runs the generator and prints its report.
pub fn run(a: GenHttpArgs) -> Result<(), String> {
    let (duration, drain) = a.load.times()?;
    if !(1..=60_000).contains(&a.conns) {
        return Err("--conns must be 1..60000".into());
    }
    let paths = paths(&a)?;
    let opts = a.dp.options(true, 0)?;
    let local = super::load::own_address(&opts, a.dst, "gen http")?;
    let queues = opts.queues.unwrap_or(1).max(1);
    let opts = dataplane::Options { queues: Some(queues), ..opts };
    let host = a.host.clone().unwrap_or_else(|| match a.dst {
        IpAddr::V4(d) => d.to_string(),
        IpAddr::V6(d) => format!("[{d}]"), // RFC 3986 §3.2.2
    });
    let limits = tcp_limits();
    // The clock starts when the first connection is up (its SYN may wait for address
    // resolution, or a peer's TIME-WAIT); each engine counts down when it has asked and
    // drained, and a server that never answers ends the run after PROBE_LIMIT more.
    let running = Arc::new(AtomicUsize::new(queues as usize));
    let make = |q: u32| {
        let cfg = HttpGenConfig {
            local,
            dst: a.dst.into(),
            port: a.port,
            host: host.clone(),
            paths: paths.clone(),
            conns: a.conns,
            keep_alive: !a.close,
            rate: share(a.rate, queues, q),
            duration: duration.into(),
            drain: drain.into(),
        };
        let bufs = tcp::channel::Buffers::new(paths.len() + 16, 2048);
        let g = HttpGen::new(cfg).count_down_when_finished(running.clone());
        engine::ChannelService::client(g, tcp::Config::default(), limits, bufs)
    };
    // Port 0: every TCP port of the address (the connections' ephemeral ports).
    let until = Until::CountedDown(running.clone(), duration + drain + PROBE_LIMIT);
    let out = dataplane::run(&opts, &[(wire::Protocol::TCP, 0)], make, until, "gen http")?;
    if let Some(p) = &a.dp.counters {
        report::write_counters_json(&out, p)?;
    }
    let mut s = HttpGenStats::default();
    for svc in out.apps() {
        s.merge(&svc.server.stats);
    }
    let secs = duration.as_secs_f64();
    let latency = Percentiles::of(&s.latency);
    let mode = if a.close { "a connection per request" } else { "keep-alive" };
    let lp = if a.rate == 0 { "closed loop".to_string() } else { format!("open loop at {} req/s", a.rate) };
    println!(
        "gen http: {} engine(s), {} connection(s) each, {mode}, {lp}, {} path(s)\n  requests {} responses {} ({:.0} req/s): 2xx {} other {}; body {} bytes ({:.3} Gb/s incl. heads)\n  connections opened {} failed {} broken {}; bad responses {}; behind schedule {}\n  latency us: {}",
        out.engines.len(),
        a.conns,
        paths.len(),
        s.sent,
        s.completed,
        s.completed as f64 / secs,
        s.ok,
        s.not_ok,
        s.body_bytes,
        s.bytes as f64 * 8.0 / secs / 1e9,
        s.opened,
        s.connect_failed,
        s.broken,
        s.bad_responses,
        s.behind,
        latency.micros()
    );
    if let Some(path) = &a.load.json {
        let j = ReportJson {
            conns: a.conns,
            keep_alive: !a.close,
            rate: a.rate,
            secs,
            sent: s.sent,
            completed: s.completed,
            req_per_s: s.completed as f64 / secs,
            ok: s.ok,
            not_ok: s.not_ok,
            body_bytes: s.body_bytes,
            bytes: s.bytes,
            gbps: s.bytes as f64 * 8.0 / secs / 1e9,
            opened: s.opened,
            connect_failed: s.connect_failed,
            broken: s.broken,
            bad_responses: s.bad_responses,
            behind: s.behind,
            latency_ns: latency,
        };
        report::write_json(path, &j)?;
    }
    if s.completed == 0 {
        return Err("no response completed (is the server up and listening?)".into());
    }
    Ok(())
}

/// The report as JSON.
#[derive(Serialize)]
struct ReportJson {
    conns: usize,
    keep_alive: bool,
    rate: u64,
    secs: f64,
    sent: u64,
    completed: u64,
    req_per_s: f64,
    ok: u64,
    not_ok: u64,
    body_bytes: u64,
    bytes: u64,
    gbps: f64,
    opened: u64,
    connect_failed: u64,
    broken: u64,
    bad_responses: u64,
    behind: u64,
    latency_ns: Percentiles,
}
