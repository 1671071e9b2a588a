//! Fuzz targets for the TLS handshake and record layer.

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

/// Inputs this area's targets start from (None: not one of its targets).
pub(crate) fn seeds(target: &str) -> Option<Vec<Vec<u8>>> {
    Some(match target {
        "tls_handshake" => vec![
            [&[255u8][..], &client_hello()].concat(),
            [&[7u8][..], &client_hello()].concat(),
            b"\xffGET / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
        ],
        "tls_records" => vec![
            [&[0u8, 23, 2][..], b"GET / HTTP/1.1\r\n", &[0, 21, 1], &[1, 0, 0, 0, 0, 0, 0, 0]].concat(),
            [&[0u8, 22, 1][..], &[24, 0, 0, 1, 1, 0, 0, 0], &[0x40, 23, 1], b"abcdefgh"].concat(),
        ],
        _ => return None,
    })
}
