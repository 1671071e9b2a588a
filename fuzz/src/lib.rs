//! Fuzz targets: each takes arbitrary bytes, must never panic, and checks that whatever parses
//! survives a round trip (emit, parse again, same meaning).

use wire::arp::{ArpPacket, ArpRepr};
use wire::ethernet::{EthernetFrame, EthernetRepr};
use wire::icmp::{IcmpPacket, IcmpRepr};
use wire::ipv4::{Ipv4Addr, Ipv4Packet, Ipv4Repr};
use wire::tcp::{TcpOptions, TcpPacket, TcpRepr};
use wire::udp::{UdpPacket, UdpRepr};

const A: Ipv4Addr = Ipv4Addr([198, 18, 0, 2]);
const B: Ipv4Addr = Ipv4Addr([198, 18, 0, 10]);
/// 2001:2::10 (RFC 5180's benchmarking range).
const V6_SERVER: wire::Ipv6Addr = wire::Ipv6Addr([0x20, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10]);

/// A fuzz target.
pub type Target = fn(&[u8]);

/// Every target by name.
pub const TARGETS: &[(&str, Target)] = &[
    ("ethernet", ethernet),
    ("arp", arp),
    ("ipv4", ipv4),
    ("ipv6", ipv6),
    ("icmpv6", icmpv6),
    ("icmp", icmp),
    ("udp", udp),
    ("tcp", tcp),
    ("tcp_options", tcp_options),
    ("engine", engine_frame),
    ("tcp_endpoint", tcp_endpoint),
    ("dns_query", dns_query),
    ("dns_server", dns_server),
    ("dns_tcp", dns_tcp),
    ("dns_signed", dns_signed),
    ("dns_tsig", dns_tsig),
    ("dns_xfr_in", dns_xfr_in),
    ("zone_text", zone_text),
    ("http_request", http_request),
    ("web_server", web_server),
    ("http_response", http_response),
    ("tls_handshake", tls_handshake),
    ("tls_records", tls_records),
    ("memcache_text", memcache_text),
    ("memcache_binary", memcache_binary),
    ("kv_session", kv_session),
    ("resp_request", resp_request),
    ("store_log_record", store_log_record),
    ("store_log_walk", store_log_walk),
    ("store_session", store_session),
    ("pipeline_script", pipeline_script),
    ("pipeline_frames", pipeline_frames),
    ("ctl_request", ctl_request),
    ("ctl_policy", ctl_policy),
];

/// Requests, whole and in two pieces: the parser never panics, never claims more than it was
/// given, and a request cut anywhere parses as it does whole.
pub fn resp_request(data: &[u8]) {
    use resp::{Parsed, Parser};
    let (cut, data) = match data.split_first() {
        Some((&b, rest)) => (usize::from(b) % (rest.len() + 1), rest),
        None => (0, data),
    };
    let mut whole = Parser::new(4096);
    let r = whole.parse(data);
    let args: Vec<Vec<u8>> = whole.args.iter(data).map(<[u8]>::to_vec).collect();
    if let Parsed::Request { consumed } = r {
        assert!(consumed <= data.len());
    }
    let mut pieces = Parser::new(4096);
    let first = pieces.parse(&data[..cut]);
    let again = if first == Parsed::Incomplete { pieces.parse(data) } else { first };
    // An error or a request found in the first piece is found whole too.
    if let (Parsed::Request { .. }, Parsed::Request { .. }) = (r, again) {
        if first == Parsed::Incomplete {
            assert_eq!(again, r);
            assert_eq!(pieces.args.iter(data).map(<[u8]>::to_vec).collect::<Vec<_>>(), args);
        }
    }
}

/// The log reader: never panics, and whatever it reads as a record encodes back to the bytes.
pub fn store_log_record(data: &[u8]) {
    use store::log::record::{encode, read, Read};
    if let Read::Record { seq, change, size } = read(data, 1 << 16) {
        let mut again = Vec::new();
        assert_eq!(encode(&mut again, seq, &change), size);
        assert_eq!(&again[..], &data[..size]);
    }
}

/// The replay's walk over a log of up to three segments (cut from the input at block
/// boundaries, around a valid commit so the fuzzer starts near real logs): no panic, and the
/// records it returns are in increasing order, each one readable where it says.
pub fn store_log_walk(data: &[u8]) {
    use store::log::record::{read, Read, BLOCK};
    use store::log::replay::walk;
    use store::log::stage::Stage;
    let (cuts, body) = match data.split_first() {
        Some((&c, rest)) => (c, rest),
        None => return,
    };
    let mut log = Vec::new();
    {
        use store::command::Journal;
        let order = std::sync::Arc::new(store::log::order::Order::new(1, 0));
        let mut st = Stage::new(order, 0);
        st.sets(&[(b"k", b"v", 0)]);
        st.take_commit(&mut log, 1, 0);
    }
    log.extend_from_slice(body);
    log.resize(log.len().next_multiple_of(BLOCK), 0);
    let blocks = log.len() / BLOCK;
    let a = (usize::from(cuts & 0x0f) % (blocks + 1)) * BLOCK;
    let b = a.max((usize::from(cuts >> 4) % (blocks + 1)) * BLOCK);
    let segs = vec![log[..a].to_vec(), log[a..b].to_vec(), log[b..].to_vec()];
    let names: Vec<String> = (0..3).map(|i| format!("seg{i}")).collect();
    let mut notes = Vec::new();
    if let Ok(w) = walk(&segs, &names, 1, &mut notes) {
        assert!(w.records.windows(2).all(|p| p[0].0 < p[1].0));
        for (seq, (si, off)) in w.records {
            assert!(matches!(read(&segs[si][off..], usize::MAX), Read::Record { seq: s, .. } if s == seq));
        }
    }
}

