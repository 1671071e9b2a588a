//! Fuzz targets for DNS messages, zones, TCP framing, TSIG, transfers in, signed answers.

const FUZZ_ZONE: &str = "$ORIGIN example.com.\n$TTL 60\n@ SOA ns1 h 1 2 3 4 5\n@ NS ns1\nns1 A 198.18.1.1\n\
www A 198.18.1.2\nalias CNAME www\na.b A 198.18.1.3\nsub NS ns.sub\nns.sub A 198.18.2.1\n\
*.w MX 10 www\nchain CNAME alias\nloop CNAME loop\nd DNAME w.example.com.\nlong DNAME a123456789a123456789a123456789a123456789a123456789.a123456789a123456789a123456789a123456789a123456789.a123456789a123456789a123456789a123456789a123456789.a123456789a123456789a123456789a123456789a123456789.\n";

fn fuzz_server(mode: dns_server::KeyMode) -> dns_server::DnsServer {
    let z = dns_server::zone::load_text(std::path::Path::new("fuzz.zone"), FUZZ_ZONE.as_bytes(), None).unwrap();
    // Anyone may transfer it (the TCP target's connections come from 0.0.0.0).
    let acl = dns_server::transfer::Acl::parse(&["0.0.0.0/0"]).unwrap();
    let c = dns_server::Catalog::new(vec![dns_server::CompiledZone::compile(&z).with_transfers(&z, acl)])
        .with_keys(dns_server::tsig::Keyring::new(vec![fuzz_key()]).unwrap());
    dns_server::DnsServer::new(std::sync::Arc::new(c), 53).with_key_mode(mode)
}

/// A primary's answers to sirocco as a secondary (an SOA answer, then a transfer), cut where
/// the first byte says: never a panic; a transfer that completes starts with the zone's SOA
/// and holds only names of the zone; the query it sends next is whole.
pub fn dns_xfr_in(data: &[u8]) {
    use dns_server::secondary::{Outcome, XfrIn};
    let Some((&sel, rest)) = data.split_first() else { return };
    let origin = b"\x07example\x03com\x00";
    let known = (sel & 1 == 1).then_some(5);
    let mut x = XfrIn::new(0, origin, None, known, 0x100);
    let mut out = Vec::new();
    x.start(0, &mut out);
    let cut = usize::from(sel >> 1) % (rest.len() + 1);
    for piece in [&rest[..cut], &rest[cut..]] {
        out.clear();
        let outcome = x.feed(piece, 0, &mut out);
        if !out.is_empty() {
            let n = usize::from(u16::from_be_bytes([out[0], out[1]]));
            assert_eq!(n + 2, out.len(), "a whole query");
            dns::Query::parse(&out[2..]).expect("a query that parses");
        }
        match outcome {
            Some(Outcome::Transferred { records, .. }) => {
                assert!(records[0].0[..] == origin[..] && records[0].1 == dns::rtype::SOA, "the SOA first");
                assert!(records.iter().all(|r| dns::name::wire_ends_with(&r.0, origin)), "names of the zone only");
                return;
            }
            Some(_) => return,
            None => {}
        }
    }
}

/// The TSIG key the fuzzed servers know.
fn fuzz_key() -> dns_server::tsig::Key {
    dns_server::tsig::Key::parse("hmac-sha256:fuzz.key:ZnV6eiBrZXkgZnV6eiBrZXkgZnV6eiBrZXkgMTIzNA==").unwrap()
}

