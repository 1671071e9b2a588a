//! DNS over TCP (RFC 7766) against kdig and a raw kernel TCP client: answers in both
//! families, a truncated UDP answer complete over TCP, pipelined and split queries, framing
//! that is not DNS, the idle timeout told by edns-tcp-keepalive (RFC 7828) and kept, and the
//! connection limit.

use crate::common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A zone with one RRset too big for UDP (60 TXT records of 60 bytes).
fn big_zone(tag: &str) -> std::path::PathBuf {
    use std::fmt::Write as _;
    let mut z =
        String::from("$ORIGIN t.test.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 198.18.3.1\nsmall A 198.18.3.2\n");
    for i in 0..60 {
        let _ = writeln!(z, "big TXT \"{i:02}{}\"", "x".repeat(58));
    }
    let p = std::env::temp_dir().join(format!("sirocco-dnstcp-{}-{tag}.zone", std::process::id()));
    std::fs::write(&p, z).unwrap();
    p
}

fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend([0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    for l in name.trim_end_matches('.').split('.') {
        m.push(l.len() as u8);
        m.extend(l.as_bytes());
    }
    m.extend([0]);
    m.extend(qtype.to_be_bytes());
    m.extend(1u16.to_be_bytes());
    m
}

fn framed(q: &[u8]) -> Vec<u8> {
    let mut f = (q.len() as u16).to_be_bytes().to_vec();
    f.extend_from_slice(q);
    f
}

/// Reads one length-prefixed message.
fn read_msg(s: &mut TcpStream) -> Vec<u8> {
    let mut len = [0u8; 2];
    s.read_exact(&mut len).unwrap();
    let mut m = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut m).unwrap();
    m
}

