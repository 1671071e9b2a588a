//! IPv6 against the kernel's stack and real tools: ping -6 and neighbour discovery on an
//! address sirocco owns, UDP echo and DNS over IPv6 with both families served at once, the
//! kernel keeping its own IPv6 traffic on the same interface, sirocco's generator resolving
//! its neighbour, and malformed IPv6 from the wire.

use crate::common::*;
use crate::malformed::{mac_of, send_raw};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::Command;
use std::time::Duration;
use wire::build::{self, IPV6_PAYLOAD_AT};
use wire::ethernet::MacAddr;
use wire::icmpv6::Icmpv6Repr;
use wire::ipv6::{Ipv6Addr, NextHeader};
use wire::udp::UdpRepr;

fn a6(s: &str) -> Ipv6Addr {
    s.parse::<std::net::Ipv6Addr>().unwrap().into()
}

/// True if a kernel UDP socket in `ns` gets an echo from `[dst]:7` within five tries.
fn one_echo6(ns: &str, dst: &'static str) -> bool {
    in_netns(ns, move || {
        let u = UdpSocket::bind("[::]:0").unwrap();
        u.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        let to = SocketAddr::new(dst.parse().unwrap(), 7);
        let mut b = [0u8; 16];
        (0..5).any(|_| {
            u.send_to(b"alive6", to).unwrap();
            matches!(u.recv_from(&mut b), Ok((6, _)))
        })
    })
}

#[test]
fn ping6_and_neighbour_discovery_on_an_address_sirocco_owns() {
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN6]);
    let out = net.exec(&net.cli_ns, &["ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", SERVER_OWN6]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("3 received"), "ping -6 failed: {text}");
    // The kernel's neighbour discovery resolved sirocco's address to the server veth's MAC.
    let mac = mac_of(&net, &net.srv_ns, &net.srv_if).to_string();
    let neigh = String::from_utf8(net.exec(&net.cli_ns, &["ip", "-6", "neigh", "show", SERVER_OWN6]).stdout).unwrap();
    assert!(neigh.contains(&mac), "neighbour entry {neigh:?} should name {mac}");
    let c = stop_and_count(s);
    assert_eq!(total(&c, "icmpv6_echo"), 3, "{c}");
    assert!(total(&c, "nd_replies") >= 1, "{c}");
    assert_eq!(total(&c, "icmp_echo"), 0);
}

