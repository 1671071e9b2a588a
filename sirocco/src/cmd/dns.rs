//! `sirocco dns`: zones from the command line and/or the config file, compiled, served on
//! every engine; SIGHUP reloads them without stopping the engines.

use crate::serve::{config, relative_to, Defaults, ServeArgs};
use clap::Args;
use dns_server::secondary::Secondaries;
use dns_server::zones::{self, endpoint, Received, ZoneSpec};
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
    /// Addresses or prefixes (198.18.0.0/24, 2001:2::/48) that may transfer every zone by
    /// AXFR over TCP; repeatable. Added to each [[zone]]'s allow_transfer. None by default.
    #[arg(long, value_name = "PREFIX")]
    pub allow_transfer: Vec<String>,
    /// A secondary told of every zone's new versions by NOTIFY (RFC 1996), as ADDR or
    /// ADDR@PORT; repeatable. Added to each [[zone]]'s notify.
    #[arg(long, value_name = "ADDR[@PORT]")]
    pub notify: Vec<String>,
    /// A TSIG key (RFC 8945) as kdig's -y takes it: [ALGORITHM:]NAME:SECRET, the secret in
    /// base64, hmac-sha256 if no algorithm; repeatable. Signed queries with a known key get
    /// signed answers. Also [[key]] tables (name, algorithm, secret) in the config file,
    /// which keep the secret out of the process list.
    #[arg(long, value_name = "[ALG:]NAME:SECRET")]
    pub key: Vec<String>,
    /// The key every zone's transfers must be signed with (besides an allowed address), and
    /// its NOTIFYs are signed with, unless its [[zone]] names its own tsig_key.
    #[arg(long, value_name = "NAME")]
    pub tsig_key: Option<String>,
    /// A zone served as a secondary, NAME=PRIMARY with PRIMARY as ADDR or ADDR@PORT: got by
    /// AXFR over TCP, refreshed by its SOA timers and NOTIFY; repeatable. Kept in memory; a
    /// [[zone]] with name, primary and file also stores it.
    #[arg(long, value_name = "NAME=ADDR[@PORT]")]
    pub secondary: Vec<String>,
    #[command(flatten)]
    pub rrl: RrlArgs,
    /// Clients never rate-limited (addresses or prefixes; repeatable). Config key rrl_exempt.
    #[arg(long, value_name = "PREFIX")]
    pub rrl_exempt: Vec<String>,
}

/// Response rate limiting; each option has a config-file key of the same name (`_` for `-`).
#[derive(Args, Default, Clone, Copy)]
pub struct RrlArgs {
    /// Response rate limiting over UDP: responses per second to one client prefix, per
    /// response class and answer, per engine; 0 turns it off [default: 0, off].
    #[arg(long, value_name = "N")]
    pub rrl_rate: Option<u32>,
    /// Every Nth response over the limit is sent truncated (TC) instead of dropped, so a
    /// real client retries over TCP; 0 drops them all [default: 2].
    #[arg(long, value_name = "N")]
    pub rrl_slip: Option<u32>,
    /// Bits of an IPv4 client address that make the prefix limited together [default: 24].
    #[arg(long, value_name = "BITS")]
    pub rrl_ipv4_prefix: Option<u8>,
    /// Bits of an IPv6 client address that make the prefix limited together [default: 56].
    #[arg(long, value_name = "BITS")]
    pub rrl_ipv6_prefix: Option<u8>,
    /// Rate-limit buckets per engine (a flood from more prefixes evicts the idlest)
    /// [default: 65536].
    #[arg(long, value_name = "N")]
    pub rrl_table_size: Option<usize>,
}

