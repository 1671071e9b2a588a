//! `sirocco web`: the static web server (Sandstorm) on a directory or the built-in demo site,
//! from the command line and/or a TOML config; SIGHUP reloads the tree.

use crate::dataplane::{self, Until};
use crate::signals;
use crate::DataplaneArgs;
use clap::Args;
use serde::Deserialize;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use web::{Settings, SharedSite, Site};
use wire::Protocol;

#[derive(Args)]
pub struct WebArgs {
    #[command(flatten)]
    pub dp: DataplaneArgs,
    /// Directory to serve [default: the built-in demo site].
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// TOML config: iface, addr, queues, cpus, port, root, cache_bytes, header_timeout,
    /// idle_timeout, max_requests, max_conns, mode, replica_frames; command-line options
    /// override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// TCP port [default: 80].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// Bytes of packetised responses each engine keeps. A tree that fits is packetised at
    /// start; a larger one on first request, least recently used evicted [default: 1 GiB].
    #[arg(long, value_name = "N")]
    pub cache_bytes: Option<u64>,
    /// Seconds a request head may take to arrive (slowloris) [default: 10].
    #[arg(long, value_name = "SECS")]
    pub header_timeout: Option<f64>,
    /// Seconds an idle keep-alive connection is kept, and a peer that takes no data waited
    /// for [default: 60].
    #[arg(long, value_name = "SECS")]
    pub idle_timeout: Option<f64>,
    /// Requests served on one connection before it is closed [default: 10000].
    #[arg(long, value_name = "N")]
    pub max_requests: Option<u32>,
    /// Connections per engine (all TCP states) [default: 65536].
    #[arg(long, value_name = "N")]
    pub max_conns: Option<usize>,
    /// How a prepared segment gets into a TX frame [default: precopy].
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// Pre-copy mode: frames each engine may pin for replicas (4 KB each); past them,
    /// segments are copied from their masters [default: 16384].
    #[arg(long, value_name = "N")]
    pub replica_frames: Option<usize>,
    /// Stop after this many seconds [default: run until SIGINT/SIGTERM].
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
}

/// How a prepared segment gets into a TX frame (the thesis's two modes).
#[derive(clap::ValueEnum, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Replicas kept in pinned frames, rewritten in place; one is reused only after the
    /// kernel completed its transmission.
    Precopy,
    /// The master copied into a fresh frame per send.
    Memcpy,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Config {
    iface: Option<String>,
    addr: Option<Ipv4Addr>,
    queues: Option<u32>,
    cpus: Option<Vec<usize>>,
    port: Option<u16>,
    root: Option<PathBuf>,
    cache_bytes: Option<u64>,
    header_timeout: Option<f64>,
    idle_timeout: Option<f64>,
    max_requests: Option<u32>,
    max_conns: Option<usize>,
    mode: Option<Mode>,
    replica_frames: Option<usize>,
}

fn read_config(path: &Path) -> Result<Config, String> {
    let mut c: Config = crate::config_file::read(path)?;
    if let Some(r) = &c.root {
        if r.is_relative() {
            c.root = Some(path.parent().unwrap_or(Path::new(".")).join(r));
        }
    }
    Ok(c)
}

fn load(root: Option<&Path>, cache: u64) -> Result<Site, String> {
    match root {
        Some(r) => Site::load(r, cache),
        None => Ok(Site::demo(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()))),
    }
}

fn millis(secs: f64, what: &str) -> Result<u64, String> {
    Ok(crate::secs(secs, what)?.as_millis() as u64)
}

