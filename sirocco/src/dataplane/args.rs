//! The command-line options of every command that runs a dataplane.

use super::Options;
use clap::Args;
use std::net::IpAddr;
use std::path::PathBuf;

/// The options every dataplane command takes.
#[derive(Args, Clone)]
pub struct DataplaneArgs {
    /// Network interface to serve (required).
    #[arg(long, value_name = "IF")]
    pub iface: Option<String>,
    /// Address to serve (required), IPv4 or IPv6; give it twice, once per family, to serve
    /// both. If the kernel has it on IF, sirocco shares it (ARP or neighbour discovery, and
    /// ping, stay with the kernel); otherwise sirocco owns it and answers them itself.
    #[arg(long, value_name = "ADDR")]
    pub addr: Vec<IpAddr>,
    /// Number of NIC queues to serve, one engine thread each [default: all of IF's queues].
    #[arg(long, value_name = "N")]
    pub queues: Option<u32>,
    /// Largest receive batch per engine loop iteration.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub batch: u16,
    /// Print per-engine rates every second.
    #[arg(long)]
    pub stats: bool,
    /// Write what the dataplane receives and sends to this pcap file (tcpdump on the interface
    /// cannot see AF_XDP traffic).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// CPUs to pin the engines to, comma-separated, in queue order; each must be one the
    /// process may run on [default: queue i on the i-th CPU of the process's affinity, as
    /// taskset or a cgroup cpuset leaves it].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub cpus: Option<Vec<usize>>,
    /// Use AF_XDP copy mode even if the driver supports zero-copy.
    #[arg(long)]
    pub copy: bool,
    /// Empty receive polls an engine makes, yielding the CPU between them (so the kernel's
    /// receive work, which in AF_XDP copy mode shares the core, can run), before it sleeps in
    /// poll() until traffic arrives [default: 0 for the servers, 2000 for gen udp]. Measured
    /// on veth with each side's NAPI thread on its own core (bench/udp-echo, 2026-11-27): the
    /// UDP echo spends 4-5x less server-core CPU per reply at 30-200 k/s with 0 than with 2000
    /// (which spins the core through every gap), and answers 1.08x more under a flood; the
    /// DNS server under kxdpgun answers ~25% more with 0; the TCP echo spends ~40% less CPU
    /// per message with 0. Spinning pays where the kernel's receive work runs on another core.
    #[arg(long, value_name = "N")]
    pub idle_spins: Option<u32>,
    /// Preferred busy polling: the kernel's receive work for a queue runs in its engine's own
    /// system calls while the engine is busy, with the interface's interrupts deferred
    /// (napi_defer_hard_irqs and gro_flush_timeout are set where they have the kernel's
    /// defaults, and put back at exit); auto turns it on where the kernel allows it, with one
    /// warning line where not [default: auto]. Config key busy_poll.
    #[arg(long, value_enum, value_name = "off|on|auto")]
    pub busy_poll: Option<super::busy_poll::BusyPollMode>,
    /// Serve the counters of the engines, the XDP filter and the application as Prometheus
    /// metrics over HTTP at /metrics on this kernel socket: PORT (on 127.0.0.1), ADDR:PORT or
    /// [ADDR]:PORT. Config key metrics.
    #[arg(long, value_name = "[ADDR:]PORT")]
    pub metrics: Option<String>,
    /// The control socket `sirocco top` and `sirocco ss` talk to [default:
    /// /run/sirocco/WHAT.PID.sock, when that folder can be written].
    #[arg(long, value_name = "PATH")]
    pub control_socket: Option<PathBuf>,
    /// On exit, also write the counters as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub counters: Option<PathBuf>,
    /// Testing aid: drop this percentage of the frames received and of the frames sent, at
    /// random (counted as drop_impaired; frames sent in the same batch may be reordered), to
    /// exercise loss recovery against real peers.
    #[arg(long, value_name = "PERCENT", value_parser = parse_percent)]
    pub impair_loss: Option<f64>,
    /// Ask the `sirocco ctl` daemon listening on this socket for the flow instead of taking
    /// the interface: the daemon hands over a virtual NIC of its own (no root needed; --iface
    /// is then the daemon's).
    #[arg(long, value_name = "PATH")]
    pub ctl: Option<PathBuf>,
    /// The name this server's grant goes by in `sirocco ctl status` and `revoke`
    /// [default: COMMAND-PORT].
    #[arg(long, value_name = "NAME", requires = "ctl")]
    pub ctl_app: Option<String>,
    /// With --ctl: the transmit rate to ask for, in packets per second (enforced by the daemon).
    #[arg(long, value_name = "N", requires = "ctl")]
    pub ctl_pps: Option<u64>,
    /// With --ctl: the transmit rate to ask for, in bits per second (enforced by the daemon).
    #[arg(long, value_name = "N", requires = "ctl")]
    pub ctl_bps: Option<u64>,
    /// Congestion control of the server's TCP connections: cubic (RFC 9438), newreno (RFC
    /// 5681/6582), or bbr (BBR v1: paced, from a model of the path's bandwidth and round
    /// trip; it keeps its rate through random loss, where the others fall to
    /// MSS/RTT·1.22/√p, and is what CDNs run).
    #[arg(long, value_name = "ALGO", default_value = "cubic")]
    pub tcp_cc: tcp::CcKind,
    /// Receive-window autotuning bound of the server's TCP connections, in bytes: windows
    /// start at 256 KiB and grow with the measured bandwidth-delay product up to this.
    /// Default: 2 MiB for store and kv (they receive bulk data), off for the others.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(65_536..=1 << 30))]
    pub tcp_rcv_buf_max: Option<u32>,
    /// Pace cubic and newreno senders at cwnd/RTT (2x in slow start, 1.2x after), as Linux's
    /// internal pacing; bbr always paces. Off by default: in the simulator it cost CUBIC
    /// goodput on a drop-tail queue of one BDP (HyStart sees the queue later when paced).
    #[arg(long)]
    pub tcp_pacing: bool,
}

