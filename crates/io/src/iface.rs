//! Facts about a network interface, read from the kernel (control plane only, never per packet).

use crate::sys;
use std::io;
use wire::{Ipv4Addr, Ipv6Addr, MacAddr};

/// What sirocco needs to know about the interface it serves.
#[derive(Debug, Clone)]
pub struct Interface {
    /// Name, e.g. `eth0`.
    pub name: String,
    /// Kernel index.
    pub index: u32,
    /// Hardware address.
    pub mac: MacAddr,
    /// MTU in bytes (IP packet size).
    pub mtu: usize,
    /// Number of receive queues.
    pub rx_queues: u32,
}

impl Interface {
    /// Looks the interface up; the error names what is missing.
    pub fn lookup(name: &str) -> io::Result<Interface> {
        let index = sys::if_index(name)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no network interface named {name:?}")))?;
        let base = format!("/sys/class/net/{name}");
        let mac_text = std::fs::read_to_string(format!("{base}/address"))?;
        let mac = MacAddr::parse(mac_text.trim())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("{name} has no Ethernet address")))?;
        let mtu = std::fs::read_to_string(format!("{base}/mtu"))?.trim().parse().unwrap_or(1500);
        let rx_queues = std::fs::read_dir(format!("{base}/queues"))
            .map(|d| d.filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().starts_with("rx-")).count())
            .unwrap_or(1)
            .max(1) as u32;
        Ok(Interface { name: name.to_string(), index, mac, mtu, rx_queues })
    }

    /// True if the kernel has `addr` configured on this interface (then the kernel owns ARP and
    /// ICMP for it and sirocco shares the address).
    pub fn kernel_has(&self, addr: Ipv4Addr) -> io::Result<bool> {
        Ok(sys::ip_addrs(&self.name)?.0.contains(&addr.0))
    }

    /// True if the kernel has the IPv6 `addr` on this interface (then the kernel owns
    /// neighbour discovery and ICMPv6 for it, duplicate address detection included).
    pub fn kernel_has6(&self, addr: Ipv6Addr) -> io::Result<bool> {
        Ok(sys::ip_addrs(&self.name)?.1.contains(&addr.0))
    }

    /// The kernel's IPv4 addresses on this interface.
    pub fn kernel_addrs(&self) -> io::Result<Vec<Ipv4Addr>> {
        Ok(sys::ip_addrs(&self.name)?.0.into_iter().map(Ipv4Addr).collect())
    }
}

/// The kernel's neighbour (ARP) entry for `addr` on `iface`, if complete.
pub fn kernel_neighbour(iface: &str, addr: Ipv4Addr) -> Option<MacAddr> {
    let text = std::fs::read_to_string("/proc/net/arp").ok()?;
    parse_proc_arp(&text, iface, addr)
}

/// Makes the kernel resolve `addr` (by sending one datagram to its discard port through an
/// ordinary socket) and waits up to `timeout` for the neighbour entry.
pub fn kernel_resolve(iface: &str, addr: Ipv4Addr, timeout: std::time::Duration) -> Option<MacAddr> {
    if let Some(m) = kernel_neighbour(iface, addr) {
        return Some(m);
    }
    let sock = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    let deadline = std::time::Instant::now() + timeout;
    let mut next_send = std::time::Instant::now();
    while std::time::Instant::now() < deadline {
        if std::time::Instant::now() >= next_send {
            let _ = sock.send_to(b"sirocco resolve", (std::net::Ipv4Addr::from(addr), 9));
            next_send += std::time::Duration::from_millis(500);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        if let Some(m) = kernel_neighbour(iface, addr) {
            return Some(m);
        }
    }
    None
}

fn parse_proc_arp(text: &str, iface: &str, addr: Ipv4Addr) -> Option<MacAddr> {
    let want = addr.to_string();
    text.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        // IP address, HW type, Flags, HW address, Mask, Device; flag 0x2 means complete.
        if f.len() >= 6 && f[0] == want && f[5] == iface {
            let flags = u32::from_str_radix(f[2].trim_start_matches("0x"), 16).ok()?;
            if flags & 2 != 0 {
                return MacAddr::parse(f[3]);
            }
        }
        None
    })
}

