//! `sirocco dns` against kdig (Knot's client) and raw kernel-socket queries.

use crate::common::*;
use std::net::UdpSocket;
use std::process::Output;
use std::time::Duration;

fn zone() -> String {
    format!("{}/../tests/data/example.zone", env!("CARGO_MANIFEST_DIR"))
}

fn kdig(net: &TestNet, args: &[&str]) -> String {
    let mut v = vec![
        "kdig",
        "@198.18.0.10",
        "+noall",
        "+header",
        "+answer",
        "+authority",
        "+additional",
        "+opt",
        "+retry=2",
        "+time=2",
    ];
    v.extend_from_slice(args);
    let out: Output = net.exec(&net.cli_ns, &v);
    assert!(out.status.success(), "kdig {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn flags(out: &str) -> String {
    out.lines().find(|l| l.starts_with(";; Flags:")).unwrap_or_default().to_string()
}

#[test]
fn kdig_gets_authoritative_answers() {
    let net = TestNet::new(1);
    let z = zone();
    let s = net.start(&["dns", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--zone", &z]);

    let o = kdig(&net, &["WWW.Example.COM", "A"]);
    assert!(o.contains("status: NOERROR") && flags(&o).contains(" aa"), "{o}");
    assert!(o.contains("198.18.1.2") && o.contains("198.18.1.3") && o.contains("ANSWER: 2"), "{o}");
    assert!(o.contains("\t300\tIN\tA"), "one TTL per RRset, the lowest: {o}");

    let o = kdig(&net, &["nope.example.com", "A"]);
    assert!(o.contains("status: NXDOMAIN") && o.contains("SOA") && o.contains("\t300\tIN\tSOA"), "negative TTL: {o}");

    let o = kdig(&net, &["b.c.example.com", "A"]);
    assert!(o.contains("status: NOERROR") && o.contains("ANSWER: 0") && o.contains("SOA"), "empty non-terminal: {o}");

    let o = kdig(&net, &["www.example.com", "MX"]);
    assert!(o.contains("status: NOERROR") && o.contains("ANSWER: 0") && o.contains("AUTHORITY: 1"), "NODATA: {o}");

    let o = kdig(&net, &["example.com", "MX"]);
    assert!(
        o.contains("MX\t10 mail.example.com.") && o.contains("mail.example.com.") && o.contains("198.18.1.25"),
        "{o}"
    );
    assert!(o.contains("ADDITIONAL: 1"), "the exchanger's address in additional: {o}");
    let o = kdig(&net, &["example.com", "NS"]);
    assert!(o.contains("198.18.1.1") && o.contains("ADDITIONAL: 1"), "in-zone name server address only: {o}");

    let o = kdig(&net, &["alias.example.com", "A"]);
    assert!(o.contains("CNAME\twww.example.com."), "{o}");

    let o = kdig(&net, &["x.sub.example.com", "A"]);
    assert!(!flags(&o).contains(" aa"), "a referral is not authoritative: {o}");
    assert!(o.contains("sub.example.com.") && o.contains("NS\tns.sub.example.com.") && o.contains("198.18.2.1"), "{o}");

    let o = kdig(&net, &["example.org", "A"]);
    assert!(o.contains("status: REFUSED"), "{o}");

    let o = kdig(&net, &["big.example.com", "TXT", "+notcp", "+ignore"]);
    assert!(flags(&o).contains(" tc"), "600 bytes do not fit 512 without EDNS: {o}");
    let o = kdig(&net, &["big.example.com", "TXT", "+bufsize=4096"]);
    assert!(o.contains("ANSWER: 6") && o.contains("UDP size: 1232"), "{o}");

    let o = kdig(&net, &["www.example.com", "A", "+edns=1"]);
    assert!(o.contains("BADVERS"), "{o}");

    let c = stop_and_count(s);
    assert!(total(&c, "udp_replies") >= 10);
}

fn ask(ns: &str, msgs: Vec<Vec<u8>>) -> Vec<Option<Vec<u8>>> {
    in_netns(ns, move || {
        let u = UdpSocket::bind("0.0.0.0:0").unwrap();
        u.set_read_timeout(Some(Duration::from_millis(400))).unwrap();
        let mut out = vec![];
        for m in msgs {
            u.send_to(&m, (SERVER_OWN, 53)).unwrap();
            let mut b = [0u8; 2048];
            out.push(u.recv_from(&mut b).ok().map(|(n, _)| b[..n].to_vec()));
        }
        out
    })
}

fn query(id: u16, name: &[u8]) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend([0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    m.extend_from_slice(name);
    m.extend([0, 1, 0, 1]);
    m
}

#[test]
fn malformed_queries_get_formerr_or_silence_and_the_server_goes_on() {
    let net = TestNet::new(1);
    let z = zone();
    let s = net.start(&["dns", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--zone", &z]);
    let good = query(1, b"\x03WwW\x07ExAmPlE\x03cOm\x00");
    let mut qr = good.clone();
    qr[2] |= 0x80;
    let mut two = good.clone();
    two[5] = 2;
    let looped = query(3, b"\x03www\xc0\x0c");
    let bad_label = query(4, b"\x03www\x40");
    let mut notify = good.clone();
    notify[2] = 0x20;
    let mut huge_counts = good.clone();
    huge_counts[6..12].copy_from_slice(&[0xff; 6]);
    let long_name: Vec<u8> = (0..5).flat_map(|_| std::iter::once(63u8).chain([b'a'; 63])).chain([0]).collect();
    let too_long = query(5, &long_name);
    let r = ask(
        &net.cli_ns.clone(),
        vec![good.clone(), vec![0, 1, 2], qr, two, looped, bad_label, notify, huge_counts, too_long, good.clone()],
    );
    let rcode = |m: &Option<Vec<u8>>| m.as_ref().map(|m| m[3] & 0x0f);
    assert_eq!(rcode(&r[0]), Some(0));
    let resp = r[0].as_ref().unwrap();
    assert_eq!(&resp[12..good.len()], &good[12..], "the question is echoed with the client's letter case");
    assert_eq!(&resp[0..2], &[0, 1], "the id is kept");
    assert_eq!(r[1], None, "a runt is dropped");
    assert_eq!(r[2], None, "a response is dropped");
    assert_eq!(rcode(&r[3]), Some(1), "QDCOUNT 2: FORMERR");
    assert_eq!(rcode(&r[4]), Some(1), "pointer loop: FORMERR");
    assert_eq!(rcode(&r[5]), Some(1), "bad label type: FORMERR");
    assert_eq!(rcode(&r[6]), Some(4), "NOTIFY: NOTIMP");
    assert_eq!(rcode(&r[7]), Some(1), "impossible counts: FORMERR");
    assert_eq!(rcode(&r[8]), Some(1), "name over 255 bytes: FORMERR");
    assert_eq!(rcode(&r[9]), Some(0), "still answering");
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    assert!(log.contains("dropped 2"), "{log}");
}

#[test]
fn dnsperf_gets_every_query_answered() {
    let net = TestNet::new(1);
    let z = zone();
    let s = net.start(&["dns", "--iface", &net.srv_if, "--addr", SERVER_OWN, "--zone", &z]);
    let queries = std::env::temp_dir().join(format!("sirocco-dnsperf-{}.txt", std::process::id()));
    std::fs::write(&queries, "www.example.com A\nnope.example.com A\nexample.com MX\nWWW.EXAMPLE.COM AAAA\n").unwrap();
    let out = net.exec(
        &net.cli_ns,
        &["dnsperf", "-s", SERVER_OWN, "-d", queries.to_str().unwrap(), "-l", "3", "-Q", "2000", "-t", "2"],
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "dnsperf: {text}{}", String::from_utf8_lossy(&out.stderr));
    let field = |name: &str| -> u64 {
        let line = text.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_else(|| panic!("{name}: {text}"));
        line.split(':').nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap()
    };
    let (sent, completed, lost) = (field("Queries sent"), field("Queries completed"), field("Queries lost"));
    assert!(sent > 1000, "{text}");
    assert_eq!((completed, lost), (sent, 0), "every query answered: {text}");
    assert!(text.contains("NOERROR") && text.contains("NXDOMAIN"), "{text}");
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    let _ = std::fs::remove_file(queries);
}