/// Runs the web server.
pub fn run(a: WebArgs) -> Result<(), String> {
    let until = match a.duration {
        Some(d) => Until::Elapsed(crate::secs(d, "--duration")?),
        None => Until::Signal,
    };
    let config = a.config.as_deref().map(read_config).transpose()?.unwrap_or_default();
    let mut dp = a.dp.clone();
    dp.iface = dp.iface.or_else(|| config.iface.clone());
    dp.addr = dp.addr.or(config.addr);
    dp.queues = dp.queues.or(config.queues);
    dp.cpus = dp.cpus.or_else(|| config.cpus.clone());
    let port = a.port.or(config.port).unwrap_or(80);
    if port == 0 {
        return Err("port must be 1..65535".into());
    }
    let root = a.root.clone().or(config.root.clone());
    let cache = a.cache_bytes.or(config.cache_bytes).unwrap_or(1 << 30);
    let settings = Settings {
        header_timeout_ms: millis(a.header_timeout.or(config.header_timeout).unwrap_or(10.0), "--header-timeout")?,
        idle_timeout_ms: millis(a.idle_timeout.or(config.idle_timeout).unwrap_or(60.0), "--idle-timeout")?,
        max_requests: a.max_requests.or(config.max_requests).unwrap_or(10_000).max(1),
    };
    let max_conns = a.max_conns.or(config.max_conns).unwrap_or(65_536);
    if max_conns == 0 {
        return Err("--max-conns must be at least 1".into());
    }
    let mode = a.mode.or(config.mode).unwrap_or(Mode::Precopy);
    let replica_frames = a.replica_frames.or(config.replica_frames).unwrap_or(16_384);
    if mode == Mode::Precopy && !(1..=1 << 20).contains(&replica_frames) {
        return Err("--replica-frames must be 1..1048576".into());
    }
    let precopy = (mode == Mode::Precopy).then_some(replica_frames);
    let mut opts = dp.options(false, 0)?;
    opts.extra_frames = precopy.unwrap_or(0);
    let t = Instant::now();
    let site = load(root.as_deref(), cache)?;
    let what = match &root {
        Some(r) => format!("root {}", r.display()),
        None => "the built-in demo site".to_string(),
    };
    eprintln!(
        "sirocco: {} files, {} bytes from {what}{} in {:.2} s{}",
        site.len(),
        site.bytes,
        if site.bytes > cache { " (larger than --cache-bytes: packetised on first request)" } else { "" },
        t.elapsed().as_secs_f64(),
        if site.skipped > 0 {
            format!("; {} entries skipped (outside the root, special or unreadable)", site.skipped)
        } else {
            String::new()
        }
    );
    let shared = SharedSite::new(site);

    signals::install_reload();
    let done = Arc::new(AtomicBool::new(false));
    let reloader = {
        let (shared, done, root) = (shared.clone(), done.clone(), root.clone());
        std::thread::Builder::new()
            .name("sirocco-reload".into())
            .spawn(move || reload_loop(&shared, &done, root.as_deref(), cache))
            .map_err(|e| format!("reload thread: {e}"))?
    };
    let cfg = tcp::Config::default();
    let limits = tcp::Limits { max_conns, ..crate::tcp_limits() };
    let out = dataplane::run(
        &opts,
        &[(Protocol::TCP, port)],
        |_| web::WebService::new(shared.clone(), port, cfg, limits, settings, cache, precopy),
        until,
        &format!("web on port {port}"),
    );
    done.store(true, Ordering::SeqCst);
    let _ = reloader.join();
    let out = out?;
    dataplane::print_counters(&out);
    for (q, (_, svc)) in out.engines.iter().enumerate() {
        let (s, st, tcp) = (&svc.tcp.app.stats, &svc.tcp.app.store.stats, svc.tcp.ep.stats());
        let statuses: Vec<String> = s.status.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        println!(
            "engine {q} web: accepted {} requests {} [{}]; responses prepared {} formatted {}; segments ready {} built {} ({} bytes); \
             packetised {} objects ({} segments), evicted {}, heads refreshed {}, read on demand {}; \
             timeouts header {} idle {} send {}; reloads {}; tcp retransmits {} resets out {}",
            s.accepted,
            s.requests,
            statuses.join(" "),
            s.prepared_responses,
            s.formatted_responses,
            s.ready_segments.get(),
            s.built_segments.get(),
            s.built_bytes.get(),
            st.packetised,
            st.segments_built,
            st.evicted,
            st.heads_refreshed,
            st.read_on_demand,
            s.header_timeouts,
            s.idle_timeouts,
            s.send_timeouts,
            svc.reloads,
            tcp.retransmits,
            tcp.resets_out
        );
        match svc.tcp.app.replicas() {
            Some(r) => println!(
                "engine {q} precopy: replica sends {} made {} refreshed {} fallbacks {} released {}; pinned {} of {} frames",
                r.stats.sends,
                r.stats.made,
                r.stats.refreshed,
                r.stats.fallbacks,
                r.stats.released,
                r.pinned(),
                r.budget()
            ),
            None => println!("engine {q} memcpy: every ready segment copied from its master"),
        }
    }
    if let Some(p) = &a.dp.counters {
        dataplane::write_counters_json(&out, p)?;
    }
    Ok(())
}

/// Waits for SIGHUP; loads the tree again beside the one being served and publishes it, or
/// keeps the old one and says why.
fn reload_loop(shared: &SharedSite, done: &AtomicBool, root: Option<&Path>, cache: u64) {
    while !done.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
        if !signals::take_reload() {
            continue;
        }
        let t = Instant::now();
        match load(root, cache) {
            Ok(site) => {
                let (n, b) = (site.len(), site.bytes);
                shared.replace(site);
                eprintln!("sirocco: reloaded {n} files, {b} bytes in {:.2} s", t.elapsed().as_secs_f64());
            }
            Err(e) => eprintln!("sirocco: reload failed, still serving the previous tree: {e}"),
        }
    }
}
