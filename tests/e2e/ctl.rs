//! `sirocco ctl`: several servers of different users behind one daemon on one interface
//! (echo, dns, web, kv), each isolated; what an application sends checked and rate-limited below it; grants that end
//! with their holders, on revocation and with the daemon; clear refusals.
//!
//! The servers run as users 61001–61004 (no names needed: the policy names uids). A rogue
//! application is played by the test itself: it asks for a grant over the control socket as
//! any application would, maps the sockets it is handed, and writes whatever frames it likes.

use crate::common::{in_netns, one_echo, sirocco, Sirocco, TestNet, CLIENT, SERVER};
use io::port::{Frame, Port};
use io::xsk::{BindMode, XskPort, XskShape};
use serde_json::Value;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const ECHO_ADDR: &str = "198.18.0.50";
const DNS_ADDR: &str = "198.18.0.53";
const ROGUE_ADDR: &str = "198.18.0.60";
const KV_ADDR: &str = "198.18.0.70";

const POLICY: &str = r#"
[[allow]]
uid = 61001
addrs = ["198.18.0.50"]
ports = ["udp/7"]

[[allow]]
uid = 61002
addrs = ["198.18.0.53"]
ports = ["udp/53", "tcp/53", "tcp/32768-60999"]

[[allow]]
uid = 61003
addrs = ["198.18.0.1"]
ports = ["tcp/80"]

[[allow]]
uid = 61004
addrs = ["198.18.0.70"]
ports = ["tcp/11211"]

[[allow]]
uid = 0
addrs = ["198.18.0.60"]
ports = ["udp/9"]
max_pps = 1000000
"#;

static SEQ: AtomicU32 = AtomicU32::new(0);

/// A test network with the daemon on its server side; everything goes on drop.
struct Setup {
    net: TestNet,
    daemon: Option<Sirocco>,
    dir: PathBuf,
    sock: String,
}