fn parse_percent(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a percentage between 0 and 100")),
    }
}

impl DataplaneArgs {
    /// The options, once `--iface` and `--addr` are known (from the command line or a config
    /// file); `default_spins` is the command's own idle policy.
    pub fn options(&self, quiet: bool, default_spins: u32) -> Result<Options, String> {
        let ctl = self.ctl.clone().map(|socket| super::CtlOptions {
            socket,
            app: self.ctl_app.clone(),
            pps: self.ctl_pps,
            bps: self.ctl_bps,
        });
        // Behind the daemon the interface is the daemon's business.
        if let Some(c) = &self.cpus {
            io::iface::check_cpus(c).map_err(|e| format!("--cpus: {e}"))?;
        }
        let iface = match (&self.iface, &ctl) {
            (Some(i), _) => i.clone(),
            (None, Some(_)) => String::new(),
            (None, None) => return Err("--iface IF is required".into()),
        };
        let (addr, addr6) = split_families(&self.addr)?;
        Ok(Options {
            iface,
            addr,
            addr6,
            queues: self.queues,
            batch: usize::from(self.batch),
            stats: self.stats,
            pcap: self.pcap.clone(),
            cpus: self.cpus.clone(),
            force_copy: self.copy,
            quiet,
            idle_spins: self.idle_spins.unwrap_or(default_spins),
            busy_poll: self.busy_poll.unwrap_or_default(),
            loss_ppm: self.impair_loss.map_or(0, |p| (p * 10_000.0) as u32),
            extra_frames: 0,
            lend: 0,
            ctl,
            metrics: self.metrics.as_deref().map(super::metrics::parse_addr).transpose()?,
            control: self.control_socket.clone(),
            tcp: tcp::Config {
                cc: self.tcp_cc,
                rcv_buf_max: self.tcp_rcv_buf_max,
                pacing: self.tcp_pacing,
                ..tcp::Config::default()
            },
            driver_answers: None,
        })
    }
}

/// The IPv4 and the IPv6 address among `addrs`: at least one, at most one of each.
fn split_families(addrs: &[IpAddr]) -> Result<(Option<wire::Ipv4Addr>, Option<wire::Ipv6Addr>), String> {
    let (mut v4, mut v6) = (None, None);
    for a in addrs {
        match a {
            IpAddr::V4(a) if v4.is_none() => v4 = Some((*a).into()),
            IpAddr::V6(a) if v6.is_none() => v6 = Some((*a).into()),
            _ => return Err(format!("--addr {a}: one address per family (one IPv4, one IPv6) is served")),
        }
    }
    if let Some(a) =
        v6.filter(|a: &wire::Ipv6Addr| a.is_multicast() || a.is_link_local() || *a == wire::Ipv6Addr::UNSPECIFIED)
    {
        return Err(format!("--addr {a}: serve a unicast address of global scope (not multicast, link-local or ::)"));
    }
    if v4.is_none() && v6.is_none() {
        return Err("--addr ADDR is required".into());
    }
    Ok((v4, v6))
}

#[cfg(test)]
mod tests {
    use super::split_families;

    fn split(a: &[&str]) -> Result<(Option<String>, Option<String>), String> {
        let v: Vec<std::net::IpAddr> = a.iter().map(|s| s.parse().unwrap()).collect();
        split_families(&v).map(|(x, y)| (x.map(|a| a.to_string()), y.map(|a| a.to_string())))
    }

    #[test]
    fn one_address_per_family() {
        assert_eq!(split(&["198.18.0.10"]), Ok((Some("198.18.0.10".into()), None)));
        assert_eq!(split(&["2001:2::10", "198.18.0.10"]), Ok((Some("198.18.0.10".into()), Some("2001:2::10".into()))));
        assert!(split(&["198.18.0.10", "198.18.0.11"]).unwrap_err().contains("one address per family"));
        assert!(split(&["fe80::1"]).unwrap_err().contains("link-local"));
        assert!(split(&["ff02::1"]).unwrap_err().contains("multicast"));
        assert!(split(&[]).unwrap_err().contains("required"));
    }
}