/// Replies of a store session fed `pieces` (a fresh keyspace; every change durable at once).
fn store_run(pieces: &[&[u8]]) -> Vec<u8> {
    use store::command::{Ctx, Info};
    use store::keyspace::Keyspace;
    use store::session::{Out, Session};
    struct NoInfo;
    impl Info for NoInfo {
        fn info(&self, _ks: &Keyspace, _s: &[String]) -> String {
            String::new()
        }
        fn config(&self) -> Vec<(&'static str, String)> {
            vec![("save", String::new())]
        }
    }
    struct Sent(Vec<u8>);
    impl Out for Sent {
        fn put(&mut self, b: &[u8]) {
            self.0.extend_from_slice(b);
        }
        fn backlog(&self) -> usize {
            0
        }
    }
    let ks = Keyspace::new(4);
    let order = std::sync::Arc::new(store::log::order::Order::new(1, 0));
    let mut stage = store::log::stage::Stage::new(order.clone(), 0);
    let mut out = Sent(Vec::new());
    let mut s = Session::new();
    let mut commit = Vec::new();
    for p in pieces {
        let mut ctx = Ctx { ks: &ks, journal: &mut stage, now_ms: 1_000_000, info: &NoInfo };
        if s.input(p, &mut ctx, order.durable(), &mut out) == store::session::Flow::Close {
            break;
        }
        stage.take_commit(&mut commit, 1, 0);
        stage.settled(None);
        let mut ctx = Ctx { ks: &ks, journal: &mut stage, now_ms: 1_000_000, info: &NoInfo };
        s.resume(&mut ctx, order.durable(), &mut out);
    }
    out.0
}

/// A store session on arbitrary input, whole and cut in two: no panic, and the same replies
/// either way (requests split anywhere are the same requests).
pub fn store_session(data: &[u8]) {
    let (cut, data) = match data.split_first() {
        Some((&b, rest)) => (usize::from(b) % (rest.len() + 1), rest),
        None => (0, data),
    };
    let whole = store_run(&[data]);
    let split = store_run(&[&data[..cut], &data[cut..]]);
    assert_eq!(whole, split, "replies depend on where the input was cut ({cut})");
}

/// The pipeline's script parser: no panic; a script it accepts links only modules it
/// declared; an error points inside the text.
pub fn pipeline_script(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match pipeline::script::parse(&text) {
        Ok(s) => {
            for l in &s.links {
                assert!(s.modules.iter().any(|m| m.name == l.from) && s.modules.iter().any(|m| m.name == l.to));
            }
            // What the control socket shows parses back to the same pipeline.
            let again = pipeline::script::parse(&pipeline::change::render(&s)).expect("rendered script parses");
            let strip = |mut s: pipeline::script::Script| {
                for d in s.modules.iter_mut().chain(s.classes.iter_mut()).chain(s.workers.iter_mut()) {
                    d.line = 0;
                }
                for l in &mut s.links {
                    l.line = 0;
                }
                s
            };
            assert_eq!(strip(again), strip(s));
        }
        Err(e) => {
            assert!(e.line >= 1 && e.line <= text.lines().count().max(1) && e.col >= 1);
        }
    }
}