#[test]
fn udp_echo_over_ipv6_for_every_size_with_both_families_served() {
    let net = TestNet::new(2);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--addr", SERVER_OWN6, "--queues", "2"]);
    let checked = in_netns(&net.cli_ns, || {
        let socks: Vec<UdpSocket> = (0..16)
            .map(|_| {
                let s = UdpSocket::bind("[::]:0").unwrap();
                s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                s
            })
            .collect();
        let to = SocketAddr::new(SERVER_OWN6.parse().unwrap(), 7);
        let mut buf = vec![0u8; 2000];
        let mut checked = 0;
        // Every size that fits a 1500-byte MTU unfragmented over IPv6 (40 + 8 bytes of headers).
        for size in 1..=1452usize {
            let s = &socks[size % socks.len()];
            let msg: Vec<u8> = (0..size).map(|i| (i as u8) ^ (size as u8)).collect();
            let ok = (0..3).any(|_| {
                s.send_to(&msg, to).unwrap();
                match s.recv_from(&mut buf) {
                    Ok((n, from)) => {
                        assert_eq!(from, to);
                        assert_eq!(&buf[..n], &msg[..], "size {size}: echo differs");
                        true
                    }
                    Err(_) => false, // a lost datagram is retried, never skipped
                }
            });
            assert!(ok, "no echo for size {size} after 3 tries");
            checked += 1;
        }
        checked
    });
    assert_eq!(checked, 1452);
    assert!(one_echo(&net.cli_ns, SERVER_OWN), "IPv4 served by the same server");
    // socat, a tool sirocco did not write, over IPv6.
    let out = Command::new("sh")
        .args([
            "-c",
            &format!("echo hello-socat | ip netns exec {} timeout 5 socat - UDP6:[{SERVER_OWN6}]:7", net.cli_ns),
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hello-socat", "{}", String::from_utf8_lossy(&out.stderr));
    let c = stop_and_count(s);
    assert!(total(&c, "udp_replies") >= 1452 + 2, "{c}");
    assert_eq!(total(&c, "drop_udp_bad_checksum"), 0, "{c}");
}

fn kdig(net: &TestNet, server: &str, name: &str, qtype: &str) -> String {
    let out = net
        .exec(&net.cli_ns, &["kdig", &format!("@{server}"), "+norec", "+noall", "+answer", "+authority", name, qtype]);
    assert!(out.status.success(), "kdig @{server}: {}", String::from_utf8_lossy(&out.stderr));
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    lines.sort();
    lines.join("\n")
}

#[test]
fn dns_over_ipv6_answers_kdig_as_over_ipv4() {
    let net = TestNet::new(1);
    let zone = format!("{}/../tests/data/example.zone", env!("CARGO_MANIFEST_DIR"));
    let s = net.start(&["dns", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--addr", SERVER_OWN6, "--zone", &zone]);
    s.wait_for_log("dns on port 53", Duration::from_secs(10));
    let mut compared = 0;
    for (name, t) in
        [("www.example.com", "A"), ("www.example.com", "AAAA"), ("example.com", "MX"), ("nx.example.com", "A")]
    {
        let v6 = kdig(&net, SERVER_OWN6, name, t);
        let v4 = kdig(&net, SERVER_OWN, name, t);
        assert!(!v6.is_empty(), "an answer over IPv6 for {name} {t}");
        assert_eq!(v6, v4, "{name} {t}: the same answer over both families");
        compared += 1;
    }
    assert_eq!(compared, 4);
    let c = stop_and_count(s);
    assert_eq!(total(&c, "udp_replies"), 8, "{c}");
}

/// A kernel TCP server at `[addr]:port` in `ns` that echoes one connection.
fn kernel_tcp_echo(ns: &str, addr: &'static str, port: u16) -> std::thread::JoinHandle<()> {
    let (tx, rx) = std::sync::mpsc::channel();
    let ns = ns.to_string();
    let h = std::thread::spawn(move || {
        in_netns(&ns, move || {
            let l = TcpListener::bind(SocketAddr::new(addr.parse().unwrap(), port)).unwrap();
            tx.send(()).unwrap();
            l.set_nonblocking(false).unwrap();
            let (mut c, _) = l.accept().unwrap();
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut b = [0u8; 64];
            let n = c.read(&mut b).unwrap();
            c.write_all(&b[..n]).unwrap();
        })
    });
    rx.recv_timeout(Duration::from_secs(5)).expect("kernel TCP server listening");
    h
}

fn tcp_roundtrip(ns: &str, addr: &'static str, port: u16) -> Vec<u8> {
    in_netns(ns, move || {
        let to = SocketAddr::new(addr.parse().unwrap(), port);
        let mut c = TcpStream::connect_timeout(&to, Duration::from_secs(5)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(b"ssh-like").unwrap();
        let mut b = vec![0u8; 8];
        c.read_exact(&mut b).unwrap();
        b
    })
}

#[test]
fn the_kernel_keeps_its_own_ipv6_traffic_on_the_same_interface() {
    let net = TestNet::new(1);
    // sirocco owns 2001:2::10 and shares 198.18.0.1 — the kernel keeps 2001:2::1 entirely.
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN6]);
    let _ = net.exec(&net.cli_ns, &["ip", "-6", "neigh", "flush", "dev", &net.cli_if]);
    // Neighbour discovery and ping for the kernel's address: answered by the kernel.
    let out = net.exec(&net.cli_ns, &["ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", SERVER6]);
    assert!(out.status.success(), "ping -6 to the kernel's address: {}", String::from_utf8_lossy(&out.stdout));
    // An SSH-like TCP service of the kernel's, over IPv6.
    let h = kernel_tcp_echo(&net.srv_ns, SERVER6, 2222);
    assert_eq!(tcp_roundtrip(&net.cli_ns, SERVER6, 2222), b"ssh-like");
    h.join().unwrap();
    assert!(one_echo6(&net.cli_ns, SERVER_OWN6), "sirocco serves its own address meanwhile");
    let c = stop_and_count(s);
    assert_eq!(total(&c, "icmpv6_echo"), 0, "the kernel's pings are not sirocco's: {c}");
    assert!(
        total(&c, "drop_icmpv6_ignored") + total(&c, "drop_eth_not_for_us") == 0,
        "nothing of the kernel's reached sirocco: {c}"
    );
    assert!(!net.server_has_xdp(), "the filter is gone");
}

#[test]
fn an_ipv6_address_shared_with_the_kernel_serves_udp_and_leaves_the_rest() {
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER6]);
    s.wait_for_log("shared with the kernel", Duration::from_secs(5));
    assert!(one_echo6(&net.cli_ns, SERVER6), "UDP 7 on the shared address is sirocco's");
    let out = net.exec(&net.cli_ns, &["ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", SERVER6]);
    assert!(out.status.success(), "the kernel answers ping: {}", String::from_utf8_lossy(&out.stdout));
    let h = kernel_tcp_echo(&net.srv_ns, SERVER6, 2222);
    assert_eq!(tcp_roundtrip(&net.cli_ns, SERVER6, 2222), b"ssh-like");
    h.join().unwrap();
    let c = stop_and_count(s);
    assert_eq!((total(&c, "icmpv6_echo"), total(&c, "nd_replies")), (0, 0), "{c}");
    assert!(total(&c, "udp_replies") >= 1);
}

#[test]
fn the_generator_resolves_its_ipv6_neighbour_and_measures_the_echo() {
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN6]);
    let r = crate::gen::run_gen(&net, CLIENT_OWN6, SERVER_OWN6, "10000", "1");
    let (sent, received) = (r["sent"].as_u64().unwrap(), r["received"].as_u64().unwrap());
    assert!(sent >= 9_000, "sent {sent} at 10k/s for 1 s: {r}");
    assert!(received as f64 >= sent as f64 * 0.99, "received {received} of {sent}");
    let c = stop_and_count(s);
    assert!(total(&c, "nd_replies") >= 1, "the generator asked for sirocco's address: {c}");
    assert_eq!(total(&c, "udp_replies"), sent.min(total(&c, "udp_replies")).max(received));
}

