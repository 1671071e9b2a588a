//! Serving: options and config into zone specs, the catalog compiled and published, the
//! secondaries kept current, an engine per queue, the exit summary.

use super::config::{keyring, zone_specs, ForAll};
use super::driver::Driver;
use super::{DnsArgs, DnsOptions, KeyModeArg, XdpAnswers};
use crate::serve::{config, Defaults};
use dns_server::secondary::Secondaries;
use dns_server::zones::{self, Received};
use engine::published::Published;
use std::time::Instant;
use wire::Protocol;

/// The RSS of `iface` for the secondaries' connections, and a line saying how their replies
/// reach engine 0.
fn transfer_rss(iface: &str) -> Option<tcp::rss::Rss> {
    let info = io::iface::index_of(iface).map(io::rss::rss);
    let why = match info {
        Some(io::rss::RssInfo::Toeplitz { key, table }) => {
            let table: Vec<u16> = table.iter().map(|&q| q as u16).collect();
            match tcp::rss::Rss::new(&key, &table) {
                Ok(r) => {
                    tracing::info!(
                        "secondary transfers: source ports chosen by {iface}'s RSS (Toeplitz, {}-entry table) so that primaries' replies reach engine 0",
                        table.len()
                    );
                    return Some(r);
                }
                Err(e) => format!("its RSS key or table is unusable ({e:?})"),
            }
        }
        Some(io::rss::RssInfo::Other(w)) => format!("its RSS is {w}"),
        Some(io::rss::RssInfo::NotReported(w)) => format!("its driver does not report its RSS ({w})"),
        None => "it has no index".into(),
    };
    tracing::info!(
        "secondary transfers: {why} on {iface}; with several queues, primaries' replies that reach another engine are handed on to engine 0"
    );
    None
}