impl RrlArgs {
    /// The command line's over the config file's; None when RRL is off.
    fn settings(self, f: RrlArgs) -> Result<Option<dns_server::rrl::RrlSettings>, String> {
        let d = dns_server::rrl::RrlSettings::default();
        let rate = self.rrl_rate.or(f.rrl_rate).unwrap_or(0);
        let s = dns_server::rrl::RrlSettings {
            rate,
            slip: self.rrl_slip.or(f.rrl_slip).unwrap_or(d.slip),
            ipv4_prefix: self.rrl_ipv4_prefix.or(f.rrl_ipv4_prefix).unwrap_or(d.ipv4_prefix),
            ipv6_prefix: self.rrl_ipv6_prefix.or(f.rrl_ipv6_prefix).unwrap_or(d.ipv6_prefix),
            table_size: self.rrl_table_size.or(f.rrl_table_size).unwrap_or(d.table_size),
        };
        if s.ipv4_prefix == 0 || s.ipv4_prefix > 32 {
            return Err(format!("--rrl-ipv4-prefix must be 1 to 32, not {}", s.ipv4_prefix));
        }
        if s.ipv6_prefix == 0 || s.ipv6_prefix > 128 {
            return Err(format!("--rrl-ipv6-prefix must be 1 to 128, not {}", s.ipv6_prefix));
        }
        if !(2..=1 << 26).contains(&s.table_size) {
            return Err(format!("--rrl-table-size must be 2 to {}, not {}", 1 << 26, s.table_size));
        }
        Ok((rate > 0).then_some(s))
    }
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
    #[serde(default)]
    key: Vec<KeyConfig>,
    tcp_idle_timeout: Option<f64>,
    tcp_max_clients: Option<usize>,
    rrl_rate: Option<u32>,
    rrl_slip: Option<u32>,
    rrl_ipv4_prefix: Option<u8>,
    rrl_ipv6_prefix: Option<u8>,
    rrl_table_size: Option<usize>,
    #[serde(default)]
    rrl_exempt: Vec<String>,
}

impl DnsConfig {
    /// The config file's rate-limiting keys (flat in the file: flattened structs would hide
    /// their keys from the unknown-key check).
    fn rrl(&self) -> RrlArgs {
        RrlArgs {
            rrl_rate: self.rrl_rate,
            rrl_slip: self.rrl_slip,
            rrl_ipv4_prefix: self.rrl_ipv4_prefix,
            rrl_ipv6_prefix: self.rrl_ipv6_prefix,
            rrl_table_size: self.rrl_table_size,
        }
    }
}

/// A TSIG key in the config file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyConfig {
    name: String,
    #[serde(default = "hmac_sha256")]
    algorithm: String,
    secret: String,
}

fn hmac_sha256() -> String {
    "hmac-sha256".into()
}

/// The keys of the config file and the command line.
fn keyring(own: &DnsConfig, cli: &[String]) -> Result<dns_server::tsig::Keyring, String> {
    let mut keys = Vec::new();
    for k in &own.key {
        keys.push(dns_server::tsig::Key::new(&k.algorithm, &k.name, &k.secret)?);
    }
    for k in cli {
        keys.push(dns_server::tsig::Key::parse(k).map_err(|e| format!("--key: {e}"))?);
    }
    dns_server::tsig::Keyring::new(keys)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ZoneConfig {
    /// The zone file; for a secondary zone, where each version transferred is stored (and
    /// loaded from at start).
    file: Option<PathBuf>,
    name: Option<String>,
    /// The zone's primaries, ADDR or ADDR@PORT: the zone is served as a secondary.
    #[serde(default, deserialize_with = "addr_ports")]
    primary: Vec<String>,
    /// Addresses or prefixes that may transfer the zone.
    #[serde(default, deserialize_with = "prefixes")]
    allow_transfer: Vec<String>,
    /// Secondaries to NOTIFY, ADDR or ADDR@PORT.
    #[serde(default, deserialize_with = "addr_ports")]
    notify: Vec<String>,
    /// The TSIG key transfers must be signed with and NOTIFYs are.
    tsig_key: Option<String>,
}

/// What every zone gets besides its own: transfer prefixes, secondaries, a key.
struct ForAll<'a> {
    allow_transfer: &'a [String],
    notify: &'a [String],
    tsig_key: Option<&'a str>,
}