/// Signed queries (TSIG): the first byte says whether the rest is signed with the server's
/// key now (then mutated by its second byte at a position its third picks) or taken as it
/// is. Every answer is well formed, and the answer to a query whose signature holds is
/// signed over its MAC, verifiably.
pub fn dns_tsig(data: &[u8]) {
    use dns_server::tsig;
    let Some((&sel, rest)) = data.split_first() else { return };
    let mut buf = vec![0u8; 1472];
    let now = dns_server::server::unix_now();
    let key = fuzz_key();
    let mut n = rest.len().min(buf.len());
    buf[..n].copy_from_slice(&rest[..n]);
    if sel & 1 == 1 && n >= 14 {
        let (flip, pos) = (buf[0], usize::from(buf[1]));
        buf.copy_within(2..n, 0);
        n -= 2;
        let Some((len, _)) = tsig::sign(&key, &mut buf, n, tsig::Chain::Request, now, 0, &[]) else { return };
        n = len;
        if sel & 2 == 2 {
            buf[pos % n] ^= flip;
        }
    }
    let keys = tsig::Keyring::new(vec![key.clone()]).unwrap();
    let request_mac = tsig::find(&buf[..n]).and_then(|at| match tsig::verify(&keys, &buf[..n], at, now) {
        tsig::Check::Valid { mac, .. } => Some(mac),
        _ => None,
    });
    let query = dns::Query::parse(&buf[..n]);
    DNS.with(|s| {
        let Some(r) = s.borrow_mut().respond(&mut buf, n) else { return };
        well_formed_response(&buf, r);
        if let (Some(mac), Ok(q)) = (request_mac, query) {
            if q.tsig.is_some() {
                let at = tsig::find(&buf[..r.len]).expect("a signed query's answer is signed");
                tsig::verify_answer(&key, &buf[..r.len], at, tsig::Chain::Answer(mac.as_bytes()), now)
                    .expect("the answer's signature holds");
            }
        }
    });
}

thread_local! {
    static DNS: std::cell::RefCell<dns_server::DnsServer> =
        std::cell::RefCell::new(fuzz_server(dns_server::KeyMode::Wire));
    static DNS_DECOMPRESS: std::cell::RefCell<dns_server::DnsServer> =
        std::cell::RefCell::new(fuzz_server(dns_server::KeyMode::Decompress));
}

/// DNS over TCP: the input cut into deliveries of a size it chooses; every answer that comes
/// out is a framed response, and what is held stays below one message.
pub fn dns_tcp(data: &[u8]) {
    thread_local! {
        static T: std::cell::RefCell<dns_server::DnsTcp> =
            std::cell::RefCell::new(dns_server::DnsTcp::new(
                fuzz_server(dns_server::KeyMode::Wire),
                dns_server::tcp::TcpSettings::default(),
            ));
    }
    let Some((&cuts, rest)) = data.split_first() else { return };
    T.with(|t| {
        let mut t = t.borrow_mut();
        let mut c = t.conn();
        let step = usize::from(cuts % 16) + 1;
        let mut alive = true;
        for piece in rest.chunks(step) {
            alive = t.feed(&mut c, piece);
            if !alive {
                break;
            }
        }
        let out: Vec<u8> = c.pending().copied().collect();
        let mut at = 0;
        while at < out.len() {
            let n = usize::from(u16::from_be_bytes([out[at], out[at + 1]]));
            assert!(n >= 12 && at + 2 + n <= out.len(), "framed answers");
            assert!(out[at + 2 + 2] & 0x80 != 0, "a response");
            at += 2 + n;
        }
        if alive {
            assert!(c.held() <= 2 + 65_535, "held input stays below one message");
        }
    });
}

/// The whole DNS responder on arbitrary messages: no panic, and a response that fits the
/// buffer, keeps the ID, has QR set, parses record by record, carries the right checksum
/// sum, and is byte for byte what the other key mode answers.
pub fn dns_server(data: &[u8]) {
    let mut buf = vec![0u8; 1472];
    let n = data.len().min(buf.len());
    buf[..n].copy_from_slice(&data[..n]);
    let mut other = buf.clone();
    let other_r = DNS_DECOMPRESS.with(|s| s.borrow_mut().respond(&mut other, n));
    DNS.with(|s| {
        let r = s.borrow_mut().respond(&mut buf, n);
        // (Not the RRL key: the address of the response copied, one per server.)
        let same = |r: Option<dns_server::server::Response>| r.map(|r| (r.len, r.sum, r.q_end, r.edns));
        assert_eq!(same(r), same(other_r), "both key modes answer alike");
        if let Some(r) = r {
            assert_eq!(&buf[..r.len], &other[..r.len], "both key modes answer alike");
            assert_eq!(&buf[0..2], &data[0..2]);
            well_formed_response(&buf, r);
        }
    });
}

