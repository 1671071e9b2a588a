//! `--bench`: the placement BENCHMARKING.md asks for (GRO on, threaded NAPI pinned per side,
//! static neighbours, so no ARP or neighbour discovery runs during a measurement).

use super::*;

pub(super) fn placement(n: &Names) -> Result<(), String> {
    for (nsn, ifn) in [(&n.srv_ns, &n.srv_if), (&n.cli_ns, &n.cli_if)] {
        ns(nsn, &["ethtool", "-K", ifn, "gro", "on"])?;
        ns(nsn, &["sh", "-c", &format!("echo 1 > /sys/class/net/{ifn}/threaded")])?;
    }
    // Let the NAPI threads appear, then pin: server side to CPU 1, client side to CPU 0.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let ncpu = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let (srv_cpu, cli_cpu) = if ncpu > 1 { ("1", "0") } else { ("0", "0") };
    for (ifn, cpu) in [(&n.srv_if, srv_cpu), (&n.cli_if, cli_cpu)] {
        sh(&["sh", "-c", &format!("for p in $(pgrep -f 'napi/{ifn}-'); do taskset -pc {cpu} $p >/dev/null; done")])?;
    }
    let mac = |nsn: &str, ifn: &str| -> Result<String, String> {
        let out = Command::new("ip")
            .args(["netns", "exec", nsn, "cat", &format!("/sys/class/net/{ifn}/address")])
            .output()
            .map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let smac = mac(&n.srv_ns, &n.srv_if)?;
    let cmac = mac(&n.cli_ns, &n.cli_if)?;
    for a in [SERVER_ADDR, SERVER_OWN_ADDR] {
        ns(&n.cli_ns, &["ip", "neigh", "replace", a, "lladdr", &smac, "dev", &n.cli_if, "nud", "permanent"])?;
    }
    for a in [CLIENT_ADDR, CLIENT_OWN_ADDR] {
        ns(&n.srv_ns, &["ip", "neigh", "replace", a, "lladdr", &cmac, "dev", &n.srv_if, "nud", "permanent"])?;
    }
    for a in [SERVER_ADDR6, SERVER_OWN_ADDR6] {
        ns(&n.cli_ns, &["ip", "-6", "neigh", "replace", a, "lladdr", &smac, "dev", &n.cli_if, "nud", "permanent"])?;
    }
    for a in [CLIENT_ADDR6, CLIENT_OWN_ADDR6] {
        ns(&n.srv_ns, &["ip", "-6", "neigh", "replace", a, "lladdr", &cmac, "dev", &n.srv_if, "nud", "permanent"])?;
    }
    Ok(())
}
