//! `sirocco`: the one command-line tool of the sirocco dataplane. Each command is a file in
//! `cmd/`; servers share the skeleton in `serve/`, everything that runs engines the steps in
//! `dataplane/`.

mod cmd;
mod dataplane;
mod log;
mod serve;
mod signals;
mod tcp_limits;

use clap::{Parser, Subcommand};

/// sirocco: a kernel-bypass network dataplane (AF_XDP + XDP) and the servers built on it.
#[derive(Parser)]
#[command(name = "sirocco", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// How log lines look on stderr: text (`sirocco: ...`) or json (one object per line).
    #[arg(long, global = true, value_enum, default_value_t = log::Format::Text)]
    log_format: log::Format,
}

#[derive(Subcommand)]
enum Cmd {
    /// Echo server: UDP datagrams (Arrakis's echo) or TCP bytes (the IX/MegaPipe echo) go back
    /// to their senders unchanged.
    ///
    /// The XDP filter hands sirocco only UDP to ADDR:PORT (plus ARP and ping when the kernel
    /// does not have ADDR); everything else on the interface stays with the kernel.
    Echo(cmd::echo::EchoArgs),
    /// Authoritative DNS server answering from responses compiled at load time (Namestorm).
    ///
    /// Every answer (exact, CNAME chain, wildcard, referral, NXDOMAIN/NODATA, ANY per RFC
    /// 8482) is prepared when the zones load; DNAME answers are synthesised per query. SIGHUP
    /// reloads the zones (a zone that fails keeps the old ones serving). UDP and TCP,
    /// DNSSEC-signed zones, RRL, zone transfers both ways with NOTIFY and TSIG.
    Dns(cmd::dns::DnsArgs),
    /// Static web server sending pre-packetised responses (Sandstorm).
    ///
    /// Every file's whole `200` response is cut into TCP segments with their checksums when
    /// the tree loads; serving a client copies them and rewrites addresses, ports, sequence
    /// numbers, window and timestamps, updating the checksum for those fields only. HTTP/1.1
    /// with keep-alive and pipelining, conditional requests, single ranges; SIGHUP reloads.
    /// Without --root it serves a small built-in demo site.
    Web(cmd::web::WebArgs),
    /// memcached-compatible cache on the level-2 channel (the IX / MegaPipe memcached).
    ///
    /// The text protocol (classic and meta commands) and the binary protocol, as memcached
    /// 1.6 speaks them; items in slab pages bounded by --memory, evicted least-recently-used
    /// within their size class. Every engine serves every key: the cache is shared, split
    /// into locked shards by key hash.
    Kv(cmd::kv::KvArgs),
    /// Durable Redis-protocol store whose log goes straight to a storage queue (Arrakis).
    ///
    /// RESP2 and the string commands as Redis 7.0 answers them. A write is acknowledged only
    /// once its log record is on the device (O_DIRECT|O_DSYNC through io_uring, group
    /// commit); the log is replayed at start, a torn last write cut off, damage before it
    /// refused. Every engine serves every key.
    Store(cmd::store::StoreArgs),
    /// A modular packet-processing pipeline between interfaces, from a script (BESS).
    ///
    /// Modules joined by gates (ports, L2 switching, IPv4 routing, queues, delay and loss for
    /// WAN emulation, measurement) process packets in batches of up to 64, run to
    /// completion. Every interface a PortInc/PortOut names is taken whole: give the pipeline
    /// interfaces of its own.
    Pipeline(cmd::pipeline::PipelineCmd),
    /// The control plane that lets several servers share one interface (Arrakis).
    ///
    /// `sirocco ctl --iface IF` runs the daemon: it owns IF's XDP program and gives each server
    /// started with `--ctl SOCKET` a virtual NIC carrying only the flow it was granted (by the
    /// policy file), with what it sends checked and rate-limited below it. `sirocco ctl
    /// status` lists the grants and their counters; `sirocco ctl revoke APP` ends one.
    Ctl(cmd::ctl::CtlCmd),
    /// A running sirocco's engines live: rates, batches, drops, CPU, connections and the
    /// application's busiest counters, refreshed in the terminal (like top).
    Top(cmd::top::TopArgs),
    /// The TCP connections of a running sirocco, as `ss -tin` lists the kernel's: state,
    /// addresses, windows, congestion window, RTT, retransmissions, bytes; filterable.
    Ss(cmd::ss::SsArgs),
    /// Load generators (the load side of the benchmarks).
    #[command(subcommand)]
    Gen(GenCmd),
    /// Create or remove the two-namespace veth test network (198.18.0.0/15 addresses).
    #[command(subcommand)]
    Testnet(cmd::testnet::TestnetCmd),
    /// Write the man pages of every command into DIR (for packaging).
    #[command(hide = true)]
    Man {
        /// Where the pages go (sirocco.1, sirocco-dns.1, ...).
        dir: std::path::PathBuf,
    },
}

