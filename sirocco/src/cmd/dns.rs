//! `sirocco dns`: zones from the command line and/or the config file, compiled, served on
//! every engine; SIGHUP reloads them without stopping the engines.

use crate::serve::{config, relative_to, Defaults, ServeArgs};
use clap::Args;
use dns_server::{Catalog, CompiledZone};
use engine::published::Published;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Instant;
use wire::Protocol;

#[derive(Args)]
pub struct DnsArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    /// A zone file, as FILE (origin from its $ORIGIN or SOA owner) or NAME=FILE; repeatable.
    /// Added to the config file's [[zone]] tables (file, name).
    #[arg(long, value_name = "[NAME=]FILE")]
    pub zone: Vec<String>,
    /// How question names become lookup keys: `wire` hashes the name where it lies in the
    /// query, case-insensitively; `decompress` copies it out lowercased first (the thesis's
    /// two modes; the benchmark compares them).
    #[arg(long, value_enum, default_value_t = KeyModeArg::Wire)]
    pub key_mode: KeyModeArg,
    /// Seconds a TCP connection may stay idle before it is closed, and a peer that takes no
    /// answers waited for before a reset; told to clients that send edns-tcp-keepalive
    /// [default: 10]. Config key tcp_idle_timeout.
    #[arg(long, value_name = "SECS")]
    pub tcp_idle_timeout: Option<f64>,
    /// TCP connections each engine keeps open at once; past it new ones are reset
    /// [default: 10000]. Config key tcp_max_clients.
    #[arg(long, value_name = "N")]
    pub tcp_max_clients: Option<usize>,
}

#[derive(clap::ValueEnum, Clone, Copy)]
pub enum KeyModeArg {
    Wire,
    Decompress,
}

/// The DNS server's own keys in the config file.
#[derive(Deserialize, Default)]
pub struct DnsConfig {
    #[serde(default)]
    zone: Vec<ZoneConfig>,
    tcp_idle_timeout: Option<f64>,
    tcp_max_clients: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ZoneConfig {
    file: PathBuf,
    name: Option<String>,
}

/// A zone to load: origin (if given) and file.
struct ZoneSpec {
    origin: Option<String>,
    file: PathBuf,
}

/// The zones to serve: the config's (files relative to it), then the command line's.
fn zone_specs(config: Option<&Path>, own: &DnsConfig, cli: &[String]) -> Vec<ZoneSpec> {
    let mut v: Vec<ZoneSpec> =
        own.zone.iter().map(|z| ZoneSpec { origin: z.name.clone(), file: relative_to(config, &z.file) }).collect();
    for spec in cli {
        let (origin, file) = match spec.split_once('=') {
            Some((n, f)) => (Some(n.to_string()), f),
            None => (None, spec.as_str()),
        };
        v.push(ZoneSpec { origin, file: PathBuf::from(file) });
    }
    v
}

/// Loads and compiles every zone; the first error (naming file and line) stops it.
fn build(specs: &[ZoneSpec], verbose: bool) -> Result<Catalog, String> {
    if specs.is_empty() {
        return Err("no zones: give --zone FILE or [[zone]] in --config".into());
    }
    let mut compiled: Vec<CompiledZone> = Vec::new();
    for spec in specs {
        let t0 = Instant::now();
        let z = dns_server::zone::load(&spec.file, spec.origin.as_deref())?;
        let t1 = Instant::now();
        let c = CompiledZone::compile(&z);
        if compiled.iter().any(|o| o.origin == c.origin) {
            return Err(format!("{}: zone {} is given twice", spec.file.display(), c.origin));
        }
        if verbose {
            eprintln!(
                "sirocco: zone {} from {}: {} records, {} names, {} distinct responses, {} bytes compiled ({:.0} per name); loaded in {:.2} s, compiled in {:.2} s",
                c.origin,
                spec.file.display(),
                z.records,
                c.names(),
                c.responses(),
                c.memory_bytes(),
                c.memory_bytes() as f64 / c.names().max(1) as f64,
                (t1 - t0).as_secs_f64(),
                t1.elapsed().as_secs_f64()
            );
        }
        compiled.push(c);
    }
    Ok(Catalog::new(compiled))
}

/// Runs the DNS server.
pub fn run(a: DnsArgs) -> Result<(), String> {
    let s = a.serve.setup::<DnsConfig>(Defaults { port: 53, idle_spins: 0 })?;
    let started = Instant::now();
    let catalog = Published::new(build(&zone_specs(s.config.as_deref(), &s.own, &a.zone), true)?);
    eprintln!("sirocco: zones compiled in {:.2} s", started.elapsed().as_secs_f64());
    let reload = {
        let (published, config_path, cli) = (catalog.clone(), s.config.clone(), a.zone.clone());
        move || {
            let own = match &config_path {
                Some(p) => config::read::<DnsConfig>(p)?.own,
                None => DnsConfig::default(),
            };
            let c = build(&zone_specs(config_path.as_deref(), &own, &cli), false)?;
            let zones = c.zones().len();
            Ok((format!("{zones} zone(s)"), published.publish(c)))
        }
    };
    let mode = match a.key_mode {
        KeyModeArg::Wire => dns_server::KeyMode::Wire,
        KeyModeArg::Decompress => dns_server::KeyMode::Decompress,
    };
    let port = s.port;
    let idle = a.tcp_idle_timeout.or(s.own.tcp_idle_timeout).unwrap_or(10.0);
    let settings = dns_server::tcp::TcpSettings {
        idle_timeout: crate::serve::secs(idle, "--tcp-idle-timeout")?.into(),
        max_clients: a.tcp_max_clients.or(s.own.tcp_max_clients).unwrap_or(10_000),
    };
    if settings.max_clients == 0 {
        return Err("--tcp-max-clients must be at least 1".into());
    }
    // The endpoint's table holds the clients and the connections sirocco closed, waiting
    // out TIME-WAIT in its own table.
    let limits = tcp::Limits {
        max_conns: settings.max_clients + settings.max_clients / 4 + 64,
        ..crate::tcp_limits::tcp_limits()
    };
    let make = |_| {
        let server = dns_server::DnsServer::following(catalog.follow(), port).with_key_mode(mode);
        dns_server::DnsService::new(server, port, settings, limits)
    };
    // Behind sirocco ctl a grant is one flow: UDP there, no TCP yet.
    let grants: &[_] =
        if s.opts.ctl.is_some() { &[(Protocol::UDP, port)] } else { &[(Protocol::UDP, port), (Protocol::TCP, port)] };
    let out = s.run(&format!("dns on port {port}"), grants, make, Some(("zones", Box::new(reload))))?;
    let mut rc = [0u64; 8];
    let (mut tc, mut dropped) = (0, 0);
    let mut t = dns_server::tcp::TcpStats::default();
    for svc in out.apps() {
        let d = svc.server();
        for (i, v) in d.stats.rcodes.iter().enumerate() {
            rc[i] += v;
        }
        tc += d.stats.truncated;
        dropped += d.stats.dropped;
        t.add(&svc.tcp.app.stats);
    }
    println!(
        "dns: noerror {} formerr {} servfail {} nxdomain {} notimp {} refused {} yxdomain {} badvers {} | truncated {tc} dropped {dropped}",
        rc[0], rc[1], rc[2], rc[3], rc[4], rc[5], rc[6], rc[7]
    );
    println!(
        "dns over tcp: connections accepted {} refused {} closed {} (idle {} cut off {}) | answers {}",
        t.accepted, t.refused, t.closed, t.idle_closed, t.cut, t.answered
    );
    Ok(())
}
