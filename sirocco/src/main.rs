//! `sirocco`: the one command-line tool of the sirocco dataplane.

mod config_file;
mod dataplane;
mod dns_cmd;
mod gen_http;
mod gen_report;
mod signals;
mod testnet;
mod web_cmd;

use clap::{Args, Parser, Subcommand};
use dataplane::{Options, Until};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;
use wire::Protocol;

/// sirocco: a kernel-bypass network dataplane (AF_XDP + XDP) and the servers built on it.
#[derive(Parser)]
#[command(name = "sirocco", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Echo server: UDP datagrams (Arrakis's echo) or TCP bytes (the IX/MegaPipe echo) go back
    /// to their senders unchanged.
    ///
    /// The XDP filter hands sirocco only UDP to ADDR:PORT (plus ARP and ping when the kernel
    /// does not have ADDR); everything else on the interface stays with the kernel.
    Echo(EchoArgs),
    /// Authoritative DNS server answering from responses compiled at load time (Namestorm).
    ///
    /// Every answer (exact, CNAME chain, wildcard, referral, NXDOMAIN/NODATA, ANY per RFC
    /// 8482) is prepared when the zones load; DNAME answers are synthesised per query. SIGHUP
    /// reloads the zones (a zone that fails keeps the old ones serving). UDP only for now:
    /// truncated answers send clients to TCP, which sirocco does not serve yet.
    Dns(dns_cmd::DnsArgs),
    /// Static web server sending pre-packetised responses (Sandstorm).
    ///
    /// Every file's whole `200` response is cut into TCP segments with their checksums when
    /// the tree loads; serving a client copies them and rewrites addresses, ports, sequence
    /// numbers, window and timestamps, updating the checksum for those fields only. HTTP/1.1
    /// with keep-alive and pipelining, conditional requests, single ranges; SIGHUP reloads.
    /// Without --root it serves a small built-in demo site.
    Web(web_cmd::WebArgs),
    /// Load generators (the load side of the benchmarks).
    #[command(subcommand)]
    Gen(GenCmd),
    /// Create or remove the two-namespace veth test network (198.18.0.0/15 addresses).
    #[command(subcommand)]
    Testnet(TestnetCmd),
}

#[derive(Args, Clone)]
pub struct DataplaneArgs {
    /// Network interface to serve (required).
    #[arg(long, value_name = "IF")]
    iface: Option<String>,
    /// IPv4 address to serve (required). If the kernel has it on IF, sirocco shares it (ARP
    /// and ping stay with the kernel); otherwise sirocco owns it and answers ARP and ping itself.
    #[arg(long, value_name = "IPv4")]
    addr: Option<Ipv4Addr>,
    /// Number of NIC queues to serve, one engine thread each [default: all of IF's queues].
    #[arg(long, value_name = "N")]
    queues: Option<u32>,
    /// Largest receive batch per engine loop iteration.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=1024))]
    batch: u16,
    /// Print per-engine rates every second.
    #[arg(long)]
    stats: bool,
    /// Write what the dataplane receives and sends to this pcap file (tcpdump on the interface
    /// cannot see AF_XDP traffic).
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
    /// CPUs to pin the engines to, comma-separated, in queue order [default: queue i on CPU i].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    cpus: Option<Vec<usize>>,
    /// Use AF_XDP copy mode even if the driver supports zero-copy.
    #[arg(long)]
    copy: bool,
    /// Empty receive polls an engine makes, yielding the CPU between them (so the kernel's
    /// receive work, which in AF_XDP copy mode shares the core, can run), before it sleeps in
    /// poll() until traffic arrives [default: 2000 for UDP echo and gen, 0 for dns and TCP
    /// echo]. Measured on veth (bench/): the UDP echo under `sirocco gen` answers ~40% more at
    /// saturation with 2000; the DNS server under kxdpgun answers ~25% more with 0 and spends
    /// ~40% less CPU per answer; the TCP echo spends ~40% less CPU per message with 0.
    #[arg(long, value_name = "N")]
    idle_spins: Option<u32>,
    /// On exit, also write the counters as JSON to this file.
    #[arg(long, value_name = "FILE")]
    counters: Option<PathBuf>,
    /// Testing aid: drop this percentage of the frames received and of the frames sent, at
    /// random (counted as drop_impaired; frames sent in the same batch may be reordered), to
    /// exercise loss recovery against real peers.
    #[arg(long, value_name = "PERCENT", value_parser = parse_percent)]
    impair_loss: Option<f64>,
}

fn parse_percent(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a percentage between 0 and 100")),
    }
}

