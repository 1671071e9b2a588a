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
    let s = net.start_dns(&z, &[]);

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
    let s = net.start_dns(&z, &[]);
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
    let s = net.start_dns(&z, &[]);
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
    // The test network is veth (told by the interface's driver): answers in XDP stay off.
    assert!(log.contains("answers in XDP off on veth"), "{log}");
    let _ = std::fs::remove_file(queries);
}

/// `www.example.com A` with EDNS and a COOKIE option of `cookie` (client cookie, then any
/// server cookie).
fn query_with_cookie(id: u16, cookie: &[u8]) -> Vec<u8> {
    let mut m = query(id, b"\x03www\x07example\x03com\x00");
    m[11] = 1;
    m.extend([0, 0, 41, 4, 0xd0, 0, 0, 0, 0]);
    m.extend(((4 + cookie.len()) as u16).to_be_bytes());
    m.extend([0, 10]);
    m.extend((cookie.len() as u16).to_be_bytes());
    m.extend_from_slice(cookie);
    m
}

/// The COOKIE option's data in a response, and its extended rcode.
fn cookie_of(resp: &[u8]) -> (Vec<u8>, u16) {
    // The OPT record ends the response: owner, type, size, ext rcode, version, flags, rdlen,
    // then our one option.
    let opt = resp.len() - (11 + 4 + 24);
    assert_eq!(resp[opt..opt + 3], [0, 0, 41], "an OPT record with a cookie ends {resp:02x?}");
    let rcode = (u16::from(resp[opt + 5]) << 4) | u16::from(resp[3] & 0x0f);
    assert_eq!(resp[opt + 11..opt + 15], [0, 10, 0, 24], "{resp:02x?}");
    (resp[opt + 15..].to_vec(), rcode)
}

#[test]
fn dns_cookies_kdig_and_rate_limiting() {
    let net = TestNet::new(1);
    let s = net.start_dns(&format!("example.com={}", zone()), &["--rrl-rate", "5", "--rrl-slip", "1"]);
    // kdig asks with a client cookie and shows the one the server made (RFC 9018: version 1,
    // three reserved bytes, a timestamp, a hash).
    let out = kdig(&net, &["+cookie", "www.example.com", "A"]);
    let line = out.lines().find(|l| l.contains("COOKIE:")).unwrap_or_else(|| panic!("no cookie: {out}"));
    let hex = line.split_whitespace().nth(2).unwrap().to_ascii_lowercase();
    assert_eq!(hex.len(), 48, "client and server cookie: {line}");
    assert_eq!(&hex[16..24], "01000000", "an RFC 9018 server cookie: {line}");
    // Sent back, the same cookie comes back (it is fresh).
    // BIND's dig checks the cookie the answer echoes.
    let dig = net.exec(&net.cli_ns, &["dig", "@198.18.0.10", "+cookie", "+time=2", "+tries=2", "www.example.com"]);
    let dig = String::from_utf8_lossy(&dig.stdout);
    assert!(dig.lines().any(|l| l.contains("COOKIE:") && l.ends_with("(good)")), "dig: {dig}");
    let reuse = format!("+cookie={hex}");
    let again = kdig(&net, &[&reuse, "www.example.com", "A"]);
    assert!(again.to_ascii_lowercase().contains(&hex), "the fresh cookie is kept: {again}");

    // Over the rate limit (5 a second), a client with only a client cookie gets BADCOOKIE
    // with a server cookie; with that cookie it is answered in full, not limited.
    let client = [7u8, 6, 5, 4, 3, 2, 1, 0];
    let first = ask(&net.cli_ns, (0..40).map(|i| query_with_cookie(100 + i, &client)).collect());
    let rcodes: Vec<u16> = first.iter().flatten().map(|r| cookie_of(r).1).collect();
    assert!(rcodes.contains(&0) && rcodes.contains(&23), "answers, then BADCOOKIE past the limit: {rcodes:?}");
    let server = cookie_of(first.iter().flatten().last().unwrap()).0;
    assert_eq!(server[..8], client, "the client cookie is echoed");
    let valid = ask(&net.cli_ns, (0..40).map(|i| query_with_cookie(200 + i, &server)).collect());
    let answered = valid.iter().flatten().filter(|r| cookie_of(r).1 == 0 && r[7] >= 1).count();
    assert_eq!(answered, 40, "a valid server cookie is not rate-limited");
    // A cookie of a bad length is FORMERR (RFC 7873 5.2.2).
    let bad = ask(&net.cli_ns, vec![query_with_cookie(300, &[1, 2, 3, 4, 5])]);
    assert_eq!(bad[0].as_ref().map(|r| r[3] & 0x0f), Some(1), "FORMERR: {bad:?}");
    let (st, log) = s.stop();
    assert!(st.success(), "{log}");
    let line = log.lines().find(|l| l.starts_with("dns cookies:")).unwrap_or_else(|| panic!("{log}"));
    let valid = number_after(line, "valid ");
    assert!(valid >= 41, "kdig's cookie sent back and the 40 queries counted valid: {line}");
}
