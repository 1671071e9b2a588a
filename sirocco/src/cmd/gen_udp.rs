//! `sirocco gen udp`: open-loop UDP load at a target rate, with the achieved rates, loss and
//! round-trip latency percentiles (timestamps travel in the payload), as text and JSON.

use super::load::{share, LoadArgs, Percentiles};
use crate::dataplane::{self, report, DataplaneArgs, Options, Outcome, Until};
use clap::Args;
use gen::{Histogram, UdpGen};
use serde::Serialize;
use std::net::IpAddr;
use std::time::Duration;
use wire::Protocol;

#[derive(Args)]
pub struct GenUdpArgs {
    #[command(flatten)]
    pub dp: DataplaneArgs,
    /// Destination address, IPv4 or IPv6 (--addr needs one of the same family).
    #[arg(long, value_name = "ADDR")]
    pub dst: IpAddr,
    /// Destination port.
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// Target datagrams per second over all queues; 0 sends as fast as the rings take them.
    #[arg(long, default_value_t = 100_000)]
    pub rate: u64,
    /// UDP payload bytes (at least 20: timestamp, sequence, magic).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(20..=9000))]
    pub size: u16,
    /// Number of flows (distinct source ports).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub flows: u16,
    /// First source port.
    #[arg(long, default_value_t = 40000, value_parser = clap::value_parser!(u16).range(1024..))]
    pub src_port: u16,
    #[command(flatten)]
    pub load: LoadArgs,
}

/// Runs the generator and prints its report.
pub fn run(a: GenUdpArgs) -> Result<(), String> {
    let (duration, drain) = a.load.times()?;
    if u32::from(a.src_port) + u32::from(a.flows) > 65536 {
        return Err("--src-port + --flows must stay below 65536".into());
    }
    let opts = a.dp.options(true, 2000)?;
    resolve_through_kernel(&opts, a.dst)?;
    let queues = a.dp.queues.unwrap_or(1).max(1);
    let opts = Options { queues: Some(queues), ..opts };
    let grants: Vec<_> = (0..a.flows).map(|i| (Protocol::UDP, a.src_port + i)).collect();
    let cfg = |q: u32| gen::GenConfig {
        dst: a.dst.into(),
        dst_port: a.port,
        rate: share(a.rate, queues, q),
        size: usize::from(a.size),
        flows: a.flows,
        src_port_base: a.src_port,
        duration: duration.into(),
    };
    let out =
        dataplane::run(&opts, &grants, |q| gen::UdpGen::new(cfg(q)), Until::Elapsed(duration + drain), "gen udp")?;
    if let Some(p) = &a.dp.counters {
        report::write_counters_json(&out, p)?;
    }
    let r = Report::new(&out, a.rate, usize::from(a.size), duration);
    print!("{}", r.text());
    for (q, x) in out.xsk.iter().enumerate() {
        println!("  q{q} {x}");
    }
    if let Some(path) = &a.load.json {
        report::write_json(path, &r.json())?;
    }
    if r.sent == 0 {
        return Err(format!("nothing was sent: {}", r.why_nothing_sent()));
    }
    Ok(())
}

/// When the generator shares its address with the kernel, it sends to next hops from the
/// kernel's neighbour table; make sure the kernel has resolved the destination first. Over
/// IPv6 the generator resolves by itself, from an address of its own.
fn resolve_through_kernel(opts: &Options, dst: IpAddr) -> Result<(), String> {
    io::iface::require_root().map_err(|e| e.to_string())?;
    let ifc = io::iface::Interface::lookup(&opts.iface).map_err(|e| e.to_string())?;
    let dst = match dst {
        IpAddr::V4(d) => wire::Ipv4Addr::from(d),
        IpAddr::V6(d) => {
            let Some(local) = opts.addr6 else {
                return Err(format!("--dst {d} is IPv6: give an IPv6 --addr too"));
            };
            if ifc.kernel_has6(local).map_err(|e| e.to_string())? {
                return Err(format!(
                    "--addr {local} is the kernel's on {}: gen udp over IPv6 needs an address of its own (it resolves neighbours itself)",
                    ifc.name
                ));
            }
            return Ok(());
        }
    };
    let local = opts.addr4("gen udp to an IPv4 --dst")?;
    if !ifc.kernel_has(local).map_err(|e| e.to_string())? {
        return Ok(()); // sirocco owns the address and resolves by itself
    }
    io::iface::kernel_resolve(&ifc.name, dst, Duration::from_secs(3))
        .map(|_| ())
        .ok_or_else(|| format!("the kernel could not resolve {dst} on {} (is it up and on this link?)", ifc.name))
}

