//! `--pcap` writes what the dataplane receives and sends, readable by tcpdump.

use crate::common::*;
use std::net::UdpSocket;
use std::process::Command;
use std::time::Duration;

#[test]
fn pcap_shows_requests_and_replies_to_tcpdump() {
    let net = TestNet::new(1);
    let pcap = std::env::temp_dir().join(format!("sirocco-e2e-{}.pcap", std::process::id()));
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--pcap", pcap.to_str().unwrap()]);
    in_netns(&net.cli_ns.clone(), || {
        let u = UdpSocket::bind("0.0.0.0:0").unwrap();
        u.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut b = [0u8; 64];
        for i in 0..3u8 {
            u.send_to(&[b'c', b'a', b'p', b'0' + i], (SERVER_OWN, 7)).unwrap();
            u.recv_from(&mut b).unwrap();
        }
    });
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    let out =
        Command::new("tcpdump").args(["-n", "-r", pcap.to_str().unwrap(), "udp port 7"]).output().expect("tcpdump");
    let _ = std::fs::remove_file(&pcap);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "tcpdump could not read the capture: {}", String::from_utf8_lossy(&out.stderr));
    let requests = text.lines().filter(|l| l.contains("> 198.18.0.10.7:")).count();
    let replies = text.lines().filter(|l| l.contains("198.18.0.10.7 >")).count();
    assert_eq!((requests, replies), (3, 3), "tcpdump saw:\n{text}");
}