/// The zones to serve: the config's (files relative to it), then the command line's, then
/// its secondaries (`NAME=ADDR[@PORT]`); every one may be transferred by the `allow` prefixes
/// too.
fn zone_specs(
    config: Option<&Path>,
    own: &DnsConfig,
    cli: &[String],
    cli_secondaries: &[String],
    all: &ForAll<'_>,
) -> Vec<ZoneSpec> {
    let mut v: Vec<ZoneSpec> = own
        .zone
        .iter()
        .map(|z| ZoneSpec {
            origin: z.name.clone(),
            file: z.file.as_ref().map(|f| relative_to(config, f)),
            primaries: z.primary.clone(),
            allow_transfer: z.allow_transfer.iter().chain(all.allow_transfer).cloned().collect(),
            notify: z.notify.iter().chain(all.notify).cloned().collect(),
            tsig_key: z.tsig_key.clone().or(all.tsig_key.map(String::from)),
        })
        .collect();
    for spec in cli {
        let (origin, file) = match spec.split_once('=') {
            Some((n, f)) => (Some(n.to_string()), f),
            None => (None, spec.as_str()),
        };
        v.push(ZoneSpec {
            origin,
            file: Some(PathBuf::from(file)),
            primaries: Vec::new(),
            allow_transfer: all.allow_transfer.to_vec(),
            notify: all.notify.to_vec(),
            tsig_key: all.tsig_key.map(String::from),
        });
    }
    for spec in cli_secondaries {
        let (origin, primary) = spec.split_once('=').unwrap_or(("", spec));
        v.push(ZoneSpec {
            origin: Some(origin.to_string()),
            file: None,
            primaries: vec![primary.to_string()],
            allow_transfer: all.allow_transfer.to_vec(),
            notify: all.notify.to_vec(),
            tsig_key: all.tsig_key.map(String::from),
        });
    }
    v
}

/// A config file's list of ADDR or ADDR@PORT, checked as it is read, so that a bad one is
/// reported at its line of the config file.
fn addr_ports<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for s in &v {
        endpoint(s, "address").map_err(serde::de::Error::custom)?;
    }
    Ok(v)
}

/// A config file's list of addresses or prefixes, checked as it is read.
fn prefixes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    dns_server::transfer::Acl::parse(&v).map_err(serde::de::Error::custom)?;
    Ok(v)
}