#[test]
fn malformed_ipv6_from_the_wire_is_counted_and_dropped() {
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN6]);
    let srv_mac = mac_of(&net, &net.srv_ns, &net.srv_if);
    let cli_mac = mac_of(&net, &net.cli_ns, &net.cli_if);
    let (src, dst) = (a6(CLIENT6), a6(SERVER_OWN6));
    let frame = |first: u8, ext: &[u8], upper: &[u8], hop: u8| {
        let mut b = vec![0u8; IPV6_PAYLOAD_AT + ext.len() + upper.len()];
        build::ipv6_headers(&mut b, (cli_mac, src), (srv_mac, dst), first, ext.len() + upper.len(), hop);
        b[IPV6_PAYLOAD_AT..IPV6_PAYLOAD_AT + ext.len()].copy_from_slice(ext);
        b[IPV6_PAYLOAD_AT + ext.len()..].copy_from_slice(upper);
        b
    };
    let mut udp = vec![0u8; 8 + 10];
    udp[8..].copy_from_slice(b"0123456789");
    UdpRepr { src_port: 40000, dst_port: 7, payload_len: 10 }.emit(&mut udp, src, dst);
    let mut frames = vec![
        // ipv6_fragment: a first fragment, more to come.
        frame(NextHeader::FRAGMENT, &[NextHeader::UDP, 0, 0, 1, 0, 0, 0, 7], &udp, 64),
        // ipv6_malformed: a routing header with segments left.
        frame(NextHeader::ROUTING, &[NextHeader::UDP, 0, 4, 1, 0, 0, 0, 0], &udp, 64),
        // ipv6_malformed: an option whose type says discard.
        frame(NextHeader::DEST_OPTS, &[NextHeader::UDP, 0, 0x81, 4, 0, 0, 0, 0], &udp, 64),
    ];
    // icmpv6_malformed: a solicitation with a hop limit below 255. (Chains longer than the
    // filter walks go to the kernel; the engine's own bound is tested in memory.)
    let ns = {
        let m = Icmpv6Repr::NeighborSolicit { target: dst, source_mac: Some(cli_mac) };
        let mut b = vec![0u8; m.len(0)];
        m.emit(src, dst, &mut b);
        b
    };
    frames.push(frame(NextHeader::ICMPV6, &[], &ns, 64));
    // ipv6_truncated: a payload length beyond the frame.
    let mut long = frame(NextHeader::UDP, &[], &udp, 64);
    long[18..20].copy_from_slice(&400u16.to_be_bytes());
    frames.push(long);
    // udp_bad_checksum: zero, which IPv6 forbids.
    let mut zero = udp.clone();
    zero[6..8].fill(0);
    frames.push(frame(NextHeader::UDP, &[], &zero, 64));
    send_raw(&net.cli_ns, &net.cli_if, frames);
    assert!(one_echo6(&net.cli_ns, SERVER_OWN6), "sirocco stopped serving after malformed input");
    let c = stop_and_count(s);
    for (name, n) in [
        ("drop_ipv6_fragment", 1),
        ("drop_ipv6_malformed", 2),
        ("drop_icmpv6_malformed", 1),
        ("drop_ipv6_truncated", 1),
        ("drop_udp_bad_checksum", 1),
    ] {
        assert_eq!(total(&c, name), n, "{name}: {c}");
    }
}