/// Runs the DNS server.
pub fn run(a: DnsArgs) -> Result<(), String> {
    let mut s = a.serve.setup::<DnsOptions>(Defaults { port: 53, idle_spins: 0 })?;
    // Options first: a mistake there is reported before zones take long to compile.
    let port = s.port;
    let own = a.dns.clone().or(s.own.clone());
    let checked = own.checked()?;
    let (settings, rrl, rrl_exempt, cookies) = (checked.tcp, checked.rrl, checked.rrl_exempt, checked.cookies);
    // The endpoint's table holds the clients and the connections sirocco closed, waiting
    // out TIME-WAIT in its own table.
    // Transfers in grow their window up to the bulk bound (see apps/dns/src/tcp.rs).
    let limits = tcp::Limits {
        max_conns: settings.max_clients + settings.max_clients / 4 + 64,
        max_rcv_buf: tcp::BULK_RCV_BUF_MAX,
        ..crate::tcp_limits::tcp_limits()
    };
    let started = Instant::now();
    let all = ForAll { allow_transfer: &a.allow_transfer, notify: &a.notify, tsig_key: a.tsig_key.as_deref() };
    let keys = keyring(&own, &a.key)?;
    let mut specs = zone_specs(s.config.as_deref(), &own, &a.zone, &a.secondary, &a.catalog, &all)?;
    // Secondary zones and catalogs are fixed at start (a reload re-reads the files of the
    // others); catalogs' members come and go with their catalogs.
    let secondary = zones::secondary_specs(&specs, &keys)?;
    zones::make_member_dirs(&specs)?;
    let received = Received::default();
    let (initial, unusable) = received.load_stored(&specs);
    let shared = Secondaries::new(secondary, &initial);
    for line in unusable.into_iter().chain(received.follow_catalogs(&shared, &specs, &keys)) {
        tracing::info!("{line}");
    }
    specs.extend(received.member_specs());
    let mut built = zones::build(&specs, keys, &received)?;
    // The parsed zones and the compiler's scratch are freed, then the heap's pages given
    // back (a million-name zone otherwise leaves the process at several times what it
    // serves from) — on a thread of their own for a large zone set, while the server starts
    // (on one CPU, in the time the engine leaves idle).
    built.free_parsed_in_background(humble, io::release_free_memory);
    for line in &built.report {
        tracing::info!("{line}");
    }
    let catalog = Published::new(built.catalog);
    tracing::info!("zones compiled in {:.2} s", started.elapsed().as_secs_f64());
    let served = format!(
        "dns on port {port}, {} zone(s) compiled, {} secondary zone(s)",
        catalog.follow().get().zones().len(),
        shared.len()
    );
    if s.check_only(&served)? {
        return Ok(());
    }
    let driver = Driver::new(rrl.as_ref());
    let in_xdp = match a.xdp_answers {
        XdpAnswers::Off => false,
        _ if s.opts.ctl.is_some() => {
            tracing::info!("answers in XDP off: behind sirocco ctl the daemon's program takes the queries");
            false
        }
        XdpAnswers::On => true,
        XdpAnswers::Auto if io::iface::is_veth(&s.opts.iface) => {
            tracing::info!(
                "answers in XDP off on veth (its XDP_TX frames reach the peer promptly only if the peer has an XDP program; --xdp-answers on to use them)"
            );
            false
        }
        XdpAnswers::Auto => true,
    };
    if in_xdp {
        let capacity = driver.prepare(catalog.follow().get());
        let d = driver.clone();
        let attached = std::sync::Arc::new(move |m| d.attach(m));
        s.opts.driver_answers = Some(crate::dataplane::DriverAnswers { port, capacity, attached });
    }
    let reload = {
        let driver = driver.clone();
        let (published, config_path, cli) = (catalog.clone(), s.config.clone(), a.zone.clone());
        let (allow, notify, tsig_key, cli_keys) =
            (a.allow_transfer.clone(), a.notify.clone(), a.tsig_key.clone(), a.key.clone());
        let (cli_secondaries, cli_catalogs) = (a.secondary.clone(), a.catalog.clone());
        let (shared, received) = (shared.clone(), received.clone());
        move || {
            let own = match &config_path {
                Some(p) => config::read::<DnsOptions>(p)?.own,
                None => DnsOptions::default(),
            };
            let all = ForAll { allow_transfer: &allow, notify: &notify, tsig_key: tsig_key.as_deref() };
            let keys = keyring(&own, &cli_keys)?;
            let mut specs = zone_specs(config_path.as_deref(), &own, &cli, &cli_secondaries, &cli_catalogs, &all)?;
            let mut done = received.take_transfers(&shared, &specs, &keys);
            specs.extend(received.member_specs());
            // Each zone's journal carried over, with what this version changed (IXFR).
            let mut built = zones::build(&specs, keys, &received)?;
            built.free_parsed_in_background(humble, io::release_free_memory);
            let c = built.catalog.with_journals(&published.current().0);
            done.push(format!("{} zone(s)", c.zones().len()));
            let retired = published.publish(c);
            driver.install(&published.current().0);
            Ok((done.join("; "), retired))
        }
    };
    let mode = match a.key_mode {
        KeyModeArg::Wire => dns_server::KeyMode::Wire,
        KeyModeArg::Decompress => dns_server::KeyMode::Decompress,
    };
    let secondaries = !shared.is_empty();
    // Behind sirocco ctl the engines' queues are the virtual NIC's, not the interface's.
    let rss = if secondaries && s.opts.ctl.is_none() { transfer_rss(&s.opts.iface) } else { None };
    let mut refresher = secondaries.then(|| dns_server::secondary::Refresher::new(shared.clone()));
    let locals: Vec<wire::IpAddr> = s.opts.addr.iter().map(|&a| a.into()).collect();
    let make = |engine| {
        let mut server = dns_server::DnsServer::following(catalog.follow(), port).with_key_mode(mode);
        if let Some(r) = rrl {
            server = server.with_rrl(r, rrl_exempt.clone());
        }
        if let Some(c) = &cookies {
            server = server.with_cookies(c.clone());
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
            Some(r) if engine == 0 => service.with_refresher(r, locals.clone()).with_rss(rss.clone()),
            r => {
                refresher = r;
                if secondaries {
                    service.relaying_transfers()
                } else {
                    service
                }
            }
        }
    };
    // A secondary's connections to its primaries come back to ephemeral ports: every TCP
    // port of the served address is granted (behind sirocco ctl: the ephemeral range).
    let mut grants = vec![(Protocol::UDP, port), (Protocol::TCP, port)];
    if secondaries {
        grants.push((Protocol::TCP, 0));
    }
    let grants = &grants[..];
    let wake = Some(shared.wake.clone());
    let reload = crate::serve::Reload { what: "zones", f: Box::new(reload), wake };
    let out = s.run(&format!("dns on port {port}"), grants, make, Some(reload))?;
    for line in dns_server::report::exit_lines(out.apps(), rrl) {
        println!("{line}");
    }
    if let Some(line) = driver.summary() {
        println!("{line}");
    }
    Ok(())
}

/// Lowers the calling thread to run only when its CPU is idle.
fn humble() {
    if let Err(e) = io::run_only_when_idle() {
        tracing::debug!("freeing the parsed zones at normal priority: {e}");
    }
}