impl DataplaneArgs {
    fn options(&self, quiet: bool, default_spins: u32) -> Result<Options, String> {
        let iface = self.iface.clone().ok_or("--iface IF is required")?;
        let addr = self.addr.ok_or("--addr IPv4 is required")?;
        Ok(Options {
            iface,
            addr: addr.into(),
            queues: self.queues,
            batch: usize::from(self.batch),
            stats: self.stats,
            pcap: self.pcap.clone(),
            cpus: self.cpus.clone(),
            force_copy: self.copy,
            quiet,
            idle_spins: self.idle_spins.unwrap_or(default_spins),
            loss_ppm: self.impair_loss.map_or(0, |p| (p * 10_000.0) as u32),
            extra_frames: 0,
        })
    }
}

#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq)]
enum EchoProto {
    /// Datagrams back to their senders.
    Udp,
    /// Bytes back on their connections (sirocco's own TCP).
    Tcp,
}

#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq)]
enum TcpMode {
    /// Every byte back on its connection.
    Echo,
    /// Read and drop everything.
    Discard,
    /// Send a pattern to every connection, then close.
    Source,
}

#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq)]
enum TcpApi {
    /// Batched events and calls with handles and cookies.
    Channel,
    /// Callbacks per connection event.
    Callbacks,
}

#[derive(Args)]
struct EchoArgs {
    #[command(flatten)]
    dp: DataplaneArgs,
    /// Port to echo on.
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// Protocol to echo.
    #[arg(long, value_enum, default_value_t = EchoProto::Udp)]
    proto: EchoProto,
    /// With --proto tcp: echo the bytes, discard them (a sink), or send --source-bytes of a
    /// pattern (byte at offset i is i mod 251) to each connection and close.
    #[arg(long, value_enum, default_value_t = TcpMode::Echo)]
    tcp_mode: TcpMode,
    /// With --tcp-mode echo: the application interface the echo runs on — the level-2 channel
    /// (batched events and sendv, as IX and MegaPipe) or level-1 callbacks.
    #[arg(long, value_enum, default_value_t = TcpApi::Channel)]
    tcp_api: TcpApi,
    /// Bytes each connection gets in --tcp-mode source.
    #[arg(long, default_value_t = 100_000_000, value_name = "N")]
    source_bytes: u64,
    /// Stop after this many seconds [default: run until SIGINT/SIGTERM].
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
}

#[derive(Subcommand)]
enum GenCmd {
    /// Open-loop UDP load: sends at a target rate for a duration, counts replies, and reports
    /// achieved rates and round-trip latency percentiles (timestamps travel in the payload).
    Udp(GenUdpArgs),
    /// HTTP/1.1 load on sirocco's own TCP: keep-alive or a connection per request, closed or
    /// open loop; reports requests/s, Gb/s and latency percentiles. Needs an address the
    /// kernel does not have.
    Http(gen_http::GenHttpArgs),
}

#[derive(Args)]
struct GenUdpArgs {
    #[command(flatten)]
    dp: DataplaneArgs,
    /// Destination address.
    #[arg(long, value_name = "IPv4")]
    dst: Ipv4Addr,
    /// Destination port.
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// Target datagrams per second over all queues; 0 sends as fast as the rings take them.
    #[arg(long, default_value_t = 100_000)]
    rate: u64,
    /// UDP payload bytes (at least 20: timestamp, sequence, magic).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(20..=9000))]
    size: u16,
    /// Number of flows (distinct source ports).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=4096))]
    flows: u16,
    /// First source port.
    #[arg(long, default_value_t = 40000, value_parser = clap::value_parser!(u16).range(1024..))]
    src_port: u16,
    /// Seconds to send.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Seconds to wait for late replies after sending stops.
    #[arg(long, default_value_t = 0.5)]
    drain: f64,
    /// Also write the report as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

#[derive(Subcommand)]
enum TestnetCmd {
    /// Create namespaces NAME-srv and NAME-cli joined by veth NAME-s <-> NAME-c
    /// (198.18.0.1/24 and 198.18.0.2/24).
    Up {
        /// Prefix of the names (1-12 letters or digits).
        #[arg(long, default_value = "sx")]
        name: String,
        /// Queues per veth end.
        #[arg(long, default_value_t = 1)]
        queues: u32,
        /// Apply the benchmark placement: GRO + threaded NAPI pinned per side, static neighbours.
        #[arg(long)]
        bench: bool,
    },
    /// Remove the test network.
    Down {
        /// Prefix of the names.
        #[arg(long, default_value = "sx")]
        name: String,
    },
}

/// TCP limits with a secret of this run's own: the ISNs (RFC 6528) and SYN cookies are
/// keyed with it, and a fixed key would make them predictable.
pub(crate) fn tcp_limits() -> tcp::Limits {
    let mut b = [0u8; 16];
    // /dev/urandom does not block and is always there on Linux; if it cannot be read,
    // fall back to the clock and the process id, still different per run.
    if std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b)).is_err() {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        b[..16].copy_from_slice(&(t ^ (u128::from(std::process::id()) << 64)).to_le_bytes());
    }
    let w = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    tcp::Limits { secret: [w(0), w(8)], ..tcp::Limits::default() }
}

