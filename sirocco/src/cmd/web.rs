//! `sirocco web`: the static web server (Sandstorm) on a directory or the built-in demo site;
//! SIGHUP reloads the tree.

use crate::serve::{secs, Defaults, ServeArgs};
use crate::tcp_limits::tcp_limits;
use clap::Args;
use engine::published::Published;
use io::storage::StorageConfig;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use web::streamer::Streamer;
use web::{Settings, Site};
use wire::Protocol;

/// The web server's options; each has a config-file key of the same name (`_` for `-`).
#[derive(Args, Deserialize, Default)]
pub struct WebOptions {
    /// Directory to serve (in the config file: relative to it) [default: the built-in demo
    /// site].
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
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
    /// Stream mode: MiB of read buffers per engine; connections wait for a buffer when all
    /// are in use [default: 64].
    #[arg(long, value_name = "MIB")]
    pub stream_memory: Option<u64>,
    /// Stream mode: KiB per read buffer (a read is at most one buffer; 4 to 1024, a multiple
    /// of 4). Smaller buffers let more connections hold their next read in the same memory
    /// [default: 256].
    #[arg(long, value_name = "KIB")]
    pub stream_buffer: Option<u32>,
    /// Stream mode: copy each segment's payload from the read buffer into a TX frame instead
    /// of sending the buffer where the disk read put it (for comparison; also what happens
    /// when the kernel has no multi-buffer AF_XDP).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub stream_copy: Option<bool>,
    /// HTTPS (TLS 1.3) on --tls-port too: the certificate chain, PEM, leaf first (in the
    /// config file: relative to it).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key, PEM (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Port for HTTPS [default: 443].
    #[arg(long, value_name = "PORT")]
    pub tls_port: Option<u16>,
    /// Full TCP segments one TLS record fills, 1 to 11. 1 seals each record in place in its
    /// TX frame, but the client then handles a record per 1.4 KB; 11 makes ~16 KB records
    /// (what nginx sends), sealed once and copied into their segments [default: 11].
    #[arg(long, value_name = "N")]
    pub tls_record_segments: Option<usize>,
}

#[derive(Args)]
pub struct WebArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    #[command(flatten)]
    pub web: WebOptions,
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
    /// Nothing packetised or cached: bodies read from disk (O_DIRECT, io_uring) as each
    /// connection's window opens, held until acknowledged (Atlas).
    Stream,
}

impl WebOptions {
    /// The command line's options over the config file's.
    fn or(self, file: WebOptions, config: Option<&Path>) -> WebOptions {
        WebOptions {
            root: self.root.or(file.root.map(|r| crate::serve::relative_to(config, &r))),
            cache_bytes: self.cache_bytes.or(file.cache_bytes),
            header_timeout: self.header_timeout.or(file.header_timeout),
            idle_timeout: self.idle_timeout.or(file.idle_timeout),
            max_requests: self.max_requests.or(file.max_requests),
            max_conns: self.max_conns.or(file.max_conns),
            mode: self.mode.or(file.mode),
            replica_frames: self.replica_frames.or(file.replica_frames),
            stream_memory: self.stream_memory.or(file.stream_memory),
            stream_buffer: self.stream_buffer.or(file.stream_buffer),
            stream_copy: self.stream_copy.or(file.stream_copy),
            tls_cert: self.tls_cert.or(file.tls_cert.map(|r| crate::serve::relative_to(config, &r))),
            tls_key: self.tls_key.or(file.tls_key.map(|r| crate::serve::relative_to(config, &r))),
            tls_port: self.tls_port.or(file.tls_port),
            tls_record_segments: self.tls_record_segments.or(file.tls_record_segments),
        }
    }
}

fn load(root: Option<&Path>, cache: u64) -> Result<Site, String> {
    match root {
        Some(r) => Site::load(r, cache),
        None => Ok(Site::demo(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()))),
    }
}

fn span(s: f64, what: &str) -> Result<engine::Duration, String> {
    Ok(secs(s, what)?.into())
}