impl Setup {
    fn new() -> Setup {
        let net = TestNet::new(1);
        // Frames the daemon redirects to the server-side veth reach the client side only
        // through its NAPI, which GRO turns on (a real NIC needs nothing of the kind).
        let out = net.exec(&net.cli_ns, &["ethtool", "-K", &net.cli_if, "gro", "on"]);
        assert!(out.status.success(), "ethtool: {}", String::from_utf8_lossy(&out.stderr));
        let dir = std::env::temp_dir().join(format!(
            "sirocco-ctl-e2e-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("policy.toml"), POLICY).unwrap();
        let sock = dir.join("ctl.sock").to_str().unwrap().to_string();
        let policy = dir.join("policy.toml").to_str().unwrap().to_string();
        let daemon = Sirocco::spawn(
            &net.srv_ns,
            &[],
            &["ctl", "--iface", &net.srv_if, "--socket", &sock, "--config", &policy],
            false,
        );
        daemon.wait_for_log("sirocco: ctl on", Duration::from_secs(10));
        Setup { net, daemon: Some(daemon), dir, sock }
    }

    fn server(&self, uid: u32, args: &[&str]) -> Sirocco {
        let mut a = args.to_vec();
        a.extend(["--ctl", &self.sock]);
        let s = Sirocco::start_as(&self.net.srv_ns, uid, &a, false);
        s.wait_for_log("through sirocco ctl", Duration::from_secs(10));
        s
    }

    fn status(&self) -> Value {
        let out = Command::new(sirocco()).args(["ctl", "status", "--json", "--socket", &self.sock]).output().unwrap();
        assert!(out.status.success(), "status: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn grant(&self, app: &str) -> Option<Value> {
        self.status()["grants"].as_array().unwrap().iter().find(|g| g["app"] == app).cloned()
    }

    /// Waits (bounded) until `app` holds a grant or not.
    fn wait_grant(&self, app: &str, held: bool) {
        let t = Instant::now();
        while self.grant(app).is_some() != held {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "{app} still {}held: {}",
                if held { "not " } else { "" },
                self.status()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Devices the daemon made on the server side (`sc<pid>s<slot>`), and whether the
    /// interface has an XDP program.
    fn leftovers(&self) -> (Vec<String>, bool) {
        let out = self.net.exec(&self.net.srv_ns, &["ip", "-o", "link", "show"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let devs = text
            .lines()
            .filter_map(|l| l.split(": ").nth(1))
            .map(|n| n.split('@').next().unwrap().to_string())
            .filter(|n| n.starts_with("sc"))
            .collect();
        (devs, self.net.server_has_xdp())
    }

    fn wait_clean(&self) {
        let t = Instant::now();
        while self.leftovers() != (vec![], false) {
            assert!(t.elapsed() < Duration::from_secs(10), "left behind: {:?}", self.leftovers());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        drop(self.daemon.take());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn uid_of(pid: u32) -> u32 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = s.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn kdig(net: &TestNet, name: &str) -> String {
    let out = net.exec(&net.cli_ns, &["kdig", "+short", "+timeout=2", "+retry=2", &format!("@{DNS_ADDR}"), name, "A"]);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn curl(net: &TestNet) -> String {
    let out = net.exec(&net.cli_ns, &["curl", "-s", "-m", "5", &format!("http://{SERVER}/")]);
    String::from_utf8_lossy(&out.stdout).to_string()
}

#[test]
fn four_servers_of_four_users_share_one_interface() {
    let s = Setup::new();
    let echo = s.server(61001, &["echo", "--addr", ECHO_ADDR]);
    let dns = s.server(61002, &["dns", "--addr", DNS_ADDR, "--zone", "../tests/data/example.zone"]);
    let web = s.server(61003, &["web", "--addr", SERVER]);
    let kv = s.server(61004, &["kv", "--addr", KV_ADDR]);
    for (srv, uid) in [(&echo, 61001), (&dns, 61002), (&web, 61003), (&kv, 61004)] {
        assert_eq!(uid_of(srv.pid()), uid, "servers run unprivileged");
    }
    // The echo owns its address alone: the daemon answers ARP for it. The web server shares
    // the kernel's address, whose ARP and ping stay with the kernel.
    assert!(one_echo(&s.net.cli_ns, ECHO_ADDR), "echo through the daemon");
    assert_eq!(kdig(&s.net, "www.example.com"), "198.18.1.2\n198.18.1.3");
    assert!(curl(&s.net).contains("<!DOCTYPE html>"), "web through the daemon");
    let got = in_netns(&s.net.cli_ns, || {
        use std::io::{Read, Write};
        let mut c = std::net::TcpStream::connect((KV_ADDR, 11211)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(b"set k 0 0 5\r\nhello\r\nget k\r\n").unwrap();
        let mut got = Vec::new();
        let mut b = [0u8; 256];
        while !got.ends_with(b"END\r\n") {
            match c.read(&mut b) {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&b[..n]),
            }
        }
        String::from_utf8_lossy(&got).to_string()
    });
    assert_eq!(got, "STORED\r\nVALUE k 0 5\r\nhello\r\nEND\r\n", "kv through the daemon");
    let ping = s.net.exec(&s.net.cli_ns, &["ping", "-c", "1", "-W", "2", SERVER]);
    assert!(ping.status.success(), "the kernel keeps its own traffic");
    let st = s.status();
    assert_eq!(st["grants"].as_array().unwrap().len(), 4, "{st}");
    for app in ["echo-7", "dns-53", "web-80", "kv-11211"] {
        let g = s.grant(app).unwrap();
        assert!(g["rx"].as_u64().unwrap() > 0 && g["tx"].as_u64().unwrap() > 0, "{g}");
        assert_eq!(g["refused"], 0, "a server sends only its own flow: {g}");
    }
    assert!(st["arp_answered"].as_u64().unwrap() >= 1, "{st}");
    let text = Command::new(sirocco()).args(["ctl", "status", "--socket", &s.sock]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    assert!(text.contains("GRANT") && text.contains("198.18.0.53 udp/53,tcp/53") && text.contains("61003"), "{text}");
    // Each server sees only its own flow: the echo got no DNS query or HTTP segment.
    let (ok, log) = echo.stop();
    assert!(ok.success(), "{log}");
    assert!(log.contains("drops none"), "{log}");
    s.wait_grant("echo-7", false);
    assert!(!one_echo(&s.net.cli_ns, ECHO_ADDR), "no grant, no echo");
    drop((dns, web, kv));
    s.wait_grant("web-80", false);
    let mut s = s;
    let (ok, log) = s.daemon.take().unwrap().stop();
    assert!(ok.success(), "{log}");
    s.wait_clean();
}

#[test]
fn revocation_crashes_and_the_daemon_dying_end_grants() {
    let mut s = Setup::new();
    let mut echo = s.server(61001, &["echo", "--addr", ECHO_ADDR]);
    assert!(one_echo(&s.net.cli_ns, ECHO_ADDR));
    // Only root or the holder may revoke.
    let other = s.net.exec(
        &s.net.srv_ns,
        &[
            "setpriv",
            "--reuid=61002",
            "--regid=61002",
            "--clear-groups",
            sirocco(),
            "ctl",
            "revoke",
            "echo-7",
            "--socket",
            &s.sock,
        ],
    );
    assert!(!other.status.success());
    assert!(String::from_utf8_lossy(&other.stderr).contains("only root or the holder (uid 61001) may revoke 'echo-7'"));
    let out = Command::new(sirocco()).args(["ctl", "revoke", "echo-7", "--socket", &s.sock]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let st = echo.exited_within(Duration::from_secs(5)).expect("a revoked server stops");
    assert!(!st.success());
    assert!(echo.log().contains("sirocco ctl ended this server's grant (revoked)"), "{}", echo.log());
    assert!(!one_echo(&s.net.cli_ns, ECHO_ADDR), "revoked: the flow no longer reaches anyone");
    assert_eq!(s.leftovers().0, Vec::<String>::new(), "the grant's interface is gone");

    // A crash frees the grant; a restart gets it back.
    let echo = s.server(61001, &["echo", "--addr", ECHO_ADDR]);
    assert!(one_echo(&s.net.cli_ns, ECHO_ADDR));
    echo.kill9();
    s.wait_grant("echo-7", false);
    let mut echo = s.server(61001, &["echo", "--addr", ECHO_ADDR]);
    assert!(one_echo(&s.net.cli_ns, ECHO_ADDR), "back after the restart");

    // The daemon killed outright: its servers stop, and the interface is as it was.
    s.daemon.take().unwrap().kill9();
    assert!(echo.exited_within(Duration::from_secs(5)).is_some(), "a server stops when its daemon dies");
    s.wait_clean();
    let ping = s.net.exec(&s.net.cli_ns, &["ping", "-c", "1", "-W", "2", SERVER]);
    assert!(ping.status.success(), "the kernel has the interface back");
}

#[test]
fn bad_requests_get_clear_refusals() {
    let s = Setup::new();
    let ask = |req: &str| -> String {
        let mut c = UnixStream::connect(&s.sock).unwrap();
        std::io::Write::write_all(&mut c, format!("{req}\n").as_bytes()).unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(&c), &mut line).unwrap();
        line
    };
    assert!(ask("nope").contains("the request is not JSON"));
    assert!(ask(r#"{"op":"fly"}"#).contains("no op 'fly'"));
    assert!(ask(r#"{"op":"grant","app":"x","addr":"198.18.0.50","proto":"udp","port":7}"#)
        .contains("198.18.0.50 udp/7 is not among the grants allowed to this user"));
    assert!(ask(r#"{"op":"revoke","app":"nobody"}"#).contains("no application named 'nobody' holds a grant"));

    let refused = |uid: u32, args: &[&str]| -> String {
        let mut a = args.to_vec();
        a.extend(["--ctl", &s.sock, "--duration", "5"]);
        let (u, g) = (format!("--reuid={uid}"), format!("--regid={uid}"));
        let mut cmd = vec!["setpriv", &u, &g, "--clear-groups", sirocco()];
        cmd.extend(a);
        let out = s.net.exec(&s.net.srv_ns, &cmd);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        err
    };
    // Unauthorised: a user asking for another's flow, and a user the policy does not name.
    assert!(refused(61002, &["echo", "--addr", ECHO_ADDR]).contains("is not among the grants allowed to this user"));
    assert!(refused(61009, &["echo", "--addr", ECHO_ADDR]).contains("user 61009 may not be granted anything"));
    // Overlapping: the flow is held already.
    let _echo = s.server(61001, &["echo", "--addr", ECHO_ADDR]);
    let e = refused(61001, &["echo", "--addr", ECHO_ADDR, "--ctl-app", "echo-b"]);
    assert!(e.contains("198.18.0.50 udp/7 is granted to 'echo-7' already"), "{e}");
    // Asking for more than the policy gives.
    let e = refused(61001, &["echo", "--addr", ECHO_ADDR, "--ctl-app", "echo-c", "--queues", "2"]);
    assert!(e.contains("2 queues asked, 1 allowed"), "{e}");

    // The daemon's own bad input: one line, non-zero.
    for (args, want) in [
        (vec!["ctl", "--iface", &s.net.srv_if], "--config FILE is required"),
        (vec!["ctl", "--iface", &s.net.srv_if, "--config", "/nonexistent/p.toml"], "/nonexistent/p.toml"),
        (vec!["ctl", "--iface", &s.net.srv_if, "--socket", &s.sock, "--config", "Cargo.toml"], "unknown field"),
    ] {
        let out = s.net.exec(&s.net.srv_ns, &[&[sirocco()][..], &args].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(want) && err.lines().count() == 1, "{args:?}: {err}");
    }
    let policy = s.dir.join("policy.toml");
    let out = s.net.exec(
        &s.net.srv_ns,
        &[sirocco(), "ctl", "--iface", &s.net.srv_if, "--socket", &s.sock, "--config", policy.to_str().unwrap()],
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("is served by a running sirocco ctl"));
}

/// An application that asks for a grant itself and gets its socket.
fn rogue_grant(sock: &str, pps: u64) -> (UnixStream, Value, XskPort) {
    let c = UnixStream::connect(sock).unwrap();
    let req = format!(r#"{{"op":"grant","app":"rogue","addr":"{ROGUE_ADDR}","proto":"udp","port":9,"pps":{pps}}}"#);
    io::fdpass::send(&c, format!("{req}\n").as_bytes(), &[]).unwrap();
    let mut buf = vec![0u8; 8192];
    let (mut got, mut fds) = (Vec::new(), Vec::new());
    for _ in 0..100 {
        let (n, f) = io::fdpass::recv(&c, &mut buf).unwrap();
        got.extend_from_slice(&buf[..n]);
        fds.extend(f);
        if n == 0 || got.contains(&b'\n') {
            break;
        }
    }
    let v: Value = serde_json::from_slice(got.split(|&b| b == b'\n').next().unwrap()).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    let q = &v["queues"][0];
    let shape = XskShape {
        queue: 0,
        frames: q["frames"].as_u64().unwrap() as usize,
        frame_size: q["frame_size"].as_u64().unwrap() as usize,
        ring_size: q["ring_size"].as_u64().unwrap() as u32,
        mode: BindMode::Copy,
        tx_budget: q["tx_budget"].as_u64().unwrap() as u32,
        tx_meta: None,
        unaligned: false,
        busy_poll: false,
    };
    assert_eq!(fds.len(), 2, "a socket and its memory");
    let mem = fds.pop().unwrap();
    let port = XskPort::adopt(fds.pop().unwrap(), mem, shape).unwrap();
    (c, v, port)
}

fn parse_mac(s: &str) -> [u8; 6] {
    let mut m = [0u8; 6];
    for (i, b) in s.trim().split(':').enumerate() {
        m[i] = u8::from_str_radix(b, 16).unwrap();
    }
    m
}

fn ip4(s: &str) -> [u8; 4] {
    s.parse::<std::net::Ipv4Addr>().unwrap().octets()
}

/// An Ethernet/IPv4/UDP frame (UDP checksum 0: none, as IPv4 allows).
fn udp_frame(dst_mac: [u8; 6], src_mac: [u8; 6], src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    let payload = b"sirocco ctl test";
    let mut f = Vec::new();
    f.extend(dst_mac);
    f.extend(src_mac);
    f.extend([0x08, 0x00]);
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 0, 0x40, 0, 64, 17, 0, 0];
    ip.extend(src);
    ip.extend(dst);
    let mut sum: u32 = ip.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let ck = !(sum as u16);
    ip[10..12].copy_from_slice(&ck.to_be_bytes());
    f.extend(ip);
    let ulen = (8 + payload.len()) as u16;
    f.extend(sport.to_be_bytes());
    f.extend(dport.to_be_bytes());
    f.extend(ulen.to_be_bytes());
    f.extend([0, 0]);
    f.extend(payload);
    f
}

/// Sends `frame` as fast as the socket takes it, `count` times or for `dur`; returns how many
/// went onto the ring and for how long it sent.
fn blast(port: &mut XskPort, frame: &[u8], count: u64, dur: Duration) -> (u64, f64) {
    let t = Instant::now();
    let mut sent = 0u64;
    let mut batch = Vec::with_capacity(64);
    while sent < count && t.elapsed() < dur {
        batch.clear();
        while batch.len() < 64 && sent + (batch.len() as u64) < count {
            let Some(f) = port.alloc() else { break };
            port.data_mut(f)[..frame.len()].copy_from_slice(frame);
            batch.push(Frame::new(f.addr, frame.len() as u32));
        }
        let n = port.send(&batch);
        for f in &batch[n..] {
            port.free(*f);
        }
        sent += n as u64;
        port.flush();
        if n == 0 {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    let secs = t.elapsed().as_secs_f64();
    // Let the kernel take what is on the ring.
    for _ in 0..50 {
        port.flush();
        std::thread::sleep(Duration::from_millis(2));
    }
    (sent, secs)
}

/// Counts datagrams arriving at the client's port `port` until `quiet` passes with none.
fn count_at_client(ns: &str, port: u16, quiet: Duration) -> std::thread::JoinHandle<u64> {
    let ns = ns.to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        in_netns(&ns, move || {
            let u = std::net::UdpSocket::bind(("0.0.0.0", port)).unwrap();
            u.set_read_timeout(Some(quiet)).unwrap();
            tx.send(()).unwrap();
            let mut b = [0u8; 2048];
            let mut n = 0u64;
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(30) && u.recv_from(&mut b).is_ok() {
                n += 1;
            }
            n
        })
    });
    rx.recv_timeout(Duration::from_secs(5)).unwrap();
    h
}

#[test]
fn what_an_application_sends_is_checked_and_rate_limited_below_it() {
    let s = Setup::new();
    let echo = s.server(61001, &["echo", "--addr", ECHO_ADDR]);
    const PPS: u64 = 20_000;
    let (_conn, v, mut port) = rogue_grant(&s.sock, PPS);
    let out = s.net.exec(&s.net.cli_ns, &["cat", &format!("/sys/class/net/{}/address", s.net.cli_if)]);
    let cli_mac = parse_mac(&String::from_utf8_lossy(&out.stdout));
    let our_mac = parse_mac(v["mac"].as_str().unwrap());

    // Spoofing: another grant's address and port, then its own address with another port.
    let counter = count_at_client(&s.net.cli_ns, 5555, Duration::from_millis(1500));
    let spoof = udp_frame(cli_mac, our_mac, ip4(ECHO_ADDR), ip4(CLIENT), 7, 5555);
    let wrong_port = udp_frame(cli_mac, our_mac, ip4(ROGUE_ADDR), ip4(CLIENT), 10, 5555);
    let (a, _) = blast(&mut port, &spoof, 300, Duration::from_secs(5));
    let (b, _) = blast(&mut port, &wrong_port, 200, Duration::from_secs(5));
    assert_eq!((a, b), (300, 200));
    assert_eq!(counter.join().unwrap(), 0, "nothing outside the grant leaves");
    let g = s.grant("rogue").unwrap();
    assert_eq!((g["refused"].as_u64(), g["tx"].as_u64()), (Some(500), Some(0)), "{g}");

    // A flood of its own frames holds its rate, and the echo next to it keeps answering.
    let counter = count_at_client(&s.net.cli_ns, 5556, Duration::from_millis(1500));
    let ok = udp_frame(cli_mac, our_mac, ip4(ROGUE_ADDR), ip4(CLIENT), 9, 5556);
    let cli = s.net.cli_ns.clone();
    let neighbour = std::thread::spawn(move || (0..20).filter(|_| one_echo(&cli, ECHO_ADDR)).count());
    let (sent, secs) = blast(&mut port, &ok, u64::MAX, Duration::from_secs(3));
    let got = counter.join().unwrap();
    let answered = neighbour.join().unwrap();
    let g = s.grant("rogue").unwrap();
    let want = PPS as f64 * secs;
    eprintln!("rate limit: offered {sent} in {secs:.2} s, {got} arrived (rate x time = {want:.0}); {g}");
    assert!(sent as f64 > 2.0 * want, "the flood must exceed the rate to test it: {sent} in {secs:.2} s");
    // The bucket lets out its rate over the flood plus one burst (10 ms of rate, at least
    // 128 frames); the rest is dropped and counted.
    assert!(
        (got as f64) >= 0.95 * want && (got as f64) <= 1.05 * want + 200.0,
        "{got} frames in {secs:.2} s at {PPS}/s: {g}"
    );
    let tx = g["tx"].as_u64().unwrap();
    assert!(tx >= got && tx - got <= tx / 100, "what the daemon let out is what arrived: {got} of {g}");
    assert!(g["limited"].as_u64().unwrap() > 0, "{g}");
    assert_eq!(answered, 20, "the neighbouring grant is unaffected");
    let (okst, log) = echo.stop();
    assert!(okst.success(), "{log}");
}

/// One grant of several flows: DNS over UDP and TCP on port 53, and its secondary zone's
/// transfers, whose replies come back to TCP's ephemeral ports (a granted port range).
#[test]
fn dns_over_udp_and_tcp_with_a_secondary_zone_behind_the_daemon() {
    let s = Setup::new();
    let dir = s.dir.join("knot");
    std::fs::create_dir_all(&dir).unwrap();
    let zone =
        "$ORIGIN second.test.\n$TTL 60\n@ SOA ns h 7 3600 600 86400 60\n@ NS ns\nns A 198.18.3.1\nwww A 198.18.3.7\n";
    std::fs::write(dir.join("second.test.zone"), zone).unwrap();
    let conf = format!(
        "server:\n  listen: {CLIENT}@5303\n  rundir: {d}\nlog:\n  - target: stderr\n    any: info\ndatabase:\n  storage: {d}\n\
         acl:\n  - id: s\n    address: {DNS_ADDR}\n    action: transfer\n\
         zone:\n  - domain: second.test\n    file: {d}/second.test.zone\n    storage: {d}\n    acl: s\n",
        d = dir.display()
    );
    let _knot = crate::dns_xfr::spawn_knot(&s.net.cli_ns, &dir, &conf);
    // Behind the daemon the server sends to a neighbour the kernel knows (it answers no ARP
    // of its own there): the kernel resolves the primary, as it would a gateway.
    let ping = s.net.exec(&s.net.srv_ns, &["ping", "-c", "1", "-W", "2", CLIENT]);
    assert!(ping.status.success());
    let zone_arg = "../tests/data/example.zone";
    let dns =
        s.server(61002, &["dns", "--addr", DNS_ADDR, "--zone", zone_arg, "--secondary", "second.test=198.18.0.2@5303"]);
    let g = s.grant("dns-53").unwrap();
    assert_eq!(g["flows"], serde_json::json!(["udp/53", "tcp/53", "tcp/32768-60999"]), "{g}");
    assert_eq!(kdig(&s.net, "www.example.com"), "198.18.1.2\n198.18.1.3", "over UDP");
    let tcp = s.net.exec(
        &s.net.cli_ns,
        &["kdig", "+tcp", "+short", "+timeout=2", "+retry=2", &format!("@{DNS_ADDR}"), "www.example.com", "A"],
    );
    assert_eq!(String::from_utf8_lossy(&tcp.stdout).trim(), "198.18.1.2\n198.18.1.3", "over TCP");
    let t = Instant::now();
    while kdig(&s.net, "www.second.test") != "198.18.3.7" {
        assert!(t.elapsed() < Duration::from_secs(20), "the secondary zone came through the daemon: {}", dns.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    let g = s.grant("dns-53").unwrap();
    assert_eq!(g["refused"], 0, "only its own flows: {g}");
    let (st, log) = dns.stop();
    assert!(st.success(), "{log}");
    assert!(log.contains("zone second.test. serial 7 transferred from 198.18.0.2@5303"), "{log}");
}
