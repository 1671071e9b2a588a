//! `sirocco pipeline` between two kernel hosts: host A and host B in namespaces of their own,
//! each joined by a veth pair to a middle namespace where the pipeline takes both interfaces.
//! Ping and TCP go through an L2 switch, a router and a delay line.

use crate::common::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

static SEQ: AtomicU32 = AtomicU32::new(0);

pub const MAC_A: &str = "02:00:00:00:01:01";
pub const MAC_MA: &str = "02:00:00:00:01:fe";
pub const MAC_MB: &str = "02:00:00:00:02:fe";
pub const MAC_B: &str = "02:00:00:00:02:01";

/// Hosts A and B, and the middle namespace between them; removed on drop.
pub struct Chain {
    pub a: String,
    pub m: String,
    pub b: String,
    /// The middle's interfaces, towards A and towards B.
    pub ma: String,
    pub mb: String,
    script: std::path::PathBuf,
    /// Namespaces added by [`Chain::add_pair`].
    extra: Vec<String>,
}

fn sh(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().expect("run");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

impl Chain {
    /// The namespaces and links, A at `addr_a`/24 and B at `addr_b`/24 (with `gw_*` as
    /// their default gateways when given, reached at the middle's MACs).
    pub fn new(addr_a: &str, addr_b: &str, gws: Option<(&str, &str)>) -> Chain {
        require_root();
        let n = format!("p{}x{}", std::process::id() % 100_000, SEQ.fetch_add(1, Ordering::SeqCst));
        let c = Chain {
            a: format!("{n}-a"),
            m: format!("{n}-m"),
            b: format!("{n}-b"),
            ma: format!("{n}-ma"),
            mb: format!("{n}-mb"),
            script: std::env::temp_dir().join(format!("{n}.pipeline")),
            extra: Vec::new(),
        };
        for ns in [&c.a, &c.m, &c.b] {
            sh(&["ip", "netns", "add", ns]);
            sh(&["ip", "-n", ns, "link", "set", "lo", "up"]);
        }
        for (host, hif, mif, hmac, mmac, addr) in
            [(&c.a, &c.a, &c.ma, MAC_A, MAC_MA, addr_a), (&c.b, &c.b, &c.mb, MAC_B, MAC_MB, addr_b)]
        {
            sh(&[
                "ip", "link", "add", hif, "netns", host, "address", hmac, "type", "veth", "peer", "name", mif, "netns",
                &c.m, "address", mmac,
            ]);
            // The hosts checksum what they send: the pipeline forwards frames as they are.
            sh(&["ip", "netns", "exec", host, "ethtool", "-K", hif, "tx", "off"]);
            sh(&["ip", "-n", host, "addr", "add", &format!("{addr}/24"), "dev", hif]);
            sh(&["ip", "-n", host, "link", "set", hif, "up"]);
            sh(&["ip", "-n", &c.m, "link", "set", mif, "up"]);
        }
        if let Some((gw_a, gw_b)) = gws {
            for (host, gw, mac) in [(&c.a, gw_a, MAC_MA), (&c.b, gw_b, MAC_MB)] {
                sh(&["ip", "-n", host, "neigh", "replace", gw, "lladdr", mac, "dev", host, "nud", "permanent"]);
                sh(&["ip", "-n", host, "route", "add", "default", "via", gw]);
            }
        }
        c
    }

    /// Two more hosts, C at 198.18.3.1 and D at 198.18.3.2, joined to the middle by
    /// interfaces that `@C` and `@D` stand for in scripts. Returns C's and D's namespaces.
    pub fn add_pair(&mut self) -> (String, String) {
        let base = self.m.trim_end_matches("-m").to_string();
        let (c, d) = (format!("{base}-c"), format!("{base}-d"));
        for (host, mif, addr) in [(&c, format!("{base}-mc"), "198.18.3.1"), (&d, format!("{base}-md"), "198.18.3.2")] {
            sh(&["ip", "netns", "add", host]);
            self.extra.push(host.clone());
            sh(&["ip", "link", "add", host, "netns", host, "type", "veth", "peer", "name", &mif, "netns", &self.m]);
            sh(&["ip", "netns", "exec", host, "ethtool", "-K", host, "tx", "off"]);
            sh(&["ip", "-n", host, "addr", "add", &format!("{addr}/24"), "dev", host]);
            sh(&["ip", "-n", host, "link", "set", host, "up"]);
            sh(&["ip", "-n", &self.m, "link", "set", &mif, "up"]);
        }
        (c, d)
    }

    /// Writes `script` with `@A` and `@B` standing for the middle's interfaces.
    pub fn write_script(&self, script: &str) {
        let base = self.m.trim_end_matches("-m");
        let text = script
            .replace("@A", &format!("\"{}\"", self.ma))
            .replace("@B", &format!("\"{}\"", self.mb))
            .replace("@C", &format!("\"{base}-mc\""))
            .replace("@D", &format!("\"{base}-md\""));
        std::fs::write(&self.script, text).unwrap();
    }

    /// Starts the pipeline of `script` (see [`Chain::write_script`]).
    pub fn start(&self, script: &str) -> Sirocco {
        self.write_script(script);
        Sirocco::start(&self.m, &["pipeline", "--script", self.script.to_str().unwrap()])
    }

    pub fn exec(&self, ns: &str, args: &[&str]) -> std::process::Output {
        Command::new("ip").args(["netns", "exec", ns]).args(args).output().expect("ip netns exec")
    }

    /// True if an XDP program is attached to either middle interface.
    pub fn has_xdp(&self) -> bool {
        [&self.ma, &self.mb].iter().any(|i| {
            String::from_utf8_lossy(&self.exec(&self.m, &["ip", "link", "show", "dev", i]).stdout).contains("xdp")
        })
    }
}

impl Drop for Chain {
    fn drop(&mut self) {
        for ns in [&self.a, &self.m, &self.b].into_iter().chain(&self.extra) {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
        let _ = std::fs::remove_file(&self.script);
    }
}

/// Sends `len` bytes of a pattern from A to a kernel listener on B at `to`; returns what B
/// received (bounded in time).
fn tcp_transfer(c: &Chain, to: &'static str, len: usize) -> Vec<u8> {
    tcp_transfer_from(c, to, len).0
}

/// As [`tcp_transfer`], with the address B saw the connection come from.
fn tcp_transfer_from(c: &Chain, to: &'static str, len: usize) -> (Vec<u8>, std::net::SocketAddr) {
    let (tx, rx) = std::sync::mpsc::channel();
    let bns = c.b.clone();
    let server = std::thread::spawn(move || {
        in_netns(&bns, move || {
            let l = TcpListener::bind((to, 5001)).unwrap();
            tx.send(()).unwrap();
            let (mut s, peer) = l.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let mut got = Vec::new();
            let _ = s.read_to_end(&mut got);
            (got, peer)
        })
    });
    rx.recv_timeout(Duration::from_secs(5)).unwrap();
    in_netns(&c.a, move || {
        let mut s =
            TcpStream::connect_timeout(&(to.parse::<std::net::IpAddr>().unwrap(), 5001).into(), Duration::from_secs(5))
                .expect("connect through the pipeline");
        s.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        s.write_all(&data).unwrap();
    });
    server.join().unwrap()
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

const SWITCH: &str = "\
a :: PortInc(port=@A)
b :: PortInc(port=@B)
sw :: L2Forward(gates=2)
a -> 0:sw
b -> 1:sw
sw:0 -> PortOut(port=@A)
sw:1 -> PortOut(port=@B)
";

#[test]
fn ping_and_tcp_cross_an_l2_switch() {
    let c = Chain::new("198.18.1.1", "198.18.1.2", None);
    let s = c.start(SWITCH);
    assert!(c.has_xdp(), "{}", s.log());
    let out = c.exec(&c.a, &["ping", "-c", "3", "-i", "0.2", "-W", "2", "198.18.1.2"]);
    assert!(out.status.success(), "ping: {}\n{}", String::from_utf8_lossy(&out.stdout), s.log());
    let got = tcp_transfer(&c, "198.18.1.2", 4 << 20);
    assert!(got == pattern(4 << 20), "4 MiB arrived whole and in order ({} bytes)", got.len());
    let counters = stop_and_count(s);
    let sw = &counters["modules"]["sw"];
    assert!(sw["learnt"].as_u64().unwrap() >= 2, "{sw}");
    assert!(sw["floods"].as_u64().unwrap() >= 1, "the first ARP request is flooded: {sw}");
    assert!(!c.has_xdp(), "the XDP filter is gone when the pipeline stops");
}

fn router() -> String {
    format!(
        "\
in_a :: PortInc(port=@A)
in_b :: PortInc(port=@B)
out_a :: PortOut(port=@A)
out_b :: PortOut(port=@B)
rt :: IPLookup(routes=[\"198.18.1.0/24 0\", \"198.18.2.0/24 1\"])
in_a -> ttl_a :: UpdateTTL() -> rt
in_b -> ttl_b :: UpdateTTL() -> rt
ttl_a:1 -> ICMPTimeExceeded(addr=\"198.18.1.254\") -> out_a
ttl_b:1 -> ICMPTimeExceeded(addr=\"198.18.2.254\") -> out_b
rt:0 -> MACRewrite(src=\"{MAC_MA}\", dst=\"{MAC_A}\") -> out_a
rt:1 -> MACRewrite(src=\"{MAC_MB}\", dst=\"{MAC_B}\") -> out_b
"
    )
}

#[test]
fn a_router_forwards_decrements_the_ttl_and_answers_time_exceeded() {
    let c = Chain::new("198.18.1.1", "198.18.2.1", Some(("198.18.1.254", "198.18.2.254")));
    let s = c.start(&router());
    let out = c.exec(&c.a, &["ping", "-c", "3", "-i", "0.2", "-W", "2", "198.18.2.1"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "ping: {text}\n{}", s.log());
    // B answers with TTL 64; one router hop on the way back.
    assert!(text.contains("ttl=63"), "{text}");
    let out = c.exec(&c.a, &["ping", "-c", "1", "-t", "1", "-W", "2", "198.18.2.1"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("From 198.18.1.254") && text.contains("Time to live exceeded"), "{text}");
    let got = tcp_transfer(&c, "198.18.2.1", 2 << 20);
    assert!(got == pattern(2 << 20), "2 MiB routed whole ({} bytes)", got.len());
    let counters = stop_and_count(s);
    assert_eq!(counters["modules"]["rt"]["misses"].as_u64(), Some(0));
    assert!(counters["modules"]["ttl_a"]["tx"].as_u64().unwrap() > 1000);
}

#[test]
fn a_delay_line_adds_its_round_trip_time() {
    let c = Chain::new("198.18.1.1", "198.18.1.2", None);
    let s = c.start(
        "PortInc(port=@A) -> Delay(delay_ms=15) -> PortOut(port=@B)\n\
         PortInc(port=@B) -> Delay(delay_ms=15) -> PortOut(port=@A)\n",
    );
    let out = c.exec(&c.a, &["ping", "-c", "5", "-i", "0.2", "-W", "3", "198.18.1.2"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "ping: {text}\n{}", s.log());
    // rtt min/avg/max/mdev = 30.2/...: a delay line can only make it longer than 30 ms.
    let stats = text.lines().find(|l| l.contains("min/avg/max")).expect("ping summary");
    let min: f64 = stats.split('=').nth(1).unwrap().trim().split('/').next().unwrap().parse().unwrap();
    assert!(min >= 30.0, "{stats}");
    let t = Instant::now();
    let got = tcp_transfer(&c, "198.18.1.2", 1 << 20);
    assert!(got == pattern(1 << 20), "1 MiB through the delay line ({} bytes in {:?})", got.len(), t.elapsed());
    stop_and_count(s);
}

#[test]
fn bad_scripts_get_one_line_naming_file_and_line() {
    let c = Chain::new("198.18.1.1", "198.18.1.2", None);
    let cases = [
        ("PortInc(port=@A) -> Nope() -> PortOut(port=@B)", "line 1:1: Nope_1 :: Nope: no module class 'Nope'"),
        ("a :: PortInc(port=@A)\n\na -> ", "line 3:"),
        ("a :: PortInc(port=\"nosuchif0\")\na -> Sink()", "nosuchif0"),
        ("a :: Source()\na -> Sink()", "no PortInc or PortOut"),
    ];
    for (text, want) in cases {
        c.write_script(text);
        let out = c.exec(&c.m, &[sirocco(), "pipeline", "--script", c.script.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(1), "{text:?}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains(want) && err.starts_with("sirocco: error: "), "{text:?}: {err}");
        assert!(!c.has_xdp());
    }
}

fn ctl(sock: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(sirocco()).args(["pipeline"]).args(args).args(["--control", sock]).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn changes_at_run_time_under_traffic_lose_nothing() {
    let c = Chain::new("198.18.1.1", "198.18.1.2", None);
    let sock = std::env::temp_dir().join(format!("{}.ctl", c.m));
    let sock = sock.to_str().unwrap().to_string();
    c.write_script(SWITCH);
    let s = Sirocco::start(&c.m, &["pipeline", "--script", c.script.to_str().unwrap(), "--control", &sock]);
    // Learn both MACs first (the first frames are flooded, which is no loss either).
    let out = c.exec(&c.a, &["ping", "-c", "2", "-i", "0.2", "-W", "2", "198.18.1.2"]);
    assert!(out.status.success(), "{}", s.log());

    const N: u32 = 20_000;
    let bns = c.b.clone();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let receiver = std::thread::spawn(move || {
        in_netns(&bns, move || {
            let u = std::net::UdpSocket::bind("198.18.1.2:6000").unwrap();
            let fd = std::os::fd::AsRawFd::as_raw_fd(&u);
            let size: libc::c_int = 8 << 20;
            // SAFETY: setsockopt on our socket with a valid int.
            unsafe {
                libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, (&size as *const libc::c_int).cast(), 4)
            };
            u.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            ready_tx.send(()).unwrap();
            let mut seen = vec![false; N as usize];
            let mut b = [0u8; 64];
            while let Ok(n) = u.recv(&mut b) {
                if n == 4 {
                    let i = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
                    if i < seen.len() {
                        seen[i] = true;
                    }
                }
            }
            seen.iter().filter(|&&x| x).count() as u32
        })
    });
    ready_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let ans = c.a.clone();
    let sender = std::thread::spawn(move || {
        in_netns(&ans, move || {
            let u = std::net::UdpSocket::bind("198.18.1.1:0").unwrap();
            let t = Instant::now();
            for i in 0..N {
                // 20 k datagrams/s, paced: well below what any part of the path can carry.
                while t.elapsed() < Duration::from_micros(u64::from(i) * 50) {
                    std::hint::spin_loop();
                }
                u.send_to(&i.to_be_bytes(), "198.18.1.2:6000").unwrap();
            }
        })
    });
    // Meanwhile: put a Timestamp/Measure pair into the A→B path, look, take it out; twice.
    let mut changes = 0;
    for _ in 0..2 {
        std::thread::sleep(Duration::from_millis(150));
        let (ok, _, err) = ctl(&sock, &["add", "t :: Timestamp()", "m :: Measure()", "sw:1 -> t -> m -> PortOut_2"]);
        assert!(ok, "add: {err}");
        std::thread::sleep(Duration::from_millis(150));
        let (ok, show, _) = ctl(&sock, &["show"]);
        assert!(ok && show.contains("t :: Timestamp()") && show.contains("sw:1 -> 0:t"), "{show}");
        let (ok, stats, err) = ctl(&sock, &["stats"]);
        assert!(ok, "{err}");
        assert!(stats.lines().any(|l| l.starts_with("m ") && l.contains("latency_count")), "{stats}");
        for m in ["t", "m"] {
            let (ok, _, err) = ctl(&sock, &["remove", m]);
            assert!(ok, "remove {m}: {err}");
        }
        changes += 1;
    }
    sender.join().unwrap();
    let got = receiver.join().unwrap();
    assert_eq!(changes, 2);
    assert_eq!(got, N, "every datagram arrived across four changes");
    let (ok, _, err) = ctl(&sock, &["remove", "nosuch"]);
    assert!(!ok && err.trim() == "sirocco: error: no module 'nosuch'", "{err}");
    let (ok, _, err) = ctl(&sock, &["add", "x -> sw"]);
    assert!(!ok && err.contains("line 1:1: no module 'x'"), "{err}");
    let counters = stop_and_count(s);
    assert_eq!(counters["modules"]["PortOut_2"]["dropped"].as_u64(), Some(0));
    assert!(!std::path::Path::new(&sock).exists(), "the socket is removed at exit");
}

#[test]
fn a_nat_hides_the_inside_hosts_behind_its_address() {
    let c = Chain::new("198.18.1.1", "198.18.2.1", Some(("198.18.1.254", "198.18.2.254")));
    let s = c.start(&format!(
        "\
in_a :: PortInc(port=@A)
in_b :: PortInc(port=@B)
nat :: NAT(ext_addr=\"198.18.2.254\", ports=\"20000-20999\")
in_a -> 0:nat
in_b -> 1:nat
nat:0 -> MACRewrite(src=\"{MAC_MB}\", dst=\"{MAC_B}\") -> PortOut(port=@B)
nat:1 -> MACRewrite(src=\"{MAC_MA}\", dst=\"{MAC_A}\") -> PortOut(port=@A)
"
    ));
    let out = c.exec(&c.a, &["ping", "-c", "3", "-i", "0.2", "-W", "2", "198.18.2.1"]);
    assert!(out.status.success(), "ping through the NAT: {}\n{}", String::from_utf8_lossy(&out.stdout), s.log());
    let (got, peer) = tcp_transfer_from(&c, "198.18.2.1", 1 << 20);
    assert!(got == pattern(1 << 20), "1 MiB through the NAT ({} bytes)", got.len());
    assert_eq!(peer.ip().to_string(), "198.18.2.254", "B sees the NAT's address");
    assert!((20000..21000).contains(&peer.port()), "from a port of the range: {peer}");
    let counters = stop_and_count(s);
    let nat = &counters["modules"]["nat"];
    assert_eq!(nat["bound"].as_u64(), Some(2), "one binding for the ping, one for TCP: {nat}");
}

#[test]
fn two_workers_run_two_pipelines_side_by_side() {
    let mut c = Chain::new("198.18.1.1", "198.18.1.2", None);
    let (hc, hd) = c.add_pair();
    let s = c.start(&format!(
        "{SWITCH}\
PortInc(port=@C) -> Delay(delay_ms=10) -> PortOut(port=@D)
PortInc(port=@D) -> Delay(delay_ms=10) -> PortOut(port=@C)
tc slow(policy=round_robin, worker=w1, tasks=[PortInc_1, PortInc_2])
worker w0(cpu=0)
worker w1(cpu=1)
"
    ));
    // Both workers are threads of their own, beside the main thread.
    let threads = std::fs::read_dir(format!("/proc/{}/task", s.pid())).unwrap().count();
    assert!(threads >= 3, "{threads} threads");
    let out = c.exec(&c.a, &["ping", "-c", "3", "-i", "0.2", "-W", "2", "198.18.1.2"]);
    assert!(out.status.success(), "switch on w0: {}\n{}", String::from_utf8_lossy(&out.stdout), s.log());
    let out = c.exec(&hc, &["ping", "-c", "3", "-i", "0.2", "-W", "2", "198.18.3.2"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "delay line on w1: {text}\n{}", s.log());
    let stats = text.lines().find(|l| l.contains("min/avg/max")).expect("ping summary");
    let min: f64 = stats.split('=').nth(1).unwrap().trim().split('/').next().unwrap().parse().unwrap();
    assert!(min >= 20.0, "{stats}");
    let _ = hd;
    let counters = stop_and_count(s);
    assert!(counters["modules"]["sw"]["learnt"].as_u64().unwrap() >= 2);
    assert!(counters["modules"]["Delay_1"]["rx"].as_u64().unwrap() >= 3);
    assert!(counters["classes"]["w1/slow"]["runs"].as_u64().unwrap() > 0, "{}", counters["classes"]);
}

#[test]
fn workers_that_would_share_are_refused() {
    let c = Chain::new("198.18.1.1", "198.18.1.2", None);
    c.write_script(&format!(
        "{SWITCH}tc t(policy=round_robin, worker=w1, tasks=[b])\nworker w0(cpu=0)\nworker w1(cpu=1)\n"
    ));
    let out = c.exec(&c.m, &[sirocco(), "pipeline", "--script", c.script.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("module 'sw' is reached from tasks of workers"), "{err}");
    assert!(!c.has_xdp());
}
