//! `sirocco testnet`: two network namespaces joined by a veth pair, for tests, the demo and
//! the benchmarks. Addresses come from the benchmarking ranges only: 198.18.0.0/15 (RFC 2544)
//! and 2001:2::/48 (RFC 5180), never a prefix of anyone's.
//!
//! ```text
//!   namespace NAME-srv                      namespace NAME-cli
//!   NAME-s  198.18.0.1/24  <-- veth -->  NAME-c  198.18.0.2/24
//!           2001:2::1/64                         2001:2::2/64
//! ```
//! Sirocco can serve 198.18.0.1 or 2001:2::1 (shared with the kernel) or 198.18.0.10 and
//! 2001:2::10 (its own: it answers ARP, neighbour discovery and ping); the generator can use
//! 198.18.0.2 or 2001:2::2 (shared) or 198.18.0.20 and 2001:2::20 (its own).

mod bench;

use clap::Subcommand;
use std::process::Command;

#[derive(Subcommand)]
pub enum TestnetCmd {
    /// Create namespaces NAME-srv and NAME-cli joined by veth NAME-s <-> NAME-c
    /// (198.18.0.1/24 and 2001:2::1/64, 198.18.0.2/24 and 2001:2::2/64).
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

/// Runs `sirocco testnet up|down`.
pub fn run(cmd: TestnetCmd) -> Result<(), String> {
    match cmd {
        TestnetCmd::Up { name, queues, bench } => {
            io::iface::require_root().map_err(|e| e.to_string())?;
            up(&name, queues, bench)?;
            let n = names(&name);
            println!(
                "test network {name}: {} ({}, {SERVER_ADDR} {SERVER_ADDR6}) <-> {} ({}, {CLIENT_ADDR} {CLIENT_ADDR6}), {queues} queue(s)",
                n.srv_if, n.srv_ns, n.cli_if, n.cli_ns
            );
            println!(
                "sirocco may also serve {SERVER_OWN_ADDR} and {SERVER_OWN_ADDR6} (its own) on the server side, \
                 {CLIENT_OWN_ADDR} and {CLIENT_OWN_ADDR6} on the client side"
            );
            Ok(())
        }
        TestnetCmd::Down { name } => down(&name),
    }
}

/// Kernel address of the server end.
pub const SERVER_ADDR: &str = "198.18.0.1";
/// Kernel address of the client end.
pub const CLIENT_ADDR: &str = "198.18.0.2";
/// An address on the server side that only sirocco answers.
pub const SERVER_OWN_ADDR: &str = "198.18.0.10";
/// An address on the client side that only sirocco's generator answers.
pub const CLIENT_OWN_ADDR: &str = "198.18.0.20";

/// Kernel IPv6 address of the server end (RFC 5180's benchmarking range).
pub const SERVER_ADDR6: &str = "2001:2::1";
/// Kernel IPv6 address of the client end.
pub const CLIENT_ADDR6: &str = "2001:2::2";
/// An IPv6 address on the server side that only sirocco answers.
pub const SERVER_OWN_ADDR6: &str = "2001:2::10";
/// An IPv6 address on the client side that only sirocco's generator answers.
pub const CLIENT_OWN_ADDR6: &str = "2001:2::20";

/// Names of a test network's parts.
pub struct Names {
    /// Server namespace.
    pub srv_ns: String,
    /// Client namespace.
    pub cli_ns: String,
    /// Server-side veth.
    pub srv_if: String,
    /// Client-side veth.
    pub cli_if: String,
}

/// The names for prefix `name`.
pub fn names(name: &str) -> Names {
    Names {
        srv_ns: format!("{name}-srv"),
        cli_ns: format!("{name}-cli"),
        srv_if: format!("{name}-s"),
        cli_if: format!("{name}-c"),
    }
}

fn sh(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0]).args(&args[1..]).output().map_err(|e| format!("cannot run {}: {e}", args[0]))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

fn ns(ns: &str, args: &[&str]) -> Result<(), String> {
    let mut v = vec!["ip", "netns", "exec", ns];
    v.extend_from_slice(args);
    sh(&v)
}

/// Creates the network; with `bench`, also applies the placement of BENCHMARKING.md (GRO,
/// threaded NAPI, each side's NAPI thread pinned to its side's CPU) and static neighbours.
pub fn up(name: &str, queues: u32, bench: bool) -> Result<(), String> {
    if name.len() > 12 || name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err("test network name must be 1-12 letters or digits".into());
    }
    let n = names(name);
    let q = queues.max(1).to_string();
    let _ = down(name);
    let steps = || -> Result<(), String> {
        sh(&["ip", "netns", "add", &n.srv_ns])?;
        sh(&["ip", "netns", "add", &n.cli_ns])?;
        sh(&[
            "ip",
            "link",
            "add",
            &n.srv_if,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
            "netns",
            &n.srv_ns,
            "type",
            "veth",
            "peer",
            "name",
            &n.cli_if,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
            "netns",
            &n.cli_ns,
        ])?;
        ns(&n.srv_ns, &["ip", "addr", "add", &format!("{SERVER_ADDR}/24"), "dev", &n.srv_if])?;
        ns(&n.cli_ns, &["ip", "addr", "add", &format!("{CLIENT_ADDR}/24"), "dev", &n.cli_if])?;
        // No duplicate address detection: the pair is alone on its link, and an address in
        // DAD is unusable for a second (tests and benchmarks start at once).
        ns(&n.srv_ns, &["ip", "-6", "addr", "add", &format!("{SERVER_ADDR6}/64"), "dev", &n.srv_if, "nodad"])?;
        ns(&n.cli_ns, &["ip", "-6", "addr", "add", &format!("{CLIENT_ADDR6}/64"), "dev", &n.cli_if, "nodad"])?;
        for (nsn, ifn) in [(&n.srv_ns, &n.srv_if), (&n.cli_ns, &n.cli_if)] {
            // veth hands the peer packets with checksums left to "hardware"; XDP and AF_XDP see
            // them unfinished. Have the kernel compute them, as a real NIC's peer would.
            ns(nsn, &["ethtool", "-K", ifn, "tx", "off"])?;
            ns(nsn, &["ip", "link", "set", "dev", "lo", "up"])?;
            ns(nsn, &["ip", "link", "set", "dev", ifn, "up"])?;
        }
        if bench {
            bench::placement(&n)?;
        }
        Ok(())
    };
    steps().inspect_err(|_| {
        let _ = down(name);
    })
}

/// Removes the network (deleting a namespace removes its veth end, and so the pair).
pub fn down(name: &str) -> Result<(), String> {
    let n = names(name);
    let a = sh(&["ip", "netns", "del", &n.srv_ns]);
    let b = sh(&["ip", "netns", "del", &n.cli_ns]);
    a.and(b)
}
