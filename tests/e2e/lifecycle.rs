//! Start, stop, kill: the XDP filter never outlives sirocco.

use crate::common::*;
use std::net::UdpSocket;
use std::time::Duration;

fn one_echo(ns: &str, dst: &'static str) -> bool {
    in_netns(ns, move || {
        let u = UdpSocket::bind("0.0.0.0:0").unwrap();
        u.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        let mut b = [0u8; 16];
        (0..5).any(|_| {
            u.send_to(b"alive", (dst, 7)).unwrap();
            matches!(u.recv_from(&mut b), Ok((5, _)))
        })
    })
}

#[test]
fn sigterm_detaches_the_filter() {
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    assert!(net.server_has_xdp());
    assert!(one_echo(&net.cli_ns, SERVER_OWN));
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert!(!net.server_has_xdp(), "XDP program left on the interface after SIGTERM");
}

#[test]
fn kill_9_leaves_nothing_and_restart_is_clean() {
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    assert!(one_echo(&net.cli_ns, SERVER_OWN));
    s.kill9();
    // The filter is attached through a BPF link owned by the process: the kernel removes it.
    let t = std::time::Instant::now();
    while net.server_has_xdp() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!net.server_has_xdp(), "XDP program left on the interface after kill -9");
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    assert!(one_echo(&net.cli_ns, SERVER_OWN), "serves again after restart");
    let c = stop_and_count(s);
    assert!(total(&c, "udp_replies") >= 1);
    assert!(!net.server_has_xdp());
}

#[test]
fn a_stale_netlink_filter_is_replaced() {
    // A program of sirocco's name attached the old way (netlink, which does not detach on
    // exit), as a crashed older sirocco or a hand-load would leave it.
    let net = TestNet::new(1);
    let stale = std::env::temp_dir().join(format!("sirocco-stale-{}.o", std::process::id()));
    std::fs::write(&stale, io::filter::object()).unwrap();
    let out = net.exec(
        &net.srv_ns,
        &["ip", "link", "set", "dev", &net.srv_if, "xdpdrv", "obj", stale.to_str().unwrap(), "sec", "xdp"],
    );
    let _ = std::fs::remove_file(&stale);
    assert!(out.status.success(), "loading the stale program: {}", String::from_utf8_lossy(&out.stderr));
    assert!(net.server_has_xdp());
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER_OWN]);
    assert!(one_echo(&net.cli_ns, SERVER_OWN));
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert!(!net.server_has_xdp(), "neither the stale nor the new program may remain");
}