/// Runs the web server.
pub fn run(a: WebArgs) -> Result<(), String> {
    let mut s = a.serve.setup::<WebOptions>(Defaults { port: 80, idle_spins: 0 })?;
    let o = a.web.or(std::mem::take(&mut s.own), s.config.as_deref());
    let cache = o.cache_bytes.unwrap_or(1 << 30);
    let settings = Settings {
        header_timeout: span(o.header_timeout.unwrap_or(10.0), "--header-timeout")?,
        idle_timeout: span(o.idle_timeout.unwrap_or(60.0), "--idle-timeout")?,
        max_requests: o.max_requests.unwrap_or(10_000).max(1),
    };
    let max_conns = o.max_conns.unwrap_or(65_536);
    if max_conns == 0 {
        return Err("--max-conns must be at least 1".into());
    }
    let mode = o.mode.unwrap_or(Mode::Precopy);
    let replica_frames = o.replica_frames.unwrap_or(16_384);
    if mode == Mode::Precopy && !(1..=1 << 20).contains(&replica_frames) {
        return Err("--replica-frames must be 1..1048576".into());
    }
    let precopy = (mode == Mode::Precopy).then_some(replica_frames);
    let stream = (mode == Mode::Stream)
        .then(|| stream_config(o.stream_memory.unwrap_or(64), o.stream_buffer.unwrap_or(256)))
        .transpose()?;
    // Stream mode reads every body from disk: nothing is packetised, nothing preloaded.
    let cache = if stream.is_some() { 0 } else { cache };
    if stream.is_some() && o.root.is_none() {
        return Err("--mode stream serves files from disk: give --root DIR".into());
    }
    s.opts.extra_frames = precopy.unwrap_or(0);
    // Stream mode's read buffers live in the UMEM, so segments carry them as they are.
    if !o.stream_copy.unwrap_or(false) {
        s.opts.lend = stream.map_or(0, |c| c.buffers as usize * c.buf_size);
    }
    let tls = match (&o.tls_cert, &o.tls_key) {
        (Some(cert), Some(key)) => {
            let port = o.tls_port.unwrap_or(443);
            if port == s.port {
                return Err(format!("--tls-port {port} is also the HTTP port: give them different ports"));
            }
            let record_segments = o.tls_record_segments.unwrap_or(11);
            if !(1..=11).contains(&record_segments) {
                return Err("--tls-record-segments must be 1..11 (a record holds at most 16 KiB)".into());
            }
            let config = tls::TlsConfig::from_pem_files(cert, key, &[b"http/1.1"]).map_err(|e| e.to_string())?;
            Some(tls::Listener { config, port, record_segments })
        }
        (None, None) if o.tls_port.is_some() => return Err("--tls-port needs --tls-cert and --tls-key".into()),
        (None, None) => None,
        _ => return Err("--tls-cert and --tls-key go together".into()),
    };
    let root = o.root;
    let t = Instant::now();
    let site = load(root.as_deref(), cache)?;
    let what = match &root {
        Some(r) => format!("root {}", r.display()),
        None => "the built-in demo site".to_string(),
    };
    tracing::info!(
        "{} files, {} bytes from {what}{} in {:.2} s{}",
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
    let checked =
        format!("web on port {}, {} files from {what}{}", s.port, site.len(), if tls.is_some() { ", TLS" } else { "" });
    if s.check_only(&checked)? {
        return Ok(());
    }
    let published = Published::new(site);
    let reload = {
        let published = published.clone();
        move || {
            let site = load(root.as_deref(), cache)?;
            let loaded = format!("{} files, {} bytes", site.len(), site.bytes);
            Ok((loaded, published.publish(site)))
        }
    };
    let (port, cfg) = (s.port, s.opts.tcp);
    let limits = tcp::Limits { max_conns, ..cfg.limits(tcp_limits()) };
    let mut first = match stream {
        Some(cfg) => Some(first_streamer(cfg, published.follow().get())?),
        None => None,
    };
    let make = |q| {
        let svc = web::WebService::new(published.follow(), port, cfg, limits, settings, cache, precopy, tls.clone());
        match stream {
            Some(sc) => svc.streaming(first.take().map_or_else(|| Streamer::new(sc), Ok).unwrap_or_else(|e| {
                // Only after the first engine's port was set up; nothing to tidy but the
                // process (the XDP link goes with it).
                tracing::error!("engine {q}: {e}");
                std::process::exit(1)
            })),
            None => svc,
        }
    };
    let mut grants = vec![(Protocol::TCP, port)];
    let mut what = format!("web on port {port}");
    if let Some(t) = &tls {
        grants.push((Protocol::TCP, t.port));
        what = format!("{what}, HTTPS on port {}", t.port);
    }
    let out = s.run(&what, &grants, make, Some(crate::serve::Reload::on_hup("tree", Box::new(reload))))?;
    for (q, svc) in out.apps().enumerate() {
        let (st, store, tcp) = (&svc.app().stats, &svc.app().store.stats, svc.tcp.ep.stats());
        let statuses: Vec<String> = st.status.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        println!(
            "engine {q} web: accepted {} requests {} [{}]; responses prepared {} formatted {}; segments ready {} built {} ({} bytes); \
             packetised {} objects ({} segments), evicted {}, heads refreshed {}, read on demand {}; \
             timeouts header {} idle {} send {}; reloads {}; tcp retransmits {} (timeouts {}, fast recoveries {}, tail probes {}) resets out {}",
            st.accepted,
            st.requests,
            statuses.join(" "),
            st.prepared_responses,
            st.formatted_responses,
            st.ready_segments.get(),
            st.built_segments.get(),
            st.built_bytes.get(),
            store.packetised,
            store.segments_built,
            store.evicted,
            store.heads_refreshed,
            store.read_on_demand,
            st.header_timeouts,
            st.idle_timeouts,
            st.send_timeouts,
            svc.reloads,
            tcp.retransmits,
            tcp.rtos,
            tcp.fast_recoveries,
            tcp.tail_probes,
            tcp.resets_out
        );
        if tls.is_some() {
            let t = svc.tls_stats();
            println!(
                "engine {q} tls: accepted {} handshakes {} failed {} record errors {} peer alerts {} close_notify in {} key updates {}; records sealed at send {} in place {}{}",
                t.accepted,
                t.handshakes,
                t.handshake_failures,
                t.record_errors,
                t.peer_alerts,
                t.close_notify_in,
                t.key_updates,
                t.records_sealed.get(),
                t.records_in_place,
                if t.last_failure.is_empty() { String::new() } else { format!("; last failure: {}", t.last_failure) }
            );
        }
        match svc.app().replicas() {
            Some(r) => println!(
                "engine {q} precopy: replica sends {} made {} refreshed {} reclaimed {} fallbacks {} released {}; pinned {} of {} frames",
                r.stats.sends,
                r.stats.made,
                r.stats.refreshed,
                r.stats.reclaimed,
                r.stats.fallbacks,
                r.stats.released,
                r.pinned(),
                r.budget()
            ),
            None if svc.app().stream.is_some() => {
                let st = svc.app().stream.as_ref().expect("checked");
                let (s, p) = (&st.stats, &st.port.stats);
                println!(
                    "engine {q} stream: reads {} ({} bytes wanted, {} read in {} transfers, {} continued), read again for retransmissions {} ({} bytes), waits for a buffer {}, read errors {}, files opened {}, peak buffers in use {} of {} ({} KiB){}",
                    s.reads, s.read_bytes, p.bytes_read, p.parts, p.continued, s.rereads, s.reread_bytes, s.buffer_waits, s.read_errors, s.opens,
                    st.port.pool_ref().peak_in_use(), st.port.pool_ref().count(),
                    u64::from(st.port.pool_ref().peak_in_use()) * st.port.pool_ref().buf_size() as u64 / 1024,
                    if st.lent() { ", in the UMEM (sent without a copy)" } else { ", copied into frames" }
                )
            }
            None => println!("engine {q} memcpy: every ready segment copied from its master"),
        }
    }
    Ok(())
}

/// The storage port of a stream-mode engine: `mib` MiB of `kib` KiB buffers.
fn stream_config(mib: u64, kib: u32) -> Result<StorageConfig, String> {
    if !(1..=65_536).contains(&mib) {
        return Err("--stream-memory must be 1..65536 (MiB)".into());
    }
    if !(4..=1024).contains(&kib) || !kib.is_multiple_of(4) {
        return Err("--stream-buffer must be 4..1024 KiB, a multiple of 4".into());
    }
    let buf_size = kib as usize * 1024;
    let buffers = (mib * (1 << 20) / buf_size as u64).max(1);
    // io_uring registers at most 2^14 buffers (IORING_MAX_REG_BUFFERS).
    if buffers > 1 << 14 {
        return Err(format!(
            "--stream-memory {mib} MiB in {kib} KiB buffers is {buffers} buffers; io_uring registers at most 16384: use larger buffers or less memory"
        ));
    }
    Ok(StorageConfig { buffers: buffers as u32, buf_size, ..StorageConfig::default() })
}

/// The first engine's streamer, made before anything runs so that what is missing (io_uring,
/// O_DIRECT under the root) is one line at start; it reports what the kernel offers.
fn first_streamer(cfg: StorageConfig, site: &Site) -> Result<Streamer, String> {
    let mut st = Streamer::new(cfg).map_err(|e| e.to_string())?;
    tracing::info!(
        "stream mode: {}; {} buffers of {} KiB per engine on {}",
        st.port.features(),
        cfg.buffers,
        cfg.buf_size >> 10,
        st.port.pool_ref().pages()
    );
    if let Some(path) = site.files.iter().find_map(|f| f.source.as_deref()) {
        let f = st.open(path).map_err(|e| e.to_string())?;
        st.release(f);
    }
    Ok(st)
}