/// A response as the server built it: within the UDP limit, QR set, summed right, and its
/// counts describe the whole message.
fn well_formed_response(buf: &[u8], r: dns_server::server::Response) {
    let len = r.len;
    assert!((12..=1232).contains(&len), "len {len}");
    assert!(buf[2] & 0x80 != 0);
    assert_eq!(r.sum, wire::checksum::fold(wire::checksum::add(0, &buf[..len])), "summed from parts");
    let records: usize = [6, 8, 10].iter().map(|&i| usize::from(u16::from_be_bytes([buf[i], buf[i + 1]]))).sum();
    let mut at = 12;
    if buf[5] == 1 {
        at = dns::Name::read(&buf[..len], 12).expect("question").1 + 4;
    }
    for _ in 0..records {
        at = dns::Name::read(&buf[..len], at).expect("owner").1;
        assert!(at + 10 <= len, "record header inside the message");
        let rdlen = usize::from(u16::from_be_bytes([buf[at + 8], buf[at + 9]]));
        at += 10 + rdlen;
    }
    assert_eq!(at, len, "the counts describe the whole message");
}

fn signed_server(text: &str) -> dns_server::DnsServer {
    let z = dns_server::zone::load_text(std::path::Path::new("signed.zone"), text.as_bytes(), None).unwrap();
    assert!(z.signed);
    let c = dns_server::Catalog::new(vec![dns_server::CompiledZone::compile(&z)]);
    dns_server::DnsServer::new(std::sync::Arc::new(c), 53)
}

thread_local! {
    static SIGNED: std::cell::RefCell<[dns_server::DnsServer; 2]> = std::cell::RefCell::new([
        signed_server(include_str!("../data/signed-nsec.zone")),
        signed_server(include_str!("../data/signed-nsec3.zone")),
    ]);
}

/// Signed zones (NSEC; NSEC3 with opt-out, salt and iterations) asked with DO: the first
/// byte picks the zone and whether the rest is a whole message or a question (type, then
/// the name's wire bytes) put into a DO query; every answer is a well-formed response.
pub fn dns_signed(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else { return };
    let mut buf = vec![0u8; 1472];
    let n = if sel & 2 == 0 {
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        n
    } else {
        let Some((qtype, name)) = rest.split_at_checked(2) else { return };
        let name = &name[..name.len().min(300)];
        let mut q = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
        q.extend_from_slice(name);
        q.extend_from_slice(qtype);
        q.extend([0, 1, 0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 0]);
        buf[..q.len()].copy_from_slice(&q);
        q.len()
    };
    SIGNED.with(|s| {
        if let Some(r) = s.borrow_mut()[usize::from(sel & 1)].respond(&mut buf, n) {
            well_formed_response(&buf, r);
        }
    });
}

/// The zone loader on arbitrary text (no $INCLUDE: that would read files).
pub fn zone_text(data: &[u8]) {
    if data.windows(8).any(|w| w.eq_ignore_ascii_case(b"$INCLUDE")) {
        return;
    }
    if let Ok(z) = dns_server::zone::load_text(std::path::Path::new("fuzz.zone"), data, Some("example.com")) {
        let c = dns_server::CompiledZone::compile(&z);
        assert!(c.names() >= 1);
    }
}

/// A catalog zone's versions (RFC 9432): the text after the first byte, as the catalog
/// `catalog.invalid.`, read; its members followed by one catalog, then taken up by another
/// whose coo the first byte may set. Never a panic; each member once, of the zone's names.
pub fn catalog_zone(data: &[u8]) {
    use dns_server::catalog_zone::{read, Change, Owners};
    let Some((&sel, rest)) = data.split_first() else { return };
    if rest.windows(8).any(|w| w.eq_ignore_ascii_case(b"$INCLUDE")) {
        return;
    }
    let Ok(z) = dns_server::zone::load_text(std::path::Path::new("catalog.zone"), rest, Some("catalog.invalid")) else {
        return;
    };
    let Ok(members) = read(&z) else { return };
    let (one, two) = (b"\x07catalog\x07invalid\x00", b"\x03two\x07invalid\x00");
    let mut o = Owners::default();
    let (changes, _) = o.follow(one, members.clone(), |zone| sel & 1 == 1 && zone.len() % 3 == 0);
    let added = changes.iter().filter(|c| matches!(c, Change::Add(_))).count();
    assert_eq!(added, o.members().count(), "each member added once");
    let (again, _) = o.follow(one, members.clone(), |zone| sel & 1 == 1 && zone.len() % 3 == 0);
    assert!(again.is_empty(), "the same version changes nothing");
    let (moved, _) = o.follow(two, members, |_| false);
    assert!(moved.iter().all(|c| !matches!(c, Change::Remove(_))), "nothing of two's to remove");
}