pub(crate) fn secs(v: f64, what: &str) -> Result<Duration, String> {
    if v.is_finite() && (0.0..=86_400.0 * 365.0).contains(&v) {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(format!("{what} must be a number of seconds between 0 and a year"))
    }
}

fn echo(a: EchoArgs) -> Result<(), String> {
    let until = match a.duration {
        Some(d) => Until::Elapsed(secs(d, "--duration")?),
        None => Until::Signal,
    };
    let port = a.port;
    // TCP echo sleeps at the first empty receive, as DNS does: measured in bench/tcp-echo, it
    // spends ~40% less CPU per message than yielding through 2000 empty polls.
    let opts = a.dp.options(false, if a.proto == EchoProto::Tcp { 0 } else { 2000 })?;
    if a.proto == EchoProto::Tcp {
        fn svc<T: tcp::App>(app: T, port: u16) -> engine::TcpService<T> {
            engine::TcpService::new(app, &[port], tcp::Config::default(), tcp_limits())
        }
        return match a.tcp_mode {
            TcpMode::Echo if a.tcp_api == TcpApi::Channel => run_channel_echo(&a, &opts, until),
            TcpMode::Echo => run_tcp(
                &a,
                &opts,
                until,
                "echo",
                |_| svc(echo::TcpEcho::default(), port),
                |e| format!("accepted {} closed {} echoed {} bytes", e.accepted, e.closed, e.echoed),
            ),
            TcpMode::Discard => run_tcp(
                &a,
                &opts,
                until,
                "discard",
                |_| svc(echo::TcpDiscard::default(), port),
                |e| format!("accepted {} closed {} received {} bytes", e.accepted, e.closed, e.received),
            ),
            TcpMode::Source => {
                let n = a.source_bytes;
                run_tcp(
                    &a,
                    &opts,
                    until,
                    "source",
                    |_| svc(echo::TcpSource::new(n), port),
                    |e| format!("accepted {} closed {} sent {} bytes", e.accepted, e.closed, e.sent),
                )
            }
        };
    }
    let out = dataplane::run(
        &opts,
        &[(Protocol::UDP, port)],
        |_| echo::UdpEcho::new(port),
        until,
        &format!("udp echo on port {port}"),
    )?;
    dataplane::print_counters(&out);
    if let Some(p) = &a.dp.counters {
        dataplane::write_counters_json(&out, p)?;
    }
    Ok(())
}

/// Runs a TCP service on the echo's port and prints its summary per engine.
fn run_tcp<T>(
    a: &EchoArgs,
    opts: &Options,
    until: Until,
    what: &str,
    make: impl FnMut(u32) -> engine::TcpService<T>,
    summary: fn(&T) -> String,
) -> Result<(), String>
where
    T: tcp::App + Send + 'static,
    T::Conn: Send,
{
    let port = a.port;
    let out = dataplane::run(opts, &[(Protocol::TCP, port)], make, until, &format!("tcp {what} on port {port}"))?;
    dataplane::print_counters(&out);
    for (q, (_, svc)) in out.engines.iter().enumerate() {
        let st = svc.ep.stats();
        println!(
            "engine {q} tcp: {}; retransmits {} rtos {} resets in/out {}/{} cookies {} timeouts {}",
            summary(&svc.app),
            st.retransmits,
            st.rtos,
            st.resets_in,
            st.resets_out,
            st.cookies_sent,
            st.timeouts
        );
    }
    if let Some(p) = &a.dp.counters {
        dataplane::write_counters_json(&out, p)?;
    }
    Ok(())
}

/// Send buffers of the channel echo: 2 KB each; 64 Ki of them (128 MiB of address space, touched
/// only as used) hold 8 KB messages on 10 000 connections at once.
const ECHO_BUFFERS: usize = 65_536;

/// Runs the TCP echo on the channel interface and prints its summary per engine.
fn run_channel_echo(a: &EchoArgs, opts: &Options, until: Until) -> Result<(), String> {
    let port = a.port;
    let make = |_| {
        engine::ChannelService::new(
            echo::ChannelEcho::default(),
            &[port],
            tcp::Config::default(),
            tcp_limits(),
            tcp::channel::Buffers::new(ECHO_BUFFERS, 2048),
        )
    };
    let out = dataplane::run(opts, &[(Protocol::TCP, port)], make, until, &format!("tcp echo on port {port}"))?;
    dataplane::print_counters(&out);
    for (q, (_, svc)) in out.engines.iter().enumerate() {
        let (st, ch, e) = (svc.ch.endpoint().stats(), svc.ch.stats(), &svc.server);
        println!(
            "engine {q} tcp: accepted {} closed {} echoed {} bytes; retransmits {} rtos {} resets in/out {}/{} \
             cookies {} timeouts {}; channel: batches {} events {} sendv {} (trimmed {}) recv copied {} bytes, \
             buffers exhausted {}",
            e.accepted,
            e.closed,
            e.echoed,
            st.retransmits,
            st.rtos,
            st.resets_in,
            st.resets_out,
            st.cookies_sent,
            st.timeouts,
            ch.batches,
            ch.events,
            ch.sendv,
            ch.sendv_trimmed,
            ch.recv_copied,
            svc.ch.buffers().exhausted
        );
    }
    if let Some(p) = &a.dp.counters {
        dataplane::write_counters_json(&out, p)?;
    }
    Ok(())
}