/// What a generator run measured, summed over engines.
struct Report {
    offered_rate: u64,
    size: usize,
    sent: u64,
    received: u64,
    behind: u64,
    foreign: u64,
    unresolved: u64,
    send_secs: f64,
    rtt: Histogram,
    tx_ring_full: u64,
    engines: usize,
}

/// The report as JSON.
#[derive(Serialize)]
struct ReportJson {
    offered_pps: u64,
    payload_bytes: usize,
    engines: usize,
    sent: u64,
    received: u64,
    tx_pps: f64,
    rx_pps: f64,
    loss: f64,
    behind: u64,
    tx_ring_full: u64,
    foreign: u64,
    send_secs: f64,
    rtt_ns: Percentiles,
}

impl Report {
    fn new(out: &Outcome<UdpGen>, offered_rate: u64, size: usize, duration: Duration) -> Report {
        let mut r = Report {
            offered_rate,
            size,
            sent: 0,
            received: 0,
            behind: 0,
            foreign: 0,
            unresolved: 0,
            send_secs: 0.0,
            rtt: Histogram::default(),
            tx_ring_full: out.total().dropped(engine::DropReason::TxRingFull),
            engines: out.engines.len(),
        };
        let (mut first, mut last) = (engine::Instant::from_nanos(u64::MAX), engine::Instant::ZERO);
        for g in out.apps() {
            r.sent += g.sent;
            r.received += g.received;
            r.behind += g.behind;
            r.foreign += g.foreign;
            r.unresolved += g.unresolved;
            r.rtt.merge(&g.rtt);
            if g.sent > 0 {
                first = first.min(g.first_send);
                last = last.max(g.last_send);
            }
        }
        r.send_secs = if last > first { last.since(first).as_secs_f64() } else { duration.as_secs_f64() };
        r
    }

    /// Sent datagrams per second over the sending period (TX-ring-full drops excluded).
    fn tx_rate(&self) -> f64 {
        (self.sent - self.tx_ring_full.min(self.sent)) as f64 / self.send_secs.max(1e-9)
    }

    /// Replies per second over the sending period.
    fn rx_rate(&self) -> f64 {
        self.received as f64 / self.send_secs.max(1e-9)
    }

    fn loss(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            1.0 - self.received as f64 / self.sent as f64
        }
    }

    fn why_nothing_sent(&self) -> &'static str {
        if self.unresolved > 0 {
            "the destination's MAC address never resolved (is the destination up and on this link?)"
        } else {
            "no TX room (is the interface up?)"
        }
    }

    fn text(&self) -> String {
        format!(
            "gen udp: {} engine(s), offered {} pps, payload {} B\n  sent {} ({:.0} pps), received {} ({:.0} pps), loss {:.3}%\n  behind schedule {}, tx ring full {}, foreign {}\n  rtt us: {}\n",
            self.engines,
            self.offered_rate,
            self.size,
            self.sent,
            self.tx_rate(),
            self.received,
            self.rx_rate(),
            self.loss() * 100.0,
            self.behind,
            self.tx_ring_full,
            self.foreign,
            Percentiles::of(&self.rtt).micros()
        )
    }

    fn json(&self) -> ReportJson {
        ReportJson {
            offered_pps: self.offered_rate,
            payload_bytes: self.size,
            engines: self.engines,
            sent: self.sent,
            received: self.received,
            tx_pps: self.tx_rate(),
            rx_pps: self.rx_rate(),
            loss: self.loss(),
            behind: self.behind,
            tx_ring_full: self.tx_ring_full,
            foreign: self.foreign,
            send_secs: self.send_secs,
            rtt_ns: Percentiles::of(&self.rtt),
        }
    }
}