#[test]
fn kdig_over_tcp_in_both_families_and_a_truncated_answer_complete_over_tcp() {
    let net = TestNet::new(1);
    let z = big_zone("kdig");
    let zone_arg = format!("t.test={}", z.display());
    let s =
        net.start(&["dns", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--addr", SERVER_OWN6, "--zone", &zone_arg]);
    s.wait_for_log("dns on port 53", Duration::from_secs(10));
    let kdig = |args: &[&str]| {
        let out = net.exec(&net.cli_ns, &[&["kdig", "+norec", "+time=2", "+retry=1"][..], args].concat());
        assert!(out.status.success(), "kdig {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for server in [SERVER_OWN, SERVER_OWN6] {
        let at = format!("@{server}");
        let small = kdig(&["+tcp", &at, "small.t.test", "A", "+short"]);
        assert_eq!(small.trim(), "198.18.3.2", "over TCP to {server}");
        // Over UDP the big RRset does not fit: TC and no records (+ignore: kdig keeps that).
        let udp = kdig(&["+ignore", &at, "big.t.test", "TXT"]);
        assert!(udp.contains(" tc") && udp.contains("ANSWER: 0") && udp.contains("(UDP)"), "truncated: {udp}");
        // Left to itself, kdig takes the TC as the RFC says and asks again over TCP.
        let retried = kdig(&[&at, "big.t.test", "TXT"]);
        assert!(retried.contains("ANSWER: 60") && retried.contains("(TCP)"), "complete over TCP: {retried}");
        let tcp = kdig(&["+tcp", &at, "big.t.test", "TXT", "+short"]);
        assert_eq!(tcp.lines().count(), 60, "all 60 records over TCP from {server}: {tcp}");
    }
    let (st, log) = s.stop();
    let _ = std::fs::remove_file(&z);
    assert!(st.success(), "{log}");
    assert!(
        log.contains("dns over tcp: connections accepted 6 refused 0 closed 6 (idle 0 cut off 0) | answers 6"),
        "{log}"
    );
    assert!(log.contains("truncated 4"), "two truncated answers per family over UDP: {log}");
}

#[test]
fn pipelined_and_split_queries_are_answered_in_order_and_bad_framing_is_cut_off() {
    let net = TestNet::new(1);
    let z = big_zone("raw");
    let zone_arg = format!("t.test={}", z.display());
    let s = net.start_dns(&zone_arg, &[]);
    let cut = in_netns(&net.cli_ns, || {
        let mut c = TcpStream::connect_timeout(&sockaddr(SERVER_OWN, 53), Duration::from_secs(5)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        // Three queries in one write.
        let mut burst = Vec::new();
        for (id, name, t) in [(1u16, "small.t.test", 1u16), (2, "big.t.test", 16), (3, "nx.t.test", 1)] {
            burst.extend(framed(&query(id, name, t)));
        }
        c.write_all(&burst).unwrap();
        // A fourth split in three pieces, the length prefix itself cut in two.
        let q = framed(&query(4, "small.t.test", 1));
        for piece in [&q[..1], &q[1..7], &q[7..]] {
            c.write_all(piece).unwrap();
            std::thread::sleep(Duration::from_millis(50));
        }
        let answers: Vec<Vec<u8>> = (0..4).map(|_| read_msg(&mut c)).collect();
        for (i, a) in answers.iter().enumerate() {
            assert_eq!(u16::from_be_bytes([a[0], a[1]]), i as u16 + 1, "answer {i} in order");
        }
        assert_eq!(u16::from_be_bytes([answers[1][6], answers[1][7]]), 60, "the big RRset whole");
        assert!(answers[1].len() > 1232 && answers[1][2] & 0x02 == 0, "larger than UDP allows, no TC");
        assert_eq!(answers[2][3] & 0x0f, 3, "NXDOMAIN");
        // A length that cannot be a DNS message: the connection is cut off.
        c.write_all(&[0, 5, 1, 2, 3, 4, 5]).unwrap();
        let mut b = [0u8; 16];
        matches!(c.read(&mut b), Ok(0) | Err(_))
    });
    assert!(cut, "a five-byte message ends the connection");
    // Still serving.
    let again = in_netns(&net.cli_ns, || {
        let mut c = TcpStream::connect_timeout(&sockaddr(SERVER_OWN, 53), Duration::from_secs(5)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(&framed(&query(9, "small.t.test", 1))).unwrap();
        read_msg(&mut c)[..2] == 9u16.to_be_bytes()
    });
    assert!(again);
    let (st, log) = s.stop();
    let _ = std::fs::remove_file(&z);
    assert!(st.success(), "{log}");
    assert!(log.contains("cut off 1) | answers 5"), "{log}");
}

/// `query` with an OPT record carrying edns-tcp-keepalive, without a TIMEOUT.
fn keepalive_query(id: u16, name: &str) -> Vec<u8> {
    let mut m = query(id, name, 1);
    m[11] = 1;
    m.extend([0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 4, 0, 11, 0, 0]);
    m
}

#[test]
fn idle_connections_are_closed_after_the_timeout_told_and_past_the_limit_refused() {
    let net = TestNet::new(1);
    let z = big_zone("idle");
    let zone_arg = format!("t.test={}", z.display());
    let s = net.start_dns(&zone_arg, &["--tcp-idle-timeout", "1.5", "--tcp-max-clients", "2"]);
    let (told, refused, closed_in, again) = in_netns(&net.cli_ns, || {
        let open = || {
            let c = TcpStream::connect_timeout(&sockaddr(SERVER_OWN, 53), Duration::from_secs(5))?;
            c.set_read_timeout(Some(Duration::from_secs(6)))?;
            Ok::<_, std::io::Error>(c)
        };
        let (mut a, mut b) = (open().unwrap(), open().unwrap());
        a.write_all(&framed(&keepalive_query(1, "small.t.test"))).unwrap();
        let answer = read_msg(&mut a);
        b.write_all(&framed(&query(2, "small.t.test", 1))).unwrap();
        let plain = read_msg(&mut b);
        assert_eq!(&plain[plain.len() - 4..], &[198, 18, 3, 2], "no OPT asked, none given: the A record last");
        // The third is accepted by TCP and reset by the server when its handshake completes.
        // (The reset may come before the socket is even set up.)
        let mut buf = [0u8; 64];
        let refused = match open() {
            Ok(mut c) => {
                let _ = c.write_all(&framed(&query(3, "small.t.test", 1)));
                matches!(c.read(&mut buf), Ok(0) | Err(_))
            }
            Err(_) => true,
        };
        // Both open connections are closed by the server, with a FIN, after 1.5 s.
        let t0 = std::time::Instant::now();
        let fin = matches!(a.read(&mut buf), Ok(0)) && matches!(b.read(&mut buf), Ok(0));
        let closed_in = fin.then(|| t0.elapsed());
        // With them gone there is room again.
        let mut d = open().unwrap();
        d.write_all(&framed(&query(4, "small.t.test", 1))).unwrap();
        let again = read_msg(&mut d)[..2] == 4u16.to_be_bytes();
        (answer[answer.len() - 6..].to_vec(), refused, closed_in, again)
    });
    let (st, log) = s.stop();
    let _ = std::fs::remove_file(&z);
    assert!(st.success(), "{log}");
    assert_eq!(told, [0, 11, 0, 2, 0, 15], "edns-tcp-keepalive: 15 × 100 ms");
    assert!(refused, "the third connection past --tcp-max-clients 2 is reset: {log}");
    let closed_in = closed_in.unwrap_or_else(|| panic!("both idle connections get a FIN: {log}"));
    assert!(closed_in < Duration::from_secs(6), "closed after the idle timeout, not at the end: {closed_in:?}");
    assert!(again, "a new connection once the idle ones are gone");
    assert!(log.contains("accepted 3 refused 1 closed"), "{log}");
    assert!(log.contains("(idle 2 cut off 0) | answers 3"), "{log}");
}