/// Every module that reads packet headers, in one pipeline, on arbitrary frames (each a
/// length byte and that many bytes): no panic, and every buffer comes back to the pool.
pub fn pipeline_frames(data: &[u8]) {
    use pipeline::port::{MemPort, NamedPort};
    const SCRIPT: &str = "\
in :: PortInc(port=p, burst=64)
out :: PortOut(port=p)
in -> VLANPop() -> dx :: VXLANDecap()
dx:1 -> acl :: ACL(rules=[\"src=198.18.0.0/15 proto=tcp dport=1-1000 drop\"], default=pass) -> 0:nat :: NAT(ext_addr=\"198.18.9.9\", ports=\"100-110\")
dx:0 -> 1:nat
nat:0 -> lb :: HashLB(gates=2)
nat:1 -> ttl :: UpdateTTL()
lb:0 -> rt :: IPLookup(routes=[\"198.18.0.0/15 0\", \"0.0.0.0/1 1\"])
lb:1 -> VXLANEncap(src_mac=\"02:00:00:00:00:01\", dst_mac=\"02:00:00:00:00:02\", src_ip=\"198.18.0.1\", dst_ip=\"198.18.0.2\", vni=5) -> out
ttl:1 -> ICMPTimeExceeded(addr=\"198.18.0.254\") -> out
ttl:0 -> Delay(delay_ms=0) -> IPChecksum(verify=true) -> out
rt:0 -> L2Forward(gates=2) -> RateLimit(pps=1M) -> out
rt:1 -> IPChecksum() -> Replicate(gates=2) -> out
";
    thread_local! {
        static P: std::cell::RefCell<Option<(pipeline::pipeline::Pipeline, MemPort)>> = const { std::cell::RefCell::new(None) };
    }
    P.with(|cell| {
        let mut cell = cell.borrow_mut();
        let (p, port) = cell.get_or_insert_with(|| {
            let port = MemPort::new();
            let script = pipeline::script::parse(SCRIPT).expect("fuzz pipeline script");
            let ports = vec![NamedPort { name: "p".into(), port: Box::new(port.clone()) }];
            let p = pipeline::pipeline::Pipeline::build(&script, &pipeline::modules::Registry::default(), 512, ports)
                .expect("fuzz pipeline builds");
            (p, port)
        });
        let mut rest = data;
        while let Some((&n, tail)) = rest.split_first() {
            let n = usize::from(n).min(tail.len());
            port.inject(&tail[..n]);
            rest = &tail[n..];
        }
        for _ in 0..8 {
            p.run_once();
        }
        port.take_sent();
        assert_eq!(p.pool().available() + p.holding(), 512, "every buffer back or held");
    });
}

/// The control socket's requests: no panic; a grant request that parses asks for a real
/// port, a name of the allowed shape, one to eight queues and less lent than its memory, and
/// the request a server would send for it reads back the same.
pub fn ctl_request(data: &[u8]) {
    if let Ok(ctl::request::Request::Grant(w)) = ctl::request::parse(data) {
        assert!(w.port >= 1 && w.queues >= 1 && !w.app.is_empty() && w.app.len() <= 32);
        assert!(w.app.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert!(w.lend < w.memory && w.queues <= 8);
        // What a server would send for it reads back the same.
        let again = ctl::request::parse(ctl::request::grant_request(&w).to_string().as_bytes());
        assert_eq!(again, Ok(ctl::request::Request::Grant(w)));
    }
}

/// The daemon's policy file: no panic; every entry it accepts has addresses and port rules
/// with low ≤ high and no port 0, and errors are one line.
pub fn ctl_policy(data: &[u8]) {
    match ctl::policy::Policy::parse(&String::from_utf8_lossy(data)) {
        Ok(p) => {
            for e in &p.entries {
                assert!(!e.addrs.is_empty() && e.ports.iter().all(|&(_, lo, hi)| lo >= 1 && lo <= hi));
            }
        }
        Err(e) => assert!(!e.contains('\n'), "one line: {e}"),
    }
}

/// The test certificate and key (public test material; see crates/tls/tests/certs).
fn tls_config() -> tls::TlsConfig {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    static CFG: std::sync::OnceLock<tls::TlsConfig> = std::sync::OnceLock::new();
    CFG.get_or_init(|| {
        let cert = include_bytes!("../../crates/tls/tests/certs/server.pem");
        let key = include_bytes!("../../crates/tls/tests/certs/server.key");
        let certs = CertificateDer::pem_slice_iter(cert).collect::<Result<Vec<_>, _>>().expect("test cert");
        let key = PrivateKeyDer::from_pem_slice(key).expect("test key");
        tls::TlsConfig::from_der(certs, key, &[b"http/1.1"]).expect("test config")
    })
    .clone()
}

/// Everything a session laid must be whole TLS records of the four content types.
fn check_records(s: &tls::Session) {
    let mut out = vec![0u8; s.layout.end() as usize];
    s.fill(0, &mut out, &|_, d| d.fill(b'p'));
    let mut at = 0;
    while at < out.len() {
        let (t, len) = tls::record::parse_header(&out[at..]).expect("a whole header");
        assert!((20..=23).contains(&t), "content type {t}");
        at += tls::record::HEADER + len;
    }
    assert_eq!(at, out.len(), "records end where the stream does");
}

/// Feeds `data` to `s` in pieces whose sizes come from `cuts`; returns the application data
/// delivered and how the session ended up.
fn feed(s: &mut tls::Session, data: &[u8], cuts: &[u8]) -> (Vec<u8>, Option<tls::Poll>) {
    let mut got = Vec::new();
    let mut at = 0;
    let mut k = 0;
    while at < data.len() {
        let n = (usize::from(cuts.get(k % cuts.len().max(1)).copied().unwrap_or(255)) + 1).min(data.len() - at);
        k += 1;
        s.push(&data[at..at + n]);
        at += n;
        for _ in 0..10_000 {
            match s.poll(got.len() as u64, &|_| u64::MAX) {
                tls::Poll::Idle => break,
                tls::Poll::Established => {}
                tls::Poll::Data(r) => {
                    got.extend_from_slice(&s.input()[r]);
                    s.consumed();
                }
                end @ (tls::Poll::PeerClosed | tls::Poll::Failed(_)) => return (got, Some(end)),
            }
        }
    }
    (got, None)
}

/// A server's handshake on arbitrary bytes: no panic, and whatever it sends back (its flight,
/// or an alert) is whole TLS records. The first byte picks the cut into TCP deliveries.
pub fn tls_handshake(data: &[u8]) {
    let Some((&cut, rest)) = data.split_first() else { return };
    let mut s = tls::Session::new(&tls_config(), 1426).expect("session");
    let (got, _) = feed(&mut s, rest, &[cut]);
    assert!(got.is_empty() || s.established(), "no application data before the handshake");
    check_records(&s);
}

/// The record layer after the handshake, with fixed keys: the input is a list of records the
/// target seals as the peer would (inner type, length, content; a flag byte that may give a
/// wrong record number or flip a bit) or passes raw. The content of the application-data
/// records before the first damaged one comes out in order, nothing panics, and what is sent
/// back is whole records.
pub fn tls_records(data: &[u8]) {
    use ring::aead::AES_128_GCM;
    let keys = || tls::record::Keys::new(&AES_128_GCM, &[1; 16], &[2; 12]).expect("keys");
    let (peer, tx) = (keys(), tls::record::Keys::new(&AES_128_GCM, &[3; 16], &[4; 12]).expect("keys"));
    let mut s = tls::Session::from_keys(tx, keys(), 1426);
    let mut wire = Vec::new();
    let mut want = Vec::new();
    let (mut seq, mut intact) = (0u64, true);
    let mut at = 0;
    while at + 3 <= data.len() {
        let (flags, inner, len) = (data[at], data[at + 1], usize::from(data[at + 2]) * 8);
        at += 3;
        let content = &data[at..(at + len).min(data.len())];
        at += content.len();
        if flags & 0x80 != 0 {
            wire.extend_from_slice(content);
            intact &= content.is_empty();
            continue;
        }
        let mut rec = vec![0u8; content.len() + tls::record::OVERHEAD];
        rec[tls::record::HEADER..tls::record::HEADER + content.len()].copy_from_slice(content);
        let wrong = flags & 0x40 != 0;
        peer.seal(if wrong { seq + 1 } else { seq }, inner, &mut rec);
        if flags & 0x20 != 0 {
            let i = usize::from(flags & 0x1f) % rec.len();
            rec[i] ^= 1;
            intact = false;
        }
        intact &= !wrong;
        // Zero padding is stripped: with an inner type of 0 the content's last non-zero
        // byte is taken for the type.
        let (kind, body) = match inner {
            0 => match content.iter().rposition(|&b| b != 0) {
                Some(i) => (content[i], &content[..i]),
                None => (0, content),
            },
            t => (t, content),
        };
        if intact && kind == 23 {
            want.extend_from_slice(body);
        }
        seq += 1;
        wire.extend_from_slice(&rec);
    }
    let (got, end) = feed(&mut s, &wire, data.get(..3).unwrap_or(&[]));
    // What came out is the application data of the intact records before the first damaged
    // one, in order: all of it unless the session ended (an alert, a refused message).
    assert!(want.starts_with(&got), "delivered data is what was sealed");
    if end.is_none() {
        assert_eq!(got, want);
    }
    check_records(&s);
}

/// The load generator's response-head reader: no panic; a head it reads lies within the
/// input and reads the same from exactly its own bytes.
pub fn http_response(data: &[u8]) {
    if let Some(r) = gen::http::response_head(data) {
        if let Ok((len, ..)) = r {
            assert!(len <= data.len());
            assert_eq!(gen::http::response_head(&data[..len]), Some(r));
        }
    }
}

/// The HTTP request parser and what reads request parts: no panic; a complete head is
/// within the input and parses the same from exactly its own bytes; decoded paths never
/// climb out of the root.
pub fn http_request(data: &[u8]) {
    // The first byte is the web_server target's split point; both share the seeds.
    let data = data.get(1..).unwrap_or(&[]);
    match http::parse(data) {
        Ok(http::Parsed::Complete(r)) => {
            assert!(r.head_len <= data.len());
            match http::parse(&data[..r.head_len]) {
                Ok(http::Parsed::Complete(again)) => assert_eq!(again, r),
                other => panic!("prefix parses as {other:?}"),
            }
            let mut path = Vec::new();
            if http::path::decode(r.target, &mut path).is_ok() {
                assert!(!path.starts_with(b"/"));
                assert!(
                    !path.split(|&c| c == b'/').any(|s| s == b".." || s == b"." || s.is_empty()) || path.is_empty()
                );
            }
            for v in [r.range, r.if_range, r.if_modified_since].into_iter().flatten() {
                if let http::range::Ranged::Part { first, last } = http::range::evaluate(v, 1000) {
                    assert!(first <= last && last < 1000);
                }
                if let Some(t) = http::date::parse(v) {
                    let s = http::date::to_string(t);
                    if t < 253_402_300_800 {
                        assert_eq!(http::date::parse(s.as_bytes()), Some(t));
                    }
                }
            }
        }
        Ok(http::Parsed::Partial) => assert!(data.len() <= http::request::MAX_HEAD + 64),
        Err(_) => {}
    }
}

thread_local! {
    static WEB: std::cell::RefCell<web::WebApp> = std::cell::RefCell::new({
        let site = std::sync::Arc::new(web::Site::demo(1_000_000));
        let mut store = web::store::Store::new(site, 1448, 1 << 20, 2_000_000);
        store.preload();
        web::WebApp::new(store, web::Settings::default())
    });
}

/// The web server's request handling on arbitrary bytes (split in two at the first byte's
/// position): no panic, and the queued stream is a run of well-formed responses whose
/// lengths add up, read back through the same fill the TCP stack uses.
pub fn web_server(data: &[u8]) {
    use tcp::App as _;
    let (cut, data) = match data.split_first() {
        Some((&b, rest)) => (usize::from(b) % (rest.len() + 1), rest),
        None => (0, data),
    };
    WEB.with(|w| {
        let mut app = w.borrow_mut();
        let mut c = web::conn::Conn::new(tcp::Instant::ZERO);
        app.take(&mut c, &data[..cut]);
        app.take(&mut c, &data[cut..]);
        let mut stream = vec![0u8; c.end as usize];
        if !stream.is_empty() {
            app.fill(&c, 0, &mut stream);
        }
        let mut at = 0;
        for r in c.resps.iter() {
            assert_eq!(r.start, at as u64);
            let bytes = &stream[at..at + r.len as usize];
            assert!(bytes.starts_with(b"HTTP/1.1 "), "{:?}", String::from_utf8_lossy(&bytes[..bytes.len().min(40)]));
            let head_end = bytes.windows(4).position(|w| w == b"\r\n\r\n").expect("head ends") + 4;
            let head = std::str::from_utf8(&bytes[..head_end]).expect("ascii head");
            let len: Option<usize> =
                head.lines().find_map(|l| l.strip_prefix("Content-Length: ")).map(|v| v.trim().parse().unwrap());
            let body = bytes.len() - head_end;
            // HEAD and 304 carry no body; everything else exactly its Content-Length.
            if body > 0 {
                assert_eq!(len, Some(body), "{head}");
            }
            at += r.len as usize;
        }
        assert_eq!(at, stream.len());
        // Give back what the responses hold, as the end of the connection would.
        app.closed_for_fuzz(c);
    });
}

/// The text protocol's framing and command parser: total, and a line found lies in the input.
pub fn memcache_text(data: &[u8]) {
    use memcache::text::{self, Command, Line};
    match text::line(data) {
        Line::Found(l, n) => {
            assert!(n <= data.len() && l.len() < n && data.starts_with(l));
            match text::parse(l) {
                Command::Store { bytes, key, .. } => {
                    assert!(bytes <= i32::MAX as usize - 2);
                    assert!(key.len() <= text::MAX_KEY);
                }
                Command::Get { keys, .. } => assert!(keys.iter().all(|k| k.len() <= text::MAX_KEY && !k.is_empty())),
                Command::Meta(memcache::meta::Meta::Cmd { key, flags, .. }) => {
                    assert!(key.len() <= text::MAX_KEY);
                    assert!(flags.iter().count() <= memcache::meta::MAX_FLAGS);
                }
                _ => {}
            }
        }
        Line::Incomplete => assert!(!data.contains(&b'\n') && data.len() <= text::MAX_GET_LINE),
        Line::TooLong => assert!(data.len() > text::MAX_LINE),
    }
}

/// The binary protocol's header: lengths add up or are refused.
pub fn memcache_binary(data: &[u8]) {
    match memcache::binary::header(data) {
        Some(h) => {
            assert!(data.len() >= memcache::binary::HEADER);
            if let Some(v) = h.valuelen() {
                assert_eq!(v as u64 + u64::from(h.keylen) + u64::from(h.extlen), u64::from(h.bodylen));
            }
        }
        None => assert!(data.len() < memcache::binary::HEADER),
    }
}

struct KvInfo;

impl kv::session::Info for KvInfo {
    fn stats(&self, group: &[u8], _now: u32, each: &mut dyn FnMut(&str, &str)) -> bool {
        each("group", &String::from_utf8_lossy(group));
        group.is_empty()
    }
    fn version(&self) -> &str {
        "fuzz"
    }
    fn reset(&self) {}
}

fn kv_run(pieces: &[&[u8]]) -> (Vec<u8>, kv::session::Flow) {
    let cfg = kv::cache::CacheConfig { memory: 2 << 20, ..Default::default() };
    let cache = kv::cache::Cache::new(cfg, 1_800_000_000).expect("cache");
    let board = kv::stats::Board::new(1);
    let detail = kv::stats::Detail::default();
    let mut s = kv::session::Session::new();
    let mut out = Vec::new();
    let mut flow = kv::session::Flow::Open;
    for p in pieces {
        let mut ctx =
            kv::session::Ctx { cache: &cache, now: 100, counters: board.engine(0), info: &KvInfo, detail: &detail };
        flow = s.input(p, &mut ctx, &mut out);
        if flow == kv::session::Flow::Close {
            break;
        }
    }
    (out, flow)
}

/// A KV connection on arbitrary bytes, whole and cut in two at the first byte's position:
/// no panic, and the same answers however the bytes were segmented.
pub fn kv_session(data: &[u8]) {
    let (cut, data) = match data.split_first() {
        Some((&b, rest)) => (usize::from(b) % (rest.len() + 1), rest),
        None => (0, data),
    };
    let whole = kv_run(&[data]);
    let split = kv_run(&[&data[..cut], &data[cut..]]);
    assert_eq!(whole, split, "answers depend on where the input was cut ({cut})");
}

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

/// Ethernet header parsing and re-emission.
pub fn ethernet(data: &[u8]) {
    if let Ok(f) = EthernetFrame::new_checked(data) {
        let r = EthernetRepr::parse(&f).unwrap();
        let _ = f.payload();
        if r.ethertype != wire::EtherType::VLAN {
            let mut b = vec![0u8; r.header_len()];
            r.emit(&mut b);
            assert_eq!(EthernetRepr::parse(&EthernetFrame::new_checked(&b[..]).unwrap()).unwrap(), r);
        }
    }
}

/// ARP.
pub fn arp(data: &[u8]) {
    if let Ok(p) = ArpPacket::new_checked(data) {
        if let Ok(r) = ArpRepr::parse(&p) {
            let mut b = [0u8; 28];
            r.emit(&mut b);
            assert_eq!(ArpRepr::parse(&ArpPacket::new_checked(&b[..]).unwrap()).unwrap(), r);
        }
    }
}

/// IPv4 header, options and payload bounds.
pub fn ipv4(data: &[u8]) {
    if let Ok(p) = Ipv4Packet::new_checked(data) {
        let _ = (p.options(), p.payload(), p.is_fragment());
        if let Ok(r) = Ipv4Repr::parse(&p) {
            let mut b = vec![0u8; 20 + r.payload_len];
            r.emit(&mut b);
            assert_eq!(Ipv4Repr::parse(&Ipv4Packet::new_checked(&b[..]).unwrap()).unwrap(), r);
        }
    }
}

/// IPv6 and its extension header walk: whatever parses lies within the buffer and survives
/// a round trip of the fixed header.
pub fn ipv6(data: &[u8]) {
    use wire::ipv6::{Ipv6Packet, Ipv6Repr, HEADER_LEN};
    if let Ok(p) = Ipv6Packet::new_checked(data) {
        if let Ok((r, off)) = Ipv6Repr::parse(&p) {
            assert!(HEADER_LEN + off + r.payload_len <= data.len());
            let mut b = vec![0u8; HEADER_LEN + r.payload_len];
            r.emit(&mut b);
            assert_eq!(Ipv6Repr::parse(&Ipv6Packet::new_checked(&b[..]).unwrap()).unwrap(), (r, 0));
        }
    }
}

/// ICMPv6 and neighbour discovery: the first byte is the hop limit; the checksum is filled
/// so the fuzzer reaches the message parsers. What parses survives emit and parse.
pub fn icmpv6(data: &[u8]) {
    use wire::icmpv6::{Icmpv6Repr, HEADER_LEN};
    let Some((&hop, msg)) = data.split_first() else { return };
    if msg.len() < HEADER_LEN || msg.len() > 1500 {
        return;
    }
    let (src, dst) = (wire::Ipv6Addr([0x20, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]), V6_SERVER);
    let mut m = msg.to_vec();
    m[2..4].copy_from_slice(&[0, 0]);
    let sum = wire::checksum::pseudo_header_v6(src, dst, 58, m.len() as u32);
    let c = !wire::checksum::fold(wire::checksum::add(sum, &m));
    m[2..4].copy_from_slice(&c.to_be_bytes());
    if let Ok(r) = Icmpv6Repr::parse(src, dst, hop, &m) {
        let data = &m[HEADER_LEN..];
        let mut b = vec![0u8; r.len(data.len())];
        if b.len() == m.len() && !matches!(r, Icmpv6Repr::NeighborSolicit { .. } | Icmpv6Repr::NeighborAdvert { .. }) {
            b[HEADER_LEN..].copy_from_slice(data);
        }
        r.emit(src, dst, &mut b);
        assert_eq!(Icmpv6Repr::parse(src, dst, hop, &b), Ok(r));
    }
}

/// ICMP.
pub fn icmp(data: &[u8]) {
    if let Ok(p) = IcmpPacket::new_checked(data) {
        if let Ok(r) = IcmpRepr::parse(&p) {
            if let Some(n) = r.buffer_len() {
                let mut b = vec![0u8; n];
                assert!(r.emit(&mut b));
                assert_eq!(IcmpRepr::parse(&IcmpPacket::new_checked(&b[..]).unwrap()).unwrap(), r);
            }
        }
    }
}

/// UDP with the pseudo-header checksum.
pub fn udp(data: &[u8]) {
    if let Ok(p) = UdpPacket::new_checked(data) {
        let _ = p.payload();
        if let Ok(r) = UdpRepr::parse(&p, A, B) {
            let mut b = vec![0u8; 8 + r.payload_len];
            b[8..].copy_from_slice(p.payload());
            r.emit(&mut b, A, B);
            assert_eq!(UdpRepr::parse(&UdpPacket::new_checked(&b[..]).unwrap(), A, B).unwrap(), r);
        }
    }
}

/// TCP header and options. The checksum is filled first so the fuzzer reaches option parsing.
pub fn tcp(data: &[u8]) {
    let mut d = data.to_vec();
    if let Ok(mut p) = TcpPacket::new_checked(&mut d[..]) {
        p.fill_checksum(A, B);
        let p = TcpPacket::new_checked(&d[..]).unwrap();
        let _ = p.payload();
        if let Ok(r) = TcpRepr::parse(&p, A, B) {
            // Re-emit only what fits a header (parsed SACK blocks plus SYN options may not).
            if r.options.buffer_len() <= 40 {
                let h = r.header_len();
                let mut b = vec![0u8; h + r.payload_len];
                b[h..].copy_from_slice(p.payload());
                r.emit(&mut b, A, B);
                assert_eq!(TcpRepr::parse(&TcpPacket::new_checked(&b[..]).unwrap(), A, B).unwrap(), r);
            }
        }
    }
}

/// TCP options alone.
pub fn tcp_options(data: &[u8]) {
    if let Ok(o) = TcpOptions::parse(data) {
        if o.buffer_len() <= 40 {
            let mut b = [0u8; 40];
            let n = o.emit(&mut b);
            assert_eq!(TcpOptions::parse(&b[..n]).unwrap(), o);
        }
    }
}

/// The TCP endpoint's collecting TX ring: every segment it emits must parse back.
struct TcpOut(Vec<Vec<u8>>);

impl tcp::Output for TcpOut {
    fn room(&self) -> usize {
        16
    }
    fn send(&mut self, local: wire::IpAddr, remote: wire::IpAddr, len: usize, write: &mut dyn FnMut(&mut [u8])) {
        assert_eq!((local, remote), (B.into(), A.into()));
        let mut b = vec![0u8; len];
        write(&mut b);
        let p = TcpPacket::new_checked(&b[..]).expect("emitted segment is well formed");
        TcpRepr::parse(&p, remote, local).expect("emitted segment has a valid checksum and options");
        self.0.push(b);
    }
}

/// An application that echoes what it gets and keeps a bounded source.
#[derive(Default)]
struct EchoApp;

#[derive(Default)]
struct EchoConn(Vec<u8>);

impl tcp::Source for EchoConn {
    fn end(&self) -> u64 {
        self.0.len() as u64
    }
    fn fill(&self, off: u64, dst: &mut [u8]) {
        dst.copy_from_slice(&self.0[off as usize..off as usize + dst.len()]);
    }
}

impl tcp::App for EchoApp {
    type Conn = EchoConn;
    fn accept(&mut self, _: tcp::Handle, _: u16, _: (wire::IpAddr, u16)) -> Option<EchoConn> {
        Some(EchoConn::default())
    }
    fn recv(&mut self, _: tcp::Handle, c: &mut EchoConn, data: &[u8], ctl: &mut tcp::Ctl) {
        if c.0.len() < 100_000 {
            c.0.extend_from_slice(data);
        }
        ctl.recv_done(data.len() as u32);
    }
    fn closed(&mut self, _: tcp::Handle, _: EchoConn, _: tcp::End) {}
}

/// Segments into a TCP endpoint that has one connection open: each record is
/// [time step (ms), header bytes...] with sequence and acknowledgement numbers taken relative
/// to the connection's, so mutations land near the windows where the state machine lives.
pub fn tcp_endpoint(data: &[u8]) {
    use tcp::{Config, Endpoint, Limits};
    let limits = Limits { max_conns: 8, syn_backlog: 2, ooo_buffers: 2, max_time_wait: 2, ..Limits::default() };
    let mut ep: Endpoint<EchoApp> = Endpoint::new(limits, tcp::Instant::ZERO);
    let mut app = EchoApp;
    ep.listen(80, Config { rcv_buf: 8192, time_wait: tcp::Duration::from_secs(2), ..Config::default() });
    let mut out = TcpOut(Vec::new());
    let syn = TcpRepr {
        src_port: 40000,
        dst_port: 80,
        seq: 1000,
        ack: 0,
        flags: wire::TcpFlags(wire::TcpFlags::SYN),
        window: 65535,
        options: TcpOptions { mss: Some(1000), sack_permitted: true, timestamps: Some((1, 0)), ..Default::default() },
        payload_len: 0,
    };
    ep.input(&mut app, tcp::Instant::ZERO, A.into(), B.into(), &syn, &[]);
    ep.output(&mut app, tcp::Instant::ZERO, &mut out);
    let iss = out.0.last().map_or(0, |b| TcpPacket::new_unchecked(&b[..]).seq());
    let mut now = tcp::Instant::ZERO;
    for rec in data.chunks(48) {
        let (dt, seg) = rec.split_first().unwrap_or((&0, &[]));
        now += tcp::Duration::from_millis(u64::from(*dt));
        let mut b = seg.to_vec();
        if let Ok(mut p) = TcpPacket::new_checked(&mut b[..]) {
            p.set_seq(p.seq().wrapping_add(1000));
            p.set_ack(p.ack().wrapping_add(iss));
            p.fill_checksum(A, B);
            let p = TcpPacket::new_checked(&b[..]).unwrap();
            if let Ok(r) = TcpRepr::parse(&p, A, B) {
                ep.input(&mut app, now, A.into(), B.into(), &r, p.payload());
            }
        }
        ep.advance(&mut app, now);
        ep.output(&mut app, now, &mut out);
        out.0.clear();
        assert!(ep.len() <= 8, "the table limit holds");
        assert!(ep.ooo_in_use() <= 2);
    }
    // Time heals: everything that is not open waits out its timers and goes.
    for _ in 0..200 {
        now += tcp::Duration::from_secs(1);
        ep.advance(&mut app, now);
        ep.output(&mut app, now, &mut out);
        out.0.clear();
    }
    assert!(ep.time_wait() == 0, "TIME-WAIT drained");
}

/// A whole frame through the engine's stack (memory port): counted exactly once, no leak.
pub fn engine_frame(data: &[u8]) {
    use engine::{Engine, EngineConfig};
    use io::mem::MemPort;
    let (port, wire) = MemPort::with_wire(4);
    let mut app = echo::UdpEcho::new(7);
    let mac = wire::MacAddr([0x02, 0, 0, 0, 0, 0x01]);
    let cfg = EngineConfig::new(B, mac, true, "fuzz0").with_ipv6(V6_SERVER, true);
    let mut e = Engine::new(port, cfg, &app);
    wire.inject(data);
    e.poll(tcp::Instant::ZERO, &mut app);
    let c = e.counters();
    let out = wire.take_sent();
    assert_eq!(c.rx_packets, 1);
    let answered =
        c.udp_replies + c.arp_replies + c.icmp_echo + c.icmpv6_echo + c.nd_replies + c.nd_learned + c.icmp_too_big;
    assert_eq!(c.total_drops() + answered, 1, "{c:?}");
    assert_eq!(out.len() as u64, c.tx_packets);
    assert_eq!(e.port().free_frames(), 4);
}

/// Seeds: one valid example per target, so mutation starts near the interesting paths.
/// A ClientHello as rustls sends it.
fn client_hello() -> Vec<u8> {
    let roots = rustls::RootCertStore::empty();
    let cfg =
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("sirocco.test").expect("name");
    let mut c = rustls::ClientConnection::new(std::sync::Arc::new(cfg), name).expect("client");
    let mut out = Vec::new();
    while c.wants_write() {
        c.write_tls(&mut out).expect("write to a Vec");
    }
    out
}

/// Inputs each target starts from.
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    use wire::ethernet::MacAddr;
    let udp_frame = wire::build::UdpFrame {
        src_mac: MacAddr([2, 0, 0, 0, 0, 2]),
        dst_mac: MacAddr([2, 0, 0, 0, 0, 1]),
        src: A,
        dst: B,
        src_port: 40000,
        dst_port: 7,
    }
    .to_vec(&[0x5a; 16]);
    let tcp_seg = {
        let r = TcpRepr {
            src_port: 40000,
            dst_port: 80,
            seq: 1,
            ack: 0,
            flags: wire::TcpFlags(wire::TcpFlags::SYN),
            window: 65535,
            options: TcpOptions {
                mss: Some(1460),
                window_scale: Some(7),
                sack_permitted: true,
                timestamps: Some((1, 0)),
                ..Default::default()
            },
            payload_len: 0,
        };
        let mut b = vec![0u8; r.header_len()];
        r.emit(&mut b, A, B);
        b
    };
    match target {
        "ethernet" | "engine" => {
            let (us, peer) = (MacAddr([2, 0, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 2]));
            let a6 = wire::Ipv6Addr([0x20, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
            let mut udp6 = vec![0u8; wire::build::UDP6_HEADERS + 16];
            wire::build::udp6(&mut udp6, (peer, a6, 40000), (us, V6_SERVER, 7), 16, 64);
            let mut ns = vec![0u8; 200];
            let n = wire::build::neighbor_solicit(&mut ns, peer, a6, V6_SERVER);
            ns.truncate(n);
            vec![
                udp_frame.clone(),
                {
                    let mut b = udp_frame;
                    b.splice(12..12, [0x81, 0, 0, 5]);
                    b
                },
                udp6,
                ns,
            ]
        }
        "arp" => vec![vec![0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 2, 198, 18, 0, 2, 0, 0, 0, 0, 0, 0, 198, 18, 0, 10]],
        "ipv4" => vec![udp_frame[14..].to_vec()],
        "ipv6" => vec![{
            let r = wire::Ipv6Repr {
                src: wire::Ipv6Addr([0x20, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]),
                dst: V6_SERVER,
                protocol: wire::NextHeader::DEST_OPTS,
                payload_len: 16,
                hop_limit: 64,
                traffic_class: 0,
                flow_label: 1,
            };
            let mut b = vec![0u8; 56];
            r.emit(&mut b);
            b[40..48].copy_from_slice(&[wire::NextHeader::UDP, 0, 1, 4, 0, 0, 0, 0]);
            b
        }],
        "icmpv6" => vec![
            [&[255u8, 135, 0, 0, 0, 0, 0, 0, 0][..], &V6_SERVER.0, &[1, 1, 2, 0, 0, 0, 0, 2]].concat(),
            [&[64u8, 128, 0, 0, 0, 0, 1, 0, 1][..], b"ping data"].concat(),
        ],
        "icmp" => vec![{
            let mut b = vec![0u8; 16];
            IcmpRepr::EchoRequest { ident: 1, seq: 1, data: &[1; 8] }.emit(&mut b);
            b
        }],
        "udp" => vec![udp_frame[34..].to_vec()],
        "tcp" => vec![tcp_seg.clone()],
        "tcp_endpoint" => {
            // The handshake's ACK, then data, then a FIN, in relative numbers.
            let seg = |seq: u32, ack: u32, flags: u8, len: usize| {
                let r = TcpRepr {
                    src_port: 40000,
                    dst_port: 80,
                    seq,
                    ack,
                    flags: wire::TcpFlags(flags),
                    window: 65535,
                    options: TcpOptions { timestamps: Some((2, 0)), ..Default::default() },
                    payload_len: len,
                };
                let mut b = vec![0u8; r.header_len() + len];
                r.emit(&mut b, A, B);
                let mut rec = vec![1u8];
                rec.extend_from_slice(&b);
                rec.resize(48, 0);
                rec
            };
            use wire::TcpFlags as F;
            vec![[seg(1, 1, F::ACK, 0), seg(1, 1, F::ACK | F::PSH, 10), seg(11, 11, F::ACK | F::FIN, 0)].concat()]
        }
        "tcp_options" => vec![tcp_seg[20..].to_vec()],
        "http_response" => vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhello".to_vec(),
            b"HTTP/1.1 304 Not Modified\r\nETag: \"1-2\"\r\nConnection: close\r\n\r\n".to_vec(),
        ],
        "zone_text" => vec![
            FUZZ_ZONE.as_bytes().to_vec(),
            include_bytes!("../data/signed-nsec.zone").to_vec(),
            include_bytes!("../data/signed-nsec3.zone").to_vec(),
        ],
        "dns_xfr_in" => {
            let answer = |id: u16, qd: bool, records: &[(&[u8], u16, &[u8])]| {
                let mut m = [&id.to_be_bytes()[..], &[0x84, 0, 0, u8::from(qd), 0, records.len() as u8, 0, 0, 0, 0]]
                    .concat();
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
                answer(0x101, true, &[(apex, 6, soa), (apex, 2, b"\x02ns\xc0\x0c"), (b"\x02ns\xc0\x0c", 1, &[198, 18, 0, 1])]),
                answer(0x101, false, &[(www, 5, b"\x02ns\x07example\x03com\x00"), (www, 15, b"\x00\x0a\x02mx\x07example\x03com\x00")]),
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
            vec![
                [&[0x20u8][..], &stream].concat(),
                [&[0x41u8][..], &stream].concat(),
                [&[0x31u8][..], &ixfr].concat(),
            ]
        }
        "dns_tsig" => {
            let www = [
                &[0x12u8, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0][..],
                b"\x03www\x07example\x03com\x00\x00\x01\x00\x01",
            ]
            .concat();
            let signed = |sel: u8| [&[sel, 0x5a, 40][..], &www].concat();
            let mut stale = www.clone();
            stale.resize(300, 0);
            let (len, _) = dns_server::tsig::sign(&fuzz_key(), &mut stale, www.len(), dns_server::tsig::Chain::Request, 1, 0, &[])
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
        "tls_handshake" => vec![
            [&[255u8][..], &client_hello()].concat(),
            [&[7u8][..], &client_hello()].concat(),
            b"\xffGET / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
        ],
        "tls_records" => vec![
            [&[0u8, 23, 2][..], b"GET / HTTP/1.1\r\n", &[0, 21, 1], &[1, 0, 0, 0, 0, 0, 0, 0]].concat(),
            [&[0u8, 22, 1][..], &[24, 0, 0, 1, 1, 0, 0, 0], &[0x40, 23, 1], b"abcdefgh"].concat(),
        ],
        "http_request" | "web_server" => vec![
            b"\x10GET /index.html HTTP/1.1\r\nHost: a\r\nRange: bytes=0-9\r\nIf-None-Match: \"x\"\r\n\r\n".to_vec(),
            b"\x05GET / HTTP/1.1\r\nHost: a\r\n\r\nHEAD /about HTTP/1.0\r\n\r\nGET /%2e%2e/x HTTP/1.1\r\nHost: b\r\n\r\n".to_vec(),
            b"\x00GET /hello.txt HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nIf-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\nabcGET /style.css HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".to_vec(),
        ],
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
        "kv_session" => {
            let mut v = seeds("memcache_text");
            let mut b = vec![0x10];
            b.extend(seeds("memcache_binary").remove(0));
            b.extend_from_slice(&[0x80, 0x0c, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, b'k']);
            b.extend_from_slice(&[0x80, 0x0a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0]);
            v.push(b);
            v
        }
        "resp_request" => vec![
            b"\x09*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n".to_vec(),
            b"\x04SET k \"a b\\x41\" 'c\\'d'\r\n".to_vec(),
            b"\x02*2\r\n$-1\r\n*0\r\n".to_vec(),
        ],
        "pipeline_script" => vec![
            b"in :: PortInc(port=\"eth0\")\nin -> TTL() -> rt :: IPLookup(routes=[\"0.0.0.0/0 1\"])\nrt:1 -> 0:Sink()\n".to_vec(),
            b"tc t(policy=rate_limit, limit=10k) # c\nworker w(cpu=1)\ns :: Source(size=[64, 1.5, x])".to_vec(),
        ],
        "pipeline_frames" => vec![
            // A UDP datagram, a TCP SYN to port 22, an ICMP echo with TTL 1, a VXLAN packet.
            [&[42u8][..], &hex(b"0200000000020200000000010800450000220000400040110000c6120101c6120201138900350008000071")].concat(),
            [&[54u8][..], &hex(b"0200000000020200000000010800450000280000400040060000c6120909c612020104d2001600000000000000005002ffff00000000")].concat(),
            [&[42u8][..], &hex(b"02000000000202000000000108004500001c0000400001010000c6120101c61202010800f7ff0000000100000000")].concat(),
            [&[92u8][..], &hex(b"0200000000020200000000010800450000500000400040110000c6120001c612000212b512b5003c000008000000000005000200000000020200000000010800450000220000400040110000c6130001c61300020001000200080000aa")].concat(),
        ],
        "ctl_request" => vec![
            br#"{"op":"grant","app":"dns1","addr":"198.18.0.53","proto":"udp","port":53,"queues":1,"pps":100000}"#.to_vec(),
            br#"{"op":"grant","app":"w","addr":"198.18.0.80","proto":"tcp","port":80,"bps":9,"memory":8388608,"lend":4194304}"#.to_vec(),
            br#"{"op":"revoke","app":"dns1"}"#.to_vec(),
            br#"{"op":"status"}"#.to_vec(),
        ],
        "ctl_policy" => vec![
            b"[[allow]]\nuser = \"dns\"\naddrs = [\"198.18.0.53\"]\nports = [\"udp/53\", \"tcp/8000-8099\"]\nmax_pps = 1000\n".to_vec(),
        ],
        "store_session" => vec![
            b"\x21*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n10\r\nINCR k\r\nGET k\r\nSET k v EX 10 NX GET\r\nTTL k\r\n".to_vec(),
            b"\x10MSET a 1 b 2\r\nMGET a b c\r\nAPPEND a xyz\r\nEXPIRE a 5 GT\r\nDEL a b\r\nQUIT\r\n".to_vec(),
            b"\x08PING\r\nCONFIG GET s*\r\nFLUSHALL\r\nDBSIZE\r\nNOPE 'x y'\r\n*1\r\n$-3\r\n".to_vec(),
        ],
        "store_log_walk" => {
            use store::log::record::{encode, pad, Change};
            let mut b = vec![0x21];
            for seq in 2..5 {
                let mut body = Vec::new();
                encode(&mut body, seq, &Change::Sets(vec![(b"k", b"v", 0)]));
                let mut c = Vec::new();
                encode(&mut c, seq, &Change::Commit { len: 4096, gen: 1, prev: if seq == 2 { 1 } else { seq - 1 } });
                c.extend(body);
                pad(&mut c);
                b.extend(c);
            }
            vec![b, vec![0x10, 1, 2, 3]]
        }
        "store_log_record" => {
            use store::log::record::{encode, Change};
            let mut a = Vec::new();
            encode(&mut a, 7, &Change::Sets(vec![(b"k", b"value", 0), (b"x", b"", 1_800_000_000_000)]));
            let mut b = Vec::new();
            encode(&mut b, 9, &Change::Del(vec![b"k", b"other"]));
            let mut c = Vec::new();
            encode(&mut c, 11, &Change::Expire(b"k", 5));
            vec![a, b, c]
        }
        "memcache_text" => vec![
            b"\x05set k 5 0 3\r\nabc\r\nget k x\r\ngets k\r\nincr k 1\r\nappend k 0 0 1\r\n!\r\n".to_vec(),
            b"\x03mg k v f t c k Oab q\r\nms k 2 T9 F3 MA c\r\nhi\r\nma n N0 J9 v\r\nmd k q\r\nmn\r\nme k\r\n".to_vec(),
            b"\x00cas k 0 0 1 1\r\nx\r\ntouch k 10\r\ngat 5 k\r\ndelete k\r\nflush_all 0\r\nstats\r\nquit\r\n".to_vec(),
        ],
        "memcache_binary" => vec![{
            let mut b = vec![0x80, 0x01, 0, 1, 8, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
            b.extend_from_slice(&[0, 0, 0, 5, 0, 0, 0, 0, b'k', b'v']);
            b
        }],
        _ => vec![vec![]],
    }
}

/// Bytes from hex digits (a seed written as a packet dump).
fn hex(h: &[u8]) -> Vec<u8> {
    let digit = |c: u8| (c as char).to_digit(16).expect("hex digit") as u8;
    h.chunks(2).map(|p| digit(p[0]) << 4 | digit(p[1])).collect()
}