#[test]
fn two_addresses_of_one_family_are_refused() {
    require_root();
    let net = TestNet::new(1);
    let out =
        net.exec(&net.srv_ns, &[sirocco(), "echo", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--addr", SERVER]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("one address per family"), "{err}");
    assert!(!err.contains("panicked"));
    assert!(!net.server_has_xdp(), "no filter left behind");
}

#[test]
fn web_over_ipv6_answers_curl_and_wrk() {
    let root = crate::web::Root::new("web6");
    let big = crate::web::pattern(300_000, 6);
    root.write("index.html", b"<html><body>over IPv6</body></html>\n");
    root.write("big.bin", &big);
    let net = TestNet::new(1);
    let s =
        net.start(&["web", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--addr", SERVER_OWN6, "--root", root.path()]);
    s.wait_for_log("web on port 80", Duration::from_secs(10));
    let out =
        net.exec(&net.cli_ns, &["curl", "-6", "-sS", "--max-time", "10", &format!("http://[{SERVER_OWN6}]/big.bin")]);
    assert!(out.status.success(), "curl -6: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout == big, "curl -6 got {} bytes, not the file's {}", out.stdout.len(), big.len());
    let out =
        net.exec(&net.cli_ns, &["curl", "-4", "-sS", "--max-time", "10", &format!("http://{SERVER_OWN}/index.html")]);
    assert_eq!(out.stdout, b"<html><body>over IPv6</body></html>\n", "IPv4 served by the same server");
    let out = net.exec(
        &net.cli_ns,
        &["wrk", "-t1", "-c20", "-d3s", "--timeout", "5s", &format!("http://[{SERVER_OWN6}]/index.html")],
    );
    let n = crate::web::wrk_requests(&out);
    assert!(n > 1000, "{n} requests in 3 s");
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert!(crate::web::web_stat(&log, "responses prepared") >= n, "{}", crate::web::web_line(&log));
    // Pre-copy (the default mode) serves IPv6 clients from replicas of their own.
    assert!(crate::web::precopy_stat(&log, "replica sends") >= n, "{log}");
}

/// The frames of a pcap file (little-endian, as sirocco writes it).
fn pcap_frames(path: &std::path::Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..4], &[0xd4, 0xc3, 0xb2, 0xa1], "a little-endian pcap");
    let (mut at, mut out) = (24, Vec::new());
    while at + 16 <= b.len() {
        let n = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push(b[at + 16..at + 16 + n].to_vec());
        at += 16 + n;
    }
    out
}

/// A TCP echo on `addr` (capturing what it sends) gets, from the client's side, the ICMP
/// message `icmp(client_port, client_mac, server_mac)` makes about one of its segments; then
/// 200 KB go through it. Checks the echo is intact, the message was taken, and every segment
/// sent fits `mtu` and nearly fills it; returns the frames sirocco sent.
fn echo_after_icmp(
    addr: &'static str,
    mtu: usize,
    icmp: impl FnOnce(u16, MacAddr, MacAddr) -> Vec<u8> + Send + 'static,
) -> Vec<Vec<u8>> {
    let net = TestNet::new(1);
    let pcap = std::env::temp_dir().join(format!("sirocco-pmtu-{}-{addr}.pcap", std::process::id()));
    let s = net.start_tcp_echo(&["--addr", addr, "--pcap", pcap.to_str().unwrap()]);
    let srv_mac = mac_of(&net, &net.srv_ns, &net.srv_if);
    let cli_mac = mac_of(&net, &net.cli_ns, &net.cli_if);
    let (cli_ns, cli_if) = (net.cli_ns.clone(), net.cli_if.clone());
    let echoed = in_netns(&net.cli_ns.clone(), move || {
        let mut c = TcpStream::connect_timeout(&sockaddr(addr, 7), Duration::from_secs(5)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut one = [0u8; 1];
        c.write_all(b"x").unwrap();
        c.read_exact(&mut one).unwrap();
        let port = c.local_addr().unwrap().port();
        send_raw(&cli_ns, &cli_if, vec![icmp(port, cli_mac, srv_mac)]);
        std::thread::sleep(Duration::from_millis(100));
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut w = c.try_clone().unwrap();
        let d = data.clone();
        let writer = std::thread::spawn(move || w.write_all(&d).unwrap());
        let mut back = vec![0u8; data.len()];
        c.read_exact(&mut back).unwrap();
        writer.join().unwrap();
        back == data
    });
    assert!(echoed, "the echo came back intact");
    let c = stop_and_count(s);
    assert_eq!(total(&c, "icmp_too_big"), 1, "{c}");
    let frames = pcap_frames(&pcap);
    let _ = std::fs::remove_file(&pcap);
    let sent: Vec<Vec<u8>> = frames.into_iter().filter(|f| f.len() > 14 && f[6..12] == srv_mac.0).collect();
    let biggest = sent.iter().map(|f| f.len()).max().unwrap_or(0);
    assert!(sent.len() > 100, "sirocco's segments are in the capture ({})", sent.len());
    assert!(biggest <= 14 + mtu, "a segment of {biggest} bytes went out after the path MTU fell to {mtu}");
    assert!(biggest > 14 + mtu - 80, "and the segments are as large as the path allows ({biggest})");
    sent
}

#[test]
fn tcp_honours_an_ipv6_packet_too_big() {
    let sent = echo_after_icmp(SERVER_OWN6, 1280, |port, cli_mac, srv_mac| {
        // A router on the way says 1280 bytes is all it takes: the invoking packet is one of
        // sirocco's segments to us.
        let mut inner = vec![0u8; 40 + 20];
        let r = wire::ipv6::Ipv6Repr {
            src: a6(SERVER_OWN6),
            dst: a6(CLIENT6),
            protocol: NextHeader::TCP,
            payload_len: 1420,
            hop_limit: 63,
            traffic_class: 0,
            flow_label: 0,
        };
        r.emit(&mut inner);
        inner[40..42].copy_from_slice(&7u16.to_be_bytes());
        inner[42..44].copy_from_slice(&port.to_be_bytes());
        let m = Icmpv6Repr::PacketTooBig { mtu: 1280 };
        let mut msg = vec![0u8; m.len(inner.len())];
        msg[8..].copy_from_slice(&inner);
        let router = a6("2001:2::fe");
        m.emit(router, a6(SERVER_OWN6), &mut msg);
        let mut f = vec![0u8; IPV6_PAYLOAD_AT + msg.len()];
        build::ipv6_headers(&mut f, (cli_mac, router), (srv_mac, a6(SERVER_OWN6)), NextHeader::ICMPV6, msg.len(), 64);
        f[IPV6_PAYLOAD_AT..].copy_from_slice(&msg);
        f
    });
    // One flow, one flow label (RFC 6437), not zero.
    let labels: std::collections::BTreeSet<u32> = sent
        .iter()
        .filter(|f| f[12..14] == [0x86, 0xdd] && f[20] == NextHeader::TCP)
        .map(|f| u32::from_be_bytes([0, f[15] & 0x0f, f[16], f[17]]))
        .collect();
    assert_eq!(labels.len(), 1, "flow labels {labels:?}");
    assert!(!labels.contains(&0));
}

#[test]
fn socat_talks_tcp_to_sirocco_over_ipv6() {
    let net = TestNet::new(1);
    let s = net.start_tcp_echo(&["--addr", SERVER_OWN6]);
    s.wait_for_log("on port 7", Duration::from_secs(10));
    let out = Command::new("sh")
        .args([
            "-c",
            &format!(
                "printf 'over tcp6\\n' | ip netns exec {} timeout 5 socat -t 2 - TCP6:[{SERVER_OWN6}]:7",
                net.cli_ns
            ),
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "over tcp6\n", "{}", String::from_utf8_lossy(&out.stderr));
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert!(log.contains("accepted 1 closed 1"), "{log}");
}

/// The same for IPv4 (RFC 1191): an ICMP "fragmentation needed" cuts later segments to the
/// next hop's MTU.
#[test]
fn tcp_honours_an_icmp_fragmentation_needed() {
    use wire::build::{Ipv4Frame, IPV4_PAYLOAD_AT};
    use wire::ipv4::{Ipv4Addr, Ipv4Repr};
    let a4 = |s: &str| Ipv4Addr::from(s.parse::<std::net::Ipv4Addr>().unwrap());
    echo_after_icmp(SERVER_OWN, 1000, move |port, cli_mac, srv_mac| {
        // The invoking packet: the IPv4 header of one of sirocco's segments and 8 bytes more.
        let mut msg = vec![0u8; 8 + 20 + 8];
        msg[0] = 3; // destination unreachable
        msg[1] = 4; // fragmentation needed
        msg[6..8].copy_from_slice(&1000u16.to_be_bytes());
        let inner = Ipv4Repr {
            src: a4(SERVER_OWN),
            dst: a4(CLIENT),
            protocol: wire::Protocol::TCP,
            payload_len: 1400,
            ttl: 63,
            ident: 1,
            tos: 0,
            dont_frag: true,
        };
        inner.emit(&mut msg[8..]);
        msg[28..30].copy_from_slice(&7u16.to_be_bytes());
        msg[30..32].copy_from_slice(&port.to_be_bytes());
        let c_sum = wire::checksum::checksum(&msg);
        msg[2..4].copy_from_slice(&c_sum.to_be_bytes());
        let router = a4("198.18.0.254");
        let hdr = Ipv4Frame { src_mac: cli_mac, dst_mac: srv_mac, src: router, dst: a4(SERVER_OWN), protocol: 1 };
        let mut f = vec![0u8; IPV4_PAYLOAD_AT + msg.len()];
        f[IPV4_PAYLOAD_AT..].copy_from_slice(&msg);
        hdr.emit(&mut f, msg.len(), 9, 64);
        f
    });
}
