//! `sirocco dns --config` and SIGHUP reload: new zones are served without a query lost, and a
//! zone that fails to load leaves the old ones serving with one clear error.

use crate::common::*;
use std::net::UdpSocket;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("sirocco-reload-{}-{name}", std::process::id()))
}

fn zone_text(addr: &str) -> String {
    format!(
        "$ORIGIN example.com.\n$TTL 60\n@ SOA ns1 h 1 7200 3600 1209600 60\n@ NS ns1\nns1 A 198.18.1.1\nwww A {addr}\n"
    )
}

fn query(id: u16) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend([0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    m.extend(b"\x03www\x07example\x03com\x00\x00\x01\x00\x01");
    m
}

/// The A record's address in a response to `query`.
fn address(resp: &[u8]) -> Option<[u8; 4]> {
    let n = resp.len();
    (resp[7] == 1 && n >= 4).then(|| [resp[n - 4], resp[n - 3], resp[n - 2], resp[n - 1]])
}

fn sighup(s: &Sirocco) {
    // SAFETY: kill with a pid of a child we started.
    assert_eq!(unsafe { libc::kill(s.pid() as i32, libc::SIGHUP) }, 0);
}

#[test]
fn config_file_and_sighup_reload_without_losing_queries() {
    reload_without_losing_queries(false);
}

#[test]
fn reload_switches_the_answers_in_xdp_whole() {
    reload_without_losing_queries(true);
}

/// `xdp`: the answers come from the XDP program, whose table a reload replaces whole.
fn reload_without_losing_queries(xdp: bool) {
    let net = TestNet::new(1);
    let tag = if xdp { "xdp-" } else { "" };
    let zone = tmp(&format!("{tag}example.zone"));
    std::fs::write(&zone, zone_text("198.18.1.2")).unwrap();
    let config = tmp(&format!("{tag}dns.toml"));
    std::fs::write(
        &config,
        format!(
            "# sirocco dns\niface = \"{}\"\naddr = \"{SERVER_OWN}\"\nport = 53\n\n[[zone]]\nname = \"example.com\"\nfile = \"{}\"\n",
            net.srv_if,
            zone.file_name().unwrap().to_str().unwrap()
        ),
    )
    .unwrap();
    let s = if xdp {
        net.xdp_peer();
        net.start(&["dns", "--config", config.to_str().unwrap(), "--xdp-answers", "on"])
    } else {
        net.start(&["dns", "--config", config.to_str().unwrap()])
    };
    // Serving (the filter, the answer table and the sockets in place) before the client
    // starts: the test is of reloads, not of the start.
    s.wait_for_log("dns on port 53", Duration::from_secs(10));

    // A client queries without pause through both reloads; every query must be answered.
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicBool::new(false));
    let client = {
        let (ns, stop, answered) = (net.cli_ns.clone(), stop.clone(), answered.clone());
        std::thread::spawn(move || {
            in_netns(&ns, move || {
                let u = UdpSocket::bind("0.0.0.0:0").unwrap();
                u.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
                let (mut sent, mut lost, mut seen) = (0u32, 0u32, Vec::new());
                let t = Instant::now();
                while !stop.load(Ordering::SeqCst) && t.elapsed() < Duration::from_secs(60) {
                    let id = sent as u16;
                    u.send_to(&query(id), (SERVER_OWN, 53)).unwrap();
                    sent += 1;
                    let mut b = [0u8; 512];
                    match u.recv_from(&mut b) {
                        Ok((n, _)) if b[..2] == id.to_be_bytes() => {
                            answered.store(true, Ordering::SeqCst);
                            if let Some(a) = address(&b[..n]) {
                                if seen.last() != Some(&a) {
                                    seen.push(a);
                                }
                            }
                        }
                        _ => lost += 1,
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                (sent, lost, seen)
            })
        })
    };
    // The client must have seen the old zone before it changes: on a loaded machine its
    // thread can take longer to start than any fixed pause.
    let t = Instant::now();
    while !answered.load(Ordering::SeqCst) && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(&zone, zone_text("198.18.9.9")).unwrap();
    sighup(&s);
    s.wait_for_log("reloaded 1 zone", Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(500));

    // A broken zone: the error names file and line, the old answers stay.
    std::fs::write(&zone, zone_text("198.18.7.7").replace("www A 198.18.7.7", "www A 300.1.1.1")).unwrap();
    sighup(&s);
    s.wait_for_log("reload failed", Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::SeqCst);
    let (sent, lost, seen) = client.join().unwrap();

    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert!(log.contains(&format!("{}:6", zone.display())), "the error names file and line: {log}");
    assert!(sent > 100, "a steady stream of queries ({sent})");
    assert_eq!(lost, 0, "no query lost across two reloads ({sent} sent): {log}");
    assert_eq!(seen, vec![[198, 18, 1, 2], [198, 18, 9, 9]], "old zone, then the reloaded one, never the broken one");
    if xdp {
        let answered = answered_in_xdp(&log);
        assert!(answered * 10 >= u64::from(sent) * 9, "the program answered the queries ({answered} of {sent}): {log}");
    }
    let _ = std::fs::remove_file(zone);
    let _ = std::fs::remove_file(config);
}

#[test]
fn bad_config_is_one_clear_line() {
    let bad = tmp("bad.toml");
    std::fs::write(&bad, "iface = \"x\"\nadress = \"198.18.0.10\"\n").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--config".into(), bad.display().to_string()], "bad.toml:2"),
        (vec!["--config".into(), "/nonexistent/sirocco.toml".into()], "/nonexistent/sirocco.toml"),
        (vec!["--addr".into(), SERVER_OWN.into(), "--zone".into(), "x.zone".into()], "--iface"),
    ];
    for (args, want) in cases {
        let out = Command::new(sirocco()).arg("dns").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} must fail");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(err.contains(want) && !err.contains("panicked"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_file(bad);
}
