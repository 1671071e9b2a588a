//! `sirocco echo`: UDP datagrams (Arrakis's echo) or TCP bytes (the IX/MegaPipe echo) back to
//! their senders; TCP also as a sink or a source, on the channel or the callbacks.

use crate::dataplane::Outcome;
use crate::serve::config::NoOwnKeys;
use crate::serve::{Defaults, ServeArgs};
use crate::tcp_limits::{tcp_limits, ConnLimit};
use clap::Args;
use echo::report::{self, Tally};
use engine::{ChannelService, TcpService};
use wire::Protocol;

#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq)]
pub enum EchoProto {
    /// Datagrams back to their senders.
    Udp,
    /// Bytes back on their connections (sirocco's own TCP).
    Tcp,
}

#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq)]
pub enum TcpMode {
    /// Every byte back on its connection.
    Echo,
    /// Read and drop everything.
    Discard,
    /// Send a pattern to every connection, then close.
    Source,
}

#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq)]
pub enum TcpApi {
    /// Batched events and calls with handles and cookies.
    Channel,
    /// Callbacks per connection event.
    Callbacks,
}

#[derive(Args)]
pub struct EchoArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    /// Protocol to echo.
    #[arg(long, value_enum, default_value_t = EchoProto::Udp)]
    pub proto: EchoProto,
    /// With --proto tcp: echo the bytes, discard them (a sink), or send --source-bytes of a
    /// pattern (byte at offset i is i mod 251) to each connection and close.
    #[arg(long, value_enum, default_value_t = TcpMode::Echo)]
    pub tcp_mode: TcpMode,
    /// With --tcp-mode echo: the application interface the echo runs on — the level-2 channel
    /// (batched events and sendv, as IX and MegaPipe) or level-1 callbacks.
    #[arg(long, value_enum, default_value_t = TcpApi::Channel)]
    pub tcp_api: TcpApi,
    /// Bytes each connection gets in --tcp-mode source.
    #[arg(long, default_value_t = 100_000_000, value_name = "N")]
    pub source_bytes: u64,
    /// With --proto tcp: connections each engine holds at most (every state but TIME-WAIT);
    /// a SYN beyond it is reset and counted (`sirocco_tcp_table_full_total`). The
    /// connection table and timers are sized for it at start.
    #[arg(long, default_value_t = 65_536, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=16_777_216))]
    pub max_conns: u64,
    /// With --proto tcp: size --max-conns from this many MiB per engine instead, as many
    /// connections as fit at what an idle one holds with the --tcp-mode and --tcp-api given
    /// (the start line says how many and at what size). Not with --max-conns
    #[arg(long, value_name = "MIB", conflicts_with = "max_conns")]
    pub conn_memory: Option<u64>,
}

/// Send buffers of the channel echo: 2 KB each; 64 Ki of them (128 MiB of address space, touched
/// only as used) hold 8 KB messages on 10 000 connections at once.
const ECHO_BUFFERS: usize = 65_536;

/// Runs the echo server.
pub fn run(a: EchoArgs) -> Result<(), String> {
    let tcp = a.proto == EchoProto::Tcp;
    // Both echoes sleep at the first empty receive, as DNS does: measured in bench/tcp-echo
    // and bench/udp-echo, yielding through 2000 empty polls costs the TCP echo ~40% more CPU
    // per message and the UDP echo 4-5x more per reply at ordinary loads (and 8% of its rate
    // under a flood).
    let s = a.serve.setup::<NoOwnKeys>(Defaults { port: 7, idle_spins: 0 })?;
    let port = s.port;
    let proto = if tcp { "tcp" } else { "udp" };
    let each = match a.tcp_mode {
        TcpMode::Echo if a.tcp_api == TcpApi::Channel => echo::ChannelEcho::bytes_per_connection(),
        TcpMode::Echo => tcp::Endpoint::<echo::TcpEcho>::bytes_per_connection(),
        TcpMode::Discard => tcp::Endpoint::<echo::TcpDiscard>::bytes_per_connection(),
        TcpMode::Source => tcp::Endpoint::<echo::TcpSource>::bytes_per_connection(),
    };
    let given =
        ConnLimit { max_conns: a.conn_memory.is_none().then_some(a.max_conns as usize), conn_memory: a.conn_memory };
    let max_conns = if tcp { given.resolve(each, 65_536, "per engine")? } else { 0 };
    if s.check_only(&format!("{proto} echo on port {port}"))? {
        return Ok(());
    }
    if !tcp {
        s.run(&format!("udp echo on port {port}"), &[(Protocol::UDP, port)], |_| echo::UdpEcho::new(port), None)?;
        return Ok(());
    }
    let grants = [(Protocol::TCP, port)];
    let cfg = s.opts.tcp;
    let limits = cfg.limits(tcp_limits()).for_conns(max_conns);
    fn svc<T: tcp::App + Tally>(app: T, port: u16, cfg: tcp::Config, limits: tcp::Limits) -> TcpService<T> {
        TcpService::new(app, &[port], cfg, limits).with_metrics(report::metrics::<T>)
    }
    match a.tcp_mode {
        TcpMode::Echo if a.tcp_api == TcpApi::Channel => {
            let make = |_| {
                let bufs = tcp::channel::Buffers::new(ECHO_BUFFERS, 2048);
                ChannelService::new(echo::ChannelEcho::default(), &[port], cfg, limits, bufs)
                    .with_metrics(report::metrics)
            };
            let out = s.run(&format!("tcp echo on port {port}"), &grants, make, None)?;
            print_lines(&out);
        }
        TcpMode::Echo => {
            let out = s.run(
                &format!("tcp echo on port {port}"),
                &grants,
                |_| svc(echo::TcpEcho::default(), port, cfg, limits),
                None,
            )?;
            print_lines(&out);
        }
        TcpMode::Discard => {
            let make = |_| svc(echo::TcpDiscard::default(), port, cfg, limits);
            let out = s.run(&format!("tcp discard on port {port}"), &grants, make, None)?;
            print_lines(&out);
        }
        TcpMode::Source => {
            let n = a.source_bytes;
            let make = |_| svc(echo::TcpSource::new(n), port, cfg, limits);
            let out = s.run(&format!("tcp source on port {port}"), &grants, make, None)?;
            print_lines(&out);
        }
    }
    Ok(())
}

/// Each engine's exit line, read from the samples its metrics endpoint publishes.
fn print_lines<S: engine::Service>(out: &Outcome<S>) {
    for (q, svc) in out.apps().enumerate() {
        let mut s = engine::Samples::default();
        svc.metrics(&mut s);
        println!("{}", report::exit_line(q, &s));
    }
}
