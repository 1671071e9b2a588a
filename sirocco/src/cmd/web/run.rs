//! Serving: the site loaded and published, an engine per queue, the exit summary.

use super::{Mode, WebArgs, WebOptions};
use crate::serve::{secs, Defaults};
use crate::tcp_limits::{tcp_limits, ConnLimit};
use engine::published::Published;
use std::path::Path;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use web::streamer::Streamer;
use web::{Settings, Site};
use wire::Protocol;

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
    let limit = ConnLimit { max_conns: o.max_conns, conn_memory: o.conn_memory };
    let max_conns = limit.resolve(web::WebService::bytes_per_connection(), 65_536, "per engine")?;
    let mode = o.mode.unwrap_or(Mode::Precopy);
    let replica_frames = o.replica_frames.unwrap_or(16_384);
    if mode == Mode::Precopy && !(1..=1 << 20).contains(&replica_frames) {
        return Err("--replica-frames must be 1..1048576".into());
    }
    let precopy = (mode == Mode::Precopy).then_some(replica_frames);
    let stream = (mode == Mode::Stream)
        .then(|| Streamer::storage(o.stream_memory.unwrap_or(64), o.stream_buffer.unwrap_or(256)))
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
    let limits = cfg.limits(tcp_limits()).for_conns(max_conns);
    let mut first = match stream {
        Some(cfg) => {
            let (st, said) = Streamer::first(cfg, published.follow().get())?;
            tracing::info!("{said}");
            Some(st)
        }
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
        for line in svc.exit_lines(q) {
            println!("{line}");
        }
    }
    Ok(())
}
