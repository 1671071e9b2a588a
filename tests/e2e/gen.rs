//! `sirocco gen udp` against sirocco's echo and against a kernel-socket echo server.

use crate::common::*;
use std::net::UdpSocket;
use std::process::Command;
use std::time::{Duration, Instant};

pub fn run_gen(net: &TestNet, addr: &str, dst: &str, rate: &str, secs: &str) -> serde_json::Value {
    let json = std::env::temp_dir().join(format!("sirocco-gen-{}-{}.json", std::process::id(), addr));
    let out = Command::new("ip")
        .args(["netns", "exec", &net.cli_ns, sirocco(), "gen", "udp", "--iface", &net.cli_if, "--addr", addr])
        .args(["--dst", dst, "--rate", rate, "--duration", secs, "--size", "100", "--flows", "8"])
        .args(["--json", json.to_str().unwrap()])
        .output()
        .expect("run gen");
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "gen failed:\n{text}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    v
}

#[test]
fn gen_against_sirocco_echo_on_shared_addresses() {
    let net = TestNet::new(1);
    let s = net.start(&["echo", "--iface", &net.srv_if, "--addr", SERVER]);
    let r = run_gen(&net, CLIENT, SERVER, "20000", "1");
    let sent = r["sent"].as_u64().unwrap();
    let received = r["received"].as_u64().unwrap();
    assert!((19_000..=20_100).contains(&sent), "sent {sent} at 20k/s for 1 s");
    assert!(received as f64 >= sent as f64 * 0.99, "received {received} of {sent}");
    assert!(r["rtt_ns"]["p50"].as_u64().unwrap() > 0);
    let c = stop_and_count(s);
    assert_eq!(total(&c, "udp_replies"), received.max(total(&c, "udp_replies")).min(sent));
}

#[test]
fn gen_against_a_kernel_echo_server() {
    let net = TestNet::new(1);
    // A kernel-socket echo server in the server namespace, bounded in time.
    let ns = net.srv_ns.clone();
    let server = std::thread::spawn(move || {
        in_netns(&ns, || {
            let u = UdpSocket::bind((SERVER, 7)).unwrap();
            u.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
            let mut b = [0u8; 2048];
            let t = Instant::now();
            let mut n = 0u64;
            while t.elapsed() < Duration::from_secs(6) {
                if let Ok((len, from)) = u.recv_from(&mut b) {
                    let _ = u.send_to(&b[..len], from);
                    n += 1;
                }
            }
            n
        })
    });
    std::thread::sleep(Duration::from_millis(200));
    // The generator owns its address: it resolves the server and answers the kernel's ARP.
    let r = run_gen(&net, CLIENT_OWN, SERVER, "10000", "1");
    let echoed = server.join().unwrap();
    let sent = r["sent"].as_u64().unwrap();
    let received = r["received"].as_u64().unwrap();
    assert!(sent >= 9_000, "sent {sent}");
    assert!(received as f64 >= sent as f64 * 0.95, "received {received} of {sent}");
    assert!(echoed >= received);
}