/// Checks privilege before touching the kernel, for a clear error instead of EPERM deep down:
/// root, or the capabilities the dataplane uses (a service unit gives a user just those).
pub fn require_root() -> io::Result<()> {
    if sys::is_root() || has_dataplane_caps() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "sirocco needs root (CAP_NET_ADMIN, CAP_BPF, CAP_NET_RAW) to attach XDP and open AF_XDP sockets",
        ))
    }
}

/// CAP_NET_ADMIN (12) and CAP_NET_RAW (13) and CAP_BPF (39) — or CAP_SYS_ADMIN (21), which
/// older kernels ask for BPF — in the effective set (from /proc/self/status).
fn has_dataplane_caps() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    let has = |bit: u32| eff & (1u64 << bit) != 0;
    has(12) && has(13) && (has(39) || has(21))
}

/// Moves the calling thread into a network namespace of its own, which lives as long as the
/// thread (and whatever it made there) does: `sirocco ctl` keeps its applications'
/// interfaces there, so they go with the daemon.
pub fn enter_private_netns() -> io::Result<()> {
    sys::unshare_net()
}

/// Moves the calling thread into the network namespace at `path` (`/run/netns/NAME`, or a
/// thread's `/proc/.../ns/net`). Its `/sys/class/net` stays the one mounted where it was.
pub fn enter_netns(path: &str) -> io::Result<()> {
    let ns: std::os::fd::OwnedFd = std::fs::File::open(path)?.into();
    sys::setns_net(&ns)
}

/// The path of the calling thread's network namespace, as `ip ... netns PATH` takes it.
pub fn thread_netns_path() -> String {
    format!("/proc/{}/task/{}/ns/net", std::process::id(), sys::thread_id())
}

/// Whether `name` is a veth device (its driver, as `ethtool -i` says; false if it cannot tell).
pub fn is_veth(name: &str) -> bool {
    sys::if_driver(name).is_some_and(|d| d == "veth")
}

/// The index of interface `name` in the calling thread's network namespace.
pub fn index_of(name: &str) -> Option<u32> {
    sys::if_index(name)
}

/// Pins the calling thread to `cpu`.
pub fn pin_thread(cpu: usize) -> io::Result<()> {
    sys::pin_to_cpu(cpu)
}

/// Number of CPUs the process may run on.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// The CPUs the calling thread may run on (the affinity it inherited: taskset, a cgroup
/// cpuset), ascending; all CPUs if the kernel will not say.
pub fn allowed_cpus() -> Vec<usize> {
    match sys::allowed_cpus() {
        Ok(v) if !v.is_empty() => v,
        _ => (0..cpus()).collect(),
    }
}

/// `wanted` CPUs checked against the ones this thread may run on: one error line naming the
/// first that is not allowed.
pub fn check_cpus(wanted: &[usize]) -> Result<(), String> {
    let allowed = allowed_cpus();
    match wanted.iter().find(|c| !allowed.contains(c)) {
        None => Ok(()),
        Some(c) => Err(format!(
            "CPU {c} is not among the CPUs this process may run on ({}; see taskset or the cgroup's cpuset)",
            allowed.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_arp() {
        let t = "IP address       HW type     Flags       HW address            Mask     Device\n\
                 198.18.0.1       0x1         0x2         02:aa:00:00:00:01     *        sxc0\n\
                 198.18.0.9       0x1         0x0         00:00:00:00:00:00     *        sxc0\n";
        assert_eq!(parse_proc_arp(t, "sxc0", Ipv4Addr([198, 18, 0, 1])), MacAddr::parse("02:aa:00:00:00:01"));
        assert_eq!(parse_proc_arp(t, "sxc0", Ipv4Addr([198, 18, 0, 9])), None);
        assert_eq!(parse_proc_arp(t, "other", Ipv4Addr([198, 18, 0, 1])), None);
    }
}
