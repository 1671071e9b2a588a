//! The session against rustls's own client, in memory: handshake, application data both
//! ways, every suite, segments cut anywhere, KeyUpdate, close_notify, and bad input.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use tls::record::{alert, content};
use tls::session::Failure;
use tls::{Poll, Session, TlsConfig};

fn cert_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/certs")
}

fn server_config() -> TlsConfig {
    let d = cert_dir();
    TlsConfig::from_pem_files(&d.join("server.pem"), &d.join("server.key"), &[b"http/1.1"]).unwrap()
}

fn client(suite: Option<rustls::SupportedCipherSuite>) -> ClientConnection {
    client_logging(suite, None)
}

/// A client whose secrets go to `log` (to craft records under its keys).
fn client_logging(suite: Option<rustls::SupportedCipherSuite>, log: Option<Arc<Secrets>>) -> ClientConnection {
    let mut roots = RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(cert_dir().join("ca.pem")).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let mut provider = rustls::crypto::ring::default_provider();
    if let Some(s) = suite {
        provider.cipher_suites = vec![s];
    }
    let mut cfg = ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    if let Some(l) = log {
        cfg.key_log = l;
    }
    ClientConnection::new(Arc::new(cfg), ServerName::try_from("sirocco.test").unwrap()).unwrap()
}

/// The server side: a session and the application's plaintext stream (an echo, upper-cased).
struct Server {
    s: Session,
    plain: Vec<u8>,
    got: Vec<u8>,
    sent: u64,
    peer_closed: bool,
    /// What the client read back.
    echoed: Vec<u8>,
    failed: Option<Failure>,
}

impl Server {
    fn new() -> Server {
        Server::with_record(1448 - 22)
    }