/// Runs the DNS server.
pub fn run(a: DnsArgs) -> Result<(), String> {
    let s = a.serve.setup::<DnsConfig>(Defaults { port: 53, idle_spins: 0 })?;
    // Options first: a mistake there is reported before zones take long to compile.
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
    // Transfers in grow their window up to the bulk bound (see apps/dns/src/tcp.rs).
    let limits = tcp::Limits {
        max_conns: settings.max_clients + settings.max_clients / 4 + 64,
        max_rcv_buf: tcp::BULK_RCV_BUF_MAX,
        ..crate::tcp_limits::tcp_limits()
    };
    let rrl = a.rrl.settings(s.own.rrl())?;
    let exempt: Vec<&String> = a.rrl_exempt.iter().chain(&s.own.rrl_exempt).collect();
    let rrl_exempt = dns_server::transfer::Acl::parse(&exempt).map_err(|e| format!("--rrl-exempt: {e}"))?;
    let started = Instant::now();
    let all = ForAll { allow_transfer: &a.allow_transfer, notify: &a.notify, tsig_key: a.tsig_key.as_deref() };
    let keys = keyring(&s.own, &a.key)?;
    let specs = zone_specs(s.config.as_deref(), &s.own, &a.zone, &a.secondary, &all);
    // Secondary zones are fixed at start (a reload re-reads the files of the others).
    let shared = Secondaries::new(zones::secondary_specs(&specs, &keys)?);
    if !shared.zones().is_empty() && s.opts.ctl.is_some() {
        return Err("secondary zones need TCP, which sirocco ctl does not grant yet".into());
    }
    let received = Received::default();
    let (initial, unusable) = received.load_stored(&specs);
    for line in unusable {
        tracing::info!("{line}");
    }
    let built = zones::build(&specs, keys, &received)?;
    for line in &built.report {
        tracing::info!("{line}");
    }
    let catalog = Published::new(built.catalog);
    tracing::info!("zones compiled in {:.2} s", started.elapsed().as_secs_f64());
    let served = format!(
        "dns on port {port}, {} zone(s) compiled, {} secondary zone(s)",
        catalog.follow().get().zones().len(),
        shared.zones().len()
    );
    if s.check_only(&served)? {
        return Ok(());
    }
    let reload = {
        let (published, config_path, cli) = (catalog.clone(), s.config.clone(), a.zone.clone());
        let (allow, notify, tsig_key, cli_keys, cli_secondaries) =
            (a.allow_transfer.clone(), a.notify.clone(), a.tsig_key.clone(), a.key.clone(), a.secondary.clone());
        let (shared, received) = (shared.clone(), received.clone());
        move || {
            let own = match &config_path {
                Some(p) => config::read::<DnsConfig>(p)?.own,
                None => DnsConfig::default(),
            };
            let all = ForAll { allow_transfer: &allow, notify: &notify, tsig_key: tsig_key.as_deref() };
            let keys = keyring(&own, &cli_keys)?;
            let specs = zone_specs(config_path.as_deref(), &own, &cli, &cli_secondaries, &all);
            let mut done = received.take_transfers(&shared, &specs);
            let c = zones::build(&specs, keys, &received)?.catalog;
            done.push(format!("{} zone(s)", c.zones().len()));
            Ok((done.join("; "), published.publish(c)))
        }
    };
    let mode = match a.key_mode {
        KeyModeArg::Wire => dns_server::KeyMode::Wire,
        KeyModeArg::Decompress => dns_server::KeyMode::Decompress,
    };
    let secondaries = !shared.zones().is_empty();
    let mut refresher = secondaries.then(|| dns_server::secondary::Refresher::new(shared.clone(), &initial));
    let locals: Vec<wire::IpAddr> = s.opts.addr.iter().map(|&a| a.into()).collect();
    let make = |engine| {
        let mut server = dns_server::DnsServer::following(catalog.follow(), port).with_key_mode(mode);
        if let Some(r) = rrl {
            server = server.with_rrl(r, rrl_exempt.clone());
        }
        if engine == 0 {
            // One engine tells the secondaries: they hear of each version once.
            server = server.with_notify();
        }
        if secondaries {
            server = server.with_secondaries(shared.clone());
        }
        let service = dns_server::DnsService::new(server, port, settings, limits);
        // One engine keeps the secondary zones current.
        match refresher.take() {
            Some(r) if engine == 0 => service.with_refresher(r, locals.clone()),
            r => {
                refresher = r;
                service
            }
        }
    };
    // Behind sirocco ctl a grant is one flow: UDP there, no TCP yet. A secondary's
    // connections to its primaries come back to ephemeral ports: every TCP port of the
    // served address is granted.
    let tcp_port = if secondaries { 0 } else { port };
    let grants: &[_] = if s.opts.ctl.is_some() {
        &[(Protocol::UDP, port)]
    } else {
        &[(Protocol::UDP, port), (Protocol::TCP, tcp_port)]
    };
    let wake = Some(shared.wake.clone());
    let reload = crate::serve::Reload { what: "zones", f: Box::new(reload), wake };
    let out = s.run(&format!("dns on port {port}"), grants, make, Some(reload))?;
    for line in dns_server::report::exit_lines(out.apps(), rrl) {
        println!("{line}");
    }
    Ok(())
}