fn gen_udp(a: GenUdpArgs) -> Result<(), String> {
    let duration = secs(a.duration, "--duration")?;
    let drain = secs(a.drain, "--drain")?;
    if u32::from(a.src_port) + u32::from(a.flows) > 65536 {
        return Err("--src-port + --flows must stay below 65536".into());
    }
    let opts = a.dp.options(true, 2000)?;
    resolve_through_kernel(&opts, a.dst.into())?;
    let queues = a.dp.queues.unwrap_or(1).max(1);
    let opts = Options { queues: Some(queues), ..opts };
    let grants: Vec<_> = (0..a.flows).map(|i| (Protocol::UDP, a.src_port + i)).collect();
    let cfg = |q: u32| gen::GenConfig {
        dst: a.dst.into(),
        dst_port: a.port,
        rate: a.rate / u64::from(queues) + u64::from(q < (a.rate % u64::from(queues)) as u32),
        size: usize::from(a.size),
        flows: a.flows,
        src_port_base: a.src_port,
        duration_ns: duration.as_nanos() as u64,
    };
    let out =
        dataplane::run(&opts, &grants, |q| gen::UdpGen::new(cfg(q)), Until::Elapsed(duration + drain), "gen udp")?;
    if let Some(p) = &a.dp.counters {
        dataplane::write_counters_json(&out, p)?;
    }
    let report = gen_report::Report::new(&out, a.rate, usize::from(a.size), duration);
    print!("{}", report.text());
    for (q, x) in out.xsk.iter().enumerate() {
        println!("  q{q} {x}");
    }
    if let Some(path) = &a.json {
        std::fs::write(path, report.json()).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if report.sent == 0 {
        return Err(format!("nothing was sent: {}", report.why_nothing_sent()));
    }
    Ok(())
}

/// When the generator shares its address with the kernel, it sends to next hops from the
/// kernel's neighbour table; make sure the kernel has resolved the destination first.
fn resolve_through_kernel(opts: &Options, dst: wire::Ipv4Addr) -> Result<(), String> {
    io::iface::require_root().map_err(|e| e.to_string())?;
    let ifc = io::iface::Interface::lookup(&opts.iface).map_err(|e| e.to_string())?;
    if !ifc.kernel_has(opts.addr).map_err(|e| e.to_string())? {
        return Ok(()); // sirocco owns the address and resolves by itself
    }
    io::iface::kernel_resolve(&ifc.name, dst, Duration::from_secs(3))
        .map(|_| ())
        .ok_or_else(|| format!("the kernel could not resolve {dst} on {} (is it up and on this link?)", ifc.name))
}

fn main() {
    let cli = Cli::parse();
    signals::install();
    let r = match cli.cmd {
        Cmd::Echo(a) => echo(a),
        Cmd::Dns(a) => dns_cmd::run(a),
        Cmd::Web(a) => web_cmd::run(a),
        Cmd::Gen(GenCmd::Udp(a)) => gen_udp(a),
        Cmd::Gen(GenCmd::Http(a)) => gen_http::run(a),
        Cmd::Testnet(TestnetCmd::Up { name, queues, bench }) => io::iface::require_root()
            .map_err(|e| e.to_string())
            .and_then(|_| testnet::up(&name, queues, bench))
            .map(|_| {
                let n = testnet::names(&name);
                println!(
                    "test network {name}: {} ({}, {}) <-> {} ({}, {}), {queues} queue(s)",
                    n.srv_if,
                    n.srv_ns,
                    testnet::SERVER_ADDR,
                    n.cli_if,
                    n.cli_ns,
                    testnet::CLIENT_ADDR
                );
                println!(
                    "sirocco may also serve {} (its own) on the server side, {} on the client side",
                    testnet::SERVER_OWN_ADDR,
                    testnet::CLIENT_OWN_ADDR
                );
            }),
        Cmd::Testnet(TestnetCmd::Down { name }) => testnet::down(&name),
    };
    if let Err(e) = r {
        eprintln!("sirocco: error: {e}");
        std::process::exit(1);
    }
}