/// The DNS query parser: any answer it gives must be consistent with the message.
pub fn dns_query(data: &[u8]) {
    match dns::Query::parse(data) {
        Ok(q) => {
            assert!(q.question_end <= data.len());
            assert!(q.qname(data).len() <= 255);
            let w = dns::Query::parse_keyed(data, dns::KeyMode::Wire).expect("both modes accept the same queries");
            assert!(w.qname(data).eq_ignore_ascii_case(q.qname(data)), "both modes see the same name");
            if let Some(e) = q.edns {
                assert!(e.udp_size >= 512 && e.version == 0);
            }
        }
        Err(dns::QueryError::Respond { question_end: Some(end), .. }) => assert!(end <= data.len()),
        Err(_) => {}
    }
    // Names read from any offset either fail or stay within bounds.
    for at in 0..data.len().min(32) {
        if let Ok((n, end)) = dns::Name::read(data, at) {
            assert!(end <= data.len() && n.as_wire().len() <= 255);
        }
    }
}

/// Inputs this area's targets start from (None: not one of its targets).
pub(crate) fn seeds(target: &str) -> Option<Vec<Vec<u8>>> {
    Some(match target {
        "catalog_zone" => {
            vec![b"\x00$TTL 0\n@ SOA invalid. invalid. 1 3600 600 86400 0\n@ NS invalid.\nversion TXT \"2\"\n\
              m1.zones PTR a.example.\ngroup.m1.zones TXT \"gold\"\nm2.zones PTR b.example.\n\
              coo.m2.zones PTR two.invalid.\nm3.zones PTR a.example.\n"
                .to_vec()]
        }
        "zone_text" => vec![
            FUZZ_ZONE.as_bytes().to_vec(),
            include_bytes!("../data/signed-nsec.zone").to_vec(),
            include_bytes!("../data/signed-nsec3.zone").to_vec(),
        ],
        "dns_xfr_in" => {
            let answer = |id: u16, qd: bool, records: &[(&[u8], u16, &[u8])]| {
                let mut m =
                    [&id.to_be_bytes()[..], &[0x84, 0, 0, u8::from(qd), 0, records.len() as u8, 0, 0, 0, 0]].concat();
                if qd {
                    m.extend_from_slice(b"\x07example\x03com\x00\x00\x06\x00\x01");
                }
                for (owner, t, data) in records {
                    m.extend_from_slice(owner);
                    m.extend(t.to_be_bytes());
                    m.extend([0, 1, 0, 0, 0, 60]);
                    m.extend((data.len() as u16).to_be_bytes());
                    m.extend_from_slice(data);
                }
                [&(m.len() as u16).to_be_bytes()[..], &m].concat()
            };
            let soa: &[u8] = b"\x02ns\xc0\x0c\x01h\xc0\x0c\x00\x00\x00\x06\x00\x00\x0e\x10\x00\x00\x02\x58\x00\x01\x51\x80\x00\x00\x00\x3c";
            let apex: &[u8] = b"\xc0\x0c";
            let www: &[u8] = b"\x03www\x07example\x03com\x00";
            let stream = [
                answer(0x100, true, &[(apex, 6, soa)]),
                answer(
                    0x101,
                    true,
                    &[(apex, 6, soa), (apex, 2, b"\x02ns\xc0\x0c"), (b"\x02ns\xc0\x0c", 1, &[198, 18, 0, 1])],
                ),
                answer(
                    0x101,
                    false,
                    &[(www, 5, b"\x02ns\x07example\x03com\x00"), (www, 15, b"\x00\x0a\x02mx\x07example\x03com\x00")],
                ),
                answer(0x101, true, &[(apex, 6, soa)]),
            ]
            .concat();
            // Known serial 5, the primary at 6: the changes between them (RFC 1995).
            let soa5: Vec<u8> = soa.iter().enumerate().map(|(i, &b)| if i == 12 { 5 } else { b }).collect();
            let ixfr = [
                answer(0x100, true, &[(apex, 6, soa)]),
                answer(
                    0x101,
                    true,
                    &[
                        (apex, 6, soa),
                        (apex, 6, &soa5),
                        (www, 1, &[198, 18, 0, 1]),
                        (apex, 6, soa),
                        (www, 1, &[198, 18, 0, 2]),
                        (apex, 6, soa),
                    ],
                ),
            ]
            .concat();
            vec![[&[0x20u8][..], &stream].concat(), [&[0x41u8][..], &stream].concat(), [&[0x31u8][..], &ixfr].concat()]
        }
        "dns_tsig" => {
            let www =
                [&[0x12u8, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0][..], b"\x03www\x07example\x03com\x00\x00\x01\x00\x01"]
                    .concat();
            let signed = |sel: u8| [&[sel, 0x5a, 40][..], &www].concat();
            let mut stale = www.clone();
            stale.resize(300, 0);
            let (len, _) =
                dns_server::tsig::sign(&fuzz_key(), &mut stale, www.len(), dns_server::tsig::Chain::Request, 1, 0, &[])
                    .unwrap();
            vec![signed(1), signed(3), [&[0u8][..], &stale[..len]].concat()]
        }
        "dns_signed" => {
            let q = |sel: u8, t: u16, name: &str| {
                [&[sel][..], &t.to_be_bytes(), &dns::name::wire_from_text(name).unwrap()].concat()
            };
            vec![
                q(2, 1, "www.example.com."),
                q(3, 1, "www.example.com."),
                q(2, 15, "nx.example.com."),
                q(3, 15, "nx.example.com."),
                q(3, 15, "a.b.x.w.example.com."),
                q(2, 1, "x.w.example.com."),
                q(3, 16, "a.example.com."),
                q(3, 43, "open.example.com."),
                q(3, 1, "host.open.example.com."),
                q(2, 1, "tow.example.com."),
                q(3, 46, "example.com."),
            ]
        }
        "dns_tcp" => {
            let q = |qtype: u8, name: &[u8]| {
                let mut m = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
                m.extend_from_slice(name);
                m.extend([0, qtype, 0, 1]);
                [&(m.len() as u16).to_be_bytes()[..], &m].concat()
            };
            let www = b"\x03www\x07example\x03com\x00";
            let apex = b"\x07example\x03com\x00";
            vec![
                [&[3u8][..], &q(1, www)].concat(),
                [&[5u8][..], &q(252, apex), &q(1, www)].concat(),
                [&[0u8][..], &q(251, apex)].concat(),
                [&[7u8][..], &q(252, b"\x05other\x00")].concat(),
            ]
        }
        "dns_server" => vec![
            vec![
                0xbe, 0xef, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, b'w', b'w', b'w', 7, b'e', b'x', b'a', b'm', b'p', b'l',
                b'e', 3, b'c', b'o', b'm', 0, 0, 1, 0, 1,
            ],
            vec![
                0xbe, 0xef, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, b'x', 3, b's', b'u', b'b', 7, b'e', b'x', b'a', b'm',
                b'p', b'l', b'e', 3, b'c', b'o', b'm', 0, 0, 1, 0, 1, 0, 0, 41, 4, 0xd0, 0, 0, 0x80, 0, 0, 0,
            ],
        ],
        "dns_query" => vec![vec![
            0xbe, 0xef, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 3, b'c', b'o', b'm',
            0, 0, 1, 0, 1, 0, 0, 41, 4, 0xd0, 0, 0, 0x80, 0, 0, 0,
        ]],
        _ => return None,
    })
}
