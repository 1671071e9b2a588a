//! `sirocco dns`: zones from the command line and/or a TOML config file, compiled, served on
//! every engine; SIGHUP reloads them without stopping the engines.

use crate::dataplane::{self, Until};
use crate::signals;
use crate::DataplaneArgs;
use clap::Args;
use dns_server::server::SharedCatalog;
use dns_server::{Catalog, CompiledZone};
use serde::Deserialize;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wire::Protocol;

#[derive(Args)]
pub struct DnsArgs {
    #[command(flatten)]
    pub dp: DataplaneArgs,
    /// A zone file, as FILE (origin from its $ORIGIN or SOA owner) or NAME=FILE; repeatable.
    #[arg(long, value_name = "[NAME=]FILE")]
    pub zone: Vec<String>,
    /// TOML config: iface, addr, queues, port, cpus and [[zone]] tables (file, name);
    /// command-line options override it, command-line zones are added to its zones.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// UDP port [default: 53].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// Stop after this many seconds [default: run until SIGINT/SIGTERM].
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// How question names become lookup keys: `wire` hashes the name where it lies in the
    /// query, case-insensitively; `decompress` copies it out lowercased first (the thesis's
    /// two modes; the benchmark compares them).
    #[arg(long, value_enum, default_value_t = KeyModeArg::Wire)]
    pub key_mode: KeyModeArg,
}

#[derive(clap::ValueEnum, Clone, Copy)]
pub enum KeyModeArg {
    Wire,
    Decompress,
}

/// The config file.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Config {
    iface: Option<String>,
    addr: Option<Ipv4Addr>,
    queues: Option<u32>,
    port: Option<u16>,
    cpus: Option<Vec<usize>>,
    #[serde(default)]
    zone: Vec<ZoneConfig>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ZoneConfig {
    file: PathBuf,
    name: Option<String>,
}

/// A zone to load: origin (if given) and file.
#[derive(Clone)]
struct ZoneSpec {
    origin: Option<String>,
    file: PathBuf,
}

fn read_config(path: &Path) -> Result<Config, String> {
    let mut c: Config = crate::config_file::read(path)?;
    let base = path.parent().unwrap_or(Path::new("."));
    for z in &mut c.zone {
        if z.file.is_relative() {
            z.file = base.join(&z.file);
        }
    }
    Ok(c)
}

/// The zones to serve: the config's, then the command line's.
fn zone_specs(config: Option<&Config>, cli: &[String]) -> Vec<ZoneSpec> {
    let mut v: Vec<ZoneSpec> = config
        .map(|c| c.zone.iter().map(|z| ZoneSpec { origin: z.name.clone(), file: z.file.clone() }).collect())
        .unwrap_or_default();
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
    let until = match a.duration {
        Some(d) => Until::Elapsed(crate::secs(d, "--duration")?),
        None => Until::Signal,
    };
    let config = a.config.as_deref().map(read_config).transpose()?;
    let mut dp = a.dp.clone();
    if let Some(c) = &config {
        dp.iface = dp.iface.or_else(|| c.iface.clone());
        dp.addr = dp.addr.or(c.addr);
        dp.queues = dp.queues.or(c.queues);
        dp.cpus = dp.cpus.or_else(|| c.cpus.clone());
    }
    let port = a.port.or(config.as_ref().and_then(|c| c.port)).unwrap_or(53);
    if port == 0 {
        return Err("port must be 1..65535".into());
    }
    let opts = dp.options(false, 0)?;
    let started = Instant::now();
    let specs = zone_specs(config.as_ref(), &a.zone);
    let shared = SharedCatalog::new(build(&specs, true)?);
    eprintln!("sirocco: zones compiled in {:.2} s", started.elapsed().as_secs_f64());

    signals::install_reload();
    let done = Arc::new(AtomicBool::new(false));
    let reloader = {
        let (shared, done, config_path, cli_zones) = (shared.clone(), done.clone(), a.config.clone(), a.zone.clone());
        std::thread::Builder::new()
            .name("sirocco-reload".into())
            .spawn(move || reload_loop(&shared, &done, config_path.as_deref(), &cli_zones))
            .map_err(|e| format!("reload thread: {e}"))?
    };
    let out = dataplane::run(
        &opts,
        &[(Protocol::UDP, port)],
        |_| {
            let mode = match a.key_mode {
                KeyModeArg::Wire => dns_server::KeyMode::Wire,
                KeyModeArg::Decompress => dns_server::KeyMode::Decompress,
            };
            dns_server::DnsServer::shared(shared.clone(), port).with_key_mode(mode)
        },
        until,
        &format!("dns on port {port}"),
    );
    done.store(true, Ordering::SeqCst);
    let _ = reloader.join();
    let out = out?;
    dataplane::print_counters(&out);
    let mut rc = [0u64; 8];
    let (mut tc, mut dropped) = (0, 0);
    for (_, s) in &out.engines {
        for (i, v) in s.stats.rcodes.iter().enumerate() {
            rc[i] += v;
        }
        tc += s.stats.truncated;
        dropped += s.stats.dropped;
    }
    println!(
        "dns: noerror {} formerr {} servfail {} nxdomain {} notimp {} refused {} yxdomain {} badvers {} | truncated {tc} dropped {dropped}",
        rc[0], rc[1], rc[2], rc[3], rc[4], rc[5], rc[6], rc[7]
    );
    if let Some(p) = &a.dp.counters {
        dataplane::write_counters_json(&out, p)?;
    }
    Ok(())
}

/// Waits for SIGHUP; builds the new catalog beside the one being served and publishes it,
/// or keeps the old one and says why.
fn reload_loop(shared: &SharedCatalog, done: &AtomicBool, config: Option<&Path>, cli_zones: &[String]) {
    while !done.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
        if !signals::take_reload() {
            continue;
        }
        let t = Instant::now();
        let built = config.map(read_config).transpose().and_then(|c| build(&zone_specs(c.as_ref(), cli_zones), false));
        match built {
            Ok(c) => {
                let zones = c.zones().len();
                let old = shared.replace(c);
                eprintln!("sirocco: reloaded {zones} zone(s) in {:.2} s", t.elapsed().as_secs_f64());
                // Free the old catalog here, not on an engine: wait (bounded) until every
                // engine has switched over.
                let deadline = Instant::now() + Duration::from_secs(5);
                while Arc::strong_count(&old) > 1 && Instant::now() < deadline && !done.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                drop(old);
            }
            Err(e) => eprintln!("sirocco: reload failed, still serving the previous zones: {e}"),
        }
    }
}