    fn with_record(record: usize) -> Server {
        Server {
            s: Session::new(&server_config(), record).unwrap(),
            plain: Vec::new(),
            got: Vec::new(),
            sent: 0,
            peer_closed: false,
            echoed: Vec::new(),
            failed: None,
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        self.s.push(bytes);
        for _ in 0..1000 {
            match self.s.poll(self.plain.len() as u64, &|_| u64::MAX) {
                Poll::Idle => return,
                Poll::Established => self.s.sync(self.plain.len() as u64, &|_| u64::MAX),
                Poll::Data(r) => {
                    let d = self.s.input()[r].to_vec();
                    self.got.extend_from_slice(&d);
                    self.plain.extend(d.iter().map(u8::to_ascii_uppercase));
                    self.s.consumed();
                    self.s.sync(self.plain.len() as u64, &|_| u64::MAX);
                }
                Poll::PeerClosed => {
                    self.peer_closed = true;
                    return;
                }
                Poll::Failed(f) => {
                    self.failed = Some(f);
                    return;
                }
            }
        }
        panic!("session did not settle");
    }

    /// The application offset of the first plaintext not yet sent.
    fn sent_plain(&self) -> u64 {
        self.s.layout.plain_acked(self.sent)
    }

    /// The stream bytes from where the last call stopped, cut into segments of `cut` bytes.
    fn output(&mut self, cut: usize) -> Vec<u8> {
        let end = self.s.layout.end();
        let mut out = Vec::new();
        while self.sent < end {
            let n = ((end - self.sent) as usize).min(cut);
            let mut seg = vec![0; n];
            let plain = &self.plain;
            self.s.fill(self.sent, &mut seg, &|p, d| {
                d.copy_from_slice(&plain[p as usize..p as usize + d.len()]);
            });
            out.extend_from_slice(&seg);
            self.sent += n as u64;
        }
        out
    }
}

/// Moves bytes both ways until neither side has any; cuts server output at `cut`.
fn exchange(c: &mut ClientConnection, s: &mut Server, cut: usize) {
    for _ in 0..50 {
        let mut to_server = Vec::new();
        while c.wants_write() {
            c.write_tls(&mut to_server).unwrap();
        }
        if !to_server.is_empty() {
            s.take(&to_server);
        }
        let to_client = s.output(cut);
        let mut rest = &to_client[..];
        while !rest.is_empty() {
            c.read_tls(&mut rest).unwrap();
            c.process_new_packets().unwrap();
            let got = read_all(c);
            s.echoed.extend_from_slice(&got);
        }
        if to_server.is_empty() && to_client.is_empty() {
            return;
        }
    }
    panic!("no quiescence");
}

fn read_all(c: &mut ClientConnection) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match c.reader().read(&mut buf) {
            Ok(0) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return out,
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn every_suite_handshakes_and_carries_data_both_ways() {
    for suite in rustls::crypto::ring::default_provider().cipher_suites {
        if suite.version() != &rustls::version::TLS13 {
            continue;
        }
        let mut c = client(Some(suite));
        let mut s = Server::new();
        // The request rides with the client's Finished, as curl sends it.
        c.writer().write_all(b"get /index.html").unwrap();
        exchange(&mut c, &mut s, 1448);
        assert!(s.s.established(), "{suite:?}");
        assert_eq!(c.alpn_protocol(), Some(&b"http/1.1"[..]));
        assert_eq!(s.got, b"get /index.html");
        assert_eq!(s.echoed, b"GET /INDEX.HTML", "{suite:?}");
    }
}

#[test]
fn large_streams_survive_any_segment_cut_and_reseal_identically() {
    for (record, cut) in [(1426, 1448), (1426, 1000), (1426, 700), (1426, 3000), (1426, 1), (15906, 1448), (15906, 999)]
    {
        let mut c = client(None);
        let mut s = Server::with_record(record);
        exchange(&mut c, &mut s, 1448);
        let msg: Vec<u8> = (0..50_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        c.writer().write_all(&msg).unwrap();
        let start = s.sent;
        exchange(&mut c, &mut s, cut);
        let got = std::mem::take(&mut s.echoed);
        assert_eq!(got.len(), msg.len(), "cut {cut}");
        assert_eq!(got, msg.to_ascii_uppercase());
        // Regenerating any range gives the same bytes (a retransmission).
        let first = {
            let mut v = vec![0; (s.sent - start) as usize];
            let plain = &s.plain;
            s.s.fill(start, &mut v, &|p, d| d.copy_from_slice(&plain[p as usize..p as usize + d.len()]));
            v
        };
        let mut again = vec![0; 2000];
        let plain = &s.plain;
        s.s.fill(start + 1234, &mut again, &|p, d| d.copy_from_slice(&plain[p as usize..p as usize + d.len()]));
        assert_eq!(&again[..], &first[1234..3234]);
    }
}

#[test]
fn key_update_from_the_client_is_answered_and_data_still_flows() {
    let mut c = client(None);
    let mut s = Server::new();
    exchange(&mut c, &mut s, 1448);
    c.refresh_traffic_keys().unwrap();
    c.writer().write_all(b"after update").unwrap();
    exchange(&mut c, &mut s, 1448);
    assert_eq!(s.got, b"after update");
    assert_eq!(s.s.events.key_updates_in, 1);
    assert_eq!(s.s.events.key_updates_out, 1, "update_requested is answered");
    assert_eq!(s.echoed, b"AFTER UPDATE");
    // And once more, to be sure the second epoch chains.
    c.refresh_traffic_keys().unwrap();
    c.writer().write_all(b"x").unwrap();
    exchange(&mut c, &mut s, 1448);
    assert_eq!(s.echoed, b"AFTER UPDATEX");
    assert_eq!(s.s.events.key_updates_out, 2);
}

#[test]
fn close_notify_both_ways() {
    let mut c = client(None);
    let mut s = Server::new();
    c.writer().write_all(b"bye").unwrap();
    exchange(&mut c, &mut s, 1448);
    c.send_close_notify();
    exchange(&mut c, &mut s, 1448);
    assert!(s.peer_closed);
    s.s.close(s.plain.len() as u64, &|_| u64::MAX);
    exchange(&mut c, &mut s, 1448);
    assert_eq!(s.echoed, b"BYE");
    let mut buf = [0u8; 16];
    assert_eq!(c.reader().read(&mut buf).unwrap(), 0, "clean EOF: close_notify arrived");
}

#[test]
fn plain_http_and_garbage_fail_the_handshake_with_an_alert() {
    for junk in [&b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..], &[22, 3, 1, 0, 4, 1, 0, 0, 0][..], &[0xff; 64][..]] {
        let mut s = Server::new();
        s.take(junk);
        assert!(matches!(s.failed, Some(Failure::Handshake(_))), "{junk:?}: {:?}", s.failed);
        let out = s.output(1448);
        assert_eq!(out.first(), Some(&content::ALERT), "{junk:?}: an alert is sent");
        assert!(s.s.closed());
    }
}

#[test]
fn a_tampered_record_ends_the_connection_with_bad_record_mac() {
    let mut c = client(None);
    let mut s = Server::new();
    exchange(&mut c, &mut s, 1448);
    c.writer().write_all(b"hello").unwrap();
    let mut rec = Vec::new();
    c.write_tls(&mut rec).unwrap();
    let n = rec.len();
    rec[n - 3] ^= 0x40;
    s.take(&rec);
    assert_eq!(s.failed, Some(Failure::Record(alert::BAD_RECORD_MAC)));
    assert!(s.got.is_empty());
    // The alert goes out protected; the client reads it as a fatal alert.
    let out = s.output(1448);
    c.read_tls(&mut &out[..]).unwrap();
    let err = c.process_new_packets().unwrap_err();
    assert!(err.to_string().contains("BadRecordMac"), "{err}");
}

#[test]
fn bad_certificates_and_keys_get_one_line() {
    let d = cert_dir();
    let e = TlsConfig::from_pem_files(&d.join("server.key"), &d.join("server.key"), &[]).unwrap_err();
    assert!(e.to_string().starts_with("certificate "), "{e}");
    let e = TlsConfig::from_pem_files(&d.join("server.pem"), &d.join("server.pem"), &[]).unwrap_err();
    assert!(e.to_string().starts_with("private key "), "{e}");
    let e = TlsConfig::from_pem_files(&d.join("server.pem"), &d.join("ca.key"), &[]).unwrap_err();
    assert!(!e.to_string().contains('\n'), "{e}");
    let e = TlsConfig::from_pem_files(&d.join("missing.pem"), &d.join("server.key"), &[]).unwrap_err();
    assert!(e.to_string().contains("missing.pem"), "{e}");
    let _ = PrivateKeyDer::from_pem_file(d.join("server.key")).unwrap();
}

#[test]
fn records_sealed_in_place_in_the_applications_buffer_read_back_as_the_same_stream() {
    for record in [1426, 15906] {
        let mut c = client(None);
        let mut s = Server::with_record(record);
        exchange(&mut c, &mut s, 1448);
        let msg: Vec<u8> = (0..60_000u32).map(|i| (i * 7 % 251) as u8).collect();
        c.writer().write_all(&msg).unwrap();
        // Take the request in, but send nothing yet: the response's plaintext is then sealed
        // in place in a copy of it (with a spare byte), as stream mode does at read completion.
        let mut up = Vec::new();
        while c.wants_write() {
            c.write_tls(&mut up).unwrap();
        }
        s.take(&up);
        let from = s.sent_plain();
        let mut buf = s.plain[from as usize..].to_vec();
        buf.push(0xee);
        let n = s.s.seal_within(from, buf.len() - 1, &mut buf);
        assert!(n >= 3, "{n} records sealed in place");
        assert_eq!(buf.last(), Some(&0xee), "the spare byte is given back");
        // What goes out reads from the sealed buffer where the records were sealed.
        let start = s.sent;
        let end = s.s.layout.end();
        let mut out = vec![0u8; (end - start) as usize];
        let (plain, sealed) = (&s.plain, &buf);
        let mut at = 0;
        while at < out.len() {
            let k = (out.len() - at).min(1448);
            s.s.fill(start + at as u64, &mut out[at..at + k], &|p, d| {
                let src = if p >= from { &sealed[(p - from) as usize..] } else { &plain[p as usize..] };
                d.copy_from_slice(&src[..d.len()]);
            });
            at += k;
        }
        s.sent = end;
        let mut rest = &out[..];
        let mut got = Vec::new();
        while !rest.is_empty() {
            c.read_tls(&mut rest).unwrap();
            c.process_new_packets().unwrap();
            got.extend(read_all(&mut c));
        }
        assert_eq!(got, msg.to_ascii_uppercase(), "record size {record}");
    }
}

/// The client's application traffic secret, as rustls logs it.
#[derive(Debug, Default)]
struct Secrets(std::sync::Mutex<Option<Vec<u8>>>);

impl rustls::KeyLog for Secrets {
    fn log(&self, label: &str, _client_random: &[u8], secret: &[u8]) {
        if label == "CLIENT_TRAFFIC_SECRET_0" {
            *self.0.lock().unwrap() = Some(secret.to_vec());
        }
    }
    fn will_log(&self, _label: &str) -> bool {
        true
    }
}

/// HKDF-Expand-Label of RFC 8446 §7.1 with SHA-256 and an empty context.
fn expand_label(secret: &[u8], label: &str, len: usize) -> Vec<u8> {
    struct Len(usize);
    impl ring::hkdf::KeyType for Len {
        fn len(&self) -> usize {
            self.0
        }
    }
    let full = format!("tls13 {label}");
    let info = [&(len as u16).to_be_bytes()[..], &[full.len() as u8], full.as_bytes(), &[0]].concat();
    let prk = ring::hkdf::Prk::new_less_safe(ring::hkdf::HKDF_SHA256, secret);
    let mut out = vec![0; len];
    prk.expand(&[&info], Len(len)).unwrap().fill(&mut out).unwrap();
    out
}

/// The client's side of the record layer, by hand: records of any content, padding and
/// fragmentation under its traffic secret, and the secret after a KeyUpdate.
struct Forge {
    secret: Vec<u8>,
    seq: u64,
}

impl Forge {
    /// A client past the handshake with a server, and its forge (AES-128-GCM-SHA256).
    fn new() -> (Server, Forge) {
        let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256;
        let log = Arc::new(Secrets::default());
        let mut c = client_logging(Some(suite), Some(log.clone()));
        let mut s = Server::new();
        exchange(&mut c, &mut s, 1448);
        assert!(s.s.established());
        let secret = log.0.lock().unwrap().clone().expect("secret logged");
        (s, Forge { secret, seq: 0 })
    }

    /// One record of `inner` type with `content` and `padding` zeros, under the current key.
    fn record(&mut self, inner: u8, content: &[u8], padding: usize) -> Vec<u8> {
        let keys = tls::record::Keys::new(
            &ring::aead::AES_128_GCM,
            &expand_label(&self.secret, "key", 16),
            &expand_label(&self.secret, "iv", 12),
        )
        .unwrap();
        // TLSInnerPlaintext: the content, its type, then the zeros of padding.
        let mut rec = vec![0u8; tls::record::HEADER + content.len() + 1 + padding + tls::record::TAG];
        let body = tls::record::HEADER..tls::record::HEADER + content.len();
        rec[body].copy_from_slice(content);
        keys.seal_padded(self.seq, inner, &mut rec, padding);
        self.seq += 1;
        rec
    }

    /// Moves to the next key, as the sender of a KeyUpdate does.
    fn update(&mut self) {
        self.secret = expand_label(&self.secret, "traffic upd", 32);
        self.seq = 0;
    }
}

const KEY_UPDATE: [u8; 5] = [24, 0, 0, 1, 0];

#[test]
fn a_key_update_split_over_two_records_is_taken() {
    // RFC 8446 §5.1: a handshake message may be fragmented over records; the key changes
    // where the message ends.
    let (mut s, mut f) = Forge::new();
    let a = f.record(content::HANDSHAKE, &KEY_UPDATE[..3], 0);
    let b = f.record(content::HANDSHAKE, &KEY_UPDATE[3..], 0);
    f.update();
    let c = f.record(content::APPLICATION_DATA, b"after", 0);
    s.take(&[a, b, c].concat());
    assert_eq!(s.failed, None);
    assert_eq!((s.got.as_slice(), s.s.events.key_updates_in), (&b"after"[..], 1));
}

#[test]
fn a_key_change_not_at_a_record_boundary_is_unexpected() {
    // Two KeyUpdates in one record, or a KeyUpdate with the start of another message after
    // it: the rest of the record would be under the old key (RFC 8446 §5.1).
    for content_ in [[KEY_UPDATE, KEY_UPDATE].concat(), [&KEY_UPDATE[..], &[24, 0]].concat()] {
        let (mut s, mut f) = Forge::new();
        let r = f.record(content::HANDSHAKE, &content_, 0);
        s.take(&r);
        assert_eq!(s.failed, Some(Failure::Record(alert::UNEXPECTED_MESSAGE)), "{content_:?}");
    }
    // A fragment, then application data before the message ends.
    let (mut s, mut f) = Forge::new();
    let a = f.record(content::HANDSHAKE, &KEY_UPDATE[..2], 0);
    let b = f.record(content::APPLICATION_DATA, b"x", 0);
    s.take(&[a, b].concat());
    assert_eq!(s.failed, Some(Failure::Record(alert::UNEXPECTED_MESSAGE)));
}

#[test]
fn the_rest_of_a_key_update_under_the_new_key_fails_the_mac() {
    let (mut s, mut f) = Forge::new();
    let a = f.record(content::HANDSHAKE, &KEY_UPDATE[..3], 0);
    f.update();
    let b = f.record(content::HANDSHAKE, &KEY_UPDATE[3..], 0);
    s.take(&[a, b].concat());
    assert_eq!(s.failed, Some(Failure::Record(alert::BAD_RECORD_MAC)));
}

#[test]
fn a_record_whose_padding_passes_the_limit_overflows() {
    // RFC 8446 §5.4: content, type and padding together at most 2^14 + 1 bytes.
    let (mut s, mut f) = Forge::new();
    let r = f.record(content::APPLICATION_DATA, &vec![b'a'; (1 << 14) - 8], 8);
    s.take(&r);
    assert_eq!(s.failed, None, "2^14 + 1 exactly is allowed");
    let r = f.record(content::APPLICATION_DATA, &vec![b'a'; (1 << 14) - 8], 9);
    s.take(&r);
    assert_eq!(s.failed, Some(Failure::Record(alert::RECORD_OVERFLOW)));
}

#[test]
fn an_empty_alert_record_is_unexpected() {
    // A record of type alert holds exactly one alert (RFC 8446 §5.1); OpenSSL answers an
    // empty one with unexpected_message, a short or long one with decode_error.
    for (body, want) in
        [(&[][..], alert::UNEXPECTED_MESSAGE), (&[1][..], alert::DECODE_ERROR), (&[1, 0, 0][..], alert::DECODE_ERROR)]
    {
        let (mut s, mut f) = Forge::new();
        let r = f.record(content::ALERT, body, 5);
        s.take(&r);
        assert_eq!(s.failed, Some(Failure::Record(want)), "{body:?}");
    }
}

/// The client's first flight as plaintext records of the ClientHello cut after `cut` bytes.
fn client_hello_in_two(cut: usize) -> (Vec<u8>, Vec<u8>) {
    let mut c = client(None);
    let mut ch = Vec::new();
    while c.wants_write() {
        c.write_tls(&mut ch).unwrap();
    }
    let body = &ch[tls::record::HEADER..];
    let rec = |b: &[u8]| [&[content::HANDSHAKE, 3, 1][..], &(b.len() as u16).to_be_bytes(), b].concat();
    (rec(&body[..cut]), rec(&body[cut..]))
}

#[test]
fn a_record_inside_a_fragmented_client_hello_gets_a_plaintext_alert() {
    // rustls refuses the interleaved record (RFC 8446 §5.1) but queues no alert; before the
    // ServerHello the alert is plaintext, and sirocco writes it (tlsfuzzer's zero-length
    // data and zero content type tests, as OpenSSL answers).
    let (first, _) = client_hello_in_two(2);
    for interleaved in [&[content::APPLICATION_DATA, 3, 3, 0, 0][..], &[content::ALERT, 3, 3, 0, 2, 1, 0][..]] {
        let mut s = Server::new();
        s.take(&[&first[..], interleaved].concat());
        assert!(matches!(s.failed, Some(Failure::Handshake(_))), "{:?}", s.failed);
        assert_eq!(s.output(1448), [content::ALERT, 3, 3, 0, 2, 2, alert::UNEXPECTED_MESSAGE]);
    }
    // The same ClientHello whole is answered.
    let (first, second) = client_hello_in_two(2);
    let mut s = Server::new();
    s.take(&[first, second].concat());
    assert_eq!(s.failed, None);
    assert_eq!(s.output(1448).first(), Some(&content::HANDSHAKE), "ServerHello");
}

#[test]
fn a_client_hello_over_64_kib_gets_an_alert() {
    // tlsfuzzer sends one with 32 715 signature schemes. OpenSSL takes ClientHellos up to
    // 131 396 bytes; rustls, and so sirocco, none over 64 KiB, but with an alert, not by
    // closing the connection in silence.
    let mut c = client(None);
    let mut ch = Vec::new();
    while c.wants_write() {
        c.write_tls(&mut ch).unwrap();
    }
    let body = &ch[tls::record::HEADER..];
    // Grow the ClientHello with 1 000 unknown cipher suites and an unknown extension of
    // 64 000 bytes, fixing the lengths of the lists and of the message.
    let u16_at = |p: usize| u16::from_be_bytes([body[p], body[p + 1]]) as usize;
    let suites_at = 4 + 2 + 32 + 1 + body[38] as usize;
    let comp_at = suites_at + 2 + u16_at(suites_at);
    let exts_at = comp_at + 1 + body[comp_at] as usize;
    let mut msg = body[..suites_at].to_vec();
    msg.extend_from_slice(&((u16_at(suites_at) + 2000) as u16).to_be_bytes());
    msg.extend_from_slice(&body[suites_at + 2..comp_at]);
    msg.extend((0..1000).flat_map(|_| [0x0a, 0x0a]));
    msg.extend_from_slice(&body[comp_at..exts_at]);
    let pad = 64_000;
    msg.extend_from_slice(&((u16_at(exts_at) + 4 + pad) as u16).to_be_bytes());
    msg.extend_from_slice(&body[exts_at + 2..]);
    msg.extend_from_slice(&[0xfe, 0xfe]);
    msg.extend_from_slice(&(pad as u16).to_be_bytes());
    msg.resize(msg.len() + pad, 0);
    let l = (msg.len() - 4) as u32;
    msg[1..4].copy_from_slice(&l.to_be_bytes()[1..]);
    assert!(msg.len() > 64 * 1024);
    let mut bytes = Vec::new();
    for part in msg.chunks(1 << 14) {
        bytes.extend_from_slice(&[content::HANDSHAKE, 3, 1]);
        bytes.extend_from_slice(&(part.len() as u16).to_be_bytes());
        bytes.extend_from_slice(part);
    }
    let mut s = Server::new();
    s.take(&bytes);
    assert!(matches!(s.failed, Some(Failure::Handshake(_))), "{:?}", s.failed);
    assert_eq!(s.output(1448), [content::ALERT, 3, 3, 0, 2, 2, alert::DECODE_ERROR]);
}