#[derive(Subcommand)]
enum GenCmd {
    /// Open-loop UDP load: sends at a target rate for a duration, counts replies, and reports
    /// achieved rates and round-trip latency percentiles (timestamps travel in the payload).
    Udp(cmd::gen::udp::GenUdpArgs),
    /// HTTP/1.1 load on sirocco's own TCP: keep-alive or a connection per request, closed or
    /// open loop; reports requests/s, Gb/s and latency percentiles. Needs an address the
    /// kernel does not have.
    Http(cmd::gen::http::GenHttpArgs),
    /// memcached load like mutilate's: ETC or USR key/value sizes and get/set mix, keys
    /// stored first, then open loop with exponential interarrival times on many pipelined
    /// connections; latency from each request's due time. Needs an address the kernel does
    /// not have.
    Kv(cmd::gen::kv::GenKvArgs),
}

/// Writes a page per command, from the CLI's definition, as `sirocco-CMD[-SUB].1`.
fn man_pages(dir: &std::path::Path) -> Result<(), String> {
    use clap::CommandFactory;
    fn write(cmd: &clap::Command, name: String, dir: &std::path::Path) -> Result<(), String> {
        if cmd.is_hide_set() {
            return Ok(());
        }
        let cmd = cmd.clone().display_name(name.clone()).bin_name(name.replace('-', " "));
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd.clone()).render(&mut page).map_err(|e| e.to_string())?;
        let path = dir.join(format!("{name}.1"));
        std::fs::write(&path, page).map_err(|e| format!("{}: {e}", path.display()))?;
        for sub in cmd.get_subcommands() {
            write(sub, format!("{name}-{}", sub.get_name()), dir)?;
        }
        Ok(())
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    write(&Cli::command(), "sirocco".into(), dir)
}

/// The command line, or one line saying what is wrong with it (clap's own message, whose
/// usage and help trailer would make it several) and exit status 2; help and version as
/// clap prints them.
fn parse_cli() -> Cli {
    use clap::error::ErrorKind;
    match Cli::try_parse() {
        Ok(c) => c,
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) =>
        {
            e.exit()
        }
        Err(e) => {
            let text = e.render().to_string();
            let said: Vec<&str> = text
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .filter(|l| !l.is_empty())
                .collect();
            eprintln!("{}", said.join(" "));
            std::process::exit(2);
        }
    }
}

fn main() {
    let cli = parse_cli();
    log::init(cli.log_format);
    signals::install();
    let r = match cli.cmd {
        Cmd::Echo(a) => cmd::echo::run(a),
        Cmd::Dns(a) => cmd::dns::run(a),
        Cmd::Web(a) => cmd::web::run(a),
        Cmd::Kv(a) => cmd::kv::run(a),
        Cmd::Store(a) => cmd::store::run(a),
        Cmd::Pipeline(a) => cmd::pipeline::run(a),
        Cmd::Ctl(a) => cmd::ctl::run(a),
        Cmd::Gen(GenCmd::Udp(a)) => cmd::gen::udp::run(a),
        Cmd::Gen(GenCmd::Http(a)) => cmd::gen::http::run(a),
        Cmd::Gen(GenCmd::Kv(a)) => cmd::gen::kv::run(a),
        Cmd::Testnet(c) => cmd::testnet::run(c),
        Cmd::Top(a) => cmd::top::run(a),
        Cmd::Man { dir } => man_pages(&dir),
        Cmd::Ss(a) => cmd::ss::run(a),
    };
    if let Err(e) = r {
        tracing::error!("{e}");
        std::process::exit(1);
    }
}
