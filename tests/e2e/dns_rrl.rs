//! Response rate limiting under a flood of queries from spoofed sources, sent as raw frames:
//! the flooded prefix gets a second's burst and then the rate, every second response over it
//! slipped as TC; a client on another prefix is answered in full all along; a client inside
//! the flooded prefix still gets its answer, over TCP after a slipped TC.

use crate::common::*;
use crate::malformed::{mac_of, send_raw};
use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wire::build::UdpFrame;
use wire::Ipv4Addr;

const RATE: u64 = 20;

fn query(id: u16) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend([0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    m.extend(b"\x05small\x01t\x04test\x00\x00\x01\x00\x01");
    m
}

/// Asks over UDP from the client's kernel socket until an answer with `id` comes (at most
/// `tries` sends, 300 ms apart, counted in `sent`); the answer's flags byte 2 and answer
/// count.
fn ask(sock: &UdpSocket, id: u16, tries: usize, sent: &mut u64) -> Option<(u8, u16)> {
    let mut buf = [0u8; 1500];
    for _ in 0..tries {
        sock.send_to(&query(id), sockaddr(SERVER_OWN, 53)).unwrap();
        *sent += 1;
        let deadline = Instant::now() + Duration::from_millis(300);
        while Instant::now() < deadline {
            match sock.recv_from(&mut buf) {
                Ok((n, _)) if n >= 12 && buf[..2] == id.to_be_bytes() => {
                    return Some((buf[2], u16::from_be_bytes([buf[6], buf[7]])))
                }
                Ok(_) => continue,
                Err(_) => break,
            }
        }
    }
    None
}

/// Where spoofed queries come from: out of `ifname` in `ns`, with `macs` (source,
/// destination), from 198.18.`net3`.`base` to 198.18.`net3`.`base + 99`.
struct Spoofer {
    ns: String,
    ifname: String,
    macs: (wire::ethernet::MacAddr, wire::ethernet::MacAddr),
    net3: u8,
    base: u8,
}

/// Sends spoofed queries in batches of `batch` every 100 ms until `stop` or `limit`;
/// returns how many were sent.
fn flood(sp: Spoofer, batch: usize, stop: Arc<AtomicBool>, limit: Duration) -> u64 {
    let Spoofer { ns, ifname, macs, net3, base } = sp;
    let start = Instant::now();
    let mut sent = 0u64;
    let mut i = 0u32;
    while !stop.load(Ordering::Relaxed) && start.elapsed() < limit {
        let frames: Vec<Vec<u8>> = (0..batch)
            .map(|_| {
                i += 1;
                let src = Ipv4Addr([198, 18, net3, base + (i % 100) as u8]);
                let f = UdpFrame {
                    src_mac: macs.0,
                    dst_mac: macs.1,
                    src,
                    dst: Ipv4Addr([198, 18, 0, 10]),
                    src_port: 10_000 + (i % 50_000) as u16,
                    dst_port: 53,
                };
                f.to_vec(&query(i as u16))
            })
            .collect();
        sent += frames.len() as u64;
        send_raw(&ns, &ifname, frames);
        std::thread::sleep(Duration::from_millis(100));
    }
    sent
}

/// A two-name zone `t.test` in a file tagged `tag`: its path and the `--zone` argument.
fn small_zone(tag: &str) -> (std::path::PathBuf, String) {
    let z = std::env::temp_dir().join(format!("sirocco-{tag}-{}.zone", std::process::id()));
    std::fs::write(
        &z,
        "$ORIGIN t.test.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 198.18.3.1\nsmall A 198.18.3.2\n",
    )
    .unwrap();
    let arg = format!("t.test={}", z.display());
    (z, arg)
}

#[test]
fn a_spoofed_flood_is_limited_while_other_prefixes_and_tcp_are_served() {
    let net = TestNet::new(1);
    let (z, zone_arg) = small_zone("rrl");
    let rate = RATE.to_string();
    let s = net.start_dns(&zone_arg, &["--rrl-rate", &rate, "--rrl-slip", "2"]);
    let macs = (mac_of(&net, &net.cli_ns, &net.cli_if), mac_of(&net, &net.srv_ns, &net.srv_if));

    // 1. 2000 queries in 1 s from 198.18.7.0/24 while the client (198.18.0.2) asks 10 a second.
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let flooder = {
        let sp = Spoofer { ns: net.cli_ns.clone(), ifname: net.cli_if.clone(), macs, net3: 7, base: 1 };
        let stop = stop.clone();
        std::thread::spawn(move || flood(sp, 200, stop, Duration::from_millis(950)))
    };
    let (legit, legit_sent) = in_netns(&net.cli_ns, || {
        let sock = UdpSocket::bind(sockaddr(CLIENT, 0)).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        let (mut answers, mut sent) = (Vec::new(), 0);
        for id in 0..15u16 {
            answers.push(ask(&sock, 40_000 + id, 3, &mut sent));
            std::thread::sleep(Duration::from_millis(100));
        }
        (answers, sent)
    });
    let flood_sent = flooder.join().unwrap();
    let flood_secs = t0.elapsed().as_secs_f64();
    assert!(
        legit.iter().all(|a| matches!(a, Some((f, 1)) if f & 0x02 == 0)),
        "another prefix is answered in full: {legit:?}"
    );

    // 2. The client's own /24 flooded: its UDP queries are limited too, yet a slipped TC
    //    comes within a few tries, and over TCP the answer is whole.
    stop.store(false, Ordering::Relaxed);
    let flooder = {
        let sp = Spoofer { ns: net.cli_ns.clone(), ifname: net.cli_if.clone(), macs, net3: 0, base: 100 };
        let stop = stop.clone();
        std::thread::spawn(move || flood(sp, 100, stop, Duration::from_secs(20)))
    };
    std::thread::sleep(Duration::from_millis(300));
    let (tc_seen, over_tcp, sent2) = in_netns(&net.cli_ns, || {
        let sock = UdpSocket::bind(sockaddr(CLIENT, 0)).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        let (mut tc_seen, mut sent) = (false, 0);
        for id in 0..40u16 {
            if let Some((flags, an)) = ask(&sock, 50_000 + id, 1, &mut sent) {
                if flags & 0x02 != 0 && an == 0 {
                    tc_seen = true;
                    break;
                }
            }
        }
        let mut c = TcpStream::connect_timeout(&sockaddr(SERVER_OWN, 53), Duration::from_secs(5)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let q = query(7);
        let mut framed = (q.len() as u16).to_be_bytes().to_vec();
        framed.extend(q);
        c.write_all(&framed).unwrap();
        let mut a = [0u8; 512];
        let n = c.read(&mut a).unwrap();
        (tc_seen, n > 14 && a[2..4] == [0, 7] && a[2 + 7] == 1, sent)
    });
    stop.store(true, Ordering::Relaxed);
    let flood2_sent = flooder.join().unwrap();
    let (st, log) = s.stop();
    let _ = std::fs::remove_file(&z);
    assert!(st.success(), "{log}");
    assert!(tc_seen, "a slipped TC reaches the client inside the flooded prefix: {log}");
    assert!(over_tcp, "over TCP the answer comes whole (no limit there): {log}");

    let line = log.lines().find(|l| l.starts_with("dns rate limit")).unwrap_or_else(|| panic!("{log}"));
    let (dropped, slipped) = (number_after(line, "dropped"), number_after(line, "slipped"));
    let noerror = number_after(log.lines().find(|l| l.starts_with("dns: ")).unwrap(), "noerror");
    // Two buckets were over the limit (one per flooded /24), each alternating drop and slip.
    assert!(dropped.abs_diff(slipped) <= 2, "slip 2: every second response over the limit is slipped: {line}");
    // Every query is NOERROR: the client's over UDP, its one over TCP, and the flood's.
    let client = legit_sent + sent2 + 1;
    let flood_seen = noerror.saturating_sub(client);
    let flood_total = flood_sent + flood2_sent;
    assert!(
        flood_seen <= flood_total && flood_seen >= flood_total * 9 / 10,
        "{flood_seen} of {flood_total} arrived: {log}"
    );
    // What passed the limit: per flooded /24 a second's burst plus RATE a second (the
    // client's own /24 shares its bucket with the second flood).
    let passed = noerror - 1 - dropped - slipped;
    let secs = flood_secs + t0.elapsed().as_secs_f64();
    eprintln!("flood {flood_seen} of {flood_total}, client {client}: passed {passed} dropped {dropped} slipped {slipped} in {secs:.1} s");
    let most = 2 * RATE + (RATE as f64 * secs) as u64 + 5;
    assert!(passed <= most, "{passed} queries passed, at most {most} allowed in {secs:.1} s: {log}");
    assert!(passed >= RATE + 15, "the burst and the other prefix's queries passed: {log}");
}

#[test]
fn answers_in_xdp_stay_within_the_rate_limit() {
    // A spoofed /24 floods for about a second: the XDP program answers at most RATE a
    // second for the prefix and hands the rest to the engine, whose limiter drops or slips
    // what is over its own budget.
    let net = TestNet::new(1);
    net.xdp_peer();
    let (z, zone_arg) = small_zone("rrl-xdp");
    let rate = RATE.to_string();
    let s = net.start_dns(&zone_arg, &["--rrl-rate", &rate, "--rrl-slip", "2", "--xdp-answers", "on"]);
    let macs = (mac_of(&net, &net.cli_ns, &net.cli_if), mac_of(&net, &net.srv_ns, &net.srv_if));
    let t0 = Instant::now();
    let sp = Spoofer { ns: net.cli_ns.clone(), ifname: net.cli_if.clone(), macs, net3: 7, base: 1 };
    let sent = flood(sp, 200, Arc::new(AtomicBool::new(false)), Duration::from_millis(950));
    let secs = t0.elapsed().as_secs_f64();
    let (st, log) = s.stop();
    let _ = std::fs::remove_file(&z);
    assert!(st.success(), "{log}");
    let line = log.lines().find(|l| l.starts_with("dns in xdp:")).unwrap_or_else(|| panic!("{log}"));
    let (answered, over) = (answered_in_xdp(&log), number_after(line, "(rate "));
    // The program's budget: RATE a second, in at most two seconds of the clock.
    let most = RATE * (secs.ceil() as u64 + 1);
    assert!(
        answered >= RATE / 2 && answered <= most,
        "{answered} answered in XDP, at most {most} ({secs:.1} s): {log}"
    );
    assert!(answered + over >= sent * 9 / 10, "{answered} + {over} of {sent} queries seen: {log}");
    let limited = log.lines().find(|l| l.starts_with("dns rate limit")).unwrap_or_else(|| panic!("{log}"));
    assert!(number_after(limited, "dropped") > 0, "the engine limited the rest: {limited}");
}
