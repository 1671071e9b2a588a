//! `sirocco gen udp`: open-loop UDP load at a target rate, with the achieved rates, loss and
//! round-trip latency percentiles (timestamps travel in the payload), as text and JSON.

use super::load::{share, LoadArgs};
use super::udp_report::Report;
use crate::dataplane::{self, report, DataplaneArgs, Options, Until};
use clap::Args;
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
