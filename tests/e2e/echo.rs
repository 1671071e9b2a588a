//! UDP echo and ping against the kernel as the peer; the kernel's own services keep working.

use crate::common::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::Duration;

#[test]
fn ping_and_arp_on_an_address_sirocco_owns() {
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    let out = net.exec(&net.cli_ns, &["ping", "-c", "3", "-i", "0.2", "-W", "2", SERVER_OWN]);
    assert!(out.status.success(), "ping failed: {}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 received"));
    // The kernel's ARP resolved sirocco's address to the server veth's MAC.
    let mac =
        String::from_utf8(net.exec(&net.srv_ns, &["cat", &format!("/sys/class/net/{}/address", net.srv_if)]).stdout)
            .unwrap();
    let neigh = String::from_utf8(net.exec(&net.cli_ns, &["ip", "neigh", "show", SERVER_OWN]).stdout).unwrap();
    assert!(neigh.contains(mac.trim()), "neighbour entry {neigh:?} should name {mac}");
    let c = stop_and_count(s);
    assert_eq!(total(&c, "icmp_echo"), 3);
    assert!(total(&c, "arp_replies") >= 1);
}

fn echo_all_sizes(ns: &str, dst: &'static str, sockets: usize) -> usize {
    in_netns(ns, move || {
        let socks: Vec<UdpSocket> = (0..sockets)
            .map(|_| {
                let s = UdpSocket::bind("0.0.0.0:0").unwrap();
                s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                s
            })
            .collect();
        let to: SocketAddr = format!("{dst}:7").parse().unwrap();
        let mut buf = vec![0u8; 2000];
        let mut checked = 0;
        // Every size from 1 byte to the largest that fits a 1500-byte MTU unfragmented.
        for size in 1..=1472usize {
            let s = &socks[size % sockets];
            let msg: Vec<u8> = (0..size).map(|i| (i as u8) ^ (size as u8)).collect();
            let mut ok = false;
            for _attempt in 0..3 {
                s.send_to(&msg, to).unwrap();
                match s.recv_from(&mut buf) {
                    Ok((n, from)) => {
                        assert_eq!(from, to);
                        assert_eq!(&buf[..n], &msg[..], "size {size}: echo differs");
                        ok = true;
                        break;
                    }
                    Err(_) => continue, // a lost datagram is retried, never skipped
                }
            }
            assert!(ok, "no echo for size {size} after 3 tries");
            checked += 1;
        }
        checked
    })
}

#[test]
fn udp_echo_is_byte_identical_for_every_size_on_two_queues() {
    let net = TestNet::new(2);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--queues", "2"]);
    assert_eq!(echo_all_sizes(&net.cli_ns.clone(), SERVER_OWN, 32), 1472);
    let c = stop_and_count(s);
    let q0 = engine(&c, 0, "udp_replies");
    let q1 = engine(&c, 1, "udp_replies");
    assert!(q0 > 0 && q1 > 0, "both engines must serve: q0 {q0} q1 {q1}");
    assert!(q0 + q1 >= 1472);
    assert_eq!(total(&c, "udp_bad_checksum"), 0);
}

fn tcp_service(ns: &str, addr: &'static str) -> std::thread::JoinHandle<()> {
    // A kernel TCP server in the server namespace that answers one connection.
    let (tx, rx) = std::sync::mpsc::channel();
    let ns = ns.to_string();
    let h = std::thread::spawn(move || {
        in_netns(&ns, move || {
            let l = TcpListener::bind((addr, 8080)).unwrap();
            tx.send(()).unwrap();
            let (mut c, _) = l.accept().unwrap();
            let mut b = [0u8; 5];
            c.read_exact(&mut b).unwrap();
            c.write_all(b"kernel:").unwrap();
            c.write_all(&b).unwrap();
        })
    });
    rx.recv_timeout(Duration::from_secs(5)).expect("tcp service started");
    h
}

fn tcp_client(ns: &str, addr: &'static str) -> Vec<u8> {
    in_netns(ns, move || {
        let mut c =
            TcpStream::connect_timeout(&format!("{addr}:8080").parse().unwrap(), Duration::from_secs(5)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(b"hello").unwrap();
        let mut out = vec![];
        c.read_to_end(&mut out).unwrap();
        out
    })
}

#[test]
fn kernel_tcp_keeps_working_on_another_address_of_the_interface() {
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    let h = tcp_service(&net.srv_ns, SERVER);
    assert_eq!(tcp_client(&net.cli_ns, SERVER), b"kernel:hello");
    h.join().unwrap();
    let c = stop_and_count(s);
    assert!(c["filter"]["passed"].as_u64().unwrap() > 0, "the filter passed the TCP flow to the kernel");
}

#[test]
fn shared_address_kernel_keeps_tcp_ping_and_arp_while_sirocco_serves_udp() {
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER]);
    assert!(s.log().contains("shared with the kernel"), "{}", s.log());
    let h = tcp_service(&net.srv_ns, SERVER);
    assert_eq!(tcp_client(&net.cli_ns, SERVER), b"kernel:hello");
    h.join().unwrap();
    let out = net.exec(&net.cli_ns, &["ping", "-c", "2", "-i", "0.2", "-W", "2", SERVER]);
    assert!(out.status.success(), "the kernel answers ping on the shared address");
    let got = in_netns(&net.cli_ns.clone(), || {
        let u = UdpSocket::bind("0.0.0.0:0").unwrap();
        u.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        u.send_to(b"shared", (SERVER, 7)).unwrap();
        let mut b = [0u8; 64];
        let (n, _) = u.recv_from(&mut b).unwrap();
        b[..n].to_vec()
    });
    assert_eq!(got, b"shared");
    let c = stop_and_count(s);
    assert_eq!(total(&c, "icmp_echo"), 0, "ping stayed with the kernel");
    assert_eq!(total(&c, "arp_replies"), 0, "ARP stayed with the kernel");
    assert_eq!(total(&c, "udp_replies"), 1);
}
